"""FedMOA's experimental setting as the paper builds it: eq. 12's weight broadcast and resume, heterogeneous
plans, eq. 9's g_k that does not cancel across tokens, the λ scale rule, the cosine schedule, validation and
the best round, the real-dataset families, the presets, and old configs keeping their behaviour."""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import small_config
from experiments import fedmoa_analysis as analysis
from experiments.fedmoa_presets import setting_config
from fedrl_kit.config import RunConfig, migrate
from fedrl_kit.federation.client import LocalSettings, scheduled_lr
from fedrl_kit.fedmoa import algorithm, client, plan
from fedrl_kit.fedmoa.weights import aggregate_shared_weights, hypergradient_step
from fedrl_kit.grpo import GRPOSettings
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rollout import Rollouts
from fedrl_kit.runs import Run

ROOT = Path(__file__).resolve().parents[1]


def moa_config(tiny_dir, fedmoa=None, **kw):
    base = dict(method="fedmoa", n_train=60, n_test=6, local_steps=2, max_new_tokens=10,
                fedmoa={"eval_local": False, **(fedmoa or {})})
    base.update(kw)
    return small_config(tiny_dir, **base)


# --- the plan: settings as the paper builds them --------------------------------------------------------------


def test_heter_heter_plan_holds_two_reward_sets_per_cluster_and_different_w0():
    for n in (6, 15):  # the smallest such federation and the paper's
        p = plan.client_plan("heter+heter", n)
        sets = plan.reward_sets_per_cluster(p, "accuracy")
        assert len(sets) == 2 and all(len(s) >= 2 for s in sets)  # math+gsm (accuracy) and code clusters
        w = plan.initial_weights("heter+heter", p)
        for fam in ("math", "gsm", "code"):
            w0 = [w[m][0] for m, (f, _) in enumerate(p) if f == fam]
            assert len(set(w0)) == len(w0)  # every client of a family starts from its own w_0
        assert all(math.isclose(sum(x), 1.0) and min(x) >= 0 for x in w)
    p15 = plan.client_plan("heter+heter", 15)
    assert {f: sum(g == f for g, _ in p15) for f in ("math", "gsm", "code")} == {"math": 5, "gsm": 5, "code": 5}
    assert sorted(c for f, c in p15 if f == "code") == ["A", "A", "B", "B", "C"]
    # 3 clients (the first experiments): one reward set per cluster, so eq. 11 never chooses between configs
    assert [len(s) for s in plan.reward_sets_per_cluster(plan.client_plan("heter+heter", 3))] == [1, 1]


def test_homo_settings_one_family_ten_clients():
    hh = plan.client_plan("homo+heter", 10, "gsm")
    assert {f for f, _ in hh} == {"gsm"} and [c for _, c in hh][:3] == ["A", "B", "C"]
    assert len({(c, tuple(w)) for (_, c), w in zip(hh, plan.initial_weights("homo+heter", hh))}) == 10
    homo = plan.client_plan("homo+homo", 10)
    assert plan.initial_weights("homo+homo", homo) == [[1 / 3] * 3] * 10  # one reward function, one w
    assert plan.initial_weights("homo+heter", hh, rule="uniform")[1] == [0.5, 0.5]


def test_a_uniform_start_gives_every_client_of_a_configuration_one_over_its_objectives():
    """``init_weights="uniform"``: each client starts at 1/K_m over its own K_m objectives, in every setting and
    family, whatever its place in the plan (no spread: the clients of one configuration start alike)."""
    for setting, n, fam in (("heter+heter", 15, "math"), ("homo+heter", 10, "gsm"), ("homo+heter", 10, "code"),
                            ("homo+homo", 10, "math")):
        p = plan.client_plan(setting, n, fam)
        w = plan.initial_weights(setting, p, rule="uniform")
        for (f, cname), wm in zip(p, w):
            k = len(plan.REWARD_CONFIGS[f][cname])
            assert wm == [1.0 / k] * k, (setting, f, cname, wm)
        starts = {}
        for (f, cname), wm in zip(p, w):
            starts.setdefault((f, cname), set()).add(tuple(wm))
        assert all(len(v) == 1 for v in starts.values())
    p15 = plan.client_plan("heter+heter", 15)
    first = {c: wm[0] for (f, c), wm in zip(p15, plan.initial_weights("heter+heter", p15, rule="uniform"))
             if f == "math"}
    assert first == {"A": 1 / 3, "B": 1 / 2, "C": 1 / 2}  # the MATH-like configs have K_m = 3, 2, 2


def test_lambda_off_alpha_on_from_uniform_starts_is_eq_11_of_k_m_and_fedavg_only_on_the_code_cluster():
    """With λ off the weights stay at their starts, so eq. 11's α of a round is the softmax of 1/(1/K_m + ε) over
    the cluster: derived here from the formula for the ``cpu`` scale's 15 clients (MATH/GSM8K cluster: 4 config A
    clients with K = 3, 6 config B/C clients with K = 2; code cluster: 5 clients, K = 3) and compared with the
    server's aggregation (``algorithm.aggregate_weights``)."""
    p = plan.client_plan("heter+heter", 15)
    w = plan.initial_weights("heter+heter", p, rule="uniform")
    replies = {f"client_{m}": {"reward_names": list(plan.REWARD_CONFIGS[f][c]), "weights": wm, "num_examples": 120}
               for m, ((f, c), wm) in enumerate(zip(p, w))}
    clusters, alphas, _ = algorithm.aggregate_weights(replies, True, "accuracy", 1e-6, 1.0)
    eps = 1e-6
    s3, s2 = 1 / (1 / 3 + eps), 1 / (1 / 2 + eps)  # s_m of eq. 11 for K_m = 3 and K_m = 2
    n3 = sum(1 for f, c in p if f != "code" and c == "A")
    n2 = sum(1 for f, c in p if f != "code" and c != "A")
    assert (n3, n2) == (4, 6)
    z = n3 * math.exp(s3) + n2 * math.exp(s2)
    want = {"A": math.exp(s3) / z, "B": math.exp(s2) / z, "C": math.exp(s2) / z}
    got = {}
    for ids, alpha in zip(clusters, alphas):
        for cid, a in zip(ids, alpha):
            f, c = p[int(cid.rsplit("_", 1)[1])]
            got.setdefault("code" if f == "code" else c, []).append(float(a))
    for c in ("A", "B", "C"):
        assert got[c] == pytest.approx([want[c]] * len(got[c]), abs=1e-12)
    assert got["code"] == pytest.approx([1 / 5] * 5, abs=1e-12)  # K = 3 for every code config: α is the data share
    assert (round(want["A"], 3), round(want["B"], 3)) == (0.161, 0.059)  # the numbers docs/fedmoa.md quotes
    # α off (FedAvg-GRPO's data shares) differs from α on in the MATH/GSM8K cluster only
    _, shares, _ = algorithm.aggregate_weights(replies, False, "accuracy", 1e-6, 1.0)
    for ids, a_on, a_off in zip(clusters, alphas, shares):
        is_code = p[int(ids[0].rsplit("_", 1)[1])][0] == "code"
        assert np.allclose(a_on, a_off, atol=1e-12) == is_code


