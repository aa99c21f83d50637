"""The Evaluation Agent's measurements: validate a candidate binary against the baseline on every
configuration and seed, and time both, interleaved.

Validation, per (configuration, seed): run the baseline; poison each declared output file, then run
the candidate; poison again and run it a second time. The candidate passes when it exits 0 (the
app's own PASS/FAIL), writes every output, gives the same bytes both times (deterministic), and
matches the baseline bit for bit (or within the declared tolerance). A hung or crashing candidate
is killed at the app's timeout and recorded as failed. Before a candidate is called wrong the
baseline runs again; when its own GPU results vary by rounding only, the candidate's are held
within ROUNDING_ULPS of them instead of bit for bit (app.gpu_results.original_varies).
"""

from __future__ import annotations

import logging
import math
import os
import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from runner.base.config import AppConfig, LoadedConfig, OutputSpec, StdoutSpec
from runner.base.errors import OptimasError
from runner.base.processes import child_environment, render, run_process
from runner.base.validation_modes import ValidationMode, check_words
from runner.base.workspace import read_capped
from runner.evaluation.statistics import Improvement, improvement
from runner.scan.cuda_source import kernel_key
from runner.tracing.library import TracerError, run_environment, trace_environment, tracer_library
from runner.tracing.trace import ProcessTrace, device_fault, read_traces
from runner.validation.compare import (
    MISMATCH_BYTES,
    MISMATCH_EACH,
    ROUNDING_ULPS,
    RoundingSpread,
    compare,
    compare_results,
    original_spread,
    repeated_but_different,
    widened,
    within_rounding,
)

POISON = b"\xde\xad\xbe\xef" * 256
log = logging.getLogger(__name__)


class EvaluationError(OptimasError):
    """The baseline or a timing run could not be measured."""

    exit_code = 7


class RunOutcome(BaseModel):
    argv: list[str]
    returncode: int | None  # None: killed at the timeout
    seconds: float
    stdout: str


CaseStatus = Literal["pass", "mismatch", "nondeterministic", "missing-output", "failed", "timeout", "baseline-failed"]


class CaseResult(BaseModel):
    configuration: str
    seed: int
    status: CaseStatus
    detail: str = ""
    modes: list[str] = Field(default_factory=list)  # the checks in words (validation_modes.check_words)
    # How the GPU results were compared (None: they were not: no tracer loaded).
    gpu_results: ValidationMode | None = None
    # A GPU result's mismatch read as floating-point values: the largest distance in ulps of a
    # differing value from the baseline's (None: not read so, or not floating-point data).
    max_ulps: int | None = None
    # When the original's own GPU results differ between two of its runs by rounding only: the
    # largest ulp distance between them (the candidate is then judged within ROUNDING_ULPS).
    original_ulps: int | None = None


class Validation(BaseModel):
    passed: bool
    cases: list[CaseResult]

    def rounding_only(self) -> int | None:
        """The largest ulp distance when every failed case is a mismatch of at most ROUNDING_ULPS
        (None when any failed otherwise, by more, or without that description)."""
        bad = [c for c in self.cases if c.status != "pass"]
        if not bad or any(c.status != "mismatch" or c.max_ulps is None or c.max_ulps > ROUNDING_ULPS for c in bad):
            return None
        return max(c.max_ulps for c in bad if c.max_ulps is not None)

    def results_repeat(self) -> bool:
        """Whether every case passed comparing GPU results bit for bit: the candidate's two runs gave
        the same results as each other and as the original's (no rounding allowance was needed)."""
        return bool(self.cases) and all(c.status == "pass" and c.gpu_results == ValidationMode.BITWISE
                                        and c.original_ulps is None for c in self.cases)

    def summary(self) -> str:
        bad = [c for c in self.cases if c.status != "pass"]
        if not bad:
            text = f"passed on all {len(self.cases)} configuration/seed pairs"
            rounded = [c.original_ulps for c in self.cases if c.original_ulps is not None]
            if rounded:
                text += (f" (on {len(rounded)} of them GPU results within {ROUNDING_ULPS} ulps, not bit for bit: the "
                         f"original's own vary run to run, by up to {max(rounded)} ulps)")
            return text
        return "; ".join(f"{c.configuration}/seed {c.seed}: {c.status} ({c.detail})" for c in bad)


class Timing(BaseModel):
    configuration: str
    # kernel_ms: the time the app prints (app.kernel_time_regex); traced_kernel_ms: the execution
    # time of the counted kernels as the CUPTI tracer measured it; wall_ms: the process's wall time.
    metric: Literal["kernel_ms", "traced_kernel_ms", "wall_ms"]
    baseline: list[float]
    candidate: list[float]
    baseline_wall_ms: list[float]
    candidate_wall_ms: list[float]
    result: Improvement
    # How the run count was decided: "fixed" (timed_runs), "precise" (the interval got narrower than
    # evaluation.timing_precision) or "max-runs" (it did not, within evaluation.max_timed_runs).
    stop: Literal["fixed", "precise", "max-runs"] = "fixed"
    # With the tracer: the kernels whose time is counted (the hot kernels, and any kernel that only
    # the candidate runs), and the improvement of each hot kernel that both run.
    kernels: list[str] = Field(default_factory=list)
    per_kernel: dict[str, Improvement] = Field(default_factory=dict)
    # Untimed pairs run first: evaluation.warmup_runs, one fewer when validation's runs of both
    # binaries on this command were the first warm-up (`warm`).
    warmup_pairs: int = 0


