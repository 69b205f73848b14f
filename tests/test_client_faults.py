"""Clients cannot crash or stall a federation: bad replies, hangs, SystemExit, in-place edits, NaN adapters.

Each test drives the runtime (or a whole run) with a faulty client and checks that the faulty client, and only
it, is dropped for the round with its reason recorded, and that nothing it did reaches the server or the others.
"""

import math
import os
import re
import signal
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import small_config
from fedrl_kit.aggregate import coordinate_median, fedavg, trimmed_mean
from fedrl_kit.federation.replies import Context, adapter_spec
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message
from fedrl_kit.federation.wire import SerialisingRuntime
from fedrl_kit.methods import method_spec
from fedrl_kit.runs import Run

pytestmark = pytest.mark.serial  # real-time timeouts: `make test` runs these alone, after the others


def _adapter(value=0.5):
    return {"x.lora_A.weight": np.full((2, 3), value, np.float32), "x.lora_B.weight": np.full((3, 2), value, np.float32)}


class Fit:
    """A client that answers ``fit`` with ``reply(payload)`` (a payload dict, or anything else to send as is)."""

    def __init__(self, cid, reply=None):
        self.cid = cid
        self.reply = reply or (lambda p: {"adapter": _adapter(), "num_examples": 10, "metrics": {"loss": 0.1}})

    def handle(self, m):
        out = self.reply(m.payload)
        return out if not isinstance(out, dict) else Message(f"{m.kind}_result", self.cid, m.sender, m.round, out)


def _good(**changes):
    def reply(payload):
        out = {"adapter": _adapter(), "num_examples": 10, "metrics": {"loss": 0.1}}
        out.update(changes)
        return {k: v for k, v in out.items() if v is not None}
    return reply


def _with_tensor(name, value):
    return lambda p: {"adapter": {**_adapter(), name: value}, "num_examples": 10, "metrics": {}}


BAD_FIT_REPLIES = {
    "missing num_examples": (_good(num_examples=None), "num_examples"),
    "missing adapter": (_good(adapter=None), "adapter"),
    "negative num_examples": (_good(num_examples=-1), "num_examples"),
    "zero num_examples": (_good(num_examples=0), "num_examples"),
    "fractional num_examples": (_good(num_examples=1.5), "num_examples"),
    "nan num_examples": (_good(num_examples=float("nan")), "num_examples"),
    "metrics not numbers": (_good(metrics={"loss": "low"}), "metrics"),
    "unexpected key": (_good(secret="x"), "unexpected"),
    "nan adapter": (_with_tensor("x.lora_A.weight", np.full((2, 3), np.nan, np.float32)), "non-finite"),
    "inf adapter": (_with_tensor("x.lora_B.weight", np.full((3, 2), -np.inf, np.float32)), "non-finite"),
    "huge adapter": (_with_tensor("x.lora_A.weight", np.full((2, 3), 1e30, np.float32)), "1e\\+30"),
    "wrong shape": (_with_tensor("x.lora_A.weight", np.zeros((3, 3), np.float32)), r"\[3, 3\]"),
    "wrong dtype": (_with_tensor("x.lora_A.weight", np.zeros((2, 3), np.float64)), "float64"),
    "extra tensor": (_with_tensor("y.lora_A.weight", np.zeros((2, 3), np.float32)), "different tensors"),
    "list for a tensor": (_with_tensor("x.lora_A.weight", [[0.0] * 3] * 2), "array"),
    "payload not a mapping": (lambda p: Message("fit_result", "c", "server", 0, [1, 2]), "mapping"),
    "wrong reply kind": (lambda p: Message("evaluate_result", "c", "server", 0, {}), "evaluate_result"),
    "not a message": (lambda p: "done", "not a Message"),
}


@pytest.mark.parametrize("runtime_cls", [InProcessRuntime, SerialisingRuntime])
def test_every_bad_fit_reply_is_dropped_with_its_reason_and_the_rest_aggregate(runtime_cls):
    clients = {"good": Fit("good"), **{name: Fit(name, reply) for name, (reply, _) in BAD_FIT_REPLIES.items()}}
    rt = runtime_cls(clients, expect={"adapter": adapter_spec(_adapter())})
    replies = rt.broadcast("fit", 1, {"adapter": _adapter(0.0)})
    assert isinstance(replies["good"], Message)
    for name, (_, why) in BAD_FIT_REPLIES.items():
        failure = replies[name]
        assert isinstance(failure, ClientFailure), name
        assert failure.reason == "bad_reply", (name, failure.error)
        assert failure.error.startswith("BadReply") and re.search(why, failure.error), (name, failure.error)
    assert len(rt.failures) == len(BAD_FIT_REPLIES)
    ok = [r.payload for r in replies.values() if isinstance(r, Message)]
    assert fedavg([p["adapter"] for p in ok], [p["num_examples"] for p in ok])["x.lora_A.weight"][0, 0] == 0.5
    ups = [r for r in rt.ledger.records if r["direction"] == "up"]
    assert [r["sender"] for r in ups] == ["good"]  # a dropped reply is never recorded as delivered


