"""On a GPU: capture fresh Nsight Compute data of the probe kernels and analyse it.

Skipped where there is no GPU (CI); run on the device with `pytest -m gpu`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import H200, REPO

from runner.analysis.evidence import Diagnostics
from runner.base.errors import ProfileFormatError
from runner.profiles.readers import NcuReportReader, NcuSourceCsvReader

pytestmark = pytest.mark.gpu

SECTIONS = ["--section", "SpeedOfLight", "--section", "SpeedOfLight_RooflineChart", "--section", "SourceCounters"]


def _sh(cmd: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return r


def _capture(tmp: Path, lineinfo: bool) -> tuple[Path, Path]:
    src = tmp / "k.cu"
    src.write_text((H200 / "probe_kernels.cu").read_text())
    _sh(["nvcc", "-O3", "-arch=sm_90", *(["-lineinfo"] if lineinfo else []), "-o", "k", "k.cu"], tmp)
    _sh(["ncu", "--clock-control", "none", *SECTIONS, "--import-source", "yes", "-c", "3", "-f", "-o", "rep",
         "./k", "1048576", "1024", "256"], tmp)
    source = tmp / "source.csv"
    out = _sh(["ncu", "-i", "rep.ncu-rep", "--csv", "--page", "source", "--print-source", "cuda,sass"], tmp)
    source.write_text(out.stdout)
    return tmp / "rep.ncu-rep", source


def test_fresh_capture_reads_and_analyses(tmp_path: Path):
    rep, source = _capture(tmp_path, lineinfo=True)
    r = NcuReportReader().read(rep)
    s = NcuSourceCsvReader().read(source)
    assert (r.device_name or "").startswith("NVIDIA")
    user = s.lines[s.lines["file"].str.endswith("k.cu")]
    a = r.lines.set_index(["kernel", "line"])["samples"].sort_index()
    b = user.set_index(["kernel", "line"])["samples"].sort_index()
    assert a.to_dict() == b.to_dict()
    runs = tmp_path / "runs"
    res = subprocess.run([sys.executable, "-m", "runner.cli", "analyze", "--config", "config.yml", "--runs-dir",
                          str(runs), "--report", str(rep), "--json"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    d = Diagnostics.model_validate_json(res.stdout)
    assert any(e.kind == "roofline" for e in d.evidence)
    assert any(e.kind == "stall" and e.stall.file.endswith("k.cu") for e in d.evidence)


def test_capture_without_lineinfo_is_explained(tmp_path: Path):
    rep, source = _capture(tmp_path, lineinfo=False)
    with pytest.raises(ProfileFormatError, match="built without -lineinfo"):
        NcuSourceCsvReader().read(source)
    with pytest.raises(ProfileFormatError, match="built without -lineinfo"):
        NcuReportReader().read(rep)


def test_profiling_agent_on_a_benchmark_app(tmp_path: Path):
    """`optimas profile` on stream (small), then `optimas analyze --run`: evidence names real lines."""
    runs = tmp_path / "runs"
    prof = subprocess.run([sys.executable, "-m", "runner.cli", "profile", "--config", "benchmarks/stream/optimas.yml",
                           "--configuration", "small", "--runs-dir", str(runs)], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert prof.returncode == 0, prof.stderr[-3000:]
    run_dir = prof.stdout.strip().splitlines()[-1]
    res = subprocess.run([sys.executable, "-m", "runner.cli", "analyze", "--config", "benchmarks/stream/optimas.yml",
                          "--run", run_dir, "--json"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    d = Diagnostics.model_validate_json(res.stdout)
    source = (REPO / "benchmarks" / "stream" / "main.cu").read_text().splitlines()
    stalls = [e.stall for e in d.evidence if e.kind == "stall"]
    assert stalls and all(source[s.line - 1].strip() == s.source for s in stalls)
    assert len([e for e in d.evidence if e.kind == "counter"]) == 5


def test_closed_loop_on_a_benchmark_app(tmp_path: Path):
    """`optimas run` without recorded profiles: the loop profiles, proposes, evaluates and re-profiles."""
    import json

    app = REPO / "benchmarks" / "stream"
    text = (app / "optimas.yml").read_text().replace("workdir: .", f"workdir: {app}")
    text = text.replace("workspace: ..", f"workspace: {app.parent}").replace("runs_dir: ../../runs", "")
    cfg = tmp_path / "optimas.yml"
    cfg.write_text(text + "evaluation: {max_iterations: 2}\n")
    runs = tmp_path / "runs"
    own_cache = {k: v for k, v in os.environ.items() if k != "OPTIMAS_BUILD_CACHE"}  # the run's, not the tests'
    res = subprocess.run([sys.executable, "-m", "runner.cli", "run", "--config", str(cfg), "--configuration", "small",
                          "--runs-dir", str(runs)], cwd=REPO, capture_output=True, text=True, timeout=900,
                         env=own_cache)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "# Closed loop" in res.stdout and "stopped:" in res.stdout
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    loop = json.loads((run / "evaluation" / "loop.json").read_text())
    first = loop["iterations"][0]
    # whatever the GPU measured, the verdict follows the interval's rule and evaluation.min_improvement
    expected = ("improvement" if first["ci_low"] > 0 and first["improvement"] >= 0.01 else
                "slower" if first["ci_high"] < 0 else "no-significant-gain")
    assert first["verdict"] == expected
    assert first["checks"], "the candidate was re-profiled, so its cited evidence was checked"
    records = [json.loads(ln) for ln in (runs / "corpus.jsonl").read_text().splitlines()]
    assert len(records) == len(loop["iterations"])
    saved = json.loads((run / "evaluation" / "result.json").read_text())
    assert saved["ear"]["directional"] == first["directional"] == records[0]["ear_directional"]
    # built once: the profile's timing build is compiled, the candidate's re-profile takes the
    # evaluation's build of the same sources from the run's build cache
    (reprofiled, *_) = sorted(p for p in (run / "iterations").iterdir() if p.is_dir())
    timing_builds = [[c for c in json.loads((r / "manifest.json").read_text())["commands"]
                      if c["name"] == "build-timing"] for r in (run, reprofiled)]
    assert [[c["cached"] for c in b] for b in timing_builds] == [[False], [True]]


WRONG_ANSWER = """EDIT file=main.cu lines=33-33 cites=R1
WHY: one atomic per block is already minimal (R1); this answer is scripted to be wrong.
```cuda
  if (threadIdx.x == 0) atomicAdd(total, block_correct + 1);
```

