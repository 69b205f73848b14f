"""Lockstep clients for PubSwap and FedMOA against the sequential path they replace.

Whole runs: the same ledger, round 1's rewards, accuracy and public correctness equal, losses, weights and λ
to float tolerance, each mode bit-reproducible, the batched handlers really used. One batched PubSwap public
step against each client's own ``grpo_step`` on the same rollouts. Failures: a faulty client is dropped while the
others step in lockstep; a raising batched group drops all of its clients. Config validation.
"""

from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit import seeding
from fedrl_kit.federation import lockstep
from fedrl_kit.federation.lockstep import LockstepRuntime, together
from fedrl_kit.pubswap.method import sample_public_batch, swap_groups
from fedrl_kit.pubswap.swap import SWAP_RULES
from fedrl_kit.runs import Run

ROOT = Path(__file__).resolve().parents[1]
BASE = str(ROOT / "data" / "base")  # the committed base: mixed rewards, so groups have advantages and Balanced swaps
BASE_MOA = str(ROOT / "data" / "base_moa")
PUBSWAP_KINDS = ("private_step", "public_generate", "public_step")
PUBSWAP_PASSES = (("private_step", "rollout"), ("private_step", "grpo_step"), ("public_generate", "rollout"),
                  ("public_step", "grpo_step"))  # a round of τ = τ_swap = 2: one private, one public step


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def _pubswap(method, **kw):
    base = dict(method=method, rounds=2, local_steps=2, pubswap={"period": 2}, num_generations=4, prompts_per_step=2,
                max_new_tokens=16)
    return small_config(BASE, **{**base, **kw})


def _moa(**kw):
    base = dict(method="fedmoa", world="families", num_clients=3, n_train=60, n_test=3, n_aux=9, rounds=2,
                local_steps=2, prompts_per_step=2, num_generations=4, max_new_tokens=16,
                fedmoa={"eval_local": False, "validate": False})
    return small_config(BASE_MOA, **{**base, **kw})


def _passes(run, kinds=None):
    """The batched passes of a lockstep run: (message kind, round, pass kind, client ids), in order."""
    return [p for p in run.runtime.passes if kinds is None or p[0] in kinds]


def _spy_probe(run):
    """Per client, the drift-probe calls it makes, in order: ("grad", ‖g‖) and ("step", step, kind, α per prompt)."""
    calls: dict[str, list] = {}
    probe = run.probe
    step_done, grad_catcher = probe.step_done, probe.grad_catcher

    def spy_step_done(cid, step, kind, state, diag, replacement_per_prompt=None):
        calls.setdefault(cid, []).append(("step", step, kind, None if replacement_per_prompt is None
                                          else [float(x) for x in replacement_per_prompt]))
        return step_done(cid, step, kind, state, diag, replacement_per_prompt=replacement_per_prompt)

    def spy_grad_catcher(cid):
        catch = grad_catcher(cid)

        def spy(params):
            calls.setdefault(cid, []).append(("grad", float(torch.sqrt(sum((p.grad ** 2).sum() for p in params)))))
            return catch(params)
        return spy
    probe.step_done, probe.grad_catcher = spy_step_done, spy_grad_catcher
    return calls


def _run(cfg, spy_probe=False):
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    probe_calls = _spy_probe(run) if spy_probe else None
    return run, _strip(run.run()), probe_calls


def _replies(run, kind, round):
    """client id → the payload of its ``kind`` reply in ``round`` (in message order)."""
    return [(m.sender, m.payload) for m in run.runtime.messages if m.kind == f"{kind}_result" and m.round == round]


def _same_runs(a, b):
    """Two runs are bit-identical: records, global adapter, every message's payload."""
    (run_a, rec_a, _), (run_b, rec_b, _) = a, b
    assert rec_a == rec_b
    for k in run_a.server.global_state:
        assert np.array_equal(run_a.server.global_state[k], run_b.server.global_state[k])
    assert run_a.runtime.ledger.records == run_b.runtime.ledger.records
    for ma, mb in zip(run_a.runtime.messages, run_b.runtime.messages, strict=True):
        if ma.direction == "up" and ma.kind not in ("fit_end_result", "fit_result"):  # adapters: compared above
            assert ma.payload == mb.payload


