"""The FedMOA client: local multi-objective GRPO with hypergradient reward weights (paper §2, §3.2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.fedmoa.args import HYPER_GRADS
from fedrl_kit.fedmoa.weights import hypergradient_step, per_objective_advantages
from fedrl_kit.grpo import grpo_loss
from fedrl_kit.rollout import per_token_logps

# -- eq. 8: per-objective gradients at one hidden layer ----------------------------------------------


def decoder_layers(model) -> torch.nn.ModuleList:
    """The decoder layers of a (peft-wrapped) Hugging Face causal LM."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    body = getattr(base, "model", base)
    layers = getattr(body, "layers", None)
    if layers is None:
        raise ValueError(f"cannot find decoder layers in {type(base).__name__} (expected .model.layers)")
    return layers


def resolve_layer(model, hyper_layer: int | None) -> int:
    """The index of the hooked layer (``None`` = the middle one); ValueError names fedmoa.hyper_layer."""
    n = len(decoder_layers(model))
    idx = n // 2 if hyper_layer is None else hyper_layer
    if not -n <= idx < n:
        raise ValueError(f"fedmoa.hyper_layer must be in [{-n}, {n - 1}] for this {n}-layer model, got {hyper_layer}")
    return idx % n


def hooked_lora_parameters(model, layer: int) -> list[torch.nn.Parameter]:
    """The active adapter's LoRA factors inside decoder layer ``layer``, in ``named_parameters`` order (θ of
    ``fedmoa.hyper_grad="lora"``)."""
    adapter = getattr(model, "active_adapter", None)
    params = [p for n, p in decoder_layers(model)[layer].named_parameters()
              if "lora_" in n and (adapter is None or f".{adapter}." in n)]
    if not params:
        raise ValueError(f"decoder layer {layer} holds no LoRA parameters of adapter {adapter!r}: "
                         f'fedmoa.hyper_grad="lora" needs the LoRA targets to include a module of fedmoa.hyper_layer')
    return params


def objective_gradients(model, rollouts, scores: np.ndarray, layer: int, settings, hyper_grad: str = "sequence"
                        ) -> np.ndarray:
    """g_k = ∂L_k/∂x for every objective k (eq. 8), x one of three things at decoder layer ``layer``.

    Args:
        model: the policy with the client's adapter active.
        rollouts: N = B·G completions.
        scores: [N, K] reward components (NaN already replaced).
        layer: decoder-layer index.
        settings: :class:`~fedrl_kit.grpo.GRPOSettings` (clip range, temperature, loss type, scaling,
            ``micro_batch_size``: rows per forward pass, as in ``grpo_step``).
        hyper_grad: "sequence", "shared" or "lora" (``fedmoa.hyper_grad``).

    Returns:
        [K, N·H] (sequence: rows in batch order, flattened), [K, H] (shared) or [K, P] (lora, P = the layer's
        LoRA parameter count) float64, one gradient per objective.
    """
    if hyper_grad not in HYPER_GRADS:
        raise ValueError(f"fedmoa.hyper_grad must be one of {HYPER_GRADS}, got {hyper_grad!r}")
    G = rollouts.num_generations
    N, K = scores.shape
    adv = per_objective_advantages(scores.reshape(-1, G, K), settings.scale_rewards)  # [B, G, K]
    adv = torch.as_tensor(adv.reshape(-1, K), dtype=torch.float32)  # [N, K]
    mask = rollouts.completion_mask  # [N, T]
    mb = min(int(getattr(settings, "micro_batch_size", N) or N), N)
    n_tok_total = mask.sum().clamp(min=1)
    rows = {"s": 0, "e": N}
    per_sequence = hyper_grad == "sequence"

    def add_delta(module, inputs, output):
        d = delta[rows["s"]:rows["e"]] if per_sequence else delta  # [b, 1, H] or [H]
        if isinstance(output, tuple):
            return (output[0] + d,) + tuple(output[1:])
        return output + d  # [b, L, H]

    if hyper_grad == "lora":
        wrt = hooked_lora_parameters(model, layer)  # θ_layer, each its own shape
        flags = [p.requires_grad for p in wrt]
        for p in wrt:  # autograd.grad needs them in the graph; .grad is never written
            p.requires_grad_(True)
        handle = None
    else:
        H = model.config.hidden_size
        param = next(p for p in model.parameters())
        delta = param.new_zeros((N, 1, H) if per_sequence else (H,)).requires_grad_(True)  # [N, 1, H] or [H]
        wrt = [delta]
        handle = decoder_layers(model)[layer].register_forward_hook(add_delta)
    grads = [[torch.zeros_like(x) for x in wrt] for _ in range(K)]
    try:
        for s in range(0, N, mb):
            e = min(N, s + mb)
            rows.update(s=s, e=e)
            part = rollouts.select(range(s, e)) if mb < N else rollouts
            logps = per_token_logps(model, part, settings.temperature)  # [b, T]
            # micro-batches add up to the full-batch loss: weight by their share of tokens/sequences (grpo_step)
            share = None if mb >= N else (mask[s:e].sum() / n_tok_total if settings.loss_type == "dapo"
                                          else torch.tensor((e - s) / N))
            for k in range(K):
                loss_k, _ = grpo_loss(logps, logps.detach(), adv[s:e, k], mask[s:e], settings.epsilon,
                                      settings.epsilon_high, 0.0, None, settings.loss_type)  # L_k at ratio 1
                if share is not None:
                    loss_k = loss_k * share
                parts = torch.autograd.grad(loss_k, wrt, retain_graph=k < K - 1, allow_unused=True)
                grads[k] = [acc if g is None else acc + g for acc, g in zip(grads[k], parts)]
    finally:
        if handle is not None:
            handle.remove()
        else:
            for p, f in zip(wrt, flags):
                p.requires_grad_(f)
    return np.stack([torch.cat([g.detach().reshape(-1) for g in gk]).double().cpu().numpy()
                     for gk in grads])  # [K, N·H], [K, H] or [K, P]


