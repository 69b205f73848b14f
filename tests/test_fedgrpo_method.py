"""FedGRPO on the engine (fedrl_kit.fedgrpo) and its baselines (fedrl_kit.fedgrpo.baselines), end to end.

Runs use the untrained tiny policy (``tiny_dir``) and a seconds-long config; unit tests of the
clients use hand-set evaluator answers so that every expected value is known in advance.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import small_config
from fedrl_kit.federation.runtime import SERVER
from fedrl_kit.fedgrpo import algorithm, diagnostics
from fedrl_kit.fedgrpo.args import EvaluatorArgs, FedGRPOArgs
from fedrl_kit.fedgrpo.client import FedGRPOClient, assign_ground_truth
from fedrl_kit.fedgrpo.group_reward import candidate_advantages
from fedrl_kit.policy.adapters import GLOBAL
from fedrl_kit.rewards import accuracy_reward
from fedrl_kit.runs import Interrupted, Run, load_records

FAST_EVALUATOR = {"sft_steps": 2, "sft_batch": 4}


def fg_config(tiny_dir, fedgrpo=None, evaluator=None, **kw):
    """A seconds-long FedGRPO run: L = 4 neighbours, a 2-step evaluator SFT; ``fedgrpo``, ``evaluator`` set more."""
    return small_config(tiny_dir, method="fedgrpo", fedgrpo={"neighbours": 4, **(fedgrpo or {})},
                        evaluator={**FAST_EVALUATOR, **(evaluator or {})}, **kw)


def _strip(records):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


# ---------------------------------------------------------------- settings


@pytest.mark.parametrize("key, value", [
    ("fedgrpo.num_experts", 0), ("fedgrpo.num_experts", 4), ("fedgrpo.neighbours", 9), ("fedgrpo.neighbours", 0),
    ("fedgrpo.group_reward", "eq9"), ("fedgrpo.group_coef", -1.0), ("fedgrpo.format_coef", float("nan")),
    ("fedgrpo.scale_rewards", "yes"), ("fedgrpo.mode", "gt"), ("fedgrpo.gt_fraction", 1.5),
    ("fedgrpo.me_score", "logit"), ("fedgrpo.malicious", 4), ("fedgrpo.malicious_kind", "swap"),
    ("fedgrpo.robust", "max"), ("fedgrpo.trim", 0.5), ("evaluator.sft_steps", -1), ("evaluator.sft_batch", 0),
    ("evaluator.lr", 0.0), ("fedgrpo.encoder", "bert"), ("fedgrpo.encoder_layer", -2),
    ("fedgrpo.competence", "soft"), ("fedgrpo.queries", "dev"), ("fedgrpo.questions_per_step", -1),
    ("fedgrpo.gt_fraction", 0.0), ("fedgrpo.questions_per_step", 2.5), ("evaluator.training", "rl"),
    ("evaluator.grpo_steps", -1), ("evaluator.grpo_prompts", 0), ("evaluator.grpo_generations", 1),
    ("evaluator.grpo_lr", 0.0), ("evaluator.samples", 0), ("fedgrpo.no_gt_scorer", "judge"),
])
def test_bad_settings_raise_naming_the_field(tiny_dir, key, value):
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        fg_config(tiny_dir, **{key: value})


def test_no_gt_on_the_training_pool_needs_a_labelled_share_for_the_evaluators(tiny_dir):
    with pytest.raises(ValueError, match=r"fedgrpo\.gt_fraction must be in \(0, 1\) with queries='train' and "
                                         r"mode='no_gt'"):
        fg_config(tiny_dir, fedgrpo={"mode": "no_gt"})
    assert fg_config(tiny_dir, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5}).fedgrpo.mode == "no_gt"
    # the legacy D_s (world.public) keeps its old meaning of gt_fraction, 0 included
    assert fg_config(tiny_dir, fedgrpo={"queries": "public", "gt_fraction": 0.0}).fedgrpo.gt_fraction == 0.0
    with pytest.raises(ValueError, match="n_public must be >= 1"):
        fg_config(tiny_dir, n_public=0, fedgrpo={"queries": "public"})
    assert fg_config(tiny_dir, n_public=0).n_public == 0  # D_s = the training pool needs no public split


def test_old_fedgrpo_config_json_keeps_its_setting():
    """A config.json written before fedgrpo.queries resumes as it ran: D_s = world.public, "official" = pooled."""
    from fedrl_kit.config import RunConfig

    old = RunConfig(method="fedgrpo").to_dict()
    for k in ("queries", "questions_per_step"):
        old["fedgrpo"].pop(k)
    old["fedgrpo"].update(gt_fraction=0.5, scale_rewards=True, group_reward="official")
    cfg = RunConfig.from_dict(old)
    assert cfg.fedgrpo.queries == "public" and cfg.fedgrpo.group_reward == "pooled"
    assert cfg.fedgrpo.gt_fraction == 0.5 and cfg.fedgrpo.questions_per_step == 0
    assert RunConfig.from_dict({"method": "fedgrpo", "fedgrpo": {"num_experts": 3}}).fedgrpo.queries == "train"


def test_unknown_field_and_robust_needs_paper_variant(tiny_dir):
    with pytest.raises(ValueError, match=r"fedgrpo\.num_expert"):
        fg_config(tiny_dir, fedgrpo={"num_expert": 2})
    with pytest.raises(ValueError, match=r"fedgrpo\.robust"):
        fg_config(tiny_dir, fedgrpo={"robust": "median", "group_reward": "pooled"})
    args = fg_config(tiny_dir, fedgrpo={"robust": "median"}).fedgrpo
    assert isinstance(args, FedGRPOArgs)
    assert args.num_experts == 2 and args.group_coef == 8.0 and args.format_coef == 1.0 and args.robust == "median"


# ---------------------------------------------------------------- clients: competence and the AE/ME gate


class _Stub:
    """Just enough of the Policy for a client whose evaluator answers are set by hand."""


def _client(mode="with_gt", malicious=False, me_score="agreement", competence="greedy", **fields):
    import datasets

    data = datasets.Dataset.from_list([{"prompt": "1+1=", "answer": "2", "topic": "add", "difficulty": 1},
                                       {"prompt": "max(3,4)=", "answer": "4", "topic": "max", "difficulty": 1}])
    args = FedGRPOArgs(mode=mode, me_score=me_score, competence=competence, **fields)
    c = FedGRPOClient("client_0", 0, data, _Stub(), args, EvaluatorArgs(), seed=0, malicious=malicious)
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
    run = Run(fg_config(tiny_dir, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5, "me_score": "probability"}),
              progress=False).build()
    client = run.clients["client_0"]
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
    held = assign_ground_truth(public, parts, 1.0, seed=0)
    assert sorted(held[0] + held[1]) == list(range(40))
    assert all(i % 2 == 1 for i in held[0]) and all(i % 2 == 0 for i in held[1])
    assert assign_ground_truth(public, parts, 0.0, seed=0) == [[], []]
    half = assign_ground_truth(public, parts, 0.5, seed=0)
    assert 8 <= len(half[0] + half[1]) <= 32


# ---------------------------------------------------------------- runs


@pytest.mark.parametrize("fedgrpo", [{}, {"mode": "no_gt", "gt_fraction": 0.5}, {"queries": "public"}])
def test_fedgrpo_run_ledger_holds_only_texts_down_and_scalars_up(tiny_dir, fedgrpo):
    run = Run(fg_config(tiny_dir, rounds=2, fedgrpo=fedgrpo), progress=False).build()
    run.runtime.keep_messages = True
    private = {p for c in run.clients.values() for p in c.prompts}
    private -= set(run.server.world.queries["prompt"])  # the questions of D_s are the server's own (not answers)
    if fedgrpo.get("mode") == "no_gt":
        assert private, "no_gt: the labelled questions that train the evaluators are not in D_s"
    assert "answer" not in run.server.world.queries.column_names  # the server holds D_s's questions only
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

    # round 0: each client told the server its data size, nothing else
    props = [r for r in run.runtime.ledger.records if r["kind"] == "properties_result"]
    assert len(props) == 3 and all(r["round"] == 0 and r["keys"] == ["num_examples"] for r in props)
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
    for extra in ({"mode": "no_gt", "gt_fraction": 0.5, "num_experts": 1}, {"group_reward": "pooled", "num_experts": 3},
                  {"group_reward": "official", "num_experts": 2}, {"queries": "public", "gt_fraction": 0.5},
                  {"malicious": 1, "robust": "median", "num_experts": 3, "me_score": "agreement"}):
        recs = Run(fg_config(tiny_dir, rounds=1, fedgrpo=extra), progress=False).run()
        server = [r for r in recs if r["kind"] == "client" and r["client"] == "server"][0]
        assert np.isfinite(server["loss"])
        if extra.get("mode") == "no_gt":
            assert server["ae_share"] == 0.0
        if "malicious" in extra:
            mal = [r for r in recs if r["kind"] == "client" and r.get("malicious") == 1.0]
            assert [r["client"] for r in mal] == ["client_2"]


# ---------------------------------------------------------------- baselines (fedrl_kit.fedgrpo.baselines)


def test_baseline_settings_are_validated(tiny_dir):
    with pytest.raises(ValueError, match=r"dpsda\.dp_epsilon"):
        small_config(tiny_dir, method="dpsda_grpo", dpsda={"dp_epsilon": -1.0})
    with pytest.raises(ValueError, match=r"dpsda\.synthetic_per_client"):
        small_config(tiny_dir, method="dpsda_sft", dpsda={"synthetic_per_client": 1.5})
    with pytest.raises(ValueError, match=r"evaluator\.sft_batch"):
        small_config(tiny_dir, method="dpsda_sft", evaluator={"sft_batch": 0})


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
    from fedrl_kit.fedgrpo.baselines import dp_topic_histogram

    topics = ["add"] * 5 + ["max"] * 2
    exact = dp_topic_histogram(topics, ["add", "max", "seq"], 0.0, np.random.default_rng(0))
    np.testing.assert_array_equal(exact, [5, 2, 0])
    noisy = dp_topic_histogram(topics, ["add", "max", "seq"], 0.5, np.random.default_rng(0))
    assert (noisy >= 0).all() and not np.array_equal(noisy, exact)


@pytest.mark.parametrize("method", ["fedpetuning_sft", "dpsda_grpo", "dpsda_sft"])
def test_baselines_run_move_the_policy_and_resume_exactly(tiny_dir, tmp_path, method):
    sections = dict(evaluator=dict(FAST_EVALUATOR), dpsda={"synthetic_per_client": 6}) \
        if method != "fedpetuning_sft" else {}
    # dpsda_grpo needs a policy whose synthetic labels sometimes match its samples: the committed base
    base = str(Path(__file__).resolve().parents[1] / "data" / "base") if method == "dpsda_grpo" else tiny_dir
    cfg = small_config(base, method=method, rounds=2, **sections)
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
    assert {r["round"] for r in whole.runtime.ledger.records if r["kind"].startswith("properties")} == {0}
    if method.startswith("dpsda"):  # texts go up once, in round 1; no adapter ever crosses the wire
        assert set(by) == {("properties", "down"), ("properties_result", "up"), ("synthesise", "down"),
                           ("synthesise_result", "up")}
        assert {r["round"] for r in whole.runtime.ledger.records if r["kind"].startswith("synthesise")} == {1}
    else:
        assert by[("fit_result", "up")] >= 3 * sum(v.nbytes for v in start.values())


def test_trace_question_and_selection_quality(tiny_dir):
    run = Run(fg_config(tiny_dir, fedgrpo={"num_experts": 2}), progress=False).build()
    tr = diagnostics.trace_question(run.server, 3, L=3, M=2, truth=run.truth)
    assert len(tr["neighbours"]) == 3 and tr["competence"].shape == (3,) and len(tr["experts"]) == 2
    cos = [n["cosine"] for n in tr["neighbours"]]
    assert cos == sorted(cos, reverse=True)
    assert list(np.argsort(-tr["competence"], kind="stable")[:2]) == tr["experts"]
    assert tr["scores"].shape == (2, 4) and set(tr["advantages"]) == {"paper", "pooled", "per_expert"}
    assert tr["answer"] == str(run.truth.fact("queries").rows[3]["answer"]) and tr["correct"].shape == (4,)
    assert set(tr["pathways"]) <= {"AE", "ME"} and len(tr["pathways"]) == 2
    np.testing.assert_allclose(tr["eq9"].sum(axis=0), 0.0, atol=1e-9)  # eq. 9 sums to zero per candidate
    assert isinstance(tr["trace"], algorithm.StepTrace) and tr["trace"].grpo is None  # update=False
    q = diagnostics.selection_quality(run.server, run.truth, L=3, M=1)
    n_s = len(run.server.world.queries)
    assert n_s == 80 and q["experts"].shape == (n_s, 1) and 0.0 <= q["hit_rate"] <= 1.0
    assert 0.0 <= q["random_hit_rate"] <= 1.0


def test_trace_question_advantages_are_the_training_steps_with_a_robust_median():
    """The step-through honours fedgrpo.robust: its advantages are what server_step trains on."""
    # the committed base answers often enough that the experts' scores differ between candidates
    base = str(Path(__file__).resolve().parents[1] / "data" / "base")
    # (graded probability ME scores: with 0/1 agreement this question's experts tie, and median = mean)
    cfg = fg_config(base, fedgrpo={"robust": "median", "num_experts": 3, "malicious": 1, "me_score": "probability"})
    run = Run(cfg, progress=False).build()
    question, seed = 1, 0
    tr = diagnostics.trace_question(run.server, question, seed=seed, truth=run.truth)
    step = tr["trace"]
    r = step.scores[0]  # [M, G] in the order training averages them
    assert r.shape == (3, 4)
    by_hand = candidate_advantages(r, "paper", 8.0, tr["format"], 1.0, how="median", trim=0.2)
    np.testing.assert_array_equal(tr["advantages"]["paper"], by_hand)
    # this case tells the median from the mean (one expert lies), so the test would catch a step-through
    # that ignored fedgrpo.robust
    assert not np.allclose(by_hand, candidate_advantages(r, "paper", 8.0, tr["format"], 1.0, how="mean"))
    # the training path on the same question and candidates: the update is taken with those advantages
    server = run.server
    server.policy.set_state(GLOBAL, server.global_state)
    optimizer = torch.optim.Adam(server.policy.trainable(GLOBAL), lr=cfg.learning_rate)
    trained = algorithm.server_step(server, 0, 0, np.array([question]), seed, list(server.runtime.client_ids),
                                    optimizer=optimizer)
    assert trained.candidates == step.candidates and trained.grpo is not None
    np.testing.assert_array_equal(trained.advantages[0], tr["advantages"]["paper"])


def test_round_metrics_split_between_the_server_and_diagnostics(tiny_dir):
    """run_round reports what the server saw; simulator facts come only from diagnostics(truth, ...)."""
    run = Run(fg_config(tiny_dir, rounds=1, fedgrpo={"malicious": 1}), progress=False).build()
    out = algorithm.run_round(run.server, 1)
    assert [t.step for t in out["trace"]] == [0] and all(isinstance(t, algorithm.StepTrace) for t in out["trace"])
    simulator = {"expert_hit_rate", "random_hit_rate", "expert_hit_rate_major", "random_hit_rate_major", "ae_share",
                 "malicious", "evaluator_sft_loss"}
    assert not any(simulator & set(m) for m in out["clients"].values())
    assert {"reward_mean", "format", "loss", "competence_queries"} <= set(out["clients"]["server"])
    assert not {"candidate_accuracy", "reward_gap"} & set(out["clients"]["server"])  # they need D_s's answers
    extra = diagnostics.diagnostics(run.truth, 1, out)
    assert set(extra) == set(out["clients"])  # only records the round has; a dropped client gets none
    assert {"expert_hit_rate", "random_hit_rate", "ae_share", "candidate_accuracy"} <= set(extra["server"])
    assert [extra[c]["malicious"] for c in ("client_0", "client_1", "client_2")] == [0.0, 0.0, 1.0]
    assert all("evaluator_sft_loss" in extra[c] for c in ("client_0", "client_1", "client_2"))
    assert "evaluator_sft_loss" not in diagnostics.diagnostics(run.truth, 2, out)["client_0"]  # round 1 only


def test_minilm_encoder_without_sentence_transformers_says_so():
    import importlib.util

    if importlib.util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here")
    with pytest.raises(ImportError, match="sentence-transformers"):
        from fedrl_kit.fedgrpo.encoder import encode

        encode(None, ["1+1="], encoder="minilm")


# ---------------------------------------------------------------- D_s, the official protocol, Q, φ


@pytest.mark.parametrize("gt_fraction", [1.0, 0.5])
def test_ds_is_the_training_pool_and_ae_is_used_exactly_on_held_questions(tiny_dir, gt_fraction):
    """D_s = the questions the partition spreads over the clients (what every baseline trains on); a selected
    expert checks the exact answer iff it owns the question and holds its label, and uses its model elsewhere."""
    import datasets

    run = Run(fg_config(tiny_dir, fedgrpo={"gt_fraction": gt_fraction}), progress=False).build()
    pool = run.truth.fact("queries")
    pooled = datasets.concatenate_datasets(run.partitions)  # Central-GRPO's pool; FedAvg's clients hold its parts
    assert list(run.server.world.queries["prompt"]) == list(pooled["prompt"]) == list(pool.rows["prompt"])
    assert sorted(pool.rows["prompt"]) == sorted(run.world.train["prompt"])  # the Dirichlet split leaves none out
    assert not set(pool.rows["prompt"]) & set(run.world.public["prompt"])
    sizes = [len(p) for p in run.partitions]
    assert list(pool.owner) == [k for k, n in enumerate(sizes) for _ in range(n)]
    if gt_fraction == 1.0:
        assert pool.labelled.all()
    else:
        assert 0 < pool.labelled.sum() < len(pool.labelled)
    for k, c in enumerate(run.clients.values()):  # D_k = the client's labelled questions, exactly
        assert sorted(c.prompts) == sorted(p for p, o, lab in zip(pool.rows["prompt"], pool.owner, pool.labelled)
                                           if o == k and lab)

    server = run.server
    algorithm.ensure_embeddings(server)
    server.policy.set_state(GLOBAL, server.global_state)
    q_idx = np.arange(0, 80, 4)  # 20 questions of every client
    tr = algorithm.server_step(server, 0, 0, q_idx, 0, list(server.runtime.client_ids), update=False)
    n_ae = n_me = 0
    for i, row in enumerate(q_idx):
        answer = str(pool.rows[int(row)]["answer"])
        for k, r in zip(tr.scorers[i], tr.scores[i]):
            client = run.clients[tr.client_ids[k]]
            held = pool.owner[row] == k and pool.labelled[row]
            assert client.holds(tr.questions[i]) == held
            if held:  # AE: the exact check against the label
                expected = [v or 0.0 for v in accuracy_reward([tr.questions[i]] * 4, tr.candidates[i],
                                                               answer=[answer] * 4)]
                n_ae += 1
            else:  # ME: the client's model's probability of each candidate's answer
                expected = client.me_scores([tr.questions[i]], [tr.candidates[i]])[0]
                n_me += 1
            np.testing.assert_allclose(r, expected, rtol=1e-4, atol=1e-12)  # batched float32 passes differ a little
    assert n_ae > 0 and n_me > 0
    ae = diagnostics.diagnostics(run.truth, 1, {"trace": [tr], "clients": {"server": {}}})["server"]["ae_share"]
    assert ae == pytest.approx(n_ae / (n_ae + n_me))


def test_no_gt_ds_is_the_unlabelled_share_and_no_expert_uses_ae(tiny_dir):
    run = Run(fg_config(tiny_dir, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5}), progress=False).build()
    pool, queries = run.truth.fact("queries"), set(run.server.world.queries["prompt"])
    labelled = {p for c in run.clients.values() for p in c.prompts}
    assert queries and labelled and not queries & labelled  # the evaluators never saw a D_s label
    assert queries | labelled == set(run.world.train["prompt"]) and not pool.labelled.any()
    assert not any(c.holds(q) for c in run.clients.values() for q in queries)


def test_varying_k_alone_keeps_questions_and_rollouts_per_step_fixed(tiny_dir):
    """fedgrpo.questions_per_step fixes Q whatever K is; without it Q = b·K grows with K."""
    seen = {}
    for K in (2, 3, 4):
        for q in (0, 6):
            cfg = fg_config(tiny_dir, num_clients=K, fedgrpo={"questions_per_step": q, "num_experts": 1})
            assert algorithm.questions_per_step(cfg) == (6 if q else 2 * K)
            seen[K, q] = algorithm.sample_questions(cfg, 1, 0, 80)
    assert {len(v) for (K, q), v in seen.items() if q} == {6}
    assert [len(seen[K, 0]) for K in (2, 3, 4)] == [4, 6, 8]
    assert all(np.array_equal(seen[2, 6], seen[K, 6]) for K in (3, 4))  # the same questions, only K differs
    recs = Run(fg_config(tiny_dir, rounds=1, num_clients=4, fedgrpo={"questions_per_step": 6}), progress=False)
    out = algorithm.run_round(recs.build().server, 1)
    assert [len(t.q_idx) for t in out["trace"]] == [6] and all(len(c) == 4 for c in out["trace"][0].candidates)


def test_official_protocol_random_experts_blocks_and_one_pooled_group(tiny_dir):
    from fedrl_kit.fedgrpo.group_reward import official_advantages

    cfg = fg_config(tiny_dir, fedgrpo={"group_reward": "official", "num_experts": 2})
    assert cfg.fedgrpo.scale_rewards is None  # the official variant's own: no std (the scripts' --scale_rewards False)
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    server = run.server
    server.policy.set_state(GLOBAL, server.global_state)
    q_idx = np.array([0, 5, 40])
    tr = algorithm.server_step(server, 1, 0, q_idx, 0, list(server.runtime.client_ids), update=False)
    G, M = 4, 2
    drawn = algorithm.official_experts(server, M)
    assert drawn.shape == (80, 2) and all(len(set(r)) == 2 for r in drawn)  # M distinct clients per question
    np.testing.assert_array_equal(tr.experts, drawn[q_idx])  # fixed per question for the whole run
    assert tr.competence_queries == 0 and tr.neighbours.shape == (3, 0)  # no competence step
    assert not [m for m in run.runtime.messages if m.kind == "competence"]
    for i in range(3):
        assert len(tr.candidates[i]) == G * M
        for j, k in enumerate(tr.experts[i]):  # expert j received and scored block j only
            row = int(np.flatnonzero(tr.scorers[i] == k)[0])
            np.testing.assert_array_equal(tr.scored[i][row], np.arange(j * G, (j + 1) * G))
        blocks = np.stack([tr.scores[i][int(np.flatnonzero(tr.scorers[i] == k)[0])] for k in tr.experts[i]])
        expected = official_advantages(blocks, 8.0, tr.format[i].reshape(M, G), 1.0)  # [M, G], no std
        np.testing.assert_allclose(tr.advantages[i], expected.reshape(-1), atol=1e-12)
        assert abs(tr.advantages[i].sum()) < 1e-9  # one group over the G·M candidates
    sent = [m for m in run.runtime.messages if m.kind == "score"]
    assert all(len(c) == G for m in sent for c in m.payload["candidates"])
    recs = Run(cfg, progress=False).run()  # and it trains
    assert np.isfinite([r for r in recs if r.get("client") == "server"][0]["loss"])


def test_phi_embeds_the_question_text_not_the_chat_prompt(tiny_dir):
    """φ(x_s) pools the question's own tokens: the chat template and system prompt are not embedded."""
    from fedrl_kit.fedgrpo.encoder import encode

    run = Run(fg_config(tiny_dir), progress=False).build()
    policy, texts = run.policy, ["12+30=", "max(3,9)=", "7-2="]
    plain = encode(policy, texts)
    policy.chat = True  # a chat model would wrap every prompt in the template; the tiny tokenizer has none
    try:
        np.testing.assert_array_equal(encode(policy, texts), plain)
    finally:
        policy.chat = False
    tok = policy.tokenizer
    ids = tok(texts[:1], return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad(), policy.reference():
        h = policy.model(input_ids=ids, output_hidden_states=True).hidden_states[1][0].mean(0).double().numpy()
    np.testing.assert_allclose(plain[0], h / np.linalg.norm(h), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- GRPO-trained evaluators, the no-GT setting

GRPO_EVALUATOR = {"training": "grpo", "grpo_steps": 2, "grpo_prompts": 2, "grpo_generations": 2, "samples": 3}


def test_grpo_evaluator_moves_from_its_init_and_raises_its_own_reward():
    """θ_k trained by GRPO on its private (question, answer) pairs: its adapter changes and its mean reward
    (8 · accuracy + 1 · format) on those questions, over fixed samples, goes up (the pretrained tiny base)."""
    from fedrl_kit.fedgrpo.client import evaluator_rewards, train_grpo_evaluator
    from fedrl_kit.policy.adapters import ensure_adapter
    from fedrl_kit.policy.engine import Policy
    from fedrl_kit.runs import resolve_base
    from fedrl_kit.world.world import make_world

    world = make_world(0, n_train=200)
    policy = Policy.load(resolve_base("data/base"), 8, 16.0, 0)
    qs, ans = list(world.train["prompt"][:12]), [str(a) for a in world.train["answer"][:12]]
    ensure_adapter(policy.model, "eval_c")
    init = policy.get_state("eval_c")

    def own_reward():
        ro = policy.rollout("eval_c", qs, 16, seed=123)
        return float(evaluator_rewards(ro.completions, [a for a in ans for _ in range(16)]).mean())

    before = own_reward()
    ev = EvaluatorArgs(training="grpo", grpo_steps=8, grpo_prompts=6, grpo_generations=8, grpo_lr=5e-3)
    metrics = train_grpo_evaluator(policy, "eval_c", qs, ans, ev, seed=0, key=0)
    after = own_reward()
    moved = max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(init.values(), policy.get_state("eval_c").values()))
    assert moved > 1e-3  # the adapter left its init
    assert after > before + 1.0, (before, after)  # its own reward on its private questions went up
    assert metrics["grpo_steps"] == 8 and np.isfinite(metrics["grpo_reward_last"])
    assert policy.get_state(GLOBAL).keys() == init.keys()  # (the policy's global adapter is another one)


def test_no_gt_with_grpo_evaluators_uses_me_only(tiny_dir):
    """§4.3: no client holds a D_s label, so every score an expert returns is its GRPO-trained model's (ME)."""
    cfg = fg_config(tiny_dir, rounds=2, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5}, evaluator=GRPO_EVALUATOR)
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    recs = run.run()
    clients = run.clients.values()
    assert all("grpo_reward_last" in c.sft_metrics for c in clients)  # θ_k trained by GRPO, not SFT
    gates = [g for c in clients for *_, g in c.gate_log]
    assert gates and set(gates) == {"ME"}  # the scoring records: ME on every question scored
    assert all(r["ae_share"] == 0.0 for r in recs if r["kind"] == "client" and "ae_share" in r)
    last, replayed = {}, 0
    for m in (m for m in run.runtime.messages if m.kind in ("score", "score_result")):
        if m.sender == SERVER:
            last[m.receiver] = m.payload
            continue
        req = last[m.sender]  # each reply is exactly its model's sampled probability of each candidate's answer
        me = run.clients[m.sender].me_scores(req["questions"], req["candidates"])
        replayed += 1
        np.testing.assert_allclose(np.array(m.payload["scores"]), np.stack(me))
    assert replayed


