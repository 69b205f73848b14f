"""The code sandbox (fedrl_kit/rewards/sandbox.py): results, the out-of-process verdict, containment.

Every dangerous program here is bounded on its own (a fork that exits at once, a finite write, a
signal the test process catches), so a broken sandbox makes a test fail, not the machine suffer.
The escapes tests are the hostile programs that beat the earlier in-process guard; each one
passed that guard (scored 1.0, wrote outside its directory, signalled this process, outlived
its run, or reached a socket).
"""

import os
import signal
import socket
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fedrl_kit.rewards.sandbox as sandbox
from fedrl_kit.rewards.sandbox import (
    SandboxResult,
    code_accuracy_reward,
    extract_program,
    run_code,
    run_many,
    sandbox_isolation,
)

pytestmark = pytest.mark.serial  # real-time timeouts: `make test` runs these alone, after the others

DOUBLE = "def double(x):\n    return 2 * x\n"
TESTS = "assert double(2) == 4\nassert double(-1) == -2\n"
CHECK_TESTS = "def check(candidate):\n    for x in range(5):\n        assert candidate(x) == 2 * x\n\ncheck(double)\n"

needs_namespaces = pytest.mark.skipif(
    sandbox_isolation() != "namespaces",
    reason="the sandbox runs without namespaces here (the OS does not allow them, or FEDRL_SANDBOX=process): "
           "its 'process' isolation does not contain this (docs/reliability.md)")
NAMESPACES = pytest.param("namespaces", marks=needs_namespaces)
PROCESS_AS_NOBODY = pytest.param("process", marks=pytest.mark.skipif(
    os.geteuid() != 0 or os.uname().machine != "x86_64",
    reason="at the 'process' level only a root trainer's candidate runs as nobody, and the seccomp filter that "
           "refuses signals is written for x86_64 (docs/reliability.md)"))
PROCESS_WITH_LANDLOCK_TCP = pytest.param("process", marks=pytest.mark.skipif(
    sandbox.landlock_abi() < 4, reason="this kernel has no Landlock with TCP rules (ABI 4): at the 'process' level "
                                       "nothing but the tripwire stands between a program and the network"))


# --- results ------------------------------------------------------------------


def test_correct_program_passes_in_both_verdict_paths():
    literal, judged = run_many([(DOUBLE, TESTS), (DOUBLE, CHECK_TESTS)])
    for result in (literal, judged):
        assert isinstance(result, SandboxResult)
        assert result.passed and result.status == "ok", result.stderr_tail
        assert 0 < result.duration_s < 2.0
        assert result.isolation == sandbox_isolation()


def test_wrong_program_fails_in_both_verdict_paths():
    wrong = "def double(x):\n    return 3 * x\n"
    literal, judged = run_many([(wrong, TESTS), (wrong, CHECK_TESTS)])
    assert not literal.passed and literal.status == "failed"
    assert "assert double(2) == 4: failed, got 6" in literal.stderr_tail
    assert not judged.passed and judged.status == "failed"
    assert "AssertionError" in judged.stderr_tail


def test_missing_function_fails():
    triple = "def triple(x):\n    return 3 * x\n"
    results = run_many([(triple, TESTS), (triple, CHECK_TESTS)])
    assert [r.status for r in results] == ["failed", "failed"]


@pytest.mark.parametrize(
    "program, tests",
    [
        ("def double(x)\n    return 2 * x\n", TESTS),  # program does not compile
        (DOUBLE, "assert double(2) ==\n"),  # tests do not compile
        ("raise RuntimeError('boom')\n", TESTS),  # program raises at top level
        ("raise RuntimeError('boom')\n", CHECK_TESTS),
    ],
)
def test_errors(program, tests):
    result = run_code(program, tests)
    assert not result.passed and result.status == "error"


