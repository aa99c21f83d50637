"""The App manifest (least privilege) and registration from it (issue #16): the form GitHub's
registration page receives, and the code exchange against the loopback GitHub API."""

from __future__ import annotations

import html
import json
import re
import stat
import subprocess
import sys
from pathlib import Path

from github_server import FakeGitHub
from rq import Queue

from bot.manifest import EVENTS, PERMISSIONS, app_manifest


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.manifest", *args], capture_output=True, text=True, cwd=cwd)


def test_the_manifest_asks_for_what_the_app_does_and_nothing_more():
    m = app_manifest("https://optimas.example.org/webhook", "Optimas for ACME")
    assert m["default_permissions"] == {"contents": "read", "pull_requests": "write", "checks": "write",
                                        "issues": "write", "metadata": "read"} == PERMISSIONS
    assert m["default_events"] == ["pull_request", "issue_comment"] == EVENTS
    assert m["hook_attributes"] == {"url": "https://optimas.example.org/webhook", "active": True}
    assert m["public"] is False
    assert m["url"] == "https://optimas.example.org/"  # the operator's deployment, not a github.com/apps page


def test_a_webhook_url_without_tls_is_refused():
    r = _cli("print", "--webhook-url", "http://optimas.example.org/webhook", "--name", "Optimas QA")
    assert r.returncode == 2 and "expected the https:// URL" in r.stderr and not r.stdout
    assert _cli("print", "--webhook-url", "http://127.0.0.1:8000/webhook", "--name", "Optimas QA").returncode == 0
    # a name is the operator's own: there is no default that may be taken on GitHub
    r = _cli("print", "--webhook-url", "https://optimas.example.org/webhook")
    assert r.returncode == 2 and "--name" in r.stderr
    r = _cli("print", "--webhook-url", "https://optimas.example.org/webhook", "--name", "x" * 35)
    assert r.returncode == 2 and "1 to 34 characters" in r.stderr
    # credentials in the webhook URL would be published as the App's homepage
    r = _cli("print", "--webhook-url", "https://hook:Pa55w0rd@optimas.example.org/webhook", "--name", "Optimas QA")
    assert r.returncode == 2 and "Pa55w0rd" not in r.stdout + r.stderr


def test_the_form_posts_the_manifest_to_githubs_registration_page():
    r = _cli("form", "--webhook-url", "https://optimas.example.org/webhook", "--org", "my-org",
             "--name", "Optimas <QA>")
    assert r.returncode == 0, r.stderr
    assert '<form action="https://github.com/organizations/my-org/settings/apps/new" method="post">' in r.stdout
    value = re.search(r'name="manifest" value="([^"]*)"', r.stdout).group(1)
    m = json.loads(html.unescape(value))
    assert m["name"] == "Optimas <QA>" and m["default_events"] == EVENTS
    assert "<QA>" not in r.stdout.replace(value, "")  # the name is escaped wherever it is shown


def test_the_code_exchange_writes_the_credentials_for_their_owner_only(tmp_path: Path):
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEfake\n-----END RSA PRIVATE KEY-----\n"
    secret = "whsec-0123456789abcdef"
    out = tmp_path / "secrets"
    with FakeGitHub() as gh:
        gh.manifest_codes["abc123"] = {"id": 4242, "slug": "optimas-qa", "name": "Optimas QA", "pem": pem,
                                       "webhook_secret": secret, "client_id": "Iv1.x", "client_secret": "cs-x"}
        r = _cli("convert", "abc123", "--out", str(out), "--api-url", gh.url)
        assert r.returncode == 0, r.stderr
        assert [q["path"] for q in gh.requests] == ["/app-manifests/abc123/conversions"]
        again = _cli("convert", "abc123", "--out", str(tmp_path / "other"), "--api-url", gh.url)
    assert (out / "app.pem").read_text() == pem and (out / "webhook-secret").read_text() == secret
    env = (out / "app.env").read_text()
    key_path = (out / "app.pem").resolve()
    assert env == f"OPTIMAS_APP_ID=4242\nOPTIMAS_APP_SLUG=optimas-qa\nOPTIMAS_PRIVATE_KEY_PATH={key_path}\n"
    for f in out.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert secret not in r.stdout + r.stderr and "MIIE" not in r.stdout + r.stderr and "cs-x" not in env
    # a code works once: the second exchange is refused, and writes nothing
    assert again.returncode == 2 and "codes work once and for one hour" in again.stderr
    assert not (tmp_path / "other").exists()
    # existing credentials are never overwritten, and the code is not spent on trying
    with FakeGitHub() as gh:
        gh.manifest_codes["def456"] = {"id": 1, "slug": "s", "pem": pem, "webhook_secret": secret}
        r = _cli("convert", "def456", "--out", str(out), "--api-url", gh.url)
        assert r.returncode == 2 and "exist already" in r.stderr and not gh.requests


