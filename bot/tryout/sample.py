"""The try-out's sample repository: the demo app of `optimas demo` (config.yml's app and recorded H200
profiles, examples/h200-probe) as a git repository on disk, whose pull request #2 touches the hot
kernel's lines, served to the GPU worker as GitHub serves a repository (a bare clone with the pull
request's head at refs/pull/2/head)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from runner.base.errors import OptimasError

REPO = "Codertocat/Hello-World"  # GitHub's own example repository, as its webhook examples name it
PULL = 2
KERNEL = "examples/h200-probe/probe_kernels.cu"
# The pull request's change: a comment over the matmul kernel, in place of the blank line before it,
# so that the recorded profiles' line numbers still hold for the head
BLANK_LINE = 30
COMMENT = "// matmul: one thread per output element (the kernel this pull request asks Optimas about)"


class SampleError(OptimasError):
    exit_code = 2


@dataclass(frozen=True)
class Sample:
    """The sample repository: where the GPU worker fetches it, its config, the pull request."""

    remotes: Path  # <remotes>/<owner>/<name>.git
    base_sha: str
    head_sha: str
    config: str  # .optimas.yml on the default branch
    pr_files: list[dict]  # the pull request's files, as GitHub lists them


def demo_folder() -> Path:
    """The demo shipped with Optimas (config.yml and examples/, links in a checkout)."""
    folder = Path(str(resources.files("runner").joinpath("data/demo")))
    if not (folder / "config.yml").is_file() or not (folder / "examples" / "h200-probe").is_dir():
        raise SampleError(f"{folder}: the bundled demo is missing from this installation; reinstall optimas")
    return folder


def sample_config(demo: Path) -> str:
    """.optimas.yml of the sample repository: the demo config's app and recorded profiles (the
    model is the operator's, OPTIMAS_LLM_BACKEND, as on the App)."""
    full = yaml.safe_load((demo / "config.yml").read_text())
    profiles = {k: full["profiles"][k] for k in ("raw", "source") if k in full["profiles"]}
    kept = {"app": full["app"], "profiles": profiles}
    header = "# The sample repository of `python -m bot.tryout`: the demo app on its recorded H200 profiles.\n"
    return header + yaml.safe_dump(kept, sort_keys=False)


def _git(cwd: Path, *args: str) -> str:
    """git in `cwd` as a throwaway identity; its output."""
    done = subprocess.run(["git", "-c", "user.email=tryout@optimas.invalid", "-c", "user.name=Optimas try-out",
                           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SampleError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


def _patch(work: Path, base: str, head: str, path: str) -> str:
    """GitHub's `patch` of one file of a pull request: the diff's hunks, from the first @@."""
    diff = _git(work, "diff", base, head, "--", path)
    return diff[diff.index("@@"):]


def make_sample(folder: Path) -> Sample:
    """Write the sample repository under `folder` (work/, remotes/) and return it."""
    demo = demo_folder()
    work = folder / "work"
    (work / "examples").mkdir(parents=True)
    source = demo / "examples" / "h200-probe"
    target = work / "examples" / "h200-probe"
    target.mkdir()
    for path in sorted(source.rglob("*")):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).write_bytes(path.read_bytes())
    config = sample_config(demo)
    (work / ".optimas.yml").write_text(config)
    _git(folder, "init", "-q", str(work))
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "The probe program and its recorded profiles")
    base = _git(work, "rev-parse", "HEAD")
    lines = (work / KERNEL).read_text().splitlines(keepends=True)
    if lines[BLANK_LINE - 1].strip():
        raise SampleError(f"{KERNEL}:{BLANK_LINE}: expected the blank line before the matmul kernel")
    lines[BLANK_LINE - 1] = COMMENT + "\n"
    (work / KERNEL).write_text("".join(lines))
    _git(work, "commit", "-qam", "Say what the matmul kernel does")
    head = _git(work, "rev-parse", "HEAD")
    bare = folder / "remotes" / f"{REPO}.git"
    bare.parent.mkdir(parents=True)
    _git(folder, "clone", "-q", "--bare", str(work), str(bare))
    _git(bare, "update-ref", f"refs/pull/{PULL}/head", head)
    pr_files = [{"filename": KERNEL, "status": "modified", "additions": 1, "deletions": 1, "changes": 2,
                 "patch": _patch(work, base, head, KERNEL)}]
    return Sample(remotes=folder / "remotes", base_sha=base, head_sha=head, config=config, pr_files=pr_files)
