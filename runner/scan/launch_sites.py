"""Where host code launches a kernel (`name<<<grid, block, shared, stream>>>(args);`), and the
lines that compute its execution configuration: the launch as an edit the model may make.

A launch site's editable lines are its statement and the one-line declarations, earlier in the
same host function, of the variables its grid, block and dynamic shared memory use (`dim3
grid(n / 256);`, `int threads = 256;`). A launch written in a macro (`#define LAUNCH(k, ...)`
... `k<<<grid, block>>>(...)`) is a site too: its lines in the macro, for the kernels the macro's
uses pass it. What may change there is the execution configuration
only: `masked` blanks the first three configuration arguments of every launch and the
initializers of those declarations, and a candidate's host code must be the original's once both
are masked (so the stream, the arguments and every other statement stay as they are).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.scan.cuda_source import Function, functions, line_of, strip_comments_and_strings

# (a template's arguments read up to 512 characters: unbounded, the lazy span ran to the end of
# the text from every name followed by `<`, n^2 steps on crafted source; an attacker's pass)
_LAUNCH = re.compile(r"\b([A-Za-z_][\w:]*)\s*(?:<[^;{}]{0,512}?>)?\s*<<<")
MAX_LAUNCH_MACROS = 64  # macros that launch, read per file
MAX_MACRO_USES = 256  # uses of one read for the kernels they pass
MAX_USE = 4096  # characters of a use's arguments read
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_KEYWORDS = frozenset({"sizeof", "static_cast", "int", "unsigned", "size_t", "float", "double", "dim3", "min", "max",
                       "std", "const", "long", "char", "short", "true", "false", "nullptr"})
_DECL = r"^[ \t]*(?:const(?:expr)?[ \t]+|static[ \t]+)*(?:dim3|int|unsigned(?:[ \t]+int)?|size_t|long|auto|uint|" \
        r"int64_t|int32_t|uint32_t|uint64_t)[ \t]+(?:[\w \t,=*()+\-/%]*?,[ \t]*)?{name}[ \t]*(\(|=|\{{)"


@dataclass
class LaunchSite:
    kernel: str  # the name as the launch writes it (`ns::k`, template arguments left out)
    start_line: int  # the launch statement
    end_line: int
    config: list[str]  # the arguments between <<< and >>>
    declarations: list[int] = field(default_factory=list)  # lines declaring the variables the config uses
    # a launch through a function pointer (`kernel<<<g, b>>>(...)` after `kernel = &transposeNaive;`):
    # the kernels the host function assigns to it, in order; empty for a launch by the kernel's name
    targets: list[str] = field(default_factory=list)
    macro: str = ""  # the macro whose definition holds the launch ("": host code)
    shown: tuple[int, int] | None = None  # the lines to show around it (the whole macro), where not the launch's

    @property
    def title(self) -> str:
        """The launch named for the prompt: the kernel, or the pointer and what it may point to."""
        if self.macro:
            used = f", which its uses pass {', '.join(self.targets)}" if self.targets else ""
            return f"{self.kernel} in the macro {self.macro}{used}"
        if not self.targets:
            return self.kernel
        return f"{self.kernel} (a function pointer set to {', '.join(self.targets)}: its configuration is theirs)"

    @property
    def editable(self) -> list[tuple[int, int]]:
        """The line ranges a launch-configuration edit may touch."""
        return sorted({(d, d) for d in self.declarations} | {(self.start_line, self.end_line)})


def _top_level_split(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _launches(clean: str) -> list[tuple[re.Match, int, int, int]]:
    """(name match, position after <<<, position of >>>, position after the statement's ';')."""
    out = []
    for m in _LAUNCH.finditer(clean):
        close = clean.find(">>>", m.end())
        if close < 0:
            continue
        end = clean.find(";", close)
        if end < 0:
            continue
        out.append((m, m.end(), close, end + 1))
    return out


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(?:\(([^)\n]*)\))?", re.M)


@dataclass(frozen=True)
class LaunchMacro:
    """A `#define` whose body launches a kernel: its name, parameters, span (characters of the
    stripped text) and lines."""

    name: str
    params: tuple[str, ...]
    start: int
    end: int
    start_line: int
    end_line: int


