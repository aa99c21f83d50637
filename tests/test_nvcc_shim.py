"""The nvcc every build runs first (runner.toolchain.nvcc_shim): third-party build files that name GPU
architectures CUDA no longer compiles for still build, for the architecture Optimas asks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from runner.base.config import load_config
from runner.base.processes import child_environment
from runner.toolchain.compat_record import CompatRecord
from runner.toolchain.compiler import BuildOptions, build
from runner.toolchain.nvcc_shim import (
    build_environment,
    filter_architectures,
    keep_specific,
    raise_dialect,
)

QUIET = BuildOptions(verbose=False)  # no ptxas report: these builds are about what the shim does

SUPPORTED = frozenset({"compute_75", "compute_80", "compute_90", "compute_100", "sm_75", "sm_80", "sm_90", "sm_100"})


@pytest.mark.parametrize("args, kept, dropped", [
    (["-O2", "-gencode", "arch=compute_35,code=sm_35", "-c", "a.cu"], ["-O2", "-c", "a.cu"],
     ["-gencode arch=compute_35,code=sm_35"]),
    (["--generate-code=arch=compute_60,code=[compute_60,sm_60]"], [],
     ["--generate-code=arch=compute_60,code=[compute_60,sm_60]"]),
    (['-gencode=arch=compute_90,code="sm_90,compute_90"'], ['-gencode=arch=compute_90,code="sm_90,compute_90"'], []),
    (["-gencode", "arch=compute_80,code=[sm_70,sm_80]"], ["-gencode=arch=compute_80,code=[sm_80]"],
     ["-gencode arch=compute_80,code=[sm_70,sm_80]"]),
    (["--gpu-architecture=compute_20", "--gpu-code=compute_20", "x.cu"], ["x.cu"],
     ["--gpu-architecture=compute_20", "--gpu-code=compute_20"]),
    (["-arch", "sm_35", "-o", "app"], ["-o", "app"], ["-arch sm_35"]),
    (["-arch=sm_90a", "-arch=native", "-gencode", "arch=compute_100f,code=sm_100f", "-code=lto_90"],
     ["-arch=sm_90a", "-arch=native", "-gencode", "arch=compute_100f,code=sm_100f", "-code=lto_90"], []),
    (["-code=sm_50,sm_90"], ["-code=sm_90"], ["-code=sm_50,sm_90"]),
    (["-Xcompiler", "-march=native", "-arch"], ["-Xcompiler", "-march=native", "-arch"], []),
])
def test_only_architecture_options_this_nvcc_lacks_are_dropped(args, kept, dropped):
    assert filter_architectures(args, SUPPORTED) == (kept, dropped)


OLD_ARCH_MAKEFILE = ("NVCC = /opt/cuda-9/bin/nvcc\nFLAGS = -O2 -gencode arch=compute_35,code=sm_35 "
                     "--gpu-architecture=compute_20 --gpu-code=compute_20\n\n"
                     "app: k.cu\n\t$(NVCC) $(FLAGS) k.cu -o app\n")
KERNEL = "__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\nint main() { return 0; }\n"


def project(root: Path, build_file: str, text: str, build: str) -> Path:
    root.mkdir()
    (root / "k.cu").write_text(KERNEL)
    (root / build_file).write_text(text)
    (root / "optimas.yml").write_text(yaml.safe_dump({"app": {"sources": ["k.cu"], "build": build}}))
    return root


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_a_makefile_that_asks_for_architectures_cuda_dropped_builds_for_the_one_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path / "p", "Makefile", OLD_ARCH_MAKEFILE,
                   "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app NVCC=nvcc && cp app {exe}'")
    plain = subprocess.run(["sh", "-c", "NVCC_APPEND_FLAGS=-arch=sm_90 make -B app NVCC=nvcc"], cwd=root,
                           capture_output=True, text=True, env=child_environment())
    assert plain.returncode != 0 and "nvcc fatal" in plain.stderr  # what the shim is for
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert result.ok, result.output
    assert (tmp_path / "app").is_file()
    assert "optimas: dropped `-gencode arch=compute_35,code=sm_35`" in result.output
    assert "dropped `--gpu-architecture=compute_20`" in result.output
    assert "dropped `--gpu-code=compute_20`" in result.output
    assert build_environment(None)["PATH"].split(":")[0] == str(next((tmp_path / "cache" / "nvcc-shim").iterdir()))


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("cmake")), reason="nvcc and cmake not installed")
def test_a_cmake_project_with_old_cuda_architectures_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    cm = ("cmake_minimum_required(VERSION 3.18)\nproject(s LANGUAGES CXX CUDA)\n"
          "set(CMAKE_CUDA_ARCHITECTURES 35 60)\nadd_executable(k_app k.cu)\n")
    written = ("sh -c 'cmake -S . -B {exe}.build -DCMAKE_BUILD_TYPE=Release \"-DCMAKE_CUDA_FLAGS=-arch={arch} "
               "{lineinfo}\" >/dev/null && cmake --build {exe}.build --target k_app -j && cp {exe}.build/k_app {exe}'")
    root = project(tmp_path / "p", "CMakeLists.txt", cm, written)
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert result.ok, result.output
    assert "dropped `--generate-code=arch=compute_35,code=[compute_35,sm_35]`" in result.output


@pytest.mark.parametrize("args, code, major, kept", [
    (["-std=c++14", "-c", "a.cu"], "#include <thrust/reduce.h>\n", 13, ["-std=c++17", "-c", "a.cu"]),
    (["--std", "c++11", "a.cu"], "  #  include <cooperative_groups.h>\n", 13, ["--std=c++17", "a.cu"]),
    (["-std=c++14", "a.cu"], "#include <cuda/std/cstdint>\n", 12, ["-std=c++14", "a.cu"]),  # CUDA 12 takes it
    (["-std=c++14", "a.cu"], "#include <cuda_fp16.h>\n", 13, ["-std=c++14", "a.cu"]),  # no CCCL header
    (["-std=c++14", "a.cu"], "// #include <cub/cub.cuh>\n", 13, ["-std=c++14", "a.cu"]),
    (["-std=c++17", "-std=c++20", "a.cu"], "#include <cub/cub.cuh>\n", 13, ["-std=c++17", "-std=c++20", "a.cu"]),
    (["-o", "app", "a.o", "-std"], "", 13, ["-o", "app", "a.o", "-std"]),
])
def test_an_old_dialect_is_raised_to_cpp17_only_where_cuda_13s_headers_need_it(args, code, major, kept):
    from runner.toolchain.nvcc_shim import DIALECT_OPTION

    got, raised, header = raise_dialect(args, code, major)
    assert got == kept
    assert bool(raised) == (got != args) and all(DIALECT_OPTION.fullmatch(r) for r in raised)
    assert (f"<{header}>" in code) if raised else header in ("", "cub/cub.cuh")  # the header that needs C++17


CPP14_MAKEFILE = "app: k.cu\n\tnvcc -std=c++14 -O3 k.cu -o app\n"
GRID_SYNC = ('#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n'
             '__global__ void k(float* a) { cg::thread_block b = cg::this_thread_block(); b.sync(); a[0] = 1.0f; }\n'
             'int main() { return 0; }\n')


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_a_cpp14_makefile_including_cooperative_groups_builds_on_cuda_13(tmp_path, monkeypatch):
    """XSBench's and RSBench's Makefiles say -std=c++14 and include Thrust: CUDA 13's headers stop
    with '#error ... requires at least C++17'. Compiling it as C++17 changes what it means
    (__cplusplus, trigraphs: an attacker's pass), so it is app.legacy_cuda' to allow: off, the
    build fails and its log says what the setting would do; on, the source compiles as C++17 and
    the build result records it for the run and the pull request."""
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path / "p", "Makefile", CPP14_MAKEFILE,
                   "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app && cp app {exe}'")
    (root / "k.cu").write_text(GRID_SYNC)
    # off, the shim hands nvcc the build's own arguments (it only says what the setting would do):
    # this build fails, or not, as the user's own nvcc would, so it stands for that build too
    off = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    if "release 12." in version or "release 11." in version:
        assert off.ok and "C++17" not in off.output, off.output  # an older CUDA takes C++14, and the shim leaves it
        return
    assert not off.ok and off.compat == [] and "requires at least C++" in off.output  # what it is for
    assert "-std=c++14: " in off.output and "app.legacy_cuda: true would compile it as C++17" in off.output
    assert "given as -std=c++17" not in off.output
    cfg = yaml.safe_load((root / "optimas.yml").read_text())
    cfg["app"]["legacy_cuda"] = True
    (root / "optimas.yml").write_text(yaml.safe_dump(cfg))
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert result.ok, result.output
    assert "`-std=c++14` given as -std=c++17" in result.output and "<cooperative_groups.h>" in result.output
    assert result.compat == [CompatRecord("C++17", ("-std=c++14",), ("k.cu",), ".")]
    assert result.compat[0].is_dialect


def _runtime_used(args: list[str], cwd) -> list[str]:
    """The removed runtime functions the sources an nvcc call compiles (and include) call."""
    from runner.toolchain.nvcc_shim import RUNTIME, compat_used, compiled_code

    return compat_used(compiled_code(args, cwd), RUNTIME)


def test_the_removed_thread_functions_are_found_where_the_code_calls_them(tmp_path):
    (tmp_path / "a.cu").write_text('#include "util.h"\nint main() { cudaThreadSynchronize(); }\n')
    (tmp_path / "util.h").write_text("inline void done() { cudaThreadExit (); }\n")
    (tmp_path / "own.cu").write_text("#define cudaThreadSynchronize cudaDeviceSynchronize\n"
                                     "int main() { cudaThreadSynchronize(); }\n")
    (tmp_path / "new.cu").write_text("int main() { cudaDeviceSynchronize(); } // was cudaThreadSynchronize\n")
    assert _runtime_used(["-O2", "a.cu", "-o", "a"], tmp_path) == ["cudaThreadSynchronize", "cudaThreadExit"]
    assert _runtime_used(["own.cu"], tmp_path) == []  # its own compatibility macro
    assert _runtime_used(["new.cu", "missing.cu"], tmp_path) == []
    (tmp_path / "host.cpp").write_text("void sync() { cudaThreadSynchronize(); }\n")
    assert _runtime_used(["-c", "host.cpp"], tmp_path) == ["cudaThreadSynchronize"]  # host code nvcc compiles


def test_the_warp_functions_without_a_mask_are_found_where_the_code_calls_them():
    from runner.toolchain.nvcc_shim import WARP, compat_used

    reduce = ("__device__ float warp_sum(float v) {\n  for (int d = 16; d > 0; d /= 2) v += __shfl_down(v, d);\n"
              "  return v > 0 ? v : __shfl(v, 0);\n}\n")
    assert compat_used(reduce, WARP) == ["__shfl", "__shfl_down"]
    assert compat_used("v += __shfl_down_sync(0xffffffff, v, d); m = __ballot_sync(~0u, p);", WARP) == []
    own = "#define __shfl_down(v, d) __shfl_down_sync(0xffffffff, v, d)\n" + reduce
    assert compat_used(own, WARP) == []  # its own compatibility macro
    own_fn = "template <class T> __device__ __forceinline__ T __shfl(T v, int l) { return v; }\n" + reduce
    assert compat_used(own_fn, WARP) == []


def test_the_warp_votes_without_a_mask_are_found_where_the_code_calls_them():
    from runner.toolchain.nvcc_shim import VOTE, compat_used

    votes = "__global__ void k(int* o, int p) { o[0] = __any(p) + __all (p != 0); o[1] = __ballot(p > 1); }\n"
    assert compat_used(votes, VOTE) == ["__any", "__all", "__ballot"]
    assert compat_used("o[0] = __any_sync(~0u, p) + __all_sync(m, p) + __ballot_sync(m, p);", VOTE) == []
    assert compat_used("#define __ballot(p) __ballot_sync(0xffffffff, p)\n" + votes, VOTE) == []


def test_prefetch_and_advice_by_device_ordinal_are_told_from_cuda_13s_form():
    from runner.toolchain.nvcc_shim import PREFETCH, compat_used

    assert compat_used("cudaMemPrefetchAsync(p, n, dev); cudaMemAdvise(p, n, a, 0);", PREFETCH) == \
        ["cudaMemPrefetchAsync", "cudaMemAdvise"]
    new_form = "cudaMemLocation l = {cudaMemLocationTypeDevice, 0}; cudaMemPrefetchAsync(p, n, l, 0, s);"
    assert compat_used(new_form, PREFETCH) == []


def test_the_toolkits_own_headers_are_not_read_as_the_programs_code(tmp_path):
    """Chai includes "cuda_runtime.h" with quotes and compiles with -I$(CUDA_INC): CUDA 13's
    sm_30_intrinsics.h still mentions __shfl(, which read as the program's call."""
    from runner.toolchain.nvcc_shim import WARP, compat_used, compiled_code

    toolkit = tmp_path / "cuda"
    (toolkit / "include").mkdir(parents=True)
    (toolkit / "include" / "cuda_runtime.h").write_text('#include "sm_30_intrinsics.h"\n')
    (toolkit / "include" / "sm_30_intrinsics.h").write_text("#if 0\nT __shfl(T v, int l);\n#endif\n")
    (tmp_path / "kernel.cu").write_text('#include "cuda_runtime.h"\n__global__ void k() {}\n')
    args = ["-I" + str(toolkit / "include"), "-c", "kernel.cu"]
    assert compat_used(compiled_code(args, tmp_path), WARP) == ["__shfl"]  # what the program does not call
    assert compat_used(compiled_code(args, tmp_path, toolkit), WARP) == []


LEGACY = ("#include <cstdio>\n__global__ void k(float* a) { a[threadIdx.x] = 1.0f; }\n"
          "int main() { float* a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); cudaThreadSynchronize();\n"
          "  printf(\"PASS\\n\"); cudaThreadExit(); return 0; }\n")


WARP_LEGACY = ("#include <cstdio>\n"
               "__global__ void k(float* a) { float v = a[threadIdx.x];\n"
               "  for (int d = 16; d > 0; d /= 2) v += __shfl_xor(v, d);\n"
               "  a[threadIdx.x] = v + __shfl_up(v, 1, 16); }\n"
               "int main() { float* a; cudaMalloc(&a, 128); k<<<1, 32>>>(a); cudaDeviceSynchronize();\n"
               "  printf(\"PASS\\n\"); return 0; }\n")


# Managed-memory hints by device ordinal, as before CUDA 13 (Altis's unified-memory programs).
PREFETCH_LEGACY = ("#include <cstdio>\n__global__ void k(float* a) { a[threadIdx.x] += 1.0f; }\n"
                   "int main() { float* a; int dev = 0; cudaMallocManaged(&a, 128 * sizeof(float));\n"
                   "  cudaMemAdvise(a, 128 * sizeof(float), cudaMemAdviseSetPreferredLocation, dev);\n"
                   "  cudaStream_t s; cudaStreamCreate(&s); cudaMemPrefetchAsync(a, 128 * sizeof(float), dev, s);\n"
                   "  k<<<1, 128, 0, s>>>(a); cudaMemPrefetchAsync(a, 128 * sizeof(float), cudaCpuDeviceId);\n"
                   "  cudaDeviceSynchronize(); printf(\"%s\\n\", a[0] == 1.0f ? \"PASS\" : \"FAIL\"); return 0; }\n")


# Votes without a mask, with the toolkit's C++ library around them: libcu++ has identifiers named
# __any and __all of its own (cuda/std/__functional/invoke.h, __tuple_dir/sfinae_helpers.h).
VOTE_LEGACY = ("#include <cstdio>\n#include <cuda/std/tuple>\n#include <cuda/std/functional>\n"
               "#include <thrust/device_vector.h>\n#include <thrust/reduce.h>\n"
               "__global__ void k(int* a) { int p = a[threadIdx.x] > 0;\n"
               "  a[threadIdx.x] = __any(p) + 2 * __all(p) + __popc(__ballot(p)); }\n"
               "int main() { thrust::device_vector<int> v(32, 1); k<<<1, 32>>>(thrust::raw_pointer_cast(v.data()));\n"
               "  cuda::std::tuple<int, int> t{thrust::reduce(v.begin(), v.end()), 0};\n"
               "  printf(\"%d PASS\\n\", cuda::std::get<0>(t)); return 0; }\n")


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
@pytest.mark.parametrize("source, failure, said", [
    (LEGACY, 'identifier "cudaThreadSynchronize" is undefined', "cudaThreadSynchronize, cudaThreadExit, removed in "
     "CUDA 13, call the cudaDevice* function each was an older name of (cuda_removed_api.h, pre-included)"),
    (WARP_LEGACY, 'identifier "__shfl_xor" is undefined', "__shfl_up, __shfl_xor, warp shuffles without a mask, "
     "which CUDA 13 no longer declares, become their *_sync forms over the active threads (cuda_legacy_warp.h, "
     "pre-included)"),
    (VOTE_LEGACY, "Instruction 'vote' without '.sync' is not supported", "__any, __all, __ballot, warp votes "
     "without a mask, which ptxas rejects for sm_70 and later, become their *_sync forms over the active threads "
     "(cuda_legacy_vote.h, pre-included)"),
    (PREFETCH_LEGACY, 'no suitable constructor exists to convert from "int" to "cudaMemLocation"',
     "cudaMemPrefetchAsync, cudaMemAdvise, managed-memory hints by device ordinal, which CUDA 13 takes as a "
     "cudaMemLocation, become calls with the location of that device (or the host for cudaCpuDeviceId) "
     "(cuda_legacy_prefetch.h, pre-included)"),
], ids=["thread-functions", "warp-functions", "warp-votes", "prefetch"])
def test_a_program_that_calls_what_cuda_13_removed_builds_only_when_the_config_allows_it(tmp_path, monkeypatch,
                                                                                         source, failure, said):
    """The compatibility headers change what a program means, so they are a setting: off, the build
    fails as with the user's own nvcc and its log says which header would apply; on, the header is
    pre-included and the build result records which header went into which file."""
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path / "p", "Makefile", "app: k.cu\n\tnvcc -O2 k.cu -o app\n",
                   "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app && cp app {exe}'")
    (root / "k.cu").write_text(source)
    header = said.split("(")[-1].split(",")[0]
    # off, the shim hands nvcc the build's own arguments (it only says what the setting would do), so
    # this build fails as the user's own nvcc does: with the error the header is for
    off = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert not off.ok and off.compat == [] and failure in off.output, off.output
    assert f"app.legacy_cuda: true would pre-include {header}" in off.output and "pre-included" not in off.output
    cfg = yaml.safe_load((root / "optimas.yml").read_text())
    cfg["app"]["legacy_cuda"] = True
    (root / "optimas.yml").write_text(yaml.safe_dump(cfg))
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert result.ok, result.output
    assert f"optimas: {said}" in result.output
    (used,) = result.compat
    assert used.header == header and used.sources == ("k.cu",) and used.cwd == "." and not used.is_dialect
    assert list(used.names) == said.split(", ")[:len(used.names)]


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_a_call_two_includes_deep_gets_its_header_once_and_a_commented_definition_does_not_count(tmp_path,
                                                                                                 monkeypatch):
    """main.cu includes reduce.cuh, which includes warp/shfl.cuh (found through -I) where the
    unmasked shuffle is; fake.h holds a definition of it that is commented out. The header is
    pre-included, and recorded once although the build's sources are preprocessed again for the
    macros in effect."""
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path / "p", "Makefile", "app: main.cu\n\tnvcc -O2 -Iwarp main.cu -o app\n",
                   "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app && cp app {exe}'")
    (root / "warp").mkdir()
    (root / "warp" / "shfl.cuh").write_text("__device__ float total(float v) {\n"
                                           "  for (int d = 16; d > 0; d /= 2) v += __shfl_down(v, d);\n"
                                           "  return v; }\n")
    (root / "fake.h").write_text("// #define __shfl_down(v, d) fake_shfl_down(v, d)\n")
    (root / "reduce.cuh").write_text('#include "fake.h"\n#include "shfl.cuh"\n')
    (root / "main.cu").write_text('#include <cstdio>\n#include "reduce.cuh"\n'
                                  "__global__ void k(float* a) { a[threadIdx.x] = total(a[threadIdx.x]); }\n"
                                  "int main() { printf(\"built\\n\"); return 0; }\n")
    cfg = yaml.safe_load((root / "optimas.yml").read_text())
    cfg["app"].update(legacy_cuda=True, sources=["main.cu"])
    (root / "optimas.yml").write_text(yaml.safe_dump(cfg))
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app",
                   options=BuildOptions(macros=True))
    assert result.ok, result.output
    (used,) = result.compat
    assert used.header == "cuda_legacy_warp.h" and used.sources == ("main.cu",)
    assert used.names == ("__shfl_down",)


