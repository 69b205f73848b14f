"""Run configuration: one dataclass documented field by field, presets, and validation.

Presets:

- ``quick`` — the embedded world on a 2-core CPU, a few minutes per run (the default).
- ``full`` — paper scale on a GPU: a real Hugging Face model (Qwen2.5-1.5B-Instruct), bf16,
  8 clients, the PubSwap paper's GRPO settings (Tables 9–12: LoRA r = 32, α = 64,
  lr 1e-5, clip (0.2, 0.25), KL 1e-4, 2 gradient epochs, rollout temperature 0.7).

Every invalid field raises ``ValueError`` naming the field and its allowed range.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields

METHODS = ("fedavg_grpo", "fedprox_grpo", "central_grpo", "zero_shot", "pubswap_random", "pubswap_balanced",
           "fedgrpo", "fedpetuning_sft", "dpsda_grpo", "dpsda_sft", "fedmoa")
PUBSWAP_METHODS = ("pubswap_random", "pubswap_balanced")
PRESETS = ("quick", "full")


@dataclass
class RunConfig:
    method: str = "fedavg_grpo"
    """which method runs: one of METHODS"""
    preset: str = "quick"
    """the preset the other defaults came from (recorded in config.json)"""
    seed: int = 0
    """seeds the world, the partition, the adapters, every batch and every sample: a CPU run is bit-reproducible"""

    # -- policy --------------------------------------------------------------------------------
    base: str = "data/base"
    """base checkpoint: a folder written by `fedrl pretrain` / save_pretrained, or a Hugging Face hub id"""
    chat: bool = False
    """wrap prompts in the tokenizer's chat template with the format's system prompt (real chat models)"""
    device: str = "cpu"
    """where the model runs: "cpu" or "cuda" (or "cuda:N")"""
    dtype: str = "float32"
    """model weights dtype: float32, bfloat16 or float16"""
    lora_rank: int = 8
    """LoRA rank r of every adapter"""
    lora_alpha: float = 16.0
    """LoRA alpha; the update is (alpha / r) · B A"""
    max_new_tokens: int = 20
    """cap on completion length (tokens; the embedded world's longest correct formatted answer is 16)"""
    temperature: float = 1.0
    """rollout temperature (also used to score π_old in the importance ratio, as TRL does)"""

    # -- world -----------------------------------------------------------------------------------
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
    partition: str = "dirichlet"
    """how private data is split: iid, dirichlet (over topics) or pathological"""
    dirichlet_alpha: float = 0.5
    """Dirichlet concentration over topics (smaller = more heterogeneous)"""
    topics_per_client: int = 2
    """topics per client for the pathological partition"""
    equal_size: bool = False
    """give every client exactly the same number of examples"""

    # -- federation ----------------------------------------------------------------------------
    rounds: int = 10
    """communication rounds R"""
    local_steps: int = 2
    """τ, local GRPO steps per client per round"""
    prompts_per_step: int = 8
    """b, prompts per GRPO step"""
    num_generations: int = 8
    """G (K in PubSwap's notation), completions per prompt"""
    aggregator: str = "fedavg"
    """how adapters are combined: fedavg (by examples), fedit (uniform, eq. 4), median, trimmed_mean"""
    prox_mu: float = 0.01
    """FedProx μ (used by fedprox_grpo only)"""
    pubswap_period: int = 2
    """τ_swap: every τ_swap-th local step is a public step (pubswap methods; 2 ≤ τ_swap ≤ local_steps)"""
    trace_drift: bool = False
    """record client drift after every local step (kind "drift" in metrics.jsonl; see fedrl_kit.instrument)"""
    reset_optimizer: bool = True
    """fresh optimiser state each round (PubSwap §4); False keeps each client's Adam moments"""

    # -- GRPO (TRL's names) ----------------------------------------------------------------------
    learning_rate: float = 2e-3
    """Adam learning rate of the LoRA factors"""
    num_iterations: int = 2
    """gradient epochs per batch of rollouts"""
    epsilon: float = 0.2
    """lower clip: ratio ≥ 1 − epsilon"""
    epsilon_high: float = 0.25
    """upper clip: ratio ≤ 1 + epsilon_high (DAPO's clip-higher)"""
    beta: float = 0.0
    """KL coefficient to the base (0 disables the reference pass)"""
    scale_rewards: str = "group"
    """advantage scaling: group, batch or none"""
    loss_type: str = "token-mean"
    """loss aggregation: token-mean or seq-mean-token-mean"""
    rewards: tuple = ("accuracy",)
    """reward components (names from fedrl_kit.rewards.REWARDS); component 0 is accuracy"""
    reward_weights: tuple = ()
    """weights of the reward components (empty = equal); normalised to sum to 1"""

    # -- evaluation and bookkeeping --------------------------------------------------------------
    eval_every: int = 1
    """evaluate the global model on the test split every this many rounds (and after the last)"""
    eval_samples: int = 4
    """completions per test problem for pass@1"""
    checkpoint_every: int = 1
    """save a resumable checkpoint every this many rounds"""
    fail_client: str = ""
    """fault injection for demos and tests: "client_id@round" makes that client raise in that round"""

    extra: dict = field(default_factory=dict)
    """method-specific settings (kept in config.json)"""

    def validate(self) -> "RunConfig":
        """Raise ValueError naming the first invalid field and its allowed range; return self."""
        def need(ok: bool, name: str, allowed: str):
            if not ok:
                raise ValueError(f"{name} must be {allowed}, got {getattr(self, name)!r}")

        need(self.method in METHODS, "method", f"one of {METHODS}")
        need(self.preset in PRESETS, "preset", f"one of {PRESETS}")
        need(isinstance(self.seed, int) and self.seed >= 0, "seed", "an integer >= 0")
        need(isinstance(self.base, str) and self.base != "", "base", "a checkpoint folder or hub id")
        need(self.device == "cpu" or self.device.startswith("cuda"), "device", '"cpu" or "cuda[:N]"')
        need(self.dtype in ("float32", "bfloat16", "float16"), "dtype", "float32, bfloat16 or float16")
        need(1 <= self.lora_rank <= 1024, "lora_rank", "in [1, 1024]")
        need(self.lora_alpha > 0, "lora_alpha", "> 0")
        need(1 <= self.max_new_tokens <= 32768, "max_new_tokens", "in [1, 32768]")
        need(0 < self.temperature <= 5, "temperature", "in (0, 5]")
        need(self.n_train >= 1, "n_train", ">= 1")
        need(self.n_test >= 1, "n_test", ">= 1")
        need(self.n_public >= 0, "n_public", ">= 0")
        need(self.n_aux >= 0, "n_aux", ">= 0")
        need(1 <= self.num_clients <= 1000, "num_clients", "in [1, 1000]")
        need(self.num_clients <= self.n_train, "num_clients", f"<= n_train ({self.n_train})")
        need(self.partition in ("iid", "dirichlet", "pathological"), "partition", "iid, dirichlet or pathological")
        need(self.dirichlet_alpha > 0, "dirichlet_alpha", "> 0")
        need(1 <= self.topics_per_client <= 7, "topics_per_client", "in [1, 7]")
        need(0 <= self.rounds <= 100000, "rounds", "in [0, 100000]")
        need(1 <= self.local_steps <= 10000, "local_steps", "in [1, 10000]")
        need(1 <= self.prompts_per_step <= 4096, "prompts_per_step", "in [1, 4096]")
        need(2 <= self.num_generations <= 256, "num_generations", "in [2, 256] (GRPO needs a group)")
        need(self.aggregator in ("fedavg", "fedit", "median", "trimmed_mean"), "aggregator",
             "fedavg, fedit, median or trimmed_mean")
        need(self.prox_mu >= 0, "prox_mu", ">= 0")
        need(isinstance(self.trace_drift, bool), "trace_drift", "true or false")
        need(isinstance(self.pubswap_period, int) and self.pubswap_period >= 2, "pubswap_period", "an integer >= 2")
        if self.method in PUBSWAP_METHODS:
            need(self.pubswap_period <= self.local_steps, "pubswap_period",
                 f"in [2, local_steps = {self.local_steps}] (τ_swap ≤ τ)")
            need(self.n_public >= 1, "n_public", ">= 1 for PubSwap (its public steps draw from D_pub)")
        need(0 < self.learning_rate <= 1, "learning_rate", "in (0, 1]")
        need(1 <= self.num_iterations <= 100, "num_iterations", "in [1, 100]")
        need(0 < self.epsilon < 1, "epsilon", "in (0, 1)")
        need(0 < self.epsilon_high <= 10, "epsilon_high", "in (0, 10]")
        need(self.beta >= 0, "beta", ">= 0")
        need(self.scale_rewards in ("group", "batch", "none"), "scale_rewards", "group, batch or none")
        need(self.loss_type in ("token-mean", "seq-mean-token-mean"), "loss_type", "token-mean or seq-mean-token-mean")
        from fedrl_kit.rewards import REWARDS
        need(len(self.rewards) >= 1 and all(r in REWARDS for r in self.rewards), "rewards",
             f"a non-empty tuple of names from {sorted(REWARDS)}")
        need(len(self.reward_weights) in (0, len(self.rewards)) and all(w >= 0 for w in self.reward_weights),
             "reward_weights", f"empty or {len(self.rewards)} non-negative numbers")
        need(self.eval_every >= 1, "eval_every", ">= 1")
        need(1 <= self.eval_samples <= 64, "eval_samples", "in [1, 64]")
        need(self.checkpoint_every >= 1, "checkpoint_every", ">= 1")
        need(self.fail_client == "" or ("@" in self.fail_client and self.fail_client.split("@")[1].isdigit()),
             "fail_client", '"" or "client_id@round"')
        need(isinstance(self.extra, dict), "extra", "a dict of method-specific settings")
        from fedrl_kit.methods import method_module
        hook = getattr(method_module(self.method), "validate", None)
        if hook is not None:  # method-specific settings (config.extra), named in the method's module
            hook(self)
        return self

    def replace(self, **changes) -> "RunConfig":
        """A validated copy with ``changes`` applied (unknown names raise ValueError)."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise ValueError(f"unknown config field(s) {unknown}; known: {sorted(names)}")
        return dataclasses.replace(self, **changes).validate()

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["rewards"], d["reward_weights"] = list(self.rewards), list(self.reward_weights)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        d = dict(d)
        for k in ("rewards", "reward_weights"):
            if k in d:
                d[k] = tuple(d[k])
        return cls().replace(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


FULL = dict(
    preset="full", base="Qwen/Qwen2.5-1.5B-Instruct", chat=True, device="cuda", dtype="bfloat16",
    lora_rank=32, lora_alpha=64.0, max_new_tokens=1024, temperature=0.7, n_train=8000, n_test=500,
    n_public=500, num_clients=8, rounds=36, local_steps=10, prompts_per_step=32, num_generations=8,
    learning_rate=1e-5, beta=1e-4, eval_every=4, eval_samples=4, aggregator="fedit",
)


def preset(name: str = "quick", **overrides) -> RunConfig:
    """The named preset with ``overrides`` applied and validated."""
    if name not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {name!r}")
    base = RunConfig() if name == "quick" else RunConfig().replace(**FULL)
    return base.replace(**overrides)


def parse_set(items: list[str]) -> dict:
    """Parse CLI ``--set key=value`` items using each field's type (tuples are comma-separated)."""
    types = {f.name: f.type for f in fields(RunConfig)}
    defaults = RunConfig()
    out = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set takes key=value, got {item!r}")
        k, v = item.split("=", 1)
        if k not in types:
            raise ValueError(f"unknown config field {k!r}; known: {sorted(types)}")
        cur = getattr(defaults, k)
        if isinstance(cur, bool):
            if v.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"{k} must be true or false, got {v!r}")
            out[k] = v.lower() in ("true", "1")
        elif isinstance(cur, int):
            out[k] = int(v)
        elif isinstance(cur, float):
            out[k] = float(v)
        elif isinstance(cur, tuple):
            parts = [p for p in v.split(",") if p]
            out[k] = tuple(float(p) for p in parts) if k == "reward_weights" else tuple(parts)
        elif isinstance(cur, dict):
            out[k] = json.loads(v)
        else:
            out[k] = v
    return out
