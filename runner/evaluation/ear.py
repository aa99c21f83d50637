"""Evidence-Aligned Reasoning (EAR): does a candidate act on the evidence it was given?

1. coverage: share of edits that cite at least one evidence id the prompt showed;
2. localization: share of edited lines within `distance` lines of a salient stall line (S*) of
   the same kernel, or of a line of the kernel that calls the helper function holding the stall
   line (an edit may act on a helper's stalls where the kernel calls it, for example by writing
   the helper's work into the kernel);
3. directional consistency: after re-profiling the candidate, the share of cited evidence whose
   quantity moved the expected way (a cited stall's share falls, a memory-bound kernel's memory
   utilization rises or the work its memory does per launch falls, a counter with positive
   runtime weight falls ...) by more than
   `evaluation.direction_min_change` of its value (smaller moves are noise), with before and after;
4. hallucinations: applied-optimization claims with no matching change, and edits with no claim;
5. correctness: validation passed on every configuration.
"""

from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

import pandas as pd
from pydantic import BaseModel, Field

from runner.analysis.counters import counter_value
from runner.analysis.evidence import EVIDENCE_ID, Diagnostics, Evidence, evidence_order
from runner.proposal.parser import Edit, Proposal
from runner.scan.cuda_source import Function, functions, strip_comments_and_strings

_LINES = re.compile(r"lines?\s+(\d+)(?:\s*-\s*(\d+))?", re.IGNORECASE)


class DirectionCheck(BaseModel):
    id: str
    quantity: str
    expected: Literal["fall", "rise"]
    before: float | None
    after: float | None
    consistent: bool | None  # None: the quantity could not be measured after the change


class Hallucinations(BaseModel):
    claims_without_change: list[str] = Field(default_factory=list)
    edits_without_claim: list[str] = Field(default_factory=list)
    cited_not_shown: list[str] = Field(default_factory=list)  # evidence ids cited that the prompt did not show

    @property
    def count(self) -> int:
        return len(self.claims_without_change) + len(self.edits_without_claim) + len(self.cited_not_shown)


class EARScores(BaseModel):
    coverage: float | None
    localization: float | None
    directional: float | None
    hallucinations: Hallucinations
    hallucination_rate: float | None
    correct: bool | None
    applied: int
    withheld: int
    checks: list[DirectionCheck] = Field(default_factory=list)


@dataclass(frozen=True)
class ScoreSpec:
    """One EAR score as every reader shows it: its key in EARScores, its name, what it measures and
    what a good value is (the CLI, the dashboard, the pull request and the docs say the same)."""

    key: str
    name: str
    meaning: str
    good: str

    def show(self, value: object) -> str:
        """The score as every reader shows it: 0.57, yes or no, and for a score not known "not
        evaluated" where it needs a GPU (directional consistency, correctness), else "n/a"."""
        if value is None:
            return NOT_EVALUATED if self.key in ("directional", "correct") else "n/a"
        if isinstance(value, bool):
            return "yes" if value else "no"
        try:  # a run folder's record is not always the shape Optimas writes (a number past float's range)
            number = float(value) if isinstance(value, int | float) else math.nan
        except OverflowError:
            number = math.nan
        return f"{number:.2f}" if math.isfinite(number) else "n/a"


# The EAR scores, in the order they are shown.
EAR_SCORES: tuple[ScoreSpec, ...] = (
    ScoreSpec("coverage", "coverage", "share of the candidate's edits that cite at least one evidence id the prompt "
              "showed (0 to 1)", "1.00: every edit names the measurement it acts on"),
    ScoreSpec("localization", "localization", "share of the edited lines within 3 lines of a salient stall line "
              "(S*) of the same kernel, or of the kernel line that calls the helper holding it (0 to 1)",
              "high: the edits are where the stalls are"),
    ScoreSpec("directional", "directional consistency", "after re-profiling the candidate, share of its cited "
              "evidence whose quantity moved the way the citation expects by more than "
              "evaluation.direction_min_change (0 to 1; measured on a GPU only)",
              "high: the change did what its citations said"),
    ScoreSpec("hallucination_rate", "hallucination rate", "claims of an applied optimization with no matching "
              "change, edits with no claim and cited ids the prompt never showed, per claim and edit (0 or more)",
              "0: nothing claimed that was not done"),
    ScoreSpec("correct", "correctness", "validation passed on every configuration and seed (yes or no; needs a GPU)",
              "yes: the candidate's results equal the original's"),
)
NOT_EVALUATED = "not evaluated"  # a verdict or score that needs the candidate validated and timed on a GPU


