"""What every `ncu --csv` export shares: preamble, page detection, numbers and units."""

from __future__ import annotations

import contextlib
import csv
import math
import re
from pathlib import Path
from typing import Iterator, TextIO

from runner.base.errors import ProfileFormatError

# How to produce each page, for error messages.
HOW = {
    "raw": "Export it with: ncu -i <report>.ncu-rep --csv --page raw --print-units base > raw.csv",
    "details": "Export it with: ncu -i <report>.ncu-rep --csv --page details > details.csv",
    "source": ("Export it with: ncu -i <report>.ncu-rep --csv --page source --print-source cuda,sass > source.csv "
               "(the report must be collected with --set full or --section SourceCounters, "
               "and --import-source yes, from an app built with -lineinfo)"),
}
PAGE_NAMES = {
    "raw": "an `ncu --csv --page raw` export",
    "details": "an `ncu --csv --page details` export",
    "source": "an `ncu --csv --page source --print-source cuda,sass` export",
}

_IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name")


def open_text(path: Path) -> TextIO:
    try:
        return open(path, encoding="utf-8", errors="replace", newline="")
    except FileNotFoundError:
        raise ProfileFormatError(path, "file not found", "a path to an existing ncu export") from None
    except IsADirectoryError:
        raise ProfileFormatError(path, "is a directory", "a file") from None


def skip_preamble(f: TextIO) -> Iterator[str]:
    """Yield lines from the first CSV row on.

    When ncu's stdout is redirected to a file, `==PROF==` log lines and the application's own output
    come before the table. ncu quotes every field, so its first row starts with a double quote; a
    table re-saved by another CSV writer may not, but still has ncu's identity columns.
    """
    for line in f:
        if line.startswith('"') or ("Kernel Name" in line and "ID" in next(csv.reader([line]))):
            yield line
            break
    yield from f


def detect_page(header: list[str]) -> str | None:
    """Which ncu page a CSV header row belongs to, or None if it is not one of ncu's."""
    if header[:1] == ["File Path"]:
        return "source"
    if header[:2] == ["Line No", "Source"] or header[:2] == ["Address", "Source"]:
        return "source-headerless"
    if all(h in header for h in _IDENTITY):
        if "Section Name" in header and "Metric Name" in header and "Metric Value" in header:
            return "details"
        return "raw"
    return None


def wrong_page_error(path: Path, found: str | None, expected: str) -> ProfileFormatError:
    if found is None:
        problem = "not an Nsight Compute CSV export (its first row is not an ncu header)"
    elif found == "source-headerless":
        problem = "a source-page export without its 'File Path'/'Function Name' rows"
    else:
        problem = f"this is {PAGE_NAMES[found]}"
    return ProfileFormatError(path, problem, PAGE_NAMES[expected], HOW[expected])


def read_header(path: Path, lines: Iterator[str]) -> list[str]:
    for line in lines:
        return next(csv.reader([line]))
    if path.stat().st_size > 0:
        raise ProfileFormatError(path, "not an Nsight Compute CSV export (no row holds ncu's header)",
                                 "an export made with ncu --csv")
    raise ProfileFormatError(path, "empty file (no CSV rows)", "an Nsight Compute CSV export")


@contextlib.contextmanager
def page_rows(path: Path, page: str) -> Iterator[tuple[list[str], Iterator[str]]]:
    """(header, the remaining lines) of an export of `page`, past ncu's preamble; an export of
    another page is refused with what to run instead."""
    with open_text(path) as f:
        lines = skip_preamble(f)
        header = read_header(path, lines)
        found = detect_page(header)
        if found != page:
            raise wrong_page_error(path, found, page)
        yield header, lines


_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3,
         "s": 1.0, "second": 1.0}
# Units ncu scales with a decimal prefix (Kbyte, Mhz, Gbyte/s ...).
_PREFIXABLE = ("byte", "hz", "cycle", "inst", "sector", "warp", "thread", "request", "block", "register",
               "sample", "wavefront", "transaction", "op", "flop")


def _unit_factor(part: str) -> tuple[float, str] | None:
    """Factor to base units for one side of a unit ('Mbyte' -> 1e6, 'byte'); None if unknown."""
    p = part.strip()
    if p in _TIME:
        return _TIME[p], "second"
    if p.lower() in _PREFIXABLE or p.lower().rstrip("s") in _PREFIXABLE or p == "":
        return 1.0, p
    if p[:1] in _SI and p[1:].lower() in _PREFIXABLE:
        return _SI[p[0]], p[1:].lower()
    return None


def unit_scale(unit: str) -> tuple[float, str]:
    """Multiplier that turns a value in `unit` into base units, and the base unit's name.

    Handles what ncu prints without `--print-units base`: 'Mbyte', 'Tbyte/s', 'us', 'Ghz',
    'sector/ns', '%/Kbyte'. Time is returned in nanoseconds when it stands alone (ncu's base for
    durations) and in seconds when it is a rate's denominator. Unknown units are left alone.
    """
    u = unit.strip()
    if u in _TIME:
        return _TIME[u] / 1e-9, "ns"
    if u.lower() in ("ghz", "mhz", "khz", "hz"):
        return _SI[u[0].upper()] if len(u) == 3 else 1.0, "hz"
    if "/" in u:
        num, den = u.split("/", 1)
        if num == "%":
            fn: tuple[float, str] | None = (1.0, "%")
        else:
            fn = _unit_factor(num)
        fd = _unit_factor(den)
        if fn and fd:
            return fn[0] / fd[0], f"{fn[1]}/{fd[1]}"
        return 1.0, u
    f = _unit_factor(u)
    return (f[0], f[1]) if f else (1.0, u)


# (the digits after the point only after a point: `\d[\d,]*\.?\d*` could split a run of digits n
# ways, n^2 steps on a long one in a cell the program's text reaches)
_NUMBER = re.compile(r"^[+-]?(\d[\d,]*(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_number(text: str) -> float:
    """'1,234.5' -> 1234.5; '', 'nan', 'n/a', '-' and non-numeric text -> NaN."""
    t = text.strip()
    if not t or not _NUMBER.match(t):
        return math.nan
    return float(t.replace(",", ""))


def ends_with_newline(path: Path) -> bool:
    """ncu ends every export with a newline; a file cut short by a full disk or a killed copy does not."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        if f.tell() == 0:
            return False
        f.seek(-1, 2)
        return f.read(1) == b"\n"
