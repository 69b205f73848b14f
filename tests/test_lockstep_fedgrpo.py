"""FedGRPO's expert scoring in lockstep (fedrl_kit.fedgrpo.client, "In lockstep") against the sequential path it
replaces.

The batched pass gives each expert what its own evaluator gives it alone (probabilities to float tolerance, the
same sampled and greedy answers); a whole run has the same messages, the same experts and near-equal scores;
each mode is bit-reproducible; failing and malicious clients behave as in sequential mode.
"""

import dataclasses
from functools import partial

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.federation import lockstep
from fedrl_kit.federation.lockstep import Group, together
from fedrl_kit.speed.batched import generate_lockstep, sequence_logprob_lockstep
from fedrl_kit.runs import Run
from fedrl_kit.sft import sequence_logprob

GRPO_EVALUATOR = {"training": "grpo", "grpo_steps": 2, "grpo_prompts": 2, "grpo_generations": 2, "samples": 3}
NO_GT = {"mode": "no_gt", "gt_fraction": 0.5}


def fg_config(tiny_dir, fedgrpo=None, evaluator=None, **kw):
    """A seconds-long FedGRPO run (L = 4 neighbours); the evaluators' SFT is long enough to make them differ."""
    return small_config(tiny_dir, method="fedgrpo", fedgrpo={"neighbours": 4, **(fedgrpo or {})},
                        evaluator={"sft_steps": 6, "sft_batch": 4, **(evaluator or {})}, **kw)


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def _recording(run):
    """Build ``run`` and keep every round's StepTraces (the engine drops them after the diagnostics)."""
    run.build()
    traces, inner = {}, run.spec.run_round

    def run_round(server, r):
        out = inner(server, r)
        traces[r] = list(out["trace"])
        return out

    run.spec = dataclasses.replace(run.spec, run_round=run_round)
    return traces


# ---------------------------------------------------------------- the batched pass, expert by expert

QUESTIONS = ["5+7=", "2+2=", "max(3,9)=", "12-4=", "3*3=", "7+7=", "1+8="]


@pytest.fixture(scope="module")
def sft_run(tiny_dir):
    run = Run(fg_config(tiny_dir, num_clients=4), progress=False).build()
    for c in run.clients.values():
        c.ensure_evaluator()
    return run


def test_batched_sft_scoring_gives_each_expert_its_own_probabilities(sft_run):
    """Experts with 5, 1, 0 questions and one never asking θ_k: each gets what its own answer_probabilities gives
    (rel. 1e-5), from one batched pass for the two that have pairs to score."""
    clients = list(sft_run.clients.values())
    asks = [(QUESTIONS[:5], ["12", "4", "9", "8", "99"]), (["7+7="], ["14"]),
            ([], [])]  # ME questions whose candidates had no answer: nothing to score
    group = Group([partial(c.answer_probabilities, q, a) for c, (q, a) in zip(clients, asks)]
                  + [lambda: None], clients=clients[:len(asks)] + [None])  # every question AE: θ_k not asked
    together_ = [c.result for c in group.run()]
    assert group.passes == [("sequence_logprob", [0, 1])]
    for c, (q, a), got in zip(clients[:2], asks, together_):
        alone = c.answer_probabilities(q, a)
        assert got.shape == alone.shape == (len(q),)
        np.testing.assert_allclose(got, alone, rtol=1e-5, atol=0)
    assert together_[2].shape == (0,) and together_[3] is None
    # the rows really went through their own adapters: client 0's pairs under client 1's adapter score otherwise
    other = np.exp(sequence_logprob(sft_run.policy, clients[1].adapter, *asks[0]))
    assert np.abs(other / together_[0] - 1).max() > 1e-3


def test_lockstep_sequence_logprob_cuts_chunks_across_experts(sft_run):
    """Chunks of 3 rows over 4 + 2 + 3 pairs: groups split at chunk borders, each row still under its adapter."""
    names = [c.adapter for c in sft_run.clients.values()][:3]
    pairs = {names[0]: (QUESTIONS[:4], ["12", "4", "9", "8"]), names[1]: (QUESTIONS[4:6], ["9", "14"]),
             names[2]: (QUESTIONS[4:], ["9", "14", "9"])}
    chunked = sequence_logprob_lockstep(sft_run.policy, pairs, batch_size=3)
    for name in names:
        alone = sequence_logprob(sft_run.policy, name, *pairs[name])
        np.testing.assert_allclose(chunked[name], alone, rtol=1e-6, atol=1e-6)


