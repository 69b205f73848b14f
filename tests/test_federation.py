"""Runtime, ledger, failure isolation, aggregators, FedProx term."""

import numpy as np
import pytest
import torch

from fedrl_kit.aggregate import aggregate, coordinate_median, fedavg, fedit, trimmed_mean
from fedrl_kit.federation.client import fedprox_term
from fedrl_kit.federation.runtime import ClientFailure, InProcessRuntime, Message, payload_nbytes


class Echo:
    def __init__(self, cid, fail=False):
        self.cid, self.fail = cid, fail

    def handle(self, m):
        if self.fail:
            raise RuntimeError("boom")
        return Message("pong", self.cid, m.sender, m.round, {"score": 1.0})


def test_payload_bytes_are_counted_by_content():
    assert payload_nbytes({"a": np.zeros(10, np.float32)}) == 1 + 40
    assert payload_nbytes({"q": "héllo"}) == 1 + 6
    assert payload_nbytes({"r": [1.0, 2.0, 3]}) == 1 + 24
    with pytest.raises(TypeError, match="plain data"):
        payload_nbytes({"m": torch.zeros(2)})


def test_runtime_drops_a_failing_client_and_keeps_going():
    rt = InProcessRuntime({"a": Echo("a"), "b": Echo("b", fail=True), "c": Echo("c")})
    replies = rt.broadcast("ping", 3, {"x": 1})
    assert isinstance(replies["b"], ClientFailure) and "boom" in replies["b"].error
    assert [cid for cid, r in replies.items() if isinstance(r, Message)] == ["a", "c"]
    assert len(rt.failures) == 1 and rt.failures[0].round == 3
    by = rt.ledger.bytes_by_kind()
    assert by[("ping", "down")] == 3 * payload_nbytes({"x": 1})  # the failing client still received its message
    assert by[("pong", "up")] == 2 * payload_nbytes({"score": 1.0})
    assert rt.ledger.bytes_per_round() == {3: {"down": by[("ping", "down")], "up": by[("pong", "up")]}}


def test_runtime_per_client_payloads_and_unknown_receiver():
    rt = InProcessRuntime({"a": Echo("a"), "b": Echo("b")}, keep_messages=True)
    rt.broadcast("ping", 0, {"a": {"v": 1}, "b": {"v": 2}})
    assert [m.payload for m in rt.messages if m.kind == "ping"] == [{"v": 1}, {"v": 2}]
    with pytest.raises(ValueError, match="unknown client"):
        rt.send(Message("ping", "server", "zz", 0, {}))


def _state(a, b):
    return {"x.lora_A.weight": np.full((2, 3), a, np.float32), "x.lora_B.weight": np.full((3, 2), b, np.float32)}


def test_fedavg_weights_by_examples_and_fedit_is_uniform_per_factor():
    s1, s2 = _state(1.0, 10.0), _state(3.0, 30.0)
    avg = fedavg([s1, s2], [1, 3])
    assert avg["x.lora_A.weight"][0, 0] == pytest.approx(2.5)  # (1·1 + 3·3) / 4
    assert avg["x.lora_B.weight"][0, 0] == pytest.approx(25.0)
    it = fedit([s1, s2])
    assert it["x.lora_A.weight"][0, 0] == pytest.approx(2.0) and it["x.lora_B.weight"][0, 0] == pytest.approx(20.0)
    # FedIT is inexact for ΔW = BA: mean(B)·mean(A) ≠ mean(B·A)
    dw_fedit = it["x.lora_B.weight"] @ it["x.lora_A.weight"]
    dw_exact = (s1["x.lora_B.weight"] @ s1["x.lora_A.weight"] + s2["x.lora_B.weight"] @ s2["x.lora_A.weight"]) / 2
    assert dw_fedit[0, 0] == pytest.approx(80.0) and dw_exact[0, 0] == pytest.approx(100.0)


def test_robust_aggregators_ignore_one_outlier():
    states = [_state(1.0, 1.0), _state(1.1, 1.1), _state(0.9, 0.9), _state(1.0, 1.0), _state(100.0, -100.0)]
    assert coordinate_median(states)["x.lora_A.weight"][0, 0] == pytest.approx(1.0)
    assert trimmed_mean(states, 0.2)["x.lora_B.weight"][0, 0] == pytest.approx(1.0, abs=0.05)
    with pytest.raises(ValueError, match="aggregator"):
        aggregate(states, "mode")
    with pytest.raises(ValueError, match="zero adapters"):
        fedit([])


def test_fedprox_term_by_hand():
    p = [torch.tensor([1.0, 2.0]), torch.tensor([[0.5]])]
    a = [torch.tensor([0.0, 0.0]), torch.tensor([[1.5]])]
    # (μ/2) · (1 + 4 + 1) with μ = 0.1
    assert fedprox_term(p, a, 0.1).item() == pytest.approx(0.3)
