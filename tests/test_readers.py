"""Each reader on real H200 exports, the readers' agreement, and every kind of bad input."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pandas as pd
import pytest

from runner.base.errors import ProfileFormatError
from runner.profiles.model import merge, short_kernel_name
from runner.profiles.readers import (
    NcuDetailsCsvReader,
    NcuRawCsvReader,
    NcuReportReader,
    NcuSourceCsvReader,
    read_any,
    read_profiles,
)

TRIAD = "triad(float *, const float *, const float *, float, int)"
ACCURACY = "accuracy_kernel(int, int, int, const float *, const int *, int *)"
MATMUL = "matmul(const float *, const float *, float *, int)"
ATOMIC_HEADER = "/usr/local/cuda/targets/x86_64-linux/include/device_atomic_functions.hpp"


# ---------------------------------------------------------------- raw page

def test_raw_base_units(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    assert list(p.launches["kernel"]) == [TRIAD, TRIAD, TRIAD, ACCURACY, MATMUL]
    assert list(p.launches["duration_ns"]) == [15040, 15200, 15776, 13888, 418624]
    # thousands separators: '33,559,552'
    assert p.metrics["dram__bytes_read.sum"].iloc[0] == 33_559_552
    assert p.units["gpu__time_duration.sum"] == "ns"
    assert p.device_name == "NVIDIA H200"
    assert "Kernel Name" not in p.metrics.columns
    assert "launch__cluster_scheduling_policy" not in p.metrics.columns  # text-only column


def test_raw_scaled_units_are_converted_to_base(h200: Path):
    p = NcuRawCsvReader().read(h200 / "probe_full_raw_autounits.csv")
    # 'us' -> ns, 'Mbyte' -> byte (decimal prefixes, as ncu prints them)
    assert p.launches["duration_ns"].iloc[0] == pytest.approx(5376)
    assert p.metrics["dram__bytes_read.sum"].iloc[0] == pytest.approx(8_391_424)
    assert p.units["dram__bytes_read.sum"] == "byte"
    rate = p.metrics["dram__bytes.sum.per_second"].iloc[0]
    assert 1e11 < rate < 5e12  # Tbyte/s or Gbyte/s scaled to byte/s


def test_raw_with_ncu_log_preamble_and_nan(tmp_path: Path, h200: Path):
    text = (h200 / "probe_full_raw_base.csv").read_text()
    rows = list(csv.reader(io.StringIO(text)))
    col = rows[0].index("dram__bytes_read.sum")
    rows[2][col] = "nan"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    f = tmp_path / "raw.csv"
    f.write_text("==PROF== Connected to process 507 (/opt/probe/k)\nacc=1 c5=2.0\n" + buf.getvalue())
    p = NcuRawCsvReader().read(f)
    assert len(p.launches) == 5
    assert pd.isna(p.metrics["dram__bytes_read.sum"].iloc[0])
    assert p.metrics["dram__bytes_read.sum"].iloc[1] == 33_559_552


def test_raw_several_processes_and_templated_names(tmp_path: Path, h200: Path):
    rows = list(csv.reader(io.StringIO((h200 / "probe_full_raw_base.csv").read_text())))
    h = rows[0]
    tmpl = "void scale<float, 4>(float *, int)"
    rows[3][h.index("Kernel Name")] = tmpl
    extra = [list(r) for r in rows[2:]]
    for r in extra:
        r[h.index("Process ID")] = "999"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows + extra)
    f = tmp_path / "raw.csv"
    f.write_text(buf.getvalue())
    p = NcuRawCsvReader().read(f)
    assert len(p.launches) == 10
    assert set(p.launches["process_id"]) == {"507", "999"}
    assert tmpl in p.kernels()
    assert short_kernel_name(tmpl) == "scale<float, 4>"


@pytest.mark.parametrize("name, short", [
    ("triad(float *, const float *, const float *, float, int)", "triad"),
    ("void ns::reduce<int, (int)256>(const int *, int *)", "ns::reduce<int, (int)256>"),
    ("void cub::DeviceReduceKernel<cub::Policy<(int)600>, int *, int>(T2, int)",
     "cub::DeviceReduceKernel<cub::Policy<(int)600>, int *, int>"),
    ("plain_c_name", "plain_c_name"),
])
def test_short_kernel_name(name, short):
    assert short_kernel_name(name) == short


# ---------------------------------------------------------------- details page

def test_details_page_maps_speed_of_light_to_metric_names(h200: Path):
    d = NcuDetailsCsvReader().read(h200 / "probe_full_details.csv")
    raw = NcuRawCsvReader().read(h200 / "probe_full_raw_autounits.csv")  # the same capture
    assert list(d.launches["kernel"]) == list(raw.launches["kernel"])
    # details prints '5.38 us', raw '5.376 us'
    assert d.launches["duration_ns"].to_numpy() == pytest.approx(raw.launches["duration_ns"].to_numpy(), rel=2e-3)
    for name in ("sm__throughput.avg.pct_of_peak_sustained_elapsed",
                 "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                 "lts__throughput.avg.pct_of_peak_sustained_elapsed"):
        assert d.metrics[name].to_numpy() == pytest.approx(raw.metrics[name].to_numpy(), abs=0.01)


def test_details_page_with_interleaved_text_and_tables(tmp_path: Path, h200: Path):
    """`--print-details all` puts free text and ncu's own small tables between the metric rows."""
    rows = (h200 / "probe_full_details.csv").read_text().splitlines(keepends=True)
    noise = ['    The system does not have any NVLink connections.\n', '\n',
             '"GPU ID","GPU Name","NUMA ID by CPU Affinity"\n', '"0","NVIDIA H200","0"\n']
    f = tmp_path / "details_all.csv"
    f.write_text("".join(rows[:40] + noise + rows[40:]))
    d = NcuDetailsCsvReader().read(f)
    assert len(d.launches) == 5


