"""FedGRPO: the server trains its policy from scalar rewards that expert clients return.

Paper: FedGRPO (``papers/fedgrpo.md``), §3.2 and Algorithm 1; eqs. 5–9; Remark 1 (format reward);
§4.2/§4.3 (with and without ground-truth answers); Appendix A (coefficients 8 and 1).

Setting in the embedded world
-----------------------------
- The **server** holds the policy π_θg (the global LoRA adapter, ``server.global_state``), the
  labelled auxiliary set ``D_p`` (``world.aux``, ``n_aux`` = 100 by default) and the unlabelled
  queries ``D_s`` (``world.public``: the server reads only their prompts for training; their
  answers are used for *diagnostics* only, never for a reward).
- **K clients** hold private data ``D_k`` (``run.partitions``: Dirichlet over topics, ``config.partition``
  / ``dirichlet_alpha``; the notebook uses β = 0.1, K = 8) and a domain model θ_k trained
  locally on ``D_k``: a LoRA adapter ``eval_<cid>`` of the tiny policy fine-tuned by a short,
  deterministic SFT (:func:`fedrl_kit.sft.train_sft`, ``evaluator_sft_steps`` steps). θ_k is the
  client's evaluator ``e_k`` and its reward model ``f_θk*``.
- In ``mode="with_gt"`` (§4.2: "some clients have access to the ground-truth label") each
  question of ``D_s`` is, with probability ``gt_fraction``, also held *with its answer* by one
  client, drawn with probability proportional to how many examples of the question's topic that
  client holds; it joins that client's ``D_k`` (for the AE check; see point 7). In
  ``mode="no_gt"`` (§4.3) no client holds any
  ``D_s`` answer and every expert uses ME.

One round = ``local_steps`` (τ) server steps; Algorithm 1 → code (in :func:`run_round`):

- line 1, ℓ2-normalised ``z_{p,j} = φ(x_{p,j})`` → :func:`encode` once per run (and ``z_s`` of all
  of ``D_s`` with it: line 4 hoisted out of the loop, same values). φ = the *frozen base*'s hidden
  states after decoder layer ``encoder_layer`` (default 1), mean-pooled over the prompt, adapters
  disabled (layer 1 separated the seven topics best in the tiny model when we compared layers
  on seed 0's world: the L = 5 nearest auxiliary exemplars share the query's topic 94 % of the
  time, 71 % with the last layer), or ``encoder="minilm"`` (sentence-transformers
  ``all-MiniLM-L6-v2`` if importable; otherwise a clear error, nothing is installed).
- line 3, Q = b·K questions ``x_s ~ D_s`` and G candidates ``ŷ ~ π_θg(·|x_s)`` each (eq. 2).
- lines 4–5, eq. 5, the L nearest auxiliary exemplars → :func:`~fedrl_kit.expert_selection.nearest_exemplars`.
- lines 6–10, competence ``r_k^p`` (eq. after 5): exemplars ``(x_p, y_p)`` (texts) go down in a
  ``competence`` message, each client returns one number in [0, 1] per exemplar: the probability
  that its evaluator's sampled answer is exactly ``y_p`` (``competence="probability"``, the
  expectation of line 8's indicator under sampling), or the 0/1 indicator for its greedy answer
  (``"greedy"``) → :meth:`FedGRPOClient.on_competence`; the server keeps them in a
  :class:`~fedrl_kit.expert_selection.CompetenceCache` (the text's "running accuracy estimate")
  and asks only about cells it has never measured, so after the first step almost no
  competence traffic remains.
- line 11, eq. 6, ``C(x_s) = Top-M_k r_k^p`` → :func:`~fedrl_kit.expert_selection.select_experts`
  (ties to the lower client index).
- line 12, ``⟨x_s, ŷ⟩`` (question and its G candidate texts) to each expert → ``score`` message.
- lines 13–16, the gate λ_k (:func:`~fedrl_kit.expert_selection.dual_evaluation_gate`) and the
  private score ``r_k^s`` per candidate → :meth:`FedGRPOClient.on_score`:
  AE = ``1[extracted answer of ŷ = ỹ_k(x_s)]``; ME (``me_score``):
  ``"probability"`` (default) = ``π_θk(a(ŷ) + eos | x_s)``, the probability that the client's
  own model writes the candidate's extracted answer ``a(ŷ)`` (0 if ŷ has none);
  ``"agreement"`` = ``1[a(ŷ) = the client model's greedy answer]``. Why "probability" by
  default: it is a real-valued score as §3.2 asks, it needs no ground truth, it is calibrated
  the way the model's own beliefs are (a client whose model knows the topic puts most mass on
  the right answer), it gives graded credit among wrong answers, and it ranks candidates even
  when the model's single greedy answer is wrong. "agreement" is the cheaper 0/1 majority-style
  alternative (one greedy decode per question instead of one scoring pass per distinct answer).
- lines 18–20, eqs. 8–9 and the advantage actually used → :func:`~fedrl_kit.group_reward.candidate_advantages`
  (``group_reward`` = ``"paper"``, ``"official"`` or ``"per_expert"``; see that module: eq. 9 taken
  literally gives zero gradient), with the format reward of Remark 1 computed by the server on
  the candidate texts, coefficients ``group_coef`` = 8 and ``format_coef`` = 1 (Appendix A).
- line 21, the policy-gradient step → :func:`fedrl_kit.grpo.grpo_step` with those advantages (the
  clipped surrogate with ``num_iterations`` epochs: GRPO's form of ``θ ← θ + η R ∇ log π``).

Only questions, exemplars and candidate texts go down; only lists of floats come up (tests check
the ledger). Malicious clients (``malicious`` of them, the last indices) replace their candidate
scores by :func:`~fedrl_kit.group_reward.malicious_rewards` (``malicious_kind`` flip or random);
``robust`` = ``"median"`` / ``"trimmed_mean"`` aggregates the experts robustly (``"paper"`` variant).

Settings (``config.extra``; defaults in :data:`DEFAULTS`, validated by :func:`validate`):

===================== ============= ================================================================
key                   default       meaning
===================== ============= ================================================================
num_experts           2             M, experts per question (1 ≤ M ≤ K)
neighbours            20            L, auxiliary exemplars per question (1 ≤ L ≤ n_aux)
group_reward          "paper"       advantage variant: paper / official / per_expert
group_coef            8.0           weight of the experts' reward (Appendix A)
format_coef           1.0           weight of the format reward (Remark 1, Appendix A)
scale_rewards         True          divide by the std (eq. 9) or only centre (official scripts)
mode                  "with_gt"     "with_gt" (§4.2) or "no_gt" (§4.3, ME only)
gt_fraction           0.5           with_gt: share of D_s questions some client holds with answer
me_score              "probability" ME score: "probability" or "agreement"
malicious             0             number of malicious clients (the last indices)
malicious_kind        "flip"        what they send: "flip" (1 − r) or "random"
robust                "mean"        expert aggregation A(·): mean / median / trimmed_mean
trim                  0.2           trimmed_mean: fraction cut at each end
competence            "probability" r_k^p cells: "probability" of y_p under θ_k, or "greedy" 0/1
evaluator_sft_steps   60            SFT steps of each client's evaluator θ_k on D_k
evaluator_sft_batch   32            pairs per evaluator SFT step
evaluator_lr          0.005         Adam learning rate of the evaluator SFT
encoder               "policy"      φ: "policy" (frozen base, mean-pooled) or "minilm"
encoder_layer         1             which hidden states φ pools ("policy"; -1 = last layer)
===================== ============= ================================================================

Budget (matched to the other methods): per round the server takes τ = ``local_steps`` GRPO steps
of Q = b·K questions × G candidates — the rollouts and optimiser steps of Central-GRPO's round
and the rollouts of a FedAvg-GRPO round (K clients × τ steps × b prompts × G). The experts'
scoring and the evaluators' SFT are extra client compute that the baselines do not have.

Deviations from the paper and choices where it is silent:

1. **Batching.** Algorithm 1 takes one question per iteration; we take Q = b·K per step (GRPO's
   batch), which changes nothing per question.
2. **Cached competence** (the text's running estimate, not line 6's per-question broadcast):
   see :mod:`fedrl_kit.expert_selection`, point 1. Each cell is deterministic (a probability or a
   greedy flag), so one measurement is the running mean. **Soft competence** (default): line 8
   averages 0/1 indicators; we average their expectation under the evaluator's sampling, which
   has no sampling noise. When we compared them while developing (seed 0, K = 8, β = 0.1), the
   per-topic soft competence correlated 0.53 with the clients' topic shares, the greedy
   indicator 0.32; the notebook's hit-rate table measures the selection it produces.
3. **Eq. 9** as the advantage is degenerate (zero gradient); the default ``"paper"`` variant
   takes eq. 8's expert mean per candidate and GRPO-normalises across the G candidates
   (:mod:`fedrl_kit.group_reward`, points 1–2); ``"official"`` is the official code's pooled one.
4. **The gate's membership.** A client knows whether it holds ``x_s``; the server must not. We
   send no λ_k up; the AE share in the metrics is computed by the *simulator* from the data
   assignment (a diagnostic, never part of a message).
5. **Malicious clients** report honest competence and lie only in ``r_k^s`` (the attack the
   robust aggregators address); the paper has no malicious clients (§3.1 threat model).
6. **Failures.** A client that raises is dropped for the rest of the round: it is not selected,
   its scores are missing, and a question whose experts all failed gets zero advantage.
7. **The evaluator θ_k** is trained by SFT on the client's share of the private pool only, with the
   bare answer + eos as target (the ME probability scores exactly that string); the ``D_s``
   answers a client holds in ``with_gt`` mode serve the AE check only. So θ_k is the same model in
   both modes and the with/without-ground-truth comparison isolates the gate. The paper's clients
   train Qwen2.5-Math-1.5B reward models by GRPO (Appendix A).
8. **Hit rate** (diagnostic): a chosen expert "holds the topic" if its ``D_k`` has ≥ 1 example of
   the question's topic (``expert_hit_rate``), or, stricter, if that topic is ≥ 10 % of ``D_k``
   (``expert_hit_rate_major``); ``random_hit_rate[_major]`` is the exact expectation under the
   official code's uniform choice of M distinct clients.

Metrics (``metrics.jsonl`` client records): per client ``competence`` (mean r_k^p over the
round's questions), ``selected`` (questions it scored), ``score_mean``, ``ae_share``,
``malicious``; pseudo-client ``"server"``: ``expert_hit_rate``, ``random_hit_rate`` (and their
``_major`` versions), ``ae_share``,
``reward_mean`` (experts' mean score), ``candidate_accuracy`` (true accuracy of the candidates,
diagnostic), ``reward_gap`` (mean consensus score of correct minus incorrect candidates: how
informative the experts are), ``disagreement`` (mean |R_k| of eq. 9 taken literally), GRPO
diagnostics (``loss``, ``clip_fraction``, ``frac_zero_adv``) and ``competence_queries``.
"""

