"""An isolated sandbox for the commands a pull request's code drives (its build, its program, nvcc
and ncu over it), with bubblewrap (`bwrap`, Debian's and most distributions' package
`bubblewrap`).

Inside a `sandboxed(...)` block every command that runner.base.processes starts runs as

- a view of the host that is read-only and partial: the system folders (/usr, /bin, /lib*, /etc,
  /opt), the Python that runs Optimas and Optimas itself (the nvcc shim imports it), the cache of
  the tracer and the shim (read-only: a job cannot rewrite what later jobs execute), /sys, and the
  folders the operator names in OPTIMAS_SANDBOX_READ. The worker's home, its other files and every
  other job's folder are not there;
- the device nodes of the job's own GPU only (`GpuDevices`: the driver's shared nodes and the
  /dev/nvidiaN of each GPU that the worker's CUDA_VISIBLE_DEVICES names, which the commands see
  by UUID): a program that unsets CUDA_VISIBLE_DEVICES still finds no other GPU of the host;
- one writable area: the job's own folder (its checkout, copies, runs, HOME and TMPDIR), and a
  fresh /tmp;
- its own process namespace (no view of the worker's processes: /proc/$PPID is the sandbox's own),
  its own network namespace (loopback only), IPC and host name;
- no new privileges; all capabilities dropped, except where the worker runs as root and the
  profiler needs them (OPTIMAS_SANDBOX_KEEP_CAPS=1, for hosts that restrict GPU counters to admins);
- limits on processes, memory and the job's folder on disk (runner.base.limits: OPTIMAS_SANDBOX_PIDS,
  OPTIMAS_SANDBOX_MEMORY, OPTIMAS_SANDBOX_DISK); a command over one is killed, and every later
  command of the sandbox is refused: the job ends with LimitExceeded, which names the setting.

After each command, nothing of the sandbox runs any more (its process namespace ends with it), and
the writable area is swept: symbolic links that lead out of it, FIFOs, sockets and device nodes are
removed, setuid and setgid bits taken off, and folders given back to their owner (the sandbox runs
as the worker's user and can take the bits that would let a walk list them), so that the worker,
reading or writing there next, never follows the code's links elsewhere. A tree the sweep cannot
check whole fails the job.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runner.base.errors import OptimasError
from runner.base.limits import LimitExceeded, Limits, rlimit_argv, size_text

log = logging.getLogger(__name__)

SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
OPERATOR_READ = "OPTIMAS_SANDBOX_READ"  # more read-only folders, separated by ':'
KEEP_CAPS = "OPTIMAS_SANDBOX_KEEP_CAPS"
_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the runner package


class SandboxError(OptimasError):
    """No sandbox can be made here."""

    exit_code = 4


@dataclass(frozen=True)
class GpuDevices:
    """The GPU device nodes a sandbox binds, and the CUDA_VISIBLE_DEVICES its commands get (the
    GPUs' UUIDs: inside, the one GPU of a worker pinned to GPU 1 is the only one, so its index
    would name none). `visible` None: the commands keep the worker's setting."""

    nodes: tuple[str, ...] = ()
    visible: str | None = None


