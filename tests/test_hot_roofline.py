"""Hot-kernel selection edge cases and roofline classification against ncu's own percentages."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from conftest import FIXTURES
from test_readers import ACCURACY, MATMUL, TRIAD

from runner.analysis.hot import (
    hot_functions,
    hot_kernels_line,
    left_out_of_profiling,
    profiled_instances,
    select_hot_kernels,
    widen_to_editable,
)
from runner.analysis.roofline import aggregate_launches, roofline
from runner.base.errors import AnalysisError
from runner.profiles.readers import NcuDetailsCsvReader, NcuRawCsvReader, NcuReportReader
from runner.profiles.readers.trace import TraceReader
from runner.scan.cuda_source import function_name


def launches(*pairs: tuple[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"kernel": [k for k, _ in pairs], "duration_ns": [t for _, t in pairs]})


def hot_names(df: pd.DataFrame, alpha: float) -> list[str]:
    return [k.kernel for k in select_hot_kernels(df, alpha) if k.hot]


def test_one_kernel_is_hot_alone():
    ks = select_hot_kernels(launches(("a", 5.0), ("a", 7.0)), 0.8)
    assert [(k.kernel, k.total_ns, k.launches, k.hot) for k in ks] == [("a", 12.0, 2, True)]


def test_time_is_summed_over_launches():
    # b has the longest single launch, a the most time in total
    assert hot_names(launches(("a", 30), ("a", 30), ("b", 50), ("c", 10)), 0.5) == ["a"]


def test_smallest_set_covering_alpha():
    df = launches(("a", 50), ("b", 30), ("c", 15), ("d", 5))
    assert hot_names(df, 0.5) == ["a"]
    assert hot_names(df, 0.8) == ["a", "b"]
    assert hot_names(df, 0.81) == ["a", "b", "c"]
    assert hot_names(df, 1.0) == ["a", "b", "c", "d"]


def test_ties_are_broken_by_name_deterministically():
    df = launches(("zeta", 40), ("alpha", 40), ("mid", 20))
    assert hot_names(df, 0.4) == ["alpha"]
    assert hot_names(df.iloc[::-1], 0.4) == ["alpha"]
    assert hot_names(df, 0.8) == ["alpha", "zeta"]


def test_zero_time_kernels_are_never_hot():
    assert hot_names(launches(("a", 10), ("b", 0)), 1.0) == ["a"]


def test_all_zero_time_is_an_error():
    with pytest.raises(AnalysisError, match="zero duration"):
        select_hot_kernels(launches(("a", 0), ("b", 0)), 0.8)


def test_no_durations_is_an_error():
    with pytest.raises(AnalysisError, match="no kernel durations"):
        select_hot_kernels(launches(("a", float("nan"))), 0.8)


def test_when_no_hot_kernel_is_editable_the_hottest_editable_ones_become_hot_too():
    """A library kernel takes 85% of the time: the app's own kernels covering 0.8 of their own time
    are hot too (a 10, b 4 of 15), the library's stays hot for its share; else nothing changes."""
    ks = select_hot_kernels(launches(("lib", 85), ("a", 10), ("b", 4), ("c", 1)), 0.8)
    widened = widen_to_editable(ks, {"a", "b", "c"}, 0.8)
    assert [k.kernel for k in widened if k.hot] == ["lib", "a", "b"]
    assert [k.hot for k in ks] == [True, False, False, False]  # the input is not changed
    assert widen_to_editable(ks, {"lib", "c"}, 0.8) == ks  # a hot kernel is editable already
    assert widen_to_editable(ks, set(), 0.8) == ks  # nothing to edit: the prompt stage says so
    assert [k.kernel for k in widen_to_editable(ks, {"c"}, 0.8) if k.hot] == ["lib", "c"]


