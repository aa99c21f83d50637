"""Several candidates per iteration (llm.candidates): ask for N answers to the same prompt, build
them in parallel, validate and time each, keep the best, record them all.

Candidate 1 lives in the iteration's run; candidate n > 1 in a run of its own under
`<run>/candidate-runs/` holding the same analysis. Answers whose diff repeats an earlier candidate's
are not evaluated again (a deterministic backend gives N equal answers). The iteration's run keeps
`evaluation/candidates.json`: each candidate's run, proposal status, model cost, evaluation
verdict, gain and wall time, and which one was kept; every evaluated candidate has its corpus
record, with its number and whether it was kept.
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from runner.analysis.evidence import Diagnostics
from runner.analysis.stage import write_analysis
from runner.base.context import RunContext
from runner.base.errors import OptimasError
from runner.base.progress import progress_for
from runner.base.runstore import Run, create_run
from runner.base.sandbox import sandbox_open
from runner.evaluation.corpus import update_record
from runner.evaluation.stage import EvaluationResult, evaluate
from runner.proposal.stage import ProposeResult, propose

progress = progress_for("flows")
log = logging.getLogger(__name__)


class CandidateOutcome(BaseModel):
    """One candidate of an iteration, as candidates.json records it."""

    candidate: int
    run_dir: str
    proposal: str  # accepted | failed | no-change | duplicate
    reason: str = ""
    model_seconds: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    attempts: int = 0
    verdict: str | None = None  # the evaluation's, when evaluated
    improvement: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    evaluation_seconds: float | None = None
    evaluation: str = ""  # the evaluation's one-line summary: what differed when invalid, the interval when timed
    same_as: int | None = None  # the earlier candidate whose diff this one repeats
    kept: bool = False


class Candidate(NamedTuple):
    """A proposed candidate with its run, and its evaluation once made."""

    number: int
    run: Run
    proposed: ProposeResult
    result: EvaluationResult | None = None


def candidate_run(ctx: RunContext, inputs: dict[str, list[Path]], diag: Diagnostics, n: int) -> Run:
    """Candidate n's run under `<run>/candidate-runs/`, with the iteration's analysis and build cache."""
    run, lc = ctx.run, ctx.lc
    new_run = create_run(run.path / "candidate-runs")
    new_run.manifest["build_cache"] = str(run.build_cache)
    new_run.manifest["candidate_of"] = {"run": str(run.path), "candidate": n}
    new_run.save()
    write_analysis(new_run, lc, inputs, diag)
    return new_run


def propose_candidates(ctx: RunContext, diag: Diagnostics, inputs: dict[str, list[Path]],
                       rejected: str | None = None) -> list[Candidate]:
    """llm.candidates answers to the iteration's prompt, proposed (asked, guarded, compiled) in
    parallel; one after another where the code's commands run in a sandbox (the App's worker). A
    later answer that cannot be had (a replay directory holding only the first) is a failed
    candidate; the first one's errors are the iteration's."""
    count = ctx.lc.config.llm.candidates
    if count == 1:
        return [Candidate(1, ctx.run, propose(ctx, diag, rejected=rejected))]
    runs = [ctx.run] + [candidate_run(ctx, inputs, diag, n) for n in range(2, count + 1)]
    progress(f"asking for {count} candidates" + (", one after another (sandboxed builds)" if sandbox_open()
                                                 else ", built in parallel"))

    def one(n: int) -> Candidate:
        try:
            return Candidate(n, runs[n - 1], propose(ctx.on(runs[n - 1]), diag, rejected=rejected, sample=n))
        except OptimasError as e:
            if n == 1:
                raise
            log.warning("candidate %d: %s", n, e)
            return Candidate(n, runs[n - 1], ProposeResult(status="failed", diagnostics=ctx.diagnostics or "",
                                                           reason=str(e)[:1000]))
    if sandbox_open():
        # The code's builds run in a sandbox, and what they leave in the job's folder is safe to read
        # only once the command has ended and been swept: a candidate's build running beside another
        # candidate's unsandboxed reads (its workspace copy, its sources) could plant links they follow.
        return [one(n) for n in range(1, count + 1)]
    # each candidate in its own copy of this thread's context (the stage's logging tags, the child
    # HOME, the process groups to stop): a pool's threads start with an empty one
    contexts = [contextvars.copy_context() for _ in range(count)]
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda n: contexts[n - 1].run(one, n), range(1, count + 1)))


def _rank(c: Candidate) -> tuple:
    """Best first: an improvement, then any valid timed result, then an invalid one (the loop asks
    again after it), then the rest; within each, the larger median gain."""
    r = c.result
    if r is None:
        return (4, 0.0, c.number)
    gain = r.timing.result.improvement if r.timing else 0.0
    tier = {"improvement": 0, "no-significant-gain": 1, "slower": 1, "invalid": 2}.get(r.verdict, 3)
    return (tier, -gain, c.number)


def evaluate_candidates(ctx: RunContext, candidates: list[Candidate],
                        diag: Diagnostics) -> tuple[Candidate, list[CandidateOutcome]]:
    """Evaluate each accepted candidate whose diff is new, one at a time (timing needs the GPU to
    itself); returns the best (see _rank) and every candidate's outcome, recorded in the first
    candidate's run as evaluation/candidates.json and in each evaluated one's corpus record
    (`ctx`: the iteration's, its corpus the one every candidate's record goes to)."""
    iteration, corpus = ctx.iteration, ctx.corpus_file
    evaluated: list[Candidate] = []
    outcomes: list[CandidateOutcome] = []
    seen: dict[str, int] = {}
    for c in candidates:
        p = c.proposed
        out = CandidateOutcome(candidate=c.number, run_dir=str(c.run.path), proposal=p.status, reason=p.reason[:500],
                               attempts=len(p.attempts), model_seconds=round(sum(a.seconds for a in p.attempts), 3),
                               prompt_tokens=_total(a.prompt_tokens for a in p.attempts),
                               completion_tokens=_total(a.completion_tokens for a in p.attempts),
                               cost_usd=_total(a.cost_usd for a in p.attempts))
        outcomes.append(out)
        if p.status != "accepted":
            continue
        if p.diff in seen:
            out.proposal, out.same_as = "duplicate", seen[p.diff]
            continue
        seen[p.diff] = c.number
        if len(candidates) > 1:
            progress(f"iteration {iteration}: evaluating candidate {c.number} of {len(candidates)}")
        t0 = time.monotonic()
        result = evaluate(ctx.on(c.run), diag, p)
        out.evaluation_seconds = round(time.monotonic() - t0, 1)
        out.verdict, out.evaluation = result.verdict, result.summary()[:500]
        if result.timing:
            r = result.timing.result
            out.improvement, out.ci_low, out.ci_high = r.improvement, r.ci_low, r.ci_high
        evaluated.append(c._replace(result=result))
    if not evaluated:
        raise ValueError("evaluate_candidates needs an accepted candidate")
    best = min(evaluated, key=_rank)
    for out in outcomes:
        out.kept = out.candidate == best.number
    if len(candidates) > 1:
        first = candidates[0].run
        first.write_json("evaluation", "candidates.json", [json.loads(o.model_dump_json()) for o in outcomes])
        for c in evaluated:
            update_record(corpus, c.run.id, iteration, {"candidate": c.number, "kept": c.number == best.number})
        progress(f"iteration {iteration}: keeping candidate {best.number} of {len(candidates)} "
                 f"({best.result.verdict})")
    return best, outcomes


def _total(values) -> float | int | None:
    """The sum of the known values; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def first_accepted(candidates: list[Candidate]) -> Candidate | None:
    """The first candidate with an accepted proposal, if any."""
    return next((c for c in candidates if c.proposed.status == "accepted"), None)
