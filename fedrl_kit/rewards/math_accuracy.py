"""Math-equivalence accuracy (math-verify, in a worker process) for the real math datasets.
Details: docs/reliability.md, "Module notes".
"""

from fedrl_kit.rewards.accuracy import _exact_match, _gold_answers
from fedrl_kit.rewards.math_worker import MathVerifier
from fedrl_kit.rewards.parsing import completion_text, extract_answer, extract_tagged_answer

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
