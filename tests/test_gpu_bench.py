"""benchmarks/gpu_rollouts.py on a CPU: the smoke mode's rows, the model shapes it builds, no vLLM import."""

import json
import sys
from pathlib import Path

import pytest
import torch

from conftest import import_benchmark


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("gpu_rollouts")


class _RefuseVLLM:
    """A meta-path finder that fails the test if anything looks for vLLM."""

    def find_spec(self, name, path=None, target=None):
        if name == "vllm" or name.startswith("vllm."):
            raise AssertionError(f"{name} was looked up on a CPU run")
        return None


def _rows(path) -> dict:
    return {(r["model"], r["measurement"]): r for r in json.loads(Path(path).read_text())["runs"]}


def test_smoke_measures_every_row_and_never_looks_for_vllm_on_cpu(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "meta_path", [_RefuseVLLM(), *sys.meta_path])
    out = tmp_path / "smoke.json"
    assert bench.main(["--smoke", "--device", "cpu", "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["settings"]["smoke"] and saved["settings"]["dtype"] == "float32"
    rows = _rows(out)
    assert set(rows) == {("base", "hf"), ("base", "vllm"), ("base", "grpo_step")}
    b, G, T = 2, 2, 8
    for key in [("base", "hf"), ("base", "grpo_step")]:
        r = rows[key]
        # forced length: the embedded base stops after 3-4 tokens on some of these rows when it may
        assert r["tokens"] == b * G * T, key
        assert r["seconds"] > 0 and r["tokens_per_s"] > 0 and r["peak_gpu_mib"] is None, key
    assert rows[("base", "hf")]["params"] == 1643712
    assert rows[("base", "vllm")]["status"] == "vLLM needs CUDA"
    assert "vllm" not in sys.modules


def test_named_shapes_have_the_qwen25_models_parameter_counts(bench):
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

    tokenizer = build_tokenizer()
    for name, count in [("0.5b", 494_032_768), ("1.5b", 1_543_714_304)]:  # Qwen2.5-0.5B's and -1.5B's
        with torch.device("meta"):
            model = build_tiny_model(tokenizer, **bench.QWEN25_COMMON, **bench.SHAPES[name])
        assert sum(p.numel() for p in model.parameters()) == count, name


def test_a_shape_built_from_a_config_is_saved_loaded_and_measured(bench, tmp_path, monkeypatch):
    """The from-config path end to end, on a shape small enough for a CPU (Qwen2.5's vocabulary kept)."""
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

    shape = dict(hidden_size=32, num_layers=1, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1)
    monkeypatch.setitem(bench.SHAPES, "tiny", shape)
    monkeypatch.setattr(bench, "MODELS", (*bench.MODELS, "tiny"))
    out = tmp_path / "tiny.json"
    assert bench.main(["--smoke", "--device", "cpu", "--models", "tiny", "--out", str(out)]) == 0
    rows = _rows(out)
    with torch.device("meta"):
        model = build_tiny_model(build_tokenizer(), **bench.QWEN25_COMMON, **shape)
    assert rows[("tiny", "hf")]["params"] == sum(p.numel() for p in model.parameters()) > 151936 * 32
    assert rows[("tiny", "hf")]["tokens"] == rows[("tiny", "grpo_step")]["tokens"] == 2 * 2 * 8
    assert rows[("tiny", "grpo_step")]["seconds"] > 0


def test_bad_sizes_are_refused_naming_the_flag(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--prompts", "0"])
    assert "--prompts must be >= 1" in capsys.readouterr().err
