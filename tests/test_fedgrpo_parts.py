"""FedGRPO's model-free parts: expert selection (eqs. 5–6), group reward (eqs. 8–9), Figure 2, the official
no-ground-truth scorer's routing and agreement rule."""

import math

import numpy as np
import pytest

from experiments.fedgrpo_comm import (
    LORA_MODULES,
    QwenArch,
    dpsda_bytes,
    fedgrpo_breakdown,
    fedgrpo_bytes,
    fedpetuning_bytes,
    human_bytes,
    lora_param_count,
    paper_figure2_table,
)
from fedrl_kit.fedgrpo.expert_selection import (
    CompetenceCache,
    dual_evaluation_gate,
    expert_hit_rate,
    l2_normalise,
    nearest_exemplars,
    random_selection,
    select_experts,
)
from fedrl_kit.fedgrpo.group_reward import (
    candidate_advantages,
    default_scale_rewards,
    group_relative_rewards,
    malicious_rewards,
    official_advantages,
    robust_aggregate,
)

# ---------------------------------------------------------------- expert selection (eqs. 5–6)

# Five auxiliary embeddings in 2-D; rows 0 and 3 point the same way (an exact cosine tie).
AUX = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [-1.0, 0.0]])


def test_l2_normalise_unit_rows_and_zero_row_stays_zero():
    out = l2_normalise([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_array_equal(out, [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_array_equal(l2_normalise([0.0, 2.0]), [0.0, 1.0])
    with pytest.raises(ValueError, match="finite"):
        l2_normalise([[np.nan, 1.0]])


def test_nearest_exemplars_orders_by_cosine_and_breaks_ties_by_lower_index():
    # query (1, 0): cosines (1, 0, 0.707, 1, -1); rows 0 and 3 tie at 1 -> 0 first.
    np.testing.assert_array_equal(nearest_exemplars([1.0, 0.0], AUX, L=3), [0, 3, 2])
    # query (5, 5) is not normalised: cosines (0.707, 0.707, 1, 0.707, -0.707); three-way tie.
    np.testing.assert_array_equal(nearest_exemplars([5.0, 5.0], AUX, L=5), [2, 0, 1, 3, 4])
    # batch [Q, d] -> [Q, L]; query (0, 1): cosines (0, 1, 0.707, 0, 0).
    batch = nearest_exemplars([[1.0, 0.0], [0.0, 1.0]], AUX, L=4)
    np.testing.assert_array_equal(batch, [[0, 3, 2, 1], [1, 2, 0, 3]])
    # a zero query is equally (un)like everything: index order.
    np.testing.assert_array_equal(nearest_exemplars([0.0, 0.0], AUX, L=2), [0, 1])


@pytest.mark.parametrize("L", [0, 6, -1])
def test_nearest_exemplars_rejects_L_outside_range(L):
    with pytest.raises(ValueError, match=r"L must be in \[1, 5\]"):
        nearest_exemplars([1.0, 0.0], AUX, L=L)


def test_nearest_exemplars_rejects_mismatched_dimension():
    with pytest.raises(ValueError, match="dimension"):
        nearest_exemplars([1.0, 0.0, 0.0], AUX, L=1)


def test_select_experts_top_m_with_ties_to_lower_client():
    r_p = [0.5, 0.9, 0.9, 0.1, 0.5]  # clients 1, 2 tie; clients 0, 4 tie
    np.testing.assert_array_equal(select_experts(r_p, M=2), [1, 2])
    np.testing.assert_array_equal(select_experts(r_p, M=4), [1, 2, 0, 4])
    np.testing.assert_array_equal(select_experts([[0.0, 0.0, 1.0], [0.3, 0.3, 0.3]], M=2), [[2, 0], [0, 1]])


@pytest.mark.parametrize("M", [0, 6])
def test_select_experts_rejects_bad_M(M):
    with pytest.raises(ValueError, match=r"M must be in \[1, 5\]"):
        select_experts([0.5, 0.9, 0.9, 0.1, 0.5], M=M)


def test_select_experts_rejects_unknown_competence():
    with pytest.raises(ValueError, match="finite"):
        select_experts([0.5, np.nan], M=1)


def test_competence_cache_running_mean_known_mask_and_competence():
    cache = CompetenceCache(n_clients=3, n_items=4)
    cache.update(0, [0, 1], [1, 0])
    cache.update(0, [0], [0])  # cell (0, 0): flags 1 then 0 -> running mean 0.5
    cache.update(1, [0, 1], [True, True])
    cache.update(2, [3, 3], [1.0, 0.0])  # repeated item in one call counts twice -> 0.5

    np.testing.assert_array_equal(cache.known(0, [0, 1, 2]), [True, True, False])
    np.testing.assert_array_equal(cache.known(2, [3, 0]), [True, False])
    np.testing.assert_array_equal(cache.counts[0], [2, 1, 0, 0])
    np.testing.assert_array_equal(cache.counts[2], [0, 0, 0, 2])

    # r_k^p on G(x_s) = items {0, 1}: client 0 -> (0.5 + 0) / 2, client 1 -> (1 + 1) / 2.
    np.testing.assert_allclose(cache.competence([0, 1], [0, 1]), [0.25, 1.0])

    matrix = cache.as_matrix()
    assert matrix.shape == (3, 4)
    np.testing.assert_array_equal(matrix[0], [0.5, 0.0, np.nan, np.nan])
    np.testing.assert_array_equal(matrix[2], [np.nan, np.nan, np.nan, 0.5])

    # client 2 has never been asked about items 0, 1: the method must ask first.
    with pytest.raises(ValueError, match=r"unmeasured cells: \[\(2, 0\), \(2, 1\)\]"):
        cache.competence(None, [0, 1])


def test_competence_cache_feeds_select_experts():
    cache = CompetenceCache(n_clients=3, n_items=2)
    for k, flags in enumerate([[0, 1], [1, 1], [1, 0]]):
        cache.update(k, [0, 1], flags)
    r_p = cache.competence(None, [0, 1])  # (0.5, 1.0, 0.5)
    np.testing.assert_allclose(r_p, [0.5, 1.0, 0.5])
    np.testing.assert_array_equal(select_experts(r_p, M=2), [1, 0])


def test_eq5_to_eq6_end_to_end_on_hand_made_embeddings_with_ties():
    """Two topics on two axes, four clients, soft (fractional) competence cells; ties at both steps."""
    aux = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 1.0]])  # [N=5, d=2]
    queries = np.array([[5.0, 0.0], [0.0, 0.5]])  # [Q=2, d]: topic "x", topic "y"
    neigh = nearest_exemplars(queries, aux, L=3)  # rows 0, 1 tie at cos 1 for query 0
    np.testing.assert_array_equal(neigh, [[0, 1, 4], [2, 3, 4]])
    cache = CompetenceCache(n_clients=4, n_items=5)
    cells = np.array([[0.9, 0.7, 0.0, 0.0, 0.5],   # client 0: knows x
                      [0.0, 0.0, 0.8, 1.0, 0.5],   # client 1: knows y
                      [0.9, 0.7, 0.0, 0.0, 0.5],   # client 2: same as client 0 (a tie)
                      [0.2, 0.2, 0.2, 0.2, 0.2]])  # client 3: knows a little of everything
    for k in range(4):
        cache.update(k, np.arange(5), cells[k])
    comp = np.stack([cache.competence(None, row) for row in neigh])  # [Q, K]
    np.testing.assert_allclose(comp, [[0.7, 1 / 6, 0.7, 0.2], [1 / 6, 2.3 / 3, 1 / 6, 0.2]])
    # query 0: clients 0 and 2 tie -> lower index first; query 1: client 1, then client 3
    np.testing.assert_array_equal(select_experts(comp, M=2), [[0, 2], [1, 3]])
    # with M = 1 the tie still resolves to client 0
    np.testing.assert_array_equal(select_experts(comp, M=1), [[0], [1]])
    assert expert_hit_rate(select_experts(comp, M=2), [{"x"}, {"y"}, {"x"}, {"x", "y"}], ["x", "y"]) == 1.0


def test_competence_cache_rejects_bad_input():
    cache = CompetenceCache(n_clients=2, n_items=3)
    with pytest.raises(ValueError, match=r"client must be in \[0, 1\]"):
        cache.update(2, [0], [1])
    with pytest.raises(ValueError, match=r"item_indices must hold integers in \[0, 2\]"):
        cache.update(0, [3], [1])
    with pytest.raises(ValueError, match=r"correct_flags must be in \[0, 1\]"):
        cache.update(0, [0], [1.5])
    with pytest.raises(ValueError, match="one entry per item"):
        cache.update(0, [0, 1], [1])
    with pytest.raises(ValueError, match="n_clients"):
        CompetenceCache(0, 3)


def test_dual_evaluation_gate_lambda_k():
    assert dual_evaluation_gate(True, "with_gt") == "AE"  # λ_k = 1
    assert dual_evaluation_gate(False, "with_gt") == "ME"
    assert dual_evaluation_gate(True, "no_gt") == "ME"  # §4.3: reward models only
    assert dual_evaluation_gate(False, "no_gt") == "ME"
    with pytest.raises(ValueError, match="mode must be one of"):
        dual_evaluation_gate(True, "gt")
    with pytest.raises(ValueError, match="has_ground_truth must be a bool"):
        dual_evaluation_gate("yes", "with_gt")


def test_expert_hit_rate_hand_case():
    client_topics = [{"algebra"}, {"geometry", "algebra"}, {"number_theory"}]
    selected = [[0, 1], [2, 1]]
    # query 0 (algebra): both hit; query 1 (geometry): client 2 misses, client 1 hits -> 3/4.
    assert expert_hit_rate(selected, client_topics, ["algebra", "geometry"]) == 0.75
    assert expert_hit_rate([2], client_topics, ["algebra"]) == 0.0
    with pytest.raises(ValueError, match=r"client indices in \[0, 2\]"):
        expert_hit_rate([[3, 0]], client_topics, ["algebra"])
    with pytest.raises(ValueError, match="one topic per query"):
        expert_hit_rate(selected, client_topics, ["algebra"])


def test_random_selection_distinct_and_seeded():
    sel = random_selection(K=5, M=3, Q=50, rng=np.random.default_rng(0))
    assert sel.shape == (50, 3)
    assert all(len(set(row)) == 3 for row in sel.tolist())
    assert sel.min() >= 0 and sel.max() <= 4
    np.testing.assert_array_equal(sel, random_selection(5, 3, 50, rng=0))
    with pytest.raises(ValueError, match=r"M must be in \[1, 5\]"):
        random_selection(5, 6, 1, rng=0)


def test_competence_selection_beats_random_on_topic_clients():
    # 4 clients, each expert in one topic: perfect competence picks the holder every time.
    client_topics = [{"a"}, {"b"}, {"c"}, {"d"}]
    topics = ["a", "b", "c", "d"] * 25
    competence = np.array([[1.0 if t == c else 0.0 for c in "abcd"] for t in topics])  # [Q, K]
    assert expert_hit_rate(select_experts(competence, M=1), client_topics, topics) == 1.0
    rand = expert_hit_rate(random_selection(4, 1, len(topics), rng=1), client_topics, topics)
    assert 0.1 < rand < 0.4  # ≈ 1/4


# ---------------------------------------------------------------- group-relative reward (eqs. 8–9)


def test_group_relative_rewards_eq_8_9_hand_values():
    r = np.array([[1.0, 0.5], [0.0, 0.5], [1.0, 0.5]])  # [M=3, G=2]
    out = group_relative_rewards(r, eps=1e-6)
    # column 0: μ = 2/3, population σ = sqrt(2/9) = √2/3.
    sigma = math.sqrt(2.0) / 3.0
    np.testing.assert_allclose(out[:, 0], np.array([1 / 3, -2 / 3, 1 / 3]) / (sigma + 1e-6), rtol=1e-12)
    np.testing.assert_allclose(out[:, 0], [1 / math.sqrt(2), -math.sqrt(2), 1 / math.sqrt(2)], atol=1e-5)
    np.testing.assert_array_equal(out[:, 1], [0.0, 0.0, 0.0])  # σ = 0 -> zeros
    # M = 2 split vote: μ = 0.5, σ = 0.5 -> (+1, -1) up to ε.
    np.testing.assert_allclose(group_relative_rewards([[1.0], [0.0]], eps=0.0), [[1.0], [-1.0]])


def test_group_relative_rewards_degenerate_groups_are_zero_not_nan():
    np.testing.assert_array_equal(group_relative_rewards([[0.3, 1.0, 0.0]]), [[0.0, 0.0, 0.0]])  # M = 1
    # 0.1 + 0.1 + 0.1 != 0.3 in floating point; σ = 0 must still give exact zeros, even with ε = 0.
    same = group_relative_rewards(np.full((3, 2), 0.1), eps=0.0)
    np.testing.assert_array_equal(same, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="eps"):
        group_relative_rewards([[1.0], [0.0]], eps=-1.0)
    with pytest.raises(ValueError, match=r"\[M, G\]"):
        group_relative_rewards([1.0, 0.0])


def test_eq_9_alone_gives_no_policy_gradient():
    # Σ_k R_k = 0 for every candidate: eq. 9 summed over experts cancels (docs/fedgrpo.md, "Module notes", group_reward 1).
    r = np.random.default_rng(3).uniform(size=(4, 8))
    np.testing.assert_allclose(group_relative_rewards(r).sum(axis=0), np.zeros(8), atol=1e-12)


# Hand case shared by the advantage tests: M = 2 experts, G = 4 candidates.
R_HAND = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
F_HAND = np.array([1.0, 1.0, 0.0, 1.0])
# s_g = 8 · μ_g + f_g = (9, 1, 4, 1); mean 3.75; deviations:
DEV_HAND = np.array([5.25, -2.75, 0.25, -2.75])


def test_candidate_advantages_paper_variant_hand_values():
    adv = candidate_advantages(R_HAND, "paper", group_coef=8.0, format_rewards=F_HAND, format_coef=1.0)
    std = math.sqrt((5.25**2 + 2.75**2 + 0.25**2 + 2.75**2) / 4)  # population: sqrt(10.6875)
    np.testing.assert_allclose(adv, DEV_HAND / (std + 1e-6), rtol=1e-12)
    np.testing.assert_allclose(adv, [1.6059, -0.8412, 0.0765, -0.8412], atol=1e-4)
    unscaled = candidate_advantages(R_HAND, "paper", format_rewards=F_HAND, scale_rewards=False)
    np.testing.assert_allclose(unscaled, DEV_HAND, rtol=1e-12)


def test_candidate_advantages_pooled_variant_hand_values():
    adv = candidate_advantages(R_HAND, "pooled", group_coef=8.0, format_rewards=F_HAND, format_coef=1.0)
    # pooled x = 8r + f: (9, 1, 8, 1, 9, 1, 0, 1); mean 3.75; squared deviations sum to 117.5;
    # unbiased std sqrt(117.5 / 7); per-candidate mean deviation is DEV_HAND again.
    std = math.sqrt(117.5 / 7)
    np.testing.assert_allclose(adv, DEV_HAND / (std + 1e-4), rtol=1e-12)
    np.testing.assert_allclose(adv, [1.2814, -0.6712, 0.0610, -0.6712], atol=1e-4)
    # expert disagreement on candidate 2 inflates the pooled std: smaller steps than "paper".
    assert np.all(np.abs(adv) < np.abs(candidate_advantages(R_HAND, "paper", format_rewards=F_HAND)))
    unscaled = candidate_advantages(R_HAND, "pooled", format_rewards=F_HAND, scale_rewards=False)
    np.testing.assert_allclose(unscaled, DEV_HAND, rtol=1e-12)


def test_official_protocol_advantages_hand_case():
    """The official trainer: M = 2 experts, each scores its own block of G = 3 of the prompt's 6 completions;
    the 6 rewards x = 8·acc + 1·format are one group, centred without the std (--scale_rewards False)."""
    blocks = np.array([[1.0, 0.0, 0.0],   # expert 0 on completions 0-2 (e.g. AE: only completion 0 is right)
                       [0.5, 0.25, 0.0]])  # expert 1 on completions 3-5 (e.g. ME probabilities)
    fmt = np.array([[1.0, 1.0, 0.0],
                    [0.0, 1.0, 1.0]])
    # x = (9, 1, 0, 4, 3, 1); mean 3
    adv = official_advantages(blocks, 8.0, fmt, 1.0)
    np.testing.assert_array_equal(adv, [[6.0, -2.0, -3.0], [1.0, 0.0, -2.0]])
    assert adv.sum() == 0.0  # one group over all G·M completions, not one per expert
    # with scale_rewards: / (unbiased std + 1e-4); the squared deviations sum to 54, so std = sqrt(54 / 5)
    scaled = official_advantages(blocks, 8.0, fmt, 1.0, scale_rewards=True)
    np.testing.assert_allclose(scaled, adv / (math.sqrt(54 / 5) + 1e-4), rtol=1e-12)
    # all equal: zeros; the variant's own default for the std is "off", the others' "on"
    np.testing.assert_array_equal(official_advantages(np.ones((2, 3))), np.zeros((2, 3)))
    assert default_scale_rewards("official") is False and default_scale_rewards("paper") is True
    assert default_scale_rewards("official", True) is True
    with pytest.raises(ValueError, match="official_advantages"):
        candidate_advantages(R_HAND, "official")
    with pytest.raises(ValueError, match="format_rewards"):
        official_advantages(blocks, format_rewards=np.ones(3))


def test_candidate_advantages_pooled_on_one_row_is_the_official_group():
    # One row of all M·G scores normalised together is the official group (with the std).
    flat = R_HAND.reshape(1, -1)
    adv = candidate_advantages(flat, "pooled", group_coef=8.0)
    x = 8.0 * R_HAND.reshape(-1)
    np.testing.assert_allclose(adv, (x - x.mean()) / (x.std(ddof=1) + 1e-4), rtol=1e-12)
    np.testing.assert_allclose(adv, official_advantages(R_HAND, 8.0, scale_rewards=True).reshape(-1), rtol=1e-12)


def test_candidate_advantages_per_expert_variant_hand_values():
    adv = candidate_advantages(R_HAND, "per_expert", format_rewards=F_HAND)
    row0 = np.array([4.25, -3.75, 3.25, -3.75]) / (math.sqrt(56.75 / 4) + 1e-6)  # x = (9, 1, 8, 1)
    row1 = np.array([6.25, -1.75, -2.75, -1.75]) / (math.sqrt(52.75 / 4) + 1e-6)  # x = (9, 1, 0, 1)
    np.testing.assert_allclose(adv, (row0 + row1) / 2, rtol=1e-12)


def test_paper_and_pooled_share_the_numerator():
    rng = np.random.default_rng(7)
    for _ in range(20):
        r = rng.integers(0, 2, size=(3, 8)).astype(float)
        f = rng.integers(0, 2, size=8).astype(float)
        paper = candidate_advantages(r, "paper", format_rewards=f, scale_rewards=False)
        pooled = candidate_advantages(r, "pooled", format_rewards=f, scale_rewards=False)
        np.testing.assert_allclose(paper, pooled, atol=1e-12)


def test_candidate_advantages_degenerate_and_coefficient_scale():
    np.testing.assert_array_equal(candidate_advantages(np.ones((2, 4)), "paper"), np.zeros(4))
    np.testing.assert_array_equal(candidate_advantages(np.ones((2, 4)), "pooled"), np.zeros(4))
    np.testing.assert_array_equal(candidate_advantages([[1.0], [0.0]], "paper"), [0.0])  # G = 1
    # with the std divided out, only the ratio of the coefficients matters.
    np.testing.assert_allclose(
        candidate_advantages(R_HAND, group_coef=8.0, eps=0.0), candidate_advantages(R_HAND, group_coef=1.0, eps=0.0)
    )


def test_candidate_advantages_rejects_bad_input():
    with pytest.raises(ValueError, match="variant must be one of"):
        candidate_advantages(R_HAND, "trl")
    with pytest.raises(ValueError, match="applies to variant='paper' only"):
        candidate_advantages(R_HAND, "pooled", how="median")
    with pytest.raises(ValueError, match=r"format_rewards must be a finite \[G\] array with G=4"):
        candidate_advantages(R_HAND, format_rewards=[1.0, 0.0])
    with pytest.raises(ValueError, match="group_coef must be a finite number >= 0"):
        candidate_advantages(R_HAND, group_coef=-1.0)
    with pytest.raises(ValueError, match="finite"):
        candidate_advantages([[np.nan, 1.0]])


def test_robust_aggregation_with_one_malicious_expert_among_five():
    truth = np.array([1.0, 0.0, 1.0, 0.0])  # candidates 0 and 2 are right
    honest = np.array([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]])
    liar = malicious_rewards(truth, "flip")  # (0, 1, 0, 1)
    np.testing.assert_array_equal(liar, [0.0, 1.0, 0.0, 1.0])
    r = np.vstack([honest, liar])  # [M=5, G=4]

    np.testing.assert_allclose(robust_aggregate(r, "mean"), [0.8, 0.4, 0.6, 0.2])
    np.testing.assert_array_equal(robust_aggregate(r, "median"), [1.0, 0.0, 1.0, 0.0])
    # trim 0.2 of 5 drops one score at each end: column 1 sorted (0,0,0,1,1) -> (0,0,1) -> 1/3.
    np.testing.assert_allclose(robust_aggregate(r, "trimmed_mean", trim=0.2), [1.0, 1 / 3, 2 / 3, 0.0])
    np.testing.assert_allclose(robust_aggregate(r, "trimmed_mean", trim=0.0), [0.8, 0.4, 0.6, 0.2])

    # the median consensus recovers the truth; its advantages rank the right answers first.
    adv = candidate_advantages(r, "paper", how="median", scale_rewards=False)
    np.testing.assert_allclose(adv, 8.0 * (truth - truth.mean()))


