"""Sampling speed against the memory-bandwidth bound: HF ``generate`` as the package runs it, against a static KV
cache with the decode step compiled into a CUDA graph, the LoRA adapter folded into a copy of the weights, and both.

A decode step of a small model at 64 rows reads every weight once. At the GPU's copy bandwidth (measured here in
the same run: a device-to-device copy, read + write bytes over seconds) that takes ``weight bytes ÷ bandwidth``:
the bound. HF ``generate`` with an unmerged adapter launches a few hundred kernels a step, so it sits far above it.

Variants, each on the same prompts (``rows`` rows of ``prompt_tokens`` random tokens, every completion forced to
``tokens`` new tokens so every call does the same work):

- ``generate``: ``model.generate`` on the peft model (the adapter unmerged): what ``Policy.rollout`` does;
- ``static_graph``: the same with ``cache_implementation="static"``, under which transformers compiles the
  forward (``torch.compile``, mode ``reduce-overhead``: CUDA graphs) on a GPU;
- ``folded``: the adapter folded into a copy of the weights in the model's dtype (``merge_and_unload`` on a copy),
  sampled with plain ``generate``: the GRPO ratio's log-probs would still come from the training model, as TRL
  does with vLLM;
- ``folded_static_graph``: both.

Correctness: each variant decodes greedily once, and the fraction of rows whose completions equal
``generate``'s is reported (folding rounds the weights to the model's dtype once, so in bf16 it is not 1 by
construction; a static cache alone should give 1 up to kernel differences).

    python benchmarks/sampling_speed.py --device cuda --models 0.5b 1.5b   # on a GPU
    python benchmarks/sampling_speed.py --smoke                            # CPU: the embedded base, tiny sizes
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_model  # noqa: E402  (first: the CPU kernel pin)
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("generate", "static_graph", "folded", "folded_static_graph")


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def copy_bandwidth(device: str, nbytes: int) -> float:
    """Bytes per second a device-to-device copy moves (each byte read once and written once)."""
    x = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=device)
    y = torch.empty_like(x)
    y.copy_(x)
    sync(device)
    reps, t = 5, time.perf_counter()
    for _ in range(reps):
        y.copy_(x)
    sync(device)
    seconds = (time.perf_counter() - t) / reps
    del x, y
    return 2 * nbytes / seconds


def perturb_adapter(model, seed: int, scale: float = 0.01) -> None:
    """Give every LoRA B a random value (peft starts it at 0), so that folding the adapter changes the weights."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            with torch.no_grad():
                p.copy_((torch.randn(p.shape, generator=g) * scale).to(p.dtype))


def folded_copy(model):
    """A plain transformers model whose weights hold the active adapter folded in, in the base weights' dtype."""
    return copy.deepcopy(model).merge_and_unload()


def _graphs() -> int:
    """How many graphs torch.compile has made so far in this process (to tell whether a variant compiled)."""
    try:
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001
        return 0


def sample(model, ids, mask, tokens: int, pad_id: int, static: bool, greedy: bool, seed: int) -> torch.Tensor:
    """``tokens`` new tokens per row (forced: ``min_new_tokens``); returns the [rows, tokens] completion ids."""
    kw = dict(max_new_tokens=tokens, min_new_tokens=tokens, pad_token_id=pad_id, attention_mask=mask)
    kw.update(dict(do_sample=False) if greedy else dict(do_sample=True, temperature=0.7, top_k=0, top_p=1.0))
    if static:
        kw["cache_implementation"] = "static"
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(input_ids=ids, **kw)
    return out[:, ids.shape[1]:]


