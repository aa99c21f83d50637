"""nvcc as a tool: build a candidate, and read ptxas's resource report as compiler evidence (K*)."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from runner.base.config import LoadedConfig
from runner.base.errors import OptimasError
from runner.base.nvcc_shim import PTXAS_REPORT, build_environment
from runner.base.processes import render, run_process


class KernelResources(BaseModel):
    """What ptxas reports for one kernel."""

    kernel: str  # function name as demangled by ptxas (c++filt-style), or mangled if it could not be
    registers: int
    mangled: str | None = None  # its symbol, which names the same instance whoever demangles it
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0


class CompileResult(BaseModel):
    ok: bool
    command: list[str]
    output: str  # compiler messages, trimmed
    resources: list[KernelResources] = []
    cached: bool = Field(default=False, exclude=True)  # taken from a build cache, not compiled now


_ENTRY = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)'")
_PROPS = re.compile(r"ptxas info\s*: Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> demangled through c++filt when present (names stay as they are otherwise)."""
    exe = shutil.which("cu++filt") or shutil.which("c++filt")
    if not exe or not names:
        return {n: n for n in names}
    r = run_process([exe], timeout_s=30, stdin="\n".join(names), merge_stderr=False, what="demangling kernel names")
    out = r.output.splitlines()
    return {n: (out[i] if i < len(out) and r.returncode == 0 else n) for i, n in enumerate(names)}


def parse_ptxas(output: str) -> list[KernelResources]:
    """Per-kernel resources from `nvcc -Xptxas -v` output (entry functions only)."""
    entries: dict[str, dict] = {}
    current: str | None = None
    entry_names: set[str] = set()
    for line in output.splitlines():
        if m := _ENTRY.search(line):
            entry_names.add(m.group(1))
            current = m.group(1)
            entries.setdefault(current, {})
        elif m := _PROPS.search(line):
            current = m.group(1)
            entries.setdefault(current, {})
        elif current and (m := _FRAME.search(line)):
            entries[current].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        elif current and (m := _USED.search(line)):
            entries[current].update(regs=int(m.group(1)), smem=int(m.group(2) or 0))
    names = demangle(sorted(n for n in entries if n in entry_names))
    out = []
    for mangled in sorted(entry_names):
        e = entries.get(mangled, {})
        if "regs" not in e:
            continue
        out.append(KernelResources(kernel=names.get(mangled, mangled), mangled=mangled, registers=e["regs"],
                                   shared_bytes=e.get("smem", 0), stack_bytes=e.get("stack", 0),
                                   spill_store_bytes=e.get("spill_st", 0), spill_load_bytes=e.get("spill_ld", 0)))
    return out


def build(lc: LoadedConfig, workdir: Path, arch: str, exe: Path | None = None, verbose: bool = True,
          timeout_s: float | None = None) -> CompileResult:
    """Build the app in `workdir` with its build command (timing build, no -lineinfo).

    With `verbose`, ptxas's per-kernel resources are reported and parsed: `-Xptxas -v` is added to
    an nvcc command, and for any other build (make, cmake, a script) the nvcc shim adds it to every
    nvcc the build runs.
    """
    app = lc.config.app
    if not app.build:
        raise OptimasError(f"{lc.path}: app.build is not set; the compiler stage needs the build command")
    with tempfile.TemporaryDirectory(prefix="optimas-build-") as tmp:
        target = exe or Path(tmp) / "app"
        argv = render(app.build, exe=target, arch=arch, lineinfo="", config="", seed=app.seeds[0], scale=1, out="")
        if not shutil.which(argv[0]):
            raise OptimasError(f"the build command's compiler {argv[0]!r} (app.build) is not installed or not on PATH")
        is_nvcc = "nvcc" in Path(argv[0]).name
        env = build_environment(app.env, lc.config.profiling.nvcc)
        if verbose and is_nvcc:
            argv += ["-Xptxas", "-v"]
        elif verbose:
            # make, cmake or a script: the nvcc shim adds -Xptxas -v to each nvcc the build runs;
            # NVCC_APPEND_FLAGS reaches an nvcc named by its full path, unless the build sets it itself
            env[PTXAS_REPORT] = "1"
            env["NVCC_APPEND_FLAGS"] = f"{env.get('NVCC_APPEND_FLAGS', '')} -Xptxas -v".strip()
        limit = timeout_s or app.timeout_s
        r = run_process(argv, workdir, limit, env=env, what="the build (app.build)")
        if r.timed_out:
            return CompileResult(ok=False, command=argv,
                                 output=f"the build timed out after {limit:g} s and was killed")
    text = r.output
    messages = "\n".join(ln for ln in text.splitlines() if "ptxas info" not in ln and not _FRAME.search(ln))
    return CompileResult(ok=r.returncode == 0, command=argv, output=messages.strip()[-8000:],
                         resources=parse_ptxas(text) if verbose else [])
