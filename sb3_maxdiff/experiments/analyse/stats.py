"""
Statistics of the paper's protocol: Welch's unpaired two-sided t-test between two
methods, on pooled evaluation episodes and on per-seed means, and mean +/- std summaries; and the
Mann-Whitney rank test, which does not assume normal per-seed values. ``report`` and ``tabulate`` both take
their numbers from here: every std is the sample standard deviation (ddof 1, :data:`STD_DDOF`).
"""

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class WelchResult(NamedTuple):
    """Welch's t statistic, its Welch-Satterthwaite degrees of freedom and the two-sided p-value."""

    statistic: float
    dof: float
    pvalue: float


# the std of every summary: the sample one, an unbiased variance over few seeds (the paper's error bars are the
# population std, ddof 0: smaller by a factor sqrt((n - 1) / n), 0.89 at 5 seeds)
STD_DDOF = 1


class Summary(NamedTuple):
    mean: float
    std: float
    n: int


def summarize(values: Sequence[float]) -> Summary:
    """Mean and sample standard deviation (ddof 1; NaN for fewer than two values) of ``values``."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return Summary(math.nan, math.nan, 0)
    std = float(array.std(ddof=STD_DDOF)) if array.size > STD_DDOF else math.nan
    return Summary(float(array.mean()), std, int(array.size))


def nan_mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Mean and sample std (ddof 1) over the first axis of ``values`` (seeds x points of a curve), ignoring NaN (a seed
    with no value there yet): NaN where no seed has a value, and std NaN where only one has.
    """
    values = np.asarray(values, dtype=float)
    count = np.sum(~np.isnan(values), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(values, axis=0) / count
        squares = np.nansum((values - mean) ** 2, axis=0)
        std = np.sqrt(squares / (count - STD_DDOF))
    mean = np.where(count > 0, mean, np.nan)
    return mean, np.where(count > STD_DDOF, std, np.nan)


def welch_ttest(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """
    Welch's unpaired two-sided t-test of equal means (no equal-variance assumption); the same numbers
    as ``scipy.stats.ttest_ind(a, b, equal_var=False)``.

    t = (mean_a - mean_b) / sqrt(s_a^2 / n_a + s_b^2 / n_b) with sample variances s^2 (ddof 1), and
    dof = (v_a + v_b)^2 / (v_a^2 / (n_a - 1) + v_b^2 / (n_b - 1)) with v = s^2 / n. Undefined (NaN)
    with fewer than two values on a side or when both sides are constant.
    """
    from scipy import special  # scipy comes with the "extra" install

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2 or y.size < 2:
        return WelchResult(math.nan, math.nan, math.nan)
    var_x, var_y = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    if var_x + var_y == 0:
        return WelchResult(math.nan, math.nan, math.nan)
    statistic = (x.mean() - y.mean()) / math.sqrt(var_x + var_y)
    dof = (var_x + var_y) ** 2 / (var_x**2 / (x.size - 1) + var_y**2 / (y.size - 1))
    pvalue = 2.0 * special.stdtr(dof, -abs(statistic))  # two-sided tail of Student's t
    return WelchResult(float(statistic), float(dof), float(min(pvalue, 1.0)))


def mann_whitney_pvalue(a: Sequence[float], b: Sequence[float]) -> float:
    """
    Two-sided p-value of the Mann-Whitney U test that ``a`` and ``b`` come from the same distribution
    (``scipy.stats.mannwhitneyu``: exact for small samples without ties). NaN with an empty side or when
    every value is the same.
    """
    from scipy import stats

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0 or np.ptp(np.concatenate([x, y])) == 0:
        return math.nan
    return float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)


class SeedComparison(NamedTuple):
    """Two groups of per-seed values: each side's summary, Welch's test and the Mann-Whitney p-value."""

    a: Summary
    b: Summary
    welch: WelchResult
    mann_whitney: float


def compare_seeds(a: Sequence[float], b: Sequence[float]) -> SeedComparison:
    """
    One value per seed on each side (NaN where a seed has none, as a run with no finished episode yet: dropped),
    summarized and compared with Welch's test and the Mann-Whitney test (n = seeds).
    """
    x, y = ([value for value in side if not math.isnan(value)] for side in (a, b))
    return SeedComparison(summarize(x), summarize(y), welch_ttest(x, y), mann_whitney_pvalue(x, y))


class Comparison(NamedTuple):
    """Method A against method B on pooled evaluation episodes and on per-seed means."""

    pooled: WelchResult
    per_seed: WelchResult


def compare(episodes_a: Sequence[Sequence[float]], episodes_b: Sequence[Sequence[float]]) -> Comparison:
    """
    Welch's test between two methods given, for each, the evaluation returns of each seed (one list per
    seed): once on all episodes pooled (what the paper did, n = seeds x episodes) and once on the
    per-seed means (n = seeds), which does not treat episodes of one policy as independent samples.
    """
    pooled_a = [value for seed in episodes_a for value in seed]
    pooled_b = [value for seed in episodes_b for value in seed]
    means_a = [float(np.mean(seed)) for seed in episodes_a if len(seed)]
    means_b = [float(np.mean(seed)) for seed in episodes_b if len(seed)]
    return Comparison(welch_ttest(pooled_a, pooled_b), welch_ttest(means_a, means_b))


def format_pvalue(pvalue: float) -> str:
    """As in the paper's table: '<0.001' below a thousandth, three significant digits otherwise."""
    if math.isnan(pvalue):
        return "n/a"
    return "<0.001" if pvalue < 1e-3 else f"{pvalue:.3g}"
