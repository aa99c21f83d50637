"""Streaming reader for `ncu --csv --page source --print-source cuda,sass` exports.

Layout, per profiled launch and source file:

    "File Path","/opt/app/k.cu"
    "Function Name","kern(float *, int)"
    "Line No","Source","Address","Source",<metric columns...>
    "12","for (...) {","-","-",<the line's summed metrics>          <- CUDA line row
    "","","0x7f..10","      LDG.E R2, ...",<the instruction's metrics> <- SASS rows of that line
    "","","...","...","-",...                                          <- gap marker

Only lines that own instructions are listed. Inlined library code (atomics, CUB) appears twice: in
the caller's file under the calling line, and in a block of its own for the header file, with the
same instruction addresses. That shared address is how a header line is tied back to its caller.

Files can be gigabytes; the reader streams them and keeps only per-line sums and the address map.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from runner.base.errors import ProfileFormatError
from runner.profiles.model import LINE_COLUMNS, STALL_REASONS, Profile, aggregate_lines, empty_lines
from runner.profiles.readers.ncu_csv import HOW, detect_page, open_text, wrong_page_error

DEFAULT_LIBRARY_PATHS = (r"/cuda[^/]*/(targets/[^/]+/)?include/", r"/cub/", r"/thrust/", r"/cuda/std/")

_SASS_PREFIX = '"",""'


class NcuSourceCsvReader:
    """Reads per-line PC-sampling data; ties library-header lines to the user line that calls them."""

    page = "source"

    def __init__(self, library_paths: tuple[str, ...] | list[str] = DEFAULT_LIBRARY_PATHS):
        self._library = re.compile("|".join(f"(?:{p})" for p in library_paths)) if library_paths else None

    def is_library(self, file: str) -> bool:
        return bool(self._library and self._library.search(file))

    def read(self, path: Path | str) -> Profile:
        path = Path(path)
        scan = _Scan(path, self.is_library, self._columns)
        last = ""
        with open_text(path) as f:
            for lineno, line in enumerate(f, start=1):
                last = line
                scan.feed(lineno, line)
        if last and not last.endswith("\n"):
            raise ProfileFormatError(path, "the last row is cut off (the file looks truncated)",
                                     "a complete source-page export", HOW["source"])
        scan.check_found()
        return Profile(lines=self._table(scan.sums, scan.user_addr, scan.lib_addrs), inputs=[str(path)])

    def _columns(self, path: Path, header: list[str]) -> tuple[list[int | None], int]:
        if len(header) < 5 or header[2:4] != ["Address", "Source"]:
            raise ProfileFormatError(path, "the source page lacks its SASS columns or metrics",
                                     "an export made with --print-source cuda,sass", HOW["source"])
        pos = {h: i for i, h in enumerate(header)}
        samples = pos.get("Warp Stall Sampling (All Samples)", pos.get("# Samples"))
        if samples is None:
            raise ProfileFormatError(path, "no PC-sampling columns ('Warp Stall Sampling (All Samples)')",
                                     "a source page of a report with the SourceCounters section", HOW["source"])
        return [pos.get(f"stall_{r}") for r in STALL_REASONS], samples

    def _table(self, sums, user_addr, lib_addrs) -> pd.DataFrame:
        records = []
        for (kernel, file, line), acc in sums.items():
            caller_file = caller_line = None
            if (kernel, file, line) in lib_addrs:
                for addr in sorted(lib_addrs[(kernel, file, line)]):
                    hit = user_addr.get(kernel, {}).get(addr)
                    if hit:
                        caller_file, caller_line = hit
                        break
            rec = {"kernel": kernel, "file": file, "line": line, "source": acc[0].strip(), "samples": acc[1],
                   "caller_file": caller_file, "caller_line": caller_line}
            rec.update({f"stall_{r}": acc[2 + k] for k, r in enumerate(STALL_REASONS)})
            records.append(rec)
        if not records:
            return empty_lines()
        df = pd.DataFrame.from_records(records, columns=LINE_COLUMNS)
        df["line"] = df["line"].astype("Int64")
        df["caller_line"] = df["caller_line"].astype("Int64")
        return aggregate_lines(df)


class _Scan:
    """State of one streaming pass over a source-page export: `feed` takes the file line by line.

    Keeps per-line sums (kernel, file, line) -> [source text, samples, one sum per stall reason],
    each kernel's map of SASS address -> the user line that owns it, and the addresses of each
    library-header line, which `_table` ties back to the calling user line."""

    def __init__(self, path: Path, is_library: Callable[[str], bool],
                 columns: Callable[[Path, list[str]], tuple[list[int | None], int]]):
        self.path = path
        self.is_library = is_library
        self.columns = columns
        self.sums: dict[tuple[str, str, int], list] = {}
        self.user_addr: dict[str, dict[str, tuple[str, int]]] = {}  # kernel -> address -> (file, line)
        self.lib_addrs: dict[tuple[str, str, int], set[str]] = {}
        self.kernel_addr: dict[str, tuple[str, int]] = {}  # the current kernel's entry of user_addr
        self.cur_place: tuple[str, int] | None = None
        self.cur_line: tuple[str, str, int] | None = None
        self.file: str | None = None
        self.kernel: str | None = None
        self.stall_idx: list[int | None] = []
        self.samples_idx = -1
        self.n_fields = 0
        self.in_library = False
        self.saw_block = False
        self.no_lineinfo = False

    def feed(self, lineno: int, line: str) -> None:
        """Take one line of the file (`lineno` counts from 1), by the kind of row it is."""
        if line.startswith(_SASS_PREFIX):
            self._sass_row(line)
        elif line.startswith('"File Path"'):
            self._file_path(line)
        elif line.startswith('"Function Name"'):
            self.kernel = next(csv.reader([line]))[1]
        elif line.startswith('"Line No"'):
            header = next(csv.reader([line]))
            self.n_fields = len(header)
            self.stall_idx, self.samples_idx = self.columns(self.path, header)
        elif not self.saw_block:
            self._preamble(line)
        elif line.strip():
            self._line_row(lineno, line)

    def _sass_row(self, line: str) -> None:
        """Record which line owns an instruction's address; SASS rows start "","","<address>"."""
        if self.cur_line is None:
            return
        addr = line[7:line.find('"', 7)]
        if addr == "...":  # the gap marker between non-adjacent instructions
            return
        if self.in_library:
            self.lib_addrs.setdefault(self.cur_line, set()).add(addr)
        elif addr not in self.kernel_addr:
            self.kernel_addr[addr] = self.cur_place

    def _file_path(self, line: str) -> None:
        """Start the block of one source file; its "Function Name" row follows."""
        self.file = next(csv.reader([line]))[1]
        self.in_library = self.is_library(self.file)
        self.kernel = None
        self.cur_line = None
        self.saw_block = True

    def _preamble(self, line: str) -> None:
        """A line before the first block: blank lines and ncu's ==PROF== log lines are skipped, a
        quoted row means the export is another page."""
        if "No lineinfo available" in line:
            self.no_lineinfo = True  # ncu's warning for each kernel it cannot show as CUDA source
        if line.startswith('"'):
            raise wrong_page_error(self.path, detect_page(next(csv.reader([line]))), "source")

    def _line_row(self, lineno: int, line: str) -> None:
        """A CUDA line row: its samples and stall reasons add to the line's sums."""
        row = next(csv.reader([line]))
        if len(row) != self.n_fields:
            row = _split_unescaped(line, self.n_fields) or row
        if len(row) != self.n_fields or self.kernel is None or self.file is None:
            raise ProfileFormatError(
                self.path, f"line {lineno} has {len(row)} fields where its block's header has {self.n_fields} "
                           "(the file looks truncated or edited)", "a complete source-page export", HOW["source"])
        try:
            lno = int(row[0])
        except ValueError:
            raise ProfileFormatError(self.path, f"line {lineno}: line number {row[0]!r} is not an integer",
                                     "a source-page export", HOW["source"]) from None
        self.cur_line = (self.kernel, self.file, lno)
        self.cur_place = (self.file, lno)
        self.kernel_addr = self.user_addr.setdefault(self.kernel, {})
        acc = self.sums.get(self.cur_line)
        if acc is None:
            acc = self.sums[self.cur_line] = [row[1], 0.0] + [0.0] * len(STALL_REASONS)
        acc[1] += _num(row[self.samples_idx])
        for k, j in enumerate(self.stall_idx):
            if j is not None:
                acc[2 + k] += _num(row[j])

    def check_found(self) -> None:
        """Raise unless the file held CUDA line rows, saying why when ncu's output tells."""
        if not self.saw_block and self.no_lineinfo:
            raise _no_lineinfo_error(self.path)
        if not self.saw_block:
            raise ProfileFormatError(self.path, "not an Nsight Compute CSV export (no 'File Path' block found)",
                                     "a source-page export", HOW["source"])
        if not self.sums:
            raise _no_lineinfo_error(self.path)


def _split_unescaped(line: str, n_fields: int) -> list[str] | None:
    """Fields of a row whose source text holds double quotes. ncu quotes every field but does not
    double the quotes inside source text (e.g. an inline-asm constraint `"=r"(ret)` in a CUDA
    header), so the CSV parser miscounts. Every field is quoted, so split on the `","` between
    fields; extra pieces come from the source text (column 1) and are joined back."""
    body = line.rstrip("\r\n")
    if len(body) < 2 or not (body.startswith('"') and body.endswith('"')):
        return None
    parts = body[1:-1].split('","')
    extra = len(parts) - n_fields
    if extra < 0:
        return None
    return [parts[0], '","'.join(parts[1:2 + extra]), *parts[2 + extra:]]


def _num(text: str) -> float:
    if not text or text == "-" or text == "0":
        return 0.0
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def _no_lineinfo_error(path: Path) -> ProfileFormatError:
    return ProfileFormatError(
        path, "no CUDA source lines in the export: the application was built without -lineinfo",
        "per-line metrics of CUDA source",
        "Rebuild with nvcc -lineinfo, profile again with --import-source yes, then " + HOW["source"][0].lower()
        + HOW["source"][1:])
