"""Pins every reward on hand-made cases, and checks that none raises or stalls on bad input."""

import dataclasses
import inspect
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import math_verify
import numpy as np
import pytest

from fedrl_kit.rewards import (
    REWARDS,
    RewardSet,
    accuracy_reward,
    completion_text,
    extract_answer,
    format_reward,
    length_reward,
    make_length_reward,
    make_repetition_penalty_reward,
    make_reward_set,
    math_accuracy_reward,
    normalise_answer,
    repetition_penalty_reward,
    tag_count_reward,
)
from fedrl_kit.rewards import math_accuracy as accuracy_module
from fedrl_kit.rewards import math_worker

from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.serial  # real-time timeouts: `make test` runs these alone, after the others

GOOD = "<think>2 + 2 = 4</think><answer>4</answer>"

ALL_REWARDS = {
    **REWARDS,
    "length_10": make_length_reward(10),
    "repetition_2gram": make_repetition_penalty_reward(2),
}
RANGES = {
    "accuracy": (0.0, 1.0),
    "math_accuracy": (0.0, 1.0),
    "format": (0.0, 1.0),
    "tag_count": (0.0, 1.0),
    "length": (0.0, 1.0),
    "length_10": (0.0, 1.0),
    "repetition": (-1.0, 0.0),
    "repetition_2gram": (-1.0, 0.0),
    "code_accuracy": (0.0, 1.0),
    "code_format": (0.0, 1.0),
    "length_short": (0.0, 1.0),
    "char_repetition": (-1.0, 0.0),
    "family_accuracy": (0.0, 1.0),
    "real_family_accuracy": (0.0, 1.0),
    "humaneval_accuracy": (0.0, 1.0),
    "mcq_accuracy": (0.0, 1.0),
}
MB = 1_000_000
ADVERSARIAL = [
    "",
    "<answer>",
    "</answer>",
    "<answer></answer>",
    "\x00",
    "\x00<answer>\x00</answer>",
    "😀 数学の答えは <answer>三</answer> ٣",
    "<think><think></think></think><answer><answer>1</answer></answer>",
    "a" * MB,
    "1" * MB,
    "1 " * (MB // 2),
    "<answer>" * (MB // 8),
    "</answer>" * (MB // 9),
    "<think></think>" * (MB // 15) + "<answer>1</answer>",
    "<answer>" + "{" * 40 + "1" + "}" * 40 + "</answer>",
    "<answer>" + "(" * 40 + "1" + ")" * 40 + "</answer>",
    "\\boxed{" * 1000,
]


def score(func, completions, **columns):
    return func([""] * len(completions), completions, **columns)


# --- parsing ----------------------------------------------------------------------------------


def test_completion_text_reads_both_trl_formats():
    assert completion_text("plain") == "plain"
    assert completion_text([{"role": "assistant", "content": "chat"}]) == "chat"
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "x"}]}]
    assert completion_text(parts) == "a"
    two = [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert completion_text(two) == "a\nb"
    assert completion_text(None) == ""
    assert completion_text(42) == ""
    assert completion_text([{"role": "assistant"}]) == ""


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<think>hm</think><answer> 42 </answer>", "42"),
        ("<answer>1</answer> then <answer>2</answer>", "2"),
        ("<answer><answer>3</answer></answer>", "3"),
        ("<answer>1<answer>2</answer>", "2"),
        ("<answer>5</answer><answer>6", "5"),  # a truncated last block does not count
        ("<answer>x = \\frac{1}{2}</answer>", "x = \\frac{1}{2}"),
        ("<think>so 12</think><answer></answer>", None),  # empty tags: no number fallback
        ("<think>so 12</think><answer>  </answer>", None),
        ("The answer is 42.", "42"),
        ("first 3 then -7", "-7"),
        ("it is 2.5 apples", "2.5"),
        ("roughly 3/4 of it", "3/4"),
        ("2-3", "3"),
        ("<answer> but no close 9", "9"),
        ("no numbers here", None),
        ("", None),
        ("\x00", None),
        ("数学 ٣", None),  # a non-ASCII digit is not an answer token
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_extract_answer_fallback_on_huge_text_is_exact_and_fast():
    start = time.perf_counter()
    assert extract_answer("7" + "x" * MB) == "7"  # the only number is far outside the tail
    assert extract_answer("x " + "1" * MB) == "1" * MB  # never cut a number in half
    # The tail window (4096 characters) starts inside the number; it must be read whole.
    assert extract_answer("123456.75" + "y" * 4092) == "123456.75"
    assert extract_answer("<answer>8</answer>" + "z" * MB) == "8"
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("007", "7"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("3.0", "3"),
        ("0.50", "0.5"),
        (".5", "0.5"),
        ("-2.50", "-2.5"),
        ("+5", "5"),
        (" 1 2 . ", "12"),
        ("42.", "42"),
        ("-04/08", "-4/8"),
        (7, "7"),
        ("abc", "abc"),
        ("", ""),
    ],
)
def test_normalise_answer(raw, expected):
    assert normalise_answer(raw) == expected