def test_robust_aggregate_rejects_bad_input():
    with pytest.raises(ValueError, match="how must be one of"):
        robust_aggregate(R_HAND, "max")
    with pytest.raises(ValueError, match=r"trim must be in \[0, 0.5\)"):
        robust_aggregate(R_HAND, "trimmed_mean", trim=0.5)


def test_malicious_rewards_flip_and_random():
    np.testing.assert_allclose(malicious_rewards([0.0, 1.0, 0.25], "flip"), [1.0, 0.0, 0.75])
    noise = malicious_rewards(np.zeros((2, 3)), "random", rng=np.random.default_rng(5))
    assert noise.shape == (2, 3) and np.all((noise >= 0.0) & (noise < 1.0))
    np.testing.assert_array_equal(noise, malicious_rewards(np.zeros((2, 3)), "random", rng=5))
    with pytest.raises(ValueError, match=r"needs rewards in \[0, 1\]"):
        malicious_rewards([2.0], "flip")
    with pytest.raises(ValueError, match="needs rng"):
        malicious_rewards([0.0], "random")
    with pytest.raises(ValueError, match="kind must be one of"):
        malicious_rewards([0.0], "swap")


# ---------------------------------------------------------------- communication (Figure 2)


def test_lora_param_count_small_config_by_hand():
    tiny = QwenArch(
        hidden_size=8, num_hidden_layers=2, intermediate_size=16, num_attention_heads=2, num_key_value_heads=1
    )
    assert tiny.head_dim == 4
    # q: 8 -> 8, v: 8 -> 4 (one kv head of width 4); rank 2: 2·16 + 2·12 = 56 per layer, 2 layers.
    assert lora_param_count(tiny, rank=2, target_modules=("q_proj", "v_proj")) == 112
    # + k 24, o 32, gate 48, up 48, down 48 -> 256 per layer.
    assert lora_param_count(tiny, rank=2, target_modules=LORA_MODULES) == 512


