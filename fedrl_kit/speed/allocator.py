"""Keep freed memory in the process, so that a large batch's tensors are not page-faulted in afresh every pass.

On Linux, glibc's ``malloc`` serves a large request (above its mmap threshold: 128 KiB at first, raised as
large blocks are freed, never above 32 MiB) with a fresh ``mmap`` and gives it back to the system with
``munmap`` when it is freed. A CPU tensor of that size therefore costs, besides its computation, one page
fault per 4 KiB page the first time it is written, every time it is allocated. A lockstep GRPO step holds K
clients' rows in one batch, so its activations are K times larger: on the embedded base with K = 8 clients
(512 rows × ~36 tokens) some exceed 32 MiB, and a round took 1.8 million page faults and 1.46× the time of the
same round with the clients one after the other (0.15 million faults: at 64 rows a pass it mostly reuses memory
it already holds; ``benchmarks/results/batched_clients_k8_system_malloc.json``, docs/performance.md,
"Page faults: what kept lockstep behind on a CPU").

:func:`keep_freed_memory` sets three of glibc's ``mallopt`` parameters for the rest of the process:
``M_MMAP_MAX = 0`` (every block comes from a heap, none from its own ``mmap``), ``M_TRIM_THRESHOLD = -1`` (a heap
is never shrunk when its top is freed) and ``M_TOP_PAD`` = 64 MiB (the heap grows in larger steps: without it,
blocks that landed beside the one just freed kept growing the heap, one tensor at a time, for several passes;
``tests/test_allocator.py``). Freed memory then stays with the process and the next pass's tensors reuse it.
Nothing numerical changes: the same operations run on other addresses. What it costs is that the process's
resident memory stays at its peak once reached (as with jemalloc or tcmalloc, which PyTorch's CPU performance
guides recommend for the same reason).

What it cannot change: a block above 64 MiB asked for by a worker thread (the in-process runtime runs each
client's message in one) comes from a fresh ``mmap`` whatever the settings, since a thread's arena grows in heaps
of at most 64 MiB. At K = 16 (78 MB activations) the round still took 2.9–3.6 million faults
(``benchmarks/results/batched_clients_k16_no_passes.json``); the lockstep step on a CPU therefore packs its
clients into passes whose activations stay within 32 MiB (:func:`fedrl_kit.speed.batched.packed_passes`).

:class:`fedrl_kit.runs.Run` calls it for a run whose clients step in lockstep on a CPU. It does nothing (and
returns False) on other C libraries and when the environment variable ``FEDRL_KIT_KEEP_FREED_MEMORY`` is ``0``.
"""

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
    """Make glibc's ``malloc`` keep freed memory in the process from now on; True if it is in effect.

    Idempotent. False, with nothing changed, when the C library is not glibc, when ``mallopt`` refuses a
    value, or when ``FEDRL_KIT_KEEP_FREED_MEMORY=0``.
    """
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
