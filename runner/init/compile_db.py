"""compile_commands.json beside the config: what the build compiles, in the format compilers' tools
read (a JSON list of {directory, file, arguments, output}), from what init saw the build do (CMake's
export, make's dry run, the nvcc line init writes, or the build itself, run once in a copy with its
nvcc calls recorded: observe.py). Paths are relative where the build gives them so: `directory` is
the folder the command ran in (the project folder, or one below it) relative to the file, so that
the file moves with the repository.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from runner.base.runstore import atomic_write_text
from runner.init.programs import Found
from runner.init.project import count_of

COMPILE_COMMANDS = "compile_commands.json"


def compile_entries(root: Path, folder: Path, found: list[Found]) -> list[dict]:
    """Every compile command of `found`'s programs once (one entry per source and output), with
    `directory`: the project folder `root` relative to `folder` (where the file goes), or the
    folder below it that an entry's own `directory` names (relative to `root`)."""
    top, here = root.resolve(), folder.resolve()
    out, seen = [], set()
    for program in found:
        for entry in program.commands:
            directory = os.path.relpath(os.path.normpath(top / entry.get("directory", ".")), here)
            key = (directory, entry["file"], entry.get("output", ""))
            if key not in seen:
                seen.add(key)
                out.append({"directory": directory, **{k: v for k, v in entry.items() if k != "directory"}})
    return out


def write_compile_commands(path: Path, root: Path, found: list[Found], force: bool = False, how: str = "") -> str:
    """Write compile_commands.json for what the build was seen to compile; what init says of it
    (`how`: how it was seen, where the build was run to observe it)."""
    entries = compile_entries(root, path.parent, found)
    if not entries:
        return (f"{COMPILE_COMMANDS}: not written: " + (f"{how}, and no nvcc call compiled a source" if how else
                "the build could not be observed (no CMake File API or export, no compiler command in make's "
                "dry run)"))
    if path.exists() and not force:
        return f"{COMPILE_COMMANDS}: {path} exists; not replaced (pass --force)"
    atomic_write_text(path, json.dumps(entries, indent=2) + "\n")
    return (f"wrote {path}: {count_of(len(entries), 'compile command')} of {count_of(len(found), 'program')}, "
            + (f"paths relative to {entries[0]['directory']}" if len({e['directory'] for e in entries}) == 1
               else "paths relative to each command's folder")
            + (f" ({how})" if how else ""))
