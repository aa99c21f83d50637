"""The Action's kept environment (action.yml's `venv` input) against the pull request's code, which the
Action runs as the runner's user with no sandbox: it must not be able to plant code that a later job's
Optimas process (with that job's model key and token) runs. An attacker's pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from bot import kept_venv

PLANTED = "import os; open(os.environ['LOOT'], 'w').write(os.environ.get('OPENAI_API_KEY', ''))\n"


def _install_step(tmp_path: Path, kept: Path) -> Path:
    """action.yml's install step as a job runs it (pip stubbed: a venv without pip, a pip that does
    nothing); the python it hands to the next step."""
    step = next(s for s in yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
                if s.get("id") == "install")
    stub = tmp_path / "python3"
    stub.write_text(f"""#!/bin/bash
if [ "$1" = -m ] && [ "$2" = venv ]; then
  {sys.executable} -m venv --without-pip "$3" && printf '#!/bin/sh\\n' > "$3/bin/pip" && chmod +x "$3/bin/pip"
  exit
fi
exec {sys.base_prefix}/bin/python3 "$@"
""")
    stub.chmod(0o755)
    out, temp = tmp_path / "output", tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    out.write_text("")
    env = {"PATH": os.environ["PATH"], "PYTHON": str(stub), "OPTIMAS_VENV": str(kept), "RUNNER_TEMP": str(temp),
           "GITHUB_ACTION_PATH": str(REPO), "GITHUB_OUTPUT": str(out)}
    r = subprocess.run(["bash", "-e", "-c", step["run"]], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return Path(dict(line.split("=", 1) for line in out.read_text().splitlines())["python"])


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def test_a_pull_request_cannot_plant_code_in_the_kept_environment_for_a_later_job(tmp_path: Path):
    kept = tmp_path / "opt" / "optimas-venv"
    kept.parent.mkdir()
    _install_step(tmp_path, kept)  # the first job
    # The pull request's build, as the runner's user: the environment as the action leaves it (or
    # made anew where the action made none), a .pth file that runs at every start of its python, and
    # the stamp of this version of the action, whether it is kept there or computed as the action does.
    if not (kept / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(kept)], check=True)
    (_site_packages(kept) / "zz-optimas.pth").write_text(PLANTED)
    if not (kept / ".optimas-action").exists():
        (kept / ".optimas-action").write_text(kept_venv.action_stamp(REPO) + "\n")
    # A later job, another pull request's, with the model's key.
    python = _install_step(tmp_path, kept)
    loot = tmp_path / "loot"
    subprocess.run([str(python), "-c", "pass"], env={"LOOT": str(loot), "OPENAI_API_KEY": "sk-later-job"},
                   check=True)
    assert not loot.exists(), "the planted code ran in the later job's Optimas process with its key"
    assert not python.is_relative_to(kept)


def test_the_optimas_process_does_not_import_the_pull_requests_files_first():
    step = next(s for s in yaml.safe_load((REPO / "action.yml").read_text())["runs"]["steps"]
                if s.get("id") == "optimas")
    # `python -m` puts the working folder, the workspace (the pull request's checkout), first on
    # sys.path: a bot/action.py there would run in place of Optimas's. -I keeps it off.
    assert '"$OPTIMAS_PYTHON" -I -m bot.action' in step["run"]


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / "lib").mkdir()
    (venv / kept_venv.STAMP).write_text(kept_venv.action_stamp(REPO) + "\n")
    return venv, REPO


OTHER_USER = 4242  # the tests may run as root: who owns the files is told apart by this uid


def test_an_environment_the_job_user_cannot_change_is_used(tmp_path: Path):
    venv, action = _tree(tmp_path)
    kept_venv.check(venv, action, uid=OTHER_USER, writable=lambda p: False)


@pytest.mark.parametrize("writable_part", ["lib", ".optimas-action", "..", "/"])
def test_an_environment_with_any_part_the_job_user_may_write_is_refused(tmp_path: Path, writable_part: str):
    venv, action = _tree(tmp_path)
    target = os.path.abspath(venv / writable_part) if writable_part != "/" else "/"
    with pytest.raises(kept_venv.Unsafe, match="writable"):
        kept_venv.check(venv, action, uid=OTHER_USER, writable=lambda p: os.path.abspath(p) == target)


def test_a_link_out_of_the_environment_to_what_the_job_user_may_write_is_refused(tmp_path: Path):
    venv, action = _tree(tmp_path)
    theirs = tmp_path / "theirs.py"
    theirs.write_text("")
    (venv / "lib" / "sitecustomize.py").symlink_to(theirs)
    with pytest.raises(kept_venv.Unsafe, match="theirs"):
        kept_venv.check(venv, action, uid=OTHER_USER, writable=lambda p: p == str(theirs))


def test_an_environment_of_the_job_users_own_or_run_by_root_or_of_another_version_is_refused(tmp_path: Path):
    venv, action = _tree(tmp_path)
    owner = os.getuid()
    if owner == 0:  # as root: the tree given to a user that is not root
        owner = OTHER_USER + 1
        for path in [venv, *venv.rglob("*")]:
            os.lchown(path, owner, -1)
    with pytest.raises(kept_venv.Unsafe, match="belongs to this job's user"):
        kept_venv.check(venv, action, uid=owner, writable=lambda p: False)
    with pytest.raises(kept_venv.Unsafe, match="root"):
        kept_venv.check(venv, action, uid=0, writable=lambda p: False)
    (venv / kept_venv.STAMP).write_text("\n::set-output name=python::/tmp/x\n")
    with pytest.raises(kept_venv.Unsafe, match="another version") as e:
        kept_venv.check(venv, action, uid=OTHER_USER, writable=lambda p: False)
    assert "\n" not in str(e.value) and kept_venv.action_stamp(action) in str(e.value)