@pytest.mark.parametrize("exit_call", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"])
@pytest.mark.parametrize("tests", ["assert double(1) == 3\n", "assert False\n"])
def test_exiting_cannot_fake_a_pass(exit_call, tests):
    result = run_code(DOUBLE + exit_call, tests)
    assert not result.passed and result.status == "error"


def test_literal_asserts_are_checked_here_and_other_tests_by_a_judge():
    plan = sandbox._plan("import math\nassert f(1, k=2) == (3, [4])\nassert not g('a')\nassert h() is None\n")
    assert plan.imports == ("import math",)
    assert plan.calls == (("f", [1], {"d": [["k", 2]]}), ("g", ["a"], {"d": []}), ("h", [], {"d": []}))
    assert [c[:2] for c in plan.checks] == [("==", (3, [4])), ("falsy", None), ("is", None)]
    for tests in ("assert f(1) == 2 + 1\n", "assert f(x) == 1\n", "assert math.isclose(f(1), 2)\n", CHECK_TESTS):
        assert sandbox._plan(tests).calls is None, tests
    assert sandbox._plan("assert math.isclose(f(1), 2)\n").module_names == ("math",)


def test_mbpp_style_tests_keep_their_meaning():
    program = (
        "import re\n"
        "from collections import namedtuple\n"
        "P = namedtuple('P', 'a b')\n"
        "def pair(x):\n    return P(x, x + 1)\n"
        "def similar(a, b):\n    return tuple(set(a) & set(b))\n"
        "def is_even(n):\n    return n % 2 == 0\n"
        "def area(r):\n    return math.pi * r * r\n"  # uses the tests' import, as MBPP's harness allows
    )
    tests = (
        "import math\n"
        "assert pair(1) == (1, 2)\n"
        "assert set(similar((3, 4, 5), (5, 7, 4))) == set((4, 5))\n"
        "assert is_even(4) == True\nassert not is_even(3)\nassert is_even(2) is True\n"
        "assert math.isclose(area(2), 12.566, rel_tol=0.001)\n"
    )
    assert run_code(program, tests).status == "ok"
    assert run_code(program, tests.replace("(1, 2)", "[1, 2]")).status == "failed"  # a tuple is not a list


def test_judge_forwards_objects_exceptions_and_the_programs_modules():
    program = (
        "import math\n"
        "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
        "    def total(self):\n        return self.a + self.b\n"
        "def longest(pairs):\n    return max(p.total() for p in pairs)\n"
        "def root(x):\n    if x < 0:\n        raise ValueError('negative')\n    return math.sqrt(x)\n"
        "def gen(n):\n    return (i * i for i in range(n))\n"
    )
    tests = (
        "pairs = [Pair(1, 2), Pair(5, 7)]\n"
        "assert longest(pairs) == 12 and pairs[0].a == 1 and pairs[1].total() == 12\n"
        "assert list(gen(4)) == [0, 1, 4, 9]\n"
        "assert abs(root(2) - math.sqrt(2)) < 1e-12\n"  # math: the program's import, the judge's module
        "try:\n    root(-1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no ValueError')\n"
    )
    assert run_code(program, tests).status == "ok", run_code(program, tests).stderr_tail


def test_judge_never_lets_the_program_stand_in_for_builtins_or_modules():
    # In one namespace, as HumanEval's harness runs them, these programs would pass.
    fake_math = "class M:\n    isclose = staticmethod(lambda *a, **k: True)\nmath = M()\nf = lambda x: 0\n"
    fake_abs = "abs = lambda x: 0\nf = lambda x: 5\n"
    results = run_many([(fake_math, "assert math.isclose(f(1), 2.5)\n"),
                        (fake_abs, "def check(c):\n    assert abs(c(1) - 2) < 1e-9\n\ncheck(f)\n")])
    assert [r.status for r in results] == ["failed", "failed"], [r.stderr_tail for r in results]


@pytest.mark.parametrize("tests", [
    "assert all(map(lambda x: f(x) == 2 * x, range(3)))\n",
    "def check(candidate):\n    assert all(map(lambda x: candidate(x) == 2 * x, range(3)))\n\ncheck(f)\n",
    "assert list(filter(lambda x: f(x) != 2 * x, range(3))) == []\n",
])
@pytest.mark.parametrize("raised", ["StopIteration", "StopAsyncIteration", "type('StopIteration', (Exception,), {})"])
def test_stop_iteration_from_the_program_is_a_failure_the_tests_iterators_cannot_swallow(tests, raised):
    # A StopIteration re-raised in the judge would end map() as if it were exhausted: all(map(...)) would hold.
    result = run_code(f"def f(x):\n    raise {raised}\n", tests)
    assert result.status == "failed" and "RemoteError" in result.stderr_tail, result.stderr_tail


def test_program_can_use_the_standard_library_and_its_own_directory():
    program = (
        "import collections, functools, heapq, itertools, math, re, tempfile\n"
        "with open('scratch.txt', 'w') as f:\n"
        "    f.write('hi')\n"
        "with tempfile.TemporaryFile() as t:\n"
        "    t.write(b'x')\n"
        "def read():\n"
        "    return open('scratch.txt').read()\n"
    )
    result = run_code(program, "assert read() == 'hi'\n")
    assert result.status == "ok", result.stderr_tail


def test_main_block_does_not_run():
    program = DOUBLE + "if __name__ == '__main__':\n    raise SystemExit(1)\n"
    assert run_code(program, TESTS).passed


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(program=1, tests=""), "program"),
        (dict(program="", tests=None), "tests"),
        (dict(program="", tests="", timeout_s=0), "timeout_s"),
        (dict(program="", tests="", memory_mb=8), "memory_mb"),
        (dict(program="", tests="", isolation="chroot"), "isolation"),
    ],
)
def test_bad_arguments(kwargs, field):
    with pytest.raises(ValueError, match=field):
        run_code(**kwargs)


def test_isolation_setting(monkeypatch):
    monkeypatch.setattr(sandbox, "_isolation", None)
    monkeypatch.setenv("FEDRL_SANDBOX", "chroot")
    with pytest.raises(ValueError, match="FEDRL_SANDBOX"):
        sandbox_isolation()
    monkeypatch.setenv("FEDRL_SANDBOX", "process")
    assert sandbox_isolation() == "process"
    assert run_code(DOUBLE, TESTS).isolation == "process"


# --- time, memory, disk -------------------------------------------------------------


def test_infinite_loop_is_killed_at_the_time_limit():
    start = time.monotonic()
    literal, judged = run_many([("while True:\n    pass\n", "pass\n"),
                                ("def double(x):\n    while True:\n        pass\n", CHECK_TESTS)], timeout_s=1.0)
    elapsed = time.monotonic() - start
    for result in (literal, judged):
        assert result.status == "timeout" and not result.passed
        assert 1.0 <= result.duration_s < 2.0
        assert "killed after" in result.stderr_tail
    assert elapsed < 3.0


