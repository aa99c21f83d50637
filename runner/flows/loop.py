"""The closed loop: profile -> analyze -> propose -> evaluate, and while the candidate is a
significant improvement, re-profile the new code and go again (up to evaluation.max_iterations),
keeping the best. A candidate that fails validation leaves the baseline as it was; with
evaluation.retry_invalid the next iteration asks again, its prompt saying what differed and
showing the rejected diff (an answer that repeats it ends the loop). Every candidate that
validates is re-profiled with the same collection, which scores its directional consistency
(EAR 3) in its result.json and corpus record.

Iteration 1 lives in the run directory itself; iteration k > 1 is a run of its own under
`<run>/iterations/`, its app workspace a copy holding the previous candidate's sources.
`<run>/loop.json` summarizes every iteration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pandas as pd
from pydantic import BaseModel, Field

from runner.analysis.evidence import Diagnostics
from runner.analysis.roofline import aggregate_launches
from runner.analysis.stage import analyze, recorded_inputs, with_code_versions, write_analysis
from runner.base.config import LoadedConfig
from runner.base.context import RunContext
from runner.base.errors import OptimasError, ProfilingError
from runner.base.gpu import can_run_here, detect_gpu, require_tool
from runner.base.progress import progress_for
from runner.base.runstore import Run, create_run
from runner.evaluation.ear import DirectionCheck, Profiled, directional
from runner.evaluation.stage import EvaluationResult, add_direction, evaluate, record_no_change
from runner.flows.candidates import Candidate, evaluate_candidates, first_accepted, propose_candidates
from runner.profiles.model import Profile, merge
from runner.profiles.readers import read_any, read_profiles
from runner.profiling.agent import ProfilingAgent
from runner.proposal.stage import ProposeResult
from runner.toolchain.builder import copy_workspace
from runner.tracing.trace import ResultsVariation

progress = progress_for("flows")

class IterationSummary(BaseModel):
    iteration: int
    run_dir: str
    verdict: str
    improvement: float | None = None  # over this iteration's baseline (the previous best)
    ci_low: float | None = None
    ci_high: float | None = None
    directional: float | None = None  # filled in once the candidate has been re-profiled
    checks: list[DirectionCheck] = Field(default_factory=list)
    reprofile_error: str | None = None


class LoopResult(BaseModel):
    iterations: list[IterationSummary]
    best: int | None  # iteration whose candidate is kept; None: the original stays
    cumulative_improvement: float | None  # product of the kept iterations' improvements
    stopped_because: str

    @property
    def kept(self) -> int:
        """How many iterations the kept code compounds (the improvements up to `best`; a rejected
        candidate between them changed no code)."""
        return sum(1 for it in self.iterations if it.verdict == "improvement" and it.iteration <= (self.best or 0))


def next_step(history: list[IterationSummary], max_iterations: int) -> str | None:
    """Why the loop stops now, or None to go on."""
    last = history[-1]
    if last.verdict != "improvement":
        return f"iteration {last.iteration}: {last.verdict.replace('-', ' ')}"
    if len(history) >= max_iterations:
        return f"reached evaluation.max_iterations ({max_iterations})"
    return None


def cumulative(history: list[IterationSummary]) -> tuple[int | None, float | None]:
    """The last improving iteration and the compound gain of the improving chain before it. An
    invalid candidate changes no baseline: the chain goes on past one that was asked again."""
    total, best = 1.0, None
    for it in history:
        if it.verdict == "invalid":
            continue
        if it.verdict != "improvement" or it.improvement is None:
            break
        total *= 1.0 + it.improvement
        best = it.iteration
    return best, (total - 1.0) if best else None


MAX_REJECTED_DIFF = 4000  # characters of a rejected candidate's diff shown to the model


ROUNDING_NOTE = ("Every value it got wrong is within {ulps} ulps of the original's, as when the same computation "
                 "is rounded otherwise. Bit-for-bit results need the same floating-point operations in the same "
                 "order; nvcc fuses a multiply and an add into one FMA (one rounding) where it can, so moving, "
                 "regrouping or reordering arithmetic can change which operations are fused.\n")


def rejection_note(result: EvaluationResult, proposed: ProposeResult) -> str:
    """What the next prompt says of a candidate that failed validation: what differed (and, when
    only rounding differed, why that happens), and its diff."""
    what = result.validation.summary() if result.validation else result.reason
    ulps = result.validation.rounding_only() if result.validation else None
    diff = proposed.diff if len(proposed.diff) <= MAX_REJECTED_DIFF else (
        proposed.diff[:MAX_REJECTED_DIFF] + "\n... (the rest of the diff left out)")
    return (f"It compiled and ran, but its results are not the original program's: {what}.\n"
            + (ROUNDING_NOTE.format(ulps=ulps) if ulps else "")
            + f"Its change was:\n```diff\n{diff.rstrip()}\n```")


def candidate_was_wrong(result: EvaluationResult) -> bool:
    """Invalid because of the candidate: another answer could pass (not when the original program
    itself failed a check, which no candidate can fix)."""
    v = result.validation
    return result.verdict == "invalid" and v is not None and all(c.status != "baseline-failed" for c in v.cases)


def iteration_run(run: Run, where: Path) -> Run:
    """A new iteration's run under `where`, sharing `run`'s build cache (a source tree built
    before is not built again)."""
    new_run = create_run(where)
    new_run.manifest["build_cache"] = str(run.build_cache)
    new_run.save()
    return new_run


def retry_run(run: Run, lc: LoadedConfig, inputs: dict[str, list[Path]], diag: Diagnostics) -> Run:
    """A new iteration's run on the same code and evidence (after an invalid candidate)."""
    nxt = iteration_run(run, run.path / "iterations")
    write_analysis(nxt, lc, inputs, diag)
    return nxt


