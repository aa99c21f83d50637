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

import io
import os
from pathlib import Path
from typing import Annotated, BinaryIO, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from runner.base.errors import OptimasError
from runner.scan.cuda_source import short_kernel_name
from runner.tracing.launches import INT_FIELDS, KernelLaunch, Launches

__all__ = ["DEVICE_FAULTS", "FORMAT", "LAUNCH_ERRORS", "MAX_TRACES", "TRACE_LIMIT", "TRACE_TOTAL", "ApiError",
           "DeviceResult", "KernelLaunch", "Launches", "ProcessTrace", "ResultsVariation", "TraceFormatError",
           "device_fault", "read_trace", "read_traces"]

FORMAT = "# optimas-trace 1"
# What the worker reads of the traces, which the code under test could write: each record becomes
# an object of some tens of times its bytes (an attacker's pass measured 24-34x).
TRACE_LIMIT = 256 << 20  # bytes of one process's trace
TRACE_TOTAL = 512 << 20  # bytes of one run's traces in all
MAX_TRACES = 256  # processes of one run


class TraceFormatError(OptimasError):
    """A trace record file that is not what the tracer writes."""

    exit_code = 4


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


def _as_launches(value: object) -> object:
    """A list of launches (model objects or dicts) as the column-wise table."""
    return value if isinstance(value, Launches) else Launches.of(value) if isinstance(value, list | tuple) else value


class ProcessTrace(BaseModel):
    """Everything the tracer saw in one process."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    pid: int
    cupti_version: int
    launches: Annotated[Launches, BeforeValidator(_as_launches)] = Field(default_factory=Launches.empty)  # by start
    results: list[DeviceResult] = Field(default_factory=list)  # in program order
    unsynchronized: list[str] = Field(default_factory=list)  # copies never synchronized: their API names
    errors: list[ApiError] = Field(default_factory=list)  # the first failures of the calls it watches
    complete: bool = False  # the process reached its normal exit
    dropped: int = 0  # activity records CUPTI dropped (buffers full): launches are missing

    def first_failure(self, launches: bool = False) -> ApiError | None:
        """The first error saying the GPU's work failed (a sticky one; with `launches`, also a
        launch that ran nothing), if there was one."""
        return next((e for e in self.errors if e.sticky or (launches and e.launch)), None)

    def table(self) -> Launches:
        """The launches as a table (model_copy(update=...) may have set a plain list)."""
        return self.launches if isinstance(self.launches, Launches) else Launches.of(self.launches)

    def kernel_ns(self) -> dict[str, int]:
        """Total execution time per kernel (demangled name), in ns."""
        return self.table().kernel_ns()

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


# A K record's integer fields, by their place on the line (INT_FIELDS' order).
_K_PLACES = (2, 3, 6, 7, 8, 9, 10, 11, 12, 13)
_INT64 = (-(1 << 63), 1 << 63)
# Every byte of the K records as the tracer writes them; a trace with any other goes the slow way.
_K_BYTES = b"0123456789-,\tK\n"
K_CHUNK = 1 << 16  # K records parsed at once (their lines are held as bytes until then)
_K_TYPES = {"f1": pa.string(), "f4": pa.string(), "f5": pa.string(),
            **{f"f{i}": pa.int64() for i in _K_PLACES}}


def _int64(text: str) -> int:
    v = int(text)
    if not _INT64[0] <= v < _INT64[1]:
        raise ValueError(f"{text[:30]} is out of range")
    return v


def _ints(text: str) -> tuple[int, int, int]:
    x, y, z = (_int64(v) for v in text.split(","))
    return x, y, z


def read_trace(path: Path) -> ProcessTrace:
    """One process's record file; TraceFormatError naming the file and line when it is malformed."""
    try:
        with open(path, "rb") as records:
            size = os.fstat(records.fileno()).st_size
            if size > TRACE_LIMIT:
                raise TraceFormatError(f"{path} (a trace) is {size} bytes; Optimas reads at most {TRACE_LIMIT}")
            first = records.readline(len(FORMAT) + 2).decode("utf-8", "replace")  # before reading the rest
            if first.rstrip("\n") != FORMAT:
                raise TraceFormatError(f"{path} is not an Optimas trace (expected a first line {FORMAT!r})")
            start = records.tell()
            trace = _tracer_records(path, records)
            if trace is None:  # not as the tracer writes it: read line by line, which says what and where
                records.seek(start)
                trace = _records(path, io.TextIOWrapper(records, encoding="utf-8", errors="replace", newline="\n"))
            return trace
    except OSError as e:
        raise TraceFormatError(f"cannot read the trace {path}: {e.strerror}") from None


