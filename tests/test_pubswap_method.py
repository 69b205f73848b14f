"""FedAvg-PubSwap wired into the engine: config, message protocol, step schedule, determinism, failures."""

from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.federation.runtime import InProcessRuntime
from fedrl_kit.runs import Run

BASE = str(Path(__file__).resolve().parents[1] / "data" / "base")


def _plain(obj) -> bool:
    """Only strings, scalars and lists/dicts of them (no arrays)."""
    if isinstance(obj, (str, bool, int, float)):
        return True
    if isinstance(obj, (list, tuple)):
        return all(_plain(v) for v in obj)
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in obj.items())
    return False


@pytest.mark.parametrize("method", ["pubswap_random", "pubswap_balanced"])
def test_pubswap_period_is_validated(tiny_dir, method):
    for bad in (1, 5):
        with pytest.raises(ValueError, match="pubswap.period"):
            small_config(tiny_dir, method=method, local_steps=4, pubswap={"period": bad})
    assert small_config(tiny_dir, method=method, local_steps=4, pubswap={"period": 4}).pubswap.period == 4
    small_config(tiny_dir, method="fedavg_grpo", local_steps=1)  # other methods ignore τ_swap's upper bound


@pytest.mark.parametrize("method", ["pubswap_random", "pubswap_balanced"])
def test_one_round_runs_with_plain_public_messages(method):
    # the committed base has mixed rewards, so Balanced actually swaps and advantages are not all zero
    cfg = small_config(BASE, method=method, rounds=1, local_steps=2, pubswap={"period": 2}, num_generations=4,
                       prompts_per_step=2, max_new_tokens=16)
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    start = {k: v.copy() for k, v in run.server.global_state.items()}
    recs = run.run()
    clients = [r for r in recs if r["kind"] == "client"]
    assert {r["client"] for r in clients} == {"client_0", "client_1", "client_2"}
    for r in clients:
        assert 0.0 <= r["replacement_fraction"] <= 1.0
        assert {"accuracy", "public_reward_mean", "public_reward_std", "public_frac_zero_std"} <= set(r)
    if method == "pubswap_balanced":
        assert all(r["replacement_fraction"] <= 0.5 for r in clients)
    ups = [m for m in run.runtime.messages if m.kind == "public_generate_result"]
    assert len(ups) == 3 and all(_plain(m.payload) for m in ups)
    assert all(len(m.payload["texts"]) == 2 and all(len(g) == 4 for g in m.payload["texts"]) for m in ups)
    kinds = {(r["kind"], r["direction"]) for r in run.runtime.ledger.records}
    assert {("fit_begin", "down"), ("fit_end_result", "up"), ("public_step", "down")} <= kinds
    adapter_bytes = sum(v.nbytes for v in start.values())
    by = run.runtime.ledger.bytes_by_kind()
    assert by[("fit_begin", "down")] >= 3 * adapter_bytes and by[("fit_end_result", "up")] >= 3 * adapter_bytes
    assert any(not np.array_equal(start[k], run.server.global_state[k]) for k in start)


def test_step_schedule_private_public_private_public(tiny_dir):
    run = Run(small_config(tiny_dir, method="pubswap_balanced", rounds=1, local_steps=4, pubswap={"period": 2}),
              progress=False).build()
    assert isinstance(run.runtime, InProcessRuntime)
    run.run()
    down = [r["kind"] for r in run.runtime.ledger.records if r["receiver"] == "client_1" and r["round"] >= 1]
    assert down == ["fit_begin", "private_step", "public_generate", "public_step",
                    "private_step", "public_generate", "public_step", "fit_end"]


def test_same_config_same_global_adapter(tiny_dir):
    cfg = small_config(tiny_dir, method="pubswap_random", rounds=1, local_steps=2)
    a, b = Run(cfg, progress=False), Run(cfg, progress=False)
    a.run(), b.run()
    for k in a.server.global_state:
        assert np.array_equal(a.server.global_state[k], b.server.global_state[k])


