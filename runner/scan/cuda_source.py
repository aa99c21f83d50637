"""A small scanner for CUDA C++ sources: where each top-level function starts, where its body ends,
its qualifiers, name and parameters. Enough to show hot kernels in a prompt and to confine edits;
not a C++ parser (templates are handled, macros are not expanded).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

# `#include "header"`: a local header, resolved next to the including file (not <system> ones).
LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
STRING_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')  # one-line "..." with its escapes; group 1: the text

_QUALIFIERS = ("__global__", "__device__", "__host__")
# How much of a head's end the patterns anchored there read: a name, a namespace's or a class's
# head is far shorter, and the text is the pull request's (patterns over a whole head took n^2
# steps on a run of letters or spaces, minutes for 40 KB; an attacker's pass).
_TAIL = 1024
_TRAILING_QUALIFIER = re.compile(r"\s*(const|noexcept|override|final)\s*\Z")
_NAME_AT_END = re.compile(r"(operator\s*\(\s*\)|[A-Za-z_]\w*(?:::\w+)*)\Z")


@dataclass(frozen=True)
class Function:
    """A function definition in a source file; lines are 1-based and inclusive."""

    name: str
    qualifiers: frozenset[str]
    start_line: int  # first line of the declaration (template<...> or qualifiers)
    body_start_line: int  # line of the opening brace
    end_line: int  # line of the closing brace
    signature: str  # declaration text from the start up to the opening brace, whitespace folded
    params: tuple[str, ...] = field(default=())
    owner: str | None = None  # the struct or class whose member this is (`Saxpy` for `Saxpy::operator()`)
    span: tuple[int, int] = (0, 0)  # offsets of the text: the declaration's first character and the closing brace

    @property
    def template_params(self) -> tuple[str, ...] | None:
        """The template parameter list (`template <typename T, int B>` -> ("typename T", "int B")),
        or None for a function that is not a template."""
        m = re.match(r"template\s*<", self.signature)
        if not m:
            return None
        end = _closing_angle(self.signature, m.end() - 1)
        return _split_params(self.signature[m.end():end])

    @property
    def is_kernel(self) -> bool:
        return "__global__" in self.qualifiers

    @property
    def is_device(self) -> bool:
        return "__device__" in self.qualifiers or self.is_kernel

    @property
    def device_only(self) -> bool:
        """Whether only the GPU runs it: a kernel or a `__device__` function without `__host__`."""
        return self.is_device and "__host__" not in self.qualifiers


@lru_cache(maxsize=256)
def strip_comments_and_strings(text: str) -> str:
    """Blank out comments and string/char literals, keeping every newline and column. Remembered per
    text: init blanks the same workspace files for every program and every size constant it checks."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


_LICENSE = re.compile(r"copyright|licen[cs]e|redistribution|spdx|all rights reserved|permission is hereby granted",
                      re.IGNORECASE)


def after_license_header(text: str) -> int:
    """The first line (1-based) after a file's opening license or copyright comments; comments
    that say what the code does are kept, and so is everything from the first line of code on."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if not stripped:
            i += 1
            continue
        if stripped.startswith("//"):
            j = i
            while j < len(lines) and lines[j].strip().startswith("//"):
                j += 1
        elif stripped.startswith("/*"):
            j = i
            while j < len(lines) and "*/" not in lines[j][lines[j].find("/*") + 2 if j == i else 0:]:
                j += 1
            j += 1
        else:
            break
        if not _LICENSE.search("\n".join(lines[i:j])):
            break
        i = j
    return i + 1


def line_of(text: str, pos: int) -> int:
    """The 1-based line of character `pos` of `text`."""
    return text.count("\n", 0, pos) + 1


def _split_params(params: str) -> tuple[str, ...]:
    parts, depth, cur = [], 0, []
    prev = ""
    for ch in params:
        if ch in "<([":
            depth += 1
        elif ch in ")]" or (ch == ">" and prev != "-"):
            depth -= 1
        prev = ch
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return tuple(p for p in parts if p and p != "void")


# What a CUDA function's head may hold in parentheses: __launch_bounds__(256, 2) or a macro for it
# (LAUNCH_BOUNDS(T, B), C10_LAUNCH_BOUNDS_1(256)), __attribute__((noinline)).
_HEAD_ATTRIBUTE = re.compile(r"\b(?:\w*(?i:launch_bounds)\w*|__attribute__|__declspec)\s*\(")


def _without_attributes(head: str) -> str:
    """`head` with each attribute's parenthesized arguments taken out, however deeply they nest
    (`__launch_bounds__(W, MIN(SHM / sizeof(T<W>), 8))`)."""
    out, at = [], 0
    for m in _HEAD_ATTRIBUTE.finditer(head):
        if m.start() < at:
            continue  # inside an attribute already taken out
        depth, j = 0, m.end() - 1
        while j < len(head):
            depth += {"(": 1, ")": -1}.get(head[j], 0)
            if depth == 0:
                break
            j += 1
        out.append(head[at:m.start()])
        at = j + 1
    return "".join(out) + head[at:]


# A preprocessor line with the lines it continues over (each ending with a backslash).
_PREPROCESSOR_LINES = re.compile(r"(?m)^[ \t]*#(?:.*\\[ \t]*\n)*.*$")


def code_text(text: str) -> str:
    """`text` with comments, string literals and preprocessor lines blanked, every newline and
    column kept: what defines functions. Preprocessor lines hold no definitions and may hold
    unbalanced braces; a macro goes on over every line that ends with a backslash (a CHECK macro's
    `do { ... } while (0)`). Where the branches of an `#if` open or close braces (a loop head, or a
    function's head, written once per branch), one branch is kept (see _one_branch)."""
    return _PREPROCESSOR_LINES.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                                   _one_branch(strip_comments_and_strings(text)))


