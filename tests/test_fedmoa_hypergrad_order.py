"""FedMOA's g_k (eq. 8) under a reordered batch, and the LoRA form of it (``fedmoa.hyper_grad="lora"``).

Eq. 9 multiplies g_k of step t with g_k of step t−1. A g_k that depends on the order of the batch's rows makes Δ_k
depend on it too: the per-sequence g_k does (row i of one batch meets row i of the next, different prompts); the
shared and the LoRA g_k are sums over rows and do not. The LoRA g_k is also checked against a gradient computed
without the helper, across micro-batches, and for leaving the adapter, its ``.grad`` and Adam's state untouched.
"""

import copy
import math

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.fedmoa.args import FedMOAArgs
from fedrl_kit.fedmoa.client import hooked_lora_parameters, objective_gradients
from fedrl_kit.fedmoa.weights import per_objective_advantages
from fedrl_kit.grpo import GRPOSettings, grpo_loss
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rollout import per_token_logps
from fedrl_kit.runs import Run

LAYER = 1  # the tiny model's second (of two) decoder layers
G = 4


@pytest.fixture(scope="module")
def policy(tiny_dir):
    """The tiny policy with a non-zero global adapter (LoRA's B starts at 0, which would zero ∂L/∂A)."""
    pol = Policy.load(tiny_dir, lora_rank=2, lora_alpha=4.0, max_new_tokens=8)
    gen = torch.Generator().manual_seed(0)
    state = {k: 0.3 * torch.randn(v.shape, generator=gen).numpy() for k, v in pol.get_state("global").items()}
    pol.set_state("global", state)
    pol.trainable("global")
    return pol


@pytest.fixture(scope="module")
def batches(policy):
    """Two consecutive steps' batches (3 prompts × G = 4 each) and their [N, K = 3] reward components."""
    rng = np.random.default_rng(0)
    out = []
    for step, prompts in enumerate((["1+2=", "max(3,4)=", "7-5="], ["12+7=", "count a in abca=", "min(9,2)="])):
        rollouts = policy.rollout("global", prompts, G, seed=step)
        scores = np.stack([rng.integers(0, 2, 12), rng.random(12), rng.random(12)], axis=1).astype(float)
        out.append((rollouts, scores))
    return out


def permuted(rollouts, scores, seed):
    """The same batch with its prompt groups in another order and the rows within each group shuffled."""
    rng = np.random.default_rng(seed)
    B = len(rollouts) // G
    groups = rng.permutation(B)
    rows = [int(g) * G + int(j) for g in groups for j in rng.permutation(G)]
    assert rows != list(range(len(rollouts)))
    return rollouts.select(rows), scores[rows], rows


def gradients(policy, batch, hyper_grad, **settings):
    rollouts, scores = batch
    return objective_gradients(policy.model, rollouts, scores, LAYER, GRPOSettings(**settings), hyper_grad)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6 * np.abs(b).max())


@pytest.mark.parametrize("hyper_grad", ["lora", "shared"])
def test_row_order_leaves_g_and_delta_unchanged(policy, batches, hyper_grad):
    """Permuting step t's prompt groups (and rows within them) changes neither g_k^(t) nor Δ_k = g^(t)·g^(t−1)."""
    prev, now = batches
    g_prev = gradients(policy, prev, hyper_grad)  # [K, d]
    g_now = gradients(policy, now, hyper_grad)  # [K, d]
    ro, sc, _ = permuted(*now, seed=1)
    g_perm = gradients(policy, (ro, sc), hyper_grad)  # [K, d]
    assert np.abs(g_now).max() > 0
    close(g_perm, g_now)
    delta = np.einsum("kd,kd->k", g_now, g_prev)  # [K] eq. 9
    delta_perm = np.einsum("kd,kd->k", g_perm, g_prev)  # [K]
    np.testing.assert_allclose(delta_perm, delta, rtol=1e-4, atol=1e-6 * np.abs(delta).max())


def test_row_order_changes_the_per_sequence_delta(policy, batches):
    """The per-sequence g_k follows its rows, so the same batch in another order gives another Δ_k."""
    prev, now = batches
    g_prev = gradients(policy, prev, "sequence")  # [K, N·H]
    g_now = gradients(policy, now, "sequence")  # [K, N·H]
    ro, sc, rows = permuted(*now, seed=1)
    g_perm = gradients(policy, (ro, sc), "sequence")  # [K, N·H]
    K, N = g_now.shape[0], len(rows)
    close(g_perm.reshape(K, N, -1), g_now.reshape(K, N, -1)[:, rows])  # the same rows, moved
    delta = np.einsum("kd,kd->k", g_now, g_prev)  # [K] eq. 9
    delta_perm = np.einsum("kd,kd->k", g_perm, g_prev)  # [K]
    moved = np.abs(delta_perm - delta) > 1e-2 * np.abs(delta).max()
    assert moved.any(), (delta, delta_perm)


