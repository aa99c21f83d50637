"""Problem sizes written into the program's host code as constants (`#define N 4096`,
`const int OPT_N = 4000000;`, `uint byteCount = 64 * 1048576;`): where each is defined, the
source with it scaled, and which constants look like sizes.

A program whose run takes no size argument still has a problem size; when it is such a constant,
the counter runs of eOMP can vary it by rebuilding the program with the constant scaled (in a copy
of the workspace, never in the user's files). `app.size_constants` names them; `optimas init`
proposes the constants that allocation sizes are computed from and that do not shape the device
code (a tile, a table, launch bounds).
"""

from __future__ import annotations

import ast
import operator
import os
import posixpath
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from runner.scan.cuda_source import functions, strip_comments_and_strings

# A definition of a name, read around each place the name is written (never by a pattern run over
# the whole file: a file of the pull request's could make that take hours). Before the name: the
# text back to the statement's start; after it: the value and its end.
_BEFORE = 160  # characters read back from the name
_AFTER = 400  # characters read on from it
# `#define name value`
_DEFINE_BEFORE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\Z", re.M)
_DEFINE_AFTER = re.compile(r"[ \t]+(?P<value>[^\n]*?)[ \t]*$", re.M)
# A declaration with an initializer: type words before the name (`const int`, `static const uint`,
# `constexpr size_t`, `unsigned int`), maybe earlier declarators (`const int W = 1024, H = 768;`:
# each value ends at its comma, so the pattern reads the window once), then `= value;` (or `,`).
_TYPE_WORDS = (r"(?:(?:const|constexpr|static|unsigned|signed|volatile|int|long|short|char|size_t|uint|"
               r"u?int\d+_t|auto)\s+)+")
_DECLARATION_BEFORE = re.compile(r"(?<![\w.>])" + _TYPE_WORDS + r"(?:[A-Za-z_]\w*\s*=[^;,{}()=]+,\s*)*\Z")
_DECLARATION_AFTER = re.compile(r"\s*=\s*(?P<value>[^;,{}]+?)\s*[;,]")
# A statement assigning a number to a variable declared without one (`int n1, n2; n1 = 784;`):
# kept only when the value is an integer constant expression.
_ASSIGNMENT_BEFORE = re.compile(r"(?:^|(?<=[;{}]))[ \t]*\Z", re.M)
_ASSIGNMENT_AFTER = re.compile(r"[ \t]*=[ \t]*(?P<value>[^;,{}=\n]+?)[ \t]*;")
# Calls whose arguments are allocation sizes, and `new T[n]`.
_ALLOCATION = re.compile(r"\b(?:cudaMalloc\w*|cudaHostAlloc|malloc|calloc|realloc|aligned_alloc|posix_memalign)\s*\(")
_NEW_ARRAY = re.compile(r"\bnew\s+[\w:<>\s*]+?\[([^\]]+)\]")
# Names that are shapes, not sizes: scaling a block size or a bin count breaks the program.
# A library's scratch buffer (cuBLASLt's workspace) is sized for the library, whatever the problem.
_NOT_SIZE = re.compile(r"thread|block|warp|tile|bin|radius|seed|iter|repeat|repetit|reps?$|trial|epoch|run|dev|gpu|"
                       r"align|bits?$|tmax|steps|workspace|scratch|"
                       r"^(?:max|min)_?|_(?:max|min)$|limit|capacity", re.I)
# Names and uses of constants that are allocations' factors but not sizes: scaling a percentage, a
# ratio or a log2 size multiplies the work by orders of magnitude (2^29 -> 2^(29*1.4)), not by the scale.
_NOT_LINEAR_NAME = re.compile(r"percent|pct|ratio|frac|occupan|log|shift|expon|pow", re.I)
_NOT_LINEAR_USES = (
    (r"(?<!<)<<(?!<)\s*\(?\s*{n}\b", "a shift count (1 << {n}): a log2 size"),  # not a launch's <<<
    (r"\b(?:pow|powf|exp2|exp2f|ldexp|ldexpf)\s*\([^;]*?\b{n}\b", "an exponent: a log2 size"),
    (r"\b{n}\s*/\s*100(?:\.0*)?f?\b|/\s*100(?:\.0*)?f?\s*\*\s*{n}\b", "a percentage (/ 100)"),
)
_LAUNCH = re.compile(r"<<<(.*?)>>>", re.S)
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".c", ".cc", ".cpp", ".cxx")
MIN_SIZE = 16  # smaller values are counts, flags and ids more often than sizes
MAX_PROPOSED = 4