def target_lambda(g: np.ndarray, target: float) -> float:
    """λ of the scale rule ``fedmoa.lam_rule="target"``: ``target / mean_k |g_k|²`` over objectives with a gradient."""
    sq = np.einsum("kd,kd->k", g, g)  # [K] |g_k|²
    sq = sq[sq > 0]
    return float(target / sq.mean()) if sq.size else 0.0


# -- the client ---------------------------------------------------------------------------------------


@dataclass
class WeightPath:
    """A client's reward weights through one round (eq. 9–10's state; none of it outlives the round)."""

    start: np.ndarray
    """w at the round's start, as the server sent it [K]"""
    weights: np.ndarray
    """w^(t), the weights now [K]"""
    after: list = field(default_factory=list)
    """w after each local step (Fig. 5), [K] each"""
    g_prev: np.ndarray | None = None
    """g^(t−1) of eq. 9; None before the round's first step (and always with λ off)"""
    lam: float | None = None
    """λ of eq. 10; None until the round's first step sets it (:meth:`MOAClient.hyper_lambda`)"""


class MOAClient(GRPOClient):
    """A FedMOA client: its own family data, its own named reward components and their weights.

    Args (beyond :class:`~fedrl_kit.federation.client.GRPOClient`'s):
        family: the task family of its data (it tells the server in ``properties``).
        args: the run's :class:`~fedrl_kit.fedmoa.args.FedMOAArgs`.
        layer: the decoder layer whose output is h in eq. 8 (resolved ``hyper_layer``).
        initial_weights: its w^(m) before any training, aligned with its reward names (the plan's,
            :func:`fedrl_kit.fedmoa.plan.initial_weights`; it tells the server in ``properties``). None = uniform.
    """

    def __init__(self, cid, index, data, policy, reward_set, local, grpo, seed, family: str, args, layer: int,
                 initial_weights=None):
        super().__init__(cid, index, data, policy, reward_set, local, grpo, seed)
        self.family, self.args, self.layer = family, args, layer
        self.names = tuple(reward_set.names)
        k = len(self.names)
        w = np.full(k, 1.0 / k) if initial_weights is None else np.asarray(initial_weights, dtype=np.float64)
        if w.shape != (k,) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9:
            raise ValueError(f"client {cid!r}: initial_weights must be {k} weights on the simplex, got {w.tolist()}")
        self.initial_weights = [float(x) for x in w]

    def on_properties(self, round: int, payload: dict) -> dict:
        """Round 0: data size, reward names and their initial weights, and the task family (which test split
        scores this client)."""
        return {**super().on_properties(round, payload), "family": self.family,
                "initial_weights": list(self.initial_weights)}

    def hyper_lambda(self, g_first: np.ndarray) -> float:
        """λ of eq. 10 for this round: ``fedmoa.lam``, or the scale rule's from the round's first g (``lam_rule``)."""
        if self.args.normalise or self.args.lam_rule == "fixed":
            return float(self.args.lam)
        return target_lambda(g_first, float(self.args.lam_target))

    def rollout_scores(self, round: int, step: int, adapter: str | None = None):
        """Local step ``step``'s batch of round ``round``: its rollouts with ``adapter`` (default: this client's own)
        and every reward component on every completion, NaN read as 0 ([N, K])."""
        batch = self.sample_batch(round, step)
        rollouts = self.passes.rollout(self.policy, adapter or self.cid, batch["prompt"],
                                       self.local.num_generations, seed=self.rollout_seed(round, step))
        return rollouts, np.nan_to_num(self.reward_scores(rollouts, batch))

    def adapt_weights(self, rollouts, scores: np.ndarray, path: WeightPath) -> tuple[dict, np.ndarray]:
        """Eq. 8–10 on a step's rollouts, before its update: g^(t), then Δ^(t) and w^(t) (into ``path``).

        Returns:
            (diagnostics |g_k|², Δ^(t) [K]).
        """
        delta = np.zeros(len(self.names))  # [K]
        diag = {}
        if self.args.lambda_on:
            self.policy.trainable(self.cid)  # eq. 8's pass runs on this client's adapter
            g_now = objective_gradients(self.policy.model, rollouts, scores, self.layer, self.grpo,
                                        self.args.hyper_grad)  # [K, N·H], [K, H] or [K, P], eq. 8
            if path.lam is None:
                path.lam = self.hyper_lambda(g_now)
            path.weights, delta = hypergradient_step(path.weights, g_now, path.g_prev, path.lam,
                                                     self.args.normalise)  # [K] eq. 9–10
            path.g_prev = g_now
            diag.update({f"gsq/{n}": float(g_now[k] @ g_now[k]) for k, n in enumerate(self.names)})
        path.after.append(path.weights.copy())
        return diag, delta

    def local_step(self, round: int, step: int, params, path: WeightPath) -> dict:
        """One multi-objective GRPO step (eq. 1–4) with the hypergradient weight update (eq. 8–10).

        Args:
            path: the round's weights so far; this step moves them (:meth:`adapt_weights`).

        Returns:
            The step's diagnostics.
        """
        rollouts, scores = self.rollout_scores(round, step)  # [N, K]
        diag, delta = self.adapt_weights(rollouts, scores, path)  # eq. 8–10
        rewards = torch.as_tensor(scores @ path.weights, dtype=torch.float32)  # [N]  r_w = Σ_k w_k r_k (eq. 2)
        diag.update(self.passes.grpo_step(self.policy, self.cid, self._optimizer(params, round, step), rollouts,
                                          rewards, self.grpo))  # advantage of r_w (eq. 4)
        diag.update({f"reward/{n}": float(scores[:, k].mean()) for k, n in enumerate(self.names)})
        diag.update({f"delta/{n}": float(delta[k]) for k, n in enumerate(self.names)})
        diag["accuracy"] = float(scores[:, 0].mean())
        return diag

    def on_fit(self, round: int, payload: dict) -> dict:
        """Load θ^global and the weights w^(m) the server sent, run τ local steps, return θ^(m) and w^(m)."""
        self.policy.set_state(self.cid, payload["adapter"])
        params = self.policy.trainable(self.cid)
        if self.local.reset_optimizer:  # fresh Adam moments for the round's τ steps
            self.optimizer = None
        weights = np.asarray(payload["weights"], dtype=np.float64)  # [K] what this round starts from
        if weights.shape != (len(self.names),):
            raise ValueError(f"client {self.cid!r} got {weights.shape[0]} weights for {len(self.names)} rewards")
        path = WeightPath(weights.copy(), weights)
        steps = [self.local_step(round, s, params, path) for s in range(self.local.local_steps)]
        for p in params:  # gradients and (when reset each round) Adam moments are dead weight between rounds
            p.grad = None
        if self.local.reset_optimizer:
            self.optimizer = None
        metrics = {k: float(np.mean([d[k] for d in steps])) for k in steps[0]}
        for s, w in enumerate(path.after):  # Fig. 5: the weights after every local step
            metrics.update({f"w@{s}/{n}": float(w[k]) for k, n in enumerate(self.names)})
        metrics.update({f"accuracy@{s}": d["accuracy"] for s, d in enumerate(steps)})  # r_0's progress in the round
        for s, d in enumerate(steps):  # eq. 9's Δ_k = g_k^(t)·g_k^(t−1) of every step (0 at the first: no g^(t−1))
            metrics.update({f"delta@{s}/{n}": d[f"delta/{n}"] for n in self.names})
        metrics.update({f"w/{n}": float(path.weights[k]) for k, n in enumerate(self.names)})
        metrics.update({f"w_start/{n}": float(path.start[k]) for k, n in enumerate(self.names)})
        metrics["w_move"] = float(np.abs(path.weights - path.start).sum())  # L1 distance the weights moved
        if self.args.lambda_on:
            metrics["lam"] = float(path.lam)
        # "family" repeats what the properties reply said (the server reads it from there)
        return {"adapter": self.policy.get_state(self.cid), "num_examples": self.num_examples, "metrics": metrics,
                "reward_names": list(self.names), "weights": [float(x) for x in path.weights], "family": self.family}

