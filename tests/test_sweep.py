"""Sweeps: the PubSwap grid gives every run the same budget; summaries and tables are computed right."""

import pandas as pd
import pytest

from experiments.sweep import PROX_MUS, parse_name, pubswap_grid, summarise, table


def test_pubswap_grid_has_equal_budget_and_the_papers_arms():
    grid = pubswap_grid("quick", seeds=(0, 1))
    assert all(c.local_steps * c.rounds == 24 for c in grid.values())  # same local steps per client everywhere
    assert all(c.trace_drift for c in grid.values())
    t1 = [parse_name(n) for n in grid if n.startswith("table1/")]
    methods = {p["method"] for p in t1}
    assert methods == {"fedavg_grpo", "pubswap_random", "pubswap_balanced"} | {f"fedprox_grpo_mu{m}" for m in PROX_MUS}
    assert {p["tau"] for p in t1} == {2, 8} and {p["seed"] for p in t1} == {0, 1}
    prox = grid["table1/fedprox_grpo_mu0.1/tau8/seed1"]
    assert prox.method == "fedprox_grpo" and prox.fedprox.mu == 0.1 and prox.seed == 1 and prox.rounds == 3
    t4 = grid["table4/pubswap_balanced/tau8/seed0"]
    assert t4.dirichlet_alpha == 0.1 and t4.equal_size and grid["table1/fedavg_grpo/tau8/seed0"].dirichlet_alpha == 0.3
    assert {c.pubswap.period for n, c in grid.items() if n.startswith("table5/")} == {4, 8}
    # settings that are not the experiment's variable are the same for every arm
    keys = ("learning_rate", "prompts_per_step", "num_generations", "lora_rank", "num_clients", "n_public")
    assert len({tuple(getattr(c, k) for k in keys) for c in grid.values()}) == 1


def test_full_grid_is_the_papers_budget_on_a_papers_preset():
    grid = pubswap_grid("pubswap-qwen2.5-math-1.5b-math")
    assert {c.local_steps * c.rounds for c in grid.values()} == {360}
    assert {parse_name(n)["tau"] for n in grid} == {10, 40, 90, 120}
    assert {(c.num_clients, c.prompts_per_step, c.num_generations) for c in grid.values()} == {(4, 8, 8)}
    with pytest.raises(ValueError, match="full scale .* paper's models.*not 'full'"):
        pubswap_grid("full")  # the generic full preset: 8 clients, b = 32, a model the paper did not train


def test_rows_outside_the_papers_n_b_k_are_not_the_papers_setting():
    """FedIT, weight decay and equal sizes are not enough: N, b and K must be the paper's too (4, 8, 8)."""
    from experiments.sweep import _setting_of

    rows = [_row("table1", "fedavg_grpo", 8, 0, 0.3, num_clients=4, prompts_per_step=8, num_generations=8)]
    assert _setting_of(pd.DataFrame(rows))[1] is None
    wide = [dict(r, num_clients=8, prompts_per_step=32) for r in rows]
    why = _setting_of(pd.DataFrame(wide))[1]
    assert "num_clients [8] (the paper: 4)" in why and "prompts_per_step [32] (the paper: 8)" in why
    assert "generic full preset" in _setting_of(pd.DataFrame([dict(rows[0], preset="full")]))[1]
    assert _setting_of(pd.DataFrame([_row("table1", "fedavg_grpo", 8, 0, 0.3, preset="quick")]))[1] is None


def _records():
    recs = [{"kind": "global", "round": 0, "pass@1": 0.2, "format": 0.5},
            {"kind": "global", "round": 2, "pass@1": 0.5, "format": 0.6},
            {"kind": "global", "round": 4, "pass@1": 0.4, "format": 0.7}]
    for rnd, last in ((1, 1.0), (2, 3.0)):
        recs.append({"kind": "drift", "round": rnd, "step": 0, "step_kind": "private", "pairwise_effective": 0.1,
                     "pairwise_factors": 0.1, "to_global_effective": 0.1, "grad_dissimilarity": 2.0})
        recs.append({"kind": "drift", "round": rnd, "step": 1, "step_kind": "public", "pairwise_effective": last,
                     "pairwise_factors": last, "to_global_effective": last, "grad_dissimilarity": 0.5,
                     "replacement_fraction": 0.25})
    return recs


def test_summarise_takes_final_best_and_end_of_round_drift():
    s = summarise(_records())
    assert (s["pass@1_start"], s["pass@1_final"], s["pass@1_best"], s["rounds"]) == (0.2, 0.4, 0.5, 4)
    assert s["drift_end_pairwise_effective"] == pytest.approx(2.0)  # mean of the last steps' 1.0 and 3.0
    assert s["grad_dissimilarity_private"] == 2.0 and s["grad_dissimilarity_public"] == 0.5
    assert s["replacement_fraction"] == 0.25
    with pytest.raises(ValueError, match="no global"):
        summarise([{"kind": "client"}])


