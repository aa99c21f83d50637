"""Roofline per kernel: achieved against peak for each resource, from the report's own peaks.

Achieved rates and peaks come from the metrics ncu collects for its roofline and Speed-of-Light
sections: `<counter>.sum.per_cycle_elapsed` (or `.per_second`) against `<counter>.sum.peak_sustained`,
scaled by the unit's clock. Where only a percentage of peak was collected (L1, L2, tensor pipes,
or a details-page export), that percentage, computed by ncu against the same peaks, is used.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

# FLOPs per thread instruction, as ncu's roofline counts them: an FMA counts two, and the half
# precision instructions work on pairs (HADD2, HMUL2, HFMA2), so they count twice that.
_FP_OPS = {
    "fp64": (("dadd", 1), ("dmul", 1), ("dfma", 2)),
    "fp32": (("fadd", 1), ("fmul", 1), ("ffma", 2)),
    "fp16": (("hadd", 2), ("hmul", 2), ("hfma", 4)),
}
_PCT_FALLBACK = {
    "tensor": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
}
SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY = ("dram", "l2", "l1")
COMPUTE = ("fp64", "fp32", "fp16", "tensor")


class Resource(BaseModel):
    """Utilization of one resource; `achieved`/`peak` are in `unit` when computed from counters."""

    name: str
    kind: Literal["compute", "memory"]
    rho: float
    achieved: float | None = None
    peak: float | None = None
    unit: str | None = None
    method: Literal["counters", "pct_of_peak"]
    saturated: bool


class Roofline(BaseModel):
    """One kernel's roofline position."""

    kernel: str
    resources: list[Resource]
    compute_rho: float
    memory_rho: float
    sol_compute_pct: float | None
    sol_memory_pct: float | None
    arithmetic_intensity: float | None  # FLOP per DRAM byte
    ridge_point: float | None  # FLOP per byte where the FP32 roof meets the DRAM roof
    bound: Literal["compute", "memory", "latency"]
    summary: str


def _get(m: pd.Series, name: str) -> float | None:
    v = m.get(name)
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def aggregate_launches(metrics: pd.DataFrame, durations: pd.Series) -> pd.Series:
    """Duration-weighted mean of every metric over a kernel's launches, so that rates and
    percentages describe the kernel's whole time. Missing values are left out of the mean."""
    vals = metrics.to_numpy(dtype=float)
    w = np.nan_to_num(durations.to_numpy(dtype=float), nan=0.0)
    if w.sum() <= 0:
        w = np.ones_like(w)
    present = ~np.isnan(vals)
    den = (present * w[:, None]).sum(axis=0)
    num = (np.where(present, vals, 0.0) * w[:, None]).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / den, np.nan)
    return pd.Series(out, index=metrics.columns)


def _flops(m: pd.Series, prec: str) -> tuple[float, float] | None:
    """(achieved, peak) FLOP/s of one precision, or None if the counters are missing."""
    clock = _get(m, "sm__cycles_elapsed.avg.per_second")
    fma, fma_flops = _FP_OPS[prec][2]
    fma_peak = _get(m, f"sm__sass_thread_inst_executed_op_{fma}_pred_on.sum.peak_sustained")
    if clock is None or fma_peak is None:
        return None
    achieved_per_cycle = 0.0
    for op, weight in _FP_OPS[prec]:
        v = _get(m, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
        if v is None:
            return None
        achieved_per_cycle += weight * v
    return achieved_per_cycle * clock, fma_flops * fma_peak * clock


def _dram(m: pd.Series) -> tuple[float, float] | None:
    achieved = _get(m, "dram__bytes.sum.per_second")
    peak_per_cycle = _get(m, "dram__bytes.sum.peak_sustained")
    clock = _get(m, "dram__cycles_elapsed.avg.per_second")
    if achieved is None or peak_per_cycle is None or clock is None:
        return None
    return achieved, peak_per_cycle * clock


def _fmt_pct(x: float) -> str:
    return f"{round(100 * x)}%"


def roofline(kernel: str, m: pd.Series, saturation: float = 0.70) -> Roofline:
    """Classify one kernel from its (aggregated) metrics."""
    res: list[Resource] = []

    def add(name: str, kind: str, achieved_peak: tuple[float, float] | None, unit: str) -> None:
        if achieved_peak is not None and achieved_peak[1] > 0:
            a, p = achieved_peak
            rho = min(max(a / p, 0.0), 1.0)
            res.append(Resource(name=name, kind=kind, rho=rho, achieved=a, peak=p, unit=unit, method="counters",
                                saturated=rho >= saturation))
            return
        pct_name = _PCT_FALLBACK.get(name)
        pct = _get(m, pct_name) if pct_name else None
        if pct is not None:
            rho = min(max(pct / 100.0, 0.0), 1.0)
            res.append(Resource(name=name, kind=kind, rho=rho, method="pct_of_peak", saturated=rho >= saturation))

    for prec in ("fp64", "fp32", "fp16"):
        add(prec, "compute", _flops(m, prec), "FLOP/s")
    add("tensor", "compute", None, "")
    add("dram", "memory", _dram(m), "byte/s")
    add("l2", "memory", None, "")
    add("l1", "memory", None, "")

    sol_c = _get(m, SOL_COMPUTE)
    sol_m = _get(m, SOL_MEMORY)
    comp = [r.rho for r in res if r.kind == "compute"] + ([sol_c / 100.0] if sol_c is not None else [])
    mem = [r.rho for r in res if r.kind == "memory"] + ([sol_m / 100.0] if sol_m is not None else [])
    compute_rho = min(max(comp, default=0.0), 1.0)
    memory_rho = min(max(mem, default=0.0), 1.0)

    flops = sum(r.achieved for r in res if r.kind == "compute" and r.achieved is not None)
    dram = next((r for r in res if r.name == "dram" and r.achieved), None)
    fp32 = next((r for r in res if r.name == "fp32" and r.peak), None)
    ai = flops / dram.achieved if dram and dram.achieved else None
    ridge = fp32.peak / dram.peak if fp32 and dram and dram.peak else None

    if compute_rho < saturation and memory_rho < saturation:
        bound = "latency" if max(compute_rho, memory_rho) < 0.6 * saturation else (
            "memory" if memory_rho >= compute_rho else "compute")
    else:
        bound = "memory" if memory_rho >= compute_rho else "compute"
    mem_top = max((r for r in res if r.kind == "memory"), key=lambda r: r.rho, default=None)
    comp_word = "saturated" if compute_rho >= saturation else "underutilized"
    mem_word = "saturated" if memory_rho >= saturation else "underutilized"
    where = f", {mem_top.name.upper()}" if mem_top and abs(mem_top.rho - memory_rho) < 1e-9 else ""
    tail = {"memory": "memory-bound", "compute": "compute-bound",
            "latency": "latency-bound (neither compute nor memory near peak)"}[bound]
    summary = (f"Compute {comp_word} ({_fmt_pct(compute_rho)}), memory bandwidth {mem_word} "
               f"({_fmt_pct(memory_rho)}{where}): {tail}")
    return Roofline(kernel=kernel, resources=res, compute_rho=compute_rho, memory_rho=memory_rho,
                    sol_compute_pct=sol_c, sol_memory_pct=sol_m, arithmetic_intensity=ai, ridge_point=ridge,
                    bound=bound, summary=summary)
