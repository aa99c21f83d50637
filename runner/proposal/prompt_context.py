"""The source a prompt shows and what the model may edit in it: the hot kernels in whichever file
defines them, each such file's declarations, the device functions the kernels reach, the macros and
constants that code uses, and the hot kernels' launches in host code; also the macros whose value
only the build settles.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from runner.scan.cuda_source import (
    Function,
    after_license_header,
    called_names,
    definitions,
    functions,
    kernel_base_name,
    kernel_by_name,
    numbered,
    template_arguments,
    used_names,
)
from runner.scan.launch_sites import launch_sites
from runner.toolchain.compiler import CompiledMacros

MAX_HELPERS = 24  # device functions shown besides the hot kernels, nearest callees first
# A file's declarations before its first function are shown whole up to this many lines; beyond,
# only the macros, constants and types the code shown uses (host globals, long tables left out).
MAX_DECLARATION_LINES = 80
MAX_LAUNCH_SITES = 8  # launch sites of hot kernels shown, at most
MAX_LAUNCH_LINES = 30  # from the first declaration a launch's configuration uses to the launch
MAX_DEFINITION_LINES = 60  # macro and constant lines shown beside the functions
MAX_MACROS = 40  # macros listed as the build compiles them
_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.MULTILINE)

LAUNCH_TITLE = ("Launch of {kernel} (host code: only its execution configuration <<<grid, block, shared memory>>> "
                "and the declarations it is computed from may change)")

Ranges = dict[str, list[tuple[int, int]]]  # file -> line ranges
Located = tuple[str, Function]  # a function and the file that defines it


class SourceBlock(BaseModel):
    title: str
    file: str
    start: int
    end: int
    text: str


@dataclass
class _Shown:
    """What the prompt shows of the sources, before it is cut into blocks."""

    kernels: dict[str, list[Function]]  # file -> the hot kernels it defines
    declared: dict[str, tuple[int, int]]  # file -> (first, last) line of its declarations block
    helpers: dict[tuple[str, int], Located]  # (file, first line) -> a device function shown
    defined: Ranges  # file -> the definitions the code shown uses that no block of it holds


def _block(title: str, file: str, text: str, start: int, end: int) -> SourceBlock:
    """A block of `text`'s lines `start`..`end`, numbered as in the file."""
    return SourceBlock(title=title, file=file, start=start, end=end, text=numbered(text, start, end))


def _hot_kernels_defined(parsed: dict[str, list[Function]], hot: list[str]
                         ) -> tuple[dict[str, list[Function]], list[str]]:
    """Per file, the hot kernels it defines (each from the first file that does), and the hot
    kernels some file defines."""
    kernels: dict[str, list[Function]] = {}
    found: list[str] = []
    for k in hot:
        for name, funcs in parsed.items():
            f = kernel_by_name(funcs, k)
            if f is not None:
                found.append(k)
                if f not in kernels.get(name, []):
                    kernels.setdefault(name, []).append(f)
                break
    return kernels, found


def _declarations(files: dict[str, str], parsed: dict[str, list[Function]],
                  kernels: dict[str, list[Function]]) -> dict[str, tuple[int, int]]:
    """file -> (first, last) line of its declarations block: includes, macros, types and constants
    before its first function, without the license or copyright comments the file opens with."""
    declared: dict[str, tuple[int, int]] = {}
    for name in kernels:
        first = min((f.start_line for f in parsed[name] if f.owner is None), default=1)
        start = after_license_header(files[name])
        if start < first <= start + MAX_DECLARATION_LINES:  # a longer preamble: only what the code uses
            declared[name] = (start, first - 1)
    return declared


def _device_functions(parsed: dict[str, list[Function]]) -> dict[str, list[Located]]:
    """The device functions that are not kernels, by unqualified name (`Saxpy::operator()` under
    `operator()`), with the file of each."""
    index: dict[str, list[Located]] = {}
    for name, funcs in parsed.items():
        for f in funcs:
            if f.is_device and not f.is_kernel:
                index.setdefault(f.name.split("::")[-1], []).append((name, f))
    return index


def _functor_members(index: dict[str, list[Located]], hot: list[str]) -> list[Located]:
    """The members of the functor types a hot kernel is instantiated with (`for_each<Saxpy>` ->
    `Saxpy::operator()`)."""
    functor_types = {kernel_base_name(a) for k in hot for a in template_arguments(k)}
    return [(name, g) for entries in index.values() for name, g in entries
            if g.owner and g.owner.split("::")[-1] in functor_types]


