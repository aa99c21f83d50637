"""The bot as an attacker or an unlucky operator meets it (issue #11): secrets in failures and in the
PR's processes, approving a commit nobody saw, lost answers, concurrent control workers, re-runs,
superseded runs, hostile payloads and noise. Real Redis, real RQ workers (forking `rq worker`
processes where the behaviour depends on it), the real PyGithub client against the loopback GitHub
API."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import GH_REPO as REPO
from conftest import HEAD
from conftest import REPO as ROOT
from conftest import run_job as run
from rq import Queue, SimpleWorker
from rq.job import Job

import bot.jobs as jobs
from bot.app import _record_head
from bot.routing import Head
from runner.base.redaction import redact

REDIS = "redis://127.0.0.1:6379/0"
NEW = "b" * 40


def trigger(conn, sender="maintainer", pr=2, head_sha=HEAD, trigger="label", approved_at=None):
    return run(conn, "bot.jobs.handle_trigger", repo=REPO, installation_id=1, sender=sender, pr=pr,
               head_sha=head_sha, trigger=trigger, approved_at=approved_at).return_value()


def worker_process(queue: str, tmp_path: Path | None = None, burst: bool = True) -> subprocess.Popen:
    """A real forking `rq worker` with our worker class, in a session of its own."""
    path = f"{tmp_path}:{os.getcwd()}" if tmp_path else os.getcwd()
    return subprocess.Popen([sys.executable, "-m", "rq.cli", "worker", "-w", "bot.worker.OptimasWorker",
                             *(["--burst"] if burst else []), "--url", REDIS, queue],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": path})


class HangingGit:
    """An HTTP server that reads each request's headers and never answers: a git remote that hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[str] = []
        self.open: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.open.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.requests.append(data.decode("latin-1"))

    def close(self):
        self.stop.set()
        for c in self.open:
            c.close()
        self.sock.close()


def cmdlines() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"))
            except OSError:
                pass
    return out


def outgoing(gh) -> str:
    """Every text the bot sent to GitHub (request bodies)."""
    return json.dumps([r["json"] for r in gh.requests if r["json"] is not None])


# 1. The installation token is in no argument, URL, comment, check run or log line.

@pytest.mark.slow
def test_a_fetch_that_times_out_never_shows_the_installation_token(env, monkeypatch):
    gh, conn, gpu = env
    token = gh.token(1)
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    remote = HangingGit()
    monkeypatch.setenv("OPTIMAS_GIT_URL", remote.url + "/{repo}.git")
    monkeypatch.setenv("OPTIMAS_FETCH_TIMEOUT_S", "3")
    try:
        assert trigger(conn)["status"] == "queued"
        (job,) = gpu.jobs
        job.retries_left = 0  # the last attempt, so that its failure is reported on the PR
        job.save()
        worker = worker_process(gpu.name)
        in_argv = []
        while worker.poll() is None:
            in_argv += [c for c in cmdlines() if token in c or basic in c]
            time.sleep(0.05)
        log = worker.stdout.read()
    finally:
        remote.close()
    # git sent the token as an Authorization header, given to it through its environment
    assert remote.requests and all(f"Authorization: Basic {basic}" in r for r in remote.requests)
    assert in_argv == []
    assert token not in log and basic not in log and "did not finish within 3 s" in log
    # the worker's log says which job is in which stage
    assert f"[{REPO}#2@{HEAD[:7]}] bot.gpu_job: fetching {REPO}#2@{HEAD[:7]} into a fresh workspace" in log
    assert token not in outgoing(gh) and basic not in outgoing(gh)
    (check,) = gh.check_runs.values()
    assert check["conclusion"] == "failure" and "did not finish within 3 s" in check["output"]["summary"]
    (failure,) = [c for c in gh.comments if "failed:" in c["body"]]
    assert "FetchError: git fetch of Codertocat/Hello-World#2 did not finish within 3 s" in failure["body"]


SECRETS = {
    "token": "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "url": "https://x-access-token:hunter2hunter2@github.com/o/r.git",
    "header": "Authorization: Basic eC1hY2Nlc3MtdG9rZW46c2VjcmV0",
    "openai": "sk-proj-" + "Z" * 40,
}


