"""The Kaplan-Meier median's 95% interval (``stats.kaplan_meier``: Brookmeyer & Crowley 1982
on the log-log band) checked without scipy: the band written out by hand for two classic
small samples, and the interval read off it.

Data: remission times in weeks of the 42 leukaemia patients of Freireich et al. (1963),
Blood 21(6), as tabulated by Gehan (1965), Biometrika 52, and Cox & Oakes (1984), "Analysis
of survival data", Table 1.1: the control arm (21 patients, every remission ended) and the
6-MP arm (21 patients, 12 of them still in remission: censored, ``+`` below).

The formulas (Kalbfleisch & Prentice 2002, sec. 1.3), at the event times t_j with n_j at
risk and d_j events:

    S(t) = prod_{t_j <= t} (1 - d_j / n_j)                    (Kaplan-Meier)
    G(t) = sum_{t_j <= t} d_j / (n_j (n_j - d_j))             (Greenwood: Var S = S^2 G)
    se(log(-log S)) = sqrt(G) / |log S|                       (delta method)
    band = [S ** exp(+z se), S ** exp(-z se)],  z = 1.959964  (exp(-exp(log(-log S) +- z se)))

Brookmeyer & Crowley's interval is every t whose band contains 0.5: from the first time the
lower band is at or below 0.5 to the first time the upper band is ("not reached", inf, when
it never is). The median is the first time S is. Tables: four decimals, worked from the
formulas above; ``hand_band`` is the same arithmetic in plain Python (``math`` and
``statistics.NormalDist`` only), which checks the tables' figures.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from islands.experiment.stats import LEVEL, kaplan_meier

# control arm: 1 1 2 2 3 4 4 5 5 8 8 8 8 11 11 12 12 15 17 22 23 (no censoring)
CONTROL = [1, 1, 2, 2, 3, 4, 4, 5, 5, 8, 8, 8, 8, 11, 11, 12, 12, 15, 17, 22, 23]
# 6-MP arm: 6 6 6 6+ 7 9+ 10 10+ 11+ 13 16 17+ 19+ 20+ 22 23 25+ 32+ 32+ 34+ 35+
MP_TIMES = [6, 6, 6, 6, 7, 9, 10, 10, 11, 13, 16, 17, 19, 20, 22, 23, 25, 32, 32, 34, 35]
MP_SOLVED = [1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]

# t, n at risk, d events, S, G, lower band, upper band
CONTROL_TABLE = [
    (1, 21, 2, 19 / 21, 0.00501, 0.6700, 0.9753),
    (2, 19, 2, 17 / 21, 0.01120, 0.5689, 0.9239),
    (3, 17, 1, 16 / 21, 0.01488, 0.5194, 0.8933),
    (4, 16, 2, 14 / 21, 0.02381, 0.4254, 0.8250),  # lower band <= 0.5 first: low = 4
    (5, 14, 2, 12 / 21, 0.03571, 0.3380, 0.7492),
    (8, 12, 4, 8 / 21, 0.07738, 0.1831, 0.5778),  # S <= 0.5 first: median = 8
    (11, 8, 2, 6 / 21, 0.11905, 0.1166, 0.4818),  # upper band <= 0.5 first: high = 11
    (12, 6, 2, 4 / 21, 0.20238, 0.0595, 0.3774),
    (15, 4, 1, 3 / 21, 0.28571, 0.0357, 0.3212),
    (17, 3, 1, 2 / 21, 0.45238, 0.0163, 0.2612),
    (22, 2, 1, 1 / 21, 0.95238, 0.0033, 0.1970),
]  # (and 23: the last remission ends, S = 0, the band is 0 there)
MP_TABLE = [
    (6, 21, 3, 18 / 21, 0.00794, 0.6197, 0.9516),
    (7, 17, 1, 18 / 21 * 16 / 17, 0.01161, 0.5631, 0.9228),
    (10, 15, 1, 18 / 21 * 16 / 17 * 14 / 15, 0.01637, 0.5032, 0.8894),  # just above 0.5
    (13, 12, 1, 0.6902, 0.02395, 0.4316, 0.8491),  # lower band <= 0.5 first: low = 13
    (16, 11, 1, 0.6275, 0.03304, 0.3675, 0.8049),
    (22, 7, 1, 0.5378, 0.05685, 0.2678, 0.7468),
    (23, 6, 1, 0.4482, 0.09018, 0.1881, 0.6801),  # S <= 0.5 first: median = 23
]  # the upper band never reaches 0.5 (0.68 at the last event): high is "not reached"


def hand_band(times, solved) -> list[tuple]:
    """The tables' columns from the formulas of the module docstring, event time by event
    time (where S reaches 0 the band is 0: there is nothing left to be uncertain about)."""
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    s, g, rows = 1.0, 0.0, []
    for t in sorted({t for t, e in zip(times, solved, strict=True) if e}):
        n = sum(1 for x in times if x >= t)
        d = sum(1 for x, e in zip(times, solved, strict=True) if x == t and e)
        s *= 1 - d / n
        if d == n:
            rows.append((t, n, d, 0.0, math.inf, 0.0, 0.0))
            continue
        g += d / (n * (n - d))
        se = math.sqrt(g) / abs(math.log(s))
        rows.append((t, n, d, s, g, s ** math.exp(z * se), s ** math.exp(-z * se)))
    return rows


def read_interval(table) -> tuple[float, float, float]:
    """Median, low, high: the first time S, the lower band, the upper band is <= 0.5."""
    def first(col: int) -> float:
        return next((float(r[0]) for r in table if r[col] <= 0.5), math.inf)
    return first(3), first(5), first(6)


@pytest.mark.parametrize("times, solved, table", [
    (CONTROL, [1] * len(CONTROL), CONTROL_TABLE), (MP_TIMES, MP_SOLVED, MP_TABLE)],
    ids=["control", "6-MP"])
def test_the_tables_follow_from_greenwood_and_the_log_log_transform(times, solved, table):
    hand = hand_band(times, solved)
    for want, got in zip(table, hand, strict=False):
        assert got[:3] == want[:3]  # t, at risk, events
        assert got[3:] == pytest.approx(want[3:], abs=5e-5), (want, got)
    assert len(hand) == len(table) + (table is CONTROL_TABLE)  # (control's t = 23: S = 0)


def test_kaplan_meier_gives_the_hand_interval_with_every_run_solved():
    km = kaplan_meier(CONTROL, [True] * len(CONTROL))
    assert (km.n, km.events) == (21, 21)
    assert (km.median, km.low, km.high) == read_interval(CONTROL_TABLE) == (8, 4, 11)
    hand = np.array([r[5:] for r in CONTROL_TABLE])
    at = np.isin(km.times, [r[0] for r in CONTROL_TABLE])
    np.testing.assert_allclose(np.c_[km.band_low[at], km.band_high[at]], hand, atol=5e-5)
    assert km.surv[-1] == km.band_low[-1] == km.band_high[-1] == 0  # t = 23


def test_kaplan_meier_gives_the_hand_interval_with_censored_runs():
    km = kaplan_meier(MP_TIMES, np.array(MP_SOLVED, dtype=bool))
    assert (km.n, km.events) == (21, 9)
    # the lower band is 0.5032 at 10 weeks: a band a hair wider (z = 2 instead of 1.96
    # gives 0.4970) would put the low end at 10 instead of 13
    assert (km.median, km.low, km.high) == read_interval(MP_TABLE) == (23, 13, math.inf)
    ev = [r[0] for r in MP_TABLE]
    at = np.isin(km.times, ev)
    np.testing.assert_allclose(km.surv[at], [r[3] for r in MP_TABLE], atol=5e-5)
    np.testing.assert_allclose(np.c_[km.band_low[at], km.band_high[at]],
                               [r[5:] for r in MP_TABLE], atol=5e-5)
    # a censored time moves neither S nor its band: they hold the last event's values
    last = np.flatnonzero(at)[-1]
    assert (km.band_low[last:] == km.band_low[last]).all()
    assert (km.band_high[last:] == km.band_high[last]).all()
