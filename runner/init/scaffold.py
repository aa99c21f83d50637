"""`optimas init`: a first optimas.yml for a CUDA project, from what its folder holds: the files that
define `__global__` functions, a build command from its CMakeLists.txt, Makefile or, failing both,
one nvcc line, and a run command from the command line. No questions are asked; what could not be
known is said in comments and in the next steps printed.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from runner.base.config import LoadedConfig, copied_parts, parse_config, path_problems
from runner.base.cuda_source import STRING_LITERAL, functions, strip_comments_and_strings
from runner.base.errors import ConfigError, OptimasError
from runner.base.processes import child_environment, run_process
from runner.base.runstore import atomic_write_text
from runner.base.size_constants import SizeConstant, definition_problem, proposed_size_constants, workspace_texts
from runner.build.nvcc_shim import CCCL_INCLUDE, COMPATS, OLD_CPP, compat_used
from runner.init import cmake_api, make_db, runs

CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inl")
MAX_DEPTH = 4
MAX_FILES = 2000  # files looked at; a checkout bigger than this is not scanned further


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
    # where the program seeds its random inputs from the clock ("file:line"; "": it does not)
    clock_seed_at: str = ""
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


# Folders of libraries a program carries with it (CUDA's own C++ libraries, vendored code): their
# kernels and headers are not the program's to optimize.
VENDORED = {"cub", "thrust", "libcudacxx", "cccl", "third_party", "thirdparty", "3rdparty", "vendor"}


def _skipped(d: Path) -> bool:
    n = d.name
    return (n.startswith(".") or n.startswith(("build", "cmake-build")) or n in {"runs", "__pycache__", "node_modules"}
            or n.lower() in VENDORED or _is_submodule(d))


def _is_submodule(d: Path) -> bool:
    """Whether `d` is a git submodule's checkout (someone else's code): a `.git` file, not folder."""
    return (d / ".git").is_file()


def _walk(root: Path, suffixes: tuple[str, ...] = CUDA_SUFFIXES, names: frozenset[str] = frozenset()) -> list[Path]:
    """The files under root with one of `suffixes` or `names`, breadth first, build and hidden
    folders skipped."""
    out: list[Path] = []
    todo = [(root, 0)]
    while todo and len(out) < MAX_FILES:
        d, depth = todo.pop(0)
        for p in sorted(d.iterdir()):
            if p.is_dir() and depth < MAX_DEPTH and not _skipped(p):
                todo.append((p, depth + 1))
            elif p.is_file() and (p.suffix in suffixes or p.name in names):
                out.append(p)
    return out


def scan(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(files defining kernels, the kernels' names, .cu files defining main), paths relative to root."""
    files, kernels, mains = [], [], []
    for p in _walk(root):
        text = p.read_text(encoding="utf-8", errors="replace")
        if "__global__" not in text and not (p.suffix == ".cu" and "main" in text):
            continue
        funcs = functions(text)
        found = [f.name for f in funcs if f.is_kernel]
        rel = p.relative_to(root).as_posix()
        if found:
            files.append(rel)
            kernels += [k for k in found if k not in kernels]
        if p.suffix == ".cu" and any(f.name == "main" for f in funcs):
            mains.append(rel)
    return files, kernels, mains


SOURCE_SUFFIXES = (*CUDA_SUFFIXES, ".cpp", ".cc", ".cxx", ".c")
# The verdicts programs print when their own check fails, as they spell them in string literals:
# "FAIL", "FAILED" ("PASS" : "FAIL", "Result = FAIL", "TEST FAILED"), and "Test failed". Lowercase
# "failed" alone is left out: error messages ("file open failed") are not checks of the results.
FAIL_VERDICTS = (r"\bFAIL(?:ED|URE)?\b", r"\b[Tt]ests? failed\b")


def _source_texts(root: Path) -> dict[str, str]:
    """Every source file init reads for what the program prints and how it seeds its inputs, by
    its path relative to root (read once for both)."""
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in _walk(root, SOURCE_SUFFIXES)}


def printed_verdict(texts: dict[str, str]) -> tuple[str | None, str]:
    """A fail_pattern for what the program prints when its own check fails, from the string
    literals of its sources (_source_texts), and the first file that prints it; (None, "") when
    none does."""
    found: dict[str, str] = {}
    for name, text in texts.items():
        if "FAIL" not in text and "ailed" not in text:
            continue
        for literal in STRING_LITERAL.findall(text):
            for pattern in FAIL_VERDICTS:
                if pattern not in found and re.search(pattern, literal):
                    found[pattern] = name
    if not found:
        return None, ""
    patterns = [p for p in FAIL_VERDICTS if p in found]
    return "|".join(patterns), found[patterns[0]]


# Inputs drawn from the clock: srand(time(NULL)), srand((unsigned) time(0)), srand48(time(0)), a
# standard engine constructed from time(...), and std::random_device (a fresh seed every run).
_CLOCK_SEED = re.compile(
    r"\bsrand(?:48)?\s*\(\s*(?:\([^()]*\)\s*)?(?:std::)?time\s*\("
    r"|\b(?:mt19937(?:_64)?|default_random_engine|minstd_rand0?|ranlux\w*)\s+\w+\s*[({]\s*(?:\([^()]*\)\s*)?"
    r"(?:std::)?time\s*\("
    r"|\brandom_device\b")


def clock_seed(texts: dict[str, str]) -> str:
    """Where the program's sources (_source_texts) seed its random inputs from the clock
    ("file:line"), or "" when they do not: then its results differ from run to run, and comparing
    them judges nothing."""
    for name, text in texts.items():
        if "time" not in text and "random_device" not in text:
            continue
        if m := _CLOCK_SEED.search(strip_comments_and_strings(text)):
            line = text.count("\n", 0, m.start()) + 1
            return f"{name}:{line}"
    return ""


