"""The control jobs run by a real RQ worker (burst mode) against a real Redis, with the real PyGithub
client talking to a loopback server that implements the GitHub endpoints the bot uses."""

from __future__ import annotations

import uuid

import pytest
import redis
from conftest import GH_REPO as REPO
from conftest import HEAD
from conftest import run_job as run
from rq import Queue, SimpleWorker
from rq.job import Job

import bot.jobs as jobs
from bot.github_client import app_from_env


def trigger(conn, sender="maintainer", pr=2, head_sha=HEAD, **kw):
    return run(conn, "bot.jobs.handle_trigger", repo=REPO, installation_id=1, sender=sender, pr=pr,
               head_sha=head_sha, trigger=kw.get("trigger", "label"))


def test_a_maintainer_triggers_a_gpu_job_pinned_to_the_head(env):
    gh, conn, gpu = env
    job = trigger(conn)
    result = job.return_value()
    assert result["status"] == "queued" and result["head_sha"] == HEAD and result["fork"] is False
    (gpu_job,) = gpu.jobs
    assert gpu_job.func_name == "bot.gpu_job.optimize_pr"
    assert gpu_job.kwargs["head_sha"] == HEAD and gpu_job.kwargs["config_sha"].startswith("sha-")
    assert gpu_job.timeout == 3 * 3600
    # authenticated as the installation, through a token made with the app's JWT
    assert any(r["path"] == "/app/installations/1/access_tokens" and r["auth"].startswith("Bearer ")
               for r in gh.requests)
    assert any(r["auth"] == f"token {gh.token(1)}" for r in gh.requests)
    # the config was read from the default branch
    assert any(r["path"] == "/repos/Codertocat/Hello-World/contents/.optimas.yml" for r in gh.requests)


def test_the_same_head_twice_makes_one_gpu_job(env):
    gh, conn, gpu = env
    assert trigger(conn).return_value()["status"] == "queued"
    assert trigger(conn).return_value()["status"] == "duplicate"
    assert len(gpu.jobs) == 1


def test_a_new_head_supersedes_the_queued_job(env):
    gh, conn, gpu = env
    first = trigger(conn).return_value()["job"]
    gh.add_pull(REPO, 2, "f" * 40)
    second = trigger(conn, head_sha="f" * 40, trigger="synchronize").return_value()
    assert second["superseded"] == "cancelled" and second["job"] != first
    assert Job.fetch(first, connection=conn).get_status() == "canceled"


def test_a_sender_without_write_permission_gets_a_polite_reply(env):
    gh, conn, gpu = env
    for who in ("visitor", "stranger"):  # read access; no access at all (404)
        result = trigger(conn, sender=who).return_value()
        assert result["status"] == "not allowed"
    # one reply per pull request and interval, whoever asks
    assert len(gh.comments) == 1 and "need write access" in gh.comments[0]["body"]
    assert "@visitor" in gh.comments[0]["body"] and len(gpu.jobs) == 0


def test_a_fork_pr_runs_pinned_and_is_marked(env):
    gh, conn, gpu = env
    gh.add_pull(REPO, 7, "a" * 40, head_repo="someone/Hello-World")
    result = trigger(conn, pr=7, head_sha="a" * 40).return_value()
    assert result["fork"] is True and gpu.jobs[0].kwargs["fork"] is True


def test_no_config_on_the_default_branch_is_explained(env):
    gh, conn, gpu = env
    gh.files = {}
    assert trigger(conn).return_value()["status"] == "no config"
    assert "`.optimas.yml` on the default branch (main)" in gh.comments[-1]["body"]


