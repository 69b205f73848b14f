"""Verifiable accuracy rewards: is the completion's final answer the gold answer? (Exact match here; math-verify's
equivalence in :mod:`fedrl_kit.rewards.math_accuracy`, HumanEval's tests in :mod:`fedrl_kit.rewards.humaneval`.)
Details: docs/reliability.md, "Module notes".
"""

from fedrl_kit.rewards.parsing import completion_text, extract_answer, normalise_answer


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
