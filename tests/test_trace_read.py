"""Reading the tracer's record files column-wise (issue #44 item 9): the fast reading of records as
the tracer writes them gives what the line-by-line reading gives, and anything else still goes
line by line, its errors naming the file and line. Speed targets live in
benchmarks/bench_trace_read.py, not here."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import runner.tracing.trace as trace_module
from runner.analysis.hot import in_profile_spelling, select_hot_kernels
from runner.profiles.counter_plan import distinct_configurations
from runner.profiles.model import LAUNCH_COLUMNS, MANGLED, Profile, merge
from runner.profiles.readers import read_timing
from runner.profiles.readers.trace import profile_of
from runner.tracing.trace import KernelLaunch, Launches, ProcessTrace, TraceFormatError, read_trace, read_traces

KERNELS = [("_Z1aPf", "a(float*)"), ("_Z1bIiEvPT_", "void b<int>(int*)"), ("_Z1bIfEvPT_", "void b<float>(float*)")]


def _lines(n: int, seed: int = 3) -> list[str]:
    """A process's records as the tracer writes them: n launches on two streams, out of start order
    across streams, kernels named before their first launch, some copies, the X line."""
    rng = random.Random(seed)
    out = ["# optimas-trace 1", "P\t77\t130001\t0"]
    named: set[int] = set()
    for i in range(n):
        k = rng.randrange(len(KERNELS))
        if k not in named:
            named.add(k)
            out.append(f"N\t{k}\t{KERNELS[k][0]}\t{KERNELS[k][1]}")
        start = 1_000_000 + 1000 * i + rng.randrange(-1500, 1500)
        grid = rng.choice(["64,1,1", "32,2,1", "3000000000,1,1"])
        out.append(f"K\t{k}\t{start}\t{start + rng.randrange(0, 900)}\t{grid}\t{rng.choice(['256,1,1', '128,1,1'])}\t"
                   f"32\t0\t{rng.choice([0, 1024])}\t{rng.choice([7, 13])}\t0\t1\t{i}\t{i % 5 == 0}")
        if i % 40 == 39:
            out.append(f"D\t{i}\tcudaMemcpy\t16\t{i:016x}\t0\t0")
    out.append(f"X\t{n}\t{n // 40}\t0")
    return [line.replace("\tTrue", "\t3").replace("\tFalse", "\t0") for line in out]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _line_by_line(path: Path) -> ProcessTrace:
    with open(path, "rb") as f:
        f.readline()
        import io
        return trace_module._records(path, io.TextIOWrapper(f, encoding="utf-8", errors="replace", newline="\n"))


def _same(a: ProcessTrace, b: ProcessTrace) -> None:
    assert (a.pid, a.cupti_version, a.complete, a.dropped) == (b.pid, b.cupti_version, b.complete, b.dropped)
    assert list(a.launches) == list(b.launches) and a.results == b.results
    assert a.kernel_ns() == b.kernel_ns()


@pytest.mark.parametrize("chunk", [7, 1 << 16])
def test_records_as_the_tracer_writes_them_read_in_one_table(tmp_path: Path, monkeypatch, chunk: int):
    monkeypatch.setattr(trace_module, "K_CHUNK", chunk)
    path = _write(tmp_path / "trace-77.tsv", _lines(300))
    expected = _line_by_line(path)

    def refuse(*_args: object) -> ProcessTrace:
        raise AssertionError("read line by line")

    monkeypatch.setattr(trace_module, "_records", refuse)
    t = read_trace(path)
    _same(t, expected)
    assert isinstance(t.launches, Launches) and len(t.launches) == 300
    starts = [k.start_ns for k in t.launches]
    assert starts == sorted(starts) and t.launches[-1] == list(t.launches)[-1]
    assert t.launches[0].grid in {(64, 1, 1), (32, 2, 1), (3_000_000_000, 1, 1)}
    assert {k.graph for k in t.launches} == {0, 3}
    assert [r.seq for r in t.results] == sorted(r.seq for r in t.results) and len(t.results) == 7
    assert t.kernel_ns() == {name: sum(k.duration_ns for k in t.launches if k.kernel == name)
                             for name in dict.fromkeys(k.kernel for k in t.launches)}


@pytest.mark.parametrize(("change", "error"), [
    (lambda f: f.__setitem__(2, "0x10"), r":{line}: malformed 'K' record \(invalid literal"),
    (lambda f: f.__setitem__(1, "9"), r":{line}: malformed 'K' record \('9'\)"),
    (lambda f: f.__setitem__(4, "64,1"), r":{line}: malformed 'K' record \(not enough values"),
    (lambda f: f.__setitem__(3, "99999999999999999999"), r":{line}: malformed 'K' record \(.* is out of range\)"),
    (lambda f: f.__delitem__(13), r":{line}: malformed 'K' record \(list index out of range\)"),
])
def test_a_malformed_launch_in_a_later_chunk_names_its_line(tmp_path: Path, monkeypatch, change, error: str):
    monkeypatch.setattr(trace_module, "K_CHUNK", 16)
    lines = _lines(200)
    at = [i for i, line in enumerate(lines) if line.startswith("K\t")][150]
    fields = lines[at].split("\t")
    change(fields)
    lines[at] = "\t".join(fields)
    path = _write(tmp_path / "trace-77.tsv", lines)
    with pytest.raises(TraceFormatError, match="trace-77.tsv" + error.format(line=at + 1)):
        read_trace(path)


def test_records_the_tracer_does_not_write_are_read_line_by_line(tmp_path: Path, monkeypatch):
    """Values int() takes (a space, a plus sign), an extra field, a kernel named again: read as before."""
    monkeypatch.setattr(trace_module, "K_CHUNK", 16)
    lines = _lines(120)
    ks = [i for i, line in enumerate(lines) if line.startswith("K\t")]
    lines[ks[5]] = lines[ks[5]].replace("\t32\t", "\t 32\t", 1)
    lines[ks[90]] = lines[ks[90]].replace("\t32\t", "\t+32\t", 1) + "\tmore"
    lines.insert(ks[100], f"N\t0\t{KERNELS[0][0]}\trenamed(float*)")
    path = _write(tmp_path / "trace-77.tsv", lines)
    t = read_trace(path)
    _same(t, _line_by_line(path))
    assert "renamed(float*)" in t.kernel_ns() and len(t.launches) == 120
    before_name = _write(tmp_path / "trace-78.tsv", [*lines[:2], "K\t0\t1\t2\t1,1,1\t1,1,1\t1\t0\t0\t7\t0\t1\t1\t0",
                                                     *lines[2:]])
    with pytest.raises(TraceFormatError, match=r"trace-78.tsv:3: malformed 'K' record \('0'\)"):
        read_trace(before_name)
    empty = _write(tmp_path / "trace-79.tsv", [*lines[:ks[50]], "", *lines[ks[50]:]])
    with pytest.raises(TraceFormatError, match=rf"trace-79.tsv:{ks[50] + 1}: malformed '' record"):
        read_trace(empty)


def test_launches_are_a_sequence_of_kernel_launches(tmp_path: Path):
    def launch(name: str, start: int, grid: int, smem: int = 0) -> KernelLaunch:
        return KernelLaunch(kernel=name, mangled="_Z" + name, start_ns=start, end_ns=start + 10, grid=(grid, 1, 1),
                            block=(128, 1, 1), registers=8, static_shared=0, dynamic_shared=smem, stream=7, device=0,
                            context=1, correlation=start)

    given = [launch("k", 5, 4), launch("j", 1, 2), launch("k", 3, 4, 64)]
    t = ProcessTrace(path=tmp_path / "t.tsv", pid=1, cupti_version=1, launches=given)
    assert isinstance(t.launches, Launches) and t.launches == given and len(t.launches) == 3
    assert t.launches[-1] == given[2] and list(t.launches[1:]) == given[1:]
    with pytest.raises(IndexError):
        t.launches[3]
    assert t.launches.by_start() == [given[1], given[2], given[0]]
    assert t.kernel_ns() == {"k": 20, "j": 10} and t.launches.symbols() == {"k": "_Zk", "j": "_Zj"}
    both = Launches.concat([t.launches, Launches.of(given[:1])])
    assert both == [*given, given[0]] and len(both.names) == 2
    assert distinct_configurations(t.launches, "k") == distinct_configurations(given, "k") == 2
    assert t.model_copy(update={"launches": []}).kernel_ns() == {}
    assert Launches.empty() == [] and not Launches.empty()


def test_the_launch_table_of_a_trace(tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    _write(folder / "trace-77.tsv", _lines(50))
    _write(folder / "trace-12.tsv", [line.replace("P\t77", "P\t12") for line in _lines(20, seed=4)])
    traces = read_traces(folder)
    table = profile_of(traces, "origin").launches
    assert list(table.columns) == [*LAUNCH_COLUMNS, MANGLED] and len(table) == 70
    rows = [{"launch_id": str(i), "process_id": str(t.pid), "process_name": t.path.name, "kernel": k.kernel,
             MANGLED: k.mangled, "block": "({}, {}, {})".format(*k.block), "grid": "({}, {}, {})".format(*k.grid),
             "device": str(k.device), "cc": "", "duration_ns": float(k.duration_ns), "origin": "origin"}
            for t in traces for i, k in enumerate(t.launches)]  # the table as it was built row by row
    pd.testing.assert_frame_equal(table, pd.DataFrame(rows, columns=[*LAUNCH_COLUMNS, MANGLED]))
    assert "(3000000000, 1, 1)" in set(table["grid"])
    timing = read_timing([folder]).launches
    pd.testing.assert_frame_equal(timing.drop(columns="origin"), table.drop(columns="origin"))
    profiled = table.iloc[:1].assign(kernel=table["kernel"].iloc[0] + " ")  # spelled otherwise by ncu
    renamed = in_profile_spelling(timing, profiled)
    first = table[MANGLED] == table[MANGLED].iloc[0]
    assert (renamed["kernel"] == table["kernel"].iloc[0] + " ").sum() == first.sum()
    assert sum(k.launches for k in select_hot_kernels(renamed, 1.0)) == 70
    empty = profile_of([ProcessTrace(path=tmp_path / "t.tsv", pid=1, cupti_version=1)], "o").launches
    assert empty.empty and list(empty.columns) == [*LAUNCH_COLUMNS, MANGLED]


def test_stacked_profiles_keep_every_launch_and_align_metrics():
    def launches(n: int, kernel: str) -> pd.DataFrame:
        return pd.DataFrame({"launch_id": [str(i) for i in range(n)], "kernel": [kernel] * n, "grid": ["(1, 1, 1)"] * n,
                             "block": ["(1, 1, 1)"] * n, "duration_ns": [float(i) for i in range(n)]})

    measured = Profile(launches=launches(2, "a"), metrics=pd.DataFrame({"m": [1.0, 2.0]}), inputs=["x"])
    traced = Profile(launches=launches(3, "b"), inputs=["y"])
    out = merge([measured, traced])
    assert list(out.launches["kernel"]) == ["a", "a", "b", "b", "b"] and out.inputs == ["x", "y"]
    assert out.metrics["m"].tolist()[:2] == [1.0, 2.0] and np.isnan(out.metrics["m"].iloc[2:]).all()
    only_traced = merge([traced, traced])
    assert len(only_traced.launches) == 6 and only_traced.metrics.shape == (6, 0)
    same = merge([measured, Profile(launches=launches(2, "a"), metrics=pd.DataFrame({"n": [5.0, 6.0]}))],
                 same_capture=True)
    assert len(same.launches) == 2 and same.metrics.to_dict("list") == {"m": [1.0, 2.0], "n": [5.0, 6.0]}
