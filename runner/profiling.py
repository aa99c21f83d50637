"""The Profiling Agent: build the application, time every kernel cheaply, then collect the
expensive evidence (roofline, PC sampling, counter sweeps) for the hot kernels only.

Steps, each recorded in the run directory (`profile/`) with its exact command in the manifest:

1. build twice: with -lineinfo for profiling, without it for timing (`-arch` from the GPU found);
2. timing pass: `ncu --metrics gpu__time_duration.sum` over every launch (one replay pass each);
3. hot kernels from that (alpha of total time);
4. targeted collection of the hot kernels (`-k regex:^(a|b)$`, launch skip/count, roofline and
   source sections, imported source) in one profiler run, exported as raw and source CSV pages;
5. counter runs of the hottest kernel over N problem sizes for eOMP.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, cast

from runner.analysis.hot import select_hot_kernels
from runner.config import LoadedConfig
from runner.errors import OptimasError
from runner.processes import child_environment
from runner.profile import short_kernel_name
from runner.readers import NcuRawCsvReader
from runner.runstore import Run

Progress = Callable[[str], None]

PERM_HELP = ("ncu is not allowed to read the GPU's performance counters (ERR_NVGPUCTRPERM). Run as root, or let "
             "all users profile: add 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' to a file in "
             "/etc/modprobe.d/ and reload the nvidia module (or reboot); in a container, start it with "
             "--cap-add=SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM")


class ProfilingError(OptimasError):
    """Profiling could not run: a tool, the GPU, permissions, or the application failed."""

    exit_code = 4


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str
    driver: str
    index: str
    uuid: str

    @property
    def arch(self) -> str:
        return "sm_" + self.compute_capability.replace(".", "")


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    seconds: float
    output: str


def require_tool(name: str, configured: str) -> str:
    """The path of a tool, or a ProfilingError saying how to get it."""
    path = shutil.which(configured)
    if path:
        return path
    hints = {
        "ncu": "install Nsight Compute (part of the CUDA toolkit) and put ncu on PATH, or set profiling.ncu",
        "nvcc": "install the CUDA toolkit and put nvcc on PATH, or set profiling.nvcc",
        "nvidia-smi": "install the NVIDIA driver, or set profiling.nvidia_smi",
    }
    raise ProfilingError(f"{name} not found ({configured!r} is not on PATH): {hints.get(name, 'install it')}")


def list_gpus(nvidia_smi: str) -> list[Gpu]:
    """Every GPU nvidia-smi lists, in its order; ProfilingError when there is none."""
    exe = require_tool("nvidia-smi", nvidia_smi)
    try:
        r = subprocess.run([exe, "--query-gpu=index,uuid,name,compute_cap,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=60, env=child_environment())
    except subprocess.TimeoutExpired:
        raise ProfilingError("nvidia-smi did not answer within 60 s; is the GPU driver healthy?") from None
    rows = [[x.strip() for x in ln.split(",")] for ln in r.stdout.splitlines() if ln.strip()]
    if r.returncode != 0 or not rows or any(len(row) < 5 for row in rows):
        detail = (r.stdout + r.stderr).strip().splitlines()
        said = detail[-1] if detail else f"exit {r.returncode}"
        raise ProfilingError(f"no NVIDIA GPU found: nvidia-smi says {said}")
    return [Gpu(index=i, uuid=u, name=n, compute_capability=cc, driver=d) for i, u, n, cc, d, *_ in rows]


def detect_gpu(nvidia_smi: str) -> Gpu:
    """The GPU this process runs on: the first one CUDA_VISIBLE_DEVICES names (an index, a UUID, or
    a MIG instance's UUID, as a worker pinned to one GPU has it), else the first one nvidia-smi lists. nvidia-smi itself
    ignores CUDA_VISIBLE_DEVICES, so without this a pinned process would build for GPU 0."""
    gpus = list_gpus(nvidia_smi)
    setting = os.environ.get("CUDA_VISIBLE_DEVICES")
    if setting is None:
        return gpus[0]
    visible = setting.split(",")[0].strip()
    if not visible or visible == "-1":
        raise ProfilingError(f"CUDA_VISIBLE_DEVICES={setting!r} hides every GPU from this process")
    if visible.startswith("MIG-"):
        visible = _mig_parent(nvidia_smi, visible)
    found = next((g for g in gpus if visible in (g.index, g.uuid) or (len(visible) > 4 and g.uuid.startswith(visible))),
                 None)
    if found is None:
        raise ProfilingError(f"CUDA_VISIBLE_DEVICES={visible!r} names no GPU that nvidia-smi lists "
                             f"({', '.join(g.index + ': ' + g.uuid for g in gpus)})")
    return found


_UUID = re.compile(r"\(UUID: ((?:GPU|MIG)-[^)\s]+)\)")


def _mig_parent(nvidia_smi: str, mig: str) -> str:
    """The UUID of the GPU a MIG instance belongs to. The query list names no MIG instance;
    `nvidia-smi -L` prints each under its GPU's line: "GPU 0: ... (UUID: GPU-...)", then
    "  MIG 1g.10gb Device 0: (UUID: MIG-...)"."""
    exe = require_tool("nvidia-smi", nvidia_smi)
    try:
        r = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=60, env=child_environment())
    except subprocess.TimeoutExpired:
        raise ProfilingError("nvidia-smi -L did not answer within 60 s; is the GPU driver healthy?") from None
    parent = None
    for line in r.stdout.splitlines():
        m = _UUID.search(line)
        if not m:
            continue
        if m.group(1).startswith("GPU-"):
            parent = m.group(1)
        elif parent and m.group(1).startswith(mig):
            return parent
    raise ProfilingError(f"CUDA_VISIBLE_DEVICES={mig!r} names no MIG instance that `nvidia-smi -L` lists")


class _Placeholders(dict):
    def __missing__(self, key: str) -> str:
        raise ProfilingError(f"unknown placeholder {{{key}}} in a command template; known: "
                             f"{', '.join('{' + k + '}' for k in sorted(self))}")


def render(template: str, **values: object) -> list[str]:
    """Split a command template like a shell (no shell runs it) and fill its placeholders per word.

    A word that becomes empty ({lineinfo} in a timing build) is dropped.
    """
    words = shlex.split(template)
    subs = _Placeholders({k: str(v) for k, v in values.items()})
    out = [w.format_map(subs) for w in words]
    return [w for w in out if w != ""]


def run_command(argv: list[str], cwd: Path, timeout_s: float, log: Path, progress: Progress | None = None,
                what: str = "command", env: dict[str, str] | None = None) -> CommandResult:
    """Run `argv`, stream its output to `log`, kill its whole process group at the timeout.

    ncu prints a `==PROF== Profiling "kernel" - N (i/n)` line per profiled launch; these are
    passed on to `progress` at most every two seconds.
    """
    start = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    chunks: list[str] = []
    with open(log, "w", encoding="utf-8", errors="replace") as f:
        f.write("$ " + shlex.join(argv) + "\n")
        f.flush()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    errors="replace", start_new_session=True,
                                    env=child_environment() if env is None else env)
        except FileNotFoundError:
            raise ProfilingError(f"{what}: cannot run {argv[0]!r}: not found") from None
        stdout = cast(IO[str], proc.stdout)

        def pump() -> None:
            last_note = 0.0
            for line in stdout:
                chunks.append(line)
                f.write(line)
                now = time.monotonic()
                if progress and line.startswith("==PROF== Profiling") and now - last_note >= 2.0:
                    progress(f"{what}: {line.strip()[len('==PROF== '):]}")
                    last_note = now

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            reader.join(timeout=5)
            f.write(f"\n[optimas] killed after {timeout_s:g} s\n")
            raise ProfilingError(f"{what} timed out after {timeout_s:g} s and was killed (log: {log}); raise "
                                 "app.timeout_s or profiling.timeout_s if it needs longer") from None
        reader.join()
    return CommandResult(argv=argv, returncode=proc.returncode, seconds=time.monotonic() - start,
                         output="".join(chunks))


def check_ncu_output(result: CommandResult, log: Path, what: str) -> None:
    """Turn ncu's failure modes into errors that say what to do."""
    out = result.output
    if "ERR_NVGPUCTRPERM" in out:
        raise ProfilingError(PERM_HELP)
    if "No kernels were profiled" in out:
        raise ProfilingError(f"{what}: no kernel matched the filter, so nothing was profiled (log: {log})")
    if result.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-8:])
        raise ProfilingError(f"{what} failed with exit code {result.returncode}; the application or ncu failed "
                             f"under the profiler (log: {log}). Last lines:\n{tail}")


