"""Guarded application of a Proposal: apply its edits, produce a unified diff, and reject what breaks
a rule, naming the rule and the lines.

Rules: overlapping-edits, outside-allowed-region, host-code, launch-config, signature-changed,
kernel-removed, new-kernel, duplicate-kernel, no-op. Host code may change only where the prompt
allowed a launch's execution configuration (runner.base.launch_sites): the launch's grid, block and
dynamic shared memory and the one-line declarations they are computed from, nothing else.
"""

from __future__ import annotations

import difflib
import re

import unidiff
from pydantic import BaseModel, Field

from runner.base.cuda_source import Function, functions, strip_comments_and_strings
from runner.base.launch_sites import launch_macros, launch_sites, masked
from runner.proposal.parser import Edit, Proposal


class Violation(BaseModel):
    rule: str
    file: str
    start_line: int
    end_line: int
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.file}:{self.start_line}-{self.end_line}: {self.message}"


class GuardResult(BaseModel):
    ok: bool
    violations: list[Violation] = Field(default_factory=list)
    files: dict[str, str] = Field(default_factory=dict)  # the edited files (all sources, edited or not)
    diff: str = ""

    def reasons(self) -> str:
        return "\n".join(str(v) for v in self.violations)


def _normal_params(f: Function) -> list[str]:
    """Parameter types without names, cv/__restrict__ qualifiers, default values or spacing."""
    out = []
    for p in f.params:
        p = re.sub(r"=.*$", "", p)
        p = re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict)\b", " ", p).strip()
        if len(re.findall(r"[A-Za-z_]\w*", p)) > 1:  # drop the parameter's name
            p = re.sub(r"[A-Za-z_]\w*\s*(\[[^\]]*\])*\s*$", "", p)
        out.append(re.sub(r"\s+", "", p))
    return out


def _normal_template(f: Function) -> list[str] | None:
    """Template parameter kinds and defaults without their names (`class T, int B = 4` ->
    ["typename", "int=4"]); None for a kernel that is not a template."""
    if f.template_params is None:
        return None
    out = []
    for p in f.template_params:
        kind, _, default = re.sub(r"\bclass\b", "typename", p).partition("=")
        if len(re.findall(r"[A-Za-z_]\w*", kind)) > 1:  # drop the parameter's name
            kind = re.sub(r"[A-Za-z_]\w*\s*$", "", kind.strip())
        out.append(re.sub(r"\s+", "", kind) + ("=" + re.sub(r"\s+", "", default) if default.strip() else ""))
    return out


def _code_only(text: str) -> str:
    return re.sub(r"\s+", "", strip_comments_and_strings(text))


def _overlaps(a: Edit, b: Edit) -> bool:
    return a.file == b.file and a.start_line <= b.end_line and b.start_line <= a.end_line


def apply_proposal(proposal: Proposal, files: dict[str, str],
                   editable: dict[str, list[tuple[int, int]]]) -> GuardResult:
    """Apply the edits if every rule holds; otherwise report each violation."""
    edits = sorted(proposal.edits, key=lambda e: (e.file, e.start_line))
    v = _overlap_violations(edits)
    for e in edits:
        v += _edit_violations(e, files, editable)
    if v:
        return GuardResult(ok=False, violations=v)

    new_files = _applied(files, edits)
    for name in {e.file for e in edits}:
        v += _kernel_rules(name, files[name], new_files[name], edits)
        v += _launch_rule(name, files[name], new_files[name], edits)
    if v:
        return GuardResult(ok=False, violations=v)
    diff = unified_diff(files, new_files)
    unidiff.PatchSet(diff)  # our own diff must parse; a failure here is a bug, not bad input
    return GuardResult(ok=True, files=new_files, diff=diff)


def _overlap_violations(edits: list[Edit]) -> list[Violation]:
    """Each edit that overlaps the one before it (`edits` sorted by file and first line)."""
    return [Violation(rule="overlapping-edits", file=y.file, start_line=y.start_line, end_line=y.end_line,
                      message=f"overlaps the edit of lines {x.start_line}-{x.end_line}")
            for x, y in zip(edits, edits[1:], strict=False) if _overlaps(x, y)]


def _edit_violations(e: Edit, files: dict[str, str], editable: dict[str, list[tuple[int, int]]]) -> list[Violation]:
    """The rules one edit breaks on its own: past the file's end, outside the editable lines (host code
    or not), or a no-op."""
    n_lines = len(files[e.file].splitlines())
    if e.end_line > n_lines:
        return [Violation(rule="outside-allowed-region", file=e.file, start_line=e.start_line, end_line=e.end_line,
                          message=f"the file has only {n_lines} lines")]
    v: list[Violation] = []
    allowed = any(a <= e.start_line and e.end_line <= b for a, b in editable.get(e.file, []))
    if not allowed:
        v.append(_outside_violation(e, files[e.file], editable))
    old = "\n".join(files[e.file].splitlines()[e.start_line - 1:e.end_line])
    if _code_only(old) == _code_only(e.new_text):
        v.append(Violation(rule="no-op", file=e.file, start_line=e.start_line, end_line=e.end_line,
                           message="only whitespace or comments change"))
    return v


def _outside_violation(e: Edit, text: str, editable: dict[str, list[tuple[int, int]]]) -> Violation:
    """Why an edit outside the editable lines is refused: it changes a host function, or the lines
    are simply not among those allowed."""
    host = [f for f in functions(text) if not f.is_device
            and f.start_line <= e.end_line and e.start_line <= f.end_line]
    if host:
        return Violation(rule="host-code", file=e.file, start_line=e.start_line, end_line=e.end_line,
                         message=f"changes host function {host[0].name} (validation, output and launch "
                                 "code stay as they are)")
    ranges = ", ".join(f"{a}-{b}" for a, b in editable.get(e.file, [])) or "none"
    return Violation(rule="outside-allowed-region", file=e.file, start_line=e.start_line,
                     end_line=e.end_line, message=f"editable lines of {e.file} are {ranges}")


