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
                units_row = row  # row 2 holds units, with empty identity fields
                continue
            data.append(row)
        if not ends_with_newline(path):
            raise ProfileFormatError(path, "the last row is cut off (the file looks truncated)",
                                     "a complete raw-page export", HOW["raw"])
        if not data:
            raise ProfileFormatError(path, "no kernel launches in the export",
                                     "at least one profiled launch (check ncu's -k/-c filters)", HOW["raw"])
        metric_idx = [j for j, h in enumerate(header) if h not in IDENTITY_COLUMNS]
        units = {header[j]: (units_row[j] if units_row else "") for j in metric_idx}
        values = np.empty((len(data), len(metric_idx)), dtype=np.float64)
        base_units: dict[str, str] = {}
        for k, j in enumerate(metric_idx):
            scale, base = unit_scale(units[header[j]])
            base_units[header[j]] = base
            col = [parse_number(r[j]) for r in data]
            values[:, k] = np.asarray(col, dtype=np.float64) * scale
        metrics = pd.DataFrame(values, columns=[header[j] for j in metric_idx])
        # Columns with only text ("PolicySpread") are identity, not metrics.
        metrics = metrics.loc[:, metrics.notna().any(axis=0).to_numpy()]
        col = {h: header.index(h) for h in IDENTITY_COLUMNS if h in header}
        if DURATION_METRIC in metrics.columns:
            durations = metrics[DURATION_METRIC].to_numpy()
        else:
            durations = np.full(len(data), np.nan)
        launches = pd.DataFrame({
            "launch_id": [r[col["ID"]] for r in data],
            "process_id": [r[col["Process ID"]] for r in data],
            "process_name": [r[col["Process Name"]] for r in data],
            "kernel": [r[col["Kernel Name"]] for r in data],
            "block": [r[col["Block Size"]] if "Block Size" in col else "" for r in data],
            "grid": [r[col["Grid Size"]] if "Grid Size" in col else "" for r in data],
            "device": [r[col["Device"]] if "Device" in col else "" for r in data],
            "cc": [r[col["CC"]] if "CC" in col else "" for r in data],
            "duration_ns": durations,
            "origin": str(path),
        })
        name_col = header.index(DEVICE_NAME) if DEVICE_NAME in header else None
        device = data[0][name_col] if name_col is not None and data[0][name_col] else None
        return Profile(launches=launches, metrics=metrics, units={k: base_units[k] for k in metrics.columns},
                       lines=empty_lines(), device_name=device, inputs=[str(path)])