_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")


def _one_branch(clean: str) -> str:
    """`clean` (comments and strings blanked) with all but one branch of each `#if` chain blanked
    where some branch leaves braces or parentheses open or closes more than it opens (a function's
    head written once per branch, its parameters after the `#endif`): counting both branches of
    `#ifdef LINKED for (...) { #else for (...) { #endif` would see two braces where the compiler
    sees one, and every function after it would be misplaced. The first branch is kept, or the
    next one after an `#if 0`. Chains whose branches each balance their braces stay whole."""
    lines = clean.split("\n")
    chains: list[list[tuple[int, str]]] = []  # open chains: (line index, directive's condition) per branch
    for n, line in enumerate(lines):
        m = _CONDITIONAL.match(line)
        if m is None:
            continue
        word = m.group(1)
        if word.startswith("if"):
            chains.append([(n, m.group(2).strip() if word == "if" else word)])
        elif chains and word != "endif":
            chains[-1].append((n, word))
        elif chains:
            _keep_one(lines, chains.pop(), n)
    return "\n".join(lines)


def _keep_one(lines: list[str], branches: list[tuple[int, str]], endif: int) -> None:
    """Blank all branches but one of a chain (lines[start:endif]) when any is unbalanced."""
    bounds = [(start, end) for (start, _), (end, _) in zip(branches, [*branches[1:], (endif, "")], strict=True)]
    nets = [(sum(line.count("{") - line.count("}") for line in lines[a + 1:b]),
             sum(line.count("(") - line.count(")") for line in lines[a + 1:b])) for a, b in bounds]
    if len(bounds) < 2 or all(net == (0, 0) for net in nets):
        return
    keep = 1 if branches[0][1] == "0" else 0
    for i, (a, b) in enumerate(bounds):
        if i != keep:
            for k in range(a + 1, b):
                lines[k] = " " * len(lines[k])


def functions(text: str) -> list[Function]:
    """Top-level function definitions (also inside namespaces), in file order."""
    clean = code_text(text)
    found: list[Function] = []
    depth = 0
    # "ns" for namespace/extern blocks, "class:<Name>" for struct/class bodies (their member
    # functions are found too, named `Name::member`, for functors' operator()), "other" for the rest
    scope_kind: list[str] = []
    stmt_start = 0
    i, n = 0, len(clean)
    while i < n:
        c = clean[i]
        if c == "{":
            head = clean[stmt_start:i]
            visible = all(k == "ns" or k.startswith("class:") for k in scope_kind)
            fn = _as_function(text, clean, head, stmt_start) if visible else None
            if fn is not None:
                end = _match_brace(clean, i)
                owners = [k[len("class:"):] for k in scope_kind if k.startswith("class:")]
                found.append(Function(
                    name="::".join([*owners, fn[0]]), qualifiers=fn[1], start_line=line_of(clean, fn[2]),
                    body_start_line=line_of(clean, i), end_line=line_of(clean, end),
                    signature=" ".join(clean[fn[2]:i].split()), params=fn[3],
                    owner="::".join(owners) or None, span=(fn[2], end)))
                i = end + 1
                stmt_start = i
                continue
            # the string of `extern "C" {` is blanked by now: `extern "     "`
            scope_head = head.strip()[-_TAIL:]
            is_ns = bool(re.search(r"\b(namespace\b[\w:\s]*|extern\s*(?:\"[^\"\n]*\")?\s*)$", scope_head))
            cls = re.search(r"\b(?:struct|class)\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([A-Za-z_]\w*)[^;{()]*$",
                            scope_head)
            scope_kind.append("ns" if is_ns else f"class:{cls.group(1)}" if cls and visible else "other")
            depth += 1
            stmt_start = i + 1
        elif c == "}":
            if scope_kind:
                scope_kind.pop()
            depth -= 1
            stmt_start = i + 1
        elif c == ";":
            stmt_start = i + 1
        i += 1
    return found


