"""Validation and timing on CPU with small programs built by the system compiler: the loop is the
same whatever builds the binary."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES

from runner.base.config import OutputSpec, load_config
from runner.base.context import RunContext
from runner.evaluation.measure import time_interleaved, validate
from runner.evaluation.statistics import improvement
from runner.validation.compare import compare

APP = FIXTURES / "evalapp"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
# Tests whose verdicts rest on measured times carry `timing`: they need the CPU to themselves, and
# `make test` runs them after the parallel part.
timing = pytest.mark.timing


class Variants:
    """The evaluation app built with -DVARIANT=<name> (BASE, FAST, WRONG, TOLERANT, NONDET, HANG,
    CRASH, NOOUT, NOISY, STEADY, CLOCKSEED), each on first use."""

    def __init__(self, out: Path):
        self.out = out

    def __getitem__(self, variant: str) -> Path:
        exe = self.out / variant.lower()
        if not exe.is_file():
            subprocess.run(["g++", "-O2", "-std=c++17", f"-DVARIANT={variant}", "-o", str(exe), str(APP / "main.cpp")],
                           check=True, capture_output=True)
        return exe


@pytest.fixture(scope="module")
def exes(tmp_path_factory) -> Variants:
    return Variants(tmp_path_factory.mktemp("bin"))


def config(tmp_path: Path, outputs: str | None = None, evaluation: str = "", app: str = ""):
    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}{app}") + evaluation
    if outputs:
        text = text.replace('    - {path: "{out}", compare: bitwise}', outputs)
    p = tmp_path / "optimas.yml"
    p.write_text(text)
    return load_config(p)


def statuses(v) -> set[str]:
    return {c.status for c in v.cases}


def test_identical_results_pass_on_every_configuration_and_seed(tmp_path, exes):
    v = validate(config(tmp_path), exes["BASE"], exes["FAST"], tmp_path / "work")
    assert v.passed and len(v.cases) == 4  # 2 configurations x 2 seeds
    assert {(c.configuration, c.seed) for c in v.cases} == {("small", 1), ("small", 2), ("large", 1), ("large", 2)}
    assert all(c.modes == ["bitwise"] for c in v.cases)


def test_a_changed_value_fails_bitwise(tmp_path, exes):
    v = validate(config(tmp_path), exes["BASE"], exes["WRONG"], tmp_path / "work")
    assert not v.passed and statuses(v) == {"mismatch"}
    assert "bytes differ from offset 28" in v.cases[0].detail  # value 7, 4 bytes each


def test_tolerance_mode_accepts_small_differences(tmp_path, exes):
    bitwise = validate(config(tmp_path), exes["BASE"], exes["TOLERANT"], tmp_path / "w1")
    assert statuses(bitwise) == {"mismatch"}
    ulp = config(tmp_path, '    - {path: "{out}", compare: tolerance, format: raw, dtype: float32, ulps: 1}')
    v = validate(ulp, exes["BASE"], exes["TOLERANT"], tmp_path / "w2")
    assert v.passed and v.cases[0].modes == ["tolerance"]
    rel = config(tmp_path, '    - {path: "{out}", compare: tolerance, format: raw, rtol: 1.0e-6}')
    assert validate(rel, exes["BASE"], exes["TOLERANT"], tmp_path / "w3").passed
    tight = config(tmp_path, '    - {path: "{out}", compare: tolerance, format: raw, rtol: 1.0e-9}')
    assert not validate(tight, exes["BASE"], exes["TOLERANT"], tmp_path / "w4").passed


def test_a_program_seeded_from_the_clock_is_judged_once_app_pin_seeds_preloads_the_seed_library(tmp_path, exes):
    """CLOCKSEED draws its inputs from srand(tv_usec) and std::random_device: two runs differ, so no
    candidate can be judged; with app.pin_seeds every run gets one seed, and a candidate is judged."""
    unpinned = validate(config(tmp_path), exes["CLOCKSEED"], exes["CLOCKSEED"], tmp_path / "w1")
    assert "baseline-failed" in statuses(unpinned)
    pinned = config(tmp_path, app="\n  pin_seeds: true")
    same = validate(pinned, exes["CLOCKSEED"], exes["CLOCKSEED"], tmp_path / "w2")
    assert same.passed and len(same.cases) == 4
    assert statuses(validate(pinned, exes["CLOCKSEED"], exes["BASE"], tmp_path / "w3")) == {"mismatch"}


def test_nondeterministic_candidate_is_rejected(tmp_path, exes):
    v = validate(config(tmp_path), exes["BASE"], exes["NONDET"], tmp_path / "work")
    assert statuses(v) <= {"nondeterministic", "mismatch"} and "nondeterministic" in statuses(v)


def test_an_original_whose_results_vary_run_to_run_is_said_to_be_so_not_the_candidate(tmp_path, exes):
    """Before a candidate is called wrong, the original runs once more: when it does not repeat its
    own results, the case says so (the original, not the candidate) and how to check it instead."""
    v = validate(config(tmp_path), exes["NONDET"], exes["NONDET"], tmp_path / "work")
    # NONDET's first value is the clock in ns modulo 1000: two runs agree by chance once in 1000
    assert "baseline-failed" in statuses(v) <= {"baseline-failed", "nondeterministic", "mismatch"}
    detail = next(c.detail for c in v.cases if c.status == "baseline-failed")
    assert detail.startswith("the original program's results differ between two runs (")
    assert "declare a tolerance" in detail and "give it a seed ({seed})" in detail
    from runner.evaluation.stage import EvaluationResult
    from runner.flows.loop import candidate_was_wrong
    assert not candidate_was_wrong(EvaluationResult(verdict="invalid", validation=v))  # no point asking again
    wrong = validate(config(tmp_path), exes["BASE"], exes["WRONG"], tmp_path / "w2")
    assert statuses(wrong) == {"mismatch"}  # the original repeats itself: the candidate is wrong


@pytest.mark.slow
def test_hung_candidate_is_killed(tmp_path, exes):
    lc = config(tmp_path)
    text = lc.path.read_text().replace("timeout_s: 5", "timeout_s: 1").replace("seeds: [1, 2]", "seeds: [1]")
    lc.path.write_text(text)
    v = validate(load_config(lc.path), exes["BASE"], exes["HANG"], tmp_path / "work")
    assert statuses(v) == {"timeout"} and v.cases[0].detail == "killed after 1 s"


def test_crash_and_missing_output_fail(tmp_path, exes):
    crash = validate(config(tmp_path), exes["BASE"], exes["CRASH"], tmp_path / "w1")
    assert statuses(crash) == {"failed"} and crash.cases[0].detail.startswith("exit 3: FAIL")
    noout = validate(config(tmp_path), exes["BASE"], exes["NOOUT"], tmp_path / "w2")
    assert statuses(noout) == {"missing-output"}  # the poisoned file was left as it was


@timing
def test_a_faster_candidate_is_a_significant_improvement(tmp_path, exes):
    t = time_interleaved(config(tmp_path, evaluation="  timing_precision: 0\n"), exes["BASE"], exes["FAST"])
    assert t.metric == "kernel_ms" and len(t.baseline) == len(t.candidate) == 7 and t.stop == "fixed"
    assert t.result.faster and t.result.improvement > 1.0  # about 4x less work
    assert t.result.ci_low > 0


@timing
def test_a_noisy_candidate_is_not_called_an_improvement(tmp_path, exes):
    t = time_interleaved(config(tmp_path), exes["BASE"], exes["NOISY"])
    # its times are scaled by uniform(1, 3): a CV near 0.29 by construction, whatever the machine adds
    assert not t.result.faster and t.result.candidate_cv > 0.1
    assert "noise: baseline CV" in t.result.summary()
    same = improvement([10, 11, 9, 10.5, 9.5, 10.2, 9.8], [10.1, 9.9, 10.4, 9.6, 10.3, 9.7, 10.0])
    assert not same.significant and not same.faster and same.ci_low < 0 < same.ci_high


@timing
def test_timing_adds_pairs_while_the_interval_is_too_wide(tmp_path, exes):
    """A noisy candidate never gives a 1%-wide interval: pairs are added up to the maximum."""
    lc = config(tmp_path, evaluation="  max_timed_runs: 12\n  timing_precision: 0.01\n")
    t = time_interleaved(lc, exes["BASE"], exes["NOISY"])
    assert t.stop == "max-runs" and len(t.baseline) == len(t.candidate) == len(t.baseline_wall_ms) == 12
    assert t.result.samples == 12 and t.result.ratio_width > 0.01
    assert "12 runs each" in t.result.summary()


@timing
def test_timing_stops_at_the_minimum_when_the_interval_is_precise_enough(tmp_path, exes):
    lc = config(tmp_path, evaluation="  max_timed_runs: 12\n  timing_precision: 0.99\n")
    t = time_interleaved(lc, exes["STEADY"], exes["STEADY"])  # no timer noise: the interval is precise at once
    assert t.stop == "precise" and len(t.baseline) == 7 and t.result.ratio_width <= 0.99


def test_each_timed_pair_runs_in_the_other_order_from_the_one_before(tmp_path):
    log = tmp_path / "order.log"
    sides = {}
    for side in ("B", "C"):
        sides[side] = tmp_path / side
        sides[side].write_text(f"#!/bin/sh\necho {side} >> {log}\necho 'RESULT kernel_ms=1.0 PASS'\n")
        sides[side].chmod(0o755)
    lc = config(tmp_path, evaluation="  timing_precision: 0\n  timed_runs: 4\n")
    t = time_interleaved(lc, sides["B"], sides["C"])
    assert log.read_text().split() == ["B", "C", "C", "B", "B", "C", "C", "B", "B", "C"]  # a warm-up pair, then 4
    assert len(t.baseline) == len(t.candidate) == 4 and t.warmup_pairs == 1
    # after validation has run both on this command, its runs are the warm-up: no untimed pair
    log.unlink()
    t = time_interleaved(lc, sides["B"], sides["C"], warm=True)
    assert log.read_text().split() == ["B", "C", "C", "B", "B", "C", "C", "B"] and t.warmup_pairs == 0
    # warm-up asked for beyond one: validation's runs count as the first only
    log.unlink()
    lc = config(tmp_path, evaluation="  timing_precision: 0\n  timed_runs: 2\n  warmup_runs: 3\n")
    t = time_interleaved(lc, sides["B"], sides["C"], warm=True)
    assert len(log.read_text().split()) == 2 * (2 + 2) and t.warmup_pairs == 2 and len(t.baseline) == 2


def test_timing_precision_is_checked_on_the_speed_ratio():
    r = improvement([20.0] * 5 + [21.0] * 5, [10.0] * 5 + [10.5] * 5)
    # The bootstrap medians range from 20/10.5 to 21/10: a ratio interval (21/10) / (20/10.5) - 1 wide.
    assert r.ci_low == pytest.approx(20 / 10.5 - 1) and r.ci_high == pytest.approx(21 / 10 - 1)
    assert r.ratio_width == pytest.approx((21 / 10) / (20 / 10.5) - 1)


def test_improvement_statistics_on_known_samples():
    r = improvement([20.0] * 5 + [21.0] * 5, [10.0] * 5 + [10.5] * 5)
    assert r.improvement == pytest.approx(20.5 / 10.25 - 1)
    assert r.faster and r.p_value < 0.01 and r.ci_low > 0.8
    slower = improvement([10.0, 10.2, 10.1, 9.9, 10.0], [20.0, 20.1, 19.9, 20.2, 20.0])
    assert slower.significant and not slower.faster and slower.improvement < 0
    with pytest.raises(ValueError, match="at least 2 samples"):
        improvement([1.0], [1.0, 2.0])


def test_compare_reads_the_benchmarks_sectioned_format():
    def file(values: np.ndarray) -> bytes:
        return b"OPTIMAS-OUTPUT 1\n" + f"u f32 {len(values)}\n".encode() + values.astype(np.float32).tobytes()

    a = file(np.array([1.0, 2.0, 3.0]))
    b = file(np.array([1.0, 2.0, 3.0000002]))
    spec = OutputSpec(path="x", compare="tolerance", format="optimas", rtol=1e-6)
    assert compare(b, a, spec) == (True, "")
    ok, why = compare(b, a, OutputSpec(path="x", compare="tolerance", format="optimas", rtol=1e-9))
    assert not ok and "section 0, value 2" in why


def _proposed(variant: str):
    from runner.proposal.parser import Edit, Proposal
    from runner.proposal.stage import Attempt, ProposeResult

    src = (APP / "main.cpp").read_text()
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if ln == "#define VARIANT BASE")
    new = src.replace("#define VARIANT BASE", f"#define VARIANT {variant}")
    p = Proposal(shape="structured", raw="(hand-written)", edits=[
        Edit(file="main.cpp", start_line=line, end_line=line, new_text=f"#define VARIANT {variant}", cites=["S1"])],
        applied=[f"lines {line}-{line}: less redundant work (S1)"])
    return ProposeResult(status="accepted", diagnostics="PC", proposal=p, diff="(diff)", evidence_ids=["S1"],
                         files={"main.cpp": new}, candidate_dir="candidates/1",
                         attempts=[Attempt(number=1, outcome="accepted", backend="replay", model="hand-written")])


def _diag():
    from runner.analysis.evidence import Diagnostics, GpuInfo

    return Diagnostics(gpu=GpuInfo(name="cpu"), alpha=0.8, kernels=[])


@timing
@pytest.mark.parametrize("variant, verdicts", [("FAST", {"improvement"}), ("WRONG", {"invalid"}),
                                               ("NOISY", {"slower", "no-significant-gain"})])
def test_evaluation_stage_gives_a_verdict_and_a_corpus_record(tmp_path, variant, verdicts):
    import json

    from runner.base.runstore import create_run
    from runner.evaluation.corpus import export
    from runner.evaluation.stage import evaluate

    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}")
    (tmp_path / "optimas.yml").write_text(text + f"runs_dir: {tmp_path / 'runs'}\n")
    lc = load_config(tmp_path / "optimas.yml")
    run = create_run(tmp_path / "runs")
    result = evaluate(RunContext(lc, run), _diag(), _proposed(variant))
    assert result.verdict in verdicts  # NOISY is never faster, usually significantly slower
    assert set(result.seconds) >= {"build", "validate"}
    if variant == "WRONG":  # rejected by validation: never timed
        assert result.timing is None and result.timings == []
    else:  # both configurations timed, the profiled one (small) first; the verdict follows the interval
        assert [t.configuration for t in result.timings] == ["small", "large"]
        r = result.timing.result
        assert r.faster == (r.ci_low > 0) and r.significant == (r.ci_low > 0 or r.ci_high < 0)
        assert result.verdict == ("improvement" if r.ci_low > 0 else "slower" if r.ci_high < 0
                                  else "no-significant-gain")
    saved = json.loads((run.path / "evaluation" / "result.json").read_text())
    assert saved["verdict"] == result.verdict
    corpus = tmp_path / "runs" / "corpus.jsonl"
    (rec,) = [json.loads(ln) for ln in corpus.read_text().splitlines()]
    for key in ("App", "Prompt", "LLM", "HW", "SW", "Compile", "Exec", "Opt_Code", "Applied", "Ignored", "Errors",
                "Base_RT", "Opt_RT", "diagnostics", "iteration", "improvement", "ci_low", "ci_high", "ear_coverage",
                "config_sha256", "run_id"):
        assert key in rec
    assert rec["App"] == "evalapp" and rec["LLM"] == "replay:hand-written" and rec["run_id"] == run.id
    assert rec["Exec"] == (variant != "WRONG") and rec["ear_coverage"] == 1.0
    n = export(corpus, tmp_path / "corpus.parquet", "parquet")
    import pandas as pd

    assert n == 1 and pd.read_parquet(tmp_path / "corpus.parquet")["App"].tolist() == ["evalapp"]


@pytest.mark.slow
def test_direction_checks_of_a_reprofile_land_in_the_result_and_the_corpus(tmp_path):
    import json

    from runner.base.errors import OptimasError
    from runner.base.runstore import create_run
    from runner.evaluation.ear import DirectionCheck
    from runner.evaluation.stage import add_direction, evaluate

    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}")
    (tmp_path / "optimas.yml").write_text(text + f"runs_dir: {tmp_path / 'runs'}\n")
    lc = load_config(tmp_path / "optimas.yml")
    other = create_run(tmp_path / "runs")
    evaluate(RunContext(lc, other), _diag(), _proposed("WRONG"))
    run = create_run(tmp_path / "runs")
    evaluate(RunContext(lc, run), _diag(), _proposed("FAST"))
    checks = [DirectionCheck(id="S1", quantity="stall_long_sb share at line 9", expected="fall", before=0.6,
                             after=0.2, consistent=True),
              DirectionCheck(id="R1", quantity="memory utilization (memory-bound)", expected="rise", before=0.8,
                             after=0.7, consistent=False),
              DirectionCheck(id="C1", quantity="l1tex hit rate", expected="rise", before=0.5, after=None,
                             consistent=None)]
    corpus = tmp_path / "runs" / "corpus.jsonl"
    scored = add_direction(RunContext(lc, run, corpus=corpus), checks)
    assert scored.ear.directional == 0.5  # the unmeasurable check is not judged
    saved = json.loads((run.path / "evaluation" / "result.json").read_text())
    assert saved["ear"]["directional"] == 0.5 and [c["id"] for c in saved["ear"]["checks"]] == ["S1", "R1", "C1"]
    records = {r["run_id"]: r for r in map(json.loads, corpus.read_text().splitlines())}
    assert records[run.id]["ear_directional"] == 0.5 and records[other.id]["ear_directional"] is None
    assert records[run.id]["verdict"] == saved["verdict"]  # the rest of the record is kept
    with pytest.raises(OptimasError, match="no record of run"):
        add_direction(RunContext(lc, run, corpus=corpus, iteration=2), checks)


def test_corpus_updates_do_not_lose_concurrent_appends(tmp_path):
    import json
    import threading

    from runner.evaluation.corpus import append_record, update_record

    corpus = tmp_path / "corpus.jsonl"
    append_record(corpus, {"run_id": "r0", "iteration": 1, "ear_directional": None})

    def appender(n):
        for i in range(50):
            append_record(corpus, {"run_id": f"a{n}-{i}", "iteration": 1})

    threads = [threading.Thread(target=appender, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for k in range(50):
        update_record(corpus, "r0", 1, {"ear_directional": k / 50})
    for t in threads:
        t.join()
    records = [json.loads(ln) for ln in corpus.read_text().splitlines()]
    assert len(records) == 151 and records[0]["ear_directional"] == 49 / 50

    from runner.base.errors import OptimasError

    append_record(corpus, {"run_id": "r9", "iteration": 1})
    corpus.write_text(corpus.read_text() + "{not json\n")
    before = corpus.read_text()
    with pytest.raises(OptimasError, match="line 153 is not JSON"):
        update_record(corpus, "r9", 1, {"ear_directional": 1.0})
    assert corpus.read_text() == before


def test_loop_control_stops_and_keeps_the_best():
    from runner.flows.loop import IterationSummary, LoopResult, cumulative, next_step

    def it(k, verdict, gain=None):
        return IterationSummary(iteration=k, run_dir=f"r{k}", verdict=verdict, improvement=gain)

    assert next_step([it(1, "improvement", 0.2)], 3) is None
    assert next_step([it(1, "improvement", 0.2), it(2, "no-significant-gain", 0.01)], 3) == \
        "iteration 2: no significant gain"
    assert next_step([it(1, "improvement", 0.2), it(2, "improvement", 0.1)], 2) == \
        "reached evaluation.max_iterations (2)"
    best, total = cumulative([it(1, "improvement", 0.2), it(2, "improvement", 0.1), it(3, "slower", -0.05)])
    assert best == 2 and total == pytest.approx(1.2 * 1.1 - 1)
    assert cumulative([it(1, "invalid")]) == (None, None)
    # an invalid candidate, asked again: the baseline did not move, so the chain goes on past it
    best, total = cumulative([it(1, "improvement", 0.2), it(2, "invalid"), it(3, "improvement", 0.1)])
    assert best == 3 and total == pytest.approx(1.2 * 1.1 - 1)
    assert cumulative([it(1, "invalid"), it(2, "improvement", 0.3)]) == (2, pytest.approx(0.3))
    # what the PR headline counts: the improvements the kept code compounds, not the rejected one
    chain = [it(1, "improvement", 0.2), it(2, "invalid"), it(3, "improvement", 0.1), it(4, "slower", -0.05)]
    assert LoopResult(iterations=chain, best=3, cumulative_improvement=0.32, stopped_because="").kept == 2
    none_kept = LoopResult(iterations=[it(1, "invalid")], best=None, cumulative_improvement=None, stopped_because="")
    assert none_kept.kept == 0


def test_a_rejected_candidate_is_described_to_the_next_attempt():
    from runner.evaluation.measure import CaseResult, Validation
    from runner.evaluation.stage import EvaluationResult
    from runner.flows.loop import MAX_REJECTED_DIFF, candidate_was_wrong, rejection_note
    from runner.proposal.stage import ProposeResult

    bad = CaseResult(configuration="default", seed=1, status="mismatch",
                     detail="GPU result 1 (cudaMemcpy, 16000000 bytes) differs from the baseline's")
    result = EvaluationResult(verdict="invalid", validation=Validation(passed=False, cases=[bad]))
    diff = "--- a/k.cuh\n+++ b/k.cuh\n@@ -1 +1 @@\n-x\n+y\n"
    note = rejection_note(result, ProposeResult(status="accepted", diagnostics="PC", diff=diff))
    assert note == ("It compiled and ran, but its results are not the original program's: default/seed 1: "
                    "mismatch (GPU result 1 (cudaMemcpy, 16000000 bytes) differs from the baseline's).\n"
                    "Its change was:\n```diff\n" + diff.rstrip() + "\n```")
    assert candidate_was_wrong(result)
    base = CaseResult(configuration="default", seed=2, status="baseline-failed", detail="exit code 1")
    assert not candidate_was_wrong(EvaluationResult(verdict="invalid", validation=Validation(passed=False,
                                                                                            cases=[bad, base])))
    long = rejection_note(result, ProposeResult(status="accepted", diagnostics="PC", diff="+x\n" * 5000))
    assert len(long) < MAX_REJECTED_DIFF + 400 and "the rest of the diff left out" in long


def test_a_candidate_that_only_rounded_otherwise_is_told_why_that_happens():
    import numpy as np

    from runner.evaluation.measure import CaseResult, Validation
    from runner.evaluation.stage import EvaluationResult
    from runner.flows.loop import rejection_note
    from runner.proposal.stage import ProposeResult
    from runner.validation.compare import first_difference

    base = np.linspace(1, 2, 64, dtype=np.float32)
    rounded = base.copy()
    rounded[3] = np.nextafter(np.nextafter(rounded[3], np.float32(3)), np.float32(3))  # 2 ulps
    rounded[9] = np.nextafter(rounded[9], np.float32(0))
    wrong = base.copy()
    wrong[5] = 0.0

    def case(values: np.ndarray, status: str = "mismatch") -> CaseResult:
        what = "GPU result 1 (cudaMemcpy, 256 bytes) differs from the baseline's"
        where, max_ulps = first_difference(values.tobytes(), base.tobytes(), "float32")
        return CaseResult(configuration="small", seed=1, status=status, detail=what + where, max_ulps=max_ulps)

    def note(*cases: CaseResult) -> str:
        result = EvaluationResult(verdict="invalid", validation=Validation(passed=False, cases=list(cases)))
        return rejection_note(result, ProposeResult(status="accepted", diagnostics="PC", diff="+x\n"))

    told = note(case(rounded), case(base, "pass"))
    assert "2 of 64 values differ, by 1 to 2 ulps)." in told
    assert "Every value it got wrong is within 2 ulps of the original's, as when the same computation is " in told
    assert "nvcc fuses a multiply and an add into one FMA" in told and told.endswith("```")
    assert "rounded otherwise" not in note(case(wrong))  # 0.0 for 1.08: a wrong value, not rounding
    counts = np.arange(64, dtype=np.int32)
    miscounted = counts.copy()
    miscounted[7] += 1  # a count off by one, read as float32: "1 ulp" between two subnormals
    detail, max_ulps = first_difference(miscounted.tobytes(), counts.tobytes(), "float32")
    assert detail.endswith("by 1 to 1 ulps (all subnormal: probably not float32 data)") and max_ulps is None
    off_by_one = CaseResult(configuration="small", seed=1, status="mismatch", detail="GPU result 1 differs" + detail)
    assert "rounded otherwise" not in note(off_by_one)
    assert "rounded otherwise" not in note(case(rounded), case(base, "nondeterministic"))
    assert Validation(passed=True, cases=[case(base, "pass")]).rounding_only() is None


def test_the_pr_summary_of_a_closed_loop_shows_each_iteration_and_the_kept_ones_measurements(tmp_path):
    from bot.outcome import loop_outcome
    from bot.summary import summary_text
    from runner.base.runstore import create_run
    from runner.evaluation.stage import evaluate
    from runner.flows.loop import IterationSummary, LoopResult
    from runner.flows.optimize import Optimization

    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}")
    (tmp_path / "optimas.yml").write_text(text + f"runs_dir: {tmp_path / 'runs'}\n")
    lc = load_config(tmp_path / "optimas.yml")
    run = create_run(tmp_path / "runs")
    run.write_text("analysis", "diagnostics.json", _diag().model_dump_json())
    result = evaluate(RunContext(lc, run), _diag(), _proposed("FAST"))
    r = result.timing.result
    second = create_run(run.path / "iterations")
    loop = LoopResult(iterations=[
        IterationSummary(iteration=1, run_dir=str(run.path), verdict=result.verdict, improvement=r.improvement,
                         ci_low=r.ci_low, ci_high=r.ci_high, directional=0.5),
        IterationSummary(iteration=2, run_dir=str(second.path), verdict="no-candidate")],
        best=1, cumulative_improvement=r.improvement, stopped_because="iteration 2: no usable candidate (x)")
    # the kept iteration's evaluation is shown; no kept sources given: nothing to suggest
    out = loop_outcome(Optimization("loop", run, _diag(), {}, loop=loop, shown=result), lc, tmp_path)
    assert out.postable is False and out.edits == () and out.run == run.id
    assert out.per_config[0] == (f"iteration 1: {result.verdict} {r.improvement:+.1%} ({r.ci_low:+.1%} to "
                                    f"{r.ci_high:+.1%}), directional consistency 0.50")
    assert out.per_config[1] == "iteration 2: no-candidate"
    assert [line.split(":")[0] for line in out.per_config[2:]] == ["iteration 1, small", "iteration 1, large"]
    assert out.ear.coverage == 1.0 and out.validation == result.validation.summary()
    text = summary_text(out, "a" * 40, False)
    assert "iteration 1, large:" in text and "EAR: coverage 1.00" in text and "Validation:" in text


def test_a_closed_loop_publishes_what_it_holds_not_what_the_program_wrote_into_its_run(tmp_path):
    """The program under test runs again after its evaluation (the re-profile), inside the run
    folder's sandbox: it can rewrite result.json, diagnostics.json and the kept candidate's files,
    or point candidate_dir outside the job. What is published is the loop's own, in memory."""
    import json

    from runner.base.runstore import create_run
    from runner.evaluation.stage import EvaluationResult, evaluate
    from runner.flows.loop import IterationSummary, LoopResult, LoopRun
    from runner.flows.optimize import published

    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}")
    (tmp_path / "optimas.yml").write_text(text + f"runs_dir: {tmp_path / 'runs'}\n")
    lc = load_config(tmp_path / "optimas.yml")
    run = create_run(tmp_path / "runs")
    result = evaluate(RunContext(lc, run), _diag(), _proposed("FAST"))
    original = {"main.cpp": (APP / "main.cpp").read_text()}
    kept = {"main.cpp": original["main.cpp"] + "// the candidate\n", "elsewhere.h": "// not the app's\n"}
    loop = LoopResult(iterations=[IterationSummary(iteration=1, run_dir=str(run.path), verdict=result.verdict)],
                      best=1, cumulative_improvement=0.5, stopped_because="reached evaluation.max_iterations (1)")
    # what the program wrote afterwards: a forged verdict, forged evidence, a candidate folder outside
    outside = tmp_path / "outside" / "src"
    outside.mkdir(parents=True)
    (outside / "main.cpp").write_text("// the operator's file\n")
    run.write_text("evaluation", "result.json", EvaluationResult(verdict="improvement").model_dump_json())
    run.write_text("candidates", "result.json", json.dumps({"candidate_dir": str(outside.parent)}))
    forged = _diag().model_copy(update={"alpha": 0.1})
    run.write_text("analysis", "diagnostics.json", forged.model_dump_json())
    out = published(LoopRun(loop, _diag(), {1: result}, {1: kept}), run, original)
    assert out.final == {"main.cpp": kept["main.cpp"]}  # the candidate's own, only the app's files
    assert out.shown is result and out.diag == _diag() and out.diag.alpha != forged.alpha
    none_kept = loop.model_copy(update={"best": None})
    assert published(LoopRun(none_kept, _diag(), {1: result}, {1: kept}), run, original).final is None