def _reachable_helpers(files: dict[str, str], hot: list[str], kernels: dict[str, list[Function]],
                       declared: dict[str, tuple[int, int]], index: dict[str, list[Located]]
                       ) -> dict[tuple[str, int], Located]:
    """The device functions shown besides the hot kernels, by (file, first line): the functor
    members first, then those the kernels call and those they call, breadth first; at most
    MAX_HELPERS, none inside a declarations block that is shown."""
    helpers: dict[tuple[str, int], Located] = {}
    todo: list[Located] = [(n, f) for n, fs in kernels.items() for f in fs]

    def add(name: str, g: Function) -> None:
        key = (name, g.start_line)
        if key in helpers or len(helpers) >= MAX_HELPERS or g.end_line <= declared.get(name, (0, 0))[1]:
            return  # shown already, enough shown, or inside a declarations block that is shown
        helpers[key] = (name, g)
        todo.append((name, g))

    for name, g in _functor_members(index, hot):
        add(name, g)
    while todo:
        name, f = todo.pop(0)
        for callee in sorted(called_names(files[name], f)):
            for hname, g in index.get(callee, []):
                if g.owner is None or hname == name:  # a member function only from its own file
                    add(hname, g)
    return helpers


def _shown_ranges(shown: _Shown) -> Ranges:
    """file -> the line ranges of its declarations block, device functions and hot kernels shown."""
    ranges: Ranges = {name: [lines] for name, lines in shown.declared.items()}
    for name, g in shown.helpers.values():
        ranges.setdefault(name, []).append((g.start_line, g.end_line))
    for name, fs in shown.kernels.items():
        ranges.setdefault(name, []).extend((f.start_line, f.end_line) for f in fs)
    return ranges


def _helper_block(name: str, text: str, g: Function, extra: Sequence[str],
                  stalls: dict[tuple[str, int], str] | None) -> tuple[SourceBlock, bool]:
    """A device function's block, and whether the model may edit it: when it holds a salient stall
    line or `extra` names it, unless `extra` names it with a leading "!"."""
    names = {g.name, g.name.split("::")[-1]}
    held = [sid for (base, line), sid in (stalls or {}).items()
            if base == posixpath.basename(name) and g.start_line <= line <= g.end_line]
    excluded = {n[1:] for n in extra if n.startswith("!")}
    may_edit = not names & excluded and (bool(held) or bool(names & set(extra)))
    why = f" (editable: it holds {', '.join(sorted(set(held)))})" if may_edit and held else ""
    title = f"Device function {g.name}" + (why if may_edit else " (read-only)")
    return _block(title, name, text, g.start_line, g.end_line), may_edit


def _file_blocks(name: str, text: str, shown: _Shown, extra: Sequence[str],
                 stalls: dict[tuple[str, int], str] | None, editable: Ranges) -> list[SourceBlock]:
    """One file's blocks, in this order: its declarations, the definitions the code shown uses, its
    device functions and its hot kernels (each by first line); adds what may be edited to `editable`."""
    blocks: list[SourceBlock] = []
    if name in shown.declared:
        blocks.append(_block("Declarations", name, text, *shown.declared[name]))
    for a, b in shown.defined.get(name, []):
        blocks.append(_block("Definitions the code shown uses (read-only)", name, text, a, b))
    for _, g in sorted((h for h in shown.helpers.values() if h[0] == name), key=lambda h: h[1].start_line):
        block, may_edit = _helper_block(name, text, g, extra, stalls)
        blocks.append(block)
        if may_edit:
            editable.setdefault(name, []).append((g.start_line, g.end_line))
    for k in sorted(shown.kernels.get(name, []), key=lambda f: f.start_line):
        blocks.append(_block(f"Hot kernel {k.name}", name, text, k.start_line, k.end_line))
        editable.setdefault(name, []).append((k.start_line, k.end_line))
    return blocks


def _launch_blocks(files: dict[str, str], parsed: dict[str, list[Function]],
                   kernels: dict[str, list[Function]], editable: Ranges) -> list[SourceBlock]:
    """The hot kernels' launches in host code, each with the declarations its configuration is
    computed from (at most MAX_LAUNCH_SITES); adds their editable lines to `editable`."""
    hot_names = {f.name.split("::")[-1] for fs in kernels.values() for f in fs}
    blocks: list[SourceBlock] = []
    for name, text in files.items():
        for site in launch_sites(text, hot_names, parsed[name]):
            if len(blocks) >= MAX_LAUNCH_SITES:
                break
            first, last = min([site.start_line, *site.declarations]), site.end_line
            if site.shown and site.shown[1] - site.shown[0] < MAX_LAUNCH_LINES:  # a macro's launch: the macro
                first, last = site.shown
            if last - first + 1 > MAX_LAUNCH_LINES:  # declared far above: the launch alone
                first, site.declarations = site.start_line, []
            blocks.append(_block(LAUNCH_TITLE.format(kernel=site.title), name, text, first, last))
            editable.setdefault(name, []).extend(site.editable)
    return blocks


