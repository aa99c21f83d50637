"""The sandbox's limits on processes, memory and the job's folder (issue #43, item 8): a pull
request's build that forks without end, allocates without end or fills its folder is stopped, the
job ends with a message naming the limit and the setting that raises it, and the next build runs.

Every case is bounded by itself as well (a few hundred processes, 1 GiB, 256 MiB written, an outer
timeout), so that a limit that fails to hold cannot hurt the machine running the tests."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from runner.base.limits import DISK, MEMORY, PIDS, LimitExceeded, Limits
from runner.base.processes import child_home, run_process
from runner.base.sandbox import sandboxed

pytestmark = pytest.mark.skipif(not shutil.which("bwrap") or not shutil.which("make"),
                                reason="needs bubblewrap and make")

LIMITS = {PIDS: "64", MEMORY: "256M", DISK: "64M"}
# Each build step is a Makefile's, as a pull request would have it; `ok` is an ordinary build.
MAKEFILE = """\
fork-bomb:
\tfor i in $$(seq 400); do sleep 30 & done; wait
memory-hog:
\tpython3 -c 'import time; x = [(b"1" * (16 << 20), time.sleep(0.01)) for _ in range(64)]'
disk-filler:
\tfor i in $$(seq 32); do dd if=/dev/zero of=fill$$i bs=1M count=8 2>/dev/null; sleep 0.05; done
one-large-file:
\tdd if=/dev/zero of=fill bs=1M count=256
ok:
\techo built > app.out
memfd-hog:
\tpython3 hog.py memfd
deleted-filler:
\tpython3 hog.py deleted
dev-filler:
\tdd if=/dev/zero of=/dev/fill bs=1M count=32
"""
# What no process's resident memory and no folder shows: memory in memfds, disk in files deleted
# while open (each file under the 64M disk limit, which is also the largest file)
HOG = """\
import os, sys, time
if sys.argv[1] == "memfd":
    held = [os.memfd_create("m") for _ in range(6)]  # 288 MiB
    for fd in held:
        os.write(fd, b"1" * (48 << 20))
else:
    held = [open(f"gone{i}", "wb") for i in range(4)]  # 128 MiB
    for i, f in enumerate(held):
        os.unlink(f"gone{i}")
        f.write(b"1" * (32 << 20))
        f.flush()
time.sleep(15)
"""
CASES = [("fork-bomb", "pids", PIDS), ("memory-hog", "memory", MEMORY), ("disk-filler", "disk", DISK),
         ("one-large-file", "disk", DISK), ("memfd-hog", "memory", MEMORY), ("deleted-filler", "disk", DISK)]


@pytest.fixture
def job(tmp_path, monkeypatch) -> Path:
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "Makefile").write_text(MAKEFILE)
    (work / "src" / "hog.py").write_text(HOG)
    return work


def make(work: Path, target: str):
    with child_home(work / "home"):
        return run_process(["make", "-s", target], work / "src", 60, log=work / "build.log",
                           what="the build (app.build)")


@pytest.mark.parametrize(("target", "kind", "setting"), CASES)
def test_a_build_over_a_limit_ends_with_the_limit_named_and_the_next_build_runs(job, target, kind, setting):
    with sandboxed([job]) as box:
        start = time.monotonic()
        with pytest.raises(LimitExceeded) as hit:
            make(job, target)
        took = time.monotonic() - start
        # every later command of this job is refused: the job ends here
        with pytest.raises(LimitExceeded):
            make(job, "ok")
    text = str(hit.value)
    assert f"The sandbox's {kind} limit stopped the build (app.build)" in text and setting in text, text
    assert took < 20, took  # the build alone would run 30 s (the bomb's sleeps) or be done in under one
    assert box.exceeded is hit.value and f"[optimas] {text}" in (job / "build.log").read_text()
    time.sleep(0.3)
    # none of this job's processes outlives it (another suite's, running beside this one, are not this job's)
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == "sleep 30"
                and _in_job(p, job)]
    for leftover in (job / "src").glob("fill*"):
        leftover.unlink()  # the job's folder goes with the job; the next job's is a fresh one
    with sandboxed([job]):
        r = make(job, "ok")
    assert r.returncode == 0 and (job / "src" / "app.out").read_text() == "built\n"


def test_the_sandboxs_dev_takes_no_files(job):
    """bwrap's /dev is a tmpfs of no size: a file there would be memory that no limit counts."""
    with sandboxed([job]) as box:
        r = make(job, "dev-filler")
        assert r.returncode != 0 and "Read-only file system" in r.output, r.output
        assert make(job, "ok").returncode == 0 and box.exceeded is None


