"""Small helpers the notebooks share: a notebook's setup in one call (:func:`setup`: its parameters checked, its
config, run folder and figures folder), tables of a world, a run's headline numbers, widgets that draw at once
(:func:`knobs`), and the exercises' check cells (:func:`check`). Everything that stops a notebook does so in one
line (:class:`NotebookStop`): an unknown preset, a misspelt papermill parameter, the GPU a preset wants, a run folder
that is not one, a parameter edited since the setup cell ran."""

from __future__ import annotations

import ast
import copy
import difflib
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


def one_group(run, rows: int = 16, state=None, seed: int = 0) -> pd.DataFrame:
    """One GRPO group, as a local step sees it: the G = ``num_generations`` answers a model samples for one test
    problem at the rollout temperature, each answer's reward (the run's accuracy reward, 0 or 1) and its
    group-relative advantage (:func:`fedrl_kit.grpo.group_advantages`, the function a local step calls).

    Args:
        state: the LoRA state that answers (default: the run's initial adapter, the base model).
    """
    import torch

    from fedrl_kit.grpo import group_advantages

    cfg, test = run.config, run.world.test
    G, rows = cfg.num_generations, min(rows, len(test))
    name = "answers/group"
    run.policy.set_state(name, run.initial_state if state is None else state)
    try:
        r = run.policy.rollout(name, list(test["prompt"][:rows]), G, seed=seed)
    finally:
        run.policy.drop(name)
    gold = [a for a in test["answer"][:rows] for _ in range(G)]
    rewards = torch.tensor([v or 0.0 for v in run.accuracy_fn(r.prompts, r.completions, answer=gold)],
                           dtype=torch.float64).view(rows, G)  # [rows, G]
    mixed = [i for i in range(rows) if 0 < rewards[i].sum() < G]
    row = mixed[0] if mixed else 0
    adv = group_advantages(rewards[row], G)  # [G]
    table = pd.DataFrame({"answer": [" ".join(t.split()) for t in r.completions[row * G:(row + 1) * G]],
                          "reward r_i": rewards[row].numpy(), "advantage A_i": adv.numpy().round(4)},
                         index=[f"i = {i + 1}" for i in range(G)])
    table.attrs["question"], table.attrs["gold"] = test["prompt"][row], test["answer"][row]
    return table


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


KNOBS: list = []
"""every widget box :func:`knobs` made in this kernel, in order (:func:`drive_knobs` turns each of them)"""


def _offers(name: str, widget) -> str:
    """One control as a page without a kernel describes it: its name and what it offers (options or range)."""
    options = getattr(widget, "options", None)
    if options:
        labels = [o[0] if isinstance(o, tuple) else o for o in options]
        shown = ", ".join(str(o) for o in labels[:4]) + (", …" if len(labels) > 4 else "")
        return f"{name} ({shown})"
    if hasattr(widget, "min") and hasattr(widget, "max"):
        return f"{name} ({widget.min}–{widget.max})"
    return name