def _nested(depth):
    value = 0.5
    for _ in range(depth):
        value = [value]
    return value


ODD_VALUES = {  # none of them is a count of examples (an integer >= 1), nor a metric (a number)
    "int beyond float range": 10**400,
    "int of 5,000 digits": 10**5000,
    "negative int beyond float range": -(10**400),
    "numpy int beyond int64 as object": np.array(10**30, dtype=object),
    "bool": True,
    "numpy bool": np.bool_(True),
    "nested lists": [[1, [2]], []],
    "list nested 5,000 deep": _nested(5000),
    "dict with int keys": {1: 2},
    "dict with tuple keys": {(1, 2): 3.0},
    "string": "10",
    "bytes": b"\x00" * 8,
    "None": None,
    "complex": 1 + 2j,
    "object array": np.array([{}], dtype=object),
    "set": {1, 2},
    "an object": object(),
}


@pytest.mark.parametrize("runtime_cls", [InProcessRuntime, SerialisingRuntime])
@pytest.mark.parametrize("field", ["num_examples", "metric"])
def test_odd_values_in_a_numeric_field_drop_the_client_as_bad_reply_and_the_round_goes_on(runtime_cls, field):
    """The reply check is total: an integer beyond float range used to raise OverflowError out of it and end the run."""
    def odd(value):
        return _good(num_examples=value) if field == "num_examples" else _good(metrics={"loss": value})

    clients = {"good": Fit("good"), **{name: Fit(name, odd(v)) for name, v in ODD_VALUES.items()}}
    rt = runtime_cls(clients, expect={"adapter": adapter_spec(_adapter())})
    for rnd in (1, 2):  # and the next round runs as well
        replies = rt.broadcast("fit", rnd, {"adapter": _adapter(0.0)})
        assert isinstance(replies["good"], Message)
        for name in ODD_VALUES:
            assert isinstance(replies[name], ClientFailure), (name, replies[name])
            assert replies[name].reason == "bad_reply", (name, replies[name].error)
    assert len(rt.failures) == 2 * len(ODD_VALUES)


class Anything:
    """Answers every message with whatever payload it is given (through a plain ``Message``)."""

    def __init__(self, cid, payload):
        self.cid, self.payload = cid, payload

    def handle(self, m):
        return Message(f"{m.kind}_result", self.cid, m.sender, m.round, self.payload)


_LEAVES = st.one_of(
    st.integers(min_value=-(10**600), max_value=10**600), st.booleans(), st.none(), st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True), st.binary(max_size=4), st.complex_numbers(),
    st.integers(0, 3000).map(_nested), st.sampled_from(sorted(ODD_VALUES)).map(lambda name: ODD_VALUES[name]),
    st.builds(lambda v: np.array(v, np.float32), st.lists(st.floats(width=32), max_size=3)))
_ODD_PAYLOADS = st.recursive(
    _LEAVES, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(), st.sampled_from(["kind", "round", "client"])),
                        inner, max_size=3)), max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_examples=_ODD_PAYLOADS, metrics=_ODD_PAYLOADS, extra=st.dictionaries(st.text(max_size=6), _ODD_PAYLOADS,
                                                                                   max_size=2))
def test_fuzz_whatever_a_client_sends_its_reply_is_accepted_or_dropped_as_bad_reply(num_examples, metrics, extra):
    payload = {"adapter": _adapter(), "num_examples": num_examples, "metrics": metrics, **extra}
    for runtime_cls in (InProcessRuntime, SerialisingRuntime):
        rt = runtime_cls({"odd": Anything("odd", payload), "good": Fit("good")},
                         expect={"adapter": adapter_spec(_adapter())})
        replies = rt.broadcast("fit", 1, {"adapter": _adapter(0.0)})  # never raises
        assert isinstance(replies["good"], Message)
        odd = replies["odd"]
        assert isinstance(odd, Message) or odd.reason == "bad_reply", odd.error
        if isinstance(odd, Message):  # then it fits the format: a count >= 1 and numbers for metrics
            assert isinstance(odd.payload["num_examples"], (int, np.integer)) and odd.payload["num_examples"] >= 1
            assert isinstance(odd.payload["metrics"], dict) and not {"kind", "round", "client"} & set(odd.payload["metrics"])


