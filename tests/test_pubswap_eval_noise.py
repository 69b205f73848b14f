"""benchmarks/pubswap_eval_noise.py: which run folders it reads, the larger test set it builds, the per-problem
rates it records and the contrasts it computes from them."""

import json
import math
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import pubswap_eval_noise as noise  # noqa: E402

from fedrl_kit.config import preset  # noqa: E402
from fedrl_kit.world.registry import build_world  # noqa: E402


def _run_folder(tmp_path, rounds=2, state_round=2, final_eval=True):
    d = tmp_path / "run"
    (d / "checkpoint").mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"rounds": rounds}))
    recs = [{"kind": "global", "round": r, "pass@1": 0.5} for r in range(rounds + (1 if final_eval else 0))]
    (d / "metrics.jsonl").write_text("\n".join(map(json.dumps, recs)) + "\n")
    (d / "checkpoint" / "state.json").write_text(json.dumps({"round": state_round}))
    (d / "checkpoint" / "global.npz").write_bytes(b"x")
    return d


def test_only_finished_settled_runs_are_read(tmp_path):
    d = _run_folder(tmp_path)
    later = time.time() + 1000
    assert noise.not_complete(d, now=later) is None
    assert "less than" in noise.not_complete(d)  # just written
    old = time.time() - 1000
    for p in [d, *d.rglob("*")]:
        os.utime(p, (old, old))
    assert noise.not_complete(d) is None
    (d / "checkpoint" / "state.json").write_text(json.dumps({"round": 1}))
    assert "last round" in noise.not_complete(d, now=later)
    assert "final global" in noise.not_complete(_run_folder(tmp_path / "b", final_eval=False), now=later)


def test_larger_test_starts_with_the_runs_own_and_avoids_its_other_splits():
    cfg = preset("quick", seed=3, n_train=8, n_test=20)  # 140 public and 100 auxiliary problems, as the runs
    world = build_world(cfg)
    big, carve = noise.larger_test(cfg, world)
    assert len(big) == carve["n_full"] == 1500 - 140 - 100
    assert big["prompt"][:20] == world.test["prompt"]
    assert not set(big["prompt"]) & (set(world.public["prompt"]) | set(world.aux["prompt"]))
    assert big.column_names == world.test.column_names
    assert not carve["own_prefix_of_carve"]  # make_world's carve at a larger n_test is another one


class _FakePolicy:
    """Completion i of a batch answers right when (seed + i) % 3 == 0: known pass rates per problem."""

    def rollout(self, adapter, prompts, n, seed):
        comps = [str((seed + i) % 3) for i in range(len(prompts) * n)]
        return SimpleNamespace(prompts=[p for p in prompts for _ in range(n)], completions=comps,
                               completion_mask=torch.ones(len(comps), 2))


def test_per_problem_rates_give_evaluates_pass_at_1():
    rows = {"prompt": [f"p{i}" for i in range(7)], "answer": ["0"] * 7, "topic": ["add"] * 7}

    class DS(dict):
        def __len__(self):
            return 7

    cfg = SimpleNamespace(eval_samples=3, seed=0, eval_batch_size=6)  # 2 problems a batch
    right = lambda prompts, completions, answer: [float(c == a) for c, a in zip(completions, answer)]  # noqa: E731
    res, rates = noise.per_problem(_FakePolicy(), DS(rows), cfg, right)
    seed = 17  # eval_seed(0)
    want = []
    for s in range(0, 7, 2):
        k = min(2, 7 - s) * 3
        want += [float((seed + s + i) % 3 == 0) for i in range(k)]
    assert rates.tolist() == pytest.approx(np.asarray(want).reshape(7, 3).mean(axis=1).tolist())
    assert res["pass@1"] == pytest.approx(float(np.mean(want)))


def _fake_run(method, seed, rates_own, rates_full, sha="s"):
    return {"run": f"{method}/{seed}", "method": method, "seed": seed, "tau": 48, "n_test": 2,
            "pass@1_own": float(np.mean(rates_own)), "rates_own": rates_own, "rates_full": rates_full,
            "test_prompts_sha": sha}


def test_contrasts_pair_by_seed_and_split_the_variance():
    rng = np.random.default_rng(1)
    runs = []
    for s in (0, 1, 2):
        for m in ("fedavg_grpo", "pubswap_balanced", "pubswap_noswap"):
            full = rng.integers(0, 5, 8) / 4
            runs.append(_fake_run(m, s, full[:2].tolist(), full.tolist()))
    rows = noise.contrasts(runs)
    assert [r["contrast"] for r in rows] == ["Balanced − FedAvg-GRPO", "control − FedAvg-GRPO",
                                             "Balanced − control"]
    r = rows[0]
    by = {(x["method"], x["seed"]): x for x in runs}
    d_own = [100 * (by["pubswap_balanced", s]["pass@1_own"] - by["fedavg_grpo", s]["pass@1_own"]) for s in (0, 1, 2)]
    d_full = [100 * (np.mean(by["pubswap_balanced", s]["rates_full"]) - np.mean(by["fedavg_grpo", s]["rates_full"]))
              for s in (0, 1, 2)]
    assert r["difference_own"] == pytest.approx(d_own) and r["difference_full"] == pytest.approx(d_full)
    assert r["K"] == 4 and r["seeds"] == [0, 1, 2]
    # each seed's blocks are disjoint n-problem means of its differences: their mean is the full difference
    assert [np.mean(b) for b in r["difference_blocks"]] == pytest.approx(d_full, abs=1e-2)
    assert r["sd_seeds_own"] == pytest.approx(np.std(d_own, ddof=1))
    w = np.mean([np.var(b, ddof=1) for b in r["difference_blocks"]])
    assert r["sd_within_blocks"] == pytest.approx(math.sqrt(w), rel=1e-2)
    assert r["half_own"] == pytest.approx(4.302653 * np.std(d_own, ddof=1) / math.sqrt(3), rel=1e-4)  # t_{0.975, 2}
    assert "| 48 | Balanced − FedAvg-GRPO | 0–2 |" in noise.markdown(rows)
    runs[0]["test_prompts_sha"] = "other"
    with pytest.raises(ValueError, match="different test sets"):
        noise.contrasts(runs)
