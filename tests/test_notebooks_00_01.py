"""The helpers the quickstart and the FedGRPO notebook added: an exercise's answer shown with its reason, a paired
difference in words that agree with its interval, the stored FedGRPO findings as labelled sentences with their
setting, and what the FedGRPO server learns about its clients from the scalars it receives."""

import numpy as np
import pytest
from test_fedgrpo_method import fg_config

from experiments.findings import fedgrpo_finding_notes, fedgrpo_findings, interval_words
from experiments.stats import t_interval
from fedrl_kit.fedgrpo import diagnostics
from fedrl_kit.notebook import reveal
from fedrl_kit.runs import Run


def test_reveal_shows_the_answer_and_its_reason_in_one_line(capsys):
    reveal(1.5, "(1 − 0.25) / 0.5 = 1.5.")
    out = capsys.readouterr().out
    assert out.startswith("Answer: 1.5, because (1 − 0.25) / 0.5 = 1.5. (") and out.count("\n") == 1


@pytest.mark.parametrize("difference, half, expected", [
    (-8.07, 7.15, "lower by 8.07 pass@1 points (95 % t-interval ±7.15 over 3 seeds)"),
    (7.56, 5.74, "higher by 7.56 pass@1 points (95 % t-interval ±5.74 over 3 seeds)"),
    (0.44, 15.71, "within noise: +0.44 ± 15.71 pass@1 points (95 % t-interval over 3 seeds, contains 0)")])
def test_interval_words_say_what_the_interval_says(difference, half, expected):
    assert interval_words(difference, half, 3) == expected


def test_the_finding_notes_are_the_findings_table_with_labels_and_settings():
    notes, table = fedgrpo_finding_notes(), fedgrpo_findings()
    assert list(notes.index) == [f"F{i}" for i in range(1, len(table) + 1)]
    assert list(notes["finding"]) == list(table["finding"])
    for (_, note), row in zip(notes.iterrows(), table.to_dict("records")):
        assert note["result"] == interval_words(row["difference"], row["±95% t"], row["seeds"])
        assert f"{row['seeds']} seeds" in note["setting"] and "K = 8 clients" in note["setting"]
        assert "τ = 2" in note["setting"] and " rounds" in note["setting"]


def test_the_server_view_and_the_per_question_hit_differences(tiny_dir):
    run = Run(fg_config(tiny_dir, fedgrpo={"num_experts": 2}), progress=False).build()
    q = diagnostics.selection_quality(run.server, run.truth, L=3, M=2)
    d = diagnostics.hit_differences(run.server, run.truth, q["experts"])
    assert d.shape == (len(run.server.world.queries),) and np.all(np.abs(d) <= 1)
    assert d.mean() == pytest.approx(q["hit_rate_major"] - q["random_hit_rate_major"])
    assert t_interval(d.tolist())[2] == len(d)
    every = diagnostics.selection_quality(run.server, run.truth, L=3, M=3)  # every client chosen: no gap at all
    np.testing.assert_allclose(diagnostics.hit_differences(run.server, run.truth, every["experts"]), 0.0, atol=1e-12)
    view = diagnostics.server_view(run.server, run.truth)
    assert list(view.index) == list(run.runtime.client_ids)
    for cid, row in view.iterrows():
        counts = run.truth.topic_counts(cid)
        assert counts[row["true largest topic"]] == max(counts.values())
        assert row["guessed right"] == (row["server's guess: its topic"] == row["true largest topic"])
        assert -1 <= row["edge over the average client"] <= 1
    assert view["edge over the average client"].ge(0).all()  # a client's best edge is never below the average
    with pytest.raises(ValueError, match="experts must be"):
        diagnostics.hit_differences(run.server, run.truth, q["experts"][:3])


def test_an_answer_is_folded_in_a_notebook_and_plain_text_elsewhere():
    from fedrl_kit.notebook import _Answer

    a = _Answer("Answer: 3, because <b> & c.")
    assert repr(a) == "Answer: 3, because <b> & c."
    html = a._repr_html_()
    assert html.startswith("<details><summary><b>Answer</b>") and "Answer: 3, because &lt;b&gt; &amp; c." in html
    assert html.endswith("</details>")
