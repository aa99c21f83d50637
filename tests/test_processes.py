"""The one process runner every external command goes through (runner.base.processes.run_process)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from runner.base.config import load_config
from runner.base.errors import ProfilingError
from runner.base.processes import run_command, run_process
from runner.toolchain.compiler import BuildOptions, build


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text().split()
    return stat[2] != "Z"  # a zombie waiting for its reaper is dead


def test_a_timeout_kills_the_whole_process_group_and_says_so(tmp_path):
    pidfile = tmp_path / "child.pid"
    log = tmp_path / "logs" / "slow.log"
    r = run_process(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo started; wait"], tmp_path, 1.0, log=log)
    assert r.timed_out and r.returncode is None and 1.0 <= r.seconds < 10
    assert "started" in r.output
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)  # the grandchild went with its group
    text = log.read_text()
    assert text.startswith("$ sh -c ") and "[optimas] killed after 1 s" in text
    assert r.manifest_entry("slow", tmp_path, tmp_path) == {
        "name": "slow", "argv": r.argv, "returncode": None, "seconds": round(r.seconds, 3), "timed_out": True,
        "cwd": str(tmp_path), "log": "logs/slow.log"}
    with pytest.raises(ProfilingError, match="timed out after 1 s and was killed"):
        run_command(["sleep", "5"], tmp_path, 1.0, tmp_path / "x.log", what="the app")


def test_stdout_to_a_file_stdin_and_stderr_apart(tmp_path):
    out = tmp_path / "page.csv"
    r = run_process(["sh", "-c", "cat; echo oops >&2"], tmp_path, 10, stdin="a,b\n1,2\n", stdout=out)
    assert out.read_text() == "a,b\n1,2\n" and r.output == "oops\n" and r.returncode == 0
    r = run_process(["sh", "-c", "echo data; echo warning >&2; exit 3"], tmp_path, 10, merge_stderr=False)
    assert (r.output, r.errors, r.returncode) == ("data\n", "warning\n", 3)
    with pytest.raises(ProfilingError, match="the probe: cannot run 'no-such-program-x': not found"):
        run_process(["no-such-program-x"], tmp_path, 10, what="the probe")


def test_a_build_that_times_out_says_after_how_long(tmp_path):
    (tmp_path / "optimas.yml").write_text("app:\n  build: sleep 30\n  timeout_s: 1\n")
    result = build(load_config(tmp_path / "optimas.yml"), tmp_path, "sm_90", options=BuildOptions(verbose=False))
    assert not result.ok and result.output == "the build timed out after 1 s and was killed"


def test_commands_left_by_a_killed_caller_can_be_killed(tmp_path):
    """While run_process waits, its command's group is listed; kill_process_groups ends it (as the
    bot's stopped callback does for a stopped job), and a finished command is no longer listed."""
    import contextvars
    import threading

    from runner.base.processes import kill_process_groups, track_process_groups

    groups = tmp_path / "groups"
    results = []
    with track_process_groups(groups):
        ctx = contextvars.copy_context()
        t = threading.Thread(target=ctx.run, args=(lambda: results.append(run_process(["sleep", "30"], tmp_path,
                                                                                      60)),))
        t.start()
        for _ in range(50):
            if groups.read_text().strip():
                break
            time.sleep(0.1)
        (pgid,) = [int(x) for x in groups.read_text().split()]
        assert kill_process_groups(groups) == [pgid]
        t.join(timeout=10)
    (r,) = results
    assert r.returncode == -9 and r.seconds < 10 and groups.read_text() == ""
    assert kill_process_groups(groups) == []


