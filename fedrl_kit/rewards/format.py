"""Format rewards: does the completion follow ``<think>…</think><answer>…</answer>``?"""

from fedrl_kit.rewards.parsing import completion_text
from fedrl_kit.tags import ANSWER_CLOSE, ANSWER_OPEN, TAGS, THINK_CLOSE, THINK_OPEN


def is_well_formatted(text: str) -> bool:
    """True iff ``text`` is one think block then one non-empty answer block."""
    s = text.strip()
    if not (s.startswith(THINK_OPEN) and s.endswith(ANSWER_CLOSE)):
        return False
    if any(s.count(tag) != 1 for tag in TAGS):
        return False
    think_close, answer_open = s.find(THINK_CLOSE), s.find(ANSWER_OPEN)
    if answer_open < think_close or s[think_close + len(THINK_CLOSE):answer_open].strip():
        return False
    return bool(s[answer_open + len(ANSWER_OPEN):-len(ANSWER_CLOSE)].strip())


def format_reward(prompts, completions, **kwargs) -> list[float]:
    """1.0 for a completion that is exactly a think block then an answer block, else 0.0.

    Returns:
        One value in {0.0, 1.0} per completion; see ``is_well_formatted``.
    """
    return [float(is_well_formatted(completion_text(c))) for c in completions]


def tag_count_reward(prompts, completions, **kwargs) -> list[float]:
    """0.25 for each of the four tags that appears exactly once (open-r1's, without its newline after each tag).

    Returns:
        One value in {0, 0.25, 0.5, 0.75, 1} per completion.
    """
    rewards = []
    for c in completions:
        text = completion_text(c)
        rewards.append(0.25 * sum(text.count(tag) == 1 for tag in TAGS))
    return rewards
