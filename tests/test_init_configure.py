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
from runner.toolchain.builder import compile_candidate

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


# BabelStream's shape (survey defect 9): CMake stops unless MODEL names one of its models, and the
# CUDA one's folder (src/cuda) holds the kernels; that model's .cmake requires the compiler and arch
MODELS_CMAKE = """\
cmake_minimum_required(VERSION 3.18)
project(stream LANGUAGES CXX)
macro(register_model NAME)
  list(APPEND MODELS ${NAME})
endmacro()
macro(register_flag_required NAME DESCRIPTION)
  if (NOT DEFINED ${NAME})
    message(FATAL_ERROR "`${NAME}` is not set! (${DESCRIPTION})")
  endif ()
endmacro()
register_model(serial)
register_model(cuda)
if (NOT DEFINED MODEL)
    message(FATAL_ERROR "MODEL is unspecified, pick one from the available models")
endif ()
include(src/${MODEL}/model.cmake)
"""
CUDA_MODEL = """\
register_flag_required(CMAKE_CUDA_COMPILER "Path to the CUDA nvcc compiler")
register_flag_required(CUDA_ARCH "Nvidia architecture, will be passed in via `-arch=` (e.g `sm_70`) for nvcc")
enable_language(CUDA)
add_executable(cuda-stream src/cuda/stream.cu)
"""


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cmake")), reason="nvcc and cmake needed")
def test_a_required_cmake_model_is_set_to_the_one_whose_folder_holds_the_kernels(tmp_path: Path):
    """MODEL unset stops CMake; the kernels are in src/cuda and CMakeLists.txt names `cuda` among its
    models: init configures with -DMODEL=cuda (and the compiler and arch that model's .cmake requires),
    through the File API, says so, and the build it writes builds."""
    root = tmp_path / "stream"
    (root / "src" / "cuda").mkdir(parents=True)
    (root / "src" / "serial").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(MODELS_CMAKE)
    (root / "src" / "cuda" / "model.cmake").write_text(CUDA_MODEL)
    (root / "src" / "cuda" / "stream.cu").write_text(VADD)
    (root / "src" / "serial" / "model.cmake").write_text("add_executable(serial-stream src/serial/stream.cpp)\n")
    (root / "src" / "serial" / "stream.cpp").write_text("int main() { return 0; }\n")
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    assert "the build sets -DMODEL=cuda: the CUDA kernels are in a folder cuda/" in r.stdout
    assert "CMake's File API (configured in a temporary folder) lists 1 executable" in r.stdout
    build = load_config(root / "optimas.yml").config.app.build
    assert "-DMODEL=cuda -DCMAKE_CUDA_COMPILER=nvcc -DCUDA_ARCH={arch}" in build
    assert "--target cuda-stream" in build
    ok, out = _builds(root / "optimas.yml")
    assert ok, out