def test_lora_param_count_qwen25_7b():
    # 28 layers · 8 · ((3584 + 3584) + (3584 + 4·128)).
    assert lora_param_count("Qwen2.5-7B", 8) == 28 * 8 * (7168 + 4096) == 2_523_136
    assert lora_param_count("Qwen2.5-Math-7B", 8) == 2_523_136
    assert lora_param_count("Qwen2.5-1.5B", 8) == 28 * 8 * (3072 + 1792) == 1_089_536
    assert lora_param_count("Qwen2.5-3B", 8) == 36 * 8 * (4096 + 2304) == 1_843_200


def test_lora_param_count_rejects_bad_input():
    with pytest.raises(ValueError, match="rank must be an integer >= 1"):
        lora_param_count("Qwen2.5-7B", 0)
    with pytest.raises(ValueError, match="target_modules"):
        lora_param_count("Qwen2.5-7B", 8, ("lm_head",))
    with pytest.raises(ValueError, match="model must be"):
        lora_param_count("Llama-3-8B", 8)


def test_fedgrpo_bytes_counts_rewards_and_breakdown():
    assert fedgrpo_bytes() == 2000 * 2 * 8 * 4 == 128_000
    parts = fedgrpo_breakdown(competence="per_query")
    assert parts["competence_up"] == 2000 * 8 * 4  # K = 8 scores r_k^p per question
    assert parts["candidates_down"] == 2000 * 2 * (512 + 8 * 2048) * 4
    assert fedgrpo_breakdown()["competence_up"] == 8 * 100 * 4  # cached: one flag per cell
    # 2000 questions over 320 rounds: ⌈6.25⌉ = 7 per round, min(K = 8, 2·7) experts report.
    assert fedgrpo_breakdown(header_bytes=10)["headers"] == 320 * 8 * 10
    assert fedgrpo_bytes(include=("rewards_up", "competence_up")) == 128_000 + 3_200
    with pytest.raises(ValueError, match="include must name keys"):
        fedgrpo_bytes(include=("weights",))
    with pytest.raises(ValueError, match=r"M must be in \[1, n_clients=8\]"):
        fedgrpo_bytes(M=9)


