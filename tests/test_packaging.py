"""environment.yml and pyproject.toml list the same dependencies; vllm is never imported on a CPU path."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = (ROOT / "environment.yml").read_text().splitlines()
    pip_lines = [line.strip()[2:] for line in env if line.startswith("      - ") and not line.strip().startswith("- -e")]
    assert sorted(pip_lines) == sorted(deps), "environment.yml's pip list and pyproject's dependencies differ"
    assert "python=3.11" in (ROOT / "environment.yml").read_text()


TEST_TOOLS = {"pytest", "pytest-xdist", "pytest-timeout", "hypothesis", "import-linter", "nbval", "trl"}


def test_test_tools_are_a_test_extra_not_runtime_dependencies():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not TEST_TOOLS & {_name(d) for d in meta["dependencies"]}
    assert {_name(d) for d in meta["optional-dependencies"]["test"]} == TEST_TOOLS
    assert '".[real,test]"' in (ROOT / "Makefile").read_text()  # `make install` brings what `make test` runs


def test_vllm_is_only_an_optional_extra_and_never_imported():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "vllm" not in {_name(d) for d in meta["dependencies"]}
    assert any(_name(d) == "vllm" for d in meta["optional-dependencies"]["gpu"])
    code = ("import sys, fedrl_kit.runs, fedrl_kit.cli, fedrl_kit.viz, fedrl_kit.world.real; "
            "print('vllm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_committed_base_checkpoint_is_small_and_loads():
    from fedrl_kit.policy.hub import load_pretrained

    base = ROOT / "data" / "base"
    assert sum(f.stat().st_size for f in base.iterdir()) <= 20 * 2**20
    model, tok = load_pretrained(base)
    assert 1_000_000 <= sum(p.numel() for p in model.parameters()) <= 5_000_000
    assert all(len(tok(t, add_special_tokens=False)["input_ids"]) == 1 for t in ("<think>", "</answer>"))
