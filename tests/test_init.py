"""`optimas init` on project layouts as users have them: one nvcc line, a Makefile, CMake."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import run_cli

from runner.base.config import AppConfig, load_config
from runner.base.processes import render

MAIN = """\
#include "kernels/saxpy.cuh"
#include <cstdio>
int main(int argc, char** argv) {
  int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * 4);
  cudaMalloc(&y, n * 4);
  saxpy<float, 256><<<n / 256, 256>>>(2.0f, x, y, n);
  cudaDeviceSynchronize();
  printf("PASS\\n");
  return 0;
}
"""
SAXPY = """\
#pragma once
template <typename T, int BLOCK>
__global__ void saxpy(T a, const T* x, T* y, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def project(root: Path, build_file: tuple[str, str] | None = None) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "main.cu").write_text(MAIN)
    (root / "kernels" / "saxpy.cuh").write_text(SAXPY)
    (root / "build").mkdir()  # a build folder's copies are not sources
    (root / "build" / "old.cu").write_text("__global__ void stale() {}\n")
    if build_file:
        (root / build_file[0]).write_text(build_file[1])
    return root


def init(*args: str) -> subprocess.CompletedProcess:
    return run_cli("init", *args)


def initialized(root: Path, *args: str) -> tuple[subprocess.CompletedProcess, AppConfig]:
    """init in `root`, which must succeed, and the app section it wrote."""
    r = init(str(root), *args)
    assert r.returncode == 0, r.stderr
    return r, load_config(root / "optimas.yml").config.app


