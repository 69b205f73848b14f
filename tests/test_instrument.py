"""Drift instrumentation: hand-computed distances, one record per local step, and no effect on training."""

from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.drift_probe import DriftProbe, as_factors
from fedrl_kit.runs import Run

BASE = str(Path(__file__).resolve().parents[1] / "data" / "base")


def _state(a, b):
    return {"m.lora_A.weight": np.asarray(a, float), "m.lora_B.weight": np.asarray(b, float)}


def test_as_factors_pairs_a_and_b_and_rejects_broken_states():
    s = _state([[1.0, 0.0]], [[2.0], [0.0]])
    f = as_factors(s)
    assert list(f) == ["m"] and f["m"][0].shape == (1, 2) and f["m"][1].shape == (2, 1)
    with pytest.raises(ValueError, match="lora_B"):
        as_factors({"m.lora_A.weight": np.zeros((1, 2))})
    with pytest.raises(ValueError, match="no LoRA factors"):
        as_factors({"bias": np.zeros(2)})


def test_probe_distances_match_hand_computation():
    probe = DriftProbe(scaling=2.0)
    probe.start_round(_state([[0.0, 0.0]], [[0.0], [0.0]]))  # broadcast adapter: ΔW = 0
    # client x: A = [1, 0], B = [1, 0]^T → ΔW = 2·[[1, 0], [0, 0]];  client y: A = [0, 1], B = [0, 1]^T → 2·[[0, 0], [0, 1]]
    for cid, a, b, g in (("x", [[1.0, 0.0]], [[1.0], [0.0]], [1.0, 0.0]), ("y", [[0.0, 1.0]], [[0.0], [1.0]], [0.0, 1.0])):
        probe._pending[cid] = np.asarray(g)
        probe.step_done(cid, 0, "public", _state(a, b), {"reward_std": 0.5, "frac_zero_std": 0.25},
                        replacement_per_prompt=[0.5, 0.0] if cid == "x" else [0.0, 0.0])
    (rec,) = probe.end_round()
    assert rec["step"] == 0 and rec["step_kind"] == "public" and rec["clients"] == 2
    assert rec["pairwise_effective"] == pytest.approx(np.sqrt(4 + 4))  # ‖2·diag(1,0) − 2·diag(0,1)‖_F
    assert rec["pairwise_factors"] == pytest.approx(np.sqrt(2 + 2))  # ‖ΔA‖² = 2, ‖ΔB‖² = 2
    assert rec["to_global_effective"] == pytest.approx(2.0)
    assert rec["to_global_factors"] == pytest.approx(np.sqrt(2))
    # ḡ = (0.5, 0.5): (1/2)·(0.5 + 0.5) / 0.5 = 1;  ζ = ‖(1, −1)‖ = √2
    assert rec["grad_dissimilarity"] == pytest.approx(1.0)
    assert rec["zeta"] == pytest.approx(np.sqrt(2))
    assert rec["replacement_fraction"] == pytest.approx(0.125) and rec["replacement_per_prompt"] == [0.25, 0.0]
    assert rec["reward_std"] == 0.5 and rec["frac_zero_std"] == 0.25
    assert probe.end_round() == []  # snapshots are dropped once reported


def test_probe_rejects_misuse():
    with pytest.raises(ValueError, match="scaling"):
        DriftProbe(0)
    probe = DriftProbe(1.0)
    with pytest.raises(RuntimeError, match="start_round"):
        probe.end_round()
    probe.start_round(_state([[0.0]], [[0.0]]))
    with pytest.raises(ValueError, match="kind"):
        probe.step_done("x", 0, "other", _state([[0.0]], [[0.0]]), {})


def test_trace_drift_config_is_validated(tiny_dir):
    with pytest.raises(ValueError, match="trace_drift"):
        small_config(tiny_dir, trace_drift="yes")


@pytest.mark.parametrize("method,kinds", [("fedavg_grpo", ["private"] * 4),
                                          ("pubswap_balanced", ["private", "public", "private", "public"])])
