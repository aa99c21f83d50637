"""What `optimas init` prints: the programs written with their kernels, what to check, the next steps."""

from __future__ import annotations

from pathlib import Path

from runner.init.project import count_of
from runner.init.render import ProgramSpec


def summary(specs: list[ProgramSpec], out: Path, compile_commands: str = "") -> list[str]:
    """The lines init prints for the config it wrote to `out` (`compile_commands`: what it says of
    compile_commands.json)."""
    if len(specs) == 1:
        p = specs[0].project
        lines = [f"wrote {out}: {count_of(len(p.kernels), 'kernel')} in {count_of(len(p.kernel_files), 'file')}, "
                 f"build by {p.build_kind}", *(f"  check: {note}" for note in p.notes)]
        build = f"  2. optimas check-config --config {out} --build"
    else:
        kernels = sum(len(s.project.kernels) for s in specs)
        kinds = ", ".join(dict.fromkeys(s.project.build_kind for s in specs))
        lines = [f"wrote {out}: {count_of(len(specs), 'program')} ({count_of(kernels, 'kernel')}), build by {kinds}"]
        # what every program's notes say alike is said once
        common = [n for n in specs[0].project.notes if all(n in s.project.notes for s in specs[1:])]
        lines += [f"  check (every program): {note}" for note in common]
        for s in specs:
            p = s.project
            shown = ", ".join(p.kernels[:6]) + (", ..." if len(p.kernels) > 6 else "")
            lines.append(f"  {s.name}: {count_of(len(p.kernels), 'kernel')} ({shown}) in {', '.join(p.kernel_files)}")
            lines += [f"    check: {note}" for note in p.notes if note not in common]
        build = (f"  2. optimas check-config --config {out} --build   (builds each program; --program NAME: "
                 "one of them)")
    if compile_commands:
        lines.append(compile_commands)
    return [*lines, "next steps:", f"  1. read {out} and adjust the build and run commands, configurations and outputs",
            build, f"  3. on a GPU machine: optimas profile --config {out}, then optimas run --config {out}"
            + (" (with --program NAME)" if len(specs) > 1 else "")]
