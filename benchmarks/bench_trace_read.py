"""Reading the CUPTI tracer's record file of a program with many launches (issue #44 item 9): the
time and peak memory of (a) read_traces, (b) the timing path of `optimas analyze`/`optimas prompt`
up to hot-kernel selection (read_timing, in_profile_spelling, select_hot_kernels) and (c) what the
profiling agent does with a traced run (read_traces, its launch table, kernel symbols and the
launch configurations of the counter target).

Each measurement runs in a child process of its own; its peak RSS comes from os.wait4 (that child's
rusage alone), its wall time is the stage's own (after imports), measured in the child.

Usage: python3 benchmarks/bench_trace_read.py [--sizes 36042,1000000] [--stages read,prompt,agent]
       [--label after] [--out benchmarks/results/trace-read-2026-12-07.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

STAGES = ("read", "prompt", "agent")
# Kernels of a training step, as the C++ runtime demangles them (long template names, like PyTorch's).
KERNELS = [
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
     "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"),
    ("_Z13gemm_tf32_128ILi128ELi128ELi32EEvPKfS1_Pfiii",
     "void gemm_tf32_128<128, 128, 32>(float const*, float const*, float*, int, int, int)"),
    ("_Z12layer_norm_fILi1024EEvPKfPfS1_S1_if", "void layer_norm_f<1024>(float const*, float*, float const*, "
     "float const*, int, float)"),
    ("_Z7softmaxPKfPfii", "softmax(float const*, float*, int, int)"),
    ("_Z9adam_stepPfS_S_PKfffffi", "adam_step(float*, float*, float*, float const*, float, float, float, float, int)"),
    ("_Z7reduce7IfLj256ELb1EEvPKT_PS0_j", "void reduce7<float, 256u, true>(float const*, float*, unsigned int)"),
    ("_Z9gelu_fwdPKfPfi", "gelu_fwd(float const*, float*, int)"),
    ("_Z9gelu_bwdPKfS0_Pfi", "gelu_bwd(float const*, float const*, float*, int)"),
    ("_Z14dropout_maskedPKfPfPKhfi", "dropout_masked(float const*, float*, unsigned char const*, float, int)"),
    ("_Z11copy_kernelPKfPfm", "copy_kernel(float const*, float*, unsigned long)"),
    ("_Z13embedding_fwdPKiPKfPfii", "embedding_fwd(int const*, float const*, float*, int, int)"),
    ("_Z17cross_entropy_fwdPKfPKiPfii", "cross_entropy_fwd(float const*, int const*, float*, int, int)"),
]
# Per kernel: (weight in the launch mix, mean duration in ns, launch shapes (grid, block, dynamic smem)).
MIX = [(30, 2_000, [((256, 1, 1), (128, 1, 1), 0)]),
       (20, 180_000, [((64, 32, 1), (256, 1, 1), 49152), ((32, 32, 1), (256, 1, 1), 49152),
                      ((16, 64, 1), (256, 1, 1), 49152)]),
       (8, 25_000, [((4096, 1, 1), (256, 1, 1), 0)]),
       (8, 30_000, [((4096, 1, 1), (128, 1, 1), 2048), ((2048, 1, 1), (128, 1, 1), 2048)]),
       (6, 60_000, [((1024, 1, 1), (256, 1, 1), 0)]),
       (6, 15_000, [((512, 1, 1), (256, 1, 1), 1024), ((128, 1, 1), (256, 1, 1), 1024)]),
       (6, 9_000, [((8192, 1, 1), (256, 1, 1), 0)]),
       (6, 11_000, [((8192, 1, 1), (256, 1, 1), 0)]),
       (4, 7_000, [((8192, 1, 1), (256, 1, 1), 0)]),
       (3, 40_000, [((65535, 1, 1), (256, 1, 1), 0)]),
       (2, 5_000, [((512, 1, 1), (128, 1, 1), 0)]),
       (1, 12_000, [((64, 1, 1), (1024, 1, 1), 4096)])]
STREAMS = [7, 13, 14, 15]


def write_trace(path: Path, launches: int, pid: int = 4242, seed: int = 1) -> int:
    """A record file as native/optimas_tracer.cpp writes it for a program of `launches` kernel
    executions on 4 streams (each kernel named once, before its first launch; some copies back to
    the host; the X line of a normal exit). Returns its size in bytes."""
    rng = random.Random(seed)
    weights = [m[0] for m in MIX]
    f = path.open("w", encoding="utf-8")
    out = ["# optimas-trace 1", f"P\t{pid}\t130001\t0"]
    named: set[int] = set()
    clock = 1_733_539_200_000_000_000
    copies = 0
    for i in range(launches):
        k = rng.choices(range(len(KERNELS)), weights)[0]
        if k not in named:
            named.add(k)
            out.append(f"N\t{k}\t{KERNELS[k][0]}\t{KERNELS[k][1]}")
        grid, block, dyn = rng.choice(MIX[k][2])
        duration = max(1, int(rng.gauss(MIX[k][1], MIX[k][1] / 10)))
        clock += rng.randrange(500, 3_000)
        out.append(f"K\t{k}\t{clock}\t{clock + duration}\t{grid[0]},{grid[1]},{grid[2]}\t"
                   f"{block[0]},{block[1]},{block[2]}\t{rng.choice((32, 40, 64, 128))}\t{rng.choice((0, 4096))}\t"
                   f"{dyn}\t{rng.choice(STREAMS)}\t0\t1\t{1000 + 3 * i}\t0")
        if i % 5000 == 4999:
            copies += 1
            out.append(f"D\t{copies}\tcudaMemcpyAsync\t4096\t{rng.getrandbits(64):016x}\t0\t0")
            f.write("\n".join(out) + "\n")
            out.clear()
    out.append(f"X\t{launches}\t{copies}\t0")
    f.write("\n".join(out) + "\n")
    f.close()
    return path.stat().st_size


def _profiled(launches) -> "object":  # noqa: ANN001 (a DataFrame; pandas is imported in the child)
    """A profile's launch table as ncu names the kernels (its demangler spells them otherwise), one
    launch of each of the three longest kernels."""
    import pandas as pd

    from runner.profiles.model import LAUNCH_COLUMNS, MANGLED

    rows = [{"launch_id": str(i), "process_id": "1", "process_name": "app", "kernel": name.replace("const*", "const *"),
             MANGLED: mangled, "block": "(256, 1, 1)", "grid": "(1, 1, 1)", "device": "0", "cc": "9.0",
             "duration_ns": 1.0, "origin": "profile"}
            for i, (mangled, name) in enumerate(KERNELS[:3])]
    return pd.DataFrame(rows, columns=[*LAUNCH_COLUMNS, MANGLED])


def _stage(stage: str, folder: Path) -> dict:
    """One stage on the trace folder, in this process: what it found (to check the stages agree)."""
    if stage == "read":
        from runner.tracing.trace import read_traces

        traces = read_traces(folder)
        return {"launches": sum(len(t.launches) for t in traces)}
    if stage == "prompt":
        from runner.analysis.hot import in_profile_spelling, select_hot_kernels
        from runner.profiles.readers import read_timing

        timing = read_timing([folder]).launches
        hot = select_hot_kernels(in_profile_spelling(timing, _profiled(timing)), 0.8)
        return {"launches": len(timing), "hot": [k.kernel for k in hot if k.hot]}
    from runner.profiles.counter_plan import distinct_configurations
    from runner.profiles.readers.trace import profile_of
    from runner.tracing.trace import Launches, device_fault, read_traces

    traces = read_traces(folder)  # as the profiling agent's _traced_timing and _refuse_failed_gpu_work do
    device_fault(traces)
    all(bool((t.table().duration_ns() <= 0).all()) for t in traces)
    launches = Launches.concat([t.table() for t in traces])
    mangled = launches.symbols()
    table = profile_of(traces, str(folder)).launches
    target = KERNELS[1][1]  # the counter target (counter_runs)
    return {"launches": len(table), "kernels": len(mangled),
            "configurations": distinct_configurations(launches, target, mangled[target])}


def generate(n: int, folder: Path) -> int:
    """A trace of `n` launches in `folder`, written by a child process (this one stays small: a
    child's peak RSS counts the parent's memory it was forked from)."""
    folder.mkdir()
    code = f"import sys; sys.path.insert(0, {str(BENCH)!r}); from pathlib import Path; import bench_trace_read as b; " \
           f"b.write_trace(Path({str(folder / 'trace-4242.tsv')!r}), {n})"
    subprocess.run([sys.executable, "-c", code], check=True)
    return (folder / "trace-4242.tsv").stat().st_size


def child(stage: str, folder: Path) -> None:
    """Run one stage and print its wall time and what it found, as JSON."""
    import resource

    import pandas  # noqa: F401 (imported before the clock starts, as in the CLI)

    import runner.profiles.readers  # noqa: F401
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    found = _stage(stage, folder)
    print(json.dumps({"seconds": round(time.perf_counter() - t0, 3), "rss_before_kib": before, **found}))


def measure(stage: str, folder: Path, timeout: float) -> dict:
    """One stage in a child process: its wall time, peak RSS (MiB) and findings."""
    p = subprocess.Popen([sys.executable, __file__, "--child", stage, str(folder)], stdout=subprocess.PIPE,
                         text=True)
    t0 = time.monotonic()
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > timeout:
            p.kill()
            os.wait4(p.pid, 0)
            return {"stage": stage, "timed_out_after_s": timeout}
        time.sleep(0.05)
    out = p.stdout.read()
    p.stdout.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"stage {stage} failed on {folder}")
    found = json.loads(out.strip().splitlines()[-1])
    return {"stage": stage, "seconds": found.pop("seconds"), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "rss_after_imports_mib": round(found.pop("rss_before_kib") / 1024, 1), **found}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("STAGE", "FOLDER"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="36042,1000000")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--label", default="after", help="the key of these numbers in the results file")
    ap.add_argument("--timeout", type=float, default=600, help="seconds one measurement may take")
    ap.add_argument("--out", type=Path, default=BENCH / "results" / "trace-read-2026-12-07.json")
    args = ap.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return 0
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"trace-{n}"
            size = generate(n, folder)
            for stage in args.stages.split(","):
                row = {"launches": n, "trace_bytes": size, **measure(stage, folder, args.timeout)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    results.update({
        "benchmark": "benchmarks/bench_trace_read.py (issue #44 item 9)",
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
        "target": "read the tracer file of a program with 1,000,000 launches in under 10 s and 1 GB",
    })
    results[args.label] = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "results": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