def test_too_few_clients_for_a_heterogeneous_setting_warns(tiny_dir):
    with pytest.warns(UserWarning, match="eq. 11 never chooses"):
        moa_config(tiny_dir, num_clients=3, fedmoa={"setting": "heter+heter"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        moa_config(tiny_dir, num_clients=6, n_train=90, fedmoa={"setting": "heter+heter"})


# --- eq. 12: broadcast and resume -------------------------------------------------------------------------------


def _run_with_messages(cfg):
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    run.run()
    return run


def test_clients_resume_from_their_clusters_broadcast_weights(tiny_dir):
    cfg = moa_config(tiny_dir, rounds=2, num_clients=6, n_train=90,
                     fedmoa={"lam_rule": "fixed", "lam": 1e4, "eval_every": 2})
    run = _run_with_messages(cfg)
    fits = {(m.round, m.receiver): m.payload["weights"] for m in run.runtime.messages if m.kind == "fit"}
    ups = {(m.round, m.sender): m.payload for m in run.runtime.messages if m.kind == "fit_result"}
    props = run.server.properties
    for cid, p in props.items():  # round 1: the plan's initial weights, which the client itself announced
        assert fits[(1, cid)] == p["initial_weights"]
    recs = {(r["round"], r["client"]): r for r in run.records if r["kind"] == "client"}
    # round 2: eq. 12 by hand — α of each cluster (recorded), w_k^(c) = Σ α_m w_k^(m) on shared components
    clusters = {}
    for cid in props:
        clusters.setdefault(recs[(1, cid)]["cluster"], []).append(cid)
    assert len(clusters) == 2 and all(len({tuple(props[c]["reward_names"]) for c in ids}) == 2
                                      for ids in clusters.values())
    for ids in clusters.values():
        alpha = [recs[(1, c)]["alpha"] for c in ids]
        expected = aggregate_shared_weights([dict(zip(ups[(1, c)]["reward_names"], ups[(1, c)]["weights"]))
                                             for c in ids], alpha)
        for c, e in zip(ids, expected):
            assert fits[(2, c)] == pytest.approx([e[n] for n in props[c]["reward_names"]], abs=1e-12)
            # the client resumes from them: it starts round 2 there, and its first step (no g^(t−1)) keeps them
            names = props[c]["reward_names"]
            assert [recs[(2, c)][f"w_start/{n}"] for n in names] == fits[(2, c)]
            assert [recs[(2, c)][f"w@0/{n}"] for n in names] == fits[(2, c)]
    assert any(fits[(2, c)] != fits[(1, c)] for c in props)  # λ large enough that the weights moved
    assert any(recs[(1, c)]["w_move"] > 0 for c in props)


def test_the_properties_reply_must_announce_initial_weights_on_the_simplex():
    from fedrl_kit.federation.replies import Context
    from fedrl_kit.methods import method_spec

    check = method_spec("fedmoa").replies["properties"]
    ok = {"num_examples": 3, "reward_names": ["accuracy", "format"], "family": "math", "initial_weights": [0.4, 0.6]}
    check(ok, Context(), "")
    for w in ([0.5, 0.6], [1.0], [float("nan"), 1.0], [-0.5, 1.5]):
        with pytest.raises(ValueError, match="initial_weights"):
            check({**ok, "initial_weights": w}, Context(), "")
    with pytest.raises(ValueError, match="initial_weights"):
        check({k: v for k, v in ok.items() if k != "initial_weights"}, Context(), "")


def test_round_start_initial_resets_to_each_clients_own_initial_weights(tiny_dir):
    cfg = moa_config(tiny_dir, rounds=2, local_steps=2, num_clients=6, n_train=90,
                     fedmoa={"round_start": "initial", "lam_rule": "fixed", "lam": 1e4, "eval_every": 2})
    run = _run_with_messages(cfg)
    for m in run.runtime.messages:
        if m.kind == "fit":
            assert m.payload["weights"] == run.server.properties[m.receiver]["initial_weights"]


# --- eq. 8–9: g_k that does not cancel, λ's scale rule -----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_policy(tiny_dir):
    return Policy.load(tiny_dir, lora_rank=2, lora_alpha=4.0, max_new_tokens=8)


def test_sequence_g_k_survives_where_the_token_sum_cancels(tiny_policy):
    """Two one-token completions of one prompt, the same token, rewards 1 and 0: their advantages are ±a and
    their hidden-layer gradients exactly opposite, so the token-sum (shared δ) vanishes; the per-sequence
    g_k keeps both rows."""
    pol = tiny_policy
    ro = pol.rollout("global", ["1+2="], 2, seed=0)
    tok = ro.completion_ids[0, :1]  # [1] the first sampled token
    two = Rollouts(ro.prompt_ids[[0, 0]], ro.prompt_mask[[0, 0]], tok.repeat(2, 1), torch.ones(2, 1, dtype=torch.long),
                   ["1+2="] * 2, ["x", "x"], 2)
    scores = np.array([[1.0], [0.0]])  # [N=2, K=1]
    shared = client.objective_gradients(pol.model, two, scores, 1, GRPOSettings(), hyper_grad="shared")  # [1, H]
    seq = client.objective_gradients(pol.model, two, scores, 1, GRPOSettings())  # [1, 2·H]
    rows = seq.reshape(2, -1)  # [2, H]
    assert np.linalg.norm(rows[0]) > 1e-6
    np.testing.assert_allclose(rows[0], -rows[1], rtol=1e-4, atol=1e-7)  # opposite (to float32), not zero
    assert np.linalg.norm(shared) <= 1e-5 * np.linalg.norm(rows[0])  # the token-sum cancels
    # eq. 9 on them: Δ = g·g > 0 for the same batch twice; the shared version gives ~0
    assert hypergradient_step([1.0], seq, seq, 0.0)[1][0] == pytest.approx(float(seq[0] @ seq[0]))
    pol.model.zero_grad(set_to_none=True)


def test_target_lambda_moves_an_aligned_objective_by_the_target():
    g = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0]])  # |g|² = 25, 1, 0 (no gradient: left out of the mean)
    lam = client.target_lambda(g, 0.05)
    assert lam == pytest.approx(0.05 / 13.0)
    w, delta = hypergradient_step([0.2, 0.4, 0.4], g, g, lam)  # consecutive gradients agree: Δ_k = |g_k|²
    np.testing.assert_allclose(delta, [25.0, 1.0, 0.0])
    raw = np.array([0.2, 0.4, 0.4]) + lam * delta  # before the projection: objective 0 moves by 25/13 · target
    assert raw[0] - 0.2 == pytest.approx(0.05 * 25 / 13)
    assert math.isclose(w.sum(), 1.0) and w[0] > 0.2
    assert client.target_lambda(np.zeros((2, 3)), 0.05) == 0.0