from __future__ import annotations

import io
import weakref
from dataclasses import dataclass

import numpy as np
import torch

from fedrl_kit.expert_selection import (
    CompetenceCache,
    dual_evaluation_gate,
    expert_hit_rate,
    nearest_exemplars,
    select_experts,
)
from fedrl_kit.federation.client import step_seed
from fedrl_kit.group_reward import (
    ADVANTAGE_VARIANTS,
    AGGREGATIONS,
    MALICIOUS_KINDS,
    candidate_advantages,
    group_relative_rewards,
    malicious_rewards,
    robust_aggregate,
)
from fedrl_kit.grpo import GRPOSettings, grpo_step
from fedrl_kit.policy.adapters import GLOBAL, ensure_adapter
from fedrl_kit.rewards import accuracy_reward, extract_answer, format_reward, normalise_answer
from fedrl_kit.rollout import render_prompts
from fedrl_kit.sft import sequence_logprob, train_sft

MODES = ("with_gt", "no_gt")
ME_SCORES = ("probability", "agreement")
COMPETENCE_SCORES = ("probability", "greedy")
ENCODERS = ("policy", "minilm")
SERVER_KEY = 50_000  # offsets the server's random streams from the clients' (keyed by client index)
GT_KEY = 40_000  # keys the assignment of D_s answers to clients
MALICIOUS_KEY = 60_000
MAJOR_SHARE = 0.1  # a topic a client is "expert in" for the stricter hit rate: >= 10 % of its data