def test_large_allocation_fails_with_memory_status():
    results = run_many([("x = bytearray(10**10)\n", "pass\n"),
                        ("def double(x):\n    return bytearray(10**10)\n", CHECK_TESTS)], memory_mb=256)
    for result in results:
        assert result.status == "memory" and not result.passed, result.stderr_tail


def test_file_size_is_capped():
    program = "with open('big', 'wb') as f:\n    for _ in range(40):\n        f.write(b'x' * 2**20)\n"  # 40 > 16 MiB
    result = run_code(program, "pass\n", timeout_s=5.0)
    assert result.status == "error" and ("File too large" in result.stderr_tail or "No space" in result.stderr_tail)


# --- the escapes that beat the in-process guard ------------------------------------------------


@pytest.fixture
def canary(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    path = folder / "canary.txt"
    path.write_text("alive")
    path.chmod(0o640)
    return path


@pytest.fixture
def signals():
    """SIGUSR1s this (the trainer's) process receives while the test runs."""
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *args: received.append(args[0]))
    yield received
    time.sleep(0.2)  # a signal sent late still arrives before the handler is restored
    signal.signal(signal.SIGUSR1, previous)


def _intact(canary) -> bool:
    return canary.exists() and canary.read_text() == "alive" and canary.stat().st_mode & 0o777 == 0o640


def test_frame_hack_cannot_report_a_pass():
    hack = "import sys\nsys._getframe(1).f_locals['report']('ok')\n"
    assert run_code(hack, "assert False\n").status == "error"
    honest_wrong = "def f(x):\n    return 0\n"
    rewards = code_accuracy_reward(None, [hack, honest_wrong, honest_wrong + hack], answer=["assert False\n",
                                   "assert f(1) == 2\n", "assert f(1) == 2\n"])
    assert rewards == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("tests", ["assert f(1) == 2\n", "def check(c):\n    assert c(1) == 2\n\ncheck(f)\n",
                                   "assert f(1) == f(2) + 1\n"])
@pytest.mark.parametrize("always_equal", [
    "class E:\n    __eq__ = lambda s, o: True\n",
    "class E(int):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n",
    "class E(tuple):\n    __eq__ = lambda s, o: True\n",
])
def test_always_equal_object_does_not_pass(always_equal, tests):
    program = always_equal + "f = lambda x: E()\n"
    assert code_accuracy_reward(None, [program], answer=[tests]) == [0.0]


def _survivor(marker_file: str) -> str:
    """A program that gets an unguarded posix module, signals the trainer and leaves a child behind."""
    return f"""
import _imp, os, signal, sys, time
create = _imp.create_builtin
for cell in getattr(create, '__closure__', None) or ():
    if getattr(cell.cell_contents, '__name__', '') == 'create_builtin':
        create = cell.cell_contents  # the guard's closure held the original
posix = create(sys.modules['posix'].__spec__)
try:
    posix.kill({os.getpid()}, signal.SIGUSR1)
except OSError:
    pass
try:
    pid = posix.fork()
except OSError:
    pid = -1
if pid == 0:
    posix.setsid()
    time.sleep(1.0)
    try:
        fd = posix.open({marker_file!r}, os.O_WRONLY | os.O_CREAT, 0o644)
        posix.write(fd, b'survived')
    except OSError:
        pass
    time.sleep(30)
    posix._exit(0)
time.sleep(0.3)  # let the child leave the process group
f = lambda x: x
"""


@pytest.mark.parametrize("isolation, force_userns", [
    pytest.param("namespaces", False, marks=needs_namespaces, id="namespaces"),
    pytest.param("namespaces", True, marks=[needs_namespaces, pytest.mark.skipif(os.geteuid() != 0, reason="root only")],
                 id="namespaces-userns-as-root"),
    pytest.param("process", False, id="process", marks=pytest.mark.skipif(
        os.uname().machine != "x86_64", reason="at the 'process' level signals are refused by seccomp (x86_64)")),
])
def test_fresh_posix_module_cannot_fork_a_survivor_or_signal_the_trainer(tmp_path, signals, monkeypatch, isolation,
                                                                         force_userns):
    # As root the candidate is "nobody" and cannot fork at all; in a user namespace mapped to root
    # it can, and the PID namespace must take the child down with it. At the "process" level the
    # candidate is never root (a root trainer's runs as nobody) and RLIMIT_NPROC = 0 refuses the fork.
    monkeypatch.setattr(sandbox, "_FORCE_USERNS", force_userns)
    marker = tmp_path / "survivor.txt"
    before = _sandbox_processes()
    start = time.monotonic()
    assert not run_code(_survivor(str(marker)), "assert f(1) == 2\n", isolation=isolation).passed
    assert _sandbox_processes() - before == set()  # the PID namespace died with its PID 1; no fork at all
    time.sleep(max(0.0, 1.5 - (time.monotonic() - start)))
    assert not marker.exists()
    assert signals == []


