"""Drift instrumentation: hand-computed distances, one record per local step, and no effect on training."""

from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.pubswap.instrument import DriftProbe, as_factors
from fedrl_kit.runs import Run

BASE = str(Path(__file__).resolve().parents[1] / "data" / "base")


def _state(a, b):
    return {"m.lora_A.weight": np.asarray(a, float), "m.lora_B.weight": np.asarray(b, float)}


def test_as_factors_pairs_a_and_b_and_rejects_broken_states():
    s = _state([[1.0, 0.0]], [[2.0], [0.0]])
    f = as_factors(s)
    assert list(f) == ["m"] and f["m"][0].shape == (1, 2) and f["m"][1].shape == (2, 1)
    with pytest.raises(ValueError, match="lora_B"):
        as_factors({"m.lora_A.weight": np.zeros((1, 2))})
    with pytest.raises(ValueError, match="no LoRA factors"):
        as_factors({"bias": np.zeros(2)})


def test_probe_distances_match_hand_computation():
    probe = DriftProbe(scaling=2.0)
    probe.start_round(_state([[0.0, 0.0]], [[0.0], [0.0]]))  # broadcast adapter: ΔW = 0
    # client x: A = [1, 0], B = [1, 0]^T → ΔW = 2·[[1, 0], [0, 0]];  client y: A = [0, 1], B = [0, 1]^T → 2·[[0, 0], [0, 1]]
    for cid, a, b, g in (("x", [[1.0, 0.0]], [[1.0], [0.0]], [1.0, 0.0]), ("y", [[0.0, 1.0]], [[0.0], [1.0]], [0.0, 1.0])):
        probe._pending[cid] = np.asarray(g)
        probe.step_done(cid, 0, "public", _state(a, b), {"reward_std": 0.5, "frac_zero_std": 0.25},
                        replacement_per_prompt=[0.5, 0.0] if cid == "x" else [0.0, 0.0])
    (rec,) = probe.end_round()
    assert rec["step"] == 0 and rec["step_kind"] == "public" and rec["clients"] == 2
    assert rec["pairwise_effective"] == pytest.approx(np.sqrt(4 + 4))  # ‖2·diag(1,0) − 2·diag(0,1)‖_F
    assert rec["pairwise_factors"] == pytest.approx(np.sqrt(2 + 2))  # ‖ΔA‖² = 2, ‖ΔB‖² = 2
    assert rec["to_global_effective"] == pytest.approx(2.0)
    assert rec["to_global_factors"] == pytest.approx(np.sqrt(2))
    # ḡ = (0.5, 0.5): (1/2)·(0.5 + 0.5) / 0.5 = 1;  ζ = ‖(1, −1)‖ = √2
    assert rec["grad_dissimilarity"] == pytest.approx(1.0)
    assert rec["zeta"] == pytest.approx(np.sqrt(2))
    assert rec["replacement_fraction"] == pytest.approx(0.125) and rec["replacement_per_prompt"] == [0.25, 0.0]
    assert rec["reward_std"] == 0.5 and rec["frac_zero_std"] == 0.25
    assert probe.end_round() == []  # snapshots are dropped once reported


def test_probe_rejects_misuse():
    with pytest.raises(ValueError, match="scaling"):
        DriftProbe(0)
    probe = DriftProbe(1.0)
    with pytest.raises(RuntimeError, match="start_round"):
        probe.end_round()
    probe.start_round(_state([[0.0]], [[0.0]]))
    with pytest.raises(ValueError, match="kind"):
        probe.step_done("x", 0, "other", _state([[0.0]], [[0.0]]), {})


def test_trace_drift_config_is_validated(tiny_dir):
    with pytest.raises(ValueError, match="trace_drift"):
        small_config(tiny_dir, trace_drift="yes")


@pytest.mark.parametrize("method,kinds", [("fedavg_grpo", ["private"] * 4),
                                          ("pubswap_balanced", ["private", "public", "private", "public"])])
def test_one_record_per_local_step_and_training_unchanged(method, kinds):
    # the committed base has mixed rewards, so gradients and swaps are not trivially zero
    kw = dict(method=method, rounds=1, local_steps=4, pubswap={"period": 2}, prompts_per_step=2, num_generations=4,
              max_new_tokens=16)
    traced = Run(small_config(BASE, trace_drift=True, **kw), progress=False)
    plain = Run(small_config(BASE, **kw), progress=False)
    rec_t, rec_p = traced.run(), plain.run()
    drift = [r for r in rec_t if r["kind"] == "drift"]
    assert [d["step"] for d in drift] == [0, 1, 2, 3] and [d["step_kind"] for d in drift] == kinds
    assert all(d["clients"] == 3 and d["pairwise_effective"] > 0 and d["to_global_factors"] > 0 for d in drift)
    # drift from the round's start can only be measured growing here: every step moves every client
    assert drift[-1]["to_global_factors"] > drift[0]["to_global_factors"]
    if method == "pubswap_balanced":
        assert all("replacement_per_prompt" in d and len(d["replacement_per_prompt"]) == 2 for d in drift[1::2])
    # instrumentation is simulation-side: same metrics (but the drift records and timings), same ledger bytes
    strip = lambda recs: [{k: v for k, v in r.items() if k != "seconds"} for r in recs if r["kind"] != "drift"]  # noqa: E731
    assert strip(rec_t) == strip(rec_p)
    assert traced.runtime.ledger.total_bytes() == plain.runtime.ledger.total_bytes()