def knobs(update, **controls):
    """Widgets that call ``update(**values)`` into an output area below them: once when the box is first displayed
    (the default setting, drawn at once) and again whenever one of them changes.

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

    class Knobs(widgets.VBox):
        def _repr_mimebundle_(self, **kwargs):
            if not self.drawn:  # the first display draws the default setting
                self.drawn = True
                self.redraw()
            return super()._repr_mimebundle_(**kwargs)

        def __repr__(self):  # what a page without a running kernel shows in the widget's place
            return f"(In Jupyter, controls here redraw the view above: {'; '.join(_offers(n, w) for n, w in controls.items())}.)"

    out = widgets.Output()
    box = Knobs([widgets.HBox(list(controls.values())), out])
    box.drawn, box.errors, box.calls, box.controls = False, [], 0, controls

    def redraw(_change=None):
        box.calls += 1
        with out:
            out.clear_output(wait=True)
            try:
                update(**{name: w.value for name, w in controls.items()})
            except Exception as e:
                box.errors.append(e)
                raise  # shown in the output area (ipywidgets' Output), as a cell shows it

    box.redraw = redraw
    for name, w in controls.items():
        w.description = w.description or name
        w.observe(redraw, names="value")
    box.add_class("fedrl-knobs")
    KNOBS.append(box)
    return box


def _other_values(w) -> list:
    """Values to turn a control to: each option of a choice (at most 4, the last one included), or a slider's low
    end, middle and high end."""
    if hasattr(w, "options"):
        values = [v[1] if isinstance(v, tuple) else v for v in w.options]
        picked = values[:3] + values[-1:] if len(values) > 4 else values
        return [v for v in dict.fromkeys(picked) if v != w.value]
    if hasattr(w, "min") and hasattr(w, "max"):
        mid = type(w.value)((w.min + w.max) / 2) if isinstance(w.value, int) else (w.min + w.max) / 2
        return [v for v in dict.fromkeys([w.min, mid, w.max]) if v != w.value]
    return []


def drive_knobs(boxes=None) -> pd.DataFrame:
    """Draw every :func:`knobs` box (default: all made in this kernel) as its first display does, then turn each of
    its controls to each of its other values (:func:`_other_values`) and back, as a reader's clicks would; raise
    AssertionError naming every setting whose update failed or did not run. Returns one row per box."""
    rows, failed = [], []
    for i, box in enumerate(KNOBS if boxes is None else boxes):
        settings = [(None, None)] + [(name, v) for name, w in box.controls.items()
                                     for v in [*_other_values(w), w.value]]
        for name, v in settings:
            before, calls = len(box.errors), box.calls
            try:
                if name is None:
                    box.redraw()  # what the first display does
                elif box.controls[name].value != v:
                    box.controls[name].value = v  # a click: the change runs the update
                else:
                    continue
            except Exception:  # noqa: BLE001 - outside a kernel the output area does not catch it; kept in errors
                pass
            if len(box.errors) > before:
                failed.append(f"box {i} ({', '.join(box.controls)}) {name}={v!r}: {box.errors[-1]!r}")
            elif box.calls != calls + 1:
                failed.append(f"box {i} ({', '.join(box.controls)}) {name}={v!r}: the update did not run")
        rows.append({"box": i, "controls": ", ".join(box.controls), "settings drawn": len(settings),
                     "failures": sum(f.startswith(f"box {i} ") for f in failed)})
    assert not failed, "widget updates that failed:\n" + "\n".join(failed)
    return pd.DataFrame(rows)


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
    """Stop in one line when ``device`` (a config's) is a CUDA GPU this machine does not have."""
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
        where = fresh_run_dir(run_dir)
        where.mkdir(parents=True, exist_ok=True)  # a folder that cannot be made stops here, not in the run
        return where
    except ValueError as e:  # DamagedRunDir and RunDirInUse too
        raise NotebookStop(str(e)) from None
    except OSError as e:  # a folder that cannot be made or written (read-only, /proc, a full disk)
        raise NotebookStop(f"run_dir={shown_path(run_dir)!r} cannot be used as a run folder: "
                           f"{e.strerror or e}; pass a writable folder") from None


# -- one-line setup ------------------------------------------------------------------------------------------------
PRESETS = ("quick", "smoke", "full", "full-smoke")
"""the presets every notebook runs: quick (2-core CPU), smoke (tiny sizes), full (GPU), full-smoke (GPU, tiny)"""

SMOKE_SIZES = {
    "quickstart": dict(n_train=64, n_test=8, prompts_per_step=2, num_generations=2, eval_samples=1, num_iterations=1),
    "fedgrpo": dict(n_train=400, n_test=8, n_aux=20, num_generations=2, num_iterations=1),
    "pubswap": dict(n_train=64, n_test=8, n_public=8, prompts_per_step=2, num_generations=2, eval_samples=1,
                    num_iterations=1),
}
"""each notebook's ``smoke`` sizes: a handful of problems and 2 answers each, seconds per run (what CI runs)"""

PAPERMILL_CELL = "# Parameters"
"""how the cell papermill injects after the ``parameters`` cell begins"""


def _assigned(source: str) -> list[str] | None:
    """The names a cell of plain assignments of literal values binds (``x = 1``, ``a: int = 2``, ``t = [2, 8]``), in
    order; None for any other cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            targets = [t.id for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets = [node.target.id]
        else:
            return None
        try:
            ast.literal_eval(node.value)
        except ValueError:
            return None
        names += targets
    return names or None


def parameter_cells(history: list[str]) -> tuple[list[str], list[str]]:
    """(declared, injected): the names the notebook's parameters cell assigns and those papermill's injected cell
    assigns, read from the sources of the cells run before the current one (``history``, oldest first, the current
    cell last). The parameters cell is the last cell of plain assignments before the injected one (or before the
    current cell, when nothing was injected)."""
    before = [h for h in history[:-1] if h.strip()]
    injected: list[str] = []
    while before and before[-1].lstrip().startswith(PAPERMILL_CELL):
        injected = (_assigned(before.pop()) or []) + injected
    declared = next((names for h in reversed(before) if (names := _assigned(h))), [])
    return declared, injected


def check_parameters(declared: list[str], injected: list[str], renamed: dict[str, str] | None = None) -> None:
    """Stop in one line when papermill was given a parameter the notebook does not have (``-p num_client 8``),
    naming the close match (or, for an old name in ``renamed``, its new one) and the notebook's parameters."""
    unknown = [n for n in injected if n not in declared]
    if unknown and declared:
        renamed = renamed or {}
        hints = [f"{n} (renamed {renamed[n]})" if n in renamed else
                 f"{n} (did you mean {m[0]}?)" if (m := difflib.get_close_matches(n, declared, 1)) else n
                 for n in unknown]
        raise NotebookStop(f"not a parameter of this notebook: {', '.join(hints)}; its parameters are "
                           + ", ".join(declared))


_WATCHED: dict = {"names": [], "values": None}
"""the parameters the setup cell ran with: their names, and their values once that cell has finished"""


def _cell_history() -> list[str]:
    from IPython import get_ipython

    shell = get_ipython()
    return list(shell.history_manager.input_hist_raw) if shell is not None else []


def _watch(names: list[str]) -> None:
    """After the current (setup) cell ends, remember the values of ``names``; before every later cell, stop it in
    one line when one of them has changed since (:func:`check_fresh`). The parameters cell and the setup cell itself
    are never stopped."""
    from IPython import get_ipython

    shell = get_ipython()
    _WATCHED.update(names=list(names), values=None)
    if shell is None or getattr(shell, "_fedrl_watching", False):
        return

    def remember(result=None):
        if _WATCHED["values"] is None and _WATCHED["names"]:
            ns = shell.user_ns
            _WATCHED["values"] = {n: copy.deepcopy(ns.get(n)) for n in _WATCHED["names"]}

    def add_check(lines: list[str]) -> list[str]:
        source = "".join(lines)
        if (_WATCHED["values"] is None or not source.strip() or source.lstrip().startswith("%%")
                or _assigned(source) or ".setup(" in source):
            return lines
        return ["__import__('fedrl_kit.notebook').notebook.check_fresh()\n", *lines]

    shell.events.register("post_run_cell", remember)
    shell.input_transformers_post.append(add_check)
    shell._fedrl_watching = True


def check_fresh(namespace: dict | None = None) -> None:
    """Stop in one line when a parameter has changed since the setup cell ran (its results would be stale), saying
    what to re-run."""
    if _WATCHED["values"] is None:
        return
    if namespace is None:
        from IPython import get_ipython

        namespace = get_ipython().user_ns
    changed = []
    for name, was in _WATCHED["values"].items():
        now = namespace.get(name)
        try:
            same = bool(now == was)
        except Exception:  # noqa: BLE001 - values that do not compare: treat as changed
            same = False
        if not same:
            changed.append(f"{name} {was!r} → {now!r}")
    if changed:
        raise NotebookStop(f"parameters changed since the setup cell ran ({'; '.join(changed)}): run the setup "
                           "cell (the one calling notebook.setup) again, then the cells after it")


def setup(notebook: str, namespace: dict, config=None, *, presets: tuple[str, ...] = PRESETS, choices=None,
          smoke: str | None = None, fixed: tuple[str, ...] = (), setting: dict | None = None, words: tuple = (),
          folder: dict | None = None, runs: str = "run_dir", renamed: dict[str, str] | None = None):
    """A notebook's setup cell in one call; returns ``(config, run folder, figures folder)``.

    Args:
        notebook: the notebook's short name (its folder under ``runs/``).
        namespace: the notebook's ``globals()``: its parameters are read from it.
        config: a callable taking the config preset (``quick``, ``full``: a smoke preset maps to its own) and
            returning the RunConfig. Default: :func:`fedrl_kit.config.preset` with ``setting``, then (smoke presets)
            ``SMOKE_SIZES[smoke]`` less ``fixed`` (:func:`smoke_fields`), then every parameter that is a RunConfig
            field and neither None nor "", on the reference path when the parameter ``reference_path`` is true.
        words, folder: the run folder's name after the preset (:func:`run_folder`'s ``words`` and ``values``).
        renamed: old parameter name → new one: an old name given to papermill stops naming the new one.
    """
    from dataclasses import fields as dataclass_fields

    from fedrl_kit import viz
    from fedrl_kit.config import RunConfig, preset

    declared, injected = parameter_cells(_cell_history())
    check_parameters(declared, injected, renamed)
    preset_name = check_preset(namespace["preset_name"], presets)
    for name, valid in (choices or {}).items():
        check_choice(name, namespace[name], tuple(valid))
    if not isinstance(namespace.get("reference_path", False), bool):
        raise NotebookStop(f"reference_path={namespace['reference_path']!r} must be True or False "
                           "(papermill: -p reference_path True)")
    try:
        if config is None:
            known = {f.name for f in dataclass_fields(RunConfig)}
            given = {k: v for k, v in namespace.items()
                     if k in known and k in (declared or known) and v not in (None, "")}
            sizes = smoke_fields(preset_name, SMOKE_SIZES[smoke], fixed) if smoke else {}
            cfg = preset(config_preset(preset_name), **{**(setting or {}), **sizes, **given})
            cfg = cfg.reference() if namespace.get("reference_path") else cfg
        else:
            cfg = config(config_preset(preset_name))
    except ValueError as e:  # a parameter of the wrong type or out of range: RunConfig names it
        raise NotebookStop(f"{e}".splitlines()[0]) from None
    require_gpu(cfg.device, preset_name)  # full on a laptop stops here, in one line
    require_model(cfg)
    where = run_folder(notebook, preset_name, *words, run_dir=namespace.get(runs, ""), **(folder or {}))
    where = start_run_dir(where) if runs == "run_dir" else check_run_root(where)
    quiet_progress_bars()
    viz.setup_notebook()
    pd.set_option("display.width", 140)
    figures = Path(namespace["figures_dir"]) if namespace.get("figures_dir") else where / "figures"
    _watch(declared)
    return cfg, where, figures


def report_setup(report: str, namespace: dict) -> tuple[Path, Path]:
    """A reproduction report's setup cell: a misspelt papermill parameter stops it in one line; returns the folder
    of stored results it reads (the ``results_root`` parameter, default ``benchmarks/results``) and the folder its
    figures go to (the ``figures_dir`` parameter, default ``runs/<report>/figures``)."""
    from fedrl_kit import viz

    check_parameters(*parameter_cells(_cell_history()))
    results = Path(namespace.get("results_root") or repo_path("benchmarks/results"))
    if not results.is_dir():
        raise NotebookStop(f"results_root={shown_path(results)!r} is not a folder of stored results")
    quiet_progress_bars()
    viz.setup_notebook()
    pd.set_option("display.width", 140)
    return results, Path(namespace.get("figures_dir") or REPO_ROOT / "runs" / report / "figures")


# -- exercises -------------------------------------------------------------------------------------------------------
def check(prediction, answer, why: str = "", tolerance: float = 0.0) -> None:
    """An exercise's check cell: prints whether ``prediction`` matches ``answer`` (the notebook computed it), in one
    line, and ``why`` after a right answer. ``None`` (nothing predicted yet) says so without giving the answer away.
    Numbers match within ``tolerance``; lists and tuples match element by element, sets in any order; text matches
    ignoring case and surrounding spaces."""
    def same(p, a) -> bool:
        if isinstance(a, set) or isinstance(p, set):
            return set(p) == set(a) if _iterable(p) and _iterable(a) else False
        if _iterable(a) and not isinstance(a, str):
            return _iterable(p) and not isinstance(p, str) and len(list(p)) == len(list(a)) and all(
                same(x, y) for x, y in zip(p, a))
        if isinstance(a, str) or isinstance(p, str):
            return str(p).strip().lower() == str(a).strip().lower()
        try:
            return abs(float(p) - float(a)) <= tolerance
        except (TypeError, ValueError):
            return p == a

    if prediction is None or prediction is ...:
        print("No prediction yet: write yours in the cell above, run it, then run this cell again.")
        return
    if same(prediction, answer):
        print(f"✔ Right: {answer!r}. {why}".rstrip())
    else:
        print(f"✘ Not quite: you predicted {prediction!r}; the notebook computed {answer!r}. Look again at the cells "
              "above, change your prediction and run both cells again.")


def _iterable(x) -> bool:
    try:
        iter(x)
    except TypeError:
        return False
    return True


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


class _Answer:
    """An exercise's answer as a notebook shows it: folded (HTML ``<details>``, opened with a click, so a reader who
    has not predicted yet does not see it by accident), and as the same line of plain text for any other reader."""

    def __init__(self, text: str, table=None):
        self.text, self.table = text, table

    def __repr__(self) -> str:
        return self.text if self.table is None else f"{self.text}\n{self.table}"

    def _repr_html_(self) -> str:
        import html

        table = "" if self.table is None else getattr(self.table, "_repr_html_", lambda: f"<pre>{self.table}</pre>")()
        return (f"<details><summary><b>Answer</b> (click to open once you have predicted)</summary>"
                f"<p>{html.escape(self.text)}</p>{table}</details>")


def _show_answer(text: str, table=None) -> None:
    """``text`` (and ``table``, if any) folded under "Answer" in a notebook (:class:`_Answer`), printed elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython comes with the notebooks' dependencies
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(_Answer(text, table))
    else:
        print(_Answer(text, table))


def fold(text: str, table=None) -> None:
    """``text`` (and ``table``) folded under "Answer" until clicked, as a check cell folds its answer: for a "Try"
    whose answer the stored notebook should still hold, out of sight until the reader has worked it out."""
    _show_answer(text, table)


def reveal(answer, why: str) -> None:
    """An exercise's answer and the reason for it, in one line, for a check cell run without a prediction (so that
    the stored notebook, read without a kernel, shows it, folded until clicked): ``Answer: … because …``, then how
    to test oneself first. ``why`` is built from the run's own numbers by the caller."""
    _show_answer(f"Answer: {answer!r}, because {why.rstrip('.')}. (To test yourself first: set your prediction in "
                 "the cell above and run both cells; this cell then checks it.)")


