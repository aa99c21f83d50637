"""Parsing answers of every accepted shape into one Proposal, rejecting broken ones, and the guard's
rules, each on its own violation; a correct edit passes and compiles with nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FIXTURES

from runner.proposal.guard import apply_proposal
from runner.proposal.parser import Edit, Proposal, ResponseParseError, parse_response

R = FIXTURES / "responses"
SRC = (R / "stream_main.cu").read_text()
FILES = {"main.cu": SRC}
# the stream kernels: copy 7-10, add 12-15, triad 17-20
EDITABLE = {"main.cu": [(7, 10), (12, 15), (17, 20)]}


def answer(name: str) -> str:
    return (R / name).read_text()


def test_structured_answer():
    p = parse_response(answer("structured.md"), FILES)
    assert p.shape == "structured"
    (e,) = p.edits
    assert (e.file, e.start_line, e.end_line, e.cites) == ("main.cu", 17, 19, ["S1", "R1"])
    assert e.rationale.startswith("The triad line stalls")
    assert e.new_text.startswith("__global__ void triad_kernel(float* __restrict__ a")
    assert p.applied == ["lines 17-19: __restrict__ and read-only loads on triad_kernel (S1, R1)"]
    assert p.withheld[0].suggestion == "vectorized float4 loads" and "multiple of 4" in p.withheld[0].reason
    assert p.raw == answer("structured.md")


def test_fenced_unified_diff():
    p = parse_response(answer("diff_fenced.md"), FILES)
    assert p.shape == "diff"
    (e,) = p.edits
    assert (e.start_line, e.end_line) == (12, 15)
    assert e.new_text.splitlines()[0].startswith("__global__ void add_kernel(const float* __restrict__ a")
    assert e.cites == ["R2", "S2"]  # from the APPLIED item whose lines overlap
    assert p.withheld[0].suggestion == "grid-stride loop"


def test_bare_unified_diff():
    p = parse_response(answer("diff_bare.txt"), FILES)
    (e,) = p.edits
    assert p.shape == "diff" and (e.start_line, e.end_line) == (8, 10)
    assert e.new_text.splitlines()[1:3] == ["  if (i >= n) return;", "  c[i] = __ldg(&a[i]);"]


def test_whole_kernel_in_a_code_block():
    p = parse_response(answer("whole_kernel.md"), FILES)
    (e,) = p.edits
    assert p.shape == "code" and (e.start_line, e.end_line) == (7, 10)
    assert e.cites == ["S3"]
    assert p.applied == ["lines 7-10: read-only cached load and __restrict__ (S3)"]
    assert p.withheld[0].suggestion.startswith("Use cudaMemcpy")


def test_whole_file_in_a_code_block():
    p = parse_response(answer("whole_file.md"), FILES)
    (e,) = p.edits
    assert p.shape == "code" and (e.start_line, e.end_line) == (19, 19)
    assert "__ldg(&c[i])" in e.new_text and e.cites == ["S1"]


@pytest.mark.parametrize("name, says", [
    ("truncated.md", "is never closed (the answer looks truncated)"),
    ("prose_only.md", "no edits found"),
    ("other_file.md", "targets file 'kernels/stream_ops.cu', which is not among the sources"),
    ("two_versions.md", "two versions of kernel triad_kernel"),
    ("diff_mismatch.md", "the diff does not apply to main.cu"),
])
def test_broken_answers_say_why(name, says):
    with pytest.raises(ResponseParseError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_response(answer(name), FILES)


def test_empty_answer():
    with pytest.raises(ResponseParseError, match="empty"):
        parse_response("  \n", FILES)


# ---------------------------------------------------------------- guard

def proposal(*edits: Edit) -> Proposal:
    return Proposal(shape="structured", edits=list(edits), raw="")


def edit(a: int, b: int, text: str) -> Edit:
    return Edit(file="main.cu", start_line=a, end_line=b, new_text=text, cites=["S1"])


def lines(a: int, b: int) -> str:
    return "\n".join(SRC.splitlines()[a - 1:b])


def rules(result) -> list[str]:
    return [v.rule for v in result.violations]


def test_correct_edit_passes_and_yields_a_unified_diff():
    g = apply_proposal(parse_response(answer("structured.md"), FILES), FILES, EDITABLE)
    assert g.ok, g.reasons()
    assert g.diff.startswith("--- a/main.cu\n+++ b/main.cu\n@@ ")
    assert "+  if (i < n) a[i] = __ldg(&b[i]) + scalar * __ldg(&c[i]);" in g.diff
    assert g.files["main.cu"].count("\n") == SRC.count("\n")


def test_a_file_with_windows_line_ends_keeps_them_and_its_diff_shows_the_edit_only():
    """175 of the sources in HeCBench, Rodinia and cuda-samples end their lines with CR LF."""
    crlf = {"main.cu": SRC.replace("\n", "\r\n")}
    g = apply_proposal(parse_response(answer("structured.md"), FILES), crlf, EDITABLE)
    assert g.ok, g.reasons()
    assert g.files["main.cu"].count("\r\n") == g.files["main.cu"].count("\n") == SRC.count("\n")
    assert g.diff == apply_proposal(parse_response(answer("structured.md"), FILES), FILES, EDITABLE).diff


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_correct_edit_compiles(tmp_path: Path):
    g = apply_proposal(parse_response(answer("structured.md"), FILES), FILES, EDITABLE)
    common = tmp_path / "common"
    common.mkdir()
    shutil.copy(FIXTURES.parent.parent / "benchmarks" / "common" / "bench.h", common / "bench.h")
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.cu").write_text(g.files["main.cu"])
    r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-c", "-o", "main.o", "main.cu"], cwd=app,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def test_signature_change_is_rejected():
    new = lines(17, 20).replace("float scalar, size_t n", "double scalar, size_t n")
    g = apply_proposal(proposal(edit(17, 20, new)), FILES, EDITABLE)
    assert rules(g) == ["signature-changed"]
    assert "triad_kernel's parameters changed" in g.reasons() and "main.cu:17-17" in g.reasons()


def test_qualifiers_do_not_count_as_a_signature_change():
    new = lines(17, 17).replace("float* a, const float* b", "float* __restrict__ a, const float* __restrict__ b")
    g = apply_proposal(proposal(edit(17, 17, new)), FILES, EDITABLE)
    assert g.ok, g.reasons()
    bounded = new.replace("__global__ void triad_kernel", "__global__ void __launch_bounds__(256) triad_kernel")
    g = apply_proposal(proposal(edit(17, 17, bounded)), FILES, EDITABLE)
    assert g.ok, g.reasons()


def test_new_kernel_is_rejected():
    new = lines(17, 20) + "\n__global__ void triad_fast(float* a) { a[0] = 1.0f; }"
    g = apply_proposal(proposal(edit(17, 20, new)), FILES, EDITABLE)
    assert rules(g) == ["new-kernel"] and "triad_fast" in g.reasons()


def test_duplicated_kernel_is_rejected():
    g = apply_proposal(proposal(edit(17, 20, lines(17, 20) + "\n" + lines(17, 20).replace("c[i]", "c[i] * 1.0f"))),
                       FILES, EDITABLE)
    assert rules(g) == ["duplicate-kernel"] and "appears 2 times" in g.reasons()


def test_edit_outside_the_hot_kernels_is_rejected():
    g = apply_proposal(proposal(edit(5, 5, "constexpr int kBlock = 512;")), FILES, EDITABLE)
    assert rules(g) == ["outside-allowed-region"] and "editable lines of main.cu are 7-10, 12-15, 17-20" in g.reasons()


def test_host_code_change_is_rejected():
    main_line = next(i for i, ln in enumerate(SRC.splitlines(), 1) if "const float scalar = 0.4f;" in ln)
    g = apply_proposal(proposal(edit(main_line, main_line, "  const float scalar = 0.5f;")), FILES, EDITABLE)
    assert rules(g) == ["host-code"] and "host function main" in g.reasons()


def test_formatting_only_change_is_rejected():
    new = lines(18, 19).replace("  size_t i", "    size_t i") + "  // faster"
    g = apply_proposal(proposal(edit(18, 19, new)), FILES, EDITABLE)
    assert rules(g) == ["no-op"]


def test_overlapping_edits_are_rejected():
    a = edit(17, 19, lines(17, 19).replace("c[i];", "__ldg(&c[i]);"))
    b = edit(19, 20, lines(19, 20).replace("b[i]", "__ldg(&b[i])"))
    g = apply_proposal(proposal(a, b), FILES, EDITABLE)
    assert "overlapping-edits" in rules(g)


# Launch configuration as an edit: grid, block and shared memory, and the declarations they use.

LAUNCHING = """\
#define N 1048576
__global__ void scale(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= 2.0f;
}
int main() {
  float* d;
  cudaMalloc(&d, N * sizeof(float));
  int threads = 32;
  dim3 grid((N + threads - 1) / threads);
  cudaStream_t s;
  cudaStreamCreate(&s);
  scale<<<grid, threads, 0, s>>>(d, N);
  cudaDeviceSynchronize();
  return 0;
}
"""


def _launch_prompt():
    from runner.analysis.evidence import Diagnostics, GpuInfo
    from runner.analysis.hot import KernelTime
    from runner.proposal.prompt import build_prompt

    diag = Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[KernelTime(kernel="scale(float *, int)", total_ns=1,
                                                                     launches=1, share=1, cumulative_share=1,
                                                                     hot=True)], evidence=[])
    return build_prompt("launch", diag, {"main.cu": LAUNCHING}, "none")


def _edit(line: int, old: str, new: str) -> Edit:
    text = LAUNCHING.splitlines()[line - 1]
    assert old in text, text
    return Edit(file="main.cu", start_line=line, end_line=line, new_text=text.replace(old, new))


def test_the_prompt_shows_the_launch_and_the_guard_allows_only_its_configuration():
    prompt = _launch_prompt()
    assert "### Launch of scale (host code: only its execution configuration" in prompt.user
    assert "(main.cu, lines 9-13)" in prompt.user
    assert prompt.editable["main.cu"] == [(2, 5), (9, 9), (10, 10), (13, 13)]  # the kernel; the launch's lines
    files = {"main.cu": LAUNCHING}
    allowed = [_edit(9, "32", "256"), _edit(10, "(N + threads - 1) / threads", "N / threads / 4"),
               _edit(13, "<<<grid, threads, 0, s>>>", "<<<grid, threads, threads * sizeof(float), s>>>")]
    result = apply_proposal(Proposal(shape="structured", raw="", edits=allowed), files, prompt.editable)
    assert result.ok, result.reasons()
    assert "-  int threads = 32;" in result.diff and "+  int threads = 256;" in result.diff
    refused = {"stream": _edit(13, "0, s>>>", "0, 0>>>"), "argument": _edit(13, "(d, N)", "(d, N / 2)"),
               "other kernel": _edit(13, "scale<<<", "scale2<<<"),
               "declaration's type": _edit(9, "int threads", "long threads"),
               "a statement added": _edit(10, ";", "; cudaMemset(d, 0, 4);")}
    for what, edit in refused.items():
        r = apply_proposal(Proposal(shape="structured", raw="", edits=[edit]), files, prompt.editable)
        assert not r.ok and {v.rule for v in r.violations} <= {"launch-config", "new-kernel"}, (what, r.reasons())
    # host lines that compute nothing of the launch stay out of reach
    r = apply_proposal(Proposal(shape="structured", raw="", edits=[_edit(8, "N * sizeof(float)", "N * 8")]),
                       files, prompt.editable)
    assert [v.rule for v in r.violations] == ["host-code"]


POINTER = """\
__global__ void twice(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }
__global__ void thrice(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 3; }
void run(float* d, int n, int which) {
  void (*kernel)(float*, int);
  dim3 block(128), grid(n / 128);
  if (which == 0) kernel = &twice;
  else kernel = thrice;
  if (kernel == &twice) n += 0;
  kernel<<<grid, block>>>(d, n);
}
"""


def test_a_launch_through_a_function_pointer_is_shown_with_what_it_points_to():
    from runner.analysis.evidence import Diagnostics, GpuInfo
    from runner.analysis.hot import KernelTime
    from runner.proposal.prompt import build_prompt

    diag = Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[KernelTime(kernel="thrice(float *, int)", total_ns=1,
                                                                     launches=1, share=1, cumulative_share=1,
                                                                     hot=True)], evidence=[])
    prompt = build_prompt("pointer", diag, {"main.cu": POINTER}, "none")
    assert ("### Launch of kernel (a function pointer set to twice, thrice: its configuration is theirs) (host "
            "code: only its execution configuration") in prompt.user
    # the hot kernel, the declaration of the launch's grid and block, the launch
    assert prompt.editable["main.cu"] == [(2, 2), (5, 5), (9, 9)]
    lines = POINTER.splitlines()
    bigger = Edit(file="main.cu", start_line=5, end_line=5, new_text=lines[4].replace("128", "256"))
    assert apply_proposal(Proposal(shape="structured", raw="", edits=[bigger]), {"main.cu": POINTER},
                          prompt.editable).ok
    other = Edit(file="main.cu", start_line=7, end_line=7, new_text=lines[6].replace("thrice", "twice"))
    r = apply_proposal(Proposal(shape="structured", raw="", edits=[other]), {"main.cu": POINTER}, prompt.editable)
    assert not r.ok  # which kernel the pointer runs is host code, not the launch's configuration


IN_A_MACRO = """\
__global__ void scale(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }
__global__ void shift(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1; }
#define LAUNCH(k, a, n) \\
  do { \\
    k<<<(n + 255) / 256, 256>>>(a, n); \\
  } while (0)
