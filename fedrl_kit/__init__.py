"""fedrl-kit: federated GRPO (FedGRPO, PubSwap, FedMOA) on one engine, offline on a CPU.

Importing the package pins torch's CPU kernels to AVX2 on x86 machines (``ATEN_CPU_CAPABILITY=avx2``),
unless the variable is already set or torch was imported first. torch otherwise picks its kernels by the
CPU it finds (AVX2 or AVX-512), and the two round floats differently: the difference is in the 7th digit
of a first step's loss, but sampling turns it into different completions within a few steps, so the same
seed gave a different run on an AVX-512 machine (a FedGRPO run ended at 0.282 pass@1 instead of 0.359).
With the pin, a seed gives the same run on any x86 CPU with AVX2. ``ATEN_CPU_CAPABILITY=default`` (or any
value set before import) overrides it; :func:`fedrl_kit.seeding.cpu_kernels` says which kernels run.
"""

import os as _os
import platform as _platform
import sys as _sys

__version__ = "0.1.0"

CPU_KERNELS = "avx2"
"""torch's CPU kernel level that runs are pinned to on x86 (the one every stored result was computed with)"""

if _platform.machine().lower() in ("x86_64", "amd64") and "torch" not in _sys.modules:
    _os.environ.setdefault("ATEN_CPU_CAPABILITY", CPU_KERNELS)