# --- accuracy ---------------------------------------------------------------------------------


def test_accuracy_reward_exact_match():
    completions = [
        "<think>…</think><answer>7</answer>",
        "<think>…</think><answer>8</answer>",
        "<answer>007</answer>",
        "no tags, so the last number counts: 7",
        "<answer></answer> 7",
        "<think>nothing</think>",
        [{"role": "assistant", "content": "<answer>7.0</answer>"}],
    ]
    golds = [7, 7, "7", "7", "7", "7", "7"]
    assert score(accuracy_reward, completions, answer=golds) == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]


def test_accuracy_reward_none_when_not_applicable():
    assert score(accuracy_reward, ["<answer>1</answer>", "1"], answer=[None, "1"]) == [None, 1.0]
    assert score(accuracy_reward, ["<answer>1</answer>", "1"]) == [None, None]
    assert score(accuracy_reward, ["1"], answer=["1"], topic=["algebra"]) == [1.0]


def test_accuracy_reward_rejects_misaligned_answer_column():
    with pytest.raises(ValueError, match="answer"):
        score(accuracy_reward, ["1", "2"], answer=["1"])
    with pytest.raises(ValueError, match="answer"):
        score(accuracy_reward, ["1", "2"], answer="12")


@pytest.mark.parametrize(
    "gold, completion, expected",
    [
        ("\\frac{1}{2}", "<answer>0.5</answer>", 1.0),
        ("\\frac{1}{2}", "<answer>1/2</answer>", 1.0),
        ("\\frac{1}{2}", "<answer>\\frac{1}{2}</answer>", 1.0),
        ("0.5", "<answer>$\\frac{1}{2}$</answer>", 1.0),
        ("1/2", "<answer>0.5</answer>", 1.0),
        ("\\frac{1}{2}", "<answer>0.6</answer>", 0.0),
        ("\\frac{1}{2}", "So the result is \\boxed{\\frac{1}{2}}.", 1.0),  # no tags: whole text
        ("x^2+1", "<answer>1 + x^2</answer>", 1.0),
        ("x^2+1", "<answer>x^2-1</answer>", 0.0),
        ("3\\sqrt{2}", "<answer>\\sqrt{18}</answer>", 1.0),
        ("3", "<answer>3\\sqrt{2}</answer>", 0.0),  # not read as "3" and some text
        ("2", "<answer>(1, 2)</answer>", 0.0),
        ("1,000", "<answer>1000</answer>", 1.0),
        ("1/2", "\\boxed{3} <answer>1/2</answer>", 1.0),  # the tags win over the text
        ("1/2", "<answer>3</answer> \\boxed{1/2}", 0.0),
        ("1/2", "<answer></answer>", 0.0),
        ("1/2", "", 0.0),
        ("1/2", [{"role": "assistant", "content": "<answer>0.5</answer>"}], 1.0),
    ],
)
def test_math_accuracy_reward_equivalences(gold, completion, expected):
    assert score(math_accuracy_reward, [completion], answer=[gold]) == [expected]


