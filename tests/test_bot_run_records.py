"""What a GPU job keeps of its runs, and what the dashboard makes of any run folder (issue #43 items
4 and 5): the records kept are the worker's own bytes, whatever the pull request's code wrote in its
run folders; a Redis password on the worker's command line is kept nowhere; and the dashboard,
served by gunicorn, renders every run folder, however its files are broken, without a 500.

Real parts throughout: a signed delivery to the served webhook, a real RQ control worker, the GPU
job in a real `rq worker` process (its command line as the docs write it), real Redis servers (one
with a password), bubblewrap, the loopback GitHub, and gunicorn serving `bot.wsgi:app`."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from conftest import EVALUATED_RUNS, REPO, app_environment, redis_or_fail
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github_server import FakeGitHub
from rq import Queue, SimpleWorker
from test_bot_end_to_end import CONFIG, GH_REPO, PROBE_PR_FILES, deliver_label, make_remote
from werkzeug.serving import make_server

from bot.app import create_app
from bot.github_client import app_from_env
from bot.settings import Settings

SECRET = b"records-secret"
TOKEN = "dashboard-token-records-0123456789"
RUN_PAGE = re.compile(r"\d{8}T\d{6}Z-[0-9a-f-]{36}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        with contextlib.suppress(OSError, redis.exceptions.RedisError):
            if check():
                return
        time.sleep(0.1)
    pytest.fail(f"{what} did not come up within {timeout_s:g} s")


@contextlib.contextmanager
def gunicorn_dashboard(runs: Path) -> Iterator[str]:
    """gunicorn serving bot.wsgi:app with the dashboard over `runs`; its base URL."""
    port = free_port()
    env = {**os.environ, "OPTIMAS_WEBHOOK_SECRET": SECRET.decode(), "OPTIMAS_REDIS_URL": "redis://127.0.0.1:6379/0",
           "OPTIMAS_DASHBOARD_RUNS_DIR": str(runs), "OPTIMAS_DASHBOARD_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--workers", "1", "--threads", "4", "--bind",
                             f"127.0.0.1:{port}", "bot.wsgi:app"], env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: urllib.request.urlopen(base + "/healthz", timeout=1).status == 200, "gunicorn")
        yield base + "/dashboard"
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def get(url: str) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def run_pr(monkeypatch, remote: tuple[Path, str], redis_url: str, config: str = CONFIG) -> Path:
    """Deliver a signed labeled event to the served webhook; the control job runs in a real RQ
    worker, the GPU job in `rq worker -w bot.worker.OptimasWorker <queue> --url <redis_url>` (the
    docs' command line). Returns the worker's runs folder."""
    conn = redis.Redis.from_url(redis_url)
    remotes, sha = remote
    runs = remotes.parent / "worker-runs"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    suffix = uuid.uuid4().hex[:8]
    settings = Settings(webhook_secret=SECRET, control_queue=f"rec-control-{suffix}", key_prefix=f"rec-{suffix}")
    monkeypatch.setenv("OPTIMAS_GIT_URL", f"file://{remotes}/{{repo}}.git")
    monkeypatch.setenv("OPTIMAS_RUNS_DIR", str(runs))
    monkeypatch.setenv("OPTIMAS_REDIS_URL", redis_url)
    with FakeGitHub() as gh:
        app_environment(monkeypatch, gh, key, f"rec-{suffix}", f"rec-gpu-{suffix}", app_id="1")
        gh.permissions = {"Codertocat": "admin"}
        gh.files = {".optimas.yml": config}
        gh.add_pull(GH_REPO, 2, sha)
        gh.pr_files[2] = PROBE_PR_FILES
        srv = make_server("127.0.0.1", 0, create_app(settings, conn), threaded=True)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        deliver_label(srv.server_port, sha, SECRET)
        control = Queue(settings.control_queue, connection=conn)
        SimpleWorker([control], connection=conn).work(burst=True)
        gpu = Queue(f"rec-gpu-{suffix}", connection=conn)
        assert gpu.count == 1
        worker = subprocess.run([str(Path(sys.executable).parent / "rq"), "worker", "-w", "bot.worker.OptimasWorker",
                                 "--burst", gpu.name, "--url", redis_url], cwd=REPO, env=dict(os.environ),
                                capture_output=True, text=True, timeout=600)
        srv.shutdown()
        app_from_env.cache_clear()
        assert worker.returncode == 0, worker.stderr[-3000:]
        assert [c for c in gh.check_runs.values() if c["status"] == "completed"], worker.stderr[-3000:]
    control.delete(delete_jobs=False)
    gpu.delete(delete_jobs=True)
    return runs


# The pull request's build rewrites its run's diagnostics (forged evidence, numbers as strings) and
# adds an evaluation result the worker never wrote (it had no GPU to evaluate on), then builds.
TAMPERING_BUILD = """#!/bin/sh
for f in "$HOME"/../runs/*/analysis/diagnostics.json; do
  printf '%s' '{"evidence": [{"id": "P1", "kind": "pc", "text": "FORGED-BY-THE-PR", "stall": {"file": "k.cu",
    "line": "1", "line_share": "most", "reason": "x"}}], "kernels": [{"kernel": "k", "hot": true,
    "total_ns": "lots", "launches": 1, "share": "most"}]}' > "$f" && echo "tampered $f"
done
for d in "$HOME"/../runs/*/; do
  mkdir -p "$d/evaluation"
  printf '%s' '{"verdict": "FORGED-VERDICT", "timing": {"result": {"improvement": "9"}}}' >"$d/evaluation/result.json"
done
exec nvcc -O3 -arch="$2" -o "$1" probe_kernels.cu
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_the_prs_code_cannot_rewrite_the_records_its_run_keeps(monkeypatch, tmp_path):
    """Issue #43 item 4: the build (sandboxed, with the job's folder writable) rewrites its run's
    diagnostics.json and forges an evaluation result; the run kept on the runs volume holds the
    worker's diagnostics and no forged result, and the dashboard shows the worker's evidence."""
    redis_or_fail()
    remotes = make_remote(tmp_path, ["examples/h200-probe"])
    work = tmp_path / "work"
    (work / "examples" / "h200-probe" / "build.sh").write_text(TAMPERING_BUILD)
    subprocess.run(["git", "add", "examples/h200-probe/build.sh"], cwd=work, check=True)
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "build"],
                   cwd=work, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, check=True, capture_output=True,
                         text=True).stdout.strip()
    bare = remotes[0] / f"{GH_REPO}.git"
    subprocess.run(["git", "push", "-q", str(bare), "HEAD:refs/pull/2/head", "-f"], cwd=work, check=True)
    config = CONFIG.replace("build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu",
                            "build: sh build.sh {exe} {arch}")
    assert config != CONFIG
    runs = run_pr(monkeypatch, (remotes[0], sha), "redis://127.0.0.1:6379/0", config)

    (run,) = [p for p in runs.iterdir() if RUN_PAGE.fullmatch(p.name)]
    logs = "".join(p.read_text(errors="replace") for p in run.rglob("*.log"))
    assert "tampered " in logs  # the build did rewrite the run folder's diagnostics.json
    diagnostics = (run / "analysis" / "diagnostics.json").read_text()
    assert "FORGED" not in diagnostics and "matmul" in diagnostics
    assert not (run / "evaluation" / "result.json").exists()
    assert not any("FORGED" in p.read_text(errors="replace") for p in run.rglob("*") if p.is_file())
    with gunicorn_dashboard(runs) as base:
        status, page = get(f"{base}/runs/{run.name}")
        assert status == 200 and "FORGED" not in page and "matmul" in page
        status, index = get(f"{base}/")
        assert status == 200 and run.name in index and "FORGED" not in index


