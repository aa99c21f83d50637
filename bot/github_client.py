"""GitHub App authentication and the few API calls the bot makes, through PyGithub.

The app authenticates with an RS256 JWT (PyJWT; issued-at backdated 60 s, 5-minute expiry) and
acts through installation access tokens, which PyGithub caches and renews shortly before expiry.
The API base URL is configurable (GitHub Enterprise Server: https://HOST/api/v3). The private key
comes from a file path or an environment variable, never from the repository.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from github import Auth, Github, GithubException, GithubRetry

from runner.base.errors import OptimasError
from runner.base.redaction import register_secret

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


class GitHubAppError(OptimasError):
    exit_code = 2


def private_key_from_env(env: dict[str, str] | None = None) -> str:
    """OPTIMAS_PRIVATE_KEY (the PEM text) or OPTIMAS_PRIVATE_KEY_PATH (a file holding it)."""
    e = os.environ if env is None else env
    if e.get("OPTIMAS_PRIVATE_KEY"):
        return e["OPTIMAS_PRIVATE_KEY"]
    path = e.get("OPTIMAS_PRIVATE_KEY_PATH")
    if not path:
        raise GitHubAppError("set OPTIMAS_PRIVATE_KEY (PEM text) or OPTIMAS_PRIVATE_KEY_PATH (a .pem file): the "
                             "GitHub App's private key")
    try:
        return Path(path).read_text()
    except OSError as e:
        raise GitHubAppError(f"OPTIMAS_PRIVATE_KEY_PATH={path}: cannot read it ({e.strerror})") from None


def _github(auth: Auth.Auth, api_url: str, seconds_between_writes: float, seconds_between_requests: float) -> Github:
    # Reads are retried by the HTTP layer; writes never are: a POST whose answer is lost may have
    # landed, and only the publisher can look for it before writing again.
    retry = GithubRetry(total=5, allowed_methods=frozenset({"GET", "HEAD"}))
    return Github(auth=auth, base_url=api_url, timeout=30, retry=retry, seconds_between_writes=seconds_between_writes,
                  seconds_between_requests=seconds_between_requests)


def token_client(token: str, api_url: str = "https://api.github.com", seconds_between_writes: float = 1.0,
                 seconds_between_requests: float = 0.25) -> Github:
    """A PyGithub client for a token (a workflow's GITHUB_TOKEN), with the installation clients'
    retry policy and pacing."""
    register_secret(token)
    return _github(Auth.Token(token), api_url, seconds_between_writes, seconds_between_requests)


# Who a workflow's GITHUB_TOKEN writes as (it may not read GET /user).
ACTIONS_BOT = "github-actions[bot]"


def token_author(client: Github) -> str:
    """The login a token's comments and reviews are by: its user's, or github-actions[bot] for a
    workflow's GITHUB_TOKEN, which GitHub refuses GET /user (403). The publisher finds its own
    earlier comments by marker and author: by marker alone, anyone's comment holding the marker
    would be edited as the summary, and a review holding the run's tag would stand for the run's."""
    try:
        return client.get_user().login
    except GithubException as e:
        if e.status == 403:
            return ACTIONS_BOT
        raise


class GitHubApp:
    """One GitHub App: a PyGithub client per installation, tokens cached by PyGithub."""

    def __init__(self, app_id: int | str, private_key: str, api_url: str = "https://api.github.com",
                 seconds_between_writes: float = 1.0, seconds_between_requests: float = 0.25):
        register_secret(private_key)
        self.app_auth = Auth.AppAuth(app_id, private_key, jwt_expiry=300, jwt_issued_at=-60)
        self.api_url = api_url
        self.seconds_between_writes = seconds_between_writes
        self.seconds_between_requests = seconds_between_requests
        self._clients: dict[int, Github] = {}
        self._auths: dict[int, Auth.AppInstallationAuth] = {}

    def client(self, installation_id: int) -> Github:
        if installation_id not in self._clients:
            auth = self.app_auth.get_installation_auth(installation_id)
            self._clients[installation_id] = _github(auth, self.api_url, self.seconds_between_writes,
                                                     self.seconds_between_requests)
            self._auths[installation_id] = auth
        return self._clients[installation_id]

    def installation_token(self, installation_id: int) -> str:
        """A current installation access token (PyGithub renews it shortly before it expires)."""
        self.client(installation_id)
        token = self._auths[installation_id].token
        register_secret(token)
        return token

    def permission(self, installation_id: int, repo: str, user: str) -> str:
        """The user's permission on the repository: admin, maintain, write, triage, read or none."""
        try:
            return self.client(installation_id).get_repo(repo).get_collaborator_permission(user)
        except GithubException as e:
            if e.status == 404:
                return "none"
            raise

    def config_from_default_branch(self, installation_id: int, repo: str, path: str) -> tuple[str, str] | None:
        """(text, sha) of the repo's Optimas config on its default branch; None when there is none.

        Read from the default branch, never from the PR head: a PR cannot change how it is run."""
        r = self.client(installation_id).get_repo(repo)
        try:
            f = r.get_contents(path, ref=r.default_branch)
        except GithubException as e:
            if e.status == 404:
                return None
            raise
        if isinstance(f, list):
            raise GitHubAppError(f"{repo}:{path} is a folder; expected the Optimas config file")
        return f.decoded_content.decode("utf-8"), f.sha


@lru_cache(maxsize=1)
def app_from_env() -> GitHubApp:
    """The app as the worker's environment configures it (OPTIMAS_APP_ID, key, API URL)."""
    app_id = os.environ.get("OPTIMAS_APP_ID")
    if not app_id:
        raise GitHubAppError("OPTIMAS_APP_ID is not set: the GitHub App's id")
    from bot.settings import WorkerSettings

    ws = WorkerSettings.from_env()
    return GitHubApp(app_id, private_key_from_env(), os.environ.get("OPTIMAS_GITHUB_API_URL") or "https://api.github.com",
                     seconds_between_writes=ws.write_interval_s, seconds_between_requests=ws.request_interval_s)
