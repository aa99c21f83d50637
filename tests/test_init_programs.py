"""`optimas init` on repositories of many programs, on real builds (make, CMake, nvcc): one config
lists every program, each with what its own build compiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from runner.base.config import load_config
from runner.base.sandbox import scratch
from runner.toolchain.builder import compile_candidate

PROGRAM = """\
#include <cstdio>
#define N {n}
#define C 4
__global__ void {kernel}(float* a, int n) {{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }}
int main() {{
  float* a;
  cudaMalloc(&a, N * C * sizeof(float));
  {kernel}<<<(N + 255) / 256, 256>>>(a, N);
  cudaDeviceSynchronize();
  printf("PASS\\n");
  return 0;
}}
"""

needs_tools = pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make needed")


def _builds(config: Path, name: str, tmp: Path) -> bool:
    """What check-config --build does for one program: build it as Optimas does (a workspace copy)."""
    lc = load_config(config).for_program(name)
    with scratch("optimas-test-") as folder:
        return compile_candidate(lc, {}, "sm_90", Path(folder) / "build.log").ok


@needs_tools
def test_a_makefile_of_twelve_programs_gives_one_config_listing_each_with_its_own_sizes(tmp_path: Path):
    """A TARGETS list built by `%: %.cu`, every file defining N and C: each program's size constant
    comes from its own file (the folder defines N twelve times) and each builds by its own target."""
    root = tmp_path / "suite"
    root.mkdir()
    names = [f"prog{i:02d}" for i in range(12)]
    (root / "Makefile").write_text(f"TARGETS = {' '.join(names)}\nall: $(TARGETS)\n"
                                   "%: %.cu\n\tnvcc -O2 -DSCALE=2 $< -o $@\n"
                                   "clean:\n\trm -f $(TARGETS)\n")
    for i, name in enumerate(names):
        (root / f"{name}.cu").write_text(PROGRAM.format(n=1024 * (i + 1), kernel=f"k_{name}"))
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    config = root / "optimas.yml"
    lc = load_config(config)
    assert lc.program_names() == names
    assert "12 programs (12 kernels), build by make" in r.stdout
    assert r.stderr.count("asking make what Makefile builds") == 1, r.stderr  # once for the list and the twelve
    assert "prog03: 1 kernel (k_prog03) in prog03.cu" in r.stdout
    assert "check-config --config" in r.stdout and "--build" in r.stdout
    text = config.read_text()
    for i, name in enumerate(names):
        app = lc.for_program(name).config.app
        assert app.sources == [f"{name}.cu"] and app.size_constants == ["N"], (name, app)
        assert f"make -B {name} " in app.build and f"cp {name} {{exe}}" in app.build
        assert f"N = {1024 * (i + 1)} ({name}.cu:2)" in text
    # check-config accepts every program's constant: its own file defines it once
    checked = run_cli("check-config", "--config", str(config))
    assert checked.returncode == 0 and "12 of 12 programs checked" in checked.stdout, checked.stdout + checked.stderr
    assert all(_builds(config, name, tmp_path) for name in names)
    # what make's dry run compiles, beside the config: each program's source, its -D macros and output
    commands = json.loads((root / "compile_commands.json").read_text())
    assert [(c["directory"], c["file"], c["output"]) for c in commands] == [(".", f"{n}.cu", n) for n in names]
    assert all("-DSCALE=2" in c["arguments"] for c in commands) and "compile_commands.json: 12" in r.stdout
    # one program asked for: that one alone, in app
    r = run_cli("init", str(root), "--force", "--program", "prog05")
    assert r.returncode == 0, r.stderr
    one = load_config(config)
    assert one.program_names() == [] and "make -B prog05 " in one.config.app.build


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc needed")
def test_a_folder_tree_without_build_files_lists_each_main_with_kernels(tmp_path: Path):
    """Without a build file: each .cu defining main, with the .cu files beside it that define none;
    a main that reaches no kernel is no program of the config."""
    root = tmp_path / "tree"
    for folder in ("stencil", "scan", "tools"):
        (root / folder).mkdir(parents=True)
    (root / "stencil" / "main.cu").write_text('#include "stencil.cuh"\nint main() { float* a; cudaMalloc(&a, 4096);'
                                              ' run(a); return 0; }\n')
    (root / "stencil" / "stencil.cuh").write_text("void run(float* a);\n")
    (root / "stencil" / "stencil.cu").write_text("__global__ void st(float* a) { a[threadIdx.x] += 1; }\n"
                                                 "void run(float* a) { st<<<1, 32>>>(a); }\n")
    (root / "scan" / "scan.cu").write_text(PROGRAM.format(n=2048, kernel="scan_k"))
    (root / "tools" / "gen.cu").write_text("#include <cstdio>\nint main() { printf(\"x\"); return 0; }\n")
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    config = root / "optimas.yml"
    lc = load_config(config)
    assert sorted(lc.program_names()) == ["scan", "stencil"]
    stencil = lc.for_program("stencil").config.app
    assert stencil.build.endswith("-o {exe} stencil/main.cu stencil/stencil.cu") and stencil.sources == [
        "stencil/stencil.cu"]
    scan = lc.for_program("scan").config.app
    assert scan.size_constants == ["N"] and scan.sources == ["scan/scan.cu"]
    assert all(_builds(config, name, tmp_path) for name in ("scan", "stencil"))
    commands = json.loads((root / "compile_commands.json").read_text())
    assert {c["file"] for c in commands} == {"stencil/main.cu", "stencil/stencil.cu", "scan/scan.cu"}


KERNEL = "__global__ void {name}(float* a, int n) {{ int i = threadIdx.x; if (i < n) a[i] = 2 * a[i]; }}\n"


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cmake")), reason="nvcc and cmake needed")
def test_a_cmake_project_of_three_executables_lists_each_and_exports_its_compile_commands(tmp_path: Path):
    """CMake's File API gives the real targets and artifacts: one named from a cache variable
    (`${APP}-bench`: its text names no real target), one whose kernels are a library's of another
    folder, linked by an executable that renames its output and puts it in bin/, one in a subfolder
    with a define of its own; a CPU-only tool is no program. init writes one config listing each,
    built by its own target, and the compile commands beside it. (Two tests of two projects before:
    one project checks both, since each configure and each build of a CMake project pays for CMake's
    compiler detection, about 2 CPU-s.)"""
    root = tmp_path / "proj"
    for folder in ("lib", "bench", "sub"):
        (root / folder).mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES CXX CUDA)\n"
        'set(APP "stencil" CACHE STRING "which app")\nadd_subdirectory(lib)\nadd_subdirectory(bench)\n'
        "add_subdirectory(sub)\nadd_executable(${APP}-bench a.cu)\nadd_executable(tool tool.cpp)\n")
    (root / "lib" / "CMakeLists.txt").write_text("add_library(kern STATIC kern.cu more.cu)\n")
    (root / "lib" / "kern.cu").write_text(KERNEL.format(name="lk") + "void launch(float* a) { lk<<<1, 1>>>(a, 1); }\n")
    (root / "lib" / "more.cu").write_text(KERNEL.format(name="mk"))
    (root / "bench" / "CMakeLists.txt").write_text(
        "add_executable(bench bench.cpp)\ntarget_link_libraries(bench kern)\n"
        "set_target_properties(bench PROPERTIES OUTPUT_NAME runbench\n"
        "  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n")
    (root / "bench" / "bench.cpp").write_text("void launch(float*);\nint main() { launch(nullptr); return 0; }\n")
    (root / "sub" / "CMakeLists.txt").write_text("add_executable(third c.cu)\n"
                                                 "target_compile_definitions(third PRIVATE WIDTH=64)\n")
    (root / "a.cu").write_text(PROGRAM.format(n=1024, kernel="ka"))
    (root / "sub" / "c.cu").write_text(PROGRAM.format(n=4096, kernel="kc"))
    (root / "tool.cpp").write_text("int main() { return 0; }\n")
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    config = root / "optimas.yml"
    lc = load_config(config)
    assert lc.program_names() == ["bench", "stencil-bench", "third"]  # the tool compiles no CUDA code
    bench, stencil, third = (lc.for_program(n).config.app for n in lc.program_names())
    assert "--target bench " in bench.build and "cp {exe}.build/bin/runbench {exe}" in bench.build
    assert bench.sources == ["lib/kern.cu", "lib/more.cu"] and stencil.sources == ["a.cu"]
    assert "--target stencil-bench " in stencil.build and "cp {exe}.build/stencil-bench {exe}" in stencil.build
    assert "--target third " in third.build and third.sources == ["sub/c.cu"] and third.size_constants == ["N"]
    assert "stencil-bench: 1 kernel (ka) in a.cu" in r.stdout and "bench: 2 kernels (lk, mk)" in r.stdout
    built = run_cli("check-config", "--config", str(config), "--build")
    assert built.returncode == 0 and "3 of 3 programs built" in built.stdout, built.stdout + built.stderr
    commands = {c["file"]: c for c in json.loads((root / "compile_commands.json").read_text())}
    # the tool is no program: every entry is a program's file (bench's: its own and its library's)
    assert set(commands) == {"bench/bench.cpp", "lib/kern.cu", "lib/more.cu", "a.cu", "sub/c.cu"}
    assert commands["lib/kern.cu"]["output"].startswith("build/lib/CMakeFiles/kern.dir/")
    c = commands["sub/c.cu"]
    assert c["directory"] == "." and "-DWIDTH=64" in c["arguments"]
    assert c["output"] == "build/sub/CMakeFiles/third.dir/c.cu.o" and c["arguments"][-1] == c["output"]
    assert not any(str(tmp_path) in w for e in commands.values() for w in e["arguments"])  # portable
    # one program asked for: the config is that one alone
    r = run_cli("init", str(root), "--force", "--program", "bench")
    assert r.returncode == 0, r.stderr
    assert "--target bench " in load_config(config).config.app.build
    assert "Building target 'bench' (bench/CMakeLists.txt), as --program asks" in r.stdout


@needs_tools
def test_a_recursive_makefile_lists_the_programs_its_sub_makes_link_each_built_in_its_folder(tmp_path: Path):
    """`all: ; $(MAKE) -C a; $(MAKE) -C b; $(MAKE) -C host`: make's dry run runs the sub-makes, so
    each sub-folder's program is found and built by its own Makefile (make -C a -B prog_a); a
    sub-folder whose program has no kernel (host-only C++) is not listed."""
    root = tmp_path / "suite"
    root.mkdir()
    (root / "Makefile").write_text("all:\n\t$(MAKE) -C a\n\t$(MAKE) -C b\n\t$(MAKE) -C host\n"
                                   "\tmkdir -p bin && cp a/prog_a b/prog_b bin/\n")
    for sub, n in (("a", 1024), ("b", 4096)):
        (root / sub).mkdir()
        (root / sub / "Makefile").write_text(f"all: prog_{sub}\nprog_{sub}: prog_{sub}.cu\n"
                                             f"\tnvcc -O2 -o prog_{sub} prog_{sub}.cu\n")
        (root / sub / f"prog_{sub}.cu").write_text(PROGRAM.format(n=n, kernel=f"k_{sub}"))
    (root / "host").mkdir()
    (root / "host" / "Makefile").write_text("tool: tool.cpp\n\tg++ -O2 -o tool tool.cpp\n")
    (root / "host" / "tool.cpp").write_text("int main() { return 0; }\n")
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    config = root / "optimas.yml"
    lc = load_config(config)
    assert lc.program_names() == ["prog_a", "prog_b"], r.stdout
    a = lc.for_program("prog_a").config.app
    assert "make -C a -B prog_a" in a.build and a.build.endswith("cp a/prog_a {exe}'"), a.build
    assert a.sources == ["a/prog_a.cu"] and a.size_constants == ["N"]
    entries = json.loads((root / "compile_commands.json").read_text())
    assert {(e["directory"], e["file"]) for e in entries} >= {("a", "prog_a.cu"), ("b", "prog_b.cu")}, entries
    assert "paths relative to each command's folder" in r.stdout
    assert _builds(config, "prog_b", tmp_path)


def test_programs_that_share_a_file_name_are_named_by_their_folders():
    """A tutorial repository of variants (CoffeeBeforeArch/cuda_programming: 02_matrix_mul/baseline/mmul.cu,
    .../tiled/mmul.cu, .../noAliasing/restrict/mmul.cu): `--program mmul-5` said nothing of which one
    it was; the nearest folder names that tell them apart say it."""
    from runner.init.programs import distinct_names

    paths = ["m/baseline/mmul", "m/tiled/mmul", "m/noAliasing/restrict/mmul", "r/histogram", "a/b/k", "c/b/k"]
    assert distinct_names(paths) == {"m/baseline/mmul": "baseline-mmul", "m/tiled/mmul": "tiled-mmul",
                                     "m/noAliasing/restrict/mmul": "restrict-mmul", "r/histogram": "histogram",
                                     "a/b/k": "a-b-k", "c/b/k": "c-b-k"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_init_names_each_variant_of_a_folder_of_variants_by_its_folder(tmp_path: Path):
    root = tmp_path / "tutorial"
    for variant, n in (("baseline", 1024), ("tiled", 2048)):
        (root / "mmul" / variant).mkdir(parents=True)
        (root / "mmul" / variant / "mmul.cu").write_text(PROGRAM.format(n=n, kernel="matrixMul"))
    (root / "hist").mkdir()
    (root / "hist" / "main.cu").write_text(PROGRAM.format(n=4096, kernel="histogram"))
    r = run_cli("init", str(root))
    assert r.returncode == 0, r.stderr
    lc = load_config(root / "optimas.yml")
    assert sorted(lc.program_names()) == ["baseline-mmul", "hist", "tiled-mmul"]
    assert lc.for_program("tiled-mmul").config.app.sources == ["mmul/tiled/mmul.cu"]
