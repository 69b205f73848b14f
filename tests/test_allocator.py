"""Freed memory kept in the process (fedrl_kit.speed.allocator): large tensors re-allocated without page faults.

The allocator's setting is process-wide, so each check runs in a fresh Python process of its own.
"""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="the setting is glibc's (elsewhere keep_freed_memory does nothing)")

CHURN = """
import json, resource, sys
import torch
from fedrl_kit.speed import allocator

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

def churn():  # a lockstep pass's worth of large activations: allocated, used, freed, again
    counts = []
    for _ in range(12):
        before = faults()
        x = torch.ones(512, 36, 512)  # 36 MiB: above glibc's largest mmap threshold (32 MiB)
        y = x * 2
        z = y + x
        del x, y, z
        counts.append(faults() - before)
    return counts

first = churn()
applied = allocator.keep_freed_memory()
again = allocator.keep_freed_memory()
kept = churn()
print(json.dumps(dict(first=first, applied=applied, again=again, kept=kept)))
"""


def _run(code: str, **env):
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@glibc
def test_freed_memory_is_reused_without_page_faults():
    r = _run(CHURN, FEDRL_KIT_KEEP_FREED_MEMORY="1")
    assert r["applied"] is True and r["again"] is True
    page = os.sysconf("SC_PAGE_SIZE")
    tensor_pages = 512 * 36 * 512 * 4 // page
    # by default every pass faults its three tensors' pages in afresh
    assert min(r["first"]) > 2 * tensor_pages, r
    # kept: the heap grows over the first passes, and now and then a block lands past the memory touched so far
    # (glibc places it where it fits, not always in the one just freed): under a quarter of the faults in all,
    # and at least half the passes after the first take none
    assert sum(r["kept"]) < sum(r["first"]) / 4, r
    assert sum(c < tensor_pages // 10 for c in r["kept"][1:]) >= len(r["kept"][1:]) / 2, r


@glibc
def test_the_environment_can_turn_it_off():
    r = _run(CHURN, FEDRL_KIT_KEEP_FREED_MEMORY="0")
    assert r["applied"] is False and r["again"] is False
    assert min(r["kept"]) > 2 * (512 * 36 * 512 * 4 // os.sysconf("SC_PAGE_SIZE")), r


BUILD = """
import json, sys
from fedrl_kit.speed import allocator
from fedrl_kit.runs import Run
sys.path.insert(0, "tests")
from conftest import small_config

calls = []
real = allocator.keep_freed_memory
allocator.keep_freed_memory = lambda: calls.append(1) or real()
tiny = sys.argv[1]
for batching in ("sequential", "lockstep"):
    Run(small_config(tiny, method="fedavg_grpo", client_batching=batching, rounds=1), progress=False).build()
    calls.append(batching)
print(json.dumps(calls))
"""


def test_a_lockstep_run_on_a_cpu_keeps_freed_memory_and_a_sequential_one_does_not(tiny_dir):
    assert _run(BUILD.replace("sys.argv[1]", repr(str(tiny_dir)))) == ["sequential", 1, "lockstep"]