@dataclass(frozen=True)
class SizeConstant:
    """One definition of a constant: its file (as the caller named it), the span of its value in
    that file's text, the value's text and its line (1-based)."""

    name: str
    file: str
    start: int
    end: int
    value: str
    line: int
    macro: bool = False  # a #define (visible wherever it is included), not a declaration


def definitions_of(name: str, texts: dict[str, str]) -> list[SizeConstant]:
    """Every definition of `name` in these sources (file name -> text): a `#define name value`, a
    declaration `... name = value;`, or a statement `name = number;` outside comments and strings."""
    found = []
    word = re.compile(rf"(?<![\w.]){re.escape(name)}\b")
    for file, text in texts.items():
        clean = strip_comments_and_strings(text)
        for m in word.finditer(clean):
            lo, hi = max(0, m.start() - _BEFORE), min(len(clean), m.end() + _AFTER)
            # a window that starts mid-line does not start a line: a mark no pattern takes for one
            before, after = ("" if lo == 0 or clean[lo - 1] == "\n" else "\0") + clean[lo:m.start()], clean[m.end():hi]
            for kind, (ahead, behind) in enumerate(((_DEFINE_BEFORE, _DEFINE_AFTER),
                                                    (_DECLARATION_BEFORE, _DECLARATION_AFTER),
                                                    (_ASSIGNMENT_BEFORE, _ASSIGNMENT_AFTER))):
                v = behind.match(after) if ahead.search(before) else None
                if v is None or (kind == 2 and integer_value(v.group("value")) is None):
                    continue
                start = m.end() + v.start("value")
                value = text[start:m.end() + v.end("value")].rstrip()
                found.append(SizeConstant(name, file, start, start + len(value), value,
                                          clean.count("\n", 0, start) + 1, kind == 0))
                break
    return found


def workspace_texts(space: Path, workdir: Path, parts: list[Path] | None = None) -> dict[str, str]:
    """The C, C++ and CUDA sources under the workspace folder (under `parts` of it, when given: what
    a build's copy holds, config.copied_parts), by path relative to `workdir` (as a build's
    overridden files are named), hidden folders, run folders and links that lead out of the
    workspace left out."""
    texts = {}
    top = space.resolve()
    base = workdir.resolve() if parts else workdir  # parts are resolved paths

    def add(path: Path) -> None:
        # a link leading out of the workspace is not the program's source (and its text would be
        # written into the build's copy)
        if path.name.endswith(SOURCE_SUFFIXES) and path.is_file() and path.resolve().is_relative_to(top):
            texts[os.path.relpath(path, base)] = path.read_text(encoding="utf-8", errors="replace")

    for part in parts or [space]:
        if part.is_file():
            add(part)
        for folder, dirs, names in os.walk(part):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("runs", "__pycache__"))
            for n in sorted(names):
                add(Path(folder, n))
    return texts


def several_macros(found: list[SizeConstant]) -> bool:
    """Whether these definitions are one macro's, written once per branch (`#ifdef LARGE_DATASET`
    / `#define NI 4096`, PolyBench's datasets): scaling each scales whichever the build takes."""
    return len(found) > 1 and all(d.macro for d in found)


