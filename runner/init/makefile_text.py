"""A Makefile's text as init reads it where make itself is not asked: variables, rules, the target
that makes the program and the binary it writes.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from pathlib import Path

from runner.init.make_db import NOT_PROGRAM

_ASSIGNMENT = re.compile(r"^[ \t]*(?:override[ \t]+|export[ \t]+)?([A-Za-z_]\w*)[ \t]*"
                         r"(:{1,3}=|\?=|\+=|=)[ \t]*(.*?)[ \t]*$", re.M)


REFERENCE = re.compile(r"\$(?:\(([A-Za-z_]\w*)\)|\{([A-Za-z_]\w*)\})")


_RULE = re.compile(r"^([^\s:#=][^:#=\n]*?)[ \t]*:(?![:=])", re.M)


NOT_A_BINARY = {"all", "clean", "install", "run", "test", "check"}


INCLUDE_LINE = re.compile(r"^[ \t]*-?(?:include|sinclude)[ \t]+(.+?)[ \t]*$", re.M)


def read_makefile(path: Path, depth: int = 0) -> str:
    """A Makefile's text with the files its `include` lines name (variables expanded, relative to
    its folder, three levels deep) put in their place: shared rules often live there (a suite's
    common.mk)."""
    text = path.read_text(errors="replace")
    if depth >= 3:
        return text

    def inline(m: re.Match) -> str:
        variables = make_variables(text[:m.start()])
        parts = []
        for name in expand(m.group(1), variables).split():
            included = path.parent / name
            if "$" not in name and included.is_file():
                parts.append(read_makefile(included, depth + 1))
        return "\n".join(parts) if parts else m.group(0)

    return INCLUDE_LINE.sub(inline, text)


def make_variables(text: str) -> dict[str, str]:
    """A Makefile's variables as its assignments leave them, conditionals ignored (+= appends)."""
    found: dict[str, str] = {}
    for m in _ASSIGNMENT.finditer(text):
        name, op, value = m.groups()
        found[name] = f"{found.get(name, '')} {value}".strip() if op == "+=" else value
    return found


def expand(value: str, variables: dict[str, str], target: str = "") -> str:
    """A Makefile value with simple variable references and $@ replaced (unknown ones kept)."""
    for _ in range(5):  # references to references, a few levels deep
        new = REFERENCE.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), value)
        if new == value:
            break
        value = new
    return value.replace("$@", target)


