"""Prompt construction: the hot kernels' source with line numbers, the GPU and its measured peaks,
the evidence of the chosen diagnostic configuration, compiler feedback (K*), guardrails and the
response format. Prompts are Jinja2 templates in templates/prompts/ (the package's runner/templates).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel

from runner.analysis.evidence import Diagnostics, Evidence, render_markdown
from runner.analysis.hot import HotFunction, KernelTime, instance_label
from runner.base.config import Config
from runner.base.errors import OptimasError
from runner.base.evidence_kinds import BY_WORD, DIAGNOSTICS, SOURCES, evidence_id, kinds_shown, source_kind
from runner.profiles.model import short_kernel_name
from runner.proposal.prompt_context import macros_in_effect, source_blocks
from runner.scan.cuda_source import kernel_base_name, template_arguments
from runner.toolchain.compiler import CompiledMacros, CompileResult, KernelResources
from runner.validation.compare import ROUNDING_ULPS

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "prompts"

# Which evidence kinds each diagnostic configuration shows (K* compiler feedback always is; the
# launch configuration, L*, with any profiler evidence): runner.base.evidence_kinds.
DIAGNOSTIC_KINDS: dict[str, set[str]] = {d: kinds_shown(d) for d in DIAGNOSTICS}

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
        out.append(KEvidence(id=evidence_id("compiler", len(out) + 1), kernel=base, text=text, resources=r))
    return out


@dataclass(frozen=True)
class PromptSpec:
    """Everything one prompt is made from.

    app, diag, files: the app's name, its evidence, and its sources (names relative to app.workdir).
    diagnostics: the diagnostic configuration (which evidence kinds are shown).
    kernels: the hot kernels the prompt is about (None: all of them).
    editable: app.editable; tolerances: AppConfig.tolerances(), which replaces the bit-for-bit rule.
    resources, macros: the original's build, as compiled (ptxas's report, CompileResult.macros).
    compile_errors, parse_error, rejected: what went wrong with an earlier answer to this prompt
        (it did not compile, could not be read) or an earlier candidate of this code (it failed
        validation).
    """

    app: str
    diag: Diagnostics
    files: dict[str, str]
    diagnostics: str = "PC+IA+Roofline"
    kernels: list[str] | None = None
    editable: Sequence[str] = ()
    tolerances: str | None = None
    max_evidence_bytes: int | None = 6000
    resources: Sequence[KernelResources] = ()
    macros: CompiledMacros | None = None
    compile_errors: str | None = None
    parse_error: str | None = None
    rejected: str | None = None

    @classmethod
    def of(cls, config: Config, diag: Diagnostics, files: dict[str, str], diagnostics: str,
           build: CompileResult | None = None) -> PromptSpec:
        """The prompt of an app's config (its name, editable code, tolerances, evidence budget), with
        the original's `build` where there was one."""
        return cls(config.app.name, diag, files, diagnostics, editable=config.app.editable,
                   tolerances=config.app.tolerances(), max_evidence_bytes=config.analysis.max_prompt_bytes,
                   resources=build.resources if build else (), macros=build.macros if build else None)


def build_prompt(app: str, diag: Diagnostics, files: dict[str, str], diagnostics: str = "PC+IA+Roofline",
                 **options: Any) -> Prompt:
    """The prompt of PromptSpec(app, diag, files, diagnostics, **options)."""
    return render_prompt(PromptSpec(app, diag, files, diagnostics, **options))


