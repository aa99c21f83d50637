"""What one build's workspace copy and build-cache key cost for one program of a large suite (HeCBench's
layout: src/<program>/ beside src/include/, a Makefile with -I../include, so the workspace is src/),
with the whole workspace copied and with only the parts app.workspace_paths names. The suite is
generated: PROGRAMS folders of FILES files of BYTES bytes each. No GPU, no nvcc (nothing is built).

Usage: python benchmarks/bench_workspace_copy.py [--programs 1700] [--files 9] [--bytes 10000] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.base.config import load_config  # noqa: E402 (after the path above)
from runner.toolchain.builder import _build_key, copy_workspace  # noqa: E402


def make_suite(src: Path, programs: int, files: int, size: int) -> Path:
    """The generated suite; returns the surveyed program's folder (the first)."""
    (src / "include").mkdir(parents=True)
    (src / "include" / "common.h").write_text("#define CHECK(x) (x)\n")
    blob = b"x" * size
    for i in range(programs):
        folder = src / f"p{i:04d}-cuda"
        folder.mkdir()
        for j in range(files):
            (folder / f"f{j}.cu").write_bytes(blob)
    first = src / "p0000-cuda"
    (first / "Makefile").write_text("main: f0.cu\n\tnvcc -I../include -o main f0.cu\n")
    return first


def copy_once(lc, dest: Path) -> None:
    """One build's copy of the workspace, removed again."""
    copy_workspace(lc, dest)
    shutil.rmtree(dest)


def timed(what, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.monotonic()
        what()
        out.append(time.monotonic() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=1700)
    ap.add_argument("--files", type=int, default=9)
    ap.add_argument("--bytes", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        prog = make_suite(Path(tmp) / "src", a.programs, a.files, a.bytes)
        for name, paths in (("whole workspace", ""), ("workspace_paths", "workspace_paths: [include, p0000-cuda], ")):
            (prog / "optimas.yml").write_text(
                f"app: {{workspace: .., {paths}sources: [f0.cu], build: 'make main', run: ./main}}\n")
            lc = load_config(prog / "optimas.yml")
            copies = timed(lambda lc=lc, name=name: copy_once(lc, Path(tmp) / "copies" / name), a.repeat)
            keys = timed(lambda lc=lc: _build_key(lc, {}, "sm_90"), a.repeat)
            rows[name] = {"copy_s_median": round(statistics.median(copies), 3),
                          "key_s_median": round(statistics.median(keys), 3),
                          "copy_s": [round(x, 3) for x in copies], "key_s": [round(x, 3) for x in keys]}
            print(f"{name}: copy {rows[name]['copy_s_median']} s, cache key {rows[name]['key_s_median']} s "
                  f"(medians of {a.repeat})")
    result = {"suite": {"programs": a.programs, "files_each": a.files, "bytes_each": a.bytes,
                        "total_mb": round(a.programs * a.files * a.bytes / 1e6, 1)}, "rows": rows}
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
