"""`optimas init` on the survey's build shapes (benchmarks/results/init-survey-2026-12-07b.md): nvcc
called after a launcher variable that expands to nothing, and `--program NAME` where the build makes
several programs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from runner.base.config import load_config
from runner.base.sandbox import scratch
from runner.toolchain.builder import compile_candidate

needs_tools = pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make needed")

KERNEL = """\
__global__ void {kernel}(float* a, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }}
void run_{kernel}(float* a, int n) {{ {kernel}<<<(n + 255) / 256, 256>>>(a, n); cudaDeviceSynchronize(); }}
"""
MAIN = """\
#include <cstdio>
#include <cuda_runtime.h>
void run_{kernel}(float* a, int n);
int main() {{
  float* a;
  cudaMalloc(&a, 1024 * sizeof(float));
  run_{kernel}(a, 1024);
  printf("PASS\\n");
  return 0;
}}
"""
# NVIDIA's samples' shape (Learn-CUDA-Programming's Makefiles): nvcc from a toolkit folder, the
# recipes start with $(EXEC), which nothing sets, and -gencode for architectures CUDA 13 refuses
SAMPLES_MAKEFILE = """\
CUDA_PATH=/opt/cuda-that-is-not-here
HOST_COMPILER ?= g++
NVCC=${CUDA_PATH}/bin/nvcc -ccbin ${HOST_COMPILER}
TARGET=reduction_sequential reduction_interleaving
SMS = 52 60 75 80
$(foreach sm, ${SMS}, $(eval GENCODE_FLAGS += -gencode arch=compute_$(sm),code=sm_$(sm)))

all : ${TARGET}

%.o: %.cu
\t$(EXEC) $(NVCC) $(GENCODE_FLAGS) -o $@ -c $<

main_%.o: main_%.cpp
\t$(EXEC) $(NVCC) $(GENCODE_FLAGS) -o $@ -c $<

reduction_sequential: main_sequential.o sequential.o
\t$(EXEC) $(NVCC) -o $@ $(GENCODE_FLAGS) $+

reduction_interleaving: main_interleaving.o interleaving.o
\t$(EXEC) $(NVCC) -o $@ $(GENCODE_FLAGS) $+