def test_a_source_tree_is_built_once_per_run(tmp_path, monkeypatch):
    """The proposal and evaluation stages share the run's build cache: the same sources, command and
    compiler are compiled once, and a later stage that needs the binary gets it from there."""
    from runner.base.runstore import create_run
    from runner.toolchain.builder import compile_candidate

    monkeypatch.delenv("OPTIMAS_BUILD_CACHE", raising=False)  # the test run's shared cache, not the run's
    count = tmp_path / "builds.txt"
    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}").replace(
        "build: g++ -O2 -std=c++17 -o {exe} main.cpp",
        f"build: sh -c 'echo built >> {count} && g++ -O2 -std=c++17 -o \"$0\" main.cpp' {{exe}}")
    (tmp_path / "optimas.yml").write_text(text)
    lc = load_config(tmp_path / "optimas.yml")
    run = create_run(tmp_path / "runs")
    src = {"main.cpp": (APP / "main.cpp").read_text()}
    first = compile_candidate(lc, src, "sm_90", cache=run.build_cache)  # the proposal stage: no binary asked
    exe = tmp_path / "baseline"
    again = compile_candidate(lc, src, "sm_90", exe=exe, cache=run.build_cache)  # the evaluation stage
    assert first.ok and again.ok and exe.is_file() and count.read_text() == "built\n"
    ran = subprocess.run([str(exe), "--config", "small"], capture_output=True, text=True)
    assert ran.stdout.startswith("kernel_ms=")
    changed = {"main.cpp": src["main.cpp"] + "\n// another tree\n"}
    assert compile_candidate(lc, changed, "sm_90", cache=run.build_cache).ok
    assert count.read_text() == "built\nbuilt\n"
    assert list(run.build_cache.iterdir())  # kept inside the run