def ear_line(ear: EARScores) -> str:
    """The scores in one line, as the CLI and the pull request's summary print them."""
    values = ear.model_dump()
    return "EAR: " + ", ".join(f"{e.name} {e.show(values.get(e.key))}" for e in EAR_SCORES)


def coverage(proposal: Proposal, prompt_ids: list[str]) -> float | None:
    shown = set(prompt_ids)
    if not proposal.edits:
        return None
    return sum(1 for e in proposal.edits if shown & set(e.cites)) / len(proposal.edits)


def _kernel_at(funcs: list[Function], line: int) -> str | None:
    return next((f.name for f in funcs if f.is_kernel and f.start_line <= line <= f.end_line), None)


def _call_sites(parsed: dict[str, list[Function]], code: dict[str, list[str]], file: str,
                line: int) -> list[tuple[str, int]]:
    """Where the non-kernel function holding `file`:`line` (matched by base name) is called, as
    (base name, line) pairs; none when the line is in a kernel or in no function of the files
    (`parsed`: their functions; `code`: their lines without comments and strings)."""
    base = posixpath.basename(file)
    helper = next((f for name, funcs in parsed.items() if posixpath.basename(name) == base
                   for f in funcs if f.start_line <= line <= f.end_line), None)
    if helper is None or helper.is_kernel:
        return []
    call = re.compile(rf"\b{re.escape(helper.name.split('::')[-1])}\s*(<[^;()]*>)?\s*\(")
    inside = range(helper.start_line, helper.end_line + 1)  # its own lines (recursion) are not call sites
    return [(posixpath.basename(name), i) for name, lines in code.items()
            for i, src in enumerate(lines, start=1)
            if call.search(src) and not (posixpath.basename(name) == base and i in inside)]


def localization(proposal: Proposal, diag: Diagnostics, files: dict[str, str], distance: int = 3,
                 shown: list[str] | None = None) -> float | None:
    """Share of edited (original) lines near an S* line of the kernel they belong to, or near that
    kernel's calls of the helper holding an S* line; lines outside every kernel (in a helper) count
    when near any S* line; None without S*."""
    stalls = [e for e in diag.evidence if e.kind == "stall" and (shown is None or e.id in shown)]
    if not stalls or not proposal.edits:
        return None
    parsed = {name: functions(text) for name, text in files.items()}
    code = {name: strip_comments_and_strings(text).splitlines() for name, text in files.items()}
    by_kernel: dict[str, list[tuple[str, int]]] = {}
    for e in stalls:
        name = (e.kernel or "").split("(")[0].split("<")[0].split("::")[-1].replace("void ", "").strip()
        by_kernel.setdefault(name, []).append((posixpath.basename(e.stall.file), e.stall.line))
        by_kernel[name].extend(_call_sites(parsed, code, e.stall.file, e.stall.line))
    anywhere = [t for ts in by_kernel.values() for t in ts]
    near = total = 0
    for ed in proposal.edits:
        for line in range(ed.start_line, ed.end_line + 1):
            total += 1
            kernel = _kernel_at(parsed.get(ed.file, []), line)
            # outside every kernel (a helper holding an S* line, editable as such): any S* line counts
            targets = by_kernel.get(kernel, []) if kernel else anywhere
            near += any(posixpath.basename(ed.file) == f and abs(line - ln) <= distance for f, ln in targets)
    return near / total if total else None


def map_line(edits: list[Edit], file: str, line: int) -> int:
    """Where an original line sits after the edits (a line inside an edited region maps to its start)."""
    shift = 0
    for e in sorted((e for e in edits if e.file == file), key=lambda e: e.start_line):
        if line > e.end_line:
            shift += len(e.new_text.splitlines()) - (e.end_line - e.start_line + 1)
        elif line >= e.start_line:
            return e.start_line + shift
    return line + shift


