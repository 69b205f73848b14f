"""No reply moves the global adapter further than the clients' own Adam(W) can in a round (UpdateBound).

The bound is a theorem about Adam (Cauchy–Schwarz on its moment estimates), so the tests check it three ways:
against torch's optimisers driven by adversarial gradients (never exceeded, and nearly reached by the
gradients that make Cauchy–Schwarz an equality); in honest runs of every adapter-sending method at a high
learning rate (no honest client dropped); and in the cascade it exists to stop (one client sending values just
under ADAPTER_MAX_ABS used to make every honest adapter NaN the next round).
"""

import math

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.federation.replies import (ADAPTER_MAX_ABS, BadReply, Context, UpdateBound, adam_step_bound,
                                          adapter)
from fedrl_kit.federation.runtime import Message
from fedrl_kit.runs import Run


def _adam_steps(grads, lr=1e-2, weight_decay=0.0, start=0.0):
    """Each step's |Δθ| / lr of a one-parameter Adam(W) fed ``grads``, and the parameter's path."""
    p = torch.nn.Parameter(torch.tensor([start], dtype=torch.float64))
    opt = torch.optim.AdamW([p], lr=lr, weight_decay=weight_decay) if weight_decay else torch.optim.Adam([p], lr=lr)
    path = [p.item()]
    for g in grads:
        p.grad = torch.tensor([float(g)], dtype=torch.float64)
        opt.step()
        path.append(p.item())
    return np.abs(np.diff(path)) / lr, np.array(path)


def _tight(t, betas=(0.9, 0.999)):
    """Gradients g_s ∝ (β₁/β₂)^(t−s): Cauchy–Schwarz's equality case, so Adam's t-th step reaches the bound."""
    b1, b2 = betas
    return [(b1 / b2) ** (t - s) for s in range(1, t + 1)]


def test_adam_step_bound_starts_at_one_and_grows_to_its_limit():
    assert adam_step_bound(1) == pytest.approx(1.0)
    values = [adam_step_bound(t) for t in (1, 2, 10, 100, 1000, 10**6)]
    assert values == sorted(values)
    b1, b2 = 0.9, 0.999
    assert adam_step_bound(10**9) == pytest.approx((1 - b1) / math.sqrt((1 - b2) * (1 - b1 * b1 / b2)), rel=1e-9)
    with pytest.raises(ValueError, match="β₁² < β₂"):
        adam_step_bound(3, (0.99, 0.9))


@pytest.mark.parametrize("seed", range(6))
def test_no_gradient_sequence_moves_adam_further_than_the_bound(seed):
    rng = np.random.default_rng(seed)
    T = 400
    sequences = [rng.normal(size=T), rng.normal(size=T) * np.logspace(-6, 6, T), np.sign(rng.normal(size=T)),
                 np.r_[np.zeros(50), rng.normal(size=T - 50) * 1e8], np.geomspace(1e-8, 1e8, T)]
    for grads in sequences:
        steps, _ = _adam_steps(grads)
        bounds = np.array([adam_step_bound(t) for t in range(1, T + 1)])
        assert (steps <= bounds * (1 + 1e-9)).all()


@pytest.mark.parametrize("t", [2, 10, 60, 300])
def test_the_bound_is_reached_by_cauchy_schwarz_equality_gradients(t):
    steps, _ = _adam_steps(_tight(t))
    assert steps[-1] == pytest.approx(adam_step_bound(t), rel=1e-3)  # ε = 1e-8 keeps it a hair below


@pytest.mark.parametrize("fresh", [True, False])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01, 0.5])
def test_update_bound_holds_for_a_rounds_adamw_steps_whatever_the_gradients(fresh, weight_decay):
    rng = np.random.default_rng(1)
    lr, steps = 0.05, 6
    bound = UpdateBound(lr, steps, weight_decay, fresh)
    for trial in range(30):
        start = float(rng.normal() * 3)
        history = [] if fresh else list(rng.normal(size=int(rng.integers(1, 300))) * 10.0 ** rng.integers(-4, 4))
        grads = history + list(_tight(steps) if trial % 3 == 0 else rng.normal(size=steps) * 10.0 ** rng.integers(-4, 4))
        # a carried-over optimiser has already taken len(history) steps: the round is the last `steps` of them
        _, path = _adam_steps(grads, lr, weight_decay, start)
        moved = abs(path[-1] - path[-1 - steps])
        assert moved <= bound.limit(max(abs(path[-1 - steps]), 0.0))