def test_redaction_masks_token_shaped_values_and_registered_secrets():
    from runner.base.redaction import register_secret

    for name, value in SECRETS.items():
        masked = redact(f"before {value} after")
        assert masked.startswith("before ") and masked.endswith(" after"), name
        secret_part = value.split("@")[0].split(":")[-1] if name == "url" else value.split()[-1]
        assert secret_part not in masked, name
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    assert "MIIEvQ" not in redact(f"key: {pem} end") and redact(f"key: {pem} end").endswith(" end")
    register_secret("plain-operator-value-42")
    assert redact("it was plain-operator-value-42.") == "it was ***."
    assert redact("an ordinary sentence about ghs and tokens") == "an ordinary sentence about ghs and tokens"


def test_crafted_output_is_made_public_in_linear_time_and_host_folders_still_go():
    """Text the pull request's code chose (a build log, a compat record's source name) is made public
    before GitHub sees it. Two patterns tried every position of a long run as a start and read to
    its end: 40 KB of "/a" held the worker 17 s and "a.a.a..." 4.5 s (minutes for these payloads;
    an attacker's pass). The same host folders go, the same credentials are masked."""
    from runner.base.redaction import public

    for payload in ("/a" * 200_000, "a." * 200_000 + "://u:p@", "/optimas-candidate-x/ws" * 20_000 + "/a",
                    "a+" * 200_000):
        public(payload)  # (minutes each before)
    shown = public("error in /tmp/x/optimas-candidate-ab12/ws/src/k.cu:3 and /var/tmp/optimas-job-9/work/src/m.cu"
                   " (log: /tmp/optimas-job-77/run.log), =/tmp/optimas-home-3/.cache, //tmp/optimas-job-1")
    assert shown == "error in src/k.cu:3 and m.cu (log: <job>/run.log), =<job>/.cache, /<job>"
    assert "hunter2" not in public("git clone https://x-access-token:hunter2hunter2@github.com/o/r.git")


def test_every_failure_path_redacts_what_it_says(env, tmp_path):
    """A job that fails with secrets in its error, after making its check run: the failure comment,
    the completed check run and the worker's log lines (RQ logs the traceback) show none of them."""
    gh, conn, gpu = env
    text = " ".join(SECRETS.values())
    (tmp_path / "leaky.py").write_text(
        "from rq import get_current_job\nfrom bot.context import JobContext\n\n"
        "def work(repo, installation_id, pr, head_sha):\n"
        "    JobContext.create(repo, installation_id, pr).publisher.start_check(head_sha, get_current_job().id)\n"
        f"    raise RuntimeError({text!r})\n")
    from rq import Callback

    q = Queue(f"test-leak-{uuid.uuid4().hex[:8]}", connection=conn)
    job = q.enqueue("leaky.work", kwargs={"repo": REPO, "installation_id": 1, "pr": 2, "head_sha": HEAD},
                    on_failure=Callback("bot.jobs.report_failure"))
    worker = worker_process(q.name, tmp_path)
    log, _ = worker.communicate(timeout=120)
    q.delete(delete_jobs=True)
    assert "RuntimeError" in log and "Traceback" in log
    sent = outgoing(gh)
    for value in ("A1b2C3d4E5f6G7h8I9j0", "hunter2hunter2", "eC1hY2Nlc3MtdG9rZW46c2VjcmV0", "Z" * 40):
        assert value not in log and value not in sent
    (check,) = gh.check_runs.values()
    assert check["conclusion"] == "failure" and "RuntimeError: ***" in check["output"]["summary"]
    (comment,) = [c for c in gh.comments if f"`{job.id}` failed" in c["body"]]
    assert "RuntimeError: ***" in comment["body"]


# 2. The repository's commands get a minimal environment, never the worker's secrets.