def test_math_accuracy_reward_none_when_not_applicable():
    assert score(math_accuracy_reward, ["<answer>1</answer>"] * 2, answer=[None, 1]) == [None, 1.0]
    assert score(math_accuracy_reward, ["<answer>1</answer>"]) == [None]


MATH_CASES = (
    ["<answer>0.5</answer>", "<answer>\\frac{2}{4}</answer>", "<answer>0.25</answer>", "x 3"],
    ["\\frac{1}{2}", "1/2", "\\frac{1}{2}", "3"],
    [1.0, 1.0, 0.0, 1.0],
)


def test_math_verify_itself_fails_off_the_main_thread_with_a_timeout():
    # The reason for our timeout handling: math-verify's signal.alarm needs the main thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        with pytest.raises(ValueError, match="thread"):
            pool.submit(math_verify.parse, "1/2", parsing_timeout=5).result()


def test_math_accuracy_reward_in_worker_threads():
    completions, golds, expected = MATH_CASES
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(math_accuracy_reward, [""] * 4, completions, answer=golds) for _ in range(4)
        ]
        assert [f.result() for f in futures] == [expected] * 4
    results = []
    worker = threading.Thread(
        target=lambda: results.append(score(math_accuracy_reward, completions, answer=golds))
    )
    worker.start()
    worker.join()
    assert results == [expected]
    assert score(math_accuracy_reward, completions, answer=golds) == expected  # main thread


def test_math_accuracy_reward_falls_back_to_exact_match(monkeypatch):
    monkeypatch.setattr(accuracy_module.MATH_VERIFIER, "check_many", lambda items, budget: [None] * len(items))
    completions = ["<answer>0.5</answer>", "<answer>1/2</answer>", "<answer>0.50</answer>"]
    assert score(math_accuracy_reward, completions, answer=["0.5"] * 3) == [1.0, 0.0, 1.0]


def _recording_checks(monkeypatch) -> list:
    seen = []
    real = accuracy_module.MATH_VERIFIER.check_many

    def recording(items, budget_s):
        seen.extend((gold, prediction) for gold, prediction, _ in items)
        return real(items, budget_s)

    monkeypatch.setattr(accuracy_module.MATH_VERIFIER, "check_many", recording)
    return seen


def test_math_accuracy_reward_keeps_deep_nesting_and_long_golds_away_from_math_verify(monkeypatch):
    seen = _recording_checks(monkeypatch)
    deep = "{" * 30 + "2" + "}" * 30
    ten = "{" * 10 + "2" + "}" * 10  # took 1.1-1.3 s in math-verify
    assert score(math_accuracy_reward, [f"<answer>{deep}</answer>"], answer=["2"]) == [1.0]
    assert score(math_accuracy_reward, [f"<answer>{ten}</answer>", "<answer>3</answer>"], answer=["3", ten]) == [
        0.0, 0.0]
    assert score(math_accuracy_reward, ["<answer>1</answer>"], answer=["1" * 10**6]) == [0.0]  # 1 MB gold
    assert seen == []
    assert score(math_accuracy_reward, ["<answer>\\frac{1}{2}</answer>"], answer=["0.5"]) == [1.0]
    assert seen == [("0.5", "\\frac{1}{2}")]


def test_math_accuracy_reward_is_bounded_off_the_main_thread():
    # Off the main thread math-verify has no timeout of its own: these ran for minutes.
    golds = ["{" * 40, "1" * 10**6, "(x)"]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=1) as pool:
        completions = ["<answer>{</answer>", "1", "<answer>x</answer>"]
        values = pool.submit(math_accuracy_reward, [""] * 3, completions, answer=golds).result()
    assert values == [0.0, 0.0, 1.0]
    assert time.monotonic() - start < 10.0


