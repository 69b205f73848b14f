"""FedMOA: federated multi-objective GRPO with hypergradient reward weights and accuracy-aware aggregation.

Paper: ``papers/fedmoa.md`` (Wang et al., "FedMOA: Federated GRPO for Personalized Reasoning LLMs
under Heterogeneous Rewards"). A note on names: the paper calls its baseline — plain GRPO on each
client, then FedAvg — "FedGRPO". In this toolkit that baseline is **FedAvg-GRPO**
(:mod:`fedrl_kit.methods.fedavg_grpo`), and "FedGRPO" is a *different* paper's method
(``papers/fedgrpo.md``, :mod:`fedrl_kit.methods.fedgrpo`). Tables and figures here say FedAvg-GRPO.

One round (paper Fig. 2, §3.1), function by function:

1. the server sends each client the global LoRA adapter θ^global and that client's reward
   weights {(r_k^(m), w_k^(m))} (the cluster's aggregated values, or the initial uniform weights
   when ``reset_weights``: paper Fig. 5 resets them at each round boundary)   → ``fit`` messages
2. each client runs τ local multi-objective GRPO steps (§2, eq. 1–4)           → :meth:`MOAClient.local_step`
   a. b prompts × G completions; each of its K_m reward components r_k on every completion;
   b. **hypergradient weights** (§3.2, eq. 8–10): for each objective k the GRPO loss L_k with only
      r_k's group-relative advantage; g_k^(t) = ∇_h L_k, h the output of decoder layer
      ``hyper_layer`` (a forward hook, not all parameters)                     → :func:`objective_gradients`
      Δ_k^(t) = g_k^(t)·g_k^(t−1) (eq. 9), w_k ← w_k + λ Δ_k (eq. 10), projection onto the
      simplex (eq. 1)                                                           → ``moa_weights.hypergradient_step``
   c. r_w = Σ_k w_k r_k (eq. 2); the group-relative advantage of r_w (eq. 4) drives one GRPO
      update (``num_iterations`` clipped-surrogate epochs)                      → ``grpo.grpo_step``
3. clients send back θ^(m), their reward names and adapted weights w^(m)        → ``fit_result``
4. the server groups clients into task clusters by reward names (§3.3)         → ``moa_weights.cluster_by_reward_names``
   within a cluster s_m = 1/(w_0^(m) + ε), α = softmax(s) (eq. 11); θ^(c) = Σ α_m θ^(m) and the
   shared reward weights w_k^(c) = Σ α_m w_k^(m) (eq. 12; client-specific components are kept)
   across clusters θ^global = Σ_c N_c/ΣN θ^(c) (eq. 13)                         → :func:`aggregate_round`
5. evaluation of the new global model (and, every ``eval_every`` rounds, of each client's local
   model) on each family's held-out test split, per reward component          → :func:`evaluate_families`

Settings (``config.extra["setting"]``, paper §4.1 and Table 3), with the task families of
:mod:`fedrl_kit.world.families` (math = MATH-like, gsm = GSM8K-like, code = MBPP-like):

- ``"homo+homo"``: every client holds part of one family (``homo_family``) and reward config A;
- ``"homo+heter"``: one family, reward configs A, B, C assigned round-robin;
- ``"heter+heter"``: client m gets family m mod 3 and config ⌊m/3⌋ mod 3 (K = 9 covers every pair).

Reward configs (Table 3; accuracy is always component 0, r_0):

====  ===============================  ===================================================
cfg   math / gsm                       code
====  ===============================  ===================================================
A     accuracy, format, tag_count      code_accuracy, code_format, tag_count
B     accuracy, format                 code_accuracy, code_format, length_short
C     accuracy, tag_count              code_accuracy, code_format, char_repetition
====  ===============================  ===================================================

Ablations (Table 2) and the baseline, all as ``config.extra`` switches of this one method:
``lambda_on=False`` freezes the weights at their initial values (λ OFF); ``alpha_on=False``
aggregates by data size within a cluster (α OFF), which with eq. 13 is plain FedAvg by examples.
Both off is **FedAvg-GRPO** on the same per-client data and reward sets: the engine's
``fedavg_grpo`` method uses the run's single reward set and the default world, and cannot be given
per-client reward sets without changing shared files, so the baseline lives here
(``extra={"lambda_on": False, "alpha_on": False}``; :func:`method_label` names it).

Deviations and ambiguities, and our choices:

* **Where g_k is taken** (eq. 8): "the gradient w.r.t. an intermediate representation h". Rollouts
  differ from step to step (batch and lengths), so h^(t) and h^(t−1) have different shapes and
  eq. 9's inner product is undefined on the raw tensors. We take the gradient w.r.t. a
  perturbation δ ∈ R^H added to layer ``hyper_layer``'s output at every position
  (h' = h + δ, g_k = ∂L_k/∂δ at δ = 0 = Σ_positions ∇_h L_k): a fixed-size vector per objective.
* **L_k**: the clipped GRPO surrogate (same loss as the update) with r_k's group-normalised
  advantage alone (``moa_weights.per_objective_advantages``), at the current parameters
  (ratio = 1), token-mean over the batch.
* **Order within a step**: g^(t) is computed on the step's rollouts before the update; the weights
  updated with Δ^(t) (eq. 10) scalarise that same step's reward. The first step of a local round
  has no g^(t−1) and leaves w unchanged.
* **History across rounds**: g^(t−1) is cleared at every round start (after aggregation the model
  is a different one). Clients therefore hold no state between rounds; the weights live on the
  server, which sends them each round (so a resumed run is exact, see save_state/load_state).
* **Scale of Δ**: eq. 9 is unnormalised; its scale is the squared scale of the hidden gradients,
  so λ = 0.01 (the paper's value, our default) means different things for different models.
  ``normalise=True`` uses the cosine instead (our option, ``moa_weights.hypergradient_step``).
* **Clusters**: the paper groups clients "using the reward names" into coarse task clusters and
  aggregates only the components shared within a cluster, so a cluster can hold clients with
  different auxiliary rewards. Our default ``cluster_key="accuracy"`` therefore clusters by the
  name of r_0: math and gsm clients (both ``accuracy``) form one cluster, code clients
  (``code_accuracy``) another. ``cluster_key="names"`` clusters identical reward tuples instead.
* **Softmax of eq. 11** is applied as written (temperature 1; ``softmax_temperature`` is ours).
* **Evaluation**: the paper reports accuracy and "the average multi-objective reward values
  aggregated across objectives". Our *aggregated reward* of a model for a client is the mean of
  that client's reward components (equal weights, so FedAvg-GRPO and FedMOA are scored alike) on
  its family's test split; the global number averages it over clients. "Local" numbers evaluate
  each client's model after local training, before aggregation (Table 1's values in parentheses).
  The engine's own ``global`` record scores ``world.test`` with ``world.accuracy_fn`` (set below:
  each family's own accuracy, code by running its tests); the ``server`` records written by this
  module add the per-family, per-component numbers.
* **Model selection**: the paper picks the best global checkpoint by validation performance; we
  report the last round (no validation split is used for selection).
* ``config.rewards`` / ``reward_weights`` are ignored: each client's reward set comes from the
  setting. Initial weights are uniform over a client's components.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import torch

from fedrl_kit.evaluate import eval_seed
from fedrl_kit.federation.client import GRPOClient, step_seed
from fedrl_kit.grpo import grpo_loss, grpo_step
from fedrl_kit.moa_weights import (
    accuracy_aware_weights,
    across_cluster_fedavg,
    aggregate_params,
    aggregate_shared_weights,
    cluster_by_reward_names,
    hypergradient_step,
    per_objective_advantages,
)
from fedrl_kit.rewards import REWARDS, make_reward_set
from fedrl_kit.rollout import per_token_logps
from fedrl_kit.world.families import FAMILIES, PAPER_NAMES, make_family_world

SETTINGS = ("homo+homo", "homo+heter", "heter+heter")
CONFIG_NAMES = ("A", "B", "C")
REWARD_CONFIGS: dict[str, dict[str, tuple[str, ...]]] = {
    "math": {"A": ("accuracy", "format", "tag_count"), "B": ("accuracy", "format"), "C": ("accuracy", "tag_count")},
    "gsm": {"A": ("accuracy", "format", "tag_count"), "B": ("accuracy", "format"), "C": ("accuracy", "tag_count")},
    "code": {"A": ("code_accuracy", "code_format", "tag_count"), "B": ("code_accuracy", "code_format", "length_short"),
             "C": ("code_accuracy", "code_format", "char_repetition")},
}
"""paper Table 3 in the embedded world: family → reward config → reward names (accuracy first)"""

EVAL_COMPONENTS: dict[str, tuple[str, ...]] = {
    "math": ("accuracy", "format", "tag_count"),
    "gsm": ("accuracy", "format", "tag_count"),
    "code": ("code_accuracy", "code_format", "format", "tag_count", "length_short", "char_repetition"),
}
"""what :func:`evaluate_families` scores per family"""

DEFAULTS = dict(
    setting="heter+heter",  # homo+homo | homo+heter | heter+heter
    homo_family="math",  # the family of the homo settings
    lam=0.01,  # λ, hypergradient step size (paper §4.1)
    normalise=False,  # Δ_k as the cosine of consecutive gradients (ours; the paper's is unnormalised)
    hyper_layer=None,  # decoder layer whose output is h (eq. 8); None = the middle layer
    reset_weights=True,  # weights back to uniform at each round start (paper Fig. 5)
    lambda_on=True,  # adaptive weights (Table 2's λ); False freezes them
    alpha_on=True,  # accuracy-aware aggregation (Table 2's α); False = FedAvg by data size
    eps=1e-6,  # ε of eq. 11 (paper §4.1)
    softmax_temperature=1.0,  # eq. 11's softmax temperature (paper: none, = 1)
    cluster_key="accuracy",  # "accuracy": cluster by r_0's name; "names": by identical reward tuples
    eval_every=1,  # evaluate the global model per family every this many rounds (and the last)
    eval_local=True,  # also evaluate each client's local model then (Table 1's parentheses); "last": last round only
)
"""``config.extra`` keys of this method and their defaults"""


def settings_of(config) -> dict:
    """``DEFAULTS`` updated with ``config.extra`` (validated)."""
    validate(config)
    return {**DEFAULTS, **config.extra}


def validate(config) -> None:
    """Raise ValueError naming the bad ``config.extra`` key and its allowed values."""
    extra = config.extra
    unknown = sorted(set(extra) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"extra has unknown key(s) {unknown} for method fedmoa; allowed: {sorted(DEFAULTS)}")
    s = {**DEFAULTS, **extra}

    def need(ok: bool, key: str, allowed: str):
        if not ok:
            raise ValueError(f"extra['{key}'] must be {allowed}, got {s[key]!r}")

    def is_num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)

    need(s["setting"] in SETTINGS, "setting", f"one of {SETTINGS}")
    need(s["homo_family"] in FAMILIES, "homo_family", f"one of {tuple(FAMILIES)}")
    need(is_num(s["lam"]) and s["lam"] >= 0, "lam", "a finite number >= 0")
    for key in ("normalise", "reset_weights", "lambda_on", "alpha_on"):
        need(isinstance(s[key], bool), key, "true or false")
    need(isinstance(s["eval_local"], bool) or s["eval_local"] == "last", "eval_local", 'true, false or "last"')
    need(s["hyper_layer"] is None or (isinstance(s["hyper_layer"], int) and not isinstance(s["hyper_layer"], bool)),
         "hyper_layer", "null (the middle layer) or a decoder-layer index")
    need(is_num(s["eps"]) and s["eps"] > 0, "eps", "a number > 0")
    need(is_num(s["softmax_temperature"]) and s["softmax_temperature"] > 0, "softmax_temperature", "a number > 0")
    need(s["cluster_key"] in ("accuracy", "names"), "cluster_key", '"accuracy" or "names"')
    need(isinstance(s["eval_every"], int) and not isinstance(s["eval_every"], bool) and s["eval_every"] >= 1,
         "eval_every", "an integer >= 1")
    if s["setting"] == "heter+heter" and config.num_clients < len(FAMILIES):
        raise ValueError(f"num_clients must be >= {len(FAMILIES)} for extra['setting'] = 'heter+heter' "
                         f"(one client per family at least), got {config.num_clients}")


def method_label(extra: dict) -> str:
    """How tables name a run: FedMOA, FedAvg-GRPO (both switches off), or an ablation."""
    s = {**DEFAULTS, **extra}
    if s["lambda_on"] and s["alpha_on"]:
        return "FedMOA"
    if not s["lambda_on"] and not s["alpha_on"]:
        return "FedAvg-GRPO"
    return "FedMOA (λ off)" if not s["lambda_on"] else "FedMOA (α off)"


def client_plan(setting: str, num_clients: int, homo_family: str = "math") -> list[tuple[str, str]]:
    """(family, reward config) of each client under ``setting`` (paper §4.1)."""
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    fams = tuple(FAMILIES)
    if setting == "homo+homo":
        return [(homo_family, "A")] * num_clients
    if setting == "homo+heter":
        return [(homo_family, CONFIG_NAMES[m % 3]) for m in range(num_clients)]
    return [(fams[m % len(fams)], CONFIG_NAMES[(m // len(fams)) % 3]) for m in range(num_clients)]


# -- eq. 8: per-objective gradients at one hidden layer ----------------------------------------------


def decoder_layers(model) -> torch.nn.ModuleList:
    """The decoder layers of a (peft-wrapped) Hugging Face causal LM."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(base, "model", base)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"cannot find decoder layers in {type(base).__name__} (expected .model.layers)")
    return layers


