"""The `optimas` command line.

    optimas run --config config.yml         the pipeline, as far as this version goes
    optimas profile --config app.yml        build and profile the app on this machine's GPU
    optimas analyze --config config.yml     profiles -> diagnostics.json + diagnostics.md
    optimas analyze --config app.yml --run runs/<id>   analyse what `optimas profile` collected
    optimas prompt --config config.yml      the prompt the model would get
    optimas propose --config config.yml     ask the model, parse, guard and compile a candidate
    optimas evaluate --config app.yml --run runs/<id>   validate, time and score that candidate
    optimas corpus export --config config.yml --format parquet --out corpus.parquet
    optimas ablate --config config.yml      every diagnostic configuration, as a table and a plot
    optimas check-config --config config.yml

Exit codes: 0 success, 1 other failures, 2 bad input (config or profile files), 3 the inputs hold
too little to analyse, 4 profiling could not run (tools, GPU, permissions, the app failed),
5 no usable candidate came back, 6 the model could not be asked, 7 the evaluation could not run.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Sequence

from runner.analysis.stage import has_profiles, profile_inputs
from runner.base.config import (
    BACKENDS,
    DIAGNOSTICS,
    PROFILE_ROLES,
    REPOSITORY_CONFIG,
    LoadedConfig,
    load_config,
)
from runner.base.config_checks import input_problems, path_problems, semantic_problems
from runner.base.context import RunContext
from runner.base.errors import ConfigError, OptimasError, OptionError
from runner.base.gpu import MissingForGpuRun, can_run_here, require_gpu_run, target_arch
from runner.base.progress import progress_for

RUNS_DIR_HELP = "where run directories go (default: the config's runs_dir)"
CONFIGURATION_HELP = "configuration to profile (default: app.profile_configuration)"


class NoCandidate(OptimasError):
    exit_code = 5


class _StderrHandler(logging.Handler):
    """Progress records on whatever sys.stderr is when they are emitted."""

    def emit(self, record: logging.LogRecord) -> None:
        print(self.format(record), file=sys.stderr, flush=True)


def _configure_logging() -> None:
    """The stages' progress (loggers `optimas.*`) on stderr, once per process."""
    logger = logging.getLogger("optimas")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("[optimas %(asctime)s] %(message)s", datefmt="%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


_progress = progress_for("cli")


PROGRAM_HELP = "the program, where the config lists several (its `programs`); a config of one program needs none"


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, type=Path, help="path to config.yml")
    p.add_argument("--program", default=None, metavar="NAME", help=PROGRAM_HELP)
    p.add_argument("--runs-dir", type=Path, default=None, help=RUNS_DIR_HELP)


def _config(args: argparse.Namespace) -> LoadedConfig:
    """The config of the one program a command works on (--program where the config lists several)."""
    return load_config(args.config).for_program(getattr(args, "program", None))


def _add_inputs(p: argparse.ArgumentParser, run_help: str) -> None:
    g = p.add_argument_group("profiles (override the config's `profiles` section)")
    g.add_argument("--report", action="append", type=Path, default=None, metavar="FILE.ncu-rep")
    g.add_argument("--timing", action="append", type=Path, default=None, metavar="CSV",
                   help="raw export of a timing pass over every launch (for hot-kernel selection)")
    g.add_argument("--raw", action="append", type=Path, default=None, metavar="CSV", help="--page raw export")
    g.add_argument("--details", action="append", type=Path, default=None, metavar="CSV",
                   help="--page details export")
    g.add_argument("--source", action="append", type=Path, default=None, metavar="CSV",
                   help="--page source --print-source cuda,sass export")
    g.add_argument("--counters", action="append", type=Path, default=None, metavar="FILE",
                   help="raw export or .ncu-rep of N profiling runs, for counter selection")
    p.add_argument("--run", type=Path, default=None, metavar="RUN_DIR", help=run_help)
    p.add_argument("--configuration", default=None, help=CONFIGURATION_HELP)