DEFAULTS = dict(
    num_experts=2, neighbours=20, group_reward="paper", group_coef=8.0, format_coef=1.0, scale_rewards=True,
    mode="with_gt", gt_fraction=0.5, me_score="probability", malicious=0, malicious_kind="flip", robust="mean",
    trim=0.2, competence="probability", evaluator_sft_steps=60, evaluator_sft_batch=32, evaluator_lr=5e-3,
    encoder="policy", encoder_layer=1,
)
"""Defaults of FedGRPO's ``config.extra`` settings (see the module docstring's table)."""


@dataclass(frozen=True)
class FedGRPOSettings:
    """The validated ``config.extra`` of a FedGRPO run (field meanings in the module docstring)."""

    num_experts: int
    neighbours: int
    group_reward: str
    group_coef: float
    format_coef: float
    scale_rewards: bool
    mode: str
    gt_fraction: float
    me_score: str
    malicious: int
    malicious_kind: str
    robust: str
    trim: float
    competence: str
    evaluator_sft_steps: int
    evaluator_sft_batch: int
    evaluator_lr: float
    encoder: str
    encoder_layer: int


def check_evaluator_settings(s: dict) -> None:
    """The clients' evaluator SFT settings, shared by FedGRPO and the DPSDA-FL baselines."""
    _need(_is_int(s["evaluator_sft_steps"]) and 0 <= s["evaluator_sft_steps"] <= 100_000, "evaluator_sft_steps",
          "an integer in [0, 100000]", s["evaluator_sft_steps"])
    _need(_is_int(s["evaluator_sft_batch"]) and 1 <= s["evaluator_sft_batch"] <= 4096, "evaluator_sft_batch",
          "an integer in [1, 4096]", s["evaluator_sft_batch"])
    _need(_is_num(s["evaluator_lr"]) and 0 < s["evaluator_lr"] <= 1, "evaluator_lr", "a number in (0, 1]",
          s["evaluator_lr"])


def _need(ok: bool, key: str, allowed: str, value) -> None:
    if not ok:
        raise ValueError(f"extra[{key!r}] must be {allowed}, got {value!r}")


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_num(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)) \
        and np.isfinite(v)


def settings(config, allowed_extra: tuple[str, ...] = ()) -> FedGRPOSettings:
    """``config.extra`` merged over :data:`DEFAULTS`, validated; ValueError names the bad key.

    Args:
        config: the run's :class:`~fedrl_kit.config.RunConfig`.
        allowed_extra: further keys a caller (the baselines module) accepts without checking here.
    """
    extra = dict(config.extra)
    unknown = sorted(set(extra) - set(DEFAULTS) - set(allowed_extra))
    if unknown:
        raise ValueError(f"extra has unknown key(s) {unknown}; known for {config.method}: "
                         f"{sorted(set(DEFAULTS) | set(allowed_extra))}")
    s = {k: extra.get(k, v) for k, v in DEFAULTS.items()}
    K, n_aux = config.num_clients, config.n_aux
    _need(_is_int(s["num_experts"]) and 1 <= s["num_experts"] <= K, "num_experts",
          f"an integer in [1, num_clients = {K}]", s["num_experts"])
    _need(_is_int(s["neighbours"]) and 1 <= s["neighbours"] <= max(n_aux, 1), "neighbours",
          f"an integer in [1, n_aux = {n_aux}]", s["neighbours"])
    _need(s["group_reward"] in ADVANTAGE_VARIANTS, "group_reward", f"one of {ADVANTAGE_VARIANTS}",
          s["group_reward"])
    for key in ("group_coef", "format_coef"):
        _need(_is_num(s[key]) and s[key] >= 0, key, "a finite number >= 0", s[key])
    _need(isinstance(s["scale_rewards"], bool), "scale_rewards", "true or false", s["scale_rewards"])
    _need(s["mode"] in MODES, "mode", f"one of {MODES}", s["mode"])
    _need(_is_num(s["gt_fraction"]) and 0 <= s["gt_fraction"] <= 1, "gt_fraction", "a number in [0, 1]",
          s["gt_fraction"])
    _need(s["me_score"] in ME_SCORES, "me_score", f"one of {ME_SCORES}", s["me_score"])
    _need(_is_int(s["malicious"]) and 0 <= s["malicious"] <= K, "malicious",
          f"an integer in [0, num_clients = {K}]", s["malicious"])
    _need(s["malicious_kind"] in MALICIOUS_KINDS, "malicious_kind", f"one of {MALICIOUS_KINDS}", s["malicious_kind"])
    _need(s["robust"] in AGGREGATIONS, "robust", f"one of {AGGREGATIONS}", s["robust"])
    _need(s["robust"] == "mean" or s["group_reward"] == "paper", "robust",
          f"'mean' unless group_reward is 'paper' (group_reward={s['group_reward']!r} averages by construction)",
          s["robust"])
    _need(_is_num(s["trim"]) and 0 <= s["trim"] < 0.5, "trim", "a number in [0, 0.5)", s["trim"])
    _need(s["competence"] in COMPETENCE_SCORES, "competence", f"one of {COMPETENCE_SCORES}", s["competence"])
    check_evaluator_settings(s)
    _need(s["encoder"] in ENCODERS, "encoder", f"one of {ENCODERS}", s["encoder"])
    _need(_is_int(s["encoder_layer"]) and -1 <= s["encoder_layer"] <= 1000, "encoder_layer",
          "an integer >= -1 (0 = token embeddings, i = output of decoder layer i, -1 = last)", s["encoder_layer"])
    s["group_coef"], s["format_coef"] = float(s["group_coef"]), float(s["format_coef"])
    s["gt_fraction"], s["trim"], s["evaluator_lr"] = float(s["gt_fraction"]), float(s["trim"]), float(s["evaluator_lr"])
    return FedGRPOSettings(**s)