@pytest.fixture
def redis_with_password(tmp_path) -> Iterator[str]:
    """A second, real redis-server that asks for a password; its URL, password included."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is needed (apt-get install redis-server)")
    password, port = f"pw-{uuid.uuid4().hex}", free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--requirepass", password,
                             "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://:{password}@127.0.0.1:{port}/0"
    try:
        wait_for(lambda: redis.Redis.from_url(url).ping(), "redis-server")
        with pytest.raises(redis.exceptions.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=port).get("x")  # it does ask for the password
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_the_workers_redis_password_is_in_no_run(monkeypatch, tmp_path, redis_with_password):
    """Issue #43 item 5: a GPU worker started as the docs say (`rq worker ... --url
    $OPTIMAS_REDIS_URL`, a Redis with a password) keeps no trace of the password in its run's
    manifest or anywhere else in the run, nor on the dashboard's pages."""
    password = redis_with_password.split(":")[2].split("@")[0]
    runs = run_pr(monkeypatch, make_remote(tmp_path, ["examples/h200-probe"]), redis_with_password)
    (run,) = [p for p in runs.iterdir() if RUN_PAGE.fullmatch(p.name)]
    command = json.loads((run / "manifest.json").read_text())["command"]
    assert command[command.index("--url") + 1] == "redis://***@127.0.0.1:" + redis_with_password.rsplit(":", 1)[1]
    assert "worker" in command and "bot.worker.OptimasWorker" in command
    for path in [p for p in runs.rglob("*") if p.is_file()]:
        assert password.encode() not in path.read_bytes(), path
    with gunicorn_dashboard(runs) as base:
        for page in ("/", f"/runs/{run.name}"):
            status, text = get(base + page)
            assert status == 200 and password not in text and run.name in text


def test_a_command_line_is_kept_without_its_credentials():
    from runner.base.redaction import MASK, redact_command, register_secret

    register_secret("registered-secret-value")
    argv = ["rq", "worker", "--url", "redis://:pw1@h:6379/0", "--url", "redis://user:pw2@h/0", "--password", "pw3",
            "--redis-password=pw4", "-a", "pw5", "--token", "pw6", "registered-secret-value", "-w", "bot.worker.W"]
    kept = redact_command(argv)
    assert not any(s in " ".join(kept) for s in ("pw1", "pw2", "pw3", "pw4", "pw5", "pw6", "registered-secret"))
    assert kept[:3] == ["rq", "worker", "--url"] and kept[-2:] == ["-w", "bot.worker.W"] and MASK in kept


# ---- the dashboard over run folders of any shape ------------------------------------------------

H200_RUN = "20261203T174114Z-98e26ae2-9e55-4554-8c29-ed2ac5b42bf7"
ITERATION = "iterations/20261203T174203Z-af7a8e55-9569-4cf6-b748-ade880157e8b/analysis/diagnostics.json"
RECORDS = ["manifest.json", "analysis/diagnostics.json", "evaluation/result.json", "candidates/result.json", ITERATION,
           "evaluation/loop.json", "evaluation/candidates.json"]
TEXTS = ["config.yml", "prompt/user-1.md", "llm/answer-1.txt", "candidates/1/diff.patch"]


def _walk(value, leaf):
    if isinstance(value, dict):
        return {k: _walk(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, leaf) for v in value]
    return leaf(value)


def _numbers(make):
    return lambda v: _walk(v, lambda x: make(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x)


def _objects(replace, depth: int):
    def go(value, d):
        if isinstance(value, dict):
            return replace(value) if d >= depth else {k: go(v, d + 1) for k, v in value.items()}
        return [go(v, d) for v in value] if isinstance(value, list) else value
    return lambda v: go(v, 0)


def _lists(replace):
    def go(value):
        if isinstance(value, list):
            return replace(value)
        return {k: go(v) for k, v in value.items()} if isinstance(value, dict) else value
    return go


JSON_CORRUPTIONS = {
    "numbers-as-strings": _numbers(str), "numbers-as-words": _numbers(lambda x: "fast"),
    "numbers-null": _numbers(lambda x: None), "numbers-nan": _numbers(lambda x: math.nan),
    "numbers-too-large": _numbers(lambda x: 10 ** 400), "strings-as-numbers": lambda v: _walk(
        v, lambda x: 7 if isinstance(x, str) else x),
    "strings-as-lists": lambda v: _walk(v, lambda x: [x] if isinstance(x, str) else x),
    "objects-as-lists": _objects(lambda d: list(d.values()), 1), "objects-as-strings": _objects(lambda d: "x", 1),
    "objects-empty": _objects(lambda d: {}, 1), "inner-objects-as-strings": _objects(lambda d: "x", 2),
    "inner-objects-as-lists": _objects(lambda d: [1], 2), "inner-objects-empty": _objects(lambda d: {}, 2),
    "innermost-objects-as-numbers": _objects(lambda d: 3, 3), "lists-as-objects": _lists(lambda v: {"0": 1}),
    "lists-of-strings": _lists(lambda v: ["x"] * len(v)), "a-string": lambda v: "x", "a-list": lambda v: [v],
}
RAW_CORRUPTIONS = {
    "truncated": lambda b: b[: len(b) // 2], "not-utf-8": lambda b: b"\xff\xfe\xfa" + b[3:] + b"\xc3",
    "over-4-MiB": lambda b: b + b" " * (5 << 20), "empty": lambda b: b"", "nul-bytes": lambda b: b"\0" * 100,
}
# every corruption of the records the run page is built from; a sample of each kind for the others
# (each case reads every page of the run: the whole table took 4.5 min of one core)
SAMPLE = ["numbers-as-strings", "numbers-nan", "strings-as-lists", "objects-as-lists", "inner-objects-as-strings",
          "lists-as-objects", "a-string", "truncated", "a-folder"]
CASES = ([(f, c) for f in RECORDS[:3] for c in [*JSON_CORRUPTIONS, *RAW_CORRUPTIONS, "a-folder"]]
         + [(f, c) for f in RECORDS[3:] for c in SAMPLE]
         + [(f, c) for f in TEXTS for c in [*RAW_CORRUPTIONS, "a-folder"]])


def _loop_and_candidates(folder: Path) -> None:
    """A closed loop's summary (as `optimas run` wrote it) and an iteration's candidates, so that
    every record the run page reads is there to be broken."""
    recorded = json.loads((REPO / "benchmarks" / "results" / "loop-2026-12-02b" / "offline_loop_experiments.json")
                          .read_text())
    loop = (recorded[0] if isinstance(recorded, list) else recorded)["loop"]
    (folder / "evaluation" / "loop.json").write_text(json.dumps(loop))
    (folder / "evaluation" / "candidates.json").write_text(json.dumps([
        {"candidate": 1, "run_dir": "x/r1", "proposal": "accepted", "verdict": "improvement", "improvement": 0.1,
         "ci_low": 0.05, "ci_high": 0.15, "model_seconds": 2.0, "evaluation_seconds": 3.0, "kept": True,
         "same_as": None, "evaluation": "ok"}]))


@pytest.fixture(scope="module")
def served_runs(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """gunicorn serving the App's dashboard over a runs folder the tests add broken runs to."""
    runs = tmp_path_factory.mktemp("runs")
    shutil.copytree(EVALUATED_RUNS / H200_RUN, runs / H200_RUN)
    _loop_and_candidates(runs / H200_RUN)
    with gunicorn_dashboard(runs) as base:
        yield base, runs


@pytest.mark.slow
@pytest.mark.parametrize(("record", "corruption"), CASES, ids=[f"{f}:{c}" for f, c in CASES])
def test_the_dashboard_renders_any_run_folder(served_runs, record: str, corruption: str):
    """Issue #43 item 4: a run folder whose record is malformed, of the wrong types, numbers as
    strings, missing, too large, not UTF-8 or a folder: every page and plot answers without a 500,
    and the run's page still shows what it can read."""
    base, runs = served_runs
    run_id = f"20261207T000000Z-{uuid.uuid5(uuid.NAMESPACE_URL, record + corruption)}"
    folder = runs / run_id
    shutil.copytree(runs / H200_RUN, folder)
    path = folder / record
    if corruption == "a-folder":
        path.unlink()
        path.mkdir()
    elif corruption in RAW_CORRUPTIONS:
        path.write_bytes(RAW_CORRUPTIONS[corruption](path.read_bytes()))
    else:
        path.write_text(json.dumps(JSON_CORRUPTIONS[corruption](json.loads(path.read_text()))))
    listed = not (record == "manifest.json" and corruption == "a-folder")  # no manifest file: no run there
    try:
        status, index = get(f"{base}/")
        assert status == 200 and (run_id in index) == listed and H200_RUN in index
        pages = [f"/runs/{run_id}", f"/runs/{run_id}/timing.svg", *(f"/runs/{run_id}/roofline-{i}.svg" for i in (0, 1))]
        # each page asked once (the index links an app once per run); the run's own page is read again
        # below from its answer
        apps = list(dict.fromkeys(re.findall(r'class="app" href="/dashboard([^"]+)"', index)))
        answers = {}
        for page in [*pages, *apps, *(a + "/history.svg" for a in apps)]:
            answers[page] = status, text = get(base + page)
            assert status in (200, 404), (page, status, text[-500:])
        status, page = answers[f"/runs/{run_id}"]
        assert (status == 200 and run_id in page) if listed else status == 404
        if record != "analysis/diagnostics.json" and listed:  # what else the run holds is still shown
            assert "grid (64, 1, 1) x block (256, 1, 1)" in page
    finally:
        shutil.rmtree(folder)
