"""Reader for `ncu --csv --page raw` exports (one row per launch, one column per metric)."""

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

DEVICE_NAME = "device__attribute_display_name"
IDENTITY_COLUMNS = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                    "Block Size", "Grid Size", "Device", "CC"]


class NcuRawCsvReader:
    """Reads the raw page, with base units (`--print-units base`) or ncu's scaled units."""

    page = "raw"

    def read(self, path: Path | str) -> Profile:
        path = Path(path)
        with page_rows(path, "raw") as (header, lines):
            rows = list(csv.reader(lines))
        return self._build(path, header, rows)

    def _build(self, path: Path, header: list[str], rows: list[list[str]]) -> Profile:
        units_row, data = _split_rows(path, header, rows)
        metrics, units = _metric_frame(header, data, units_row)
        return Profile(launches=_launch_table(path, header, data, metrics), metrics=metrics, units=units,
                       lines=empty_lines(), device_name=_device_name(header, data), inputs=[str(path)])


def _split_rows(path: Path, header: list[str], rows: list[list[str]]) -> tuple[list[str] | None, list[list[str]]]:
    """(the units row, if any; the launch rows), after checking the export is complete.

    With ncu's scaled units, row 2 holds each metric's unit and leaves the identity fields (ID
    first) empty; a base-units export has no such row."""
    n = len(header)
    id_col = header.index("ID")
    units_row: list[str] | None = None
    data: list[list[str]] = []
    for i, row in enumerate(rows, start=2):
        if not row:
            continue
        if len(row) != n:
            raise ProfileFormatError(
                path, f"row {i} has {len(row)} fields where the header has {n} (the file looks truncated)",
                "a complete raw-page export", HOW["raw"])
        if row[id_col] == "" and units_row is None and not data:
            units_row = row
            continue
        data.append(row)
    if not ends_with_newline(path):
        raise ProfileFormatError(path, "the last row is cut off (the file looks truncated)",
                                 "a complete raw-page export", HOW["raw"])
    if not data:
        raise ProfileFormatError(path, "no kernel launches in the export",
                                 "at least one profiled launch (check ncu's -k/-c filters)", HOW["raw"])
    return units_row, data


def _metric_frame(header: list[str], data: list[list[str]],
                  units_row: list[str] | None) -> tuple[pd.DataFrame, dict[str, str]]:
    """(metric values in base units, one row per launch; each kept metric's base unit)."""
    metric_idx = [j for j, h in enumerate(header) if h not in IDENTITY_COLUMNS]
    units = {header[j]: (units_row[j] if units_row else "") for j in metric_idx}
    values = np.empty((len(data), len(metric_idx)), dtype=np.float64)
    base_units: dict[str, str] = {}
    for k, j in enumerate(metric_idx):
        scale, base = unit_scale(units[header[j]])
        base_units[header[j]] = base
        values[:, k] = np.asarray([parse_number(r[j]) for r in data], dtype=np.float64) * scale
    metrics = pd.DataFrame(values, columns=[header[j] for j in metric_idx])
    # Columns with only text ("PolicySpread") are identity, not metrics.
    metrics = metrics.loc[:, metrics.notna().any(axis=0).to_numpy()]
    return metrics, {k: base_units[k] for k in metrics.columns}


def _launch_table(path: Path, header: list[str], data: list[list[str]], metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per launch: its identity fields and duration."""
    if DURATION_METRIC in metrics.columns:
        durations = metrics[DURATION_METRIC].to_numpy()
    else:
        durations = np.full(len(data), np.nan)
    col = {h: header.index(h) for h in IDENTITY_COLUMNS if h in header}
    return pd.DataFrame({
        "launch_id": _field(col, data, "ID"),
        "process_id": _field(col, data, "Process ID"),
        "process_name": _field(col, data, "Process Name"),
        "kernel": _field(col, data, "Kernel Name"),
        "block": _field(col, data, "Block Size", optional=True),
        "grid": _field(col, data, "Grid Size", optional=True),
        "device": _field(col, data, "Device", optional=True),
        "cc": _field(col, data, "CC", optional=True),
        "duration_ns": durations,
        "origin": str(path),
    })


def _field(col: dict[str, int], data: list[list[str]], name: str, optional: bool = False) -> list[str]:
    """One identity column's values (`col`: column name -> index); an `optional` column that the
    export lacks reads as "" for every launch."""
    if optional and name not in col:
        return [""] * len(data)
    return [r[col[name]] for r in data]


def _device_name(header: list[str], data: list[list[str]]) -> str | None:
    """The GPU's display name, from the first launch, when the export has it."""
    if DEVICE_NAME not in header:
        return None
    return data[0][header.index(DEVICE_NAME)] or None