# -- exercises whose stored output teaches ------------------------------------------------------------------------
def check_explained(prediction, answer, why: str, tolerance: float = 0.0, table=None) -> None:
    """An exercise's check cell that always ends with the answer and why (``why``: computed from the run, not
    retyped), so that a notebook read as stored, where nobody has predicted anything, still teaches the answer.

    With a prediction it first says right or not quite, as :func:`check` does (the same matching rules); without
    one (``None``) it says so in one line before the answer. ``table``: numbers that give the answer away (e.g. a
    DataFrame), folded with it, or shown after the verdict."""
    import contextlib
    import io

    if prediction is None or prediction is ...:
        print("No prediction set (prediction cell above left at None): predict first, then compare.")
        _show_answer(f"Answer: {answer!r}. Why: {why}", table)
        return
    verdict = io.StringIO()
    with contextlib.redirect_stdout(verdict):
        check(prediction, answer, "", tolerance)
    right = verdict.getvalue().startswith("✔")
    print(f"✔ Right: {answer!r}." if right else f"✘ Not quite: you predicted {prediction!r}; the answer is "
          f"{answer!r}.")
    print(f"Why: {why}")
    if table is not None:
        from IPython.display import display

        display(table)


def static_default(update, **controls) -> None:
    """The default setting of a :func:`knobs` box drawn as plain outputs, under a one-line heading: a widget's
    output area needs a running kernel, so a widget cell calls this first and the notebook read as stored still
    shows what the widgets draw first. ``controls`` are the same widgets the box gets."""
    shown = ", ".join(f"{name} = {w.value!r}" for name, w in controls.items())
    print(f"Default setting ({shown}), drawn once as a static output; the widgets below redraw it in a kernel.")
    update(**{name: w.value for name, w in controls.items()})