def _other_record(trace: ProcessTrace, f: list[str]) -> None:
    """A D, M, U, E or X record into the trace; ValueError or IndexError when malformed."""
    if f[0] in ("D", "M"):
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


class _Table:
    """Launches gathered record by record (the line-by-line reading)."""

    def __init__(self) -> None:
        self.names: dict[tuple[str, str], int] = {}
        self.ids: list[int] = []
        self.grid: list[tuple[int, int, int]] = []
        self.block: list[tuple[int, int, int]] = []
        self.ints: list[list[int]] = []

    def add(self, name: tuple[str, str], f: list[str]) -> None:
        """One K record's fields (ValueError, IndexError: malformed; then nothing is added)."""
        ints, grid, block = [_int64(f[i]) for i in _K_PLACES], _ints(f[4]), _ints(f[5])
        self.ids.append(self.names.setdefault(name, len(self.names)))
        self.grid.append(grid)
        self.block.append(block)
        self.ints.append(ints)

    def launches(self) -> Launches:
        columns = np.array(self.ints, dtype=np.int64).reshape(len(self.ids), len(INT_FIELDS))
        return Launches(list(self.names), np.array(self.ids, dtype=np.int32), np.array(self.grid, dtype=np.int64),
                        np.array(self.block, dtype=np.int64), dict(zip(INT_FIELDS, columns.T, strict=True)))


def _records(path: Path, records: TextIO) -> ProcessTrace:
    """The process's trace from its records after the first line, read line by line."""
    names: dict[str, tuple[str, str]] = {}
    trace: ProcessTrace | None = None
    table = _Table()
    for number, line in enumerate(records, start=2):
        f = line.rstrip("\n").split("\t")
        try:
            if f[0] == "P":
                trace, table = ProcessTrace(path=path, pid=int(f[1]), cupti_version=int(f[2])), _Table()
                continue
            if trace is None:
                raise ValueError("record before the P line")
            if f[0] == "N":
                names[f[1]] = (f[3], f[2])
            elif f[0] == "K":
                table.add(names[f[1]], f)
            else:
                _other_record(trace, f)
        except (ValueError, IndexError, KeyError) as e:
            raise TraceFormatError(f"{path}:{number}: malformed {f[0][:20]!r} record ({str(e)[:200]})") from None
    if trace is None:
        raise TraceFormatError(f"{path} has no P (process) record")
    trace.results.sort(key=lambda r: r.seq)
    trace.launches = table.launches().by_start()
    return trace


def _tracer_records(path: Path, records: BinaryIO) -> ProcessTrace | None:
    """The process's trace when its records are as the tracer writes them (one P line first, each
    kernel named once before its launches), its K records parsed as one table; None at anything
    else, which `_records` then reads line by line."""
    kernel_lines: list[bytes] = []
    chunks: list[pa.Table] = []  # K records parsed so far, K_CHUNK lines each
    names: dict[str, tuple[str, str]] = {}
    named_after: dict[str, int] = {}  # a kernel id -> how many K records came before its N record
    trace: ProcessTrace | None = None
    try:
        for line in records:
            if line.startswith(b"K\t"):
                kernel_lines.append(line)
                if len(kernel_lines) == K_CHUNK:
                    chunk = _kernel_chunk(kernel_lines)
                    if chunk is None:
                        return None
                    chunks.append(chunk)
                continue
            f = line.decode("utf-8", "replace").rstrip("\n").split("\t")
            before = K_CHUNK * len(chunks) + len(kernel_lines)
            if f[0] == "P" and trace is None and not before:
                trace = ProcessTrace(path=path, pid=int(f[1]), cupti_version=int(f[2]))
            elif trace is None or f[0] == "P" or (f[0] == "N" and f[1] in names):
                return None
            elif f[0] == "N":
                names[f[1]], named_after[f[1]] = (f[3], f[2]), before
            else:
                _other_record(trace, f)
    except (ValueError, IndexError):
        return None
    if kernel_lines:
        last = _kernel_chunk(kernel_lines)
        if last is None:
            return None
        chunks.append(last)
    if trace is None:
        return None
    launches = _kernel_table(chunks, names, named_after)
    if launches is None:
        return None
    trace.results.sort(key=lambda r: r.seq)
    trace.launches = launches.by_start()
    return trace


