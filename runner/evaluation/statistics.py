"""Statistics of timing samples: the median improvement of a candidate over the baseline with a
bias-corrected and accelerated (BCa) bootstrap interval, a permutation test, and how noisy the
machine was (scipy.stats.bootstrap and permutation_test)."""

from __future__ import annotations

import inspect
import warnings
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats


class Improvement(BaseModel):
    """Improvement = median(baseline) / median(candidate) - 1 (0.25 means 25% faster)."""

    baseline_median: float
    candidate_median: float
    improvement: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float  # two-sided permutation test of equal medians
    significant: bool  # the interval excludes zero
    faster: bool  # an improvement: the whole interval lies above zero
    baseline_cv: float  # coefficient of variation: how noisy the baseline samples were
    candidate_cv: float
    samples: int
    # BCa; percentile where BCa cannot be computed (every resampled ratio the same, as with
    # samples that are all equal at the timer's resolution)
    interval: Literal["BCa", "percentile"] = "BCa"

    @property
    def ratio_width(self) -> float:
        """Relative width of the speed ratio's interval: (1 + high) / (1 + low) - 1."""
        return (1.0 + self.ci_high) / (1.0 + self.ci_low) - 1.0

    def summary(self) -> str:
        """One line; the verdict is the interval's (it excludes zero or not), the p-value is shown
        for reference only, so the two are never read as one rule."""
        word = "faster" if self.improvement >= 0 else "slower"
        verdict = "significant: the interval excludes 0" if self.significant else \
            "not significant: the interval includes 0"
        interval = f"{self.confidence:.0%} CI {self.ci_low:+.1%} to {self.ci_high:+.1%}"
        return (f"{abs(self.improvement):.1%} {word} ({interval}, {verdict}; permutation test p={self.p_value:.3g}, "
                f"for reference; {self.samples} runs each; noise: baseline CV {self.baseline_cv:.1%})")


def _cv(x: np.ndarray) -> float:
    m = float(np.mean(x))
    return float(np.std(x, ddof=1) / m) if len(x) > 1 and m else 0.0


# The seed's keyword: `rng` from SciPy 1.15, `random_state` before (a GPU host may have an older SciPy)
_SEED = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"


def _ratio(b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(b, axis=axis) / np.median(c, axis=axis) - 1.0


def _median_gap(b: np.ndarray, c: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(b, axis=axis) - np.median(c, axis=axis)


def _interval(b: np.ndarray, c: np.ndarray, confidence: float, resamples: int,
              seed: int) -> tuple[float, float, Literal["BCa", "percentile"]]:
    """The improvement's bootstrap interval, each group resampled on its own: BCa, or the
    percentile interval where BCa's jackknife or bias correction is undefined."""
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # BCa on degenerate resamples warns and gives NaN: the percentile interval is the answer then
            warnings.simplefilter("ignore", RuntimeWarning)
            warnings.simplefilter("ignore", getattr(stats, "DegenerateDataWarning", RuntimeWarning))
            r = stats.bootstrap((b, c), _ratio, n_resamples=resamples, confidence_level=confidence, method=method,
                                vectorized=True, **{_SEED: np.random.default_rng(seed)})
        low, high = float(r.confidence_interval.low), float(r.confidence_interval.high)
        if np.isfinite(low) and np.isfinite(high):
            return low, high, method
    point = float(_ratio(b, c))  # every resample the same: the interval is the point
    return point, point, "percentile"


def improvement(baseline: list[float], candidate: list[float], confidence: float = 0.95, resamples: int = 10_000,
                seed: int = 0) -> Improvement:
    """Median improvement with a BCa bootstrap interval (each group resampled) and a permutation
    p-value (exact where the permutations are fewer than `resamples`); `faster` when the interval
    lies above zero (the evaluation also asks for evaluation.min_improvement)."""
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    if len(b) < 2 or len(c) < 2:
        raise ValueError(f"need at least 2 samples per side, got {len(b)} and {len(c)}")
    if (b <= 0).any() or (c <= 0).any():
        raise ValueError("timing samples must be positive")
    mb, mc = float(np.median(b)), float(np.median(c))
    low, high, method = _interval(b, c, confidence, resamples, seed)
    p = float(stats.permutation_test((b, c), _median_gap, permutation_type="independent", n_resamples=resamples,
                                     vectorized=True, alternative="two-sided",
                                     **{_SEED: np.random.default_rng(seed)}).pvalue)
    return Improvement(baseline_median=mb, candidate_median=mc, improvement=mb / mc - 1.0, ci_low=low,
                       ci_high=high, confidence=confidence, p_value=p,
                       significant=bool(low > 0.0 or high < 0.0), faster=bool(low > 0.0),
                       baseline_cv=_cv(b), candidate_cv=_cv(c), samples=min(len(b), len(c)), interval=method)
