"""Prompt construction: the hot kernels' source with line numbers, the GPU and its measured peaks,
the evidence of the chosen diagnostic configuration, compiler feedback (K*), guardrails and the
response format. Prompts are Jinja2 templates under runner/proposal/templates/ (package data).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

import jinja2
from pydantic import BaseModel

from runner.analysis.evidence import Diagnostics, render_markdown
from runner.analysis.hot import KernelTime
from runner.base.cuda_source import (
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
from runner.base.errors import OptimasError
from runner.base.launch_sites import launch_sites
from runner.build.compiler import CompiledMacros, KernelResources
from runner.profiles.model import short_kernel_name
from runner.tracing.compare import ROUNDING_ULPS

TEMPLATES = Path(__file__).resolve().parent / "templates"

# Which evidence kinds each diagnostic configuration shows (K* compiler feedback always is; the
# launch configuration, L*, with any profiler evidence).
DIAGNOSTIC_KINDS: dict[str, set[str]] = {
    "none": set(),
    "PC": {"launch", "stall"},
    "IA": {"launch", "counter"},
    "Roofline": {"launch", "roofline"},
    "PC+IA": {"launch", "stall", "counter"},
    "PC+Roofline": {"launch", "stall", "roofline"},
    "IA+Roofline": {"launch", "counter", "roofline"},
    "PC+IA+Roofline": {"launch", "stall", "counter", "roofline"},
}

BITWISE_RULE = "Results must stay bit-for-bit identical: do not reorder floating-point operations or change precision."
TOLERANCE_RULE = ("Results must stay within the declared tolerances ({tolerances}): floating-point operations may be "
                  "reordered or fused within them; keep every value's precision (no narrower types or intrinsics).")
ROUNDING_RULE = ("The original program's own results differ in their last bits from run to run (floating-point "
                 "atomics or a reduction in no fixed order), so results are checked within {ulps} ulps of the "
                 "original's where they vary and bit for bit elsewhere: the operations that produce the varying "
                 "results may be reordered (a reduction instead of atomics, say); keep every value's precision.")
GUARDRAILS = [
    "Keep every kernel's name, parameter list and launch interface; adding const, __restrict__ or "
    "__launch_bounds__ is allowed.",
    "Add no new __global__ kernel and do not duplicate one.",
    "Edit only inside the hot kernels shown (their signature and body), unless the prompt allows more.",
    "Do not touch host code (input generation, validation, output writing stay as they are), except a hot "
    "kernel's execution configuration where the prompt shows its launch: grid, block and dynamic shared "
    "memory, and the one-line declarations they are computed from; its stream and arguments stay.",
    BITWISE_RULE,
    "Make no formatting-only or comment-only changes.",
    "Every edit cites the evidence ids it targets; cite only ids listed in the prompt.",
    "List the suggestions you considered but did not apply, with the reason.",
]


class SourceBlock(BaseModel):
    title: str
    file: str
    start: int
    end: int
    text: str


class KEvidence(BaseModel):
    id: str
    kernel: str
    text: str
    resources: KernelResources


class Prompt(BaseModel):
    """One rendered prompt and what it was made of."""

    system: str
    user: str
    diagnostics: str
    hot_kernels: list[str]
    evidence_ids: list[str]  # every id the prompt shows (L/R/S/C/K)
    editable: dict[str, list[tuple[int, int]]]  # file -> line ranges the model may edit

    @property
    def approx_tokens(self) -> int:
        return (len(self.system) + len(self.user)) // 4


def _instance(name: str) -> tuple[str, tuple[str, ...]]:
    """A kernel's name and template arguments, spelled alike by ncu and c++filt (`256U`, `256u` -> `256`)."""
    return kernel_base_name(name), tuple(re.sub(r"(?<=\d)[uUlL]+$", "", re.sub(r"\s+", "", a))
                                         for a in template_arguments(name))


def compiler_evidence(resources: list[KernelResources], kernels: list[str],
                      symbols: dict[str, str] | None = None) -> list[KEvidence]:
    """K* items for the given kernels: ptxas's figures of the same template instance when the
    build has it (by symbol where `symbols` gives the kernel's, else by its template arguments),
    else of the first kernel of that name."""
    out = []
    for k in kernels:
        base, args = _instance(k)
        same = [r for r in resources if _instance(r.kernel)[0] == base]
        if not same:
            continue
        symbol = (symbols or {}).get(k)
        # the exact instance, else the first
        r = min(same, key=lambda r: r.mangled != symbol if symbol else _instance(r.kernel)[1] != args)
        spills = (f"{r.spill_store_bytes} B spill stores, {r.spill_load_bytes} B spill loads"
                  if r.spill_store_bytes or r.spill_load_bytes else "no spills")
        text = (f"{r.registers} registers per thread, {r.shared_bytes} B static shared memory, "
                f"{r.stack_bytes} B stack frame, {spills} (ptxas)")
        out.append(KEvidence(id=f"K{len(out) + 1}", kernel=base, text=text, resources=r))
    return out


