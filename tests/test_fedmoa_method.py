"""FedMOA on the engine: settings and worlds, the plan, hook-based hypergradients, eq. 11–13 in a round,
determinism, resume, failures (fedrl_kit/fedmoa/). Pure-function checks live in test_fedmoa_parts.py."""

import json
import math

import numpy as np
import pytest
import torch

from conftest import small_config
from experiments import fedmoa_analysis as analysis
from fedrl_kit.aggregate import fedavg
from fedrl_kit.config import preset
from fedrl_kit.fedmoa import algorithm, client, plan
from fedrl_kit.fedmoa.args import FedMOAArgs
from fedrl_kit.fedmoa.weights import hypergradient_step
from fedrl_kit.grpo import GRPOSettings
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rollout import per_token_logps
from fedrl_kit.runs import Interrupted, Run, load_records
from fedrl_kit.world.families import FAMILIES, make_family_world


def moa_config(tiny_dir, fedmoa=None, **kw):
    base = dict(method="fedmoa", n_train=60, n_test=6, local_steps=2, max_new_tokens=10,
                fedmoa={"eval_local": False, **(fedmoa or {})})
    base.update(kw)
    return small_config(tiny_dir, **base)


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


# --- settings, worlds and the plan ----------------------------------------------------------------


@pytest.mark.parametrize(
    "args, key",
    [
        ({"setting": "heter"}, "setting"),
        ({"homo_family": "physics"}, "homo_family"),
        ({"lam": -0.1}, "lam"),
        ({"lam": "big"}, "lam"),
        ({"reset_weights": "yes"}, "reset_weights"),
        ({"round_start": "reset"}, "round_start"),
        ({"init_weights": "random"}, "init_weights"),
        ({"lam_rule": "auto"}, "lam_rule"),
        ({"hyper_grad": "token"}, "hyper_grad"),
        ({"lambda_on": 1}, "lambda_on"),
        ({"alpha_on": None}, "alpha_on"),
        ({"hyper_layer": "middle"}, "hyper_layer"),
        ({"eps": 0}, "eps"),
        ({"softmax_temperature": -1.0}, "softmax_temperature"),
        ({"cluster_key": "task"}, "cluster_key"),
        ({"eval_every": 0}, "eval_every"),
        ({"eval_local": "first"}, "eval_local"),
        ({"lamda": 0.1}, "lamda"),
    ],
)
def test_bad_fedmoa_arguments_raise_naming_the_field(tiny_dir, args, key):
    with pytest.raises(ValueError, match=rf"fedmoa\.{key}"):
        moa_config(tiny_dir, fedmoa=args)


def test_heter_setting_needs_a_client_per_family(tiny_dir):
    with pytest.raises(ValueError, match="num_clients"):
        moa_config(tiny_dir, num_clients=2, fedmoa={"setting": "heter+heter"})
    moa_config(tiny_dir, num_clients=2, world="families:math", fedmoa={"setting": "homo+heter"})


def test_quick_preset_gives_fedmoa_its_world_and_base():
    cfg = preset("quick", method="fedmoa")
    assert (cfg.world, cfg.base, cfg.max_new_tokens) == ("families", "data/base_moa", 32)
    assert preset("quick", method="fedavg_grpo").world == "arith"  # other methods keep theirs
    homo = preset("quick", method="fedmoa", world="families:gsm", fedmoa={"setting": "homo+homo", "homo_family": "gsm"})
    assert homo.world == "families:gsm"


@pytest.mark.parametrize(
    "world, args, need",
    [
        ("families", {"setting": "homo+homo"}, "families:math"),
        ("families", {"setting": "homo+heter", "homo_family": "gsm"}, "families:gsm"),
        ("families:math", {"setting": "homo+heter", "homo_family": "code"}, "families:code"),
        ("families:math", {"setting": "heter+heter"}, "families"),
        ("families:gsm,math,code", {"setting": "heter+heter"}, "families"),  # plan order: math, gsm, code
        ("arith", {}, "families"),
    ],
)
def test_world_must_hold_the_plans_families(tiny_dir, world, args, need):
    with pytest.raises(ValueError, match=rf"world must be '{need}'.*set world='{need}'"):
        moa_config(tiny_dir, world=world, fedmoa=args)
    assert plan.world_for(args.get("setting", "heter+heter"), 3, args.get("homo_family", "math")) == need
    moa_config(tiny_dir, world=need, fedmoa=args)


