"""The `optimas` command line.

    optimas run --config config.yml         the pipeline, as far as this version goes
    optimas profile --config app.yml        build and profile the app on this machine's GPU
    optimas analyze --config config.yml     profiles -> diagnostics.json + diagnostics.md
    optimas analyze --config app.yml --run runs/<id>   analyse what `optimas profile` collected
    optimas check-config --config config.yml

Exit codes: 0 success, 1 other failures, 2 bad input (config or profile files), 3 the inputs hold
too little to analyse, 4 profiling could not run (tools, GPU, permissions, the app failed).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

from runner.config import LoadedConfig, load_config
from runner.errors import ConfigError, OptimasError

RUNS_DIR_HELP = "where run directories go (default: the config's runs_dir)"
CONFIGURATION_HELP = "configuration to profile (default: app.profile_configuration)"


def _progress(msg: str) -> None:
    print(f"[optimas {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, type=Path, help="path to config.yml")


def _add_profile_args(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--runs-dir", type=Path, default=None, help=RUNS_DIR_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="optimas", description=__doc__.split("\n\n")[0])
    from runner import __version__
    parser.add_argument("--version", action="version", version=f"optimas {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run the pipeline on an application's config")
    _add_common(p_run)
    _add_profile_args(p_run)
    p_run.add_argument("--json", action="store_true", help="print diagnostics.json instead of the summary")
    p_run.add_argument("--configuration", default=None, help=CONFIGURATION_HELP)
    p_pr = sub.add_parser("profile", help="build the app and collect profiles on this machine's GPU")
    _add_common(p_pr)
    p_pr.add_argument("--runs-dir", type=Path, default=None, help=RUNS_DIR_HELP)
    p_pr.add_argument("--configuration", default=None, help=CONFIGURATION_HELP)
    p_an = sub.add_parser("analyze", help="distil profiles into cited evidence (diagnostics.json/.md)")
    _add_common(p_an)
    _add_profile_args(p_an)
    p_an.add_argument("--run", type=Path, default=None, metavar="RUN_DIR",
                      help="analyse the profiles an `optimas profile` run collected, into that run")
    p_an.add_argument("--json", action="store_true", help="print diagnostics.json instead of the summary")
    p_cc = sub.add_parser("check-config", help="validate a config file and exit")
    _add_common(p_cc)
    return parser


ROLES = ("report", "timing", "raw", "details", "source", "counters")


def _profile_inputs(args: argparse.Namespace, lc: LoadedConfig) -> dict[str, list[Path]]:
    """Profiles from the command line, else from the config's `profiles` section."""
    prof = lc.config.profiles
    given = {k: getattr(args, k, None) for k in ROLES}
    if any(v for v in given.values()):
        return {k: list(v or []) for k, v in given.items()}
    by_role = {"report": prof.reports, "timing": prof.timing, "raw": prof.raw, "details": prof.details,
               "source": prof.source, "counters": prof.counters}
    return {k: [lc.resolve(p) for p in v] for k, v in by_role.items()}


def _has_profiles(inputs: dict[str, list[Path]]) -> bool:
    return any(inputs.get(k) for k in ("report", "raw", "details"))


def _print_analysis(args: argparse.Namespace, json_path: Path, md_path: Path) -> None:
    if getattr(args, "json", False):
        print(json_path.read_text(), end="")
    else:
        print(md_path.read_text(), end="")
        print(f"\nEvidence: {json_path}\nPrompt text: {md_path} ({md_path.stat().st_size} bytes)")


def _collect(lc: LoadedConfig, run, configuration: str | None = None) -> dict[str, list[Path]]:
    from runner.profiling import ProfilingAgent

    try:
        return ProfilingAgent(lc, run, _progress, configuration).collect()
    except OptimasError as e:
        run.stage_failed("profile", str(e))
        raise


def _analyze_into(run, lc: LoadedConfig, inputs: dict[str, list[Path]], args: argparse.Namespace) -> None:
    from runner.pipeline import analyze, write_analysis

    diag = analyze(lc, inputs, _progress)
    json_path, md_path = write_analysis(run, lc, inputs, diag)
    _progress(f"run {run.id}: analysis written to {run.path / 'analysis'}")
    _print_analysis(args, json_path, md_path)


def cmd_profile(args: argparse.Namespace) -> int:
    from runner.runstore import create_run

    lc = load_config(args.config)
    run = create_run(args.runs_dir or lc.resolve(lc.config.runs_dir))
    _progress(f"run {run.id} in {run.path}")
    _collect(lc, run, args.configuration)
    print(run.path)
    return 0


def cmd_analyze(args: argparse.Namespace) -> int:
    from runner.runstore import create_run, open_run

    lc = load_config(args.config)
    if args.run:
        run = open_run(args.run)
        stage = run.manifest.get("stages", {}).get("profile", {})
        if "inputs" not in stage:
            raise OptimasError(f"{args.run}: this run has no completed profile stage to analyse")
        if "analysis" in run.manifest["stages"]:
            raise OptimasError(f"{args.run}: already analysed; a run's results are never overwritten")
        inputs = {role: [run.path / p for p in paths] for role, paths in stage["inputs"].items()}
        _analyze_into(run, lc, inputs, args)
        return 0
    inputs = _profile_inputs(args, lc)
    if not _has_profiles(inputs):
        raise ConfigError(args.config, [
            "profiles: no profiles to analyse; set profiles.reports or profiles.raw, pass --report/--raw, or "
            "analyse a profiling run with --run DIR"])
    from runner.pipeline import analyze, write_analysis

    diag = analyze(lc, inputs, _progress)  # before the run exists: bad input writes nothing
    run = create_run(args.runs_dir or lc.resolve(lc.config.runs_dir))
    json_path, md_path = write_analysis(run, lc, inputs, diag)
    _progress(f"run {run.id} written to {run.path}")
    _print_analysis(args, json_path, md_path)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Recorded profiles: analyse them. None: profile the app on this machine's GPU, then analyse."""
    from runner.runstore import create_run

    lc = load_config(args.config)
    inputs = _profile_inputs(args, lc)
    if _has_profiles(inputs):
        args.run = None
        code = cmd_analyze(args)
    else:
        run = create_run(args.runs_dir or lc.resolve(lc.config.runs_dir))
        _progress(f"run {run.id} in {run.path}")
        _analyze_into(run, lc, _collect(lc, run, args.configuration), args)
        code = 0
    _progress("stopped after analysis: the prompt, LLM and evaluation stages are not in this version yet")
    return code


def cmd_check_config(args: argparse.Namespace) -> int:
    lc = load_config(args.config)
    missing = [p for p in lc.config.profiles.all_paths() if not lc.resolve(p).exists()]
    if missing:
        print(f"{args.config}: valid, but these profile files do not exist: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(f"{args.config}: valid (sha256 {lc.sha256[:12]})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "analyze":
            return cmd_analyze(args)
        if args.command == "run":
            return cmd_run(args)
        if args.command == "profile":
            return cmd_profile(args)
        if args.command == "check-config":
            return cmd_check_config(args)
    except OptimasError as e:
        print(f"optimas: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("optimas: interrupted", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