def test_lambda_is_recorded_and_set_by_the_rule(tiny_dir):
    recs = Run(moa_config(tiny_dir, rounds=1, num_clients=3, fedmoa={"lam_target": 0.05}), progress=False).run()
    rows = [r for r in recs if r["kind"] == "client" and r["client"] != "server"]
    for r in rows:  # λ = target / mean_k |g_k|² of the round's first step (up to the float32 → float64 of g)
        assert r["lam"] > 0 and all(f"gsq/{n}" in r for n in ("accuracy", "code_accuracy") if f"w/{n}" in r)
    fixed = Run(moa_config(tiny_dir, rounds=1, num_clients=3, fedmoa={"lam_rule": "fixed", "lam": 0.01}),
                progress=False).run()
    assert {r["lam"] for r in fixed if r["kind"] == "client" and r["client"] != "server"} == {0.01}
    assert analysis.weight_moves(recs)[0]["w_move"] >= 0


def test_the_delta_trace_of_every_step_is_eq_9_on_hand_made_gradients(tiny_dir, monkeypatch):
    """The per-step trace ``delta@s/name`` a client records is eq. 9 on the step's g^(t) and g^(t−1): with hand-made
    g_k = (k + 1) c_s e (e a unit vector, c = 1, 2, −1 at steps 0, 1, 2), Δ_k is 0 at step 0, 2 (k + 1)² at step 1
    and −2 (k + 1)² at step 2, and the weights after each step are eq. 10's projection of w + λ Δ."""
    c = (1.0, 2.0, -1.0)
    e = np.full(4, 0.5)  # |e| = 1
    calls = []

    def hand_made(model, rollouts, scores, layer, settings, hyper_grad="lora"):
        step = len(calls) % 3  # sequential clients (the default batching): three calls each, one per local step
        calls.append(step)
        return np.stack([(k + 1) * c[step] * e for k in range(scores.shape[1])])  # [K, 4]

    monkeypatch.setattr(client, "objective_gradients", hand_made)
    lam = 1e-3
    recs = Run(moa_config(tiny_dir, rounds=1, num_clients=3, local_steps=3,
                          fedmoa={"lam_rule": "fixed", "lam": lam}), progress=False).run()
    rows = [r for r in recs if r["kind"] == "client" and r["client"] != "server"]
    assert len(rows) == 3 and len(calls) == 9  # three clients, three steps each
    for r in rows:
        names = [k.split("/", 1)[1] for k in r if k.startswith("w_start/")]
        for s in range(3):
            want = [0.0 if s == 0 else (k + 1) ** 2 * c[s] * c[s - 1] for k in range(len(names))]  # eq. 9 by hand
            assert [r[f"delta@{s}/{n}"] for n in names] == pytest.approx(want, rel=1e-12)
            before = np.array([r[f"w_start/{n}"] if s == 0 else r[f"w@{s - 1}/{n}"] for n in names])
            after = before if s == 0 else plan_step(before, lam, want)
            assert [r[f"w@{s}/{n}"] for n in names] == pytest.approx(list(after), abs=1e-12)
        assert r[f"delta/{names[0]}"] == pytest.approx(np.mean([r[f"delta@{s}/{names[0]}"] for s in range(3)]))
    # the analysis reads the trace back: step 0 left out, one row per later step and objective
    trace = analysis.delta_trace(recs)
    assert len(trace) == sum(2 * len([k for k in r if k.startswith("w_start/")]) for r in rows)
    signs = {s["rank"]: s for s in analysis.delta_signs(recs)}
    assert signs[0]["positive"] == 0.5 and signs[0]["mean_delta"] == pytest.approx(0.0)
    hist = analysis.round_history(recs)["clients"][0]
    assert any(k.startswith("delta@") for k in hist)  # kept in a result file's history


def plan_step(w, lam, delta):
    """Eq. 10 with the simplex projection, written out (weights.project_to_simplex is tested on its own)."""
    from fedrl_kit.fedmoa.weights import project_to_simplex

    return project_to_simplex(np.asarray(w) + lam * np.asarray(delta))


# --- the paper's lr schedule, validation and the best round ------------------------------------------------------


def test_cosine_schedule_decays_over_rounds_times_local_steps():
    local = LocalSettings(local_steps=2, learning_rate=2e-5, lr_schedule="cosine", rounds=3)  # S = 6 steps
    lrs = [scheduled_lr(local, r, s) for r in (1, 2, 3) for s in (0, 1)]
    expected = [2e-5 * 0.5 * (1 + math.cos(math.pi * k / 6)) for k in range(6)]
    np.testing.assert_allclose(lrs, expected)
    assert scheduled_lr(LocalSettings(learning_rate=1e-3), 5, 1) == 1e-3  # constant
    assert RunConfig().replace(lr_schedule="cosine", rounds=3).local_settings().rounds == 3


def test_validation_split_scores_every_round_and_the_best_round_is_reported(tiny_dir):
    cfg = moa_config(tiny_dir, rounds=2, num_clients=3, n_aux=9, local_steps=1)
    run = Run(cfg, progress=False)
    recs = run.run()
    val = run.world.val_by_family
    assert {f: len(d) for f, d in val.items()} == {"math": 3, "gsm": 3, "code": 3}
    for f in val:  # validation rows are held out and disjoint from the test rows
        assert not set(val[f]["prompt"]) & set(run.world.test_by_family[f]["prompt"])
    server = analysis.server_records(recs)
    assert all("val_accuracy" in r and "val/code/pass@1" in r for r in server)
    summ = analysis.summary(recs)
    best = max(server, key=lambda r: (r["val_accuracy"], -r["round"]))
    assert summ["best_round"] == best["round"] and summ["best/global_accuracy"] == best["global_accuracy"]
    assert summ["global_accuracy"] == server[-1]["global_accuracy"]


