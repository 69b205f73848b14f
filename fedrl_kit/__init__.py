"""fedrl-kit: federated GRPO (FedGRPO, PubSwap, FedMOA) on one engine, offline on a CPU.

Importing the package pins torch's CPU kernels to AVX2 on x86 machines, unless torch was imported first;
each variable keeps a value already set. torch otherwise picks its kernels by the CPU it finds (AVX2 or
AVX-512), and they round floats differently: the difference is in the 7th digit of a first step's loss, but
sampling turns it into different completions within a few steps, so the same seed gave a different run on an
AVX-512 CPU (a FedGRPO run ended at 0.282 pass@1 instead of 0.359). The pins (:data:`CPU_PINS`):

- ``ATEN_CPU_CAPABILITY=avx2``: torch's own vectorised kernels (the one that made the difference above);
- ``MKL_CBWR=AVX2``: MKL's conditional numerical reproducibility mode for the matrix products, which MKL
  otherwise dispatches by CPU vendor and model (on the AMD CPU the stored results came from it changes no bit);
- ``DNNL_MAX_CPU_ISA=AVX2``: the same cap for oneDNN's kernels.

With them, a seed gives the same run on AVX2 and AVX-512 AMD CPUs (checked); across CPU vendors it is MKL's
CNR guarantee, not checked here. :func:`fedrl_kit.seeding.cpu_kernels` says which ATen kernels run.
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
