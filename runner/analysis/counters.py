"""Counter selection by ensemble orthogonal matching pursuit (eOMP).

Given N profiling runs x C counters and the runtime of each run, pick the few counters that best
explain runtime: z-score the counters, start the residual at the (centred) runtime, and repeatedly
take |D^T r| for the counters not yet chosen, draw one at random from the top-tau, refit least
squares on the chosen set and update the residual, until kappa are chosen. Repeating this M times
with a seeded generator and averaging the fitted weights (zero where a counter was not chosen)
gives a stable, reproducible ranking.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from runner.base.config import CountersConfig
from runner.base.errors import AnalysisError, ProfileFormatError
from runner.profiles.model import PCSAMP_METRIC_TO_REASON, STALL_MEANING, WORK_METRICS


class SelectedCounter(BaseModel):
    """One counter eOMP kept, with its averaged weight (z-score units of runtime per z of counter)."""

    metric: str
    weight: float
    frequency: float  # share of ensemble members that chose it
    correlation: float  # Pearson correlation with runtime over the runs
    description: str | None = None
    description_by: Literal["NVIDIA", "Optimas"] | None = None  # whose words `description` is
    moves_with: int = 0  # other candidate counters within |r| > GROUP_R of this one across the runs
    moves_with_examples: list[str] = []  # a few of them, by name
    work: bool = False  # the instruction count, chosen first because runtime follows it (WORK_FIRST_R)


class CounterSelection(BaseModel):
    """The result of eOMP over one kernel's runs."""

    kernel: str | None
    runs: int
    candidates: int  # groups of counters left after dropping constant, missing, excluded and duplicate columns
    counters: list[SelectedCounter]
    source: str | None = None  # what the runs are: sizes, launch configurations, code versions
    device: str | None = None  # the runs' GPU, set only when another than the profile's


_ROLLUP_PREFERENCE = {"sum": 0, "avg": 1, "max": 2, "min": 3}


def _rollup_key(name: str) -> tuple[str, int]:
    """('dram__bytes.{}.per_second', rank of 'sum') for 'dram__bytes.sum.per_second'."""
    parts = name.split(".")
    for i, p in enumerate(parts[1:], start=1):
        if p in _ROLLUP_PREFERENCE:
            return ".".join(parts[:i] + ["{}"] + parts[i + 1:]), _ROLLUP_PREFERENCE[p]
    return name, 0


def prepare_matrix(metrics: pd.DataFrame, exclude: list[str] = ()) -> pd.DataFrame:
    """The candidate matrix: excluded, missing and constant columns dropped, and redundant copies
    collapsed.

    ncu reports most counters under several rollups (.sum, .avg, .min, .max) and some under two
    names; across runs these columns are exact multiples of each other and would crowd the
    selection with one fact. One column is kept per rollup family (sum, else avg, max, min), and
    of columns that are equal after z-scoring (or equal up to sign) the first name in order.
    """
    pattern = re.compile("|".join(f"(?:{p})" for p in exclude)) if exclude else None
    keep = [c for c in metrics.columns if not (pattern and pattern.search(c))]
    x = metrics[keep].astype("float64")
    x = x.loc[:, x.notna().all(axis=0).to_numpy()]
    # One rollup per family, chosen before constant columns go: a family whose .sum is constant
    # (zero in every run) is constant, and its .max must not stand in for it with noise.
    best: dict[str, tuple[int, str]] = {}
    for c in x.columns:
        family, rank = _rollup_key(c)
        if family not in best or rank < best[family][0]:
            best[family] = (rank, c)
    x = x[[c for c in x.columns if best[_rollup_key(c)[0]][1] == c]]
    std = x.std(axis=0, ddof=0).to_numpy()
    x = x.loc[:, std > 1e-12 * np.maximum(1.0, np.abs(x.mean(axis=0).to_numpy()))]
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=0)
    seen: set[bytes] = set()
    unique = []
    # the instruction counts first: where another count equals one of them, the count of work stays
    for c in sorted(x.columns, key=lambda c: WORK_METRICS.index(c) if c in WORK_METRICS else len(WORK_METRICS)):
        v = np.round(z[c].to_numpy(), 9) + 0.0  # + 0.0 turns -0.0 into 0.0
        key, neg = v.tobytes(), (-v + 0.0).tobytes()
        if key in seen or neg in seen:
            continue
        seen.add(key)
        unique.append(c)
    kept = set(unique)
    return x[[c for c in x.columns if c in kept]]


