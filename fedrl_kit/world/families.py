"""FedMOA's three task families in the embedded world: MATH-like, GSM8K-like and MBPP-like."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import datasets

from fedrl_kit.world.tasks import DEFAULT_TOPICS, DIFFICULTIES, TOPICS, PoolExhausted, Problem, Topic
from fedrl_kit.world.world import draw, is_heldout

NAMES = ("tom", "ann", "bob", "eva", "sam", "liz")
ITEMS = ("pens", "cards", "eggs", "coins", "books")


# --- GSM8K-like: one- and two-step word problems -------------------------------------------------


def _count(rng: random.Random, d: int) -> int:
    """A count in a word problem: 1–9 at difficulty 1, 1–19 at 2 (the words are the hard part; two-digit
    sums in words kept the first GSM8K-like family at 2–8 % zero-shot, below the 15–60 % band)."""
    return rng.randrange(1, 10 if d == 1 else 20)


def _word_add(rng: random.Random, d: int) -> Problem:
    who, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = _count(rng, d), _count(rng, d)
    return f"{who} has {a} {item}, gets {b}. total?", str(a + b), f"{a}+{b}"


def _word_sub(rng: random.Random, d: int) -> Problem:
    who, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = _count(rng, d), _count(rng, d)
    a, b = max(a, b), min(a, b)
    return f"{who} has {a} {item}, gives {b}. left?", str(a - b), f"{a}-{b}"


def _word_mul(rng: random.Random, d: int) -> Problem:
    item = rng.choice(ITEMS)
    a, b = rng.randrange(2, 10), rng.randrange(1, 4 + 8 * (d - 1) + 6)
    return f"{a} bags of {b} {item}. total?", str(a * b), f"{a}*{b}"


def _word_div(rng: random.Random, d: int) -> Problem:
    item = rng.choice(ITEMS)
    b, q = rng.randrange(2, 10), rng.randrange(1, 4 + 8 * (d - 1) + 6)
    return f"{b * q} {item} for {b} kids. each?", str(q), f"{b * q}/{b}"


def _word_two_step(rng: random.Random, d: int) -> Problem:
    x, y = rng.sample(NAMES, 2)
    a, b = rng.randrange(1, 10 * d), rng.randrange(1, 10)  # small numbers: the two steps are the difficulty
    return f"{x} has {a}, {y} has {b} more. both?", str(2 * a + b), f"{a}+{a}+{b}"


def _word_more(rng: random.Random, d: int) -> Problem:
    x, y = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    a = _count(rng, d)
    b = rng.choice([v for v in range(1, 10 if d == 1 else 20) if v != a])
    return f"{x} has {a} {item}, {y} has {b}. most?", str(max(a, b)), f"max({a},{b})"


# --- MBPP-like: write a one-line Python function -------------------------------------------------


def _tests(fn, cases) -> str:
    return "\n".join(f"assert f({x})=={fn(x)}" for x in cases)


_CASES = (0, 1, 2, 7)


def _code_affine(rng: random.Random, d: int) -> Problem:
    a, b = rng.randrange(2, 10), rng.randrange(0, 10**d)
    return f"code: x times {a} plus {b}", _tests(lambda x: a * x + b, _CASES), f"x*{a}+{b}"


def _code_mod(rng: random.Random, d: int) -> Problem:
    a, b = rng.randrange(2, 10 if d == 1 else 30), rng.randrange(0, 10)
    return f"code: x mod {a} plus {b}", _tests(lambda x: x % a + b, (0, 1, 5, 13, 40)), f"x%{a}+{b}"


def _code_max(rng: random.Random, d: int) -> Problem:
    a, b = rng.randrange(0, 10**d), rng.randrange(2, 10)
    return (f"code: max of x and {a}, times {b}", _tests(lambda x: max(x, a) * b, (0, a, a + 3, 99)),
            f"max(x,{a})*{b}")


def _code_sub(rng: random.Random, d: int) -> Problem:
    a, b = rng.randrange(1, 10**d), rng.randrange(2, 10)
    return f"code: {a} minus {b} times x", _tests(lambda x: a - b * x, _CASES), f"{a}-{b}*x"


def _code_square(rng: random.Random, d: int) -> Problem:
    a = rng.randrange(0, 10 ** (d + 1))
    return f"code: x squared plus {a}", _tests(lambda x: x * x + a, _CASES), f"x*x+{a}"


def program_for(reasoning: str) -> str:
    """The reference program of a code row from its reasoning expression: ``f=lambda x:<expr>``."""
    return f"f=lambda x:{reasoning}"


FAMILY_TOPICS: dict[str, Topic] = {
    t.name: t
    for t in (
        Topic("w_add", _word_add, "a person has a things and gets b more"),
        Topic("w_sub", _word_sub, "a person has a things and gives b away"),
        Topic("w_mul", _word_mul, "a bags of b things"),
        Topic("w_div", _word_div, "a things shared by b kids"),
        Topic("w_two", _word_two_step, "two steps: a, and b more than a, together"),
        Topic("w_more", _word_more, "who has more: the larger of a and b"),
        Topic("c_affine", _code_affine, "f(x) = a·x + b"),
        Topic("c_mod", _code_mod, "f(x) = (x mod a) + b"),
        Topic("c_max", _code_max, "f(x) = max(x, a) · b"),
        Topic("c_sub", _code_sub, "f(x) = a − b·x"),
        Topic("c_square", _code_square, "f(x) = x² + a"),
    )
}
"""the new topics (kept out of :data:`fedrl_kit.world.tasks.TOPICS` and ``DEFAULT_TOPICS``)"""

FAMILIES: dict[str, tuple[str, ...]] = {
    "math": DEFAULT_TOPICS,
    "gsm": ("w_add", "w_sub", "w_mul", "w_div", "w_two", "w_more"),
    "code": ("c_affine", "c_mod", "c_max", "c_sub", "c_square"),
}
"""family name → its topics"""

FAMILY_OF: dict[str, str] = {t: f for f, ts in FAMILIES.items() for t in ts}
"""topic name → family name"""

PAPER_NAMES = {"math": "MATH", "gsm": "GSM8K", "code": "MBPP"}
"""the dataset each family stands for (used in tables)"""


def all_topics() -> dict[str, Topic]:
    """Every topic the families use: the seven arithmetic topics and the new ones."""
    return {**TOPICS, **FAMILY_TOPICS}


def is_code(topic: str) -> bool:
    """Whether rows of ``topic`` are checked by running a program (the MBPP-like family)."""
    return FAMILY_OF.get(topic) == "code"


def completion_for(topic: str, answer: str, reasoning: str) -> str:
    """The gold completion body (what goes inside ``<answer>``) of a row: the program for code rows."""
    return program_for(reasoning) if is_code(topic) else answer


def _check_families(families) -> tuple[str, ...]:
    families = (families,) if isinstance(families, str) else tuple(families)
    bad = [f for f in families if f not in FAMILIES]
    if not families or bad or len(set(families)) != len(families):
        raise ValueError(f"families must be distinct names from {tuple(FAMILIES)}, got {families!r}")
    return families


def generate_family_problems(n: int, seed: int, families=tuple(FAMILIES), difficulties=DIFFICULTIES,
                             exclude=None, with_reasoning: bool = False) -> list[dict]:
    """``n`` distinct problems, round-robin over families and, within a family, over its topics.

    Args:
        n, seed: number of rows; seed of the one ``random.Random`` every draw comes from.
        families, difficulties: names from :data:`FAMILIES`; a subset of (1, 2, 3).
        exclude: prompts that must not be drawn.
        with_reasoning: also return the ``reasoning`` column (for the supervised warm start).

    Returns:
        Row dicts ``{prompt, answer, topic, difficulty, family[, reasoning]}``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    families = _check_families(families)
    if not difficulties or any(d not in (1, 2, 3) for d in difficulties):
        raise ValueError(f"difficulties must be a non-empty subset of (1, 2, 3); got {difficulties}")
    topics = all_topics()
    rng = random.Random(seed)
    seen = set(exclude or ())
    rows: list[dict] = []
    tries = 0
    counters = {f: 0 for f in families}
    while len(rows) < n:
        fam = families[len(rows) % len(families)]
        topic = FAMILIES[fam][counters[fam] % len(FAMILIES[fam])]
        d = rng.choice(tuple(difficulties))
        prompt, answer, reasoning = topics[topic].make(rng, d)
        tries += 1
        if tries > 200 * max(n, 1):
            raise PoolExhausted(f"cannot draw {n} distinct problems from families {families}")
        if prompt in seen:
            continue
        seen.add(prompt)
        counters[fam] += 1
        row = {"prompt": prompt, "answer": answer, "topic": topic, "difficulty": d, "family": fam}
        if with_reasoning:
            row["reasoning"] = reasoning
        rows.append(row)
    return rows


