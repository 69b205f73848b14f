"""Small helpers the notebooks share: tables of a world, a run's headline numbers."""

from __future__ import annotations

import pandas as pd


def examples_by_topic(ds, per_topic: int = 2) -> pd.DataFrame:
    """The first ``per_topic`` rows of each topic, as a table."""
    df = ds.to_pandas()
    return df.groupby("topic", sort=True).head(per_topic).sort_values(["topic", "difficulty"]).reset_index(drop=True)


def client_table(parts) -> pd.DataFrame:
    """Rows = clients, columns = topics, values = examples held (the partition at a glance)."""
    from fedrl_kit.world.partition import topic_matrix

    names, counts = topic_matrix(parts)
    df = pd.DataFrame(counts, columns=names, index=[f"client_{i}" for i in range(len(parts))])
    df["total"] = df.sum(axis=1)
    return df


def headline(records: list[dict]) -> dict:
    """Base and final global pass@1/format of a run, and the change in points."""
    g = [r for r in records if r["kind"] == "global"]
    first, last = g[0], g[-1]
    return {
        "rounds": last["round"],
        "base pass@1": round(first["pass@1"], 3),
        "final pass@1": round(last["pass@1"], 3),
        "change (points)": round(100 * (last["pass@1"] - first["pass@1"]), 1),
        "base format": round(first["format"], 3),
        "final format": round(last["format"], 3),
    }


def topic_table(records: list[dict]) -> pd.DataFrame:
    """Per-topic pass@1 of the base (round 0) and of the final global model."""
    g = [r for r in records if r["kind"] == "global"]
    topics = sorted(k.split("/", 1)[1] for k in g[0] if k.startswith("topic/"))
    return pd.DataFrame({"base": [g[0][f"topic/{t}"] for t in topics], "final": [g[-1][f"topic/{t}"] for t in topics]},
                        index=topics).round(3)


def knobs(update, **controls):
    """Widgets that call ``update(**values)`` into an output area below them whenever one of them changes.

    Unlike ``ipywidgets.interact``, nothing runs when the widgets are created: a notebook executed without a
    browser (papermill, nbval) keeps no output inside the widget — the notebook shows the default setting in
    the next cell — and a large figure drawn inside a widget output during such a run stalls nbclient.

    Args:
        update: called with one keyword per control, its current value.
        **controls: ipywidgets value widgets (sliders, dropdowns, toggle buttons); each gets its name as
            description unless it has one.

    Returns:
        the box to display (CSS class ``fedrl-knobs``).
    """
    import ipywidgets as widgets

    if not controls:
        raise ValueError("knobs needs at least one control widget")
    out = widgets.Output()

    def run(_change=None):
        with out:
            out.clear_output(wait=True)
            update(**{name: w.value for name, w in controls.items()})

    for name, w in controls.items():
        w.description = w.description or name
        w.observe(run, names="value")
    box = widgets.VBox([widgets.HBox(list(controls.values())), out])
    box.add_class("fedrl-knobs")
    return box