clean:
\trm -f ${TARGET} *.o
"""


def _builds(config: Path, name: str | None) -> bool:
    """What check-config --build does for one program: build it as Optimas does (a workspace copy)."""
    lc = load_config(config)
    lc = lc.for_program(name) if name else lc
    with scratch("optimas-test-") as folder:
        return compile_candidate(lc, {}, "sm_90", Path(folder) / "build.log").ok


@needs_tools
def test_nvcc_called_after_an_empty_launcher_variable_is_set_to_the_nvcc_on_path(tmp_path: Path):
    """`$(EXEC) $(NVCC) ...`: EXEC expands to nothing, so NVCC is the compiler; init sets it to the
    nvcc on PATH (the toolkit folder the Makefile names does not exist) and says which architectures
    the -gencode flags (made by $(foreach ... $(eval))) ask for that CUDA 13 refuses."""
    root = tmp_path / "05_warp_divergence"
    root.mkdir()
    (root / "Makefile").write_text(SAMPLES_MAKEFILE)
    for variant in ("sequential", "interleaving"):
        (root / f"{variant}.cu").write_text(KERNEL.format(kernel=f"k_{variant}"))
        (root / f"main_{variant}.cpp").write_text(MAIN.format(kernel=f"k_{variant}"))
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    config = root / "optimas.yml"
    lc = load_config(config)
    assert lc.program_names() == ["reduction_sequential", "reduction_interleaving"]
    for name in lc.program_names():
        assert " make -B " + name + " NVCC=nvcc && cp " + name + " {exe}" in lc.for_program(name).config.app.build
    assert "nvcc is called through NVCC; the build sets it to the nvcc on PATH" in r.stdout
    assert "its nvcc flags generate code for compute_52, which CUDA 13 refuses" in r.stdout
    assert all(_builds(config, name) for name in lc.program_names())
    r = run_cli("init", str(root), "--force", "--program", "reduction_interleaving")
    assert r.returncode == 0, r.stderr
    one = load_config(config)
    assert one.program_names() == [] and "make -B reduction_interleaving NVCC=nvcc" in one.config.app.build
    assert _builds(config, None)


STANDALONE = """\
#include <cstdio>
__global__ void {kernel}(float* a) {{ a[threadIdx.x] = {value}; }}
int main() {{
  float* a;
  cudaMalloc(&a, 32 * sizeof(float));
  {kernel}<<<1, 32>>>(a);
  cudaDeviceSynchronize();
  printf("PASS\\n");
  return 0;
}}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_program_picks_one_file_of_a_folder_of_standalone_programs_and_an_unknown_one_is_an_error(tmp_path: Path):
    """A folder without a build file whose files each define main (an exercise and its solution):
    init lists each; `--program NAME` (a stem or a file name) builds that file alone; a name that is
    none of them is refused, naming the files."""
    root = tmp_path / "hw1"
    root.mkdir()
    for i, stem in enumerate(("vector_add", "vector_add_solution", "hello")):
        (root / f"{stem}.cu").write_text(STANDALONE.format(kernel=f"k{i}", value=i))
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    assert load_config(root / "optimas.yml").program_names() == ["hello", "vector_add", "vector_add_solution"]
    for asked in ("vector_add_solution", "vector_add_solution.cu"):
        r = run_cli("init", str(root), "--force", "--program", asked)
        assert r.returncode == 0, r.stderr
        one = load_config(root / "optimas.yml")
        assert one.program_names() == [] and one.config.app.build.endswith("-o {exe} vector_add_solution.cu")
        assert one.config.app.sources == ["vector_add_solution.cu"], one.config.app.sources
        assert _builds(root / "optimas.yml", None)
    r = run_cli("init", str(root), "--force", "--program", "vector_add_sol")
    assert r.returncode != 0
    assert "--program vector_add_sol: no such program here" in r.stderr and "vector_add_solution.cu" in r.stderr


def test_program_in_a_folder_of_one_program_with_kernels_names_the_files_defining_main(tmp_path: Path):
    """One file with kernels and main, another main without kernels (a CPU tool): the config is for
    one program, and a `--program` naming neither file is an error, not ignored."""
    root = tmp_path / "one"
    root.mkdir()
    (root / "bench.cu").write_text(STANDALONE.format(kernel="k", value=1))
    (root / "tool.cu").write_text("#include <cstdio>\nint main() { printf(\"hi\\n\"); return 0; }\n")
    r = run_cli("init", str(root), "--program", "other")
    assert r.returncode != 0 and not (root / "optimas.yml").exists()
    assert "--program other: no file defining main() is named so" in r.stderr and "bench.cu, tool.cu" in r.stderr
    r = run_cli("init", str(root), "--program", "bench")
    assert r.returncode == 0, r.stderr
    assert load_config(root / "optimas.yml").config.app.build.endswith("-o {exe} bench.cu")


