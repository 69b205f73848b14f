"""The answer format shared by the world, the rewards and the policy's tokenizer.

A completion in the expected format reads ``<think>…</think><answer>…</answer>``.
In the embedded world's tokenizer each of the four tags is a single token.
"""

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)

SYSTEM_PROMPT = (
    "Think about the problem inside <think> </think> tags, then give only the final "
    "answer inside <answer> </answer> tags."
)
"""System prompt for real chat models (the embedded world's tiny policy needs none)."""