def count_of(n: int, noun: str) -> str:
    """'1 kernel', '3 kernels'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _q(s: str) -> str:
    """A YAML scalar for any text (JSON's double-quoted strings are YAML)."""
    return json.dumps(s)


def detect_build(root: Path, kernel_files: list[str], mains: list[str], texts: dict[str, str],
                 parent: ParentTarget | None = None, program: str | None = None) -> tuple[str, str, list[str], str]:
    """(kind, build command template, notes, run arguments found in the build file) for the project
    in root; `texts`: its sources, as _source_texts reads them; `parent`: the executable of an
    enclosing CMake project that links root's library (parent_cmake_target); `program`: the target
    to build, where the build makes several (init --program)."""
    if parent is not None:
        source = os.path.relpath(parent.top, root.resolve())
        defined = os.path.relpath(parent.top / parent.where, root.resolve())
        notes = [f"CMakeLists.txt makes the library {parent.library!r}, which the executable {parent.target!r} links "
                 f"({defined}): building that target, configured from the project's top CMakeLists.txt "
                 f"({os.path.join(source, 'CMakeLists.txt')})"]
        notes += [f"{os.path.join(source, 'CMakeLists.txt')}:{line}: the configuration stops unless {name} is set "
                  f"({message!r}): add -D{name}=<value> to app.build's cmake command (or give the whole command: "
                  "--build)" for name, line, message in cmake_required(parent.top / "CMakeLists.txt")]
        # inside the command's sh -c '...': a folder with a space in its name is double-quoted
        return "cmake", _cmake_build(f'"{source}"' if re.search(r"\s", source) else source, parent.target), notes, ""
    if (root / "CMakeLists.txt").is_file():
        asked = _cmake_asked(root, kernel_files, program)
        if isinstance(asked, tuple):
            return asked
    if (found := _cmake_target(root, kernel_files)) is not None:
        where, t, targets = found
        build = _cmake_build(".", t)
        notes = [f"{where}: building target {t!r} (of {', '.join(targets)}), configured from the top "
                 "CMakeLists.txt. Architectures CMAKE_CUDA_ARCHITECTURES names are built beside -arch; "
                 "Optimas's builds drop those this CUDA no longer compiles"]
        notes += [f"CMakeLists.txt:{line}: the configuration stops unless {name} is set ({message!r}): add "
                  f"-D{name}=<value> to app.build's cmake command (or give the whole command: --build)"
                  for name, line, message in cmake_required(root / "CMakeLists.txt")]
        notes.insert(0, f"CMake was not asked what it builds ({asked}): the target was read from CMakeLists.txt's text")
        return "cmake", build, notes, ""
    if (mk := _makefile(root)) is not None:
        return ("make", *_make_build(mk.name, read_makefile(mk), root, program=program))
    if (mk := _kernels_makefile(root, kernel_files)) is not None:
        sub = mk.parent.relative_to(root).as_posix()
        # its run target's arguments are not taken: paths in them would be relative to the subfolder
        build, notes, _ = _make_build(f"{sub}/{mk.name}", read_makefile(mk), mk.parent, sub, program)
        return "make", build, [f"no Makefile at the top: the one in {sub}/, over the kernels' files, builds",
                               *notes], ""
    cu = [f for f in kernel_files if f.endswith(".cu")]
    units = list(dict.fromkeys([*mains[:1], *(c for c in cu if c not in mains)]))
    notes = []
    if len(mains) > 1:
        notes.append(f"several files define main() ({', '.join(mains)}); the build uses {mains[0]}")
    if not mains:
        notes.append("no .cu file defines main(): give the build command that links your program")
    extra = _include_folders(texts, units or cu)
    if extra:
        notes.append(f"headers the sources include are under {', '.join(extra)}: the build adds "
                     + " ".join(f"-I{d}" for d in extra))
    build = ("nvcc -O3 -std=c++17 -arch={arch} {lineinfo} -I. " + "".join(f"-I{d} " for d in extra)
             + "-o {exe} " + " ".join(units or cu))
    return "nvcc", build, notes, ""


def _include_folders(texts: dict[str, str], units: list[str]) -> list[str]:
    """The folders (relative to the project, as `texts` names its sources) that a quoted #include of
    these sources, or of the local headers they include, resolves from when it does not resolve
    beside its file or at the top, shallowest first: a vendored library (`#include
    "CLI11/CLI11.hpp"` found in 3rd-party/CLI11/) that a build file outside init's reach (a
    suite's CMake function) adds with -I."""
    folders: list[str] = []
    seen: set[str] = set()
    pending = list(units)
    while pending:
        name = pending.pop()
        if name in seen or name not in texts:
            continue
        seen.add(name)
        for inc in _QUOTED_INCLUDE.findall(texts[name]):
            where = [posixpath.dirname(name), "", *folders]
            found = next((f for d in where if (f := posixpath.normpath(posixpath.join(d, inc))) in texts), None)
            if found is None:
                under = sorted((n[:-len(inc) - 1] for n in texts if n.endswith("/" + inc)),
                               key=lambda d: (d.count("/"), d))
                if not under:
                    continue
                folders.append(under[0])
                found = f"{under[0]}/{inc}"
            pending.append(found)
    return folders


_ASSIGNMENT = re.compile(r"^[ \t]*(?:override[ \t]+|export[ \t]+)?([A-Za-z_]\w*)[ \t]*"
                         r"(:{1,3}=|\?=|\+=|=)[ \t]*(.*?)[ \t]*$", re.M)
_REFERENCE = re.compile(r"\$(?:\(([A-Za-z_]\w*)\)|\{([A-Za-z_]\w*)\})")
_RULE = re.compile(r"^([^\s:#=][^:#=\n]*?)[ \t]*:(?![:=])", re.M)
_NOT_A_BINARY = {"all", "clean", "install", "run", "test", "check"}
OLDEST_SM = 75  # the oldest architecture CUDA 13's nvcc builds


_CMAKE_EXECUTABLE = re.compile(r"(?i)\b(?:cuda_)?add_executable\s*\(\s*([\w.+-]+|\$\{\w+\})"
                               r"(?![^)]*\b(?:IMPORTED|ALIAS)\b)")
_CMAKE_SUBDIRECTORY = re.compile(r"(?i)\badd_subdirectory\s*\(\s*\"?([\w./+-]+)")
_CMAKE_PROJECT = re.compile(r"(?i)\bproject\s*\(\s*([\w.+-]+)")
_CMAKE_SET = re.compile(r"(?i)\bset\s*\(\s*(\w+)\s+\"?([\w.+-]+)\"?\s*\)")


_CMAKE_REQUIRED = re.compile(r"(?i)^[ \t]*if\s*\(\s*NOT\s+(?:DEFINED\s+)?(\w+)\s*\)[ \t]*\n"
                             r"[ \t]*message\s*\(\s*FATAL_ERROR\s+\"([^\"]*)\"", re.M)


def cmake_required(cmakelists: Path) -> list[tuple[str, int, str]]:
    """The variables a CMakeLists.txt refuses to configure without (`if (NOT DEFINED X)` or
    `if (NOT X)` straight followed by `message(FATAL_ERROR ...)`): name, line and message."""
    text = cmakelists.read_text(errors="replace")
    return [(m.group(1), text.count("\n", 0, m.start()) + 1, m.group(2)[:120]) for m in _CMAKE_REQUIRED.finditer(text)]


def _cmake_target(root: Path, kernel_files: list[str]) -> tuple[str, str, list[str]] | None:
    """(the CMakeLists.txt, relative to root, that defines it; the executable target to build; all
    that file's targets) from the top CMakeLists.txt, or from one it reaches by add_subdirectory
    (three levels deep) over the most kernel files when the top defines none; None when there is
    no top CMakeLists.txt or no executable. `${PROJECT_NAME}` and simple set() values are resolved."""
    top = root / "CMakeLists.txt"
    if not top.is_file():
        return None
    files: list[tuple[Path, str]] = []
    todo, names = [(root, 0)], {}
    while todo:
        folder, depth = todo.pop(0)
        text = re.sub(r"#[^\n]*", "", (folder / "CMakeLists.txt").read_text(errors="replace"))  # comments
        names.update({m.group(1): m.group(2) for m in _CMAKE_SET.finditer(text)})
        if m := _CMAKE_PROJECT.search(text):
            names.setdefault("PROJECT_NAME", m.group(1))
        files.append((folder, text))
        for sub in _CMAKE_SUBDIRECTORY.findall(text):
            child = (folder / sub).resolve()
            if depth < 3 and child.is_relative_to(root.resolve()) and (child / "CMakeLists.txt").is_file():
                todo.append((child, depth + 1))
    best: tuple[int, int, Path, list[str]] | None = None
    for folder, text in files:
        targets = [names.get(t[2:-1], t) if t.startswith("${") else t for t in _CMAKE_EXECUTABLE.findall(text)]
        targets = [t for t in targets if not t.startswith("${")]
        if not targets:
            continue
        rel = folder.resolve().relative_to(root.resolve())
        over = sum(1 for f in kernel_files if Path(f).is_relative_to(rel))
        rank = (1 if folder == root else 0, over)
        if best is None or rank > best[:2]:
            best = (*rank, rel, targets)
    if best is None:
        return None
    where = (best[2] / "CMakeLists.txt").as_posix()
    return where, best[3][0], best[3]


_CMAKE_LIBRARY = re.compile(r"(?i)\b(?:cuda_)?add_library\s*\(\s*([\w.+-]+)(?![^)]*\b(?:IMPORTED|ALIAS|INTERFACE)\b)")
_CMAKE_LINK = re.compile(r"(?i)\btarget_link_libraries\s*\(\s*([\w.+-]+)([^)]*)\)")
PARENT_LEVELS = 5  # how far up init looks for the CMake project a folder's library belongs to


class ParentTarget(NamedTuple):
    """The executable an enclosing CMake project builds from a folder's library."""

    top: Path  # the project's top folder (its CMakeLists.txt calls project())
    where: str  # the CMakeLists.txt, relative to top, that defines the executable
    target: str
    library: str


def parent_cmake_target(root: Path) -> ParentTarget | None:
    """When root's CMakeLists.txt only makes libraries (Altis: `add_library(sradLib ...)`, the
    executable that links it defined by a CMakeLists.txt further up), the top of the CMake project
    above it (the highest folder, up to PARENT_LEVELS, in a chain of folders with a
    CMakeLists.txt, whose file calls project()) and the first executable there that links one of
    those libraries; None otherwise."""
    own = root / "CMakeLists.txt"
    if not own.is_file():
        return None
    text = re.sub(r"#[^\n]*", "", own.read_text(errors="replace"))
    libraries = _CMAKE_LIBRARY.findall(text)
    if not libraries or _CMAKE_EXECUTABLE.search(text):
        return None
    top, folder = None, root.resolve()
    for _ in range(PARENT_LEVELS):
        folder = folder.parent
        if not (folder / "CMakeLists.txt").is_file():
            break
        if _CMAKE_PROJECT.search((folder / "CMakeLists.txt").read_text(errors="replace")):
            top = folder
    if top is None:
        return None
    for cm in _walk(top, (), frozenset({"CMakeLists.txt"})):
        body = re.sub(r"#[^\n]*", "", cm.read_text(errors="replace"))
        executables = set(_CMAKE_EXECUTABLE.findall(body))
        for target, linked in _CMAKE_LINK.findall(body):
            if target in executables and set(linked.split()) & set(libraries):
                library = next(lib for lib in libraries if lib in linked.split())
                return ParentTarget(top, cm.relative_to(top).as_posix(), target, library)
    return None


def _cmake_build(source: str, target: str, artifact: str | None = None) -> str:
    """The build command for a CMake target: configured from `source` outside the tree with
    -arch={arch} {lineinfo}, the binary copied from `artifact` (its path in the build folder, as
    CMake's File API gives it), else found by name in the build folder (CMAKE_RUNTIME_OUTPUT_DIRECTORY
    or a subfolder's target puts it elsewhere than the top of the build folder)."""
    made = (f"{{exe}}.build/{artifact}" if artifact else
            f"\"$(find {{exe}}.build -name {target} -type f -perm -u+x | head -n 1)\"")
    return (f"sh -c 'cmake -S {source} -B {{exe}}.build -DCMAKE_BUILD_TYPE=Release "
            f"\"-DCMAKE_CUDA_FLAGS=-arch={{arch}} {{lineinfo}}\" >/dev/null && "
            f"cmake --build {{exe}}.build --target {target} -j && cp {made} {{exe}}'")


_SAFE_WORD = re.compile(r"[\w./+-]+")  # a target or artifact name written into the sh -c '...' command as it is


def _cmake_asked(root: Path, kernel_files: list[str], program: str | None = None
                 ) -> tuple[str, str, list[str], str] | str:
    """The build of the CMake project at root as CMake's File API tells it (runner.init.cmake_api):
    the executable that compiles or links the most kernel files, by its real target name and
    artifact; or why CMake could not be asked (the text is read instead)."""
    try:
        model = cmake_api.configure(root)
    except cmake_api.CMakeUnavailable as e:
        return str(e)
    chosen = cmake_api.choose_program(model, kernel_files)
    if chosen is None:
        return "CMake's File API lists no executable that compiles or links CUDA code"
    target, programs = chosen
    if program is not None:
        target = next((t for t in programs if program in (t.name, Path(t.artifact or "").name)), None)
        if target is None:
            raise ConfigError(root / "CMakeLists.txt", [
                f"--program {program}: no executable of that name compiles or links CUDA code; CMake's File API "
                f"lists: {cmake_api.describe_programs(model, programs)}"])
    if not _SAFE_WORD.fullmatch(target.name) or not _SAFE_WORD.fullmatch(target.artifact or ""):
        return f"the target {target.name[:80]!r} or what it makes has characters a build command would need quoted"
    notes = [f"CMake's File API (configured in a temporary folder) lists {count_of(len(programs), 'executable')} "
             f"with CUDA code (compiled or linked): {cmake_api.describe_programs(model, programs)}. "
             f"Building target {target.name!r} ({target.folder}/CMakeLists.txt)"
             + (", as --program asks" if program else ", which compiles or links the most kernel files; another: "
                "optimas init --program NAME")]
    return "cmake", _cmake_build(".", target.name, target.artifact), notes, ""


_INCLUDE_LINE = re.compile(r"^[ \t]*-?(?:include|sinclude)[ \t]+(.+?)[ \t]*$", re.M)


def read_makefile(path: Path, depth: int = 0) -> str:
    """A Makefile's text with the files its `include` lines name (variables expanded, relative to
    its folder, three levels deep) put in their place: shared rules often live there (a suite's
    common.mk)."""
    text = path.read_text(errors="replace")
    if depth >= 3:
        return text

    def inline(m: re.Match) -> str:
        variables = _make_variables(text[:m.start()])
        parts = []
        for name in _expand(m.group(1), variables).split():
            included = path.parent / name
            if "$" not in name and included.is_file():
                parts.append(read_makefile(included, depth + 1))
        return "\n".join(parts) if parts else m.group(0)

    return _INCLUDE_LINE.sub(inline, text)


def _make_variables(text: str) -> dict[str, str]:
    """A Makefile's variables as its assignments leave them, conditionals ignored (+= appends)."""
    found: dict[str, str] = {}
    for m in _ASSIGNMENT.finditer(text):
        name, op, value = m.groups()
        found[name] = f"{found.get(name, '')} {value}".strip() if op == "+=" else value
    return found


def _expand(value: str, variables: dict[str, str], target: str = "") -> str:
    """A Makefile value with simple variable references and $@ replaced (unknown ones kept)."""
    for _ in range(5):  # references to references, a few levels deep
        new = _REFERENCE.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), value)
        if new == value:
            break
        value = new
    return value.replace("$@", target)


