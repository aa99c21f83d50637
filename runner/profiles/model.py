"""The one profile model every reader produces.

A `Profile` holds three tables:

* `launches`: one row per kernel launch (identity, launch shape, duration in ns);
* `metrics`: one row per launch (same index), one float column per metric, base units;
* `lines`: PC-sampling results per (kernel, file, line): total samples and one column per stall
  reason, summed over all launches of the kernel.

Readers fill what their format has; `merge` combines profiles of one application (for example a
raw export for the metrics and a source export for the lines).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from runner.scan.cuda_source import short_kernel_name as short_kernel_name  # re-exported: readers and stages use it

# Canonical stall reason names, as the source page spells them (without the "stall_" prefix).
STALL_REASONS: tuple[str, ...] = (
    "barrier", "branch_resolving", "dispatch", "drain", "imc", "lg", "long_sb", "math", "membar",
    "mio", "misc", "no_inst", "not_selected", "selected", "short_sb", "sleep", "tex", "wait",
    "warpgroup_arrive",
)
# What each reason means, in a line a prompt can carry.
STALL_MEANING: dict[str, str] = {
    "barrier": "waiting at a block barrier (__syncthreads) for other warps",
    "branch_resolving": "waiting for a branch target to be computed",
    "dispatch": "ready but the dispatcher could not issue (pipeline conflict)",
    "drain": "waiting for memory stores to drain before the warp exits",
    "imc": "waiting on an immediate-constant cache miss",
    "lg": "local/global memory instruction queue full (too many outstanding L1TEX requests)",
    "long_sb": "waiting on a long-scoreboard dependency: the result of a global/local memory (L1TEX) load",
    "math": "waiting for a busy math pipe",
    "membar": "waiting on a memory barrier",
    "mio": "memory input/output queue full (shared memory, special math, dynamic branches)",
    "misc": "miscellaneous hardware reason",
    "no_inst": "no instruction fetched yet (instruction cache miss or branch)",
    "not_selected": "eligible but another warp was issued",
    "selected": "issued an instruction (not a stall)",
    "short_sb": "waiting on a short-scoreboard dependency: shared memory or special-function result",
    "sleep": "sleeping (nanosleep or yielded)",
    "tex": "texture unit queue full",
    "wait": "waiting a fixed number of cycles for an instruction's latency",
    "warpgroup_arrive": "waiting at a warpgroup arrive barrier (wgmma)",
}
# Instruction counts: the measure of a launch's work (the first one a profile holds).
WORK_METRICS: tuple[str, ...] = ("smsp__inst_executed.sum", "sm__inst_executed.sum", "inst_executed")
# "selected" is the sample of a warp that issued: it is not a stall.
NON_STALL_REASONS: frozenset[str] = frozenset({"selected"})

# The raw page and .ncu-rep name the same reasons by their metric suffix.
PCSAMP_METRIC_TO_REASON: dict[str, str] = {
    "barrier": "barrier", "branch_resolving": "branch_resolving", "dispatch_stall": "dispatch",
    "drain": "drain", "imc_miss": "imc", "lg_throttle": "lg", "long_scoreboard": "long_sb",
    "math_pipe_throttle": "math", "membar": "membar", "mio_throttle": "mio", "misc": "misc",
    "no_instructions": "no_inst", "not_selected": "not_selected", "selected": "selected",
    "short_scoreboard": "short_sb", "sleeping": "sleep", "tex_throttle": "tex", "wait": "wait",
    "warpgroup_arrive": "warpgroup_arrive",
}

DURATION_METRIC = "gpu__time_duration.sum"

LAUNCH_COLUMNS = ["launch_id", "process_id", "process_name", "kernel", "block", "grid", "device", "cc",
                  "duration_ns", "origin"]
# Where a reader knows the kernel's symbol (reports, tracer records), launches carry it too. Two
# demanglers spell template arguments differently (`<32>`, `<(int)32>`; `256u`, `256U`): the
# symbol is what says that a traced kernel and a profiled one are the same.
MANGLED = "mangled"
LINE_KEY = ["kernel", "file", "line"]
LINE_COLUMNS = [*LINE_KEY, "source", "samples", "caller_file", "caller_line",
                *(f"stall_{r}" for r in STALL_REASONS)]


def empty_lines() -> pd.DataFrame:
    """A `lines` table with no rows and the right columns."""
    df = pd.DataFrame({c: pd.Series(dtype="float64") for c in LINE_COLUMNS})
    for c in ("kernel", "file", "source", "caller_file"):
        df[c] = df[c].astype("object")
    for c in ("line", "caller_line"):
        df[c] = df[c].astype("Int64")
    return df


@dataclass
class Profile:
    """Launches, their metrics, and per-line PC-sampling data of one or more ncu exports."""

    launches: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=LAUNCH_COLUMNS))
    metrics: pd.DataFrame = field(default_factory=pd.DataFrame)
    units: dict[str, str] = field(default_factory=dict)
    lines: pd.DataFrame = field(default_factory=empty_lines)
    device_name: str | None = None
    inputs: list[str] = field(default_factory=list)

    def kernels(self) -> list[str]:
        """Distinct kernels (demangled signatures) in launch order."""
        names = list(self.launches["kernel"]) + list(self.lines["kernel"])
        return list(dict.fromkeys(names))

    def kernel_metrics(self, kernel: str) -> pd.DataFrame:
        """Metric rows of every launch of `kernel`."""
        mask = (self.launches["kernel"] == kernel).to_numpy()
        return self.metrics.loc[mask]

    def kernel_durations(self, kernel: str) -> pd.Series:
        mask = self.launches["kernel"] == kernel
        return self.launches.loc[mask, "duration_ns"].astype(float)


def aggregate_lines(df: pd.DataFrame) -> pd.DataFrame:
    """Sum samples and stall counts over rows of the same (kernel, file, line)."""
    if df.empty:
        return empty_lines()
    counts = ["samples", *(f"stall_{r}" for r in STALL_REASONS)]
    agg = {c: "sum" for c in counts}
    agg.update({"source": "first", "caller_file": "first", "caller_line": "first"})
    out = df.groupby(LINE_KEY, sort=False, dropna=False).agg(agg).reset_index()
    return out[LINE_COLUMNS]


def _launch_table(parts: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=LAUNCH_COLUMNS)


def _stacked_launches(profiles: list[Profile]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every profile's launches and metrics one after the other (whole tables: a trace holds
    millions of launches, which one frame per row took minutes and gigabytes to stack)."""
    given = [p for p in profiles if len(p.launches)]
    launches = [p.launches for p in given]
    metrics = [p.metrics.reset_index(drop=True) if len(p.metrics.columns)
               else pd.DataFrame(index=range(len(p.launches))) for p in given]
    out_metrics = pd.concat(metrics, ignore_index=True).astype("float64") if metrics else pd.DataFrame()
    return _launch_table(launches), out_metrics


