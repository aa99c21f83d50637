"""Problem sizes written as constants in the host code (issue #30): init proposes the constants the
allocations are sized from, check-config insists each has one definition, and the counter runs'
build at another scale really holds the scaled value (a real nvcc build, run on the CPU)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, run_cli

from runner.base.config import load_config
from runner.init.sources import source_texts
from runner.scan.size_constants import (
    definition_problem,
    definitions_of,
    integer_value,
    proposed_size_constants,
    scaled_sources,
    scaled_value,
    workspace_texts,
)
from runner.toolchain.builder import build_at_scale

SAMPLES = REPO / "benchmarks" / "external" / "cuda-samples" / "Samples"
RODINIA = REPO / "benchmarks" / "external" / "rodinia" / "cuda"


@pytest.mark.parametrize(("folder", "expected"), [
    # OPT_SZ = OPT_N * sizeof(float) sizes the buffers: followed to the root
    (SAMPLES / "5_Domain_Specific" / "BlackScholes", ["OPT_N"]),
    # not the partial-histogram counts (a bare launch grid; a MAX_ limit) nor the bin counts
    (SAMPLES / "2_Concepts_and_Techniques" / "histogram", ["byteCount"]),
    # not numValues: the validator's malloc names its own parameter of that name
    (SAMPLES / "2_Concepts_and_Techniques" / "sortingNetworks", ["N"]),
    (SAMPLES / "2_Concepts_and_Techniques" / "convolutionSeparable", ["imageW", "imageH"]),
    # sizes from argv only
    (SAMPLES / "2_Concepts_and_Techniques" / "reduction", []),
    (SAMPLES / "6_Performance" / "transpose", []),
    (RODINIA / "nw", []),
])
def test_the_constants_allocations_are_sized_from_are_proposed(folder: Path, expected: list[str]):
    assert [c.name for c in proposed_size_constants(source_texts(folder))] == expected


def test_a_constant_that_sizes_device_arrays_is_a_shape_and_a_bound_kernels_compare_with_a_size():
    texts = {"main.cu": "#define TILE_ELEMS 1024\n#define LEN 4096\n#define PAD 64\n"
                        "__global__ void k(float *a) { __shared__ float s[TILE_ELEMS]; a[threadIdx.x] = s[0]; }\n"
                        "__global__ void g(float *a) { float r[PAD]; if (threadIdx.x < LEN) a[LEN - 1] = r[0]; }\n"
                        "int main() { float *a; cudaMalloc(&a, (LEN + PAD) * TILE_ELEMS * sizeof(float)); }\n"}
    assert [c.name for c in proposed_size_constants(texts)] == ["LEN"]
    # a kernel parameter named like the host's constant is another variable
    texts = {"main.cu": "__global__ void k(float *a, int n) { float r[n]; a[threadIdx.x] = r[0]; }\n"
                        "int main() { const int n = 1 << 20; float *a; cudaMalloc(&a, n * 4);\n"
                        "  k<<<n / 256, 256>>>(a, n); }\n"}
    assert [c.name for c in proposed_size_constants(texts)] == ["n"]


def test_counts_of_repetitions_and_trials_are_not_proposed_as_sizes():
    """Chai's `const int n_reps = 50;` sizes a buffer of timings, not the problem: scaling it changes
    how often the work runs, not the work."""
    texts = {"main.cu": "int main() { const int n_reps = 50; const int in_size = 1 << 20; const int trials = 32;\n"
                        "  float *t = (float *) malloc(n_reps * trials * sizeof(float)); float *a;\n"
                        "  cudaMalloc(&a, in_size * sizeof(float)); }\n"}
    assert [c.name for c in proposed_size_constants(texts)] == ["in_size"]


def test_a_librarys_workspace_is_not_proposed_as_a_size():
    """llm.c's dev/cuda/common.h: `static size_t cublaslt_workspace_size = 32 * 1024 * 1024;` sizes
    cuBLASLt's scratch buffer, the same whatever the problem (init proposed it for all 22 programs)."""
    texts = {"common.h": "static size_t cublaslt_workspace_size = 32 * 1024 * 1024;\nvoid* cublaslt_workspace;\n"
                         "void setup() { cudaMalloc(&cublaslt_workspace, cublaslt_workspace_size); }\n",
             "main.cu": "int main() { int T = 1024; int C = 768; float* a; cudaMalloc(&a, T * C * sizeof(float)); }\n"}
    assert [c.name for c in proposed_size_constants(texts)] == ["T", "C"]