def test_best_record_takes_the_earliest_of_ties():
    recs = [{"kind": "client", "client": "server", "round": r, "val_accuracy": v, "global_accuracy": a,
             "aggregated_reward": 0.5, "length": 3.0} for r, v, a in ((1, 0.2, 0.1), (2, 0.4, 0.3), (3, 0.4, 0.5))]
    assert analysis.best_record(recs)["round"] == 2
    assert analysis.summary(recs)["best/global_accuracy"] == 0.3 and analysis.summary(recs)["global_accuracy"] == 0.5
    rows = [dict(setting="heter+heter", variant=v, seed=s, global_accuracy=a, aggregated_reward=0.5)
            for v, s, a in (("FedMOA", 0, 0.3), ("FedAvg-GRPO", 0, 0.2), ("FedMOA", 1, 0.2), ("FedAvg-GRPO", 1, 0.25))]
    GLOBAL = "FedMOA > FedAvg-GRPO on global accuracy (Heter+Heter, all families, ours)"
    REWARD = "FedMOA > FedAvg-GRPO on aggregated reward (Heter+Heter, all families, ours)"

    def claims(rows, prefix=""):
        return {c["claim"]: c for c in analysis.paired_claims(rows, prefix)}

    claim = claims(rows)[GLOBAL]
    assert claim["differences"] == pytest.approx([0.1, -0.05])
    assert claim["verdict"] == "within noise (95 % t interval contains 0)"
    assert claim["se"] == pytest.approx(0.075)  # sample std of (0.1, −0.05) / √2
    assert claim["half_width"] == pytest.approx(12.7062 * 0.075, abs=1e-4)  # t_{0.975, 1} · SE
    assert claims(rows[:2])[GLOBAL]["verdict"] == "one seed only: no verdict"
    assert claims(rows[:2])[GLOBAL]["half_width"] is None
    alpha = claims(rows)["α helps: λ off, α on > FedAvg-GRPO on accuracy (Table 2, all families, ours)"]
    assert alpha["verdict"] == "not run" and alpha["std"] is None
    def three_seeds(moa_minus_avg):  # FedAvg-GRPO 0.2, 0.25, 0.3; FedMOA that plus moa_minus_avg[seed]
        return [dict(setting="heter+heter", variant=v, seed=s, global_accuracy=a + (d if v == "FedMOA" else 0.0),
                     aggregated_reward=0.5) for v in ("FedMOA", "FedAvg-GRPO")
                for s, (a, d) in enumerate(zip((0.2, 0.25, 0.3), moa_minus_avg))]

    worse = three_seeds((-0.1, -0.15, -0.12))
    assert claims(worse)[GLOBAL]["verdict"] == "does not hold"  # −0.123 ± 0.063 (95 % t)
    assert claims(three_seeds((0.1, 0.1, 0.1)))[GLOBAL]["verdict"] == "holds"
    # every seed ahead is not enough when the spread swamps the mean: +0.01 and +0.3 (mean 0.155, SE 0.145)
    spread = [dict(r, global_accuracy={0: 0.21, 1: 0.55}[r["seed"]]) if r["variant"] == "FedMOA" else r
              for r in rows if r["seed"] < 2]
    spread = [dict(r, global_accuracy=0.2) if r["variant"] == "FedAvg-GRPO" else r for r in spread]
    assert claims(spread)[GLOBAL]["verdict"] == "within noise (95 % t interval contains 0)"
    # +0.01, +0.02, +0.03 over 3 seeds: above 0 by more than 2 SE (0.0115), not by t_{0.975, 2} · SE (0.0248)
    edge = three_seeds((0.01, 0.02, 0.03))
    assert claims(edge)[GLOBAL]["half_width"] == pytest.approx(4.3027 * 0.01 / 3 ** 0.5, abs=1e-5)
    assert claims(edge)[GLOBAL]["verdict"] == "within noise (95 % t interval contains 0)"
    # each setting's claim pairs that setting's runs only, and a Homo run's claims its own family's
    homo = [dict(r, setting="homo+heter", homo_family="gsm", **{"gsm/pass@1": r["global_accuracy"]}) for r in worse]
    by_claim = claims(homo)
    assert by_claim["FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Homo+Heter)"]["verdict"] == "does not hold"
    assert by_claim["FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Homo+Heter)"]["paper"] == pytest.approx(0.02)
    assert by_claim["FedMOA > FedAvg-GRPO on math accuracy (Table 1, Homo+Heter)"]["verdict"] == "not run"
    assert by_claim["FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Heter+Heter)"]["verdict"] == "not run"
    assert by_claim["FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Homo+Homo)"]["verdict"] == "not run"
    # the clients' own models in a Homo setting: that family's runs, paired the same way
    local = claims([dict(r, local_accuracy=r["global_accuracy"] / 2) for r in homo])
    own = local["FedMOA > FedAvg-GRPO on local accuracy (Homo+Heter, gsm, each client's own model, ours)"]
    assert own["differences"] == pytest.approx([d / 2 for d in by_claim[
        "FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Homo+Heter)"]["differences"]])
    assert own["paper"] is None
    assert local["FedMOA > FedAvg-GRPO on local accuracy (Homo+Heter, math, each client's own model, ours)"][
        "verdict"] == "not run"
    gsm = {c["claim"]: c for c in analysis.in_points(analysis.paired_claims(homo))}
    assert gsm["FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Homo+Heter)"]["unit"] == "points"  # pass@1 too
    assert gsm["FedMOA > FedAvg-GRPO on gsm accuracy (Table 1, Homo+Heter)"]["paper"] == pytest.approx(2.0)
    # the notebook's table: accuracy in points, rewards as they are, the verdict unchanged
    points = {c["claim"]: c for c in analysis.in_points(analysis.paired_claims(worse))}
    acc = points[GLOBAL]
    assert acc["unit"] == "points" and acc["differences"] == pytest.approx([-10.0, -15.0, -12.0])
    assert acc["half_width"] == pytest.approx(100 * claims(worse)[GLOBAL]["half_width"])
    assert acc["verdict"] == "does not hold"
    reward = points[REWARD]
    assert reward["unit"] == "reward" and reward["differences"] == pytest.approx([0.0, 0.0, 0.0])