def test_client_plan_follows_the_paper_settings():
    assert plan.client_plan("homo+homo", 3) == [("math", "A")] * 3
    assert plan.client_plan("homo+heter", 4, "gsm") == [("gsm", "A"), ("gsm", "B"), ("gsm", "C"), ("gsm", "A")]
    p = plan.client_plan("heter+heter", 9)
    assert sorted(p) == sorted((f, c) for f in FAMILIES for c in "ABC")
    for fam, cfgs in plan.REWARD_CONFIGS.items():  # accuracy is always component 0 (Table 3)
        assert {names[0] for names in cfgs.values()} == {"code_accuracy" if fam == "code" else "accuracy"}
        assert all(plan.config_name(fam, names) == c for c, names in cfgs.items())
    assert FedMOAArgs(lambda_on=False, alpha_on=False).label() == "FedAvg-GRPO"
    assert FedMOAArgs().label() == "FedMOA"


def test_clients_get_their_family_data_and_reward_sets(tiny_dir):
    run = Run(moa_config(tiny_dir, num_clients=6, n_train=90), progress=False).build()
    info = analysis.client_info(run)  # from what the clients told the server at round 0
    assert [(r["family"], r["config"]) for r in info] == plan.client_plan("heter+heter", 6)
    for (cid, c), row in zip(run.clients.items(), info):
        assert set(c.data["family"]) == {row["family"]}
        assert c.names == plan.REWARD_CONFIGS[row["family"]][row["config"]]
        assert run.server.properties[cid] == {"num_examples": 15, "reward_names": list(c.names), "family": c.family,
                                              "initial_weights": c.initial_weights}
    w_init = plan.initial_weights("heter+heter", plan.client_plan("heter+heter", 6))
    assert [p["initial_weights"] for p in run.server.properties.values()] == w_init
    prompts = [set(c.data["prompt"]) for c in run.clients.values()]
    assert all(not (a & b) for i, a in enumerate(prompts) for b in prompts[i + 1:])  # disjoint private data
    test_prompts = set(run.world.test["prompt"])
    assert not any(p & test_prompts for p in prompts)


def test_homo_setting_gives_its_one_family_the_whole_pool(tiny_dir):
    run = Run(moa_config(tiny_dir, world="families:gsm", fedmoa={"setting": "homo+heter", "homo_family": "gsm"}),
              progress=False).build()
    assert [p["num_examples"] for p in run.server.properties.values()] == [20, 20, 20]  # n_train = 60, one family
    assert set(run.world.test["family"]) == {"gsm"} and list(run.server.world.test_by_family) == ["gsm"]


def test_family_world_leaves_the_default_world_alone():
    from fedrl_kit.world.tasks import DEFAULT_TOPICS
    from fedrl_kit.world.world import make_world

    assert DEFAULT_TOPICS == ("add", "sub", "mul", "mod", "max", "count", "seq")
    assert make_world(0, 8, 4, 2, 2).test["prompt"] == make_world(0, 8, 4, 2, 2).test["prompt"]
    w = make_family_world(0, 30, 6)
    assert set(w.test["family"]) == set(FAMILIES) and len(w.test) == 18
    code = w.test_by_family["code"][0]
    assert code["answer"].startswith("assert f(")


def test_hyper_layer_out_of_range_names_the_field(tiny_dir):
    with pytest.raises(ValueError, match=r"fedmoa\.hyper_layer"):
        Run(moa_config(tiny_dir, fedmoa={"hyper_layer": 5}), progress=False).build()  # tiny model: 2 layers


