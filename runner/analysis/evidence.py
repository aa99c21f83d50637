"""Evidence: the analysis results under stable ids (L* launches, R* roofline, S* stalls, C* counters;
the prompt adds K*, the compiler's report), one EvidenceKind per letter.

`diagnose` runs the pure analyses over a profile and gathers their findings; `render_markdown`
writes the few kilobytes a prompt embeds. Ids are assigned in a fixed order (hot kernels by time,
then findings by weight) so the same profile always yields the same ids.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from runner.analysis.counters import CounterSelection, SelectedCounter, select_counters
from runner.analysis.hot import (
    HotFunction,
    KernelTime,
    hot_functions,
    in_profile_spelling,
    instance_label,
    select_hot_kernels,
    widen_to_editable,
)
from runner.analysis.launch import LaunchConfig, launch_config, launch_text
from runner.analysis.roofline import Roofline, aggregate_launches, roofline
from runner.analysis.sources import SourceDigest, source_digests
from runner.analysis.stalls import StallLine, salient_stalls
from runner.base.config import AnalysisConfig, CountersConfig
from runner.base.errors import AnalysisError
from runner.base.evidence_kinds import BY_WORD, KINDS, PROFILE_WORDS, evidence_id
from runner.profiles.counter_plan import CounterPlan
from runner.profiles.model import MANGLED, STALL_MEANING, Profile, short_kernel_name
from runner.scan.cuda_source import template_symbol_prefix
from runner.tracing.trace import ResultsVariation

# The kinds of evidence a prompt shows, each by the letter its ids start with, in the order the
# prompt lists them (runner.base.evidence_kinds: LAUNCH = "L", ..., COMPILER = "K").
EvidenceKind = StrEnum("EvidenceKind", [(k.word.upper(), k.letter) for k in KINDS])
ProfileEvidence = Literal[PROFILE_WORDS]  # type: ignore[valid-type]


# An evidence id as an answer cites it (L1, R2, S10, C3, K1): the parser and EAR read ids with it.
EVIDENCE_ID = re.compile(r"\b([" + "".join(k.value for k in EvidenceKind) + r"]\d+)\b")


def evidence_order(evidence_id: str) -> tuple[int, int]:
    """Sort key of an id: by kind in the prompt's order, then by number."""
    return list(EvidenceKind).index(EvidenceKind(evidence_id[0])), int(evidence_id[1:])


class Evidence(BaseModel):
    """One citable finding."""

    id: str
    kind: ProfileEvidence
    kernel: str | None
    text: str
    launch: LaunchConfig | None = None
    roofline: Roofline | None = None
    stall: StallLine | None = None
    counter: dict | None = None


class GpuInfo(BaseModel):
    name: str | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    sm_clock_hz: float | None = None
    dram_peak_bytes_per_s: float | None = None
    fp32_peak_flops: float | None = None
    fp64_peak_flops: float | None = None


class Diagnostics(BaseModel):
    """Everything the Analysis Agent found; written as diagnostics.json."""

    schema_version: int = 1
    gpu: GpuInfo
    alpha: float
    kernels: list[KernelTime]
    # the hot kernels' source functions: a template's instances together, and which were profiled
    functions: list[HotFunction] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    counter_selection: CounterSelection | None = None
    notes: list[str] = Field(default_factory=list)
    # the text of the lines each hot kernel's samples fell on, as captured (see analysis.sources)
    source_digests: list[SourceDigest] = Field(default_factory=list)
    # two traced runs of the original compared (None: not checked)
    results_variation: ResultsVariation | None = None

    @property
    def hot_kernels(self) -> list[KernelTime]:
        return [k for k in self.kernels if k.hot]


