"""Multiple-choice accuracy (MedQA, MedMCQA): is the option the completion picks the gold letter?
Details: docs/reliability.md, "Module notes".
"""

from __future__ import annotations

import re

from fedrl_kit.rewards.parsing import completion_text, extract_tagged_answer

_OPTION_LINE = re.compile(r"^\(?([A-Z])[.)]\s+(.+?)\s*$", re.MULTILINE)
DEFAULT_LETTERS = "ABCD"
"""the letters of a prompt that lists no options in the ``A. text`` form"""


def prompt_options(prompt: str | None) -> dict[str, str]:
    """The options a prompt lists, ``{"A": "Heparin", ...}`` (empty when it lists none)."""
    return {m.group(1): m.group(2) for m in _OPTION_LINE.finditer(prompt or "")}


def extract_choice(text: str, options: dict[str, str] | None = None) -> str | None:
    """The option letter a completion picks (docs/reliability.md, "Module notes"), or None.

    Args:
        text, options: the completion; the prompt's options (:func:`prompt_options`; empty/None: letters A-D).

    Returns:
        An upper-case letter among the options' letters, or None.
    """
    letters = "".join(options) if options else DEFAULT_LETTERS
    alone = rf"(?<![A-Za-z])\(?([{letters}])\)?(?![A-Za-z])"  # a letter not inside a word
    tagged = extract_tagged_answer(text)
    if tagged is not None:
        found = re.search(alone, tagged.strip())
        if found:
            return found.group(1)
        by_text = {v.strip().lower(): k for k, v in (options or {}).items()}
        return by_text.get(tagged.strip().rstrip(".").lower())
    stated = re.findall(rf"answer\s*(?:is|:)?\s*(?:option\s*)?\(?([{letters}])\)?(?![A-Za-z])", text, re.IGNORECASE)
    if stated:
        return stated[-1].upper()
    opening = re.match(rf"\s*\(?([{letters}])(?:[.:)]|\s|$)", text)
    return opening.group(1) if opening else None


def mcq_accuracy_reward(prompts, completions, answer=None, **kwargs) -> list[float | None]:
    """1.0 when the completion picks the gold option letter ("C", case-insensitive), else 0.0.

    Args:
        prompts: aligned with ``completions``; their option lines say which letters exist (None: A-D).

    Returns:
        Per completion: 1.0, 0.0, or None where the gold answer is None.
    """
    n = len(completions)
    if answer is None:
        return [None] * n
    if isinstance(answer, str) or len(answer) != n:
        raise ValueError(f"answer must be a list with one gold letter per completion ({n}), got {answer!r:.80}")
    prompts = [None] * n if prompts is None else list(prompts)
    out: list[float | None] = []
    for prompt, completion, gold in zip(prompts, completions, answer):
        if gold is None:
            out.append(None)
            continue
        choice = extract_choice(completion_text(completion), prompt_options(prompt))
        out.append(float(choice is not None and choice == str(gold).strip().upper()))
    return out


__all__ = ["extract_choice", "mcq_accuracy_reward", "prompt_options"]
