"""A repository of three programs through the loopback GitHub, real RQ workers and a real Redis: a
pull request runs the programs whose files it changes (one real build each tells them), the summary
names those run and those skipped with why, and documentation alone spends no build and no GPU."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from test_bot_end_to_end import deliver_and_work, make_remote

from bot.publish import MARKER

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (shutil.which("git") and shutil.which("nvcc")), reason="git and nvcc needed")]

# Three copies of the probe program; a and b include a shared header (at their end: the recorded
# profile's lines stay where they are). The recorded profile stands in for each program's own.
PROGRAMS = """app:
  workspace: .
  sources: [probe_kernels.cu]
  build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu
  run: "{exe} 4194304 4096 1024"
programs:
  - {name: probe_a, workdir: apps/probe_a, source_map: {/opt/probe/k.cu: apps/probe_a/probe_kernels.cu}}
  - {name: probe_b, workdir: apps/probe_b, source_map: {/opt/probe/k.cu: apps/probe_b/probe_kernels.cu}}
  - {name: probe_c, workdir: apps/probe_c, source_map: {/opt/probe/k.cu: apps/probe_c/probe_kernels.cu}}
profiles:
  raw: [examples/h200-probe/profiles/probe_full_raw_base.csv]
  source: [examples/h200-probe/profiles/probe_full_source_cuda_sass.csv]
