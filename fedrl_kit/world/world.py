"""The embedded world's splits: clients' private pool, and the server's public, auxiliary and test sets."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import datasets

from fedrl_kit.world.tasks import DEFAULT_TOPICS, DIFFICULTIES, PoolExhausted, generate_problems

HELDOUT_BUCKETS = 4  # one prompt in HELDOUT_BUCKETS is held out


def is_heldout(prompt: str) -> bool:
    """Whether ``prompt`` belongs to the held-out region (stable across machines and seeds)."""
    return int(hashlib.md5(prompt.encode()).hexdigest(), 16) % HELDOUT_BUCKETS == 0


def draw(n: int, seed: int, heldout: bool, topics=DEFAULT_TOPICS, difficulties=DIFFICULTIES,
         exclude=None, with_reasoning: bool = False, generate=generate_problems) -> list[dict]:
    """``n`` distinct problems from the held-out region (``heldout=True``) or from the rest."""
    rows: list[dict] = []
    seen = set(exclude or ())
    attempt = 0
    while len(rows) < n:
        want = 2 * (n - len(rows)) + 8  # about half the candidates fall in the other region
        while True:  # a small pool (one-digit operands: 100 sums) may hold fewer new problems than that: ask for less
            try:
                batch = generate(want, seed * 1000 + attempt, topics, difficulties, exclude=seen,
                                 with_reasoning=with_reasoning)
                break
            except PoolExhausted:
                if want == 1:
                    batch = []
                    break
                want = max(1, want // 2)
        for r in batch:
            if is_heldout(r["prompt"]) == heldout and len(rows) < n:
                rows.append(r)
            seen.add(r["prompt"])
        attempt += 1
        if attempt > 50:
            split = "held-out (n_test + n_public + n_aux)" if heldout else "training (n_train)"
            raise ValueError(f"the embedded world cannot supply {n} distinct {split} problems from topics "
                             f"{tuple(topics)} at difficulties {tuple(difficulties)}: ask for fewer")
    return rows


@dataclass
class World:
    """The data of one federated experiment (all ``datasets.Dataset`` with the common row schema)."""

    train: datasets.Dataset  # the pool that is partitioned over clients (private data)
    public: datasets.Dataset  # shared public prompts (PubSwap's D_pub)
    aux: datasets.Dataset  # the server's small labelled auxiliary set (FedGRPO's D_p)
    test: datasets.Dataset  # held-out evaluation set kept by the server
    accuracy_reward: str = "accuracy"  # the reward (a key of fedrl_kit.rewards.REWARDS) that scores ``answer``
    default_rewards: tuple = ("accuracy",)  # the reward components a run trains with by default (accuracy first)


def make_world(seed: int = 0, n_train: int = 2000, n_test: int = 140, n_public: int = 140, n_aux: int = 100,
               topics=DEFAULT_TOPICS, difficulties=DIFFICULTIES) -> World:
    """Build the embedded world's four splits, disjoint by prompt.

    Args:
        seed: world seed (which problems are drawn; the held-out region does not depend on it).
        n_train: size of the private pool partitioned over clients.
        n_test, n_public, n_aux: sizes of the server-held splits (all from the held-out region).
        topics, difficulties: which task families and levels the world contains.
    """
    for name, v in dict(n_train=n_train, n_test=n_test, n_public=n_public, n_aux=n_aux).items():
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    test = draw(n_test, seed * 4 + 1, True, topics, difficulties)
    aux = draw(n_aux, seed * 4 + 2, True, topics, difficulties, exclude={r["prompt"] for r in test})
    public = draw(n_public, seed * 4 + 3, True, topics, difficulties,
                  exclude={r["prompt"] for r in test + aux})
    train = draw(n_train, seed * 4 + 4, False, topics, difficulties)
    to_ds = lambda rows: datasets.Dataset.from_list(rows)  # noqa: E731
    return World(train=to_ds(train), public=to_ds(public), aux=to_ds(aux), test=to_ds(test))