def test_without_the_tracer_timing_falls_back_to_wall_time_and_says_why(tmp_path, exes, caplog):
    from runner.evaluation.measure import EvaluationError
    from runner.tracing.library import TracerError

    def cfg(extra: str):
        text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}")
        text = text.replace('  kernel_time_regex: "kernel_ms=([0-9.]+)"\n', "")
        (tmp_path / "c.yml").write_text(text + "profiling:\n  nvcc: no-such-nvcc\n" + extra)
        return load_config(tmp_path / "c.yml")

    with caplog.at_level("WARNING", logger="runner.evaluation.measure"):
        t = time_interleaved(cfg("evaluation:\n  timing_precision: 0\n  timed_runs: 2\n"), exes["BASE"], exes["FAST"])
    assert t.metric == "wall_ms" and len(t.baseline) == 2
    assert "nvcc not found ('no-such-nvcc' is not on PATH)" in caplog.text
    assert "process wall time instead" in caplog.text
    with pytest.raises(TracerError, match="nvcc not found"):  # asked for by name: no substitute
        time_interleaved(cfg("evaluation:\n  timer: tracer\n"), exes["BASE"], exes["FAST"])
    cfg("")  # writes c.yml without a timer setting
    text = (tmp_path / "c.yml").read_text().replace("  outputs:\n", "  gpu_results: {compare: bitwise}\n  outputs:\n")
    (tmp_path / "c.yml").write_text(text)
    with pytest.raises(EvaluationError, match="Without the tracer the program's GPU results cannot be compared"):
        validate(load_config(tmp_path / "c.yml"), exes["BASE"], exes["FAST"], tmp_path / "work")