def validate(config) -> None:
    """Hook of :meth:`RunConfig.validate`: FedGRPO's ``config.extra`` and the splits it needs."""
    if config.n_aux < 1:
        raise ValueError(f"n_aux must be >= 1 for {config.method} (the server's auxiliary set D_p), "
                         f"got {config.n_aux}")
    if config.n_public < 1:
        raise ValueError(f"n_public must be >= 1 for {config.method} (the server's queries D_s), "
                         f"got {config.n_public}")
    settings(config)


# -- the frozen encoder φ -------------------------------------------------------------------------------
@torch.no_grad()
def encode(policy, texts: list[str], encoder: str = "policy", layer: int = 1, batch_size: int = 256) -> np.ndarray:
    """φ(x): ℓ2-normalised embeddings of ``texts`` (Algorithm 1 lines 1 and 4).  -> [N, d] float64

    ``"policy"``: mean over the prompt's tokens of the frozen base's hidden states after decoder
    layer ``layer`` (0 = token embeddings, -1 = last layer), every adapter disabled, so φ does not
    drift while the policy trains. ``"minilm"``:
    sentence-transformers ``all-MiniLM-L6-v2``, if that package is installed (it is not a
    dependency; nothing is downloaded or installed here).
    """
    if encoder not in ENCODERS:
        raise ValueError(f"encoder must be one of {ENCODERS}, got {encoder!r}")
    if encoder == "minilm":
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError("encoder='minilm' needs the sentence-transformers package (and the "
                              "all-MiniLM-L6-v2 weights available locally); install it or use encoder='policy'") from e
        model = SentenceTransformer("all-MiniLM-L6-v2")
        emb = np.asarray(model.encode(list(texts), batch_size=batch_size), dtype=np.float64)  # [N, d]
    else:
        tok, model = policy.tokenizer, policy.model
        side = tok.padding_side
        tok.padding_side = "right"  # position ids then start at 0 for every row
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        out = []
        try:
            with policy.reference():
                for s in range(0, len(texts), batch_size):
                    enc = tok(render_prompts(tok, list(texts[s:s + batch_size]), policy.chat), return_tensors="pt",
                              padding=True, add_special_tokens=False)
                    ids, mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)  # [b, P]
                    hs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
                    if not -len(hs) <= layer < len(hs):
                        raise ValueError(f"encoder_layer must be in [-1, {len(hs) - 1}] for this model, got {layer}")
                    h = hs[layer]  # [b, P, d]
                    m = mask.unsqueeze(-1).to(h.dtype)  # [b, P, 1]
                    out.append(((h * m).sum(1) / m.sum(1).clamp(min=1)).float().cpu().numpy())  # [b, d]
        finally:
            tok.padding_side = side
            model.train(was_training)
        emb = np.concatenate(out).astype(np.float64)  # [N, d]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.where(norms > 0, norms, 1.0)  # [N, d]


# -- the client -------------------------------------------------------------------------------------------
_EVALUATORS: "weakref.WeakKeyDictionary[torch.nn.Module, dict]" = weakref.WeakKeyDictionary()
"""Trained evaluator adapters by (policy, seed, client, SFT settings, data): training is deterministic,
so a run that needs an evaluator already trained on the same policy loads it instead (same values)."""