def definition_problem(name: str, texts: dict[str, str], found: list[SizeConstant] | None = None,
                       sources: list[str] | None = None) -> str | None:
    """Why `name` cannot be scaled (None when it has exactly one definition in `texts`, or only
    macro definitions; `found`: its definitions, when known). `sources` (app.sources, named as
    `texts` names files): where the workspace defines it several times (a folder of programs, each
    defining `N`), the definitions in the program's own files (program_texts) decide."""
    found = program_definitions(name, texts, sources) if found is None else found
    if len(found) == 1 or several_macros(found):
        return None
    where = ("found " + "; ".join(f"{d.file}:{d.line}" for d in found)) if found else "found none"
    return (f"app.size_constants: {name!r} needs exactly one definition in the workspace's sources (a "
            f"`#define {name} value`, a declaration `int {name} = value;` or one statement `{name} = number;`), "
            f"or only `#define`s of it (one per branch), {where}"
            + (" (in the program's own files, app.sources and what they include, too)" if sources else ""))


def program_definitions(name: str, texts: dict[str, str], sources: list[str] | None = None) -> list[SizeConstant]:
    """The definitions of `name` in `texts`; where there are several and `sources` names the
    program's files, those in the program's own files (program_texts) when they are one (or only
    macros)."""
    found = definitions_of(name, texts)
    if len(found) <= 1 or several_macros(found) or not sources:
        return found
    own = definitions_of(name, program_texts(texts, sources))
    return own if len(own) == 1 or several_macros(own) else found


_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_UNIT_SUFFIXES = (".cu", ".c", ".cc", ".cpp", ".cxx")


def included_closure(texts: dict[str, str], names: list[str]) -> dict[str, str]:
    """The texts of `names` and of the local headers they include (`#include "x.h"`, resolved
    beside the including file, then from the top of `texts`), transitively."""
    out: dict[str, str] = {}
    todo = [posixpath.normpath(n) for n in names]
    while todo:
        name = todo.pop()
        if name in out or name not in texts:
            continue
        out[name] = texts[name]
        for inc in _LOCAL_INCLUDE.findall(texts[name]):
            where = (posixpath.normpath(posixpath.join(posixpath.dirname(name), inc)), posixpath.normpath(inc))
            todo += [w for w in where if w in texts][:1]
    return out


def program_texts(texts: dict[str, str], sources: list[str]) -> dict[str, str]:
    """One program's files among a workspace's `texts`: its `sources`, the translation units that
    include one of them (a main.cu including its kernels' header), and what all of those include."""
    wanted = {posixpath.normpath(s) for s in sources}
    units = [name for name, text in texts.items() if name.endswith(_UNIT_SUFFIXES) and any(
        posixpath.normpath(posixpath.join(posixpath.dirname(name), inc)) in wanted
        for inc in _LOCAL_INCLUDE.findall(text))]
    return included_closure(texts, [*wanted, *units])


MAX_EXPRESSION = 200  # characters: a size is written shortly
_LIMIT = 1 << 64  # every operand and result below this: a C integer of 64 bits at most


