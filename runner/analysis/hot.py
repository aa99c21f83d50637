"""Hot-kernel selection: the smallest set of kernels covering alpha of total kernel time."""

from __future__ import annotations

import math

import pandas as pd
from pydantic import BaseModel

from runner.base.errors import AnalysisError

# Cumulative shares are sums of floats; a set that covers alpha up to rounding covers it.
_EPS = 1e-12


class KernelTime(BaseModel):
    """One kernel's time over all its launches."""

    kernel: str
    total_ns: float
    launches: int
    share: float
    cumulative_share: float
    hot: bool


def kernel_times(launches: pd.DataFrame) -> pd.DataFrame:
    """Per-kernel total duration and launch count, longest first, ties broken by name."""
    if launches.empty:
        raise AnalysisError("no kernel launches in the profile; nothing to rank")
    durations = pd.to_numeric(launches["duration_ns"], errors="coerce")
    if durations.isna().all():
        raise AnalysisError("the profile has no kernel durations (gpu__time_duration.sum); "
                            "export the raw page or use a .ncu-rep report")
    df = (pd.DataFrame({"kernel": launches["kernel"], "ns": durations.fillna(0.0)})
          .groupby("kernel", sort=False)
          .agg(total_ns=("ns", "sum"), launches=("ns", "size"))
          .reset_index())
    return df.sort_values(["total_ns", "kernel"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def select_hot_kernels(launches: pd.DataFrame, alpha: float) -> list[KernelTime]:
    """Rank kernels by total time; mark hot the smallest prefix whose share reaches `alpha`.

    Ties are ranked by name, so the choice is deterministic. Kernels with zero time are never hot.
    If every kernel took zero time there is nothing to choose from: AnalysisError.
    """
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    df = kernel_times(launches)
    total = float(df["total_ns"].sum())
    if total <= 0.0 or not math.isfinite(total):
        raise AnalysisError("every kernel has zero duration; hot kernels cannot be chosen "
                            "(was the profile collected with timing metrics?)")
    out: list[KernelTime] = []
    cumulative = 0.0
    covered = False
    for row in df.itertuples(index=False):
        share = float(row.total_ns) / total
        hot = not covered and row.total_ns > 0
        cumulative += share
        if hot and cumulative + _EPS >= alpha:
            covered = True
        out.append(KernelTime(kernel=row.kernel, total_ns=float(row.total_ns), launches=int(row.launches),
                              share=share, cumulative_share=min(cumulative, 1.0), hot=hot))
    return out