def timer_of(lc: LoadedConfig) -> Literal["app", "tracer", "wall"]:
    """What times a run: evaluation.timer, where `auto` is the app's own timer when the config
    gives app.kernel_time_regex, else the tracer."""
    timer = lc.config.evaluation.timer
    if timer != "auto":
        return timer
    return "app" if lc.config.app.kernel_time_regex else "tracer"


_UNIT_MS = {"ns": 1e-6, "nsec": 1e-6, "us": 1e-3, "usec": 1e-3, "µs": 1e-3, "μs": 1e-3, "microseconds": 1e-3,
            "ms": 1.0, "msec": 1.0, "milliseconds": 1.0, "s": 1e3, "sec": 1e3, "secs": 1e3, "seconds": 1e3}


def printed_kernel_ms(text: str, app: AppConfig) -> float | None:
    """The kernel time a program printed, in ms: every match of app.kernel_time_regex, each in its
    `unit` group's unit (else app.kernel_time_unit), combined by app.kernel_time_aggregate; None
    when nothing matches."""
    pattern = re.compile(app.kernel_time_regex or "")
    number = next(i for i in range(1, pattern.groups + 1) if pattern.groupindex.get("unit") != i)
    values = []
    for m in pattern.finditer(text):
        unit = (m.group("unit") if "unit" in pattern.groupindex else None) or app.kernel_time_unit
        scale = _UNIT_MS.get(unit.strip().lower())
        if scale is None:
            raise EvaluationError(f"app.kernel_time_regex captured the unit {unit!r}; expected one of "
                                  f"{', '.join(sorted(set(_UNIT_MS)))}")
        values.append(float(m.group(number).replace(",", "")) * scale)
    if not values:
        return None
    return {"sum": sum(values), "mean": sum(values) / len(values), "first": values[0],
            "last": values[-1]}[app.kernel_time_aggregate]


def traced_kernel_ms(traces: list[ProcessTrace], argv: list[str]) -> dict[str, float]:
    """Execution time per kernel (by kernel_key) over every traced process of one run, in ms."""
    if not traces:
        raise EvaluationError(f"the tracer wrote no record for {shlex.join(argv)}: the program never initialized "
                              "CUDA, or the tracer could not load (its messages start with '[optimas tracer]')")
    dropped = sum(t.dropped for t in traces)
    if dropped:
        raise EvaluationError(f"CUPTI dropped {dropped} kernel records of {shlex.join(argv)}: its times are "
                              "incomplete")
    totals: dict[str, float] = {}
    for t in traces:
        for name, ns in t.kernel_ns().items():
            key = kernel_key(name)
            totals[key] = totals.get(key, 0.0) + ns / 1e6
    if not totals:
        raise EvaluationError(f"the tracer saw no kernel execution in {shlex.join(argv)}")
    return totals


def traced_hot_keys(kernels: list[str], symbols: dict[str, str], traced: dict[str, str]) -> set[str]:
    """The keys under which traced_kernel_ms counts the given kernels (named as ncu names them):
    through their symbol where the tracer saw it (`traced`: symbol -> key), else kernel_key."""
    return {traced.get(symbols.get(k, ""), kernel_key(k)) for k in kernels}


def run_once(argv: list[str], cwd: Path, timeout_s: float, env: dict[str, str] | None = None) -> RunOutcome:
    """Run a binary with a minimal environment (`env`, default: child_environment()); on timeout its
    whole process group is killed and returncode is None."""
    r = run_process(argv, cwd, timeout_s, env=env, what=f"running {Path(argv[0]).name}")
    return RunOutcome(argv=argv, returncode=r.returncode, seconds=r.seconds, stdout=r.output)


@dataclass(frozen=True)
class Tracing:
    """The tracer on one run: its library, the folder its records go to (None: a temporary folder
    removed once they are read; kept bytes are read from a given folder later), and how much of the
    GPU results it keeps (`keep_bytes` in all, at most `keep_each` of each result; 0: none, no limit)."""

    library: Path
    folder: Path | None = None
    keep_bytes: int = 0
    keep_each: int = 0