def _gpu_info(profile: Profile, rooflines: list[Roofline], metrics: pd.DataFrame, hot: list[str] = ()) -> GpuInfo:
    """The GPU as the hottest kernel saw it: clocks vary launch to launch (boost), so the clock is
    the median over that kernel's launches, else over all of them."""
    mine = None  # the hottest kernel's launches (metrics rows follow the launch table)
    if hot and len(metrics) == len(profile.launches):
        mine = (profile.launches["kernel"] == hot[0]).to_numpy()

    def first(name: str) -> float | None:
        if name in metrics.columns and metrics[name].notna().any():
            return float(metrics[name].dropna().iloc[0])
        return None

    def clock(name: str) -> float | None:
        if name not in metrics.columns:
            return None
        values = metrics[name][mine].dropna() if mine is not None and mine.any() else metrics[name].dropna()
        return float(values.median()) if len(values) else None

    info = GpuInfo(name=profile.device_name, sm_clock_hz=clock("sm__cycles_elapsed.avg.per_second"))
    ccs = [c for c in profile.launches.get("cc", pd.Series(dtype=str)) if c]
    info.compute_capability = ccs[0] if ccs else None
    sm = first("launch__sm_count") or first("device__attribute_multiprocessor_count")
    info.sm_count = int(sm) if sm else None
    for r in rooflines:
        for res in r.resources:
            if res.peak is None:
                continue
            if res.name == "dram" and info.dram_peak_bytes_per_s is None:
                info.dram_peak_bytes_per_s = res.peak
            elif res.name == "fp32" and info.fp32_peak_flops is None:
                info.fp32_peak_flops = res.peak
            elif res.name == "fp64" and info.fp64_peak_flops is None:
                info.fp64_peak_flops = res.peak
    return info


@dataclass(frozen=True)
class CounterRuns:
    """What eOMP selects counters from: the counter runs' profile, the metric dictionary that
    describes their counters, and the plan that says what the runs are (sizes, launch
    configurations, code versions, or one run and why)."""

    runs: Profile
    descriptions: dict[str, str] | None = None
    plan: CounterPlan | None = None


def diagnose(profile: Profile, analysis: AnalysisConfig, counters: CounterRuns | None = None,
             timing: pd.DataFrame | None = None, only: list[str] = (),
             editable: Collection[str] | None = None) -> Diagnostics:
    """Hot kernels, then roofline, stalls and counters (from `counters`, the counter runs) for them,
    as numbered evidence.

    Hot kernels come from `timing` (launches of a timing pass over every launch) when given, else
    from the profile's own launches. `only` restricts them to the named kernels (function names or
    full signatures). `editable` names the kernels the app's sources define: when no hot kernel is
    one of them, the hottest of them are hot too (widen_to_editable).
    """
    kernels = _rank_kernels(profile, analysis.alpha, timing, only, editable)
    hot = [k.kernel for k in kernels if k.hot]
    launched = set(profile.launches["kernel"])
    profiled = [k for k in hot if k in launched]  # the others: instances of a template left out, say
    if not profiled:
        raise AnalysisError("the profiles hold no launch of hot kernel(s) " + ", ".join(hot)
                            + "; collect them (ncu -k) or lower analysis.alpha")
    functions = hot_functions(kernels, profiled)
    notes = _unprofiled_notes(functions)
    aggregated = [(k, aggregate_launches(profile.kernel_metrics(k), profile.kernel_durations(k)))
                  for k in profiled]
    rooflines, roofline_items = _roofline_evidence(aggregated, analysis.saturation, notes)
    stalls = None if profile.lines.empty else {
        k: salient_stalls(profile.lines, k, analysis.stall_share, analysis.min_line_share, analysis.max_stall_lines,
                          analysis.library_paths) for k in profiled}
    thresholds = f"dominant reason >= {analysis.stall_share:.0%}, line >= {analysis.min_line_share:.0%} of samples"
    evidence = (_launch_evidence(profile, aggregated) + roofline_items
                + _stall_evidence(profile, stalls, thresholds, notes))
    selection = None
    if counters is not None and not counters.runs.launches.empty:
        symbols = {k.kernel: k.mangled for k in kernels if k.hot and k.mangled}
        selection = _select_for_hot(counters, hot, analysis.counters, notes, symbols)
        if selection and counters.runs.device_name not in (None, profile.device_name):
            selection.device = counters.runs.device_name
        evidence += _counter_evidence(selection)
    else:
        notes.append("no counter runs given (profiles.counters); eOMP counter evidence skipped")
    return Diagnostics(gpu=_gpu_info(profile, rooflines, profile.metrics, profiled), alpha=analysis.alpha,
                       kernels=kernels, functions=functions, evidence=evidence, counter_selection=selection,
                       notes=notes, source_digests=source_digests(profile, profiled))


