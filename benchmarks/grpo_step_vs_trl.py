"""Benchmark: one local GRPO step in fedrl_kit against one in ``trl.GRPOTrainer``.

Both sides get the same things: the embedded base checkpoint (``data/base``), the same B prompts
from the embedded world, G completions per prompt, the same cap T on completion length, the same
LoRA adapter (rank, alpha, target modules and initial values), the same accuracy reward, the
same GRPO knobs (clip 0.2 / 0.25, no KL, group-scaled advantages, the dapo loss), one
generation followed by μ = ``num_iterations`` optimiser steps on the whole batch, and the same
two CPU threads. Each measurement starts from the same adapter values and a fresh Adam state.

What one *step* is, on each side:

- fedrl_kit: ``GRPOClient.local_step`` — ``Policy.rollout`` (tokenise, sample, decode), the
  rewards, and ``grpo_step`` (π_old scores, μ × (forward, backward, clip, Adam step)).
- TRL: from the ``on_step_begin`` callback of its first optimiser step to the ``on_step_end``
  callback of its μ-th inside ``trainer.train(max_steps=μ)``: generation, rewards, advantages,
  π_old scores when μ > 1, μ × (forward, backward, clip, AdamW step, scheduler step). Trainer
  construction and the setup ``train()`` does before its first step (optimiser, accelerator,
  dataloader) are not counted. TRL's gradient checkpointing (on by default in ``GRPOConfig``) is
  turned off: it trades time for memory by recomputing activations, which fedrl_kit does not do.

Both sides sample the very same completions, so they do the same work: TRL's dataset holds the B
prompts in the order the fedrl_kit client draws them, unshuffled, and torch is seeded with the
client's sampling seed right before TRL generates (``same_completions`` in the JSON checks it).
Every measurement repeats that same batch from the same adapter, so the spread of the times is
the machine's noise only.

fedrl_kit is measured twice: with the default ``prompt_pass="per_row"`` (every row runs its own copy
of its prompt, TRL's way) and with ``prompt_pass="shared"`` (each prompt runs once for its G rows: one
prefill per prompt in generation, one scoring pass per prompt in the step, the completions against its
cached keys and values; the same completions, log-probs and gradients to float tolerance,
``tests/test_shared_prompt_pass.py``), with ``generation_loop="compact"`` besides (fedrl_kit's own sampling loop,
``tests/test_generation_loop.py``), and with all that and ``length_buckets=2`` (the step scores its rows in two
passes of similar completion length, each padded to its own longest, ``tests/test_length_buckets.py``): the last
is what ``RunConfig.faster()`` turns on. ``same_completions`` checks that all sides sampled the same.

One untimed warm-up per side, then ``repetitions`` interleaved measurements (the order
rotates every repetition, so no side always runs on a warmer cache); we report medians.
Two criteria, at every μ measured (2, the quick preset's, and 1): ``ratio = trl / fedrl_kit >= 1``
("fedrl_kit is not slower", default pass) and ``ratio_shared = trl / fedrl_kit (prompt_pass="shared") >= 2``
(the performance goal), and the same for the compact and faster sides.

Run: ``.venv/bin/python benchmarks/grpo_step_vs_trl.py`` (``--quick`` for fewer repetitions).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# OpenMP threads that spin while they wait turn every small op into a scheduler time slice when
# another process shares the cores: on a busy 2-core machine a step ran ~50x slower (19 s vs 0.4 s).
# Sleeping waiters cost nothing measurable on an idle machine. Must be set before torch loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from _machine import cpu_model, package_versions  # noqa: E402  (first: it imports fedrl_kit, the CPU kernel pin)
import torch  # noqa: E402
import transformers  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Args:
    base: str = str(ROOT / "data" / "base")
    """the base checkpoint both sides load"""
    prompts: int = 8
    """B, prompts per step (the quick preset's prompts_per_step)"""
    num_generations: int = 8
    """G, completions per prompt (the quick preset's)"""
    max_new_tokens: int = 24
    """T, cap on completion length (TRL's max_completion_length; the quick preset's)"""
    num_iterations: tuple = (2, 1)
    """μ values to measure, gradient epochs per batch of rollouts: 2 is the quick preset's; at μ = 1
    TRL skips the π_old pass (π_old = π_θ)"""
    lora_rank: int = 8
    """LoRA rank r (the quick preset's)"""
    lora_alpha: float = 16.0
    """LoRA alpha (the quick preset's)"""
    learning_rate: float = 2e-3
    """Adam(W) learning rate (the quick preset's); constant within a step on both sides"""
    repetitions: int = 9
    """timed measurements per side and per μ, after one untimed warm-up"""
    threads: int = 2
    """torch CPU threads"""
    seed: int = 0
    """seeds the world, the adapter and every measurement's sampling"""
    quick: bool = False
    """3 repetitions and the first μ only (a smoke run, ~20 s)"""
    out: str = str(ROOT / "benchmarks" / "results" / "grpo_step_vs_trl.json")
    """where the JSON results go"""


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type == "bool":
            parser.add_argument(flag, action="store_true", help=f.name)
        elif f.type == "tuple":
            parser.add_argument(flag, type=int, nargs="+", default=f.default)
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default)
    args = Args(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in vars(parser.parse_args()).items()})
    if args.quick:
        args = dataclasses.replace(args, repetitions=3, num_iterations=args.num_iterations[:1])
    if args.repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {args.repetitions}")
    if any(mu < 1 for mu in args.num_iterations):
        raise ValueError(f"num_iterations must all be >= 1, got {args.num_iterations}")
    return args


