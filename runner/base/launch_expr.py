"""Whether a launch's execution configuration, as an edit wrote it, is plain arithmetic: an
allow-list over its tokens. What host code a launch-configuration edit may hold: integer and
floating literals, names the sources' host code already uses, arithmetic, bitwise, comparison and
conditional operators, parentheses, casts to built-in types, member accesses (`block.x`),
subscripts, and calls of `min`/`max`/`dim3`/`sizeof`/`static_cast`/`ceil`/`floor` or of what the
original configuration already called. Nothing else: no other calls (through a name, a pointer, a
cast or a template), lambdas, statement expressions, assignments, increments, comma operators,
strings, keywords such as `new`, `throw` or `asm`, or user-defined literals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Built-in types: what a C-style cast may name (`(unsigned)(n + 255)`).
TYPE_WORDS = frozenset({"int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "const",
                        "size_t", "std::size_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "uint", "std::int32_t",
                        "std::uint32_t", "std::int64_t", "std::uint64_t"})
ALLOWED_CALLS = frozenset({"min", "max", "std::min", "std::max", "dim3", "sizeof", "alignof", "static_cast", "ceil",
                           "floor", "ceilf", "floorf", "std::ceil", "std::floor"})
# Calls that may name a type in angle brackets (`static_cast<int>(x)`, `std::min<int>(a, b)`).
_TEMPLATE_CALLS = frozenset({"static_cast", "min", "max", "std::min", "std::max"})
ALLOWED_WORDS = TYPE_WORDS | ALLOWED_CALLS | {"true", "false"}
# Keywords that run or declare code, whatever the sources use them for elsewhere.
DENIED_WORDS = frozenset({"new", "delete", "throw", "typeid", "operator", "asm", "__asm__", "__asm", "this",
                          "template", "typename", "decltype", "noexcept", "co_await", "co_yield", "co_return",
                          "return", "goto", "static_assert", "_Pragma", "__pragma", "__attribute__", "__declspec",
                          "alignas", "requires", "reinterpret_cast", "const_cast", "dynamic_cast", "try", "catch",
                          "volatile", "extern", "static", "register", "thread_local", "mutable", "using",
                          "namespace", "class", "struct", "union", "enum", "typedef", "auto", "void", "if", "else",
                          "for", "while", "do", "switch", "case", "default", "break", "continue", "__int128"})

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:0[xX][0-9a-fA-F]+|0[bB][01]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[uUlLfF]{0,3})(?![\w.'])
  | (?P<name>(?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)
  | (?P<bad>\+\+|--|<<=|>>=|[-+*/%&|^]=|=(?!=)|<%|%>|<:|:>|%:|\.\.\.|\.?\d[\w.']*)
  | (?P<op>->|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>?:.()\[\],])
""", re.X | re.A)


@dataclass(frozen=True)
class Token:
    kind: str  # number, name, op or bad
    text: str


def tokens(expr: str) -> list[Token]:
    """The tokens of an expression; a character no token starts with is one `bad` token."""
    out, i = [], 0
    while i < len(expr):
        m = _TOKEN.match(expr, i)
        if m is None:
            out.append(Token("bad", expr[i]))
            i += 1
            continue
        if m.lastgroup != "space":
            text = re.sub(r"\s+", "", m.group(0))
            out.append(Token(m.lastgroup or "bad", text.lstrip(":") if m.lastgroup == "name" else text))
        i = m.end()
    return out


def callees(expr: str) -> set[str]:
    """The names an expression calls (`divUp(n, 256)` -> {"divUp"})."""
    toks = tokens(expr)
    return {t.text for t, u in zip(toks, toks[1:], strict=False) if t.kind == "name" and u.text == "("}


def _template_end(toks: list[Token], i: int) -> int | None:
    """The index of the `>` closing the template arguments opened at toks[i] (`<`), when they name
    types only (names, `*`, `,`); None otherwise."""
    for j in range(i + 1, min(len(toks), i + 16)):
        if toks[j].text == ">":
            return j
        if toks[j].kind != "name" and toks[j].text not in ("*", ","):
            return None
    return None


