"""Benchmark: rollout tokens/s (HF ``generate``; vLLM when installed) and one local GRPO step, per model, on a GPU.

Models (``--models``):

- ``base``: the embedded base checkpoint ``data/base`` (the 1.6 M-parameter Qwen2);
- ``0.5b``, ``1.5b``: a Qwen2 with Qwen2.5-0.5B's or Qwen2.5-1.5B's shape (layers, widths, heads, key/value
  heads, 151,936-entry vocabulary, tied embeddings: 494.0 M and 1,543.7 M parameters) built from a config
  with the embedded tokenizer and random weights — nothing is downloaded — and saved to a temporary folder
  that ``Policy.load`` (and vLLM, which reads a folder) loads like any checkpoint. The tokenizer produces
  only the first 96 ids; sampled ids beyond them decode to nothing, which changes no cost.

Every model is loaded by ``Policy.load`` in bf16 on CUDA, float32 on a CPU, with the full preset's LoRA
adapter (r = 32, α = 64, on the seven projections); the GRPO knobs are the full preset's (μ = 2 gradient
epochs, β = 1e-4 with its reference pass, micro-batches of 4 rows, temperature 0.7, Adam at 1e-5), with b,
G and T set here. Per model:

1. ``hf``: ``Policy.rollout`` with the HF backend (tokenise, ``model.generate``, decode) of b prompts × G
   completions of T new tokens; tokens/s counts generated tokens (the completion mask's ones).
2. ``vllm``: the same through ``VLLMBackend`` (one engine, the adapter as a per-request LoRA), when the device
   is CUDA and vLLM is installed; otherwise a row says why not. vLLM is never imported on a CPU.
3. ``grpo_step``: ``GRPOClient.local_step`` on the embedded world's private rows (b prompts, G completions,
   the accuracy reward, ``grpo_step``), the same path a federated run takes.

Every completion is forced to T tokens (HF: ``min_new_tokens = T`` in the model's generation config; vLLM:
``ignore_eos``), so each measurement does the same work whatever the weights emit and the two backends'
counts compare. Each measurement: ``--warmup`` untimed calls, then ``--repetitions`` timed ones (the device
synchronised around each); we report medians. On CUDA the peak of ``torch.cuda.max_memory_allocated`` over
the timed calls (reset before them; the weights included) is reported per measurement.

Run on a GPU: ``python benchmarks/gpu_rollouts.py --device cuda --models base 0.5b 1.5b``; a CPU smoke
test (embedded base, b = G = 2, T = 8, one repetition): ``python benchmarks/gpu_rollouts.py --smoke``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gc
import importlib.util
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see grpo_step_vs_trl.py: spinning OpenMP waiters on a shared CPU

import torch  # noqa: E402
from _machine import cpu_model, save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QWEN25_VOCAB = 151936
SHAPES = {  # the Qwen2.5 models' config.json values; vocabulary, tied embeddings and rope as theirs (below)
    "0.5b": dict(hidden_size=896, num_layers=24, intermediate_size=4864, num_attention_heads=14,
                 num_key_value_heads=2),
    "1.5b": dict(hidden_size=1536, num_layers=28, intermediate_size=8960, num_attention_heads=12,
                 num_key_value_heads=2),
}
QWEN25_COMMON = dict(vocab_size=QWEN25_VOCAB, max_position_embeddings=32768, rope_theta=1e6, tie_word_embeddings=True)
MODELS = ("base", *SHAPES)
SMOKE = dict(models=["base"], prompts=2, num_generations=2, max_new_tokens=8, repetitions=1)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS,
                   help="base: data/base; 0.5b, 1.5b: Qwen2.5-0.5B's / -1.5B's shape, random weights")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"), help="auto: cuda when available")
    p.add_argument("--prompts", type=int, default=8, help="b, prompts per rollout batch and GRPO step")
    p.add_argument("--num-generations", type=int, default=8, help="G, completions per prompt")
    p.add_argument("--max-new-tokens", type=int, default=256, help="T, new tokens of every completion")
    p.add_argument("--repetitions", type=int, default=3, help="timed calls per measurement (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls before each measurement")
    p.add_argument("--vllm-memory", type=float, default=0.4,
                   help="vLLM's gpu_memory_utilization (the training model shares the GPU)")
    p.add_argument("--seed", type=int, default=0, help="seeds the random models, the adapters and the sampling")
    p.add_argument("--smoke", action="store_true",
                   help="a seconds-long check on a CPU; defaults " + ", ".join(f"{k}={v}" for k, v in SMOKE.items()))
    p.add_argument("--out", default="", help="the JSON's path (default benchmarks/results/gpu_rollouts_<device>.json)")
    args = p.parse_args(argv)
    if args.smoke:  # the smoke test's sizes, unless a flag sets them
        p.set_defaults(**SMOKE)
        args = p.parse_args(argv)
    for name in ("prompts", "num_generations", "max_new_tokens", "repetitions"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, got {args.warmup}")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device")
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    return args


def device_name(device: str) -> str:
    return torch.cuda.get_device_name(0) if device == "cuda" else cpu_model()


def save_shape(name: str, folder: Path, device: str, dtype: torch.dtype, seed: int) -> str:
    """Build the named Qwen2.5 shape with the embedded tokenizer and random weights; save it to ``folder``."""
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

    tokenizer = build_tokenizer()
    with torch.device(device):  # initialising a billion weights is much faster where they will run
        model = build_tiny_model(tokenizer, seed=seed, **QWEN25_COMMON, **SHAPES[name])
    model.to(dtype).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    return str(folder)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure(call, device: str, warmup: int, repetitions: int) -> dict:
    """``warmup`` untimed calls, then ``repetitions`` timed ones; ``call(i)`` returns the tokens it generated.

    Returns:
        tokens (of the last timed call), median seconds, median tokens/s, the peak GPU MiB over the timed calls.
    """
    for i in range(warmup):
        call(-1 - i)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    seconds, rates, tokens = [], [], 0
    for i in range(repetitions):
        sync(device)
        t0 = time.perf_counter()
        tokens = call(i)
        sync(device)
        seconds.append(time.perf_counter() - t0)
        rates.append(tokens / seconds[-1])
    peak = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None
    return dict(tokens=tokens, seconds=statistics.median(seconds), tokens_per_s=statistics.median(rates),
                peak_gpu_mib=peak, all_seconds=seconds)


def vllm_unavailable(device: str) -> str | None:
    """Why the vLLM row cannot run here, or None (checked without importing vLLM)."""
    if device != "cuda":
        return "vLLM needs CUDA"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM not installed"
    return None


def vllm_backend(base: str, args, rank: int):
    """A ``VLLMBackend`` whose sampling ignores eos, so that every completion has T tokens."""
    from fedrl_kit.policy.backends import VLLMBackend, _vllm_api

    LLM, SamplingParams, LoRARequest = _vllm_api()
    return VLLMBackend(base, max_loras=1, max_lora_rank=rank, gpu_memory_utilization=args.vllm_memory,
                       api=(LLM, functools.partial(SamplingParams, ignore_eos=True), LoRARequest))


def bench_model(name: str, base: str, args, cfg) -> list[dict]:
    """The rows of one model: HF rollouts, vLLM rollouts (or why not), one local GRPO step."""
    from fedrl_kit.federation.client import GRPOClient
    from fedrl_kit.policy import adapters
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.rewards import make_reward_set
    from fedrl_kit.world.world import make_world

    b, G, T = args.prompts, args.num_generations, args.max_new_tokens
    policy = Policy.load(base, lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha, seed=args.seed,
                         max_new_tokens=T, temperature=cfg.temperature, device=args.device, dtype=cfg.dtype,
                         lora_targets=cfg.lora_targets)
    policy.model.get_base_model().generation_config.min_new_tokens = T  # every row T tokens: comparable work
    n_params = sum(p.numel() for n, p in policy.model.named_parameters() if "lora_" not in n)
    lora = sum(p.numel() for n, p in policy.model.named_parameters() if f"lora_A.{adapters.GLOBAL}" in n
               or f"lora_B.{adapters.GLOBAL}" in n)
    print(f"{name}: {n_params / 1e6:,.1f} M parameters ({cfg.dtype}), LoRA r={cfg.lora_rank}: {lora / 1e6:.2f} M",
          flush=True)
    world = make_world(seed=args.seed, n_train=b * (args.warmup + args.repetitions + 1), n_test=1, n_public=0,
                       n_aux=0)
    prompts = list(world.train["prompt"][:b])

    def rollout(i: int) -> int:
        return int(policy.rollout(adapters.GLOBAL, prompts, G, seed=args.seed + 1000 + i).completion_mask.sum())

    row = dict(model=name, params=n_params, lora_params=lora)
    rows = [dict(row, measurement="hf", **measure(rollout, args.device, args.warmup, args.repetitions))]

    client = GRPOClient("client_0", 0, world.train, policy, make_reward_set(["accuracy"]), cfg.local_settings(),
                        cfg.grpo_settings(), args.seed)
    policy.set_state(client.cid, policy.get_state(adapters.GLOBAL))
    params = policy.trainable(client.cid)
    steps = iter(range(10**6))  # a fresh batch and sampling seed for every step

    def grpo(_: int) -> int:
        return round(client.local_step(1, next(steps), params)["completion_length"] * b * G)

    rows.append(dict(row, measurement="grpo_step", **measure(grpo, args.device, args.warmup, args.repetitions)))

    why_not = vllm_unavailable(args.device)
    if why_not is None:
        try:  # the one path no test runs against a real engine: a failure is recorded, the other rows are kept
            policy.backend = vllm_backend(base, args, cfg.lora_rank)
            rows.insert(1, dict(row, measurement="vllm", **measure(rollout, args.device, args.warmup,
                                                                   args.repetitions)))
        except Exception as e:  # noqa: BLE001
            rows.insert(1, dict(row, measurement="vllm", status=f"failed: {type(e).__name__}: {e}"[:500]))
        policy.backend = None
    else:
        rows.insert(1, dict(row, measurement="vllm", status=why_not))
    del policy, client, params
    gc.collect()
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return rows


def print_table(rows: list[dict]) -> None:
    print(f"{'model':>6} {'params':>9} {'measurement':>11} {'tokens':>7} {'median s':>9} {'tokens/s':>10} "
          f"{'peak GPU MiB':>12}")
    for r in rows:
        if "status" in r:
            print(f"{r['model']:>6} {r['params'] / 1e6:>8.1f}M {r['measurement']:>11}  {r['status']}")
            continue
        peak = f"{r['peak_gpu_mib']:.0f}" if r["peak_gpu_mib"] is not None else "-"
        print(f"{r['model']:>6} {r['params'] / 1e6:>8.1f}M {r['measurement']:>11} {r['tokens']:>7} "
              f"{r['seconds']:>9.3f} {r['tokens_per_s']:>10.1f} {peak:>12}")


def main(argv=None) -> int:
    args = parse_args(argv)
    import transformers

    from fedrl_kit.config import preset

    transformers.logging.set_verbosity_error()
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    # the full preset's LoRA and GRPO knobs, with this benchmark's b, G, T, device and dtype
    cfg = preset("full", base=str(ROOT / "data" / "base"), chat=False, device=args.device,
                 dtype=str(dtype).removeprefix("torch."), prompts_per_step=args.prompts,
                 num_generations=args.num_generations, max_new_tokens=args.max_new_tokens, local_steps=1)
    where = device_name(args.device)
    print(f"{args.device}: {where}; b={args.prompts} × G={args.num_generations}, T={args.max_new_tokens}, "
          f"{args.warmup} warm-up + {args.repetitions} timed calls per measurement", flush=True)
    rows = []
    for name in args.models:
        if name == "base":
            rows += bench_model(name, cfg.base, args, cfg)
            continue
        with tempfile.TemporaryDirectory(prefix=f"fedrl_{name}_") as folder:
            rows += bench_model(name, save_shape(name, Path(folder), args.device, dtype, args.seed), args, cfg)
    print_table(rows)

    slug = re.sub(r"[^a-z0-9]+", "_", where.lower()).strip("_") or args.device
    out = args.out or str(ROOT / "benchmarks" / "results" / f"gpu_rollouts_{slug}{'_smoke' if args.smoke else ''}.json")
    settings = dict(device=args.device, device_name=where, dtype=cfg.dtype, models=args.models, prompts=args.prompts,
                    num_generations=args.num_generations, max_new_tokens=args.max_new_tokens,
                    forced_length=True, repetitions=args.repetitions, warmup=args.warmup, seed=args.seed,
                    smoke=args.smoke, lora_rank=cfg.lora_rank, lora_alpha=cfg.lora_alpha,
                    lora_targets=cfg.lora_targets, grpo=dataclasses.asdict(cfg.grpo_settings()),
                    learning_rate=cfg.learning_rate)  # package versions and CPU kernels: save_result records them
    note = ("CPU run on a shared machine while other jobs ran: wall times are pessimistic" if args.device == "cpu"
            else f"one {where}")
    summary = {f"{r['model']}/{r['measurement']}": r.get("status") or (
        dict(seconds=r["seconds"]) if r["measurement"] == "grpo_step" else dict(tokens_per_s=r["tokens_per_s"]))
        for r in rows}
    save_result(out, "gpu_rollouts", argv, settings, rows, summary, quiet=True, note=note)
    print(f"wrote {out}")
    return 1 if any(str(r.get("status", "")).startswith("failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