# -- PubSwap ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["pubswap_random", "pubswap_balanced"])
def test_a_lockstep_pubswap_run_is_bit_reproducible_and_answers_like_the_sequential_one(method):
    lock = [_run(_pubswap(method, client_batching="lockstep", trace_drift=True), spy_probe=True) for _ in range(2)]
    assert isinstance(lock[0][0].runtime, LockstepRuntime)
    everyone = ["client_0", "client_1", "client_2"]
    # every model pass of the step messages was one batched pass for all three clients, in the round's order
    assert _passes(lock[0][0]) == [(kind, r, p, everyone) for r in (1, 2) for kind, p in PUBSWAP_PASSES]
    _same_runs(lock[0], lock[1])
    seq_run, seq, seq_probe = _run(_pubswap(method, trace_drift=True), spy_probe=True)
    (lock_run, lk, lock_probe) = lock[0]
    # the same messages, in the same order, of the same sizes (public texts included)
    assert seq_run.runtime.ledger.records == lock_run.runtime.ledger.records
    assert [(r["kind"], r["round"], r.get("client"), r.get("step")) for r in seq] == \
        [(r["kind"], r["round"], r.get("client"), r.get("step")) for r in lk]
    # round 1: same batches and streams → the same private completions and rewards, the same public responses and
    # correctness, hence the same swap; losses to float tolerance
    assert _replies(seq_run, "private_step", 1) == _replies(lock_run, "private_step", 1)
    gen_seq, gen_lock = _replies(seq_run, "public_generate", 1), _replies(lock_run, "public_generate", 1)
    assert [c for c, _ in gen_seq] == everyone and gen_seq == gen_lock
    correct = np.array([p["correct"] for _, p in gen_seq])  # [N, b, K]
    assert 0 < correct.mean() < 1  # mixed rewards: the swap and the advantages have something to work on
    assert _replies(seq_run, "public_step", 1) == _replies(lock_run, "public_step", 1)
    for rs, rl in zip(seq, lk):
        if rs["kind"] == "client" and rs["round"] == 1:
            assert rs.keys() == rl.keys()
            for key in ("reward_mean", "reward_std", "accuracy", "completion_length", "frac_zero_std",
                        "replacement_fraction", "public_reward_mean", "public_reward_std", "public_frac_zero_std"):
                assert rs[key] == rl[key], key
            assert rs["loss"] == pytest.approx(rl["loss"], rel=1e-4, abs=1e-6)
        if rs["kind"] == "drift" and rs["round"] == 1:  # the probe saw the same steps, adapters to float tolerance
            assert rs.keys() == rl.keys()
            for key, value in rs.items():
                assert rl[key] == (value if isinstance(value, (str, list)) else pytest.approx(value, rel=1e-3)), key
    # each client made the same probe calls in the same order (the interleaving across clients differs: in lockstep
    # every client's gradient is caught after the one shared backward pass); first gradients to float tolerance
    assert seq_probe.keys() == lock_probe.keys()
    for cid in seq_probe:
        assert [c[0] for c in seq_probe[cid]] == [c[0] for c in lock_probe[cid]] == ["grad", "step"] * 4
        for cs, cl in zip(seq_probe[cid][:4], lock_probe[cid][:4]):  # round 1
            assert cs == (cl if cs[0] == "step" else ("grad", pytest.approx(cl[1], rel=1e-4)))


def _public_step_setup(run, method):
    """Round 1's public step 2a–2c for every client of a built run: the clients after ``fit_begin`` and
    ``public_generate`` (run sequentially) and their ``public_step`` payloads."""
    cfg = run.config
    clients = [run.clients[cid] for cid in sorted(run.clients)]
    for c in clients:
        c.on_fit_begin(1, {"adapter": run.server.global_state})
    batch = sample_public_batch(run.world.public, cfg.prompts_per_step, cfg.seed, 1, 0)
    ask = {"step": 1, "batch": batch}
    generated = [c.on_public_generate(1, ask) for c in clients]
    groups = swap_groups(SWAP_RULES[method.removeprefix("pubswap_")], generated, cfg.num_generations,
                         seeding.rng("pubswap/swap", cfg.seed, 1, 0))
    return clients, ask, generated, [{**ask, **g} for g in groups]


class _GradProbe:
    """A stand-in drift probe: keeps each client's first-epoch gradient and its public step's diagnostics."""

    def __init__(self):
        self.grads, self.diags = {}, {}

    def grad_catcher(self, cid):
        return lambda params: self.grads.__setitem__(cid, [p.grad.clone() for p in params])

    def step_done(self, cid, step, kind, state, diag, replacement_per_prompt=None):
        self.diags[cid] = (kind, dict(diag), list(replacement_per_prompt))


