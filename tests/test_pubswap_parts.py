"""PubSwap's model-free parts: the Random and Balanced swap rules (§3.4) and the drift measures.

Hand-built pools pin every branch of the Balanced rule, including the choices the paper leaves
open (odd K uses ⌊K/2⌋; too few donors -> take what exists; a client never receives its own).
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fedrl_kit.drift import (
    adapter_distance,
    distance_to_global,
    effective_delta,
    gradient_dissimilarity,
    mean_pairwise_drift,
    pairwise_drift,
    pairwise_gradient_dissimilarity,
    within_group_reward_stats,
)
from fedrl_kit.pubswap.swap import SWAP_RULES, ResponsePool, balanced_swap, no_swap, random_swap


def make_pool(correct) -> ResponsePool:
    """Pool whose texts name their origin: ``"n{client}k{slot}+"`` (correct) or ``-``."""
    correct = np.asarray(correct, dtype=bool)  # [N, K]
    texts = [
        [f"n{n}k{k}{'+' if correct[n, k] else '-'}" for k in range(correct.shape[1])]
        for n in range(correct.shape[0])
    ]
    return ResponsePool(texts=texts, correct=correct)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def check_consistent(pool: ResponsePool, res) -> None:
    """texts and correctness agree with the sources, for every client and slot."""
    for n in range(pool.num_clients):
        for k in range(len(res.texts[n])):
            j, kk = res.source[n, k]
            assert res.texts[n][k] == pool.texts[j][kk]
            assert res.correct[n, k] == pool.correct[j, kk]


def own_rows(res, n: int) -> np.ndarray:
    """Slots of client n that still hold its own response at the same position."""
    return (res.source[n, :, 0] == n) & (res.source[n, :, 1] == np.arange(res.source.shape[1]))


# --- Balanced -------------------------------------------------------------------------------


def test_balanced_client_with_no_correct_gets_half_from_others():
    pool = make_pool([[0, 0, 0, 0], [1, 1, 1, 0], [1, 1, 0, 0]])
    res = balanced_swap(pool, 4, rng(1))
    check_consistent(pool, res)
    assert res.own_correct.tolist() == [0, 3, 2]
    # client 0: c_0 = 0 < K/2 = 2, so 2 of its incorrect are replaced by correct from 1 and 2
    assert res.correct[0].sum() == 2
    assert res.replaced[0].sum() == 2
    assert set(res.source[0, res.replaced[0], 0].tolist()) <= {1, 2}
    assert res.correct[0, res.replaced[0]].all()
    assert len({tuple(s) for s in res.source[0].tolist()}) == 4  # no duplicate donors
    # clients 1 (c=3) and 2 (c=2 = K/2) keep their own groups untouched
    assert own_rows(res, 1).all() and own_rows(res, 2).all()
    assert res.texts[1] == pool.texts[1] and res.texts[2] == pool.texts[2]
    np.testing.assert_array_equal(res.replacement_fraction, [0.5, 0.0, 0.0])
    assert res.num_replaced.tolist() == [2, 0, 0]
    assert res.rule == "balanced"


def test_balanced_partial_correct_tops_up_to_half_and_keeps_own_correct():
    pool = make_pool([[1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0]])
    res = balanced_swap(pool, 6, rng(2))
    check_consistent(pool, res)
    # c_0 = 1 < 3: replace K/2 − c_0 = 2 incorrect with correct from client 1
    assert res.correct[0].sum() == 3
    assert res.replaced[0].sum() == 2
    assert res.source[0, 0].tolist() == [0, 0]  # its own correct response stays in place
    assert (res.source[0, res.replaced[0], 0] == 1).all()
    assert not pool.correct[0][res.replaced[0]].any()  # only incorrect slots were replaced
    assert res.replacement_fraction[0] == pytest.approx(2 / 6)
    # c_1 = 4 >= 3 keeps its own
    assert own_rows(res, 1).all()
    assert res.replacement_fraction[1] == 0.0


def test_balanced_too_few_correct_in_others_takes_what_exists():
    pool = make_pool([[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    res = balanced_swap(pool, 4, rng(3))
    check_consistent(pool, res)
    # clients 0 and 2 want 2 each but only (1, 0) is correct elsewhere: both receive it
    for n in (0, 2):
        assert res.replaced[n].sum() == 1
        assert res.correct[n].sum() == 1  # fewer than K/2 = 2
        assert res.source[n, res.replaced[n]].tolist() == [[1, 0]]
        assert res.replacement_fraction[n] == pytest.approx(0.25)
    # client 1 wants 1 but nobody else has a correct response: keeps its own
    assert own_rows(res, 1).all()
    np.testing.assert_array_equal(res.replacement_fraction, [0.25, 0.0, 0.25])


def test_balanced_correct_only_in_own_set_never_swaps_in_own():
    pool = make_pool([[1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    res = balanced_swap(pool, 4, rng(4))
    # client 0 (c=1 < 2) has no donors: all correct responses are its own, which it may not
    # receive, so it keeps its group as generated
    assert own_rows(res, 0).all()
    assert res.correct[0].sum() == 1
    assert res.replacement_fraction[0] == 0.0
    # the others each receive client 0's single correct response
    for n in (1, 2):
        assert res.source[n, res.replaced[n]].tolist() == [[0, 0]]
        assert res.correct[n].sum() == 1


def test_balanced_nobody_correct_changes_nothing():
    pool = make_pool(np.zeros((3, 4)))
    res = balanced_swap(pool, 4, rng(5))
    assert all(own_rows(res, n).all() for n in range(3))
    np.testing.assert_array_equal(res.replacement_fraction, np.zeros(3))


@pytest.mark.parametrize(
    "row, expected_m",
    [
        ([0, 0, 0, 0, 0], 2),  # ⌊5/2⌋ − 0
        ([1, 0, 0, 0, 0], 1),  # ⌊5/2⌋ − 1
        ([1, 1, 0, 0, 0], 0),  # c = 2 < 2.5, but "up to 1/2" replacement allows none
        ([1, 1, 1, 0, 0], 0),  # c = 3 >= K/2
    ],
)
def test_balanced_odd_k_uses_floor_of_half(row, expected_m):
    pool = make_pool([row, [1, 1, 1, 1, 1]])
    res = balanced_swap(pool, 5, rng(6))
    assert res.num_replaced[0] == expected_m
    assert res.replacement_fraction[0] == pytest.approx(expected_m / 5)
    assert res.replacement_fraction[0] <= 0.5  # appendix A.2: α_i(x) <= 1/2
    assert res.correct[0].sum() == max(sum(row), 2)  # ⌊K/2⌋ correct, ⌈K/2⌉ incorrect


def test_balanced_k_equal_one_never_swaps():
    pool = make_pool([[0], [1], [1]])
    res = balanced_swap(pool, 1, rng(7))
    np.testing.assert_array_equal(res.replacement_fraction, [0.0, 0.0, 0.0])


def test_balanced_replaces_incorrect_slots_uniformly():
    """Which incorrect responses go: each of client 0's 4 incorrect slots with frequency 2/4."""
    pool = make_pool([[0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]])
    counts = np.zeros(4)  # [K]
    donors = np.zeros((3, 4))  # [N, K]
    trials = 2000
    for seed in range(trials):
        res = balanced_swap(pool, 4, rng(seed))
        counts += res.replaced[0]
        for j, k in res.source[0, res.replaced[0]].tolist():
            donors[j, k] += 1
    np.testing.assert_allclose(counts / trials, 0.5, atol=0.04)
    assert donors[0].sum() == 0
    np.testing.assert_allclose(donors[1:] / trials, 2 / 8, atol=0.04)  # 2 of 8 donors


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    n_clients=st.integers(1, 5),
    k=st.integers(1, 7),
    seed=st.integers(0, 2**32 - 1),
    p=st.floats(0.0, 1.0),
)
def test_balanced_invariants(n_clients, k, seed, p):
    gen = rng(seed)
    pool = make_pool(gen.random((n_clients, k)) < p)
    res = balanced_swap(pool, k, gen)
    check_consistent(pool, res)
    c = pool.correct.sum(axis=1)  # [N]
    for n in range(n_clients):
        donors_available = int(np.delete(pool.correct, n, axis=0).sum())
        m = min(max(k // 2 - c[n], 0), donors_available)
        replaced = res.replaced[n]  # [K]
        assert replaced.sum() == m
        assert (res.source[n, replaced, 0] != n).all()  # never its own response
        assert res.correct[n, replaced].all()  # only correct responses come in
        assert not pool.correct[n, replaced].any()  # only incorrect responses go
        assert own_rows(res, n)[~replaced].all()  # the rest stay where they were
        assert len({tuple(s) for s in res.source[n].tolist()}) == k
        assert res.replacement_fraction[n] == pytest.approx(m / k)
        assert res.replacement_fraction[n] <= 0.5


def test_balanced_is_deterministic_given_seed():
    pool = make_pool(np.random.default_rng(0).random((4, 8)) < 0.3)
    a = balanced_swap(pool, 8, rng(42))
    b = balanced_swap(pool, 8, rng(42))
    np.testing.assert_array_equal(a.source, b.source)
    assert a.texts == b.texts


def test_to_table_rows():
    pool = make_pool([[0, 0, 0, 0], [1, 1, 1, 1]])
    res = balanced_swap(pool, 4, rng(8))
    rows = res.to_table(0)
    assert [r["slot"] for r in rows] == [0, 1, 2, 3]
    assert sum(r["replaced"] for r in rows) == 2
    for r in rows:
        assert set(r) == {"slot", "text", "correct", "from_client", "from_response", "replaced"}
        assert r["replaced"] == (r["from_client"] == 1) == r["correct"]
        expected = f"n{r['from_client']}k{r['from_response']}{'+' if r['correct'] else '-'}"
        assert r["text"] == expected
    assert res.to_table(1) == [
        {"slot": k, "text": f"n1k{k}+", "correct": True, "from_client": 1,
         "from_response": k, "replaced": False}
        for k in range(4)
    ]
    with pytest.raises(ValueError, match="client"):
        res.to_table(2)


# --- Random ---------------------------------------------------------------------------------


def test_random_every_client_gets_the_same_valid_set():
    pool = make_pool([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 0]])
    res = random_swap(pool, 4, rng(9))
    check_consistent(pool, res)
    assert res.rule == "random"
    for n in range(3):
        np.testing.assert_array_equal(res.source[n], res.source[0])
        assert res.texts[n] == res.texts[0]
    src = res.source[0]  # [K, 2]
    assert ((src[:, 0] >= 0) & (src[:, 0] < 3) & (src[:, 1] >= 0) & (src[:, 1] < 4)).all()
    assert len({tuple(s) for s in src.tolist()}) == 4
    # α_n: fraction of the shared group that came from clients other than n
    expected = [(src[:, 0] != n).mean() for n in range(3)]
    np.testing.assert_allclose(res.replacement_fraction, expected)
    assert res.replacement_fraction.sum() == pytest.approx(3 - 1)  # each slot is own for 1 client


def test_random_group_size_may_differ_from_pool():
    pool = make_pool(np.ones((2, 3)))
    res = random_swap(pool, 6, rng(10))  # the whole pool
    assert sorted(map(tuple, res.source[0].tolist())) == [(n, k) for n in range(2) for k in range(3)]
    assert len(random_swap(pool, 2, rng(10)).texts[1]) == 2


def test_random_each_slot_chosen_with_frequency_k_over_nk():
    n_clients, k = 3, 4
    pool = make_pool(np.zeros((n_clients, k)))
    counts = np.zeros((n_clients, k))  # [N, K]
    trials = 3000
    for seed in range(trials):
        src = random_swap(pool, k, rng(seed)).source[0]  # [K, 2]
        counts[src[:, 0], src[:, 1]] += 1
    # each of the N·K slots is in the draw with probability K / (N·K) = 1/3
    np.testing.assert_allclose(counts / trials, k / (n_clients * k), atol=0.04)
    assert counts.sum() == trials * k


def test_random_is_deterministic_given_seed():
    pool = make_pool(np.zeros((3, 4)))
    np.testing.assert_array_equal(
        random_swap(pool, 4, rng(11)).source, random_swap(pool, 4, rng(11)).source
    )


def test_swap_rules_registry():
    assert SWAP_RULES == {"random": random_swap, "balanced": balanced_swap, "noswap": no_swap}


# --- bad input ------------------------------------------------------------------------------


def test_pool_rejects_bad_shapes():
    with pytest.raises(ValueError, match="texts"):
        ResponsePool(texts=[["a", "b"]], correct=np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        ResponsePool(texts=[["a", "b"], ["c"]], correct=np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="correct"):
        ResponsePool(texts=[["a", "b"]], correct=np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match="correct"):
        ResponsePool(texts=[["a", "b"]], correct=np.array([[0, 2]]))
    pool = ResponsePool(texts=[["a", "b"]], correct=[[1, 0]])  # 0/1 accepted
    assert pool.correct.dtype == bool and pool.num_correct.tolist() == [1]


def test_swaps_reject_bad_k_and_rng():
    pool = make_pool(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="K"):
        random_swap(pool, 7, rng())  # K > N·K = 6
    with pytest.raises(ValueError, match="K"):
        random_swap(pool, 0, rng())
    with pytest.raises(ValueError, match="K"):
        balanced_swap(pool, 4, rng())  # Balanced edits each client's own K = 3
    with pytest.raises(ValueError, match="rng"):
        balanced_swap(pool, 3, 0)
    with pytest.raises(ValueError, match="pool"):
        random_swap([["a"]], 1, rng())


# --- drift ----------------------------------------------------------------------------------

I2 = np.eye(2)
# module "q": rank 1, ΔW_1 = [[1, 2], [0, 0]], ΔW_2 = [[0, 0], [0, 3]]
Q1 = (np.array([[1.0, 2.0]]), np.array([[1.0], [0.0]]))
Q2 = (np.array([[0.0, 1.0]]), np.array([[0.0], [3.0]]))
# module "v": the same ΔW = I reached through different factors (LoRA gauge: B A = (B/2)(2A))
V1 = (I2, I2)
V2 = (2 * I2, 0.5 * I2)


def test_effective_delta_is_scaled_b_times_a():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    b = np.array([[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(effective_delta({"q": (a, b)})["q"], [[3, 4], [1, 2]])
    np.testing.assert_array_equal(effective_delta({"q": (a, b)}, scaling=2)["q"], [[6, 8], [2, 4]])


def test_adapter_distance_by_hand():
    # q: ΔW_1 − ΔW_2 = [[1, 2], [0, −3]] -> 1 + 4 + 9 = 14
    #    factors: ‖A_1 − A_2‖² = 2, ‖B_1 − B_2‖² = 10
    assert adapter_distance({"q": Q1}, {"q": Q2}) == pytest.approx(np.sqrt(14))
    assert adapter_distance({"q": Q1}, {"q": Q2}, space="factors") == pytest.approx(np.sqrt(12))
    assert adapter_distance({"q": Q1}, {"q": Q2}, scaling=2.0) == pytest.approx(2 * np.sqrt(14))
    # v: same effective weights, factors differ by ‖I‖² + ‖I/2‖² = 2 + 0.5
    assert adapter_distance({"v": V1}, {"v": V2}) == 0.0
    assert adapter_distance({"v": V1}, {"v": V2}, space="factors") == pytest.approx(np.sqrt(2.5))
    # modules add in squares
    a1, a2 = {"q": Q1, "v": V1}, {"q": Q2, "v": V2}
    assert adapter_distance(a1, a2) == pytest.approx(np.sqrt(14))
    assert adapter_distance(a1, a2, space="factors") == pytest.approx(np.sqrt(14.5))


def test_adapter_distance_accepts_torch():
    t1 = {"q": tuple(torch.tensor(x, dtype=torch.bfloat16) for x in Q1)}
    t2 = {"q": tuple(torch.tensor(x) for x in Q2)}
    assert adapter_distance(t1, t2) == pytest.approx(np.sqrt(14))


def test_pairwise_drift_symmetric_zero_diagonal_by_hand():
    zero = {"q": (np.zeros((1, 2)), np.zeros((2, 1)))}
    adapters = [{"q": Q1}, {"q": Q2}, zero]
    d = pairwise_drift(adapters)  # [3, 3]
    # ‖ΔW_1‖² = 5, ‖ΔW_2‖² = 9, ‖ΔW_1 − ΔW_2‖² = 14
    expected = np.sqrt([[0, 14, 5], [14, 0, 9], [5, 9, 0]])
    np.testing.assert_allclose(d, expected)
    np.testing.assert_array_equal(d, d.T)
    np.testing.assert_array_equal(np.diag(d), 0)
    assert mean_pairwise_drift(adapters) == pytest.approx((np.sqrt(14) + np.sqrt(5) + 3) / 3)
    df = pairwise_drift(adapters, space="factors")
    # factors: ‖(A1, B1)‖² = 5 + 1 = 6, ‖(A2, B2)‖² = 1 + 9 = 10, between them 12
    np.testing.assert_allclose(df, np.sqrt([[0, 12, 6], [12, 0, 10], [6, 10, 0]]))
    np.testing.assert_allclose(distance_to_global(adapters[:2], zero), [np.sqrt(5), 3.0])
    np.testing.assert_allclose(
        distance_to_global(adapters[:2], zero, space="factors"), np.sqrt([6, 10])
    )


def test_drift_rejects_bad_input():
    with pytest.raises(ValueError, match="space"):
        adapter_distance({"q": Q1}, {"q": Q2}, space="full")
    with pytest.raises(ValueError, match="a2"):
        adapter_distance({"q": Q1}, {"v": V1})
    with pytest.raises(ValueError, match="a2"):
        adapter_distance({"v": V1}, {"v": Q1})
    with pytest.raises(ValueError, match="adapter"):
        effective_delta({"q": (np.zeros((2, 3)), np.zeros((3, 1)))})  # rank mismatch
    with pytest.raises(ValueError, match="adapters"):
        mean_pairwise_drift([{"q": Q1}])
    with pytest.raises(ValueError, match="scaling"):
        adapter_distance({"q": Q1}, {"q": Q2}, scaling=float("nan"))


def test_within_group_reward_stats_by_hand():
    rewards = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    stats = within_group_reward_stats(rewards)
    assert stats["mean_std"] == pytest.approx(0.5 / 3)
    assert stats["frac_zero_variance"] == pytest.approx(2 / 3)
    stats1 = within_group_reward_stats(torch.tensor(rewards), ddof=1)
    assert stats1["mean_std"] == pytest.approx(np.sqrt(1 / 3) / 3)
    with pytest.raises(ValueError, match="rewards"):
        within_group_reward_stats(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="rewards"):
        within_group_reward_stats(np.array([[1.0, np.nan]]))


def test_gradient_dissimilarity_by_hand():
    # ḡ = (0.5, 0.5), ‖ḡ‖² = 0.5, each ‖g_n − ḡ‖² = 0.5 -> 1.0
    assert gradient_dissimilarity([np.array([1.0, 0.0]), np.array([0.0, 1.0])]) == pytest.approx(1.0)
    assert gradient_dissimilarity([np.array([1.0, 2.0])] * 3) == 0.0
    # ḡ = (1, 0); deviations (1, 0) and (−1, 0) -> 1.0; (3, 0) and (1, 0): ḡ = (2, 0) -> 1/4
    assert gradient_dissimilarity([torch.tensor([2.0, 0.0]), torch.zeros(2)]) == pytest.approx(1.0)
    assert gradient_dissimilarity([np.array([3.0, 0.0]), np.array([1.0, 0.0])]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="grads"):
        gradient_dissimilarity([np.array([1.0, 0.0]), np.array([-1.0, 0.0])])  # ḡ = 0
    with pytest.raises(ValueError, match=r"grads\[1\]"):
        gradient_dissimilarity([np.zeros(2), np.zeros(3)])


def test_gradient_dissimilarity_matches_appendix_zeta():
    grads = list(np.random.default_rng(0).normal(size=(4, 10)))
    zeta = pairwise_gradient_dissimilarity(grads)  # [N, N]
    np.testing.assert_array_equal(np.diag(zeta), 0)
    np.testing.assert_allclose(zeta, zeta.T)
    np.testing.assert_allclose(zeta[0, 1], np.linalg.norm(grads[0] - grads[1]))
    g_bar = np.mean(grads, axis=0)
    # (1/N) Σ ‖g_n − ḡ‖² = (1/(2N²)) Σ ζ²
    expected = (zeta**2).sum() / (2 * 4**2) / (g_bar @ g_bar)
    assert gradient_dissimilarity(grads) == pytest.approx(expected)
