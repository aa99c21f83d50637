"""`optimas init` over a set of CUDA program folders: the build command it writes for each, what
the counter runs (eOMP) could vary (the run's size arguments, or the size constants init names),
and whether that command builds the program as the pipeline builds it (in a copy of
app.workspace, through the nvcc shim, for a given architecture), as a Markdown table. Needs nvcc (and make or
cmake where the programs use them); no GPU.

Usage: python benchmarks/init_survey.py FOLDER... [--arch sm_90] [--out FILE.md]
       python benchmarks/init_survey.py --repos [--root /tmp/survey] [--only NAME] [--out FILE.md] [--json FILE]
Each FOLDER gets an optimas.yml (replaced if there is one: run it on a copy of the programs).
--repos surveys the repositories benchmarks/survey_repos.py lists, extracted under --root: every program init
lists in each folder, through the CLI as a user runs it. Where `optimas init DIR --force` writes one config
listing several programs (`programs:`), each is built by `optimas check-config --config DIR/optimas.yml --build
--program NAME`, and `optimas init DIR --program NAME --output ...` is checked to write the same build; where it
writes one program, that is built (`check-config --build`), and each other program its notes name (make's or
CMake's targets, files with a main) gets its own `init --program NAME` and build. Builds are for sm_90 (--arch
is the folder mode's). Run it from a checkout that no one edits meanwhile (a `git archive` of a commit): every init is a
new process that imports the runner afresh.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

log = logging.getLogger(__name__)
INIT_TIMEOUT_S = 600
BUILD_TIMEOUT_S = 900


def survey(folder: Path, arch: str) -> dict:
    """init, then the written build command, in one program folder."""
    from runner.base.config import load_config  # noqa: PLC0415 (only the folder mode needs the runner's API)
    from runner.toolchain.builder import compile_candidate  # noqa: PLC0415

    r = subprocess.run([sys.executable, "-m", "runner.cli", "init", "--force", str(folder)], capture_output=True,
                       text=True, cwd=BENCH.parent)
    if r.returncode != 0:
        return {"program": folder.name, "build": "", "init": r.stderr.strip().splitlines()[-1], "builds": None}
    lc = load_config(folder / "optimas.yml")
    app = lc.config.app
    scaled = re.findall(r"\{(\w+)\*scale\}", app.profile_run or "")
    sizes = (f"arguments: {', '.join(scaled)}" if scaled else
             f"constants: {', '.join(app.size_constants)}" if app.size_constants else "none")
    t0 = time.monotonic()
    # the pipeline's own build: a copy of the workspace, the build environment, the nvcc shim
    built = compile_candidate(lc, {}, arch)
    last = built.output.strip().splitlines()[-1:] if not built.ok else []
    return {"program": folder.name, "build": app.build, "workspace": app.workspace or ".", "sizes": sizes,
            "init": "", "builds": built.ok, "seconds": round(time.monotonic() - t0, 1),
            "error": last[0] if last else ""}


# ---- the repository survey (--repos) ----

# what init's notes say (runner/init/scaffold.py and runs.py write them)
_MAKE_PROGRAMS = re.compile(r"make's default goal links (\d+) programs \((.*?)\); this config builds")
_CMAKE_PROGRAMS = re.compile(r"CMake's File API \(configured in a temporary folder\) lists (\d+) executables? with "
                             r"CUDA code \(compiled or linked\): (.*?)\. Building target")
_CMAKE_TEXT = re.compile(r"CMakeLists\.txt: building target '[^']+' \(of ([^;)]*)(?:;[^)]*)?\), configured "
                         r"from the top")
_MAINS = re.compile(r"several files define main\(\) \((.*?)\); the build uses (\S+)")
_ARGC = re.compile(r"main stops unless given (\d+) arguments?")
_ARGS_FOUND = re.compile(r"the run arguments are the ones (.*?) gives?: (.*?) \(pass --args")
_REFUSED = re.compile(r"not proposed as size constants: (.*)")
_SIZE_FLAG = re.compile(r"the program takes its size from (\S+)")
# causes outside init: what this machine lacks (no GPU-side library, no MPI, the old SDK)
_LACKS = [
    (re.compile(r"mpi\.h|-lmpi|mpicxx|mpicc"), "MPI (not installed)"),
    (re.compile(r"CMake \d+\.\d+ or higher is required"), "a newer CMake than this machine's"),
    (re.compile(r"cublas|CUDA_cublas_LIBRARY", re.I), "cuBLAS (not installed: no cuda-libraries-dev)"),
    (re.compile(r"curand\w*\.h|-lcurand", re.I), "cuRAND (not installed)"),
    (re.compile(r"cufft\w*\.h|-lcufft", re.I), "cuFFT (not installed)"),
    (re.compile(r"nvml\.h|-lnvidia-ml", re.I), "NVML headers (not installed)"),
    (re.compile(r"npp\w*\.h|-lnpp", re.I), "NPP (not installed)"),
    (re.compile(r"cannot find -lcuda\b|CUDA::cuda_driver"),
     "libcuda.so (no GPU driver, and the toolkit's stubs are not installed)"),
    (re.compile(r"samples/common/inc|helper_(?:functions|cuda|string|timer|math|image)\.h: No such"),
     "the CUDA samples' common/inc (CUDA_PATH/samples, not shipped since CUDA 11.6)"),
    (re.compile(r"nccl\.h|-lnccl"), "NCCL (not installed)"),
    (re.compile(r"cudnn\.h|-lcudnn"), "cuDNN (not installed)"),
    (re.compile(r"NvInfer|tensorrt", re.I), "TensorRT (not installed)"),
    (re.compile(r"opencv", re.I), "OpenCV (not installed)"),
    (re.compile(r"GL/gl|glut|-lGL|EGL", re.I), "OpenGL/EGL (not installed)"),
    (re.compile(r"boost", re.I), "Boost (not installed)"),
    (re.compile(r"\.\./\.\./common/common\.mk|\bcutil", re.I),
     "the CUDA SDK 2.x common.mk/cutil (not in the repository)"),
    (re.compile(r"\bpgc|nvc\+\+|-acc\b"), "an OpenACC compiler (not installed)"),
]

# what CUDA 13 removed (the build needs an older CUDA): the compiler's first error names it
_OLD_CUDA = [
    (re.compile(r"cudaDeviceProp.{0,3} has no member named .(\w+)|\"(\w+)\" is not a member of \"cudaDeviceProp"
                r"|class \"cudaDeviceProp\" has no member \"(\w+)\""),
     "cudaDeviceProp::{} (removed in CUDA 13)"),
    (re.compile(r"calling a __host__ function\(\"(cudaDeviceSynchronize)\"\) from a __global__"),
     "device-side {} (removed in CUDA 12)"),
    (re.compile(r"from .CUdevice. \{aka .int.\} to .(CUmemLocation)"),
     "cuMemAdvise/cuMemPrefetchAsync taking a CUdevice (CUDA 13 takes a {})"),
    (re.compile(r"(nvToolsExt\.h): No such file"), "NVTX 2's {} (removed in CUDA 13)"),
    (re.compile(r"identifier \"(cudaThreadSynchronize|cudaMemcpyToArray|cudaBindTexture\w*|cudaUnbindTexture)\" is "
                r"undefined"), "{} (removed by CUDA 13)"),
]
# an exercise whose blanks are the point: the file the error is in holds FIXME where code goes
_FIXME = re.compile(r"\bFIXME\b")
_ERROR_FILE = re.compile(r"([\w./-]+\.(?:cu|cuh|cpp|h))[(:]")


def _missing_include(folder: Path) -> str:
    """What the machine lacks where init refused a Makefile that is a fragment: a file it includes
    that is not there (the CUDA SDK 2.x's common.mk), as _LACKS names it."""
    mk = folder / "Makefile"
    if not mk.is_file():
        return ""
    for m in re.finditer(r"^\s*-?include\s+(\S+)", mk.read_text(errors="replace"), re.M):
        if "$" not in m.group(1) and not (folder / m.group(1)).exists():
            return _lacks(f"include {m.group(1)}")
    return ""


def _older_cuda(cause: str) -> str:
    for pat, what in _OLD_CUDA:
        if m := pat.search(cause):
            return "an older CUDA: " + what.format(next(g for g in m.groups() if g))
    return ""


def _fixme_blanks(folder: Path, program: str, cause: str) -> str:
    """Where the file the build fails in (or the program's own .cu) holds FIXME blanks: what to say."""
    m = _ERROR_FILE.search(cause)
    names = [m.group(1)] if m else []
    names.append(Path(program).stem + ".cu")
    for name in names:
        f = folder / name
        if f.is_file() and (n := len(_FIXME.findall(f.read_text(errors="replace")))):
            answers = sorted(p.name for p in f.parent.glob(f"{f.stem}*solution*"))
            return (f"an exercise: {name} holds {n} FIXME blanks to fill in"
                    + (f" (the answer: {', '.join(answers)})" if answers else ""))
    return ""


@dataclass
class Row:
    """One program of the survey: init's verdict and the pipeline's build of what it wrote."""

    repo: str
    folder: str
    program: str  # as init names it (make/CMake target or binary, or the .cu file with main)
    command: str  # the init command line
    configured: bool = False
    kind: str = ""  # init's build kind (nvcc, make, cmake)
    build: str = ""
    init_notes: list[str] = field(default_factory=list)
    init_error: str = ""
    programs_listed: list[str] = field(default_factory=list)
    argc_needs: int | None = None  # arguments main demands (init's argc guard note)
    run_args: str = ""  # app.run's arguments as written
    args_from: str = ""  # where init took the run arguments from
    size_arguments: list[str] = field(default_factory=list)
    size_constants: list[str] = field(default_factory=list)
    refused_constants: list[str] = field(default_factory=list)
    builds: bool | None = None
    build_seconds: float = 0.0
    build_output: str = ""
    cause: str = ""  # one line: why it did not build (or was not configured)
    lacks: str = ""  # what the machine lacks, where that is the cause (an older CUDA too)
    upstream: str = ""  # why the upstream source does not compile as written (an exercise's FIXME blanks)
    program_option: str = ""  # what `init --program NAME` writes for a listed program (multi-program configs)


def _run(cmd: list[str], timeout: int) -> tuple[int, str, str]:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=BENCH.parent, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), \
            f"timed out after {timeout} s"
    return r.returncode, r.stdout, r.stderr


