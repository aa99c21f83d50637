"""The build command for a make project: the target, the binary, -arch and -lineinfo for each nvcc it runs."""

from __future__ import annotations

import posixpath
import re
import shlex
import shutil
from pathlib import Path

from runner.base.errors import ConfigError
from runner.base.processes import child_environment, run_process
from runner.init import make_db
from runner.init.makefile_text import (
    binary_of,
    expand,
    first_target,
    folder_goals,
    make_required,
    make_variables,
    makefile_in,
    parse_rules,
    run_target_args,
)
from runner.init.project import count_of
from runner.init.sources import skipped

OLDEST_SM = 75  # the oldest architecture CUDA 13's nvcc builds


def _old_architecture_notes(name: str, compiled: str) -> list[str]:
    """What init says of the architectures a Makefile's nvcc lines (`compiled`) ask for that CUDA 13
    no longer builds."""
    def older(pattern: str) -> list[int]:
        return sorted({int(v) for v in re.findall(pattern, compiled) if int(v) < OLDEST_SM})

    notes = []
    if old := older(r"(?:-arch|--gpu-architecture)[= ]\s*(?:sm|compute)_(\d+)"):
        notes.append(f"{name}: its nvcc flags ask for sm_{old[0]}, which CUDA 13 no longer builds; Optimas's "
                     "builds drop that option (the build log says so) and the -arch they append decides")
    if old := older(r"(?:-gencode|--generate-code)[= ]\s*arch=compute_(\d+)"):
        notes.append(f"{name}: its nvcc flags generate code for compute_{old[0]}, which CUDA 13 refuses; Optimas's "
                     "builds drop that -gencode (the build log says so), a build by hand needs it removed")
    return notes


def kernels_makefile(root: Path, kernel_files: list[str]) -> Path | None:
    """A Makefile in a subfolder (three levels deep at most) that holds the kernels' files: the one
    over the most of them, the shallowest of equals; None when none is over any (or its folder's
    name needs quoting in a shell command)."""
    best: tuple[int, int, Path] | None = None
    found = {p.parent for depth in (1, 2, 3) for p in root.glob("*/" * depth + "*akefile") if p.is_file()}
    for folder in sorted(found):
        rel = folder.relative_to(root)
        if any(skipped(Path(part)) for part in rel.parts):
            continue
        if not re.fullmatch(r"[\w./+-]+", rel.as_posix()) or (mk := makefile_in(folder)) is None:
            continue
        over = sum(1 for f in kernel_files if Path(f).is_relative_to(rel))
        if over and (best is None or (over, -len(rel.parts)) > best[:2]):
            best = (over, -len(rel.parts), mk)
    return best[2] if best else None


_C_LINKERS = {"gcc", "cc", "clang", "icc"}


def c_linker_of_cuda_objects(rules: dict[str, list[str]], needs: dict[str, list[str]], variables: dict[str, str],
                             target: str) -> str | None:
    """The C compiler (gcc, cc, clang) that links `target`, when an object it links is compiled by
    nvcc and the link line names no C++ runtime; None otherwise."""
    recipe = [expand(line, variables, target) for line in rules.get(target, [])]
    link = next((line for line in recipe if re.search(r"(?:^|\s)-o\s", line)), None)
    if link is None or not link.split() or "stdc++" in link:
        return None
    linker = posixpath.basename(link.split()[0])
    if linker not in _C_LINKERS:
        return None
    objects = [p for p in needs.get(target, []) if p.endswith(".o")]
    nvcc_built = any(any("nvcc" in expand(line, variables, o) for line in rules.get(o, [])) or
                     any(d.endswith(".cu") for d in needs.get(o, [])) for o in objects)
    return linker if nvcc_built else None


def _link_and_home_notes(name: str, text: str, rules: dict[str, list[str]], needs: dict[str, list[str]],
                         variables: dict[str, str], binary: str) -> list[str]:
    """What init says of a Makefile's link (a C compiler linking nvcc's objects) and of $(HOME)."""
    notes = []
    if linker := c_linker_of_cuda_objects(rules, needs, variables, binary):
        notes.append(f"{name}: {binary} is linked by {linker}, a C compiler, and objects nvcc compiles "
                     "with CUDA 13 call the C++ runtime (__cxa_guard_*, __gxx_personality_v0): the link fails, "
                     "here as in your own CUDA 13 build, until it also gets -lstdc++ (or is linked by g++ or nvcc)")
    if re.search(r"\$[({]HOME[)}]", text):
        notes.append(f"{name}: it reads $(HOME), and Optimas runs builds with a HOME of its own (no secrets of "
                     "yours reach them): if the build needs files there, give app.env: {HOME: <your home>}")
    return notes


# A variable that locates the CUDA toolkit, by its name or its error's words.
_CUDA_PLACE = re.compile(r"(?i)cuda.*(?:lib|inc|path|home|dir|root|install|toolkit)|(?:lib|inc|path|home|dir|root)"
                         r".*cuda")


