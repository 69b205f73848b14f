"""What machine a benchmark ran on (shared by the benchmark scripts).

Importing this module imports :mod:`fedrl_kit` first, which pins torch's CPU kernels to AVX2 on x86 (a script
imports it before torch); every result file records the kernels that ran (``cpu_kernels``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fedrl_kit  # noqa: E402,F401  - before torch: the CPU kernel pin
from fedrl_kit.seeding import cpu_model  # noqa: E402,F401  - re-exported for the benchmark scripts


RUN_ENVIRONMENT = ("HF_HUB_OFFLINE", "OMP_NUM_THREADS", "OMP_WAIT_POLICY")
"""Environment variables that change what a benchmark runs or how fast: a result's command names those that were set."""


def env_prefix(environ=None) -> str:
    """``"OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE "``: the variables of ``RUN_ENVIRONMENT`` set in this process,
    as a prefix for the command a result file records, so that it names what the run actually ran with."""
    import os

    environ = os.environ if environ is None else environ
    return "".join(f"{k}={environ[k]} " for k in RUN_ENVIRONMENT if environ.get(k))


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


def resume_environment_problem(old: dict, path) -> str | None:
    """Why the runs of an existing result file (``old``) may not be extended with runs made here, or None.

    A file's runs are paired with each other seed by seed, so they must come from one environment: the
    same versions of ``PACKAGES`` (a file written before versions were recorded counts as another
    environment, since nothing says it was this one) and the same torch CPU kernels (AVX2 and AVX-512 round
    floats differently; a file that does not record them counts as unknown). The same code has given different
    numbers in different environments, so mixing them would make a paired difference partly an environment effect.
    """
    from fedrl_kit.seeding import cpu_kernels

    here = package_versions()
    then = old.get("packages")
    if then is None:
        return (f"{path} records no package versions (it was written before they were recorded), so its runs "
                f"cannot be shown to come from this environment")
    changed = {k: (then.get(k), v) for k, v in here.items() if then.get(k) != v}
    if old.get("cpu_kernels") != cpu_kernels():  # absent: written before the kernels were recorded
        changed["torch CPU kernels"] = (old.get("cpu_kernels", "not recorded"), cpu_kernels())
    if changed:
        return f"{path} ran with other package versions: " + ", ".join(
            f"{k} {a} (here {b})" for k, (a, b) in changed.items())
    return None


def check_resume_environment(old: dict, path, allow_mixed: bool) -> None:
    """Refuse (SystemExit) to extend ``old`` with runs from another environment unless ``allow_mixed``."""
    why = resume_environment_problem(old, path)
    if why and not allow_mixed:
        raise SystemExit(f"--resume: {why}. Re-run the whole grid without --resume, or pass "
                         f"--allow-mixed-environment to pair runs across environments anyway")
    if why:
        print(f"warning: {why}; extending it anyway (--allow-mixed-environment)", flush=True)


def save_result(path, benchmark: str, argv, settings: dict, runs: list, summary: dict, quiet: bool = False,
                prefix: str | None = None, note: str = SHARED_CPU_NOTE) -> dict:
    """Write an experiment's JSON (when, the exact command, the CPU) and print its summary.

    ``prefix`` (the environment the command ran with) defaults to :func:`env_prefix`'s, ``note`` to the shared CPU
    machine's.
    """
    import datetime
    import json
    import os
    import shlex

    from fedrl_kit.seeding import cpu_kernels

    out = dict(
        benchmark=benchmark, date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        command=f"{env_prefix() if prefix is None else prefix}.venv/bin/python benchmarks/{benchmark}.py "
                + shlex.join(argv if argv is not None else sys.argv[1:]),  # quoted: it runs as written
        cpu=cpu_model(), cpu_kernels=cpu_kernels(), omp_num_threads=os.environ.get("OMP_NUM_THREADS"), note=note,
        packages=package_versions(),
        settings=settings, runs=runs, summary=summary,
    )
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(out, indent=2))
    if not quiet:
        print(json.dumps(summary, indent=2))
    return out
