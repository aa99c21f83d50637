"""The proposal stage: prompt -> model -> parse -> guard -> compile, with bounded retries that feed
the parse error, the guard's reasons or the compiler's errors back to the model.

Every attempt is kept in the run directory: prompt/ (system.md, user.md per attempt), llm/
(raw answers, calls.jsonl with token usage and cost) and candidates/<n>/ (proposal.json,
diff.patch, the edited files, the build log).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from runner.analysis.evidence import Diagnostics
from runner.analysis.sources import resolver, stale_sources
from runner.base.config import LoadedConfig
from runner.base.context import RunContext
from runner.base.errors import OptimasError
from runner.base.progress import in_stage, progress_for
from runner.base.runstore import Run, append_text, atomic_write_text
from runner.base.workspace import stored_name
from runner.proposal.guard import GuardResult, apply_proposal
from runner.proposal.llm import Backend, LLMRequest, LLMResponse, Message, OfflineContext, make_backend
from runner.proposal.parser import Proposal, ResponseParseError, parse_response
from runner.proposal.prompt import Prompt, PromptSpec, render_prompt
from runner.scan.cuda_source import by_function
from runner.toolchain.builder import Builder
from runner.toolchain.compat_record import CompatRecord
from runner.toolchain.compiler import CompileResult

progress = progress_for("proposal")


class Attempt(BaseModel):
    number: int
    outcome: Literal["unparsable", "rejected", "compile-error", "accepted", "no-change"]
    detail: str = ""
    backend: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    seconds: float = 0.0


class ProposeResult(BaseModel):
    # no-change: the model answered that no edit would help, with its reasons (proposal.withheld)
    status: Literal["accepted", "failed", "no-change"]
    reason: str = ""
    diagnostics: str
    attempts: list[Attempt] = Field(default_factory=list)
    proposal: Proposal | None = None
    diff: str = ""
    compiled: bool | None = None  # None: nvcc not available here, the candidate was not compiled
    candidate_dir: str | None = None
    evidence_ids: list[str] = Field(default_factory=list)  # what the accepted answer's prompt showed
    files: dict[str, str] = Field(default_factory=dict, exclude=True)  # the candidate's sources


class StaleProfile(OptimasError):
    """The profile saw other code than the sources now hold."""

    exit_code = 2


def check_sources(lc: LoadedConfig, diag: Diagnostics, files: dict[str, str]) -> None:
    """Refuse evidence whose source lines no longer hold the text the profile saw."""
    _, workdir = lc.dirs
    local = {str((workdir / name).resolve()): name for name in files}
    problems = stale_sources(diag.source_digests, files, resolver(local, lambda f: str(lc.resolve(f).resolve())))
    if problems:
        raise StaleProfile("the profile is of other code than the sources now hold:\n- " + "\n- ".join(problems)
                           + f"\nRe-profile the current code (optimas profile --config {lc.path}, or optimas run "
                           "without recorded profiles on a GPU), or point app.source_map at the code that was "
                           "profiled.")


@dataclass
class _Stage:
    """One proposal: where it writes, the prompt it starts from, how candidates are built and who answers."""

    lc: LoadedConfig
    run: Run
    spec: PromptSpec  # the first attempt's prompt; a retry adds what went wrong
    builder: Builder | None  # how candidates are built; None: nvcc is not here, candidates are not compile-checked
    backend: Backend
    sample: int = 1  # which of the iteration's answers this is (llm.candidates)

    @property
    def diag(self) -> Diagnostics:
        return self.spec.diag

    @property
    def files(self) -> dict[str, str]:
        return self.spec.files

    def request(self, prompt: Prompt) -> LLMRequest:
        """What the backend is asked for `prompt`, with the llm settings and this sample's number."""
        llm = self.lc.config.llm
        return LLMRequest(
            sample=self.sample,
            messages=[Message(role="system", content=prompt.system), Message(role="user", content=prompt.user)],
            model=llm.model or llm.backend, temperature=llm.temperature, max_tokens=llm.max_tokens,
            context=OfflineContext(diagnostics=self.diag, files=self.files, editable=prompt.editable,
                                   evidence_ids=prompt.evidence_ids, hot_kernels=prompt.hot_kernels))


def _record_compat(run: Run, compat: list[CompatRecord]) -> None:
    """Say in the run's manifest (compat_headers, the records' JSON) and its progress what
    app.legacy_cuda changed in the original's build."""
    run.manifest["compat_headers"] = [c.as_json() for c in compat]
    run.save()
    progress("compatibility headers pre-included: " + "; ".join(
        f"{c.header} into {', '.join(c.sources)}" for c in compat))