def render_prompt(spec: PromptSpec) -> Prompt:
    """Render the prompt for the hot kernels (or `spec.kernels`) of one diagnostic configuration."""
    diag, files, diagnostics, editable, macros = spec.diag, spec.files, spec.diagnostics, spec.editable, spec.macros
    if diagnostics not in DIAGNOSTIC_KINDS:
        raise OptimasError(f"unknown diagnostic configuration {diagnostics!r}; expected one of "
                           + ", ".join(DIAGNOSTIC_KINDS))
    hot = spec.kernels or [k.kernel for k in diag.hot_kernels]
    blocks, ranges, defined = source_blocks(files, hot, editable, _stall_lines(diag, hot, diagnostics))
    if not blocks:
        raise _none_defined(hot, files)
    times = {k.kernel: k for k in diag.kernels}
    elsewhere = _defined_elsewhere(hot, defined, times)
    hot = defined or hot
    hot_files = [b.file for b in blocks if b.title.startswith("Hot kernel")]
    shown, evidence_md = _shown_evidence(diag, diagnostics, hot, spec.max_evidence_bytes)
    k_items = compiler_evidence(list(spec.resources), _compiler_kernels(hot, diag.functions),
                                {k: t.mangled for k, t in times.items() if t.mangled})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False)
    system = _system_prompt(env, _results_rule(diag, spec.tolerances))
    user = env.get_template("user.md.j2").render(
        app=spec.app, gpu=diag.gpu, peaks=_peaks(diag),
        sources_label=_label(diagnostics, {e.kind for e in shown}, {"counter": _counter_note(diag)}),
        evidence_md=evidence_md,
        compiler=k_items, compile_errors=spec.compile_errors, parse_error=spec.parse_error, rejected=spec.rejected,
        sources=blocks,
        macros=macros_in_effect(files, blocks, macros or CompiledMacros(), hot_files),
        hot_kernels=_task_kernels(hot, times, diag.functions), elsewhere=elsewhere)
    return Prompt(system=system, user=user, diagnostics=diagnostics, hot_kernels=hot,
                  evidence_ids=_evidence_ids(shown, evidence_md, k_items), editable=ranges)


def _none_defined(hot: list[str], files: dict[str, str]) -> OptimasError:
    """The error when no hot kernel is defined in the sources given."""
    return OptimasError("none of the hot kernels (" + ", ".join(short_kernel_name(k) for k in hot)
                        + f") is defined in the sources given ({', '.join(files) or 'none'}); check app.sources")


def _shown_evidence(diag: Diagnostics, diagnostics: str, hot: list[str],
                    max_bytes: int | None) -> tuple[list[Evidence], str]:
    """The evidence of the configuration's kinds about the `hot` kernels, and its section of the
    prompt (empty without any). Evidence of a kernel the prompt does not show is never cited
    (counters of another kernel, say)."""
    shown = [e for e in diag.evidence if e.kind in DIAGNOSTIC_KINDS[diagnostics] and e.kernel in hot]
    if not shown:
        return shown, ""
    return shown, _evidence_section(diag.model_copy(update={"evidence": shown, "notes": []}), max_bytes)


def _evidence_ids(shown: list[Evidence], evidence_md: str, k_items: list[KEvidence]) -> list[str]:
    """Every id the prompt shows: the evidence its section kept within its size limit, then K*."""
    return [e.id for e in shown if f"- {e.id} " in evidence_md] + [k.id for k in k_items]


def _stall_lines(diag: Diagnostics, hot: list[str], diagnostics: str) -> dict[tuple[str, int], str]:
    """(file's base name, line) -> the S id of each salient stall line of a hot kernel, or a plain
    description where the configuration shows no S* ids. The helpers holding these lines are
    editable whichever evidence the prompt shows: the edit space is the same in every diagnostic
    configuration; only S* shown names them."""
    show_ids = "stall" in DIAGNOSTIC_KINDS[diagnostics]
    return {(posixpath.basename(e.stall.file), e.stall.line): e.id if show_ids else "a salient stall line"
            for e in diag.evidence if _is_stall_of(e, hot)}


def _is_stall_of(e: Evidence, hot: list[str]) -> bool:
    """Whether `e` is a stall line of one of the `hot` kernels."""
    return e.kind == "stall" and e.stall is not None and e.kernel in hot


