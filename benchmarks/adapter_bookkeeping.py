"""Benchmark: the adapter bookkeeping of a client's round (set_state, activate, get_state), cached vs peft's walks.

The quick preset's policy (embedded base ``data/base``, LoRA r = 8 on the seven projections) holds the global
adapter and K client adapters, K = 1, 8, 16. Per K and per path, each client in turn does what a sequential
client does per round: ``set_state`` (load the global adapter), ``activate`` (make it the trainable one),
``get_state`` (read it back for the reply). The uncached path is ``adapters.USE_CACHE = False`` (every call
walks the model through peft, as before the cache); the cached one is the default. Both paths run in the same
process, alternating, ``--repetitions`` times; we report the median CPU time per call
(``time.process_time``) and ``speedup = uncached / cached``, and check that both paths leave the same
adapter values. Writes ``benchmarks/results/adapter_bookkeeping.json``.

Run: ``OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/adapter_bookkeeping.py``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _machine import save_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CALLS = ("set_state", "activate", "get_state")


def one_pass(policy, names, state) -> dict[str, float]:
    """CPU seconds per call of each bookkeeping function, over one round of the clients ``names``."""
    spent = dict.fromkeys(CALLS, 0.0)
    for name in names:
        t0 = time.process_time()
        policy.set_state(name, state)
        t1 = time.process_time()
        policy.trainable(name)
        t2 = time.process_time()
        policy.get_state(name)
        t3 = time.process_time()
        spent["set_state"] += t1 - t0
        spent["activate"] += t2 - t1
        spent["get_state"] += t3 - t2
    return {k: v / len(names) for k, v in spent.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, nargs="+", default=[1, 8, 16], help="the K values")
    p.add_argument("--repetitions", type=int, default=5, help="rounds timed per path and K")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "adapter_bookkeeping.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    import transformers

    transformers.logging.set_verbosity_error()
    from fedrl_kit.config import preset
    from fedrl_kit.policy import adapters
    from fedrl_kit.policy.engine import Policy

    cfg = preset("quick")
    summary, runs = {}, []
    for K in args.clients:
        policy = Policy.load(str(ROOT / cfg.base), lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha, seed=cfg.seed)
        names = [f"client_{i}" for i in range(K)]
        rng = np.random.default_rng(0)
        state = {k: v + rng.standard_normal(v.shape).astype(np.float32) for k, v in policy.get_state().items()}
        for name in names:  # create the adapters (not timed)
            policy.set_state(name, state)
        times = {"uncached": [], "cached": []}
        for rep in range(args.repetitions):
            for path in (("uncached", "cached") if rep % 2 == 0 else ("cached", "uncached")):
                adapters.USE_CACHE = path == "cached"
                times[path].append(one_pass(policy, names, state))
        adapters.USE_CACHE = True
        read = {n: policy.get_state(n) for n in names}
        adapters.USE_CACHE = False
        same = all(np.array_equal(read[n][k], v) for n in names for k, v in policy.get_state(n).items())
        adapters.USE_CACHE = True
        med = {path: {c: statistics.median(t[c] for t in ts) for c in CALLS} for path, ts in times.items()}
        row = {"lora_tensors_per_adapter": len(state), "same_values": same}
        for c in CALLS:
            row[c] = dict(uncached_ms=1e3 * med["uncached"][c], cached_ms=1e3 * med["cached"][c],
                          speedup=med["uncached"][c] / max(med["cached"][c], 1e-9))
        tot_u, tot_c = (sum(med[path].values()) for path in ("uncached", "cached"))
        row["all_three"] = dict(uncached_ms=1e3 * tot_u, cached_ms=1e3 * tot_c, speedup=tot_u / max(tot_c, 1e-9))
        summary[f"K={K}"] = row
        runs.append(dict(K=K, times=times))
        print(f"K={K}: " + ", ".join(f"{c} ×{row[c]['speedup']:.1f}" for c in (*CALLS, "all_three")), flush=True)
    save_result(args.out, "adapter_bookkeeping", argv, dict(vars(args), preset="quick", lora_rank=cfg.lora_rank),
                runs, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
