"""Runs that start: what a program's `main` demands of its command line before it does any work, and
the arguments the repository itself runs it with.

A program that checks its argument count and prints a usage message (`if (argc != 2) { printf("please
select a ..."); return 1; }`) exits at once when the run command gives too few; the first anyone
would hear of it is a failed profile on the GPU host. `argc_guards` finds such checks in the
sources' text (the argument count only: a program's own parsing decides the rest) and
`repository_runs` finds the command lines the repository's README, scripts and CI give the
program, so that init can propose them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from runner.scan.cuda_source import STRING_LITERAL, strip_comments_and_strings

GUARD_SPAN = 600  # characters after an argc check that its usage message and exit are looked for in
MAIN_SPAN = 20_000  # characters of main's body read for argc checks


@dataclass(frozen=True)
class ArgcGuard:
    """An argument-count check in `main` that stops the program: it needs at least `needs`
    arguments after the program's name."""

    file: str
    line: int
    needs: int
    message: str  # the usage text it prints (empty when it prints none the text shows)

    def describe(self) -> str:
        said = f": {self.message!r}" if self.message else ""
        return (f"{self.file}:{self.line}: main stops unless given {self.needs} argument"
                f"{'s' if self.needs != 1 else ''}{said}")


_MAIN = re.compile(r"\bint\s+main\s*\(\s*int\s+(\w+)\s*,")
# a stop, or a call of the program's usage function, which prints how to run it and exits
_EXIT = re.compile(r"\b(?:return|exit|abort|MPI_Abort|throw)\b|\b\w*[Uu]sage\w*\s*\(")


def _needs(op: str, n: int, reversed_: bool) -> int | None:
    """How many arguments a check `argc OP n` (or `n OP argc`) that stops the program demands."""
    if reversed_:
        op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
    # argc counts the program's name; `argc == 1` stops a run given nothing, `argc == 3` no run it demands
    needed = {"<": n - 1, "<=": n, "!=": n - 1, "==": 1 if n == 1 else None}.get(op)
    return needed if needed is not None and needed > 0 else None


def _statement(code: str, start: int) -> str:
    """The statement an `if (...)` ending at `start` guards: its braced block, or one statement."""
    rest = code[start:start + GUARD_SPAN]
    stripped = rest.lstrip()
    if not stripped.startswith("{"):
        return rest.split(";", 1)[0]
    depth, offset = 0, len(rest) - len(stripped)
    for i, ch in enumerate(stripped):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            return rest[:offset + i + 1]
    return rest


def argc_guards(texts: dict[str, str]) -> list[ArgcGuard]:
    """The argument-count checks in the `main` of these sources (path -> text) that print and stop,
    or, where main has none, in the function main hands argc and argv to (Rodinia's `run(argc, argv)`)."""
    blanks = {path: strip_comments_and_strings(text) for path, text in texts.items()}  # literals blanked in place
    out = []
    for path, text in texts.items():
        m = _MAIN.search(blanks[path])
        if m is None:
            continue
        guard = _first_guard(path, text, blanks[path], m.end(), m.group(1))
        # main handing its arguments on: `run(argc, argv);`
        hands = re.compile(rf"\b([A-Za-z_]\w*)\s*\(\s*{re.escape(m.group(1))}\s*,\s*\w+\s*\)\s*;")
        if guard is None and (call := hands.search(blanks[path], m.end(), m.end() + MAIN_SPAN)):
            guard = _guard_in_function(texts, blanks, call.group(1))
        if guard is not None:
            out.append(guard)
    return out


def _guard_in_function(texts: dict[str, str], blanks: dict[str, str], name: str) -> ArgcGuard | None:
    """The first argument-count check of the function `name` defined in the sources (its first
    parameter an int count, as main's); `blanks`: the texts with comments and literals blanked."""
    definition = re.compile(rf"\b{re.escape(name)}\s*\(\s*int\s+(\w+)\s*,[^;{{}}]*\)\s*\{{")
    for path, text in texts.items():
        if d := definition.search(blanks[path]):
            return _first_guard(path, text, blanks[path], d.end(), d.group(1))
    return None