def test_client_level_numbers_per_family_from_a_runs_history():
    """Table 1's parentheses in Heter+Heter: each family's clients' own models, taken from the stored history."""
    def row(variant, seed, accs):  # 6 clients of the plan: math, gsm, code, math, gsm, code
        names = {"math": ("accuracy", "format"), "gsm": ("accuracy", "format"), "code": ("code_accuracy", "tag_count")}
        fams = [f for f, _ in plan.client_plan("heter+heter", 6)]
        clients = [{"client": f"client_{m}", "round": 2, **{f"w/{n}": 0.5 for n in names[f]},
                    **{f"local/{n}": v for n, v in zip(names[f], (accs[m], 1.0))}} for m, f in enumerate(fams)]
        stale = [dict(c, round=1, **{f"local/{n}": 0.0 for n in names[f]}) for c, f in zip(clients, fams)]
        return {"setting": "heter+heter", "variant": variant, "seed": seed, "history": {"clients": stale + clients}}

    assert [f for f, _ in plan.client_plan("heter+heter", 6)] == ["math", "gsm", "code"] * 2
    base = row("FedAvg-GRPO", 0, [0.2, 0.3, 0.4, 0.4, 0.5, 0.6])
    got = analysis.family_locals(base)  # the last round only; reward = mean of accuracy and the other component
    assert got == pytest.approx({"math/local_accuracy": 0.3, "gsm/local_accuracy": 0.4, "code/local_accuracy": 0.5,
                                 "math/local_reward": 0.65, "gsm/local_reward": 0.7, "code/local_reward": 0.75})
    assert analysis.family_locals({"setting": "heter+heter"}) == {}
    rows = [row("FedAvg-GRPO", s, [0.2, 0.3, 0.4, 0.4, 0.5, 0.6]) for s in range(3)]
    rows += [row("FedMOA", s, [0.2, 0.3, 0.4 + d, 0.4, 0.5, 0.6 + d]) for s, d in enumerate((0.1, 0.2, 0.3))]
    claims = {c["claim"]: c for c in analysis.paired_claims(rows)}
    code = claims["FedMOA > FedAvg-GRPO on code client-level accuracy (Table 1 in parentheses, Heter+Heter, each "
                  "client's own model)"]
    assert code["differences"] == pytest.approx([0.1, 0.2, 0.3]) and code["paper"] == pytest.approx(0.0329)
    math_ = claims["FedMOA > FedAvg-GRPO on math client-level accuracy (Table 1 in parentheses, Heter+Heter, each "
                   "client's own model)"]
    assert math_["differences"] == pytest.approx([0, 0, 0]) and math_["paper"] == pytest.approx(0.0125)
    # the same as a table beside the paper's parenthesised numbers (accuracy in points, sample std over seeds)
    table = {(t["family"], t["variant"]): t for t in analysis.client_level_table(rows)}
    assert table[("code", "FedMOA")]["accuracy"] == pytest.approx(100 * (0.5 + 0.2))  # mean of 0.4+d, 0.6+d = 0.5+d
    assert table[("code", "FedMOA")]["accuracy_std"] == pytest.approx(10.0)  # d = 0.1, 0.2, 0.3: s = 0.1
    assert table[("code", "FedAvg-GRPO")]["accuracy_std"] == pytest.approx(0.0)
    assert table[("code", "FedMOA")]["reward"] == pytest.approx((0.7 + 1.0) / 2)
    assert (table[("code", "FedMOA")]["paper_test_set"], table[("code", "FedMOA")]["paper_accuracy"],
            table[("code", "FedAvg-GRPO")]["paper_accuracy"]) == ("HumanEval", 49.02, 45.73)
    # Table 2's contrasts on the clients' own models: the MATH-like family's clients, and all clients (the row's own
    # local_accuracy), with no paper number (the paper's Table 2 held here is its global one)
    rows += [row("λ off, α on", s, [0.2 + d, 0.3, 0.4, 0.4 + d, 0.5, 0.6]) for s, d in enumerate((0.05, 0.0, 0.1))]
    rows = [dict(r, local_accuracy=sum(analysis.family_locals(r)[f"{f}/local_accuracy"] for f in ("math", "gsm", "code"))
                 / 3) for r in rows]
    t2 = {c["claim"]: c for c in analysis.paired_claims(rows)}
    alpha = t2["α helps: λ off, α on > FedAvg-GRPO on math client-level accuracy (Table 2 rows, Heter+Heter, each "
               "client's own model, ours)"]
    assert alpha["differences"] == pytest.approx([0.05, 0.0, 0.1]) and alpha["paper"] is None
    lam_all = t2["λ helps: FedMOA > λ off, α on on all families' client-level accuracy (Table 2 rows, Heter+Heter, "
                 "each client's own model, ours)"]
    assert lam_all["differences"] == pytest.approx([(0.1 - 0.05) / 3, (0.2 - 0.0) / 3, (0.3 - 0.1) / 3])


def test_client_level_numbers_of_the_stored_grid_add_up_to_its_local_means():
    """Over all clients, the per-family client-level means of every stored run give back its row's own
    ``local_accuracy`` and ``local_reward`` (weighted by the family's clients)."""
    rows = json.loads((ROOT / "benchmarks/results/fedmoa_compare_cpu.json").read_text())["runs"]
    for r in rows:
        fams = [f for f, _ in plan.client_plan(r["setting"], len({c["client"] for c in r["history"]["clients"]}),
                                               r.get("homo_family", "math"))]
        got = analysis.family_locals(r)
        for k in ("accuracy", "reward"):
            mean = sum(got[f"{f}/local_{k}"] for f in fams) / len(fams)
            assert mean == pytest.approx(r[f"local_{k}"], abs=1e-12), (r["setting"], r["variant"], r["seed"], k)


