"""The Evaluation Agent's measurements: validate a candidate binary against the baseline on every
configuration and seed, and time both, interleaved.

Validation, per (configuration, seed): run the baseline; poison each declared output file, then run
the candidate; poison again and run it a second time. The candidate passes when it exits 0 (the
app's own PASS/FAIL), writes every output, gives the same bytes both times (deterministic), and
matches the baseline bit for bit (or within the declared tolerance). A hung or crashing candidate
is killed at the app's timeout and recorded as failed.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from runner.base.config import LoadedConfig, OutputSpec
from runner.base.errors import OptimasError
from runner.base.processes import child_environment, render, run_process
from runner.evaluation.statistics import Improvement, improvement

POISON = b"\xde\xad\xbe\xef" * 256


class EvaluationError(OptimasError):
    """The baseline or a timing run could not be measured."""

    exit_code = 7


class RunOutcome(BaseModel):
    argv: list[str]
    returncode: int | None  # None: killed at the timeout
    seconds: float
    stdout: str


class CaseResult(BaseModel):
    configuration: str
    seed: int
    status: Literal["pass", "mismatch", "nondeterministic", "missing-output", "failed", "timeout", "baseline-failed"]
    detail: str = ""
    modes: list[str] = Field(default_factory=list)  # comparison mode per output


class Validation(BaseModel):
    passed: bool
    cases: list[CaseResult]

    def summary(self) -> str:
        bad = [c for c in self.cases if c.status != "pass"]
        if not bad:
            return f"passed on all {len(self.cases)} configuration/seed pairs"
        return "; ".join(f"{c.configuration}/seed {c.seed}: {c.status} ({c.detail})" for c in bad)


class Timing(BaseModel):
    configuration: str
    metric: Literal["kernel_ms", "wall_ms"]
    baseline: list[float]
    candidate: list[float]
    baseline_wall_ms: list[float]
    candidate_wall_ms: list[float]
    result: Improvement
    # How the run count was decided: "fixed" (timed_runs), "precise" (the interval got narrower than
    # evaluation.timing_precision) or "max-runs" (it did not, within evaluation.max_timed_runs).
    stop: Literal["fixed", "precise", "max-runs"] = "fixed"


def run_once(argv: list[str], cwd: Path, timeout_s: float, env: dict[str, str] | None = None) -> RunOutcome:
    """Run a binary with a minimal environment (`env`, default: child_environment()); on timeout its
    whole process group is killed and returncode is None."""
    r = run_process(argv, cwd, timeout_s, env=env, what=f"running {Path(argv[0]).name}")
    return RunOutcome(argv=argv, returncode=r.returncode, seconds=r.seconds, stdout=r.output)


def _values(data: bytes, spec: OutputSpec) -> list[np.ndarray]:
    """The numbers of an output file, per section ('optimas' format) or as one array ('raw')."""
    if spec.format == "raw":
        return [np.frombuffer(data[: len(data) - len(data) % np.dtype(spec.dtype).itemsize], dtype=spec.dtype)]
    kinds = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u8": np.uint8}
    out, pos = [], data.index(b"\n") + 1  # skip the "OPTIMAS-OUTPUT 1" line
    while pos < len(data):
        end = data.index(b"\n", pos)
        _, dtype, count = data[pos:end].decode().split()
        dt = np.dtype(kinds[dtype])
        n = int(count) * dt.itemsize
        out.append(np.frombuffer(data[end + 1:end + 1 + n], dtype=dt))
        pos = end + 1 + n
    return out


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ints = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}[a.dtype]
    ia, ib = a.view(ints).astype(np.int64), b.view(ints).astype(np.int64)
    # Map sign-magnitude to a monotonic integer line so that neighbouring floats differ by 1.
    mask = np.int64(np.iinfo(ints).max)
    ia = np.where(ia < 0, -(ia & mask), ia)
    ib = np.where(ib < 0, -(ib & mask), ib)
    return np.abs(ia - ib)


def compare(candidate: bytes, baseline: bytes, spec: OutputSpec) -> tuple[bool, str]:
    """(equal enough, why not) under the output's comparison mode."""
    if candidate == baseline:
        return True, ""
    if spec.compare == "bitwise":
        diff = next((i for i, (x, y) in enumerate(zip(candidate, baseline, strict=False)) if x != y),
                    min(len(candidate), len(baseline)))
        return False, f"bytes differ from offset {diff} ({len(candidate)} vs {len(baseline)} bytes)"
    try:
        cand, base = _values(candidate, spec), _values(baseline, spec)
    except (ValueError, KeyError) as e:
        return False, f"cannot read the values ({e})"
    if len(cand) != len(base) or any(len(c) != len(b) for c, b in zip(cand, base, strict=True)):
        return False, "different number of values"
    for k, (c, b) in enumerate(zip(cand, base, strict=True)):
        if c.dtype.kind != "f":
            if not np.array_equal(c, b):
                return False, f"section {k}: integer values differ"
            continue
        cd, bd = c.astype(np.float64), b.astype(np.float64)
        close = np.abs(cd - bd) <= spec.atol + spec.rtol * np.abs(bd)
        if spec.ulps:
            close |= _ulp_distance(c, b) <= spec.ulps
        close |= (np.isnan(cd) & np.isnan(bd))
        if not close.all():
            i = int(np.argmin(close))
            return False, f"section {k}, value {i}: {c[i]!r} vs {b[i]!r} beyond rtol={spec.rtol} atol={spec.atol} " \
                          f"ulps={spec.ulps}"
    return True, ""


