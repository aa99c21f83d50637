"""Hot-kernel selection: the smallest set of kernels covering alpha of total kernel time."""

from __future__ import annotations

import math
from collections.abc import Collection

import numpy as np
import pandas as pd
from pydantic import BaseModel

from runner.base.errors import AnalysisError
from runner.profiles.model import MANGLED
from runner.scan.cuda_source import kernel_key

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
    mangled: str | None = None  # its symbol, where the profile or the trace recorded it


def kernel_times(launches: pd.DataFrame) -> pd.DataFrame:
    """Per-kernel total duration and launch count, longest first, ties broken by name."""
    if launches.empty:
        raise AnalysisError("no kernel launches in the profile; nothing to rank")
    durations = pd.to_numeric(launches["duration_ns"], errors="coerce")
    if durations.isna().all():
        raise AnalysisError("the profile has no kernel durations (gpu__time_duration.sum); "
                            "export the raw page or use a .ncu-rep report")
    symbols = launches[MANGLED] if MANGLED in launches.columns else pd.Series(None, index=launches.index)
    df = (pd.DataFrame({"kernel": launches["kernel"], "ns": durations.fillna(0.0), MANGLED: symbols})
          .groupby("kernel", sort=False)
          .agg(total_ns=("ns", "sum"), launches=("ns", "size"), mangled=(MANGLED, "first"))
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
                              share=share, cumulative_share=min(cumulative, 1.0), hot=hot,
                              mangled=row.mangled if isinstance(row.mangled, str) and row.mangled else None))
    return out


def widen_to_editable(kernels: list[KernelTime], editable: Collection[str], alpha: float) -> list[KernelTime]:
    """The ranked kernels with, when no hot kernel is `editable` (defined in the app's sources; the
    others are a library's or generated code), also hot the smallest prefix of the editable ones
    that covers `alpha` of their own time: there is then code an edit can act on. The library's
    kernels stay hot, so that their share is known. Unchanged when a hot kernel is editable or
    none is. Returns copies."""
    out = [k.model_copy() for k in kernels]
    if any(k.hot and k.kernel in editable for k in out):
        return out
    own = [k for k in out if k.kernel in editable and k.total_ns > 0]
    total = sum(k.total_ns for k in own)
    cumulative = 0.0
    for k in own:
        k.hot = True
        cumulative += k.total_ns / total
        if cumulative + _EPS >= alpha:
            break
    return out


def spelled_as(kernel: str, symbol: object, by_symbol: dict[str, str], by_key: dict[str, str]) -> str | None:
    """The name another tool gives `kernel`, from `by_symbol` (symbol -> name) and `by_key`
    (kernel_key -> name) of that tool's kernels; None when it has no such kernel. Where both sides
    know symbols, only the symbol says (demanglers spell template arguments differently, and names
    without parameters would join overloads); else the name without parameters or spaces."""
    if isinstance(symbol, str) and symbol and by_symbol:
        return by_symbol.get(symbol)
    return by_key.get(kernel_key(kernel))


def in_profile_spelling(timing: pd.DataFrame, profiled: pd.DataFrame) -> pd.DataFrame:
    """`timing`'s launches with each kernel named as `profiled` (a profile's launches) names it.

    The tracer's names come from the C++ runtime's demangler, ncu's from its own; they differ in
    spacing, `const T1 *` against `const float*`, and template arguments (spelled_as). Kernels the
    profile does not hold keep their names.
    """
    by_symbol: dict[str, str] = {}
    if MANGLED in profiled.columns:
        by_symbol = {m: k for m, k in zip(profiled[MANGLED], profiled["kernel"], strict=True)
                     if isinstance(m, str) and m}
    by_key = {kernel_key(k): k for k in profiled["kernel"]}
    # a timing pass holds millions of launches of a few kernels: each (name, symbol) is looked up once
    names, name_of = pd.factorize(timing["kernel"], use_na_sentinel=False)
    if MANGLED in timing.columns:
        symbols, symbol_of = pd.factorize(timing[MANGLED], use_na_sentinel=False)
    else:
        symbols, symbol_of = np.zeros(len(timing), dtype=np.intp), np.array([None], dtype=object)
    pairs, pair_of = pd.factorize(names.astype(np.int64) * len(symbol_of) + symbols)
    spelled = np.array([spelled_as(name_of[p // len(symbol_of)], symbol_of[p % len(symbol_of)], by_symbol, by_key)
                        or name_of[p // len(symbol_of)] for p in pair_of.tolist()] or [""], dtype=object)
    return timing.assign(kernel=spelled[pairs] if len(timing) else timing["kernel"])