def test_dpsda_and_fedpetuning_bytes():
    assert dpsda_bytes() == 2000 * (512 + 2048) * 4 == 20_480_000
    assert dpsda_bytes(synthetic_per_sample=0.5, question_tokens=100, answer_tokens=300, bytes_per_token=1) == 400_000
    assert fedpetuning_bytes("Qwen2.5-7B") == 2_523_136 * 2 * 8 * 320
    assert fedpetuning_bytes("Qwen2.5-7B", count_download=True) == 2 * fedpetuning_bytes("Qwen2.5-7B")
    assert fedpetuning_bytes("Qwen2.5-7B", 16, n_clients=1, rounds=1, bytes_per_param=4) == 2_523_136 * 2 * 4


def test_paper_figure2_table_rows():
    rows = paper_figure2_table()
    table = {(r.method, r.model): r for r in rows}
    assert len(rows) == 5
    assert table[("FedGRPO", "any")].paper_bytes == 2.4e6
    assert table[("FedGRPO", "any")].our_bytes == 128_000
    assert table[("DPSDA-FL", "any")].paper_bytes == 102.5e6
    assert table[("FedPETuning", "Qwen2.5-7B")].paper_bytes == 6.1e9
    assert table[("FedPETuning", "Qwen2.5-1.5B")].paper_bytes is None
    assert table[("FedPETuning", "Qwen2.5-1.5B")].ratio is None
    assert table[("FedPETuning", "Qwen2.5-7B")].ratio == pytest.approx(12_918_456_320 / 6.1e9)
    # the ordering the paper argues with holds: rewards << synthetic data << adapters.
    assert table[("FedGRPO", "any")].our_bytes < table[("DPSDA-FL", "any")].our_bytes
    assert table[("DPSDA-FL", "any")].our_bytes < table[("FedPETuning", "Qwen2.5-1.5B")].our_bytes