# 20 of a warp's 32 threads vote, as legacy code did inside a branch: an unmasked vote counted the
# threads that reached it, which __activemask() gives (a full mask would wait for threads that never come).
VOTE_BRANCH = ("#include <cstdio>\n"
               "__global__ void k(int* out) { int lane = threadIdx.x;\n"
               "  if (lane < 20) { int p = lane % 2;\n"
               "    out[lane] = __popc(__ballot(p)) * 100 + __any(p) * 10 + __all(lane < 20); } }\n"
               "int main() { int* d; int h[32]; cudaMalloc(&d, sizeof h); cudaMemset(d, 0, sizeof h);\n"
               "  k<<<1, 32>>>(d); cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n"
               "  int same = 0; for (int i = 0; i < 20; i++) same += h[i] == 1011;\n"
               "  printf(\"lanes voting 10 of 20, any, all: %d\\n\", same); return 0; }\n")


@pytest.mark.gpu
def test_votes_without_a_mask_count_the_threads_that_reach_them(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path / "p", "Makefile", "app: k.cu\n\tnvcc -O2 k.cu -o app\n",
                   "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app && cp app {exe}'")
    cfg = yaml.safe_load((root / "optimas.yml").read_text())
    cfg["app"]["legacy_cuda"] = True
    (root / "optimas.yml").write_text(yaml.safe_dump(cfg))
    (root / "k.cu").write_text(VOTE_BRANCH)
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert result.ok and "cuda_legacy_vote.h, pre-included" in result.output, result.output
    run = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "lanes voting 10 of 20, any, all: 20" in run.stdout, run.stdout + run.stderr