def _defined_elsewhere(hot: list[str], defined: list[str], times: dict[str, KernelTime]) -> list[str]:
    """The hot kernels defined outside the sources given (a library's, generated code), with their
    share of the time: they cannot be edited, so the prompt is about the others and names these so
    that the model knows. None when no hot kernel is defined in the sources."""
    if not defined:
        return []
    return [f"{short_kernel_name(k)} ({times[k].share:.1%} of kernel time)" if k in times
            else short_kernel_name(k) for k in hot if k not in defined]


def _results_rule(diag: Diagnostics, tolerances: str | None) -> str:
    """The guardrail on results: within the declared tolerances, within a few ulps where the
    original's own results vary from run to run, else bit for bit."""
    variation = diag.results_variation
    if tolerances:
        return TOLERANCE_RULE.format(tolerances=tolerances)
    if variation is not None and variation.rounding_ulps is not None:
        return ROUNDING_RULE.format(ulps=ROUNDING_ULPS)
    return BITWISE_RULE


def _system_prompt(env: jinja2.Environment, results_rule: str) -> str:
    """The system prompt: the guardrails, with `results_rule` as the rule on results, and the
    response format."""
    response_format = (TEMPLATES / "response_format.md").read_text()
    rules = [results_rule if r == BITWISE_RULE else r for r in GUARDRAILS]
    return env.get_template("system.md.j2").render(guardrails=rules, response_format=response_format.strip(),
                                                   bit_for_bit=results_rule == BITWISE_RULE)


def _several(functions: list[HotFunction]) -> dict[str, HotFunction]:
    """Each hot kernel -> its source function, where that function has several hot instances."""
    return {k: f for f in functions if len(f.hot) > 1 for k in f.hot}


def _compiler_kernels(hot: list[str], functions: list[HotFunction]) -> list[str]:
    """The kernels K* reports on: the `hot` kernels, but of a function with several hot instances
    (a template's) only those profiled, whose evidence the prompt shows, else its hottest: ptxas
    reports each instance of the one source alike, and dozens of them would crowd the prompt."""
    several = _several(functions)
    return [k for k in hot if k not in several or k in (several[k].profiled or several[k].hot[:1])]


def _task_kernels(hot: list[str], times: dict[str, KernelTime], functions: list[HotFunction]) -> list[str]:
    """The hot kernels as the task names them (_with_time), the instances of a function with several
    hot ones (a template's) once, as that function: how many, their share of kernel time and
    launches, and which were profiled (the evidence is theirs)."""
    several = _several(functions)
    out: list[str] = []
    named: set[str] = set()
    for k in hot:
        f = several.get(k)
        if f is None:
            out.append(_with_time(k, times.get(k)))
        elif f.hot[0] not in named:  # its first instance here names it
            named.add(f.hot[0])
            share = sum(times[i].share for i in f.hot if i in times)
            launches = sum(times[i].launches for i in f.hot if i in times)
            profiled = (f"the evidence is of the {len(f.profiled)} profiled: "
                        + ", ".join(instance_label(i) for i in f.profiled) if f.profiled else "none was profiled")
            out.append(f"{f.function} ({len(f.hot)} instances of one template, {share:.1%} of kernel time: "
                       f"{launches:,} launches; {profiled})")
    return out


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
_SOURCES = {src: (source_kind(src).prompt_name, source_kind(src).word) for src in SOURCES}


def _label(diagnostics: str, shown: set[str], why: dict[str, str] | None = None) -> str:
    """The diagnostic sources a prompt names, saying which have nothing for the kernels shown, and
    why where the analysis said (`why`: evidence kind -> its note)."""
    if diagnostics == "none":
        return "none (code only)"
    parts = [name if kind in shown else f"{name}: none for the kernels shown"
             + (f" ({(why or {})[kind].rstrip('.')})" if (why or {}).get(kind) else "")
             for name, kind in (_SOURCES[p] for p in diagnostics.split("+"))]
    return ", ".join(parts + [BY_WORD["launch"].prompt_name, BY_WORD["compiler"].prompt_name])


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