def test_table_is_mean_and_sample_std_over_seeds():
    rows = [{"method": "a", "tau": 2, "v": 0.30}, {"method": "a", "tau": 2, "v": 0.40},
            {"method": "b", "tau": 2, "v": 0.50}]
    t = table(rows, "method", "tau", "v")
    assert t.loc["a", 2] == "35.0 ± 7.1 (n=2)" and t.loc["b", 2] == "50.0"
    with pytest.raises(ValueError, match="no rows"):
        table([], "method", "tau", "v")


def _row(table, method, tau, seed, final, drift=1.0, best=None, setting="paper", **kw):
    """A summary row of the paper's setting (unless ``setting`` says otherwise); best checkpoint = final unless
    given."""
    return {"table": table, "method": method, "tau": tau, "seed": seed, "pass@1_final": final,
            "pass@1_best": final if best is None else best, "drift_end_pairwise_effective": drift,
            "setting": setting, **kw}


BAL8 = "Balanced outperforms FedAvg+GRPO for most choices of τ: τ = 8"


def test_pubswap_claims_compare_seed_means_with_their_error():
    from experiments.sweep import pubswap_claims

    rows = []
    for seed, (fa, ba) in enumerate([(0.30, 0.40), (0.32, 0.42), (0.31, 0.41)]):  # Balanced clearly ahead at τ = 8
        rows += [_row("table1", "fedavg_grpo", 8, seed, fa, drift=5.0),
                 _row("table1", "pubswap_balanced", 8, seed, ba, drift=4.0 + 0.5 * seed)]
    rows += [_row("table1", "fedavg_grpo", 2, 0, 0.5, drift=2.0), _row("table1", "pubswap_balanced", 2, 0, 0.4, drift=2.0)]
    c = pubswap_claims(rows).set_index("claim")
    large = c.loc[BAL8]
    assert large["diff"] == pytest.approx(10.0) and large["seeds"] == 3 and large["holds"] == "yes"
    assert large["paper"] == "§4.1, Table 1" and large["setting"] == "paper"
    small = c.loc["Balanced outperforms FedAvg+GRPO for most choices of τ: τ = 2"]
    assert small["holds"] == "no (one seed: no error bar)"
    drift = c[c.index.str.startswith("public steps limit drift")].iloc[0]
    assert "confounded" in drift.name
    assert drift["diff"] == pytest.approx(-0.5) and drift["holds"] == "within noise (95 % t interval contains 0)"
    assert c.loc["Random can outperform Balanced when the number of local steps is small: τ = 2, Random − Balanced",
                 "holds"] == "not measured"
    with pytest.raises(ValueError, match="table1"):
        pubswap_claims([{"table": "table4", "method": "x", "tau": 1, "seed": 0}])


def test_pubswap_claims_verdict_is_the_95_percent_t_interval_not_2_se():
    from experiments.sweep import pubswap_claims

    # Balanced − FedAvg-GRPO = +1, +2, +3 points: mean 2 > 2 SE = 1.15 ("yes" by 2 SE), but the 95 % t interval
    # 2 ± 4.303 · 0.577 = 2 ± 2.48 contains 0; drift −1.0 on every seed is "yes" under both
    rows = []
    for seed in range(3):
        rows += [_row("table1", "fedavg_grpo", 8, seed, 0.30, drift=5.0),
                 _row("table1", "pubswap_balanced", 8, seed, 0.30 + 0.01 * (seed + 1), drift=4.0)]
    c = pubswap_claims(rows).set_index("claim")
    large = c.loc[BAL8]
    assert large["diff"] == pytest.approx(2.0) and large["se"] == pytest.approx(0.58)
    assert large["±95% t"] == pytest.approx(2.48) and large["holds"] == "within noise (95 % t interval contains 0)"
    drift = c[c.index.str.startswith("public steps limit drift")].iloc[0]
    assert drift["holds"] == "yes" and drift["±95% t"] == 0.0