def _match_brace(clean: str, open_pos: int) -> int:
    depth = 0
    for j in range(open_pos, len(clean)):
        if clean[j] == "{":
            depth += 1
        elif clean[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(clean) - 1


def _as_function(text: str, clean: str, head: str, head_pos: int):
    """(name, qualifiers, start offset, params) if the text before `{` is a function head."""
    h = head.rstrip()
    # Trailing "const", "noexcept", "-> T", initializer lists are not expected in kernels; accept
    # a head that ends with the parameter list's ')'. (Patterns anchored at the end read a bounded
    # tail: searched over the whole head, a long run of spaces or letters took n^2 steps.)
    trailing = _TRAILING_QUALIFIER.search(h[-_TAIL:])
    h2 = h[:len(h) - len(h[-_TAIL:]) + trailing.start()] if trailing else h
    if not h2.endswith(")"):
        return None
    depth, k = 0, len(h2) - 1
    while k >= 0:
        if h2[k] == ")":
            depth += 1
        elif h2[k] == "(":
            depth -= 1
            if depth == 0:
                break
        k -= 1
    if k < 0:
        return None
    before = h2[:k].rstrip()
    tail = before[-_TAIL:]
    m = _NAME_AT_END.search(tail)
    if not m:
        return None
    name = re.sub(r"\s+", "", m.group(1))
    if name in ("if", "for", "while", "switch", "return", "sizeof", "catch") or name.startswith("__launch_bounds"):
        return None
    prefix = before[: len(before) - len(tail) + m.start()]
    # A template head may hold defaults and parentheses (`template <int B = (1 << 8)>`).
    t = re.match(r"\s*template\s*<", prefix)
    rest = prefix[_closing_angle(prefix, t.end() - 1) + 1:] if t else prefix
    if "=" in rest or "(" in rest:
        # "x = f(...)" or a call expression, not a definition, unless the parentheses are an
        # attribute of the function's (_HEAD_ATTRIBUTE), before or after __global__.
        plain = _without_attributes(rest)
        if "=" in plain or "(" in plain:
            return None
    lead = len(head) - len(head.lstrip())
    start = head_pos + lead
    quals = frozenset(q for q in _QUALIFIERS if re.search(rf"\b{q}\b", prefix))
    return name, quals, start, _split_params(h2[k + 1:-1])


def kernel_by_name(funcs: list[Function], name: str) -> Function | None:
    """The kernel definition for a short or demangled kernel name (`triad`, `triad(float *, int)`,
    `void ns::(anonymous namespace)::reduce<float, 256>(const T1 *, T1 *, int)`): a template's
    definition for any of its instances. Overloads are told apart by their parameter count."""
    base = kernel_base_name(name)
    found = [f for f in funcs if f.is_kernel and f.name.split("::")[-1] == base]
    n = parameter_count(name)
    return next((f for f in found if len(f.params) == n), found[0] if found else None)


def defined_kernels(kernels: list[str], files: dict[str, str]) -> list[str]:
    """The kernels, in the given order, that one of `files` defines (the others are a library's
    or generated code: no edit can act on them)."""
    parsed = [functions(text) for text in files.values()]
    return [k for k in kernels if any(kernel_by_name(funcs, k) is not None for funcs in parsed)]


def _closing_angle(s: str, open_pos: int) -> int:
    """Index of the `>` closing the `<` at open_pos; `<` and `>` inside parentheses (`(1 << 8)`)
    and the arrow of `->` do not count."""
    angle = paren = 0
    for j in range(open_pos, len(s)):
        c = s[j]
        if c in "([":
            paren += 1
        elif c in ")]":
            paren -= 1
        elif paren == 0 and c == "<":
            angle += 1
        elif paren == 0 and c == ">" and s[j - 1] != "-":
            angle -= 1
            if angle == 0:
                return j
    return len(s)


def _split_name(demangled: str) -> tuple[str, str | None]:
    """(qualified name with template arguments, parameter list or None) of a demangled name."""
    s = demangled.strip()
    if not s.endswith(")"):
        return s, None
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i].strip(), s[i + 1:-1]
    return s, None


