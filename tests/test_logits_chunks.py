"""Scoring and SFT passes whose logits would be too large run in row chunks, with the one pass's numbers; φ keeps
only the hidden states it pools; the memory estimate counts the client models FedGRPO and DPSDA-FL train."""

import numpy as np
import pytest
import torch

import fedrl_kit.sft as sft
from fedrl_kit.policy.engine import Policy

PROMPTS = ["What is 2 + 3?", "Add 7 and 8.", "What is 9 - 4?", "Compute 6 * 3.", "What is 10 + 11?"]
ANSWERS = ["5", "15", "5", "18", "21"]


@pytest.fixture()
def policy(tiny_dir):
    pol = Policy.load(tiny_dir, lora_rank=2, max_new_tokens=4)
    with torch.no_grad():  # LoRA B starts at 0: make the adapter matter, so its gradients are not trivial
        for p in pol.trainable("global"):
            p.add_(0.05 * torch.randn_like(p))
    return pol


def test_row_chunks_cut_only_what_does_not_fit():
    assert sft.row_chunks(32, 10, 100) == [range(0, 32)]  # 128 kB of logits: one pass
    assert sft.row_chunks(5, 10, 100, budget=2 * 10 * 100 * 4) == [range(0, 2), range(2, 4), range(4, 5)]
    assert sft.row_chunks(3, 10, 100, budget=1) == [range(0, 1), range(1, 2), range(2, 3)]  # at least one row
    # FedGRPO's evaluator batch on Qwen2.5's vocabulary: 32 pairs of 137 tokens do not fit 1 GiB, 12 rows do
    assert [len(r) for r in sft.row_chunks(32, 137, 151936)] == [12, 12, 8]


def _step(policy, monkeypatch, budget):
    monkeypatch.setattr(sft, "LOGITS_BYTES", budget)
    params = policy.trainable("global")
    start = [p.detach().clone() for p in params]
    opt = torch.optim.SGD(params, lr=1.0)
    loss = sft.sft_step(policy, "global", opt, PROMPTS, ANSWERS, max_grad_norm=1e9)
    moved = [(p.detach() - s).clone() for p, s in zip(params, start)]  # = −grad with SGD, lr 1
    with torch.no_grad():
        for p, s in zip(params, start):
            p.copy_(s)
    return loss, moved


def test_a_chunked_sft_step_has_the_one_pass_loss_and_gradients(policy, monkeypatch):
    whole, g_whole = _step(policy, monkeypatch, 1 << 30)
    chunked, g_chunked = _step(policy, monkeypatch, 1)  # one row a pass
    assert chunked == pytest.approx(whole, rel=1e-5)
    for a, b in zip(g_whole, g_chunked):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-7)
    assert any(a.abs().sum() > 0 for a in g_whole)


def test_chunked_scoring_gives_the_one_pass_log_probs(policy, monkeypatch):
    policy.trainable("global")
    whole = sft.completion_logprob(policy, PROMPTS, ANSWERS)
    monkeypatch.setattr(sft, "LOGITS_BYTES", 1)
    seen = []

    def rows(start, stop):  # the per-row-adapter hook gets each chunk's own rows
        seen.append((start, stop))
        from contextlib import nullcontext
        return nullcontext()

    chunked = sft.completion_logprob(policy, PROMPTS, ANSWERS, batch_size=3, rows=rows)
    np.testing.assert_allclose(chunked, whole, rtol=1e-5)
    assert seen == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]


def test_phi_pools_the_same_hidden_states_without_every_position_logits(policy, monkeypatch):
    from fedrl_kit.fedgrpo.encoder import encode

    model = policy.model
    shapes = []
    forward = type(model).forward

    def spy(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        shapes.append(tuple(out.logits.shape))
        return out

    monkeypatch.setattr(type(model), "forward", spy)
    emb = encode(policy, PROMPTS, layer=1)
    assert shapes and all(s[1] == 1 for s in shapes)  # the logits of the last position only
    monkeypatch.undo()
    tok = policy.tokenizer
    tok.padding_side = "right"
    enc = tok(PROMPTS, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad(), policy.reference():
        h = model(**enc, output_hidden_states=True).hidden_states[1]
    m = enc["attention_mask"].unsqueeze(-1).float()
    ref = ((h * m).sum(1) / m.sum(1)).double().numpy()
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(emb, ref, rtol=1e-5, atol=1e-6)


def test_the_estimate_counts_the_client_models_fedgrpo_and_dpsda_train():
    from fedrl_kit.config import preset
    from fedrl_kit.policy.memory import estimate_memory

    full = dict(base="Qwen/Qwen2.5-1.5B-Instruct", num_clients=2)
    fedavg = estimate_memory(preset("full", method="fedavg_grpo", **full))
    fedgrpo = estimate_memory(preset("full", method="fedgrpo", **full))
    assert fedavg.evaluators == 0
    assert fedgrpo.evaluators > 0 and fedgrpo.total > fedavg.total
    assert fedgrpo.adapters == fedavg.adapters + 2 * fedgrpo.n_lora * 4  # each client's evaluator adapter
    grpo_trained = estimate_memory(preset("full", method="fedgrpo", evaluator={"training": "grpo"}, **full))
    assert grpo_trained.evaluators == 0  # GRPO-trained evaluators step in micro-batches, as ``training`` counts