def test_math_verify_worker_is_killed_at_its_deadline_and_a_fresh_one_takes_the_rest(monkeypatch):
    monkeypatch.setattr(accuracy_module, "MATH_VERIFY_MAX_NESTING", 60)  # let a slow answer through
    monkeypatch.setattr(math_worker, "DEADLINE_S", 1.0)
    slow = "{" * 40 + "2" + "}" * 40  # math-verify runs for minutes on this
    assert score(math_accuracy_reward, ["<answer>1</answer>"], answer=["1"]) == [1.0]  # the worker is up
    first = accuracy_module.MATH_VERIFIER._proc
    start = time.monotonic()
    completions = ["<answer>\\frac{2}{4}</answer>", f"<answer>{slow}</answer>", "<answer>\\frac{3}{6}</answer>"]
    # math-verify, then exact match ("2": the last number), then math-verify again in a fresh worker
    assert score(math_accuracy_reward, completions, answer=["1/2", "2", "1/2"]) == [1.0, 1.0, 1.0]
    assert accuracy_module.MATH_VERIFIER._proc is not first
    assert time.monotonic() - start < 1.0 + math_worker.STARTUP_S


def test_math_verify_worker_answers_a_whole_call_without_restarting():
    assert score(math_accuracy_reward, ["<answer>1</answer>"], answer=["1"]) == [1.0]  # the worker is up
    worker = accuracy_module.MATH_VERIFIER._proc
    completions = [f"<answer>\\frac{{{k}}}{{{2 * k}}}</answer>" for k in range(1, 25)]  # only math-verify says 1.0
    assert score(math_accuracy_reward, completions, answer=["1/2"] * 24) == [1.0] * 24
    assert accuracy_module.MATH_VERIFIER._proc is worker


def test_math_accuracy_reward_call_budget(monkeypatch):
    def no_group(*args):
        raise AssertionError("math-verify consulted past the call's budget")

    monkeypatch.setattr(accuracy_module.MATH_VERIFIER, "_answer_group", no_group)
    monkeypatch.setattr(accuracy_module, "MATH_VERIFY_CALL_BUDGET_S", 0.0)
    assert score(math_accuracy_reward, ["<answer>0.5</answer>", "<answer>2/4</answer>"], answer=["0.5"] * 2) == [
        1.0, 0.0]


def test_every_reward_scores_a_none_completion():
    for name, func in ALL_REWARDS.items():
        values = score(func, [None], answer=["1"])
        assert_in_range(name, values, 1)
        assert values[0] in (None, 0.0, -0.0, 1.0), (name, values)


# --- format -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "completion, expected",
    [
        (GOOD, 1.0),
        ("\n<think>\nwork\n</think>\n\n<answer>\n4\n</answer>\n", 1.0),
        ("<think></think><answer>4</answer>", 1.0),
        ([{"role": "assistant", "content": GOOD}], 1.0),
        ("<answer>4</answer>", 0.0),
        ("<think>work</think>", 0.0),
        ("<think>work</think><answer> </answer>", 0.0),
        ("<think>work</think>so<answer>4</answer>", 0.0),
        ("Sure! " + GOOD, 0.0),
        (GOOD + " done", 0.0),
        ("<answer>4</answer><think>work</think>", 0.0),
        (GOOD + "<answer>5</answer>", 0.0),
        ("<think>a<think>b</think></think><answer>4</answer>", 0.0),
        ("<think>work<answer>4</answer></think>", 0.0),
        ("<think>a</think><answer>4</answer></answer>", 0.0),
        ("", 0.0),
    ],
)
def test_format_reward(completion, expected):
    assert score(format_reward, [completion]) == [expected]


@pytest.mark.parametrize(
    "completion, expected",
    [
        (GOOD, 1.0),
        ("<answer>4</answer>", 0.5),
        ("<think>x</think><answer>4</answer><answer>5</answer>", 0.5),
        ("<think>x</think><answer>4", 0.75),
        ("<think><think></think><answer>4</answer>", 0.75),
        ("4", 0.0),
        ([{"role": "assistant", "content": "<think>x</think>"}], 0.5),
    ],
)
def test_tag_count_reward(completion, expected):
    assert score(tag_count_reward, [completion]) == [expected]


# --- shaping ----------------------------------------------------------------------------------


