"""Every text the bot writes of an outcome (bot/outcome.py): each result kind's headline, each
suggested edit's explanation, the lines of a closed loop's iterations, and the summary comment
(also the check run's summary). What the pull request or the model decides is shown as code."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bot.publish import code_block, code_span
from runner.evaluation.ear import ear_line

if TYPE_CHECKING:
    from bot.outcome import Outcome, ProgramOutcome, ProgramsOutcome
    from runner.toolchain.compat_record import CompatRecord

NO_CHANGE = "No change proposed: the model found no edit that would make the hot kernels faster."
NO_CANDIDATE = "No usable candidate: the answers could not be applied, or did not compile"
UNPROVEN = ("Optimas: a candidate that compiles and keeps the launch interface, not validated or timed on "
            "this worker; no suggestion is posted for it (its diff is below, as text)")

_UNPROVEN_CHARS = 20_000  # of an unproven candidate's diff shown in the summary (GitHub's comments hold 65,536)


def recorded_headline(verdict: str, measured: str | None) -> str:
    """The headline of a candidate from recorded profiles: what a GPU measured, else its verdict."""
    if measured:
        return f"Optimas: {measured}"
    if verdict != "not measured":
        return f"Optimas: the candidate was evaluated on the GPU: {verdict}; no suggestion is posted for it"
    return UNPROVEN


def loop_headline(stopped_because: str, gain: float | None, kept: int, proven: bool) -> str:
    """The headline of a closed loop: its cumulative gain where it kept a candidate, else why it stopped."""
    if proven:
        return f"Optimas: {gain:+.1%} over {kept} iteration(s), each significant at 95%"
    return "Closed loop: " + code_span(stopped_because)


def iteration_line(iteration: int, verdict: str, improvement: float | None, ci_low: float | None,
                   ci_high: float | None, directional: float | None) -> str:
    """One closed-loop iteration: its verdict, gain with its interval and directional consistency."""
    gain = "" if improvement is None else f" {improvement:+.1%} ({ci_low:+.1%} to {ci_high:+.1%})"
    direction = "" if directional is None else f", directional consistency {directional:.2f}"
    return f"iteration {iteration}: {verdict}{gain}{direction}"


def edit_explanation(cites: Sequence[str], rationale: str, cited: str, measured: str | None, why: str) -> str:
    """A suggested edit's comment: the model's words and the evidence (source lines of the pull
    request) as text, never as Markdown: no mention, link or image reaches the review from them."""
    effect = f"Measured: {measured}." if measured else f"Not measured on this worker: {code_span(why)}."
    return (f"**Optimas** ({code_span(', '.join(cites))}):\n\n{code_block(rationale)}"
            f"\n\nEvidence cited:\n\n{code_block(cited)}\n\n{effect}")


def not_run_headline(names: Sequence[str], listed: bool) -> str:
    """The headline of a pull request that changes none of the programs' (or the program's) files."""
    if not listed:
        return f"Nothing to optimize: this pull request changes none of the files of {code_span(names[0])}"
    shown = ", ".join(f"`{n}`" for n in names[:8]) + (", ..." if len(names) > 8 else "")
    return f"Nothing to optimize: this pull request changes none of the files of the {len(names)} programs ({shown})"


def not_run_details(skipped: Sequence[tuple[str, str]], listed: bool) -> str:
    if not listed:
        ((_, why),) = skipped
        return f"{why}. Nothing was profiled; label again after a change to the program's code."
    return ("\n".join(f"{name}: {why}" for name, why in skipped)
            + "\nNothing was profiled; label again after a change to a program's code.")


def failed_headline(name: str) -> str:
    return f"{name} could not be run"


def programs_headline(names: Sequence[str], proven: Sequence[str]) -> str:
    """The headline of several programs run for one pull request: which were proven faster."""
    shown = ", ".join(f"`{name}`" for name in names)
    return (f"Optimas on {len(names)} programs ({shown}): proven faster: "
            f"{', '.join(f'`{n}`' for n in proven) if proven else 'none'}")


def overlap_line(name: str, file: str, start: int, end: int) -> str:
    """An edit of a shared file left out because another program's overlaps it."""
    return f"{code_span(name)}: {code_span(file)} lines {start}-{end}"