APPLIED:
- line 33: the block's count added once (R1)
NOT APPLIED:
- nothing else: scripted
"""

NO_CHANGE_AFTER = """The rejected edit changed the count; the kernel has nothing safe left to change.

NO CHANGE
- R1: the scripted test stops here.
"""


def test_the_closed_loop_asks_again_after_an_invalid_candidate(tmp_path: Path):
    """A model (the loopback OpenAI server) answers a wrong edit, then NO CHANGE: the wrong candidate
    is rejected by validation, the baseline stays, and the second prompt says what differed and
    shows the rejected diff."""
    import json

    import yaml
    from conftest import run_cli
    from llm_servers import ChatServer, Reply

    app = REPO / "benchmarks" / "accuracy"
    data = yaml.safe_load((app / "optimas.yml").read_text())
    data["app"].update(workdir=str(app), workspace=str(app.parent))
    data.pop("runs_dir", None)
    data["evaluation"] = {"max_iterations": 2}
    with ChatServer("openai") as server:
        server.script = [Reply(text=WRONG_ANSWER), Reply(text=NO_CHANGE_AFTER)]
        data["llm"] = {"backend": "openai", "model": "scripted", "base_url": f"{server.url}/v1"}
        cfg = tmp_path / "optimas.yml"
        cfg.write_text(yaml.safe_dump(data))
        r = run_cli("run", "--config", str(cfg), "--configuration", "small", "--runs-dir", str(tmp_path / "runs"))
    assert r.returncode in (0, 5), r.stderr[-3000:]
    (run,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    loop = json.loads((run / "evaluation" / "loop.json").read_text())
    assert [it["verdict"] for it in loop["iterations"]] == ["invalid", "no-change"]
    assert loop["best"] is None
    users = [req["json"]["messages"][1]["content"] for req in server.requests]
    assert len(users) == 2 and "rejected" not in users[0]
    assert "## A previous candidate was rejected\nIt compiled and ran, but its results are not" in users[1]
    assert "+  if (threadIdx.x == 0) atomicAdd(total, block_correct + 1);" in users[1]
