"""The official code's no-ground-truth scorer (``fedgrpo.no_gt_scorer = "subject"``): one reward model per subject.

As in the official trainer (``rewards.py::model_reward``), each question goes by its subject group
(:data:`SUBJECT_GROUPS`) to one GRPO-trained reward model, whichever experts were drawn; the model samples one answer
per candidate (temperature 1.0, top-p 0.95) and the candidate scores 1 if the final answers agree (exact string after
``normalise_answer``), else 0. Unlike the official code, each model trains on one client's labelled questions of its
group (:func:`reward_model_holders`), so no label leaves its client. Details: docs/fedgrpo.md, "No ground truth".
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.fedgrpo.client import _answers, train_grpo_evaluator
from fedrl_kit.policy.adapters import activate, ensure_adapter
from fedrl_kit.rollout import generate
from fedrl_kit.world.tasks import DEFAULT_TOPICS

SUBJECT_GROUPS: tuple[tuple[str, ...], ...] = (DEFAULT_TOPICS[:3], DEFAULT_TOPICS[3:5], DEFAULT_TOPICS[5:])
"""the world's 7 topics split 3/2/2 in order, as the official code groups MATH's 7 subjects"""

TEMPERATURE, TOP_P = 1.0, 0.95
"""how a reward model samples its answer (the official trainer's vLLM sampling)"""

KEY_BASE = 1000
"""group g's model draws from the evaluator streams of "client" KEY_BASE + g, apart from every θ_k's"""


def subject_group(topic: str) -> int:
    """The index of the subject group holding ``topic``; ValueError for a topic outside :data:`SUBJECT_GROUPS`."""
    for g, topics in enumerate(SUBJECT_GROUPS):
        if topic in topics:
            return g
    raise ValueError(f"fedgrpo.no_gt_scorer='subject' routes the embedded world's topics {DEFAULT_TOPICS}; "
                     f"topic {topic!r} is in no subject group")


def reward_model_holders(client_topics: list[list[str]]) -> dict[int, int]:
    """group → the client holding the most labelled questions of it (ties: the lowest index); ``client_topics``: each
    client's labelled questions' topics. Groups no client holds are left out."""
    holders = {}
    for g in range(len(SUBJECT_GROUPS)):
        counts = [sum(subject_group(t) == g for t in topics) for topics in client_topics]  # [K]
        if max(counts, default=0) > 0:
            holders[g] = int(np.argmax(counts))  # argmax takes the first maximum: the lowest index
    return holders


def agreement_scores(reward_completions: list[str], candidates: list[str]) -> np.ndarray:
    """1 where the two final answers agree after ``normalise_answer``, else 0 (also where either has none).  -> [G]"""
    pairs = zip(_answers(reward_completions), _answers(candidates))
    return np.array([float(r is not None and r == c) for r, c in pairs])


class TopPDraw:
    """A ``generate`` logits processor: top-p sampling, each question's ``(start, stop)`` rows drawn from its own
    seeded generator, so a question's draw does not depend on the rest of the batch."""

    def __init__(self, rows: list[tuple[int, int]], seeds: list[int], temperature: float, top_p: float, device):
        self.rows, self.temperature, self.top_p = rows, temperature, top_p
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)  # [N, V]
        sorted_p, order = probs.sort(dim=-1, descending=True)  # [N, V]
        outside = sorted_p.cumsum(dim=-1) - sorted_p >= self.top_p  # [N, V] past the nucleus (top-1 always kept)
        kept = torch.zeros_like(probs).scatter_(1, order, sorted_p.masked_fill(outside, 0.0))  # [N, V]
        tokens = torch.cat([torch.multinomial(kept[a:b], num_samples=1, generator=gen)
                            for (a, b), gen in zip(self.rows, self.generators)])  # [N, 1]
        return torch.full_like(scores, float("-inf")).scatter_(1, tokens, 0.0)  # [N, V] argmax = the draw


