"""The GitHub App's settings, from the environment only (secrets never live in files we ship)."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from runner.base.backends import BACKENDS, NETWORK_BACKENDS
from runner.base.errors import OptimasError


class SettingsError(OptimasError):
    exit_code = 2


def _text(env, name: str, default: str) -> str:
    """A text setting; set but empty is unset (compose's `${VAR:-}` passes an empty value)."""
    return env.get(name) or default


def _networks(env, name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """A comma-separated list of addresses or networks (10.0.0.5, 172.18.0.0/16, ::1)."""
    out = []
    for item in (env.get(name) or "").split(","):
        if item.strip():
            try:
                out.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                raise SettingsError(f"{name}: {item.strip()!r} is not an IP address or network") from None
    return tuple(out)


def _number(env, name: str, default: float, low: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a number") from None
    if value < low:
        raise SettingsError(f"{name}={raw!r}: expected a number >= {low:g}")
    return value



def _secret_file(env, name: str) -> str:
    """The text of the file the variable `name` names (a Docker or Kubernetes secret), without the
    line end an editor adds; "" when the variable is unset."""
    path = env.get(name)
    if not path:
        return ""
    try:
        text = Path(path).read_text().strip()
    except OSError as e:
        raise SettingsError(f"{name}={path}: cannot read it ({e.strerror})") from None
    if not text:
        raise SettingsError(f"{name}={path}: the file is empty")
    return text

@dataclass(frozen=True)
class Settings:
    webhook_secret: bytes
    redis_url: str = "redis://127.0.0.1:6379/0"
    label: str = "optimas"
    command: str = "/optimas"
    app_slug: str = "optimas"
    control_queue: str = "optimas-control"
    key_prefix: str = "optimas"  # namespace of every Redis key the bot writes
    delivery_ttl_s: int = 7 * 24 * 3600  # GitHub redelivers for a few days at most
    api_url: str = "https://api.github.com"
    # GitHub caps webhook payloads at 25 MB; a larger body is refused (413) before it is read.
    max_body_bytes: int = 25 * 1024 * 1024
    # The dashboard under /dashboard, over this runs folder; never without authentication: a bearer
    # token, or an identity header that the reverse proxy in front sets (and strips from clients).
    dashboard_runs_dir: str | None = None
    dashboard_token: bytes | None = None
    dashboard_user_header: str | None = None
    # The header is believed only from these addresses (the proxy's): anyone reaching the App's
    # port directly could set it otherwise.
    dashboard_proxies: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """OPTIMAS_WEBHOOK_SECRET or OPTIMAS_WEBHOOK_SECRET_PATH (required), OPTIMAS_REDIS_URL, OPTIMAS_LABEL,
        OPTIMAS_APP_SLUG, OPTIMAS_KEY_PREFIX, OPTIMAS_CONTROL_QUEUE, OPTIMAS_MAX_BODY_BYTES,
        OPTIMAS_GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3), and the dashboard's
        OPTIMAS_DASHBOARD_RUNS_DIR, OPTIMAS_DASHBOARD_TOKEN, OPTIMAS_DASHBOARD_USER_HEADER with
        OPTIMAS_DASHBOARD_PROXY_ADDRESSES."""
        e = os.environ if env is None else env
        secret = e.get("OPTIMAS_WEBHOOK_SECRET") or _secret_file(e, "OPTIMAS_WEBHOOK_SECRET_PATH")
        if not secret:
            raise SettingsError("neither OPTIMAS_WEBHOOK_SECRET nor OPTIMAS_WEBHOOK_SECRET_PATH (a file holding it, "
                                "as `python -m bot.manifest convert` writes) is set: the webhook secret configured "
                                "in the GitHub App's settings is needed to verify deliveries")
        runs_dir = e.get("OPTIMAS_DASHBOARD_RUNS_DIR") or None
        token = e.get("OPTIMAS_DASHBOARD_TOKEN") or None
        user_header = e.get("OPTIMAS_DASHBOARD_USER_HEADER") or None
        if runs_dir and not (token or user_header):
            raise SettingsError("OPTIMAS_DASHBOARD_RUNS_DIR is set but the dashboard would be open to anyone: set "
                                "OPTIMAS_DASHBOARD_TOKEN (a bearer token) or OPTIMAS_DASHBOARD_USER_HEADER (the "
                                "identity header your reverse proxy sets)")
        proxies = _networks(e, "OPTIMAS_DASHBOARD_PROXY_ADDRESSES")
        if user_header and not proxies:
            raise SettingsError("OPTIMAS_DASHBOARD_USER_HEADER is set without OPTIMAS_DASHBOARD_PROXY_ADDRESSES: the "
                                "identity header is believed only from your reverse proxy; give its own address "
                                "(a fixed one, e.g. the proxy container's on compose's network), not a network "
                                "range: clients reaching a published port through Docker appear from the "
                                "network's gateway, and anyone reaching the App's port could send the header")
        if token and len(token) < 16:
            raise SettingsError("OPTIMAS_DASHBOARD_TOKEN is shorter than 16 characters: use a long random token")
        return cls(webhook_secret=secret.encode(), redis_url=_text(e, "OPTIMAS_REDIS_URL", cls.redis_url),
                   dashboard_runs_dir=runs_dir, dashboard_token=token.encode() if token else None,
                   dashboard_user_header=user_header, dashboard_proxies=proxies,
                   label=_text(e, "OPTIMAS_LABEL", cls.label), app_slug=_text(e, "OPTIMAS_APP_SLUG", cls.app_slug),
                   key_prefix=_text(e, "OPTIMAS_KEY_PREFIX", cls.key_prefix),
                   control_queue=_text(e, "OPTIMAS_CONTROL_QUEUE", cls.control_queue),
                   max_body_bytes=int(_number(e, "OPTIMAS_MAX_BODY_BYTES", cls.max_body_bytes, 1024)),
                   api_url=_text(e, "OPTIMAS_GITHUB_API_URL", cls.api_url))


@dataclass(frozen=True)
class WorkerSettings:
    """What the jobs read from the worker's environment (no webhook secret: workers never need it)."""

    redis_url: str = "redis://127.0.0.1:6379/0"
    key_prefix: str = "optimas"
    label: str = "optimas"
    app_slug: str = "optimas"  # the App's comments and reviews are by `<slug>[bot]`
    gpu_queue: str = "optimas-gpu"
    # Where the GPU job fetches code: {repo} is owner/name. Credentials never go into this URL.
    git_url: str = "https://github.com/{repo}.git"
    fetch_timeout_s: float = 600.0
    # The dashboard's address (e.g. https://optimas.example.org/dashboard): the summary links the
    # run's page there, <url>/runs/<id>; unset: no link.
    artifacts_url: str | None = None
    # A user without write access gets one reply per PR in this many seconds at most.
    reply_interval_s: float = 3600.0
    # Requests to GitHub: the pause between two requests and between two writes of one client
    # (PyGithub's defaults, after GitHub's guidance against secondary rate limits), and the first
    # backoff of a retried write (doubling).
    request_interval_s: float = 0.25
    write_interval_s: float = 1.0
    write_backoff_s: float = 2.0
    # The operator's model for every repository, whatever its config names (llm.backend, llm.model)
    llm_backend: str | None = None
    llm_model: str | None = None
    llm_base_url: str | None = None  # an OpenAI-compatible or Ollama server of the operator's
    llm_replay_dir: str | None = None  # the replay backend's answers: a folder of the operator's, absolute
    # Whoever installs the App opens pull requests at will: the GPU jobs one installation may have
    # queued, running or waiting for a retry at once, and the most candidates per iteration and
    # iterations a repository's config may ask for (each costs model calls on the operator's key
    # and GPU time); a config asking for more gets these.
    max_runs_per_installation: int = 2
    max_candidates: int = 4
    max_iterations: int = 5
    max_programs: int = 3  # programs one pull request runs, whatever programs_per_pull_request asks

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> WorkerSettings:
        """OPTIMAS_REDIS_URL, OPTIMAS_KEY_PREFIX, OPTIMAS_LABEL, OPTIMAS_APP_SLUG, OPTIMAS_GPU_QUEUE, OPTIMAS_GIT_URL,
        OPTIMAS_FETCH_TIMEOUT_S, OPTIMAS_ARTIFACTS_URL, OPTIMAS_REPLY_INTERVAL_S, OPTIMAS_GITHUB_REQUEST_INTERVAL_S,
        OPTIMAS_GITHUB_WRITE_INTERVAL_S, OPTIMAS_GITHUB_WRITE_BACKOFF_S, OPTIMAS_LLM_BACKEND, OPTIMAS_LLM_MODEL and
        OPTIMAS_LLM_REPLAY_DIR (the model for every repository), OPTIMAS_LLM_BASE_URL (the operator's server),
        OPTIMAS_MAX_RUNS_PER_INSTALLATION, OPTIMAS_MAX_CANDIDATES and OPTIMAS_MAX_ITERATIONS."""
        e = os.environ if env is None else env
        backend = e.get("OPTIMAS_LLM_BACKEND") or None
        if backend is not None and backend not in BACKENDS:
            raise SettingsError(f"OPTIMAS_LLM_BACKEND={backend!r}: expected one of {', '.join(BACKENDS)}")
        if backend in NETWORK_BACKENDS and not e.get("OPTIMAS_LLM_MODEL"):
            raise SettingsError(f"OPTIMAS_LLM_BACKEND={backend}: set OPTIMAS_LLM_MODEL too (the model's name there)")
        replay_dir = e.get("OPTIMAS_LLM_REPLAY_DIR") or None
        if backend == "replay" and not (replay_dir and os.path.isabs(replay_dir) and os.path.isdir(replay_dir)):
            raise SettingsError(f"OPTIMAS_LLM_BACKEND=replay: set OPTIMAS_LLM_REPLAY_DIR to the absolute path of an "
                                f"existing folder of recorded answers on the worker (got {replay_dir!r})")
        git_url = _text(e, "OPTIMAS_GIT_URL", cls.git_url)
        if "{token}" in git_url or "@" in git_url.split("://", 1)[-1].split("/", 1)[0]:
            raise SettingsError(f"OPTIMAS_GIT_URL={git_url!r}: credentials must not be part of the URL (the worker "
                                "passes the installation token to git in a header); use e.g. "
                                "https://github.com/{repo}.git")
        if "{repo}" not in git_url:
            raise SettingsError(f"OPTIMAS_GIT_URL={git_url!r}: expected a URL template with {{repo}}")
        return cls(redis_url=_text(e, "OPTIMAS_REDIS_URL", cls.redis_url),
                   key_prefix=_text(e, "OPTIMAS_KEY_PREFIX", cls.key_prefix),
                   label=_text(e, "OPTIMAS_LABEL", cls.label),
                   app_slug=_text(e, "OPTIMAS_APP_SLUG", cls.app_slug),
                   gpu_queue=_text(e, "OPTIMAS_GPU_QUEUE", cls.gpu_queue), git_url=git_url,
                   fetch_timeout_s=_number(e, "OPTIMAS_FETCH_TIMEOUT_S", cls.fetch_timeout_s, 1),
                   artifacts_url=e.get("OPTIMAS_ARTIFACTS_URL") or None,
                   reply_interval_s=_number(e, "OPTIMAS_REPLY_INTERVAL_S", cls.reply_interval_s, 0),
                   request_interval_s=_number(e, "OPTIMAS_GITHUB_REQUEST_INTERVAL_S", cls.request_interval_s, 0),
                   write_interval_s=_number(e, "OPTIMAS_GITHUB_WRITE_INTERVAL_S", cls.write_interval_s, 0),
                   write_backoff_s=_number(e, "OPTIMAS_GITHUB_WRITE_BACKOFF_S", cls.write_backoff_s, 0),
                   llm_backend=backend, llm_model=e.get("OPTIMAS_LLM_MODEL") or None,
                   llm_base_url=e.get("OPTIMAS_LLM_BASE_URL") or None, llm_replay_dir=replay_dir,
                   max_runs_per_installation=int(_number(e, "OPTIMAS_MAX_RUNS_PER_INSTALLATION",
                                                         cls.max_runs_per_installation, 1)),
                   max_candidates=int(_number(e, "OPTIMAS_MAX_CANDIDATES", cls.max_candidates, 1)),
                   max_iterations=int(_number(e, "OPTIMAS_MAX_ITERATIONS", cls.max_iterations, 1)),
                   max_programs=int(_number(e, "OPTIMAS_MAX_PROGRAMS", cls.max_programs, 1)))