def _unprofiled_notes(functions: list[HotFunction]) -> list[str]:
    """A note for each hot source function the profiles hold no instance of: it stays hot (its
    share counts) without evidence of its own. Instances of a function left out beside a profiled
    one need none: the evidence of that one is of the same source (the hot-kernel list says so)."""
    return [f"{f.function}: {len(f.hot)} hot kernel{'s' if len(f.hot) > 1 else ''} ({f.share:.1%} of kernel time) "
            "without a launch in the profiles, so no L/R/S evidence of its own (the profiling agent profiles "
            "profiling.max_targeted_kernels kernels at most; collect it with ncu -k or raise that limit)"
            for f in functions if not f.profiled]


def _rank_kernels(profile: Profile, alpha: float, timing: pd.DataFrame | None, only: list[str],
                  editable: Collection[str] | None) -> list[KernelTime]:
    """Every kernel by time, the hot ones (covering `alpha` of the time) marked (see `diagnose` for
    `timing`, `only`, `editable`)."""
    if timing is not None:
        timing = in_profile_spelling(timing, profile.launches)
    kernels = select_hot_kernels(timing if timing is not None else profile.launches, alpha)
    if editable and not only:
        kernels = widen_to_editable(kernels, editable, alpha)
    if only:
        wanted = set(only)
        for k in kernels:
            k.hot = k.kernel in wanted or short_kernel_name(k.kernel) in wanted
    return kernels


def _launch_evidence(profile: Profile, aggregated: list[tuple[str, pd.Series]]) -> list[Evidence]:
    """L*: each hot kernel's launch configuration, where the profile recorded one."""
    items: list[Evidence] = []
    for k, m in aggregated:
        if (lc := launch_config(profile.launches[profile.launches["kernel"] == k], m)) is not None:
            items.append(Evidence(id=evidence_id("launch", len(items) + 1), kind="launch", kernel=k, launch=lc,
                                  text=launch_text(lc)))
    return items


def _roofline_evidence(aggregated: list[tuple[str, pd.Series]], saturation: float,
                       notes: list[str]) -> tuple[list[Roofline], list[Evidence]]:
    """R*: each hot kernel's roofline (a resource at `saturation` of its peak is saturated), with
    the rooflines themselves; a kernel without throughput metrics gets a note instead."""
    rooflines: list[Roofline] = []
    items: list[Evidence] = []
    for k, m in aggregated:
        r = roofline(k, m, saturation)
        if not r.resources and r.sol_compute_pct is None:
            notes.append(f"{short_kernel_name(k)}: no throughput metrics in the profile; roofline skipped "
                         "(collect --section SpeedOfLight --section SpeedOfLight_RooflineChart)")
            continue
        rooflines.append(r)
        items.append(Evidence(id=evidence_id("roofline", len(rooflines)), kind="roofline", kernel=k, roofline=r,
                              text=_roofline_text(r)))
    return rooflines, items


def _stall_evidence(profile: Profile, stalls: dict[str, list[StallLine]] | None, thresholds: str,
                    notes: list[str]) -> list[Evidence]:
    """S*: the salient stall lines of each hot kernel (`stalls`, None when the profile has no
    source-level samples), numbered across kernels; notes say why a kernel has none (`thresholds`:
    the rule a line missed, in words)."""
    if stalls is None:
        notes.append("no source-level PC sampling in the inputs; stall evidence skipped (give a .ncu-rep "
                     "collected with --set full, or a --page source --print-source cuda,sass export)")
        return []
    items: list[Evidence] = []
    for k, found in stalls.items():
        if not found and (profile.lines["kernel"] == k).any():
            notes.append(f"{short_kernel_name(k)}: no line reaches the stall thresholds ({thresholds})")
        elif not found:
            notes.append(f"{short_kernel_name(k)}: no PC samples in the source data for this kernel")
        for s in found:
            items.append(Evidence(id=evidence_id("stall", len(items) + 1), kind="stall", kernel=k, stall=s,
                                  text=_stall_text(s)))
    return items


def _counter_evidence(selection: CounterSelection | None) -> list[Evidence]:
    """C*: the counters eOMP selected, in its order."""
    if not selection:
        return []
    return [Evidence(id=evidence_id("counter", i), kind="counter", kernel=selection.kernel, counter=c.model_dump(),
                     text=_counter_text(c)) for i, c in enumerate(selection.counters, start=1)]