llm: {backend: offline}
"""
REPO = Path(__file__).resolve().parent.parent


def _remote(tmp_path: Path) -> tuple[Path, str]:
    kernel = (REPO / "examples" / "h200-probe" / "probe_kernels.cu").read_text()
    shared = kernel + '#include "../../common/shared.cuh"\n'
    return make_remote(tmp_path, ["examples/h200-probe"], files={
        "apps/probe_a/probe_kernels.cu": shared, "apps/probe_b/probe_kernels.cu": shared,
        "apps/probe_c/probe_kernels.cu": kernel, "common/shared.cuh": "#pragma once\n#define SHARED 1\n",
        "docs/guide.md": "# Guide\n"})


def _changed(*paths: str) -> list[dict]:
    return [{"filename": p, "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"} for p in paths]


def _summary(gh) -> str:
    (summary,) = [c["body"] for c in gh.comments if MARKER in c["body"]]
    return summary


def _ran(summary: str) -> list[str]:
    return [name for name in ("probe_a", "probe_b", "probe_c") if f"#### `{name}`" in summary]


def _kept_runs(tmp_path: Path) -> int:
    runs = tmp_path / "worker-runs"
    return sum(1 for p in runs.iterdir() if p.is_dir()) if runs.exists() else 0


def test_a_kernel_file_runs_its_program_and_a_shared_header_its_includers(monkeypatch, tmp_path: Path):
    remote = _remote(tmp_path)
    gh, _, job = deliver_and_work(monkeypatch, remote, config=PROGRAMS,
                                  pr_files=_changed("apps/probe_b/probe_kernels.cu", "docs/guide.md"))
    result = job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    summary = _summary(gh)
    assert _ran(summary) == ["probe_b"] and _kept_runs(tmp_path) == 1
    assert "Programs not run:" in summary and "- `probe_a`: none of the 2 changed files" in summary
    assert "- `probe_c`: none of the 2 changed files" in summary
    assert "Hot kernels: `matmul` (defined in a changed file)" in summary
    assert "Run because the pull request changes what it reads: `apps/probe_b/probe_kernels.cu`" in summary
    assert gh.reviews == []  # nothing proven on a GPU here: no suggestion

    gh, _, job = deliver_and_work(monkeypatch, remote, config=PROGRAMS, pr_files=_changed("common/shared.cuh"))
    summary = _summary(gh)
    assert _ran(summary) == ["probe_a", "probe_b"] and _kept_runs(tmp_path) == 3
    assert "- `probe_c`: none of the 1 changed files is one probe_c's build compiles or includes" in summary
    assert "(defined in a changed file)" not in summary  # a header defining no kernel
    assert job.latest_result().return_value["verdict"] == "probe_a: not measured; probe_b: not measured"


def test_documentation_alone_spends_no_build_and_no_gpu(monkeypatch, tmp_path: Path):
    remote = _remote(tmp_path)
    gh, _, job = deliver_and_work(monkeypatch, remote, config=PROGRAMS, pr_files=_changed("docs/guide.md", "README.md"))
    assert job.latest_result().return_value["verdict"] == "not run"
    (check,) = gh.check_runs.values()
    assert check["conclusion"] == "neutral"
    assert "changes none of the files of the 3 programs (`probe_a`, `probe_b`, `probe_c`)" in check["output"]["title"]
    summary = _summary(gh)
    assert summary.count("other than documentation, or is the config") == 3  # told without a build
    assert _kept_runs(tmp_path) == 0


def test_past_the_limit_the_program_changed_last_runs(monkeypatch, tmp_path: Path):
    remote = _remote(tmp_path)

    def commits(gh) -> None:  # probe_c's kernel changed in the newest commit
        gh.pr_commits[2] = ["a" * 40, "c" * 40]
        gh.commit_files = {"a" * 40: ["apps/probe_a/probe_kernels.cu"], "c" * 40: ["apps/probe_c/probe_kernels.cu"]}

    gh, _, job = deliver_and_work(monkeypatch, remote, config=PROGRAMS + "programs_per_pull_request: 1\n",
                                  pr_files=_changed("apps/probe_a/probe_kernels.cu", "apps/probe_c/probe_kernels.cu"),
                                  prepare=commits)
    summary = _summary(gh)
    assert _ran(summary) == ["probe_c"]
    assert "- `probe_a`: its files changed too, but only 1 program run per pull request" in summary


def _action_workspace(tmp_path: Path) -> tuple[Path, str]:
    """The three programs checked out at a pull request's head, as a workflow's checkout holds them."""
    remotes, head = _remote(tmp_path)
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(remotes / "Codertocat" / "Hello-World.git"), str(ws)], check=True)
    (ws / ".optimas.yml").write_text(PROGRAMS)
    return ws, head


def test_the_action_runs_the_programs_the_pull_request_changes(tmp_path: Path):
    from github_server import FakeGitHub
    from test_bot_action import _action

    ws, head = _action_workspace(tmp_path)
    event = {"action": "labeled", "label": {"name": "optimas"},
             "pull_request": {"number": 2, "head": {"sha": head, "repo": {"full_name": "octo/probe"}}}}
    with FakeGitHub() as gh:
        gh.add_pull("octo/probe", 2, head)
        gh.pr_files[2] = _changed("apps/probe_c/probe_kernels.cu")
        r, outputs, summary = _action(tmp_path, gh, ws, event)
        assert r.returncode == 0, r.stdout + r.stderr
        assert _ran(summary) == ["probe_c"] and outputs["verdict"] == "probe_c: not measured" and outputs["run-id"]
        assert "The repository's config names `llm.backend`" in summary  # the workflow's model, said once
        assert summary.count("The repository's config names") == 1
        gh.pr_files[2] = _changed("docs/guide.md")
        r, outputs, summary = _action(tmp_path, gh, ws, event)
        assert r.returncode == 0 and outputs == {"verdict": "not run"}
        assert "changes none of the files of the 3 programs" in summary
        (check,) = gh.check_runs.values()  # one per workflow run and attempt: the second run updates it
        assert check["conclusion"] == "neutral" and "changes none of the files" in check["output"]["title"]
    r, outputs, summary = _action(tmp_path, gh, ws, event, "--publish", "false")
    assert r.returncode == 2 and "set the action's `program` input" in r.stdout + r.stderr
    r, outputs, summary = _action(tmp_path, gh, ws, event, "--publish", "false", "--program", "probe_a")
    assert r.returncode == 0 and _ran(summary) == [] and outputs["verdict"] == "not measured"


def test_when_every_program_fails_the_job_says_each_failure(tmp_path: Path):
    """One program's failure does not stop the others; when all fail, the error names each one with
    its program (not the first alone), and is transient only if every failure is."""
    from bot.programs import AllProgramsFailed, run_each
    from runner.base.config import load_config
    from runner.base.errors import OptimasError, ProfilingError

    cfg = tmp_path / "optimas.yml"
    cfg.write_text("app: {build: 'nvcc -o {exe} a.cu', run: '{exe}'}\n"
                   "programs:\n  - {name: alpha, sources: [a.cu]}\n  - {name: beta, sources: [b.cu]}\n")
    lc = load_config(cfg)
    programs = [lc.for_program(n) for n in lc.program_names()]
    cleaned = []

    def fail(one):
        raise ProfilingError(f"ncu not found for {one.config.app.name}")

    with pytest.raises(AllProgramsFailed) as caught:
        run_each(programs, fail, lambda: cleaned.append(1))
    assert str(caught.value) == ("every program failed: alpha: ProfilingError: ncu not found for alpha; "
                                 "beta: ProfilingError: ncu not found for beta")
    assert caught.value.exit_code == ProfilingError.exit_code and not caught.value.transient and cleaned == [1, 1]

    flaky = OptimasError("git fetch failed")
    flaky.transient = True

    def fetch_fails(one):
        raise flaky

    with pytest.raises(AllProgramsFailed) as caught:
        run_each(programs, fetch_fails, lambda: None)
    assert caught.value.transient