def _stall_weight(lines: pd.DataFrame, kernel: str, file: str, first: int, last: int, reason: str) -> float | None:
    """The share of all the kernel's samples that are `reason` stalls on lines first..last."""
    df = lines[lines["kernel"] == kernel]
    if df.empty:
        return None
    # Header lines with a known caller are counted in the caller's samples already (ncu attributes
    # inlined code to the calling line too): leave them out of the kernel's total.
    df = df[df["caller_line"].isna() | df["caller_file"].isna()]
    total = float(df["samples"].sum())
    if total <= 0:
        return None
    rows = df[(df["file"].map(posixpath.basename) == posixpath.basename(file)) & df["line"].between(first, last)]
    return float(rows[reason].sum()) / total if not rows.empty else 0.0


def stall_region(edits: list[Edit], file: str, line: int) -> tuple[tuple[int, int], tuple[int, int], str]:
    """The lines whose stall share stands for a cited stall line, before and after the edits, and
    how to name them. A line that an edit rewrote no longer exists: the whole rewritten region is
    compared (before: the replaced lines; after: the lines that replaced them)."""
    inside = next((e for e in edits if e.file == file and e.start_line <= line <= e.end_line), None)
    if inside is None:
        after = map_line(edits, file, line)
        return (line, line), (after, after), f"line {line}"
    start = map_line(edits, file, inside.start_line)
    count = len(inside.new_text.splitlines())
    return ((inside.start_line, inside.end_line), (start, start + count - 1),
            f"lines {inside.start_line}-{inside.end_line} (rewritten; cited line {line})")


def moved(before: float | None, after: float | None, expected: Literal["fall", "rise"],
          min_change: float) -> bool | None:
    """Whether a quantity moved the expected way by more than `min_change` of its before value
    (run-to-run noise is not a move); None when either value is missing."""
    if before is None or after is None:
        return None
    threshold = min_change * abs(before)
    return after < before - threshold if expected == "fall" else after > before + threshold


class Profiled(NamedTuple):
    """One side of a change as `directional` reads its profile: the source-line table
    (Profile.lines), the metrics per kernel and, after the change, the diagnostics of the new profile."""

    lines: pd.DataFrame
    metrics: dict[str, pd.Series]
    diag: Diagnostics | None = None


def directional(cited: list[Evidence], proposal: Proposal, before: Profiled, after: Profiled,
                min_change: float = 0.02) -> list[DirectionCheck]:
    """One check per cited evidence item (see the module docstring), from the profiles `before` and
    `after` the change (after's with its diagnostics). A quantity counts as moved only by more than
    `min_change` (relative) in the expected direction."""
    before_lines, before_metrics = before.lines, before.metrics
    after_lines, after_metrics = after.lines, after.metrics
    after_evidence = after.diag.evidence if after.diag is not None else []
    checks = []
    for e in cited:
        if e.kind == "stall" and e.stall:
            s = e.stall
            (b0, b1), (a0, a1), where = stall_region(proposal.edits, _edit_file(proposal, s.file), s.line)
            b = _stall_weight(before_lines, e.kernel, s.file, b0, b1, s.reason)
            # a region deleted outright (a1 < a0) holds no samples after: its stalls are gone
            a = _stall_weight(after_lines, e.kernel, s.file, a0, a1, s.reason) if a1 >= a0 else (
                0.0 if b is not None else None)
            checks.append(DirectionCheck(id=e.id, quantity=f"{s.reason} share at {where}", expected="fall",
                                         before=b, after=a, consistent=moved(b, a, "fall", min_change)))
        elif e.kind == "roofline" and e.roofline:
            r0 = e.roofline
            r1 = next((x.roofline for x in after_evidence if x.kind == "roofline" and x.kernel == e.kernel), None)
            field = "memory_rho" if r0.bound == "memory" else "compute_rho" if r0.bound == "compute" else None
            if field is None:
                b = max(r0.memory_rho, r0.compute_rho)
                a = max(r1.memory_rho, r1.compute_rho) if r1 else None
                name = "peak utilization (latency-bound)"
                ok = moved(b, a, "rise", min_change)
            else:
                b, a = getattr(r0, field), (getattr(r1, field) if r1 else None)
                name = f"{field.replace('_rho', '')} utilization ({r0.bound}-bound)"
                ok = moved(b, a, "rise", min_change)
                work = _bound_work(b, a, before_metrics.get(e.kernel), after_metrics.get(e.kernel))
                if ok is False and work and moved(*work, "fall", min_change):
                    # The bound is relieved by needing the resource less, too: a fix that removes
                    # wasted traffic lowers utilization while the launch gets much shorter.
                    ok = True
                    name += (f"; the work it bounds per launch (utilization x duration) fell, "
                             f"{work[0] / 1e3:.3g} -> {work[1] / 1e3:.3g} us at peak")
            checks.append(DirectionCheck(id=e.id, quantity=name, expected="rise", before=b, after=a, consistent=ok))
        elif e.kind == "counter" and e.counter:
            metric, weight = e.counter["metric"], e.counter["weight"]
            b = _metric(before_metrics.get(e.kernel), metric)
            a = _metric(after_metrics.get(e.kernel), metric)
            expected: Literal["fall", "rise"] = "fall" if weight > 0 else "rise"
            checks.append(DirectionCheck(id=e.id, quantity=metric, expected=expected, before=b, after=a,
                                         consistent=moved(b, a, expected, min_change)))
    return checks


