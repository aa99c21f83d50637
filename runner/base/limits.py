"""What a sandboxed command (a pull request's build, its program) may use: processes, memory and the
job's folder on disk. The operator sets each on the GPU workers; a command over one is killed, with
everything it started, and the job ends with an error that names the limit and its setting.

Two layers, both working for an unprivileged worker without cgroup delegation, and for root:

- the kernel's per-process limits, set on the sandbox before it starts (runner.base.sandbox wraps
  bwrap in `rlimit_argv`): RLIMIT_FSIZE (no file larger than the disk limit) and, for a worker that
  is not root, RLIMIT_NPROC. RLIMIT_NPROC counts every task (threads too) of the worker's user on the
  host, and root is exempt from it, so it is set to the user's tasks when the command starts plus
  the limit: a backstop that stops a fork bomb where it stands. RLIMIT_AS is not used: the CUDA
  driver and nvcc reserve far more address space than they touch, and a program under it fails to
  initialise CUDA.
- a watch (`Watch`) that, while the command runs, counts its processes' tasks and resident memory
  every POLL_S seconds and the job's folder every DISK_POLL_S seconds at least, and kills the
  command's process group (the sandbox's whole process namespace with it) on the first count over a
  limit. The job's folder is measured again after every command (runner.base.sandbox's sweep walks
  it anyway). What a command can do between two counts goes past the limit by that much: the
  container's own limits (compose.yaml's pids_limit and mem_limit, which the kernel enforces) bound
  what the host gives all jobs of a worker together.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.base.errors import OptimasError

log = logging.getLogger(__name__)

PIDS = "OPTIMAS_SANDBOX_PIDS"  # processes and threads of a command at once
MEMORY = "OPTIMAS_SANDBOX_MEMORY"  # resident memory of a command's processes together (512M, 16G, bytes)
DISK = "OPTIMAS_SANDBOX_DISK"  # what the job's folder may hold (less than this), and the largest file
DEFAULT_PIDS = 4096
DEFAULT_MEMORY = 32 << 30
DEFAULT_DISK = 32 << 30  # above the 8 GiB a checkout may write (bot.gpu_job.MAX_CHECKOUT_BYTES)
POLL_S = 0.05
DISK_POLL_S = 1.0
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_PAGE = os.sysconf("SC_PAGE_SIZE")


class LimitExceeded(OptimasError):
    """A sandboxed command went over one of the job's limits and was killed."""

    exit_code = 4


def size_text(n: int) -> str:
    """`n` bytes as the largest binary unit that holds it whole or to a tenth (64 MiB, 1.5 GiB)."""
    for unit in ("T", "G", "M", "K"):
        if n >= _UNITS[unit]:
            return f"{n / _UNITS[unit]:.4g} {unit}iB"
    return f"{n} bytes"


def parse_size(name: str, raw: str) -> int:
    """A size setting: bytes, or a number with K, M, G or T (binary: 512M is 512 MiB)."""
    m = _SIZE.match(raw)
    if not m:
        raise OptimasError(f"{name}={raw!r}: expected a size such as 512M, 16G or a number of bytes")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


