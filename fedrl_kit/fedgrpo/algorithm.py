"""FedGRPO's server: Algorithm 1 lines 3–21 as one function, :func:`server_step`, and the round around it.

One :func:`server_step` is one pass of Algorithm 1's loop body over a batch of Q questions of
``D_s``, as seven named steps in the paper's order (the package docstring maps every line and
lists the deviations):

==  ======================  =================================================  ==========================
#   Algorithm 1             what happens                                       function
==  ======================  =================================================  ==========================
1   line 3, eq. 2           G candidates ŷ ~ π_θg(·|x_s) for each question      :func:`sample_candidates`
2   lines 4–5, eq. 5        the L nearest auxiliary exemplars G(x_s)           :func:`nearest_exemplars`
3   lines 6–10              competence cells not yet cached, asked of clients  :func:`ask_competence`
4   line 11, eq. 6          r_k^p on G(x_s) and the Top-M experts C(x_s)       :func:`choose_experts`
5   lines 12–17             ⟨x_s, ŷ⟩ to each expert, its scores r_k^s back     :func:`collect_scores`
6   lines 18–20, eqs. 8–9   one advantage per candidate (+ Remark 1's format)  :func:`advantages_from_scores`
7   line 21                 the clipped-surrogate GRPO step on θ_g             :func:`policy_step`
==  ======================  =================================================  ==========================

It returns a :class:`StepTrace` holding every intermediate value. :func:`run_round` is τ calls of
it plus the optimiser's bookkeeping; its metrics are read from the traces. The notebook's
step-through (:func:`fedrl_kit.fedgrpo.diagnostics.trace_question`) calls the same
:func:`server_step` with ``update=False``, so what it shows is what training does.

The server side sees messages, its own state (:class:`ServerState`), its own splits (``D_p`` =
``world.aux``, ``D_s`` = ``world.public``) and the client ids of the runtime — never a client
object. Facts only the simulator knows (who holds which topic or answer, who lies) are read by
:mod:`fedrl_kit.fedgrpo.diagnostics` from the traces this module returns.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.fedgrpo.encoder import encode
from fedrl_kit.fedgrpo.expert_selection import CompetenceCache, nearest_exemplars, select_experts
from fedrl_kit.fedgrpo.group_reward import candidate_advantages, group_relative_rewards, robust_aggregate
from fedrl_kit.grpo import grpo_step
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.rewards import accuracy_reward, format_reward


@dataclass(frozen=True)
class StepTrace:
    """Everything one :func:`server_step` saw and decided (Algorithm 1 lines 3–21), in paper order.

    Client indices refer to ``client_ids``; scores are listed in the order the replies came back
    (ascending client index), which is the order the advantage step averages them in.
    """

    round: int
    step: int
    client_ids: list[str]  # [K] the runtime's clients
    q_idx: np.ndarray  # [Q] rows of D_s
    questions: list[str]  # [Q] x_s
    topics: list[str]  # [Q] their topics (the server's own metadata of D_s; read by diagnostics)
    candidates: list[list[str]]  # [Q][G] ŷ
    neighbours: np.ndarray  # [Q, L] G(x_s): rows of D_p, most similar first (eq. 5)
    competence_queries: int  # competence cells asked in lines 6–10 (0 once the cache holds them all)
    available: np.ndarray  # [K'] clients that could be chosen (not failed this round)
    competence: np.ndarray  # [Q, K'] r_k^p of the available clients
    experts: np.ndarray  # [Q, M] C(x_s), most competent first (eq. 6)
    scorers: list[np.ndarray]  # [Q][M'] experts whose scores came back
    scores: list[np.ndarray]  # [Q][M', G] their private scores r_k^s
    format: np.ndarray  # [Q, G] f_g, the format reward (Remark 1)
    consensus: np.ndarray  # [Q, G] A(r) over the experts (eq. 8's μ_r or a robust A; 0 with no scores)
    combined: np.ndarray  # [Q, G] s_g = group_coef · consensus + format_coef · f_g
    advantages: np.ndarray  # [Q, G] A_g, the advantage the GRPO step uses
    grpo: dict | None  # grpo_step's diagnostics (None with update=False)
    failed: list[dict]  # failure records of clients dropped in this step


# -- the server's state (checkpointed by save_state / load_state) ------------------------------------------------
class ServerState:
    """What the FedGRPO server keeps between rounds: the confidence graph, its optimiser, the embeddings."""

    def __init__(self, n_clients: int, n_aux: int):
        self.cache = CompetenceCache(n_clients, n_aux)  # r_k^p cells (k, j): the "running accuracy estimate"
        self.optimizer_state: dict | None = None
        self.aux_emb: np.ndarray | None = None  # [N_p, d] z_p
        self.query_emb: np.ndarray | None = None  # [N_s, d] z_s


def server_state(server) -> ServerState:
    """The run's :class:`ServerState` (created on first use)."""
    if "fedgrpo" not in server.scratch:
        server.scratch["fedgrpo"] = ServerState(len(server.runtime.client_ids), len(server.world.aux))
    return server.scratch["fedgrpo"]


