"""Turning a model's answer into one Proposal.

Models do not always follow the format. Accepted, in this order:
1. the structured format the prompt asks for (EDIT file=... lines=a-b cites=... + a code block);
2. a unified diff (fenced as ```diff or bare);
3. whole kernels or the whole file in fenced code blocks, with lists of the optimizations applied
   and the suggestions not applied;
4. NO CHANGE and the reasons: the model finds nothing that would make the kernels faster. That is
   a result (shape "no-change", the reasons as `withheld`), not a failure to follow the format.
Anything else raises ResponseParseError with a message that can be fed back to the model.
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

import unidiff
from pydantic import BaseModel, Field

from runner.analysis.evidence import EVIDENCE_ID, evidence_order
from runner.base.errors import OptimasError
from runner.scan.cuda_source import functions

_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+.-]*)\s*$")
_EDIT = re.compile(r"^\s*\**EDIT\**\s+file\s*=\s*(?P<file>\S+)\s+lines\s*=\s*(?P<a>\d+)\s*-\s*(?P<b>\d+)"
                   r"(?:\s+cites\s*=\s*(?P<cites>[A-Za-z0-9_,\s]*))?\s*$", re.IGNORECASE)


class ResponseParseError(OptimasError):
    """The answer holds no usable edits; the message says why, for the model's next attempt."""

    exit_code = 5


class Edit(BaseModel):
    """Replace lines start_line..end_line (1-based, inclusive) of `file` with `new_text`."""

    file: str
    start_line: int
    end_line: int
    new_text: str
    cites: list[str] = Field(default_factory=list)
    rationale: str = ""


class Withheld(BaseModel):
    suggestion: str
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.suggestion}: {self.reason}" if self.reason else self.suggestion


class Proposal(BaseModel):
    shape: Literal["structured", "diff", "code", "no-change"]
    edits: list[Edit]
    applied: list[str] = Field(default_factory=list)  # the optimizations the answer claims it applied
    withheld: list[Withheld] = Field(default_factory=list)
    raw: str


