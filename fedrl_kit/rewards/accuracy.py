"""Verifiable accuracy rewards: is the completion's final answer the gold answer?
Details: docs/reliability.md, "Module notes".
"""

import ast
import re

from fedrl_kit.rewards.parsing import (
    completion_text,
    extract_answer,
    extract_tagged_answer,
    normalise_answer,
)
from fedrl_kit.rewards.math_worker import MathVerifier
from fedrl_kit.rewards.sandbox import code_accuracy_reward, extract_program

MATH_VERIFY_MAX_CHARS = 1000
"""characters of the prediction given to math-verify (its tail, where the final answer is), and the
longest gold answer given to it"""
MATH_VERIFY_MAX_NESTING = 6
"""deepest bracket nesting given to math-verify; real final answers stay below it (\\frac{\\sqrt{3}}{2}
is 2 deep)"""
MATH_VERIFY_CALL_BUDGET_S = 10.0
"""most seconds one call of math_accuracy_reward waits for math-verify; later answers use exact match"""
MATH_VERIFIER = MathVerifier()
"""the math-verify worker process shared by every thread of this process"""


def _gold_answers(answer, n: int) -> list:
    if answer is None:
        return [None] * n
    if isinstance(answer, str) or not hasattr(answer, "__len__") or len(answer) != n:
        raise ValueError(
            f"answer must be a list with one gold answer per completion ({n}), got {answer!r:.80}"
        )
    return list(answer)


def _exact_match(gold, predicted: str | None) -> float:
    if predicted is None:
        return 0.0
    return float(normalise_answer(predicted) == normalise_answer(gold))


def accuracy_reward(prompts, completions, answer=None, **kwargs) -> list[float | None]:
    """Exact-match accuracy of the extracted answer against the gold answer.

    Args:
        answer: gold answers aligned with ``completions``; None (a row or the column) means "not applicable".

    Returns:
        Per completion: 1.0 if ``normalise_answer`` of ``extract_answer`` equals that of the gold answer, else 0.0
        (also when no answer can be extracted); None where the gold answer is None.
    """
    golds = _gold_answers(answer, len(completions))
    return [
        None if gold is None else _exact_match(gold, extract_answer(completion_text(c)))
        for c, gold in zip(completions, golds)
    ]


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch in "({[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")}]":
            depth = max(0, depth - 1)
    return deepest


def _for_math_verify(text: str) -> bool:
    """Whether math-verify may see ``text``: short and shallow enough to parse quickly."""
    return len(text) <= MATH_VERIFY_MAX_CHARS and _nesting_depth(text) <= MATH_VERIFY_MAX_NESTING


def _math_verify_matches(items: list, budget_s: float) -> list[float]:
    """Per ``(gold, prediction, tagged)``: math-verify's verdict, or exact match where it gives none."""
    sent = [i for i, (gold, prediction, _) in enumerate(items)
            if _for_math_verify(gold) and _for_math_verify(prediction)]
    verdicts = dict(zip(sent, MATH_VERIFIER.check_many([items[i] for i in sent], budget_s)))
    return [verdicts[i] if verdicts.get(i) is not None else _exact_match(gold, extract_answer(prediction))
            for i, (gold, prediction, _) in enumerate(items)]


def math_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list[float | None]:
    """Math-equivalence accuracy (math-verify) of the completion's answer against the gold answer.

    Args:
        answer: gold answers aligned with ``completions`` (LaTeX or plain); None for "not applicable".

    Returns:
        Per completion: 1.0 if math-verify finds the prediction equal to the gold answer, else 0.0; None where the
        gold answer is None.
    """
    golds = _gold_answers(answer, len(completions))
    items = []
    for c, gold in zip(completions, golds):
        if gold is not None:
            text = completion_text(c)
            tagged = extract_tagged_answer(text)
            prediction = (text if tagged is None else tagged)[-MATH_VERIFY_MAX_CHARS:]
            items.append((str(gold), prediction, tagged is not None))
    scores = iter(_math_verify_matches(items, MATH_VERIFY_CALL_BUDGET_S))
    return [None if gold is None else next(scores) for gold in golds]


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