def _sandbox_processes() -> set[int]:
    """Host pids of live candidate processes (they run the sandbox's child source)."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read()
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError, IndexError):
            continue
        if b"The candidate's side of the code sandbox" in cmdline and state != "Z":
            found.add(int(entry))
    return found


@needs_namespaces
def test_fileio_and_open_closure_cannot_write_outside(canary):
    programs = [
        f"import _io\ntry:\n    _io.FileIO({str(canary)!r}, 'w').write(b'dead')\nexcept OSError:\n    pass\n",
        "o = open\nfor cell in getattr(o, '__closure__', None) or ():\n"
        "    if getattr(cell.cell_contents, '__name__', '') == 'open':\n        o = cell.cell_contents\n"
        f"try:\n    o({str(canary)!r}, 'w').write('dead')\nexcept OSError:\n    pass\n",
    ]
    results = run_many([(p + "f = lambda x: x\n", "assert f(1) == 2\n") for p in programs])
    assert not any(r.passed for r in results)
    assert _intact(canary)


@pytest.mark.parametrize("isolation", [NAMESPACES, PROCESS_WITH_LANDLOCK_TCP])
def test_raw_socket_class_cannot_connect(isolation):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.3)
    port = server.getsockname()[1]
    program = (f"import socket\ns = socket.socket.__mro__[2](2, 1)\ns.connect(('127.0.0.1', {port}))\n"
               "s.send(b'x')\nf = lambda x: x\n")
    try:
        assert not run_code(program, "assert f(1) == 2\n", isolation=isolation).passed
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()


@pytest.mark.parametrize("isolation", [NAMESPACES, PROCESS_AS_NOBODY])
def test_ctypes_behind_a_removed_import_blocker_cannot_touch_the_machine(canary, signals, isolation):
    program = f"""
import sys
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', type(m).__name__)]
import ctypes
libc = ctypes.CDLL(None)
libc.unlink({str(canary).encode()!r})
libc.kill({os.getpid()}, 10)
f = lambda x: x
"""
    assert not run_code(program, "assert f(1) == 2\n", isolation=isolation).passed
    assert _intact(canary)
    assert signals == []


# --- the verdict, other processes' limits and descriptors ----------------------------------------

_MY_JUDGES = """
import os, sys, time
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', type(m).__name__)]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def my_judges():
    found = []
    for entry in os.listdir('/proc') if os.path.isdir('/proc') else ():
        try:
            cmdline = open('/proc/%s/cmdline' % entry, 'rb').read()
            parent = int(open('/proc/%s/stat' % entry).read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"The judge's side of the code sandbox" in cmdline and parent == os.getppid():
            found.append(int(entry))
    return found
"""
"""a candidate's prelude: the ctypes C library past the import blocker, and its judges (processes of the judge's
source whose parent is its own parent)"""

_FORGER = _MY_JUDGES + """
for _ in range(200):
    if my_judges():
        break
    time.sleep(0.005)
nothing = (ctypes.c_uint64 * 2)(0, 0)
for judge in my_judges():  # a file-size limit of 0: the judge dies writing its traceback or its verdict
    libc.syscall(302, judge, 1, nothing, None)
verdict = b'{"status": "ok", "detail": ""}'
for owner in [os.getppid()] + my_judges():  # an "ok" verdict into every memfd the trainer and the judge hold
    for fd in os.listdir('/proc/%d/fd' % owner) if os.path.isdir('/proc/%d/fd' % owner) else ():
        path = '/proc/%d/fd/%s' % (owner, fd)
        try:
            if not os.readlink(path).startswith('/memfd:'):
                continue
        except OSError:
            continue
        w = libc.open(path.encode(), 1)
        if w >= 0:
            libc.pwrite(w, verdict, len(verdict), ctypes.c_long(0))
            libc.close(w)
def f(x):
    return x * 3 + 5
"""


@pytest.mark.parametrize("isolation, keep_root, landlock", [
    pytest.param("namespaces", False, True, marks=needs_namespaces, id="namespaces"),
    pytest.param("process", False, True, id="process"),
    pytest.param("process", True, True, id="process-same-user"),
    pytest.param("process", True, False, id="process-same-user-without-landlock"),
])
def test_a_forged_verdict_cannot_pass(monkeypatch, isolation, keep_root, landlock):
    # The program sets its judge's file-size limit to 0 (prlimit64), so the judge dies without a verdict,
    # and writes an "ok" verdict into the trainer's descriptors through /proc/<ppid>/fd (scored 1.0).
    # "same user": a root trainer's candidate kept root, as a trainer that is not root has its own user.
    monkeypatch.setattr(sandbox, "_KEEP_ROOT", keep_root)
    monkeypatch.setattr(sandbox, "_LANDLOCK", landlock)
    tests = "def check(candidate):\n    for x in (0, 2):\n        assert candidate(x) == 3 * x + 4\n\ncheck(f)\n"
    result = run_code(_FORGER, tests, timeout_s=5.0, isolation=isolation)
    assert result.status == "failed" and "AssertionError" in result.stderr_tail, result


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is written for x86_64 only")
@pytest.mark.parametrize("isolation", [NAMESPACES, "process"])
def test_a_program_cannot_read_or_change_another_process_limits(isolation):
    program = f"""
import os, resource, sys
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', type(m).__name__)]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def limits():
    old = (ctypes.c_uint64 * 2)()
    trainer = libc.syscall(302, {os.getpid()}, 7, None, old), ctypes.get_errno()  # its RLIMIT_NOFILE, only read
    mine = libc.syscall(302, os.getpid(), 7, None, old), list(old)
    return trainer, mine, resource.getrlimit(resource.RLIMIT_NOFILE)  # prlimit64(0, ...) in the C library