def draw_family(n: int, seed: int, heldout: bool, families=tuple(FAMILIES), difficulties=DIFFICULTIES,
                exclude=None) -> list[dict]:
    """``n`` distinct family problems from the held-out region or from the rest (``world.draw`` with families)."""
    return draw(n, seed, heldout, families, difficulties, exclude, generate=generate_family_problems)


@dataclass
class FamilyWorld:
    """The splits of a multi-family world; ``train[f]`` and ``test[f]`` per family, ``test`` all together."""

    families: tuple
    train: dict  # family → datasets.Dataset (that family's private pool)
    test_by_family: dict  # family → datasets.Dataset (held-out)
    test: datasets.Dataset  # every family's test rows, family by family (what the server evaluates)
    public: datasets.Dataset = field(default=None)  # empty: FedMOA uses no public data
    aux: datasets.Dataset = field(default=None)  # every family's validation rows (FedMOA's model selection)
    val_by_family: dict = field(default_factory=dict)  # family → datasets.Dataset (held-out, disjoint from test)
    accuracy_by_family: dict = field(default_factory=dict)  # family → the reward that scores its test rows


def _to_ds(rows: list[dict]) -> datasets.Dataset:
    if rows:
        return datasets.Dataset.from_list(rows)
    return datasets.Dataset.from_dict({"prompt": [], "answer": [], "topic": [], "difficulty": [], "family": []})