@dataclass
class Sandbox:
    """Where the sandboxed commands may write (`writable`), what else they may read, and which GPUs
    they may use (`devices`; none by default)."""

    bwrap: str
    writable: list[Path]
    readable: list[Path] = field(default_factory=list)
    keep_caps: bool = False
    devices: GpuDevices = field(default_factory=GpuDevices)
    limits: Limits = field(default_factory=Limits)
    sized_tmpfs: bool = False  # bwrap takes --size (0.7 and later): /tmp and /dev/shm are bounded
    exceeded: LimitExceeded | None = None  # the limit a command went over: no command runs after it
    used: int = 0  # bytes in the writable area at the last sweep

    def wrap(self, argv: Sequence[str], cwd: Path | None) -> list[str]:
        """`argv` as a command that runs inside the sandbox, in `cwd`, under the kernel's limits
        (limits.rlimit_argv). LimitExceeded once a command of this sandbox went over a limit."""
        if self.exceeded is not None:
            raise self.exceeded
        # /tmp and /dev/shm hold their files in memory, which the memory watch does not count
        tmpfs = ["--size", str(self.tmpfs_bytes()), "--tmpfs"] if self.sized_tmpfs else ["--tmpfs"]
        args = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "optimas-sandbox"]
        if os.geteuid() != 0:
            args.append("--unshare-user")
        elif not self.keep_caps:
            args += ["--cap-drop", "ALL"]
        args += [*tmpfs, "/tmp"]  # first: the folders bound below may lie under /tmp
        binds, links = self._read_paths()
        for path in binds:
            args += ["--ro-bind", path, path]
        for path, target in links:  # /bin -> usr/bin on a merged-/usr system
            args += ["--symlink", target, path]
        args += ["--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev", *tmpfs, "/dev/shm"]
        for node in self.devices.nodes:
            args += ["--dev-bind", node, node]
        # bwrap's /dev is a tmpfs of no size that the command could fill (memory the watch does not
        # count): read-only once its nodes are in place (/dev/shm is a mount of its own, sized)
        args += ["--remount-ro", "/dev"]
        if self.devices.visible is not None:
            args += ["--setenv", "CUDA_VISIBLE_DEVICES", self.devices.visible]
        for path in self.writable:
            args += ["--bind", str(path), str(path)]
        if cwd is not None:
            args += ["--chdir", str(Path(cwd).resolve())]
        return rlimit_argv(self.limits, [*args, "--", *argv])

    def tmpfs_bytes(self) -> int:
        """What /tmp and /dev/shm may each hold: a quarter of the memory limit, and no more than the disk limit."""
        return min(self.limits.disk, self.limits.memory // 4)

    def over_limit(self, what: str, message: str | None) -> LimitExceeded | None:
        """After a command (`what`) ended and was swept: the LimitExceeded to raise, with `message`
        (the watch's, when it killed the command) or when the writable area holds the disk limit or
        more. It stays: every later command of this sandbox is refused."""
        if message is None and self.used >= self.limits.disk:  # a file the kernel stopped at the limit too
            message = self.limits.message(what, "disk", size_text(self.used))
        if message is not None:
            self.exceeded = LimitExceeded(message)
        return self.exceeded

    def _read_paths(self) -> tuple[list[str], list[tuple[str, str]]]:
        """The folders bound read-only, and the top-level links (such as /bin) made again."""
        # Optimas's own package only (the shim imports it), not the folder holding it: a checkout of
        # Optimas may keep the App's secrets beside it
        wanted = [Path(p) for p in SYSTEM_READ] + [Path(sys.prefix), Path(sys.base_prefix), _ROOT / "runner",
                                                   *self.readable]
        out: list[str] = []
        links: list[tuple[str, str]] = []
        for p in wanted:
            if not p.exists():
                continue
            if p.is_symlink() and p.parent == Path("/"):
                links.append((str(p), os.readlink(p)))
            real = str(p.resolve())
            # a folder under one already bound is there already (/usr/local/cuda under /usr)
            if not any(real == o or real.startswith(o.rstrip("/") + "/") for o in out):
                out.append(real)
        return out, links

    def sweep(self) -> list[str]:
        """Make the writable area safe for the worker to read and write again: remove symbolic links
        that lead out of it, FIFOs, sockets and device nodes, take setuid and setgid bits off, and
        give every folder back to its owner (the sandbox runs as the worker's user and may have
        taken the bits that let a walk list it). Returns what was removed.

        Fails closed: a tree it cannot check whole (too deep, an entry it cannot read) raises
        SandboxError, and the job's folder must then be thrown away unread."""
        roots = [p.resolve() for p in self.writable]
        removed: list[str] = []
        usage = _Usage()
        for root in roots:
            os.chmod(root, stat.S_IMODE(os.lstat(root).st_mode) | 0o700)  # the worker's own folder, always
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                _sweep_folder(fd, str(root), roots, removed, 0, usage)
            except OSError as e:
                raise SandboxError(f"the job's folder could not be checked after a command ({e.strerror}: "
                                   f"{_short(e.filename or root)}); nothing of it is kept") from None
            finally:
                os.close(fd)
        self.used = usage.bytes
        if removed:
            log.warning("sandbox: removed %d link(s) leading out of the job's folder, FIFOs or devices: %s",
                        len(removed), ", ".join(_short(r) for r in removed[:5]))
        return removed


MAX_SWEEP_DEPTH = 64  # folders inside the job's folder; a deeper tree fails the job
MAX_SWEEP_PATH = 3000  # characters of a path checked; a longer one fails the job


def _short(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    return text if len(text) <= 200 else text[:100] + "..." + text[-80:]


def _inside(path: str, roots: list[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == r or r in real.parents for r in roots)


class _Usage:
    """The bytes a sweep found on disk (blocks; a file of several links once)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.linked: set[tuple[int, int]] = set()

    def add(self, st: os.stat_result) -> None:
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            if (st.st_dev, st.st_ino) in self.linked:
                return
            self.linked.add((st.st_dev, st.st_ino))
        self.bytes += st.st_blocks * 512


def _sweep_folder(fd: int, path: str, roots: list[Path], removed: list[str], depth: int, usage: _Usage) -> None:
    """Sweep the folder open at `fd` (named `path`), folder by folder through descriptors, adding
    what it holds on disk to `usage`. No process of the sandbox runs while this does: what it finds
    stays as it is found."""
    if depth > MAX_SWEEP_DEPTH or len(path) > MAX_SWEEP_PATH:
        raise SandboxError(f"the job's folder holds a tree too deep to check ({_short(path)}); nothing of it is kept")
    for name in os.listdir(fd):
        full = os.path.join(path, name)
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        usage.add(st)
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            if len(full) > MAX_SWEEP_PATH or not _inside(full, roots):
                os.unlink(name, dir_fd=fd)
                removed.append(full)
        elif stat.S_ISDIR(mode):
            if stat.S_IMODE(mode) & 0o700 != 0o700:
                _chmod_this(fd, name, stat.S_IMODE(mode) | 0o700)  # a folder, found so just now
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                _sweep_folder(sub, full, roots, removed, depth + 1, usage)
            finally:
                os.close(sub)
        elif stat.S_ISREG(mode):
            if mode & (stat.S_ISUID | stat.S_ISGID):
                _chmod_this(fd, name, stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID))
        else:  # FIFO, socket, device node: the worker would block on one, or reach a device
            os.unlink(name, dir_fd=fd)
            removed.append(full)


def _chmod_this(dir_fd: int, name: str, mode: int) -> None:
    """chmod the entry `name` of the folder `dir_fd` itself, never what a link put there since its
    lstat points to: chmod follows links, and Linux has no lchmod, so the entry is opened as a path
    (O_PATH, O_NOFOLLOW) and changed through /proc/self/fd, which names that very inode."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        if not stat.S_ISLNK(os.fstat(fd).st_mode):
            os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)


_current: contextvars.ContextVar[Sandbox | None] = contextvars.ContextVar("optimas_sandbox", default=None)
_open = 0  # sandboxes open in this process, whichever context opened them
_open_lock = threading.Lock()


def current() -> Sandbox | None:
    """The sandbox that commands started now run in, if any."""
    return _current.get()


def find_bwrap() -> str:
    """bubblewrap's path, checked to make a sandbox here; SandboxError says what to install."""
    found = shutil.which("bwrap")
    if not found:
        raise SandboxError("bubblewrap (bwrap) is not installed: GPU jobs run a pull request's code in a "
                           "bubblewrap sandbox; install it (Debian/Ubuntu: apt-get install bubblewrap; "
                           "RHEL/Fedora: dnf install bubblewrap)")
    return found


@functools.cache
def takes_size(bwrap: str) -> bool:
    """Whether this bwrap bounds a tmpfs it makes (--size, bubblewrap 0.7 and later)."""
    try:
        r = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30, env={"PATH": os.defpath})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in r.stdout + r.stderr


def operator_paths(env: dict[str, str] | None = None) -> list[Path]:
    """The read-only folders OPTIMAS_SANDBOX_READ adds (absolute paths, ':'-separated)."""
    raw = (os.environ if env is None else env).get(OPERATOR_READ, "")
    paths = [Path(p) for p in raw.split(":") if p.strip()]
    bad = [str(p) for p in paths if not p.is_absolute()]
    if bad:
        raise SandboxError(f"{OPERATOR_READ}: expected absolute folders separated by ':', got {', '.join(bad)}")
    return paths


@contextlib.contextmanager
def sandboxed(writable: Sequence[Path], readable: Sequence[Path] = (), devices: GpuDevices | None = None
              ) -> Iterator[Sandbox]:
    """Run every command started inside this block in a sandbox that may write `writable` only,
    read, besides the system, `readable` and the operator's folders, and use the GPUs of `devices`
    (runner.base.gpu.sandbox_devices; none when not given)."""
    global _open
    bwrap = find_bwrap()
    box = Sandbox(bwrap, [Path(p).resolve() for p in writable],
                  [Path(p) for p in readable] + operator_paths(), keep_caps=os.environ.get(KEEP_CAPS) == "1",
                  devices=devices or GpuDevices(), limits=Limits.from_env(), sized_tmpfs=takes_size(bwrap))
    token = _current.set(box)
    with _open_lock:
        _open += 1
    try:
        yield box
    finally:
        with _open_lock:
            _open -= 1
        _current.reset(token)


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary folder (in tempfile's folder: the job's own in the App), removed at the end with
    shutil.rmtree, which works through descriptors, never follows a link and changes no mode.
    tempfile.TemporaryDirectory's cleanup chmods what it cannot remove, following links on Pythons
    before 3.11.8 and 3.12.2 (CVE-2023-6597), and the code's commands may have left links and
    unreadable folders in it."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def check_contained() -> None:
    """SandboxError when a sandbox is open in this process but not in this context: a thread that
    did not inherit the context (a thread pool's) would otherwise start the code's commands with no
    sandbox at all."""
    if current() is None and _open:
        raise SandboxError("a command was about to run outside the sandbox while one is open in this process "
                           "(a thread without the job's context); it was not run")


def sandbox_open() -> bool:
    """Whether a sandbox is open anywhere in this process: the code's commands may then run, and
    nothing else may read or copy the folders they write at the same time (the sweep after each
    command is what makes those folders safe to read)."""
    return _open > 0
