"""Stall saliency at its thresholds, library-header attribution, and eOMP on known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_readers import ACCURACY, ATOMIC_HEADER, MATMUL, TRIAD

from runner.analysis.counters import describe, load_metric_dictionary, prepare_matrix, select_counters
from runner.analysis.stalls import salient_stalls
from runner.base.config import CountersConfig
from runner.base.errors import AnalysisError, ProfileFormatError
from runner.profiles.model import LINE_COLUMNS, STALL_REASONS
from runner.profiles.readers import NcuRawCsvReader, NcuSourceCsvReader

LIB = [r"/cuda[^/]*/(targets/[^/]+/)?include/"]


def line(file, no, samples, caller=None, **stalls):
    rec = {c: 0.0 for c in LINE_COLUMNS}
    rec.update(kernel="k", file=file, line=no, source=f"code at {no}", samples=float(samples),
               caller_file=caller[0] if caller else None, caller_line=caller[1] if caller else None)
    for reason, n in stalls.items():
        assert reason in STALL_REASONS
        rec[f"stall_{reason}"] = float(n)
    return rec


def table(*recs):
    df = pd.DataFrame(recs, columns=LINE_COLUMNS)
    df["line"] = df["line"].astype("Int64")
    df["caller_line"] = df["caller_line"].astype("Int64")
    return df


def test_dominant_reason_at_exactly_the_threshold_is_kept():
    df = table(line("a.cu", 10, 100, long_sb=30, wait=25, mio=25, barrier=20),  # 30/100 = 0.30
               line("a.cu", 11, 100, long_sb=2999, wait=2501, mio=2500, barrier=2000))  # 0.2999
    got = salient_stalls(df, "k", stall_share=0.30, min_line_share=0.0)
    assert [(s.line, s.reason, round(s.reason_share, 4)) for s in got] == [(10, "stall_long_sb", 0.30)]


def test_selected_samples_are_not_stalls():
    # 50 issued samples + 50 stalled, 20 of them long_sb: 20/50 = 40% of the *stalled* samples
    df = table(line("a.cu", 5, 100, selected=50, long_sb=20, wait=15, mio=15))
    (s,) = salient_stalls(df, "k", stall_share=0.35, min_line_share=0.0)
    assert s.reason == "stall_long_sb" and s.reason_share == pytest.approx(0.4)


def test_lines_that_do_not_matter_are_dropped_and_order_is_by_share():
    df = table(line("a.cu", 1, 900, long_sb=900), line("a.cu", 2, 80, wait=80), line("a.cu", 3, 20, mio=20))
    got = salient_stalls(df, "k", stall_share=0.3, min_line_share=0.05)
    assert [s.line for s in got] == [1, 2]
    assert got[0].line_share == pytest.approx(0.9)
    assert [s.line for s in salient_stalls(df, "k", 0.3, 0.0, max_lines=1)] == [1]


def test_header_line_with_caller_is_folded_into_the_user_line():
    hdr = "/usr/local/cuda/include/device_atomic_functions.hpp"
    df = table(line("a.cu", 28, 100, lg=80, wait=20),
               line(hdr, 107, 60, caller=("a.cu", 28), lg=60),
               line("a.cu", 107, 50, long_sb=50))  # a user line with the same number as the header line
    got = {(s.file, s.line): s for s in salient_stalls(df, "k", 0.3, 0.0, library_paths=LIB)}
    assert set(got) == {("a.cu", 28), ("a.cu", 107)}
    assert got[("a.cu", 28)].via == f"{hdr}:107"
    assert got[("a.cu", 107)].via is None and got[("a.cu", 107)].reason == "stall_long_sb"
    assert got[("a.cu", 28)].line_share == pytest.approx(100 / 150)  # header samples are not counted twice


def test_header_line_without_caller_is_reported_as_library_code():
    hdr = "/opt/cuda-13.0/targets/x86_64-linux/include/cub/block_reduce.cuh"
    df = table(line("a.cu", 107, 50, long_sb=50), line(hdr, 107, 50, barrier=50))
    got = salient_stalls(df, "k", 0.3, 0.0, library_paths=LIB)
    by_file = {s.file: s for s in got}
    assert by_file[hdr].library and by_file[hdr].reason == "stall_barrier"
    assert not by_file["a.cu"].library and by_file["a.cu"].reason == "stall_long_sb"


def test_stalls_on_h200_capture(h200: Path):
    s = NcuSourceCsvReader().read(h200 / "probe_full_source_cuda_sass.csv")
    (mm,) = salient_stalls(s.lines, MATMUL, 0.30, 0.02, 4, LIB)
    assert (mm.line, mm.reason, mm.samples) == (33, "stall_long_sb", 50838)
    assert mm.runner_up == "stall_lg"
    triad = salient_stalls(s.lines, TRIAD, 0.30, 0.02, 4, LIB)
    assert (triad[0].line, triad[0].reason) == (8, "stall_long_sb")
    assert triad[0].reason_share == pytest.approx(4125 / (4489 - sum(
        s.lines.query("kernel == @TRIAD and line == 8")["stall_selected"])), rel=1e-6)
    acc = salient_stalls(s.lines, ACCURACY, 0.30, 0.0, None, LIB)
    # the atomicAdd's header line is folded into line 28, which names it
    l28 = next(x for x in acc if x.line == 28)
    assert l28.via == f"{ATOMIC_HEADER}:107"
    assert all(x.file == "/opt/probe/k.cu" for x in acc)


# ---------------------------------------------------------------- eOMP

def planted(n=64, c=400, seed=1, noise=0.05):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, c))
    y = 3.0 * x[:, 5] - 2.0 * x[:, 17] + 1.5 * x[:, 42] + noise * rng.normal(size=n)
    cols = [f"m{j}" for j in range(c)]
    return pd.DataFrame(x, columns=cols), 1000 + 10 * y


def test_eomp_recovers_planted_counters_with_their_signs():
    x, y = planted()
    sel = select_counters(x, y, CountersConfig(exclude=[], kappa=5, tau=3, ensemble=200, seed=0))
    top3 = {c.metric: c.weight for c in sel.counters[:3]}
    assert set(top3) == {"m5", "m17", "m42"}
    assert top3["m5"] > 0 and top3["m17"] < 0 and top3["m42"] > 0
    # the weights keep the planted ratios (z-scored x, z-scored y)
    assert abs(top3["m5"]) > abs(top3["m17"]) > abs(top3["m42"])


def test_eomp_is_reproducible_for_a_seed_and_varies_across_seeds():
    x, y = planted(n=40, c=300, noise=1.0)
    a = select_counters(x, y, CountersConfig(exclude=[], seed=7))
    b = select_counters(x, y, CountersConfig(exclude=[], seed=7))
    assert a == b
    c = select_counters(x, y, CountersConfig(exclude=[], seed=8))
    assert [s.weight for s in a.counters] != [s.weight for s in c.counters]


def test_constant_missing_and_excluded_columns_are_dropped():
    x, y = planted(c=50)
    x["constant"] = 4.0
    x["missing"] = np.nan
    x.loc[3, "m5"] = np.nan  # a counter missing in one run cannot be used
    x["gpu__time_duration.sum"] = y
    cand = prepare_matrix(x, ["^gpu__time_duration"])
    assert not {"constant", "missing", "m5", "gpu__time_duration.sum"} & set(cand.columns)
    assert cand.shape[1] == 49


def test_too_few_runs_and_flat_runtime_are_errors():
    x, y = planted(n=3)
    with pytest.raises(AnalysisError, match="at least 4 profiling runs"):
        select_counters(x, y)
    x, _ = planted(n=10)
    with pytest.raises(AnalysisError, match="identical in every run"):
        select_counters(x, np.full(10, 5.0))


def test_eomp_on_h200_sweep_names_counters_with_descriptions(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_sweep_accuracy_raw_base.csv")
    cfg = CountersConfig()
    sel = select_counters(p.metrics, p.launches["duration_ns"], cfg, descriptions=load_metric_dictionary(),
                          kernel=ACCURACY)
    assert sel.runs == 12 and len(sel.counters) == 5
    names = [c.metric for c in sel.counters]
    assert not any(n.startswith(("gpu__time_duration", "config_")) or "cycles_elapsed" in n for n in names)
    assert sum(c.description is not None for c in sel.counters) >= 4


def test_describe_handles_suffixes_and_prefixes():
    d = {"dram__bytes": "# of bytes accessed in DRAM", "sm__cycles_active": "# of cycles with at least one warp"}
    assert describe("dram__bytes.sum.per_second", d) == "# of bytes accessed in DRAM (total, per second)"
    assert describe("TPC.TriageCompute.sm__cycles_active.avg", d).startswith("# of cycles with at least one warp")
    assert describe("smsp__pcsamp_warps_issue_stalled_long_scoreboard", d).startswith("PC samples of warps stalled")
    assert describe("unknown__metric.sum", d) is None


def test_metric_dictionary_file_must_be_query_metrics_output(tmp_path: Path):
    f = tmp_path / "m.csv"
    f.write_text("a,b\n1,2\n")
    with pytest.raises(ProfileFormatError, match="ncu --query-metrics --csv"):
        load_metric_dictionary(f)
    assert len(load_metric_dictionary()) > 1000


def test_counter_runs_from_reports_match_their_csv(tmp_path: Path, h200: Path):
    """The sweep's 12 .ncu-rep files, read one by one, give the N x C matrix the raw CSV gives."""
    import tarfile

    from runner.profiles.model import merge
    from runner.profiles.readers import read_any

    with tarfile.open(h200 / "probe_sweep_accuracy_reports.tgz") as t:
        t.extractall(tmp_path, filter="data")
    reports = sorted(tmp_path.rglob("*.ncu-rep"), key=lambda p: int("".join(c for c in p.stem if c.isdigit())))
    assert len(reports) == 12
    runs = merge([read_any(p) for p in reports])
    csv_runs = NcuRawCsvReader().read(h200 / "probe_sweep_accuracy_raw_base.csv")
    assert sorted(runs.launches["duration_ns"]) == sorted(csv_runs.launches["duration_ns"])
    sel = select_counters(runs.metrics, runs.launches["duration_ns"], CountersConfig(), kernel=ACCURACY)
    assert len(sel.counters) == 5


