"""Salient stalls: per source line, the dominant stall reason when it holds enough of the line."""

from __future__ import annotations

import re

import pandas as pd
from pydantic import BaseModel

from runner.profiles.model import NON_STALL_REASONS, STALL_REASONS


class StallLine(BaseModel):
    """A source line where a kernel spends a notable share of its samples, stalled mostly for one reason."""

    kernel: str
    file: str
    line: int
    source: str
    reason: str  # e.g. "stall_long_sb"
    reason_share: float  # of the line's stalled samples
    line_share: float  # of all the kernel's samples
    samples: int
    library: bool = False  # the line is in a library header with no known user caller
    via: str | None = None  # "file:line" of inlined library code whose samples this line includes
    runner_up: str | None = None  # the second reason, when it holds >= 10% of the stalled samples
    runner_up_share: float | None = None


def salient_stalls(lines: pd.DataFrame, kernel: str, stall_share: float = 0.30, min_line_share: float = 0.02,
                   max_lines: int | None = None, library_paths: list[str] | None = None) -> list[StallLine]:
    """Lines of `kernel` whose dominant stall reason holds >= `stall_share` of the line's stalled
    samples and whose samples are >= `min_line_share` of the kernel's, most samples first.

    Library-header lines whose caller is known are folded into the caller (whose samples already
    include them, as ncu attributes inlined code to the calling line as well); the caller notes
    them in `via`. Header lines with no known caller are reported under their own file, marked
    `library`. Lines are keyed by (file, line), never by line number alone.
    """
    df = lines[lines["kernel"] == kernel]
    if df.empty:
        return []
    lib_re = re.compile("|".join(f"(?:{p})" for p in library_paths)) if library_paths else None
    reasons = [r for r in STALL_REASONS if r not in NON_STALL_REASONS]
    cols = [f"stall_{r}" for r in reasons]
    has_caller = df["caller_line"].notna() & df["caller_file"].notna()
    total = float(df.loc[~has_caller, "samples"].sum())
    if total <= 0:
        return []
    via: dict[tuple[str, int], list[str]] = {}
    for row in df[has_caller].itertuples(index=False):
        via.setdefault((row.caller_file, int(row.caller_line)), []).append(f"{row.file}:{int(row.line)}")
    out: list[StallLine] = []
    for row in df[~has_caller].itertuples(index=False):
        counts = [float(getattr(row, c)) for c in cols]
        stalled = sum(counts)
        if stalled <= 0:
            continue
        ranked = sorted(range(len(counts)), key=lambda i: (-counts[i], i))
        best, second = ranked[0], ranked[1]
        reason_share = counts[best] / stalled
        line_share = float(row.samples) / total
        if reason_share + 1e-12 < stall_share or line_share + 1e-12 < min_line_share:
            continue
        vias = via.get((row.file, int(row.line)))
        out.append(StallLine(
            kernel=kernel, file=row.file, line=int(row.line), source=str(row.source or ""),
            reason=f"stall_{reasons[best]}", reason_share=reason_share, line_share=line_share,
            samples=int(row.samples), library=bool(lib_re and lib_re.search(row.file)),
            via=", ".join(sorted(vias)) if vias else None,
            runner_up=f"stall_{reasons[second]}" if counts[second] >= 0.10 * stalled else None,
            runner_up_share=counts[second] / stalled if counts[second] >= 0.10 * stalled else None,
        ))
    out.sort(key=lambda s: (-s.line_share, s.file, s.line))
    return out[:max_lines] if max_lines else out