def test_human_bytes_decimal_units():
    assert human_bytes(2.4e6) == "2.4 MB"
    assert human_bytes(6.1e9) == "6.1 GB"
    assert human_bytes(128_000) == "128 KB"
    assert human_bytes(12) == "12 B"


def test_topic_competence_summarises_the_confidence_graph():
    from fedrl_kit.fedgrpo.expert_selection import topic_competence

    m = np.array([[1.0, 0.0, np.nan, 0.5], [np.nan, np.nan, 0.2, 0.4]])  # [K=2, N=4]
    names, out = topic_competence(m, ["a", "a", "b", "b"])
    assert names == ["a", "b"]
    np.testing.assert_allclose(out, [[0.5, 0.5], [np.nan, 0.3]])
    with pytest.raises(ValueError, match="one topic per column"):
        topic_competence(m, ["a"])


def test_trimmed_mean_is_the_engines_one():
    """robust_aggregate's trimmed mean and the adapter aggregator's are one primitive (bit-identical)."""
    from fedrl_kit.aggregate import trimmed_mean, trimmed_mean_array

    r = np.random.default_rng(11).uniform(size=(7, 5))  # [M, G]
    for trim in (0.0, 0.15, 0.3, 0.49):
        cut = int(np.floor(trim * 7))
        by_hand = np.sort(r, axis=0)[cut:7 - cut].mean(axis=0)
        np.testing.assert_array_equal(robust_aggregate(r, "trimmed_mean", trim=trim), by_hand)
        np.testing.assert_array_equal(trimmed_mean_array(r, trim), by_hand)
        np.testing.assert_array_equal(trimmed_mean_array(r.T, trim, axis=1), by_hand)
        states = [{"w": row.astype(np.float32)} for row in r]  # 7 "adapters" of one tensor [5]
        np.testing.assert_array_equal(trimmed_mean(states, trim)["w"],
                                      np.sort(r.astype(np.float32), axis=0)[cut:7 - cut].mean(axis=0)
                                      .astype(np.float32))
    with pytest.raises(ValueError, match=r"trim must be in \[0, 0.5\)"):
        trimmed_mean_array(r, 0.5)


