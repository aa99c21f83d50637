"""Every benchmark application builds with nvcc from its own optimas.yml (compile only: no GPU needed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from runner.base.config import load_config
from runner.base.processes import render

APPS = sorted(p.parent.name for p in (REPO / "benchmarks").glob("*/optimas.yml"))


def test_there_are_eight_applications_with_three_configurations():
    assert len(APPS) >= 8
    for app in APPS:
        lc = load_config(REPO / "benchmarks" / app / "optimas.yml")
        assert len(lc.config.app.configurations) >= 3
        assert lc.config.app.profile_configuration in lc.config.app.configurations
        for src in lc.config.app.sources:
            assert (lc.resolve(lc.config.app.workdir) / src).is_file()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("app", APPS)
def test_application_compiles(app: str, tmp_path: Path):
    lc = load_config(REPO / "benchmarks" / app / "optimas.yml")
    argv = render(lc.config.app.build, exe=tmp_path / app, arch="sm_90", lineinfo="-lineinfo", config="",
                  seed=1, scale=1, out="")
    r = subprocess.run(argv, cwd=lc.resolve(lc.config.app.workdir), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
    assert (tmp_path / app).is_file()
