"""Appendix A.2's off-policy distortion of a Balanced public step (fedrl_kit.pubswap.public_step.off_policy_terms),
checked against the public step the client really takes."""

from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.pubswap.distortion import _group_gradient
from fedrl_kit.pubswap.public_step import generate_public, off_policy_terms, swap_public
from fedrl_kit.pubswap.method import TRACED
from fedrl_kit.runs import Run

BASE = str(Path(__file__).resolve().parents[1] / "data" / "base")  # mixed rewards: Balanced has swaps to make


class _FirstGrad:
    """A stand-in drift probe that keeps each client's first gradient of a step."""

    def __init__(self):
        self.grads = {}

    def grad_catcher(self, cid):
        return lambda params: self.grads.__setitem__(cid, np.concatenate(
            [p.grad.detach().double().numpy().ravel() for p in params]))

    def step_done(self, *args, **kwargs):
        pass


@pytest.fixture(scope="module")
def step():
    """A Balanced round up to its public step; the clients' answers and both the swap and the terms of each."""
    cfg = small_config(BASE, method="pubswap_balanced", rounds=1, local_steps=2, pubswap={"period": 2},
                       num_generations=4, prompts_per_step=3, max_new_tokens=16, loss_type="grpo")
    run = Run(cfg, progress=False).build()
    server = run.server
    server.runtime.broadcast("fit_begin", 1, {"adapter": server.global_state})
    server.runtime.broadcast("private_step", 1, {"step": 0})
    gen = generate_public(server, round=1, step=1)
    results = swap_public(gen, "balanced")
    terms = [off_policy_terms(run.clients[cid], gen, results, n) for n, cid in enumerate(gen.client_ids)]
    return run, gen, results, terms


def test_the_terms_count_balanceds_replacements_and_keep_the_appendixs_bound(step):
    run, gen, results, terms = step
    assert sum(t["M"].sum() for t in terms) > 0  # the base model's mixed rewards make Balanced swap
    for n, t in enumerate(terms):
        assert list(t["M"]) == [int(r.num_replaced[n]) for r in results]
        assert t["alpha"] == pytest.approx(t["M"] / gen.num_generations)
        assert t["omega"] <= t["bound"] * (1 + 1e-9) + 1e-15  # ω_n ≤ (1/b) Σ_x M_n(x) β_n(x)
        assert ((t["beta"] > 0) == (t["M"] > 0)).all()  # a replacement moves the gradient; none moves nothing
        assert (t["omega"] > 0) == (t["M"].sum() > 0)
        assert t["on_policy"] > 0


def test_the_swapped_groups_gradient_is_the_public_steps_own_first_gradient(step):
    """(1/b) Σ_x G(x, Y^(M)) = ĝ_n + e_n is what the client's real public step computes first (loss_type "grpo":
    the batch's loss is the mean of the b groups' losses)."""
    run, gen, results, terms = step
    probe = _FirstGrad()
    K, b = gen.num_generations, len(results)
    for n, cid in enumerate(gen.client_ids):
        client = run.clients[cid]
        # G(x, Y^(0)) and G(x, Y^(M)) from the terms' own helper, averaged over prompts
        own = [list(t) for t in gen.generated[n]["texts"]]
        final = [list(r.texts[n]) for r in results]
        index = [[int(k) if int(j) == n else -1 for j, k in r.source[n]] for r in results]
        balanced = sum(_group_gradient(client, gen.batch, final, index, x) for x in range(b)) / b
        on_policy = sum(_group_gradient(client, gen.batch, own, [list(range(K))] * b, x) for x in range(b)) / b
        assert np.linalg.norm(balanced - on_policy) == pytest.approx(terms[n]["omega"], rel=1e-9)
        assert np.linalg.norm(on_policy) == pytest.approx(terms[n]["on_policy"], rel=1e-9)
        client.probe = probe
        client.on_public_step(1, {"texts": final, "own_index": index, "batch": gen.batch, "step": 1})
        client.probe = None
        real = probe.grads[cid]
        assert np.abs(real - balanced).max() <= 1e-4 * np.abs(real).max(), cid  # other passes' float sums


def test_only_balanced_results_at_the_runs_k_are_measured(step):
    run, gen, results, terms = step
    client = run.clients[gen.client_ids[0]]
    with pytest.raises(ValueError, match="Balanced"):
        off_policy_terms(client, gen, swap_public(gen, "random"), 0)
    with pytest.raises(ValueError, match="K = "):
        off_policy_terms(client, gen, swap_public(gen, "balanced", K=2), 0)


def _traced_config(**kw):
    return small_config(BASE, method="pubswap_balanced", local_steps=2, pubswap={"period": 2, **kw},
                        num_generations=4, prompts_per_step=3, max_new_tokens=16, loss_type="grpo")