def test_batched_greedy_answers_are_each_experts_own(sft_run):
    clients = list(sft_run.clients.values())[:3]
    asks = [QUESTIONS[:4], QUESTIONS[4:5], QUESTIONS[2:]]
    group = Group([partial(c.greedy_answers, q) for c, q in zip(clients, asks)], clients=clients[:len(asks)])
    together_ = [c.result for c in group.run()]
    assert group.passes == [("rollout", [0, 1, 2])]
    raw = generate_lockstep(sft_run.policy, {c.adapter: q for c, q in zip(clients, asks)}, 1, None, temperature=0.0)
    for c, q, got in zip(clients, asks, together_):
        assert got == c.greedy_answers(q)
        alone = sft_run.policy.rollout(c.adapter, q, 1, seed=0, temperature=0.0)
        assert raw[c.adapter].completions == alone.completions  # the decoded texts, token for token


def test_passes_of_other_kinds_and_settings_and_the_same_adapter_go_to_separate_batches(sft_run):
    """Greedy and sampled rollouts, two policies, the same adapter twice: each batch holds only calls that one
    batched pass can answer; any client's handler (a subclass's, a stand-in's) joins the group as it is."""
    c0, c1, c2 = list(sft_run.clients.values())[:3]
    group = Group([partial(c0.greedy_answers, QUESTIONS[:2]), partial(c1.answer_probabilities, QUESTIONS[:1], ["12"]),
                   partial(c2.greedy_answers, QUESTIONS[2:3]), partial(c0.greedy_answers, QUESTIONS[3:4]),
                   lambda: ["stand-in"]], clients=[c0, c1, c2, c0, None])
    got = [c.result for c in group.run()]
    assert group.passes == [("rollout", [0, 2]), ("sequence_logprob", [1]), ("rollout", [3])]
    assert got[0] == c0.greedy_answers(QUESTIONS[:2]) and got[3] == c0.greedy_answers(QUESTIONS[3:4])
    assert got[4] == ["stand-in"]
    calls = [(0, "rollout", dict(policy=sft_run.policy, adapter="a", num_generations=1, temperature=0.0)),
             (1, "rollout", dict(policy=object(), adapter="b", num_generations=1, temperature=0.0)),
             (2, "rollout", dict(policy=sft_run.policy, adapter="c", num_generations=2, temperature=0.0)),
             (3, "rollout", dict(policy=sft_run.policy, adapter="d", num_generations=1, temperature=None))]
    assert [[k for k, _ in ms] for _, ms in lockstep.batches(calls)] == [[0], [1], [2], [3]]


def test_a_member_that_raises_leaves_the_group_and_the_others_finish(sft_run):
    c0, c1 = list(sft_run.clients.values())[:2]

    def raises():
        raise ValueError("a bad client")
    calls = Group([partial(c0.greedy_answers, QUESTIONS[:2]), raises, partial(c1.greedy_answers, QUESTIONS[:2])],
                  clients=[c0, None, c1]).run()
    assert calls[0].result == c0.greedy_answers(QUESTIONS[:2]) and calls[2].result == c1.greedy_answers(QUESTIONS[:2])
    assert calls[1].error.startswith("ValueError: a bad client")
    with pytest.raises(RuntimeError, match="a bad client"):
        together([raises], [None])


# ---------------------------------------------------------------- GRPO-trained evaluators: sampled answers


def test_grpo_evaluators_draw_the_same_samples_from_their_own_streams(tiny_dir):
    """Each expert's samples come from its own generator, seeded as sequentially (sampling_plan): the same
    completions as its own Policy.rollout, hence the same answer shares, exactly."""
    run = Run(fg_config(tiny_dir, fedgrpo=NO_GT, evaluator=GRPO_EVALUATOR), progress=False).build()
    clients = list(run.clients.values())
    asks = [(QUESTIONS[:3] + QUESTIONS[:1], ["12", "4", "9", "7"]), (QUESTIONS[3:4], ["8"]),
            (QUESTIONS[1:6], ["4", "9", "8", "9", "14"])]
    group = Group([partial(c.answer_probabilities, q, a) for c, (q, a) in zip(clients, asks)],
                  clients=clients[:len(asks)])
    together_ = [c.result for c in group.run()]
    assert group.passes == [("rollout", [0, 1, 2])]
    plans = {c.adapter: c.sampling_plan(q) for c, (q, _) in zip(clients, asks)}
    assert len({seed for _, seed in plans.values()}) == 3  # three streams
    raw = generate_lockstep(run.policy, {a: d for a, (d, _) in plans.items()}, 3, {a: s for a, (_, s) in plans.items()})
    for c, (q, a), got in zip(clients, asks, together_):
        distinct, seed = plans[c.adapter]
        alone = run.policy.rollout(c.adapter, distinct, 3, seed=seed)
        assert raw[c.adapter].completions == alone.completions
        np.testing.assert_array_equal(got, c.answer_probabilities(q, a))
        assert np.allclose(got * 3, np.round(got * 3))  # shares of 3 samples


