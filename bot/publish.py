"""Publishing on the pull request through PyGithub: a Check Run on the analysed head (queued ->
in_progress -> completed), one review per run (`commit_id` = the analysed SHA) with suggestion
comments, and one persistent summary comment found by a hidden marker and edited in place.

Writes go through one client per installation, which PyGithub paces (seconds_between_writes)
and retries on 5xx and rate limits (honouring Retry-After)."""

from __future__ import annotations

import contextlib
import time
from typing import Callable, ContextManager, TypeVar

from github import GithubException

from bot.github_client import GitHubApp
from bot.review import truncate

T = TypeVar("T")

MARKER = "<!-- optimas:summary -->"
MARKER_REVIEW = "<!-- optimas:review -->"
CHECK_NAME = "Optimas"


def retry_wait(e: GithubException) -> float | None:
    """Seconds to wait before retrying, for 5xx and rate limits (primary or secondary); -1 for
    "retry, no Retry-After given"; None when retrying would not help."""
    headers = {k.lower(): v for k, v in (e.headers or {}).items()}
    message = str((e.data or {}).get("message", "")).lower() if isinstance(e.data, dict) else ""
    if e.status in (500, 502, 503, 504) or e.status == 429 or (e.status == 403 and "rate limit" in message):
        try:
            return float(headers.get("retry-after", "")) if headers.get("retry-after") else -1.0
        except ValueError:
            return -1.0
    return None


class Publisher:
    def __init__(self, app: GitHubApp, installation_id: int, repo: str, pr: int, attempts: int = 5,
                 backoff_s: float = 2.0, lock: Callable[[], ContextManager] | None = None):
        self.gh = app.client(installation_id)
        self.repo = self.gh.get_repo(repo)
        self.pr = pr
        self.attempts = attempts
        self.backoff_s = backoff_s
        # Writes of one installation are serialized across worker processes (GitHub's guidance for
        # avoiding secondary rate limits): `lock` makes the shared lock, e.g. a Redis lock.
        self.lock = lock or contextlib.nullcontext

    def _write(self, call: Callable[[], T], already: Callable[[], T | None] = lambda: None) -> T:
        """A write, retried on 5xx and rate limits (honouring Retry-After); before each retry,
        `already` looks for the object in case the failed attempt landed, so nothing is posted twice."""
        for attempt in range(1, self.attempts):
            try:
                with self.lock():
                    return call()
            except GithubException as e:
                wait = retry_wait(e)
                if wait is None:
                    raise
                time.sleep(wait if wait >= 0 else self.backoff_s * 2 ** (attempt - 1))
                found = already()
                if found is not None:
                    return found
        with self.lock():
            return call()

    def start_check(self, head_sha: str) -> int:
        run = self._write(lambda: self.repo.create_check_run(name=CHECK_NAME, head_sha=head_sha, status="queued"))
        self._write(lambda: run.edit(status="in_progress", output={
            "title": "Profiling and optimizing", "summary": "Optimas is profiling this commit on a GPU."}))
        return run.id

    def complete_check(self, check_id: int, conclusion: str, title: str, summary: str) -> None:
        run = self.repo.get_check_run(check_id)
        self._write(lambda: run.edit(status="completed", conclusion=conclusion,
                                     output={"title": title[:255], "summary": truncate(summary)}))

    def head_sha(self) -> str:
        return self.repo.get_pull(self.pr).head.sha

    def changed_files(self) -> dict[str, str]:
        """The PR's files with their diff hunks (`patch`), for placing suggestions."""
        return {f.filename: f.patch or "" for f in self.repo.get_pull(self.pr).get_files()}

    def post_review(self, commit_sha: str, body: str, comments: list[dict]) -> int:
        """One review with every suggestion comment; a retried post that already landed is not posted twice."""
        pull = self.repo.get_pull(self.pr)

        def existing() -> int | None:
            return next((r.id for r in pull.get_reviews()
                         if r.commit_id == commit_sha and MARKER_REVIEW in (r.body or "")), None)

        found = existing()
        if found is not None:
            return found
        commit = self.repo.get_commit(commit_sha)
        return self._write(lambda: pull.create_review(commit=commit, body=truncate(body + "\n" + MARKER_REVIEW),
                                                      event="COMMENT", comments=comments).id, existing)

    def upsert_summary(self, body: str) -> int:
        """Edit the PR's Optimas summary comment in place, or create it: never a second one."""
        issue = self.repo.get_issue(self.pr)
        text = truncate(f"{MARKER}\n{body}")

        def existing():
            return next((c for c in issue.get_comments() if MARKER in (c.body or "")), None)

        found = existing()
        if found is not None:
            self._write(lambda: found.edit(text))
            return found.id
        return self._write(lambda: issue.create_comment(text), existing).id