@needs_tools
def test_program_names_a_binary_whose_target_is_named_otherwise(tmp_path: Path):
    """`prefetch: prefetch.cu` writing `-o $@.out` (Learn-CUDA-Programming's unified memory
    Makefile): each listed program builds its target and copies the .out; `--program prefetch` and
    `--program prefetch.out` both do. A recipe that compiles an object then links (`callbacks:`,
    cufft-callbacks): its binary is what it links, never the object."""
    root = tmp_path / "unified"
    root.mkdir()
    (root / "Makefile").write_text("NVCC = nvcc\nTARGET = simple prefetch\nall: ${TARGET}\n"
                                   "simple: simple.cu\n\t${NVCC} -o $@.out $<\n"
                                   "prefetch: prefetch.cu\n\t${NVCC} -o $@.out $<\nclean:\n\trm -f *.out\n")
    for i, stem in enumerate(("simple", "prefetch")):
        (root / f"{stem}.cu").write_text(STANDALONE.format(kernel=f"k{i}", value=i))
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    config = root / "optimas.yml"
    lc = load_config(config)
    assert lc.program_names() == ["simple.out", "prefetch.out"]
    assert "make -B prefetch NVCC=nvcc && cp prefetch.out {exe}" in lc.for_program("prefetch.out").config.app.build
    assert all(_builds(config, name) for name in lc.program_names())
    for asked in ("prefetch", "prefetch.out"):
        r = run_cli("init", str(root), "--force", "--program", asked)
        assert r.returncode == 0, r.stderr
        assert "make -B prefetch NVCC=nvcc && cp prefetch.out {exe}" in load_config(config).config.app.build
    assert _builds(config, None)
    root = tmp_path / "callbacks"
    root.mkdir()
    (root / "Makefile").write_text("callbacks: cb.cu\n\tnvcc -dc -o cufft_cb.o -c cb.cu\n"
                                   "\tnvcc -o cufft_cb cufft_cb.o\nclean:\n\trm -f cufft_cb *.o\n")
    (root / "cb.cu").write_text(STANDALONE.format(kernel="k", value=1))
    for asked in ((), ("--program", "cufft_cb"), ("--program", "callbacks")):
        r = run_cli("init", str(root), "--force", *asked)
        assert r.returncode == 0, r.stderr
        assert "make -B callbacks && cp cufft_cb {exe}" in load_config(root / "optimas.yml").config.app.build, asked
    assert _builds(root / "optimas.yml", None)
    r = run_cli("init", str(root), "--force", "--program", "nosuch")
    assert r.returncode != 0 and "--program nosuch: neither a target of the Makefile" in r.stderr


def test_program_where_cmake_cannot_configure_builds_that_target_or_names_the_targets(tmp_path: Path):
    """CMake that does not configure here (a library it links is not found, as cuBLAS for
    SGEMM_CUDA): init reads the targets from CMakeLists.txt's text, and `--program NAME` builds that
    one, or is refused naming the executables."""
    root = tmp_path / "sgemm"
    root.mkdir()
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(sgemm LANGUAGES CXX CUDA)\n"
        "find_library(MISSING_LIB optimas_no_such_library)\n"
        "add_executable(sgemm sgemm.cu)\ntarget_link_libraries(sgemm ${MISSING_LIB})\n"
        "add_executable(simplest_kernel simplest.cu)\n")
    for i, stem in enumerate(("sgemm", "simplest")):
        (root / f"{stem}.cu").write_text(STANDALONE.format(kernel=f"k{i}", value=i))
    r = run_cli("init", str(root), "--program", "simplest_kernel")
    assert r.returncode == 0, r.stderr
    assert "--target simplest_kernel " in load_config(root / "optimas.yml").config.app.build
    assert "building target 'simplest_kernel' (of sgemm, simplest_kernel; --program asks for it)" in r.stdout
    r = run_cli("init", str(root), "--force", "--program", "nosuch")
    assert r.returncode != 0 and "--program nosuch: CMakeLists.txt defines no executable of that name" in r.stderr
    assert "its executables: sgemm, simplest_kernel" in r.stderr


@needs_tools
def test_a_default_goal_that_makes_its_folder_then_the_binary_by_sub_makes(tmp_path: Path):
    """`all:` running `$(MAKE) dirs` (`if [ ! -d bin ] ; then mkdir bin ; fi`) then `$(MAKE)
    $(BINARIES)` (code-samples' american-options): the program is bin/app, its folder made first;
    `dirs` is never taken for the program."""
    root = tmp_path / "options"
    root.mkdir()
    (root / "Makefile").write_text("NVCC = nvcc\nBINARIES = bin/app\nall:\n\t$(MAKE) dirs\n\t$(MAKE) $(BINARIES)\n\n"
                                   "dirs:\n\tif [ ! -d bin ] ; then mkdir bin ; fi\n\n"
                                   "bin/app: app.cu\n\t$(NVCC) -O3 -o $@ $<\n\nclean:\n\trm -rf bin\n")
    (root / "app.cu").write_text(STANDALONE.format(kernel="k", value=1))
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    build = load_config(root / "optimas.yml").config.app.build
    assert "make -B dirs bin/app NVCC=nvcc && cp bin/app {exe}" in build, build
    assert _builds(root / "optimas.yml", None)