# ---------------------------------------------------------------- whole runs: lockstep against sequential


def test_a_lockstep_fedgrpo_run_asks_the_same_experts_and_is_bit_reproducible(tiny_dir):
    kw = dict(rounds=2, fedgrpo={"malicious": 1})
    lock = [Run(fg_config(tiny_dir, client_batching="lockstep", **kw), progress=False) for _ in range(2)]
    seq = Run(fg_config(tiny_dir, **kw), progress=False)
    traces = {id(r): _recording(r) for r in (*lock, seq)}
    a, b, s = (_strip(r.run()) for r in (*lock, seq))
    assert a == b  # lockstep reproduces itself bit for bit
    for k in lock[0].server.global_state:
        assert np.array_equal(lock[0].server.global_state[k], lock[1].server.global_state[k])
    # the same messages (kinds, order, senders, receivers, sizes, keys) as the sequential run
    assert seq.runtime.ledger.records == lock[0].runtime.ledger.records
    kinds = {r["kind"] for r in seq.runtime.ledger.records}
    assert {"competence", "competence_result", "score", "score_result"} <= kinds
    assert [c.gate_log for c in seq.clients.values()] == [c.gate_log for c in lock[0].clients.values()]
    # round 1: the same competence (float tolerance), the same experts; scores to float tolerance
    ts, tl = traces[id(seq)][1], traces[id(lock[0])][1]
    for x, y in zip(ts, tl):
        np.testing.assert_allclose(y.competence, x.competence, rtol=1e-5, atol=1e-12)
        np.testing.assert_array_equal(y.experts, x.experts)
        for i in range(len(x.questions)):
            np.testing.assert_array_equal(y.scorers[i], x.scorers[i])
            np.testing.assert_allclose(y.scores[i], x.scores[i], rtol=1e-5, atol=1e-9)
    assert sum(len(s_) for x in ts for s_ in x.scorers) > 0
    # the records differ from the sequential ones at float level only
    assert [(r["kind"], r["round"], r.get("client")) for r in s] == [(r["kind"], r["round"], r.get("client"))
                                                                    for r in a]
    for rs, rl in zip(s, a):
        assert rs.keys() == rl.keys()
        for key, v in rs.items():
            if isinstance(v, float):
                assert rl[key] == pytest.approx(v, rel=1e-3, abs=1e-6), (rs["client"], key)
            else:
                assert rl[key] == v, key


def _score_replies(run):
    """Every score reply of the run with its request: [(round, client, request payload, reply payload)]."""
    asked, out = {}, []
    for m in run.runtime.messages:
        if m.kind == "score":
            asked[m.receiver] = m.payload
        elif m.kind == "score_result":
            out.append((m.round, m.sender, asked[m.sender], m.payload["scores"]))
    return out


@pytest.mark.parametrize("evaluator, fedgrpo", [
    (GRPO_EVALUATOR, NO_GT),  # sampled answers
    ({}, {"competence": "greedy", "me_score": "agreement", **NO_GT}),  # greedy answers
])
def test_sampled_and_greedy_experts_send_the_sequential_scores(tiny_dir, evaluator, fedgrpo):
    """Experts that sample (GRPO evaluators) or decode greedily answer with the very scores they send in sequential
    mode: the same draws from the same streams give the same answers (see fedrl_kit.fedgrpo.client, "In lockstep",
    for when a draw at a token boundary could differ)."""
    runs = [Run(fg_config(tiny_dir, base="data/base", rounds=2, fedgrpo=fedgrpo, evaluator=evaluator,
                          client_batching=b, prompt_pass="per_row", generation_loop="hf"), progress=False).build()
            for b in ("sequential", "lockstep")]  # the per-row passes and generate that lockstep batches
    for r in runs:  # the pretrained base: its evaluators answer, so the scores are not all 0
        r.runtime.keep_messages = True
    seq, lock = (_strip(r.run()) for r in runs)
    replies = [_score_replies(r) for r in runs]
    assert replies[0] == replies[1]
    assert len({v for *_, scores in replies[0] for row in scores for v in row}) > 1
    competence = [[m.payload for m in r.runtime.messages if m.kind == "competence_result"] for r in runs]
    assert competence[0] == competence[1] and any(v > 0 for p in competence[0] for v in p["correct"])
    assert seq == lock  # hence the whole run: the same advantages, updates and records
    if evaluator:
        assert all("grpo_reward_last" in c.sft_metrics for c in runs[1].clients.values())


