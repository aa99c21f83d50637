"""`optimas init`'s entry: inspect the project, choose the run, check and write the config."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import NamedTuple

from runner.base.config import LoadedConfig, copied_parts, parse_config
from runner.base.config_checks import path_problems
from runner.base.errors import ConfigError, OptimasError
from runner.base.runstore import atomic_write_text
from runner.init import runs
from runner.init.build import detect_build, separate_programs
from runner.init.build_cmake import ParentTarget, parent_cmake_target
from runner.init.compile_db import COMPILE_COMMANDS, write_compile_commands
from runner.init.observe import COPY, Observed, learned, observe
from runner.init.programs import Found, discover
from runner.init.project import Project, count_of
from runner.init.render import ProgramSpec, outside_notes, render_config
from runner.init.sizes import size_arguments, usage_names, with_size_flag
from runner.init.sources import (
    BUILD_FILES,
    CUDA_SUFFIXES,
    MAX_DEPTH,
    VENDORED_PATH,
    clock_seed,
    old_dialect,
    printed_verdict,
    removed_calls,
    removed_fields,
    scan,
    source_texts,
    walk,
)
from runner.init.workspace import outside_reads, read_parts, smallest_workspace
from runner.scan.cuda_source import functions
from runner.scan.size_constants import (
    definition_problem,
    included_closure,
    proposed_size_constants,
    workspace_texts,
)


def inspect(root: Path, build: str | None = None, program: str | None = None) -> Project:
    """What init would write for the project in root; `build`: the user's own build command (what
    would be guessed about the build does not apply)."""
    if not root.is_dir():
        raise OptimasError(f"{root}: not a folder; give the folder of a CUDA project (optimas init DIR)")
    files, kernels, mains = scan(root)
    if not files:
        raise ConfigError(root, [f"no __global__ function found in {', '.join(CUDA_SUFFIXES)} files under {root} "
                                 f"(searched {MAX_DEPTH} levels deep, skipping hidden and build folders)"])
    programs = separate_programs(root, files)
    if len(programs) > 1:
        shown = ", ".join(programs[:12]) + (f" and {len(programs) - 12} more" if len(programs) > 12 else "")
        raise ConfigError(root, [f"{len(programs)} separate programs under {root}, each built by its own build file "
                                 f"and none at the top: {shown}. A config is for one program: run optimas init on "
                                 "the one to optimize (optimas init <its folder>)"])
    texts = source_texts(root)
    build_files = walk(root, (), BUILD_FILES)
    parent = parent_cmake_target(root)
    if build:
        kind, notes, run_args = "the command given", [], ""
    else:
        kind, build, notes, run_args = detect_build(root, files, mains, texts, parent, program)
    return _facts(root, (files, kernels, mains), (kind, build, notes, run_args), texts, build_files, parent)


def _facts(root: Path, scanned: tuple[list[str], list[str], list[str]], built: tuple[str, str, list[str], str],
           texts: dict[str, str], build_files: list[Path], parent: ParentTarget | None = None) -> Project:
    """The Project of one program: `scanned` (its kernel files, kernels, files defining main),
    `built` (the build's kind, command, notes and run arguments) and what its sources `texts` say."""
    files, kernels, mains = scanned
    kind, build, notes, run_args = built
    own = {name: text for name, text in texts.items() if not VENDORED_PATH.search(name)}
    fail_pattern, where = printed_verdict(own)
    left_out: dict[str, str] = {}
    constants = proposed_size_constants(own, left_out)
    return Project(files, kernels, build, kind, notes, run_args, fail_pattern, where, clock_seed(own),
                   outside_reads(root, texts, build_files, parent), removed_calls(texts), usage_names(own),
                   constants, old_dialect(root, texts, build_files), runs.argc_guards(own), mains,
                   size_left_out=left_out, size_flags=runs.one_problem(runs.size_flags(own), own),
                   removed_fields=removed_fields(texts))


def inspect_programs(root: Path) -> tuple[list[tuple[Found, Project]], list[Found]]:
    """Each program the project's build makes, where it makes several (programs.discover), with what
    its own files say: its kernels, sizes and checks come from what its build compiles and what
    that includes, never from the rest of the folder (none where it makes one: inspect); and every
    program the build was seen to make (for compile_commands.json)."""
    if not root.is_dir():
        return [], []
    files, _, mains = scan(root)
    if not files or len(separate_programs(root, files)) > 1:
        return [], []
    texts = source_texts(root)
    build_files = walk(root, (), BUILD_FILES)
    out = []
    every = discover(root, mains, texts)
    for found in every:
        own = included_closure(texts, found.units)
        kernel_files = [f for f in files if f in own]
        if not kernel_files:
            continue  # a program without kernels of its own (a CPU tool of the build)
        kernels = list(dict.fromkeys(k.name for f in kernel_files for k in functions(own[f]) if k.is_kernel))
        project = _facts(root, (kernel_files, kernels, [m for m in mains if m in own]),
                         (found.kind, found.build, list(found.notes), ""), own, build_files)
        out.append((found, project))
    return (out if len(out) > 1 else []), every


def main_guards(root: Path) -> list[runs.ArgcGuard]:
    """The argument-count checks that stop the program's main, in the program folder's own sources."""
    return runs.argc_guards({k: v for k, v in source_texts(root).items() if not VENDORED_PATH.search(k)})


def runs_that_start(project: Project, root: Path, name: str | None, run_args: str, given: bool) -> str:
    """The run arguments to write: `run_args`, or, where main stops unless given more and the user
    gave none, the first arguments the repository's README, scripts or CI run the program with that
    are enough; a note says which check stops the program and what was chosen."""
    short = runs.too_few(project.argc, run_args)
    if short is None:
        return run_args
    # the program's names, and the binary init's build command copies to {exe} (Rodinia's bfs.out)
    made = [Path(m.group(1)).name] if (m := COPY.search(project.build)) else []
    names = [name or "", root.resolve().name, *(Path(m).stem for m in project.mains), *made]
    seen = [r for r in runs.repository_runs(root, names) if runs.too_few([short], r[2]) is None]
    gives = f"app.run gives {count_of(len(shlex.split(run_args)), 'argument')}" if run_args else "app.run gives none"
    if seen and not given:
        where, line, args = seen[0]
        project.notes.append(f"{short.describe()}; the run arguments are the ones {where}:{line} gives: {args} "
                             "(pass --args to choose others)")
        return args
    shown = f"; {seen[0][0]}:{seen[0][1]} runs it with: {seen[0][2]}" if seen else ""
    project.notes.append(f"{short.describe()}, and {gives}: the run stops before any kernel runs. Give its "
                         f"arguments with --args (or in app.run){shown}")
    return run_args


def program_notes(project: Project) -> list[str]:
    """What init says of the program's own code: its printed verdict, a clock seed, CUDA 13's removals."""
    notes = []
    if project.fail_pattern:
        notes.append(f"a run whose output matches {project.fail_pattern} fails validation: the program prints that "
                     f"verdict when its own check fails ({project.fail_pattern_in}); remove app.stdout if it prints "
                     "it otherwise")
    seed = project.clock_seed
    if seed.pinnable:
        notes.append(f"the program seeds its random inputs from the clock ({seed.at}): pin_seeds is set, so every "
                     "run gets one fixed seed (Optimas's seed library answers srand, srandom, srand48, "
                     "std::random_device and cuRAND's host seed)")
    elif seed.at:
        notes.append(f"the program seeds its random inputs from the clock ({seed.at}) in its own code, where no "
                     "library call can pin the seed: its results differ from run to run, so comparing a candidate's "
                     "with the original's judges nothing and every candidate is refused; give it a fixed seed (or "
                     "take one from its arguments: {seed} in app.run), or judge it by app.stdout alone and set "
                     "app.gpu_results.compare: off")
    if project.compat or project.dialect:
        notes.append("the sources use what CUDA 13 removed or changed: legacy_cuda is set (see its comment)")
    if project.removed_fields:
        shown = ", ".join(project.removed_fields[:4]) + (f" and {len(project.removed_fields) - 4} more"
                                                          if len(project.removed_fields) > 4 else "")
        notes.append(f"the sources read cudaDeviceProp members CUDA 13 removed ({shown}): the build fails with CUDA "
                     "13 until they read them with cudaDeviceGetAttribute (cudaDevAttrClockRate, "
                     "cudaDevAttrMemoryClockRate, ...), or it builds with an older CUDA")
    return notes


class Written(NamedTuple):
    """What write_config wrote: each program, the config's text, and what it says of compile_commands.json."""

    specs: list[ProgramSpec]
    text: str
    compile_commands: str


def write_config(root: Path, out: Path, name: str | None = None, run_args: str | None = None,
                 build: str | None = None, force: bool = False, program: str | None = None) -> Written:
    """Inspect root, check the config it gives as check-config would, and write it to `out` (never
    over an existing file unless `force`): every program the build makes (`programs:`), or one
    (`program`, a `build` given, or a build of one); and compile_commands.json beside it, from what
    the build was seen to compile. `run_args` None: the user gave none (init may propose some)."""
    given, args = run_args is not None, run_args or ""
    several, every = inspect_programs(root) if not build else ([], [])
    asked = _asked_program(root, program, several) if program and not build else None
    if several and not program:
        found = [(f.name, p, f.name) for f, p in several]
    elif asked is not None:
        found = [(name or asked[0].name, asked[1], name or asked[0].name)]
    else:
        found = [(name or root.resolve().name, inspect(root, build, program), name)]
    if out.exists() and not force:
        raise ConfigError(out, ["the file exists; pass --force to replace it, or --output to write elsewhere"])
    where = out.resolve()
    specs = [_spec(root, where, project, shown, asked, args, given) for shown, project, asked in found]
    observed = _observed(root, where, specs, every)
    text = render_config(specs)
    lc = LoadedConfig(path=where, config=parse_config(text, where), sha256="")
    problems = [f"{each.config.app.name}: {p}" if len(specs) > 1 else p
                for each in lc.each_program() for p in path_problems(each)]
    if problems:
        raise ConfigError(where, problems)
    atomic_write_text(out, text)
    said = _compile_commands(out.parent / COMPILE_COMMANDS, root, specs, every, observed, force)
    return Written(specs, text, said)


def _compile_commands(path: Path, root: Path, specs: list[ProgramSpec], every: list[Found], observed: Observed | None,
                      force: bool) -> str:
    """Write compile_commands.json from what the build's text or its observed run showed; what init says of it."""
    if observed is None:
        return write_compile_commands(path, root, every, force)
    if not observed.ok:
        return (f"{COMPILE_COMMANDS}: not written: the build, run once in a copy to observe it, failed "
                f"({observed.command}): {observed.error}")
    p = specs[0].project
    seen = Found(specs[0].name, p.build, p.build_kind, observed.sources(), commands=observed.commands)
    how = f"{count_of(observed.calls, 'nvcc call')} seen in one run of the build in a copy, {observed.seconds:.1f} s"
    return write_compile_commands(path, root, [seen], force, how=how)


def needs_observing(project: Project, every: list[Found]) -> bool:
    """Whether what the program's build compiles can be told only by running it: a build script, a
    build command given, or a Makefile whose dry run shows no compiler command (its recipes call a
    script)."""
    return project.build_kind in ("script", "the command given") or (
        project.build_kind == "make" and not any(f.commands for f in every))


def _observed(root: Path, where: Path, specs: list[ProgramSpec], every: list[Found]) -> Observed | None:
    """The build of the one program of `specs`, run once in a copy to observe it where its text
    cannot tell what it compiles (needs_observing), and what it taught (observe.learned); None
    where the build was not run."""
    if len(specs) != 1 or not needs_observing(project := specs[0].project, every):
        return None
    lc = LoadedConfig(path=where, config=parse_config(render_config(specs), where), sha256="")
    template = project.build
    if project.build_kind != "the command given" and (m := COPY.search(template)):
        template = template[:m.start()] + "'"  # the copy may name a binary the build does not make
    observed = observe(lc.with_app(build=template))
    learned(project, observed, root)
    return observed


def _asked_program(root: Path, program: str, several: list[tuple[Found, Project]]) -> tuple[Found, Project] | None:
    """The program `init --program NAME` asks for in a folder of standalone files (no build file):
    by its name, its main file's name or stem; an error naming them where none is; None for a
    make or CMake build (the build itself is asked: inspect)."""
    several = [pair for pair in several if pair[0].kind == "nvcc"]

    def names(f: Found) -> set[str]:
        main = f.units[0] if f.units else ""
        return {f.name, main, Path(main).name, Path(main).stem}

    match = next((pair for pair in several if program in names(pair[0])), None)
    if match is None and several:
        raise ConfigError(root, [f"--program {program}: no such program here; the files defining main() with "
                                 f"kernels are {', '.join(f.units[0] for f, _ in several)} (give one's name or "
                                 "file name)"])
    return match


def _spec(root: Path, where: Path, project: Project, shown: str, name: str | None, run_args: str,
          given: bool) -> ProgramSpec:
    """What init writes for one program (`shown`: its name in the config; `name`: the one asked for,
    if any): its notes, run arguments, workspace and the size constants that its own files define once."""
    project.notes += program_notes(project)
    if not run_args and project.run_args:
        run_args = project.run_args
        project.notes.append(f"the run arguments are the ones the Makefile's run target gives: {run_args} "
                             "(pass --args to choose others)")
    run_args = runs_that_start(project, root, name or shown, run_args, given)
    run_args = with_size_flag(project, run_args, given)
    workdir = os.path.relpath(root.resolve(), where.parent)
    workspace = None
    parts: list[str] = []
    if project.outside:
        space = smallest_workspace(root, project.outside)
        if space == Path(space.anchor) or Path.home().resolve().is_relative_to(space):
            project.notes.append("the build reads files outside the program folder ("
                                 + "; ".join(outside_notes(project)) + "), but the folder holding them all is "
                                 f"{space}, too large to copy for every candidate: set app.workspace yourself")
        else:
            workspace = os.path.relpath(space, where.parent)
            parts = read_parts(root, project.outside, space)
    # a name defined again elsewhere in what a build copies (another program of the suite) cannot
    # be scaled, unless the program's own files define it once: leave it out
    space_dir = (where.parent / workspace).resolve() if workspace else root.resolve()
    constants = bool(project.size_constants) and not size_arguments(run_args, project.usage)
    texts = (workspace_texts(space_dir, root.resolve(), copied_parts(space_dir, root.resolve(), parts))
             if workspace or constants else {})
    if constants:
        project.size_constants = [c for c in project.size_constants
                                  if definition_problem(c.name, texts, sources=project.kernel_files) is None]
    if project.size_left_out and not size_arguments(run_args, project.usage):
        project.notes.append("not proposed as size constants: " + "; ".join(
            f"{n}: {why}" for n, why in list(project.size_left_out.items())[:4]))
    if workspace:
        # the build compiles files outside the program folder too (a suite's shared main.cu): what
        # they use that CUDA 13 removed needs the headers as much; where the whole workspace is the
        # build's (a CMake project), its build files may set the dialect
        project.compat = removed_calls(texts)
        if not parts:
            project.dialect = project.dialect or old_dialect(space_dir, texts, walk(space_dir, (), BUILD_FILES))
    return ProgramSpec(project, shown, run_args, workdir, workspace, parts)
