"""The GitHub App's manifest (least privilege) and its registration from it.

GitHub registers an App from a manifest posted by a form in the browser, then redirects to the
manifest's `redirect_url` with a one-hour `code`; exchanging the code gives the App's id, private
key and webhook secret.

    python -m bot.manifest form --webhook-url https://optimas.example.org/webhook --name "Optimas for ACME" \
        > register.html
    # open register.html, press the button, create the App on GitHub; copy `code` from the address
    python -m bot.manifest convert CODE   # secrets/app.pem, secrets/webhook-secret, secrets/app.env

Secrets go to files readable by their owner only, never to the terminal.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlparse

import requests

from runner.base.errors import OptimasError

# What the App does, and no more: read the code, write reviews, check runs and comments.
PERMISSIONS = {"contents": "read", "pull_requests": "write", "checks": "write", "issues": "write",
               "metadata": "read"}
EVENTS = ["pull_request", "issue_comment"]
DEFAULT_API = "https://api.github.com"
DEFAULT_WEB = "https://github.com"


class ManifestError(OptimasError):
    exit_code = 2


def app_manifest(webhook_url: str, name: str, redirect_url: str = "http://localhost:8765/",
                 homepage: str | None = None, public: bool = False) -> dict:
    """The manifest GitHub registers the App from. `name` must be unique on GitHub (the operator's
    own, e.g. "Optimas for ACME"); the homepage defaults to the webhook's host, the operator's
    deployment, never a github.com/apps page that may be someone else's."""
    u = urlparse(webhook_url)
    local = u.hostname in ("localhost", "127.0.0.1")
    if not u.hostname or not (u.scheme == "https" or (u.scheme == "http" and local)):
        raise ManifestError(f"--webhook-url {webhook_url!r}: expected the https:// URL GitHub will deliver "
                            "webhooks to (the receiver's /webhook, behind TLS)")
    if not name.strip() or len(name) > 34:
        raise ManifestError(f"--name {name!r}: expected the App's name on GitHub, 1 to 34 characters, unique there "
                            "(e.g. 'Optimas for ACME')")
    if u.username or u.password:
        raise ManifestError("--webhook-url: credentials in the URL would be published with the App; GitHub signs "
                            "deliveries with the webhook secret instead")
    homepage = homepage or f"{u.scheme}://{u.hostname}{f':{u.port}' if u.port else ''}/"
    return {"name": name, "url": homepage, "public": public, "redirect_url": redirect_url,
            "hook_attributes": {"url": webhook_url, "active": True},
            "default_permissions": dict(PERMISSIONS), "default_events": list(EVENTS)}


def registration_form(manifest: dict, org: str | None = None, web_url: str = DEFAULT_WEB) -> str:
    """An HTML page whose button posts the manifest to GitHub's App registration page."""
    target = (f"{web_url}/organizations/{quote(org)}/settings/apps/new" if org
              else f"{web_url}/settings/apps/new")
    value = html.escape(json.dumps(manifest), quote=True)
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><title>Register {html.escape(manifest["name"])}'
            f'</title></head>\n<body>\n<form action="{html.escape(target)}" method="post">\n'
            f'<input type="hidden" name="manifest" value="{value}">\n'
            f'<button type="submit">Register the {html.escape(manifest["name"])} GitHub App</button>\n'
            "</form>\n</body></html>\n")