MAX_HELPERS = 24  # device functions shown besides the hot kernels, nearest callees first
# A file's declarations before its first function are shown whole up to this many lines; beyond,
# only the macros, constants and types the code shown uses (host globals, long tables left out).
MAX_DECLARATION_LINES = 80


def _source_blocks(files: dict[str, str], hot: list[str], extra: Sequence[str] = (),
                   stalls: dict[tuple[str, int], str] | None = None
                   ) -> tuple[list[SourceBlock], dict[str, list[tuple[int, int]]], list[str]]:
    """The hot kernels (editable, in whichever file defines them), the declarations before them, and
    the device functions they reach, across every file given: by call, and the members of the
    functor types a kernel is instantiated with (`for_each<Saxpy>` -> `Saxpy::operator()`). A helper
    is editable when it holds a salient stall line (`stalls`: (file's base name, line) -> S id) or
    `extra` names it, unless `extra` names it with a leading "!". Also: the hot kernels that the
    files define."""
    parsed = {name: functions(text) for name, text in files.items()}
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
    # file -> (first, last) line of its declarations block: includes, macros, types and constants
    # before its first function, without the license or copyright comments the file opens with
    declared: dict[str, tuple[int, int]] = {}
    for name in kernels:
        first = min((f.start_line for f in parsed[name] if f.owner is None), default=1)
        start = after_license_header(files[name])
        if start < first <= start + MAX_DECLARATION_LINES:  # a longer preamble: only what the code uses
            declared[name] = (start, first - 1)
    index: dict[str, list[tuple[str, Function]]] = {}
    for name, funcs in parsed.items():
        for f in funcs:
            if f.is_device and not f.is_kernel:
                index.setdefault(f.name.split("::")[-1], []).append((name, f))
    functor_types = {kernel_base_name(a) for k in hot for a in template_arguments(k)}
    helpers: dict[tuple[str, int], tuple[str, Function]] = {}

    def add(name: str, g: Function, todo: list) -> None:
        key = (name, g.start_line)
        if key in helpers or len(helpers) >= MAX_HELPERS or g.end_line <= declared.get(name, (0, 0))[1]:
            return  # shown already, enough shown, or inside a declarations block that is shown
        helpers[key] = (name, g)
        todo.append((name, g))

    todo: list[tuple[str, Function]] = [(n, f) for n, fs in kernels.items() for f in fs]
    for entries in index.values():
        for name, g in entries:
            if g.owner and g.owner.split("::")[-1] in functor_types:
                add(name, g, todo)
    while todo:
        name, f = todo.pop(0)
        for callee in sorted(called_names(files[name], f)):
            for hname, g in index.get(callee, []):
                if g.owner is None or hname == name:
                    add(hname, g, todo)

    shown: dict[str, list[tuple[int, int]]] = {name: [lines] for name, lines in declared.items()}
    for name, g in helpers.values():
        shown.setdefault(name, []).append((g.start_line, g.end_line))
    for name, fs in kernels.items():
        shown.setdefault(name, []).extend((f.start_line, f.end_line) for f in fs)
    defined = _definitions_used(files, parsed, shown)

    blocks: list[SourceBlock] = []
    editable: dict[str, list[tuple[int, int]]] = {}
    for name, text in files.items():
        if name in declared:
            a, b = declared[name]
            blocks.append(SourceBlock(title="Declarations", file=name, start=a, end=b, text=numbered(text, a, b)))
        for a, b in defined.get(name, []):
            blocks.append(SourceBlock(title="Definitions the code shown uses (read-only)", file=name, start=a,
                                      end=b, text=numbered(text, a, b)))
        for _, g in sorted((h for h in helpers.values() if h[0] == name), key=lambda h: h[1].start_line):
            names = {g.name, g.name.split("::")[-1]}
            held = [sid for (base, line), sid in (stalls or {}).items()
                    if base == posixpath.basename(name) and g.start_line <= line <= g.end_line]
            excluded = {n[1:] for n in extra if n.startswith("!")}
            may_edit = not names & excluded and (bool(held) or bool(names & set(extra)))
            why = f" (editable: it holds {', '.join(sorted(set(held)))})" if may_edit and held else ""
            blocks.append(SourceBlock(title=f"Device function {g.name}" + (why if may_edit else " (read-only)"),
                                      file=name, start=g.start_line, end=g.end_line,
                                      text=numbered(text, g.start_line, g.end_line)))
            if may_edit:
                editable.setdefault(name, []).append((g.start_line, g.end_line))
        for k in sorted(kernels.get(name, []), key=lambda f: f.start_line):
            blocks.append(SourceBlock(title=f"Hot kernel {k.name}", file=name, start=k.start_line, end=k.end_line,
                                      text=numbered(text, k.start_line, k.end_line)))
            editable.setdefault(name, []).append((k.start_line, k.end_line))
    hot_names = {f.name.split("::")[-1] for fs in kernels.values() for f in fs}
    shown_sites = 0
    for name, text in files.items():
        for site in launch_sites(text, hot_names, parsed[name]):
            if shown_sites >= MAX_LAUNCH_SITES:
                break
            first = min([site.start_line, *site.declarations])
            if site.end_line - first + 1 > MAX_LAUNCH_LINES:  # declared far above: the launch alone
                first, site.declarations = site.start_line, []
            shown_sites += 1
            blocks.append(SourceBlock(title=f"Launch of {site.kernel} (host code: only its execution configuration "
                                            "<<<grid, block, shared memory>>> and the declarations it is computed "
                                            "from may change)", file=name, start=first, end=site.end_line,
                                      text=numbered(text, first, site.end_line)))
            editable.setdefault(name, []).extend(site.editable)
    return blocks, editable, found


