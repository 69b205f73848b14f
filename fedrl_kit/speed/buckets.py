"""Length buckets: a batch's completions scored in up to k passes of similar length instead of one."""

from __future__ import annotations

import torch

from fedrl_kit.rollout import Rollouts, row_logps


def bucketed_logps(model, rollouts: Rollouts, temperature: float = 1.0, batch_size: int | None = None,
                   length_buckets: int = 2) -> torch.Tensor:
    """:func:`fedrl_kit.rollout.per_token_logps` with each chunk of ``batch_size`` rows scored in up to
    ``length_buckets`` passes by completion length.  -> [N, T]"""
    check_length_buckets(length_buckets)
    n = len(rollouts)
    batch_size = batch_size or n
    out = []
    for s in range(0, n, batch_size):
        chunk = rollouts if batch_size >= n else rollouts.select(range(s, min(n, s + batch_size)))

        def score(idx, t, chunk=chunk):
            rows = trimmed_rows(chunk, idx, t)
            return row_logps(model, rows.prompt_ids, rows.prompt_mask, rows.completion_ids, rows.completion_mask,
                             temperature)  # [b_k, t]

        out.append(scored_in_passes(chunk.completion_mask, length_buckets, score))  # [b, T]
    return torch.cat(out, dim=0)  # [N, T]


def trimmed_rows(rollouts: Rollouts, idx: torch.Tensor, t: int) -> Rollouts:
    """The rows ``idx`` with their completions cut to ``t`` tokens and the prompt columns that are padding in all
    of them dropped (left padding): one pass of :func:`scored_in_passes`."""
    used = rollouts.prompt_mask[idx].any(dim=0).nonzero()
    keep = int(used[0]) if len(used) else 0
    return Rollouts(rollouts.prompt_ids[idx, keep:], rollouts.prompt_mask[idx, keep:],
                    rollouts.completion_ids[idx, :t], rollouts.completion_mask[idx, :t],
                    [rollouts.prompts[i] for i in idx.tolist()], [rollouts.completions[i] for i in idx.tolist()],
                    rollouts.num_generations)


def scored_in_passes(completion_mask: torch.Tensor, buckets: int, score) -> torch.Tensor:
    """Log-probs of every row from up to ``buckets`` passes by completion length (:func:`length_buckets_of`)."""
    T = completion_mask.shape[1]
    parts, order = [], []
    for idx, t in length_buckets_of(completion_mask, buckets):
        idx = idx.sort().values
        parts.append(torch.nn.functional.pad(score(idx, t), (0, T - t)))  # [b_k, T]
        order.append(idx)
    return torch.cat(parts, dim=0)[torch.argsort(torch.cat(order))]  # [N, T]


def length_buckets_of(completion_mask: torch.Tensor, buckets: int) -> list[tuple[torch.Tensor, int]]:
    """Rows grouped into at most ``buckets`` passes of similar completion length, padding work minimised.

    Returns:
        [(row indices, their longest length)], shortest first; every row in exactly one.
    """
    lengths = completion_mask.sum(dim=1).clamp(min=1)  # [b]
    order = torch.argsort(lengths, stable=True)  # [b]
    values, counts = torch.unique_consecutive(lengths[order], return_counts=True)
    values, ends = values.tolist(), counts.cumsum(dim=0).tolist()  # distinct lengths, rows up to each
    D, inf = len(values), float("inf")
    # cost[k][j]: least positions for the rows of the first j distinct lengths in k runs; cut[k][j]: its last cut
    cost = [[0.0] + [inf] * D] + [[inf] * (D + 1) for _ in range(min(buckets, D))]
    cut = [[0] * (D + 1) for _ in cost]
    for k in range(1, len(cost)):
        for j in range(k, D + 1):
            for i in range(k - 1, j):
                c = cost[k - 1][i] + ((ends[j - 1] - (ends[i - 1] if i else 0)) * values[j - 1])
                if c < cost[k][j]:
                    cost[k][j], cut[k][j] = c, i
    k = min(range(1, len(cost)), key=lambda k: (cost[k][D], k))  # fewest passes among the cheapest
    runs, j = [], D
    while k:
        i = cut[k][j]
        runs.append((order[(ends[i - 1] if i else 0):ends[j - 1]], int(values[j - 1])))
        j, k = i, k - 1
    return runs[::-1]


def check_length_buckets(length_buckets) -> None:
    if isinstance(length_buckets, bool) or not isinstance(length_buckets, int) or length_buckets < 1:
        raise ValueError(f"length_buckets must be an integer >= 1, got {length_buckets!r}")