def make_family_world(seed: int = 0, n_train: int = 600, n_test: int = 20, families=tuple(FAMILIES),
                      difficulties=DIFFICULTIES, n_val: int = 0) -> FamilyWorld:
    """Build a world with a private pool, a held-out test split and a validation split *per family*.

    Args:
        seed, families, difficulties: world seed; names from :data:`FAMILIES`; difficulty levels.
        n_train, n_test: private and held-out test rows per family.
        n_val: validation rows per family, disjoint from the test rows (drawn last, so test and train do not
            depend on it).
    """
    families = _check_families(families)
    for name, v in dict(n_train=n_train, n_test=n_test, n_val=n_val).items():
        if v < 0:
            raise ValueError(f"{name} must be >= 0, got {v}")
    train, test, val = {}, {}, {}
    for i, fam in enumerate(families):
        test[fam] = _to_ds(draw_family(n_test, seed * 4 + 1 + 100 * i, True, (fam,), difficulties))
        train[fam] = _to_ds(draw_family(n_train, seed * 4 + 4 + 100 * i, False, (fam,), difficulties))
        val[fam] = _to_ds(draw_family(n_val, seed * 4 + 2 + 100 * i, True, (fam,), difficulties,
                                      exclude=set(test[fam]["prompt"])))
    all_test = datasets.concatenate_datasets([test[f] for f in families])
    all_val = datasets.concatenate_datasets([val[f] for f in families])
    return FamilyWorld(families, train, test, all_test, _to_ds([]), all_val, val,
                       {f: "code_accuracy" if f == "code" else "accuracy" for f in families})