def test_the_hottest_instance_of_each_source_function_is_profiled_first():
    """A traced run on the H100 (tests/fixtures/instances-h100) whose time is spread over the
    instances of templates, as mixbench-cuda's over 55 of one (issue #44): 11 of 16 kernels are
    hot, 8 of them instances of mix<T, N>. The targeted collection takes the hottest instance of
    each source function first, then the next of each, up to its limit; every one stays hot."""
    traced = TraceReader().read(FIXTURES / "instances-h100" / "trace.tsv").launches
    kernels = select_hot_kernels(traced, 0.8)
    hot = [k.kernel for k in kernels if k.hot]
    assert [function_name(k) for k in hot] == ["copy", "mix", "mix", "scale", "copy"] + ["mix"] * 6
    assert profiled_instances(hot, 4) == [hot[0], hot[1], hot[3], hot[4]]  # copy, mix, scale, then copy's other
    assert profiled_instances(hot, 6) == hot[:6]  # then mix's next two
    assert profiled_instances(hot, 2) == hot[:2]  # fewer than the functions: the coldest is left out whole
    assert profiled_instances(hot, 100) == hot
    # where the sources define only scale (copy and mix standing for a library's), scale comes first
    assert profiled_instances(hot, 2, {hot[3]}) == [hot[0], hot[3]]
    assert profiled_instances(hot, 1, {hot[3]}) == [hot[3]]
    with pytest.raises(ValueError):
        profiled_instances(hot, 0)
    functions = hot_functions(kernels, profiled_instances(hot, 2))
    assert [(f.function, f.instances, len(f.hot), len(f.profiled)) for f in functions] == [
        ("copy", 2, 2, 1), ("mix", 12, 8, 1), ("scale", 1, 1, 0)]
    assert sum(f.share for f in functions) == pytest.approx(1.0 - kernels[-1].share)  # all but the cold fill
    said = left_out_of_profiling(functions, 2)
    assert said.startswith("profiling 2 of the 11 hot kernels in depth (profiling.max_targeted_kernels: 2;")
    assert "mix: 1 of its 8 hot instances, the hottest (the other 7 are the same source" in said
    assert "copy: 1 of its 2 hot instances" in said
    assert said.endswith(f"left out, without evidence of their own: scale ({functions[2].share:.1%} of kernel time)")
    assert left_out_of_profiling(hot_functions(kernels, hot), 100) == ""
    # the progress line names a function of several hot instances once
    assert hot_kernels_line(hot) == f"copy (2 instances), mix (8 instances), {hot[3]}"
    assert hot_kernels_line(hot[:2]) == ", ".join(hot[:2])


