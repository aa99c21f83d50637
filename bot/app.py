"""The webhook receiver: an app factory with one thin view that verifies, decides and enqueues.

POST /webhook
  1. refuse a body over settings.max_body_bytes (413) before reading it;
  2. verify X-Hub-Signature-256 (HMAC-SHA256 of the raw body, constant-time) before parsing
     anything: a missing or bad signature gets 401 and nothing else happens;
  3. parse and route "event.action" to a handler that decides from the payload alone (no API calls
     in the request): a payload of the wrong shape gets 400; ignore (200), or enqueue a small
     control job (202 with the job id) that checks the sender's permission and the PR, and
     schedules the GPU job. Pull-request events also record the head they show, with GitHub's
     timestamp, so that `/optimas run` can pin a commit that existed when it was written;
  4. drop redeliveries and replays: X-GitHub-Delivery and the body's SHA-256 are claimed in Redis
     (keys with a TTL) by a script that records the head and writes the job only when both claims
     are new: one command, one round trip. The delivery header is not signed: a signed body sent
     again under another id (or none) is a replay, and GitHub never sends two events with one body;
  5. Redis unreachable or stopped: 503 within about 0.7 s (two tries of 0.3 s), so GitHub records a
     failed delivery that can be redelivered.
GET /healthz answers 200 when Redis answers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json

import redis
from flask import Flask, Response, jsonify, request
from redis.backoff import ExponentialBackoff
from redis.retry import Retry as RedisRetry
from rq import Callback, Queue, Retry
from werkzeug.exceptions import RequestEntityTooLarge

from bot.routing import Decision, EventError, Head, PayloadError, decide
from bot.settings import Settings

HEADS_KEPT = 50  # heads recorded per PR
HEADS_TTL_S = 30 * 24 * 3600


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """GitHub's X-Hub-Signature-256: 'sha256=' + hex HMAC-SHA256 of the raw body."""
    if not header or not header.isascii() or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.encode())


def heads_key(prefix: str, repo: str, pr: int) -> str:
    """Sorted set of the PR's heads seen in deliveries, each scored by the latest GitHub time at which a
    delivery showed it as the head: the head at a moment is the one seen last before it. (Scored by
    the earliest time, a commit pushed again, B M B, would stand for M's time, and M be pinned.)"""
    return f"{prefix}:heads:{repo}#{pr}"