def _outputs(lc: LoadedConfig, out: Path) -> list[tuple[OutputSpec, Path]]:
    return [(spec, Path(spec.path.format(out=out))) for spec in lc.config.app.outputs]


def validate(lc: LoadedConfig, baseline_exe: Path, candidate_exe: Path, work: Path) -> Validation:
    """Baseline against candidate on every configuration and seed (see the module docstring)."""
    app = lc.config.app
    cwd = lc.resolve(app.workdir)
    work.mkdir(parents=True, exist_ok=True)
    cases = []
    for cfg in app.configurations:
        for seed in app.seeds:
            cases.append(_validate_case(lc, cwd, baseline_exe, candidate_exe, work, cfg, seed))
    return Validation(passed=all(c.status == "pass" for c in cases), cases=cases)


def _argv(lc: LoadedConfig, exe: Path, cfg: str, seed: int, out: Path) -> list[str]:
    return render(lc.config.app.run, exe=exe, config=cfg, seed=seed, scale=1, out=out, arch="", lineinfo="")


def _validate_case(lc, cwd, baseline_exe, candidate_exe, work, cfg, seed) -> CaseResult:
    timeout = lc.config.app.timeout_s
    tag = f"{cfg}-{seed}"
    case = CaseResult(configuration=cfg, seed=seed, status="pass",
                      modes=[s.compare for s in lc.config.app.outputs])
    base_out = work / f"baseline-{tag}.out"
    env = child_environment(lc.config.app.env)
    b = run_once(_argv(lc, baseline_exe, cfg, seed, base_out), cwd, timeout, env)
    if b.returncode != 0:
        case.status, case.detail = "baseline-failed", _why(b)
        return case
    baseline = {str(p): p.read_bytes() for _, p in _outputs(lc, base_out) if p.exists()}
    results = []
    for attempt in (1, 2):
        out = work / f"candidate-{tag}-{attempt}.out"
        for _, p in _outputs(lc, out):
            p.write_bytes(POISON)  # a candidate that does not write its output fails the comparison
        r = run_once(_argv(lc, candidate_exe, cfg, seed, out), cwd, timeout, env)
        if r.returncode is None:
            case.status, case.detail = "timeout", f"killed after {timeout:g} s"
            return case
        if r.returncode != 0:
            case.status, case.detail = "failed", _why(r)
            return case
        results.append([(spec, p.read_bytes() if p.exists() else None) for spec, p in _outputs(lc, out)])
    for (spec, first), (_, second), (_, bpath) in zip(results[0], results[1], _outputs(lc, base_out), strict=True):
        if first is None or first == POISON:
            case.status, case.detail = "missing-output", f"{spec.path} was not written"
            return case
        if first != second:
            case.status, case.detail = "nondeterministic", f"{spec.path} differs between two runs of the candidate"
            return case
        ok, why = compare(first, baseline.get(str(bpath), b""), spec)
        if not ok:
            case.status, case.detail = "mismatch", f"{spec.path}: {why}"
            return case
    return case


