"""The "Install the App" checklist (docs/github-app.md) walked from the registration code to a review
on a pull request, against the loopback GitHub (issue #32): `python -m bot.manifest convert`,
then each compose service started as its image would start it (gunicorn for the receiver, `rq worker`
with the App's worker class for the control and GPU queues), with the environment compose.yaml
gives it from what convert wrote and the one .env the checklist asks for. Only what a container
would see differently is replaced: Redis and the runs volume by this host's, GitHub by the loopback
server, and the queue names by the test's own."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, REPO, redis_or_fail
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from github_server import FakeGitHub
from test_bot_end_to_end import GH_REPO, PROBE_PR_FILES, make_remote

from bot.publish import MARKER

# The repository's .optimas.yml names no model: the operator's (OPTIMAS_LLM_BACKEND in .env) applies.
CONFIG = """app:
  name: probe
  workdir: examples/h200-probe
  sources: [probe_kernels.cu]
  source_map: {/opt/probe/k.cu: examples/h200-probe/probe_kernels.cu}
  build: nvcc -O3 -arch={arch} {lineinfo} -o {exe} probe_kernels.cu
  run: "{exe} 4194304 4096 1024"
profiles:
  raw: [examples/h200-probe/profiles/probe_full_raw_base.csv]
  source: [examples/h200-probe/profiles/probe_full_source_cuda_sass.csv]
"""
REDIS = "redis://127.0.0.1:6379/0"


def compose_environment(folder: Path, service: str, dotenv: dict[str, str]) -> dict[str, str]:
    """A compose.yaml service's environment as `docker compose up` in `folder` gives it: its
    env_file, then `environment` over it with ${VAR} from .env, and /run/secrets/<name> turned into
    the file compose mounts there."""
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    spec = compose["services"][service]
    env: dict[str, str] = {}
    env_files = [spec["env_file"]] if isinstance(spec.get("env_file"), str) else spec.get("env_file", [])
    for name in env_files:
        for line in (folder / name).read_text().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
    for key, value in (spec.get("environment") or {}).items():
        value = re.sub(r"\$\{(\w+)(?::([?-])([^}]*))?\}", lambda m: _interpolate(m, dotenv), str(value))
        if value.startswith("/run/secrets/"):
            value = str(folder / compose["secrets"][value.removeprefix("/run/secrets/")]["file"])
        env[key] = value
    return env


def _interpolate(m: re.Match, dotenv: dict[str, str]) -> str:
    """compose's ${VAR}, ${VAR:-default} and ${VAR:?message} (set and empty counts as unset)."""
    name, kind, rest = m.groups()
    if dotenv.get(name):
        return dotenv[name]
    if kind == "?":
        raise AssertionError(f"compose would refuse to start: {name}: {rest}")
    return rest if kind == "-" else ""


