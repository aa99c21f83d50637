"""The tracer's records (one file per process, written by native/optimas_tracer.cpp) as a typed model.

A record file is tab-separated text, one record per line, its first field the record's kind:
  # optimas-trace 1                      format version
  P  pid  cupti-version  kept-bytes-budget
  N  id  mangled-name  demangled-name     a kernel, named once
  K  id  start-ns  end-ns  gx,gy,gz  bx,by,bz  registers  static-smem  dynamic-smem  stream  device
     context  correlation  graph          one kernel execution (graph 0: not from a CUDA graph)
  D  seq  api  bytes  hash  offset  kept  a copy into host memory, once complete
  M  seq  managed  bytes  hash  offset  kept   a managed allocation's contents when freed or at exit
  U  seq  api                             an asynchronous copy never synchronized before exit
  E  seq  api  code                       a watched call (a copy, a synchronization, a launch) returned an error
                                          (the first 16; seq: copies issued before it)
  X  kernels  results  dropped            the process ended normally; no X: it crashed or was killed
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from runner.base.cuda_source import short_kernel_name
from runner.base.errors import OptimasError

FORMAT = "# optimas-trace 1"
# What the worker reads of the traces, which the code under test could write: each record becomes
# an object of some tens of times its bytes (an attacker's pass measured 24-34x).
TRACE_LIMIT = 256 << 20  # bytes of one process's trace
TRACE_TOTAL = 512 << 20  # bytes of one run's traces in all
MAX_TRACES = 256  # processes of one run


class TraceFormatError(OptimasError):
    """A trace record file that is not what the tracer writes."""

    exit_code = 4


class KernelLaunch(BaseModel):
    """One kernel execution, as CUPTI's activity record reports it."""

    kernel: str  # demangled by the C++ runtime (ncu spells template arguments differently)
    mangled: str
    start_ns: int
    end_ns: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int
    static_shared: int
    dynamic_shared: int
    stream: int
    device: int
    context: int
    correlation: int
    graph: int = 0  # the CUDA graph it ran in, 0 when launched directly

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class DeviceResult(BaseModel):
    """One result the program read back from the GPU: a device-to-host copy or managed memory."""

    seq: int  # program order of issue
    source: str  # the runtime API function, or "managed"
    bytes: int
    hash: str  # 64-bit hash of the bytes, hex
    offset: int = 0  # where its kept bytes start in the process's .bin file
    kept: int = 0  # how many of its bytes were kept (OPTIMAS_TRACE_KEEP_BYTES)


# The errors that mean the GPU's work itself failed (a kernel faulted or has no code for this GPU):
# after them every later call of the process fails too, so its results are not the program's.
DEVICE_FAULTS = {
    98: ("cudaErrorInvalidDeviceFunction", "a kernel has no code this GPU can run"),
    200: ("cudaErrorInvalidKernelImage", "a kernel image this GPU cannot load"),
    209: ("cudaErrorNoKernelImageForDevice", "no kernel image built for this GPU's architecture"),
    222: ("cudaErrorUnsupportedPtxVersion", "PTX newer than the driver supports"),
    700: ("cudaErrorIllegalAddress", "a kernel accessed memory out of its bounds"),
    701: ("cudaErrorLaunchOutOfResources", "a launch asked for more registers or threads than a block can have"),
    702: ("cudaErrorLaunchTimeout", "a kernel ran past the watchdog's limit"),
    710: ("cudaErrorAssert", "a device-side assert failed"),
    714: ("cudaErrorHardwareStackError", "a kernel overflowed its call stack"),
    715: ("cudaErrorIllegalInstruction", "a kernel executed an illegal instruction"),
    716: ("cudaErrorMisalignedAddress", "a kernel accessed memory at a misaligned address"),
    717: ("cudaErrorInvalidAddressSpace", "a kernel accessed an address in the wrong address space"),
    718: ("cudaErrorInvalidPc", "a kernel jumped to an invalid program counter"),
    719: ("cudaErrorLaunchFailure", "a kernel failed while it ran"),
}


