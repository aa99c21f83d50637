"""Reader for the Optimas tracer's record files (runner/tracing): every kernel execution of one or
more processes, as the launch table of a profile (no metrics, no source lines)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from runner.profiles.model import LAUNCH_COLUMNS, MANGLED, Profile, empty_lines
from runner.tracing.trace import FORMAT, Launches, ProcessTrace, read_trace, read_traces


def is_trace(path: Path) -> bool:
    """A folder of tracer records, or one record file (told by its first line)."""
    if path.is_dir():
        return any(path.glob("trace-*.tsv"))
    try:
        with path.open("rb") as f:
            return f.readline().rstrip(b"\n").decode("utf-8", "replace") == FORMAT
    except OSError:
        return False


# pandas' own string type, as a table built from Python strings gets it
_STR = pd.StringDtype("pyarrow", na_value=np.nan)


def _strings(distinct: list[str], each: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """A string column of few distinct values (`each`: the index of each row's value), built in
    Arrow without a Python string per row."""
    return pd.array(pa.array(distinct, pa.large_string()).take(pa.array(each)), dtype=_STR)


def _dims(d: np.ndarray) -> pd.api.extensions.ExtensionArray:
    """Each (x, y, z) row as ncu's raw page writes Block Size and Grid Size, "(x, y, z)": each
    distinct one formatted once."""
    if len(d) and d.min() >= 0 and d[:, 0].max() < 1 << 31 and d[:, 1:].max() < 1 << 16:
        # within CUDA's limits (x < 2^31, y and z < 2^16) a shape is one int64, and hashing beats sorting rows
        each, keys = pd.factorize(d[:, 0] << 32 | d[:, 1] << 16 | d[:, 2])
        distinct = np.stack([keys >> 32, keys >> 16 & 0xFFFF, keys & 0xFFFF], axis=1)
    else:
        distinct, each = np.unique(d.reshape(-1, 3), axis=0, return_inverse=True)
    return _strings(["({}, {}, {})".format(*row) for row in distinct.tolist()], each.reshape(-1))


class TraceReader:
    """Reads one trace-<pid>.tsv file, or every one in a folder."""

    page = "trace"

    def read(self, path: Path | str) -> Profile:
        path = Path(path)
        traces = read_traces(path) if path.is_dir() else [read_trace(path)]
        return profile_of(traces, str(path))


def profile_of(traces: list[ProcessTrace], origin: str) -> Profile:
    """The launch table of traced processes, in execution order within each process (built column by
    column: a training program's trace holds millions of launches)."""
    parts = [_table(t, t.table(), origin) for t in traces if len(t.table())]
    launches = (pd.concat(parts, ignore_index=True) if parts
                else pd.DataFrame([], columns=[*LAUNCH_COLUMNS, MANGLED]))
    return Profile(launches=launches, lines=empty_lines(), inputs=[str(t.path) for t in traces])


def _table(trace: ProcessTrace, launches: Launches, origin: str) -> pd.DataFrame:
    """One process's launches as rows of the launch table."""
    launch_id = pd.array(pa.array(np.arange(len(launches))).cast(pa.large_string()), dtype=_STR)
    device, devices = pd.factorize(launches.columns["device"])
    return pd.DataFrame({
        "launch_id": launch_id, "process_id": str(trace.pid), "process_name": trace.path.name,
        "kernel": _strings([k for k, _ in launches.names], launches.kernel_ids), "block": _dims(launches.block),
        "grid": _dims(launches.grid), "device": _strings([str(d) for d in devices], device), "cc": "",
        "duration_ns": launches.duration_ns().astype(np.float64), "origin": origin,
        MANGLED: _strings([m for _, m in launches.names], launches.kernel_ids)}, columns=[*LAUNCH_COLUMNS, MANGLED])