def test_pubswap_claims_outside_the_papers_setting_are_not_tested_but_still_measured():
    """The first stored sweep ran FedAvg by examples with plain Adam: its differences are shown, never a verdict."""
    from experiments.sweep import pubswap_claims

    rows = []
    for seed in range(3):
        rows += [_row("table1", "fedavg_grpo", 8, seed, 0.30, setting="fedavg_examples"),
                 _row("table1", "pubswap_balanced", 8, seed, 0.40 + 0.01 * seed, setting="fedavg_examples")]
    c = pubswap_claims(rows).set_index("claim")
    assert c.loc[BAL8, "diff"] == pytest.approx(11.0)
    assert c.loc[BAL8, "holds"] == ("not tested (not the paper's setting: FedAvg by examples, plain Adam, unequal "
                                    "clients; measured: yes)")
    assert c.holds.str.startswith("not tested").all()
    legacy = [{k: v for k, v in r.items() if k != "setting"} for r in rows]  # rows from before the column
    assert pubswap_claims(legacy).holds.str.startswith("not tested").all()


def test_pubswap_claims_test_the_tau_trend_as_a_paired_slope_over_log2_tau():
    """"The gains are larger at higher τ": per seed, the slope of Balanced − FedAvg-GRPO against log₂ τ."""
    from experiments.sweep import pubswap_claims

    rows = []
    gains = {2: (0.00, 0.01, -0.01), 8: (0.02, 0.03, 0.03), 32: (0.04, 0.05, 0.05)}  # about +2 points per 2 doublings
    for tau, g in gains.items():
        for seed in range(3):
            rows += [_row("table1", "fedavg_grpo", tau, seed, 0.30), _row("table1", "pubswap_balanced", tau, seed,
                                                                          0.30 + g[seed])]
    c = pubswap_claims(rows).set_index("claim")
    trend = c[c.index.str.startswith("the gains are larger")].iloc[0]
    # per-seed slopes over x = 1, 3, 5: (4 − 0)/4 = 1.0, (5 − 1)/4 = 1.0, (5 + 1)/4 = 1.5 points per doubling
    assert trend["diff"] == pytest.approx(1.17, abs=0.01) and trend["seeds"] == 3 and trend["holds"] == "yes"
    shrinking = [{**r, "pass@1_final": 0.60 - r["pass@1_final"]} if r["method"] == "pubswap_balanced" else r
                 for r in rows]
    assert pubswap_claims(shrinking).set_index("claim").loc[trend.name, "holds"] == "no"
    one_tau = pubswap_claims([r for r in rows if r["tau"] == 8]).set_index("claim")
    assert one_tau.loc["the gains are larger at higher values of τ", "holds"] == "not tested (only one τ: 8)"


def test_pubswap_claims_at_large_tau_read_the_largest_tau_their_arms_both_ran():
    """τ = 48 run for the τ trend's two arms only: Random − Balanced stays at τ = 32, where Random ran."""
    from experiments.sweep import pubswap_claims

    rows = []
    for seed in range(3):
        for tau in (2, 32):
            rows += [_row("table1", m, tau, seed, 0.30 + 0.01 * seed + (0.02 if m == "pubswap_random" else 0),
                          drift=6.0 if m == "fedavg_grpo" else 5.0)
                     for m in ("fedavg_grpo", "pubswap_balanced", "pubswap_random")]
        rows += [_row("table1", "fedavg_grpo", 48, seed, 0.30, drift=9.0),
                 _row("table1", "pubswap_balanced", 48, seed, 0.31, drift=7.0)]
    c = pubswap_claims(rows)
    claims = list(c.claim)
    assert "this advantage does not persist at larger local-step values: τ = 32, Random − Balanced" in claims
    assert "Random can outperform Balanced when the number of local steps is small: τ = 2, Random − Balanced" in claims
    drift = c[c.claim.str.startswith("public steps limit drift")].iloc[0]
    assert drift.claim.startswith("public steps limit drift: τ = 48") and drift["diff"] == pytest.approx(-2.0)
    trend = c[c.claim.str.startswith("the gains are larger")].iloc[0]
    assert "τ = 2, 32, 48" in trend.claim and trend["seeds"] == 3
    persist = c.set_index("claim").loc["this advantage does not persist at larger local-step values: τ = 32, "
                                       "Random − Balanced"]
    assert persist["diff"] == pytest.approx(2.0) and persist["seeds"] == 3


def test_pubswap_claims_name_fedprox_mu_and_both_checkpoints_name_their_flips():
    from experiments.sweep import pubswap_claims, pubswap_claims_both

    rows = []
    for seed in range(3):
        rows += [_row("table1", "fedavg_grpo", 8, seed, 0.30 + 0.01 * seed, best=0.40 + 0.01 * seed),
                 _row("table1", "pubswap_balanced", 8, seed, 0.40 + 0.01 * seed, best=0.30 + 0.01 * seed),
                 _row("table1", "fedprox_grpo_mu0.01", 8, seed, 0.30, best=0.30)]
    c = pubswap_claims(rows).set_index("claim")
    assert "FedProx does not improve performance: τ = 8, FedProx (μ = 0.01, the only μ run) − FedAvg-GRPO" in c.index
    more = rows + [_row("table1", "fedprox_grpo_mu0.1", 8, s, 0.25, best=0.25) for s in range(3)]
    assert any("best μ = 0.01 of 0.01, 0.1" in t for t in pubswap_claims(more).claim)
    both = pubswap_claims_both(rows).set_index("claim")
    assert both.loc[BAL8, "final holds"] == "yes" and both.loc[BAL8, "best holds"] == "no" and both.loc[BAL8, "flips"]
    assert not both[both.index.str.startswith("public steps limit drift")].flips.any()


