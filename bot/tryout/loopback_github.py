"""A loopback GitHub for trying the App locally (`python -m bot.tryout`) and for the tests: an HTTP
server on 127.0.0.1 that speaks the REST endpoints the App uses, so the real PyGithub client talks to
it, and keeps what the App wrote (check runs, comments, reviews, labels) as plain data.

It is no part of the App in production: nothing but the try-out (and tests/github_server.py, which
adds fault injection for the tests) imports it, and it listens on the loopback interface only. It
checks no credentials: anything that reaches 127.0.0.1 may read and write its state.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

# GitHub's sizes, in characters: a comment's or review's body, and a check run's output.summary
# (65,535: one less)
BODY_LIMIT = 65_536
SUMMARY_LIMIT = 65_535

Answer = tuple[int, Any]
NOT_FOUND: Answer = (404, {"message": "Not Found"})


def over_limits(method: str, path: str, data: Any) -> str:
    """What of a write GitHub refuses as too long ("" when nothing): a comment, a review and its
    comments, a check run's summary."""
    if method not in ("POST", "PATCH") or not isinstance(data, dict):
        return ""
    bodies = [data.get("body")] + [c.get("body") for c in data.get("comments") or [] if isinstance(c, dict)]
    if any(isinstance(b, str) and len(b) > BODY_LIMIT for b in bodies):
        return f"body is too long (maximum is {BODY_LIMIT} characters)"
    summary = (data.get("output") or {}).get("summary") if "/check-runs" in path else None
    if isinstance(summary, str) and len(summary) > SUMMARY_LIMIT:
        return f"output.summary is too long (maximum is {SUMMARY_LIMIT} characters)"
    return ""


