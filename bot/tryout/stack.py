"""The try-out's processes: the loopback GitHub (in this process), the webhook receiver (gunicorn
with the App's serving config, on 127.0.0.1), a control worker and a GPU worker (`rq worker` with the
App's worker class), against the local Redis under a key prefix and queues of their own, with a
throwaway App key, webhook secret and dashboard token in a temporary folder. Leaving `running_stack`
stops every process and deletes what it wrote in Redis."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from rq import Queue

import bot
from bot.tryout.deliver import INSTALLATION_ID, SENDER
from bot.tryout.loopback_github import LoopbackGitHub
from bot.tryout.sample import PULL, REPO, Sample, make_sample
from runner.base.errors import OptimasError

log = logging.getLogger("bot.tryout")

APP_ID = "1"
# The operator's settings a maintainer's shell may hold that the try-out passes on (the model, the
# build cache, the sandbox's limits); every other OPTIMAS_ variable is the try-out's own.
PASSED_ON = ("OPTIMAS_LLM_", "OPTIMAS_BUILD_CACHE", "OPTIMAS_SANDBOX_", "OPTIMAS_CHILD_ENV")


class TryoutError(OptimasError):
    exit_code = 2


@dataclass
class Stack:
    """Everything the try-out started, and where it lives."""

    folder: Path
    github: LoopbackGitHub
    sample: Sample
    redis_url: str
    suffix: str  # names this try-out's Redis keys and queues
    port: int  # the receiver's
    secret: bytes
    dashboard_token: str
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return f"tryout-{self.suffix}"

    @property
    def control_queue(self) -> str:
        return f"tryout-control-{self.suffix}"

    @property
    def gpu_queue(self) -> str:
        return f"tryout-gpu-{self.suffix}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def secret_file(self) -> Path:
        return self.folder / "webhook-secret"

    def log_file(self, name: str) -> Path:
        return self.folder / "logs" / f"{name}.log"


def free_port() -> int:
    """A port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_redis(url: str) -> None:
    """TryoutError unless a Redis answers at `url`."""
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except (redis.exceptions.RedisError, ValueError) as e:
        raise TryoutError(f"no Redis answers at {url} ({e}): start one (`redis-server`), or name yours with "
                          "--redis-url") from None