def test_cancel_status_and_help(env):
    gh, conn, gpu = env
    job_id = trigger(conn).return_value()["job"]
    run(conn, "bot.jobs.post_status", repo=REPO, installation_id=1, sender="maintainer", pr=2)
    assert f"`{job_id}`" in gh.comments[-1]["body"] and "queued" in gh.comments[-1]["body"]
    assert run(conn, "bot.jobs.cancel_pr", repo=REPO, installation_id=1, sender="maintainer", pr=2,
               by="unlabeled").return_value() == \
        {"status": "cancelled", "job": job_id}
    run(conn, "bot.jobs.post_help", repo=REPO, installation_id=1, sender="maintainer", pr=2, unknown=True)
    assert gh.comments[-1]["body"].startswith("@maintainer, I don't know that command.")


def test_a_failed_job_says_so_on_the_pr(env):
    gh, conn, gpu = env
    from rq import Callback

    q = Queue(f"test-control-{uuid.uuid4().hex[:8]}", connection=conn)
    q.enqueue("bot.jobs.job_key", kwargs={"repo": REPO, "installation_id": 1, "pr": 2, "nonsense": 1},
              on_failure=Callback("bot.jobs.report_failure"))
    SimpleWorker([q], connection=conn).work(burst=True)
    assert "failed:\n```text\nTypeError" in gh.comments[-1]["body"] and "/optimas run" in gh.comments[-1]["body"]
    q.delete(delete_jobs=True)


@pytest.mark.parametrize("head_sha", [None, HEAD])
def test_a_failed_control_job_says_so_whatever_its_trigger_pinned(env, head_sha):
    """A plain `/optimas run` pins no head (head_sha None): its failure callback still comments
    (it asked GitHub for a check run of no commit, raised, and said nothing)."""
    from rq import Callback

    gh, conn, gpu = env
    q = Queue(f"test-control-{uuid.uuid4().hex[:8]}", connection=conn)
    # pull request 99 does not exist: GitHub answers 404, which no retry mends
    job = q.enqueue("bot.jobs.handle_trigger", kwargs={"repo": REPO, "installation_id": 1, "sender": "maintainer",
                                                      "pr": 99, "head_sha": head_sha, "trigger": "comment"},
                    on_failure=Callback("bot.jobs.report_failure"))
    SimpleWorker([q], connection=conn).work(burst=True)
    assert Job.fetch(job.id, connection=conn).get_status() == "failed"
    (comment,) = [c for c in gh.comments if f"`{job.id}` failed" in c["body"]]
    assert "404" in comment["body"] and "/optimas run" in comment["body"]
    q.delete(delete_jobs=True)


