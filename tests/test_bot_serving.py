"""The receiver as the documented deployment serves it (`gunicorn -c python:bot.serving bot.wsgi:app`,
gevent workers) against clients that send slowly, with the local Redis (issue #43, item 6).

Slow clients send their headers, or their body, one byte every two seconds. With threads (the
earlier deployment, 2 workers of 8 threads) each held a thread until it finished, and a valid
delivery waited behind them for seconds; GitHub gives up after 10. Here each costs a greenlet, and
bot/serving.py's timeouts close them: headers within `keepalive` seconds, the body and answer within
OPTIMAS_REQUEST_TIMEOUT_S (408).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import os
import re
import shlex
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq import Queue
from webhook_fuzz import SERVE, gunicorn

from bot import serving

REPO = Path(__file__).resolve().parent.parent
SECRET = b"slow-clients-secret"
EXAMPLE = REPO / "tests" / "fixtures" / "github" / "payload-examples" / "pull_request" / "labeled.payload.json"
DRIP_S = 2.0  # a slow client sends one byte this often


@contextlib.contextmanager
def documented_deployment(tmp_path: Path, **env: str) -> Iterator[tuple[int, Queue]]:
    """The documented deployment on a free port, with a control queue and key prefix of its own and
    `env` added to its environment; yields (port, control queue)."""
    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        conn.ping()
    except redis.exceptions.ConnectionError:
        pytest.fail("these tests need Redis on 127.0.0.1:6379")
    tag = uuid.uuid4().hex[:8]
    control = Queue(f"test-serving-{tag}", connection=conn)
    environment = {**os.environ, "OPTIMAS_WEBHOOK_SECRET": SECRET.decode(), "OPTIMAS_CONTROL_QUEUE": control.name,
                   "OPTIMAS_KEY_PREFIX": f"test-serving-{tag}", "OPTIMAS_REDIS_URL": "redis://127.0.0.1:6379/0", **env}
    try:
        with gunicorn(environment, tmp_path / "gunicorn.log") as port:
            yield port, control
    finally:
        control.delete(delete_jobs=True)
        for key in conn.scan_iter(f"test-serving-{tag}:*"):
            conn.delete(key)


class SlowClient(threading.Thread):
    """A client that opens a connection and then sends one byte every DRIP_S seconds: of its
    headers ("headers"), or of a body it announced as 100,000 bytes ("body"); `outcome` says how its
    connection ended, and `ended_after` when (seconds after it opened)."""

    def __init__(self, port: int, what: str, until: float) -> None:
        super().__init__(daemon=True)
        self.port, self.what, self.until = port, what, until
        self.outcome, self.ended_after = "held", 0.0
        self.connected = threading.Event()

    def run(self) -> None:
        opened = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                s.settimeout(0.05)
                if self.what == "body":
                    s.sendall(b"POST /webhook HTTP/1.1\r\nHost: slow\r\nX-GitHub-Event: ping\r\n"
                              b"Content-Length: 100000\r\n\r\n")
                self.connected.set()
                while time.monotonic() < self.until:
                    s.sendall(b"x" if self.what == "body" else b"X")
                    try:
                        answer = s.recv(200)
                    except TimeoutError:
                        time.sleep(DRIP_S)
                        continue
                    self.outcome = answer.split(b"\r\n", 1)[0].decode("latin-1") if answer else "closed"
                    break
        except OSError as e:  # the server closed it while a byte was on its way
            self.outcome = f"closed ({type(e).__name__})"
        finally:
            self.connected.set()
            self.ended_after = time.monotonic() - opened


def slow_clients(port: int, count: int, seconds: float) -> list[SlowClient]:
    """`count` slow clients, half of them slow in their headers and half in their body, connected."""
    until = time.monotonic() + seconds
    clients = [SlowClient(port, "headers" if i % 2 else "body", until) for i in range(count)]
    for c in clients:
        c.start()
    for c in clients:
        c.connected.wait(10)
    return clients


def deliver(port: int, timeout: float) -> tuple[int, dict, float]:
    """A signed pull_request.labeled delivery (label optimas): (status, answer, seconds it took)."""
    payload = json.loads(EXAMPLE.read_text())
    payload["label"]["name"] = "optimas"
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": str(uuid.uuid4()),
               "Content-Type": "application/json",
               "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()}
    began = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/webhook", body=body, headers=headers)
        r = c.getresponse()
        return r.status, json.loads(r.read()), time.monotonic() - began
    finally:
        c.close()


@pytest.mark.timing
def test_32_slow_clients_do_not_hold_a_valid_delivery(tmp_path):
    with documented_deployment(tmp_path) as (port, control):
        _deliver_among_slow_clients(port, control)


def _deliver_among_slow_clients(port: int, control: Queue) -> None:
    clients = slow_clients(port, 32, seconds=4)
    time.sleep(DRIP_S)  # every slow client has its connection and has sent a byte or two since
    try:
        status, answer, took = deliver(port, timeout=30)
    finally:
        for c in clients:
            c.join(10)
    assert status == 202 and control.fetch_job(answer["job"]) is not None, answer
    assert took < 1.0, f"a valid delivery took {took:.2f} s with 32 slow clients connected"
    held = Counter(c.outcome for c in clients)
    assert held == {"held": 32}, held  # they were all still connected: the delivery did not wait them out


@pytest.mark.slow
def test_slow_clients_are_cut_at_the_stated_timeouts(tmp_path):
    """Slow headers are closed after `keepalive` seconds; a slow body gets 408 after
    OPTIMAS_REQUEST_TIMEOUT_S (3 s here), counted from its headers."""
    with documented_deployment(tmp_path, OPTIMAS_REQUEST_TIMEOUT_S="3") as (port, _):
        _cut_at_the_timeouts(port)


def _cut_at_the_timeouts(port: int) -> None:
    clients = slow_clients(port, 8, seconds=serving.keepalive + 6)
    for c in clients:
        c.join(serving.keepalive + 10)
    headers = [c for c in clients if c.what == "headers"]
    bodies = [c for c in clients if c.what == "body"]
    assert all(c.outcome.startswith("closed") and c.ended_after < serving.keepalive + DRIP_S + 1 for c in headers), \
        [(c.outcome, round(c.ended_after, 1)) for c in headers]
    assert all(c.outcome == "HTTP/1.1 408 REQUEST TIMEOUT" and 3 <= c.ended_after < 3 + DRIP_S + 1 for c in bodies), \
        [(c.outcome, round(c.ended_after, 1)) for c in bodies]
    assert deliver(port, timeout=5)[0] == 202


def test_every_place_that_serves_the_receiver_runs_the_documented_deployment():
    """The Dockerfile's CMD, the docs' command and the tests' and benchmarks' servers: bot/serving.py's
    settings (gevent workers and their timeouts), and no other gunicorn setting but the address."""
    documented = ["gunicorn", *SERVE, "--bind", "0.0.0.0:8000", "bot.wsgi:app"]
    cmd = re.search(r"^CMD (\[.*\])$", (REPO / "Dockerfile").read_text().split("AS app", 1)[1], flags=re.M)
    assert cmd and json.loads(cmd.group(1)) == documented
    assert shlex.join(documented) in (REPO / "docs" / "github-app.md").read_text()
    assert serving.worker_class == "bot.serving.Worker" and serving.keepalive and serving.worker_connections
    for path in ["tests/test_bot_webhook.py", "tests/test_bot_attacks.py", "tests/test_bot_install_walkthrough.py",
                 "benchmarks/bench_webhook.py"]:
        text = (REPO / path).read_text()
        assert '"-c", "python:bot.serving"' in text and '"--threads", "4"' not in text, path
