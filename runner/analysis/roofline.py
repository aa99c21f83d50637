"""Roofline per kernel: achieved against peak for each resource, from the report's own peaks.

Two different figures per memory level, kept apart as ncu keeps them:
- **bandwidth**, the roofline's: bytes/s moved at that level against the level's peak bytes/s,
  from the metrics ncu's hierarchical roofline charts collect (`derived__l1tex__lsu_writeback_
  bytes_mem_lgds`, `derived__lts__lts2xbar_bytes`, `dram__bytes`): `<metric>.sum.per_second`
  against `<metric>.sum.peak_sustained` times the unit's clock;
- **throughput** (Speed of Light): the busiest sub-unit's activity against its peak
  (`l1tex__throughput`, `lts__throughput`), which counts more than bytes (tag lookups, shared
  memory, wavefronts) and can be saturated while bandwidth is not.
FLOP rates come from the roofline section's instruction counters. Where only a percentage of peak
was collected (tensor pipes, a details-page export), that percentage, computed by ncu, is used.

The bound follows the roofline: a roof (a precision's FLOP rate, a level's bandwidth) at or above
the saturation threshold binds; else a unit's throughput at or above it; else the closest of them
says which way the kernel leans, and nothing near its peak makes it latency-bound.
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
    "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
}
# Speed-of-Light throughput of each memory unit (busiest sub-unit, % of its peak)
_THROUGHPUT = {
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
}
# bytes each level moves, as ncu's hierarchical roofline charts count them, and the level's clock
_LEVEL_BYTES = {
    "l1": ("derived__l1tex__lsu_writeback_bytes_mem_lgds.sum", "l1tex__cycles_elapsed.avg.per_second"),
    "l2": ("derived__lts__lts2xbar_bytes.sum", "lts__cycles_elapsed.avg.per_second"),
    "dram": ("dram__bytes.sum", "dram__cycles_elapsed.avg.per_second"),
}
SOL_COMPUTE = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY = ("dram", "l2", "l1")
COMPUTE = ("fp64", "fp32", "fp16", "tensor")


class Resource(BaseModel):
    """Utilization of one resource; `achieved`/`peak` are in `unit` when computed from counters.
    A memory resource's `measure` says whether it is the level's bandwidth (a roofline roof) or a
    unit's Speed-of-Light throughput."""

    name: str
    kind: Literal["compute", "memory"]
    rho: float
    achieved: float | None = None
    peak: float | None = None
    unit: str | None = None
    method: Literal["counters", "pct_of_peak"]
    saturated: bool
    measure: Literal["flops", "bandwidth", "throughput"] = "flops"

    @property
    def label(self) -> str:
        """`L1 bandwidth`, `L2 throughput`, `FP32`."""
        return self.name.upper() + ("" if self.measure == "flops" else f" {self.measure}")


class Roofline(BaseModel):
    """One kernel's roofline position."""

    kernel: str
    resources: list[Resource]
    compute_rho: float
    memory_rho: float
    sol_compute_pct: float | None
    sol_memory_pct: float | None
    arithmetic_intensity: float | None  # FLOP per DRAM byte, in the kernel's main precision
    ridge_point: float | None  # FLOP per byte where that precision's roof meets the DRAM roof
    bound: Literal["compute", "memory", "latency"]
    summary: str
    binding: str | None = None  # what bounds it (`L1 throughput`, `DRAM bandwidth`, `FP32`), None if latency-bound
    intensity: dict[str, float] = {}  # FLOP per byte at each level whose bytes were measured
    precision: str | None = None  # the precision of most FLOPs, whose intensity and ridge are given
    ridge: dict[str, float] = {}  # that precision's ridge point against each level's bandwidth

    @property
    def roofs(self) -> list[Resource]:
        """The roofline's roofs: FLOP rates and bandwidths."""
        return [r for r in self.resources if r.measure != "throughput"]

    @property
    def throughputs(self) -> list[Resource]:
        """Speed-of-Light throughput of the memory units."""
        return [r for r in self.resources if r.measure == "throughput"]


