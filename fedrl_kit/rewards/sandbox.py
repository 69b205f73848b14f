"""Run model-written Python against tests, with the verdict computed outside the program's reach.
Details: docs/reliability.md, "Module notes".
"""

from __future__ import annotations

import ast
import atexit
import builtins
import json
import marshal
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fedrl_kit.rewards.parsing import completion_text
from fedrl_kit.rewards.sandbox_wire import WIRE_MAX_BYTES, WireError, wire_decode, wire_encode, wire_loads
from fedrl_kit.tags import ANSWER_CLOSE, ANSWER_OPEN

Status = Literal["ok", "failed", "timeout", "memory", "error", "forbidden"]
Isolation = Literal["namespaces", "process"]
_JUDGE_STATUSES = ("ok", "failed", "memory", "error", "forbidden")
"""the statuses a judge's verdict may carry (a timeout is the trainer's to decide)"""

ISOLATION_ENV = "FEDRL_SANDBOX"
"""environment variable: "auto" (default: namespaces when the OS allows, else process with a
warning), "namespaces" (an error when the OS does not allow them) or "process" """

_FSIZE_BYTES = 16 * 2**20
"""largest file the candidate may write (and the size of its /tmp)"""

_NOFILE = 64
"""most file descriptors the candidate may hold open"""

_MIN_MEMORY_MB = 64
"""an interpreter with the runner loaded needs about 30 MB of address space"""

_STDERR_TAIL_CHARS = 2000
"""how much of the end of the children's stderr a SandboxResult keeps"""

_SETUP_FAILED = 97
"""the candidate's exit status when its isolation could not be set up (sandbox_child.SETUP_FAILED)"""

CODE_REWARD_TIMEOUT_S = 2.0
"""wall-clock limit per completion in :func:`code_accuracy_reward`; the completions of one call
run in parallel, so this is also about the most one call can take (up to CODE_REWARD_PROCESSES
distinct programs)"""

CODE_REWARD_MEMORY_MB = 256
"""address-space limit per process in :func:`code_accuracy_reward`"""

CODE_REWARD_PROCESSES = 16
"""most programs checked at once: bounds one call's processes (x2 with a judge) and memory"""

CODE_MAX_PROGRAM_CHARS = 100_000
"""a longer program scores 0 without being parsed or run (a real answer is far shorter)"""

_FORCE_USERNS = False
"""tests only: use a user namespace even when running as root"""

_KEEP_ROOT = False
"""tests only: at the "process" level, leave a root trainer's candidate root, as a trainer that is not root
has it (the candidate is the trainer's own user); it then also keeps root's capabilities"""

_LANDLOCK = True
"""tests only: False leaves Landlock out at the "process" level, as on a kernel without it"""

_NOBODY = 65534
"""the user a root trainer's candidate runs as (sandbox_child._NOBODY)"""

_VERDICT_MAX_BYTES = 16 * 2**10
"""the judge's verdict is far shorter (its detail is cut at 1000 characters)"""

