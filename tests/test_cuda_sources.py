"""Kernels as profilers name them, found in sources spread over files and headers: templated
kernels, namespaces, functors, device helpers in other files, edits across files (issue #14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.analysis.evidence import Diagnostics, GpuInfo
from runner.analysis.hot import KernelTime
from runner.base.workspace import read_included, read_source, read_sources, source_name, stored_name, write_source
from runner.proposal.guard import apply_proposal
from runner.proposal.parser import Edit, Proposal
from runner.proposal.prompt import build_prompt
from runner.scan.cuda_source import (
    after_license_header,
    functions,
    kernel_base_name,
    kernel_by_name,
    parameter_count,
    template_arguments,
)

SOURCE = """\
#include <cstdio>
namespace app {
namespace {
template <typename T, int BLOCK = (1 << 8)>
__global__ void __launch_bounds__(BLOCK) reduce(const T* __restrict__ in, T* out, int n) {
  out[0] = in[threadIdx.x];
}
}  // namespace
template <class F>
__global__ void for_each(int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}
__global__ void scale(float* x, int n) { x[0] *= n; }
__global__ void scale(float* x, float a, int n) { x[0] *= a * n; }
}  // namespace app
"""

# Spellings as ncu writes them (template parameters, not their values, in the parameter list: seen
# on the H200, benchmarks/results/tracer-2026-12-03.md) and as the C++ runtime's demangler does.
NAMES = [
    ("void app::(anonymous namespace)::reduce<float, 256>(const T1 *, T1 *, int)", "reduce", 5),
    ("void reduce<float, 256>(const T1 *, T1 *, int)", "reduce", 5),
    ("void app::for_each<app::Saxpy>(int, T1)", "for_each", 10),
    ("void app::for_each<__nv_dl_wrapper_t<__nv_dl_tag<void (*)(float *, int), &app::run, 1u>, float *>>(int, T1)",
     "for_each", 10),
    ("app::scale(float *, int)", "scale", 14),
    ("app::scale(float *, float, int)", "scale", 15),
    ("app::scale(float*, float, int)", "scale", 15),
    ("scale", "scale", 14),
]


@pytest.mark.parametrize("name, base, line", NAMES)
def test_a_kernel_is_found_by_the_name_a_profiler_gives_it(name: str, base: str, line: int):
    assert kernel_base_name(name) == base
    f = kernel_by_name(functions(SOURCE), name)
    assert f is not None and f.body_start_line == line


# Shapes of real programs' sources that hid kernels (HeCBench's 529 CUDA folders, Rodinia's dwt2d):
# a multi-line CHECK macro right before a kernel, an extern "C" block, a macro for __launch_bounds__
# before or after __global__, launch bounds with nested parentheses; and what must stay no
# function: one inside a macro's text, a constructor's member initializers, a call.
SHAPES = """\
#define CHECK(x) do { \\
  cudaError_t e = (x); \\
  if (e != cudaSuccess) { \\
    printf("%s\\n", cudaGetErrorString(e)); exit(1); \\
  } \\
} while (0)

__global__ void after_macro(float* a) { a[0] = 1.0f; }

#define REGISTER(name) \\
  __device__ float name(float v) { \\
    return v; \\
  }

extern "C" {
__global__ void in_extern_c(float* a) { a[0] = 2.0f; }
}

template <class real>
__global__ void
LAUNCH_BOUNDS (128, 4)
after_bounds_macro(real* a) { a[0] = 3; }

C10_LAUNCH_BOUNDS_1(256) __global__ void before_global(float* a) { a[0] = 4.0f; }

template <int W>
__launch_bounds__(W, CTMIN(SHM_SIZE / sizeof(Tile<W>), 8))
__global__ void nested_bounds(int* a) { a[0] = W; }

