"""What machine a benchmark ran on (shared by the benchmark scripts)."""

import platform


def cpu_model() -> str:
    """The CPU's model name (Linux), else the platform's processor string."""
    try:
        with open("/proc/cpuinfo") as fh:
            return next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


SHARED_CPU_PREFIX = "OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE "
SHARED_CPU_NOTE = "run on a shared 2-core machine while other jobs ran: wall times are pessimistic"


PACKAGES = ("torch", "transformers", "peft", "tokenizers", "numpy", "flwr-datasets")
"""Packages whose version can change a run's numbers (float kernels, model code, partitions)."""


def package_versions() -> dict:
    """The installed version of each of ``PACKAGES`` (None when one is missing), kept in every result file so
    that a later run that does not reproduce it can tell an environment change from a code change."""
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def save_result(path, benchmark: str, argv, settings: dict, runs: list, summary: dict, quiet: bool = False,
                prefix: str = SHARED_CPU_PREFIX, note: str = SHARED_CPU_NOTE) -> dict:
    """Write an experiment's JSON (when, the exact command, the CPU) and print its summary.

    ``prefix`` (the environment the command ran with) and ``note`` default to the shared CPU machine's.
    """
    import datetime
    import json
    import os
    import sys
    from pathlib import Path

    out = dict(
        benchmark=benchmark, date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        command=f"{prefix}.venv/bin/python benchmarks/{benchmark}.py "
                + " ".join(argv if argv is not None else sys.argv[1:]),
        cpu=cpu_model(), omp_num_threads=os.environ.get("OMP_NUM_THREADS"), note=note, packages=package_versions(),
        settings=settings, runs=runs, summary=summary,
    )
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=2))
    if not quiet:
        print(json.dumps(summary, indent=2))
    return out