def resolve_layer(model, hyper_layer) -> int:
    """The index of the hooked layer (``None`` = the middle one); ValueError names extra['hyper_layer']."""
    n = len(decoder_layers(model))
    idx = n // 2 if hyper_layer is None else hyper_layer
    if not -n <= idx < n:
        raise ValueError(f"extra['hyper_layer'] must be in [{-n}, {n - 1}] for this {n}-layer model, got {hyper_layer}")
    return idx % n


def objective_gradients(model, rollouts, scores: np.ndarray, layer: int, settings) -> np.ndarray:
    """g_k = ∂L_k/∂δ for every objective k, δ ∈ R^H added to layer ``layer``'s output (eq. 8).

    Args:
        model: the policy with the client's adapter active.
        rollouts: N = B·G completions.
        scores: [N, K] reward components (NaN already replaced).
        layer: decoder-layer index.
        settings: :class:`~fedrl_kit.grpo.GRPOSettings` (clip range, temperature, loss type, scaling).

    Returns:
        [K, H] float64, one gradient per objective.
    """
    G = rollouts.num_generations
    K = scores.shape[1]
    adv = per_objective_advantages(scores.reshape(-1, G, K), settings.scale_rewards)  # [B, G, K]
    adv = torch.as_tensor(adv.reshape(-1, K), dtype=torch.float32)  # [N, K]
    target = decoder_layers(model)[layer]
    hidden = next(p for p in model.parameters()).new_zeros(model.config.hidden_size)  # [H] δ
    delta = hidden.clone().requires_grad_(True)

    def add_delta(module, inputs, output):
        if isinstance(output, tuple):
            return (output[0] + delta,) + tuple(output[1:])
        return output + delta  # [b, L, H] + [H]

    handle = target.register_forward_hook(add_delta)
    try:
        logps = per_token_logps(model, rollouts, settings.temperature)  # [N, T]
    finally:
        handle.remove()
    grads = []
    for k in range(K):
        loss_k, _ = grpo_loss(logps, logps.detach(), adv[:, k], rollouts.completion_mask, settings.epsilon,
                              settings.epsilon_high, 0.0, None, settings.loss_type)  # L_k at ratio 1
        (g,) = torch.autograd.grad(loss_k, delta, retain_graph=k < K - 1, allow_unused=True)
        grads.append(np.zeros(delta.numel()) if g is None else g.detach().double().cpu().numpy())  # [H]
    return np.stack(grads)  # [K, H]


