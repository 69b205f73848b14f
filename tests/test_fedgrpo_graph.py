"""The confidence-graph figure (fedrl_kit.fedgrpo.graph) and the K/M ablation (experiments.fedgrpo_ablation)."""

import numpy as np
import pytest

from conftest import small_config
from experiments.fedgrpo_ablation import ablation_configs, run_ablation
from fedrl_kit.fedgrpo.algorithm import server_state
from fedrl_kit.fedgrpo.diagnostics import selection_quality
from fedrl_kit.fedgrpo.graph import EXPERT, LEGEND_LEVELS, confidence_graph
from fedrl_kit.notebook import headline
from fedrl_kit.runs import Run

FAST = dict(method="fedgrpo", fedgrpo={"neighbours": 4}, evaluator={"sft_steps": 2, "sft_batch": 4})


def test_confidence_graph_edges_are_topic_means_of_the_cache_and_experts_are_red(tiny_dir):
    run = Run(small_config(tiny_dir, **FAST), progress=False).build()
    sel = selection_quality(run.server, run.truth, L=4, M=2)  # fills the cache
    fig = confidence_graph(run.server, run.truth, [0, 1, 2], sel["experts"], active=1)
    cells = server_state(run.server).cache.as_matrix()  # [K, N_p]
    aux_topics = np.array(run.world.aux["topic"])
    topics = sorted(set(aux_topics))
    by_hand = np.array([[cells[k, aux_topics == t].mean() for t in topics] for k in range(3)])  # [K, T]
    top = by_hand.max()
    edges = [tr for tr in fig.data if tr.mode == "lines" and tr.x[0] is not None]
    assert len(edges) == 3 * len(topics)
    widths = np.array([tr.line.width for tr in edges]).reshape(3, len(topics))
    np.testing.assert_allclose(widths, 0.5 + 8 * by_hand / top)
    legend = [tr.name for tr in fig.data if tr.showlegend is not False and tr.x[0] is None]
    assert legend[:len(LEGEND_LEVELS)] == [f"{lv * top:.2f}" for lv in LEGEND_LEVELS]
    assert "chosen expert (Top-M, eq. 6)" in legend and "the question's topic" in legend
    clients = next(tr for tr in fig.data if tr.mode == "markers+text" and tr.x[0] == 0)
    chosen = {k for k, c in enumerate(clients.marker.color) if c == EXPERT}
    assert chosen == set(int(k) for k in sel["experts"][1])  # the active step is question 1
    assert len(fig.layout.sliders[0].steps) == 3 and fig.layout.sliders[0].active == 1
    with pytest.raises(ValueError, match="active"):
        confidence_graph(run.server, run.truth, [0], sel["experts"], active=1)
    with pytest.raises(ValueError, match="experts"):
        confidence_graph(run.server, run.truth, [len(sel["experts"])], sel["experts"])


def test_ablation_varies_one_knob_at_fixed_questions_per_step_and_matches_plain_runs(tiny_dir):
    base = small_config(tiny_dir, rounds=1, **FAST)
    configs = ablation_configs(base, M_grid=[1, 2], K_grid=[2])
    assert list(configs) == [("M", 1), ("M", 2), ("K", 2)]
    Q = base.prompts_per_step * base.num_clients
    assert all(c.fedgrpo.questions_per_step == Q for c in configs.values())
    assert [c.fedgrpo.num_experts for c in configs.values()] == [1, 2, base.fedgrpo.num_experts]
    assert [c.num_clients for c in configs.values()] == [3, 3, 2]
    assert all(c.fedgrpo.neighbours == 4 and c.seed == base.seed for c in configs.values())
    with pytest.raises(ValueError, match="base.method"):
        ablation_configs(small_config(tiny_dir, method="fedavg_grpo"), M_grid=[1])
    chosen = {k: configs[k] for k in [("M", 1), ("K", 2)]}
    rows = run_ablation(chosen)
    assert [(r["ablation"], r["value"]) for r in rows] == [("M", 1), ("K", 2)]
    plain = Run(chosen[("K", 2)], progress=False).run()  # the same point run by hand
    assert rows[1]["final pass@1"] == headline(plain)["final pass@1"]
    srv = [r for r in plain if r["kind"] == "client" and r["client"] == "server"]
    assert rows[1]["hit rate (main)"] == pytest.approx(np.mean([r["expert_hit_rate_major"] for r in srv]), nan_ok=True)
