"""PubSwap's response-aggregation rules for one public prompt: Random and Balanced (and a no-swap control).
Details: docs/pubswap.md, "Module notes".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = [
    "ResponsePool",
    "SwapResult",
    "random_swap",
    "balanced_swap",
    "no_swap",
    "SWAP_RULES",
]


def _as_bool_matrix(correct, name: str) -> np.ndarray:
    """Returns ``correct`` as a bool array, refusing values other than 0/1/True/False."""
    arr = np.asarray(correct)  # [N, K]
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind not in "iuf" or not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must hold booleans (or 0/1), got dtype {arr.dtype}")
    return arr.astype(bool)  # [N, K]


@dataclass(frozen=True)
class ResponsePool:
    """The responses the N clients generated for ONE public prompt x.

    Attributes:
        texts: ``[N][K]`` nested list; ``texts[n][k]`` is client n's k-th response to x.
        correct: bool array ``[N, K]``; whether each response earned the verifiable reward.
            Client n's count of correct responses is ``c_n = correct[n].sum()``.
    """

    texts: list[list[str]]
    """``[N][K]`` response texts, client-major"""
    correct: np.ndarray
    """``[N, K]`` bool, True where the response is correct"""

    def __post_init__(self) -> None:
        correct = _as_bool_matrix(self.correct, "correct")  # [N, K]
        if correct.ndim != 2 or correct.shape[0] < 1 or correct.shape[1] < 1:
            raise ValueError(
                f"correct must have shape [N, K] with N >= 1 and K >= 1, got {correct.shape}"
            )
        n_clients, k = correct.shape
        if len(self.texts) != n_clients:
            raise ValueError(
                f"texts must have N = {n_clients} rows (one per client, as correct), "
                f"got {len(self.texts)}"
            )
        for n, row in enumerate(self.texts):
            if isinstance(row, str) or len(row) != k:
                raise ValueError(
                    f"texts[{n}] must be a list of K = {k} responses (as correct[{n}]), got {row!r:.80}"
                )
        correct = correct.copy()  # [N, K]; the pool owns its array
        correct.setflags(write=False)
        object.__setattr__(self, "texts", [list(row) for row in self.texts])
        object.__setattr__(self, "correct", correct)

    @property
    def num_clients(self) -> int:
        """N, the number of clients."""
        return self.correct.shape[0]

    @property
    def num_responses(self) -> int:
        """K, the responses each client generated for the prompt."""
        return self.correct.shape[1]

    @property
    def num_correct(self) -> np.ndarray:
        """``c_n`` for every client, int array ``[N]``."""
        return self.correct.sum(axis=1)  # [N]


@dataclass(frozen=True)
class SwapResult:
    """The K-response group each client trains on after a swap rule, with its provenance.

    Attributes:
        rule: ``"random"``, ``"balanced"`` or ``"none"`` (:func:`no_swap`).
        texts: ``[N][K]`` nested list; ``texts[n]`` is client n's final group for the prompt.
        correct: bool array ``[N, K]``; correctness of each final response.
        source: int array ``[N, K, 2]``; ``source[n, k] = (j, k')`` says slot k of client n's
            group is response ``k'`` of client ``j`` in the pool (``j == n``: its own).
        replacement_fraction: float array ``[N]``; ``α_n(x) = M_n / K``, the fraction of client
            n's group that came from other clients (appendix A.2).
        own_correct: int array ``[N]``; ``c_n``, each client's correct count before the swap.
    """

    rule: str
    """which rule built the groups: ``"random"``, ``"balanced"`` or ``"none"``"""
    texts: list[list[str]]
    """``[N][K]`` final response texts per client"""
    correct: np.ndarray
    """``[N, K]`` bool correctness of the final responses"""
    source: np.ndarray
    """``[N, K, 2]`` int (client index, response index) each final response came from"""
    replacement_fraction: np.ndarray
    """``[N]`` α_n(x): fraction of client n's K responses swapped in from other clients"""
    own_correct: np.ndarray
    """``[N]`` c_n: client n's own correct responses before the swap"""

    @property
    def replaced(self) -> np.ndarray:
        """Bool ``[N, K]``: True where a slot holds another client's response."""
        clients = np.arange(self.source.shape[0])[:, None]  # [N, 1]
        return self.source[:, :, 0] != clients  # [N, K]

    @property
    def num_replaced(self) -> np.ndarray:
        """``M_n`` for every client, int array ``[N]``."""
        return self.replaced.sum(axis=1)  # [N]

    def to_table(self, client: int) -> list[dict]:
        """One row per slot of a client's final group, for display in the notebook.

        Args:
            client: the client index n, ``0 <= n < N``.

        Returns:
            K dicts: ``slot``, ``text``, ``correct``, ``from_client``, ``from_response``, ``replaced``.
        """
        n_clients = self.source.shape[0]
        if not isinstance(client, (int, np.integer)) or not 0 <= client < n_clients:
            raise ValueError(f"client must be an int in [0, {n_clients}), got {client!r}")
        replaced = self.replaced[client]  # [K]
        return [
            {
                "slot": k,
                "text": self.texts[client][k],
                "correct": bool(self.correct[client, k]),
                "from_client": int(self.source[client, k, 0]),
                "from_response": int(self.source[client, k, 1]),
                "replaced": bool(replaced[k]),
            }
            for k in range(len(self.texts[client]))
        ]


def _own_groups(n_clients: int, K: int) -> np.ndarray:
    """``source`` of every client keeping its own K responses: ``[N, K, 2]`` (client, response)."""
    return np.stack(np.meshgrid(np.arange(n_clients), np.arange(K), indexing="ij"), axis=-1)


def _check_args(pool: ResponsePool, K: int, rng: np.random.Generator) -> None:
    if not isinstance(pool, ResponsePool):
        raise ValueError(f"pool must be a ResponsePool, got {type(pool).__name__}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)):
        raise ValueError(f"K must be an int, got {K!r}")


def _gather(pool: ResponsePool, source: np.ndarray) -> tuple[list[list[str]], np.ndarray]:
    """Looks up texts and correctness for a ``[N, K, 2]`` array of (client, response) indices."""
    texts = [[pool.texts[j][k] for j, k in row] for row in source.tolist()]  # [N][K]
    correct = pool.correct[source[:, :, 0], source[:, :, 1]]  # [N, K]
    return texts, correct


def _result(rule: str, pool: ResponsePool, source: np.ndarray) -> SwapResult:
    texts, correct = _gather(pool, source)  # [N][K], [N, K]
    clients = np.arange(pool.num_clients)[:, None]  # [N, 1]
    alpha = (source[:, :, 0] != clients).mean(axis=1)  # [N]
    return SwapResult(
        rule=rule,
        texts=texts,
        correct=correct,
        source=source,
        replacement_fraction=alpha,
        own_correct=pool.num_correct,
    )


def random_swap(pool: ResponsePool, K: int, rng: np.random.Generator) -> SwapResult:
    """PubSwap's Random rule (§3.4): one uniform draw of K from the N·K pool, shared by all.

    Args:
        pool: the N clients' responses to one public prompt, ``[N][K_pool]``.
        K, rng: the group size (``1 <= K <= N·K_pool``; the paper: ``K_pool``); the generator of the draw.

    Returns:
        A :class:`SwapResult` whose N rows are identical; ``α_n``: the share from clients other than n.
    """
    _check_args(pool, K, rng)
    n_clients, k_pool = pool.correct.shape
    if not 1 <= K <= n_clients * k_pool:
        raise ValueError(f"K must be in [1, N*K_pool = {n_clients * k_pool}], got {K}")
    flat = rng.choice(n_clients * k_pool, size=K, replace=False)  # [K] indices into the N·K pool
    drawn = np.stack([flat // k_pool, flat % k_pool], axis=-1)  # [K, 2] (client, response)
    source = np.broadcast_to(drawn, (n_clients, K, 2)).copy()  # [N, K, 2] same group for all
    return _result("random", pool, source)


def balanced_swap(pool: ResponsePool, K: int, rng: np.random.Generator) -> SwapResult:
    """PubSwap's Balanced rule (§3.4): top up each client's group to half correct from others.

    Client n with ``c_n`` correct of its K gets ``M_n = min((⌊K/2⌋ − c_n)_+, D_n)`` of the others' ``D_n`` correct ones.

    Args:
        pool: the N clients' responses to one public prompt, ``[N][K]``.
        K, rng: the group size (the pool's per client: Balanced edits each own group); which responses go and come.

    Returns:
        A :class:`SwapResult`; ``α_n(x) = M_n / K ≤ 1/2``.
    """
    _check_args(pool, K, rng)
    n_clients, k_pool = pool.correct.shape
    if K != k_pool:
        raise ValueError(
            f"K must equal the pool's responses per client ({k_pool}) for balanced_swap, got {K}"
        )
    correct = pool.correct  # [N, K]
    c = pool.num_correct  # [N]
    target = K // 2  # ⌊K/2⌋ correct responses per group: the paper's K/2, floored for odd K (our reading)
    source = _own_groups(n_clients, K)  # [N, K, 2]; start from every client's own group
    donor_client, donor_response = np.nonzero(correct)  # [C], [C] all correct responses, client-major
    for n in range(n_clients):
        wanted = max(target - int(c[n]), 0)  # (⌊K/2⌋ − c_n)_+
        if wanted == 0:
            continue
        others = np.flatnonzero(donor_client != n)  # [D_n] indices of correct responses from j ≠ n
        m = min(wanted, others.size)  # M_n; fewer than wanted when the others lack correct ones
        if m == 0:
            continue
        incorrect_slots = np.flatnonzero(~correct[n])  # [K − c_n] ≥ wanted, since c_n < ⌊K/2⌋
        slots = np.sort(rng.choice(incorrect_slots, size=m, replace=False))  # [M_n]
        donors = rng.choice(others, size=m, replace=False)  # [M_n]
        source[n, slots, 0] = donor_client[donors]
        source[n, slots, 1] = donor_response[donors]
    return _result("balanced", pool, source)


def no_swap(pool: ResponsePool, K: int, rng: np.random.Generator) -> SwapResult:
    """The control (not in the paper): every client keeps its own K responses, so its public step is on-policy
    GRPO on the shared public prompt, α_n = 0. ``rng`` is taken for the rules' common signature and not drawn from.
    """
    _check_args(pool, K, rng)
    n_clients, k_pool = pool.correct.shape
    if K != k_pool:
        raise ValueError(f"K must equal the pool's responses per client ({k_pool}) for no_swap, got {K}")
    return _result("none", pool, _own_groups(n_clients, K))


SWAP_RULES: dict[str, Callable[[ResponsePool, int, np.random.Generator], SwapResult]] = {
    "random": random_swap,
    "balanced": balanced_swap,
    "noswap": no_swap,
}
"""The paper's two response-aggregation rules by name, for a config field ``swap_rule``."""
