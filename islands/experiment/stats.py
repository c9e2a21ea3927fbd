"""The statistics of an experiment report, on kept libraries (scipy), for small samples.

- Times to solve are survival data: a run solved at t, or is censored at the budget it
  stopped on (evaluations or seconds used). :func:`kaplan_meier` wraps ``scipy.stats.ecdf``
  on ``scipy.stats.CensoredData`` (the Kaplan-Meier estimator) and reads off the median with
  a 95% interval: the times whose pointwise log-log band (Kalbfleisch & Prentice 2002,
  sec. 1.3) contains 0.5 (Brookmeyer & Crowley 1982). Where more than half the runs never
  solved the median is "not reached" (``inf``).
- Success rates carry a Wilson score interval (``scipy.stats.binomtest``).
- Two groups of times to solve are compared with the log-rank test (``scipy.stats.logrank``),
  which uses every run, censored ones included. Paired groups (each seed runs both arms)
  take :func:`paired` instead: the log-rank test treats its groups as independent.
- A run that left no count (NaN: it crashed before its first report) has no place on the
  time axis: it is left out of these fits and counted (``no_count``), never censored at 0.

Plain Python and scipy, no Ray, no pandas: the report modules build tables from these.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

LEVEL = 0.95  # every interval in a report


@dataclass(frozen=True)
class KM:
    """A Kaplan-Meier fit of one cell: ``n`` runs, ``events`` of them solved; the median
    time to solve and its interval (``inf``: not reached, NaN: no runs); ``no_count`` of the
    ``n`` runs left no time and are not in the fit; the step curve (times, survival, band)
    for figures."""

    n: int
    events: int
    median: float
    low: float
    high: float
    no_count: int = 0
    times: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    surv: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    band_low: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    band_high: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    @property
    def reached(self) -> bool:
        return math.isfinite(self.median)


def _first_at_or_below(times: np.ndarray, values: np.ndarray, level: float) -> float:
    """The first time at which a non-increasing step curve is <= level (inf if never)."""
    hit = np.flatnonzero(values <= level + 1e-12)
    return float(times[hit[0]]) if len(hit) else math.inf


def kaplan_meier(times, solved) -> KM:
    """The Kaplan-Meier fit of runs that solved at ``times[i]`` (``solved[i]``) or were
    censored there. A NaN time (a run that left no count: it crashed before its first
    report) is left out of the fit and counted in ``no_count``: where that run would lie on
    the time axis is unknown, so no censoring time is honest for it. The fit is then the
    time to solve of the runs that left a count (censoring at 0, as before, gave the same
    curve but hid the run); a report states the count beside the median, and the cell's
    success rate still counts the run as unsolved."""
    from scipy import stats

    t_all = np.asarray(times, dtype=float)
    known = ~np.isnan(t_all)
    t, e = t_all[known], np.asarray(solved, dtype=bool)[known]
    n, no_count = len(t_all), int((~known).sum())
    if len(t) == 0:
        return KM(n, 0, math.nan, math.nan, math.nan, no_count)
    if not e.any():  # never solved: S(t) = 1 throughout
        return KM(n, 0, math.inf, math.inf, math.inf, no_count, np.array([t.max()]),
                  np.ones(1), np.ones(1), np.ones(1))
    sf = stats.ecdf(stats.CensoredData(uncensored=t[e], right=t[~e])).sf
    with warnings.catch_warnings():  # "undefined at some observations": handled below
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = sf.confidence_interval(LEVEL, method="log-log")
    s = sf.probabilities
    # the log-log band is undefined where S is 1 (no run solved yet: the band is 1) or 0
    # (every run solved by then: 0); anywhere else undefined means unbounded
    lo, hi = ci.low.probabilities, ci.high.probabilities
    for band in (lo, hi):
        band[np.isnan(band) & (s >= 1)] = 1.0
        band[np.isnan(band) & (s <= 0)] = 0.0
    lo, hi = np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)
    x = sf.quantiles
    return KM(n, int(e.sum()), _first_at_or_below(x, s, 0.5), _first_at_or_below(x, lo, 0.5),
              _first_at_or_below(x, hi, 0.5), no_count, x, s, lo, hi)


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of a success rate (NaN, NaN for no runs)."""
    from scipy.stats import binomtest

    if n <= 0:
        return math.nan, math.nan
    ci = binomtest(int(successes), int(n)).proportion_ci(LEVEL, method="wilson")
    return float(ci.low), float(ci.high)


