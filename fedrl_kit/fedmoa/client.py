"""The FedMOA client: local multi-objective GRPO with hypergradient reward weights (paper §2, §3.2).

A client holds its family's private rows and its own named reward components r_0..r_{K_m−1}
(accuracy first). Its weights w^(m) arrive with each ``fit`` message and leave, adapted, with the
reply; between rounds it keeps nothing (see the package docstring, "History across rounds").
"""

from __future__ import annotations

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.federation.client import GRPOClient
from fedrl_kit.fedmoa.weights import hypergradient_step, per_objective_advantages
from fedrl_kit.grpo import grpo_loss, grpo_step
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


# -- the client ---------------------------------------------------------------------------------------


class MOAClient(GRPOClient):
    """A FedMOA client: its own family data, its own named reward components and their weights.

    Args (beyond :class:`~fedrl_kit.federation.client.GRPOClient`'s):
        family: the task family of its data (it tells the server in ``properties``).
        args: the run's :class:`~fedrl_kit.fedmoa.args.FedMOAArgs` (``lambda_on``, ``lam``, ``normalise``).
        layer: the decoder layer whose output is h in eq. 8 (resolved ``hyper_layer``).
    """

    def __init__(self, cid, index, data, policy, reward_set, local, grpo, seed, family: str, args, layer: int):
        super().__init__(cid, index, data, policy, reward_set, local, grpo, seed)
        self.family, self.args, self.layer = family, args, layer
        self.names = tuple(reward_set.names)

    def on_properties(self, round: int, payload: dict) -> dict:
        """Round 0: data size and reward names, and the task family (which test split scores this client)."""
        return {**super().on_properties(round, payload), "family": self.family}

    def local_step(self, round: int, step: int, params, weights: np.ndarray, g_prev):
        """One multi-objective GRPO step (eq. 1–4) with the hypergradient weight update (eq. 8–10).

        Returns:
            (diagnostics, the weights after this step [K], g^(t) [K, H] or None when λ is off).
        """
        batch = self.sample_batch(round, step)
        rollouts = self.policy.rollout(self.cid, batch["prompt"], self.local.num_generations,
                                       seed=seeding.stream_seed("client/rollout", self.seed, round, self.index, step))
        scores = np.nan_to_num(self.reward_scores(rollouts, batch))  # [N, K]
        delta = np.zeros(len(self.names))  # [K]
        g_now = None
        if self.args.lambda_on:
            g_now = objective_gradients(self.policy.model, rollouts, scores, self.layer, self.grpo)  # [K, H] eq. 8
            weights, delta = hypergradient_step(weights, g_now, g_prev, float(self.args.lam),
                                                self.args.normalise)  # [K] eq. 9–10
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
        # "family" repeats what the properties reply said (the server reads it from there)
        return {"adapter": self.policy.get_state(self.cid), "num_examples": self.num_examples, "metrics": metrics,
                "reward_names": list(self.names), "weights": [float(x) for x in weights], "family": self.family}
