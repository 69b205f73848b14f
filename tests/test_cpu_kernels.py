"""Importing fedrl_kit pins torch's CPU kernels to AVX2 on x86, so a seed gives the same run on any such CPU."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
X86 = platform.machine().lower() in ("x86_64", "amd64")


def _kernels(code: str, **env) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    out = subprocess.run([sys.executable, "-c", code + "; import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env={**clean, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True, check=True)
    return out.stdout.split()[-1]


@pytest.mark.skipif(not X86, reason="the pin is x86-only")
def test_importing_fedrl_kit_first_pins_avx2():
    if "avx2" not in Path("/proc/cpuinfo").read_text():
        pytest.skip("this CPU has no AVX2")
    assert _kernels("import fedrl_kit") == "AVX2"


@pytest.mark.skipif(not X86, reason="the pin is x86-only")
def test_a_level_set_by_the_user_is_kept():
    assert _kernels("import fedrl_kit", ATEN_CPU_CAPABILITY="default") == "DEFAULT"


def test_cpu_kernels_reports_what_torch_runs():
    from fedrl_kit.seeding import cpu_kernels
    import torch

    assert cpu_kernels() == str(torch.backends.cpu.get_cpu_capability())


@pytest.mark.skipif(not X86, reason="the pins are x86-only")
def test_mkl_and_onednn_are_pinned_too_and_a_users_value_is_kept():
    clean = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")}
    code = "import os, fedrl_kit; print(os.environ['MKL_CBWR'], os.environ['DNNL_MAX_CPU_ISA'])"
    run = lambda env: subprocess.run([sys.executable, "-c", code], env={**clean, "PYTHONPATH": str(ROOT), **env},  # noqa: E731
                                     capture_output=True, text=True, check=True).stdout.split()
    assert run({}) == ["AVX2", "AVX2"]
    assert run({"MKL_CBWR": "COMPATIBLE"}) == ["COMPATIBLE", "AVX2"]


def test_nothing_is_pinned_when_torch_came_first():
    clean = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "DNNL_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY")}
    code = "import os, torch, fedrl_kit; print(os.environ.get('MKL_CBWR'))"
    out = subprocess.run([sys.executable, "-c", code], env={**clean, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["None"]  # too late to take effect, so not pretended