def convert(code: str, out: Path, api_url: str = DEFAULT_API, timeout_s: float = 30.0) -> dict[str, Path]:
    """Exchange a registration code for the App's credentials, written under `out`: app.pem and
    webhook-secret (mode 0600) and app.env (the App's id and slug, and where the key is)."""
    targets = {"key": out / "app.pem", "secret": out / "webhook-secret", "env": out / "app.env"}
    taken = [str(p) for p in targets.values() if p.exists()]
    if taken:
        raise ManifestError(f"{', '.join(taken)} exist already; choose another --out (nothing was exchanged)")
    if not code.isalnum():
        raise ManifestError(f"code {code!r}: expected the `code` GitHub put in the redirect URL (letters and digits)")
    try:
        r = requests.post(f"{api_url.rstrip('/')}/app-manifests/{code}/conversions", timeout=timeout_s,
                          headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"})
    except requests.RequestException as e:
        raise OptimasError(f"GitHub could not be reached at {api_url} ({type(e).__name__})") from None
    if r.status_code in (404, 422):
        raise ManifestError("GitHub does not know this code: codes work once and for one hour; register again")
    if r.status_code != 201:
        raise OptimasError(f"GitHub answered {r.status_code} to the code exchange; try again")
    app = r.json()
    missing = [k for k in ("id", "slug", "pem", "webhook_secret") if not app.get(k)]
    if missing:
        raise OptimasError(f"GitHub's answer lacks {', '.join(missing)}; register again")
    out.mkdir(parents=True, exist_ok=True)
    env = (f"OPTIMAS_APP_ID={app['id']}\nOPTIMAS_APP_SLUG={app['slug']}\n"
           f"OPTIMAS_PRIVATE_KEY_PATH={targets['key'].resolve()}\n")
    for path, text in ((targets["key"], app["pem"]), (targets["secret"], app["webhook_secret"]),
                       (targets["env"], env)):
        _write_private(path, text)
    return targets


def _write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only, whole or not at all."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bot.manifest", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name, helptext in (("print", "print the manifest as JSON"),
                           ("form", "print an HTML page that registers the App from the manifest")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--webhook-url", required=True, help="where GitHub delivers webhooks (https://.../webhook)")
        p.add_argument("--name", required=True,
                       help="the App's name on GitHub, unique there: your own, e.g. 'Optimas for ACME'")
        p.add_argument("--homepage", default=None, help="the App's homepage (default: the webhook URL's host)")
        p.add_argument("--redirect-url", default="http://localhost:8765/",
                       help="where GitHub sends the registration code (any page: the code is in its address)")
        p.add_argument("--public", action="store_true", help="let other accounts install it (default: private)")
        if name == "form":
            p.add_argument("--org", default=None, help="register it for this organization instead of your account")
    p = sub.add_parser("convert", help="exchange the registration code for the App's credentials")
    p.add_argument("code")
    p.add_argument("--out", type=Path, default=Path("secrets"),
                   help="folder for app.pem, webhook-secret, app.env (default: secrets/, which compose.yaml "
                        "reads)")
    p.add_argument("--api-url", default=os.environ.get("OPTIMAS_GITHUB_API_URL") or DEFAULT_API)
    args = ap.parse_args(argv)
    try:
        if args.command == "convert":
            files = convert(args.code, args.out, args.api_url)
            print(f"registered: the App's key in {files['key']}, its webhook secret in {files['secret']}, its id "
                  f"in {files['env']} (all readable by you only).\nNext, with Docker (docs/github-app.md, steps 4-5):"
                  f"\n  (umask 077; echo OPTIMAS_DASHBOARD_TOKEN=$(openssl rand -hex 32) >> .env); chmod 600 .env"
                  f"   # and the model's key, e.g. OPENAI_API_KEY=... (.env: readable by you only)"
                  f"\n  sudo chown 10001 {files['key']} {files['secret']}   # the containers run as user 10001"
                  f"\n  docker compose up --build"
                  f"\nWithout Docker: the receiver with OPTIMAS_WEBHOOK_SECRET_PATH={files['secret']}, the workers "
                  f"with the variables of {files['env']} (docs/github-app.md, Running without Docker). Then install "
                  f"the App on a repository.")
            return 0
        manifest = app_manifest(args.webhook_url, args.name, args.redirect_url, args.homepage, public=args.public)
        if args.command == "print":
            print(json.dumps(manifest, indent=2))
        else:
            print(registration_form(manifest, args.org), end="")
        return 0
    except OptimasError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
