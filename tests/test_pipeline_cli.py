"""Evidence ids and rendering, the run store, and the command line end to end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from runner.analysis.counters import load_metric_dictionary
from runner.analysis.evidence import CounterRuns, Diagnostics, diagnose, render_markdown
from runner.base.config import AnalysisConfig
from runner.base.runstore import create_run, sha256_file
from runner.profiles.readers import NcuRawCsvReader, read_profiles


def _diag(h200: Path, **cfg) -> Diagnostics:
    p = read_profiles(raw=[h200 / "probe_full_raw_base.csv"], source=[h200 / "probe_full_source_cuda_sass.csv"])
    runs = NcuRawCsvReader().read(h200 / "probe_sweep_accuracy_raw_base.csv")
    return diagnose(p, AnalysisConfig(**cfg), CounterRuns(runs, load_metric_dictionary()))


def test_evidence_ids_are_stable_and_typed(h200: Path):
    d = _diag(h200, alpha=1.0)
    prefixes = [e.id[0] for e in d.evidence]
    assert prefixes == sorted(prefixes, key="LRSC".index)  # L*, R*, then S*, then C*
    for prefix, kind in (("L", "launch"), ("R", "roofline"), ("S", "stall"), ("C", "counter")):
        items = [e for e in d.evidence if e.id[0] == prefix]
        assert [int(e.id[1:]) for e in items] == list(range(1, len(items) + 1))
        assert {e.kind for e in items} == {kind}
    assert [prefixes.count(x) for x in "LRC"] == [3, 3, 5] and prefixes.count("S") >= 3
    assert [e.kernel for e in d.evidence if e.kind == "roofline"] == [k.kernel for k in d.hot_kernels]
    assert _diag(h200, alpha=1.0) == d  # same profile, same evidence


def test_diagnostics_markdown_is_small_and_cites_real_lines(h200: Path):
    d = _diag(h200)
    md = render_markdown(d)
    assert len(md.encode()) < 6 * 1024
    assert "- S1 [matmul] k.cu:33 `if (r<n && c<n)" in md
    assert "stall_long_sb 38%" in md
    assert "R1 [matmul] Compute underutilized (62%), memory saturated (97%, L1 throughput): memory-bound" in md
    assert "- L1 [matmul] grid (64, 64, 1) x block (16, 16, 1) (256 threads)" in md
    assert md.count("\n- C") == 5
    assert "NVIDIA H200" in md and "DRAM 4.81 TB/s" in md
    assert "over 12 runs of accuracy_kernel\n" in md  # the counter runs' card is the profile's: not named


def test_the_counter_heading_names_the_runs_card_when_another_than_the_profiles():
    """The demo's matmul sweep was recorded on an H100, its other exports on an H200 (#46)."""
    profiles = REPO / "examples" / "h200-probe" / "profiles"
    p = read_profiles(raw=[profiles / "probe_full_raw_base.csv"], source=[profiles / "probe_full_source_cuda_sass.csv"])
    runs = NcuRawCsvReader().read(profiles / "probe_sweep_matmul_h100_raw_base.csv")
    d = diagnose(p, AnalysisConfig(), CounterRuns(runs, load_metric_dictionary()))
    md = render_markdown(d)
    assert "## Counters that explain runtime, eOMP (C) over 12 runs of matmul on NVIDIA H100 80GB HBM3\n" in md
    assert "- C1 [matmul] smsp__inst_executed.sum" in md and d.counter_selection.device == "NVIDIA H100 80GB HBM3"


def test_diagnostics_json_round_trips(h200: Path):
    d = _diag(h200)
    again = Diagnostics.model_validate_json(d.model_dump_json())
    assert again == d


def test_missing_source_data_is_a_note_not_a_failure(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    d = diagnose(p, AnalysisConfig())
    assert [e.kind for e in d.evidence] == ["launch", "roofline"]
    assert any("no source-level PC sampling" in n for n in d.notes)
    assert any("no counter runs" in n for n in d.notes)


def test_a_kernel_the_sources_define_is_analysed_and_prompted_when_a_library_one_takes_the_time(h200: Path):
    """matmul (87.5% of the time) stands for a library's kernel: the sources define only triad, so
    triad gets evidence of its own and the prompt, which names matmul with its share."""
    from runner.proposal.prompt import build_prompt

    p = read_profiles(raw=[h200 / "probe_full_raw_base.csv"], source=[h200 / "probe_full_source_cuda_sass.csv"])
    triad = next(k for k in p.kernels() if k.startswith("triad"))
    d = diagnose(p, AnalysisConfig(), editable=[triad])
    assert [k.kernel.split("(")[0] for k in d.hot_kernels] == ["matmul", "triad"]
    assert {e.kernel for e in d.evidence if e.kind == "roofline"} == {k.kernel for k in d.hot_kernels}
    assert [k.kernel for k in diagnose(p, AnalysisConfig()).hot_kernels] == [d.hot_kernels[0].kernel]
    source = "__global__ void triad(float* a, const float* b, const float* c, float s, int n) {}\n"
    prompt = build_prompt("probe", d, {"k.cu": source})
    assert prompt.hot_kernels == [triad]
    assert "Also hot, but defined outside the sources shown" in prompt.user and "matmul" in prompt.user


# ---------------------------------------------------------------- run store

def test_runs_are_unique_and_manifest_hashes_inputs(tmp_path: Path, h200: Path):
    a = create_run(tmp_path, ["x"])
    b = create_run(tmp_path, ["x"])
    assert a.path != b.path and a.path.parent == tmp_path
    import re

    assert a.id == a.path.name and re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", a.id)
    a.add_inputs([h200 / "probe_kernels.cu"], "source")
    m = json.loads((a.path / "manifest.json").read_text())
    assert m["inputs"][0]["sha256"] == sha256_file(h200 / "probe_kernels.cu")
    assert m["tools"]["optimas"] and m["tools"]["python"]
    a.write_json("analysis", "x.json", {"k": 1})
    assert [p.name for p in (a.path / "analysis").iterdir()] == ["x.json"]  # no temporary files left
    with pytest.raises(ValueError, match="unknown stage"):
        a.stage_dir("nowhere")


# ---------------------------------------------------------------- command line

def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd)


