from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github_server import FakeGitHub
from rq import Queue, SimpleWorker
from rq.job import Job

from bot.github_client import app_from_env

FIXTURES = Path(__file__).parent / "fixtures"
# The evaluated run shipped with the package (optimas demo shows it), which the dashboard tests read
EVALUATED_RUNS = Path(__file__).parent.parent / "runner" / "data" / "demo" / "evaluated"
H200 = FIXTURES / "ncu-h200"
REPO = Path(__file__).resolve().parent.parent
GH_REPO = "Codertocat/Hello-World"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


@pytest.fixture(scope="session", autouse=True)
def build_cache(tmp_path_factory):
    """Builds of the same sources, command and compiler are done once per test run, across xdist
    workers: OPTIMAS_BUILD_CACHE, inherited by the CLI and worker processes the tests start.
    OPTIMAS_TEST_BUILD_CACHE names a folder to use instead (`make test` shares one between its two
    pytest runs)."""
    given = os.environ.get("OPTIMAS_TEST_BUILD_CACHE")
    # pytest-xdist gives each worker a base folder inside the run's own: the workers share the cache
    base = tmp_path_factory.getbasetemp()
    path = Path(given) if given else (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "build-cache"
    path.mkdir(parents=True, exist_ok=True)
    old = os.environ.get("OPTIMAS_BUILD_CACHE")
    os.environ["OPTIMAS_BUILD_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("OPTIMAS_BUILD_CACHE", None)
    else:
        os.environ["OPTIMAS_BUILD_CACHE"] = old


@pytest.fixture
def h200() -> Path:
    """Real Nsight Compute exports captured on an H200 (see fixtures/ncu-h200/CAPTURE.md)."""
    return H200


_ANNOUNCED: list[bool] = []  # the collection announced once (one report per worker)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """On the controller of `pytest -n`: say when collection is done and what follows, since the dots
    pause for long while CUDA programs compile (make test's first minute was silent)."""
    if not _ANNOUNCED:
        _ANNOUNCED.append(True)
        sys.stderr.write(f"\ncollected {len(ids)} tests; running them (the dots pause while CUDA programs compile)\n")


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where an NVIDIA GPU, nvcc and ncu are present (the device, not CI). Tests
    marked `slow` go first, so that a long one never starts last on one worker while the others idle."""
    have_gpu = all(shutil.which(t) for t in ("nvidia-smi", "nvcc", "ncu"))
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with nvcc and ncu")
    for item in items:
        if item.get_closest_marker("gpu") and not have_gpu:
            item.add_marker(skip)
    # stable: the rest keep their order; markers, not keywords (a parametrize id "slow" is a keyword)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def redis_or_fail() -> redis.Redis:
    """The local Redis the bot's tests need. Without one they fail (CI must never go green without
    testing the bot), unless OPTIMAS_TESTS_WITHOUT_REDIS=1 says to skip them on purpose."""
    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    try:
        conn.ping()
    except redis.exceptions.ConnectionError:
        if os.environ.get("OPTIMAS_TESTS_WITHOUT_REDIS") == "1":
            pytest.skip("no Redis at 127.0.0.1:6379 (skipped: OPTIMAS_TESTS_WITHOUT_REDIS=1)")
        pytest.fail("no Redis at 127.0.0.1:6379: start one (`.ci/run` does), or set OPTIMAS_TESTS_WITHOUT_REDIS=1 "
                    "to skip the bot's tests")
    return conn


def app_environment(monkeypatch, gh: FakeGitHub, pem: str, prefix: str, gpu_queue: str, app_id: str = "12345"):
    """A worker's environment for the App against the loopback GitHub API: its id and key, a Redis
    namespace and GPU queue of the test's own, and no request pacing (the loopback API needs none)."""
    for name, value in {"OPTIMAS_GPU_QUEUE": gpu_queue, "OPTIMAS_KEY_PREFIX": prefix, "OPTIMAS_APP_ID": app_id,
                        "OPTIMAS_PRIVATE_KEY": pem, "OPTIMAS_GITHUB_API_URL": gh.url,
                        "OPTIMAS_GITHUB_WRITE_INTERVAL_S": "0", "OPTIMAS_GITHUB_REQUEST_INTERVAL_S": "0",
                        "OPTIMAS_GITHUB_WRITE_BACKOFF_S": "0.01"}.items():
        monkeypatch.setenv(name, value)
    app_from_env.cache_clear()


@pytest.fixture(scope="session")
def pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


@pytest.fixture
def env(monkeypatch, pem):
    """A GitHub App against the loopback GitHub API, with a real Redis under a key prefix and GPU
    queue of its own: (fake GitHub, Redis, GPU queue)."""
    conn = redis_or_fail()
    gpu = f"test-gpu-{uuid.uuid4().hex[:8]}"
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    with FakeGitHub() as gh:
        app_environment(monkeypatch, gh, pem, prefix, gpu)
        gh.permissions = {"maintainer": "write", "visitor": "read"}
        gh.files = {".optimas.yml": "app: {name: demo}\n"}
        gh.add_pull(GH_REPO, 2, HEAD)
        yield gh, conn, Queue(gpu, connection=conn)
        app_from_env.cache_clear()
    for key in conn.scan_iter(f"{prefix}:*"):
        conn.delete(key)
    Queue(gpu, connection=conn).delete(delete_jobs=True)


def run_job(conn, function: str, **kwargs) -> Job:
    """Enqueue on a fresh control queue and run it with a real RQ worker in burst mode."""
    q = Queue(f"test-control-{uuid.uuid4().hex[:8]}", connection=conn)
    job = q.enqueue(function, kwargs=kwargs)
    SimpleWorker([q], connection=conn).work(burst=True)
    job = Job.fetch(job.id, connection=conn)
    q.delete(delete_jobs=False)
    return job


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    """`optimas ARGS` in this process (runner.cli.main), from `cwd`, with its exit code, stdout and
    stderr, as a subprocess would give them; sys.argv is what the command line would have been."""
    from runner.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_cwd, old_argv = os.getcwd(), sys.argv
    os.chdir(cwd)
    sys.argv = ["optimas", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse refusing the arguments
                code = e.code if isinstance(e.code, int) else 1
    finally:
        os.chdir(old_cwd)
        sys.argv = old_argv
    return subprocess.CompletedProcess(["optimas", *args], code, out.getvalue(), err.getvalue())