def _select_for_hot(counters: CounterRuns, hot: list[str], settings: CountersConfig, notes: list[str],
                    symbols: dict[str, str] | None = None) -> CounterSelection | None:
    """eOMP on the hottest kernel that the counter runs cover (else the kernel they profiled most).

    A program may launch another instance of a kernel template at another problem size (a flag
    for power-of-two sizes): runs of the hot kernel's template count when `symbols` (hot kernel ->
    mangled name) and the runs' own symbols say which launches share it."""
    runs, plan = counters.runs, counters.plan
    target, mask, too_few = _covered_hot_kernel(runs, hot, settings.min_runs, notes, symbols)
    if target is None and too_few is not None:
        k, n = too_few
        why = (plan.why if plan and plan.why else "the program takes no {scale}: give it {scale}, or {n*scale} "
               "for a size n")
        notes.append(f"{n} counter run{'s' if n > 1 else ''} of {short_kernel_name(k)}: eOMP ranks counters by how "
                     f"they explain runtime across at least {settings.min_runs} runs that differ ({why})")
        return None
    if target is None:
        names = runs.launches["kernel"]
        target = str(names.value_counts().index[0])
        mask = (names == target).to_numpy()
        if hot:
            notes.append(f"counter runs do not cover a hot kernel; counters selected for "
                         f"{short_kernel_name(target)}")
    try:
        selection = select_counters(runs.metrics.loc[mask], runs.launches.loc[mask, "duration_ns"], settings,
                                    counters.descriptions, kernel=target)
        if plan and plan.source != "one run":
            selection.source = plan.describe()
        return selection
    except AnalysisError as e:
        notes.append(f"counter selection skipped: {e}")
        return None


def _covered_hot_kernel(runs: Profile, hot: list[str], min_runs: int, notes: list[str],
                        symbols: dict[str, str] | None
                        ) -> tuple[str | None, np.ndarray | None, tuple[str, int] | None]:
    """(the hottest kernel with enough counter runs, the mask of its runs; else None, None and the
    hottest kernel with some runs but too few, with their number, if any)."""
    names = runs.launches["kernel"]
    counts = names.value_counts()
    families = pd.Series(None, index=runs.launches.index, dtype=object)
    if symbols and MANGLED in runs.launches.columns:
        families = runs.launches[MANGLED].map(lambda m: template_symbol_prefix(m) if isinstance(m, str) else None)
    too_few: tuple[str, int] | None = None
    for k in hot:
        family = template_symbol_prefix((symbols or {}).get(k, ""))
        same = (families == family).to_numpy() if family else (names == k).to_numpy()
        if same.sum() >= min_runs:
            if same.sum() > counts.get(k, 0):
                notes.append(f"counter runs of {short_kernel_name(k)} include other instances of its template, "
                             "which the program launches at other problem sizes")
            return k, same, too_few
        if same.sum() and too_few is None:
            too_few = (k, int(same.sum()))
    return None, None, too_few


def _si(x: float | None, unit: str) -> str:
    if x is None:
        return "n/a"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _roofline_text(r: Roofline) -> str:
    def figure(res) -> str:
        text = f"{res.name.upper()} {res.rho:.0%}"
        if res.achieved is not None and res.peak:
            u = "B/s" if res.unit == "byte/s" else "FLOP/s"
            text += f" ({_si(res.achieved, u)} of {_si(res.peak, u)})"
        return text

    flops = [figure(x) for x in r.roofs if x.kind == "compute" and x.rho >= 0.005]
    bandwidth = [figure(x) for x in r.roofs if x.kind == "memory"]
    # compute roofs under 0.5 % of their peak are left out (their FLOPs still count in the arithmetic
    # intensity below); "no FLOPs" read as a contradiction of it. As long as that phrase, not to move the budget
    text = f"{r.summary}. Roofline: " + ", ".join(flops or ["FLOP ~0%"])
    if bandwidth:
        text += "; bandwidth " + ", ".join(bandwidth)
    if r.intensity and r.precision:
        parts = [f"{level.upper()} {ai:.3g}" + (f" ({r.ridge[level]:.3g})" if level in r.ridge else "")
                 for level, ai in r.intensity.items()]
        text += f"; arithmetic intensity in {r.precision.upper()} FLOP/B (ridge): " + ", ".join(parts)
    if r.throughputs:
        text += "; throughput, busiest sub-unit (SOL): " + ", ".join(f"{x.name.upper()} {x.rho:.0%}"
                                                                       for x in r.throughputs)
    if r.sol_compute_pct is not None and r.sol_memory_pct is not None:
        text += f"; ncu SOL compute {r.sol_compute_pct:.1f}%, memory {r.sol_memory_pct:.1f}%"
    return text


