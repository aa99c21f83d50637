"""The webhook receiver: an app factory with one thin view that verifies, decides and enqueues.

POST /webhook
  1. verify X-Hub-Signature-256 (HMAC-SHA256 of the raw body, constant-time) before parsing
     anything: a missing or bad signature gets 401 and nothing else happens;
  2. drop redeliveries: X-GitHub-Delivery is claimed in Redis (SET NX with a TTL);
  3. route "event.action" to a handler that decides from the payload alone (no API calls in the
     request): ignore (200), or enqueue a small control job (202 with the job id) that checks
     the sender's permission and the PR, and schedules the GPU job;
  4. Redis unreachable: 503, so GitHub records a failed delivery that can be redelivered.
GET /healthz answers 200 when Redis answers.
"""

from __future__ import annotations

import hashlib
import hmac
import json

import redis
from flask import Flask, Response, jsonify, request
from rq import Callback, Queue, Retry

from bot.routing import Decision, decide
from bot.settings import Settings


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """GitHub's X-Hub-Signature-256: 'sha256=' + hex HMAC-SHA256 of the raw body."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


def create_app(settings: Settings, connection: redis.Redis | None = None) -> Flask:
    """The Flask app; `connection` lets tests and workers share one Redis client."""
    app = Flask("optimas-bot")
    conn = connection or redis.Redis.from_url(settings.redis_url, socket_connect_timeout=0.5, socket_timeout=0.5)
    control = Queue(settings.control_queue, connection=conn)

    @app.post("/webhook")
    def webhook() -> tuple[Response, int]:
        body = request.get_data(cache=False)
        if not verify_signature(settings.webhook_secret, body, request.headers.get("X-Hub-Signature-256")):
            return jsonify(error="missing or invalid X-Hub-Signature-256"), 401
        event = request.headers.get("X-GitHub-Event", "")
        delivery = request.headers.get("X-GitHub-Delivery", "")
        try:
            payload = json.loads(body)
        except ValueError:
            return jsonify(error="the body is not JSON"), 400
        decision = decide(event, payload, settings)
        if decision.job is None:
            return jsonify(status="ignored", reason=decision.reason), 200
        try:
            if delivery and not conn.set(f"optimas:delivery:{delivery}", 1, nx=True, ex=settings.delivery_ttl_s):
                return jsonify(status="duplicate delivery", delivery=delivery), 200
            job = _enqueue(control, decision, delivery)
        except redis.exceptions.RedisError:
            # Forget the claim (if it was made) so that GitHub's redelivery is processed.
            _forget(conn, delivery)
            return jsonify(error="queue unavailable; redeliver later"), 503
        return jsonify(status="queued", job=job.id, reason=decision.reason), 202

    @app.get("/healthz")
    def healthz() -> tuple[Response, int]:
        try:
            conn.ping()
        except redis.exceptions.RedisError:
            return jsonify(status="redis unavailable"), 503
        return jsonify(status="ok"), 200

    return app


def _enqueue(queue: Queue, decision: Decision, delivery: str):
    function, kwargs = decision.job
    return queue.enqueue(function, kwargs=kwargs, job_timeout=300, retry=Retry(max=3, interval=[5, 30, 120]),
                         on_failure=Callback("bot.jobs.report_failure", timeout=60), description=decision.reason,
                         meta={"delivery": delivery})


def _forget(conn: redis.Redis, delivery: str) -> None:
    if not delivery:
        return
    try:
        conn.delete(f"optimas:delivery:{delivery}")
    except redis.exceptions.RedisError:
        pass  # Redis is down; the claim was never written or expires with its TTL
