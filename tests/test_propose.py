"""The proposal stage end to end: prompts on the bundled example and on a benchmark, the offline
backend's edits compiling, and the retry loop feeding parse, guard and compiler errors back to a
model served by a loopback OpenAI-compatible server."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REPO, run_cli
from llm_servers import ChatServer, Reply

from runner.analysis.stage import analyze, profile_inputs
from runner.base.config import load_config
from runner.base.context import RunContext
from runner.base.errors import OptimasError
from runner.base.runstore import create_run
from runner.evaluation.ear import hallucinations
from runner.proposal.llm.offline import OfflineContext, answer
from runner.proposal.parser import parse_response
from runner.proposal.stage import propose
from runner.toolchain.compiler import CompileResult

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)


def example_config(tmp_path: Path, **llm) -> Path:
    """config.yml with absolute paths, so it can live in tmp_path, and the given llm settings."""
    data = yaml.safe_load((REPO / "config.yml").read_text())
    data["app"]["workdir"] = str(REPO / data["app"]["workdir"])
    for role, paths in data["profiles"].items():
        data["profiles"][role] = [str(REPO / p) for p in paths]
    data["app"]["source_map"] = {k: str(REPO / v) for k, v in data["app"]["source_map"].items()}
    data["runs_dir"] = str(tmp_path / "runs")
    data["llm"].update(llm)
    path = tmp_path / "config.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_prompt_on_the_bundled_example(tmp_path: Path):
    r = cli("prompt", "--config", "config.yml", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "### Hot kernel matmul (probe_kernels.cu, lines 31-34)" in r.stdout
    assert "31| __global__ void matmul(const float* A, const float* B, float* C, int n){" in r.stdout
    assert "- S1 [matmul] probe_kernels.cu:33" in r.stdout and "- R1 [matmul]" in r.stdout
    assert "Answer in exactly this format" in r.stdout
    (run,) = tmp_path.iterdir()
    assert (run / "prompt" / "user.md").read_text() in r.stdout


def test_declared_tolerances_replace_the_bit_for_bit_rule_in_the_prompt(tmp_path: Path):
    """A config whose every check of results declares a tolerance tells the model those tolerances
    and that floating-point operations may be reordered within them; the default stays bit for bit."""
    path = example_config(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["app"]["outputs"] = []
    data["app"]["gpu_results"] = {"compare": "tolerance", "rtol": 1e-5, "ulps": 4}
    path.write_text(yaml.safe_dump(data))
    r = cli("prompt", "--config", str(path), "--runs-dir", str(tmp_path / "a"))
    assert r.returncode == 0, r.stderr
    assert ("- Results must stay within the declared tolerances (GPU results as float32: rtol 1e-05, ulps 4): "
            "floating-point operations may be reordered or fused within them;") in r.stdout
    assert "bit-for-bit" not in r.stdout and "within the tolerances the rules state" in r.stdout
    default = cli("prompt", "--config", "config.yml", "--runs-dir", str(tmp_path / "b"))
    assert "- Results must stay bit-for-bit identical" in default.stdout and "tolerances" not in default.stdout


def test_an_original_whose_results_vary_by_rounding_lets_the_prompt_reorder_them(tmp_path: Path):
    """The profiling agent's gpu_results.json says how two runs of the original compare: varying by
    rounding only, the prompt allows reordering where they vary; beyond rounding, the diagnostics
    say that bit-for-bit validation cannot pass; the same, the prompt stays bit for bit."""
    from runner.proposal.prompt import BITWISE_RULE, ROUNDING_RULE, build_prompt
    from runner.tracing.trace import ResultsVariation
    from runner.validation.compare import ROUNDING_ULPS

    lc = load_config(REPO / "config.yml")
    files = {"probe_kernels.cu": (REPO / "examples" / "h200-probe" / "probe_kernels.cu").read_text()}

    def diagnosed(variation: ResultsVariation | None):
        inputs = profile_inputs(lc)
        if variation is not None:
            (tmp_path / "gpu_results.json").write_text(variation.model_dump_json())
            inputs["gpu_results"] = [tmp_path / "gpu_results.json"]
        return analyze(lc, inputs)

    rounding = diagnosed(ResultsVariation(varies=True, rounding_ulps=3, why="GPU result 1 differs"))
    assert rounding.results_variation.rounding_ulps == 3
    assert not any(n.startswith("the original's GPU results differ") for n in rounding.notes)
    system = build_prompt("probe", rounding, files).system
    assert "- " + ROUNDING_RULE.format(ulps=ROUNDING_ULPS) in system
    assert "within 1024 ulps of the original's where they vary" in system and BITWISE_RULE not in system
    assert "within the tolerances the rules state" in system

    beyond = diagnosed(ResultsVariation(varies=True, why="GPU result 2 differs; GPU result 2 (cudaMemcpy) differs by "
                                                         "more than rounding"))
    assert beyond.notes[-1].startswith("the original's GPU results differ between two runs beyond rounding (GPU "
                                       "result 2 differs;")
    assert BITWISE_RULE in build_prompt("probe", beyond, files).system
    for same in (diagnosed(ResultsVariation(varies=False)), diagnosed(None)):
        assert BITWISE_RULE in build_prompt("probe", same, files).system
    (tmp_path / "gpu_results.json").write_text("{}")
    with pytest.raises(OptimasError, match="gpu_results.json: not a comparison of the original's GPU results"):
        analyze(lc, {**profile_inputs(lc), "gpu_results": [tmp_path / "gpu_results.json"]})


@pytest.mark.parametrize("diagnostics, present, absent", [
    ("PC", ["- S1 "], ["- R1 ", "- C1 "]),
    ("Roofline", ["- R1 "], ["- S1 ", "- C1 "]),
    # the bundled counter runs are of matmul, the hot kernel (#46); counter runs of another kernel
    # than those shown are not cited (test_counter_plan, and the histogram case below)
    ("IA+Roofline", ["- R1 ", "- C1 [matmul] "], ["- S1 ", "none for the kernels shown"]),
    ("none", ["(none: optimize from the code alone)"], ["- R1 ", "- S1 ", "- C1 "]),
])
def test_diagnostic_configurations_select_evidence(tmp_path: Path, diagnostics, present, absent):
    r = cli("prompt", "--config", "config.yml", "--runs-dir", str(tmp_path), "--diagnostics", diagnostics)
    assert r.returncode == 0, r.stderr
    user = r.stdout.split("=== user ===", 1)[1]
    assert all(p in user for p in present) and not any(a in user for a in absent)


@needs_nvcc
def test_propose_on_the_bundled_example_with_the_offline_backend(tmp_path: Path):
    r = cli("propose", "--config", "config.yml", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "compiled: yes" in r.stdout
    assert "+__global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C" \
        in r.stdout
    (run,) = tmp_path.iterdir()
    calls = [json.loads(ln) for ln in (run / "llm" / "calls.jsonl").read_text().splitlines()]
    assert calls[0]["backend"] == "offline" and calls[0]["label"] == "rule-based (no model)"
    assert (run / "candidates" / "1" / "diff.patch").read_text().startswith("--- a/probe_kernels.cu")


@pytest.mark.slow
@needs_nvcc
def test_offline_edit_to_a_benchmark_kernel_compiles(tmp_path: Path):
    cap = FIXTURES / "seismic-h200"
    lc = load_config(REPO / "benchmarks" / "seismic" / "optimas.yml")
    before = (REPO / "benchmarks" / "seismic" / "main.cu").read_text()
    diag = analyze(lc, {"timing": [cap / "timing_raw.csv"], "report": [cap / "hot0.ncu-rep"]})
    run = create_run(tmp_path)
    result = propose(RunContext(lc, run), diag)
    assert result.status == "accepted", result.reason
    assert result.compiled is True
    edited = {e.start_line for e in result.proposal.edits}
    assert 38 in edited  # update_field's signature: const/__restrict__ for its memory stalls
    assert all(e.cites for e in result.proposal.edits)
    assert (REPO / "benchmarks" / "seismic" / "main.cu").read_text() == before  # built in a copy


GOOD = """EDIT file=probe_kernels.cu lines=31-31 cites=S1,R1
WHY: restrict the pointers of the memory-bound matmul (S1, R1).
```cuda
__global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n){
```
APPLIED:
- lines 31-31: __restrict__ (S1, R1)
NOT APPLIED:
- shared-memory tiling: larger change
"""
BAD_RULE = GOOD.replace("lines=31-31", "lines=38-38").replace(
    "__global__ void matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n){",
    "int main(int argc, char** argv){")
NO_COMPILE = GOOD.replace("int n){", "int n){ undeclared_symbol();")


@needs_nvcc
def test_retry_loop_feeds_errors_back(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-marker-123")
    with ChatServer("openai") as s:
        s.script = [Reply(text="The kernel is slow; use tiling."), Reply(text=BAD_RULE), Reply(text=NO_COMPILE),
                    Reply(text=GOOD)]
        cfg = example_config(tmp_path, backend="openai", model="gpt-test", base_url=f"{s.url}/v1",
                             parse_retries=2, backoff_s=0.01)
        r = cli("propose", "--config", str(cfg))
    assert r.returncode == 0, r.stderr
    users = [req["json"]["messages"][1]["content"] for req in s.requests]
    assert len(users) == 4
    assert "## Your previous answer could not be used\nno edits found" in users[1]
    assert "Your edits were rejected:\n[host-code]" in users[2]
    assert "## Your previous answer did not compile" in users[3] and "undeclared_symbol" in users[3]
    assert all(req["json"]["temperature"] == 0.15 for req in s.requests)
    (run,) = (tmp_path / "runs").iterdir()
    outcomes = [a["outcome"] for a in json.loads((run / "candidates" / "result.json").read_text())["attempts"]]
    assert outcomes == ["unparsable", "rejected", "compile-error", "accepted"]
    calls = [json.loads(ln) for ln in (run / "llm" / "calls.jsonl").read_text().splitlines()]
    assert [c["prompt_tokens"] for c in calls] == [123] * 4
    # the key is never written anywhere in the run
    for f in run.rglob("*"):
        if f.is_file():
            assert b"sk-secret-marker-123" not in f.read_bytes(), f


def test_exhausted_retries_fail_with_the_reason(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ChatServer("openai", default_text="No changes needed.") as s:
        cfg = example_config(tmp_path, backend="openai", model="gpt-test", base_url=f"{s.url}/v1", parse_retries=1)
        r = cli("propose", "--config", str(cfg))
    assert r.returncode == 5
    assert "no usable candidate: the answer could not be used: no edits found" in r.stderr
    assert len(s.requests) == 2


NO_CHANGE = """The kernel already streams at the DRAM limit the roofline shows.