def logrank(times_a, solved_a, times_b, solved_b) -> float:
    """Two-sided log-rank p-value between two independent cells' times to solve (NaN when
    either cell has no run with a count or no run of either solved: nothing to compare).
    Runs without a count (NaN) are left out, as in :func:`kaplan_meier`."""
    from scipy import stats

    ta, tb = (np.asarray(x, dtype=float) for x in (times_a, times_b))
    ea, eb = np.asarray(solved_a, dtype=bool)[~np.isnan(ta)], \
        np.asarray(solved_b, dtype=bool)[~np.isnan(tb)]
    ta, tb = ta[~np.isnan(ta)], tb[~np.isnan(tb)]
    if len(ta) == 0 or len(tb) == 0 or not (ea.any() or eb.any()):
        return math.nan
    res = stats.logrank(stats.CensoredData(uncensored=ta[ea], right=ta[~ea]),
                        stats.CensoredData(uncensored=tb[eb], right=tb[~eb]))
    return float(res.pvalue)


def ratio_interval(num: tuple[float, float], den: tuple[float, float]) -> tuple[float, float]:
    """A conservative interval of a/b from intervals of a and b (both positive): every
    ratio the two intervals allow. Wider than 95%; an "inf" end stays unbounded."""
    (a_lo, a_hi), (b_lo, b_hi) = num, den
    if any(math.isnan(x) for x in (a_lo, a_hi, b_lo, b_hi)):
        return math.nan, math.nan
    lo = 0.0 if math.isinf(b_hi) or math.isinf(a_lo) else a_lo / b_hi
    hi = math.inf if b_lo <= 0 or math.isinf(a_hi) else a_hi / b_lo
    return lo, hi


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals share a point (NaN ends: unknown, so they may)."""
    if any(math.isnan(x) for x in (*a, *b)):
        return True
    return a[0] <= b[1] and b[0] <= a[1]


@dataclass(frozen=True)
class Paired:
    """Two arms run on the same seeds: per seed, which arm solved first. ``undecided``:
    seeds where neither solved, where one solved only after the other stopped unsolved (had
    that run gone on, it might have solved first), or a tie. ``sign_p``: two-sided exact
    sign test on the decided seeds; ``wilcoxon_p``: two-sided Wilcoxon signed-rank test on
    their differences (b - a), an unsolved run at the time it stopped (a lower bound on its
    own time); ``ranks_exact``: every such bounded difference ranks the same whatever its
    true size (it is larger than every exact one, and all bounded ones share a sign), so the
    Wilcoxon p holds as if every time were known."""

    pairs: int
    a_first: int
    b_first: int
    undecided: int
    sign_p: float
    wilcoxon_p: float
    ranks_exact: bool


def _first(ta: float, ea: bool, tb: float, eb: bool) -> int:
    """-1: a solved first, 1: b did, 0: not decided."""
    if ea and ta < tb:  # b, solved or not, had not solved by then
        return -1
    if eb and tb < ta:
        return 1
    return 0


def paired(times_a, solved_a, times_b, solved_b) -> Paired:
    """The paired comparison of two arms' times to solve, seed by seed (``times_a[i]`` and
    ``times_b[i]`` ran on the same seed; an unsolved run's time is where it stopped)."""
    from scipy import stats

    ta, tb = np.asarray(times_a, dtype=float), np.asarray(times_b, dtype=float)
    ea, eb = np.asarray(solved_a, dtype=bool), np.asarray(solved_b, dtype=bool)
    first = np.array([_first(*x) for x in zip(ta, ea, tb, eb, strict=True)], dtype=int)
    a_first, b_first = int((first < 0).sum()), int((first > 0).sum())
    decided = first != 0
    n = a_first + b_first
    sign_p = float(stats.binomtest(a_first, n).pvalue) if n else math.nan
    d = (tb - ta)[decided]
    bounded = ~(ea & eb)[decided]  # one run of the pair unsolved: |d| is a lower bound
    exact = bool(not bounded.any() or (
        len(set(np.sign(d[bounded]))) == 1
        and np.abs(d[bounded]).min() >= np.abs(d[~bounded]).max(initial=0.0)))
    wp = float(stats.wilcoxon(d).pvalue) if n else math.nan
    return Paired(len(ta), a_first, b_first, len(ta) - n, sign_p, wp, exact)