def launch_macros(clean: str) -> list[LaunchMacro]:
    """The macros of a text (comments and strings stripped) whose definitions hold a launch."""
    out = []
    for m in _DEFINE.finditer(clean):
        start, end = m.start(), clean.find("\n", m.end())
        while end >= 0 and clean[start:end].rstrip(" \t").endswith("\\"):  # continued on the next line
            start, end = end + 1, clean.find("\n", end + 1)
        end = len(clean) if end < 0 else end
        if "<<<" in clean[m.end():end]:
            params = tuple(p.strip() for p in (m.group(2) or "").split(",") if p.strip())
            out.append(LaunchMacro(m.group(1), params, m.start(), end, line_of(clean, m.start()),
                                   line_of(clean, end)))
            if len(out) >= MAX_LAUNCH_MACROS:
                break
    return out


def _macro_uses(clean: str, macro: LaunchMacro) -> list[list[str]]:
    """The arguments of a macro's uses outside its definition (the first MAX_MACRO_USES, each read
    up to MAX_USE characters: a use whose `(` never closes would be read to the end)."""
    found = (u for u in re.finditer(rf"\b{re.escape(macro.name)}\s*\(", clean)
             if not macro.start <= u.start() < macro.end)
    out = []
    for _, use in zip(range(MAX_MACRO_USES), found, strict=False):
        depth, i, stop = 1, use.end(), min(len(clean), use.end() + MAX_USE)
        while i < stop and depth:
            depth += {"(": 1, ")": -1}.get(clean[i], 0)
            i += 1
        out.append(_top_level_split(clean[use.end():i - 1]))
    return out


def _macro_targets(uses: list[list[str]], macro: LaunchMacro, name: str, known: set[str]) -> list[str]:
    """The kernels a macro's uses pass for its parameter `name` (the launched name), in order."""
    if name not in macro.params:
        return []
    at = macro.params.index(name)
    found: list[str] = []
    for args in uses:
        word = args[at].split("<")[0].strip() if at < len(args) else ""
        if word.split("::")[-1] in known and word not in found:
            found.append(word)
    return found


def _line_index(clean: str) -> Callable[[int], int]:
    """The line (1-based) of an offset of `clean`, by bisection over its line breaks (counting them
    again for each of many launches was n^2 steps)."""
    breaks = [m.start() for m in re.finditer("\n", clean)]
    return lambda pos: bisect.bisect_left(breaks, pos) + 1


def launch_sites(text: str, kernels: set[str] | None = None, funcs: list[Function] | None = None) -> list[LaunchSite]:
    """The launches in host code of `kernels` (short names; None: any), with the lines that compute
    their configuration."""
    clean = strip_comments_and_strings(text)
    funcs = functions(text) if funcs is None else funcs
    known = {f.name.split("::")[-1] for f in funcs if f.is_kernel} if kernels is None else kernels
    lines = clean.splitlines()
    macros = launch_macros(clean)
    uses: dict[str, list[list[str]]] = {}
    line_of = _line_index(clean)
    out = []
    for launch in _launches(clean):
        start = line_of(launch[0].start())
        host = next((f for f in funcs if not f.is_device and f.body_start_line <= start <= f.end_line), None)
        macro = next((d for d in macros if d.start <= launch[0].start() < d.end), None)
        if host is not None:
            site = _host_site(lines, line_of, host, launch, known, kernels)
        elif macro is not None:
            if macro.name not in uses:
                uses[macro.name] = _macro_uses(clean, macro)
            site = _macro_site(clean, line_of, macro, uses[macro.name], launch, known, kernels)
        else:
            site = None
        if site is not None:
            out.append(site)
    return out


def _host_site(lines: list[str], line_of: Callable[[int], int], host: Function, launch: tuple[re.Match, int, int, int],
               known: set[str], kernels: set[str] | None) -> LaunchSite | None:
    """A launch in a host function, with the one-line declarations earlier in it of the variables
    its configuration uses; None when it launches none of `kernels`."""
    m, open_end, close, end = launch
    clean = m.string
    name = m.group(1)
    start, stop = line_of(m.start()), line_of(end - 1)
    short = name.split("::")[-1]
    targets = [] if short in known else _pointer_targets(lines[host.body_start_line - 1:host.end_line], name)
    if kernels is not None and short not in kernels and not any(t.split("::")[-1] in kernels for t in targets):
        return None
    config = _top_level_split(clean[open_end:close])
    used = {i for arg in config[:3] for i in _IDENT.findall(arg)} - _KEYWORDS
    declared = []
    for ident in sorted(used):
        pattern = re.compile(_DECL.format(name=re.escape(ident)))
        for n in range(start - 1, host.body_start_line - 1, -1):
            if pattern.search(lines[n - 1]) and lines[n - 1].rstrip().endswith(";"):
                declared.append(n)
                break
    return LaunchSite(name, start, stop, config, sorted(set(declared)), targets)