def kernel_regex(*demangled: str) -> str:
    """An ncu `-k regex:` that matches exactly these demangled kernel names."""
    return "regex:^(" + "|".join(re.escape(k) for k in demangled) + ")$"


class ProfilingAgent:
    """Collects the profiles one run of the pipeline needs, into `run/profile/`."""

    def __init__(self, lc: LoadedConfig, run: Run, progress: Progress = lambda _m: None,
                 configuration: str | None = None):
        self.lc = lc
        self.cfg = lc.config
        self.run = run
        self.progress = progress
        self.dir = run.stage_dir("profile")
        self.commands: list[dict] = []
        app = self.cfg.app
        if not app.build or not app.run:
            raise ProfilingError(f"{lc.path}: app.build and app.run are needed to profile (or give recorded "
                                 "profiles in the `profiles` section)")
        if not app.configurations:
            raise ProfilingError(f"{lc.path}: app.configurations is empty; name at least one configuration")
        self.workdir = lc.resolve(app.workdir)
        if not self.workdir.is_dir():
            raise ProfilingError(f"{lc.path}: app.workdir {self.workdir} is not a folder")
        self.configuration = configuration or app.profile_configuration or app.configurations[0]
        if self.configuration not in app.configurations:
            raise ProfilingError(f"{lc.path}: configuration {self.configuration!r} is not one of "
                                 f"app.configurations {app.configurations}")

    def _exec(self, argv: list[str], name: str, timeout_s: float, what: str, ncu: bool = False) -> CommandResult:
        log = self.dir / "logs" / f"{name}.log"
        self.progress(f"{what}: {shlex.join(argv)}")
        result = run_command(argv, self.workdir, timeout_s, log, self.progress, what,
                             child_environment(self.cfg.app.env))
        self.commands.append({"name": name, "argv": argv, "cwd": str(self.workdir), "returncode": result.returncode,
                              "seconds": round(result.seconds, 3), "log": str(log.relative_to(self.run.path))})
        self.run.manifest.setdefault("commands", []).append(self.commands[-1])
        self.run.save()
        if ncu:
            check_ncu_output(result, log, what)
        elif result.returncode != 0:
            tail = "\n".join(result.output.strip().splitlines()[-8:])
            raise ProfilingError(f"{what} failed with exit code {result.returncode} (log: {log}):\n{tail}")
        return result

    def _app_argv(self, exe: Path, scale: float = 1.0) -> list[str]:
        app = self.cfg.app
        return render(app.profile_run or app.run, exe=exe, config=self.configuration, seed=app.seeds[0],
                      scale=scale, out=self.dir / "outputs" / "profiled.out", arch=self.gpu.arch, lineinfo="")

    def _export(self, ncu: str, report: Path, page: str) -> Path:
        extra = ["--print-units", "base"] if page == "raw" else ["--print-source", "cuda,sass"]
        dst = report.with_name(f"{report.stem}_{page}.csv")
        argv = [ncu, "-i", str(report), "--csv", "--page", page, *extra]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=child_environment())
        if r.returncode != 0:
            raise ProfilingError(f"exporting the {page} page of {report} failed: {r.stderr.strip()[-500:]}")
        dst.write_text(r.stdout)
        self.commands.append({"name": f"export-{report.stem}-{page}", "argv": argv, "output": str(dst)})
        return dst

    def collect(self) -> dict[str, list[Path]]:
        """Run every step; returns the analysis inputs by role."""
        prof = self.cfg.profiling
        app = self.cfg.app
        ncu = require_tool("ncu", prof.ncu)
        require_tool("nvcc", prof.nvcc)
        self.gpu = detect_gpu(prof.nvidia_smi)
        self.run.manifest["device"] = {"name": self.gpu.name, "compute_capability": self.gpu.compute_capability,
                                       "driver": self.gpu.driver}
        self.progress(f"GPU: {self.gpu.name} ({self.gpu.arch}, driver {self.gpu.driver})")
        bins = self.dir / "bin"
        bins.mkdir(exist_ok=True)
        exe_prof, exe_time = bins / f"{app.name}-lineinfo", bins / f"{app.name}"
        for exe, lineinfo, name in ((exe_prof, "-lineinfo", "build-profiling"), (exe_time, "", "build-timing")):
            argv = render(app.build, exe=exe, arch=self.gpu.arch, lineinfo=lineinfo, config=self.configuration,
                          seed=app.seeds[0], scale=1, out="")
            self._exec(argv, name, app.timeout_s, name)

        # 1. timing pass over every launch
        timing = self.dir / "timing"
        argv = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-f", "-o", str(timing),
                *self._app_argv(exe_prof)]
        self._exec(argv, "timing", prof.timeout_s, "timing pass", ncu=True)
        timing_raw = self._export(ncu, timing.with_suffix(".ncu-rep"), "raw")
        launches = NcuRawCsvReader().read(timing_raw).launches
        kernels = select_hot_kernels(launches, self.cfg.analysis.alpha)
        hot = [k.kernel for k in kernels if k.hot]
        if app.kernels:
            hot = restrict_to_configured([k.kernel for k in kernels], app.kernels)
        self.progress(f"hot kernels: {', '.join(hot)}")

        # 2. targeted collection: one ncu run for all hot kernels, then one per kernel it missed
        sections = [a for s in prof.targeted_sections for a in ("--section", s)]
        reports, sources = [], []
        pending = list(hot)
        while pending:
            i = len(reports)
            out = self.dir / f"hot{i}"
            pattern = kernel_regex(*pending)
            argv = [ncu, "--clock-control", "none", "--kernel-name-base", "demangled", "-k", pattern,
                    "--launch-skip", str(prof.launch_skip), "--launch-count", str(prof.launch_count * len(pending)),
                    *sections, "--import-source", "yes", "-f", "-o", str(out), *self._app_argv(exe_prof)]
            names = pending[0] if len(pending) == 1 else f"{len(pending)} hot kernels"
            self._exec(argv, f"targeted-{i}", prof.timeout_s, f"targeted collection of {names}", ncu=True)
            rep = out.with_suffix(".ncu-rep")
            reports.append(rep)
            raw = self._export(ncu, rep, "raw")
            sources.append(self._export(ncu, rep, "source"))
            got = set(NcuRawCsvReader().read(raw).launches["kernel"])
            if not got & set(pending):
                raise ProfilingError(f"targeted collection captured none of {pending}; see {self.dir / 'logs'}")
            # A kernel launched many times before another one appears can use up the launch count.
            pending = [k for k in pending if k not in got]

        # 3. counter runs of the hottest kernel over N problem sizes
        counters = []
        sections = [a for s in prof.counter_sections for a in ("--section", s)]
        cdir = self.dir / "counters"
        cdir.mkdir(exist_ok=True)
        for scale in prof.counter_scales:
            # ncu appends .ncu-rep to -o; a dot in the name ("scale_0.25") would read as a suffix.
            out = cdir / f"scale_{scale:g}".replace(".", "_")
            argv = [ncu, "--clock-control", "none", "--kernel-name-base", "demangled", "-k", kernel_regex(hot[0]),
                    "--launch-skip", str(prof.launch_skip), "--launch-count", "1", *sections, "-f", "-o", str(out),
                    *self._app_argv(exe_prof, scale)]
            self._exec(argv, f"counters-{scale:g}", prof.timeout_s, f"counter run at scale {scale:g}", ncu=True)
            counters.append(out.with_suffix(".ncu-rep"))
        inputs = {"timing": [timing_raw], "report": reports, "counters": counters}
        self.run.stage_done("profile", [timing_raw, *reports, *sources, *counters], gpu=self.gpu.name,
                            hot_kernels=hot, configuration=self.configuration,
                            inputs={role: [str(p.relative_to(self.run.path)) for p in paths]
                                    for role, paths in inputs.items()})
        return inputs


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
