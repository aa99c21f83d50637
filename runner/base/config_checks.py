"""Checks of a configuration that its schema cannot make: keys that must agree with each other
(semantic_problems), something to profile (input_problems), and the files and folders it names
(path_problems, and paths_outside for a repository's config). Each problem names its key path and
the fix; `optimas check-config` runs them, and each command the ones it needs before any work."""

from __future__ import annotations

import os
import re
from pathlib import Path

from runner.base.backends import NETWORK_BACKENDS
from runner.base.config import Config, LoadedConfig, copied_parts
from runner.base.processes import placeholders, product_placeholder
from runner.scan.size_constants import definition_problem, workspace_texts

# What command templates may hold (see AppConfig); output paths are filled the same way.
PLACEHOLDERS = ("exe", "arch", "lineinfo", "config", "seed", "scale", "out")


def _template_problems(key: str, template: str, configurations: list[str],
                       values: dict[str, dict[str, object]]) -> list[str]:
    """Unknown placeholders of one template: the built-in ones, each configuration's own `values`
    (app.configuration_values: every one of `configurations` must give each one), and products like
    {n*scale} are known."""
    try:
        names = placeholders(template)
    except ValueError as e:
        return [f"{key}: {e} (write {{{{ and }}}} for literal braces)"]
    own = sorted({k for v in values.values() for k in v})
    known = ", ".join("{" + n + "}" for n in [*PLACEHOLDERS, *own])
    out = []
    for n in names:
        factors = product_placeholder(n) or (n,)
        for f in factors:
            if f in PLACEHOLDERS:
                continue
            lacking = [c for c in configurations if f not in values.get(c, {})]
            if f not in own:
                out.append(f"{key}: unknown placeholder {{{n}}}; known: {known}")
            elif lacking:
                out.append(f"{key}: placeholder {{{n}}} has no value in configuration(s) {', '.join(lacking)}")
    return out


def _regex_problems(key: str, pattern: str | None, number_example: str | None = None,
                    unit_group: bool = False) -> list[str]:
    """A regular expression that does not compile; with `number_example`, one that does not hold
    exactly one group around a number (besides a group named `unit`, where `unit_group`)."""
    if pattern is None:
        return []
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        return [f"{key}: not a valid regular expression ({e})"]
    groups = compiled.groups - (1 if unit_group and "unit" in compiled.groupindex else 0)
    if number_example and groups != 1:
        return [f"{key}: needs exactly one group around the number, e.g. {number_example}; it has {groups}"]
    return []


def input_problems(config: Config, recorded: bool = False) -> list[str]:
    """Where the profiles come from: a program to build and run, or recorded ones (in the `profiles`
    section, or `recorded` on the command line)."""
    app = config.app
    if recorded or config.profiles.all_paths() or (app.build and app.run):
        return []
    missing = " and ".join(f"app.{k}" for k in ("build", "run") if not getattr(app, k))
    return [f"{missing}: not set, and the `profiles` section names no recorded profile either, so there is "
            "nothing to profile; give the commands that build and run the program (`optimas init` writes them), "
            "or recorded profiles (the `profiles` section, or --report/--raw on the command line)"]


def semantic_problems(config: Config) -> list[str]:
    """What the schema alone cannot see: keys that must agree with each other. Each problem names
    its key path and the fix."""
    out: list[str] = []
    app, ev, llm = config.app, config.evaluation, config.llm
    given = app.configurations, app.configuration_values
    if app.build:
        # {config} or a configuration's values: one build per configuration (compile-time sizes)
        out += _template_problems("app.build", app.build, *given)
    for key in ("run", "profile_run", "time_run"):
        if getattr(app, key):
            out += _template_problems(f"app.{key}", getattr(app, key), *given)
    for i, o in enumerate(app.outputs):
        out += _template_problems(f"app.outputs.{i}.path", o.path, *given)
    extra = sorted(set(app.configuration_values) - set(app.configurations))
    if extra:
        out.append(f"app.configuration_values: {', '.join(extra)} not in app.configurations")
    clash = sorted({k for v in app.configuration_values.values() for k in v if k in PLACEHOLDERS})
    if clash:
        out.append(f"app.configurations: {', '.join(clash)} is a built-in placeholder; name the value otherwise")
    dupes = sorted({c for c in app.configurations if app.configurations.count(c) > 1})
    if dupes:
        out.append(f"app.configurations: {', '.join(dupes)} listed more than once")
    if app.profile_configuration and app.profile_configuration not in app.configurations:
        listed = ", ".join(app.configurations) or "none"
        out.append(f"app.profile_configuration: {app.profile_configuration!r} is not one of app.configurations "
                   f"({listed}); add it there or pick one of them")
    out += _regex_problems("app.kernel_time_regex", app.kernel_time_regex,
                           "'kernel_ms=([0-9.]+)' or 'time: ([0-9.]+) ?(?P<unit>ms|us|s)' (a group named `unit` "
                           "may capture the unit)", unit_group=True)
    out += _regex_problems("app.stdout.pass_pattern", app.stdout.pass_pattern)
    out += _regex_problems("app.stdout.fail_pattern", app.stdout.fail_pattern)
    out += _regex_problems("app.stdout.values", app.stdout.values, "'checksum = ([-0-9.eE+]+)'")
    if ev.timer == "app" and not app.kernel_time_regex:
        out.append("evaluation.timer: 'app' reads the time the program prints: set app.kernel_time_regex too, or "
                   "use 'tracer'")
    if ev.max_timed_runs < ev.timed_runs:
        out.append(f"evaluation.max_timed_runs: {ev.max_timed_runs} is below evaluation.timed_runs "
                   f"({ev.timed_runs}); it is the most pairs timed, so at least as many")
    if llm.backend in NETWORK_BACKENDS and not llm.model:
        out.append(f"llm.model: the {llm.backend} backend needs a model name (e.g. the one your server serves)")
    if llm.backend == "replay" and not llm.replay_dir:
        out.append("llm.replay_dir: the replay backend reads recorded answers from this folder; set it")
    return out