MAX_LAUNCH_SITES = 8  # launch sites of hot kernels shown, at most
MAX_LAUNCH_LINES = 30  # from the first declaration a launch's configuration uses to the launch


MAX_DEFINITION_LINES = 60  # macro and constant lines shown beside the functions
MAX_MACROS = 40  # macros listed as the build compiles them
_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.MULTILINE)


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


def _definitions_used(files: dict[str, str], parsed: dict[str, list[Function]],
                      shown: dict[str, list[tuple[int, int]]]) -> dict[str, list[tuple[int, int]]]:
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
    out: dict[str, list[tuple[int, int]]] = {}
    for name, a, b in sorted(picked):
        lines = files[name].splitlines()
        ranges = out.setdefault(name, [])
        if ranges and all(not ln.strip() for ln in lines[ranges[-1][1]:a - 1]):
            ranges[-1] = (ranges[-1][0], b)  # only blank lines between: one block
        else:
            ranges.append((a, b))
    return out


def build_prompt(app: str, diag: Diagnostics, files: dict[str, str], diagnostics: str = "PC+IA+Roofline",
                 resources: list[KernelResources] = (), kernels: list[str] | None = None,
                 compile_errors: str | None = None, parse_error: str | None = None,
                 max_evidence_bytes: int | None = 6000, editable: list[str] = (),
                 rejected: str | None = None, tolerances: str | None = None,
                 macros: CompiledMacros | None = None) -> Prompt:
    """Render the prompt for the hot kernels (or `kernels`) of one diagnostic configuration;
    `rejected` says why an earlier candidate of the same code failed validation; `tolerances`
    (AppConfig.tolerances) replaces the bit-for-bit rule with the tolerances results are checked
    within. `macros` (CompileResult.macros) gives the macros as the build compiles them."""
    if diagnostics not in DIAGNOSTIC_KINDS:
        raise OptimasError(f"unknown diagnostic configuration {diagnostics!r}; expected one of "
                           + ", ".join(DIAGNOSTIC_KINDS))
    hot = kernels or [k.kernel for k in diag.hot_kernels]
    # The helpers holding salient stall lines (S*) are editable whichever evidence the prompt shows:
    # the edit space is the same in every diagnostic configuration; only S* shown names them
    show_ids = "stall" in DIAGNOSTIC_KINDS[diagnostics]
    stalls = {(posixpath.basename(e.stall.file), e.stall.line): e.id if show_ids else "a salient stall line"
              for e in diag.evidence if e.kind == "stall" and e.stall is not None and e.kernel in hot}
    blocks, ranges, defined = _source_blocks(files, hot, editable, stalls)
    if not blocks:
        raise OptimasError("none of the hot kernels (" + ", ".join(short_kernel_name(k) for k in hot)
                           + f") is defined in the sources given ({', '.join(files) or 'none'}); check app.sources")
    # Hot kernels defined elsewhere (a library's, generated code) cannot be edited: the prompt is
    # about the others, and names these with their share of the time so that the model knows it.
    times = {k.kernel: k for k in diag.kernels}
    elsewhere = [f"{short_kernel_name(k)} ({times[k].share:.1%} of kernel time)" if k in times
                 else short_kernel_name(k) for k in hot if k not in defined] if defined else []
    hot = defined or hot
    hot_files = [b.file for b in blocks if b.title.startswith("Hot kernel")]
    kinds = DIAGNOSTIC_KINDS[diagnostics]
    # Evidence of a kernel the prompt does not show is never cited (counters of another kernel, say).
    shown = [e for e in diag.evidence if e.kind in kinds and e.kernel in hot]
    sub = diag.model_copy(update={"evidence": shown, "notes": []})
    evidence_md = _evidence_section(sub, max_evidence_bytes) if shown else ""
    k_items = compiler_evidence(list(resources), hot, {k: t.mangled for k, t in times.items() if t.mangled})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    response_format = (TEMPLATES / "response_format.md").read_text()
    variation = diag.results_variation
    if tolerances:
        results_rule = TOLERANCE_RULE.format(tolerances=tolerances)
    elif variation is not None and variation.rounding_ulps is not None:
        results_rule = ROUNDING_RULE.format(ulps=ROUNDING_ULPS)
    else:
        results_rule = BITWISE_RULE
    rules = [results_rule if r == BITWISE_RULE else r for r in GUARDRAILS]
    system = env.get_template("system.md.j2").render(guardrails=rules, response_format=response_format.strip(),
                                                     bit_for_bit=results_rule == BITWISE_RULE)
    peaks = _peaks(diag)
    user = env.get_template("user.md.j2").render(
        app=app, gpu=diag.gpu, peaks=peaks,
        sources_label=_label(diagnostics, {e.kind for e in shown}, {"counter": _counter_note(diag)}),
        evidence_md=evidence_md,
        compiler=k_items, compile_errors=compile_errors, parse_error=parse_error, rejected=rejected, sources=blocks,
        macros=macros_in_effect(files, blocks, macros or CompiledMacros(), hot_files),
        hot_kernels=[_with_time(k, times.get(k)) for k in hot], elsewhere=elsewhere)
    ids = [e.id for e in shown if f"- {e.id} " in evidence_md] + [k.id for k in k_items]
    return Prompt(system=system, user=user, diagnostics=diagnostics, hot_kernels=hot, evidence_ids=ids,
                  editable=ranges)