def test_per_reason_pc_sample_counts_are_not_selected_as_counters():
    """Samples are taken at a fixed interval, so a stall reason's sample count is time again: on the
    bundled H200 counter runs eOMP picked two of them (issue #15, item 5)."""
    from conftest import REPO

    from runner.analysis.stage import analyze, profile_inputs
    from runner.base.config import load_config

    lc = load_config(REPO / "config.yml")
    chosen = [e.counter for e in analyze(lc, profile_inputs(lc)).evidence if e.kind == "counter"]
    assert len(chosen) == 5
    names = [c["metric"] for c in chosen]
    assert not [n for n in names if n.startswith("smsp__pcsamp_")], names


def test_in_a_size_sweep_the_work_done_stands_for_the_counters_that_only_measure_size(h200: Path):
    """Every count rises with the problem in a size sweep: before, eOMP split one weight between size
    proxies (lts__t_requests, bank conflicts, fabric hits) in an order that changed with the seed
    (issue #15, item 5). Now the instruction count is chosen first and stands for them, and no two
    counters chosen say the same thing."""
    from runner.analysis.counters import GROUP_R, per_work

    p = NcuRawCsvReader().read(h200 / "probe_sweep_accuracy_raw_base.csv")
    exclude = CountersConfig().exclude
    picks = [select_counters(p.metrics, p.launches["duration_ns"], CountersConfig(exclude=exclude, seed=s),
                             descriptions=load_metric_dictionary()) for s in (0, 1, 2)]
    for sel in picks:
        first = sel.counters[0]
        assert first.metric == "smsp__inst_executed.sum" and first.work and first.weight > 0.9
        assert first.moves_with >= 20 and "lts__t_requests.sum" not in [c.metric for c in sel.counters]
        assert all(abs(c.weight) < 0.1 and not c.work for c in sel.counters[1:])
    cand = prepare_matrix(per_work(p.metrics), exclude)
    z = (cand - cand.mean()) / cand.std(ddof=0)
    chosen = [c.metric for c in picks[0].counters]
    r = (z[chosen].T @ z[chosen]).to_numpy() / len(z)
    assert (np.abs(r[~np.eye(len(chosen), dtype=bool)]) < GROUP_R).all()