def path_problems(lc: LoadedConfig) -> list[str]:
    """Files and folders the config names that are not there (checked by check-config, and before a
    command that builds, profiles or prompts starts any work)."""
    out: list[str] = []
    app = lc.config.app
    workdir = lc.resolve(app.workdir)
    if not workdir.is_dir():
        out.append(f"app.workdir: folder {workdir} does not exist")
    if app.workspace and not lc.resolve(app.workspace).is_dir():
        out.append(f"app.workspace: folder {lc.resolve(app.workspace)} does not exist")
    if workdir.is_dir():
        out += [f"app.sources: {workdir / s} does not exist" for s in app.sources if not (workdir / s).is_file()]
    if lc.config.llm.backend == "replay" and lc.config.llm.replay_dir and not lc.resolve(
            lc.config.llm.replay_dir).is_dir():
        out.append(f"llm.replay_dir: folder {lc.resolve(lc.config.llm.replay_dir)} does not exist")
    md = lc.config.analysis.counters.metric_dictionary
    if md and not lc.resolve(md).is_file():
        out.append(f"analysis.counters.metric_dictionary: file {lc.resolve(md)} does not exist")
    space = lc.resolve(app.workspace) if app.workspace else workdir
    for part in app.workspace_paths:
        where = space / part
        if not where.exists():
            out.append(f"app.workspace_paths: {part!r}: {where} does not exist")
        elif not where.resolve().is_relative_to(space.resolve()):
            out.append(f"app.workspace_paths: {part!r} leads to {where.resolve()}, outside app.workspace "
                       f"{space.resolve()}")
    if app.size_constants and space.is_dir() and workdir.is_dir():
        texts = workspace_texts(space, workdir, copied_parts(space, workdir, app.workspace_paths))
        out += [p for name in app.size_constants if (p := definition_problem(name, texts, sources=app.sources))]
    return out


def named_paths(lc: LoadedConfig) -> list[tuple[str, str, Path]]:
    """Every file and folder the config names that Optimas itself reads or copies: the setting, the
    value as written and the path as the pipeline resolves it (without following links)."""
    config, app = lc.config, lc.config.app
    workdir = lc.resolve(app.workdir)
    out: list[tuple[str, str, Path]] = [("app.workdir", app.workdir, workdir),
                                        ("runs_dir", config.runs_dir, lc.resolve(config.runs_dir))]
    if app.workspace:
        out.append(("app.workspace", app.workspace, lc.resolve(app.workspace)))
    space = lc.resolve(app.workspace) if app.workspace else workdir
    out += [("app.workspace_paths", p, space / p) for p in app.workspace_paths]
    out += [("app.sources", s, workdir / Path(s).expanduser()) for s in app.sources]
    # {out} is a file the pipeline names in its run folder (under runs_dir): what follows it must
    # stay there, as the rest of a path must stay where it is written
    out += [("app.outputs", o.path, Path(o.path.replace("{out}", str(lc.resolve(config.runs_dir) / "out"), 1))
             if o.path.startswith("{out}") else workdir / Path(o.path).expanduser()) for o in app.outputs]
    out += [("profiles", f, lc.resolve(f)) for f in config.profiles.all_paths()]
    md = config.analysis.counters.metric_dictionary
    if md:
        out.append(("analysis.counters.metric_dictionary", md, lc.resolve(md)))
    if config.llm.replay_dir:
        out.append(("llm.replay_dir", config.llm.replay_dir, lc.resolve(config.llm.replay_dir)))
    return [(setting, written, Path(os.path.normpath(os.path.abspath(path)))) for setting, written, path in out]


def paths_outside(lc: LoadedConfig, root: Path) -> list[str]:
    """The settings naming a file or folder outside `root` (an absolute path, `~`, or `..` past
    it), each with its value as written: where the config is not the reader's own (a
    repository's, read by the App's worker), what it names must be the repository's."""
    top = os.path.normpath(os.path.abspath(root))
    return [f"{setting}: {written!r} leads outside the repository" for setting, written, path in named_paths(lc)
            if not (str(path) == top or str(path).startswith(top.rstrip(os.sep) + os.sep))]