def run_traced(argv: list[str], cwd: Path, timeout_s: float, env: dict[str, str],
               tracing: Tracing) -> tuple[RunOutcome, list[ProcessTrace]]:
    """run_once with the tracer loaded as `tracing` says; the records of every CUDA process the run
    started."""
    own = tracing.folder is None
    where = Path(tempfile.mkdtemp(prefix="optimas-trace-")) if own else tracing.folder
    where.mkdir(parents=True, exist_ok=True)
    try:
        traced = trace_environment(tracing.library, where, tracing.keep_bytes, tracing.keep_each)
        r = run_once(argv, cwd, timeout_s, {**env, **traced})
        return r, (read_traces(where) if r.returncode == 0 else [])
    finally:
        if own:
            shutil.rmtree(where, ignore_errors=True)


def results_mode(lc: LoadedConfig) -> ValidationMode:
    """How GPU results are compared (AppConfig.gpu_results_mode)."""
    return lc.config.app.gpu_results_mode()


OUTPUT_LIMIT = 1 << 30  # bytes of an output file compared at most (FileTooLargeError beyond)


def _output_bytes(path: Path) -> bytes:
    """An output file's bytes, at most OUTPUT_LIMIT of them (the program writes it: a sparse file
    of a terabyte costs no disk)."""
    return read_capped(path, OUTPUT_LIMIT, "an output the config declares (app.outputs)")


def _outputs(lc: LoadedConfig, out: Path) -> list[tuple[OutputSpec, Path]]:
    """Each app.outputs file of a run whose {out} is `out`; a relative path is the program's, in
    app.workdir where it runs (not wherever Optimas was started)."""
    workdir = lc.resolve(lc.config.app.workdir)
    return [(spec, workdir / spec.path.format(out=out)) for spec in lc.config.app.outputs]


def validate(lc: LoadedConfig, baseline_exe: Path, candidate_exe: Path, work: Path,
             per_configuration: dict[str | None, tuple[Path, Path]] | None = None) -> Validation:
    """Baseline against candidate on every configuration and seed (see the module docstring);
    `per_configuration`: a configuration's own pair of binaries where it has one (compile-time sizes)."""
    app = lc.config.app
    cwd = lc.resolve(app.workdir)
    work.mkdir(parents=True, exist_ok=True)
    library = None
    if results_mode(lc) != ValidationMode.OFF:
        try:
            library = tracer_library(lc.config.profiling.nvcc)
        except TracerError as e:
            raise EvaluationError(f"{e}. Without the tracer the program's GPU results cannot be compared: declare "
                                  "the files it writes in app.outputs, or set app.gpu_results.compare: off to judge "
                                  "candidates by their exit code alone") from None
    cases = []
    environment = child_environment(run_environment(app, lc.config.profiling.nvcc))  # once for every run
    seeds = app.seeds if app.uses_seed() else app.seeds[:1]  # a program that seeds itself: one run is enough
    for config_name in app.configurations:
        for seed in seeds:
            traces = work / f"traces-{config_name}-{seed}"
            try:
                base, cand = (per_configuration or {}).get(config_name, (baseline_exe, candidate_exe))
                cases.append(_validate_case(_CaseRuns(lc, cwd, base, cand, work, config_name, seed, library, traces,
                                                      environment)))
            finally:
                shutil.rmtree(traces, ignore_errors=True)  # kept bytes can be large; the verdict says what differed
    return Validation(passed=all(c.status == "pass" for c in cases), cases=cases)


def _argv(lc: LoadedConfig, exe: Path, config_name: str, seed: int, out: Path) -> list[str]:
    app = lc.config.app
    return render(app.run, exe=exe, config=config_name, seed=seed, scale=1, out=out, arch="", lineinfo="",
                  **app.values(config_name))


@dataclass(frozen=True)
class _CaseRuns:
    """The runs of one (configuration, seed) case: where and how each binary runs, and where the
    tracer's records go."""

    lc: LoadedConfig
    cwd: Path
    baseline_exe: Path
    candidate_exe: Path
    work: Path
    config_name: str
    seed: int
    library: Path | None
    traces: Path
    env: dict[str, str]  # child_environment(run_environment(app)), made once for every run of the case

    @property
    def tag(self) -> str:
        """The case's part of each output file's name."""
        return f"{self.config_name}-{self.seed}"

    @property
    def traced(self) -> bool:
        """Whether the runs load the tracer, so that GPU results are compared."""
        return self.library is not None

    def execute(self, exe: Path, out: Path, name: str, whole: bool = False) -> tuple[RunOutcome, list[ProcessTrace]]:
        """One run; `whole`: every result kept whole, up to app.gpu_results.keep_bytes."""
        app = self.lc.config.app
        argv = _argv(self.lc, exe, self.config_name, self.seed, out)
        if self.library is None:
            return run_once(argv, self.cwd, app.timeout_s, self.env), []
        spec = app.gpu_results
        folder = self.traces / name
        if whole or results_mode(self.lc) == ValidationMode.TOLERANCE:  # tolerance mode needs results whole
            tracing = Tracing(self.library, folder, spec.keep_bytes)
        else:  # bitwise: a few MB kept anyway, so that a mismatch can say where and by how much
            tracing = Tracing(self.library, folder, min(spec.keep_bytes, MISMATCH_BYTES), MISMATCH_EACH)
        return run_traced(argv, self.cwd, app.timeout_s, self.env, tracing)