def _fit(adapter_value, sent_value=0.5):
    sent = {"x.lora_A.weight": np.full((2, 3), sent_value, np.float32)}
    reply = {"x.lora_A.weight": np.full((2, 3), adapter_value, np.float32)}
    return reply, sent


def test_the_adapter_check_measures_the_update_from_the_adapter_sent_or_the_rounds_broadcast():
    check = adapter()
    bound = UpdateBound(learning_rate=1e-3, steps=2)
    limit = bound.limit(0.5)
    ok, sent = _fit(0.5 + 0.9 * limit)
    far, _ = _fit(0.5 + 2 * limit)
    check(ok, Context({"adapter": sent}, {"update_bound": bound}), "adapter")
    with pytest.raises(BadReply, match=r"moved .* from the adapter it was sent; 2 Adam step\(s\) at lr 0.001"):
        check(far, Context({"adapter": sent}, {"update_bound": bound}), "adapter")
    # PubSwap's fit_end carries no adapter: the round's broadcast is the reference
    with pytest.raises(BadReply, match="UpdateBound"):
        check(far, Context({}, {"update_bound": bound, "broadcast": sent}), "adapter")
    check(far, Context({}, {"broadcast": sent}), "adapter")  # no bound given: only format and |value| checks


def test_one_client_sending_values_just_under_the_cap_no_longer_poisons_the_next_round(tiny_dir, monkeypatch):
    """The cascade: client_1 answers round 1 with every value at 0.9 · ADAPTER_MAX_ABS, which passes the |value| cap.
    Without the update bound FedAvg averages it in (the global adapter then holds values above 2,000 for the rest
    of the run). With it, client_1 is dropped as bad_reply in round 1 and round 2 is an ordinary round."""
    from fedrl_kit.federation.client import MessageClient

    honest = MessageClient.handle

    def handle(self, message):
        reply = honest(self, message)
        if self.cid == "client_1" and message.kind == "fit" and message.round == 1:
            evil = {k: np.full_like(v, 0.9 * ADAPTER_MAX_ABS) for k, v in reply.payload["adapter"].items()}
            reply = Message(reply.kind, reply.sender, reply.receiver, reply.round, {**reply.payload, "adapter": evil})
        return reply

    monkeypatch.setattr(MessageClient, "handle", handle)
    for runtime in ("inprocess", "serialising"):
        run = Run(small_config(tiny_dir, num_clients=3, rounds=2), progress=False, runtime=runtime)
        recs = run.run()
        failures = [(r["round"], r["client"], r["reason"]) for r in recs if r["kind"] == "failure"]
        assert failures == [(1, "client_1", "bad_reply")], runtime
        assert "UpdateBound" in next(r["error"] for r in recs if r["kind"] == "failure")
        assert {(r["round"], r["client"]) for r in recs if r["kind"] == "client"} == \
            {(1, "client_0"), (1, "client_2"), (2, "client_0"), (2, "client_1"), (2, "client_2")}, runtime
        assert all(np.abs(v).max() < 1.0 for v in run.server.global_state.values())
        assert all(math.isfinite(r["pass@1"]) for r in recs if r["kind"] == "global")