def test_a_claim_about_lambda_is_not_tested_when_lambda_was_replaced_or_did_not_act():
    """The "not tested" rule: a contrast between λ on and λ off reads "not tested" when the λ-on runs took λ
    from the scale rule or their weights hardly moved; otherwise the interval decides. A contrast that does
    not involve λ is never judged by it."""
    def grid(moa_fields, diffs=(0.02, 0.03, 0.04)):
        rows = []
        for s, d in enumerate(diffs):
            base = {"setting": "heter+heter", "seed": s, "math/pass@1": 0.3, "math/aggregated_reward": 0.5}
            rows.append({**base, "variant": "FedAvg-GRPO", "lambda_on": False, "lam_rule": "fixed", "mean_w_move": None})
            rows.append({**base, "variant": "λ off, α on", "lambda_on": False, "lam_rule": "fixed",
                         "mean_w_move": None, "math/pass@1": 0.3 + d})
            rows.append({**base, "variant": "FedMOA", "lambda_on": True, "math/pass@1": 0.3 + 2 * d, **moa_fields})
        return {c["claim"]: c for c in analysis.paired_claims(rows)}

    LAM = "λ helps: FedMOA > λ off, α on on accuracy (Table 2, MATH, as the paper)"
    ALPHA = "α helps: λ off, α on > FedAvg-GRPO on accuracy (Table 2, MATH, as the paper)"
    TABLE1 = "FedMOA > FedAvg-GRPO on math accuracy (Table 1, Heter+Heter)"
    moving = grid({"lam_rule": "fixed", "lam": 100.0, "mean_w_move": 0.05})
    assert moving[LAM]["verdict"] == "holds" and moving[TABLE1]["verdict"] == "holds"
    assert moving[LAM]["paper"] == pytest.approx(0.008) and moving[ALPHA]["paper"] == pytest.approx(0.014)
    rule = grid({"lam_rule": "target", "lam": None, "mean_w_move": 0.05})
    assert rule[LAM]["verdict"].startswith("not tested: λ from the scale rule")
    assert rule[TABLE1]["verdict"].startswith("not tested")
    assert rule[LAM]["mean_difference"] == pytest.approx(0.03)  # the interval is still reported
    still = grid({"lam_rule": "fixed", "lam": 0.01, "mean_w_move": 1e-7})
    assert still[LAM]["verdict"].startswith("not tested: the weights did not move")
    assert still[ALPHA]["verdict"] == "holds"  # α's contrast has no λ-on arm
    assert rule[ALPHA]["verdict"] == "holds"
    # FedMOA at λ = 100 against "λ off, α on" is a claim about λ too, judged by the same rule
    big = "λ = 100: FedMOA, λ=100 > λ off, α on on accuracy (Heter+Heter, MATH, ours)"
    base = [{"setting": "heter+heter", "seed": s, "variant": v, "lambda_on": on, "lam_rule": "fixed",
             "mean_w_move": move, "math/pass@1": acc}
            for s in range(3) for v, on, move, acc in (("λ off, α on", False, None, 0.30),
                                                     ("FedMOA, λ=100", True, 0.07, 0.32 + 0.01 * s))]
    with_100 = {c["claim"]: c for c in analysis.paired_claims(base)}
    assert with_100[big]["verdict"] == "holds" and with_100[big]["seeds"] == [0, 1, 2]
    still_100 = {c["claim"]: c for c in analysis.paired_claims([dict(r, mean_w_move=0.001) if r["lambda_on"] else r
                                                                for r in base])}
    assert still_100[big]["verdict"].startswith("not tested: the weights did not move")
    assert still_100[big]["mean_difference"] == pytest.approx(0.03)  # the interval is still reported


def test_the_not_tested_rule_reads_the_mean_move_over_seeds_not_the_largest():
    """One seed above 0.01 does not make λ act: the mean of the λ-on arm's per-seed moves decides, and the reason
    quotes that mean with its 95 % Student-t half-width (n − 1 degrees of freedom)."""
    LAM = "λ helps: FedMOA > λ off, α on on accuracy (Table 2, MATH, as the paper)"

    def verdict(moves):
        rows = []
        for s, move in enumerate(moves):
            base = {"setting": "heter+heter", "seed": s, "lam_rule": "fixed"}
            rows.append({**base, "variant": "λ off, α on", "lambda_on": False, "mean_w_move": None,
                         "math/pass@1": 0.30})
            rows.append({**base, "variant": "FedMOA", "lambda_on": True, "lam": 10.0, "mean_w_move": move,
                         "math/pass@1": 0.32 + 0.001 * s})
        return {c["claim"]: c for c in analysis.paired_claims(rows)}[LAM]["verdict"]

    edge = (0.0092, 0.0101, 0.0102)  # the stored grid's FedMOA seeds 0-2: the largest is above 0.01, the mean not
    got = verdict(edge)
    mean = sum(edge) / 3
    half = 4.302652729911275 * math.sqrt(sum((m - mean) ** 2 for m in edge) / 2 / 3)  # t_{0.975, 2} · s/√n
    assert got == (f"not tested: the weights did not move (mean L1 move per round {mean:.4f} ± {half:.4f}, "
                   f"95 % t interval over 3 seeds, below 0.01)")
    assert verdict((0.0095, 0.0103, 0.0110)) == "holds"  # mean 0.0103: judged although one seed is below
    assert verdict((0.008,)) == "one seed only: no verdict"  # one seed: no interval, no verdict either way
    assert analysis.not_tested([{"lambda_on": True, "lam_rule": "fixed", "mean_w_move": 0.008}],
                               [{"lambda_on": False}]).endswith("(mean L1 move per round 0.0080, one seed, below 0.01)")


def test_the_lambda_grid_is_chosen_on_validation_only():
    """select_by_validation reads each tuning run's best validation accuracy and nothing else: scrambling the
    test-split numbers changes nothing, raising one run's validation score changes the choice."""
    rows = [{"lam": lam, "best_val_accuracy": v, "global_accuracy": g, "best/global_accuracy": g, "seed": 10}
            for lam, v, g in ((0.01, 0.30, 0.50), (10.0, 0.34, 0.20), (100.0, 0.32, 0.60), (1000.0, 0.25, 0.70))]
    chosen = analysis.select_by_validation(rows, "lam")
    assert chosen["value"] == 10.0 and chosen["val_accuracy"] == 0.34 and len(chosen["grid"]) == 4
    scrambled = [dict(r, global_accuracy=1 - r["global_accuracy"], **{"best/global_accuracy": 0.0}) for r in rows]
    assert analysis.select_by_validation(scrambled, "lam") == chosen
    raised = [dict(r, best_val_accuracy=0.4) if r["lam"] == 1000.0 else r for r in rows]
    assert analysis.select_by_validation(raised, "lam")["value"] == 1000.0
    tie = [dict(r, best_val_accuracy=0.3) for r in rows]
    assert analysis.select_by_validation(tie, "lam")["value"] == 0.01  # the first of equal scores
    with pytest.raises(ValueError, match="best_val_accuracy"):
        analysis.select_by_validation([{"lam": 1.0}], "lam")
    with pytest.raises(ValueError, match="no tuning runs"):
        analysis.select_by_validation([], "learning_rate")


