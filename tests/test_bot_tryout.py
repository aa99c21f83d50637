"""`python -m bot.tryout` (docs/github-app.md, "Try it locally first"), run as a maintainer runs it:
the loopback GitHub with the sample repository, the receiver and both workers, a signed label, and the
App's answer on the loopback GitHub (here without a GPU: the unproven outcome, a neutral check run and
a summary holding the candidate as text, no review); then everything stopped and removed."""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import redis
from conftest import REPO, redis_or_fail

from bot.publish import MARKER

REDIS = "redis://127.0.0.1:6379/0"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")]


def tryout(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "bot.tryout", "--redis-url", REDIS, *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def assert_cleaned_up(out: str) -> None:
    """The temporary folder is gone, and nothing of the try-out's is left in Redis."""
    folder = Path(re.search(r"try-out in (\S+):", out).group(1))
    assert not folder.exists()
    suffix = re.search(r"queues tryout-control-([0-9a-f]+)", out).group(1)
    assert not list(redis.Redis.from_url(REDIS).scan_iter(f"*{suffix}*"))


def test_the_tryout_labels_the_sample_pull_request_and_shows_the_apps_answer(tmp_path: Path):
    redis_or_fail()
    record = tmp_path / "github.json"
    p = tryout("--record", str(record))
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-4000:]
    got = json.loads(record.read_text())
    (check,) = got["check_runs"]
    assert check["name"] == "Optimas" and check["head_sha"] == got["head_sha"] and check["status"] == "completed"
    (summary,) = [c["body"] for c in got["comments"] if MARKER in c["body"]]
    assert "matmul" in summary and "Labelled pull request #2" in out and "=== What the loopback GitHub received" in out
    if shutil.which("nvidia-smi") is None:  # the unproven outcome, said plainly
        assert check["conclusion"] == "neutral" and got["reviews"] == []
        assert "no suggestion was posted" in summary and "```suggestion" not in summary
        assert "No GPU here (nvidia-smi not found): the run stops before validation and timing" in out
        assert "No review: no GPU validated and timed the candidate" in out
    assert "Check run 'Optimas'" in out and "Summary comment on pull request #2" in out
    assert_cleaned_up(out)


def _lines(p: subprocess.Popen) -> queue.Queue:
    """The process's output lines as they come (None at its end)."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in p.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _until(lines: queue.Queue, seen: list[str], pattern: str, timeout_s: float = 300) -> re.Match:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        assert line is not None, "".join(seen)[-4000:]
        seen.append(line)
        if m := re.search(pattern, line):
            return m
    raise AssertionError(f"no line matching {pattern!r}:\n" + "".join(seen)[-4000:])


def test_keep_running_takes_more_labels_until_ctrl_c():
    redis_or_fail()
    p = tryout("--keep-running")
    seen: list[str] = []
    try:
        lines = _lines(p)
        command = _until(lines, seen, r"^\s+(\S+ -m bot\.tryout label .*)$").group(1)
        base = re.search(r"Receiver at (http://127\.0\.0\.1:\d+)/webhook", "".join(seen)).group(1)
        # the printed command labels the pull request again: a second run of the finished head
        again = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=60,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
        assert again.returncode == 0 and again.stdout.startswith("202"), again.stdout + again.stderr
        _until(lines, seen, r"github\s+\| check run Optimas queued")
        _until(lines, seen, r"github\s+\| summary comment")
        p.send_signal(signal.SIGINT)  # Ctrl-C
        p.wait(timeout=120)
        while (line := lines.get(timeout=10)) is not None:
            seen.append(line)
    finally:
        if p.poll() is None:
            p.kill()
    out = "".join(seen)
    assert p.returncode == 0, out[-4000:]
    assert "Stopping." in out
    assert_cleaned_up(out)
    with pytest.raises(OSError):  # the receiver is gone
        urllib.request.urlopen(f"{base}/healthz", timeout=5)


def test_the_throwaway_key_and_secret_are_never_readable_by_others(tmp_path: Path, monkeypatch):
    """An attacker's pass: written first and narrowed after, the key and secret were readable by
    every user of the host for a moment (with --workdir in a folder they can list); a link planted
    in the folder was followed."""
    from bot.tryout import stack

    modes: list[int] = []
    real_chmod = Path.chmod
    monkeypatch.setattr(Path, "chmod", lambda self, mode, **kw: (modes.append(self.stat().st_mode & 0o777),
                                                                 real_chmod(self, mode, **kw))[1])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("theirs")
    (tmp_path / "webhook-secret").symlink_to(elsewhere)
    old = os.umask(0o022)
    try:
        pem, secret, _ = stack.write_secrets(tmp_path)
    finally:
        os.umask(old)
    assert all(mode == 0o600 for mode in modes), [oct(m) for m in modes]
    for path in (pem, tmp_path / "webhook-secret"):
        assert not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "webhook-secret").read_bytes() == secret and elsewhere.read_text() == "theirs"
