"""Publishing on the pull request through PyGithub: a Check Run on the analysed head (queued ->
in_progress -> completed), one review per run (`commit_id` = the analysed SHA) with suggestion
comments, and one persistent summary comment found by a hidden marker and edited in place.

Writes go through one client per installation, which PyGithub paces (seconds_between_writes)
and retries on 5xx and rate limits (honouring Retry-After)."""

from __future__ import annotations

from bot.github_client import GitHubApp
from bot.review import truncate

MARKER = "<!-- optimas:summary -->"
MARKER_REVIEW = "<!-- optimas:review -->"
CHECK_NAME = "Optimas"


class Publisher:
    def __init__(self, app: GitHubApp, installation_id: int, repo: str, pr: int):
        self.gh = app.client(installation_id)
        self.repo = self.gh.get_repo(repo)
        self.pr = pr

    def start_check(self, head_sha: str) -> int:
        run = self.repo.create_check_run(name=CHECK_NAME, head_sha=head_sha, status="queued")
        run.edit(status="in_progress", output={"title": "Profiling and optimizing",
                                               "summary": "Optimas is profiling this commit on a GPU."})
        return run.id

    def complete_check(self, check_id: int, conclusion: str, title: str, summary: str) -> None:
        self.repo.get_check_run(check_id).edit(status="completed", conclusion=conclusion,
                                               output={"title": title[:255], "summary": truncate(summary)})

    def head_sha(self) -> str:
        return self.repo.get_pull(self.pr).head.sha

    def changed_files(self) -> dict[str, str]:
        """The PR's files with their diff hunks (`patch`), for placing suggestions."""
        return {f.filename: f.patch or "" for f in self.repo.get_pull(self.pr).get_files()}

    def post_review(self, commit_sha: str, body: str, comments: list[dict]) -> int:
        """One review with every suggestion comment; a retried post that already landed is not posted twice."""
        pull = self.repo.get_pull(self.pr)
        for review in pull.get_reviews():
            if review.commit_id == commit_sha and MARKER_REVIEW in (review.body or ""):
                return review.id
        review = pull.create_review(commit=self.repo.get_commit(commit_sha),
                                    body=truncate(body + "\n" + MARKER_REVIEW), event="COMMENT", comments=comments)
        return review.id

    def upsert_summary(self, body: str) -> int:
        """Edit the PR's Optimas summary comment in place, or create it: never a second one."""
        issue = self.repo.get_issue(self.pr)
        text = truncate(f"{MARKER}\n{body}")
        for c in issue.get_comments():
            if MARKER in (c.body or ""):
                c.edit(text)
                return c.id
        return issue.create_comment(text).id