def volume_targets(service: str, volume: str) -> list[str]:
    """Where compose mounts the named `volume` in `service`."""
    spec = yaml.safe_load((REPO / "compose.yaml").read_text())["services"][service]
    return [v.split(":")[1] for v in spec.get("volumes", []) if v.split(":")[0] == volume]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _deliver(url: str, secret: bytes, event: str, payload: dict) -> int:
    raw = json.dumps(payload).encode()
    req = urllib.request.Request(url, data=raw, method="POST", headers={
        "X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()), "Content-Type": "application/json",
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def _get(url: str, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_the_install_the_app_checklist_ends_in_a_review_on_a_labelled_pull_request(tmp_path: Path):
    redis_or_fail()
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    site = tmp_path / "optimas"  # the operator's checkout, where compose runs
    site.mkdir()
    remotes, sha = make_remote(tmp_path, ["examples/h200-probe"])
    token = uuid.uuid4().hex * 2
    # the checklist's .env: the dashboard token, the dashboard's public address, the model for all
    dotenv = {"OPTIMAS_DASHBOARD_TOKEN": token, "OPTIMAS_ARTIFACTS_URL": "https://optimas.example.org/dashboard",
              "OPTIMAS_LLM_BACKEND": "offline"}
    (site / ".env").write_text("".join(f"{k}={v}\n" for k, v in dotenv.items()))
    suffix = uuid.uuid4().hex[:8]
    control_queue, gpu_queue = f"walk-control-{suffix}", f"walk-gpu-{suffix}"
    runs_volume = tmp_path / "runs-volume"
    port = _free_port()
    with FakeGitHub() as gh:
        gh.manifest_codes["c0de"] = {"id": 4242, "slug": "optimas-acme", "pem": pem, "webhook_secret": "whsec-walk"}
        made = subprocess.run([sys.executable, "-m", "bot.manifest", "convert", "c0de", "--api-url", gh.url],
                              cwd=site, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        assert made.returncode == 0, made.stderr
        gh.permissions = {"Codertocat": "admin"}
        gh.files = {".optimas.yml": CONFIG}
        gh.add_pull(GH_REPO, 2, sha)
        gh.pr_files[2] = PROBE_PR_FILES

        def environment(service: str) -> dict[str, str]:
            env = compose_environment(site, service, dotenv)
            for target in volume_targets(service, "runs"):  # the shared runs volume
                env = {k: str(runs_volume) if v == target else v for k, v in env.items()}
            return {"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO),
                    **env, "OPTIMAS_REDIS_URL": REDIS, "OPTIMAS_GITHUB_API_URL": gh.url,
                    "OPTIMAS_GIT_URL": f"file://{remotes}/{{repo}}.git", "OPTIMAS_KEY_PREFIX": f"walk-{suffix}",
                    "OPTIMAS_CONTROL_QUEUE": control_queue, "OPTIMAS_GPU_QUEUE": gpu_queue,
                    "OPTIMAS_GITHUB_WRITE_INTERVAL_S": "0", "OPTIMAS_GITHUB_REQUEST_INTERVAL_S": "0"}

        def work(service: str, queue: str) -> None:
            """The service's worker (compose's command for the control worker; bot.gpu_workers
            starts this one per GPU), until its queue is empty."""
            done = subprocess.run([sys.executable, "-m", "rq.cli", "worker", "-w", "bot.worker.OptimasWorker",
                                   "--burst", "--url", REDIS, queue], cwd=site, env=environment(service),
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stdout + done.stderr

        receiver = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:bot.serving", "--workers", "1",
                                     "--bind", f"127.0.0.1:{port}", "bot.wsgi:app"], cwd=site, env=environment("app"),
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    if _get(base + "/healthz")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            secret = (site / "secrets" / "webhook-secret").read_bytes().strip()
            # installing the App on the repository creates its label
            installed = json.loads((FIXTURES / "github/payload-examples/installation/created.payload.json").read_text())
            assert _deliver(base + "/webhook", secret, "installation", installed) == 202
            work("control-worker", control_queue)
            assert "optimas" in gh.labels.get(GH_REPO, {})
            # a maintainer labels a pull request
            labeled = json.loads((FIXTURES / "github/payload-examples/pull_request/labeled.payload.json").read_text())
            labeled["label"]["name"] = "optimas"
            labeled["pull_request"]["head"]["sha"] = sha
            assert _deliver(base + "/webhook", secret, "pull_request", labeled) == 202
            work("control-worker", control_queue)
            work("gpu-worker", gpu_queue)
            # no GPU here validates and times the candidate: it is text in the summary, not a suggestion
            assert gh.reviews == []
            (summary,) = [c["body"] for c in gh.comments if MARKER in c["body"]]
            assert "no suggestion was posted" in summary and "```suggestion" not in summary
            run_id = re.search(r"The run on the dashboard: https://optimas\.example\.org/dashboard/runs/(\S+)",
                               summary).group(1)
            # the dashboard on the App's container reads the GPU worker's run through the shared volume
            assert _get(f"{base}/dashboard/runs/{run_id}")[0] == 401
            status, page = _get(f"{base}/dashboard/runs/{run_id}", token)
            assert status == 200 and run_id in page
            call = json.loads((runs_volume / run_id / "llm" / "calls.jsonl").read_text().splitlines()[0])
            assert call["model"].startswith("offline")  # the operator's model, the repository naming none
        finally:
            receiver.terminate()
            out, _ = receiver.communicate(timeout=30)
    assert token not in out and "whsec-walk" not in out