int main() {
  float* d;
  int n = 1 << 20;
  cudaMalloc(&d, n * sizeof(float));
  LAUNCH(scale, d, n);
  LAUNCH(shift, d, n);
  return 0;
}
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_launch_written_in_a_macro_is_a_launch_site(tmp_path):
    """Some programs launch through a macro (1.5% of HeCBench's CUDA programs): its definition is
    shown for the hot kernel its uses pass, and the launch's configuration in it may change, the
    rest of the macro as before."""
    from runner.analysis.evidence import Diagnostics, GpuInfo
    from runner.analysis.hot import KernelTime
    from runner.proposal.prompt import build_prompt

    diag = Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[KernelTime(kernel="scale(float *, int)", total_ns=1,
                                                                     launches=1, share=1, cumulative_share=1,
                                                                     hot=True)], evidence=[])
    prompt = build_prompt("macro", diag, {"main.cu": IN_A_MACRO}, "none")
    assert "### Launch of k in the macro LAUNCH, which its uses pass scale (host code:" in prompt.user
    assert "(main.cu, lines 3-6)" in prompt.user
    assert prompt.editable["main.cu"] == [(1, 1), (5, 5)]  # the kernel; the launch's line in the macro
    line = IN_A_MACRO.splitlines()[4]

    def edit(new: str) -> Edit:
        return Edit(file="main.cu", start_line=5, end_line=5, new_text=new)

    smaller = apply_proposal(Proposal(shape="structured", raw="", edits=[edit(line.replace(
        "(n + 255) / 256, 256", "(n + 127) / 128, 128"))]), {"main.cu": IN_A_MACRO}, prompt.editable)
    assert smaller.ok, smaller.reasons()
    (tmp_path / "main.cu").write_text(smaller.files["main.cu"])
    built = subprocess.run(["nvcc", "-arch=sm_90", "-o", str(tmp_path / "app"), str(tmp_path / "main.cu")],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    for refused in (line.replace("(a, n)", "(a, n / 2)"), line.replace("k<<<", "shift<<<")):
        r = apply_proposal(Proposal(shape="structured", raw="", edits=[edit(refused)]), {"main.cu": IN_A_MACRO},
                           prompt.editable)
        assert not r.ok and {v.rule for v in r.violations} == {"launch-config"}, r.reasons()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_launch_configuration_edit_compiles(tmp_path):
    prompt = _launch_prompt()
    edits = [_edit(9, "32", "256"), _edit(13, "<<<grid, threads, 0, s>>>", "<<<grid, threads, 1024, s>>>")]
    result = apply_proposal(Proposal(shape="structured", raw="", edits=edits), {"main.cu": LAUNCHING},
                            prompt.editable)
    (tmp_path / "main.cu").write_text(result.files["main.cu"])
    r = subprocess.run(["nvcc", "-arch=sm_90", "-o", str(tmp_path / "app"), str(tmp_path / "main.cu")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_file_that_launches_a_hot_kernel_is_read_with_the_sources(tmp_path):
    from runner.base.config import load_config
    from runner.base.workspace import read_context

    (tmp_path / "scale.cuh").write_text("__global__ void scale(float* a, int n) { a[threadIdx.x] *= 2.0f; }\n")
    main = LAUNCHING.replace("__global__ void scale", "__global__ void unused")
    (tmp_path / "main.cu").write_text('#include "scale.cuh"\n' + main)
    (tmp_path / "other.cu").write_text("int other() { return 0; }\n")
    (tmp_path / "optimas.yml").write_text("app:\n  sources: [scale.cuh]\n  build: nvcc -o {exe} main.cu\n")
    loaded = load_config(tmp_path / "optimas.yml")
    files = read_context(*loaded.dirs, loaded.config.app.sources)
    assert sorted(files) == ["main.cu", "scale.cuh"]  # other.cu launches nothing


def test_launch_sites_are_found_in_one_pass_on_crafted_source():
    """Uses of a launching macro whose `(` never closes, thousands of launching macros, and names
    followed by `<` took n^2 steps over the pull request's text (16 KiB: 12 s; an attacker's pass):
    each is read a bounded span, and the sites found are the same."""
    from runner.scan.launch_sites import MAX_LAUNCH_MACROS, launch_sites

    for text in ("#define M(f) f<<<1,1>>>();\n" + "M(" * 100_000,
                 "".join(f"#define M{i}(f) f<<<1,1>>>();\n" for i in range(20_000)),
                 "a<" * 100_000):
        found = launch_sites(text)  # (minutes to hours before)
        assert len(found) <= MAX_LAUNCH_MACROS
    assert [(s.kernel, s.targets) for s in launch_sites(IN_A_MACRO, {"scale"})] == [("k", ["scale"])]


# Host code smuggled into an allowed edit (issue #43): the edit text is the adversary's (a model, or a
# pull request whose configuration points the model at answers it ships). Each attempt is refused by
# the rule named; the legitimate edits beside them pass.

KERNEL = "\n".join(LAUNCHING.splitlines()[1:5])  # scale, lines 2-5
LAUNCH_EDITABLE = {"main.cu": [(2, 5), (9, 9), (10, 10), (13, 13)]}
HOST_DEVICE = """\
__host__ __device__ inline float twice(float x) { return 2.0f * x; }
__device__ inline float thrice(float x) { return 3.0f * x; }
__global__ void scale(float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = twice(thrice(a[i]));
}
"""
SOURCES = {"launch": (LAUNCHING, LAUNCH_EDITABLE),
           "const": (LAUNCHING.replace("int threads = 32;", "const int threads = 32;"), LAUNCH_EDITABLE),
           "macro": (IN_A_MACRO, {"main.cu": [(1, 1), (5, 5)]}),
           "scaled": (LAUNCHING.replace("int threads = 32;", "int threads = static_cast<int>(bench::scaled(N, 32));"),
                      LAUNCH_EDITABLE),
           "min": ('int min(int a, int b) { return system("id") + (a < b ? a : b); }\n' + LAUNCHING,
                   {"main.cu": [(3, 6), (10, 10), (11, 11), (14, 14)]}),
           "namespace-threads": (LAUNCHING.replace("__global__ void scale", "int threads = 32; __global__ void scale")
                                 .replace("  int threads = 32;\n", ""), {"main.cu": [(2, 5), (9, 9), (12, 12)]}),
           "host-device": (HOST_DEVICE, {"main.cu": [(1, 1), (2, 2), (3, 6)]})}


def _launch_line(config: str) -> str:
    return f"  scale<<<{config}>>>(d, N);"


SMUGGLED = [
    # the seven answers of issue #43
    ("lambda as block size", "launch", 13, 13, _launch_line('N/4,[]{ system("touch /tmp/p"); return 256; }(), 0, s'),
     {"launch-config"}),
    ("lambda with captures as block size", "launch", 13, 13,
     _launch_line('grid, [&]() -> int { system("id"); return 256; }(), 0, s'), {"launch-config"}),
    ("dim3 through the comma operator", "launch", 10, 10, '  dim3 grid((system("id"), (N + threads - 1) / threads));',
     {"launch-config"}),
    ("dim3's second argument through the comma operator", "launch", 10, 10,
     '  dim3 grid((N + threads - 1) / threads, (system("id"), 1));', {"launch-config"}),
    ("namespace-scope static initializer before a kernel", "launch", 2, 5,
     'static int x = system("id");\n' + KERNEL, {"host-code"}),
    ("namespace-scope static initializer after the kernel's brace", "launch", 5, 5,
     '}  static int x = system("id");', {"host-code"}),
    ("#define that wraps cudaMemcpy", "launch", 2, 5,
     '#define cudaMemcpy(...) (system("id"), cudaMemcpy(__VA_ARGS__))\n' + KERNEL, {"preprocessor"}),
    # variants and other smuggling
    ("#define inside a kernel's body", "launch", 3, 3,
     '#define cudaStreamCreate(p) (system("id"), cudaStreamCreate(p))\n' + LAUNCHING.splitlines()[2], {"preprocessor"}),
    ("GNU statement expression", "launch", 13, 13, _launch_line('({ system("id"); grid; }), threads, 0, s'),
     {"launch-config"}),
    ("comma operator in shared memory", "launch", 13, 13, _launch_line('grid, threads, (system("id"), 0), s'),
     {"launch-config"}),
    ("assignment in the configuration", "launch", 13, 13, _launch_line('grid, threads = system("id"), 0, s'),
     {"launch-config"}),
    ("increment in the configuration", "launch", 13, 13, _launch_line("grid, threads++, 0, s"), {"launch-config"}),
    ("compound assignment in the configuration", "launch", 13, 13, _launch_line("grid, threads <<= 1, 0, s"),
     {"launch-config"}),
    ("call of a function off the allow-list", "launch", 9, 9, '  int threads = getenv("X") ? 64 : 32;',
     {"launch-config"}),
    ("call through std::", "launch", 13, 13, _launch_line('grid, std::system("id") * 0 + 256, 0, s'),
     {"launch-config"}),
    ("call through a function pointer", "launch", 13, 13, _launch_line('grid, (&system)("id"), 0, s'),
     {"launch-config"}),
    ("call through a cast", "launch", 13, 13,
     _launch_line('grid, reinterpret_cast<int (*)(const char*)>(&system)("id"), 0, s'), {"launch-config"}),
    ("call through a parenthesized name", "launch", 9, 9, "  int threads = (int)(cudaDeviceReset)();",
     {"launch-config"}),
    ("member function call", "launch", 13, 13, _launch_line("grid, threads, 0, s>>>(d, N); s.sync(); scale<<<grid, 1"),
     {"launch-config"}),
    ("new", "launch", 13, 13, _launch_line("grid, *new int(256), 0, s"), {"launch-config"}),
    ("throw", "launch", 13, 13, _launch_line("grid, threads > 0 ? threads : throw 1, 0, s"), {"launch-config"}),
    ("typeid", "launch", 13, 13, _launch_line("grid, typeid(threads).hash_code() % 256, 0, s"), {"launch-config"}),
    ("sizeof of a lambda", "launch", 13, 13, _launch_line('grid, sizeof([]{ system("id"); }) * 256, 0, s'),
     {"launch-config"}),
    ("asm in a statement expression", "launch", 13, 13, _launch_line('grid, ({ asm("syscall"); 256; }), 0, s'),
     {"launch-config"}),
    ("string literal", "launch", 13, 13, _launch_line('grid, sizeof("aaaa") * 64, 0, s'), {"launch-config"}),
    ("user-defined literal", "launch", 13, 13, _launch_line("grid, 256_threads, 0, s"), {"launch-config"}),
    ("lambda in digraphs", "launch", 13, 13, _launch_line("grid, [&]<%return 256;%>(), 0, s"),
     {"launch-config", "opaque-syntax"}),
    ("universal character name", "launch", 13, 13, _launch_line("grid, \\u0074hreads, 0, s"),
     {"launch-config", "opaque-syntax"}),
    ("a name the host code does not use", "launch", 13, 13, _launch_line("grid, RAND_MAX % 256, 0, s"),
     {"launch-config"}),
    ("new declarator on the block's line", "launch", 9, 9, '  int threads = 32, pwn = system("id");',
     {"launch-config"}),
    ("new declarator on the grid's line", "launch", 10, 10,
     '  dim3 grid((N + threads - 1) / threads), pwn(system("id"));', {"launch-config"}),
    ("call in a macro's launch", "macro", 5, 5, '    k<<<(system("id"), 1), 256>>>(a, n); \\', {"launch-config"}),
    ("// comment that swallows the macro's next line", "macro", 5, 5, "    k<<<(n + 127) / 128, 128>>>(a, n); // \\",
     {"preprocessor", "launch-config"}),
    ("macro's line no longer continued", "macro", 5, 5, "    k<<<(n + 127) / 128, 128>>>(a, n);",
     {"preprocessor", "launch-config"}),
    ("__attribute__((constructor)) function", "launch", 2, 5,
     KERNEL + '\n__attribute__((constructor)) static void boot() { system("id"); }', {"host-code"}),
    ("[[gnu::constructor]] on a device function", "launch", 2, 5,
     KERNEL + "\n[[gnu::constructor]] __device__ void boot() {}", {"host-code"}),
    ("__host__ __device__ function added", "launch", 2, 5,
     KERNEL + '\n__host__ __device__ int boot() { return system("id"); }', {"host-code"}),
    ("host function added", "launch", 2, 5, KERNEL + '\nint boot() { return system("id"); }', {"host-code"}),
    ("static object with a constructor", "launch", 2, 5,
     KERNEL + '\nstruct Boot { Boot() { system("id"); } } boot;', {"host-code"}),
    ("global stream object", "launch", 2, 5, KERNEL + '\nstd::ofstream trace("/tmp/x");', {"host-code"}),
    ("operator overload at namespace scope", "launch", 2, 5,
     KERNEL + '\ninline dim3 operator+(dim3 a, int) { system("id"); return a; }', {"host-code"}),
    ("kernel's brace closed early", "launch", 3, 3,
     LAUNCHING.splitlines()[2] + '\n}\nint pwn = system("id");\n__device__ void pad() {', {"host-code"}),
    ("kernel's default argument", "launch", 2, 2, '__global__ void scale(float* a, int n = system("id")) {',
     {"host-code"}),
    ("#include in a kernel's body", "launch", 3, 3, '#include "/dev/stdin"\n' + LAUNCHING.splitlines()[2],
     {"preprocessor"}),
    ("#undef in a kernel's body", "launch", 3, 3, "#undef N\n" + LAUNCHING.splitlines()[2], {"preprocessor"}),
    ("#pragma outside a kernel's body", "launch", 2, 5, "#pragma GCC poison cudaFree\n" + KERNEL, {"preprocessor"}),
    ("#pragma other than unroll in a body", "launch", 3, 3, '#pragma message("x")\n' + LAUNCHING.splitlines()[2],
     {"preprocessor"}),
    ("#pragma unroll outside a body", "launch", 2, 5, "#pragma unroll\n" + KERNEL, {"preprocessor"}),
    ("#if that swallows host code", "launch", 5, 5, "}\n#if 0", {"preprocessor"}),
    ("_Pragma operator", "launch", 3, 3, '  _Pragma("push_macro(\\"N\\")")\n' + LAUNCHING.splitlines()[2],
     {"preprocessor"}),
    ("digraph directive", "launch", 3, 3, "%:define cudaFree(p) system(p)\n" + LAUNCHING.splitlines()[2],
     {"preprocessor", "opaque-syntax"}),
    ("#define after a Unicode line separator in a comment", "launch", 3, 3,
     "  // faster\u2028#define cudaFree(p) system(p)\n" + LAUNCHING.splitlines()[2].replace(";", " + 0;"),
     {"preprocessor"}),
    ("configuration variable at namespace scope on a kernel's first line", "namespace-threads", 2, 2,
     'int threads = system("id"); __global__ void scale(float* a, int n) {', {"launch-config"}),
    ("line splice at a comment's end", "launch", 4, 4, "  if (i < n) a[i] *= 3.0f;  // faster \\",
     {"preprocessor"}),
    ("trigraph line splice", "launch", 4, 4, "  if (i < n) a[i] *= 3.0f;  // faster ??/", {"preprocessor"}),
    ("raw string that hides a brace from the scanner", "launch", 3, 3,
     LAUNCHING.splitlines()[2] + '\n  const char* r = R"x(" } static int y = system("id"); __device__ void z() { ")x";',
     {"opaque-syntax"}),
    ("digit separators that hide code from the scanner", "launch", 3, 3,
     '  int q = 1\'0; } static int y = system("id"); __device__ void pad() { int r = 1\'0;', {"opaque-syntax"}),
    ("digraph braces", "launch", 3, 3, '  %> static int y = system("id"); __device__ void pad() <%',
     {"opaque-syntax"}),
    ("universal character name in a kernel", "launch", 4, 4, "  if (i < n) a[i] *= 2.0f; \\u0073ystem(0);",
     {"opaque-syntax"}),
    ("host call in a __host__ __device__ function", "host-device", 1, 1,
     '__host__ __device__ inline float twice(float x) { return 2.0f * x + system("id") * 0; }', {"host-code"}),
    ("NV_IF_TARGET in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { NV_IF_TARGET(NV_IS_HOST, (abort();)) return 2.0f * x; }",
     {"host-code"}),
    ("asm in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { asm volatile(\"syscall\"); return 2.0f * x; }",
     {"host-code"}),
    ("std:: object in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { std::thread{&abort}.detach(); return 2.0f * x; }",
     {"host-code"}),
    ("static local in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { static int once = twice(0); return 2.0f * x; }",
     {"host-code"}),
    ("call through a function pointer in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { (*reinterpret_cast<void (*)()>(&abort))(); return 2 * x; }",
     {"host-code"}),
    ("min that the sources define on the host", "min", 10, 10, "  int threads = min(1024, N);", {"launch-config"}),
    ("lambda in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { return [=] { return 2.0f * x; }(); }", {"host-code"}),
    ("a device function made host-callable", "host-device", 2, 2,
     "__host__ __device__ inline float thrice(float x) { return x * 3.0f; }", {"host-code"}),
]


@pytest.mark.parametrize("what, source, first, last, text, expected", SMUGGLED, ids=[s[0] for s in SMUGGLED])
def test_host_code_smuggled_into_an_allowed_edit_is_refused(what, source, first, last, text, expected):
    src, editable = SOURCES[source]
    g = apply_proposal(proposal(Edit(file="main.cu", start_line=first, end_line=last, new_text=text)),
                       {"main.cu": src}, editable)
    assert not g.ok, what
    assert set(rules(g)) == expected, g.reasons()
    assert f"main.cu:{first}-" in g.reasons()


LEGITIMATE = [
    ("grid as arithmetic", "launch", 13, 13, _launch_line("(N + 255) / 256, 256, 0, s")),
    ("dim3 of two", "launch", 10, 10, "  dim3 grid(32, 8);"),
    ("a block of 512", "launch", 9, 9, "  int threads = 512;"),
    ("a const block of 512", "const", 9, 9, "  const int threads = 512;"),
    ("min", "launch", 9, 9, "  int threads = min(1024, N);"),
    ("std::min", "launch", 9, 9, "  int threads = std::min(1024, N);"),
    ("sizeof of a type", "launch", 13, 13, _launch_line("grid, threads, 2 * threads * sizeof(float), s")),
    ("C-style cast", "launch", 10, 10, "  dim3 grid((unsigned)(N + threads - 1) / threads);"),
    ("static_cast", "launch", 10, 10, "  dim3 grid(static_cast<int>(N / threads));"),
    ("ceil of a float division", "launch", 10, 10, "  dim3 grid((int)ceil(N / (float)threads));"),
    ("member access", "launch", 13, 13, _launch_line("grid.x, threads, 0, s")),
    ("ternary", "launch", 13, 13, _launch_line("grid, N % 2 ? 256u : 128, 0, s")),
    ("dim3 by assignment", "launch", 10, 10, "  dim3 grid = dim3((N + threads - 1) / threads, 1);"),
    ("a qualified call the declaration made before", "scaled", 9, 9,
     "  int threads = static_cast<int>(bench::scaled(N, 64));"),
    ("a macro's launch", "macro", 5, 5, "    k<<<(n + 127) / 128, 128>>>(a, n); \\"),
    ("#pragma unroll in a kernel's body", "launch", 3, 4,
     "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n#pragma unroll 4\n  for (int j = 0; j < 1; ++j)\n"
     "    if (i < n) a[i] *= 2.0f;  // \"twice\", it's 2'x"),
    ("a device helper added", "launch", 2, 5, "__device__ inline float twice(float x) { return 2.0f * x; }\n"
     + KERNEL.replace("*= 2.0f", "= twice(a[i])")),
    ("a device function's edit", "host-device", 2, 2, "__device__ inline float thrice(float x) { return x * 3.0f; }"),
    ("#pragma unroll in a __host__ __device__ function", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) {\n  float y = 0;\n#pragma unroll\n  for (int j = 0; j < 2; ++j) "
     "y += x;\n  return y;\n}"),
    ("a __host__ __device__ function's arithmetic", "host-device", 1, 1,
     "__host__ __device__ inline float twice(float x) { return fmaf(x, 2.0f, 0.0f); }"),
    ("printf in a kernel", "launch", 4, 4, '  if (i < n) a[i] *= 2.0f; else if (i == n) printf("%d\\n", n);'),
]


@pytest.mark.parametrize("what, source, first, last, text", LEGITIMATE, ids=[s[0] for s in LEGITIMATE])
def test_legitimate_edits_beside_the_smuggling_pass(what, source, first, last, text):
    src, editable = SOURCES[source]
    g = apply_proposal(proposal(Edit(file="main.cu", start_line=first, end_line=last, new_text=text)),
                       {"main.cu": src}, editable)
    assert g.ok, (what, g.reasons())