def test_paper_setting_is_fedit_weight_decay_and_equal_size_for_every_arm():
    grid = pubswap_grid("quick", seeds=(0,))
    assert {(c.aggregator, c.weight_decay, c.equal_size) for c in grid.values()} == {("fedit", 0.01, True)}
    old = pubswap_grid("quick", seeds=(0,), setting="fedavg_examples")
    assert {(c.aggregator, c.weight_decay) for c in old.values()} == {("fedavg", 0.0)}
    assert not old["table1/pubswap_balanced/tau8/seed0"].equal_size and old["table4/fedavg_grpo/tau8/seed0"].equal_size
    with pytest.raises(ValueError, match="setting"):
        pubswap_grid("quick", setting="mine")
    with pytest.raises(ValueError, match="tables"):
        pubswap_grid("quick", tables=("table9",))


@pytest.mark.parametrize("scale,largest", [("quick_large_tau", 48), ("quick_tau64", 64)])
def test_larger_tau_grids_keep_an_equal_budget(scale, largest):
    grid = pubswap_grid("quick", seeds=(0, 1, 2), tables=("table1",), scale=scale)
    budget = {c.local_steps * c.rounds for c in grid.values()}
    assert len(budget) == 1 and max(parse_name(n)["tau"] for n in grid) == largest
    assert {parse_name(n)["seed"] for n in grid} == {0, 1, 2}
    assert min(c.rounds for n, c in grid.items() if parse_name(n)["tau"] == largest) >= 2


def test_best_checkpoint_is_a_trained_one_and_claims_can_use_it():
    from experiments.sweep import pubswap_claims

    s = summarise(_records())
    assert s["best_round"] == 2 and s["pass@1_best"] == 0.5
    rows = []
    for seed in range(3):
        for m, final, best in (("fedavg_grpo", 0.30, 0.40), ("pubswap_balanced", 0.35, 0.38)):
            rows.append(_row("table1", m, 8, seed, final + 0.01 * seed, best=best + 0.01 * seed))
    final = pubswap_claims(rows).set_index("claim")
    best = pubswap_claims(rows, value="pass@1_best").set_index("claim")
    assert final.loc[BAL8, "diff"] == pytest.approx(5.0)
    assert best.loc[BAL8, "diff"] == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="value"):
        pubswap_claims(rows, value="pass@1_start")


def test_result_path_keeps_the_first_sweep_apart_from_the_papers_setting(tmp_path):
    from experiments.sweep import result_path

    assert result_path("fedavg_examples", "quick", tmp_path) == tmp_path / "pubswap_sweep.json"
    assert result_path("paper", "quick_large_tau", tmp_path) == tmp_path / "pubswap_paper_quick_large_tau.json"


def test_pubswap_claims_with_one_tau_leave_the_small_tau_claims_untested():
    from experiments.sweep import pubswap_claims

    rows = [_row("table1", m, 32, s, v + 0.01 * s) for s in range(3)
            for m, v in (("fedavg_grpo", 0.30), ("pubswap_balanced", 0.40), ("pubswap_random", 0.35))]
    c = pubswap_claims(rows).set_index("claim")
    for text in ("the gains are larger at higher values of τ",
                 "Random can outperform Balanced when the number of local steps is small",
                 "this advantage does not persist at larger local-step values"):
        assert c.loc[text, "holds"] == "not tested (only one τ: 32)" and c.loc[text, "seeds"] == 0
        assert c.loc[text, ["diff", "se"]].isna().all()
    assert c.loc["Balanced outperforms FedAvg+GRPO for most choices of τ: τ = 32", "holds"] == "yes"
    # with two τ the small-τ claims are measured again
    two = pubswap_claims(rows + [_row("table1", m, 8, s, 0.3) for s in range(3)
                                 for m in ("fedavg_grpo", "pubswap_balanced", "pubswap_random")]).set_index("claim")
    assert two.loc["Random can outperform Balanced when the number of local steps is small: τ = 8, Random − "
                   "Balanced", "seeds"] == 3