class FedGRPOClient:
    """A domain client: private data D_k, an evaluator θ_k trained on it, scalar answers only.

    Args:
        cid: client id; ``index``: its index (keys its random streams).
        data: its private ``datasets.Dataset`` (prompt, answer, topic, …).
        policy: the shared :class:`~fedrl_kit.policy.engine.Policy` (the evaluator is its own adapter).
        st: :class:`FedGRPOSettings`.
        seed: run seed.
        malicious: whether this client lies about its candidate scores.
        held: D_s questions this client also holds with their answers (``mode="with_gt"``): part of
            D_k for the AE check; θ_k is trained on ``data`` only (module docstring, point 7).
    """

    def __init__(self, cid: str, index: int, data, policy, st: FedGRPOSettings, seed: int, malicious: bool = False,
                 held=None):
        if len(data) == 0:
            raise ValueError(f"client {cid!r} has no private data")
        self.cid, self.index, self.data, self.policy, self.st, self.seed = cid, index, data, policy, st, seed
        self.malicious = malicious
        self.adapter = f"eval_{cid}"
        if self.adapter == GLOBAL:
            raise ValueError(f"a client's evaluator adapter must not be named {GLOBAL!r}")
        self.prompts, self.answers = list(data["prompt"]), [str(a) for a in data["answer"]]
        self.truth = dict(zip(self.prompts, self.answers))  # ỹ_k(x): the trusted answers of D_k
        if held is not None and len(held):
            self.truth.update(zip(list(held["prompt"]), [str(a) for a in held["answer"]]))
        self.topics = set(data["topic"])
        topics = list(data["topic"])
        self.major_topics = {t for t in self.topics if topics.count(t) >= MAJOR_SHARE * len(topics)}
        self.sft_metrics: dict | None = None

    @property
    def num_examples(self) -> int:
        return len(self.data)

    def handle(self, message):
        from fedrl_kit.federation.runtime import Message

        handler = getattr(self, f"on_{message.kind}", None)
        if handler is None:
            raise ValueError(f"client {self.cid!r} does not handle messages of kind {message.kind!r}")
        return Message(f"{message.kind}_result", self.cid, message.sender, message.round,
                       handler(message.round, message.payload))

    def holds(self, question: str) -> bool:
        """Whether ``question`` is in D_k with a trusted answer (the gate's input; private)."""
        return question in self.truth

    def ensure_evaluator(self) -> None:
        """Train θ_k once: a fresh LoRA adapter, ``evaluator_sft_steps`` SFT steps on (x, y) of D_k.

        Deterministic (the adapter's init and every minibatch are seeded by (seed, client)), so a
        resumed run retrains the identical evaluator.
        """
        if self.sft_metrics is not None:
            return
        cache = _EVALUATORS.setdefault(self.policy.model, {})
        key = (self.seed, self.index, self.st.evaluator_sft_steps, self.st.evaluator_sft_batch,
               self.st.evaluator_lr, hash(tuple(self.prompts)), hash(tuple(self.answers)))
        if key in cache:  # the same evaluator was trained on this policy before (a notebook's sweep)
            state, self.sft_metrics = cache[key]
            self.policy.set_state(self.adapter, state)
            return
        torch.manual_seed(step_seed(self.seed, 0, self.index, 77))  # the new adapter's A init
        if self.adapter in self.policy.model.peft_config:  # left over from another run on this policy
            self.policy.model.delete_adapter(self.adapter)
        ensure_adapter(self.policy.model, self.adapter)
        self.sft_metrics = train_sft(self.policy, self.adapter, self.prompts, self.answers,
                                     self.st.evaluator_sft_steps, self.st.evaluator_sft_batch, self.st.evaluator_lr,
                                     self.seed, key=self.index)
        cache[key] = (self.policy.get_state(self.adapter), self.sft_metrics)

    def greedy_answers(self, questions: list[str]) -> list[str | None]:
        """The evaluator's greedy (temperature 0) answers, normalised; None where it gives none."""
        self.ensure_evaluator()
        r = self.policy.rollout(self.adapter, list(questions), 1, seed=0, temperature=0.0)
        return [None if (a := extract_answer(c)) is None else normalise_answer(a) for c in r.completions]

    def on_competence(self, round: int, payload: dict) -> dict:
        """Algorithm 1 line 8: the evaluator's correctness on each exemplar (x_{p,ℓ}, y_{p,ℓ}), in [0, 1].

        ``competence="probability"`` (default): π_θk(y_{p,ℓ} + eos | x_{p,ℓ}), the probability that a
        sampled answer of the evaluator is exactly y_{p,ℓ} — the expectation of line 8's indicator
        under the evaluator's own sampling. ``"greedy"``: the indicator itself for the greedy answer.
        """
        questions, answers = payload["questions"], [normalise_answer(str(y)) for y in payload["answers"]]
        if self.st.competence == "greedy":
            greedy = self.greedy_answers(questions)
            return {"correct": [float(g is not None and g == y) for g, y in zip(greedy, answers)]}
        self.ensure_evaluator()
        logp = sequence_logprob(self.policy, self.adapter, list(questions), answers)  # [n]
        return {"correct": [float(np.clip(np.exp(v), 0.0, 1.0)) for v in logp]}

    def me_scores(self, questions: list[str], candidates: list[list[str]]) -> list[np.ndarray]:
        """e_k^ME(ŷ; x_s) for the G candidates of each question (no ground truth).  -> n × [G]"""
        answers = [[None if (a := extract_answer(c)) is None else normalise_answer(a) for c in cands]
                   for cands in candidates]
        if not questions:
            return []
        if self.st.me_score == "agreement":
            own = self.greedy_answers(questions)
            return [np.array([float(a is not None and a == o) for a in ans]) for ans, o in zip(answers, own)]
        self.ensure_evaluator()
        pairs = sorted({(q, a) for q, ans in zip(questions, answers) for a in ans if a})
        prob = {}
        if pairs:  # one scoring pass over every distinct (question, answer) pair
            logp = sequence_logprob(self.policy, self.adapter, [q for q, _ in pairs], [a for _, a in pairs])
            prob = dict(zip(pairs, np.exp(logp)))
        return [np.array([float(prob.get((q, a), 0.0)) if a else 0.0 for a in ans])  # [G]
                for q, ans in zip(questions, answers)]

    def on_score(self, round: int, payload: dict) -> dict:
        """Algorithm 1 lines 14–16: r_k^s = λ_k e^AE + (1 − λ_k) e^ME for each candidate; scalars only."""
        questions, candidates = payload["questions"], payload["candidates"]
        gate = [dual_evaluation_gate(self.holds(q), self.st.mode) for q in questions]  # λ_k per question
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
            rng = np.random.default_rng(step_seed(self.seed, round, MALICIOUS_KEY + self.index, int(payload["step"])))
            scores = malicious_rewards(scores, self.st.malicious_kind, rng)
        return {"scores": [[float(v) for v in row] for row in scores]}


def assign_ground_truth(public, partitions, fraction: float, seed: int) -> list[list[int]]:
    """Which D_s rows each client also holds with their answer (``mode="with_gt"``).

    Each row is held, with probability ``fraction``, by one client drawn with probability
    proportional to that client's count of the row's topic (uniform if no client has the topic).

    Returns:
        for each client, the indices into ``public`` it holds.
    """
    rng = np.random.default_rng(step_seed(seed, 0, GT_KEY, 0))
    counts: list[dict] = [{} for _ in partitions]
    for k, part in enumerate(partitions):
        for t in part["topic"]:
            counts[k][t] = counts[k].get(t, 0) + 1
    held: list[list[int]] = [[] for _ in partitions]
    for i, t in enumerate(public["topic"]):
        take = rng.random() < fraction
        w = np.array([c.get(t, 0) for c in counts], dtype=np.float64)  # [K]
        p = w / w.sum() if w.sum() > 0 else np.full(len(partitions), 1.0 / len(partitions))
        k = int(rng.choice(len(partitions), p=p))
        if take:
            held[k].append(i)
    return held


def build_clients(run, local, grpo) -> dict:
    """K FedGRPO clients: private partitions (+ their share of D_s answers in with_gt mode)."""
    cfg = run.config
    st = settings(cfg)
    parts = list(run.partitions)
    held = [None] * len(parts)
    if st.mode == "with_gt" and st.gt_fraction > 0:
        for k, idx in enumerate(assign_ground_truth(run.world.public, parts, st.gt_fraction, cfg.seed)):
            held[k] = run.world.public.select(idx) if idx else None
    K = len(parts)
    return {f"client_{i}": FedGRPOClient(f"client_{i}", i, part, run.policy, st, cfg.seed,
                                         malicious=i >= K - st.malicious, held=held[i])
            for i, part in enumerate(parts)}