def test_compose_reads_exactly_what_convert_writes_and_the_receiver_starts_from_it(tmp_path: Path):
    """The App checklist's first steps against the loopback GitHub: register (a code), convert with
    its defaults, then compose's inputs exist where compose.yaml names them, and the services'
    settings as compose would give them verify a signed delivery and load the key."""
    import hashlib
    import hmac
    import uuid

    import yaml
    from conftest import REPO, redis_or_fail
    from test_bot_install_walkthrough import compose_environment

    from bot.app import create_app
    from bot.github_client import private_key_from_env
    from bot.settings import Settings

    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEfake\n-----END RSA PRIVATE KEY-----\n"
    with FakeGitHub() as gh:
        gh.manifest_codes["abc123"] = {"id": 77, "slug": "optimas-acme", "pem": pem, "webhook_secret": "whsec-77"}
        r = _cli("convert", "abc123", "--api-url", gh.url, cwd=tmp_path)  # default --out: secrets/
        assert r.returncode == 0, r.stderr
    compose = yaml.safe_load((REPO / "compose.yaml").read_text())
    secret_files = {name: tmp_path / spec["file"] for name, spec in compose["secrets"].items()}
    assert all(p.is_file() for p in secret_files.values()), secret_files

    def service_env(name: str) -> dict[str, str]:
        return compose_environment(tmp_path, name, dotenv)

    dotenv = {"OPTIMAS_DASHBOARD_TOKEN": "0123456789abcdef" * 2}  # the one line the checklist adds to .env
    app_env = service_env("app")
    assert app_env["OPTIMAS_DASHBOARD_RUNS_DIR"] == service_env("gpu-worker")["OPTIMAS_RUNS_DIR"]  # one volume
    tag = uuid.uuid4().hex[:8]  # (a namespace of its own: the example body's claim outlives the test)
    settings = Settings.from_env({**app_env, "OPTIMAS_CONTROL_QUEUE": f"test-compose-{tag}",
                                  "OPTIMAS_KEY_PREFIX": f"test-{tag}"})
    assert settings.webhook_secret == b"whsec-77" and settings.app_slug == "optimas-acme"
    for worker in ("control-worker", "gpu-worker"):
        env = service_env(worker)
        assert env["OPTIMAS_APP_ID"] == "77" and private_key_from_env(env) == pem
        assert "OPTIMAS_WEBHOOK_SECRET" not in env and "OPTIMAS_WEBHOOK_SECRET_PATH" not in env  # not theirs
    body = (Path(__file__).parent / "fixtures/github/payload-examples/installation/created.payload.json").read_bytes()
    client = create_app(settings, redis_or_fail()).test_client()
    sig = "sha256=" + hmac.new(b"whsec-77", body, hashlib.sha256).hexdigest()
    r = client.post("/webhook", data=body, headers={"X-GitHub-Event": "installation", "X-Hub-Signature-256": sig,
                                                    "X-GitHub-Delivery": str(uuid.uuid4()),
                                                    "Content-Type": "application/json"})
    conn = redis_or_fail()
    Queue(settings.control_queue, connection=conn).delete(delete_jobs=True)
    for key in conn.scan_iter(f"test-{tag}:*"):
        conn.delete(key)
    assert r.status_code == 202 and r.get_json()["status"] == "queued"


def test_the_next_steps_keep_the_env_file_with_the_keys_from_other_users(tmp_path: Path):
    """An attacker's pass: convert's Next had the operator append the dashboard token (and then the
    model's key) to .env as the umask leaves it, readable by every user of the host."""
    with FakeGitHub() as gh:
        gh.manifest_codes["n1"] = {"id": 7, "slug": "s", "pem": "k", "webhook_secret": "w"}
        r = _cli("convert", "n1", "--out", str(tmp_path / "secrets"), "--api-url", gh.url)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if "OPTIMAS_DASHBOARD_TOKEN=" in x).split("#")[0]
    (tmp_path / ".env").write_text("")  # one there already, as the umask made it
    (tmp_path / ".env").chmod(0o644)
    subprocess.run(["bash", "-e", "-c", f"umask 022; {line}"], cwd=tmp_path, check=True)
    assert stat.S_IMODE((tmp_path / ".env").stat().st_mode) == 0o600
    assert "OPTIMAS_DASHBOARD_TOKEN=" in (tmp_path / ".env").read_text()
