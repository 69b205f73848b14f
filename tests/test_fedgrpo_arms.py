"""FedGRPO's control arms: every expert holding every label (``fedgrpo.ae_holders = "all"``, the official trainer's
setting) and experts drawn at random instead of by competence (``fedgrpo.selection = "random"``)."""

import json

import numpy as np
import pytest

from fedrl_kit import seeding
from fedrl_kit.fedgrpo import algorithm, diagnostics
from fedrl_kit.fedgrpo.expert_selection import random_selection
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.rewards import accuracy_reward
from fedrl_kit.runs import Run
from test_fedgrpo_method import fg_config


def _step(run, q_idx, round=1, step=0, available=None):
    server = run.server
    algorithm.ensure_embeddings(server)
    server.policy.set_state(GLOBAL, server.global_state)
    return algorithm.server_step(server, round, step, np.asarray(q_idx), 0,
                                 available or list(server.runtime.client_ids), update=False)


@pytest.mark.parametrize("queries", ["train", "public"])
def test_all_holders_make_every_gate_decision_ae_with_the_exact_check(tiny_dir, queries):
    fields = {"ae_holders": "all", "num_experts": 3}
    if queries == "public":
        fields.update(queries="public", gt_fraction=1.0)
    run = Run(fg_config(tiny_dir, fedgrpo=fields), progress=False).build()
    pool = run.truth.fact("queries")
    assert pool.labelled.all()
    owned = {k: sorted(c.prompts) for k, c in enumerate(run.clients.values())}
    tr = _step(run, np.arange(10) * (len(pool.rows) // 10))  # 10 questions across D_s
    answers = [str(pool.rows[int(i)]["answer"]) for i in tr.q_idx]
    n = 0
    for i, q in enumerate(tr.questions):
        assert len(tr.scorers[i]) == 3
        for k, r in zip(tr.scorers[i], tr.scores[i]):
            assert run.clients[tr.client_ids[k]].holds(q)  # owner or not
            exact = [v or 0.0 for v in accuracy_reward([q] * len(tr.candidates[i]), tr.candidates[i],
                                                        answer=[answers[i]] * len(tr.candidates[i]))]
            np.testing.assert_array_equal(r, exact)
            n += 1
    assert n == 30
    d = diagnostics.diagnostics(run.truth, 1, {"trace": [tr], "clients": {"server": {}}})
    assert d["server"]["ae_share"] == 1.0
    # θ_k still trains on its own D_k only: holding a label for AE is not training data
    assert {k: sorted(c.prompts) for k, c in enumerate(run.clients.values())} == owned
    owner = Run(fg_config(tiny_dir, fedgrpo={"num_experts": 3}), progress=False).build()
    share = diagnostics.diagnostics(owner.truth, 1, {"trace": [_step(owner, np.arange(0, 40, 4))],
                                                     "clients": {"server": {}}})["server"]["ae_share"]
    assert share < 0.5  # the owner alone holds it: at most one of the three experts


def test_ae_holders_default_is_the_variants_own_and_no_gt_holds_nothing(tiny_dir):
    assert fg_config(tiny_dir).fedgrpo.holders() == "owner"
    assert fg_config(tiny_dir, fedgrpo={"group_reward": "official"}).fedgrpo.holders() == "all"
    assert fg_config(tiny_dir, fedgrpo={"group_reward": "official", "ae_holders": "owner"}).fedgrpo.holders() == "owner"
    run = Run(fg_config(tiny_dir, fedgrpo={"ae_holders": "all", "mode": "no_gt", "gt_fraction": 0.5}),
              progress=False).build()
    assert not any(c.holds(q) for c in run.clients.values() for q in run.server.world.queries["prompt"])


@pytest.mark.parametrize("field, value", [("ae_holders", "some"), ("selection", "best"), ("selection", "random")])
def test_bad_arm_settings_name_the_field(tiny_dir, field, value):
    extra = {"group_reward": "official"} if value == "random" else {}
    with pytest.raises(ValueError, match=f"fedgrpo.{field}"):
        fg_config(tiny_dir, fedgrpo={field: value, **extra})


def test_random_selection_draws_m_distinct_available_experts_from_its_stream(tiny_dir):
    run = Run(fg_config(tiny_dir, fedgrpo={"selection": "random", "num_experts": 2}), progress=False).build()
    run.runtime.keep_messages = True
    cids = list(run.server.runtime.client_ids)
    available = cids[1:]  # client_0 dropped out earlier in the round
    q_idx = np.arange(0, 60, 3)  # 20 questions
    tr = _step(run, q_idx, round=2, step=1, available=available)
    assert tr.experts.shape == (20, 2) and all(len(set(r)) == 2 for r in tr.experts)
    assert 0 not in tr.experts
    expected = np.arange(1, len(cids))[random_selection(len(cids) - 1, 2, 20,
                                                        seeding.rng("fedgrpo/random_experts", run.config.seed, 2, 1))]
    np.testing.assert_array_equal(tr.experts, expected)
    assert tr.competence_queries == 0 and not [m for m in run.runtime.messages if m.kind == "competence"]
    for i in range(20):  # the experts drawn are the ones that scored, all G candidates each (the paper's protocol)
        assert sorted(tr.scorers[i]) == sorted(tr.experts[i])
        assert all(len(r) == 4 for r in tr.scores[i])
    other = _step(run, q_idx, round=2, step=0, available=available)  # another step: another draw
    assert not np.array_equal(other.experts, tr.experts)
    again = Run(fg_config(tiny_dir, fedgrpo={"selection": "random", "num_experts": 2}), progress=False).build()
    np.testing.assert_array_equal(_step(again, q_idx, round=2, step=1, available=available).experts, tr.experts)


def test_random_selection_trains_and_its_hit_rate_is_chance(tiny_dir):
    cfg = fg_config(tiny_dir, rounds=1, fedgrpo={"selection": "random", "num_experts": 1})
    recs = Run(cfg, progress=False).run()
    server = [r for r in recs if r.get("client") == "server"][0]
    assert np.isfinite(server["loss"]) and server["competence_queries"] == 0
    assert 0 <= server["expert_hit_rate"] <= 1 and np.isfinite(server["random_hit_rate"])


def test_a_config_written_before_ae_holders_resumes_with_the_owners_labels(tiny_dir):
    from fedrl_kit.config import RunConfig

    cfg = fg_config(tiny_dir, fedgrpo={"group_reward": "official"})
    old = json.loads(cfg.to_json())
    del old["fedgrpo"]["ae_holders"]
    assert RunConfig.from_dict(old).fedgrpo.holders() == "owner"  # as the run started
    assert RunConfig.from_dict(json.loads(cfg.to_json())).fedgrpo.holders() == "all"


def test_the_notebooks_step_through_shows_a_random_arms_experts(tiny_dir):
    run = Run(fg_config(tiny_dir, fedgrpo={"selection": "random", "num_experts": 2}), progress=False).build()
    out = diagnostics.trace_question(run.server, 3, truth=run.truth)
    assert len(out["experts"]) == 2 and len(set(out["experts"])) == 2
    assert len(out["neighbours"]) == 0 and len(out["competence"]) == 0  # no competence step in this arm
    assert out["scores"].shape == (2, 4)