def _notes(stdout: str) -> list[str]:
    return [line.strip()[len("check: "):] for line in stdout.splitlines() if line.strip().startswith("check: ")]


def _first_error(text: str) -> str:
    """The first line of a build's output that says what went wrong."""
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    # a compiler's or linker's own error first: a tool the Makefile runs on the side may print an
    # "error" line first (llm.c's `$(shell __nvcc_device_query)` on a machine without a driver)
    for pat in (r"fatal error|\berror:|No such file|cannot find|undefined reference|No rule to make|"
                r"Unsupported gpu architecture|CMake Error",
                r"\berror\b|fatal|not found|\*\*\*"):
        hit = next((x for x in lines if re.search(pat, x, re.I) and not x.startswith("build failed after")), None)
        if hit:
            return hit[:240]
    return (lines[-1] if lines else "")[:240]


def _lacks(text: str) -> str:
    return next((what for pat, what in _LACKS if pat.search(text)), "")


def _split_programs(listed: str) -> list[str]:
    """`a, b and 3 more` or CMake's `t -> art (src); u -> ...`: the names (the shown ones)."""
    if "->" in listed:
        return [p.split(" -> ")[0].strip() for p in listed.split("; ") if " -> " in p]
    listed = re.sub(r" and \d+ more$", "", listed)
    return [p.strip() for p in listed.split(", ") if p.strip()]