def test_a_clients_metrics_cannot_rewrite_its_record_nor_be_unbounded():
    from fedrl_kit.federation.replies import MAX_METRIC_NAME, MAX_METRICS

    bad = {"kind": _good(metrics={"kind": 1.0}), "round": _good(metrics={"round": 99}),
           "client": _good(metrics={"client": 0.0, "loss": 0.1}),
           "too many names": _good(metrics={f"m{i}": 0.0 for i in range(MAX_METRICS + 1)}),
           "name too long": _good(metrics={"x" * (MAX_METRIC_NAME + 1): 0.0})}
    ok = {"most names": _good(metrics={f"m{i}": 0.0 for i in range(MAX_METRICS)}),
          "longest name": _good(metrics={"x" * MAX_METRIC_NAME: 0.0})}
    for runtime_cls in (InProcessRuntime, SerialisingRuntime):
        rt = runtime_cls({name: Fit(name, reply) for name, reply in {**bad, **ok}.items()},
                         expect={"adapter": adapter_spec(_adapter())})
        replies = rt.broadcast("fit", 1, {"adapter": _adapter(0.0)})
        for name in bad:
            assert replies[name].reason == "bad_reply", name
        assert re.search("'kind', a field of its metrics.jsonl record", replies["kind"].error)
        assert re.search(f"more than MAX_METRICS = {MAX_METRICS}", replies["too many names"].error)
        assert re.search(f"more than MAX_METRIC_NAME = {MAX_METRIC_NAME}", replies["name too long"].error)
        assert all(isinstance(replies[name], Message) for name in ok)


def test_a_run_drops_a_client_sending_odd_numbers_or_rewriting_its_record_and_goes_on(tiny_dir, monkeypatch):
    """A whole run, in both runtimes: the client that sends num_examples = 10**400 (round 1) or a metric named
    "client" (round 2) is dropped as bad_reply; the other clients' rounds and the run's records are intact."""
    from fedrl_kit.federation.client import MessageClient

    honest = MessageClient.handle

    def handle(self, message):
        reply = honest(self, message)
        if self.cid == "client_1" and message.kind == "fit":
            evil = {"num_examples": 10**400} if message.round == 1 else {"metrics": {"client": 0.0, "kind": 0.0}}
            reply = Message(reply.kind, reply.sender, reply.receiver, reply.round, {**reply.payload, **evil})
        return reply

    monkeypatch.setattr(MessageClient, "handle", handle)
    for runtime in ("inprocess", "serialising"):
        recs = Run(small_config(tiny_dir, num_clients=3, rounds=2), progress=False, runtime=runtime).run()
        failures = [(r["round"], r["client"], r["reason"]) for r in recs if r["kind"] == "failure"]
        assert failures == [(1, "client_1", "bad_reply"), (2, "client_1", "bad_reply")], runtime
        clients = [(r["round"], r["client"]) for r in recs if r["kind"] == "client"]
        assert clients == [(1, "client_0"), (1, "client_2"), (2, "client_0"), (2, "client_2")], runtime
        assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]


def test_without_a_run_the_adapter_is_checked_against_the_one_sent():
    rt = InProcessRuntime({"a": Fit("a", _with_tensor("x.lora_A.weight", np.zeros((2, 2), np.float32)))})
    assert rt.send(Message("fit", "server", "a", 0, {"adapter": _adapter()})).reason == "bad_reply"


class Sleeper:
    """Sleeps ``seconds`` on its first message, then writes into ``shared`` and answers."""

    def __init__(self, cid, seconds, shared):
        self.cid, self.seconds, self.shared, self.calls = cid, seconds, shared, 0

    def handle(self, m):
        self.calls += 1
        if self.calls == 1:
            time.sleep(self.seconds)
        self.shared.append(self.cid)  # a late thread must never get here
        return Message("pong", self.cid, m.sender, m.round, {"v": 1.0})


