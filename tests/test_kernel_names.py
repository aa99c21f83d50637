"""Kernels named two ways: ncu's demangler and the C++ runtime's (the tracer's) disagree on template
arguments, anonymous namespaces and lambdas; Optimas joins them by symbol. Checked on a real H200
capture of templated kernels (tests/fixtures/templated-h200)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import FIXTURES

from runner.analysis.evidence import CounterRuns, _select_for_hot, diagnose
from runner.analysis.hot import in_profile_spelling, spelled_as
from runner.base.config import AnalysisConfig
from runner.evaluation.measure import traced_hot_keys
from runner.profiles.model import MANGLED, Profile
from runner.profiles.readers import NcuRawCsvReader, NcuReportReader, read_profiles
from runner.profiles.readers.report import report_kernel_names
from runner.profiles.readers.trace import TraceReader
from runner.scan.cuda_source import (
    function_key,
    function_name,
    functions,
    kernel_by_name,
    kernel_key,
    template_symbol_prefix,
)

CAPTURE = FIXTURES / "templated-h200"
REDUCE = "_ZN5probe6reduceIfLj256ELb1EEEvPKT_PS1_j"
NCU_REDUCE = "void probe::reduce<float, 256, 1>(const T1 *, T1 *, unsigned int)"
TRACED_REDUCE = "void probe::reduce<float, 256u, true>(float const*, float*, unsigned int)"


@pytest.fixture(scope="module")
def report() -> Profile:
    return NcuReportReader().read(CAPTURE / "templated.ncu-rep")


@pytest.fixture(scope="module")
def traced() -> Profile:
    return TraceReader().read(CAPTURE / "templated_trace.tsv")


def test_the_report_and_the_trace_carry_each_kernels_symbol(report: Profile, traced: Profile):
    # ncu's raw page exported with --print-kernel-base mangled lists the same symbols, launch by launch
    mangled_page = NcuRawCsvReader().read(CAPTURE / "templated_raw_mangled.csv").launches["kernel"]
    assert list(report.launches[MANGLED]) == list(mangled_page)
    assert list(traced.launches[MANGLED]) == list(mangled_page)
    names = report_kernel_names(CAPTURE / "templated.ncu-rep")
    assert names[REDUCE] == NCU_REDUCE
    assert list(names.values()) == list(NcuRawCsvReader().read(CAPTURE / "templated_raw_base.csv").launches["kernel"])


def test_traced_names_take_ncus_spelling_by_symbol(report: Profile, traced: Profile):
    assert TRACED_REDUCE in set(traced.launches["kernel"])
    # the names alone do not tell: the template arguments are spelled differently
    assert kernel_key(TRACED_REDUCE) != kernel_key(NCU_REDUCE)
    renamed = in_profile_spelling(traced.launches, report.launches)
    assert list(renamed["kernel"]) == list(report.launches["kernel"])
    # without symbols, only names that agree without parameters or spaces are joined
    plain = in_profile_spelling(traced.launches.drop(columns=[MANGLED]), report.launches.drop(columns=[MANGLED]))
    assert list(plain["kernel"]) == [
        traced.launches["kernel"][0], traced.launches["kernel"][1], TRACED_REDUCE,
        "void probe::for_each<probe::AddOne>(int *, int, T1)"]


def test_analysis_of_a_traced_run_names_hot_kernels_as_ncu(report: Profile, traced: Profile):
    diag = diagnose(report, AnalysisConfig(alpha=1.0), timing=traced.launches)
    assert {k.kernel for k in diag.hot_kernels} == set(report.launches["kernel"])
    assert {k.mangled for k in diag.hot_kernels} == set(report.launches[MANGLED])


def test_every_spelling_locates_the_template_definition():
    funcs = functions((CAPTURE / "templated.cu").read_text())
    lines = {kernel_by_name(funcs, name).start_line
             for name in (NCU_REDUCE, TRACED_REDUCE, "probe::reduce")}
    assert len(lines) == 1
    for ncu, traced in zip(NcuRawCsvReader().read(CAPTURE / "templated_raw_base.csv").launches["kernel"],
                           TraceReader().read(CAPTURE / "templated_trace.tsv").launches["kernel"], strict=True):
        assert kernel_by_name(funcs, ncu) is not None and kernel_by_name(funcs, ncu) == kernel_by_name(funcs, traced)



def test_both_demanglers_give_each_kernel_the_same_source_function():
    """The instances of one kernel template are one source function to edit (issue #44: mixbench's
    55 instances of benchmark_func): function_key is the same for ncu's spelling and the tracer's, and
    for every instance, and tells apart what kernel_by_name tells apart."""
    ncu = NcuRawCsvReader().read(CAPTURE / "templated_raw_base.csv").launches["kernel"]
    traced = TraceReader().read(CAPTURE / "templated_trace.tsv").launches["kernel"]
    assert [function_key(k) for k in ncu] == [function_key(k) for k in traced] == [
        "probe::scale/3", "apply/3", "probe::reduce/3", "probe::for_each/3"]
    assert function_name(NCU_REDUCE) == function_name(TRACED_REDUCE) == "probe::reduce"
    other = "void probe::reduce<double, 128u, false>(double const*, double*, unsigned int)"
    assert function_key(other) == function_key(NCU_REDUCE) and kernel_key(other) != kernel_key(NCU_REDUCE)
    assert function_key("k(float *)") != function_key("k(float *, int)")  # overloads
    assert function_key("saxpy") == "saxpy"  # a name without parameters


def test_template_symbol_prefix_covers_every_instance():
    assert template_symbol_prefix(REDUCE) == "_ZN5probe6reduceI"
    assert template_symbol_prefix("_Z7reduce7IiLj256ELb0EEvPKT_PS0_j") == "_Z7reduce7I"
    assert template_symbol_prefix("_Z7reduce7IiLj32ELb1EEvPKT_PS0_j") == "_Z7reduce7I"
    assert (template_symbol_prefix("_ZN5probe41_GLOBAL__N__8086254f_12_templated_cu_main5scaleILi4EEEvPffi")
            == "_ZN5probe41_GLOBAL__N__8086254f_12_templated_cu_main5scaleI")
    # not template instances: plain kernels, names that are not symbols
    assert template_symbol_prefix("_Z5triadPfPKfS1_fi") is None
    assert template_symbol_prefix("triad") is None
    assert template_symbol_prefix("") is None


def test_the_targeted_check_and_the_timer_match_hot_kernels_by_symbol():
    captured = report_kernel_names(CAPTURE / "templated.ncu-rep")
    by_key = {kernel_key(name): name for name in captured.values()}
    assert spelled_as(TRACED_REDUCE, REDUCE, captured, by_key) == NCU_REDUCE
    # a symbol the report lacks is not looked up by name (that could be an overload's)
    assert spelled_as("void probe::for_each<probe::AddOne>(int*, int, probe::AddOne)", "_Z5otherv", captured,
                      by_key) is None
    # no symbol (ncu's timing pass named the kernel): names without parameters or spaces
    assert spelled_as("void probe::for_each<probe::AddOne>(int*, int, probe::AddOne)", None, captured, by_key) == \
        "void probe::for_each<probe::AddOne>(int *, int, T1)"
    traced = {REDUCE: kernel_key(TRACED_REDUCE)}
    assert traced_hot_keys([NCU_REDUCE], {NCU_REDUCE: REDUCE}, traced) == {kernel_key(TRACED_REDUCE)}
    assert traced_hot_keys([NCU_REDUCE], {}, traced) == {kernel_key(NCU_REDUCE)}


def test_counter_runs_of_another_template_instance_count_for_the_hot_kernel():
    # reduction-style: the program launches reduce7<int, 256, true> at power-of-two sizes and
    # reduce7<int, 256, false> at the others; a size sweep holds both
    rng = np.random.default_rng(0)
    sizes = np.array([0.25, 0.5, 0.75, 1.0, 1.5, 2.0])
    pow2 = [True, True, False, True, False, True]
    names = [f"void reduce7<int, 256, {int(p)}>(const T1 *, T1 *, unsigned int)" for p in pow2]
    symbols = [f"_Z7reduce7IiLj256ELb{int(p)}EEvPKT_PS0_j" for p in pow2]
    runs = Profile(launches=pd.DataFrame({"kernel": names, MANGLED: symbols, "duration_ns": sizes * 1e5}),
                   metrics=pd.DataFrame({"dram__bytes.sum": sizes * 4e6 + rng.normal(0, 1e3, 6),
                                         "smsp__inst_executed.sum": sizes * 2e5 + rng.normal(0, 50, 6)}))
    hot = [names[-1]]
    notes: list[str] = []
    settings = AnalysisConfig().counters
    chosen = _select_for_hot(CounterRuns(runs, {}), hot, settings, notes, {hot[0]: symbols[-1]})
    assert chosen is not None and chosen.kernel == hot[0] and chosen.runs == 6
    assert "other instances of its template" in notes[0]
    # without the symbols only the 4 launches of that exact instance are the kernel's
    notes.clear()
    chosen = _select_for_hot(CounterRuns(runs, {}), hot, settings, notes)
    assert chosen is not None and chosen.runs == 4 and not notes


def test_a_report_and_its_raw_page_name_templated_kernels_alike():
    # ncu_report writes `reduce<float, (unsigned int)256, (bool)1>`, the CSV page `reduce<float, 256, 1>`:
    # read together as one capture, each launch is still counted once
    both = read_profiles(reports=[CAPTURE / "templated.ncu-rep"], raw=[CAPTURE / "templated_raw_base.csv"])
    assert len(both.launches) == 4
    assert NCU_REDUCE in set(both.launches["kernel"])
