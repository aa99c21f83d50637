"""`optimas init` learns a build it cannot read by running it once in a copy, its nvcc calls
recorded by Optimas's shim (as Bear and compiledb observe a build): a project built by a script of
its own gets the binary its build links, compile_commands.json from the calls, and only the kernels
the build compiles; a build that fails says why; the user's folder is never built in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from runner.base.config import load_config
from runner.base.sandbox import scratch
from runner.toolchain.builder import compile_candidate

APP = """\
#include <cstdio>
#define N 4096
__global__ void scale(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }
int main() {
  float* a;
  cudaMalloc(&a, N * sizeof(float));
  scale<<<(N + 255) / 256, 256>>>(a, N);
  cudaDeviceSynchronize();
  printf("done\\n");
  return 0;
}
"""

# A file of the folder the build never compiles (an old version kept beside the program).
UNUSED = APP.replace("scale", "old_scale")

SCRIPT = """\
#!/bin/sh
set -e
mkdir -p out
nvcc -O2 -c app.cu -o out/app.o
nvcc out/app.o -o out/app
"""

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc needed")


def _project(root: Path, script: str) -> Path:
    root.mkdir()
    (root / "app.cu").write_text(APP)
    (root / "app_old.cu").write_text(UNUSED)
    (root / "build.sh").write_text(script)
    return root


@needs_nvcc
def test_a_build_script_is_observed_in_a_copy_and_its_binary_sources_and_compile_commands_learned(tmp_path: Path):
    root = _project(tmp_path / "proj", SCRIPT)
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    assert not (root / "out").exists(), "the observed build ran in the user's folder"
    lc = load_config(root / "optimas.yml")
    app = lc.config.app
    assert "sh build.sh" in app.build and app.build.endswith(" && cp out/app {exe}'"), app.build
    assert "the observed build links out/app (from out/app.o), copied to {exe}" in r.stdout
    assert app.sources == ["app.cu"], app.sources
    assert "it never reads app_old.cu" in r.stdout

    entries = json.loads((root / "compile_commands.json").read_text())
    compiled = [e for e in entries if e["output"] == "out/app.o"]
    assert len(compiled) == 1, entries
    assert compiled[0]["file"] == "app.cu" and compiled[0]["directory"] == "."
    assert compiled[0]["arguments"][:2] == ["nvcc", "-O2"] and "-c" in compiled[0]["arguments"]
    assert "2 nvcc calls seen in one run of the build in a copy" in r.stdout, r.stdout

    with scratch("optimas-test-") as folder:  # the config builds as written, as check-config --build would
        assert compile_candidate(lc, {}, "sm_90", Path(folder) / "build.log").ok


@needs_nvcc
def test_a_build_script_that_fails_when_observed_says_why_and_writes_no_compile_commands(tmp_path: Path):
    failing = "#!/bin/sh\necho 'error: CUDA_HOME is not set' >&2\nexit 1\n"
    root = _project(tmp_path / "proj", failing)
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    assert "the build, run once in a copy to observe it, failed" in r.stdout
    assert "error: CUDA_HOME is not set" in r.stdout
    assert "the binary the script makes is not known" in r.stdout
    assert not (root / "compile_commands.json").exists()
    assert (root / "optimas.yml").exists()


@needs_nvcc
def test_a_makefile_whose_recipe_calls_a_script_is_observed(tmp_path: Path):
    """make's dry run shows no compiler command when a recipe calls a script: the build is run."""
    if not shutil.which("make"):
        pytest.skip("make needed")
    root = _project(tmp_path / "proj", SCRIPT)
    (root / "Makefile").write_text("all: out/app\nout/app: app.cu build.sh\n\tsh build.sh\n")
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    assert "seen in one run of the build in a copy" in r.stdout, r.stdout
    assert load_config(root / "optimas.yml").config.app.sources == ["app.cu"]
    entries = json.loads((root / "compile_commands.json").read_text())
    assert [e["file"] for e in entries] == ["app.cu"]