def summary_text(outcome: Outcome, head_sha: str, config_changed: bool, artifacts_url: str | None = None) -> str:
    """The summary comment. It names the run by its id only (the worker host's paths are nobody's
    business) and links the artifacts where the operator serves them (OPTIMAS_ARTIFACTS_URL). An
    outcome of several programs has a part for each program run, and names those not run."""
    lines = [f"### Optimas on `{head_sha[:7]}`", "", outcome.headline, ""]
    if outcome.kind == "programs":
        lines += program_lines(outcome, lambda o: result_lines(o, artifacts_url))
        ignored = next((o.model_ignored for _, o in outcome.programs if o.model_ignored), ())
    else:
        lines += result_lines(outcome, artifacts_url)
        ignored = outcome.model_ignored
    if ignored:
        lines.append(f"The repository's config names {', '.join(code_span(k) for k in ignored)}: "
                     "the model and its answers are chosen by whoever runs Optimas (the App's operator, the "
                     "workflow's inputs), never by the repository; they were not used.")
    if config_changed:
        lines.append("The repository's Optimas config changed after this run was requested; the current one was used.")
    return "\n".join(lines)


def _compat_line(c: CompatRecord) -> str:
    """The summary's sentence on one change app.legacy_cuda made to the build."""
    if c.is_dialect:
        sources = ", ".join(code_span(s) for s in c.sources)
        said = ", ".join(code_span(n) for n in c.names)
        return (f"Built with {sources} compiled as C++17 where the build said {said} (app.legacy_cuda: "
                "CUDA 13's Thrust, CUB, libcu++ and cooperative groups headers need C++17): it changes what "
                "that code means, and your own CUDA 13 toolchain does not build it without the same change.")
    return (f"Built with Optimas's compatibility header {code_span(c.header)} pre-included into "
            f"{', '.join(code_span(s) for s in c.sources)} (app.legacy_cuda, for "
            f"{', '.join(code_span(n) for n in c.names)}): it changes what that code means, and your own "
            "CUDA 13 toolchain does not build it without the same change.")


def result_lines(outcome: ProgramOutcome, artifacts_url: str | None = None) -> list[str]:
    """What the summary says of one program's outcome below its headline: details, hot kernels,
    evidence, validation, timings, EAR, the run's link, compatibility headers, an unproven diff."""
    lines = []
    if outcome.details:
        lines += [code_block(outcome.details), ""]
    if outcome.hot:
        changed = set(outcome.hot_changed)
        lines.append("Hot kernels: " + ", ".join(code_span(k.split("(")[0]) + (" (defined in a changed file)"
                                                                              if k in changed else "")
                                                 for k in outcome.hot))
        lines.append(f"Evidence items: {outcome.evidence}; verdict: {code_span(outcome.verdict)}; "
                     f"run `{outcome.run}`")
    if outcome.reasons:
        lines.append("The model's reasons:")
        lines.append(code_block("\n".join(f"- {r}" for r in outcome.reasons)))
    if outcome.validation:
        lines.append(f"Validation: {code_span(outcome.validation)}")  # the program's output in it
    for line in outcome.per_config:
        lines.append(f"- {line}")
    if outcome.ear is not None:
        lines.append(ear_line(outcome.ear))
    if artifacts_url and outcome.run:  # the dashboard's page of the run
        lines.append(f"The run on the dashboard: {artifacts_url.rstrip('/')}/runs/{outcome.run}")
    lines += [_compat_line(c) for c in outcome.compat]
    if outcome.unproven_diff:
        lines += ["", "The candidate, not proven on a GPU (shown as text; no suggestion was posted):",
                  code_block(outcome.unproven_diff[-_UNPROVEN_CHARS:])]
    return lines


def program_lines(outcome: ProgramsOutcome, lines_of: Callable[[ProgramOutcome], list[str]]) -> list[str]:
    """The summary's part for several programs: those run, each with its own lines (`lines_of`),
    and those skipped with why."""
    out = []
    for name, o in outcome.programs:
        reads = ", ".join(code_span(c) for c in o.changed[:10])  # the pull request's file names
        out += ["", f"#### `{name}`: {o.headline}", "",
                *([f"Run because the pull request changes what it reads: {reads}"] if reads else []), *lines_of(o)]
    if outcome.overlapping:
        out += ["", "Edits of a shared file that overlap another program's (not posted): "
                + "; ".join(outcome.overlapping)]
    if outcome.skipped:
        out += ["", "Programs not run:", *(f"- `{name}`: {_words(why)}" for name, why in outcome.skipped)]
    return out


def clipped(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut after a whole word with an ellipsis (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def _words(why: str) -> str:
    """A why as plain words where it is only words, else as code: it may name a folder of the config,
    which in the Action is the pull request's (a mention, a link or an image in its name)."""
    return why if re.fullmatch(r"[\w .,'()/+=-]*", why) and "www." not in why.lower() else code_span(why)
