"""The GPU this process runs on (nvidia-smi, CUDA_VISIBLE_DEVICES, MIG instances) and the tools
the GPU stages need."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from runner.base.config import DEFAULT_ARCH, LoadedConfig
from runner.base.errors import ProfilingError
from runner.base.processes import run_process
from runner.base.workspace import build_compiler


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
    r = run_process([exe, "--query-gpu=index,uuid,name,compute_cap,driver_version", "--format=csv,noheader"],
                    timeout_s=60, merge_stderr=False, what="nvidia-smi")
    if r.timed_out:
        raise ProfilingError("nvidia-smi did not answer within 60 s; is the GPU driver healthy?")
    rows = [[x.strip() for x in ln.split(",")] for ln in r.output.splitlines() if ln.strip()]
    if r.returncode != 0 or not rows or any(len(row) < 5 for row in rows):
        detail = (r.output + r.errors).strip().splitlines()
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
    r = run_process([exe, "-L"], timeout_s=60, merge_stderr=False, what="nvidia-smi -L")
    if r.timed_out:
        raise ProfilingError("nvidia-smi -L did not answer within 60 s; is the GPU driver healthy?")
    parent = None
    for line in r.output.splitlines():
        m = _UUID.search(line)
        if not m:
            continue
        if m.group(1).startswith("GPU-"):
            parent = m.group(1)
        elif parent and m.group(1).startswith(mig):
            return parent
    raise ProfilingError(f"CUDA_VISIBLE_DEVICES={mig!r} names no MIG instance that `nvidia-smi -L` lists")


def target_arch(lc: LoadedConfig) -> str:
    """The local GPU's architecture, else DEFAULT_ARCH (the target this project measures on)."""
    try:
        return detect_gpu(lc.config.profiling.nvidia_smi).arch
    except ProfilingError:  # no driver here: compile for the default target
        return DEFAULT_ARCH


def can_run_here(lc: LoadedConfig) -> tuple[bool, str]:
    """Whether this machine can validate and time the app: CUDA apps need a GPU."""
    app = lc.config.app
    if not app.build or not app.run:
        return False, "app.build and app.run are needed to validate and time a candidate"
    if not app.outputs and app.gpu_results.compare == "off" and not app.stdout.configured():
        return False, ("nothing would validate a candidate: declare app.outputs, or let the tracer compare the "
                       "program's GPU results (app.gpu_results.compare), or check its output (app.stdout)")
    cuda = any(Path(src).suffix in (".cu", ".cuh") for src in app.sources)
    if cuda or "nvcc" in Path(build_compiler(lc) or "").name:  # a make, CMake or script build of .cu files too
        try:
            detect_gpu(lc.config.profiling.nvidia_smi)
        except ProfilingError as e:
            return False, f"validating and timing a CUDA candidate needs a GPU ({e})"
    return True, ""