# ---------------------------------------------------------------- source page

def test_source_page_lines_and_stalls(h200: Path):
    s = NcuSourceCsvReader().read(h200 / "probe_full_source_cuda_sass.csv")
    lines = s.lines.set_index(["kernel", "file", "line"])
    # triad was launched 3 times: its blocks are summed
    row = lines.loc[(TRIAD, "/opt/probe/k.cu", 8)]
    assert row["samples"] == 4489
    assert row["source"] == "if (i < n) a[i] = b[i] + s*c[i];"
    assert row["stall_long_sb"] == 4125
    assert lines.loc[(MATMUL, "/opt/probe/k.cu", 33)]["samples"] == 50838


def test_source_page_ties_header_lines_to_their_caller(h200: Path):
    s = NcuSourceCsvReader().read(h200 / "probe_full_source_cuda_sass.csv")
    hdr = s.lines[(s.lines["file"] == ATOMIC_HEADER)]
    assert len(hdr) == 1
    assert int(hdr["line"].iloc[0]) == 107
    assert hdr["caller_file"].iloc[0] == "/opt/probe/k.cu"
    assert int(hdr["caller_line"].iloc[0]) == 28  # if (threadIdx.x == 0) atomicAdd(accuracy, count);


def test_source_page_with_unescaped_quotes_in_source_text(tmp_path: Path):
    """A real H200 export of a kernel using __ldg: ncu writes the header's inline asm `"=r"(ret)`
    without doubling its quotes, which a CSV parser miscounts."""
    real = Path(__file__).parent / "fixtures" / "accuracy-h200" / "candidate_source_unescaped_quotes.csv"
    s = NcuSourceCsvReader().read(real)
    ldg = s.lines[(s.lines["file"].str.endswith("sm_32_intrinsics.hpp")) & (s.lines["line"] == 112)]
    assert len(ldg) == 1 and '"=r"(ret)' in ldg["source"].iloc[0]
    assert ldg["samples"].iloc[0] == 42 and int(ldg["caller_line"].iloc[0]) == 15
    main = s.lines[s.lines["file"].str.endswith("/accuracy/main.cu")]
    assert main.set_index("line").loc[24, "stall_long_sb"] == 3828
    # A row that is cut short is still an error, quotes or not.
    rows = real.read_text().splitlines(keepends=True)
    n = next(i for i, r in enumerate(rows) if '"=r"(ret)' in r)
    cut = tmp_path / "cut.csv"
    cut.write_text("".join(rows[:n]) + rows[n].rsplit('","', 3)[0] + '"\n' + "".join(rows[n + 1:]))
    with pytest.raises(ProfileFormatError, match="fields where its block's header has"):
        NcuSourceCsvReader().read(cut)


