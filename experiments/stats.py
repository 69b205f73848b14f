"""Student-t intervals over seeds: the one interval every claims table draws its verdicts from.

With n seeds the mean of a paired difference has a Student-t sampling distribution with n − 1 degrees of
freedom, so its 95 % interval is mean ± t_{0.975, n−1} · s/√n. Mean ± 2 SE, the rule this replaces, is a
95 % interval only for many seeds: with 3 seeds (2 degrees of freedom) it covers about 82 %, and t_{0.975, 2}
is 4.303, not 2.

scipy is not a dependency, so the quantile is computed here: the t CDF for an integer number of degrees of
freedom has a closed form (a finite sum; Abramowitz & Stegun 26.7.3–4), and the quantile is found by
bisection on it to machine precision. ``tests/test_claims_stats.py`` checks it against published tables.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

#: the confidence of every verdict in the claims tables
CONFIDENCE = 0.95
#: how a verdict names its interval
INTERVAL = "95 % t interval"


def t_cdf(x: float, df: int) -> float:
    """P(T ≤ x) for Student's t with ``df`` (a positive integer) degrees of freedom, in closed form."""
    if not isinstance(df, (int, np.integer)) or df < 1:
        raise ValueError(f"df must be a positive integer, got {df!r}")
    theta = math.atan2(x, math.sqrt(df))  # x / √df = tan θ
    c, s = math.cos(theta), math.sin(theta)
    # A&S 26.7.3 (odd df) and 26.7.4 (even df): A(x | df) = P(|T| ≤ |x|), signed here with x
    if df % 2:
        term, total = c, 0.0
        if df > 1:
            total = term
            for k in range(3, df - 1, 2):  # cos θ · (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + …)
                term *= c * c * (k - 1) / k
                total += term
        a = (2.0 / math.pi) * (theta + s * total)
    else:
        term = total = 1.0
        for k in range(2, df - 1, 2):  # sin θ · (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + …)
            term *= c * c * (k - 1) / k
            total += term
        a = s * total
    return 0.5 + 0.5 * a


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on :func:`t_cdf`)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return 0.5 * (lo + hi)


def t_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> tuple[float, float, int]:
    """The two-sided Student-t interval of the mean of ``values`` (one per seed).

    Returns:
        (mean, half_width, n): the interval is mean ± half_width, half_width = t_{(1+confidence)/2, n−1} · s/√n
        with s the sample standard deviation. With one value the half-width is nan (no interval); with none
        the mean is nan too.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    v = np.asarray(list(values), float)  # [n]
    n = len(v)
    if n == 0:
        return float("nan"), float("nan"), 0
    mean = float(v.mean())
    if n == 1:
        return mean, float("nan"), 1
    se = float(v.std(ddof=1) / math.sqrt(n))
    return mean, t_quantile(0.5 + confidence / 2.0, n - 1) * se, n


#: the power at which :func:`detectable_effect` states what the seeds can detect
POWER = 0.8


def detectable_effect(half_width: float, n: int, power: float = POWER, confidence: float = CONFIDENCE) -> float:
    """The smallest true difference that ``n`` seeds detect with probability ``power``: a paired difference whose
    interval (half-width ``half_width``, :func:`t_interval`) must clear 0 is seen that often when the truth is
    (t_{(1+confidence)/2, n−1} + t_{power, n−1}) · SE = half_width · (1 + t_{power, n−1} / t_{(1+confidence)/2, n−1}),
    the usual approximation that takes the sample SE for the true one. nan with fewer than 2 seeds."""
    if n < 2 or not np.isfinite(half_width):
        return float("nan")
    return float(half_width * (1.0 + t_quantile(power, n - 1) / t_quantile(0.5 + confidence / 2.0, n - 1)))


def sign_verdict(mean: float, half_width: float) -> int:
    """+1 when the interval mean ± half_width lies wholly above 0, −1 wholly below, 0 when it contains 0."""
    if mean - half_width > 0:
        return 1
    if mean + half_width < 0:
        return -1
    return 0


def claims_markdown(df: pd.DataFrame, drop: tuple[str, ...] = ()) -> str:
    """The claims table as a markdown table (for docs), without the columns ``drop``; nan prints as "–".
    The ``setting`` column stays by default: a verdict is a verdict at that scale."""
    df = df.drop(columns=[c for c in drop if c in df.columns])
    cell = lambda v: "–" if isinstance(v, float) and np.isnan(v) else str(v).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)