def ensure_embeddings(server) -> ServerState:
    """Line 1 (and line 4 for all of D_s at once): the frozen embeddings z_p and z_s, computed once per run."""
    args, state = server.config.fedgrpo, server_state(server)
    if state.aux_emb is None:
        state.aux_emb = encode(server.policy, list(server.world.aux["prompt"]), args.encoder,
                               args.encoder_layer)  # [N_p, d]
        state.query_emb = encode(server.policy, list(server.world.public["prompt"]), args.encoder,
                                 args.encoder_layer)  # [N_s, d]
    return state


def save_state(server, folder) -> None:
    """Checkpoint the competence cache and the server's optimiser (resume is exact)."""
    state = server_state(server)
    np.savez(folder / "fedgrpo_cache.npz", sum=state.cache._sum, count=state.cache._count)
    if state.optimizer_state is not None:
        torch.save(state.optimizer_state, folder / "fedgrpo_optimizer.pt")


def load_state(server, folder) -> None:
    state = server_state(server)
    with np.load(folder / "fedgrpo_cache.npz") as z:
        state.cache._sum, state.cache._count = z["sum"].copy(), z["count"].copy()
    path = folder / "fedgrpo_optimizer.pt"
    state.optimizer_state = torch.load(path) if path.exists() else None


def _copy_optimizer_state(sd: dict) -> dict:
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf)


# -- the steps of Algorithm 1, in paper order ----------------------------------------------------------------------
def sample_questions(config, round: int, step: int, n_public: int) -> np.ndarray:
    """Line 3: Q = b·K questions x_s ~ D_s for (round, step), without replacement, in index order.  -> [Q]"""
    Q = min(config.prompts_per_step * config.num_clients, n_public)
    rng = seeding.rng("fedgrpo/questions", config.seed, round, step)
    return np.sort(rng.choice(n_public, size=Q, replace=False))  # [Q]


def sample_candidates(policy, questions: list[str], G: int, seed: int):
    """Line 3, eq. 2: G candidates ŷ ~ π_θg(·|x_s) for each question (a Rollouts of Q·G rows, prompt-major)."""
    return policy.rollout(GLOBAL, questions, G, seed=seed)


def ask_competence(server, round: int, items: np.ndarray, receivers: list[str]) -> tuple[int, list[dict]]:
    """Lines 6–10: each receiver scores the exemplars in ``items`` it was never asked about.

    The exemplars (x_p, y_p) go down as texts in a ``competence`` message; each client returns one
    number in [0, 1] per exemplar, which the server adds to its cache (the running estimate).

    Returns:
        (cells asked, failure records).
    """
    state, cids, aux = server_state(server), list(server.runtime.client_ids), server.world.aux
    aux_q, aux_a = list(aux["prompt"]), [str(a) for a in aux["answer"]]
    asks = {}
    for cid in receivers:
        todo = items[~state.cache.known(cids.index(cid), items)]
        if todo.size:
            asks[cid] = {"questions": [aux_q[j] for j in todo], "answers": [aux_a[j] for j in todo]}
    if not asks:
        return 0, []
    ok, failed = server.split_replies(server.runtime.broadcast("competence", round, asks, receivers=list(asks)))
    for cid, msg in ok.items():
        k = cids.index(cid)
        state.cache.update(k, items[~state.cache.known(k, items)], msg.payload["correct"])
    return sum(len(p["questions"]) for p in asks.values()), failed


