"""Routing "event.action" to a decision, from the payload alone (no API calls in the request path).

Each handler takes one context object and returns a Decision: ignore (with the reason), or a job
for the control queue, named by its import path, with small serializable arguments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from bot.settings import Settings

JOB_TRIGGER = "bot.jobs.handle_trigger"  # checks the sender's permission, pins the head, schedules the GPU job
JOB_CANCEL = "bot.jobs.cancel_pr"  # cancels the PR's queued or running job
JOB_STATUS = "bot.jobs.post_status"
JOB_HELP = "bot.jobs.post_help"
JOB_LABEL = "bot.jobs.ensure_label"  # creates the trigger label in repositories the App was installed on
# An installation event lists its repositories; more than this many are labelled by the first ones only
# (the rest get the label by hand, or when added again): a job's arguments stay small.
MAX_INSTALLED_REPOSITORIES = 100
# Deliveries about the App's installation name repositories in a list, not one `repository`.
INSTALLATION_EVENTS = {"installation", "installation_repositories"}


class PayloadError(ValueError):
    """A signed delivery whose payload lacks a field the handler reads, or has it of the wrong type."""


_MISSING = object()


def field_of(payload: Any, path: str, kind: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    """payload[a][b]... for path 'a.b...', checked to be of `kind`; PayloadError names the field."""
    node = payload
    for part in path.split("."):
        node = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
        if node is _MISSING:
            if default is not _MISSING:
                return default
            raise PayloadError(f"payload.{path}: missing")
    if isinstance(node, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise PayloadError(f"payload.{path}: expected {_kind_name(kind)}, got a boolean")
    if not isinstance(node, kind):
        if default is not _MISSING and node is None:
            return default
        raise PayloadError(f"payload.{path}: expected {_kind_name(kind)}, got {type(node).__name__}")
    if isinstance(node, str) and not node.isascii() and not _encodable(node):
        # JSON may escape a lone surrogate ("\ud800"); no UTF-8 text holds one, so GitHub never sends it
        raise PayloadError(f"payload.{path}: not valid Unicode (a lone surrogate)")
    return node


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", dict: "an object", list: "a list"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


@dataclass
class Head:
    """A PR head as a delivery showed it, with GitHub's timestamp of the PR's last update."""

    repo: str
    pr: int
    sha: str
    seen_at: str  # ISO 8601, GitHub's clock


@dataclass
class Decision:
    reason: str
    job: tuple[str, dict[str, Any]] | None = None
    head: Head | None = None  # recorded by the view, so that `/optimas run` can pin what the writer saw


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
# (event, action) -> handler; an event GitHub sends without an action (ping) is keyed with None.
HANDLERS: dict[tuple[str, str | None], Handler] = {}
# The X-GitHub-Event header names an event; GitHub's names are lower-case words joined by "_".
EVENT_NAME = re.compile(r"[a-z]+(?:_[a-z]+)*")
# owner/name as GitHub allows them (letters, digits, '-', '_', '.'), no path tricks
REPO_NAME = re.compile(r"[A-Za-z0-9-]{1,39}/(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}")
LOGIN = re.compile(r"[A-Za-z0-9-]{1,39}(?:\[bot\])?")


def on(event: str, *actions: str) -> Callable[[Handler], Handler]:
    """Register a handler for `event` with each of `actions` (none: an event without an action)."""
    def register(fn: Handler) -> Handler:
        for action in actions or (None,):
            HANDLERS[(event, action)] = fn
        return fn
    return register


# `/optimas run <sha>` names the whole commit: a prefix could be matched by a commit made to match it.
SHA = re.compile(r"[0-9a-fA-F]{40}")


def _labels(payload: dict[str, Any]) -> set[str]:
    labels = field_of(payload, "pull_request.labels", list, default=[])
    return {label["name"] for label in labels if isinstance(label, dict) and isinstance(label.get("name"), str)}


def _pull(ctx: Context) -> tuple[int, str]:
    """The event's pull request number and head SHA, validated."""
    # Paths from the payload's root, so that an error names the field as the sender sees it.
    field_of(ctx.payload, "pull_request", dict)
    number = field_of(ctx.payload, "pull_request.number", int)
    sha = field_of(ctx.payload, "pull_request.head.sha", str)
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise PayloadError("payload.pull_request.head.sha: expected a 40-digit hexadecimal commit SHA")
    return number, sha