def _why(r: RunOutcome) -> str:
    code = "killed at the timeout" if r.returncode is None else f"exit {r.returncode}"
    tail = " | ".join(r.stdout.strip().splitlines()[-3:])
    return f"{code}: {tail}" if tail else code


def time_interleaved(lc: LoadedConfig, baseline_exe: Path, candidate_exe: Path, configuration: str | None = None,
                     runs: int | None = None) -> Timing:
    """Baseline and candidate alternately (A B A B ...), after warm-up; kernel time when the app
    prints it (app.kernel_time_regex), else process wall time. At least `runs` (default
    evaluation.timed_runs) pairs; then one more pair at a time while the speed ratio's interval is
    wider than evaluation.timing_precision, up to evaluation.max_timed_runs pairs."""
    app, ev = lc.config.app, lc.config.evaluation
    cfg = configuration or app.profile_configuration or app.configurations[0]
    runs = runs or ev.timed_runs
    most = max(runs, ev.max_timed_runs) if ev.timing_precision > 0 else runs
    cwd = lc.resolve(app.workdir)
    template = app.profile_run or app.run
    pattern = re.compile(app.kernel_time_regex) if app.kernel_time_regex else None
    metric = "kernel_ms" if pattern else "wall_ms"

    def argv(exe: Path) -> list[str]:
        return render(template, exe=exe, config=cfg, seed=app.seeds[0], scale=1, out=os.devnull, arch="",
                      lineinfo="")

    env = child_environment(app.env)
    samples: dict[str, list[float]] = {"b": [], "c": [], "bw": [], "cw": []}

    def pair(keep: bool) -> None:
        for side, exe in (("b", baseline_exe), ("c", candidate_exe)):
            r = run_once(argv(exe), cwd, app.timeout_s, env)
            if r.returncode != 0:
                raise EvaluationError(f"timing run failed: {shlex.join(r.argv)}: {_why(r)}")
            if not keep:
                continue
            samples[side + "w"].append(r.seconds * 1000.0)
            if pattern:
                m = pattern.search(r.stdout)
                if not m:
                    raise EvaluationError(f"app.kernel_time_regex {app.kernel_time_regex!r} found nothing in "
                                          f"the output of {shlex.join(r.argv)}")
                samples[side].append(float(m.group(1)))

    def timed() -> tuple[list[float], list[float]]:
        return (samples["b"], samples["c"]) if pattern else (samples["bw"], samples["cw"])

    def measured() -> Improvement:
        return improvement(*timed(), confidence=ev.confidence)

    for _ in range(ev.warmup_runs):
        pair(keep=False)
    for _ in range(runs):
        pair(keep=True)
    result = measured()
    while len(samples["bw"]) < most and result.ratio_width > ev.timing_precision:
        pair(keep=True)
        result = measured()
    if most == runs:
        stop = "fixed"
    else:
        stop = "precise" if result.ratio_width <= ev.timing_precision else "max-runs"
    base, cand = timed()
    return Timing(configuration=cfg, metric=metric, baseline=base, candidate=cand, baseline_wall_ms=samples["bw"],
                  candidate_wall_ms=samples["cw"], result=result, stop=stop)