def _blocks(text: str) -> list[tuple[int, int, str, str]]:
    """Fenced blocks as (first line index, last line index, language, content); raises on an open fence."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i].strip())
        if not m:
            i += 1
            continue
        fence, lang = m.group("fence"), m.group("lang").lower()
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and set(lines[j].strip()) <= {fence[0]}):
            j += 1
        if j >= len(lines):
            raise ResponseParseError(f"a code block opened at line {i + 1} of the answer is never closed "
                                     "(the answer looks truncated); close every ``` fence")
        out.append((i, j, lang, "\n".join(lines[i + 1:j])))
        i = j + 1
    return out


def _lists(text: str) -> tuple[list[str], list[Withheld]]:
    """Bullets under APPLIED / NOT APPLIED (or 'Applied optimizations' / 'Suggestions not applied')."""
    applied: list[str] = []
    withheld: list[Withheld] = []
    section = None
    for line in text.splitlines():
        s = line.strip().strip("*#").strip()
        low = s.lower().rstrip(":")
        if re.fullmatch(r"(not applied|suggestions not applied|withheld|not applied suggestions|"
                        r"suggestions considered but not applied)", low):
            section = "withheld"
            continue
        if re.fullmatch(r"(applied|applied optimizations|optimizations applied)", low):
            section = "applied"
            continue
        if line.strip().startswith(("```", "~~~")) or _EDIT.match(line):
            section = None
            continue
        if section and re.match(r"^\s*([-*]|\d+\.)\s+", line):
            item = re.sub(r"^\s*([-*]|\d+\.)\s+", "", line).strip()
            if section == "applied":
                applied.append(item)
            else:
                head, _, reason = item.partition(": ")
                withheld.append(Withheld(suggestion=head.strip(), reason=reason.strip()))
    return applied, withheld


def _resolve_file(name: str, files: dict[str, str]) -> str:
    if name in files:
        return name
    hits = [f for f in files if f.split("/")[-1] == name.split("/")[-1]]
    if len(hits) == 1:
        return hits[0]
    raise ResponseParseError(f"an edit targets file {name!r}, which is not among the sources shown "
                             f"({', '.join(files)}); edit only those files")


def _parse_structured(text: str, files: dict[str, str]) -> list[Edit]:
    lines = text.splitlines()
    blocks = _blocks(text)
    edits = []
    for idx, line in enumerate(lines):
        m = _EDIT.match(line)
        if not m:
            continue
        block = next((b for b in blocks if b[0] > idx), None)
        nxt = next((k for k in range(idx + 1, len(lines)) if _EDIT.match(lines[k])), len(lines))
        if block is None or block[0] > nxt:
            raise ResponseParseError(f"EDIT at line {idx + 1} of the answer has no code block after it")
        a, b = int(m.group("a")), int(m.group("b"))
        if b < a:
            raise ResponseParseError(f"EDIT at line {idx + 1}: lines={a}-{b} is an empty range")
        why = " ".join(ln.strip()[4:].strip() for ln in lines[idx + 1:block[0]]
                       if ln.strip().upper().startswith("WHY:"))
        cites = [c for c in re.split(r"[,\s]+", m.group("cites") or "") if c]
        edits.append(Edit(file=_resolve_file(m.group("file"), files), start_line=a, end_line=b, new_text=block[3],
                          cites=[c.upper() for c in cites], rationale=why))
    return edits


def _diff_text(text: str) -> str | None:
    for _, _, lang, content in _blocks(text):
        if lang in ("diff", "patch") or (content.lstrip().startswith("--- ") and "\n@@" in content):
            return content
    if re.search(r"(?m)^--- \S", text) and re.search(r"(?m)^\+\+\+ \S", text) and re.search(r"(?m)^@@ ", text):
        start = re.search(r"(?m)^--- \S", text).start()
        return text[start:]
    return None


def _parse_diff(diff: str, files: dict[str, str]) -> list[Edit]:
    try:
        patch = unidiff.PatchSet(diff if diff.endswith("\n") else diff + "\n")
    except unidiff.UnidiffParseError as e:
        raise ResponseParseError(f"the unified diff could not be parsed: {e}") from None
    edits = []
    for pf in patch:
        name = _resolve_file(re.sub(r"^[ab]/", "", pf.target_file if pf.target_file != "/dev/null" else pf.source_file),
                             files)
        original = files[name].splitlines()
        for h in pf:
            src = [ln.value.rstrip("\n") for ln in h if ln.is_context or ln.is_removed]
            tgt = [ln.value.rstrip("\n") for ln in h if ln.is_context or ln.is_added]
            a = h.source_start
            if h.source_length == 0:  # pure insertion after line `a`
                src, tgt = [original[a - 1]], [original[a - 1], *tgt]
                b = a
            else:
                b = a + h.source_length - 1
            if [s.rstrip() for s in original[a - 1:b]] != [s.rstrip() for s in src]:
                raise ResponseParseError(f"the diff does not apply to {name}: its hunk at line {a} does not match "
                                         "the original lines; make a diff against the source as shown")
            edits.append(Edit(file=name, start_line=a, end_line=b, new_text="\n".join(tgt)))
    return edits


def _parse_code(text: str, files: dict[str, str]) -> list[Edit]:
    code = [c for _, _, lang, c in _blocks(text) if lang in ("", "cuda", "cu", "cpp", "c++", "c", "cxx", "h")]
    edits: list[Edit] = []
    seen: dict[str, int] = {}
    for content in code:
        funcs = functions(content)
        if not funcs:
            continue
        target = _best_file(content, funcs, files)
        original = files[target]
        orig_funcs = {f.name: f for f in functions(original)}
        whole = "main" in {f.name for f in funcs} and "main" in orig_funcs
        if whole:
            edits.extend(diff_edits(target, original, content))
            continue
        lines = content.splitlines()
        for f in funcs:
            if f.name in seen and f.is_kernel:
                raise ResponseParseError(f"the answer holds two versions of kernel {f.name}; give one")
            seen[f.name] = 1
            o = orig_funcs.get(f.name)
            if o is None:
                continue  # a new helper: the guard decides whether that is allowed
            new_text = "\n".join(lines[f.start_line - 1:f.end_line])
            edits.append(Edit(file=target, start_line=o.start_line, end_line=o.end_line, new_text=new_text))
    return edits


def _best_file(content: str, funcs, files: dict[str, str]) -> str:
    names = {f.name for f in funcs}
    scored = sorted(files, key=lambda f: -len(names & {g.name for g in functions(files[f])}))
    return scored[0]


def diff_edits(name: str, original: str, new: str) -> list[Edit]:
    """The edits that turn `original` into `new` (one per changed region, in original line numbers)."""
    a, b = original.splitlines(), new.splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # insertion before line i1+1: anchor it on the previous line
            i1 = max(i1 - 1, 0)
            j1 = max(j1 - 1, 0)
        out.append(Edit(file=name, start_line=i1 + 1, end_line=max(i2, i1 + 1), new_text="\n".join(b[j1:j2])))
    return out


def _assign_cites(edits: list[Edit], applied: list[str], text: str) -> None:
    """For shapes without per-edit citations: take the ids of the APPLIED item whose lines overlap,
    else every id the prose mentions."""
    prose_ids = sorted(set(EVIDENCE_ID.findall(_prose(text))), key=evidence_order)
    for e in edits:
        if e.cites:
            continue
        for item in applied:
            m = re.search(r"lines?\s+(\d+)(?:\s*-\s*(\d+))?", item)
            if m and int(m.group(1)) <= e.end_line and int(m.group(2) or m.group(1)) >= e.start_line:
                e.cites = sorted(set(EVIDENCE_ID.findall(item)), key=evidence_order)
                break
        if not e.cites:
            e.cites = prose_ids


def _prose(text: str) -> str:
    lines = text.splitlines()
    try:
        blocks = _blocks(text)
    except ResponseParseError:
        return text
    keep = set(range(len(lines)))
    for a, b, _, _ in blocks:
        keep -= set(range(a, b + 1))
    return "\n".join(lines[i] for i in sorted(keep))


_NO_CHANGE = re.compile(r"^\s*[*#_]*\s*NO[ _-]CHANGE\b[*_]*\s*:?\s*(?P<rest>.*)$", re.IGNORECASE)


def _no_change(text: str) -> Proposal | None:
    """A NO CHANGE answer (and no edit, diff or code block): its reasons, one per bullet."""
    lines = text.splitlines()
    at = next((i for i, ln in enumerate(lines) if _NO_CHANGE.match(ln)), None)
    if at is None or any(_EDIT.match(ln) for ln in lines) or "```" in text or "~~~" in text:
        return None
    rest = _NO_CHANGE.match(lines[at]).group("rest").strip()
    reasons = [re.sub(r"^\s*([-*]|\d+\.)\s+", "", ln).strip() for ln in lines[at + 1:]
               if re.match(r"^\s*([-*]|\d+\.)\s+", ln)]
    if rest:
        reasons.insert(0, rest)
    if not reasons:
        reasons = [" ".join(ln.strip() for ln in lines[at + 1:] if ln.strip())] if any(
            ln.strip() for ln in lines[at + 1:]) else []
    if not reasons:
        raise ResponseParseError("NO CHANGE needs its reasons: one bullet per reason, citing the evidence ids")
    withheld = []
    for r in reasons:
        head, sep, why = r.partition(": ")
        withheld.append(Withheld(suggestion=head.strip(), reason=why.strip()) if sep else Withheld(suggestion=r))
    return Proposal(shape="no-change", edits=[], withheld=withheld, raw=text)


def parse_response(text: str, files: dict[str, str]) -> Proposal:
    """One Proposal from an answer in any accepted shape (see the module docstring)."""
    if not text.strip():
        raise ResponseParseError("the answer is empty")
    if (unchanged := _no_change(text)) is not None:
        return unchanged
    applied, withheld = _lists(text)
    shape: Literal["structured", "diff", "code"]
    if any(_EDIT.match(ln) for ln in text.splitlines()):
        shape, edits = "structured", _parse_structured(text, files)
    elif (diff := _diff_text(text)) is not None:
        shape, edits = "diff", _parse_diff(diff, files)
    else:
        shape, edits = "code", _parse_code(text, files)
    if not edits:
        raise ResponseParseError("no edits found: answer with EDIT blocks as the format asks (a unified diff or "
                                 "whole kernels in ```cuda blocks are accepted too), or with NO CHANGE and the "
                                 "reasons")
    _assign_cites(edits, applied, text)
    return Proposal(shape=shape, edits=edits, applied=applied, withheld=withheld, raw=text)
