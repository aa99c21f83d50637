"""Reader for `ncu --csv --page details` exports (one row per launch, section and metric)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from runner.base.errors import ProfileFormatError
from runner.profiles.model import DURATION_METRIC, Profile, empty_lines
from runner.profiles.readers.ncu_csv import (
    HOW,
    ends_with_newline,
    page_rows,
    parse_number,
    unit_scale,
)

# The details page names metrics by their display label; these map to raw metric names so that the
# analysis reads one vocabulary. ncu's "L1/TEX Cache Throughput" is the pct of peak *active*.
SOL_LABELS = {
    ("GPU Speed Of Light Throughput", "Duration"): DURATION_METRIC,
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"): "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ("GPU Speed Of Light Throughput", "Memory Throughput"):
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    ("GPU Speed Of Light Throughput", "DRAM Throughput"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"): "l1tex__throughput.avg.pct_of_peak_sustained_active",
    ("GPU Speed Of Light Throughput", "L2 Cache Throughput"): "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    ("GPU Speed Of Light Throughput", "SM Frequency"): "sm__cycles_elapsed.avg.per_second",
    ("GPU Speed Of Light Throughput", "DRAM Frequency"): "dram__cycles_elapsed.avg.per_second",
    ("Launch Statistics", "Registers Per Thread"): "launch__registers_per_thread",
    ("Occupancy", "Achieved Occupancy"): "sm__warps_active.avg.pct_of_peak_sustained_active",
}


class NcuDetailsCsvReader:
    """Reads the details page; keeps every numeric metric as '<section>/<label>' plus raw-name aliases."""

    page = "details"

    def read(self, path: Path | str) -> Profile:
        path = Path(path)
        with page_rows(path, "details") as (header, lines):
            idx = {h: i for i, h in enumerate(header)}
            order: list[tuple[str, str]] = []
            ident: dict[tuple[str, str], list[str]] = {}
            values: dict[tuple[str, str], dict[str, float]] = {}
            units: dict[str, str] = {}
            for row in csv.reader(lines):
                if not row:
                    continue
                # Rows without a rule omit the trailing rule columns. With --print-details all, ncu
                # also interleaves free text ("The system does not have any NVLink connections.") and
                # small tables of its own (GPU ID, GPU Name, ...): rows too short to hold a metric.
                if len(row) <= idx["Metric Value"]:
                    continue
                key = (row[idx["Process ID"]], row[idx["ID"]])
                if key not in ident:
                    order.append(key)
                    ident[key] = row
                    values[key] = {}
                section, label = row[idx["Section Name"]], row[idx["Metric Name"]]
                if not label:
                    continue
                raw_value = parse_number(row[idx["Metric Value"]])
                if np.isnan(raw_value):
                    continue
                scale, base = unit_scale(row[idx["Metric Unit"]])
                value = raw_value * scale
                name = SOL_LABELS.get((section, label), f"{section}/{label}")
                values[key].setdefault(name, value)
                units[name] = base
        if not ends_with_newline(path):
            raise ProfileFormatError(path, "the last row is cut off (the file looks truncated)",
                                     "a complete details-page export", HOW["details"])
        if not order:
            raise ProfileFormatError(path, "no kernel launches in the export", "at least one profiled launch",
                                     HOW["details"])
        metrics = pd.DataFrame([values[k] for k in order]).astype("float64")
        launches = pd.DataFrame({
            "launch_id": [ident[k][idx["ID"]] for k in order],
            "process_id": [ident[k][idx["Process ID"]] for k in order],
            "process_name": [ident[k][idx["Process Name"]] for k in order],
            "kernel": [ident[k][idx["Kernel Name"]] for k in order],
            "block": [ident[k][idx["Block Size"]] for k in order],
            "grid": [ident[k][idx["Grid Size"]] for k in order],
            "device": [ident[k][idx["Device"]] for k in order],
            "cc": [ident[k][idx["CC"]] for k in order],
            "duration_ns": (metrics[DURATION_METRIC].to_numpy() if DURATION_METRIC in metrics.columns
                            else np.full(len(order), np.nan)),
            "origin": str(path),
        })
        return Profile(launches=launches, metrics=metrics, units=units, lines=empty_lines(),
                       inputs=[str(path)])
