"""`optimas init` on an autoconf project's folder (SHOC's shape: a shipped `configure` at the top
makes each folder's Makefile from Makefile.in): the build configures the pipeline's copy, then makes
the program that make's dry run of the configured folder links (survey defect 4)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from conftest import run_cli

from runner.base.config import load_config
from runner.base.sandbox import scratch
from runner.build.cache import compile_candidate

needs_tools = pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make needed")

# a hand-written configure (no autoconf needed): --with-cuda finds nvcc, unless its library check
# (a library named on the command line, as SHOC's cuBLAS and cuFFT checks) fails; NVCC is then empty
CONFIGURE = """\
#!/bin/sh
NVCC=""
NEED=""
for a in "$@"; do
  case "$a" in
    --help) echo "  --with-cuda  build CUDA  --with-mpi  use MPI  --with-opencl  use OpenCL"; exit 0;;
    --with-mpi) echo "configure: error: MPI not found" >&2; exit 1;;
    --with-cuda|--without-mpi|--without-opencl) ;;
    NEED=*) NEED="${a#NEED=}";;
    CUDA_CPPFLAGS=*) ;;
    *) echo "configure: error: unknown option $a" >&2; exit 1;;
  esac
done
echo "checking for nvcc... $(command -v nvcc)"
NVCC=$(command -v nvcc)
if [ -n "$NEED" ]; then echo "checking for cuNeeded in -l$NEED... no"; NVCC=""; fi
sed -e "s|@NVCC@|$NVCC|" src/vadd/Makefile.in > src/vadd/Makefile
"""
# SHOC's shape: the configured NVCC compiles the .cu, another command (SHOC's configured CXX) links
MAKEFILE_IN = """\
NVCC = @NVCC@
all: vadd
vadd.o: vadd.cu
\t$(NVCC) -c vadd.cu
vadd: vadd.o
\tnvcc -o vadd vadd.o
"""
VADD = """\
#include <cstdio>
__global__ void vadd(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1; }
int main() {
  float* a;
  cudaMalloc(&a, 256 * sizeof(float));
  vadd<<<1, 256>>>(a, 256);
  cudaDeviceSynchronize();
  printf("PASS\\n");
  return 0;
}
"""


def _project(tmp_path: Path, need: str = "") -> Path:
    top = tmp_path / "suite"
    (top / "src" / "vadd").mkdir(parents=True)
    text = CONFIGURE.replace('NEED=""', f'NEED="{need}"', 1)
    (top / "configure").write_text(text)
    (top / "configure").chmod((top / "configure").stat().st_mode | stat.S_IXUSR)
    (top / "configure.ac").write_text("AC_INIT([suite], [1.0])\n")
    (top / "src" / "vadd" / "Makefile.in").write_text(MAKEFILE_IN)
    (top / "src" / "vadd" / "vadd.cu").write_text(VADD)
    return top / "src" / "vadd"


def _builds(config: Path) -> tuple[bool, str]:
    with scratch("optimas-test-") as folder:
        log = Path(folder) / "build.log"
        built = compile_candidate(load_config(config), {}, "sm_90", log)
        return built.ok, built.output


@needs_tools
def test_a_folder_of_an_autoconf_project_is_configured_in_the_copy_then_made(tmp_path: Path):
    """configure runs in the pipeline's copy of the whole project (its workspace), with CUDA on and
    MPI and OpenCL off, then make builds the target the configured Makefile links; the user's folder
    is never configured (init asks configure and make in a temporary copy)."""
    prog = _project(tmp_path)
    r = run_cli("init", str(prog))
    assert r.returncode == 0, r.stderr
    assert not (prog / "Makefile").exists()  # configure ran in a copy only
    app = load_config(prog / "optimas.yml").config.app
    assert app.workspace == "../.."
    assert "./configure --with-cuda --without-mpi --without-opencl" in app.build
    assert "make vadd && cp vadd {exe}" in app.build
    assert "autoconf project: ./configure in ../.. makes the Makefiles" in r.stdout
    ok, out = _builds(prog / "optimas.yml")
    assert ok, out
    assert not (prog / "Makefile").exists()


@needs_tools
def test_configure_that_finds_no_usable_cuda_is_said_and_the_build_names_why(tmp_path: Path):
    """Where configure's CUDA checks fail on this machine (SHOC's cuBLAS and cuFFT), init says so
    and the build stops at once with one line naming the checks, not at a compile of nothing."""
    prog = _project(tmp_path, need="cublas")
    r = run_cli("init", str(prog))
    assert r.returncode == 0, r.stderr
    assert "found no usable CUDA on this machine: its checks cuNeeded in -lcublas said no" in r.stdout
    ok, out = _builds(prog / "optimas.yml")
    assert not ok
    assert "configure found no usable CUDA (where init ran, its checks said no: cuNeeded in -lcublas)" in out