# Errors a launch returns when it runs nothing: the execution configuration or the arguments are refused.
LAUNCH_ERRORS = {
    # CUDA 13's runtime answers a block of more than 1024 threads with this one too (H100, 2026-12-06)
    1: ("cudaErrorInvalidValue", "a launch argument is out of range (more than 1024 threads per block, or dynamic "
                                 "shared memory over the limit?)"),
    9: ("cudaErrorInvalidConfiguration", "the grid or block is out of the GPU's limits (more than 1024 threads "
                                         "per block, a zero or too large dimension, too much shared memory)"),
    **DEVICE_FAULTS,
}


class ApiError(BaseModel):
    """A runtime call the tracer watches (a copy, a synchronization, a launch) that returned an error."""

    seq: int  # copies issued before it
    api: str
    code: int  # the cudaError_t value

    @property
    def launch(self) -> bool:
        """Whether a launch returned it: the launch ran nothing, but the process goes on (a program
        may try a launch and fall back)."""
        return self.api.lstrip("_").startswith("cudaLaunch")

    @property
    def sticky(self) -> bool:
        """Whether the GPU's work failed (a faulted kernel, no kernel image): every later call of
        the process fails too."""
        return self.code in DEVICE_FAULTS and not self.launch

    def describe(self) -> str:
        known = LAUNCH_ERRORS if self.launch else DEVICE_FAULTS
        name, meaning = known.get(self.code, (f"cudaError {self.code}", ""))
        return f"{self.api} returned {name} ({self.code}{': ' + meaning if meaning else ''})"


class ProcessTrace(BaseModel):
    """Everything the tracer saw in one process."""

    path: Path
    pid: int
    cupti_version: int
    launches: list[KernelLaunch] = Field(default_factory=list)
    results: list[DeviceResult] = Field(default_factory=list)  # in program order
    unsynchronized: list[str] = Field(default_factory=list)  # copies never synchronized: their API names
    errors: list[ApiError] = Field(default_factory=list)  # the first failures of the calls it watches
    complete: bool = False  # the process reached its normal exit
    dropped: int = 0  # activity records CUPTI dropped (buffers full): launches are missing

    def first_failure(self, launches: bool = False) -> ApiError | None:
        """The first error saying the GPU's work failed (a sticky one; with `launches`, also a
        launch that ran nothing), if there was one."""
        return next((e for e in self.errors if e.sticky or (launches and e.launch)), None)

    def kernel_ns(self) -> dict[str, int]:
        """Total execution time per kernel (demangled name), in ns."""
        total: dict[str, int] = defaultdict(int)
        for k in self.launches:
            total[k.kernel] += k.duration_ns
        return dict(total)

    def kept_bytes(self, result: DeviceResult) -> bytes:
        """The bytes of a result that were kept (empty when none were)."""
        if not result.kept:
            return b""
        with self.path.with_suffix(".bin").open("rb") as f:
            f.seek(result.offset)
            return f.read(result.kept)


class ResultsVariation(BaseModel):
    """How two runs of the original program compare in their GPU results (the profiling agent
    writes it as gpu_results.json; the prompt relaxes the bit-for-bit rule when they differ by
    rounding only)."""

    varies: bool
    rounding_ulps: int | None = None  # when they differ by rounding only: the largest ulp distance
    why: str = ""  # how they differ, when they do


def _ints(text: str) -> tuple[int, int, int]:
    x, y, z = (int(v) for v in text.split(","))
    return x, y, z