NO CHANGE
- R1: triad runs at 91% of peak DRAM bandwidth; fewer bytes cannot be moved for this output.
- S1: the long-scoreboard stalls are the loads themselves; more loads in flight would not raise bandwidth.
- Unrolling the loop: it would only change the instruction count, not the bytes moved.
"""


def test_an_answer_that_proposes_no_change_is_a_result_not_a_failure(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ChatServer("openai", default_text=NO_CHANGE) as s:
        cfg = example_config(tmp_path, backend="openai", model="strong-model", base_url=f"{s.url}/v1",
                             parse_retries=2)
        r = cli("propose", "--config", str(cfg))
    assert r.returncode == 5, r.stderr
    assert len(s.requests) == 1  # not asked again
    assert "NO CHANGE" in s.requests[0]["json"]["messages"][0]["content"]  # the format offers it
    assert "# No change proposed\n- R1: triad runs at 91% of peak DRAM bandwidth" in r.stdout
    assert "the model proposes no change: R1: triad runs at 91%" in r.stderr
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    saved = json.loads((run / "candidates" / "result.json").read_text())
    assert saved["status"] == "no-change" and [a["outcome"] for a in saved["attempts"]] == ["no-change"]
    assert [w["suggestion"] for w in saved["proposal"]["withheld"]] == ["R1", "S1", "Unrolling the loop"]
    (record,) = [json.loads(ln) for ln in (tmp_path / "runs" / "corpus.jsonl").read_text().splitlines()]
    assert record["verdict"] == "no-change" and record["LLM"] == "openai:strong-model"
    assert record["Opt_Code"] == "" and record["Compile"] is None and len(record["Ignored"]) == 3


def test_the_bot_posts_the_reasons_of_a_no_change_answer_instead_of_a_review(tmp_path: Path, monkeypatch):
    from bot.outcome import recorded_outcome
    from bot.summary import summary_text
    from runner.analysis.stage import profile_inputs
    from runner.flows.optimize import optimize

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ChatServer("openai", default_text=NO_CHANGE) as s:
        lc = load_config(example_config(tmp_path, backend="openai", model="strong-model", base_url=f"{s.url}/v1"))
        result = optimize(lc, tmp_path / "runs", profile_inputs(lc))
    outcome = recorded_outcome(result, lc, REPO)
    assert outcome.postable is False and outcome.edits == () and outcome.verdict == "no change"
    text = summary_text(outcome, "a" * 40, False)
    assert "No change proposed" in text
    assert "The model's reasons:\n```text\n- R1: triad runs at 91% of peak DRAM bandwidth" in text
    assert "- Unrolling the loop: it would only change the instruction count" in text


@pytest.mark.parametrize("answer, shape", [
    ("NO CHANGE: the kernel is at the memory roofline (R1)", "no-change"),
    ("**No change**\n1. S2: barrier stalls come from the algorithm's two phases", "no-change"),
    # an EDIT makes it an edit answer, whatever else it says
    ("NO CHANGE\n- R1: at the roofline\n\nEDIT file=probe_kernels.cu lines=1-1 cites=R1\n```cuda\nint y;\n```",
     "structured"),
])
def test_no_change_answers_are_read_with_their_reasons(answer: str, shape: str):
    from runner.proposal.parser import parse_response

    p = parse_response(answer, {"probe_kernels.cu": "int x;\n"})
    assert p.shape == shape
    if shape == "no-change":
        assert p.edits == [] and p.withheld and p.withheld[0].suggestion
    else:
        assert [e.new_text for e in p.edits] == ["int y;"]


def test_no_change_without_reasons_is_asked_again():
    from runner.proposal.parser import ResponseParseError, parse_response

    with pytest.raises(ResponseParseError, match="NO CHANGE needs its reasons"):
        parse_response("NO CHANGE\n", {"a.cu": ""})


@pytest.mark.slow
@needs_nvcc
def test_large_prompts_are_split_by_kernel_and_recombined(tmp_path: Path):
    cap = FIXTURES / "seismic-h200"
    lc = load_config(REPO / "benchmarks" / "seismic" / "optimas.yml")
    small = lc.config.llm.model_copy(update={"max_prompt_tokens": 1000})
    lc = lc.model_copy(update={"config": lc.config.model_copy(update={"llm": small})})
    diag = analyze(lc, {"timing": [cap / "timing_raw.csv"], "report": [cap / "hot0.ncu-rep"]})
    run = create_run(tmp_path)
    result = propose(RunContext(lc, run), diag)
    assert result.status == "accepted", result.reason
    prompts = sorted((run.path / "prompt").glob("user-*.md"))
    assert len(diag.hot_kernels) == 4 and len(prompts) >= 4
    assert all(p.read_text().count("### Hot kernel ") == 1 for p in prompts)  # one kernel each
    shown = {p.read_text().split("### Hot kernel ", 1)[1].split(" ", 1)[0] for p in prompts}
    assert shown == {"update_field", "damp_boundary_layer", "stencil_rhs", "energy_partial"}
    # every kernel's answer was accepted, and the four were recombined into one candidate
    assert [a.outcome for a in result.attempts] == ["accepted"] * 4
    assert result.candidate_dir == "candidates/combined"
    assert {e.file for e in result.proposal.edits} == {"main.cu"} and len(result.proposal.edits) >= 4
    assert result.compiled is True


def test_a_helper_holding_a_stall_line_is_editable_unless_the_config_says_not():
    from runner.proposal.guard import apply_proposal
    from runner.proposal.parser import Edit, Proposal
    from runner.proposal.prompt import build_prompt

    cap = FIXTURES / "seismic-h200"
    lc = load_config(REPO / "benchmarks" / "seismic" / "optimas.yml")
    diag = analyze(lc, {"timing": [cap / "timing_raw.csv"], "report": [cap / "hot0.ncu-rep"]})
    files = {"main.cu": (cap / "main.cu").read_text()}
    held = sorted(e.id for e in diag.evidence if e.kind == "stall" and 22 <= e.stall.line <= 28)
    assert held  # laplacian4 (lines 22-28) holds salient stall lines of the hot kernel that calls it
    opened = build_prompt("seismic", diag, files)
    assert f"### Device function laplacian4 (editable: it holds {', '.join(held)})" in opened.user
    locked = build_prompt("seismic", diag, files, editable=["!laplacian4"])
    assert "### Device function laplacian4 (read-only)" in locked.user
    # without stall evidence in the prompt the helper stays editable (the same edit space in every
    # diagnostic configuration), and no id is named
    assert "### Device function laplacian4 (editable: it holds a salient stall line)" in \
        build_prompt("seismic", diag, files, diagnostics="Roofline").user
    line = files["main.cu"].splitlines()[22]  # line 23: the stencil coefficients
    edit = Edit(file="main.cu", start_line=23, end_line=23, new_text=line.replace("const float", "constexpr float"))
    p = Proposal(shape="structured", edits=[edit], raw="")
    assert not apply_proposal(p, files, locked.editable).ok
    assert apply_proposal(p, files, opened.editable).ok


@needs_nvcc
def test_ablation_table_over_diagnostic_configurations(tmp_path: Path):
    import csv
    import xml.etree.ElementTree as ET

    r = cli("ablate", "--config", "config.yml", "--runs-dir", str(tmp_path), "--only", "none", "PC", "IA", "Roofline")
    assert r.returncode == 0, r.stderr
    (out,) = tmp_path.glob("ablation-*")
    rows = list(csv.DictReader((out / "ablation.csv").open()))
    by = {row["diagnostics"]: row for row in rows}
    assert list(by) == ["none", "PC", "IA", "Roofline"]
    # the offline rules need stall or roofline evidence: code only and counters only give nothing to
    # act on, and the offline backend answers NO CHANGE
    assert by["none"]["candidate"] == "no-change" and by["IA"]["candidate"] == "no-change"
    assert by["PC"]["candidate"] == "accepted" and by["PC"]["localization"] == "1.0"
    assert by["Roofline"]["candidate"] == "accepted" and by["Roofline"]["localization"] == ""
    assert "| PC | accepted | True |" in (out / "ablation.md").read_text()
    svg = ET.parse(out / "ablation.svg").getroot()
    assert svg.tag.endswith("svg") and len([e for e in svg.iter() if e.tag.endswith("rect")]) == 4
    # the analysis run that made the evidence, then one run per configuration
    assert len([p for p in tmp_path.iterdir() if p.name != out.name and p.is_dir()]) == 5


SAMPLES = "benchmarks/external/cuda-samples/Samples"
REPLAYED_EXTERNAL = {
    "matrixMul": f"{SAMPLES}/0_Introduction/matrixMul/optimas.yml",
    "reduction": f"{SAMPLES}/2_Concepts_and_Techniques/reduction/optimas.yml",
    "threadFenceReduction": f"{SAMPLES}/2_Concepts_and_Techniques/threadFenceReduction/optimas.yml",
    "sortingNetworks": f"{SAMPLES}/2_Concepts_and_Techniques/sortingNetworks/optimas.yml",
    "BlackScholes": f"{SAMPLES}/5_Domain_Specific/BlackScholes/optimas.yml",
    "convolutionSeparable": f"{SAMPLES}/2_Concepts_and_Techniques/convolutionSeparable/optimas.yml",
    "histogram": f"{SAMPLES}/2_Concepts_and_Techniques/histogram/optimas.yml",
    "transpose": f"{SAMPLES}/6_Performance/transpose/optimas.yml",
}


# The original's build each replayed prompt was made with (its K* compiler evidence and macros come
# from ptxas and the preprocessor), recorded so that the answers are checked against their prompts
# without building each program twice: OPTIMAS_RECORD_REPLAY_BUILDS=1 records them again from real
# builds (`pytest tests/test_propose.py -k replayed_answers`), and the test of one app below builds
# it for real and checks its record against that build.
REPLAY_BUILDS = FIXTURES / "replay-builds"
RECORD_BUILDS = "OPTIMAS_RECORD_REPLAY_BUILDS"
REAL_BUILD_APP = "matrixMul"  # the app whose original and replayed candidate are built for real
NO_HALLUCINATIONS = {"claims_without_change": [], "edits_without_claim": [], "cited_not_shown": []}
# What a recorded answer's prompt no longer shows (the answers are kept byte for byte when their
# prompts are re-keyed): seismic's answer cites S5, which its prompt now lists only among the ids
# "omitted here for length" (its evidence section grew past analysis.max_prompt_bytes).
KNOWN_HALLUCINATIONS = {"seismic": {"cited_not_shown": ["S5"]}}


def replay_propose_args(app: str, runs_dir: Path) -> list[str]:
    """`optimas propose --backend replay` on the capture the app's recorded answer answers."""
    if app in REPLAYED_EXTERNAL:  # a third-party program: its capture is kept beside the answers
        config, cap = REPO / REPLAYED_EXTERNAL[app], REPO / "benchmarks" / "replay" / "captures" / f"{app}-h200"
    else:
        config, cap = REPO / "benchmarks" / app / "optimas.yml", FIXTURES / f"{app}-h200"
    timing = next(p for p in (cap / "timing_raw.csv", cap / "timing_trace.tsv") if p.exists())
    args = ["propose", "--backend", "replay", "--config", str(config), "--runs-dir", str(runs_dir),
            "--timing", str(timing)]
    for rep in sorted(cap.glob("hot*.ncu-rep")):
        args += ["--report", str(rep)]
    for rep in sorted((cap / "counters").glob("*.ncu-rep")):
        args += ["--counters", str(rep)]
    return args