def _kernel_chunk(lines: list[bytes]) -> pa.Table | None:
    """K record lines (emptied) parsed by Arrow's CSV reader; None when one is not as the tracer
    writes it (a byte other than digits, '-', ',' and tabs, a field more or less, a value out of
    int64's range)."""
    n = len(lines)
    if not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"
    data = b"".join(lines)
    lines.clear()
    if data.translate(None, _K_BYTES):
        return None
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(data), read_options=pa_csv.ReadOptions(autogenerate_column_names=True),
            parse_options=pa_csv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False,
                                              ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types=_K_TYPES, include_columns=list(_K_TYPES),
                                                  null_values=[], strings_can_be_null=False))
    except pa.ArrowException:  # a field more or less, a value that is no int64
        return None
    return table if table.num_rows == n else None


def _kernel_table(chunks: list[pa.Table], names: dict[str, tuple[str, str]], named_after: dict[str, int]
                  ) -> Launches | None:
    """The parsed K records as launches; None when one names a kernel no N record named before it,
    or its grid or block is not three integers."""
    if not chunks:
        return Launches.empty()
    table = pa.concat_tables(chunks)
    chunks.clear()
    kernels = table.column("f1").combine_chunks().dictionary_encode()
    ids = kernels.indices.to_numpy(zero_copy_only=False)
    used = kernels.dictionary.to_pylist()
    _, first = np.unique(ids, return_index=True)
    if any(k not in names or at < named_after[k] for k, at in zip(used, first.tolist(), strict=True)):
        return None
    try:
        grid, block = (_dims_of(table.column(c)) for c in ("f4", "f5"))
    except ValueError:
        return None
    return Launches([names[k] for k in used], ids, grid, block,
                    {f: table.column(f"f{i}").to_numpy() for f, i in zip(INT_FIELDS, _K_PLACES, strict=True)})


def _dims_of(column: pa.ChunkedArray) -> np.ndarray:
    """An "x,y,z" column as an (n, 3) array, each distinct text parsed once (ValueError: malformed)."""
    encoded = column.combine_chunks().dictionary_encode()
    dims = np.array([_ints(text) for text in encoded.dictionary.to_pylist()], dtype=np.int64).reshape(-1, 3)
    return dims[encoded.indices.to_numpy(zero_copy_only=False)]


def device_fault(traces: list[ProcessTrace], launches: bool = False) -> str | None:
    """What says the GPU's work failed in these processes, in words (None when nothing did): the
    first failure of a watched call that means a kernel faulted (with `launches`, or a launch was
    refused), with the kernels launched before it. A program that checks no error still exits 0
    then, and its results are not its results."""
    for t in traces:
        fault = t.first_failure(launches)
        if fault is not None:
            launches = t.table()
            ran = sorted({short_kernel_name(name) for name in launches.kernel_ns()})
            zero = int(np.count_nonzero(launches.duration_ns() <= 0))
            where = f"; kernels launched: {', '.join(ran[:4])}{' ...' if len(ran) > 4 else ''}" if ran else ""
            unfinished = f" ({zero} of {len(launches)} launches never finished)" if zero else ""
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
