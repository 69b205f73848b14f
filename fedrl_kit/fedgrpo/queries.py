"""FedGRPO's ``D_s``: which questions the server trains on, which client holds each, and whose label exists.

Simulation side: :func:`build_query_pool` is called while the federation is built
(:func:`fedrl_kit.fedgrpo.method.build_clients`). The server receives only the questions' texts
(:meth:`QueryPool.server_view`, ``server.world.queries``); who holds which question and label stays
with the clients (their gate) and with the simulator (``truth.fact("queries")``, for diagnostics).

``fedgrpo.queries = "train"`` (default, the paper's §4.1 setting): ``D_s`` is the training pool
that the run's partition spreads over the clients — the same questions Central-GRPO, FedAvg-GRPO
(= Fedpetuning+GRPO) and Fedpetuning+SFT train on (the union of ``run.partitions``, in client
order). Each question belongs to exactly one client, its *owner*. Per question, a seeded draw
(stream ``fedgrpo/labels``) decides with probability ``fedgrpo.gt_fraction`` whether its label
exists — on its owner, who then holds ``(x, y)``:

- each client's private labelled data ``D_k`` is its labelled questions: θ_k's SFT (and its
  competence) uses them, and its gate answers AE on exactly these questions;
- ``mode="with_gt"`` (§4.2): ``D_s`` is the whole pool; a selected expert uses AE on a question iff
  it is the question's owner and the label exists, ME otherwise (default ``gt_fraction = 1``: every
  question's owner holds its label, the other experts score it with their models);
- ``ae_holders="all"`` (the official trainer's setting, and the official protocol's default): every
  client holds every labelled question's answer, so every selected expert scores it by AE; θ_k still
  trains on ``D_k`` only;
- ``mode="no_gt"`` (§4.3, "none of the K clients possess the ground-truth label"): ``D_s`` is the
  unlabelled share only and the labelled share only trains the evaluators (``0 < gt_fraction < 1``;
  the official code trains its reward models on a 2/3 split of the data, so 2/3 is the natural value).

``fedgrpo.queries = "public"`` (the setting before this module): ``D_s`` is ``world.public`` (held-out
prompts no client holds), θ_k trains on the client's whole partition, and in ``with_gt`` mode
:func:`~fedrl_kit.fedgrpo.client.assign_ground_truth` hands each public question, with probability
``gt_fraction`` (0.5 in the stored results), to one client drawn by its topic holdings (for AE only).
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
    """``[n]`` bool: which questions of the training pool have their label on their owner (stream ``fedgrpo/labels``).

    Each question independently with probability ``fraction`` (1: all, 0: none).
    """
    return seeding.rng("fedgrpo/labels", seed).random(n) < fraction  # [n]


def build_query_pool(world, partitions: list, args, seed: int) -> QueryPool:
    """``D_s``, its owners and labels, and each client's labelled data, for ``config.fedgrpo`` = ``args``.

    Args:
        world: the run's world (``train`` is partitioned; ``public`` is the legacy ``D_s``).
        partitions: ``run.partitions``, the clients' shares of the training pool.
        args: :class:`~fedrl_kit.fedgrpo.args.FedGRPOArgs`.
        seed: the run seed.

    Raises:
        ValueError: when ``D_s`` comes out empty or a client is left without labelled data.
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