def test_alpha_against_progress_and_the_history_round_trip():
    """alpha_progress pairs each client's α (and α × cluster size) with the accuracy it gained within the round
    (last half of its local steps minus the first half); round_history keeps what it reads."""
    recs = [{"kind": "client", "client": "server", "round": 1, "global_accuracy": 0.4, "val_accuracy": 0.3,
             "aggregated_reward": 0.5, "length": 9.0}]
    for cid, cluster, alpha, accs, w0 in (("a", 0, 0.25, (0.1, 0.2, 0.3, 0.5), 0.4), ("b", 0, 0.75, (0.3, 0.3, 0.2, 0.2), 0.3),
                                           ("c", 1, 1.0, (0.5, 0.5, 0.5, 0.5), 0.5)):
        recs.append({"kind": "client", "client": cid, "round": 1, "cluster": float(cluster), "alpha": alpha,
                     "w/accuracy": w0, "w/format": 1 - w0, "w_start/accuracy": 0.4, "w_start/format": 0.6,
                     "w_move": 0.01, "loss": 1.0,
                     **{f"accuracy@{s}": a for s, a in enumerate(accs)}})
    rows = {r["client"]: r for r in analysis.alpha_progress(recs)}
    assert rows["a"]["gain"] == pytest.approx(0.25) and rows["b"]["gain"] == pytest.approx(-0.1)
    assert rows["a"]["alpha_rel"] == pytest.approx(0.5) and rows["c"]["alpha_rel"] == pytest.approx(1.0)
    assert rows["b"]["w0"] == 0.3
    assert analysis.correlation([r["alpha_rel"] for r in rows.values()], [r["gain"] for r in rows.values()]) \
        == pytest.approx(float(np.corrcoef([0.5, 1.5, 1.0], [0.25, -0.1, 0.0])[0, 1]))
    assert np.isnan(analysis.correlation([1.0, 1.0], [0.0, 1.0]))
    history = analysis.round_history(recs)
    assert "loss" not in history["clients"][0] and history["clients"][0]["accuracy@3"] == 0.5
    back = analysis.as_records(history)
    assert analysis.alpha_progress(back) == analysis.alpha_progress(recs)
    assert analysis.server_records(back)[0]["global_accuracy"] == 0.4
    # a grid's tables read the rows' histories: two seeds, the second with every gain and move doubled
    doubled = [dict(r, w_move=0.02, **{k: 2 * v for k, v in r.items() if k.startswith("accuracy@")})
               if r.get("client") != "server" else r for r in recs]
    rows = [dict(setting="heter+heter", variant="FedMOA", seed=s, history=analysis.round_history(rr))
            for s, rr in ((0, [dict(r, lam=10.0) for r in recs]), (1, [dict(r, lam=10.0) for r in doubled]))]
    moves = analysis.weight_move_table(rows)
    assert len(moves) == 1 and moves[0]["mean_move"] == pytest.approx(0.015) and moves[0]["max_move"] == 0.02
    assert moves[0]["std_over_seeds"] == pytest.approx(np.std([0.01, 0.02], ddof=1))
    table = analysis.alpha_progress_table(rows)
    assert [t["seed"] for t in table] == [0, 1, "mean ± 95 % t"]
    assert table[0]["r_gain"] == pytest.approx(table[1]["r_gain"])  # doubling every gain leaves Pearson's r
    assert table[2]["r_gain"] == pytest.approx(table[0]["r_gain"]) and table[2]["r_gain_half_width"] == pytest.approx(0)
    curves = analysis.mean_server_curves(rows, "heter+heter", ["global_accuracy"])
    assert curves == [dict(variant="FedMOA", round=1, key="global_accuracy", mean=0.4, seeds=2, std=0.0)]
    assert analysis.grid_records(rows + [dict(setting="heter+heter", variant="FedAvg-GRPO", seed=0)]).keys() == \
        {("heter+heter", "FedMOA", 0), ("heter+heter", "FedMOA", 1)}
    # a Homo setting's families are federations of their own: seed 0 of gsm and of code are two runs, not one
    homo = [dict(r, setting="homo+heter", homo_family=f) for r in rows[:1] for f in ("gsm", "code")]
    assert analysis.grid_records(homo).keys() == {("homo+heter (gsm)", "FedMOA", 0), ("homo+heter (code)", "FedMOA", 0)}
    assert [m["setting"] for m in analysis.weight_move_table(homo)] == ["homo+heter (gsm)", "homo+heter (code)"]
    paths = analysis.accuracy_weight_paths(rows)
    assert [(p["seed"], p["round"]) for p in paths] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    w0 = [(m["w0_start"], m["w0_end"]) for m in analysis.weight_moves(recs)]
    assert paths[0]["mean_w0"] == pytest.approx(np.mean([a for a, _ in w0]))
    assert paths[1]["mean_w0"] == pytest.approx(np.mean([b for _, b in w0]))
    assert paths[1]["min_w0"] == min(b for _, b in w0)
    assert analysis.accuracy_weight_paths(rows, "homo+homo") == []
    assert analysis.accuracy_weight_paths([dict(r, history=analysis.round_history(
        [dict(x, lam=0.0) for x in analysis.as_records(r["history"])])) for r in rows]) == []  # λ off: no path
    conc = analysis.alpha_concentration(rows)
    assert [(c["seed"], c["cluster"], c["size"], c["max_alpha"], c["w0_of_max"]) for c in conc] == \
        [(0, 0.0, 2, 0.75, 0.3), (0, 1.0, 1, 1.0, 0.5), (1, 0.0, 2, 0.75, 0.3), (1, 1.0, 1, 1.0, 0.5)]
    assert analysis.alpha_concentration([dict(r, alpha_on=False) for r in rows]) == []  # α off: data shares


# --- presets and old configs -------------------------------------------------------------------------------------