@pytest.mark.parametrize(("scale", "expected"), [
    (1.0, "64 * 1048576"), (0.25, "((64 * 1048576) / 4)"), (0.75, "((64 * 1048576) / 4 * 3)"),
    (1.5, "((64 * 1048576) / 2 * 3)"), (2.0, "((64 * 1048576) * 2)")])
def test_a_scaled_value_divides_first_and_stays_an_integer(scale: float, expected: str):
    got = scaled_value("64 * 1048576", scale)
    assert got == expected
    assert integer_value(got) == int(64 * 1048576 * scale)


def test_an_expression_from_the_pull_request_is_read_never_run():
    """A size's value is the pull request's text: read as numbers and C's integer operators only,
    within 64 bits, so that a file holding `N = 9**9**9**9;` (which Python's eval would compute
    for hours in the worker, outside the sandbox) or a huge shift is no size (an attacker's pass)."""
    for expr in ("9**9**9**9", "1 << (1 << 40)", "2 ** 64", "(1 << 63) * (1 << 63)", "(" * 120 + "1" + ")" * 120,
                 "99999999999999999999999", "3 % 0", "1e5", "4 >> -1"):
        assert integer_value(expr) is None, expr
    texts = {"unused.c": "void f() { N = 9**9**9**9; }\n", "main.cu": "#define M (1 << 20)\nint main() { return M; }\n"}
    assert definitions_of("N", texts) == [] and len(definitions_of("M", texts)) == 1
    # nor does a pattern run over its text: a character check on the value took 2^n steps on n
    # digits, and the declaration pattern run over a whole file n^2 steps on n type words (hours
    # for a file of the pull request's; both an attacker's pass)
    assert integer_value("1" * 60 + "z") is None and definitions_of("N", {"a.c": "N = " + "1" * 60 + "z;"}) == []
    (found,) = definitions_of("N", {"a.c": "int " * 200_000 + "N = 5;\n"})
    assert found.value == "5" and found.line == 1 and not found.macro
    assert [integer_value(e) for e in ("64 * 1048576", "1024UL*1024", "(1 << 10) * sizeof(float)", "10/3", "-5+2",
                                       "0x100", "1'000'000", "-7/2", "-7%2")] == [67108864, 1048576, 4096, 3, -3, 256,
                                                                                  1000000, -3, -1]  # C's / and %


def test_scaling_rewrites_only_the_definition_and_refuses_an_ambiguous_name():
    texts = {"a.cu": "// N is the size\n#define N (1 << 20)   \nint x = N;\n",
             "b.cpp": "const unsigned int M = 4096, K = 16;\nvoid f() { int y = M; }\n"}
    out = scaled_sources(["N", "M"], texts, 0.5)
    assert out["a.cu"] == "// N is the size\n#define N (((1 << 20)) / 2)   \nint x = N;\n"
    assert out["b.cpp"].startswith("const unsigned int M = ((4096) / 2), K = 16;")
    # a later declarator of one declaration is a definition too
    both = scaled_sources(["W", "H"], {"g.cu": "const int W = 1024, H = 768;\nint x = W * H;\n"}, 0.5)
    assert both["g.cu"].startswith("const int W = ((1024) / 2), H = ((768) / 2);")
    texts["c.h"] = "static const int N = 8;\n"
    with pytest.raises(ValueError, match=r"'N' needs exactly one definition.*a.cu:2; c.h:1"):
        scaled_sources(["N"], texts, 2.0)
    assert definitions_of("N", {"d.cu": '/* #define N 4 */ printf("N = 5;");\n'}) == []


