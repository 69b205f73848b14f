"""Run model-written Python against tests in a contained subprocess.

The code-generation tasks (MBPP-style, HumanEval) need a verifiable reward:
does the program the policy wrote pass the task's tests? :func:`run_code`
executes ``program`` and then ``tests`` in one namespace in a child Python and
reports a :class:`SandboxResult`; :func:`code_accuracy_reward` wraps it in
TRL's reward signature (FedMOA's accuracy reward r_0 for code, §4.1).

What contains the child, layer by layer:

1. **Process**: a fresh interpreter (``python -I -S -B -X utf8``: isolated
   mode, no ``site`` so no site-packages, the standard library only), in a new
   session and process group (``start_new_session=True``), with its working
   directory a fresh temporary directory (deleted afterwards), an environment
   stripped to ``TMPDIR``/``HOME`` pointing at that directory, stdin empty, and
   stdout/stderr going to files. Program and tests arrive on stdin, so the
   tests are never a file the program could read.
2. **Resource limits** set by the child before any untrusted code runs:
   ``RLIMIT_AS`` (``memory_mb``: a huge allocation raises ``MemoryError`` →
   status "memory"), ``RLIMIT_CPU`` (backstop for the wall-clock limit),
   ``RLIMIT_FSIZE`` (no file, stdout included, beyond 16 MiB),
   ``RLIMIT_NOFILE``, ``RLIMIT_CORE = 0`` and ``RLIMIT_NPROC = 0`` (no new
   processes or threads, but see the limits below for root).
3. **Wall-clock limit**: the parent waits at most ``timeout_s`` and then kills
   the whole process group with ``SIGKILL`` (status "timeout"). It kills the
   group after every run, before reaping the child, so no stray process of
   the run survives it and the group id cannot have been reused.
4. **In-process guard** installed before the program runs: process creation
   and signalling (``os.fork``, ``os.system``, ``os.exec*``, ``os.spawn*``,
   ``os.posix_spawn``, ``os.kill``, ``subprocess.*``, ``_posixsubprocess``,
   ``setsid``/``setuid`` and friends, ``resource.setrlimit``) raise; writes
   outside the working directory (``open``/``io.open``/``os.open`` in a write
   mode, ``os.remove``/``unlink``/``rmdir``/``rename``/``replace``/``mkdir``/
   ``chmod``/``truncate``…, hence ``shutil.rmtree``/``pathlib`` too) raise;
   ``socket`` creation and name lookups raise; ``ctypes`` cannot be imported.
   Each blocked call raises ``SandboxViolation`` (a ``PermissionError``),
   prints ``sandbox: blocked …`` to stderr and marks the run "forbidden",
   even if the program catches the exception.
5. **Honest result channel**: success is reported on a private pipe with a
   random nonce the program never sees, so ``sys.exit(0)`` or ``os._exit(0)``
   before the tests run cannot fake a pass.

Limits — read before pointing this at hostile code. This is a best-effort
guard for *buggy or reward-hacking model output* in a teaching toolkit, not a
security boundary:

* Layer 4 lives in the same interpreter as the untrusted code. Python has no
  in-process isolation: the original functions stay reachable (through
  closures, ``gc``, ``_io.FileIO``, frame introspection, …) for code that
  tries hard enough. Reading files is not restricted at all.
* As **root**, ``RLIMIT_NPROC`` is not enforced by the kernel, so fork
  containment rests on layer 4 and the process-group kill. Root can also
  raise its hard limits again if it reaches ``setrlimit``.
* There is no network namespace, seccomp filter, cgroup, chroot or
  unprivileged user. Files inside the working directory can fill at most
  16 MiB each for ``timeout_s`` seconds.
For untrusted code in production, run it in a container or VM with no network
as an unprivileged user (or use a purpose-built sandbox) and keep this layer
only as a convenience.
"""

from __future__ import annotations

import ast
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from fedrl_kit.tags import ANSWER_CLOSE, ANSWER_OPEN

Status = Literal["ok", "failed", "timeout", "memory", "error", "forbidden"]

_FSIZE_BYTES = 16 * 2**20
"""largest file (stdout and stderr included) the child may write"""

_NOFILE = 64
"""most file descriptors the child may hold open"""

_MIN_MEMORY_MB = 64
"""an interpreter with the guard loaded needs about 30 MB of address space"""

_STDERR_TAIL_CHARS = 2000
"""how much of the end of the child's stderr a SandboxResult keeps"""

CODE_REWARD_TIMEOUT_S = 2.0
"""wall-clock limit per completion in :func:`code_accuracy_reward`"""

