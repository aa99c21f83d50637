"""One process run, two uses (issue #30): the closed loop's re-profile of a candidate does not run
the program a second time under the tracer to learn whether its GPU results repeat when the
candidate's validation has just shown it (two runs, bit for bit). Skipped where there is no GPU
(CI); run on the device with `pytest -m gpu`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_gpu_counter_plan import FIXED, _cli

from runner.base.config import load_config
from runner.base.context import RunContext
from runner.base.runstore import create_run
from runner.profiling.agent import ProfilingAgent
from runner.tracing.trace import ResultsVariation

pytestmark = pytest.mark.gpu


def test_a_reprofile_whose_repeatability_is_known_runs_the_program_once_under_the_tracer(tmp_path: Path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "prog.cu").write_text(FIXED)
    assert _cli("init", str(app)).returncode == 0
    lc = load_config(app / "optimas.yml")
    first = create_run(tmp_path / "runs")
    ProfilingAgent(RunContext(lc, first)).collect()
    logs = first.stage_dir("profile") / "logs"
    assert (logs / "trace.log").exists() and (logs / "trace-again.log").exists()
    assert "gpu_results_known_from" not in first.manifest

    again = create_run(tmp_path / "runs")
    known = (ResultsVariation(varies=False), "the evaluation's two runs of this candidate")
    ProfilingAgent(RunContext(lc, again), known_variation=known).collect()
    logs = again.stage_dir("profile") / "logs"
    assert (logs / "trace.log").exists() and not (logs / "trace-again.log").exists()
    assert again.manifest["gpu_results_known_from"] == known[1]
    written = json.loads((again.stage_dir("profile") / "gpu_results.json").read_text())
    assert written["varies"] is False
    names = [c["name"] for c in again.manifest["commands"]]
    assert names.count("trace") == 1 and "trace-again" not in names
