"""Idle clients hold nothing live: with ``clients_per_round`` a client that sits a round out has no adapter in the
model, no optimiser and no copy of its rows (``GRPOClient.park``), and when it is drawn again it continues from
exactly the state it kept, in-process and on Flower's message API."""

import numpy as np
import pytest

import fedrl_kit.runs
from conftest import interrupted_and_resumed, small_config
from fedrl_kit.flower import FlowerRuntime, LoopbackGrid, client_app
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.runs import Run, load_records


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def _cfg(tiny_dir, **kw):
    # Adam's moments kept across rounds (reset_optimizer off): the state a parked client must carry
    return small_config(tiny_dir, **{**dict(num_clients=5, clients_per_round=2, rounds=5, n_train=100,
                                            reset_optimizer=False), **kw})


def _returning(run, rounds):
    """A client drawn in a round after one it sat out, having trained before."""
    drawn = [set(run.server.participants(r)) for r in range(1, rounds + 1)]
    for r in range(2, rounds):
        for cid in drawn[r]:
            if cid not in drawn[r - 1] and any(cid in d for d in drawn[:r - 1]):
                return cid, r + 1
    return None, None


def test_after_each_round_only_its_participants_hold_an_adapter(tiny_dir, monkeypatch):
    seen, park = [], fedrl_kit.runs.park_idle

    def watched(clients, participants):  # called at the start of each round, before it runs
        run = next(iter(clients.values()))
        before = set(run.policy.model.peft_config) - {GLOBAL}
        park(clients, participants)
        seen.append((before, set(run.policy.model.peft_config) - {GLOBAL}, set(participants)))
        for cid, c in clients.items():
            if cid not in participants:  # parked: no optimiser, no rows; its moments as numpy arrays once trained
                assert c.optimizer is None and c._rows is None and cid not in run.policy.model.peft_config
                moments = [v for s in (c._moments or {}).get("state", {}).values() for v in s.values()]
                assert all(isinstance(v, np.ndarray) for v in moments)

    monkeypatch.setattr(fedrl_kit.runs, "park_idle", watched)
    run = Run(_cfg(tiny_dir), progress=False)
    run.run()
    assert len(seen) == run.config.rounds and seen[0][0] == set()
    for r in range(1, run.config.rounds):  # what round r left live is its participants; parking keeps those drawn again
        assert seen[r][0] == set(run.server.participants(r)), r
        assert seen[r][1] == seen[r][0] & seen[r][2], r
    assert any(not s[1] >= s[0] for s in seen)  # some client was parked


def test_a_client_drawn_again_continues_from_its_own_state(tiny_dir, monkeypatch):
    cfg = _cfg(tiny_dir)
    parked = Run(cfg, progress=False)
    got = parked.run()
    cid, back = _returning(parked, cfg.rounds)
    assert cid is not None, "the draw gives no client that sits a round out and comes back: change the seed"
    assert parked.clients[cid].optimizer is not None or parked.clients[cid]._moments is not None
    monkeypatch.setattr(fedrl_kit.runs, "park_idle", lambda clients, participants: None)  # everyone stays live
    live = Run(cfg, progress=False)
    want = live.run()
    assert len(live.policy.model.peft_config) > len(parked.policy.model.peft_config)  # the reference kept more
    assert _strip(got) == _strip(want)  # every record, the returning client's rounds included
    for k in live.server.global_state:
        assert np.array_equal(parked.server.global_state[k], live.server.global_state[k])


def test_parked_moments_are_what_a_checkpoint_keeps_and_a_resume_continues_from(tiny_dir, tmp_path):
    whole, resumed = interrupted_and_resumed(_cfg(tiny_dir, rounds=3), tmp_path)
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))
    for k in whole.server.global_state:
        assert np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])


@pytest.mark.serial
def test_on_flowers_message_api_idle_clients_are_parked_and_the_records_are_in_process_ones(tiny_dir):
    cfg = _cfg(tiny_dir, rounds=3)
    want = Run(cfg, progress=False).run()
    grid = LoopbackGrid(client_app, cfg.num_clients)

    def runtime(clients, faults, timeout=None, replies=None, expect=None):
        return FlowerRuntime(grid, list(clients), cfg.to_json(), 600.0, faults=faults, replies=replies, expect=expect)

    run = Run(cfg, progress=False, runtime=runtime)
    got = run.run()
    assert grid.drain()
    assert _strip(got) == _strip(want)
    side = fedrl_kit.flower._SIDES[cfg.to_json()]
    model = next(iter(side["clients"].values())).policy.model
    assert set(model.peft_config) - {GLOBAL} == set(run.server.participants(cfg.rounds))
