"""benchmarks/gpu_check.py on a CPU: ``--smoke`` runs every section; the budget skips and records; bad flags."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"


def run(*flags, timeout=900):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    proc = run("--smoke", "--out", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "gpu_check_smoke.json").read_text())


def test_smoke_runs_every_section_to_the_end(smoke):
    assert smoke["finished"] and smoke["smoke"] and smoke["device"] == "cpu"
    assert list(smoke["sections"]) == ["environment", "lockstep", "sampling", "methods", "notebooks", "rollouts",
                                      "fast_paths"]
    for name, sec in smoke["sections"].items():
        assert sec["status"] == "ok", (name, sec["status"])
    assert smoke["sections"]["environment"]["packages"]["torch"]


def test_smoke_rollouts_generate_every_forced_token_and_give_the_memory_estimate(smoke):
    rows = {r["measurement"]: r for r in smoke["sections"]["rollouts"]["rows"]}
    b, G, T = 2, 2, 8
    assert rows["hf"]["tokens"] == b * G * T and rows["hf"]["seconds"] > 0
    assert rows["grpo_step"]["seconds"] > 0
    assert rows["vllm"]["status"] == "vLLM needs CUDA"
    est = rows["grpo_step"]["estimate_gib"]
    assert est["total"] > est["weights"] > 0


def test_smoke_lockstep_measures_both_modes_per_k(smoke):
    rows = smoke["sections"]["lockstep"]["rows"]
    assert [r["clients"] for r in rows] == [2, 1]
    for r in rows:
        assert r["sequential_s"] > 0 and r["lockstep_s"] > 0
        assert r["speedup"] == pytest.approx(r["sequential_s"] / r["lockstep_s"], rel=1e-2)
        assert r["failed"] == {"sequential": [], "lockstep": []}


def test_smoke_samples_every_variant_and_compares_greedy_completions(smoke):
    sec = smoke["sections"]["sampling"]
    rows = {r["variant"]: r for r in sec["rows"]}
    assert list(rows) == ["generate", "static_graph", "folded", "folded_static_graph"]
    assert sec["copy_bandwidth_gb_s"] > 0
    for v, r in rows.items():
        assert r["status"] == "ok", (v, r["status"])
        assert r["ms_per_step"] > 0 and r["over_bound"] == pytest.approx(r["ms_per_step"] / r["bound_ms_per_step"],
                                                                         rel=2e-2)
    # float32 on the embedded base: a static cache and a folded adapter decode greedily to the same tokens
    assert rows["generate"]["greedy_identical_rows"] == 1.0
    assert rows["static_graph"]["greedy_identical_rows"] == 1.0
    assert rows["folded"]["greedy_identical_tokens"] >= 0.9


def test_smoke_runs_one_round_of_every_registered_method(smoke):
    from fedrl_kit.methods import METHODS

    rows = {r["method"]: r for r in smoke["sections"]["methods"]["rows"]}
    assert sorted(rows) == sorted(METHODS)
    for m, r in rows.items():
        assert r["status"] == "ok", (m, r["status"])
        assert r["records"] >= 1 and r["failed_clients"] == 0
        assert r["client_replies"] > 0 or m == "zero_shot", m  # every training method's clients replied


def test_smoke_times_every_fast_path_on_the_same_batches(smoke):
    (row,) = smoke["sections"]["fast_paths"]["rows"]
    variants = smoke["sections"]["fast_paths"]["variants"]
    assert row["status"] == "ok" and set(row["speedup"]) == set(variants)
    assert row["speedup"]["plain"] == 1.0
    assert all(len(row["seconds"][v]) == 1 for v in variants)  # the smoke's one repetition each


def test_a_spent_budget_skips_the_measurements_and_says_so(tmp_path):
    proc = run("--smoke", "--budget-s", "0.5", "--sections", "lockstep", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((tmp_path / "gpu_check_smoke.json").read_text())
    rows = data["sections"]["lockstep"]["rows"]
    assert [r["clients"] for r in rows] == [2, 1]
    assert all(r["status"].startswith("skipped:") for r in rows)
    assert "rollouts" not in data["sections"] and data["finished"]


@pytest.mark.parametrize("flags, message", [
    (["--budget-s", "0"], "--budget-s must be > 0"),
    (["--methods", "fedavg"], "unknown method(s) ['fedavg']"),
    (["--clients", "0"], "--clients must be >= 1"),
])
def test_bad_flags_are_refused_naming_the_flag(tmp_path, flags, message):
    proc = run("--smoke", "--out", str(tmp_path), *flags, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr
    assert not list(tmp_path.iterdir())  # refused before anything was written


def test_the_plain_step_it_times_is_the_reference_path():
    """The script keeps its imports lazy (the GPU machine's Python imports fedrl_kit only when a section runs), so it
    spells the reference path out; it must stay the package's."""
    import ast

    from fedrl_kit.config import REFERENCE_PATH

    tree = ast.parse(SCRIPT.read_text())
    plain = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", None) == "PLAIN" for t in node.targets))
    assert {k.arg: ast.literal_eval(k.value) for k in plain.keywords} == REFERENCE_PATH


def test_a_lockstep_round_whose_clients_failed_is_a_failed_row_and_misses_the_goal(tmp_path, monkeypatch):
    """The lockstep round's clients raised (as on a GPU once): the row fails and the goal is not met on its time."""
    from conftest import import_benchmark

    gen = import_benchmark("gpu_check")
    check = next(gen)
    try:
        import batched_clients

        def fake_main(argv):  # a K = 8 run whose lockstep clients all raised: fast, and no speedup
            out = Path(argv[argv.index("--out") + 1])
            error = dict(client="client_0", message="fit", reason="raised", error="RuntimeError: boom")
            run = dict(median_s=dict(sequential=20.0, lockstep=2.0), speedup=None, seconds={},
                       same_rewards=False, failed=dict(sequential=[], lockstep=[error] * 8))
            out.write_text(json.dumps(dict(runs=[run], settings=dict(
                prompts_per_step=8, num_generations=8, max_new_tokens=20, num_iterations=2, lora_rank=8))))
            return 1

        monkeypatch.setattr(batched_clients, "main", fake_main)
        args = check.parse_args(["--smoke", "--sections", "lockstep", "--clients", "8", "--out", str(tmp_path)])
        report = check.Report(args, [])
        check.lockstep(report, args, check.Models("cpu", 0, tmp_path))
        sec = report.data["sections"]["lockstep"]
        (row,) = sec["rows"]
        assert row["speedup"] is None and row["status"].startswith("failed: 8 client replies failed")
        assert "client_0: RuntimeError: boom" in row["status"]
        assert sec["goal_met"] is False
    finally:
        gen.close()


def test_a_method_round_whose_clients_raised_is_a_failed_row(tmp_path, monkeypatch):
    """The runtime carries a run past clients that raise, so "the round ran" is not enough: they fail the row."""
    from conftest import import_benchmark

    import fedrl_kit.federation.client as client

    def broken(self, *args, **kwargs):
        raise RuntimeError("Expected all tensors to be on the same device")

    monkeypatch.setattr(client.GRPOClient, "local_step", broken)
    gen = import_benchmark("gpu_check")
    check = next(gen)
    try:
        args = check.parse_args(["--smoke", "--sections", "methods", "--methods", "fedavg_grpo",
                                 "--out", str(tmp_path)])
        report = check.Report(args, [])
        check.methods(report, args, check.Models("cpu", 0, tmp_path))
        (row,) = report.data["sections"]["methods"]["rows"]
        assert row["failed_clients"] == 2 and row["client_replies"] == 0
        assert row["status"].startswith("failed: 2 client replies failed (first, client_0: RuntimeError: Expected")
    finally:
        gen.close()


def test_smoke_runs_a_notebook_under_papermill(smoke):
    sec = smoke["sections"]["notebooks"]
    (row,) = sec["rows"]
    assert row["notebook"] == "00_quickstart" and row["status"] == "ok", row
    assert row["cells_run"] == row["code_cells"] > 0 and row["error"] is None


def test_the_offline_hub_cache_resolves_the_full_presets_hub_id_to_a_local_model(tmp_path):
    """The notebooks section's trick: the full preset's hub id loads, offline, the model the cache points to."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import gpu_check

    cache = gpu_check.offline_hub_cache(tmp_path / "hub", gpu_check.FULL_BASE, gpu_check.BASE)
    code = ("from fedrl_kit.policy.hub import check_model_available; from fedrl_kit.policy.engine import Policy; "
            f"print(check_model_available({gpu_check.FULL_BASE!r}).kind); "
            f"print(Policy.load({gpu_check.FULL_BASE!r}).model.config.hidden_size)")
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    hidden = json.loads((ROOT / "data" / "base" / "config.json").read_text())["hidden_size"]
    assert proc.stdout.split() == ["hub", str(hidden)]