def read_trace(path: Path) -> ProcessTrace:
    """One process's record file; TraceFormatError naming the file and line when it is malformed."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="\n") as records:
            size = os.fstat(records.fileno()).st_size
            if size > TRACE_LIMIT:
                raise TraceFormatError(f"{path} (a trace) is {size} bytes; Optimas reads at most {TRACE_LIMIT}")
            if records.readline(len(FORMAT) + 2).rstrip("\n") != FORMAT:  # before reading the rest
                raise TraceFormatError(f"{path} is not an Optimas trace (expected a first line {FORMAT!r})")
            return _records(path, records)
    except OSError as e:
        raise TraceFormatError(f"cannot read the trace {path}: {e.strerror}") from None


def _records(path: Path, records) -> ProcessTrace:  # noqa: ANN001 (an open text file)
    """The process's trace from its records after the first line, read line by line."""
    names: dict[str, tuple[str, str]] = {}
    trace: ProcessTrace | None = None
    for number, line in enumerate(records, start=2):
        f = line.rstrip("\n").split("\t")
        try:
            if f[0] == "P":
                trace = ProcessTrace(path=path, pid=int(f[1]), cupti_version=int(f[2]))
                continue
            if trace is None:
                raise ValueError("record before the P line")
            if f[0] == "N":
                names[f[1]] = (f[3], f[2])
            elif f[0] == "K":
                kernel, mangled = names[f[1]]
                trace.launches.append(KernelLaunch(
                    kernel=kernel, mangled=mangled, start_ns=int(f[2]), end_ns=int(f[3]), grid=_ints(f[4]),
                    block=_ints(f[5]), registers=int(f[6]), static_shared=int(f[7]), dynamic_shared=int(f[8]),
                    stream=int(f[9]), device=int(f[10]), context=int(f[11]), correlation=int(f[12]),
                    graph=int(f[13])))
            elif f[0] in ("D", "M"):
                trace.results.append(DeviceResult(seq=int(f[1]), source=f[2], bytes=int(f[3]), hash=f[4],
                                                  offset=int(f[5]), kept=int(f[6])))
            elif f[0] == "U":
                trace.unsynchronized.append(f[2])
            elif f[0] == "E":
                trace.errors.append(ApiError(seq=int(f[1]), api=f[2], code=int(f[3])))
            elif f[0] == "X":
                trace.complete, trace.dropped = True, int(f[3])
            else:
                raise ValueError(f"unknown record kind {f[0][:20]!r}")
        except (ValueError, IndexError, KeyError) as e:
            raise TraceFormatError(f"{path}:{number}: malformed {f[0][:20]!r} record ({str(e)[:200]})") from None
    if trace is None:
        raise TraceFormatError(f"{path} has no P (process) record")
    trace.results.sort(key=lambda r: r.seq)
    trace.launches.sort(key=lambda k: k.start_ns)
    return trace


def device_fault(traces: list[ProcessTrace], launches: bool = False) -> str | None:
    """What says the GPU's work failed in these processes, in words (None when nothing did): the
    first failure of a watched call that means a kernel faulted (with `launches`, or a launch was
    refused), with the kernels launched before it. A program that checks no error still exits 0
    then, and its results are not its results."""
    for t in traces:
        fault = t.first_failure(launches)
        if fault is not None:
            ran = sorted({short_kernel_name(k.kernel) for k in t.launches})
            zero = sum(1 for k in t.launches if k.duration_ns <= 0)
            where = f"; kernels launched: {', '.join(ran[:4])}{' ...' if len(ran) > 4 else ''}" if ran else ""
            unfinished = f" ({zero} of {len(t.launches)} launches never finished)" if zero else ""
            return f"{fault.describe()} in process {t.pid}{where}{unfinished}"
    return None


def read_traces(folder: Path) -> list[ProcessTrace]:
    """Every process's trace in a folder (a program may start several CUDA processes), by pid; at
    most MAX_TRACES files of TRACE_TOTAL bytes in all (the program writes in that folder)."""
    paths = sorted(folder.glob("trace-*.tsv"))
    total = sum(p.stat().st_size for p in paths[:MAX_TRACES + 1])
    if len(paths) > MAX_TRACES or total > TRACE_TOTAL:
        raise TraceFormatError(f"{folder}: {len(paths)} traces of {total} bytes; Optimas reads at most {MAX_TRACES} "
                               f"of {TRACE_TOTAL} bytes in all")
    return sorted((read_trace(p) for p in paths), key=lambda t: t.pid)
