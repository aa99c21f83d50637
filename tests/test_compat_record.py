"""The compat record (runner/toolchain/compat_record.py): the nvcc shim writes it, the compiler reads it
back, the run's manifest keeps it and the App's summary says it, one typed record throughout."""

from __future__ import annotations

import json
from pathlib import Path

from runner.toolchain.compat_record import DIALECT, CompatRecord
from runner.toolchain.compiler import CompileResult, read_compat
from runner.toolchain.nvcc_shim import COMPAT_HEADERS, COMPAT_RECORD, apply_compat, apply_dialect

# Lines as the shim wrote them before the record was typed (a run folder's manifest holds the same form).
RECORDED = ('{"header": "cuda_legacy_warp.h", "names": ["__shfl_down"], "sources": ["k.cu"], "cwd": "/tmp/b"}\n'
            '{"header": "C++17", "names": ["-std=c++14"], "sources": ["k.cu"], "cwd": "/tmp/b"}\n')


def test_a_recorded_compat_line_round_trips_through_the_record():
    for line in RECORDED.splitlines():
        item = json.loads(line)
        record = CompatRecord.from_json(item)
        assert record is not None and record.as_json() == item and json.dumps(record.as_json()) == line
    warp, dialect = (CompatRecord.from_json(json.loads(x)) for x in RECORDED.splitlines())
    assert warp == CompatRecord("cuda_legacy_warp.h", ("__shfl_down",), ("k.cu",), "/tmp/b") and not warp.is_dialect
    assert dialect is not None and dialect.is_dialect and dialect.header == DIALECT
    # a manifest written before `cwd` was recorded, and what the build could write instead of a record
    assert CompatRecord.from_json({"header": "h", "names": ["n"], "sources": []}) == CompatRecord("h", ("n",), ())
    for bad in ([], {"header": 1, "names": [], "sources": []}, {"header": "h", "names": "n", "sources": []},
                {"header": "h", "names": [1], "sources": []}, {"header": "h", "names": [], "sources": [], "cwd": 2}):
        assert CompatRecord.from_json(bad) is None, bad


def test_the_shim_writes_what_the_compiler_reads_back_and_a_build_result_keeps(tmp_path: Path, monkeypatch):
    (tmp_path / "k.cu").write_text("__global__ void k(float *v) { v[0] = __shfl_down(v[0], 1); }\n")
    record = tmp_path / "compat.jsonl"
    monkeypatch.setenv(COMPAT_HEADERS, "1")
    monkeypatch.setenv(COMPAT_RECORD, str(record))
    code = (tmp_path / "k.cu").read_text() + "#include <cooperative_groups.h>\n"
    args = apply_compat(["-O2", "k.cu"], tmp_path, code)
    assert args[0] == "--pre-include" and args[1].endswith("cuda_legacy_warp.h")
    apply_dialect(["-std=c++14", "k.cu"], tmp_path, code, 13)
    written = record.read_text()
    assert written == RECORDED.replace("/tmp/b", str(tmp_path))  # the same JSON as before the record was typed
    read = read_compat(record)
    assert read == [CompatRecord("cuda_legacy_warp.h", ("__shfl_down",), ("k.cu",), str(tmp_path)),
                    CompatRecord(DIALECT, ("-std=c++14",), ("k.cu",), str(tmp_path))]
    # the build cache stores a build's result as JSON, as it did when records were dicts
    result = CompileResult(ok=True, command=["make"], output="", compat=read)
    assert CompileResult.model_validate_json(result.model_dump_json()).compat == read
    stored = json.loads(result.model_dump_json())
    assert stored["compat"] == [json.loads(x.replace("/tmp/b", str(tmp_path))) for x in RECORDED.splitlines()]
    assert CompileResult.model_validate(stored).compat == read


def test_the_summary_says_what_the_manifest_records(tmp_path: Path):
    """The proposal stage keeps the records in the run's manifest as JSON (compat_headers); the App
    reads them back into records and its summary says each (bot/pipeline.py, bot/summary.py)."""
    from bot.outcome import ProgramOutcome
    from bot.summary import summary_text
    from runner.base.runstore import create_run
    from runner.proposal.stage import _record_compat

    run = create_run(tmp_path / "runs")
    _record_compat(run, [r for r in map(CompatRecord.from_json, map(json.loads, RECORDED.splitlines())) if r])
    manifest = json.loads((run.path / "manifest.json").read_text())["compat_headers"]
    assert manifest == [json.loads(x) for x in RECORDED.splitlines()]
    manifest.append({"header": "x", "names": "not a list"})
    compat = tuple(filter(None, map(CompatRecord.from_json, manifest)))
    assert len(compat) == 2
    text = summary_text(ProgramOutcome("no change", "no change", "no change", run="r", compat=compat), "a" * 40,
                        False)
    assert "`cuda_legacy_warp.h` pre-included into `k.cu`" in text
    assert "`k.cu` compiled as C++17 where the build said `-std=c++14`" in text


def test_check_config_build_says_each_record(tmp_path: Path, monkeypatch, capsys):
    """check-config --build names what app.legacy_cuda changed in the build, from the records."""
    import runner.toolchain.builder
    from runner.base.config import load_config
    from runner.cli import _check_build

    (tmp_path / "optimas.yml").write_text("app:\n  build: 'nvcc -o {exe} k.cu'\n  run: '{exe}'\n")
    records = [CompatRecord.from_json(json.loads(x)) for x in RECORDED.splitlines()]
    built = CompileResult(ok=True, command=["nvcc"], output="", compat=[r for r in records if r is not None])
    monkeypatch.setattr(runner.toolchain.builder.Builder, "compile", lambda *a, **k: built)
    assert _check_build(load_config(tmp_path / "optimas.yml")) == 0
    out = capsys.readouterr().out
    assert "  compatibility header cuda_legacy_warp.h pre-included into k.cu (__shfl_down)" in out
    assert "  k.cu compiled as C++17 where the build said -std=c++14" in out
