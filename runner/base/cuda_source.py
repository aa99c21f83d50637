"""A small scanner for CUDA C++ sources: where each top-level function starts, where its body ends,
its qualifiers, name and parameters. Enough to show hot kernels in a prompt and to confine edits;
not a C++ parser (templates are handled, macros are not expanded).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_QUALIFIERS = ("__global__", "__device__", "__host__")


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

    @property
    def is_kernel(self) -> bool:
        return "__global__" in self.qualifiers

    @property
    def is_device(self) -> bool:
        return "__device__" in self.qualifiers or self.is_kernel


def strip_comments_and_strings(text: str) -> str:
    """Blank out comments and string/char literals, keeping every newline and column."""
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


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _split_params(params: str) -> tuple[str, ...]:
    parts, depth, cur = [], 0, []
    for ch in params:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return tuple(p for p in parts if p and p != "void")


def functions(text: str) -> list[Function]:
    """Top-level function definitions (also inside namespaces), in file order."""
    clean = strip_comments_and_strings(text)
    # Preprocessor lines hold no definitions and may contain unbalanced braces in macros.
    clean = re.sub(r"(?m)^[ \t]*#.*(\\\n.*)*$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), clean)
    found: list[Function] = []
    depth = 0
    scope_kind: list[str] = []  # "ns" for namespace/extern blocks, "other" for the rest
    stmt_start = 0
    i, n = 0, len(clean)
    while i < n:
        c = clean[i]
        if c == "{":
            head = clean[stmt_start:i]
            in_ns = all(k == "ns" for k in scope_kind)
            fn = _as_function(text, clean, head, stmt_start, i) if in_ns else None
            if fn is not None:
                end = _match_brace(clean, i)
                found.append(Function(
                    name=fn[0], qualifiers=fn[1], start_line=_line_of(clean, fn[2]),
                    body_start_line=_line_of(clean, i), end_line=_line_of(clean, end),
                    signature=" ".join(clean[fn[2]:i].split()), params=fn[3]))
                i = end + 1
                stmt_start = i
                continue
            is_ns = bool(re.search(r"\b(namespace\b[\w:\s]*|extern\s*\"?\s*)$", head.strip()))
            scope_kind.append("ns" if is_ns else "other")
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


def _as_function(text: str, clean: str, head: str, head_pos: int, brace_pos: int):
    """(name, qualifiers, start offset, params) if the text before `{` is a function head."""
    h = head.rstrip()
    # Trailing "const", "noexcept", "-> T", initializer lists are not expected in kernels; accept
    # a head that ends with the parameter list's ')'.
    h2 = re.sub(r"\s*(const|noexcept|override|final)\s*$", "", h)
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
    before = h2[:k]
    m = re.search(r"([A-Za-z_]\w*(?:::\w+)*)\s*$", before)
    if not m:
        return None
    name = m.group(1)
    if name in ("if", "for", "while", "switch", "return", "sizeof", "catch") or name.startswith("__launch_bounds"):
        return None
    prefix = before[: m.start()]
    if "=" in prefix or "(" in prefix.replace("__launch_bounds__(", ""):
        # "x = f(...)" or a call expression, not a definition; __launch_bounds__(...) is allowed.
        if not re.fullmatch(r"[\s\S]*__launch_bounds__\s*\([^()]*\)[\s\w*&:<>,]*", prefix):
            return None
    lead = len(head) - len(head.lstrip())
    start = head_pos + lead
    quals = frozenset(q for q in _QUALIFIERS if re.search(rf"\b{q}\b", prefix))
    return name, quals, start, _split_params(h2[k + 1:-1])


def kernel_by_name(funcs: list[Function], name: str) -> Function | None:
    """The kernel whose name matches a short or demangled kernel name (`triad` or `triad(float *, int)`)."""
    base = name.split("(")[0].strip()
    base = base.split("<")[0].strip().split("::")[-1]
    for f in funcs:
        if f.is_kernel and f.name.split("::")[-1] == base:
            return f
    return None


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
    s = demangled.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            c = s[i]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    s = s[:i]
                    break
    # Demangled template instances carry their return type ("void k<int>(...)").
    if s.startswith("void ") and "<" in s:
        s = s[len("void "):]
    return s.strip()


def kernel_key(name: str) -> str:
    """A kernel's name without parameters or spaces. Demanglers disagree on the rest: ncu writes
    `k<float, 4>(T1 *, int)` and `const float *`, the C++ runtime `k<float, 4>(float*, int)` and
    `float const*`; the name itself agrees."""
    return re.sub(r"\s+", "", short_kernel_name(name))