class _Baseline(NamedTuple):
    """The original's first run on a case: its output file's path, the values it printed
    (app.stdout.values), its GPU results, and the bytes of its app.outputs files read right after
    it ran (a file at a fixed path is written over by the candidate's runs)."""

    out: Path
    values: list[float] | None
    results: list[ProcessTrace]
    files: dict[str, bytes]


def _validate_case(runs: _CaseRuns) -> CaseResult:
    """Judge the candidate on one configuration and seed (see the module docstring)."""
    lc = runs.lc
    gpu = results_mode(lc) if runs.traced else None
    case = CaseResult(configuration=runs.config_name, seed=runs.seed, status="pass",
                      modes=_checks(lc.config.app, gpu), gpu_results=gpu)
    base_out = runs.work / f"baseline-{runs.tag}.out"
    b, base_results = runs.execute(runs.baseline_exe, base_out, "baseline")
    fault, base_values = _baseline_fault(lc, b, base_results, runs.traced)
    if fault is not None:
        case.status, case.detail = "baseline-failed", fault
        return case
    files = {str(p): _output_bytes(p) for _, p in _outputs(lc, base_out) if p.exists()}
    base = _Baseline(base_out, base_values, base_results, files)
    on_gpu = _judge_candidate(case, runs, base)
    if case.status in ("mismatch", "nondeterministic"):
        _unless_original_varies(case, runs, base, on_gpu)
    return case


def _checks(app: AppConfig, gpu_results: ValidationMode | None, rounding: bool = False) -> list[str]:
    """A case's checks in words (check_words) under `app`: its output files' modes, the GPU results'
    (None: not compared), the printed output."""
    return check_words([o.compare for o in app.outputs], gpu_results, rounding, app.stdout.configured())


def _baseline_fault(lc: LoadedConfig, b: RunOutcome, base_results: list[ProcessTrace],
                    traced: bool) -> tuple[str | None, list[float] | None]:
    """Why the original's run cannot judge a candidate (None when it can), and the values it printed
    (app.stdout.values; None when none are declared)."""
    if b.returncode != 0:
        return _why(b), None
    failed = device_fault(base_results) if traced else None
    if failed is not None:
        return (f"the original program's GPU work failed ({failed}); it checks no CUDA error and went on, so "
                "its results cannot judge a candidate: run it under compute-sanitizer to find the access"), None
    printed = lc.config.app.stdout
    ok, why = check_output(b.stdout, printed)
    if not ok:
        return (f"the original program fails its own printed check ({why}), with no change made, so that "
                "check cannot judge a candidate: look at the run's arguments and inputs (app.run, "
                "app.configurations), or take the pattern out of app.stdout"), None
    base_values = printed_values(b.stdout, printed) if printed.values else None
    if printed.values and not base_values:
        return f"app.stdout.values {printed.values!r} found no value", None
    if traced and not lc.config.app.outputs and not any(t.results for t in base_results):
        return ("the baseline reads no result back from the GPU (no device-to-host copy, no managed memory): "
                "declare the files it writes in app.outputs"), None
    return None, base_values


def _unless_original_varies(case: CaseResult, runs: _CaseRuns, base: _Baseline,
                            on_gpu: list[list[ProcessTrace]] | None) -> None:
    """Keep a candidate's mismatch only if the original gives the same results twice: a program
    whose results vary run to run (float atomics, inputs from the clock) cannot be judged so. When
    the original's GPU results vary by rounding only (app.gpu_results.original_varies: rounding),
    judge the candidate's within rounding of them instead; otherwise the case is the baseline's
    failure."""
    lc = runs.lc
    varies = _original_varies(runs, base)
    if varies.why is None or (varies.gpu_only and on_gpu is None):
        return  # the original repeats what the candidate got wrong
    spec = lc.config.app.gpu_results
    why_not = ""
    if varies.gpu_only and results_mode(lc) == ValidationMode.BITWISE and spec.original_varies == "rounding":
        spread, base_results, on_gpu = _rounding_spread(runs, base.results, varies.again, on_gpu)
        if isinstance(spread, RoundingSpread):
            spread = _widened_spread(runs, base_results, spread, on_gpu)
            _judge_within_rounding(case, on_gpu, base_results, spread, lc.config.app)
            return
        why_not = f" ({spread})"
    case.status, case.max_ulps = "baseline-failed", None
    clock = ("give it a seed ({seed}): app.pin_seeds is set, so it seeds in code no library call sees" if
             lc.config.app.pin_seeds else "set app.pin_seeds: true (srand, std::random_device and cuRAND's host "
             "seed get one fixed seed) or give it a seed ({seed})")
    case.detail = (f"the original program's results differ between two runs ({varies.why}{why_not}), so comparing "
                   "results cannot judge a candidate. If they differ by rounding (floating-point "
                   "atomics, a reduction in no fixed order), declare a tolerance (app.gpu_results: "
                   "{compare: tolerance, rtol: ...}, or compare: tolerance on app.outputs); if the program "
                   f"draws its inputs from the clock, {clock}; or judge it by app.stdout and set "
                   "app.gpu_results.compare: off")


