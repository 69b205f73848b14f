"""generation_loop="compact": fedrl_kit's own sampling loop (adapters folded into the weights, finished rows dropped)
samples what HF ``generate`` samples, with the same random draws, and refuses what it cannot do exactly."""

import pytest
import torch

from fedrl_kit.rollout import generate
from fedrl_kit.speed import Sampler
from fedrl_kit.speed.compact import folded_lora

PROMPTS = ["1+1=", "12+30=", "7*8=", "100-1="]  # different lengths: left padding differs by group


def _policy(tiny_dir, seed=0, eos_bias=0.0):
    """The tiny policy with a non-zero LoRA adapter; ``eos_bias`` raises the eos logit so that rows finish at
    different steps (an untrained model seldom emits eos)."""
    from fedrl_kit.policy.engine import Policy

    policy = Policy.load(tiny_dir, lora_rank=4, max_new_tokens=12, seed=seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in policy.trainable("global"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
        if eos_bias:
            head = policy.model.get_output_embeddings()
            if head.bias is None:
                head.bias = torch.nn.Parameter(torch.zeros(head.weight.shape[0]), requires_grad=False)
            head.bias[policy.tokenizer.eos_token_id] += eos_bias
    return policy


def _both(policy, prompts=PROMPTS, g=4, max_new=12, temperature=1.0, prompt_pass="per_row"):
    outs, states = [], []
    for loop in ("hf", "compact"):
        outs.append(generate(policy.model, policy.tokenizer, prompts, g, max_new, temperature, seed=11,
                             sample=Sampler(loop, prompt_pass)))
        states.append(torch.get_rng_state())
    return outs, states


@pytest.mark.parametrize("prompt_pass", ["per_row", "shared"])
@pytest.mark.parametrize("temperature", [1.0, 0.7, 0.0])
def test_compact_loop_samples_what_generate_samples(tiny_dir, prompt_pass, temperature):
    policy = _policy(tiny_dir, eos_bias=3.0)
    (hf, compact), (s_hf, s_compact) = _both(policy, temperature=temperature, prompt_pass=prompt_pass)
    lengths = hf.completion_mask.sum(1)
    assert temperature == 0 or len(set(lengths.tolist())) > 2  # rows really finish at different steps
    assert torch.equal(hf.completion_ids, compact.completion_ids)
    assert torch.equal(hf.completion_mask, compact.completion_mask)
    assert hf.completions == compact.completions
    assert torch.equal(s_hf, s_compact)  # the generator advanced by exactly the same draws


def test_compact_loop_stops_at_max_new_tokens(tiny_dir):
    policy = _policy(tiny_dir, seed=1)
    (hf, compact), _ = _both(policy, max_new=3)
    assert compact.completion_ids.shape == hf.completion_ids.shape == (16, 3)
    assert torch.equal(hf.completion_ids, compact.completion_ids)


def test_a_policy_samples_with_its_generation_loop(tiny_dir):
    policy = _policy(tiny_dir, seed=2, eos_bias=2.0)
    hf = policy.rollout("global", PROMPTS, num_generations=4, seed=2)
    policy.sampler = Sampler("compact")
    compact = policy.rollout("global", PROMPTS, num_generations=4, seed=2)
    assert compact.completions == hf.completions and len(set(hf.completions)) > 4


def test_folded_lora_computes_the_adapter_and_restores_the_layers(tiny_dir):
    policy = _policy(tiny_dir, seed=3)
    model, ids = policy.model, policy.tokenizer(PROMPTS[:1], return_tensors="pt").input_ids
    model.eval()
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with model.disable_adapter():
            base = model(input_ids=ids).logits
        with folded_lora(model):
            folded = model(input_ids=ids).logits
        assert (plain - base).abs().max() > 1e-3  # the adapter changes the logits
        assert torch.allclose(plain, folded, atol=1e-5)
        after = model(input_ids=ids).logits
        assert torch.equal(plain, after)
        with model.disable_adapter(), folded_lora(model):  # adapters off: nothing folded
            assert torch.equal(model(input_ids=ids).logits, base)
    layer = next(m for m in model.modules() if hasattr(m, "lora_A"))
    assert "forward" not in vars(layer)  # the class's forward again


def test_folded_lora_refuses_what_it_cannot_fold_exactly(tiny_dir):
    policy = _policy(tiny_dir, seed=4)
    model = policy.model
    with pytest.raises(ValueError, match="float32"):
        with folded_lora(model.to(torch.bfloat16)):
            pass
    model.to(torch.float32)
    layer = next(m for m in model.modules() if hasattr(m, "lora_A"))
    layer.fan_in_fan_out = True
    with pytest.raises(ValueError, match="plain LoRA"):
        with folded_lora(model):
            pass
    layer.fan_in_fan_out = False
    with folded_lora(model):
        pass
    assert all("forward" not in vars(m) for m in model.modules())


def test_compact_loop_refuses_generation_config_processors(tiny_dir):
    policy = _policy(tiny_dir, seed=5)
    config = policy.model.generation_config
    for name, value in (("repetition_penalty", 1.3), ("num_beams", 2), ("stop_strings", ["="])):
        old = getattr(config, name)
        setattr(config, name, value)
        with pytest.raises(ValueError, match=name):
            generate(policy.model, policy.tokenizer, PROMPTS, 2, 4, 1.0, seed=1, sample=Sampler("compact"))
        setattr(config, name, old)
    generate(policy.model, policy.tokenizer, PROMPTS, 2, 4, 1.0, seed=1, sample=Sampler("compact"))  # neutral again: runs
    with pytest.raises(ValueError, match="generation loop must be one of"):
        Sampler("fast")
    with pytest.raises(ValueError, match="lockstep sampler"):
        generate(policy.model, policy.tokenizer, PROMPTS, 2, 4, 1.0, seed=1, logits_processor=object(),
                 sample=Sampler("compact"))


def test_generation_loop_is_validated():
    from fedrl_kit.config import RunConfig

    assert RunConfig().generation_loop == "auto"  # the compact loop where it applies: speed_path
    with pytest.raises(ValueError, match="generation_loop"):
        RunConfig().replace(generation_loop="fast")
    with pytest.raises(ValueError, match="generation_loop"):
        RunConfig().replace(client_batching="lockstep", generation_loop="compact")
    with pytest.raises(ValueError, match="generation_loop"):
        RunConfig().replace(dtype="bfloat16", generation_loop="compact")
    RunConfig().replace(generation_loop="compact", prompt_pass="shared")


def test_a_run_with_the_compact_loop_answers_like_generate(tiny_dir):
    """End to end: the same run with either loop. A float-level difference may flip a sampled token after an
    update, so the check is on the first round's rewards (sampled before any update) and on the run finishing."""
    from conftest import small_config
    from fedrl_kit.runs import Run

    firsts = []
    for loop in ("hf", "compact"):
        recs = Run(small_config(tiny_dir, rounds=1, generation_loop=loop), progress=False).run()
        firsts.append([r for r in recs if r["kind"] == "client" and r["round"] == 1])
        assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1]
    assert len(firsts[0]) == 3
    assert [r["reward_mean"] for r in firsts[0]] == [r["reward_mean"] for r in firsts[1]]


def test_the_default_path_is_the_fastest_the_config_allows():
    from fedrl_kit.config import REFERENCE_PATH, RunConfig

    assert RunConfig().speed_path() == dict(prompt_pass="shared", generation_loop="compact", length_buckets=2)
    assert RunConfig().replace(dtype="bfloat16").speed_path() == dict(prompt_pass="shared", generation_loop="hf",
                                                                      length_buckets=2)
    lockstep = RunConfig().replace(client_batching="lockstep")
    assert lockstep.speed_path() == dict(prompt_pass="per_row", generation_loop="hf", length_buckets=2)
    assert RunConfig().reference().speed_path() == REFERENCE_PATH
    assert RunConfig().reference().replace(prompt_pass="auto", generation_loop="auto", length_buckets=2) == RunConfig()
    # an explicit choice is kept, and one that cannot apply is refused, naming the field
    assert RunConfig().replace(prompt_pass="per_row").speed_path()["prompt_pass"] == "per_row"
    with pytest.raises(ValueError, match="generation_loop"):
        RunConfig().replace(dtype="bfloat16", generation_loop="compact")
    with pytest.raises(ValueError, match="prompt_pass"):
        lockstep.replace(prompt_pass="shared")


def test_auto_steps_aside_for_a_model_the_compact_loop_cannot_sample(tiny_dir):
    from conftest import small_config
    from fedrl_kit.runs import Run

    run = Run(small_config(tiny_dir, rounds=1), progress=False).build()
    assert run.policy.sampler.loop == "compact"
    run.policy.model.generation_config.repetition_penalty = 1.3  # generate would apply it; the compact loop cannot
    again = Run(small_config(tiny_dir, rounds=1), progress=False, policy=run.policy).build()
    assert again.policy.sampler.loop == "hf"
    run.policy.model.generation_config.repetition_penalty = 1.0