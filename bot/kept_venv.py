"""The Action's kept environment (action.yml's `venv` input): may this job run Optimas from it?

The Action runs the pull request's code (its build and run commands) as the runner's user, with no
sandbox. A virtual environment that this user can write is therefore the pull request's to change:
a `.pth` file in its site-packages, a changed module or a replaced `bin/python` would run in a later
job's Optimas process, beside that job's model key and token. No stamp or manifest kept where the
same user can write stops that: the pull request rewrites it too. So a kept environment is used only
when nothing in it, nor any folder above it, nor what its links lead to, is this user's or writable
by it: an administrator builds it, as another user, for the commit the workflow pins:

    sudo python3 -m venv /opt/optimas-venv
    sudo /opt/optimas-venv/bin/pip install <a checkout of the action at that commit>
    python3 -I <that checkout>/bot/kept_venv.py stamp <that checkout> | sudo tee /opt/optimas-venv/.optimas-action

    python3 -I bot/kept_venv.py stamp ACTION_DIR         the action's version (a hash of its files)
    python3 -I bot/kept_venv.py check VENV ACTION_DIR    exit 0 when VENV may be used; else 1, and why

Standard library only, run with -I by the runner's own Python before anything of the environment.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

STAMP = ".optimas-action"
ACTION_FILES = ("action.yml", "pyproject.toml", "runner", "bot", "templates")


class Unsafe(Exception):
    """Why a kept environment may not be used."""


def action_stamp(action: Path) -> str:
    """This version of the action: a hash of its files' names and contents (a used action is a
    tarball, with no git)."""
    digest = hashlib.sha256()
    for path in sorted(_action_files(action)):
        digest.update(f"{path.relative_to(action).as_posix()}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()[:16]


def _action_files(action: Path) -> Iterator[Path]:
    for name in ACTION_FILES:
        top = action / name
        if top.is_file() and not top.is_symlink():
            yield top
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            yield from (Path(folder, f) for f in files if not Path(folder, f).is_symlink())


def _writable(path: str) -> bool:
    return os.access(path, os.W_OK, follow_symlinks=False)


class _Checker:
    """Refuses any path that `uid` owns (an owner may chmod) or may write (modes, groups, ACLs)."""

    def __init__(self, uid: int, writable: Callable[[str], bool]):
        self.uid, self.writable = uid, writable

    def path(self, path: str) -> None:
        st = os.lstat(path)
        if st.st_uid == self.uid:
            raise Unsafe(f"{ascii(path)} belongs to this job's user")
        if self.writable(path):
            raise Unsafe(f"{ascii(path)} is writable by this job's user")

    def with_parents(self, path: str) -> None:
        """`path` and every folder above it (one writable above could swap the whole tree)."""
        current = os.path.abspath(path)
        while True:
            self.path(current)
            parent = os.path.dirname(current)
            if parent == current:
                return
            current = parent

    def tree(self, root: str) -> None:
        """Everything under `root`, and where its links lead outside it."""
        real_root = os.path.realpath(root)
        for folder, dirs, files in os.walk(root, onerror=_raise):
            for name in [*dirs, *files]:
                entry = os.path.join(folder, name)
                self.path(entry)
                if os.path.islink(entry):
                    self._link(entry, real_root)

    def _link(self, link: str, real_root: str) -> None:
        target = os.path.realpath(link)
        if not os.path.exists(target):
            raise Unsafe(f"{ascii(link)} leads nowhere ({ascii(target)})")
        if os.path.commonpath([target, real_root]) != real_root:
            self.with_parents(target)


def _raise(error: OSError) -> None:
    raise Unsafe(f"cannot read {ascii(error.filename)}: {error.strerror}")


def check(venv: Path, action: Path, uid: int | None = None,
          writable: Callable[[str], bool] = _writable) -> None:
    """Unsafe unless `venv` holds this version of the action and nothing of it is the job user's to
    change."""
    uid = os.getuid() if uid is None else uid
    if uid == 0:
        raise Unsafe("the runner runs as root, which can write any folder: run it as a user of its own")
    if not (venv / "bin" / "python").exists():
        raise Unsafe(f"{ascii(str(venv))} holds no virtual environment")
    checker = _Checker(uid, writable)
    try:
        checker.with_parents(str(venv))
        checker.tree(str(venv))
    except FileNotFoundError as e:
        raise Unsafe(f"{ascii(e.filename)} changed while it was checked") from None
    expected = action_stamp(action)
    held = (venv / STAMP).read_text().strip() if (venv / STAMP).is_file() else "none"
    if held != expected:
        raise Unsafe(f"it holds another version of the action ({ascii(held[:16])}; this one is {expected}): "
                     f"rebuild it as its owner and write {expected} into {ascii(str(venv / STAMP))}")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "stamp":
        print(action_stamp(Path(argv[1])))
        return 0
    if len(argv) == 3 and argv[0] == "check":
        try:
            check(Path(argv[1]), Path(argv[2]))
        except Unsafe as e:
            print(f"not using the kept environment {ascii(argv[1])}: {e}")
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
