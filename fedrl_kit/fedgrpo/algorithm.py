"""FedGRPO's server: Algorithm 1 lines 3–21 as one function, :func:`server_step`, and the round around it.
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import torch

from fedrl_kit import seeding
from fedrl_kit.fedgrpo.encoder import encode
from fedrl_kit.fedgrpo.expert_selection import CompetenceCache, nearest_exemplars, random_selection, select_experts
from fedrl_kit.fedgrpo.group_reward import (candidate_advantages, default_scale_rewards, group_relative_rewards,
                                            official_advantages, robust_aggregate)
from fedrl_kit.grpo import grpo_step
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.rewards import format_reward


@dataclass(frozen=True)
class StepTrace:
    """Everything one :func:`server_step` saw and decided (Algorithm 1 lines 3–21), in paper order."""

    round: int
    step: int
    client_ids: list[str]  # [K] the runtime's clients
    q_idx: np.ndarray  # [Q] rows of D_s
    questions: list[str]  # [Q] x_s
    candidates: list[list[str]]  # [Q][C] ŷ
    neighbours: np.ndarray  # [Q, L] G(x_s): rows of D_p, most similar first (eq. 5); [Q, 0] official
    competence_queries: int  # competence cells asked in lines 6–10 (0 once the cache holds them all)
    available: np.ndarray  # [K'] clients that could be chosen (not failed this round)
    competence: np.ndarray  # [Q, K'] r_k^p of the available clients ([Q, 0] official: none asked)
    experts: np.ndarray  # [Q, M] C(x_s), most competent first (eq. 6); official: the random draw, block order
    scorers: list[np.ndarray]  # [Q][M'] experts whose scores came back
    scored: list[np.ndarray]  # [Q][M', G] which candidates each of their score rows refers to
    scores: list[np.ndarray]  # [Q][M', G] their private scores r_k^s
    format: np.ndarray  # [Q, C] f_g, the format reward (Remark 1)
    consensus: np.ndarray  # [Q, C] A(r) over the experts who scored each candidate (0 with no scores)
    combined: np.ndarray  # [Q, C] s_g = group_coef · consensus + format_coef · f_g
    advantages: np.ndarray  # [Q, C] A_g, the advantage the GRPO step uses
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
        self.official: dict[int, np.ndarray] = {}  # M → [N_s, M] the official protocol's experts (drawn once)


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
        state.query_emb = encode(server.policy, list(server.world.queries["prompt"]), args.encoder,
                                 args.encoder_layer)  # [N_s, d]
    return state


def save_state(server, folder) -> None:
    """Checkpoint the competence cache and the server's optimiser (resume is exact); with
    ``fedgrpo.server_update="full"`` also the base weights θ_g and the embeddings φ took from the untrained base."""
    state = server_state(server)
    np.savez(folder / "fedgrpo_cache.npz", sum=state.cache._sum, count=state.cache._count)
    if state.optimizer_state is not None:
        torch.save(state.optimizer_state, folder / "fedgrpo_optimizer.pt")
    if server.config.fedgrpo.server_update == "full":
        torch.save(base_weights(server.policy.model), folder / "fedgrpo_base.pt")
        if state.aux_emb is not None:
            np.savez(folder / "fedgrpo_embeddings.npz", aux=state.aux_emb, queries=state.query_emb)


def load_state(server, folder) -> None:
    state = server_state(server)
    with np.load(folder / "fedgrpo_cache.npz") as z:
        state.cache._sum, state.cache._count = z["sum"].copy(), z["count"].copy()
    path = folder / "fedgrpo_optimizer.pt"
    state.optimizer_state = torch.load(path) if path.exists() else None
    if (folder / "fedgrpo_base.pt").exists():
        server.policy.model.load_state_dict(torch.load(folder / "fedgrpo_base.pt"), strict=False)
    if (folder / "fedgrpo_embeddings.npz").exists():
        with np.load(folder / "fedgrpo_embeddings.npz") as z:
            state.aux_emb, state.query_emb = z["aux"].copy(), z["queries"].copy()


def base_weights(model) -> dict[str, torch.Tensor]:
    """The model's weights outside every LoRA adapter (what ``server_update="full"`` trains), by name."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}


def server_parameters(server) -> list[torch.nn.Parameter]:
    """θ_g, the parameters line 21 updates; activates the global adapter."""
    lora = server.policy.trainable(GLOBAL)
    if server.config.fedgrpo.server_update == "lora":
        return lora
    for p in lora:
        p.requires_grad_(False)
    base = [p for n, p in server.policy.model.named_parameters() if "lora_" not in n]
    for p in base:
        p.requires_grad_(True)
    return base


