"""Hot-kernel selection: the smallest set of kernels covering alpha of total kernel time."""

from __future__ import annotations

import math
from collections.abc import Collection

import numpy as np
import pandas as pd
from pydantic import BaseModel

from runner.base.errors import AnalysisError
from runner.profiles.model import MANGLED
from runner.scan.cuda_source import by_function, function_name, kernel_key, short_kernel_name, template_arguments

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


class HotFunction(BaseModel):
    """A source function of the hot kernels: every instance of it among the ranked kernels (a
    template's instantiations; a plain kernel is its only instance), the hot ones, and those that
    the profiles hold (their evidence stands for the others: one source, one edit)."""

    function: str  # function_name: namespaces and name, without template arguments
    instances: int  # its kernels in the ranking, hot or not
    total_ns: float  # their time
    launches: int
    share: float  # of all kernel time
    hot: list[str]  # its hot kernels, hottest first
    profiled: list[str]  # those of them the profiles hold, hottest first


def hot_functions(kernels: list[KernelTime], profiled: Collection[str]) -> list[HotFunction]:
    """The source functions (function_key) of the hot `kernels`, in the order of their hottest hot
    instance, with the time of all their instances; `profiled`: the kernels profiled in depth."""
    times = {k.kernel: k for k in kernels}
    groups = [[times[n] for n in names] for names in by_function(times).values()]
    order = {k.kernel: i for i, k in enumerate(kernels)}
    out = [HotFunction(function=function_name(members[0].kernel), instances=len(members),
                       total_ns=sum(k.total_ns for k in members), launches=sum(k.launches for k in members),
                       share=sum(k.share for k in members), hot=[k.kernel for k in members if k.hot],
                       profiled=[k.kernel for k in members if k.hot and k.kernel in profiled])
           for members in groups if any(k.hot for k in members)]
    return sorted(out, key=lambda f: order[f.hot[0]])


def instance_label(kernel: str) -> str:
    """An instance by its template arguments (`<float, 256>`); a kernel that has none by its name."""
    args = template_arguments(kernel)
    return f"<{', '.join(args)}>" if args else short_kernel_name(kernel)


def profiled_instances(hot: list[str], most: int, editable: Collection[str] = ()) -> list[str]:
    """The hot kernels (hottest first) a targeted collection profiles, at most `most`, in the order
    of `hot`: the hottest instance of each source function (function_key) first, then the next
    hottest of each, round by round. The instances of one template are one source to edit: every
    function gets evidence of its own before any gets a second instance profiled. Within a round the
    functions `editable` names an instance of (those the sources define) come first, hottest first,
    then the others (a library's): where more functions are hot than `most`, the ones an edit can act
    on are not crowded out."""
    if most < 1:
        raise ValueError(f"at least one kernel is profiled, got {most}")
    ordered = sorted(by_function(hot).values(), key=lambda members: not any(m in editable for m in members))
    chosen: set[str] = set()
    depth = 0
    while len(chosen) < min(most, len(hot)):
        for members in ordered:
            if depth < len(members) and len(chosen) < most:
                chosen.add(members[depth])
        depth += 1
    return [k for k in hot if k in chosen]


def hot_kernels_line(hot: list[str]) -> str:
    """The hot kernels in one line, hottest first: each kernel's name, but a function with several
    hot instances once, with their count (55 instances of one template are not 55 names)."""
    return ", ".join(members[0] if len(members) == 1 else f"{function_name(members[0])} ({len(members)} instances)"
                     for members in by_function(hot).values())


def left_out_of_profiling(functions: list[HotFunction], most: int) -> str:
    """What a targeted collection of at most `most` kernels (profiled_instances; `functions` with
    those as their `profiled`) leaves out of the hot kernels, and why, in one line; '' when it
    profiles every one."""
    hot = sum(len(f.hot) for f in functions)
    chosen = sum(len(f.profiled) for f in functions)
    if chosen == hot:
        return ""
    parts = [f"{f.function}: {len(f.profiled)} of its {len(f.hot)} hot instances, the hottest (the other "
             f"{len(f.hot) - len(f.profiled)} are the same source; the evidence of these stands for them)"
             for f in functions if f.profiled and len(f.profiled) < len(f.hot)]
    whole = [f for f in functions if not f.profiled]
    if whole:
        parts.append("left out, without evidence of their own: " + ", ".join(
            f"{f.function} ({f.share:.1%} of kernel time)" for f in whole))
    return (f"profiling {chosen} of the {hot} hot kernels in depth (profiling.max_targeted_kernels: {most}; each "
            "profiled kernel is replayed 20 or more times, and a report of many is slow to write and to read): "
            + "; ".join(parts))


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