_GROUP_READ = 512  # tokens read back for the bracket that a `)` or `>` closes


def _opener_of(toks: list[Token], i: int) -> int | None:
    """The `(` (or `<` of template arguments) matching the `)` (or `>`) at toks[i]."""
    close, open_ = toks[i].text, {")": "(", ">": "<", "]": "["}[toks[i].text]
    depth = 0
    for j in range(i, max(-1, i - _GROUP_READ), -1):  # a longer group is read as no match
        if toks[j].text == close:
            depth += 1
        elif toks[j].text == open_:
            depth -= 1
            if depth == 0:
                return j
    return None


def _call_fault(toks: list[Token], i: int, calls: set[str], shadowed: set[str]) -> str | None:
    """Why the `(` at toks[i] is a call the allow-list refuses; None for a parenthesized group, a
    cast's operand or an allowed call."""
    if i == 0:
        return None
    prev = toks[i - 1]
    if prev.kind == "name" and prev.text not in TYPE_WORDS:
        if prev.text in calls:
            return None
        if prev.text in shadowed:
            return f"calls {prev.text}(), which the sources define"
        return None if prev.text in ALLOWED_CALLS else f"calls {prev.text}()"
    if prev.text == "]":
        return "calls through a subscript"
    if prev.text == ">":
        return _template_call_fault(toks, i)
    if prev.text == ")":
        return _group_call_fault(toks, i)
    return None


def _template_call_fault(toks: list[Token], i: int) -> str | None:
    """The `(` at toks[i] follows a `>`: a call of a template (`static_cast<int>(x)` is allowed), or
    a comparison's operand."""
    at = _opener_of(toks, i - 1)
    if at is None and any(t.text == "<" for t in toks[:i]):
        return "a `>(` whose `<` is too far back to read"
    name = toks[at - 1] if at else None
    if name is not None and name.kind == "name":
        return None if name.text in _TEMPLATE_CALLS and _template_end(toks, at) == i - 1 \
            else f"calls {name.text}<...>()"
    return None


def _group_call_fault(toks: list[Token], i: int) -> str | None:
    """The `(` at toks[i] follows a `)`: a cast's operand (`(unsigned)(n + 255)`), or a call of
    what the parenthesized expression yields."""
    at = _opener_of(toks, i - 1)
    group = toks[at + 1:i - 1] if at is not None else []
    if at is not None and at > 0 and toks[at - 1].kind == "name" and toks[at - 1].text in ("sizeof", "alignof"):
        return "calls the result of sizeof"
    if group and all(t.text in TYPE_WORDS or t.text == "*" for t in group):
        return None
    return "calls through an expression (a function pointer or an object)"


def _word_fault(toks: list[Token], i: int, known: set[str]) -> str | None:
    t = toks[i]
    parts = t.text.split("::")
    if any(part in DENIED_WORDS or part.startswith("__builtin") for part in parts):
        return f"the keyword {t.text}"
    if i > 0 and toks[i - 1].text in (".", "->"):
        return None  # a member (`block.x`, `prop.multiProcessorCount`)
    if t.text not in ALLOWED_WORDS and not all(part in known for part in parts):
        return f"the name {t.text}, which the sources' host code does not use"
    return None


