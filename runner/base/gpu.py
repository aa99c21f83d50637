"""The GPU this process runs on (nvidia-smi, CUDA_VISIBLE_DEVICES, MIG instances) and the tools
the GPU stages need."""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from runner.base.config import DEFAULT_ARCH, LoadedConfig
from runner.base.errors import ProfilingError
from runner.base.processes import run_process
from runner.base.sandbox import GpuDevices, SandboxError, current
from runner.base.validation_modes import ValidationMode
from runner.base.workspace import build_compiler

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_capability: str
    driver: str
    index: str
    uuid: str
    bus_id: str = ""  # PCI, as nvidia-smi writes it: 00000000:18:00.0

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
    r = run_process([exe, "--query-gpu=index,uuid,name,compute_cap,driver_version,pci.bus_id",
                     "--format=csv,noheader"],
                    timeout_s=60, merge_stderr=False, what="nvidia-smi")
    if r.timed_out:
        raise ProfilingError("nvidia-smi did not answer within 60 s; is the GPU driver healthy?")
    rows = [[x.strip() for x in ln.split(",")] for ln in r.output.splitlines() if ln.strip()]
    if r.returncode != 0 or not rows or any(len(row) < 5 for row in rows):
        detail = (r.output + r.errors).strip().splitlines()
        said = detail[-1] if detail else f"exit {r.returncode}"
        raise ProfilingError(f"no NVIDIA GPU found: nvidia-smi says {said}")
    return [Gpu(index=i, uuid=u, name=n, compute_capability=cc, driver=d, bus_id=(rest or [""])[0])
            for i, u, n, cc, d, *rest in rows]


def detect_gpu(nvidia_smi: str) -> Gpu:
    """The GPU this process runs on: the first one CUDA_VISIBLE_DEVICES names (an index, a UUID, or
    a MIG instance's UUID, as a worker pinned to one GPU has it), else the first one nvidia-smi lists. nvidia-smi itself
    ignores CUDA_VISIBLE_DEVICES, so without this a pinned process would build for GPU 0. In a
    sandbox that gives its commands GPUs by UUID, those name it (nvidia-smi runs there too)."""
    gpus = list_gpus(nvidia_smi)
    box = current()
    setting = box.devices.visible if box is not None and box.devices.visible else os.environ.get("CUDA_VISIBLE_DEVICES")
    if setting is None:
        return gpus[0]
    visible = setting.split(",")[0].strip()
    if not visible or visible == "-1":
        raise ProfilingError(f"CUDA_VISIBLE_DEVICES={setting!r} hides every GPU from this process")
    found = _named_gpu(gpus, nvidia_smi, visible)
    if found is None:
        raise ProfilingError(f"CUDA_VISIBLE_DEVICES={visible!r} names no GPU that nvidia-smi lists "
                             f"({', '.join(g.index + ': ' + g.uuid for g in gpus)})")
    return found


_UUID = re.compile(r"\(UUID: ((?:GPU|MIG)-[^)\s]+)\)")


DRIVER_GPUS = Path("/proc/driver/nvidia/gpus")  # a folder per GPU, named by its PCI bus id
# The driver's nodes every CUDA process opens, whichever GPU it uses (nvidia-caps: MIG instances'
# access); the nvidia-nvswitch and nvlink nodes are the fabric manager's, not a program's.
SHARED_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")
_GPU_NODE = re.compile(r"nvidia(\d+)")
_BUS_ID = re.compile(r"([0-9a-f]{1,8}):([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])")
_MINOR = re.compile(r"^Device Minor:\s*(\d+)", re.M)


def _named_gpu(gpus: list[Gpu], nvidia_smi: str, entry: str) -> Gpu | None:
    """The GPU one entry of CUDA_VISIBLE_DEVICES names: an index, a UUID or its prefix, or a MIG
    instance's UUID (its GPU)."""
    name = _mig_parent(nvidia_smi, entry) if entry.startswith("MIG-") else entry
    return next((g for g in gpus if name in (g.index, g.uuid) or (len(name) > 4 and g.uuid.startswith(name))), None)


def sandbox_devices(nvidia_smi: str, setting: str | None, dev: Path = Path("/dev"),
                    driver: Path = DRIVER_GPUS) -> GpuDevices:
    """The device nodes a job's sandbox binds: the driver's shared ones and, of the GPUs' own
    /dev/nvidiaN, those of the GPUs that `setting` (the worker's CUDA_VISIBLE_DEVICES) names, which
    the commands then see by UUID; every GPU's when it is unset. A host without GPU nodes gets
    none. SandboxError when a GPU named cannot be matched to its node (the sandbox would otherwise
    hand the code every GPU of the host)."""
    present = sorted(p.name for p in dev.glob("nvidia*"))
    gpu_nodes = [n for n in present if _GPU_NODE.fullmatch(n)]
    shared = [str(dev / n) for n in present if n in SHARED_NODES]
    if not gpu_nodes:
        return GpuDevices(tuple(shared))
    if setting is None:
        return GpuDevices(tuple(shared + [str(dev / n) for n in gpu_nodes]))
    try:
        gpus = list_gpus(nvidia_smi)
    except ProfilingError as e:
        raise SandboxError(f"the sandbox cannot find the GPUs CUDA_VISIBLE_DEVICES={setting!r} names: {e}") from None
    nodes: list[str] = []
    visible: list[str] = []
    for entry in (e.strip() for e in setting.split(",")):
        if not entry or entry == "-1":
            break  # CUDA reads the list up to its first entry that names no GPU
        gpu = _named_gpu(gpus, nvidia_smi, entry)
        if gpu is None:
            raise SandboxError(f"CUDA_VISIBLE_DEVICES={setting!r}: {entry!r} names no GPU that nvidia-smi lists")
        # one GPU node on the host (or in the container): no other GPU to keep from the code
        node = dev / (gpu_nodes[0] if len(gpu_nodes) == 1 else f"nvidia{_device_minor(gpu, driver)}")
        if node.name not in gpu_nodes:
            raise SandboxError(f"GPU {gpu.index} ({gpu.uuid}) has no device node {node}")
        nodes.append(str(node))
        visible.append(entry if entry.startswith("MIG-") else gpu.uuid)
        if entry.startswith("MIG-"):
            # /dev/nvidia-caps is bound whole (the instance's own capability files are not matched to
            # it here): code that unsets CUDA_VISIBLE_DEVICES may open the GPU's other instances
            log.warning("sandbox: %s is a MIG instance; its job may reach the other instances of GPU %s (pin "
                        "workers to whole GPUs where pull requests are untrusted)", entry, gpu.index)
    return GpuDevices(tuple(shared + sorted(set(nodes))), ",".join(visible))


