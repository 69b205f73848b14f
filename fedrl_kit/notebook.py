"""Small helpers the notebooks share: tables of a world, a run's headline numbers, and the checks of a notebook's
parameters (a preset it knows, the GPU a preset wants, a run folder per set of parameters) that stop it in one line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedrl_kit.runs import REPO_ROOT, fresh_run_dir


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


def before_after(run, n: int = 8) -> tuple[pd.DataFrame, pd.Series]:
    """The base model's and the trained global model's answers to the same held-out questions, side by side.

    Both answer greedily (temperature 0: each model's single most likely answer), so a change in a row is the
    training's, not the sampler's. The base is the run's round-0 adapter (LoRA's B starts at 0: the base model).

    Returns:
        The first ``n`` test problems (question, gold answer, each model's answer and whether it is right), and each
        model's greedy accuracy over the whole test split.
    """
    from fedrl_kit.evaluate import answers, eval_seed

    cfg, test = run.config, run.world.test
    got = answers(run.policy, {"base": run.initial_state, "trained": run.server.global_state}, test,
                  seed=eval_seed(cfg.seed), batch_size=cfg.eval_batch_size, accuracy_fn=run.accuracy_fn)
    table = pd.DataFrame({"question": test["prompt"][:n], "gold": test["answer"][:n]})
    for label, (texts, right) in got.items():
        table[f"{label} answer"] = [" ".join(t.split()) for t in texts[:n]]  # one line per answer
        table[f"{label} right"] = [bool(x) for x in right[:n]]
    accuracy = pd.Series({f"{label} (greedy)": round(sum(right) / len(right), 3) for label, (_, right) in got.items()},
                         name=f"accuracy on all {len(test)} test problems")
    return table, accuracy


def stored_before_after(path: str | Path) -> pd.DataFrame:
    """A stored before/after measurement over seeds (``benchmarks/real_lm_learns.py``'s file) as a table: per seed
    the held-out pass@1 of the base and of the final model, the gain, the format rate and the wall time; in the last
    row their means and the gain's 95 % Student-t half-width (n − 1 degrees of freedom)."""
    import json

    stored = json.loads(repo_path(path).read_text())
    s = stored["summary"]
    p, f = s["pass@1"], s["format"]
    df = pd.DataFrame({"pass@1 before": p["before"], "pass@1 after": p["after"],
                       "gain": [a - b for a, b in zip(p["after"], p["before"])],
                       "format before": f["before"], "format after": f["after"],
                       "seconds": [r["seconds"] for r in stored["runs"]]},
                      index=[f"seed {r['seed']}" for r in stored["runs"]])
    mean = {**df.mean().to_dict(), "gain": p["mean_gain"], "seconds": float("nan")}
    df.insert(3, "± (95 % t)", float("nan"))
    df.loc[f"mean of {p['seeds']} (t, {p['seeds'] - 1} df)"] = {**mean, "± (95 % t)": p["half_width_95"]}
    return df.round(3).astype(object).where(df.notna(), "")


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


# -- parameters -------------------------------------------------------------------------------------------------
class NotebookStop(Exception):
    """Parameters a notebook cannot run with. Its message is the whole story, in one line: IPython shows it
    instead of a traceback (``_render_traceback_``), and so do JupyterLab, nbclient and papermill's error."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def check_choice(parameter: str, value, valid: tuple) -> object:
    """``value`` when it is one of ``valid``, else a NotebookStop naming the parameter and the valid values."""
    if value not in valid:
        raise NotebookStop(f"{parameter}={value!r} is not one this notebook runs; use one of "
                           + ", ".join(repr(v) for v in valid))
    return value


SMOKE_OF = {"smoke": "quick", "full-smoke": "full"}
"""the notebooks' tiny-size presets and the preset whose code path each runs: ``smoke`` the quick preset's (CPU,
seconds: CI), ``full-smoke`` the full preset's (GPU: its model, bf16 and chat template at the smoke sizes)"""


def config_preset(preset_name: str) -> str:
    """The :func:`fedrl_kit.config.preset` a notebook preset runs on (``smoke`` → quick, ``full-smoke`` → full)."""
    return SMOKE_OF.get(preset_name, preset_name)


def is_smoke(preset_name: str) -> bool:
    """True for the tiny-size presets (``smoke``, ``full-smoke``): a code-path check, too small to judge results."""
    return preset_name in SMOKE_OF


FULL_SMOKE = dict(num_clients=2, rounds=1, local_steps=1, max_new_tokens=16)
"""what ``full-smoke`` lowers of the full preset besides a notebook's smoke sizes (its model, dtype and chat stay)"""


def smoke_fields(preset_name: str, smoke: dict, fixed: tuple[str, ...] = ()) -> dict:
    """The fields a tiny preset adds to a notebook's config: ``smoke`` (the notebook's sizes) for both tiny presets,
    with :data:`FULL_SMOKE`'s counts for ``full-smoke`` except those in ``fixed`` (the notebook sets them itself);
    nothing for the others."""
    if not is_smoke(preset_name):
        return {}
    counts = {k: v for k, v in FULL_SMOKE.items() if k not in fixed} if preset_name == "full-smoke" else {}
    return {**counts, **smoke}


def check_preset(preset_name: str, valid: tuple[str, ...]) -> str:
    """``preset_name`` when it is one of ``valid``, else a NotebookStop naming the valid ones."""
    if preset_name not in valid:
        raise NotebookStop(f"preset_name={preset_name!r} is not a preset of this notebook; use one of "
                           + ", ".join(repr(v) for v in valid))
    return preset_name


def require_gpu(device: str, preset_name: str) -> None:
    """Stop in one line when ``device`` (a config's) is a CUDA GPU this machine does not have.

    Checked before anything is loaded, so that ``full`` on a laptop stops at once, saying what it wants.
    """
    if not str(device).startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise NotebookStop(f"preset_name={preset_name!r} wants a CUDA GPU (device={device!r}) and torch sees none "
                           "on this machine; on a CPU use preset_name='quick', or 'smoke' (the same code path at "
                           "tiny sizes)")


def require_model(config) -> None:
    """Stop in one line when the model or dataset ``config`` names is not on this machine, saying what to install
    or download (``fedrl_kit.policy.hub.check_available``: file-system look-ups only, before anything is loaded)."""
    from fedrl_kit.policy.hub import check_available
    from fedrl_kit.world.real import NotAvailableError

    try:
        check_available(config)
    except NotAvailableError as e:
        raise NotebookStop(str(e)) from None


def quiet_progress_bars() -> None:
    """No model-loading or download progress bars (transformers, huggingface_hub): an executed notebook would store
    them as widgets frozen at ``0%``. A run's own bar is ``Run(..., progress=False)``."""
    import huggingface_hub.utils
    import transformers

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()


def repo_path(path: str | Path) -> Path:
    """``path`` relative to the repository root (absolute paths as they are): what a notebook reads or writes
    does not depend on the folder papermill runs it in."""
    return REPO_ROOT / path


def shown_path(path: str | Path) -> str:
    """``path`` as a notebook prints it: relative to the repository root when under it (a stored output names no
    folder of the machine that ran it), else as it is."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def run_folder(notebook: str, *words, run_dir: str | Path = "", **values) -> Path:
    """Where a notebook's run goes: ``run_dir`` when given, else ``runs/<notebook>/<name>`` under the repository,
    with a name made of the parameters, so that runs with different parameters land in different folders.

    ``words`` are joined as they are, ``values`` as ``<key><value>`` (``k=4`` → ``k4``; a list joins its items
    with ``_``; ``True`` → the key alone; ``False``, ``None`` and ``""`` are left out).
    Example: ``run_folder("quickstart", "quick", "fedavg_grpo", k=4, r=10, t=2, s=0)`` →
    ``<repo>/runs/quickstart/quick-fedavg_grpo-k4-r10-t2-s0``.
    """
    if run_dir:
        return Path(run_dir)
    parts = [str(w) for w in words if w not in (None, "", False)]
    for key, v in values.items():
        if v is None or v is False or v == "":
            continue
        if v is True:
            parts.append(key)
        elif isinstance(v, (list, tuple)):
            parts.append(key + "_".join(str(x) for x in v))
        else:
            parts.append(f"{key}{v}")
    name = "-".join(parts).replace("/", "_").replace(" ", "_") or "run"
    return REPO_ROOT / "runs" / notebook / name


def check_run_root(root: str | Path, beside: tuple[str, ...] = ("figures",)) -> Path:
    """``root`` when a notebook may put its several run folders in it: a new or empty folder, or one holding run
    folders (a ``config.json`` at any depth) and the folders named in ``beside``; anything else stops the notebook
    in one line, before anything is written or deleted (each run's own folder is then emptied by
    :func:`start_run_dir`)."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise NotebookStop(f"{shown_path(root)} is a file, not a folder of runs: pass a new folder as run_root")
    if root.is_dir():
        runs = {p.parent for p in root.rglob("config.json")}
        foreign = []
        for p in root.rglob("*"):
            rel = p.relative_to(root).parts
            if p.is_file() and rel[0] not in beside and not any(r in p.parents for r in runs):
                foreign.append("/".join(rel))
                if len(foreign) == 3:
                    break
        if foreign:
            raise NotebookStop(f"{shown_path(root)} holds files no run wrote ({', '.join(foreign)}): refusing to "
                               "write runs into it; pass a new folder as run_root")
    return root


def start_run_dir(run_dir: str | Path) -> Path:
    """Empty ``run_dir`` for a fresh run (:func:`fedrl_kit.runs.fresh_run_dir`: only a run folder this toolkit
    wrote is emptied); a file, another folder or a folder a live run holds stops the notebook in one line,
    deleting nothing."""
    try:
        return fresh_run_dir(run_dir)
    except ValueError as e:  # DamagedRunDir and RunDirInUse too
        raise NotebookStop(str(e)) from None


def lab_number(x: float) -> str:
    """A float as it comes back from a JupyterLab save: the browser's ``JSON.stringify`` writes an integral value
    without ".0" (``69.0`` → ``69``, up to 1e21), and the server, parsing that, writes it as an integer; every
    other float keeps Python's ``repr`` (the server writes the file with Python's json)."""
    if x == x and abs(x) < 1e21 and x == int(x):
        return str(int(x))
    return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(repr(x), repr(x))


def notebook_json(nb: dict) -> str:
    """A notebook's text as JupyterLab saves it: one-space indented JSON with sorted keys and unescaped unicode, a
    final newline (nbformat's writer), and integral floats as integers (:func:`lab_number`), so that opening and
    saving it changes nothing."""
    import json

    class JupyterLabEncoder(json.JSONEncoder):
        def iterencode(self, o, _one_shot=False):
            return json.encoder._make_iterencode(
                {}, self.default, json.encoder.py_encode_basestring, self.indent, lab_number, self.key_separator,
                self.item_separator, self.sort_keys, self.skipkeys, _one_shot)(o, 0)

    return JupyterLabEncoder(indent=1, sort_keys=True, ensure_ascii=False).encode(nb) + "\n"
