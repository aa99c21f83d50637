"""One context per job, as the webhook handlers have one per delivery: the worker's settings, Redis,
the GitHub App and the installation's client, the pull request's publisher, and a logger that names
the pull request. Jobs get small serializable arguments (repo, installation, PR) and build this once."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import redis
from github import Github
from rq import get_current_job

from bot.github_client import GitHubApp, app_from_env
from bot.publish import Publisher
from bot.settings import WorkerSettings

PR_LOCK_S = 60


@dataclass
class JobContext:
    settings: WorkerSettings
    conn: redis.Redis
    app: GitHubApp
    repo: str
    installation_id: int
    pr: int
    log: logging.LoggerAdapter = field(init=False)

    def __post_init__(self) -> None:
        self.log = logging.LoggerAdapter(logging.getLogger("bot.jobs"), {"pr": f"{self.repo}#{self.pr}"})

    @classmethod
    def create(cls, repo: str, installation_id: int, pr: int, conn: redis.Redis | None = None) -> JobContext:
        """The context of a job about `repo#pr`, from the worker's environment (WorkerSettings)."""
        ws = WorkerSettings.from_env()
        return cls(ws, conn or redis.Redis.from_url(ws.redis_url), app_from_env(), repo, installation_id, pr)

    def key(self, *parts: str) -> str:
        """A Redis key in the bot's namespace (OPTIMAS_KEY_PREFIX)."""
        return ":".join((self.settings.key_prefix, *parts))

    @property
    def pr_key(self) -> str:
        """The PR's current run (a job id)."""
        return self.key("pr", f"{self.repo}#{self.pr}")

    @contextlib.contextmanager
    def pr_lock(self) -> Iterator[None]:
        """Serializes the read, cancel, enqueue, record sequence of one PR across control workers."""
        with self.conn.lock(self.key("lock", "pr", f"{self.repo}#{self.pr}"), timeout=PR_LOCK_S,
                            blocking_timeout=PR_LOCK_S):
            yield

    @contextlib.contextmanager
    def installation_lock(self) -> Iterator[None]:
        """Serializes the count-then-enqueue of GPU jobs of one installation across control workers."""
        with self.conn.lock(self.key("lock", "installation", str(self.installation_id)), timeout=PR_LOCK_S,
                            blocking_timeout=PR_LOCK_S):
            yield

    @cached_property
    def client(self) -> Github:
        """The installation's PyGithub client."""
        return self.app.client(self.installation_id)

    @cached_property
    def publisher(self) -> Publisher:
        """Writes on the PR, serialized per installation across worker processes."""
        return Publisher.for_installation(
            self.app, self.installation_id, self.repo, self.pr, backoff_s=self.settings.write_backoff_s,
            author=f"{self.settings.app_slug}[bot]",
            lock=lambda: self.conn.lock(self.key("writes", str(self.installation_id)), timeout=120,
                                        blocking_timeout=600))

    def reply(self, body: str) -> None:
        """A reply on the PR, once per control job whatever its retries."""
        job = get_current_job()
        self.publisher.post_comment(body, key=f"job-{job.id}" if job else body[:64])
