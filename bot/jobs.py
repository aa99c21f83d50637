"""RQ job functions of the control queue: module-level, small serializable arguments; their
dependencies (Redis, the GitHub App) come from the worker's environment.

- handle_trigger: who asked may trigger (write, maintain or admin)? Pin the head SHA, read the
  repo's Optimas config from the default branch, deduplicate by job key (repo, PR, head SHA,
  config hash), cancel the PR's superseded job, enqueue the GPU job.
- cancel_pr, post_help, post_status, and report_failure (the failure callback: a job that fails
  says so on the PR).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import redis
from rq import Callback, Queue, Retry
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus

from bot.github_client import WRITE_PERMISSIONS, app_from_env

CONFIG_PATH = ".optimas.yml"
GPU_QUEUE = "optimas-gpu"
GPU_JOB = "bot.worker.optimize_pr"
JOB_KEY_TTL_S = 7 * 24 * 3600

HELP = """**Optimas** profiles this pull request's CUDA code on a GPU, asks a model for an optimization that
cites the profiler evidence, and posts it here only if it compiles, matches the original outputs bit
for bit and is measurably faster.

- add the `optimas` label, or comment `/optimas run`: start a run on the current head
- `/optimas status`: where the run is
- `/optimas help`: this message

Runs need write access to the repository and a `.optimas.yml` on the default branch."""


def redis_connection() -> redis.Redis:
    return redis.Redis.from_url(os.environ.get("OPTIMAS_REDIS_URL", "redis://127.0.0.1:6379/0"))


def key_prefix() -> str:
    """Namespace of the bot's Redis keys (OPTIMAS_KEY_PREFIX; tests and staging use their own)."""
    return os.environ.get("OPTIMAS_KEY_PREFIX", "optimas")


def _pr_key(repo: str, pr: int) -> str:
    return f"{key_prefix()}:pr:{repo}#{pr}"


def _comment(installation_id: int, repo: str, pr: int, body: str) -> None:
    app_from_env().client(installation_id).get_repo(repo).get_issue(pr).create_comment(body)


def job_key(repo: str, pr: int, head_sha: str, config_sha: str) -> str:
    return hashlib.sha256(f"{repo}#{pr}@{head_sha}:{config_sha}".encode()).hexdigest()


def _cancel(conn: redis.Redis, job_id: str) -> str:
    try:
        job = Job.fetch(job_id, connection=conn)
    except NoSuchJobError:
        return "gone"
    status = job.get_status()
    if status == JobStatus.STARTED:
        try:
            send_stop_job_command(conn, job_id)
        except InvalidJobOperation:
            return "finished"
        return "stopped"
    if status in (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED):
        job.cancel()
        return "cancelled"
    return str(getattr(status, "value", status))


def handle_trigger(repo: str, installation_id: int, sender: str, pr: int, head_sha: str | None,
                   trigger: str) -> dict[str, Any]:
    """Decide whether and what to run for a trigger (see the module docstring)."""
    gh = app_from_env()
    permission = gh.permission(installation_id, repo, sender)
    if permission not in WRITE_PERMISSIONS:
        _comment(installation_id, repo, pr,
                 f"Thanks for your interest, @{sender}! Optimas runs need write access to {repo}; a maintainer "
                 "can start one by adding the `optimas` label or commenting `/optimas run`.")
        return {"status": "not allowed", "permission": permission}
    repository = gh.client(installation_id).get_repo(repo)
    pull = repository.get_pull(pr)
    if pull.state != "open":
        return {"status": "pull request is not open"}
    head = head_sha or pull.head.sha
    config = gh.config_from_default_branch(installation_id, repo, CONFIG_PATH)
    if config is None:
        _comment(installation_id, repo, pr, f"Optimas needs a `{CONFIG_PATH}` on the default branch "
                 f"({repository.default_branch}) to know how to build, run and validate this code.")
        return {"status": "no config"}
    _, config_sha = config
    conn = redis_connection()
    key = job_key(repo, pr, head, config_sha)
    if not conn.set(f"{key_prefix()}:jobkey:{key}", 1, nx=True, ex=JOB_KEY_TTL_S):
        return {"status": "duplicate", "job_key": key}
    previous = conn.get(_pr_key(repo, pr))
    superseded = _cancel(conn, previous.decode()) if previous else None
    fork = pull.head.repo is None or pull.head.repo.full_name != repo
    job = Queue(GPU_QUEUE, connection=conn).enqueue(
        GPU_JOB, kwargs={"repo": repo, "installation_id": installation_id, "pr": pr, "head_sha": head,
                         "config_sha": config_sha, "fork": fork, "trigger": trigger},
        job_timeout=3 * 3600, retry=Retry(max=2, interval=[60, 300]),
        on_failure=Callback("bot.jobs.report_failure", timeout=60), description=f"{repo}#{pr}@{head[:7]}",
        meta={"job_key": key})
    conn.set(_pr_key(repo, pr), job.id)
    return {"status": "queued", "job": job.id, "head_sha": head, "superseded": superseded, "fork": fork}


