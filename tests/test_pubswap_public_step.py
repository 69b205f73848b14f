"""The notebook's swap view (fedrl_kit.pubswap.public_step) against the swap a real round sends."""

from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.pubswap.public_step import generate_public, group_table, swap_public
from fedrl_kit.runs import Run

BASE = str(Path(__file__).resolve().parents[1] / "data" / "base")  # mixed rewards: Balanced has swaps to make


def _config(method):
    return small_config(BASE, method=method, rounds=1, local_steps=2, pubswap={"period": 2}, num_generations=4,
                        prompts_per_step=2, max_new_tokens=16)


@pytest.mark.parametrize("rule", ["random", "balanced"])
def test_swap_view_reproduces_the_rounds_public_step(rule):
    real = Run(_config(f"pubswap_{rule}"), progress=False).build()
    real.runtime.keep_messages = True
    real.run()
    sent = {m.receiver: m.payload for m in real.runtime.messages if m.kind == "public_step"}  # step 1 of round 1
    asked = [m.payload["batch"] for m in real.runtime.messages if m.kind == "public_generate"]

    view = Run(_config(f"pubswap_{rule}"), progress=False).build()  # same seed: the same start
    server = view.server
    server.runtime.broadcast("fit_begin", 1, {"adapter": server.global_state})  # the round up to its public step
    server.runtime.broadcast("private_step", 1, {"step": 0})
    gen = generate_public(server, round=1, step=1)
    results = swap_public(gen, rule)

    assert gen.batch == asked[0]
    assert gen.client_ids == sorted(sent) and len(results) == 2
    for n, cid in enumerate(gen.client_ids):
        assert [list(r.texts[n]) for r in results] == sent[cid]["texts"]
        own = [[int(k) if int(j) == n else -1 for j, k in r.source[n]] for r in results]
        assert own == sent[cid]["own_index"]
    if rule == "balanced":  # the base model's mixed rewards make Balanced swap somewhere in this step
        assert any(r.num_replaced.sum() > 0 for r in results)
    table = group_table(gen, results, 0, 0)
    assert list(table["group"]) == sent[gen.client_ids[0]]["texts"][0]
    assert table.attrs["swapped_in"] == sum(k < 0 for k in sent[gen.client_ids[0]]["own_index"][0])


def test_smaller_k_and_bad_arguments_name_the_field():
    run = Run(_config("pubswap_balanced"), progress=False).build()
    server = run.server
    server.runtime.broadcast("fit_begin", 1, {"adapter": server.global_state})
    gen = generate_public(server, round=1, step=1)
    small = swap_public(gen, "balanced", K=2)
    for r in small:
        assert r.correct.shape == (3, 2) and r.source[:, :, 1].max() < 2  # only the first 2 responses are pooled
        assert (r.num_replaced <= np.maximum(1 - r.own_correct, 0)).all()  # M_n ≤ (K/2 − c_n)_+ with K = 2
    with pytest.raises(ValueError, match="step"):
        generate_public(server, round=1, step=0)  # a private step
    with pytest.raises(ValueError, match="round"):
        generate_public(server, round=0, step=1)
    with pytest.raises(ValueError, match="K"):
        swap_public(gen, "balanced", K=5)
    with pytest.raises(ValueError, match="rule"):
        swap_public(gen, "greedy")
    with pytest.raises(ValueError, match="prompt"):
        group_table(gen, small, 0, 2)
