"""FedAvg weighs a client by the size the server knows, never by what a reply claims.

The attack: one client of four replies with an adapter inside the update bound (its honest one) but claims
10⁹ examples (10¹⁸ and 2⁶⁴ − 1 passed the reply check too). FedAvg, the default aggregator, then gave it a weight of
1 − 10⁻⁷: its adapter became the global one. The server knows each client's size from the plan (the partition it
was assigned, in simulation) or from its round-0 properties; a reply that claims another size is dropped for the
round, with the claim and the known size in its failure record.
"""

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.aggregate import fedavg
from fedrl_kit.federation.runtime import Message
from fedrl_kit.runs import Run


def _lying(monkeypatch, cid: str, kind: str, claim: int) -> None:
    """``cid`` answers every ``kind`` message honestly, but claiming ``claim`` examples."""
    from fedrl_kit.federation.client import MessageClient

    honest = MessageClient.handle

    def handle(self, message):
        reply = honest(self, message)
        if self.cid == cid and message.kind == kind:
            reply = Message(reply.kind, reply.sender, reply.receiver, reply.round,
                            {**reply.payload, "num_examples": claim})
        return reply

    monkeypatch.setattr(MessageClient, "handle", handle)


def _watch_fit_replies(run) -> dict:
    """cid → the adapter of its (last) fit reply, as it arrived, accepted or not."""
    sent, original = {}, run.runtime._accept

    def accept(message, reply):
        if message.kind == "fit":
            sent[message.receiver] = {k: v.copy() for k, v in reply.payload["adapter"].items()}
        return original(message, reply)

    run.runtime._accept = accept
    return sent


@pytest.mark.parametrize("claim", [10**9, 10**18, 2**64 - 1])
def test_one_client_claiming_a_huge_size_does_not_take_over_fedavg(tiny_dir, monkeypatch, claim):
    _lying(monkeypatch, "client_1", "fit", claim)
    run = Run(small_config(tiny_dir, num_clients=4, rounds=1), progress=False).build()
    assert run.config.aggregator == "fedavg"  # the default
    sizes = {f"client_{i}": len(p) for i, p in enumerate(run.partitions)}
    assert len(set(sizes.values())) > 1  # unequal partitions: FedAvg's weights matter
    sent = _watch_fit_replies(run)
    recs = run.run()
    liar = sent["client_1"]
    assert not all(np.allclose(v, liar[k], rtol=0, atol=1e-6) for k, v in run.server.global_state.items())
    honest = ["client_0", "client_2", "client_3"]
    expected = fedavg([sent[c] for c in honest], [sizes[c] for c in honest])
    assert all(np.array_equal(v, expected[k]) for k, v in run.server.global_state.items())
    failures = [r for r in recs if r["kind"] == "failure"]
    assert [(r["round"], r["client"], r["reason"]) for r in failures] == [(1, "client_1", "bad_reply")]
    assert f"claims {claim}" in failures[0]["error"] and f"holds {sizes['client_1']}" in failures[0]["error"]


def test_a_size_claim_that_matches_is_weighted_as_before(tiny_dir):
    """Honest clients' claims equal their sizes: the global adapter is FedAvg of every reply by partition size, the
    same numbers as when the claims were read."""
    run = Run(small_config(tiny_dir, num_clients=4, rounds=1), progress=False).build()
    sizes = [len(p) for p in run.partitions]
    sent = _watch_fit_replies(run)
    recs = run.run()
    assert not [r for r in recs if r["kind"] == "failure"]
    expected = fedavg([sent[f"client_{i}"] for i in range(4)], sizes)
    assert all(np.array_equal(v, expected[k]) for k, v in run.server.global_state.items())


def test_a_client_lying_about_its_size_at_round_0_is_held_to_its_plan(tiny_dir, monkeypatch):
    """In simulation the plan says each client's size: a properties reply that claims another is refused at round 0,
    and the client's later (honest) fit replies are weighted by the plan."""
    _lying(monkeypatch, "client_2", "properties", 10**9)
    run = Run(small_config(tiny_dir, num_clients=3, rounds=1), progress=False).build()
    sizes = {f"client_{i}": len(p) for i, p in enumerate(run.partitions)}
    assert "client_2" not in run.server.properties
    assert run.server.sizes == sizes
    failure = run.runtime.failures[0]
    assert (failure.client, failure.reason, failure.round) == ("client_2", "bad_reply", 0)
    assert "claims 1000000000" in failure.error