# -- clients ------------------------------------------------------------------------------------------


@dataclass
class HyperSettings:
    """What the client-side weight adaptation does (from config.extra)."""

    lambda_on: bool = True
    lam: float = 0.01
    normalise: bool = False
    layer: int = 2


class MOAClient(GRPOClient):
    """A FedMOA client: its own family data, its own named reward components and their weights.

    Its weights arrive with each ``fit`` message (the server keeps them between rounds) and
    leave, adapted, with the reply.
    """

    def __init__(self, cid, index, data, policy, reward_set, local, grpo, seed, family: str, config_name: str,
                 hyper: HyperSettings):
        super().__init__(cid, index, data, policy, reward_set, local, grpo, seed)
        self.family, self.config_name, self.hyper = family, config_name, hyper
        self.names = tuple(reward_set.names)

    def local_step(self, round: int, step: int, params, weights: np.ndarray, g_prev):
        """One multi-objective GRPO step (eq. 1–4) with the hypergradient weight update (eq. 8–10)."""
        batch = self.sample_batch(round, step)
        rollouts = self.policy.rollout(self.cid, batch["prompt"], self.local.num_generations,
                                       seed=step_seed(self.seed + 1, round, self.index, step))
        scores = np.nan_to_num(self.reward_scores(rollouts, batch))  # [N, K]
        delta = np.zeros(len(self.names))
        g_now = None
        if self.hyper.lambda_on:
            g_now = objective_gradients(self.policy.model, rollouts, scores, self.hyper.layer, self.grpo)  # [K, H]
            weights, delta = hypergradient_step(weights, g_now, g_prev, self.hyper.lam, self.hyper.normalise)
        rewards = torch.as_tensor(scores @ weights, dtype=torch.float32)  # [N] r_w = Σ w_k r_k (eq. 2)
        diag = grpo_step(self.policy.model, self._optimizer(params), rollouts, rewards, self.grpo,
                         ref_model_ctx=self.policy.reference)  # advantage of r_w (eq. 4)
        diag.update({f"reward/{n}": float(scores[:, k].mean()) for k, n in enumerate(self.names)})
        diag.update({f"delta/{n}": float(delta[k]) for k, n in enumerate(self.names)})
        diag["accuracy"] = float(scores[:, 0].mean())
        return diag, weights, g_now

    def on_fit(self, round: int, payload: dict) -> dict:
        """Load θ^global and this client's weights, run τ local steps, return θ^(m) and w^(m)."""
        self.policy.set_state(self.cid, payload["adapter"])
        params = self.policy.trainable(self.cid)
        if self.local.reset_optimizer:
            self.optimizer = None
        weights = np.asarray(payload["weights"], dtype=np.float64)  # [K]
        if weights.shape != (len(self.names),):
            raise ValueError(f"client {self.cid!r} got {weights.shape[0]} weights for {len(self.names)} rewards")
        g_prev, steps, trajectory = None, [], []
        for s in range(self.local.local_steps):
            diag, weights, g_prev = self.local_step(round, s, params, weights, g_prev)
            steps.append(diag)
            trajectory.append(weights.copy())
        for p in params:
            p.grad = None
        if self.local.reset_optimizer:
            self.optimizer = None
        metrics = {k: float(np.mean([d[k] for d in steps])) for k in steps[0]}
        for s, w in enumerate(trajectory):  # Fig. 5: the weights after every local step
            metrics.update({f"w@{s}/{n}": float(w[k]) for k, n in enumerate(self.names)})
        metrics.update({f"w/{n}": float(weights[k]) for k, n in enumerate(self.names)})
        return {"adapter": self.policy.get_state(self.cid), "num_examples": self.num_examples, "metrics": metrics,
                "reward_names": list(self.names), "weights": [float(x) for x in weights], "family": self.family}


