"""The dashboard served by the App under /dashboard, behind authentication: a bearer token
(`Authorization: Bearer <OPTIMAS_DASHBOARD_TOKEN>`) or the identity header a reverse proxy sets
(OPTIMAS_DASHBOARD_USER_HEADER, e.g. X-Forwarded-User; the proxy must strip it from clients),
believed only on requests from the proxy's addresses (OPTIMAS_DASHBOARD_PROXY_ADDRESSES)."""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path

from flask import Flask, Response, request

from bot.settings import Settings
from runner.base.redaction import register_secret
from runner.dashboard.app import create_dashboard


def protected_dashboard(settings: Settings) -> Flask:
    """The dashboard app over the settings' runs folder; every request authenticated first."""
    if settings.dashboard_token:
        register_secret(settings.dashboard_token.decode())  # never in a log line or an error text
    app = create_dashboard(Path(settings.dashboard_runs_dir or "."))

    @app.before_request
    def authenticate() -> Response | None:
        if (settings.dashboard_user_header and request.headers.get(settings.dashboard_user_header, "").strip()
                and _from_proxy(request.remote_addr, settings)):
            return None
        given = request.headers.get("Authorization", "")
        if settings.dashboard_token and given.startswith("Bearer ") and hmac.compare_digest(
                given[7:].encode(), settings.dashboard_token):
            return None
        return Response("authentication required\n", status=401, mimetype="text/plain",
                        headers={"WWW-Authenticate": 'Bearer realm="optimas-dashboard"'})

    return app


def _from_proxy(address: str | None, settings: Settings) -> bool:
    """Whether a request comes straight from one of the reverse proxy's addresses."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in net for net in settings.dashboard_proxies)
