"""The lockstep group itself, without a model: order, batching, failures and deadlines (fedrl_kit.federation.lockstep).

The members here are message clients whose handlers meet on a stand-in pass ``"echo"`` (registered in
``lockstep.BATCHED`` for each test), so each test runs in milliseconds.
"""

import threading
import time

import pytest

from fedrl_kit.federation import lockstep
from fedrl_kit.federation.client import PLAIN, MessageClient
from fedrl_kit.federation.lockstep import Batched, Group, GroupPasses, LockstepRuntime


@pytest.fixture
def echo(monkeypatch):
    """A pass ``echo``: each call's ``x`` doubled, one batch per ``size``; the calls of every batch, logged."""
    batches = []

    def run(calls):
        if any(c["x"] == "boom" for c in calls):
            raise RuntimeError("the batched echo failed")
        batches.append([c["adapter"] for c in calls])
        return [2 * c["x"] for c in calls]
    monkeypatch.setitem(lockstep.BATCHED, "echo", Batched(lambda c: (c.get("size", 0),), run))
    return batches


class PlainEcho:
    """The stand-in pass's plain call, a client's passes outside a group (in one, the group's GroupPasses meet)."""

    def meet(self, kind, adapter, x, **kw):
        return 2 * x


class Echo(MessageClient):
    """Answers ``ping`` with its steps' echoes; ``log`` records (client, step) in the order the steps ran."""

    passes = PlainEcho()

    def __init__(self, cid, log, steps=2, fail_at=None, hang=None):
        self.cid, self.data, self.log, self.steps, self.fail_at, self.hang = cid, [0], log, steps, fail_at, hang

    def on_ping(self, round, payload):
        out = []
        for s in range(self.steps):
            self.log.append((self.cid, s))
            if s == self.fail_at:
                raise ValueError(f"{self.cid} fails at step {s}")
            while self.hang is not None and not self.hang.is_set():
                time.sleep(0.01)
            out.append(self.passes.meet("echo", adapter=self.cid, x=10 * s + int(self.cid[-1]),
                                        size=payload.get("size", 0)))
        return {"echo": out}


def _runtime(clients, **kw):
    return LockstepRuntime({c.cid: c for c in clients}, kinds=("ping",), keep_messages=True, **kw)


def test_members_run_one_at_a_time_in_order_and_each_gets_its_own_answer(echo):
    log = []
    rt = _runtime([Echo("c0", log), Echo("c1", log, steps=3), Echo("c2", log)])
    replies = rt.broadcast("ping", 1, {})
    assert {cid: m.payload["echo"] for cid, m in replies.items()} == \
        {"c0": [0, 20], "c1": [2, 22, 42], "c2": [4, 24]}
    # each member runs up to its pass, in order; c1 alone takes its third step
    assert log == [("c0", 0), ("c1", 0), ("c2", 0), ("c0", 1), ("c1", 1), ("c2", 1), ("c1", 2)]
    assert echo == [["c0", "c1", "c2"], ["c0", "c1", "c2"], ["c1"]]
    assert rt.passes == [("ping", 1, "echo", ["c0", "c1", "c2"])] * 2 + [("ping", 1, "echo", ["c1"])]
    # the ledger as sequentially: each message, then its reply, client after client
    assert [(r["kind"], r["receiver"]) for r in rt.ledger.records] == \
        [(k, who) for c in ("c0", "c1", "c2") for k, who in (("ping", c), ("ping_result", "server"))]


def test_calls_with_other_keys_or_the_same_adapter_go_to_separate_passes(echo):
    calls = [(0, "echo", dict(adapter="a", x=1, size=1)), (1, "echo", dict(adapter="b", x=1, size=2)),
             (2, "echo", dict(adapter="c", x=1, size=1)), (3, "echo", dict(adapter="a", x=1, size=1))]
    assert [(kind, [k for k, _ in ms]) for kind, ms in lockstep.batches(calls)] == \
        [("echo", [0, 2]), ("echo", [1]), ("echo", [3])]


def test_a_member_that_raises_is_dropped_alone_and_the_others_go_on(echo):
    log = []
    rt = _runtime([Echo("c0", log), Echo("c1", log, fail_at=1), Echo("c2", log)])
    replies = rt.broadcast("ping", 1, {})
    assert replies["c0"].payload["echo"] == [0, 20] and replies["c2"].payload["echo"] == [4, 24]
    failed = replies["c1"]
    assert (failed.client, failed.reason) == ("c1", "raised") and "c1 fails at step 1" in failed.error
    assert echo == [["c0", "c1", "c2"], ["c0", "c2"]]


def test_a_pass_that_raises_fails_every_member_in_it(echo):
    class Boom(Echo):
        def on_ping(self, round, payload):
            return {"echo": [self.passes.meet("echo", adapter=self.cid, x="boom" if self.cid == "c1" else 1)]}
    rt = _runtime([Boom("c0", []), Boom("c1", []), Boom("c2", [])])
    replies = rt.broadcast("ping", 1, {})
    assert [(r.client, r.reason) for r in replies.values()] == [(c, "raised") for c in ("c0", "c1", "c2")]
    assert all("the batched echo failed" in r.error for r in replies.values())
    with pytest.raises(RuntimeError, match="the batched echo failed"):
        alone = Echo("c9", [])
        lockstep.together([lambda: alone.passes.meet("echo", adapter="a", x="boom")], [alone])


def test_a_group_past_its_deadline_times_out_for_all_and_its_members_are_stopped(echo):
    hang, log = threading.Event(), []
    clients = [Echo("c0", log), Echo("c1", log, hang=hang), Echo("c2", log)]
    rt = _runtime(clients, timeout=0.1)
    t0 = time.time()
    replies = rt.broadcast("ping", 1, {})
    assert 0.3 <= time.time() - t0 < 5  # the group's deadline: 3 clients × 0.1 s
    assert [(r.client, r.reason) for r in replies.values()] == [(c, "timeout") for c in ("c0", "c1", "c2")]
    _, group_call = rt._abandoned["c1"]
    assert group_call.done.wait(5)  # the abandoned group stopped its members (c1 was stuck in its loop), then itself
    for c in clients:
        c.hang = None
    replies = rt.broadcast("ping", 2, {})  # dropped clients whose call has ended answer alone, as sequentially
    assert {cid: m.payload["echo"] for cid, m in replies.items()} == {"c0": [0, 20], "c1": [2, 22], "c2": [4, 24]}
    assert not [p for p in rt.passes if p[1] == 2] and not rt._abandoned
    assert rt.broadcast("ping", 3, {})["c1"].payload["echo"] == [2, 22] and rt.passes[-1][:2] == ("ping", 3)


def test_a_group_hands_its_clients_its_passes_only_while_it_runs():
    """Outside a group a client's passes are the plain calls (tested bit for bit by every sequential test); a group
    gives its clients its own for as long as it runs, then their own come back (a class's or an instance's)."""
    plain, own = MessageClient(), Echo("c0", [])
    assert plain.passes is PLAIN and isinstance(own.passes, PlainEcho)
    mine = PlainEcho()
    own.passes = mine
    seen = Group([lambda: plain.passes, lambda: own.passes], clients=[plain, own]).run()
    assert all(isinstance(c.result, GroupPasses) for c in seen)
    assert plain.passes is PLAIN and "passes" not in plain.__dict__ and own.passes is mine