# ---------------------------------------------------------------- the official no-GT scorer (no_gt_scorer="subject")


def test_subject_groups_split_the_seven_topics_3_2_2_in_the_worlds_order():
    from fedrl_kit.fedgrpo.subject_scorer import SUBJECT_GROUPS, subject_group
    from fedrl_kit.world.tasks import DEFAULT_TOPICS

    assert SUBJECT_GROUPS == (("add", "sub", "mul"), ("mod", "max"), ("count", "seq"))
    assert [subject_group(t) for t in DEFAULT_TOPICS] == [0, 0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match=r"no_gt_scorer='subject'.*'chem'"):
        subject_group("chem")


def test_reward_model_agreement_rule_on_hand_cases():
    """1 when the two final answers agree after normalise_answer, whatever wraps them; 0 when they differ or either
    side has no answer (the official compare_answer scores an unparseable answer 0)."""
    from fedrl_kit.fedgrpo.subject_scorer import agreement_scores

    reward = ["<think>\n3+4\n</think>\n<answer>\n7\n</answer>", "so it is 12.", "<answer>007</answer>",
              "<answer>7</answer>", "no number here", "no number here", "<answer>5</answer>"]
    cands = ["the answer is 7", "<answer> 12 </answer>", "<answer>7.0</answer>",
             "<answer>8</answer>", "<answer>7</answer>", "nothing either", "<answer></answer>"]
    np.testing.assert_array_equal(agreement_scores(reward, cands), [1, 1, 1, 0, 0, 0, 0])


