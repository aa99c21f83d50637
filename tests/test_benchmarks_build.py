"""Every benchmark application builds with nvcc from its own optimas.yml (compile only: no GPU needed)."""

from __future__ import annotations

import shutil

import pytest
from conftest import REPO

from runner.base.config import load_config
from runner.toolchain.builder import compile_candidate

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
def test_application_compiles(app: str):
    """Built as the proposal stage builds it (a copy of the workspace, -Xptxas -v): through the test
    run's build cache, so the proposal tests that build the same sources reuse this build."""
    lc = load_config(REPO / "benchmarks" / app / "optimas.yml")
    r = compile_candidate(lc, {}, "sm_90")
    assert r.ok, r.output
    assert "warning" not in r.output.lower(), r.output
    assert r.resources and all(k.registers > 0 for k in r.resources)  # ptxas reported every kernel