@pytest.mark.parametrize("regex, extra, text, ms", [
    # one time, in ms: the benchmark apps' form
    (r"kernel_ms=([0-9.]+)", {}, "RESULT app=x kernel_ms=2.5000 wall_ms=9 PASS", 2.5),
    # several lines, each with its own unit, summed
    (r"time: ([0-9.,]+) ?(?P<unit>ms|us|s)\b", {}, "k1 time: 250 us\nk2 time: 1.5 ms\ntotal time: 0.002 s\n", 3.75),
    # seconds, no unit printed: the config says so; the mean of the repetitions
    (r"Time= ([0-9.]+)", {"kernel_time_unit": "s", "kernel_time_aggregate": "mean"}, "Time= 0.001\nTime= 0.003\n", 2.0),
    (r"Processing time: ([0-9.eE+-]+) \(ms\)", {"kernel_time_aggregate": "last"},
     "Processing time: 1.0e+01 (ms)\nProcessing time: 4.5 (ms)\n", 4.5),
    (r"kernel_ms=([0-9.]+)", {}, "PASS\n", None),
])
def test_printed_kernel_times_are_read_with_units_and_combined(regex, extra, text, ms):
    from runner.base.config import AppConfig
    from runner.evaluation.measure import printed_kernel_ms

    got = printed_kernel_ms(text, AppConfig(kernel_time_regex=regex, **extra))
    assert got == (None if ms is None else pytest.approx(ms))