def _add_diagnostics(p: argparse.ArgumentParser) -> None:
    p.add_argument("--diagnostics", choices=DIAGNOSTICS, default=None,
                   help="evidence shown to the model (default: evaluation.diagnostics)")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="model backend (default: llm.backend)")


def _load(args: argparse.Namespace) -> LoadedConfig:
    """The config of a command that builds, profiles or prompts, with the command line's --backend
    applied, checked whole (the files it names included) before any work starts."""
    lc = _config(args)
    backend = getattr(args, "backend", None)
    if backend:
        lc = lc.with_llm(backend=backend)
    _refuse(lc.path, (semantic_problems(lc.config) if backend else []) + path_problems(lc))
    return lc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="optimas", description=__doc__.split("\n\n")[0])
    from runner import __version__
    parser.add_argument("--version", action="version", version=f"optimas {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run the pipeline on an application's config")
    _add_common(p)
    _add_inputs(p, "continue a run made by `optimas profile` or `optimas analyze`")
    _add_diagnostics(p)
    p = sub.add_parser("profile", help="build the app and collect profiles on this machine's GPU")
    _add_common(p)
    p.add_argument("--configuration", default=None, help=CONFIGURATION_HELP)
    p = sub.add_parser("analyze", help="distil profiles into cited evidence (diagnostics.json/.md)")
    _add_common(p)
    _add_inputs(p, "analyse the profiles an `optimas profile` run collected, into that run")
    p.add_argument("--json", action="store_true", help="print diagnostics.json instead of the summary")
    p = sub.add_parser("prompt", help="build the prompt for the hot kernels and print it")
    _add_common(p)
    _add_inputs(p, "use the evidence of this run (analysing it first if needed)")
    _add_diagnostics(p)
    p = sub.add_parser("propose", help="ask the model; parse, guard and compile its candidate")
    _add_common(p)
    _add_inputs(p, "use the evidence of this run (analysing it first if needed)")
    _add_diagnostics(p)
    p = sub.add_parser("evaluate", help="build, validate, time and score the accepted candidate of a run")
    _add_common(p)
    p.add_argument("--run", type=Path, required=True, metavar="RUN_DIR", help="a run with an accepted candidate")
    p = sub.add_parser("corpus", help="the corpus of evaluated candidates")
    csub = p.add_subparsers(dest="corpus_command", required=True)
    pe = csub.add_parser("export", help="write the corpus as JSONL or Parquet")
    _add_common(pe)
    pe.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    pe.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("ablate", help="every diagnostic configuration (and code only) for one app and backend")
    _add_common(p)
    _add_inputs(p, "use the evidence of this run (analysing it first if needed)")
    p.add_argument("--only", nargs="+", choices=DIAGNOSTICS, default=None, help="a subset of configurations")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="model backend (default: llm.backend)")
    p = sub.add_parser("demo", help="the pipeline on the bundled H200 profiles of a small program, offline "
                       "(no GPU, no model, no network)")
    p.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where the run goes (default: ./runs)")
    p.add_argument("--evaluated", action="store_true", help="only show the evaluated run shipped with Optimas "
                   "(recorded on a GPU from profile to verdict) and copy it into the runs folder")
    p = sub.add_parser("dashboard", help="serve the runs of a runs folder as web pages (read-only, local)")
    p.add_argument("--runs-dir", type=Path, default=Path("runs"), help="the runs folder (default: ./runs)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: this machine only)")
    p.add_argument("--port", type=int, default=8050)
    p = sub.add_parser("check-config", help="validate a config file (each program it lists) and exit")
    p.add_argument("--config", required=True, type=Path, help="path to config.yml")
    p.add_argument("--program", default=None, metavar="NAME", help="check this program only, where the config "
                   "lists several (default: every one)")
    p.add_argument("--build", action="store_true", help="also build each program as Optimas does (a copy of "
                   "app.workspace, through its nvcc shim) and say what ptxas reports; exit 3 if any fails")
    p = sub.add_parser("init", help="write a first optimas.yml for a CUDA project (no questions asked)")
    p.add_argument("dir", nargs="?", type=Path, default=Path("."), help="the project's folder (default: here)")
    p.add_argument("--name", default=None, help="the app's name (default: the folder's)")
    p.add_argument("--program", default=None, metavar="NAME", help="write only this program where the build makes "
                   "several (a make target or what it links, a CMake target; default: all, under programs)")
    p.add_argument("--args", default=None, metavar="ARGS", help="arguments of the program's run command (default: "
                   "the ones the Makefile's run target, or where main demands some, the README, scripts or CI give)")
    p.add_argument("--build", default=None, metavar="CMD", help="the build command template, instead of the one "
                   "found (placeholders {exe} {arch} {lineinfo})")
    p.add_argument("--output", type=Path, default=None, help="where to write it (default: DIR/optimas.yml)")
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.add_argument("--probe", action="store_true", help="then, on this machine's GPU, build each program as "
                   "Optimas does and run it once: its exit status, time and last output lines; exit 3 if any fails")
    return parser


