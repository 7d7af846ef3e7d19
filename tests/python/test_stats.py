"""The statistics every verdict shares (locklab/stats.py): the exact bootstrap against
brute force, the interval's width with few passes and for a family, and the outcomes."""
import itertools
import statistics

import pytest

from locklab import stats


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0], [1.0, 2.0, 3.0, 4.0], [1.0, 5.0, 2.0, 2.0],
                                    [1.0, 2.0, 3.0, 4.0, 7.0], [1, 2, 3, 4, 5, 6], [4.0]])
def test_the_median_of_a_resample_weighed_exactly(values):
    n = len(values)
    brute: dict[float, float] = {}
    for draw in itertools.product(values, repeat=n):
        m = statistics.median(draw)
        brute[m] = brute.get(m, 0.0) + 1 / n ** n
    exact = dict(stats.median_distribution(values))
    assert exact.keys() == brute.keys()
    for value, p in brute.items():
        assert exact[value] == pytest.approx(p, abs=1e-12)


def test_three_passes_give_the_range_and_five_a_narrower_interval():
    base, other = [19.0, 20.0, 21.0], [9.8, 10.0, 10.2]
    c = stats.compare(base, other)   # times: other is twice as fast
    assert c.ratio == pytest.approx(2.0)
    assert (c.low, c.high) == pytest.approx((19 / 10.2, 21 / 9.8))
    assert c.outcome == stats.BETTER and c.passes == 3
    base5, other5 = [18.0, 19.0, 20.0, 21.0, 22.0], [9.6, 9.8, 10.0, 10.2, 10.4]
    c5 = stats.compare(base5, other5)
    assert 18 / 10.4 < c5.low < c5.ratio < c5.high < 22 / 9.6
    # Judged as one of six candidates, the interval widens toward the range.
    wide = stats.compare(base5, other5, family=6)
    assert wide.low <= c5.low and wide.high >= c5.high and (wide.low, wide.high) != (c5.low, c5.high)


def test_outcomes_and_the_passes_that_would_settle():
    # A rate, higher is better: 5% up inside the noise is the same.
    same = stats.compare([100, 90, 110], [105, 95, 115], lower_is_better=False)
    assert same.outcome == stats.SAME and same.settle is None and not same.apart
    worse = stats.compare([100, 101, 99], [50, 51, 49], lower_is_better=False)
    assert worse.outcome == stats.WORSE and worse.apart and worse.ratio == pytest.approx(0.5)
    unsure = stats.compare([1000.0, 2400.0, 4280.0], [600.0, 1200.0, 2000.0])
    assert unsure.outcome == stats.UNDECIDED and unsure.settle == 12
    # One pass a side: no interval; the noise margin decides.
    assert stats.compare([100.0], [80.0]).outcome == stats.BETTER
    assert stats.compare([100.0], [95.0]).outcome == stats.SAME
    assert stats.compare([100.0], [95.0]).low is None