def test_one_record_per_local_step_and_training_unchanged(method, kinds):
    # the committed base has mixed rewards, so gradients and swaps are not trivially zero
    kw = dict(method=method, rounds=1, local_steps=4, pubswap={"period": 2}, prompts_per_step=2, num_generations=4,
              max_new_tokens=16)
    traced = Run(small_config(BASE, trace_drift=True, **kw), progress=False)
    plain = Run(small_config(BASE, **kw), progress=False)
    rec_t, rec_p = traced.run(), plain.run()
    drift = [r for r in rec_t if r["kind"] == "drift"]
    assert [d["step"] for d in drift] == [0, 1, 2, 3] and [d["step_kind"] for d in drift] == kinds
    assert all(d["clients"] == 3 and d["pairwise_effective"] > 0 and d["to_global_factors"] > 0 for d in drift)
    # drift from the round's start can only be measured growing here: every step moves every client
    assert drift[-1]["to_global_factors"] > drift[0]["to_global_factors"]
    if method == "pubswap_balanced":
        assert all("replacement_per_prompt" in d and len(d["replacement_per_prompt"]) == 2 for d in drift[1::2])
    # instrumentation is simulation-side: same metrics (but the drift records and timings), same ledger bytes
    strip = lambda recs: [{k: v for k, v in r.items() if k != "seconds"} for r in recs if r["kind"] != "drift"]  # noqa: E731
    assert strip(rec_t) == strip(rec_p)
    assert traced.runtime.ledger.total_bytes() == plain.runtime.ledger.total_bytes()


# -- bounded tracing: sketches on real-model-sized adapters, tensors streamed to disk ------------------------------
def _random_adapter(rng, shapes, r, scale=1.0):
    """An adapter state with modules of the given (m, d) shapes at rank r."""
    out = {}
    for i, (m, d) in enumerate(shapes):
        out[f"layer{i}.lora_A.weight"] = (scale * rng.standard_normal((r, d))).astype(np.float32)
        out[f"layer{i}.lora_B.weight"] = (scale * rng.standard_normal((m, r))).astype(np.float32)
    return out


def test_effective_distance_and_sketches_against_the_dense_products():
    from fedrl_kit.drift_probe import count_sketch, effective_distance_sq, tensor_sketch

    rng = np.random.default_rng(0)
    a, b, a0, b0 = rng.standard_normal((4, 30)), rng.standard_normal((20, 4)), rng.standard_normal((4, 30)), \
        rng.standard_normal((20, 4))
    dense = np.sum((2.0 * (b @ a) - 2.0 * (b0 @ a0)) ** 2)
    assert effective_distance_sq(a, b, a0, b0, 2.0) == pytest.approx(dense, rel=1e-10)
    # linear: the sketch of a difference is the difference of sketches (what pairwise distances rely on)
    ts = lambda a_, b_: tensor_sketch(a_, b_, "m", 4096, 2.0)  # noqa: E731
    np.testing.assert_allclose(ts(a, b) + ts(a0, b0), ts(np.vstack([a, a0]), np.hstack([b, b0])), atol=1e-9)
    x = rng.standard_normal(5000)
    np.testing.assert_allclose(count_sketch(2 * x, "v", 256), 2 * count_sketch(x, "v", 256))
    # unbiased squared norms: over many independent hash keys the mean is within a few % of the truth
    est = np.mean([np.sum(tensor_sketch(a, b, f"m{i}", 512) ** 2) for i in range(200)])
    assert est == pytest.approx(np.sum((b @ a) ** 2), rel=0.05)
    est = np.mean([np.sum(count_sketch(x, f"v{i}", 512) ** 2) for i in range(200)])
    assert est == pytest.approx(np.sum(x ** 2), rel=0.05)


def test_sketched_probe_agrees_with_the_exact_one():
    rng = np.random.default_rng(1)
    shapes, r = [(64, 48), (96, 64), (48, 96)], 4
    glob = _random_adapter(rng, shapes, r, 0.1)
    exact, sketched = DriftProbe(2.0), DriftProbe(2.0, exact_max=0)  # exact_max=0: always sketch
    for p in (exact, sketched):
        p.start_round(glob)
    assert exact.exact and not sketched.exact
    for step in range(2):
        for c in range(4):
            state = {k: v + _random_adapter(rng, shapes, r, 0.05)[k] for k, v in glob.items()}
            grad = [torch.as_tensor(rng.standard_normal(v.shape).astype(np.float32) + 1.0) for v in state.values()]
            params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grad]
            for p_, g in zip(params, grad):
                p_.grad = g
            for p in (exact, sketched):
                p.grad_catcher(f"c{c}")(params)
                p.step_done(f"c{c}", step, "private", state, {"reward_std": 0.1})
    for e, s in zip(exact.end_round(), sketched.end_round()):
        assert "sketched" not in e and s["sketched"]
        for key in ("to_global_effective", "to_global_factors"):  # computed exactly in both modes
            assert s[key] == pytest.approx(e[key], rel=1e-6)
        for key in ("pairwise_effective", "pairwise_factors", "zeta", "grad_dissimilarity"):  # estimates
            assert s[key] == pytest.approx(e[key], rel=0.1), key


