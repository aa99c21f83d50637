"""The offline backend: deterministic rules instead of a model.

It reads the structured prompt inputs (diagnostics, sources, editable ranges), maps salient
evidence to well-known safe transformations, and answers in the same structured format a model
is asked for, citing the evidence each edit acts on:

- `const` on pointer parameters a kernel only reads, and `__restrict__` on its pointer parameters,
  when its loads stall on memory (stall_long_sb lines) or the roofline says memory-bound. The rule
  assumes distinct pointer parameters do not alias; validation against the original outputs is
  what catches a launch that passes the same buffer twice.
- `#pragma unroll 4` on a loop whose line (or whose body line) is a salient stall line.
Suggestions it cannot make safely are listed as not applied, with the reason.
"""

from __future__ import annotations

import re
import time

from pydantic import BaseModel, ConfigDict

from runner.analysis.evidence import Diagnostics, Evidence
from runner.profiles.model import short_kernel_name
from runner.proposal.llm.base import LLMError, LLMRequest, LLMResponse, Usage
from runner.scan.cuda_source import Function, functions, kernel_by_name, strip_comments_and_strings


class OfflineContext(BaseModel):
    """What the offline backend reads instead of the prompt text."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    diagnostics: Diagnostics
    files: dict[str, str]
    editable: dict[str, list[tuple[int, int]]]
    evidence_ids: list[str]
    hot_kernels: list[str]


_ASSIGN = r"\s*(=(?!=)|\+=|-=|\*=|/=|%=|\|=|&=|\^=|<<=|>>=|\+\+|--)"


def _written(body: str, name: str) -> bool:
    """Is pointer `name` written through, passed on, or atomically updated in this body?"""
    n = re.escape(name)
    if re.search(rf"\b{n}\s*\[[^\]]*\]{_ASSIGN}", body) or re.search(rf"\*\s*\(?\s*{n}\b[^;]*?\)?{_ASSIGN}", body):
        return True
    if re.search(rf"\b(atomic\w*|memcpy|memset)\s*\(\s*&?\s*{n}\b", body):
        return True
    # Passed to a function (other than __ldg) as a plain pointer: the callee might write through it.
    for m in re.finditer(rf"\b(\w+)\s*\(([^;]*?)\b{n}\b(?!\s*\[)", body):
        if m.group(1) not in ("__ldg", "if", "for", "while", "switch", "return", "sizeof", "static_cast"):
            return True
    return False


def _pointer_name(param: str) -> str | None:
    if "*" not in param or "&" in param:
        return None
    m = re.search(r"([A-Za-z_]\w*)\s*$", param)
    return m.group(1) if m else None


def _qualified(param: str, make_const: bool) -> str:
    p = param.strip()
    name = _pointer_name(p)
    if not name:
        return p
    head = p[: p.rfind(name)].rstrip()
    if make_const and not re.search(r"\bconst\b", head.split("*")[0]):
        head = "const " + head
    if "__restrict__" not in head:
        head = head + " __restrict__"
    return f"{head} {name}"


def _signature_edit(text: str, f: Function) -> tuple[str, list[str]] | None:
    """New text of the kernel's declaration lines with const/__restrict__ pointers, and what changed."""
    clean = strip_comments_and_strings(text).splitlines()
    body = "\n".join(clean[f.body_start_line - 1:f.end_line])
    region = "\n".join(text.splitlines()[f.start_line - 1:f.body_start_line])
    changes = []
    new_region = region
    for param in f.params:
        name = _pointer_name(param)
        if not name:
            continue
        make_const = not _written(body, name)
        new = _qualified(param, make_const)
        if " ".join(new.split()) == " ".join(param.split()):
            continue
        pattern = r"\s*".join(re.escape(tok) for tok in param.split())
        new_region, n = re.subn(pattern, new, new_region, count=1)
        if n:
            changes.append(name + (" const" if make_const and "const" not in param else "") + " __restrict__")
    return (new_region, changes) if changes else None


class OfflineBackend:
    """Rule-based answers for the main job's embedded default and as an EAR baseline."""

    name = "offline"

    def complete(self, request: LLMRequest) -> LLMResponse:
        ctx = request.context
        if not isinstance(ctx, OfflineContext):
            raise LLMError("the offline backend needs the structured prompt context (it reads evidence, not text)")
        t0 = time.monotonic()
        text = answer(ctx)
        return LLMResponse(text=text, backend=self.name, model="offline-rules", usage=Usage(prompt_tokens=0,
                           completion_tokens=0), seconds=time.monotonic() - t0, label="rule-based (no model)")


# Listed last under NOT APPLIED in every answer: what the rules never attempt.
_NEVER_APPLIED = (
    "shared-memory tiling and kernel fusion: restructure data movement beyond what the rules can prove safe",
    "__launch_bounds__: the block size (L) is measured for the profiled configuration only, and a bound below "
    "another configuration's block size fails its launches",
)


class _Answer:
    """What the rules found so far: the EDIT blocks and the APPLIED and NOT APPLIED lines, in order."""

    def __init__(self) -> None:
        self.edits: list[str] = []
        self.applied: list[str] = []
        self.withheld: list[str] = []

    def text(self) -> str:
        """The answer in the response format."""
        reasons = [f"- {w}" for w in [*self.withheld, *_NEVER_APPLIED]]
        if not self.edits:  # the response format's answer for "nothing here would be faster"
            return "\n".join(["NO CHANGE", "- no rule of the offline backend applies to the evidence given",
                              *reasons]) + "\n"
        return "\n".join(self.edits + ["APPLIED:"] + [f"- {a}" for a in self.applied] + ["NOT APPLIED:"]
                         + reasons) + "\n"


