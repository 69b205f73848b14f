"""benchmarks/profile_grpo_step.py: the step's shares are measured and add up (not the timings)."""

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("options", [[], ["--prompt-pass", "shared", "--generation-loop", "compact",
                                           "--length-buckets", "2"]])
def test_shares_cover_the_step(options):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import profile_grpo_step

        shares = profile_grpo_step.main(["--steps", "1", "--mu", "1", *options])
    finally:
        sys.path.remove(str(BENCHMARKS))
    parts = [v for k, v in shares.items() if not k.startswith("the rest")]
    assert all(0.0 < v < 1.0 for v in parts)  # each part was found in the profile and took some time
    assert sum(shares.values()) == pytest.approx(1.0)