def test_a_runs_traced_public_step_measures_what_off_policy_terms_measures_on_it():
    from fedrl_kit.pubswap.method import swap_groups
    from fedrl_kit.pubswap.swap import SWAP_RULES
    from fedrl_kit import seeding

    run = Run(_traced_config(trace_off_policy=True).replace(rounds=1), progress=False).build()
    server = run.server
    server.runtime.broadcast("fit_begin", 1, {"adapter": server.global_state})
    server.runtime.broadcast("private_step", 1, {"step": 0})
    gen = generate_public(server, round=1, step=1)
    terms = [off_policy_terms(run.clients[cid], gen, swap_public(gen, "balanced"), n)
             for n, cid in enumerate(gen.client_ids)]
    groups = swap_groups(SWAP_RULES["balanced"], gen.generated, gen.num_generations,
                         seeding.rng("pubswap/swap", gen.seed, 1, gen.period))  # what run_round sends
    server.runtime.broadcast("public_step", 1, {cid: {"step": 1, "batch": gen.batch, **g}
                                                for cid, g in zip(gen.client_ids, groups)})
    assert sum(t["M"].sum() for t in terms) > 0
    for cid, t in zip(gen.client_ids, terms):
        traced = run.clients[cid]._public[-1]
        assert traced["omega@1"] == t["omega"] and traced["omega_bound@1"] == t["bound"]
        assert traced["beta_max@1"] == t["beta"].max() and traced["public_grad@1"] == t["on_policy"]
        assert traced["alpha@1"] == pytest.approx(t["alpha"].mean())


def test_tracing_changes_nothing_a_run_trains_and_records_each_public_step():
    plain = Run(_traced_config(), progress=False).run()
    traced = Run(_traced_config(trace_off_policy=True), progress=False).run()
    assert len(plain) == len(traced)
    steps = set()
    for a, b in zip(plain, traced):
        extra = {k: v for k, v in b.items() if k.split("@")[0] in TRACED}
        skip = {"seconds", "up"}  # the traced terms travel in the fit_end reply's metrics: more bytes up
        assert {k: v for k, v in a.items() if k not in skip} == \
            {k: v for k, v in b.items() if k not in extra and k not in skip}
        assert a.get("up", 0) <= b.get("up", 0)
        if a["kind"] == "client":
            steps |= {k.split("@")[1] for k in extra}
            for s in {k.split("@")[1] for k in extra}:
                assert extra[f"omega@{s}"] <= extra[f"omega_bound@{s}"] * (1 + 1e-9) + 1e-15
                assert (extra[f"omega@{s}"] > 0) == (extra[f"alpha@{s}"] > 0)
    assert steps == {"1"}  # local_steps = 2, τ_swap = 2: the round's one public step, every round


@pytest.mark.parametrize("method", ["pubswap_random", "pubswap_noswap"])
def test_tracing_is_refused_for_a_swap_other_than_balanced(method):
    with pytest.raises(ValueError, match="trace_off_policy"):
        small_config(BASE, method=method, local_steps=2, pubswap={"period": 2, "trace_off_policy": True})


@pytest.fixture(scope="module")
def off_policy_bench():
    from conftest import import_benchmark

    yield from import_benchmark("pubswap_off_policy")


def test_the_off_policy_script_traces_a_larger_tau_scale_beside_the_quick_rows(off_policy_bench, tmp_path,
                                                                                monkeypatch):
    """``--scale quick_large_tau --taus 32`` traces that grid's Balanced run (96 local steps: 3 rounds of 32), keeps
    the file's quick rows (written before scales, so without one) and keys its summary ``"32 (quick_large_tau)"``;
    a τ outside the scale's grid is refused before anything runs."""
    import json

    import fedrl_kit.runs

    ran = []

    class FakeRun:  # records the config it was given; one public step of one client, every term present
        def __init__(self, cfg, progress=False):
            ran.append(cfg)

        def run(self):
            step = {f"{name}@3": 0.5 for name in TRACED}
            return [{"kind": "client", "round": 1, "client": "client_0", **step},
                    {"kind": "global", "round": 3, "pass@1": 0.25}]

    monkeypatch.setattr(fedrl_kit.runs, "Run", FakeRun)
    out = tmp_path / "off.json"
    old = {"tau": 8, "seed": 0, "summary": {"share_with_replacement": 1.0, "alpha_mean_when_swapped": 0.5,
                                            "omega_over_grad_mean": 1.0, "omega_over_bound_mean": 1.0,
                                            "corr_alpha_omega_over_grad": None}}
    out.write_text(json.dumps({"commands": ["the quick one"], "runs": [old]}))
    assert off_policy_bench.main(["--scale", "quick_large_tau", "--taus", "32", "--seeds", "0",
                                  "--out", str(out)]) == 0
    assert [(c.local_steps, c.rounds, c.method) for c in ran] == [(32, 3, "pubswap_balanced")]
    stored = json.loads(out.read_text())
    assert list(stored["summary"]) == ["8", "32 (quick_large_tau)"]
    assert [(r["scale"], r["tau"]) for r in stored["runs"]] == [("quick", 8), ("quick_large_tau", 32)]
    assert stored["commands"][0] == "the quick one" and "--scale quick_large_tau" in stored["commands"][1]
    with pytest.raises(SystemExit):
        off_policy_bench.main(["--scale", "quick_large_tau", "--taus", "5", "--out", str(out)])
    assert len(ran) == 1