# ---------------------------------------------------------------- failing and malicious clients


def test_failing_and_malicious_clients_in_lockstep_are_dropped_and_lie_as_in_sequential(tiny_dir):
    kw = dict(rounds=2, fail_client="client_1@2", fedgrpo={"malicious": 1})  # client_2 lies
    runs = [Run(fg_config(tiny_dir, client_batching=b, **kw), progress=False).build() for b in ("sequential",
                                                                                              "lockstep")]
    for r in runs:
        r.runtime.keep_messages = True
    recs = [_strip(r.run()) for r in runs]
    fails = [[(f["client"], f["round"], f["message"], f["reason"]) for f in rec if f["kind"] == "failure"]
             for rec in recs]
    assert fails[0] == fails[1] and [f[:2] for f in fails[1]] == [("client_1", 2)]
    assert not [m for m in runs[1].runtime.messages if m.round == 2 and m.sender == "client_1"]
    seq, lock = (_score_replies(r) for r in runs)
    assert [x[:3] for x in seq] == [x[:3] for x in lock]
    lies = 0
    for (rnd, cid, request, s), (_, _, _, l) in zip(seq, lock):
        np.testing.assert_allclose(l, s, rtol=1e-5, atol=1e-9)
        if cid == "client_2":  # its reply is 1 − its honest scores (flip), recomputed here alone
            client = runs[1].clients[cid]
            client.malicious = False
            try:
                honest = client.on_score(rnd, request)["scores"]
            finally:
                client.malicious = True
            np.testing.assert_allclose(l, 1 - np.array(honest), rtol=1e-5, atol=1e-9)
            lies += 1
    assert lies


def test_a_lockstep_group_that_raises_drops_its_clients_for_the_round(tiny_dir, monkeypatch):
    """The batched call is one unit: if it raises, every client in it fails with that error, the round goes on
    without them, and the next round asks them again."""
    real = lockstep.BATCHED["sequence_logprob"]

    def broken(calls):
        if broken.calls == 0:
            broken.calls += 1
            raise RuntimeError("the batched pass broke")
        return real.run(calls)

    broken.calls = 0
    monkeypatch.setitem(lockstep.BATCHED, "sequence_logprob", lockstep.Batched(real.key, broken))
    run = Run(fg_config(tiny_dir, rounds=2, client_batching="lockstep"), progress=False).build()
    recs = run.run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert [(f["client"], f["round"], f["message"], f["reason"]) for f in failures] == \
        [(c, 1, "competence", "raised") for c in run.runtime.client_ids]
    assert all("the batched pass broke" in f["error"] for f in failures)
    assert not [r for r in run.runtime.ledger.records if r["round"] == 1 and r["kind"] == "score"]  # no experts left
    assert [r for r in run.runtime.ledger.records if r["round"] == 2 and r["kind"] == "score_result"]  # round 2: again


# ---------------------------------------------------------------- settings


def test_lockstep_is_accepted_for_fedgrpo_and_refused_for_its_baselines(tiny_dir):
    assert fg_config(tiny_dir, client_batching="lockstep").client_batching == "lockstep"
    for method in ("fedpetuning_sft", "dpsda_grpo", "dpsda_sft"):
        with pytest.raises(ValueError, match=rf"client_batching must be \"sequential\" for method '{method}'.*"
                                             rf"{method}"):
            small_config(tiny_dir, method=method, client_batching="lockstep")
    with pytest.raises(ValueError, match="client_batching"):
        Run(fg_config(tiny_dir, client_batching="lockstep"), progress=False, runtime="serialising")