def test_the_repository_commands_never_see_the_workers_secrets(monkeypatch, tmp_path):
    from test_bot_end_to_end import CONFIG, deliver_and_work, make_remote

    # the build prints its environment (it may write only inside the job's folder, which goes with
    # the job): the worker keeps the run's build log
    config = CONFIG.replace("build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu",
                            "build: sh -c 'env; exit 1'\n  env: {ENV_DUMP: declared}")
    secrets = {"OPTIMAS_WEBHOOK_SECRET": "webhook-secret-value-1234", "OPENAI_API_KEY": "sk-" + "k" * 40,
               "OPTIMAS_REDIS_URL": REDIS, "SOME_OPERATOR_TOKEN": "operator-token-value-5678"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv("OPTIMAS_CHILD_ENV", "SOME_OPERATOR_TOKEN,LICENSE_SERVER")  # a secret-looking name is refused
    monkeypatch.setenv("LICENSE_SERVER", "lic.example.com")
    remote = make_remote(tmp_path, ["examples/h200-probe"])
    gh, sha, gpu_job = deliver_and_work(monkeypatch, remote, config=config)
    (log,) = (remote[0].parent / "worker-runs").glob("*/prompt/original-build.log")
    text = log.read_text()
    seen = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("$"))
    assert seen["ENV_DUMP"] == "declared" and seen["CUDA_VISIBLE_DEVICES"] == "3"
    assert seen["LICENSE_SERVER"] == "lic.example.com"
    assert "/optimas-job-" in seen["HOME"] and seen["HOME"] != os.environ.get("HOME")
    from runner.toolchain.nvcc_shim import COMPAT_HEADERS, COMPAT_RECORD, NVCC_RECORD, PTXAS_REPORT

    # the nvcc shim's own switches and record files are the only names of Optimas a build sees
    shim = (NVCC_RECORD, PTXAS_REPORT, COMPAT_RECORD, COMPAT_HEADERS)
    assert not [n for n in seen if (n.startswith("OPTIMAS_") and n not in shim) or n in secrets]
    pem = os.environ["OPTIMAS_PRIVATE_KEY"]
    assert not [v for v in (*secrets.values(), pem.splitlines()[1]) if v in text]
    # the job went on and said the original does not build
    (summary,) = [c for c in gh.comments if "optimas:summary" in c["body"]]
    assert "the original sources do not build" in summary["body"]


def test_every_process_runner_uses_the_minimal_environment(monkeypatch, tmp_path):
    from runner.base.processes import child_environment, child_home, run_command
    from runner.evaluation.measure import run_once

    monkeypatch.setenv("OPTIMAS_PRIVATE_KEY", "private-key-text-9876")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key-text-5432")
    # the toolkit's prefixes pass, but not a name of theirs that holds a key (an attacker's pass)
    monkeypatch.setenv("NVIDIA_API_KEY", "nvapi-key-text-1357")
    monkeypatch.setenv("NV_LICENSE_TOKEN", "nv-token-text-2468")
    monkeypatch.setenv("NVIDIA_NGC_KEY", "ngc-key-text-3579")  # (the second pass: a denied list missed these)
    monkeypatch.setenv("NV_AUTH", "nv-auth-text-4680")
    monkeypatch.setenv("CUDA_SIGNING_KEY", "cuda-key-text-5791")
    monkeypatch.setenv("CUDA_CACHE_MAXSIZE", "1048576")
    with child_home(tmp_path / "home"):
        outputs = [run_once(["sh", "-c", "env"], tmp_path, 30).stdout,
                   run_command(["sh", "-c", "env"], tmp_path, 30, tmp_path / "log.txt").output,
                   run_once(["sh", "-c", "env"], tmp_path, 30, child_environment({"DECLARED": "yes"})).stdout]
    for out in outputs:
        assert "private-key-text-9876" not in out and "gemini-key-text-5432" not in out
        assert not [v for v in ("nvapi-key", "nv-token", "ngc-key", "nv-auth", "cuda-key") if v in out]
        assert f"HOME={tmp_path / 'home'}" in out and "PATH=" in out and "CUDA_CACHE_MAXSIZE=1048576" in out
    assert "DECLARED=yes" in outputs[2]


# 3. A run only ever executes a commit that existed when the writer approved it.

def _seen(conn, sha: str, when: str) -> None:
    _record_head(conn, jobs.key_prefix(), Head(REPO, 2, sha, when))


def test_run_comment_pins_the_head_seen_before_it_and_refuses_a_later_push(env):
    gh, conn, gpu = env
    _seen(conn, HEAD, "2026-12-03T10:00:00Z")
    gh.add_pull(REPO, 2, NEW)  # pushed after the comment: its event is stamped later
    _seen(conn, NEW, "2026-12-03T10:00:07Z")
    result = trigger(conn, head_sha=None, trigger="comment", approved_at="2026-12-03T10:00:05Z")
    assert result == {"status": "refused", "head_sha": NEW} and len(gpu.jobs) == 0
    assert f"comment `/optimas run {NEW}`" in gh.comments[-1]["body"]
    # the writer checks the new head and approves it by its SHA
    assert trigger(conn, head_sha="cafe123" * 5 + "cafec", trigger="comment")["status"] == "refused"
    assert "`cafe123cafe1` is not the head" in gh.comments[-1]["body"]
    result = trigger(conn, head_sha=NEW, trigger="comment", approved_at="2026-12-03T10:01:00Z")
    assert result["status"] == "queued" and result["head_sha"] == NEW
    # a plain comment made after the push was seen runs it
    gh.add_pull(REPO, 3, HEAD)
    _record_head(conn, jobs.key_prefix(), Head(REPO, 3, HEAD, "2026-12-03T10:00:00Z"))
    result = run(conn, "bot.jobs.handle_trigger", repo=REPO, installation_id=1, sender="maintainer", pr=3,
                 head_sha=None, trigger="comment", approved_at="2026-12-03T10:02:00Z").return_value()
    assert result["status"] == "queued" and result["head_sha"] == HEAD


