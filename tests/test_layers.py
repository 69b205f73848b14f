"""The package's layers hold: `lint-imports` checks pyproject's contracts (layers, no cycles) on every import,
those inside functions included, and a contract that is broken is reported as broken."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint(*args, cwd=ROOT):
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    return subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_the_layer_and_cycle_contracts_are_kept():
    out = lint("--config", str(ROOT / "pyproject.toml"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "fedrl_kit's layers KEPT" in out.stdout
    assert "no import cycles among the modules of any package KEPT" in out.stdout
    assert "the run configuration imports no method package" in out.stdout  # a forbidden contract, wrapped
    assert "core ⟂ extras KEPT" in out.stdout
    assert "Contracts: 4 kept, 0 broken." in out.stdout


def test_a_layer_order_the_code_breaks_is_reported(tmp_path):
    """The same tool on a contract the code does not keep (the reference path above the GRPO step that imports
    it): it must say BROKEN and name the import, so the passing check above can fail."""
    config = tmp_path / "contract.toml"
    config.write_text('[tool.importlinter]\nroot_packages = ["fedrl_kit"]\n\n'
                      '[[tool.importlinter.contracts]]\nname = "upside down"\ntype = "layers"\n'
                      'layers = ["fedrl_kit.rollout", "fedrl_kit.grpo"]\n')
    out = lint("--config", str(config))
    assert out.returncode != 0
    assert "upside down BROKEN" in out.stdout
    assert "fedrl_kit.grpo -> fedrl_kit.rollout" in out.stdout


def test_importing_the_config_does_not_load_torch():
    """The settings' defaults live in torch-free fedrl_kit.settings: importing the config and reading its fields'
    defaults (what `fedrl --help` does) does not pay torch's import (seconds). Validating a config imports its
    method's module, which may."""
    import subprocess
    import sys

    code = ("import sys, dataclasses, fedrl_kit.config as c; [f.default for f in dataclasses.fields(c.RunConfig)]; "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))[:3])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


EXTRAS = ("fedrl_kit.world.real", "fedrl_kit.policy.hub", "fedrl_kit.policy.backends", "fedrl_kit.federation.lockstep",
          "fedrl_kit.speed.batched", "fedrl_kit.speed.allocator", "fedrl_kit.flower", "fedrl_kit.deploy",
          "fedrl_kit.deploy_loopback", "fedrl_kit.federation.split", "fedrl_kit.notebook_engine")
"""the optional parts of pyproject's "core ⟂ extras" contract that a plain run on a local base never needs (the
memory check, also optional, guards every run built from a config)"""


def test_a_round_of_each_paper_method_loads_no_optional_part(tiny_dir):
    """The contract allows the core to import an optional part inside the function a config's choice reaches; a round
    of FedAvg-GRPO, FedGRPO, PubSwap and FedMOA on the embedded world and a local base reaches none of them."""
    code = f"""
import sys, tempfile
sys.path.insert(0, {str(ROOT / "tests")!r})
from conftest import small_config
from fedrl_kit.runs import Run
for method in ("fedavg_grpo", "fedgrpo", "pubswap_balanced", "fedmoa"):
    with tempfile.TemporaryDirectory() as d:
        cfg = small_config({tiny_dir!r}, method=method, rounds=1, n_aux=24, local_steps=2)
        Run(cfg, d + "/run", progress=False).run()
print(sorted(m for m in sys.modules if m in {EXTRAS!r}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:]