def choose_experts(cache: CompetenceCache, neighbours: np.ndarray, available: np.ndarray,
                   M: int) -> tuple[np.ndarray, np.ndarray]:
    """Line 11, eq. 6: r_k^p on each G(x_s) and C(x_s) = Top-M among the available clients.

    Returns:
        (competence [Q, K'], experts [Q, min(M, K')] client indices, most competent first).
    """
    Q = len(neighbours)
    if not available.size:
        return np.zeros((Q, 0)), np.zeros((Q, 0), dtype=np.int64)
    competence = np.stack([cache.competence(available, row) for row in neighbours])  # [Q, K']
    return competence, available[select_experts(competence, min(M, available.size))]  # [Q, M]


def collect_scores(server, round: int, step: int, questions: list[str], candidates: list[list[str]],
                   experts: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray], list[dict]]:
    """Lines 12–17: ⟨x_s, ŷ⟩ to each expert (one ``score`` message with all its questions); r_k^s back.

    Returns:
        (scorers [Q][M'] client indices in reply order, scores [Q][M', G], failure records).
    """
    cids, Q = list(server.runtime.client_ids), len(questions)
    G = len(candidates[0]) if Q else 0
    rows_of = {int(k): [i for i in range(Q) if k in experts[i]] for k in np.unique(experts)}
    payloads = {cids[k]: {"step": step, "questions": [questions[i] for i in rows],
                          "candidates": [candidates[i] for i in rows]} for k, rows in rows_of.items()}
    ok, failed = (server.split_replies(server.runtime.broadcast("score", round, payloads, receivers=list(payloads)))
                  if payloads else ({}, []))
    scorers: list[list[int]] = [[] for _ in range(Q)]
    scores: list[list[np.ndarray]] = [[] for _ in range(Q)]
    for cid, msg in ok.items():
        k = cids.index(cid)
        for i, r in zip(rows_of[k], msg.payload["scores"]):
            scorers[i].append(k)
            scores[i].append(np.asarray(r, dtype=np.float64))  # [G]
    return ([np.array(s, dtype=np.int64) for s in scorers],
            [np.stack(s) if s else np.zeros((0, G)) for s in scores], failed)  # [Q][M'], [Q][M', G]


def advantages_from_scores(scores: list[np.ndarray], fmt: np.ndarray, args) -> tuple[np.ndarray, ...]:
    """Lines 18–20, eqs. 8–9: one advantage per candidate from the experts' scores and the format reward.

    ``args`` is ``config.fedgrpo`` (``group_reward``, ``group_coef``, ``format_coef``, ``robust``,
    ``trim``, ``scale_rewards``); see :func:`~fedrl_kit.fedgrpo.group_reward.candidate_advantages`.
    A question whose experts all failed has no signal: zero advantage.

    Returns:
        (consensus, combined, advantages), each [Q, G].
    """
    consensus, combined, adv = np.zeros(fmt.shape), np.zeros(fmt.shape), np.zeros(fmt.shape)  # [Q, G]
    for i, r in enumerate(scores):
        if not len(r):
            continue
        adv[i] = candidate_advantages(r, args.group_reward, args.group_coef, fmt[i], args.format_coef,
                                      how=args.robust, trim=args.trim, scale_rewards=args.scale_rewards)
        consensus[i] = robust_aggregate(r, args.robust, args.trim)  # [G]
        combined[i] = args.group_coef * consensus[i] + args.format_coef * fmt[i]  # [G] s_g
    return consensus, combined, adv


def policy_step(server, optimizer, rollouts, combined: np.ndarray, advantages: np.ndarray) -> dict:
    """Line 21: the GRPO step on θ_g (the clipped surrogate, GRPO's form of θ ← θ + η R ∇ log π)."""
    server.policy.trainable(GLOBAL)  # the experts' scoring activated their own adapters
    return grpo_step(server.policy.model, optimizer, rollouts,
                     torch.as_tensor(combined.reshape(-1), dtype=torch.float32),  # [Q·G], diagnostics only
                     server.config.grpo_settings(),
                     advantages=torch.as_tensor(advantages.reshape(-1), dtype=torch.float32),  # [Q·G]
                     ref_model_ctx=server.policy.reference)