def answer(ctx: OfflineContext) -> str:
    """The structured answer for these inputs (deterministic)."""
    out = _Answer()
    shown = set(ctx.evidence_ids)
    for kernel in ctx.hot_kernels:
        _kernel_answer(out, ctx, kernel, shown)
    return out.text()


def _kernel_answer(out: _Answer, ctx: OfflineContext, kernel: str, shown: set[str]) -> None:
    """The rules' edits and withheld suggestions for one hot kernel, in every file that defines it editably."""
    short = short_kernel_name(kernel)
    stalls, roof = _kernel_evidence(ctx.diagnostics, kernel, shown)
    for fname, text in ctx.files.items():
        f = _editable_kernel(ctx, fname, text, kernel)
        if f is None:
            continue
        # Stall lines of this kernel may lie in device functions inlined into it: they count too.
        cites = [s.id for s in stalls if s.stall and s.stall.reason == "stall_long_sb"]
        if roof and _bound(roof) == "memory":
            cites.append(roof.id)
        _signature_rule(out, fname, text, f, short, cites)
        _unroll_rule(out, fname, text, f, short, stalls)
    if roof and _bound(roof) == "compute":
        out.withheld.append(f"strength reduction of {short}'s index arithmetic ({roof.id}: compute-bound): needs "
                            "rewriting expressions, which the rules cannot prove bit-for-bit safe")


def _kernel_evidence(d: Diagnostics, kernel: str, shown: set[str]) -> tuple[list[Evidence], Evidence | None]:
    """The kernel's stall evidence and its roofline evidence (None without one) that the prompt showed."""
    stalls = [e for e in d.evidence if e.kind == "stall" and e.kernel == kernel and e.id in shown]
    roof = next((e for e in d.evidence if e.kind == "roofline" and e.kernel == kernel and e.id in shown), None)
    return stalls, roof


def _bound(roof: Evidence) -> str | None:
    """What the roofline evidence says bounds the kernel (memory, compute, latency); None without a roofline."""
    return roof.roofline.bound if roof.roofline else None


def _editable_kernel(ctx: OfflineContext, fname: str, text: str, kernel: str) -> Function | None:
    """The kernel's definition in this file when it lies wholly in an editable range, else None."""
    f = kernel_by_name(functions(text), kernel)
    if f is None or not any(a <= f.start_line and f.end_line <= b for a, b in ctx.editable.get(fname, [])):
        return None
    return f


def _signature_rule(out: _Answer, fname: str, text: str, f: Function, short: str, cites: list[str]) -> None:
    """const/__restrict__ on the kernel's pointer parameters when `cites` show it waits on memory."""
    sig = _signature_edit(text, f) if cites else None
    if sig:
        new_region, changes = sig
        out.edits.append(_edit(fname, f.start_line, f.body_start_line, cites,
                               f"{short}: loads stall on memory ({', '.join(cites)}); const/__restrict__ on "
                               f"pointer parameters ({', '.join(changes)}) lets the compiler use the read-only "
                               "data path and keep loads in flight.", new_region))
        out.applied.append(f"lines {f.start_line}-{f.body_start_line}: const and __restrict__ on pointer "
                           f"parameters of {short} ({', '.join(cites)})")
    elif not cites:
        out.withheld.append(f"const/__restrict__ on {short}'s pointers: no memory-stall or memory-bound evidence "
                            "for this kernel")


def _unroll_rule(out: _Answer, fname: str, text: str, f: Function, short: str, stalls: list[Evidence]) -> None:
    """`#pragma unroll 4` on each loop of the kernel whose head or body is a salient stall line."""
    for line_no, sid in _unroll_targets(text, f, stalls, after=f.body_start_line):
        original = text.splitlines()[line_no - 1]
        indent = original[: len(original) - len(original.lstrip())]
        out.edits.append(_edit(fname, line_no, line_no, [sid],
                               f"{short}: the loop at line {line_no} is a salient stall line ({sid}); unrolling "
                               "by 4 lets independent iterations' loads overlap.",
                               f"{indent}#pragma unroll 4\n{original}"))
        out.applied.append(f"lines {line_no}-{line_no}: #pragma unroll 4 on the loop of {short} ({sid})")


def _edit(fname: str, a: int, b: int, cites: list[str], why: str, code: str) -> str:
    return f"EDIT file={fname} lines={a}-{b} cites={','.join(cites)}\nWHY: {why}\n```cuda\n{code}\n```\n"


def _unroll_targets(text: str, f: Function, stalls, after: int) -> list[tuple[int, str]]:
    """(line of a `for`, stall id) for salient lines that are a loop head or a loop's one-line body."""
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    for s in stalls:
        ln = s.stall.line if s.stall else 0
        if not (after < ln <= f.end_line):
            continue
        for cand in (ln, ln - 1, ln - 2):
            if cand <= after:
                break
            src = lines[cand - 1].strip()
            if src.startswith("for") and not lines[cand - 2].strip().startswith("#pragma"):
                if cand not in {c for c, _ in out}:
                    out.append((cand, s.id))
                break
    return out