def _all_programs(folder: Path, kind: str, shown: list[str], total: int) -> list[str]:
    """Every program of a folder's build, where init's note shows only the first 12 (read through the
    same make dry run / CMake File API init asks; read-only)."""
    if len(shown) >= total:
        return shown
    try:
        if kind == "make":
            from runner.init import make_db  # noqa: PLC0415

            run = make_db.dry_run(folder)
            return run.programs if run else shown
        from runner.init import cmake_api  # noqa: PLC0415

        model = cmake_api.configure(folder)
        chosen = cmake_api.choose_program(model, [])
        return [t.name for t in chosen[1]] if chosen else shown
    except Exception as e:  # noqa: BLE001 (the runner's API moves; the shown ones stand)
        log.warning("%s: could not list every program (%s)", folder, e)
        return shown


def _fill(row: Row, app: dict, notes: list[str]) -> None:
    """A row's build, run arguments, sizes and argc figures from what init wrote (`app`) and said."""
    row.init_notes = notes
    row.build = app.get("build", "")
    run = app.get("run", "")
    row.run_args = run.split(" ", 1)[1] if " " in run else ""
    row.size_arguments = re.findall(r"\{(\w+)\*scale\}", app.get("profile_run") or "")
    row.size_constants = list(app.get("size_constants") or [])
    for note in row.init_notes:
        if (m := _ARGC.search(note)) and row.argc_needs is None:
            row.argc_needs = int(m.group(1))
        if m := _ARGS_FOUND.search(note):
            row.args_from = m.group(1)
        if m := _REFUSED.search(note):
            row.refused_constants = [x.split(":")[0].strip() for x in m.group(1).split("; ")]
        if m := _SIZE_FLAG.search(note):
            row.args_from = row.args_from or f"size flag {m.group(1)}"


