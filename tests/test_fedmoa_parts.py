"""FedMOA's building blocks against hand-worked values (the FedMOA paper, eq. 1–13), and the engine
primitives FedMOA calls for eq. 4, 12 and 13 (fedrl_kit.grpo, fedrl_kit.aggregate)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from experiments.fedmoa_pareto import non_dominated, pareto_front_order
from fedrl_kit.aggregate import fedavg, weighted_sum
from fedrl_kit.fedmoa.weights import (
    accuracy_aware_weights,
    aggregate_shared_weights,
    cluster_by_reward_names,
    hypergradient_step,
    per_objective_advantages,
    project_to_simplex,
)
from fedrl_kit.grpo import group_advantages

# --- eq. 1: simplex projection ------------------------------------------------


@pytest.mark.parametrize(
    "v, expected",
    [
        ([0.5, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]),
        ([2.0, 0.0], [1.0, 0.0]),
        ([-1.0, 0.5], [0.0, 1.0]),
        ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),  # already on the simplex
        ([1.0, 1.0, -5.0], [0.5, 0.5, 0.0]),
        ([7.0], [1.0]),
    ],
)
def test_projection_known_cases(v, expected):
    np.testing.assert_allclose(project_to_simplex(v), expected, atol=1e-12)


def test_projection_is_identity_on_simplex_points():
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = rng.dirichlet(np.ones(5))
        np.testing.assert_allclose(project_to_simplex(w), w, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-1e3, 1e3)))
def test_projection_properties(v):
    w = project_to_simplex(v)
    assert w.dtype == np.float64 and w.shape == v.shape
    assert np.all(w >= 0)
    assert abs(w.sum() - 1.0) < 1e-9
    # KKT conditions of argmin ||w − v||² on the simplex: w_k = max(v_k − θ, 0)
    support = w > 1e-12
    theta = v[support] - w[support]
    assert np.ptp(theta) < 1e-7 * max(1.0, np.abs(v).max())
    assert np.all(v[~support] <= theta.mean() + 1e-7 * max(1.0, np.abs(v).max()))
    np.testing.assert_allclose(project_to_simplex(w), w, atol=1e-9)  # idempotent


@pytest.mark.parametrize("v", [[], [[0.5, 0.5]], [np.nan, 1.0], [np.inf, 0.0]])
def test_projection_rejects_bad_input(v):
    with pytest.raises(ValueError, match="v must"):
        project_to_simplex(v)


# --- eq. 8–10: hypergradient step ---------------------------------------------


def test_aligned_gradients_raise_weight_opposed_lower_it():
    w = np.array([0.5, 0.5])
    g_prev = np.array([[1.0, 0.0], [0.0, 1.0]])  # [K=2, d=2]
    g_now = np.array([[1.0, 0.0], [0.0, -1.0]])  # objective 0 aligned, 1 reversed
    w_new, delta = hypergradient_step(w, g_now, g_prev, lr=0.1)
    np.testing.assert_allclose(delta, [1.0, -1.0])
    assert delta[0] > 0 and delta[1] < 0
    np.testing.assert_allclose(w_new, [0.6, 0.4])  # w + λΔ is already on the simplex
    assert w_new[0] > w[0] and w_new[1] < w[1]


def test_single_aligned_objective_gains_at_the_others_expense():
    w = np.full(3, 1 / 3)
    g = np.array([[2.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    w_new, delta = hypergradient_step(w, g, g, lr=0.01)
    np.testing.assert_allclose(delta, [4.0, 0.0, 0.0])
    # projection subtracts the mean shift: w_k + λΔ_k − λ·ΣΔ/K
    np.testing.assert_allclose(w_new, [1 / 3 + 0.04 * 2 / 3, 1 / 3 - 0.04 / 3, 1 / 3 - 0.04 / 3])
    assert w_new[0] > w[0] and np.all(w_new[1:] < w[1:])


def test_equal_deltas_leave_weights_unchanged():
    w = np.array([0.7, 0.2, 0.1])
    g = np.ones((3, 4))
    w_new, delta = hypergradient_step(w, g, g, lr=0.05)
    np.testing.assert_allclose(delta, [4.0, 4.0, 4.0])
    np.testing.assert_allclose(w_new, w, atol=1e-12)


def test_first_step_without_previous_gradients_is_a_no_op():
    w = np.array([0.3, 0.7])
    w_new, delta = hypergradient_step(w, np.ones((2, 3)), None)
    np.testing.assert_array_equal(w_new, w)
    np.testing.assert_array_equal(delta, [0.0, 0.0])


def test_large_step_is_projected_back_onto_simplex():
    w_new, _ = hypergradient_step([0.5, 0.5], [[10.0], [-10.0]], [[10.0], [10.0]], lr=1.0)
    np.testing.assert_allclose(w_new, [1.0, 0.0])


def test_normalise_uses_cosine_of_consecutive_gradients():
    g_prev = np.array([[3.0, 0.0], [0.0, 0.0]])
    g_now = np.array([[6.0, 0.0], [1.0, 0.0]])
    _, delta = hypergradient_step([0.5, 0.5], g_now, g_prev, lr=0.0, normalise=True)
    np.testing.assert_allclose(delta, [1.0, 0.0])  # zero gradient → 0, not NaN


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(w=[0.5, 0.6], grads_now=np.ones((2, 1))), "w"),
        (dict(w=[0.5, 0.5], grads_now=np.ones((3, 1))), "grads_now"),
        (dict(w=[0.5, 0.5], grads_now=np.ones((2, 1)), grads_prev=np.ones((2, 2))), "grads_prev"),
        (dict(w=[0.5, 0.5], grads_now=np.ones((2, 1)), lr=-0.1), "lr"),
    ],
)
def test_hypergradient_rejects_bad_input(kwargs, field):
    with pytest.raises(ValueError, match=field):
        hypergradient_step(**kwargs)


# --- eq. 2–4: advantages -------------------------------------------------------


def _manual_group_norm(x):  # x: [B, G]
    return (x - x.mean(1, keepdims=True)) / (x.std(1, ddof=1, keepdims=True) + 1e-4)


def test_eq4_normalises_after_weighting():
    """FedMOA's update takes the engine's group advantage of r_w = Σ w_k r_k (eq. 2, 4)."""
    rewards = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])  # [B=1, G=4, K=2]
    w = np.array([0.8, 0.2])
    r_w = rewards @ w  # [1, 4] eq. 2
    adv = group_advantages(torch.as_tensor(r_w.reshape(-1)), 4).numpy().reshape(1, 4)  # eq. 4
    np.testing.assert_allclose(adv, _manual_group_norm(r_w))
    # … which is not the weighted sum of per-objective advantages.
    weighted = per_objective_advantages(rewards) @ w
    assert not np.allclose(adv, weighted)


def test_per_objective_advantages_are_the_engines_formula_per_objective():
    """Same formula as fedrl_kit.grpo.group_advantages (kept apart for float64 exactness, see weights.py)."""
    rng = np.random.default_rng(3)
    rewards = rng.random((3, 4, 2))  # [B, G, K]
    for scale in ("group", "batch", "none"):
        adv = per_objective_advantages(rewards, scale)
        for k in range(2):
            ref = group_advantages(torch.as_tensor(rewards[..., k].reshape(-1)), 4, scale).numpy().reshape(3, 4)
            np.testing.assert_allclose(adv[..., k], ref, rtol=1e-12, atol=1e-12)


def test_per_objective_advantages_and_zero_variance_groups():
    rng = np.random.default_rng(1)
    rewards = rng.random((3, 5, 2))
    rewards[1, :, 0] = 0.7  # a constant group → zero advantage, not NaN
    adv = per_objective_advantages(rewards)
    assert adv.shape == (3, 5, 2)
    for k in range(2):
        np.testing.assert_allclose(adv[..., k], _manual_group_norm(rewards[..., k]))
    np.testing.assert_array_equal(adv[1, :, 0], 0.0)
    np.testing.assert_allclose(adv.mean(axis=1), 0.0, atol=1e-12)


def test_advantages_scale_options():
    rewards = np.array([[[0.0], [2.0]], [[1.0], [1.0]]])  # [B=2, G=2, K=1]
    np.testing.assert_allclose(per_objective_advantages(rewards, "none")[..., 0], [[-1, 1], [0, 0]])
    batch_std = np.std([0.0, 2.0, 1.0, 1.0], ddof=1)
    np.testing.assert_allclose(
        per_objective_advantages(rewards, "batch")[..., 0], np.array([[-1, 1], [0, 0]]) / (batch_std + 1e-4)
    )


def test_advantages_reject_bad_input():
    with pytest.raises(ValueError, match="rewards"):
        per_objective_advantages(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="G >= 2"):
        per_objective_advantages(np.zeros((2, 1, 3)))
    with pytest.raises(ValueError, match="scale_rewards"):
        per_objective_advantages(np.zeros((2, 2, 1)), "std")


# --- §3.3: clusters ------------------------------------------------------------


def test_clusters_by_identical_reward_names():
    names = [
        ("accuracy", "format", "tag_count"),
        ("accuracy", "format"),
        ("code_accuracy", "code_format", "length"),
        ("accuracy", "format", "tag_count"),
        ("accuracy", "format"),
    ]
    assert cluster_by_reward_names(names) == [[0, 3], [1, 4], [2]]
    assert cluster_by_reward_names(names, key="accuracy") == [[0, 1, 3, 4], [2]]
    assert cluster_by_reward_names([]) == []


@pytest.mark.parametrize("bad", [[()], ["accuracy"], [("accuracy", 3)], [("",)]])
def test_clusters_reject_bad_names(bad):
    with pytest.raises(ValueError, match="client_reward_names"):
        cluster_by_reward_names(bad)


# --- eq. 11–13: accuracy-aware aggregation ---------------------------------------


def test_accuracy_aware_weights_match_eq_11():
    w0 = [0.5, 0.25, 0.8]
    eps = 1e-6
    s = [1 / (x + eps) for x in w0]  # eq. 11
    z = sum(math.exp(x) for x in s)
    expected = [math.exp(x) / z for x in s]  # softmax
    alpha = accuracy_aware_weights(w0, eps=eps)
    np.testing.assert_allclose(alpha, expected, rtol=1e-12)
    assert alpha[1] > alpha[0] > alpha[2]  # smaller w_0 → larger α_m
    np.testing.assert_allclose(accuracy_aware_weights([0.3, 0.3]), [0.5, 0.5])


def test_accuracy_aware_weights_are_stable_at_zero_and_temperature_flattens():
    alpha = accuracy_aware_weights([0.0, 0.5])  # s_0 = 1/ε = 1e6: no overflow
    np.testing.assert_allclose(alpha, [1.0, 0.0])
    sharp = accuracy_aware_weights([0.1, 0.3])
    flat = accuracy_aware_weights([0.1, 0.3], temperature=100.0)
    assert 0.5 < flat[0] < sharp[0]


@pytest.mark.parametrize(
    "kwargs, field",
    [(dict(w0=[]), "w0"), (dict(w0=[-0.1]), "w0"), (dict(w0=[0.5], eps=0.0), "eps"),
     (dict(w0=[0.5], temperature=0.0), "temperature")],
)
def test_accuracy_aware_weights_reject_bad_input(kwargs, field):
    with pytest.raises(ValueError, match=field):
        accuracy_aware_weights(**kwargs)


def _reference_sum(states, weights):
    """θ = Σ_n w_n θ_n written out: float64 accumulator, clients in order, float32 out."""
    out = {}
    for k in states[0]:
        acc = np.zeros(states[0][k].shape, dtype=np.float64)
        for w, s in zip(weights, states):
            acc += w * s[k].astype(np.float64)
        out[k] = acc.astype(np.float32)
    return out


def test_eq12_cluster_model_is_the_alpha_weighted_sum():
    p1 = {"a": np.array([1.0, 2.0], dtype=np.float32), "b": np.array([[0.0]], dtype=np.float32)}
    p2 = {"a": np.array([3.0, 6.0], dtype=np.float32), "b": np.array([[4.0]], dtype=np.float32)}
    out = weighted_sum([p1, p2], [0.25, 0.75])
    np.testing.assert_allclose(out["a"], [2.5, 5.0])
    np.testing.assert_allclose(out["b"], [[3.0]])
    assert out["a"].dtype == np.float32
    with pytest.raises(ValueError, match="summing to 1"):
        weighted_sum([p1, p2], [0.5, 0.6])
    with pytest.raises(ValueError, match="different tensors"):
        weighted_sum([p1, {"a": p2["a"]}], [0.5, 0.5])
    with pytest.raises(ValueError, match="shape"):
        weighted_sum([p1, {"a": np.zeros(3, dtype=np.float32), "b": p2["b"]}], [0.5, 0.5])


def test_weighted_sum_and_fedavg_are_bit_identical_to_the_written_out_sums():
    rng = np.random.default_rng(7)
    states = [{"a": rng.normal(size=(4, 3)).astype(np.float32), "b": rng.normal(size=5).astype(np.float32)}
              for _ in range(3)]
    alpha = accuracy_aware_weights([0.31, 0.12, 0.57], temperature=7.0)  # eq. 11, used as given (no renormalising)
    for k, v in weighted_sum(states, alpha).items():
        assert np.array_equal(v, _reference_sum(states, alpha)[k])
    sizes = np.array([7.0, 11.0, 5.0])
    for k, v in fedavg(states, sizes).items():  # eq. 13 with N_c
        assert np.array_equal(v, _reference_sum(states, sizes / sizes.sum())[k])


def test_aggregate_shared_weights_keeps_client_specific_components():
    w1 = {"accuracy": 0.6, "format": 0.4}
    w2 = {"accuracy": 0.2, "format": 0.3, "tag_count": 0.5}
    alpha = [0.5, 0.5]
    out = aggregate_shared_weights([w1, w2], alpha)  # shared: accuracy, format
    assert out[0] == pytest.approx({"accuracy": 0.4 / 0.75, "format": 0.35 / 0.75})
    assert out[1] == pytest.approx({"accuracy": 0.4 / 1.25, "format": 0.35 / 1.25, "tag_count": 0.5 / 1.25})
    for d in out:
        assert sum(d.values()) == pytest.approx(1.0)
    only_acc = aggregate_shared_weights([w1, w2], alpha, shared_names=["accuracy"])
    assert only_acc[0] == pytest.approx({"accuracy": 0.4 / 0.8, "format": 0.4 / 0.8})
    with pytest.raises(ValueError, match="shared_names"):
        aggregate_shared_weights([w1, w2], alpha, shared_names=["tag_count"])


def test_aggregate_shared_weights_identical_names_give_one_cluster_vector():
    w1 = {"accuracy": 0.6, "format": 0.4}
    w2 = {"accuracy": 0.2, "format": 0.8}
    out = aggregate_shared_weights([w1, w2], [0.75, 0.25])
    assert out[0] == out[1] == pytest.approx({"accuracy": 0.5, "format": 0.5})


def test_eq13_across_clusters_is_fedavg_by_cluster_size():
    c1 = {"theta": np.array([0.0, 4.0], dtype=np.float32)}
    c2 = {"theta": np.array([4.0, 0.0], dtype=np.float32)}
    out = fedavg([c1, c2], [100, 300])  # N_c / Σ N = 0.25, 0.75
    np.testing.assert_allclose(out["theta"], [3.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        fedavg([c1, c2], [0, 0])
    with pytest.raises(ValueError, match="weights"):
        fedavg([c1, c2], [1])


# --- Figure 3: Pareto front ------------------------------------------------------


def test_non_dominated_on_hand_made_cloud():
    points = np.array(
        [
            [1.0, 0.0],  # 0 front
            [0.0, 1.0],  # 1 front
            [0.5, 0.5],  # 2 front
            [0.4, 0.4],  # 3 dominated by 2
            [1.0, 0.0],  # 4 duplicate of 0: both stay
            [0.2, 0.9],  # 5 front
            [0.5, 0.3],  # 6 dominated by 2 (equal x, lower y)
        ]
    )
    mask = non_dominated(points)
    np.testing.assert_array_equal(mask, [True, True, True, False, True, True, False])
    np.testing.assert_array_equal(pareto_front_order(points, mask), [1, 5, 2, 0, 4])
    # minimising instead: only [0.5, 0.5] is dominated (by [0.4, 0.4])
    np.testing.assert_array_equal(
        non_dominated(points, maximise=False), [True, True, False, True, True, True, True]
    )
    np.testing.assert_array_equal(
        non_dominated(points, maximise=[True, False]), [True, False, False, False, True, False, False]
    )


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(0, 12), st.integers(1, 3)), elements=st.sampled_from([0.0, 0.5, 1.0, 2.0])))
def test_non_dominated_matches_definition(points):
    mask = non_dominated(points)
    for i, p in enumerate(points):
        dominated = any(np.all(q >= p) and np.any(q > p) for q in points)
        assert mask[i] == (not dominated)


def test_non_dominated_rejects_bad_input():
    with pytest.raises(ValueError, match="points"):
        non_dominated(np.zeros(3))
    with pytest.raises(ValueError, match="points"):
        non_dominated([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="maximise"):
        non_dominated(np.zeros((2, 2)), maximise=[True])
    with pytest.raises(ValueError, match="mask"):
        pareto_front_order(np.zeros((2, 2)), [True])


def test_pareto_figure_marks_exactly_the_non_dominated_points():
    from experiments.fedmoa_pareto import pareto_figure

    series = {
        "A": {"server": [[0.1, 0.2], [0.3, 0.6], [0.5, 0.5]], "clients": [[0.2, 0.9], [0.4, 0.1]]},
        "B": {"server": [[0.1, 0.1], [0.6, 0.2]], "clients": []},
    }
    fig = pareto_figure(series, "accuracy", "format")
    front = next(t for t in fig.data if t.name == "non-dominated")
    assert list(zip(front.x, front.y)) == [(0.2, 0.9), (0.3, 0.6), (0.5, 0.5), (0.6, 0.2)]
    # the staircase's corners are dominated points: (0.2, 0.6) lies under (0.2, 0.9); "hv" would draw (0.3, 0.9),
    # which no point of the front reaches
    assert front.line.shape == "vh"
    servers = [t for t in fig.data if t.name.endswith("server")]
    assert [t.name for t in servers] == ["A: server", "B: server"]
    assert list(servers[0].text) == ["r0", "r1", "r2"]  # trajectories labelled by round
    greys = [t for t in fig.data if t.name.startswith("client checkpoints")]
    assert len(greys) == 1 and len(greys[0].x) == 2
    names = [t.name for t in fig.data]
    assert len(names) == len(set(names))  # no duplicate legend entries
    assert fig.layout.xaxis.title.text == "accuracy (mean reward per completion, 0–1)"  # titles with units
    assert fig.layout.yaxis.title.text.startswith("format (")


def test_pareto_figure_says_when_two_methods_draw_the_same_server_path():
    from experiments.fedmoa_pareto import identical_server_paths, pareto_figure

    path = [[0.1, 0.2], [0.3, 0.4]]
    series = {"FedMOA": {"server": path, "clients": []}, "FedAvg-GRPO": {"server": [list(p) for p in path], "clients": []},
              "other": {"server": [[0.1, 0.2], [0.3, 0.5]], "clients": []}}
    assert identical_server_paths(series) == [["FedMOA", "FedAvg-GRPO"]]
    notes = [a.text for a in pareto_figure(series, "accuracy", "format").layout.annotations]
    assert notes == ["FedMOA = FedAvg-GRPO: the same server point in every round"]
    del series["FedAvg-GRPO"]
    assert identical_server_paths(series) == [] and not pareto_figure(series, "a", "b").layout.annotations
