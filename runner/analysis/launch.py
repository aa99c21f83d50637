"""Launch configuration of a kernel as the profiler recorded it (LaunchStats and Occupancy
sections): grid and block, registers, shared memory, occupancy and what limits it, waves per SM."""

from __future__ import annotations

import pandas as pd
from pydantic import BaseModel

from runner.analysis.roofline import metric_value

# blocks per SM each resource allows (`launch__occupancy_limit_<name>`); the smallest limits occupancy
LIMITS = {"registers": "registers", "shared_mem": "shared memory", "warps": "warps per SM",
          "blocks": "blocks per SM", "barriers": "barriers"}


class LaunchConfig(BaseModel):
    """One kernel's launch, from its longest-running launch shape and duration-weighted metrics."""

    grid: str
    block: str
    threads_per_block: int | None = None
    shapes: int = 1  # distinct (grid, block) shapes among the kernel's launches
    registers_per_thread: int | None = None
    shared_static: int | None = None  # bytes per block
    shared_dynamic: int | None = None
    blocks_per_sm: int | None = None  # the most the limits allow
    limited_by: list[str] = []
    theoretical_occupancy_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    waves_per_sm: float | None = None


def _int(m: pd.Series, name: str) -> int | None:
    v = metric_value(m, name)
    return None if v is None else int(v)


def launch_config(launches: pd.DataFrame, m: pd.Series) -> LaunchConfig | None:
    """The launch configuration of one kernel: `launches` its rows of the launch table, `m` its
    aggregated metrics. None when the profile recorded neither shape nor launch metrics."""
    if launches.empty:
        return None
    durations = pd.to_numeric(launches["duration_ns"], errors="coerce").fillna(0.0)
    shapes = launches.assign(ns=durations).groupby(["grid", "block"], sort=False)["ns"].sum()
    grid, block = shapes.idxmax()
    limits = {name: v for name in LIMITS if (v := _int(m, f"launch__occupancy_limit_{name}")) is not None}
    per_sm = min(limits.values()) if limits else None
    launch = LaunchConfig(grid=str(grid), block=str(block), threads_per_block=_int(m, "launch__block_size"),
                       shapes=len(shapes), registers_per_thread=_int(m, "launch__registers_per_thread"),
                       shared_static=_int(m, "launch__shared_mem_per_block_static"),
                       shared_dynamic=_int(m, "launch__shared_mem_per_block_dynamic"), blocks_per_sm=per_sm,
                       limited_by=[LIMITS[n] for n, v in limits.items() if v == per_sm],
                       theoretical_occupancy_pct=metric_value(m, "sm__maximum_warps_per_active_cycle_pct"),
                       achieved_occupancy_pct=metric_value(m, "sm__warps_active.avg.pct_of_peak_sustained_active"),
                       waves_per_sm=metric_value(m, "launch__waves_per_multiprocessor"))
    if not launch.grid and launch.registers_per_thread is None and launch.theoretical_occupancy_pct is None:
        return None
    return launch


def launch_text(c: LaunchConfig) -> str:
    """One line of evidence."""
    text = f"grid {c.grid or '?'} x block {c.block or '?'}"
    if c.threads_per_block:
        text += f" ({c.threads_per_block} threads)"
    if c.shapes > 1:
        text += f", the longest-running of {c.shapes} launch shapes"
    if c.registers_per_thread is not None:
        text += f"; {c.registers_per_thread} registers per thread"
    if c.shared_static is not None or c.shared_dynamic is not None:
        text += f"; shared memory per block {c.shared_static or 0} B static, {c.shared_dynamic or 0} B dynamic"
    occupancy = []
    if c.theoretical_occupancy_pct is not None:
        occupancy.append(f"theoretical {c.theoretical_occupancy_pct:.0f}%")
    if c.blocks_per_sm is not None:
        occupancy.append(f"{c.blocks_per_sm} blocks per SM, limited by {' and '.join(c.limited_by)}")
    if c.achieved_occupancy_pct is not None:
        occupancy.append(f"achieved {c.achieved_occupancy_pct:.1f}%")
    if occupancy:
        text += "; occupancy " + ", ".join(occupancy)
    if c.waves_per_sm is not None:
        text += f"; {c.waves_per_sm:.3g} waves per SM"
    return text