def _check_build(row: Row, config: Path, program: str | None) -> None:
    """check-config --build of one program of what init wrote: the pipeline's build."""
    t0 = time.monotonic()
    rc, out, err = _run([sys.executable, "-m", "runner.cli", "check-config", "--config", str(config), "--build",
                         *(["--program", program] if program else [])], BUILD_TIMEOUT_S)
    row.build_seconds = round(time.monotonic() - t0, 1)
    row.builds = rc == 0
    text = out + err
    row.build_output = text[-3000:] if rc else "\n".join(x for x in text.splitlines() if "ptxas" not in x)[-600:]
    if rc:
        row.cause = _first_error(text)
        # what the first error names (a CMake configure's NOTFOUND: the variables it lists after)
        row.lacks = (_lacks(row.cause) or (_lacks(text) if row.cause.startswith("CMake Error") else "")
                     or _older_cuda(row.cause))
        if not row.lacks:
            row.upstream = _fixme_blanks(config.parent, row.program, row.cause)


def _init_and_build(repo: str, root: Path, folder: str, program: str | None, arch: str) -> Row:
    """init (with --program where given), then check-config --build of what it wrote (one program)."""
    path = root / folder
    cmd = [sys.executable, "-m", "runner.cli", "init", str(path), "--force"] + (["--program", program] if program
                                                                                else [])
    shown = "optimas init " + " ".join([folder, "--force"] + (["--program", program] if program else []))
    row = Row(repo, folder, program or "", shown)
    rc, out, err = _run(cmd, INIT_TIMEOUT_S)
    if rc != 0:
        row.init_notes = _notes(out)
        row.init_error = (err.strip().splitlines() or [f"exit {rc}"])[-1][:400]
        row.cause = "init refused: " + row.init_error[:300]
        row.lacks = _missing_include(path) if "a fragment another Makefile includes" in row.init_error else ""
        return row
    row.configured = True
    m = re.search(r"build by (.+)$", out, re.M)
    row.kind = m.group(1).strip() if m else ""
    _fill(row, yaml.safe_load((path / "optimas.yml").read_text())["app"], _notes(out))
    _check_build(row, path / "optimas.yml", None)
    return row


def _notes_by_program(stdout: str) -> tuple[list[str], dict[str, list[str]]]:
    """A multi-program init's notes: those for every program, and each program's own."""
    common: list[str] = []
    own: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("  check (every program): "):
            common.append(line[len("  check (every program): "):].strip())
        elif line.startswith("    check: ") and current is not None:
            own[current].append(line[len("    check: "):].strip())
        elif (m := re.match(r"  (\S+): \d+ kernels? ", line)) is not None:
            current = m.group(1)
            own[current] = []
    return common, own


def _program_option(root: Path, folder: str, name: str, build: str) -> str:
    """What `init --program NAME` writes for a program a multi-program config lists: the same build,
    another one, or init's error (written beside, then removed)."""
    out = root / folder / ".optimas-survey-program.yml"
    rc, _, err = _run([sys.executable, "-m", "runner.cli", "init", str(root / folder), "--force", "--program", name,
                       "--output", str(out)], INIT_TIMEOUT_S)
    try:
        if rc != 0:
            return "refused: " + (err.strip().splitlines() or [f"exit {rc}"])[-1][:200]
        written = yaml.safe_load(out.read_text())["app"].get("build", "")
        return "same build" if written == build else f"another build: {written}"
    finally:
        out.unlink(missing_ok=True)
        (root / folder / "compile_commands.json").unlink(missing_ok=True)


def _listed_rows(repo: str, root: Path, folder: str, out: str) -> list[Row]:
    """Each program a multi-program config lists: its build by check-config --build --program, and
    what `init --program NAME` writes for it."""
    config = root / folder / "optimas.yml"
    data = yaml.safe_load(config.read_text())
    m = re.search(r"build by (.+)$", out, re.M)
    common, own = _notes_by_program(out)
    names = [p["name"] for p in data["programs"]]
    rows = []
    for entry in data["programs"]:
        row = Row(repo, folder, entry["name"], f"optimas init {folder} --force", configured=True,
                  kind=m.group(1).strip() if m else "", programs_listed=names)
        _fill(row, {**data["app"], **entry}, common + own.get(entry["name"], []))
        _check_build(row, config, entry["name"])
        rows.append(row)
    for row in rows:  # after the builds: init --program writes compile_commands.json beside the config
        row.program_option = _program_option(root, folder, row.program, row.build)
    return rows