def _digests(files: dict[str, str]) -> dict[str, str]:
    return {name: hashlib.sha256(text.encode()).hexdigest() for name, text in sorted(files.items())}


def _recorded_build(lc, files: dict[str, str], arch: str, app: str) -> CompileResult:
    """The recorded build of the original `files`, refused where it was of other sources, another
    build command or another architecture (record it again: OPTIMAS_RECORD_REPLAY_BUILDS=1)."""
    path = REPLAY_BUILDS / f"{app}.json"
    assert path.is_file(), f"no recorded build {path}: run with {RECORD_BUILDS}=1"
    record = json.loads(path.read_text())
    now = {"build": lc.config.app.build, "arch": arch, "sources": _digests(files)}
    stale = [k for k, v in now.items() if record[k] != v]
    assert not stale, f"{path} was recorded for another {', '.join(stale)}: record it again ({RECORD_BUILDS}=1)"
    return CompileResult.model_validate({"command": [], "output": "", **record["result"]})


def _kept(result: CompileResult, files: dict[str, str]) -> dict:
    """What of the original's build the prompt reads: the K* resources, the compatibility headers
    and the macros named in the sources (the prompt shows a macro's value only where the code shown
    uses it), without the thousands of the toolkit's and the compiler's own."""
    named = set(re.findall(r"[A-Za-z_]\w*", "\n".join(files.values())))
    macros = result.macros.model_dump(mode="json")
    macros["by_source"] = {src: {n: v for n, v in sorted(defined.items()) if n in named}
                           for src, defined in macros["by_source"].items()}
    return {**result.model_dump(mode="json", include={"ok", "resources", "compat"}), "macros": macros}