def _table5_rows(seeds, fedavg, by_period, drift_by_period=None, tau=16):
    """FedAvg-GRPO and Balanced at τ_swap = 2 from Table 1, the other τ_swap from Table 5; a value per seed."""
    drift_by_period = drift_by_period or {}
    rows = [_row("table1", "fedavg_grpo", tau, s, fedavg[i], drift=5.0) for i, s in enumerate(seeds)]
    for p, vals in by_period.items():
        table, method = ("table1", "pubswap_balanced") if p == 2 else ("table5", f"pubswap_balanced_swap{p}")
        rows += [_row(table, method, tau, s, vals[i], drift=drift_by_period.get(p, [4.0] * len(seeds))[i],
                      pubswap_period=p) for i, s in enumerate(seeds)]
    return rows


def test_pubswap_claims_check_table5_swap_periods_and_can_fail():
    from experiments.sweep import pubswap_claims, table5_arms

    seeds = (0, 1, 2)
    rows = _table5_rows(seeds, fedavg=[0.30, 0.32, 0.31],
                        by_period={2: [0.45, 0.46, 0.44],    # τ_swap = 2: clearly above FedAvg-GRPO …
                                   4: [0.20, 0.23, 0.21],    # … τ_swap = 4: clearly below it (the claim fails)
                                   8: [0.35, 0.36, 0.355]},  # τ_swap = 8 below τ_swap = 2 on every seed
                        drift_by_period={2: [4.0, 4.1, 3.9], 8: [5.0, 5.2, 5.1]})
    arms = table5_arms(rows)  # Table 1's Balanced run is τ_swap = 2; FedAvg-GRPO is not an arm of Table 5
    assert sorted(arms.tau_swap) == [2, 2, 2, 4, 4, 4, 8, 8, 8] and set(arms.method) == {
        "pubswap_balanced", "pubswap_balanced_swap4", "pubswap_balanced_swap8"}
    assert table5_arms(rows[:3]).empty
    c = pubswap_claims(rows).set_index("claim")
    beats = {p: c.loc[f"Table 5, τ = 16: Balanced with τ_swap = {p} beats FedAvg-GRPO"] for p in (2, 4, 8)}
    assert beats[2]["holds"] == "yes" and beats[2]["diff"] == pytest.approx(14.0) and beats[2]["seeds"] == 3
    assert beats[4]["holds"] == "no" and beats[4]["diff"] == pytest.approx(-9.67, abs=0.01)
    assert beats[8]["holds"] == "yes"
    # "smaller τ_swap is not necessarily better" fails here: τ_swap = 2 is ahead of τ_swap = 4 and 8 on every seed
    not_better = c[c.index.str.contains("not necessarily always beneficial")]
    assert list(not_better.index.str.extract(r"minus τ_swap = (\d+)")[0]) == ["4", "8"]
    assert (not_better.holds == "no").all()
    drift = c.loc["Table 5, τ = 16: more frequent public steps can help limit drift: τ_swap = 2 minus τ_swap = 8 (‖ΔW‖ units)"]
    assert drift["diff"] == pytest.approx(-1.1) and drift["holds"] == "yes"
    # the opposite order of τ_swap: the "not necessarily better" claim holds
    flipped = pubswap_claims(_table5_rows(seeds, [0.3] * 3, {2: [0.30, 0.31, 0.32], 4: [0.40, 0.42, 0.41]}))
    assert flipped.set_index("claim").loc["Table 5, τ = 16: smaller PubSwap periods are not necessarily always beneficial: "
                                          "τ_swap = 2 minus τ_swap = 4", "holds"] == "yes"


def test_pubswap_claims_table5_with_one_seed_or_one_period_is_not_tested():
    from experiments.sweep import pubswap_claims

    one_seed = pubswap_claims(_table5_rows((0,), [0.3], {2: [0.5], 4: [0.1]})).set_index("claim")
    t5 = one_seed[one_seed.index.str.startswith("Table 5")]
    assert len(t5) == 4 and t5.holds.str.startswith("not tested (one seed").all()
    assert t5.loc["Table 5, τ = 16: Balanced with τ_swap = 4 beats FedAvg-GRPO", "diff"] == pytest.approx(-20.0)
    # Table 5 rows at a τ where Table 1 has no Balanced run: one τ_swap, nothing to compare periods with
    rows = _table5_rows((0, 1), [0.3, 0.3], {2: [0.4, 0.4]}, tau=2) + _table5_rows((0, 1), [0.3, 0.31], {4: [0.2, 0.22]})
    c = pubswap_claims(rows).set_index("claim")
    assert c.loc["Table 5, τ = 16: smaller PubSwap periods are not necessarily always beneficial", "holds"] == \
        "not tested (only one τ_swap below τ = 16: 4)"
    assert c.loc["Table 5, τ = 16: Balanced with τ_swap = 4 beats FedAvg-GRPO", "seeds"] == 2
    assert c.loc["Table 5, τ = 16: more frequent public steps can help limit drift", "holds"] == \
        "not tested (only one τ_swap below τ = 16: 4)"
    assert not c.index.str.startswith("Table 5, τ = 2").any()  # Table 5 ran at τ = 16 only