def test_a_hanging_client_costs_the_round_its_timeout_and_its_late_reply_is_discarded():
    shared: list = []
    rt = InProcessRuntime({"slow": Sleeper("slow", 2.0, shared), "fast": Sleeper("fast", 0.0, shared)}, timeout=0.3)
    t0 = time.time()
    replies = rt.broadcast("ping", 1, {})
    assert time.time() - t0 < 1.5  # not the 2 s the client sleeps
    assert replies["slow"].reason == "timeout" and "0.3 s" in replies["slow"].error
    assert isinstance(replies["fast"], Message)
    again = rt.send(Message("ping", "server", "slow", 2, {}))  # still asleep in its abandoned call
    assert again.reason == "busy" and "round 1" in again.error
    time.sleep(2.2)  # the sleep returns; the stopped thread must not write, its reply must not be recorded
    assert shared == ["fast"]
    assert [r["sender"] for r in rt.ledger.records if r["direction"] == "up"] == ["fast"]
    assert [f.reason for f in rt.failures] == ["timeout", "busy"]
    back = rt.send(Message("ping", "server", "slow", 3, {}))  # free again: it answers
    assert isinstance(back, Message) and shared == ["fast", "slow"]


class Raises:
    def __init__(self, cid, exc):
        self.cid, self.exc = cid, exc

    def handle(self, m):
        raise self.exc


def test_system_exit_and_keyboard_interrupt_raised_by_a_client_only_drop_that_client():
    rt = InProcessRuntime({"exit": Raises("exit", SystemExit(3)), "kbd": Raises("kbd", KeyboardInterrupt()),
                           "ok": Sleeper("ok", 0.0, [])})
    replies = rt.broadcast("ping", 1, {})
    assert replies["exit"].reason == "raised" and replies["exit"].error.startswith("SystemExit")
    assert replies["kbd"].error.startswith("KeyboardInterrupt")  # raised by client code, not by the user
    assert isinstance(replies["ok"], Message)


def test_a_real_ctrl_c_still_stops_the_run_while_a_client_works():
    rt = InProcessRuntime({"slow": Sleeper("slow", 1.5, [])})  # no timeout: only Ctrl-C ends the wait
    # Python's own Ctrl-C handler, as in a terminal: a shell that starts the tests in the background hands
    # them SIGINT ignored, and then no Ctrl-C would reach any program
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    try:
        timer.start()
        t0 = time.time()
        with pytest.raises(KeyboardInterrupt):
            rt.broadcast("ping", 1, {})
        assert time.time() - t0 < 1.2
    finally:
        timer.join()
        signal.signal(signal.SIGINT, previous)


class Vandal:
    """Zeroes the adapter it was sent, in place, and swaps a tensor of the dict; reports what it saw first."""

    def __init__(self, cid, seen):
        self.cid, self.seen = cid, seen

    def handle(self, m):
        adapter = m.payload["adapter"]
        self.seen[self.cid] = {k: v.copy() for k, v in adapter.items()}
        for v in adapter.values():
            v[...] = 0.0
        adapter["x.lora_B.weight"] = np.ones((3, 2), np.float32)
        m.payload["extra"] = 1
        return Message("pong", self.cid, m.sender, m.round, {})


def test_broadcast_hands_every_client_its_own_copy():
    seen: dict = {}
    rt = InProcessRuntime({"c0": Vandal("c0", seen), "c1": Vandal("c1", seen)})
    global_state = _adapter(0.25)
    payload = {"adapter": global_state}
    rt.broadcast("ping", 1, payload)
    assert all(np.all(v == 0.25) for v in seen["c1"].values())  # c0's vandalism did not reach c1
    assert all(np.all(v == 0.25) for v in global_state.values()) and set(payload) == {"adapter"}
    assert global_state["x.lora_B.weight"].shape == (3, 2) and np.all(global_state["x.lora_B.weight"] == 0.25)


def test_robust_aggregators_leave_out_non_finite_adapters_and_averages_refuse_them():
    states = [_adapter(v) for v in (1.0, 1.1, 0.9, 1.0)] + [_adapter(np.nan)]
    assert coordinate_median(states)["x.lora_A.weight"][0, 0] == pytest.approx(1.0)
    assert np.isfinite(trimmed_mean(states, 0.0)["x.lora_A.weight"]).all()
    assert trimmed_mean([_adapter(1.0), _adapter(np.inf)], 0.0)["x.lora_B.weight"][0, 0] == 1.0
    with pytest.raises(ValueError, match=r"adapter\(s\) \[4\]"):
        fedavg(states, [1] * 5)
    with pytest.raises(ValueError, match="non-finite"):
        coordinate_median([_adapter(np.nan)])