def _counting_app(tmp_path: Path, monkeypatch, slow: str = ""):
    """An app whose build appends a line to a file per build (the loaded config, that file), with
    OPTIMAS_BUILD_CACHE set; `slow`: shell commands the build runs before its copy."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "k.cu").write_text("int main() { return 0; }\n")
    count = tmp_path / "builds"
    (app / "optimas.yml").write_text(
        "app:\n  sources: [k.cu]\n"
        f"  build: sh -c 'echo built >> {count}; {slow}cp k.cu {{exe}}'\n")
    monkeypatch.setenv("OPTIMAS_BUILD_CACHE", str(tmp_path / "cache"))
    return load_config(app / "optimas.yml"), count


def test_the_same_build_is_done_once_with_a_build_cache(tmp_path, monkeypatch):
    """OPTIMAS_BUILD_CACHE: the same workspace contents, command and compiler build once; an edited
    source builds again; a kept binary comes back from the cache."""
    from runner.toolchain.builder import compile_candidate

    lc, count = _counting_app(tmp_path, monkeypatch)
    app = tmp_path / "app"
    first = compile_candidate(lc, {}, "sm_90", exe=tmp_path / "a")
    again = compile_candidate(lc, {}, "sm_90", exe=tmp_path / "b")
    assert first.ok and count.read_text().count("built") == 1
    assert (first.cached, again.cached) == (False, True) and again.model_copy(update={"cached": False}) == first
    assert (tmp_path / "b").read_text() == "int main() { return 0; }\n"
    edited = compile_candidate(lc, {"k.cu": "int main() { return 1; }\n"}, "sm_90")
    assert edited.ok and count.read_text().count("built") == 2
    # the key is what a copy would hold: a header the sources do not name counts, a run folder and
    # a dangling link do not; an edit given back as the file's own text builds nothing new
    (app / "common.h").write_text("// shared\n")
    compile_candidate(lc, {}, "sm_90")
    assert count.read_text().count("built") == 3
    (app / "runs" / "r1").mkdir(parents=True)
    (app / "runs" / "r1" / "manifest.json").write_text("{}")
    (app / "gone.dat").symlink_to("never-pulled.dat")
    assert compile_candidate(lc, {"k.cu": "int main() { return 0; }\n"}, "sm_90").cached
    assert count.read_text().count("built") == 3
    monkeypatch.delenv("OPTIMAS_BUILD_CACHE")
    compile_candidate(lc, {}, "sm_90")
    assert count.read_text().count("built") == 4  # no cache: every build runs


def test_the_same_build_asked_for_at_once_is_made_once(tmp_path, monkeypatch):
    """llm.candidates' threads each build the original for their prompt at the same moment (and
    xdist's workers share one cache): one caller builds, the others wait for it and take it from
    the cache, each with its own binary."""
    from concurrent.futures import ThreadPoolExecutor

    from runner.toolchain.builder import compile_candidate

    lc, count = _counting_app(tmp_path, monkeypatch, "sleep 1; ")
    with ThreadPoolExecutor(max_workers=4) as pool:
        built = list(pool.map(lambda n: compile_candidate(lc, {}, "sm_90", exe=tmp_path / f"exe{n}"), range(4)))
    assert all(b.ok for b in built) and count.read_text().count("built") == 1
    assert sorted(b.cached for b in built) == [False, True, True, True]
    assert all((tmp_path / f"exe{n}").read_text() == "int main() { return 0; }\n" for n in range(4))


def test_a_size_scales_with_the_scale_placeholder():
    from runner.base.processes import render

    argv = render("{exe} -n {n*scale} -t {t*scale} {iters}", exe="app", n="1024", t="0.5", scale=0.25, iters=3)
    assert argv == ["app", "-n", "256", "-t", "0.125", "3"]
    # a scaled size keeps its power-of-two factor: 320 = 5 x 64 stays in whole 64s (tiles, blocks)
    assert [render("{n*scale}", n="320", scale=s)[0] for s in (0.25, 0.5, 0.75, 1, 1.5, 2)] == \
        ["64", "128", "256", "320", "512", "640"]
    assert render("{n*scale}", n="1000", scale=0.25) == ["248"]  # 1000 = 125 x 8
    # a power of two keeps quarters of itself, so that every scale gives another size
    for n, sizes in (("256", ["64", "128", "192", "256", "384", "512"]),
                     ("512", ["128", "256", "384", "512", "768", "1024"]),
                     ("64", ["16", "32", "48", "64", "96", "128"])):
        assert [render("{n*scale}", n=n, scale=s)[0] for s in (0.25, 0.5, 0.75, 1, 1.5, 2)] == sizes, n
    assert render("{n*scale}", n="3", scale=0.25) == ["1"]  # never below one multiple
    with pytest.raises(ProfilingError, match=r"unknown placeholder \{m\*scale\}"):
        render("{exe} {m*scale}", exe="app", scale=1)


def test_each_of_several_sizes_takes_a_root_of_the_scale():
    """k sizes share a counter scale: each is multiplied by its k-th root in sixteenths, so a
    problem whose work is their product does about the scale's work (1 stays 1)."""
    from runner.base.processes import size_share

    scales = (0.25, 0.5, 0.75, 1, 1.5, 2)
    assert [size_share(s, 1) for s in scales] == list(scales)
    assert [size_share(s, 2) for s in scales] == [0.5, 0.6875, 0.875, 1, 1.25, 1.4375]
    assert [size_share(s, 3) for s in scales] == [0.625, 0.8125, 0.9375, 1, 1.125, 1.25]
    for k in (2, 3, 4, 5):
        work = [size_share(s, k) ** k for s in scales]
        assert all(abs(w - s) / s < 0.25 for w, s in zip(work, scales, strict=True)), (k, work)
        assert work == sorted(work) and len(set(work)) == len(scales), (k, work)
    assert size_share(1e-8, 4) == 1 / 16  # never zero


