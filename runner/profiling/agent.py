"""The Profiling Agent: build the application, time every kernel cheaply, then collect the
expensive evidence (roofline, PC sampling, counter sweeps) for the hot kernels only.

Steps, each recorded in the run directory (`profile/`) with its exact command in the manifest:

1. build twice: without -lineinfo for timing, through the run's build cache (the later stages
   reuse that build), and with it, in place, for profiling (`-arch` from the GPU found);
2. every launch's duration: one run under the CUPTI tracer (`profiling.hot_kernels: tracer`, the
   default), or ncu's timing pass, `ncu --metrics gpu__time_duration.sum` (one replay per launch);
   with the tracer, when candidates will be validated bit for bit, a second traced run says
   whether the program's GPU results repeat (gpu_results.json: the prompt allows reordering the
   ones that vary by rounding only);
3. hot kernels from that (alpha of total time);
4. targeted collection of the hot kernels (`-k regex:^(a|b)$`, by mangled name when the tracer
   named them, launch skip/count, roofline and source sections, imported source) in one profiler
   run, its source page exported as CSV: at most profiling.max_targeted_kernels of them, the
   hottest instance of each source function first (a program may spread its time over dozens of
   instances of one template, each replayed 20 or more times; they are one source to edit);
5. counter runs of the hottest kernel the sources define for eOMP: over N problem sizes when the
   command takes {scale} and the kernel's work follows it (another instance of its template where
   a size launches that one instead), else one launch of each of its distinct launch
   configurations, else one run (profiling.counter_plan says which, and why).
"""

from __future__ import annotations

import contextvars
import functools
import json
import re
import shlex
import shutil
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from runner.analysis.hot import (
    KernelTime,
    hot_functions,
    hot_kernels_line,
    left_out_of_profiling,
    profiled_instances,
    select_hot_kernels,
    spelled_as,
    widen_to_editable,
)
from runner.base.config import Config
from runner.base.context import RunContext
from runner.base.errors import ProfilingError
from runner.base.gpu import detect_gpu, require_tool
from runner.base.processes import (
    CommandResult,
    child_environment,
    placeholders,
    product_placeholder,
    render,
    run_command,
    run_process,
    size_share,
)
from runner.base.progress import in_stage, progress_for
from runner.base.runstore import atomic_write_text
from runner.base.sandbox import sandbox_open
from runner.base.validation_modes import ValidationMode
from runner.profiles.counter_plan import (
    MAX_LAUNCH_CONFIGURATIONS,
    PLAN_FILE,
    CounterPlan,
    distinct_configurations,
    work_changes,
    work_of,
)
from runner.profiles.model import short_kernel_name
from runner.profiles.readers import NcuRawCsvReader, read_any
from runner.profiles.readers.report import report_kernel_names
from runner.profiles.readers.trace import profile_of
from runner.scan.cuda_source import defined_kernels, kernel_key, template_symbol_prefix
from runner.scan.size_constants import workspace_texts
from runner.toolchain.builder import Builder, copy_workspace
from runner.toolchain.compiler import CompileResult
from runner.toolchain.nvcc_shim import build_environment
from runner.tracing.library import TracerError, run_environment, trace_environment, tracer_library
from runner.tracing.trace import Launches, ProcessTrace, ResultsVariation, device_fault, read_traces
from runner.validation.compare import MISMATCH_BYTES, MISMATCH_EACH, ROUNDING_ULPS, results_variation

progress = progress_for("profiling")

REPLAY_PASSES = 20  # kernel replays of the targeted sections at least (ncu printed "20 passes" on the H100)
SLOW_COLLECTION_NS = 60e9  # a collection expected to take longer than this is announced with its estimate
PERM_HELP = ("ncu is not allowed to read the GPU's performance counters (ERR_NVGPUCTRPERM). Run as root, or let "
             "all users profile: add 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to a file in "
             "/etc/modprobe.d/ and reload the nvidia module (or reboot); in a container, start it with "
             "--cap-add=SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM")


def counter_scales(config: Config) -> list[float]:
    """The problem-size factors of the counter runs: profiling.counter_scales when the profiled
    command passes {scale} (alone or as {n*scale}) or app.size_constants names the constants that
    set the size, else only 1 (the runs would all be the same)."""
    return list(config.profiling.counter_scales) if scaled_inputs(config) else [1.0]


def scaled_inputs(config: Config) -> list[str]:
    """What the counter runs scale, in words: `{scale}` when the profiled command passes it, and
    the size constants."""
    names = placeholders(config.app.profile_run or config.app.run or "")
    takes_scale = any(n == "scale" or "scale" in (product_placeholder(n) or ()) for n in names)
    return (["{scale}"] if takes_scale else []) + list(config.app.size_constants)


def scaled_sizes(template: str) -> int:
    """How many sizes a command template scales (`{n*scale}` each), or 0 when it passes the bare
    `{scale}` too: then the program maps the scale to its sizes itself and gets it as it is."""
    names = placeholders(template)
    if "scale" in names:
        return 0
    return sum(1 for n in names if "scale" in (product_placeholder(n) or ()))