def test_grid_coverage_says_which_arms_and_seeds_a_partial_file_holds():
    from experiments.sweep import grid_coverage

    rows = [_row("table1", "fedavg_grpo", 32, s, 0.3) for s in (0, 1, 2)] + [_row("table1", "pubswap_balanced", 32, 0, 0.3)]
    cov = grid_coverage(rows, "quick_large_tau").set_index(["method", "tau"])
    assert set(cov.index.get_level_values("tau")) == {2, 8, 32, 48} and (cov.seeds_grid == 3).all()
    assert cov.loc[("fedavg_grpo", 32), "seeds_stored"] == 3 and cov.loc[("pubswap_balanced", 32), "seeds_stored"] == 1
    assert cov.loc[("pubswap_random", 48), "seeds_stored"] == 0 and cov.seeds_stored.sum() == 4
    with pytest.raises(ValueError, match="scale"):
        grid_coverage(rows, "huge")


def _run_records():
    return [{"kind": "global", "round": 0, "pass@1": 0.25, "format": 0.5, "n": 8},
            {"kind": "client", "round": 1, "client": "client_0", "loss": 0.1},
            {"kind": "drift", "round": 1, "step": 1, "step_kind": "public", "replacement_fraction": 0.375,
             "pairwise_effective": 0.2},
            {"kind": "drift", "round": 1, "step": 0, "step_kind": "private", "pairwise_effective": 0.1},
            {"kind": "comm", "round": 1, "seconds": 3.2, "down": 10, "up": 12},
            {"kind": "global", "round": 1, "pass@1": 0.5, "format": 0.75, "n": 8}]


def test_a_summary_row_keeps_its_runs_curves_and_a_digest_of_its_records():
    """Stored summaries replace committed run folders: the curves notebook 02 plots come back from the row, and
    the digest tells a re-run with the same records (timings aside) from any other."""
    from experiments.sweep import curves, records_digest, stored_records

    recs = _run_records()
    row = {"name": "table1/pubswap_balanced/tau2/seed0", "curves": curves(recs), "records_sha256": records_digest(recs)}
    back = stored_records(row)
    assert [r for r in back if r["kind"] == "global"] == [
        {"kind": "global", "round": 0, "pass@1": 0.25, "format": 0.5},
        {"kind": "global", "round": 1, "pass@1": 0.5, "format": 0.75}]
    assert [r for r in back if r["kind"] == "drift"] == [
        {"kind": "drift", "round": 1, "step": 1, "replacement_fraction": 0.375}]
    slower = [{**r, "seconds": 99.0} if "seconds" in r else r for r in recs]
    assert records_digest(slower) == row["records_sha256"]  # wall-clock time is not part of a run's result
    for i, key in ((1, "loss"), (3, "pairwise_effective"), (5, "n")):  # any other field of any record is
        changed = [dict(r) for r in recs]
        changed[i][key] += 1e-12 if isinstance(changed[i][key], float) else 1
        assert records_digest(changed) != row["records_sha256"], key
    assert records_digest(recs[:-1]) != row["records_sha256"]
    with pytest.raises(ValueError, match="has no curves.*pubswap_sweep.py"):
        stored_records({"name": "old"})


@pytest.mark.parametrize("summary", ["pubswap_paper_quick", "pubswap_paper_quick_large_tau", "pubswap_sweep"])
def test_every_stored_pubswap_row_carries_its_curves_and_digest(summary):
    import json
    from pathlib import Path

    from experiments.sweep import stored_records

    rows = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / f"{summary}.json").read_text())
    for row in rows:
        g = [r for r in stored_records(row) if r["kind"] == "global"]
        assert g[0]["round"] == 0 and g[0]["pass@1"] == row["pass@1_start"], row["name"]
        assert g[-1]["pass@1"] == row["pass@1_final"] and g[-1]["round"] == row["rounds"], row["name"]
        assert max(r["pass@1"] for r in g[1:]) == row["pass@1_best"], row["name"]
        assert len(row["records_sha256"]) == 64