def _given_profiles(args: argparse.Namespace) -> dict[str, list[Path] | None]:
    """The profiles the command line gives, by role (profile_inputs takes them over the config's)."""
    return {k: getattr(args, k, None) for k in PROFILE_ROLES}


def _collect(lc: LoadedConfig, run, configuration: str | None = None) -> dict[str, list[Path]]:
    from runner.profiling.agent import ProfilingAgent

    try:
        return ProfilingAgent(RunContext(lc, run, configuration=configuration)).collect()
    except OptimasError as e:
        run.stage_failed("profile", str(e))
        raise


def _runs_dir(args: argparse.Namespace, lc: LoadedConfig) -> Path:
    """Where this command's run folders go (--runs-dir, else the config's runs_dir); OptionError
    (exit 2) naming where it came from when it cannot be a folder. Nothing is made here: a command
    that stops before its run exists leaves no empty folder behind."""
    given = getattr(args, "runs_dir", None)
    path = given or lc.resolve(lc.config.runs_dir)
    where = f"--runs-dir {given}" if given else f"runs_dir ({path}, from {lc.path})"
    if path.exists() and not path.is_dir():
        raise OptionError(f"{where}: not a folder; give the folder that holds (or will hold) the run folders")
    parent = next(p for p in (path, *path.parents) if p.exists())  # what the folder would be made in
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise OptionError(f"{where}: cannot make the folder ({parent} is not a folder this user may write in)")
    return path


def _refuse(config: Path, problems: list[str]) -> None:
    """ConfigError naming the config file and each of its `problems`, when there is any: raised
    before any run folder is made (a config that gives nothing to profile, files it names missing)."""
    if problems:
        raise ConfigError(config, problems)


def _evidence(args: argparse.Namespace, lc: LoadedConfig, allow_profiling: bool):
    """(run, diagnostics): from --run (analysing its profiles if not done yet), from recorded
    profiles (a new run), or, with `allow_profiling`, by profiling the app here (a new run)."""
    from runner.analysis.evidence import Diagnostics
    from runner.analysis.stage import analyze, write_analysis
    from runner.base.runstore import create_run, open_run

    runs_dir = _runs_dir(args, lc)
    if getattr(args, "run", None):
        run = open_run(args.run)
        done = run.path / "analysis" / "diagnostics.json"
        if done.is_file():
            return run, Diagnostics.model_validate_json(done.read_text())
        stage = run.manifest.get("stages", {}).get("profile", {})
        if "inputs" not in stage:
            raise OptimasError(f"{args.run}: this run has neither evidence nor a completed profile stage")
        inputs = {role: [run.path / p for p in paths] for role, paths in stage["inputs"].items()}
        diag = analyze(lc, inputs)
        write_analysis(run, lc, inputs, diag)
        return run, diag
    inputs = profile_inputs(lc, _given_profiles(args))
    if has_profiles(inputs):
        diag = analyze(lc, inputs)  # before the run exists: bad input writes nothing
        run = create_run(runs_dir)
        write_analysis(run, lc, inputs, diag)
        return run, diag
    if not allow_profiling:
        raise ConfigError(args.config, [
            "profiles: no profiles to analyse; set profiles.reports or profiles.raw, pass --report/--raw, or "
            "analyse a profiling run with --run DIR"])
    _refuse(lc.path, input_problems(lc.config))
    run = create_run(runs_dir)
    _progress(f"run {run.id} in {run.path}")
    inputs = _collect(lc, run, getattr(args, "configuration", None))
    diag = analyze(lc, inputs)
    write_analysis(run, lc, inputs, diag)
    return run, diag