# -- the algorithm box ---------------------------------------------------------------------------------------------
def server_step(server, round: int, step: int, q_idx: np.ndarray, candidate_seed: int, available: list[str], *,
                optimizer=None, L: int | None = None, M: int | None = None, update: bool = True) -> StepTrace:
    """Algorithm 1 lines 3–21 for the questions ``q_idx`` of D_s: one GRPO step of the server's policy.

    Args:
        server: the run's server (its policy's global adapter is the one being trained).
        round, step: where this step is (keys the messages and the clients' random streams).
        q_idx: rows of D_s (``world.public``), ``[Q]``.
        candidate_seed: seeds the G candidates of every question.
        available: ids of the clients not dropped so far this round.
        optimizer: the server's Adam over θ_g (not needed with ``update=False``).
        L, M: neighbourhood size and experts per question (default ``config.fedgrpo``).
        update: False skips only line 21 (the step-through).

    Returns:
        a :class:`StepTrace`.
    """
    cfg, args = server.config, server.config.fedgrpo
    L = args.neighbours if L is None else L
    M = args.num_experts if M is None else M
    state, cids, ds = server_state(server), list(server.runtime.client_ids), server.world.public
    prompts, ds_topics = list(ds["prompt"]), list(ds["topic"])
    questions, G = [prompts[i] for i in q_idx], cfg.num_generations

    # 1. line 3, eq. 2: G candidates ŷ ~ π_θg(·|x_s) for each question
    rollouts = sample_candidates(server.policy, questions, G, candidate_seed)
    candidates = [rollouts.completions[i * G:(i + 1) * G] for i in range(len(questions))]  # [Q][G]
    # 2. lines 4–5, eq. 5: the L nearest auxiliary exemplars G(x_s)
    neighbours = nearest_exemplars(state.query_emb[q_idx], state.aux_emb, L)  # [Q, L]
    # 3. lines 6–10: competence on G(x_s), asked only for cells never measured (the running estimate)
    n_asked, failed = ask_competence(server, round, np.unique(neighbours), available)
    available = [c for c in available if c not in {f["client"] for f in failed}]
    # 4. line 11, eq. 6: Top-M experts among the available clients
    avail_idx = np.array([cids.index(c) for c in available], dtype=np.int64)  # [K']
    competence, experts = choose_experts(state.cache, neighbours, avail_idx, M)  # [Q, K'], [Q, M]
    # 5. lines 12–17: ⟨x_s, ŷ⟩ to each expert; r_k^s back (gate λ_k and scores on the client)
    scorers, scores, fail = collect_scores(server, round, step, questions, candidates, experts)
    # 6. lines 18–20, eqs. 8–9: one advantage per candidate; the format reward of Remark 1 by the server
    fmt = np.asarray(format_reward(rollouts.prompts, rollouts.completions), dtype=np.float64)  # [Q·G]
    fmt = fmt.reshape(len(questions), G)  # [Q, G]
    consensus, combined, adv = advantages_from_scores(scores, fmt, args)  # [Q, G] each
    # 7. line 21: the policy-gradient step on θ_g with those advantages
    diag = policy_step(server, optimizer, rollouts, combined, adv) if update else None
    return StepTrace(round, step, cids, np.asarray(q_idx), questions, [ds_topics[i] for i in q_idx], candidates,
                     neighbours, n_asked, avail_idx, competence, experts, scorers, scores, fmt, consensus, combined,
                     adv, diag, failed + fail)