@pytest.mark.gpu
def test_prefetch_by_device_ordinal_moves_the_data_where_it_said(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = project(tmp_path / "p", "Makefile", "app: k.cu\n\tnvcc -O2 k.cu -o app\n",
                   "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app && cp app {exe}'")
    cfg = yaml.safe_load((root / "optimas.yml").read_text())
    cfg["app"]["legacy_cuda"] = True
    (root / "optimas.yml").write_text(yaml.safe_dump(cfg))
    (root / "k.cu").write_text(PREFETCH_LEGACY)
    result = build(load_config(root / "optimas.yml"), root, "sm_90", exe=tmp_path / "app", options=QUIET)
    assert result.ok and "cuda_legacy_prefetch.h, pre-included" in result.output, result.output
    run = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "PASS", run.stdout + run.stderr


@pytest.mark.parametrize("args, appended, kept_args, kept_appended", [
    (["-O2", "-arch=sm_90a", "a.cu"], "-arch=sm_90 -lineinfo", ["-O2", "-arch=sm_90a", "a.cu"],
     "-arch=sm_90a -lineinfo"),
    (["-arch=sm_90", "--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]", "a.cu"], "",
     ["--generate-code=arch=compute_90a,code=[compute_90a,sm_90a]", "a.cu"], ""),  # CMake: CMAKE_CUDA_FLAGS and 90a
    (["-arch", "sm_90", "-gencode", "arch=compute_90a,code=sm_90a"], "",
     ["-gencode", "arch=compute_90a,code=sm_90a"], ""),
    (["-gencode=arch=compute_100f,code=sm_100f"], "-arch=sm_100", ["-gencode=arch=compute_100f,code=sm_100f"],
     "-arch=sm_100f"),
    (["-arch=sm_80", "a.cu"], "-arch=sm_90", ["-arch=sm_80", "a.cu"], "-arch=sm_90"),  # nothing specific asked
])
def test_a_plain_arch_gives_way_to_the_specific_variant_the_build_asks_for(args, appended, kept_args, kept_appended):
    out, env, notes = keep_specific(args, appended)
    assert (out, env) == (kept_args, kept_appended) and bool(notes) == (out != args or env != appended)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_an_sm_90a_program_keeps_its_architecture_specific_code(tmp_path, monkeypatch):
    """NVCC_APPEND_FLAGS' -arch=sm_90 would win over the program's sm_90a (the last -arch is used)
    and compile its wgmma/setmaxnreg code paths out: through the shim, ptxas targets sm_90a."""
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a.cu").write_text(KERNEL)
    argv = ["nvcc", "-arch=sm_90a", "a.cu", "-o", "a", "--dryrun"]
    env = child_environment()
    env["NVCC_APPEND_FLAGS"] = "-arch=sm_90"
    plain = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "ptxas -arch=sm_90 " in plain.stderr and "ptxas -arch=sm_90a" not in plain.stderr
    env = build_environment(None)
    env["NVCC_APPEND_FLAGS"] = "-arch=sm_90"
    shimmed = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "ptxas -arch=sm_90a" in shimmed.stderr and "ptxas -arch=sm_90 " not in shimmed.stderr
    assert "optimas: `-arch=sm_90` (NVCC_APPEND_FLAGS) given as sm_90a" in shimmed.stderr


# Compiler feedback (K*) for builds that run nvcc unnamed, through the copy the pipeline builds in.

MAKEFILE_ABSOLUTE = ("NVCC := $(shell command -v nvcc)\napp: k.cu\n\t$(NVCC) -O2 -arch=sm_90 -o app k.cu\n")


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make") and shutil.which("cmake")),
                    reason="nvcc, make and cmake not installed")