def test_trace_memory_is_bounded_on_a_100m_parameter_model():
    """LoRA r = 32 on every linear layer of a ~110 M-parameter Qwen2 built from a config (meta device: shapes only).

    The old probe held every client-step's factors and gradient: N·τ·2·P·4 bytes (≈ 180 MB here). The bound
    stated in docs/pubswap.md ("Module notes", drift_probe): N·τ·3·sketch_dim·4 bytes held, plus one module's transient work (≤ 16 MB).
    Two clients, two steps and a 2,048-entry sketch keep the test to a few seconds (sketching costs ~1 s per
    client-step at this size, 3–4 s at the default 8,192 entries).
    """
    import tracemalloc

    import transformers

    cfg = transformers.Qwen2Config(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                                   num_attention_heads=12, num_key_value_heads=4, vocab_size=32000,
                                   tie_word_embeddings=True)
    with torch.device("meta"):
        model = transformers.Qwen2ForCausalLM(cfg)
    assert 90e6 < sum(p.numel() for p in model.parameters()) < 130e6
    r, rng = 32, np.random.default_rng(0)
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"]
    shapes = {n: (m.out_features, m.in_features) for n, m in linears}
    P = sum(r * (o + i) for o, i in shapes.values())  # LoRA factor entries of one adapter

    def state():
        out = {}
        for n, (o, i) in shapes.items():
            out[f"{n}.lora_A.weight"] = rng.standard_normal((r, i), dtype=np.float32)
            out[f"{n}.lora_B.weight"] = rng.standard_normal((o, r), dtype=np.float32)
        return out

    params = [torch.nn.Parameter(torch.zeros(x)) for n, (o, i) in shapes.items() for x in ((r, i), (o, r))]
    N, tau = 2, 2
    probe = DriftProbe(2.0, sketch_dim=2048)
    tracemalloc.start()
    try:
        probe.start_round(state())
        assert not probe.exact
        worst = 0
        for step in range(tau):
            for c in range(N):
                s = state()
                for p in params:
                    p.grad = torch.randn(p.shape)
                before = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                probe.grad_catcher(f"c{c}")(params)
                probe.step_done(f"c{c}", step, "private", s, {})
                worst = max(worst, tracemalloc.get_traced_memory()[1] - before + probe.held_bytes())
                del s
    finally:
        tracemalloc.stop()
    held_bound = N * tau * 3 * probe.sketch_dim * 4
    assert probe.held_bytes() <= held_bound + 64 * 1024
    assert worst <= held_bound + 16 * 2 ** 20, f"trace's extra peak {worst / 2 ** 20:.1f} MB"
    assert N * tau * 2 * P * 4 > 5 * (held_bound + 16 * 2 ** 20)  # what the unbounded probe would have held
    assert len(probe.end_round()) == tau


def test_full_tensors_are_streamed_to_the_run_folder_only_when_asked(tmp_path):
    rng = np.random.default_rng(2)
    shapes, r = [(8, 6)], 2
    probe = DriftProbe(1.0, tensors_dir=tmp_path / "drift_tensors")
    glob = _random_adapter(rng, shapes, r)
    probe.start_round(glob, round=3)
    s = _random_adapter(rng, shapes, r)
    param = torch.nn.Parameter(torch.zeros(1))
    param.grad = torch.tensor([0.5])
    probe.grad_catcher("c0")([param])
    probe.step_done("c0", 1, "public", s, {})
    with np.load(tmp_path / "drift_tensors" / "round0003" / "step0001_c0.npz") as z:
        assert set(z.files) == set(s) | {"grad"} and np.array_equal(z["grad"], [0.5])
        assert all(np.array_equal(z[k], v) for k, v in s.items())
    with np.load(tmp_path / "drift_tensors" / "round0003" / "global.npz") as z:
        assert all(np.array_equal(z[k], v) for k, v in glob.items())


def test_trace_tensors_needs_trace_drift_and_a_run_folder(tiny_dir, tmp_path):
    with pytest.raises(ValueError, match="trace_tensors"):
        small_config(tiny_dir, trace_tensors=True)
    cfg = small_config(tiny_dir, trace_drift=True, trace_tensors=True, rounds=1, method="pubswap_balanced",
                       local_steps=2)
    with pytest.raises(ValueError, match="trace_tensors needs a run directory"):
        Run(cfg, progress=False).build()
    Run(cfg, tmp_path / "run", progress=False).run()
    files = sorted(p.name for p in (tmp_path / "run" / "drift_tensors" / "round0001").iterdir())
    assert files == ["global.npz"] + [f"step{s:04d}_client_{c}.npz" for s in range(2) for c in range(3)]
