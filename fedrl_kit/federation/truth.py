"""Simulator truth: what the simulation knows about clients and no server may read."""

from __future__ import annotations

from collections import Counter


class SimulatorTruth:
    """Read-only access to the simulated clients, for diagnostics only.

    Args:
        clients: client id → the client object the runtime holds (simulation side).
        facts: name → what the method's ``build_clients`` recorded for its diagnostics (``run.truth_facts``).
    """

    def __init__(self, clients: dict, facts: dict | None = None):
        self._clients = dict(clients)
        self._facts = dict(facts or {})

    def fact(self, name: str):
        """A fact the method recorded while building its clients (``run.truth_facts``; e.g. FedGRPO's
        ``"queries"``: D_s with its answers, topics, owners and labels). KeyError if it recorded none."""
        return self._facts[name]

    @property
    def client_ids(self) -> list[str]:
        return list(self._clients)

    def client(self, cid: str):
        """The client object itself (its data, its flags): for analysis of what the server could not see."""
        return self._clients[cid]

    def topic_counts(self, cid: str) -> Counter:
        """How many private examples of each topic client ``cid`` holds."""
        return Counter(self._clients[cid].data["topic"])

    def topics(self, cid: str, min_share: float = 0.0) -> set[str]:
        """Topics with at least one example (``min_share`` = 0) or at least that share of the client's data."""
        counts = self.topic_counts(cid)
        n = sum(counts.values())
        return {t for t, c in counts.items() if c >= 1 and c >= min_share * n}
