"""fedrl-kit: federated GRPO (FedGRPO, PubSwap, FedMOA) on one engine, offline on a CPU.

Importing the package pins torch's CPU kernels to AVX2 on x86 (:data:`CPU_PINS`, unless torch was imported first;
a variable already set keeps its value), so a seed gives the same run on AVX2 and AVX-512 CPUs (docs/fedgrpo.md,
"Re-runs, torch's CPU kernels").
"""

import os as _os
import platform as _platform
import sys as _sys

__version__ = "0.1.0"

CPU_KERNELS = "avx2"
"""torch's ATen CPU kernel level that runs are pinned to on x86 (the one every current result was computed with)"""
CPU_PINS = {"ATEN_CPU_CAPABILITY": CPU_KERNELS, "MKL_CBWR": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2"}
"""environment variables set (unless already set) when the package is imported before torch on x86"""

if _platform.machine().lower() in ("x86_64", "amd64") and "torch" not in _sys.modules:
    for _name, _value in CPU_PINS.items():
        _os.environ.setdefault(_name, _value)