CODE_REWARD_MEMORY_MB = 256
"""address-space limit per completion in :func:`code_accuracy_reward`"""

CODE_REWARD_WORKERS = 2
"""completions checked in parallel; small, so a laptop stays responsive"""


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of one :func:`run_code` call."""

    passed: bool
    """True exactly when status is "ok": the program ran and every test passed"""
    status: Status
    """"ok"; "failed" (a test raised, e.g. AssertionError); "timeout" (killed at
    timeout_s or the CPU limit); "memory" (MemoryError under RLIMIT_AS); "error"
    (the program or tests do not compile, the program raised or exited at top
    level, or the child died without reporting); "forbidden" (the guard blocked
    a call)"""
    stderr_tail: str
    """the last characters of the child's stderr (tracebacks, guard messages)"""
    duration_s: float
    """wall-clock seconds from start to the end of the child"""


# The child's code: read the spec, limit resources, install the guard, run.
# It is passed with -c so nothing of it lies in the working directory.
_RUNNER = r'''
import builtins, io, json, linecache, os, sys, traceback

def _limit_resources(spec):
    import resource, signal
    limits = [
        (resource.RLIMIT_AS, spec["memory_bytes"]),
        (resource.RLIMIT_CPU, spec["cpu_s"]),
        (resource.RLIMIT_FSIZE, spec["fsize_bytes"]),
        (resource.RLIMIT_NOFILE, spec["nofile"]),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
    ]
    for which, value in limits:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass
    # Past RLIMIT_FSIZE a write fails with EFBIG instead of killing the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _install_guard(root, violations):
    import _socket, importlib, posix, resource, shutil, signal, socket, subprocess
    try:
        import _posixsubprocess
    except ImportError:
        _posixsubprocess = None
    write, realpath, join, readlink, getcwd = os.write, os.path.realpath, os.path.join, os.readlink, os.getcwd

    class SandboxViolation(PermissionError):
        """A call the sandbox does not allow."""

    def violation(what):
        violations.append(what)
        try:
            write(2, ("sandbox: blocked " + what + "\n").encode("utf-8", "replace"))
        except OSError:
            pass
        return SandboxViolation("sandbox: " + what + " is not allowed")

    def deny(what):
        def blocked(*args, **kwargs):
            raise violation(what)
        blocked.__name__ = what.rsplit(".", 1)[-1]
        return blocked

    def inside(path, dir_fd=None):
        try:
            if isinstance(path, int):
                full = realpath(readlink("/proc/self/fd/%d" % path))
            else:
                base = readlink("/proc/self/fd/%d" % dir_fd) if dir_fd is not None else getcwd()
                full = realpath(join(base, os.fsdecode(os.fspath(path))))
        except Exception:
            return False
        return full == root or full.startswith(root + os.sep)

    def check(name, path, dir_fd=None):
        if not inside(path, dir_fd):
            raise violation("%s(%r) outside the sandbox directory" % (name, path))

    def patch_os(name, new):
        for mod in (os, posix):
            if hasattr(mod, name):
                setattr(mod, name, new)

    # Processes, sessions, identities, signals to others.
    for name in (
        "fork", "forkpty", "system", "popen", "execv", "execve", "execl", "execle", "execlp",
        "execlpe", "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "spawnle", "spawnlp",
        "spawnlpe", "spawnvp", "spawnvpe", "posix_spawn", "posix_spawnp", "kill", "killpg",
        "setsid", "setpgid", "setpgrp", "setuid", "setgid", "seteuid", "setegid", "setreuid",
        "setregid", "setresuid", "setresgid", "setgroups", "chroot",
    ):
        patch_os(name, deny("os." + name))
    for name in ("run", "call", "check_call", "check_output", "getoutput", "getstatusoutput", "_fork_exec"):
        setattr(subprocess, name, deny("subprocess." + name))

    class DeniedPopen(subprocess.Popen):
        _child_created = False
        def __init__(self, *args, **kwargs):
            raise violation("subprocess.Popen")
        def __del__(self):
            pass
    subprocess.Popen = DeniedPopen
    if _posixsubprocess is not None:
        _posixsubprocess.fork_exec = deny("_posixsubprocess.fork_exec")
    for name in ("pidfd_send_signal", "pthread_kill"):
        if hasattr(signal, name):
            setattr(signal, name, deny("signal." + name))
    # A fresh instance of a built-in module would carry the original functions.
    import _imp
    orig_create_builtin = _imp.create_builtin
    def guarded_create_builtin(spec):
        if spec.name in ("posix", "_posixsubprocess", "_socket", "_signal"):
            raise violation("a fresh instance of built-in module " + spec.name)
        return orig_create_builtin(spec)
    _imp.create_builtin = guarded_create_builtin
    resource.setrlimit = deny("resource.setrlimit")
    resource.prlimit = deny("resource.prlimit")
    importlib.reload = deny("importlib.reload")

    # Filesystem writes outside the working directory.
    def one_path(name):
        orig = getattr(os, name, None)
        if orig is None:
            return
        def wrapper(path, *args, **kwargs):
            check("os." + name, path, kwargs.get("dir_fd"))
            return orig(path, *args, **kwargs)
        wrapper.__name__ = name
        patch_os(name, wrapper)
    for name in (
        "remove", "unlink", "rmdir", "removedirs", "mkdir", "makedirs", "chmod", "lchmod",
        "chown", "lchown", "truncate", "utime", "mkfifo", "mknod", "setxattr", "removexattr",
        "fchmod", "fchown",
    ):
        one_path(name)

    def two_paths(name, check_src=True):
        orig = getattr(os, name, None)
        if orig is None:
            return
        def wrapper(src, dst, *args, **kwargs):
            if check_src:
                check("os." + name, src, kwargs.get("src_dir_fd"))
            check("os." + name, dst, kwargs.get("dst_dir_fd", kwargs.get("dir_fd")))
            return orig(src, dst, *args, **kwargs)
        wrapper.__name__ = name
        patch_os(name, wrapper)
    for name in ("rename", "renames", "replace", "link"):
        two_paths(name)
    two_paths("symlink", check_src=False)  # a link's target is checked when it is written through

    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    orig_os_open = os.open
    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & write_flags:
            check("os.open", path, kwargs.get("dir_fd"))
        return orig_os_open(path, flags, *args, **kwargs)
    patch_os("open", guarded_os_open)

    orig_open = builtins.open
    def guarded_open(file, mode="r", *args, **kwargs):
        if not isinstance(file, int) and any(c in mode for c in "wax+"):
            check("open", file)
        return orig_open(file, mode, *args, **kwargs)
    builtins.open = io.open = guarded_open

    orig_rmtree = shutil.rmtree
    def guarded_rmtree(path, *args, **kwargs):
        check("shutil.rmtree", path, kwargs.get("dir_fd"))
        return orig_rmtree(path, *args, **kwargs)
    guarded_rmtree.avoids_symlink_attacks = orig_rmtree.avoids_symlink_attacks
    shutil.rmtree = guarded_rmtree

    # Network.
    class DeniedSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            raise violation("socket.socket")
    class DeniedRawSocket(_socket.socket):
        def __init__(self, *args, **kwargs):
            raise violation("_socket.socket")
    socket.socket = socket.SocketType = DeniedSocket
    _socket.socket = _socket.SocketType = DeniedRawSocket
    for name in (
        "socketpair", "fromfd", "create_connection", "create_server", "getaddrinfo",
        "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo", "dup",
    ):
        for mod in (socket, _socket):
            if hasattr(mod, name):
                setattr(mod, name, deny("socket." + name))

    # Modules that reach around everything above.
    blocked_modules = {"ctypes", "_ctypes", "cffi", "_testcapi", "_testinternalcapi", "_xxsubinterpreters"}
    class ImportBlocker:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name.partition(".")[0] in blocked_modules:
                raise ImportError("sandbox: module %r is not available" % name, name=name)
            return None
    sys.meta_path.insert(0, ImportBlocker)
    return SandboxViolation


def _main():
    result_fd = int(sys.argv[1])
    root = sys.argv[2]
    report_write, report_exit = os.write, os._exit
    spec = json.loads(sys.stdin.read())
    sys.stdin = io.StringIO("")
    nonce = spec.pop("nonce")

    def report(status):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            report_write(result_fd, (nonce + " " + status + "\n").encode())
        except OSError:
            pass
        report_exit(0)

    for name in ("program", "tests"):
        linecache.cache["<%s>" % name] = (len(spec[name]), None, spec[name].splitlines(True), "<%s>" % name)
    _limit_resources(spec)
    try:
        program = compile(spec["program"], "<program>", "exec")
        tests = compile(spec["tests"], "<tests>", "exec")
    except MemoryError:
        report("memory")
    except BaseException:
        traceback.print_exc(limit=-3)
        report("error")
    violations = []
    SandboxViolation = _install_guard(root, violations)
    namespace = {"__name__": "__sandbox__", "__builtins__": builtins}
    del spec
    phase = "program"
    status = "ok"
    try:
        exec(program, namespace)
        phase = "tests"
        exec(tests, namespace)
    except BaseException as exc:
        try:  # skip this runner's own frame
            traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next, limit=-5)
        except BaseException:
            pass
        if isinstance(exc, SandboxViolation):
            status = "forbidden"
        elif isinstance(exc, MemoryError):
            status = "memory"
        elif phase == "tests" and isinstance(exc, Exception):
            status = "failed"
        else:
            status = "error"
    if violations:
        status = "forbidden"
    report(status)

_main()
'''


