"""benchmarks/fedgrpo_selection_signals.py: φ's neighbour purity, competence against topic shares, the judges."""

import numpy as np
import pytest

from conftest import import_benchmark
from fedrl_kit.fedgrpo.encoder import encode
from fedrl_kit.runs import Run
from test_fedgrpo_method import fg_config


@pytest.fixture(scope="module")
def bench():
    yield from import_benchmark("fedgrpo_selection_signals")


def test_purity_is_the_share_of_nearest_exemplars_sharing_the_topic(bench, tiny_dir):
    run = Run(fg_config(tiny_dir), progress=False).build()
    got = bench.neighbour_purity(run.server, run.truth, 1, 3)
    z_p = encode(run.server.policy, list(run.server.world.aux["prompt"]), "policy", 1)
    z_s = encode(run.server.policy, list(run.server.world.queries["prompt"]), "policy", 1)
    cos = (z_s / np.linalg.norm(z_s, axis=1, keepdims=True)) @ (z_p / np.linalg.norm(z_p, axis=1, keepdims=True)).T
    near = np.argsort(-cos, axis=1, kind="stable")[:, :3]
    topics_p, topics_s = np.array(run.server.world.aux["topic"]), np.array(run.truth.fact("queries").rows["topic"])
    assert got == pytest.approx(float((topics_p[near] == topics_s[:, None]).mean()))


def test_the_judges_table_has_each_client_and_numbers_in_range(bench, tiny_dir, monkeypatch):
    monkeypatch.setattr(bench, "HELD_OUT", 10)
    run = Run(fg_config(tiny_dir), progress=False).build()
    rows = bench.evaluator_quality(run)
    assert [r["client"] for r in rows] == list(run.clients)
    for r, c in zip(rows, run.clients.values()):
        assert r["own_questions"] == len(c.prompts)
        assert all(0 <= r[k] <= 1 for k in ("accuracy_own", "accuracy_others", "p_true_others"))
    corr = bench.competence_correlation(run)
    assert -1 <= corr <= 1