_HERE = Path(__file__).resolve().parent
_WIRE_SOURCE = (_HERE / "sandbox_wire.py").read_text()
_CHILD_SOURCE = _WIRE_SOURCE + (_HERE / "sandbox_child.py").read_text()
_JUDGE_SOURCE = _WIRE_SOURCE + (_HERE / "sandbox_judge.py").read_text()
_PYTHON_FLAGS = ("-I", "-S", "-B", "-X", "utf8")


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of one :func:`run_code` call."""

    passed: bool
    """True exactly when status is "ok": the program ran and every test passed"""
    status: Status
    """"ok"; "failed" (a test did not hold or a call raised an Exception); "timeout" (killed at
    timeout_s or the CPU limit); "memory" (MemoryError under RLIMIT_AS); "error" (the program or
    tests do not compile, the program raised or exited, or a process died without reporting);
    "forbidden" (the "process" isolation's tripwire blocked a call)"""
    stderr_tail: str
    """the last characters of the processes' stderr (tracebacks) and the sandbox's own notes"""
    duration_s: float
    """wall-clock seconds from start to the end of the run"""
    isolation: Isolation = "namespaces"
    """how the candidate's process was contained (docs/reliability.md, "Module notes")"""


# ---------------------------------------------------------------------------
# Turning tests into calls and expected values
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """How one set of tests is checked."""

    imports: tuple[str, ...]
    """the tests' top-level import lines; the candidate runs them after the program, as the tests
    and the program used to share one namespace"""
    names: tuple[str, ...]
    """the non-builtin names the tests use (what the judge asks the candidate about)"""
    module_names: tuple[str, ...]
    """those used as ``name.attribute`` that are standard-library modules: the judge binds them only
    to its own import of that module"""
    calls: tuple | None
    """literal asserts only: (name, args, kwargs) per assert, in wire form; None: use a judge"""
    checks: tuple = ()
    """aligned with calls: (op, expected, the assert's source)"""


class _NotLiteral(Exception):
    pass


def _refuse(obj):
    raise _NotLiteral


def _literal(node):
    try:
        value = ast.literal_eval(node)
        wire_encode(value, _refuse)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError, WireError, _NotLiteral):
        raise _NotLiteral from None
    return value


def _literal_call(node) -> tuple:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        raise _NotLiteral
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise _NotLiteral
    args = [_literal(a) for a in node.args]
    kwargs = {k.arg: _literal(k.value) for k in node.keywords}
    return node.func.id, wire_encode(args, _refuse), wire_encode(kwargs, _refuse)


def _literal_check(stmt) -> tuple:
    """(call, op, expected) for ``assert name(literals) <op> literal``; _NotLiteral otherwise."""
    if not isinstance(stmt, ast.Assert):
        raise _NotLiteral
    test = stmt.test
    if isinstance(test, ast.Call):
        return _literal_call(test), "truthy", None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _literal_call(test.operand), "falsy", None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        raise _NotLiteral
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        if not isinstance(left, ast.Call):
            left, right = right, left
        return _literal_call(left), "==" if isinstance(op, ast.Eq) else "!=", _literal(right)
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and any(
            right.value is v for v in (True, False, None)):
        return _literal_call(left), "is" if isinstance(op, ast.Is) else "is not", right.value
    raise _NotLiteral


def _plan(tests: str) -> _Plan:
    """The checking plan of ``tests``; SyntaxError if they do not parse."""
    tree = ast.parse(tests)
    imports, calls, checks = [], [], []
    literal = True
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(ast.unparse(stmt))
        elif isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        elif literal:
            try:
                call, op, expected = _literal_check(stmt)
            except _NotLiteral:
                literal = False
                continue
            calls.append(call)
            checks.append((op, expected, ast.unparse(stmt)))
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(dir(builtins)))
    roots = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    modules = sorted(name for name in roots.intersection(names) if name in sys.stdlib_module_names)
    return _Plan(tuple(imports), tuple(names), tuple(modules), tuple(calls) if literal else None,
                 tuple(checks) if literal else ())


class _Reference:
    """An object that stayed in the candidate's process: equal only to itself."""

    __slots__ = ("index", "truth")

    def __init__(self, index: int, truth: bool):
        self.index, self.truth = index, truth

    def __bool__(self) -> bool:
        return self.truth

    def __repr__(self) -> str:
        return f"<object #{self.index} of the candidate>"


def _reference(tag, payload):
    if tag != "h":
        raise WireError("a name reference in a result")
    return _Reference(payload["h"], payload["b?"])


def _holds(op: str, value, expected) -> bool:
    if op == "==":
        return bool(value == expected)
    if op == "!=":
        return bool(value != expected)
    if op == "is":
        return value is expected
    if op == "is not":
        return value is not expected
    return bool(value) if op == "truthy" else not bool(value)


# ---------------------------------------------------------------------------
# Isolation: what the OS allows
# ---------------------------------------------------------------------------