"""
    result = run_code(program, "assert limits() == ((-1, 1), (0, [64, 64]), (64, 64))\n", isolation=isolation)
    assert result.passed, result.stderr_tail


@pytest.mark.parametrize("ending", [
    ("    status, detail = _judge(spec, channel)\n", "    status, detail = 'ok', ''\n",
     "    os._exit(0)\n\n\n_main()", "    os.kill(os.getpid(), 9)\n\n\n_main()"),  # says "ok", then is killed
    ("    status, detail = _judge(spec, channel)\n", "    os._exit(0)\n"),  # ends without a verdict
    ('    while view:\n        view = view[os.write(spec["verdict_fd"], view):]\n',
     '    os.write(spec["verdict_fd"], view[:9])\n'),  # half a verdict
], ids=["ok-then-killed", "no-verdict", "half-a-verdict"])
def test_a_judge_that_does_not_finish_its_verdict_scores_nothing(monkeypatch, ending):
    source = sandbox._JUDGE_SOURCE
    for old, new in zip(ending[::2], ending[1::2]):
        assert source.count(old) == 1
        source = source.replace(old, new)
    monkeypatch.setattr(sandbox, "_JUDGE_SOURCE", source)
    result = run_code(DOUBLE, CHECK_TESTS)
    assert result.status == "error" and "the judge ended without reporting" in result.stderr_tail, result


@pytest.mark.parametrize("tests", [TESTS, CHECK_TESTS])
def test_a_containment_step_that_fails_runs_no_program_at_the_process_level(monkeypatch, tests):
    step = "    _seccomp(deny_signals=True)\n    for name in"
    assert sandbox._CHILD_SOURCE.count(step) == 1
    broken = sandbox._CHILD_SOURCE.replace(step, "    raise OSError('seccomp refused')\n    for name in")
    monkeypatch.setattr(sandbox, "_CHILD_SOURCE", broken)
    result = run_code(DOUBLE, tests, isolation="process")
    assert result.status == "error" and "the isolation could not be set up" in result.stderr_tail, result


@pytest.mark.skipif(os.geteuid() != 0, reason="a trainer that is not root has no root to drop")
def test_a_root_trainers_candidate_runs_as_nobody_without_capabilities_at_the_process_level():
    # As root it could raise its hard limits (CAP_SYS_RESOURCE), fork past RLIMIT_NPROC, write
    # anything and reach every process; as nobody it keeps only CAP_DAC_READ_SEARCH, to read this Python.
    program = ("def who():\n    status = dict(line.split(':\\t', 1) for line in open('/proc/self/status'))\n"
               "    return status['Uid'].split()[:3], status['CapEff'].strip(), status['CapBnd'].strip()\n")
    expected = (["65534"] * 3, "0000000000000004", "0000000000000004")
    result = run_code(program, f"assert who() == {expected!r}\n", isolation="process")
    assert result.passed, result.stderr_tail


@pytest.mark.skipif(sandbox.landlock_abi() < 1, reason="this kernel offers no Landlock")
@pytest.mark.parametrize("keep_root", [False, True], ids=["process", "process-same-user"])
def test_other_processes_descriptors_and_memory_are_out_of_reach_at_the_process_level(monkeypatch, keep_root):
    # Landlock's domain: the trainer's descriptors, working directory and memory are refused through /proc,
    # even to a candidate that kept root (which ptrace's other checks let through)
    monkeypatch.setattr(sandbox, "_KEEP_ROOT", keep_root)
    program = f"""
import os
def reach():
    out = {{}}
    for name, use in (('fd/0', os.readlink), ('cwd', os.readlink), ('mem', lambda p: os.close(os.open(p, os.O_RDONLY)))):
        try:
            use('/proc/{os.getpid()}/' + name)
            out[name] = 'reached'
        except OSError as exc:
            out[name] = exc.errno
    return out
"""
    result = run_code(program, "assert reach() == {'fd/0': 13, 'cwd': 13, 'mem': 13}\n", isolation="process")
    assert result.passed, result.stderr_tail


# --- containment (namespaces) --------------------------------------------------------------------


@needs_namespaces
def test_candidate_sees_a_minimal_read_only_machine(canary):
    program = f"""
import os
def probe():
    out = []
    out.append(os.path.exists({str(canary)!r}))
    out.append(os.path.exists({os.getcwd()!r}))
    for path in ('/usr/probe', '/probe', {str(canary.parent)!r} + '/probe'):
        try:
            open(path, 'w').close()
            out.append('wrote ' + path)
        except OSError:
            out.append(False)
    out.append(os.getcwd())
    out.append(os.path.exists('/usr/lib/os-release') or bool(os.listdir('/usr/lib')))  # system directories: readable
    return out