def run_code(
    program: str, tests: str, timeout_s: float = 2.0, memory_mb: int = 256
) -> SandboxResult:
    """Run ``program`` and then ``tests`` in one namespace in a contained child.

    The tests pass when executing them raises nothing (e.g. a list of
    ``assert f(2) == 4`` lines, or ``def check(candidate): …`` followed by
    ``check(f)``). The program runs with ``__name__ == "__sandbox__"``, so an
    ``if __name__ == "__main__":`` block in it does not run.

    Args:
        program: the Python source the model wrote.
        tests: Python source that raises (usually AssertionError) on a wrong program.
        timeout_s: wall-clock limit in seconds, > 0; the process group is
            killed when it runs out.
        memory_mb: address-space limit (RLIMIT_AS) in MiB, >= 64.

    Returns:
        A :class:`SandboxResult`.

    Raises:
        ValueError: if ``program``/``tests`` are not strings or a limit is out of range.
    """
    if not isinstance(program, str):
        raise ValueError(f"program must be a str, got {type(program).__name__}")
    if not isinstance(tests, str):
        raise ValueError(f"tests must be a str, got {type(tests).__name__}")
    if not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < float("inf")):
        raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
    if not (isinstance(memory_mb, int) and memory_mb >= _MIN_MEMORY_MB):
        raise ValueError(f"memory_mb must be an int >= {_MIN_MEMORY_MB}, got {memory_mb!r}")

    nonce = secrets.token_hex(16)
    with (
        tempfile.TemporaryDirectory(prefix="fedrl-sandbox-", ignore_cleanup_errors=True) as workdir,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        root = os.path.realpath(workdir)
        spec = {
            "nonce": nonce,
            "program": program,
            "tests": tests,
            "memory_bytes": memory_mb * 2**20,
            "cpu_s": int(timeout_s) + 2,
            "fsize_bytes": _FSIZE_BYTES,
            "nofile": _NOFILE,
        }
        result_r, result_w = os.pipe()
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-B", "-X", "utf8", "-c", _RUNNER, str(result_w), root],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                cwd=root,
                env={"TMPDIR": root, "HOME": root},
                start_new_session=True,  # its own process group, killed as a whole below
                pass_fds=(result_w,),
            )
        except BaseException:
            os.close(result_r)
            raise
        finally:
            os.close(result_w)
        try:
            timed_out = _feed_and_wait(proc, json.dumps(spec).encode(), start + timeout_s)
            duration = time.monotonic() - start
            # The child is a zombie or still running, so its group id is not reused yet.
            _kill_group(proc.pid)
            proc.wait()
            reported = _read_report(result_r, nonce)
        finally:
            os.close(result_r)
            if proc.stdin is not None:
                proc.stdin.close()
        stderr_tail = _tail(err)

    if reported is not None:
        status = reported
    elif timed_out or proc.returncode == -signal.SIGXCPU:
        status = "timeout"
        stderr_tail = (stderr_tail + f"\nsandbox: killed after {duration:.2f} s (timeout_s={timeout_s})\n")[
            -_STDERR_TAIL_CHARS:
        ]
    elif "sandbox: blocked" in stderr_tail:
        status = "forbidden"
    elif "MemoryError" in stderr_tail:
        status = "memory"
    else:
        status = "error"
    return SandboxResult(status == "ok", status, stderr_tail, duration)