def test_a_family_whose_total_is_constant_keeps_no_noisy_max():
    """matrixMul's tensor pipe is idle (.sum 0% in all six counter runs), but its .max rollup read
    0.007% in one run: that noise was a candidate counter (issue #15, item 5)."""
    from conftest import REPO

    from runner.profiles.model import merge
    from runner.profiles.readers import read_any

    runs = merge([read_any(p) for p in sorted((REPO / "benchmarks" / "replay" / "captures" / "matrixMul-h200"
                                                / "counters").glob("*.ncu-rep"))])
    family = "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active"
    assert runs.metrics[f"{family}.max.pct_of_peak_sustained_elapsed"].astype(float).std() > 0
    assert (runs.metrics[f"{family}.sum.pct_of_peak_sustained_elapsed"].astype(float) == 0).all()
    cand = prepare_matrix(runs.metrics, CountersConfig().exclude)
    assert not [c for c in cand.columns if c.startswith(family + ".")]


def test_counts_per_instruction_and_whose_words_describe_a_counter():
    from runner.analysis.counters import counter_value, described_by, per_work

    d = {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared": "# of shared memory data bank conflicts",
         "smsp__inst_executed": "# of warp instructions executed"}
    m = pd.DataFrame({"smsp__inst_executed.sum": [100.0, 400.0], "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum":
                      [10.0, 80.0], "dram__throughput.avg.pct_of_peak_sustained_elapsed": [50.0, 60.0]})
    derived = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum / smsp__inst_executed.sum"
    assert per_work(m)[derived].tolist() == [0.1, 0.2]
    assert "dram__throughput.avg.pct_of_peak_sustained_elapsed / smsp__inst_executed.sum" not in per_work(m)
    assert counter_value(m.iloc[1], derived) == 0.2 and counter_value(m.iloc[1], "missing.sum") is None
    assert describe(derived, d) == ("# of shared memory data bank conflicts (total), per warp instruction "
                                    "executed (smsp__inst_executed.sum)")
    assert described_by(derived, d) == "Optimas"
    assert described_by("inst_executed", d) == "Optimas"  # a source counter, described by this tool
    assert described_by("smsp__inst_executed.sum", d) == "NVIDIA"
    assert described_by("unknown__metric.sum", d) is None
