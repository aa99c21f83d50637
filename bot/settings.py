"""The GitHub App's settings, from the environment only (secrets never live in files we ship)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from runner.errors import OptimasError


class SettingsError(OptimasError):
    exit_code = 2


@dataclass(frozen=True)
class Settings:
    webhook_secret: bytes
    redis_url: str = "redis://127.0.0.1:6379/0"
    label: str = "optimas"
    command: str = "/optimas"
    app_slug: str = "optimas"
    control_queue: str = "optimas-control"
    gpu_queue: str = "optimas-gpu"
    delivery_ttl_s: int = 7 * 24 * 3600  # GitHub redelivers for a few days at most
    api_url: str = "https://api.github.com"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """OPTIMAS_WEBHOOK_SECRET (required), OPTIMAS_REDIS_URL, OPTIMAS_LABEL, OPTIMAS_APP_SLUG,
        OPTIMAS_GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3)."""
        e = os.environ if env is None else env
        secret = e.get("OPTIMAS_WEBHOOK_SECRET")
        if not secret:
            raise SettingsError("OPTIMAS_WEBHOOK_SECRET is not set: the webhook secret configured in the GitHub "
                                "App's settings is needed to verify deliveries")
        return cls(webhook_secret=secret.encode(), redis_url=e.get("OPTIMAS_REDIS_URL", cls.redis_url),
                   label=e.get("OPTIMAS_LABEL", cls.label), app_slug=e.get("OPTIMAS_APP_SLUG", cls.app_slug),
                   api_url=e.get("OPTIMAS_GITHUB_API_URL", cls.api_url))
