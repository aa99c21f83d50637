"""A loopback HTTP server implementing the GitHub REST endpoints the bot uses, recording every
request, so tests drive the real PyGithub client. State (permissions, pull requests, files) is
plain data the test sets."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

# GitHub's sizes, in characters: a comment's or review's body, and a check run's output.summary
# (65,535: one less)
BODY_LIMIT = 65_536
SUMMARY_LIMIT = 65_535


def over_limits(method: str, path: str, data) -> str:
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


class FakeGitHub:
    def __init__(self):
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
        self.script: list[tuple[int, dict]] = []  # forced answers (status, body) for the next requests
        # (method, path regex, status, body, headers): the first matching request gets this answer
        self.faults: list[tuple[str, str, int, dict, dict]] = []
        # (method, path regex): the first matching write lands, then its answer is lost (502), as
        # when a proxy fails after GitHub has done the work
        self.lost_answers: list[tuple[str, str]] = []
        self.write_delay_s = 0.0  # slows POST/PATCH handling, to expose overlapping writes
        self.read_delay_s = 0.0  # slows GET handling, so that concurrent jobs meet at their next step
        self.vary_content_sha = False  # every read of a file gives a new blob SHA (the file keeps changing)
        self.content_reads = 0
        self.write_spans: list[tuple[str, float, float]] = []
        # Who the App's or workflow's writes are by, and who a token reads at GET /user (None: it may
        # not, as a workflow's GITHUB_TOKEN and an installation token may not)
        self.writer = "optimas[bot]"
        self.token_user: str | None = None
        self.manifest_codes: dict[str, dict] = {}  # registration code -> the App GitHub created (used once)
        self.labels: dict[str, dict[str, dict]] = {}  # repository -> label name -> label
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body, headers: dict | None = None):
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def _handle(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                data = json.loads(self.rfile.read(length) or b"null") if length else None
                url = urlparse(self.path)
                fake.requests.append({"method": method, "path": url.path, "json": data,
                                      "auth": self.headers.get("Authorization", "")})
                if fake.script:
                    status, body = fake.script.pop(0)
                    return self._send(status, body)
                for i, (m, pattern, status, body, headers) in enumerate(fake.faults):
                    if m == method and re.fullmatch(pattern, url.path):
                        del fake.faults[i]
                        return self._send(status, body, headers)
                t0 = time.monotonic()
                if method in ("POST", "PATCH") and fake.write_delay_s:
                    time.sleep(fake.write_delay_s)
                if method == "GET" and fake.read_delay_s:
                    time.sleep(fake.read_delay_s)
                status, body = fake.route(method, url.path, parse_qs(url.query), data)
                for i, (m, pattern) in enumerate(fake.lost_answers):
                    if m == method and re.fullmatch(pattern, url.path):
                        del fake.lost_answers[i]
                        status, body = 502, {"message": "Bad Gateway"}
                        break
                if method in ("POST", "PATCH"):
                    # recorded before the answer goes out: a client that has its answer finds its span here
                    fake.write_spans.append((url.path, t0, time.monotonic()))
                self._send(status, body)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PATCH(self):
                self._handle("PATCH")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
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

    def route(self, method: str, path: str, query: dict, data) -> tuple[int, dict]:
        too_long = over_limits(method, path, data)
        if too_long:
            return 422, {"message": "Validation Failed", "errors": [{"code": "custom", "message": too_long}]}
        if (m := re.fullmatch(r"/app-manifests/([^/]+)/conversions", path)) and method == "POST":
            app = self.manifest_codes.pop(m.group(1), None)
            return (201, app) if app else (404, {"message": "Not Found"})
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/check-runs", path)) and method == "POST":
            cid = len(self.check_runs) + 1
            self.check_runs[cid] = {"id": cid, **data, "url": f"{self.url}/repos/{m.group(1)}/check-runs/{cid}"}
            return 201, self.check_runs[cid]
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/check-runs/(\d+)", path):
            run = self.check_runs[int(m.group(2))]
            if method == "PATCH":
                run.update(data)
            return 200, run
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/commits/([0-9a-f]+)/check-runs", path):
            runs = [r for r in self.check_runs.values() if r["head_sha"] == m.group(2)
                    and query.get("check_name", [r["name"]]) == [r["name"]]]
            return 200, {"total_count": len(runs), "check_runs": runs}
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/commits/([0-9a-f]+)", path):
            files = [{"filename": f, "status": "modified"} for f in self.commit_files.get(m.group(2), [])]
            return 200, {"sha": m.group(2), "url": f"{self.url}/repos/{m.group(1)}/commits/{m.group(2)}",
                         "files": files}
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/commits", path):
            return 200, [{"sha": sha, "url": f"{self.url}/repos/{m.group(1)}/commits/{sha}"}
                         for sha in self.pr_commits.get(int(m.group(2)), [])]
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/files", path):
            return 200, self.pr_files.get(int(m.group(2)), [])
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews", path):
            if method == "POST":
                r = {"id": len(self.reviews) + 1, "commit_id": data.get("commit_id"), "body": data.get("body"),
                     "event": data.get("event"), "comments": data.get("comments", []), "state": "COMMENTED",
                     "user": {"login": self.writer}}
                self.reviews.append(r)
                return 200, r
            return 200, self.reviews
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)) and method == "GET":
            return 200, [c for c in self.comments if c["issue"] == int(m.group(2))]
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path):
            c = next(c for c in self.comments if c["id"] == int(m.group(2)))
            if method == "PATCH":
                c["body"] = data["body"]
            return 200, c
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/labels/([^/]+)", path)) and method == "GET":
            label = self.labels.get(m.group(1), {}).get(unquote(m.group(2)))
            return (200, label) if label else (404, {"message": "Not Found"})
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/labels", path)) and method == "POST":
            if data.get("name") in self.labels.get(m.group(1), {}):
                return 422, {"message": "Validation Failed", "errors": [{"code": "already_exists"}]}
            label = {"id": 1, "name": data["name"], "color": data.get("color"),
                     "description": data.get("description"), "url": f"{self.url}/repos/{m.group(1)}/labels/x"}
            self.labels.setdefault(m.group(1), {})[data["name"]] = label
            return 201, label
        if path == "/user" and method == "GET":
            if self.token_user is None:
                return 403, {"message": "Resource not accessible by integration"}
            return 200, {"login": self.token_user, "id": 7, "type": "User"}
        if m := re.fullmatch(r"/app/installations/(\d+)/access_tokens", path):
            expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 201, {"token": self.token(int(m.group(1))), "expires_at": expires}
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)", path):
            return 200, self.repo_json(m.group(1))
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/collaborators/([^/]+)/permission", path):
            perm = self.permissions.get(m.group(2))
            if perm is None:
                return 404, {"message": "Not Found"}
            return 200, {"permission": perm, "user": {"login": m.group(2)}}
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)", path):
            n = int(m.group(2))
            return 200, {"number": n, "title": "PR", "url": f"{self.url}/repos/{m.group(1)}/issues/{n}",
                         "pull_request": {"url": f"{self.url}/repos/{m.group(1)}/pulls/{n}"}}
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path)) and method == "POST":
            c = {"id": len(self.comments) + 1, "body": data["body"], "issue": int(m.group(2)),
                 "user": {"login": self.writer},
                 "url": f"{self.url}/repos/{m.group(1)}/issues/comments/{len(self.comments) + 1}"}
            self.comments.append(c)
            return 201, c
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", path):
            pr = self.pulls.get(int(m.group(2)))
            # GitHub counts the pull request's files (and lists at most 3,000 of them)
            return (200, {**pr, "changed_files": len(self.pr_files.get(int(m.group(2)), []))}) if pr else \
                (404, {"message": "Not Found"})
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/contents/(.+)", path):
            text = self.files.get(m.group(2))
            if text is None or query.get("ref") != ["main"]:
                return 404, {"message": "Not Found"}
            self.content_reads += 1
            version = f"-{self.content_reads}" if self.vary_content_sha else ""
            return 200, {"type": "file", "encoding": "base64", "name": m.group(2).split("/")[-1],
                         "path": m.group(2), "sha": f"sha-{abs(hash(text)) % 10**8}{version}",
                         "content": base64.b64encode(text.encode()).decode(),
                         "url": f"{self.url}/repos/{m.group(1)}/contents/{m.group(2)}"}
        return 404, {"message": f"no fake for {method} {path}"}

    def add_pull(self, repo: str, number: int, head_sha: str, head_repo: str | None = None, state: str = "open"):
        self.pulls[number] = {"number": number, "state": state, "url": f"{self.url}/repos/{repo}/pulls/{number}",
                              "head": {"sha": head_sha, "ref": "feature",
                                       "repo": self.repo_json(head_repo or repo)},
                              "base": {"sha": "base", "ref": "main", "repo": self.repo_json(repo)},
                              "labels": [{"name": "optimas"}]}