def make_builds(build: str, root: Path, exe: Path) -> subprocess.CompletedProcess | None:
    """Run a written build command in `root` as the pipeline would for the H200, where nvcc and make
    are installed (None elsewhere), and check that it made `exe`."""
    if not (shutil.which("nvcc") and shutil.which("make")):
        return None
    built = subprocess.run(render(build, exe=exe, arch="sm_90", lineinfo="-lineinfo"), cwd=root,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0 and exe.is_file(), built.stderr
    return built


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_plain_nvcc_project_gets_a_config_that_checks_and_builds(tmp_path: Path):
    root = project(tmp_path / "saxpy")
    r = init(str(root), "--args", "--n 1024")
    assert r.returncode == 0, r.stderr
    assert "1 kernel in 1 file, build by nvcc" in r.stdout and "optimas check-config" in r.stdout
    lc = load_config(root / "optimas.yml")
    app = lc.config.app
    assert app.sources == ["kernels/saxpy.cuh"] and app.run == "{exe} --n {n}" and app.configurations == ["default"]
    # the size is a placeholder, so that the counter runs can scale it
    assert app.values("default") == {"n": "1024"} and app.profile_run == "{exe} --n {n*scale}"
    assert run_cli("check-config", "--config", str(root / "optimas.yml")).returncode == 0
    exe = tmp_path / "app"
    argv = render(app.build, exe=exe, arch="sm_90", lineinfo="-lineinfo")
    built = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert exe.is_file()


def test_a_makefile_project_builds_its_target(tmp_path: Path):
    mk = ("NVCC ?= nvcc\nEXTRA_NVCCFLAGS ?=\n.PHONY: all clean\nall: saxpy\n"
          "saxpy: main.cu kernels/saxpy.cuh\n\t$(NVCC) -O3 $(EXTRA_NVCCFLAGS) -o $@ main.cu\nclean:\n\trm -f saxpy\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    r, app = initialized(root)
    assert app.build == "sh -c 'make -B saxpy EXTRA_NVCCFLAGS={lineinfo} && cp saxpy {exe}'"
    assert "build by make" in r.stdout
    make_builds(app.build, root, tmp_path / "app")


def test_a_makefile_that_calls_nvcc_through_a_variable_gets_arch_and_lineinfo_and_its_binary(tmp_path: Path):
    """A Makefile as older research suites write them: the compiler in a variable set from a
    toolkit folder, the binary named by another variable, a first target that is not `all`."""
    mk = ("CUDA_DIR ?= /opt/cuda-that-is-not-here\nCC := $(CUDA_DIR)/bin/nvcc\nSRC = main.cu\n"
          "EXE = saxpy_bench\n\nrelease: $(SRC)\n\t$(CC) $(SRC) -o $(EXE) -I.\n\n"
          "other:\n\tclang++ --cuda-gpu-arch=sm_70 $(SRC) -o x\nclean:\n\trm -f $(EXE)\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    r, app = initialized(root)
    assert "building target 'release', which makes saxpy_bench" in r.stdout
    assert app.build == ("sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch} {lineinfo}\" make -B release CC=nvcc && "
                         "cp saxpy_bench {exe}'")
    make_builds(app.build, root, tmp_path / "app")  # CUDA_DIR's nvcc would not exist


def test_a_makefile_that_compiles_objects_in_rules_of_their_own(tmp_path: Path):
    """The target named through a variable, objects compiled by another rule, flags appended under
    a conditional; an architecture CUDA 13 no longer builds gives way to the appended one."""
    mk = ("NVCC = $(CUDA_DIR)/bin/nvcc\nNVCC_FLAGS = -I.\nifeq ($(dbg),1)\n\tNVCC_FLAGS += -g\nelse\n"
          "\tNVCC_FLAGS += -O2\nendif\nBIN = saxpy_gpu\n\n$(BIN): main.o\n\t$(NVCC) main.o -o $(BIN)\n\n"
          "main.o: main.cu\n\t$(NVCC) $(NVCC_FLAGS) -c main.cu\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    assert init(str(root)).returncode == 0
    app = load_config(root / "optimas.yml").config.app
    assert app.build == ("sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch} {lineinfo}\" make -B saxpy_gpu NVCC=nvcc && "
                         "cp saxpy_gpu {exe}'")
    (root / "Makefile").write_text(mk.replace("NVCC_FLAGS += -O2", "NVCC_FLAGS += -O2 -arch=sm_20"))
    r = init(str(root), "--force")
    assert "its nvcc flags ask for sm_20, which CUDA 13 no longer builds; Optimas's builds drop" in r.stdout
    gencode = mk.replace("NVCC_FLAGS += -O2", "NVCC_FLAGS += -O2 -gencode arch=compute_60,code=sm_60")
    (root / "Makefile").write_text(gencode)
    assert "generate code for compute_60, which CUDA 13 refuses; Optimas's builds drop that -gencode" in init(
        str(root), "--force").stdout
    literal = "saxpy_gpu: main.cu\n\t@nvcc -O2 -arch=sm_35 main.cu -o saxpy_gpu\n"  # nvcc named, not a variable
    (root / "Makefile").write_text(literal)
    assert "its nvcc flags ask for sm_35, which CUDA 13 no longer builds" in init(str(root), "--force").stdout
    (root / "Makefile").write_text(mk.replace("NVCC_FLAGS += -O2", "NVCC_FLAGS += -O2 -arch=sm_20"))
    built = make_builds(app.build, root, tmp_path / "app")  # sm_20 gave way to the appended sm_90
    assert built is None or "incompatible redefinition for option 'gpu-architecture'" in built.stderr


def test_a_makefile_that_builds_in_a_subfolder_by_a_recursive_make(tmp_path: Path):
    top = "all: bench\n\nbench:\n\tcd src; $(MAKE)\n\nclean:\n\tcd src; make clean\n"
    root = project(tmp_path / "p", ("Makefile", top))
    (root / "src").mkdir()
    (root / "src" / "Makefile").write_text("NVCC ?= nvcc\nEXE = bench_gpu\n\n$(EXE): ../main.cu\n"
                                           "\t$(NVCC) -O2 -I.. -o $@ ../main.cu\n")
    r, app = initialized(root)
    assert "building target 'bench', which makes src/bench_gpu" in r.stdout
    assert app.build == "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch} {lineinfo}\" make -B bench && cp src/bench_gpu {exe}'"
    make_builds(app.build, root, tmp_path / "app")


def test_a_makefile_in_the_kernels_subfolder_builds_when_the_top_has_none(tmp_path: Path):
    """src/Makefile over the kernels' files (a top CMakeLists.txt with no add_executable, and a
    tools/ Makefile over none of them, do not count); its run target's arguments are not taken."""
    root = tmp_path / "p"
    (root / "src" / "kernels").mkdir(parents=True)
    (root / "tools").mkdir()
    (root / "src" / "main.cu").write_text(MAIN)
    (root / "src" / "kernels" / "saxpy.cuh").write_text(SAXPY)
    (root / "CMakeLists.txt").write_text("add_suite_benchmark(NAME saxpy SOURCES src/main.cu)\n")
    (root / "tools" / "Makefile").write_text("all:\n\techo tools\n")
    (root / "src" / "Makefile").write_text("CC = nvcc\nprogram = main\n\n$(program): main.cu\n"
                                           "\t$(CC) -O2 main.cu -o $(program)\n\n"
                                           "run: $(program)\n\t./$(program) data/in.txt\n")
    r, app = initialized(root)
    assert app.build == ("sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch} {lineinfo}\" make -C src -B main CC=nvcc && "
                         "cp src/main {exe}'")
    assert app.run == "{exe}" and "no Makefile at the top: the one in src/, over the kernels' files" in r.stdout
    make_builds(app.build, root, tmp_path / "app")


def test_a_makefile_whose_rule_is_in_an_included_file_and_named_all(tmp_path: Path):
    """The suite's shared common.mk holds the only rule (`all`), with the variables set before the
    include; its -o names the binary."""
    mk = ("EXECUTABLE := saxpy.exe\nCUFILES := main.cu\nPATH_TO_UTILS := ../utils\n\n"
          "include ${PATH_TO_UTILS}/common.mk\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "common.mk").write_text("all:\n\tnvcc -O3 ${CUFILES} -I. -o ${EXECUTABLE}\n"
                                                  "clean:\n\trm -f *.exe\n")
    r, app = initialized(root)
    assert app.build == "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch} {lineinfo}\" make -B all && cp saxpy.exe {exe}'"
    make_builds(app.build, root, tmp_path / "app")


def test_a_makefile_whose_first_target_is_a_cpu_build_builds_the_cuda_one(tmp_path: Path):
    mk = ("CC = gcc\nNVCC = nvcc\nall: prog prog_cu\n\nprog: prog.c\n\t$(CC) -O2 prog.c -o prog\n\n"
          "prog_cu: main.cu\n\t$(NVCC) -O2 main.cu -o prog_cu\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    (root / "prog.c").write_text("int main(void) { return 0; }\n")
    r, app = initialized(root)
    assert "make -B prog_cu NVCC=nvcc && cp prog_cu {exe}" in app.build
    make_builds(app.build, root, tmp_path / "app")


def test_a_makefile_whose_default_goal_is_all_builds_what_all_needs_not_a_rule_above_it(tmp_path: Path):
    """Rodinia's lud: `all: $(EXECUTABLE)` first, then a `clang:` variant written above the
    executable's rule. make builds `all`, so init builds the executable, not the clang one."""
    mk = ("NVCC = nvcc\nEXECUTABLE := prog\nOBJS = main.o\n.PHONY: all clean\nall : $(EXECUTABLE)\n\n"
          "%.o: %.cu\n\t$(NVCC) -o $@ -c $<\n\n"
          "clang: $(SRC)\n\tclang++ main.cu -o $(EXECUTABLE) --cuda-gpu-arch=sm_20\n\n"
          "$(EXECUTABLE) : $(OBJS)\n\t$(NVCC) -o $@ $?\n\nclean:\n\trm -f $(EXECUTABLE) $(OBJS)\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    r, app = initialized(root)
    assert "make -B prog NVCC=nvcc && cp prog {exe}" in app.build, app.build
    make_builds(app.build, root, tmp_path / "app")


def test_a_folder_the_default_goal_makes_first_is_made_before_the_program(tmp_path: Path):
    """HeCBench's lsqt: `all: builddir main`, builddir only runs mkdir and main's objects go there:
    init builds the program, not the folder, and makes the folder first."""
    mk = ("CC = nvcc\nODIR = obj\nOBJ = $(ODIR)/main.o\n\nall: builddir main\n\nbuilddir:\n\tmkdir -p $(ODIR)\n\n"
          "$(ODIR)/%.o: %.cu\n\t$(CC) -c $< -o $@\n\nmain: $(OBJ)\n\t$(CC) $^ -o $@\n\nclean:\n\trm -f main\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    r, app = initialized(root)
    assert "make -B builddir main CC=nvcc && cp main {exe}" in app.build, app.build
    assert "building target 'main', which makes main" in r.stdout
    make_builds(app.build, root, tmp_path / "app")


def test_a_vendored_library_s_headers_are_found_and_what_it_prints_is_not_the_program_s(tmp_path: Path):
    """HeCBench's snicit: `#include "CLI11/CLI11.hpp"` from 3rd-party/ (which a suite's CMake
    function adds with -I), and CLI11 prints "... FAILED" in its own messages: no build file init
    reads says where the header is, and the program prints no verdict of its own."""
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "3rd-party" / "CLI11").mkdir(parents=True)
    (root / "3rd-party" / "CLI11" / "CLI11.hpp").write_text(
        '#pragma once\n#include "Detail.hpp"\ninline const char* check() { return "Check FAILED"; }\n')
    (root / "3rd-party" / "CLI11" / "Detail.hpp").write_text("#pragma once\n#include <cstdlib>\n")
    (root / "src" / "main.cu").write_text(
        '#include <cstdio>\n#include "CLI11/CLI11.hpp"\n__global__ void k(float *a) { a[threadIdx.x] = 1; }\n'
        'int main() { float *a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); cudaDeviceSynchronize(); '
        'printf("%s\\n", check() + 20); return 0; }\n')
    r, app = initialized(root)
    assert app.build == "nvcc -O3 -std=c++17 -arch={arch} {lineinfo} -I. -I3rd-party -o {exe} src/main.cu"
    assert "headers the sources include are under 3rd-party: the build adds -I3rd-party" in r.stdout
    assert app.stdout.fail_pattern is None, app.stdout
    if shutil.which("nvcc"):
        built = subprocess.run(render(app.build, exe=tmp_path / "app", arch="sm_90", lineinfo=""), cwd=root,
                               capture_output=True, text=True, timeout=300)
        assert built.returncode == 0, built.stderr


def test_a_c_linker_of_nvcc_objects_is_named_before_the_build_fails_on_it(tmp_path: Path):
    """Rodinia's backprop: nvcc compiles the .cu, gcc links it without the C++ runtime that CUDA 13's
    host code calls. init says so; a link by g++ draws no note."""
    mk = ("CC = gcc\nNVCC = nvcc\nprog: host.o kern.o\n\t$(CC) host.o kern.o -o prog -lcudart -lm\n\n"
          "host.o: host.c\n\t$(CC) -c host.c\n\nkern.o: kern.cu\n\t$(NVCC) -c kern.cu\n")
    root = tmp_path / "p"
    root.mkdir()
    (root / "kern.cu").write_text("__global__ void k(float *a) { a[threadIdx.x] = 0; }\n")
    (root / "host.c").write_text("int main(void) { return 0; }\n")
    (root / "Makefile").write_text(mk)
    r = init(str(root))
    assert r.returncode == 0, r.stderr
    assert "prog is linked by gcc, a C compiler" in r.stdout and "-lstdc++" in r.stdout
    (root / "Makefile").write_text(mk.replace("\t$(CC) host.o", "\tg++ host.o"))
    r = init(str(root), "--force")
    assert r.returncode == 0 and "a C compiler" not in r.stdout


def test_the_run_arguments_come_from_the_makefiles_run_target_unless_given(tmp_path: Path):
    mk = ("CC = nvcc\nLAUNCHER =\nprogram = main\n\n$(program): main.cu\n\t$(CC) main.cu -o $(program)\n\n"
          "run: $(program)\n\t$(LAUNCHER) ./$(program) 8192 -i 10\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    r, app = initialized(root)
    assert app.run == "{exe} {arg1} -i 10" and app.values("default") == {"arg1": "8192"}
    assert "the run arguments are the ones the Makefile's run target gives: 8192 -i 10" in r.stdout
    r = init(str(root), "--force", "--args", "64")
    assert load_config(root / "optimas.yml").config.app.run == "{exe} {arg1}" and "run target gives" not in r.stdout
    (root / "Makefile").write_text(mk.replace("8192 -i 10", "8192 | tee log.txt"))
    init(str(root), "--force")
    assert load_config(root / "optimas.yml").config.app.run == "{exe}"  # more than a run: not taken
    # a recipe line starting with `#` is a shell comment: it runs nothing (HeCBench's gelu keeps its
    # larger size that way, and init took it: 128 times the work of the size that runs)
    (root / "Makefile").write_text(mk.replace("\t$(LAUNCHER) ./$(program) 8192 -i 10",
                                              "\t#$(LAUNCHER) ./$(program) 524288 -i 10\n\t@# ./$(program) 1\n"
                                              "\t$(LAUNCHER) ./$(program) 8192 -i 10"))
    r = init(str(root), "--force")
    assert "the run arguments are the ones the Makefile's run target gives: 8192 -i 10" in r.stdout


def test_a_makefile_whose_first_target_only_names_others_finds_the_binary_they_make(tmp_path: Path):
    """`default: release`, release makes `all` again, all needs bin/app, whose recipe writes it:
    make's first target is built, and the binary is the one down that chain. The run target's
    launcher variable, set nowhere, is empty as make leaves it."""
    mk = ("NVCC = nvcc\nBIN = build/bin/app\n.PHONY: default release dirs all\ndefault: release\n"
          "release: export NVCCFLAGS := -O3\nrelease: dirs\n\t@$(MAKE) all\n"
          "dirs:\n\t@mkdir -p build/bin\nall: $(BIN)\n\t@ln -sf $(BIN) app\n"
          "$(BIN): main.cu\n\t$(NVCC) $(NVCCFLAGS) main.cu -o $@\n"
          "run: dirs $(BIN)\n\t$(LAUNCHER) $(BIN) in.txt out.txt\n")
    root = project(tmp_path / "p", ("Makefile", mk))
    r, app = initialized(root)
    assert app.build == ("sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch} {lineinfo}\" make -B default NVCC=nvcc && "
                         "cp build/bin/app {exe}'")
    assert "building target 'default', which makes build/bin/app" in r.stdout
    assert app.run == "{exe} in.txt out.txt"
    assert "$(HOME)" not in r.stdout
    make_builds(app.build, root, tmp_path / "app")
    (root / "Makefile").write_text(mk.replace("NVCC = nvcc\n", "NVCC = nvcc\nINC = -I$(HOME)/boost_1_76_0\n"))
    r = init(str(root), "--force")
    assert ("it reads $(HOME), and Optimas runs builds with a HOME of its own (no secrets of yours reach them): "
            "if the build needs files there, give app.env: {HOME: <your home>}") in r.stdout


def test_a_cmake_project_builds_outside_its_tree(tmp_path: Path):
    cm = ("cmake_minimum_required(VERSION 3.24)\nproject(s LANGUAGES CXX CUDA)\n#add_executable(main old.cu)\n"
          "add_executable(saxpy_app main.cu) # the app\n")
    root = project(tmp_path / "p", ("CMakeLists.txt", cm))
    r = init(str(root), "--name", "saxpy")
    assert r.returncode == 0, r.stderr
    lc = load_config(root / "optimas.yml")
    assert lc.config.app.name == "saxpy"
    argv = render(lc.config.app.build, exe="/tmp/x/app", arch="sm_90", lineinfo="-lineinfo")
    assert argv[:2] == ["sh", "-c"] and "-B /tmp/x/app.build" in argv[2]
    assert "--target saxpy_app" in argv[2] and "-DCMAKE_CUDA_FLAGS=-arch=sm_90 -lineinfo" in argv[2]
    # the commented-out target is not one: CMake itself says what it builds (its File API), or,
    # without cmake, the text says it
    assert ("lists 1 executable with CUDA code (compiled or linked): saxpy_app -> saxpy_app (main.cu)" in r.stdout
            if shutil.which("cmake") else "(of saxpy_app)" in r.stdout)


def test_a_cmake_project_that_requires_a_variable_says_which(tmp_path: Path):
    """BabelStream's CMakeLists.txt stops unless -DMODEL=... is given: init says so, with the line."""
    cm = ("cmake_minimum_required(VERSION 3.24)\nproject(s LANGUAGES CXX CUDA)\n"
          "if (NOT DEFINED MODEL)\n    message(FATAL_ERROR \"MODEL is unspecified, pick one\")\nendif ()\n"
          "if (NOT BUILD_TYPE STREQUAL RELEASE)\n  message(FATAL_ERROR \"Only Release\")\nendif()\n"
          "add_executable(saxpy_app main.cu)\n")
    root = project(tmp_path / "p", ("CMakeLists.txt", cm))
    r, _ = initialized(root)
    assert ("CMakeLists.txt:3: the configuration stops unless MODEL is set ('MODEL is unspecified, pick one'): "
            "add -DMODEL=<value> to app.build's cmake command") in r.stdout
    assert "BUILD_TYPE is set" not in r.stdout  # a comparison, not a variable left unset


def test_vendored_libraries_and_submodules_are_not_the_programs_sources(tmp_path: Path):
    root = project(tmp_path / "p")
    (root / "cub" / "cub" / "grid").mkdir(parents=True)
    (root / "cub" / "cub" / "grid" / "grid_queue.cuh").write_text("__global__ void FillAndResetDrainKernel() {}\n")
    (root / "deps" / "lib").mkdir(parents=True)
    (root / "deps" / "lib" / ".git").write_text("gitdir: ../../.git/modules/lib\n")  # a submodule's checkout
    (root / "deps" / "lib" / "k.cu").write_text("__global__ void theirs() {}\n")
    _, app = initialized(root)
    assert app.sources == ["kernels/saxpy.cuh"]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_a_cmake_project_whose_executable_is_defined_in_a_subdirectory_builds(tmp_path: Path):
    """The top CMakeLists.txt only adds src/; the executable is named by ${PROJECT_NAME} and lands
    in bin/ (CMAKE_RUNTIME_OUTPUT_DIRECTORY), not at the top of the build folder."""
    root = tmp_path / "p"
    (root / "src" / "kernels").mkdir(parents=True)
    (root / "src" / "main.cu").write_text(MAIN)
    (root / "src" / "kernels" / "saxpy.cuh").write_text(SAXPY)
    (root / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\nproject(saxpy LANGUAGES CXX CUDA)\n"
                                         "set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n"
                                         "add_subdirectory(src)\n")
    (root / "src" / "CMakeLists.txt").write_text("add_executable(${PROJECT_NAME} main.cu)\n")
    r, app = initialized(root)
    assert "lists 1 executable with CUDA code (compiled or linked): saxpy -> bin/saxpy (src/main.cu)" in r.stdout
    assert "Building target 'saxpy' (src/CMakeLists.txt)" in r.stdout
    assert "--target saxpy " in app.build and "cp {exe}.build/bin/saxpy {exe}" in app.build
    if shutil.which("nvcc"):
        built = subprocess.run(render(app.build, exe=tmp_path / "app", arch="sm_90", lineinfo="-lineinfo"), cwd=root,
                               capture_output=True, text=True, timeout=600)
        assert built.returncode == 0 and (tmp_path / "app").is_file(), built.stderr


def test_a_config_written_elsewhere_points_back_at_the_project(tmp_path: Path):
    root = project(tmp_path / "p")
    out = tmp_path / "configs" / "p.yml"
    out.parent.mkdir()
    assert init(str(root), "--output", str(out)).returncode == 0
    assert yaml.safe_load(out.read_text())["app"]["workdir"] == "../p"
    assert run_cli("check-config", "--config", str(out)).returncode == 0


@pytest.mark.parametrize("seeding, where, pinned", [
    ("  srand(time(NULL));\n", "main.cu:5", True),
    ("  srand((unsigned int) time(0));\n", "main.cu:5", True),
    ("  struct timeval tv; gettimeofday(&tv, NULL);\n  srand(tv.tv_usec);\n", "main.cu:6", True),
    ("  srandom(getpid() ^ clock());\n", "main.cu:5", True),
    ("  std::mt19937 gen(time(nullptr));\n", "main.cu:5", False),
    ("  std::random_device rd;\n  std::mt19937 gen(rd());\n", "main.cu:5", True),
    ("  srand(2024); // was srand(time(NULL))\n  printf(\"time(0) = %d\\n\", 0);\n", None, False),
    ("  unsigned seed = argc > 1 ? atoi(argv[1]) : 7; srand(seed); double t0 = time(NULL);\n", None, False),
], ids=["srand-time", "srand-cast", "srand-timeval", "srandom-clock", "engine-time", "random-device", "fixed-seed",
        "seed-argument"])
def test_a_program_that_seeds_from_the_clock_gets_its_seeds_pinned(tmp_path: Path, seeding: str, where: str | None,
                                                                   pinned: bool):
    root = project(tmp_path / "p")
    (root / "main.cu").write_text(MAIN.replace("  int n = 1 << 20;\n", "  int n = 1 << 20;\n" + seeding))
    r, app = initialized(root)
    said = "the program seeds its random inputs from the clock"
    assert app.pin_seeds is pinned
    if where is None:
        assert said not in r.stdout
    elif pinned:
        assert f"{said} ({where}): pin_seeds is set" in r.stdout
        assert "pin_seeds: true" in (root / "optimas.yml").read_text()
    else:
        assert f"{said} ({where}) in its own code, where no library call can pin the seed" in r.stdout
        assert said in (root / "optimas.yml").read_text()  # kept with the config's notes


def test_the_verdict_a_program_prints_when_its_own_check_fails_becomes_a_fail_pattern(tmp_path: Path):
    from runner.evaluation.measure import check_output

    root = project(tmp_path / "checked")
    (root / "verify.cpp").write_text(
        '#include <cstdio>\n'
        'void report(bool ok) { printf("%s\\n", ok ? "PASS" : "FAIL"); }\n'
        'void load(const char* f) { if (!f) printf("file open failed: \\"%s\\"\\n", f); }\n')
    r, app = initialized(root)
    assert app.stdout.fail_pattern == r"\bFAIL(?:ED|URE)?\b"
    assert "prints that verdict when its own check fails (verify.cpp)" in r.stdout
    spec = app.stdout
    assert check_output("n = 1024\nPASS\n", spec) == (True, "")
    assert check_output("Result = FAIL\n", spec) == (False, "the output matches app.stdout.fail_pattern: "
                                                            "'Result = FAIL'")
    assert check_output("TEST FAILED at 12\n", spec)[0] is False
    assert check_output("file open failed: x\nFAILURE in block 3\n", spec)[0] is False
    assert check_output("file open failed: x\n", spec)[0] is True  # an error message, not a verdict

    other = project(tmp_path / "samples")
    samples_check = 'printf(ok ? "Test passed\\n" : "Test failed!\\n");'
    (other / "main.cu").write_text(MAIN.replace('printf("PASS\\n");', samples_check))
    _, app = initialized(other)
    assert app.stdout.fail_pattern == r"\b[Tt]ests? failed\b"
    assert check_output("Test failed!\n", app.stdout)[0] is False and check_output("Test passed\n", app.stdout)[0]

    _, plain = initialized(project(tmp_path / "plain"))  # prints PASS only: nothing to fail on
    assert plain.stdout.fail_pattern is None and not plain.stdout.configured()


def test_init_refuses_what_it_cannot_do_and_writes_nothing(tmp_path: Path):
    empty = tmp_path / "empty"
    (empty / "src").mkdir(parents=True)
    (empty / "src" / "host.cpp").write_text("int main() { return 0; }\n")
    r = init(str(empty))
    assert r.returncode == 2 and "no __global__ function found" in r.stderr
    assert not (empty / "optimas.yml").exists()
    root = project(tmp_path / "p")
    (root / "optimas.yml").write_text("# mine\n")
    r = init(str(root))
    assert r.returncode == 2 and "the file exists; pass --force" in r.stderr
    assert (root / "optimas.yml").read_text() == "# mine\n"
    assert init(str(root), "--force").returncode == 0
    r = init(str(tmp_path / "nowhere"))
    assert r.returncode != 0 and "not a folder" in r.stderr


REQUIRES_CUDA_PLACES = """\
CXX=nvcc
# Chai's Makefiles stop unless the environment says where CUDA is
ifndef SUITE_CUDA_LIB
    $(error SUITE_CUDA_LIB not defined. This environment variable must point to the CUDA library)
endif
ifeq ($(SUITE_CUDA_INC),)
    $(error SUITE_CUDA_INC must point to the CUDA header files)
endif
ifndef DATASET
    $(error DATASET is not set: small or large)
endif
all:
\t$(CXX) -O2 main.cu -L$(SUITE_CUDA_LIB) -I$(SUITE_CUDA_INC) -o app
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_makefile_that_stops_without_the_cuda_locations_gets_them_from_the_nvcc_on_path(tmp_path: Path):
    """A variable the Makefile requires that locates CUDA is set on make's command line to the
    toolkit of the nvcc on PATH (include/ or its library folder); another one is named, with how to
    set it."""
    from runner.init.build_make import cuda_toolkit
    from runner.init.makefile_text import make_required

    assert [(n, line) for n, line, _ in make_required(REQUIRES_CUDA_PLACES)] == [
        ("SUITE_CUDA_LIB", 3), ("SUITE_CUDA_INC", 6), ("DATASET", 9)]
    assert make_required("SUITE_CUDA_LIB ?= /opt/cuda/lib64\n" + REQUIRES_CUDA_PLACES)[0][0] == "SUITE_CUDA_INC"
    without_dataset = REQUIRES_CUDA_PLACES.replace("ifndef DATASET\n    $(error DATASET is not set: small or large)\n"
                                                   "endif\n", "")
    root = project(tmp_path / "chai", ("Makefile", without_dataset))
    r, app = initialized(root)
    toolkit = cuda_toolkit()
    assert (toolkit / "include" / "cuda_runtime.h").is_file()
    assert f"SUITE_CUDA_INC={toolkit / 'include'}" in app.build and f"SUITE_CUDA_LIB={toolkit}/lib" in app.build
    assert "Makefile:3: the build stops unless SUITE_CUDA_LIB is set" in r.stdout
    make_builds(app.build, root, tmp_path / "app")
    (root / "Makefile").write_text(REQUIRES_CUDA_PLACES)
    r, app = initialized(root, "--force")
    assert "DATASET" not in app.build
    assert "Makefile:9: the build stops unless DATASET is set ('DATASET is not set: small or large'): add " \
           "DATASET=<value> to app.build's make command" in r.stdout


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cmake")), reason="nvcc and cmake not installed")
def test_a_folder_whose_cmake_file_makes_a_library_builds_the_executable_that_links_it(tmp_path: Path):
    """Altis's layout: src/prog/CMakeLists.txt only makes progLib; src/CMakeLists.txt makes the
    executable prog from a shared main and links it. init in src/prog builds target prog from the
    project's top, which becomes the workspace, and the build works in the pipeline's copy."""
    from runner.toolchain.builder import compile_candidate

    top = tmp_path / "suite"
    (top / "src" / "prog").mkdir(parents=True)
    (top / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\nproject(suite LANGUAGES CXX CUDA)\n"
                                        "add_subdirectory(src)\n")
    (top / "src" / "CMakeLists.txt").write_text("add_subdirectory(prog)\nadd_executable(other main.cu)\n"
                                                "add_executable(prog main.cu)\n"
                                                "target_link_libraries(prog progLib)\n"
                                                "set_target_properties(prog PROPERTIES RUNTIME_OUTPUT_DIRECTORY "
                                                "\"${CMAKE_BINARY_DIR}/bin\")\n")
    # the shared main prefetches by device ordinal, which CUDA 13 changed: the program's build needs the header
    (top / "src" / "main.cu").write_text("void run_prog();\nint main() { float* a; cudaMallocManaged(&a, 64);\n"
                                         "  cudaMemPrefetchAsync(a, 64, 0); run_prog(); return 0; }\n")
    (top / "src" / "prog" / "CMakeLists.txt").write_text("add_library(progLib prog.cu)  # the kernels\n")
    (top / "src" / "prog" / "prog.cu").write_text(
        "__global__ void twice(float* a) { a[threadIdx.x] *= 2.0f; }\n"
        "void run_prog() { float* a; cudaMalloc(&a, 128); twice<<<1, 32>>>(a); cudaDeviceSynchronize(); }\n")
    r, app = initialized(top / "src" / "prog")
    assert app.workspace == "../.." and app.sources == ["prog.cu"]
    assert "cmake -S ../.. -B {exe}.build" in app.build and "--target prog " in app.build
    assert "the executable 'prog' links (../CMakeLists.txt)" in r.stdout
    assert app.legacy_cuda and "cuda_legacy_prefetch.h (../main.cu: cudaMemPrefetchAsync)" in \
        (top / "src" / "prog" / "optimas.yml").read_text()
    built = compile_candidate(load_config(top / "src" / "prog" / "optimas.yml"), {}, "sm_90", exe=tmp_path / "prog")
    assert built.ok, built.output
    assert (tmp_path / "prog").is_file()
    # CMake names the source by its absolute path in the build's temporary copy: the record says where it is
    (used,) = built.compat
    assert used.header == "cuda_legacy_prefetch.h" and used.sources == ("../main.cu",)


def test_an_older_dialect_with_cuda_13s_cpp17_headers_sets_compat_headers(tmp_path: Path):
    """XSBench: the Makefile says -std=c++14, the sources include Thrust, which CUDA 13 compiles only
    as C++17: the shim may raise the dialect only with app.legacy_cuda, so init sets it and says
    why; without such a header the dialect is the program's business."""
    root = project(tmp_path / "xs", ("Makefile", "app: main.cu\n\tnvcc -std=c++14 -O3 main.cu -o app\n"))
    (root / "kernels" / "saxpy.cuh").write_text("#include <thrust/reduce.h>\n" + SAXPY)
    r, app = initialized(root)
    text = (root / "optimas.yml").read_text()
    assert app.legacy_cuda and "(Makefile: -std=c++14; <thrust/reduce.h>)" in text
    (root / "kernels" / "saxpy.cuh").write_text(SAXPY)
    r, app = initialized(root, "--force")
    assert not app.legacy_cuda


def test_positional_arguments_are_named_by_the_programs_usage_line_and_a_repeat_count_is_not_scaled(tmp_path: Path):
    """`Usage: %s <size> <repeat>`: the size becomes {size} (scaled for the counter runs), the repeat
    count stays as given (scaling it changes no launch's work, only the run's time)."""
    root = project(tmp_path / "p")
    (root / "main.cu").write_text('#include <cstdio>\n#include "kernels/saxpy.cuh"\n'
                                  'int main(int argc, char** argv) {\n  if (argc < 3) {\n'
                                  '    printf("Usage: %s <size> <repeat>\\n", argv[0]);\n    return 1;\n  }\n'
                                  '  return 0;\n}\n')
    _, app = initialized(root, "--args", "65536 100")
    assert app.run == "{exe} {size} 100" and app.profile_run == "{exe} {size*scale} 100"
    assert app.values("default") == {"size": "65536"}


def test_time_steps_repetitions_and_trials_are_counts_not_sizes():
    """Named by the usage line or a flag, counts of steps, repetitions, trials and epochs stay as
    given: they change how many launches run, not one launch's work."""
    from runner.init.sizes import size_arguments

    got = size_arguments("4096 4096 500", ["dim_x", "dim_y", "number_of_time_steps"])
    assert got.run == "{dim_x} {dim_y} 500" and got.values == {"dim_x": 4096, "dim_y": 4096}
    assert size_arguments("65536 100", ["numelements", "nrepetitions"]).run == "{numelements} 100"
    # a name ending the pattern ("reps$", "steps$") is read without the flag's = (it read "--steps=")
    assert size_arguments("-n 65536 --trials 50 --epochs 20 --steps=64 --reps=32", []).run == \
        "-n {n} --trials 50 --epochs 20 --steps=64 --reps=32"


def test_a_makefile_without_rules_is_refused_unless_the_build_command_is_given(tmp_path: Path):
    """Parboil's benchmark Makefiles only set variables for a common Makefile its driver runs: a
    guessed `make -B app` would fail at every build, so init asks for the command instead."""
    root = tmp_path / "sgemm"
    root.mkdir()
    (root / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1; }\nint main() { return 0; }\n")
    (root / "Makefile").write_text("LANGUAGE=cuda\nSRCDIR_OBJS=main.o sgemm_kernel.o\nAPP_CUDACFLAGS=-O3\n")
    r = init(str(root))
    assert r.returncode == 2 and "has no rule that builds a program" in r.stderr and "--build" in r.stderr
    assert not (root / "optimas.yml").exists()
    _, app = initialized(root, "--build", "nvcc -arch={arch} {lineinfo} -o {exe} k.cu")
    assert app.build == "nvcc -arch={arch} {lineinfo} -o {exe} k.cu"


# A program of a suite whose build reads files above its folder: the workspace holds them.

SUITE_KERNEL = ('#include "scale.h"\n__global__ void twice(float* a) { a[threadIdx.x] = scale2(a[threadIdx.x]); }\n'
                "int main() { return 0; }\n")


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_init_widens_the_workspace_to_what_the_build_reads_and_the_pipelines_copy_builds(tmp_path, monkeypatch):
    from runner.toolchain.builder import compile_candidate

    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    suite = tmp_path / "suite"
    (suite / "common").mkdir(parents=True)
    (suite / "common" / "scale.h").write_text("__device__ inline float scale2(float v) { return 2.0f * v; }\n")
    (suite / "utilities").mkdir()
    (suite / "utilities" / "common.mk").write_text("NVCC ?= nvcc\nINCLUDES := -I../common\n")
    prog = suite / "programs" / "twice"
    prog.mkdir(parents=True)
    (prog / "twice.cu").write_text(SUITE_KERNEL)
    # and an absolute system folder, as many suites add the toolkit's: read in place by any copy
    cuda = Path(shutil.which("nvcc")).resolve().parents[1]
    (prog / "Makefile").write_text(f"include ../../utilities/common.mk\nCUDA_DIR = {cuda}\n"
                                   "INCLUDES += -I../../common -I$(CUDA_DIR)/include\n"
                                   "twice: twice.cu\n\t$(NVCC) $(INCLUDES) -o twice twice.cu\n")
    r = run_cli("init", str(prog))
    assert r.returncode == 0, r.stderr
    text = (prog / "optimas.yml").read_text()
    assert 'workspace: "../.."' in text
    assert "Makefile includes ../../utilities/common.mk" in text and "Makefile compiles with -I../../common" in text
    assert f"-I{cuda}" not in text
    assert run_cli("check-config", "--config", str(prog / "optimas.yml")).returncode == 0
    lc = load_config(prog / "optimas.yml")
    built = compile_candidate(lc, {}, "sm_90")  # in a copy of the workspace, as every candidate is built
    assert built.ok, built.output
    # as init wrote it before, with the workspace at the program folder, the copy lacks what it reads
    (prog / "optimas.yml").write_text(text.replace('workspace: "../.."', "workspace: ."))
    assert not compile_candidate(load_config(prog / "optimas.yml"), {}, "sm_90").ok


SIZED_KERNEL = ('#include "scale.h"\n#include <cstdio>\n'
                "__global__ void twice(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "  if (i < n) a[i] = scale2(a[i]); }\n"
                "int main() {\n  const int N = 1 << 20;\n  float* a;\n  cudaMalloc(&a, N * sizeof(float));\n"
                "  twice<<<(N + 255) / 256, 256>>>(a, N);\n  cudaDeviceSynchronize();\n  printf(\"done\\n\");\n"
                "  return 0;\n}\n")


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_one_program_of_a_suite_copies_and_searches_only_what_its_build_reads(tmp_path, monkeypatch):
    """HeCBench's layout: src/<program>/ with `-I../include`. The workspace is then src/, every
    program of the suite: each build copied and hashed all of them (15,000 files there), and a size
    constant (N) defined again by another program could not be scaled. app.workspace_paths names the
    parts a build reads: only those are copied, hashed and searched."""
    from runner.toolchain.builder import compile_candidate, copy_workspace

    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    (src / "include").mkdir(parents=True)
    (src / "include" / "scale.h").write_text("__device__ inline float scale2(float v) { return 2.0f * v; }\n")
    prog = src / "twice-cuda"
    prog.mkdir()
    (prog / "main.cu").write_text(SIZED_KERNEL)
    (prog / "Makefile").write_text("main: main.cu\n\tnvcc -I../include -o main main.cu\n")
    other = src / "other-cuda"  # another program of the suite, with its own N and a large input
    other.mkdir()
    (other / "main.cu").write_text("#define N 4096\n__global__ void k(float* a) { a[0] = N; }\n"
                                   "int main() { return 0; }\n")
    (other / "input.bin").write_bytes(b"\0" * (1 << 20))
    r = run_cli("init", str(prog))
    assert r.returncode == 0, r.stderr
    text = (prog / "optimas.yml").read_text()
    assert 'workspace: ".."' in text and 'workspace_paths: ["include", "twice-cuda"]' in text
    assert "size_constants: [N]" in text  # defined twice in the suite, once in what the build copies
    assert run_cli("check-config", "--config", str(prog / "optimas.yml")).returncode == 0
    lc = load_config(prog / "optimas.yml")
    cwd = copy_workspace(lc, tmp_path / "copy")
    assert cwd == tmp_path / "copy" / "twice-cuda"
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["include", "twice-cuda"]
    built = compile_candidate(lc, {"main.cu": SIZED_KERNEL.replace("1 << 20", "1 << 18")}, "sm_90")
    assert built.ok, built.output
    # the other program is not part of the build's key: changing it finds the build cached
    (other / "main.cu").write_text("#define N 8192\n")
    again = compile_candidate(lc, {"main.cu": SIZED_KERNEL.replace("1 << 20", "1 << 18")}, "sm_90",
                              cache=tmp_path / "keyed")
    (other / "input.bin").write_bytes(b"\1")
    assert compile_candidate(lc, {"main.cu": SIZED_KERNEL.replace("1 << 20", "1 << 18")}, "sm_90",
                             cache=tmp_path / "keyed").cached and again.ok
    # what the build reads must be named: without include/ the copy cannot build
    (prog / "optimas.yml").write_text(text.replace('["include", "twice-cuda"]', '["twice-cuda"]'))
    assert not compile_candidate(load_config(prog / "optimas.yml"), {}, "sm_90").ok


@pytest.mark.parametrize("value", ["../elsewhere", "/etc", "~/x", "a/../../b", ""])
def test_workspace_paths_must_stay_inside_the_workspace(tmp_path, value):
    (tmp_path / "app").mkdir()
    (tmp_path / "optimas.yml").write_text(
        f"app: {{workdir: app, build: 'nvcc -o {{exe}} k.cu', run: '{{exe}}', workspace_paths: [{value!r}]}}\n")
    r = run_cli("check-config", "--config", str(tmp_path / "optimas.yml"))
    assert r.returncode == 2 and "app.workspace_paths" in r.stderr + r.stdout


def test_a_workspace_path_that_is_missing_or_links_out_is_named(tmp_path):
    (tmp_path / "ws" / "app").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "ws" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "ws" / "app" / "optimas.yml").write_text(
        "app: {workspace: .., build: 'nvcc -o {exe} k.cu', run: '{exe}', workspace_paths: [missing, out]}\n")
    r = run_cli("check-config", "--config", str(tmp_path / "ws" / "app" / "optimas.yml"))
    said = r.stderr + r.stdout
    assert r.returncode == 2 and "'missing'" in said and "does not exist" in said
    assert "'out' leads to" in said and "outside app.workspace" in said


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make") and shutil.which("git")),
                    reason="nvcc, make and git not installed")
def test_init_in_a_repository_says_where_the_app_and_the_action_read_the_config(tmp_path):
    repo = tmp_path / "repo"
    prog = repo / "programs" / "twice"
    prog.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (prog / "twice.cu").write_text(SUITE_KERNEL.replace('#include "scale.h"\n', "").replace("scale2(a[threadIdx.x])",
                                                                                            "2.0f * a[threadIdx.x]"))
    (prog / "Makefile").write_text("twice: twice.cu\n\tnvcc -o twice twice.cu\n")
    r = run_cli("init", str(prog))
    assert r.returncode == 0, r.stderr
    assert "the config is .optimas.yml at the repository's root" in r.stdout
    hint = r.stdout.split("repository's root: ", 1)[1].strip()
    r = run_cli(*hint.split()[1:], "--force")  # as printed: optimas init <dir> --output <root>/.optimas.yml
    assert r.returncode == 0, r.stderr
    text = (repo / ".optimas.yml").read_text()
    assert 'workdir: "programs/twice"' in text
    assert "the config is .optimas.yml" not in r.stdout  # written where it belongs: no hint
    assert run_cli("check-config", "--config", str(repo / ".optimas.yml")).returncode == 0


def test_init_on_a_folder_of_separate_programs_refuses_and_lists_them(tmp_path: Path):
    suite = tmp_path / "suite"
    for name in ("alpha", "beta/inner"):
        prog = suite / name
        prog.mkdir(parents=True)
        (prog / "k.cu").write_text("__global__ void k(float* a) { a[0] = 1.0f; }\nint main() { return 0; }\n")
        (prog / "Makefile").write_text("k: k.cu\n\tnvcc -o k k.cu\n")
    r = run_cli("init", str(suite))
    assert r.returncode == 2 and "2 separate programs" in r.stderr and "alpha, beta/inner" in r.stderr
    assert not (suite / "optimas.yml").exists()
    # one of them is a program: init writes its config
    assert run_cli("init", str(suite / "alpha")).returncode == 0
    # a top-level build that builds them all makes the folder one project
    (suite / "Makefile").write_text("all:\n\t$(MAKE) -C alpha\n")
    assert "separate programs" not in run_cli("init", str(suite), "--output", str(tmp_path / "s.yml")).stderr


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_init_sets_compat_headers_for_sources_that_call_what_cuda_13_removed_and_the_build_then_works(tmp_path,
                                                                                                   monkeypatch):
    from runner.toolchain.builder import compile_candidate

    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    prog = tmp_path / "legacy"
    prog.mkdir()
    (prog / "k.cu").write_text("__global__ void k(float* a) { a[threadIdx.x] = __shfl_down(a[0], 1); }\n"
                               "int main() { k<<<1, 32>>>(0); cudaThreadSynchronize(); return 0; }\n")
    (prog / "Makefile").write_text("k: k.cu\n\tnvcc -o k k.cu\n")
    r = run_cli("init", str(prog))
    assert r.returncode == 0, r.stderr
    text = (prog / "optimas.yml").read_text()
    assert "legacy_cuda: true" in text
    assert "cuda_removed_api.h (k.cu: cudaThreadSynchronize)" in text
    assert "cuda_legacy_warp.h (k.cu: __shfl_down)" in text
    built = compile_candidate(load_config(prog / "optimas.yml"), {}, "sm_90")
    assert built.ok, built.output
    assert {c.header for c in built.compat} == {"cuda_removed_api.h", "cuda_legacy_warp.h"}
    # the same program without the line: the build fails as with the user's own CUDA 13
    (prog / "optimas.yml").write_text(text.replace("  legacy_cuda: true\n", ""))
    plain = compile_candidate(load_config(prog / "optimas.yml"), {}, "sm_90")
    assert not plain.ok and "app.legacy_cuda: true would pre-include" in plain.output


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_check_config_build_builds_as_optimas_does_and_says_what_ptxas_reports(tmp_path: Path):
    """After init, `check-config --build` answers on any machine with nvcc whether the build works
    through the pipeline's copy of the workspace, and whether the prompt will have compiler feedback."""
    root = tmp_path / "prog"
    root.mkdir()
    (root / "k.cu").write_text("__global__ void twice(float* a) { a[threadIdx.x] *= 2; }\nint main() { return 0; }\n")
    (root / "Makefile").write_text("prog: k.cu\n\tnvcc -O2 -o prog k.cu\n")
    initialized(root)
    r = run_cli("check-config", "--config", str(root / "optimas.yml"), "--build")
    assert r.returncode == 0, r.stderr
    assert "build: ok in" in r.stdout and "ptxas reports 1 kernel (compiler feedback K*)" in r.stdout
    # built in a copy: the folder holds what init wrote and nothing more
    assert sorted(p.name for p in root.iterdir()) == ["Makefile", "compile_commands.json", "k.cu", "optimas.yml"]
    (root / "k.cu").write_text("__global__ void twice(float* a) { a[threadIdx.x] *= ; }\nint main() { return 0; }\n")
    r = run_cli("check-config", "--config", str(root / "optimas.yml"), "--build")
    assert r.returncode == 3 and "build failed after" in r.stderr and "expected an expression" in r.stderr


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_a_cmake_project_that_does_not_configure_is_read_from_its_text_and_says_why(tmp_path: Path):
    cm = ("cmake_minimum_required(VERSION 3.18)\nproject(s LANGUAGES CXX)\n"
          'if (NOT DEFINED MODEL)\n  message(FATAL_ERROR "MODEL is unspecified, pick one")\nendif()\n'
          "add_executable(saxpy_app main.cu)\n")
    root = project(tmp_path / "p", ("CMakeLists.txt", cm))
    r, app = initialized(root)
    assert "CMake was not asked what it builds (cmake did not configure" in r.stdout
    assert "MODEL is unspecified, pick one" in r.stdout and "the target was read from CMakeLists.txt's text" in r.stdout
    assert "--target saxpy_app " in app.build


VECADD = "__global__ void add(float* a) { a[threadIdx.x] += 1; }\nint main() { add<<<1, 32>>>(nullptr); return 0; }\n"


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
@pytest.mark.parametrize("makefile", [
    "EXE = vecadd\nNVCC = nvcc\nall: $(EXE)\n\n% : %.cu\n\t$(NVCC) -O3 -o $@ $<\n\nclean:\n\trm -f $(EXE)\n",
    "TARGETS = vecadd\nall: $(TARGETS)\n%: %.cu\n\tnvcc -O2 $< -o $@\n",
])
def test_a_makefile_that_names_its_program_through_variables_and_pattern_rules_builds(tmp_path: Path,
                                                                                       makefile: str):
    """`EXE = name`, `all: $(EXE)`, `% : %.cu` (a public collection's plain Makefiles, which init
    took for fragments): make's dry run says what the default goal links."""
    root = tmp_path / "vecadd"
    root.mkdir()
    (root / "Makefile").write_text(makefile)
    (root / "vecadd.cu").write_text(VECADD)
    r, app = initialized(root)
    assert "building target 'all', which makes vecadd (make's dry run, make -pnB, says so" in r.stdout
    assert "make -B all" in app.build and "cp vecadd {exe}" in app.build
    built = run_cli("check-config", "--config", str(root / "optimas.yml"), "--build")
    assert built.returncode == 0 and "build: ok" in built.stdout, built.stdout + built.stderr
    # a true fragment (variables only: a suite's common Makefile) is still refused, and says why
    (root / "Makefile").write_text("NVCC = nvcc\nNVCCFLAGS = -O3\n")
    r = init(str(root), "--force")
    assert r.returncode != 0 and "make's dry run of it (make -pnB) links none" in r.stderr


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_a_makefile_of_several_programs_lists_them_all_or_the_one_asked_for(tmp_path: Path):
    """A folder of programs, one Makefile with a TARGETS list and a pattern rule: init lists every
    program the default goal links, each built by itself (not `all`); `--program` writes one."""
    root = tmp_path / "suite"
    root.mkdir()
    (root / "Makefile").write_text("TARGETS = alpha beta gamma\nall: $(TARGETS)\n%: %.cu\n\tnvcc -O2 $< -o $@\n"
                                   "clean:\n\trm -f $(TARGETS)\n")
    for name in ("alpha", "beta", "gamma"):
        (root / f"{name}.cu").write_text(VECADD.replace("add", f"k_{name}"))
    r = init(str(root))
    assert r.returncode == 0, r.stderr
    lc = load_config(root / "optimas.yml")
    assert lc.program_names() == ["alpha", "beta", "gamma"] and "3 programs (3 kernels)" in r.stdout
    alpha = lc.for_program("alpha").config.app
    assert "make -B alpha " in alpha.build and "cp alpha {exe}" in alpha.build and alpha.sources == ["alpha.cu"]
    r, app = initialized(root, "--force", "--program", "beta")
    assert "make -B beta " in app.build and "cp beta {exe}" in app.build
    built = run_cli("check-config", "--config", str(root / "optimas.yml"), "--build")
    assert built.returncode == 0 and "build: ok" in built.stdout, built.stdout + built.stderr
    r = init(str(root), "--force", "--program", "delta")
    assert r.returncode == 2 and ("--program delta: neither a target of the Makefile nor a program its default goal "
                                  "links (alpha, beta, gamma)") in r.stderr


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cmake")), reason="nvcc and cmake not installed")
def test_a_cmake_program_is_chosen_by_its_target_or_its_artifacts_name(tmp_path: Path):
    root = tmp_path / "two"
    root.mkdir()
    (root / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.18)\nproject(two LANGUAGES CXX CUDA)\n"
                                         "add_executable(first a.cu)\nadd_executable(second b.cu)\n"
                                         "set_target_properties(second PROPERTIES OUTPUT_NAME second_bin)\n")
    (root / "a.cu").write_text(VECADD)
    (root / "b.cu").write_text(VECADD.replace("add", "bdd"))
    for asked in ("second", "second_bin"):
        r, app = initialized(root, "--force", "--program", asked)
        assert "--target second " in app.build and "cp {exe}.build/second_bin {exe}" in app.build
        assert "Building target 'second' (./CMakeLists.txt), as --program asks" in r.stdout
    r = init(str(root), "--force", "--program", "third")
    assert r.returncode == 2 and "--program third: no executable of that name compiles or links CUDA code" in r.stderr


def test_init_names_the_cudadeviceprop_members_cuda_13_removed(tmp_path: Path):
    """No compatibility header can give a struct back its member: init says which reads fail and how
    to read them now, instead of a first build that fails on the GPU host."""
    from runner.init.sources import removed_fields

    app = tmp_path / "app"
    app.mkdir()
    (app / "main.cu").write_text(
        "#include <cstdio>\n__global__ void k(float* a) { a[threadIdx.x] *= 2.0f; }\n"
        "struct Clock { int clockRate; };\n"
        "int main() {\n  cudaDeviceProp prop;\n  cudaGetDeviceProperties(&prop, 0);\n"
        "  printf(\"%d %d\\n\", prop.clockRate, prop.memoryBusWidth);  // prop.memoryClockRate in a comment\n"
        "  cudaDeviceProp* p = &prop;\n  printf(\"%d\\n\", p->memoryClockRate);\n"
        "  float* a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); return 0;\n}\n")
    assert removed_fields({"main.cu": (app / "main.cu").read_text()}) == ["main.cu:7 clockRate",
                                                                          "main.cu:9 memoryClockRate"]
    # a file that never names cudaDeviceProp: its own struct's clockRate is its own
    assert removed_fields({"clock.h": "struct Clock { int clockRate; }; int f(Clock c) { return c.clockRate; }"}) == []
    r = run_cli("init", str(app))
    assert r.returncode == 0, r.stderr
    assert ("the sources read cudaDeviceProp members CUDA 13 removed (main.cu:7 clockRate, main.cu:9 memoryClockRate)"
            in r.stdout), r.stdout
