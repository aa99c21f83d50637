"""On a GPU: profiling builds in a copy of the workspace (issue #31). A Make build leaves nothing in
the user's folder, and the profile's line evidence names the user's files, not the copy's.
Skipped where there is no GPU (CI); run on the device with `pytest -m gpu`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_gpu_counter_plan import FIXED, _cli

from runner.analysis.stage import analyze
from runner.base.config import load_config
from runner.base.context import RunContext
from runner.base.runstore import create_run
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