PER = " / "  # joins a count and the work metric in a derived counter's name
GROUP_R = 0.999  # counters this correlated across the runs say the same thing: one stands for all
# Where runtime follows the instruction count this closely, the runs differ mainly in size: the
# count is chosen first and stands for every counter that follows it within WORK_R, so the other
# choices explain what size does not.
WORK_FIRST_R = 0.9
WORK_R = 0.99


def _extensive(name: str) -> bool:
    """A count that grows with the work done: a `.sum` rollup with no rate or ratio after it."""
    return name.endswith(".sum") or name in _SOURCE_COUNTERS


def work_metric(metrics: pd.DataFrame) -> str | None:
    """The instruction count the runs hold in every run, or None."""
    for w in WORK_METRICS:
        if w in metrics.columns:
            v = pd.to_numeric(metrics[w], errors="coerce")
            if v.notna().all() and (v > 0).all():
                return w
    return None


def per_work(metrics: pd.DataFrame) -> pd.DataFrame:
    """The metrics with `<count> / <instructions>` added for every count that grows with the work.

    In a size sweep every count rises with the problem and correlates ~1.0 with runtime, which says
    nothing but "bigger runs take longer"; per instruction, a count that still moves with runtime
    says something about efficiency (more bank conflicts or sector misses per instruction).
    """
    work = work_metric(metrics)
    if work is None:
        return metrics
    counts = [c for c in metrics.columns if _extensive(c) and c not in WORK_METRICS]
    if not counts:
        return metrics
    derived = metrics[counts].apply(pd.to_numeric, errors="coerce").div(
        pd.to_numeric(metrics[work], errors="coerce"), axis=0)
    derived.columns = [f"{c}{PER}{work}" for c in counts]
    return pd.concat([metrics, derived], axis=1)


def counter_value(values: pd.Series, name: str) -> float | None:
    """A counter's value in one launch's metrics, a derived `<count> / <instructions>` included."""
    num, sep, den = name.partition(PER)
    try:
        v = float(values[num]) / float(values[den]) if sep else float(values[name])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return v if np.isfinite(v) else None


def _groups(z: np.ndarray, corr: np.ndarray, names: list[str]) -> list[list[int]]:
    """Columns of `z` (z-scored) that move together, |r| > GROUP_R: each group led by the column
    closest to runtime (`corr`), then a measured count before a derived one, then by name."""
    n = z.shape[0]
    order = sorted(range(len(names)), key=lambda j: (-round(abs(float(corr[j])), 9), PER in names[j], names[j]))
    rank = {j: i for i, j in enumerate(order)}
    taken = np.zeros(len(names), dtype=bool)
    groups = []
    for j in order:
        if taken[j]:
            continue
        members = np.flatnonzero((np.abs(z.T @ z[:, j]) / n > GROUP_R) & ~taken)
        taken[members] = True
        taken[j] = True
        groups.append([j] + sorted((int(k) for k in members if k != j), key=rank.__getitem__))
    return groups


def _work_first(groups: list[list[int]], work: int, z: np.ndarray) -> list[list[int]]:
    """The groups with the work metric's group first, led by it, holding every group whose leader
    follows the work metric within WORK_R."""
    n = z.shape[0]
    follows = np.abs(z.T @ z[:, work]) / n > WORK_R
    first = [work]
    rest = []
    for g in groups:
        if work in g or follows[g[0]]:
            first += [k for k in g if k != work]
        else:
            rest.append(g)
    return [first] + rest


