"""What `make test` needs, checked first (#46, item 5): on a machine with neither Redis, Chromium nor
a way to install them, tests/prerequisites.sh stops at once with one message naming all of it and
how to skip what needs it; the skip variables let it through, each skip said."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from conftest import REPO

SCRIPT = REPO / "tests" / "prerequisites.sh"


def _bare_machine(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH holds only the shell and the coreutils the script calls: no Redis,
    no Chromium, no bwrap and no apt-get, as on a fresh machine without root."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "id", "nproc", "seq", "sleep"):
        (bare / tool).symlink_to(shutil.which(tool))
    return {"PATH": str(bare), "HOME": str(tmp_path)}


def test_a_machine_lacking_redis_and_chromium_stops_at_once_with_one_message(tmp_path: Path):
    t0 = time.monotonic()
    r = subprocess.run([shutil.which("bash"), str(SCRIPT)], env=_bare_machine(tmp_path), capture_output=True,
                       text=True, timeout=60)
    seconds = time.monotonic() - t0
    assert r.returncode == 1 and seconds < 10, (r.returncode, seconds)
    lines = r.stderr.splitlines()
    assert lines[0] == "make: the tests need what this machine lacks:"
    assert len(lines) == 3 and "a Redis at 127.0.0.1:6379" in lines[1] and "Chromium and its driver" in lines[2]
    assert "OPTIMAS_TESTS_WITHOUT_REDIS=1" in lines[1] and "OPTIMAS_TESTS_WITHOUT_BROWSER=1" in lines[2]
    assert "no bubblewrap (bwrap): the GPU job's sandbox tests are skipped" in r.stdout
    assert "running the tests" not in r.stdout


def test_the_skip_variables_let_it_through_and_say_what_is_skipped(tmp_path: Path):
    env = {**_bare_machine(tmp_path), "OPTIMAS_TESTS_WITHOUT_REDIS": "1", "OPTIMAS_TESTS_WITHOUT_BROWSER": "1"}
    r = subprocess.run([shutil.which("bash"), str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert "the bot's tests are skipped (OPTIMAS_TESTS_WITHOUT_REDIS=1)" in r.stdout
    assert "the dashboard's browser tests are skipped (OPTIMAS_TESTS_WITHOUT_BROWSER=1)" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("make: running the tests on ")