def _copy_optimizer_state(sd: dict) -> dict:
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    return torch.load(buf)


# -- the steps of Algorithm 1, in paper order ----------------------------------------------------------------------
def questions_per_step(config) -> int:
    """Q, the questions of one server step: ``fedgrpo.questions_per_step``, or b·K when that is 0."""
    q = config.fedgrpo.questions_per_step
    return q if q > 0 else config.prompts_per_step * config.num_clients


def sample_questions(config, round: int, step: int, n_queries: int) -> np.ndarray:
    """Line 3: Q questions x_s ~ D_s for (round, step), without replacement, in index order.  -> [Q]"""
    Q = min(questions_per_step(config), n_queries)
    rng = seeding.rng("fedgrpo/questions", config.seed, round, step)
    return np.sort(rng.choice(n_queries, size=Q, replace=False))  # [Q]


def sample_candidates(policy, questions: list[str], G: int, seed: int):
    """Line 3, eq. 2: G candidates ŷ ~ π_θg(·|x_s) for each question (a Rollouts of Q·G rows, prompt-major)."""
    return policy.rollout(GLOBAL, questions, G, seed=seed)


def official_experts(server, M: int) -> np.ndarray:
    """The official protocol's experts: M distinct clients drawn uniformly for every question of D_s.  -> [N_s, M]"""
    state = server_state(server)
    if M not in state.official:
        K, n = len(server.runtime.client_ids), len(server.world.queries)
        state.official[M] = random_selection(K, M, n, seeding.rng("fedgrpo/official_experts", server.config.seed))
    return state.official[M]


def random_experts(seed: int, round: int, step: int, available: np.ndarray, M: int, Q: int) -> np.ndarray:
    """``selection="random"``: min(M, K') distinct clients of ``available`` uniformly per question (stream
    ``fedgrpo/random_experts``, keyed by round and step).  -> [Q, min(M, K')] client indices"""
    if not available.size:
        return np.zeros((Q, 0), dtype=np.int64)
    rng = seeding.rng("fedgrpo/random_experts", seed, round, step)
    return available[random_selection(available.size, min(M, available.size), Q, rng)]  # [Q, M']