def _first_guard(path: str, text: str, blank: str, body: int, argc_name: str) -> ArgcGuard | None:
    """The first check of `argc_name` in the body starting at `body` that prints and stops."""
    argc = re.escape(argc_name)
    code = blank[body:body + MAIN_SPAN]
    check = re.compile(rf"\bif\s*\(\s*(?:{argc}\s*(<=|<|!=|==)\s*(\d+)|(\d+)\s*(>=|>|!=|==)\s*{argc})\s*\)")
    for c in check.finditer(code):
        op, n, rev = (c.group(1), c.group(2), False) if c.group(1) else (c.group(4), c.group(3), True)
        needs = _needs(op, int(n), rev)
        guarded = _statement(code, c.end())
        stop = _EXIT.search(guarded)
        if needs is None or stop is None:
            continue
        literal = STRING_LITERAL.search(text, body + c.end(), body + c.end() + stop.start())
        message = literal.group(1).replace("\\n", " ").strip()[:160] if literal else ""
        return ArgcGuard(path, text.count("\n", 0, body + c.start()) + 1, needs, message)
    return None


def too_few(guards: list[ArgcGuard], run_args: str) -> ArgcGuard | None:
    """The check a run with `run_args` (the words after the program) fails, if any."""
    try:
        given = len(shlex.split(run_args))
    except ValueError:
        return None
    return next((g for g in guards if given < g.needs), None)


RUN_FILES = ("README", "README.md", "README.txt", "readme.md", "Readme.md", "run.sh", "run", "test.sh", "bench.sh")
RUN_FOLDERS = (".github/workflows", "scripts")
RUN_FILE_BYTES = 256 << 10


def _run_texts(root: Path) -> list[tuple[str, str]]:
    """The texts where a repository shows how its programs run: READMEs, run scripts, CI workflows."""
    found = [root / name for name in RUN_FILES]
    for folder in RUN_FOLDERS:
        if (root / folder).is_dir():
            found += sorted(p for p in (root / folder).iterdir() if p.suffix in (".sh", ".yml", ".yaml", ""))[:20]
    out = []
    for p in found:
        if p.is_file() and not p.is_symlink() and p.stat().st_size <= RUN_FILE_BYTES:
            out.append((p.relative_to(root).as_posix(), p.read_text(encoding="utf-8", errors="replace")))
    return out


def repository_runs(root: Path, names: list[str]) -> list[tuple[str, int, str]]:
    """(file, line, arguments) of each line in the repository's READMEs, scripts and CI workflows
    that runs one of the program names `names` (`./name args`, `bin/name args`), in file order."""
    wanted = [n for n in dict.fromkeys(names) if n and re.fullmatch(r"[\w.+-]+", n)]
    if not wanted:
        return []
    call = re.compile(r"(?:^|[\s`$(])(?:\.{0,2}/)?(?:[\w.-]+/)*(?:" + "|".join(map(re.escape, wanted))
                      + r")[ \t]+([^\n`|&;<>#]*)")
    out = []
    for path, text in _run_texts(root):
        for m in call.finditer(text):
            args = m.group(1).strip().rstrip("\\").strip()
            if args and not args.startswith(("-h", "--help")):
                out.append((path, text.count("\n", 0, m.start(1)) + 1, args))
    return out


def run_arguments(run: str) -> str:
    """The words after the program in a run command template (`{exe} 4096 {seed}` -> `4096 {seed}`),
    or the whole template when its first word is not the program (a shell line)."""
    try:
        words = shlex.split(run)
    except ValueError:
        return run
    if words and "{exe}" in words[0]:
        return " ".join(words[1:])  # counted, never run: quoting does not matter here
    return run


@dataclass(frozen=True)
class SizeFlag:
    """An optional command-line flag that sets a size the code otherwise defaults (`--arraysize N`)."""

    flag: str  # as the run passes it: `--arraysize` (its value the next word) or `--size=` (joined)
    variable: str
    default: int
    file: str
    line: int

    def argument(self) -> str:
        """The flag with its default, as run arguments."""
        return f"{self.flag}{self.default}" if self.flag.endswith("=") else f"{self.flag} {self.default}"


_TO_INT = r"(?:std::)?(?:atoi|atol|atoll|stoi|stol|stoll|stoul|stoull|strtol|strtoul|strtoll|strtoull)\s*\("
# `if (!strcmp(argv[i], "--arraysize")) ARRAY_SIZE = atoi(argv[++i]);`, `strncmp(argv[i], "--n=", 4) ... argv[i] + 4`
_FLAG_VALUE = re.compile(r'"(?P<flag>--?[A-Za-z][\w-]*=?)"[^;{}]{0,80}?\)\s*\)?\s*\{?\s*'
                         r"(?P<var>[A-Za-z_]\w*)\s*=\s*(?:\(\w+\)\s*)?" + _TO_INT + r"\s*argv\s*\[")
