"""The build of a project built by a script of its own (build.sh, a `build` script) and no build
file: what it compiles cannot be told from its text, so init runs it once in a copy (observe.py)
and learns the binary it links from that build."""

from __future__ import annotations

import re
from pathlib import Path

# The names a build script goes by at the top of a project.
SCRIPT_NAME = re.compile(r"(?i)(?:build|compile|make)(?:[_-]\w+)?(?:\.sh|\.bash)?")


def script_in(root: Path) -> Path | None:
    """The build script at the top of `root` (build.sh first, then build, compile.sh, make.sh,
    build_all.sh ...), None if none: a file whose name says so and that a shell runs (a `.sh`
    name or a shell's #! line)."""
    found = sorted((p for p in root.iterdir() if p.is_file() and SCRIPT_NAME.fullmatch(p.name)),
                   key=lambda p: (not p.name.lower().startswith("build"), p.suffix == "", len(p.name), p.name))
    for path in found:
        if path.suffix in (".sh", ".bash") or _shell_of(path):
            return path
    return None


def _shell_of(path: Path) -> str:
    """The shell of a script's #! line (bash or sh), "" if it has none."""
    try:
        first = path.read_text(errors="replace").split("\n", 1)[0]
    except OSError:
        return ""
    m = re.match(r"#!\s*\S*?(?:/env\s+)?\b(bash|sh|dash|zsh)\b", first)
    return m.group(1) if m else ""


def script_build(script: Path) -> tuple[str, str, list[str], str]:
    """detect_build's answer for a build script: run by its shell with -arch and -lineinfo for every
    nvcc it runs (NVCC_APPEND_FLAGS); the binary it makes is copied to {exe} once the build
    observed in a copy says which it links (observe.py)."""
    shell = "bash" if script.suffix == ".bash" or _shell_of(script) == "bash" else "sh"
    build = f"sh -c 'NVCC_APPEND_FLAGS=\"-arch={{arch}} {{lineinfo}}\" {shell} {script.name}'"
    notes = [f"{script.name} builds the program (a script: what it compiles is learned by running it once in a copy); "
             "every nvcc it runs gets -arch={arch} {lineinfo} through NVCC_APPEND_FLAGS"]
    return "script", build, notes, ""