def survey_folder(repo: str, root: Path, folder: str, arch: str) -> list[Row]:
    """Every program init lists in one folder: one config listing each (each built by itself, and
    `init --program NAME` checked to write the same build), or the one program init writes."""
    path = root / folder
    rc, out, _ = _run([sys.executable, "-m", "runner.cli", "init", str(path), "--force"], INIT_TIMEOUT_S)
    if rc == 0 and (yaml.safe_load((path / "optimas.yml").read_text()) or {}).get("programs"):
        return _listed_rows(repo, root, folder, out)
    first = _init_and_build(repo, root, folder, None, arch)
    notes = " ".join(first.init_notes)
    listed: list[str] = []
    if m := _MAINS.search(notes):  # standalone .cu files, one of them with kernels: --program picks another
        listed, first.program = [x.strip() for x in m.group(1).split(", ")], m.group(2)
    elif m := _MAKE_PROGRAMS.search(notes) or _CMAKE_PROGRAMS.search(notes):
        listed = _all_programs(path, first.kind, _split_programs(m.group(2)), int(m.group(1)))
    elif (t := _CMAKE_TEXT.search(notes)) and ", " in t.group(1):  # CMake's text read: its targets
        listed = [x.strip() for x in t.group(1).split(", ")]
    if not listed or not first.configured:
        made = re.search(r"building target '([^']+)'", notes)
        first.program = made.group(1) if made else Path(folder).name if folder != "." else repo.split("/")[1]
        return [first]
    first.programs_listed = listed
    if not first.program:
        built = re.search(r"this config builds (\S+?)[;.]?(?:\s|$)|Building target '([^']+)'|building target "
                          r"'([^']+)' \(of", notes)
        first.program = next((g for g in built.groups() if g), listed[0]) if built else listed[0]
    rows = [first]
    for p in listed:
        if p in (first.program, Path(first.program).name):
            continue
        row = _init_and_build(repo, root, folder, Path(p).name if p.endswith(".cu") else p, arch)
        row.programs_listed = listed
        rows.append(row)
    return rows


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _row_md(r: Row) -> str:
    verdict = ("yes" if r.builds else f"no: {_cell(r.cause)}" if r.configured else _cell(r.cause))
    if not r.builds and (r.lacks or r.upstream):
        verdict += f" ({'needs ' + r.lacks if r.lacks else _cell(r.upstream)})"
    sizes = (f"arguments: {', '.join(r.size_arguments)}" if r.size_arguments else
             f"constants: {', '.join(r.size_constants)}" if r.size_constants else "none")
    if r.refused_constants:
        sizes += f"; refused: {', '.join(r.refused_constants)}"
    argc = "" if r.argc_needs is None else (f"{r.argc_needs}: " + (f"from {r.args_from}" if r.args_from
                                                                     else "none found"))
    build = f"`{_cell(r.build)}`" if r.build else ""
    return (f"| {r.folder} | {r.program} | {r.kind} | {build} | {argc} | {sizes} | {verdict} | "
            f"{_cell(r.program_option)} |")


def summary(rows: list[Row]) -> dict:
    """The per-repository figures."""
    conf = [r for r in rows if r.configured]
    return {"programs": len(rows), "configs": len(conf), "builds": sum(bool(r.builds) for r in conf),
            "lacks": sum(bool(r.lacks) for r in rows if not r.builds),
            "upstream": sum(bool(r.upstream) for r in rows if not r.builds and not r.lacks),
            "argc": sum(r.argc_needs is not None for r in conf),
            "argc_args_found": sum(r.argc_needs is not None and bool(r.args_from) for r in conf),
            "constants_kept": sum(len(r.size_constants) for r in conf),
            "constants_refused": sum(len(r.refused_constants) for r in conf),
            "size_arguments": sum(bool(r.size_arguments) for r in conf)}