# -- what a federated round did (the quickstart) ----------------------------------------------------------------------
def round_factor_gaps(run) -> pd.DataFrame:
    """Per round of a run whose runtime kept its messages (``run.runtime.keep_messages = True`` before
    ``run.run()``): the factor gap of the adapters the clients sent up (:func:`fedrl_kit.lora_factors.factor_gap`),
    weighted as the server weighs them (n_k, FedAvg) and with equal weights (FedIT); its numerator and denominator
    (``‖gap‖``, ``‖adapter‖``: the whole adapter so far), the gap over the clients' mean update of this round, and how
    far the clients' updates agree (:func:`fedrl_kit.lora_factors.factor_round`, from the adapter the server sent);
    and the bytes each client's reply took on the wire (the largest over clients)."""
    from fedrl_kit.lora_factors import factor_gap, factor_round

    replies = [m for m in run.runtime.messages if m.kind == "fit_result"]
    if not replies:
        raise ValueError("no fit_result messages kept: set run.runtime.keep_messages = True before run.run()")
    sent = {m.round: m.payload["adapter"] for m in run.runtime.messages if m.kind == "fit"}
    rows = []
    for r in sorted({m.round for m in replies}):
        mine = [m for m in replies if m.round == r]
        states = [m.payload["adapter"] for m in mine]
        weights = [run.server.sizes[m.sender] for m in mine]
        parts = factor_round(sent[r], states, weights)
        rows.append({"round": r, "gap, n_k weights": factor_gap(states, weights),
                     "gap, equal weights": factor_gap(states, [1] * len(mine)),
                     "‖gap‖": parts["gap"], "‖adapter‖": parts["adapter"],
                     "gap / round's update": parts["gap"] / parts["update"] if parts["update"] > 0 else float("nan"),
                     "agreement of updates": parts["agreement"],
                     "bytes up per client": max(m.nbytes for m in mine)})
    return pd.DataFrame(rows).set_index("round")
