"""The App against an attacker, round two (issue #29): deliveries through gunicorn serving
`bot.wsgi:app` as the README says, control jobs run by real RQ workers, the real PyGithub client
against the loopback GitHub API, a real Redis. Each test is one hole, reproduced as it was found."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import FIXTURES, GH_REPO, HEAD
from conftest import REPO as ROOT
from rq import Queue, SimpleWorker

import bot.jobs as jobs

SECRET = "attack-test-secret"
PAYLOADS = FIXTURES / "github" / "payload-examples"
B, M = HEAD, "d" * 40  # the head a writer reviewed; a commit a fork pushes around it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    url: str
    control: Queue | None
    proc: subprocess.Popen

    def deliver(self, event: str, payload: dict | bytes, delivery: str | None = None) -> tuple[int, dict]:
        """POST one delivery signed as GitHub signs it (the body only)."""
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        req = urllib.request.Request(self.url + "/webhook", data=raw, method="POST", headers={
            "Content-Type": "application/json", "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()})
        try:
            with urllib.request.urlopen(req, timeout=15) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def work(self) -> None:
        """Run every queued control job with a real RQ worker."""
        SimpleWorker([self.control], connection=self.control.connection).work(burst=True)


def gunicorn(env: dict[str, str], port: int) -> subprocess.Popen:
    # the documented deployment: every setting of gunicorn's in bot/serving.py
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:bot.serving", "--bind",
                             f"127.0.0.1:{port}", "bot.wsgi:app"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(150):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("gunicorn did not come up")


def stop(proc: subprocess.Popen) -> None:
    """Stop gunicorn as its deployment would (SIGTERM), killing it if it is still up past its graceful
    timeout (bot/serving.py's 30 s; under load a worker can take that long to let go)."""
    proc.terminate()
    try:
        proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def served(env) -> Iterator[tuple[Served, object, object, Queue]]:
    """gunicorn serving the App with the control queue and Redis namespace of `env`'s workers."""
    gh, conn, gpu = env
    gh.permissions.update({"writer": "write", "triager": "triage"})
    control = Queue(f"test-control-{uuid.uuid4().hex[:8]}", connection=conn)
    port = free_port()
    proc = gunicorn({**os.environ, "OPTIMAS_WEBHOOK_SECRET": SECRET, "OPTIMAS_CONTROL_QUEUE": control.name,
                     "OPTIMAS_KEY_PREFIX": jobs.key_prefix(), "OPTIMAS_REDIS_URL": "redis://127.0.0.1:6379/0"}, port)
    try:
        yield Served(f"http://127.0.0.1:{port}", control, proc), gh, conn, gpu
    finally:
        stop(proc)
        control.delete(delete_jobs=True)


def pull_request(action: str, sha: str, at: str, sender: str = "writer", labels: list | None = None,
                 label: object = None, before: str | None = None) -> dict:
    """A pull_request event; `before`: a push's replaced head (the example's `before` is left out
    without it)."""
    p = json.loads((PAYLOADS / "pull_request" / "synchronize.payload.json").read_text())
    p["action"] = action
    p.pop("before", None)
    if before is not None:
        p["before"] = before
    p["pull_request"].update(number=2, updated_at=at, labels=labels or [])
    p["pull_request"]["head"]["sha"] = sha
    p["sender"]["login"] = sender
    if label is not None:
        p["label"] = {"name": label}
    return p


def comment(body: str, at: str, sender: str = "writer") -> dict:
    p = json.loads((PAYLOADS / "issue_comment" / "created.with-installation.payload.json").read_text())
    p["issue"].update(number=2, pull_request={"url": "x"})
    p["comment"].update(body=body, created_at=at)
    p["sender"]["login"] = sender
    return p


# 1. The head a writer approved is the one that runs: a fork pushing B, M, B again cannot get M run.

def test_a_fork_that_pushes_a_commit_again_cannot_get_the_other_one_run(served):
    srv, gh, conn, gpu = served
    for sha, at in ((B, "2026-12-04T10:00:00Z"), (M, "2026-12-04T10:00:05Z"), (B, "2026-12-04T10:00:08Z")):
        assert srv.deliver("pull_request", pull_request("synchronize", sha, at, sender="forker"))[0] == 200
    # the writer reviews B and comments at t30; the fork pushes M at t40, before the control job runs
    assert srv.deliver("issue_comment", comment("/optimas run", "2026-12-04T10:00:30Z"))[0] == 202
    gh.add_pull(GH_REPO, 2, M)
    assert srv.deliver("pull_request", pull_request("synchronize", M, "2026-12-04T10:00:40Z", sender="forker"))[0] \
        == 200
    srv.work()
    assert len(gpu.jobs) == 0
    assert f"the head I had seen before it was `{B[:12]}`" in gh.comments[-1]["body"]
    # had the head stayed B, B would have run
    gh.add_pull(GH_REPO, 2, B)
    assert srv.deliver("issue_comment", comment("/optimas run", "2026-12-04T10:00:31Z"))[0] == 202
    srv.work()
    (job,) = gpu.jobs
    assert job.kwargs["head_sha"] == B


# 2. `/optimas run <sha>` takes the whole SHA: a prefix is matched by commits made to match it.

def test_run_with_a_sha_prefix_runs_nothing_and_the_full_sha_runs(served):
    srv, gh, conn, gpu = served
    assert srv.deliver("issue_comment", comment(f"/optimas run {B[:7]}", "2026-12-04T10:00:00Z"))[0] == 202
    srv.work()
    assert len(gpu.jobs) == 0 and "full 40-digit SHA" in gh.comments[-1]["body"]
    assert srv.deliver("issue_comment", comment(f"/optimas run {B.upper()}", "2026-12-04T10:00:01Z"))[0] == 202
    srv.work()
    assert [j.kwargs["head_sha"] for j in gpu.jobs] == [B]
    # every SHA the bot suggests in a reply is one that `/optimas run` takes
    gh.add_pull(GH_REPO, 2, M)
    srv.deliver("issue_comment", comment("/optimas run", "2026-12-04T10:00:02Z"))
    srv.work()
    assert f"`/optimas run {M}`" in gh.comments[-1]["body"]


# 3. Someone without write access gets one reply per pull request and interval, whatever they ask.

def test_non_writers_get_one_reply_and_no_job_ids(served):
    srv, gh, conn, gpu = served
    srv.deliver("pull_request", pull_request("labeled", B, "2026-12-04T10:00:00Z", label="optimas"))
    srv.work()
    (run,) = gpu.jobs
    asks = ["/optimas help", "/optimas status", "/optimas run", f"/optimas run {B}", "/optimas dance",
            "/optimas", "/optimas status please", "/optimas run abc"]
    for who in ("visitor", "stranger"):  # read access; none at all
        for body in asks:
            assert srv.deliver("issue_comment", comment(body, "2026-12-04T10:01:00Z", sender=who))[0] == 202
    srv.work()
    replies = [c["body"] for c in gh.comments]
    assert len(replies) == 1 and "need write access" in replies[0]
    assert run.id not in json.dumps(gh.comments) and len(gpu.jobs) == 1
    # a writer asking for the status sees the run
    srv.deliver("issue_comment", comment("/optimas status", "2026-12-04T10:02:00Z"))
    srv.work()
    assert f"`{run.id}`" in gh.comments[-1]["body"]


# 5. Signed payloads of odd shapes are refused (400), never a server error.

@pytest.mark.parametrize("case", ["label name list", "label name object", "labels not a list", "surrogate repo",
                                  "surrogate comment", "surrogate label", "repo path"])
def test_odd_signed_payloads_are_400_not_500(served, case):
    srv, gh, conn, gpu = served
    event, body = "pull_request", pull_request("synchronize", B, "2026-12-04T10:00:00Z")
    if case == "label name list":
        body["pull_request"]["labels"] = [{"name": ["optimas"]}, {"name": "optimas"}]
        status, answer = srv.deliver(event, body)
        assert status == 202  # the one label that is a name counts; the other is not one
        return
    if case == "label name object":
        body["action"], body["label"] = "labeled", {"name": {"x": 1}}
    elif case == "labels not a list":
        body["pull_request"]["labels"] = {"name": "optimas"}
    elif case == "repo path":
        body["repository"]["full_name"] = "../../etc"
    elif case == "surrogate repo":
        body["repository"]["full_name"] = "SURROGATE"
    raw = json.dumps(body).encode()
    if case == "surrogate repo":
        raw = raw.replace(b'"SURROGATE"', b'"Codertocat/Hello\\ud800"')
    elif case == "surrogate comment":
        event, raw = "issue_comment", json.dumps(comment("/optimas run \ufffd", "2026-12-04T10:00:00Z")) \
            .encode().replace(b"\\ufffd", b"\\udc80")
    elif case == "surrogate label":
        body["action"] = "labeled"
        raw = json.dumps(body).encode()[:-1] + b', "label": {"name": "optimas\\ud800"}}'
    status, answer = srv.deliver(event, raw)
    assert status == 400 and "payload." in answer["error"], answer
    assert srv.control.count == 0


# 6. The event header is not signed: it selects a handler only for the action the signed body states.

def test_an_unsigned_event_header_cannot_turn_a_body_into_a_run(served):
    srv, gh, conn, gpu = served
    for action in ("unlabeled", "closed", "opened"):
        body = pull_request(action, B, "2026-12-04T10:00:00Z", label="optimas", labels=[{"name": "optimas"}])
        status, answer = srv.deliver("pull_request.labeled", body)
        assert status == 400 and "X-GitHub-Event" in answer["error"]
        for header in ("PULL_REQUEST", "pull_request.unlabeled", "issue_comment.created", "pull-request", "x\u00e9"):
            assert srv.deliver(header, body)[0] == 400
        # under its own name it does what its action says, which is never a run
        status, answer = srv.deliver("pull_request", body)
        assert status in (200, 202)
        if status == 202:
            assert srv.control.fetch_job(answer["job"]).func_name == "bot.jobs.cancel_pr"
    # a body routed under another event than its own reaches no handler
    status, answer = srv.deliver("issue_comment", pull_request("labeled", B, "2026-12-04T10:00:00Z",
                                                               label="optimas"))
    assert status == 200 and answer["status"] == "ignored"
    srv.work()
    assert len(gpu.jobs) == 0


# 10. Removing the label stops a run only when the one who removed it may start runs.

def test_a_triage_user_cannot_cancel_a_writers_run(served):
    srv, gh, conn, gpu = served
    srv.deliver("pull_request", pull_request("labeled", B, "2026-12-04T10:00:00Z", label="optimas"))
    srv.work()
    (run,) = gpu.jobs
    srv.deliver("pull_request", pull_request("unlabeled", B, "2026-12-04T10:01:00Z", sender="triager",
                                             label="optimas"))
    srv.work()
    assert run.get_status(refresh=True) == "queued"
    srv.deliver("pull_request", pull_request("unlabeled", B, "2026-12-04T10:02:00Z", label="optimas"))
    srv.work()
    assert run.get_status(refresh=True) == "canceled"


def test_a_closed_delivery_for_a_reopened_pull_request_cancels_nothing(served):
    srv, gh, conn, gpu = served
    srv.deliver("pull_request", pull_request("labeled", B, "2026-12-04T10:00:00Z", label="optimas"))
    srv.work()
    (run,) = gpu.jobs
    srv.deliver("pull_request", pull_request("closed", B, "2026-12-04T10:01:00Z", sender="forker"))
    srv.work()  # the fake still says open: closed and reopened before the control job ran
    assert run.get_status(refresh=True) == "queued"
    gh.pulls[2]["state"] = "closed"
    srv.deliver("pull_request", pull_request("closed", B, "2026-12-04T10:02:00Z", sender="forker"))
    srv.work()
    assert run.get_status(refresh=True) == "canceled"


# 7. A frozen Redis: each delivery gets its 503 in about a second, not several.

@pytest.mark.slow
def test_a_frozen_redis_answers_503_within_about_a_second(tmp_path):
    redis_port, port = free_port(), free_port()
    frozen = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    proc = None
    try:
        proc = gunicorn({**os.environ, "OPTIMAS_WEBHOOK_SECRET": SECRET,
                         "OPTIMAS_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}, port)
        srv = Served(f"http://127.0.0.1:{port}", None, proc)
        assert srv.deliver("pull_request", pull_request("labeled", B, "2026-12-04T10:00:00Z",
                                                        label="optimas"))[0] == 202
        frozen.send_signal(signal.SIGSTOP)
        times = []
        for n in range(4):
            body = pull_request("labeled", B, f"2026-12-04T10:00:0{n}Z", label="optimas")
            t0 = time.monotonic()
            status, answer = srv.deliver("pull_request", body)
            times.append(time.monotonic() - t0)
            assert status == 503 and "redeliver" in answer["error"]
        assert max(times) < 1.3, times
    finally:
        frozen.send_signal(signal.SIGCONT)
        frozen.terminate()
        frozen.wait(timeout=10)
        if proc is not None:
            stop(proc)


# 8. What the pull request reads never shows the worker host's folders.

def test_failure_texts_show_no_worker_host_folders(env, tmp_path):
    from rq import Callback
    from test_bot_hardening import worker_process

    gh, conn, gpu = env
    leak = (f"nvcc failed in /tmp/optimas-job-x1y2/tmp/optimas-candidate-abc/ws/src/k.cu(3): see "
            f"/tmp/optimas-job-x1y2/home/log and {Path.home()}/.cache/optimas/nvcc-shim")
    (tmp_path / "leaky_paths.py").write_text(
        "from rq import get_current_job\nfrom bot.context import JobContext\n\n"
        "def work(repo, installation_id, pr, head_sha):\n"
        "    JobContext.create(repo, installation_id, pr).publisher.start_check(head_sha, get_current_job().id)\n"
        f"    raise RuntimeError({leak!r})\n")
    q = Queue(f"test-paths-{uuid.uuid4().hex[:8]}", connection=conn)
    q.enqueue("leaky_paths.work", kwargs={"repo": GH_REPO, "installation_id": 1, "pr": 2, "head_sha": HEAD},
              on_failure=Callback("bot.jobs.report_failure"))
    worker_process(q.name, tmp_path).communicate(timeout=120)
    q.delete(delete_jobs=True)
    sent = json.dumps([r["json"] for r in gh.requests if r["json"] is not None])
    assert "optimas-job-" not in sent and "optimas-candidate-" not in sent and str(Path.home()) not in sent
    (check,) = gh.check_runs.values()
    assert "nvcc failed in src/k.cu(3): see <job>/home/log and <home>/.cache/optimas/nvcc-shim" in \
        check["output"]["summary"]


# 9. A pull request's code runs in a sandbox: it cannot change what later jobs run, see the worker's
# processes or environment, reach the network, outlive its command, or leave links for the worker.

PROBE = r"""sh -c '
echo "uid $(id -u)"
for f in "$CACHE"/nvcc-shim/*/nvcc "$CACHE"/tracer/*/liboptimas_tracer.so; do
  echo "#evil" >> "$f" 2>/dev/null && echo "WROTE $f" || echo "cache read-only: $(basename $f)"; done
mkdir -p "$CACHE/planted" 2>/dev/null && echo "PLANTED" || echo "no new cache entries"
echo "parent: $(tr "\0" "\n" < /proc/$PPID/environ | grep -o "^OPTIMAS_\(APP_ID\|PRIVATE_KEY\|WEBHOOK\|REDIS\)[A-Z_]*")"
echo "processes: $(ls /proc | grep -c "^[0-9]")"
cat "$CANARY" 2>/dev/null && echo "READ CANARY" || echo "canary hidden"
echo pwned >> "$CANARY" 2>/dev/null && echo "WROTE CANARY" || true
python3 -c "import socket; socket.create_connection((\"127.0.0.1\", 6379), 2); print(\"REACHED REDIS\")" \
  2>/dev/null || echo "no network"
(sleep 600 &)
ln -s "$CANARY" probe_kernels.out; ln -s "$CACHE" cachelink; mkfifo pipe
exit 1'"""


@pytest.mark.parametrize("candidates", [1, 3])
def test_pull_request_code_runs_in_a_sandbox(monkeypatch, tmp_path, candidates):
    """With llm.candidates > 1 too: the candidates' builds ran in a thread pool whose threads did not
    inherit the sandbox, so the code ran unsandboxed (an attacker's pass found it)."""
    from test_bot_end_to_end import CONFIG, deliver_and_work, make_remote
    from test_bot_hardening import cmdlines

    from runner.toolchain.nvcc_shim import shim_folder

    cache, canary = tmp_path / "worker-cache", tmp_path / "worker-home" / "canary"
    canary.parent.mkdir()
    canary.write_text("the worker's own file\n")
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(cache))
    config = CONFIG.replace("build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu",
                            f"build: {json.dumps(PROBE)}\n  env: {{CACHE: {cache}, CANARY: {canary}}}")
    config = config.replace("llm: {backend: offline}", f"llm: {{backend: offline, candidates: {candidates}}}")
    remote = make_remote(tmp_path, ["examples/h200-probe"])
    gh, sha, job = deliver_and_work(monkeypatch, remote, config=config)
    logs = sorted((remote[0].parent / "worker-runs").glob("*/**/prompt/original-build.log"))
    assert len(logs) == candidates  # each candidate's proposal built the original
    for log in logs[1:]:
        later = log.read_text().split("\nexit 1\n", 1)[1]
        assert "canary hidden" in later and "no network" in later and "READ CANARY" not in later
        assert int(re.search(r"processes: (\d+)", later).group(1)) < 10
    text = logs[0].read_text().split("\nexit 1\n", 1)[1]  # what the build printed, after its command line
    shim = shim_folder("nvcc", cache) / "nvcc"  # the shim as the next job checks it
    assert "#evil" not in shim.read_text() and "WROTE" not in text and "PLANTED" not in text
    assert "cache read-only: nvcc" in text and "no new cache entries" in text
    assert "parent: \n" in text and "READ CANARY" not in text and "canary hidden" in text
    assert canary.read_text() == "the worker's own file\n" and "no network" in text
    assert int(re.search(r"processes: (\d+)", text).group(1)) < 10
    time.sleep(0.5)
    assert not [c for c in cmdlines() if c.startswith("sleep 600")]
    run = next((remote[0].parent / "worker-runs").glob("*/manifest.json")).parent
    assert not [p for p in run.rglob("*") if p.is_symlink() and not p.resolve().is_relative_to(run)]
    (summary,) = [c for c in gh.comments if "optimas:summary" in c["body"]]
    assert "the original sources do not build" in summary["body"] and "optimas-job-" not in summary["body"]


# The sweep and what is kept, against the holes an attacker's pass found in them.

@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                    reason="needs root to run the sweep as another, unprivileged user")
def test_a_folder_the_sandbox_made_unlistable_is_swept_all_the_same():
    """The sandbox runs as the worker's user, so it may chmod its folders 0311 (enter, not list):
    a walk that skips what it cannot list would leave a link out for the worker to follow."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="optimas-sweep-test-"))
    try:
        base.chmod(0o755)
        outside, job = base / "outside.txt", base / "job"
        outside.write_text("the worker's file\n")
        (job / "hidden").mkdir(parents=True)
        (job / "hidden" / "trap").symlink_to(outside)
        (job / "inner.txt").write_text("x")
        (job / "hidden" / "ok").symlink_to(job / "inner.txt")
        for p in (job, job / "hidden", job / "inner.txt"):
            os.chown(p, 65534, 65534, follow_symlinks=False)
        (job / "hidden").chmod(0o311)
        code = ("from pathlib import Path\nfrom runner.base.sandbox import Sandbox\n"
                f"print(Sandbox('bwrap', [Path({str(job)!r})]).sweep())\n")
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                            code], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin"})
        assert r.returncode == 0, r.stderr
        assert str(job / "hidden" / "trap") in r.stdout
        assert not (job / "hidden" / "trap").is_symlink() and (job / "hidden" / "ok").is_symlink()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_tree_too_deep_to_check_fails_the_job_and_nothing_is_kept(tmp_path):
    from runner.base.sandbox import MAX_SWEEP_DEPTH, Sandbox, SandboxError

    job = tmp_path / "job"
    deep = job.joinpath(*["d"] * (MAX_SWEEP_DEPTH + 2))
    deep.mkdir(parents=True)
    (deep / "trap").symlink_to("/etc/passwd")
    with pytest.raises(SandboxError, match="too deep to check"):
        Sandbox("bwrap", [job]).sweep()


def test_only_runs_are_kept_and_only_as_plain_files(tmp_path):
    from bot.keep import keep_runs

    work, runs = tmp_path / "job" / "work" / "runs", tmp_path / "worker" / "runs"
    secret = tmp_path / "worker" / "secrets" / "app.pem"
    secret.parent.mkdir(parents=True)
    secret.write_text("KEY")
    run = work / "20261204T120000Z-0f0e0d0c-0b0a-4908-8706-050403020100"
    (run / "prompt").mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    (run / "prompt" / "user-1.md").symlink_to("../../../../../worker/secrets/app.pem")  # inside the job, now
    (run / "app").write_text("#!/bin/sh\n")
    (run / "app").chmod(0o4777)
    forged = work / "20991231T235959Z-00000000-0000-4000-8000-000000000000"
    forged.mkdir()  # no manifest
    # the job's build made a run folder of its own, with a program in it: the worker did not make it
    planted = work / "20991231T235959Z-11111111-1111-4111-8111-111111111111"
    planted.mkdir()
    (planted / "manifest.json").write_text("{}")
    (planted / "evil").write_text("#!/bin/sh\ncat /run/secrets/app_private_key\n")
    (work / "not-a-run").mkdir()
    (work / "corpus.jsonl").write_text('{"app": "x"}\n[1, 2]\nnot json\n')
    (runs / "corpus.jsonl").mkdir(parents=True)  # someone made the corpus a folder: logged, not fatal
    made = [run, forged]
    keep_runs(work, runs, made)
    kept = runs / run.name
    assert (kept / "manifest.json").is_file() and not (kept / "prompt" / "user-1.md").exists()
    assert oct((kept / "app").stat().st_mode & 0o7777) == oct(0o664)  # nothing kept is executable
    assert not (runs / forged.name).exists() and not (runs / "not-a-run").exists()
    assert not (runs / planted.name).exists()
    (runs / "corpus.jsonl").rmdir()
    keep_runs(work, tmp_path / "worker" / "runs", made)
    assert (runs / "corpus.jsonl").read_text() == '{"app": "x"}\n'
    # the App's jobs write their corpus records where only the worker writes: the code's forgeries in
    # the run folders (an attacker's pass) are not added
    private = tmp_path / "job" / "control" / "corpus.jsonl"
    private.parent.mkdir(parents=True)
    private.write_text('{"app": "ours"}\n')
    (work / "corpus.jsonl").write_text('{"app": "forged", "improvement": 9.9}\n')
    keep_runs(work, runs, made, private)
    assert (runs / "corpus.jsonl").read_text() == '{"app": "x"}\n{"app": "ours"}\n'


def test_what_a_job_keeps_on_the_runs_volume_is_bounded(tmp_path, monkeypatch):
    """The code under test writes in its run folders: a file over the limit is left out, and once
    the job's budget is spent (bytes, and a cost per file and folder) its other runs are not kept
    (limits made smaller here)."""
    from bot import keep
    from bot.keep import keep_runs

    monkeypatch.setattr(keep, "KEEP_FILE_BYTES", 1000)
    monkeypatch.setattr(keep, "KEEP_JOB_BYTES", 3000)
    monkeypatch.setattr(keep, "ENTRY_BYTES", 10)
    work, runs = tmp_path / "job" / "work" / "runs", tmp_path / "worker" / "runs"
    made = []
    for n, size in enumerate((2000, 2000)):
        run = work / f"20261206T120000Z-0f0e0d0c-0b0a-4908-8706-05040302010{n}"
        (run / "profile").mkdir(parents=True)
        (run / "manifest.json").write_text("{}")
        (run / "profile" / "a.log").write_bytes(b"x" * (size // 2))
        (run / "profile" / "b.log").write_bytes(b"y" * (size // 2))
        (run / "profile" / "huge.out").write_bytes(b"z" * 5000)
        made.append(run)
    keep_runs(work, runs, made)
    first, second = (runs / r.name for r in made)
    assert (first / "profile" / "a.log").is_file() and not (first / "profile" / "huge.out").exists()
    assert not second.exists()  # 2052 of 3000 kept (2002 bytes, 5 entries): the next 2052 do not fit
    # files of no bytes cost the volume too: a run of 400 empty ones is 4000 (an attacker's pass)
    empty = tmp_path / "job2" / "runs" / "20261206T120000Z-0f0e0d0c-0b0a-4908-8706-050403020109"
    (empty / "profile").mkdir(parents=True)
    (empty / "manifest.json").write_text("{}")
    for i in range(400):
        (empty / "profile" / f"e{i}").touch()
    keep_runs(empty.parent, runs, [empty])
    assert not (runs / empty.name).exists()


# A marker copied into someone else's comment or review is not the bot's.

def test_markers_in_other_peoples_comments_do_not_stand_for_the_bots(monkeypatch, tmp_path):
    from test_bot_end_to_end import deliver_and_work, make_remote

    def spoof(fake):
        url = f"{fake.url}/repos/{GH_REPO}/issues/comments/1"
        fake.comments.append({"id": 1, "body": "looks fine <!-- optimas:summary -->", "issue": 2,
                              "user": {"login": "mallory"}, "url": url})
        fake.reviews.append({"id": 1, "commit_id": None, "body": "<!-- optimas:review -->", "event": "COMMENT",
                             "comments": [], "state": "COMMENTED", "user": {"login": "mallory"}})

    gh, sha, job = deliver_and_work(monkeypatch, make_remote(tmp_path, ["examples/h200-probe"]), prepare=spoof)
    assert gh.comments[0]["body"] == "looks fine <!-- optimas:summary -->"  # not edited into a summary
    ours = [c for c in gh.comments if c["user"]["login"] == "optimas[bot]" and "optimas:summary" in c["body"]]
    # (a review only where the candidate is postable: on a GPU host the offline rules' edit is timed first)
    assert len(ours) == 1 and len([r for r in gh.reviews if r["user"]["login"] == "optimas[bot]"]) <= 1


# An approval holds for the commits writers push, not for a push by anyone else.

@pytest.mark.parametrize("pusher", [("forker", "User", "none"), ("github-actions[bot]", "Bot", "none"),
                                    ("github-actions[bot]", "Bot", "write"), ("forker", "User", "lookup fails")])
def test_a_push_by_a_non_writer_voids_the_approval_until_a_writer_approves_again(served, pusher):
    """A push by an app's account voids it too, whatever GitHub says of the app's permission: a
    fork's workflow pushes as github-actions[bot], and events from bots were dropped before any
    handler ran (an attacker's pass). No reply to an app. A push whose pusher's permission cannot
    be looked up voids it as well (an attacker's second pass: it failed open)."""
    srv, gh, conn, gpu = served
    login, kind, permission = pusher
    labels = [{"name": "optimas"}]
    srv.deliver("pull_request", pull_request("labeled", B, "2026-12-04T10:00:00Z", label="optimas", labels=labels))
    srv.work()
    assert [j.kwargs["head_sha"] for j in gpu.jobs] == [B]
    gh.add_pull(GH_REPO, 2, M)  # the fork pushes M
    push = pull_request("synchronize", M, "2026-12-04T10:01:00Z", sender=login, labels=labels, before=B)
    push["sender"]["type"] = kind
    if permission == "write":
        gh.permissions[login] = "write"
    elif permission == "lookup fails":
        gh.faults.append(("GET", rf"/repos/{GH_REPO}/collaborators/{re.escape(login)}/permission", 403,
                          {"message": "Forbidden"}, {}))
    replies = len(gh.comments)
    assert srv.deliver("pull_request", push)[0] == 202
    srv.work()
    # a person is told (and a job that failed says so), an app never
    assert len(gh.comments) == replies + ((permission == "none" and kind == "User") or permission == "lookup fails")
    e = "e" * 40  # a writer's "update branch" merges the base into it: a head holding M
    gh.add_pull(GH_REPO, 2, e)
    srv.deliver("pull_request", pull_request("synchronize", e, "2026-12-04T10:02:00Z", labels=labels, before=M))
    srv.work()
    assert [j.kwargs["head_sha"] for j in gpu.jobs] == [B] and "was not run" in gh.comments[-1]["body"]
    # the writer reads the changes and approves the head by its SHA: it runs, and so do their later pushes
    srv.deliver("issue_comment", comment(f"/optimas run {e}", "2026-12-04T10:03:00Z"))
    srv.work()
    assert gpu.jobs[-1].kwargs["head_sha"] == e
    f = "f" * 40
    gh.add_pull(GH_REPO, 2, f)
    srv.deliver("pull_request", pull_request("synchronize", f, "2026-12-04T10:04:00Z", labels=labels, before=e))
    srv.work()
    assert gpu.jobs[-1].kwargs["head_sha"] == f  # (e's run, superseded, left the queue)


# A writer's push runs only on a head a writer approved (an attacker's sixth pass: the approval was
# only the absence of a void, so a head nobody approved ran on a writer's "update branch").

@pytest.mark.parametrize("how", ["labelled by a triage user", "labelled by an app", "approval expired",
                                 "pushed while closed"])
def test_a_writers_push_runs_only_on_a_head_a_writer_approved(served, how):
    srv, gh, conn, gpu = served
    labels = [{"name": "optimas"}]
    e = "e" * 40
    if how == "labelled by a triage user":
        srv.deliver("pull_request", pull_request("labeled", M, "2026-12-04T10:00:00Z", sender="triager",
                                                 label="optimas", labels=labels))
    elif how == "labelled by an app":
        p = pull_request("labeled", M, "2026-12-04T10:00:00Z", sender="github-actions[bot]", label="optimas",
                         labels=labels)
        p["sender"]["type"] = "Bot"
        srv.deliver("pull_request", p)
    else:
        # a writer approves B: their push on B runs
        gh.add_pull(GH_REPO, 2, B)
        srv.deliver("pull_request", pull_request("labeled", B, "2026-12-04T10:00:00Z", label="optimas", labels=labels))
        srv.work()
        assert [j.kwargs["head_sha"] for j in gpu.jobs] == [B]
        if how == "approval expired":
            conn.delete(f"{jobs.key_prefix()}:approved:{GH_REPO}#2")  # what its TTL does after APPROVAL_TTL_S
            gh.add_pull(GH_REPO, 2, M)  # the fork's push M (before the expiry, its run since finished)
        else:
            # the fork closes the pull request, pushes M (GitHub sends no synchronize then), reopens it
            srv.deliver("pull_request", pull_request("closed", B, "2026-12-04T10:01:00Z", sender="forker"))
            gh.add_pull(GH_REPO, 2, M)
            srv.deliver("pull_request", pull_request("reopened", M, "2026-12-04T10:02:00Z", sender="forker",
                                                     labels=labels))
    srv.work()
    before = [j.kwargs["head_sha"] for j in gpu.jobs]
    assert M not in before
    gh.add_pull(GH_REPO, 2, e)  # the writer's "update branch" merges the base into M
    srv.deliver("pull_request", pull_request("synchronize", e, "2026-12-04T10:03:00Z", labels=labels, before=M))
    srv.work()
    assert [j.kwargs["head_sha"] for j in gpu.jobs] == before and "was not run" in gh.comments[-1]["body"]
    srv.deliver("issue_comment", comment(f"/optimas run {e}", "2026-12-04T10:04:00Z"))
    srv.work()
    assert gpu.jobs[-1].kwargs["head_sha"] == e  # a writer's approval of the head runs it


# What the pull request's code decides (kernel names, what it prints) is shown as code, never as Markdown.

def test_names_and_output_from_the_pull_request_cannot_mention_or_link():
    from bot.outcome import ProgramOutcome
    from bot.publish import code_block, code_span
    from bot.summary import summary_text

    evil = "matmul` @octo-org/everyone [sign in again](https://evil.example/login) `"
    span = code_span(evil)
    assert span.startswith("`` ") and span.endswith(" ``") and span.count("``") == 2
    block = code_block("ok\n```\n@octo-org/everyone ![x](https://evil.example/x.png)\n```")
    assert block.startswith("````text\n") and block.endswith("\n````")
    text = summary_text(ProgramOutcome("no candidate", "no candidate", "No usable candidate",
                                       details="error near `x` @someone", hot=(evil + "(int)",), evidence=3, run="r1"),
                        HEAD, False)
    assert f"Hot kernels: {code_span(evil.split('(')[0])}" in text and "```text\nerror near `x` @someone\n```" in text


EVIL = "ok\n\n@octo-org/admins ![px](https://evil.example/t.png) [Re-authorize Optimas](https://evil.example/login)"


def _live_markdown(text: str) -> list[str]:
    """The mentions, images and links of `text` that GitHub would render: outside fenced blocks and
    code spans (a rough CommonMark reading, enough for what the bot writes)."""
    outside = re.sub(r"(?ms)^(`{3,}).*?^\1\s*$", "", text)  # fenced blocks
    outside = re.sub(r"(`+)(?:(?!\1).)+?\1", "", outside, flags=re.S)  # code spans, one paragraph at most
    return re.findall(r"@[\w-]+/?[\w-]*|!\[[^\]]*\]\([^)]*\)|\[[^\]]*\]\([^)]*\)", outside)


def test_the_model_s_words_the_programs_output_and_file_names_reach_the_pr_as_text(tmp_path):
    """What the pull request controls (its program's output in the validation, its source lines in the
    evidence, file names) and what the model says (steerable by text in the pull request) are shown as
    code: no mention, image or link is live in the summary or a review comment (an attacker's pass)."""
    from dataclasses import replace

    from bot.outcome import recorded_outcome
    from bot.summary import summary_text
    from runner.analysis.evidence import Diagnostics, Evidence, GpuInfo
    from runner.base.config import load_config
    from runner.base.runstore import create_run
    from runner.flows.loop import Iteration
    from runner.flows.optimize import Optimization
    from runner.proposal.parser import Edit, Proposal
    from runner.proposal.stage import ProposeResult
    from runner.toolchain.compat_record import CompatRecord

    assert _live_markdown(EVIL) == ["@octo-org/admins", "![px](https://evil.example/t.png)",
                                    "[Re-authorize Optimas](https://evil.example/login)"]  # the check sees them
    app = tmp_path / "app"
    app.mkdir()
    (app / "k.cu").write_text("__global__ void k(float *a) {\n  a[0] = 1;\n}\n")
    (app / "optimas.yml").write_text("app:\n  name: k\n  sources: [k.cu]\n  configurations: [default]\n")
    lc = load_config(app / "optimas.yml")
    diag = Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[], evidence=[
        Evidence(id="S1", kind="stall", kernel="k", text="k.cu:2 `/* ` " + EVIL + " ` */` holds 40% of stalls")])
    edit = Edit(file="k.cu", start_line=2, end_line=2, new_text="  a[0] = 2;", cites=["S1"], rationale=EVIL)
    proposed = ProposeResult(status="accepted", diagnostics="PC", proposal=Proposal(shape="structured", raw="",
                                                                                    edits=[edit]))
    run = create_run(tmp_path / "runs")
    result = Optimization("recorded", run, diag, {"k.cu": (app / "k.cu").read_text()},
                          iteration=Iteration(proposed, None, "no GPU here: " + EVIL))
    outcome = recorded_outcome(result, lc, app)
    (comment,) = outcome.edits
    assert EVIL.splitlines()[-1] in comment.explanation and _live_markdown(comment.explanation) == []
    outcome = replace(outcome, validation="default/seed 1: failed (exit 1: " + EVIL + ")", verdict=EVIL,
                      compat=(CompatRecord("cuda_removed_api.h", (EVIL,), ("a` " + EVIL + " `.cu",)),))
    text = summary_text(outcome, HEAD, False)
    assert "@octo-org/admins" in text and _live_markdown(text) == [], _live_markdown(text)


def _rendered_live(text: str) -> list[str]:
    """What GitHub would render live in `text` (links, images, team mentions), read with a real
    CommonMark parser: everything outside <code>."""
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(text)
    outside = re.sub(r"(?s)<code[^>]*>.*?</code>", "", html)
    return re.findall(r'<a href="[^"]+"|<img src="[^"]+"|@[\w-]+/[\w-]+', outside)


def test_hiding_the_hosts_paths_cannot_join_backticks_and_end_a_code_span_early(env):
    """The host's job paths were hidden over the finished Markdown: removing `/optimas-job-x/src/`
    between two runs of backticks joined them into a longer run, which ended the span or block that
    Optimas had fenced, and what followed (the program's output, the model's rationale) was live
    Markdown on the PR (an attacker's pass). Pieces are made public before they are fenced, a
    change of fences in the last pass shows the whole as code, and a cut keeps every fence."""
    from bot.github_client import app_from_env
    from bot.outcome import ProgramOutcome
    from bot.publish import Publisher, code_block, code_span, public_markdown
    from bot.review import MAX_BODY, truncate
    from bot.summary import summary_text

    gh, conn, gpu = env
    link = "[Re-authorize Optimas](https://evil.example/login) ![px](https://evil.example/t.png) @octo-org/admins"
    assert len(_rendered_live(link)) == 3  # the check sees them
    printed = "exit 1: `/optimas-job-x/src/`` " + link + " `"  # the program's output, in the validation
    rationale = "Coalesce the loads.\n``/optimas-candidate-q/ws/``\n" + link  # the model's words
    pub = Publisher.for_installation(app_from_env(), 1, GH_REPO, 2, author="optimas[bot]")
    body = f"**Optimas** (`S1`):\n\n{code_block(rationale)}\n\n```suggestion\n  a[0] = 2;\n```"
    pub.post_review(HEAD, "Optimas: +3%", [{"path": "k.cu", "line": 2, "side": "RIGHT", "body": body}], "run1")
    pub.upsert_summary(summary_text(ProgramOutcome("evaluated", "v", "h", run="r", validation=printed), HEAD, False))
    stored = [gh.reviews[-1]["comments"][0]["body"], gh.comments[-1]["body"]]
    for text in stored:
        assert "evil.example" in text and "optimas-job" not in text and "optimas-candidate" not in text
        assert _rendered_live(text) == [], text
    assert "```suggestion\n  a[0] = 2;\n```" in stored[0]  # the suggestion itself untouched

    # Markdown whose fences the last pass would change is published as one block of text
    built = "```` ``/optimas-job-q/src/`` " + link + " ````"
    assert _rendered_live(built) == [] and _rendered_live(public_markdown(built)) == []
    # a comment cut to GitHub's size: never inside a span, and an open block is closed
    long = "intro\n" + code_block("x" * (MAX_BODY - 300)) + "\n" + ("see " + code_span("a ` b " + link) + " end\n") * 40
    assert _rendered_live(long) == []
    for limit in range(MAX_BODY - 400, MAX_BODY + 2000, 97):
        cut = truncate(long, limit)
        assert len(cut) <= limit and _rendered_live(cut) == [], limit


def test_output_that_redaction_turns_into_a_key_header_hides_nothing_of_the_bots_text():
    """Hiding a host path could join the halves of a private key's header that redaction had not
    seen as one; the summary's last pass then masked from there to its end, the verdict and the
    validation included (an attacker's second pass). public() now runs to a fixed point."""
    from bot.outcome import ProgramOutcome
    from bot.publish import public_markdown
    from bot.summary import summary_text
    from runner.base.redaction import public

    printed = "-----BEGIN /w/optimas-job-abc/src/PRIVATE KEY-----"
    assert public(printed) == public(public(printed)) == "***"
    text = public_markdown(summary_text(ProgramOutcome("no candidate", "validation failed", "No usable candidate",
                                                       details="nvcc: error: " + printed, hot=("k1",), evidence=3,
                                                       run="r1", validation="FAILED on default/seed 1: outputs differ"),
                                        HEAD, False))
    assert "validation failed" in text and "outputs differ" in text and "PRIVATE KEY" not in text
    assert _rendered_live(text) == []


def test_a_marker_quoted_from_the_pull_request_does_not_make_a_comment_the_summary(env):
    """The summary is found by its marker: a reply of ours that quotes the code's output holding
    `<!-- optimas:summary -->` (in a code block) is not the summary, and is never written over."""
    from bot.github_client import app_from_env
    from bot.publish import MARKER, Publisher, code_block

    gh, conn, gpu = env
    pub = Publisher.for_installation(app_from_env(), 1, GH_REPO, 2, author="optimas[bot]")
    reply = pub.post_comment("The job failed:\n\n" + code_block(f"{MARKER}\nsegfault"), "job-9")
    summary = pub.upsert_summary("**Optimas**: +3%")
    assert summary != reply
    bodies = {c["id"]: c["body"] for c in gh.comments}
    assert "segfault" in bodies[reply] and bodies[summary].startswith(MARKER)
    assert pub.upsert_summary("**Optimas**: +4%") == summary and pub.post_comment("again", "job-9") == reply


def test_a_link_the_code_puts_in_place_of_a_source_does_not_move_its_suggestion(tmp_path):
    """A suggestion goes on the file the edit was validated for: the pull request's code, run after
    the checkout was read, can put a link to victim.cu in place of k.cu, and the path resolved
    through it posted k.cu's edit on victim.cu's lines (an attacker's pass)."""
    from bot.outcome import loop_edits, pr_path
    from bot.policy import RepositoryConfigError
    from bot.review import plan_review

    root = tmp_path / "src"
    (root / "app").mkdir(parents=True)
    k = "__global__ void k(float *a) {\n  a[0] = 1;\n}\n"
    (root / "victim.cu").write_text("int check_auth(User u) {\n  return verify(u);\n}\n")
    (root / "app" / "k.cu").symlink_to("../victim.cu")  # what the code left in place of k.cu
    edits = loop_edits({"k.cu": k}, {"k.cu": k.replace("a[0] = 1;", "a[0] = 2;")}, root / "app", root, "+12%")
    assert [e.file for e in edits] == ["app/k.cu"]
    comments, _ = plan_review(edits, {"victim.cu": "@@ -1,3 +1,3 @@\n int check_auth(User u) {\n-  x\n+  y\n }",
                                      "app/k.cu": "@@ -1,3 +1,3 @@\n a\n-b\n+c\n d"})
    assert [c["path"] for c in comments] == ["app/k.cu"]
    with pytest.raises(RepositoryConfigError, match="outside the checkout"):
        pr_path(root / "app", "../../etc/k.cu", root)


def test_a_link_the_code_puts_in_place_of_the_working_folder_does_not_move_a_suggestion(tmp_path):
    """Nor a link in place of the config's `app.workdir` (kernels -> victim): the working folder
    is the config's, as written (an attacker's second pass)."""
    from bot.outcome import recorded_outcome
    from runner.analysis.evidence import Diagnostics, Evidence, GpuInfo
    from runner.base.config import load_config
    from runner.base.runstore import create_run
    from runner.flows.loop import Iteration
    from runner.flows.optimize import Optimization
    from runner.proposal.parser import Edit, Proposal
    from runner.proposal.stage import ProposeResult

    root = tmp_path / "src"
    (root / "kernels").mkdir(parents=True)
    (root / "victim").mkdir()
    k = "__global__ void k(float *a) {\n  a[0] = 1;\n}\n"
    (root / "kernels" / "k.cu").write_text(k)
    (root / "victim" / "k.cu").write_text("int check_auth() {\n  return verify();\n}\n")
    (root / ".optimas.yml").write_text("app:\n  name: k\n  workdir: kernels\n  sources: [k.cu]\n")
    lc = load_config(root / ".optimas.yml")
    (root / "kernels").rename(root / "kernels.moved")  # what the code did while it ran
    (root / "kernels").symlink_to("victim")
    diag = Diagnostics(gpu=GpuInfo(), alpha=0.8, kernels=[], evidence=[Evidence(id="S1", kind="stall", kernel="k",
                                                                                text="k.cu:2 holds 40% of stalls")])
    edit = Edit(file="k.cu", start_line=2, end_line=2, new_text="  a[0] = 2;", cites=["S1"], rationale="r")
    proposed = ProposeResult(status="accepted", diagnostics="PC",
                             proposal=Proposal(shape="structured", raw="", edits=[edit]))
    result = Optimization("recorded", create_run(tmp_path / "runs"), diag, {"k.cu": k},
                          iteration=Iteration(proposed, None, "no GPU here"))
    assert [e.file for e in recorded_outcome(result, lc, root).edits] == ["kernels/k.cu"]


# A reply from Redis that comes after the client's timeout: the retry must neither enqueue the job
# twice nor take the delivery for a redelivery (the claim and the job are written together).

class SlowRedis:
    """A TCP proxy to the local Redis that holds back the reply to the first request holding `marker`
    for `delay_s`, past the receiver's 0.3 s socket timeout."""

    def __init__(self, marker: bytes, delay_s: float = 1.0):
        import threading

        self.marker, self.delay_s, self.armed, self.hold = marker, delay_s, True, False
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import threading

        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", 6379))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, to_redis: bool) -> None:
        try:
            while data := src.recv(65536):
                if to_redis and self.armed and self.marker in data:
                    self.armed, self.hold = False, True
                elif not to_redis and self.hold:
                    self.hold = False
                    time.sleep(self.delay_s)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()


@pytest.mark.parametrize("marker", [b"EVAL", b"ZADD"])
def test_a_late_redis_reply_makes_one_job_and_a_202(marker):
    from conftest import redis_or_fail

    from bot.app import create_app
    from bot.settings import Settings

    conn = redis_or_fail()
    proxy = SlowRedis(marker)
    tag = uuid.uuid4().hex[:8]
    settings = Settings(webhook_secret=SECRET.encode(), control_queue=f"test-late-{tag}", key_prefix=f"test-{tag}",
                        redis_url=f"redis://127.0.0.1:{proxy.port}/0")
    body = json.dumps(pull_request("labeled", B, "2026-12-04T10:00:00Z", label="optimas")).encode()
    delivery = str(uuid.uuid4())
    headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery,
               "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()}
    queue = Queue(settings.control_queue, connection=conn)
    try:
        answer = create_app(settings).test_client().post("/webhook", data=body, headers=headers)
        time.sleep(1.5)  # the held reply arrives; nothing more is written
        assert answer.status_code == 202, answer.get_json()
        assert queue.get_job_ids() == [answer.get_json()["job"]]  # once, not twice
        # GitHub's redelivery of it is recognised
        again = create_app(settings).test_client().post("/webhook", data=body, headers=headers)
        assert again.status_code == 200 and again.get_json()["status"] == "duplicate delivery"
    finally:
        proxy.sock.close()
        queue.delete(delete_jobs=True)
        for key in conn.scan_iter(f"test-{tag}:*"):
            conn.delete(key)


# 4. A checkout whose .optimas.yml is a link: the default branch's config is written as a file of its
# own, never through the link (which pointed at the kernel's source, now replaced by YAML).

def test_a_linked_config_in_the_pull_request_is_not_written_through(monkeypatch, tmp_path):
    from test_bot_end_to_end import deliver_and_work, make_remote

    work = tmp_path / "work"
    work.mkdir()
    (work / ".optimas.yml").symlink_to("examples/h200-probe/probe_kernels.cu")
    gh, sha, job = deliver_and_work(monkeypatch, make_remote(tmp_path, ["examples/h200-probe"]))
    (summary,) = [c for c in gh.comments if "optimas:summary" in c["body"]]
    assert "do not build" not in summary["body"] and "Hot kernels:" in summary["body"], summary["body"]
    (run,) = (tmp_path / "worker-runs").glob("*/manifest.json")
    assert (run.parent / "prompt" / "original-build.log").read_text().count("error") == 0


@pytest.mark.parametrize("setting", [
    "app: {name: x, workspace: /run/secrets, workdir: /run/secrets, sources: [app_private_key], build: 'true', "
    "run: 'true'}",
    "app: {name: x, sources: [../../worker/secrets/app.pem], build: 'true', run: 'true'}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true', outputs: [{path: /etc/shadow}]}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true', outputs: [{path: '{out}/../../../../../etc/x'}]}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true'}\nprofiles: {raw: [~/.ssh/id_rsa]}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true'}\nllm: {backend: replay, replay_dir: /srv}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true'}\nanalysis: {counters: {metric_dictionary: "
    "../../x.csv}}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true'}\nprofiling: {nvcc: /var/lib/optimas/runs/r/evil}",
    "app: {name: x, sources: [k.cu], build: 'true', run: 'true'}\nprofiling: {ncu: ./ncu}",
    # a program of a programs list, each key of its own
    "app: {build: 'true', run: 'true'}\nprograms: [{name: a, sources: [k.cu]}, {name: b, workdir: /run/secrets}]",
    "app: {build: 'true', run: 'true'}\nprograms: [{name: a, workspace: ../.., sources: [k.cu]}]",
    "app: {build: 'true', run: 'true'}\nprograms: [{name: a, sources: [k.cu]}, {name: b, sources: [../../x.pem]}]",
])
def test_a_repository_config_may_name_nothing_outside_its_checkout_nor_a_tool_to_run(tmp_path, setting):
    """The worker itself (outside the sandbox) copies the workspace, reads sources, profiles and
    outputs, and runs nvcc to prepare the shim and the tracer: a repository's config naming the
    worker's secrets, or a program of its own as nvcc, is refused before any of that."""
    from bot.policy import RepositoryConfigError, refuse_worker_reach
    from runner.base.config import load_config

    work = tmp_path / "job" / "work"
    work.mkdir(parents=True)
    (work / ".optimas.yml").write_text(setting + "\n")
    with pytest.raises(RepositoryConfigError, match="outside the repository|may not name another"):
        refuse_worker_reach(load_config(work / ".optimas.yml"), work)


def test_a_repository_config_within_its_checkout_passes(tmp_path):
    from bot.policy import refuse_worker_reach
    from runner.base.config import load_config

    work = tmp_path / "work"
    (work / "app").mkdir(parents=True)
    (work / ".optimas.yml").write_text(
        "app: {name: x, workdir: app, workspace: ., sources: [k.cu, ../common/h.cuh], build: 'true', run: 'true',\n"
        "      outputs: [{path: '{out}'}, {path: '{out}.part2'}, {path: result.bin}]}\nprofiles: {raw: [app/p.csv]}\n"
        "profiling: {nvcc: nvcc}\n")
    refuse_worker_reach(load_config(work / ".optimas.yml"), work)


@pytest.mark.skipif(not shutil.which("bwrap"), reason="bubblewrap not installed")
def test_a_thread_without_the_jobs_context_cannot_start_a_command_while_a_sandbox_is_open(tmp_path):
    """Defence in depth for the thread pool hole: a context without the sandbox, in a process where
    one is open, refuses to run a command instead of running it unsandboxed."""
    import threading

    from runner.base.processes import run_process
    from runner.base.sandbox import SandboxError, sandboxed

    errors: list[BaseException] = []

    def bare() -> None:
        try:
            run_process(["true"], tmp_path, 30)
        except SandboxError as e:
            errors.append(e)

    with sandboxed([tmp_path]):
        t = threading.Thread(target=bare)
        t.start()
        t.join()
        inside = run_process(["sh", "-c", "cat /proc/1/comm"], tmp_path, 30)
    assert errors and "outside the sandbox" in str(errors[0])
    assert inside.returncode == 0 and inside.output.strip() == "bwrap"
    assert run_process(["true"], tmp_path, 30).returncode == 0  # no sandbox open: the CLI's own runs


SCRATCH_TRAP = """
import os, sys, tempfile
from pathlib import Path
sys.path.insert(0, {root!r})
from runner.base.sandbox import scratch
outside = Path({outside!r})
tempfile.tempdir = {base!r}
with {opener} as d:
    d = Path(d)
    (d / "d1").mkdir()
    (d / "d1" / "l").symlink_to(outside)
    (d / "d1").chmod(0o500)  # what the code left: a folder the cleanup cannot empty at first
print(oct(outside.stat().st_mode & 0o777))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists(),
                    reason="needs root to run the cleanup as another, unprivileged user")
def test_a_job_folder_is_removed_without_changing_the_mode_of_what_its_links_point_to():
    """tempfile.TemporaryDirectory's cleanup chmods what it cannot remove, following links on
    Pythons before 3.11.8 (CVE-2023-6597; an attacker's pass made the worker's key 0700 so): a job
    cut short left an unreadable folder with links to the worker's files. The job's folders are
    scratch() folders, removed by descriptor with no chmod; checked as an unprivileged user, the
    worker's own (root skips every permission check)."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="optimas-scratch-test-"))
    try:
        outside = base / "app.pem"
        outside.write_text("KEY")
        outside.chmod(0o400)
        for p in (base, outside):
            os.chown(p, 65534, 65534)
        base.chmod(0o755)
        code = SCRATCH_TRAP.format(root=str(ROOT), outside=str(outside), base=str(base), opener='scratch("job-")')
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                            code], capture_output=True, text=True, env={"PATH": "/usr/bin"})
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "0o400"
    finally:
        shutil.rmtree(base, ignore_errors=True)


