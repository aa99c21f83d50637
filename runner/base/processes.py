"""The environment of every process Optimas starts: builds, the application, nvcc, ncu and probes.

Commands come from a repository's config and run that repository's code, so they get an explicit
minimal environment, never the caller's: PATH, the locale, the CUDA variables (CUDA_VISIBLE_DEVICES
included) but those named like credentials, three of the NVIDIA container's, a HOME of their own,
the variables the operator lists in OPTIMAS_CHILD_ENV (names, comma-separated) and the values the
config declares (`app.env`). Tokens, keys, the webhook secret and the Redis URL of a worker are
therefore never inherited.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import re
import shlex
import shutil
import signal
import string
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from runner.base import sandbox
from runner.base.errors import ProfilingError
from runner.base.limits import Watch
from runner.base.progress import Progress

# Passed through from the caller's environment when set.
PASSED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "TERM", "NVIDIA_VISIBLE_DEVICES",
          "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_TF32_OVERRIDE")
# The CUDA runtime's and driver's settings (CUDA_VISIBLE_DEVICES, CUDA_CACHE_PATH, CUDA_MODULE_LOADING,
# ...), less any name that looks like a credential: a list of names denied misses some (NVIDIA_NGC_KEY,
# NV_AUTH), so other NVIDIA_ and NV_ names pass only when the operator lists them (an attacker's pass)
PASSED_PREFIXES = ("CUDA_",)
OPERATOR_LIST = "OPTIMAS_CHILD_ENV"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names the operator's list may not pass on, whatever it says.
_NEVER = re.compile(r"(?i)(secret|token|passw|private|api_?key|credential|^optimas_)")
_NEVER_PREFIXED = re.compile(r"(?i)(secret|token|pass|pwd|private|key|auth|credential|bearer|sign|cert)")

_home: contextvars.ContextVar[Path | None] = contextvars.ContextVar("optimas_child_home", default=None)
_groups: contextvars.ContextVar[Path | None] = contextvars.ContextVar("optimas_process_groups", default=None)
_groups_lock = threading.Lock()


@contextlib.contextmanager
def child_home(path: Path) -> Iterator[Path]:
    """Make `path` (created, mode 0700) the HOME of the processes started inside this block."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = _home.set(path)
    try:
        yield path
    finally:
        _home.reset(token)


