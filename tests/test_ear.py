"""Each EAR metric on constructed cases whose answers are known."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import FIXTURES

from runner.analysis.evidence import Diagnostics, Evidence, GpuInfo
from runner.analysis.hot import KernelTime
from runner.analysis.roofline import Roofline
from runner.analysis.stalls import StallLine
from runner.evaluation.ear import (
    Profiled,
    coverage,
    directional,
    hallucinations,
    localization,
    map_line,
    moved,
    scores,
)
from runner.profiles.model import LINE_COLUMNS
from runner.proposal.parser import Edit, Proposal, Withheld

SRC = (FIXTURES / "responses" / "stream_main.cu").read_text()
FILES = {"main.cu": SRC}
TRIAD = "triad_kernel(float *, const float *, const float *, float, unsigned long)"
ADD = "add_kernel(const float *, const float *, float *, unsigned long)"


def stall(i: int, kernel: str, line: int, reason: str = "stall_long_sb") -> Evidence:
    s = StallLine(kernel=kernel, file="/gpu/machine/main.cu", line=line, source="", reason=reason, reason_share=0.9,
                  line_share=0.8, samples=100)
    return Evidence(id=f"S{i}", kind="stall", kernel=kernel, text="", stall=s)


def roof(i: int, kernel: str, bound: str, mem: float, comp: float) -> Evidence:
    r = Roofline(kernel=kernel, resources=[], compute_rho=comp, memory_rho=mem, sol_compute_pct=None,
                 sol_memory_pct=None, arithmetic_intensity=None, ridge_point=None, bound=bound, summary="")
    return Evidence(id=f"R{i}", kind="roofline", kernel=kernel, text="", roofline=r)


def diag(*ev: Evidence) -> Diagnostics:
    return Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[KernelTime(kernel=TRIAD, total_ns=1, launches=1, share=1,
                                                                      cumulative_share=1, hot=True)],
                       evidence=list(ev))


def edit(a: int, b: int, cites: list[str], text: str | None = None) -> Edit:
    return Edit(file="main.cu", start_line=a, end_line=b, cites=cites,
                new_text=text if text is not None else "\n".join(SRC.splitlines()[a - 1:b]))


def test_coverage_counts_edits_citing_shown_ids():
    p = Proposal(shape="structured", raw="", edits=[edit(17, 17, ["S1"]), edit(19, 19, ["S9"]), edit(12, 12, [])])
    assert coverage(p, ["S1", "R1"]) == pytest.approx(1 / 3)
    assert coverage(Proposal(shape="structured", raw="", edits=[]), ["S1"]) is None


def test_localization_measures_edited_lines_near_stall_lines_of_the_same_kernel():
    d = diag(stall(1, TRIAD, 19), stall(2, ADD, 14))
    # lines 17-20 of triad: 17..20 are within 3 of 19 -> 4 of 4
    assert localization(Proposal(shape="structured", raw="", edits=[edit(17, 20, ["S1"])]), d, FILES) == 1.0
    # line 12 (add's signature) is 2 away from add's stall line 14; line 7 (copy) has no stall in its kernel
    p = Proposal(shape="structured", raw="", edits=[edit(12, 12, ["S2"]), edit(7, 7, [])])
    assert localization(p, d, FILES) == 0.5
    # a triad stall line never counts for add's lines, even when close
    assert localization(Proposal(shape="structured", raw="", edits=[edit(17, 17, [])]),
                        diag(stall(1, ADD, 17)), FILES) == 0.0
    assert localization(p, diag(), FILES) is None


HELPER_SRC = """\
__device__ float load_scaled(const float* p, int i, float s) {
  float v = p[i];
  return v * s;
}