def expression_faults(expr: str, known: set[str], calls: set[str] = frozenset(), commas: bool = False,
                      shadowed: set[str] = frozenset()) -> list[str]:
    """Why `expr` is not plain arithmetic over `known` names (empty: it is). `calls`: what the
    original configuration already called; `commas`: whether it is a list (`grid, block, shared`
    or a constructor's arguments), whose top-level commas separate expressions; `shadowed`: allowed
    calls the sources define otherwise (a `min` of their own that may do anything)."""
    toks = tokens(expr)
    faults: list[str] = []
    stack: list[str] = []  # per open `(`/`[`: "call" (its commas separate arguments) or "group"
    for i, t in enumerate(toks):
        if t.kind == "bad":
            faults.append(f"the token `{t.text}`")
        elif t.kind == "name":
            faults += [f] if (f := _word_fault(toks, i, known)) else []
        elif t.text == "(":
            fault = _call_fault(toks, i, calls, shadowed)
            faults += [fault] if fault else []
            is_call = i > 0 and (toks[i - 1].kind == "name" and toks[i - 1].text not in TYPE_WORDS
                                 or toks[i - 1].text == ">")
            stack.append("call" if is_call else "group")
        elif t.text == "[":
            if i == 0 or not (toks[i - 1].kind == "name" or toks[i - 1].text in (")", "]")):
                faults.append("a lambda (`[` that opens no subscript)")
            stack.append("group")
        elif t.text in (")", "]"):
            if not stack:
                faults.append(f"an unbalanced `{t.text}`")
            else:
                stack.pop()
        elif t.text == "," and not (stack[-1] == "call" if stack else commas):
            faults.append("the comma operator")
    if stack:
        faults.append("an unclosed parenthesis")
    return list(dict.fromkeys(faults))


def _matching(text: str, i: int) -> int:
    """The index of the bracket closing the one at text[i] (len(text) when none)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    depth = 0
    for j in range(i, len(text)):
        if text[j] in pairs:
            depth += 1
        elif text[j] in pairs.values():
            depth -= 1
            if depth == 0:
                return j
    return len(text)


def declarator_faults(piece: str, known: set[str], calls: set[str], names: set[str],
                      shadowed: set[str] = frozenset()) -> list[str]:
    """Why the initializers of a declaration (`piece`: from the first declared name's initializer to
    the `;`, as `(128), grid(n / 128);` or `= 256;`) are not plain arithmetic; `names` are the
    variables the original line declared there (no others may be added)."""
    rest, faults = piece.strip().removesuffix(";").strip(), []
    while rest:
        if rest[0] in "({" or rest.startswith("=") and rest[1:].lstrip().startswith("{"):
            start = rest.index(rest.lstrip("= \t")[0])
            end = _matching(rest, start)
            faults += expression_faults(rest[start + 1:end], known, calls, commas=True, shadowed=shadowed)
            rest = rest[end + 1:].strip()
        elif rest[0] == "=":
            expr, _, after = _split_top(rest[1:])
            faults += expression_faults(expr, known, calls, shadowed=shadowed)
            rest = ("," + after) if after is not None else ""
        else:
            faults.append(f"`{rest[:40]}` after an initializer")
            break
        if rest.startswith(","):
            m = re.match(r",\s*([A-Za-z_]\w*)\s*", rest)
            if m is None or m.group(1) not in names:
                faults.append(f"a new declaration ({rest[1:40].strip()})")
                break
            rest = rest[m.end():]
        elif rest:
            faults.append(f"`{rest[:40]}` after an initializer")
            break
    return list(dict.fromkeys(faults))


def _split_top(text: str) -> tuple[str, str, str | None]:
    """`text` split at its first top-level comma: (before, ",", after), or (text, "", None)."""
    depth = 0
    for j, c in enumerate(text):
        depth += 1 if c in "([{" else -1 if c in ")]}" else 0
        if c == "," and depth == 0:
            return text[:j], ",", text[j + 1:]
    return text, "", None


def declared_names(piece: str) -> set[str]:
    """The names a declaration's masked tail declares after its first (`(1), grid(2);` -> {"grid"})."""
    out, depth = set(), 0
    for m in re.finditer(r"[(){}\[\]]|,\s*([A-Za-z_]\w*)", piece):
        if m.group(0) in "({[":
            depth += 1
        elif m.group(0) in ")}]":
            depth -= 1
        elif depth == 0 and m.group(1):
            out.add(m.group(1))
    return out
