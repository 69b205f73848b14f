"""World names: what a config's ``world`` may be, and the reward that scores each world's answers."""

from __future__ import annotations

from pathlib import Path

REAL_WORLDS = ("math", "gsm8k", "deepmath", "openr1-math", "mbpp", "humaneval", "medqa", "medmcqa")
"""real datasets by name (keys of ``fedrl_kit.world.real.REAL_DATASETS``)"""
WORLDS = ("arith", "families", "real-families", *REAL_WORLDS)
"""world names :func:`build_world` knows (``families`` and ``real-families`` also as ``<name>:<some families>``)"""

REAL_FAMILY_SOURCES = {"math": ("math", "math"), "gsm": ("gsm8k", "gsm8k"), "code": ("mbpp", "humaneval")}
"""FedMOA's families on the real datasets (§4.1): family → (the real world its clients train on, the one its
test split comes from). MBPP trains the code clients; HumanEval (164 problems) tests them, as in the paper."""

ACCURACY_REWARDS = {
    "arith": "accuracy", "families": "family_accuracy", "real-families": "real_family_accuracy",
    "math": "math_accuracy", "gsm8k": "math_accuracy", "deepmath": "math_accuracy", "openr1-math": "math_accuracy",
    "mbpp": "code_accuracy", "humaneval": "humaneval_accuracy", "medqa": "mcq_accuracy", "medmcqa": "mcq_accuracy",
}
"""world -> the reward (a key of ``fedrl_kit.rewards.REWARDS``) that scores a completion against ``answer``:
math-verify equivalence for math, the sandboxed tests for code (HumanEval's with the prompt's imports and
helpers, see ``humaneval_accuracy_reward``), the option letter for multiple choice"""

REPO_ROOT = Path(__file__).resolve().parents[2]


def default_rewards(world: str) -> tuple[str, ...]:
    """The reward components a run on ``world`` trains with by default (names in ``REWARDS``; accuracy first)."""
    name = family_kind(world) or ("arith" if arith_selection(world) else world)
    accuracy = ACCURACY_REWARDS[name]
    return (accuracy,) if name in ("arith", "families") else (accuracy, "format")


def arith_selection(world: str) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """The topics and difficulties of an embedded arithmetic world's name; None for any other world."""
    from fedrl_kit.world.tasks import DEFAULT_TOPICS, DIFFICULTIES, TOPICS

    if not isinstance(world, str) or not (world == "arith" or world.startswith(("arith:", "arith@"))):
        return None
    rest = world[len("arith"):]
    body, _, levels = rest.partition("@")
    topics = tuple(dict.fromkeys(t.strip() for t in body.lstrip(":").split(",") if t.strip())) or DEFAULT_TOPICS
    try:
        diffs = tuple(dict.fromkeys(int(d) for d in levels.split(",") if d.strip())) if levels else DIFFICULTIES
    except ValueError:
        diffs = ()
    bad_topics = [t for t in topics if t not in TOPICS]
    if (body.startswith(":") and not body[1:].strip()) or bad_topics or not diffs or \
            any(d not in (1, 2, 3) for d in diffs) or ("@" in rest and not levels.strip()):
        raise ValueError(f"world must be 'arith', 'arith:' + a comma-separated subset of {tuple(TOPICS)}, and "
                         f"optionally '@' + difficulties from 1, 2, 3 (e.g. 'arith:add,max@1'), got {world!r}")
    return topics, diffs


def family_kind(world: str) -> str | None:
    """``"families"`` or ``"real-families"`` for a multi-family world name (with or without ``:…``), else None."""
    for kind in ("real-families", "families"):
        if world == kind or world.startswith(kind + ":"):
            return kind
    return None


def family_names(world: str) -> tuple[str, ...]:
    """The families of a ``"families"`` / ``"families:math,code"`` world name (all three when none are named);
    the same for ``"real-families[:…]"``."""
    from fedrl_kit.world.families import FAMILIES

    kind = family_kind(world) or "families"
    if world == kind:
        return tuple(FAMILIES)
    names = tuple(dict.fromkeys(f.strip() for f in world.split(":", 1)[-1].split(",") if f.strip()))
    unknown = [f for f in names if f not in FAMILIES]
    if ":" not in world or not names or unknown:
        raise ValueError(f"world must be '{kind}' or '{kind}:' + a comma-separated subset of {tuple(FAMILIES)}, "
                         f"got {world!r}")
    return names


def check_world(world: str, dataset: str = "") -> None:
    """Raise ValueError naming ``world`` (or ``dataset``) when the name is not one :func:`build_world` makes."""
    if isinstance(world, str) and arith_selection(world) is not None:  # a bad selection raises, naming it
        pass
    elif not isinstance(world, str) or not (world in WORLDS or family_kind(world) is not None):
        raise ValueError(f"world must be one of {WORLDS} (or 'families:' / 'real-families:' + some families, "
                         f"'arith:' + some topics[@difficulties]), got {world!r}")
    if family_kind(world):
        family_names(world)
    if not isinstance(dataset, str):
        raise ValueError(f"dataset must be a local folder or file (or empty for the cache), got {dataset!r}")
    if dataset and world not in REAL_WORLDS and family_kind(world) != "real-families":
        raise ValueError(f"dataset must be empty for world={world!r} (the embedded worlds generate their problems); "
                         f"got {dataset!r}")


def dataset_path(dataset: str) -> Path | None:
    """A config's ``dataset`` as a local path: as given (relative to the cwd), else relative to the repo root."""
    if not dataset:
        return None
    path = Path(dataset).expanduser()
    if not path.exists() and not path.is_absolute() and (REPO_ROOT / path).exists():
        return REPO_ROOT / path
    return path
