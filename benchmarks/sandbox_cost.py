"""What one completion costs the code reward: the sandbox before and after its redesign, side by side.

RL calls the code reward thousands of times, so its per-completion cost matters. This script
loads the sandbox as it was before the redesign (``fedrl_kit/rewards/sandbox.py`` at the
commit before ``sandbox_wire.py`` was added, from git) next to today's, and times both in one
process, alternating old and new in every repetition so that load on the machine hits both
alike:

* ``single``: one correct code-family program (``f=lambda x:x*3+4`` against four literal
  asserts), ``run_code`` one after the other: seconds per completion;
* ``batch8``: ``code_accuracy_reward`` on 8 distinct completions (4 right, 4 wrong), one
  GRPO group: seconds per completion (the call's wall time / 8);
* ``humaneval``: a HumanEval-style ``def check(candidate)`` test with a loop (the judge path
  today): seconds per completion;
* ``loops8``: ``code_accuracy_reward`` on 8 distinct infinite loops: seconds per call;
* ``math8``: ``math_accuracy_reward`` on 8 answers (math-verify in the trainer's process before,
  in a worker process after): seconds per completion.

Prints and writes medians and ``ratio = new / old`` (below 1: today's is cheaper) to
``benchmarks/results/sandbox_cost.json``.

    python benchmarks/sandbox_cost.py               # ~1-2 min
    python benchmarks/sandbox_cost.py --repetitions 3
"""

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import save_result  # noqa: E402

import fedrl_kit.rewards.math_accuracy as new_accuracy  # noqa: E402
import fedrl_kit.rewards.sandbox as new  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "f=lambda x:x*3+4\n"
TESTS = "assert f(0)==4\nassert f(1)==7\nassert f(2)==10\nassert f(7)==25"
CHECK = "def check(candidate):\n    for x in range(20):\n        assert candidate(x) == 3 * x + 4\n\ncheck(f)\n"
BATCH = [f"<answer>f=lambda x:x*3+{4 if i % 2 == 0 else 5}{' ' * i}</answer>" for i in range(8)]
LOOPS = [f"<answer>def f(x):\n    while True:\n        x += {i}</answer>" for i in range(8)]
MATH = (["<answer>\\frac{1}{2}</answer>", "<answer>0.5</answer>", "<answer>2/4</answer>", "<answer>x^2+1</answer>",
         "<answer>\\sqrt{18}</answer>", "<answer>3</answer>", "The answer is \\boxed{7}.", "<answer>(1, 2)</answer>"],
        ["1/2", "\\frac{1}{2}", "0.5", "1+x^2", "3\\sqrt{2}", "4", "7", "(1,2)"])


def load_baseline():
    """The sandbox and accuracy modules from the commit before the redesign, and that commit's id."""
    first = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", "fedrl_kit/rewards/sandbox_wire.py"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()[-1]
    ref = subprocess.run(["git", "rev-parse", first + "~1"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    modules = []
    for name in ("sandbox", "accuracy"):
        source = subprocess.run(["git", "show", f"{ref}:fedrl_kit/rewards/{name}.py"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
        path = Path(tempfile.mkdtemp()) / f"{name}_before.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"{name}_before", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"{name}_before"] = module
        spec.loader.exec_module(module)
        modules.append(module)
    return modules, ref


SCENARIOS = ("single", "batch8", "humaneval", "loops8", "math8")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def scenarios(module, accuracy):
    """name -> (a function doing the work, how many completions it scores)."""
    def single():
        assert module.run_code(PROGRAM, TESTS).passed

    def batch8():
        assert module.code_accuracy_reward(None, BATCH, answer=[TESTS] * 8) == [1.0, 0.0] * 4

    def humaneval():
        assert module.run_code(PROGRAM, CHECK).passed

    def loops8():
        assert module.code_accuracy_reward(None, LOOPS, answer=[TESTS] * 8) == [0.0] * 8

    def math8():  # not asserted: on a loaded machine an answer may pass its deadline and fall back to exact match
        accuracy.math_accuracy_reward(None, MATH[0], answer=MATH[1])

    return {"single": (single, 1), "batch8": (batch8, 8), "humaneval": (humaneval, 1), "loops8": (loops8, 8),
            "math8": (math8, 8)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=9, help="timed repetitions per scenario and side")
    parser.add_argument("--loop-repetitions", type=int, default=2, help="repetitions of loops8 (8+ s each before)")
    args = parser.parse_args(argv)
    (before, before_accuracy), ref = load_baseline()
    sides = {"before": scenarios(before, before_accuracy), "after": scenarios(new, new_accuracy)}
    for side in sides.values():  # warm-up (today's isolation probe, math-verify's imports and worker)
        side["single"][0]()
        side["math8"][0]()
    runs = []
    for name in SCENARIOS:
        reps = args.loop_repetitions if name == "loops8" else args.repetitions
        for rep in range(reps):
            order = ("before", "after") if rep % 2 == 0 else ("after", "before")
            for side in order:
                fn, n = sides[side][name]
                runs.append(dict(scenario=name, side=side, repetition=rep, seconds=timed(fn), completions=n))
    summary = {"baseline_commit": ref, "isolation_after": new.sandbox_isolation()}
    for name in SCENARIOS:
        med = {side: statistics.median(r["seconds"] / (1 if name == "loops8" else r["completions"])
                                       for r in runs if r["scenario"] == name and r["side"] == side)
               for side in ("before", "after")}
        unit = "s_per_call" if name == "loops8" else "s_per_completion"
        summary[name] = {f"before_{unit}": round(med["before"], 4), f"after_{unit}": round(med["after"], 4),
                         "ratio_after_over_before": round(med["after"] / med["before"], 3)}
    settings = dict(repetitions=args.repetitions, loop_repetitions=args.loop_repetitions,
                    timeout_s=new.CODE_REWARD_TIMEOUT_S, processes=new.CODE_REWARD_PROCESSES,
                    before_workers=getattr(before, "CODE_REWARD_WORKERS", None))
    save_result(ROOT / "benchmarks/results/sandbox_cost.json", "sandbox_cost", argv, settings, runs, summary)


if __name__ == "__main__":
    main()
