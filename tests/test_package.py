"""The installed package, not the source checkout: a wheel built from the repository, installed into
a fresh virtual environment, runs the demo from another folder (issue #16)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


@pytest.mark.slow
def test_the_wheel_runs_the_demo_from_any_folder(tmp_path: Path):
    dist, venv, elsewhere = tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(REPO)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    assert "deprecat" not in build.stderr.lower()  # clean build metadata (the backend's warnings land here)
    (wheel,) = dist.glob("optimas-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                              "--no-index", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    # the pinned dependencies come from the test environment; the package itself from the wheel only
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "test-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = subprocess.run([str(python), "-c", "import runner; print(runner.__file__)"], capture_output=True,
                           text=True, cwd=elsewhere, env=env)
    assert where.stdout.strip().startswith(purelib), where.stdout + where.stderr

    r = subprocess.run([str(venv / "bin" / "optimas"), "demo"], capture_output=True, text=True, cwd=elsewhere,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # the demo's own run, and the evaluated run shipped with the package, copied beside it
    shipped = "20261203T174114Z-98e26ae2-9e55-4554-8c29-ed2ac5b42bf7"
    (run,) = (p for p in (elsewhere / "runs").iterdir() if p.name != shipped)
    assert (elsewhere / "runs" / shipped / "evaluation" / "result.json").is_file()
    # what a GPU adds, shown with no GPU and no network: the verdict, the gain with its interval, EAR
    evaluated = r.stdout.split("What they add:", 1)[1]
    assert "written by hand and replayed in place of a model's" in evaluated
    assert "verdict: improvement" in evaluated and "+132.0% (95% interval +131.8% to +132.3%" in evaluated
    assert "EAR: coverage 1.00, localization 0.57, directional consistency 1.00, hallucination rate 0.00, " \
           "correctness yes" in evaluated
    assert (run / "analysis" / "diagnostics.md").read_text().startswith("# Diagnostics (NVIDIA H200")
    assert (run / "prompt" / "user-1.md").exists() and "Hot kernel matmul" in (run / "prompt" / "user-1.md").read_text()
    assert (run / "candidates" / "1" / "diff.patch").exists()
    assert f"Run folder: runs/{run.name}" in r.stdout