def test_subject_scorer_is_refused_outside_no_gt(tiny_dir):
    with pytest.raises(ValueError, match=r"fedgrpo\.no_gt_scorer must be 'expert' unless mode='no_gt'.*got 'subject'"):
        fg_config(tiny_dir, fedgrpo={"mode": "with_gt", "no_gt_scorer": "subject"})
    assert fg_config(tiny_dir, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5,
                                        "no_gt_scorer": "subject"}).fedgrpo.no_gt_scorer == "subject"


def test_no_gt_run_with_the_subject_scorer(tiny_dir):
    """The official code's scorer on a whole no-GT run: each subject group's reward model is trained by GRPO on its
    holder's labelled questions of that group; every score is 0 or 1; every expert of a question sends the same
    row, the subject model's, whichever experts were drawn."""
    from fedrl_kit.fedgrpo.subject_scorer import subject_group

    cfg = fg_config(tiny_dir, rounds=2, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5, "no_gt_scorer": "subject"},
                    evaluator=GRPO_EVALUATOR)
    run = Run(cfg, progress=False).build()
    run.runtime.keep_messages = True
    recs = run.run()
    assert [r["round"] for r in recs if r["kind"] == "global"] == [0, 1, 2]  # both rounds finished
    rm = run.clients["client_0"].reward_models
    assert all(c.reward_models is rm for c in run.clients.values())  # one model per subject, not per expert
    pool = run.truth.fact("queries")
    for g, k in rm.holders.items():
        assert len(rm.data[g]) and set(rm.data[g]["prompt"]) <= set(run.clients[f"client_{k}"].prompts)
        assert {subject_group(t) for t in rm.data[g]["topic"]} == {g}
        mine = [sum(subject_group(t) == g for t in c.data["topic"]) for c in run.clients.values()]
        assert mine[k] == max(mine)
    assert set(rm.metrics) == {subject_group(t) for t in pool.rows["topic"]}  # every subject of D_s got scored
    rows_by_question, last = {}, {}
    for m in (m for m in run.runtime.messages if m.kind in ("score", "score_result")):
        if m.sender == SERVER:
            last[m.receiver] = m.payload
            continue
        req = last[m.sender]
        for q, cands, row in zip(req["questions"], req["candidates"], m.payload["scores"]):
            rows_by_question.setdefault((q, tuple(cands)), []).append(row)
    scores = np.array([v for rows in rows_by_question.values() for row in rows for v in row])
    assert scores.size and set(np.unique(scores)) <= {0.0, 1.0}
    assert any(len(rows) > 1 for rows in rows_by_question.values())  # M = 2 experts scored some question
    for rows in rows_by_question.values():
        assert all(r == rows[0] for r in rows)


