"""What the quickstart measures about a federated round: the gap between averaging LoRA factors and averaging the
clients' updates, on hand-made factors and per round of a tiny run, and the round diagram's factor names."""

import numpy as np
import pytest

from fedrl_kit.aggregate import factor_gap
from fedrl_kit.config import preset
from fedrl_kit.diagrams import round_diagram
from fedrl_kit.notebook import SMOKE_SIZES, round_factor_gaps
from fedrl_kit.runs import Run


def _pair(u, d):
    return {"m.lora_A.weight": np.array(d, dtype=np.float32), "m.lora_B.weight": np.array(u, dtype=np.float32)}


def test_the_factor_gap_of_the_two_client_example_and_of_agreeing_clients():
    # U = (2, 0), D = (1, 3): mean of products 1, product of means 2 → |1 − 2| / 1
    clients = [_pair([[2.0]], [[1.0]]), _pair([[0.0]], [[3.0]])]
    assert factor_gap(clients, [1, 1]) == pytest.approx(1.0)
    # weights 3:1 → mean product 1.5, product of means 1.5 · 1.5 = 2.25 → 0.75 / 1.5
    assert factor_gap(clients, [3, 1]) == pytest.approx(0.5)
    same = _pair(np.ones((4, 2)), np.full((2, 3), 0.5))
    assert factor_gap([same, same, same], [1, 2, 3]) == pytest.approx(0.0, abs=1e-12)
    assert np.isnan(factor_gap([_pair([[0.0]], [[1.0]])] * 2, [1, 1]))  # U = 0: no update to compare with
    with pytest.raises(ValueError, match="weights"):
        factor_gap(clients, [1])
    with pytest.raises(ValueError, match="lora_A"):
        factor_gap([{"w": np.ones(2)}], [1])


def test_a_runs_round_gaps_and_reply_sizes():
    cfg = preset("quick", **{**SMOKE_SIZES["quickstart"], "rounds": 2, "num_clients": 2})
    run = Run(cfg, None, progress=False).build()
    run.runtime.keep_messages = True
    run.run()
    table = round_factor_gaps(run)
    assert list(table.index) == [1, 2]
    for column in ("gap, n_k weights", "gap, equal weights"):  # nan: a round whose clients all kept U = 0
        gaps = table[column].dropna()
        assert len(gaps) and gaps.between(0, 1).all()
    adapter_bytes = sum(v.nbytes for v in run.initial_state.values())
    assert (table["bytes up per client"] > adapter_bytes).all()  # the adapter, its tensors' names, the metrics
    assert (table["bytes up per client"] < 1.05 * adapter_bytes).all()
    with pytest.raises(ValueError, match="keep_messages"):
        round_factor_gaps(Run(cfg, None, progress=False).build())


def test_the_fedavg_round_diagram_names_the_factors_d_and_u():
    svg = round_diagram("fedavg_grpo").svg
    assert "(D, U)" in svg and "(D_k, U_k)" in svg and "(A, B)" not in svg
