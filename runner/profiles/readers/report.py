"""Reader for Nsight Compute reports (`.ncu-rep`) through NVIDIA's `ncu_report` module (no GPU needed)."""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import struct
from pathlib import Path

import pandas as pd

from runner.base.errors import ProfileFormatError
from runner.profiles.model import (
    DURATION_METRIC,
    LINE_COLUMNS,
    MANGLED,
    PCSAMP_METRIC_TO_REASON,
    STALL_REASONS,
    Profile,
    aggregate_lines,
    empty_lines,
)

log = logging.getLogger(__name__)

REPORT_MAGIC = b"NVR\x00"
_HOW = ("Collect it with: ncu --set full --import-source yes -o <name> <app> (from an app built with "
        "nvcc -lineinfo)")
# ncu_report casts integral template arguments (`k<(unsigned int)256, (bool)1>`) where ncu's CSV
# pages write the bare value (`k<256, 1>`); seen on the H200 capture in tests/fixtures/templated-h200.
_LITERAL_CAST = re.compile(r"\((?:(?:unsigned|signed) )?(?:char|short|int|long(?: long)?|bool)(?: int)?\)(?=-?\d)")


def exported_spelling(name: str) -> str:
    """A kernel name from ncu_report as ncu's CSV pages spell it, so that a report and its exports
    name each kernel the same way."""
    return _LITERAL_CAST.sub("", name)


MAX_BLOCKS = 1_000_000  # a report of many profiled launches has thousands; a file of empty blocks is not one


def check_report_file(path: Path) -> None:
    """Raise unless `path` is a whole .ncu-rep file.

    The format is the magic `NVR\\0` followed by length-prefixed blocks (u32 little-endian size,
    then the block). `ncu_report` silently loads the complete prefix of a cut file, so a
    truncated report is detected here by walking the block sizes to the end of the file.
    """
    try:
        with open(path, "rb") as f:  # the block sizes only: a report may be hundreds of MB
            size_of_file = os.fstat(f.fileno()).st_size
            if f.read(len(REPORT_MAGIC)) != REPORT_MAGIC:
                raise ProfileFormatError(path, "not an Nsight Compute report (no NVR header)", "a .ncu-rep file "
                                         "written by ncu -o", _HOW)
            pos, blocks = len(REPORT_MAGIC), 0
            while pos + 4 <= size_of_file and blocks <= MAX_BLOCKS:
                f.seek(pos)
                (size,) = struct.unpack("<I", f.read(4))
                pos, blocks = pos + 4 + size, blocks + 1
    except FileNotFoundError:
        raise ProfileFormatError(path, "file not found", "a path to an existing .ncu-rep report") from None
    except IsADirectoryError:
        raise ProfileFormatError(path, "is a directory", "a .ncu-rep file") from None
    if blocks > MAX_BLOCKS:
        raise ProfileFormatError(path, f"more than {MAX_BLOCKS} blocks", "a .ncu-rep file written by ncu -o", _HOW)
    if pos != size_of_file:
        raise ProfileFormatError(path, f"the report is cut off ({size_of_file} bytes; its last block needs {pos})",
                                 "a complete .ncu-rep file (was the copy or the profiling run interrupted?)", _HOW)


class NcuReportReader:
    """Reads launches, every scalar metric and per-line PC sampling from a .ncu-rep file."""

    page = "report"

    def read(self, path: Path | str) -> Profile:
        ncu_report = _module()
        path = Path(path)
        ctx = _load(path)
        launch_rows: list[dict] = []
        metric_rows: list[dict[str, float]] = []
        units: dict[str, str] = {}
        line_records: list[dict] = []
        device = None
        n = 0
        unmapped_total = 0
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                kernel = exported_spelling(action.name(ncu_report.IAction.NameBase_DEMANGLED))
                values: dict[str, float] = {}
                strings: dict[str, str] = {}
                for name in action.metric_names():
                    m = action.metric_by_name(name)
                    if m is None:
                        continue
                    v = m.value()
                    if isinstance(v, str):
                        strings[name] = v
                    elif isinstance(v, (int, float)) and not isinstance(v, bool):
                        values[name] = float(v)
                        units.setdefault(name, m.unit())
                device = device or strings.get("device__attribute_display_name")
                launch_rows.append({
                    "launch_id": str(n), "process_id": strings.get("process__id", ""), "process_name": "",
                    "kernel": kernel, MANGLED: action.name(ncu_report.IAction.NameBase_MANGLED),
                    "block": _dim(values, "launch__block_dim"), "grid": _dim(values, "launch__grid_dim"),
                    "device": str(int(values.get("device__attribute_device_index", 0))),
                    "cc": _cc(values),
                    "duration_ns": values.get(DURATION_METRIC, math.nan), "origin": str(path),
                })
                metric_rows.append(values)
                records, unmapped = _pc_sampling_lines(action, kernel)
                line_records.extend(records)
                unmapped_total += unmapped
                n += 1
        if not launch_rows:
            raise ProfileFormatError(path, "the report holds no kernel launches", "a report with profiled kernels",
                                     _HOW)
        if unmapped_total and not line_records:
            # Samples exist but no PC maps to a source line: the binary lacks line information.
            raise ProfileFormatError(
                path, f"{unmapped_total} sampled instructions and none with a source line: the application was "
                      "built without -lineinfo", "source-line information",
                "Rebuild with nvcc -lineinfo and profile again with --import-source yes")
        lines = empty_lines()
        if line_records:
            df = pd.DataFrame.from_records(line_records, columns=LINE_COLUMNS)
            df["line"] = df["line"].astype("Int64")
            df["caller_line"] = df["caller_line"].astype("Int64")
            lines = aggregate_lines(df)
        return Profile(launches=pd.DataFrame(launch_rows), metrics=pd.DataFrame(metric_rows).astype("float64"),
                       units=units, lines=lines, device_name=device, inputs=[str(path)])


