"""HumanEval's functional correctness: the model's program and the row's tests, run in the sandbox.
Details: docs/reliability.md, "Module notes".
"""

import ast
import re

from fedrl_kit.rewards.accuracy import _gold_answers
from fedrl_kit.rewards.parsing import completion_text
from fedrl_kit.rewards.sandbox import code_accuracy_reward, extract_program

HUMANEVAL_STOP = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
"""where HumanEval's harness cuts a body completion (what follows is not part of the function)"""


def _defines(program: str, name: str) -> bool:
    """Whether ``program`` parses and defines function ``name`` at top level (parsed, never run)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name for node in tree.body)


def _entry_and_preamble(prompt: str, tests: str) -> tuple[str | None, str]:
    """The entry point ``tests`` check (None if they end in no ``check(name)``) and the prompt's text before
    ``def <entry point>(``: its imports and helper functions."""
    entry = re.search(r"check\((\w+)\)\s*$", tests)
    if not entry:
        return None, ""
    header = prompt.find(f"def {entry.group(1)}(")
    return entry.group(1), prompt[:header] if header >= 0 else ""


def humaneval_program(prompt: str, completion: str, tests: str) -> str:
    """The program HumanEval's tests run against: the model's function after the prompt's preamble, or the prompt
    followed by the completion as the body (docs/reliability.md, "Module notes").

    Args:
        prompt, completion, tests: the HumanEval prompt; the model's text; the row's ``answer`` (``check(...)``).

    Returns:
        Python source to run before ``tests``.
    """
    entry, preamble = _entry_and_preamble(prompt, tests)
    # a small chat model often writes the code bare and then closes a fence it never opened
    for program in (extract_program(completion), extract_program(completion.split("```", 1)[0])):
        if entry and _defines(program, entry):
            return preamble + program
    cuts = [i for i in (completion.find(stop) for stop in HUMANEVAL_STOP) if i >= 0]
    return prompt + completion[:min(cuts, default=len(completion))]


def humaneval_tests(prompt: str, tests: str) -> str:
    """``tests`` preceded by the prompt's preamble (imports and helper functions), when it parses."""
    _, preamble = _entry_and_preamble(prompt, tests)
    if not preamble.strip():
        return tests
    try:
        ast.parse(preamble)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return tests
    return preamble.rstrip("\n") + "\n\n\n" + tests


def humaneval_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list[float | None]:
    """HumanEval pass/fail of each completion: 1.0 if its program passes the row's tests, else 0.0.

    Args:
        prompts: the HumanEval prompts, aligned with ``completions`` (the program needs their imports).
        answer: each row's tests (``test`` + ``check(entry_point)``).

    Returns:
        Per completion: 1.0 (passed), 0.0, or None where there are no tests.
    """
    golds = _gold_answers(answer, len(completions))
    prompts = [""] * len(completions) if prompts is None else list(prompts)
    programs = [humaneval_program(p, completion_text(c), g) if g is not None else "" for p, c, g in
                zip(prompts, completions, golds)]
    tests = [humaneval_tests(p, g) if g is not None else None for p, g in zip(prompts, golds)]
    return code_accuracy_reward(prompts, programs, answer=tests)
