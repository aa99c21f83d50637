"""What the bot publishes of a run: one program's outcome (a constructor per result kind), the
combined outcome of several programs, and the edits it suggests; built here from the pipeline's
result (runner.flows.optimize.Optimization). The texts are bot/summary.py's."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bot import summary
from bot.policy import RepositoryConfigError
from runner.base.config import REPOSITORY_CONFIG, LoadedConfig
from runner.base.redaction import describe
from runner.toolchain.compat_record import CompatRecord

if TYPE_CHECKING:
    from runner.base.errors import OptimasError
    from runner.evaluation.ear import EARScores
    from runner.flows.optimize import Optimization

Kind = Literal["no change", "no candidate", "unproven", "evaluated", "loop", "not run", "failed"]


@dataclass(frozen=True)
class Edit:
    """One suggested edit of the pull request head's file (PR-root path, PR-head line numbers), with
    its comment text and a unified diff for where it cannot be a suggestion."""

    file: str
    start_line: int
    end_line: int
    new_text: str
    explanation: str
    diff: str = ""


@dataclass(frozen=True)
class ProgramOutcome:
    """What to publish of one program's run. `postable`: its edits are proven (validated and timed
    faster on a GPU) and go out as suggestions; anything else is said as text in the summary."""

    kind: Kind
    verdict: str
    headline: str
    postable: bool = False
    edits: tuple[Edit, ...] = ()
    run: str | None = None
    details: str = ""
    hot: tuple[str, ...] = ()
    hot_changed: tuple[str, ...] = ()  # the hot kernels defined in the pull request's changed files
    evidence: int | None = None
    reasons: tuple[str, ...] = ()  # why the model proposed no change
    validation: str | None = None
    per_config: tuple[str, ...] = ()
    ear: EARScores | None = None
    unproven_diff: str = ""  # the diff of a candidate no GPU proved, shown as text
    compat: tuple[CompatRecord, ...] = ()  # what app.legacy_cuda changed in the build
    model_ignored: tuple[str, ...] = ()  # the repository's model settings the operator's replaced
    changed: tuple[str, ...] = ()  # the changed files the program's build reads

    @classmethod
    def no_change(cls, run: str, hot: Sequence[str], evidence: int, reasons: Sequence[str]) -> ProgramOutcome:
        return cls("no change", "no change", summary.NO_CHANGE, run=run, hot=tuple(hot), evidence=evidence,
                   reasons=tuple(reasons))

    @classmethod
    def no_candidate(cls, run: str, details: str) -> ProgramOutcome:
        return cls("no candidate", "no candidate", summary.NO_CANDIDATE, run=run, details=details)

    @classmethod
    def unproven(cls, run: str, hot: Sequence[str], evidence: int, edits: Sequence[Edit],
                 ear: EARScores | None) -> ProgramOutcome:
        """A candidate that compiles, not validated or timed on this worker: its diff as text."""
        return cls("unproven", "not measured", summary.recorded_headline("not measured", None), edits=tuple(edits),
                   run=run, hot=tuple(hot), evidence=evidence, ear=ear,
                   unproven_diff="\n".join(e.diff for e in edits))

    @classmethod
    def evaluated(cls, run: str, hot: Sequence[str], evidence: int, edits: Sequence[Edit], verdict: str,
                  measured: str | None, validation: str | None, per_config: Sequence[str],
                  ear: EARScores | None) -> ProgramOutcome:
        """A candidate evaluated on the GPU: suggested only when validated bit for bit and timed faster."""
        return cls("evaluated", verdict, summary.recorded_headline(verdict, measured),
                   postable=verdict == "improvement" and measured is not None, edits=tuple(edits), run=run,
                   hot=tuple(hot), evidence=evidence, validation=validation, per_config=tuple(per_config), ear=ear)

    @classmethod
    def loop(cls, run: str, stopped_because: str, hot: Sequence[str], evidence: int, per_config: Sequence[str],
             validation: str | None, ear: EARScores | None, proven: tuple[float | None, int] | None = None,
             edits: Sequence[Edit] = ()) -> ProgramOutcome:
        """A closed loop; `proven` (its cumulative gain and the iterations kept) where it kept a candidate."""
        gain, kept = proven or (None, 0)
        return cls("loop", stopped_because, summary.loop_headline(stopped_because, gain, kept, proven is not None),
                   postable=proven is not None, edits=tuple(edits), run=run, hot=tuple(hot), evidence=evidence,
                   per_config=tuple(per_config), validation=validation, ear=ear)

    @classmethod
    def not_run(cls, names: Sequence[str], skipped: Sequence[tuple[str, str]], listed: bool = True) -> ProgramOutcome:
        """A pull request that changes none of the programs' files (`listed`: the config lists
        `names`; else its one program, `names[0]`, skipped for the one reason): nothing profiled."""
        return cls("not run", "not run", summary.not_run_headline(names, listed),
                   details=summary.not_run_details(skipped, listed))

    @classmethod
    def failed(cls, name: str, error: OptimasError) -> ProgramOutcome:
        """One program whose run stopped, among several that ran."""
        return cls("failed", "failed", summary.failed_headline(name), details=describe(error))


@dataclass(frozen=True)
class ProgramsOutcome:
    """What to publish of several programs run for one pull request: every proven edit (one that
    overlaps an earlier program's edit of a shared file is left out and named in `overlapping`),
    each program's outcome, and the programs not run with why."""

    verdict: str
    headline: str
    postable: bool
    edits: tuple[Edit, ...]
    run: str | None
    programs: tuple[tuple[str, ProgramOutcome], ...]
    skipped: tuple[tuple[str, str], ...] = ()
    overlapping: tuple[str, ...] = ()
    kind: Literal["programs"] = field(default="programs", init=False)

    @classmethod
    def of(cls, outcomes: Sequence[tuple[str, ProgramOutcome]], skipped: Sequence[tuple[str, str]]) -> ProgramsOutcome:
        edits: list[Edit] = []
        dropped = []
        for name, o in outcomes:
            for e in o.edits if o.postable else ():
                if _overlaps(e, edits):
                    dropped.append(summary.overlap_line(name, e.file, e.start_line, e.end_line))
                    continue
                edits.append(e)
        proven = [name for name, o in outcomes if o.postable]
        verdict = "improvement" if proven else "; ".join(f"{name}: {o.verdict}" for name, o in outcomes)
        return cls(verdict, summary.programs_headline([n for n, _ in outcomes], proven), bool(edits), tuple(edits),
                   next((o.run for _, o in outcomes if o.run), None), tuple(outcomes), tuple(skipped), tuple(dropped))


Outcome = ProgramOutcome | ProgramsOutcome


def _overlaps(e: Edit, kept: Sequence[Edit]) -> bool:
    return any(k.file == e.file and k.start_line <= e.end_line and e.start_line <= k.end_line for k in kept)


def recorded_outcome(result: Optimization, lc: LoadedConfig, root: Path) -> ProgramOutcome:
    """What to publish of one iteration from recorded profiles: its edits as suggestions, each
    with the evidence it cites and what was measured (or why nothing was)."""
    it, diag, run = result.iteration, result.diag, result.run
    proposed = it.proposed
    hot = [k.kernel for k in diag.hot_kernels]
    if proposed.status == "no-change":
        return ProgramOutcome.no_change(run.id, hot, len(diag.evidence), [str(w) for w in proposed.proposal.withheld])
    if proposed.status != "accepted":
        return ProgramOutcome.no_candidate(run.id, proposed.reason[-1500:])
    ev = it.result
    measured = ev.timing.result.summary() if ev is not None and ev.timing else None
    why = it.note if ev is None else ""  # why the candidate was not evaluated here
    workdir = lc.resolve(lc.config.app.workdir)  # as written: links in it are the code's by now (pr_path)
    texts = {e.id: e.text for e in diag.evidence}
    edits = []
    for e in proposed.proposal.edits:
        cited = "\n".join(f"{i}: {summary.clipped(texts[i], 160)}" for i in e.cites if i in texts) or \
            "no evidence cited"
        path = pr_path(workdir, e.file, root)
        edits.append(Edit(path, e.start_line, e.end_line, e.new_text,
                          summary.edit_explanation(e.cites, e.rationale, cited, measured, why),
                          edit_diff(path, result.original[e.file], e.start_line, e.end_line, e.new_text)))
    if ev is None:
        from runner.evaluation.ear import scores

        ear = scores(proposed.proposal, diag, proposed.evidence_ids, result.original)
        return ProgramOutcome.unproven(run.id, hot, len(diag.evidence), edits, ear)
    return ProgramOutcome.evaluated(run.id, hot, len(diag.evidence), edits, ev.verdict, measured,
                                    ev.validation.summary() if ev.validation else None,
                                    [f"{t.configuration}: {t.result.summary()}" for t in ev.timings], ev.ear)


def loop_outcome(result: Optimization, lc: LoadedConfig, root: Path) -> ProgramOutcome:
    """What to publish of a closed loop: each iteration's verdict, gain with its interval and
    directional consistency; the hot kernels and evidence of the first profile; the kept
    iteration's (else the last one's) validation, per-configuration timings and EAR; and the kept
    candidate as edits of the PR head's files."""
    loop, diag, ev = result.loop, result.diag, result.shown
    per_config = [summary.iteration_line(it.iteration, it.verdict, it.improvement, it.ci_low, it.ci_high,
                                         it.directional) for it in loop.iterations]
    shown = loop.best or (loop.iterations[-1].iteration if loop.iterations else None)
    if ev:
        per_config += [f"iteration {shown}, {t.configuration}: {t.result.summary()}" for t in ev.timings]
    common = dict(run=result.run.id, stopped_because=loop.stopped_because, hot=[k.kernel for k in diag.hot_kernels],
                  evidence=len(diag.evidence), per_config=per_config,
                  validation=ev.validation.summary() if ev and ev.validation else None, ear=ev.ear if ev else None)
    if result.final is None:
        return ProgramOutcome.loop(**common)
    workdir = lc.resolve(lc.config.app.workdir)  # as written: links in it are the code's by now (pr_path)
    proven = (loop.cumulative_improvement, loop.kept)
    headline = summary.loop_headline(loop.stopped_because, *proven, proven=True)
    return ProgramOutcome.loop(**common, proven=proven,
                               edits=loop_edits(result.original, result.final, workdir, root, headline))


def edit_diff(path: str, original: str, start: int, end: int, new_text: str) -> str:
    """A unified diff of one edit, for the review body when it lies outside the PR's diff."""
    from runner.proposal.guard import unified_diff

    lines = original.splitlines()
    new = "\n".join(lines[: start - 1] + new_text.splitlines() + lines[end:])
    return unified_diff({path: original}, {path: new + ("\n" if original.endswith("\n") else "")}).rstrip("\n")


def pr_path(workdir: Path, name: str, root: Path) -> str:
    """The pull request's path of a source the config names (`name`, in the app's `workdir`), from
    the names alone: the checkout was the code's to write by now, and a link it put in place of
    k.cu would, resolved, move k.cu's validated edit onto the file the link points at."""
    path = os.path.normpath(os.path.join(os.path.abspath(workdir), name))
    rel = os.path.relpath(path, os.path.normpath(os.path.abspath(root)))
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise RepositoryConfigError(f"{REPOSITORY_CONFIG}: {name}: outside the checkout; no suggestion is made for it")
    return rel


def loop_edits(original: Mapping[str, str], final: Mapping[str, str], workdir: Path, root: Path,
               explanation: str) -> list[Edit]:
    """Review edits (PR-root paths, PR-head line numbers) that turn the original sources into the
    loop's kept candidate, whatever iterations it took to get there."""
    from runner.proposal.parser import diff_edits

    out = []
    for name, text in original.items():
        if name not in final or final[name] == text:
            continue
        path = pr_path(workdir, name, root)
        for e in diff_edits(name, text, final[name]):
            out.append(Edit(path, e.start_line, e.end_line, e.new_text, explanation,
                            edit_diff(path, text, e.start_line, e.end_line, e.new_text)))
    return out
