"""The project's sources as init reads them: the files that define kernels and main, and what their
text says of the program (the verdict it prints, a clock seed, what CUDA 13 removed, an older C++ dialect).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.scan.cuda_source import STRING_LITERAL, functions, strip_comments_and_strings
from runner.toolchain.nvcc_shim import CCCL_INCLUDE, COMPATS, OLD_CPP, compat_used

CUDA_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".inl")


MAX_DEPTH = 4


MAX_FILES = 2000  # files looked at; a checkout bigger than this is not scanned further


# Folders of libraries a program carries with it (CUDA's own C++ libraries, vendored code): their
# kernels and headers are not the program's to optimize.
VENDORED = {"cub", "thrust", "libcudacxx", "cccl", "third_party", "thirdparty", "3rdparty", "vendor"}


def skipped(d: Path) -> bool:
    n = d.name
    return (n.startswith(".") or n.startswith(("build", "cmake-build")) or n in {"runs", "__pycache__", "node_modules"}
            or n.lower() in VENDORED or _is_submodule(d))


def _is_submodule(d: Path) -> bool:
    """Whether `d` is a git submodule's checkout (someone else's code): a `.git` file, not folder."""
    return (d / ".git").is_file()


def walk(root: Path, suffixes: tuple[str, ...] = CUDA_SUFFIXES, names: frozenset[str] = frozenset()) -> list[Path]:
    """The files under root with one of `suffixes` or `names`, breadth first, build and hidden
    folders skipped."""
    out: list[Path] = []
    todo = [(root, 0)]
    while todo and len(out) < MAX_FILES:
        d, depth = todo.pop(0)
        for p in sorted(d.iterdir()):
            if p.is_dir() and depth < MAX_DEPTH and not skipped(p):
                todo.append((p, depth + 1))
            elif p.is_file() and (p.suffix in suffixes or p.name in names):
                out.append(p)
    return out


def scan(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(files defining kernels, the kernels' names, .cu files defining main), paths relative to root."""
    files, kernels, mains = [], [], []
    for p in walk(root):
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


def source_texts(root: Path) -> dict[str, str]:
    """Every source file init reads for what the program prints and how it seeds its inputs, by
    its path relative to root (read once for both)."""
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
            for p in walk(root, SOURCE_SUFFIXES)}


def printed_verdict(texts: dict[str, str]) -> tuple[str | None, str]:
    """A fail_pattern for what the program prints when its own check fails, from the string
    literals of its sources (source_texts), and the first file that prints it; (None, "") when
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


# Inputs drawn from the clock through a library's seeding call, which Optimas's seed library answers
# (app.pin_seeds): srand(time(NULL)), srand((unsigned) time(0)), srand48(time(0)), a seed read from a
# struct timeval or timespec (srand(tv.tv_usec)) or a clock call, and std::random_device.
_LIBRARY_CLOCK_SEED = re.compile(
    r"\bsrand(?:om|48)?\s*\(\s*(?:\([^()]*\)\s*)?(?:std::)?time\s*\("
    r"|\bsrand(?:om|48)?\s*\([^;]*?(?:\btv_u?sec\b|\btv_nsec\b|\bclock\s*\(|\bgetpid\s*\(|::now\s*\()"
    r"|\brandom_device\b")
# A standard engine constructed from time(...): the seed goes to inline code, so no library call can pin it.
_INLINE_CLOCK_SEED = re.compile(
    r"\b(?:mt19937(?:_64)?|default_random_engine|minstd_rand0?|ranlux\w*)\s+\w+\s*[({]\s*(?:\([^()]*\)\s*)?"
    r"(?:std::)?time\s*\(")


@dataclass(frozen=True)
class ClockSeed:
    """Where a program seeds its random inputs from the clock, and whether app.pin_seeds fixes it."""

    at: str = ""  # "file:line"; "": nowhere
    pinnable: bool = False  # every such seed goes through a call the seed library answers


def clock_seed(texts: dict[str, str]) -> ClockSeed:
    """Where the program's sources (source_texts) seed its random inputs from the clock: then its
    results differ from run to run, and comparing them judges nothing unless the seeds are pinned."""
    found: list[tuple[str, bool]] = []
    for name, text in texts.items():
        if not any(word in text for word in ("time", "srand", "random_device")):
            continue
        code = strip_comments_and_strings(text)
        for pattern, pinnable in ((_INLINE_CLOCK_SEED, False), (_LIBRARY_CLOCK_SEED, True)):
            if m := pattern.search(code):
                found.append((f"{name}:{text.count(chr(10), 0, m.start()) + 1}", pinnable))
    if not found:
        return ClockSeed()
    return ClockSeed(found[0][0], all(pinnable for _, pinnable in found))


QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


BUILD_FILES = frozenset({"Makefile", "makefile", "GNUmakefile", "CMakeLists.txt"})


_OLD_STD = re.compile(r"--?std[= ]" + OLD_CPP + r"\b|\b(?:CMAKE_)?(?:CUDA|CXX)_STANDARD\s+(?:98|11|14)\b")


def old_dialect(root: Path, texts: dict[str, str], build_files: list[Path]) -> str:
    """Where the build asks for a C++ dialect older than C++17 while the sources include CUDA 13's
    Thrust, CUB, libcu++ or cooperative groups headers, which stop under it: "file: option;
    <header>" ("" when it does not); `build_files`: root's (BUILD_FILES). The nvcc shim compiles
    those sources as C++17 with app.legacy_cuda."""
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
VENDORED_PATH = re.compile(r"(?:^|/)(?:3rd[-_]?party|third[-_]?party|thirdparty|external|extern|vendor|vendored|deps|"
                       r"contrib|submodules)/", re.I)


# cudaDeviceProp members CUDA 13 removed (checked against its driver_types.h); their values come from
# cudaDeviceGetAttribute now, and no header can give a struct its member back.
REMOVED_PROP_FIELDS = ("clockRate", "memoryClockRate", "deviceOverlap", "kernelExecTimeoutEnabled", "computeMode",
                       "maxTexture1DLinear", "singleToDoublePrecisionPerfRatio", "cooperativeMultiDeviceLaunch")
_PROP_FIELD = re.compile(r"(?:\.|->)\s*(" + "|".join(REMOVED_PROP_FIELDS) + r")\b")


def removed_fields(texts: dict[str, str]) -> list[str]:
    """Where the sources read a cudaDeviceProp member CUDA 13 removed ("file:line name"), in files
    that use cudaDeviceProp (another struct's `.clockRate` is not one)."""
    found = []
    for name, text in texts.items():
        if "cudaDeviceProp" not in text and "cudaGetDeviceProperties" not in text:
            continue
        clean = strip_comments_and_strings(text)
        found += [f"{name}:{clean.count(chr(10), 0, m.start()) + 1} {m.group(1)}" for m in _PROP_FIELD.finditer(clean)]
    return found


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