def test_a_swap_period_not_below_tau_is_not_a_test_of_the_paper():
    """The paper's periods 2, 4, 8 all lie below its τ; τ_swap = τ leaves one public step, the round's last."""
    from experiments.sweep import pubswap_claims

    seeds = (0, 1, 2)
    rows = _table5_rows(seeds, [0.30, 0.31, 0.32], {2: [0.40, 0.41, 0.42], 4: [0.35, 0.36, 0.37],
                                                       8: [0.20, 0.21, 0.22]}, tau=8)
    c = pubswap_claims(rows).set_index("claim")
    at8 = c.loc["Table 5, τ = 8: Balanced with τ_swap = 8 beats FedAvg-GRPO", "holds"]
    assert at8 == "not tested (τ_swap = 8 is not below τ = 8; measured: no)"
    assert c.loc["Table 5, τ = 8: Balanced with τ_swap = 4 beats FedAvg-GRPO", "holds"] == "yes"
    assert not c.index.str.contains("τ_swap = 2 minus τ_swap = 8").any()  # periods compared: those below τ only
    assert "Table 5, τ = 8: smaller PubSwap periods are not necessarily always beneficial: τ_swap = 2 minus " \
           "τ_swap = 4" in c.index


def test_control_rows_split_the_drift_reduction_between_the_swap_and_the_public_steps():
    from experiments.sweep import pubswap_claims

    rows = []
    for seed in range(3):
        rows += [_row("table1", "fedavg_grpo", 8, seed, 0.30, drift=5.0 + 0.01 * seed),
                 _row("table1", "pubswap_balanced", 8, seed, 0.31, drift=4.0 + 0.02 * seed),
                 _row("control", "pubswap_noswap", 8, seed, 0.31 + 0.01 * seed, drift=3.9 + 0.01 * seed)]
    c = pubswap_claims(rows).set_index("claim")
    swap = c[c.index.str.startswith("the swap limits drift")].iloc[0]
    public = c[c.index.str.startswith("on-policy public steps limit drift")].iloc[0]
    assert swap["diff"] == pytest.approx(0.11) and swap["holds"] == "no"  # the swap adds drift here
    assert public["diff"] == pytest.approx(-1.1) and public["holds"] == "yes"
    assert swap["paper"] == "control"
    without = pubswap_claims([r for r in rows if r["table"] != "control"])
    assert not without.claim.str.contains("control").any()
    assert "control" in [p["table"] for p in map(parse_name, pubswap_grid("quick", tables=("control",)))]


def test_normalised_drift_is_pairwise_over_distance_to_the_global_model():
    """√2 for two equal moves in unrelated directions, less for a shared direction; a shrunk move keeps its ratio."""
    import numpy as np

    from experiments.sweep import NORMALISED_DRIFT, UNALIGNED, normalised_drift, with_normalised_drift

    u, v = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])  # two clients' moves from the broadcast adapter
    row = {"drift_end_pairwise_effective": np.linalg.norm(u - v), "drift_end_to_global_effective": 1.0}
    assert normalised_drift(row) == pytest.approx(UNALIGNED)
    shared = np.array([0.0, 0.0, 3.0])  # the same direction added to both: closer relative to how far they moved
    a, b = u + shared, v + shared
    aligned = {"drift_end_pairwise_effective": np.linalg.norm(a - b),
               "drift_end_to_global_effective": np.mean([np.linalg.norm(a), np.linalg.norm(b)])}
    assert normalised_drift(aligned) < 0.5
    shrunk = {k: 0.1 * x for k, x in row.items()}  # FedProx-like: every move 10× shorter, the same directions
    assert normalised_drift(shrunk) == pytest.approx(normalised_drift(row))
    assert np.isnan(normalised_drift({"drift_end_pairwise_effective": 1.0}))  # a row without the global distance
    rows = [row, {"drift_end_pairwise_effective": 1.0}]
    out = with_normalised_drift(rows)
    assert out[0][NORMALISED_DRIFT] == pytest.approx(UNALIGNED) and NORMALISED_DRIFT not in rows[0]
    s = summarise(_records())  # every drift record has pairwise = to_global: ratio 1
    assert s[NORMALISED_DRIFT] == pytest.approx(1.0)


