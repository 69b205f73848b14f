"""The code sandbox: results, and each containment layer (fedrl_kit/rewards/sandbox.py).

Every dangerous program here is bounded on its own (a fork loop whose children
exit at once, signal 0, a finite write), so a broken guard makes a test fail,
not the machine suffer.
"""

import os
import time

import pytest

from fedrl_kit.rewards.sandbox import SandboxResult, code_accuracy_reward, extract_program, run_code

DOUBLE = "def double(x):\n    return 2 * x\n"
TESTS = "assert double(2) == 4\nassert double(-1) == -2\n"


# --- results ------------------------------------------------------------------


def test_correct_program_passes():
    result = run_code(DOUBLE, TESTS)
    assert isinstance(result, SandboxResult)
    assert result.passed and result.status == "ok"
    assert 0 < result.duration_s < 2.0


def test_wrong_program_fails():
    result = run_code("def double(x):\n    return 3 * x\n", TESTS)
    assert not result.passed and result.status == "failed"
    assert "AssertionError" in result.stderr_tail


def test_missing_function_fails():
    assert run_code("def triple(x):\n    return 3 * x\n", TESTS).status == "failed"


@pytest.mark.parametrize(
    "program, tests",
    [
        ("def double(x)\n    return 2 * x\n", TESTS),  # program does not compile
        (DOUBLE, "assert double(2) ==\n"),  # tests do not compile
        ("raise RuntimeError('boom')\n", TESTS),  # program raises at top level
    ],
)
def test_errors(program, tests):
    result = run_code(program, tests)
    assert not result.passed and result.status == "error"


@pytest.mark.parametrize("exit_call", ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"])
def test_exiting_before_the_tests_cannot_fake_a_pass(exit_call):
    result = run_code(DOUBLE + exit_call, "assert False\n")
    assert not result.passed and result.status == "error"


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
    result = run_code(program, "assert read() == 'hi'\nassert math.gcd(12, 18) == 6\n")
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
    ],
)
def test_bad_arguments(kwargs, field):
    with pytest.raises(ValueError, match=field):
        run_code(**kwargs)


# --- time, memory, disk -------------------------------------------------------------


def test_infinite_loop_is_killed_at_the_time_limit():
    start = time.monotonic()
    result = run_code("while True:\n    pass\n", "pass\n", timeout_s=1.0)
    elapsed = time.monotonic() - start
    assert result.status == "timeout" and not result.passed
    assert 1.0 <= result.duration_s < 2.0
    assert elapsed < 3.0
    assert "killed after" in result.stderr_tail


def test_large_allocation_fails_with_memory_status():
    result = run_code("x = bytearray(10**10)\n", "pass\n", memory_mb=256)
    assert result.status == "memory" and not result.passed
    assert "MemoryError" in result.stderr_tail


def test_output_flood_is_capped():
    program = "import sys\nfor _ in range(300_000):\n    sys.stdout.write('x' * 100)\n"  # 30 MB > 16 MiB cap
    result = run_code(program, "pass\n", timeout_s=5.0)
    assert result.status == "error" and "File too large" in result.stderr_tail


# --- processes --------------------------------------------------------------------

