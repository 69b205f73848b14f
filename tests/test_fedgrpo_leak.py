"""What a FedGRPO expert's score values tell the server about which questions it owns (docs/fedgrpo.md,
"What the score values reveal"), and the 0/1 agreement score that closes that channel."""

import datasets
import numpy as np
import pytest

from conftest import small_config
from fedrl_kit.fedgrpo.args import EvaluatorArgs, FedGRPOArgs
from fedrl_kit.fedgrpo.client import FedGRPOClient
from fedrl_kit.fedgrpo.diagnostics import ownership_leak, scored_pairs
from fedrl_kit.runs import Run


class _Stub:
    """Just enough of the Policy for a client whose evaluator answers are set by hand."""


def _client(me_score: str, greedy: dict) -> FedGRPOClient:
    data = datasets.Dataset.from_list([{"prompt": "1+1=", "answer": "2", "topic": "add", "difficulty": 1}])
    c = FedGRPOClient("client_0", 0, data, _Stub(), FedGRPOArgs(me_score=me_score), EvaluatorArgs(), seed=0)
    c.sft_metrics = {"sft_loss": 0.0}  # "trained": its greedy answers are the table's
    c.greedy_answers = lambda qs: [greedy.get(q) for q in qs]
    return c


def test_agreement_is_one_for_the_same_final_answer_and_zero_otherwise():
    c = _client("agreement", {"7-2=": "5", "9*9=": None})
    same = ["5", "<answer>5</answer>", "<answer> 5.0 </answer>", "so it is 005", "<answer>+5.</answer>"]
    different = ["4", "<answer>6</answer>", "5 then 6"]  # the last number is the answer
    unparseable = ["", "x", "<answer></answer>", "<answer>5"]
    scores = c.on_score(1, {"step": 0, "questions": ["7-2="], "candidates": [same + different + unparseable]})
    assert scores["scores"][0] == [1.0] * len(same) + [0.0] * len(different) + [0.0, 0.0, 0.0, 1.0]
    # "<answer>5" has no closing tag: the last number (5) is its answer, so it agrees; the three before have none.
    # An evaluator with no answer of its own agrees with nothing, not even with a candidate that has none either
    none = c.on_score(1, {"step": 0, "questions": ["9*9="], "candidates": [["81", "", "x"]]})["scores"][0]
    assert none == [0.0, 0.0, 0.0]


def test_ownership_leak_names_every_owner_when_me_scores_are_probabilities():
    ae = [[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]  # the exact check: 0 or 1
    me = [[0.31, 0.02, 0.31, 0.0], [0.9, 0.05, 0.9, 0.9], [1e-6, 0.5, 0.0, 0.0]]  # probabilities; 0 = no answer
    out = ownership_leak(ae + me, [True] * 3 + [False] * 3)
    assert out == {"pairs": 6, "owner_pairs": 3, "owners_flagged": 3, "others_flagged": 0, "identified": 1.0,
                   "false_positive_rate": 0.0, "precision": 1.0, "base_rate": 0.5, "advantage": 1.0}
    # an ME row whose candidates all lack an answer is all zeros: the rule takes it for an owner's
    fooled = ownership_leak(ae + me + [[0.0, 0.0, 0.0, 0.0]], [True] * 3 + [False] * 4)
    assert fooled["others_flagged"] == 1 and fooled["false_positive_rate"] == pytest.approx(0.25)
    assert fooled["advantage"] == pytest.approx(0.75) and fooled["precision"] == pytest.approx(0.75)


def test_ownership_leak_is_chance_when_every_score_is_zero_or_one():
    rows = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    out = ownership_leak(rows, [True, False, False, True, False])
    assert out["identified"] == 1.0 and out["false_positive_rate"] == 1.0 and out["advantage"] == 0.0
    assert out["precision"] == out["base_rate"] == pytest.approx(0.4)  # flagging is guessing "owner" for all
    with pytest.raises(ValueError, match="one entry per pair"):
        ownership_leak(rows, [True])


@pytest.mark.parametrize("fedgrpo, leaks", [
    ({}, False),  # the package default: ME scores are 0/1 agreement, as AE ones
    ({"me_score": "probability"}, True),
    ({"me_score": "agreement"}, False),
    ({"me_score": "probability", "ae_holders": "all"}, False),
])
def test_score_values_reveal_owners_only_under_probability(tiny_dir, fedgrpo, leaks):
    # every client scores every question (M = K), so each question has its owner and two other experts
    run = Run(small_config(tiny_dir, method="fedgrpo", rounds=1,
                           fedgrpo={"neighbours": 4, "num_experts": 3, **fedgrpo},
                           evaluator={"sft_steps": 2, "sft_batch": 4}), progress=False).build()
    traces = run.spec.run_round(run.server, 1)["trace"]
    rows, owns = scored_pairs(traces, run.truth.fact("queries").owner)  # [P] rows of G scores, [P] flags
    assert len(rows) == 3 * sum(len(t.q_idx) for t in traces) and any(owns) and not all(owns)
    owner = run.truth.fact("queries").owner
    for t in traces:  # each question's owner holds it with its label: its row is the exact check (AE)
        assert all(run.clients[t.client_ids[owner[q]]].holds(x) for q, x in zip(t.q_idx, t.questions))
    owner_values = np.concatenate([r for r, o in zip(rows, owns) if o])
    other_values = np.concatenate([r for r, o in zip(rows, owns) if not o])
    assert np.isin(owner_values, (0.0, 1.0)).all()  # AE: the exact check
    out = ownership_leak(rows, owns)
    assert out["identified"] == 1.0  # every owner's row is 0/1 under every setting
    if leaks:
        assert not np.isin(other_values, (0.0, 1.0)).all()  # ME probabilities strictly inside (0, 1) somewhere
        assert out["false_positive_rate"] < 1.0 and out["advantage"] > 0.0
    else:  # the server sees the same kind of value from owners and the others
        assert np.isin(other_values, (0.0, 1.0)).all()
        assert out["false_positive_rate"] == 1.0 and out["advantage"] == 0.0
        assert out["precision"] == pytest.approx(out["base_rate"])


def test_the_default_me_score_hides_owners_and_old_run_folders_keep_probability():
    from fedrl_kit.fedgrpo.args import FedGRPOArgs

    assert FedGRPOArgs().me_score == "agreement"
    old = {k: v for k, v in FedGRPOArgs().__dict__.items() if k not in ("me_score", "ae_holders")}  # before both
    assert FedGRPOArgs.migrate(old)["me_score"] == "probability"
    assert FedGRPOArgs.migrate({"num_experts": 3}) == {"num_experts": 3}  # a partial section: today's defaults
