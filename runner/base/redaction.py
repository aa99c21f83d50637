"""One redaction step for every text that leaves the process: comments, check runs, reviews, log
records and exceptions turned into messages.

Two nets: the exact values registered as secrets (installation tokens as they are minted, the App's
private key, the webhook secret, model API keys), and token-shaped text whatever its source (GitHub
tokens, credentials in URLs, Authorization headers, PEM private keys, JWTs, common API key forms).
"""

from __future__ import annotations

import logging
import os
import re
import threading

from runner.base.backends import KEY_VARIABLES

MASK = "***"
_MIN_SECRET_LEN = 6  # shorter values would mask ordinary words

_lock = threading.Lock()
_secrets: set[str] = set()

# Environment variables whose values are secrets wherever they are set.
# Every model backend's key variable comes from the backends' registry; the others are the App's own
# secrets and keys of tools that may sit beside it.
SECRET_ENV = ("OPTIMAS_WEBHOOK_SECRET", "OPTIMAS_PRIVATE_KEY", *KEY_VARIABLES, "GOOGLE_API_KEY", "ANTHROPIC_API_KEY",
              "OLLAMA_API_KEY", "NVIDIA_API_KEY", "GITHUB_TOKEN", "GH_TOKEN")

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S), MASK),
    (re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})"), MASK),
    (re.compile(r"(?i)\b(authorization\s*[:=]\s*)(basic|bearer|token)\s+[^\s'\"]+"), r"\1\2 " + MASK),
    # a scheme of at most 32 characters: unbounded, each letter of a long run of scheme characters
    # ("a.a.a...") started a read to the run's end (n^2 steps; an attacker's pass)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)[^/\s:@'\"]*:[^/\s@'\"]+@"), r"\1" + MASK + "@"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
    (re.compile(r"\b(sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,})"), MASK),
]


def register_secret(value: str | bytes | None) -> None:
    """Mask `value` (and its lines, for multi-line secrets such as PEM keys) in every redacted text."""
    if value is None:
        return
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    parts = {text.strip(), *(ln.strip() for ln in text.splitlines() if not ln.startswith("-----"))}
    with _lock:
        _secrets.update(p for p in parts if len(p) >= _MIN_SECRET_LEN)


def register_env_secrets(env: dict[str, str] | None = None, names: tuple[str, ...] = ()) -> None:
    """Register the values of the known secret variables (and of `names`) found in `env`."""
    e = os.environ if env is None else env
    for name in (*SECRET_ENV, *names):
        register_secret(e.get(name))


def redact(text: str) -> str:
    """`text` with every registered secret and every token-shaped string masked."""
    if not text:
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    with _lock:
        known = sorted(_secrets, key=len, reverse=True)
    for value in known:
        if value in text:
            text = text.replace(value, MASK)
    return text


# The worker host's folders, in texts for the pull request: the checkout and the candidates' copies
# of it become paths relative to the checkout, the job's folder a stand-in. Patterns, not values
# registered per job: a failure callback may run in a process that never saw the job's folder.
# Each marker is removed with the path before it: in a chain of segments (/a/b/..., no '//'), up
# to the marker's last occurrence. Written as one pattern (segments, then the marker) it tried
# every '/' of a long path as a start and read to its end each time (n^2 steps: 40 KB of "/a" held
# the worker 17 s; an attacker's pass); each chain is now found once and searched for the marker.
_CHAIN = re.compile(r"(?:/[^\s/'\"`():,;<>]+)+/?")
_HOST_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"/optimas-candidate-\w+/ws/"), ""),
    (re.compile(r"/optimas-job-\w+/(?:work/)?src/"), ""),
    (re.compile(r"/optimas-(?:job|candidate|home)-\w+"), "<job>"),
]


def _through_marker(text: str, marker: re.Pattern[str], replacement: str) -> str:
    """`text` with each chain of path segments that holds `marker` replaced, from its start through
    the marker's last occurrence, by `replacement`."""
    def chain(m: re.Match) -> str:
        found = None
        for found in marker.finditer(m.group(0)):  # noqa: B007 (the last one is wanted)
            pass
        return m.group(0) if found is None else replacement + m.group(0)[found.end():]

    return _CHAIN.sub(chain, text)


_host_paths: dict[str, str] = {}


def register_host_path(path: str | os.PathLike[str], shown_as: str) -> None:
    """Show `path` (a folder of the worker host: the runs folder, its home) as `shown_as` in every
    public text."""
    text = os.fspath(path).rstrip("/")
    if len(text) > 1:
        with _lock:
            _host_paths[text] = shown_as


def public(text: str) -> str:
    """`text` as it may leave for GitHub: redacted, and with the worker host's folders hidden, again
    until nothing changes (a path removed can join the two halves of a key's header that the
    first redaction did not see as one; and public(public(x)) must be public(x))."""
    for _ in range(8):
        done = _hide_host_paths(redact(text))
        if done == text:
            break
        text = done
    return text


def _hide_host_paths(text: str) -> str:
    if not text:
        return text
    for marker, replacement in _HOST_PATTERNS:
        text = _through_marker(text, marker, replacement)
    with _lock:
        known = sorted(_host_paths.items(), key=lambda kv: len(kv[0]), reverse=True)
    for path, shown in known:
        text = text.replace(path, shown)
    return text


def describe(exc: BaseException, limit: int = 2000) -> str:
    """'Type: message' of an exception, redacted and cut to `limit` characters."""
    return redact(f"{type(exc).__name__}: {exc}")[:limit]


_installed = False


def install_log_redaction() -> None:
    """Redact every log record of this process when it is made, whichever logger or handler it goes
    through: the message with its arguments, and the traceback text of exc_info."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    make = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = make(*args, **kwargs)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed format string: keep what there is
            message = str(record.msg)
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return record

    logging.setLogRecordFactory(factory)


# Options whose value is a credential (`--password x`, `--password=x`, redis-cli's `-a x`): the
# value is masked whatever it looks like.
_SECRET_OPTION = re.compile(r"(?i)-{1,2}(?:[\w-]*(?:password|passwd|secret|token|api[-_]?key|auth|pass)[\w-]*|a)")


def redact_command(argv: list[str]) -> list[str]:
    """A command line as it may be kept at rest (a run's manifest): each word redacted (a URL's
    password, a registered secret), and the value of an option that names a credential masked
    (`--password x`, `--token=x`, `-a x`)."""
    out: list[str] = []
    masked_next = False
    for word in map(str, argv):
        if masked_next:
            out.append(MASK)
            masked_next = False
            continue
        name, eq, _value = word.partition("=")
        if _SECRET_OPTION.fullmatch(name):
            if eq:
                out.append(f"{name}={MASK}")
                continue
            masked_next = True
        out.append(redact(word))
    return out