BOUNDED_FORK_LOOP = """\
import os
for _ in range(10000):
    pid = os.fork()
    if pid == 0:  # should the guard ever fail, each child leaves at once
        os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.mark.parametrize(
    "program",
    [
        BOUNDED_FORK_LOOP,
        "import posix\nfor _ in range(10000):\n    pid = posix.fork()\n    if pid == 0:\n        posix._exit(0)\n",
        "import subprocess\nsubprocess.run(['true'])\n",
        "import subprocess\nsubprocess.Popen(['true']).wait()\n",
        "import os\nos.system('true')\n",
        "import os\nos.posix_spawn('/bin/true', ['true'], {})\n",
        "import multiprocessing\np = multiprocessing.Process(target=print)\np.start()\np.join()\n",
        "import pty\npid, fd = pty.fork()\nif pid == 0:\n    import os\n    os._exit(0)\n",
        "import os\nos.kill(os.getpid(), 0)\n",  # signal 0: harmless even if it got through
    ],
    ids=["fork_loop", "posix_fork", "subprocess_run", "popen", "system", "posix_spawn", "multiprocessing", "pty", "kill"],
)
def test_process_creation_is_blocked(program):
    result = run_code(program, "pass\n")
    assert result.status == "forbidden" and not result.passed, result.stderr_tail
    assert "sandbox: blocked" in result.stderr_tail


def test_caught_violation_still_marks_the_run_forbidden():
    program = "import os\ntry:\n    os.fork()\nexcept Exception:\n    pass\n" + DOUBLE
    result = run_code(program, TESTS)
    assert result.status == "forbidden" and not result.passed


# --- filesystem -------------------------------------------------------------------


@pytest.fixture
def canary(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    path = folder / "canary.txt"
    path.write_text("alive")
    path.chmod(0o640)
    return path


@pytest.mark.parametrize(
    "attack",
    [
        "os.remove(CANARY)",
        "os.unlink(CANARY)",
        "shutil.rmtree(FOLDER)",
        "shutil.rmtree(FOLDER, ignore_errors=True)",
        "open(CANARY, 'w').write('dead')",
        "open(CANARY, 'a').write('dead')",
        "pathlib.Path(CANARY).write_text('dead')",
        "pathlib.Path(CANARY).unlink()",
        "os.rename(CANARY, CANARY + '.moved')",
        "shutil.move(CANARY, 'stolen.txt')",
        "os.truncate(CANARY, 0)",
        "os.chmod(CANARY, 0)",
        "os.close(os.open(CANARY, os.O_WRONLY | os.O_TRUNC))",
        "os.symlink(CANARY, 'link')\nopen('link', 'w').write('dead')",
        "os.chdir(FOLDER)\nopen('canary.txt', 'w').write('dead')",
    ],
)
def test_writes_outside_the_sandbox_are_blocked(canary, attack):
    program = (
        f"import os, pathlib, shutil\nCANARY = {str(canary)!r}\nFOLDER = {str(canary.parent)!r}\n"
        + "try:\n"
        + "".join(f"    {line}\n" for line in attack.splitlines())
        + "except OSError:\n    pass\n"
    )
    result = run_code(program, "pass\n")
    assert result.status == "forbidden", result.stderr_tail
    assert canary.read_text() == "alive"
    assert canary.stat().st_mode & 0o777 == 0o640


def test_working_directory_is_fresh_and_removed():
    # The program reports its cwd on stderr (the only channel besides the status).
    program = "import os, sys\nprint('CWD=' + os.getcwd(), file=sys.stderr)\nLISTING = os.listdir('.')\n"
    result = run_code(program, "assert LISTING == []\nassert False\n")
    assert result.status == "failed"  # reached the last line of the tests: LISTING was empty
    cwd = result.stderr_tail.split("CWD=")[1].splitlines()[0]
    assert cwd != os.getcwd() and "fedrl-sandbox-" in cwd
    assert not os.path.exists(cwd)


# --- network, environment -----------------------------------------------------------


@pytest.mark.parametrize(
    "program",
    [
        "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)\n",
        "import socket\nsocket.create_connection(('127.0.0.1', 9))\n",
        "import _socket\n_socket.socket()\n",
        "import socket\nsocket.getaddrinfo('localhost', 80)\n",
        "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9')\n",
    ],
    ids=["socket", "create_connection", "_socket", "getaddrinfo", "urllib"],
)
def test_network_is_blocked(program):
    result = run_code(program, "pass\n")
    assert result.status == "forbidden", result.stderr_tail


def test_environment_is_stripped_and_ctypes_unavailable(monkeypatch):
    monkeypatch.setenv("FEDRL_SECRET", "s3cret")
    assert run_code("import os\nKEYS = set(os.environ)\n", "assert 'FEDRL_SECRET' not in KEYS\n").passed
    assert run_code("import ctypes\n", "pass\n").status == "error"


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
    ]
    answer = [TESTS, TESTS, TESTS, ["assert double(2) == 4", "assert double(0) == 0"], None, TESTS]
    start = time.monotonic()
    rewards = code_accuracy_reward(prompts=["p"] * 6, completions=completions, answer=answer, trainer_state=None)
    assert rewards == [1.0, 1.0, 0.0, 1.0, None, 0.0]
    assert time.monotonic() - start < 6.0
    assert code_accuracy_reward(["p"], ["x = 1"]) == [None]
    with pytest.raises(ValueError, match="answer"):
        code_accuracy_reward(["p", "p"], ["a", "b"], answer=[TESTS])


def test_reward_runs_each_distinct_program_once_and_fails_unparsable_ones_without_a_child(monkeypatch):
    import fedrl_kit.rewards.sandbox as sandbox

    calls = []
    real = sandbox.run_code

    def counting(program, tests, *args, **kwargs):
        calls.append(program)
        return real(program, tests, *args, **kwargs)

    monkeypatch.setattr(sandbox, "run_code", counting)
    good = "<answer>" + DOUBLE + "</answer>"
    values = code_accuracy_reward(None, [good, good, good, "def double(x) return", good], answer=[TESTS] * 5)
    assert values == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert calls == [DOUBLE]  # the three identical programs ran once; the syntax error never ran


def test_extract_program_is_linear_on_unclosed_tags_and_fences():
    start = time.monotonic()
    assert extract_program("<answer>" * 125_000) == "<answer>" * 125_000 + "\n"
    extract_program("```\n" * 250_000)
    extract_program("<answer>" * 10_000 + "x = 1</answer>")
    assert time.monotonic() - start < 2.0
    assert extract_program("<answer>a<answer>b = 1</answer>") == "b = 1\n"  # the innermost last pair