def ask_competence(server, round: int, items: np.ndarray, receivers: list[str]) -> tuple[int, list[dict]]:
    """Lines 6–10: each receiver scores the exemplars in ``items`` it was never asked about.

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
                   experts: np.ndarray, blocks: bool = False
                   ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[dict]]:
    """Lines 12–17: ⟨x_s, ŷ⟩ to each expert (one ``score`` message with all its questions); r_k^s back.

    Args:
        experts: ``[Q, M]`` client indices per question (-1: none, that block is not scored).
        blocks: False (the paper): every expert gets all candidates of its questions. True (the official protocol): the
            j-th expert of a question gets only block j, candidates ``j·G … j·G + G − 1``, with ``G = C / M``.

    Returns:
        (scorers [Q][M'] client indices in reply order, scored [Q][M', G] the candidate indices each score refers to,
        scores [Q][M', G], failure records).
    """
    cids, Q = list(server.runtime.client_ids), len(questions)
    C = len(candidates[0]) if Q else 0
    G = C // experts.shape[1] if blocks and experts.size else C
    rows_of: dict[int, list[tuple[int, np.ndarray]]] = {}  # client → [(question, candidate indices)]
    for i in range(Q):
        for j, k in enumerate(experts[i]):
            if k < 0:  # (official protocol) this block's expert is unavailable
                continue
            idx = np.arange(j * G, (j + 1) * G) if blocks else np.arange(C)  # [G]
            rows_of.setdefault(int(k), []).append((i, idx))
    payloads = {cids[k]: {"step": step, "questions": [questions[i] for i, _ in rows],
                          "candidates": [[candidates[i][g] for g in idx] for i, idx in rows]}
                for k, rows in sorted(rows_of.items())}
    ok, failed = (server.split_replies(server.runtime.broadcast("score", round, payloads, receivers=list(payloads)))
                  if payloads else ({}, []))
    scorers: list[list[int]] = [[] for _ in range(Q)]
    scored: list[list[np.ndarray]] = [[] for _ in range(Q)]
    scores: list[list[np.ndarray]] = [[] for _ in range(Q)]
    for cid, msg in ok.items():
        k = cids.index(cid)
        for (i, idx), r in zip(rows_of[k], msg.payload["scores"]):
            scorers[i].append(k)
            scored[i].append(idx)
            scores[i].append(np.asarray(r, dtype=np.float64))  # [G]
    return ([np.array(s, dtype=np.int64) for s in scorers],
            [np.stack(s) if s else np.zeros((0, G), dtype=np.int64) for s in scored],
            [np.stack(s) if s else np.zeros((0, G)) for s in scores], failed)  # [Q][M'], [Q][M', G] ×2


def advantages_from_scores(scores: list[np.ndarray], fmt: np.ndarray, args,
                           scored: list[np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
    """Lines 18–20, eqs. 8–9: one advantage per candidate from the experts' scores and the format reward.

    Returns:
        (consensus, combined, advantages), each [Q, C].
    """
    consensus, combined, adv = np.zeros(fmt.shape), np.zeros(fmt.shape), np.zeros(fmt.shape)  # [Q, C]
    scale = default_scale_rewards(args.group_reward, args.scale_rewards)
    for i, r in enumerate(scores):
        if not len(r):
            continue
        if args.group_reward == "official":
            idx = scored[i]  # [M', G] each expert's own block
            adv[i, idx] = official_advantages(r, args.group_coef, fmt[i][idx], args.format_coef,
                                              scale_rewards=scale)  # [M', G]
            consensus[i, idx] = r  # one expert per candidate
        else:
            adv[i] = candidate_advantages(r, args.group_reward, args.group_coef, fmt[i], args.format_coef,
                                          how=args.robust, trim=args.trim, scale_rewards=scale)
            consensus[i] = robust_aggregate(r, args.robust, args.trim)  # [G]
        combined[i] = args.group_coef * consensus[i] + args.format_coef * fmt[i]  # [C] s_g
    return consensus, combined, adv


def policy_step(server, optimizer, rollouts, combined: np.ndarray, advantages: np.ndarray) -> dict:
    """Line 21: the GRPO step on θ_g (the clipped surrogate, GRPO's form of θ ← θ + η R ∇ log π)."""
    server_parameters(server)  # the experts' scoring activated their own adapters
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
        q_idx: rows of D_s (``world.queries``), ``[Q]``.
        candidate_seed: seeds the G (official: G·M) candidates of every question.
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
    state, cids = server_state(server), list(server.runtime.client_ids)
    prompts = list(server.world.queries["prompt"])
    questions, G, Q = [prompts[i] for i in q_idx], cfg.num_generations, len(q_idx)
    official = args.group_reward == "official"
    C = G * M if official else G  # candidates per question

    # 1. line 3, eq. 2: G candidates ŷ ~ π_θg(·|x_s) for each question (official: G·M, a block per expert)
    rollouts = sample_candidates(server.policy, questions, C, candidate_seed)
    candidates = [rollouts.completions[i * C:(i + 1) * C] for i in range(Q)]  # [Q][C]
    if official:
        # 2–4. the official protocol asks no competence: each question's M experts were drawn at random once
        neighbours, n_asked, failed = np.zeros((Q, 0), dtype=np.int64), 0, []
        avail_idx = np.array([cids.index(c) for c in available], dtype=np.int64)  # [K']
        competence = np.zeros((Q, 0))
        drawn = official_experts(server, M)[np.asarray(q_idx)]  # [Q, M] expert j scores block j
        # a client dropped this round keeps its place (its block is generated, gets no score, zero advantage)
        experts = np.where(np.isin(drawn, avail_idx), drawn, -1)  # [Q, M]
    elif args.selection == "random":
        # 2–4. the control arm: M distinct available clients uniformly per question, no competence asked
        neighbours, n_asked, failed = np.zeros((Q, 0), dtype=np.int64), 0, []
        avail_idx = np.array([cids.index(c) for c in available], dtype=np.int64)  # [K']
        competence, experts = np.zeros((Q, 0)), random_experts(cfg.seed, round, step, avail_idx, M, Q)  # [Q, M']
    else:
        # 2. lines 4–5, eq. 5: the L nearest auxiliary exemplars G(x_s)
        neighbours = nearest_exemplars(state.query_emb[q_idx], state.aux_emb, L)  # [Q, L]
        # 3. lines 6–10: competence on G(x_s), asked only for cells never measured (the running estimate)
        n_asked, failed = ask_competence(server, round, np.unique(neighbours), available)
        available = [c for c in available if c not in {f["client"] for f in failed}]
        # 4. line 11, eq. 6: Top-M experts among the available clients
        avail_idx = np.array([cids.index(c) for c in available], dtype=np.int64)  # [K']
        competence, experts = choose_experts(state.cache, neighbours, avail_idx, M)  # [Q, K'], [Q, M]
    # 5. lines 12–17: ⟨x_s, ŷ⟩ to each expert (official: its own block); r_k^s back (gate λ_k on the client)
    scorers, scored, scores, fail = collect_scores(server, round, step, questions, candidates, experts,
                                                   blocks=official)
    # 6. lines 18–20, eqs. 8–9: one advantage per candidate; the format reward of Remark 1 by the server
    fmt = np.asarray(format_reward(rollouts.prompts, rollouts.completions), dtype=np.float64)  # [Q·C]
    fmt = fmt.reshape(Q, C)  # [Q, C]
    consensus, combined, adv = advantages_from_scores(scores, fmt, args, scored)  # [Q, C] each
    # 7. line 21: the policy-gradient step on θ_g with those advantages
    diag = policy_step(server, optimizer, rollouts, combined, adv) if update else None
    return StepTrace(round, step, cids, np.asarray(q_idx), questions, candidates, neighbours, n_asked, avail_idx,
                     competence, experts, scorers, scored, scores, fmt, consensus, combined, adv, diag, failed + fail)


# -- one round -------------------------------------------------------------------------------------------------------
def run_round(server, round: int) -> dict:
    """One FedGRPO round: τ = ``local_steps`` calls of :func:`server_step`, Q = :func:`questions_per_step` each."""
    cfg, policy = server.config, server.policy
    # line 1 (and line 4 for all of D_s): once per run; the official protocol selects no experts by similarity
    state = server_state(server) if cfg.fedgrpo.group_reward == "official" else ensure_embeddings(server)
    policy.set_state(GLOBAL, server.global_state)
    optimizer = torch.optim.Adam(server_parameters(server), lr=cfg.learning_rate)
    if not cfg.reset_optimizer and state.optimizer_state is not None:
        optimizer.load_state_dict(_copy_optimizer_state(state.optimizer_state))

    available, traces = server.participants(round), []  # the experts are chosen among the round's participants
    for step in range(cfg.local_steps):
        q_idx = sample_questions(cfg, round, step, len(server.world.queries))  # line 3: x_s ~ D_s
        seed = seeding.stream_seed("fedgrpo/candidates", cfg.seed, round, step)
        traces.append(server_step(server, round, step, q_idx, seed, available, optimizer=optimizer))
        dropped = {f["client"] for f in traces[-1].failed}  # a client that fails sits out the rest of the round
        available = [c for c in available if c not in dropped]

    for p in (p for group in optimizer.param_groups for p in group["params"]):
        p.grad = None
        if cfg.fedgrpo.server_update == "full":
            p.requires_grad_(False)  # the base is frozen again between rounds
    state.optimizer_state = None if cfg.reset_optimizer else _copy_optimizer_state(optimizer.state_dict())
    server.global_state = policy.get_state(GLOBAL)

    metrics = {"server": mean_over_steps([step_metrics(t) for t in traces])}
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


def step_metrics(trace: StepTrace) -> dict:
    """The server's view of one step: the experts' rewards, the advantages and the GRPO step's diagnostics."""
    Q = trace.format.shape[0]
    disagree = [float(np.abs(group_relative_rewards(r)).mean())  # eq. 9 taken literally
                for r, idx in zip(trace.scores, trace.scored) if len(r) and (idx == idx[0]).all()]
    flat_scores = [row for s in trace.scores for row in s]
    diag = trace.grpo or {}
    return dict(
        reward_mean=_mean([row.mean() for row in flat_scores]),
        format=float(trace.format.reshape(-1).mean()),
        disagreement=_mean(disagree),
        frac_zero_adv=float(np.mean([np.all(trace.advantages[i] == 0) for i in range(Q)])),
        **{k: diag.get(k, float("nan")) for k in ("loss", "clip_fraction", "kl", "completion_length")},
        competence_queries=float(trace.competence_queries),
    )


def client_metrics(traces: list[StepTrace], cid: str) -> dict:
    """What the server saw of client ``cid`` this round: mean r_k^p, questions scored, mean score."""
    k = traces[0].client_ids.index(cid)
    competence = [float(t.competence[:, a].mean()) for t in traces if t.competence.size  # none asked: official
                  for a in np.flatnonzero(t.available == k)]
    scores = [float(np.mean(row)) for t in traces for who, rows in zip(t.scorers, t.scores)
              for j, row in zip(who, rows) if j == k]
    return dict(competence=_mean(competence), selected=float(len(scores)), score_mean=_mean(scores))