ASSIGNED = """\
int main(int argc, char **argv) {
  int n1, n2, i, m;
  n1 = 784;
  n2 = 15000; m = atoi(argv[1]);
  float *x = (float *) malloc(sizeof(float) * n2);
  for (i = 0; i < n1; i++) x[i] = i;
  cudaMalloc(&x, sizeof(float) * n1 * n2 * m);
  return 0;
}
"""


def test_a_size_assigned_once_to_a_variable_declared_without_one_is_a_size_constant():
    """HeCBench's haccmk: `int n1, n2; n1 = 784; n2 = 15000;` in main, no size argument."""
    texts = {"main.cu": ASSIGNED}
    assert [(d.value, d.line) for d in definitions_of("n2", texts)] == [("15000", 4)]
    assert definitions_of("m", texts) == []  # a value read at run time is no constant
    assert definitions_of("i", texts) == []  # a loop's start is not a statement of its own
    assert [c.name for c in proposed_size_constants(texts)] == ["n2", "n1"]
    assert scaled_sources(["n2"], texts, 0.25)["main.cu"].splitlines()[3] == "  n2 = ((15000) / 4); m = atoi(argv[1]);"
    texts["main.cu"] = ASSIGNED.replace("  return 0;", "  n2 = 64;\n  return 0;")
    assert definition_problem("n2", texts) is not None  # assigned twice: which one is the size?


PRINTS_N = """\
#include <cstdio>
#include <cstdlib>
__global__ void fill(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = 1.0f; }
int main(int argc, char **argv) {
  const int N = 1 << 20;
  printf("N=%d\\n", N);
  if (argc > 1) return 0;  // the test runs it on a machine without a GPU
  float *a;
  cudaMalloc(&a, N * sizeof(float));
  fill<<<(N + 255) / 256, 256>>>(a, N);
  cudaDeviceSynchronize();
  return 0;
}
"""