def cuda_toolkit() -> Path | None:
    """The CUDA toolkit of the nvcc on PATH: where nvcc says its TOP is (`nvcc --dryrun`; the nvcc on
    PATH may be a script that runs another), else the folder above its bin/; None without an nvcc."""
    found = shutil.which("nvcc")
    if not found:
        return None
    r = run_process([found, "--dryrun", "-c", "optimas-probe.cu"], Path.cwd(), 60, env=child_environment(),
                    what="nvcc --dryrun (where its toolkit is)")
    m = re.search(r"^#\$ TOP=(.+?)\s*$", r.output, re.M)
    top = Path(m.group(1)).resolve() if m else Path(found).resolve().parent.parent
    return top if (top / "include").is_dir() else None


def _required_settings(name: str, required: list[tuple[str, int, str]]) -> tuple[str, list[str]]:
    """make's command-line settings for the required variables that locate the CUDA toolkit (its
    include/ or lib64/ folder, or itself, from the nvcc on PATH), and what init says of each."""
    settings, notes = "", []
    toolkit = cuda_toolkit() if required else None
    for var, line, message in required:
        if toolkit is None or not _CUDA_PLACE.search(f"{var} {message}"):
            notes.append(f"{name}:{line}: the build stops unless {var} is set ({message!r}): add {var}=<value> to "
                         "app.build's make command (or give the whole command: --build)")
            continue
        words = f"{var} {message}".lower()
        lib = next((toolkit / d for d in ("lib64", "lib") if (toolkit / d).is_dir()), toolkit / "lib64")
        place = (toolkit / "include" if re.search(r"inc|header", words) else lib if "lib" in words else toolkit)
        settings += f" {var}={shlex.quote(str(place))}"
        notes.append(f"{name}:{line}: the build stops unless {var} is set ({message!r}): it is set to {place}, from "
                     "the nvcc on PATH; change it in app.build if the GPU host's CUDA is elsewhere")
    return settings, notes


_LEADING_REFERENCE = re.compile(r"\$(?:\((\w+)\)|\{(\w+)\})(?=\s|$)")


def nvcc_variable(line: str, variables: dict[str, str]) -> str | None:
    """The variable a recipe line calls nvcc by: the first reference that expands to something
    (`$(EXEC) $(NVCC) ...`: EXEC, never set or empty, runs nothing in make either), when that
    something's first word is an nvcc; None otherwise."""
    rest = line.lstrip("@-+ \t")
    while (m := _LEADING_REFERENCE.match(rest)) is not None:
        name = m.group(1) or m.group(2)
        value = expand(variables.get(name, ""), variables).strip()
        if value:
            return name if value.split()[0].endswith("nvcc") else None
        rest = rest[m.end():].lstrip()
    return None


def _runs_nvcc(command: str) -> bool:
    """Whether a command of make's dry run runs nvcc (its first word)."""
    return bool(command.split()) and command.split()[0].endswith("nvcc")


def _target_linking(made: str, rules: dict[str, list[str]], variables: dict[str, str]) -> str | None:
    """The target of the Makefile's text whose recipe writes `made` with -o (`unified_prefetch:`,
    `-o $@.out`, for unified_prefetch.out; `callbacks:` linking cufft_callbacks), None if none does."""
    want = posixpath.normpath(made)
    for target, recipe in rules.items():
        outs = (o for line in recipe for o in re.findall(r"(?:^|\s)-o\s*(\S+)", expand(line, variables, target)))
        if any(posixpath.normpath(o) == want for o in outs):
            return target
    return None


def _program_target(makefile: Path, program: str, rules: dict[str, list[str]], variables: dict[str, str],
                    run: make_db.DryRun | None) -> tuple[str, str]:
    """(the make target, the binary it makes) for `init --program NAME`: a target of the Makefile's
    text (the binary its recipe writes), or a program make's dry run of the default goal links (by
    its path, its name or its name less a suffix: unified_prefetch for unified_prefetch.out), built
    by the target whose recipe links it."""
    linked = run.programs if run is not None else []
    made = next((p for p in linked if program in (p, Path(p).name)), None)
    if made is not None:
        return (program if program in rules else _target_linking(made, rules, variables) or made), made
    if program in rules:
        return program, binary_of(rules, variables, program, makefile.parent) or program
    made = next((p for p in linked if Path(p).stem == program or Path(p).name.startswith(program + ".")), None)
    if made is not None and (target := _target_linking(made, rules, variables)) is not None:
        return target, made
    raise ConfigError(makefile, [f"--program {program}: neither a target of the Makefile nor a program its default "
                                 f"goal links ({', '.join(linked[:12]) or 'make links none'})"])


