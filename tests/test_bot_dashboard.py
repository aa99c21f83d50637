"""The dashboard through the App (issue #17): under /dashboard, never without authentication (a
bearer token or a reverse proxy's identity header), never a path outside the runs folder."""

from __future__ import annotations

import re
import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import EVALUATED_RUNS, redis_or_fail
from werkzeug.serving import make_server

from bot.app import create_app
from bot.settings import Settings, SettingsError

RUN = "20261203T174114Z-98e26ae2-9e55-4554-8c29-ed2ac5b42bf7"
TOKEN = "dashboard-token-0123456789abcdef"


def _serve(settings: Settings):
    srv = make_server("127.0.0.1", 0, create_app(settings, redis_or_fail()), threaded=True)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_port}"


def _get(url: str, headers: dict | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {})) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _get_request(req: urllib.request.Request) -> int:
    try:
        with urllib.request.urlopen(req) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    shutil.copytree(EVALUATED_RUNS / RUN, tmp_path / "runs" / RUN)
    (tmp_path / "secret.txt").write_text("outside the runs folder")
    return tmp_path / "runs"


def test_the_dashboard_needs_the_token_and_serves_only_run_folders(runs: Path):
    settings = Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_RUNS_DIR": str(runs),
                                  "OPTIMAS_DASHBOARD_TOKEN": TOKEN})
    srv, base = _serve(settings)
    try:
        for path in ("/dashboard/", f"/dashboard/runs/{RUN}", f"/dashboard/runs/{RUN}/timing.svg"):
            assert _get(base + path)[0] == 401, path
            assert _get(base + path, {"Authorization": "Bearer wrong-token-0123456789"})[0] == 401, path
            assert _get(base + path, {"Authorization": TOKEN})[0] == 401, path  # not a bearer credential
        auth = {"Authorization": f"Bearer {TOKEN}"}
        status, page = _get(base + "/dashboard/", auth)
        assert status == 200 and TOKEN not in page
        links = re.findall(r'href="(/dashboard/runs/[^"]+)"', page)
        assert links == [f"/dashboard/runs/{RUN}"]  # links carry the mount point
        status, run_page = _get(base + links[0], auth)
        assert status == 200 and "improvement" in run_page
        for src in re.findall(r'src="([^"]+)"', run_page):
            assert src.startswith(f"/dashboard/runs/{RUN}/") and _get(base + src, auth)[0] == 200, src
        for path in ("/dashboard/runs/..%2fsecret.txt", "/dashboard/runs/../secret.txt", "/dashboard/secret.txt",
                     "/dashboard/runs/%2e%2e%2f%2e%2e%2fsecret.txt"):
            assert _get(base + path, auth)[0] == 404, path
        assert _get(base + "/healthz")[0] == 200  # the App's own routes are untouched
        forged = urllib.request.Request(base + "/webhook", data=b'{"action": "labeled"}', method="POST",
                                        headers={"X-GitHub-Event": "pull_request",
                                                 "X-Hub-Signature-256": "sha256=" + "0" * 64})
        assert _get_request(forged) == 401  # a forged delivery is still refused beside the dashboard
    finally:
        srv.shutdown()


def test_a_reverse_proxys_identity_header_authenticates(runs: Path):
    settings = Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_RUNS_DIR": str(runs),
                                  "OPTIMAS_DASHBOARD_USER_HEADER": "X-Forwarded-User",
                                  "OPTIMAS_DASHBOARD_PROXY_ADDRESSES": "10.1.2.3, 127.0.0.0/8"})
    srv, base = _serve(settings)
    try:
        assert _get(base + "/dashboard/")[0] == 401
        assert _get(base + "/dashboard/", {"X-Forwarded-User": " "})[0] == 401
        assert _get(base + "/dashboard/", {"X-Forwarded-User": "maintainer"})[0] == 200
    finally:
        srv.shutdown()


def test_the_identity_header_is_believed_only_from_the_proxys_addresses(runs: Path):
    """Anyone who reaches the App's port directly can send X-Forwarded-User: from any address but
    the proxy's it opens nothing, and the token still works."""
    settings = Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_RUNS_DIR": str(runs),
                                  "OPTIMAS_DASHBOARD_TOKEN": TOKEN, "OPTIMAS_DASHBOARD_USER_HEADER": "X-Forwarded-User",
                                  "OPTIMAS_DASHBOARD_PROXY_ADDRESSES": "172.18.0.0/16"})
    srv, base = _serve(settings)  # requests come from 127.0.0.1
    try:
        assert _get(base + "/dashboard/", {"X-Forwarded-User": "maintainer"})[0] == 401
        assert _get(base + "/dashboard/", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    finally:
        srv.shutdown()
    with pytest.raises(SettingsError, match="without OPTIMAS_DASHBOARD_PROXY_ADDRESSES"):
        Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_RUNS_DIR": str(runs),
                           "OPTIMAS_DASHBOARD_USER_HEADER": "X-Forwarded-User"})
    with pytest.raises(SettingsError, match="'proxy' is not an IP address"):
        Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_USER_HEADER": "X-Forwarded-User",
                           "OPTIMAS_DASHBOARD_PROXY_ADDRESSES": "proxy"})


def test_an_open_dashboard_is_refused_at_start():
    with pytest.raises(SettingsError, match="would be open to anyone"):
        Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_RUNS_DIR": "/srv/runs"})
    with pytest.raises(SettingsError, match="shorter than 16 characters"):
        Settings.from_env({"OPTIMAS_WEBHOOK_SECRET": "s", "OPTIMAS_DASHBOARD_RUNS_DIR": "/srv/runs",
                           "OPTIMAS_DASHBOARD_TOKEN": "short"})
