"""Reader for the Optimas tracer's record files (runner/tracing): every kernel execution of one or
more processes, as the launch table of a profile (no metrics, no source lines)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from runner.profiles.model import LAUNCH_COLUMNS, MANGLED, Profile, empty_lines
from runner.tracing.trace import FORMAT, ProcessTrace, read_trace, read_traces


def is_trace(path: Path) -> bool:
    """A folder of tracer records, or one record file (told by its first line)."""
    if path.is_dir():
        return any(path.glob("trace-*.tsv"))
    try:
        with path.open("rb") as f:
            return f.readline().rstrip(b"\n").decode("utf-8", "replace") == FORMAT
    except OSError:
        return False


def _dims(d: tuple[int, int, int]) -> str:
    return "({}, {}, {})".format(*d)  # as ncu's raw page writes Block Size and Grid Size


class TraceReader:
    """Reads one trace-<pid>.tsv file, or every one in a folder."""

    page = "trace"

    def read(self, path: Path | str) -> Profile:
        path = Path(path)
        traces = read_traces(path) if path.is_dir() else [read_trace(path)]
        return profile_of(traces, str(path))


def profile_of(traces: list[ProcessTrace], origin: str) -> Profile:
    """The launch table of traced processes, in execution order within each process."""
    rows = [{"launch_id": str(i), "process_id": str(t.pid), "process_name": t.path.name, "kernel": k.kernel,
             MANGLED: k.mangled, "block": _dims(k.block), "grid": _dims(k.grid), "device": str(k.device), "cc": "",
             "duration_ns": float(k.duration_ns), "origin": origin}
            for t in traces for i, k in enumerate(t.launches)]
    launches = pd.DataFrame(rows, columns=[*LAUNCH_COLUMNS, MANGLED])
    return Profile(launches=launches, lines=empty_lines(), inputs=[str(t.path) for t in traces])
