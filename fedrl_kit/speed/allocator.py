"""Keep freed memory in the process, so that a large batch's tensors are not page-faulted in afresh every pass."""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_TOP_PAD = -2
M_MMAP_MAX = -4
TOP_PAD = 64 << 20
_applied = False


def keep_freed_memory() -> bool:
    """Make glibc's ``malloc`` keep freed memory in the process from now on; True if it is in effect."""
    global _applied
    if _applied:
        return True
    if os.environ.get("FEDRL_KIT_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    # mallopt returns 1 on success, 0 on a value it refuses
    _applied = all(libc.mallopt(param, value) == 1 for param, value in
                   ((M_TRIM_THRESHOLD, -1), (M_TOP_PAD, TOP_PAD), (M_MMAP_MAX, 0)))
    return _applied


def freed_memory_kept() -> bool:
    """Whether :func:`keep_freed_memory` is in effect in this process (benchmarks record it)."""
    return _applied