def _rounding_spread(runs: _CaseRuns, base_results: list[ProcessTrace], again: list[ProcessTrace],
                     on_gpu: list[list[ProcessTrace]]
                     ) -> tuple[RoundingSpread | str, list[ProcessTrace], list[list[ProcessTrace]]]:
    """How the original's two runs differ (original_spread), with the GPU results to judge the
    candidate by: the original's first run's and the candidate's two runs'. Where the bytes kept
    to describe a mismatch end before some results do, both programs run twice more keeping them
    whole, and those runs are compared instead."""
    spread = original_spread(base_results, again)
    if isinstance(spread, RoundingSpread) or not _cut_short(base_results + again):
        return spread, base_results, on_gpu
    whole = [runs.execute(exe, runs.work / f"{name}-{runs.tag}.out", name, whole=True)
             for exe, name in ((runs.baseline_exe, "baseline-whole-1"), (runs.baseline_exe, "baseline-whole-2"),
                               (runs.candidate_exe, "candidate-whole-1"), (runs.candidate_exe, "candidate-whole-2"))]
    failed = next((r for r, _ in whole if r.returncode != 0), None)
    if failed is not None:
        return f"a run keeping its results whole failed: {_why(failed)}", base_results, on_gpu
    return original_spread(whole[0][1], whole[1][1]), whole[0][1], [whole[2][1], whole[3][1]]


# How many more times the original runs, at most, when a candidate's result differs where two runs
# of the original happened to agree while others of its results vary by rounding.
MORE_ORIGINAL_RUNS = 3


def _widened_spread(runs: _CaseRuns, base_results: list[ProcessTrace], spread: RoundingSpread,
                    on_gpu: list[list[ProcessTrace]]) -> RoundingSpread:
    """`spread`, widened by more runs of the original where the candidate differs in results its two
    runs repeated: a float atomic's total read back every iteration (a solver's error) can come out
    the same twice by chance, and holding it to its bits judged a candidate wrong for what the
    original does too. At most MORE_ORIGINAL_RUNS runs, until every such result has varied; one that
    never does stays held to its bits."""
    suspects = set().union(*(repeated_but_different(run, base_results, spread) for run in on_gpu))
    for n in range(1, MORE_ORIGINAL_RUNS + 1):
        if not suspects:
            break
        log.info("%s: the candidate differs in GPU results the original's two runs repeated (%s); running the "
                 "original again (%d)", runs.tag, ", ".join(map(str, sorted(suspects)[:5])), n)
        r, again = runs.execute(runs.baseline_exe, runs.work / f"baseline-again-{n}-{runs.tag}.out",
                                f"baseline-again-{n}", whole=True)
        more = original_spread(base_results, again) if r.returncode == 0 else None
        if not isinstance(more, RoundingSpread):
            break
        spread = widened(spread, more)
        suspects -= set(more.dtypes)
    return spread


def _cut_short(traces: list[ProcessTrace]) -> bool:
    """Whether some result of these runs was kept only in part."""
    return any(r.kept < r.bytes for t in traces for r in t.results)


def _judge_within_rounding(case: CaseResult, runs: list[list[ProcessTrace]], base_results: list[ProcessTrace],
                           spread: RoundingSpread, app: AppConfig) -> None:
    """Set `case` from each candidate run's GPU results held within rounding of the original's,
    whose own vary run to run (app.gpu_results.original_varies: rounding)."""
    case.original_ulps, case.max_ulps = spread.ulps, None
    note = (f"the original's own GPU results vary run to run, by up to {spread.ulps} ulps, so the candidate's are "
            f"held within {ROUNDING_ULPS} ulps of them")
    worst = 0
    for n, run in enumerate(runs, start=1):
        d = within_rounding(run, base_results, spread, app.gpu_results.dtype)
        if not d.ok:
            case.status, case.detail, case.max_ulps = "mismatch", f"in the candidate's run {n}, {d.why} ({note})", \
                d.max_ulps
            return
        worst = max(worst, d.max_ulps or 0)
    case.status, case.detail = "pass", f"{note}: they differ by up to {worst} ulps"
    case.modes = _checks(app, case.gpu_results, rounding=True)