class RecordingReward:
    """``accuracy_reward`` that remembers the completions it scored last (to check both sides sampled the same)."""

    __name__ = "accuracy_reward"  # TRL names its reward metrics after the function

    def __init__(self):
        from fedrl_kit.rewards import accuracy_reward

        self.reward, self.completions = accuracy_reward, []

    def __call__(self, prompts, completions, **columns):
        self.completions = list(completions)
        return self.reward(prompts, completions, **columns)


class FedrlSide:
    """fedrl_kit: a Policy with one client adapter and a GRPOClient whose private data is exactly the B prompts."""

    def __init__(self, args: Args, data, prompt_pass: str = "per_row", generation_loop: str = "hf",
                 length_buckets: int = 1):
        from fedrl_kit.federation.client import GRPOClient, LocalSettings, step_seed
        from fedrl_kit.policy.engine import Policy
        from fedrl_kit.rewards import RewardSet
        from fedrl_kit.speed import Sampler

        self.policy = Policy.load(args.base, lora_rank=args.lora_rank, lora_alpha=args.lora_alpha, seed=args.seed,
                                  max_new_tokens=args.max_new_tokens)
        self.init_state = self.policy.get_state()  # the global adapter: both sides start every measurement from it
        local = LocalSettings(local_steps=1, prompts_per_step=args.prompts, num_generations=args.num_generations,
                              learning_rate=args.learning_rate)
        self.reward = RecordingReward()
        rewards = RewardSet(names=("accuracy",), funcs=(self.reward,), weights=(1.0,))
        self.client = GRPOClient("client0", 0, data, self.policy, rewards, local, None, args.seed)
        # round 0, step 0 every time: the same prompt order and sampling seed in every measurement
        self.prompt_order = self.client.sample_batch(round=0, step=0)["prompt"]
        # GRPOClient.local_step's rollout seed; if that formula changes, same_completions turns False
        self.sampling_seed = step_seed(args.seed + 1, 0, 0, 0)
        self.prompt_pass = prompt_pass  # generation's prefill and the step's scoring
        # "compact": folded adapter, finished rows leave the batch
        self.policy.sampler = Sampler(generation_loop, prompt_pass)
        self.length_buckets = length_buckets  # k > 1: the step's scoring in k passes of similar completion length

    def step(self, mu: int) -> tuple[float, float]:
        """One timed local step; returns (seconds, mean completion length)."""
        from fedrl_kit.grpo import GRPOSettings
        from fedrl_kit.speed import Scorer

        # defaults: clip (0.2, 0.25), beta 0, loss_type dapo
        self.client.grpo = GRPOSettings(num_iterations=mu, score=Scorer(self.prompt_pass, self.length_buckets))
        self.policy.set_state(self.client.cid, self.init_state)
        params = self.policy.trainable(self.client.cid)
        t0 = time.perf_counter()
        diag = self.client.local_step(round=0, step=0, params=params)
        return time.perf_counter() - t0, diag["completion_length"]


