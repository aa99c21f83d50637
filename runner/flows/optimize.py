"""One `optimas run`, written once for the CLI and the bot: from recorded profiles, evidence, a
proposal and, where the app can run here, its evaluation (re-profiled on the GPU the profiles came
from); without recorded profiles, the closed loop on this GPU. The typed result is what the CLI
prints and what the bot publishes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runner.analysis.evidence import Diagnostics
from runner.analysis.stage import analyze, has_profiles, write_analysis
from runner.base.config import LoadedConfig
from runner.base.context import RunContext
from runner.base.errors import OptimasError
from runner.base.progress import progress_for
from runner.base.runstore import Run, create_run
from runner.base.workspace import read_context, stored_name
from runner.evaluation.stage import EvaluationResult
from runner.flows.loop import Iteration, LoopResult, one_iteration, run_loop

progress = progress_for("flows")


@dataclass
class Optimization:
    """What one run did. `recorded`: `iteration` holds the proposal and, where the app could run
    here, its evaluation. `loop`: `loop` holds every iteration, `final` the kept candidate's sources
    (None: the original stays) and `shown` the kept (else the last) iteration's evaluation."""

    mode: Literal["recorded", "loop"]
    run: Run
    diag: Diagnostics  # the evidence of the first profile
    original: dict[str, str]  # the app's sources, by name relative to app.workdir
    iteration: Iteration | None = None
    loop: LoopResult | None = None
    final: dict[str, str] | None = None
    shown: EvaluationResult | None = None


def optimize(lc: LoadedConfig, runs_dir: Path, inputs: dict[str, list[Path]] | None = None,
             diagnostics: str | None = None, configuration: str | None = None,
             run: Run | None = None, diag: Diagnostics | None = None) -> Optimization:
    """Recorded profiles (`inputs`, or the evidence `diag` of an existing `run`): one iteration.
    Neither: the closed loop on this machine's GPU, in a new run under `runs_dir`. `diagnostics`
    and `configuration` override evaluation.diagnostics and app.profile_configuration; the run's
    context (RunContext) is made here and handed to every stage."""
    original = read_context(lc)  # a candidate may edit a kernel in an included header too
    if run is None and has_profiles(inputs or {}):
        diag = analyze(lc, inputs or {})  # before the run exists: bad input writes nothing
        run = create_run(runs_dir)
        write_analysis(run, lc, inputs or {}, diag)
    if run is not None and diag is not None:
        it = one_iteration(RunContext(lc, run, diagnostics, configuration), diag)
        # the kept candidate's run: a later candidate's is under <run>/candidates/ (llm.candidates)
        return Optimization("recorded", it.run or run, diag, original, iteration=it)
    run = create_run(runs_dir)
    progress(f"run {run.id} in {run.path}: closed loop, up to {lc.config.evaluation.max_iterations} iterations")
    try:
        loop = run_loop(RunContext(lc, run, diagnostics, configuration))
    except OptimasError as e:
        run.stage_failed("loop", str(e))
        raise
    first = Diagnostics.model_validate_json((run.path / "analysis" / "diagnostics.json").read_text())
    kept = next((it for it in loop.iterations if it.iteration == loop.best), None)
    shown = kept or (loop.iterations[-1] if loop.iterations else None)
    result = _evaluation_of(Path(shown.run_dir)) if shown else None
    final = _candidate_sources(Path(kept.run_dir), original) if kept else None
    return Optimization("loop", run, first, original, loop=loop, final=final, shown=result)


def _evaluation_of(run_dir: Path) -> EvaluationResult | None:
    """An iteration's evaluation result, if it was evaluated."""
    path = run_dir / "evaluation" / "result.json"
    return EvaluationResult.model_validate_json(path.read_text()) if path.is_file() else None


def _candidate_sources(run_dir: Path, original: dict[str, str]) -> dict[str, str]:
    """The sources of the candidate an iteration's run accepted."""
    kept = json.loads((run_dir / "candidates" / "result.json").read_text()).get("candidate_dir")
    if not kept:
        raise OptimasError(f"{run_dir}: the kept iteration has no candidate folder")
    src = run_dir / kept / "src"
    return {name: (src / stored_name(name)).read_text(encoding="utf-8") for name in original
            if (src / stored_name(name)).exists()}
