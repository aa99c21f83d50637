"""Publishing on the pull request through PyGithub: a Check Run on the analysed head (queued ->
in_progress -> completed), one review per run (`commit_id` = the analysed SHA) with suggestion
comments, one persistent summary comment found by a hidden marker and edited in place, and
replies marked with the job they answer.

Every write is idempotent. The HTTP layer never resends a POST or PATCH (GitHubApp's client
retries reads only): a write whose answer is lost may have landed, so before each retry the
publisher looks for what it wrote (the check run's `external_id`, the hidden marker of a comment or
review) and only writes again when it is not there. Every outgoing text passes through
runner.base.redaction.public: secrets masked, the worker host's folders hidden."""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import time
from typing import TYPE_CHECKING, Any, Callable, ContextManager, TypeVar

import requests
from github import Github, GithubException

from bot.github_client import GitHubApp
from bot.review import MAX_BODY, plan_review, review_body, truncate
from runner.base.redaction import public

if TYPE_CHECKING:
    from bot.outcome import Outcome

T = TypeVar("T")
log = logging.getLogger(__name__)

MARKER = "<!-- optimas:summary -->"
MARKER_REVIEW = "<!-- optimas:review -->"
CHECK_NAME = "Optimas"
MAX_LISTED_FILES = 3000  # what GitHub lists of a pull request's files, at most
MAX_COMMITS_READ = 20  # of a pull request's commits read to order its programs by recency (one request each)
ROOM = MAX_BODY - 200  # what a body may use before its markers are appended
CHECK_SUMMARY = 65_535  # a check run's output.summary: one character less than a comment


def code_span(text: str) -> str:
    """`text` as inline code whatever backticks it holds (a kernel's name comes from the pull
    request: a backtick in it must not end the span and let mentions or links through). Line
    breaks become spaces: a blank line would end the span, and its paragraph, early. The text is
    made public (redacted, host paths hidden) before its fence is chosen: done afterwards, a path
    removed between two runs of backticks would join them into a run that ends the span early."""
    text = re.sub(r"\s*[\r\n]+\s*", " ", public(text)).strip()
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    return f"{fence} {text} {fence}" if run else f"`{text}`"


