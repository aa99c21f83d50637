"""Webhook deliveries as GitHub sends them, for the try-out: a `pull_request.labeled` payload,
signed with the webhook secret (X-Hub-Signature-256), posted to the receiver."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import urllib.error
import urllib.request
import uuid
from typing import Any

SENDER = "Codertocat"  # the maintainer who labels the pull request (write access on the loopback GitHub)
INSTALLATION_ID = 1


def labeled_payload(repo: str, pull: int, head_sha: str, label: str = "optimas", sender: str = SENDER) -> dict:
    """The fields of GitHub's pull_request.labeled payload the App reads: `sender` added `label` to
    pull request `pull` of `repo`, whose head is `head_sha`."""
    owner, name = repo.split("/")
    repository = {"id": 1, "name": name, "full_name": repo, "default_branch": "main", "private": False,
                  "owner": {"login": owner, "type": "User"}}
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"action": "labeled", "number": pull,
            "pull_request": {"number": pull, "state": "open", "title": "Say what the matmul kernel does",
                             "updated_at": now, "user": {"login": sender, "type": "User"},
                             "labels": [{"name": label}],
                             "head": {"sha": head_sha, "ref": "feature", "repo": repository},
                             "base": {"ref": "main", "repo": repository}},
            "label": {"name": label}, "repository": repository, "installation": {"id": INSTALLATION_ID},
            "sender": {"login": sender, "type": "User"}}


def deliver(webhook_url: str, secret: bytes, event: str, payload: dict[str, Any]) -> tuple[int, str]:
    """POST `payload` as GitHub delivers `event`, signed with `secret`: the receiver's status and body."""
    raw = json.dumps(payload).encode()
    request = urllib.request.Request(webhook_url, data=raw, method="POST", headers={
        "Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()})
    try:
        with urllib.request.urlopen(request, timeout=15) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
