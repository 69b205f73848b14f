"""GRPO core against an independent, loop-by-loop computation of TRL 1.16's documented formulas."""

import math

import pytest
import torch

from fedrl_kit.grpo import GRPOSettings, group_advantages, grpo_loss, grpo_step, zero_variance_fraction

REWARDS = [1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 1.0]  # B = 3 prompts × G = 4


def _std_unbiased(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def reference_advantages(rewards, G, scale):
    """TRL 1.16 GRPOTrainer._generate_and_score_completions, written out with plain Python."""
    out = []
    for b in range(len(rewards) // G):
        grp = rewards[b * G:(b + 1) * G]
        m = sum(grp) / G
        for r in grp:
            if scale == "group":
                out.append((r - m) / (_std_unbiased(grp) + 1e-4))
            elif scale == "batch":
                out.append((r - m) / (_std_unbiased(rewards) + 1e-4))
            else:
                out.append(r - m)
    return out


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_advantages_match_trl_formula(scale):
    ours = group_advantages(torch.tensor(REWARDS), 4, scale)
    assert ours.tolist() == pytest.approx(reference_advantages(REWARDS, 4, scale), abs=1e-6)


def test_zero_variance_groups_get_zero_advantage():
    adv = group_advantages(torch.tensor(REWARDS), 4, "group")
    assert adv[4:8].abs().max().item() == 0.0
    assert zero_variance_fraction(torch.tensor(REWARDS), 4) == pytest.approx(1 / 3)


def reference_loss(logps, old, adv, mask, eps_lo, eps_hi, beta, ref, loss_type):
    """TRL 1.16 GRPOTrainer._compute_loss for loss_type 'dapo' (one accumulation window, one process: the batch's
    completion tokens divide the sum) and 'grpo' (each completion's token mean, then the mean over completions)."""
    per_seq_sum, per_seq_n, tot, n = [], [], 0.0, 0
    for i in range(len(logps)):
        s, c = 0.0, 0
        for t in range(len(logps[i])):
            if not mask[i][t]:
                continue
            ratio = math.exp(logps[i][t] - old[i][t])
            clipped = min(max(ratio, 1 - eps_lo), 1 + eps_hi)
            loss = -min(ratio * adv[i], clipped * adv[i])
            if beta:
                d = ref[i][t] - logps[i][t]
                loss += beta * (math.exp(d) - d - 1)
            s, c = s + loss, c + 1
        per_seq_sum.append(s)
        per_seq_n.append(c)
        tot, n = tot + s, n + c
    if loss_type == "dapo":
        return tot / max(n, 1)
    return sum(s / max(c, 1) for s, c in zip(per_seq_sum, per_seq_n)) / len(logps)


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_loss_matches_trl_formula(loss_type, beta):
    g = torch.Generator().manual_seed(0)
    N, T = 6, 5
    old = -torch.rand(N, T, generator=g) * 3
    logps = old + (torch.rand(N, T, generator=g) - 0.5) * 0.8  # ratios well outside the clip range too
    ref = old + (torch.rand(N, T, generator=g) - 0.5) * 0.4
    adv = torch.randn(N, generator=g)
    mask = torch.ones(N, T, dtype=torch.long)
    mask[0, 3:] = 0
    mask[4, 1:] = 0
    ours, diag = grpo_loss(logps, old, adv, mask, 0.2, 0.28, beta, ref, loss_type)
    theirs = reference_loss(logps.tolist(), old.tolist(), adv.tolist(), mask.tolist(), 0.2, 0.28, beta, ref.tolist(),
                            loss_type)
    assert ours.item() == pytest.approx(theirs, rel=1e-5)
    assert 0.0 < diag["clip_fraction"] < 1.0
    assert (diag["kl"] > 0) == (beta > 0)


def test_loss_rejects_bad_settings():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="loss_type"):
        grpo_loss(x, x, torch.zeros(1), x, loss_type="sum")
    with pytest.raises(ValueError, match="'token-mean' is now 'dapo'"):  # verl's name, used before TRL's
        grpo_loss(x, x, torch.zeros(1), x, loss_type="token-mean")
    with pytest.raises(ValueError, match="ref_logps"):
        grpo_loss(x, x, torch.zeros(1), x, beta=0.1)
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages(torch.zeros(4), 2, "median")


def test_grpo_step_raises_likelihood_of_rewarded_completion(tiny_dir):
    """One step with the positive-advantage completion must make it more likely (the sign of the update)."""
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.rollout import per_token_logps

    policy = Policy.load(tiny_dir, lora_rank=4, max_new_tokens=6)
    params = policy.trainable("global")
    r = policy.rollout("global", ["1+1=", "2+2="], num_generations=4, seed=0)
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    before = (per_token_logps(policy.model, r) * r.completion_mask).sum(1).detach()  # [N]
    opt = torch.optim.Adam(params, lr=1e-2)
    diag = grpo_step(policy.model, opt, r, rewards, GRPOSettings(num_iterations=2, beta=0.01),
                     ref_model_ctx=policy.reference)
    after = (per_token_logps(policy.model, r) * r.completion_mask).sum(1).detach()
    assert after[0] > before[0] and after[7] > before[7]
    assert after[1] < before[1]
    assert diag["frac_zero_std"] == 0.0 and diag["kl"] >= 0


def test_micro_batches_give_the_same_update_as_one_batch(tiny_dir):
    from fedrl_kit.policy.engine import Policy

    states = []
    for mb in (8, 3):
        policy = Policy.load(tiny_dir, lora_rank=4, max_new_tokens=6, seed=1)
        params = policy.trainable("global")
        r = policy.rollout("global", ["3+4=", "5+1="], num_generations=4, seed=5)
        rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0])
        grpo_step(policy.model, torch.optim.SGD(params, lr=0.5), r, rewards,
                  GRPOSettings(num_iterations=1, micro_batch_size=mb))
        states.append(policy.get_state("global"))
    for k in states[0]:
        assert states[0][k] == pytest.approx(states[1][k], abs=1e-5)
