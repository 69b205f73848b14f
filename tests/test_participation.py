"""Partial participation (``clients_per_round``): which clients take part, that only they are asked and
aggregated, that the draw is recorded and survives a resume, and that every method's round uses it."""

from pathlib import Path

import numpy as np
import pytest

from conftest import interrupted_and_resumed, small_config
from fedrl_kit.aggregate import aggregate
from fedrl_kit.config import preset
from fedrl_kit.runs import Run, load_records

ROOT = Path(__file__).resolve().parents[1]


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def test_the_draw_is_keyed_by_seed_and_round_and_every_client_takes_part_by_default(tiny_dir):
    run = Run(small_config(tiny_dir, num_clients=6, clients_per_round=2, n_train=120), progress=False).build()
    server = run.server
    drawn = [server.participants(r) for r in range(1, 21)]
    assert all(len(p) == 2 and len(set(p)) == 2 and set(p) <= set(server.runtime.client_ids) for p in drawn)
    assert drawn == [server.participants(r) for r in range(1, 21)]  # the same every time it is asked
    assert len({tuple(p) for p in drawn}) > 5  # and not one fixed pair
    counts = {cid: sum(cid in p for p in drawn) for cid in server.runtime.client_ids}
    assert min(counts.values()) > 0  # over 20 rounds every client is drawn
    assert all(p == sorted(p, key=server.runtime.client_ids.index) for p in drawn)  # in the runtime's order
    every = Run(small_config(tiny_dir, num_clients=6, n_train=120), progress=False).build().server
    assert every.participants(1) == list(every.runtime.client_ids)


@pytest.mark.parametrize("bad", [-1, 5, 2.5])
def test_a_bad_clients_per_round_names_the_field(bad):
    with pytest.raises(ValueError, match="clients_per_round"):
        preset("quick", num_clients=4, clients_per_round=bad)


def test_only_the_participants_are_asked_and_averaged_and_the_record_says_who(tiny_dir):
    cfg = small_config(tiny_dir, num_clients=4, clients_per_round=2, rounds=2, aggregator="fedavg")
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    records = run.run()
    for r in (1, 2):
        who = run.server.participants(r)
        fit = [m for m in run.runtime.messages if m.kind == "fit" and m.round == r]
        assert [m.receiver for m in fit] == who
        assert sorted(x["client"] for x in records if x["kind"] == "client" and x["round"] == r) == sorted(who)
        comm = next(x for x in records if x["kind"] == "comm" and x["round"] == r)
        assert comm["participants"] == who
    # round 2's global adapter is the FedAvg of round 2's two replies, nobody else's
    replies = [m.payload for m in run.runtime.messages if m.kind == "fit_result" and m.round == 2]
    want = aggregate([p["adapter"] for p in replies], "fedavg", [p["num_examples"] for p in replies])
    for k in want:
        assert np.array_equal(run.server.global_state[k], want[k])
    # every client taking part writes no participants field: records as before the option existed
    full = Run(small_config(tiny_dir, num_clients=4, rounds=1), progress=False).run()
    assert all("participants" not in x for x in full if x["kind"] == "comm")


def test_an_interrupted_run_with_partial_participation_resumes_bit_identically(tiny_dir, tmp_path):
    cfg = small_config(tiny_dir, num_clients=4, clients_per_round=2, rounds=3, reset_optimizer=False)
    whole, resumed = interrupted_and_resumed(cfg, tmp_path)
    for k in whole.server.global_state:
        assert np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))


BASE = str(ROOT / "data" / "base")
METHODS = {  # method → (config fields, the message kinds a round sends to clients)
    "pubswap_balanced": (dict(local_steps=2, pubswap={"period": 2}, num_generations=4, prompts_per_step=2,
                              max_new_tokens=16), {"fit_begin", "private_step", "public_generate", "public_step",
                                                   "fit_end"}),
    "fedmoa": (dict(base=str(ROOT / "data" / "base_moa"), world="families", n_train=120, n_test=3, n_aux=9,
                    local_steps=1, prompts_per_step=2, num_generations=4, max_new_tokens=16,
                    fedmoa={"eval_local": False, "validate": False, "setting": "heter+heter"}), {"fit"}),
    "fedgrpo": (dict(fedgrpo={"neighbours": 2, "num_experts": 2}, evaluator={"sft_steps": 2, "sft_batch": 4}),
                {"competence", "score"}),
    "fedpetuning_sft": (dict(), {"fit"}),
}


@pytest.mark.parametrize("method", list(METHODS))
def test_every_methods_round_asks_only_its_participants(method):
    fields, kinds = dict(METHODS[method][0]), METHODS[method][1]
    base, n_train = fields.pop("base", BASE), max(120, fields.pop("n_train", 0))
    cfg = small_config(base, method=method, num_clients=6, clients_per_round=3, rounds=2, n_train=n_train, **fields)
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    records = run.run()
    asked = {r: {m.receiver for m in run.runtime.messages if m.round == r and m.kind in kinds} for r in (1, 2)}
    for r in (1, 2):
        assert asked[r] and asked[r] <= set(run.server.participants(r)), (method, r)
        clients = {x["client"] for x in records if x["kind"] == "client" and x["round"] == r} - {"server"}
        assert clients <= set(run.server.participants(r)), (method, r)
