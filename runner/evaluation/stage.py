"""The evaluation stage: build baseline and candidate, validate, time, score EAR, give a verdict, and
append the outcome to the corpus. Results go to the run's evaluation/ folder."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from runner.analysis.evidence import Diagnostics
from runner.base.config import LoadedConfig
from runner.base.context import RunContext
from runner.base.progress import in_stage, progress_for
from runner.base.runstore import Run, read_record
from runner.base.workspace import RECORD_LIMIT, read_sources
from runner.evaluation.corpus import append_record, update_record
from runner.evaluation.ear import DirectionCheck, EARScores, direction_score, scores
from runner.evaluation.measure import EvaluationError, Timing, Validation, time_interleaved, validate
from runner.evaluation.statistics import Improvement
from runner.proposal.stage import ProposeResult
from runner.toolchain.builder import Builder

progress = progress_for("evaluation")

class EvaluationResult(BaseModel):
    verdict: Literal["improvement", "no-significant-gain", "slower", "invalid", "build-failed"]
    reason: str = ""
    validation: Validation | None = None
    timing: Timing | None = None  # on the profiled configuration: the verdict's basis
    timings: list[Timing] = Field(default_factory=list)  # every timed configuration, the profiled one first
    ear: EARScores | None = None
    seconds: dict[str, float] = Field(default_factory=dict)  # wall time per step

    def summary(self) -> str:
        parts = [self.verdict]
        if self.timing:
            parts.append(f"{self.timing.metric} {self.timing.result.summary()}")
        for t in self.timings[1:]:
            parts.append(f"{t.configuration}: {t.result.improvement:+.1%} ({t.result.ci_low:+.1%} to "
                         f"{t.result.ci_high:+.1%})")
        if self.validation:
            parts.append("validation " + self.validation.summary())
        if self.reason:
            parts.append(self.reason)
        return "; ".join(parts)


def timing_verdict(r: Improvement, min_improvement: float) -> tuple[str, str]:
    """The verdict on a timed comparison, and why where the numbers alone do not say it: a gain
    whose interval excludes zero is an improvement only from `min_improvement` up."""
    if r.faster and r.improvement < min_improvement:
        return "no-significant-gain", (f"faster, but by less than evaluation.min_improvement "
                                       f"({r.improvement:+.2%} < {min_improvement * 100:g}%)")
    return ("improvement" if r.faster else "slower" if r.significant else "no-significant-gain"), ""


@in_stage("evaluation")
def evaluate(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult) -> EvaluationResult:
    """Judge an accepted candidate against the original sources (see the module docstring); the
    result goes to `ctx.run`'s evaluation/ folder and a record to the corpus."""
    if proposed.status != "accepted" or proposed.proposal is None:
        raise EvaluationError("there is no accepted candidate to evaluate")
    lc, run = ctx.lc, ctx.run
    work = run.stage_dir("evaluation")
    _, workdir = lc.dirs
    # the texts read before the code ran, where the run has them (RunContext.sources)
    original = dict(ctx.sources) if ctx.sources is not None else read_sources(workdir, lc.config.app.sources)
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    exes, failed = build_binaries(Builder(lc, ctx.arch, ctx.build_cache), original, proposed.files, work)
    seconds["build"] = time.monotonic() - t0
    ear = scores(proposed.proposal, diag, proposed.evidence_ids, original, correct=None)
    if failed:
        result = EvaluationResult(verdict="build-failed", reason=failed, ear=ear, seconds=seconds)
        return _finish(ctx, diag, proposed, result)
    progress("validating on every configuration and seed")
    t0 = time.monotonic()
    validation = validate(lc, *exes[None], work / "outputs", per_configuration=exes)
    seconds["validate"] = time.monotonic() - t0
    ear = scores(proposed.proposal, diag, proposed.evidence_ids, original, correct=validation.passed)
    if not validation.passed:
        result = EvaluationResult(verdict="invalid", validation=validation, ear=ear, seconds=seconds,
                                  reason=validation.summary())
        return _finish(ctx, diag, proposed, result)
    ev = lc.config.evaluation
    count = (f"{ev.timed_runs} to {max(ev.timed_runs, ev.max_timed_runs)} runs each, until the interval is "
             f"within {ev.timing_precision:.0%}" if ev.timing_precision > 0 else f"{ev.timed_runs} runs each")
    progress(f"timing baseline and candidate, interleaved ({count})")
    t0 = time.monotonic()
    per_config = _time_configurations(lc, diag, exes)
    timing = per_config[0]
    seconds["time"] = time.monotonic() - t0
    r = timing.result
    verdict, reason = timing_verdict(r, lc.config.evaluation.min_improvement)
    result = EvaluationResult(verdict=verdict, reason=reason, validation=validation, timing=timing, timings=per_config,
                              ear=ear, seconds=seconds)
    return _finish(ctx, diag, proposed, result)