def test_method_replies_are_checked_for_shape_range_and_finiteness():
    score = method_spec("fedgrpo").replies["score"]
    ctx = Context({"questions": ["q1", "q2"], "candidates": [["a", "b"], ["c", "d"]]})
    score({"scores": [[0.0, 1.0], [0.5, 0.25]]}, ctx, "")
    for bad in ([[0.0, 1.0]], [[0.0, 1.0], [0.5]], [[0.0, float("nan")], [0.5, 0.2]], [[0.0, 2.0], [0.5, 0.2]]):
        with pytest.raises(ValueError):
            score({"scores": bad}, ctx, "")
    competence = method_spec("fedgrpo").replies["competence"]
    with pytest.raises(ValueError, match="2 items"):
        competence({"correct": [1.0]}, Context({"questions": ["q1", "q2"]}), "")
    generate = method_spec("pubswap_random").replies["public_generate"]
    ctx = Context({"batch": {"prompt": ["p1", "p2"]}}, {"num_generations": 2})
    generate({"texts": [["a", "b"], ["c", "d"]], "correct": [[0, 1], [1, 1]]}, ctx, "")
    with pytest.raises(ValueError):
        generate({"texts": [["a", "b"], ["c"]], "correct": [[0, 1], [1, 1]]}, ctx, "")
    fit = method_spec("fedmoa").replies["fit"]
    ok = {"adapter": _adapter(), "num_examples": 3, "metrics": {}, "reward_names": ["accuracy", "format"],
          "weights": [0.25, 0.75], "family": "math"}
    fit(ok, Context(), "")
    for weights in ([0.5, 0.6], [1.0], [float("nan"), 1.0]):
        with pytest.raises(ValueError, match="weights"):
            fit({**ok, "weights": weights}, Context(), "")


def test_a_run_survives_nan_wrong_shape_hanging_raising_and_exiting_clients(tiny_dir):
    faults = "client_1@*:nan,client_2@*:shape,client_3@*:hang,client_4@1:raise,client_4@2:exit"
    cfg = small_config(tiny_dir, num_clients=6, rounds=2, fail_client=faults, client_timeout=1.0, aggregator="median")
    t0 = time.time()
    run = Run(cfg, progress=False)
    recs = run.run()
    assert time.time() - t0 < 60
    failures = {(r["round"], r["client"]): r for r in recs if r["kind"] == "failure"}
    for rnd in (1, 2):
        nan, shape = failures[(rnd, "client_1")], failures[(rnd, "client_2")]
        assert nan["reason"] == "bad_reply" and "non-finite" in nan["error"]
        assert shape["reason"] == "bad_reply" and "global adapter" in shape["error"]
        assert failures[(rnd, "client_3")]["reason"] in ("timeout", "busy")
        assert {r["client"] for r in recs if r["kind"] == "client" and r["round"] == rnd} == {"client_0", "client_5"}
    assert failures[(1, "client_4")]["reason"] == "raised" and failures[(2, "client_4")]["error"].startswith("SystemExit")
    assert all(np.isfinite(v).all() for v in run.server.global_state.values())
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]
    assert all(math.isfinite(r["pass@1"]) for r in recs if r["kind"] == "global")


def test_a_clean_run_records_no_failure_in_any_method(tiny_dir):
    """Every reply format declared by a method accepts what its honest clients send."""
    from test_boundary import SETTINGS

    for method in ("fedavg_grpo", "pubswap_balanced", "fedgrpo", "dpsda_grpo", "fedmoa"):
        recs = Run(small_config(tiny_dir, method=method, rounds=1, **SETTINGS.get(method, {})), progress=False).run()
        assert not [r for r in recs if r["kind"] == "failure"], method


def test_dropped_clients_leave_no_trace_the_faulty_run_equals_the_run_without_them(tiny_dir):
    """The fault-injection benchmark in small: what a dropped client did never reaches the server."""
    faulty = "client_1@*:nan,client_2@*:shape,client_3@*:hang,client_4@*:raise"
    absent = "client_1@*:raise,client_2@*:raise,client_3@*:raise,client_4@*:raise"
    runs = [Run(small_config(tiny_dir, num_clients=6, rounds=2, fail_client=f, client_timeout=1.0), progress=False)
            for f in (faulty, absent)]
    curves = [[r["pass@1"] for r in run.run() if r["kind"] == "global"] for run in runs]
    assert curves[0] == curves[1]
    a, b = (run.server.global_state for run in runs)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], runs[0].initial_state[k]) for k in a)  # the two healthy clients trained


