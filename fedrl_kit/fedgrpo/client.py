"""FedGRPO's clients: private data ``D_k``, a domain model θ_k trained on it, and scalar answers only.
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

import weakref
import zlib

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.federation.client import MessageClient
from fedrl_kit.fedgrpo.args import EvaluatorArgs, FedGRPOArgs
from fedrl_kit.fedgrpo.expert_selection import dual_evaluation_gate
from fedrl_kit.fedgrpo.group_reward import malicious_rewards
from fedrl_kit.grpo import GRPOSettings, grpo_step
from fedrl_kit.policy.adapters import GLOBAL, ensure_adapter
from fedrl_kit.rewards import accuracy_reward, extract_answer, format_reward, normalise_answer
from fedrl_kit.sft import train_sft

_EVALUATORS: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()
"""Trained evaluator adapters by (policy, seed, client, SFT settings, data): training is deterministic,
so a run that needs an evaluator already trained on the same policy loads it instead (same values)."""


def _answers(completions: list[str]) -> list[str | None]:
    """The normalised extracted answer of each completion; None where it has none."""
    return [None if (a := extract_answer(c)) is None else normalise_answer(a) for c in completions]


EVALUATOR_REWARD_WEIGHTS = (8.0, 1.0)
"""A GRPO-trained evaluator's reward: 8 · accuracy + 1 · format, FedGRPO's own weighting (Appendix A: the
reward models are trained "consistent with those used for FedGRPO")."""


def evaluator_rewards(completions: list[str], answers: list[str]) -> np.ndarray:
    """8 · exact-answer accuracy + 1 · format of each completion against its gold answer.  -> [N]"""
    acc = np.array([v or 0.0 for v in accuracy_reward([""] * len(completions), completions, answer=answers)])
    fmt = np.array(format_reward([""] * len(completions), completions))
    return EVALUATOR_REWARD_WEIGHTS[0] * acc + EVALUATOR_REWARD_WEIGHTS[1] * fmt  # [N]


def train_grpo_evaluator(policy, adapter: str, prompts: list[str], answers: list[str], ev: EvaluatorArgs,
                         seed: int, key: int) -> dict:
    """θ_k by GRPO on its labelled private data: ``ev.grpo_steps`` steps of ``ev.grpo_prompts`` questions.

    Returns:
        ``{"grpo_reward_first": mean reward of the first step, "grpo_reward_last": of the last min(steps, 5),
        "grpo_steps": steps}`` (rewards of the sampled completions, before each update).
    """
    params = policy.trainable(adapter)
    opt = torch.optim.Adam(params, lr=ev.grpo_lr)
    settings = GRPOSettings(temperature=policy.temperature)
    means = []
    for s in range(ev.grpo_steps):
        idx = seeding.rng("fedgrpo/evaluator_batch", seed, key, s).choice(
            len(prompts), size=min(ev.grpo_prompts, len(prompts)), replace=False)
        G = ev.grpo_generations
        rollouts = policy.rollout(adapter, [prompts[i] for i in idx], G,
                                  seed=seeding.stream_seed("fedgrpo/evaluator_rollout", seed, key, s))
        rewards = evaluator_rewards(rollouts.completions, [answers[i] for i in idx for _ in range(G)])  # [b·G]
        means.append(float(rewards.mean()))
        policy.trainable(adapter)
        grpo_step(policy.model, opt, rollouts, torch.as_tensor(rewards, dtype=torch.float32), settings,
                  ref_model_ctx=policy.reference)
    for p in params:
        p.grad = None
    if not means:
        return {"grpo_reward_first": float("nan"), "grpo_reward_last": float("nan"), "grpo_steps": 0.0}
    return {"grpo_reward_first": means[0], "grpo_reward_last": float(np.mean(means[-5:])),
            "grpo_steps": float(ev.grpo_steps)}


class DomainModelClient(MessageClient):
    """A client with private data ``D_k`` and a domain model θ_k trained on it (a LoRA adapter; SFT or GRPO).

    Args:
        cid: client id; ``index``: its index (keys its random streams).
        data: its private ``datasets.Dataset`` (prompt, answer, topic, …).
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy` (θ_k is its own adapter).
        evaluator: :class:`~fedrl_kit.fedgrpo.args.EvaluatorArgs` (``config.evaluator``), how θ_k is trained.
        seed: run seed.
    """

    def __init__(self, cid: str, index: int, data, policy, evaluator: EvaluatorArgs, seed: int):
        if len(data) == 0:
            raise ValueError(f"client {cid!r} has no private data")
        self.cid, self.index, self.data, self.policy, self.seed = cid, index, data, policy, seed
        self.evaluator = evaluator
        self.adapter = f"eval_{cid}"
        if self.adapter == GLOBAL:
            raise ValueError(f"a client's evaluator adapter must not be named {GLOBAL!r}")
        self.prompts, self.answers = list(data["prompt"]), [str(a) for a in data["answer"]]
        self.sft_metrics: dict | None = None  # θ_k's training metrics once trained (read by diagnostics, not sent)

    def on_properties(self, round: int, payload: dict) -> dict:
        """What the server may know about this client (round 0): its data size."""
        return {"num_examples": self.num_examples}

    def ensure_evaluator(self) -> None:
        """Train θ_k once: a fresh LoRA adapter, then ``evaluator.sft_steps`` SFT steps on (x, y) of D_k
        (``evaluator.training="sft"``) or ``evaluator.grpo_steps`` GRPO steps on its questions,
        rewarded against their answers (``"grpo"``, :func:`train_grpo_evaluator`).
        """
        if self.sft_metrics is not None:
            return
        ev = self.evaluator
        cache = _EVALUATORS.setdefault(self.policy.model, {})
        how = ((ev.sft_steps, ev.sft_batch, ev.lr) if ev.training == "sft" else
               ("grpo", ev.grpo_steps, ev.grpo_prompts, ev.grpo_generations, ev.grpo_lr))
        key = (self.seed, self.index, *how, hash(tuple(self.prompts)), hash(tuple(self.answers)))
        if key in cache:  # the same evaluator was trained on this policy before (a notebook's sweep)
            state, self.sft_metrics = cache[key]
            self.policy.set_state(self.adapter, state)
            return
        torch.manual_seed(seeding.stream_seed("fedgrpo/evaluator_init", self.seed, self.index))  # the adapter's A
        if self.adapter in self.policy.model.peft_config:  # left over from another run on this policy
            self.policy.model.delete_adapter(self.adapter)
        ensure_adapter(self.policy.model, self.adapter)
        if ev.training == "grpo":
            self.sft_metrics = train_grpo_evaluator(self.policy, self.adapter, self.prompts, self.answers, ev,
                                                    self.seed, self.index)
        else:
            self.sft_metrics = train_sft(self.policy, self.adapter, self.prompts, self.answers, ev.sft_steps,
                                         ev.sft_batch, ev.lr, self.seed, key=self.index)
        cache[key] = (self.policy.get_state(self.adapter), self.sft_metrics)

    def answer_probabilities(self, questions: list[str], answers: list[str]) -> np.ndarray:
        """How likely θ_k is to answer ``answers[i]`` (normalised) to ``questions[i]``, in [0, 1].  -> [n]"""
        self.ensure_evaluator()
        if not questions:
            return np.zeros(0)
        if self.evaluator.training == "sft":
            return np.exp(self.passes.sequence_logprob(self.policy, self.adapter, list(questions),
                                                       list(answers)))  # [n]
        distinct, seed = self.sampling_plan(questions)
        sampled = self.passes.rollout(self.policy, self.adapter, distinct, self.evaluator.samples,
                                      seed=seed).completions
        return self.sampled_shares(questions, answers, distinct, sampled)

    def sampling_plan(self, questions: list[str]) -> tuple[list[str], int]:
        """What a GRPO evaluator samples for a call about ``questions``: ``evaluator.samples`` completions of
        each distinct question (sorted), drawn with the returned seed (stream ``fedgrpo/evaluator_samples``,
        keyed by that set of questions, so a resumed run draws the same)."""
        distinct = sorted(set(questions))
        h = zlib.crc32("\n".join(distinct).encode()) & 0x7FFFFFFF
        return distinct, seeding.stream_seed("fedgrpo/evaluator_samples", self.seed, self.index, h)

    def sampled_shares(self, questions: list[str], answers: list[str], distinct: list[str],
                       completions: list[str]) -> np.ndarray:
        """The share of the samples of ``questions[i]`` whose extracted answer is ``answers[i]``.  -> [n]"""
        S, sampled = self.evaluator.samples, _answers(completions)  # [|distinct|·S]
        row = {q: sampled[i * S:(i + 1) * S] for i, q in enumerate(distinct)}
        return np.array([sum(a is not None and a == y for a in row[q]) / S for q, y in zip(questions, answers)])

    def greedy_answers(self, questions: list[str]) -> list[str | None]:
        """The evaluator's greedy (temperature 0) answers, normalised; None where it gives none."""
        self.ensure_evaluator()
        if not questions:
            return []
        return _answers(self.passes.rollout(self.policy, self.adapter, list(questions), 1, seed=0,
                                            temperature=0.0).completions)


class FedGRPOClient(DomainModelClient):
    """A FedGRPO domain client: answers competence and score requests with scalars only.

    Args:
        cid, index, data, policy, evaluator, seed: as :class:`DomainModelClient`.
        args: :class:`~fedrl_kit.fedgrpo.args.FedGRPOArgs` (``config.fedgrpo``): ``mode`` (the gate),
            ``me_score``, ``competence``, ``malicious_kind``.
        malicious: whether this client lies about its candidate scores.
        held: extra D_s questions this client holds with their answers (``queries="public"``, with_gt):
            used for the AE check only; θ_k is trained on ``data`` only (docs/fedgrpo.md, deviation 7).
            With ``queries="train"`` the labelled D_s questions a client owns are ``data`` itself.
        reward_models: ``no_gt_scorer="subject"``: the run's
            :class:`~fedrl_kit.fedgrpo.subject_scorer.SubjectRewardModels`, which then give the ME scores.
    """

    def __init__(self, cid: str, index: int, data, policy, args: FedGRPOArgs, evaluator: EvaluatorArgs, seed: int,
                 malicious: bool = False, held=None, reward_models=None):
        super().__init__(cid, index, data, policy, evaluator, seed)
        self.args, self.malicious, self.reward_models = args, malicious, reward_models
        self.truth = dict(zip(self.prompts, self.answers))  # ỹ_k(x): the trusted answers of D_k
        self.gate_log: list[tuple[int, int, str, str]] = []  # (round, step, x_s, "AE"/"ME") per scored question
        if held is not None and len(held):
            self.truth.update(zip(list(held["prompt"]), [str(a) for a in held["answer"]]))

    def holds(self, question: str) -> bool:
        """Whether ``question`` is in D_k with a trusted answer (the gate's input; private)."""
        return question in self.truth

    def on_competence(self, round: int, payload: dict) -> dict:
        """Algorithm 1 line 8: the evaluator's correctness on each exemplar (x_{p,ℓ}, y_{p,ℓ}), in [0, 1]."""
        questions, answers = list(payload["questions"]), [normalise_answer(str(y)) for y in payload["answers"]]
        if self.args.competence == "greedy":
            greedy = self.greedy_answers(questions)
            return {"correct": [float(g is not None and g == y) for g, y in zip(greedy, answers)]}
        prob = self.answer_probabilities(questions, answers)  # [n]
        return {"correct": [float(np.clip(v, 0.0, 1.0)) for v in prob]}

    def me_scores(self, questions: list[str], candidates: list[list[str]]) -> list[np.ndarray]:
        """e_k^ME(ŷ; x_s) for the G candidates of each question (no ground truth): θ_k's, or with
        ``no_gt_scorer="subject"`` the question's subject reward model's, the same whichever expert asks.  -> n × [G]"""
        if not questions:
            return []
        if self.reward_models is not None:
            return self.reward_models.scores(list(questions), [list(c) for c in candidates])
        answers = [_answers(cands) for cands in candidates]
        if self.args.me_score == "agreement":
            own = self.greedy_answers(list(questions))
            return [np.array([float(a is not None and a == o) for a in ans]) for ans, o in zip(answers, own)]
        pairs = sorted({(q, a) for q, ans in zip(questions, answers) for a in ans if a})
        by_pair = dict(zip(pairs, self.answer_probabilities([q for q, _ in pairs], [a for _, a in pairs])))
        return [np.array([float(by_pair.get((q, a), 0.0)) if a else 0.0 for a in ans])  # [G]
                for q, ans in zip(questions, answers)]

    def on_score(self, round: int, payload: dict) -> dict:
        """Algorithm 1 lines 14–16: r_k^s = λ_k e^AE + (1 − λ_k) e^ME for each candidate; scalars only."""
        questions, candidates = payload["questions"], payload["candidates"]
        gate = [dual_evaluation_gate(self.holds(q), self.args.mode) for q in questions]  # λ_k per question
        self.gate_log.extend((round, int(payload["step"]), q, g) for q, g in zip(questions, gate))  # kept here
        me_rows = [i for i, g in enumerate(gate) if g == "ME"]
        me = dict(zip(me_rows, self.me_scores([questions[i] for i in me_rows], [candidates[i] for i in me_rows])))
        out = []
        for i, (q, cands) in enumerate(zip(questions, candidates)):
            if gate[i] == "AE":  # the exact-answer check against the trusted answer ỹ_k(x_s)
                out.append(np.array([v or 0.0 for v in accuracy_reward([q] * len(cands), cands,
                                                                        answer=[self.truth[q]] * len(cands))]))
            else:
                out.append(me[i])  # [G]
        scores = np.array(out)  # [n_questions, G]
        if self.malicious and scores.size:
            rng = seeding.rng("fedgrpo/malicious", self.seed, round, self.index, int(payload["step"]))
            scores = malicious_rewards(scores, self.args.malicious_kind, rng)
        return {"scores": [[float(v) for v in row] for row in scores]}


def assign_ground_truth(public, partitions, fraction: float, seed: int) -> list[list[int]]:
    """Which public D_s rows each client also holds with their answer (``queries="public"``, ``mode="with_gt"``).

    Returns:
        for each client, the indices into ``public`` it holds.
    """
    rng = seeding.rng("fedgrpo/ground_truth", seed)
    counts: list[dict] = [{} for _ in partitions]
    for k, part in enumerate(partitions):
        for t in part["topic"]:
            counts[k][t] = counts[k].get(t, 0) + 1
    held: list[list[int]] = [[] for _ in partitions]
    for i, t in enumerate(public["topic"]):
        take = rng.random() < fraction
        w = np.array([c.get(t, 0) for c in counts], dtype=np.float64)  # [K]
        p = w / w.sum() if w.sum() > 0 else np.full(len(partitions), 1.0 / len(partitions))
        k = int(rng.choice(len(partitions), p=p))  # drawn for every row, so `fraction` only thins the holdings
        if take:
            held[k].append(i)
    return held
