"""RQ job functions of the control queue: module-level, small serializable arguments; their
dependencies (Redis, the GitHub App) come from the worker's environment (WorkerSettings).

- handle_trigger: may who asked trigger (write, maintain or admin)? Pin a commit the writer
  approved (the label event's head; `/optimas run <sha>`; or, for plain `/optimas run`, the head
  the bot had seen before the comment was written) and record it as the pull request's approved
  head. A writer's push runs only when it continues that head (the push's `before` is the approved
  head, which then moves to the pushed one): a push by anyone else deletes the approval, and a head
  nobody approved (a label added by a triage user or an app, a push made while the pull request was
  closed, an approval older than APPROVAL_TTL_S) never runs on a writer's "update branch". Read the
  repo's Optimas config from the default branch, and, atomically per PR (a Redis lock): skip a run
  of the same commit and config that is still queued or running, stop the PR's superseded run,
  enqueue the GPU job, record it.
- cancel_pr, post_help, post_status; report_failure (the failure callback: a job that fails says
  so on the PR, once) and report_stopped (the stopped callback: a cancelled or superseded run
  completes its check run as cancelled, with the reason).

A run's job key (repo, PR, head, config) is held while the run is queued or running, and released
when it finishes, fails or is cancelled, so an explicit re-run of the same commit is honoured.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
import requests
from github import GithubException
from rq import Callback, Queue, Retry, get_current_job
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry, StartedJobRegistry

from bot.app import heads_key
from bot.context import JobContext
from bot.github_client import WRITE_PERMISSIONS, app_from_env
from bot.publish import code_block
from bot.settings import WorkerSettings
from bot.texts import text as reply_text
from runner.base.config import REPOSITORY_CONFIG
from runner.base.processes import kill_process_groups
from runner.base.redaction import describe

log = logging.getLogger(__name__)

CONFIG_PATH = REPOSITORY_CONFIG
GPU_JOB = "bot.gpu_job.optimize_pr"
JOB_KEY_TTL_S = 7 * 24 * 3600
# How long a writer's approval of a pull request's head holds for their later pushes; after it, a
# push runs only after a new approval (it fails closed).
APPROVAL_TTL_S = 30 * 24 * 3600
ACTIVE = (JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED, JobStatus.SCHEDULED)

# Compare-and-delete: release a key only if it still names this job.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
# Compare-and-set: move the approved head to the pushed one only if the push continues it (ARGV[1],
# the push's `before`; empty where the payload names none: then any approval).
_CONTINUE = ("local h = redis.call('get', KEYS[1]) if h and (ARGV[1] == '' or h == ARGV[1]) then "
             "redis.call('set', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1 end return 0")


def settings() -> WorkerSettings:
    return WorkerSettings.from_env()


def key_prefix() -> str:
    """Namespace of the bot's Redis keys (OPTIMAS_KEY_PREFIX; tests and staging use their own)."""
    return settings().key_prefix


def job_key(repo: str, pr: int, head_sha: str, config_sha: str) -> str:
    return hashlib.sha256(f"{repo}#{pr}@{head_sha}:{config_sha}".encode()).hexdigest()


def _job_key_name(prefix: str, key: str) -> str:
    return f"{prefix}:jobkey:{key}"


def release_job_key(conn: redis.Redis, job: Job, prefix: str | None = None) -> None:
    """Free the job's key if it still names this job (a finished, failed or cancelled run)."""
    key = (job.meta or {}).get("job_key")
    if key:
        conn.eval(_RELEASE, 1, _job_key_name(prefix or key_prefix(), key), job.id)


def _is_active(conn: redis.Redis, job_id: str) -> bool:
    try:
        return Job.fetch(job_id, connection=conn).get_status() in ACTIVE
    except NoSuchJobError:
        return False


def _cancel(conn: redis.Redis, job_id: str, reason: str) -> str:
    """Stop or cancel a run, telling it why (its stopped callback puts the reason on its check run)."""
    try:
        job = Job.fetch(job_id, connection=conn)
    except NoSuchJobError:
        return "gone"
    status = job.get_status()
    if status in ACTIVE:
        job.meta["stop_reason"] = reason
        job.save_meta()
    outcome = str(getattr(status, "value", status))
    if status == JobStatus.STARTED:
        try:
            send_stop_job_command(conn, job_id)
            outcome = "stopped"
        except InvalidJobOperation:
            outcome = "finished"
    elif status in ACTIVE:
        job.cancel()
        outcome = "cancelled"
    release_job_key(conn, job)
    return outcome


