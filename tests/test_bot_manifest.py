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

from bot.manifest import EVENTS, PERMISSIONS, app_manifest


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.manifest", *args], capture_output=True, text=True, cwd=cwd)


def test_the_manifest_asks_for_what_the_app_does_and_nothing_more():
    m = app_manifest("https://optimas.example.org/webhook")
    assert m["default_permissions"] == {"contents": "read", "pull_requests": "write", "checks": "write",
                                        "issues": "write", "metadata": "read"} == PERMISSIONS
    assert m["default_events"] == ["pull_request", "issue_comment"] == EVENTS
    assert m["hook_attributes"] == {"url": "https://optimas.example.org/webhook", "active": True}
    assert m["public"] is False


def test_a_webhook_url_without_tls_is_refused():
    r = _cli("print", "--webhook-url", "http://optimas.example.org/webhook")
    assert r.returncode == 2 and "expected the https:// URL" in r.stderr and not r.stdout
    assert _cli("print", "--webhook-url", "http://127.0.0.1:8000/webhook").returncode == 0  # a local trial


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