def _refuse_failed_gpu_work(traces: list[ProcessTrace], argv: list[str]) -> None:
    """ProfilingError when the original program's GPU work failed in its traced run (a kernel that
    faulted, no kernel image for this GPU) although the process may have exited 0: a program that
    checks no CUDA error goes on, and its profile and results would be those of a failure."""
    fault = device_fault(traces)
    if fault is None and all(bool((t.table().duration_ns() <= 0).all()) for t in traces):
        fault = "no kernel launch finished (every one has zero duration), and no watched call reported why"
    if fault is not None:
        raise ProfilingError(f"the original program's GPU work failed in its traced run: {fault}. The program "
                             "checks no CUDA error, so it went on (and may have exited 0), but there is nothing "
                             "correct to profile or to compare a candidate with. Run it under compute-sanitizer "
                             f"to find the failing access: compute-sanitizer {shlex.join(argv)}")


class NothingProfiled(ProfilingError):
    """ncu ran the program but no launch matched its kernel filter."""


def check_ncu_output(result: CommandResult, log: Path, what: str, report: Path | None = None) -> None:
    """Turn ncu's failure modes into errors that say what to do. `report`: the report of a pass that
    ends the program once its launches are profiled (ncu --kill): the program's exit code then says
    it was stopped, and the report holding its launches is the pass's success."""
    out = result.output
    if "ERR_NVGPUCTRPERM" in out:
        raise ProfilingError(PERM_HELP)
    if "No kernels were profiled" in out:
        raise NothingProfiled(f"{what}: no kernel matched the filter, so nothing was profiled (log: {log})")
    if result.returncode not in (0, None) and report is not None and report.is_file() and report.stat().st_size:
        progress(f"{what}: ncu ended the program once its launches were profiled (exit code {result.returncode})")
        return
    if result.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-8:])
        raise ProfilingError(f"{what} failed with exit code {result.returncode}; the application or ncu failed "
                             f"under the profiler (log: {log}). Last lines:\n{tail}")


def kernel_regex(*demangled: str) -> str:
    """An ncu `-k regex:` that matches exactly these demangled kernel names."""
    return "regex:^(" + "|".join(re.escape(k) for k in demangled) + ")$"


@dataclass(frozen=True)
class Step:
    """One command of the collection: what it runs, its name (in the manifest, and its log's), its
    time limit and what progress and errors call it."""

    argv: list[str]
    name: str
    timeout_s: float
    what: str


