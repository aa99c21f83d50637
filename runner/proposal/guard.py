"""Guarded application of a Proposal: apply its edits, produce a unified diff, and reject what breaks
a rule, naming the rule and the lines.

Rules: overlapping-edits, outside-allowed-region, host-code, launch-config, preprocessor,
opaque-syntax, signature-changed, kernel-removed, new-kernel, duplicate-kernel, no-op. Host code may
change only where the prompt allowed a launch's execution configuration (runner.scan.launch_sites):
the launch's grid, block and dynamic shared memory and the one-line declarations they are computed
from, nothing else, and those only as plain arithmetic (runner.base.launch_expr). Everything outside
the device-only functions (kernels, `__device__` functions without `__host__`) is host code: a
namespace-scope declaration, a macro, a `__host__ __device__` function. The edit text is the
adversary's: preprocessor lines (but `#pragma unroll` in a device function's body), line splices,
trigraphs, and syntax the scanner reads otherwise than the compiler (raw strings, digit separators,
digraphs, universal character names) are refused where the lines replaced did not hold them.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import NamedTuple

import unidiff
from pydantic import BaseModel, Field

from runner.base.launch_expr import (
    ALLOWED_CALLS,
    TYPE_WORDS,
    callees,
    declarator_faults,
    declared_names,
    expression_faults,
)
from runner.proposal.parser import Edit, Proposal
from runner.scan.cuda_source import Function, definitions, functions, strip_comments_and_strings
from runner.scan.launch_sites import launch_macros, launch_sites, masked, masked_pieces


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
    for name in sorted({e.file for e in edits}):
        mine = [e for e in edits if e.file == name]
        v += _kernel_rules(name, files[name], new_files[name], edits)
        syntax = _syntax_rules(files[name], new_files[name], mine) + _host_device_rule(name, files[name], mine, files)
        launch = _launch_rule(name, files[name], new_files[name], edits, files)
        # the scope rule is the catch-all: where a more telling rule refused the edit already, it adds nothing
        v += syntax + (launch or ([] if syntax else _scope_rule(name, files[name], new_files[name], mine, files)))
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


def _launch_rule(name: str, old: str, new: str, edits: list[Edit], files: dict[str, str]) -> list[Violation]:
    """Host code the edits touched (a macro that launches a kernel included) differs from the
    original only in launch configurations, and what changed there is plain arithmetic."""
    touched = [e for e in edits if e.file == name
               and any(a <= e.end_line and e.start_line <= b for a, b in _host_ranges(old))]
    if not touched:
        return []
    first, last = min(e.start_line for e in touched), max(e.end_line for e in touched)
    sites = launch_sites(old)
    was, now = _host_code(old), _host_code(new)
    if masked(was, sites) != masked(now, sites):
        return [Violation(rule="launch-config", file=name, start_line=first, end_line=last,
                          message="in host code only a launch's execution configuration may change: its grid, "
                                  "block and dynamic shared memory, and the one-line declarations they are computed "
                                  "from; the stream, the kernel's arguments and every other statement stay as they "
                                  "are")]
    faults = _configuration_faults(masked_pieces(was, sites), masked_pieces(now, sites), was, files)
    return [_arithmetic_violation(name, first, last, faults)] if faults else []


def _arithmetic_violation(name: str, first: int, last: int, faults: list[str]) -> Violation:
    return Violation(rule="launch-config", file=name, start_line=first, end_line=last,
                     message="a launch configuration is arithmetic over names the host code uses, with casts and "
                             "calls of min, max, dim3, sizeof, static_cast, ceil or floor (or what it called "
                             f"before); this one holds {'; '.join(faults)}")


def _squashed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _configuration_faults(old: list[tuple[str, str]], new: list[tuple[str, str]], host: str,
                          files: dict[str, str]) -> list[str]:
    """Why the configurations and declarations an edit changed (`new` against `old`, as
    masked_pieces lists them) are not plain arithmetic over the names the host code uses."""
    changed = [(kind, a, b) for (kind, a), (_, b) in zip(old, new, strict=False) if _squashed(a) != _squashed(b)]
    if len(old) != len(new):
        return ["a launch or a declaration more or fewer than before"]
    if not changed:
        return []
    plain, shadowed = _definitions_read(files)
    known = set(re.findall(r"\b[A-Za-z_]\w*\b", strip_comments_and_strings(host))) | plain
    faults: list[str] = []
    for kind, a, b in changed:
        if kind == "config":
            faults += expression_faults(b, known, callees(a), commas=True, shadowed=shadowed)
        else:
            faults += declarator_faults(b, known, callees(a), declared_names(a), shadowed=shadowed)
    return list(dict.fromkeys(faults))


def _definitions_read(files: dict[str, str]) -> tuple[set[str], set[str]]:
    """The macros and file-scope constants of the sources whose definitions call nothing but what a
    launch configuration may call (`#define BLOCK 256`, `constexpr int kBlock = 256;`): names an
    edit may use in a launch's configuration though the host code did not; and the names the
    sources define otherwise (host-callable functions, macros that call): a `min` of theirs is not
    the allowed one."""
    plain: set[str] = set()
    other: set[str] = set()
    for text in files.values():
        lines = strip_comments_and_strings(text).splitlines()
        funcs = functions(text)
        other |= {f.name.split("::")[-1] for f in funcs if not f.device_only}
        for ident, ranges in definitions(text, funcs).items():
            body = "\n".join("\n".join(lines[a - 1:b]) for a, b in ranges)
            called = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", body)) - {ident} - ALLOWED_CALLS - TYPE_WORDS
            (other if called else plain).add(ident)
    return plain, other


# A compiler's reading of a text, as far as the rules below need it: comments, string and character
# literals (blanked), raw strings and preprocessing numbers (a digit separator `1'000` is one; read as
# a character literal it hid everything to the next quote from the scanner), words.
_LEX = re.compile(r"""
    (?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))
  | (?P<raw>\b(?:u8|[uUL])?R")
  | (?P<string>\b(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"?|"(?:\\.|[^"\\\n])*"?)
  | (?P<number>\.?\d(?:[eEpP][+-]|['\w.])*)
  | (?P<char>\b(?:u8|[uUL])?'(?:\\.|[^'\\\n])*'?|'(?:\\.|[^'\\\n])*'?)
  | (?P<word>[A-Za-z_]\w*)
""", re.X)
_DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)")
_CONDITIONAL = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")
_UNROLL = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+(?:unroll(?:[ \t(]+[\w \t+\-*/()]*)?|nounroll)[ \t]*$")
_CONTINUED = re.compile(r"(?:\\|\?\?/)[ \t]*$")
# What an edit may not add, by rule: (rule, pattern over the code, what it is).
_ADDED = (
    ("preprocessor", re.compile(r"\b(?:_Pragma|__pragma)\b"), "a _Pragma operator"),
    ("opaque-syntax", re.compile(r"<%|%>|<:|:>|%:"), "a digraph (the scanner reads `<%`/`%>` as no braces)"),
    ("opaque-syntax", re.compile(r"\\[uU]"), "a universal character name"),
    ("host-code", re.compile(r"\b(?:__attribute__|__declspec)\b|\[\["), "an attribute (a constructor, destructor or "
                                                                         "section runs or places code on the host)"),
    ("host-code", re.compile(r"\b__host__\b"), "__host__ (a function the host may call)"),
)


class _Lexed(NamedTuple):
    code: str  # comments and string and character literals blanked, every newline and column kept
    raw_strings: int
    separators: int  # digit separators
    line_comments: int
    literals: int  # string and character literals


def _lexed(text: str) -> _Lexed:
    """`text` as far as the rules below read it."""
    out, last, counts = [], 0, {"raw": 0, "separator": 0, "line-comment": 0, "literal": 0}
    for m in _LEX.finditer(text):
        kind = m.lastgroup
        if kind in ("comment", "string", "char"):
            out += [text[last:m.start()], re.sub(r"[^\n]", " ", m.group(0))]
            last = m.end()
        if kind == "raw":
            counts["raw"] += 1
        elif kind == "number" and "'" in m.group(0):
            counts["separator"] += 1
        elif kind == "comment" and m.group(0).startswith("//"):
            counts["line-comment"] += 1
        elif kind in ("string", "char"):
            counts["literal"] += 1
    return _Lexed("".join(out) + text[last:], counts["raw"], counts["separator"], counts["line-comment"],
                  counts["literal"])


def _new_starts(edits: list[Edit]) -> list[int]:
    """The first line of each edit's text in the edited file (`edits`: one file's, by first line)."""
    out, shift = [], 0
    for e in edits:
        out.append(e.start_line + shift)
        shift += len(e.new_text.splitlines()) - (e.end_line - e.start_line + 1)
    return out


def _syntax_rules(old: str, new: str, edits: list[Edit]) -> list[Violation]:
    """Preprocessor lines, splices and syntax the scanner misreads that an edit adds (what the lines
    it replaces held may stay); `#pragma unroll` inside a device function's body is allowed (a
    `__host__ __device__` one's too: the host's compiler reads it as a hint as well)."""
    bodies = [(f.body_start_line, f.end_line) for f in functions(new) if f.is_device]  # `__host__ __device__` too

    def in_body(line: int) -> bool:
        return any(a < line < b for a, b in bodies)

    v: list[Violation] = []
    lines = old.splitlines()
    for e, first in zip(edits, _new_starts(edits), strict=True):
        was = "\n".join(lines[e.start_line - 1:e.end_line])
        now = "\n".join(e.new_text.splitlines())  # as applied: every line break Python knows is a newline then
        for rule, message in _syntax_faults(was, now, lambda i, first=first: in_body(first + i)):
            v.append(Violation(rule=rule, file=e.file, start_line=e.start_line, end_line=e.end_line, message=message))
    return v


def _syntax_faults(was: str, now: str, in_body) -> list[tuple[str, str]]:
    """(rule, what) for each thing `now` adds to `was` that the rules refuse; `in_body(i)`: whether
    line i (0-based) of `now` lies inside a device function's body once applied."""
    before, after = _lexed(was), _lexed(now)
    faults = _splice_faults(was, now, after.line_comments)
    faults += [("preprocessor", f) for f in _directive_faults(was, before.code, now, after.code, in_body)]
    if after.raw_strings > before.raw_strings:
        faults.append(("opaque-syntax", "adds a raw string literal (the scanner reads its quotes otherwise)"))
    if after.separators > before.separators:
        faults.append(("opaque-syntax", "adds a digit separator (the scanner reads `'` as a character literal)"))
    for rule, pattern, what in _ADDED:
        if len(pattern.findall(after.code)) > len(pattern.findall(before.code)):
            faults.append((rule, f"adds {what}"))
    return faults


def _splice_faults(was: str, now: str, line_comments: int) -> list[tuple[str, str]]:
    """Line splices (a line ending with `\\`, or the trigraph `??/`) that an edit adds: they join the
    next line, one the edit does not show, to a comment or a macro. In a macro's body (the lines
    replaced end with one) each line of the edit must go on ending with one, and hold no `//`."""
    faults: list[tuple[str, str]] = []
    old_lines, new_lines = was.splitlines(), now.splitlines()
    if len(re.findall(r"\?\?[=/'()!<>\-]", now)) > len(re.findall(r"\?\?[=/'()!<>\-]", was)):
        faults.append(("preprocessor", "adds a trigraph"))
    if old_lines and _CONTINUED.search(old_lines[-1]):
        if not all(_CONTINUED.search(ln) for ln in new_lines):
            faults.append(("preprocessor", "ends a line of the macro (each line of its body ends with `\\`)"))
        if line_comments:
            faults.append(("preprocessor", "a `//` comment in a macro's body (its `\\` would continue the comment)"))
        return faults
    kept = [ln for ln in old_lines if _CONTINUED.search(ln)]
    if any(_CONTINUED.search(ln) and ln not in kept for ln in new_lines):
        faults.append(("preprocessor", "adds a line splice (`\\` at a line's end joins the next line to it)"))
    return faults


def _directive_faults(was: str, was_code: str, now: str, now_code: str, in_body) -> list[str]:
    """Preprocessor lines of `now` that `was` did not hold (but `#pragma unroll` in a device
    function's body), and `#if` lines in another order than before."""
    def directives(raw: str, code: str) -> list[tuple[int, str, str]]:
        return [(i, " ".join(r.split()), c) for i, (r, c) in enumerate(zip(raw.splitlines(), code.splitlines(),
                                                                          strict=False)) if _DIRECTIVE.match(c)]

    before, after = directives(was, was_code), directives(now, now_code)
    left = Counter(d for _, d, _ in before)
    faults = []
    for i, d, code in after:
        if left[d] > 0:
            left[d] -= 1
        elif not (_UNROLL.match(code) and in_body(i)):
            faults.append(f"adds the preprocessor line `{d[:60]}` (only `#pragma unroll` inside a device function's "
                          "body)")
    if [d for _, d, c in before if _CONDITIONAL.match(c)] != [d for _, d, c in after if _CONDITIONAL.match(c)]:
        faults.append("moves, adds or drops #if/#else/#endif lines")
    return faults


def _skeleton(text: str, host_device: set[str]) -> str:
    """`text`'s code outside its device-only functions and the `__host__ __device__` functions named
    `host_device` (comments and strings blanked, preprocessor lines kept): the host code,
    namespace-scope declarations and macros."""
    clean = strip_comments_and_strings(text)
    spans = sorted(f.span for f in functions(text) if f.device_only or f.is_device and f.name in host_device)
    out, last = [], 0
    for a, b in spans:
        if a >= last:
            out.append(clean[last:a])
            last = b + 1
    return "".join(out) + clean[last:]


MAX_ATTRIBUTED = 16  # edits of a file the scope rule tries one by one to name those that break it


def _scope_rule(name: str, old: str, new: str, edits: list[Edit], files: dict[str, str]) -> list[Violation]:
    """The code outside the device-only functions is the original's, launch configurations apart
    (and those plain arithmetic): no namespace-scope declaration, macro or host-callable
    (`__host__ __device__`) function added or changed by an edit of a device function's lines."""
    sites = launch_sites(old)
    host_device = {f.name for f in functions(old) if f.is_device and not f.device_only}
    was, now = _skeleton(old, host_device), _skeleton(new, host_device)
    original = masked(was, sites)
    if original == masked(now, sites):
        # what masking hides: a configuration variable declared at namespace scope, on a kernel's first line
        faults = _configuration_faults(masked_pieces(was, sites), masked_pieces(now, sites), was, files)
        return [_arithmetic_violation(name, min(e.start_line for e in edits), max(e.end_line for e in edits),
                                      faults)] if faults else []
    # which edits change it on their own (each a pass over the file: for a few edits only)
    alone = [e for e in edits[:MAX_ATTRIBUTED]
             if masked(_skeleton(_applied({name: old}, [e])[name], host_device), sites) != original]
    return [Violation(rule="host-code", file=name, start_line=e.start_line, end_line=e.end_line,
                      message="adds or changes code outside the device functions (a namespace-scope declaration or "
                              "statement, a macro, or a function the host may call); only device code and launch "
                              "configurations may change") for e in alone or edits]


# What a `__host__ __device__` function's edit may call besides the device functions of the sources
# and what the function called before: math and intrinsics (the host's versions of these compute).
_DEVICE_MATH = frozenset({
    "min", "max", "abs", "fabs", "fabsf", "sqrt", "sqrtf", "rsqrt", "rsqrtf", "cbrt", "cbrtf", "exp", "expf", "exp2",
    "exp2f", "exp10", "exp10f", "expm1", "expm1f", "log", "logf", "log2", "log2f", "log10", "log10f", "log1p",
    "log1pf", "pow", "powf", "sin", "sinf", "cos", "cosf", "tan", "tanf", "sincos", "sincosf", "asin", "asinf", "acos",
    "acosf", "atan", "atanf", "atan2", "atan2f", "sinh", "sinhf", "cosh", "coshf", "tanh", "tanhf", "erf", "erff",
    "erfc", "erfcf", "floor", "floorf", "ceil", "ceilf", "trunc", "truncf", "round", "roundf", "rint", "rintf",
    "lrint", "llrint", "fmod", "fmodf", "remainder", "remainderf", "fma", "fmaf", "fmin", "fminf", "fmax", "fmaxf",
    "hypot", "hypotf", "copysign", "copysignf", "ldexp", "ldexpf", "frexp", "frexpf", "isnan", "isinf", "isfinite",
    "signbit", "umin", "umax", "llmin", "llmax", "ullmin", "ullmax", "__ldg", "__ldca", "__ldcs", "__ldcg",
    "__fdividef", "__expf", "__logf", "__sinf", "__cosf", "__powf", "__saturatef", "__fmul_rn", "__fadd_rn",
    "__fsub_rn", "__fmaf_rn", "__frcp_rn", "__fsqrt_rn", "__dmul_rn", "__dadd_rn", "__fma_rn", "__float2int_rn",
    "__float2int_rz", "__int2float_rn", "__float_as_int", "__int_as_float", "__popc", "__popcll", "__clz", "__clzll",
    "__ffs", "__ffsll", "__brev", "__mul24", "__umul24", "__mulhi", "__umulhi", "static_cast", "sizeof", "alignof"})
# Control words a `(` or `{` follows; keywords an edit of a host-callable function may not add.
_CONTROL = frozenset({"if", "for", "while", "switch", "return", "else", "do", "sizeof", "alignof", "static_assert",
                      "const", "noexcept", "decltype"})
_HOST_DEVICE_DENIED = ("new", "delete", "throw", "typeid", "asm", "__asm__", "__asm", "static", "extern",
                       "thread_local", "operator", "try", "catch", "goto", "template")
_CALL_OR_BRACE = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?[({]")


def _host_device_rule(name: str, old: str, edits: list[Edit], files: dict[str, str]) -> list[Violation]:
    """An edit of a `__host__ __device__` function (the host may call it) adds no call but of the
    sources' device functions, math and what the function called before, and no literal, qualified
    name, lambda or keyword that runs code (`new`, `throw`, `asm`, `static`, ...)."""
    both = [f for f in functions(old) if f.is_device and not f.device_only]
    if not both:
        return []
    device = {f.name.split("::")[-1] for text in files.values() for f in functions(text) if f.is_device}
    lines = old.splitlines()
    v = []
    for e in edits:
        for f in (f for f in both if f.start_line <= e.end_line and e.start_line <= f.end_line):
            was = "\n".join(lines[max(f.start_line, e.start_line) - 1:min(f.end_line, e.end_line)])
            whole = "\n".join(lines[f.start_line - 1:f.end_line])
            faults = _host_device_faults(whole, was, "\n".join(e.new_text.splitlines()), device)
            if faults:
                v.append(Violation(rule="host-code", file=name, start_line=e.start_line, end_line=e.end_line,
                                   message=f"changes __host__ __device__ function {f.name}, which the host may call "
                                           f"as well, adding {'; '.join(faults)} (only calls of device functions, "
                                           "math and what it called before)"))
    return v


def _host_device_faults(function: str, was: str, now: str, device: set[str]) -> list[str]:
    """What `now` (replacing `was`, lines of the `__host__ __device__` function `function`) adds
    that could run host code."""
    before, after, whole = _lexed(was), _lexed(now), _lexed(function).code
    known = set(_CALL_OR_BRACE.findall(whole)) | device | _DEVICE_MATH | _CONTROL | TYPE_WORDS
    faults = [f"a call or construction of {n}" for n in dict.fromkeys(_CALL_OR_BRACE.findall(after.code))
              if n not in known and not n.startswith("make_")]
    faults += [f"the keyword {w}" for w in _HOST_DEVICE_DENIED
               if len(re.findall(rf"\b{w}\b", after.code)) > len(re.findall(rf"\b{w}\b", before.code))]
    if after.literals > before.literals:
        faults.append("a string or character literal")
    if after.code.count("::") > before.code.count("::"):
        faults.append("a qualified name")
    if _lambdas(after.code) > _lambdas(before.code):
        faults.append("a lambda")
    if _indirect_calls(after.code) > _indirect_calls(before.code):
        faults.append("a call through an expression (a function pointer, a subscript or a call's result)")
    return faults


_GROUP_READ = 4096  # characters read back for the group before a `(` (nested groups read again each time)


def _indirect_calls(code: str) -> int:
    """How many `(` of `code` call what an expression yields (`(*fp)(x)`, `table[i](x)`, `f(x)(y)`):
    a `)` or `]` before them that closes no cast (`(float)(x)`) or condition (`if (c) (x)`)."""
    count = 0
    for m in re.finditer(r"[)\]]\s*\(", code):
        if code[m.start()] == "]":
            count += 1
            continue
        depth, j = 0, m.start()
        while j >= max(0, m.start() - _GROUP_READ):  # a longer group counts as a call
            depth += {")": 1, "(": -1}.get(code[j], 0)
            if depth == 0:
                break
            j -= 1
        group = code[j + 1:m.start()].split()
        word = re.search(r"(\w+)\s*\Z", code[max(0, j - 32):max(j, 0)])
        cast = group and all(w in TYPE_WORDS or w == "*" for w in " * ".join(group).replace("*", " * ").split())
        count += not cast and not (word and word.group(1) in _CONTROL | {"while", "for"})
    return count


def _lambdas(code: str) -> int:
    """How many `[` of `code` open no subscript (a lambda's captures)."""
    count = 0
    for m in re.finditer(r"\[", code):
        before = re.search(r"(\w+|[)\]])?\s*\Z", code[max(0, m.start() - 64):m.start()])
        subscript = before is not None and before.group(1) not in (None, "return", "else", "do", "case")
        count += not subscript and not code.startswith("[[", m.start()) and code[m.start() - 1:m.start()] != "["
    return count


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
    defaults = [[re.sub(r"\s+", "", p.partition("=")[2]) for p in x.params] for x in (f, g)]
    if defaults[0] != defaults[1]:
        return [Violation(rule="host-code", file=name, start_line=f.start_line, end_line=f.body_start_line,
                          message=f"kernel {k}'s default arguments changed: the host evaluates them where a "
                                  "launch leaves them out")]
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