def _stall_text(s: StallLine) -> str:
    where = f"{posixpath.basename(s.file)}:{s.line}"
    text = (f"{where} `{s.source[:100]}`: {s.reason} {s.reason_share:.0%} of the line's stalled samples; "
            f"the line holds {s.line_share:.0%} of the kernel's samples ({s.samples}). "
            f"{_sentence(STALL_MEANING[s.reason.removeprefix('stall_')])}")
    if s.runner_up:
        text += f"; next: {s.runner_up} {s.runner_up_share:.0%}"
    if s.via:
        text += f"; includes inlined {', '.join(posixpath.basename(v) for v in s.via.split(', '))}"
    if s.library:
        text += " [library code, no user caller found]"
    return text


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _counter_text(c, compact: bool = False) -> str:
    """A counter's line: its weight, correlation and frequency, NVIDIA's description and (unless
    `compact`, for a prompt short of room) the counters that move with it."""
    desc = f"{c.description_by}: {c.description}" if c.description else "no description"
    group = ""
    if c.moves_with and not compact:
        group = (f" Stands for {c.moves_with} more counter{'s that move' if c.moves_with != 1 else ' that moves'} "
                 f"with it across the runs, e.g. {', '.join(c.moves_with_examples[:2])}.")
    role = (" (the work done, chosen first: the runs differ mainly in size, the other counters explain the "
            "rest)") if c.work else ""
    return (f"{c.metric}{role}: weight {c.weight:+.3f}, correlation with runtime {c.correlation:+.2f}, "
            f"chosen in {c.frequency:.0%} of the ensemble. {desc}.{group}")


def render_markdown(d: Diagnostics, max_bytes: int | None = None) -> str:
    """The evidence as compact Markdown for a prompt.

    With `max_bytes`, the least salient items give way until the text fits: first the evidence of
    the other profiled instances of a template beside its hottest (the same source, which the
    hottest one's evidence is of): their launch configurations, stall lines, then rooflines, each
    from the least hot up; then stall lines beyond each kernel's top
    one (from the least hot kernel up), then the counters' lists of the counters that move with them
    (each keeps its numbers and NVIDIA's description), then counters, then the remaining stall
    lines. Omitted ids are named in a note; diagnostics.json keeps them all.
    """
    shown = list(d.evidence)
    text = _render(d, shown, [])
    if max_bytes is None or len(text.encode()) <= max_bytes:
        return text
    order = _giving_way(d, shown)
    omitted: list[str] = []
    for e in order:
        if e is None:
            shown = [_compact(x) for x in shown]
            text = _render(d, shown, omitted)
            if len(text.encode()) <= max_bytes:
                break
            continue
        e = next((x for x in shown if x.id == e.id), None)
        if e is None or e.id in omitted:
            continue
        shown.remove(e)
        omitted.append(e.id)
        text = _render(d, shown, omitted)
        if len(text.encode()) <= max_bytes:
            break
    return text


def _giving_way(d: Diagnostics, shown: list[Evidence]) -> list[Evidence | None]:
    """The order in which render_markdown leaves items out (None: where the counters are made
    compact)."""
    firsts = {e.kernel: e.id for e in reversed(shown) if e.kind == "stall"}
    others = {k for f in d.functions for k in f.profiled[1:]}  # a template's instances beside its hottest
    return ([e for kind in ("launch", "stall", "roofline") for e in reversed(shown)
             if e.kind == kind and e.kernel in others]
            + [e for e in reversed(shown) if e.kind == "stall" and firsts[e.kernel] != e.id]
            + [None]  # the counters made compact here
            + [e for e in reversed(shown) if e.kind == "counter"]
            + [e for e in reversed(shown) if e.kind == "stall"])


def _compact(e: Evidence) -> Evidence:
    """A counter's evidence without the counters that move with it; anything else as it is."""
    if e.kind != "counter" or not e.counter:
        return e
    return e.model_copy(update={"text": _counter_text(SelectedCounter.model_validate(e.counter), compact=True)})


_SECTIONS = tuple((word, BY_WORD[word].section) for word in PROFILE_WORDS)


def _render(d: Diagnostics, shown: list[Evidence], omitted: list[str]) -> str:
    """The whole Markdown: GPU, hot kernels, one section per kind of evidence shown, notes."""
    out = _render_gpu(d.gpu) + _render_hot(d)
    for kind, heading in _SECTIONS:
        out += _render_section(d, kind, heading, [e for e in shown if e.kind == kind])
    out += _render_notes(d.notes, omitted)
    return "\n".join(out) + "\n"


