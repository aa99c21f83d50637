"""Statistics of timing samples: the median improvement of a candidate over the baseline with a
bootstrap confidence interval, a permutation test, and how noisy the machine was."""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel


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


def improvement(baseline: list[float], candidate: list[float], confidence: float = 0.95, resamples: int = 10_000,
                seed: int = 0) -> Improvement:
    """Median improvement with a percentile-bootstrap interval (resampling each group) and a
    permutation p-value; `faster` when the interval lies above zero (the evaluation also asks for
    evaluation.min_improvement)."""
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(candidate, dtype=float)
    if len(b) < 2 or len(c) < 2:
        raise ValueError(f"need at least 2 samples per side, got {len(b)} and {len(c)}")
    if (b <= 0).any() or (c <= 0).any():
        raise ValueError("timing samples must be positive")
    rng = np.random.default_rng(seed)
    mb, mc = float(np.median(b)), float(np.median(c))
    bi = rng.integers(0, len(b), size=(resamples, len(b)))
    ci = rng.integers(0, len(c), size=(resamples, len(c)))
    boot = np.median(b[bi], axis=1) / np.median(c[ci], axis=1) - 1.0
    alpha = 1.0 - confidence
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    # Permutation test on the difference of medians.
    pooled = np.concatenate([b, c])
    observed = abs(mb - mc)
    perms = np.argsort(rng.random((resamples, len(pooled))), axis=1)
    shuffled = pooled[perms]
    diffs = np.abs(np.median(shuffled[:, :len(b)], axis=1) - np.median(shuffled[:, len(b):], axis=1))
    p = float((np.sum(diffs >= observed - 1e-15) + 1) / (resamples + 1))
    return Improvement(baseline_median=mb, candidate_median=mc, improvement=mb / mc - 1.0, ci_low=float(low),
                       ci_high=float(high), confidence=confidence, p_value=p,
                       significant=bool(low > 0.0 or high < 0.0), faster=bool(low > 0.0),
                       baseline_cv=_cv(b), candidate_cv=_cv(c),
                       samples=min(len(b), len(c)))
