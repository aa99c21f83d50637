"""What `optimas init` proposes as size constants (app.size_constants) for programs whose run takes
no size argument, and, with --scales, whether the program builds at each counter scale the way the
profiling agent builds it: init's config, then build_at_scale (the constants' definitions scaled in
a copy of the workspace, through the build cache).

Usage: python benchmarks/size_constants_survey.py FOLDER... [--build "nvcc ... -o {exe} FILES" ...]
       [--scales 0.25,2]   (no GPU needed; --scales needs nvcc)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runner.base.config import load_config  # noqa: E402 (after the path above)
from runner.init.write import write_config  # noqa: E402
from runner.scan.size_constants import definitions_of, workspace_texts  # noqa: E402
from runner.toolchain.builder import build_at_scale  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--build", action="append", default=None,
                   help="the build command for each folder, in order (init's own when not given)")
    p.add_argument("--scales", default="")
    a = p.parse_args()
    scales = [float(s) for s in a.scales.split(",") if s]
    heads = ["program", "size_constants written by init", "definitions scaled",
             *(f"builds at {s:g}" for s in scales)]
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for i, folder in enumerate(a.folders):
        build = a.build[i] if a.build and i < len(a.build) else None
        out = Path(tempfile.mkdtemp()) / "optimas.yml"
        try:
            write_config(folder, out, build=build, force=True)
        except Exception as e:  # a survey reports every program: the failure is the row
            print("| " + " | ".join([folder.name, f"init failed: {str(e)[:200]}", "", *[""] * len(scales)]) + " |")
            continue
        lc = load_config(out)
        names = lc.config.app.size_constants
        space, workdir = lc.dirs
        texts = workspace_texts(space, workdir)
        written = ", ".join(f"{n} x{len(definitions_of(n, texts))}" for n in names) or "-"
        cells = []
        for s in scales:
            if not names:
                cells.append("")
                continue
            t0 = time.monotonic()
            r = build_at_scale(lc, "sm_90", texts, s, out.parent / f"app-{s:g}")
            cells.append(f"{'yes' if r.ok else 'no'} ({time.monotonic() - t0:.1f} s)")
        print("| " + " | ".join([folder.name, ", ".join(names) or "-", written, *cells]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