# a parser that writes through a pointer: `"--size") ... || !parseInt(argv[i], &size)`, `sscanf(argv[++i], "%d", &n)`
_FLAG_POINTER = re.compile(r'"(?P<flag>--?[A-Za-z][\w-]*=?)"[^;]{0,200}?\b\w+\s*\(\s*argv\s*\[[^\]]*\]\s*,\s*'
                           r'(?:"[^"]*"\s*,\s*)?&\s*(?P<var>[A-Za-z_]\w*)\s*\)')
# getopt: `case 's': n = atoi(optarg);`
_GETOPT_VALUE = re.compile(r"case\s*'(?P<letter>[A-Za-z])'\s*:\s*\{?\s*(?P<var>[A-Za-z_]\w*)\s*=\s*(?:\(\w+\)\s*)?"
                           + _TO_INT + r"\s*optarg")
# a helper given argv, the flag and its default: `const int nx = get_argval<int>(argv, argv + argc, "-nx", 16384);`
_FLAG_DEFAULT = re.compile(r"(?P<var>[A-Za-z_]\w*)\s*=\s*[A-Za-z_][\w:]*\s*(?:<[^<>;]*>)?\s*\([^;]*?\bargv\b[^;]*?"
                           r'"(?P<flag>--?[A-Za-z][\w-]*=?)"\s*,\s*(?P<default>\d+)\s*\)')
SIZE_NAME = re.compile(r"(?i)size|len|elements|^n$|^num|_n$|^n_|count|dim|width|height|rows|cols|^[nmk]$|^n[xyz]$")
NOT_SIZE_NAME = re.compile(r"(?i)seed|dev|gpu|iter|repeat|rep|trial|epoch|warm|loop|verbose|thread|block|step|tpb|"
                           r"times|runs")


def size_flags(texts: dict[str, str], minimum: int = 16) -> list[SizeFlag]:
    """The optional flags the sources parse into a size variable whose default the code sets
    (`int ARRAY_SIZE = 33554432;`), named like a size and at least `minimum`."""
    out: list[SizeFlag] = []
    for path, text in texts.items():
        found = [(m.group("flag"), m.group("var"), m.start(), m.groupdict().get("default"))
                 for pattern in (_FLAG_VALUE, _FLAG_POINTER, _FLAG_DEFAULT) for m in pattern.finditer(text)]
        found.sort(key=lambda f: f[2])
        found += [(f"-{m.group('letter')}", m.group("var"), m.start(), None) for m in _GETOPT_VALUE.finditer(text)]
        for flag, var, at, default in found:
            named = f"{flag.strip('-=')} {var}"
            if not SIZE_NAME.search(var) and not SIZE_NAME.search(flag.strip("-=")) or NOT_SIZE_NAME.search(named):
                continue
            if default is None and (assigned := re.search(rf"\b{re.escape(var)}\s*=\s*(\d+)\s*[;,)]", text)):
                default = assigned.group(1)  # the code's own default: `int ARRAY_SIZE = 33554432;`
            if default is None or int(default) < minimum or any(f.flag == flag for f in out):
                continue
            out.append(SizeFlag(flag, var, int(default), path, text.count("\n", 0, at) + 1))
    return out


def one_problem(flags: list[SizeFlag], texts: dict[str, str]) -> list[SizeFlag]:
    """Of the size flags (size_flags), the first and those whose variable the sources multiply with
    its variable (`nx * ny`, `(size_t)ny * nx`): the dimensions of one problem, which the counter runs
    scale together. Flags of another mode's size (`--arraysize` beside `--n=`) are left out."""
    if not flags:
        return []
    first = flags[0]
    return [first, *(f for f in flags[1:] if _multiplied(first.variable, f.variable, texts))]


def _multiplied(a: str, b: str, texts: dict[str, str]) -> bool:
    cast = r"(?:\(\s*[\w ]+\s*\)\s*)?"
    x, y = re.escape(a), re.escape(b)
    pair = re.compile(rf"\b{x}\s*\*\s*{cast}{y}\b|\b{y}\s*\*\s*{cast}{x}\b")
    return any(pair.search(t) for t in texts.values())