def _c_div(a: int, b: int) -> int:
    """C's integer division: toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: _c_div,
              ast.Mod: lambda a, b: a - b * _c_div(a, b), ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def integer_value(expr: str) -> int | None:
    """The value of an integer constant expression made of numbers and operators (None when it
    names anything, is not an integer, or leaves 64 bits). The text is the pull request's: it is
    read as a tree of these operators alone, never evaluated (`9**9**9**9` or `1 << (1 << 40)`
    would hold the worker for hours)."""
    if len(expr) > MAX_EXPRESSION or not re.search(r"\d", expr):  # (no pattern over it: see _value)
        return None
    py = re.sub(r"sizeof\s*\(\s*(?:unsigned\s+)?(?:char|u?int8_t)\s*\)", "1", expr)
    py = re.sub(r"sizeof\s*\([^)]*\)", "4", py)  # a size's exact bytes do not matter for a ratio
    py = re.sub(r"(?<=[\dA-Fa-f])(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b", "", py).replace("'", "").replace("/", "//")
    if re.search(r"\b0\d", py):
        return None  # octal, rare in sizes
    try:
        return _value(ast.parse(py.strip(), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError):
        return None


def _value(node: ast.AST) -> int | None:
    """An integer from a tree of numbers, + - * / % << >> and unary signs; None for anything else
    (names, calls, `**`). The text is read by Python's parser and this walk only: a pattern that
    checked its characters first took exponential time on a long run of digits."""
    if isinstance(node, ast.Constant):
        value = node.value if type(node.value) is int else None
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        value = None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    elif isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _value(node.left), _value(node.right)
        if left is None or right is None or (isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= right < 64):
            return None
        value = _OPERATORS[type(node.op)](left, right)
    else:
        return None
    return value if value is not None and -_LIMIT < value < _LIMIT else None


def scaled_value(value: str, scale: float) -> str:
    """`value` times `scale` as a C integer expression, divided first so that it does not overflow
    where the original did not: 0.25 -> `((v) / 4)`, 1.5 -> `((v) / 2 * 3)`, 2 -> `((v) * 2)`."""
    f = Fraction(scale).limit_denominator(64)
    if f <= 0:
        raise ValueError(f"scale {scale} is not positive")
    if f == 1:
        return value
    expr = f"({value})"
    if f.denominator != 1:
        expr += f" / {f.denominator}"
    if f.numerator != 1:
        expr += f" * {f.numerator}"
    return f"({expr})"


def scaled_sources(names: list[str], texts: dict[str, str], scale: float,
                   sources: list[str] | None = None) -> dict[str, str]:
    """The texts that change when each constant in `names` is scaled by `scale`: file -> new text.
    Each name must have exactly one definition in `texts` (or in the program's own files, with
    `sources`: program_definitions), or only macro definitions, each of which is scaled
    (definition_problem; a ValueError says where it has none or several)."""
    spans: dict[str, list[SizeConstant]] = {}
    for name in names:
        found = program_definitions(name, texts, sources)
        if problem := definition_problem(name, texts, found, sources):
            raise ValueError(problem)
        for d in found:
            spans.setdefault(d.file, []).append(d)
    out = {}
    for file, defs in spans.items():
        text = texts[file]
        for d in sorted(defs, key=lambda d: d.start, reverse=True):  # later spans first: offsets hold
            text = text[:d.start] + scaled_value(d.value, scale) + text[d.end:]
        out[file] = text
    return out


def _allocation_arguments(clean: str) -> list[str]:
    """The argument text of every allocation call and `new T[n]` in a comment-free source."""
    found = []
    for m in _ALLOCATION.finditer(clean):
        depth, i = 1, m.end()
        while i < len(clean) and depth:
            depth += {"(": 1, ")": -1}.get(clean[i], 0)
            i += 1
        found.append(clean[m.end():i - 1])
    found += [m.group(1) for m in _NEW_ARRAY.finditer(clean)]
    return found


_NOT_A_TYPE = frozenset({"return", "case", "else", "sizeof", "goto", "throw", "delete", "new", "do"})


def _declares(code: str, name: str) -> bool:
    """Whether `code` declares `name` (`int N,`, `const float *N)`, `uint N = 4;`): a type word
    (not a keyword such as `return`), maybe `*` or `&`, the name, then `,` `)` `=` `;` or `[`."""
    for m in re.finditer(rf"([A-Za-z_]\w*|>)\s*[*&]*\s*\b{re.escape(name)}\s*[,)=;\[]", code):
        if m.group(1) not in _NOT_A_TYPE:
            return True
    return False


def _shapes_device_code(name: str, texts: dict[str, str]) -> bool:
    """Whether `name` sizes something the GPU code is built around rather than the data it works
    on: an array of device code (`__shared__ float tile[NAME]`, `float r[NAME]` in a kernel, a
    `__constant__` table) or `__launch_bounds__`. A bound a kernel compares with (`if (i < N)`) is
    the problem size and does not count; neither does a kernel's own parameter of that name."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    # `type name[... NAME ...]`: a declaration (an access `a[N - 1] = 0` has no type before it)
    array = re.compile(rf"(?<![\w.>])(?!return\b|case\b|else\b)[A-Za-z_]\w*\s+\**\s*[A-Za-z_]\w*\s*"
                       rf"\[[^\]\n]*\b{re.escape(name)}\b")
    bounds = re.compile(rf"__launch_bounds__\s*\([^)]*\b{re.escape(name)}\b")
    table = re.compile(rf"__(?:shared|constant|device)__[^;{{}}]*\[[^\]]*\b{re.escape(name)}\b")
    for text in texts.values():
        if not word.search(text):
            continue
        clean = strip_comments_and_strings(text)
        if bounds.search(clean) or table.search(clean):
            return True
        lines = clean.splitlines()
        for f in functions(text):
            code = "\n".join(lines[f.start_line - 1:f.end_line])
            if f.is_device and array.search(code) and not _declares(code, name):
                return True
    return False


