"""What a Makefile builds, asked of make itself: `make -p -n -B` prints, without running a recipe,
the commands it would run for the default goal (every one, as if nothing were up to date), then its
database, which names the default goal (`.DEFAULT_GOAL := all`).

A Makefile whose text names its program only through a variable and a pattern rule (`EXE = name`,
`all: $(EXE)`, `% : %.cu`) has no rule init's reading of the text can take for the program's; make
expands it. The commands that link (an `-o` output that is not an object or a library, no `-c`) say
what the build makes.

A recursive Makefile (`$(MAKE) -C sub`) runs its sub-makes even in a dry run, and they inherit -n
and -p: each prints its commands, then its own database, between make's "Entering directory" and
"Leaving directory" lines; the top make's database comes last. Each command keeps the folder it
runs in, and what a sub-make links is named from the top folder (`sub/prog`).
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from runner.base.processes import run_process
from runner.base.progress import progress_for

progress = progress_for("init")

DRY_RUN_TIMEOUT_S = 60.0
NOT_PROGRAM = (".o", ".obj", ".a", ".so", ".lib", ".dll", ".ptx", ".cubin", ".fatbin", ".d", ".i", ".ii")
# make's -w lines; with -p they are printed as comments ("# make[1]: Entering directory '/x/sub'")
_DIRECTORY = re.compile(r"^(?:#\s*)?\S*make(?:\[\d+\])?: (Entering|Leaving) directory [`'](.*)'\s*$")
_MAKE = re.compile(r"^\S*/?g?make(?:\s|$)")  # a recursive make's own command line, echoed
COMPILERS = re.compile(r"(?:^|/)(?:nvcc|g\+\+|c\+\+|gcc|cc|clang\+\+|clang|icpx|mpicxx|mpicc|nvc\+\+)$")


@dataclass(frozen=True)
class DryRun:
    """What make would do for its default goal."""

    goal: str | None  # .DEFAULT_GOAL
    commands: list[str]  # the recipes' commands, expanded, in order
    programs: list[str]  # what the linking commands make (their -o), relative to the Makefile's folder
    directories: list[str] = field(default_factory=list)  # each command's folder, relative to it ("." at the top)

    def folder_of(self, command_index: int) -> str:
        """The folder (relative to the Makefile's) command `command_index` runs in."""
        return self.directories[command_index] if command_index < len(self.directories) else "."


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
    rule for that reruns configure even in a dry run). Asked once per Makefile as it stands: init
    reads a Makefile of many programs once for the list and once for each program's build."""
    make = shutil.which("make")
    if make is None:
        return None
    where = folder.resolve()
    try:
        st = (where / makefile).stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns, where.stat().st_mtime_ns)
    except OSError:
        stamp = None  # make finds no such file and says so
    return _asked(make, where, makefile, always, timeout_s, stamp)


@lru_cache(maxsize=64)
def _asked(make: str, folder: Path, makefile: str, always: bool, timeout_s: float,
           stamp: tuple[int, ...] | None) -> DryRun | None:
    """make's dry run, remembered per Makefile as it stands: `stamp` (its inode, size and modification
    time, and its folder's, which a file added or removed there changes, as a $(wildcard) would see)
    is part of the key only."""
    progress(f"asking make what {makefile} builds (make -pnB: a dry run, no recipe runs)")
    r = run_process([make, "-f", makefile, "-p", "-n", *(["-B"] if always else [])], cwd=folder,
                    timeout_s=timeout_s, what="make", merge_stderr=False)
    return None if r.timed_out or r.returncode != 0 else parse_dry_run(r.output, folder)


def parse_dry_run(output: str, folder: Path) -> DryRun:
    """A dry run's commands (each with its folder, sub-makes' too), its programs and the top
    make's default goal, from `make -p -n` output run in `folder`."""
    top = folder.resolve()
    stack, in_database = [top], False
    commands: list[str] = []
    directories: list[str] = []
    goal = None
    for line in output.splitlines():
        if (m := _DIRECTORY.match(line)) is not None:
            if m.group(1) == "Entering":
                stack.append(Path(m.group(2)))
            elif len(stack) > 1:
                stack.pop()
            continue
        if line.startswith("# GNU Make"):
            in_database = True
        elif in_database:
            in_database = not line.startswith("# Finished Make data base")
            if len(stack) == 1 and (g := re.match(r"^\.DEFAULT_GOAL :?= (\S+)", line)):
                goal = g.group(1)
        elif (command := line.strip()) and not _MAKE.match(command) and not command.startswith("#"):
            where = os.path.relpath(stack[-1], top)
            if not where.startswith(".."):
                commands.append(command)
                directories.append(posixpath.normpath(where))
    programs = [posixpath.normpath(posixpath.join(d, p)) for c, d in zip(commands, directories, strict=True)
                if (p := linked(c)) is not None]
    return DryRun(goal, commands, list(dict.fromkeys(programs)), directories)