@in_stage("proposal")
def propose(ctx: RunContext, diag: Diagnostics, backend: Backend | None = None,
            rejected: str | None = None, sample: int = 1) -> ProposeResult:
    """Ask the backend (default: llm's) for an optimization of the hot kernels and keep the first
    usable candidate, in `ctx.run`'s prompt/, llm/ and candidates/ folders (`rejected`: what was
    wrong with an earlier candidate of the same code, shown in the prompt; `sample`: which of the
    iteration's answers to the same prompt this is, see llm.candidates).

    When the prompt for all hot kernels exceeds llm.max_prompt_tokens, each kernel gets a prompt
    of its own; the accepted edits are then combined (they touch different kernels) and checked
    again as one candidate.
    """
    lc, run, config = ctx.lc, ctx.run, ctx.lc.config
    diagnostics = ctx.diagnostics or config.evaluation.diagnostics
    files = dict(ctx.code)
    check_sources(lc, diag, files)
    builder: Builder | None = Builder(lc, ctx.arch, ctx.build_cache)
    if builder.compiler is None or shutil.which(builder.compiler) is None:
        builder = None  # no compiler: no compiler feedback, and no compile check
    base: CompileResult | None = None
    if builder is not None:
        progress("compiling the original with ptxas -v for compiler feedback (K*)")
        base = builder.compile(files, run.stage_dir("prompt") / "original-build.log", macros=True)
        if not base.ok:
            return ProposeResult(status="failed", diagnostics=diagnostics,
                                 reason="the original sources do not build: " + base.output[-1500:])
        if base.compat:  # app.legacy_cuda changed what the build compiles: the run says where
            _record_compat(run, base.compat)
    else:
        progress("nvcc not found: no compiler feedback, and candidates will not be compile-checked")
    spec = dataclasses.replace(PromptSpec.of(config, diag, files, diagnostics, base), rejected=rejected)
    st = _Stage(lc, run, spec, builder, backend or make_backend(config.llm, lc.path.parent), sample)
    result = ProposeResult(status="failed", diagnostics=diagnostics)
    whole = render_prompt(spec)
    parts: list[list[str] | None] = [None]
    functions = by_function(whole.hot_kernels)  # a template's instances are one source: one prompt
    if whole.approx_tokens > config.llm.max_prompt_tokens and len(functions) > 1:
        parts = list(functions.values())
        progress(f"the prompt (~{whole.approx_tokens} tokens) exceeds llm.max_prompt_tokens: one prompt per kernel "
                 "function")
    accepted: list[tuple[Proposal, GuardResult, CompileResult | None, Path, list[str]]] = []
    reasons = []
    unchanged: list[Proposal] = []
    for kernels in parts:
        outcome = _attempts(st, kernels, result, first=whole if kernels is None else None)
        if isinstance(outcome, str):
            reasons.append(outcome)
        elif isinstance(outcome, Proposal):
            unchanged.append(outcome)
            reasons.append("no change proposed: " + no_change_reasons(outcome))
        else:
            accepted.append(outcome)
    if len(unchanged) == len(parts):  # every prompt answered NO CHANGE
        result.status = "no-change"
        result.proposal = Proposal(shape="no-change", edits=[], withheld=[w for p in unchanged for w in p.withheld],
                                   raw="\n\n".join(p.raw for p in unchanged))
        result.reason = "the model proposes no change: " + no_change_reasons(result.proposal)
    elif not accepted:
        result.reason = "; ".join(reasons)
    else:
        proposal, guard, built, cand, ids = accepted[0] if len(accepted) == 1 else _combine(st, accepted)
        result.status, result.proposal, result.diff = "accepted", proposal, guard.diff
        result.evidence_ids, result.files = ids, guard.files
        result.compiled = None if built is None else built.ok
        result.candidate_dir = str(cand.relative_to(run.path))
        if reasons:
            result.reason = "some kernels got no usable edit: " + "; ".join(reasons)
    path = run.write_json("candidates", "result.json", json.loads(result.model_dump_json()))
    run.stage_done("candidates", [path], status=result.status, attempts=len(result.attempts))
    return result