def _path(qualified: str) -> list[str]:
    """`void a::(anonymous namespace)::k<T, 4>` -> ["a", "k"] with the template arguments apart."""
    out, cur, i = [], [], 0
    s = qualified.replace("(anonymous namespace)::", "")
    while i < len(s):
        if s[i] == "<":
            i = _closing_angle(s, i) + 1
            continue
        if s.startswith("::", i):
            out.append("".join(cur).strip())
            cur, i = [], i + 2
            continue
        cur.append(s[i])
        i += 1
    out.append("".join(cur).strip())
    # the return type that demangled template instances carry ("void k<int>") is not the name
    out[0] = out[0].split()[-1] if out[0].split() else out[0]
    return [p for p in out if p]


def kernel_base_name(name: str) -> str:
    """The unqualified name of a kernel as profilers and demanglers spell it: no return type,
    namespaces, template arguments or parameters (`void ns::k<float, 4>(T1 *, int)` -> `k`)."""
    qualified, _ = _split_name(name)
    path = _path(qualified)
    return path[-1] if path else qualified


def template_arguments(name: str) -> tuple[str, ...]:
    """The template arguments of a demangled kernel instance (`void k<Saxpy, 4>(T1)` -> ("Saxpy", "4"))."""
    qualified, _ = _split_name(name)
    last, i = None, 0
    while i < len(qualified):
        if qualified[i] == "<":
            last = (i, _closing_angle(qualified, i))
            i = last[1] + 1
        else:
            i += 1
    return () if last is None else _split_params(qualified[last[0] + 1:last[1]])


def parameter_count(name: str) -> int | None:
    """How many parameters a demangled name lists; None when it lists none (a bare name)."""
    _, params = _split_name(name)
    return None if params is None else len(_split_params(params))


def numbered(text: str, start: int, end: int) -> str:
    """Lines start..end (1-based, inclusive) prefixed with their numbers."""
    lines = text.splitlines()
    width = len(str(end))
    return "\n".join(f"{i:>{width}}| {lines[i - 1]}" for i in range(start, min(end, len(lines)) + 1))


