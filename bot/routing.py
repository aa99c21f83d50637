"""Routing "event.action" to a decision, from the payload alone (no API calls in the request path).

Each handler takes one context object and returns a Decision: ignore (with the reason), or a job
for the control queue, named by its import path, with small serializable arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from bot.settings import Settings

JOB_TRIGGER = "bot.jobs.handle_trigger"  # checks the sender's permission, pins the head, schedules the GPU job
JOB_CANCEL = "bot.jobs.cancel_pr"  # cancels the PR's queued or running job
JOB_STATUS = "bot.jobs.post_status"
JOB_HELP = "bot.jobs.post_help"


@dataclass
class Decision:
    reason: str
    job: tuple[str, dict[str, Any]] | None = None


@dataclass
class Context:
    event: str
    action: str
    payload: dict[str, Any]
    settings: Settings
    repo: str = ""
    installation_id: int | None = None
    sender: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def job(self, function: str, reason: str, **kwargs: Any) -> Decision:
        args = {"repo": self.repo, "installation_id": self.installation_id, "sender": self.sender, **kwargs}
        return Decision(reason=reason, job=(function, args))


Handler = Callable[[Context], Decision]
HANDLERS: dict[str, Handler] = {}


def on(*keys: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for k in keys:
            HANDLERS[k] = fn
        return fn
    return register


def _labels(pr: dict[str, Any]) -> set[str]:
    return {label.get("name", "") for label in pr.get("labels") or []}


@on("ping")
def ping(ctx: Context) -> Decision:
    return Decision(reason="pong")


@on("pull_request.labeled")
def labeled(ctx: Context) -> Decision:
    if (ctx.payload.get("label") or {}).get("name") != ctx.settings.label:
        return Decision(reason=f"label is not {ctx.settings.label!r}")
    pr = ctx.payload["pull_request"]
    return ctx.job(JOB_TRIGGER, f"{ctx.repo}#{pr['number']} labelled {ctx.settings.label}", pr=pr["number"],
                   head_sha=pr["head"]["sha"], trigger="label")


@on("pull_request.synchronize")
def synchronize(ctx: Context) -> Decision:
    pr = ctx.payload["pull_request"]
    if ctx.settings.label not in _labels(pr):
        return Decision(reason=f"new commits on a PR without the {ctx.settings.label!r} label")
    return ctx.job(JOB_TRIGGER, f"{ctx.repo}#{pr['number']} has a new head {pr['head']['sha'][:7]}",
                   pr=pr["number"], head_sha=pr["head"]["sha"], trigger="synchronize")


@on("pull_request.unlabeled")
def unlabeled(ctx: Context) -> Decision:
    if (ctx.payload.get("label") or {}).get("name") != ctx.settings.label:
        return Decision(reason=f"label is not {ctx.settings.label!r}")
    pr = ctx.payload["pull_request"]
    return ctx.job(JOB_CANCEL, f"{ctx.repo}#{pr['number']} unlabelled", pr=pr["number"])


@on("pull_request.closed")
def closed(ctx: Context) -> Decision:
    pr = ctx.payload["pull_request"]
    return ctx.job(JOB_CANCEL, f"{ctx.repo}#{pr['number']} closed", pr=pr["number"])


@on("issue_comment.created")
def comment(ctx: Context) -> Decision:
    issue = ctx.payload.get("issue") or {}
    if not issue.get("pull_request"):
        return Decision(reason="a comment on an issue, not a pull request")
    words = (ctx.payload.get("comment") or {}).get("body", "").strip().split()
    if not words or words[0] != ctx.settings.command:
        return Decision(reason=f"not an {ctx.settings.command} command")
    verb = words[1] if len(words) > 1 else "help"
    pr = issue["number"]
    if verb == "run":
        # The comment does not carry the head SHA: the job reads it when it checks the permission.
        return ctx.job(JOB_TRIGGER, f"{ctx.repo}#{pr}: {ctx.settings.command} run", pr=pr, head_sha=None,
                       trigger="comment")
    if verb == "status":
        return ctx.job(JOB_STATUS, f"{ctx.repo}#{pr}: {ctx.settings.command} status", pr=pr)
    return ctx.job(JOB_HELP, f"{ctx.repo}#{pr}: {ctx.settings.command} {verb}", pr=pr, unknown=verb != "help")


def decide(event: str, payload: dict[str, Any], settings: Settings) -> Decision:
    """Route one delivery; events from bots (the app itself included) are ignored."""
    action = payload.get("action", "")
    key = f"{event}.{action}" if action else event
    handler = HANDLERS.get(key) or HANDLERS.get(event)
    if handler is None:
        return Decision(reason=f"no handler for {key}")
    sender = payload.get("sender") or {}
    if event != "ping" and (sender.get("type") == "Bot" or sender.get("login") == f"{settings.app_slug}[bot]"):
        return Decision(reason=f"ignoring an event from the bot {sender.get('login')}")
    ctx = Context(event=event, action=action, payload=payload, settings=settings,
                  repo=(payload.get("repository") or {}).get("full_name", ""),
                  installation_id=(payload.get("installation") or {}).get("id"), sender=sender.get("login", ""))
    return handler(ctx)