def _judge_candidate(case: CaseResult, runs: _CaseRuns, base: _Baseline) -> list[list[ProcessTrace]] | None:
    """Run the candidate twice and set `case` from how its results compare with each other and
    with the original's (`base`). Returns the GPU results of its two runs when those were what it
    failed on (None when it passed or failed another check)."""
    lc = runs.lc
    timeout = lc.config.app.timeout_s
    printed = lc.config.app.stdout
    mode, spec = results_mode(lc), lc.config.app.gpu_results
    results, gpu_results = [], []
    # a launch the GPU refused fails the candidate unless the original's run had one too (a
    # program may try a launch and fall back)
    launches = not any(e.launch for t in base.results for e in t.errors)
    for attempt in (1, 2):
        out = runs.work / f"candidate-{runs.tag}-{attempt}.out"
        for _, p in _outputs(lc, out):
            p.write_bytes(POISON)  # a candidate that does not write its output fails the comparison
        r, found = runs.execute(runs.candidate_exe, out, f"candidate-{attempt}")
        if r.returncode is None:
            case.status, case.detail = "timeout", f"killed after {timeout:g} s"
            return None
        if r.returncode != 0:
            case.status, case.detail = "failed", _why(r)
            return None
        failed = device_fault(found, launches) if runs.traced else None
        if failed is not None:
            case.status, case.detail = "failed", f"the candidate's GPU work failed in its run {attempt}: {failed}"
            return None
        ok, why = check_output(r.stdout, printed, base.values)
        if not ok:
            case.status, case.detail = ("mismatch" if why.startswith("app.stdout.values") else "failed"), why
            return None
        results.append([(o, _output_bytes(p) if p.exists() else None) for o, p in _outputs(lc, out)])
        gpu_results.append(found)
    fault = _output_files_fault(lc, results, base.files, base.out)
    if fault is not None:
        case.status, case.detail = fault
        return None
    if runs.traced:
        ok, why, _ = compare_results(gpu_results[1], gpu_results[0], spec, mode, "the candidate's first run")
        if not ok:
            case.status, case.detail = "nondeterministic", f"in the candidate's second run, {why}"
            return gpu_results
        against = compare_results(gpu_results[0], base.results, spec, mode)
        if not against.ok:
            case.status, case.detail, case.max_ulps = "mismatch", against.why, against.max_ulps
            return gpu_results
    return None


def _output_files_fault(lc: LoadedConfig, results: list[list[tuple[OutputSpec, bytes | None]]],
                        baseline: dict[str, bytes], base_out: Path) -> tuple[CaseStatus, str] | None:
    """The status and detail of the first output file (app.outputs) that the candidate's two runs
    (`results`) did not write, wrote differently, or wrote unlike the original's; None when all agree."""
    for (o, first), (_, second), (_, bpath) in zip(results[0], results[1], _outputs(lc, base_out), strict=True):
        if first is None or first == POISON:
            return "missing-output", f"{o.path} was not written"
        if first != second:
            return "nondeterministic", f"{o.path} differs between two runs of the candidate"
        ok, why = compare(first, baseline.get(str(bpath), b""), o)
        if not ok:
            return "mismatch", f"{o.path}: {why}"
    return None


class OriginalVariation(NamedTuple):
    """How a second run of the original differs from its first: `why` (None: it does not), whether
    only its GPU results differ, and that run's GPU results."""

    why: str | None
    gpu_only: bool = False
    again: list[ProcessTrace] = []


def _original_varies(runs: _CaseRuns, base: _Baseline) -> OriginalVariation:
    """Run the original once more and say how its results differ from its first run's (`base`)."""
    lc = runs.lc
    out = runs.work / f"baseline-{runs.tag}-2.out"
    r, again = runs.execute(runs.baseline_exe, out, "baseline-2")
    if r.returncode != 0:
        return OriginalVariation(f"a second run of it {'timed out' if r.returncode is None else 'failed: ' + _why(r)}")
    for (o, first), (_, second) in zip(_outputs(lc, base.out), _outputs(lc, out), strict=True):
        ok, _ = compare(_output_bytes(second) if second.exists() else b"",
                        _output_bytes(first) if first.exists() else b"", o)
        if not ok:
            return OriginalVariation(f"{o.path} is not the same")
    ok, why = check_output(r.stdout, lc.config.app.stdout, base.values)
    if not ok:
        return OriginalVariation(why)
    if runs.traced:
        diff = compare_results(again, base.results, lc.config.app.gpu_results, results_mode(lc), "its first run")
        if not diff.ok:
            return OriginalVariation(f"in its second run, {diff.why}", True, again)
    return OriginalVariation(None)


def printed_values(text: str, spec: StdoutSpec) -> list[float]:
    """The numbers app.stdout.values captures, in the order printed."""
    out = []
    for m in re.finditer(spec.values or "", text):
        try:
            out.append(float(m.group(1).replace(",", "")))
        except ValueError:
            out.append(math.nan)  # compared as a mismatch: nan equals nothing
    return out