__global__ void apply(float* out, const float* in, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // not a call: load_scaled(in, i, s) in a comment
  float a = 1.0f;
  float b = 2.0f;
  out[i] = a * b + load_scaled(in, i, s);
}
"""


def test_localization_counts_edits_where_the_kernel_calls_the_helper_holding_the_stall():
    kernel = "apply(float *, const float *, int, float)"
    helper_stall = Evidence(id="S1", kind="stall", kernel=kernel, text="", stall=StallLine(
        kernel=kernel, file="/gpu/machine/ops.cu", line=2, source="float v = p[i];", reason="stall_long_sb",
        reason_share=0.9, line_share=0.8, samples=100))
    d = diag(helper_stall)
    files = {"ops.cu": HELPER_SRC}

    def at(a: int, b: int) -> Proposal:
        return Proposal(shape="structured", raw="", edits=[Edit(file="ops.cu", start_line=a, end_line=b, cites=["S1"],
                                                                new_text="  out[i] = a * b + in[i] * s;")])
    assert localization(at(12, 12), d, files) == 1.0  # the call replaced by the helper's work, written in
    assert localization(at(8, 8), d, files) == 0.0  # 4 lines from the call, 6 from the stall line itself
    assert localization(at(7, 12), d, files) == pytest.approx(4 / 6)  # lines 9-12 are near the call
    only_comment = {"ops.cu": HELPER_SRC.replace("  out[i] = a * b + load_scaled(in, i, s);", "  out[i] = a * b;")}
    assert localization(at(12, 12), d, only_comment) == 0.0  # line 9 names it in a comment: not a call


def test_map_line_follows_edits():
    edits = [edit(5, 6, [], "a\nb\nc\nd"), edit(10, 10, [], "")]
    assert map_line(edits, "main.cu", 3) == 3
    assert map_line(edits, "main.cu", 6) == 5  # inside the first edit
    assert map_line(edits, "main.cu", 8) == 10  # +2 lines before it
    assert map_line(edits, "main.cu", 12) == 13  # +2, then -1


def lines_table(rows: list[tuple[str, str, int, float, float]]) -> pd.DataFrame:
    recs = []
    for kernel, file, line, samples, long_sb in rows:
        r = {c: 0.0 for c in LINE_COLUMNS}
        r.update(kernel=kernel, file=file, line=line, source="", samples=samples, stall_long_sb=long_sb,
                 caller_file=None, caller_line=None)
        recs.append(r)
    return pd.DataFrame(recs, columns=LINE_COLUMNS)


def test_directional_consistency_with_before_and_after():
    s1 = stall(1, TRIAD, 19)
    r1, r2 = roof(1, TRIAD, "memory", 0.50, 0.2), roof(2, ADD, "compute", 0.1, 0.80)
    c1 = Evidence(id="C1", kind="counter", kernel=TRIAD, text="",
                  counter={"metric": "smsp__inst_issued.sum", "weight": 0.4})
    p = Proposal(shape="structured", raw="", edits=[edit(17, 17, ["S1"], "x\ny")])  # one line longer
    before = lines_table([(TRIAD, "main.cu", 19, 800, 700), (TRIAD, "main.cu", 18, 200, 10)])
    # after: the stall line moved to 20 and its long_sb share fell from 0.70 to 0.30
    after = lines_table([(TRIAD, "main.cu", 20, 500, 300), (TRIAD, "main.cu", 18, 500, 10)])
    after_diag = diag(roof(1, TRIAD, "memory", 0.62, 0.2), roof(2, ADD, "compute", 0.1, 0.70))
    checks = directional([s1, r1, r2, c1], p, Profiled(before, {TRIAD: pd.Series({"smsp__inst_issued.sum": 100.0})}),
                         Profiled(after, {TRIAD: pd.Series({"smsp__inst_issued.sum": 80.0})}, after_diag))
    got = {c.id: (c.expected, c.before, c.after, c.consistent) for c in checks}
    assert got["S1"] == ("fall", pytest.approx(0.7), pytest.approx(0.3), True)
    assert got["R1"] == ("rise", 0.50, 0.62, True)
    assert got["R2"] == ("rise", 0.80, 0.70, False)  # compute-bound kernel's utilization fell
    assert got["C1"] == ("fall", 100.0, 80.0, True)
    s = scores(p, diag(s1, r1, r2), ["S1", "R1", "R2", "C1"], FILES, correct=True, checks=checks)
    assert s.directional == 0.75 and s.correct is True
    # A move within the noise threshold (1% < 2%) is not a move in the expected direction.
    noise = directional([c1], p, Profiled(before, {TRIAD: pd.Series({"smsp__inst_issued.sum": 100.0})}),
                        Profiled(after, {TRIAD: pd.Series({"smsp__inst_issued.sum": 99.0})}, after_diag),
                        min_change=0.02)
    assert [c.consistent for c in noise] == [False]
    assert moved(0.0, 0.0, "fall", 0.02) is False and moved(0.0, 0.1, "rise", 0.02) is True
    assert moved(None, 0.1, "rise", 0.02) is None


def test_a_cited_stall_line_that_was_rewritten_is_judged_over_its_region():
    s1 = stall(1, TRIAD, 18)
    p = Proposal(shape="structured", raw="", edits=[edit(17, 19, ["S1"], "a\nb")])  # three lines become two
    before = lines_table([(TRIAD, "main.cu", 17, 100, 20), (TRIAD, "main.cu", 18, 600, 500),
                          (TRIAD, "main.cu", 19, 100, 30), (TRIAD, "main.cu", 30, 200, 0)])
    # after: line 17 (where line 18 maps) is quiet, but the stall moved to the region's second line
    still = lines_table([(TRIAD, "main.cu", 17, 50, 0), (TRIAD, "main.cu", 18, 650, 540),
                         (TRIAD, "main.cu", 29, 300, 0)])
    gone = lines_table([(TRIAD, "main.cu", 17, 50, 0), (TRIAD, "main.cu", 18, 250, 100),
                        (TRIAD, "main.cu", 29, 700, 0)])
    (c,) = directional([s1], p, Profiled(before, {}), Profiled(still, {}, diag()))
    assert c.quantity == "stall_long_sb share at lines 17-19 (rewritten; cited line 18)"
    assert (c.before, c.after, c.consistent) == (pytest.approx(0.55), pytest.approx(0.54), False)
    (c,) = directional([s1], p, Profiled(before, {}), Profiled(gone, {}, diag()))
    assert (c.after, c.consistent) == (pytest.approx(0.10), True)
    deleted = Proposal(shape="structured", raw="", edits=[edit(17, 19, ["S1"], "")])
    (c,) = directional([s1], deleted, Profiled(before, {}), Profiled(gone, {}, diag()))
    assert (c.after, c.consistent) == (0.0, True)


def test_hallucinations_find_claims_without_changes_and_changes_without_claims():
    p = Proposal(shape="structured", raw="", edits=[edit(17, 17, ["S1"]), edit(12, 12, ["S2"])],
                 applied=["lines 17-17: __restrict__ on triad (S1)", "lines 40-44: vectorized loads in dot (S5)",
                          "read-only loads (S1)"],
                 withheld=[Withheld(suggestion="tiling", reason="too big")])
    h = hallucinations(p)
    assert h.claims_without_change == ["lines 40-44: vectorized loads in dot (S5)"]
    assert h.edits_without_claim == ["main.cu:12-12"] and h.cited_not_shown == []
    s = scores(p, diag(), ["S1", "S2"], FILES)
    # the prompt showed S1 and S2 only: S5 is an invented citation, a third hallucination
    assert s.hallucinations.cited_not_shown == ["S5"]
    assert s.hallucination_rate == pytest.approx(3 / 6)
    assert (s.applied, s.withheld) == (3, 1)
    assert s.coverage == 1.0 and s.localization is None and s.directional is None and s.correct is None


def test_a_bound_resource_relieved_by_needing_less_of_it_is_consistent():
    """transpose on the H200: the naive kernel's scattered writes kept L2 72% busy; the tiled
    rewrite ran 6.8x shorter at 48%. Its memory did less work per launch: the bound was relieved."""
    r1 = roof(1, TRIAD, "memory", 0.72, 0.05)
    p = Proposal(shape="structured", raw="", edits=[edit(17, 17, ["R1"])])
    none = lines_table([])
    after_diag = diag(roof(1, TRIAD, "memory", 0.48, 0.05))

    def check(before_ns: float, after_ns: float):
        (c,) = directional([r1], p, Profiled(none, {TRIAD: pd.Series({"gpu__time_duration.sum": before_ns})}),
                           Profiled(none, {TRIAD: pd.Series({"gpu__time_duration.sum": after_ns})}, after_diag))
        return c

    c = check(17_200, 2_530)  # 12.4 us of work at peak -> 1.2 us
    assert (c.before, c.after, c.consistent) == (0.72, 0.48, True)
    assert "fell, 12.4 -> 1.21 us at peak" in c.quantity
    # utilization fell and the launch got longer: as much work for the memory as before, not relieved
    assert check(17_200, 26_000).consistent is False
    # without durations, only utilization counts
    (c,) = directional([r1], p, Profiled(none, {}), Profiled(none, {}, after_diag))
    assert c.consistent is False and "fell" not in c.quantity


def test_directional_inputs_cover_every_profiled_kernel():
    """The H200 capture of transpose: five targeted reports, counters for the hottest kernel only.
    Every hot kernel has metrics (its launch duration for the work rule); the counter run's stand
    where it covered the kernel."""
    from conftest import REPO

    from runner.flows.loop import _profile_of
    from runner.profiles.readers import read_any

    cap = REPO / "benchmarks" / "replay" / "captures" / "transpose-h200"
    inputs = {"report": sorted(cap.glob("hot*.ncu-rep")), "counters": [cap / "counters" / "scale_1.ncu-rep"]}
    _, metrics = _profile_of(inputs)
    names = {k.split("(")[0] for k in metrics}
    assert {"transposeNaive", "transposeCoalesced", "transposeDiagonal", "copy", "transposeCoarseGrained"} <= names
    assert all(m["gpu__time_duration.sum"] > 0 for m in metrics.values())
    counters = read_any(inputs["counters"][0])
    (naive,) = [k for k in metrics if k.startswith("transposeNaive")]
    assert metrics[naive]["gpu__time_duration.sum"] == pytest.approx(
        counters.kernel_metrics(naive)["gpu__time_duration.sum"].mean())


def test_localization_counts_edits_inside_the_helper_that_holds_the_stall():
    kernel = "apply(float *, const float *, int, float)"
    helper_stall = Evidence(id="S1", kind="stall", kernel=kernel, text="", stall=StallLine(
        kernel=kernel, file="/gpu/machine/ops.cu", line=2, source="float v = p[i];", reason="stall_long_sb",
        reason_share=0.9, line_share=0.8, samples=100))
    edit = Edit(file="ops.cu", start_line=2, end_line=3, cites=["S1"], new_text="  return __ldg(p + i) * s;")
    assert localization(Proposal(shape="structured", raw="", edits=[edit]), diag(helper_stall),
                        {"ops.cu": HELPER_SRC}) == 1.0  # was 0.0: the lines are in no kernel


def test_launch_citations_are_read_and_an_invented_one_is_a_hallucination():
    """L* ids (the launch configuration) were dropped by an id pattern that knew only R, S, C and K."""
    from runner.proposal.parser import parse_response

    src = "__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\nint main() { k<<<1, 32>>>(0); }\n"
    answer = ("EDIT file=main.cu lines=2-2\n```cuda\nint main() { k<<<4, 256>>>(0); }\n```\n\n"
              "APPLIED:\n- lines 2-2: 256-thread blocks, enough waves (L1, S1)\n"
              "- a grid-stride loop (L9)\n")
    p = parse_response(answer, {"main.cu": src})
    assert p.edits[0].cites == ["L1", "S1"]  # from the APPLIED item naming its lines, launch first
    h = hallucinations(p, ["L1", "S1", "K1"])
    assert h.cited_not_shown == ["L9"]
    assert scores(p, diag(), ["L1", "S1", "K1"], {"main.cu": src}).coverage == 1.0
