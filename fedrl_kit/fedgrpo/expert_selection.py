"""FedGRPO's competence-based expert selection and dual-evaluation gate, on plain arrays.
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = [
    "l2_normalise",
    "nearest_exemplars",
    "select_experts",
    "CompetenceCache",
    "dual_evaluation_gate",
    "expert_hit_rate",
    "random_selection",
    "topic_competence",
    "GATE_MODES",
]

GATE_MODES = ("with_gt", "no_gt")
"""Settings of §4.1: some clients hold ground-truth answers (``with_gt``) or none do (``no_gt``)."""


def _check_int(value, name: str, low: int, high: int) -> int:
    """Returns ``value`` as an int, or raises ValueError naming ``name`` and ``[low, high]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    if not low <= int(value) <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return int(value)


def _finite_float_array(x, name: str, ndims: tuple[int, ...]) -> np.ndarray:
    """Returns ``x`` as a float64 array with one of ``ndims`` dimensions and finite entries."""
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim not in ndims:
        raise ValueError(f"{name} must have {' or '.join(map(str, ndims))} dimensions, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no nan or inf)")
    return arr


def _index_array(indices, name: str, size: int) -> np.ndarray:
    """Returns ``indices`` as a 1-D int64 array of values in ``[0, size - 1]``."""
    arr = np.asarray(indices)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-D sequence of integers in [0, {size - 1}], got {indices!r}")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        raise ValueError(f"{name} must hold integers in [0, {size - 1}], got min {arr.min()} max {arr.max()}")
    return arr.astype(np.int64)


def l2_normalise(x) -> np.ndarray:
    """Scales each row to unit ``ℓ2`` norm (Algorithm 1 line 1, the embeddings ``z = φ(x)``).

    Args:
        x: embeddings, ``[d]`` or ``[N, d]``; finite.

    Returns:
        float64 array of the same shape; a zero row stays zero.
    """
    arr = _finite_float_array(x, "x", (1, 2))  # [d] or [N, d]
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)  # [1] or [N, 1]
    return arr / np.where(norms > 0.0, norms, 1.0)  # [d] or [N, d]


def nearest_exemplars(query_emb, aux_emb, L: int) -> np.ndarray:
    """The ``L`` auxiliary exemplars most similar to the query: ``G(x_s)`` of eq. 5.

    By cosine similarity of the ℓ2-normalised embeddings, highest first; exact ties go to the lower index.

    Args:
        query_emb: the question embedding ``z_s = φ(x_s)``, ``[d]``, or a batch ``[Q, d]``.
        aux_emb: the auxiliary embeddings ``z_{p,j}``, ``[N, d]`` with ``N = |D_p|``.
        L: neighbourhood size, ``1 ≤ L ≤ N`` (the paper uses ``L = 20`` of ``N = 100``).

    Returns:
        int64 indices into ``aux_emb``: ``[L]`` for a single query, ``[Q, L]`` for a batch, most similar first.
    """
    aux = _finite_float_array(aux_emb, "aux_emb", (2,))  # [N, d]
    query = _finite_float_array(query_emb, "query_emb", (1, 2))  # [d] or [Q, d]
    single = query.ndim == 1
    queries = query[None, :] if single else query  # [Q, d]
    if queries.shape[1] != aux.shape[1]:
        raise ValueError(
            f"query_emb has dimension d={queries.shape[1]} but aux_emb has d={aux.shape[1]}; they must match"
        )
    n_aux = aux.shape[0]
    if n_aux == 0:
        raise ValueError("aux_emb must hold at least one auxiliary exemplar (N >= 1)")
    L = _check_int(L, "L", 1, n_aux)
    sims = l2_normalise(queries) @ l2_normalise(aux).T  # [Q, N] cosine similarities
    # A stable sort on -sim keeps equal similarities in index order: ties go to the lower index.
    order = np.argsort(-sims, axis=1, kind="stable")[:, :L]  # [Q, L]
    return order[0] if single else order


def select_experts(competence, M: int) -> np.ndarray:
    """The ``M`` most competent clients: ``C(x_s) = Top-M_k r_k^p(x_s)``, eq. 6.

    Exact ties go to the lower client index (a stable sort), so the choice is deterministic.

    Args:
        competence: ``r_k^p`` for the ``K`` clients, ``[K]``, or a batch ``[Q, K]``; finite
            (measure unknown cells first, see :meth:`CompetenceCache.known`).
        M: experts per question, ``1 ≤ M ≤ K`` (the paper uses ``M = 2``).

    Returns:
        int64 client indices, ``[M]`` (or ``[Q, M]``), most competent first.
    """
    comp = _finite_float_array(competence, "competence", (1, 2))  # [K] or [Q, K]
    single = comp.ndim == 1
    comps = comp[None, :] if single else comp  # [Q, K]
    n_clients = comps.shape[1]
    if n_clients == 0:
        raise ValueError("competence must hold at least one client (K >= 1)")
    M = _check_int(M, "M", 1, n_clients)
    order = np.argsort(-comps, axis=1, kind="stable")[:, :M]  # [Q, M]
    return order[0] if single else order


