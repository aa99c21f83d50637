"""On a GPU: profiling builds in a copy of the workspace (issue #31). A Make build leaves nothing in
the user's folder, and the profile's line evidence names the user's files, not the copy's. A
template of many hot instances is profiled through its hottest (issue #44, mixbench-cuda).
Skipped where there is no GPU (CI); run on the device with `pytest -m gpu`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES
from test_gpu_counter_plan import FIXED, _cli

from runner.analysis.stage import analyze
from runner.base.config import load_config
from runner.base.context import RunContext
from runner.base.runstore import create_run
from runner.profiles.readers.report import report_kernel_names
from runner.profiling.agent import ProfilingAgent

pytestmark = pytest.mark.gpu

MAKEFILE = """\
NVCC ?= nvcc
prog: prog.o
\t$(NVCC) -o prog prog.o
prog.o: prog.cu
\t$(NVCC) -c -o prog.o prog.cu
"""


def _tree(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_a_make_build_is_profiled_from_a_copy_and_its_lines_name_the_users_files(tmp_path: Path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "prog.cu").write_text(FIXED)
    (app / "Makefile").write_text(MAKEFILE)
    made = _cli("init", str(app))
    assert made.returncode == 0, made.stderr
    lc = load_config(app / "optimas.yml")
    before = _tree(app)
    run = create_run(tmp_path / "runs")
    inputs = ProfilingAgent(RunContext(lc, run)).collect()
    assert _tree(app) == before  # no object, binary or touched file in the user's folder
    assert not (run.stage_dir("profile") / "workspace").exists()  # the copy is gone once ncu has read it
    diag = analyze(lc, inputs)
    files = {e.stall.file for e in diag.evidence if e.kind == "stall"}
    assert files and all(Path(f).resolve() == (app / "prog.cu").resolve() for f in files), files


def test_a_template_of_many_hot_instances_is_profiled_through_its_hottest(tmp_path: Path, caplog):
    """mixbench-cuda spreads its time over 55 instances of one template, all hot; profiling each took
    minutes and its report could not be read in time (issue #44). The targeted collection profiles
    profiling.max_targeted_kernels (4 here) of them, the hottest instance of each source function
    first, says what it left out, and the analysis still counts every instance."""
    app = tmp_path / "app"
    app.mkdir()
    for name in ("instances.cu", "optimas.yml"):
        shutil.copy(FIXTURES / "instances-h100" / name, app / name)
    lc = load_config(app / "optimas.yml")
    run = create_run(tmp_path / "runs")
    with caplog.at_level("INFO", logger="optimas"):
        inputs = ProfilingAgent(RunContext(lc, run)).collect()
    stage = run.manifest["stages"]["profile"]
    assert len(stage["profiled_kernels"]) == 4 < len(stage["hot_kernels"])
    # a pass whose launch count runs out before a kernel's first launch is followed by one for it
    captured = {name for report in inputs["report"] for name in report_kernel_names(report).values()}
    assert captured == set(stage["profiled_kernels"])
    assert f"profiling 4 of the {len(stage['hot_kernels'])} hot kernels in depth" in caplog.text
    diag = analyze(lc, inputs)
    # every hot function has evidence of its own (3 of them, 4 kernels); mix's other hot instances are counted
    assert all(f.profiled for f in diag.functions) and sum(len(f.profiled) for f in diag.functions) == 4
    mix = next(f for f in diag.functions if f.function == "mix")
    assert mix.instances == 12 and len(mix.hot) > len(mix.profiled)
    assert {e.kernel for e in diag.evidence if e.kind == "launch"} == set(stage["profiled_kernels"])
