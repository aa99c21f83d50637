"""Runs that start: init finds main's argument-count checks, proposes the arguments the repository's
README, scripts or CI run the program with, and check-config warns of a run command that gives too
few (runner.init.runs)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runner.init.runs import ArgcGuard, argc_guards, repository_runs, run_arguments, too_few

KERNEL = "__global__ void scale(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] *= 2; }\n"


def main_with(check: str, body: str = 'printf("please select a dataset: %s <file>\\n", argv[0]); return 1;') -> str:
    return (KERNEL + "#include <cstdio>\nint main(int argc, char** argv) {\n"
            f"  if ({check}) {{\n    {body}\n  }}\n  scale<<<1, 32>>>(nullptr, 0);\n  return 0;\n}}\n")


@pytest.mark.parametrize("check, needs", [("argc != 2", 1), ("argc < 3", 2), ("2 > argc", 1), ("argc == 1", 1),
                                          ("argc <= 2", 2), ("4 != argc", 3)])
def test_an_argument_count_check_that_prints_and_stops_is_found(check: str, needs: int):
    (guard,) = argc_guards({"main.cu": main_with(check)})
    assert (guard.file, guard.line, guard.needs) == ("main.cu", 4, needs)
    assert guard.message == "please select a dataset: %s <file>"
    assert too_few([guard], "x " * (needs - 1)) is guard and too_few([guard], "x " * needs) is None


@pytest.mark.parametrize("text", [
    main_with("argc > 1", "n = atoi(argv[1]);"),  # an optional argument: it goes on without
    main_with("argc != 2", 'printf("no file given, using the default\\n");'),  # prints and goes on
    main_with("argc == 2", "return 0;"),  # stops when given one: not a demand for more
    KERNEL + "int main() { return 0; }\n",  # no argc at all
    KERNEL + "// int main(int argc, char** argv) { if (argc != 2) return 1; }\nint main() { return 0; }\n",
])
def test_checks_that_do_not_stop_a_run_without_arguments_are_not_guards(text: str):
    assert argc_guards({"main.cu": text}) == []


def test_the_arguments_the_repository_runs_a_program_with(tmp_path: Path):
    (tmp_path / "README.md").write_text("# gauss\nBuild with make, then\n\n```sh\n./gauss data/matrix4.txt -q\n"
                                        "./gauss --help\n```\nor `bin/gauss data/m16.txt`.\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("#!/bin/sh\nexport X=1\n./other 5\n./gauss data/m64.txt | tee out\n")
    assert repository_runs(tmp_path, ["gauss"]) == [("README.md", 5, "data/matrix4.txt -q"),
                                                   ("README.md", 8, "data/m16.txt"),
                                                   ("scripts/run.sh", 4, "data/m64.txt")]
    assert repository_runs(tmp_path, ["nothere"]) == []
    assert run_arguments("{exe} data/m.txt {seed}") == "data/m.txt {seed}"


def optimas(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def initialized(root: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """`optimas init` on a new folder `root` holding `files` (name -> text); it must succeed."""
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    r = optimas("init", str(root))
    assert r.returncode == 0, r.stderr
    return r


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@needs_nvcc
def test_init_proposes_the_readmes_arguments_where_main_demands_some(tmp_path: Path):
    root = tmp_path / "gauss"
    r = initialized(root, {"gauss.cu": main_with("argc != 2"),
                           "README.md": "Run it as\n\n    ./gauss data/matrix4.txt\n"})
    assert ("gauss.cu:4: main stops unless given 1 argument: 'please select a dataset: %s <file>'; the run "
            "arguments are the ones README.md:3 gives: data/matrix4.txt") in r.stdout
    assert 'run: "{exe} data/matrix4.txt"' in (root / "optimas.yml").read_text()
    checked = optimas("check-config", "--config", str(root / "optimas.yml"))
    assert checked.returncode == 0 and "warning" not in checked.stderr
    # with no README to go by, init says what stops the run, and check-config warns of it
    (root / "README.md").unlink()
    r = optimas("init", str(root), "--force")
    assert ("gauss.cu:4: main stops unless given 1 argument: 'please select a dataset: %s <file>', and app.run "
            "gives none: the run stops before any kernel runs. Give its arguments with --args") in r.stdout
    checked = optimas("check-config", "--config", str(root / "optimas.yml"))
    assert checked.returncode == 0
    assert ("warning: app.run ('{exe}'): gauss.cu:4: main stops unless given 1 argument: 'please select a dataset: "
            "%s <file>'; the run would stop before any kernel runs") in checked.stderr
    # arguments given on the command line are the user's: kept, and the README's are only shown
    (root / "README.md").write_text("./gauss data/matrix4.txt\n")
    r = optimas("init", str(root), "--force", "--args", "")
    assert 'run: "{exe}"' in (root / "optimas.yml").read_text() and "README.md:1 runs it with" in r.stdout


PARSED = """#include <cstdlib>
#include <cstring>
#include <unistd.h>
int ARRAY_SIZE = 33554432;
int num_times = 100;
int n = 4096;
int width = 1024;
int seed = 12345;
__global__ void triad(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] = 2 * a[i]; }
void parse(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--arraysize") || !strcmp(argv[i], "-s")) ARRAY_SIZE = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--numtimes")) num_times = atoi(argv[++i]);
    else if (!strncmp(argv[i], "--n=", 4)) n = atoi(argv[i] + 4);
    else if (!strcmp(argv[i], "--seed")) seed = atoi(argv[++i]);
  }
  int opt;
  while ((opt = getopt(argc, argv, "w:")) != -1) { switch (opt) { case 'w': width = atoi(optarg); break; } }
}
int main(int argc, char** argv) { parse(argc, argv); triad<<<1, 32>>>(nullptr, ARRAY_SIZE); return 0; }
"""


def test_optional_size_flags_with_the_codes_defaults_are_found():
    from runner.init.runs import size_flags

    found = [(f.flag, f.variable, f.default, f.line, f.argument()) for f in size_flags({"stream.cu": PARSED})]
    assert found == [("--arraysize", "ARRAY_SIZE", 33554432, 12, "--arraysize 33554432"),
                     ("--n=", "n", 4096, 14, "--n=4096"), ("-w", "width", 1024, 18, "-w 1024")]


@needs_nvcc
def test_init_passes_an_optional_size_flag_at_its_default_so_that_counter_runs_scale_it(tmp_path: Path):
    root = tmp_path / "stream"
    r = initialized(root, {"stream.cu": PARSED})
    assert ("stream.cu:12: the program takes its size from --arraysize (default 33554432, ARRAY_SIZE): the run "
            "passes it at its default, so that the counter runs scale it") in r.stdout
    text = (root / "optimas.yml").read_text()
    assert 'run: "{exe} --arraysize {arraysize}"' in text
    assert 'profile_run: "{exe} --arraysize {arraysize*scale}"' in text
    # arguments the user gives stay theirs: the flag is only named
    r = optimas("init", str(root), "--force", "--args", "--numtimes 5")
    assert 'run: "{exe} --numtimes 5"' in (root / "optimas.yml").read_text()
    assert "add it to --args so that the counter runs can scale it" in r.stdout


# A size flag read by a helper that writes through a pointer (`parseInt(argv[i], &size)`), the
# flag spelled as a std::string compared with argv, beside flags that set no size.
POINTER_PARSED = """#include <string>
#include <cstdio>
long elements = 1048576;
long elements_default = 0;
unsigned repeats = 10;
int gpu = 0;
static bool parse_number(const char* text, long* out) { return std::sscanf(text, "%ld", out) == 1; }
int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (!std::string("--gpu").compare(argv[i])) { gpu = std::stoi(argv[++i]); }
    else if (!std::string("--elements").compare(argv[i]) || !std::string("-e").compare(argv[i])) {
      if (++i >= argc || !parse_number(argv[i], &elements)) return 1;
    }
    else if (!std::string("--repeats").compare(argv[i])) { if (std::sscanf(argv[++i], "%u", &repeats) != 1) return 1; }
  }
  return 0;
}
"""


def test_a_size_flag_parsed_through_a_pointer_is_found_and_its_default_taken():
    from runner.init.runs import size_flags

    found = [(f.flag, f.variable, f.line) for f in size_flags({"main.cpp": POINTER_PARSED})]
    assert found == [("--elements", "elements", 11)]


GRID = """#include <string>
#include <algorithm>
template <typename T> T get_argval(char** begin, char** end, const std::string& arg, const T default_val) {
  char** itr = std::find(begin, end, arg); return (itr != end && ++itr != end) ? (T)std::stoi(*itr) : default_val;
}
__global__ void jacobi(float* a, int nx, int ny) { int i = threadIdx.x; if (i < nx * ny) a[i] *= 0.5f; }
int main(int argc, char** argv) {
  const int iter_max = get_argval<int>(argv, argv + argc, "-niter", 1000);
  const int nx = get_argval<int>(argv, argv + argc, "-nx", 16384);
  const int ny = get_argval<int>(argv, argv + argc, "-ny", 8192);
  const int halo = get_argval<int>(argv, argv + argc, "-width", 64);
  float* a; cudaMalloc(&a, nx * ny * sizeof(float));
  for (int it = 0; it < iter_max; ++it) jacobi<<<(nx * ny + 255) / 256, 256>>>(a, nx, ny);
  return halo > 0 ? 0 : 1;
}
"""


@needs_nvcc
def test_a_helper_given_argv_the_flag_and_its_default_sets_sizes_that_multiply_into_one_problem(tmp_path: Path):
    """NVIDIA's multi-gpu-programming-models jacobi: `nx = get_argval<int>(argv, argv + argc, "-nx", 16384)`.
    The flags' defaults come from the call; -nx and -ny multiply (`nx * ny`), so both are the
    problem's and the counter runs scale them together; -niter counts iterations, and -width, though
    named like a size, is not a dimension of that problem. Of stream's flags only --arraysize is
    (its --n= and -w size nothing it multiplies with)."""
    from runner.init.runs import one_problem, size_flags

    found = size_flags({"jacobi.cu": GRID})
    assert [(f.flag, f.variable, f.default) for f in found] == [("-nx", "nx", 16384), ("-ny", "ny", 8192),
                                                                 ("-width", "halo", 64)]
    assert [f.flag for f in one_problem(found, {"jacobi.cu": GRID})] == ["-nx", "-ny"]
    assert [f.flag for f in one_problem(size_flags({"stream.cu": PARSED}), {"stream.cu": PARSED})] == ["--arraysize"]
    root = tmp_path / "jacobi"
    r = initialized(root, {"jacobi.cu": GRID})
    assert ("jacobi.cu:9: the program takes its size from -nx (default 16384, nx) and -ny (default 8192, ny): the "
            "run passes them at their defaults, so that the counter runs scale them") in r.stdout
    text = (root / "optimas.yml").read_text()
    assert 'run: "{exe} -nx {nx} -ny {ny}"' in text and 'profile_run: "{exe} -nx {nx*scale} -ny {ny*scale}"' in text


RODINIA = """#include <cstdio>
#include <cstdlib>
void run(int argc, char** argv);
void usage(int argc, char** argv) {
  fprintf(stderr, "Usage: %s <grid_rows/grid_cols> <pyramid_height> <sim_time> <temp_file> <power_file> "
          "<output_file>\\n", argv[0]);
  exit(1);
}
__global__ void step(float* t, int n) { int i = threadIdx.x; if (i < n) t[i] += 1.0f; }
void set_grid(int rows, int cols) { printf("%d %d\\n", rows, cols); }
int main(int argc, char** argv) {
  printf("WG size of kernel = %d X %d\\n", 16, 16);
  set_grid(512, 512);
  run(argc, argv);
  return EXIT_SUCCESS;
}
void run(int argc, char** argv) {
  int grid_rows;
  if (argc != 7)
    usage(argc, argv);
  grid_rows = atoi(argv[1]);
  float* t; cudaMalloc(&t, grid_rows * grid_rows * sizeof(float));
  step<<<1, 32>>>(t, grid_rows);
}
"""


@needs_nvcc
def test_a_check_in_the_function_main_hands_its_arguments_to_calling_usage_is_a_guard(tmp_path: Path):
    """Rodinia's hotspot: main calls `run(argc, argv)` (after another call of two arguments, which is
    not it), whose `if (argc != 7) usage(argc, argv);` stops (usage prints and exits), also where
    run() is defined in another file; the folder's `run` script gives the arguments, which init then
    uses."""
    assert argc_guards({"hotspot.cu": RODINIA}) == [ArgcGuard("hotspot.cu", 19, 6, "")]
    # run() defined in a file of its own: found through main's call, not by reading on past main
    main_part, run_part = RODINIA.split("void run(int argc, char** argv) {")
    assert argc_guards({"main.cu": main_part, "run.cu": "void run(int argc, char** argv) {" + run_part}) == [
        ArgcGuard("run.cu", 3, 6, "")]
    assert argc_guards({"hotspot.cu": RODINIA.replace("usage(argc, argv);\n  grid", "grid")}) == []
    root = tmp_path / "hotspot"
    run = "./hotspot 512 2 2 ../../data/hotspot/temp_512 ../../data/hotspot/power_512 output.out\n"
    r = initialized(root, {"hotspot.cu": RODINIA, "run": run})
    assert "hotspot.cu:19: main stops unless given 6 arguments; the run arguments are the ones run:1 gives" in r.stdout
    assert '"{exe} {grid_rows_grid_cols} 2 2 ../../data/hotspot/temp_512' in (root / "optimas.yml").read_text()


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make needed")
def test_the_run_script_is_read_for_the_binary_the_makefile_makes(tmp_path: Path):
    """Rodinia's bfs: the Makefile makes bfs.out (EXE = bfs.out) and the folder's run script runs
    `./bfs.out graph.txt`; the program is named bfs, and the script's line is found by its binary."""
    r = initialized(root := tmp_path / "bfs", {
        "bfs.cu": main_with("argc != 2"), "run": "./bfs.out ../../data/bfs/graph65536.txt\n",
        "Makefile": "EXE = bfs.out\nrelease: bfs.cu\n\tnvcc bfs.cu -o $(EXE)\n"})
    assert "the run arguments are the ones run:1 gives: ../../data/bfs/graph65536.txt" in r.stdout
    assert 'run: "{exe} ../../data/bfs/graph65536.txt"' in (root / "optimas.yml").read_text()