def _device_minor(gpu: Gpu, driver: Path) -> int:
    """The minor number of a GPU's /dev/nvidiaN, from the driver's folder for its PCI bus id
    (nvidia-smi writes the domain with 8 digits, the driver's folder with 4: 00000000:18:00.0 is
    0000:18:00.0)."""
    m = _BUS_ID.fullmatch(gpu.bus_id.strip().lower())
    info = driver / f"{int(m.group(1), 16):04x}:{m.group(2)}" / "information" if m else None
    try:
        found = _MINOR.search(info.read_text()) if info else None
    except OSError:
        found = None
    if found is None:
        raise SandboxError(f"the device node of GPU {gpu.index} ({gpu.uuid}, PCI {gpu.bus_id or 'unknown'}) could not "
                           f"be found: {info or driver} gives no 'Device Minor'; the sandbox would otherwise hand the "
                           f"code every GPU of this host")
    return int(found.group(1))


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


def target_arch(nvidia_smi: str) -> str:
    """The local GPU's architecture as `nvidia_smi` (profiling.nvidia_smi) reports it, else
    DEFAULT_ARCH (the target this project measures on)."""
    try:
        return detect_gpu(nvidia_smi).arch
    except ProfilingError:  # no driver here: compile for the default target
        return DEFAULT_ARCH


class MissingForGpuRun(ProfilingError):
    """This machine lacks what the GPU stages need: every missing part named at once."""


# The driver's setting that keeps performance counters from users other than root.
_ADMIN_ONLY = re.compile(r"RmProfilingAdminOnly:\s*(\d)")


def counters_admin_only(params: Path = Path("/proc/driver/nvidia/params")) -> bool:
    """Whether the driver lets only root read the performance counters (RmProfilingAdminOnly: 1)
    and this process is not root; False where the driver does not say."""
    try:
        m = _ADMIN_ONLY.search(params.read_text())
    except OSError:
        return False
    return bool(m and m.group(1) == "1" and os.geteuid() != 0)


def missing_for_gpu_run(lc: LoadedConfig, profiling: bool = True) -> list[str]:
    """Everything a GPU run of `lc` needs that this machine lacks: the GPU and its driver
    (nvidia-smi), nvcc, and for profiling ncu and the counters' permission."""
    tools = lc.config.profiling
    missing = []
    try:
        require_tool("nvidia-smi", tools.nvidia_smi)
        detect_gpu(tools.nvidia_smi)
    except ProfilingError as e:
        missing.append(f"an NVIDIA GPU with its driver: {e}")
    needed = [("nvcc", tools.nvcc)] + ([("ncu", tools.ncu)] if profiling else [])
    for name, configured in needed:
        try:
            require_tool(name, configured)
        except ProfilingError as e:
            missing.append(str(e))
    if profiling and counters_admin_only():
        missing.append("permission to read the GPU's performance counters: the driver allows root only "
                       "(RmProfilingAdminOnly=1); run as root, or see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
    return missing


def require_gpu_run(lc: LoadedConfig, profiling: bool = True) -> None:
    """MissingForGpuRun naming all that missing_for_gpu_run finds (exit 4), before any run folder is made."""
    missing = missing_for_gpu_run(lc, profiling)
    if missing:
        raise MissingForGpuRun("this machine cannot run the GPU stages; it lacks:\n  - " + "\n  - ".join(missing)
                               + "\nWithout a GPU: `optimas prompt` builds the prompt from recorded profiles, and "
                               "`optimas demo` shows a run evaluated on one")


def can_run_here(lc: LoadedConfig) -> tuple[bool, str]:
    """Whether this machine can validate and time the app: CUDA apps need a GPU."""
    app = lc.config.app
    if not app.build or not app.run:
        return False, "app.build and app.run are needed to validate and time a candidate"
    if app.gpu_results_mode() == ValidationMode.OFF and not app.outputs and not app.stdout.configured():
        return False, ("nothing would validate a candidate: declare app.outputs, or let the tracer compare the "
                       "program's GPU results (app.gpu_results.compare), or check its output (app.stdout)")
    cuda = any(Path(src).suffix in (".cu", ".cuh") for src in app.sources)
    if cuda or "nvcc" in Path(build_compiler(lc) or "").name:  # a make, CMake or script build of .cu files too
        try:
            detect_gpu(lc.config.profiling.nvidia_smi)
        except ProfilingError as e:
            return False, f"validating and timing a CUDA candidate needs a GPU ({e})"
    return True, ""
