"""Benchmark: where a method's peak memory goes once the vocabulary is a real model's, measured on a CPU.

A FedGRPO round at the GPU check's ``methods`` shape (the full preset, 2 clients, tiny counts;
``benchmarks/gpu_check.py``) peaked at 28.6 GiB on an H100 where FedAvg-GRPO's took 6 GiB. With a real vocabulary
(Qwen2.5's 151,936 tokens) a pass's logits, [rows, positions, vocabulary], outweigh everything else a small batch
holds, so this script builds a *narrow* Qwen2 — the 1.5B shape's vocabulary and tied embeddings, but 2 layers of
width 64, so that it runs in minutes on a CPU — and runs one round of each ``--methods`` in its own process,
reporting:

- the process's peak resident memory (``ru_maxrss``: weights, activations, logits, Python and torch themselves);
- for each call site in ``fedrl_kit`` that ran the model, the largest logits tensor it made, in GiB as float32;
- the memory estimate of the same config (``fedrl_kit.policy.memory``, float32 on a CPU).

The width hides what a real model's layers add (activations scale with it), so the peaks are the logits' share,
not a GPU's peak. Run::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/logits_memory.py                # fedgrpo fedavg_grpo dpsda_grpo
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/logits_memory.py --methods fedgrpo --out /tmp/x.json

writes ``benchmarks/results/logits_memory_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import _machine  # noqa: F401  - the CPU kernel pin, before torch
from _machine import save_result

ROOT = Path(__file__).resolve().parents[1]
NARROW = dict(hidden_size=64, num_layers=2, intermediate_size=128, num_attention_heads=2, num_key_value_heads=1)
"""the narrow model's decoder (the vocabulary and embeddings are Qwen2.5's: ``gpu_rollouts.QWEN25_COMMON``)"""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--methods", nargs="+", default=["fedgrpo", "fedavg_grpo", "dpsda_grpo"])
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "logits_memory_cpu.json"))
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # internal: measure one method in this process
    p.add_argument("--model", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def build_narrow(folder: Path) -> str:
    """The narrow Qwen2 with Qwen2.5's vocabulary and the embedded tokenizer (a chat template added)."""
    import gpu_check
    import gpu_rollouts
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

    tok = build_tokenizer()
    model = build_tiny_model(tok, seed=0, **gpu_rollouts.QWEN25_COMMON, **NARROW)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    gpu_check.add_chat_template(folder)
    return str(folder)


def measure_one(method: str, model: str) -> dict:
    """One round of ``method`` on ``model`` in this process: peak RSS, the largest logits per call site, the estimate."""
    import gpu_check
    import transformers

    from fedrl_kit.policy.memory import GiB, estimate_memory
    from fedrl_kit.runs import Run

    transformers.logging.set_verbosity_error()
    largest: dict[str, list] = {}
    cls = transformers.Qwen2ForCausalLM
    forward = cls.forward

    def spy(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        sites = [f"{Path(f.filename).stem}.{f.name}" for f in traceback.extract_stack()
                 if "fedrl_kit" in f.filename and "site-packages" not in f.filename]
        key = " < ".join(sites[::-1][:3]) or "?"
        n = out.logits.numel()
        if n > largest.get(key, [0])[0]:
            largest[key] = [n, list(out.logits.shape)]
        return out

    cls.forward = spy
    cfg = gpu_check.method_config(method, model, argparse.Namespace(device="cpu"))
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        Run(cfg, run_dir=Path(tmp) / "run", progress=False).run()
    est = estimate_memory(cfg)
    return dict(method=method, seconds=round(time.perf_counter() - t, 1),
                peak_rss_gib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2),
                estimate_gib=round(est.total / GiB, 2), estimate_evaluators_gib=round(est.evaluators / GiB, 2),
                largest_logits=[dict(site=k, shape=s, gib_float32=round(n * 4 / GiB, 2))
                                for k, (n, s) in sorted(largest.items(), key=lambda kv: -kv[1][0])])


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.one:
        print(json.dumps(measure_one(args.one, args.model)))
        return 0
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        model = build_narrow(Path(tmp) / "narrow")
        for method in args.methods:  # each in a fresh process, so that one's peak is not another's
            proc = subprocess.run([sys.executable, __file__, "--one", method, "--model", model],
                                  capture_output=True, text=True, cwd=ROOT)
            if proc.returncode:
                raise SystemExit(f"{method} failed:\n{proc.stderr[-3000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            runs.append(row)
            top = row["largest_logits"][0]
            print(f"{method}: peak RSS {row['peak_rss_gib']} GiB (estimate {row['estimate_gib']} GiB), largest "
                  f"logits {top['shape']} = {top['gib_float32']} GiB at {top['site']} ({row['seconds']} s)",
                  flush=True)
    settings = dict(narrow=NARROW, vocab=151936, device="cpu", dtype="float32",
                    config="benchmarks/gpu_check.py method_config (full preset, 2 clients, tiny counts)")
    summary = {r["method"]: dict(peak_rss_gib=r["peak_rss_gib"], estimate_gib=r["estimate_gib"]) for r in runs}
    save_result(args.out, "logits_memory", argv, settings, runs, summary, prefix="OMP_NUM_THREADS=1 ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
