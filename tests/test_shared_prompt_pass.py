"""prompt_pass="shared": each prompt runs once for its G rows (generation's prefill, the GRPO step's scoring) and
gives the per-row pass's completions, log-probs and gradients to float tolerance."""

import pytest
import torch

from fedrl_kit.grpo import GRPOSettings, grpo_loss, grpo_step
from fedrl_kit.rollout import Rollouts, per_token_logps
from fedrl_kit.speed import Sampler, Scorer

PROMPTS = ["1+1=", "12+30=", "7*8=", "100-1="]  # different lengths: left padding differs by group


def _policy(tiny_dir, seed=0):
    """The tiny policy with a non-zero LoRA adapter (a fresh adapter's zero B factor hides A's gradient)."""
    from fedrl_kit.policy.engine import Policy

    policy = Policy.load(tiny_dir, lora_rank=4, max_new_tokens=7, seed=seed)
    params = policy.trainable("global")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in params:
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return policy, params


def _grads(policy, params, rollouts, **kw):
    for p in params:
        p.grad = None
    logps = Scorer(**kw)(policy.model, rollouts, 0.7)  # [N, T]
    adv = torch.linspace(-1, 1, len(rollouts))  # [N]
    loss, _ = grpo_loss(logps, logps.detach() - 0.05, adv, rollouts.completion_mask)
    loss.backward()
    return logps.detach(), [p.grad.clone() for p in params]


def test_shared_prompt_pass_gives_the_full_pass_log_probs_and_gradients(tiny_dir):
    policy, params = _policy(tiny_dir)
    r = policy.rollout("global", PROMPTS, num_generations=4, seed=3)
    assert len(set(r.prompt_mask.sum(1).tolist())) > 1  # the groups really are padded differently
    policy.model.train()
    full, g_full = _grads(policy, params, r)
    shared, g_shared = _grads(policy, params, r, prompt_pass="shared")
    m = r.completion_mask.bool()
    assert torch.allclose(full[m], shared[m], atol=1e-5)
    assert any(g.abs().max() > 1e-3 for g in g_full)  # gradients that can disagree
    for a, b in zip(g_full, g_shared):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_shared_prompt_pass_in_chunks_of_whole_groups(tiny_dir):
    """batch_size cuts the batch into whole groups (rounded down to a multiple of G, at least one group)."""
    policy, _ = _policy(tiny_dir, seed=1)
    r = policy.rollout("global", PROMPTS, num_generations=4, seed=4)
    with torch.no_grad():
        one = Scorer("shared")(policy.model, r, 1.0)
        for bs in (3, 6, 8):
            chunked = Scorer("shared")(policy.model, r, 1.0, batch_size=bs)
            assert torch.allclose(one[r.completion_mask.bool()], chunked[r.completion_mask.bool()], atol=1e-5)


def test_rows_whose_groups_do_not_share_a_prompt_are_scored_by_the_full_pass(tiny_dir):
    policy, _ = _policy(tiny_dir, seed=2)
    r = policy.rollout("global", PROMPTS[:2], num_generations=4, seed=5)
    order = [0, 4, 1, 5, 2, 6, 3, 7]  # every block of 4 rows now mixes the two prompts
    mixed = r.select(order)
    with torch.no_grad():
        full = per_token_logps(policy.model, mixed, 1.0)
        shared = Scorer("shared")(policy.model, mixed, 1.0)
    assert torch.equal(full, shared)


def test_one_token_completions(tiny_dir):
    policy, _ = _policy(tiny_dir, seed=3)
    r = policy.rollout("global", PROMPTS[:2], num_generations=2, seed=6)
    one = Rollouts(r.prompt_ids, r.prompt_mask, r.completion_ids[:, :1], torch.ones_like(r.completion_mask[:, :1]),
                   r.prompts, r.completions, 2)
    with torch.no_grad():
        full = per_token_logps(policy.model, one, 1.0)
        shared = Scorer("shared")(policy.model, one, 1.0)
    assert shared.shape == (4, 1) and torch.allclose(full, shared, atol=1e-5)