def build_binaries(builder: Builder, original: dict[str, str], candidate: dict[str, str], work: Path
                   ) -> tuple[dict[str | None, tuple[Path, Path]], str]:
    """The baseline's and the candidate's binaries (the proposal stage built them already: from the
    run's build cache), by configuration when app.build depends on it ({config}, compile-time
    sizes), else one pair (key None). The entry None is always the profiled configuration's pair.
    Returns them and why a build failed ("" when none did)."""
    app = builder.lc.config.app
    per = app.build_configuration() is not None
    bins = work / "bin"
    bins.mkdir(parents=True, exist_ok=True)
    exes: dict[str | None, tuple[Path, Path]] = {}
    for config_name in app.configurations if per else [None]:
        suffix = f"-{config_name}" if config_name else ""
        for side, files in (("baseline", original), ("candidate", candidate)):
            built = builder.compile(files, work / f"{side}{suffix}-build.log", exe=bins / f"{side}{suffix}",
                                    configuration=config_name)
            if not built.ok:
                return exes, f"the {side} does not build" + (f" for configuration {config_name}" if config_name else "")
        exes[config_name] = (bins / f"baseline{suffix}", bins / f"candidate{suffix}")
    if per:
        exes[None] = exes[app.build_configuration()]
    return exes, ""


def _time_configurations(lc: LoadedConfig, diag: Diagnostics,
                         exes: dict[str | None, tuple[Path, Path]]) -> list[Timing]:
    """Time baseline against candidate, interleaved, on the profiled configuration and (with
    evaluation.time_all_configurations) every other, the profiled one first."""
    ev = lc.config.evaluation
    app = lc.config.app
    primary = app.profile_configuration or app.configurations[0]
    others = [c for c in app.configurations if c != primary] if ev.time_all_configurations else []
    # each hot kernel with its symbol where known (the tracer spells template arguments unlike ncu)
    hot = dict.fromkeys((k.kernel for k in diag.hot_kernels), "")
    hot |= {k.kernel: k.mangled for k in diag.hot_kernels if k.mangled}
    # Validation has just run both binaries on every configuration: when timing runs the same
    # command, those runs are its warm-up (one process run, two uses).
    warm = app.time_run is None or app.time_run == app.run
    return [time_interleaved(lc, *exes.get(c, exes[None]), c, kernels=hot, warm=warm)
            for c in [primary, *others]]


def _finish(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult, result: EvaluationResult) -> EvaluationResult:
    path = ctx.run.write_json("evaluation", "result.json", json.loads(result.model_dump_json()))
    ctx.run.stage_done("evaluation", [path], verdict=result.verdict)
    append_record(ctx.corpus_file, make_record(ctx, diag, proposed, result))
    return result


def add_direction(ctx: RunContext, checks: list[DirectionCheck]) -> EvaluationResult:
    """Add a re-profile's direction checks (EAR 3) to an evaluated run's result.json and corpus
    record; returns the updated result (its `ear.directional` None when nothing could be judged)."""
    run = ctx.run
    path = run.path / "evaluation" / "result.json"
    result = EvaluationResult.model_validate_json(read_record(path, RECORD_LIMIT, "an evaluation's result"))
    if result.ear is None:
        raise EvaluationError(f"{path}: no EAR scores to add the direction checks to")
    score = direction_score(checks)
    result.ear = result.ear.model_copy(update={"checks": list(checks), "directional": score})
    run.write_json("evaluation", "result.json", json.loads(result.model_dump_json()))
    update_record(ctx.corpus_file, run.id, ctx.iteration, {"ear_directional": score})
    return result