def test_lora_leaves_adapter_grad_and_optimiser_state_untouched(policy, batches):
    params = policy.trainable("global")
    opt = torch.optim.Adam(params, lr=1e-3)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()  # Adam now holds moments and a step count
    for p in params:
        p.grad = torch.randn_like(p)
    hooked = hooked_lora_parameters(policy.model, LAYER)
    hooked[0].requires_grad_(False)  # a flag the helper must restore
    values = [p.detach().clone() for p in params]
    grads = [p.grad.clone() for p in params]
    state = copy.deepcopy(opt.state_dict())
    try:
        g = gradients(policy, batches[0], "lora")
        assert np.abs(g).max() > 0
        assert not hooked[0].requires_grad and all(p.requires_grad for p in hooked[1:])
        for p, v, gr in zip(params, values, grads):
            assert torch.equal(p.detach(), v) and torch.equal(p.grad, gr)
        after = opt.state_dict()
        assert after["param_groups"] == state["param_groups"]
        for i, s in state["state"].items():
            assert s.keys() == after["state"][i].keys()
            assert all(torch.equal(s[n], after["state"][i][n]) for n in s)
    finally:
        hooked[0].requires_grad_(True)
        for p, v in zip(params, values):
            p.grad = None
            with torch.no_grad():
                p.copy_(v)


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
def test_lora_g_is_the_autograd_gradient_of_L_k(policy, batches, loss_type):
    """g_k equals ∂L_k/∂θ of the layer's LoRA factors from a separate forward and backward, without the helper."""
    rollouts, scores = batches[0]
    settings = GRPOSettings(loss_type=loss_type)
    g = gradients(policy, batches[0], "lora", loss_type=loss_type)  # [K, P]
    prefix = f"layers.{LAYER}."
    named = [(n, p) for n, p in policy.model.named_parameters() if prefix in n and "lora_" in n and ".global." in n]
    assert g.shape == (3, sum(p.numel() for _, p in named))
    adv = per_objective_advantages(scores.reshape(-1, G, 3), settings.scale_rewards).reshape(-1, 3)  # [N, K]
    for k in range(3):
        policy.model.zero_grad(set_to_none=True)
        logps = per_token_logps(policy.model, rollouts)  # [N, T]
        loss, _ = grpo_loss(logps, logps.detach(), torch.as_tensor(adv[:, k], dtype=torch.float32),
                            rollouts.completion_mask, settings.epsilon, settings.epsilon_high, loss_type=loss_type)
        loss.backward()
        expected = torch.cat([p.grad.reshape(-1) for _, p in named]).double().numpy()  # [P]
        close(g[k], expected)
        assert np.abs(expected).max() > 0
    policy.model.zero_grad(set_to_none=True)


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
def test_lora_micro_batches_give_the_full_batch_gradient(policy, batches, loss_type):
    full = gradients(policy, batches[1], "lora", loss_type=loss_type)  # [K, P] one pass over N = 12 rows
    small = gradients(policy, batches[1], "lora", loss_type=loss_type, micro_batch_size=5)  # passes of 5, 5, 2
    close(small, full)


def test_lora_is_an_allowed_hyper_grad_and_others_are_refused(policy, batches):
    FedMOAArgs(hyper_grad="lora").check_own()
    with pytest.raises(ValueError, match=r"fedmoa\.hyper_grad"):
        gradients(policy, batches[0], "token")


@pytest.mark.filterwarnings("ignore:fedmoa.setting")
def test_a_lora_run_moves_the_weights_alike_sequentially_and_in_lockstep(tiny_dir):
    """Eq. 8–10 with the LoRA g_k inside a round: the weights move, stay on the simplex, and the lockstep path
    (its adapters batched) gives the sequential path's weights."""
    kw = dict(method="fedmoa", n_train=60, n_test=6, local_steps=2, max_new_tokens=10, rounds=1,
              fedmoa={"eval_local": False, "validate": False, "hyper_grad": "lora"})
    runs = [Run(small_config(tiny_dir, client_batching=b, **kw), progress=False) for b in ("sequential", "lockstep")]
    seq, lock = ([r for r in run.run() if r["kind"] == "client" and r["client"] != "server"] for run in runs)
    assert [r["client"] for r in seq] == [r["client"] for r in lock] and len(seq) == 3
    for rs, rl in zip(seq, lock):
        ws = [v for k, v in rs.items() if k.startswith("w/")]
        assert math.isclose(sum(ws), 1.0, abs_tol=1e-9) and min(ws) >= 0
        assert rl["lam"] == pytest.approx(rs["lam"], rel=1e-6)
        for k in (k for k in rs if k.startswith("w/")):
            assert rl[k] == pytest.approx(rs[k], rel=1e-6, abs=1e-9), k
    assert max(r["w_move"] for r in seq) > 1e-4