def metric_value(m: pd.Series, name: str) -> float | None:
    """A metric of (aggregated) launch metrics, None when missing or not finite."""
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
    clock = metric_value(m, "sm__cycles_elapsed.avg.per_second")
    fma, fma_flops = _FP_OPS[prec][2]
    fma_peak = metric_value(m, f"sm__sass_thread_inst_executed_op_{fma}_pred_on.sum.peak_sustained")
    if clock is None or fma_peak is None:
        return None
    achieved_per_cycle = 0.0
    for op, weight in _FP_OPS[prec]:
        v = metric_value(m, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
        if v is None:
            return None
        achieved_per_cycle += weight * v
    return achieved_per_cycle * clock, fma_flops * fma_peak * clock


def _bandwidth(m: pd.Series, level: str) -> tuple[float, float] | None:
    """(achieved, peak) bytes/s at one memory level, or None if the counters are missing."""
    metric, clock_metric = _LEVEL_BYTES[level]
    achieved = metric_value(m, f"{metric}.per_second")
    peak_per_cycle = metric_value(m, f"{metric}.peak_sustained")
    clock = metric_value(m, clock_metric)
    if achieved is None or peak_per_cycle is None or clock is None:
        return None
    return achieved, peak_per_cycle * clock


def _fmt_pct(x: float) -> str:
    return f"{round(100 * x)}%"


def roofline(kernel: str, m: pd.Series, saturation: float = 0.70) -> Roofline:
    """Classify one kernel from its (aggregated) metrics."""
    res = _resources(m, saturation)
    sol_c = metric_value(m, SOL_COMPUTE)
    sol_m = metric_value(m, SOL_MEMORY)
    compute_rho = _utilization(res, "compute", sol_c)
    memory_rho = _utilization(res, "memory", sol_m)
    main, intensity, ridges = _intensity(res)
    bound, binding, lean = classified = _classify(res, sol_c, sol_m, saturation)
    summary = _summary(res, compute_rho, memory_rho, saturation, classified)
    return Roofline(kernel=kernel, resources=res, compute_rho=compute_rho, memory_rho=memory_rho,
                    sol_compute_pct=sol_c, sol_memory_pct=sol_m, arithmetic_intensity=intensity.get("dram"),
                    ridge_point=ridges.get("dram"), bound=bound, summary=summary,
                    binding=binding if bound != "latency" else None, intensity=intensity,
                    precision=main.name if main else None, ridge=ridges)


def _resources(m: pd.Series, saturation: float) -> list[Resource]:
    """Every resource the metrics measure: FLOP rates, then bandwidths, then unit throughputs."""
    found = [_resource(m, prec, "flops", _flops(m, prec), None, saturation) for prec in ("fp64", "fp32", "fp16")]
    found.append(_resource(m, "tensor", "flops", None, _PCT_FALLBACK["tensor"], saturation))
    found += [_resource(m, level, "bandwidth", _bandwidth(m, level), _PCT_FALLBACK.get(level), saturation)
              for level in ("dram", "l2", "l1")]
    found += [_resource(m, level, "throughput", None, _THROUGHPUT[level], saturation) for level in ("l2", "l1")]
    return [r for r in found if r is not None]


_UNITS = {"flops": "FLOP/s", "bandwidth": "byte/s"}  # of a resource measured by its counters


def _resource(m: pd.Series, name: str, measure: str, achieved_peak: tuple[float, float] | None,
              pct_name: str | None, saturation: float) -> Resource | None:
    """One resource from its counters' (achieved, peak), else from ncu's percentage of peak
    `pct_name`; None when neither was collected. FLOP rates are compute, bandwidths and unit
    throughputs memory."""
    kind = "compute" if measure == "flops" else "memory"
    unit = _UNITS.get(measure, "")
    if achieved_peak is not None and achieved_peak[1] > 0:
        a, p = achieved_peak
        rho = min(max(a / p, 0.0), 1.0)
        return Resource(name=name, kind=kind, rho=rho, achieved=a, peak=p, unit=unit, method="counters",
                        saturated=rho >= saturation, measure=measure)
    pct = metric_value(m, pct_name) if pct_name else None
    if pct is None:
        return None
    rho = min(max(pct / 100.0, 0.0), 1.0)
    return Resource(name=name, kind=kind, rho=rho, method="pct_of_peak", saturated=rho >= saturation,
                    measure=measure)


def _utilization(res: list[Resource], kind: str, sol: float | None) -> float:
    """The highest utilization of one kind's resources and its Speed-of-Light percentage, in [0, 1]."""
    rhos = [r.rho for r in res if r.kind == kind] + ([sol / 100.0] if sol is not None else [])
    return min(max(rhos, default=0.0), 1.0)


def _intensity(res: list[Resource]) -> tuple[Resource | None, dict[str, float], dict[str, float]]:
    """(the precision of most FLOPs; its FLOP per byte at each measured level; its ridge point
    against each level's bandwidth).

    In that one precision, as ncu's roofline draws one chart per precision (a sum over precisions
    would match none of them)."""
    main = max((r for r in res if r.measure == "flops" and r.achieved and r.peak), key=lambda r: r.achieved,
               default=None)
    if main is None:
        return None, {}, {}
    by_level = {r.name: r for r in res if r.measure == "bandwidth" and r.achieved}
    intensity = {level: main.achieved / r.achieved for level, r in by_level.items()}
    ridges = {level: main.peak / r.peak for level, r in by_level.items() if r.peak}
    return main, intensity, ridges


def _summary(res: list[Resource], compute_rho: float, memory_rho: float, saturation: float,
             classified: tuple[str, str, str]) -> str:
    """One sentence: how busy compute and memory are, and what bounds the kernel (`classified`:
    _classify's bound, what binds and the closest figure)."""
    bound, binding, lean = classified
    tail = {"memory": "memory-bound", "compute": "compute-bound",
            "latency": "latency-bound (no roof and no unit near its peak)"}[bound]
    if bound != "latency":
        tail += f": {binding}"
    comp_word = "saturated" if compute_rho >= saturation else "underutilized"
    mem_word = "saturated" if memory_rho >= saturation else "underutilized"
    mem_top = max((r for r in res if r.kind == "memory"), key=lambda r: r.rho, default=None)
    where = f", {mem_top.label}" if mem_top and abs(mem_top.rho - memory_rho) < 1e-9 else ""
    summary = (f"Compute {comp_word} ({_fmt_pct(compute_rho)}), memory {mem_word} "
               f"({_fmt_pct(memory_rho)}{where}): {tail}")
    if bound == "latency" and lean:
        summary += f"; closest to its peak: {lean}"
    return summary


def _classify(res: list[Resource], sol_c: float | None, sol_m: float | None,
              saturation: float) -> tuple[Literal["compute", "memory", "latency"], str, str]:
    """(bound, what binds, the closest figure with its value) by the rule in the module docstring."""
    roofs = [r for r in res if r.measure != "throughput"]
    units = [(r.rho, r.kind, r.label) for r in res if r.measure == "throughput"]
    units += [(v / 100.0, kind, label) for v, kind, label in ((sol_m, "memory", "memory throughput (SOL)"),
                                                               (sol_c, "compute", "SM throughput (SOL)"))
              if v is not None]
    top_roof = max(roofs, key=lambda r: r.rho, default=None)
    top_unit = max(units, default=None)
    if top_roof and top_roof.rho >= saturation:
        return top_roof.kind, top_roof.label, ""
    if top_unit and top_unit[0] >= saturation:
        return top_unit[1], top_unit[2], ""
    closest = max([(r.rho, r.kind, r.label) for r in roofs] + units, default=None)
    if closest is None or closest[0] < 0.6 * saturation:
        return "latency", "", f"{closest[2]} {_fmt_pct(closest[0])}" if closest else ""
    return closest[1], closest[2], ""