def test_length_reward_is_flat_then_linear_to_zero_at_four_targets():
    reward = make_length_reward(10)
    lengths = [0, 5, 10, 16, 25, 40, 100]
    values = score(reward, ["x" * n for n in lengths])
    assert values == pytest.approx([1.0, 1.0, 1.0, 0.8, 0.5, 0.0, 0.0])
    assert score(length_reward, ["x" * 25], target_len=10) == pytest.approx([0.5])
    assert score(length_reward, ["x" * 1000, "x" * 1001]) == pytest.approx([1.0, 1 - 1 / 3000])


def test_repetition_penalty_reward():
    completions = ["a b c d", "a b c a b c", "a a a a a", "A b C a B c", "a b", ""]
    values = score(repetition_penalty_reward, completions)
    assert values == pytest.approx([0.0, -0.25, -2 / 3, -0.25, 0.0, 0.0])
    # With bigrams "a b c a b c" has 5 bigrams, 3 distinct.
    assert score(make_repetition_penalty_reward(2), ["a b c a b c"]) == pytest.approx([-0.4])


def test_factories_name_their_rewards_and_validate_knobs():
    assert make_length_reward(256).__name__ == "length_reward_256"
    assert make_repetition_penalty_reward(4).__name__ == "repetition_penalty_reward_4gram"
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="target_len"):
            make_length_reward(bad)
        with pytest.raises(ValueError, match="ngram_size"):
            make_repetition_penalty_reward(bad)


# --- every reward -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ALL_REWARDS))
def test_trl_signature(name):
    func = ALL_REWARDS[name]
    params = list(inspect.signature(func).parameters.values())
    assert [p.name for p in params[:2]] == ["prompts", "completions"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params[:2])
    assert params[-1].kind is inspect.Parameter.VAR_KEYWORD
    assert func.__name__ not in ("reward", "<lambda>")
    assert func.__doc__


def assert_in_range(name, values, n):
    assert isinstance(values, list) and len(values) == n
    low, high = RANGES[name]
    for v in values:
        assert v is None or (isinstance(v, float) and low <= v <= high), (name, v)


@pytest.mark.parametrize("name", sorted(ALL_REWARDS))
def test_never_raises_on_adversarial_completions(name):
    func = ALL_REWARDS[name]
    start = time.perf_counter()
    values = score(func, ADVERSARIAL, answer=["1"] * len(ADVERSARIAL))
    elapsed = time.perf_counter() - start
    assert_in_range(name, values, len(ADVERSARIAL))
    assert elapsed < 30.0, f"{name} took {elapsed:.1f} s on {len(ADVERSARIAL)} completions"
    conversational = [[{"role": "assistant", "content": c}] for c in ADVERSARIAL[:8]]
    assert score(func, conversational, answer=["1"] * 8) == values[:8]


ATOMS = ["<think>", "</think>", "<answer>", "</answer>", "\\frac{", "\\boxed{", "}", "{", "(",
         ")", "$", "-", ".", "/", " ", "\n", "\x00", "é", "数", "😀", "0", "7", "42", "x", "^"]
# Plain random text rarely contains a tag or LaTeX; strings of these atoms often do.
TEXTS = st.one_of(st.text(), st.lists(st.sampled_from(ATOMS), max_size=30).map("".join))


@settings(max_examples=200, deadline=None)
@given(TEXTS)
def test_extract_answer_property(text):
    answer = extract_answer(text)
    assert answer is None or (isinstance(answer, str) and answer in text)
    assert isinstance(normalise_answer(text), str)


@settings(max_examples=200, deadline=None)
@given(TEXTS, TEXTS)
def test_every_reward_property(completion, gold):
    for name, func in ALL_REWARDS.items():
        assert_in_range(name, score(func, [completion], answer=[gold]), 1)


# --- reward sets ------------------------------------------------------------------------------