def test_a_failing_client_is_dropped_and_the_round_completes(tiny_dir):
    run = Run(small_config(tiny_dir, method="pubswap_balanced", rounds=1, local_steps=2, fail_client="client_1@1"),
              progress=False)
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert len(failures) == 1 and failures[0]["client"] == "client_1" and failures[0]["message"] == "fit_begin"
    assert {r["client"] for r in recs if r["kind"] == "client"} == {"client_0", "client_2"}
    assert not [r for r in run.runtime.ledger.records
                if r["receiver"] == "client_1" and r["round"] >= 1 and r["kind"] != "fit_begin"]
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1]


class _FailsOnPublicStep:
    def __init__(self, inner):
        self.inner = inner

    def handle(self, message):
        if message.kind == "public_step":
            raise RuntimeError("lost during the public step")
        return self.inner.handle(message)


def test_a_client_failing_mid_round_is_dropped_for_the_rest_of_it(tiny_dir):
    run = Run(small_config(tiny_dir, method="pubswap_random", rounds=1, local_steps=4, pubswap={"period": 2}),
              progress=False).build()
    run.runtime._clients["client_0"] = _FailsOnPublicStep(run.clients["client_0"])
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert [(f["client"], f["message"]) for f in failures] == [("client_0", "public_step")]
    assert {r["client"] for r in recs if r["kind"] == "client"} == {"client_1", "client_2"}
    down = [r["kind"] for r in run.runtime.ledger.records if r["receiver"] == "client_0" and r["round"] >= 1]
    assert down == ["fit_begin", "private_step", "public_generate", "public_step"]


# -- the paper's setting: FedIT (eq. 4) and AdamW with weight decay 0.01 (Tables 9–12) --------------------------------
@pytest.mark.parametrize("name", ["quick", "full"])
def test_pubswap_methods_default_to_the_papers_aggregation_and_optimiser(name):
    from fedrl_kit.config import preset

    for method in ("pubswap_random", "pubswap_balanced"):
        cfg = preset(name, method=method)
        assert (cfg.aggregator, cfg.weight_decay) == ("fedit", 0.01)
        # FedAvg by examples and plain Adam stay explicit options
        other = preset(name, method=method, aggregator="fedavg", weight_decay=0.0)
        assert (other.aggregator, other.weight_decay) == ("fedavg", 0.0)
    # other methods keep their defaults (their stored numbers do not move)
    for method in ("fedavg_grpo", "fedprox_grpo", "fedgrpo", "fedmoa"):
        assert preset("quick", method=method).weight_decay == 0.0
    assert preset("quick", method="fedavg_grpo").aggregator == "fedavg"


def test_weight_decay_reaches_the_clients_optimiser(tiny_dir):
    import torch

    run = Run(small_config(tiny_dir, method="pubswap_balanced", local_steps=2), progress=False).build()
    client = run.clients["client_0"]
    run.policy.set_state("client_0", run.server.global_state)
    opt = client._optimizer(run.policy.trainable("client_0"))
    assert type(opt) is torch.optim.AdamW and opt.param_groups[0]["weight_decay"] == 0.01
    run = Run(small_config(tiny_dir, method="fedavg_grpo"), progress=False).build()
    run.policy.set_state("client_0", run.server.global_state)
    opt = run.clients["client_0"]._optimizer(run.policy.trainable("client_0"))
    assert type(opt) is torch.optim.Adam and opt.param_groups[0]["weight_decay"] == 0  # unchanged elsewhere
    with pytest.raises(ValueError, match="weight_decay"):
        small_config(tiny_dir, weight_decay=-0.1)


