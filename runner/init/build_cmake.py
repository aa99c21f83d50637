"""The build of a CMake project: asked of CMake's File API (cmake_api), else read from CMakeLists.txt's text."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from runner.base.errors import ConfigError
from runner.init import cmake_api
from runner.init.project import count_of
from runner.init.sources import walk

CMAKE_EXECUTABLE = re.compile(r"(?i)\b(?:cuda_)?add_executable\s*\(\s*([\w.+-]+|\$\{\w+\})"
                               r"(?![^)]*\b(?:IMPORTED|ALIAS)\b)")


CMAKE_SUBDIRECTORY = re.compile(r"(?i)\badd_subdirectory\s*\(\s*\"?([\w./+-]+)")


CMAKE_PROJECT = re.compile(r"(?i)\bproject\s*\(\s*([\w.+-]+)")


_CMAKE_SET = re.compile(r"(?i)\bset\s*\(\s*(\w+)\s+\"?([\w.+-]+)\"?\s*\)")


_CMAKE_REQUIRED = re.compile(r"(?i)^[ \t]*if\s*\(\s*NOT\s+(?:DEFINED\s+)?(\w+)\s*\)[ \t]*\n"
                             r"[ \t]*message\s*\(\s*FATAL_ERROR\s+\"([^\"]*)\"", re.M)


def cmake_required(cmakelists: Path) -> list[tuple[str, int, str]]:
    """The variables a CMakeLists.txt refuses to configure without (`if (NOT DEFINED X)` or
    `if (NOT X)` straight followed by `message(FATAL_ERROR ...)`): name, line and message."""
    text = cmakelists.read_text(errors="replace")
    return [(m.group(1), text.count("\n", 0, m.start()) + 1, m.group(2)[:120]) for m in _CMAKE_REQUIRED.finditer(text)]


def evident_values(root: Path) -> tuple[dict[str, str], list[str]]:
    """Values for the variables CMakeLists.txt refuses to configure without, where the sources make
    one evident: the name of the folder holding the CUDA kernels (BabelStream's src/cuda for
    MODEL, among models the CMakeLists names: register_model(cuda ...)), where CMakeLists.txt names
    it as a word; one with "cuda" in it first. With a note on each."""
    top = root / "CMakeLists.txt"
    required = cmake_required(top) if top.is_file() else []
    if not required:
        return {}, []
    text = top.read_text(errors="replace")
    folders: list[str] = []
    for cu in sorted(root.rglob("*.cu")):
        rel = cu.relative_to(root)
        if len(rel.parts) > 5 or any(p.startswith(".") for p in rel.parts):
            continue
        if "__global__" in cu.read_text(errors="replace"):
            folders += [p for p in rel.parts[:-1] if p not in folders]
    named = [f for f in folders if re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    named.sort(key=lambda f: "cuda" not in f.lower())
    values: dict[str, str] = {}
    notes: list[str] = []
    for name, line, message in required:
        if named and (len(named) == 1 or "cuda" in named[0].lower()):
            values[name] = named[0]
            notes.append(f"CMakeLists.txt:{line}: the configuration stops unless {name} is set ({message!r}); the "
                         f"build sets -D{name}={named[0]}: the CUDA kernels are in a folder {named[0]}/, a name "
                         "CMakeLists.txt gives as one of its choices (change it in app.build for another)")
            _model_flags(root, named[0], values, notes)
    return values, notes


_FLAG_REQUIRED = re.compile(r"(?i)\bregister_flag_required\s*\(\s*(\w+)\s+\"([^\"]*)\"")


def _model_flags(root: Path, folder: str, values: dict[str, str], notes: list[str]) -> None:
    """The flags the chosen model's own .cmake files require (BabelStream's
    `register_flag_required(CMAKE_CUDA_COMPILER ...)` and CUDA_ARCH in src/cuda/model.cmake): the nvcc on
    PATH, and {arch}."""
    own = (p for p in root.rglob("*.cmake") if p.parent.name == folder and len(p.parts) - len(root.parts) <= 4)
    for mf in sorted(own):
        for name, why in _FLAG_REQUIRED.findall(mf.read_text(errors="replace")):
            value = ("nvcc" if name == "CMAKE_CUDA_COMPILER" else
                     "{arch}" if "ARCH" in name.upper() and re.search(r"(?i)nvidia|sm_|-arch", why) else None)
            if value is None or name in values:
                continue
            values[name] = value
            notes.append(f"{mf.relative_to(root).as_posix()} requires {name} ({why[:80]!r}): the build sets "
                         f"-D{name}={value}")


def cmake_text_target(root: Path, kernel_files: list[str]) -> tuple[str, str, list[str]] | None:
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
        if m := CMAKE_PROJECT.search(text):
            names.setdefault("PROJECT_NAME", m.group(1))
        files.append((folder, text))
        for sub in CMAKE_SUBDIRECTORY.findall(text):
            child = (folder / sub).resolve()
            if depth < 3 and child.is_relative_to(root.resolve()) and (child / "CMakeLists.txt").is_file():
                todo.append((child, depth + 1))
    best: tuple[int, int, Path, list[str]] | None = None
    for folder, text in files:
        targets = [names.get(t[2:-1], t) if t.startswith("${") else t for t in CMAKE_EXECUTABLE.findall(text)]
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
    if not libraries or CMAKE_EXECUTABLE.search(text):
        return None
    top, folder = None, root.resolve()
    for _ in range(PARENT_LEVELS):
        folder = folder.parent
        if not (folder / "CMakeLists.txt").is_file():
            break
        if CMAKE_PROJECT.search((folder / "CMakeLists.txt").read_text(errors="replace")):
            top = folder
    if top is None:
        return None
    for cm in walk(top, (), frozenset({"CMakeLists.txt"})):
        body = re.sub(r"#[^\n]*", "", cm.read_text(errors="replace"))
        executables = set(CMAKE_EXECUTABLE.findall(body))
        for target, linked in _CMAKE_LINK.findall(body):
            if target in executables and set(linked.split()) & set(libraries):
                library = next(lib for lib in libraries if lib in linked.split())
                return ParentTarget(top, cm.relative_to(top).as_posix(), target, library)
    return None


def cmake_build(source: str, target: str, artifact: str | None = None, defines: dict[str, str] | None = None) -> str:
    """The build command for a CMake target: configured from `source` outside the tree with
    -arch={arch} {lineinfo}, the binary copied from `artifact` (its path in the build folder, as
    CMake's File API gives it), else found by name in the build folder (CMAKE_RUNTIME_OUTPUT_DIRECTORY
    or a subfolder's target puts it elsewhere than the top of the build folder)."""
    made = (f"{{exe}}.build/{artifact}" if artifact else
            f"\"$(find {{exe}}.build -name {target} -type f -perm -u+x | head -n 1)\"")
    given = "".join(f" -D{k}={v}" for k, v in (defines or {}).items())
    return (f"sh -c 'cmake -S {source} -B {{exe}}.build -DCMAKE_BUILD_TYPE=Release{given} "
            f"\"-DCMAKE_CUDA_FLAGS=-arch={{arch}} {{lineinfo}}\" >/dev/null && "
            f"cmake --build {{exe}}.build --target {target} -j && cp {made} {{exe}}'")


SAFE_WORD = re.compile(r"[\w./+-]+")  # a target or artifact name written into the sh -c '...' command as it is


_configured: dict[Path, cmake_api.CodeModel | cmake_api.CMakeUnavailable] = {}


def codemodel(root: Path) -> cmake_api.CodeModel:
    """CMake's codemodel of the project at root (cmake_api.configure, with compile_commands.json
    exported), configured once per project in this process: listing its programs and building one
    ask the same configure step."""
    key = root.resolve()
    if key not in _configured:
        try:
            given = {k: v.replace("{arch}", "sm_90") for k, v in evident_values(root)[0].items()}
            defines = {"CMAKE_EXPORT_COMPILE_COMMANDS": "ON", **given}
            _configured[key] = cmake_api.configure(root, defines)
        except cmake_api.CMakeUnavailable as e:
            _configured[key] = e
    found = _configured[key]
    if isinstance(found, cmake_api.CMakeUnavailable):
        raise found
    return found


def cmake_asked(root: Path, kernel_files: list[str], program: str | None = None
                 ) -> tuple[str, str, list[str], str] | str:
    """The build of the CMake project at root as CMake's File API tells it (runner.init.cmake_api):
    the executable that compiles or links the most kernel files, by its real target name and
    artifact; or why CMake could not be asked (the text is read instead)."""
    try:
        model = codemodel(root)
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
    if not SAFE_WORD.fullmatch(target.name) or not SAFE_WORD.fullmatch(target.artifact or ""):
        return f"the target {target.name[:80]!r} or what it makes has characters a build command would need quoted"
    notes = [f"CMake's File API (configured in a temporary folder) lists {count_of(len(programs), 'executable')} "
             f"with CUDA code (compiled or linked): {cmake_api.describe_programs(model, programs)}. "
             f"Building target {target.name!r} ({target.folder}/CMakeLists.txt)"
             + (", as --program asks" if program else ", which compiles or links the most kernel files; another: "
                "optimas init --program NAME")]
    values, value_notes = evident_values(root)
    return "cmake", cmake_build(".", target.name, target.artifact, values), notes + value_notes, ""


def cmake_build_for(root: Path, kernel_files: list[str], parent: ParentTarget | None = None,
                    program: str | None = None) -> tuple[str, str, list[str], str] | None:
    """detect_build's answer for a CMake project: the executable of the enclosing project that
    links root's library (`parent`), the one CMake's File API lists, or the one CMakeLists.txt's text
    names; None when root is no CMake project."""
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
        return "cmake", cmake_build(f'"{source}"' if re.search(r"\s", source) else source, parent.target), notes, ""
    if (root / "CMakeLists.txt").is_file():
        asked = cmake_asked(root, kernel_files, program)
        if isinstance(asked, tuple):
            return asked
    if (found := cmake_text_target(root, kernel_files)) is not None:
        where, t, targets = found
        if program is not None and program not in targets:
            raise ConfigError(root, [f"--program {program}: {where} defines no executable of that name (CMake could "
                                     f"not be asked: {asked}); its executables: {', '.join(targets)}"])
        t = program or t
        build = cmake_build(".", t)
        notes = [f"{where}: building target {t!r} (of {', '.join(targets)}"
                 + ("; --program asks for it" if program else "; another: optimas init --program NAME")
                 + "), configured from the top "
                 "CMakeLists.txt. Architectures CMAKE_CUDA_ARCHITECTURES names are built beside -arch; "
                 "Optimas's builds drop those this CUDA no longer compiles"]
        notes += [f"CMakeLists.txt:{line}: the configuration stops unless {name} is set ({message!r}): add "
                  f"-D{name}=<value> to app.build's cmake command (or give the whole command: --build)"
                  for name, line, message in cmake_required(root / "CMakeLists.txt")]
        notes.insert(0, f"CMake was not asked what it builds ({asked}): the target was read from CMakeLists.txt's text")
        return "cmake", build, notes, ""
    return None