def test_make_reward_set_normalises_weights():
    rewards = make_reward_set(["accuracy", "format"], [3, 1])
    assert rewards.names == ("accuracy", "format")
    assert rewards.funcs == (accuracy_reward, format_reward)
    assert rewards.weights == pytest.approx((0.75, 0.25))
    assert make_reward_set(["accuracy", "format", "tag_count"]).weights == pytest.approx((1 / 3,) * 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rewards.weights = (0.5, 0.5)


def test_reward_set_scores_and_scalarise():
    rewards = make_reward_set(["accuracy", "format"], [3, 1])
    completions = [GOOD, "4", "<think>x</think><answer>5</answer>"]
    scores = rewards.scores([""] * 3, completions, answer=["4", None, "4"])
    assert scores.shape == (3, 2)
    np.testing.assert_array_equal(scores, [[1.0, 1.0], [np.nan, 0.0], [0.0, 1.0]])
    scalar = rewards.scalarise([""] * 3, completions, answer=["4", None, "4"])
    np.testing.assert_allclose(scalar, [1.0, 0.0, 0.25])


@pytest.mark.parametrize(
    "names, weights, match",
    [
        (["accuracy", "nope"], None, "known names.*accuracy"),
        ([], None, "names"),
        (["accuracy", "accuracy"], None, "names"),
        (["accuracy", "format"], [1.0], "weights"),
        (["accuracy", "format"], [1.0, -0.5], "weights"),
        (["accuracy", "format"], [0.0, 0.0], "weights"),
        (["accuracy", "format"], [1.0, float("nan")], "weights"),
        (["accuracy", "format"], ["a", "b"], "weights"),
    ],
)
def test_make_reward_set_validation(names, weights, match):
    with pytest.raises(ValueError, match=match):
        make_reward_set(names, weights)


def test_reward_set_rejects_a_reward_returning_the_wrong_number_of_values():
    def one_value(prompts, completions, **kwargs):
        return [1.0]

    rewards = RewardSet(names=("one_value",), funcs=(one_value,), weights=(1.0,))
    with pytest.raises(ValueError, match="one_value"):
        rewards.scores(["", ""], ["a", "b"])


# --- FedMOA's code-family and short-completion rewards (fedrl_kit/rewards/code.py) ---------------------


def test_code_format_reward_half_for_tags_half_for_a_program_defining_f():
    from fedrl_kit.rewards import code_format_reward

    completions = [
        "<think>x*3+1</think><answer>f=lambda x:x*3+1</answer>",  # both
        "f=lambda x:x*3+1",  # program, no tags
        "<think>x</think><answer>g=lambda x:x</answer>",  # tags, but binds g
        "<think>x</think><answer>f=lambda x:</answer>",  # tags, does not parse
        "def f(x):\n    return x\n",  # a def counts
        "f(3)",  # uses f, does not bind it
        "",
    ]
    assert score(code_format_reward, completions) == [1.0, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0]


def test_char_repetition_and_short_length():
    from fedrl_kit.rewards import char_repetition_penalty_reward, short_length_reward

    assert score(char_repetition_penalty_reward, ["abcd", "aaaa", "ab"]) == pytest.approx([0.0, -0.5, 0.0])
    assert score(char_repetition_penalty_reward, ["abab"]) == pytest.approx([2 / 2 - 1.0])  # aba, bab: distinct
    assert score(char_repetition_penalty_reward, ["ababab"]) == pytest.approx([2 / 4 - 1.0])
    with pytest.raises(ValueError, match="ngram_size"):
        char_repetition_penalty_reward([""], ["abc"], ngram_size=0)
    assert score(short_length_reward, ["x" * 56, "x" * 224, "x" * 140]) == pytest.approx([1.0, 0.0, 0.5])


def test_code_accuracy_is_registered_and_runs_the_tests():
    tests = "assert f(0)==1\nassert f(2)==7"
    values = score(REWARDS["code_accuracy"], ["<think>x</think><answer>f=lambda x:3*x+1</answer>",
                                              "<answer>f=lambda x:3*x+2</answer>", "f=lambda x:3*x+1"],
                   answer=[tests, tests, None])
    assert values == [1.0, 0.0, None]
