"""One `optimas run`, written once for the CLI and the bot: from recorded profiles, evidence, a
proposal and, where the app can run here, its evaluation (re-profiled on the GPU the profiles came
from); without recorded profiles, the closed loop on this GPU. The typed result is what the CLI
prints and what the bot publishes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from runner.analysis.evidence import Diagnostics
from runner.analysis.stage import analyze, has_profiles, write_analysis
from runner.base.config import LoadedConfig
from runner.base.context import RunContext
from runner.base.errors import OptimasError
from runner.base.progress import progress_for
from runner.base.runstore import Run, create_run
from runner.base.workspace import read_context
from runner.evaluation.stage import EvaluationResult
from runner.flows.loop import Iteration, LoopResult, LoopRun, one_iteration, run_loop

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


class RecordedRun(NamedTuple):
    """A run folder whose recorded profiles are analysed already: the run and its evidence."""

    run: Run
    diag: Diagnostics


def optimize(lc: LoadedConfig, runs_dir: Path, inputs: dict[str, list[Path]] | RecordedRun | None = None,
             diagnostics: str | None = None, configuration: str | None = None, corpus: Path | None = None
             ) -> Optimization:
    """Recorded profiles (`inputs`: the profile files by role, or a RecordedRun, a run with its
    evidence): one iteration. Neither: the closed loop on this machine's GPU, in a new run under
    `runs_dir`. `diagnostics` and `configuration` override evaluation.diagnostics and
    app.profile_configuration; `corpus`: where the corpus records go (default corpus.jsonl beside
    the run); the run's context (RunContext) is made here and handed to every stage."""
    recorded = inputs if isinstance(inputs, RecordedRun) else None
    profiles = {} if isinstance(inputs, RecordedRun) else inputs or {}
    original = read_context(*lc.dirs, lc.config.app.sources)  # a candidate may edit a kernel in an included header too
    if recorded is None and has_profiles(profiles):
        diag = analyze(lc, profiles, original)  # before the run exists: bad input writes nothing
        run = create_run(runs_dir)
        write_analysis(run, lc, profiles, diag)
        recorded = RecordedRun(run, diag)
    if recorded is not None:
        run, diag = recorded
        it = one_iteration(RunContext(lc, run, diagnostics, configuration, corpus=corpus, sources=original), diag)
        # the kept candidate's run: a later candidate's is under <run>/candidates/ (llm.candidates)
        return Optimization("recorded", it.run or run, diag, original, iteration=it)
    run = create_run(runs_dir)
    progress(f"run {run.id} in {run.path}: closed loop, up to {lc.config.evaluation.max_iterations} iterations")
    try:
        done = run_loop(RunContext(lc, run, diagnostics, configuration, corpus=corpus, sources=original))
    except OptimasError as e:
        run.stage_failed("loop", str(e))
        raise
    return published(done, run, original)


def published(done: LoopRun, run: Run, original: dict[str, str]) -> Optimization:
    """What a closed loop publishes: the kept iteration's candidate (its sources restricted to the
    original's files) and evaluation, else the last iteration's evaluation. From what the loop
    holds in memory, never from the run folder's files: the program under test ran after its
    evaluation (the re-profile) and could have rewritten them."""
    loop = done.loop
    kept = next((it for it in loop.iterations if it.iteration == loop.best), None)
    shown = kept or (loop.iterations[-1] if loop.iterations else None)
    result = done.results.get(shown.iteration) if shown else None
    final = ({name: text for name, text in done.sources[kept.iteration].items() if name in original}
             if kept else None)
    return Optimization("loop", run, done.diag, original, loop=loop, final=final, shown=result)