def _program(tmp_path: Path, source: str, config: str = "") -> tuple[Path, Path]:
    """A program folder holding prog.cu, and the path of a config beside it (written when
    `config` is given: the app section after workdir and sources)."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "prog.cu").write_text(source)
    cfg = tmp_path / "optimas.yml"
    if config:
        cfg.write_text("app:\n  workdir: app\n  sources: [prog.cu]\n" + config)
    return app, cfg


def test_init_proposes_the_constants_only_when_the_run_takes_no_size(tmp_path: Path):
    app, _ = _program(tmp_path, PRINTS_N)
    r = run_cli("init", str(app))
    assert r.returncode == 0, r.stderr
    text = (app / "optimas.yml").read_text()
    assert "size_constants: [N]" in text and "N = 1 << 20 (prog.cu:5)" in text
    assert load_config(app / "optimas.yml").config.app.size_constants == ["N"]
    r = run_cli("init", str(app), "--force", "--args", "4096")
    assert r.returncode == 0, r.stderr
    assert "size_constants" not in (app / "optimas.yml").read_text()
    # a log2 size beside it: left out, and init says why
    logn = PRINTS_N.replace("const int N = 1 << 20;", "const int LOG_N = 20;\n  const int N = 4096;")
    (app / "prog.cu").write_text(logn.replace("N * sizeof(float)", "(N << LOG_N) * sizeof(float)"))
    r = run_cli("init", str(app), "--force")
    assert "size_constants: [N]" in (app / "optimas.yml").read_text()
    assert "not proposed as size constants: LOG_N: named as a log" in r.stdout


def test_check_config_refuses_a_size_constant_without_one_definition(tmp_path: Path):
    app, cfg = _program(tmp_path, PRINTS_N, "  build: nvcc -o {exe} prog.cu\n  run: '{exe}'\n"
                                            "  size_constants: [N, SIZE]\n")
    (app / "other.h").write_text("#define N 64\n")
    # a definition in a file the program does not include is another program's (a folder of programs)
    r = run_cli("check-config", "--config", str(cfg))
    assert r.returncode == 2 and "'N' needs" not in r.stdout + r.stderr, r.stdout + r.stderr
    (app / "prog.cu").write_text('#include "other.h"\n' + (app / "prog.cu").read_text())
    r = run_cli("check-config", "--config", str(cfg))
    assert r.returncode == 2, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "'N' needs exactly one definition" in out and "other.h:1" in out and "prog.cu:6" in out
    assert "'SIZE' needs exactly one definition" in out and "found none" in out


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_the_build_at_another_scale_holds_the_scaled_constant(tmp_path: Path):
    """The profiling agent's build at a scale (build_at_scale), on the real nvcc: the scaled
    sources over a copy of the workspace, the user's file untouched."""
    app, cfg = _program(tmp_path, PRINTS_N, "  build: nvcc -arch={arch} -o {exe} prog.cu\n  run: '{exe}'\n"
                                            "  size_constants: [N]\n")
    lc = load_config(cfg)
    texts = workspace_texts(app, app)
    for scale, n in ((0.25, 1 << 18), (1.5, 3 << 19)):
        exe = tmp_path / f"prog-{scale}"
        built = build_at_scale(lc, "sm_90", texts, scale, exe)
        assert built.ok, built.output
        ran = subprocess.run([str(exe), "host-only"], capture_output=True, text=True, timeout=60)
        assert ran.stdout.strip() == f"N={n}"
    assert (app / "prog.cu").read_text() == PRINTS_N


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_two_size_constants_each_take_the_square_root_of_the_scale(tmp_path: Path):
    """A grid of W x H: at scale 2 the work doubles (each side times 1.4375, the root in
    sixteenths), not quadruples; at 0.25 it is a quarter (each side halved)."""
    grid = PRINTS_N.replace("  const int N = 1 << 20;\n",
                            "  const int W = 1024;\n  const int H = 1024;\n  const int N = W * H;\n")
    grid = grid.replace('printf("N=%d\\n", N);', 'printf("%dx%d\\n", W, H);')
    app, cfg = _program(tmp_path, grid, "  build: nvcc -arch={arch} -o {exe} prog.cu\n  run: '{exe}'\n"
                                        "  size_constants: [W, H]\n")
    lc = load_config(cfg)
    texts = workspace_texts(app, app)
    for scale, side in ((0.25, 512), (2.0, 1472)):
        exe = tmp_path / f"grid-{scale}"
        built = build_at_scale(lc, "sm_90", texts, scale, exe)
        assert built.ok, built.output
        ran = subprocess.run([str(exe), "host-only"], capture_output=True, text=True, timeout=60)
        assert ran.stdout.strip() == f"{side}x{side}"


DATASETS = """\
#include <cstdio>
#if !defined(MINI) && !defined(LARGE)
#define STANDARD
#endif
#ifndef N
#  ifdef MINI
#    define N 256
#  endif
#  ifdef STANDARD
#    define N 4096
#  endif
#  ifdef LARGE
#    define N 16384
#  endif
#endif
__global__ void fill(float *a) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) a[i] = 1.0f; }
int main(int argc, char **argv) {
  printf("N=%d\\n", N);
  if (argc > 1) return 0;
  float *a;
  cudaMalloc(&a, N * sizeof(float));
  fill<<<(N + 255) / 256, 256>>>(a);
  return 0;
}
"""


