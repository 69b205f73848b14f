"""Benchmark: peak memory of a federated round with 1 and with 8 in-process clients on one shared base.

A ~100 M-parameter Qwen2 (built from a config with the embedded world's tokenizer, randomly
initialised: nothing is downloaded) is loaded once and frozen. Each client is a ``GRPOClient``
with its own LoRA adapter on that one base (peft multi-adapter) and its own Adam state. One
FedAvg-GRPO round runs exactly as a method runs it (``fedavg_grpo.run_round``: broadcast the
global adapter through the in-process runtime, every client in turn runs one local GRPO step —
b prompts × G completions, rewards, ``grpo_step`` — and returns its adapter; the server averages).

Each measurement runs in a fresh process (``memory_clients.py --child N``), so that the peak
resident set size (``getrusage(RUSAGE_SELF).ru_maxrss``) belongs to that measurement alone. The
acceptance bound is "8 clients use at most 1.5x the peak memory of 1 client".

Run: ``.venv/bin/python benchmarks/memory_clients.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from _machine import cpu_model, package_versions  # noqa: E402  (benchmarks/ is on sys.path when a script runs)

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Spinning OpenMP waiters make every op wait for a scheduler slice when the cores are shared
# (see grpo_step_vs_trl.py); must be set before torch loads, and the children inherit it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parent.parent
MARK = "RESULT "  # prefix of the child's one JSON line on stdout


@dataclass
class Args:
    clients: tuple = (1, 8)
    """client counts to measure; the bound compares the last with the first"""
    bound: float = 1.5
    """acceptance bound on peak(last) / peak(first)"""
    hidden_size: int = 768
    """model width (the model is ~100 M parameters at these defaults)"""
    num_layers: int = 12
    """transformer blocks"""
    intermediate_size: int = 2560
    """MLP width"""
    num_heads: int = 12
    """attention heads (and key/value heads: plain multi-head attention)"""
    lora_rank: int = 8
    """LoRA rank r of every adapter (the quick preset's)"""
    lora_alpha: float = 16.0
    """LoRA alpha (the quick preset's)"""
    prompts_per_step: int = 2
    """b, prompts per local GRPO step"""
    num_generations: int = 2
    """G, completions per prompt"""
    max_new_tokens: int = 8
    """T, cap on completion length"""
    rows_per_client: int = 8
    """private examples per client"""
    threads: int = 2
    """torch CPU threads"""
    seed: int = 0
    """seeds the model, the adapters, the world and the sampling"""
    out: str = str(ROOT / "benchmarks" / "results" / "memory_clients.json")
    """where the JSON results go"""


def parse_args(argv=None) -> tuple[Args, int | None]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", type=int, default=None, help="run one measurement with N clients (internal)")
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "tuple":
            parser.add_argument(flag, type=int, nargs="+", default=f.default)
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    ns = vars(parser.parse_args(argv))
    child = ns.pop("child")
    args = Args(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in ns.items()})
    if any(n < 1 for n in args.clients) or len(args.clients) < 2:
        raise ValueError(f"clients must list at least two counts >= 1, got {args.clients}")
    if child is not None and child < 1:
        raise ValueError(f"--child must be >= 1, got {child}")
    return args, child


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (Linux reports ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 2**20


def tensor_mb(tensors) -> float:
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20


def child(args: Args, n: int) -> dict:
    """One measurement: build the base, N clients, run one FedAvg-GRPO round; report the peak RSS."""
    import torch

    torch.set_num_threads(args.threads)
    from types import SimpleNamespace

    from fedrl_kit.federation.client import GRPOClient, LocalSettings
    from fedrl_kit.federation.runtime import InProcessRuntime
    from fedrl_kit.federation.server import Server
    from fedrl_kit.grpo import GRPOSettings
    from fedrl_kit.methods.fedavg_grpo import run_round
    from fedrl_kit.policy import adapters
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer
    from fedrl_kit.rewards import make_reward_set
    from fedrl_kit.world.world import make_world

    peak_imports = peak_rss_mb()
    tokenizer = build_tokenizer()
    model = build_tiny_model(tokenizer, seed=args.seed, hidden_size=args.hidden_size, num_layers=args.num_layers,
                             intermediate_size=args.intermediate_size, num_attention_heads=args.num_heads,
                             num_key_value_heads=args.num_heads)
    n_params = sum(p.numel() for p in model.parameters())
    base_mb = tensor_mb(model.parameters())
    policy = Policy(adapters.attach_lora(model, rank=args.lora_rank, alpha=args.lora_alpha, seed=args.seed),
                    tokenizer, max_new_tokens=args.max_new_tokens)
    peak_built = peak_rss_mb()

    world = make_world(seed=args.seed, n_train=n * args.rows_per_client, n_test=1, n_public=0, n_aux=0)
    local = LocalSettings(local_steps=1, prompts_per_step=args.prompts_per_step,
                          num_generations=args.num_generations)
    rewards = make_reward_set(["accuracy"])
    clients = {
        f"client_{i}": GRPOClient(f"client_{i}", i,
                                  world.train.select(range(i * args.rows_per_client, (i + 1) * args.rows_per_client)),
                                  policy, rewards, local, GRPOSettings(), args.seed)
        for i in range(n)
    }
    server = Server(InProcessRuntime(clients), policy, SimpleNamespace(aggregator="fedavg"), world,
                    policy.get_state(adapters.GLOBAL))
    t0 = time.perf_counter()
    metrics = run_round(server, round=0)
    round_s = time.perf_counter() - t0
    if metrics["failed"]:
        raise RuntimeError(f"clients failed, the measurement would understate memory: {metrics['failed']}")

    # what each client keeps between rounds: its adapter, its gradients and its Adam moments
    per_client = []
    for cid, c in clients.items():
        params = [p for name, p in policy.model.named_parameters() if f".{cid}." in name and "lora_" in name]
        grads = [p.grad for p in params if p.grad is not None]
        # with reset_optimizer (the default) the client drops its Adam state after the round: nothing is kept
        opt_state = c.optimizer.state.values() if c.optimizer is not None else []
        moments = [v for s in opt_state for v in s.values() if torch.is_tensor(v) and v.ndim > 0]
        per_client.append(dict(adapter_params=sum(p.numel() for p in params), adapter_mb=tensor_mb(params),
                               grad_mb=tensor_mb(grads), adam_mb=tensor_mb(moments)))
    return dict(
        clients=n, peak_rss_mb=peak_rss_mb(), peak_rss_after_imports_mb=peak_imports,
        peak_rss_after_base_mb=peak_built, round_seconds=round_s,
        base_params=n_params, base_weights_mb=base_mb, adapters_in_model=len(policy.model.peft_config),
        per_client_state=per_client[0], per_client_state_mb=sum(per_client[0][k] for k in ("adapter_mb", "grad_mb",
                                                                                             "adam_mb")),
        completion_length=float(sum(m["completion_length"] for m in metrics["clients"].values()) / n),
        packages=package_versions(),
    )


def measure(args: Args, n: int) -> dict:
    """Run ``--child n`` in a fresh interpreter and parse its result line."""
    flags = []
    for f in dataclasses.fields(Args):
        v = getattr(args, f.name)
        flags += ["--" + f.name.replace("_", "-"), *map(str, v)] if isinstance(v, tuple) else \
            ["--" + f.name.replace("_", "-"), str(v)]
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(n), *flags],
                          capture_output=True, text=True, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"measurement with {n} clients failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK):])