def with_sources(lc: LoadedConfig, files: dict[str, str], where: Path) -> LoadedConfig:
    """A config whose workspace is a copy holding `files` (the candidate becomes the baseline)."""
    copy = where / "workspace"
    new_workdir = copy_workspace(lc, copy, files)
    return lc.with_app(workdir=str(new_workdir), workspace=str(copy))


def _profile_of(inputs: dict[str, list[Path]]) -> tuple[Profile, dict[str, pd.Series]]:
    """The targeted profile's lines and, per kernel, the metrics of the counter run at scale 1
    (the app's own size) where it covered the kernel, else of the targeted report."""
    prof = read_profiles(reports=inputs.get("report", []))
    metrics = {}
    scale1 = [p for p in inputs.get("counters", []) if p.stem == "scale_1"]
    for source in [prof] + ([merge([read_any(p) for p in scale1])] if scale1 else []):  # the counter run wins
        for k in source.kernels():
            rows = source.kernel_metrics(k)
            if len(rows):
                metrics[k] = aggregate_launches(rows, source.kernel_durations(k))
    return prof, metrics


class LoopRun(NamedTuple):
    """A closed loop as run, in memory: its summary, the first profile's evidence, and per iteration
    its evaluation (with the direction checks of its re-profile) and the candidate's sources. What
    is published comes from here, never read back from the run folder: the program under test runs
    again after its evaluation (the re-profile) and can write anything there."""

    loop: LoopResult
    diag: Diagnostics
    results: dict[int, EvaluationResult]
    sources: dict[int, dict[str, str]]