@functools.cache
def _module():
    """NVIDIA's ncu_report, imported on first use (CSV-only use never loads its library). The one an
    Nsight Compute install ships (extras/python, a single file) can be found first on PYTHONPATH;
    2025.3.1's crashed the process (a segmentation fault in IMetric.unit) reading our H200 captures,
    where the ncu-report package pinned in pyproject reads them: said once, in the log."""
    import ncu_report

    where = Path(getattr(ncu_report, "__file__", "") or "")
    if where.name == "ncu_report.py" and where.parent.name == "python" and where.parent.parent.name == "extras":
        log.warning("using the ncu_report module of an Nsight Compute install (%s); Optimas reads reports with the "
                    "ncu-report package it pins (pip install ncu-report==2026.3.1): an older bundled module has "
                    "crashed reading reports. Take the Nsight Compute folder off PYTHONPATH if reading fails.", where)
    return ncu_report


def _load(path: Path):
    """The report through NVIDIA's module."""
    ncu_report = _module()

    check_report_file(path)
    try:
        return ncu_report.load_report(str(path))
    except Exception as e:  # the module raises bare Exceptions for unreadable reports
        raise ProfileFormatError(path, f"ncu_report could not load it ({e})", "a .ncu-rep file", _HOW) from None


def report_kernel_names(path: Path | str) -> dict[str, str]:
    """Each kernel of a report: its symbol (mangled name) -> its name as ncu demangles it."""
    ncu_report = _module()

    ctx = _load(Path(path))
    names: dict[str, str] = {}
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            names[action.name(ncu_report.IAction.NameBase_MANGLED)] = exported_spelling(
                action.name(ncu_report.IAction.NameBase_DEMANGLED))
    return names


def _dim(values: dict[str, float], prefix: str) -> str:
    dims = [values.get(f"{prefix}_{c}") for c in "xyz"]
    if any(d is None for d in dims):
        return ""
    return "(" + ", ".join(str(int(d)) for d in dims) + ")"


def _cc(values: dict[str, float]) -> str:
    major = values.get("device__attribute_compute_capability_major")
    minor = values.get("device__attribute_compute_capability_minor")
    return f"{int(major)}.{int(minor)}" if major is not None and minor is not None else ""


def _pc_sampling_lines(action, kernel: str) -> tuple[list[dict], int]:
    """Per-line stall samples from the instanced `smsp__pcsamp_*` metrics (instances are PCs).

    `source_info(pc)` already maps inlined library code to the calling user line, so no caller
    attribution is needed here. Also returns how many sampled PCs had no source line (code built
    without -lineinfo, such as a precompiled library's kernels).
    """
    per_pc: dict[int, dict[str, float]] = {}
    for suffix, reason in [("sample_count", "samples"),
                           *((f"warps_issue_stalled_{k}", f"stall_{v}") for k, v in PCSAMP_METRIC_TO_REASON.items())]:
        m = action.metric_by_name(f"smsp__pcsamp_{suffix}")
        if m is None or m.num_instances() == 0 or not m.has_correlation_ids():
            continue
        pcs = m.correlation_ids()
        for i in range(m.num_instances()):
            per_pc.setdefault(pcs.as_uint64(i), {})[reason] = float(m.as_uint64(i))
    if not per_pc:
        return [], 0
    files = action.source_files()
    texts = {name: files[name].splitlines() for name in files.keys()}
    out: dict[tuple[str, int], dict] = {}
    unmapped = 0
    for pc, counts in per_pc.items():
        info = action.source_info(pc)
        if info is None or not info.file_name():
            unmapped += 1
            continue
        key = (info.file_name(), info.line())
        rec = out.get(key)
        if rec is None:
            text = texts.get(key[0], [])
            src = text[key[1] - 1].strip() if 0 < key[1] <= len(text) else ""
            rec = out[key] = {"kernel": kernel, "file": key[0], "line": key[1], "source": src, "samples": 0.0,
                              "caller_file": None, "caller_line": None,
                              **{f"stall_{r}": 0.0 for r in STALL_REASONS}}
        for k, v in counts.items():
            rec[k] += v
    return list(out.values()), unmapped