def test_a_macro_defined_once_per_dataset_is_proposed_and_each_definition_scaled():
    texts = {"prog.cu": DATASETS}
    assert definition_problem("N", texts) is None
    assert [c.name for c in proposed_size_constants(texts)] == ["N"]
    scaled = scaled_sources(["N"], texts, 0.5)["prog.cu"]
    assert re.findall(r"define N (.*)", scaled) == ["((256) / 2)", "((4096) / 2)", "((16384) / 2)"]
    # a declaration defined twice is two variables in two scopes: which one sizes the run is not known
    twice = {"a.cpp": "void f() { const int N = 64; }\n", "b.cpp": "void g() { const int N = 128; }\n"}
    assert "'N' needs exactly one definition" in definition_problem("N", twice)


@pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc")
def test_the_build_at_another_scale_scales_the_dataset_the_build_takes(tmp_path: Path):
    """-DLARGE picks N = 16384; each branch's definition scaled in the copy, the build at 0.25 has
    4096 (nothing on the command line: a -DN would also rename the `N` parameters of cuda.h)."""
    app, cfg = _program(tmp_path, DATASETS, "  build: nvcc -DLARGE -arch={arch} -o {exe} prog.cu\n  run: '{exe}'\n"
                                            "  size_constants: [N]\n")
    exe = tmp_path / "prog"
    built = build_at_scale(load_config(cfg), "sm_90", workspace_texts(app, app), 0.25, exe)
    assert built.ok, built.output
    ran = subprocess.run([str(exe), "host-only"], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == "N=4096"
    assert (app / "prog.cu").read_text() == DATASETS


def test_a_link_out_of_the_workspace_is_not_read_as_a_source(tmp_path: Path):
    """Its text would be rewritten into the build's copy: a secret outside the workspace that
    happens to hold `int N = 5;` must not travel there."""
    outside = tmp_path / "secret.h"
    outside.write_text("const int N = 4096;  // outside\n")
    app, _ = _program(tmp_path, PRINTS_N.replace("const int N = 1 << 20;", "const int M = 1 << 20;"))
    (app / "inside.h").symlink_to(outside)
    texts = workspace_texts(app, app)
    assert sorted(texts) == ["prog.cu"]
    assert "found none" in definition_problem("N", texts)


@pytest.mark.parametrize(("code", "left_out", "why"), [
    ("#define LOGN 24\nint main() { float *a; cudaMalloc(&a, (1 << LOGN) * sizeof(float)); }\n", "LOGN",
     "named as a log"),
    ("#define N_EXP 22\nint main() { float *a; cudaMalloc(&a, (1ul << N_EXP) * 4); k<<<64, 32>>>(a); }\n",
     "N_EXP", "used as a shift count (1 << N_EXP): a log2 size"),
    ("#define DEPTH 20\nint main() { float *a; size_t n = 1 << DEPTH; cudaMalloc(&a, DEPTH * n * 4); }\n", "DEPTH",
     "used as a shift count (1 << DEPTH): a log2 size"),
    ("#define OCCUPANCY 75\n#define N 4096\nint main() { float *a;\n"
     "  cudaMalloc(&a, N * OCCUPANCY / 100 * sizeof(float)); }\n", "OCCUPANCY", "named as a occupan"),
    ("#define FILL 60\n#define N 4096\nint main() { float *a;\n"
     "  cudaMalloc(&a, N * FILL / 100 * sizeof(float)); }\n", "FILL", "used as a percentage (/ 100)"),
])
def test_percentages_ratios_and_log2_sizes_are_left_out_with_the_reason(code: str, left_out: str, why: str):
    """Scaling a log2 size by the scale's root multiplies the work by orders of magnitude (2^24 ->
    2^33 at x1.4), and a percentage is not the problem's size: they are left out, and init says why."""
    reasons: dict[str, str] = {}
    found = [c.name for c in proposed_size_constants({"main.cu": code}, reasons)]
    assert left_out not in found and why in reasons[left_out]
    assert found == (["N"] if "N 4096" in code else [])