@pytest.mark.parametrize("method", ["pubswap_random", "pubswap_balanced"])
def test_a_batched_public_step_gives_each_client_its_sequential_loss_gradient_and_update(method):
    # one per-row scoring pass on both sides (sequential clients would otherwise share each prompt's pass, and
    # length buckets cut the rows of one client alone or of all three: another order of float sums, which Adam's
    # division by sqrt(v) magnifies in the update)
    run = Run(_pubswap(method, rounds=1, prompt_pass="per_row", length_buckets=1), progress=False).build()
    clients, ask, generated, payloads = _public_step_setup(run, method)
    policy = run.policy
    # public_generate in lockstep: the same responses and correctness, the same token ids kept for the step
    own = {c.cid: c._generated for c in clients}
    assert together([partial(c.on_public_generate, 1, ask) for c in clients], clients) == generated
    for c in clients:
        for field in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask"):
            assert torch.equal(getattr(c._generated, field), getattr(own[c.cid], field)), (c.cid, field)
    assert any(f > 0 for p in payloads for f in np.mean(np.asarray(p["own_index"]) < 0, axis=1))  # swapped rows
    start = {c.cid: policy.get_state(c.cid) for c in clients}

    def public_step(batched: bool):
        probe = _GradProbe()
        for c in clients:  # the same starting point: adapter, fresh optimiser, own responses, no public steps yet
            policy.set_state(c.cid, start[c.cid])
            c.optimizer, c._generated, c._public, c.probe = None, own[c.cid], [], probe
        if batched:
            group = lockstep.Group([partial(c.on_public_step, 1, p) for c, p in zip(clients, payloads)],
                                   clients=clients)
            calls = group.run()
            assert group.passes == [("grpo_step", [0, 1, 2])]  # one GRPO step for the three clients
            replies = [c.result for c in calls]
        else:
            replies = [c.on_public_step(1, p) for c, p in zip(clients, payloads)]
        return replies, probe, {c.cid: policy.get_state(c.cid) for c in clients}

    seq_replies, seq, seq_after = public_step(batched=False)
    lock_replies, lock, lock_after = public_step(batched=True)
    assert seq_replies == lock_replies
    for c in clients:
        kind, diag, alpha = seq.diags[c.cid]
        assert (kind, alpha) == lock.diags[c.cid][0::2] and kind == "public"
        assert diag.keys() == lock.diags[c.cid][1].keys()
        for key in diag:
            assert lock.diags[c.cid][1][key] == pytest.approx(diag[key], rel=1e-5, abs=1e-6), (c.cid, key)
        assert any(g.abs().max() > 0 for g in seq.grads[c.cid])
        scale = max(g.abs().max().item() for g in seq.grads[c.cid])
        worst = max((a - b).abs().max().item() for a, b in zip(seq.grads[c.cid], lock.grads[c.cid]))
        assert worst <= 1e-4 * scale, (c.cid, worst, scale)  # float32 sums in another order
        moved = max(np.abs(seq_after[c.cid][k] - start[c.cid][k]).max() for k in start[c.cid])
        assert moved > 1e-4
        # Adam divides by sqrt(v): a gradient equal to float tolerance moves a factor by a little more (the
        # gradients' own check is above; on an Intel Xeon with AVX2 kernels the updates differed by 1.02e-3 and
        # 2.9e-3 of the largest move, where elements with small gradients amplify the float noise)
        assert max(np.abs(lock_after[c.cid][k] - seq_after[c.cid][k]).max() for k in start[c.cid]) < 5e-3 * moved


def test_a_failing_pubswap_client_is_dropped_while_the_others_step_in_lockstep(tiny_dir):
    cfg = small_config(tiny_dir, method="pubswap_balanced", local_steps=2, client_batching="lockstep",
                       fail_client="client_1@2")
    run = Run(cfg, progress=False)
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert [(f["client"], f["round"], f["message"], f["reason"]) for f in failures] == \
        [("client_1", 2, "fit_begin", "raised")]
    assert {r["client"] for r in recs if r["kind"] == "client" and r["round"] == 2} == {"client_0", "client_2"}
    assert _passes(run) == [(kind, 1, p, ["client_0", "client_1", "client_2"]) for kind, p in PUBSWAP_PASSES] + \
        [(kind, 2, p, ["client_0", "client_2"]) for kind, p in PUBSWAP_PASSES]


def test_a_raising_lockstep_group_drops_all_its_clients_for_the_round(monkeypatch, tiny_dir):
    real = lockstep.BATCHED["grpo_step"]

    def broken(calls):  # the round's second GRPO pass is its public step's
        broken.calls += 1
        if broken.calls == 2:
            raise RuntimeError("the batched public step failed")
        return real.run(calls)
    broken.calls = 0
    monkeypatch.setitem(lockstep.BATCHED, "grpo_step", lockstep.Batched(real.key, broken))
    run = Run(small_config(tiny_dir, method="pubswap_random", rounds=1, local_steps=2, client_batching="lockstep"),
              progress=False)
    recs = run.build().run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert [(f["client"], f["message"], f["reason"]) for f in failures] == \
        [(cid, "public_step", "raised") for cid in ("client_0", "client_1", "client_2")]
    assert all("the batched public step failed" in f["error"] for f in failures)
    assert not [r for r in recs if r["kind"] == "client"]
    assert not [r for r in run.runtime.ledger.records if r["kind"] == "fit_end"]  # nobody left in the round
    for k, v in run.initial_state.items():  # every client failed: the global adapter is kept
        assert np.array_equal(run.server.global_state[k], v)