def test_an_unknown_printed_unit_is_named():
    from runner.base.config import AppConfig
    from runner.evaluation.measure import EvaluationError, printed_kernel_ms

    with pytest.raises(EvaluationError, match="captured the unit 'cycles'"):
        printed_kernel_ms("t=5 cycles", AppConfig(kernel_time_regex=r"t=([0-9]+) (?P<unit>\w+)"))


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("candidate, status, says", [
    ('echo "checksum = 10.0000001"; echo "Test passed"', "pass", ""),
    ('echo "checksum = 10.5"; echo "Test passed"', "mismatch",
     "app.stdout.values: value 1 is 10.5, the baseline's 10.0"),
    ('echo "checksum = 10.0"; echo "Result = FAIL"', "failed", "matches app.stdout.fail_pattern: 'Result = FAIL'"),
    ('echo "checksum = 10.0"', "failed", "does not match app.stdout.pass_pattern"),
    ('echo "checksum = 10.0"; echo "checksum = 3"; echo "Test passed"', "mismatch", "2 values printed, the baseline"),
    ('echo "checksum = 10.0"; echo "Test passed"; exit 3', "failed", "exit 3"),
])
def test_a_program_that_only_prints_is_validated_by_its_output(tmp_path: Path, candidate: str, status: str, says: str):
    """No output file, no GPU results: the printed verdict, checksum and exit code judge it."""
    from runner.evaluation.measure import validate

    (tmp_path / "c.yml").write_text(
        "app:\n  run: '{exe} {config}'\n  configurations: [small, large]\n  seeds: [1]\n"
        "  gpu_results: {compare: 'off'}\n"
        "  stdout: {pass_pattern: 'Test passed', fail_pattern: 'FAIL', values: 'checksum = ([-0-9.eE+]+)', "
        "rtol: 1.0e-6}\n")
    lc = load_config(tmp_path / "c.yml")
    base = _script(tmp_path / "base", 'echo "checksum = 10.0"; echo "Test passed"\n')
    cand = _script(tmp_path / "cand", candidate + "\n")
    v = validate(lc, base, cand, tmp_path / "work")
    assert {c.status for c in v.cases} == {status} and v.passed == (status == "pass")
    assert all(says in c.detail for c in v.cases) and v.cases[0].modes == ["stdout"]


