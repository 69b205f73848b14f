"""Rewards for the MBPP-like family and short completions (FedMOA Table 3, config column "MBPP").
Details: docs/reliability.md, "Module notes".
"""

import ast

from fedrl_kit.rewards.accuracy import accuracy_reward
from fedrl_kit.rewards.format import is_well_formatted
from fedrl_kit.rewards.parsing import completion_text, extract_tagged_answer
from fedrl_kit.rewards.shaping import length_reward
from fedrl_kit.rewards.sandbox import code_accuracy_reward

CODE_FUNCTION_NAME = "f"
"""the name every MBPP-like task asks the program to define"""
MAX_PROGRAM_CHARS = 4000
"""longer programs are not parsed (a real one-liner is far shorter; keeps the parser's cost bounded)"""
SHORT_TARGET_LEN = 56
"""characters; docs/reliability.md, "Module notes" """
DEFAULT_CHAR_NGRAM = 3


def defines_function(program: str, name: str = CODE_FUNCTION_NAME) -> bool:
    """True iff ``program`` parses as Python and binds ``name`` at top level (``def`` or assignment)."""
    if not isinstance(program, str) or not program.strip() or len(program) > MAX_PROGRAM_CHARS:
        return False
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError, OverflowError):
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def code_format_reward(prompts, completions, **kwargs) -> list[float]:
    """0.5 for the think/answer format plus 0.5 for a program that parses and defines ``f``.

    Returns:
        One value in {0, 0.5, 1} per completion; the program is the last answer pair's content, else the completion.
    """
    rewards = []
    for c in completions:
        text = completion_text(c)
        tagged = extract_tagged_answer(text)
        program = text if tagged is None else tagged
        rewards.append(0.5 * float(is_well_formatted(text)) + 0.5 * float(defines_function(program.strip())))
    return rewards


def char_repetition_penalty_reward(prompts, completions, ngram_size: int = DEFAULT_CHAR_NGRAM,
                                   **kwargs) -> list[float]:
    """Minus the fraction of character n-grams that are repeats: −(1 − U / N); 0 below n characters.

    Args:
        ngram_size: n, characters per n-gram (an integer >= 1).

    Returns:
        One value in (−1, 0] per completion.
    """
    if isinstance(ngram_size, bool) or not isinstance(ngram_size, int) or ngram_size < 1:
        raise ValueError(f"ngram_size must be an integer >= 1, got {ngram_size!r}")
    rewards = []
    for c in completions:
        text = completion_text(c)
        total = len(text) - ngram_size + 1
        if total < 1:
            rewards.append(0.0)
            continue
        distinct = len({text[i:i + ngram_size] for i in range(total)})
        rewards.append(distinct / total - 1.0)
    return rewards


def short_length_reward(prompts, completions, **kwargs) -> list[float]:
    """``length_reward`` with ``target_len`` = 56 characters (1 up to 56, then down to 0 at 224)."""
    return length_reward(prompts, completions, target_len=SHORT_TARGET_LEN)


def family_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list:
    """Accuracy on rows of any family: code rows (assert tests as gold) run in the sandbox, others exact match."""
    n = len(completions)
    if answer is None:
        return [None] * n
    is_tests = [isinstance(a, str) and a.lstrip().startswith("assert ") for a in answer]
    return _by_kind(prompts, completions, answer, is_tests, ((True, code_accuracy_reward), (False, accuracy_reward)))


def real_family_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list:
    """Accuracy on rows of FedMOA's real families: HumanEval rows (tests end in ``check(...)``) by running them
    with the prompt's imports, MBPP rows (assert tests) in the sandbox, MATH/GSM8K rows by math-verify."""
    from fedrl_kit.rewards.humaneval import humaneval_accuracy_reward  # the real datasets' rewards: on first use
    from fedrl_kit.rewards.math_accuracy import math_accuracy_reward

    n = len(completions)
    if answer is None:
        return [None] * n

    def kind(a) -> str:
        if not isinstance(a, str):
            return "math"
        if "check(" in a and "def check" in a:
            return "humaneval"
        return "mbpp" if a.lstrip().startswith("assert ") else "math"

    return _by_kind(prompts, completions, answer, [kind(a) for a in answer],
                    (("humaneval", humaneval_accuracy_reward), ("mbpp", code_accuracy_reward),
                     ("math", math_accuracy_reward)))


def _by_kind(prompts, completions, answer, kinds: list, rewards) -> list:
    """Score each row with the reward of its kind: ``rewards`` pairs (kind, reward function); one call per kind."""
    out: list = [None] * len(completions)
    for k, func in rewards:
        idx = [i for i, ki in enumerate(kinds) if ki == k]
        if idx:
            vals = func([prompts[i] for i in idx] if prompts else None, [completions[i] for i in idx],
                        answer=[answer[i] for i in idx])
            for i, v in zip(idx, vals):
                out[i] = v
    return out


__all__ = ["code_accuracy_reward", "code_format_reward", "char_repetition_penalty_reward", "defines_function",
           "family_accuracy_reward", "real_family_accuracy_reward", "short_length_reward"]