def _with_head(ctx: Context, decision: Decision, number: int, sha: str) -> Decision:
    decision.head = Head(ctx.repo, number, sha, field_of(ctx.payload, "pull_request.updated_at", str, default=""))
    return decision


@on("ping")
def ping(ctx: Context) -> Decision:
    return Decision(reason="pong")


@on("pull_request", "labeled")
def labeled(ctx: Context) -> Decision:
    number, sha = _pull(ctx)
    if field_of(ctx.payload, "label.name", str, default="") != ctx.settings.label:
        return _with_head(ctx, Decision(reason=f"label is not {ctx.settings.label!r}"), number, sha)
    return _with_head(ctx, ctx.job(JOB_TRIGGER, f"{ctx.repo}#{number} labelled {ctx.settings.label}", pr=number,
                                   head_sha=sha, trigger="label"), number, sha)


@on("pull_request", "synchronize", "opened", "reopened", "edited")
def synchronize(ctx: Context) -> Decision:
    number, sha = _pull(ctx)
    if ctx.action != "synchronize":
        return _with_head(ctx, Decision(reason=f"pull request {ctx.action}: head recorded"), number, sha)
    if ctx.settings.label not in _labels(ctx.payload):
        return _with_head(ctx, Decision(reason=f"new commits on a PR without the {ctx.settings.label!r} label"),
                          number, sha)
    # `before`: the head this push replaced; the push runs only if a writer approved that one
    before = field_of(ctx.payload, "before", str, default=None)
    if before is not None and not re.fullmatch(r"[0-9a-f]{40}", before):
        raise PayloadError("payload.before: expected a 40-digit hexadecimal commit SHA")
    return _with_head(ctx, ctx.job(JOB_TRIGGER, f"{ctx.repo}#{number} has a new head {sha[:7]}", pr=number,
                                   head_sha=sha, trigger="synchronize", before_sha=before), number, sha)


@on("pull_request", "unlabeled")
def unlabeled(ctx: Context) -> Decision:
    number, sha = _pull(ctx)
    if field_of(ctx.payload, "label.name", str, default="") != ctx.settings.label:
        return _with_head(ctx, Decision(reason=f"label is not {ctx.settings.label!r}"), number, sha)
    # the control job cancels only if the sender may start runs (a triage user may remove labels)
    return _with_head(ctx, ctx.job(JOB_CANCEL, f"{ctx.repo}#{number} unlabelled", pr=number,
                                   why=f"the `{ctx.settings.label}` label was removed", by="unlabeled"),
                      number, sha)


@on("pull_request", "closed")
def closed(ctx: Context) -> Decision:
    number = field_of(ctx.payload, "pull_request.number", int)
    return ctx.job(JOB_CANCEL, f"{ctx.repo}#{number} closed", pr=number, why="the pull request was closed",
                   by="closed")


def first_line(body: str) -> str:
    """A comment's first line as GitHub shows it: lines end at \\n, \\r\\n or \\r only (str.splitlines
    also ends one at \\v, \\f, U+001C-U+001E, U+0085, U+2028 and U+2029, which GitHub shows inside the
    line: `/optimas run<U+2028>now` ran where the line reads as more than the command)."""
    return re.split(r"\r\n?|\n", body.strip(), maxsplit=1)[0]


@on("issue_comment", "created")
def comment(ctx: Context) -> Decision:
    field_of(ctx.payload, "issue", dict)
    if not field_of(ctx.payload, "issue.pull_request", dict, default=None):
        return Decision(reason="a comment on an issue, not a pull request")
    # the command is the comment's first line; what follows it is the writer's prose
    words = first_line(field_of(ctx.payload, "comment.body", str, default="")).split()
    if not words or words[0] != ctx.settings.command:
        return Decision(reason=f"not an {ctx.settings.command} command")
    verb = words[1] if len(words) > 1 else "help"
    pr = field_of(ctx.payload, "issue.number", int)
    if verb == "run":
        # A comment carries no head SHA. `/optimas run <sha>` names the commit the writer approves;
        # plain `/optimas run` approves the head the bot had seen before the comment was made
        # (GitHub's timestamps), which the control job looks up. Either way, nothing pushed after
        # the comment is run. Anything more on the line runs nothing: a run is approved in the
        # command's exact words only.
        sha = words[2] if len(words) > 2 else None
        if len(words) > 3 or (sha is not None and not SHA.fullmatch(sha)):
            given = re.sub(r"[^\w./:-]", "?", " ".join(words[2:])[:60])  # quoted back: no backtick or mention
            return ctx.job(JOB_HELP, f"{ctx.repo}#{pr}: {ctx.settings.command} run {given}", pr=pr, unknown=True,
                           note=f"`/optimas run` takes nothing or a commit's full 40-digit SHA, not `{given}`")
        return ctx.job(JOB_TRIGGER, f"{ctx.repo}#{pr}: {ctx.settings.command} run", pr=pr,
                       head_sha=sha.lower() if sha else None, trigger="comment",
                       approved_at=field_of(ctx.payload, "comment.created_at", str, default=""))
    if verb == "status":
        return ctx.job(JOB_STATUS, f"{ctx.repo}#{pr}: {ctx.settings.command} status", pr=pr)
    return ctx.job(JOB_HELP, f"{ctx.repo}#{pr}: {ctx.settings.command} {verb[:40]}", pr=pr, unknown=verb != "help")