def test_a_baseline_that_fails_its_own_check_is_named(tmp_path: Path):
    from runner.evaluation.measure import validate

    (tmp_path / "c.yml").write_text("app:\n  run: '{exe}'\n  configurations: [default]\n"
                                    "  gpu_results: {compare: 'off'}\n  stdout: {fail_pattern: 'FAILED'}\n")
    exe = _script(tmp_path / "p", 'echo "3 of 4 tests FAILED"\n')
    v = validate(load_config(tmp_path / "c.yml"), exe, exe, tmp_path / "work")
    assert [c.status for c in v.cases] == ["baseline-failed"]
    assert v.cases[0].detail.startswith("the original program fails its own printed check (the output matches "
                                        "app.stdout.fail_pattern: '3 of 4 tests FAILED'), with no change made")


def test_configurations_give_their_own_values_and_a_self_seeding_program_runs_once(tmp_path: Path):
    from runner.evaluation.measure import validate

    (tmp_path / "c.yml").write_text(
        "app:\n  run: '{exe} {n} {iters}'\n  seeds: [1, 2, 3]\n  gpu_results: {compare: 'off'}\n"
        "  stdout: {values: 'sum=([0-9]+)'}\n"
        "  configurations:\n    small: {n: 1024, iters: 10}\n    large: {n: 65536, iters: 20}\n")
    lc = load_config(tmp_path / "c.yml")
    log = tmp_path / "args.log"
    exe = _script(tmp_path / "p", f'echo "$@" >> {log}; echo "sum=$1"\n')
    v = validate(lc, exe, exe, tmp_path / "work")
    assert v.passed and [(c.configuration, c.seed) for c in v.cases] == [("small", 1), ("large", 1)]
    # per configuration: the baseline once and the candidate twice, with that configuration's values
    assert log.read_text().splitlines() == ["1024 10"] * 3 + ["65536 20"] * 3


