"""What a Makefile builds, asked of make itself: `make -p -n -B` prints, without running a recipe,
the commands it would run for the default goal (every one, as if nothing were up to date), then its
database, which names the default goal (`.DEFAULT_GOAL := all`).

A Makefile whose text names its program only through a variable and a pattern rule (`EXE = name`,
`all: $(EXE)`, `% : %.cu`) has no rule init's reading of the text can take for the program's; make
expands it. The commands that link (an `-o` output that is not an object or a library, no `-c`) say
what the build makes.
"""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

from runner.base.processes import run_process
from runner.base.progress import progress_for

progress = progress_for("init")

DRY_RUN_TIMEOUT_S = 60.0
NOT_PROGRAM = (".o", ".obj", ".a", ".so", ".lib", ".dll", ".ptx", ".cubin", ".fatbin", ".d", ".i", ".ii")
COMPILERS = re.compile(r"(?:^|/)(?:nvcc|g\+\+|c\+\+|gcc|cc|clang\+\+|clang|icpx|mpicxx|mpicc|nvc\+\+)$")


@dataclass(frozen=True)
class DryRun:
    """What make would do for its default goal."""

    goal: str | None  # .DEFAULT_GOAL
    commands: list[str]  # the recipes' commands, expanded, in order
    programs: list[str]  # what the linking commands make (their -o), relative to the Makefile's folder


def output_of(words: list[str]) -> str | None:
    """What a compiler command writes (`-o out` or `-oout`), or None when it names nothing."""
    out = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "-o"), None)
    return out or next((w[2:] for w in words if w.startswith("-o") and len(w) > 2), None)


def linked(command: str) -> str | None:
    """The program a compiler command links (`nvcc -O3 -o vecadd vecadd.cu` -> vecadd), or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or not COMPILERS.search(words[0]) or "-c" in words:
        return None
    out = output_of(words)
    if out is None or out.endswith(NOT_PROGRAM):
        return None
    return out


def dry_run(folder: Path, makefile: str = "Makefile", timeout_s: float = DRY_RUN_TIMEOUT_S,
            always: bool = True) -> DryRun | None:
    """make's dry run of the default goal in `folder` (None where make is missing or fails);
    `always` off: without -B (an automake Makefile's -B remakes the Makefile itself, and its
    rule for that reruns configure even in a dry run)."""
    make = shutil.which("make")
    if make is None:
        return None
    progress(f"asking make what {makefile} builds (make -pnB: a dry run, no recipe runs)")
    r = run_process([make, "-f", makefile, "-p", "-n", *(["-B"] if always else [])], cwd=folder,
                    timeout_s=timeout_s, what="make", merge_stderr=False)
    if r.timed_out or r.returncode != 0:
        return None
    head, _, database = r.output.partition("\n# GNU Make")
    commands = [line.strip() for line in head.splitlines() if line.strip() and not line.startswith("make")]
    goal = re.search(r"^\.DEFAULT_GOAL :?= (\S+)", database, re.M)
    programs = [p for c in commands if (p := linked(c)) is not None]
    return DryRun(goal.group(1) if goal else None, commands, list(dict.fromkeys(programs)))
