"""The container images and the compose file (issue #16). No container engine runs here, so the
Dockerfile is linted with hadolint and the compose file checked against the Compose specification;
the commands the images and services run are ordinary commands of the project, and each is run
here as the image would run it, against the test Redis, until it stops on its own."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import REPO, redis_or_fail

BIN = Path(sys.executable).parent


def _image_commands() -> dict[str, list[str]]:
    """Each stage's CMD (exec form) in the Dockerfile, by stage name."""
    stage, out = None, {}
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if m := re.match(r"FROM \S+ AS (\S+)", line):
            stage = m.group(1)
        elif line.startswith("CMD "):
            out[stage] = json.loads(line[4:])
    return out


def _services() -> dict:
    return yaml.safe_load((REPO / "compose.yaml").read_text())["services"]


def test_the_dockerfile_passes_hadolint():
    r = subprocess.run([str(BIN / "hadolint"), "Dockerfile"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_compose_file_follows_the_compose_specification():
    r = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", "compose.yaml"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr


def test_images_run_as_an_unprivileged_user_and_hold_no_secret():
    text = (REPO / "Dockerfile").read_text()
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    for stage in stages:
        if " AS wheels" in stage.splitlines()[0]:
            continue  # a build stage: nothing of it runs in production
        users = re.findall(r"^USER (\S+)", stage, flags=re.M)
        assert users and users[-1] not in ("root", "0"), stage.splitlines()[0]
    assert not re.search(r"^(ENV|ARG) \S*(SECRET|KEY|TOKEN)", text, flags=re.M | re.I)
    for name, service in _services().items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"SECRET|KEY|TOKEN", key):
                assert str(value).startswith(("${", "/run/secrets/")), (name, key)


def test_every_command_the_images_and_services_run_starts_and_stops_here(tmp_path: Path, pem: str):
    conn = redis_or_fail()
    key = tmp_path / "app.pem"
    key.write_text(pem)
    env = {**os.environ, "OPTIMAS_WEBHOOK_SECRET": "test-secret", "OPTIMAS_APP_ID": "1",
           "OPTIMAS_PRIVATE_KEY_PATH": str(key), "OPTIMAS_REDIS_URL": "redis://127.0.0.1:6379/0",
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    queue = f"test-container-{uuid.uuid4().hex[:8]}"
    commands = _image_commands()
    assert set(commands) == {"app", "gpu-worker"}
    commands |= {name: s["command"] for name, s in _services().items() if s.get("command") and name != "redis"}
    ran = []
    for name, argv in commands.items():
        argv = [a.replace("redis://redis:6379/0", "redis://127.0.0.1:6379/0") for a in argv]
        if argv[0] == "gunicorn":  # load the app as the server would, then stop
            argv = [argv[0], "--check-config", *argv[1:]]
        elif argv[:2] == ["rq", "worker"]:  # a worker of that class on an empty queue of its own, once
            argv = [a if a != "optimas-control" else queue for a in argv] + ["--burst"]
        elif argv == ["python", "-m", "bot.gpu_workers"]:  # one GPU worker, pinned, once
            argv = [*argv, "--gpus", "0", "--queue", queue, "--burst"]
        else:
            pytest.fail(f"{name}: no test runs {shlex.join(argv)}")
        argv = [sys.executable if argv[0] == "python" else str(BIN / argv[0]), *argv[1:]]
        r = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
        assert r.returncode == 0, f"{name}: {shlex.join(argv)}\n{r.stdout}\n{r.stderr}"
        ran.append(name)
    assert sorted(ran) == ["app", "control-worker", "gpu-worker"]
    conn.delete(f"rq:queue:{queue}")


def test_no_worker_inherits_the_receivers_health_check_on_a_port_it_does_not_serve():
    """The app image's HEALTHCHECK asks port 8000; the control worker runs that image without serving
    it, so compose turns the check off there (else `docker compose ps` would call it unhealthy)."""
    assert "127.0.0.1:8000/healthz" in (REPO / "Dockerfile").read_text()
    for name, service in _services().items():
        target = (service.get("build") or {}).get("target")
        if target == "app" and service.get("command"):  # the app image running something else than gunicorn
            assert (service.get("healthcheck") or {}).get("disable") is True, name
