"""Reading a completion: its text, the answer it gives, and that answer in canonical form."""

import re

from fedrl_kit.tags import ANSWER_CLOSE, ANSWER_OPEN

# The lookbehind stops "2-3" from reading as "-3"; a fraction is kept whole ("3/4").
# ASCII only: \d would also accept digits of other scripts, which no gold answer uses.
_NUMBER = re.compile(r"(?<!\d)-?\d+(?:\.\d+|/\d+)?", re.ASCII)
_NUMBER_CHARS = frozenset("0123456789.-/")
# The final answer sits at the end, so scanning the tail first keeps huge texts cheap.
_FALLBACK_WINDOW = 4096
_DECIMAL = re.compile(r"(-?)(\d*)(?:\.(\d*))?", re.ASCII)
_FRACTION = re.compile(r"(-?\d+)/(\d+)", re.ASCII)


def completion_text(completion) -> str:
    """The text of one completion in either of TRL's shapes.

    Args:
        completion: a string, or a list of chat messages (a message's ``content`` may be a list of
            ``{"type": "text", "text": ...}`` parts).

    Returns:
        The text, several messages joined with newlines; ``""`` for anything unrecognised (a reward scores it wrong).
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, (list, tuple)):
        return ""
    texts = []
    for message in completion:
        content = message.get("content") if isinstance(message, dict) else message
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, (list, tuple)):
            texts.extend(
                part["text"] for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return "\n".join(texts)


def extract_tagged_answer(text: str) -> str | None:
    """Returns the stripped content of the last complete ``<answer>…</answer>`` pair, or None.

    The pair is the last opening tag before the last closing tag, closed by the first closing tag after it.
    """
    close = text.rfind(ANSWER_CLOSE)
    if close < 0:
        return None
    start = text.rfind(ANSWER_OPEN, 0, close)
    if start < 0:
        return None
    start += len(ANSWER_OPEN)
    return text[start:text.find(ANSWER_CLOSE, start)].strip()


def _last_number(text: str) -> str | None:
    start = max(0, len(text) - _FALLBACK_WINDOW)
    # Step back to a character no number contains, so the window never cuts a number in half.
    while start > 0 and text[start - 1] in _NUMBER_CHARS:
        start -= 1
    last = None
    for match in _NUMBER.finditer(text, start):
        last = match
    if last is None and start > 0:
        for match in _NUMBER.finditer(text, 0, start):
            last = match
    return None if last is None else last.group()


def extract_answer(text: str) -> str | None:
    """The final answer a completion gives.

    Args:
        text: the completion text.

    Returns:
        The content of the last ``<answer>…</answer>`` pair (None if it is empty: a number from the reasoning must not
        count), else the last number-like token (integer, decimal, negative, ``a/b``), else None.
    """
    if not isinstance(text, str):
        return None
    tagged = extract_tagged_answer(text)
    if tagged is not None:
        return tagged or None
    return _last_number(text)


def _canonical_integer(digits: str, sign: str) -> str:
    digits = digits.lstrip("0") or "0"
    return digits if digits == "0" else sign + digits


def normalise_answer(answer) -> str:
    """Puts an answer in the canonical form that exact-match accuracy compares.

    Drops all whitespace, one trailing period and a leading ``+``; writes numbers canonically: ``"007"`` → ``"7"``,
    ``"3.0"`` → ``"3"``, ``".5"`` → ``"0.5"``.

    Args:
        answer: a string, or anything with a ``str`` (a gold answer may be an int).

    Returns:
        The canonical string.
    """
    s = "".join(str(answer).split()).removesuffix(".").removeprefix("+")
    decimal = _DECIMAL.fullmatch(s)
    if decimal and (decimal.group(2) or decimal.group(3)):
        sign, whole, frac = decimal.group(1), decimal.group(2), (decimal.group(3) or "").rstrip("0")
        if frac:
            return sign + (whole.lstrip("0") or "0") + "." + frac
        return _canonical_integer(whole, sign)
    fraction = _FRACTION.fullmatch(s)
    if fraction:
        numerator = fraction.group(1)
        sign = "-" if numerator.startswith("-") else ""
        denominator = _canonical_integer(fraction.group(2), "")
        return _canonical_integer(numerator.lstrip("-"), sign) + "/" + denominator
    return s