def code_block(text: str) -> str:
    """`text` as a fenced block, the fence longer than any run of backticks in it: what the pull
    request's code printed, shown as text and never as Markdown (no mentions, links or images)."""
    text = public(text)
    run = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (run + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def public_markdown(text: str) -> str:
    """Markdown that Optimas built, as it may leave for GitHub: `public()` once more over the whole
    (its pieces from the pull request were made public before they were fenced), and when that
    changed a run of backticks or a line that starts with one, so that a span or block could end
    elsewhere than where it was written, the whole text shown as one code block instead."""
    out = public(text)
    if _fences(out) != _fences(text):
        log.warning("redaction changed the Markdown's code fences: the text is published as a code block")
        return code_block(out)
    return out


def _fences(text: str) -> tuple[list[str], int]:
    return re.findall(r"`+", text), len(re.findall(r"(?m)^ {0,3}`", text))


def _tagged(body: str | None, tag: str) -> bool:
    """Whether a body of ours is the one `tag` marks: the summary's marker is its first line, the
    others end it. Anywhere else it is text that came from the pull request (a failure report
    quoting the code's output), and the summary must not be written over that comment."""
    text = (body or "").strip()
    return text.startswith(tag) if tag == MARKER else text.endswith(tag)


def marker(kind: str, key: str) -> str:
    """A hidden marker that identifies one comment or review (e.g. the failure report of a job)."""
    return f"<!-- optimas:{kind}:{key} -->"


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
    """Writes on one pull request through a PyGithub client: the App's installation client
    (`for_installation`), or a workflow's token client in the GitHub Action (`token_client`)."""

    def __init__(self, gh: Github, repo: str, pr: int, attempts: int = 5, backoff_s: float = 2.0,
                 lock: Callable[[], ContextManager] | None = None, author: str | None = None):
        self.gh = gh
        # Whose comments and reviews are ours (the App's `<slug>[bot]`): a marker copied into someone
        # else's comment must not make the bot edit that comment, or skip a post as already made.
        self.author = author
        self.repo = self.gh.get_repo(repo)
        self.pr = pr
        self.attempts = attempts
        self.backoff_s = backoff_s
        # Writes of one installation are serialized across worker processes (GitHub's guidance for
        # avoiding secondary rate limits): `lock` makes the shared lock, e.g. a Redis lock.
        self.lock = lock or contextlib.nullcontext

    @classmethod
    def for_installation(cls, app: GitHubApp, installation_id: int, repo: str, pr: int, **kw: Any) -> Publisher:
        """The publisher of one App installation."""
        return cls(app.client(installation_id), repo, pr, **kw)

    def _write(self, call: Callable[[], T], already: Callable[[], T | None] = lambda: None) -> T:
        """A write, retried on 5xx, rate limits (honouring Retry-After) and lost answers; before each
        retry, `already` looks for the object in case the failed attempt landed, so nothing is
        posted twice."""
        for attempt in itertools.count(1):
            try:
                with self.lock():
                    return call()
            except GithubException as e:
                wait = retry_wait(e)
                if wait is None or attempt == self.attempts:
                    raise
            except (requests.ConnectionError, requests.Timeout):
                if attempt == self.attempts:
                    raise
                wait = -1.0
            log.info("write to %s failed (attempt %d of %d); looking for it before retrying", self.repo.full_name,
                     attempt, self.attempts)
            time.sleep(wait if wait >= 0 else self.backoff_s * 2 ** (attempt - 1))
            found = already()
            if found is not None:
                return found

    def find_check(self, head_sha: str, external_id: str) -> Any | None:
        """The check run of this name and external id on `head_sha`, if one was created."""
        runs = self.repo.get_commit(head_sha).get_check_runs(check_name=CHECK_NAME)
        return next((r for r in runs if r.external_id == external_id), None)

    def start_check(self, head_sha: str, external_id: str) -> int:
        """Create (or find, when a lost answer had created it) the run's check run, in progress."""
        run = self.find_check(head_sha, external_id) or self._write(
            lambda: self.repo.create_check_run(name=CHECK_NAME, head_sha=head_sha, status="queued",
                                               external_id=external_id),
            lambda: self.find_check(head_sha, external_id))
        if run.status != "completed":
            self._write(lambda: run.edit(status="in_progress", output={
                "title": "Profiling and optimizing", "summary": "Optimas is profiling this commit on a GPU."}))
        return run.id

    def complete_check(self, check_id: int, conclusion: str, title: str, summary: str) -> None:
        run = self.repo.get_check_run(check_id)
        output = {"title": public(title)[:255], "summary": truncate(public_markdown(summary), CHECK_SUMMARY)}
        self._write(lambda: run.edit(status="completed", conclusion=conclusion, output=output))

    def head_sha(self) -> str:
        return self.repo.get_pull(self.pr).head.sha

    def changed_paths(self) -> list[str] | None:
        """Every path the PR adds, changes, removes or renames (both names of a rename); None when
        GitHub lists only part of them (it lists at most 3,000 files of a pull request) or none."""
        pull = self.repo.get_pull(self.pr)
        if pull.changed_files > MAX_LISTED_FILES:
            return None
        out: dict[str, None] = {}
        for f in pull.get_files():
            out[f.filename] = None
            if f.previous_filename:
                out[f.previous_filename] = None
        return list(out) or None

    def paths_newest_first(self, commits: int = MAX_COMMITS_READ) -> list[str]:
        """The paths the pull request's last `commits` commits change, those of the newest commit
        first: which of several programs a pull request touches it changed most recently."""
        shas = [c.sha for c in self.repo.get_pull(self.pr).get_commits()]  # oldest first
        out: dict[str, None] = {}
        for sha in reversed(shas[-commits:]):
            for f in self.repo.get_commit(sha).files:
                out.setdefault(f.filename)
        return list(out)

    def changed_files(self) -> dict[str, str]:
        """The PR's files with their diff hunks (`patch`), for placing suggestions."""
        return {f.filename: f.patch or "" for f in self.repo.get_pull(self.pr).get_files()}

    def post_review(self, commit_sha: str, body: str, comments: list[dict], run_key: str) -> int:
        """One review with every suggestion comment per run (`run_key`); a post whose answer was lost
        is found by its marker and not posted twice."""
        pull = self.repo.get_pull(self.pr)
        tag = marker("review", run_key)

        def existing() -> int | None:
            return next((r.id for r in pull.get_reviews() if _tagged(r.body, tag) and self._ours(r)), None)

        found = existing()
        if found is not None:
            return found
        commit = self.repo.get_commit(commit_sha)
        safe = [{**c, "body": public_markdown(c["body"])} for c in comments]
        text = truncate(public_markdown(body), ROOM) + f"\n{MARKER_REVIEW}\n{tag}"
        return self._write(lambda: pull.create_review(commit=commit, body=text, event="COMMENT", comments=safe).id,
                           existing)

    def _ours(self, item: Any) -> bool:
        return self.author is None or (item.user is not None and item.user.login == self.author)

    def _comment_with(self, tag: str) -> Any | None:
        return next((c for c in self.repo.get_issue(self.pr).get_comments() if _tagged(c.body, tag) and self._ours(c)),
                    None)

    def upsert_summary(self, body: str) -> int:
        """Edit the PR's Optimas summary comment in place, or create it: never a second one."""
        issue = self.repo.get_issue(self.pr)
        text = truncate(f"{MARKER}\n{public_markdown(body)}")
        found = self._comment_with(MARKER)
        if found is not None:
            self._write(lambda: found.edit(text))
            return found.id
        return self._write(lambda: issue.create_comment(text), lambda: self._comment_with(MARKER)).id

    def post_comment(self, body: str, key: str) -> int:
        """A reply on the PR, posted once per `key` (e.g. the job it answers), whatever the retries."""
        tag = marker("reply", key)
        found = self._comment_with(tag)
        if found is not None:
            return found.id
        issue = self.repo.get_issue(self.pr)
        return self._write(lambda: issue.create_comment(truncate(public_markdown(body), ROOM) + f"\n{tag}"),
                           lambda: self._comment_with(tag)).id


def publish_outcome(pub: Publisher, check: int, outcome: Outcome, head_sha: str, summary: str, run_key: str,
                    suggest: bool = True) -> int:
    """One review with the outcome's suggestions (where it has any and `suggest`), the summary
    comment, and the completed check run; returns how many suggestions were posted. Each write is
    the publisher's, idempotent under a lost answer (keyed by `run_key`)."""
    posted = 0
    if outcome.postable and suggest:
        comments, outside = plan_review(outcome.edits, pub.changed_files())
        diff_outside = "\n".join(e.diff for e in outside)
        pub.post_review(head_sha, review_body(outcome.headline, diff_outside), comments, run_key)
        posted = len(comments)
    pub.upsert_summary(summary)
    pub.complete_check(check, "success" if outcome.postable else "neutral", outcome.headline, summary)
    return posted
