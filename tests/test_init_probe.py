"""`optimas init --probe` (runner.init.probe): each program built as the pipeline builds it and run
once, its exit status, time and last output lines said before anything is profiled. Real nvcc
builds; the programs here stop before any CUDA call, so no GPU is needed but for probe_all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.base.config import load_config
from runner.base.errors import ProfilingError
from runner.init.probe import probe, probe_all

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc needed")

GUARDED = """#include <cstdio>
#include <cstdlib>
__global__ void k(float* a) { a[threadIdx.x] += 1.0f; }
int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: %s N\\n", argv[0]); return 1; }
  printf("n = %d\\n", atoi(argv[1]));
  return 0;
}
"""


def _config(tmp_path: Path, run: str, source: str = GUARDED) -> Path:
    (tmp_path / "prog.cu").write_text(source)
    (tmp_path / "optimas.yml").write_text(f"app:\n  name: prog\n  sources: [prog.cu]\n"
                                          f"  build: nvcc -o {{exe}} prog.cu\n  run: \"{run}\"\n")
    return tmp_path / "optimas.yml"


def test_a_run_that_stops_at_once_is_told_with_its_message(tmp_path: Path):
    p = probe(load_config(_config(tmp_path, "{exe}")), "sm_90")
    assert p.built and p.returncode == 1 and not p.ok
    assert p.describe().startswith("prog: exit 1 in ") and "usage: " in p.describe() and " N" in p.tail


def test_a_run_with_its_arguments_exits_zero(tmp_path: Path):
    p = probe(load_config(_config(tmp_path, "{exe} 4096")), "sm_90")
    assert p.ok and p.tail == "n = 4096"


def test_a_build_that_fails_says_the_compilers_last_lines(tmp_path: Path):
    p = probe(load_config(_config(tmp_path, "{exe}", source="int main() { return undefined_name; }\n")), "sm_90")
    assert not p.built and p.returncode is None and "build failed" in p.describe() and "undefined_name" in p.tail


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_without_a_gpu_the_probe_says_so_before_building(tmp_path: Path):
    with pytest.raises(ProfilingError, match="--probe runs each program on this machine's GPU"):
        probe_all(load_config(_config(tmp_path, "{exe} 1")))


@pytest.mark.gpu
def test_init_probe_runs_each_program_once_on_the_gpu(tmp_path: Path):
    from conftest import run_cli

    (tmp_path / "prog.cu").write_text(GUARDED)
    r = run_cli("init", str(tmp_path), "--probe")
    assert r.returncode == 3, r.stdout + r.stderr  # main demands an argument the config cannot know
    name = tmp_path.name  # the program is named after its folder
    assert f"{name}: exit 1 in " in r.stdout and "usage: " in r.stdout and "0 of 1 programs built and ran" in r.stdout
    r = run_cli("init", str(tmp_path), "--probe", "--force", "--args", "64")
    assert r.returncode == 0 and f"{name}: exit 0 in " in r.stdout and "n = 64" in r.stdout