def _attempts(st: _Stage, kernels: list[str] | None, result: ProposeResult, first: Prompt | None = None):
    """The retry loop for one prompt: (proposal, guard, build, folder) when accepted, else the reason.
    `first`: the first attempt's prompt when it is already built."""
    config = st.lc.config
    parse_error: str | None = None
    compile_errors: str | None = None
    parse_left, compile_left = config.llm.parse_retries, config.evaluation.compile_retries
    while True:
        n = len(result.attempts) + 1
        if first is None:
            first = render_prompt(dataclasses.replace(st.spec, kernels=kernels, compile_errors=compile_errors,
                                                      parse_error=parse_error))
        prompt, first = first, None
        st.run.write_text("prompt", f"system-{n}.md", prompt.system)
        st.run.write_text("prompt", f"user-{n}.md", prompt.user)
        progress(f"attempt {n}: asking {st.backend.name} ({prompt.approx_tokens} prompt tokens, approx.)")
        resp = st.backend.complete(st.request(prompt))
        st.run.write_text("llm", f"answer-{n}.txt", resp.text)
        _log_call(st.run, n, prompt, resp)
        att = Attempt(number=n, outcome="unparsable", backend=resp.backend, model=resp.model,
                      prompt_tokens=resp.usage.prompt_tokens, completion_tokens=resp.usage.completion_tokens,
                      cost_usd=resp.cost_usd, seconds=resp.seconds)
        result.attempts.append(att)
        try:
            proposal = parse_response(resp.text, st.files)
        except ResponseParseError as e:
            att.detail = str(e)
            if parse_left <= 0:
                return f"the answer could not be used: {e}"
            parse_left -= 1
            parse_error, compile_errors = str(e), None
            continue
        if proposal.shape == "no-change":  # an answer, not a failure: not asked again
            att.outcome, att.detail = "no-change", no_change_reasons(proposal)
            return proposal
        guard = apply_proposal(proposal, st.files, prompt.editable)
        if not guard.ok:
            att.outcome, att.detail = "rejected", guard.reasons()
            if parse_left <= 0:
                result.proposal = proposal
                return "the edits break the rules:\n" + guard.reasons()
            parse_left -= 1
            parse_error, compile_errors = "Your edits were rejected:\n" + guard.reasons(), None
            continue
        cand = st.run.stage_dir("candidates") / str(n)
        cand.mkdir(exist_ok=True)
        built = st.builder.compile(guard.files, cand / "build.log") if st.builder else None
        _save_candidate(cand, proposal, guard, built)
        if built is not None and not built.ok:
            att.outcome, att.detail = "compile-error", built.output[-3000:]
            if compile_left <= 0:
                result.proposal = proposal
                return "the candidate does not compile:\n" + built.output[-1500:]
            compile_left -= 1
            compile_errors, parse_error = built.output[-6000:], None
            continue
        att.outcome = "accepted"
        return proposal, guard, built, cand, prompt.evidence_ids


def no_change_reasons(proposal: Proposal) -> str:
    """A NO CHANGE answer's reasons on one line."""
    return "; ".join(map(str, proposal.withheld))


def _combine(st: _Stage, accepted):
    """One candidate from the per-kernel proposals; the first alone if the combination fails."""
    edits = [e for p, *_ in accepted for e in p.edits]  # entries: (proposal, guard, build, folder, ids)
    merged = Proposal(shape=accepted[0][0].shape, edits=edits, applied=[a for p, *_ in accepted for a in p.applied],
                      withheld=[w for p, *_ in accepted for w in p.withheld],
                      raw="\n\n".join(p.raw for p, *_ in accepted))
    editable = {f: [(e.start_line, e.end_line) for e in edits if e.file == f] for f in {e.file for e in edits}}
    guard = apply_proposal(merged, st.files, editable)
    cand = st.run.stage_dir("candidates") / "combined"
    cand.mkdir(exist_ok=True)
    if not guard.ok:
        progress("the per-kernel edits do not combine (" + guard.reasons() + "); keeping the first")
        return accepted[0]
    built = st.builder.compile(guard.files, cand / "build.log") if st.builder else None
    _save_candidate(cand, merged, guard, built)
    if built is not None and not built.ok:
        progress("the combined candidate does not compile; keeping the first kernel's")
        return accepted[0]
    ids = list(dict.fromkeys(i for *_, part_ids in accepted for i in part_ids))
    return merged, guard, built, cand, ids


def _log_call(run: Run, n: int, prompt: Prompt, resp: LLMResponse) -> None:
    path = run.stage_dir("llm") / "calls.jsonl"
    entry = {"attempt": n, "backend": resp.backend, "model": resp.model, "label": resp.label,
             "prompt_tokens": resp.usage.prompt_tokens, "completion_tokens": resp.usage.completion_tokens,
             "cost_usd": resp.cost_usd, "seconds": round(resp.seconds, 3), "attempts": resp.attempts,
             "diagnostics": prompt.diagnostics, "evidence_ids": prompt.evidence_ids}
    append_text(path, json.dumps(entry) + "\n")


def _save_candidate(cand: Path, proposal: Proposal, guard: GuardResult, built: CompileResult | None) -> None:
    atomic_write_text(cand / "proposal.json", proposal.model_dump_json(indent=2) + "\n")
    atomic_write_text(cand / "diff.patch", guard.diff)
    for name, text in guard.files.items():
        atomic_write_text(cand / "src" / stored_name(name), text)
    if built is not None:
        resources = [r.model_dump() for r in built.resources]
        atomic_write_text(cand / "resources.json", json.dumps(resources, indent=2) + "\n")