def test_clients_answer_on_one_reused_worker_thread_and_a_timed_out_ones_thread_is_not_reused():
    """A thread per message gave each its own malloc arena, and a round's memory grew with its clients
    (benchmarks/results/memory_clients_worker_thread.json); a worker whose call was abandoned retires."""
    seen, release = [], threading.Event()

    class Client:
        def __init__(self, slow=False):
            self.slow = slow

        def handle(self, message):
            seen.append(threading.get_ident())
            if self.slow:
                release.wait(10)
            return Message(f"{message.kind}_result", message.receiver, message.sender, message.round, {})

    rt = InProcessRuntime({"a": Client(), "b": Client(), "slow": Client(slow=True), "c": Client()}, timeout=0.5,
                          replies={})
    replies = rt.broadcast("ping", 1, {})
    assert isinstance(replies["slow"], ClientFailure) and replies["slow"].reason == "timeout"
    assert all(isinstance(replies[c], Message) for c in ("a", "b", "c"))
    a, b, slow, c = seen
    assert a == b == slow  # one worker for the calls one after another
    assert c != slow  # the timed-out call's worker still runs it: the next call got a new one
    release.set()


def test_a_reply_too_large_is_dropped_before_it_is_walked_or_decoded(monkeypatch):
    """A reply of more entries than MAX_REPLY_ITEMS is refused from a container's length, before its members are
    walked (in-process and serialised); a serialised reply of more bytes than the limit is refused before decoding."""
    from fedrl_kit.federation import replies as rp
    from fedrl_kit.federation import wire as rt_module

    monkeypatch.setattr(rp, "MAX_REPLY_ITEMS", 1000)
    many = {"many names": _good(metrics={f"m{i}": 0.0 for i in range(2000)}),
            "many list entries": _good(extra_rows=[0.0] * 600, more_rows=[1.0] * 600)}
    for runtime_cls in (InProcessRuntime, SerialisingRuntime):
        rt = runtime_cls({name: Fit(name, reply) for name, reply in many.items()},
                         expect={"adapter": adapter_spec(_adapter())})
        replies = rt.broadcast("fit", 1, {"adapter": _adapter(0.0)})
        for name in many:
            assert replies[name].reason == "bad_reply", name
            assert "more than MAX_REPLY_ITEMS = 1,000 entries" in replies[name].error, replies[name].error
    monkeypatch.setattr(rt_module, "MAX_REPLY_BYTES", 10_000)
    decoded = []
    real_decode = rt_module.decode_payload
    monkeypatch.setattr(rt_module, "decode_payload", lambda data: decoded.append(len(data)) or real_decode(data))
    big = {"big": _good(padding="x" * 200_000), "small": _good()}
    rt = SerialisingRuntime({name: Fit(name, reply) for name, reply in big.items()},
                            expect={"adapter": adapter_spec(_adapter())})
    replies = rt.broadcast("fit", 1, {"adapter": _adapter(0.0)})
    assert replies["big"].reason == "bad_reply" and "more than 10,000 (the larger of MAX_REPLY_BYTES" in replies["big"].error
    assert isinstance(replies["small"], Message)
    assert max(decoded) < 200_000  # the big reply's bytes were never decoded (only requests and the small reply)


@pytest.mark.parametrize("runtime", ["inprocess", "serialising"])
def test_a_run_whose_client_hangs_ends_by_itself_in_the_plain_runtimes(tiny_dir, tmp_path, runtime):
    """`fedrl run` as a process, with a client that hangs for good in the last round: dropped after client_timeout,
    then the process exits (the client's worker thread is stopped, and a daemon thread in any case), with its records.
    On Flower: tests/test_flower.py::test_a_flower_run_whose_client_hangs_ends_by_itself_once_its_rounds_are_done."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from test_cli import _tiny

    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "fedrl_kit.cli", "run", "--runtime", runtime, "--run-dir", str(run_dir), "--quiet",
           *_tiny(tiny_dir, "num_clients=3", "fail_client=client_2@1:hang", "client_timeout=2")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"still running after 240 s: {proc.communicate()[0][-2000:]}") from None
    assert proc.returncode == 0, out[-2000:]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(r["round"], r["client"], r["reason"]) for r in records if r["kind"] == "failure"] == [
        (1, "client_2", "timeout")]
    assert [r["round"] for r in records if r["kind"] == "global"] == [0, 1]