@pytest.mark.parametrize("aggregator", ["fedit", "fedavg"])
def test_pubswap_aggregates_with_the_configured_aggregator(tiny_dir, monkeypatch, aggregator):
    import fedrl_kit.pubswap.method as pm

    seen = []
    real = pm.aggregate
    monkeypatch.setattr(pm, "aggregate", lambda states, how, n: seen.append((how, list(n))) or real(states, how, n))
    cfg = small_config(tiny_dir, method="pubswap_balanced", rounds=1, local_steps=2, aggregator=aggregator)
    run = Run(cfg, progress=False)
    run.run()
    sizes = [len(p) for p in run.partitions]
    assert seen == [(aggregator, sizes)] and len(set(sizes)) > 1  # unequal clients: the two rules differ here
    states = [run.clients[c].policy.get_state(c) for c in sorted(run.clients)]
    want = real(states, aggregator, sizes)
    assert all(np.array_equal(run.server.global_state[k], want[k]) for k in want)


def test_the_no_swap_control_takes_balanceds_steps_and_trains_on_its_own_responses(tiny_dir):
    """The control arm: the same private and public steps as Balanced (message for message), every public group
    the client's own K responses (α = 0), on BASE where Balanced does swap responses in."""
    from fedrl_kit.pubswap.swap import ResponsePool, no_swap

    pool = ResponsePool([["a", "b"], ["c", "d"]], [[True, False], [False, False]])
    res = no_swap(pool, 2, np.random.default_rng(0))
    assert res.rule == "none" and res.texts == [["a", "b"], ["c", "d"]] and not res.replaced.any()
    assert (res.replacement_fraction == 0).all()
    with pytest.raises(ValueError, match="no_swap"):
        no_swap(pool, 3, np.random.default_rng(0))

    kinds, alphas = {}, {}
    for method in ("pubswap_balanced", "pubswap_noswap"):
        run = Run(small_config(BASE, method=method, rounds=2, local_steps=4, pubswap={"period": 2}, num_generations=4,
                               n_public=16), progress=False)
        recs = run.run()
        kinds[method] = [(r["kind"], r["receiver"], r["round"]) for r in run.runtime.ledger.records]
        alphas[method] = [r["replacement_fraction"] for r in recs
                          if r["kind"] == "client" and "replacement_fraction" in r]
    assert kinds["pubswap_noswap"] == kinds["pubswap_balanced"]
    assert alphas["pubswap_noswap"] and all(a == 0.0 for a in alphas["pubswap_noswap"])
    assert any(a > 0 for a in alphas["pubswap_balanced"])  # on this base Balanced swaps: the control is a contrast


def test_a_paper_preset_refuses_a_swap_period_not_below_tau():
    from fedrl_kit.config import preset

    cfg = preset("pubswap-qwen3-1.7b-math", method="pubswap_balanced", local_steps=8, pubswap={"period": 4})
    assert cfg.pubswap.period == 4
    with pytest.raises(ValueError, match=r"period must be below local_steps = 8 under the paper preset"):
        preset("pubswap-qwen3-1.7b-math", method="pubswap_balanced", local_steps=8, pubswap={"period": 8})
    assert preset("quick", method="pubswap_balanced", local_steps=8, pubswap={"period": 8}).pubswap.period == 8


def test_public_steps_follow_the_learning_rate_schedule_like_private_ones(tiny_dir, monkeypatch):
    """A cosine schedule sets each local step's rate by (round, step); public steps used to keep the rate of the
    private step before them."""
    from fedrl_kit.federation.client import Passes, scheduled_lr

    seen = []
    plain = Passes.grpo_step

    def spy(self, policy, cid, optimizer, *args, **kwargs):
        if cid == "client_0":
            seen.append(optimizer.param_groups[0]["lr"])
        return plain(self, policy, cid, optimizer, *args, **kwargs)

    monkeypatch.setattr(Passes, "grpo_step", spy)
    run = Run(small_config(tiny_dir, method="pubswap_balanced", rounds=2, local_steps=4, pubswap={"period": 2},
                           lr_schedule="cosine"), progress=False)
    run.run()
    want = [scheduled_lr(run.local, r, s) for r in (1, 2) for s in range(4)]
    assert seen == pytest.approx(want) and len(set(seen)) == 8