def test_a_command_cut_short_from_outside_is_killed_before_the_error_goes_on(tmp_path):
    """RQ's job timeout raises inside the wait: the command (and its process group) must be dead
    before the caller unwinds and cleans up or reads what it writes."""
    import signal

    from runner.base.processes import run_process, track_process_groups

    class JobTimeout(Exception):
        pass

    def alarm(signum, frame):
        raise JobTimeout()

    previous = signal.signal(signal.SIGALRM, alarm)
    pidfile = tmp_path / "pid"
    try:
        with pytest.raises(JobTimeout), track_process_groups(tmp_path / "groups") as groups:
            signal.alarm(1)
            run_process(["sh", "-c", f"echo $$ > {pidfile}; sleep 1000 & sleep 1000"], tmp_path, 60)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    pid = int(pidfile.read_text())
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() and groups.read_text() == ""
    for _ in range(100):  # killed, the orphaned sleep is reaped by init a moment later on a loaded machine
        left = [c for c in _cmdlines() if c.startswith("sleep 1000")]
        if not left:
            break
        time.sleep(0.05)
    assert not left


def _cmdlines() -> list[str]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
            except OSError:
                pass
    return out


def test_the_sweep_changes_a_folder_entry_itself_never_what_a_link_there_points_to(tmp_path):
    """An entry swapped for a link between the sweep's lstat and its chmod would have the worker
    change the mode of a file of its own elsewhere."""
    import os
    import stat

    from runner.base.sandbox import _chmod_this

    outside = tmp_path / "worker-file"
    outside.write_text("mine")
    outside.chmod(0o600)
    job = tmp_path / "job"
    job.mkdir()
    (job / "swapped").symlink_to(outside)
    (job / "plain").write_text("x")
    (job / "plain").chmod(0o6755)
    fd = os.open(job, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _chmod_this(fd, "swapped", 0o7777)
        _chmod_this(fd, "plain", 0o755)
    finally:
        os.close(fd)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o600
    assert stat.S_IMODE((job / "plain").stat().st_mode) == 0o755


def test_a_command_that_prints_without_end_is_kept_in_bounded_memory(tmp_path, monkeypatch):
    """The program under test may print gigabytes (an attacker's pass: 60 MB of `y` lines grew the
    worker by 2.2 GB): the start and the end of its output are kept, the log file stops at its limit.
    (The limits are made smaller here, so that a few megabytes show it.)"""
    from runner.base import processes
    from runner.base.processes import run_process

    monkeypatch.setattr(processes, "KEPT_HEAD", 256 << 10)
    monkeypatch.setattr(processes, "KEPT_TAIL", 256 << 10)
    monkeypatch.setattr(processes, "LOG_LIMIT", 1 << 20)
    log = tmp_path / "run.log"
    r = run_process(["sh", "-c", "echo first; yes | head -c 3000000; echo; echo last"], tmp_path, 120, log=log)
    assert r.returncode == 0 and r.output.startswith("first\ny\n") and r.output.endswith("y\n\nlast\n")
    note = re.search(r"\n\[optimas\] (\d+) characters of output left out here\n", r.output)
    assert len(r.output) < (512 << 10) + 200 and int(note.group(1)) + len(r.output) - len(note.group(0)) == 3000012
    assert (1 << 20) < log.stat().st_size < (1 << 20) + 1000
    assert log.read_text().endswith(f"the command printed more than {1 << 20} characters\n")
    # one line without end: read in pieces, kept as its start and its end
    r = run_process(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x"], tmp_path, 120)
    assert r.output.startswith("xxx") and r.output.endswith("xxx") and len(r.output) < (512 << 10) + (1 << 17)
