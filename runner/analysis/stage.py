"""Stages wired together over a run directory (the CLI, the RQ job and the Action all call these).

Each stage first computes everything in memory and only then writes into the run directory, so
bad input stops a run before anything is written.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from runner.analysis.counters import load_metric_dictionary
from runner.analysis.evidence import CounterRuns, Diagnostics, diagnose, render_markdown
from runner.base.config import PROFILE_ROLES, LoadedConfig
from runner.base.errors import AnalysisError, OptimasError
from runner.base.progress import in_stage, progress_for
from runner.base.runstore import Run, atomic_write_text, read_record
from runner.base.workspace import RECORD_LIMIT, read_context
from runner.profiles.counter_plan import read_plan
from runner.profiles.model import Profile, merge
from runner.profiles.readers import read_any, read_profiles, read_timing
from runner.scan.cuda_source import defined_kernels
from runner.tracing.trace import ResultsVariation

progress = progress_for("analysis")
# What a run records of its inputs: the profiles, and the profiling build's source roots.
RECORDED_ROLES = (*PROFILE_ROLES, "source_roots")
log = logging.getLogger(__name__)

def _size(p: Path) -> str:
    n = p.stat().st_size
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB"


def apply_source_map(profile: Profile, source_map: dict[str, str], roots: dict[str, str] | None = None) -> None:
    """Rename source files recorded on the profiling machine to the paths given in the config
    (`source_map`, whole names), and a profile built in a copy of the workspace to the workspace's
    paths (`roots`: the copy's folder -> the workspace's, see read_source_roots)."""
    if (not source_map and not roots) or profile.lines.empty:
        return
    prefixes = sorted((roots or {}).items(), key=lambda kv: -len(kv[0]))

    def rename(f: str) -> str:
        for copy, space in prefixes:
            if f == copy or f.startswith(copy.rstrip("/") + "/"):
                f = space + f[len(copy):]
                break
        return source_map.get(f, f)

    for col in ("file", "caller_file"):
        profile.lines[col] = profile.lines[col].map(lambda f: rename(f) if isinstance(f, str) else f)


def read_source_roots(paths: list[Path]) -> dict[str, str]:
    """The profiling build's copy folders and the workspace each stands for (the profiling agent's
    profile/source-roots.json); a missing or unreadable file is an AnalysisError naming it."""
    roots: dict[str, str] = {}
    for path in paths:
        try:
            data = json.loads(read_record(path, RECORD_LIMIT, "the profiling build's source roots"))
        except (OSError, ValueError) as e:
            raise AnalysisError(f"{path}: cannot read the profiling build's source roots ({e})") from None
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise AnalysisError(f"{path}: expected a JSON object of folder -> folder")
        roots.update(data)
    return roots


@in_stage("analysis")
def analyze(lc: LoadedConfig, inputs: dict[str, list[Path]], code: dict[str, str] | None = None) -> Diagnostics:
    """Read the profiles and run the Analysis Agent (writes nothing). `code`: the app's sources
    where the caller read them already (the run's context, RunContext.code); None: read here."""
    analysis = lc.config.analysis
    for role in ("report", "raw", "details", "source"):
        for p in inputs.get(role, []):
            progress(f"reading {role} {p} ({_size(p) if p.exists() else 'missing'})")
    profile = read_profiles(reports=inputs.get("report", []), raw=inputs.get("raw", []),
                            details=inputs.get("details", []), source=inputs.get("source", []),
                            library_paths=analysis.library_paths)
    apply_source_map(profile, lc.config.app.source_map, read_source_roots(inputs.get("source_roots", [])))
    plans = [read_plan(p) for p in inputs.get("counter_plan", [])]
    plan = plans[-1] if plans else None
    counter_files = list(inputs.get("counters", []))
    earlier = inputs.get("earlier_counters", [])
    if plan and plan.source == "one run" and earlier:
        # one run of this code: the closed loop's earlier versions of the kernel are the others
        counter_files = [*earlier, *counter_files]
        plan = plan.model_copy(update={"source": "code versions", "runs": len(counter_files)})
    counter_runs = None
    if counter_files:
        progress(f"reading {len(counter_files)} counter-run export(s)")
        counter_runs = merge([read_any(p, analysis.library_paths) for p in counter_files])
    dictionary = load_metric_dictionary(lc.resolve(analysis.counters.metric_dictionary)
                                        if analysis.counters.metric_dictionary else None)
    timing = None
    if inputs.get("timing"):
        progress(f"reading {len(inputs['timing'])} timing export(s)")
        timing = read_timing(inputs["timing"]).launches
    progress(f"analysing {len(profile.launches)} launches of {len(profile.kernels())} kernels")
    # both spellings: diagnose names the timing's kernels as the profile does where it can
    launched = sorted(set(profile.kernels()) | (set(timing["kernel"]) if timing is not None else set()))
    counters = CounterRuns(counter_runs, dictionary, plan) if counter_runs is not None else None
    app = lc.config.app
    editable = _defined(launched, lambda: code if code is not None else read_context(*lc.dirs, app.sources)
                        ) if app.sources else []
    diag = diagnose(profile, analysis, counters, timing=timing, only=app.kernels, editable=editable)
    for p in inputs.get("gpu_results", []):
        diag.results_variation = read_results_variation(p)
        if diag.results_variation.varies and diag.results_variation.rounding_ulps is None:
            diag.notes.append(f"the original's GPU results differ between two runs beyond rounding "
                              f"({diag.results_variation.why}): bit-for-bit validation cannot pass; declare a "
                              "tolerance (app.gpu_results), pin its seeds (app.pin_seeds) or give it one, or check "
                              "it by app.stdout")
    return diag


def with_code_versions(after: dict[str, list[Path]], before: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """The re-profiled candidate's inputs, carrying the earlier code versions' single counter runs
    (`earlier_counters`): where no run sweeps sizes or launch configurations, eOMP takes the
    closed loop's successive versions of the kernel as its runs."""
    def single(inputs: dict[str, list[Path]]) -> bool:
        plans = [read_plan(p) for p in inputs.get("counter_plan", [])]
        return bool(plans) and plans[-1].source == "one run" and len(inputs.get("counters", [])) == 1
    if not (single(after) and single(before)):
        return after
    return {**after, "earlier_counters": [*before.get("earlier_counters", []), *before["counters"]]}


def read_results_variation(path: Path) -> ResultsVariation:
    """The profiling agent's comparison of two runs of the original (gpu_results.json)."""
    try:
        return ResultsVariation.model_validate_json(read_record(path, RECORD_LIMIT, "the original's GPU results"))
    except (OSError, ValueError) as e:
        raise OptimasError(f"{path}: not a comparison of the original's GPU results as the profiling agent "
                           f"writes it ({e})") from None


def _defined(kernels: list[str], read: Callable[[], dict[str, str]]) -> list[str]:
    """The kernels the app's sources (`read` gives their texts) define; none when they cannot be
    read (an analysis of recorded profiles alone: the proposal stage says what is missing)."""
    try:
        return defined_kernels(kernels, read())
    except OptimasError as e:
        log.info("the kernels the sources define are not known: %s", e)
        return []


def write_analysis(run: Run, lc: LoadedConfig, inputs: dict[str, list[Path]], diag: Diagnostics) -> tuple[Path, Path]:
    """Record the config the run used (a copy, its path, hash and app), the device its evidence is
    of and the inputs, and write analysis/diagnostics.{json,md} into the run."""
    atomic_write_text(run.path / "config.yml", lc.path.read_text(encoding="utf-8"))
    run.manifest["config"] = {"path": str(lc.path), "sha256": lc.sha256, "app": lc.config.app.name}
    run.manifest["device"] = {"name": diag.gpu.name, "compute_capability": diag.gpu.compute_capability}
    for role in RECORDED_ROLES:
        if inputs.get(role):
            run.add_inputs(inputs[role], role)
    json_path = run.write_text("analysis", "diagnostics.json", diag.model_dump_json(indent=2) + "\n")
    md_path = run.write_text("analysis", "diagnostics.md",
                             render_markdown(diag, lc.config.analysis.max_prompt_bytes))
    run.stage_done("analysis", [json_path, md_path], evidence=len(diag.evidence),
                   hot_kernels=[k.kernel for k in diag.hot_kernels])
    return json_path, md_path


def profile_inputs(lc: LoadedConfig, overrides: dict[str, list[Path] | None] | None = None) -> dict[str, list[Path]]:
    """Profiles by role: the given overrides (command-line files) if any, else the config's `profiles`."""
    if overrides and any(v for v in overrides.values()):
        return {k: list(overrides.get(k) or []) for k in PROFILE_ROLES}
    prof = lc.config.profiles
    by_role = {"report": prof.reports, "timing": prof.timing, "raw": prof.raw, "details": prof.details,
               "source": prof.source, "counters": prof.counters}
    return {k: [lc.resolve(p) for p in v] for k, v in by_role.items()}


def recorded_inputs(run: Run) -> dict[str, list[Path]]:
    """The profiles a run's evidence was made from, by role, as its manifest records them."""
    by_role: dict[str, list[Path]] = {k: [] for k in RECORDED_ROLES}
    for entry in run.manifest.get("inputs", []):
        if entry.get("role") in by_role:
            by_role[entry["role"]].append(Path(entry["path"]))
    return by_role


def has_profiles(inputs: dict[str, list[Path]]) -> bool:
    """Whether the inputs hold a profile to analyse (timing and counter runs alone are not enough)."""
    return any(inputs.get(k) for k in ("report", "raw", "details"))