def test_reward_model_holder_is_the_client_with_most_labelled_questions_of_the_group():
    from fedrl_kit.fedgrpo.subject_scorer import reward_model_holders

    client_topics = [["add", "add", "mod", "count"],  # group 0: 2, group 1: 1, group 2: 1
                     ["sub", "mul", "max", "max"],  # group 0: 2 (tie with client 0), group 1: 2
                     ["seq", "count", "seq"]]  # group 2: 3
    assert reward_model_holders(client_topics) == {0: 0, 1: 1, 2: 2}  # group 0's tie goes to the lower index
    assert reward_model_holders([["add"], ["sub", "mul"]]) == {0: 1}  # groups nobody holds have no model


def _stub_reward_models(monkeypatch, topic_of):
    """SubjectRewardModels with no model: group g's "reward model" answers g to everything; records its draws."""
    import datasets

    from fedrl_kit.fedgrpo import subject_scorer

    data = [datasets.Dataset.from_dict({"prompt": ["a", "b"], "answer": ["1", "2"], "topic": ["add", "seq"]}),
            datasets.Dataset.from_dict({"prompt": ["c"], "answer": ["3"], "topic": ["mod"]})]
    draws = []

    def sample(policy, adapter, questions, G, seeds):
        draws.append((adapter, list(questions)))
        g = adapter.removeprefix("reward_subject_")
        return [[f"<answer>{g}</answer>"] * G for _ in questions]

    monkeypatch.setattr(subject_scorer, "sample_answers", sample)
    rm = subject_scorer.SubjectRewardModels(None, data, topic_of, evaluator=None, seed=0)
    monkeypatch.setattr(rm, "ensure", lambda g: None)
    return rm, draws


