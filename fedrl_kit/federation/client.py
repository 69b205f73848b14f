"""A federated GRPO client: private data, its own LoRA adapter and optimiser, τ local steps.

Its model passes go through ``self.passes`` (:class:`Passes`): the plain calls, unless a runtime hands the client
others (lockstep batches them across clients) without changing the handler.
"""

from __future__ import annotations

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.federation.parking import as_numpy, as_torch
from fedrl_kit.federation.runtime import Message
from fedrl_kit.grpo import GRPOSettings
from fedrl_kit.grpo import grpo_step as plain_grpo_step
from fedrl_kit.rollout import Rollouts
from fedrl_kit.settings import LocalSettings
from fedrl_kit.sft import sequence_logprob as plain_sequence_logprob

# -- the model passes of every client's handlers --------------------------------------------------------------------


class Passes:
    """A client's model passes: sampling, the GRPO step and sequence scoring, as plain calls.

    Every client's handlers call them through ``self.passes``. A runtime may hand a client other passes with the
    same signatures for the length of a message: the lockstep runtime (:mod:`fedrl_kit.federation.lockstep`) gives
    each client of a group ones that batch the group's calls.
    """

    def rollout(self, policy, adapter: str, prompts: list[str], num_generations: int, seed: int,
                temperature: float | None = None) -> Rollouts:
        """G completions per prompt sampled from ``adapter``
        (:meth:`~fedrl_kit.policy.engine.Policy.rollout`: :func:`fedrl_kit.rollout.generate`, or vLLM)."""
        return policy.rollout(adapter, prompts, num_generations, seed=seed, temperature=temperature)

    def grpo_step(self, policy, adapter: str, optimizer: torch.optim.Optimizer, rollouts: Rollouts,
                  rewards: torch.Tensor, settings: GRPOSettings, extra_loss=None, on_first_grad=None) -> dict:
        """One GRPO step of ``adapter`` (active, from ``policy.trainable(adapter)``; ``optimizer`` holds its
        parameters) on its rollouts and their [N] rewards: :func:`fedrl_kit.grpo.grpo_step` with π_ref the base."""
        return plain_grpo_step(policy.model, optimizer, rollouts, rewards, settings, ref_model_ctx=policy.reference,
                               extra_loss=extra_loss, on_first_grad=on_first_grad)

    def sequence_logprob(self, policy, adapter: str, prompts: list[str], completions: list[str]) -> np.ndarray:
        """log π(completion + eos | prompt) under ``adapter`` for each pair: :func:`fedrl_kit.sft.sequence_logprob`."""
        return plain_sequence_logprob(policy, adapter, prompts, completions)


PLAIN = Passes()
"""the passes every client uses unless a runtime hands it others"""


# -- the client --------------------------------------------------------------------------------------------------


def scheduled_lr(local: LocalSettings, round: int, step: int) -> float:
    """The learning rate of local step ``step`` (0-based) in round ``round`` (1-based)."""
    if local.lr_schedule == "constant":
        return local.learning_rate
    s = (round - 1) * local.local_steps + step
    S = max(1, local.rounds * local.local_steps)
    return float(local.learning_rate * 0.5 * (1.0 + np.cos(np.pi * min(max(s, 0), S) / S)))


def make_optimizer(params, local: LocalSettings) -> torch.optim.Optimizer:
    """A client's optimiser: Adam, or AdamW with decoupled weight decay when ``local.weight_decay > 0``."""
    if local.weight_decay > 0:
        return torch.optim.AdamW(params, lr=local.learning_rate, weight_decay=local.weight_decay)
    return torch.optim.Adam(params, lr=local.learning_rate)


def step_seed(seed: int, round: int, client: int, step: int) -> int:
    """A 31-bit seed for one (round, client, step) triple."""
    return int(np.random.SeedSequence([seed, round, client, step]).generate_state(1)[0] & 0x7FFFFFFF)


