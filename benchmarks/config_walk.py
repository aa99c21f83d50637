"""The configuration's walk through one run (issue #45, item 2): which functions of runner/ and bot/ the
configuration is handed to, and in how many modules.

A *stay* is a function called, at least once during the run, with the loaded configuration, the
configuration, one of its sections (app, profiling, analysis, llm, evaluation, ...) or the run context
(which carries it) among its arguments; its *room* is the function's module; *returns* are the stays
beyond the first in each room (stays - rooms): the times the walk comes back to a room it has been in.
The issue's figures (145 stays in 33 rooms, 112 returns) count the same way.

Usage: python benchmarks/config_walk.py [--config config.yml] [--json OUT]
The run is the README's demo command (`optimas run --config CONFIG`, recorded profiles, offline backend),
in this process, into a temporary runs folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from pydantic import BaseModel

REPO = Path(__file__).resolve().parent.parent
OURS = (str(REPO / "runner") + "/", str(REPO / "bot") + "/")


def walk(config: Path) -> dict:
    """Run the demo with a profiler hook and count the stays, rooms and returns."""
    from runner.base.config import Config, LoadedConfig
    from runner.base.context import RunContext
    from runner.cli import main

    sections = tuple({type(getattr(Config(), name)) for name in Config.model_fields
                      if isinstance(getattr(Config(), name), BaseModel)})
    kinds = (LoadedConfig, Config, RunContext, *sections)
    stays: dict[str, str] = {}

    def hook(frame, event, arg):  # noqa: ARG001 - sys.setprofile's signature
        if event != "call" or not frame.f_code.co_filename.startswith(OURS):
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(isinstance(frame.f_locals.get(n), kinds) for n in names):
            module = str(Path(code.co_filename).relative_to(REPO).with_suffix("")).replace("/", ".")
            stays.setdefault(f"{module}.{code.co_qualname}", module)

    with tempfile.TemporaryDirectory() as runs:
        sys.setprofile(hook)
        try:
            rc = main(["run", "--config", str(config), "--runs-dir", runs])
        finally:
            sys.setprofile(None)
    rooms = Counter(stays.values())
    return {"rc": rc, "stays": len(stays), "rooms": len(rooms), "returns": len(stays) - len(rooms),
            "by_room": dict(rooms.most_common()), "functions": sorted(stays)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", type=Path, default=REPO / "config.yml")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    figures = walk(args.config)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"run exit {figures['rc']}: {figures['stays']} stays in {figures['rooms']} rooms, "
          f"{figures['returns']} returns")
    for room, n in list(figures["by_room"].items())[:12]:
        print(f"  {n:3d} {room}")
    return 0 if figures["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
