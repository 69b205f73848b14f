"""Benchmark: many clients, a few a round — peak memory and round time for K = 10, 100 and 1,000 clients with 10
drawn per round (``clients_per_round``), in-process and on Flower, and what an idle client costs.

Every measurement is one run of ``fedrl_kit.runs.Run`` in a fresh process on a ~100 M-parameter Qwen2 (the
embedded world's tokenizer, randomly initialised and saved once to a scratch folder; nothing is downloaded):
the embedded world's 2,500 training problems split evenly (iid) over the K clients, ``rounds`` rounds of the
method, each of the 10 participants one local GRPO step of b prompts × G completions. A client that sits a
round out is *parked* (``GRPOClient.park``): its adapter leaves the model, and Adam's moments, where the method
keeps them across rounds, are kept as numpy arrays; ``--no-park`` keeps every client's adapter live instead, the
behaviour before parking existed, for contrast.

Reported per measurement:

- ``peak_rss_mb``: the peak resident set size — of the one process in-process (``getrusage``), and of the whole
  process tree on Flower's simulation engine (the server, Ray and the ClientApp actor, sampled every 0.1 s);
- ``round_seconds``: each round's wall time (the run's ``comm`` records) — round 1 creates the participants'
  adapters from scratch in every setting, so later rounds are the fair comparison and their mean is reported;
- ``rss_after_build_mb``: RSS once the world, the partition, the policy and the K clients exist (in-process);
  the difference between K = 1,000 and K = 10 over 990 clients is the per-idle-client cost;
- ``adapters_in_model``: LoRA adapters in the model at the end (global + live clients).

Acceptance (in-process and on Flower): peak RSS and round time with 1,000 clients ≤ 1.3× those with 10.

Run: ``OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/many_clients.py --no-park`` (45 min on 2 cores);
``--methods fedavg_grpo --clients 10 1000 --runtimes inprocess`` for a part of it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from _machine import cpu_model, package_versions  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parent.parent
MARK = "RESULT "
BOUND = 1.3
MODEL = dict(hidden_size=768, num_layers=12, intermediate_size=2560, num_attention_heads=12, num_key_value_heads=12)
"""the ~100 M-parameter Qwen2 of benchmarks/memory_clients.py"""
RUNTIMES = ("inprocess", "flower")
METHODS = {  # method → the config it runs with (besides the common settings)
    "fedavg_grpo": {},
    "pubswap_balanced": {"local_steps": 2, "pubswap": {"period": 2}, "n_public": 40},
    "fedmoa": {"world": "families", "n_train": 1500, "n_aux": 9, "fedmoa": {"eval_local": False, "validate": False,
                                                           "setting": "heter+heter"}},
}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class TreePeak:
    """The peak, over 0.1 s samples, of the summed RSS of this process and all its descendants (Ray's included)."""

    def __init__(self):
        import psutil

        self.proc, self.peak, self._stop = psutil.Process(), 0.0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        import psutil

        while not self._stop.is_set():
            total = 0
            for p in [self.proc, *self.proc.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total / 2**20)
            self._stop.wait(0.1)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def base_folder(scratch: Path) -> Path:
    """The ~100 M-parameter base, built and saved once (about 380 MB)."""
    path = scratch / "base_100m"
    if not (path / "config.json").exists():
        from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

        tok = build_tokenizer()
        build_tiny_model(tok, seed=0, **MODEL).save_pretrained(path)
        tok.save_pretrained(path)
    return path


def config(args, method: str, k: int):
    from fedrl_kit.config import preset

    fields = dict(METHODS[method])
    base = base_folder(Path(args.scratch))
    return preset("quick", method=method, base=str(base), num_clients=k, clients_per_round=args.per_round,
                  rounds=args.rounds, n_train=fields.pop("n_train", 2500), n_test=4, eval_samples=1, partition="iid", lora_rank=8,
                  lora_alpha=16.0, prompts_per_step=2, num_generations=2, max_new_tokens=8,
                  local_steps=fields.pop("local_steps", 1), seed=args.seed, **fields)


def child(args, method: str, k: int, runtime: str, park: bool) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    import fedrl_kit.flower
    import fedrl_kit.runs
    from fedrl_kit.runs import Run

    if not park:  # every client keeps its adapter (and optimiser) live: the behaviour before parking
        fedrl_kit.runs.park_idle = fedrl_kit.flower.park_idle = lambda clients, participants: None
    cfg = config(args, method, k)
    tree = TreePeak()
    t0 = time.perf_counter()
    build_rss = None
    if runtime == "inprocess":
        run = Run(cfg, progress=False).build()
        build_rss = peak_rss_mb()
        records = run.run()
        adapters = len(run.policy.model.peft_config)
    else:
        out = fedrl_kit.flower.run_on_flower(cfg, progress=False, num_supernodes=k)
        records, adapters = out["records"], None
        if out.get("failures"):
            raise RuntimeError(f"clients failed on Flower: {out['failures'][:2]}")
    seconds = time.perf_counter() - t0
    tree_peak = tree.stop()
    comm = [r for r in records if r["kind"] == "comm"]
    failures = [r for r in records if r["kind"] == "failure"]
    if failures:
        raise RuntimeError(f"clients failed, the measurement would understate the work: {failures[:2]}")
    later = [r["seconds"] for r in comm[1:]] or [comm[0]["seconds"]]
    return dict(method=method, clients=k, runtime=runtime, park=park, per_round=args.per_round,
                peak_rss_mb=peak_rss_mb() if runtime == "inprocess" else tree_peak, process_peak_rss_mb=peak_rss_mb(),
                tree_peak_rss_mb=tree_peak, rss_after_build_mb=build_rss, round_seconds=[r["seconds"] for r in comm],
                later_round_seconds=sum(later) / len(later), adapters_in_model=adapters, seconds=seconds,
                participants=[r.get("participants") for r in comm])


def measure(args, method, k, runtime, park) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", method, str(k), runtime, str(int(park)),
           "--rounds", str(args.rounds), "--per-round", str(args.per_round), "--threads", str(args.threads),
           "--seed", str(args.seed), "--scratch", args.scratch]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{method}, K = {k}, {runtime} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--clients", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--runtimes", nargs="+", default=list(RUNTIMES), choices=RUNTIMES)
    ap.add_argument("--no-park", action="store_true", help="also measure the largest K in-process without parking")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-round", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scratch", default="/tmp/fedrl_many_clients")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "many_clients.json"))
    ap.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        method, k, runtime, park = args.child
        print(MARK + json.dumps(child(args, method, int(k), runtime, bool(int(park)))), flush=True)
        return 0
    if min(args.clients) < args.per_round:
        raise SystemExit(f"--clients must each be >= --per-round ({args.per_round}), got {args.clients}")
    base_folder(Path(args.scratch))
    t0, rows = time.perf_counter(), []
    plan = [(m, k, rt, True) for m in args.methods for rt in args.runtimes for k in args.clients]
    if args.no_park:
        plan += [(m, max(args.clients), "inprocess", False) for m in args.methods]
    for m, k, rt, park in plan:
        try:
            r = measure(args, m, k, rt, park)
        except RuntimeError as e:  # recorded, and the other measurements go on
            rows.append(dict(method=m, clients=k, runtime=rt, park=park, error=str(e)[-2000:]))
            print(f"{m:>17} {rt:>9} K = {k:>5}: FAILED {str(e).splitlines()[0]}", flush=True)
            continue
        rows.append(r)
        print(f"{m:>17} {rt:>9} K = {k:>5} {'parked' if park else 'live  '}: peak RSS {r['peak_rss_mb']:7.0f} MB, "
              f"rounds {', '.join(f'{s:.1f}' for s in r['round_seconds'])} s, adapters {r['adapters_in_model']}",
              flush=True)
    checks = []
    for m in args.methods:
        for rt in args.runtimes:
            mine = {r["clients"]: r for r in rows if r["method"] == m and r["runtime"] == rt and r["park"]
                    and "error" not in r}
            lo, hi = min(args.clients), max(args.clients)
            if lo in mine and hi != lo and hi in mine:
                mem = mine[hi]["peak_rss_mb"] / mine[lo]["peak_rss_mb"]
                tim = mine[hi]["later_round_seconds"] / mine[lo]["later_round_seconds"]
                idle = None
                if rt == "inprocess":
                    idle = (mine[hi]["rss_after_build_mb"] - mine[lo]["rss_after_build_mb"]) * 2**20 / (hi - lo)
                checks.append(dict(method=m, runtime=rt, clients=[lo, hi], peak_ratio=mem, round_time_ratio=tim,
                                   idle_client_bytes=idle, passed=mem <= BOUND and tim <= BOUND))
                print(f"{m} {rt}: K = {hi} vs {lo}: peak {mem:.3f}x, round time {tim:.3f}x"
                      + (f", {idle / 1024:.1f} KiB per idle client" if idle is not None else "")
                      + f" -> {'PASS' if checks[-1]['passed'] else 'FAIL'} (<= {BOUND}x)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = "OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/many_clients.py " + " ".join(argv or sys.argv[1:])
    out.write_text(json.dumps(dict(
        benchmark="many_clients", date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        command=cmd.strip(), machine=dict(cpu_count=os.cpu_count(), platform=platform.platform(),
                                          python=platform.python_version(), packages=package_versions(),
                                          omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"), cpu_model=cpu_model()),
        settings=dict(model=MODEL, rounds=args.rounds, per_round=args.per_round, threads=args.threads,
                      seed=args.seed, methods={m: METHODS[m] for m in args.methods}, bound=BOUND),
        measurements=rows, checks=checks,
        passed=bool(checks) and all(c["passed"] for c in checks) and not any("error" in r for r in rows),
        seconds=time.perf_counter() - t0), indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0 if checks and all(c["passed"] for c in checks) and not any("error" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
