"""Partitioning the private pool over K clients: IID, Dirichlet over topics, pathological, equal-size."""

from __future__ import annotations

import warnings

import datasets
import numpy as np

PARTITIONS = ("iid", "dirichlet", "pathological")


def partition(ds: datasets.Dataset, num_clients: int, how: str = "dirichlet", alpha: float = 0.5,
              topics_per_client: int = 2, equal_size: bool = False, seed: int = 0,
              min_size: int = 10) -> list[datasets.Dataset]:
    """Split ``ds`` (rows with a ``topic`` column) into ``num_clients`` = K private datasets.

    Args:
        how: ``"iid"``, ``"dirichlet"`` (topic mixture ~ Dir(alpha) per client) or ``"pathological"``
            (``topics_per_client`` topics each; a topic no client is assigned is left out, as in flwr-datasets).
        alpha: Dirichlet concentration (small = heterogeneous).
        equal_size: every client gets exactly ⌊|ds| / K⌋ rows (``"dirichlet"`` and ``"iid"``).
        seed, min_size: partition seed; smallest client the Dirichlet partitioner accepts (it resamples).

    Returns:
        K datasets, client order fixed by the seed.
    """
    from flwr_datasets.partitioner import DirichletPartitioner, IidPartitioner, PathologicalPartitioner

    if how not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}, got {how!r}")
    if num_clients < 1 or num_clients > len(ds):
        raise ValueError(f"num_clients must be in [1, {len(ds)}] for a pool of {len(ds)} rows, got {num_clients}")
    n_topics = len(set(ds["topic"]))
    if equal_size and how != "pathological":
        return equal_size_dirichlet(ds, num_clients, alpha if how == "dirichlet" else 1e6, seed)
    if how == "iid":
        p = IidPartitioner(num_partitions=num_clients)
    elif how == "dirichlet":
        if alpha <= 0:
            raise ValueError(f"dirichlet alpha must be > 0, got {alpha}")
        p = DirichletPartitioner(num_partitions=num_clients, partition_by="topic", alpha=alpha,
                                 min_partition_size=min(min_size, len(ds) // num_clients), seed=seed)
    else:
        if not 1 <= topics_per_client <= n_topics:
            raise ValueError(f"topics_per_client must be in [1, {n_topics}], got {topics_per_client}")
        p = PathologicalPartitioner(num_partitions=num_clients, partition_by="topic",
                                    num_classes_per_partition=topics_per_client,
                                    class_assignment_mode="first-deterministic", seed=seed)
    if how == "dirichlet":
        return _dirichlet_with_redraws(p, ds, num_clients, alpha, seed)
    return _load_all(p, ds, num_clients)


REDRAWS = 20
"""Fresh seeds tried after flwr-datasets' Dirichlet partitioner gives up (it makes 10 attempts per seed)."""


def _load_all(p, ds: datasets.Dataset, num_clients: int) -> list[datasets.Dataset]:
    p.dataset = ds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flwr-datasets warns about its own defaults on every load
        return [p.load_partition(i) for i in range(num_clients)]


def _dirichlet_with_redraws(p, ds: datasets.Dataset, num_clients: int, alpha: float, seed: int):
    """flwr-datasets' Dirichlet partitioner, redrawn with derived seeds when it cannot meet the minimum size."""
    from flwr_datasets.partitioner import DirichletPartitioner

    for r in range(REDRAWS + 1):
        q = p if r == 0 else DirichletPartitioner(
            num_partitions=num_clients, partition_by="topic", alpha=alpha,
            min_partition_size=p._min_partition_size, seed=seed + 1_000_003 * r)
        try:
            return _load_all(q, ds, num_clients)
        except ValueError as e:
            if "max number of attempts" not in str(e):
                raise
    raise ValueError(f"a Dirichlet(alpha={alpha}) partition of {len(ds)} rows over {num_clients} clients could not "
                     f"give every client at least {p._min_partition_size} rows in {REDRAWS + 1} seeds: raise "
                     f"dirichlet_alpha, use fewer clients, or set equal_size")


def equal_size_dirichlet(ds: datasets.Dataset, num_clients: int, alpha: float, seed: int) -> list[datasets.Dataset]:
    """Each client draws exactly ⌊|ds|/K⌋ rows, topic by topic, from its own Dir(alpha) mixture."""
    rng = np.random.default_rng(seed)
    topics = np.asarray(ds["topic"])
    names = sorted(set(topics))
    pools = {t: list(rng.permutation(np.flatnonzero(topics == t))) for t in names}
    size = len(ds) // num_clients
    mixtures = rng.dirichlet([alpha] * len(names), size=num_clients)  # [K, n_topics]
    out = []
    for k in range(num_clients):
        chosen: list[int] = []
        while len(chosen) < size:
            avail = np.array([len(pools[t]) > 0 for t in names], dtype=float)
            p = mixtures[k] * avail
            p = p / p.sum() if p.sum() > 0 else avail / avail.sum()
            t = names[rng.choice(len(names), p=p)]
            chosen.append(int(pools[t].pop()))
        out.append(ds.select(sorted(chosen)))
    return out


def topic_matrix(parts: list[datasets.Dataset], topics=None) -> tuple[list[str], np.ndarray]:
    """(topic names, counts [K, n_topics]) — the data behind the heterogeneity bubble plot."""
    names = sorted(topics or {t for p in parts for t in p["topic"]})
    counts = np.array([[sum(1 for x in p["topic"] if x == t) for t in names] for p in parts])
    return names, counts