# ---------------------------------------------------------------- .ncu-rep

def test_report_agrees_with_its_csv_exports(h200: Path):
    r = NcuReportReader().read(h200 / "probe_full.ncu-rep")
    raw = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    src = NcuSourceCsvReader().read(h200 / "probe_full_source_cuda_sass.csv")
    assert r.device_name == "NVIDIA H200"
    assert list(r.launches["kernel"]) == list(raw.launches["kernel"])
    assert list(r.launches["duration_ns"]) == list(raw.launches["duration_ns"])
    assert list(r.launches["grid"]) == ["(16384, 1, 1)"] * 3 + ["(1024, 1, 1)", "(64, 64, 1)"]
    for name in ("dram__bytes.sum.per_second", "sm__throughput.avg.pct_of_peak_sustained_elapsed"):
        assert r.metrics[name].to_numpy() == pytest.approx(raw.metrics[name].to_numpy(), rel=1e-4)
    # Per-line PC sampling: the report maps inlined header code to the caller itself, so compare
    # user lines, where both must agree exactly.
    a = r.lines.set_index(["kernel", "file", "line"])["samples"]
    b = src.lines[src.lines["file"] == "/opt/probe/k.cu"].set_index(["kernel", "file", "line"])["samples"]
    assert a.sort_index().to_dict() == b.sort_index().to_dict()
    assert r.lines.set_index(["kernel", "line"]).loc[(MATMUL, 33), "source"].startswith("if (r<n && c<n)")


def test_exports_of_one_capture_merge_without_double_counting(h200: Path):
    p = read_profiles(reports=[h200 / "probe_full.ncu-rep"], raw=[h200 / "probe_full_raw_base.csv"],
                      source=[h200 / "probe_full_source_cuda_sass.csv"])
    assert len(p.launches) == 5
    assert p.launches["duration_ns"].sum() == 15040 + 15200 + 15776 + 13888 + 418624
    m = p.lines[(p.lines["kernel"] == MATMUL) & (p.lines["line"] == 33)]
    assert m["samples"].tolist() == [50838]


def test_read_any_tells_formats_by_content(tmp_path: Path, h200: Path):
    f = tmp_path / "weird_name.txt"
    f.write_bytes((h200 / "probe_full_raw_base.csv").read_bytes())
    assert len(read_any(f).launches) == 5
    g = tmp_path / "report.bin"
    g.write_bytes((h200 / "probe_full.ncu-rep").read_bytes())
    assert len(read_any(g).launches) == 5


# ---------------------------------------------------------------- bad input

def _cut(src: Path, dst: Path, fraction: float) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])
    return dst


@pytest.mark.parametrize("reader, fixture, says", [
    (NcuRawCsvReader, "probe_full_raw_base.csv", "(the file looks truncated)"),
    (NcuSourceCsvReader, "probe_full_source_cuda_sass.csv", "(the file looks truncated"),
    (NcuDetailsCsvReader, "probe_full_details.csv", "(the file looks truncated)"),
    (NcuReportReader, "probe_full.ncu-rep", "the report is cut off"),
])
def test_truncated_files_are_rejected(tmp_path: Path, h200: Path, reader, fixture, says):
    f = _cut(h200 / fixture, tmp_path / fixture, 0.61)
    with pytest.raises(ProfileFormatError) as e:
        reader().read(f)
    msg = str(e.value)
    assert msg.startswith(str(f))
    assert says in msg