def bench_model(name: str, base: str, args, device: str, bandwidth: float, left=lambda: float("inf")) -> list[dict]:
    """Every variant on one model: median seconds of ``args.repetitions`` calls after a warm-up, ms per decode step
    against the bandwidth bound, peak GPU memory, and the fraction of greedy completions equal to ``generate``'s."""
    from fedrl_kit.policy.engine import Policy

    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    policy = Policy.load(base, lora_rank=32, lora_alpha=64, seed=args.seed, device=device, dtype=dtype,
                         lora_targets="auto")
    model = policy.model.eval()
    perturb_adapter(model, args.seed)
    pad_id = policy.tokenizer.pad_token_id if policy.tokenizer.pad_token_id is not None \
        else policy.tokenizer.eos_token_id
    vocab = model.get_output_embeddings().weight.shape[0]
    g = torch.Generator().manual_seed(args.seed)
    ids = torch.randint(3, vocab, (args.rows, args.prompt_tokens), generator=g).to(device)
    mask = torch.ones_like(ids)
    weight_bytes = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if "lora_" not in n)
    bound_ms = 1000 * weight_bytes / bandwidth
    folded = None
    reference, rows = None, []
    for variant in VARIANTS:
        row = dict(model=name, variant=variant, rows=args.rows, prompt_tokens=args.prompt_tokens,
                   new_tokens=args.tokens, dtype=str(dtype).replace("torch.", ""), weight_bytes=weight_bytes,
                   bound_ms_per_step=round(bound_ms, 4))
        cost = max((r.get("wall_s", 0.0) for r in rows), default=0.0)
        if left() < cost * 1.2:
            row["status"] = f"skipped: {left():.0f} s left, the slowest variant took {cost:.0f} s"
            rows.append(row)
            continue
        t_wall = time.perf_counter()
        try:
            if variant.startswith("folded") and folded is None:
                folded = folded_copy(model)
            m = folded if variant.startswith("folded") else model
            static = variant.endswith("static_graph")
            graphs = _graphs()
            sample(m, ids, mask, args.tokens, pad_id, static, False, args.seed)  # warm-up (compiles, if it does)
            row["compiled_graphs"] = _graphs() - graphs
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            seconds = []
            for rep in range(args.repetitions):
                sync(device)
                t = time.perf_counter()
                out = sample(m, ids, mask, args.tokens, pad_id, static, False, args.seed + 1 + rep)
                sync(device)
                seconds.append(time.perf_counter() - t)
            assert out.shape == (args.rows, args.tokens), f"generated {tuple(out.shape)}"
            greedy = sample(m, ids, mask, args.tokens, pad_id, static, True, args.seed)
            if variant == "generate":
                reference = greedy
            med = statistics.median(seconds)
            step_ms = 1000 * med / args.tokens
            row.update(status="ok", seconds=[round(s, 4) for s in seconds], median_s=round(med, 4),
                       tokens_per_s=round(args.rows * args.tokens / med, 1), ms_per_step=round(step_ms, 3),
                       over_bound=round(step_ms / bound_ms, 2),
                       greedy_identical_rows=None if reference is None else
                       round(float((greedy == reference).all(dim=1).float().mean()), 4),
                       greedy_identical_tokens=None if reference is None else
                       round(float((greedy == reference).float().mean()), 4),
                       peak_gpu_mib=round(torch.cuda.max_memory_allocated() / 2**20, 1) if device == "cuda" else None)
        except Exception as e:  # noqa: BLE001  - recorded; the other variants still run
            row.update(status=f"failed: {type(e).__name__}: {e}"[:600],
                       traceback=traceback.format_exc().splitlines()[-8:])
        row["wall_s"] = round(time.perf_counter() - t_wall, 1)
        rows.append(row)
        if args.verbose:
            print(f"sampling {name} {variant}: " + (f"{row['ms_per_step']:.2f} ms/step ({row['over_bound']}x the "
                  f"bound {bound_ms:.3f} ms), {row['tokens_per_s']:.0f} tokens/s, greedy identical rows "
                  f"{row['greedy_identical_rows']}" if row["status"] == "ok" else row["status"][:300]), flush=True)
    del folded, model, policy
    return rows


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--models", nargs="+", default=["0.5b", "1.5b"], help="base, 0.5b, 1.5b (random-weight shapes)")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--prompt-tokens", type=int, default=20)
    p.add_argument("--tokens", type=int, default=128, help="new tokens per row (forced)")
    p.add_argument("--repetitions", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--smoke", action="store_true", help="the embedded base on the CPU: 4 rows, 8 tokens, 1 call")
    p.add_argument("--out", default=None, help="default benchmarks/results/sampling_speed_<device>.json")
    args = p.parse_args(argv)
    if args.smoke:
        args.device, args.models, args.rows, args.tokens, args.repetitions = "cpu", ["base"], 4, 8, 1
    args.verbose = True
    return args


def main(argv=None) -> int:
    import tempfile

    import gpu_rollouts

    args = parse_args(argv)
    bandwidth = copy_bandwidth(args.device, (1 << 30) if args.device == "cuda" else (64 << 20))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            base = str(ROOT / "data" / "base") if name == "base" else gpu_rollouts.save_shape(
                name, Path(tmp) / name, args.device, torch.bfloat16 if args.device == "cuda" else torch.float32,
                args.seed)
            rows += bench_model(name, base, args, args.device, bandwidth)
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else cpu_model()
    out = Path(args.out or ROOT / "benchmarks" / "results" / f"sampling_speed_{args.device}.json")
    out.write_text(json.dumps(dict(benchmark="sampling_speed", command="python benchmarks/sampling_speed.py "
                                   + " ".join(sys.argv[1:] if argv is None else argv), device=where,
                                   copy_bandwidth_gb_s=round(bandwidth / 1e9, 1), rows=rows), indent=2))
    print(f"wrote {out}")
    return 1 if any(r["status"].startswith("failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