def called_names(text: str, f: Function) -> set[str]:
    """Identifiers followed by '(' inside a function's body."""
    body = "\n".join(strip_comments_and_strings(text).splitlines()[f.body_start_line - 1:f.end_line])
    return set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\(", body))


def short_kernel_name(demangled: str) -> str:
    """`void ns::k<int, 4>(float *, int)` -> `ns::k<int, 4>`; plain C names are returned as they are."""
    s, _ = _split_name(demangled)
    # Demangled template instances carry their return type ("void k<int>(...)").
    if s.startswith("void ") and "<" in s:
        s = s[len("void "):]
    return s.strip()


def template_symbol_prefix(mangled: str) -> str | None:
    """The start that every instance of a kernel template shares in its symbol, None for a symbol
    that is not a template instance (Itanium ABI: `_Z7reduce7IiLj256ELb0EEv...` -> `_Z7reduce7I`,
    `_ZN5probe6reduceIfLj256ELb1EEEv...` -> `_ZN5probe6reduceI`)."""
    if not mangled.startswith("_Z"):
        return None
    i = 2
    if mangled.startswith("N", i):
        i += 1
        while i < len(mangled) and mangled[i] in "rVK":  # cv-qualifiers of a member function
            i += 1
    names = 0
    while i < len(mangled):
        if mangled[i].isdigit():
            digits = re.match(r"\d+", mangled[i:]).group(0)
            i += len(digits) + int(digits)
            names += 1
        elif mangled.startswith("St", i):  # std::
            i += 2
        else:
            break
    return mangled[:i + 1] if names and mangled.startswith("I", i) else None


def kernel_key(name: str) -> str:
    """A kernel's name without parameters or spaces. Demanglers disagree on the rest: ncu writes
    `k<float, 4>(T1 *, int)` and `const float *`, the C++ runtime `k<float, 4>(float*, int)` and
    `float const*`; the name itself agrees."""
    return re.sub(r"\s+", "", short_kernel_name(name))


def function_name(name: str) -> str:
    """The source function a kernel instantiates, as written: its namespaces and name without
    template arguments or return type (`void ns::(anonymous namespace)::k<float, 4>(T1 *, int)` and
    ncu's `void ns::<unnamed>::k<float, 4>(...)` -> `ns::k`)."""
    qualified, _ = _split_name(name)
    return "::".join(_path(qualified)) or qualified


def function_key(name: str) -> str:
    """What every instance of one kernel function shares, whichever demangler spelled it: its
    function_name and its parameter count (`ns::k/2`), as kernel_by_name finds one definition
    for all of them (overloads are told apart by their parameter count)."""
    count = parameter_count(name)
    return function_name(name) + ("" if count is None else f"/{count}")


def by_function(kernels: Iterable[str]) -> dict[str, list[str]]:
    """The kernels grouped by the source function they instantiate (function_key), in the order the
    functions first appear, each group in the order given."""
    groups: dict[str, list[str]] = {}
    for k in kernels:
        groups.setdefault(function_key(k), []).append(k)
    return groups


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
_CONSTANT = re.compile(r"^[ \t]*(?:static[ \t]+)?(?:__constant__|__device__|constexpr|const)\b[^;{}()\n]*?"
                       r"\b([A-Za-z_]\w*)[ \t]*(?:\[[^\]\n]*\][ \t]*)*(?:=|;)", re.M)


# A type's definition at file scope: `struct Params {`, `typedef float4 vec;`, `using idx_t = int;`
_RECORD = re.compile(r"^[ \t]*(?:template[ \t]*<[^;{}]*>[ \t\n]*)?(?:struct|class|union|enum(?:[ \t]+class)?)"
                     r"[ \t]+(?:__align__\([^)]*\)[ \t]+|alignas\([^)]*\)[ \t]+)?([A-Za-z_]\w*)[^;{}()]*\{", re.M)
_TYPEDEF = re.compile(r"^[ \t]*typedef\b[^;{}]*?\b([A-Za-z_]\w*)[ \t]*(?:\[[^\]]*\][ \t]*)*;", re.M)
_TYPEDEF_RECORD = re.compile(r"^[ \t]*typedef[ \t]+(?:struct|union|enum)\b[^;{}()]*\{", re.M)  # C style
_USING = re.compile(r"^[ \t]*(?:template[ \t]*<[^;{}]*>[ \t\n]*)?using[ \t]+([A-Za-z_]\w*)[ \t]*=[^;]*;", re.M)


def _types(clean: str, inside: list[tuple[int, int]]) -> dict[str, list[tuple[int, int]]]:
    """Where each file-scope type is defined (records to their closing `};`, typedefs, aliases)."""
    found: dict[str, list[tuple[int, int]]] = {}
    spans: list[tuple[str, int, int]] = []  # name, start and end offsets
    for rx in (_RECORD, _TYPEDEF_RECORD):
        for m in rx.finditer(clean):  # to the `;` after the closing brace
            close = _match_brace(clean, m.end() - 1)
            semi = clean.find(";", close)
            end = close if semi < 0 else semi
            if rx is _RECORD:
                spans.append((m.group(1), m.start(), end))
            elif names := re.findall(r"[A-Za-z_]\w*", clean[close + 1:end]):  # typedef struct { ... } name;
                spans.append((names[-1], m.start(), end))
    spans += [(m.group(1), m.start(), m.end() - 1) for rx in (_TYPEDEF, _USING) for m in rx.finditer(clean)]
    for name, start, end in spans:
        first = line_of(clean, start)
        if not any(a <= first <= b for a, b in inside):
            found.setdefault(name, []).append((first, line_of(clean, end)))
    return found


def used_names(text: str, start: int, end: int) -> set[str]:
    """Identifiers on lines start..end (1-based, inclusive), comments and strings left out."""
    lines = strip_comments_and_strings(text).splitlines()[start - 1:end]
    return set(re.findall(r"\b[A-Za-z_]\w*\b", "\n".join(lines)))


def definitions(text: str, funcs: list[Function]) -> dict[str, list[tuple[int, int]]]:
    """Where each macro (`#define`, with its continuation lines), each file-scope constant or
    device variable (`__constant__ float c[17];`, `constexpr int N = 4;`) and each type (`struct`,
    `class`, `union`, `enum`, `typedef`, `using`) is defined: name -> line ranges. Definitions
    inside functions are not file scope and are left out."""
    clean = strip_comments_and_strings(text)
    lines = text.splitlines()
    inside = [(f.start_line, f.end_line) for f in funcs]
    found: dict[str, list[tuple[int, int]]] = {}
    for m in _DEFINE.finditer(clean):
        start = end = line_of(clean, m.start())
        while end <= len(lines) and lines[end - 1].rstrip().endswith("\\"):
            end += 1  # a macro continued on the next line
        found.setdefault(m.group(1), []).append((start, min(end, len(lines))))
    for m in _CONSTANT.finditer(clean):
        line = line_of(clean, m.start())
        if not any(a <= line <= b for a, b in inside):
            found.setdefault(m.group(1), []).append((line, line))
    for name, ranges in _types(clean, inside).items():
        found.setdefault(name, []).extend(ranges)
    return found