def _print_analysis(run, as_json: bool = False) -> None:
    json_path, md_path = run.path / "analysis" / "diagnostics.json", run.path / "analysis" / "diagnostics.md"
    if as_json:
        print(json_path.read_text(), end="")
    else:
        print(md_path.read_text(), end="")
        print(f"\nEvidence: {json_path}\nPrompt text: {md_path} ({md_path.stat().st_size} bytes)")


def cmd_profile(args: argparse.Namespace) -> int:
    from runner.base.runstore import create_run

    lc = _load(args)
    _refuse(lc.path, input_problems(lc.config))
    require_gpu_run(lc)
    run = create_run(_runs_dir(args, lc))
    _progress(f"run {run.id} in {run.path}")
    _collect(lc, run, args.configuration)
    print(run.path)
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    lc = _config(args)
    if args.run and (args.run / "analysis").exists():
        raise OptimasError(f"{args.run}: already analysed; a run's results are never overwritten")
    run, _ = _evidence(args, lc, allow_profiling=False)
    _progress(f"run {run.id}: analysis written to {run.path / 'analysis'}")
    _print_analysis(run, args.json)
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from runner.proposal.prompt import PromptSpec, render_prompt
    from runner.proposal.stage import check_sources
    from runner.toolchain.builder import Builder

    lc = _load(args)
    run, diag = _evidence(args, lc, allow_profiling=False)
    ctx = RunContext(lc, run)  # the code, architecture and build cache the proposal stage would use
    files = ctx.code
    check_sources(lc, diag, files)
    base = None
    if shutil.which(lc.config.profiling.nvcc) and lc.config.app.build:
        # the compiler feedback (K*) and macros of the original, as the proposal stage gets them: a build in a copy
        base = Builder(lc, ctx.arch, ctx.build_cache).compile(files, run.stage_dir("prompt") / "original-build.log",
                                                              macros=True)
    diagnostics = args.diagnostics or lc.config.evaluation.diagnostics
    prompt = render_prompt(PromptSpec.of(lc.config, diag, files, diagnostics, base))
    run.write_text("prompt", "system.md", prompt.system)
    run.write_text("prompt", "user.md", prompt.user)
    run.write_json("prompt", "prompt.json", {"diagnostics": prompt.diagnostics, "evidence_ids": prompt.evidence_ids,
                                             "approx_tokens": prompt.approx_tokens})
    print("=== system ===\n" + prompt.system + "\n=== user ===\n" + prompt.user, end="")
    _progress(f"prompt ({prompt.approx_tokens} tokens, approx.) written to {run.path / 'prompt'}")
    return 0


