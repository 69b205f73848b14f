"""FedGRPO's ``D_s``: which questions the server trains on, which client holds each, and whose label exists.
Details: docs/fedgrpo.md, "Module notes".
"""

from __future__ import annotations

from dataclasses import dataclass

import datasets
import numpy as np

from fedrl_kit import seeding


@dataclass(frozen=True)
class QueryPool:
    """``D_s`` as the simulator knows it.

    Attributes:
        rows: ``D_s`` with every column (prompt, answer, topic, …), ``[N_s]`` rows; the server gets the prompts only.
        owner: ``[N_s]`` the client index holding each question (-1: no client, ``queries="public"``).
        labelled: ``[N_s]`` whether a client holds the question with its label (the AE gate's input).
        client_data: for each client, its labelled private data ``D_k`` (θ_k's SFT, competence, AE).
        client_held: for each client, extra ``(x, y)`` it holds for the AE check only (``queries="public"``), or None.
    """

    rows: datasets.Dataset
    owner: np.ndarray
    labelled: np.ndarray
    client_data: list
    client_held: list

    def server_view(self) -> datasets.Dataset:
        """What the server holds of ``D_s``: the questions' texts, no answer, topic or owner."""
        return datasets.Dataset.from_dict({"prompt": list(self.rows["prompt"])})


def pool_labels(n: int, fraction: float, seed: int) -> np.ndarray:
    """``[n]`` bool: which questions of the pool have their label on their owner (stream ``fedgrpo/labels``)."""
    return seeding.rng("fedgrpo/labels", seed).random(n) < fraction  # [n]


def build_query_pool(world, partitions: list, args, seed: int) -> QueryPool:
    """``D_s``, its owners and labels, and each client's labelled data, for ``config.fedgrpo`` = ``args``.

    Args:
        world: the run's world (``train`` is partitioned; ``public`` is the legacy ``D_s``).
        partitions: ``run.partitions``, the clients' shares of the training pool.
        args: :class:`~fedrl_kit.fedgrpo.args.FedGRPOArgs`.
        seed: the run seed.
    """
    K = len(partitions)
    if args.queries == "public":
        from fedrl_kit.fedgrpo.client import assign_ground_truth

        public = world.public
        owner = np.full(len(public), -1, dtype=np.int64)
        held: list = [None] * K
        if args.mode == "with_gt" and args.gt_fraction > 0:
            for k, idx in enumerate(assign_ground_truth(public, partitions, args.gt_fraction, seed)):
                owner[idx] = k
                held[k] = public.select(idx) if idx else None
        return QueryPool(public, owner, owner >= 0, list(partitions), _all_hold(public, owner >= 0, args, held))

    pool = datasets.concatenate_datasets(list(partitions))  # the questions every baseline trains on
    owner = np.concatenate([np.full(len(p), k, dtype=np.int64) for k, p in enumerate(partitions)])  # [N]
    has = pool_labels(len(pool), args.gt_fraction, seed)  # [N]
    starts = np.concatenate([[0], np.cumsum([len(p) for p in partitions])])  # [K + 1]
    client_data = []
    for k, part in enumerate(partitions):
        mine = np.flatnonzero(has[starts[k]:starts[k + 1]])
        if not mine.size:
            raise ValueError(f"client_{k} holds no labelled question (fedgrpo.gt_fraction = {args.gt_fraction} of "
                             f"its {len(part)}): its evaluator has nothing to train on; raise gt_fraction")
        client_data.append(part.select(mine))
    if args.mode == "no_gt":  # D_s = the questions whose labels no client holds
        keep = np.flatnonzero(~has)
        rows, owner, labelled = pool.select(keep), owner[keep], np.zeros(keep.size, dtype=bool)
    else:
        rows, labelled = pool, has
    if len(rows) == 0:
        raise ValueError(f"D_s is empty (fedgrpo.mode = {args.mode!r}, gt_fraction = {args.gt_fraction}, "
                         f"{len(pool)} questions in the pool)")
    return QueryPool(rows, owner, labelled, client_data, _all_hold(rows, labelled, args, [None] * K))


def _all_hold(rows, labelled: np.ndarray, args, held: list) -> list:
    """``ae_holders = "all"`` (with_gt): every client also holds every labelled D_s question with its answer, for the
    AE check only (the official trainer's setting); otherwise ``held`` unchanged."""
    if args.mode != "with_gt" or args.holders() != "all":
        return held
    every = rows.select(np.flatnonzero(labelled))
    return [every] * len(held)
