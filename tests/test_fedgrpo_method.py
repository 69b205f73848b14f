"""FedGRPO on the engine (fedrl_kit.methods.fedgrpo) and its baselines (fedgrpo_baselines), end to end.

Runs use the untrained tiny policy (``tiny_dir``) and a seconds-long config; unit tests of the
clients use hand-set evaluator answers so that every expected value is known in advance.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.federation.runtime import SERVER
from fedrl_kit.methods import fedgrpo
from fedrl_kit.runs import Interrupted, Run, load_records

FAST = dict(neighbours=4, evaluator_sft_steps=2, evaluator_sft_batch=4)


def fg_config(tiny_dir, **kw):
    extra = dict(FAST)
    extra.update(kw.pop("extra", {}))
    return small_config(tiny_dir, method="fedgrpo", extra=extra, **kw)


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("key, value", [
    ("num_experts", 0), ("num_experts", 4), ("neighbours", 9), ("neighbours", 0), ("group_reward", "eq9"),
    ("group_coef", -1.0), ("format_coef", float("nan")), ("scale_rewards", "yes"), ("mode", "gt"),
    ("gt_fraction", 1.5), ("me_score", "logit"), ("malicious", 4), ("malicious_kind", "swap"),
    ("robust", "max"), ("trim", 0.5), ("evaluator_sft_steps", -1), ("evaluator_sft_batch", 0),
    ("evaluator_lr", 0.0), ("encoder", "bert"), ("encoder_layer", -2), ("competence", "soft"),
])
def test_bad_extra_settings_raise_naming_the_key(tiny_dir, key, value):
    with pytest.raises(ValueError, match=key):
        fg_config(tiny_dir, extra={key: value})


def test_unknown_extra_key_and_robust_needs_paper_variant(tiny_dir):
    with pytest.raises(ValueError, match="num_expert"):
        fg_config(tiny_dir, extra={"num_expert": 2})
    with pytest.raises(ValueError, match="robust"):
        fg_config(tiny_dir, extra={"robust": "median", "group_reward": "official"})
    st = fedgrpo.settings(fg_config(tiny_dir, extra={"robust": "median"}))
    assert st.num_experts == 2 and st.group_coef == 8.0 and st.format_coef == 1.0 and st.robust == "median"


# ---------------------------------------------------------------- clients: competence and the AE/ME gate


class _Stub:
    """Just enough of the Policy for a client whose evaluator answers are set by hand."""


def _client(mode="with_gt", malicious=False, me_score="agreement", competence="greedy", **extra):
    import datasets

    data = datasets.Dataset.from_list([{"prompt": "1+1=", "answer": "2", "topic": "add", "difficulty": 1},
                                       {"prompt": "max(3,4)=", "answer": "4", "topic": "max", "difficulty": 1}])
    cfg_extra = dict(mode=mode, me_score=me_score, competence=competence, **extra)

    class Cfg:
        method, num_clients, n_aux, extra = "fedgrpo", 3, 100, cfg_extra

    c = fedgrpo.FedGRPOClient("client_0", 0, data, _Stub(), fedgrpo.settings(Cfg), seed=0, malicious=malicious)
    c.sft_metrics = {"sft_loss": 0.0}  # "trained": the evaluator's answers come from the table below
    table = {"1+1=": "2", "max(3,4)=": "3", "2+2=": "5", "7-2=": "5"}
    c.greedy_answers = lambda qs: [table.get(q) for q in qs]
    return c


def test_competence_is_the_evaluators_accuracy_on_the_exemplars():
    c = _client()
    out = c.on_competence(1, {"questions": ["1+1=", "max(3,4)=", "2+2=", "9*9="],
                              "answers": ["2", "4", "4", "81"]})
    assert out == {"correct": [1.0, 0.0, 0.0, 0.0]}  # right, wrong, wrong, no answer


def test_gate_ae_on_held_questions_me_elsewhere_and_no_gt_mode():
    cands = ["<answer>2</answer>", "3", "<answer></answer>", "x"]
    payload = {"step": 0, "questions": ["1+1=", "7-2="], "candidates": [cands, ["5", "4", "<answer>5</answer>", ""]]}
    with_gt = _client("with_gt").on_score(1, payload)["scores"]
    assert with_gt[0] == [1.0, 0.0, 0.0, 0.0]  # AE: exact check against the trusted answer 2
    assert with_gt[1] == [1.0, 0.0, 1.0, 0.0]  # ME (agreement): the evaluator's own greedy answer is 5
    no_gt = _client("no_gt").on_score(1, payload)["scores"]
    assert no_gt[0] == [1.0, 0.0, 0.0, 0.0]  # ME: its greedy answer to 1+1= is also 2
    assert no_gt[1] == with_gt[1]
    # where AE and ME disagree the gate decides: held "max(3,4)=" (truth 4, evaluator says 3)
    p2 = {"step": 0, "questions": ["max(3,4)="], "candidates": [["4", "3"]]}
    assert _client("with_gt").on_score(1, p2)["scores"] == [[1.0, 0.0]]
    assert _client("no_gt").on_score(1, p2)["scores"] == [[0.0, 1.0]]


def test_malicious_client_flips_its_scores():
    payload = {"step": 0, "questions": ["1+1="], "candidates": [["2", "3", "2"]]}
    assert _client(malicious=True).on_score(1, payload)["scores"] == [[0.0, 1.0, 0.0]]
    rnd = _client(malicious=True, malicious_kind="random").on_score(1, payload)["scores"][0]
    assert all(0.0 <= v < 1.0 for v in rnd) and rnd != [1.0, 0.0, 1.0]


def test_me_probability_is_the_evaluators_probability_of_the_answer(tiny_dir):
    run = Run(fg_config(tiny_dir, extra={"mode": "no_gt"}), progress=False).build()
    client = run.runtime.clients["client_0"]
    from fedrl_kit.sft import sequence_logprob

    cands = ["<answer>12</answer>", "12", "7", "no answer here"]
    scores = client.on_score(1, {"step": 0, "questions": ["5+7="], "candidates": [cands]})["scores"][0]
    p12, p7 = np.exp(sequence_logprob(run.policy, client.adapter, ["5+7=", "5+7="], ["12", "7"]))
    np.testing.assert_allclose(scores, [p12, p12, p7, 0.0], rtol=1e-6)
    assert 0 < p12 < 1 and client.adapter != "global"
    soft = client.on_competence(1, {"questions": ["5+7=", "2+2="], "answers": ["12", "4"]})["correct"]
    np.testing.assert_allclose(soft, np.exp(sequence_logprob(run.policy, client.adapter, ["5+7=", "2+2="],
                                                             ["12", "4"])), rtol=1e-6)


def test_ground_truth_assignment_follows_topic_holdings():
    import datasets

    public = datasets.Dataset.from_list([{"prompt": f"q{i}", "answer": "1", "topic": "add" if i % 2 else "max",
                                          "difficulty": 1} for i in range(40)])
    parts = [datasets.Dataset.from_list([{"prompt": "a", "answer": "1", "topic": "add", "difficulty": 1}]),
             datasets.Dataset.from_list([{"prompt": "b", "answer": "1", "topic": "max", "difficulty": 1}])]
    held = fedgrpo.assign_ground_truth(public, parts, 1.0, seed=0)
    assert sorted(held[0] + held[1]) == list(range(40))
    assert all(i % 2 == 1 for i in held[0]) and all(i % 2 == 0 for i in held[1])
    assert fedgrpo.assign_ground_truth(public, parts, 0.0, seed=0) == [[], []]
    half = fedgrpo.assign_ground_truth(public, parts, 0.5, seed=0)
    assert 8 <= len(half[0] + half[1]) <= 32


# ---------------------------------------------------------------- runs


def test_fedgrpo_run_ledger_holds_only_texts_down_and_scalars_up(tiny_dir):
    run = Run(fg_config(tiny_dir, rounds=2), progress=False).build()
    run.runtime.keep_messages = True
    private = {p for c in run.runtime.clients.values() for p in c.prompts}
    private -= set(run.world.public["prompt"])  # D_s questions a client also holds are the server's own
    adapter_keys = set(run.server.global_state)
    recs = run.run()
    assert run.runtime.messages, "no messages were exchanged"

    def leaves(x):
        if isinstance(x, dict):
            for k, v in x.items():
                yield k
                yield from leaves(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                yield from leaves(v)
        else:
            yield x

    kinds = set()
    for m in run.runtime.messages:
        kinds.add((m.kind, m.direction))
        vals = list(leaves(m.payload))
        assert not any(isinstance(v, np.ndarray) for v in vals), f"{m.kind} carries an array"
        assert not adapter_keys & {v for v in vals if isinstance(v, str)}, f"{m.kind} carries adapter tensors"
        if m.direction == "up":
            assert set(m.payload) <= {"correct", "scores"}
            nums = [v for v in vals if v not in ("correct", "scores")]
            assert all(isinstance(v, float) for v in nums), f"{m.kind} sends more than scalars up"
        else:
            assert m.sender == SERVER
            assert not private & {v for v in vals if isinstance(v, str)}, "a client's private question went down"
    assert kinds == {("competence", "down"), ("competence_result", "up"), ("score", "down"),
                     ("score_result", "up")}
    # competence is cached: every exemplar cell is asked about once, in round 1 only
    ledger = run.runtime.ledger.records
    assert {r["round"] for r in ledger if r["kind"] == "competence"} == {1}
    server = [r for r in recs if r["kind"] == "client" and r["client"] == "server"]
    assert [r["round"] for r in server] == [1, 2] and server[1]["competence_queries"] == 0
    for key in ("expert_hit_rate", "random_hit_rate", "ae_share", "reward_mean", "loss"):
        assert key in server[0]


def test_fedgrpo_same_seed_same_run_and_policy_moves(tiny_dir):
    a = Run(fg_config(tiny_dir, rounds=1), progress=False)
    b = Run(fg_config(tiny_dir, rounds=1), progress=False)
    start = {k: v.copy() for k, v in a.build().server.global_state.items()}
    assert _strip(a.run()) == _strip(b.run())
    for k in start:
        assert np.array_equal(a.server.global_state[k], b.server.global_state[k])
    assert any(not np.array_equal(start[k], a.server.global_state[k]) for k in start)


@pytest.mark.parametrize("reset_optimizer", [True, False])
def test_fedgrpo_interrupted_run_resumes_bit_identically(tiny_dir, tmp_path, reset_optimizer):
    cfg = fg_config(tiny_dir, rounds=3, local_steps=2, reset_optimizer=reset_optimizer)
    whole = Run(cfg, tmp_path / "whole", progress=False)
    whole.run()
    with pytest.raises(Interrupted):
        Run(cfg, tmp_path / "cut", progress=False).run(stop_after=1)
    assert json.loads((tmp_path / "cut" / "checkpoint" / "state.json").read_text())["round"] == 1
    assert (tmp_path / "cut" / "checkpoint" / "fedgrpo_cache.npz").exists()
    assert (tmp_path / "cut" / "checkpoint" / "fedgrpo_optimizer.pt").exists() == (not reset_optimizer)
    resumed = Run(cfg, tmp_path / "cut", progress=False)
    resumed.run()
    for k in whole.server.global_state:
        assert np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))
    assert (tmp_path / "whole" / "ledger.jsonl").read_text() == (tmp_path / "cut" / "ledger.jsonl").read_text()


def test_fedgrpo_failed_client_is_dropped_and_the_run_goes_on(tiny_dir):
    recs = Run(fg_config(tiny_dir, rounds=2, fail_client="client_1@2"), progress=False).run()
    failures = [r for r in recs if r["kind"] == "failure"]
    assert failures and all(f["client"] == "client_1" and f["round"] == 2 for f in failures)
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]
    round2 = {r["client"] for r in recs if r["kind"] == "client" and r["round"] == 2}
    assert "client_1" not in round2 and "server" in round2
    # a failure in round 1 (before its competence is known) does not stop the run either
    recs = Run(fg_config(tiny_dir, rounds=1, fail_client="client_0@1"), progress=False).run()
    assert [f["client"] for f in recs if f["kind"] == "failure"] == ["client_0"]
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1]


def test_fedgrpo_modes_variants_and_m1(tiny_dir):
    for extra in ({"mode": "no_gt", "num_experts": 1}, {"group_reward": "official", "num_experts": 3},
                  {"malicious": 1, "robust": "median", "num_experts": 3, "me_score": "agreement"}):
        recs = Run(fg_config(tiny_dir, rounds=1, extra=extra), progress=False).run()
        server = [r for r in recs if r["kind"] == "client" and r["client"] == "server"][0]
        assert np.isfinite(server["loss"])
        if extra.get("mode") == "no_gt":
            assert server["ae_share"] == 0.0
        if "malicious" in extra:
            mal = [r for r in recs if r["kind"] == "client" and r.get("malicious") == 1.0]
            assert [r["client"] for r in mal] == ["client_2"]


# ---------------------------------------------------------------- baselines (fedgrpo_baselines)


def test_baseline_settings_are_validated(tiny_dir):
    with pytest.raises(ValueError, match="dp_epsilon"):
        small_config(tiny_dir, method="dpsda_grpo", extra={"dp_epsilon": -1.0})
    with pytest.raises(ValueError, match="synthetic_per_client"):
        small_config(tiny_dir, method="dpsda_sft", extra={"synthetic_per_client": 1.5})
    with pytest.raises(ValueError, match="num_experts"):
        small_config(tiny_dir, method="fedpetuning_sft", extra={"num_experts": 2})


def test_sft_trains_only_the_completion():
    from fedrl_kit.policy.tiny import build_tokenizer
    from fedrl_kit.sft import sft_batch

    tok = build_tokenizer()
    ids, mask, lab = sft_batch(tok, ["1+1=", "10+10="], ["2", "20"])
    assert ids.shape == lab.shape == mask.shape == (2, len("10+10=") + 3)
    assert lab[0].tolist()[:4] == [-100] * 4 and lab[0, 4].item() == ids[0, 4].item()
    assert lab[0, 5].item() == tok.eos_token_id and lab[0, 6:].eq(-100).all() and mask[0].sum() == 6
    assert lab[1, 6:].tolist() == ids[1, 6:].tolist()


def test_dp_topic_histogram_noise_and_exactness():
    from fedrl_kit.methods.fedgrpo_baselines import dp_topic_histogram

    topics = ["add"] * 5 + ["max"] * 2
    exact = dp_topic_histogram(topics, ["add", "max", "seq"], 0.0, np.random.default_rng(0))
    np.testing.assert_array_equal(exact, [5, 2, 0])
    noisy = dp_topic_histogram(topics, ["add", "max", "seq"], 0.5, np.random.default_rng(0))
    assert (noisy >= 0).all() and not np.array_equal(noisy, exact)


@pytest.mark.parametrize("method", ["fedpetuning_sft", "dpsda_grpo", "dpsda_sft"])
def test_baselines_run_move_the_policy_and_resume_exactly(tiny_dir, tmp_path, method):
    extra = {"evaluator_sft_steps": 2, "evaluator_sft_batch": 4, "synthetic_per_client": 6} \
        if method != "fedpetuning_sft" else {}
    # dpsda_grpo needs a policy whose synthetic labels sometimes match its samples: the committed base
    base = str(Path(__file__).resolve().parents[1] / "data" / "base") if method == "dpsda_grpo" else tiny_dir
    cfg = small_config(base, method=method, rounds=2, extra=extra)
    whole = Run(cfg, tmp_path / "whole", progress=False)
    start = {k: v.copy() for k, v in whole.build().server.global_state.items()}
    whole.run()
    assert any(not np.array_equal(start[k], whole.server.global_state[k]) for k in start)
    with pytest.raises(Interrupted):
        Run(cfg, tmp_path / "cut", progress=False).run(stop_after=1)
    resumed = Run(cfg, tmp_path / "cut", progress=False)
    resumed.run()
    for k in whole.server.global_state:
        assert np.array_equal(whole.server.global_state[k], resumed.server.global_state[k])
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))
    by = whole.runtime.ledger.bytes_by_kind()
    if method.startswith("dpsda"):  # texts go up once, in round 1; no adapter ever crosses the wire
        assert set(by) == {("synthesise", "down"), ("synthesise_result", "up")}
        assert {r["round"] for r in whole.runtime.ledger.records} == {1}
    else:
        assert by[("fit_result", "up")] >= 3 * sum(v.nbytes for v in start.values())


def test_trace_question_and_selection_quality(tiny_dir):
    run = Run(fg_config(tiny_dir, extra={"num_experts": 2}), progress=False).build()
    tr = fedgrpo.trace_question(run.server, 3, L=3, M=2)
    assert len(tr["neighbours"]) == 3 and tr["competence"].shape == (3,) and len(tr["experts"]) == 2
    cos = [n["cosine"] for n in tr["neighbours"]]
    assert cos == sorted(cos, reverse=True)
    assert list(np.argsort(-tr["competence"], kind="stable")[:2]) == tr["experts"]
    assert tr["scores"].shape == (2, 4) and set(tr["advantages"]) == {"paper", "official", "per_expert"}
    np.testing.assert_allclose(tr["eq9"].sum(axis=0), 0.0, atol=1e-9)  # eq. 9 sums to zero per candidate
    q = fedgrpo.selection_quality(run.server, L=3, M=1)
    assert q["experts"].shape == (8, 1) and 0.0 <= q["hit_rate"] <= 1.0 and 0.0 <= q["random_hit_rate"] <= 1.0


def test_minilm_encoder_without_sentence_transformers_says_so():
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here")
    with pytest.raises(ImportError, match="sentence-transformers"):
        fedgrpo.encode(None, ["1+1="], encoder="minilm")