def _report_proposal(run, result) -> int:
    for a in result.attempts:
        _progress(f"attempt {a.number} ({a.backend}, {a.model}): {a.outcome}"
                  + (f": {a.detail.splitlines()[0]}" if a.detail else ""))
    if result.status == "no-change":
        print("\n# No change proposed")
        for w in result.proposal.withheld:
            print(f"- {w}")
        raise NoCandidate(f"{result.reason} (recorded in {run.path / 'candidates' / 'result.json'})")
    if result.status != "accepted":
        raise NoCandidate(f"no usable candidate: {result.reason}")
    p = result.proposal
    print(f"\n# Candidate ({run.path / result.candidate_dir})")
    print(f"compiled: {'yes' if result.compiled else 'not checked (no nvcc here)'}")
    for e in p.edits:
        print(f"- {e.file}:{e.start_line}-{e.end_line} cites {', '.join(e.cites) or 'nothing'}: {e.rationale}")
    if p.withheld:
        print("Not applied:")
        for w in p.withheld:
            print(f"- {w}")
    print("\n" + result.diff, end="")
    return 0


def cmd_propose(args: argparse.Namespace) -> int:
    from runner.proposal.stage import propose

    lc = _load(args)
    run, diag = _evidence(args, lc, allow_profiling=False)
    ctx = RunContext(lc, run, diagnostics=args.diagnostics)
    result = propose(ctx, diag)
    if result.status == "no-change":
        from runner.evaluation.stage import record_no_change

        record_no_change(ctx, diag, result)
    return _report_proposal(run, result)


def _print_evaluation(result, note: str) -> None:
    print(f"\n# Evaluation\n{result.summary()}")
    if result.ear:
        e = result.ear
        print(f"EAR: coverage {e.coverage}, localization {e.localization}, directional {e.directional}, "
              f"hallucinations {e.hallucinations.count}, correct {e.correct}")
    if note:
        _progress(note)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from runner.analysis.evidence import Diagnostics
    from runner.base.runstore import open_run
    from runner.base.workspace import source_name
    from runner.proposal.stage import ProposeResult

    lc = _config(args)
    run = open_run(args.run)
    try:
        proposed = ProposeResult.model_validate_json((run.path / "candidates" / "result.json").read_text())
        diag = Diagnostics.model_validate_json((run.path / "analysis" / "diagnostics.json").read_text())
    except FileNotFoundError as e:
        raise OptimasError(f"{args.run}: no analysed evidence or no proposal ({e.filename})") from None
    if proposed.status != "accepted" or not proposed.candidate_dir:
        raise NoCandidate(f"{args.run}: the run has no accepted candidate ({proposed.reason})")
    src = run.path / proposed.candidate_dir / "src"
    proposed.files = {source_name(p.relative_to(src).as_posix()): p.read_text(encoding="utf-8") for p in src.rglob("*")
                      if p.is_file()}
    if "evaluation" in run.manifest.get("stages", {}):
        raise OptimasError(f"{args.run}: already evaluated; a run's results are never overwritten")
    require_gpu_run(lc, profiling=False)
    ok, why = can_run_here(lc)
    if not ok:
        from runner.evaluation.measure import EvaluationError

        raise EvaluationError(why)
    from runner.flows.loop import evaluate_recorded

    result, why = evaluate_recorded(RunContext(lc, run), diag, proposed)
    _print_evaluation(result, f"directional consistency not scored: {why}" if why else "")
    return 0