def test_subject_scorer_routes_each_topic_to_its_groups_model_and_every_expert_gets_its_scores(monkeypatch):
    from fedrl_kit.fedgrpo.args import EvaluatorArgs, FedGRPOArgs
    from fedrl_kit.fedgrpo.client import FedGRPOClient

    topic_of = {"q_add": "add", "q_mul": "mul", "q_max": "max", "q_seq": "seq"}
    rm, draws = _stub_reward_models(monkeypatch, topic_of)
    assert rm.holders == {0: 0, 1: 1, 2: 0}
    # candidates answering 0, 1, 2: the one naming the question's group is the one its model agrees with
    cands = [f"<answer>{g}</answer>" for g in range(3)]
    questions = ["q_add", "q_seq", "q_max", "q_mul"]
    args = FedGRPOArgs(mode="no_gt", gt_fraction=0.5, no_gt_scorer="subject")
    experts = [FedGRPOClient(f"client_{k}", k, rm.data[0], None, args, EvaluatorArgs(), 0, reward_models=rm)
               for k in range(2)]
    replies = [np.array(e.on_score(1, {"step": 0, "questions": questions, "candidates": [cands] * 4})["scores"])
               for e in experts]
    expected = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]])  # add, seq, max, mul → groups 0, 2, 1, 0
    np.testing.assert_array_equal(replies[0], expected)
    np.testing.assert_array_equal(replies[1], expected)  # the second expert: the same scores, not a new draw
    assert sorted(draws) == [("reward_subject_0", ["q_add", "q_mul"]), ("reward_subject_1", ["q_max"]),
                             ("reward_subject_2", ["q_seq"])]  # each group's model asked once, for its questions
    assert all(g == "ME" for *_, g in experts[0].gate_log)


def test_subject_scorer_draw_seed_depends_on_question_and_candidates_not_on_the_expert(monkeypatch):
    rm, _ = _stub_reward_models(monkeypatch, {"q": "add"})
    s = rm.draw_seed(0, "q", ["a", "b"])
    assert s == rm.draw_seed(0, "q", ["a", "b"])  # reproducible (a resumed run draws the same)
    assert len({s, rm.draw_seed(0, "q", ["a", "c"]), rm.draw_seed(0, "q2", ["a", "b"]),
                rm.draw_seed(1, "q", ["a", "b"])}) == 4


def test_subject_scorer_refuses_a_ds_subject_no_client_holds_labels_of():
    import datasets

    from fedrl_kit.fedgrpo.subject_scorer import SubjectRewardModels

    data = [datasets.Dataset.from_dict({"prompt": ["a"], "answer": ["1"], "topic": ["add"]})]
    with pytest.raises(ValueError, match=r"no_gt_scorer='subject'.*\('count', 'seq'\)"):
        SubjectRewardModels(None, data, {"q": "seq"}, evaluator=None, seed=0)


def test_top_p_draw_never_leaves_the_nucleus_and_rows_follow_their_own_seed():
    import torch

    from fedrl_kit.fedgrpo.subject_scorer import TopPDraw

    # probabilities 0.6, 0.3, 0.06, 0.04: the 0.95 nucleus is the first three tokens, the fourth is never drawn
    logits = torch.log(torch.tensor([[0.6, 0.3, 0.06, 0.04]])).repeat(400, 1)
    out = TopPDraw([(0, 200), (200, 400)], [1, 2], 1.0, 0.95, "cpu")(None, logits)
    tokens = out.argmax(dim=-1)
    assert torch.isinf(out).sum(dim=-1).eq(3).all()  # one token kept per row
    assert set(tokens.tolist()) <= {0, 1, 2} and 0 in tokens.tolist() and 2 in tokens.tolist()
    alone = TopPDraw([(0, 200)], [2], 1.0, 0.95, "cpu")(None, logits[200:]).argmax(dim=-1)
    assert torch.equal(alone, tokens[200:])  # the second question's draw does not depend on the first's
