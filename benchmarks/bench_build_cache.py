"""How long a build (Builder.compile, with macros) takes for one program, built once and then found in the build cache
(the proposal stage's original, the evaluation's baseline and candidate are cache hits): three
calls against a fresh OPTIMAS_BUILD_CACHE. Needs nvcc and the program's build tools; no GPU.

Usage: python benchmarks/bench_build_cache.py path/to/optimas.yml [--arch sm_90]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.base.config import load_config  # noqa: E402 (after the path above)
from runner.toolchain.builder import Builder, default_build_cache  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    lc = load_config(args.config)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["OPTIMAS_BUILD_CACHE"] = cache
        for i in range(3):
            t0 = time.monotonic()
            built = Builder(lc, args.arch, default_build_cache()).compile({}, macros=True)
            print(f"call {i + 1}: ok {built.ok}, cached {built.cached}, {time.monotonic() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