# An attacker's sixth pass: two ways the pull request's words reached GitHub as Markdown.

LOOP_CONFIG = """app:
  name: probe
  workdir: examples/h200-probe
  sources: [probe_kernels.cu]
  build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu
  run: "{exe} 4194304 4096 1024"
llm: {backend: offline}
evaluation: {max_iterations: 1}
"""


def test_a_failed_runs_check_run_shows_the_build_error_as_code(monkeypatch, tmp_path):
    """The job's own completion of its check run (before the failure callback, which found it
    completed) put the failure text there as Markdown: a `#error` line became a link, an image and
    a mention."""
    from test_bot_end_to_end import deliver_and_work, git

    if not shutil.which("nvcc"):
        pytest.skip("needs nvcc")
    fake = tmp_path / "bin"  # this host has no GPU: a GPU and ncu as their command lines answer
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho '0, GPU-11111111-2222-3333-4444-555555555555, "
                                     "NVIDIA H100 80GB HBM3, 9.0, 580.00, 00000000:18:00.0'\n")
    (fake / "ncu").write_text("#!/bin/sh\nexit 1\n")
    for f in fake.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.setenv("OPTIMAS_SANDBOX_READ", str(fake))
    monkeypatch.setenv("OPTIMAS_CACHE_DIR", str(tmp_path / "cache"))
    work = tmp_path / "work"
    shutil.copytree(ROOT / "examples/h200-probe", work / "examples/h200-probe")
    src = work / "examples/h200-probe/probe_kernels.cu"
    src.write_text('#error "[re-authorize](https://evil.example/login) ![](https://evil.example/px.png) '
                   '@octo-org/maintainers"\n' + src.read_text())
    git(tmp_path, "init", "-q", str(work))
    git(work, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A")
    git(work, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x")
    sha = git(work, "rev-parse", "HEAD")
    bare = tmp_path / "remotes" / f"{GH_REPO}.git"
    bare.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "update-ref", "refs/pull/2/head", sha)
    gh, _, _ = deliver_and_work(monkeypatch, (tmp_path / "remotes", sha), config=LOOP_CONFIG)
    (check,) = gh.check_runs.values()
    summary = check["output"]["summary"]
    assert check["conclusion"] == "failure" and "evil.example" in summary
    outside = re.sub(r"(`{3,})text\n.*?\n\1", "", summary, flags=re.S)  # what is not in a code block
    assert "evil.example" not in outside and "@octo-org" not in outside


def test_a_compat_record_the_build_wrote_cannot_put_markdown_in_the_summary(tmp_path):
    """The compat record is a file the sandboxed build can write: a header or names that are not
    Optimas's own are dropped, and the header is shown as code all the same."""
    from bot.outcome import ProgramOutcome
    from bot.summary import summary_text
    from runner.toolchain.compat_record import CompatRecord
    from runner.toolchain.compiler import read_compat

    record = tmp_path / "compat.jsonl"
    evil = "x` **[Optimas: re-authorize](https://evil.example/login)** @octo-org/maintainers `y"
    record.write_text("\n".join(json.dumps(r) for r in (
        {"header": evil, "names": ["__shfl_down"], "sources": ["k.cu"], "cwd": "."},
        {"header": "cuda_legacy_warp.h", "names": [evil], "sources": ["k.cu"], "cwd": "."},
        {"header": "cuda_legacy_warp.h", "sources": ["k.cu"], "cwd": "."},  # no names (a KeyError before)
        {"header": "cuda_legacy_warp.h", "names": ["__shfl_down"], "sources": [evil], "cwd": "."},
    )) + "\n")
    compat = read_compat(record)
    assert [c.header for c in compat] == ["cuda_legacy_warp.h"]
    outcome = ProgramOutcome("no change", "no change", "no change", run="r",
                             compat=(*compat, CompatRecord(evil, ("__shfl_down",), ())))
    text = summary_text(outcome, "a" * 40, False)
    spans = re.sub(r"(`+).*?\1", "", text)
    assert "evil.example" not in spans and "@octo-org" not in spans