def fedprox_term(params: list[torch.Tensor], anchors: list[torch.Tensor], mu: float) -> torch.Tensor:
    """(μ/2) Σ ‖θ − θ^(t)‖² over the LoRA factors (PubSwap eq. 5; A and B each count on their own)."""
    return 0.5 * mu * sum(((p - a) ** 2).sum() for p, a in zip(params, anchors))


class MessageClient:
    """What every simulated client shares: private ``data``, an id ``cid``, and message dispatch."""

    cid: str
    data: object
    passes: Passes = PLAIN  # its model passes (class docstring of Passes)

    @property
    def num_examples(self) -> int:
        return len(self.data)

    def handle(self, message: Message) -> Message:
        handler = getattr(self, f"on_{message.kind}", None)
        if handler is None:
            raise ValueError(f"client {self.cid!r} does not handle messages of kind {message.kind!r}")
        payload = handler(message.round, message.payload)
        return Message(f"{message.kind}_result", self.cid, message.sender, message.round, payload)


class GRPOClient(MessageClient):
    """One client of federated GRPO.

    Args:
        cid: client id (also its adapter's name).
        index: client index (keys its random streams).
        data: its private ``datasets.Dataset`` (prompt, answer, topic, …).
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy`.
        reward_set: a :class:`~fedrl_kit.rewards.RewardSet` (scalarised reward).
        local: :class:`LocalSettings`.
        grpo: :class:`~fedrl_kit.grpo.GRPOSettings`.
        seed: run seed.
    """

    def __init__(self, cid: str, index: int, data, policy, reward_set, local: LocalSettings, grpo: GRPOSettings,
                 seed: int):
        if len(data) == 0:
            raise ValueError(f"client {cid!r} has no private data")
        self.cid, self.index, self.data, self.policy = cid, index, data, policy
        self.reward_set, self.local, self.grpo, self.seed = reward_set, local, grpo, seed
        self._rows: dict[str, list] | None = None  # its rows as lists, read when it trains (dropped by park)
        self.optimizer: torch.optim.Optimizer | None = None
        self._moments: dict | None = None  # the optimiser's state while parked (numpy), or as a checkpoint gave it
        self.probe = None  # a fedrl_kit.drift_probe.DriftProbe when the run traces drift (simulation-side)

    def on_properties(self, round: int, payload: dict) -> dict:
        """What the server may know about this client (round 0): its data size and its reward names."""
        return {"num_examples": self.num_examples, "reward_names": list(self.reward_set.names)}

    # -- local training ----------------------------------------------------------------------
    def sample_batch(self, round: int, step: int) -> dict[str, list]:
        """b rows of private data for (round, step), without replacement within the step."""
        rng = seeding.rng("client/batch", self.seed, round, self.index, step)
        idx = rng.choice(len(self.data), size=min(self.local.prompts_per_step, len(self.data)), replace=False)
        if self._rows is None:
            self._rows = {k: list(self.data[k]) for k in self.data.column_names}
        return {k: [v[i] for i in idx] for k, v in self._rows.items()}

    def reward_scores(self, rollouts, batch: dict[str, list]) -> np.ndarray:
        """Each reward component of each rollout, against the batch's gold columns.  -> [N, n_rewards]"""
        G = rollouts.num_generations
        columns = {k: [x for x in v for _ in range(G)] for k, v in batch.items() if k != "prompt"}
        return self.reward_set.scores(rollouts.prompts, rollouts.completions, **columns)  # [N, n_rewards]

    def _optimizer(self, params, round: int | None = None, step: int | None = None) -> torch.optim.Optimizer:
        """The client's Adam(W) (:func:`make_optimizer`); created on first use in a round (reset_optimizer clears it
        at round start).
        """
        if self.optimizer is None:
            self.optimizer = self.restored(make_optimizer(params, self.local))
        if round is not None and self.local.lr_schedule != "constant":
            for group in self.optimizer.param_groups:
                group["lr"] = scheduled_lr(self.local, round, step)
        return self.optimizer

    def restored(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """``optimizer`` (new, over this client's parameters) with the moments the client kept while parked, if any."""
        if self._moments is not None:
            optimizer.load_state_dict(as_torch(self._moments))
            self._moments = None
        return optimizer

    def keep_moments(self, state: dict) -> None:
        """Hold an optimiser ``state_dict`` (a checkpoint's) as a parked client holds its own, for its next step."""
        self.optimizer, self._moments = None, state

    def optimizer_state(self) -> dict | None:
        """The optimiser's ``state_dict`` (live, or kept while parked) for a checkpoint; None when it keeps none."""
        if self.optimizer is not None:
            return self.optimizer.state_dict()
        return None if self._moments is None else as_torch(self._moments)

    def park(self) -> None:
        """Sit out a round holding nothing live: the adapter leaves the model (every round's first message sets it
        from the server's), Adam's moments, when the method keeps them across rounds, become numpy arrays here, and
        the rows' lists are dropped (the data stays an index into the world). Called between rounds for clients
        not taking part (partial participation); a later round continues from exactly this state."""
        if self.optimizer is not None:
            self._moments = as_numpy(self.optimizer.state_dict())
            self.optimizer = None
        self.policy.drop(self.cid)
        self._rows = None

    def rollout_seed(self, round: int, step: int) -> int:
        """The sampling seed of this client's G completions per prompt at (round, step)."""
        return seeding.stream_seed("client/rollout", self.seed, round, self.index, step)

    def local_step(self, round: int, step: int, params, extra_loss=None) -> dict:
        """One GRPO step on a private minibatch: sample b prompts, G completions each, reward, update."""
        batch = self.sample_batch(round, step)
        rollouts = self.passes.rollout(self.policy, self.cid, batch["prompt"], self.local.num_generations,
                                       seed=self.rollout_seed(round, step))
        scores = self.reward_scores(rollouts, batch)  # [N, n_rewards]
        rewards = torch.as_tensor(np.nan_to_num(scores) @ np.asarray(self.reward_set.weights),
                                  dtype=torch.float32)  # [N]  r_w = Σ w_k r_k
        diag = self.passes.grpo_step(self.policy, self.cid, self._optimizer(params, round, step), rollouts, rewards,
                                     self.grpo, extra_loss=extra_loss,
                                     on_first_grad=self.probe.grad_catcher(self.cid) if self.probe else None)
        if self.probe:
            self.probe.step_done(self.cid, step, "private", self.policy.get_state(self.cid), diag)
        # component 0 is accuracy by the toolkit's convention (FedMOA's r_0)
        diag["accuracy"] = float(np.nanmean(scores[:, 0])) if np.isfinite(scores[:, 0]).any() else float("nan")
        return diag

    def on_fit(self, round: int, payload: dict) -> dict:
        """Load the global adapter, run τ local GRPO steps, return the adapter (FedAvg/FedProx/FedIT)."""
        self.policy.set_state(self.cid, payload["adapter"])
        params = self.policy.trainable(self.cid)
        if self.local.reset_optimizer:  # fresh Adam moments for the round's τ steps (PubSwap §4)
            self.optimizer = None
        prox = None
        if self.local.prox_mu > 0:  # FedProx: (μ/2)‖θ − θ^(t)‖² to the adapter received
            anchors = [p.detach().clone() for p in params]
            prox = lambda: fedprox_term(params, anchors, self.local.prox_mu)  # noqa: E731
        steps = [self.local_step(round, s, params, prox) for s in range(self.local.local_steps)]
        for p in params:  # gradients and (when reset each round) Adam moments are dead weight between rounds
            p.grad = None
        if self.local.reset_optimizer:
            self.optimizer = None
        metrics = {k: float(np.mean([d[k] for d in steps])) for k in steps[0]}
        return {"adapter": self.policy.get_state(self.cid), "num_examples": self.num_examples, "metrics": metrics}