# --- eq. 8–10: the hook-based hypergradient on a real (tiny) model ------------------------------------


@pytest.fixture(scope="module")
def tiny_policy(tiny_dir):
    return Policy.load(tiny_dir, lora_rank=2, lora_alpha=4.0, max_new_tokens=8)


def test_objective_gradients_are_the_gradient_of_L_k_at_the_hooked_layer(tiny_policy):
    pol = tiny_policy
    rollouts = pol.rollout("global", ["1+2=", "max(3,4)="], 4, seed=0)
    rng = np.random.default_rng(0)
    scores = np.stack([rng.integers(0, 2, 8), rng.random(8), np.full(8, 0.5)], axis=1).astype(float)  # [N, K=3]
    settings = GRPOSettings()
    g = client.objective_gradients(pol.model, rollouts, scores, 1, settings, hyper_grad="shared")  # [K, H]
    assert g.shape == (3, pol.model.config.hidden_size)
    np.testing.assert_array_equal(g[2], 0.0)  # a constant objective has zero advantage, hence no gradient
    # independent computation: retain the hooked layer's output and sum its gradient over positions
    from fedrl_kit.grpo import grpo_loss
    from fedrl_kit.fedmoa.weights import per_objective_advantages

    held = {}

    def keep(module, inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        out.retain_grad()
        held["h"] = out

    handle = client.decoder_layers(pol.model)[1].register_forward_hook(keep)
    logps = per_token_logps(pol.model, rollouts)
    handle.remove()
    adv = torch.as_tensor(per_objective_advantages(scores.reshape(2, 4, 3))[..., 0].reshape(-1), dtype=torch.float32)
    loss, _ = grpo_loss(logps, logps.detach(), adv, rollouts.completion_mask, 0.2, 0.25)
    loss.backward()
    expected = held["h"].grad.sum(dim=(0, 1)).double().numpy()  # [H]
    np.testing.assert_allclose(g[0], expected, rtol=1e-4, atol=1e-9)
    assert np.abs(g[0]).sum() > 0
    # per sequence: row i is sequence i's gradient summed over its positions; the rows add up to the shared one
    per_seq = held["h"].grad.sum(dim=1).double().numpy()  # [N, H]
    g_seq = client.objective_gradients(pol.model, rollouts, scores, 1, settings)  # [K, N·H]
    assert g_seq.shape == (3, 8 * pol.model.config.hidden_size)
    np.testing.assert_allclose(g_seq[0].reshape(8, -1), per_seq, rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(g_seq[0].reshape(8, -1).sum(0), g[0], rtol=1e-4, atol=1e-9)
    # micro-batches of 3 rows give the same gradients (shares of the dapo loss)
    small = client.objective_gradients(pol.model, rollouts, scores, 1, GRPOSettings(micro_batch_size=3))
    np.testing.assert_allclose(small, g_seq, rtol=1e-4, atol=1e-9)
    pol.model.zero_grad(set_to_none=True)


def test_delta_sign_aligned_positive_reversed_negative(tiny_policy):
    """Same rollouts at t−1 and t; objective 0 keeps its ranking, objective 1 is reversed (r → 1 − r)."""
    pol = tiny_policy
    rollouts = pol.rollout("global", ["12+7=", "count a in abca="], 4, seed=1)
    r0 = np.array([1, 0, 0, 1, 0, 1, 1, 0], dtype=float)
    r1 = np.array([0.2, 0.9, 0.4, 0.0, 0.75, 0.1, 0.5, 0.3])
    settings = GRPOSettings()
    g_prev = client.objective_gradients(pol.model, rollouts, np.stack([r0, r1], 1), 1, settings)
    g_now = client.objective_gradients(pol.model, rollouts, np.stack([r0, 1 - r1], 1), 1, settings)
    np.testing.assert_allclose(g_now[1], -g_prev[1], rtol=1e-4, atol=1e-10)  # A(1 − r) = −A(r)
    w, delta = hypergradient_step([0.5, 0.5], g_now, g_prev, lr=1e3)
    assert delta[0] > 0 and delta[1] < 0
    assert w[0] > 0.5 > w[1] and math.isclose(w.sum(), 1.0)


# --- eq. 11–13 inside a round -------------------------------------------------------------------------


def _reply(names, weights, n, value):
    return {"reward_names": list(names), "weights": list(weights), "num_examples": n,
            "adapter": {"a": np.full(2, value, dtype=np.float32)}}


def test_aggregate_round_matches_eq_11_to_13_by_hand():
    replies = {
        "m0": _reply(("accuracy", "format", "tag_count"), (0.2, 0.5, 0.3), 10, 1.0),
        "m1": _reply(("code_accuracy", "code_format", "length_short"), (0.4, 0.3, 0.3), 30, 5.0),
        "m2": _reply(("accuracy", "format"), (0.5, 0.5), 20, 3.0),
    }
    theta, weights, alphas, clusters = algorithm.aggregate_round(replies, True, "accuracy", 1e-6, 1.0)
    assert clusters == [["m0", "m2"], ["m1"]]  # by the accuracy reward's name
    s0, s2 = 1 / (0.2 + 1e-6), 1 / (0.5 + 1e-6)  # eq. 11
    a0 = math.exp(s0) / (math.exp(s0) + math.exp(s2))
    assert alphas["m0"] == pytest.approx(a0) and alphas["m2"] == pytest.approx(1 - a0) and alphas["m1"] == 1.0
    theta_math = a0 * 1.0 + (1 - a0) * 3.0  # eq. 12
    expected = (30 * theta_math + 30 * 5.0) / 60  # eq. 13: N_math = 10 + 20, N_code = 30
    np.testing.assert_allclose(theta["a"], [expected, expected], rtol=1e-6)
    # shared component (accuracy) aggregated with α; client-specific ones kept; each renormalised (eq. 1)
    w_acc = a0 * 0.2 + (1 - a0) * 0.5
    assert weights["m0"] == pytest.approx({k: v / (w_acc + 0.8) for k, v in
                                           {"accuracy": w_acc, "format": 0.5, "tag_count": 0.3}.items()})
    assert weights["m2"] == pytest.approx({"accuracy": w_acc / (w_acc + 0.5), "format": 0.5 / (w_acc + 0.5)})
    assert weights["m1"] == pytest.approx({"code_accuracy": 0.4, "code_format": 0.3, "length_short": 0.3})
    by_names = algorithm.aggregate_round(replies, True, "names", 1e-6, 1.0)[3]
    assert by_names == [["m0"], ["m1"], ["m2"]]


def test_alpha_off_is_fedavg_by_examples():
    rng = np.random.default_rng(0)
    replies = {f"m{i}": {**_reply(names, w, n, 0.0), "adapter": {"a": rng.normal(size=(3, 2)).astype(np.float32)}}
               for i, (names, w, n) in enumerate([(("accuracy", "format"), (0.1, 0.9), 7),
                                                   (("code_accuracy", "code_format"), (0.6, 0.4), 11),
                                                   (("accuracy", "tag_count"), (0.3, 0.7), 5)])}
    theta = algorithm.aggregate_round(replies, False, "accuracy", 1e-6, 1.0)[0]
    ref = fedavg([r["adapter"] for r in replies.values()], [7, 11, 5])
    np.testing.assert_allclose(theta["a"], ref["a"], rtol=1e-6)


# --- the engine: determinism, resume, failures ----------------------------------------------------------


def test_run_is_deterministic_and_resumes_bit_identically(tiny_dir, tmp_path):
    cfg = moa_config(tiny_dir, rounds=2, fedmoa={"round_start": "broadcast", "init_weights": "uniform",
                                                 "lam_rule": "fixed", "lam": 50.0, "hyper_grad": "shared"})
    whole = Run(cfg, tmp_path / "whole", progress=False)
    whole.run()
    again = Run(cfg, progress=False)
    again.run()
    assert _strip(whole.records) == _strip(again.records)
    with pytest.raises(Interrupted):
        Run(cfg, tmp_path / "cut", progress=False).run(stop_after=1)
    held = json.loads((tmp_path / "cut" / "checkpoint" / "fedmoa.json").read_text())["weights"]
    assert set(held) == {"client_0", "client_1", "client_2"}
    resumed = Run(cfg, tmp_path / "cut", progress=False)
    resumed.run()
    for k in whole.server.global_state:
        assert np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))
    assert whole.server.scratch["fedmoa"] == resumed.server.scratch["fedmoa"]
    recs = whole.records
    server = analysis.server_records(recs)
    assert [r["round"] for r in server] == [1, 2]
    assert {"global_accuracy", "aggregated_reward", "length", "math/format", "code/code_accuracy"} <= set(server[0])
    pts = analysis.pareto_points(recs, "accuracy", "format", "math", ["client_0"])
    assert len(pts["server"]) == 2 and len(pts["clients"]) == 2  # client_0 (math) in rounds 1 and 2
    c0 = next(r for r in recs if r.get("client") == "client_0")
    assert pts["clients"][0] == [c0["reward/accuracy"], c0["reward/format"]]  # no local eval: training rewards
    summ = analysis.summary(recs)
    assert summ["global_accuracy"] == server[-1]["global_accuracy"]
    for r in recs:
        if r["kind"] == "client" and r["client"] != "server":
            ws = [v for k, v in r.items() if k.startswith("w/")]
            assert len(ws) >= 2 and math.isclose(sum(ws), 1.0, abs_tol=1e-9) and min(ws) >= 0
    # weights carried over (not reset): round 2 starts from what the server aggregated after round 1
    # (a client's first local step has no g^(t−1), so its w@0 is exactly the broadcast weights)
    r2 = {r["client"]: r for r in recs if r["kind"] == "client" and r["round"] == 2 and r["client"] != "server"}
    r1 = {r["client"]: r for r in recs if r["kind"] == "client" and r["round"] == 1 and r["client"] != "server"}
    moved = [abs(r2[c][k] - 1 / 3) for c in r2 for k in r2[c] if k.startswith("w@0/")]
    assert max(moved) > 0  # λ large enough that the weights moved in round 1
    assert any(abs(r1[c][k] - 1 / 3) > 0 for c in r1 for k in r1[c] if k.startswith("w/"))


