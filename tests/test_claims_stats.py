"""experiments.stats: Student-t quantiles against published tables, and the interval the claims tables read."""
import math

import numpy as np
import pytest

from experiments.stats import detectable_effect, sign_verdict, t_cdf, t_interval, t_quantile

# t_{0.975, df} from any printed table (e.g. NIST/SEMATECH e-Handbook, Table 1.3.6.7.2)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 20: 2.086, 30: 2.042, 100: 1.984}


@pytest.mark.parametrize("df,t", sorted(T975.items()))
def test_t_quantile_matches_the_printed_table(df, t):
    assert t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)


def test_t_cdf_closed_forms_and_symmetry():
    assert t_cdf(1.0, 1) == pytest.approx(0.75)  # Cauchy: 1/2 + atan(x)/π
    assert t_cdf(1.0, 2) == pytest.approx(0.5 + 0.5 / math.sqrt(3))  # df 2: 1/2 + x / (2 √(2 + x²))
    assert t_cdf(0.0, 7) == 0.5 and t_cdf(-1.3, 6) == pytest.approx(1 - t_cdf(1.3, 6))
    assert t_quantile(0.995, 2) == pytest.approx(9.925, abs=5e-4)
    assert t_quantile(0.025, 4) == pytest.approx(-2.776, abs=5e-4)
    # many degrees of freedom: the normal's 1.95996
    assert t_quantile(0.975, 2000) == pytest.approx(1.9612, abs=5e-4)


def test_t_interval_uses_n_minus_1_degrees_of_freedom():
    mean, half, n = t_interval([1.0, 2.0, 3.0])
    assert (mean, n) == (2.0, 3) and half == pytest.approx(4.3027 * 1.0 / math.sqrt(3), abs=1e-4)
    v = np.array([0.3, -0.1, 0.4, 0.2, 0.0])
    assert t_interval(v)[1] == pytest.approx(2.7764 * v.std(ddof=1) / math.sqrt(5), abs=1e-4)
    assert t_interval([1.0, 3.0])[1] == pytest.approx(12.7062, abs=1e-4)  # s/√2 = 1
    assert t_interval([1.0, 3.0], confidence=0.90)[1] == pytest.approx(6.3138, abs=1e-4)
    one, none = t_interval([0.5]), t_interval([])
    assert one[0] == 0.5 and math.isnan(one[1]) and one[2] == 1
    assert math.isnan(none[0]) and none[2] == 0


def test_sign_verdict_and_bad_arguments():
    assert sign_verdict(2.0, 1.9) == 1 and sign_verdict(-2.0, 1.9) == -1 and sign_verdict(2.0, 2.0) == 0
    with pytest.raises(ValueError, match="df"):
        t_cdf(1.0, 0)
    with pytest.raises(ValueError, match="p must"):
        t_quantile(1.0, 3)
    with pytest.raises(ValueError, match="confidence"):
        t_interval([1.0, 2.0], confidence=95)


def test_detectable_effect_is_the_interval_widened_by_the_power_quantile():
    """(t_0.975 + t_0.8) · SE from published quantiles: t_{0.975,2} = 4.3027, t_{0.8,2} = 1.0607; t_{0.975,4} = 2.7764,
    t_{0.8,4} = 0.9410; nan without an interval."""
    from experiments.stats import detectable_effect

    assert detectable_effect(4.3027, 3) == pytest.approx(4.3027 + 1.0607, abs=1e-3)  # SE = 1
    assert detectable_effect(2.7764 * 0.5, 5) == pytest.approx((2.7764 + 0.9410) * 0.5, abs=1e-3)
    assert detectable_effect(1.0, 8) > 1.0  # always wider than the interval it comes from
    assert np.isnan(detectable_effect(float("nan"), 1)) and np.isnan(detectable_effect(1.0, 1))
