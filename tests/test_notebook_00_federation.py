"""What the quickstart measures about a federated round: the gap between averaging LoRA factors and averaging the
clients' updates, on hand-made factors and per round of a tiny run, and the round diagram's factor names."""

import numpy as np
import pytest

from fedrl_kit.lora_factors import factor_gap, factor_round
from fedrl_kit.config import preset
from fedrl_kit.diagrams import round_diagram
from fedrl_kit.notebook import SMOKE_SIZES, before_after, round_factor_gaps
from fedrl_kit.runs import Run


def _pair(u, d):
    return {"m.lora_A.weight": np.array(d, dtype=np.float32), "m.lora_B.weight": np.array(u, dtype=np.float32)}


def test_the_factor_gap_of_the_two_client_example_and_of_agreeing_clients():
    # U = (2, 0), D = (1, 3): mean of products 1, product of means 2 → |1 − 2| / 1
    clients = [_pair([[2.0]], [[1.0]]), _pair([[0.0]], [[3.0]])]
    assert factor_gap(clients, [1, 1]) == pytest.approx(1.0)
    # weights 3:1 → mean product 1.5, product of means 1.5 · 1.5 = 2.25 → 0.75 / 1.5
    assert factor_gap(clients, [3, 1]) == pytest.approx(0.5)
    same = _pair(np.ones((4, 2)), np.full((2, 3), 0.5))
    assert factor_gap([same, same, same], [1, 2, 3]) == pytest.approx(0.0, abs=1e-12)
    assert np.isnan(factor_gap([_pair([[0.0]], [[1.0]])] * 2, [1, 1]))  # U = 0: no update to compare with
    with pytest.raises(ValueError, match="weights"):
        factor_gap(clients, [1])
    with pytest.raises(ValueError, match="lora_A"):
        factor_gap([{"w": np.ones(2)}], [1])


def test_a_rounds_gap_its_denominators_and_the_clients_agreement_on_hand_made_factors():
    start = _pair([[1.0]], [[1.0]])  # U_0 D_0 = 1
    clients = [_pair([[2.0]], [[1.0]]), _pair([[1.0]], [[3.0]])]  # products 2 and 3: updates +1 and +2
    parts = factor_round(start, clients, [1, 1])
    # mean product 2.5, product of means 1.5 · 2 = 3: gap 0.5; adapter 2.5; mean update 1.5 = mean of |+1|, |+2|
    assert parts == pytest.approx({"gap": 0.5, "adapter": 2.5, "update": 1.5, "agreement": 1.0})
    assert parts["gap"] / parts["adapter"] == pytest.approx(factor_gap(clients, [1, 1]))
    apart = [_pair([[2.0]], [[1.0]]), _pair([[0.0]], [[3.0]])]  # products 2 and 0: updates +1 and −1 cancel
    parts = factor_round(start, apart, [1, 1])
    assert parts["update"] == pytest.approx(0.0) and parts["agreement"] == pytest.approx(0.0)
    assert parts["gap"] == pytest.approx(1.0) and parts["adapter"] == pytest.approx(1.0)
    assert np.isnan(factor_round(start, [start, start], [1, 1])["agreement"])  # nobody moved
    with pytest.raises(ValueError, match="weights"):
        factor_round(start, clients, [1, -1])


def test_a_runs_round_gaps_and_reply_sizes():
    cfg = preset("quick", **{**SMOKE_SIZES["quickstart"], "rounds": 2, "num_clients": 2})
    run = Run(cfg, None, progress=False).build()
    run.runtime.keep_messages = True
    run.run()
    table = round_factor_gaps(run)
    assert list(table.index) == [1, 2]
    for column in ("gap, n_k weights", "gap, equal weights"):  # nan: a round whose clients all kept U = 0
        gaps = table[column].dropna()
        assert len(gaps) and gaps.between(0, 1).all()
    assert table["agreement of updates"].dropna().between(0, 1 + 1e-9).all()
    first = table.loc[1]  # round 1 starts from U = 0: the adapter so far is this round's update
    assert first["gap / round's update"] == pytest.approx(first["gap, n_k weights"], rel=1e-6, nan_ok=True)
    assert np.allclose(table["‖gap‖"] / table["‖adapter‖"], table["gap, n_k weights"], equal_nan=True)
    adapter_bytes = sum(v.nbytes for v in run.initial_state.values())
    assert (table["bytes up per client"] > adapter_bytes).all()  # the adapter, its tensors' names, the metrics
    assert (table["bytes up per client"] < 1.05 * adapter_bytes).all()
    with pytest.raises(ValueError, match="keep_messages"):
        round_factor_gaps(Run(cfg, None, progress=False).build())


def test_the_fedavg_round_diagram_names_the_factors_d_and_u():
    svg = round_diagram("fedavg_grpo").svg
    assert "(D, U)" in svg and "(D_k, U_k)" in svg and "(A, B)" not in svg