def _parse_rules(text: str, variables: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each explicit rule's first target (variables expanded) -> its recipe lines, and -> its
    prerequisites (expanded), in file order."""
    rules: dict[str, list[str]] = {}
    needs: dict[str, list[str]] = {}
    heads = list(_RULE.finditer(text))
    for i, m in enumerate(heads):
        name = _expand(m.group(1).split()[0], variables) if m.group(1).split() else ""
        body = text[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        lines = body.splitlines() or [""]
        # a recipe line that starts with `#` goes to the shell, for which it is a comment: it runs
        # nothing (a suite's `run` target keeps its other sizes that way)
        recipe = [c for c in (ln.strip().lstrip("@-+").strip() for ln in lines[1:] if ln.startswith("\t"))
                  if not c.startswith("#")]
        # A target may head several rules: one has the recipe, the prerequisites add up, and a
        # target-specific variable (`release: export FLAGS := ...`) is no prerequisite.
        rules[name] = rules.get(name) or recipe
        head = lines[0].split(";", 1)[0]
        needs[name] = needs.get(name, []) + ([] if "=" in head else _expand(head, variables).split())
    return rules, needs


def _rules(text: str, variables: dict[str, str]) -> dict[str, list[str]]:
    """Each explicit rule's first target (variables expanded) -> its recipe lines, in file order."""
    return _parse_rules(text, variables)[0]


_SUBMAKE = re.compile(r"cd\s+([^\s;&]+)\s*(?:;|&&)\s*(?:\$\(MAKE\)|make)(?![\w-])"
                      r"|(?:\$\(MAKE\)|make)\s+-C\s*([^\s;&]+)")


_C_SOURCE = (".c", ".cc", ".cpp", ".cxx")


def _first_target(rules: dict[str, list[str]], needs: dict[str, list[str]] | None = None,
                  variables: dict[str, str] | None = None) -> str | None:
    """The target make would build first, leaving out phony-looking ones (all, clean, run, ...) but
    following what a first `all` needs; but
    when that one only compiles C or C++ sources (a CPU build beside the CUDA one; known from the
    prerequisites `needs`), the first whose prerequisites name a .cu file or whose recipe runs nvcc;
    `all` itself when it is the only rule with a recipe."""
    real = [t for t in rules if t and not t.startswith((".", "%", "$")) and t not in _NOT_A_BINARY]
    if not real:
        return "all" if rules.get("all") else None
    if needs is None:
        return real[0]
    real = _in_goal_order(rules, needs, real)
    variables = variables or {}

    def runs_nvcc(t: str) -> bool:
        return any("nvcc" in _expand(line, variables, t) for line in rules.get(t, []))

    def cuda(t: str) -> bool:
        return runs_nvcc(t) or any(p.endswith(".cu") for p in needs.get(t, []))

    first = real[0]
    cpu_only = (not cuda(first) and any(p.endswith(_C_SOURCE) for p in needs.get(first, []))
                and not any(_SUBMAKE.search(line) for line in rules.get(first, [])))
    return next((t for t in real if cuda(t)), first) if cpu_only else first


def _default_goal(rules: dict[str, list[str]]) -> str | None:
    """The target make builds when given none: the first."""
    return next((t for t in rules if t and not t.startswith((".", "%"))), None)


def _in_goal_order(rules: dict[str, list[str]], needs: dict[str, list[str]], real: list[str]) -> list[str]:
    """The real targets, what a phony default goal (`all`) needs first, ahead of rules written above
    the binary's (a `clang:` variant of the build), and rules that only make a folder
    (`all: builddir main`, `builddir: ; mkdir -p obj`) last: they make no binary."""
    goal = _default_goal(rules)
    if goal in _NOT_A_BINARY:
        made = [t for t in needs.get(goal, []) if t in real]
        real = made + [t for t in real if t not in made]
    return [t for t in real if not _makes_folders_only(rules[t])] + [t for t in real if _makes_folders_only(rules[t])]


def _folder_goals(rules: dict[str, list[str]], needs: dict[str, list[str]]) -> list[str]:
    """The folders a phony default goal makes before the program (`all: builddir main`): the
    program's recipe writes there, so a build of the program alone makes them first."""
    goal = _default_goal(rules)
    return [t for t in needs.get(goal, []) if goal in _NOT_A_BINARY and _makes_folders_only(rules.get(t, []))]


def _makes_folders_only(recipe: list[str]) -> bool:
    """Whether a rule's recipe only creates folders (mkdir), so its target is no program."""
    return bool(recipe) and all(re.match(r"\s*[@-]*\s*mkdir\b", line) for line in recipe)


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


def _makefile(folder: Path) -> Path | None:
    return next((folder / n for n in ("GNUmakefile", "makefile", "Makefile") if (folder / n).is_file()), None)


_MAKE_AGAIN = re.compile(r"(?:\$\(MAKE\)|\bmake)((?:\s+[\w./-]+)+)")


def _made_by(rules: dict[str, list[str]], needs: dict[str, list[str]], variables: dict[str, str],
             target: str) -> list[str]:
    """The targets of this Makefile that making `target` makes: its prerequisites, and the ones its
    recipe makes again (`$(MAKE) all`)."""
    again = [w for line in rules.get(target, []) for m in _MAKE_AGAIN.finditer(_expand(line, variables))
             for w in m.group(1).split() if not w.startswith("-") and "=" not in w]
    return [t for t in [*needs.get(target, []), *again] if t in rules and t != target]


def _binary(rules: dict[str, list[str]], variables: dict[str, str], target: str, folder: Path,
            depth: int = 0, needs: dict[str, list[str]] | None = None) -> str | None:
    """The file `target`'s recipe writes with -o, relative to the Makefile's folder; else, with
    `needs`, the first one a target it makes writes (`default: release`, `release: ; $(MAKE) all`,
    `all: bin/app`), four steps deep; through a recursive make (`cd sub; make`, `make -C sub`) into
    a subfolder's Makefile, two levels deep."""
    recipe = [_expand(line, variables, target) for line in rules.get(target, [])]
    found = next((o for line in recipe for o in re.findall(r"(?:^|\s)-o\s*(\S+)", line) if "$" not in o), None)
    if found is None and needs is not None:
        todo, seen = [(t, 1) for t in _made_by(rules, needs, variables, target)], {target}
        while todo and found is None:
            t, steps = todo.pop(0)
            if t in seen or steps > 4:
                continue
            seen.add(t)
            found = _binary(rules, variables, t, folder, depth=2)  # this Makefile only
            todo += [(u, steps + 1) for u in _made_by(rules, needs, variables, t)]
    if found or depth >= 2:
        return found
    for m in (m for line in recipe for m in _SUBMAKE.finditer(line)):
        sub = m.group(1) or m.group(2)
        if (mk := _makefile(folder / sub)) is None:
            continue
        inner = read_makefile(mk)
        inner_vars = _make_variables(inner)
        inner_rules = _rules(inner, inner_vars)
        first = _first_target(inner_rules)
        if first and (inner_binary := _binary(inner_rules, inner_vars, first, folder / sub, depth + 1)):
            return f"{sub}/{inner_binary}"
    return None


_SHELL_OPERATORS = re.compile(r"[|;&<>`$]")


def run_target_args(rules: dict[str, list[str]], variables: dict[str, str], binary: str) -> str | None:
    """The arguments a Makefile's `run` target passes to `binary` (its recipe's first line that runs
    it, variables expanded, and those it never sets empty, as make leaves them: a `$(LAUNCHER)`
    prefix); None when there is no such line or it does more than run the binary (pipes,
    redirections, command lists)."""
    for line in rules.get("run", []):
        expanded = _REFERENCE.sub("", _expand(line, variables, "run")).strip()
        if _SHELL_OPERATORS.search(expanded):
            continue
        try:
            words = shlex.split(expanded)
        except ValueError:
            continue
        at = next((i for i, w in enumerate(words) if posixpath.basename(w) == posixpath.basename(binary)), None)
        if at is not None:
            return shlex.join(words[at + 1:])
    return None


def _kernels_makefile(root: Path, kernel_files: list[str]) -> Path | None:
    """A Makefile in a subfolder (three levels deep at most) that holds the kernels' files: the one
    over the most of them, the shallowest of equals; None when none is over any (or its folder's
    name needs quoting in a shell command)."""
    best: tuple[int, int, Path] | None = None
    found = {p.parent for depth in (1, 2, 3) for p in root.glob("*/" * depth + "*akefile") if p.is_file()}
    for folder in sorted(found):
        rel = folder.relative_to(root)
        if any(_skipped(Path(part)) for part in rel.parts):
            continue
        if not re.fullmatch(r"[\w./+-]+", rel.as_posix()) or (mk := _makefile(folder)) is None:
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
    recipe = [_expand(line, variables, target) for line in rules.get(target, [])]
    link = next((line for line in recipe if re.search(r"(?:^|\s)-o\s", line)), None)
    if link is None or not link.split() or "stdc++" in link:
        return None
    linker = posixpath.basename(link.split()[0])
    if linker not in _C_LINKERS:
        return None
    objects = [p for p in needs.get(target, []) if p.endswith(".o")]
    nvcc_built = any(any("nvcc" in _expand(line, variables, o) for line in rules.get(o, [])) or
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


# A Makefile that stops unless a variable is set (Chai's `ifndef CHAI_CUDA_LIB` / `$(error ...)`,
# or `ifeq ($(X),)`), with comment lines between allowed.
_MAKE_REQUIRED = re.compile(r"^[ \t]*(?:ifndef[ \t]+(\w+)|ifeq[ \t]*\([ \t]*\$[({](\w+)[)}][ \t]*,[ \t]*\))[ \t]*\n"
                            r"(?:[ \t]*(?:#[^\n]*)?\n){0,8}[ \t]*\$\(error[ \t]+([^\n]*?)\)?[ \t]*$", re.M)
# A variable that locates the CUDA toolkit, by its name or its error's words.
_CUDA_PLACE = re.compile(r"(?i)cuda.*(?:lib|inc|path|home|dir|root|install|toolkit)|(?:lib|inc|path|home|dir|root)"
                         r".*cuda")


def make_required(text: str) -> list[tuple[str, int, str]]:
    """The variables a Makefile stops without (`ifndef X` or `ifeq ($(X),)` straight followed by
    `$(error ...)`) and does not set itself: name, line and message."""
    found = []
    for m in _MAKE_REQUIRED.finditer(text):
        name = m.group(1) or m.group(2)
        if name not in _make_variables(text[:m.start()]):
            found.append((name, text.count("\n", 0, m.start()) + 1, m.group(3).strip()[:120]))
    return found


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


def _program_target(makefile: Path, program: str, rules: dict[str, list[str]], run: make_db.DryRun | None
                    ) -> tuple[str, str]:
    """(the make target, the binary it makes) for `init --program NAME`: a target of the Makefile's
    text, or a program make's dry run of the default goal links (by its path or its name)."""
    linked = run.programs if run is not None else []
    made = next((p for p in linked if program in (p, Path(p).name)), None)
    if made is not None:
        return program if program in rules else made, made
    if program in rules:
        return program, program
    raise ConfigError(makefile, [f"--program {program}: neither a target of the Makefile nor a program its default "
                                 f"goal links ({', '.join(linked[:12]) or 'make links none'})"])


def _make_goal(makefile: Path, rules: dict[str, list[str]], needs: dict[str, list[str]], variables: dict[str, str],
               run: make_db.DryRun | None, program: str | None) -> tuple[str, str | None]:
    """(the make target to build, the binary make's dry run says it links, if it was asked): the
    program asked for; else the text's first target; else, where the text names the program only
    through variables and pattern rules, what make's dry run links (one: its goal; several, a
    TARGETS list: the first, by itself)."""
    if program is not None:
        return _program_target(makefile, program, rules, run)
    target = _first_target(rules, needs, variables)
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
    return _program_target(makefile, run.programs[0], rules, run)


def _programs_note(name: str, run: make_db.DryRun | None, built: str, program: str | None) -> list[str]:
    """The programs make's default goal links, where it links several, and which one is built."""
    if run is None or len(run.programs) < 2:
        return []
    shown = ", ".join(run.programs[:12]) + (f" and {len(run.programs) - 12} more" if len(run.programs) > 12 else "")
    another = "" if program else "; another: optimas init --program NAME"
    return [f"{name}: make's default goal links {count_of(len(run.programs), 'program')} ({shown}); this config "
            f"builds {built}{another}"]


def _make_build(name: str, text: str, folder: Path, sub: str = "", program: str | None = None
                ) -> tuple[str, list[str], str]:
    """Build command template and notes for a Makefile (in the subfolder `sub`, run with make -C):
    its first target; the binary named by the recipe's `-o`; -arch and -lineinfo for every nvcc
    the build runs through NVCC_APPEND_FLAGS (nvcc adds them after its own arguments: a Makefile's
    older -arch gives way, with a warning), and the variable the recipes call nvcc by set to the
    nvcc on PATH on make's command line (it overrides the Makefile's, in sub-makes too);
    EXTRA_NVCCFLAGS where the Makefile takes it (NVIDIA's samples, which choose their
    architectures themselves). Also the arguments its `run` target gives the binary ("" if none)."""
    variables = _make_variables(text)
    rules, needs = _parse_rules(text, variables)
    run = make_db.dry_run(folder, name.split("/")[-1])  # what make itself would link for its default goal
    target, asked = _make_goal(folder / name.split("/")[-1], rules, needs, variables, run, program)
    binary = asked or _binary(rules, variables, target, folder, needs=needs)
    goals = " ".join([*_folder_goals(rules, needs), target])
    settings, required_notes = _required_settings(name, make_required(text))
    make = (f"make -C {sub} -B {goals}" if sub else f"make -B {goals}") + settings
    copy = f"cp {sub + '/' if sub else ''}{binary or target} {{exe}}"
    run_args = run_target_args(rules, variables, binary or target) or ""
    notes = [f"{name}: building target {target!r}" + (f", which makes {binary}" if binary else
                                                      "; check the name of the binary it makes")
             + (" (make's dry run, make -pnB, says so: the Makefile's text names it through variables and "
                "pattern rules)" if asked else "")]
    notes += _programs_note(name, run, binary or target, program)
    notes += required_notes
    notes += _link_and_home_notes(name, text, rules, needs, variables, binary or target)
    if "EXTRA_NVCCFLAGS" in text:
        return f"sh -c '{make} EXTRA_NVCCFLAGS={{lineinfo}} && {copy}'", notes, run_args
    calls = [(m.group(1) or m.group(2), line) for lines in rules.values() for line in lines
             if (m := re.match(r"\$(?:\((\w+)\)|\{(\w+)\})\s", line))
             and _expand(variables.get(m.group(1) or m.group(2), ""), variables).split(" ")[0].endswith("nvcc")]
    literal = [line for lines in rules.values() for line in lines
               if re.match(r"(?:\S*/)?nvcc\s", _expand(line, variables).lstrip("@-+ "))]
    compiled = " ".join([*(_expand(line, variables) for _, line in calls), *(_expand(x, variables) for x in literal)])
    notes += _old_architecture_notes(name, compiled)
    notes.append(f"{name}: every nvcc the build runs gets -arch={{arch}} {{lineinfo}} through NVCC_APPEND_FLAGS")
    override = ""
    if calls:
        override = f" {calls[0][0]}=nvcc"
        notes.append(f"{name}: nvcc is called through {calls[0][0]}; the build sets it to the nvcc on PATH")
    return f"sh -c 'NVCC_APPEND_FLAGS=\"-arch={{arch}} {{lineinfo}}\" {make}{override} && {copy}'", notes, run_args


_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_INCLUDE_FLAG = re.compile(r"(?:^|\s)(?:-I|-isystem\s+|--include-path[= ])\s*([^\s'\"]+)")
_CMAKE_INCLUDE_DIRS = re.compile(r"(?i)\b(?:target_)?include_directories\s*\(([^)]*)\)")
_CMAKE_PATH_WORD = re.compile(r"(?:\$\{(?:CMAKE_CURRENT_SOURCE_DIR|CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR)\}/)?"
                              r"(\.\.[\w./+-]*)")


BUILD_FILES = frozenset({"Makefile", "makefile", "GNUmakefile", "CMakeLists.txt"})


def outside_reads(root: Path, texts: dict[str, str], build_files: list[Path],
                  parent: ParentTarget | None = None) -> list[tuple[Path, str]]:
    """What the build reads outside `root`, with what reads it: headers the sources include with a
    relative path (`#include "../common/util.h"`), the files a Makefile includes (`include
    ../../common.mk`) and the folders its nvcc flags add (`-I../common`), CMake's
    add_subdirectory(..) and include_directories(..). Only paths that exist count, and only relative
    ones: an absolute path (`-I$(CUDA_DIR)/include`) is read in place by a build in any copy.
    `build_files`: root's Makefiles and CMakeLists.txt (BUILD_FILES); `parent`: as detect_build's,
    whose project's top the build reads whole."""
    top = root.resolve()
    found: dict[Path, str] = {}

    def note(base: Path, written: str, why: str) -> None:
        if posixpath.isabs(written):
            return
        try:
            real = (base / written).resolve()
        except OSError:
            return
        if real.exists() and not real.is_relative_to(top):
            found.setdefault(real, why)

    for name, text in texts.items():
        for inc in _QUOTED_INCLUDE.findall(text):
            note(root / posixpath.dirname(name), inc, f"{name} includes \"{inc}\"")
    for mk in (p for p in build_files if p.name != "CMakeLists.txt"):
        rel = mk.relative_to(root).as_posix()
        raw = mk.read_text(errors="replace")
        variables = _make_variables(raw)
        for m in _INCLUDE_LINE.finditer(raw):
            for part in _expand(m.group(1), variables).split():
                if "$" not in part:
                    note(mk.parent, part, f"{rel} includes {part}")
        text = read_makefile(mk)
        expanded = _expand(" ".join(_make_variables(text).values()) + "\n" + text, _make_variables(text))
        for inc in _INCLUDE_FLAG.findall(expanded):
            if "$" not in inc:
                note(mk.parent, inc, f"{rel} compiles with -I{inc}")
    if parent is not None:
        found.setdefault(parent.top, f"the executable {parent.target!r} that links this folder's library "
                                     f"{parent.library!r} is built by the CMake project in {parent.top}")
    for cm in (p for p in build_files if p.name == "CMakeLists.txt"):
        rel = cm.relative_to(root).as_posix()
        text = cm.read_text(errors="replace")
        for sub in _CMAKE_SUBDIRECTORY.findall(text):
            note(cm.parent, sub, f"{rel}: add_subdirectory({sub})")
        for args in _CMAKE_INCLUDE_DIRS.findall(text):
            for path in _CMAKE_PATH_WORD.findall(args):
                note(cm.parent, path, f"{rel}: include_directories({path})")
    return sorted(found.items(), key=lambda kv: str(kv[0]))


def smallest_workspace(root: Path, outside: list[tuple[Path, str]]) -> Path:
    """The smallest folder holding `root` and every path in `outside`."""
    paths = [str(root.resolve()), *(str(p if p.is_dir() else p.parent) for p, _ in outside)]
    return Path(os.path.commonpath(paths))


def read_parts(root: Path, outside: list[tuple[Path, str]], space: Path) -> list[str]:
    """The parts of the workspace `space` a build reads (app.workspace_paths), relative to it: the
    program folder and the folder of each path in `outside` (a header's folder, since headers
    include their neighbours); none inside another. Empty when one of them is the workspace
    itself: then the whole of it is copied anyway."""
    folders = sorted({root.resolve(), *((p if p.is_dir() else p.parent).resolve() for p, _ in outside)},
                     key=lambda q: len(q.parts))
    parts: list[Path] = []
    for q in folders:
        if not any(q.is_relative_to(k) for k in parts):
            parts.append(q)
    if any(q == space for q in parts):
        return []
    return sorted(q.relative_to(space).as_posix() for q in parts)


def _has_build_file(folder: Path) -> bool:
    return _makefile(folder) is not None or (folder / "CMakeLists.txt").is_file()


def separate_programs(root: Path, kernel_files: list[str]) -> list[str]:
    """The folders under `root` that each build their own program (a Makefile or CMakeLists.txt
    nearest above some kernel file), when `root` has no build file of its own: a suite's folder
    rather than one program's. Empty when root builds, or when the kernels share one build."""
    if _has_build_file(root):
        return []
    found: list[str] = []
    for name in kernel_files:
        folder = (root / name).parent
        while folder != root and not _has_build_file(folder):
            folder = folder.parent
        rel = folder.relative_to(root).as_posix()
        if folder != root and rel not in found:
            found.append(rel)
    return sorted(found)


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
    texts = _source_texts(root)
    build_files = _walk(root, (), BUILD_FILES)
    parent = parent_cmake_target(root)
    if build:
        kind, notes, run_args = "the command given", [], ""
    else:
        kind, build, notes, run_args = detect_build(root, files, mains, texts, parent, program)
    own = {name: text for name, text in texts.items() if not _VENDORED.search(name)}
    fail_pattern, where = printed_verdict(own)
    left_out: dict[str, str] = {}
    constants = proposed_size_constants(own, left_out)
    return Project(files, kernels, build, kind, notes, run_args, fail_pattern, where, clock_seed(own),
                   outside_reads(root, texts, build_files, parent), removed_calls(texts), usage_names(own),
                   constants, old_dialect(root, texts, build_files), runs.argc_guards(own), mains,
                   size_left_out=left_out, size_flags=runs.size_flags(own))


_OLD_STD = re.compile(r"--?std[= ]" + OLD_CPP + r"\b|\b(?:CMAKE_)?(?:CUDA|CXX)_STANDARD\s+(?:98|11|14)\b")


def old_dialect(root: Path, texts: dict[str, str], build_files: list[Path]) -> str:
    """Where the build asks for a C++ dialect older than C++17 while the sources include CUDA 13's
    Thrust, CUB, libcu++ or cooperative groups headers, which stop under it: "file: option;
    <header>" ("" when it does not); `build_files`: root's (BUILD_FILES). The nvcc shim compiles
    those sources as C++17 with app.compat_headers."""
    header = next((m.group(1) for text in texts.values()
                   if (m := CCCL_INCLUDE.search(strip_comments_and_strings(text)))), None)
    if header is None:
        return ""
    for build_file in build_files:
        if m := _OLD_STD.search(build_file.read_text(errors="replace")):
            return f"{build_file.relative_to(root).as_posix()}: {m.group(0)}; <{header}>"
    return ""


# Folders of libraries a project carries with it: what they print, seed or size is not the
# program's (CLI11's "... FAILED" message is no verdict of the program's own check). Their calls of
# what CUDA 13 removed still matter to the build.
_VENDORED = re.compile(r"(?:^|/)(?:3rd[-_]?party|third[-_]?party|thirdparty|external|extern|vendor|vendored|deps|"
                       r"contrib|submodules)/", re.I)


def removed_calls(texts: dict[str, str]) -> list[str]:
    """What the sources call that CUDA 13 no longer compiles and a compatibility header of Optimas's
    defines anew (the nvcc shim's COMPATS): "header (file: names)" for each."""
    found = []
    for compat in COMPATS:
        calls = [f"{name}: {', '.join(used)}" for name, text in texts.items() if (used := compat_used(text, compat))]
        if len(calls) > 4:
            calls = [*calls[:4], f"and {len(calls) - 4} more files"]
        if calls:
            found.append(f"{compat.header.name} ({'; '.join(calls)})")
    return found


class SizeArguments(NamedTuple):
    """Run arguments with their numbers as placeholders: `run` takes each as is, `profile` scaled."""

    run: str
    profile: str
    values: dict[str, int]


_NUMBER_ARG = re.compile(r"^(?P<flag>-{1,2}[A-Za-z][\w-]*=)?(?P<value>\d+)$")
_FLAG = re.compile(r"^-{1,2}[A-Za-z][\w-]*$")
# Numbers under these names are not problem sizes: scaling them changes no launch's work, or
# breaks the run (a block of 2048 threads).
_NOT_SIZE = re.compile(r"seed|dev|gpu|iter|repeat|repetit|reps?$|steps?$|trial|epoch|warm|loop|verbose|thread|block|"
                       r"bs$|tpb", re.I)
MIN_SIZE = 16  # smaller numbers are counts, flags and ids more often than sizes
RESERVED = frozenset({"exe", "arch", "lineinfo", "config", "seed", "scale", "out"})


# A usage line the program prints: `Usage: %s <size> <repeat>`, `" << argv[0] << " [n] [iters]`,
# `./prog LX LY NITER`; what follows the program's name is its arguments, in order.
_USAGE = re.compile(r"""(?i)\busage:?[ \t]*(?:%s|\./%s|\./[\w.-]+|"\s*<<\s*argv\[0\]\s*<<\s*"|[\w.-]+)[ \t]+"""
                    r"""([^"\n\\]*)""")
_USAGE_WORD = re.compile(r"<([^<>]+)>|\[([^\[\]]+)\]|([A-Za-z_][\w-]*)")


def usage_names(texts: dict[str, str]) -> list[str]:
    """The positional arguments' names in the first usage line the sources print that names any
    (`<repeat>` -> "repeat", `[num test iterations]` -> "num_test_iterations"), in order; options
    (`[options]`, `-i file`) end the list. Empty when no source prints one."""
    for text in texts.values():
        for m in _USAGE.finditer(text):
            names = []
            for w in _USAGE_WORD.finditer(m.group(1)):
                word = next(g for g in w.groups() if g)
                if word.startswith("-") or re.search(r"(?i)option|switch|flag", word):
                    break
                names.append(re.sub(r"\W+", "_", word.strip()).strip("_").lower())
            if names:
                return names
    return []


def size_arguments(run_args: str, usage: list[str] | None = None) -> SizeArguments | None:
    """The whole numbers >= MIN_SIZE among the run arguments (`--n=4096`, `-n 4096`, `4096`) that
    are not named like seeds, devices, iteration counts or block sizes, as placeholders named after
    their flag (`n`), the name the program's usage line gives their position (`usage`: `size`),
    or their position (`arg2`); None when there are none."""
    try:
        words = shlex.split(run_args)
    except ValueError:
        return None
    usage = usage or []
    run, profile, values = [], [], {}
    for i, word in enumerate(words):
        m = _NUMBER_ARG.match(word)
        flag = m and (m.group("flag") or (words[i - 1] if i and _FLAG.match(words[i - 1]) else "")
                      or (usage[i] if not any(w.startswith("-") for w in words) and i < len(usage) else ""))
        if not m or int(m.group("value")) < MIN_SIZE or (flag and _NOT_SIZE.search(flag.strip("-="))):
            run.append(shlex.quote(word))
            profile.append(shlex.quote(word))
            continue
        name = re.sub(r"\W", "_", flag.strip("-=")) if flag else f"arg{i + 1}"
        if name in RESERVED or name in values or not name.isidentifier():
            name = f"arg{i + 1}"
        values[name] = int(m.group("value"))
        prefix = m.group("flag") or ""
        run.append(f"{prefix}{{{name}}}")
        profile.append(f"{prefix}{{{name}*scale}}")
    if not values:
        return None
    return SizeArguments(" ".join(run), " ".join(profile), values)


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
        lines += [f"  # The build reads files outside the program folder: {why}" for why in _outside_notes(p)]
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


def _outside_notes(p: Project, shown: int = 4) -> list[str]:
    notes = [why for _, why in p.outside[:shown]]
    if len(p.outside) > shown:
        notes.append(f"and {len(p.outside) - shown} more")
    return notes


def main_guards(root: Path) -> list[runs.ArgcGuard]:
    """The argument-count checks that stop the program's main, in the program folder's own sources."""
    return runs.argc_guards({k: v for k, v in _source_texts(root).items() if not _VENDORED.search(k)})


def runs_that_start(project: Project, root: Path, name: str | None, run_args: str, given: bool) -> str:
    """The run arguments to write: `run_args`, or, where main stops unless given more and the user
    gave none, the first arguments the repository's README, scripts or CI run the program with that
    are enough; a note says which check stops the program and what was chosen."""
    short = runs.too_few(project.argc, run_args)
    if short is None:
        return run_args
    names = [name or "", root.resolve().name, *(Path(m).stem for m in project.mains)]
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


def _program_notes(project: Project) -> list[str]:
    """What init says of the program's own code: its printed verdict, a clock seed, CUDA 13's removals."""
    notes = []
    if project.fail_pattern:
        notes.append(f"a run whose output matches {project.fail_pattern} fails validation: the program prints that "
                     f"verdict when its own check fails ({project.fail_pattern_in}); remove app.stdout if it prints "
                     "it otherwise")
    if project.clock_seed_at:
        notes.append(f"the program seeds its random inputs from the clock ({project.clock_seed_at}): its results "
                     "differ from run to run, so comparing a candidate's with the original's judges nothing and every "
                     "candidate is refused; give it a fixed seed (or take one from its arguments: {seed} in app.run), "
                     "or judge it by app.stdout alone and set app.gpu_results.compare: off")
    if project.compat or project.dialect:
        notes.append("the sources use what CUDA 13 removed or changed: compat_headers is set (see its comment)")
    return notes


def _with_size_flag(project: Project, run_args: str, given: bool) -> str:
    """Where the run passes no size and the program takes one from an optional flag whose default
    the code sets (`--arraysize`, `-s`, `--n=`), the run arguments with that flag at its default, so
    that the counter runs scale it (a note says so); the user's own arguments stay as given."""
    if not project.size_flags or size_arguments(run_args, project.usage):
        return run_args
    f = project.size_flags[0]
    if given:
        project.notes.append(f"{f.file}:{f.line}: the program takes its size from {f.flag.rstrip('=')} (default "
                             f"{f.default}); add it to --args so that the counter runs can scale it")
        return run_args
    project.notes.append(f"{f.file}:{f.line}: the program takes its size from {f.flag.rstrip('=')} (default "
                         f"{f.default}, {f.variable}): the run passes it at its default, so that the counter runs "
                         "scale it")
    return f"{run_args} {f.argument()}".strip()


def write_config(root: Path, out: Path, name: str | None = None, run_args: str | None = None,
                 build: str | None = None, force: bool = False, program: str | None = None) -> tuple[Project, str]:
    """Inspect root, check the config it gives as check-config would, and write it to `out` (never
    over an existing file unless `force`). `run_args` None: the user gave none (init may propose
    some). Returns what was found and the text written."""
    given, run_args = run_args is not None, run_args or ""
    project = inspect(root, build, program)
    project.notes += _program_notes(project)
    if not run_args and project.run_args:
        run_args = project.run_args
        project.notes.append(f"the run arguments are the ones the Makefile's run target gives: {run_args} "
                             "(pass --args to choose others)")
    run_args = runs_that_start(project, root, name, run_args, given)
    run_args = _with_size_flag(project, run_args, given)
    if out.exists() and not force:
        raise ConfigError(out, ["the file exists; pass --force to replace it, or --output to write elsewhere"])
    where = out.resolve()
    workdir = os.path.relpath(root.resolve(), where.parent)
    workspace = None
    parts: list[str] = []
    if project.outside:
        space = smallest_workspace(root, project.outside)
        if space == Path(space.anchor) or Path.home().resolve().is_relative_to(space):
            project.notes.append("the build reads files outside the program folder ("
                                 + "; ".join(_outside_notes(project)) + "), but the folder holding them all is "
                                 f"{space}, too large to copy for every candidate: set app.workspace yourself")
        else:
            workspace = os.path.relpath(space, where.parent)
            parts = read_parts(root, project.outside, space)
    # a name defined again elsewhere in what a build copies (another program of the suite) cannot
    # be scaled: leave it out
    space_dir = (where.parent / workspace).resolve() if workspace else root.resolve()
    constants = bool(project.size_constants) and not size_arguments(run_args, project.usage)
    texts = (workspace_texts(space_dir, root.resolve(), copied_parts(space_dir, root.resolve(), parts))
             if workspace or constants else {})
    if constants:
        project.size_constants = [c for c in project.size_constants if definition_problem(c.name, texts) is None]
    if project.size_left_out and not size_arguments(run_args, project.usage):
        project.notes.append("not proposed as size constants: " + "; ".join(
            f"{name}: {why}" for name, why in list(project.size_left_out.items())[:4]))
    if workspace:
        # the build compiles files outside the program folder too (a suite's shared main.cu): what
        # they use that CUDA 13 removed needs the headers as much; where the whole workspace is the
        # build's (a CMake project), its build files may set the dialect
        project.compat = removed_calls(texts)
        if not parts:
            project.dialect = project.dialect or old_dialect(space_dir, texts, _walk(space_dir, (), BUILD_FILES))
    text = render_config(project, name or root.resolve().name, run_args, workdir, workspace, parts)
    cfg = parse_config(text, where)
    lc = LoadedConfig(path=where, config=cfg, sha256="")
    problems = path_problems(lc)
    if problems:
        raise ConfigError(where, problems)
    atomic_write_text(out, text)
    return project, text
