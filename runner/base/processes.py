"""The environment of every process Optimas starts: builds, the application, nvcc, ncu and probes.

Commands come from a repository's config and run that repository's code, so they get an explicit
minimal environment, never the caller's: PATH, the locale, the CUDA and NVIDIA driver variables,
CUDA_VISIBLE_DEVICES, a HOME of their own, the variables the operator lists in
OPTIMAS_CHILD_ENV (names, comma-separated) and the values the config declares (`app.env`). Tokens,
keys, the webhook secret and the Redis URL of a worker are therefore never inherited.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, cast

from runner.base.errors import ProfilingError

# Passed through from the caller's environment when set.
PASSED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "TERM")
PASSED_PREFIXES = ("CUDA_", "NVIDIA_", "NV_")
OPERATOR_LIST = "OPTIMAS_CHILD_ENV"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Names the operator's list may not pass on, whatever it says.
_NEVER = re.compile(r"(?i)(secret|token|passw|private|api_?key|credential|^optimas_)")

_home: contextvars.ContextVar[Path | None] = contextvars.ContextVar("optimas_child_home", default=None)


@contextlib.contextmanager
def child_home(path: Path) -> Iterator[Path]:
    """Make `path` (created, mode 0700) the HOME of the processes started inside this block."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = _home.set(path)
    try:
        yield path
    finally:
        _home.reset(token)


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
    env = {k: v for k, v in src.items() if k in PASSED or k.startswith(PASSED_PREFIXES)}
    env.update({n: src[n] for n in operator_names(src) if n in src})
    env.setdefault("PATH", os.defpath)
    home = _default_home()
    env["HOME"] = str(home)
    env.update(declared or {})
    return env


Progress = Callable[[str], None]


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    seconds: float
    output: str


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