class CompetenceCache:
    """Running estimate of each client's correctness on each auxiliary item (the confidence graph).

    Args:
        n_clients: ``K``, the number of clients, ``≥ 1``.
        n_items: ``N = |D_p|``, the number of auxiliary items, ``≥ 1``.
    """

    def __init__(self, n_clients: int, n_items: int):
        self.n_clients = _check_int(n_clients, "n_clients", 1, np.iinfo(np.int32).max)
        self.n_items = _check_int(n_items, "n_items", 1, np.iinfo(np.int32).max)
        self._sum = np.zeros((self.n_clients, self.n_items), dtype=np.float64)  # [K, N]
        self._count = np.zeros((self.n_clients, self.n_items), dtype=np.int64)  # [K, N]

    @property
    def counts(self) -> np.ndarray:
        """How many flags each cell has seen, ``[K, N]`` int64 (a copy)."""
        return self._count.copy()

    def update(self, client: int, item_indices, correct_flags) -> None:
        """Adds client ``k``'s correctness on some auxiliary items to the running means.

        Args:
            client: the client index ``k``, in ``[0, K - 1]``.
            item_indices: auxiliary item indices ``j``, ``[n]``, each in ``[0, N - 1]``.
            correct_flags: correctness of client ``k`` on those items, ``[n]``, bools or numbers
                in ``[0, 1]`` (1 = the client's answer to ``x_{p,j}`` is correct).
        """
        client = _check_int(client, "client", 0, self.n_clients - 1)
        items = _index_array(item_indices, "item_indices", self.n_items)  # [n]
        flags = np.asarray(correct_flags, dtype=np.float64).reshape(-1)  # [n]
        if flags.shape != items.shape:
            raise ValueError(
                f"correct_flags must have one entry per item index: got {flags.size} flags for {items.size} items"
            )
        if not np.all((flags >= 0.0) & (flags <= 1.0)):
            raise ValueError("correct_flags must be in [0, 1] (bools, 0/1, or a fraction correct)")
        np.add.at(self._sum[client], items, flags)
        np.add.at(self._count[client], items, 1)

    def known(self, client: int, items) -> np.ndarray:
        """Which of these cells of client ``k`` have been measured at least once.

        Args:
            client, items: the client index ``k``; auxiliary item indices ``[n]``.

        Returns:
            bool mask ``[n]``; the method asks client ``k`` only about ``items[~mask]``.
        """
        client = _check_int(client, "client", 0, self.n_clients - 1)
        idx = _index_array(items, "items", self.n_items)  # [n]
        return self._count[client, idx] > 0  # [n]

    def competence(self, client_ids, item_indices) -> np.ndarray:
        """``r_k^p(x_s)`` for the given clients on the neighbourhood ``G(x_s)`` (Algorithm 1 line 8).

        Args:
            client_ids: client indices, ``[K']`` (``None`` means all ``K`` clients in order).
            item_indices: the ``L`` auxiliary items of ``G(x_s)``, ``[L]``, ``L ≥ 1``.

        Returns:
            float64 ``[K']``: for each client, the mean over the ``L`` items of its cached
            running accuracy, in ``[0, 1]``.
        """
        if client_ids is None:
            clients = np.arange(self.n_clients)  # [K]
        else:
            clients = _index_array(client_ids, "client_ids", self.n_clients)  # [K']
        items = _index_array(item_indices, "item_indices", self.n_items)  # [L]
        if items.size == 0:
            raise ValueError("item_indices must hold at least one auxiliary item (L >= 1)")
        counts = self._count[np.ix_(clients, items)]  # [K', L]
        if np.any(counts == 0):
            k_pos, l_pos = np.nonzero(counts == 0)
            missing = sorted({(int(clients[a]), int(items[b])) for a, b in zip(k_pos, l_pos)})
            raise ValueError(
                f"competence needs every (client, item) cell measured; unmeasured cells: {missing[:10]}"
                + (" ..." if len(missing) > 10 else "")
            )
        means = self._sum[np.ix_(clients, items)] / counts  # [K', L]
        return means.mean(axis=1)  # [K']

    def as_matrix(self) -> np.ndarray:
        """The confidence graph as a matrix: running accuracy per (client, item), ``[K, N]``.

        Returns:
            float64 ``[K, N]``; ``nan`` where a cell has never been measured.
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            out = self._sum / self._count  # [K, N]
        out[self._count == 0] = np.nan
        return out


def dual_evaluation_gate(has_ground_truth: bool, mode: str) -> str:
    """Picks client ``k``'s evaluation pathway ``λ_k(x_s)`` (Algorithm 1 line 14).

    Args:
        has_ground_truth: whether ``x_s`` (or a paraphrase) is in client ``k``'s data ``D_k`` with a trusted answer.
        mode: the experiment setting of §4.1: ``"with_gt"`` (AE where the client has the answer, ME elsewhere) or
            ``"no_gt"`` (§4.3: ME always, even if the client has it).

    Returns:
        ``"AE"`` (``λ_k = 1``) or ``"ME"`` (``λ_k = 0``).
    """
    if mode not in GATE_MODES:
        raise ValueError(f"mode must be one of {GATE_MODES}, got {mode!r}")
    if not isinstance(has_ground_truth, (bool, np.bool_)):
        raise ValueError(f"has_ground_truth must be a bool, got {has_ground_truth!r}")
    if mode == "no_gt":
        return "ME"
    return "AE" if bool(has_ground_truth) else "ME"


def expert_hit_rate(selected, client_topics: Sequence[set], query_topics: Sequence) -> float:
    """Fraction of chosen experts whose private data holds the query's topic.

    Args:
        selected: expert indices ``C(x_s)`` per query, ``[Q, M]`` (``[M]`` for one query).
        client_topics: for each of the ``K`` clients, the set of topics in its data ``D_k``.
        query_topics: the topic of each of the ``Q`` queries.

    Returns:
        ``(1 / (Q·M)) Σ_q Σ_{k ∈ C(x_q)} 1[topic(x_q) ∈ topics(D_k)]``, in ``[0, 1]``.
    """
    sel = np.asarray(selected)
    if sel.ndim == 1:
        sel = sel[None, :]  # [1, M]
    n_clients = len(client_topics)
    if sel.ndim != 2 or sel.size == 0 or sel.dtype.kind not in "iu":
        raise ValueError(f"selected must be a non-empty [Q, M] array of client indices, got shape {sel.shape}")
    if sel.min() < 0 or sel.max() >= n_clients:
        raise ValueError(f"selected must hold client indices in [0, {n_clients - 1}]")
    if len(query_topics) != sel.shape[0]:
        raise ValueError(f"query_topics must have one topic per query: got {len(query_topics)} for Q={sel.shape[0]}")
    hits = [
        query_topics[q] in client_topics[int(k)]
        for q in range(sel.shape[0])
        for k in sel[q]
    ]
    return float(np.mean(hits))


def random_selection(K: int, M: int, Q: int, rng) -> np.ndarray:
    """The official code's expert choice: ``M`` distinct clients uniformly at random per query.

    Args:
        K, M, Q: clients (≥ 1), experts per query (``1 ≤ M ≤ K``), queries (≥ 0).
        rng: a ``np.random.Generator`` or an int seed.

    Returns:
        int64 ``[Q, M]``; each row holds ``M`` distinct client indices.
    """
    K = _check_int(K, "K", 1, np.iinfo(np.int32).max)
    M = _check_int(M, "M", 1, K)
    Q = _check_int(Q, "Q", 0, np.iinfo(np.int32).max)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator or an int seed, got {type(rng).__name__}")
    out = np.empty((Q, M), dtype=np.int64)  # [Q, M]
    for q in range(Q):
        out[q] = rng.choice(K, size=M, replace=False)
    return out


def topic_competence(matrix, item_topics: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The confidence graph summarised by topic: each client's mean cell over the items of a topic.

    Args:
        matrix, item_topics: :meth:`CompetenceCache.as_matrix` ``[K, N]`` (nan = never measured); each item's topic.

    Returns:
        (sorted topic names ``[T]``, float64 ``[K, T]``; nan where no item of the topic was measured).
    """
    m = np.asarray(matrix, dtype=np.float64)  # [K, N]
    if m.ndim != 2 or m.shape[1] != len(item_topics):
        raise ValueError(f"item_topics must have one topic per column of matrix ({m.shape}), got {len(item_topics)}")
    names = sorted(set(item_topics))
    topics = np.asarray(item_topics)
    out = np.full((m.shape[0], len(names)), np.nan)  # [K, T]
    for t, name in enumerate(names):
        cols = m[:, topics == name]  # [K, n_t]
        seen = np.isfinite(cols)
        with np.errstate(invalid="ignore"):
            out[:, t] = np.where(seen.any(axis=1), np.nansum(cols, axis=1) / np.maximum(seen.sum(axis=1), 1), np.nan)
    return names, out