def _in_job(proc: Path, job: Path) -> bool:
    """Whether a process is this job's: its HOME is the job's own (child_home), which the sandbox passes on."""
    try:
        return f"HOME={job / 'home'}".encode() in (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def test_an_ordinary_build_under_the_defaults_is_not_stopped(tmp_path, monkeypatch):
    for name in LIMITS:
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "Makefile").write_text(MAKEFILE)
    with sandboxed([work]) as box:
        r = make(work, "ok")
    assert r.returncode == 0 and box.exceeded is None and box.limits == Limits()


@pytest.mark.parametrize(("name", "value"), [(PIDS, "many"), (PIDS, "2"), (MEMORY, "lots"), (DISK, "1M")])
def test_a_limit_set_wrong_is_refused_with_its_name(name, value):
    with pytest.raises(Exception, match=name):
        Limits.from_env({name: value})


def test_sizes_take_binary_units():
    assert Limits.from_env({MEMORY: "512M", DISK: "1.5G", PIDS: "100"}) == Limits(100, 512 << 20, 3 << 29)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                    reason="needs root to run as another user, and a Python that user may run")
def test_an_unprivileged_workers_sandbox_gets_the_kernels_process_limit(job):
    """A worker that is not root: RLIMIT_NPROC (its tasks plus the limit) stops the fork bomb in
    the kernel as well, before the watch's count if the bomb is fast enough."""
    import subprocess
    import tempfile

    from conftest import REPO

    base = Path(tempfile.mkdtemp(prefix="optimas-limits-test-"))
    base.chmod(0o755)
    job = shutil.copytree(job, base / "work")
    subprocess.run(["chown", "-R", "65534:65534", str(job)], check=True)
    code = ("import sys\nfrom pathlib import Path\nfrom runner.base.sandbox import sandboxed\n"
            "from runner.base.processes import run_process\nfrom runner.base.limits import LimitExceeded\n"
            f"work = Path({str(job)!r})\n"
            "with sandboxed([work]):\n"
            "    try:\n"
            "        r = run_process(['make', '-s', 'fork-bomb'], work / 'src', 60, what='the build')\n"
            "        print('RAN', r.returncode, r.output[-1000:])\n"
            "    except LimitExceeded as e:\n"
            "        print('LIMIT', e)\n")
    env = {"PYTHONPATH": str(REPO), "PATH": os.environ["PATH"], "HOME": str(job), **LIMITS}
    start = time.monotonic()
    try:
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                            code], capture_output=True, text=True, env=env, timeout=120)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    took = time.monotonic() - start
    # the watch names the limit, or the kernel's limit stopped the bomb at its first refused fork
    # (before the watch's next count): either way within a second, not after the bomb's 30 s
    assert ("LIMIT The sandbox's pids limit" in r.stdout and PIDS in r.stdout) or "Cannot fork" in r.stdout, \
        r.stdout + r.stderr
    assert took < 10, took


@pytest.mark.slow
@pytest.mark.parametrize(("target", "setting"), [("fork-bomb", PIDS), ("memory-hog", MEMORY), ("disk-filler", DISK)])
def test_a_pull_request_build_over_a_limit_fails_the_job_on_the_pr_and_the_worker_goes_on(
        monkeypatch, tmp_path, job, target, setting):
    """Through the App: a labelled pull request whose build is the Makefile's `target`, run by a
    real RQ worker in a real sandbox; its check run and a comment say which limit stopped it and
    how the operator raises it; the next job of the worker builds."""
    from test_bot_end_to_end import CONFIG, deliver_and_work

    remote = _remote_with_makefile(tmp_path / "one")
    config = CONFIG.replace("build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu",
                            f"build: make -s {target}")
    gh, _, _ = deliver_and_work(monkeypatch, remote, config=config)
    (check,) = gh.check_runs.values()
    assert check["conclusion"] == "failure", check
    said = check["output"]["summary"] + json.dumps([c["body"] for c in gh.comments])
    assert "limit stopped the build (app.build)" in said and setting in said, said
    # the killed group's processes go (polled: on a loaded machine init reaps them a moment later)
    deadline = time.monotonic() + 10
    while (left := [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p) == "sleep 30"]) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left
    # the next job: an ordinary build, through a worker of the same process
    other = _remote_with_makefile(tmp_path / "two")
    gh, _, _ = deliver_and_work(monkeypatch, other, config=CONFIG.replace(
        "build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu", "build: make -s ok"))
    (check,) = gh.check_runs.values()
    said = check["output"]["summary"] + json.dumps([c["body"] for c in gh.comments])
    assert "limit stopped" not in said and "OPTIMAS_SANDBOX" not in said, said
    assert [c for c in gh.comments if "optimas:summary" in c["body"]], said


def _remote_with_makefile(tmp_path: Path) -> tuple[Path, str]:
    """test_bot_end_to_end.make_remote's repository (the example app), with the Makefile beside its sources."""
    from test_bot_end_to_end import make_remote

    return make_remote(tmp_path, ["examples/h200-probe"], {"examples/h200-probe/Makefile": MAKEFILE})