def test_normalised_drift_claims_tell_alignment_from_shrinkage_and_can_fail():
    """FedProx-like rows: half the absolute drift, the same ratio (shrinkage, "within noise"); Balanced-like rows: a
    lower ratio ("yes"); a control that is less aligned than Balanced's swap makes the swap row read "no"."""
    from experiments.sweep import drift_levels, pubswap_claims

    rows = []
    for seed in range(3):
        e = 0.01 * seed
        rows += [_row("table1", "fedavg_grpo", 8, seed, 0.30, drift=5.0 + e, drift_end_to_global_effective=3.55),
                 _row("table1", "fedprox_grpo_mu0.01", 8, seed, 0.30, drift=2.5 + e / 2,
                      drift_end_to_global_effective=1.775 + 0.001 * (seed - 1)),
                 _row("table1", "pubswap_balanced", 8, seed, 0.31, drift=4.0 + e, drift_end_to_global_effective=3.3),
                 _row("control", "pubswap_noswap", 8, seed, 0.31, drift=4.5, drift_end_to_global_effective=3.6 - e)]
    c = pubswap_claims(rows).set_index("claim")
    pick = lambda start: c[c.index.str.startswith(start)].iloc[0]  # noqa: E731
    assert pick("public steps limit drift")["holds"] == "yes"
    bal = pick("Balanced's public steps align the clients' updates")
    assert bal["holds"] == "yes" and bal["diff"] < -0.1
    prox = pick("FedProx aligns the clients' updates")
    assert prox["holds"].startswith("within noise") and abs(prox["diff"]) < 0.01
    assert pick("the swap aligns the clients' updates")["holds"] == "yes"  # 4.0/3.3 = 1.21 against 4.5/3.6 = 1.25
    less = [dict(r, drift_end_to_global_effective=4.0) if r["method"] == "pubswap_noswap" else r for r in rows]
    c2 = pubswap_claims(less).set_index("claim")  # the control now at 4.5/4.0 = 1.125: the swap de-aligns
    assert c2[c2.index.str.startswith("the swap aligns the clients' updates")].iloc[0]["holds"] == "no"
    assert not pubswap_claims([{k: v for k, v in r.items() if k != "drift_end_to_global_effective"} for r in rows]
                              ).claim.str.contains("normalised").any()  # rows without the global distance
    levels = drift_levels(rows).set_index(["method", "tau"])
    assert levels.loc[("fedavg_grpo", 8), "seeds"] == 3
    assert levels.loc[("fedavg_grpo", 8), "normalised"] == pytest.approx(5.01 / 3.55)
    assert levels.loc[("pubswap_noswap", 8), "drift ±95% t"] == 0.0


def test_claims_on_both_checkpoints_and_their_markdown_carry_the_detectable_effect():
    from experiments.stats import detectable_effect
    from experiments.sweep import pubswap_claims, pubswap_claims_both, pubswap_claims_markdown

    rows = []
    for seed in range(3):
        rows += [_row("table1", "fedavg_grpo", 8, seed, 0.30, best=0.35),
                 _row("table1", "pubswap_balanced", 8, seed, 0.30 + 0.01 * seed, best=0.35 + 0.02 * seed)]
    final = pubswap_claims(rows).set_index("claim").loc[BAL8]
    both = pubswap_claims_both(rows).set_index("claim").loc[BAL8]
    assert both["final detectable"] == final["detectable"] == pytest.approx(
        detectable_effect(final["±95% t"], 3), abs=0.01)
    assert both["best detectable"] == pytest.approx(2 * both["final detectable"], abs=0.02)  # twice the spread
    md = pubswap_claims_markdown(rows).splitlines()
    assert "final: detectable" in md[0] and "best: detectable" in md[0]
    line = next(x for x in md if x.startswith(f"| {BAL8} |"))
    assert f"| {final['detectable']:.2f} |" in line and f"| {both['best detectable']:.2f} |" in line


def test_larger_tau_grid_has_table4_and_table5_where_every_swap_period_lies_below_tau():
    """Tables 4 and 5/6 at τ = 32 and 48 of the 96-step budget: τ_swap ∈ {4, 8} beside Table 1's τ_swap = 2, all below
    τ (at the quick scale's τ = 8, τ_swap = 8 was not a test of the paper)."""
    grid = pubswap_grid("quick", seeds=(0, 1, 2), tables=("table4", "table5"), scale="quick_large_tau")
    names = [parse_name(n) | {"name": n} for n in grid]
    assert {c.local_steps * c.rounds for c in grid.values()} == {96}
    t4 = [n for n in names if n["table"] == "table4"]
    assert {(n["method"], n["tau"]) for n in t4} == {(m, t) for m in ("fedavg_grpo", "pubswap_balanced") for t in (32, 48)}
    assert all(grid[n["name"]].dirichlet_alpha == 0.1 and grid[n["name"]].equal_size for n in t4)
    t5 = {(grid[n["name"]].pubswap.period, n["tau"]) for n in names if n["table"] == "table5"}
    assert t5 == {(p, t) for p in (4, 8) for t in (32, 48)} and all(p < t for p, t in t5)
    assert len(grid) == 3 * (4 + 4)  # 24 runs: what docs/pubswap.md's estimate counts
