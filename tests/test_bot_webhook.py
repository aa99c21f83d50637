"""The webhook receiver served for real, with a real Redis and RQ queue, fed GitHub's published
example payloads signed in the test."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import threading
import urllib.error
import urllib.request
import uuid

import pytest
import redis
from conftest import FIXTURES, redis_or_fail
from redis.backoff import ExponentialBackoff
from redis.retry import Retry as RedisRetry
from rq import Queue
from werkzeug.serving import make_server

from bot.app import create_app, verify_signature
from bot.settings import Settings, SettingsError

PAYLOADS = FIXTURES / "github" / "payload-examples"
SECRET = b"test-webhook-secret"


def payload(path: str) -> dict:
    return json.loads((PAYLOADS / path).read_text())


@pytest.fixture
def conn():
    return redis_or_fail()


@pytest.fixture
def server(conn):
    tag = uuid.uuid4().hex[:8]  # a namespace of its own: the bodies' claims outlive a test
    settings = Settings(webhook_secret=SECRET, control_queue=f"test-control-{tag}", key_prefix=f"test-{tag}")
    app = create_app(settings, conn)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    queue = Queue(settings.control_queue, connection=conn)
    yield f"http://127.0.0.1:{srv.server_port}", queue
    srv.shutdown()
    queue.empty()
    queue.delete(delete_jobs=True)
    for key in conn.scan_iter(f"test-{tag}:*"):
        conn.delete(key)


def post(url: str, event: str, body: dict | bytes, delivery: str | None = None, sign: bool | str = True):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event,
               "X-GitHub-Delivery": delivery or str(uuid.uuid4())}
    if sign is True:
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest()
    elif sign:
        headers["X-Hub-Signature-256"] = sign
    req = urllib.request.Request(url + "/webhook", data=raw, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def labeled(label: str = "optimas") -> dict:
    p = payload("pull_request/labeled.payload.json")
    p["label"]["name"] = label
    return p


def test_signature_verification():
    body = b'{"a": 1}'
    good = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
    assert verify_signature(SECRET, body, good)
    assert not verify_signature(SECRET, body + b" ", good)
    assert not verify_signature(SECRET, body, None)
    assert not verify_signature(SECRET, body, good.replace("sha256=", "sha1="))


def test_ping(server):
    url, queue = server
    assert post(url, "ping", payload("ping/payload.json")) == (200, {"status": "ignored", "reason": "pong"})


@pytest.mark.parametrize("sign", [False, "sha256=" + "0" * 64, "garbage"])
def test_missing_or_bad_signature_is_401_and_nothing_happens(server, sign):
    url, queue = server
    status, body = post(url, "pull_request", labeled(), sign=sign)
    assert status == 401 and "X-Hub-Signature-256" in body["error"]
    assert queue.count == 0


def test_labelled_pr_enqueues_a_control_job(server):
    url, queue = server
    status, body = post(url, "pull_request", labeled())
    assert status == 202 and body["status"] == "queued"
    job = queue.fetch_job(body["job"])
    assert job.func_name == "bot.jobs.handle_trigger"
    assert job.kwargs == {"repo": "Codertocat/Hello-World", "installation_id": 1, "sender": "Codertocat", "pr": 2,
                          "head_sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "trigger": "label"}
    assert job.timeout == 300 and job.retries_left == 3
    assert job.to_dict()["failure_callback_name"] == "bot.jobs.report_failure"
    # a secret never travels in job arguments
    assert SECRET.decode() not in json.dumps(job.kwargs)


def test_other_labels_are_ignored(server):
    url, queue = server
    status, body = post(url, "pull_request", labeled("bug"))
    assert status == 200 and body["reason"] == "label is not 'optimas'" and queue.count == 0


def test_the_same_delivery_ten_times_makes_one_job(server):
    url, queue = server
    delivery = str(uuid.uuid4())
    answers = [post(url, "pull_request", labeled(), delivery=delivery) for _ in range(10)]
    assert [a[0] for a in answers].count(202) == 1
    assert all(a == (200, {"status": "duplicate delivery", "delivery": delivery}) for a in answers if a[0] != 202)
    assert queue.count == 1


def test_a_signed_body_sent_again_under_another_delivery_id_or_none_is_a_replay(server):
    """The delivery header is not signed: whoever holds one signed body (a proxy's log) could send
    it again and again under new ids, or none. GitHub never sends two events with one body: the
    body's digest is claimed with the delivery (an attacker's pass)."""
    url, queue = server
    raw = json.dumps(labeled()).encode()
    assert post(url, "pull_request", raw)[0] == 202
    for status, body in (post(url, "pull_request", raw, delivery=str(uuid.uuid4())), _post_without_delivery(url, raw)):
        assert (status, body["status"]) == (200, "duplicate delivery")
    assert queue.count == 1
    other = json.loads(raw)
    other["pull_request"]["updated_at"] = "2026-12-06T10:00:00Z"  # the next event differs
    assert post(url, "pull_request", other)[0] == 202 and queue.count == 2


def _post_without_delivery(url: str, raw: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url + "/webhook", data=raw, method="POST", headers={
        "Content-Type": "application/json", "X-GitHub-Event": "pull_request",
        "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest()})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_synchronize_unlabel_and_close(server):
    url, queue = server
    sync = payload("pull_request/synchronize.payload.json")
    assert post(url, "pull_request", sync)[0] == 200  # the example PR has no optimas label
    sync = copy.deepcopy(sync)
    sync["pull_request"]["labels"] = [{"name": "optimas"}]
    status, body = post(url, "pull_request", sync)
    assert status == 202 and queue.fetch_job(body["job"]).kwargs["trigger"] == "synchronize"
    unl = payload("pull_request/unlabeled.payload.json")
    unl["label"]["name"] = "optimas"
    status, body = post(url, "pull_request", unl)
    assert status == 202 and queue.fetch_job(body["job"]).func_name == "bot.jobs.cancel_pr"
    closed = copy.deepcopy(sync)
    closed["action"] = "closed"
    status, body = post(url, "pull_request", closed)
    assert status == 202 and queue.fetch_job(body["job"]).func_name == "bot.jobs.cancel_pr"


@pytest.mark.parametrize("text, function", [("/optimas run", "bot.jobs.handle_trigger"),
                                            ("/optimas status", "bot.jobs.post_status"),
                                            ("/optimas help", "bot.jobs.post_help"),
                                            ("/optimas", "bot.jobs.post_help"),
                                            ("/optimas frobnicate", "bot.jobs.post_help")])
def test_comment_commands_on_a_pr(server, text, function):
    url, queue = server
    c = payload("issue_comment/created.with-installation.payload.json")
    c["comment"]["body"] = text
    c["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    status, body = post(url, "issue_comment", c)
    assert status == 202 and queue.fetch_job(body["job"]).func_name == function


@pytest.mark.parametrize("text, runs", [("/optimas run", True), ("/optimas run\r\n\nthanks, go ahead", True),
                                        (f"/optimas run {'a' * 40}", True), (f"/optimas run {'a' * 40}\nok", True),
                                        (f"/optimas run {'a' * 40} now", False), ("/optimas run now", False),
                                        ("/optimas run `@everyone`", False), ("thanks\n/optimas run", False),
                                        # lines end at \n, \r\n and \r only, as GitHub shows them
                                        ("/optimas run\rthanks", True), ("/optimas run\u2028now", False),
                                        ("/optimas run\u2029now", False), ("/optimas run\x85now", False),
                                        ("/optimas run\x0bnow", False), ("/optimas run\x0cnow", False),
                                        ("/optimas run\x1enow", False)])
def test_a_run_is_approved_in_the_commands_exact_words(server, text, runs):
    """The command is the comment's first line: `/optimas run`, optionally a full SHA, nothing more
    on that line (later lines are prose); anything else runs nothing, and a writer is told why."""
    url, queue = server
    c = payload("issue_comment/created.with-installation.payload.json")
    c["comment"]["body"] = text
    c["issue"]["pull_request"] = {"url": "x"}
    status, body = post(url, "issue_comment", c)
    if text.startswith("thanks"):
        assert status == 200 and body["reason"] == "not an /optimas command"
        return
    job = queue.fetch_job(body["job"])
    assert job.func_name == ("bot.jobs.handle_trigger" if runs else "bot.jobs.post_help")
    if not runs:
        assert job.kwargs["unknown"] and "takes nothing or a commit's full 40-digit SHA" in job.kwargs["note"]
        assert "`@" not in job.kwargs["note"].replace("`/optimas run`", "")


def test_comments_that_are_not_commands_or_not_on_prs_or_from_bots_are_ignored(server):
    url, queue = server
    c = payload("issue_comment/created.with-installation.payload.json")
    assert post(url, "issue_comment", c)[1]["reason"] == "a comment on an issue, not a pull request"
    c["issue"]["pull_request"] = {"url": "x"}
    assert post(url, "issue_comment", c)[1]["reason"] == "not an /optimas command"
    c["comment"]["body"] = "/optimas run"
    c["sender"] = {"login": "optimas[bot]", "type": "Bot"}
    assert post(url, "issue_comment", c)[1]["reason"] == "ignoring an event from the bot optimas[bot]"
    assert queue.count == 0


def test_body_that_is_not_json(server):
    url, _ = server
    assert post(url, "pull_request", b"not json")[0] == 400


def test_redis_down_answers_503_and_redelivery_works_later(conn):
    tag = uuid.uuid4().hex[:8]
    settings = Settings(webhook_secret=SECRET, control_queue=f"test-control-{tag}", key_prefix=f"test-{tag}")
    # the same few, short retries as the app's own client (create_app)
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2,
                       retry=RedisRetry(ExponentialBackoff(cap=0.2, base=0.05), 2))
    delivery = str(uuid.uuid4())
    for connection, expected in ((down, 503), (conn, 202)):
        app = create_app(settings, connection)
        raw = json.dumps(labeled()).encode()
        sig = "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest()
        r = app.test_client().post("/webhook", data=raw, headers={
            "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig})
        assert r.status_code == expected
    Queue(settings.control_queue, connection=conn).delete(delete_jobs=True)
    for key in conn.scan_iter(f"test-{tag}:*"):
        conn.delete(key)
    assert create_app(settings, down).test_client().get("/healthz").status_code == 503


def test_a_redis_that_never_saw_the_script_is_sent_it_once(tmp_path):
    """The view sends its script by SHA (EVALSHA); a Redis that does not hold it (new, restarted, or
    after SCRIPT FLUSH) answers NOSCRIPT, and the view sends the text (EVAL), which Redis then keeps.
    A Redis of its own, so that its script cache starts empty."""
    import socket
    import subprocess
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    try:
        fresh = redis.Redis(host="127.0.0.1", port=port)
        for _ in range(100):
            try:
                fresh.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        from bot.app import RECORD_SHA

        assert fresh.script_exists(RECORD_SHA) == [False]
        settings = Settings(webhook_secret=SECRET, control_queue="test-control", key_prefix="test")
        client = create_app(settings, fresh).test_client()

        def send(body: dict, delivery: str) -> int:
            raw = json.dumps(body).encode()
            sig = "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest()
            headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig}
            return client.post("/webhook", data=raw, headers=headers).status_code

        first, second = labeled(), labeled()
        second["pull_request"]["updated_at"] = "2026-12-07T00:00:00Z"
        assert send(first, "one") == 202 and fresh.script_exists(RECORD_SHA) == [True]
        assert send(second, "two") == 202 and send(first, "one") == 200  # EVALSHA, and the claim holds
        fresh.script_flush()
        assert send(second, "two") == 200 and Queue("test-control", connection=fresh).count == 2
        assert fresh.zcard("test:heads:Codertocat/Hello-World#2") == 1
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_settings_require_the_secret():
    with pytest.raises(SettingsError, match="OPTIMAS_WEBHOOK_SECRET"):
        Settings.from_env({})
    s = Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "x", "OPTIMAS_LABEL": "perf"})
    assert s.webhook_secret == b"x" and s.label == "perf"



def raw_post(port: int, body: bytes, headers: dict, chunked: bool = False, send: int | None = None):
    """POST with http.client, which lets a test send a partial body, chunks or latin-1 headers."""
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.putrequest("POST", "/webhook")
    for k, v in headers.items():
        c.putheader(k, v)
    if chunked:
        c.putheader("Transfer-Encoding", "chunked")
    elif "Content-Length" not in headers:
        c.putheader("Content-Length", str(len(body)))
    c.endheaders()
    try:
        if chunked:
            for i in range(0, len(body), 65536):
                piece = body[i:i + 65536]
                c.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            c.send(b"0\r\n\r\n")
        else:
            c.send(body[:send] if send is not None else body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered and closed before the whole body was sent
    r = c.getresponse()
    status, text = r.status, r.read()
    c.close()
    return status, json.loads(text)


@pytest.fixture
def small_server(conn):
    """The app with a 1 MiB body cap, served by werkzeug."""
    tag = uuid.uuid4().hex[:8]
    settings = Settings(webhook_secret=SECRET, control_queue=f"test-control-{tag}", key_prefix=f"test-{tag}",
                        max_body_bytes=1024 * 1024)
    srv = make_server("127.0.0.1", 0, create_app(settings, conn), threaded=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield srv.server_port, Queue(settings.control_queue, connection=conn)
    srv.shutdown()
    for key in conn.scan_iter(f"test-{tag}:*"):
        conn.delete(key)


def test_a_body_over_the_cap_is_refused_with_413_before_it_is_read(small_server):
    port, queue = small_server
    big = b"x" * (3 * 1024 * 1024)
    headers = {"X-GitHub-Event": "pull_request", "Content-Type": "application/json"}
    # announced too large: refused from the header, before the body is read
    status, body = raw_post(port, big, {**headers, "Content-Length": str(len(big))}, send=4096)
    assert status == 413 and "larger than 1048576 bytes" in body["error"]
    # GitHub's own limit is the default
    assert Settings(webhook_secret=b"x").max_body_bytes == 25 * 1024 * 1024
    assert queue.count == 0


def test_a_signature_header_that_is_not_ascii_is_401(small_server):
    port, queue = small_server
    raw = json.dumps(labeled()).encode()
    status, body = raw_post(port, raw, {"X-GitHub-Event": "pull_request",
                                        "X-Hub-Signature-256": "sha256=\u00e9\u00e8".encode("latin-1")})
    assert status == 401 and queue.count == 0
    assert not verify_signature(SECRET, raw, "sha256=\u00e9")


def _wrong_shapes() -> list[tuple[str, str, object]]:
    no_pr = labeled()
    del no_pr["pull_request"]
    no_head = labeled()
    del no_head["pull_request"]["head"]
    sha_not_str = labeled()
    sha_not_str["pull_request"]["head"]["sha"] = 12
    sender_str = labeled()
    sender_str["sender"] = "Codertocat"
    number_str = labeled()
    number_str["pull_request"]["number"] = "2"
    comment = payload("issue_comment/created.with-installation.payload.json")
    comment["issue"]["pull_request"] = {"url": "x"}
    comment["comment"]["body"] = ["/optimas", "run"]
    no_repo = labeled()
    del no_repo["repository"]
    return [("array", "pull_request", []), ("null", "pull_request", None), ("string", "pull_request", "labeled"),
            ("number", "ping", 7), ("labeled without pull_request", "pull_request", no_pr),
            ("labeled without head", "pull_request", no_head), ("head.sha a number", "pull_request", sha_not_str),
            ("sender a string", "pull_request", sender_str), ("number a string", "pull_request", number_str),
            ("comment body a list", "issue_comment", comment), ("no repository", "pull_request", no_repo),
            ("action a list", "pull_request", {**labeled(), "action": ["labeled"]})]


@pytest.mark.parametrize("name, event, body", _wrong_shapes(), ids=[w[0] for w in _wrong_shapes()])
def test_signed_payloads_of_the_wrong_shape_are_400_never_500(server, name, event, body):
    url, queue = server
    status, answer = post(url, event, body)
    # the error names the field from the payload's root
    field = {"array": "payload: expected a JSON object", "null": "payload: expected a JSON object",
             "string": "payload: expected a JSON object", "number": "payload: expected a JSON object",
             "labeled without pull_request": "payload.pull_request: missing",
             "labeled without head": "payload.pull_request.head.sha: missing",
             "head.sha a number": "payload.pull_request.head.sha: expected a string",
             "sender a string": "payload.sender: expected an object",
             "number a string": "payload.pull_request.number: expected an integer",
             "comment body a list": "payload.comment.body: expected a string",
             "no repository": "payload.repository.full_name", "action a list": "payload.action: expected a string"}
    assert status == 400 and field[name] in answer["error"], answer
    assert queue.count == 0


def test_deeply_nested_json_is_400(server):
    url, queue = server
    deep = b"[" * 200_000 + b"]" * 200_000
    status, answer = post(url, "pull_request", deep)
    assert status == 400 and "nested too deeply" in answer["error"]


def test_served_by_gunicorn_as_the_readme_says(conn, tmp_path):
    """The production server: gunicorn with bot/serving.py's settings and bot.wsgi:app, settings from
    the environment (werkzeug's development server does not read chunked bodies at all; gunicorn
    does, within the cap)."""
    import os
    import socket
    import subprocess
    import sys
    import time

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    control = f"test-control-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "OPTIMAS_WEBHOOK_SECRET": SECRET.decode(), "OPTIMAS_CONTROL_QUEUE": control,
           "OPTIMAS_REDIS_URL": "redis://127.0.0.1:6379/0", "OPTIMAS_KEY_PREFIX": f"test-{uuid.uuid4().hex[:8]}",
           "OPTIMAS_MAX_BODY_BYTES": str(1024 * 1024)}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:bot.serving", "--bind",
                             f"127.0.0.1:{port}", "bot.wsgi:app"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                with urllib.request.urlopen(url + "/healthz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        status, body = post(url, "pull_request", labeled())
        assert status == 202 and Queue(control, connection=conn).fetch_job(body["job"]) is not None
        assert post(url, "pull_request", labeled(), sign="sha256=" + "0" * 64)[0] == 401
        # a body with no length announced (chunked) is cut off once it passes the cap
        status, body = raw_post(port, b"x" * (3 * 1024 * 1024), {"X-GitHub-Event": "pull_request"}, chunked=True)
        assert status == 413 and "larger than 1048576 bytes" in body["error"]
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
        Queue(control, connection=conn).delete(delete_jobs=True)
    assert "Booting worker" in out and "Traceback" not in out


def test_an_installation_enqueues_the_label_job_for_its_repositories(server):
    url, queue = server
    body = payload("installation/created.payload.json")
    status, got = post(url, "installation", body)
    assert status == 202 and got["status"] == "queued"
    job = queue.fetch_job(got["job"])
    assert job.func_name == "bot.jobs.ensure_label"
    assert job.kwargs == {"repo": "", "installation_id": 957387, "sender": "Codertocat",
                          "repos": ["Codertocat/Hello-World"]}
    added = {"action": "added", "installation": body["installation"], "sender": body["sender"],
             "repositories_added": [{"full_name": "Codertocat/other"}], "repositories_removed": []}
    status, got = post(url, "installation_repositories", added)
    assert status == 202 and queue.fetch_job(got["job"]).kwargs["repos"] == ["Codertocat/other"]
    # a repository name with path tricks, or no installation id, is refused
    bad = copy.deepcopy(body)
    for name in ("../../x", "x/..", "x/."):
        bad["repositories"][0]["full_name"] = name
        assert post(url, "installation", bad)[0] == 400, name
    del bad["installation"]
    assert post(url, "installation", bad)[0] == 400
    # removing the App: nothing to do
    assert post(url, "installation", {**body, "action": "deleted"})[1]["status"] == "ignored"