def _applied(files: dict[str, str], edits: list[Edit]) -> dict[str, str]:
    """All the files, with the edits (none overlapping) applied."""
    new_files = dict(files)
    for name in {e.file for e in edits}:
        lines = files[name].splitlines()
        for e in sorted((e for e in edits if e.file == name), key=lambda e: -e.start_line):
            lines[e.start_line - 1:e.end_line] = e.new_text.splitlines()
        # A file with Windows line ends keeps them, on the edited lines too.
        newline = "\r\n" if "\r\n" in files[name] else "\n"
        new_files[name] = newline.join(lines) + (newline if files[name].endswith("\n") else "")
    return new_files


def _host_ranges(text: str) -> list[tuple[int, int]]:
    """The lines of `text`'s host functions and of its macros that launch a kernel."""
    macros = launch_macros(strip_comments_and_strings(text))
    return ([(f.start_line, f.end_line) for f in functions(text) if not f.is_device]
            + [(d.start_line, d.end_line) for d in macros])


def _host_code(text: str) -> str:
    """The host functions of `text` and its macros that launch a kernel, one after another."""
    lines = text.splitlines()
    return "\n".join("\n".join(lines[a - 1:b]) for a, b in _host_ranges(text))


def _launch_rule(name: str, old: str, new: str, edits: list[Edit]) -> list[Violation]:
    """Host code the edits touched (a macro that launches a kernel included) differs from the
    original only in launch configurations."""
    touched = [e for e in edits if e.file == name
               and any(a <= e.end_line and e.start_line <= b for a, b in _host_ranges(old))]
    if not touched:
        return []
    sites = launch_sites(old)
    if masked(_host_code(old), sites) == masked(_host_code(new), sites):
        return []
    first, last = min(e.start_line for e in touched), max(e.end_line for e in touched)
    return [Violation(rule="launch-config", file=name, start_line=first, end_line=last,
                      message="in host code only a launch's execution configuration may change: its grid, block "
                              "and dynamic shared memory, and the one-line declarations they are computed from; "
                              "the stream, the kernel's arguments and every other statement stay as they are")]


def _kernel_rules(name: str, old: str, new: str, edits: list[Edit]) -> list[Violation]:
    v: list[Violation] = []
    old_k: dict[str, list[Function]] = {}
    new_k: dict[str, list[Function]] = {}
    for text, into in ((old, old_k), (new, new_k)):
        for f in functions(text):
            if f.is_kernel:
                into.setdefault(f.name, []).append(f)
    first = min((e.start_line for e in edits if e.file == name), default=1)
    last = max((e.end_line for e in edits if e.file == name), default=1)
    for k, now in new_k.items():
        if k not in old_k:
            v.append(Violation(rule="new-kernel", file=name, start_line=first, end_line=last,
                               message=f"adds __global__ function {k}; no new kernels"))
        elif len(now) > len(old_k[k]):  # overloads of one name are kept as they were
            v.append(Violation(rule="duplicate-kernel", file=name, start_line=first, end_line=last,
                               message=f"__global__ function {k} now appears {len(now)} times"))
    for k, was in old_k.items():
        now = new_k.get(k, [])
        if len(now) < len(was):
            f = was[0]
            v.append(Violation(rule="kernel-removed", file=name, start_line=f.start_line, end_line=f.end_line,
                               message=f"kernel {k} is gone"))
        elif len(was) == 1 and len(now) == 1:
            v += _signature_rules(name, was[0], now[0])
        elif len(now) == len(was) and sorted(map(_interface, was)) != sorted(map(_interface, now)):
            f = was[0]
            v.append(Violation(rule="signature-changed", file=name, start_line=f.start_line, end_line=f.body_start_line,
                               message=f"the overloads of kernel {k} changed their parameters; keep the launch "
                                       "interface"))
    return v


def _interface(f: Function) -> str:
    return repr((_normal_params(f), _normal_template(f)))


def _signature_rules(name: str, f: Function, g: Function) -> list[Violation]:
    """A kernel's parameters and template head, before (`f`) and after (`g`) the edit."""
    k = f.name
    if _normal_params(f) != _normal_params(g):
        return [Violation(rule="signature-changed", file=name, start_line=f.start_line, end_line=f.body_start_line,
                          message=f"kernel {k}'s parameters changed from ({', '.join(f.params)}) to "
                                  f"({', '.join(g.params)}); keep the launch interface")]
    if _normal_template(f) != _normal_template(g):
        was, now = (f"template <{', '.join(x.template_params)}>" if x.template_params is not None
                    else "no template head" for x in (f, g))
        return [Violation(rule="signature-changed", file=name, start_line=f.start_line, end_line=f.body_start_line,
                          message=f"kernel {k}'s template parameters changed from {was} to {now}; the launches "
                                  "instantiate it as it was")]
    return []


def unified_diff(old: dict[str, str], new: dict[str, str]) -> str:
    """A unified diff (a/ b/ paths) of every file that changed, with LF line ends whatever the files
    use (what it is read for, the review's suggestions and the model, wants the lines only)."""
    parts = []
    for name in sorted(old):
        if old[name] == new.get(name, old[name]):
            continue
        a, b = (text.replace("\r\n", "\n").splitlines(keepends=True) for text in (old[name], new[name]))
        parts.extend(difflib.unified_diff(a, b, fromfile=f"a/{name}", tofile=f"b/{name}"))
    text = "".join(parts)
    return text if text.endswith("\n") or not text else text + "\n"
