"""One reader per Nsight Compute export format, all producing `runner.profiles.model.Profile`."""

from __future__ import annotations

import csv
from pathlib import Path

from runner.base.errors import ProfileFormatError
from runner.profiles.model import Profile, merge
from runner.profiles.readers.details import NcuDetailsCsvReader
from runner.profiles.readers.ncu_csv import detect_page, open_text, skip_preamble, wrong_page_error
from runner.profiles.readers.raw import NcuRawCsvReader
from runner.profiles.readers.report import REPORT_MAGIC, NcuReportReader
from runner.profiles.readers.source import NcuSourceCsvReader
from runner.profiles.readers.trace import TraceReader, is_trace

__all__ = ["NcuDetailsCsvReader", "NcuRawCsvReader", "NcuReportReader", "NcuSourceCsvReader", "TraceReader",
           "read_any", "read_profiles", "read_timing"]


def read_profiles(reports: list[Path] = (), raw: list[Path] = (), details: list[Path] = (),
                  source: list[Path] = (), library_paths: list[str] | None = None) -> Profile:
    """Read exports of one capture, each with its format's reader, and merge them into one profile."""
    src_reader = NcuSourceCsvReader(library_paths) if library_paths is not None else NcuSourceCsvReader()
    parts: list[Profile] = []
    parts += [NcuReportReader().read(p) for p in reports]
    parts += [NcuRawCsvReader().read(p) for p in raw]
    parts += [NcuDetailsCsvReader().read(p) for p in details]
    parts += [src_reader.read(p) for p in source]
    return merge(parts, same_capture=True)


def read_any(path: Path | str, library_paths: list[str] | None = None) -> Profile:
    """Read one export of any supported format, told apart by content (not by file name)."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            head = f.read(len(REPORT_MAGIC))
    except FileNotFoundError:
        raise ProfileFormatError(p, "file not found", "an Nsight Compute report or CSV export") from None
    if head == REPORT_MAGIC:
        return NcuReportReader().read(p)
    with open_text(p) as f:
        first = next(skip_preamble(f), "")
    page = detect_page(next(csv.reader([first]))) if first else None
    if page == "raw":
        return NcuRawCsvReader().read(p)
    if page == "details":
        return NcuDetailsCsvReader().read(p)
    if page == "source":
        return (NcuSourceCsvReader(library_paths) if library_paths is not None else NcuSourceCsvReader()).read(p)
    raise wrong_page_error(p, page, "raw")


def read_timing(paths: list[Path]) -> Profile:
    """Launches of every kernel execution, for hot-kernel selection: the tracer's records (a
    trace-<pid>.tsv file or a folder of them) or raw-page exports of an ncu timing pass."""
    traces = [Path(p) for p in paths if is_trace(Path(p))]
    parts = [TraceReader().read(p) for p in traces]
    parts += [NcuRawCsvReader().read(p) for p in paths if Path(p) not in traces]
    return merge(parts)
