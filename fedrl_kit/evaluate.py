"""Evaluation on a held-out split: pass@1, format rate, completion length, per topic.

pass@1 is estimated the standard way for sampled decoding (as in DeepSeek-R1's reports):
``n_samples`` completions per problem at the rollout temperature, pass@1 = mean correctness.
Greedy accuracy (temperature 0) is reported beside it when asked for.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from fedrl_kit.rewards import accuracy_reward, format_reward


def eval_seed(run_seed: int) -> int:
    """The sampling seed of every evaluation in a run with ``run_seed`` (so ``fedrl eval`` and a run's
    round 0 score the same base identically)."""
    return run_seed * 7919 + 17


def evaluate(policy, adapter: str, dataset, n_samples: int = 2, seed: int = 17, batch_size: int = 256,
             greedy: bool = False, accuracy_fn=accuracy_reward) -> dict:
    """Score ``adapter`` on ``dataset`` (rows with prompt, answer, topic).

    Returns:
        ``{"pass@1", "format", "length", "n", "topic/<name>" …[, "greedy"]}`` (floats).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    prompts, answers, topics = list(dataset["prompt"]), list(dataset["answer"]), list(dataset["topic"])
    per_prompt = max(1, batch_size // n_samples)
    acc, fmt, length = [], [], []
    for s in range(0, len(prompts), per_prompt):
        r = policy.rollout(adapter, prompts[s:s + per_prompt], n_samples, seed=seed + s)
        gold = [a for a in answers[s:s + per_prompt] for _ in range(n_samples)]
        acc += [v or 0.0 for v in accuracy_fn(r.prompts, r.completions, answer=gold)]
        fmt += format_reward(r.prompts, r.completions)
        length += r.completion_mask.sum(dim=1).tolist()
    acc_by_prompt = np.asarray(acc).reshape(len(prompts), n_samples).mean(axis=1)  # [n_prompts]
    out = {"pass@1": float(acc_by_prompt.mean()), "format": float(np.mean(fmt)), "length": float(np.mean(length)),
           "n": len(prompts)}
    by_topic = defaultdict(list)
    for t, a in zip(topics, acc_by_prompt):
        by_topic[t].append(a)
    out.update({f"topic/{t}": float(np.mean(v)) for t, v in sorted(by_topic.items())})
    if greedy:
        g = []
        for s in range(0, len(prompts), batch_size):
            r = policy.rollout(adapter, prompts[s:s + batch_size], 1, seed=seed, temperature=0.0)
            g += [v or 0.0 for v in accuracy_fn(r.prompts, r.completions, answer=answers[s:s + batch_size])]
        out["greedy"] = float(np.mean(g))
    return out


def answers(policy, states: dict, dataset, seed: int = 17, batch_size: int = 256,
            accuracy_fn=accuracy_reward) -> dict[str, tuple[list[str], list[float]]]:
    """Each model's greedy answer (temperature 0: its single most likely completion) to every problem of ``dataset``.

    Args:
        policy: the :class:`~fedrl_kit.policy.engine.Policy`.
        states: label → LoRA state (e.g. ``{"base": the round-0 adapter, "trained": the final global one}``);
            each is loaded into a scratch adapter of its own, dropped afterwards.

    Returns:
        label → (completions, correctness), one entry per row of ``dataset`` in its order.
    """
    prompts, gold = list(dataset["prompt"]), list(dataset["answer"])
    out = {}
    for label, state in states.items():
        name = f"answers/{label}"
        policy.set_state(name, state)
        try:
            texts, right = [], []
            for s in range(0, len(prompts), batch_size):
                r = policy.rollout(name, prompts[s:s + batch_size], 1, seed=seed, temperature=0.0)
                texts += list(r.completions)
                right += [v or 0.0 for v in accuracy_fn(r.prompts, r.completions, answer=gold[s:s + batch_size])]
        finally:
            policy.drop(name)
        out[label] = (texts, right)
    return out