def _with_time(kernel: str, t: KernelTime | None) -> str:
    """A hot kernel's name with its share of kernel time and its launches, so that the model knows
    where the time goes (the name alone when the profile has no time for it)."""
    name = short_kernel_name(kernel)
    if t is None or not t.launches:
        return name
    us = t.total_ns / t.launches / 1000
    each = f"{us:,.0f}" if us >= 100 else f"{us:.3g}"
    if t.launches == 1:
        return f"{name} ({t.share:.1%} of kernel time: 1 launch, {each} us)"
    return f"{name} ({t.share:.1%} of kernel time: {t.launches:,} launches, {each} us each on average)"


def _evidence_section(d: Diagnostics, max_bytes: int | None) -> str:
    md = render_markdown(d, max_bytes)
    # The prompt has its own header and GPU line; keep the evidence sections only.
    parts = md.split("\n## ", 1)
    body = "## " + parts[1] if len(parts) == 2 else md
    lines = [ln for ln in body.splitlines() if not ln.startswith("## Hot kernels") and not _is_hot_line(ln)]
    return "\n".join(lines).replace("## ", "### ").strip()


def _is_hot_line(line: str) -> bool:
    return line.startswith("- ") and " us over " in line and "launch" in line


# diagnostic source -> (its name in a prompt, the evidence kind it gives)
_SOURCES = {"PC": ("PC sampling (S)", "stall"), "IA": ("counters (C)", "counter"),
            "Roofline": ("roofline (R)", "roofline")}


def _label(diagnostics: str, shown: set[str], why: dict[str, str] | None = None) -> str:
    """The diagnostic sources a prompt names, saying which have nothing for the kernels shown, and
    why where the analysis said (`why`: evidence kind -> its note)."""
    if diagnostics == "none":
        return "none (code only)"
    parts = [name if kind in shown else f"{name}: none for the kernels shown"
             + (f" ({(why or {})[kind].rstrip('.')})" if (why or {}).get(kind) else "")
             for name, kind in (_SOURCES[p] for p in diagnostics.split("+"))]
    return ", ".join(parts) + ", launch configuration (L), compiler feedback (K)"


def _counter_note(diag: Diagnostics) -> str:
    """Why the analysis gave no counter evidence, in its own words (the first note about counters)."""
    return next((n for n in diag.notes if "counter" in n.lower()), "")


def _peaks(diag: Diagnostics) -> str:
    g = diag.gpu
    parts = []
    if g.dram_peak_bytes_per_s:
        parts.append(f"DRAM {g.dram_peak_bytes_per_s / 1e12:.2f} TB/s")
    if g.fp32_peak_flops:
        parts.append(f"FP32 {g.fp32_peak_flops / 1e12:.1f} TFLOP/s")
    if g.fp64_peak_flops:
        parts.append(f"FP64 {g.fp64_peak_flops / 1e12:.1f} TFLOP/s")
    if g.sm_count:
        parts.append(f"{g.sm_count} SMs")
    return ", ".join(parts)
