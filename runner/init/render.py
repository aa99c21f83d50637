"""The commented optimas.yml init writes."""

from __future__ import annotations

import json

from runner.init.project import Project, count_of
from runner.init.sizes import SizeArguments, size_arguments


def _q(s: str) -> str:
    """A YAML scalar for any text (JSON's double-quoted strings are YAML)."""
    return json.dumps(s)


def render_config(p: Project, name: str, run_args: str = "", workdir: str = ".", workspace: str | None = None,
                  workspace_paths: list[str] | None = None) -> str:
    """The commented optimas.yml for project `p` (`workdir`: the project folder, relative to where
    the file goes; `workspace`: the folder a candidate's build copies, when it is larger;
    `workspace_paths`: the parts of it the build reads, when not all of it)."""
    sizes = size_arguments(run_args, p.usage)
    run = "{exe}" + (f" {sizes.run if sizes else run_args}" if run_args else "")
    lines = [
        f"# Optimas config for {name}, written by `optimas init`. Every key: docs/configuration.md in the",
        "# Optimas repository, or `python -m runner.base.config_reference`. Check it with:",
        "# optimas check-config --config <this file>",
        "app:",
        f"  name: {_q(name)}",
        f"  workdir: {_q(workdir)}",
    ]
    if workspace is not None:
        lines += [f"  # The build reads files outside the program folder: {why}" for why in outside_notes(p)]
        lines += ["  # A candidate is built in a copy of this folder, which holds them all:",
                  f"  workspace: {_q(workspace)}"]
        if workspace_paths:
            lines += ["  # Only the parts of it the build reads are copied (and searched for size constants):",
                      "  # add a folder here if a build in the copy misses a file.",
                      f"  workspace_paths: [{', '.join(_q(x) for x in workspace_paths)}]"]
    lines += [
        f"  # The files that define the {count_of(len(p.kernels), 'kernel')} found: "
        f"{', '.join(p.kernels[:6])}"
        f"{', ...' if len(p.kernels) > 6 else ''}.",
        "  # Local headers they include are followed (two levels): device helpers there are shown too.",
        f"  sources: [{', '.join(_q(f) for f in p.kernel_files)}]",
    ]
    lines += [f"  # build ({p.build_kind}): {note}" for note in p.notes]
    lines += [
        "  # Placeholders: {exe} the binary to make or run, {arch} the GPU's architecture (sm_90),",
        "  # {lineinfo} -lineinfo in profiling builds; {config} {seed} {scale} {out} in run commands.",
        f"  build: {_q(p.build)}",
        "  # `run` is validated: its exit code and the results it copies from the GPU (the CUPTI tracer",
        "  # compares them bit for bit with the original's). `time_run` is timed and `profile_run` runs",
        "  # under the profiler; both default to `run`.",
        f"  run: {_q(run)}",
    ]
    lines += _problem_size_lines(p, sizes)
    lines += [
        "  outputs: []      # files the run writes, if you want them compared too: [{path: out.bin}]",
    ]
    if p.fail_pattern:
        lines += [
            f"  # The program prints its own verdict ({p.fail_pattern_in}): a run whose output matches fails.",
            f"  stdout: {{fail_pattern: {_q(p.fail_pattern)}}}",
        ]
    lines += [
        "  # Bit for bit by default (where the program's own results vary by rounding, as with float",
        "  # atomics, Optimas finds it out and holds candidates within 1024 ulps there). If a candidate",
        "  # may change the results' last bits anywhere (a sum reordered), declare it, and the model is",
        "  # told it may reorder within it: gpu_results: {compare: tolerance, dtype: float32, rtol: 1.0e-5}",
        "  timeout_s: 600",
    ]
    if p.compat or p.dialect:
        lines += ["  # The sources use what CUDA 13 removed: " + "; ".join(p.compat) + "."] if p.compat else []
        lines += [f"  # The build asks for an older C++ than CUDA 13's headers take ({p.dialect}): those sources",
                  "  # are compiled as C++17."] if p.dialect else []
        lines += [
            "  # Optimas's compatibility headers let them build by defining those names anew (the warp ones",
            "  # over the active threads): that changes what the code means, so every run and pull request",
            "  # says which header went where. Without this line the build fails as with your own CUDA 13.",
            "  compat_headers: true",
        ]
    lines += [
        "evaluation:",
        "  timer: tracer    # kernel execution times from the CUPTI tracer; no help from the program",
    ]
    return "\n".join(lines) + "\n"


def _problem_size_lines(p: Project, sizes: SizeArguments | None) -> list[str]:
    """The config's lines for the problem size: configurations with the run's size arguments and
    the profiled command scaling them, or the size constants the counter runs scale."""
    if sizes:
        values = ", ".join(f"{k}: {v}" for k, v in sizes.values.items())
        return [
            "  # One entry per problem size, passed to the commands as {config}; the numbers in the run",
            "  # arguments are this one's values, so another size is another entry.",
            f"  configurations: {{default: {{{values}}}}}",
            "  # Counter runs (eOMP) profile the program at several problem sizes: {n*scale} is n times",
            "  # each of profiling.counter_scales (with k sizes scaled, times its k-th root, so the work",
            "  # follows the scale). Optimas checks on the GPU that the hot kernel's work follows the scale",
            "  # (instructions executed), and leaves out a size the program fails at.",
            f"  profile_run: {_q('{exe} ' + sizes.profile)}",
        ]
    lines = ["  configurations: [default]   # one entry per problem size, passed to the commands as {config}"]
    if p.size_constants:
        found = "; ".join(f"{c.name} = {c.value} ({c.file}:{c.line})" for c in p.size_constants)
        lines += [
            "  # The run takes no size argument; these constants of the host code size its allocations:",
            f"  # {found}. Counter runs (eOMP) rebuild the program with them times each of",
            "  # profiling.counter_scales (k constants times its k-th root, so the work follows the scale; in a",
            "  # copy of the workspace), and Optimas checks on the GPU that the",
            "  # hot kernel's work follows (instructions executed). Remove the line if they are not sizes.",
            f"  size_constants: [{', '.join(c.name for c in p.size_constants)}]",
        ]
    return lines


def outside_notes(p: Project, shown: int = 4) -> list[str]:
    notes = [why for _, why in p.outside[:shown]]
    if len(p.outside) > shown:
        notes.append(f"and {len(p.outside) - shown} more")
    return notes
