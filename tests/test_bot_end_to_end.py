"""End to end: a signed pull_request.labeled delivery -> the served webhook -> control job -> GPU job
(real RQ workers, burst mode) -> the pipeline on a recorded profile with the offline backend -> a
completed check run and one summary comment holding the candidate as text (no GPU here proves it,
so no suggestion is posted), as recorded by the loopback GitHub server; on a GPU, the closed loop
and its review."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import threading
import urllib.request
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, app_environment, redis_or_fail
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github_server import FakeGitHub
from rq import Queue, SimpleWorker
from werkzeug.serving import make_server

from bot.app import create_app
from bot.github_client import app_from_env
from bot.publish import MARKER, code_span
from bot.settings import Settings

GH_REPO = "Codertocat/Hello-World"
SECRET = b"e2e-secret"
CONFIG = """app:
  name: probe
  workdir: examples/h200-probe
  sources: [probe_kernels.cu]
  source_map: {/opt/probe/k.cu: examples/h200-probe/probe_kernels.cu}
  build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu
  run: "{exe} 4194304 4096 1024"
profiles:
  raw: [examples/h200-probe/profiles/probe_full_raw_base.csv]
  source: [examples/h200-probe/profiles/probe_full_source_cuda_sass.csv]
llm: {backend: offline}
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def make_remote(tmp_path: Path, folders: list[str], files: dict[str, str] | None = None,
                copies: dict[str, str] | None = None) -> tuple[Path, str]:
    """A repository holding `folders` of this one, `copies` (its path -> a folder of this one) and
    `files` (path -> text), with the PR's head at refs/pull/2/head."""
    work = tmp_path / "work"
    for folder in folders:
        shutil.copytree(REPO / folder, work / folder)
    for name, folder in (copies or {}).items():
        shutil.copytree(REPO / folder, work / name)
    for name, text in (files or {}).items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git(work.parent, "init", "-q", str(work))
    git(work, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A")
    git(work, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "example")
    sha = git(work, "rev-parse", "HEAD")
    bare = tmp_path / "remotes" / f"{GH_REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "update-ref", "refs/pull/2/head", sha)
    return tmp_path / "remotes", sha


@pytest.fixture
def remote(tmp_path) -> tuple[Path, str]:
    """A repository holding the example app (recorded profiles)."""
    return make_remote(tmp_path, ["examples/h200-probe"])


# the PR changed the matmul kernel's lines 30-34
PROBE_PR_FILES = [{"filename": "examples/h200-probe/probe_kernels.cu", "status": "modified",
                   "patch": "@@ -30,4 +30,5 @@\n \n __global__ void matmul(const float* A, const float* B, "
                            "float* C, int n){\n+  int r = 0;\n   int r2 = 0;\n }"}]


def deliver_label(port: int, sha: str, secret: bytes = SECRET) -> None:
    """A signed pull_request.labeled delivery (the `optimas` label, head `sha`) to the webhook
    served on `port`, which must answer 202."""
    payload = json.loads((FIXTURES / "github" / "payload-examples" / "pull_request" /
                          "labeled.payload.json").read_text())
    payload["label"]["name"] = "optimas"
    payload["pull_request"]["head"]["sha"] = sha
    raw = json.dumps(payload).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/webhook", data=raw, method="POST", headers={
        "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 202


def deliver_and_work(monkeypatch, remote, move_head: bool = False, config: str = CONFIG,
                     pr_files: list[dict] | None = None, prepare=None):
    """Deliver a signed labeled event, run the control and GPU workers; (fake GitHub, PR head, GPU job).
    `prepare(fake_github)` runs before the GPU job."""
    conn = redis_or_fail()
    remotes, sha = remote
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    suffix = uuid.uuid4().hex[:8]
    settings = Settings(webhook_secret=SECRET, control_queue=f"e2e-control-{suffix}", key_prefix=f"e2e-{suffix}")
    monkeypatch.setenv("OPTIMAS_GIT_URL", f"file://{remotes}/{{repo}}.git")
    monkeypatch.setenv("OPTIMAS_RUNS_DIR", str(remotes.parent / "worker-runs"))
    with FakeGitHub() as gh:
        app_environment(monkeypatch, gh, key, f"e2e-{suffix}", f"e2e-gpu-{suffix}", app_id="1")
        gh.permissions = {"Codertocat": "admin"}
        gh.files = {".optimas.yml": config}
        gh.add_pull(GH_REPO, 2, sha)
        gh.pr_files[2] = pr_files if pr_files is not None else PROBE_PR_FILES
        srv = make_server("127.0.0.1", 0, create_app(settings, conn), threaded=True)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        deliver_label(srv.server_port, sha)
        control = Queue(settings.control_queue, connection=conn)
        gpu = Queue(f"e2e-gpu-{suffix}", connection=conn)
        SimpleWorker([control], connection=conn).work(burst=True)
        assert gpu.count == 1
        gpu_job = gpu.jobs[0]
        if prepare is not None:
            prepare(gh)  # e.g. faults for the GPU job's requests
        if move_head:
            gh.add_pull(GH_REPO, 2, "b" * 40)  # a push lands while the job runs
        SimpleWorker([gpu], connection=conn).work(burst=True)
        srv.shutdown()
        app_from_env.cache_clear()
    for q in (control, gpu):
        q.delete(delete_jobs=False)
    return gh, sha, gpu_job


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_candidate_no_gpu_proved_is_text_in_the_summary_never_a_suggestion(monkeypatch, remote, tmp_path, caplog):
    """On a worker that cannot validate and time the candidate (no GPU here), the job posts no
    review: the candidate's diff is text in the summary, and the check run is neutral, not green."""
    caplog.set_level("INFO", logger="optimas")
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote)
    # the job's progress goes through logging, each record naming its stage (the worker prints them)
    stages = {r.stage for r in caplog.records if r.name.startswith("optimas.")}
    assert {"analysis", "proposal"} <= stages
    result = gpu_job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    assert result.return_value["suggestions"] == 0 and result.return_value["verdict"] == "not measured"
    assert gh.reviews == []
    (check,) = gh.check_runs.values()
    assert check["status"] == "completed" and check["head_sha"] == sha and check["conclusion"] == "neutral"
    assert "not validated or timed" in check["output"]["title"]
    summaries = [c for c in gh.comments if MARKER in c["body"]]
    assert len(summaries) == 1 and "matmul" in summaries[0]["body"]
    body = summaries[0]["body"]
    assert "suggestion" not in body.replace("no suggestion", "")  # no committable block, however fenced
    assert "+__global__ void matmul(const float* __restrict__ A" in body  # the diff, as text
    assert "```text\n--- a/examples/h200-probe/probe_kernels.cu" in body
    assert "EAR: coverage 1.00, localization 1.00" in body
    # the run is named by its id; the worker host's paths are not shown, and no artifacts link is
    # made up when the operator serves none
    run_id = re.search(r"run `(\d{8}T\d{6}Z-[0-9a-f-]{36})`", body).group(1)
    assert (tmp_path / "worker-runs" / run_id).is_dir()
    assert str(tmp_path) not in body and "Artifacts" not in body


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_the_app_asks_the_operators_model_whatever_the_repository_names(monkeypatch, remote, tmp_path):
    """A config naming the replay backend with an answers folder in the repository (which the pull
    request writes) gets the operator's model instead, and the summary says so."""
    config = CONFIG.replace("llm: {backend: offline}", "llm: {backend: replay, replay_dir: examples/h200-probe}")
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, config=config)
    result = gpu_job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    (call,) = [json.loads(line) for p in (tmp_path / "worker-runs").glob("*/llm/calls.jsonl")
               for line in p.read_text().splitlines()]
    assert call["backend"] == "offline"
    (summary,) = [c["body"] for c in gh.comments if MARKER in c["body"]]
    assert "names `llm.backend`, `llm.replay_dir`: the model and its answers are chosen by whoever runs" in summary


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("nvcc") is None, reason="git and nvcc needed")
def test_a_pull_request_that_changes_none_of_the_programs_files_runs_nothing(monkeypatch, tmp_path):
    """Documentation and another program's source (outside this one's workspace): told without a
    build (no profile run, no model asked, no run kept); the check run is neutral and the summary
    says why. tests/test_bot_programs.py has the cases a build tells."""
    remote = make_remote(tmp_path, ["examples/h200-probe", "benchmarks/stream"])
    files = [{"filename": "README.md", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"},
             {"filename": "benchmarks/stream/main.cu", "status": "modified", "patch": "@@ -1 +1 @@\n-a\n+b"},
             {"filename": "docs/new.md", "status": "renamed", "previous_filename": "docs/old.md", "patch": ""}]
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, pr_files=files)
    result = gpu_job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    assert result.return_value["verdict"] == "not run" and gh.reviews == []
    (check,) = gh.check_runs.values()
    assert check["conclusion"] == "neutral" and "changes none of the files of `probe`" in check["output"]["title"]
    (summary,) = [c["body"] for c in gh.comments if MARKER in c["body"]]
    # none lies in the program's workspace: told without a build
    assert "none of the 4 changed files is in probe's workspace (examples/h200-probe) other than documentation" \
        in summary
    assert not (tmp_path / "worker-runs").exists() or not any((tmp_path / "worker-runs").iterdir())
    # the same pull request changing the kernel's file runs it
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, pr_files=[*files, *PROBE_PR_FILES])
    assert gpu_job.latest_result().return_value["verdict"] == "not measured"


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_head_that_moves_during_the_job_gets_no_stale_suggestions(monkeypatch, remote):
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, move_head=True)
    assert gpu_job.latest_result().return_value == {"status": "stale", "head": "b" * 40}
    assert gh.reviews == []
    (summary,) = [c for c in gh.comments if MARKER in c["body"]]
    assert "The head moved on to `bbbbbbb`" in summary["body"]
    (check,) = gh.check_runs.values()
    assert check["conclusion"] == "neutral"


