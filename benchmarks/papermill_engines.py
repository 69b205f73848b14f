"""Benchmark: how often papermill stops for good on a notebook under CPU load, with its own engine and with ``fedrl``.

papermill's client can miss the wake-up of a cell's reply and then wait for ever with the reply unread
(``fedrl_kit/notebook_engine.py`` says how; docs/notebooks.md, "two missed wake-ups"). This script runs one notebook
``--runs`` times with each engine, alternating, beside ``--load`` busy processes at a lower niceness than the
notebook's (so that the notebook's kernel and client are the ones kept waiting), each run in a fresh kernel and
its own run folder, and counts the runs still going after ``--timeout`` seconds: hung (none of the notebook's cells
takes more than a few seconds at the smoke preset). A hung run's running cell is read from papermill's output.

Run::

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/papermill_engines.py

writes ``benchmarks/results/papermill_engines.json``. The stop needs work in the kernel at the right moment: with
Chromium installed (``apt-get install chromium``) the notebook's first PNG starts a browser there; the result file
records whether one was found.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _machine import save_result  # noqa: E402
from notebook_wall_times import NOTEBOOKS, RUN_PARAMETER  # noqa: E402

ENGINES = ("nbclient", "fedrl")
"""papermill's own engine and the project's (``--engine``)"""

BUSY = ("import torch\ntorch.set_num_threads(1)\na = torch.randn(256, 256)\n"
        "while True:\n    a = torch.tanh(a @ a / 16)\n")
"""one load process: a core kept busy by one-thread torch arithmetic, as the training runs beside the notebook kept it
when papermill was seen to stop"""


def running_cell(out: Path) -> int | None:
    """The index of the cell papermill marks as running in its output notebook (None: none, or no notebook yet)."""
    try:
        cells = json.loads(out.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return None
    return next((i for i, c in enumerate(cells) if c["metadata"].get("papermill", {}).get("status") == "running"),
                None)


def run_once(notebook: str, engine: str, folder: Path, parameters: dict, timeout: float, nice: int) -> dict:
    """One papermill run of ``notebook`` with ``engine`` in ``folder``; killed (with its kernel) if it is still going
    after ``timeout`` seconds."""
    out = folder / f"{notebook}.out.ipynb"
    parameters = {RUN_PARAMETER.get(notebook, "run_root"): str(folder / "runs"), **parameters}
    cmd = ["nice", "-n", str(nice), sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{notebook}.ipynb"),
           str(out), "--cwd", str(folder), "-k", "python3", "--engine", engine, "--no-progress-bar",
           *[x for k, v in parameters.items() for x in ("-p", k, v)]]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        cell = running_cell(out)
        os.killpg(proc.pid, signal.SIGKILL)  # papermill, its kernel and what the kernel started
        proc.communicate()
        return dict(engine=engine, outcome="hung", seconds=round(time.perf_counter() - t0, 1), running_cell=cell)
    outcome = "finished" if proc.returncode == 0 else f"failed: {err.strip().splitlines()[-1] if err.strip() else ''}"
    return dict(engine=engine, outcome=outcome, seconds=round(time.perf_counter() - t0, 1), running_cell=None)


def tally(rows: list[dict]) -> dict:
    """One engine's runs: how many, hung, failed, and the median seconds of those that finished."""
    done = sorted(r["seconds"] for r in rows if r["outcome"] == "finished")
    return dict(runs=len(rows), hung=sum(r["outcome"] == "hung" for r in rows),
                failed=sum(r["outcome"].startswith("failed") for r in rows),
                median_finished_s=done[len(done) // 2] if done else None)


def browser() -> str | None:
    """The Chrome/Chromium kaleido would start for the notebook's PNGs (None: PNG export is off)."""
    from fedrl_kit.viz import _find_browser

    return _find_browser() or None


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebook", default="01_fedgrpo_expert_selection", choices=NOTEBOOKS)
    ap.add_argument("--runs", type=int, default=6, help="runs per engine")
    ap.add_argument("--load", type=int, default=2, help="busy processes beside the notebook")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds after which a run counts as hung")
    ap.add_argument("--parameters", nargs="*", default=["preset_name=smoke"], metavar="KEY=VALUE")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "papermill_engines.json"))
    args = ap.parse_args(argv)
    if args.runs < 1 or args.load < 0 or args.timeout <= 0:
        ap.error("--runs must be >= 1, --load >= 0 and --timeout > 0")
    parameters = dict(p.split("=", 1) for p in args.parameters)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fedrl-engines-") as tmp:
        load = [subprocess.Popen(["nice", "-n", "5", sys.executable, "-c", BUSY]) for _ in range(args.load)]
        try:
            for run in range(args.runs):
                for engine in (ENGINES if run % 2 == 0 else ENGINES[::-1]):  # both see the same load
                    folder = Path(tmp) / f"{engine}-{run}"
                    folder.mkdir()
                    rows.append(dict(run=run, **run_once(args.notebook, engine, folder, parameters, args.timeout, 8)))
                    print(rows[-1], flush=True)
        finally:
            for p in load:
                p.kill()
                p.wait()
    summary = {e: tally([r for r in rows if r["engine"] == e]) for e in ENGINES}
    summary["browser"] = browser()
    return save_result(args.out, "papermill_engines", argv, dict(vars(args)), rows, summary)


if __name__ == "__main__":
    main()
