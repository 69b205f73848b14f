"""Real-dataset and real-model loaders, on tiny local fixtures in the real field names, offline."""

from __future__ import annotations

import json

import datasets
import huggingface_hub
import pytest
import torch
import transformers
from huggingface_hub import constants as hub_constants
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from fedrl_kit.policy.hub import ModelNotAvailableError, describe_model, load_pretrained
from fedrl_kit.world.real import (
    REAL_DATASETS,
    ROW_FEATURES,
    DatasetNotAvailableError,
    _medqa_options,
    last_boxed_answer,
    load_real_dataset,
)


@pytest.fixture(autouse=True)
def _private_datasets_cache(tmp_path_factory, monkeypatch):
    """Keep `datasets`' Arrow cache (and any cached hub copy) out of the user's home."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf_datasets_cache"))


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def rows_of(ds):
    return [dict(r) for r in ds]


# ----------------------------------------------------------------------------- datasets


def test_registry_covers_the_papers_datasets():
    assert set(REAL_DATASETS) == {"math", "gsm8k", "deepmath", "openr1-math", "mbpp", "humaneval", "medqa", "medmcqa"}
    assert REAL_DATASETS["gsm8k"].hub_id == "openai/gsm8k"
    assert REAL_DATASETS["humaneval"].splits == ("test",)


def test_last_boxed_answer_matches_nested_braces():
    assert last_boxed_answer(r"so $\boxed{\frac{1}{2}}$.") == r"\frac{1}{2}"
    assert last_boxed_answer(r"\boxed{1} then \boxed{ \{1, 2\} }") == r"\{1, 2\}"
    assert last_boxed_answer(r"$x = \boxed 5$") == "5"
    assert last_boxed_answer(r"\fbox{a^{2}}") == "a^{2}"
    assert last_boxed_answer(r"\boxed{\frac{1}{2}") is None  # never closes
    assert last_boxed_answer("no box here") is None


def test_math_jsonl_maps_level_type_and_boxed_answer(tmp_path):
    write_jsonl(
        tmp_path / "math" / "train.jsonl",
        [
            {"problem": "Half of 1?", "solution": r"It is $\boxed{\frac{1}{2}}$.", "level": "Level 3", "type": "Algebra"},
            {"problem": "Sets?", "solution": r"\boxed{1}, no: $\boxed{\{1,2\}}$", "level": "Level ?", "type": "Counting & Probability"},
            {"problem": "Proof.", "solution": "Obvious.", "level": "Level 5", "type": "Geometry"},
        ],
    )
    with pytest.warns(UserWarning, match="dropped 1 rows"):
        ds = load_real_dataset("math", path=tmp_path / "math")
    assert ds.features == ROW_FEATURES
    assert rows_of(ds) == [
        {"prompt": "Half of 1?", "answer": r"\frac{1}{2}", "topic": "Algebra", "difficulty": 3},
        {"prompt": "Sets?", "answer": r"\{1,2\}", "topic": "Counting & Probability", "difficulty": 0},
    ]
    assert rows_of(load_real_dataset("math", path=tmp_path / "math", limit=1)) == rows_of(ds)[:1]


def test_gsm8k_hf_download_layout_parquet(tmp_path):
    """The folder `hf download --repo-type dataset openai/gsm8k` writes: a card plus <config>/<split>-*.parquet."""
    root = tmp_path / "gsm8k"
    (root / "main").mkdir(parents=True)
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: main\n  data_files:\n  - split: train\n    path: main/train-*\n"
        "  - split: test\n    path: main/test-*\n---\n# GSM8K\n"
    )
    train = [
        {"question": "Tom buys 2 packs of 617.", "answer": "Packs: 2\nTotal: 617*2=<<617*2=1234>>1234\n#### 1,234"},
        {"question": "Owes 5?", "answer": "He owes 5.\n#### -5"},
    ]
    datasets.Dataset.from_list(train).to_parquet(str(root / "main" / "train-00000-of-00001.parquet"))
    datasets.Dataset.from_list([{"question": "Q?", "answer": "#### 7"}]).to_parquet(
        str(root / "main" / "test-00000-of-00001.parquet")
    )
    assert rows_of(load_real_dataset("gsm8k", path=root)) == [
        {"prompt": "Tom buys 2 packs of 617.", "answer": "1234", "topic": "gsm8k", "difficulty": 2},
        {"prompt": "Owes 5?", "answer": "-5", "topic": "gsm8k", "difficulty": 1},
    ]
    assert rows_of(load_real_dataset("gsm8k", split="test", path=root)) == [
        {"prompt": "Q?", "answer": "7", "topic": "gsm8k", "difficulty": 0}
    ]


def test_deepmath_save_to_disk_rounds_difficulty(tmp_path):
    source = datasets.Dataset.from_list(
        [
            {"question": "Int x dx?", "final_answer": "\\frac{x^2}{2}", "difficulty": 5.5,
             "topic": "Mathematics -> Calculus -> Integral Calculus", "r1_solution_1": "long trace"},
            {"question": "2+2?", "final_answer": "4", "difficulty": 4.0,
             "topic": "Mathematics -> Algebra -> Prealgebra", "r1_solution_1": "long trace"},
        ]
    )
    source.save_to_disk(str(tmp_path / "deepmath"))
    assert rows_of(load_real_dataset("deepmath", path=tmp_path / "deepmath")) == [
        {"prompt": "Int x dx?", "answer": "\\frac{x^2}{2}", "topic": "Mathematics -> Calculus -> Integral Calculus", "difficulty": 6},
        {"prompt": "2+2?", "answer": "4", "topic": "Mathematics -> Algebra -> Prealgebra", "difficulty": 4},
    ]


def test_openr1_topic_falls_back_to_source_and_drops_proofs(tmp_path):
    write_jsonl(
        tmp_path / "openr1" / "default" / "train-00000-of-00001.jsonl",
        [
            {"problem": "Solve x+1=3.", "solution": "...", "answer": "2", "problem_type": "Algebra", "source": "olympiads"},
            {"problem": "Count.", "solution": "...", "answer": "10", "problem_type": None, "source": "amc_aime"},
            {"problem": "Prove it.", "solution": "...", "answer": "proof", "problem_type": "Inequalities", "source": "olympiads"},
        ],
    )
    with pytest.warns(UserWarning, match="dropped 1 rows"):
        ds = load_real_dataset("openr1-math", path=tmp_path / "openr1")
    assert rows_of(ds) == [
        {"prompt": "Solve x+1=3.", "answer": "2", "topic": "Algebra", "difficulty": 0},
        {"prompt": "Count.", "answer": "10", "topic": "amc_aime", "difficulty": 0},
    ]


def test_mbpp_single_file_tests_become_the_answer(tmp_path):
    path = write_jsonl(
        tmp_path / "mbpp.jsonl",
        [
            {"task_id": 2, "text": "Write a function to add two numbers.", "code": "def add(a, b):\n    return a + b",
             "test_list": ["assert add(1, 2) == 3", "assert add(0, 0) == 0"], "test_setup_code": ""},
            {"task_id": 3, "text": "Write a function for the square root.", "code": "...",
             "test_list": ["assert root(4) == 2"], "test_setup_code": "import math"},
        ],
    )
    assert rows_of(load_real_dataset("mbpp", path=path)) == [
        {
            "prompt": "Write a function to add two numbers.\nYour code should pass these tests:\n"
            "assert add(1, 2) == 3\nassert add(0, 0) == 0",
            "answer": "assert add(1, 2) == 3\nassert add(0, 0) == 0",
            "topic": "mbpp",
            "difficulty": 0,
        },
        {
            "prompt": "Write a function for the square root.\nYour code should pass these tests:\nassert root(4) == 2",
            "answer": "import math\nassert root(4) == 2",
            "topic": "mbpp",
            "difficulty": 0,
        },
    ]


def test_humaneval_answer_calls_check_on_entry_point(tmp_path):
    write_jsonl(
        tmp_path / "humaneval" / "test.jsonl",
        [{"task_id": "HumanEval/0", "prompt": "def inc(x):\n    \"\"\"Add one.\"\"\"\n",
          "canonical_solution": "    return x + 1\n", "test": "def check(candidate):\n    assert candidate(1) == 2\n",
          "entry_point": "inc"}],
    )
    assert rows_of(load_real_dataset("humaneval", split="test", path=tmp_path / "humaneval")) == [
        {
            "prompt": "def inc(x):\n    \"\"\"Add one.\"\"\"\n",
            "answer": "def check(candidate):\n    assert candidate(1) == 2\n\ncheck(inc)\n",
            "topic": "humaneval",
            "difficulty": 0,
        }
    ]


def test_medqa_prompt_lists_lettered_options_and_split_files(tmp_path):
    root = tmp_path / "medqa"
    row = {"question": "Which drug?", "answer": "Aspirin", "answer_idx": "C", "meta_info": "step1",
           "options": {"A": "Heparin", "B": "Warfarin", "C": "Aspirin", "D": "Insulin"}}
    write_jsonl(root / "phrases_no_exclude_train.jsonl", [row])
    write_jsonl(root / "phrases_no_exclude_test.jsonl", [{**row, "answer_idx": "b"}])
    assert rows_of(load_real_dataset("medqa", path=root)) == [
        {"prompt": "Which drug?\nA. Heparin\nB. Warfarin\nC. Aspirin\nD. Insulin", "answer": "C",
         "topic": "medqa", "difficulty": 0}
    ]
    assert load_real_dataset("medqa", split="test", path=root)["answer"] == ["B"]
    with pytest.raises(ValueError, match=r"split.*\['test', 'train'\].*'validation'"):
        load_real_dataset("medqa", split="validation", path=root)
    assert _medqa_options([{"key": "A", "value": "x"}, {"key": "B", "value": "y"}]) == [("A", "x"), ("B", "y")]
    assert _medqa_options(["x", "y"]) == [("A", "x"), ("B", "y")]


def test_bad_arguments_and_missing_fields(tmp_path):
    with pytest.raises(ValueError, match="known:.*gsm8k"):
        load_real_dataset("svamp")
    with pytest.raises(ValueError, match="limit"):
        load_real_dataset("gsm8k", path=tmp_path, limit=0)
    path = write_jsonl(tmp_path / "bad.jsonl", [{"question": "Q?", "solution": "#### 1"}])
    with pytest.raises(ValueError, match="'gsm8k' rows need field 'answer'"):
        load_real_dataset("gsm8k", path=path)
    with pytest.raises(DatasetNotAvailableError, match="does not exist"):
        load_real_dataset("gsm8k", path=tmp_path / "nowhere")


def test_offline_without_path_says_what_is_missing_and_how_to_fix(monkeypatch):
    if huggingface_hub.try_to_load_from_cache("openai/gsm8k", "README.md", repo_type="dataset"):
        pytest.skip("openai/gsm8k is in this machine's hub cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    was_offline = hub_constants.HF_HUB_OFFLINE
    with pytest.raises(DatasetNotAvailableError) as info:
        load_real_dataset("gsm8k")
    message = str(info.value)
    assert "openai/gsm8k" in message and "not in the local" in message
    assert "hf download --repo-type dataset openai/gsm8k --local-dir data/real/gsm8k" in message
    assert "path='data/real/gsm8k'" in message
    assert hub_constants.HF_HUB_OFFLINE == was_offline  # the offline scope restores the libraries' flags


# ----------------------------------------------------------------------------- models

WORDS = ["<unk>", "<eos>", "the", "cat", "sat", "on", "mat", "a", "dog", "ran"]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A 2-layer Qwen2 and a word-level tokenizer, saved like any Hugging Face checkpoint."""
    backend = Tokenizer(WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")
    config = transformers.Qwen2Config(
        vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, eos_token_id=1,
    )
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny_qwen2")
    transformers.Qwen2ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_load_pretrained_local_folder_generates_left_padded(tiny_model_dir):
    model, tokenizer = load_pretrained(tiny_model_dir, dtype=torch.float32, device="cpu")
    assert tokenizer.pad_token == "<eos>" and tokenizer.padding_side == "left"
    batch = tokenizer(["the cat", "the cat sat on"], return_tensors="pt", padding=True)
    assert batch["input_ids"][0].tolist() == [1, 1, 2, 3]  # pads on the left
    out = model.generate(**batch, max_new_tokens=4, do_sample=False)  # [2, 4 + 4]
    assert out.shape == (2, 8) and torch.equal(out[:, :4], batch["input_ids"])
    alone = model.generate(**tokenizer(["the cat"], return_tensors="pt"), max_new_tokens=4, do_sample=False)
    assert out[0, 4:].tolist() == alone[0, 2:].tolist()  # left padding does not change the continuation
    info = describe_model(model)
    assert info == {
        "n_params": sum(p.numel() for p in model.parameters()),
        "n_trainable": info["n_params"],
        "dtype": "float32",
        "architecture": "Qwen2ForCausalLM",
    }
    assert info["n_params"] > 10_000
    model.requires_grad_(False)
    assert describe_model(model)["n_trainable"] == 0
    assert describe_model(load_pretrained(str(tiny_model_dir), dtype="bfloat16")[0])["dtype"] == "bfloat16"


def test_load_pretrained_bad_paths(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        load_pretrained(tmp_path / "no_model_here")
    with pytest.raises(ModelNotAvailableError, match="no config.json"):
        load_pretrained(tmp_path)


def test_load_pretrained_offline_names_the_model_and_the_fix(monkeypatch):
    name = "Qwen/Qwen2.5-0.5B-Instruct"
    if huggingface_hub.try_to_load_from_cache(name, "config.json"):
        pytest.skip(f"{name} is in this machine's hub cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError) as info:
        load_pretrained(name)
    message = str(info.value)
    assert f"Model {name!r}" in message and "not in the local Hugging Face cache" in message
    assert f"hf download {name} --local-dir models/Qwen2.5-0.5B-Instruct" in message
    assert "local path" in message