def _macro_site(clean: str, line_of: Callable[[int], int], macro: LaunchMacro, uses: list[list[str]],
                launch: tuple[re.Match, int, int, int], known: set[str], kernels: set[str] | None) -> LaunchSite | None:
    """A launch in a macro's definition: its lines there (to its `;`, or the macro's end), for the
    kernel it names or the hot kernels the macro's uses pass it; None when it launches none of
    `kernels`."""
    m, open_end, close, end = launch
    name = m.group(1)
    short = name.split("::")[-1]
    targets = [] if short in known else _macro_targets(uses, macro, name, known)
    if kernels is not None:
        targets = [t for t in targets if t.split("::")[-1] in kernels]
        if short not in kernels and not targets:
            return None
    stop = line_of(min(end, macro.end) - 1)
    return LaunchSite(name, line_of(m.start()), stop, _top_level_split(clean[open_end:close]), [], targets,
                      macro=macro.name, shown=(macro.start_line, macro.end_line))


def _pointer_targets(body: list[str], name: str) -> list[str]:
    """The functions a host function's lines assign to the variable `name` (`name = &k;`,
    `name = k;`, `void (*name)(...) = &k;`), in order: what a launch through it runs."""
    assigned = re.compile(rf"(?:\b{re.escape(name)}|\(\s*\*\s*{re.escape(name)}\s*\)\s*\([^;]*?\))\s*=\s*&?\s*"
                          r"([A-Za-z_][\w:]*)\s*(?:<[^;]*?>)?\s*;")
    found: list[str] = []
    for line in body:
        for m in assigned.finditer(line):
            if m.group(1) not in found and m.group(1) not in _KEYWORDS:
                found.append(m.group(1))
    return found


def masked(text: str, sites: list[LaunchSite]) -> str:
    """The code of `text` with every launch's grid, block and shared-memory arguments, and the
    initializers of the variables `sites` declare for them, blanked; whitespace removed."""
    return _mask(text, sites)[0]


def masked_pieces(text: str, sites: list[LaunchSite]) -> list[tuple[str, str]]:
    """What `masked` blanks, in order: ("config", a launch's `grid, block, shared`) and ("declaration",
    a declaration's initializers from its first configuration variable to the `;`, as `(n / 256);`
    or `= 256, x = 2;`). Two texts whose masked forms agree differ only in these."""
    return _mask(text, sites)[1]


def _mask(text: str, sites: list[LaunchSite]) -> tuple[str, list[tuple[str, str]]]:
    clean = strip_comments_and_strings(text)
    pieces, blanked, last = [], [], 0
    for _, open_end, close, _ in _launches(clean):
        config = _top_level_split(clean[open_end:close])
        # grid, block and shared memory as one mark (shared memory may be added); the stream stays
        pieces += [clean[last:open_end], "#" + "".join("," + c for c in config[3:])]
        blanked.append(("config", ", ".join(config[:3])))
        last = close
    clean = "".join(pieces) + clean[last:]
    names = sorted({i for s in sites for arg in s.config[:3] for i in _IDENT.findall(arg)} - _KEYWORDS)
    declared: list[str] = []  # in the order of the names, then of the text: the same in two texts that agree

    def blank(m: re.Match) -> str:
        declared.append(m.group(0)[m.start(1) - m.start(0):])
        return m.group(0)[:m.start(1) - m.start(0)] + "#;"

    for ident in names:
        # `T name(init);`, `T name = init;`, `T name{init};` -> `T name#;`
        clean = re.sub(_DECL.format(name=re.escape(ident)) + r"[^;]*;", blank, clean, flags=re.MULTILINE)
    blanked += [("declaration", piece) for piece in declared]
    return re.sub(r"\s+", "", clean), blanked