@pytest.mark.parametrize("kind", ["make", "make-absolute-nvcc", "cmake", "script"])
def test_make_cmake_and_script_builds_report_ptxas_resources(tmp_path, monkeypatch, kind):
    from runner.toolchain.builder import compile_candidate

    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    cm = "cmake_minimum_required(VERSION 3.18)\nproject(s LANGUAGES CXX CUDA)\nadd_executable(k_app k.cu)\n"
    builds = {
        "make": ("Makefile", OLD_ARCH_MAKEFILE,
                 "sh -c 'NVCC_APPEND_FLAGS=\"-arch={arch}\" make -B app NVCC=nvcc && cp app {exe}'"),
        "make-absolute-nvcc": ("Makefile", MAKEFILE_ABSOLUTE, "sh -c 'make -B app && cp app {exe}'"),
        "cmake": ("CMakeLists.txt", cm,
                  "sh -c 'cmake -S . -B {exe}.build \"-DCMAKE_CUDA_FLAGS=-arch={arch}\" >/dev/null && "
                  "cmake --build {exe}.build -j && cp {exe}.build/k_app {exe}'"),
        "script": ("build.sh", "nvcc -O2 -arch=$1 -o \"$2\" k.cu\n", "sh build.sh {arch} {exe}"),
    }
    name, text, command = builds[kind]
    root = project(tmp_path / "p", name, text, command)
    result = compile_candidate(load_config(root / "optimas.yml"), {}, "sm_90")
    assert result.ok, result.output
    (k,) = result.resources
    assert k.kernel == "k(float*)" and k.registers > 0 and k.mangled == "_Z1kPf"
    assert "ptxas info" not in result.output  # the report is parsed, not left among the messages


