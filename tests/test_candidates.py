"""Several candidates per iteration (issue #30, llm.candidates): N answers to one prompt, proposed in
parallel, each evaluated, the best kept and every one recorded."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import REPO
from test_evaluation import APP, _diag, _proposed

from runner.base.config import load_config
from runner.base.context import RunContext
from runner.base.runstore import create_run
from runner.base.sandbox import sandboxed
from runner.flows.candidates import Candidate, evaluate_candidates
from runner.flows.optimize import optimize

BLACKSCHOLES = REPO / "benchmarks/external/cuda-samples/Samples/5_Domain_Specific/BlackScholes/optimas.yml"
CAPTURE = REPO / "benchmarks/replay/captures/BlackScholes-h200"


def _number(run: Path) -> int:
    return json.loads((run / "manifest.json").read_text())["candidate_of"]["candidate"]


def _with_candidates(path: Path, n: int):
    lc = load_config(path)
    llm = lc.config.llm.model_copy(update={"candidates": n, "backend": "replay"})
    return lc.model_copy(update={"config": lc.config.model_copy(update={"llm": llm})})


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_three_replayed_answers_to_one_prompt_are_three_candidates(tmp_path: Path):
    # BlackScholes's recorded H200 capture and its three hand-written answers (benchmarks/replay:
    # streaming hints, 256 and 512 threads per block); no GPU here, so none is evaluated
    lc = _with_candidates(BLACKSCHOLES, 3)
    inputs = {"timing": [CAPTURE / "timing_trace.tsv"], "report": [CAPTURE / "hot0.ncu-rep"],
              "counters": [CAPTURE / "counters" / "scale_1.ncu-rep"]}
    opt = optimize(lc, tmp_path / "runs", inputs)
    top = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())[0]
    later = sorted((top / "candidate-runs").iterdir(), key=_number)
    assert [_number(r) for r in later] == [2, 3] and opt.iteration.result is None
    answers = [json.loads((r / "candidates" / "result.json").read_text()) for r in [top, *later]]
    assert [a["status"] for a in answers] == ["accepted"] * 3
    diffs = [a["diff"] for a in answers]
    assert "__ldcs" in diffs[0] or "__stcs" in diffs[0]
    assert "256), 256 /*" in diffs[1] and "512), 512 /*" in diffs[2]
    calls = [json.loads((r / "llm" / "calls.jsonl").read_text().splitlines()[0]) for r in [top, *later]]
    assert [c["model"] for c in calls] == ["replay:" + n for n in (
        "029c70e93c41744e2f07e5ef9c854a572d191c6bc32cd07b5fd1fe5c2d06080e.txt",
        "029c70e93c41744e2f07e5ef9c854a572d191c6bc32cd07b5fd1fe5c2d06080e.2.txt",
        "029c70e93c41744e2f07e5ef9c854a572d191c6bc32cd07b5fd1fe5c2d06080e.3.txt")]
    # each later candidate's run holds the same evidence
    assert all((r / "analysis" / "diagnostics.json").read_text() == (top / "analysis" / "diagnostics.json").read_text()
               for r in later)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_missing_later_answer_is_a_failed_candidate_not_a_failed_run(tmp_path: Path):
    lc = _with_candidates(BLACKSCHOLES, 4)  # three answers are recorded
    inputs = {"timing": [CAPTURE / "timing_trace.tsv"], "report": [CAPTURE / "hot0.ncu-rep"],
              "counters": [CAPTURE / "counters" / "scale_1.ncu-rep"]}
    opt = optimize(lc, tmp_path / "runs", inputs)
    assert opt.iteration.proposed.status == "accepted"
    top = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())[0]
    statuses = sorted(json.loads(p.read_text())["status"] for p in top.glob("candidate-runs/*/candidates/result.json"))
    assert statuses == ["accepted", "accepted"]  # the fourth's run holds no proposal: the answer was missing


@pytest.mark.timing
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_the_best_candidate_is_kept_and_every_one_recorded(tmp_path: Path):
    text = (APP / "optimas.yml").read_text().replace("workdir: .", f"workdir: {APP}")
    (tmp_path / "optimas.yml").write_text(text)
    lc = load_config(tmp_path / "optimas.yml")
    runs = tmp_path / "runs"
    first = create_run(runs)
    made = [first, create_run(first.path / "candidate-runs"), create_run(first.path / "candidate-runs"),
            create_run(first.path / "candidate-runs")]
    variants = ["WRONG", "FAST", "FAST", "NOISY"]
    candidates = [Candidate(n, r, _proposed(v).model_copy(update={"diff": f"(diff {v})"}))
                  for n, (r, v) in enumerate(zip(made, variants, strict=True), start=1)]
    corpus = runs / "corpus.jsonl"
    best, outcomes = evaluate_candidates(RunContext(lc, first, corpus=corpus), candidates, _diag())
    assert best.number == 2 and best.result.verdict == "improvement"
    assert [(o.candidate, o.proposal, o.verdict, o.kept) for o in outcomes] == [
        (1, "accepted", "invalid", False), (2, "accepted", "improvement", True), (3, "duplicate", None, False),
        (4, "accepted", not_faster(outcomes), False)]
    assert outcomes[2].same_as == 2 and outcomes[1].improvement > 0.5 and outcomes[1].evaluation_seconds > 0
    recorded = json.loads((first.path / "evaluation" / "candidates.json").read_text())
    assert [c["kept"] for c in recorded] == [False, True, False, False]
    records = [json.loads(ln) for ln in corpus.read_text().splitlines()]
    assert sorted((r["candidate"], r["kept"], r["verdict"]) for r in records) == [
        (1, False, "invalid"), (2, True, "improvement"), (4, False, not_faster(outcomes))]


def not_faster(outcomes) -> str:
    """NOISY reports its time multiplied by 1 to 3 (as fast at best): slower or no gain, never an
    improvement. (The original timed against itself was used here once: at 5% false positives per
    comparison, CI saw an 'improvement' of +0.4%.)"""
    verdict = outcomes[3].verdict
    assert verdict in ("no-significant-gain", "slower")
    return verdict


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_build_that_rewrites_the_users_sources_changes_no_candidate(tmp_path: Path, monkeypatch):
    """The build and the program run with the code's folder writable: a build that rewrites a
    source there made the later candidates (and the loop's published diff) hold text the model
    never wrote (an attacker's sixth pass). Candidates are made from the sources read before
    anything ran."""
    samples = REPO / "benchmarks/external/cuda-samples"
    shutil.copytree(samples / "Common", tmp_path / "cs" / "Common")
    app = tmp_path / "cs" / "Samples/5_Domain_Specific/BlackScholes"
    shutil.copytree(BLACKSCHOLES.parent, app)
    kernel = app / "BlackScholes_kernel.cuh"
    rewrite = f"grep -q ATTACKER {kernel} || echo '// ATTACKER: never in the pull request' >> {kernel}; "
    text = (app / "optimas.yml").read_text().replace('build: "nvcc', f'build: "sh -c \\"{rewrite}\\" && nvcc')
    (app / "optimas.yml").write_text(text)
    lc = _with_candidates(app / "optimas.yml", 3)
    llm = lc.config.llm.model_copy(update={"backend": "offline"})  # (the replayed answers' prompt had no ATTACKER)
    lc = lc.model_copy(update={"config": lc.config.model_copy(update={"llm": llm})})
    assert "ATTACKER" in lc.config.app.build
    inputs = {"timing": [CAPTURE / "timing_trace.tsv"], "report": [CAPTURE / "hot0.ncu-rep"],
              "counters": [CAPTURE / "counters" / "scale_1.ncu-rep"]}
    # as in the App's worker: the code's commands in a sandbox that may write the job's folder, and
    # so the candidates proposed one after another
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    with sandboxed([tmp_path]):
        optimize(lc, tmp_path / "runs", inputs)
    assert "ATTACKER" in kernel.read_text()  # the build did rewrite it
    results = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("candidates/result.json")]
    assert sorted(r["status"] for r in results) == ["accepted"] * 3
    assert not any("ATTACKER" in r["diff"] for r in results)
    made = [p for p in (tmp_path / "runs").rglob("candidates/*/src/*") if p.is_file()]
    assert made and not any("ATTACKER" in p.read_text() for p in made)