class ProfilingAgent:
    """Collects the profiles one run of the pipeline needs, into `run/profile/`."""

    def __init__(self, ctx: RunContext, known_variation: tuple[ResultsVariation, str] | None = None):
        """Profiles `ctx.lc`'s app on `ctx.configuration` into `ctx.run`. `known_variation`: how the
        program's GPU results vary from run to run, already known (the closed loop's re-profile:
        the evaluation ran the candidate twice and compared), with where it was found; the traced
        run is then not repeated to find it out."""
        lc = self.lc = ctx.lc
        self.ctx = ctx
        self.known_variation = known_variation
        self.config = lc.config
        run = self.run = ctx.run
        self.build_cache = ctx.build_cache
        self.dir = run.stage_dir("profile")
        self.commands: list[dict] = []
        self._launch_ns: dict[str, float] = {}  # each kernel's mean launch time in the traced run (_hot_kernels)
        self._ranked: list[KernelTime] = []  # every kernel by time, as _hot_kernels ranked them
        self.traced_launches = Launches.empty()  # the traced run's launches, when the tracer timed them
        self._scaling_texts: dict[str, str] | None = None  # the workspace's sources, for app.size_constants
        app = self.config.app
        if not app.build or not app.run:
            raise ProfilingError(f"{lc.path}: app.build and app.run are needed to profile (or give recorded "
                                 "profiles in the `profiles` section)")
        if not app.configurations:
            raise ProfilingError(f"{lc.path}: app.configurations is empty; name at least one configuration")
        self.workdir = lc.resolve(app.workdir)
        if not self.workdir.is_dir():
            raise ProfilingError(f"{lc.path}: app.workdir {self.workdir} is not a folder")
        self.configuration = ctx.configuration or app.profile_configuration or app.configurations[0]
        if self.configuration not in app.configurations:
            raise ProfilingError(f"{lc.path}: configuration {self.configuration!r} is not one of "
                                 f"app.configurations {app.configurations}")

    @functools.cached_property
    def _run_env(self) -> dict[str, str]:
        """What every run of the app gets besides the minimal environment (app.env; app.pin_seeds)."""
        return run_environment(self.config.app, self.config.profiling.nvcc)

    def _exec(self, step: Step, ncu: bool = False, env: dict[str, str] | None = None, build: bool = False,
              cwd: Path | None = None, stopped: Path | None = None) -> CommandResult:
        """Run a command of the collection (in app.workdir, else `cwd`), recorded in the manifest; a
        failure is a ProfilingError saying what failed. `stopped`: the report of an ncu pass that
        ends the program once its launches are profiled (_stop_when_profiled)."""
        argv, name, timeout_s, what = step.argv, step.name, step.timeout_s, step.what
        cwd = cwd or self.workdir
        log = self.dir / "logs" / f"{name}.log"
        progress(f"{what}: {shlex.join(argv)}")
        declared = {**(self.config.app.env if build else self._run_env), **(env or {})}
        environment = (build_environment(declared, self.config.profiling.nvcc, compat=self.config.app.legacy_cuda)
                       if build
                       else child_environment(declared))
        result = run_command(argv, cwd, timeout_s, log, progress, what, environment)
        self._record(result.manifest_entry(name, cwd, self.run.path))
        if ncu:
            check_ncu_output(result, log, what, stopped)
        elif result.returncode != 0:
            tail = "\n".join(result.output.strip().splitlines()[-8:])
            raise ProfilingError(f"{what} failed with exit code {result.returncode} (log: {log}):\n{tail}")
        return result

    def _stop_when_profiled(self) -> list[str]:
        """ncu's --kill where profiling.stop_when_profiled asks for it: the program ends once the pass
        has profiled the launches it counts (a CPU check after them, often most of a run, is skipped)."""
        return ["--kill", "yes"] if self.config.profiling.stop_when_profiled else []

    def _app_argv(self, exe: Path, scale: float = 1.0) -> list[str]:
        """The profiled command at counter scale `scale`: k sizes it scales ({n*scale}) each take
        the scale's k-th root (size_share), so the problem's work follows the scale."""
        app = self.config.app
        template = app.profile_run or app.run
        return render(template, exe=exe, config=self.configuration, seed=app.seeds[0],
                      scale=size_share(scale, scaled_sizes(template)), out=self.dir / "outputs" / "profiled.out",
                      arch=self.gpu.arch, lineinfo="",
                      **app.values(self.configuration))

    def _record(self, entry: dict) -> None:
        """One command in the run's manifest, saved at once (a run that dies later keeps it)."""
        self.commands.append(entry)
        self.run.manifest.setdefault("commands", []).append(entry)
        self.run.save()

    def _export(self, ncu: str, report: Path, page: str) -> Path:
        extra = ["--print-units", "base"] if page == "raw" else ["--print-source", "cuda,sass"]
        dst = report.with_name(f"{report.stem}_{page}.csv")
        argv = [ncu, "-i", str(report), "--csv", "--page", page, *extra]
        name = f"export-{report.stem}-{page}"
        timeout = self.config.profiling.timeout_s
        r = run_process(argv, self.workdir, timeout, log=self.dir / "logs" / f"{name}.log", stdout=dst,
                        what=f"exporting the {page} page of {report.name}")
        entry = r.manifest_entry(name, self.workdir, self.run.path)
        entry["output"] = str(dst.relative_to(self.run.path))
        self._record(entry)
        if r.timed_out:
            raise ProfilingError(f"exporting the {page} page of {report} timed out after {timeout:g} s and was killed; "
                                 "raise profiling.timeout_s if it needs longer")
        if r.returncode != 0:
            raise ProfilingError(f"exporting the {page} page of {report} failed: {r.output.strip()[-500:]}")
        return dst

    @in_stage("profiling")
    def collect(self) -> dict[str, list[Path]]:
        """Run every step (the module docstring numbers them); returns the analysis inputs by role."""
        ncu = self._find_tools()
        try:
            exe_prof, exe_time = self._build()  # 1.
            timing_files, launches, mangled, checked = self._launch_durations(ncu, exe_prof, exe_time)  # 2.
            hot, files = self._hot_kernels(launches)  # 3.
            in_depth = self._in_depth(hot, files)
            reports, sources, spelled = self._targeted_collection(ncu, exe_prof, in_depth, mangled)  # 4.
            counters, plan_file = self._counter_runs(ncu, exe_prof, hot, files, mangled)  # 5.
        finally:  # the reports hold the sources they need (--import-source)
            shutil.rmtree(self.dir / "workspace", ignore_errors=True)
        inputs = {"timing": timing_files, "report": reports, "counters": counters, "gpu_results": checked,
                  "counter_plan": [plan_file], "source_roots": [self.source_roots]}
        self.run.stage_done("profile", [*timing_files, *reports, *sources, *counters, *checked, plan_file,
                                        self.source_roots],
                            gpu=self.gpu.name,
                            hot_kernels=[spelled.get(k, k) for k in hot],
                            profiled_kernels=[spelled.get(k, k) for k in in_depth], configuration=self.configuration,
                            inputs={role: [str(p.relative_to(self.run.path)) for p in paths]
                                    for role, paths in inputs.items()})
        return inputs

    def _find_tools(self) -> str:
        """ncu and nvcc, and the GPU (recorded in the manifest); returns ncu's path."""
        prof = self.config.profiling
        ncu = require_tool("ncu", prof.ncu)
        require_tool("nvcc", prof.nvcc)
        self.gpu = detect_gpu(prof.nvidia_smi)
        self.run.manifest["device"] = {"name": self.gpu.name, "compute_capability": self.gpu.compute_capability,
                                       "driver": self.gpu.driver}
        progress(f"GPU: {self.gpu.name} ({self.gpu.arch}, driver {self.gpu.driver})")
        return ncu

    def _build(self) -> tuple[Path, Path]:
        """Step 1: the timing build and the profiling build (-lineinfo); returns their executables, the
        profiling one first."""
        app = self.config.app
        bins = self.dir / "bin"
        bins.mkdir(exist_ok=True)
        exe_prof, exe_time = bins / f"{app.name}-lineinfo", bins / f"{app.name}"
        # Through the run's build cache: the proposal stage's compiler feedback and the evaluation's
        # baseline are this same build.
        self._timing_build(exe_time)
        # In a copy kept until the last ncu run: -lineinfo records the sources' paths, and ncu reads
        # them from there to import them into each report. source-roots.json maps the copy's paths
        # back to the workspace's for the analysis.
        copy = self.dir / "workspace"
        shutil.rmtree(copy, ignore_errors=True)  # an earlier attempt's
        cwd = copy_workspace(self.lc, copy)
        space, _ = self.lc.dirs
        self.source_roots = self.dir / "source-roots.json"
        roots = {str(copy): str(space), str(copy.resolve()): str(space.resolve())}
        atomic_write_text(self.source_roots, json.dumps(roots, indent=2) + "\n")
        argv = render(app.build, exe=exe_prof, arch=self.gpu.arch, lineinfo="-lineinfo", config=self.configuration,
                      seed=app.seeds[0], scale=1, out="", **app.values(self.configuration))
        self._exec(Step(argv, "build-profiling", app.timeout_s, "build-profiling"), build=True, cwd=cwd)
        return exe_prof, exe_time

    def _launch_durations(self, ncu: str, exe_prof: Path, exe_time: Path
                          ) -> tuple[list[Path], pd.DataFrame, dict[str, str], list[Path]]:
        """Step 2, every launch's duration: one run under the tracer, or ncu's timing pass (a replay per
        launch). Returns the timing files, the launches, the tracer's kernel names -> their mangled
        names (for ncu's -k; empty without the tracer) and the comparison of two runs' GPU results
        (when made)."""
        prof = self.config.profiling
        traced = None
        if prof.hot_kernels == "tracer":
            try:
                traced = self._traced_timing(exe_time)
            except TracerError as e:
                progress(f"{e}; timing every launch with ncu instead (profiling.hot_kernels: ncu)")
        if traced is not None:
            return traced
        timing = self.dir / "timing"
        argv = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-f", "-o", str(timing),
                *self._app_argv(exe_prof)]
        self._exec(Step(argv, "timing", prof.timeout_s, "timing pass"), ncu=True)
        timing_files = [self._export(ncu, timing.with_suffix(".ncu-rep"), "raw")]
        launches = NcuRawCsvReader().read(timing_files[0]).launches
        return timing_files, launches, {}, []

    def _hot_kernels(self, launches: pd.DataFrame) -> tuple[list[str], dict[str, str]]:
        """Step 3: the hot kernels (alpha of total time; app.kernels when the config names them), and the
        sources with their local headers (which kernels an edit can reach)."""
        app = self.config.app
        kernels = select_hot_kernels(launches, self.config.analysis.alpha)
        hot = [k.kernel for k in kernels if k.hot]
        files = self.ctx.code  # the sources and their local headers: which kernels an edit can reach
        if app.kernels:
            hot = restrict_to_configured([k.kernel for k in kernels], app.kernels)
        else:
            hot = self._with_editable(kernels, hot, files)
        progress(f"hot kernels: {hot_kernels_line(hot)}")
        self._launch_ns = {k.kernel: k.total_ns / k.launches for k in kernels if k.launches}
        self._ranked = kernels
        return hot, files

    def _in_depth(self, hot: list[str], files: dict[str, str]) -> list[str]:
        """The hot kernels the targeted collection profiles: at most profiling.max_targeted_kernels,
        the hottest instance of each source function first, those `files` define before a library's
        (profiled_instances); says what it leaves out, and why."""
        most = self.config.profiling.max_targeted_kernels
        chosen = profiled_instances(hot, most, defined_kernels(hot, files))
        if len(chosen) < len(hot):
            marked = [k.model_copy(update={"hot": k.kernel in hot}) for k in self._ranked]
            progress(left_out_of_profiling(hot_functions(marked, chosen), most))
        return chosen

    def _say_if_slow(self, pending: list[str]) -> None:
        """Say before a collection that will take minutes: Nsight Compute replays each profiled launch
        once per pass (the targeted sections take REPLAY_PASSES or more), so a launch of seconds (a
        serial loop, `<<<1, 1>>>`) makes a collection of minutes."""
        per_launch = sum(self._launch_ns.get(k, 0.0) for k in pending) * self.config.profiling.launch_count
        if per_launch * REPLAY_PASSES < SLOW_COLLECTION_NS:
            return
        progress(f"each profiled launch of {', '.join(pending[:3])} took {per_launch / 1e9:.2f} s in the traced run; "
                 f"Nsight Compute replays it once per pass ({REPLAY_PASSES} or more), so this collection takes about "
                 f"{per_launch * REPLAY_PASSES / 60e9:.0f} min or more (a smaller problem size profiles faster: "
                 "app.profile_run)")

    def _targeted_collection(self, ncu: str, exe: Path, hot: list[str], mangled: dict[str, str]
                             ) -> tuple[list[Path], list[Path], dict[str, str]]:
        """Step 4: one ncu run for the `hot` kernels given (_in_depth's), then one per kernel it missed.
        Returns the reports, their source pages (CSV) and each such kernel's name in ncu's reports."""
        prof = self.config.profiling
        sections = [a for s in prof.targeted_sections for a in ("--section", s)]
        reports, sources = [], []
        pending = list(hot)
        spelled: dict[str, str] = {}  # hot kernel -> its name in ncu's reports
        while pending:
            i = len(reports)
            out = self.dir / f"hot{i}"
            argv = [ncu, "--clock-control", "none", *self._kernel_filter(pending, mangled),
                    "--launch-skip", str(prof.launch_skip), "--launch-count", str(prof.launch_count * len(pending)),
                    *self._stop_when_profiled(), *sections, "--import-source", "yes", "-f", "-o", str(out),
                    *self._app_argv(exe)]
            names = pending[0] if len(pending) == 1 else f"{len(pending)} hot kernels"
            self._say_if_slow(pending)
            rep = out.with_suffix(".ncu-rep")
            self._exec(Step(argv, f"targeted-{i}", prof.timeout_s, f"targeted collection of {names}"), ncu=True,
                       stopped=rep if prof.stop_when_profiled else None)
            reports.append(rep)
            sources.append(self._export(ncu, rep, "source"))  # for the record; the analysis reads the report
            captured = report_kernel_names(rep)  # symbol -> ncu's name
            by_key = {kernel_key(name): name for name in captured.values()}
            got = {k: ncu_name for k in pending if (ncu_name := spelled_as(k, mangled.get(k), captured, by_key))}
            if not got:
                raise ProfilingError(f"targeted collection captured none of {pending} (it captured "
                                     f"{sorted(captured.values())}); see {self.dir / 'logs'}")
            spelled.update(got)
            # A kernel launched many times before another one appears can use up the launch count.
            pending = [k for k in pending if k not in got]
        return reports, sources, spelled

    def _counter_runs(self, ncu: str, exe: Path, hot: list[str], files: dict[str, str],
                      mangled: dict[str, str]) -> tuple[list[Path], Path]:
        """The counter reports eOMP reads and the plan saying what they are (see counter_plan):
        a size sweep when the command takes {scale} and the kernel's work follows it, else one
        launch of each distinct launch configuration, else one run."""
        prof = self.config.profiling
        cdir = self.dir / "counters"
        cdir.mkdir(exist_ok=True)
        target = counter_target(hot, files)
        if target != hot[0]:
            progress(f"counter runs profile {short_kernel_name(target)}, the hottest kernel defined in the "
                          f"sources ({short_kernel_name(hot[0])} is not, so no edit could act on its counters)")
        filters = [self._kernel_filter([target], mangled)]
        # Programs pick a template instance by problem size (reduction's power-of-two flag): at
        # another size the hot instance may never run, another instance of its template does.
        family = template_symbol_prefix(mangled.get(target, ""))
        if family:
            filters.append(["--kernel-name-base", "mangled", "-k", f"regex:^{re.escape(family)}"])
        scales = counter_scales(self.config)
        swept: list[Path] = []
        if len(scales) > 1:
            swept, ran, why = self._size_sweep(ncu, exe, target, filters, scales)
            if len(swept) >= self.config.analysis.counters.min_runs:
                plan = CounterPlan(source="sizes", kernel=target, runs=len(swept), scales=ran,
                                   constants=list(self.config.app.size_constants))
                return swept, self._write_plan(plan)
            why = why or f"only {len(swept)} scale(s) ran"
        else:
            which = "app.profile_run" if self.config.app.profile_run else "app.run"
            why = f"{which} takes no {{scale}} and app.size_constants names none, so no size sweep"
        configs = distinct_configurations(self.traced_launches, target, mangled.get(target, ""))
        if self.config.analysis.counters.min_runs <= configs <= MAX_LAUNCH_CONFIGURATIONS:
            progress(f"{why}; the traced run launched {short_kernel_name(target)} with {configs} distinct launch "
                          "configurations: profiling one launch of each for eOMP")
            out = cdir / "launch_configs"
            argv = [ncu, "--clock-control", "none", *filters[-1], "--filter-mode", "per-launch-config",
                    "--launch-count", "1", *self._sections(prof.counter_sections), "-f", "-o", str(out),
                    *self._app_argv(exe)]
            self._exec(Step(argv, "counters-launch-configs", prof.timeout_s,
                            f"counter runs of {configs} launch configurations"), ncu=True)
            report = out.with_suffix(".ncu-rep")
            runs = len(read_any(report).launches)
            plan = CounterPlan(source="launch configurations", kernel=target, runs=runs)
            return [report], self._write_plan(plan)
        if configs > MAX_LAUNCH_CONFIGURATIONS:
            why += (f"; the kernel ran with {configs} launch configurations, more than the "
                    f"{MAX_LAUNCH_CONFIGURATIONS} profiled")
        elif self.traced_launches:
            why += (f"; the traced run launched {short_kernel_name(target)} with {configs} launch "
                    f"configuration{'s' if configs != 1 else ''}")
        progress(f"{why}: one counter run (eOMP needs runs that differ: pass {{n*scale}} for a size argument n, "
                 "or name the constants that set the size in app.size_constants)")
        # the one run is the app's own size: the sweep's first, when there was one
        reports = swept[:1] or self._size_sweep(ncu, exe, target, filters, [1.0])[0]
        for extra in swept[1:]:
            extra.unlink(missing_ok=True)
        plan = CounterPlan(source="one run", kernel=target, runs=len(reports), why=why)
        return reports, self._write_plan(plan)

    def _size_sweep(self, ncu: str, exe: Path, target: str, filters: list[list[str]],
                    scales: list[float]) -> tuple[list[Path], list[float], str]:
        """Counter runs at these scales, the app's own size (1) first. Returns the reports, their
        scales, and why the sweep stopped short ('' when it did not): a scale the program fails at
        is left out; when the second run's instructions executed equal the first's, the scale does
        not reach the kernel's work and the sweep ends there."""
        order = self._distinct_scales(exe, sorted(scales, key=lambda s: (s != 1.0, s)))
        reports: list[Path] = []
        ran: list[float] = []
        failed: list[str] = []
        first_work = None
        prebuilt: dict[float, Future[tuple[CompileResult, dict, Path, float]]] = {}
        for scale in order:
            # ncu appends .ncu-rep to -o; a dot in the name ("scale_0.25") would read as a suffix.
            out = self.dir / "counters" / f"scale_{scale:g}".replace(".", "_")
            try:
                built = (exe if scale == 1.0 else self._recorded(prebuilt[scale].result()) if scale in prebuilt
                         else self._scaled_build(scale, exe))
                self._counter_run(ncu, built, target, filters, scale, out)
            except ProfilingError as e:
                if scale == 1.0:
                    raise
                failed.append(f"{scale:g}")
                progress(f"counter run at scale {scale:g} failed, left out of the sweep: {str(e)[:200]}")
                continue
            report = out.with_suffix(".ncu-rep")
            work = work_of(read_any(report))
            if scale == 1.0:
                first_work = work
            elif len(ran) == 1 and not work_changes(first_work, work):
                report.unlink(missing_ok=True)
                scaled = ", ".join(scaled_inputs(self.config))
                return reports, ran, (f"the kernel's instructions executed did not change with {scaled} "
                                      f"({first_work:.4g} at scale 1 and {work:.4g} at {scale:g}), so what was "
                                      "scaled is not its problem size" if first_work and work else
                                      "the counter runs do not hold instructions executed, so the sweep cannot "
                                      "be checked")
            reports.append(report)
            ran.append(scale)
            if len(ran) == 2 and self.config.app.size_constants and not sandbox_open():
                # the sweep is confirmed: the other scales' builds go on side by side (each a few
                # seconds of nvcc) while the GPU profiles, each thread in a copy of this one's
                # context. Not while the code runs sandboxed (the App): a build copying the
                # workspace beside a sandboxed command could follow links that command plants.
                rest = [s for s in order if s not in ran and f"{s:g}" not in failed]
                pool = ThreadPoolExecutor(max_workers=max(1, min(4, len(rest))))
                prebuilt = {s: pool.submit(contextvars.copy_context().run, self._compile_scaled, s, exe)
                            for s in rest}
                pool.shutdown(wait=False)
        why = f"the program failed at scale(s) {', '.join(failed)}" if failed else ""
        if len(order) == 1 < len(scales):
            why = "the profiled command is the same at every scale (its sizes round to themselves)"
        return reports, ran, why

    def _distinct_scales(self, exe: Path, order: list[float]) -> list[float]:
        """The scales whose profiled command differs from every earlier one's (a small size rounds
        to the same whole size at two scales); all of them when constants are rebuilt per scale."""
        if self.config.app.size_constants:
            return order
        seen: dict[tuple[str, ...], float] = {}
        for scale in order:
            seen.setdefault(tuple(self._app_argv(exe, scale)), scale)
        kept = list(seen.values())
        if len(kept) < len(order):
            dropped = ", ".join(f"{s:g}" for s in order if s not in kept)
            progress(f"scale(s) {dropped} give the same command as another scale: left out of the sweep")
        return kept

    def _scaled_build(self, scale: float, exe: Path) -> Path:
        """The program rebuilt with app.size_constants times `scale` (Builder.at_scale), recorded in
        the manifest; `exe` when there are none to scale. A source that does not build at that
        size is a ProfilingError, as a run that fails there is."""
        if not self.config.app.size_constants:
            return exe
        return self._recorded(self._compile_scaled(scale, exe))

    def _compile_scaled(self, scale: float, exe: Path) -> tuple[CompileResult, dict, Path, float]:
        """The scaled build itself (Builder.at_scale), safe to run in a thread once the workspace's
        sources are read (the sweep's first scaled build, in the stage's thread): the result, its
        manifest entry, the binary and the scale. It records nothing."""
        if self._scaling_texts is None:
            self._scaling_texts = workspace_texts(*self.lc.dirs, self.lc.parts)
        label = f"scale_{scale:g}".replace(".", "_")
        log = self.dir / "logs" / f"build-counters-{label}.log"
        names = self.config.app.size_constants
        progress(f"build at scale {scale:g}: {', '.join(names)} times {size_share(scale, len(names)):g} "
                 "(a copy of the workspace)")
        t0 = time.monotonic()
        scaled = exe.with_name(f"{exe.name}-{label}")
        try:
            built = self._builder().at_scale(self._scaling_texts, scale, scaled, log, configuration=self.configuration)
        except ValueError as e:
            raise ProfilingError(f"{self.lc.path}: {e}") from None
        entry = {"name": f"build-counters-{label}", "argv": built.command, "returncode": 0 if built.ok else 1,
                 "seconds": round(time.monotonic() - t0, 3), "timed_out": False, "cached": built.cached,
                 "log": str(log.relative_to(self.run.path))}
        return built, entry, scaled, scale

    def _recorded(self, compiled: tuple[CompileResult, dict, Path, float]) -> Path:
        """A scaled build's entry in the manifest (from the stage's own thread); its binary, or a
        ProfilingError when it failed."""
        built, entry, scaled, scale = compiled
        self._record(entry)
        if not built.ok:
            tail = "\n".join(built.output.strip().splitlines()[-4:])
            raise ProfilingError(f"the build with {', '.join(self.config.app.size_constants)} times {scale:g} failed "
                                 f"(log: {self.run.path / entry['log']}):\n{tail}")
        return scaled

    def _counter_run(self, ncu: str, exe: Path, target: str, filters: list[list[str]], scale: float,
                     out: Path) -> None:
        """One counter run of the target's first launch at this scale (another instance of its
        template when the program does not launch that one at this size)."""
        prof = self.config.profiling
        for n, kernel_filter in enumerate(filters):
            argv = [ncu, "--clock-control", "none", *kernel_filter, "--launch-skip", str(prof.launch_skip),
                    "--launch-count", "1", *self._stop_when_profiled(), *self._sections(prof.counter_sections),
                    "-f", "-o", str(out), *self._app_argv(exe, scale)]
            name = f"counters-{scale:g}" + ("-template" if n else "")
            report = out.with_suffix(".ncu-rep")
            report.unlink(missing_ok=True)  # the template filter's try must not pass on the first one's report
            try:
                self._exec(Step(argv, name, prof.timeout_s, f"counter run at scale {scale:g}"), ncu=True,
                           stopped=report if prof.stop_when_profiled else None)
                return
            except NothingProfiled:
                if n + 1 == len(filters):
                    raise
                progress(f"at scale {scale:g} the program does not launch {short_kernel_name(target)}: "
                              "profiling the first launch of another instance of its template instead")

    @staticmethod
    def _sections(names: list[str]) -> list[str]:
        return [a for s in names for a in ("--section", s)]

    def _write_plan(self, plan: CounterPlan) -> Path:
        self.run.manifest["counter_plan"] = plan.model_dump()
        return self.run.write_text("profile", f"counters/{PLAN_FILE}", plan.model_dump_json(indent=2) + "\n")

    def _with_editable(self, kernels: list[KernelTime], hot: list[str], files: dict[str, str]) -> list[str]:
        """The hot kernels, and when the sources define none of them (a library's kernels take the
        time), the hottest kernels the sources do define: the analysis widens the same way."""
        defined = defined_kernels([k.kernel for k in kernels], files)
        widened = [k.kernel for k in widen_to_editable(kernels, defined, self.config.analysis.alpha) if k.hot]
        added = [k for k in widened if k not in hot]
        if added:
            share = sum(k.share for k in kernels if k.kernel in added)
            progress(f"none of the hot kernels is defined in the sources ({', '.join(map(short_kernel_name, hot))}"
                          f"); also profiling the hottest ones that are: {', '.join(map(short_kernel_name, added))} "
                          f"({share:.1%} of kernel time, the most an edit of them can save)")
        return widened

    def _builder(self) -> Builder:
        """How this run's builds are made: for the GPU profiled, through the run's build cache."""
        return Builder(self.lc, self.gpu.arch, self.build_cache)

    def _timing_build(self, exe: Path) -> None:
        """The app without line info, for the traced run, through the run's build cache."""
        name, log = "build-timing", self.dir / "logs" / "build-timing.log"
        progress("build-timing (the run's build cache)")
        log.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        built = self._builder().compile({}, log, exe=exe, configuration=self.configuration)
        self._record({"name": name, "argv": built.command, "returncode": 0 if built.ok else 1,
                      "seconds": round(time.monotonic() - t0, 3), "timed_out": False, "cached": built.cached,
                      "log": str(log.relative_to(self.run.path))})
        if not built.ok:
            tail = "\n".join(built.output.strip().splitlines()[-8:])
            raise ProfilingError(f"build-timing failed (log: {log}):\n{tail}")

    def _kernel_filter(self, names: list[str], mangled: dict[str, str]) -> list[str]:
        """ncu's kernel filter for these kernels: by mangled name when the tracer named them (its
        demangler spells them differently from ncu's), else by ncu's demangled name."""
        if mangled and all(n in mangled for n in names):
            return ["--kernel-name-base", "mangled", "-k", kernel_regex(*(mangled[n] for n in names))]
        return ["--kernel-name-base", "demangled", "-k", kernel_regex(*names)]

    def _traced_timing(self, exe: Path) -> tuple[list[Path], pd.DataFrame, dict[str, str], list[Path]]:
        """Run the app once under the CUPTI tracer: its record files, its launches, the mangled name
        of each kernel, and (when candidates will be validated bit for bit) gpu_results.json, how a
        second run's GPU results compare with the first's."""
        library = tracer_library(self.config.profiling.nvcc)
        app = self.config.app
        check = app.gpu_results_mode() == ValidationMode.BITWISE and app.gpu_results.original_varies == "rounding"
        again = check and self.known_variation is None  # a second traced run, to compare results with
        keep = dict(keep_bytes=MISMATCH_BYTES, keep_each=MISMATCH_EACH) if again else {}
        folder = self.dir / "trace"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        self._exec(Step(self._app_argv(exe), "trace", app.timeout_s, "traced run (every kernel's duration)"),
                   env=trace_environment(library, folder, **keep))
        traces = read_traces(folder)
        if not any(t.launches for t in traces):
            raise ProfilingError(f"the traced run launched no kernel the tracer saw (records: {folder}; the tracer's "
                                 f"messages start with '[optimas tracer]' in {self.dir / 'logs' / 'trace.log'}); set "
                                 "profiling.hot_kernels: ncu to time launches with ncu instead")
        _refuse_failed_gpu_work(traces, self._app_argv(exe))
        self.traced_launches = Launches.concat([t.table() for t in traces])
        mangled = self.traced_launches.symbols()
        checked: list[Path] = []
        if check:
            if again:
                variation = self._results_variation(exe, library, traces, keep)
            else:
                variation, where = self.known_variation
                progress(f"the GPU results' repeatability is known from {where}: no second traced run")
                self.run.manifest["gpu_results_known_from"] = where
            checked = [self.run.write_text("profile", "gpu_results.json", variation.model_dump_json(indent=2) + "\n")]
        for kept in folder.glob("trace-*.bin"):
            kept.unlink()  # results' bytes, only needed for that comparison
        return sorted(folder.glob("trace-*.tsv")), profile_of(traces, str(folder)).launches, mangled, checked

    def _results_variation(self, exe: Path, library: Path, first: list[ProcessTrace],
                           keep: dict) -> ResultsVariation:
        """Run the app under the tracer again: how its GPU results compare with the first run's (the
        same, differing by rounding only, as with floating-point atomics, or otherwise)."""
        folder = self.dir / "trace-again"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        try:
            self._exec(Step(self._app_argv(exe), "trace-again", self.config.app.timeout_s,
                            "traced run again (do the GPU results repeat?)"),
                       env=trace_environment(library, folder, **keep))
            variation = results_variation(first, read_traces(folder))
        except ProfilingError as e:
            variation = ResultsVariation(varies=True, why=f"a second run failed: {e}")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if variation.varies:
            progress(f"the program's GPU results differ between two runs ({variation.why}): "
                          + (f"by rounding only, up to {variation.rounding_ulps} ulps; candidates will be held within "
                             f"{ROUNDING_ULPS} ulps of them" if variation.rounding_ulps is not None else
                             "beyond rounding, so candidates cannot be validated bit for bit"
                             + ("" if self.config.app.pin_seeds else
                                " (if it seeds its inputs from the clock, set app.pin_seeds: true)")))
        return variation


def counter_target(hot: list[str], files: dict[str, str]) -> str:
    """The kernel the counter runs profile: the hottest one defined in the sources (the one a
    candidate can edit), else the hottest."""
    return next(iter(defined_kernels(hot, files)), hot[0])


def restrict_to_configured(launched: list[str], configured: list[str]) -> list[str]:
    """The launched kernels (in the given order) that the config names; every name must match one."""
    missing = [k for k in configured if not any(_same_kernel(k, name) for name in launched)]
    if missing:
        raise ProfilingError(f"configured kernel(s) {missing} (app.kernels) not found; the application launched: "
                             + ", ".join(launched))
    return [name for name in launched if any(_same_kernel(k, name) for k in configured)]


def _same_kernel(configured: str, demangled: str) -> bool:
    """A configured kernel name matches a demangled one by full signature or by function name."""
    return configured == demangled or configured == short_kernel_name(demangled)