# Macros as the build compiles them: the branch in effect, and the values given on nvcc's command line.

SIZES_H = ("#ifdef LARGE_DATASET\n#  define NI 2048\n#elif defined(MEDIUM_DATASET)\n#  define NI 512\n#else\n"
           "#  define NI 128\n#endif\n#define SQ(x) ((x)*(x))\n#define UNUSED 1\n#define UNUSED 1\n")
SCALE_CU = ('#include "sizes.h"\n__global__ void scale(float* a) {\n'
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i < NI) a[i] = a[i] * FACTOR + SQ(2.0f);\n}\nint main() { return 0; }\n")


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("make")), reason="nvcc and make not installed")
def test_the_prompt_shows_macros_as_the_build_compiles_them(tmp_path, monkeypatch):
    from runner.analysis.evidence import Diagnostics, GpuInfo
    from runner.analysis.hot import KernelTime
    from runner.proposal.prompt import build_prompt
    from runner.toolchain.builder import Builder, default_build_cache

    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "p"
    root.mkdir()
    (root / "k.cu").write_text(SCALE_CU)
    (root / "sizes.h").write_text(SIZES_H)
    (root / "Makefile").write_text("app: k.cu\n\tnvcc $(CFLAGS) -DLARGE_DATASET -DFACTOR=3.5f -o app k.cu\n")
    (root / "optimas.yml").write_text(yaml.safe_dump({"app": {
        "sources": ["k.cu"], "build": "sh -c 'make -B app CFLAGS=-arch={arch} && cp app {exe}'"}}))
    lc = load_config(root / "optimas.yml")
    built = Builder(lc, "sm_90", default_build_cache()).compile({}, macros=True)
    assert built.ok, built.output
    assert built.macros.by_source["k.cu"]["NI"] == "2048" and built.macros.by_source["k.cu"]["FACTOR"] == "3.5f"
    assert built.macros.command_line == ["LARGE_DATASET", "FACTOR"]
    kernel = "scale(float *)"
    diag = Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[KernelTime(kernel=kernel, total_ns=1, launches=1, share=1,
                                                                     cumulative_share=1, hot=True)], evidence=[])
    files = {"k.cu": SCALE_CU, "sizes.h": SIZES_H}
    user = build_prompt("p", diag, files, "none", macros=built.macros).user
    section = user.split("### Macros as this build compiles them", 1)[1].split("## Task", 1)[0]
    # NI: three #ifdef branches, the large one in effect; FACTOR: given on the command line only;
    # SQ is defined once (its text says it all) and UNUSED is not used by the code shown
    assert "- `FACTOR = 3.5f`" in section and "- `NI = 2048`" in section
    assert "SQ" not in section and "UNUSED" not in section
    # without a build's macros the section is not there
    assert "Macros as this build" not in build_prompt("p", diag, files, "none").user