@contextlib.contextmanager
def track_process_groups(path: Path) -> Iterator[Path]:
    """While this block runs, every command started in it is listed in `path` (its process group,
    one per line) until it ends. Commands run in sessions of their own, so a process that is killed
    (an RQ work horse stopped by a newer run) leaves them running: whoever killed it calls
    kill_process_groups(path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    token = _groups.set(path)
    try:
        yield path
    except BaseException:
        kill_process_groups(path)  # the block was cut short (a job's timeout): nothing of it runs on
        raise
    finally:
        _groups.reset(token)


def _note_group(pgid: int, running: bool) -> None:
    path = _groups.get()
    if path is None:
        return
    with _groups_lock:
        live = {int(x) for x in path.read_text().split()} if path.exists() else set()
        live = live | {pgid} if running else live - {pgid}
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(f"{g}\n" for g in sorted(live)))
        os.replace(tmp, path)


def kill_process_groups(path: Path) -> list[int]:
    """SIGKILL the process groups listed in `path` that still lead their session (a listed group
    whose leader is gone and whose id was reused is left alone); returns the groups killed."""
    try:
        listed = [int(x) for x in path.read_text().split()]
    except (OSError, ValueError):
        return []
    killed = []
    for pgid in listed:
        try:
            if os.getsid(pgid) == pgid:
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
        except (ProcessLookupError, PermissionError):
            pass
    return killed


def _default_home() -> Path:
    home = _home.get()
    if home is None:
        home = Path(tempfile.gettempdir()) / f"optimas-home-{os.getuid()}"
        home.mkdir(exist_ok=True, mode=0o700)
    return home


def operator_names(env: Mapping[str, str]) -> list[str]:
    """The variable names OPTIMAS_CHILD_ENV passes on (secret-looking names are refused)."""
    names = [n.strip() for n in env.get(OPERATOR_LIST, "").split(",") if n.strip()]
    return [n for n in names if _NAME.fullmatch(n) and not _NEVER.search(n)]


def child_environment(declared: Mapping[str, str] | None = None, source: Mapping[str, str] | None = None
                      ) -> dict[str, str]:
    """The environment of a child process: the allowed part of `source` (default: os.environ),
    a HOME of its own, then the `declared` values (the config's `app.env`)."""
    src = os.environ if source is None else source
    env = {k: v for k, v in src.items()
           if k in PASSED or (k.startswith(PASSED_PREFIXES) and not _NEVER_PREFIXED.search(k))}
    env.update({n: src[n] for n in operator_names(src) if n in src})
    env.setdefault("PATH", os.defpath)
    home = _default_home()
    env["HOME"] = str(home)
    env.update(declared or {})
    return env


def cache_root() -> Path:
    """Where Optimas keeps what it builds once per user and toolkit (the tracer, the nvcc shim):
    OPTIMAS_CACHE_DIR, else $XDG_CACHE_HOME/optimas, else ~/.cache/optimas."""
    if os.environ.get("OPTIMAS_CACHE_DIR"):
        return Path(os.environ["OPTIMAS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "optimas"


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int | None  # None: killed at the timeout
    seconds: float
    output: str  # stdout and stderr, interleaved (stderr only when stdout went to a file or merge_stderr is off)
    timed_out: bool = False
    errors: str = ""  # stderr, when merge_stderr is off
    log: Path | None = None

    def manifest_entry(self, name: str, cwd: Path | None = None, relative_to: Path | None = None) -> dict:
        """What a run's manifest records of this command."""
        entry: dict = {"name": name, "argv": self.argv, "returncode": self.returncode,
                       "seconds": round(self.seconds, 3), "timed_out": self.timed_out}
        if cwd is not None:
            entry["cwd"] = str(cwd)
        if self.log is not None:
            entry["log"] = str(self.log.relative_to(relative_to) if relative_to else self.log)
        return entry


_PRODUCT = re.compile(r"^\s*(\w+)\s*\*\s*(\w+)\s*$")


def placeholders(template: str) -> list[str]:
    """The placeholder names a command template uses, in order (`{n*scale}` as `n*scale`); raises
    ValueError for unbalanced braces."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def product_placeholder(key: str) -> tuple[str, str] | None:
    """`{n*scale}`: the two names a product placeholder multiplies, else None."""
    m = _PRODUCT.match(key)
    return (m.group(1), m.group(2)) if m else None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


ALIGN_MAX = 256  # the largest power-of-two factor of a size that a scaled size keeps


def scaled_size(n: int, scale: float) -> int:
    """`n * scale` rounded to a multiple of n's power-of-two factor (up to ALIGN_MAX and to a quarter
    of n), at least one multiple: sizes a program needs in whole blocks or tiles (320 in 64-wide
    tiles) stay whole, and a power of two as small as 256 still takes every quarter of itself
    (rounded to multiples of 256 it stayed 256 at the scales below 1, so the sweep saw one size)."""
    if n <= 0:
        return round(n * scale)
    align = min(n & -n, ALIGN_MAX)
    while align > 1 and align * 4 > n:
        align //= 2
    return max(align, round(n * scale / align) * align)


SHARE_STEP = 16  # a size's share of a scale is a whole number of sixteenths


def size_share(scale: float, sizes: int) -> float:
    """What each of `sizes` problem sizes is multiplied by at counter scale `scale`: the scale's
    root, so that a problem whose work is the product of its sizes (a grid's width and height, a
    matrix product's three dimensions) does about `scale` times the work, not `scale**sizes`
    (at scale 2 a five-size program ran 32 times the work and memory, at 0.25 a thousandth). The
    root is rounded to sixteenths, which divide a power-of-two size exactly; 1 stays 1 and every
    scale keeps a share of its own above zero."""
    if sizes <= 1 or scale == 1:
        return scale
    return max(1, round(scale ** (1 / sizes) * SHARE_STEP)) / SHARE_STEP


class _Placeholders(dict):
    def __missing__(self, key: str) -> str:
        names = product_placeholder(key)
        if names and all(n in self for n in names):
            a, b = (_number(self[n]) for n in names)
            if a is not None and b is not None:
                # a whole size times a scale stays a whole size: {n*scale}
                whole = re.fullmatch(r"-?\d+", self[names[0]].strip())
                return str(scaled_size(int(a), b)) if whole else f"{a * b:g}"
        raise ProfilingError(f"unknown placeholder {{{key}}} in a command template; known: "
                             f"{', '.join('{' + k + '}' for k in sorted(self))} (and products like {{n*scale}})")


def render(template: str, **values: object) -> list[str]:
    """Split a command template like a shell (no shell runs it) and fill its placeholders per word.

    A word that becomes empty ({lineinfo} in a timing build) is dropped.
    """
    words = shlex.split(template)
    subs = _Placeholders({k: str(v) for k, v in values.items()})
    out = [w.format_map(subs) for w in words]
    return [w for w in out if w != ""]


def run_process(argv: list[str], cwd: Path | None = None, timeout_s: float = 60.0, env: dict[str, str] | None = None,
                log: Path | None = None, stdin: str | None = None, stdout: Path | None = None,
                progress: Progress | None = None, what: str = "command", merge_stderr: bool = True) -> CommandResult:
    """The one way Optimas runs an external command: a session of its own with a minimal environment
    (`env`, default child_environment()), output streamed to `log` (and captured), or stdout to the
    file `stdout` (stderr apart with `merge_stderr` off); at the timeout its whole process group is
    killed and the result says so.

    ncu prints a `==PROF== Profiling "kernel" - N (i/n)` line per profiled launch; these are
    passed on to `progress` at most every two seconds. A program that is not there raises
    ProfilingError naming `what`. In a sandbox, a command over one of its limits is killed and
    raises LimitExceeded (runner.base.limits), after its sweep.
    """
    start = time.monotonic()
    box = sandbox.current()
    if box is not None and box.exceeded is not None:
        raise box.exceeded  # a command of this job went over a limit: nothing more runs, no log is rewritten
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(open(log, "w", encoding="utf-8", errors="replace")) if log is not None else None
        out_file = stack.enter_context(open(stdout, "w", encoding="utf-8", errors="replace")) if stdout else None
        if f is not None:
            f.write("$ " + shlex.join(argv) + "\n")
            f.flush()
        child_env = child_environment() if env is None else env
        if box is None:
            sandbox.check_contained()
        command, where = _in_box(box, argv, cwd, child_env, what)
        proc = _popen(command, where, child_env, stdin is not None, out_file, merge_stderr, argv[0], what)
        _note_group(proc.pid, running=True)  # a new session: its group id is the child's pid
        watch = stack.enter_context(Watch(box.limits, proc, box.writable, what)) if box else None
        try:
            output = _Output(f, progress, what)
            reader, drainer = output.read(proc, to_file=out_file is not None, merge_stderr=merge_stderr)
            if stdin is not None:
                _feed(proc, stdin)
            timed_out = _wait(proc, timeout_s)
            if watch is not None:
                watch.stop()  # the command has ended: nothing more to count
        except BaseException:
            # cut short from outside (the job's timeout, an interrupt): the command must not run on
            # while its caller unwinds and cleans up the folders it writes
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            _note_group(proc.pid, running=False)
            raise
        _note_group(proc.pid, running=False)
        reader.join(timeout=5 if timed_out else None)
        if drainer.is_alive():
            drainer.join(timeout=5 if timed_out else None)
        if timed_out and f is not None:
            f.write(f"\n[optimas] killed after {timeout_s:g} s\n")
    if box is not None:
        box.sweep()  # nothing of the command runs now: what it left is checked before anyone reads it
        exceeded = box.over_limit(what, watch.exceeded if watch else None)
        if exceeded is not None:
            if log is not None:
                with open(log, "a", encoding="utf-8") as f:
                    f.write(f"\n[optimas] {exceeded}\n")
            raise exceeded
    return CommandResult(argv=argv, returncode=None if timed_out else proc.returncode,
                         seconds=time.monotonic() - start, output=output.out.text(), timed_out=timed_out,
                         log=log, errors=output.err.text())


def _in_box(box: sandbox.Sandbox | None, argv: list[str], cwd: Path | None, env: dict[str, str], what: str
            ) -> tuple[list[str], Path | None]:
    """The command line and working folder to start: as given, or wrapped to run in the sandbox (which
    sets the folder itself). In a sandbox a missing program is found missing here, before it starts."""
    if box is None:
        return argv, cwd
    if "/" not in argv[0] and shutil.which(argv[0], path=env.get("PATH")) is None:
        raise ProfilingError(f"{what}: cannot run {argv[0]!r}: not found")
    return box.wrap(argv, cwd), None


def _feed(proc: subprocess.Popen[str], stdin: str) -> None:
    """Write the command's input and close its stdin (a command that exits without reading it is fine)."""
    feed = cast(IO[str], proc.stdin)
    with contextlib.suppress(BrokenPipeError):
        feed.write(stdin)
    feed.close()


def _popen(command: list[str], where: Path | None, env: dict[str, str], with_stdin: bool, out_file: IO[str] | None,
           merge_stderr: bool, program: str, what: str) -> subprocess.Popen[str]:
    """Start the command in a session of its own: stdin a pipe when there is input, stdout to `out_file`
    or a pipe, stderr a pipe of its own when stdout goes to the file or `merge_stderr` is off, else
    merged into stdout. A missing `program` raises ProfilingError naming `what`."""
    separate_stderr = out_file is not None or not merge_stderr
    try:
        return subprocess.Popen(command, cwd=where,
                                stdin=subprocess.PIPE if with_stdin else subprocess.DEVNULL,
                                stdout=out_file if out_file is not None else subprocess.PIPE,
                                stderr=subprocess.PIPE if separate_stderr else subprocess.STDOUT, text=True,
                                errors="replace", start_new_session=True, env=env)
    except FileNotFoundError:
        raise ProfilingError(f"{what}: cannot run {program!r}: not found") from None


def _wait(proc: subprocess.Popen[str], timeout_s: float) -> bool:
    """Wait for the command; at the timeout kill its whole process group. Returns whether it timed out."""
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return True
    return False


KEPT_HEAD = 4 << 20  # characters of a command's output kept from its start ...
KEPT_TAIL = 4 << 20  # ... and from its end; what lies between is left out, and the text says so
LOG_LIMIT = 32 << 20  # characters of output a log file takes, then a note that the rest is left out
_PIECE = 1 << 16  # the longest piece read at once: a line without end is read in pieces


class _Kept:
    """Text kept from a stream of any length in bounded memory: its first KEPT_HEAD and last
    KEPT_TAIL characters (the program under test may print gigabytes, or one line without end)."""

    def __init__(self) -> None:
        self.head: list[str] = []
        self.tail: collections.deque[str] = collections.deque()
        self.head_size = self.tail_size = self.left_out = 0

    def add(self, piece: str) -> None:
        if self.head_size < KEPT_HEAD:
            self.head.append(piece)
            self.head_size += len(piece)
            return
        self.tail.append(piece)
        self.tail_size += len(piece)
        while self.tail_size > KEPT_TAIL and len(self.tail) > 1:
            dropped = self.tail.popleft()
            self.tail_size -= len(dropped)
            self.left_out += len(dropped)

    def text(self) -> str:
        middle = f"\n[optimas] {self.left_out} characters of output left out here\n" if self.left_out else ""
        return "".join(self.head) + middle + "".join(self.tail)


class _Output:
    """A running command's output, read by threads of its own: captured (its start and its end, see
    _Kept), copied to the log file (up to LOG_LIMIT), and ncu's per-launch progress lines passed on."""

    def __init__(self, log_file: IO[str] | None, progress: Progress | None, what: str) -> None:
        self.log_file = log_file
        self.progress = progress
        self.what = what
        self.out = _Kept()
        self.err = _Kept()
        self.logged = 0

    def read(self, proc: subprocess.Popen[str], to_file: bool, merge_stderr: bool
             ) -> tuple[threading.Thread, threading.Thread]:
        """Start reading: the main stream (stderr when stdout goes to a file, else stdout) and, when
        stderr is a pipe of its own beside a piped stdout, stderr apart. Returns both threads (the
        second not started when there is no such stderr)."""
        stream = cast(IO[str], proc.stderr if to_file else proc.stdout)
        drainer = threading.Thread(target=self._drain, args=(cast(IO[str], proc.stderr),), daemon=True)
        if not to_file and not merge_stderr:
            drainer.start()
        reader = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        reader.start()
        return reader, drainer

    def _drain(self, errors: IO[str]) -> None:
        """Capture stderr apart from the output."""
        for line in iter(lambda: errors.readline(_PIECE), ""):
            self.err.add(line)

    def _pump(self, stream: IO[str]) -> None:
        """Capture the output and copy it to the log; pass ncu's progress lines on, at most every 2 s."""
        last_note = 0.0
        for line in iter(lambda: stream.readline(_PIECE), ""):
            self.out.add(line)
            self._log(line)
            now = time.monotonic()
            if self.progress and line.startswith("==PROF== Profiling") and now - last_note >= 2.0:
                self.progress(f"{self.what}: {line.strip()[len('==PROF== '):]}")
                last_note = now

    def _log(self, line: str) -> None:
        """Copy a line to the log file, up to LOG_LIMIT characters."""
        if self.log_file is None or self.logged > LOG_LIMIT:
            return
        self.logged += len(line)
        self.log_file.write(line if self.logged <= LOG_LIMIT else
                            f"\n[optimas] the log ends here: the command printed more than {LOG_LIMIT} characters\n")


def run_command(argv: list[str], cwd: Path, timeout_s: float, log: Path, progress: Progress | None = None,
                what: str = "command", env: dict[str, str] | None = None) -> CommandResult:
    """run_process for the profiler's steps: a timeout is an error that says what to raise."""
    result = run_process(argv, cwd, timeout_s, env=env, log=log, progress=progress, what=what)
    if result.timed_out:
        raise ProfilingError(f"{what} timed out after {timeout_s:g} s and was killed (log: {log}); raise "
                             "app.timeout_s or profiling.timeout_s if it needs longer")
    return result