def write_secrets(folder: Path) -> tuple[Path, bytes, str]:
    """A throwaway App key, webhook secret and dashboard token under `folder`, readable by you only:
    (the key's path, the secret, the token)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    pem, secret = folder / "app.pem", secrets.token_hex(20).encode()
    for path, data in ((pem, key), (folder / "webhook-secret", secret)):
        _write_private(path, data)
    return pem, secret, secrets.token_hex(32)


def _write_private(path: Path, data: bytes) -> None:
    """`data` in a new file `path` that is never readable by others, not even for a moment (a kept
    --workdir may be readable by others), and never through a link planted there."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def environment(stack: Stack, role: str) -> dict[str, str]:
    """A process's environment: this shell's, without its OPTIMAS_ settings but for PASSED_ON, and the
    App's settings pointing at the loopback GitHub, this try-out's Redis keys, queues and folder.
    The receiver gets the webhook secret, the workers the App's key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTIMAS_") or k.startswith(PASSED_ON)}
    package_root = str(Path(bot.__file__).resolve().parent.parent)
    env.update({
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
        "HOME": str(stack.folder / "home"), "OPTIMAS_REDIS_URL": stack.redis_url,
        "OPTIMAS_KEY_PREFIX": stack.prefix, "OPTIMAS_CONTROL_QUEUE": stack.control_queue,
        "OPTIMAS_GPU_QUEUE": stack.gpu_queue, "OPTIMAS_GITHUB_API_URL": stack.github.url,
        "OPTIMAS_GIT_URL": f"file://{stack.sample.remotes}/{{repo}}.git",
        "OPTIMAS_RUNS_DIR": str(stack.folder / "runs"),
        "OPTIMAS_ARTIFACTS_URL": f"{stack.base_url}/dashboard", "OPTIMAS_APP_ID": APP_ID,
        # the loopback GitHub needs no pacing against rate limits
        "OPTIMAS_GITHUB_REQUEST_INTERVAL_S": "0", "OPTIMAS_GITHUB_WRITE_INTERVAL_S": "0",
        "OPTIMAS_GITHUB_WRITE_BACKOFF_S": "0.1"})
    env.setdefault("OPTIMAS_LLM_BACKEND", "offline")
    if role == "receiver":
        env.update({"OPTIMAS_WEBHOOK_SECRET_PATH": str(stack.secret_file),
                    "OPTIMAS_DASHBOARD_RUNS_DIR": str(stack.folder / "runs"),
                    "OPTIMAS_DASHBOARD_TOKEN": stack.dashboard_token})
    else:
        env["OPTIMAS_PRIVATE_KEY_PATH"] = str(stack.folder / "app.pem")
    return env


def _commands(stack: Stack) -> dict[str, list[str]]:
    """Each process as its container starts it (compose.yaml), on loopback addresses."""
    worker = [sys.executable, "-m", "rq.cli", "worker", "-w", "bot.worker.OptimasWorker", "--url", stack.redis_url]
    return {"receiver": [sys.executable, "-m", "gunicorn", "-c", "python:bot.serving", "--workers", "1",
                         "--bind", f"127.0.0.1:{stack.port}", "bot.wsgi:app"],
            "control-worker": [*worker, "--name", f"{stack.control_queue}-worker", stack.control_queue],
            "gpu-worker": [*worker, "--name", f"{stack.gpu_queue}-worker", stack.gpu_queue]}


def start_processes(stack: Stack) -> None:
    """Start the receiver and both workers, each logging to logs/<name>.log, in sessions of their own
    (a Ctrl-C reaches this process only, which stops them in order)."""
    for name, command in _commands(stack).items():
        with stack.log_file(name).open("wb") as out:
            stack.processes[name] = subprocess.Popen(
                command, cwd=stack.folder, env=environment(stack, "receiver" if name == "receiver" else "worker"),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        log.info("started %s (pid %d)", name, stack.processes[name].pid)


def wait_until_serving(stack: Stack, timeout_s: float = 60.0) -> None:
    """Wait for the receiver's /healthz to answer 200; TryoutError if a process ended or time ran out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ended = [n for n, p in stack.processes.items() if p.poll() is not None]
        if ended:
            raise TryoutError(f"{', '.join(ended)} stopped at start: see {stack.log_file(ended[0])}:\n"
                              + stack.log_file(ended[0]).read_text(errors="replace")[-2000:])
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{stack.base_url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        time.sleep(0.2)
    raise TryoutError(f"the receiver did not answer on {stack.base_url}/healthz within {timeout_s:g} s: see "
                      f"{stack.log_file('receiver')}")


def stop_processes(processes: dict[str, subprocess.Popen], grace_s: float = 8.0) -> None:
    """Stop each process: SIGTERM (an RQ worker then finishes its job), again after a while (an RQ
    worker then kills its job), and SIGKILL for its whole session last."""
    for _ in range(2):
        for p in processes.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s / 2
        while time.monotonic() < deadline and any(p.poll() is None for p in processes.values()):
            time.sleep(0.1)
    for name, p in processes.items():
        if p.poll() is None:
            log.warning("%s did not stop: killing its process group", name)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


def clean_redis(stack: Stack) -> None:
    """Delete what this try-out wrote in Redis: the App's keys under its prefix, its queues, their
    jobs and registries."""
    conn = redis.Redis.from_url(stack.redis_url)
    for name in (stack.control_queue, stack.gpu_queue):
        queue = Queue(name, connection=conn)
        registries = (queue.started_job_registry, queue.finished_job_registry, queue.failed_job_registry,
                      queue.deferred_job_registry, queue.scheduled_job_registry, queue.canceled_job_registry)
        for registry in registries:
            for job_id in registry.get_job_ids():
                conn.delete(f"rq:job:{job_id}", f"rq:job:{job_id}:dependents", f"rq:results:{job_id}")
        queue.delete(delete_jobs=True)
    for pattern in (f"{stack.prefix}:*", f"rq:*:{stack.control_queue}*", f"rq:*:{stack.gpu_queue}*"):
        for key in conn.scan_iter(pattern):
            conn.delete(key)


def queues_idle(stack: Stack) -> bool:
    """No job of this try-out is queued or running."""
    conn = redis.Redis.from_url(stack.redis_url)
    queues = [Queue(n, connection=conn) for n in (stack.control_queue, stack.gpu_queue)]
    return all(q.count == 0 and q.started_job_registry.count == 0 for q in queues)


def failed_jobs(stack: Stack) -> int:
    """Jobs of this try-out that failed or wait for a retry (the try-out runs no scheduler)."""
    conn = redis.Redis.from_url(stack.redis_url)
    queues = [Queue(n, connection=conn) for n in (stack.control_queue, stack.gpu_queue)]
    return sum(q.failed_job_registry.count + q.scheduled_job_registry.count for q in queues)


@contextlib.contextmanager
def running_stack(folder: Path, redis_url: str) -> Iterator[Stack]:
    """The loopback GitHub with the sample repository and its open pull request, the receiver and both
    workers, serving under `folder`; everything stopped and Redis cleaned on leaving."""
    check_redis(redis_url)
    for sub in ("logs", "runs", "home"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    sample = make_sample(folder / "sample")
    _, secret, token = write_secrets(folder)
    with LoopbackGitHub() as github:
        github.permissions = {SENDER: "admin"}
        github.files = {".optimas.yml": sample.config}
        github.add_pull(REPO, PULL, sample.head_sha)
        github.pr_files[PULL] = sample.pr_files
        github.pr_commits[PULL] = [sample.head_sha]
        stack = Stack(folder=folder, github=github, sample=sample, redis_url=redis_url, suffix=uuid.uuid4().hex[:8],
                      port=free_port(), secret=secret, dashboard_token=token)
        log.info("installation %d of the App on %s", INSTALLATION_ID, REPO)
        try:
            start_processes(stack)
            wait_until_serving(stack)
            yield stack
        finally:
            stop_processes(stack.processes)
            clean_redis(stack)
