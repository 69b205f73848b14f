"""Named random streams: every draw in a run comes from ``stream_seed(name, seed, *keys)``.

The streams, their keys and what each draws: docs/design.md, "Random streams".
"""

from __future__ import annotations

import functools

import numpy as np

_SWAP, _PUBLIC, _GT, _SERVER, _MALICIOUS, _SYNTH, _SFT = 10_000, 20_000, 40_000, 50_000, 60_000, 70_000, 31_337
_EVAL, _PARTICIPANTS, _RANDOM_EXPERTS = 80_000, 90_000, 100_000

_LAYOUT = {
    # name: (keys it takes, entropy list from (seed, *keys))
    "client/batch": (3, lambda s, r, c, t: [s, r, c, t]),
    "client/rollout": (3, lambda s, r, c, t: [s + 1, r, c, t]),
    "pubswap/public_prompts": (2, lambda s, r, p: [s, r, _PUBLIC + p, 0]),
    "pubswap/public_rollout": (3, lambda s, r, c, t: [s + 2, r, c, t]),
    "pubswap/swap": (2, lambda s, r, p: [s, r, _SWAP + p, 0]),
    "fedgrpo/questions": (2, lambda s, r, t: [s, r, _SERVER, t]),
    "fedgrpo/candidates": (2, lambda s, r, t: [s + 1, r, _SERVER, t]),
    "fedgrpo/ground_truth": (0, lambda s: [s, 0, _GT, 0]),
    "fedgrpo/labels": (0, lambda s: [s, 0, _GT, 1]),
    "fedgrpo/official_experts": (0, lambda s: [s, 0, _GT, 2]),
    "fedgrpo/random_experts": (2, lambda s, r, t: [s, r, _RANDOM_EXPERTS, t]),
    "fedgrpo/malicious": (3, lambda s, r, c, t: [s, r, _MALICIOUS + c, t]),
    "fedgrpo/evaluator_init": (1, lambda s, c: [s, 0, c, 77]),
    "fedgrpo/evaluator_batch": (2, lambda s, c, t: [s, t, _EVAL + c, 0]),
    "fedgrpo/evaluator_rollout": (2, lambda s, c, t: [s, t, _EVAL + c, 1]),
    "fedgrpo/evaluator_samples": (2, lambda s, c, h: [s, h, _EVAL + c, 2]),
    "fedgrpo/reward_samples": (2, lambda s, g, h: [s, h, _EVAL + g, 3]),
    "dpsda/histogram": (1, lambda s, c: [s, 0, _SYNTH + c, 0]),
    "dpsda/questions": (1, lambda s, c: [s, 0, _SYNTH + c, 1]),
    "sft/batch": (2, lambda s, k, t: [s, k, _SFT, t]),
    "server/participants": (1, lambda s, r: [s, r, _PARTICIPANTS, 0]),
}
STREAMS = tuple(_LAYOUT)
"""every stream name"""


def stream_seed(name: str, seed: int, *keys: int) -> int:
    """A 31-bit seed for draw ``keys`` of stream ``name`` in a run seeded ``seed``."""
    if name not in _LAYOUT:
        raise ValueError(f"unknown random stream {name!r}; streams: {STREAMS}")
    n, layout = _LAYOUT[name]
    if len(keys) != n:
        raise ValueError(f"stream {name!r} takes {n} keys after the seed, got {len(keys)}")
    entropy = [int(x) for x in layout(int(seed), *keys)]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0] & 0x7FFFFFFF)


def rng(name: str, seed: int, *keys: int) -> np.random.Generator:
    """A NumPy generator for draw ``keys`` of stream ``name``."""
    return np.random.default_rng(stream_seed(name, seed, *keys))


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``), else the platform's processor string."""
    import platform

    try:
        with open("/proc/cpuinfo") as fh:
            return next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def cpu_kernels() -> str:
    """The CPU kernel level torch runs with here ("AVX2", "AVX512", "DEFAULT", …)."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())