def test_grpo_evaluator_answer_probability_is_its_sampled_answer_share(tiny_dir):
    run = Run(fg_config(tiny_dir, fedgrpo={"mode": "no_gt", "gt_fraction": 0.5}, evaluator=GRPO_EVALUATOR),
              progress=False).build()
    client = run.clients["client_0"]
    p = client.answer_probabilities(["5+7=", "5+7=", "2+2="], ["12", "7", "4"])
    assert np.all((p >= 0) & (p <= 1)) and np.allclose(p * 3, np.round(p * 3))  # shares of 3 samples
    np.testing.assert_array_equal(p, client.answer_probabilities(["5+7=", "5+7=", "2+2="], ["12", "7", "4"]))


# ---------------------------------------------------------------- the server's update: LoRA or full fine-tuning


@pytest.mark.parametrize("update", ["lora", "full"])
def test_full_fine_tuning_moves_the_base_weights_and_lora_only_the_adapter(tiny_dir, update):
    run = Run(fg_config(tiny_dir, rounds=1, fedgrpo={"server_update": update}), progress=False).build()
    base0, lora0 = algorithm.base_weights(run.policy.model), run.policy.get_state(GLOBAL)
    evaluators = run.clients["client_0"].policy
    assert (evaluators is run.policy) == (update == "lora")  # full: the evaluators keep their own model
    run.run()
    base1, lora1 = algorithm.base_weights(run.policy.model), run.policy.get_state(GLOBAL)
    base_moved = any(not torch.equal(base0[n], base1[n]) for n in base0)
    lora_moved = any(not np.array_equal(lora0[k], lora1[k]) for k in lora0)
    assert (base_moved, lora_moved) == ((True, False) if update == "full" else (False, True))
    if update == "full":  # the evaluators' copy of the base is the untrained one
        copy0 = algorithm.base_weights(evaluators.model)
        assert all(torch.equal(base0[n], copy0[n]) for n in base0)
        assert not any(p.requires_grad for n, p in run.policy.model.named_parameters() if "lora_" not in n)


def test_full_fine_tuning_needs_no_kl_and_resumes_exactly(tiny_dir, tmp_path):
    with pytest.raises(ValueError, match=r"fedgrpo\.server_update must be 'lora' when beta > 0"):
        fg_config(tiny_dir, beta=0.01, fedgrpo={"server_update": "full"})
    cfg = fg_config(tiny_dir, rounds=2, fedgrpo={"server_update": "full"})
    whole = Run(cfg, tmp_path / "whole", progress=False)
    whole.run()
    with pytest.raises(Interrupted):
        Run(cfg, tmp_path / "cut", progress=False).run(stop_after=1)
    resumed = Run(cfg, tmp_path / "cut", progress=False)
    resumed.run()
    a, b = algorithm.base_weights(whole.policy.model), algorithm.base_weights(resumed.policy.model)
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert _strip(load_records(tmp_path / "whole")) == _strip(load_records(tmp_path / "cut"))