@on("installation", "created")
@on("installation_repositories", "added")
def _installed(ctx: Context) -> Decision:
    """The App was installed on repositories: give each the trigger label, so that a maintainer can
    label a pull request at once."""
    key = "repositories" if ctx.event == "installation" else "repositories_added"
    listed = field_of(ctx.payload, key, list, default=[])
    names = []
    for i, r in enumerate(listed[:MAX_INSTALLED_REPOSITORIES]):
        name = r.get("full_name") if isinstance(r, dict) else None
        if not isinstance(name, str) or not REPO_NAME.fullmatch(name):
            raise PayloadError(f"payload.{key}[{i}].full_name: expected owner/name")
        names.append(name)
    if not names:
        return Decision(reason=f"{ctx.event}.{ctx.action}: no repository listed")
    return ctx.job(JOB_LABEL, f"installed on {len(names)} repositories: the {ctx.settings.label} label",
                   repos=names)


class EventError(PayloadError):
    """An X-GitHub-Event header that names no event GitHub sends."""


def decide(event: str, payload: Any, settings: Settings) -> Decision:
    """Route one delivery by its event and the payload's action; events from bots (the app itself
    included) are ignored, except another app's push to a pull request. A malformed event name
    raises EventError, a payload of the wrong shape PayloadError. The header is not signed: it only
    selects a handler, and the handler runs only for the action its payload (which is signed) states."""
    if not EVENT_NAME.fullmatch(event):
        raise EventError(f"X-GitHub-Event {event[:40]!r}: expected an event name as GitHub sends it "
                         "(e.g. pull_request)")
    if not isinstance(payload, dict):
        raise PayloadError(f"payload: expected a JSON object, got {type(payload).__name__}")
    action = field_of(payload, "action", str, default=None)
    handler = HANDLERS.get((event, action))
    if handler is None:
        return Decision(reason=f"no handler for {event}" + (f".{action[:40]}" if action else ""))
    sender = field_of(payload, "sender", dict, default={})
    login = field_of(payload, "sender.login", str, default="")
    from_bot = sender.get("type") == "Bot" or login.endswith("[bot]")
    # Another app's push still changes the code a writer approved (a fork's workflow can push with
    # its github-actions[bot]): it goes to the trigger's job, which voids the approval unless the
    # app may write here. Every other event of an app, this one's above all, is ignored.
    pushed = (event, action) == ("pull_request", "synchronize") and login != f"{settings.app_slug}[bot]"
    if event != "ping" and from_bot and not pushed:
        return Decision(reason=f"ignoring an event from the bot {login[:60]}")
    installation = field_of(payload, "installation.id", int, default=None)
    repo = field_of(payload, "repository.full_name", str, default="")
    if event in INSTALLATION_EVENTS and installation is None:
        raise PayloadError("payload.installation.id: expected an integer (an installation event carries it)")
    if event not in INSTALLATION_EVENTS and event != "ping" and (not repo or installation is None):
        raise PayloadError("payload.repository.full_name and payload.installation.id: expected both (deliveries to "
                           "a GitHub App carry them)")
    if repo and not REPO_NAME.fullmatch(repo):
        raise PayloadError("payload.repository.full_name: expected owner/name")
    if event != "ping" and not LOGIN.fullmatch(login):
        raise PayloadError("payload.sender.login: expected a GitHub login")
    ctx = Context(event=event, action=action or "", payload=payload, settings=settings, repo=repo,
                  installation_id=installation, sender=login)
    return handler(ctx)