def record_no_change(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult) -> dict[str, Any]:
    """Append the corpus record of an answer that proposes no change (verdict "no-change", the
    model's reasons under Ignored) and return it."""
    record = make_record(ctx, diag, proposed, None)
    append_record(ctx.corpus_file, record)
    return record


def make_record(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult,
                result: EvaluationResult | None) -> dict[str, Any]:
    """The corpus record of one evaluated candidate (the paper's schema, plus interval, EAR and ids);
    without a `result`, of an answer that proposed no change."""
    t = result.timing if result else None
    # The field groups are merged in the schema's order: a record's keys keep it on disk.
    return {
        **_provenance_fields(ctx.lc, ctx.run, diag, proposed),
        **_outcome_fields(proposed, result),
        **_runtime_fields(t),
        "diagnostics": proposed.diagnostics,
        "iteration": ctx.iteration,
        "verdict": result.verdict if result else "no-change",
        **_interval_fields(t),
        **_ear_fields(result.ear if result else None),
        "config_sha256": ctx.lc.sha256,
        "run_id": ctx.run.id,
    }


def _provenance_fields(lc: LoadedConfig, run: Run, diag: Diagnostics, proposed: ProposeResult) -> dict[str, Any]:
    """Where a record comes from: App, Prompt, LLM, HW and SW."""
    accepted = next((a for a in reversed(proposed.attempts) if a.outcome in ("accepted", "no-change")), None)
    tools = run.manifest.get("tools", {})
    return {
        "App": lc.config.app.name,
        "Prompt": proposed.diagnostics,
        "LLM": f"{accepted.backend}:{accepted.model}" if accepted else None,
        "HW": (run.manifest.get("device") or {}).get("name") or diag.gpu.name,
        "SW": f"nvcc {tools.get('nvcc')}, ncu {tools.get('ncu')}, optimas {tools.get('optimas')}",
    }


def _outcome_fields(proposed: ProposeResult, result: EvaluationResult | None) -> dict[str, Any]:
    """What became of the answer: Compile, Exec, Opt_Code, Applied, Ignored and Errors (Compile and
    Exec None without a `result`)."""
    p = proposed.proposal
    return {
        "Compile": result.verdict != "build-failed" if result else None,
        "Exec": bool(result.validation and result.validation.passed) if result else None,
        "Opt_Code": proposed.diff,
        "Applied": p.applied if p else [],
        "Ignored": [str(w) for w in p.withheld] if p else [],
        "Errors": [f"attempt {a.number}: {a.outcome}: {a.detail[:500]}" for a in proposed.attempts
                   if a.outcome not in ("accepted", "no-change")]
        + ([result.reason] if result and result.reason else []),
    }


def _runtime_fields(t: Timing | None) -> dict[str, Any]:
    """Base_RT, Opt_RT and RT_metric: the medians of the verdict's timing, and what they measure."""
    if t is None:
        return dict.fromkeys(("Base_RT", "Opt_RT", "RT_metric"))
    return {"Base_RT": t.result.baseline_median, "Opt_RT": t.result.candidate_median, "RT_metric": t.metric}


def _interval_fields(t: Timing | None) -> dict[str, Any]:
    """The verdict's timing's improvement, its interval and p-value."""
    if t is None:
        return dict.fromkeys(("improvement", "ci_low", "ci_high", "p_value"))
    r = t.result
    return {"improvement": r.improvement, "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value}


def _ear_fields(ear: EARScores | None) -> dict[str, Any]:
    """The EAR scores and the counts of applied and withheld changes."""
    if ear is None:
        return dict.fromkeys(("ear_coverage", "ear_localization", "ear_directional", "ear_hallucinations",
                              "ear_correct", "applied_count", "withheld_count"))
    return {
        "ear_coverage": ear.coverage,
        "ear_localization": ear.localization,
        "ear_directional": ear.directional,
        "ear_hallucinations": ear.hallucinations.count,
        "ear_correct": ear.correct,
        "applied_count": ear.applied,
        "withheld_count": ear.withheld,
    }
