"""FedMOA's what-ifs without retraining (fedrl_kit.fedmoa.probe): measured g_k, eq. 9–12 replayed."""

import numpy as np
import pytest

from fedrl_kit.fedmoa import probe
from fedrl_kit.fedmoa.client import target_lambda
from fedrl_kit.fedmoa.weights import accuracy_aware_weights, aggregate_shared_weights, hypergradient_step
from fedrl_kit.runs import Run
from test_fedmoa_faithful import moa_config


def test_replay_weights_is_eq_9_10_step_by_step():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(4, 3, 5))  # [T, K, d]
    w0 = [0.5, 0.3, 0.2]
    traj, lam = probe.replay_weights(g, w0, lam=0.02)
    assert lam == 0.02 and traj.shape == (4, 3)
    np.testing.assert_array_equal(traj[0], w0)  # the first step has no g^(t−1)
    w = np.asarray(w0)
    for t in range(1, 4):
        w, _ = hypergradient_step(w, g[t], g[t - 1], 0.02)
        np.testing.assert_array_equal(traj[t], w)
    _, rule = probe.replay_weights(g, w0, lam=None, target=0.1)  # the scale rule, from the first step's g
    assert rule == pytest.approx(target_lambda(g[0], 0.1))
    cos, _ = probe.replay_weights(g, w0, lam=0.3, normalise=True)
    assert np.all(np.abs(cos[1] - cos[0]) <= 0.3 + 1e-12)  # a cosine step moves each w_k by at most λ
    with pytest.raises(ValueError, match="grads"):
        probe.replay_weights(g[0], w0)


def test_replay_round_clusters_trusts_the_lower_accuracy_weight_and_broadcasts_eq_12():
    g_up = np.tile(np.array([[1.0, 0.0], [0.0, 0.0]]), (3, 1, 1))  # accuracy's gradients agree: w_0 grows
    g_flat = np.zeros((3, 2, 2))  # no signal: weights stay
    clients = {
        "a": dict(reward_names=["accuracy", "format"], w0=[0.5, 0.5], grads=g_up, num_examples=10),
        "b": dict(reward_names=["accuracy", "format"], w0=[0.5, 0.5], grads=g_flat, num_examples=10),
        "c": dict(reward_names=["accuracy", "tag_count"], w0=[0.6, 0.4], grads=g_flat, num_examples=5),
    }
    rows = {r["client"]: r for r in probe.replay_round(clients, lam=0.1, cluster_key="names")}
    assert rows["a"]["trajectory"].shape == (4, 2)
    assert rows["a"]["trajectory"][-1][0] > 0.5 and np.allclose(rows["b"]["trajectory"][-1], [0.5, 0.5])
    assert rows["a"]["cluster"] == rows["b"]["cluster"] != rows["c"]["cluster"]
    alpha = accuracy_aware_weights([rows["a"]["trajectory"][-1][0], 0.5])  # eq. 11 on the final accuracy weights
    assert [rows["a"]["alpha"], rows["b"]["alpha"]] == pytest.approx(list(alpha))
    assert rows["b"]["alpha"] > rows["a"]["alpha"]  # b lowered (kept) its accuracy weight: trusted more
    shared = aggregate_shared_weights([dict(zip(["accuracy", "format"], rows[c]["trajectory"][-1])) for c in "ab"],
                                      alpha)
    assert rows["a"]["broadcast"] == pytest.approx([shared[0]["accuracy"], shared[0]["format"]])
    assert rows["c"]["alpha"] == 1.0 and rows["c"]["broadcast"] == pytest.approx([0.6, 0.4])
    fig = probe.replay_figure(list(rows.values()), "accuracy", "format")
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert len(shown) == 3 == len(set(shown))  # one legend entry per client
    c_path = next(t for t in fig.data if (t.name or "").startswith("c "))
    assert list(c_path.y) == [0.0] * 4  # c has no format reward: weight 0 on it
    assert fig.layout.xaxis.title.text.startswith("w_accuracy")
    by_accuracy = {r["client"]: r for r in probe.replay_round(clients, lam=0.1)}  # the default: r_0's name
    assert len({r["cluster"] for r in by_accuracy.values()}) == 1 and by_accuracy["c"]["alpha"] < 1.0


def test_a_probe_measures_the_g_k_the_client_measured_in_training(tiny_dir):
    """Round 1, step 0 of a run starts at the initial adapter: the probe there reproduces the client's own g_k."""
    cfg = moa_config(tiny_dir, rounds=1, local_steps=1, num_clients=3,
                     fedmoa={"lam_rule": "target", "lam_target": 0.05})
    run = Run(cfg, progress=False)
    recs = {r["client"]: r for r in run.run() if r["kind"] == "client" and r["round"] == 1}
    run.policy.set_state("global", run.initial_state)
    for cid, c in run.clients.items():
        g = probe.probe_gradients(c, "global", steps=1)
        assert g.shape[:2] == (1, len(c.names))
        for k, n in enumerate(c.names):
            assert float(g[0, k] @ g[0, k]) == pytest.approx(recs[cid][f"gsq/{n}"], rel=1e-9)
        assert recs[cid]["lam"] == pytest.approx(target_lambda(g[0], 0.05), rel=1e-9)
    probes = probe.probe_clients(run, steps=2, family="math")
    assert probes and all(p["grads"].shape[0] == 2 for p in probes.values())
    assert {run.clients[c].family for c in probes} == {"math"}
    table = probe.lambda_scales(run.clients["client_0"], "global")
    assert set(len(v) for v in table.values()) == {len(run.clients["client_0"].names)}
    assert any(np.any(v != 0) for k, v in table.items() if k.startswith("sequence: Δ_k"))