def run_loop(ctx: RunContext) -> LoopRun:
    """The whole loop on this machine's GPU (see the module docstring), in `ctx.run`."""
    run, lc = ctx.run, ctx.lc
    max_it = lc.config.evaluation.max_iterations
    top = ctx.on(run)  # every iteration's corpus record goes beside the top-level run
    history: list[IterationSummary] = []
    it_ctx = top
    inputs = ProfilingAgent(it_ctx).collect()
    diag = analyze(it_ctx.lc, inputs, it_ctx.sources)  # the sources as read before the program ran
    write_analysis(run, lc, inputs, diag)
    first = diag
    results: dict[int, EvaluationResult] = {}
    sources: dict[int, dict[str, str]] = {}
    stop = ""
    rejected: str | None = None  # why the previous iteration's candidate failed validation
    rejected_diff = ""
    for k in range(1, max_it + 1):
        it_ctx = it_ctx.on(it_ctx.run, iteration=k)
        progress(f"iteration {k}: proposing" + (" again, with why the last candidate was rejected" if rejected else ""))
        candidates = propose_candidates(it_ctx, diag, inputs, rejected)
        if rejected:  # a rule-based backend answers the same again
            candidates = [c for c in candidates if c.proposed.diff != rejected_diff or c.proposed.status != "accepted"]
        if first_accepted(candidates) is None:
            history.append(IterationSummary(iteration=k, run_dir=str(it_ctx.run.path), verdict="no-candidate"))
            stop = _no_candidate(it_ctx, diag, candidates, history, rejected)
            break
        best, _ = evaluate_candidates(it_ctx, candidates, diag)
        proposed, result = best.proposed, best.result
        it_ctx = it_ctx.on(best.run)
        summary = IterationSummary(iteration=k, run_dir=str(best.run.path), verdict=result.verdict)
        if result.timing:
            r = result.timing.result
            summary.improvement, summary.ci_low, summary.ci_high = r.improvement, r.ci_low, r.ci_high
        history.append(summary)
        results[k], sources[k] = result, dict(proposed.files)
        stop = next_step(history, max_it) or ""
        progress(f"iteration {k}: {result.summary()}")
        if candidate_was_wrong(result) and k < max_it and lc.config.evaluation.retry_invalid:
            # the baseline stays; the next iteration asks again, saying what was wrong
            rejected, rejected_diff, stop = rejection_note(result, proposed), proposed.diff, ""
            it_ctx = it_ctx.on(retry_run(run, it_ctx.lc, inputs, diag))
            continue
        if not (result.validation and result.validation.passed):
            break  # nothing to re-profile: the candidate did not build or is wrong
        rejected = None
        # Re-profile the candidate: its directions (EAR 3), and the next iteration's evidence.
        try:
            after = reprofile_candidate(it_ctx, diag, proposed, inputs, iterations=run.path / "iterations",
                                        evaluated=result)
        except OptimasError as e:
            summary.reprofile_error = str(e)[:500]
            stop = stop or f"iteration {k}: re-profiling the candidate failed ({str(e)[:200]})"
            break
        summary.checks, summary.directional = after.result.ear.checks, after.result.ear.directional
        results[k] = after.result
        if stop:
            break
        it_ctx, inputs, diag = (it_ctx.on(after.run, lc=after.config, sources=proposed.files), after.inputs,
                                after.diag)
    best_it, total = cumulative(history)
    loop = LoopResult(iterations=history, best=best_it, cumulative_improvement=total, stopped_because=stop)
    run.write_json("evaluation", "loop.json", json.loads(loop.model_dump_json()))
    return LoopRun(loop, first, results, sources)


def _no_candidate(ctx: RunContext, diag: Diagnostics, candidates: list[Candidate],
                  history: list[IterationSummary], rejected: str | None) -> str:
    """Why the loop stops at an iteration with no accepted candidate; an answer of no change is
    recorded in the corpus and the iteration's verdict says so."""
    k = ctx.iteration
    unchanged = next((c for c in candidates if c.proposed.status == "no-change"), None)
    if unchanged is not None:
        record_no_change(ctx.on(unchanged.run), diag, unchanged.proposed)
        history[-1].verdict = "no-change"
        return f"iteration {k}: {unchanged.proposed.reason[:300]}"
    why = candidates[0].proposed.reason[:200] if candidates else ""
    return (f"iteration {k}: no usable candidate ({why})" if why or not rejected else
            f"iteration {k}: the answer repeats the rejected candidate")


class Reprofiled(NamedTuple):
    """A candidate profiled as the new baseline: its config, run, profiles and evidence, and the
    candidate's evaluation with its direction checks added (`result.ear`)."""
    config: LoadedConfig
    run: Run
    inputs: dict[str, list[Path]]
    diag: Diagnostics
    result: EvaluationResult