def cancel_pr(repo: str, installation_id: int, sender: str, pr: int) -> dict[str, Any]:
    """Cancel the PR's queued or running job (unlabelled or closed)."""
    conn = redis_connection()
    current = conn.get(_pr_key(repo, pr))
    if not current:
        return {"status": "nothing to cancel"}
    outcome = _cancel(conn, current.decode())
    conn.delete(_pr_key(repo, pr))
    return {"status": outcome, "job": current.decode()}


def post_help(repo: str, installation_id: int, sender: str, pr: int, unknown: bool = False) -> dict[str, Any]:
    prefix = f"@{sender}, I don't know that command.\n\n" if unknown else ""
    _comment(installation_id, repo, pr, prefix + HELP)
    return {"status": "posted"}


def post_status(repo: str, installation_id: int, sender: str, pr: int) -> dict[str, Any]:
    conn = redis_connection()
    current = conn.get(_pr_key(repo, pr))
    if not current:
        text = "No Optimas run for this pull request yet. Add the `optimas` label or comment `/optimas run`."
    else:
        try:
            job = Job.fetch(current.decode(), connection=conn)
            status = job.get_status()
            text = f"Optimas run `{job.id}` ({job.description}): {getattr(status, 'value', status)}."
        except NoSuchJobError:
            text = "The last Optimas run for this pull request has expired from the queue."
    _comment(installation_id, repo, pr, text)
    return {"status": "posted"}


def is_transient(exc: BaseException | None) -> bool:
    """Whether a failure may pass on its own, so that RQ's retry is worth it: the network, GitHub
    answering 5xx or rate-limiting, Redis, or an error marked `transient` (a failed git fetch).
    Everything else (a bad config, a missing tool, a candidate that does not build) fails the same
    way again."""
    import requests
    from github import GithubException

    from bot.publish import retry_wait

    if isinstance(exc, GithubException):
        return retry_wait(exc) is not None
    if isinstance(exc, (requests.ConnectionError, requests.Timeout, redis.ConnectionError, redis.TimeoutError)):
        return True
    return bool(getattr(exc, "transient", False))


def report_failure(job: Job, connection: redis.Redis, exc_type, exc_value, traceback) -> None:
    """RQ failure callback, run on every failed attempt before RQ decides on a retry. A transient
    failure with retries left stays quiet (RQ runs the job again); any other failure ends the
    retries and the PR learns that the job failed, and why: one comment per job."""
    if exc_value is not None and not is_transient(exc_value):
        job.retries_left = 0  # RQ reads this right after the callback: no retry of a deterministic failure
    elif job.retries_left:
        return
    kw = job.kwargs or {}
    if not {"repo", "installation_id", "pr"} <= set(kw):
        return
    reason = f"{exc_type.__name__}: {exc_value}" if exc_type else "the job stopped"
    _comment(kw["installation_id"], kw["repo"], kw["pr"],
             f"The Optimas job `{job.id}` failed: {reason[:1000]}\n\nNothing was posted for this run; "
             "comment `/optimas run` to try again.")