def source_blocks(files: dict[str, str], hot: list[str], extra: Sequence[str] = (),
                  stalls: dict[tuple[str, int], str] | None = None
                  ) -> tuple[list[SourceBlock], Ranges, list[str]]:
    """The hot kernels (editable, in whichever file defines them), the declarations before them, and
    the device functions they reach, across every file given: by call, and the members of the
    functor types a kernel is instantiated with (`for_each<Saxpy>` -> `Saxpy::operator()`). A helper
    is editable when it holds a salient stall line (`stalls`: (file's base name, line) -> S id) or
    `extra` names it, unless `extra` names it with a leading "!". Also: the editable line ranges per
    file, and the hot kernels that the files define."""
    parsed = {name: functions(text) for name, text in files.items()}
    kernels, found = _hot_kernels_defined(parsed, hot)
    declared = _declarations(files, parsed, kernels)
    helpers = _reachable_helpers(files, hot, kernels, declared, _device_functions(parsed))
    shown = _Shown(kernels=kernels, declared=declared, helpers=helpers, defined={})
    shown.defined = _definitions_used(files, parsed, _shown_ranges(shown))
    blocks: list[SourceBlock] = []
    editable: Ranges = {}
    for name, text in files.items():
        blocks += _file_blocks(name, text, shown, extra, stalls, editable)
    blocks += _launch_blocks(files, parsed, kernels, editable)
    return blocks, editable, found


def _definitions_used(files: dict[str, str], parsed: dict[str, list[Function]], shown: Ranges) -> Ranges:
    """The macros and file-scope constants the shown code uses (and those their definitions use)
    that no shown block holds, from any file given: per file, line ranges, adjacent ones joined.
    A kernel's block size or radius is often a macro defined between two functions or in a header."""
    where: dict[str, list[tuple[str, int, int]]] = {}
    for name, text in files.items():
        for ident, ranges in definitions(text, parsed[name]).items():
            where.setdefault(ident, []).extend((name, a, b) for a, b in ranges)

    def is_shown(name: str, a: int, b: int) -> bool:
        return any(s <= a and b <= e for s, e in shown.get(name, []))

    todo = sorted({ident for name, ranges in shown.items() for a, b in ranges
                   for ident in used_names(files[name], a, b)})
    picked: set[tuple[str, int, int]] = set()
    seen: set[str] = set()
    while todo:
        ident = todo.pop(0)
        if ident in seen:
            continue
        seen.add(ident)
        for name, a, b in where.get(ident, []):
            if is_shown(name, a, b) or (name, a, b) in picked:
                continue
            if sum(e - s + 1 for _, s, e in picked) + b - a + 1 > MAX_DEFINITION_LINES:
                break
            picked.add((name, a, b))
            todo.extend(sorted(used_names(files[name], a, b) - seen))
    return _joined(files, picked)


def _joined(files: dict[str, str], picked: set[tuple[str, int, int]]) -> Ranges:
    """The picked (file, first, last) line ranges per file, in order; ranges with only blank lines
    between them joined into one."""
    out: Ranges = {}
    for name, a, b in sorted(picked):
        lines = files[name].splitlines()
        ranges = out.setdefault(name, [])
        if ranges and all(not ln.strip() for ln in lines[ranges[-1][1]:a - 1]):
            ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((a, b))
    return out


def macros_in_effect(files: dict[str, str], blocks: list[SourceBlock], macros: CompiledMacros,
                     hot_files: Sequence[str] = ()) -> list[str]:
    """`NAME = value` for each macro the code shown uses whose value the text alone does not settle:
    defined more than once in the sources (`#ifdef` branches, datasets) or on nvcc's command line
    (`-DN=4096`), as the build compiles it (the translation unit of a hot kernel's file first)."""
    if not macros.by_source:
        return []
    counts: dict[str, int] = {}
    for text in files.values():
        for name in _DEFINE_LINE.findall(text):
            counts[name] = counts.get(name, 0) + 1
    ambiguous = {n for n, c in counts.items() if c > 1} | set(macros.command_line)
    used: set[str] = set()
    for b in blocks:
        used |= used_names(files[b.file], b.start, b.end)
    units = [u for u in dict.fromkeys([*hot_files, *macros.by_source]) if u in macros.by_source]
    out = []
    for name in sorted(used & ambiguous)[:MAX_MACROS]:
        value = next((macros.by_source[u][name] for u in units if name in macros.by_source[u]), None)
        if value is None:
            out.append(f"{name}: not defined in this build")
        elif value.startswith(name + "("):
            out.append(value)  # a function-like macro: NAME(a, b) body
        else:
            out.append(f"{name} = {value}")
    return out
