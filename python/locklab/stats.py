"""The statistics behind every verdict: how much better one set of passes is than
another, the interval on that ratio, and what the interval lets a verdict say.

Both the sweep's verdict (report/verdict.py) and `locklab advise` judge through
compare(): its ratio is one median over the other, oriented so that above 1 means
OTHER is better than BASE (for a time: BASE's median over OTHER's).

The interval is an exact bootstrap percentile interval on that ratio of medians.
A bootstrap resamples each side's passes with replacement and takes the ratio of
the resamples' medians; the interval is the middle 95% of those ratios.  With
the handful of passes a verdict has, every resample can be weighed instead of
drawing some at random: the median of a resample of n passes takes each of a few
values with a probability that binomial counts give (median_distribution), so
the interval is the same on every run of the same figures, with no seed and no
sampling error.  Why a bootstrap and not a rank interval (Mann-Whitney's on the
log ratios): ranks forget by how much passes differ, so three passes against
three can never reach 95% by rank however far apart they lie, and the sweep's
verdicts are made of three; the bootstrap keeps the magnitudes.  Its cost: with
two or three passes a side the interval is the whole range of pass-against-pass
ratios, which the rank test would give 90% rather than 95%; five passes give a
95% interval worth the name (docs/advise.md, "The statistics").

Several candidates judged against one base (advise's candidates for one lock,
the sweep's locks against the fastest) share the 5% risk of calling one apart by
chance: each interval is taken at 1 - 0.05/k for k of them (Bonferroni), so the
family's is still 95%.

What a comparison says (Comparison.outcome):
  BETTER / WORSE  the interval lies wholly above / below 1: apart beyond the noise
  SAME            the interval holds 1 and the ratio is within NOISE_MARGIN of 1:
                  nothing told apart, and nothing much seen either
  UNDECIDED       the interval holds 1 but the ratio is NOISE_MARGIN or more away
                  from it: a difference was seen that the passes cannot confirm;
                  `settle` says about how many passes a side would (the count at
                  which the interval's half-width, shrinking as one over the
                  square root of the passes from what it is now, falls below the
                  distance of the ratio from 1)
With one pass on a side there is no interval: a ratio NOISE_MARGIN or more from 1
is taken as apart, a smaller one as the same (the sweep's single-repeat rule).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median

# The confidence of every interval, for the whole family of comparisons it is one of.
LEVEL = 0.95
# A ratio this close to 1 is no difference worth acting on.
NOISE_MARGIN = 0.10

BETTER, WORSE, SAME, UNDECIDED = "better", "worse", "same", "undecided"


@dataclass(frozen=True)
class Comparison:
    """OTHER against BASE: the ratio of their medians (above 1: OTHER better), its
    interval (None with a single pass on a side), the fewer passes of the two sides,
    the outcome, and for UNDECIDED the passes a side that would settle it."""

    ratio: float
    low: float | None
    high: float | None
    passes: int
    outcome: str
    settle: int | None = None

    @property
    def apart(self) -> bool:
        return self.outcome in (BETTER, WORSE)


def _binomial_tail(n: int, p: float, k: int) -> float:
    """P(Binomial(n, p) >= k)."""
    return sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j) for j in range(k, n + 1))


def median_distribution(values: list[float]) -> list[tuple[float, float]]:
    """The exact distribution of the median of a resample (with replacement, of the
    same size) of VALUES: (value, probability) pairs, values ascending, equal ones
    merged.

    Order the passes x1 <= ... <= xn.  Odd n = 2m+1: the resample's median is at most
    xk when at least m+1 of its n draws fall on x1..xk, a binomial tail.  Even n = 2m:
    the median is (Y(m) + Y(m+1)) / 2 of the sorted resample Y, and each pair of
    positions (i, j) it may take has a multinomial probability: a draws below xi and
    b on it with a + b = m, then the n - m others at or above xj with at least one
    on it (i < j); or, for i = j, fewer than m below xi and more than m at or below.
    """
    x = sorted(values)
    n = len(x)
    atoms: dict[float, float] = {}
    if n % 2:
        need = n // 2 + 1
        below = 0.0
        for k in range(1, n + 1):
            upto = _binomial_tail(n, k / n, need)
            atoms[x[k - 1]] = atoms.get(x[k - 1], 0.0) + upto - below
            below = upto
    else:
        m = n // 2
        fact = math.factorial
        for i in range(1, n + 1):
            p_below, p_at = (i - 1) / n, 1 / n
            # Both middle draws on xi.
            same = 0.0
            for a in range(m):
                for b in range(m + 1 - a, n - a + 1):
                    c = n - a - b
                    same += (fact(n) / (fact(a) * fact(b) * fact(c)) * p_below ** a
                             * p_at ** b * ((n - i) / n) ** c)
            atoms[x[i - 1]] = atoms.get(x[i - 1], 0.0) + same
            # The m-th draw on xi, the (m+1)-th on a later xj.
            for j in range(i + 1, n + 1):
                upper = ((n - j + 1) / n) ** (n - m) - ((n - j) / n) ** (n - m)
                if upper <= 0:
                    continue
                lower = sum(math.comb(n, a) * math.comb(n - a, m - a) * p_below ** a
                            * p_at ** (m - a) for a in range(m))
                mid = (x[i - 1] + x[j - 1]) / 2
                atoms[mid] = atoms.get(mid, 0.0) + lower * upper
    return sorted(atoms.items())


def _ratio_cdf(top: list[tuple[float, float]], bottom: list[tuple[float, float]],
               t: float) -> float:
    """P(T / B <= t) for independent T ~ TOP, B ~ BOTTOM (positive values)."""
    values = [v for v, _ in top]
    cumulative, acc = [], 0.0
    for _, p in top:
        acc += p
        cumulative.append(acc)
    total = 0.0
    for b, pb in bottom:
        # The last value of TOP at or below t * b.
        lo, hi = 0, len(values)
        while lo < hi:
            mid = (lo + hi) // 2
            if values[mid] <= t * b:
                lo = mid + 1
            else:
                hi = mid
        if lo:
            total += pb * cumulative[lo - 1]
    return total


def _ratio_quantile(top, bottom, q: float) -> float:
    """The least t with P(T / B <= t) >= q: one of the ratios of a TOP value to a
    BOTTOM value, found among them by bisection."""
    ratios = sorted({t / b for t, _ in top for b, _ in bottom})
    lo, hi = 0, len(ratios) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        # A hair of relative slack: t * b must meet t exactly where t = top / b.
        if _ratio_cdf(top, bottom, ratios[mid] * (1 + 1e-12)) >= q:
            hi = mid
        else:
            lo = mid + 1
    return ratios[lo]


def interval(top: list[float], bottom: list[float], family: int = 1) -> tuple[float, float]:
    """The exact bootstrap percentile interval of median(TOP) / median(BOTTOM), at
    LEVEL for a FAMILY of that many comparisons."""
    tail = (1 - LEVEL) / family / 2
    t, b = median_distribution(top), median_distribution(bottom)
    return _ratio_quantile(t, b, tail), _ratio_quantile(t, b, 1 - tail)


def passes_to_settle(ratio: float, low: float, high: float, passes: int) -> int:
    """About how many passes a side would make an interval this wide (LOW..HIGH at
    PASSES a side) exclude 1, if RATIO stayed where it is: its half-width on the log
    scale shrinks as 1 / sqrt(passes) until it falls below |log RATIO|."""
    half = (math.log(high) - math.log(low)) / 2
    seen = abs(math.log(ratio))
    return max(passes + 1, math.ceil(passes * (half / seen) ** 2))


def compare(base: list[float], other: list[float], lower_is_better: bool = True,
            family: int = 1) -> Comparison:
    """OTHER's passes against BASE's (positive figures; LOWER_IS_BETTER for a time,
    not for a rate): how much better OTHER is, how sure, and what that lets a
    verdict say (the module's docstring). FAMILY: how many candidates are judged
    against BASE together."""
    if not base or not other:
        raise ValueError("a comparison needs a pass on each side")
    top, bottom = (base, other) if lower_is_better else (other, base)
    ratio = median(top) / median(bottom)
    passes = min(len(base), len(other))
    near = 1 / (1 + NOISE_MARGIN) < ratio < 1 + NOISE_MARGIN
    if passes < 2:
        outcome = SAME if near else BETTER if ratio > 1 else WORSE
        return Comparison(ratio, None, None, passes, outcome)
    low, high = interval(top, bottom, family)
    if low > 1:
        return Comparison(ratio, low, high, passes, BETTER)
    if high < 1:
        return Comparison(ratio, low, high, passes, WORSE)
    if near:
        return Comparison(ratio, low, high, passes, SAME)
    return Comparison(ratio, low, high, passes, UNDECIDED,
                      passes_to_settle(ratio, low, high, passes))