"""
    assert run_code(program, "assert probe() == [False, False, False, False, False, '/tmp', True]\n").passed


@needs_namespaces
def test_a_removed_mountpoint_is_made_again():
    assert run_code(DOUBLE, TESTS).passed
    os.rmdir(sandbox._mountpoint)  # a temp cleaner, or a forked worker's exit
    assert run_code(DOUBLE, TESTS).passed


@pytest.mark.parametrize("isolation", [NAMESPACES, "process"])
def test_environment_is_stripped(monkeypatch, isolation):
    monkeypatch.setenv("FEDRL_SECRET", "s3cret")
    program = "import os\ndef keys():\n    return sorted(set(os.environ) - {'LC_CTYPE'})\n"  # Python's locale coercion
    result = run_code(program, "assert keys() == ['HOME', 'TMPDIR']\n", isolation=isolation)
    assert result.passed, result.stderr_tail


_SECCOMP_PROBE = """
import sys
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', type(m).__name__)]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def refused():
    out = {}
    for name, args in (('unshare', (0x10000000,)), ('ptrace', (16, TRAINER, 0, 0)), ('syscall', (425, 1, 0)),
                       ('mount', (b'none', b'/tmp', b'tmpfs', 0, None)), ('kill', (TRAINER, 10))):
        out[name] = (getattr(libc, name)(*args), ctypes.get_errno())
    return out
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is written for x86_64 only")
@pytest.mark.parametrize("isolation", ["namespaces", "process"])
def test_seccomp_refuses_ptrace_namespaces_io_uring_and_mounts(isolation, signals):
    if isolation == "namespaces" and sandbox_isolation() != "namespaces":
        pytest.skip("no namespaces here")
    program = f"TRAINER = {os.getpid()}\n" + _SECCOMP_PROBE
    eperm, esrch = (-1, 1), (-1, 3)  # without a PID namespace kill is refused; inside it, the trainer is not there
    expected = dict(unshare=eperm, ptrace=eperm, syscall=eperm, mount=eperm, kill=esrch if isolation == "namespaces"
                    else eperm)
    result = run_code(program, f"assert refused() == {expected!r}\n", isolation=isolation)
    assert result.passed, result.stderr_tail
    assert signals == []


_UNBOUNDED_MEMORY_PROBE = """
import os, sys
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', type(m).__name__)]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
name = b'fedrl-probe-%d' % os.getpid()
def attempt(number, args, undo):
    made = libc.syscall(number, *args)
    errno = ctypes.get_errno()
    if made >= 0:
        undo(made)  # never leave a segment or a queue behind, even on a sandbox that lets it be made
        return 'made'
    return errno
def refused():
    return {
        'memfd_create': attempt(319, (b'x', 0), os.close),
        'shmget': attempt(29, (0, 2**20, 0o1600), lambda i: libc.syscall(31, i, 0, None)),
        'msgget': attempt(68, (0, 0o1600), lambda i: libc.syscall(71, i, 0, None)),
        'semget': attempt(64, (0, 1, 0o1600), lambda i: libc.syscall(66, i, 0, 0, None)),
        'mq_open': attempt(240, (name, os.O_CREAT | os.O_RDWR, 0o600, None),
                           lambda fd: (os.close(fd), libc.syscall(241, name))),
    }
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is written for x86_64 only")
@pytest.mark.parametrize("isolation", ["namespaces", "process"])
def test_memory_outside_the_address_space_cannot_be_made(isolation):
    # memfd files, SysV shared memory and message queues and POSIX message queues hold memory that
    # RLIMIT_AS does not count (SysV segments and queues even outlive the process without an IPC namespace)
    if isolation == "namespaces" and sandbox_isolation() != "namespaces":
        pytest.skip("no namespaces here")
    expected = dict.fromkeys(("memfd_create", "shmget", "msgget", "semget", "mq_open"), 1)  # EPERM
    result = run_code(_UNBOUNDED_MEMORY_PROBE, f"assert refused() == {expected!r}\n", isolation=isolation)
    assert result.passed, result.stderr_tail


@pytest.mark.parametrize("isolation", ["namespaces", "process"])
def test_memfd_files_cannot_hold_memory_past_the_limit(isolation):
    # 6 files of 15 MiB (each under the 16 MiB file-size limit): 90 MiB held against 64 MiB of address space
    if isolation == "namespaces" and sandbox_isolation() != "namespaces":
        pytest.skip("no namespaces here")
    program = (
        "import os\nHELD, FDS = 0, []\n"
        "try:\n    for _ in range(6):\n        fd = os.memfd_create('x')\n        FDS.append(fd)\n"
        "        for _ in range(15):\n            os.write(fd, bytes(2**20))\n        HELD += 15 * 2**20\n"
        "except OSError:\n    pass\n"
        "def held():\n    return HELD\n"
    )
    result = run_code(program, "assert held() <= 64 * 2**20\n", memory_mb=64, timeout_s=5.0, isolation=isolation)
    assert result.passed, result.stderr_tail


@pytest.mark.parametrize("keep_root, landlock", [(False, True), (True, False)],
                         ids=["process", "process-same-user-without-landlock"])
def test_what_the_process_level_leaves_open(tmp_path, monkeypatch, keep_root, landlock):
    # Documented, not contained: past the tripwire a program reads files outside its directory, writes
    # what its user may write, sends UDP; without Landlock it opens the trainer's descriptors and memory
    # through /proc (a program of the trainer's own user; no Yama on this machine to refuse the memory).
    # This test fails when one of them closes, so that docs/reliability.md is brought up to date.
    monkeypatch.setattr(sandbox, "_KEEP_ROOT", keep_root)
    monkeypatch.setattr(sandbox, "_LANDLOCK", landlock)
    readable = tmp_path / "readable.txt"
    readable.write_text("visible")
    readable.chmod(0o644)
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(2.0)
    program = f"""
