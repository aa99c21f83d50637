"""Problem sizes in the run arguments: which numbers are sizes, named for the counter runs to scale."""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

from runner.init.project import Project


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


def with_size_flag(project: Project, run_args: str, given: bool) -> str:
    """Where the run passes no size and the program takes one from an optional flag whose default
    the code sets (`--arraysize`, `-s`, `--n=`), the run arguments with that flag at its default, so
    that the counter runs scale it (a note says so); the user's own arguments stay as given."""
    if not project.size_flags or size_arguments(run_args, project.usage):
        return run_args
    flags, f = project.size_flags, project.size_flags[0]
    it = "it" if len(flags) == 1 else "them"
    if given:
        project.notes.append(f"{f.file}:{f.line}: the program takes its size from "
                             + " and ".join(f"{x.flag.rstrip('=')} (default {x.default})" for x in flags)
                             + f"; add {it} to --args so that the counter runs can scale {it}")
        return run_args
    project.notes.append(f"{f.file}:{f.line}: the program takes its size from "
                         + " and ".join(f"{x.flag.rstrip('=')} (default {x.default}, {x.variable})" for x in flags)
                         + ": the run passes " + ("it at its default" if len(flags) == 1 else "them at their defaults")
                         + f", so that the counter runs scale {it}")
    return " ".join([run_args, *(x.argument() for x in flags)]).strip()