def parse_rules(text: str, variables: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each explicit rule's first target (variables expanded) -> its recipe lines, and -> its
    prerequisites (expanded), in file order."""
    rules: dict[str, list[str]] = {}
    needs: dict[str, list[str]] = {}
    heads = list(_RULE.finditer(text))
    for i, m in enumerate(heads):
        name = expand(m.group(1).split()[0], variables) if m.group(1).split() else ""
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
        needs[name] = needs.get(name, []) + ([] if "=" in head else expand(head, variables).split())
    return rules, needs


def _rules(text: str, variables: dict[str, str]) -> dict[str, list[str]]:
    """Each explicit rule's first target (variables expanded) -> its recipe lines, in file order."""
    return parse_rules(text, variables)[0]


_SUBMAKE = re.compile(r"cd\s+([^\s;&]+)\s*(?:;|&&)\s*(?:\$\(MAKE\)|make)(?![\w-])"
                      r"|(?:\$\(MAKE\)|make)\s+-C\s*([^\s;&]+)")


_C_SOURCE = (".c", ".cc", ".cpp", ".cxx")


def first_target(rules: dict[str, list[str]], needs: dict[str, list[str]] | None = None,
                  variables: dict[str, str] | None = None) -> str | None:
    """The target make would build first, leaving out phony-looking ones (all, clean, run, ...) but
    following what a first `all` needs; but
    when that one only compiles C or C++ sources (a CPU build beside the CUDA one; known from the
    prerequisites `needs`), the first whose prerequisites name a .cu file or whose recipe runs nvcc;
    `all` itself when it is the only rule with a recipe."""
    real = [t for t in rules if t and not t.startswith((".", "%", "$")) and t not in NOT_A_BINARY]
    if not real:
        return "all" if rules.get("all") else None
    if needs is None:
        return real[0]
    real = _in_goal_order(rules, needs, real)
    variables = variables or {}

    def runs_nvcc(t: str) -> bool:
        return any("nvcc" in expand(line, variables, t) for line in rules.get(t, []))

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
    if goal in NOT_A_BINARY:
        made = [t for t in needs.get(goal, []) if t in real]
        real = made + [t for t in real if t not in made]
    return [t for t in real if not _makes_folders_only(rules[t])] + [t for t in real if _makes_folders_only(rules[t])]


def folder_goals(rules: dict[str, list[str]], needs: dict[str, list[str]],
                 variables: dict[str, str] | None = None) -> list[str]:
    """The folders a phony default goal makes before the program (`all: builddir main`, or a recipe
    `$(MAKE) dirs`): the program's recipe writes there, so a build of the program alone makes them
    first."""
    goal = _default_goal(rules)
    if goal not in NOT_A_BINARY:
        return []
    return [t for t in _made_by(rules, needs, variables or {}, goal) if _makes_folders_only(rules.get(t, []))]


# `mkdir -p obj`, or the shell's `if [ ! -d bin ] ; then mkdir bin ; fi`
_MKDIR = re.compile(r"\s*[@-]*\s*(?:mkdir\b|if\s+\[\s*!\s*-d\s[^;]*\]\s*;\s*then\s+mkdir\b[^;]*;\s*fi\s*$)")


def _makes_folders_only(recipe: list[str]) -> bool:
    """Whether a rule's recipe only creates folders (mkdir), so its target is no program."""
    return bool(recipe) and all(_MKDIR.match(line) for line in recipe)


def makefile_in(folder: Path) -> Path | None:
    return next((folder / n for n in ("GNUmakefile", "makefile", "Makefile") if (folder / n).is_file()), None)


_MAKE_AGAIN = re.compile(r"(?:\$\(MAKE\)|\bmake)((?:\s+[\w./-]+)+)")


def _made_by(rules: dict[str, list[str]], needs: dict[str, list[str]], variables: dict[str, str],
             target: str) -> list[str]:
    """The targets of this Makefile that making `target` makes: its prerequisites, and the ones its
    recipe makes again (`$(MAKE) all`)."""
    again = [w for line in rules.get(target, []) for m in _MAKE_AGAIN.finditer(expand(line, variables))
             for w in m.group(1).split() if not w.startswith("-") and "=" not in w]
    return [t for t in [*needs.get(target, []), *again] if t in rules and t != target]


def binary_of(rules: dict[str, list[str]], variables: dict[str, str], target: str, folder: Path,
            depth: int = 0, needs: dict[str, list[str]] | None = None) -> str | None:
    """The file `target`'s recipe writes with -o, relative to the Makefile's folder; else, with
    `needs`, the first one a target it makes writes (`default: release`, `release: ; $(MAKE) all`,
    `all: bin/app`), four steps deep; through a recursive make (`cd sub; make`, `make -C sub`) into
    a subfolder's Makefile, two levels deep."""
    recipe = [expand(line, variables, target) for line in rules.get(target, [])]
    found = next((o for line in recipe for o in re.findall(r"(?:^|\s)-o\s*(\S+)", line)
                  if "$" not in o and not o.endswith(NOT_PROGRAM)), None)  # an object is never the binary
    if found is None and needs is not None:
        todo, seen = [(t, 1) for t in _made_by(rules, needs, variables, target)], {target}
        while todo and found is None:
            t, steps = todo.pop(0)
            if t in seen or steps > 4:
                continue
            seen.add(t)
            found = binary_of(rules, variables, t, folder, depth=2)  # this Makefile only
            todo += [(u, steps + 1) for u in _made_by(rules, needs, variables, t)]
    if found or depth >= 2:
        return found
    for m in (m for line in recipe for m in _SUBMAKE.finditer(line)):
        sub = m.group(1) or m.group(2)
        if (mk := makefile_in(folder / sub)) is None:
            continue
        inner = read_makefile(mk)
        inner_vars = make_variables(inner)
        inner_rules = _rules(inner, inner_vars)
        first = first_target(inner_rules)
        if first and (inner_binary := binary_of(inner_rules, inner_vars, first, folder / sub, depth + 1)):
            return f"{sub}/{inner_binary}"
    return None


_SHELL_OPERATORS = re.compile(r"[|;&<>`$]")


def run_target_args(rules: dict[str, list[str]], variables: dict[str, str], binary: str) -> str | None:
    """The arguments a Makefile's `run` target passes to `binary` (its recipe's first line that runs
    it, variables expanded, and those it never sets empty, as make leaves them: a `$(LAUNCHER)`
    prefix); None when there is no such line or it does more than run the binary (pipes,
    redirections, command lists)."""
    for line in rules.get("run", []):
        expanded = REFERENCE.sub("", expand(line, variables, "run")).strip()
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


# A Makefile that stops unless a variable is set (Chai's `ifndef CHAI_CUDA_LIB` / `$(error ...)`,
# or `ifeq ($(X),)`), with comment lines between allowed.
_MAKE_REQUIRED = re.compile(r"^[ \t]*(?:ifndef[ \t]+(\w+)|ifeq[ \t]*\([ \t]*\$[({](\w+)[)}][ \t]*,[ \t]*\))[ \t]*\n"
                            r"(?:[ \t]*(?:#[^\n]*)?\n){0,8}[ \t]*\$\(error[ \t]+([^\n]*?)\)?[ \t]*$", re.M)


def make_required(text: str) -> list[tuple[str, int, str]]:
    """The variables a Makefile stops without (`ifndef X` or `ifeq ($(X),)` straight followed by
    `$(error ...)`) and does not set itself: name, line and message."""
    found = []
    for m in _MAKE_REQUIRED.finditer(text):
        name = m.group(1) or m.group(2)
        if name not in make_variables(text[:m.start()]):
            found.append((name, text.count("\n", 0, m.start()) + 1, m.group(3).strip()[:120]))
    return found