import os, socket, sys
sys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', type(m).__name__)]
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
READ = open({str(readable)!r}).read()
fd = libc.open({str(open_dir / "written.txt").encode()!r}, os.O_WRONLY | os.O_CREAT, 0o644)
WROTE = fd >= 0 and libc.write(fd, b'x', 1) == 1
udp = socket.socket.__mro__[2](socket.AF_INET, socket.SOCK_DGRAM)
udp.sendto(b'datagram', ('127.0.0.1', {listener.getsockname()[1]}))
def trainer(use, name):
    try:
        use('/proc/{os.getpid()}/' + name)
        return True
    except OSError:
        return False
TRAINER = trainer(os.readlink, 'fd/0'), trainer(lambda p: os.close(os.open(p, os.O_RDONLY)), 'mem')
def left_open():
    return READ, WROTE, TRAINER
"""
    expected = ("visible", True, (not landlock, not landlock))
    try:
        result = run_code(program, f"assert left_open() == {expected!r}\n", isolation="process")
        assert result.passed, result.stderr_tail
        assert listener.recvfrom(64)[0] == b"datagram"
        assert (open_dir / "written.txt").read_text() == "x"
    finally:
        listener.close()


def test_process_isolation_keeps_its_tripwire(canary):
    attacks = ["import os\nos.fork()\n", "import subprocess\nsubprocess.run(['true'])\n",
               f"import os\nos.remove({str(canary)!r})\n", "import socket\nsocket.socket()\n"]
    results = run_many([(a, "pass\n") for a in attacks], isolation="process")
    assert [r.status for r in results] == ["forbidden"] * 4
    assert all(r.isolation == "process" for r in results)
    assert _intact(canary)


# --- fuzz: generated hostile programs --------------------------------------------------------

_WRONG = "def f(x):\n    return x * 3 + 5\n"  # the task is x * 3 + 4
_FUZZ_TESTS = ["assert f(0) == 4\nassert f(2) == 10\nassert f(7) == 25\n",
               "def check(candidate):\n    for x in (0, 2, 7):\n        assert candidate(x) == 3 * x + 4\n\ncheck(f)\n"]
_ATTACKS = [
    # claim a pass
    "import sys\nfor fr in [sys._getframe(i) for i in range(1, 3)]:\n    for v in list(fr.f_locals.values()):\n"
    "        if callable(v):\n            try:\n                v('ok')\n"
    "            except BaseException:\n                pass\n",
    "import os\nfor fd in range(3, 12):\n    try:\n        os.write(fd, b'{\"status\": \"ok\", \"detail\": \"\"}\\n')\n"
    "    except OSError:\n        pass\n",
    "import os\nfor fd in range(3, 12):\n    try:\n"
    "        os.write(fd, b'{\"program\": \"ok\", \"calls\": [{\"ok\": 1}]}\\n')\n"
    "    except OSError:\n        pass\n",
    "import sys\nsys.exit(0)\n",
    "import os\nos._exit(0)\n",
    # objects that claim equality, or a poisoned encoder
    "class E:\n    __eq__ = lambda s, o: True\n    __hash__ = lambda s: 0\n_f = f\nf = lambda x: E()\n",
    "class E(int):\n    __eq__ = lambda s, o: True\n_f = f\nf = lambda x: E(_f(x))\n",
    "import sys\nfor m in list(sys.modules.values()):\n    for n in ('wire_encode', 'wire_dumps'):\n"
    "        if hasattr(m, n):\n            setattr(m, n, lambda *a, **k: b'{\"ok\": 4}\\n')\n",
    "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\nbuiltins.bool = lambda x: True\n",
    # reach the machine
    "import _io\ntry:\n    _io.FileIO(CANARY, 'w').write(b'dead')\nexcept OSError:\n    pass\n",
    "import os, shutil\nshutil.rmtree(os.path.dirname(CANARY), ignore_errors=True)\n",
    "import os\ntry:\n    os.chmod(CANARY, 0)\nexcept OSError:\n    pass\n",
    "import sys\nsys.meta_path[:] = [m for m in sys.meta_path if 'Blocker' not in getattr(m, '__name__', '')]\n"
    "try:\n    import ctypes\n    ctypes.CDLL(None).unlink(CANARY.encode())\nexcept Exception:\n    pass\n",
    "import os\ntry:\n    os.kill(TRAINER, 10)\nexcept OSError:\n    pass\n",
    "import os\ntry:\n    if os.fork() == 0:\n        os._exit(0)\nexcept OSError:\n    pass\n",
    # break the process
    "import sys\nsys.setrecursionlimit(10**6)\ndef r(n):\n    return r(n + 1)\n"
    "try:\n    r(0)\nexcept RecursionError:\n    pass\n",
    "x = [bytearray(2**20) for _ in range(400)]\n",
    "import sys\nsys.stdout.write('x' * 10**6)\nsys.stderr.write('y' * 10**5)\n",
]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(st.tuples(st.lists(st.sampled_from(range(len(_ATTACKS))), min_size=1, max_size=3),
                                st.booleans(), st.sampled_from(range(len(_FUZZ_TESTS)))), min_size=4, max_size=4))
def test_fuzz_hostile_programs_never_score_and_never_touch_the_machine(batch, canary, signals, monkeypatch):
    monkeypatch.setattr(sandbox, "CODE_REWARD_TIMEOUT_S", 1.0)
    header = f"CANARY = {str(canary)!r}\nTRAINER = {os.getpid()}\n"
    programs, answers = [], []
    for attack_ids, attack_first, tests in batch:
        attacks = "".join(_ATTACKS[i] for i in attack_ids)
        programs.append(header + (attacks + _WRONG if attack_first else _WRONG + attacks))
        answers.append(_FUZZ_TESTS[tests])
    rewards = code_accuracy_reward(None, programs, answer=answers)
    assert rewards == [0.0] * len(programs), [p for p, r in zip(programs, rewards) if r]
    # the "process" level contains these only for a root trainer, whose candidate runs as nobody (x86_64: signals)
    if sandbox_isolation() == "namespaces" or (os.geteuid() == 0 and os.uname().machine == "x86_64"):
        assert _intact(canary)
        assert signals == []


# --- TRL reward ----------------------------------------------------------------------


def test_extract_program():
    assert extract_program("<think>x</think><answer>\n  a = 1\n</answer>") == "a = 1\n"
    assert extract_program("<answer>a = 0</answer> then <answer>a = 2</answer>") == "a = 2\n"
    assert extract_program("Here:\n```python\na = 3\n```\nDone.") == "a = 3\n"
    assert extract_program("<answer>```py\na = 4\n```</answer>") == "a = 4\n"
    assert extract_program("a = 5") == "a = 5\n"


def test_code_accuracy_reward():
    completions = [
        "<think>double it</think><answer>def double(x):\n    return 2 * x</answer>",
        "Sure:\n```python\ndef double(x):\n    return x + x\n```",
        "def double(x):\n    return 3 * x",
        [{"role": "assistant", "content": "<answer>def double(x): return 2 * x</answer>"}],
        "def double(x):\n    return 2 * x",
        "while True: pass",
        None,
        "x" * (sandbox.CODE_MAX_PROGRAM_CHARS + 1),
    ]
    answer = [TESTS, TESTS, TESTS, ["assert double(2) == 4", "assert double(0) == 0"], None, TESTS, TESTS, TESTS]
    start = time.monotonic()
    rewards = code_accuracy_reward(prompts=["p"] * 8, completions=completions, answer=answer, trainer_state=None)
    assert rewards == [1.0, 1.0, 0.0, 1.0, None, 0.0, 0.0, 0.0]
    assert time.monotonic() - start < 6.0
    assert code_accuracy_reward(["p"], ["x = 1"]) == [None]
    with pytest.raises(ValueError, match="answer"):
        code_accuracy_reward(["p", "p"], ["a", "b"], answer=[TESTS])


def test_infinite_loops_of_one_call_share_one_deadline(monkeypatch):
    monkeypatch.setattr(sandbox, "CODE_REWARD_TIMEOUT_S", 1.0)
    loops = [f"def double(x):\n    while True:\n        x += {i}\n" for i in range(8)]
    start = time.monotonic()
    assert code_accuracy_reward(None, loops, answer=[TESTS] * 8) == [0.0] * 8
    assert time.monotonic() - start < 2.5  # one deadline, not 8 s one after the other


def test_reward_runs_each_distinct_program_once_and_fails_unparsable_ones_without_a_child(monkeypatch):
    calls = []
    real = sandbox.run_many

    def counting(jobs, *args, **kwargs):
        calls.extend(program for program, _ in jobs)
        return real(jobs, *args, **kwargs)

    monkeypatch.setattr(sandbox, "run_many", counting)
    good = "<answer>" + DOUBLE + "</answer>"
    values = code_accuracy_reward(None, [good, good, good, "def double(x) return", good, ""], answer=[TESTS] * 6)
    assert values == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    assert calls == [DOUBLE]  # the three identical programs ran once; the syntax error and "" never ran


def test_extract_program_is_linear_on_unclosed_tags_and_fences():
    start = time.monotonic()
    assert extract_program("<answer>" * 125_000) == "<answer>" * 125_000 + "\n"
    extract_program("```\n" * 250_000)
    extract_program("<answer>" * 10_000 + "x = 1</answer>")
    assert time.monotonic() - start < 2.0
    assert extract_program("<answer>a<answer>b = 1</answer>") == "b = 1\n"  # the innermost last pair


_SPEC_REWRITER = _MY_JUDGES + """
for _ in range(400):
    judges = my_judges()
    if judges:
        break
    time.sleep(0.005)
opened = []
for judge in judges:  # the judge's spec (its tests) arrives on its stdin: can it be opened again and rewritten?
    w = libc.open(('/proc/%d/fd/0' % judge).encode(), 1)  # the C library's open: past the Python-level guard
    if w >= 0:
        opened.append(judge)
        libc.close(w)
def f(x):
    return 3 * x + 4 if judges and not opened else -1
"""


def test_a_candidate_of_the_same_user_cannot_reopen_the_judges_spec(monkeypatch):
    # The weakest isolation (same user, no Landlock): the candidate finds its judge and tries to open the judge's
    # stdin for writing; "ok" needs both that it found the judge and that the open failed.
    monkeypatch.setattr(sandbox, "_KEEP_ROOT", True)
    monkeypatch.setattr(sandbox, "_LANDLOCK", False)
    tests = "def check(candidate):\n    for x in (0, 2):\n        assert candidate(x) == 3 * x + 4\n\ncheck(f)\n"
    result = run_code(_SPEC_REWRITER, tests, timeout_s=10.0, isolation="process")
    assert result.status == "ok", result