def test_the_summary_says_which_rule_decides():
    """The verdict is the interval's; the permutation p-value is printed for reference only, so a
    p of 0.05 next to 'significant' is not read as a contradiction (issue #15, item 8)."""
    rng = np.random.default_rng(3)
    base = 10.0 + rng.normal(0, 0.05, 5)
    faster = improvement(base, base / 1.2, confidence=0.95, seed=1)
    same = improvement(base, base * rng.normal(1.0, 0.05, 5), confidence=0.95, seed=1)
    assert faster.significant and "significant: the interval excludes 0; permutation test p=" in faster.summary()
    assert not same.significant and "not significant: the interval includes 0" in same.summary()
    assert "for reference" in faster.summary()


def test_a_gain_too_small_to_matter_is_not_called_an_improvement():
    """matrixMul on the H200: +0.07% with an interval of +0.068% to +0.082% was an 'improvement'.
    Below evaluation.min_improvement (1% by default) it is no significant gain, and says why."""
    from runner.evaluation.stage import timing_verdict

    base = [1.0000, 1.0001, 0.9999, 1.0000, 1.0001]
    tiny = improvement(base, [x / 1.0007 for x in base])
    assert tiny.faster
    verdict, reason = timing_verdict(tiny, 0.01)
    assert verdict == "no-significant-gain"
    assert reason == "faster, but by less than evaluation.min_improvement (+0.07% < 1%)"
    assert timing_verdict(tiny, 0.0) == ("improvement", "")
    assert timing_verdict(tiny, 0.005)[1].endswith("(+0.07% < 0.5%)")
    assert timing_verdict(improvement(base, [x / 1.05 for x in base]), 0.01) == ("improvement", "")
    assert timing_verdict(improvement(base, [x * 1.05 for x in base]), 0.01) == ("slower", "")
    noisy = improvement([1.0, 1.2, 0.9, 1.1, 1.0], [1.1, 0.9, 1.0, 1.2, 1.0])
    assert timing_verdict(noisy, 0.01) == ("no-significant-gain", "")