STREAM_CONFIG = """app:
  name: stream
  workdir: benchmarks/stream
  workspace: benchmarks
  sources: [main.cu]
  build: nvcc -O3 -std=c++17 -arch={arch} {lineinfo} -Xcompiler -fopenmp -o {exe} main.cu
  run: "{exe} --config {config} --seed {seed} --out {out}"
  profile_run: "{exe} --config {config} --seed {seed} --scale {scale} --no-check"
  configurations: [small, medium]
  profile_configuration: small
  seeds: [1, 2]
  outputs:
    - {path: "{out}", compare: bitwise}
  timeout_s: 300
  kernel_time_regex: "kernel_ms=([0-9.]+)"
llm: {backend: offline}
evaluation: {max_iterations: 1}
"""


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_gpu_worker_runs_the_closed_loop_and_publishes(monkeypatch, tmp_path):
    """No recorded profiles in the repo's config: the GPU job runs the closed loop on this GPU
    and publishes its outcome (a review only if the loop kept a candidate)."""
    remote = make_remote(tmp_path, ["benchmarks/stream", "benchmarks/common"])
    main = (REPO / "benchmarks" / "stream" / "main.cu").read_text().splitlines()
    added = {"filename": "benchmarks/stream/main.cu", "status": "added",
             "patch": f"@@ -0,0 +1,{len(main)} @@\n" + "\n".join("+" + line for line in main)}
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, config=STREAM_CONFIG, pr_files=[added])
    result = gpu_job.latest_result()
    assert result is not None and result.type.name == "SUCCESSFUL", getattr(result, "exc_string", "")
    (check,) = gh.check_runs.values()
    assert check["status"] == "completed" and check["head_sha"] == sha
    (summary,) = [c for c in gh.comments if MARKER in c["body"]]
    body = summary["body"]
    loop = json.loads(next((tmp_path / "worker-runs").glob("*/evaluation/loop.json")).read_text())
    if loop["best"] is None:  # the summary says what the loop did: kept nothing, and why it stopped
        # (the stop reason quotes the model's words: shown as code)
        assert f"Closed loop: {code_span(loop['stopped_because'])}" in body and gh.reviews == []
    else:
        assert f"over {loop['best']} iteration(s), each significant" in body and len(gh.reviews) == 1
    assert "- iteration 1:" in body and "Hot kernels:" in body and "EAR: coverage" in body
    for review in gh.reviews:
        assert review["commit_id"] == sha
        assert all(c["path"] == "benchmarks/stream/main.cu" for c in review["comments"])


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_gpu_job_that_cannot_profile_fails_once_and_says_why(monkeypatch, tmp_path):
    """No recorded profiles and no ncu on the worker: the job fails without retrying (it would fail
    the same way), its check run is completed as a failure, and the PR gets one comment with the reason."""
    remote = make_remote(tmp_path, ["benchmarks/stream", "benchmarks/common"])
    # a worker host without Nsight Compute (a repository's config may not name the worker's tools)
    path = [d for d in os.environ["PATH"].split(os.pathsep) if d and not (Path(d) / "ncu").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, config=STREAM_CONFIG, pr_files=[])
    gpu_job.refresh()
    assert gpu_job.get_status() == "failed" and gpu_job.retries_left == 0
    (check,) = gh.check_runs.values()
    assert check["status"] == "completed" and check["conclusion"] == "failure"
    assert "ncu not found" in check["output"]["summary"]
    (failure,) = [c for c in gh.comments if "failed:" in c["body"]]
    assert f"`{gpu_job.id}` failed:\n```text\nProfilingError: ncu not found" in failure["body"]
    assert gh.reviews == [] and not [c for c in gh.comments if MARKER in c["body"]]