def test_presets_follow_the_paper():
    paper = setting_config("paper", "heter+heter")
    assert (paper.base, paper.num_clients, paper.rounds, paper.num_generations) == (
        "Qwen/Qwen2.5-1.5B-Instruct", 15, 3, 16)
    assert paper.prompts_per_step * paper.num_generations == 128 and paper.max_new_tokens == 1024
    assert (paper.learning_rate, paper.lr_schedule, paper.world) == (2e-5, "cosine", "real-families")
    assert (paper.fedmoa.lam, paper.fedmoa.lam_rule, paper.fedmoa.eps) == (0.01, "fixed", 1e-6)
    homo = setting_config("paper", "homo+heter", homo_family="gsm")
    assert (homo.num_clients, homo.world) == (10, "real-families:gsm")
    cpu = setting_config("cpu", "heter+heter", "FedAvg-GRPO", seed=2)
    assert (cpu.num_clients, cpu.n_test // 3, cpu.seed, cpu.fedmoa.label()) == (15, 200, 2, "FedAvg-GRPO")
    assert cpu.prompts_per_step * cpu.num_generations == 128
    quick = setting_config("quick", "heter+heter")
    assert quick.num_clients == 6 and quick.rounds * quick.local_steps < cpu.rounds * cpu.local_steps
    with pytest.raises(ValueError, match="scale"):
        setting_config("huge", "heter+heter")


def test_an_old_fedmoa_config_keeps_its_behaviour():
    old = {"method": "fedmoa", "num_clients": 3, "world": "families", "fedmoa": {"reset_weights": True, "lam": 0.1,
                                                                              "normalise": True}}
    cfg = RunConfig.from_dict(old)
    assert (cfg.fedmoa.round_start, cfg.fedmoa.init_weights, cfg.fedmoa.lam_rule, cfg.fedmoa.hyper_grad,
            cfg.fedmoa.validate) == ("uniform", "uniform", "fixed", "shared", False)
    kept = migrate({**old, "fedmoa": {"reset_weights": False}})["fedmoa"]
    assert kept["round_start"] == "broadcast"
    with pytest.raises(ValueError, match=r"fedmoa\.reset_weights"):
        migrate({**old, "fedmoa": {"reset_weights": "yes"}})
    # the round's weights: uniform every round, or resumed, as before
    assert algorithm.initial_weights(["a", "b"]) == [0.5, 0.5]


# --- the real datasets' families (offline, on local fixtures) -----------------------------------------------------


def test_real_families_world_from_local_copies(tmp_path, monkeypatch):
    import datasets

    from test_worlds import gsm8k_rows, humaneval_rows, write_jsonl

    from fedrl_kit.world.registry import build_world, check_dataset_available

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    math_rows = lambda p, n: [{"problem": f"{p} {i}: 2+{i}?", "solution": rf"$\boxed{{{i + 2}}}$",  # noqa: E731
                               "level": "Level 1", "type": "Algebra"} for i in range(n)]
    mbpp_rows = lambda p, n: [{"task_id": i, "text": f"{p} {i}: add {i}", "code": "",  # noqa: E731
                               "test_list": [f"assert f({i}) == {2 * i}"], "test_setup_code": ""} for i in range(n)]
    write_jsonl(tmp_path / "math" / "train.jsonl", math_rows("train", 30))
    write_jsonl(tmp_path / "math" / "test.jsonl", math_rows("test", 16))
    write_jsonl(tmp_path / "gsm8k" / "train.jsonl", gsm8k_rows("train", 30))
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", gsm8k_rows("test", 16))
    write_jsonl(tmp_path / "mbpp" / "train.jsonl", mbpp_rows("train", 8))
    write_jsonl(tmp_path / "mbpp" / "test.jsonl", mbpp_rows("test", 12))
    write_jsonl(tmp_path / "humaneval" / "test.jsonl", humaneval_rows(7))
    cfg = setting_config("paper", "heter+heter", dataset=str(tmp_path), n_train=60, n_test=30, n_aux=9)
    check_dataset_available(cfg.world, cfg.dataset)
    world = build_world(cfg)
    assert {f: len(d) for f, d in world.train.items()} == {"math": 20, "gsm": 20, "code": 8}  # MBPP: all it has
    assert {f: len(d) for f, d in world.test_by_family.items()} == {"math": 10, "gsm": 10, "code": 7}  # HumanEval
    assert {f: len(d) for f, d in world.val_by_family.items()} == {"math": 3, "gsm": 3, "code": 3}
    assert all(p.startswith("test") for p in world.val_by_family["code"]["prompt"])  # MBPP's held-out split
    assert world.accuracy_by_family == {"math": "math_accuracy", "gsm": "math_accuracy", "code": "humaneval_accuracy"}
    from fedrl_kit.rewards import REWARDS

    he = world.test_by_family["code"][0]
    k = int(he["answer"].rsplit("check(f_", 1)[1].split(")")[0])
    good = f"    return x + {k}\n"
    mb = world.val_by_family["code"][0]
    vals = REWARDS["real_family_accuracy"]([he["prompt"], mb["prompt"], "q"], [good, "no", r"\boxed{7}"],
                                           answer=[he["answer"], mb["answer"], "7"])
    assert vals == [1.0, 0.0, 1.0]


def _traced_run(seed: int, acc_deltas: list[float], other: float) -> dict:
    """A stored run whose one client recorded Δ at steps 1 … len(acc_deltas): accuracy's and one other reward's."""
    record = {"client": "client_0", "round": 1, "w_start/accuracy": 0.5, "w_start/format": 0.5,
              "w@0/accuracy": 0.5, "w@0/format": 0.5}
    for s, d in enumerate(acc_deltas, start=1):
        record.update({f"delta@{s}/accuracy": d, f"delta@{s}/format": other,
                       f"w@{s}/accuracy": 0.5, f"w@{s}/format": 0.5})
    return {"variant": "FedMOA", "seed": seed, "history": {"server": [], "clients": [record]}}


def test_eq_9s_push_on_the_accuracy_weight_is_read_per_seed_then_over_seeds():
    from experiments import fedmoa_analysis as analysis
    from experiments.stats import t_interval

    rows = [_traced_run(0, [1.0, 3.0], 2.0), _traced_run(1, [0.0, 2.0], 2.0), _traced_run(2, [1.0, 1.0], 2.0),
            {"variant": "FedAvg-GRPO", "seed": 0, "history": {"server": [], "clients": []}}]
    out = analysis.delta_over_seeds(rows)
    # seed 0: step means 1.5 and 2.5, accuracy − mean −0.5 and +0.5 → 0; below the mean at one step of two
    # seed 1: −1 and 0 → −0.5, below at one step (0 < 1; at step 2 they tie); seed 2: −0.5 and −0.5 → −0.5, both
    assert [(d["seed"], d["relative"], d["below_mean"]) for d in out["per_seed"]] == [
        (0, 0.0, 0.5), (1, -0.5, 0.5), (2, -0.5, 1.0)]
    mean, half, n = t_interval([0.0, -0.5, -0.5])
    assert (out["relative"], out["half_width"], out["seeds"]) == (mean, half, 3) and out["verdict"] == "holds 0"