def _feed_and_wait(proc: subprocess.Popen, payload: bytes, deadline: float) -> bool:
    """Send the spec, then wait until the child exits (not reaped) or the deadline; True if timed out."""
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child died early; its exit status tells why
    pause = 0.001
    while True:
        # WNOWAIT leaves the child a zombie so its pid/pgid stay reserved for _kill_group.
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return False
        except ChildProcessError:  # already reaped elsewhere
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 0.02)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_report(fd: int, nonce: str) -> Status | None:
    """The status line the runner wrote with our nonce, or None."""
    os.set_blocking(fd, False)
    data = b""
    try:
        while len(data) < 4096:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    except BlockingIOError:
        pass
    for line in data.decode("utf-8", "replace").splitlines():
        key, _, status = line.partition(" ")
        if key == nonce and status in ("ok", "failed", "timeout", "memory", "error", "forbidden"):
            return status  # type: ignore[return-value]
    return None


def _tail(f) -> str:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - 4 * _STDERR_TAIL_CHARS))
    return f.read().decode("utf-8", "replace")[-_STDERR_TAIL_CHARS:]


# ---------------------------------------------------------------------------
# TRL reward
# ---------------------------------------------------------------------------

_FENCE = "```"
_FENCE_HEADER_RE = re.compile(r"[ \t]*(?:python3?|py)?[ \t]*", re.IGNORECASE)