def test_analyze_on_bundled_config(tmp_path: Path):
    r = _cli("analyze", "--config", "config.yml", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "probe_kernels.cu:33" in r.stdout and "stall_long_sb" in r.stdout
    (run,) = tmp_path.iterdir()
    m = json.loads((run / "manifest.json").read_text())
    assert {i["role"] for i in m["inputs"]} == {"raw", "source", "counters"}
    assert m["stages"]["analysis"]["outputs"] == ["analysis/diagnostics.json", "analysis/diagnostics.md"]
    assert m["device"]["name"] == "NVIDIA H200"
    d = Diagnostics.model_validate_json((run / "analysis" / "diagnostics.json").read_text())
    assert d.hot_kernels[0].kernel.startswith("matmul")
    assert (run / "config.yml").read_text() == (REPO / "config.yml").read_text()
    assert "reading raw" in r.stderr  # progress goes to stderr


def test_run_py_equals_optimas_run(tmp_path: Path):
    a = subprocess.run([sys.executable, "run.py", "--config", "config.yml", "--runs-dir", str(tmp_path / "a")],
                       capture_output=True, text=True, cwd=REPO)
    b = _cli("run", "--config", "config.yml", "--runs-dir", str(tmp_path / "b"))
    assert a.returncode == b.returncode == 0
    def summary(out: str) -> list[str]:
        return [ln for ln in out.splitlines() if not ln.startswith(("Evidence:", "Prompt text:", "# Candidate"))
                and str(tmp_path) not in ln]

    assert summary(a.stdout) == summary(b.stdout)
    assert "+__global__ void matmul(const float* __restrict__ A" in a.stdout  # the offline backend's edit
    assert "stopped after the proposal" in a.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU here would evaluate the candidate")
def test_the_demo_ends_with_where_its_results_are_and_what_is_left(tmp_path: Path):
    r = _cli("run", "--config", "config.yml", "--runs-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    tail = r.stdout.split("# Summary\n", 1)[1]
    assert tail.startswith(f"Run folder: {run}\n")
    assert "- candidates/1/diff.patch (the candidate)" in tail and (run / "candidates" / "1" / "diff.patch").exists()
    assert "Not done: validation and timing (validating and timing a CUDA candidate needs a GPU" in tail
    assert f"optimas evaluate --config config.yml --run {run}" in tail
    # that command, here: what the machine lacks, all of it named at once, exit 4 as documented
    e = _cli("evaluate", "--config", "config.yml", "--run", str(run))
    assert e.returncode == 4, e.stderr
    assert "this machine cannot run the GPU stages; it lacks:" in e.stderr
    assert "an NVIDIA GPU with its driver" in e.stderr


def test_report_input_on_the_command_line(tmp_path: Path, h200: Path):
    r = _cli("analyze", "--config", "config.yml", "--runs-dir", str(tmp_path), "--report",
             str(h200 / "probe_full.ncu-rep"), "--json")
    assert r.returncode == 0, r.stderr
    d = Diagnostics.model_validate_json(r.stdout)
    assert d.gpu.name == "NVIDIA H200"
    assert any(e.kind == "stall" and e.stall.line == 33 for e in d.evidence)


def test_bad_profile_exits_2_and_writes_no_run(tmp_path: Path, h200: Path):
    runs = tmp_path / "runs"
    r = _cli("analyze", "--config", "config.yml", "--runs-dir", str(runs), "--raw",
             str(h200 / "probe_full_source_cuda_sass.csv"))
    assert r.returncode == 2
    assert "probe_full_source_cuda_sass.csv: this is an `ncu --csv --page source" in r.stderr
    assert not runs.exists() or not any(runs.iterdir())


def test_config_without_profiles_is_explained(tmp_path: Path):
    cfg = tmp_path / "c.yml"
    cfg.write_text("app: {name: x}\n")
    r = _cli("analyze", "--config", str(cfg))
    assert r.returncode == 2
    assert "no profiles to analyse" in r.stderr


def test_markdown_budget_drops_least_salient_items_first(h200: Path):
    d = _diag(h200, alpha=1.0)
    full = render_markdown(d)
    budget = len(full.encode()) - 400
    cut = render_markdown(d, max_bytes=budget)
    assert len(cut.encode()) <= budget
    assert "omitted here for length (kept in diagnostics.json):" in cut
    # every kernel keeps its roofline and its most salient stall line
    for e in d.evidence:
        if e.kind == "roofline":
            assert f"- {e.id} " in cut
    firsts = {}
    for e in d.evidence:
        if e.kind == "stall":
            firsts.setdefault(e.kernel, e.id)
    assert all(f"- {i} " in cut for i in firsts.values())
    assert render_markdown(d, max_bytes=len(full.encode())) == full


def test_counters_give_up_the_counters_that_move_with_them_before_any_counter_is_dropped(h200: Path):
    """A prompt short of room keeps every C line's numbers and description longer: the lists of
    the counters that move with each go first (a program of five hot kernels kept 2 of its 5 C
    lines in 6000 bytes)."""
    d = _diag(h200, alpha=1.0)
    counters = [e.id for e in d.evidence if e.kind == "counter"]
    full = render_markdown(d)
    assert counters and "Stands for" in full
    all_counters_compact = False
    for budget in range(len(full.encode()), 1000, -50):
        cut = render_markdown(d, max_bytes=budget)
        kept = [i for i in counters if f"- {i} " in cut]
        if kept != counters:
            assert "Stands for" not in cut  # a counter goes only once none keeps its list
        elif "Stands for" not in cut:
            all_counters_compact = True
    assert all_counters_compact


def test_an_unusable_runs_dir_names_the_option_and_writes_nothing(tmp_path: Path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for command in ("run", "prompt", "analyze"):
        r = run_cli(command, "--config", str(REPO / "config.yml"), "--runs-dir", str(a_file))
        assert r.returncode == 2 and f"--runs-dir {a_file}: not a folder" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "invalid configuration" not in r.stderr
    r = run_cli("run", "--config", str(REPO / "config.yml"), "--runs-dir", str(a_file / "below"))
    assert r.returncode == 2 and "cannot make the folder" in r.stderr
    # from the config's runs_dir: named as such
    cfg = tmp_path / "c.yml"
    cfg.write_text((REPO / "config.yml").read_text().replace("runs_dir: runs", f"runs_dir: {a_file}")
                   .replace("examples/", f"{REPO}/examples/"))
    r = run_cli("run", "--config", str(cfg))
    assert r.returncode == 2 and f"runs_dir ({a_file}, from {cfg})" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "c.yml"]


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="checks a machine without a GPU")
def test_run_on_a_profiled_run_without_a_gpu_says_so_and_exits_7(tmp_path: Path):
    """A Make build of .cu files needs the GPU as much as an nvcc one: no evaluation is tried."""
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1.0f; }\nint main() { return 0; }\n")
    (prog / "Makefile").write_text("k: k.cu\n\tnvcc -o k k.cu\n")
    cfg = prog / "optimas.yml"
    cfg.write_text("app:\n  name: k\n  workdir: .\n  sources: [k.cu]\n  build: 'make k && cp k {exe}'\n"
                   "  run: '{exe}'\n")
    profiled = tmp_path / "runs" / "20261205T000000Z-profiled"
    profiled.mkdir(parents=True)
    r = run_cli("run", "--config", str(cfg), "--run", str(profiled))
    assert r.returncode == 4, r.stderr
    assert "an NVIDIA GPU with its driver" in r.stderr and "optimas propose" in r.stderr
    assert sorted(p.name for p in profiled.parent.iterdir()) == [profiled.name] and not any(profiled.iterdir())


def test_the_demos_next_step_runs_as_typed(tmp_path: Path):
    """`make demo` runs `python run.py` from .venv without putting .venv/bin on PATH: the command it
    prints next must run as printed, from where the demo ran."""
    import os
    import shlex

    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != Path(sys.executable).parent.resolve())
    r = subprocess.run([sys.executable, "run.py", "--config", "config.yml", "--runs-dir", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    own = next(ln for ln in r.stdout.splitlines() if ln.startswith("Your own program: "))
    command = own.removeprefix("Your own program: ").split(" init ")[0]
    nxt = [ln for ln in r.stdout.splitlines() if ln.startswith("Next, on a machine with an NVIDIA GPU: ")]
    assert nxt or shutil.which("nvidia-smi"), r.stdout[-2000:]  # without a GPU the demo stops and says what next
    argv = shlex.split(nxt[0].split(": ", 1)[1]) if nxt else [*shlex.split(command), "--help"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    # it ran (no GPU here: evaluate names what the machine lacks, exit 4; on a GPU machine it evaluates)
    assert done.returncode in (0, 4), done.stderr[-2000:]
    assert done.returncode == 0 or "it lacks:" in done.stderr, done.stderr[-2000:]