def _approved_head(ctx: JobContext, approved_at: str | None) -> str | None:
    """The newest head recorded from deliveries that GitHub timestamped before the approval."""
    try:
        when = dt.datetime.fromisoformat((approved_at or "").replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    seen = ctx.conn.zrevrangebyscore(heads_key(ctx.settings.key_prefix, ctx.repo, ctx.pr), f"({when}", "-inf",
                                     start=0, num=1)
    return seen[0].decode() if seen else None


def pin(ctx: JobContext, current: str, head_sha: str | None, trigger: str,
        approved_at: str | None) -> tuple[str | None, str | None]:
    """(commit to run, None), or (None, why not: a reply for the writer, or None to stay quiet).

    A run only ever executes a commit that was the head when the writer approved it."""
    if trigger != "comment":  # label and synchronize events carry the head they approve
        return (current, None) if head_sha == current else (None, None)
    if head_sha:
        if current == head_sha:
            return current, None
        return None, (f"`{head_sha[:12]}` is not the head of this pull request (the head is `{current}`), so "
                      f"nothing was run. To run the head, check it and comment `/optimas run {current}`.")
    seen = _approved_head(ctx, approved_at)
    if seen == current:
        return current, None
    return None, (f"The head `{current[:12]}` may have been pushed after your comment (the head I had seen before "
                  f"it was {'`' + seen[:12] + '`' if seen else 'not recorded'}), so nothing was run. To run it, "
                  f"check it and comment `/optimas run {current}`.")


def _writer_or_quiet(ctx: JobContext, sender: str, refused: Callable[[], object] | None = None) -> tuple[str, bool]:
    """(the sender's permission, whether they may use Optimas here). Anyone else gets one reply per
    pull request and interval (OPTIMAS_REPLY_INTERVAL_S), whatever they ask and however often:
    a non-writer cannot make the bot talk at will (an app's account never gets here: routing
    passes on only its pushes, which handle_trigger refuses first). `refused` runs first when the
    sender may not (before a reply that may be slow or fail)."""
    permission = ctx.app.permission(ctx.installation_id, ctx.repo, sender)
    if permission in WRITE_PERMISSIONS:
        return permission, True
    if refused is not None:
        refused()
    fresh = ctx.conn.set(ctx.key("replied", f"{ctx.repo}#{ctx.pr}"), 1, nx=True,
                         ex=max(1, int(ctx.settings.reply_interval_s)))
    if fresh:
        ctx.reply(reply_text("needs-write-access", sender=sender, repo=ctx.repo, label=ctx.settings.label))
    return permission, False


def handle_trigger(repo: str, installation_id: int, sender: str, pr: int, head_sha: str | None,
                   trigger: str, approved_at: str | None = None, before_sha: str | None = None) -> dict[str, Any]:
    """Decide whether and what to run for a trigger (see the module docstring). `before_sha`: the
    head a push replaced (a synchronize event's `before`)."""
    ctx = JobContext.create(repo, installation_id, pr)
    conn = ctx.conn
    approval = ctx.key("approved", f"{repo}#{pr}")
    # someone who may not start runs pushed: the PR's approval no longer holds, from before any reply
    # is tried. An app's account (a fork's github-actions[bot]) never approves, whatever GitHub says
    # of its permission, and a push whose pusher could not be looked up voids it too (fails closed).
    void = (lambda: conn.delete(approval)) if trigger == "synchronize" else None
    if void is not None and sender.endswith("[bot]"):
        void()
        return {"status": "not allowed", "permission": "an app's push"}
    try:
        permission, allowed = _writer_or_quiet(ctx, sender, void)
    except BaseException:
        if void is not None:
            void()
        raise
    if not allowed:
        return {"status": "not allowed", "permission": permission}
    if trigger == "synchronize" and head_sha and not conn.eval(_CONTINUE, 1, approval, before_sha or "", head_sha,
                                                               APPROVAL_TTL_S):
        ctx.reply(reply_text("approval-needed", sender=sender, head=head_sha[:12], days=APPROVAL_TTL_S // 86400))
        return {"status": "approval needed", "head_sha": head_sha}
    return _enqueue(ctx, sender, head_sha, trigger, approved_at, approval)


def _enqueue(ctx: JobContext, sender: str, head_sha: str | None, trigger: str, approved_at: str | None,
             approval: str) -> dict[str, Any]:
    """handle_trigger for a writer whose trigger may run: pin the head, record the approval, enqueue."""
    repo, pr, installation_id, ws, conn = ctx.repo, ctx.pr, ctx.installation_id, ctx.settings, ctx.conn
    repository = ctx.client.get_repo(repo)
    pull = repository.get_pull(pr)
    if pull.state != "open":
        return {"status": "pull request is not open"}
    head, refusal = pin(ctx, pull.head.sha, head_sha, trigger, approved_at)
    if head is None:
        if refusal:
            ctx.reply(f"@{sender}: {refusal}")
            return {"status": "refused", "head_sha": pull.head.sha}
        return {"status": "stale", "head_sha": pull.head.sha}
    if trigger != "synchronize":
        conn.set(approval, head, ex=APPROVAL_TTL_S)  # a writer approved this head: their pushes on it run
    config = ctx.app.config_from_default_branch(installation_id, repo, CONFIG_PATH)
    if config is None:
        ctx.reply(reply_text("no-config", config=CONFIG_PATH, branch=repository.default_branch))
        return {"status": "no config"}
    _, config_sha = config
    fork = pull.head.repo is None or pull.head.repo.full_name != repo
    key = job_key(repo, pr, head, config_sha)
    with ctx.installation_lock(), ctx.pr_lock():
        running = conn.get(_job_key_name(ws.key_prefix, key))
        if running and _is_active(conn, running.decode()):
            return {"status": "duplicate", "job_key": key, "job": running.decode()}
        previous = conn.get(ctx.pr_key)
        others = [j for j in installation_runs(conn, ws.gpu_queue, installation_id)
                  if not previous or j != previous.decode()]
        if len(others) >= ws.max_runs_per_installation:
            ctx.reply(reply_text("installation-busy", sender=sender, runs=len(others),
                                 most=ws.max_runs_per_installation))
            return {"status": "installation busy", "runs": len(others)}
        superseded = _cancel(conn, previous.decode(), f"superseded by a run of `{head[:7]}`") if previous else None
        job = Queue(ws.gpu_queue, connection=conn).enqueue(
            GPU_JOB, kwargs={"repo": repo, "installation_id": installation_id, "pr": pr, "head_sha": head,
                             "config_sha": config_sha, "fork": fork, "trigger": trigger},
            job_timeout=3 * 3600, retry=Retry(max=2, interval=[60, 300]),
            on_failure=Callback("bot.jobs.report_failure", timeout=60),
            on_stopped=Callback("bot.jobs.report_stopped", timeout=60),
            description=f"{repo}#{pr}@{head[:7]}", meta={"job_key": key})
        with conn.pipeline() as p:
            p.set(ctx.pr_key, job.id)
            p.set(_job_key_name(ws.key_prefix, key), job.id, ex=JOB_KEY_TTL_S)
            p.execute()
    ctx.log.info("queued GPU job %s for %s (%s)", job.id, head[:7], trigger)
    return {"status": "queued", "job": job.id, "head_sha": head, "superseded": superseded, "fork": fork}


def installation_runs(conn: redis.Redis, queue: str, installation_id: int) -> list[str]:
    """The ids of the GPU jobs of an installation that are queued, running or waiting to be retried."""
    q = Queue(queue, connection=conn)
    ids = [*q.get_job_ids(), *StartedJobRegistry(queue=q).get_job_ids(), *ScheduledJobRegistry(queue=q).get_job_ids()]
    return [j.id for j in Job.fetch_many(ids, connection=conn)
            if j is not None and j.kwargs.get("installation_id") == installation_id
            and j.get_status(refresh=False) not in (JobStatus.CANCELED, JobStatus.STOPPED, JobStatus.FINISHED,
                                                    JobStatus.FAILED)]


def cancel_pr(repo: str, installation_id: int, sender: str, pr: int, why: str = "the run was cancelled",
              by: str = "closed") -> dict[str, Any]:
    """Cancel the PR's queued or running job: the PR was closed (`by` "closed", if it still is),
    or the label was removed (`by` "unlabeled", by someone who may start runs: a triage user may
    remove labels but must not stop a writer's run)."""
    ctx = JobContext.create(repo, installation_id, pr)
    if by == "unlabeled":
        permission = ctx.app.permission(installation_id, repo, sender)
        if permission not in WRITE_PERMISSIONS:
            return {"status": "not allowed", "permission": permission}
    elif ctx.client.get_repo(repo).get_pull(pr).state == "open":
        return {"status": "reopened"}  # closed and reopened before this ran: the run goes on
    with ctx.pr_lock():
        current = ctx.conn.get(ctx.pr_key)
        if not current:
            return {"status": "nothing to cancel"}
        outcome = _cancel(ctx.conn, current.decode(), why)
        ctx.conn.delete(ctx.pr_key)
    return {"status": outcome, "job": current.decode()}


def post_help(repo: str, installation_id: int, sender: str, pr: int, unknown: bool = False,
              note: str = "") -> dict[str, Any]:
    """The help text, for a writer (`note`: what was wrong with their command); anyone else gets
    the one reply per pull request and interval."""
    ctx = JobContext.create(repo, installation_id, pr)
    if not _writer_or_quiet(ctx, sender)[1]:
        return {"status": "not allowed"}
    what = note or "I don't know that command"
    prefix = f"@{sender}, {what}.\n\n" if unknown else ""
    ctx.reply(prefix + reply_text("help", label=ctx.settings.label, config=CONFIG_PATH))
    return {"status": "posted"}


LABEL_COLOR = "5319e7"
LABEL_DESCRIPTION = "Optimas: profile this pull request's CUDA code and suggest a validated, faster change"


# Whoever installs the App decides how often installation events come (adding and removing
# repositories at will): each repository is labelled once a day at most, and each installation gets
# at most this many label writes an hour, so that no installation can keep a control worker busy.
LABEL_MEMORY_S = 24 * 3600
MAX_LABEL_WRITES_PER_HOUR = 100


def ensure_label(repo: str, installation_id: int, sender: str, repos: list[str]) -> dict[str, Any]:
    """The trigger label (OPTIMAS_LABEL) in each of `repos`, created where it is missing, after the
    App was installed on them. One repository that cannot be labelled (its owner withdrew the
    App's issues permission) does not stop the others; the result says which. A repository labelled
    in the last day is left alone ("recent"); past the installation's hourly writes the rest wait
    for a later event ("deferred")."""
    ws = WorkerSettings.from_env()
    job = get_current_job()
    conn = job.connection if job is not None else redis.Redis.from_url(ws.redis_url)
    client = app_from_env().client(installation_id).withLazy(True)  # no read of each repository first
    done: dict[str, list[str]] = {"created": [], "existing": [], "failed": [], "recent": [], "deferred": []}
    hour = int(time.time() // 3600)
    writes = ":".join((ws.key_prefix, "label-writes", str(installation_id), str(hour)))
    for name in repos:
        marker = ":".join((ws.key_prefix, "labelled", str(installation_id), name))
        if done["deferred"] or conn.exists(marker):
            done["deferred" if done["deferred"] else "recent"].append(name)
            continue
        with conn.pipeline() as pipe:
            count, _ = pipe.incr(writes).expire(writes, 3600).execute()
        if count > MAX_LABEL_WRITES_PER_HOUR:
            done["deferred"].append(name)
            continue
        conn.set(marker, 1, ex=LABEL_MEMORY_S)
        try:
            # one write per repository: GitHub answers 422 already_exists where the label is
            client.get_repo(name).create_label(ws.label, LABEL_COLOR, LABEL_DESCRIPTION)
            done["created"].append(name)
        except GithubException as e:
            if e.status == 422 and "already_exists" in str(e.data):
                done["existing"].append(name)
                continue
            log.warning("%s: the %s label could not be made: %s", name, ws.label, describe(e, 300))
            conn.delete(marker)  # a later event tries again
            done["failed"].append(name)
    log.info("label %s: created in %d, already in %d, failed in %d, labelled lately in %d, deferred in %d "
             "repositories (installed by %s)", ws.label, len(done["created"]), len(done["existing"]),
             len(done["failed"]), len(done["recent"]), len(done["deferred"]), sender)
    return {"status": "labelled", **done}


def post_status(repo: str, installation_id: int, sender: str, pr: int) -> dict[str, Any]:
    """Where the PR's run is, for a writer (job ids included); anyone else gets the one reply per
    pull request and interval."""
    ctx = JobContext.create(repo, installation_id, pr)
    if not _writer_or_quiet(ctx, sender)[1]:
        return {"status": "not allowed"}
    current = ctx.conn.get(ctx.pr_key)
    if not current:
        text = (f"No Optimas run for this pull request yet. Add the `{ctx.settings.label}` label or comment "
                "`/optimas run`.")
    else:
        try:
            job = Job.fetch(current.decode(), connection=ctx.conn)
            status = job.get_status()
            text = f"Optimas run `{job.id}` ({job.description}): {getattr(status, 'value', status)}."
        except NoSuchJobError:
            text = "The last Optimas run for this pull request has expired from the queue."
    ctx.reply(text)
    return {"status": "posted"}


def is_transient(exc: BaseException | None) -> bool:
    """Whether a failure may pass on its own, so that RQ's retry is worth it: the network, GitHub
    answering 5xx or rate-limiting, Redis (a lock not acquired in time included), or an error
    marked `transient` (a failed git fetch). Everything else (a bad config, a missing tool, a
    candidate that does not build) fails the same way again."""
    from github import GithubException

    from bot.publish import retry_wait

    if isinstance(exc, GithubException):
        return retry_wait(exc) is not None
    if isinstance(exc, (requests.ConnectionError, requests.Timeout, redis.ConnectionError, redis.TimeoutError,
                        redis.exceptions.LockError)):
        return True
    return bool(getattr(exc, "transient", False))


def _complete_check(job: Job, conclusion: str, title: str, summary: str) -> None:
    """Complete the GPU job's check run, if it made one (found by its id in the job's meta, or by
    its external id on the head): a run that ends any way other than normally must not stay in progress."""
    kw = job.kwargs or {}
    # a check run is made on a pinned head; a control job's head_sha is None for a plain
    # `/optimas run` (asking GitHub for the check runs of no commit raised, and the callback said
    # nothing on the pull request)
    head = kw.get("head_sha")
    if not {"repo", "installation_id", "pr"} <= set(kw) or not isinstance(head, str):
        return
    pub = JobContext.create(kw["repo"], kw["installation_id"], kw["pr"], job.connection).publisher
    check_id = (job.get_meta(refresh=True) or {}).get("check_run")
    if check_id is None:
        found = pub.find_check(head, job.id)
        check_id = found.id if found is not None else None
    if check_id is not None and pub.repo.get_check_run(check_id).status != "completed":
        pub.complete_check(check_id, conclusion, title, summary)


def kill_leftovers(job: Job) -> None:
    """Kill the commands a killed GPU job left running (builds, the app, ncu run in sessions of their
    own, so killing the job's process does not end them), and remove the job's folder."""
    groups = (job.get_meta(refresh=True) or {}).get("process_groups")
    if groups:
        killed = kill_process_groups(Path(groups))
        if killed:
            log.info("job %s: killed %d process group(s) it left running", job.id, len(killed))
        folder = Path(groups).parent.parent  # <tmp>/optimas-job-*/control/process-groups
        if folder.name.startswith("optimas-job-") and folder.parent == Path(tempfile.gettempdir()):
            shutil.rmtree(folder, ignore_errors=True)  # a killed job's process could not remove it


def report_failure(job: Job, connection: redis.Redis, exc_type, exc_value, traceback) -> None:
    """RQ failure callback, run on every failed attempt before RQ decides on a retry. A transient
    failure with retries left stays quiet (RQ runs the job again); any other failure ends the
    retries and the PR learns that the job failed, and why: one comment per job."""
    kill_leftovers(job)
    if exc_value is not None and not is_transient(exc_value):
        job.retries_left = 0  # RQ reads this right after the callback: no retry of a deterministic failure
    elif job.retries_left:
        return
    release_job_key(connection, job)
    kw = job.kwargs or {}
    if not {"repo", "installation_id", "pr"} <= set(kw):
        return
    reason = describe(exc_value, 1000) if exc_value is not None else "the job stopped"
    ctx = JobContext.create(kw["repo"], kw["installation_id"], kw["pr"], connection)
    ctx.log.warning("job %s failed: %s", job.id, reason)
    try:
        _complete_check(job, "failure", "Optimas failed", code_block(reason))
    except (GithubException, requests.RequestException) as e:  # the comment below still tells the PR
        ctx.log.warning("job %s: its check run could not be completed: %s", job.id, describe(e, 300))
    ctx.publisher.post_comment(
        f"The Optimas job `{job.id}` failed:\n{code_block(reason)}\n\nNothing was posted for this run; "
        "comment `/optimas run` to try again.", key=f"failure-{job.id}")


def report_stopped(job: Job, connection: redis.Redis) -> None:
    """RQ stopped callback (a superseded or cancelled run, stopped while running): release its key
    and complete its check run as cancelled, saying why."""
    kill_leftovers(job)
    release_job_key(connection, job)
    reason = (job.get_meta(refresh=True) or {}).get("stop_reason", "the run was stopped")
    log.info("job %s stopped: %s", job.id, reason)
    _complete_check(job, "cancelled", "Cancelled", f"This run was stopped: {reason}.")