def main(argv=None) -> int:
    args, n_child = parse_args(argv)
    if n_child is not None:
        print(MARK + json.dumps(child(args, n_child)), flush=True)
        return 0

    t0 = time.perf_counter()
    runs = []
    for n in args.clients:
        r = measure(args, n)
        print(f"  {n} client(s): peak RSS {r['peak_rss_mb']:.0f} MB (round {r['round_seconds']:.1f} s)", flush=True)
        runs.append(r)
    first, last = runs[0], runs[-1]
    ratio = last["peak_rss_mb"] / first["peak_rss_mb"]
    passed = ratio <= args.bound

    print()
    print(f"Base: Qwen2 {first['base_params'] / 1e6:.1f} M parameters ({args.num_layers} layers, hidden "
          f"{args.hidden_size}, MLP {args.intermediate_size}, {args.num_heads} heads), float32 weights "
          f"{first['base_weights_mb']:.0f} MB, frozen and shared. Per client: LoRA r={args.lora_rank} "
          f"({first['per_client_state']['adapter_params'] / 1e6:.2f} M params) + grads + Adam = "
          f"{first['per_client_state_mb']:.1f} MB. One FedAvg-GRPO round, each client one local step of "
          f"{args.prompts_per_step} prompts × G={args.num_generations}, ≤{args.max_new_tokens} new tokens; "
          f"{args.threads} threads on {os.cpu_count()} CPUs.")
    print(f"{'clients':>8} {'peak RSS MB':>12} {'after imports':>14} {'after base':>11} {'adapters':>9} {'round s':>8}")
    for r in runs:
        print(f"{r['clients']:>8} {r['peak_rss_mb']:>12.0f} {r['peak_rss_after_imports_mb']:>14.0f} "
              f"{r['peak_rss_after_base_mb']:>11.0f} {r['adapters_in_model']:>9} {r['round_seconds']:>8.1f}")
    extra_mb, extra_clients = last["peak_rss_mb"] - first["peak_rss_mb"], last["clients"] - first["clients"]
    print(f"ratio = peak({last['clients']}) / peak({first['clients']}) = {ratio:.3f}  "
          f"(+{extra_mb:.0f} MB for {extra_clients} more clients, {extra_mb / extra_clients:.0f} MB each)")
    print(f"{'PASS' if passed else 'FAIL'}: {last['clients']} clients use {ratio:.2f}x the peak memory of "
          f"{first['clients']} ({'<=' if passed else '>'} {args.bound}x)")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(
        benchmark="memory_clients", date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        machine=dict(cpu_count=os.cpu_count(), platform=platform.platform(), python=platform.python_version(),
                     packages=first["packages"],
                     omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"), cpu_model=cpu_model()),
        settings=dataclasses.asdict(args), measurements=runs, ratio=ratio,
        criterion=f"peak RSS with {last['clients']} clients <= {args.bound} x peak RSS with {first['clients']}",
        passed=passed, seconds=time.perf_counter() - t0,
    ), indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