def _record_build(lc, files: dict[str, str], arch: str, app: str, result: CompileResult) -> None:
    assert result.ok, result.output[-2000:]
    REPLAY_BUILDS.mkdir(exist_ok=True)
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    record = {"build": lc.config.app.build, "arch": arch, "nvcc": nvcc, "sources": _digests(files),
              "result": _kept(result, files)}
    (REPLAY_BUILDS / f"{app}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


class _Builds:
    """Builder.compile for the proposal stage: `real`, it builds (and keeps each result); else the
    original's build is its record and the candidate is not built (the stage then reports it as not
    compile-checked). Recording (OPTIMAS_RECORD_REPLAY_BUILDS=1) builds for real and writes the record."""

    def __init__(self, app: str, real: bool):
        from runner.toolchain.builder import Builder

        self.app, self.real, self.record = app, real, os.environ.get(RECORD_BUILDS) == "1"
        self.compile = Builder.compile
        self.original: CompileResult | None = None
        self.original_files: dict[str, str] = {}
        self.candidates: list[dict[str, str]] = []

    def __call__(self, builder, files, log=None, *args, macros=False, **kwargs):
        lc, arch = builder.lc, builder.arch
        if not macros:  # a candidate: only the original's build is asked for its macros
            self.candidates.append(dict(files))
            return self.compile(builder, files, log, *args, **kwargs) if self.real or self.record else None
        self.original_files = dict(files)
        if self.real or self.record:
            self.original = self.compile(builder, files, log, *args, macros=True, **kwargs)
            if self.record:
                _record_build(lc, files, arch, self.app, self.original)
            return self.original
        self.original = _recorded_build(lc, files, arch, self.app)
        return self.original


def replay_checked(app: str, runs_dir: Path, monkeypatch, real: bool = False
                   ) -> tuple[subprocess.CompletedProcess, dict, _Builds]:
    """Propose with the app's recorded answer: it is found by its prompt's hash, so the prompt is the
    one it answered, byte for byte; its edits apply within the editable lines on the first attempt
    (no retry, whose prompt no answer is recorded for) and cite only evidence that prompt shows.
    The command's output, the run's candidates/result.json and the builds asked for."""
    import runner.proposal.stage as stage
    from runner.proposal.parser import Proposal

    builds = _Builds(app, real)
    monkeypatch.setattr(stage.Builder, "compile", lambda builder, *a, **k: builds(builder, *a, **k))
    r = cli(*replay_propose_args(app, runs_dir))
    assert r.returncode == 0, r.stderr[-2000:]
    (run,) = [p for p in runs_dir.iterdir() if p.is_dir()]
    call = json.loads((run / "llm" / "calls.jsonl").read_text().splitlines()[0])
    assert call["backend"] == "replay" and call["label"] == "replayed from a recorded answer"
    result = json.loads((run / "candidates" / "result.json").read_text())
    assert result["status"] == "accepted", result.get("reason")
    assert [a["outcome"] for a in result["attempts"]] == ["accepted"]
    assert builds.original is not None and builds.original.ok  # the prompt had the original's K* and macros
    (candidate,) = builds.candidates
    assert candidate.keys() == builds.original_files.keys() and candidate != builds.original_files  # edited
    assert (run / "candidates" / "1" / "diff.patch").read_text().startswith("---")
    assert result["evidence_ids"] == call["evidence_ids"]  # the ids the answered prompt showed
    proposal = Proposal.model_validate(result["proposal"])
    assert all(e.cites for e in proposal.edits)
    # EAR's hallucinations: claims with no change, changes with no claim, evidence cited but not shown
    found = hallucinations(proposal, result["evidence_ids"]).model_dump()
    assert found == {**NO_HALLUCINATIONS, **KNOWN_HALLUCINATIONS.get(app, {})}, found
    return r, result, builds


@needs_nvcc
@pytest.mark.parametrize("app", ["accuracy", "seismic", *REPLAYED_EXTERNAL])
def test_replayed_answers_still_match_their_prompts(tmp_path: Path, monkeypatch, app: str):
    """Every recorded answer against its prompt, made with the original's recorded build (its K* and
    macros). Nothing is built (the test below builds one app's original and candidate), unless
    OPTIMAS_RECORD_REPLAY_BUILDS=1 records the builds again."""
    r, result, builds = replay_checked(app, tmp_path, monkeypatch)
    if os.environ.get(RECORD_BUILDS) == "1":
        assert "compiled: yes" in r.stdout
    else:
        assert "compiled: not checked" in r.stdout and result["compiled"] is None


@pytest.mark.slow
@needs_nvcc
def test_a_replayed_candidate_compiles_and_the_recorded_build_is_the_real_one(tmp_path: Path, monkeypatch):
    """One app end to end with real builds: its original built with this nvcc gives the prompt its
    answer was recorded for, the replayed candidate compiles, and the recorded build the test above
    uses is this build (the same K* resources, macros and compatibility headers)."""
    r, result, builds = replay_checked(REAL_BUILD_APP, tmp_path, monkeypatch, real=True)
    assert "compiled: yes" in r.stdout and result["compiled"] is True
    recorded = json.loads((REPLAY_BUILDS / f"{REAL_BUILD_APP}.json").read_text())["result"]
    real = _kept(builds.original, builds.original_files)
    assert real == recorded
    assert real["resources"] and any(real["macros"]["by_source"].values())  # K* and macros, not empty lists


def test_evidence_of_other_code_is_refused(tmp_path: Path):
    """A capture of main.cu whose lines moved since (one line added at the top): its stall lines
    would point at other code, so no prompt is made from it."""
    cap = FIXTURES / "seismic-h200"
    original = (REPO / "benchmarks" / "seismic" / "main.cu").read_text()
    app = tmp_path / "app"
    app.mkdir()
    (app / "optimas.yml").write_text("app:\n  name: seismic\n  sources: [main.cu]\n  configurations: [medium]\n")
    (app / "main.cu").write_text(original)
    args = ["--config", str(app / "optimas.yml"), "--runs-dir", str(tmp_path / "runs"), "--report",
            str(cap / "hot0.ncu-rep")]
    r = cli("prompt", *args)
    assert r.returncode == 0, r.stderr  # the same text at the cited lines: the file is found by its name
    (app / "main.cu").write_text(original + "// code added below every kernel changes no cited line\n")
    assert cli("prompt", *args).returncode == 0
    (app / "main.cu").write_text("// a comment added since the capture\n" + original)
    for command in ("prompt", "propose"):
        r = cli(command, *args)
        assert r.returncode == 2, r.stderr
        assert "the profile is of other code than the sources now hold" in r.stderr
        assert "damp_boundary_layer: the profile's source of main.cu differs from the file now" in r.stderr
        assert "Re-profile the current code (optimas profile --config" in r.stderr


def test_the_offline_backend_answers_no_change_when_no_rule_applies():
    # the hot kernel's file is not editable: no rule can act, and the answer says so in the
    # response format's NO CHANGE shape (on the H200, reduction's answer was an unusable note)
    lc = load_config(REPO / "config.yml")
    diag = analyze(lc, profile_inputs(lc))
    text = (REPO / "examples" / "h200-probe" / "probe_kernels.cu").read_text()
    ctx = OfflineContext(diagnostics=diag, files={"probe_kernels.cu": text}, editable={},
                         evidence_ids=[e.id for e in diag.evidence], hot_kernels=[k.kernel for k in diag.hot_kernels])
    reply = answer(ctx)
    assert reply.startswith("NO CHANGE\n")
    proposal = parse_response(reply, {"probe_kernels.cu": text})
    assert proposal.shape == "no-change" and not proposal.edits
    assert any("shared-memory tiling" in w.suggestion for w in proposal.withheld)


def test_a_prompt_after_a_rejected_candidate_says_what_was_wrong(tmp_path: Path):
    """The closed loop asks again after a candidate fails validation; the prompt carries what
    differed and the rejected diff. Prompts without it are unchanged (the replay keys hold)."""
    lc = load_config(REPO / "config.yml")
    diag = analyze(lc, profile_inputs(lc))
    note = "It compiled and ran, but its results are not the original program's: default/seed 1: mismatch."
    run = create_run(tmp_path)
    result = propose(RunContext(lc, run), diag, rejected=note)
    user = (run.path / "prompt" / "user-1.md").read_text()
    assert "## A previous candidate was rejected\n" + note in user
    assert "Do not propose it again." in user
    assert result.status in ("accepted", "no-change")
    plain = create_run(tmp_path / "plain")
    propose(RunContext(lc, plain), diag)
    assert "rejected" not in (plain.path / "prompt" / "user-1.md").read_text()


def test_the_prompt_says_why_it_has_no_counter_evidence():
    """One counter run of the hot kernel (the program takes no {scale}): eOMP needs several, and
    the prompt's sources line says so instead of a bare "none"."""
    from runner.proposal.prompt import build_prompt

    cap = REPO / "benchmarks" / "replay" / "captures" / "histogram-h200"
    lc = load_config(REPO / REPLAYED_EXTERNAL["histogram"])
    diag = analyze(lc, {"timing": [cap / "timing_trace.tsv"], "report": sorted(cap.glob("hot*.ncu-rep")),
                        "counters": sorted((cap / "counters").glob("*.ncu-rep"))})
    from runner.base.workspace import read_context

    files = read_context(*lc.dirs, lc.config.app.sources)
    line = next(ln for ln in build_prompt("histogram", diag, files).user.splitlines()
                if ln.startswith("Diagnostic sources"))
    assert "counters (C): none for the kernels shown (1 counter run of histogram256Kernel: eOMP ranks" in line
    assert "do not cover a hot kernel" not in line
