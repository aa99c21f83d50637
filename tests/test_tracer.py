"""The CUPTI tracer: built here with the real nvcc against the toolkit's CUPTI; on the device, run
inside an unmodified program (tests marked gpu)."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURES

from runner.base.processes import child_environment, run_process
from runner.tracing.library import TracerError, find_toolkit, trace_environment, tracer_library
from runner.tracing.trace import TraceFormatError, read_trace, read_traces

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
PROBE = FIXTURES / "tracer" / "probe.cu"


def _hash(lib: Path, data: bytes, split: int | None = None) -> str:
    f = ctypes.CDLL(str(lib)).optimas_tracer_hash
    f.restype = ctypes.c_uint64
    f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    k = len(data) if split is None else split
    return f"{f(data[:k], k, data[k:], len(data) - k):016x}"


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    return tracer_library("nvcc", cache=tmp_path_factory.mktemp("cache"))


@needs_nvcc
def test_the_tracer_is_built_once_per_toolkit_and_loads(library: Path):
    assert library.is_file() and library.name == "liboptimas_tracer.so"
    assert find_toolkit().release.split(",")[0] in library.parent.name  # cached per toolkit release
    stamp = library.stat().st_mtime_ns
    assert tracer_library("nvcc", cache=library.parents[2]) == library and library.stat().st_mtime_ns == stamp
    # the hash of a result fed in pitched rows equals the hash of the same bytes in one piece
    data = np.arange(1000, dtype=np.float32).tobytes() + b"abc"
    whole = _hash(library, data)
    assert all(_hash(library, data, k) == whole for k in (0, 1, 7, 8, 9, 2001, len(data)))
    assert _hash(library, data[:-1]) != whole and _hash(library, data[:-1] + b"d") != whole


def test_a_toolkit_without_cupti_is_named(tmp_path: Path):
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    nvcc.chmod(0o755)
    with pytest.raises(TracerError, match=r"CUPTI not found in the toolkit at .*cuda \(cupti.h is in none"):
        tracer_library(str(nvcc), cache=tmp_path / "cache")
    with pytest.raises(TracerError, match="nvcc not found .'no-such-nvcc'"):
        tracer_library("no-such-nvcc", cache=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_malformed_traces_name_the_file_and_line(tmp_path: Path):
    bad = tmp_path / "trace-1.tsv"
    bad.write_text("kernel,time\n")
    with pytest.raises(TraceFormatError, match="is not an Optimas trace"):
        read_trace(bad)
    bad.write_text("# optimas-trace 1\nP\t1\t130001\t0\nK\t0\t1\t2\n")
    with pytest.raises(TraceFormatError, match=r"trace-1.tsv:3: malformed 'K' record"):
        read_trace(bad)


def _run_probe(tmp: Path, library: Path, exe: Path, *args: str, keep: int = 0, keep_each: int = 0):
    traces = tmp / f"traces-{len(list(tmp.glob('traces-*')))}"
    traces.mkdir()
    env = child_environment(trace_environment(library, traces, keep, keep_each))
    r = run_process([str(exe), *args], tmp, 120, env=env)
    assert r.returncode == 0 and "PASS" in r.output, r.output
    (trace,) = read_traces(traces)
    return trace


@pytest.mark.gpu
@pytest.mark.parametrize("cudart", ["static", "shared"])
def test_the_tracer_sees_every_kernel_and_every_result_of_an_unmodified_program(tmp_path, library, cudart):
    exe = tmp_path / "probe"
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", f"-cudart={cudart}", "-o", str(exe), str(PROBE)], check=True)
    t = _run_probe(tmp_path, library, exe, keep=(4 << 20) + 100)  # the first result whole, 100 bytes of the next
    assert t.complete and t.dropped == 0 and not t.unsynchronized
    names = [k.kernel for k in t.launches]
    assert names.count("void scale<float, 4>(float*, int)") == 1  # the C++ runtime's demangler, not ncu's
    assert sum("scale<float, 2>" in n for n in names) == 1  # cudaLaunchKernel
    assert sum(n.startswith("spin(") for n in names) == 4  # two streams, then twice in the graph
    graph = [k for k in t.launches if k.graph]
    assert len(graph) == 4 and {k.kernel.split("(")[0] for k in graph} == {"spin", "void scale<float, 1>"}
    assert len({k.stream for k in t.launches if k.kernel.startswith("spin(") and not k.graph}) == 2
    assert all(k.duration_ns > 0 and k.registers > 0 for k in t.launches)
    sources = [r.source for r in t.results]
    assert sources == ["cudaMemcpy", "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpyAsync", "cudaMemcpyAsync",
                       "cudaMemcpyFromSymbol", "cudaMemcpy2D", "cudaMemcpy3D", "managed"], sources
    n = 1 << 20
    assert [r.bytes for r in t.results] == [4 * n] * 5 + [256, 8 * 400, 3 * 4 * 64, 4096]
    first = (np.arange(n, dtype=np.float32) * np.float32(0.5) * np.float32(4)).tobytes()
    assert t.results[0].hash == _hash(library, first)  # what the device computed, read before the host changed it
    assert t.kept_bytes(t.results[0]) == first and [r.kept for r in t.results[:3]] == [4 * n, 100, 0]
    again = _run_probe(tmp_path, library, exe)
    assert [r.hash for r in again.results] == [r.hash for r in t.results]  # deterministic run to run
    each = _run_probe(tmp_path, library, exe, keep=16 << 20, keep_each=1000)  # the start of every result
    assert [r.kept for r in each.results] == [1000] * 5 + [256, 1000, 768, 1000]  # 2D: across its rows
    assert each.kept_bytes(each.results[0]) == first[:1000] and len(each.kept_bytes(each.results[5])) == 256
    wrong = _run_probe(tmp_path, library, exe, "wrong")
    differs = [a.source for a, b in zip(t.results, wrong.results, strict=True) if a.hash != b.hash]
    assert differs == ["cudaMemcpyFromSymbol"]  # one element of one result; the program still said PASS


@pytest.mark.gpu
def test_validation_and_timing_of_a_program_that_writes_no_file(tmp_path, library):
    from runner.base.config import load_config
    from runner.evaluation.measure import time_interleaved, validate

    base, wrong = tmp_path / "probe", tmp_path / "probe-wrong"
    for exe, flag in ((base, "0"), (wrong, "1")):
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", f"-DPROBE_WRONG={flag}", "-o", str(exe), str(PROBE)], check=True)
    (tmp_path / "optimas.yml").write_text(
        f"app:\n  workdir: {tmp_path}\n  run: '{{exe}}'\n  configurations: [default]\n  seeds: [1]\n"
        "evaluation:\n  timed_runs: 5\n  timing_precision: 0\n")
    lc = load_config(tmp_path / "optimas.yml")
    same = validate(lc, base, base, tmp_path / "v1")
    assert same.passed and same.cases[0].modes == ["gpu-results:bitwise"]
    caught = validate(lc, base, wrong, tmp_path / "v2")
    assert not caught.passed and caught.cases[0].status == "mismatch"
    assert caught.cases[0].detail.startswith("GPU result 6 (cudaMemcpyFromSymbol, 256 bytes) differs from the "
                                             "baseline's, from byte ")
    t = time_interleaved(lc, base, base, kernels={"spin(float *, int, int)": ""})
    assert t.metric == "traced_kernel_ms" and len(t.baseline) == 5 and t.kernels == ["spin"]
    assert set(t.per_kernel) == {"spin"} and abs(t.result.improvement) < 0.05


def _process(tmp: Path, name: str, values: list[np.ndarray], kept: bool = True, pid: int = 1):
    """A process's trace as the reader returns it, with its results' bytes kept in a .bin file."""
    from runner.tracing.trace import DeviceResult, ProcessTrace

    blobs = [v.tobytes() for v in values]
    bin_path = tmp / f"{name}.bin"
    bin_path.write_bytes(b"".join(blobs) if kept else b"")
    results, offset = [], 0
    for i, b in enumerate(blobs):
        digest = f"{hash(b) & (2**64 - 1):016x}"  # any stable function of the bytes will do here
        results.append(DeviceResult(seq=i, source="cudaMemcpy", bytes=len(b), hash=digest, offset=offset,
                                    kept=len(b) if kept else 0))
        offset += len(b)
    return ProcessTrace(path=tmp / f"{name}.tsv", pid=pid, cupti_version=130001, results=results, complete=True)


def test_gpu_results_compared_bitwise_and_within_tolerance(tmp_path: Path):
    from runner.base.config import GpuResultsSpec
    from runner.validation.compare import compare_results

    a = np.linspace(0, 1, 100, dtype=np.float32)
    close = a.copy()
    close[7] = np.nextafter(close[7], np.float32(2))
    base = [_process(tmp_path, "base", [a, a[:10]])]
    spec = GpuResultsSpec()
    assert compare_results([_process(tmp_path, "same", [a, a[:10]])], base, spec, "bitwise") == (True, "", None)
    near = [_process(tmp_path, "near", [close, a[:10]])]
    assert compare_results(near, base, spec, "bitwise") == (
        False, "GPU result 1 (cudaMemcpy, 400 bytes) differs from the baseline's, from byte 28: read as float32, "
        f"value 7 is {close[7]!s} where the baseline has {a[7]!s}; 1 of 100 values differ, by 1 to 1 ulps", 1)
    assert compare_results([_process(tmp_path, "near-unkept", [close, a[:10]], kept=False)], base, spec,
                           "bitwise") == (False, "GPU result 1 (cudaMemcpy, 400 bytes) differs from the baseline's "
                                          "(none of its bytes were kept to say where)", None)
    wrong = a.copy()
    wrong[50:] = 0
    ok, why, max_ulps = compare_results([_process(tmp_path, "wrong", [wrong, a[:10]])], base, spec, "bitwise")
    assert max_ulps is not None and max_ulps > 1_000_000  # 0.0 for 0.5: not rounding
    assert why.startswith("GPU result 1 (cudaMemcpy, 400 bytes) differs from the baseline's, from byte 200: read as "
                          "float32, value 50 is 0.0 where the baseline has 0.5050505; 50 of "
                          "100 values differ, by ")
    assert compare_results(near, base, GpuResultsSpec(compare="tolerance", ulps=1), "tolerance") == (True, "", None)
    ok, why, _ = compare_results(near, base, GpuResultsSpec(compare="tolerance", rtol=1e-9), "tolerance")
    assert not ok and why.startswith("GPU result 1 (cudaMemcpy, 400 bytes): section 0, value 7")
    unkept = [_process(tmp_path, "unkept", [close, a[:10]], kept=False)]
    ok, why, _ = compare_results(unkept, base, GpuResultsSpec(compare="tolerance", ulps=1), "tolerance")
    assert not ok and "only 0 of its bytes were kept" in why
    assert compare_results([_process(tmp_path, "short", [a])], base, spec, "bitwise") == (
        False, "1 results read back from the GPU where the baseline reads 2", None)
    assert compare_results([_process(tmp_path, "size", [a, a[:11]])], base, spec, "bitwise") == (
        False, "GPU result 2 (cudaMemcpy) has 44 bytes where the baseline's has 40", None)


def test_an_original_whose_results_vary_by_rounding_judges_candidates_within_rounding(tmp_path: Path):
    """Float atomics make the original's own bits vary run to run: candidates are then held within
    ROUNDING_ULPS on the results it varies, and bit for bit on the ones it repeats."""
    from runner.validation.compare import (
        ROUNDING_ULPS,
        RoundingSpread,
        original_spread,
        repeated_but_different,
        rounding_type,
        rounding_ulps,
        widened,
        within_rounding,
    )

    sums = np.linspace(1, 100, 64, dtype=np.float32)
    other_order = sums.copy()
    other_order[[3, 10]] = np.nextafter(other_order[[3, 10]], np.float32(200))
    y = np.arange(1000, dtype=np.float32)
    first = [_process(tmp_path, "first", [sums, y])]
    second = [_process(tmp_path, "second", [other_order, y])]
    spread = original_spread(first, second)
    assert spread == RoundingSpread({1: "float32"}, 1)
    assert original_spread(first, [_process(tmp_path, "same", [sums, y])]) == RoundingSpread({}, 0)

    def candidate(name: str, a: np.ndarray, b: np.ndarray = y):
        return [_process(tmp_path, name, [a, b])]

    rounded = sums.copy()
    rounded[5] = np.nextafter(np.nextafter(rounded[5], np.float32(0)), np.float32(0))  # 2 ulps below
    assert within_rounding(candidate("rounded", rounded), first, spread) == (True, "", 2)
    far = sums.copy()
    far[5] *= np.float32(1.01)  # 1% off: far more than rounding
    ok, why, ulps = within_rounding(candidate("far", far), first, spread)
    assert not ok and ulps is not None and ulps > ROUNDING_ULPS
    assert why.startswith("GPU result 1 (cudaMemcpy, 256 bytes) differs from the baseline's by more than rounding, "
                          "from byte 20: read as float32, value 5 is ")
    wrong_y = y.copy()
    wrong_y[7] = np.nextafter(wrong_y[7], np.float32(1e9))  # one ulp, but on a result the original repeats
    ok, why, _ = within_rounding(candidate("wrong-y", sums, wrong_y), first, spread)
    assert not ok and why.startswith("GPU result 2 (cudaMemcpy, 4000 bytes) differs from the baseline's, from byte 28")
    assert why.endswith("where the original repeats it bit for bit")
    # ... unless a third run of the original varies it too (a float atomic's total can come out the
    # same twice by chance): the evaluation runs the original again for exactly those results
    # (HeCBench's jacobi reads its error, a float atomicAdd total, back every iteration)
    error = np.array([1.5509841], dtype=np.float32)
    moved = np.nextafter(error, np.float32(2))
    first_e = [_process(tmp_path, "e-first", [sums, error])]
    spread_e = original_spread(first_e, [_process(tmp_path, "e-second", [other_order, error])])
    assert spread_e == RoundingSpread({1: "float32"}, 1)
    cand_e = [_process(tmp_path, "e-candidate", [sums, moved])]
    assert repeated_but_different(cand_e, first_e, spread_e) == {2}
    assert repeated_but_different(candidate("rounded", rounded), first, spread) == set()
    assert not within_rounding(cand_e, first_e, spread_e).ok
    third = original_spread(first_e, [_process(tmp_path, "e-third", [sums, moved])])
    assert third == RoundingSpread({2: "float32"}, 1)
    assert within_rounding(cand_e, first_e, widened(spread_e, third)) == (True, "", 1)
    assert within_rounding([_process(tmp_path, "fewer", [sums])], first, spread) == (
        False, "1 results read back from the GPU where the baseline reads 2", None)

    # what reads as more than rounding, or cannot be read, is said so: the case fails with advice
    assert original_spread(first, candidate("far-orig", far)) == (
        "GPU result 1 (cudaMemcpy) differs by more than rounding")
    unkept = [_process(tmp_path, "unkept", [other_order, y], kept=False)]
    assert original_spread(first, unkept) == (
        "only 0 of the 256 bytes of GPU result 1 were kept to compare")
    # counts that vary (integers read as floats are subnormal) are not rounding
    counts = np.array([5, 6, 7, 8], dtype=np.int32)
    assert rounding_ulps(counts.tobytes(), (counts + 1).tobytes(), "float32") is None
    # double data is read as doubles: as float32 pairs, a change of 1e-3 would pass as rounding of
    # their high words
    d = np.linspace(1, 2, 8)
    d2, off = d.copy(), d.copy()
    d2[1] = np.nextafter(d2[1], 3.0)
    off.view(np.uint64)[1] += np.uint64(1000 << 32)  # its high word 1000 up: about 1e-3 larger
    assert 8e-4 < off[1] / d[1] - 1 < 1e-3
    assert rounding_type(d.tobytes(), d2.tobytes()) == ("float64", 1)
    assert rounding_ulps(d.tobytes(), off.tobytes(), "float32") is not None  # the trap
    assert rounding_type(d.tobytes(), off.tobytes()) is None
    assert original_spread([_process(tmp_path, "d1", [d])], [_process(tmp_path, "d2", [d2])]) == (
        RoundingSpread({1: "float64"}, 1))
    # float32 data reads as float32 (as doubles, a change in an odd-numbered value is 2**32 ulps or
    # more); where only odd-numbered values differ it could be doubles' high words: not taken
    assert rounding_type(sums.tobytes(), other_order.tobytes()) == ("float32", 1)
    odd = sums.copy()
    odd[3] = other_order[3]
    assert rounding_type(sums.tobytes(), odd.tobytes()) is None
    nan = np.array([np.nan, 1.0], dtype=np.float32)
    assert rounding_ulps(nan.tobytes(), np.array([np.nan, 1.0], np.float32).tobytes(), "float32") == 0
    assert rounding_ulps(nan.tobytes(), np.array([2.0, 1.0], np.float32).tobytes(), "float32") is None


def test_two_runs_of_the_original_compared_for_the_prompt(tmp_path: Path):
    from runner.validation.compare import results_variation

    sums = np.linspace(1, 100, 64, dtype=np.float32)
    rounded = sums.copy()
    rounded[[2, 5]] = np.nextafter(rounded[[2, 5]], np.float32(0))
    far = sums * np.float32(1.5)
    first = [_process(tmp_path, "first", [sums])]
    assert results_variation(first, [_process(tmp_path, "same", [sums])]).varies is False
    r = results_variation(first, [_process(tmp_path, "rounded", [rounded])])
    assert r.varies and r.rounding_ulps == 1 and r.why.startswith("GPU result 1 (cudaMemcpy, 256 bytes) differs "
                                                                 "from its first run's, from byte 8")
    r = results_variation(first, [_process(tmp_path, "far", [far])])
    assert r.varies and r.rounding_ulps is None and r.why.endswith("; GPU result 1 (cudaMemcpy) differs by more "
                                                                   "than rounding")


def test_validation_summary_says_when_results_were_held_within_rounding():
    from runner.evaluation.measure import CaseResult, Validation

    exact = CaseResult(configuration="small", seed=1, status="pass", modes=["gpu-results:bitwise"])
    rounded = CaseResult(configuration="large", seed=1, status="pass", modes=["gpu-results:rounding"], original_ulps=3)
    assert Validation(passed=True, cases=[exact]).summary() == "passed on all 1 configuration/seed pairs"
    assert Validation(passed=True, cases=[exact, rounded]).summary() == (
        "passed on all 2 configuration/seed pairs (on 1 of them GPU results within 1024 ulps, not bit for bit: the "
        "original's own vary run to run, by up to 3 ulps)")


def test_timer_and_gpu_results_defaults_follow_the_config(tmp_path: Path):
    from runner.base.config import ConfigError, load_config
    from runner.evaluation.measure import results_mode, timer_of
    from runner.scan.cuda_source import kernel_key

    def cfg(text: str):
        (tmp_path / "c.yml").write_text(text)
        return load_config(tmp_path / "c.yml")

    plain = cfg("app:\n  run: '{exe}'\n")
    assert timer_of(plain) == "tracer" and results_mode(plain) == "bitwise"
    printed = cfg("app:\n  run: '{exe}'\n  kernel_time_regex: 'ms=([0-9.]+)'\n  outputs: [{path: out.bin}]\n")
    assert timer_of(printed) == "app" and results_mode(printed) == "off"
    with pytest.raises(ConfigError, match="evaluation.timer: 'app' reads the time the program prints"):
        cfg("evaluation:\n  timer: app\n")
    # ncu and the tracer's demangler write qualifiers differently; the kernel is the same
    assert kernel_key("void ns::k<int, 4>(const float *, int)") == kernel_key("void ns::k<int, 4>(float const*, int)")
    assert kernel_key("matmul(const float *, float *, int)") == "matmul"
    # a program that writes no file can still be validated and timed: by its GPU results
    from runner.base.gpu import can_run_here

    only_prints = cfg("app:\n  build: 'true {exe}'\n  run: '{exe}'\n")
    assert can_run_here(only_prints) == (True, "")  # its build is not nvcc's: no GPU is asked for
    unchecked = cfg("app:\n  build: 'true {exe}'\n  run: '{exe}'\n  gpu_results: {compare: 'off'}\n")
    assert can_run_here(unchecked) == (False, "nothing would validate a candidate: declare app.outputs, or let the "
                                              "tracer compare the program's GPU results (app.gpu_results.compare), "
                                              "or check its output (app.stdout)")
    printed = cfg("app:\n  build: 'true {exe}'\n  run: '{exe}'\n  gpu_results: {compare: 'off'}\n"
                  "  stdout: {pass_pattern: PASS}\n")
    assert can_run_here(printed) == (True, "")


def test_traced_times_need_complete_records(tmp_path: Path):
    from runner.evaluation.measure import EvaluationError, traced_kernel_ms
    from runner.tracing.trace import KernelLaunch, ProcessTrace

    def launch(name: str, ns: int) -> KernelLaunch:
        return KernelLaunch(kernel=name, mangled=name, start_ns=0, end_ns=ns, grid=(1, 1, 1), block=(1, 1, 1),
                            registers=8, static_shared=0, dynamic_shared=0, stream=7, device=0, context=1,
                            correlation=1)

    t = ProcessTrace(path=tmp_path / "t.tsv", pid=1, cupti_version=1, complete=True,
                     launches=[launch("k(float *)", 2_000_000), launch("k(float*)", 1_000_000), launch("j()", 5)])
    assert traced_kernel_ms([t], ["app"]) == {"k": 3.0, "j": 5e-6}
    with pytest.raises(EvaluationError, match="the tracer wrote no record for app"):
        traced_kernel_ms([], ["app"])
    with pytest.raises(EvaluationError, match="CUPTI dropped 3 kernel records"):
        traced_kernel_ms([t.model_copy(update={"dropped": 3})], ["app"])
    with pytest.raises(EvaluationError, match="saw no kernel execution"):
        traced_kernel_ms([t.model_copy(update={"launches": []})], ["app"])


def test_a_trace_recorded_on_the_h200_reads_as_the_probe_ran():
    """tests/fixtures/tracer/probe-h200: the probe run once under the tracer on the H200 with
    OPTIMAS_TRACE_KEEP_BYTES=4096 (command in benchmarks/results/tracer-2026-12-03.md)."""
    from runner.profiles.readers.trace import TraceReader

    h200_trace = FIXTURES / "tracer" / "probe-h200"
    (t,) = read_traces(h200_trace)
    assert t.complete and t.pid == 1114 and t.cupti_version == 130001 and t.dropped == 0
    assert [r.source for r in t.results] == ["cudaMemcpy", "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpyAsync",
                                             "cudaMemcpyAsync", "cudaMemcpyFromSymbol", "cudaMemcpy2D",
                                             "cudaMemcpy3D", "managed"]
    assert [r.kept for r in t.results] == [4096] + [0] * 8  # the budget went to the first result
    first = (np.arange(1024, dtype=np.float32) * np.float32(2)).tobytes()
    assert t.kept_bytes(t.results[0]) == first
    spin = [k for k in t.launches if k.kernel == "spin(float*, int, int)" and not k.graph]
    assert len(spin) == 2 and spin[0].stream != spin[1].stream
    assert spin[1].start_ns < spin[0].end_ns  # the two streams' kernels overlapped on the GPU
    assert {k.kernel for k in t.launches if k.graph} == {"spin(float*, int, int)", "void scale<float, 1>(float*, int)"}
    launches = TraceReader().read(h200_trace).launches
    assert len(launches) == 10 and launches["block"].iloc[0] == "(256, 1, 1)"
    assert launches["duration_ns"].sum() == sum(k.duration_ns for k in t.launches)


@pytest.mark.gpu
def test_planted_faults_that_the_programs_own_check_misses_are_caught(tmp_path, monkeypatch):
    """tests/fixtures/tracer/planted.cu prints PASS for every variant; its GPU results tell them apart."""
    from runner.base.config import load_config
    from runner.evaluation.measure import validate

    exes = {}
    for v in ("BASE", "WRONG", "RACE", "REORDER", "SKIP", "NOGPU"):
        exes[v] = tmp_path / v.lower()
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", f"-DVARIANT={v}", "-o", str(exes[v]),
                        str(FIXTURES / "tracer" / "planted.cu")], check=True)

    def config(extra: str = ""):
        (tmp_path / "optimas.yml").write_text(
            f"app:\n  workdir: {tmp_path}\n  run: '{{exe}}'\n  configurations: [default]\n  seeds: [1, 2]\n{extra}")
        return load_config(tmp_path / "optimas.yml")

    bitwise = config()
    seen = {v: validate(bitwise, exes["BASE"], exes[v], tmp_path / f"v-{v}") for v in exes}
    assert seen["BASE"].passed
    for v in ("WRONG", "SKIP"):
        assert seen[v].cases[0].status == "mismatch"
        assert seen[v].cases[0].detail.startswith("GPU result 2 (cudaMemcpy, 4194304 bytes) differs from the "
                                                  "baseline's, from byte ")
    assert seen["RACE"].cases[0].status in ("nondeterministic", "mismatch")  # float atomics: the bits vary
    # no CUDA process to trace at all: still compared, as reading back nothing
    assert (seen["NOGPU"].cases[0].status, seen["NOGPU"].cases[0].detail) == (
        "mismatch", "0 results read back from the GPU where the baseline reads 2")
    # a different summation order: the same sums, rounded otherwise, a few ulps apart
    assert seen["REORDER"].cases[0].detail.startswith("GPU result 1 (cudaMemcpy, 16384 bytes) differs from the "
                                                      "baseline's, from byte ")
    lo, hi = map(int, re.search(r"by (\d+) to (\d+) ulps$", seen["REORDER"].cases[0].detail).groups())
    assert 1 <= lo <= hi < 10_000  # rounding, where WRONG's values are off by far more
    tolerant = config("  gpu_results: {compare: tolerance, rtol: 1.0e-5}\n")
    assert validate(tolerant, exes["BASE"], exes["REORDER"], tmp_path / "t-reorder").passed  # same sums, rounded
    assert not validate(tolerant, exes["BASE"], exes["SKIP"], tmp_path / "t-skip").passed
    # an original whose own bits vary (float atomics): candidates are held within rounding of it on
    # the result it varies, and bit for bit on the one it repeats
    racy = {v: validate(bitwise, exes["RACE"], exes[v], tmp_path / f"r-{v}") for v in ("BASE", "REORDER", "WRONG",
                                                                                      "SKIP")}
    for v in ("BASE", "REORDER"):
        case = racy[v].cases[0]
        assert racy[v].passed and case.modes == ["gpu-results:rounding"], case
        assert 1 <= case.original_ulps <= 1024 and "within 1024 ulps" in racy[v].summary()
    for v in ("WRONG", "SKIP"):
        case = racy[v].cases[0]
        assert case.status == "mismatch" and case.detail.startswith("in the candidate's run 1, GPU result 2 "
                                                                    "(cudaMemcpy, 4194304 bytes) differs"), case
        assert "where the original repeats it bit for bit" in case.detail
    # results longer than the bytes kept to describe a mismatch: both programs run again, kept whole
    monkeypatch.setattr("runner.evaluation.measure.MISMATCH_EACH", 4096)
    racy["REORDER-cut"] = validate(bitwise, exes["RACE"], exes["REORDER"], tmp_path / "r-cut")
    assert racy["REORDER-cut"].passed and racy["REORDER-cut"].cases[0].original_ulps is not None
    print({v: (s.cases[0].status, s.cases[0].detail) for v, s in {**seen, **racy}.items()})  # recorded with -s


@pytest.mark.gpu
def test_profiling_finds_out_whether_the_programs_results_repeat(tmp_path):
    """Before the model is asked: the profiling agent runs the program twice under the tracer and
    writes how its GPU results compare (float atomics in RACE vary by rounding; BASE repeats)."""
    import json
    import sys

    from conftest import REPO

    shutil.copy(FIXTURES / "tracer" / "planted.cu", tmp_path / "planted.cu")
    seen = {}
    for variant in ("RACE", "BASE"):
        cfg = tmp_path / f"{variant}.yml"
        cfg.write_text(f"app:\n  name: planted\n  workdir: {tmp_path}\n  sources: [planted.cu]\n"
                       f"  build: 'nvcc -O2 -arch={{arch}} {{lineinfo}} -DVARIANT={variant} -o {{exe}} planted.cu'\n"
                       "  run: '{exe}'\n  configurations: [default]\n")
        runs = tmp_path / f"runs-{variant}"
        r = subprocess.run([sys.executable, "-m", "runner.cli", "profile", "--config", str(cfg), "--runs-dir",
                            str(runs)], cwd=REPO, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        (run,) = [p for p in runs.iterdir() if p.is_dir()]
        seen[variant] = json.loads((run / "profile" / "gpu_results.json").read_text())
        assert not list((run / "profile" / "trace").glob("*.bin"))  # the kept bytes are not left behind
    assert seen["BASE"] == {"varies": False, "rounding_ulps": None, "why": ""}
    assert seen["RACE"]["varies"] and 1 <= seen["RACE"]["rounding_ulps"] <= 1024, seen["RACE"]
    assert seen["RACE"]["why"].startswith("GPU result 1 (cudaMemcpy, 16384 bytes) differs from its first run's")
    print(seen)  # recorded with -s


def test_hot_kernels_from_a_traced_run_match_ncus_and_are_spelled_as_the_profile_spells_them():
    """tests/fixtures/tracer/h200-probe-app: the bundled example app (examples/h200-probe) traced on
    the H200 with config.yml's run command; its recorded ncu exports are the example's profiles."""
    from conftest import REPO

    from runner.analysis.stage import analyze
    from runner.base.config import load_config

    lc = load_config(REPO / "config.yml")
    profiles = REPO / "examples" / "h200-probe" / "profiles"
    recorded = {"raw": [profiles / "probe_full_raw_base.csv"], "source": [profiles / "probe_full_source_cuda_sass.csv"]}
    by_ncu = analyze(lc, recorded)
    by_trace = analyze(lc, {**recorded, "timing": [FIXTURES / "tracer" / "h200-probe-app"]})
    assert [k.kernel for k in by_trace.kernels] == [k.kernel for k in by_ncu.kernels] == [
        "matmul(const float *, const float *, float *, int)",
        "triad(float *, const float *, const float *, float, int)",
        "accuracy_kernel(int, int, int, const float *, const int *, int *)"]
    assert [k.hot for k in by_trace.kernels] == [True, False, False]
    assert [k.launches for k in by_trace.kernels] == [1, 3, 1]
    for traced, profiled in zip(by_trace.kernels, by_ncu.kernels, strict=True):  # two runs: within 7%
        assert abs(traced.total_ns / profiled.total_ns - 1) < 0.07
    assert [e.id for e in by_trace.evidence] == [e.id for e in by_ncu.evidence]


FAULT = FIXTURES / "tracer" / "fault.cu"


def test_a_program_whose_kernels_fault_is_refused_with_what_failed(tmp_path: Path):
    """A record file in the tracer's format (written here by hand) of a process whose kernel faulted:
    its launch never finished and the copy after it failed; the program exited normally."""
    from runner.base.errors import ProfilingError
    from runner.profiling.agent import _refuse_failed_gpu_work
    from runner.tracing.trace import device_fault

    path = tmp_path / "trace-42.tsv"
    path.write_text("# optimas-trace 1\nP\t42\t130001\t0\nN\t0\t_Z4fillPfix\tfill(float*, int, long long)\n"
                    "K\t0\t0\t0\t256,1,1\t256,1,1\t16\t0\t0\t7\t0\t1\t5\t0\n"
                    "E\t0\tcudaMemcpy\t700\nE\t0\tcudaDeviceSynchronize\t700\nX\t1\t0\t0\n")
    trace = read_trace(path)
    assert [(e.api, e.code) for e in trace.errors] == [("cudaMemcpy", 700), ("cudaDeviceSynchronize", 700)]
    said = device_fault([trace])
    assert said == ("cudaMemcpy returned cudaErrorIllegalAddress (700: a kernel accessed memory out of its "
                    "bounds) in process 42; kernels launched: fill (1 of 1 launches never finished)")
    with pytest.raises(ProfilingError, match=r"GPU work failed in its traced run: cudaMemcpy returned "
                                             r"cudaErrorIllegalAddress.*compute-sanitizer /x/app 8"):
        _refuse_failed_gpu_work([trace], ["/x/app", "8"])
    # an error that is the call's own (an invalid argument) says nothing about the GPU's work
    ok = trace.model_copy(update={"errors": [trace.errors[0].model_copy(update={"code": 1})],
                                  "launches": [trace.launches[0].model_copy(update={"end_ns": 900})]})
    assert device_fault([ok]) is None
    _refuse_failed_gpu_work([ok], ["/x/app"])
    # a launch the GPU refused ran nothing: whatever its code, that is the GPU's work failing
    refused = ok.model_copy(update={"errors": [trace.errors[0].model_copy(update={"api": "cudaLaunchKernel",
                                                                                   "code": 9})]})
    assert device_fault([refused], launches=True).startswith(
        "cudaLaunchKernel returned cudaErrorInvalidConfiguration (9: the grid or block is out of the GPU's limits")
    assert device_fault([refused]) is None  # the original may try a launch and fall back: not refused for it
    # no watched call after the fault: the unfinished launches alone say it
    silent = trace.model_copy(update={"errors": []})
    with pytest.raises(ProfilingError, match="no kernel launch finished"):
        _refuse_failed_gpu_work([silent], ["/x/app"])


@pytest.mark.gpu
def test_a_kernel_that_faults_in_a_program_that_checks_nothing_is_caught(tmp_path, library):
    from runner.base.config import load_config
    from runner.evaluation.measure import validate
    from runner.tracing.trace import device_fault

    good, bad = tmp_path / "good", tmp_path / "bad"
    for exe, flag in ((good, "0"), (bad, "1")):
        subprocess.run(["nvcc", "-O2", "-arch=sm_90", f"-DFAULT={flag}", "-o", str(exe), str(FAULT)], check=True)
    traces = tmp_path / "traces"
    traces.mkdir()
    r = run_process([str(bad)], tmp_path, 120, env=child_environment(trace_environment(library, traces)))
    assert r.returncode == 0 and "done" in r.output, r.output  # the program itself sees nothing wrong
    (t,) = read_traces(traces)
    assert t.errors and t.errors[0].api == "cudaMemcpy" and t.errors[0].sticky, t.errors
    assert "cudaErrorIllegalAddress" in device_fault([t]) or "cudaErrorLaunchFailure" in device_fault([t])
    (tmp_path / "optimas.yml").write_text(
        f"app:\n  workdir: {tmp_path}\n  run: '{{exe}}'\n  configurations: [default]\n  seeds: [1]\n")
    lc = load_config(tmp_path / "optimas.yml")
    caught = validate(lc, good, bad, tmp_path / "v1")
    assert caught.cases[0].status == "failed" and "the candidate's GPU work failed in its run 1" in \
        caught.cases[0].detail, caught.cases[0]
    refused = validate(lc, bad, good, tmp_path / "v2")
    assert refused.cases[0].status == "baseline-failed" and "original program's GPU work failed" in \
        refused.cases[0].detail, refused.cases[0]
    # a launch configuration the GPU refuses (a candidate's launch edit): the launch ran nothing
    wide = tmp_path / "wide"
    subprocess.run(["nvcc", "-O2", "-arch=sm_90", "-DFAULT=0", "-DBLOCK=2048", "-o", str(wide), str(FAULT)],
                   check=True)
    caught = validate(lc, good, wide, tmp_path / "v3")
    # (CUDA 13's runtime on an H100 says cudaErrorInvalidValue for a block of 2048 threads)
    assert caught.cases[0].status == "failed" and ("cudaErrorInvalidConfiguration" in caught.cases[0].detail or
                                                   "more than 1024 threads per block" in caught.cases[0].detail), \
        caught.cases[0]


def test_files_the_code_writes_are_read_only_up_to_a_size(tmp_path):
    """The tracer's records, the shim's records and the declared outputs are written by the code
    under test; a sparse file of gigabytes costs no disk but was read whole into the worker (an
    attacker's pass). Each is refused past its size, naming the file, before any of it is read."""
    import os

    from runner.base.workspace import FileTooLargeError, read_capped
    from runner.toolchain.compiler import RECORDS_LIMIT, read_records
    from runner.tracing.trace import TRACE_LIMIT, TraceFormatError, read_trace

    trace, records = tmp_path / "trace-1.tsv", tmp_path / "nvcc.jsonl"
    for path, size in ((trace, TRACE_LIMIT + 1), (records, RECORDS_LIMIT + 1)):
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: no disk, all of it in memory if read
    assert os.stat(trace).st_blocks == 0
    with pytest.raises(TraceFormatError, match=r"trace-1.tsv \(a trace\) is \d+ bytes; Optimas reads at most"):
        read_trace(trace)
    with pytest.raises(FileTooLargeError, match="the nvcc shim's records"):
        read_records(records)
    from runner.tracing.trace import MAX_TRACES, read_traces

    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_TRACES + 1):
        (many / f"trace-{i}.tsv").write_text("# optimas-trace 1\n")
    with pytest.raises(TraceFormatError, match=f"{MAX_TRACES + 1} traces of .*at most {MAX_TRACES}"):
        read_traces(many)
    (tmp_path / "small").write_bytes(b"abc")
    assert read_capped(tmp_path / "small", 3, "x") == b"abc"
    with pytest.raises(FileTooLargeError):
        read_capped(tmp_path / "small", 2, "x")