@dataclass(frozen=True)
class Limits:
    """A sandboxed command's limits: tasks (processes and threads) at once, resident memory of all
    its processes, and bytes in the job's folder (also the largest file, and the size of its /tmp)."""

    pids: int = DEFAULT_PIDS
    memory: int = DEFAULT_MEMORY
    disk: int = DEFAULT_DISK

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Limits:
        """OPTIMAS_SANDBOX_PIDS, OPTIMAS_SANDBOX_MEMORY and OPTIMAS_SANDBOX_DISK; unset or empty: the default."""
        e = os.environ if env is None else env
        pids = e.get(PIDS) or str(cls.pids)
        if not pids.strip().isdigit() or int(pids) < 8:
            raise OptimasError(f"{PIDS}={pids!r}: expected a whole number of processes, at least 8")
        memory = parse_size(MEMORY, e.get(MEMORY) or str(cls.memory))
        disk = parse_size(DISK, e.get(DISK) or str(cls.disk))
        for name, value in ((MEMORY, memory), (DISK, disk)):
            if value < 16 << 20:
                raise OptimasError(f"{name}: {size_text(value)} is too little for any build; give at least 16M")
        return cls(pids=int(pids), memory=memory, disk=disk)

    def message(self, what: str, kind: str, seen: str) -> str:
        """The error text of a limit hit: what went over which limit, and the setting that raises it."""
        if kind == "pids":
            over, setting = f"ran more than {self.pids} processes and threads at once ({seen})", PIDS
        elif kind == "memory":
            over, setting = f"used more than {size_text(self.memory)} of memory ({seen})", MEMORY
        else:
            over, setting = f"filled the job's folder past {size_text(self.disk)} ({seen})", DISK
        return (f"The sandbox's {kind} limit stopped {what}: it {over}. The job ends here; the operator raises "
                f"the limit with {setting} on the GPU workers.")


# Sets the limits, then runs the sandbox: python -I -S -c RLIMITS NPROC FSIZE -- argv...
# Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: both are
# given back their defaults, as subprocess does for the commands it starts.
_RLIMITS = ("import os, resource, signal, sys\n"
            "signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
            "nproc, fsize = int(sys.argv[1]), int(sys.argv[2])\n"
            "if nproc: resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))\n"
            "os.execvp(sys.argv[4], sys.argv[4:])\n")
NPROC_SPARE = 16  # tasks besides the command's own: bwrap's, and the worker's own that start meanwhile


def rlimit_argv(limits: Limits, argv: Sequence[str]) -> list[str]:
    """`argv` started under RLIMIT_FSIZE (the disk limit) and, for a worker that is not root,
    RLIMIT_NPROC (the user's tasks now, plus the limit; root is exempt from it)."""
    nproc = 0 if os.geteuid() == 0 else user_tasks(os.getuid()) + limits.pids + NPROC_SPARE
    return [sys.executable, "-I", "-S", "-c", _RLIMITS, str(nproc), str(limits.disk), "--", *argv]


def user_tasks(uid: int) -> int:
    """The tasks (processes and their threads) that `uid` runs on this host, as RLIMIT_NPROC counts them."""
    total = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if os.stat(f"/proc/{name}").st_uid == uid:
                    total += int(_stat_fields(int(name))[17])
    return total


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (which may hold spaces and parentheses):
    [0] is the state, [1] the parent, [17] the threads, [21] the resident pages."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2:].decode().split()


def tree_usage(root: int) -> tuple[int, int]:
    """The tasks and resident bytes of process `root` and all its descendants (a sandbox's orphans
    are its own init's children, so they are among them)."""
    members = _tree(root)
    return sum(t for t, _ in members.values()), sum(r for _, r in members.values())


def _tree(root: int) -> dict[int, tuple[int, int]]:
    """Process `root` and its descendants: each one's (tasks, resident bytes)."""
    children: dict[int, list[int]] = {}
    usage: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = _stat_fields(int(name))
                children.setdefault(int(fields[1]), []).append(int(name))
                usage[int(name)] = (int(fields[17]), int(fields[21]) * _PAGE)
    members: dict[int, tuple[int, int]] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid not in members:
            members[pid] = usage.get(pid, (0, 0))
            todo += children.get(pid, [])
    return members


def unlinked_bytes(pids: Iterable[int], disk_devices: set[int]) -> tuple[int, int]:
    """(disk, memory): the bytes of the files that processes `pids` hold open and no folder names
    any more, which neither the folder's walk nor resident memory counts: a file the command
    deleted while writing it (on a device of `disk_devices`, the job's folder: disk) and a memfd or
    a deleted file of a tmpfs (memory). Each file is counted once however many hold it."""
    disk = memory = 0
    seen: set[tuple[int, int]] = set()
    for pid in pids:
        with contextlib.suppress(OSError), os.scandir(f"/proc/{pid}/fd") as fds:
            for fd in fds:
                with contextlib.suppress(OSError):
                    st = os.stat(fd.path)  # the open file itself, through the descriptor's link
                    if st.st_nlink or not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                    if st.st_dev in disk_devices:
                        disk += st.st_blocks * 512
                    else:
                        memory += st.st_blocks * 512
    return disk, memory