# -- server-side state (checkpointed by save_state / load_state) -----------------------------------------------
class ServerState:
    """What the FedGRPO server keeps between rounds: the confidence graph, its optimiser, embeddings."""

    def __init__(self, n_clients: int, n_aux: int):
        self.cache = CompetenceCache(n_clients, n_aux)
        self.optimizer_state: dict | None = None
        self.aux_emb: np.ndarray | None = None  # [N_p, d]
        self.query_emb: np.ndarray | None = None  # [N_s, d]


def _state(server) -> ServerState:
    if "fedgrpo" not in server.scratch:
        server.scratch["fedgrpo"] = ServerState(len(server.runtime.clients), len(server.world.aux))
    return server.scratch["fedgrpo"]


def save_state(server, folder) -> None:
    """Checkpoint the competence cache and the server's optimiser (resume is exact)."""
    st = _state(server)
    np.savez(folder / "fedgrpo_cache.npz", sum=st.cache._sum, count=st.cache._count)
    if st.optimizer_state is not None:
        torch.save(st.optimizer_state, folder / "fedgrpo_optimizer.pt")


def load_state(server, folder) -> None:
    st = _state(server)
    with np.load(folder / "fedgrpo_cache.npz") as z:
        st.cache._sum, st.cache._count = z["sum"].copy(), z["count"].copy()
    path = folder / "fedgrpo_optimizer.pt"
    st.optimizer_state = torch.load(path) if path.exists() else None


def _copy_optimizer_state(sd: dict) -> dict:
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf)


def grpo_settings(cfg) -> GRPOSettings:
    return GRPOSettings(cfg.num_iterations, cfg.epsilon, cfg.epsilon_high, cfg.beta, cfg.scale_rewards,
                        cfg.loss_type, cfg.temperature)


def _inner(client):
    return getattr(client, "inner", client)