class TrlSide:
    """TRL: GRPOTrainer on the same base, wrapped with the same LoRA adapter by fedrl_kit's attach_lora.

    Its dataset is the B prompts in the order the fedrl_kit client draws them (no shuffling), and the
    step timer seeds torch with the client's sampling seed right before generation, so both sides
    sample the very same completions and do the same work.
    """

    def __init__(self, args: Args, data, init_state, sampling_seed: int, workdir: str):
        import transformers
        import trl

        from fedrl_kit.policy import adapters
        from fedrl_kit.policy.hub import load_pretrained

        model, tokenizer = load_pretrained(args.base)
        self.model = adapters.attach_lora(model, rank=args.lora_rank, alpha=args.lora_alpha, seed=args.seed)
        self.init_state, self.adapters = init_state, adapters
        self.timer = StepTimer(sampling_seed)
        self.reward = RecordingReward()
        self.trainers = {}
        for mu in args.num_iterations:
            cfg = trl.GRPOConfig(
                output_dir=workdir, use_cpu=True, bf16=False, report_to="none", save_strategy="no",
                disable_tqdm=True, logging_steps=10_000, seed=args.seed, shuffle_dataset=False,
                per_device_train_batch_size=args.prompts * args.num_generations,  # one generation batch = B·G rows
                gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=mu, max_steps=mu,
                num_generations=args.num_generations, max_completion_length=args.max_new_tokens,
                temperature=1.0, top_k=0, top_p=1.0, learning_rate=args.learning_rate, lr_scheduler_type="constant",
                weight_decay=0.0, max_grad_norm=1.0, beta=0.0, epsilon=0.2, epsilon_high=0.25,
                scale_rewards="group", loss_type="dapo",  # fedrl_kit's default, the same formula
                gradient_checkpointing=False,  # TRL's default is True; fedrl_kit does not recompute activations
            )
            self.trainers[mu] = trl.GRPOTrainer(model=self.model, processing_class=tokenizer,
                                                reward_funcs=[self.reward], args=cfg, train_dataset=data,
                                                callbacks=[self.timer])
            self.trainers[mu].remove_callback(transformers.PrinterCallback)  # no metrics dict after every train()

    def step(self, mu: int) -> tuple[float, float]:
        """One timed GRPO step (μ optimiser steps after one generation); returns (seconds, mean completion length)."""
        self.adapters.set_state(self.model, self.adapters.GLOBAL, self.init_state)
        trainer = self.trainers[mu]
        self.timer.reset()
        trainer.train()
        key = "completions/mean_length"
        lengths = trainer._metrics["train"][key] or [h[key] for h in trainer.state.log_history if key in h]
        length = lengths[-1] if lengths else float("nan")
        return self.timer.seconds(), float(length)


class StepTimer(transformers.TrainerCallback):
    """Wall time from the first optimiser step's begin to the last one's end within one ``train()`` call.

    It also seeds torch at that first begin, right before TRL generates (the dataloader has drawn
    from torch's generator by then).
    """

    def __init__(self, sampling_seed: int):
        self.sampling_seed = sampling_seed
        self.reset()

    def reset(self):
        self.t0 = self.t1 = None

    def on_step_begin(self, args, state, control, **kwargs):
        if self.t0 is None:
            torch.manual_seed(self.sampling_seed)
            self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.t1 = time.perf_counter()

    def seconds(self) -> float:
        if self.t0 is None or self.t1 is None:
            raise RuntimeError("the trainer ran no optimiser step")
        return self.t1 - self.t0