def eomp(x: np.ndarray, y: np.ndarray, settings: CountersConfig, forced: list[int] = ()
         ) -> tuple[np.ndarray, np.ndarray]:
    """Run eOMP on a z-scored N x C matrix `x` and runtime `y`, with `settings`'s kappa (counters per
    member), tau (the pool each pick is drawn from), ensemble (members) and seed.

    Returns (mean weight per counter, share of members that chose it). Weights are least-squares
    coefficients on z-scored columns against z-scored y, averaged over the ensemble's members.
    Columns in `forced` are chosen first in every member.
    """
    kappa, tau, ensemble = settings.kappa, settings.tau, settings.ensemble
    n, c = x.shape
    if n < 2 or c == 0:
        raise AnalysisError(f"eOMP needs at least 2 runs and 1 counter, got {n} runs and {c} counters")
    k = min(kappa, c, n - 1) if n > 1 else 1
    yc = (y - y.mean()) / (y.std() or 1.0)
    rng = np.random.default_rng(settings.seed)
    weights = np.zeros(c)
    chosen_count = np.zeros(c)
    forced = list(forced)[:k]
    for _ in range(ensemble):
        selected: list[int] = list(forced)
        available = np.ones(c, dtype=bool)
        available[selected] = False
        beta = np.zeros(0)
        if selected:
            beta, *_ = np.linalg.lstsq(x[:, selected], yc, rcond=None)
        r = yc - x[:, selected] @ beta if selected else yc.copy()
        for _ in range(k - len(selected)):
            score = np.abs(x.T @ r)
            score[~available] = -np.inf
            pool_size = min(tau, int(available.sum()))
            pool = np.argpartition(-score, pool_size - 1)[:pool_size]
            pick = int(pool[rng.integers(pool_size)])
            selected.append(pick)
            available[pick] = False
            sub = x[:, selected]
            beta, *_ = np.linalg.lstsq(sub, yc, rcond=None)
            r = yc - sub @ beta
        weights[selected] += beta
        chosen_count[selected] += 1
    return weights / ensemble, chosen_count / ensemble


def select_counters(metrics: pd.DataFrame, runtime: pd.Series | np.ndarray, settings: CountersConfig | None = None,
                    descriptions: dict[str, str] | None = None, kernel: str | None = None) -> CounterSelection:
    """Pick the `settings.kappa` counters that best explain `runtime` across runs (rows of `metrics`), by
    eOMP with `settings` (analysis.counters: its exclusions, at least its min_runs runs; None: the
    defaults, excluding nothing)."""
    settings = settings or CountersConfig(exclude=[])
    kappa, min_runs = settings.kappa, settings.min_runs
    y = np.asarray(runtime, dtype=float)
    if len(y) != len(metrics):
        raise ValueError(f"{len(metrics)} metric rows but {len(y)} runtimes")
    if len(y) < min_runs:
        raise AnalysisError(f"counter selection needs at least {min_runs} profiling runs of the kernel, "
                            f"got {len(y)}; profile more configurations (analysis.counters.min_runs)")
    if np.isnan(y).any() or np.std(y) == 0:
        raise AnalysisError("runtime (gpu__time_duration.sum) is missing or identical in every run; "
                            "counter selection needs runs that differ in runtime")
    cand = prepare_matrix(per_work(metrics), list(settings.exclude))
    if cand.shape[1] == 0:
        raise AnalysisError("no counter varies across the runs; nothing to select from")
    xv = cand.to_numpy()
    z = (xv - xv.mean(axis=0)) / xv.std(axis=0)
    yc = (y - y.mean()) / y.std()
    corr = (z * yc[:, None]).mean(axis=0)
    names = list(cand.columns)
    groups = _groups(z, corr, names)
    work = work_metric(metrics)
    forced = []
    if work in names and abs(corr[names.index(work)]) >= WORK_FIRST_R:
        groups = _work_first(groups, names.index(work), z)
        forced = [0]
    leaders = [g[0] for g in groups]
    w, freq = eomp(z[:, leaders], y, settings, forced)
    order = sorted(np.flatnonzero(freq > 0), key=lambda i: (-abs(w[i]), -freq[i], names[leaders[i]]))[:kappa]
    desc = descriptions or {}
    out = []
    for i in order:
        j, rest = leaders[i], groups[i][1:]
        name = names[j]
        out.append(SelectedCounter(metric=name, weight=float(w[i]), frequency=float(freq[i]),
                                   correlation=float(corr[j]), description=describe(name, desc),
                                   description_by=described_by(name, desc), moves_with=len(rest),
                                   moves_with_examples=[names[k] for k in rest[:3]], work=bool(forced) and i == 0))
    return CounterSelection(kernel=kernel, runs=len(y), candidates=len(groups), counters=out)


