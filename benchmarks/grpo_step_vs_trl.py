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

fedrl_kit is measured on four paths (``side_paths``): its default (``RunConfig().speed_path()``:
``prompt_pass="shared"``, each prompt run once for its G rows, in generation and in the step's scoring;
``generation_loop="compact"``, fedrl_kit's own sampling loop; ``length_buckets=2``, the step's rows scored in two
passes of similar completion length), the reference path (``REFERENCE_PATH``: HF ``generate``, every row its own
copy of its prompt as in TRL, one scoring pass), and the two steps between them (shared; shared + compact), so that
each option's share shows. All compute the same completions, log-probs and gradients to float tolerance
(``tests/test_shared_prompt_pass.py``, ``tests/test_generation_loop.py``, ``tests/test_length_buckets.py``);
``same_completions`` checks that every side sampled what TRL sampled.

One untimed warm-up per side, then ``repetitions`` interleaved measurements (the order rotates every repetition,
so no side always runs on a warmer cache); we report medians. The whole measurement runs ``runs`` times (3). The
goal, at every μ measured (2, the quick preset's, and 1) and in every run: ``ratio = trl / fedrl_kit >= 2`` on the
default path; and ``ratio_reference >= 1`` (the reference path is not slower than TRL).

Run: ``OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/grpo_step_vs_trl.py`` (``--quick`` for a smoke run).
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
    runs: int = 3
    """whole measurements in a row (each every μ, every side); the goal must hold in each"""
    quick: bool = False
    """3 repetitions, the first μ only, one run (a smoke run, ~20 s)"""
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
        args = dataclasses.replace(args, repetitions=3, num_iterations=args.num_iterations[:1], runs=1)
    if args.runs < 1:
        raise ValueError(f"runs must be >= 1, got {args.runs}")
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

    def __init__(self, args: Args, data, prompt_pass: str, generation_loop: str, length_buckets: int):
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


def side_paths() -> dict[str, dict]:
    """fedrl_kit's sides, each a sampling and scoring path: the default (``RunConfig().speed_path()``), the
    reference (:data:`~fedrl_kit.config.REFERENCE_PATH`), and the two steps between them, so that each option's share
    shows."""
    from fedrl_kit.config import REFERENCE_PATH, RunConfig

    return {"fedrl_kit": RunConfig().speed_path(), "fedrl_kit_reference": dict(REFERENCE_PATH),
            "fedrl_kit_shared": dict(REFERENCE_PATH, prompt_pass="shared"),
            "fedrl_kit_compact": dict(REFERENCE_PATH, prompt_pass="shared", generation_loop="compact")}


def measure(args: Args, sides: dict, mu: int, label: str = "") -> dict:
    """One untimed warm-up per side, then ``repetitions`` interleaved timed steps at μ; medians and ratios."""
    for side in sides.values():
        side.step(mu)
    same_completions = all(side.reward.completions == sides["trl"].reward.completions for side in sides.values())
    times = {name: [] for name in sides}
    lengths = {name: [] for name in sides}
    for rep in range(args.repetitions):
        order = list(sides)[rep % len(sides):] + list(sides)[:rep % len(sides)]  # no side always on a warm cache
        for name in order:
            s, length = sides[name].step(mu)
            times[name].append(s)
            lengths[name].append(length)
        print(f"  {label}μ={mu} rep {rep + 1}/{args.repetitions}: "
              + "  ".join(f"{n} {times[n][-1]:.3f} s" for n in sides), flush=True)
    med = {n: statistics.median(t) for n, t in times.items()}
    if not same_completions:
        print(f"  note: μ={mu}: the sides sampled different completions (compare the lengths)")
    return dict(num_iterations=mu, seconds=times, completion_length=lengths, median_s=med,
                median_completion_length={n: statistics.median(v) for n, v in lengths.items()},
                ratio=med["trl"] / med["fedrl_kit"],
                **{"ratio_" + n.removeprefix("fedrl_kit_"): med["trl"] / med[n] for n in sides
                   if n.startswith("fedrl_kit_")},
                same_completions=same_completions)


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
    paths = side_paths()
    fedrl = FedrlSide(args, data, **paths["fedrl_kit"])
    ordered = data.select([list(data["prompt"]).index(p) for p in fedrl.prompt_order])  # the client's draw order
    with tempfile.TemporaryDirectory() as workdir:
        trl_side = TrlSide(args, ordered, fedrl.init_state, fedrl.sampling_seed, workdir)
        setup_s = time.perf_counter() - t_setup
        sides = {"fedrl_kit": fedrl, "trl": trl_side,
                 **{name: FedrlSide(args, data, **path) for name, path in paths.items() if name != "fedrl_kit"}}
        runs = []
        for run in range(args.runs):
            results = {}
            for mu in args.num_iterations:
                results[mu] = measure(args, sides, mu, f"run {run + 1}/{args.runs} ")
            runs.append(results)

    settings = dataclasses.asdict(args)
    settings.update(reward="accuracy", epsilon=0.2, epsilon_high=0.25, beta=0.0, scale_rewards="group",
                    loss_type="dapo", temperature=1.0, max_grad_norm=1.0, paths=paths,
                    lora_targets=list(adapters.DEFAULT_TARGETS), trainable="LoRA adapter only (base frozen)")
    goal = all(r["ratio"] >= 2.0 for results in runs for r in results.values())
    passed = all(r["ratio_reference"] >= 1.0 for results in runs for r in results.values())

    print()
    print(f"One local GRPO step, B={args.prompts} prompts × G={args.num_generations}, "
          f"T≤{args.max_new_tokens} tokens, "
          f"LoRA r={args.lora_rank} α={args.lora_alpha:g} on {len(adapters.DEFAULT_TARGETS)} projections, "
          f"accuracy reward, {args.threads} threads on {os.cpu_count()} CPUs; "
          f"median of {args.repetitions} after 1 warm-up (setup {setup_s:.1f} s, not timed); trl / side:")
    names = [n for n in sides if n != "trl"]
    print(f"{'run':>4} {'μ':>3} {'trl s':>7} " + " ".join(f"{n.replace('fedrl_kit', 'fedrl'):>17}" for n in names)
          + f" {'same completions':>17}")
    for run, results in enumerate(runs, 1):
        for mu, r in results.items():
            print(f"{run:>4} {mu:>3} {r['median_s']['trl']:>7.3f} "
                  + " ".join(f"{r['median_s']['trl'] / r['median_s'][n]:>17.3f}" for n in names)
                  + f" {str(r['same_completions']):>17}")
    print("PASS: the default path is at least 2× TRL at every μ in every run" if goal else
          "NOT MET: the default path is under 2× TRL at " + ", ".join(
              f"run {i} μ={mu}" for i, results in enumerate(runs, 1) for mu, r in results.items() if r["ratio"] < 2))
    print("PASS: the reference path is not slower than TRL" if passed else
          "NOT MET: the reference path is slower than TRL somewhere (ratio_reference < 1)")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(
        benchmark="grpo_step_vs_trl", date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        machine=machine(), settings=settings, setup_seconds=setup_s,
        runs=[{str(mu): r for mu, r in results.items()} for results in runs],
        ratio=[{str(mu): r["ratio"] for mu, r in results.items()} for results in runs],
        ratio_reference=[{str(mu): r["ratio_reference"] for mu, r in results.items()} for results in runs],
        goal="ratio = trl / fedrl_kit on the default path (median step times) >= 2 at every num_iterations, "
             "in every run", goal_met=goal,
        criterion="ratio_reference = trl / fedrl_kit on the reference path >= 1 at every num_iterations",
        passed=passed,
    ), indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
