"""Lockstep clients (per-row LoRA adapters) against the sequential path they replace.

Same rollouts → same per-client log-probs, losses, gradients and updates (float tolerance); the same sampling
streams → the same completions; each mode bit-reproducible; replies in the sequential format.
"""

import dataclasses
import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.federation.client import make_optimizer
from fedrl_kit.grpo import GRPOSettings, grpo_step
from fedrl_kit.speed import Scorer
from fedrl_kit.speed import batched
from fedrl_kit.speed.batched import (generate_lockstep, grpo_step_lockstep, lockstep_logps, per_row_adapters,
                                      row_groups)
from fedrl_kit.policy.engine import Policy
from fedrl_kit.rollout import per_token_logps
from fedrl_kit.runs import Run

NAMES = ["client_0", "client_1", "client_2"]


def _policy(tiny_dir):
    """A tiny policy with three adapters whose factors differ (B ≠ 0, so each adapter changes the outputs)."""
    pol = Policy.load(tiny_dir, lora_rank=4, max_new_tokens=8)
    for i, name in enumerate(NAMES):
        rng = np.random.default_rng(i)
        pol.set_state(name, {k: v + 0.3 * rng.standard_normal(v.shape).astype(np.float32)
                             for k, v in pol.get_state().items()})
    return pol


@pytest.fixture(scope="module")
def policy(tiny_dir):
    return _policy(tiny_dir)


def _rollouts(policy, sizes=(2, 2, 2), G=4):
    prompts = ["12+7=", "3*4=", "20-9=", "5+5=", "8*3=", "9-2=", "14+1="]
    out, i = {}, 0
    for name, b in zip(NAMES, sizes):
        out[name] = policy.rollout(name, prompts[i:i + b], G, seed=100 + i)
        i += b
    return out


def _trainable(policy, names):
    params = [policy.trainable(n) for n in names]
    for ps in params:  # activating one adapter freezes the others
        for p in ps:
            p.requires_grad_(True)
    return params


@pytest.mark.parametrize("sizes", [(2, 2, 2), (1, 3, 2)])  # equal groups (batched matmuls) and unequal (a loop)
def test_each_row_is_scored_by_its_own_adapter(policy, sizes):
    parts = _rollouts(policy, sizes)
    with torch.no_grad():
        together = lockstep_logps(policy.model, NAMES, [parts[n] for n in NAMES], 1.0, policy.tokenizer.pad_token_id)
        for name, lp in zip(NAMES, together):
            policy.trainable(name)
            alone = per_token_logps(policy.model, parts[name])  # [N_k, T_k]
            mask = parts[name].completion_mask.bool()
            assert lp.shape == alone.shape
            assert torch.allclose(lp[mask], alone[mask], atol=1e-5, rtol=0)
    # and the adapters really differ: client 0's rows scored by client 1's adapter give other numbers
    policy.trainable(NAMES[1])
    with torch.no_grad():
        other = per_token_logps(policy.model, parts[NAMES[0]])
    assert not torch.allclose(together[0][parts[NAMES[0]].completion_mask.bool()],
                              other[parts[NAMES[0]].completion_mask.bool()], atol=1e-3)


def test_per_row_adapters_refuse_groups_that_do_not_tile_the_rows(policy):
    with pytest.raises(ValueError, match="tile"):
        with per_row_adapters(policy.model, [("client_0", 0, 4), ("client_1", 5, 8)]):
            pass
    with pytest.raises(ValueError, match="no adapter"):
        with per_row_adapters(policy.model, row_groups(["nobody"], [4])):
            pass