def build_clients(run, local, grpo) -> dict:
    """Each client: its family's private rows (IID split within a family) and its reward set (Table 3).

    Replaces ``run.world`` with the family world (the server evaluates its test split) and
    ``run.partitions`` with the clients' datasets.
    """
    cfg = run.config
    s = settings_of(cfg)
    plan = client_plan(s["setting"], cfg.num_clients, s["homo_family"])
    families = tuple(dict.fromkeys(f for f, _ in plan))
    n_fam = len(families)
    world = make_family_world(cfg.seed, max(1, cfg.n_train // n_fam), max(1, cfg.n_test // n_fam), families)
    world.accuracy_fn = family_accuracy_reward
    rng = np.random.default_rng(cfg.seed)
    members = {f: [m for m, (g, _) in enumerate(plan) if g == f] for f in families}
    parts: dict[int, object] = {}
    for f in families:
        order = rng.permutation(len(world.train[f]))
        for j, idx in enumerate(np.array_split(order, len(members[f]))):
            parts[members[f][j]] = world.train[f].select(sorted(int(i) for i in idx))
    hyper = HyperSettings(s["lambda_on"], float(s["lam"]), s["normalise"], resolve_layer(run.policy.model,
                                                                                        s["hyper_layer"]))
    clients = {}
    for m, (fam, cname) in enumerate(plan):
        rs = make_reward_set(REWARD_CONFIGS[fam][cname])
        cid = f"client_{m}"
        clients[cid] = MOAClient(cid, m, parts[m], run.policy, rs, local, grpo, cfg.seed, fam, cname, hyper)
    run.world = world
    run.partitions = [parts[m] for m in range(len(plan))]
    return clients


# -- evaluation -------------------------------------------------------------------------------------


def family_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list:
    """Accuracy on rows of any family: code rows (tests as gold) run in the sandbox, others exact match."""
    n = len(completions)
    if answer is None:
        return [None] * n
    is_tests = [isinstance(a, str) and a.lstrip().startswith("assert ") for a in answer]
    out: list = [None] * n
    for flag, func in ((True, REWARDS["code_accuracy"]), (False, REWARDS["accuracy"])):
        idx = [i for i in range(n) if is_tests[i] == flag]
        if idx:
            vals = func([prompts[i] for i in idx] if prompts else None, [completions[i] for i in idx],
                        answer=[answer[i] for i in idx])
            for i, v in zip(idx, vals):
                out[i] = v
    return out


def evaluate_families(policy, adapter: str, tests: dict, n_samples: int, seed: int) -> dict:
    """Score ``adapter`` on each family's test split, per reward component.

    Args:
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy`.
        adapter: the adapter to evaluate.
        tests: family → test ``datasets.Dataset``.
        n_samples: completions per problem.
        seed: sampling seed.

    Returns:
        ``{"<family>/<component>": mean, "<family>/pass@1", "<family>/length"}`` (floats); pass@1 is
        the mean of the family's accuracy component (accuracy or code_accuracy).
    """
    out = {}
    for i, (fam, ds) in enumerate(tests.items()):
        prompts, answers = list(ds["prompt"]), list(ds["answer"])
        r = policy.rollout(adapter, prompts, n_samples, seed=seed + 1009 * i)
        gold = [a for a in answers for _ in range(n_samples)]
        for name in EVAL_COMPONENTS[fam]:
            vals = REWARDS[name](r.prompts, r.completions, answer=gold)
            out[f"{fam}/{name}"] = float(np.mean([0.0 if v is None else v for v in vals]))
        out[f"{fam}/pass@1"] = out[f"{fam}/{EVAL_COMPONENTS[fam][0]}"]
        out[f"{fam}/length"] = float(r.completion_mask.sum(dim=1).float().mean())
    return out


def client_score(evaluation: dict, family: str, names) -> tuple[float, float]:
    """(accuracy, aggregated reward = mean of the client's components) of one model for one client."""
    vals = [evaluation[f"{family}/{n}"] for n in names]
    return vals[0], float(np.mean(vals))


# -- server -------------------------------------------------------------------------------------------


def _state(server) -> dict:
    """Per-client reward weights the server holds between rounds (checkpointed)."""
    return server.scratch.setdefault("fedmoa", {"weights": {}})


def initial_weights(names) -> list[float]:
    return [1.0 / len(names)] * len(names)


def aggregate_round(replies: dict, alpha_on: bool, cluster_key: str, eps: float, temperature: float):
    """Eq. 11–13 on the successful replies.

    Args:
        replies: cid → reply payload (adapter, num_examples, reward_names, weights).

    Returns:
        (θ^global, {cid: new weight dict}, {cid: α_m}, clusters as lists of cids).
    """
    cids = list(replies)
    names = [tuple(replies[c]["reward_names"]) for c in cids]
    clusters = cluster_by_reward_names(names, key=cluster_key)
    cluster_params, cluster_sizes, new_weights, alphas = [], [], {}, {}
    for members in clusters:
        ids = [cids[i] for i in members]
        sizes = np.array([replies[c]["num_examples"] for c in ids], dtype=np.float64)  # [|S_c|]
        if alpha_on:
            alpha = accuracy_aware_weights([replies[c]["weights"][0] for c in ids], eps, temperature)  # eq. 11
        else:  # α OFF: FedAvg by data size inside the cluster (with eq. 13: FedAvg by examples overall)
            alpha = sizes / sizes.sum()
        cluster_params.append(aggregate_params([replies[c]["adapter"] for c in ids], alpha))  # eq. 12
        wd = [dict(zip(replies[c]["reward_names"], replies[c]["weights"])) for c in ids]
        for c, merged in zip(ids, aggregate_shared_weights(wd, alpha)):  # eq. 12, shared components only
            new_weights[c] = merged
        alphas.update({c: float(a) for c, a in zip(ids, alpha)})
        cluster_sizes.append(float(sizes.sum()))  # N_c
    theta = across_cluster_fedavg(cluster_params, cluster_sizes)  # eq. 13
    return theta, new_weights, alphas, [[cids[i] for i in m] for m in clusters]


def run_round(server, round: int) -> dict:
    """One FedMOA round (or FedAvg-GRPO / an ablation, by the extra switches); see the module docstring."""
    cfg = server.config
    s = settings_of(cfg)
    state = _state(server)
    clients = {cid: getattr(c, "inner", c) for cid, c in server.runtime.clients.items()}
    # 1. θ^global and each client's reward weights (uniform again at a round boundary when reset_weights)
    payloads = {}
    for cid, c in clients.items():
        held = state["weights"].get(cid)
        w = initial_weights(c.names) if (s["reset_weights"] or held is None) else [held[n] for n in c.names]
        payloads[cid] = {"adapter": server.global_state, "weights": w}
    # 2–3. local multi-objective GRPO with adaptive weights; clients reply θ^(m), names, w^(m)
    replies = server.runtime.broadcast("fit", round, payloads)
    ok, failed = server.split_replies(replies)
    metrics = {cid: dict(r.payload["metrics"]) for cid, r in ok.items()}
    if not ok:
        return {"clients": metrics, "failed": failed}
    # 4. clusters by reward names; α (eq. 11); θ^(c), w^(c) (eq. 12); FedAvg across clusters (eq. 13)
    theta, new_weights, alphas, clusters = aggregate_round({cid: r.payload for cid, r in ok.items()}, s["alpha_on"],
                                                           s["cluster_key"], float(s["eps"]),
                                                           float(s["softmax_temperature"]))
    server.global_state = theta
    state["weights"].update(new_weights)
    for k, members in enumerate(clusters):
        for cid in members:
            metrics[cid].update(alpha=alphas[cid], cluster=float(k))
    # 5. evaluation: the global model per family; each local model on its own family
    if round % s["eval_every"] == 0 or round == cfg.rounds:
        tests = server.world.test_by_family
        seed = eval_seed(cfg.seed)
        server.policy.set_state("moa_eval", theta)
        ev = evaluate_families(server.policy, "moa_eval", tests, cfg.eval_samples, seed)
        accs, aggs = [], []
        for cid, c in clients.items():
            a, g = client_score(ev, c.family, c.names)
            accs.append(a)
            aggs.append(g)
        server_rec = dict(ev)
        server_rec.update({"global_accuracy": float(np.mean([ev[f"{f}/pass@1"] for f in tests])),
                           "aggregated_reward": float(np.mean(aggs)),
                           "length": float(np.mean([ev[f"{f}/length"] for f in tests]))})
        if s["eval_local"] is True or (s["eval_local"] == "last" and round == cfg.rounds):
            local_acc, local_agg = [], []
            for cid, r in ok.items():
                c = clients[cid]
                server.policy.set_state("moa_eval", r.payload["adapter"])
                lev = evaluate_families(server.policy, "moa_eval", {c.family: tests[c.family]}, cfg.eval_samples,
                                        seed)
                a, g = client_score(lev, c.family, c.names)
                metrics[cid].update({"local_accuracy": a, "local_reward": g, "local_length": lev[f"{c.family}/length"],
                                     **{f"local/{n}": lev[f"{c.family}/{n}"] for n in EVAL_COMPONENTS[c.family]}})
                local_acc.append(a)
                local_agg.append(g)
            server_rec.update(local_accuracy=float(np.mean(local_acc)), local_reward=float(np.mean(local_agg)))
        metrics["server"] = server_rec
    return {"clients": metrics, "failed": failed}


def save_state(server, folder) -> None:
    """The per-client reward weights the server holds (needed when weights are not reset per round)."""
    (folder / "fedmoa.json").write_text(json.dumps(_state(server), sort_keys=True))


def load_state(server, folder) -> None:
    path = folder / "fedmoa.json"
    if path.exists():
        server.scratch["fedmoa"] = json.loads(path.read_text())


# -- reading a run ----------------------------------------------------------------------------------


def server_records(records: list[dict]) -> list[dict]:
    """The per-round evaluations of the global model (``client == "server"`` records)."""
    return [r for r in records if r["kind"] == "client" and r.get("client") == "server"]


def client_info(run) -> list[dict]:
    """One row per client: family (and the dataset it stands for), reward config, names, data size."""
    return [dict(client=cid, family=c.family, stands_for=PAPER_NAMES[c.family], config=c.config_name,
                 rewards=", ".join(c.names), examples=c.num_examples)
            for cid, c in ((cid, getattr(c, "inner", c)) for cid, c in run.runtime.clients.items())]


def weight_history(records: list[dict]) -> list[dict]:
    """Fig. 5's data: one row per (client, round, local step) with each reward weight after that step."""
    rows = []
    for r in records:
        if r["kind"] != "client" or r["client"] == "server":
            continue
        steps = sorted({int(k[2:].split("/")[0]) for k in r if k.startswith("w@")})
        for s in steps:
            for k, v in r.items():
                if k.startswith(f"w@{s}/"):
                    rows.append(dict(client=r["client"], round=r["round"], step=s, t=r["round"] - 1 + (s + 1) / len(steps),
                                     reward=k.split("/", 1)[1], weight=v))
    return rows


def summary(records: list[dict]) -> dict:
    """Table 1/2's numbers of a run: last-round global and local accuracy and aggregated reward, per family too."""
    last = server_records(records)[-1]
    out = {"global_accuracy": last["global_accuracy"], "aggregated_reward": last["aggregated_reward"],
           "local_accuracy": last.get("local_accuracy", float("nan")),
           "local_reward": last.get("local_reward", float("nan")), "length": last["length"]}
    out.update({k: v for k, v in last.items() if k.endswith("/pass@1")})
    return out


def pareto_points(records: list[dict], x: str, y: str, family: str = "math", clients=None) -> dict:
    """Fig. 3's data for the objective pair (x, y) on one family.

    Returns:
        ``{"server": [[x, y] per evaluated round], "clients": [[x, y] per client checkpoint]}``: server
        points are the global model on the family's test split; client points are local models of that
        family's clients (ids in ``clients``; None = every client) scored on the same split (from local
        evaluations) when available, else their training-batch reward means.
    """
    server = [[r[f"{family}/{x}"], r[f"{family}/{y}"]] for r in server_records(records)
              if f"{family}/{x}" in r and f"{family}/{y}" in r]
    points = []
    for r in records:
        if r["kind"] != "client" or r["client"] == "server" or (clients is not None and r["client"] not in clients):
            continue
        if f"local/{x}" in r and f"local/{y}" in r:
            points.append([r[f"local/{x}"], r[f"local/{y}"]])
        elif f"reward/{x}" in r and f"reward/{y}" in r:
            points.append([r[f"reward/{x}"], r[f"reward/{y}"]])
    return {"server": server, "clients": points}