DURATION = "gpu__time_duration.sum"  # ns per launch (ncu's Speed-of-Light section)


def _bound_work(before: float | None, after: float | None, before_m: pd.Series | None,
                after_m: pd.Series | None) -> tuple[float, float] | None:
    """The bound resource's work per launch before and after, as the time it would take at its
    peak (utilization x duration, ns); None without both durations."""
    tb, ta = _metric(before_m, DURATION), _metric(after_m, DURATION)
    if None in (before, after, tb, ta):
        return None
    return before * tb, after * ta


def _edit_file(proposal: Proposal, profiled_file: str) -> str:
    base = posixpath.basename(profiled_file)
    return next((e.file for e in proposal.edits if posixpath.basename(e.file) == base), profiled_file)


def _metric(series: pd.Series | None, name: str) -> float | None:
    return None if series is None else counter_value(series, name)


def hallucinations(proposal: Proposal, prompt_ids: list[str] | None = None) -> Hallucinations:
    """Claims (APPLIED items) matching no edit, edits matched by no claim, and (given the ids the
    prompt showed) evidence ids cited, by an edit or a claim, that the prompt never showed.

    A claim matches an edit when the line range it names overlaps the edit, or, naming no lines,
    when it cites an id the edit cites."""
    h = Hallucinations()
    if prompt_ids:
        cited = {c for e in proposal.edits for c in e.cites if EVIDENCE_ID.fullmatch(c)}
        cited |= {i for claim in proposal.applied for i in EVIDENCE_ID.findall(claim)}
        h.cited_not_shown = sorted(cited - set(prompt_ids), key=evidence_order)
    matched_edits: set[int] = set()
    for claim in proposal.applied:
        hits = set()
        for m in _LINES.finditer(claim):
            a, b = int(m.group(1)), int(m.group(2) or m.group(1))
            hits |= {i for i, e in enumerate(proposal.edits) if e.start_line <= b and a <= e.end_line}
        if not _LINES.search(claim):
            ids = set(EVIDENCE_ID.findall(claim))
            hits = {i for i, e in enumerate(proposal.edits) if ids & set(e.cites)}
        if hits:
            matched_edits |= hits
        else:
            h.claims_without_change.append(claim)
    for i, e in enumerate(proposal.edits):
        if i not in matched_edits:
            h.edits_without_claim.append(f"{e.file}:{e.start_line}-{e.end_line}")
    return h


def direction_score(checks: list[DirectionCheck]) -> float | None:
    """Directional consistency: the share of judged checks that moved the expected way (None when
    no cited quantity could be measured after the change)."""
    judged = [c for c in checks if c.consistent is not None]
    return sum(c.consistent for c in judged) / len(judged) if judged else None


def scores(proposal: Proposal, diag: Diagnostics, prompt_ids: list[str], files: dict[str, str],
           correct: bool | None = None, checks: list[DirectionCheck] = ()) -> EARScores:
    """All five scores (localization within localization's default distance); `checks` come from
    `directional` when the candidate was re-profiled."""
    h = hallucinations(proposal, prompt_ids)
    n = len(proposal.applied) + len(proposal.edits) + len(h.cited_not_shown)
    return EARScores(
        coverage=coverage(proposal, prompt_ids), localization=localization(proposal, diag, files, shown=prompt_ids),
        directional=direction_score(list(checks)),
        hallucinations=h, hallucination_rate=(h.count / n) if n else None, correct=correct,
        applied=len(proposal.applied) or len(proposal.edits), withheld=len(proposal.withheld), checks=list(checks))