_ROLLUPS = ("sum", "avg", "min", "max")
# Source-level counters ncu collects per instruction; their scalar is the sum over instructions and
# `--query-metrics` does not list them.
_SOURCE_COUNTERS = {
    "inst_executed": "# of warp instructions executed (source counter, summed over instructions)",
    "thread_inst_executed": "# of thread instructions executed (source counter, summed over instructions)",
}


def described_by(metric: str, dictionary: dict[str, str]) -> Literal["NVIDIA", "Optimas"] | None:
    """Whose words `describe` gives: NVIDIA's metric list (with the rollup spelled out), or this
    tool's own (source counters, PC-sampling reasons, counts per instruction)."""
    if PER in metric or metric in _SOURCE_COUNTERS or metric.startswith("smsp__pcsamp_warps_issue_stalled_"):
        return "Optimas" if describe(metric, dictionary) else None
    return "NVIDIA" if describe(metric, dictionary) else None


def describe(metric: str, dictionary: dict[str, str]) -> str | None:
    """The vendor's description of a metric name with suffixes (`dram__bytes.sum.per_second`).

    `ncu --query-metrics` lists base names; the rollup and submetric suffixes are explained here.
    A derived `<count> / <instructions>` is described as the count per warp instruction.
    """
    num, sep, den = metric.partition(PER)
    if sep:
        base = describe(num, dictionary)
        return f"{base or num}, per warp instruction executed ({den})"
    if metric in dictionary:
        return dictionary[metric] or None
    if metric in _SOURCE_COUNTERS:
        return _SOURCE_COUNTERS[metric]
    if metric.startswith("smsp__pcsamp_warps_issue_stalled_"):
        suffix = metric[len("smsp__pcsamp_warps_issue_stalled_"):]
        not_issued = suffix.endswith("_not_issued")
        reason = PCSAMP_METRIC_TO_REASON.get(suffix.removesuffix("_not_issued"))
        if reason:
            return (f"PC samples of warps stalled: {STALL_MEANING[reason]}"
                    + (" (samples where no instruction issued)" if not_issued else ""))
    # Triage metrics carry a "<UNIT>.<Configuration>." prefix ("TPC.TriageCompute.sm__...").
    m = re.match(r"^[A-Z_]+\.[A-Za-z]+\.(.+)$", metric)
    if m:
        return describe(m.group(1), dictionary)
    parts = metric.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        base = ".".join(parts[:cut])
        if base in dictionary and dictionary[base]:
            suffix = parts[cut:]
            words = []
            if suffix and suffix[0] in _ROLLUPS:
                words.append({"sum": "total", "avg": "average per unit", "min": "minimum over units",
                              "max": "maximum over units"}[suffix[0]])
                suffix = suffix[1:]
            words += [s.replace("_", " ") for s in suffix]
            return dictionary[base] + (f" ({', '.join(words)})" if words else "")
    return None


def load_metric_dictionary(path: Path | str | None = None) -> dict[str, str]:
    """Metric name -> description from `ncu --query-metrics --csv` output (.csv or .csv.gz).

    With no path, the dictionary captured on an H200 with Nsight Compute 2025.3.1 (bundled) is used.
    """
    if path is None:
        raw = resources.files("runner").joinpath("data/ncu_metrics_h200.csv.gz").read_bytes()
        text = gzip.decompress(raw).decode("utf-8")
        where = "bundled ncu_metrics_h200.csv.gz"
    else:
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise ProfileFormatError(p, f"cannot read ({e.strerror})", "`ncu --query-metrics --csv` output") from None
        text = (gzip.decompress(data) if p.suffix == ".gz" else data).decode("utf-8", errors="replace")
        where = str(p)
    rows = csv.reader(io.StringIO(text))
    header = next(rows, [])
    if len(header) < 4 or header[0] != "Metric name" or "Metric description" not in header:
        raise ProfileFormatError(where, "not a metric list", "the output of `ncu --query-metrics --csv` "
                                 "(columns 'Metric name', ..., 'Metric description')",
                                 "Produce it with: ncu --query-metrics --csv > metrics.csv")
    d = header.index("Metric description")
    return {r[0]: r[d] for r in rows if len(r) > d}
