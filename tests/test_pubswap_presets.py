"""The PubSwap paper's presets, the memory estimate behind them, and the refusal of a run that will not fit."""

import pytest
import torch
import transformers

from fedrl_kit.cli import main
from fedrl_kit.config import preset, presets
from fedrl_kit.policy import memory
from fedrl_kit.policy.memory import DoesNotFitError, check_fits, estimate_memory
from fedrl_kit.pubswap.presets import PAPER_PRESETS
from fedrl_kit.runs import Run


@pytest.fixture(scope="module")
def arch_dir(tmp_path_factory):
    """A small Llama-style architecture as a folder holding only config.json (no weights to load)."""
    path = tmp_path_factory.mktemp("arch")
    transformers.Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=96).save_pretrained(path)
    return str(path)


def test_paper_presets_carry_tables_9_to_12():
    assert set(PAPER_PRESETS) <= set(presets())
    for name in PAPER_PRESETS:
        cfg = preset(name, method="pubswap_balanced")
        assert cfg.preset == name and cfg.num_clients == 4 and cfg.num_generations == 8
        assert (cfg.lora_rank, cfg.lora_alpha, cfg.learning_rate, cfg.weight_decay) == (32, 64.0, 1e-5, 0.01)
        assert (cfg.epsilon, cfg.epsilon_high, cfg.beta, cfg.num_iterations) == (0.2, 0.25, 1e-4, 2)
        assert (cfg.max_new_tokens, cfg.temperature, cfg.aggregator, cfg.equal_size) == (2048, 0.7, "fedit", True)
        assert cfg.local_steps * cfg.rounds in (360, 540)  # the paper's GRPO steps (540: medical)
    qwen3 = preset("pubswap-qwen3-1.7b-deepmath")
    assert (qwen3.base, qwen3.world, qwen3.n_train, qwen3.n_public, qwen3.n_test) == (
        "Qwen/Qwen3-1.7B", "deepmath", 16000, 3000, 1000)  # appendix B.1
    assert preset("pubswap-qwen2.5-math-1.5b-math").base == "Qwen/Qwen2.5-Math-1.5B"
    assert preset("pubswap-qwen3-4b-deepmath").prompts_per_step == 4  # Table 11
    med = preset("pubswap-llama3.2-3b-med")
    assert med.base == "meta-llama/Llama-3.2-3B-Instruct" and med.lora_targets == "auto" and med.rounds == 54


def test_estimate_counts_the_models_and_the_adapters_parameters(arch_dir):
    from fedrl_kit.policy.adapters import attach_lora, resolve_lora_targets

    cfg = preset("quick", base=arch_dir, lora_rank=4)
    est = estimate_memory(cfg)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.from_pretrained(arch_dir))
    assert est.n_params == sum(p.numel() for p in model.parameters())
    peft_model = attach_lora(model, rank=4, alpha=8.0, target_modules=resolve_lora_targets(model, "auto"))
    assert est.n_lora == sum(p.numel() for n, p in peft_model.named_parameters() if "lora_" in n)
    assert est.weights == est.n_params * 4 and est.adapters == (cfg.num_clients + 1) * est.n_lora * 4
    # the parts scale as docs/gpu.md ("Module notes", memory) says
    double = estimate_memory(cfg.replace(micro_batch_size=2), ) , estimate_memory(cfg.replace(micro_batch_size=4))
    assert double[1].training == 2 * double[0].training
    assert estimate_memory(cfg.replace(prompts_per_step=16)).rollout == 2 * est.rollout
    assert est.total == (est.weights + est.adapters + est.optimiser + est.gradients
                         + max(est.rollout, est.training, est.evaluation) + est.overhead)


def test_every_paper_preset_fits_an_80_gb_gpu_and_the_unbatched_one_does_not():
    for name in PAPER_PRESETS:
        est = estimate_memory(preset(name, method="pubswap_balanced"))
        assert est is not None and est.total < memory.REFERENCE_GPU_BYTES, name
    too_big = preset("pubswap-qwen3-1.7b-math", micro_batch_size=64)  # the whole b·K batch in one pass
    with pytest.raises(DoesNotFitError, match="micro_batch_size"):
        check_fits(too_big, capacity=memory.REFERENCE_GPU_BYTES)


def test_a_run_that_will_not_fit_is_refused_before_the_model_is_loaded(arch_dir, monkeypatch):
    cfg = preset("quick", base=arch_dir, method="pubswap_balanced")
    monkeypatch.setattr(memory, "device_memory", lambda device: 2 ** 20)  # a 1 MiB device
    # the folder holds no weights: getting past the check would fail loading them, with another error
    with pytest.raises(DoesNotFitError, match="needs about .* GiB on cpu"):
        Run(cfg, progress=False).build()
    monkeypatch.setattr(memory, "device_memory", lambda device: 2 ** 40)
    with pytest.raises(Exception) as err:
        Run(cfg, progress=False).build()
    assert not isinstance(err.value, DoesNotFitError)  # it fits: the (missing) weights are what fails now


def test_dry_run_prints_the_estimate_and_loads_nothing(arch_dir, capsys, monkeypatch):
    assert main(["run", "--method", "pubswap_balanced", "--set", f"base={arch_dir}", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "aggregator fedit, weight decay 0.01" in out and "total" in out and "fits cpu here" in out
    monkeypatch.setattr(memory, "device_memory", lambda device: 2 ** 20)
    assert main(["run", "--set", f"base={arch_dir}", "--dry-run"]) == 2
    assert "does NOT fit" in capsys.readouterr().out
    monkeypatch.setattr(memory, "device_memory", lambda device: None)  # cuda absent: an 80 GB GPU is the yardstick
    assert main(["run", "--preset", "pubswap-qwen3-1.7b-math", "--dry-run"]) == 0
    assert "fits an 80 GB GPU" in capsys.readouterr().out


def test_layer_widths_read_each_config_family_and_name_a_config_without_one():
    import transformers

    from fedrl_kit.policy.memory import layer_widths

    assert layer_widths(transformers.Qwen2Config(hidden_size=64, intermediate_size=160)) == (64, 160)
    assert layer_widths(transformers.GPT2Config(n_embd=48, n_inner=None)) == (48, 192)  # GPT-2: 4 × hidden
    assert layer_widths(transformers.GPT2Config(n_embd=48, n_inner=100)) == (48, 100)
    with pytest.raises(ValueError, match="hidden size"):
        layer_widths(transformers.PretrainedConfig())


def test_the_estimate_counts_live_adapters_for_a_rounds_participants_only(arch_dir):
    cfg = preset("quick", base=arch_dir, lora_rank=4, num_clients=1000, clients_per_round=10, partition="iid")
    est, few = estimate_memory(cfg), estimate_memory(cfg.replace(num_clients=10))
    assert est.adapters == few.adapters == 11 * est.n_lora * 4  # parked clients hold no adapter
    assert est.gradients == few.gradients and est.optimiser == few.optimiser  # Adam reset each round: none kept
    kept = estimate_memory(cfg.replace(reset_optimizer=False))
    assert kept.optimiser == 1000 * 2 * est.n_lora * 4  # moments kept across rounds: every client's, parked or not
    every = estimate_memory(cfg.replace(clients_per_round=0))
    assert every.adapters == 1001 * est.n_lora * 4