def test_a_deterministic_failure_is_not_retried_and_a_transient_one_is_reported_once(env, tmp_path, monkeypatch):
    """The failure callback ends the retries of a failure that would repeat (one comment at once),
    and stays quiet on a transient one until RQ's retries are used up (one comment at the end)."""
    from rq import Callback, Retry

    gh, conn, gpu = env
    (tmp_path / "failing.py").write_text(
        "import requests\nfrom runner.base.errors import ConfigError\n\n"
        f"def attempt(name):\n    open({str(tmp_path / 'attempts')!r}, 'a').write(name + '\\n')\n\n"
        "def bad_config(**kwargs):\n    attempt('bad_config')\n"
        "    raise ConfigError('x.yml', ['app.build: expected a command'])\n\n"
        "def network(**kwargs):\n    attempt('network')\n"
        "    raise requests.ConnectionError('github.com unreachable')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    kw = {"repo": REPO, "installation_id": 1, "pr": 2}
    for name, attempts in (("bad_config", 1), ("network", 3)):
        q = Queue(f"test-retry-{uuid.uuid4().hex[:8]}", connection=conn)
        job = q.enqueue(f"failing.{name}", kwargs=kw, retry=Retry(max=2),
                        on_failure=Callback("bot.jobs.report_failure"))
        before = len(gh.comments)
        SimpleWorker([q], connection=conn).work(burst=True)
        job = Job.fetch(job.id, connection=conn)
        assert job.get_status() == "failed" and job.retries_left == 0
        assert (tmp_path / "attempts").read_text().split().count(name) == attempts
        (comment,) = gh.comments[before:]
        assert f"`{job.id}` failed" in comment["body"]
        q.delete(delete_jobs=True)
    assert "ConfigError" in gh.comments[-2]["body"] and "ConnectionError" in gh.comments[-1]["body"]


def test_transient_failures_are_told_from_lasting_ones():
    import requests
    from github import GithubException

    from bot.gpu_job import FetchError

    assert jobs.is_transient(GithubException(502, {"message": "Bad Gateway"}, None))
    assert not jobs.is_transient(GithubException(404, {"message": "Not Found"}, None))
    secondary = GithubException(403, {"message": "You have exceeded a secondary rate limit."}, {"retry-after": "60"})
    assert jobs.is_transient(secondary)
    assert jobs.is_transient(requests.Timeout()) and jobs.is_transient(FetchError("x", transient=True))
    assert not jobs.is_transient(FetchError("the head moved on")) and not jobs.is_transient(ValueError("x"))


def test_publisher_check_run_review_and_one_summary_comment(env):
    from bot.publish import MARKER, MARKER_REVIEW, Publisher

    gh, conn, gpu = env
    gh.pr_files[2] = [{"filename": "k.cu", "status": "modified", "patch": "@@ -1,2 +1,3 @@\n a\n+b\n c"}]
    pub = Publisher.for_installation(app_from_env(), 1, REPO, 2)
    check = pub.start_check(HEAD, "job-1")
    assert gh.check_runs[check]["status"] == "in_progress" and gh.check_runs[check]["head_sha"] == HEAD
    assert pub.changed_files() == {"k.cu": "@@ -1,2 +1,3 @@\n a\n+b\n c"}
    comments = [{"path": "k.cu", "line": 2, "side": "RIGHT", "body": "S1\n\n```suggestion\nB\n```"}]
    first = pub.post_review(HEAD, "summary", comments, "job-1")
    again = pub.post_review(HEAD, "summary", comments, "job-1")  # a retried post must not duplicate the review
    assert first == again and len(gh.reviews) == 1
    (review,) = gh.reviews
    assert review["commit_id"] == HEAD and review["event"] == "COMMENT" and review["comments"] == comments
    assert MARKER_REVIEW in review["body"]
    a = pub.upsert_summary("first version")
    b = pub.upsert_summary("second version")
    summaries = [c for c in gh.comments if MARKER in c["body"]]
    assert a == b and len(summaries) == 1 and summaries[0]["body"].endswith("second version")
    pub.complete_check(check, "success", "1.3x faster", "details")
    assert gh.check_runs[check]["status"] == "completed" and gh.check_runs[check]["conclusion"] == "success"


def test_publishing_survives_502_and_a_secondary_rate_limit_without_duplicates(env):
    from bot.publish import MARKER, Publisher

    gh, conn, gpu = env
    pub = Publisher.for_installation(app_from_env(), 1, REPO, 2, backoff_s=0.01)
    limited = ({"message": "You have exceeded a secondary rate limit. Please wait a few minutes."},
               {"Retry-After": "0"})
    gh.faults = [("POST", r"/repos/.+/pulls/2/reviews", 502, {"message": "Bad Gateway"}, {}),
                 ("POST", r"/repos/.+/pulls/2/reviews", 403, *limited),
                 ("POST", r"/repos/.+/issues/2/comments", 502, {"message": "Bad Gateway"}, {})]
    review = pub.post_review(HEAD, "summary", [], "job-1")
    assert len(gh.reviews) == 1 and gh.reviews[0]["id"] == review
    posts = [r for r in gh.requests if r["method"] == "POST" and r["path"].endswith("/reviews")]
    assert len(posts) == 3  # two refused, the third landed
    pub.upsert_summary("text")
    assert len([c for c in gh.comments if MARKER in c["body"]]) == 1
    assert gh.faults == []


def test_a_worker_killed_mid_job_is_reported_on_the_pr(env, tmp_path):
    """A real `rq worker` process whose work horse is SIGKILLed: RQ runs no failure callback itself."""
    import os
    import subprocess
    import sys

    gh, conn, gpu = env
    (tmp_path / "dying.py").write_text("import os, signal\n\ndef die(**kwargs):\n"
                                       "    os.kill(os.getpid(), signal.SIGKILL)\n")
    q = Queue(f"test-kill-{uuid.uuid4().hex[:8]}", connection=conn)
    job = q.enqueue("dying.die", kwargs={"repo": REPO, "installation_id": 1, "pr": 2})
    env_vars = {**os.environ, "PYTHONPATH": f"{tmp_path}:{os.getcwd()}"}
    r = subprocess.run([sys.executable, "-m", "rq.cli", "worker", "-w", "bot.worker.OptimasWorker", "--burst",
                        "--url", "redis://127.0.0.1:6379/0", q.name], capture_output=True, text=True, timeout=120,
                       env=env_vars)
    assert "Work horse killed" in r.stdout + r.stderr
    assert Job.fetch(job.id, connection=conn).get_status() == "failed"
    (comment,) = [c for c in gh.comments if job.id in c["body"]]
    assert "the worker process running it died" in comment["body"] and "/optimas run" in comment["body"]
    q.delete(delete_jobs=True)


def test_a_worker_host_that_dies_is_reported_when_its_job_is_found_abandoned(env, tmp_path):
    """The whole worker (parent and horse) is killed; RQ's registry cleanup later finds the job
    abandoned and runs its failure callback, which tells the PR."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from rq import Callback
    from rq.registry import StartedJobRegistry

    gh, conn, gpu = env
    (tmp_path / "slow.py").write_text("import time\n\ndef work(**kwargs):\n    time.sleep(60)\n")
    q = Queue(f"test-host-{uuid.uuid4().hex[:8]}", connection=conn)
    job = q.enqueue("slow.work", kwargs={"repo": REPO, "installation_id": 1, "pr": 2},
                    on_failure=Callback("bot.jobs.report_failure"))
    worker = subprocess.Popen([sys.executable, "-m", "rq.cli", "worker", "-w", "bot.worker.OptimasWorker",
                               "--url", "redis://127.0.0.1:6379/0", q.name], start_new_session=True,
                              env={**os.environ, "PYTHONPATH": f"{tmp_path}:{os.getcwd()}"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if Job.fetch(job.id, connection=conn).get_status() == "started":
            break
        time.sleep(0.1)
    os.killpg(worker.pid, signal.SIGKILL)  # the host dies: no handler of ours runs
    worker.wait()
    StartedJobRegistry(queue=q).cleanup(timestamp=time.time() + 3600)
    (comment,) = [c for c in gh.comments if job.id in c["body"]]
    assert "AbandonedJobError" in comment["body"]
    q.delete(delete_jobs=True)


def test_writes_of_one_installation_are_serialized_across_publishers(env, pem):
    import os
    import threading

    from bot.github_client import GitHubApp
    from bot.publish import Publisher

    gh, conn, gpu = env
    prefix = jobs.key_prefix()

    def overlapping(use_lock: bool) -> bool:
        gh.write_delay_s, pubs = 0.0, []
        for _ in range(2):  # two worker processes: separate clients, no shared pacing
            app = GitHubApp("12345", pem, os.environ["OPTIMAS_GITHUB_API_URL"], seconds_between_writes=0,
                            seconds_between_requests=0)
            lock = (lambda: conn.lock(f"{prefix}:writes:1", timeout=30, blocking_timeout=30)) if use_lock else None
            app.installation_token(1)  # the token and its first use before the race, not inside it
            pubs.append(Publisher.for_installation(app, 1, REPO, 2, lock=lock))
        gh.write_delay_s = 0.3  # each write is slow enough for the other process's writes to fall inside it
        gh.write_spans.clear()
        together = threading.Barrier(2)  # both start at once, however busy the machine

        def start(p: Publisher, name: str) -> None:
            together.wait(timeout=30)
            p.start_check(HEAD, name)

        threads = [threading.Thread(target=start, args=(p, f"job-{use_lock}-{i}")) for i, p in enumerate(pubs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        spans = sorted((a, b) for path, a, b in gh.write_spans if "check-runs" in path)
        assert len(spans) == 4  # each publisher creates a check run and moves it to in_progress
        return any(b_start < a_end - 1e-3 for (_, a_end), (b_start, _) in zip(spans, spans[1:], strict=False))

    assert overlapping(use_lock=False)  # without the lock, the two processes' writes interleave
    assert not overlapping(use_lock=True)


@pytest.mark.slow
def test_one_worker_per_gpu_each_pinned_to_its_gpu(tmp_path):
    """`python -m bot.gpu_workers --gpus 0,1` starts two real RQ workers; every job sees the GPU of the
    worker that ran it, and only that GPU."""
    import os
    import subprocess
    import sys

    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    seen = f"test-pin-{uuid.uuid4().hex[:8]}"
    (tmp_path / "pinjob.py").write_text(
        "import os, time\nimport redis\nfrom rq import get_current_job\n\n"
        "def where(key):\n    time.sleep(0.2)\n"
        "    redis.Redis().rpush(key, get_current_job().worker_name + ' ' + os.environ['CUDA_VISIBLE_DEVICES'])\n")
    q = Queue(f"test-gpus-{uuid.uuid4().hex[:8]}", connection=conn)
    for _ in range(6):
        q.enqueue("pinjob.where", seen)
    r = subprocess.run([sys.executable, "-m", "bot.gpu_workers", "--gpus", "0,1", "--burst", "--queue", q.name,
                        "--url", "redis://127.0.0.1:6379/0"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": f"{tmp_path}:{os.getcwd()}"})
    assert r.returncode == 0, r.stderr[-2000:]
    records = [x.decode().split() for x in conn.lrange(seen, 0, -1)]
    conn.delete(seen)
    q.delete(delete_jobs=True)
    assert len(records) == 6
    for worker, visible in records:
        assert worker.split("-gpu")[1].split("-")[0] == visible
    assert "worker for GPU 0" in r.stderr and "worker for GPU 1" in r.stderr


def test_workers_refuse_bad_gpu_lists(tmp_path):
    from bot.gpu_workers import main

    assert main(["--gpus", "0,0"]) == 2
    assert main(["--gpus", " , "]) == 2
    assert main(["--nvidia-smi", str(tmp_path / "no-such-nvidia-smi")]) == 2


def test_an_installation_gets_the_trigger_label_once(env):
    gh, conn, gpu = env
    gh.labels["Codertocat/done"] = {"optimas": {"id": 9, "name": "optimas", "color": "ffffff"}}
    result = run(conn, "bot.jobs.ensure_label", repo="", installation_id=1, sender="Codertocat",
                 repos=[REPO, "Codertocat/done"]).return_value()
    assert result["created"] == [REPO] and result["existing"] == ["Codertocat/done"] and result["failed"] == []
    assert gh.labels[REPO]["optimas"]["color"] == jobs.LABEL_COLOR
    again = run(conn, "bot.jobs.ensure_label", repo="", installation_id=1, sender="Codertocat",
                repos=[REPO]).return_value()
    assert again["created"] == again["existing"] == [] and again["recent"] == [REPO]  # no write at all
    # a repository whose owner withheld the issues permission: the others are labelled all the same
    gh.faults.append(("POST", r"/repos/Codertocat/locked/labels", 403,
                      {"message": "Resource not accessible by integration"}, {}))
    mixed = run(conn, "bot.jobs.ensure_label", repo="", installation_id=1, sender="Codertocat",
                repos=["Codertocat/locked", "Codertocat/fresh"]).return_value()
    assert mixed["failed"] == ["Codertocat/locked"] and mixed["created"] == ["Codertocat/fresh"]

    # the failed one is tried again by a later event; the labelled ones are not
    gh.labels.pop("Codertocat/fresh")
    retried = run(conn, "bot.jobs.ensure_label", repo="", installation_id=1, sender="Codertocat",
                  repos=["Codertocat/locked", "Codertocat/fresh"]).return_value()
    assert retried["created"] == ["Codertocat/locked"] and retried["recent"] == ["Codertocat/fresh"]


def test_an_installation_that_adds_repositories_without_end_gets_a_bounded_number_of_label_writes(env):
    """Whoever installs the App sends installation events at will (adding and removing repositories):
    each repository is labelled once a day, each installation at most MAX_LABEL_WRITES_PER_HOUR
    times an hour; the others are deferred, and another installation is not held back."""
    gh, conn, gpu = env
    cap = jobs.MAX_LABEL_WRITES_PER_HOUR
    names = [f"mallory/r{i}" for i in range(cap + 30)]
    before = len(gh.requests)
    results = [run(conn, "bot.jobs.ensure_label", repo="", installation_id=666, sender="mallory",
                   repos=names[i:i + 50]).return_value() for i in range(0, len(names), 50)]
    again = run(conn, "bot.jobs.ensure_label", repo="", installation_id=666, sender="mallory",
                repos=names[:50]).return_value()
    writes = [r for r in gh.requests[before:] if r["method"] == "POST" and r["path"].endswith("/labels")]
    assert len(writes) == cap and sum(len(r["created"]) for r in results) == cap
    assert sum(len(r["deferred"]) for r in results) == 30 and again["recent"] == names[:50]
    other = run(conn, "bot.jobs.ensure_label", repo="", installation_id=7, sender="Codertocat",
                repos=[REPO]).return_value()
    assert other["created"] == [REPO]


def test_an_installation_has_at_most_its_share_of_gpu_runs_at_once(env):
    """Whoever installs the App opens pull requests at will: past OPTIMAS_MAX_RUNS_PER_INSTALLATION
    queued or running GPU jobs, a trigger gets a reply instead of a job; a PR's new head still
    replaces its own run, and another installation is not held back."""
    gh, conn, gpu = env
    for pr in (2, 3, 4):
        gh.add_pull(REPO, pr, HEAD)
    assert [trigger(conn, pr=pr).return_value()["status"] for pr in (2, 3)] == ["queued", "queued"]
    busy = trigger(conn, pr=4).return_value()
    assert busy == {"status": "installation busy", "runs": 2} and len(gpu.jobs) == 2
    assert any("2 Optimas runs queued or running" in c["body"] and c["issue"] == 4 for c in gh.comments)
    gh.add_pull(REPO, 3, "f" * 40)
    assert trigger(conn, pr=3, head_sha="f" * 40, trigger="synchronize").return_value()["superseded"] == "cancelled"
    other = run(conn, "bot.jobs.handle_trigger", repo=REPO, installation_id=2, sender="maintainer", pr=4,
                head_sha=HEAD, trigger="label").return_value()
    assert other["status"] == "queued"


def test_a_repository_config_gets_at_most_the_operators_candidates_and_iterations(tmp_path):
    from bot.policy import operator_model
    from bot.settings import WorkerSettings
    from runner.base.config import load_config

    (tmp_path / ".optimas.yml").write_text("app: {name: x}\nllm: {candidates: 8}\nevaluation: {max_iterations: 100}\n"
                                           "programs_per_pull_request: 20\n")
    lc = operator_model(load_config(tmp_path / ".optimas.yml"), WorkerSettings.from_env({}))
    assert lc.config.llm.candidates == 4 and lc.config.evaluation.max_iterations == 5
    assert lc.config.programs_per_pull_request == 3
    more = WorkerSettings.from_env({"OPTIMAS_MAX_CANDIDATES": "8", "OPTIMAS_MAX_ITERATIONS": "200",
                                    "OPTIMAS_MAX_PROGRAMS": "30"})
    lc = operator_model(load_config(tmp_path / ".optimas.yml"), more)
    assert lc.config.llm.candidates == 8 and lc.config.evaluation.max_iterations == 100
    assert lc.config.programs_per_pull_request == 20