def survey_repos(root: Path, arch: str, only: str | None, jobs: int) -> dict[str, list[Row]]:
    """Every folder of every listed repository (two folders at a time), rows kept in the list's order."""
    from survey_repos import SURVEY  # noqa: PLC0415

    repos = [r for r in SURVEY if only is None or only in r.slug]
    work = [(r, f) for r in repos for f in r.folders]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(lambda rf: survey_folder(rf[0].slug, root / rf[0].name, rf[1], arch), work))
    out: dict[str, list[Row]] = {r.slug: [] for r in repos}
    for (r, _), rows in zip(work, done, strict=True):
        out[r.slug] += rows
        for row in rows:
            print(f"{r.name}: {_row_md(row)}", flush=True)
    return out


def _share(s: dict) -> str:
    """Builds passing of the programs whose build needs nothing the machine lacks (and whose upstream
    source compiles as written)."""
    n = s["programs"] - s["lacks"] - s["upstream"]
    return f"{s['builds']} of {n}" + (f" ({100 * s['builds'] / n:.0f} %)" if n else "")


def repos_report(found: dict[str, list[Row]]) -> str:
    """The Markdown tables: the per-repository figures, then every program."""
    from survey_repos import SURVEY  # noqa: PLC0415

    meta = {r.slug: r for r in SURVEY}
    head = ["| repository | commit | programs found | configs written | builds passing | fails for what the machine "
            "lacks (an older CUDA included) | upstream source does not compile as written (exercise blanks) | "
            "builds passing of those needing nothing lacking | runs needing arguments (args found) | size constants "
            "kept / refused | programs with size arguments |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    parts = []
    for slug, rows in found.items():
        s = summary(rows)
        m = meta[slug]
        head.append(f"| [{slug}](https://github.com/{slug}) | {m.commit[:10]} ({m.date}) | {s['programs']} | "
                    f"{s['configs']} | {s['builds']} | {s['lacks']} | {s['upstream']} | {_share(s)} | "
                    f"{s['argc']} ({s['argc_args_found']}) | "
                    f"{s['constants_kept']} / {s['constants_refused']} | {s['size_arguments']} |")
        parts += [f"\n## {slug}\n", f"https://github.com/{slug} at {m.commit} ({m.date}); license: {m.license}. "
                  f"{m.note}.\n", "| folder | program | init's build | build command written | main's argc "
                  "guard: arguments needed | sizes the counter runs vary | builds in the pipeline's copy | "
                  "`init --program NAME` writes |", "|---|---|---|---|---|---|---|---|", *(_row_md(r) for r in rows)]
    return "\n".join(head + parts) + "\n"


def _trimmed(found: dict[str, list[Row]]) -> dict:
    """The raw per-program records, outputs cut to keep the file small."""
    out = {}
    for slug, rows in found.items():
        recs = []
        for r in rows:
            d = asdict(r)
            d["build_output"] = d["build_output"][-1200:] if not r.builds else d["build_output"][-300:]
            d["init_notes"] = [n[:600] for n in d["init_notes"]]
            d["programs_listed"] = d["programs_listed"][:40]
            recs.append(d)
        out[slug] = {"summary": summary(rows), "programs": recs}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, default=None, help="write the table here too")
    ap.add_argument("--repos", action="store_true", help="survey benchmarks/survey_repos.py's repositories")
    ap.add_argument("--root", type=Path, default=Path("/tmp/survey"), help="where survey_repos.py extracted them")
    ap.add_argument("--only", default=None, help="only the repositories whose owner/name holds this")
    ap.add_argument("--json", type=Path, default=None, help="the raw per-program records (--repos)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.repos:
        found = survey_repos(args.root, args.arch, args.only, args.jobs)
        report = repos_report(found)
        print(report)
        if args.out:
            args.out.write_text(report)
        if args.json:
            args.json.write_text(json.dumps(_trimmed(found), indent=1) + "\n")
        return 0
    rows = ["| program | build command written | workspace | sizes the counter runs vary | "
            "builds in the pipeline's copy |", "|---|---|---|---|---|"]
    for folder in args.folders:
        s = survey(folder.resolve(), args.arch)
        verdict = ("init refused: " + s["init"]) if s["builds"] is None else (
            "yes" if s["builds"] else f"no: {s['error']}".replace("|", "/"))
        build = s["build"].replace("|", "\\|")  # a cell's pipe ends the cell, even in code
        rows.append(f"| {s['program']} | `{build}` | {s.get('workspace', '')} | {s.get('sizes', '')} | "
                    f"{verdict} |")
        print(rows[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
