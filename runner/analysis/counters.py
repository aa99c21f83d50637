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

import numpy as np
import pandas as pd
from pydantic import BaseModel

from runner.base.errors import AnalysisError, ProfileFormatError
from runner.profiling.model import PCSAMP_METRIC_TO_REASON, STALL_MEANING


class SelectedCounter(BaseModel):
    """One counter eOMP kept, with its averaged weight (z-score units of runtime per z of counter)."""

    metric: str
    weight: float
    frequency: float  # share of ensemble members that chose it
    correlation: float  # Pearson correlation with runtime over the runs
    description: str | None = None


class CounterSelection(BaseModel):
    """The result of eOMP over one kernel's runs."""

    kernel: str | None
    runs: int
    candidates: int  # counters left after dropping constant, missing and excluded columns
    counters: list[SelectedCounter]


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
    std = x.std(axis=0, ddof=0).to_numpy()
    x = x.loc[:, std > 1e-12 * np.maximum(1.0, np.abs(x.mean(axis=0).to_numpy()))]
    best: dict[str, tuple[int, str]] = {}
    for c in x.columns:
        family, rank = _rollup_key(c)
        if family not in best or rank < best[family][0]:
            best[family] = (rank, c)
    x = x[[c for c in x.columns if best[_rollup_key(c)[0]][1] == c]]
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=0)
    seen: set[bytes] = set()
    unique = []
    for c in x.columns:
        v = np.round(z[c].to_numpy(), 9) + 0.0  # + 0.0 turns -0.0 into 0.0
        key, neg = v.tobytes(), (-v + 0.0).tobytes()
        if key in seen or neg in seen:
            continue
        seen.add(key)
        unique.append(c)
    return x[unique]


def eomp(x: np.ndarray, y: np.ndarray, kappa: int, tau: int, ensemble: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Run eOMP on a z-scored N x C matrix `x` and runtime `y`.

    Returns (mean weight per counter, share of members that chose it). Weights are least-squares
    coefficients on z-scored columns against z-scored y, averaged over `ensemble` members.
    """
    n, c = x.shape
    if n < 2 or c == 0:
        raise AnalysisError(f"eOMP needs at least 2 runs and 1 counter, got {n} runs and {c} counters")
    k = min(kappa, c, n - 1) if n > 1 else 1
    yc = (y - y.mean()) / (y.std() or 1.0)
    rng = np.random.default_rng(seed)
    weights = np.zeros(c)
    chosen_count = np.zeros(c)
    for _ in range(ensemble):
        selected: list[int] = []
        r = yc.copy()
        available = np.ones(c, dtype=bool)
        beta = np.zeros(0)
        for _ in range(k):
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


def select_counters(metrics: pd.DataFrame, runtime: pd.Series | np.ndarray, kappa: int = 5, tau: int = 3,
                    ensemble: int = 200, seed: int = 0, exclude: list[str] = (),
                    descriptions: dict[str, str] | None = None, kernel: str | None = None,
                    min_runs: int = 4) -> CounterSelection:
    """Pick the `kappa` counters that best explain `runtime` across runs (rows of `metrics`)."""
    y = np.asarray(runtime, dtype=float)
    if len(y) != len(metrics):
        raise ValueError(f"{len(metrics)} metric rows but {len(y)} runtimes")
    if len(y) < min_runs:
        raise AnalysisError(f"counter selection needs at least {min_runs} profiling runs of the kernel, "
                            f"got {len(y)}; profile more configurations (analysis.counters.min_runs)")
    if np.isnan(y).any() or np.std(y) == 0:
        raise AnalysisError("runtime (gpu__time_duration.sum) is missing or identical in every run; "
                            "counter selection needs runs that differ in runtime")
    cand = prepare_matrix(metrics, list(exclude))
    if cand.shape[1] == 0:
        raise AnalysisError("no counter varies across the runs; nothing to select from")
    xv = cand.to_numpy()
    z = (xv - xv.mean(axis=0)) / xv.std(axis=0)
    w, freq = eomp(z, y, kappa, tau, ensemble, seed)
    yc = (y - y.mean()) / y.std()
    corr = (z * yc[:, None]).mean(axis=0)
    order = sorted(np.flatnonzero(freq > 0), key=lambda j: (-abs(w[j]), -freq[j], cand.columns[j]))[:kappa]
    desc = descriptions or {}
    out = [SelectedCounter(metric=cand.columns[j], weight=float(w[j]), frequency=float(freq[j]),
                           correlation=float(corr[j]), description=describe(cand.columns[j], desc))
           for j in order]
    return CounterSelection(kernel=kernel, runs=len(y), candidates=cand.shape[1], counters=out)


_ROLLUPS = ("sum", "avg", "min", "max")
# Source-level counters ncu collects per instruction; their scalar is the sum over instructions and
# `--query-metrics` does not list them.
_SOURCE_COUNTERS = {
    "inst_executed": "# of warp instructions executed (source counter, summed over instructions)",
    "thread_inst_executed": "# of thread instructions executed (source counter, summed over instructions)",
}


def describe(metric: str, dictionary: dict[str, str]) -> str | None:
    """The vendor's description of a metric name with suffixes (`dram__bytes.sum.per_second`).

    `ncu --query-metrics` lists base names; the rollup and submetric suffixes are explained here.
    """
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