def _handler_class(github: LoopbackGitHub) -> type[BaseHTTPRequestHandler]:
    """The request handler of `github`'s server: JSON in, `github.answer` out."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = json.loads(self.rfile.read(length) or b"null") if length else None
            url = urlparse(self.path)
            github.requests.append({"method": method, "path": url.path, "json": data,
                                    "auth": self.headers.get("Authorization", "")})
            self.send(*github.answer(method, url.path, parse_qs(url.query), data))

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

    return Handler


class LoopbackGitHub:
    """GitHub's REST API as the App uses it, on 127.0.0.1 (a free port: `url`); use it as a context
    manager. Its state (who may write, the pull requests, the default branch's files) is plain data
    set before the App asks; what the App writes lands in `check_runs`, `comments`, `reviews`, `labels`.
    Every request is recorded in `requests`."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.permissions: dict[str, str] = {}
        self.pulls: dict[int, dict] = {}
        self.files: dict[str, str] = {}  # path on the default branch -> text
        self.comments: list[dict] = []
        self.check_runs: dict[int, dict] = {}
        self.reviews: list[dict] = []
        self.pr_files: dict[int, list[dict]] = {}
        self.pr_commits: dict[int, list[str]] = {}  # a pull request's commits, oldest first
        self.commit_files: dict[str, list[str]] = {}  # a commit's changed paths
        # Who the App's or workflow's writes are by, and who a token reads at GET /user (None: it may
        # not, as a workflow's GITHUB_TOKEN and an installation token may not)
        self.writer = "optimas[bot]"
        self.token_user: str | None = None
        self.manifest_codes: dict[str, dict] = {}  # registration code -> the App GitHub created (used once)
        self.labels: dict[str, dict[str, dict]] = {}  # repository -> label name -> label
        self.content_reads = 0
        self.lock = threading.Lock()  # held while a request changes the state
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> LoopbackGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def token(installation_id: int) -> str:
        """The installation token this server mints: shaped like GitHub's (ghs_ and 36 characters)."""
        return "ghs_" + f"{installation_id:04d}Secr3tTok3nValue0123456789abcdef"[:36]

    def repo_json(self, full: str) -> dict:
        owner, name = full.split("/")
        return {"id": 1, "name": name, "full_name": full, "default_branch": "main", "owner": {"login": owner},
                "url": f"{self.url}/repos/{full}"}

    def add_pull(self, repo: str, number: int, head_sha: str, head_repo: str | None = None,
                 state: str = "open") -> None:
        """An open pull request `number` of `repo` (labelled `optimas`) whose head is `head_sha`."""
        self.pulls[number] = {"number": number, "state": state, "url": f"{self.url}/repos/{repo}/pulls/{number}",
                              "head": {"sha": head_sha, "ref": "feature",
                                       "repo": self.repo_json(head_repo or repo)},
                              "base": {"sha": "base", "ref": "main", "repo": self.repo_json(repo)},
                              "labels": [{"name": "optimas"}]}

    def answer(self, method: str, path: str, query: dict[str, list[str]], data: Any) -> tuple[int, Any, dict]:
        """The answer to one request: (status, JSON body, extra headers). Subclasses put faults here."""
        with self.lock:
            return (*self.route(method, path, query, data), {})

    def content_sha(self, text: str) -> str:
        """The blob SHA a read of a file with this text shows."""
        return f"sha-{abs(hash(text)) % 10**8}"

    def route(self, method: str, path: str, query: dict[str, list[str]], data: Any) -> Answer:
        """GitHub's answer to `method path` from the state: the first route that matches."""
        too_long = over_limits(method, path, data)
        if too_long:
            return 422, {"message": "Validation Failed", "errors": [{"code": "custom", "message": too_long}]}
        for want, pattern, handle in self._routes():
            if want in (None, method) and (m := re.fullmatch(pattern, path)):
                return handle(method, m, query, data)
        return 404, {"message": f"no fake for {method} {path}"}

    def _routes(self) -> list[tuple[str | None, str, Callable[[str, re.Match, dict, Any], Answer]]]:
        """(method, or None for any; path pattern; handler), in the order they are tried."""
        repo = r"/repos/([^/]+/[^/]+)"
        return [
            ("POST", r"/app-manifests/([^/]+)/conversions", self._manifest),
            ("POST", repo + r"/check-runs", self._create_check_run),
            (None, repo + r"/check-runs/(\d+)", self._check_run),
            (None, repo + r"/commits/([0-9a-f]+)/check-runs", self._check_runs_of),
            (None, repo + r"/commits/([0-9a-f]+)", self._commit),
            (None, repo + r"/pulls/(\d+)/commits", self._pull_commits),
            (None, repo + r"/pulls/(\d+)/files", lambda _, m, q, d: (200, self.pr_files.get(int(m.group(2)), []))),
            (None, repo + r"/pulls/(\d+)/reviews", self._reviews),
            ("GET", repo + r"/issues/(\d+)/comments",
             lambda _, m, q, d: (200, [c for c in self.comments if c["issue"] == int(m.group(2))])),
            (None, repo + r"/issues/comments/(\d+)", self._comment),
            ("GET", repo + r"/labels/([^/]+)", self._label),
            ("POST", repo + r"/labels", self._create_label),
            ("GET", r"/user", self._user),
            (None, r"/app/installations/(\d+)/access_tokens", self._access_token),
            (None, repo, lambda _, m, q, d: (200, self.repo_json(m.group(1)))),
            (None, repo + r"/collaborators/([^/]+)/permission", self._permission),
            (None, repo + r"/issues/(\d+)", self._issue),
            ("POST", repo + r"/issues/(\d+)/comments", self._create_comment),
            (None, repo + r"/pulls/(\d+)", self._pull),
            (None, repo + r"/contents/(.+)", self._contents),
        ]

    def _manifest(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        app = self.manifest_codes.pop(m.group(1), None)
        return (201, app) if app else NOT_FOUND

    def _create_check_run(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        cid = len(self.check_runs) + 1
        self.check_runs[cid] = {"id": cid, **data, "url": f"{self.url}/repos/{m.group(1)}/check-runs/{cid}"}
        return 201, self.check_runs[cid]

    def _check_run(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        run = self.check_runs[int(m.group(2))]
        if method == "PATCH":
            run.update(data)
        return 200, run

    def _check_runs_of(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        runs = [r for r in self.check_runs.values() if r["head_sha"] == m.group(2)
                and query.get("check_name", [r["name"]]) == [r["name"]]]
        return 200, {"total_count": len(runs), "check_runs": runs}

    def _commit(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        files = [{"filename": f, "status": "modified"} for f in self.commit_files.get(m.group(2), [])]
        return 200, {"sha": m.group(2), "url": f"{self.url}/repos/{m.group(1)}/commits/{m.group(2)}", "files": files}

    def _pull_commits(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        return 200, [{"sha": sha, "url": f"{self.url}/repos/{m.group(1)}/commits/{sha}"}
                     for sha in self.pr_commits.get(int(m.group(2)), [])]

    def _reviews(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        if method == "POST":
            r = {"id": len(self.reviews) + 1, "commit_id": data.get("commit_id"), "body": data.get("body"),
                 "event": data.get("event"), "comments": data.get("comments", []), "state": "COMMENTED",
                 "user": {"login": self.writer}}
            self.reviews.append(r)
            return 200, r
        return 200, self.reviews

    def _comment(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        c = next((c for c in self.comments if c["id"] == int(m.group(2))), None)
        if c is None:
            return NOT_FOUND
        if method == "PATCH":
            c["body"] = data["body"]
        return 200, c

    def _label(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        label = self.labels.get(m.group(1), {}).get(unquote(m.group(2)))
        return (200, label) if label else NOT_FOUND

    def _create_label(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        if data.get("name") in self.labels.get(m.group(1), {}):
            return 422, {"message": "Validation Failed", "errors": [{"code": "already_exists"}]}
        label = {"id": 1, "name": data["name"], "color": data.get("color"),
                 "description": data.get("description"), "url": f"{self.url}/repos/{m.group(1)}/labels/x"}
        self.labels.setdefault(m.group(1), {})[data["name"]] = label
        return 201, label

    def _user(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        if self.token_user is None:
            return 403, {"message": "Resource not accessible by integration"}
        return 200, {"login": self.token_user, "id": 7, "type": "User"}

    def _access_token(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return 201, {"token": self.token(int(m.group(1))), "expires_at": expires}

    def _permission(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        perm = self.permissions.get(m.group(2))
        if perm is None:
            return NOT_FOUND
        return 200, {"permission": perm, "user": {"login": m.group(2)}}

    def _issue(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        n = int(m.group(2))
        return 200, {"number": n, "title": "PR", "url": f"{self.url}/repos/{m.group(1)}/issues/{n}",
                     "pull_request": {"url": f"{self.url}/repos/{m.group(1)}/pulls/{n}"}}

    def _create_comment(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        c = {"id": len(self.comments) + 1, "body": data["body"], "issue": int(m.group(2)),
             "user": {"login": self.writer},
             "url": f"{self.url}/repos/{m.group(1)}/issues/comments/{len(self.comments) + 1}"}
        self.comments.append(c)
        return 201, c

    def _pull(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        pr = self.pulls.get(int(m.group(2)))
        # GitHub counts the pull request's files (and lists at most 3,000 of them)
        return (200, {**pr, "changed_files": len(self.pr_files.get(int(m.group(2)), []))}) if pr else NOT_FOUND

    def _contents(self, method: str, m: re.Match, query: dict, data: Any) -> Answer:
        text = self.files.get(m.group(2))
        if text is None or query.get("ref") != ["main"]:
            return NOT_FOUND
        self.content_reads += 1
        return 200, {"type": "file", "encoding": "base64", "name": m.group(2).split("/")[-1],
                     "path": m.group(2), "sha": self.content_sha(text),
                     "content": base64.b64encode(text.encode()).decode(),
                     "url": f"{self.url}/repos/{m.group(1)}/contents/{m.group(2)}"}