# -- one round ---------------------------------------------------------------------------------------------------
def run_round(server, round: int) -> dict:
    """One FedGRPO round: τ server steps of Algorithm 1 lines 3–21 over Q = b·K questions each."""
    cfg, policy, world = server.config, server.policy, server.world
    st = settings(cfg)
    state = _state(server)
    cids = list(server.runtime.client_ids)
    K, G, L = len(cids), cfg.num_generations, st.neighbours
    clients = {cid: _inner(server.runtime.clients[cid]) for cid in cids}
    aux, ds = world.aux, world.public
    aux_q, aux_a = list(aux["prompt"]), [str(a) for a in aux["answer"]]
    ds_q, ds_a, ds_topic = list(ds["prompt"]), [str(a) for a in ds["answer"]], list(ds["topic"])

    # line 1 (and line 4 for all of D_s at once): frozen embeddings, computed once per run
    if state.aux_emb is None:
        state.aux_emb = encode(policy, aux_q, st.encoder, st.encoder_layer)  # [N_p, d]
        state.query_emb = encode(policy, ds_q, st.encoder, st.encoder_layer)  # [N_s, d]

    # the server's policy and optimiser
    policy.set_state(GLOBAL, server.global_state)
    params = policy.trainable(GLOBAL)
    optimizer = torch.optim.Adam(params, lr=cfg.learning_rate)
    if not cfg.reset_optimizer and state.optimizer_state is not None:
        optimizer.load_state_dict(_copy_optimizer_state(state.optimizer_state))
    gs = grpo_settings(cfg)

    available = list(cids)  # clients not failed in this round
    failed: list[dict] = []
    per_client = {cid: dict(competence=[], selected=0, scores=[], ae=[]) for cid in cids}
    steps = []
    Q = min(cfg.prompts_per_step * cfg.num_clients, len(ds_q))
    for step in range(cfg.local_steps):
        # line 3: questions x_s ~ D_s and G candidates ŷ ~ π_θg(·|x_s) each
        rng = np.random.default_rng(step_seed(cfg.seed, round, SERVER_KEY, step))
        q_idx = np.sort(rng.choice(len(ds_q), size=Q, replace=False))  # [Q]
        questions = [ds_q[i] for i in q_idx]
        rollouts = policy.rollout(GLOBAL, questions, G, seed=step_seed(cfg.seed + 1, round, SERVER_KEY, step))
        candidates = [rollouts.completions[i * G:(i + 1) * G] for i in range(Q)]  # [Q][G]

        # lines 4–5, eq. 5: the L nearest auxiliary exemplars G(x_s)
        neigh = nearest_exemplars(state.query_emb[q_idx], state.aux_emb, L)  # [Q, L]

        # lines 6–10: competence on G(x_s), asked only for cells never measured (the running estimate)
        needed = np.unique(neigh)  # [n_items]
        asks = {}
        for cid in available:
            k = cids.index(cid)
            todo = needed[~state.cache.known(k, needed)]
            if todo.size:
                asks[cid] = {"questions": [aux_q[j] for j in todo], "answers": [aux_a[j] for j in todo]}
        n_asked = sum(len(p["questions"]) for p in asks.values())
        if asks:
            ok, fail = server.split_replies(server.runtime.broadcast("competence", round, asks, receivers=list(asks)))
            failed += fail
            for cid, msg in ok.items():
                k = cids.index(cid)
                todo = needed[~state.cache.known(k, needed)]
                state.cache.update(k, todo, msg.payload["correct"])
            available = [c for c in available if c not in {f["client"] for f in fail}]

        # line 11, eq. 6: Top-M experts among the available clients
        avail_idx = np.array([cids.index(c) for c in available], dtype=np.int64)
        experts = np.zeros((Q, 0), dtype=np.int64)
        if avail_idx.size:
            comp = np.stack([state.cache.competence(avail_idx, neigh[i]) for i in range(Q)])  # [Q, K_avail]
            experts = avail_idx[select_experts(comp, min(st.num_experts, avail_idx.size))]  # [Q, M]
            for a, k in enumerate(avail_idx):
                per_client[cids[k]]["competence"].append(float(comp[:, a].mean()))

        # line 12: ⟨x_s, ŷ⟩ to each expert (one message per expert with all its questions)
        payloads = {}
        for k in np.unique(experts):
            rows = [i for i in range(Q) if k in experts[i]]
            payloads[cids[k]] = {"step": step, "questions": [questions[i] for i in rows],
                                 "candidates": [candidates[i] for i in rows]}
        ok, fail = (server.split_replies(server.runtime.broadcast("score", round, payloads, receivers=list(payloads)))
                    if payloads else ({}, []))
        failed += fail
        available = [c for c in available if c not in {f["client"] for f in fail}]

        # lines 13–17: collect r_k^s per (question, expert)
        scores: list[list[np.ndarray]] = [[] for _ in range(Q)]
        holders: list[list[bool]] = [[] for _ in range(Q)]
        for cid, msg in ok.items():
            k = cids.index(cid)
            rows = [i for i in range(Q) if k in experts[i]]
            for i, r in zip(rows, msg.payload["scores"]):
                scores[i].append(np.asarray(r, dtype=np.float64))  # [G]
                ae = dual_evaluation_gate(clients[cid].holds(questions[i]), st.mode) == "AE"  # simulator-side
                holders[i].append(ae)
                per_client[cid]["selected"] += 1
                per_client[cid]["scores"].append(float(np.mean(r)))
                per_client[cid]["ae"].append(float(ae))

        # lines 18–20, eqs. 8–9: one advantage per candidate (format reward of Remark 1 by the server)
        fmt = np.asarray(format_reward(rollouts.prompts, rollouts.completions), dtype=np.float64)  # [Q·G]
        truth = np.array([v or 0.0 for v in accuracy_reward(rollouts.prompts, rollouts.completions,
                                                           answer=[ds_a[i] for i in q_idx for _ in range(G)])])
        adv = np.zeros(Q * G)  # [Q·G]
        combined = np.zeros(Q * G)  # [Q·G] s_g, for diagnostics
        gaps, disagree = [], []
        for i in range(Q):
            sl = slice(i * G, (i + 1) * G)
            if not scores[i]:
                continue  # every expert of this question failed: no signal, zero advantage
            r = np.stack(scores[i])  # [M', G]
            adv[sl] = candidate_advantages(r, st.group_reward, st.group_coef, fmt[sl], st.format_coef,
                                           how=st.robust, trim=st.trim, scale_rewards=st.scale_rewards)
            consensus = robust_aggregate(r, st.robust, st.trim)  # [G]
            combined[sl] = st.group_coef * consensus + st.format_coef * fmt[sl]
            disagree.append(float(np.abs(group_relative_rewards(r)).mean()))
            t = truth[sl] > 0.5
            if t.any() and (~t).any():
                gaps.append(float(consensus[t].mean() - consensus[~t].mean()))

        # line 21: the policy-gradient step on θ_g with those advantages
        params = policy.trainable(GLOBAL)
        diag = grpo_step(policy.model, optimizer, rollouts, torch.as_tensor(combined, dtype=torch.float32), gs,
                         advantages=torch.as_tensor(adv, dtype=torch.float32), ref_model_ctx=policy.reference)
        client_topics = [clients[c].topics for c in cids]  # topics with >= 1 example in D_k
        major_topics = [clients[c].major_topics for c in cids]  # topics with >= 10 % of D_k
        q_topics = [ds_topic[i] for i in q_idx]
        flat_scores = [s for row in scores for s in row]
        steps.append(dict(
            expert_hit_rate=expert_hit_rate(experts, client_topics, q_topics) if experts.size else float("nan"),
            random_hit_rate=float(np.mean([np.mean([t in client_topics[k] for k in avail_idx]) for t in q_topics]))
            if avail_idx.size else float("nan"),
            expert_hit_rate_major=expert_hit_rate(experts, major_topics, q_topics) if experts.size else float("nan"),
            random_hit_rate_major=float(np.mean([np.mean([t in major_topics[k] for k in avail_idx])
                                                 for t in q_topics])) if avail_idx.size else float("nan"),
            ae_share=float(np.mean([a for row in holders for a in row])) if flat_scores else float("nan"),
            reward_mean=float(np.mean([s.mean() for s in flat_scores])) if flat_scores else float("nan"),
            candidate_accuracy=float(truth.mean()),
            format=float(fmt.mean()),
            reward_gap=float(np.mean(gaps)) if gaps else float("nan"),
            disagreement=float(np.mean(disagree)) if disagree else float("nan"),
            frac_zero_adv=float(np.mean([np.all(adv[i * G:(i + 1) * G] == 0) for i in range(Q)])),
            loss=diag["loss"], clip_fraction=diag["clip_fraction"], kl=diag["kl"],
            completion_length=diag["completion_length"], competence_queries=float(n_asked),
        ))

    for p in params:
        p.grad = None
    state.optimizer_state = None if cfg.reset_optimizer else _copy_optimizer_state(optimizer.state_dict())
    server.global_state = policy.get_state(GLOBAL)

    def mean(xs):
        return float(np.mean(xs)) if len(xs) else float("nan")

    out = {"server": {k: float(np.nanmean([s[k] for s in steps])) if any(np.isfinite(s[k]) for s in steps)
                      else float("nan") for k in steps[0]}}
    out["server"]["competence_queries"] = float(sum(s["competence_queries"] for s in steps))
    for cid in cids:
        pc = per_client[cid]
        if cid not in available:
            continue  # failed this round: only its failure record
        out[cid] = dict(competence=mean(pc["competence"]), selected=float(pc["selected"]),
                        score_mean=mean(pc["scores"]), ae_share=mean(pc["ae"]),
                        malicious=float(clients[cid].malicious))
        if round == 1 and clients[cid].sft_metrics is not None:  # trained on its first message (round 1)
            out[cid]["evaluator_sft_loss"] = clients[cid].sft_metrics["sft_loss"]
    # a metric that is undefined this round (no correct candidate, no expert…) is left out, not nan
    out = {cid: {k: v for k, v in m.items() if np.isfinite(v)} for cid, m in out.items()}
    return {"clients": out, "failed": failed}