def test_a_recorded_source_is_named_from_the_builds_folder_by_its_text_alone(tmp_path):
    """The build can write the compat record: a source path is mapped by its text (resolving
    "/a/a/.../../../k.cu" on the worker took minutes for a megabyte and told which host paths
    exist; a link loop raised), an outside path stays as recorded, and a record with an
    overlong source or too many of them is dropped (an attacker's pass)."""
    import json

    from runner.toolchain.compiler import MAX_SOURCE_CHARS, _copy_root, _source_in, read_compat

    (tmp_path / "optimas.yml").write_text("app: {sources: [k.cu], build: 'true'}\n")
    (tmp_path / "sub").mkdir()
    copy = _copy_root(*load_config(tmp_path / "optimas.yml").dirs, tmp_path)
    assert copy == tmp_path.resolve()
    assert _source_in(str(tmp_path / "sub" / "k.cu"), tmp_path, copy) == "sub/k.cu"
    crafted = "/" + "a/" * 200_000 + "../" * 200_000 + str(tmp_path.resolve()).lstrip("/") + "/k.cu"
    assert _source_in(crafted, tmp_path, copy) == crafted  # too long to be a path of the build's
    assert _source_in("/a/../" + str(tmp_path.resolve()).lstrip("/") + "/k.cu", tmp_path, copy) == "k.cu"
    assert _source_in("/etc/passwd", tmp_path, copy) == "/etc/passwd"
    assert _source_in(str(tmp_path) + "-other/k.cu", tmp_path, copy) == str(tmp_path) + "-other/k.cu"
    assert _source_in("k.cu", tmp_path, copy) == "k.cu" and _source_in("/x/k.cu", tmp_path, None) == "/x/k.cu"
    record = tmp_path / "compat.jsonl"
    line = {"header": "cuda_removed_api.h", "names": ["cudaThreadSynchronize"], "cwd": "."}
    record.write_text("\n".join(json.dumps({**line, "sources": s}) for s in (
        ["k.cu"], ["x" * (MAX_SOURCE_CHARS + 1)], ["k.cu"] * 300)) + "\n")
    assert [r.sources for r in read_compat(record)] == [("k.cu",)]
