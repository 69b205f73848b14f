"""Shaping rewards: soft preferences on the form of a completion, not its correctness."""

from fedrl_kit.rewards.parsing import completion_text

DEFAULT_TARGET_LEN = 1000
"""characters; a worked answer to a school math problem fits, a rambling one does not"""
DEFAULT_NGRAM_SIZE = 3
"""words per n-gram, as in open-r1"""


def _check_positive_int(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def length_reward(
    prompts, completions, target_len: int = DEFAULT_TARGET_LEN, **kwargs
) -> list[float]:
    """A bounded length reward: 1 up to ``target_len`` characters, then linearly down to 0.

    r(L) = 1 for L ≤ T, 1 − (L − T) / (3T) for T < L < 4T, 0 for L ≥ 4T (L: the completion's length in characters).

    Args:
        target_len: T, in characters, an integer >= 1.

    Returns:
        One value in [0, 1] per completion.
    """
    _check_positive_int(target_len, "target_len")
    rewards = []
    for c in completions:
        excess = len(completion_text(c)) - target_len
        rewards.append(max(0.0, 1.0 - max(0, excess) / (3 * target_len)))
    return rewards


def repetition_penalty_reward(
    prompts, completions, ngram_size: int = DEFAULT_NGRAM_SIZE, **kwargs
) -> list[float]:
    """open-r1's repetition penalty: minus the fraction of word n-grams that are repeats.

    Args:
        ngram_size: n, an integer >= 1.

    Returns:
        One value in (−1, 0] per completion: 0 without repeats, near −1 for a loop.
    """
    _check_positive_int(ngram_size, "ngram_size")
    rewards = []
    for c in completions:
        words = completion_text(c).lower().split()
        total = len(words) - ngram_size + 1
        if total < 1:
            rewards.append(0.0)
            continue
        distinct = len(set(zip(*(words[i:] for i in range(ngram_size)))))
        rewards.append(distinct / total - 1.0)
    return rewards


def make_length_reward(target_len: int = DEFAULT_TARGET_LEN):
    """Returns ``length_reward`` with ``target_len`` fixed, named ``length_reward_<T>``."""
    _check_positive_int(target_len, "target_len")

    def reward(prompts, completions, **kwargs) -> list[float]:
        return length_reward(prompts, completions, target_len=target_len)

    reward.__name__ = reward.__qualname__ = f"length_reward_{target_len}"
    reward.__doc__ = f"``length_reward`` with target_len={target_len} characters."
    return reward


def make_repetition_penalty_reward(ngram_size: int = DEFAULT_NGRAM_SIZE):
    """Returns ``repetition_penalty_reward`` with ``ngram_size`` fixed, named ``repetition_penalty_reward_<n>gram``.
    """
    _check_positive_int(ngram_size, "ngram_size")

    def reward(prompts, completions, **kwargs) -> list[float]:
        return repetition_penalty_reward(prompts, completions, ngram_size=ngram_size)

    reward.__name__ = reward.__qualname__ = f"repetition_penalty_reward_{ngram_size}gram"
    reward.__doc__ = f"``repetition_penalty_reward`` with ngram_size={ngram_size} words."
    return reward
