"""The whole method on unmodified programs (issue #30's table): per program, a config written by
`optimas init` (no hand edit), then one iteration through the pipeline's own stages on this
machine's GPU with the offline backend: profile, analyze, propose, evaluate. Reports per program
the C* lines and K* items in the prompt, whether every salient stall line is editable, the launch
sites shown, where the counter runs came from, the processes each stage ran and their wall times.

Usage (on a GPU machine, from the repository root):
  python benchmarks/method_survey.py --out benchmarks/results/FILE.json [--only NAME ...]
Programs are listed in PROGRAMS (folder, build template, run arguments), as benchmarks/external's
README says they were configured; the config goes to a scratch folder, never over the tracked one.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

from runner.analysis.stage import analyze, write_analysis  # noqa: E402 (after the path above)
from runner.base.config import load_config  # noqa: E402
from runner.base.context import RunContext  # noqa: E402
from runner.base.runstore import create_run  # noqa: E402
from runner.base.workspace import read_context, read_sources  # noqa: E402
from runner.evaluation import measure  # noqa: E402
from runner.evaluation.stage import evaluate  # noqa: E402
from runner.init.write import write_config  # noqa: E402
from runner.profiling.agent import ProfilingAgent  # noqa: E402
from runner.proposal.parser import Proposal  # noqa: E402
from runner.proposal.prompt import build_prompt  # noqa: E402
from runner.proposal.stage import ProposeResult, propose  # noqa: E402

SAMPLES = "benchmarks/external/cuda-samples/Samples"
NVCC = "nvcc -O3 -std=c++17 -arch={arch} {lineinfo} --extended-lambda -I../../../Common -o {exe} "
RODINIA = "benchmarks/external/rodinia/cuda"
HECBENCH = "benchmarks/external/hecbench/src"
# folder, build template (None: the one init finds), run arguments
PROGRAMS: dict[str, tuple[str, str | None, str]] = {
    "pathfinder": (f"{RODINIA}/pathfinder", None, "100000 100 20"),
    "nw": (f"{RODINIA}/nw", None, "2048 10"),
    "backprop": (f"{RODINIA}/backprop", None, "65536"),
    "srad_v2": (f"{RODINIA}/srad/srad_v2", None, "2048 2048 0 127 0 127 0.5 2"),
    # Rodinia's run file gives k1=10 k2=20; 5 and 10 keep the center counts out of the size sweep
    # (numbers under 16 are not scaled), so k2 never falls below k1
    "streamcluster": (f"{RODINIA}/streamcluster", None, "5 10 256 65536 65536 1000 none output.txt 1"),
    # its Makefile's run target gives 512 512 512 100: 134M elements a tensor, and a CPU reference
    # over them: its row (profile and evaluation) did not finish in 290 s on the H100
    "mask": (f"{HECBENCH}/mask-cuda", None, "256 256 256 100"),
    # HeCBench programs never surveyed before (2026-12-06, third session), run as their Makefile's run
    # target runs them ("": init's own choice of arguments)
    **{name: (f"{HECBENCH}/{name}-cuda", None, "") for name in (
        "adam", "atan2", "gelu", "heat2d", "lif", "softmax", "stencil3d", "md5hash", "jacobi", "bitpermute")},
    # Argonne's proxy apps (the paper reports XSBench), at their small problem, event-based, with a
    # lookup count init can scale
    "xsbench": ("benchmarks/external/anl/XSBench/cuda", None, "-m event -s small -l 4000000"),
    "rsbench": ("benchmarks/external/anl/RSBench/cuda", None, "-m event -s small -l 2000000"),
    "reduction": (f"{SAMPLES}/2_Concepts_and_Techniques/reduction", NVCC + "reduction.cpp reduction_kernel.cu",
                  "--n=1048576"),
    "matrixMul": (f"{SAMPLES}/0_Introduction/matrixMul", NVCC + "matrixMul.cu",
                  "-wA=512 -hA=512 -wB=512 -hB=512"),
    "threadFenceReduction": (f"{SAMPLES}/2_Concepts_and_Techniques/threadFenceReduction",
                             NVCC + "threadFenceReduction.cu", "--n=1048576"),
    "BlackScholes": (f"{SAMPLES}/5_Domain_Specific/BlackScholes", NVCC + "BlackScholes.cu BlackScholes_gold.cpp", ""),
    "histogram": (f"{SAMPLES}/2_Concepts_and_Techniques/histogram",
                  NVCC + "histogram256.cu histogram64.cu histogram_gold.cpp main.cpp", ""),
    "sortingNetworks": (f"{SAMPLES}/2_Concepts_and_Techniques/sortingNetworks",
                        NVCC + "bitonicSort.cu main.cpp oddEvenMergeSort.cu sortingNetworks_validate.cpp", ""),
    "transpose": (f"{SAMPLES}/6_Performance/transpose", NVCC + "transpose.cu", "-dimX=1024 -dimY=1024"),
    "convolutionSeparable": (f"{SAMPLES}/2_Concepts_and_Techniques/convolutionSeparable",
                             NVCC + "convolutionSeparable.cu convolutionSeparable_gold.cpp main.cpp", ""),
}


class ProcessCount:
    """Counts the program runs the evaluation makes. Every run goes through measure.run_once
    (run_traced calls it with the tracer's environment), so only that one is counted: counting
    run_traced as well counted each traced run twice (the records before 2026-12-06c did)."""

    def __init__(self) -> None:
        self.n = 0
        self._once = measure.run_once

    def __enter__(self) -> ProcessCount:
        def once(*a, **k):
            self.n += 1
            return self._once(*a, **k)
        measure.run_once = once
        return self

    def __exit__(self, *exc) -> None:
        measure.run_once = self._once


APP_RUNS = re.compile(r"^(trace|timing|targeted|counters)")  # the profiling commands that run the program


def unchanged(lc, proposed: ProposeResult) -> ProposeResult:
    """A candidate that is the original sources, unchanged: what the evaluation costs, measured on
    a program the offline backend had no edit for."""
    _, workdir = lc.dirs
    empty = Proposal(shape="structured", raw="(the original, unchanged: method survey)", edits=[], applied=[])
    return ProposeResult(status="accepted", diagnostics=proposed.diagnostics, proposal=empty, diff="",
                         evidence_ids=[], files=read_sources(workdir, lc.config.app.sources), candidate_dir="",
                         attempts=[])


def keep(run_path: Path, into: Path | None) -> None:
    """What a reader of the record needs from a run folder: its config, prompt and analysis, and
    the profile's logs, plan and timing tables (not the reports: megabytes each)."""
    if into is None or not run_path.is_dir():
        return
    for f in run_path.rglob("*"):
        rel = f.relative_to(run_path)
        small = f.suffix in (".md", ".json", ".log", ".yml", ".txt") or (f.suffix == ".csv" and "timing" in f.name)
        if f.is_file() and small and f.stat().st_size < 2_000_000 and "workspace" not in rel.parts:
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, into / rel)