def test_hot_kernels_on_h200_capture(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    ks = select_hot_kernels(p.launches, 0.8)
    assert [k.kernel for k in ks] == [MATMUL, TRIAD, ACCURACY]
    assert [k.hot for k in ks] == [True, False, False]
    assert ks[1].launches == 3 and ks[1].total_ns == 15040 + 15200 + 15776
    assert ks[0].share == pytest.approx(418624 / (418624 + 46016 + 13888))


# ---------------------------------------------------------------- roofline

def kernel_roofline(p, kernel):
    return roofline(kernel, aggregate_launches(p.kernel_metrics(kernel), p.kernel_durations(kernel)))


def test_computed_dram_utilization_matches_ncu_speed_of_light(h200: Path):
    """rho from dram__bytes.sum.per_second / (peak bytes per cycle x DRAM clock) equals ncu's DRAM %."""
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    for i in range(len(p.launches)):
        r = roofline("k", p.metrics.iloc[i])
        dram = next(x for x in r.resources if x.name == "dram")
        assert dram.method == "counters"
        ncu_pct = p.metrics["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"].iloc[i]
        assert 100 * dram.rho == pytest.approx(ncu_pct, abs=0.05)


def test_peaks_come_from_the_report(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    r = roofline("k", p.metrics.iloc[0])
    m = p.metrics.iloc[0]
    dram = next(x for x in r.resources if x.name == "dram")
    fp32 = next(x for x in r.resources if x.name == "fp32")
    assert dram.peak == pytest.approx(m["dram__bytes.sum.peak_sustained"] * m["dram__cycles_elapsed.avg.per_second"])
    assert fp32.peak == pytest.approx(2 * m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"]
                                      * m["sm__cycles_elapsed.avg.per_second"])
    # Unlike a hard-coded H100 figure, the H200's measured DRAM peak is about 4.8 TB/s.
    assert 4.5e12 < dram.peak < 5.0e12


def test_classification_on_h200_kernels(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    mm = kernel_roofline(p, MATMUL)
    # the L1/TEX unit is saturated (ncu's L1/TEX SOL, 96.69%); L1 bandwidth is not (ncu's hierarchical
    # roofline: 62%), and at 256 FLOP per DRAM byte against an FP32 ridge of 13.8 DRAM cannot bind
    assert mm.bound == "memory" and mm.binding == "L1 throughput"
    l1 = {x.measure: x for x in mm.resources if x.name == "l1"}
    assert l1["throughput"].saturated and 100 * l1["throughput"].rho == pytest.approx(96.69, abs=0.01)
    assert not l1["bandwidth"].saturated and l1["bandwidth"].rho == pytest.approx(0.62, abs=0.005)
    assert mm.compute_rho == pytest.approx(0.6169, abs=1e-4)  # ncu's Compute (SM) SOL %
    assert mm.summary.startswith("Compute underutilized (62%), memory saturated (97%, L1 throughput): "
                                 "memory-bound: L1 throughput")
    assert mm.arithmetic_intensity == pytest.approx(256, rel=0.01) and mm.ridge_point == pytest.approx(13.8, rel=0.01)
    triad = kernel_roofline(p, TRIAD)
    assert triad.bound == "memory" and triad.memory_rho >= 0.70
    acc = kernel_roofline(p, ACCURACY)
    assert acc.bound == "latency" and acc.binding is None and "latency-bound" in acc.summary


def test_bandwidth_per_level_is_ncus_hierarchical_roofline():
    """Bandwidth per memory level as ncu's hierarchical roofline computes it (issue #15, item 4):
    matmul's L1 62% and L2 11.9%, where the Speed-of-Light throughputs say 97% and 18%."""
    from conftest import FIXTURES

    profile = NcuReportReader().read(FIXTURES / "ncu-h200" / "probe_full.ncu-rep")
    (i,) = [n for n, k in enumerate(profile.launches["kernel"]) if k.startswith("matmul")]
    kernel = profile.launches["kernel"][i]
    m = profile.metrics.iloc[i]
    r = roofline(kernel, aggregate_launches(profile.kernel_metrics(kernel), profile.kernel_durations(kernel)), 0.7)
    bw = {x.name: x for x in r.roofs if x.kind == "memory"}
    label = "L1 Achieved Value (Global/Local)"
    assert bw["l1"].achieved == pytest.approx(_ncu_roofline_value(label, "L1 Cache Bandwidth (Global/Local)"),
                                              rel=1e-9)
    assert bw["l1"].peak / m["l1tex__cycles_elapsed.avg.per_second"] == pytest.approx(
        _ncu_roofline_value("L1 Roofline (Global/Local)", "Theoretical L1/TEX Cache Bytes Accessible"), rel=1e-9)
    # ncu prints L2 figures to 3 significant digits (TB/s, KB per cycle)
    assert bw["l2"].achieved / 1e12 == pytest.approx(_ncu_roofline_value("L2 Achieved Value", "L2 Cache Bandwidth"),
                                                     abs=0.005)
    assert bw["l2"].peak / m["lts__cycles_elapsed.avg.per_second"] / 1e3 == pytest.approx(
        _ncu_roofline_value("L2 Roofline", "Theoretical L2 Cache Bytes Accessible"), abs=0.005)
    assert round(100 * bw["l1"].rho) == 62 and round(100 * bw["l2"].rho, 1) == 11.9
    assert {x.name: round(100 * x.rho) for x in r.throughputs} == {"l1": 97, "l2": 18}


def test_details_page_and_raw_page_agree(h200: Path):
    """Same capture, two exports: the details page has only SOL percentages, the raw page counters."""
    d = NcuDetailsCsvReader().read(h200 / "probe_full_details.csv")
    raw = NcuRawCsvReader().read(h200 / "probe_full_raw_autounits.csv")
    for k in (TRIAD, ACCURACY, MATMUL):
        a, b = kernel_roofline(d, k), kernel_roofline(raw, k)
        assert a.bound == b.bound
        assert a.compute_rho == pytest.approx(b.compute_rho, abs=0.01)
        assert a.memory_rho == pytest.approx(b.memory_rho, abs=0.01)


def test_report_and_csv_give_the_same_roofline(h200: Path):
    r = NcuReportReader().read(h200 / "probe_full.ncu-rep")
    raw = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    a, b = kernel_roofline(r, MATMUL), kernel_roofline(raw, MATMUL)
    assert a.summary == b.summary


def test_saturation_threshold_is_inclusive():
    m = pd.Series({"lts__throughput.avg.pct_of_peak_sustained_elapsed": 70.0,
                   "sm__throughput.avg.pct_of_peak_sustained_elapsed": 69.99})
    r = roofline("k", m, saturation=0.70)
    assert next(x for x in r.resources if x.name == "l2").saturated
    assert r.bound == "memory"
    assert "memory saturated (70%, L2 throughput): memory-bound: L2 throughput" in r.summary


def test_launches_are_weighted_by_duration():
    metrics = pd.DataFrame({"sm__throughput.avg.pct_of_peak_sustained_elapsed": [90.0, 10.0]})
    agg = aggregate_launches(metrics, pd.Series([3.0, 1.0]))
    assert agg.iloc[0] == pytest.approx(70.0)


def test_the_headers_sm_clock_is_the_hot_kernels():
    """Clocks move launch to launch: in this capture triad (launched first) ran at 1.93 GHz and
    matmul, the hot kernel, at 1.97 GHz (issue #15, item 3)."""
    from conftest import FIXTURES

    from runner.analysis.evidence import diagnose
    from runner.base.config import AnalysisConfig

    profile = NcuReportReader().read(FIXTURES / "ncu-h200" / "probe_full.ncu-rep")
    clocks = profile.metrics["sm__cycles_elapsed.avg.per_second"]
    assert clocks.iloc[0] == pytest.approx(1.9336e9, rel=1e-4)  # the first launch: triad
    diag = diagnose(profile, AnalysisConfig())
    assert [k.kernel.split("(")[0] for k in diag.hot_kernels] == ["matmul"]
    assert diag.gpu.sm_clock_hz == pytest.approx(1.9717e9, rel=1e-4)


def _ncu_roofline_value(label: str, metric: str) -> float:
    """One figure of ncu's own roofline sections for matmul in the same capture (details page)."""
    import csv

    from conftest import FIXTURES

    with open(FIXTURES / "ncu-h200" / "probe_full_details_all_matmul_roofline.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["Body Item Label"] == label and row["Metric Name"] == metric:
                return float(row["Metric Value"].replace(",", ""))
    raise AssertionError(f"{label} / {metric} not in the export")


def test_flop_rates_match_ncus_roofline_in_every_precision():
    """ncu counts half-precision instructions as pairs (issue #15, item 2): matmul's HFMA2 rate is
    5.08 operations per cycle against a peak of 67,584, as ncu's hierarchical roofline says."""
    from conftest import FIXTURES

    profile = NcuReportReader().read(FIXTURES / "ncu-h200" / "probe_full.ncu-rep")
    (i,) = [n for n, k in enumerate(profile.launches["kernel"]) if k.startswith("matmul")]
    kernel = profile.launches["kernel"][i]
    clock = profile.metrics["sm__cycles_elapsed.avg.per_second"].iloc[i]
    r = {x.name: x for x in roofline(kernel, aggregate_launches(profile.kernel_metrics(kernel),
                                                                 profile.kernel_durations(kernel)), 0.7).resources}
    for prec, achieved, peak in (("fp16", ("L2 Achieved Value", "Predicated-On HFMA Operations Per Cycle"),
                                  ("L2 Roofline", "Theoretical Predicated-On HFMA Operations")),
                                 ("fp32", ("L2 Achieved Value", "Predicated-On FFMA Operations Per Cycle"),
                                  ("L2 Roofline", "Theoretical Predicated-On FFMA Operations"))):
        # ncu prints 3 significant digits: within half a unit of the last one
        assert r[prec].achieved / clock == pytest.approx(_ncu_roofline_value(*achieved), abs=0.006, rel=5e-4), prec
        assert r[prec].peak / clock == pytest.approx(_ncu_roofline_value(*peak), rel=1e-9), prec


def test_launch_configuration_matches_ncus_launch_and_occupancy_sections(h200: Path):
    """Launch evidence (issue #15, item 7) against ncu's own Launch Statistics and Occupancy sections
    of the same capture (the details page of the first capture)."""
    import csv

    from runner.analysis.launch import launch_config

    details: dict[str, str] = {}
    with open(h200 / "probe_full_details.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["Kernel Name"] == MATMUL:
                details[row["Metric Name"]] = row["Metric Value"].replace(",", "")
    raw = NcuRawCsvReader().read(h200 / "probe_full_raw_autounits.csv")
    mine = raw.launches["kernel"] == MATMUL
    c = launch_config(raw.launches[mine], aggregate_launches(raw.kernel_metrics(MATMUL), raw.kernel_durations(MATMUL)))
    assert (c.grid, c.block) == (raw.launches[mine]["grid"].iloc[0], "(16, 16, 1)")
    assert c.registers_per_thread == int(details["Registers Per Thread"])
    assert c.waves_per_sm == pytest.approx(float(details["Waves Per SM"]), abs=0.005)
    assert c.theoretical_occupancy_pct == pytest.approx(float(details["Theoretical Occupancy"]))
    assert c.achieved_occupancy_pct == pytest.approx(float(details["Achieved Occupancy"]), abs=0.005)
    limits = {"registers": "Block Limit Registers", "warps per SM": "Block Limit Warps",
              "shared memory": "Block Limit Shared Mem"}
    fewest = min(int(details[v]) for v in limits.values())
    assert c.blocks_per_sm == fewest
    assert c.limited_by == [k for k, v in limits.items() if int(details[v]) == fewest]


def test_a_roofline_line_without_a_compute_roof_worth_naming_does_not_say_no_flops():
    """Reduction's R lines said "no FLOPs" beside an arithmetic intensity in FLOP/B (issue #46):
    the compute roofs under 0.5 % are left out, and the line says the FLOP rate is about 0 %."""
    from runner.analysis.evidence import _roofline_text
    from runner.analysis.roofline import Resource, Roofline

    fp32 = Resource(name="fp32", kind="compute", rho=0.001, method="counters", saturated=False)
    dram = Resource(name="dram", kind="memory", rho=0.13, method="counters", saturated=False, measure="bandwidth")
    r = Roofline(kernel="reduce", resources=[fp32, dram], compute_rho=0.001, memory_rho=0.13, sol_compute_pct=2.8,
                 sol_memory_pct=12.9, arithmetic_intensity=0.0039, ridge_point=13.9, bound="latency",
                 summary="latency-bound", intensity={"dram": 0.0039}, precision="fp32", ridge={"dram": 13.9})
    text = _roofline_text(r)
    assert text.startswith("latency-bound. Roofline: FLOP ~0%; bandwidth DRAM 13%")
    assert "no FLOPs" not in text and "FP32 FLOP/B (ridge): DRAM 0.0039 (13.9)" in text
    busy = r.model_copy(update={"resources": [fp32.model_copy(update={"rho": 0.2}), dram]})
    assert _roofline_text(busy).startswith("latency-bound. Roofline: FP32 20%; bandwidth")