def extract_program(text: str) -> str:
    """The program in a completion.

    The content of the last ``<answer>…</answer>`` if there is one, else the
    whole text; then, if that holds a fenced code block (```` ```python ````,
    ```` ```py ```` or bare ```` ``` ````), the last such block.

    Both searches scan from the end with ``str.rfind`` (linear time): a lazy
    regular expression would take quadratic time on a completion that opens a
    tag or fence thousands of times without closing it.
    """
    close = text.rfind(ANSWER_CLOSE)
    if close >= 0:
        start = text.rfind(ANSWER_OPEN, 0, close)
        if start >= 0:
            start += len(ANSWER_OPEN)
            text = text[start:text.find(ANSWER_CLOSE, start)]
    close = text.rfind(_FENCE)
    if close > 0:
        start = text.rfind(_FENCE, 0, close)
        if start >= 0:
            header_end = text.find("\n", start + len(_FENCE), close)
            if header_end >= 0 and _FENCE_HEADER_RE.fullmatch(text, start + len(_FENCE), header_end):
                text = text[header_end + 1:close]
    return textwrap.dedent(text).strip("\n") + "\n"


def _completion_text(completion) -> str:
    """TRL completions are strings or, in conversational form, lists of messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise ValueError(
        f"completions must hold strings or lists of {{'role', 'content'}} messages, got {completion!r:.80}"
    )


def _tests_source(tests) -> str | None:
    if tests is None:
        return None
    if isinstance(tests, str):
        return tests if tests.strip() else None
    if isinstance(tests, Sequence) and all(isinstance(t, str) for t in tests):
        return "\n".join(tests) if tests else None
    raise ValueError(f"answer entries must be test source (str or list of str) or None, got {tests!r:.80}")


def code_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list[float | None]:
    """TRL reward: 1.0 if the completion's program passes its tests, else 0.0.

    Args:
        prompts: the prompts (unused; part of TRL's signature).
        completions: one per sample, a string or a list of chat messages.
        answer: the dataset column with each sample's tests (a source string
            or a list of assert lines), or ``None``.
        **kwargs: other dataset columns and trainer state, ignored.

    Returns:
        One value per completion: 1.0 (passed), 0.0 (any other status), or
        ``None`` where there are no tests (not applicable).

    Raises:
        ValueError: if ``answer`` does not have one entry per completion.
    """
    n = len(completions)
    if answer is None:
        return [None] * n
    if isinstance(answer, str):
        answer = [answer] * n
    if len(answer) != n:
        raise ValueError(f"answer must have one entry per completion ({n}), got {len(answer)}")
    jobs = [(extract_program(_completion_text(c)), _tests_source(t)) for c, t in zip(completions, answer)]
    # GRPO samples G completions per prompt and a confident policy repeats itself: each distinct
    # (program, tests) pair runs once. A program that does not even parse fails without a child
    # process (ast.parse only parses; nothing is executed or constant-folded in this process).
    distinct = list(dict.fromkeys(job for job in jobs if job[1] is not None))

    def score(job: tuple[str, str]) -> float:
        program, tests = job
        if not _parses(program):
            return 0.0
        result = run_code(program, tests, CODE_REWARD_TIMEOUT_S, CODE_REWARD_MEMORY_MB)
        return 1.0 if result.passed else 0.0

    with ThreadPoolExecutor(max_workers=CODE_REWARD_WORKERS) as pool:
        results = dict(zip(distinct, pool.map(score, distinct)))
    return [None if job[1] is None else results[job] for job in jobs]


def _parses(program: str) -> bool:
    """Whether ``program`` is syntactically valid Python (checked without executing anything)."""
    try:
        ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return False
    return True
