"""One registry of evidence kinds (runner.base.evidence_kinds): the paper's diagnostic
configurations, the ids' letters, what each configuration shows and how prompts name it."""

from __future__ import annotations

from runner.analysis.evidence import EVIDENCE_ID, EvidenceKind, evidence_order
from runner.base.config import DIAGNOSTICS
from runner.base.evidence_kinds import KINDS, evidence_id, kinds_shown
from runner.proposal.prompt import DIAGNOSTIC_KINDS


def test_the_configurations_are_the_papers_seven_and_code_only_in_the_ablations_order():
    assert DIAGNOSTICS == ("none", "PC", "IA", "Roofline", "PC+IA", "PC+Roofline", "IA+Roofline", "PC+IA+Roofline")
    assert set(DIAGNOSTIC_KINDS) == set(DIAGNOSTICS)
    assert kinds_shown("PC+Roofline") == {"launch", "stall", "roofline"} and kinds_shown("none") == set()


def test_ids_and_their_letters_follow_the_registry():
    assert [k.value for k in EvidenceKind] == ["L", "R", "S", "C", "K"] == [k.letter for k in KINDS]
    assert EvidenceKind.COMPILER == "K" and evidence_id("stall", 3) == "S3"
    assert EVIDENCE_ID.findall("cites S3, C1 and K2; not X9") == ["S3", "C1", "K2"]
    assert sorted(["K1", "S2", "L1", "C1", "R1", "S10"], key=evidence_order) == ["L1", "R1", "S2", "S10", "C1", "K1"]