_isolation_lock = threading.Lock()
_isolation: Isolation | None = None
_mountpoint: str | None = None


_mountpoint_lock = threading.Lock()


def _mountpoint_dir() -> str:
    """An empty directory on which each candidate mounts its own root (in its own mount namespace)."""
    global _mountpoint
    with _mountpoint_lock:
        if _mountpoint is None or not os.path.isdir(_mountpoint):
            _mountpoint = tempfile.mkdtemp(prefix="fedrl-sandbox-root-")
            atexit.register(_remove_mountpoint, _mountpoint, os.getpid())
        return _mountpoint


def _remove_mountpoint(path: str, owner: int) -> None:
    if os.getpid() == owner:
        try:
            os.rmdir(path)  # empty: the mounts lived in the candidates' namespaces
        except OSError:
            pass


def sandbox_isolation() -> Isolation:
    """How candidates are contained on this machine: "namespaces" or "process" (docs/reliability.md, "Module notes")."""
    global _isolation
    with _isolation_lock:
        if _isolation is not None:
            return _isolation
        wanted = os.environ.get(ISOLATION_ENV, "auto")
        if wanted not in ("auto", "namespaces", "process"):
            raise ValueError(f"{ISOLATION_ENV} must be auto, namespaces or process, got {wanted!r}")
        if wanted == "process":
            _isolation = "process"
            return _isolation
        probe = run_many([("f = lambda: 1\n", "assert f() == 1\n")], timeout_s=10.0, isolation="namespaces")[0]
        if probe.passed:
            _isolation = "namespaces"
        elif wanted == "namespaces":
            raise RuntimeError(f"{ISOLATION_ENV}=namespaces, but the sandbox cannot set them up here:\n"
                               + probe.stderr_tail)
        else:
            warnings.warn(
                "code sandbox: this OS does not allow user/PID/mount/network namespaces here, so model-written "
                "programs run as plain processes: a deliberate program can read this user's files, write what "
                f"its user may and use the network ({_process_level_note()}). Set FEDRL_SANDBOX=namespaces to "
                "make this an error. Cause: " + probe.stderr_tail.strip()[-300:],
                RuntimeWarning, stacklevel=2)
            _isolation = "process"
        return _isolation


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none): what the "process" level adds."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return max(0, libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
    except (OSError, AttributeError):
        return 0


def _process_level_note() -> str:
    """What the "process" level holds on this machine beyond its tripwire, in a few words."""
    abi, root = landlock_abi(), os.geteuid() == 0
    who = "they run as nobody" if root else "they run as this user"
    if not abi:
        return who + ("; no Landlock here" if root else
                      "; no Landlock here, so a program can reach this process's memory through /proc")
    return who + "; Landlock keeps them from other processes" + (" and from TCP" if abi >= 4 else "")


# ---------------------------------------------------------------------------
# Running: one candidate process (and one judge) per program, many at once
# ---------------------------------------------------------------------------