# -- one round -------------------------------------------------------------------------------------------------------
def run_round(server, round: int) -> dict:
    """One FedGRPO round: τ = ``local_steps`` calls of :func:`server_step`, Q = b·K questions each."""
    cfg, policy = server.config, server.policy
    state = ensure_embeddings(server)  # line 1 (and line 4 for all of D_s): once per run
    policy.set_state(GLOBAL, server.global_state)
    optimizer = torch.optim.Adam(policy.trainable(GLOBAL), lr=cfg.learning_rate)
    if not cfg.reset_optimizer and state.optimizer_state is not None:
        optimizer.load_state_dict(_copy_optimizer_state(state.optimizer_state))

    available, traces = list(server.runtime.client_ids), []
    for step in range(cfg.local_steps):
        q_idx = sample_questions(cfg, round, step, len(server.world.public))  # line 3: x_s ~ D_s
        seed = seeding.stream_seed("fedgrpo/candidates", cfg.seed, round, step)
        traces.append(server_step(server, round, step, q_idx, seed, available, optimizer=optimizer))
        dropped = {f["client"] for f in traces[-1].failed}  # a client that fails sits out the rest of the round
        available = [c for c in available if c not in dropped]

    for p in (p for group in optimizer.param_groups for p in group["params"]):
        p.grad = None
    state.optimizer_state = None if cfg.reset_optimizer else _copy_optimizer_state(optimizer.state_dict())
    server.global_state = policy.get_state(GLOBAL)

    answers = [str(a) for a in server.world.public["answer"]]  # for candidate_accuracy / reward_gap only
    metrics = {"server": mean_over_steps([step_metrics(t, [answers[i] for i in t.q_idx]) for t in traces])}
    metrics["server"]["competence_queries"] = float(sum(t.competence_queries for t in traces))
    metrics.update({cid: client_metrics(traces, cid) for cid in available})
    return {"clients": finite(metrics), "failed": [f for t in traces for f in t.failed], "trace": traces}


# -- metrics read from the traces ----------------------------------------------------------------------------------
def _mean(xs) -> float:
    return float(np.mean(xs)) if len(xs) else float("nan")


def finite(metrics: dict[str, dict]) -> dict[str, dict]:
    """Each record without its undefined (nan) values: a metric with nothing to measure is left out."""
    return {cid: {k: v for k, v in m.items() if np.isfinite(v)} for cid, m in metrics.items()}


def mean_over_steps(steps: list[dict]) -> dict:
    """The round's value of each per-step metric: the mean over the steps where it is defined (else nan)."""
    return {k: float(np.nanmean([s[k] for s in steps])) if any(np.isfinite(s[k]) for s in steps) else float("nan")
            for k in steps[0]}


def step_metrics(trace: StepTrace, answers: list[str]) -> dict:
    """The server's view of one step: the experts' rewards, the advantages and the GRPO step's diagnostics.

    ``candidate_accuracy`` and ``reward_gap`` are diagnostics: they check the candidates against
    the answers of ``D_s``, which the server holds for evaluation only — no reward or advantage
    reads them.

    Args:
        trace: one :func:`server_step`'s trace.
        answers: the D_s answers of ``trace.q_idx``, ``[Q]``.
    """
    Q, G = trace.format.shape
    correct = np.array([v or 0.0 for v in accuracy_reward(
        [q for q in trace.questions for _ in range(G)], [c for cands in trace.candidates for c in cands],
        answer=[a for a in answers for _ in range(G)])])  # [Q·G]
    gaps, disagree = [], []
    for i in range(Q):
        if not len(trace.scores[i]):
            continue
        disagree.append(float(np.abs(group_relative_rewards(trace.scores[i])).mean()))  # eq. 9 taken literally
        t = correct[i * G:(i + 1) * G] > 0.5  # [G]
        if t.any() and (~t).any():  # how much more the experts give correct candidates than incorrect ones
            gaps.append(float(trace.consensus[i][t].mean() - trace.consensus[i][~t].mean()))
    flat_scores = [row for s in trace.scores for row in s]
    diag = trace.grpo or {}
    return dict(
        reward_mean=_mean([row.mean() for row in flat_scores]),
        candidate_accuracy=float(correct.mean()),
        format=float(trace.format.reshape(-1).mean()),
        reward_gap=_mean(gaps),
        disagreement=_mean(disagree),
        frac_zero_adv=float(np.mean([np.all(trace.advantages[i] == 0) for i in range(Q)])),
        **{k: diag.get(k, float("nan")) for k in ("loss", "clip_fraction", "kl", "completion_length")},
        competence_queries=float(trace.competence_queries),
    )


def client_metrics(traces: list[StepTrace], cid: str) -> dict:
    """What the server saw of client ``cid`` this round: mean r_k^p, questions scored, mean score."""
    k = traces[0].client_ids.index(cid)
    competence = [float(t.competence[:, a].mean()) for t in traces for a in np.flatnonzero(t.available == k)]
    scores = [float(np.mean(row)) for t in traces for who, rows in zip(t.scorers, t.scores)
              for j, row in zip(who, rows) if j == k]
    return dict(competence=_mean(competence), selected=float(len(scores)), score_mean=_mean(scores))