def test_the_quickstarts_teaching_helpers_on_a_tiny_run(tmp_path):
    """The tables print integers as integers and head each setting with its symbol, the takeaway box holds three
    findings, each round re-scored per problem gives the records' pass@1, the curve plots the paired difference, the
    clients' agreement is read beside its right-angle reference, the greedy answers before and after are read and
    counted, and each exercise answer comes with its reason; the figures are written where asked."""
    from experiments import teaching_quickstart as teach

    cfg = preset("quick", **{**SMOKE_SIZES["quickstart"], "rounds": 2, "num_clients": 2})
    run = Run(cfg, None, progress=False).build()
    run.runtime.keep_messages = True
    base_eval = run.evaluate_global(0)
    records = run.run()
    central = teach.central_run(cfg)
    runs = {"FedAvg-GRPO": records, "Central-GRPO": central.run()}
    scores = teach.per_problem({"FedAvg-GRPO": (run, records), "Central-GRPO": (central, runs["Central-GRPO"])})
    assert list(scores["FedAvg-GRPO"].columns) == [0, 1, 2]  # every evaluated round, re-scored (checked in there)
    assert len(scores["Central-GRPO"]) == len(run.world.test)
    settings = teach.settings(cfg)
    assert "10.000" not in settings.to_string() and ("num_clients", "K") in settings.columns
    table = teach.results(runs, scores)
    assert table.loc["final pass@1 (%)", "FedAvg-GRPO"] == round(100 * records[-1]["pass@1"], 1)
    assert table.loc["Central's lead, final (points, ± 2 SE paired)", "FedAvg-GRPO"] == ""
    by_topic = teach.base_by_topic(run, base_eval)
    assert by_topic.loc["test problems"].sum() == len(run.world.test)
    fig = teach.pass_curve(scores, tmp_path)
    lead = teach._leads(scores, "FedAvg-GRPO")
    assert len(fig.data) == 3 and list(fig.data[2].y) == pytest.approx((lead["lead"] / 100).tolist())
    assert (tmp_path / "quickstart_pass_at_1.html").exists()
    gaps = round_factor_gaps(run)
    words = teach.agreement(run).data
    a = gaps["agreement of updates"].dropna()
    w = np.array(list(run.server.sizes.values()), dtype=float)
    assert f"{a.min():.2f}–{a.max():.2f}" in words and f"√Σw_k² = {np.sqrt(((w / w.sum()) ** 2).sum()):.2f}" in words
    table, greedy = before_after(run, n=len(run.world.test))
    box = teach.takeaways(runs, "FedAvg-GRPO", scores, greedy, table).data
    assert box.startswith("> **What this run shows**") and 2 <= box.count("\n> ") <= 3
    verdict, why = teach.greedy_answer(table, greedy, scores["FedAvg-GRPO"])
    change = teach.greedy_change(table, greedy)
    assert verdict == change["verdict"] in {"higher", "same", "lower"} and change["words"] in why
    assert f"to {100 * scores['FedAvg-GRPO'].iloc[:, -1].mean():.1f} %" in why
    assert change["better"] - change["worse"] == change["change"]
    shown = teach.answers_changed(table, scores["FedAvg-GRPO"], cfg.eval_samples, n=3)
    reading = teach.answers_reading(table, shown).data
    assert reading.startswith("- In ") and f"{change['worse']} turned wrong" in reading
    client, why = teach.frac_zero_answer(records, run, base_eval)
    assert client in {"client_0", "client_1"} and why.startswith(client)
    assert "fedprox μ" not in settings.columns and "lora_alpha" in settings.columns
    assert "zero_shot" not in teach.NAMES  # the base model is round 0 of every run


def test_the_quickstart_stops_in_one_line_on_zero_rounds():
    """Round 0 is the base model of every run; a run of no rounds has no client message for §3 to re-read."""
    from experiments import teaching_quickstart as teach
    from fedrl_kit.notebook import NotebookStop

    with pytest.raises(NotebookStop, match=r"^rounds=0 trains nothing") as e:
        teach.setup({"rounds": 0, "base": "", "preset_name": "quick", "method": "fedavg_grpo"})
    assert "\n" not in str(e.value)