def sample_answers(policy, adapter: str, questions: list[str], G: int, seeds: list[int]) -> list[list[str]]:
    """G completions of ``adapter`` per question (temperature 1.0, top-p 0.95), question i drawn with ``seeds[i]``.
    -> n × [G]"""
    if not questions:
        return []
    activate(policy.model, adapter)
    device = next(policy.model.parameters()).device
    draw = TopPDraw([(i * G, (i + 1) * G) for i in range(len(questions))], seeds, TEMPERATURE, TOP_P, device)
    out = generate(policy.model, policy.tokenizer, list(questions), G, policy.max_new_tokens, TEMPERATURE,
                   None, policy.chat, logits_processor=draw).completions  # [n·G]
    return [out[i * G:(i + 1) * G] for i in range(len(questions))]


class SubjectRewardModels:
    """One run's 3 subject reward models (adapters ``reward_subject_g`` of ``policy``, each trained on first use on its
    holder's labelled questions of group g, with ``evaluator``'s ``grpo_*`` settings) and the scores they give.
    ``client_data``: each client's labelled (prompt, answer, topic); ``topic_of``: D_s question → topic. In a
    deployment an expert would forward the question to the holder; here the clients share one process."""

    def __init__(self, policy, client_data: list, topic_of: dict[str, str], evaluator, seed: int):
        self.policy, self.topic_of, self.evaluator, self.seed = policy, topic_of, evaluator, seed
        self.holders = reward_model_holders([list(d["topic"]) for d in client_data])
        missing = sorted({subject_group(t) for t in topic_of.values()} - set(self.holders))
        if missing:  # refused before the run starts, not when the first such question is scored
            raise ValueError(f"fedgrpo.no_gt_scorer='subject': no client holds a labelled question of subject group(s) "
                             f"{[SUBJECT_GROUPS[g] for g in missing]}, so D_s questions of them have no reward model; "
                             f"raise fedgrpo.gt_fraction")
        self.data = {g: client_data[k].select([i for i, t in enumerate(client_data[k]["topic"])
                                               if subject_group(t) == g])
                     for g, k in self.holders.items()}  # group → the holder's labelled questions of it
        self.metrics: dict[int, dict] = {}  # group → its GRPO training metrics, once trained
        self.given: dict[tuple, np.ndarray] = {}  # (question, candidates) → the scores already given

    def adapter(self, g: int) -> str:
        return f"reward_subject_{g}"

    def ensure(self, g: int) -> None:
        """Train group g's reward model once: a fresh LoRA adapter, then GRPO on its holder's questions of g."""
        if g in self.metrics:
            return
        name, key = self.adapter(g), KEY_BASE + g
        torch.manual_seed(seeding.stream_seed("fedgrpo/evaluator_init", self.seed, key))  # the adapter's A
        if name in self.policy.model.peft_config:  # left over from another run on this policy
            self.policy.model.delete_adapter(name)
        ensure_adapter(self.policy.model, name)
        data = self.data[g]
        self.metrics[g] = train_grpo_evaluator(self.policy, name, list(data["prompt"]),
                                               [str(a) for a in data["answer"]], self.evaluator, self.seed, key)

    def draw_seed(self, g: int, question: str, candidates: list[str]) -> int:
        """Stream ``fedgrpo/reward_samples`` keyed by (question, candidates): the same for every expert, on resume."""
        h = zlib.crc32("\x00".join([question, *candidates]).encode()) & 0x7FFFFFFF
        return seeding.stream_seed("fedgrpo/reward_samples", self.seed, g, h)

    def scores(self, questions: list[str], candidates: list[list[str]]) -> list[np.ndarray]:
        """Each question's candidates scored 0/1 by its group's model (one sample each); a pair scored before, by
        another expert, gets the same scores back.  -> n × [G]"""
        keys = [(q, tuple(c)) for q, c in zip(questions, candidates)]
        groups = [subject_group(self.topic_of[q]) for q in questions]
        for g in sorted({g for g, k in zip(groups, keys) if k not in self.given}):
            self.ensure(g)
            rows = list(dict.fromkeys(i for i, (gi, k) in enumerate(zip(groups, keys))
                                      if gi == g and k not in self.given))
            for G in sorted({len(candidates[i]) for i in rows}):  # one batch per candidate count
                batch = [i for i in rows if len(candidates[i]) == G]
                sampled = sample_answers(self.policy, self.adapter(g), [questions[i] for i in batch], G,
                                         [self.draw_seed(g, questions[i], candidates[i]) for i in batch])
                for i, s in zip(batch, sampled):
                    self.given[keys[i]] = agreement_scores(s, candidates[i])
        return [self.given[k].copy() for k in keys]
