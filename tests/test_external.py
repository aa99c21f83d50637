"""The third-party programs under benchmarks/external, as `optimas init` and its edits left them:
each config passes check-config, and the model sees each program's hot kernel with the helpers it
calls across files, templates included (issue #14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, run_cli

from runner.analysis.evidence import Diagnostics, GpuInfo
from runner.analysis.hot import KernelTime
from runner.base.config import load_config
from runner.base.workspace import read_context
from runner.proposal.prompt import build_prompt

SAMPLES = REPO / "benchmarks" / "external" / "cuda-samples" / "Samples"
CONFIGS = sorted(SAMPLES.glob("*/*/optimas.yml"))

# programs that print no verdict (on the H200, no baseline run printed `Test passed`)
EXIT_CODE_ONLY = {"threadFenceReduction", "sortingNetworks"}
# (program, the hot kernel as ncu names an instance of it (reduction's and threadFenceReduction's as
# the H200 runs of 2026-12-03 did), blocks the prompt must show)
CONTEXT = [
    ("reduction", "void reduce7<int, 256, 1>(const T1 *, T1 *, unsigned int)", ["Hot kernel reduce7"]),
    ("matrixMul", "void MatrixMulCUDA<32>(float *, float *, float *, int, int)", ["Hot kernel MatrixMulCUDA"]),
    ("threadFenceReduction", "void reduceSinglePass<128, 1>(const float *, float *, unsigned int)",
     ["Hot kernel reduceSinglePass", "Device function reduceBlock (read-only)"]),
    ("BlackScholes", "BlackScholesGPU(float2 *, float2 *, float2 *, float2 *, float2 *, float, float, int)",
     ["Hot kernel BlackScholesGPU", "Device function BlackScholesBodyGPU (read-only)",
      "Device function cndGPU (read-only)"]),
    ("sortingNetworks", "bitonicSortShared(unsigned int *, unsigned int *, unsigned int *, unsigned int *, "
     "unsigned int, unsigned int)", ["Hot kernel bitonicSortShared", "Device function Comparator (read-only)"]),
    ("histogram", "histogram64Kernel(unsigned int *, uint4 *, unsigned int)", ["Hot kernel histogram64Kernel"]),
    # its block sizes are macros between the kernels, its radius a macro in a header
    ("convolutionSeparable", "convolutionColumnsKernel(float *, float *, int, int, int)",
     ["Hot kernel convolutionColumnsKernel", "Definitions the code shown uses (read-only)"]),
]


def test_there_are_eight_programs_each_with_its_license_and_upstream():
    assert len(CONFIGS) == 8
    root = REPO / "benchmarks" / "external" / "cuda-samples"
    assert (root / "LICENSE").read_text().startswith("Copyright (c) 2022, NVIDIA CORPORATION")
    assert "commit: c94ff366aed18c797b8a85dfaac7817b0228b420" in (root / "UPSTREAM").read_text()


@pytest.mark.parametrize("config", CONFIGS, ids=[c.parent.name for c in CONFIGS])
def test_each_config_passes_check_config(config: Path):
    r = run_cli("check-config", "--config", str(config))
    assert r.returncode == 0, r.stderr
    app = load_config(config).config.app
    assert app.gpu_results.compare == "auto"
    if config.parent.name in EXIT_CODE_ONLY:  # their verdict is the exit code: no printed line to demand
        assert app.stdout.pass_pattern is None
    else:
        assert app.stdout.pass_pattern and app.stdout.fail_pattern


@pytest.mark.parametrize("program, kernel, shown", CONTEXT, ids=[c[0] for c in CONTEXT])
def test_the_prompt_holds_the_hot_kernel_and_its_helpers_across_files(program: str, kernel: str, shown: list[str]):
    (config,) = [c for c in CONFIGS if c.parent.name == program]
    lc = load_config(config)
    files = read_context(*lc.dirs, lc.config.app.sources)
    diag = Diagnostics(gpu=GpuInfo(name="NVIDIA H200"), alpha=0.8, kernels=[
        KernelTime(kernel=kernel, total_ns=1e6, launches=1, share=1.0, cumulative_share=1.0, hot=True)])
    prompt = build_prompt(program, diag, files)
    for title in shown:
        assert f"### {title} (" in prompt.user, title
    assert prompt.editable and all(name in files for name in prompt.editable)