def test_a_bitwise_output_mismatch_names_the_first_differing_byte():
    spec = OutputSpec(path="out.bin", compare="bitwise")
    a = bytes(range(200)) * 100
    b = bytearray(a)
    b[12_345] ^= 1
    assert compare(a, bytes(b), spec) == (False, "bytes differ from offset 12345 (20000 vs 20000 bytes)")
    assert compare(a, a[:500], spec) == (False, "bytes differ from offset 500 (20000 vs 500 bytes)")
    assert compare(a, a, spec) == (True, "")


def test_validation_says_the_results_repeat_only_when_every_case_matched_bit_for_bit():
    from runner.evaluation.measure import CaseResult, Validation

    def case(**kw) -> CaseResult:
        return CaseResult(**{"configuration": "small", "seed": 1, "status": "pass", "modes": ["gpu-results:bitwise"],
                             "gpu_results": "bitwise", **kw})

    assert Validation(passed=True, cases=[case(), case(seed=2)]).results_repeat()
    assert not Validation(passed=True, cases=[]).results_repeat()
    # held within rounding of an original whose own results vary: not a repeat bit for bit
    assert not Validation(passed=True, cases=[case(), case(original_ulps=3)]).results_repeat()
    # judged by output files or exit code only: the GPU results were not compared
    assert not Validation(passed=True, cases=[case(modes=["bitwise"], gpu_results=None)]).results_repeat()
    # compared within tolerances: not bit for bit
    assert not Validation(passed=True, cases=[case(gpu_results="tolerance")]).results_repeat()
    assert not Validation(passed=False, cases=[case(), case(status="mismatch")]).results_repeat()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_build_that_depends_on_the_configuration_is_made_once_per_configuration(tmp_path, monkeypatch):
    """Programs whose sizes are compile-time macros (-D{config}_DATASET, -DN={n}): each configuration
    gets its own baseline and candidate binaries, built once each and cached apart."""
    from runner.evaluation.stage import build_binaries
    from runner.toolchain.builder import Builder

    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    prog = tmp_path / "prog"
    prog.mkdir()
    kernel = "__global__ void k(float* a) { a[threadIdx.x] = N; }\nint main() { return 0; }\n"
    (prog / "k.cu").write_text(kernel)
    (prog / "optimas.yml").write_text(
        "app:\n  name: sized\n  workdir: .\n  sources: [k.cu]\n"
        "  build: 'nvcc -o {exe} -D{config}_DATASET -DN={n} k.cu'\n  run: '{exe}'\n"
        "  configurations: {SMALL: {n: 1}, LARGE: {n: 4}}\n  profile_configuration: LARGE\n")
    lc = load_config(prog / "optimas.yml")
    assert lc.config.app.build_configuration() == "LARGE" and lc.config.app.build_configuration("SMALL") == "SMALL"
    faster = {"k.cu": kernel.replace("= N;", "= N + 0;")}
    cache = tmp_path / "builds"
    exes, failed = build_binaries(Builder(lc, "sm_90", cache), {"k.cu": kernel}, faster, tmp_path / "eval")
    assert failed == "" and set(exes) == {None, "SMALL", "LARGE"} and exes[None] == exes["LARGE"]
    assert exes["SMALL"][0].read_bytes() != exes["LARGE"][0].read_bytes()  # -DN=1 against -DN=4
    logs = {p.name for p in (tmp_path / "eval").glob("*-build.log")}
    assert logs == {"baseline-SMALL-build.log", "candidate-SMALL-build.log", "baseline-LARGE-build.log",
                    "candidate-LARGE-build.log"}
    assert "-DSMALL_DATASET -DN=1" in (tmp_path / "eval" / "baseline-SMALL-build.log").read_text()
    again = Builder(lc, "sm_90", cache).compile({"k.cu": kernel}, configuration="SMALL")
    assert again.ok and again.cached  # one build per configuration, cached apart
    # one build for every configuration: one pair, as before
    (prog / "optimas.yml").write_text((prog / "optimas.yml").read_text().replace(" -D{config}_DATASET -DN={n}",
                                                                                  " -DN=2"))
    plain, _ = build_binaries(Builder(load_config(prog / "optimas.yml"), "sm_90", cache), {"k.cu": kernel}, faster,
                              tmp_path / "eval2")
    assert set(plain) == {None}


def test_a_relative_output_file_is_read_where_the_program_wrote_it(tmp_path, monkeypatch):
    """app.outputs paths without {out} are the program's, relative to app.workdir where it runs, not
    to wherever Optimas was started."""
    from runner.evaluation.measure import _outputs

    (tmp_path / "app").mkdir()
    (tmp_path / "optimas.yml").write_text("app: {name: x, workdir: app, outputs: [{path: result.bin}, "
                                          "{path: '{out}'}]}\n")
    monkeypatch.chdir(tmp_path)
    paths = [p for _, p in _outputs(load_config(tmp_path / "optimas.yml"), tmp_path / "runs" / "b.out")]
    assert paths == [tmp_path / "app" / "result.bin", tmp_path / "runs" / "b.out"]