def test_a_report_of_empty_blocks_is_refused_without_reading_it_whole(tmp_path: Path):
    """The check walks the block sizes through the file (a report of the pull request's run is its
    code's to write): millions of empty blocks are no report."""
    from runner.profiles.readers.report import MAX_BLOCKS, REPORT_MAGIC, check_report_file

    f = tmp_path / "empty.ncu-rep"
    f.write_bytes(REPORT_MAGIC + b"\0" * 4 * (MAX_BLOCKS + 2))
    with pytest.raises(ProfileFormatError, match=f"more than {MAX_BLOCKS} blocks"):
        check_report_file(f)
    f.write_bytes(REPORT_MAGIC + b"\0" * 4 * 10)  # ten empty blocks: whole
    check_report_file(f)


@pytest.mark.parametrize("reader, fixture, says", [
    (NcuRawCsvReader, "probe_full_details.csv", "this is an `ncu --csv --page details` export; expected an "
                                                "`ncu --csv --page raw` export"),
    (NcuRawCsvReader, "probe_full_source_cuda_sass.csv", "this is an `ncu --csv --page source"),
    (NcuDetailsCsvReader, "probe_full_raw_base.csv", "this is an `ncu --csv --page raw` export; expected an "
                                                     "`ncu --csv --page details`"),
    (NcuSourceCsvReader, "probe_full_raw_base.csv", "expected an `ncu --csv --page source --print-source cuda,sass`"),
])
def test_wrong_page_is_named(h200: Path, reader, fixture, says):
    with pytest.raises(ProfileFormatError) as e:
        reader().read(h200 / fixture)
    assert says in str(e.value)
    assert "Export it with: ncu -i" in str(e.value)


def test_csv_not_from_ncu(tmp_path: Path):
    f = tmp_path / "sales.csv"
    f.write_text("region,quarter,revenue\nnorth,Q1,100\n")
    for reader in (NcuRawCsvReader, NcuDetailsCsvReader, NcuSourceCsvReader):
        with pytest.raises(ProfileFormatError, match="not an Nsight Compute CSV export"):
            reader().read(f)


def test_empty_and_missing_files(tmp_path: Path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ProfileFormatError, match="empty file"):
        NcuRawCsvReader().read(empty)
    with pytest.raises(ProfileFormatError, match="file not found"):
        NcuRawCsvReader().read(tmp_path / "missing.csv")
    with pytest.raises(ProfileFormatError, match="file not found"):
        NcuReportReader().read(tmp_path / "missing.ncu-rep")


def test_report_that_is_not_a_report(tmp_path: Path):
    f = tmp_path / "x.ncu-rep"
    f.write_text("hello")
    with pytest.raises(ProfileFormatError, match="not an Nsight Compute report"):
        NcuReportReader().read(f)


def test_source_page_without_lineinfo(tmp_path: Path, h200: Path):
    """Built without -lineinfo, the source page has SASS rows only: no CUDA line rows."""
    kept = [ln for ln in (h200 / "probe_full_source_cuda_sass.csv").read_text().splitlines(keepends=True)
            if not (ln.startswith('"') and ln[1:2].isdigit())]
    f = tmp_path / "nolineinfo.csv"
    f.write_text("".join(kept))
    with pytest.raises(ProfileFormatError) as e:
        NcuSourceCsvReader().read(f)
    assert "built without -lineinfo" in str(e.value)
    assert "nvcc -lineinfo" in str(e.value)


def test_source_page_exported_without_metrics(tmp_path: Path):
    f = tmp_path / "cuda_only.csv"
    f.write_text('"File Path","/a.cu"\n"Function Name","k(int)"\n"Line No","Source"\n"3","x = 1;"\n')
    with pytest.raises(ProfileFormatError, match="--print-source cuda,sass"):
        NcuSourceCsvReader().read(f)


