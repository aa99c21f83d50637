"""What init found out about one program of a project (Project), as the rest of init fills it in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from runner.init import runs
from runner.init.sources import ClockSeed
from runner.scan.size_constants import SizeConstant


@dataclass
class Project:
    """What init found in a project folder."""

    kernel_files: list[str]  # relative to the project folder, each defining at least one __global__ function
    kernels: list[str]
    build: str
    build_kind: str  # cmake | make | nvcc | the command given
    notes: list[str] = field(default_factory=list)
    run_args: str = ""  # the arguments the top Makefile's `run` target gives the binary, if any
    # app.stdout.fail_pattern for the verdict the program prints when its own check fails, and the
    # file where it was found (None: the sources print none)
    fail_pattern: str | None = None
    fail_pattern_in: str = ""
    # where the program seeds its random inputs from the clock, and whether app.pin_seeds fixes it
    clock_seed: ClockSeed = field(default_factory=ClockSeed)
    # what the build reads outside the project folder (absolute paths, with what reads each)
    outside: list[tuple[Path, str]] = field(default_factory=list)
    # what the sources call that CUDA 13 removed: "file: names" for each compatibility header needed
    compat: list[str] = field(default_factory=list)
    # the positional arguments' names in the usage line the program prints (usage_names)
    usage: list[str] = field(default_factory=list)
    # the constants in the host code that look like the problem size (proposed_size_constants)
    size_constants: list[SizeConstant] = field(default_factory=list)
    # an older C++ dialect the build asks for where the sources include headers of CUDA 13 that need
    # C++17 ("Makefile: -std=c++14; <thrust/reduce.h>"; "" when it does not)
    dialect: str = ""
    # main's argument-count checks that stop the program (runs.argc_guards), and the files defining main
    argc: list[runs.ArgcGuard] = field(default_factory=list)
    mains: list[str] = field(default_factory=list)
    # constants that size allocations but are not sizes (a percentage, a log2 size): name -> why
    size_left_out: dict[str, str] = field(default_factory=dict)
    # optional flags that set a size the code defaults (`--arraysize N`: runs.size_flags)
    size_flags: list[runs.SizeFlag] = field(default_factory=list)
    # cudaDeviceProp members the sources read that CUDA 13 removed ("file:line name": removed_fields)
    removed_fields: list[str] = field(default_factory=list)


def count_of(n: int, noun: str) -> str:
    """'1 kernel', '3 kernels'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