# -- looking inside (the notebook's step-through and the selection-quality study) -------------------------------
def measure_all_competence(server, round: int = 0) -> list[dict]:
    """Fill the whole confidence graph: every client is asked about every unmeasured auxiliary item.

    Goes through the runtime like lines 6–10 (so the ledger shows it, in ``round``). Returns failures.
    """
    state, aux = _state(server), server.world.aux
    aux_q, aux_a = list(aux["prompt"]), [str(a) for a in aux["answer"]]
    cids = list(server.runtime.client_ids)
    items = np.arange(len(aux_q))
    asks = {}
    for k, cid in enumerate(cids):
        todo = items[~state.cache.known(k, items)]
        if todo.size:
            asks[cid] = {"questions": [aux_q[j] for j in todo], "answers": [aux_a[j] for j in todo]}
    if not asks:
        return []
    ok, failed = server.split_replies(server.runtime.broadcast("competence", round, asks, receivers=list(asks)))
    for cid, msg in ok.items():
        k = cids.index(cid)
        state.cache.update(k, items[~state.cache.known(k, items)], msg.payload["correct"])
    return failed


def _ensure_embeddings(server) -> ServerState:
    st, state = settings(server.config), _state(server)
    if state.aux_emb is None:
        state.aux_emb = encode(server.policy, list(server.world.aux["prompt"]), st.encoder, st.encoder_layer)
        state.query_emb = encode(server.policy, list(server.world.public["prompt"]), st.encoder, st.encoder_layer)
    return state


def trace_question(server, question: int, L: int | None = None, M: int | None = None, seed: int = 0) -> dict:
    """Algorithm 1 lines 3–20 for one question of D_s, with every intermediate value (no update).

    Args:
        server: a built run's server (``Run(cfg).build().server``) with method ``fedgrpo``.
        question: index into ``world.public`` (D_s).
        L, M: neighbourhood size and experts (default: the run's settings).
        seed: seeds the G candidates.

    Returns:
        dict with ``question``, ``topic``, ``answer`` (diagnostic only), ``neighbours`` (aux index,
        text, topic, cosine), ``competence`` [K], ``experts`` (client indices), ``candidates`` [G],
        ``scores`` [M, G] (the experts' r_k^s), ``pathways`` (AE/ME per expert, simulator-side),
        ``format`` [G], ``correct`` [G] (diagnostic), ``eq9`` [M, G] (R_k literally) and
        ``advantages`` {variant: [G]}.
    """
    st = settings(server.config)
    L = st.neighbours if L is None else L
    M = st.num_experts if M is None else M
    state = _ensure_embeddings(server)
    measure_all_competence(server)
    ds, aux = server.world.public, server.world.aux
    cids = list(server.runtime.client_ids)
    clients = [_inner(server.runtime.clients[c]) for c in cids]
    q, answer, topic = ds[question]["prompt"], str(ds[question]["answer"]), ds[question]["topic"]
    neigh = nearest_exemplars(state.query_emb[question], state.aux_emb, L)  # [L]
    sims = state.aux_emb[neigh] @ state.query_emb[question]  # [L]
    comp = state.cache.competence(None, neigh)  # [K]
    experts = select_experts(comp, M)  # [M]
    G = server.config.num_generations
    server.policy.set_state(GLOBAL, server.global_state)
    cands = server.policy.rollout(GLOBAL, [q], G, seed=seed).completions  # [G]
    payload = {"step": 0, "questions": [q], "candidates": [cands]}
    ok, _ = server.split_replies(server.runtime.broadcast("score", 0, {cids[k]: payload for k in experts},
                                                          receivers=[cids[k] for k in experts]))
    rows = [k for k in experts if cids[k] in ok]
    scores = np.array([ok[cids[k]].payload["scores"][0] for k in rows])  # [M', G]
    fmt = np.asarray(format_reward([q] * G, cands), dtype=np.float64)  # [G]
    adv = {v: candidate_advantages(scores, v, st.group_coef, fmt, st.format_coef, scale_rewards=st.scale_rewards)
           for v in ADVANTAGE_VARIANTS} if len(rows) else {}
    return dict(
        question=q, topic=topic, answer=answer,
        neighbours=[dict(index=int(j), text=aux[int(j)]["prompt"], topic=aux[int(j)]["topic"], cosine=float(s))
                    for j, s in zip(neigh, sims)],
        competence=comp, experts=[int(k) for k in rows], candidates=list(cands), scores=scores,
        pathways=[dual_evaluation_gate(clients[k].holds(q), st.mode) for k in rows], format=fmt,
        correct=np.array([v or 0.0 for v in accuracy_reward([q] * G, cands, answer=[answer] * G)]),
        eq9=group_relative_rewards(scores) if len(rows) else np.zeros((0, G)), advantages=adv,
    )


def selection_quality(server, L: int | None = None, M: int | None = None) -> dict:
    """Expert selection (eqs. 5–6) for every question of D_s, scored against the clients' topics.

    Returns:
        ``{"hit_rate", "random_hit_rate", "hit_rate_major", "random_hit_rate_major", "experts" [N_s, M]}``:
        the fraction of chosen experts holding the question's topic (≥ 1 example; "major": ≥ 10 %
        of the client's data) and its exact expectation under uniform random selection.
    """
    st = settings(server.config)
    L = st.neighbours if L is None else L
    M = st.num_experts if M is None else M
    state = _ensure_embeddings(server)
    measure_all_competence(server)
    clients = [_inner(server.runtime.clients[c]) for c in server.runtime.client_ids]
    neigh = nearest_exemplars(state.query_emb, state.aux_emb, L)  # [N_s, L]
    comp = np.stack([state.cache.competence(None, row) for row in neigh])  # [N_s, K]
    experts = select_experts(comp, M)  # [N_s, M]
    topics = list(server.world.public["topic"])
    out = {"experts": experts}
    for suffix, sets in (("", [c.topics for c in clients]), ("_major", [c.major_topics for c in clients])):
        out[f"hit_rate{suffix}"] = expert_hit_rate(experts, sets, topics)
        out[f"random_hit_rate{suffix}"] = float(np.mean([np.mean([t in s for s in sets]) for t in topics]))
    return out