def folder_bytes(roots: Sequence[Path], stop: threading.Event | None = None) -> int:
    """The bytes the files under `roots` take on disk (blocks; a file of several links once), links
    never followed; what was counted so far once `stop` is set."""
    total, seen = 0, set()
    todo = [str(r) for r in roots]
    while todo and not (stop is not None and stop.is_set()):
        with contextlib.suppress(OSError), os.scandir(todo.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        todo.append(entry.path)
                    if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                        if (st.st_dev, st.st_ino) in seen:
                            continue
                        seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


class Watch:
    """Counts a running command's tasks and memory (process `proc` and its descendants) and the
    bytes in `roots`, and kills its process group over a limit; `exceeded` then says which.

    Two threads: one counts tasks and resident memory every POLL_S seconds; the other walks the
    job's folder and the files the command holds open but deleted, every DISK_POLL_S seconds at
    least (a folder of millions of files takes seconds to walk, and the memory count must not wait
    for it). Memory is resident memory plus what the command keeps in deleted files of a tmpfs and
    in memfds, as of the last slow count; disk is the folder plus the deleted files it still holds
    open there."""

    def __init__(self, limits: Limits, proc: subprocess.Popen, roots: Sequence[Path], what: str) -> None:
        self.limits, self.proc, self.pid, self.roots, self.what = limits, proc, proc.pid, list(roots), what
        self.exceeded: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pids: list[int] = [proc.pid]
        self._hidden_memory = 0  # bytes in memfds and deleted tmpfs files, at the last slow count
        self._devices = set()
        for root in self.roots:
            with contextlib.suppress(OSError):
                self._devices.add(os.stat(root).st_dev)
        self._threads = [threading.Thread(target=self._run, name=f"limits-{proc.pid}", daemon=True),
                         threading.Thread(target=self._run_disk, name=f"limits-disk-{proc.pid}", daemon=True)]

    def __enter__(self) -> Watch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop counting (before the command's process is reaped: its group id is then free again)."""
        self._stop.set()
        for thread in self._threads:
            if thread.is_alive():
                thread.join()

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            members = _tree(self.pid)
            self._pids = list(members)
            tasks = sum(t for t, _ in members.values())
            rss = sum(r for _, r in members.values())
            if tasks > self.limits.pids:
                return self._kill("pids", f"{tasks} seen")
            if rss + self._hidden_memory > self.limits.memory:
                hidden = self._hidden_memory
                return self._kill("memory", f"{size_text(rss)} resident" + (
                    f", {size_text(hidden)} in memfds and deleted files" if hidden else ""))
        return None

    def _run_disk(self) -> None:
        wait = DISK_POLL_S
        while not self._stop.wait(wait):
            start = time.monotonic()
            disk, self._hidden_memory = unlinked_bytes(self._pids, self._devices)
            used = folder_bytes(self.roots, self._stop) + disk
            if used >= self.limits.disk and not self._stop.is_set():
                return self._kill("disk", size_text(used) + (f", {size_text(disk)} of it deleted but open"
                                                             if disk else ""))
            # a large folder is walked less often: at most a tenth of the time goes to walking it
            wait = max(DISK_POLL_S, 10 * (time.monotonic() - start))
        return None

    def _kill(self, kind: str, seen: str) -> None:
        with self._lock:
            if self.exceeded is not None:
                return
            self.exceeded = self.limits.message(self.what, kind, seen)
        self._stop.set()
        if self.proc.returncode is None:  # not reaped: its group id is still the command's
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        log.warning("sandbox: %s", self.exceeded)