def _make_goal(makefile: Path, rules: dict[str, list[str]], needs: dict[str, list[str]], variables: dict[str, str],
               run: make_db.DryRun | None, program: str | None) -> tuple[str, str | None]:
    """(the make target to build, the binary make's dry run says it links, if it was asked): the
    program asked for; else the text's first target; else, where the text names the program only
    through variables and pattern rules, what make's dry run links (one: its goal; several, a
    TARGETS list: the first, by itself)."""
    if program is not None:
        return _program_target(makefile, program, rules, variables, run)
    target = first_target(rules, needs, variables)
    if target is not None:
        return target, None
    if run is None or not run.goal or not run.programs:
        raise ConfigError(makefile, [
            "it has no rule that builds a program, and make's dry run of it (make -pnB) links none: it is a "
            "fragment another Makefile includes (a suite's common one, which its own driver runs). Give the "
            "command that builds the program: optimas init --build 'CMD' (with {exe}, {arch} and {lineinfo}; "
            "see optimas init --help)"])
    if len(run.programs) == 1:
        return run.goal, run.programs[0]
    return _program_target(makefile, run.programs[0], rules, variables, run)


def _programs_note(name: str, run: make_db.DryRun | None, built: str, program: str | None) -> list[str]:
    """The programs make's default goal links, where it links several, and which one is built."""
    if run is None or len(run.programs) < 2:
        return []
    shown = ", ".join(run.programs[:12]) + (f" and {len(run.programs) - 12} more" if len(run.programs) > 12 else "")
    another = "" if program else "; another: optimas init --program NAME"
    return [f"{name}: make's default goal links {count_of(len(run.programs), 'program')} ({shown}); this config "
            f"builds {built}{another}"]


def _nvcc_override(name: str, rules: dict[str, list[str]], variables: dict[str, str], run: make_db.DryRun | None
                   ) -> tuple[str, list[str]]:
    """make's command-line setting of the variable the recipes call nvcc by (` NVCC=nvcc`, "" if
    none), and what init says of the architectures its nvcc lines (and make's dry run) ask for."""
    calls = [(var, line) for lines in rules.values() for line in lines
             if (var := nvcc_variable(line, variables)) is not None]
    literal = [line for lines in rules.values() for line in lines
               if re.match(r"(?:\S*/)?nvcc\s", expand(line, variables).lstrip("@-+ "))]
    compiled = " ".join([*(expand(line, variables) for _, line in calls), *(expand(x, variables) for x in literal),
                         *(c for c in (run.commands if run is not None else []) if _runs_nvcc(c))])
    notes = _old_architecture_notes(name, compiled)
    notes.append(f"{name}: every nvcc the build runs gets -arch={{arch}} {{lineinfo}} through NVCC_APPEND_FLAGS")
    if not calls:
        return "", notes
    notes.append(f"{name}: nvcc is called through {calls[0][0]}; the build sets it to the nvcc on PATH")
    return f" {calls[0][0]}=nvcc", notes


def make_build(name: str, text: str, folder: Path, sub: str = "", program: str | None = None,
               listed: bool = False) -> tuple[str, list[str], str]:
    """Build command template and notes for a Makefile (in the subfolder `sub`, run with make -C):
    its first target; the binary named by the recipe's `-o`; -arch and -lineinfo for every nvcc
    the build runs through NVCC_APPEND_FLAGS (nvcc adds them after its own arguments: a Makefile's
    older -arch gives way, with a warning), and the variable the recipes call nvcc by set to the
    nvcc on PATH on make's command line (it overrides the Makefile's, in sub-makes too);
    EXTRA_NVCCFLAGS where the Makefile takes it (NVIDIA's samples, which choose their
    architectures themselves). Also the arguments its `run` target gives the binary ("" if none).
    `listed`: the config lists every program, so no note names the others."""
    variables = make_variables(text)
    rules, needs = parse_rules(text, variables)
    run = make_db.dry_run(folder, name.split("/")[-1])  # what make itself would link for its default goal
    target, asked = _make_goal(folder / name.split("/")[-1], rules, needs, variables, run, program)
    binary = asked or binary_of(rules, variables, target, folder, needs=needs)
    goals = " ".join(dict.fromkeys([*folder_goals(rules, needs, variables), target]))
    settings, required_notes = _required_settings(name, make_required(text))
    make = (f"make -C {sub} -B {goals}" if sub else f"make -B {goals}") + settings
    copy = f"cp {sub + '/' if sub else ''}{binary or target} {{exe}}"
    run_args = run_target_args(rules, variables, binary or target) or ""
    notes = [f"{name}: building target {target!r}" + (f", which makes {binary}" if binary else
                                                      "; check the name of the binary it makes")
             + (" (make's dry run, make -pnB, says so: the Makefile's text names it through variables and "
                "pattern rules)" if asked and asked != binary_of(rules, variables, target, folder) else "")]
    notes += [] if listed else _programs_note(name, run, binary or target, program)
    notes += required_notes
    notes += _link_and_home_notes(name, text, rules, needs, variables, binary or target)
    if "EXTRA_NVCCFLAGS" in text:
        return f"sh -c '{make} EXTRA_NVCCFLAGS={{lineinfo}} && {copy}'", notes, run_args
    override, nvcc_notes = _nvcc_override(name, rules, variables, run)
    notes += nvcc_notes
    return f"sh -c 'NVCC_APPEND_FLAGS=\"-arch={{arch}} {{lineinfo}}\" {make}{override} && {copy}'", notes, run_args