def cmd_ablate(args: argparse.Namespace) -> int:
    from runner.flows.ablation import ablate

    lc = _load(args)
    _, diag = _evidence(args, lc, allow_profiling=False)
    ok, why = can_run_here(lc)
    if not ok:
        _progress(f"candidates are proposed and compiled but not evaluated: {why}")
    rows, out = ablate(lc, diag, _runs_dir(args, lc), ok, args.only or DIAGNOSTICS)
    print((out / "ablation.md").read_text(), end="")
    print(f"\nTable: {out / 'ablation.md'}, {out / 'ablation.csv'}; plot: {out / 'ablation.svg'}")
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from runner.evaluation.corpus import export

    lc = load_config(args.config)
    source = (args.runs_dir or lc.resolve(lc.config.runs_dir)) / "corpus.jsonl"
    n = export(source, args.out, args.format)
    print(f"{n} records written to {args.out}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """With recorded profiles (or --run): evidence, a proposal and, where the app can run here, its
    evaluation. Without them, on a GPU: the closed loop (profile, analyze, propose, evaluate,
    re-profile while the gain is significant)."""

    from runner.flows.optimize import RecordedRun, optimize

    lc = _load(args)
    inputs = profile_inputs(lc, _given_profiles(args))
    if getattr(args, "run", None):
        try:
            require_gpu_run(lc, profiling=False)
        except MissingForGpuRun as e:
            raise MissingForGpuRun(f"{e}; this machine can still propose from the run (optimas propose --config "
                                   f"{args.config} --run {args.run}), and a GPU machine evaluate it") from None
        ok, why = can_run_here(lc)
        if not ok:  # a profiled run is carried on where it can be evaluated, as `evaluate` requires
            from runner.evaluation.measure import EvaluationError

            raise EvaluationError(f"{why}; this machine can still propose from the run "
                                  f"(optimas propose --config {args.config} --run {args.run}), and a GPU machine "
                                  "evaluate it (optimas evaluate)")
        inputs = RecordedRun(*_evidence(args, lc, allow_profiling=False))
    else:
        _refuse(lc.path, input_problems(lc.config, recorded=has_profiles(inputs)))
        if not (inputs and has_profiles(inputs)):  # the closed loop profiles here
            require_gpu_run(lc)
    result = optimize(lc, _runs_dir(args, lc), inputs, args.diagnostics, args.configuration)
    if result.loop is not None:
        loop = result.loop
        print(f"# Closed loop ({result.run.path})")
        for it in loop.iterations:
            gain = "" if it.improvement is None else f" {it.improvement:+.1%} ({it.ci_low:+.1%} to {it.ci_high:+.1%})"
            direction = "" if it.directional is None else f", directional consistency {it.directional:.2f}"
            print(f"- iteration {it.iteration}: {it.verdict}{gain}{direction} [{it.run_dir}]")
        total = "" if loop.cumulative_improvement is None else f", {loop.cumulative_improvement:+.1%} in all"
        print(f"kept: {'iteration ' + str(loop.best) if loop.best else 'the original'}{total}; "
              f"stopped: {loop.stopped_because}")
        return 0
    it = result.iteration
    _print_analysis(result.run)
    code = _report_proposal(result.run, it.proposed)
    if it.result is None:
        _progress(f"stopped after the proposal: {it.note}")
        _closing_summary(args, result.run, it.proposed, not_done=it.note)
        return code
    _print_evaluation(it.result, it.note)
    _progress("one iteration from recorded profiles; run without profiles on a GPU to close the loop")
    _closing_summary(args, result.run, it.proposed)
    return code


def _closing_summary(args: argparse.Namespace, run, proposed, not_done: str = "") -> None:
    """Where the run's results are and what to try next."""
    folder = run.path
    files = ["analysis/diagnostics.md (the evidence)", "prompt/ (what the model was asked)"]
    if proposed.candidate_dir:
        files.append(f"{proposed.candidate_dir}/diff.patch (the candidate)")
    if (folder / "evaluation").is_dir():
        files.append("evaluation/result.json (validation and timing)")
    print(f"\n# Summary\nRun folder: {folder}")
    for f in files:
        print(f"- {f}")
    me = invocation()
    if not_done:
        print(f"Not done: validation and timing ({not_done}).")
        print(f"Next, on a machine with an NVIDIA GPU: {me} evaluate --config {args.config} --run {folder}")
    print(f"Your own program: {me} init <its folder>, then {me} run --config <its folder>/optimas.yml "
          "on a GPU machine.")


def invocation() -> str:
    """How to run optimas as typed from here: `optimas` when that is this installation's command on
    PATH, else its script's path (make demo's .venv/bin/optimas), else `python -m runner.cli`."""
    script = Path(sys.executable).parent / "optimas"
    on_path = shutil.which("optimas")
    if on_path and script.exists() and Path(on_path).resolve() == script.resolve():
        return "optimas"
    if script.exists():
        try:
            return os.path.relpath(script)
        except ValueError:  # another drive
            return str(script)
    return f"{sys.executable} -m runner.cli"


def cmd_check_config(args: argparse.Namespace) -> int:
    loaded = load_config(args.config)
    chosen = [loaded.for_program(args.program)] if args.program else loaded.each_program()
    several = len(loaded.program_names()) > 1
    problems = []
    for lc in chosen:
        own = input_problems(lc.config) + path_problems(lc)
        problems += [f"{lc.config.app.name}: {p}" if several else p for p in own]
    problems += [f"profiles: {p} does not exist" for p in loaded.config.profiles.all_paths()
                 if not loaded.resolve(p).exists()]
    if problems:
        raise ConfigError(loaded.path, list(dict.fromkeys(problems)))
    listed = f"; {len(chosen)} of {len(loaded.program_names())} programs checked" if several else ""
    print(f"{args.config}: valid (sha256 {loaded.sha256[:12]}){listed}")
    for lc in chosen:
        for warning in _run_warnings(lc):
            print(f"warning: {lc.config.app.name + ': ' if several else ''}{warning}", file=sys.stderr)
    if not args.build:
        return 0
    if not several:
        return _check_build(chosen[0])
    failed = []
    for i, lc in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {lc.config.app.name}", flush=True)
        if _check_build(lc) != 0:
            failed.append(lc.config.app.name)
    print(f"{len(chosen) - len(failed)} of {len(chosen)} programs built" +
          (f"; failed: {', '.join(failed)}" if failed else ""))
    return 3 if failed else 0


def _run_warnings(lc: LoadedConfig) -> list[str]:
    """What the run commands lack that the program's main demands (an argument count it checks
    before any work): a run that stops at once fails on the GPU host, after the build."""
    from runner.init.runs import run_arguments, too_few
    from runner.init.write import main_guards

    app = lc.config.app
    commands = {k: v for k, v in (("app.run", app.run), ("app.profile_run", app.profile_run),
                                  ("app.time_run", app.time_run)) if v}
    if not commands:
        return []
    guards = main_guards(lc.resolve(app.workdir))
    out = []
    for key, command in commands.items():
        short = too_few(guards, run_arguments(command))
        if short is not None:
            out.append(f"{key} ({command!r}): {short.describe()}; the run would stop before any kernel runs")
    return out


def _check_build(lc: LoadedConfig) -> int:
    """check-config --build: build the program as every stage does (in a copy of app.workspace,
    through the nvcc shim) and say what the compiler feedback (K*) will hold; exit 3 when it fails."""
    import time

    from runner.base.sandbox import scratch
    from runner.toolchain.builder import Builder, default_build_cache

    if not lc.config.app.build:
        raise ConfigError(lc.path, ["app.build: no build command to check (--build)"])
    arch = target_arch(lc.config.profiling.nvidia_smi)
    print(f"building as Optimas does (a copy of the workspace, -arch={arch}) ...", flush=True)
    t0 = time.monotonic()
    with scratch("optimas-check-") as tmp:
        log = Path(tmp) / "build.log"
        built = Builder(lc, arch, default_build_cache()).compile({}, log, macros=True)
    seconds = time.monotonic() - t0
    if not built.ok:
        tail = "\n".join(built.output.strip().splitlines()[-25:])
        print(f"build failed after {seconds:.1f} s: {' '.join(built.command)}\n{tail}", file=sys.stderr)
        return 3
    spills = [r.kernel for r in built.resources if r.spill_store_bytes or r.spill_load_bytes]
    n = len(built.resources)
    print(f"build: ok in {seconds:.1f} s; ptxas reports {n} kernel{'' if n == 1 else 's'} (compiler feedback K*)"
          + (f", spilling in {', '.join(spills[:5])}" if spills else ""))
    if not built.resources:
        print("  check: ptxas reported no kernel: the prompt will have no compiler feedback (is nvcc run by the "
              "build, and does it compile the kernels?)")
    for c in built.compat:
        print(f"  {', '.join(c.sources)} compiled as C++17 where the build said {', '.join(c.names)}"
              if c.is_dialect else
              f"  compatibility header {c.header} pre-included into {', '.join(c.sources)} ({', '.join(c.names)})")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """`optimas run` on the config shipped with the package (the repository's config.yml and the
    recorded profiles it names), into ./runs: what `make demo` does, from any folder; then the
    evaluated run shipped with it (runner.flows.demo), which shows what a GPU adds."""
    from importlib import resources

    config = Path(str(resources.files("runner").joinpath("data/demo/config.yml")))
    if not config.is_file():
        raise OptimasError(f"{config}: the bundled demo is missing from this installation; reinstall optimas")
    from runner.flows.demo import show_evaluated

    rc = 0
    if not args.evaluated:
        demo = argparse.Namespace(config=config, runs_dir=args.runs_dir, run=None, configuration=None,
                                  diagnostics=None, backend=None, **{k: None for k in PROFILE_ROLES})
        rc = cmd_run(demo)
        print("\nThis run stops before validation and timing, which need a GPU. What they add:")
    print(show_evaluated(args.runs_dir))
    return rc


def cmd_dashboard(args: argparse.Namespace) -> int:
    from werkzeug.serving import make_server

    from runner.dashboard.app import create_dashboard

    if not args.runs_dir.is_dir():
        raise OptionError(f"--runs-dir {args.runs_dir}: not a folder; give the folder that holds the run folders")
    server = make_server(args.host, args.port, create_dashboard(args.runs_dir), threaded=True)
    print(f"dashboard of {args.runs_dir.resolve()} at http://{args.host}:{server.server_port}/ (Ctrl-C stops it)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    from runner.init.report import summary
    from runner.init.write import write_config

    out = args.output or args.dir / "optimas.yml"
    written = write_config(args.dir, out, args.name, args.args, args.build, args.force, args.program)
    print("\n".join(summary(written.specs, out, written.compile_commands)))
    top = repository_root(args.dir)
    if top is not None and out.resolve() != top / REPOSITORY_CONFIG:
        print(f"  for pull requests (the GitHub App or Action), the config is {REPOSITORY_CONFIG} at the "
              f"repository's root: optimas init {args.dir} --output {os.path.relpath(top / REPOSITORY_CONFIG)}")
    return _probe(out) if args.probe else 0


def _probe(config: Path) -> int:
    """init --probe: each program of the config just written, built and run once (runner.init.probe)."""
    from runner.init.probe import probe_all

    loaded = load_config(config)
    n = len(loaded.each_program())
    print(f"probing {n} program{'' if n == 1 else 's'} on this GPU (a build and one run each) ...", flush=True)
    probes = probe_all(loaded)
    for p in probes:
        print(p.describe(), flush=True)
    failed = [p.program for p in probes if not p.ok]
    print(f"{n - len(failed)} of {n} programs built and ran (exit 0)"
          + (f"; fix the run command of {', '.join(failed)} (app.run, or --args)" if failed else ""))
    return 3 if failed else 0


def repository_root(folder: Path) -> Path | None:
    """The git working tree holding `folder`, if any (the nearest folder above with a .git)."""
    here = folder.resolve()
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), None)


COMMANDS = {"run": cmd_run, "profile": cmd_profile, "analyze": cmd_analyze, "prompt": cmd_prompt,
            "propose": cmd_propose, "evaluate": cmd_evaluate, "corpus": cmd_corpus, "ablate": cmd_ablate,
            "check-config": cmd_check_config, "init": cmd_init, "demo": cmd_demo, "dashboard": cmd_dashboard}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _configure_logging()
    try:
        return COMMANDS[args.command](args)
    except OptimasError as e:
        print(f"optimas: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("optimas: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `optimas ... | head`: the reader has gone; nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