def machine() -> dict:
    import trl

    from fedrl_kit.seeding import cpu_kernels

    return dict(
        cpu_count=os.cpu_count(),
        cpus_usable=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        torch_threads=torch.get_num_threads(), processor=platform.processor() or platform.machine(),
        platform=platform.platform(), python=platform.python_version(), torch=torch.__version__,
        packages=dict(package_versions(), trl=trl.__version__), cpu_kernels=cpu_kernels(),
        loadavg_1min=os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        omp_wait_policy=os.environ.get("OMP_WAIT_POLICY"), cpu_model=cpu_model(),
    )


def main() -> int:
    args = parse_args()
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers 5's gradient_checkpointing renames
    from fedrl_kit.policy import adapters
    from fedrl_kit.world.world import make_world

    # the B prompts: the first B of the embedded world's private pool; both sides see exactly these
    data = make_world(seed=args.seed, n_train=args.prompts, n_test=1, n_public=0, n_aux=0).train
    t_setup = time.perf_counter()
    fedrl = FedrlSide(args, data)
    ordered = data.select([list(data["prompt"]).index(p) for p in fedrl.prompt_order])  # the client's draw order
    with tempfile.TemporaryDirectory() as workdir:
        trl_side = TrlSide(args, ordered, fedrl.init_state, fedrl.sampling_seed, workdir)
        setup_s = time.perf_counter() - t_setup
        shared = FedrlSide(args, data, prompt_pass="shared")
        compact = FedrlSide(args, data, prompt_pass="shared", generation_loop="compact")
        faster = FedrlSide(args, data, prompt_pass="shared", generation_loop="compact", length_buckets=2)
        sides = {"fedrl_kit": fedrl, "trl": trl_side, "fedrl_kit_shared": shared, "fedrl_kit_compact": compact,
                 "fedrl_kit_faster": faster}
        results = {}
        for mu in args.num_iterations:
            for side in sides.values():  # untimed warm-up
                side.step(mu)
            same_completions = (fedrl.reward.completions == trl_side.reward.completions == shared.reward.completions
                                == compact.reward.completions == faster.reward.completions)
            times = {name: [] for name in sides}
            lengths = {name: [] for name in sides}
            for rep in range(args.repetitions):
                order = list(sides)[rep % len(sides):] + list(sides)[:rep % len(sides)]
                for name in order:
                    s, length = sides[name].step(mu)
                    times[name].append(s)
                    lengths[name].append(length)
                print(f"  μ={mu} rep {rep + 1}/{args.repetitions}: "
                      + "  ".join(f"{n} {times[n][-1]:.3f} s (len {lengths[n][-1]:.1f})" for n in sides), flush=True)
            med = {n: statistics.median(t) for n, t in times.items()}
            results[mu] = dict(
                num_iterations=mu, seconds=times, completion_length=lengths, median_s=med,
                median_completion_length={n: statistics.median(v) for n, v in lengths.items()},
                ratio=med["trl"] / med["fedrl_kit"], ratio_shared=med["trl"] / med["fedrl_kit_shared"],
                ratio_compact=med["trl"] / med["fedrl_kit_compact"], ratio_faster=med["trl"] / med["fedrl_kit_faster"],
                same_completions=same_completions,
            )
            if not same_completions:
                print(f"  note: μ={mu}: the two sides sampled different completions (compare the lengths)")

    settings = dataclasses.asdict(args)
    settings.update(reward="accuracy", epsilon=0.2, epsilon_high=0.25, beta=0.0, scale_rewards="group",
                    loss_type="dapo", temperature=1.0, max_grad_norm=1.0,
                    lora_targets=list(adapters.DEFAULT_TARGETS), trainable="LoRA adapter only (base frozen)")
    passed = all(r["ratio"] >= 1.0 for r in results.values())
    goal = all(r["ratio_shared"] >= 2.0 for r in results.values())
    goal_compact = all(r["ratio_compact"] >= 2.0 for r in results.values())
    goal_faster = all(r["ratio_faster"] >= 2.0 for r in results.values())

    print()
    print(f"One local GRPO step, B={args.prompts} prompts × G={args.num_generations}, "
          f"T≤{args.max_new_tokens} tokens, "
          f"LoRA r={args.lora_rank} α={args.lora_alpha:g} on {len(adapters.DEFAULT_TARGETS)} projections, "
          f"accuracy reward, {args.threads} threads on {os.cpu_count()} CPUs; "
          f"median of {args.repetitions} after 1 warm-up (setup {setup_s:.1f} s, not timed)")
    print(f"{'μ (grad epochs)':>16} {'fedrl_kit s':>12} {'shared s':>9} {'compact s':>10} {'faster s':>9} "
          f"{'trl s':>9} {'trl/fedrl':>10} {'trl/shared':>11} {'trl/compact':>12} {'trl/faster':>11} "
          f"{'len fedrl':>10} {'len trl':>8}")
    for mu, r in results.items():
        m = r["median_s"]
        print(f"{mu:>16} {m['fedrl_kit']:>12.3f} {m['fedrl_kit_shared']:>9.3f} {m['fedrl_kit_compact']:>10.3f} "
              f"{m['fedrl_kit_faster']:>9.3f} {m['trl']:>9.3f} {r['ratio']:>10.3f} {r['ratio_shared']:>11.3f} "
              f"{r['ratio_compact']:>12.3f} {r['ratio_faster']:>11.3f} "
              f"{r['median_completion_length']['fedrl_kit']:>10.1f} {r['median_completion_length']['trl']:>8.1f}")
    ratios = ", ".join(f"{r['ratio']:.3f} at μ={mu}" for mu, r in results.items())
    shared_ratios = ", ".join(f"{r['ratio_shared']:.3f} at μ={mu}" for mu, r in results.items())
    compact_ratios = ", ".join(f"{r['ratio_compact']:.3f} at μ={mu}" for mu, r in results.items())
    faster_ratios = ", ".join(f"{r['ratio_faster']:.3f} at μ={mu}" for mu, r in results.items())
    print(f"ratio = trl / fedrl_kit = {ratios}; with prompt_pass='shared': {shared_ratios}; "
          f"and generation_loop='compact': {compact_ratios}; and length_buckets=2 (RunConfig.faster()): "
          f"{faster_ratios}")
    slower = [f"μ={mu}" for mu, r in results.items() if r["ratio"] < 1.0]
    print("PASS: fedrl_kit is not slower than TRL (ratio >= 1 at every μ)" if passed else
          f"FAIL: fedrl_kit is slower than TRL at {', '.join(slower)} (ratio < 1)")
    for key, label, met in (("ratio_shared", "prompt_pass='shared'", goal),
                            ("ratio_compact", "prompt_pass='shared' with generation_loop='compact'", goal_compact),
                            ("ratio_faster", "RunConfig.faster() (shared, compact, length_buckets=2)", goal_faster)):
        print(f"PASS: {label} is at least 2× TRL at every μ" if met else
              f"NOT MET: {label} is under 2× TRL at " +
              ", ".join(f"μ={mu}" for mu, r in results.items() if r[key] < 2.0))

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(
        benchmark="grpo_step_vs_trl", date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        machine=machine(), settings=settings, setup_seconds=setup_s,
        results={str(mu): r for mu, r in results.items()},
        ratio={str(mu): r["ratio"] for mu, r in results.items()},
        ratio_shared={str(mu): r["ratio_shared"] for mu, r in results.items()},
        ratio_compact={str(mu): r["ratio_compact"] for mu, r in results.items()},
        ratio_faster={str(mu): r["ratio_faster"] for mu, r in results.items()},
        criterion="ratio = trl / fedrl_kit (median step times) >= 1 at every num_iterations", passed=passed,
        goal="ratio_shared = trl / fedrl_kit with prompt_pass='shared' >= 2 at every num_iterations",
        goal_met=goal,
        goal_compact="ratio_compact = trl / fedrl_kit with prompt_pass='shared' and generation_loop='compact' >= 2 "
                     "at every num_iterations",
        goal_compact_met=goal_compact,
        goal_faster="ratio_faster = trl / fedrl_kit with RunConfig.faster()'s options (prompt_pass='shared', "
                    "generation_loop='compact', length_buckets=2) >= 2 at every num_iterations",
        goal_faster_met=goal_faster,
    ), indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