@pytest.mark.parametrize("sizes,loss_type,beta,mb,buckets,split", [
    ((2, 2, 2), "dapo", 0.0, 256, 1, False),
    ((2, 2, 2), "grpo", 0.1, 256, 1, False),
    ((1, 3, 2), "dapo", 0.05, 3, 1, False),  # unequal clients, micro-batches of 3 rows per client
    # lockstep scored in passes by completion length, against the sequential one pass
    ((2, 2, 2), "dapo", 0.05, 256, 3, False),
    ((1, 3, 2), "grpo", 0.0, 3, 2, False),
    # a CPU pass budget that fits two clients, not three: a pass of two, then one (batched.packed_passes)
    ((2, 2, 2), "dapo", 0.05, 256, 1, True),
    ((1, 3, 2), "grpo", 0.0, 3, 2, True),
])
def test_lockstep_grpo_step_gives_each_client_its_sequential_losses_gradients_and_update(policy, sizes, loss_type,
                                                                                          beta, mb, buckets, split,
                                                                                          monkeypatch, tiny_dir):
    if split:  # in float64: other passes than the other cases' sum in yet another order, and Adam's division
        policy = _policy(tiny_dir)  # magnifies float32's last bits in near-zero gradients past the update check
        policy.model.double()
    parts = _rollouts(policy, sizes)
    if split:
        longest = max(parts[n].prompt_ids.shape[1] for n in NAMES) + max(parts[n].completion_ids.shape[1]
                                                                          for n in NAMES)
        rows = sorted(min(len(parts[n]), mb) for n in NAMES)
        monkeypatch.setattr(batched, "CPU_PASS_BYTES", (rows[0] + rows[1]) * longest * batched.activation_bytes(
            policy.model))
        real, seen = batched.packed_passes, []
        monkeypatch.setattr(batched, "packed_passes", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    gen = torch.Generator().manual_seed(0)
    rewards = {n: torch.randint(0, 2, (len(parts[n]),), generator=gen).float() for n in NAMES}
    settings = GRPOSettings(num_iterations=2, beta=beta, loss_type=loss_type, micro_batch_size=mb)
    if buckets > 1:
        lengths = torch.cat([parts[n].completion_mask.sum(1) for n in NAMES])
        assert len(set(lengths.tolist())) > 1  # the passes really differ in length
    start = {n: policy.get_state(n) for n in NAMES}
    mu = 0.5  # a FedProx term too: it must reach only its own client

    def prox(params):
        anchors = [p.detach().clone() + 0.01 for p in params]
        return lambda: 0.5 * mu * sum(((p - a) ** 2).sum() for p, a in zip(params, anchors))

    seq_grads, seq_diag, seq_after = {}, {}, {}
    for n in NAMES:
        params = policy.trainable(n)
        seq_diag[n] = grpo_step(policy.model, make_optimizer(params, _local()), parts[n], rewards[n], settings,
                                ref_model_ctx=policy.reference, extra_loss=prox(params),
                                on_first_grad=lambda ps, n=n: seq_grads.__setitem__(n, [p.grad.clone() for p in ps]))
        seq_after[n] = policy.get_state(n)
    for n in NAMES:
        policy.set_state(n, start[n])
    params = _trainable(policy, NAMES)
    lock_grads = {}
    diags = grpo_step_lockstep(
        policy.model, NAMES, [make_optimizer(ps, _local()) for ps in params], [parts[n] for n in NAMES],
        [rewards[n] for n in NAMES], dataclasses.replace(settings, score=Scorer(length_buckets=buckets)),
        policy.tokenizer.pad_token_id, ref_model_ctx=policy.reference,
        extra_losses=[prox(ps) for ps in params],
        on_first_grads=[lambda ps, n=n: lock_grads.__setitem__(n, [p.grad.clone() for p in ps]) for n in NAMES])
    if split:  # the first micro-batch went in two passes
        assert [len(p) for p in seen[0]] == [2, 1], seen
    for k, n in enumerate(NAMES):
        assert diags[k].keys() == seq_diag[n].keys()
        for key in seq_diag[n]:
            assert diags[k][key] == pytest.approx(seq_diag[n][key], rel=1e-5, abs=1e-6), (n, key)
        assert any(g.abs().max() > 0 for g in seq_grads[n])
        scale = max(g.abs().max().item() for g in seq_grads[n])
        worst = max((a - b).abs().max().item() for a, b in zip(seq_grads[n], lock_grads[n]))
        assert worst <= 1e-4 * scale, (n, worst, scale)  # float32 sums in another order
        after = policy.get_state(n)
        moved = max(np.abs(seq_after[n][k2] - start[n][k2]).max() for k2 in start[n])
        assert moved > 1e-3
        # Adam divides by sqrt(v): a gradient equal to float tolerance moves a factor by a little more (the
        # gradients' own check is above; on an Intel Xeon with AVX2 kernels the updates differed by 1.02e-3 and
        # 2.9e-3 of the largest move, where elements with small gradients amplify the float noise)
        assert max(np.abs(after[k2] - seq_after[n][k2]).max() for k2 in start[n]) < 5e-3 * moved


def test_packed_passes_pack_clients_in_order_within_the_budget():
    chunk = [(0, range(0, 4)), (1, range(0, 4)), (2, range(0, 2)), (3, range(0, 8)), (4, range(0, 1))]
    lengths = [(4, 6), (6, 4), (10, 10), (3, 2), (1, 4)]  # (prompt, completion) columns
    passes = batched.packed_passes(chunk, lengths, per_position=2, budget=200)
    # 0 alone: 4 × 10 × 2 = 80; 0+1 pads to prompt 6 + completion 6: 8 × 12 × 2 = 192; adding 2: 10 × 20 × 2 = 400;
    # 2 alone 80; 2+3: 10 × 20 × 2 = 400 > 200; 3 alone: 8 × 5 × 2 = 80; 3+4 pads to 3 + 4: 9 × 7 × 2 = 126
    assert [[k for k, _ in p] for p in passes] == [[0, 1], [2], [3, 4]]
    # with a budget of 190, 0+1 (192: each client alone is 10 positions, the pass 12) no longer fits
    passes = batched.packed_passes(chunk, lengths, per_position=2, budget=190)
    assert [[k for k, _ in p] for p in passes] == [[0], [1], [2], [3, 4]]
    # a client over the budget alone gets its own pass; nothing is dropped or reordered
    passes = batched.packed_passes(chunk, lengths, per_position=2, budget=1)
    assert [[k for k, _ in p] for p in passes] == [[0], [1], [2], [3], [4]]
    assert batched.packed_passes(chunk, lengths, per_position=2, budget=10 ** 9) == [chunk]


def _local():
    from fedrl_kit.federation.client import LocalSettings

    return LocalSettings(learning_rate=1e-2)


def test_lockstep_generation_draws_each_clients_own_sampling_stream(policy):
    prompts = {"client_0": ["12+7=", "3*4="], "client_1": ["20-9="], "client_2": ["5+5=", "8*3="]}
    seeds = {"client_0": 11, "client_1": 12, "client_2": 13}
    together = generate_lockstep(policy, prompts, 4, seeds)
    for name in NAMES:
        alone = policy.rollout(name, prompts[name], 4, seed=seeds[name])
        mine = together[name]
        assert mine.completions == alone.completions
        for field in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask"):
            assert torch.equal(getattr(mine, field), getattr(alone, field)), (name, field)
    # one client alone in a lockstep batch: bit for bit what Policy.rollout samples
    one = generate_lockstep(policy, {"client_1": prompts["client_0"]}, 4, {"client_1": 5})["client_1"]
    ref = policy.rollout("client_1", prompts["client_0"], 4, seed=5)
    assert torch.equal(one.completion_ids, ref.completion_ids) and one.completions == ref.completions


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


@pytest.mark.parametrize("method", ["fedavg_grpo", "fedprox_grpo"])
def test_a_lockstep_run_is_bit_reproducible_and_answers_like_the_sequential_one(tiny_dir, method):
    kw = dict(method=method, rounds=2, prompts_per_step=2, local_steps=2)
    lock = [Run(small_config(tiny_dir, client_batching="lockstep", **kw), progress=False) for _ in range(2)]
    a, b = (_strip(r.run()) for r in lock)
    assert a == b
    # each local step of each round: one generate and one GRPO step for all clients (their on_fit, composed)
    everyone = lock[0].runtime.client_ids
    assert lock[0].runtime.passes == [("fit", r, p, everyone) for r in (1, 2) for _ in range(2)
                                      for p in ("rollout", "grpo_step")]
    for k in lock[0].server.global_state:
        assert np.array_equal(lock[0].server.global_state[k], lock[1].server.global_state[k])
    seq = Run(small_config(tiny_dir, **kw), progress=False)
    s = _strip(seq.run())
    assert [(r["kind"], r["round"], r.get("client")) for r in s] == [(r["kind"], r["round"], r.get("client")) for r in a]
    # the same messages, in the same order, of the same sizes
    cut = lambda run: [{k: v for k, v in r.items()} for r in run.runtime.ledger.records]  # noqa: E731
    assert cut(seq) == cut(lock[0])
    # round 1: same batches, same streams → the same completions, hence the same rewards and near-equal losses
    for rs, rl in zip(s, a):
        if rs["kind"] == "client" and rs["round"] == 1:
            assert rs.keys() == rl.keys()
            for key in ("reward_mean", "accuracy", "completion_length", "frac_zero_std"):
                assert rs[key] == rl[key], key
            assert rs["loss"] == pytest.approx(rl["loss"], rel=1e-4, abs=1e-6)


def test_a_failing_client_is_dropped_while_the_others_step_in_lockstep(tiny_dir):
    run = Run(small_config(tiny_dir, client_batching="lockstep", fail_client="client_1@2"), progress=False)
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert [(f["client"], f["round"]) for f in failures] == [("client_1", 2)]
    assert {r["client"] for r in recs if r["kind"] == "client" and r["round"] == 2} == {"client_0", "client_2"}


def test_client_batching_is_validated(tiny_dir):
    with pytest.raises(ValueError, match="client_batching"):
        small_config(tiny_dir, client_batching="parallel")
    with pytest.raises(ValueError, match="client_batching"):
        small_config(tiny_dir, method="central_grpo", client_batching="lockstep")
    with pytest.raises(ValueError, match="client_batching"):
        Run(small_config(tiny_dir, client_batching="lockstep"), progress=False, runtime="serialising")
