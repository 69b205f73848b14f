"""Benchmark: what one client's adapter costs in memory, byte by byte, on the ~100 M-parameter base of
``benchmarks/memory_clients.py`` (randomly initialised; nothing is downloaded).

Measured in one process (RSS from ``psutil``, after ``gc.collect()``): the LoRA factors' tensor bytes; the RSS that 20
adapters added to the model take each (the factors plus peft's modules for them); the RSS that 20 held numpy
copies of an adapter's state take each (what a ``fit`` reply holds until the server aggregates); and the RSS given
back when the 20 adapters are dropped again (``Policy.drop``: glibc keeps freed memory for reuse, so little).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/adapter_bytes.py`` (under a minute).
Output: ``benchmarks/results/adapter_bytes.json``.
"""

from __future__ import annotations

import datetime
import gc
import json
import sys
from pathlib import Path

from _machine import cpu_model, package_versions  # noqa: E402  (benchmarks/ is on sys.path when a script runs)
from many_clients import MODEL  # noqa: E402  (the ~100 M-parameter Qwen2 of memory_clients.py)

ROOT = Path(__file__).resolve().parent.parent
N = 20


def main() -> int:
    import psutil
    import torch

    from fedrl_kit.policy import adapters
    from fedrl_kit.policy.tiny import build_tiny_model, build_tokenizer

    torch.set_num_threads(1)
    tok = build_tokenizer()
    model = build_tiny_model(tok, seed=0, **MODEL)
    pm = adapters.attach_lora(model, rank=8, alpha=16.0, seed=0)
    state = adapters.get_state(pm)
    proc = psutil.Process()

    def rss() -> int:
        gc.collect()
        return proc.memory_info().rss

    adapters.set_state(pm, "warm-up", state)  # the first adapter after the global one builds peft's caches
    r0 = rss()
    for i in range(N):
        adapters.set_state(pm, f"client_{i}", state)
    r1 = rss()
    held = [{k: v.copy() for k, v in state.items()} for _ in range(N)]
    r2 = rss()
    for i in range(N):
        adapters.drop_adapter(pm, f"client_{i}")
    r3 = rss()
    out = {
        "benchmark": "adapter_bytes", "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": "OMP_NUM_THREADS=1 .venv/bin/python benchmarks/adapter_bytes.py",
        "machine": {"cpu_model": cpu_model(), "packages": package_versions()},
        "lora_params": int(sum(v.size for v in state.values())),
        "tensor_bytes_per_adapter": int(sum(v.nbytes for v in state.values())),
        "peft_modules_per_adapter": sum(1 for n, _ in pm.named_modules() if n.endswith(".warm-up")),
        "rss_bytes_per_adapter_in_model": (r1 - r0) / N,
        "rss_bytes_per_held_numpy_state": (r2 - r1) / N,
        "rss_bytes_returned_by_dropping_all": r2 - r3,
        "adapters": N,
    }
    del held
    print(json.dumps(out, indent=1))
    path = ROOT / "benchmarks" / "results" / "adapter_bytes.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