def test_merge_fills_durations_from_a_later_export(h200: Path):
    src = NcuSourceCsvReader().read(h200 / "probe_full_source_cuda_sass.csv")
    raw = NcuRawCsvReader().read(h200 / "probe_full_raw_base.csv")
    assert src.launches.empty  # the source page times nothing: every duration comes from the raw export
    p = merge([src, raw])
    assert len(p.launches) == 5 and not p.lines.empty
    assert p.launches["duration_ns"].notna().all()
    matmul = p.launches[p.launches["kernel"].str.startswith("matmul")]
    assert matmul["duration_ns"].tolist() == [418624.0]  # the raw export's gpu__time_duration.sum, in ns
    assert sorted(p.launches["duration_ns"]) == sorted(raw.launches["duration_ns"])


def test_real_capture_without_lineinfo(h200: Path):
    """Captured on the H200 from the probe built without -lineinfo (see CAPTURE.md)."""
    with pytest.raises(ProfileFormatError, match="built without -lineinfo"):
        NcuSourceCsvReader().read(h200 / "probe_nolineinfo_source.csv")
    with pytest.raises(ProfileFormatError, match="built without -lineinfo"):
        NcuReportReader().read(h200 / "probe_nolineinfo.ncu-rep")


@pytest.mark.parametrize("first", ["report", "raw"])
def test_a_launch_seen_through_two_exports_of_one_capture_counts_once(first: str):
    """The details page rounds durations to 0.01 us, so the launch's duration cannot identify it:
    matmul ran once for 418.624 us, not twice (issue #15, item 1)."""
    from conftest import FIXTURES

    from runner.analysis.evidence import diagnose
    from runner.base.config import AnalysisConfig
    from runner.profiles.readers import read_profiles

    base = FIXTURES / "ncu-h200"
    precise = {"report": {"reports": [base / "probe_full.ncu-rep"]}, "raw": {"raw": [base / "probe_full_raw_base.csv"]}}
    profile = read_profiles(**precise[first], details=[base / "probe_full_details_all_sol.csv"])
    assert len(profile.launches) == 5
    (matmul,) = [k for k in diagnose(profile, AnalysisConfig()).kernels if k.kernel.startswith("matmul")]
    assert (matmul.launches, matmul.total_ns) == (1, 418624.0)


def test_the_ncu_report_of_an_nsight_compute_install_is_named_in_a_warning(tmp_path: Path, h200: Path):
    """An Nsight Compute install's own module (extras/python/ncu_report.py) first on PYTHONPATH:
    2025.3.1's crashed reading our captures, so using one is said; here a stand-in that cannot
    load anything shows the warning and the error that names the report."""
    import os
    import subprocess
    import sys

    extras = tmp_path / "nsight-compute" / "2025.3.1" / "extras" / "python"
    extras.mkdir(parents=True)
    (extras / "ncu_report.py").write_text("def load_report(path):\n    raise Exception('stand-in')\n")
    report = next(h200.glob("*.ncu-rep"))
    code = ("import logging, sys\nlogging.basicConfig(level=logging.WARNING)\n"
            "from runner.profiles.readers.report import NcuReportReader\n"
            "from runner.base.errors import ProfileFormatError\n"
            f"try:\n    NcuReportReader().read({str(report)!r})\nexcept ProfileFormatError as e:\n"
            "    print('error:', e)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(extras), str(Path(__file__).parents[1])])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"using the ncu_report module of an Nsight Compute install ({extras / 'ncu_report.py'})" in r.stderr
    assert "ncu_report could not load it (stand-in)" in r.stdout and report.name in r.stdout
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert "Nsight Compute install" not in plain.stderr  # the pinned package: no warning


def test_a_long_run_of_digits_is_read_in_one_pass():
    """A cell's number pattern could split a run of digits many ways (20,000 digits and a letter
    took 16 s; an attacker's pass): the digits after a point are read only after one."""
    from runner.profiles.readers.ncu_csv import parse_number

    assert math.isnan(parse_number("1" * 200_000 + "x"))  # (hours before)
    assert [parse_number(t) for t in ("1,234.5", "12.", ".5", "-3.2E-4")] == [1234.5, 12.0, 0.5, -0.00032]