def test_the_clip_toy_keeps_the_pessimistic_term_and_silences_only_tokens_past_the_range(capsys):
    """§1's toy: the clipped term is kept (zero gradient) only where the token moved past the range the way its
    advantage pushes it; the loss rebuilt from the kept terms is grpo_loss's."""
    import torch

    from experiments import teaching_quickstart as teach
    from fedrl_kit.grpo import grpo_loss

    cfg = preset("quick")
    rho, A = torch.tensor([0.7, 1.0, 1.3], dtype=torch.float64), torch.tensor([1.0, -1.0], dtype=torch.float64)
    logps = rho.log().repeat(2, 1).requires_grad_()
    loss, _ = grpo_loss(logps, torch.zeros_like(logps), A, torch.ones_like(logps), cfg.epsilon, cfg.epsilon_high)
    loss.backward()
    table = teach.clip_table(rho, A, logps.grad, loss, cfg)
    silenced = {i for i, row in table.iterrows() if row["push on π(token)"] == "none (clipped)"}
    assert silenced == {"A = +1, ρ = 1.3", "A = −1, ρ = 0.7"}
    assert table.loc["A = +1, ρ = 0.7", "min: the term kept"] == 0.7  # below the range, but pulled back: ρ·A kept
    out = capsys.readouterr().out
    assert "−(2.95 − 3.10) / 6 = 0.0250" in out and "(grpo_loss: 0.0250)" in out
    assert f"{1 + cfg.epsilon_high:.2f}" in teach.clip_why(cfg)
    teach.grpo_settings(cfg)
    assert "clip range [0.80, 1.25]" in capsys.readouterr().out


def test_a_false_equation_in_the_reasoning_is_found_and_nothing_else_is_judged():
    from experiments import teaching_quickstart as teach

    assert teach._false_equation("<think>83=17*5+3</think><answer>3</answer>")
    assert not teach._false_equation("<think>83=16*5+3</think><answer>3</answer>")
    assert not teach._false_equation("<think>20,36</think><answer>36</answer>")  # no equation
    assert not teach._false_equation("83=17*5+3")  # outside <think>
    assert not teach._false_equation("<think>__import__('os')=1</think>")  # never evaluated


def test_the_notebooks_alpha_table_reads_the_stored_sweep():
    """The optional section's "non-IID split?" table is benchmarks/results/quickstart_alpha.json: each α's agreement
    averaged over rounds and seeds, its right-angle reference, Central-GRPO's final lead over FedAvg-GRPO of the same
    seed with its 95 % t interval; the words agree with those intervals; the stored notebook shows the table."""
    import json
    from pathlib import Path

    from experiments import teaching_quickstart as teach
    from experiments.stats import t_interval

    root = Path(__file__).resolve().parents[1]
    stored = json.loads((root / teach.ALPHA_FILE).read_text())
    table = teach.alpha_sweep()
    assert list(table.index) == [f"{a:g}" for a in stored["alphas"]]
    central = {r["seed"]: r["final pass@1"] for r in stored["runs"] if r["method"] == "central_grpo"}
    inside = []
    for alpha in stored["alphas"]:
        mine = [r for r in stored["runs"] if r["method"] == "fedavg_grpo" and r["dirichlet_alpha"] == alpha]
        row = table.loc[f"{alpha:g}"]
        assert len(mine) == len(central) == row["seeds"]
        a = np.mean([np.mean(list(r["agreement per round"].values())) for r in mine])
        assert row["agreement a"] == pytest.approx(a, abs=0.005)
        ref = np.mean([teach.split_reference(stored["preset"], alpha, r["seed"]) for r in mine])
        assert row["√Σw_k² (right angles)"] == pytest.approx(ref, abs=0.005)
        assert 1 / np.sqrt(mine[0]["num_clients"]) - 1e-9 <= ref <= 1  # equal sizes give 1/√K, uneven more
        mean, half, _ = t_interval([100 * (central[r["seed"]] - r["final pass@1"]) for r in mine])
        assert row["Central − FedAvg, final (points, 95 % t)"] == f"{mean:+.1f} ± {half:.1f}".replace("-", "−")
        inside.append(abs(mean) <= half)
    assert ("contains 0 at every α" in teach.alpha_reading()) == all(inside)
    run = Run(preset(stored["preset"], seed=0), None, progress=False).build()  # the split a run trains on
    n = np.array([len(p) for p in run.partitions], dtype=float)
    assert teach.split_reference(stored["preset"], run.config.dirichlet_alpha, 0) == pytest.approx(
        np.sqrt(((n / n.sum()) ** 2).sum()))
    nb = json.loads((root / "notebooks" / "00_quickstart.ipynb").read_text(encoding="utf-8"))
    shown = ["".join(o["data"]["text/plain"]) for c in nb["cells"] if c["cell_type"] == "code"
             and "teach.alpha_sweep()" in "".join(c["source"]) for o in c["outputs"] if "data" in o]
    assert shown and shown[0] == table.to_string()  # the whole table, as the notebook's wide display prints it


def test_a_diagram_prints_its_title_so_that_a_stored_notebook_is_the_same_on_every_run():
    assert repr(round_diagram("fedavg_grpo")) == "<Diagram: one FedAvg-GRPO round>"
    assert " at 0x" not in repr(round_diagram("fedavg_grpo"))