def check_output(text: str, spec: StdoutSpec, baseline: list[float] | None = None) -> tuple[bool, str]:
    """The program's printed verdict: fail_pattern nowhere, pass_pattern somewhere, and (with
    `baseline`, the baseline's printed values) the same values within rtol/atol."""
    if spec.fail_pattern and (m := re.search(spec.fail_pattern, text)):
        line = text[text.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
        return False, f"the output matches app.stdout.fail_pattern: {line[:200]!r}"
    if spec.pass_pattern and not re.search(spec.pass_pattern, text):
        return False, f"the output does not match app.stdout.pass_pattern {spec.pass_pattern!r}"
    if spec.values and baseline is not None:
        got = printed_values(text, spec)
        if len(got) != len(baseline):
            return False, f"app.stdout.values: {len(got)} values printed, the baseline printed {len(baseline)}"
        for i, (c, b) in enumerate(zip(got, baseline, strict=True)):
            if not abs(c - b) <= spec.atol + spec.rtol * abs(b):
                return False, f"app.stdout.values: value {i + 1} is {c!r}, the baseline's {b!r}"
    return True, ""


def _why(r: RunOutcome) -> str:
    code = "killed at the timeout" if r.returncode is None else f"exit {r.returncode}"
    tail = " | ".join(r.stdout.strip().splitlines()[-3:])
    return f"{code}: {tail}" if tail else code


def _timing_tracer(lc: LoadedConfig) -> tuple[Literal["app", "tracer", "wall"], Path | None]:
    """What times the runs (timer_of) and the tracer library when that is the tracer. A tracer that
    cannot be built falls back to process wall time, unless evaluation.timer asked for it by name."""
    timer = timer_of(lc)
    if timer != "tracer":
        return timer, None
    try:
        return timer, tracer_library(lc.config.profiling.nvcc)
    except TracerError as e:
        if lc.config.evaluation.timer == "tracer":  # asked for by name: no silent substitute
            raise
        log.warning("%s; timing by process wall time instead (set evaluation.timer or app.kernel_time_regex "
                    "to choose)", e)
        return "wall", None


@dataclass
class _PairTimer:
    """The timed runs of one interleaved comparison: per side ("b" baseline, "c" candidate) the
    printed times, the wall times ("bw", "cw") and, with the tracer, each run's time per kernel."""

    lc: LoadedConfig
    cwd: Path
    baseline_exe: Path
    candidate_exe: Path
    config_name: str
    library: Path | None  # the tracer, when it times the runs
    app_timer: bool  # the time the program prints
    kernels: dict[str, str]  # the hot kernels as ncu names them -> their symbol ("" where not known)
    env: dict[str, str]
    samples: dict[str, list[float]] = field(default_factory=lambda: {"b": [], "c": [], "bw": [], "cw": []})
    per_run: dict[str, list[dict[str, float]]] = field(default_factory=lambda: {"b": [], "c": []})
    traced_keys: dict[str, str] = field(default_factory=dict)  # symbol -> the tracer's kernel_key, so far
    pairs_run: int = 0

    @property
    def kept(self) -> int:
        """How many timed pairs were kept."""
        return len(self.samples["bw"])

    def _argv(self, exe: Path) -> list[str]:
        """The timing command (app.time_run, else app.run) for `exe`."""
        app = self.lc.config.app
        return render(app.time_run or app.run, exe=exe, config=self.config_name, seed=app.seeds[0], scale=1,
                      out=os.devnull, arch="", lineinfo="", **app.values(self.config_name))

    def pair(self, keep: bool) -> None:
        """Run both binaries once, in the other order from the pair before; `keep`: record their
        times (else a warm-up pair)."""
        order = (("b", self.baseline_exe), ("c", self.candidate_exe))
        self.pairs_run += 1
        for side, exe in order if self.pairs_run % 2 else order[::-1]:
            self._run(side, exe, keep)

    def _run(self, side: str, exe: Path, keep: bool) -> None:
        """One timed process of `side`; a failed run stops the timing."""
        app = self.lc.config.app
        if self.library is not None:
            r, traces = run_traced(self._argv(exe), self.cwd, app.timeout_s, self.env, Tracing(self.library))
        else:
            r, traces = run_once(self._argv(exe), self.cwd, app.timeout_s, self.env), []
        if r.returncode != 0:
            raise EvaluationError(f"timing run failed: {shlex.join(r.argv)}: {_why(r)}")
        if not keep:
            return
        self.samples[side + "w"].append(r.seconds * 1000.0)
        if self.library is not None:
            self.per_run[side].append(traced_kernel_ms(traces, r.argv))
            self.traced_keys.update({k.mangled: kernel_key(k.kernel) for t in traces for k in t.launches})
        if self.app_timer:
            ms = printed_kernel_ms(r.stdout, app)
            if ms is None:
                raise EvaluationError(f"app.kernel_time_regex {app.kernel_time_regex!r} found nothing in "
                                      f"the output of {shlex.join(r.argv)}")
            self.samples[side].append(ms)

    def hot(self) -> set[str]:
        """The traced keys of the hot kernels given."""
        symbols = {k: symbol for k, symbol in self.kernels.items() if symbol}
        return traced_hot_keys(list(self.kernels), symbols, self.traced_keys)

    def counted(self) -> list[str]:
        """The traced kernels whose time is counted: the hot ones that ran (every kernel when none
        did), and any kernel that only the candidate runs."""
        seen_b = {k for run in self.per_run["b"] for k in run}
        seen_c = {k for run in self.per_run["c"] for k in run}
        # A hot kernel no run launched (a profile of other sources) must not count as zero time.
        return sorted(((self.hot() & (seen_b | seen_c)) or seen_b | seen_c) | (seen_c - seen_b))

    def timed(self) -> tuple[list[float], list[float]]:
        """The baseline's and the candidate's samples, in the metric the timer gives."""
        if self.library is not None:
            keys = self.counted()
            b, c = ([sum(run.get(k, 0.0) for k in keys) for run in self.per_run[side]] for side in "bc")
            return b, c
        if self.app_timer:
            return self.samples["b"], self.samples["c"]
        return self.samples["bw"], self.samples["cw"]

    def measured(self, confidence: float) -> Improvement:
        """The improvement the samples so far show."""
        return improvement(*self.timed(), confidence=confidence)

    def sample(self, runs: int, most: int, precision: float,
               confidence: float) -> tuple[Improvement, Literal["fixed", "precise", "max-runs"]]:
        """Keep `runs` pairs, then one more at a time while the ratio's interval is wider than
        `precision`, up to `most` pairs; the improvement and how the count was decided (Timing.stop)."""
        for _ in range(runs):
            self.pair(keep=True)
        result = self.measured(confidence)
        while self.kept < most and result.ratio_width > precision:
            self.pair(keep=True)
            result = self.measured(confidence)
        if most == runs:
            return result, "fixed"
        return result, "precise" if result.ratio_width <= precision else "max-runs"

    def per_kernel(self, confidence: float) -> dict[str, Improvement]:
        """With the tracer, the improvement of each hot kernel that both ran at least twice."""
        if self.library is None:
            return {}
        out = {}
        for k in sorted(self.hot()):
            b = [run[k] for run in self.per_run["b"] if k in run]
            c = [run[k] for run in self.per_run["c"] if k in run]
            if len(b) >= 2 and len(c) >= 2:
                out[k] = improvement(b, c, confidence=confidence)
        return out


def time_interleaved(lc: LoadedConfig, baseline_exe: Path, candidate_exe: Path, configuration: str | None = None,
                     kernels: dict[str, str] | None = None, warm: bool = False) -> Timing:
    """Baseline and candidate alternately, each pair in the other order from the one before (A B, B
    A, A B, ...: a drift of the machine within a pair, or an advantage of going first or second,
    falls on both sides alike), after warm-up, timed as timer_of(lc) says:
    the tracer's kernel times (the `kernels` given, the hot ones, plus any kernel only the candidate
    runs; all kernels when none are given), the time the app prints, or process wall time. Each
    process is one sample, whatever number of launches it made. At least evaluation.timed_runs
    pairs; then one more pair at a time while the speed ratio's interval is wider than
    evaluation.timing_precision, up to evaluation.max_timed_runs pairs. `kernels` maps each kernel,
    as ncu names it, to its mangled name where known ("" otherwise): the tracer spells template
    arguments unlike ncu. `warm`:
    both binaries have just run this very command (validation's runs), which stand in for the
    first warm-up pair."""
    app, ev = lc.config.app, lc.config.evaluation
    config_name = configuration or app.profile_configuration or app.configurations[0]
    runs = ev.timed_runs
    most = max(runs, ev.max_timed_runs) if ev.timing_precision > 0 else runs
    timer, library = _timing_tracer(lc)
    metric = {"app": "kernel_ms", "tracer": "traced_kernel_ms", "wall": "wall_ms"}[timer]
    app_timer = timer == "app" and app.kernel_time_regex is not None
    t = _PairTimer(lc, lc.resolve(app.workdir), baseline_exe, candidate_exe, config_name, library, app_timer,
                   kernels or {}, child_environment(run_environment(app, lc.config.profiling.nvcc)))
    warmup = max(0, ev.warmup_runs - 1) if warm else ev.warmup_runs
    for _ in range(warmup):
        t.pair(keep=False)
    result, stop = t.sample(runs, most, ev.timing_precision, ev.confidence)
    base, cand = t.timed()
    return Timing(configuration=config_name, metric=metric, baseline=base, candidate=cand,
                  baseline_wall_ms=t.samples["bw"], candidate_wall_ms=t.samples["cw"], result=result, stop=stop,
                  kernels=t.counted() if library is not None else [], per_kernel=t.per_kernel(ev.confidence),
                  warmup_pairs=warmup)