def reprofile_candidate(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult,
                        before_inputs: dict[str, list[Path]], iterations: Path | None = None,
                        evaluated: EvaluationResult | None = None) -> Reprofiled:
    """Profile `proposed`'s sources with the same collection, in a new run under `iterations`
    (default `<ctx.run>/iterations/`), and score its directional consistency against `before_inputs`;
    the score is added to the evaluated `ctx.run`'s result.json and corpus record. `evaluated`: the
    candidate's evaluation, whose validation may already say that its GPU results repeat."""
    run, lc = ctx.run, ctx.lc
    progress(f"iteration {ctx.iteration}: re-profiling the candidate")
    new_run = iteration_run(run, iterations or run.path / "iterations")
    new_lc = with_sources(lc, proposed.files, new_run.path)
    known = None
    if evaluated is not None and evaluated.validation is not None and evaluated.validation.results_repeat():
        # validation ran this candidate twice on every configuration and got the same results bit for bit
        known = (ResultsVariation(varies=False), "the evaluation's two runs of this candidate")
    after = with_code_versions(ProfilingAgent(ctx.on(new_run, lc=new_lc), known).collect(), before_inputs)
    after_diag = analyze(new_lc, after)
    write_analysis(new_run, new_lc, after, after_diag)
    cited = {c for e in proposed.proposal.edits for c in e.cites}
    evidence = [e for e in diag.evidence if e.id in cited]
    before, bm = _profile_of(before_inputs)
    after_prof, am = _profile_of(after)
    checks = directional(evidence, proposed.proposal, Profiled(before.lines, bm),
                         Profiled(after_prof.lines, am, after_diag), lc.config.evaluation.direction_min_change)
    return Reprofiled(new_lc, new_run, after, after_diag, add_direction(ctx, checks))


class Iteration(NamedTuple):
    """One iteration from recorded profiles: the proposal and, where this machine could run the
    app, its evaluation; `note` says what was left out and why. With several candidates
    (llm.candidates), the kept one's, and `run` is its run (another than the iteration's when a
    later candidate won)."""
    proposed: ProposeResult
    result: EvaluationResult | None
    note: str
    run: Run | None = None


def evaluate_recorded(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult) -> tuple[EvaluationResult, str]:
    """Evaluate a candidate made from recorded profiles, then, where ncu and the GPU the profiles
    came from are here, re-profile it to score its directions (EAR 3). Returns the result and why
    directions were not scored ("" when they were)."""
    result = evaluate(ctx, diag, proposed)
    return score_directions(ctx, diag, proposed, result)


def score_directions(ctx: RunContext, diag: Diagnostics, proposed: ProposeResult,
                     result: EvaluationResult) -> tuple[EvaluationResult, str]:
    """Re-profile an evaluated candidate made from recorded profiles, where ncu and the GPU the
    profiles came from are here, to score its directions (EAR 3). `ctx.corpus_file` is the
    iteration's (a later candidate's run lives below the iteration's run, not beside it)."""
    if not (result.validation and result.validation.passed):
        return result, "the candidate did not validate"
    lc = ctx.lc
    try:
        require_tool("ncu", lc.config.profiling.ncu)
        gpu = detect_gpu(lc.config.profiling.nvidia_smi)
    except ProfilingError as e:
        return result, str(e)
    if diag.gpu.name and gpu.name != diag.gpu.name:
        return result, f"the profiles were recorded on {diag.gpu.name}, this GPU is {gpu.name}"
    after = reprofile_candidate(ctx, diag, proposed, recorded_inputs(ctx.run), evaluated=result)
    scored = after.result.ear.directional is not None
    return after.result, "" if scored else "no cited quantity could be measured after"


def one_iteration(ctx: RunContext, diag: Diagnostics) -> Iteration:
    """Propose from a run's recorded evidence (llm.candidates answers) and evaluate where the app
    can run here, keeping the best candidate."""
    ctx = ctx.on(ctx.run)  # every candidate's corpus record beside the iteration's run
    candidates = propose_candidates(ctx, diag, recorded_inputs(ctx.run))
    accepted = first_accepted(candidates)
    if accepted is None:
        unchanged = next((c for c in candidates if c.proposed.status == "no-change"), None)
        if unchanged is not None:
            record_no_change(ctx.on(unchanged.run), diag, unchanged.proposed)
            return Iteration(unchanged.proposed, None, unchanged.proposed.reason, unchanged.run)
        first = candidates[0]
        return Iteration(first.proposed, None, f"no usable candidate: {first.proposed.reason}", first.run)
    ok, why = can_run_here(ctx.lc)
    if not ok:
        return Iteration(accepted.proposed, None, why, accepted.run)
    best, _ = evaluate_candidates(ctx, candidates, diag)
    result, why = score_directions(ctx.on(best.run), diag, best.proposed, best.result)
    return Iteration(best.proposed, result, f"directional consistency not scored: {why}" if why else "", best.run)
