"""`optimas init --probe`: each program of the written config built as the pipeline builds it and
run once with its run command, on this machine's GPU, before anything is profiled: its exit status,
time and last output lines, so that a run that stops at once (a usage message, a missing input
file) is seen in seconds, not after a profile on the GPU host."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from runner.base.config import LoadedConfig
from runner.base.errors import ProfilingError
from runner.base.gpu import detect_gpu, target_arch
from runner.base.processes import child_environment, render
from runner.base.sandbox import scratch
from runner.evaluation.measure import run_once
from runner.toolchain.builder import compile_candidate

log = logging.getLogger(__name__)

TAIL_LINES = 4


@dataclass(frozen=True)
class Probe:
    """One program's build and run."""

    program: str
    built: bool
    returncode: int | None = None  # None: not run, or killed at app.timeout_s
    seconds: float = 0.0
    tail: str = ""  # the last lines of what the build (when it failed) or the run printed

    @property
    def ok(self) -> bool:
        return self.built and self.returncode == 0

    def describe(self) -> str:
        """One line: what happened, then the output's last lines, indented."""
        if not self.built:
            head = "build failed"
        elif self.returncode is None:
            head = f"killed after {self.seconds:.1f} s (app.timeout_s)"
        else:
            head = f"exit {self.returncode} in {self.seconds:.1f} s"
        lines = [f"{self.program}: {head}", *(f"    {line}" for line in self.tail.splitlines())]
        return "\n".join(lines)


def _tail(text: str) -> str:
    return "\n".join(line[:200] for line in text.strip().splitlines()[-TAIL_LINES:])


def probe(lc: LoadedConfig, arch: str) -> Probe:
    """Build the program of `lc` in a copy of its workspace and run its run command once (the first
    configuration and seed) in its workdir, as validation runs it."""
    app = lc.config.app
    with scratch("optimas-probe-") as tmp:
        exe = Path(tmp) / "app.bin"
        built = compile_candidate(lc, {}, arch, exe=exe)
        if not built.ok:
            return Probe(app.name, built=False, tail=_tail(built.output))
        config = app.configurations[0]
        argv = render(app.run or "{exe}", exe=exe, config=config, seed=app.seeds[0], scale=1, out=Path(tmp) / "out",
                      arch=arch, lineinfo="", **app.values(config))
        log.info("probing %s: %s", app.name, " ".join(argv))
        r = run_once(argv, lc.resolve(app.workdir), app.timeout_s, child_environment(app.env))
    return Probe(app.name, built=True, returncode=r.returncode, seconds=r.seconds, tail=_tail(r.stdout))


def probe_all(loaded: LoadedConfig) -> list[Probe]:
    """Every program of the config probed in turn; ProfilingError when this machine has no GPU."""
    try:
        detect_gpu(loaded.config.profiling.nvidia_smi)
    except ProfilingError as e:
        raise ProfilingError(f"--probe runs each program on this machine's GPU: {e}") from None
    arch = target_arch(loaded.config.profiling.nvidia_smi)
    return [probe(lc, arch) for lc in loaded.each_program()]