def _launch_arguments(texts: dict[str, str]) -> set[str]:
    """The names given bare as a launch's grid or block (`<<<PARTIAL_COUNT, THREADS>>>`): shapes the
    author chose, where a grid computed from a size (`DIV_UP(N, 128)`) is not bare."""
    return {arg.strip() for text in texts.values() for m in _LAUNCH.finditer(strip_comments_and_strings(text))
            for arg in m.group(1).split(",")}


def _at_file_scope(d: SizeConstant, texts: dict[str, str]) -> bool:
    """Whether a definition is visible to other files: a macro, or a declaration outside functions."""
    return d.macro or not any(f.start_line <= d.line <= f.end_line for f in functions(texts[d.file]))


def not_linear(name: str, texts: dict[str, str]) -> str | None:
    """Why a constant that sizes an allocation is not a size the work is proportional to (its name
    says a percentage, ratio or log2; the code shifts by it, raises to it or divides it by 100), or None."""
    if m := _NOT_LINEAR_NAME.search(name):
        return f"named as a {m.group(0).lower()} (a percentage, ratio or log2 size is not scaled as a size)"
    for pattern, why in _NOT_LINEAR_USES:
        rule = re.compile(pattern.format(n=re.escape(name)))
        for text in texts.values():
            if rule.search(strip_comments_and_strings(text)):
                return f"used as {why.format(n=name)}, not scaled as a size"
    return None


def proposed_size_constants(texts: dict[str, str], left_out: dict[str, str] | None = None) -> list[SizeConstant]:
    """The constants that look like the problem size: integer constants of at least MIN_SIZE, each
    defined once, that the arguments of an allocation (malloc, cudaMalloc, new T[n]) are computed
    from (directly or through other constants: OPT_SZ = OPT_N * sizeof(float)) in the file that
    defines them or from file scope; not named like block sizes, bin counts, iteration counts or
    limits, not given bare as a launch's grid or block, and not sizing an array of device code
    or its launch bounds (a shape: a tile or a table; a bound a kernel compares with is a size),
    and not a percentage, ratio or log2 size (not_linear; `left_out` gets each such name with the
    reason). At most MAX_PROPOSED, in the order the allocations name them."""
    wanted: list[tuple[str, str]] = []  # (name, the file that names it)
    for file, text in texts.items():
        for args in _allocation_arguments(strip_comments_and_strings(text)):
            wanted += [(w, file) for w in re.findall(r"\b[A-Za-z_]\w*\b", args) if (w, file) not in wanted]
    bare = _launch_arguments(texts)

    def a_size(name: str, values: list[int | None]) -> bool:
        return (all(v is not None and v >= MIN_SIZE for v in values) and not _NOT_SIZE.search(name)
                and name not in bare and not _shapes_device_code(name, texts))

    roots: list[SizeConstant] = []
    seen: set[str] = set()
    while wanted:
        name, named_in = wanted.pop(0)
        if name in seen or name == "sizeof":
            continue
        found = definitions_of(name, texts)
        branches = several_macros(found)
        if not branches and (len(found) != 1 or (found[0].file != named_in and not _at_file_scope(found[0], texts))):
            continue  # another scope's variable of that name (a parameter in another file)
        seen.add(name)
        values = [integer_value(d.value) for d in found]
        if not branches and values[0] is None:  # computed from other names: follow them
            wanted += [(w, found[0].file) for w in re.findall(r"\b[A-Za-z_]\w*\b", found[0].value)
                       if w not in seen and w != "sizeof"]
        elif a_size(name, values):
            why = not_linear(name, texts)
            if why is None:
                roots.append(found[0])
            elif left_out is not None:
                left_out[name] = why
    return roots[:MAX_PROPOSED]