def _socket_pair() -> tuple[int, int]:
    """Two connected stream sockets (file descriptors, not inheritable): (this end, the child's end)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return mine.detach(), theirs.detach()


def _drain(fd: int, limit: int) -> bytes:
    """What a socket holds, up to ``limit`` + 1 bytes, once its writer has exited (never blocks)."""
    os.set_blocking(fd, False)
    data = b""
    while len(data) <= limit:
        try:
            chunk = os.read(fd, limit + 1 - len(data))
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _scratch() -> int:
    """A file descriptor of an anonymous file (memfd where available)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("fedrl-sandbox", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as f:
        return os.dup(f.fileno())


def _spec_fd(spec: dict) -> int:
    """The candidate's spec, marshalled into a scratch file for its stdin (the judge's goes on a socket)."""
    fd = _scratch()
    data = marshal.dumps(spec)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _send_all(fd: int, data: bytes, timeout_s: float) -> None:
    """Write ``data`` into a socket whose reader is starting; a reader that dies or stalls gets a cut spec, which
    it cannot parse, so it reports nothing (fails closed)."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        sock.settimeout(max(timeout_s, 1.0))
        sock.sendall(data)
    except OSError:
        pass
    finally:
        sock.close()


def _read(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of a scratch file from its start (more: None is not returned, the caller checks)."""
    size = os.fstat(fd).st_size
    return os.pread(fd, min(size, limit + 1), 0)


def _tail(fd: int) -> str:
    size = os.fstat(fd).st_size
    start = max(0, size - 4 * _STDERR_TAIL_CHARS)
    return os.pread(fd, size - start, start).decode("utf-8", "replace")[-_STDERR_TAIL_CHARS:]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Run:
    """One program against one set of tests: its processes, files and outcome."""

    def __init__(self, program: str, tests: str, timeout_s: float, memory_mb: int, isolation: Isolation):
        self.program, self.tests = program, tests
        self.timeout_s, self.memory_mb, self.isolation = timeout_s, memory_mb, isolation
        self.procs: list[subprocess.Popen] = []
        self.fds: list[int] = []
        self.workdir: str | None = None
        self.pidfd: int | None = None
        self.result: SandboxResult | None = None
        self.start_time = time.monotonic()
        self.deadline = self.start_time + timeout_s
        try:
            self.plan = _plan(tests)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            self.result = SandboxResult(False, "error", f"sandbox: the tests do not compile: {exc}\n", 0.0, isolation)

    def _base_spec(self) -> dict:
        return {
            "isolation": self.isolation,
            "memory_bytes": self.memory_mb * 2**20,
            "cpu_s": int(self.timeout_s) + 2,
            "fsize_bytes": _FSIZE_BYTES,
            "tmpfs_bytes": _FSIZE_BYTES,
            "nofile": _NOFILE,
            "mountpoint": _mountpoint_dir() if self.isolation == "namespaces" else None,
            "force_userns": _FORCE_USERNS,
            "keep_root": _KEEP_ROOT,
            "landlock": _LANDLOCK,
        }

    def _spawn(self, source: str, spec: dict, pass_fds: tuple, cwd: str, env: dict) -> subprocess.Popen:
        judge = source is not _CHILD_SOURCE
        # The judge's spec (the tests) travels on a socket, written once the judge runs: a memfd on its stdin could
        # be opened again through /proc/<judge>/fd/0 by a candidate of the same user and rewritten before the
        # judge, which starts later, reads it. The candidate's own spec is its own business.
        spec_fd, theirs = _socket_pair() if judge else (_spec_fd(spec), None)
        try:
            proc = subprocess.Popen(
                [sys.executable, *_PYTHON_FLAGS, "-c", source], stdin=theirs if judge else spec_fd,
                stdout=subprocess.DEVNULL, stderr=spec["stderr_fd"], pass_fds=pass_fds, cwd=cwd, env=env,
                start_new_session=True,  # its own session and process group, killed as a whole
            )
            if judge:
                os.close(theirs)
                theirs = None
                _send_all(spec_fd, json.dumps(spec).encode(), self.timeout_s)
        finally:
            for fd in (spec_fd, theirs):
                if fd is not None:
                    os.close(fd)
        self.procs.append(proc)
        return proc

    def start(self) -> None:
        """Start the candidate (and the judge); the deadline runs from here."""
        self.start_time = time.monotonic()
        self.deadline = self.start_time + self.timeout_s
        plan = self.plan
        self.err = _scratch()
        self.fds.append(self.err)
        spec = dict(self._base_spec(), program=self.program, imports=list(plan.imports), stderr_fd=self.err)
        if self.isolation == "namespaces":
            cwd, env = "/", {"HOME": "/tmp", "TMPDIR": "/tmp"}
        else:
            self.workdir = os.path.realpath(tempfile.mkdtemp(prefix="fedrl-sandbox-"))
            if os.geteuid() == 0 and not _KEEP_ROOT:
                os.chown(self.workdir, _NOBODY, _NOBODY)  # the candidate runs as nobody (sandbox_child)
            cwd, env = self.workdir, {"HOME": self.workdir, "TMPDIR": self.workdir}
        if plan.calls is not None:
            self.out = _scratch()
            self.fds.append(self.out)
            spec.update(mode="calls", calls=list(plan.calls), result_fd=self.out)
            governing = self._spawn(_CHILD_SOURCE, spec, (self.out,), cwd, env)
        else:
            request_r, request_w = os.pipe()
            reply_r, reply_w = os.pipe()
            # The verdict travels on a socket: unlike a file, a pipe or a memfd, a socket cannot be opened
            # again through /proc/<pid>/fd/N, so no process but the judge can write into this channel.
            self.out, verdict_w = _socket_pair()
            self.judge_err = _scratch()
            self.fds += [self.out, self.judge_err]
            try:
                spec.update(mode="serve", names=list(plan.names), request_fd=request_r, reply_fd=reply_w)
                self._spawn(_CHILD_SOURCE, spec, (request_r, reply_w), cwd, env)
                judge_spec = dict(self._base_spec(), tests=self.tests, names=list(plan.names),
                                  module_names=list(plan.module_names), request_fd=request_w, reply_fd=reply_r,
                                  verdict_fd=verdict_w, stderr_fd=self.judge_err)
                governing = self._spawn(_JUDGE_SOURCE, judge_spec, (request_w, reply_r, verdict_w),
                                        self.workdir or _mountpoint_dir(), {})
            finally:
                for fd in (request_r, request_w, reply_r, reply_w, verdict_w):
                    os.close(fd)
        self.governing = governing
        try:
            self.pidfd = os.pidfd_open(governing.pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def exited(self) -> bool:
        """Whether the governing process (the judge, else the candidate) has exited (it stays unreaped)."""
        try:
            return os.waitid(os.P_PID, self.governing.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def finish(self, timed_out: bool) -> None:
        """Kill every process group of the run (before reaping, so no group id can be reused), then score it."""
        duration = time.monotonic() - self.start_time
        for proc in self.procs:
            _kill_group(proc.pid)
        for proc in self.procs:
            proc.wait()
        try:
            status, note = self._status(timed_out)
            stderr = _tail(self.err) + (_tail(self.judge_err) if self.plan.calls is None else "")
        finally:
            self.close()
        if status == "timeout":
            note = f"sandbox: killed after {duration:.2f} s (timeout_s={self.timeout_s})"
        if note:
            stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + note + "\n"
        self.result = SandboxResult(status == "ok", status, stderr[-_STDERR_TAIL_CHARS:], duration, self.isolation)

    def close(self) -> None:
        for fd in self.fds + ([self.pidfd] if self.pidfd is not None else []):
            os.close(fd)
        self.fds, self.pidfd = [], None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _status(self, timed_out: bool) -> tuple[Status, str]:
        candidate = self.procs[0]
        if timed_out or candidate.returncode in (-signal.SIGXCPU, 128 + signal.SIGXCPU):
            return "timeout", ""
        if candidate.returncode == _SETUP_FAILED:
            return "error", "sandbox: the isolation could not be set up; nothing ran"
        if self.plan.calls is None:
            verdict = _verdict(_drain(self.out, _VERDICT_MAX_BYTES)) if self.governing.returncode == 0 else None
            return verdict or self._died(self.judge_err, "the judge")
        data = _read(self.out, WIRE_MAX_BYTES)
        if not data:
            return self._died(self.err, "the program")
        try:
            report = wire_loads(data)
            return _literal_status(report, self.plan)
        except (WireError, KeyError, TypeError, ValueError, RecursionError, MemoryError) as exc:
            return "error", f"sandbox: unreadable results ({type(exc).__name__}: {str(exc)[:200]})"

    def _died(self, err_fd: int, who: str) -> tuple[Status, str]:
        if "MemoryError" in _tail(err_fd):
            return "memory", ""
        return "error", f"sandbox: {who} ended without reporting"


def _verdict(data: bytes) -> tuple[Status, str] | None:
    """The judge's (status, note), or None unless ``data`` is one whole verdict."""
    try:
        verdict = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not (type(verdict) is dict and set(verdict) == {"status", "detail"}
            and verdict["status"] in _JUDGE_STATUSES and type(verdict["detail"]) is str):
        return None
    return verdict["status"], "sandbox: " + verdict["detail"] if verdict["detail"] else ""


def _literal_status(report: dict, plan: _Plan) -> tuple[Status, str]:
    """The verdict on a literal-asserts run, from the candidate's report (plain data)."""
    program = report["program"]
    if program != "ok":
        kind = program[0] if isinstance(program, list) and program else "?"
        if kind == "MemoryError":
            return "memory", ""
        return ("forbidden" if kind == "SandboxViolation" else "error"), f"sandbox: the program raised {kind}"
    if report.get("violations"):
        return "forbidden", "sandbox: the program made a blocked call"
    results = report["calls"]
    if not isinstance(results, list) or len(results) != len(plan.checks):
        return "error", "sandbox: the program's results do not match its calls"
    for entry, (op, expected, source) in zip(results, plan.checks):
        if "exc" in entry:
            kind = str(entry["exc"][0])
            if kind == "MemoryError":
                return "memory", ""
            if kind in ("SystemExit", "KeyboardInterrupt", "GeneratorExit"):
                return "error", f"sandbox: {source}: the program raised {kind}"
            return ("forbidden" if kind == "SandboxViolation" else "failed"), f"sandbox: {source}: raised {kind}"
        value = wire_decode(entry["ok"], _reference)
        if not _holds(op, value, expected):
            return "failed", f"sandbox: {source}: failed, got {_short_repr(value)}"
    return "ok", ""


def _short_repr(value) -> str:
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        text = f"a {type(value).__name__}"
    return text if len(text) <= 200 else text[:200] + "…"


def _check_limits(timeout_s, memory_mb) -> None:
    if not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < float("inf")):
        raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
    if not (isinstance(memory_mb, int) and memory_mb >= _MIN_MEMORY_MB):
        raise ValueError(f"memory_mb must be an int >= {_MIN_MEMORY_MB}, got {memory_mb!r}")


def run_many(
    jobs: Sequence[tuple[str, str]], timeout_s: float = 2.0, memory_mb: int = 256, max_parallel: int = 16,
    isolation: Isolation | None = None,
) -> list[SandboxResult]:
    """Run each ``(program, tests)`` pair like :func:`run_code`, up to ``max_parallel`` at once.

    Args:
        jobs: (program, tests) pairs of Python source.
        timeout_s, memory_mb, isolation: per run, as :func:`run_code`.
        max_parallel: most runs at once, >= 1.

    Returns:
        One :class:`SandboxResult` per job, in order.
    """
    for i, job in enumerate(jobs):
        if not (isinstance(job, tuple) and len(job) == 2):
            raise ValueError(f"jobs[{i}] must be a (program, tests) pair, got {job!r:.80}")
        for name, value in zip(("program", "tests"), job):
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    _check_limits(timeout_s, memory_mb)
    if not (isinstance(max_parallel, int) and max_parallel >= 1):
        raise ValueError(f"max_parallel must be an int >= 1, got {max_parallel!r}")
    if isolation is None:
        isolation = sandbox_isolation()
    elif isolation not in ("namespaces", "process"):
        raise ValueError(f"isolation must be 'namespaces' or 'process', got {isolation!r}")
    runs = [_Run(program, tests, timeout_s, memory_mb, isolation) for program, tests in jobs]
    waiting = [run for run in reversed(runs) if run.result is None]
    active: list[_Run] = []
    try:
        while waiting or active:
            while waiting and len(active) < max_parallel:
                run = waiting.pop()
                try:
                    run.start()
                except BaseException:
                    for proc in run.procs:
                        _kill_group(proc.pid)
                        proc.wait()
                    run.close()
                    raise
                active.append(run)
            _sleep_until_event(active)
            now = time.monotonic()
            for run in [r for r in active if r.exited() or now >= r.deadline]:
                run.finish(timed_out=not run.exited())
                active.remove(run)
    finally:
        for run in active:  # an exception (KeyboardInterrupt) left these running
            for proc in run.procs:
                _kill_group(proc.pid)
                proc.wait()
            run.close()
    return [run.result for run in runs]


def _sleep_until_event(active: list[_Run]) -> None:
    """Sleep until a governing process exits or the earliest deadline (pidfds where available)."""
    timeout = max(0.0, min(run.deadline for run in active) - time.monotonic())
    pidfds = [run.pidfd for run in active if run.pidfd is not None]
    if len(pidfds) == len(active):
        poller = select.poll()
        for fd in pidfds:
            poller.register(fd, select.POLLIN)
        poller.poll(int(timeout * 1000) + 1)
    else:
        time.sleep(min(timeout, 0.005))


def run_code(
    program: str, tests: str, timeout_s: float = 2.0, memory_mb: int = 256, isolation: Isolation | None = None,
) -> SandboxResult:
    """Run ``program`` against ``tests`` in a contained child; the verdict is computed outside it.

    Args:
        program, tests: the Python source the model wrote; source that raises on a wrong program.
        timeout_s: wall-clock limit in seconds, > 0; every process of the run is killed when it runs out.
        memory_mb: address-space limit (RLIMIT_AS) per process in MiB, >= 64.
        isolation: "namespaces" or "process"; None: :func:`sandbox_isolation`.

    Returns:
        A :class:`SandboxResult`.
    """
    return run_many([(program, tests)], timeout_s, memory_mb, 1, isolation)[0]


# ---------------------------------------------------------------------------
# TRL reward
# ---------------------------------------------------------------------------

_FENCE = "```"
_FENCE_HEADER_RE = re.compile(r"[ \t]*(?:python3?|py)?[ \t]*", re.IGNORECASE)


def extract_program(text: str) -> str:
    """The program in a completion: the last ``<answer>…</answer>``'s content (else the whole text), then the last
    fenced code block in it if any; both found from the end with ``str.rfind`` (linear time on unclosed tags).
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
        answer: each row's tests (a source string or a list of assert lines), or ``None``.

    Returns:
        Per completion: 1.0 (passed), 0.0 (any other status, or a completion that is not text), None without tests.
    """
    n = len(completions)
    if answer is None:
        return [None] * n
    if isinstance(answer, str):
        answer = [answer] * n
    if len(answer) != n:
        raise ValueError(f"answer must have one entry per completion ({n}), got {len(answer)}")
    jobs = [(extract_program(completion_text(c)), _tests_source(t)) for c, t in zip(completions, answer)]
    # GRPO samples G completions per prompt and a confident policy repeats itself: each distinct
    # (program, tests) pair runs once. An empty, oversized or unparsable program fails without a
    # child process (ast.parse only parses; nothing is executed or constant-folded in this process).
    distinct = [job for job in dict.fromkeys(job for job in jobs if job[1] is not None) if _runnable(job[0])]
    outcomes = run_many(distinct, CODE_REWARD_TIMEOUT_S, CODE_REWARD_MEMORY_MB, CODE_REWARD_PROCESSES)
    passed = {job: result.passed for job, result in zip(distinct, outcomes)}
    return [None if job[1] is None else float(passed.get(job, False)) for job in jobs]


def _runnable(program: str) -> bool:
    """Whether ``program`` is non-empty, not oversized and syntactically valid Python (parsed, never run)."""
    if not program.strip() or len(program) > CODE_MAX_PROGRAM_CHARS:
        return False
    try:
        ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return False
    return True