# -- FedMOA ----------------------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:fedmoa.setting")
def test_a_lockstep_fedmoa_run_is_bit_reproducible_and_answers_like_the_sequential_one():
    lock = [_run(_moa(client_batching="lockstep")) for _ in range(2)]
    everyone = ["client_0", "client_1", "client_2"]
    for run, _, _ in lock:  # per local step one generate and one GRPO step for all (eq. 8's pass per client)
        assert _passes(run) == [("fit", r, p, everyone) for r in (1, 2) for _ in range(2) for p in ("rollout",
                                                                                                     "grpo_step")]
    _same_runs(lock[0], lock[1])
    for (_, a), (_, b) in zip(_replies(lock[0][0], "fit", 2), _replies(lock[1][0], "fit", 2), strict=True):
        assert a["weights"] == b["weights"]
    seq_run, seq, _ = _run(_moa())
    lock_run, lk, _ = lock[0]
    assert seq_run.runtime.ledger.records == lock_run.runtime.ledger.records
    assert [(r["kind"], r["round"], r.get("client")) for r in seq] == [(r["kind"], r["round"], r.get("client"))
                                                                        for r in lk]
    moved = 0.0
    for rs, rl in zip(seq, lk):
        if rs["kind"] != "client" or rs["round"] != 1 or rs["client"] == "server":
            continue
        assert rs.keys() == rl.keys()
        names = [k.removeprefix("w/") for k in rs if k.startswith("w/")]
        # the same completions: every reward component, accuracy and length equal
        for key in [f"reward/{n}" for n in names] + ["accuracy", "completion_length", "frac_zero_std"]:
            assert rs[key] == rl[key], key
        # step 0 measures g on the same rollouts with the same adapter: λ and the first weights as in sequential
        assert rl["lam"] == pytest.approx(rs["lam"], rel=1e-9)
        for n in names:
            assert rl[f"w@0/{n}"] == rs[f"w@0/{n}"]
            # step 1's g comes from adapters that one update apart may differ in the last bits
            assert rl[f"w@1/{n}"] == pytest.approx(rs[f"w@1/{n}"], rel=1e-6, abs=1e-9)
            assert rl[f"w/{n}"] == pytest.approx(rs[f"w/{n}"], rel=1e-6, abs=1e-9)
        assert rl["loss"] == pytest.approx(rs["loss"], rel=1e-4, abs=1e-6)
        moved = max(moved, rs["w_move"])
    assert moved > 1e-4  # the weights really moved (λ on), so the comparison of their path means something
    for (cs, a), (cl, b) in zip(_replies(seq_run, "fit", 1), _replies(lock_run, "fit", 1), strict=True):
        assert cs == cl and a["reward_names"] == b["reward_names"] and a["family"] == b["family"]
        assert b["weights"] == pytest.approx(a["weights"], rel=1e-6, abs=1e-9)


# -- config ----------------------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:fedmoa.setting")
def test_lockstep_is_accepted_for_pubswap_and_fedmoa_and_refused_elsewhere(tiny_dir):
    for method in ("pubswap_random", "pubswap_balanced", "fedmoa"):
        cfg = small_config(tiny_dir, method=method, local_steps=2, client_batching="lockstep")
        assert cfg.client_batching == "lockstep"
        for runtime in ("serialising", lambda clients, **kw: None):  # the serialising and Flower runtimes
            with pytest.raises(ValueError, match="client_batching"):
                Run(cfg, progress=False, runtime=runtime)
        vllm = dict(local_steps=2, rollout_backend="vllm", device="cuda")  # validated as data: no GPU is needed here
        assert small_config(tiny_dir, method=method, **vllm).rollout_backend == "vllm"
        with pytest.raises(ValueError, match="client_batching"):
            small_config(tiny_dir, method=method, client_batching="lockstep", **vllm)
    for method in ("dpsda_grpo", "central_grpo"):
        with pytest.raises(ValueError, match="client_batching.*pubswap_balanced, pubswap_noswap, fedgrpo, fedmoa"):
            small_config(tiny_dir, method=method, client_batching="lockstep")