def test_failed_client_is_dropped_and_the_round_goes_on(tiny_dir):
    cfg = moa_config(tiny_dir, rounds=2, local_steps=1, fail_client="client_2@1")
    run = Run(cfg, progress=False)
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert len(failures) == 1 and failures[0]["client"] == "client_2" and "injected" in failures[0]["error"]
    r1 = {r["client"] for r in recs if r["kind"] == "client" and r["round"] == 1}
    assert r1 == {"client_0", "client_1", "server"}
    r2 = {r["client"] for r in recs if r["kind"] == "client" and r["round"] == 2}
    assert r2 == {"client_0", "client_1", "client_2", "server"}


def test_round_start_uniform_starts_every_round_uniform(tiny_dir):
    cfg = moa_config(tiny_dir, rounds=1, local_steps=1, world="families:math",
                     fedmoa={"setting": "homo+heter", "round_start": "uniform"})
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    run.run()
    fits = [m for m in run.runtime.messages if m.kind == "fit"]
    assert [len(m.payload["weights"]) for m in fits] == [3, 2, 2]  # configs A, B, C
    for m in fits:
        assert m.payload["weights"] == pytest.approx([1 / len(m.payload["weights"])] * len(m.payload["weights"]))
    ups = [m for m in run.runtime.messages if m.kind == "fit_result"]
    assert all(isinstance(m.payload["weights"], list) and isinstance(m.payload["reward_names"], list) for m in ups)