@pytest.mark.parametrize("beta", [0.0, 0.05])
def test_a_grpo_step_with_the_shared_pass_makes_the_full_pass_update(tiny_dir, beta):
    states, diags = [], []
    for prompt_pass in ("per_row", "shared"):
        policy, params = _policy(tiny_dir, seed=4)
        r = policy.rollout("global", PROMPTS, num_generations=4, seed=7)
        rewards = torch.tensor([1.0, 0.0, 0.0, 1.0] * 4)
        diags.append(grpo_step(policy.model, torch.optim.SGD(params, lr=0.5), r, rewards,
                               GRPOSettings(num_iterations=2, beta=beta, score=Scorer(prompt_pass)),
                               ref_model_ctx=policy.reference))
        states.append(policy.get_state("global"))
    for k in states[0]:
        assert states[0][k] == pytest.approx(states[1][k], abs=1e-5)
    assert diags[0]["loss"] == pytest.approx(diags[1]["loss"], abs=1e-5)
    assert diags[0]["kl"] == pytest.approx(diags[1]["kl"], abs=1e-6)
    assert beta == 0 or diags[1]["kl"] > 0


def test_shared_prefill_samples_the_same_completions(tiny_dir):
    from fedrl_kit.rollout import generate

    policy, _ = _policy(tiny_dir, seed=5)
    outs = [generate(policy.model, policy.tokenizer, PROMPTS, 4, 7, 1.0, seed=11, sample=Sampler(prompt_pass=pp))
            for pp in ("per_row", "shared")]
    assert torch.equal(outs[0].completion_ids, outs[1].completion_ids)
    assert outs[0].completions == outs[1].completions and len(set(outs[0].completions)) > 4
    with pytest.raises(ValueError, match="lockstep sampler"):
        generate(policy.model, policy.tokenizer, PROMPTS, 4, 7, 1.0, seed=11, logits_processor=object(),
                 sample=Sampler(prompt_pass="shared"))


def test_a_policy_samples_with_its_prompt_pass(tiny_dir):
    policy, _ = _policy(tiny_dir, seed=6)
    per_row = policy.rollout("global", PROMPTS, num_generations=4, seed=2)
    policy.sampler = Sampler(prompt_pass="shared")
    shared = policy.rollout("global", PROMPTS, num_generations=4, seed=2)
    assert shared.completions == per_row.completions


def test_prompt_pass_is_validated(tiny_dir):
    from fedrl_kit.config import RunConfig

    with pytest.raises(ValueError, match="prompt_pass must be one of"):
        RunConfig().replace(prompt_pass="half")
    with pytest.raises(ValueError, match="prompt_pass"):
        RunConfig().replace(client_batching="lockstep", prompt_pass="shared")
    with pytest.raises(ValueError, match="prompt_pass must be one of"):
        Scorer("half")
    with pytest.raises(ValueError, match="prompt_pass must be one of"):
        Sampler(prompt_pass="half")
    assert RunConfig().prompt_pass == "auto"  # shared where it applies: RunConfig.speed_path
    assert RunConfig().reference().replace(prompt_pass="shared").grpo_settings().score == Scorer("shared")
    assert RunConfig().replace(client_batching="lockstep").speed_path()["prompt_pass"] == "per_row"


def test_a_run_with_the_shared_pass_answers_like_the_full_pass(tiny_dir):
    """End to end: the same run with either pass. A float-level difference may flip a sampled token later, so the
    check is on the first round's rewards (sampled before any update) and on the run finishing."""
    from conftest import small_config
    from fedrl_kit.runs import Run

    firsts = []
    for prompt_pass in ("per_row", "shared"):
        recs = Run(small_config(tiny_dir, rounds=1, prompt_pass=prompt_pass), progress=False).run()
        firsts.append([r for r in recs if r["kind"] == "client" and r["round"] == 1])
        assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1]
    assert len(firsts[0]) == 3
    assert [r["reward_mean"] for r in firsts[0]] == [r["reward_mean"] for r in firsts[1]]
