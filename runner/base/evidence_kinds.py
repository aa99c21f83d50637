"""The kinds of evidence a prompt cites, in one registry: each kind's word (Evidence.kind), the
letter its ids start with, the diagnostic source that shows it (PC sampling, instruction-level
counters, the roofline; the launch configuration comes with any of them and the compiler's report
always), and its names in prompts and reports. The diagnostic configurations of the paper (config's
evaluation.diagnostics, the ablation's rows) are every combination of the sources, derived here."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations


@dataclass(frozen=True)
class EvidenceKindSpec:
    """One kind of evidence."""

    word: str  # as Evidence.kind spells it
    letter: str  # the first letter of its ids (S3)
    source: str | None  # the diagnostic source that shows it; None: shown with any source (launch) or always
    prompt_name: str  # how a prompt names the source of it
    section: str  # its heading in diagnostics.md


# In the order a prompt lists them (and ids sort).
KINDS: tuple[EvidenceKindSpec, ...] = (
    EvidenceKindSpec("launch", "L", None, "launch configuration (L)", "Launch configuration (L)"),
    EvidenceKindSpec("roofline", "R", "Roofline", "roofline (R)", "Roofline (R)"),
    EvidenceKindSpec("stall", "S", "PC", "PC sampling (S)", "Salient stalls from PC sampling (S)"),
    EvidenceKindSpec("counter", "C", "IA", "counters (C)", "Counters that explain runtime, eOMP (C)"),
    EvidenceKindSpec("compiler", "K", None, "compiler feedback (K)", "Compiler feedback (K)"),
)
BY_WORD = {k.word: k for k in KINDS}
# The kinds the analysis gives (the compiler's report is added by the prompt).
PROFILE_WORDS: tuple[str, ...] = ("launch", "roofline", "stall", "counter")
SOURCES: tuple[str, ...] = ("PC", "IA", "Roofline")  # in the paper's order
DIAGNOSTICS: tuple[str, ...] = ("none", *("+".join(c) for n in range(1, len(SOURCES) + 1)
                                          for c in combinations(SOURCES, n)))


def evidence_id(word: str, number: int) -> str:
    """The id of the `number`th item of kind `word` (S3)."""
    return f"{BY_WORD[word].letter}{number}"


def kinds_shown(diagnostics: str) -> set[str]:
    """The profile evidence kinds a diagnostic configuration shows: those of its sources and,
    with any source, the launch configuration ("none": code only)."""
    if diagnostics == "none":
        return set()
    sources = set(diagnostics.split("+"))
    return {"launch"} | {k.word for k in KINDS if k.source in sources}


def source_kind(source: str) -> EvidenceKindSpec:
    """The evidence kind a diagnostic source gives (PC -> stall)."""
    return next(k for k in KINDS if k.source == source)