def _render_gpu(gpu: GpuInfo) -> list[str]:
    """The title, naming the GPU, and the peaks the profiler measured on it."""
    title = gpu.name or "unknown GPU"
    if gpu.compute_capability:
        title += f", compute capability {gpu.compute_capability}"
    out = [f"# Diagnostics ({title})"]
    peaks = [f"DRAM {_si(gpu.dram_peak_bytes_per_s, 'B/s')}" if gpu.dram_peak_bytes_per_s else None,
             f"FP32 {_si(gpu.fp32_peak_flops, 'FLOP/s')}" if gpu.fp32_peak_flops else None,
             f"FP64 {_si(gpu.fp64_peak_flops, 'FLOP/s')}" if gpu.fp64_peak_flops else None,
             f"SM clock {_si(gpu.sm_clock_hz, 'Hz')}" if gpu.sm_clock_hz else None,
             f"{gpu.sm_count} SMs" if gpu.sm_count else None]
    peaks = [p for p in peaks if p]
    if peaks:
        out.append("Peaks measured by the profiler: " + ", ".join(peaks) + ".")
    return out


def _render_hot(d: Diagnostics) -> list[str]:
    """The hot kernels section: each kernel's time, launches and share."""
    hot = d.hot_kernels
    covered = sum(k.share for k in hot)
    out = ["", f"## Hot kernels ({len(hot)} of {len(d.kernels)} kernels, {covered:.1%} of kernel time; "
               f"alpha {d.alpha:g})"]
    several = {f.hot[0]: f for f in d.functions if len(f.hot) > 1}  # by its hottest hot instance
    grouped = {k for f in several.values() for k in f.hot}
    times = {k.kernel: k for k in hot}
    for k in hot:
        if k.kernel in several:
            out.append(_function_line(several[k.kernel], times))
        elif k.kernel not in grouped:
            out.append(f"- {short_kernel_name(k.kernel)}: {k.total_ns / 1000:.1f} us over {k.launches} "
                       f"launch{'es' if k.launches != 1 else ''} ({k.share:.1%})")
    return out


def _function_line(f: HotFunction, times: dict[str, KernelTime]) -> str:
    """One line for a source function with several hot instances (a template's): their time
    together, and which were profiled (the evidence is theirs; the others are the same source)."""
    hot = [times[k] for k in f.hot]
    line = (f"- {f.function}: {len(hot)} hot instances of this one source function, "
            f"{sum(k.total_ns for k in hot) / 1000:.1f} us over {sum(k.launches for k in hot)} launches "
            f"({sum(k.share for k in hot):.1%}")
    line += f"; all {f.instances} of its instances: {f.share:.1%})" if f.instances > len(hot) else ")"
    if not f.profiled:
        return line + "; none profiled (see the notes)"
    shown = ", ".join(f"{instance_label(k)} ({times[k].share:.1%})" for k in f.profiled)
    rest = len(hot) - len(f.profiled)
    line += f"; profiled, with the evidence below: {shown}"
    return line + (f"; not profiled: the other {rest}" if rest else "")


def _render_section(d: Diagnostics, kind: str, heading: str, items: list[Evidence]) -> list[str]:
    """One kind's section, one item a line; none when no item of the kind is shown. The counter
    heading says which runs of which kernel eOMP ranked, and their GPU when another than the profile's."""
    if not items:
        return []
    extra = ""
    if kind == "counter" and d.counter_selection:
        cs = d.counter_selection
        extra = f" over {cs.runs} runs of {short_kernel_name(cs.kernel or '')}"
        extra += f" on {cs.device}" if cs.device else ""
        extra += f" ({cs.source})" if cs.source else ""
    return ["", f"## {heading}{extra}", *(f"- {e.id} [{short_kernel_name(e.kernel or '')}] {e.text}" for e in items)]


def _render_notes(notes: list[str], omitted: list[str]) -> list[str]:
    """The notes section, ending with the ids left out for length; none when there is nothing to note."""
    notes = list(notes)
    if omitted:
        ids = sorted(omitted, key=evidence_order)
        notes.append(f"omitted here for length (kept in diagnostics.json): {', '.join(ids)}")
    if not notes:
        return []
    return ["", "## Notes", *(f"- {n}" for n in notes)]