def with_profiling(cfg_path: Path, settings: list[str]) -> None:
    """Set profiling.KEY: VALUE (each `KEY=VALUE`, the value read as YAML) in the config init wrote."""
    if not settings:
        return
    data = yaml.safe_load(cfg_path.read_text())
    for item in settings:
        key, _, value = item.partition("=")
        data.setdefault("profiling", {})[key] = yaml.safe_load(value)
    cfg_path.write_text(yaml.safe_dump(data, sort_keys=False))


def survey(name: str, folder: str, build: str | None, args: str, scratch: Path, evaluation: bool = True,
           profiling: list[str] | None = None) -> dict:
    row: dict = {"program": name}
    cfg_path = scratch / f"{name}.yml"
    write_config(REPO / folder, cfg_path, name=name, run_args=args, build=build, force=True)
    with_profiling(cfg_path, profiling or [])
    if profiling:
        row["profiling_settings"] = profiling
    lc = load_config(cfg_path)
    row["workspace"] = lc.config.app.workspace
    row["profile_run"] = lc.config.app.profile_run
    run = create_run(scratch / "runs" / name)
    row["run"] = str(run.path)
    shutil.copy2(cfg_path, run.path / "config-by-init.yml")
    t0 = time.monotonic()
    ctx = RunContext(lc, run)
    inputs = ProfilingAgent(ctx).collect()
    row["profile_s"] = round(time.monotonic() - t0, 1)
    commands = run.manifest.get("commands", [])
    row["profile_process_runs"] = sum(1 for c in commands if APP_RUNS.match(c.get("name", "")))
    row["profile_commands_s"] = {c["name"]: c.get("seconds") for c in commands if APP_RUNS.match(c.get("name", ""))}
    row["counter_plan"] = run.manifest.get("counter_plan")
    t0 = time.monotonic()
    diag = analyze(lc, inputs)
    write_analysis(run, lc, inputs, diag)
    row["analysis_s"] = round(time.monotonic() - t0, 1)
    row["C_lines"] = sum(1 for e in diag.evidence if e.kind == "counter")
    row["counter_note"] = next((n for n in diag.notes if "counter" in n.lower()), "")
    t0 = time.monotonic()
    proposed = propose(ctx, diag)
    row["propose_s"] = round(time.monotonic() - t0, 1)
    user = (run.stage_dir("prompt") / "user-1.md").read_text() if (run.stage_dir("prompt") / "user-1.md").exists() \
        else ""
    row["C_in_prompt"] = len(re.findall(r"^- C\d+ ", user, re.M))
    row["K_in_prompt"] = len(re.findall(r"^- K\d+ ", user, re.M))
    row["launch_sites_shown"] = len(re.findall(r"Launch of ", user))
    app = lc.config.app
    prompt = build_prompt(app.name, diag, read_context(*lc.dirs, app.sources), editable=app.editable)
    stalls = [e.stall for e in diag.evidence if e.kind == "stall" and e.id in prompt.evidence_ids]
    editable = 0
    for s in stalls:
        ranges = next((r for f, r in prompt.editable.items() if Path(f).name == Path(s.file).name), [])
        editable += any(a <= s.line <= b for a, b in ranges)
    row["stall_lines"], row["stall_lines_editable"] = len(stalls), editable
    row["proposal"] = proposed.status
    if proposed.status != "accepted":
        # The evaluation's cost is measured all the same: the original judged against itself
        proposed = unchanged(lc, proposed)
        row["evaluated"] = "the original against itself (the offline backend proposed no usable change)"
    else:
        row["evaluated"] = "the offline backend's candidate"
    if proposed.status == "accepted" and evaluation:
        t0 = time.monotonic()
        with ProcessCount() as count:
            result = evaluate(ctx, diag, proposed)
        row["evaluation_s"] = round(time.monotonic() - t0, 1)
        row["evaluation_process_runs"] = count.n
        # before validation's runs stood in for timing's first warm-up pair: two runs more per timed configuration
        saved = sum(2 * (lc.config.evaluation.warmup_runs - t.warmup_pairs) for t in result.timings)
        row["evaluation_process_runs_without_reuse"] = count.n + saved
        row["evaluation_steps_s"] = {k: round(v, 1) for k, v in result.seconds.items()}
        row["verdict"] = result.verdict
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--no-evaluation", action="store_true",
                   help="stop after the proposal (profile, analysis and prompt only)")
    p.add_argument("--profiling", action="append", default=[], metavar="KEY=VALUE",
                   help="a profiling setting over init's config, e.g. stop_when_profiled=false (repeatable)")
    p.add_argument("--keep", type=Path, default=None,
                   help="copy each run's small files (config, prompt, analysis, logs, timing tables) under here")
    a = p.parse_args()
    # the stages' progress on stderr, timed: where a slow row spent its time
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", datefmt="%H:%M:%S")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (folder, build, args) in PROGRAMS.items():
            if a.only and name not in a.only:
                continue
            t0 = time.monotonic()
            try:
                row = survey(name, folder, build, args, Path(tmp), evaluation=not a.no_evaluation,
                             profiling=a.profiling)
            except Exception as e:  # a survey reports every program: the failure is the row
                row = {"program": name, "error": f"{type(e).__name__}: {str(e)[:800]}"}
            row["total_s"] = round(time.monotonic() - t0, 1)
            for run_path in (Path(tmp) / "runs" / name).glob("*"):
                keep(run_path, a.keep and a.keep / name)
            print(json.dumps(row), flush=True)
            rows.append(row)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