def test_a_label_on_a_head_that_has_moved_runs_nothing(env):
    gh, conn, gpu = env
    gh.add_pull(REPO, 2, NEW)
    assert trigger(conn, head_sha=HEAD) == {"status": "stale", "head_sha": NEW} and len(gpu.jobs) == 0


def test_the_webhook_records_heads_that_run_comments_pin(env, monkeypatch):
    """Deliveries through the served app: the PR's events record its head; a `/optimas run` made
    after them pins it, one made before the push does not."""
    import hashlib
    import hmac

    from werkzeug.serving import make_server

    from bot.app import create_app
    from bot.settings import Settings

    gh, conn, gpu = env
    gh.permissions["Codertocat"] = "admin"  # the example payloads' sender
    settings = Settings(webhook_secret=b"s", control_queue=f"test-control-{uuid.uuid4().hex[:8]}",
                        key_prefix=jobs.key_prefix())
    srv = make_server("127.0.0.1", 0, create_app(settings, conn), threaded=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    examples = ROOT / "tests" / "fixtures" / "github" / "payload-examples"

    def deliver(event: str, payload: dict):
        import urllib.request

        raw = json.dumps(payload).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{srv.server_port}/webhook", data=raw, method="POST", headers={
            "X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + hmac.new(b"s", raw, hashlib.sha256).hexdigest()})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    opened = json.loads((examples / "pull_request" / "opened.payload.json").read_text())
    opened["pull_request"]["updated_at"] = "2026-12-03T09:00:00Z"
    assert deliver("pull_request", opened)["status"] == "ignored"
    comment = json.loads((examples / "issue_comment" / "created.with-installation.payload.json").read_text())
    comment["issue"]["pull_request"] = {"url": "x"}
    comment["issue"]["number"] = 2
    comment["comment"].update(body="/optimas run", created_at="2026-12-03T09:05:00Z")
    assert deliver("issue_comment", comment)["status"] == "queued"
    control = Queue(settings.control_queue, connection=conn)
    SimpleWorker([control], connection=conn).work(burst=True)
    srv.shutdown()
    control.delete(delete_jobs=True)
    (gpu_job,) = gpu.jobs
    assert gpu_job.kwargs["head_sha"] == opened["pull_request"]["head"]["sha"] == HEAD


# 4. Every write is idempotent: a write that lands but whose answer is lost is not made twice.

def test_lost_answers_make_no_duplicate_check_run_review_or_summary(monkeypatch, tmp_path):
    from test_bot_end_to_end import deliver_and_work, make_remote

    lost = [("POST", r"/repos/.+/check-runs"), ("POST", r"/repos/.+/issues/2/comments"),
            ("PATCH", r"/repos/.+/check-runs/\d+")]
    gh, sha, gpu_job = deliver_and_work(monkeypatch, make_remote(tmp_path, ["examples/h200-probe"]),
                                        prepare=lambda fake: fake.lost_answers.extend(lost))
    assert gh.lost_answers == []  # every one of them was hit
    (check,) = gh.check_runs.values()
    assert check["status"] == "completed" and check["external_id"] == gpu_job.id
    assert gh.reviews == []  # no GPU here proves the candidate: no review
    assert len([c for c in gh.comments if "optimas:summary" in c["body"]]) == 1
    creates = [r for r in gh.requests if r["method"] == "POST" and r["path"].endswith("/check-runs")]
    assert len(creates) == 1  # found after the lost answer, not created again


def test_a_lost_review_answer_makes_no_second_review(env):
    """The review of a candidate a GPU proved (its outcome as the evaluation gives it there),
    published through the App's client with its answer lost: one review."""
    from bot.context import JobContext
    from bot.outcome import Edit, ProgramOutcome
    from bot.publish import publish_outcome

    gh, conn, gpu = env
    gh.pr_files[2] = [{"filename": "k.cu", "status": "modified", "patch": "@@ -1,2 +1,3 @@\n a\n+b\n c"}]
    pub = JobContext.create(REPO, 1, 2, conn).publisher
    edit = Edit("k.cu", 2, 2, "B", "S1")
    outcome = ProgramOutcome("evaluated", "improvement", "Optimas: +10%", postable=True, edits=(edit,))
    gh.lost_answers.append(("POST", r"/repos/.+/pulls/2/reviews"))
    check = pub.start_check(HEAD, "job-lost-review")
    assert publish_outcome(pub, check, outcome, HEAD, "summary", "job-lost-review") == 1
    assert gh.lost_answers == [] and len(gh.reviews) == 1
    assert "```suggestion\nB\n```" in gh.reviews[0]["comments"][0]["body"]
    assert gh.check_runs[check]["conclusion"] == "success"


def test_a_failure_report_is_posted_once_however_often_it_runs(env):
    gh, conn, gpu = env
    assert trigger(conn)["status"] == "queued"
    (job,) = gpu.jobs
    for _ in range(3):
        jobs.report_failure(job, conn, RuntimeError, RuntimeError("boom"), None)
    assert len([c for c in gh.comments if f"`{job.id}` failed" in c["body"]]) == 1


# 5. Concurrent control workers for one PR leave exactly one active GPU job.

@pytest.mark.slow
def test_concurrent_control_jobs_for_one_pr_enqueue_one_active_gpu_job(env):
    gh, conn, gpu = env
    gh.vary_content_sha = True  # the config changes between reads: every trigger has a job key of its own
    gh.read_delay_s = 0.3  # the control jobs reach the enqueue step together
    q = Queue(f"test-race-{uuid.uuid4().hex[:8]}", connection=conn)
    control = [q.enqueue("bot.jobs.handle_trigger", kwargs={
        "repo": REPO, "installation_id": 1, "sender": "maintainer", "pr": 2, "head_sha": HEAD, "trigger": "label"})
        for _ in range(8)]
    workers = [worker_process(q.name) for _ in range(4)]
    for w in workers:
        w.communicate(timeout=180)
    results = [Job.fetch(j.id, connection=conn).return_value() for j in control]
    q.delete(delete_jobs=True)
    assert [r["status"] for r in results] == ["queued"] * 8
    active = [r["job"] for r in results if Job.fetch(r["job"], connection=conn).get_status() in jobs.ACTIVE]
    assert active == [conn.get(f"{jobs.key_prefix()}:pr:{REPO}#2").decode()]


# 6. A finished, failed or cancelled run releases its key: an explicit re-run is honoured.

def test_rerun_after_finish_failure_or_unlabel_is_honoured(env, tmp_path, monkeypatch):
    from test_bot_end_to_end import CONFIG, PROBE_PR_FILES, make_remote

    gh, conn, gpu = env
    remotes, sha = make_remote(tmp_path, ["examples/h200-probe"])
    monkeypatch.setenv("OPTIMAS_GIT_URL", f"file://{remotes}/{{repo}}.git")
    monkeypatch.setenv("OPTIMAS_RUNS_DIR", str(tmp_path / "runs"))
    gh.files = {".optimas.yml": CONFIG}
    gh.add_pull(REPO, 2, sha)
    gh.pr_files[2] = PROBE_PR_FILES
    first = trigger(conn, head_sha=sha)
    assert first["status"] == "queued"
    assert trigger(conn, head_sha=sha)["status"] == "duplicate"  # while it is queued
    SimpleWorker([gpu], connection=conn).work(burst=True)
    assert Job.fetch(first["job"], connection=conn).return_value()["status"] == "published"
    # labelled again on the same head after the run finished
    second = trigger(conn, head_sha=sha)
    assert second["status"] == "queued"
    # that run fails; `/optimas run`, as the failure comment recommends, starts another
    monkeypatch.setenv("OPTIMAS_GIT_URL", f"file://{tmp_path}/no-such-remote/{{repo}}.git")
    job = Job.fetch(second["job"], connection=conn)
    job.retries_left = 0
    job.save()
    SimpleWorker([gpu], connection=conn).work(burst=True)
    assert job.get_status(refresh=True) == "failed"
    assert "comment `/optimas run` to try again" in gh.comments[-1]["body"]
    third = trigger(conn, head_sha=sha, trigger="comment")
    assert third["status"] == "queued"
    # unlabelled (cancelled), then labelled again
    assert run(conn, "bot.jobs.cancel_pr", repo=REPO, installation_id=1, sender="maintainer", pr=2,
               by="unlabeled").return_value() == {
        "status": "cancelled", "job": third["job"]}
    assert trigger(conn, head_sha=sha)["status"] == "queued"


# 7. A superseded or cancelled run completes its check run.

def _wait(condition, seconds: float = 30.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_superseded_and_cancelled_running_jobs_complete_their_check_runs(env, monkeypatch):
    """A real forking worker runs the GPU job (held in its fetch by a remote that never answers); a
    push supersedes it, then the label is removed while the next run is running: RQ stops each,
    and each one's check run is completed as cancelled, with the reason."""
    gh, conn, gpu = env
    remote = HangingGit()
    monkeypatch.setenv("OPTIMAS_GIT_URL", remote.url + "/{repo}.git")
    monkeypatch.setenv("OPTIMAS_FETCH_TIMEOUT_S", "120")
    first = trigger(conn)["job"]
    worker = worker_process(gpu.name, burst=False)

    def fetching(n: int) -> bool:
        return len(remote.requests) >= n and gh.check_runs.get(n, {}).get("status") == "in_progress"

    try:
        assert _wait(lambda: fetching(1))
        gh.add_pull(REPO, 2, NEW)  # a push; its synchronize event triggers a run of the new head
        second = trigger(conn, head_sha=NEW, trigger="synchronize")
        assert second["superseded"] == "stopped"
        assert _wait(lambda: gh.check_runs[1].get("status") == "completed")
        assert _wait(lambda: fetching(2))
        assert run(conn, "bot.jobs.cancel_pr", repo=REPO, installation_id=1, sender="maintainer", pr=2, by="unlabeled",
                   why="the `optimas` label was removed").return_value()["status"] == "stopped"
        assert _wait(lambda: gh.check_runs[2].get("status") == "completed")
        # the stopped jobs' git fetches ran in sessions of their own: the stopped callback killed them
        assert _wait(lambda: not [c for c in cmdlines() if remote.url in c], 10)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.communicate()
        remote.close()
    assert gh.check_runs[1]["conclusion"] == "cancelled" and gh.check_runs[1]["external_id"] == first
    assert f"superseded by a run of `{NEW[:7]}`" in gh.check_runs[1]["output"]["summary"]
    assert gh.check_runs[2]["conclusion"] == "cancelled" and gh.check_runs[2]["head_sha"] == NEW
    assert "the `optimas` label was removed" in gh.check_runs[2]["output"]["summary"]
    assert Job.fetch(first, connection=conn).get_status() == "stopped"
    assert not [c for c in gh.comments if "failed:" in c["body"]]  # a stop is not a failure


# 9. Noise: a user without write access gets one reply per PR and hour.

def test_a_non_writer_gets_one_reply_however_often_they_ask(env):
    gh, conn, gpu = env
    results = [trigger(conn, sender="visitor", trigger="comment", head_sha=HEAD) for _ in range(5)]
    assert [r["status"] for r in results] == ["not allowed"] * 5
    assert len(gh.comments) == 1 and "@visitor" in gh.comments[0]["body"] and len(gpu.jobs) == 0
    trigger(conn, sender="visitor", pr=3)  # another PR: one reply there
    assert len(gh.comments) == 2


def test_the_operators_model_applies_whatever_the_repository_names(tmp_path):
    from bot.policy import operator_model
    from bot.settings import SettingsError, WorkerSettings
    from runner.base.config import load_config

    ws = WorkerSettings.from_env({"OPTIMAS_LLM_BACKEND": "openai", "OPTIMAS_LLM_MODEL": "gpt-x"})
    plain = tmp_path / "plain.yml"
    plain.write_text("app: {name: a, build: make, run: ./a}\n")
    got = operator_model(load_config(plain), ws).config.llm
    assert (got.backend, got.model) == ("openai", "gpt-x")
    # a repository's own choice of backend, model or answers folder is not used: the pull request
    # could otherwise write the answers its own run is given (a replay folder in its checkout)
    for own in ("{backend: ollama, model: llama-z}", "{backend: replay, replay_dir: answers}", "{model: cheap}"):
        (tmp_path / "answers").mkdir(exist_ok=True)
        cfg = tmp_path / "own.yml"
        cfg.write_text(f"app: {{name: a, build: make, run: ./a}}\nllm: {own}\n")
        got = operator_model(load_config(cfg), ws).config.llm
        assert (got.backend, got.model, got.replay_dir) == ("openai", "gpt-x", None), own
        got = operator_model(load_config(cfg), WorkerSettings.from_env({})).config.llm
        assert (got.backend, got.model, got.replay_dir) == ("offline", None, None), own
    own = tmp_path / "own.yml"
    own.write_text("app: {name: a, build: make, run: ./a}\nllm: {backend: ollama, model: llama-z}\n")
    # the operator's replay folder: absolute and existing
    answers = tmp_path / "operator-answers"
    answers.mkdir()
    replay = WorkerSettings.from_env({"OPTIMAS_LLM_BACKEND": "replay", "OPTIMAS_LLM_REPLAY_DIR": str(answers)})
    got = operator_model(load_config(own), replay).config.llm
    assert (got.backend, got.replay_dir) == ("replay", str(answers))
    for folder in ("", "answers", str(tmp_path / "missing")):
        with pytest.raises(SettingsError, match="OPTIMAS_LLM_REPLAY_DIR to the absolute path of an existing folder"):
            WorkerSettings.from_env({"OPTIMAS_LLM_BACKEND": "replay", "OPTIMAS_LLM_REPLAY_DIR": folder})
    # temperature and the rest stay the repository's
    tuned = tmp_path / "tuned.yml"
    tuned.write_text("app: {name: a, build: make, run: ./a}\nllm: {temperature: 0.5}\n")
    got = operator_model(load_config(tuned), ws).config.llm
    assert (got.backend, got.model, got.temperature) == ("openai", "gpt-x", 0.5)
    # no operator default: the offline backend
    assert operator_model(load_config(plain), WorkerSettings.from_env({})).config.llm.backend == "offline"
    # the operator's server for every repository
    ws_url = WorkerSettings.from_env({"OPTIMAS_LLM_BACKEND": "openai", "OPTIMAS_LLM_MODEL": "gpt-x",
                                      "OPTIMAS_LLM_BASE_URL": "https://llm.operator.example/v1"})
    assert operator_model(load_config(own), ws_url).config.llm.base_url == "https://llm.operator.example/v1"
    # a repository may not say where the operator's key goes, nor which of the worker's keys is sent
    from bot.policy import RepositoryConfigError

    for extra in ("base_url: http://attacker.example/v1", "api_key_env: GEMINI_API_KEY"):
        steal = tmp_path / "steal.yml"
        steal.write_text(f"app: {{name: a, build: make, run: ./a}}\nllm: {{backend: openai, model: m, {extra}}}\n")
        for settings in (ws, WorkerSettings.from_env({})):
            with pytest.raises(RepositoryConfigError, match="may not be set in the repository.s config"):
                operator_model(load_config(steal), settings)
    for env, says in (({"OPTIMAS_LLM_BACKEND": "gpt"}, "expected one of"),
                      ({"OPTIMAS_LLM_BACKEND": "gemini"}, "set OPTIMAS_LLM_MODEL too")):
        with pytest.raises(SettingsError, match=says):
            WorkerSettings.from_env(env)


def test_a_text_setting_set_but_empty_is_its_default():
    """compose passes `${OPTIMAS_LABEL:-}`-style values as empty strings: an empty label would make
    the App create a label named '' on installation and never match a labelled pull request."""
    from bot.settings import Settings, WorkerSettings

    empty = {k: "" for k in ("OPTIMAS_LABEL", "OPTIMAS_APP_SLUG", "OPTIMAS_REDIS_URL", "OPTIMAS_KEY_PREFIX",
                             "OPTIMAS_CONTROL_QUEUE", "OPTIMAS_GITHUB_API_URL", "OPTIMAS_GPU_QUEUE", "OPTIMAS_GIT_URL")}
    receiver = Settings.from_env({**empty, "OPTIMAS_WEBHOOK_SECRET": "s"})
    worker = WorkerSettings.from_env(empty)
    assert receiver.label == worker.label == "optimas" and receiver.control_queue == "optimas-control"
    assert worker.git_url == "https://github.com/{repo}.git" and receiver.api_url == Settings.api_url


@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="git not installed")
def test_a_commit_whose_tree_names_one_blob_thousands_of_times_is_not_checked_out(tmp_path, monkeypatch):
    """A "git bomb": a tree naming one compressed blob many times fetches in kilobytes and checks
    out in gigabytes, outside the sandbox (an attacker's pass: 2 GB in 3 s). The tree is counted
    before the checkout (limits made smaller here); a tree within them is checked out."""
    from bot import gpu_job
    from bot.gpu_job import FetchError, fetch

    def commit(files: int, blob_bytes: int) -> str:
        src = tmp_path / f"src-{files}"
        git = ["git", "-C", str(src)]
        subprocess.run(["git", "init", "-q", str(src)], check=True)
        blob = subprocess.run([*git, "hash-object", "-w", "--stdin"], input=b"A" * blob_bytes, capture_output=True,
                              check=True).stdout.decode().strip()
        listing = "".join(f"100644 blob {blob}\tf{i:05d}\n" for i in range(files))
        tree = subprocess.run([*git, "mktree"], input=listing.encode(), capture_output=True, check=True)
        sha = subprocess.run([*git, "-c", "user.email=a@b", "-c", "user.name=a", "commit-tree",
                              tree.stdout.decode().strip(), "-m", "bomb"], capture_output=True, check=True)
        sha = sha.stdout.decode().strip()
        subprocess.run([*git, "push", "-q", str(remote), f"{sha}:refs/pull/{files}/head"], check=True)
        return sha

    remote = tmp_path / "remotes" / "o" / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    monkeypatch.setattr(gpu_job, "MAX_CHECKOUT_FILES", 1000)
    monkeypatch.setattr(gpu_job, "MAX_CHECKOUT_BYTES", 10 << 20)
    url = f"file://{tmp_path}/remotes/{{repo}}.git"
    bomb = commit(2000, 1 << 10)  # too many names
    with pytest.raises(FetchError, match="more than a checkout may write"):
        fetch("o/r", 2000, bomb, "ghs_token", tmp_path / "job1" / "src", url, 60)
    monkeypatch.setattr(gpu_job, "MAX_CHECKOUT_FILES", 10)  # the listing itself stops at its cap
    with pytest.raises(FetchError, match="its tree names more than 10 files"):
        fetch("o/r", 2000, bomb, "ghs_token", tmp_path / "job1b" / "src", url, 60)
    monkeypatch.setattr(gpu_job, "MAX_CHECKOUT_FILES", 1000)
    heavy = commit(100, 1 << 20)  # 100 MiB from one blob of 1 MiB
    with pytest.raises(FetchError, match=r"100 files of 104857600 bytes"):
        fetch("o/r", 100, heavy, "ghs_token", tmp_path / "job2" / "src", url, 60)
    assert not list((tmp_path / "job2" / "src").glob("f*"))  # nothing was written
    fine = commit(10, 1 << 10)
    fetch("o/r", 10, fine, "ghs_token", tmp_path / "job3" / "src", url, 60)
    assert len(list((tmp_path / "job3" / "src").glob("f*"))) == 10
    # the tree's own .gitattributes may not have checkout expand what it counted (an attacker's
    # second pass: `ident` and `working-tree-encoding=UTF-32LE` wrote 47 times the blob)
    src = tmp_path / "src-attr"
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    git = ["git", "-C", str(src), "-c", "user.email=a@b", "-c", "user.name=a"]
    (src / "k.cu").write_text("$Id$ " * 1000)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the file"], check=True)
    (src / ".gitattributes").write_text("k.cu ident working-tree-encoding=UTF-32LE\n")  # then its attributes
    subprocess.run([*git, "add", ".gitattributes"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "attributes"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([*git, "push", "-q", str(remote), f"{sha}:refs/pull/7/head"], check=True)
    fetch("o/r", 7, sha, "ghs_token", tmp_path / "job4" / "src", url, 60)
    assert (tmp_path / "job4" / "src" / "k.cu").read_bytes() == b"$Id$ " * 1000  # as committed (not 188,000 bytes)


def test_a_summary_at_the_comment_limit_still_completes_the_check_run(env):
    """GitHub takes a comment of 65,536 characters but a check run's summary of 65,535 at most: a
    summary of 65,536 (the pull request's output and kernel names make its length) still
    completes the check run, each cut to fit."""
    from bot.context import JobContext
    from bot.outcome import ProgramOutcome
    from bot.publish import publish_outcome

    gh, conn, gpu = env
    pub = JobContext.create(REPO, 1, 2, conn).publisher
    outcome = ProgramOutcome("unproven", "not measured", "Optimas: not proven")
    check = pub.start_check(HEAD, "job-long-summary")
    summary = "\n".join(["x" * 99] * 655) + "\n" + "y" * (65_536 - 100 * 655)
    assert len(summary) == 65_536
    assert publish_outcome(pub, check, outcome, HEAD, summary, "job-long-summary") == 0
    (comment,) = [c for c in gh.comments if "optimas:summary" in c["body"]]
    assert len(comment["body"]) <= 65_536 and "truncated" in comment["body"]
    done = gh.check_runs[check]
    assert done["conclusion"] == "neutral" and len(done["output"]["summary"]) <= 65_535
