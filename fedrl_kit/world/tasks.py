"""Procedurally generated verifiable tasks: the embedded world's stand-in for MATH's subjects."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

import datasets

from fedrl_kit.tags import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

Problem = tuple[str, str, str]  # (prompt, answer, reasoning shown inside <think>)


def _n(rng: random.Random, difficulty: int) -> int:
    """A non-negative integer with up to ``difficulty`` digits (difficulty 1 → 0..9)."""
    return rng.randrange(0, 10**difficulty)


def _add(rng: random.Random, d: int) -> Problem:
    a, b = _n(rng, d), _n(rng, d)
    return f"{a}+{b}=", str(a + b), f"{a}+{b}"


def _sub(rng: random.Random, d: int) -> Problem:
    a, b = _n(rng, d), _n(rng, d)
    a, b = max(a, b), min(a, b)  # non-negative results keep the answer format simple
    return f"{a}-{b}=", str(a - b), f"{a}-{b}"


def _mul(rng: random.Random, d: int) -> Problem:
    a, b = rng.randrange(2, 10), _n(rng, d)
    return f"{a}*{b}=", str(a * b), f"{a}*{b}"


def _mod(rng: random.Random, d: int) -> Problem:
    a, b = _n(rng, d + 1), rng.randrange(2, 10)
    return f"{a}%{b}=", str(a % b), f"{a}={a // b}*{b}+{a % b}"


def _max(rng: random.Random, d: int) -> Problem:
    a, b = _n(rng, d), _n(rng, d)
    return f"max({a},{b})=", str(max(a, b)), f"{a},{b}"


def _count(rng: random.Random, d: int) -> Problem:
    letters = "abc"
    s = "".join(rng.choice(letters) for _ in range(3 + 2 * d))
    c = rng.choice(letters)
    return f"count {c} in {s}=", str(s.count(c)), "".join(ch for ch in s if ch == c)


def _seq(rng: random.Random, d: int) -> Problem:
    start, step = _n(rng, d), rng.randrange(1, 4 + 3 * d)
    terms = [start + i * step for i in range(3)]
    return f"next {','.join(map(str, terms))},?", str(start + 3 * step), f"+{step}"


@dataclass(frozen=True)
class Topic:
    """One task family: a generator and the role it plays in the world."""

    name: str
    make: Callable[[random.Random, int], Problem]
    description: str


TOPICS: dict[str, Topic] = {
    t.name: t
    for t in (
        Topic("add", _add, "a+b with up to d-digit operands (learnable)"),
        Topic("sub", _sub, "a-b ≥ 0 with up to d-digit operands"),
        Topic("mul", _mul, "one digit times an up to d-digit number"),
        Topic("mod", _mod, "a mod b for b in 2..9 (a has up to d+1 digits)"),
        Topic("max", _max, "the larger of two numbers (learnable)"),
        Topic("count", _count, "how often a letter occurs in a string (stays hard)"),
        Topic("seq", _seq, "next term of an arithmetic progression (stays hard)"),
    )
}
DEFAULT_TOPICS: tuple[str, ...] = tuple(TOPICS)
DIFFICULTIES: tuple[int, ...] = (1, 2)


def format_completion(answer: str, reasoning: str) -> str:
    """The completion in the expected format: ``<think>reasoning</think><answer>answer</answer>``."""
    return f"{THINK_OPEN}{reasoning}{THINK_CLOSE}{ANSWER_OPEN}{answer}{ANSWER_CLOSE}"


class PoolExhausted(ValueError):
    """Fewer new distinct problems are left in the topics and difficulties asked for than were asked."""


def _check_topics(topics) -> tuple[str, ...]:
    topics = tuple(topics)
    unknown = [t for t in topics if t not in TOPICS]
    if not topics or unknown:
        raise ValueError(f"topics must be a non-empty subset of {sorted(TOPICS)}; got unknown {unknown}")
    return topics


def generate_problems(
    n: int,
    seed: int,
    topics=DEFAULT_TOPICS,
    difficulties=DIFFICULTIES,
    exclude: set[str] | None = None,
    with_reasoning: bool = False,
) -> list[dict]:
    """Draw ``n`` distinct problems, round-robin over ``topics`` so every topic is equally common.

    Args:
        n, seed: number of rows; seed of the one ``random.Random`` all draws come from.
        topics, difficulties: names from :data:`TOPICS`; levels drawn uniformly (1 = one-digit operands).
        exclude: prompts that must not be drawn (keeps splits disjoint).
        with_reasoning: also return the ``reasoning`` column (for the supervised warm start).

    Returns:
        A list of row dicts ``{prompt, answer, topic, difficulty[, reasoning]}``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    topics = _check_topics(topics)
    if not difficulties or any(d not in (1, 2, 3) for d in difficulties):
        raise ValueError(f"difficulties must be a non-empty subset of (1, 2, 3); got {difficulties}")
    rng = random.Random(seed)
    seen = set(exclude or ())
    rows: list[dict] = []
    tries = 0
    while len(rows) < n:
        topic = topics[len(rows) % len(topics)]
        d = rng.choice(tuple(difficulties))
        prompt, answer, reasoning = TOPICS[topic].make(rng, d)
        tries += 1
        if tries > 200 * max(n, 1):
            raise PoolExhausted(f"cannot draw {n} distinct problems from topics {topics} at difficulties "
                                f"{difficulties}")
        if prompt in seen:
            continue
        seen.add(prompt)
        row = {"prompt": prompt, "answer": answer, "topic": topic, "difficulty": d}
        if with_reasoning:
            row["reasoning"] = reasoning
        rows.append(row)
    return rows


def make_tasks(n: int, seed: int = 0, topics=DEFAULT_TOPICS, difficulties=DIFFICULTIES, exclude=None) -> datasets.Dataset:
    """``n`` problems as a ``datasets.Dataset`` with columns prompt, answer, topic, difficulty."""
    rows = generate_problems(n, seed, topics, difficulties, exclude)
    return datasets.Dataset.from_list(rows) if rows else datasets.Dataset.from_dict(
        {"prompt": [], "answer": [], "topic": [], "difficulty": []}
    )