def _same_launches(profiles: list[Profile]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exports of one capture: each launch once (see `merge`), its metrics completed from the others."""
    kept: list[pd.DataFrame] = []
    seen: dict[tuple, int] = {}
    merged_rows: list[dict] = []
    for p in profiles:
        rows = []
        for i, row in enumerate(p.launches.itertuples(index=False)):
            key = (str(row.launch_id), row.kernel, row.grid, row.block)
            mrow = p.metrics.iloc[i].to_dict() if len(p.metrics.columns) else {}
            if key in seen:
                target = merged_rows[seen[key]]
                for k, v in mrow.items():
                    if k not in target or pd.isna(target[k]):
                        target[k] = v
                continue
            seen[key] = len(merged_rows)
            merged_rows.append(mrow)
            rows.append(i)
        if rows:
            kept.append(p.launches.iloc[rows])
    out_metrics = pd.DataFrame(merged_rows).astype("float64") if merged_rows else pd.DataFrame()
    return _launch_table(kept), out_metrics


def merge(profiles: list[Profile], same_capture: bool = False) -> Profile:
    """Combine the profiles of one application.

    Launch tables are concatenated. With `same_capture`, the inputs are exports of one capture
    (a .ncu-rep and its raw or details page): a launch seen through two of them (same launch id,
    kernel and launch shape; not the duration, which the details page rounds to 0.01 us, nor the
    process, which the report format does not carry) is kept once, its metrics completed from the
    later export and its duration from the most precise one (the first given). Line tables are
    never summed across exports: the first export with source data for a kernel wins.
    """
    if not profiles:
        return Profile()
    units: dict[str, str] = {}
    claimed: set[str] = set()  # kernels whose lines an earlier export gave
    line_parts: list[pd.DataFrame] = []
    device = None
    inputs: list[str] = []
    for p in profiles:
        units.update({k: v for k, v in p.units.items() if k not in units})
        device = device or p.device_name
        inputs.extend(p.inputs)
        if not p.lines.empty:
            # rows, not groups: an application's export can hold thousands of kernels
            fresh = ~p.lines["kernel"].isin(claimed)
            if fresh.any():
                part = p.lines if fresh.all() else p.lines[fresh]
                line_parts.append(part)
                claimed.update(part["kernel"].unique())
    out_launches, out_metrics = _same_launches(profiles) if same_capture else _stacked_launches(profiles)
    if DURATION_METRIC in out_metrics.columns:
        # A launch first seen through an export without durations gains them from a later one.
        dur = out_launches["duration_ns"].astype(float)
        out_launches["duration_ns"] = dur.where(dur.notna(), out_metrics[DURATION_METRIC])
    lines = (line_parts[0].reset_index(drop=True) if len(line_parts) == 1
             else pd.concat(line_parts, ignore_index=True) if line_parts else empty_lines())
    return Profile(launches=out_launches, metrics=out_metrics, units=units, lines=lines,
                   device_name=device, inputs=inputs)