def _head_score(head: Head) -> float | None:
    """The head's GitHub time as a sorted-set score; None when it has no usable timestamp (plain
    `/optimas run` then asks for a SHA)."""
    try:
        return dt.datetime.fromisoformat(head.seen_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _record_head(conn: redis.Redis, prefix: str, head: Head) -> None:
    """Record a head alone (the view records it with its job, in one script)."""
    _record(conn, prefix, head, [], 0, None)


def _redis(url: str, attempts: int) -> redis.Redis:
    # Short timeouts, `attempts` tries: with Redis stopped or unreachable a delivery gets its 503 in
    # well under a second, and GitHub redelivers it later.
    retry = RedisRetry(ExponentialBackoff(cap=0.1, base=0.05), attempts - 1)
    return redis.Redis.from_url(url, socket_connect_timeout=0.3, socket_timeout=0.3, retry=retry)


def create_app(settings: Settings, connection: redis.Redis | None = None) -> Flask:
    """The Flask app; `connection` lets tests and workers share one Redis client."""
    app = Flask("optimas-bot")
    # One byte over the cap: a body that announces no length (chunked) is read at most that far,
    # and a read that reaches it is too large (werkzeug would cut it at the cap without a word).
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes + 1
    conn = connection or _redis(settings.redis_url, attempts=2)
    control = Queue(settings.control_queue, connection=conn)
    prefix = settings.key_prefix

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(_e) -> tuple[Response, int]:
        return jsonify(error=f"the body is larger than {settings.max_body_bytes} bytes"), 413

    @app.post("/webhook")
    def webhook() -> tuple[Response, int]:
        body = request.get_data(cache=False)  # raises RequestEntityTooLarge past an announced length
        if len(body) > settings.max_body_bytes:
            raise RequestEntityTooLarge()
        if not verify_signature(settings.webhook_secret, body, request.headers.get("X-Hub-Signature-256")):
            return jsonify(error="missing or invalid X-Hub-Signature-256"), 401
        event = request.headers.get("X-GitHub-Event", "")
        delivery = request.headers.get("X-GitHub-Delivery", "")[:200]
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            return jsonify(error="the body is not JSON (or is nested too deeply)"), 400
        try:
            decision = decide(event, payload, settings)
        except EventError as e:
            return jsonify(error=str(e)), 400
        except (PayloadError, RecursionError) as e:
            return jsonify(error=f"{event}: {e}"), 400
        # One command: a script that records the head, then claims the delivery and, only when the
        # claim is new, writes and queues the job, atomically. A command retried after a lost reply
        # finds its own claim: it writes nothing more and still answers 202, and there is no claim to
        # undo after an error.
        job = None
        claims: list[str] = []
        commands: list = []
        try:
            if decision.job is not None:  # RQ asks Redis its version once, at the first job
                job, commands = _job_commands(control, decision, delivery)
                claims = [f"{prefix}:body:{hashlib.sha256(body).hexdigest()}"]
                claims += [f"{prefix}:delivery:{delivery}"] if delivery else []
            owner = _record(conn, prefix, decision.head, claims, settings.delivery_ttl_s, job and job.id, commands)
        except redis.exceptions.RedisError:
            return jsonify(error="queue unavailable; redeliver later"), 503
        if job is None:
            return jsonify(status="ignored", reason=decision.reason), 200
        if owner not in (job.id, job.id.encode()):  # another job owns the body or delivery: sent before
            return jsonify(status="duplicate delivery", delivery=delivery), 200
        return jsonify(status="queued", job=job.id, reason=decision.reason), 202

    @app.get("/healthz")
    def healthz() -> tuple[Response, int]:
        try:
            conn.ping()
        except redis.exceptions.RedisError:
            return jsonify(status="redis unavailable"), 503
        return jsonify(status="ok"), 200

    if settings.dashboard_runs_dir:
        from werkzeug.middleware.dispatcher import DispatcherMiddleware

        from bot.dashboard import protected_dashboard

        app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/dashboard": protected_dashboard(settings).wsgi_app})
    return app


# KEYS: the PR's heads key when ARGV[1] is 1, then the claims (the body's, the delivery's). ARGV:
# 1, whether there is a head; 2 and 3, the head's SHA and GitHub time; 4, the claims' TTL; 5, the
# job's id; then each of the job's commands as its number of words and the words. The head is
# recorded whatever the claims are (ZADD GT keeps the latest time the commit was the head). A claim
# that exists is answered with its value (the id of the job that the body or delivery made); else the
# commands run and the claims are written last, with the job's id, so that a command that fails
# leaves them unclaimed for GitHub's redelivery. No claims: nil.
RECORD = f"""
local h = tonumber(ARGV[1])
if h == 1 then
  redis.call('ZADD', KEYS[1], 'GT', ARGV[3], ARGV[2])
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, {-HEADS_KEPT - 1})
  redis.call('EXPIRE', KEYS[1], {HEADS_TTL_S})
end
if #KEYS == h then return false end
for k = h + 1, #KEYS do
  local owner = redis.call('GET', KEYS[k])
  if owner then return owner end
end
local i = 6
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
for k = h + 1, #KEYS do redis.call('SET', KEYS[k], ARGV[5], 'EX', ARGV[4]) end
return ARGV[5]
"""
RECORD_SHA = hashlib.sha1(RECORD.encode()).hexdigest()  # Redis names a cached script by its SHA-1


def _record(conn: redis.Redis, prefix: str, head: Head | None, claims: list[str], ttl: int, job_id: str | None,
            commands=()) -> bytes | str | None:
    """Run RECORD: record `head`, and when there are `claims`, write `commands` unless one of them
    exists; the id of the job that owns the body or delivery, or None. EVALSHA, so that the script's
    text is sent only once per Redis (after a restart or SCRIPT FLUSH, EVAL sends it again)."""
    score = _head_score(head) if head is not None else None
    if score is None and not claims:
        return None
    keys = ([heads_key(prefix, head.repo, head.pr)] if score is not None else []) + claims
    argv: list = [1, head.sha, score] if score is not None else [0, "", 0]
    argv += [ttl, job_id or ""]
    for words in commands:
        argv += [len(words), *words]
    try:
        return conn.evalsha(RECORD_SHA, len(keys), *keys, *argv)
    except redis.exceptions.NoScriptError:
        return conn.eval(RECORD, len(keys), *keys, *argv)


def _job_commands(queue: Queue, decision: Decision, delivery: str):
    """The decision's control job, and the commands that RQ sends to write and queue it (collected on
    a pipeline that is never executed; a job without dependencies, rate limit or `unique`, whose
    enqueueing RQ does with these writes alone)."""
    function, kwargs = decision.job
    with queue.connection.pipeline(transaction=False) as p:
        job = queue.enqueue(function, kwargs=kwargs, job_timeout=300, retry=Retry(max=3, interval=[5, 30, 120]),
                            on_failure=Callback("bot.jobs.report_failure", timeout=60),
                            description=decision.reason, meta={"delivery": delivery}, pipeline=p)
        return job, [args for args, _options in p.command_stack]
