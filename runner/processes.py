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
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

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