struct Info {
  int dim;
  __host__ __device__ Info(int d) : dim(d) {}
};
int made = make(Info(3)), more = 0;
"""


def test_kernels_after_macros_in_extern_blocks_and_with_launch_bound_macros_are_found():
    found = {f.name: (f.start_line, f.is_kernel) for f in functions(SHAPES)}
    assert found == {"after_macro": (8, True), "in_extern_c": (16, True), "after_bounds_macro": (19, True),
                     "before_global": (24, True), "nested_bounds": (26, True)}
    # nothing from REGISTER's text, no `dim` from Info's initializer, no `make` from the call


BRANCHES = """\
__global__ void first(int* m, int n) {
  int i = threadIdx.x;
#ifdef LINKED
  for (int x = -m[i]; x >= 0; x = m[x]) {
#else
  for (int x = 0; x < n; x++) {
#endif
    m[x] += 1;
  }
}
#ifdef SMALL
double host_side(float* a,
#else
double host_side(double* a,
#endif
                 int n) {
  return n;
}
#if 0
__global__ void retired( {
#else
__global__ void kept(int* m) { m[0] = 1; }
#endif
#ifdef FAST
__global__ void twin(int* m) { m[0] = 2; }
#else
__global__ void twin(int* m) { m[0] = 3; }
#endif
__global__ void last(int* m) { m[1] = 0; }
"""


def test_the_branches_of_an_if_that_each_open_a_brace_count_once():
    """A loop head or a function head written once per branch of an #ifdef (HeCBench's
    multimaterial and su3): counted twice, every function after it was misplaced."""
    found = [(f.name, f.start_line, f.end_line) for f in functions(BRANCHES)]
    # the #if 0 branch is the one left out; branches that balance their braces stay whole (both twins)
    assert found == [("first", 1, 10), ("host_side", 12, 18), ("kept", 22, 22), ("twin", 25, 25),
                     ("twin", 27, 27), ("last", 29, 29)]
    assert [f.params for f in functions(BRANCHES) if f.name == "host_side"] == [("float* a", "int n")]


def test_template_arguments_and_parameters_of_demangled_names():
    assert template_arguments("void k<(int)4, lambda [](int)->void, X>(int)") == ("(int)4", "lambda [](int)->void", "X")
    assert template_arguments("void app::for_each<app::Saxpy>(int, T1)") == ("app::Saxpy",)
    assert template_arguments("triad(float *, int)") == ()
    assert parameter_count("void k<float>(const T1 *, T1 *, int)") == 3 and parameter_count("k") is None
    head = kernel_by_name(functions(SOURCE), "reduce").template_params
    assert head == ("typename T", "int BLOCK = (1 << 8)")


MAIN = """\
#include "kernels/transform.cuh"
#include "missing.h"
#include "../outside.h"
namespace app {
struct Saxpy {
  float* y;
  float a;
  __device__ void operator()(int i) const { y[i] = fused(a, y[i]); }
};
}  // namespace app
int main() {
  float* x = nullptr;
  app::for_each<<<1, 32>>>(32, app::Saxpy{x, 2.0f});
  app::reduce<float, 256><<<1, 256>>>(x, x, 32);
}
"""
TRANSFORM = """\
#pragma once
#include "../common/math.cuh"
namespace app {
template <class F>
__global__ void for_each(int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}
template <typename T, int BLOCK>
__global__ void reduce(const T* in, T* out, int n) {
  out[0] = twice(in[threadIdx.x]);
}
}  // namespace app
"""
MATH = """\
#pragma once
__device__ inline float twice(float v) { return 2.0f * v; }
__device__ inline float fused(float a, float v) { return twice(a) * v + 1.0f; }
__device__ inline float unused(float v) { return v; }
"""


def program(root: Path) -> Path:
    """A program whose kernels and helpers live in headers; only main.cu is in app.sources."""
    work = root / "ws" / "prog"
    (work / "kernels").mkdir(parents=True)
    (work / "common").mkdir()
    (work / "main.cu").write_text(MAIN)
    (work / "kernels" / "transform.cuh").write_text(TRANSFORM)
    (work / "common" / "math.cuh").write_text(MATH)
    (root / "ws" / "outside.h").write_text("// beside the program, inside the workspace\n")
    (root / "elsewhere.h").write_text("// outside the workspace\n")
    return work


def proposal(edits: list[Edit]) -> Proposal:
    return Proposal(shape="structured", edits=edits, raw="")


def diagnostics(*kernels: str) -> Diagnostics:
    return Diagnostics(gpu=GpuInfo(name="NVIDIA H200"), alpha=0.8, kernels=[
        KernelTime(kernel=k, total_ns=1e6, launches=1, share=1 / len(kernels), cumulative_share=1.0, hot=True)
        for k in kernels])


def test_local_headers_are_followed_inside_the_workspace_only(tmp_path: Path):
    work = program(tmp_path)
    files = read_sources(work, ["main.cu"])
    found = read_included(work, tmp_path / "ws", files)
    assert sorted(found) == ["../outside.h", "common/math.cuh", "kernels/transform.cuh"]
    assert sorted(read_included(work, work, files, depth=1)) == ["kernels/transform.cuh"]
    (work / "main.cu").write_text('#include "../../elsewhere.h"\n')
    assert read_included(work, tmp_path / "ws", read_sources(work, ["main.cu"])) == {}


def test_the_prompt_shows_kernels_and_helpers_from_headers_and_the_guard_keeps_helpers_read_only(tmp_path: Path):
    work = program(tmp_path)
    files = read_sources(work, ["main.cu"])
    files |= read_included(work, work, files)
    hot = ["void app::for_each<app::Saxpy>(int, T1)", "void app::reduce<float, 256>(const T1 *, T1 *, int)"]
    prompt = build_prompt("prog", diagnostics(*hot), files)
    user = prompt.user
    for title in ("Hot kernel for_each", "Hot kernel reduce", "Device function Saxpy::operator() (read-only)",
                  "Device function twice (read-only)", "Device function fused (read-only)"):
        assert title in user, title
    assert "unused" not in user  # not reached from a hot kernel
    # the kernels, and where main.cu launches them, their execution configurations
    assert prompt.editable == {"kernels/transform.cuh": [(4, 8), (9, 12)], "main.cu": [(13, 13), (14, 14)]}

    # a kernel edit in the header is applied; a helper edit is refused unless the config opens it
    kernel_edit = Edit(file="kernels/transform.cuh", start_line=11, end_line=11,
                       new_text="  out[0] = twice(in[threadIdx.x]) + T(0);", cites=["K1"])
    helper_edit = Edit(file="common/math.cuh", start_line=2, end_line=2,
                       new_text="__device__ inline float twice(float v) { return v + v; }", cites=["K1"])
    refused = apply_proposal(proposal([kernel_edit, helper_edit]), files, prompt.editable)
    assert not refused.ok and [v.rule for v in refused.violations] == ["outside-allowed-region"]
    opened = build_prompt("prog", diagnostics(*hot), files, editable=["twice"])
    assert "Device function twice (read-only)" not in opened.user and "Device function twice" in opened.user
    both = apply_proposal(proposal([kernel_edit, helper_edit]), files, opened.editable)
    assert both.ok, both.reasons()
    assert "b/common/math.cuh" in both.diff and "b/kernels/transform.cuh" in both.diff
    assert both.files["common/math.cuh"].splitlines()[1].endswith("return v + v; }")


def test_a_changed_template_head_is_a_signature_change():
    files = {"k.cu": SOURCE}
    editable = {"k.cu": [(4, 7)]}
    body = Edit(file="k.cu", start_line=6, end_line=6, new_text="  out[0] = in[threadIdx.x] + T(0);", cites=["S1"])
    assert apply_proposal(proposal([body]), files, editable).ok
    for head in ("template <typename T, int BLOCK = 128>", "template <typename T, int BLOCK, int UNROLL = 4>",
                 "template <typename T, unsigned BLOCK = (1 << 8)>"):
        changed = Edit(file="k.cu", start_line=4, end_line=4, new_text=head, cites=["S1"])
        result = apply_proposal(proposal([changed]), files, editable)
        assert [v.rule for v in result.violations] == ["signature-changed"], head
        assert "template parameters changed" in result.violations[0].message
    renamed = Edit(file="k.cu", start_line=4, end_line=4, new_text="template <class U, int B = (1 << 8)>", cites=["S1"])
    assert apply_proposal(proposal([renamed]), files, editable).ok  # names may change, kinds may not


@pytest.mark.parametrize("name", ["main.cu", "kernels/t.cuh", "../common/bench.h", "../../a/b.cuh"])
def test_candidate_files_are_kept_inside_the_candidate_folder(name: str):
    stored = stored_name(name)
    assert ".." not in stored.split("/") and source_name(stored) == name


def test_overloaded_kernels_keep_their_interfaces():
    files = {"k.cu": SOURCE}
    editable = {"k.cu": [(14, 15)]}
    body = Edit(file="k.cu", start_line=15, end_line=15,
                new_text="__global__ void scale(float* x, float a, int n) { x[0] *= a * float(n); }", cites=["S1"])
    assert apply_proposal(proposal([body]), files, editable).ok
    params = Edit(file="k.cu", start_line=15, end_line=15,
                  new_text="__global__ void scale(float* x, double a, int n) { x[0] *= a * n; }", cites=["S1"])
    assert [v.rule for v in apply_proposal(proposal([params]), files, editable).violations] == ["signature-changed"]
    gone = Edit(file="k.cu", start_line=15, end_line=15, new_text="", cites=["S1"])
    assert [v.rule for v in apply_proposal(proposal([gone]), files, editable).violations] == ["kernel-removed"]


def test_compiler_feedback_is_of_the_template_instance_that_ran():
    from runner.proposal.prompt import compiler_evidence
    from runner.toolchain.compiler import KernelResources

    # as c++filt spells ptxas's entries, for two instances of one template; the hot kernels as ncu
    # spells them (tests/fixtures/templated-h200: `256` and `1` where c++filt writes `256u`, `true`)
    resources = [KernelResources(kernel=f"void reduce<float, {b}u>(float const*, float*, int)", registers=r,
                                 shared_bytes=4 * b, stack_bytes=0, spill_store_bytes=0, spill_load_bytes=0)
                 for b, r in ((128, 18), (256, 32))]
    (k,) = compiler_evidence(resources, ["void reduce<float, 256>(const T1 *, T1 *, int)"])
    assert k.kernel == "reduce" and k.resources.registers == 32 and "1024 B static shared memory" in k.text
    (other,) = compiler_evidence(resources, ["void reduce<double, 64>(const T1 *, T1 *, int)"])
    assert other.resources.registers == 18  # no such instance built: the first of that name
    assert compiler_evidence(resources, ["scale(float *, int)"]) == []
    # a bool argument is `true` to c++filt and `1` to ncu: only the symbol tells the instances apart
    flags = [KernelResources(kernel=f"void reduce7<int, 256u, {flag}>(int const*, int*, unsigned int)",
                             mangled=f"_Z7reduce7IiLj256ELb{int(flag == 'true')}EEvPKT_PS0_j", registers=r)
             for flag, r in (("false", 30), ("true", 26))]
    hot = "void reduce7<int, 256, 1>(const T1 *, T1 *, unsigned int)"
    assert compiler_evidence(flags, [hot])[0].resources.registers == 30  # by arguments: not found, the first
    (exact,) = compiler_evidence(flags, [hot], {hot: "_Z7reduce7IiLj256ELb1EEvPKT_PS0_j"})
    assert exact.resources.registers == 26


DEFS_MAIN = """#include "sizes.h"
#define EARLY 3
__device__ float helper(float v) { return v * SCALE; }
#define TILE 16
#define UNUSED_MACRO 99
#define CLAMP(v) \\
    ((v) < 0 ? 0 : (v))
__constant__ float c_weights[RADIUS * 2 + 1];
static int host_only_counter = 0;
__global__ void k(float *out, const float *in)
{
    constexpr int local = 2;
    __shared__ float tile[TILE];
    tile[threadIdx.x] = CLAMP(in[threadIdx.x]) * c_weights[0] * EARLY;
    out[threadIdx.x] = helper(tile[threadIdx.x]) + local;
}
"""
DEFS_HEADER = """#pragma once
#define RADIUS 4
#define SCALE (RADIUS * 0.5f)
#define OTHER 1
"""


def test_the_prompt_shows_the_macros_and_constants_the_code_uses_from_any_file():
    files = {"main.cu": DEFS_MAIN, "sizes.h": DEFS_HEADER}
    user = build_prompt("prog", diagnostics("k(float *, const float *)"), files).user
    blocks = [b.split("\n```", 1)[0] for b in user.split("### ")[1:]]
    assert "Definitions the code shown uses (read-only) (main.cu, lines 4-4)" in blocks
    # the continued macro and the __constant__ array after it, one block: no other line between
    assert "Definitions the code shown uses (read-only) (main.cu, lines 6-8)" in blocks
    # SCALE is used by the helper; RADIUS by SCALE's and c_weights' definitions
    assert "Definitions the code shown uses (read-only) (sizes.h, lines 2-3)" in blocks
    assert "#define UNUSED_MACRO" not in user and "#define OTHER" not in user
    assert "host_only_counter" not in user  # not used by the code shown
    assert user.count("#define EARLY 3") == 1  # inside the declarations block already
    assert user.count("constexpr int local") == 1  # a function's own constant is not file scope


TYPES_HEADER = """#pragma once
#include <cuda_runtime.h>
struct Params {
    float scale;
    int n;
};
typedef float4 vec4_t;
template <typename T>
using ptr_t = T *;
enum class Mode : int { Fast, Exact };
struct Unused { int x; };
typedef int unused_t;
typedef struct {
    float re, im;
} complex_t;
"""
TYPES_MAIN = """#include "types.h"
__global__ void k(Params p, const vec4_t *in, ptr_t<float> out, Mode m)
{
    struct Local { int y; };
    complex_t z = {in[threadIdx.x].x, 0.0f};
    if (m == Mode::Fast) out[threadIdx.x] = z.re * p.scale;
}
"""


def test_the_prompt_shows_the_types_the_code_uses_from_a_header():
    user = build_prompt("prog", diagnostics("k(Params, const float4 *, float *, Mode)"),
                        {"main.cu": TYPES_MAIN, "types.h": TYPES_HEADER}).user
    blocks = [b.split("\n```", 1)[0] for b in user.split("### ")[1:]]
    # the struct to its closing brace, the typedef, the alias with its template head, the enum: one block
    assert "Definitions the code shown uses (read-only) (types.h, lines 3-10)" in blocks
    assert "Definitions the code shown uses (read-only) (types.h, lines 13-15)" in blocks  # C-style typedef
    assert "struct Unused" not in user and "unused_t" not in user
    assert user.count("struct Local") == 1  # a function's own type is not file scope


def test_a_long_preamble_is_reduced_to_what_the_code_uses():
    preamble = "".join(f"static double host_table_{i}[4] = {{1, 2, 3, {i}}};\n" for i in range(120))
    main = ("#include <cstdio>\n#define BLOCK 128\ntypedef float real;\n" + preamble +
            "__global__ void k(real *out) { out[threadIdx.x] = BLOCK; }\n")
    user = build_prompt("prog", diagnostics("k(float *)"), {"main.cu": main}).user
    assert "### Declarations" not in user and "host_table_" not in user
    assert "### Definitions the code shown uses (read-only) (main.cu, lines 2-3)" in user


LICENSED = """\
/* Copyright (c) someone.
 * Redistribution and use in source and binary forms ... are permitted.
 */
// SPDX-License-Identifier: BSD-3-Clause

// Scales a row: ties between equal scores keep their order.
#include <cstdio>  // printf
#define BLOCK 256
__global__ void k(float *out, const float *in) { out[threadIdx.x] = in[threadIdx.x] * BLOCK; }
"""


def test_the_declarations_leave_out_the_license_the_file_opens_with():
    assert after_license_header(LICENSED) == 6  # past the license and the blank line; a comment that
    assert after_license_header("// Scales a row.\n#include <x>\n") == 1  # says what the code does stays
    assert after_license_header("#include <x>\n// Copyright (c) later\n") == 1
    assert after_license_header("/* Copyright */ /* more */\n\nint x;\n") == 3
    user = build_prompt("prog", diagnostics("k(float *, const float *)"), {"main.cu": LICENSED}).user
    assert "### Declarations (main.cu, lines 6-8)" in user
    assert "Copyright" not in user and "SPDX" not in user
    assert "\n6| // Scales a row: ties between equal scores keep their order.\n" in user


def test_hot_kernels_defined_outside_the_sources_are_named_with_their_share_not_prompted(tmp_path: Path):
    from runner.analysis.evidence import Evidence
    from runner.analysis.stalls import StallLine
    from runner.base.errors import OptimasError

    files = {"main.cu": DEFS_MAIN, "sizes.h": DEFS_HEADER}
    mine = "k(float *, const float *)"
    lib = "void cub::DeviceRadixSortOnesweepKernel<Policy, false, unsigned int>(unsigned int *, int)"
    diag = diagnostics(lib, mine)
    diag.kernels[0].share, diag.kernels[1].share = 0.62, 0.3
    diag.evidence = [Evidence(id=f"S{i}", kind="stall", kernel=k, text=f"stall of {k}", stall=StallLine(
        kernel=k, file=f, line=3, source="x", reason="stall_long_sb", reason_share=0.9, line_share=0.8, samples=10))
        for i, (k, f) in enumerate(((lib, "onesweep.cuh"), (mine, "main.cu")), start=1)]
    prompt = build_prompt("prog", diag, files)
    assert prompt.hot_kernels == [mine] and prompt.evidence_ids == ["S2"]
    assert "Optimize the hot kernel k (30.0% of kernel time: 1 launch, 1,000 us).\n" in prompt.user
    diag.kernels[1].launches, diag.kernels[1].total_ns = 808, 2.1e6
    assert "Optimize the hot kernel k (30.0% of kernel time: 808 launches, 2.6 us each on average).\n" in \
        build_prompt("prog", diag, files).user
    assert "stall of " + mine in prompt.user and "onesweep" not in prompt.user
    assert ("Also hot, but defined outside the sources shown (library or generated code, not to be edited):\n"
            "cub::DeviceRadixSortOnesweepKernel<Policy, false, unsigned int> (62.0% of kernel time).") in prompt.user
    with pytest.raises(OptimasError, match="none of the hot kernels"):
        build_prompt("prog", diagnostics(lib), files)


def test_a_source_that_is_not_utf8_is_read_and_written_back_byte_for_byte(tmp_path: Path):
    """Six of HeCBench's programs carry a Latin-1 copyright sign (0xa9) in their license comment."""
    original = (b"/* Copyright \xa92013 Advanced Micro Devices, Inc. */\n"
                b'#include "common.h"\n__global__ void k(float* a) { a[0] = 1.0f; }\n')
    (tmp_path / "main.cu").write_bytes(original)
    (tmp_path / "common.h").write_bytes(b"// \xb5s timer\n#define N 4\n")
    files = read_sources(tmp_path, ["main.cu"])
    assert files["main.cu"].startswith("/* Copyright \u00a92013")
    assert read_included(tmp_path, tmp_path, files) == {"common.h": "// \u00b5s timer\n#define N 4\n"}
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "main.cu").write_bytes(original)
    write_source(copy / "main.cu", files["main.cu"].replace("1.0f", "2.0f"))
    assert (copy / "main.cu").read_bytes() == original.replace(b"1.0f", b"2.0f")  # still Latin-1
    write_source(copy / "main.cu", read_source(copy / "main.cu") + "// \u2264 4 ulps\n")  # no Latin-1 for it
    text = (copy / "main.cu").read_bytes().decode("utf-8")  # UTF-8 then, the whole file
    assert text.startswith("/* Copyright \u00a92013") and text.endswith("// \u2264 4 ulps\n")
    write_source(tmp_path / "new.cu", "// \u00b5s\n")  # a new file is UTF-8
    assert (tmp_path / "new.cu").read_bytes() == "// \u00b5s\n".encode()



def test_the_scanner_reads_a_heads_end_only_so_crafted_source_takes_no_long():
    """The patterns anchored at a function head's end ran over the whole head: 40 KB of letters
    before `+(){}` took a minute in the worker, outside the sandbox, in every stage that reads the
    sources (an attacker's pass). They read the head's last kilobyte; the functions found are the
    same."""
    for payload in ("a" * 200_000 + "+(){}", "namespace " * 20_000 + "({}", "struct a " * 20_000 + "({}",
                    " " * 200_000 + "void f() {}"):
        functions(payload)  # (minutes to hours each before)
    text = "namespace ns {\nstruct S { __device__ float operator()(float x) const { return x; } };\n" \
           "template <int B = (1 << 8)> __global__ void k(float *a) { a[0] = 1; }\n}\n"
    assert [(f.name, f.is_kernel) for f in functions(text)] == [("S::operator()", False), ("k", True)]