@pytest.mark.parametrize("method", ["fedavg_grpo", "fedprox_grpo", "pubswap_balanced", "fedmoa", "fedpetuning_sft"])
def test_honest_clients_at_a_high_learning_rate_never_reach_the_bound(tiny_dir, method):
    """lr 0.1 (50× the default), μ = 2 gradient epochs, weight decay, a carried-over optimiser: the honest
    updates stay inside the bound (no failure), and come within a factor of it (the bound is not vacuous)."""
    from test_boundary import SETTINGS

    extra = {"fedprox_grpo": {"fedprox": {"mu": 0.1}}}.get(method, {})
    cfg = small_config(tiny_dir, method=method, rounds=2, learning_rate=0.1, num_iterations=2, weight_decay=0.01,
                       reset_optimizer=False, **{**SETTINGS.get(method, {}), **extra})
    run = Run(cfg, progress=False).build()
    moved = []  # per accepted adapter reply: max over tensors of |θ − θ_sent| / the bound's limit
    original = run.runtime._accept

    def accept(message, reply):
        if "adapter" in reply.payload:
            sent = message.payload.get("adapter") or run.runtime.expect["broadcast"]
            limit = run.runtime.expect["update_bound"].limit
            moved.append(max(float(np.abs(reply.payload["adapter"][k].astype(np.float64) - sent[k]).max())
                             / limit(float(np.abs(sent[k]).max())) for k in sent))
        return original(message, reply)

    run.runtime._accept = accept
    recs = run.run()
    assert not [r for r in recs if r["kind"] == "failure"], method
    assert moved and max(moved) < 1.0
    assert max(moved) > 1e-3, (method, max(moved))  # the clients did move: the check compared real updates


def _honest_and_liars(K, k, limit, seed=0):
    """K adapters moved from a zero broadcast: K − k honest ones inside ±limit/2, k liars at +limit (the bound's
    edge, the furthest a reply may go)."""
    rng = np.random.default_rng(seed)
    honest = [{"w": rng.uniform(-limit / 2, limit / 2, size=(4, 3)).astype(np.float32)} for _ in range(K - k)]
    liars = [{"w": np.full((4, 3), limit, np.float32)} for _ in range(k)]
    return honest, liars


def test_what_each_aggregator_survives_within_the_update_bound():
    """The table of docs/reliability.md ("What each aggregator survives"), checked: within the bound, FedAvg by the
    sizes the server knows and FedIT move by the liars' share of the bound, and the median and the trimmed mean stay
    inside the honest clients' range while the liars are fewer than their breakdown point."""
    from fedrl_kit.aggregate import coordinate_median, fedavg, fedit, trimmed_mean

    L = 0.01
    honest, liars = _honest_and_liars(5, 1, L)
    # fedavg weighs by the sizes it is given: given a client's claim of 10^9, that client decides alone (why a run
    # gives it the sizes the server knows, and drops a reply claiming another: tests/test_claimed_sizes.py)
    out = fedavg(honest + liars, [50] * 4 + [10**9])
    assert np.allclose(out["w"], liars[0]["w"], atol=1e-6 * L)
    for K, k in ((5, 1), (5, 2), (10, 3)):
        honest, liars = _honest_and_liars(K, k, L, seed=K + k)
        lo = np.min([h["w"] for h in honest], axis=0)
        hi = np.max([h["w"] for h in honest], axis=0)
        # FedAvg by known sizes n: k liars move each value by at most (their n / N) · 2L from the honest-only mean
        n = np.random.default_rng(K).integers(10, 300, size=K)
        clean = fedavg(honest + [honest[0]] * k, n)["w"]
        assert np.abs(fedavg(honest + liars, n)["w"] - clean).max() <= n[K - k:].sum() / n.sum() * 2 * L + 1e-7
        # FedIT: each client weighs 1/K, so k liars move each value by at most k/K · 2L from the honest-only mean
        clean = fedit(honest + [honest[0]] * k)["w"]
        assert np.abs(fedit(honest + liars)["w"] - clean).max() <= k / K * 2 * L + 1e-7
        # median: k < K/2 liars leave every value inside the honest range
        med = coordinate_median(honest + liars)["w"]
        assert ((med >= lo - 1e-7) & (med <= hi + 1e-7)).all()
        # trimmed mean (trim 0.2): inside the honest range while k ≤ ⌊0.2·K⌋
        tm = trimmed_mean(honest + liars)["w"]
        if k <= int(0.2 * K):
            assert ((tm >= lo - 1e-7) & (tm <= hi + 1e-7)).all(), (K, k)
        else:  # past the breakdown point the liars pull it outside the honest range
            assert (tm > hi + 1e-7).any(), (K, k)
    # K = 4: ⌊0.2·4⌋ = 0, the trimmed mean trims nothing and is FedIT
    honest, liars = _honest_and_liars(4, 1, L)
    assert np.allclose(trimmed_mean(honest + liars)["w"], fedit(honest + liars)["w"])
