"""The `optimas` command line.

    optimas run --config config.yml         the pipeline, as far as this version goes
    optimas analyze --config config.yml     profiles -> diagnostics.json + diagnostics.md
    optimas check-config --config config.yml

Exit codes: 0 success, 1 unexpected failure, 2 bad input (config or profile files), 3 the inputs
hold too little to analyse.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Sequence

from runner.config import LoadedConfig, load_config
from runner.errors import ConfigError, OptimasError


def _progress(msg: str) -> None:
    print(f"[optimas {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", required=True, type=Path, help="path to config.yml")


def _add_profile_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("profiles (override the config's `profiles` section)")
    g.add_argument("--report", action="append", type=Path, default=None, metavar="FILE.ncu-rep")
    g.add_argument("--raw", action="append", type=Path, default=None, metavar="CSV", help="--page raw export")
    g.add_argument("--details", action="append", type=Path, default=None, metavar="CSV",
                   help="--page details export")
    g.add_argument("--source", action="append", type=Path, default=None, metavar="CSV",
                   help="--page source --print-source cuda,sass export")
    g.add_argument("--counters", action="append", type=Path, default=None, metavar="FILE",
                   help="raw export or .ncu-rep of N profiling runs, for counter selection")
    p.add_argument("--runs-dir", type=Path, default=None, help="where run directories go (default: config runs_dir)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="optimas", description=__doc__.split("\n\n")[0])
    from runner import __version__
    parser.add_argument("--version", action="version", version=f"optimas {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run the pipeline on an application's config")
    _add_common(p_run)
    _add_profile_args(p_run)
    p_an = sub.add_parser("analyze", help="distil profiles into cited evidence (diagnostics.json/.md)")
    _add_common(p_an)
    _add_profile_args(p_an)
    p_an.add_argument("--json", action="store_true", help="print diagnostics.json instead of the summary")
    p_cc = sub.add_parser("check-config", help="validate a config file and exit")
    _add_common(p_cc)
    return parser


def _profile_inputs(args: argparse.Namespace, lc: LoadedConfig) -> dict[str, list[Path]]:
    prof = lc.config.profiles
    given = {k: getattr(args, k) for k in ("report", "raw", "details", "source", "counters")}
    if any(v for v in given.values()):
        return {k: list(v or []) for k, v in given.items()}
    return {"report": [lc.resolve(p) for p in prof.reports], "raw": [lc.resolve(p) for p in prof.raw],
            "details": [lc.resolve(p) for p in prof.details], "source": [lc.resolve(p) for p in prof.source],
            "counters": [lc.resolve(p) for p in prof.counters]}


def cmd_analyze(args: argparse.Namespace, stop_after_analysis_note: bool = False) -> int:
    from runner.pipeline import analyze, write_analysis
    from runner.runstore import create_run

    lc = load_config(args.config)
    inputs = _profile_inputs(args, lc)
    if not any(inputs[k] for k in ("report", "raw", "details")):
        raise ConfigError(args.config, [
            "profiles: no profiles to analyse; set profiles.reports or profiles.raw, or pass --report/--raw "
            "(collecting profiles on a GPU is the profiling stage, not part of this version)"])
    diag = analyze(lc, inputs, _progress)
    runs_dir = args.runs_dir or lc.resolve(lc.config.runs_dir)
    run = create_run(runs_dir)
    json_path, md_path = write_analysis(run, lc, inputs, diag)
    _progress(f"run {run.id} written to {run.path}")
    if getattr(args, "json", False):
        print(json_path.read_text(), end="")
    else:
        print(md_path.read_text(), end="")
        print(f"\nEvidence: {json_path}\nPrompt text: {md_path} ({md_path.stat().st_size} bytes)")
    if stop_after_analysis_note:
        _progress("stopped after analysis: the prompt, LLM and evaluation stages are not in this version yet")
    return 0


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
            return cmd_analyze(args, stop_after_analysis_note=True)
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
