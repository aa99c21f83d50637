"""A seeded fuzzer of signed GitHub webhook deliveries, built from GitHub's example payloads
(tests/fixtures/github/payload-examples), and the means to serve the bot and send them.

`deliveries(seed, n)` yields the same n deliveries for the same seed. Each one is an example
payload aimed at a small world (`World`: one repository, its open, closed and missing pull requests
with their heads, collaborators with their permissions), left valid (about a quarter) or given one
mutation: type swaps, dropped and junk keys, lone surrogates (JSON escapes of half a UTF-16 pair:
valid JSON, though no UTF-8 text can hold one), deep nesting, huge and odd strings, odd
`X-GitHub-Event` headers and actions, odd timestamps, odd encodings, bodies that are no JSON
object, and a few bad signatures. Comments carry `/optimas` commands (run, run <sha prefix>,
run <sha>, status, help, ...). A few deliveries are redeliveries: the same X-GitHub-Delivery and
body again.

`post_all` sends deliveries over keep-alive connections from several threads; `gunicorn` serves
the bot as the documented deployment does (`gunicorn -c python:bot.serving bot.wsgi:app`, settings
from the environment).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import hmac
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).parent / "fixtures" / "github" / "payload-examples"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"  # the head of PR 2 in the example payloads
OTHER_HEAD = "3f786850e387550fdab836ed7e6dc881de23001b"
CLOSED_HEAD = "89e6c98d92887913cadf06b2adb97f26cde4849b"
MISSING_HEAD = "2b66fd261ee5c6cfc8de7fa466bab600bcfe4f69"
START = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)  # GitHub's clock at delivery 0; 10 s per delivery
REDELIVERY_RATE = 0.004
MUTATED_RATE = 0.75
_DEEP = "\u0000DEEP\u0000"  # placeholder replaced by the nested text after serialization

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class World:
    """What the deliveries are aimed at, as the loopback GitHub API holds it."""

    repo: str = "Codertocat/Hello-World"
    installation_id: int = 1
    label: str = "optimas"
    command: str = "/optimas"
    open_pulls: Mapping[int, str] = field(default_factory=lambda: {2: HEAD, 3: OTHER_HEAD})
    closed_pulls: Mapping[int, str] = field(default_factory=lambda: {4: CLOSED_HEAD})
    missing_pulls: tuple[int, ...] = (9,)
    # collaborators; anyone else (the example payloads' Codertocat included) is none
    permissions: Mapping[str, str] = field(default_factory=lambda: {
        "maintainer": "write", "admin-user": "admin", "maintain-user": "maintain", "visitor": "read",
        "triage-user": "triage"})
    strangers: tuple[str, ...] = ("Codertocat", "stranger", "Maintainer")


WORLD = World()


@dataclass(frozen=True)
class Delivery:
    """One delivery as sent: its headers' inputs, its body, and what it is."""

    index: int
    delivery_id: str  # X-GitHub-Delivery
    event: str | None  # X-GitHub-Event (None: the header is not sent); sent as UTF-8 bytes
    body: bytes
    kind: str  # the example it was built from, e.g. "pull_request.labeled", "issue_comment.created:run-sha7"
    mutation: str  # "valid", or a short label of the one mutation, e.g. "swap:label.name=list"
    signature: str = "good"  # good | wrong-secret | missing | sha1 | upper-hex | empty
    redelivery_of: int | None = None  # the index of the delivery this one repeats

    @property
    def label(self) -> str:
        """kind/mutation, e.g. "pull_request.labeled/surrogate:repository.full_name"."""
        return f"{self.kind}/{self.mutation}"

    def headers(self, secret: bytes) -> dict[str, str | bytes]:
        """The request headers, signed with `secret` as this delivery's `signature` says."""
        h: dict[str, str | bytes] = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/fuzz",
                                     "X-GitHub-Delivery": self.delivery_id, "X-GitHub-Hook-ID": "1"}
        if self.event is not None:
            h["X-GitHub-Event"] = self.event.encode("utf-8")
        good = sign(secret, self.body)
        header = {"good": good, "wrong-secret": sign(secret + b"x", self.body), "missing": None,
                  "sha1": "sha1=" + good[len("sha256="):], "upper-hex": "sha256=" + good[len("sha256="):].upper(),
                  "empty": ""}[self.signature]
        if header is not None:
            h["X-Hub-Signature-256"] = header
        return h


def sign(secret: bytes, body: bytes) -> str:
    """GitHub's X-Hub-Signature-256 of `body`: 'sha256=' and the hex HMAC-SHA256 with `secret`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


@lru_cache(maxsize=None)
def _example_text(name: str) -> str:
    return (EXAMPLES / name).read_text()


def _example(name: str) -> dict[str, Any]:
    return json.loads(_example_text(name))


def _timestamp(index: int) -> str:
    return (START + dt.timedelta(seconds=10 * index)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pick(rng: random.Random, weighted: Mapping[Any, float]) -> Any:
    return rng.choices(list(weighted), weights=list(weighted.values()))[0]


def _random_sha(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


# --- the valid deliveries -------------------------------------------------------------------------

KINDS = {"pull_request.labeled": 24, "pull_request.unlabeled": 8, "pull_request.opened": 7,
         "pull_request.synchronize": 16, "issue_comment.created": 33, "ping": 6, "installation.created": 6}


def _commands(world: World, head: str, other: str) -> dict[str, tuple[str, float]]:
    """Comment bodies by name, with their weights."""
    c = world.command
    return {"run": (f"{c} run", 14), "run-spaced": (f"  {c}   run \n", 3), "run-sha40": (f"{c} run {head}", 12),
            "run-sha40-upper": (f"{c} run {head.upper()}", 3), "run-sha40-other": (f"{c} run {other}", 5),
            "run-sha7": (f"{c} run {head[:7]}", 8), "run-sha12": (f"{c} run {head[:12]}", 4),
            "run-sha7-other": (f"{c} run {other[:7]}", 2), "run-branch": (f"{c} run main", 2),
            "run-sha40-more": (f"{c} run {head} now please", 3), "run-more": (f"{c} run now", 2),
            "run-then-prose": (f"{c} run\r\n\nThanks, {head}", 2), "run-sha40-then-prose": (f"{c} run {head}\nok", 2),
            "status": (f"{c} status", 6), "help": (f"{c} help", 5), "bare": (c, 2),
            "unknown": (f"{c} frobnicate", 2), "upper-command": (f"{c.upper()} run", 2),
            "prose": (f"please {c} run", 2), "text": ("You are totally right! I'll get this fixed right away.", 4)}


def _sender(rng: random.Random, world: World) -> tuple[str, str | None]:
    """(login, type override): writers about 45%, readers, strangers, and the app itself."""
    writers = [u for u, p in world.permissions.items() if p in ("write", "maintain", "admin")]
    others = [u for u, p in world.permissions.items() if u not in writers]
    group = _pick(rng, {"writer": 45, "other": 20, "stranger": 30, "bot": 5})
    if group == "writer":
        return rng.choice(writers), None
    if group == "other":
        return rng.choice(others), None
    if group == "stranger":
        return rng.choice(world.strangers), None
    return "optimas[bot]", "Bot"


def _pull_choice(rng: random.Random, world: World) -> tuple[int, str, str]:
    """(number, head the delivery shows, another head): mostly an open PR's current head."""
    group = _pick(rng, {"open": 80, "closed": 10, "missing": 10})
    if group == "open":
        number = rng.choice(sorted(world.open_pulls))
        head = world.open_pulls[number]
    elif group == "closed":
        number = rng.choice(sorted(world.closed_pulls))
        head = world.closed_pulls[number]
    else:
        number, head = rng.choice(world.missing_pulls), MISSING_HEAD
    others = [h for h in (*world.open_pulls.values(), *world.closed_pulls.values()) if h != head]
    other = rng.choice(others) if others and rng.random() < 0.7 else _random_sha(rng)
    if rng.random() < 0.12:  # a head that has moved on since
        head, other = other, head
    return number, head, other


def _valid(rng: random.Random, world: World, index: int) -> tuple[str, str, dict[str, Any]]:
    """(kind, event, payload) of an untouched delivery aimed at the world."""
    kind = _pick(rng, KINDS)
    when = _timestamp(index)
    if kind == "ping":
        return kind, "ping", _example("ping/payload.json")
    if kind == "installation.created":
        return kind, "installation", _example("installation/created.payload.json")
    login, sender_type = _sender(rng, world)
    number, head, other = _pull_choice(rng, world)
    if kind == "issue_comment.created":
        p = _example("issue_comment/created.with-installation.payload.json")
        name = _pick(rng, {n: w for n, (_, w) in _commands(world, head, other).items()})
        p["comment"]["body"] = _commands(world, head, other)[name][0]
        p["comment"]["created_at"] = p["comment"]["updated_at"] = when
        p["issue"]["number"] = number
        if rng.random() < 0.9:
            p["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{world.repo}/pulls/{number}",
                                          "html_url": f"https://github.com/{world.repo}/pull/{number}"}
        else:
            name += "@issue"  # a comment on an issue, not a pull request
        kind = f"{kind}:{name}"
    else:
        action = kind.split(".")[1]
        example = "pull_request/labeled.with-organization.payload.json" if (
            action == "labeled" and rng.random() < 0.3) else f"pull_request/{action}.payload.json"
        p = _example(example)
        p["number"] = p["pull_request"]["number"] = number
        p["pull_request"]["head"]["sha"] = head
        p["pull_request"]["updated_at"] = when
        if action == "synchronize":
            p["before"] = p["after"] = head  # the heads stand still here: a push continues the one approved
        labels = p["pull_request"]["labels"]
        if action in ("labeled", "unlabeled"):
            p["label"]["name"] = _pick(rng, {world.label: 70, "bug": 20, "enhancement": 10})
            if action == "labeled" and p["label"]["name"] == world.label:
                labels.append({**labels[0], "name": world.label, "id": 7, "color": "0e8a16"})
        elif rng.random() < (0.65 if action == "synchronize" else 0.3):
            labels.append({**labels[0], "name": world.label, "id": 7, "color": "0e8a16"})
    p["repository"]["full_name"] = world.repo
    p["installation"]["id"] = world.installation_id
    p["sender"]["login"] = login
    if sender_type:
        p["sender"]["type"] = sender_type
    return kind, kind.split(".")[0], p


# --- paths into a payload -------------------------------------------------------------------------

def _parse_path(text: str) -> Path_:
    return tuple(int(part) if part.lstrip("-").isdigit() else part for part in text.split("."))


def _path_text(path: Path_) -> str:
    return ".".join(str(p) for p in path) or "(root)"


def _get(node: Any, path: Path_) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or not -len(node) <= part < len(node):
                raise KeyError(part)
            node = node[part]
        else:
            if not isinstance(node, dict) or part not in node:
                raise KeyError(part)
            node = node[part]
    return node


def _exists(node: Any, path: Path_) -> bool:
    try:
        _get(node, path)
    except KeyError:
        return False
    return True


def _set(node: Any, path: Path_, value: Any) -> None:
    _get(node, path[:-1])[path[-1]] = value


def _delete(node: Any, path: Path_) -> None:
    del _get(node, path[:-1])[path[-1]]


INTERESTING = {
    "pull_request": ["action", "number", "label", "label.name", "pull_request", "pull_request.number",
                     "pull_request.head", "pull_request.head.sha", "pull_request.labels", "pull_request.labels.0",
                     "pull_request.labels.-1", "pull_request.labels.-1.name", "pull_request.labels.0.name",
                     "pull_request.updated_at", "pull_request.state", "repository", "repository.full_name",
                     "installation", "installation.id", "sender", "sender.login", "sender.type"],
    "issue_comment": ["action", "issue", "issue.number", "issue.pull_request", "issue.pull_request.url", "comment",
                      "comment.body", "comment.created_at", "comment.user.login", "repository",
                      "repository.full_name", "installation", "installation.id", "sender", "sender.login",
                      "sender.type"],
    "ping": ["zen", "hook_id", "hook", "hook.config", "repository", "sender", "sender.login"],
    "installation": ["action", "installation", "installation.id", "repositories", "sender", "sender.login"],
}
STRING_TARGETS = ["repository.full_name", "comment.body", "sender.login", "label.name", "pull_request.labels.-1.name",
                  "action", "pull_request.head.sha", "pull_request.updated_at", "comment.created_at", "sender.type",
                  "zen"]


def _random_path(rng: random.Random, payload: Any) -> Path_:
    """A random existing path: a walk from the root that stops at random."""
    path: list[str | int] = []
    node = payload
    while True:
        if isinstance(node, dict) and node:
            part: str | int = rng.choice(list(node))
        elif isinstance(node, list) and node:
            part = rng.randrange(len(node))
        else:
            break
        path.append(part)
        node = node[part]
        if rng.random() < 0.35:
            break
    return tuple(path)


def _target(rng: random.Random, payload: dict[str, Any], event: str, choices: list[str] | None = None) -> Path_:
    """An interesting path of the payload that exists, or (a quarter of the time) a random one."""
    candidates = [p for p in map(_parse_path, choices or INTERESTING.get(event, [])) if _exists(payload, p)]
    if candidates and rng.random() < 0.75:
        return rng.choice(candidates)
    return _random_path(rng, payload) or (rng.choice(list(payload)),)


# --- mutations: each returns (label, payload or bytes, optional extras) -------------------------

TYPES = ("str", "int", "float", "list", "dict", "null", "bool")


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}[type(value)]


def _value_of_type(rng: random.Random, kind: str, old: Any, world: World) -> Any:
    scalar = old if isinstance(old, (str, int, float, bool)) or old is None else None
    if kind == "str":
        return rng.choice([str(scalar), "", world.label, "2", HEAD, "null", "labeled"])
    if kind == "int":
        return rng.choice([0, 2, -1, 1, 2**31, 2**63, 10**30, -(10**20)])
    if kind == "float":
        return rng.choice([2.0, 0.5, 1e308, -0.0, float("inf"), float("nan")])
    if kind == "list":
        return rng.choice([[], [old], [old, old], [world.label], [{"name": world.label}]])
    if kind == "dict":
        return rng.choice([{}, {"name": old}, {"name": world.label}, {"0": old}, {"sha": HEAD, "name": [old]}])
    if kind == "bool":
        return rng.choice([True, False])
    return None


def _swap(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    path = _target(rng, p, event)
    old = _get(p, path)
    kind = rng.choice([t for t in TYPES if t != _type_of(old)])
    _set(p, path, _value_of_type(rng, kind, old, world))
    return f"swap:{_path_text(path)}={kind}"


def _drop(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    path = _target(rng, p, event)
    _delete(p, path)
    return f"drop:{_path_text(path)}"


JUNK_KEYS = ["", "__proto__", "constructor", "x-junk", "\ud800", "a" * 2000, "label", "pull_request", "action", "0",
             "$where", "../", "\u0000", "sender.login"]


def _junk(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    dicts: list[Path_] = [()]
    for path in map(_parse_path, INTERESTING.get(event, [])):
        if _exists(p, path) and isinstance(_get(p, path), dict):
            dicts.append(path)
    count = rng.choice([1, 3, 20, 200])
    for _ in range(count):
        node = _get(p, rng.choice(dicts))
        key = rng.choice(JUNK_KEYS) + (str(rng.randrange(1000)) if rng.random() < 0.5 else "")
        if key not in node:
            node[key] = _value_of_type(rng, rng.choice(TYPES), "junk", world)
    return f"junk:{count}"


SURROGATES = ["\ud800", "\udfff", "\udc00\ud800", "\ud83d"]


def _surrogate(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    path = _target(rng, p, event, STRING_TARGETS)
    old = _get(p, path)
    s = rng.choice(SURROGATES)
    old = old if isinstance(old, str) else ""
    where = rng.choice(["end", "start", "middle", "alone"])
    value = {"end": old + s, "start": s + old, "middle": old[: len(old) // 2] + s + old[len(old) // 2:],
             "alone": s}[where]
    _set(p, path, value)
    return f"surrogate:{_path_text(path)}"


def _deep(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> tuple[str, bytes]:
    depth = rng.choice([50, 500, 990, 1000, 1500, 3000, 10000, 100000])
    shape = rng.choice(["list", "dict", "mixed"])
    if shape == "list":
        nested = "[" * depth + "]" * depth
    elif shape == "dict":
        nested = '{"a":' * depth + "1" + "}" * depth
    else:
        nested = '[{"a":' * (depth // 2) + "[]" + "}]" * (depth // 2)
    if rng.random() < 0.2:
        return f"deep:(root)={depth}{shape}", nested.encode()
    path = _target(rng, p, event, ["label.name", "comment.body", "pull_request", "pull_request.labels",
                                   "pull_request.head", "sender", "sender.login", "repository.full_name",
                                   "installation.id", "issue.pull_request", "action", "hook"])
    _set(p, path, _DEEP)
    body = json.dumps(p).replace(json.dumps(_DEEP), nested, 1)
    return f"deep:{_path_text(path)}={depth}{shape}", body.encode()


def _huge(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    size = rng.choice([10_000, 200_000, 900_000, 1_500_000])
    bucket = {10_000: "10k", 200_000: "200k", 900_000: "900k", 1_500_000: "1.5M"}[size]
    if rng.random() < 0.15 and _exists(p, ("pull_request", "labels")):
        p["pull_request"]["labels"] = [{"name": f"l{i}"} for i in range(size // 14)] + [{"name": world.label}]
        return f"huge:pull_request.labels={bucket}"
    path = _target(rng, p, event, ["comment.body", "label.name", "sender.login", "repository.full_name", "action",
                                   "pull_request.head.sha", "zen"])
    old = _get(p, path)
    prefix = old if isinstance(old, str) and len(old) < 100 else ""
    filler = rng.choice(["a", " ", "f", "\u00e9", "\ud800", "\u0000"])
    _set(p, path, prefix + " " + filler * (size if filler.isascii() and filler.isprintable() else size // 6))
    return f"huge:{_path_text(path)}={bucket}"


ODD_STRINGS = {"empty": "", "space": " ", "trailing-space": "optimas ", "upper": "OPTIMAS", "title": "Optimas",
               "nul": "optimas\u0000", "zwsp": "optimas\u200b",
               "fullwidth": "\uff4f\uff50\uff54\uff49\uff4d\uff41\uff53",
               "combining": "o\u0301ptimas", "rtl": "\u202eoptimas", "bom": "\ufeffoptimas", "newline": "optimas\n",
               "crlf": "optimas\r\n", "tab": "\toptimas", "emoji": "\U0001f680", "nonchar": "\uffff",
               "latin1": "optim\u00e1s", "path": "../../etc/passwd", "url": "Codertocat/Hello-World/../x",
               "jndi": "${jndi:ldap://x/a}", "html": "<script>alert(1)</script>", "sql": "'; DROP TABLE x;--",
               "backslash": "\\", "quote": '"', "null": "null", "number": "2", "long-line": "x" * 5000,
               "pair": "\ud83d\ude80", "percent": "%00%ff", "slash": "/"}


def _odd_string(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    path = _target(rng, p, event, STRING_TARGETS)
    name = rng.choice(list(ODD_STRINGS))
    _set(p, path, ODD_STRINGS[name])
    return f"odd:{_path_text(path)}={name}"


def _timestamp_value(rng: random.Random, world: World, event: str, p: dict[str, Any]) -> str:
    path = _target(rng, p, event, ["pull_request.updated_at", "comment.created_at"])
    values = {"empty": "", "words": "yesterday", "date": "2019-05-15", "year-1": "0001-01-01T00:00:00",
              "year-1-utc": "0001-01-01T00:00:00Z", "year-9999": "9999-12-31T23:59:59Z",
              "month-13": "2026-13-45T99:99:99Z", "offset-25h": "2026-12-01T00:00:00+25:00",
              "epoch": "1970-01-01T00:00:00Z", "naive": "2026-12-01T00:00:00",
              "nanoseconds": "2026-12-01T00:00:00.123456789Z", "future": "2099-01-01T00:00:00Z"}
    name = rng.choice(list(values))
    _set(p, path, values[name])
    return f"time:{_path_text(path)}={name}"


EVENTS = ["pull_request.labeled", "pull_request.synchronize", "issue_comment.created", "PULL_REQUEST", "Pull_Request",
          "", "pull-request", "pull_request.", ".labeled", "pull_request..labeled", "unknown_event", "push", "ping",
          "installation", "issue_comment", "pull_request", "check_run", "pull_requ\u00e9st", "\u30a4\u30d9\u30f3\u30c8",
          "pull_request\u0000", "pull_request\t", "pull_request.labeled.labeled", "*", "a" * 4000]


def _odd_event(rng: random.Random, kind: str, p: dict[str, Any]) -> tuple[str, str | None]:
    """(label, X-GitHub-Event): odd names, the dotted "event.action" form of the delivery's own kind
    (with or without the body's action), or no header at all."""
    base = kind.split(":")[0]
    choice = rng.random()
    if choice < 0.35 and "." in base:
        if rng.random() < 0.5 and "action" in p:
            del p["action"]
            return f"event:{base}+drop:action", base
        return f"event:{base}", base
    if choice < 0.4:
        return "event:(none)", None
    event = rng.choice(EVENTS)
    return f"event:{ascii(event)[1:-1][:40]}", event


ACTIONS = ["LABELED", "labeled ", "", "label", "labeled", "unlabeled", "synchronize", "opened", "closed", "reopened",
           "edited", "created", "deleted", "labeled\u0000", "synchronize\n", "Synchronize", "created "]


def _odd_action(rng: random.Random, p: dict[str, Any]) -> str:
    action = rng.choice(ACTIONS)
    p["action"] = action
    return f"action:{ascii(action)[1:-1]}"


def _encoding(rng: random.Random, p: dict[str, Any]) -> tuple[str, bytes]:
    name = rng.choice(["utf-16", "utf-32", "utf-8-bom", "raw-utf8", "invalid-utf8", "latin1", "raw-surrogate",
                       "trailing-garbage", "trailing-newlines", "leading-space", "nul-byte", "two-objects"])
    text = json.dumps(p)
    if name in ("utf-16", "utf-32"):
        return f"encoding:{name}", json.dumps(p, ensure_ascii=False).encode(name)
    if name == "utf-8-bom":
        return f"encoding:{name}", b"\xef\xbb\xbf" + text.encode()
    if name == "raw-utf8":
        p["sender"] = {**(p.get("sender") or {}), "name": "Zo\u00eb \U0001f680"}
        return f"encoding:{name}", json.dumps(p, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if name == "invalid-utf8":
        return f"encoding:{name}", text.replace('"', '"\xff', 1).encode("latin-1", "replace")
    if name == "latin1":
        p["zz"] = "caf\u00e9"
        return f"encoding:{name}", json.dumps(p, ensure_ascii=False).encode("latin-1", "replace")
    if name == "raw-surrogate":
        p["zz"] = "\ud800"
        return f"encoding:{name}", json.dumps(p, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if name == "trailing-garbage":
        return f"encoding:{name}", (text + " }x").encode()
    if name == "trailing-newlines":
        return f"encoding:{name}", (text + "\n\n\r\n").encode()
    if name == "leading-space":
        return f"encoding:{name}", ("  \n" + text).encode()
    if name == "nul-byte":
        return f"encoding:{name}", (text + "\u0000").encode()
    return f"encoding:{name}", (text + text).encode()


NOT_OBJECTS = {"array": b"[]", "null": b"null", "string": b'"labeled"', "number": b"2", "empty": b"",
               "text": b"not json", "open-brace": b"{", "empty-object": b"{}", "true": b"true", "nan": b"NaN",
               "minimal": b'{"action": "labeled"}', "spaces": b"   "}


def _not_object(rng: random.Random, p: dict[str, Any]) -> tuple[str, bytes]:
    name = rng.choice([*NOT_OBJECTS, "wrapped"])
    if name == "wrapped":
        return "body:wrapped-in-array", ("[" + json.dumps(p) + "]").encode()
    return f"body:{name}", NOT_OBJECTS[name]


MUTATIONS = {"swap": 22, "drop": 10, "junk": 7, "surrogate": 12, "deep": 6, "huge": 3, "odd-string": 9, "event": 9,
             "action": 6, "encoding": 4, "not-object": 3, "timestamp": 4, "signature": 2}


def _mutate(rng: random.Random, world: World, kind: str, event: str,
            p: dict[str, Any]) -> tuple[str, str | None, bytes, str]:
    """(mutation label, event header, body, signature) of one mutation of a valid delivery."""
    what = _pick(rng, MUTATIONS)
    signature = "good"
    body: bytes | None = None
    header: str | None = event
    in_place = {"swap": _swap, "drop": _drop, "junk": _junk, "surrogate": _surrogate, "huge": _huge,
                "odd-string": _odd_string, "timestamp": _timestamp_value}  # they change `p` and say how
    if what in in_place:
        label = in_place[what](rng, world, event, p)
    elif what == "deep":
        label, body = _deep(rng, world, event, p)
    elif what == "event":
        label, header = _odd_event(rng, kind, p)
    elif what == "action":
        label = _odd_action(rng, p)
    elif what == "encoding":
        label, body = _encoding(rng, p)
    elif what == "not-object":
        label, body = _not_object(rng, p)
    else:
        signature = rng.choice(["wrong-secret", "missing", "sha1", "upper-hex", "empty"])
        label = f"signature:{signature}"
    return label, header, body if body is not None else json.dumps(p).encode(), signature


def deliveries(seed: int, n: int, world: World = WORLD) -> Iterator[Delivery]:
    """n deliveries, the same ones for the same seed (and world)."""
    rng = random.Random(seed)
    recent: list[Delivery] = []  # small recent deliveries, for redeliveries
    for index in range(n):
        if recent and rng.random() < REDELIVERY_RATE:
            original = rng.choice(recent)
            yield replace(original, index=index, mutation="redelivery", redelivery_of=original.index)
            continue
        delivery_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        kind, event, payload = _valid(rng, world, index)
        if rng.random() < MUTATED_RATE:
            mutation, header, body, signature = _mutate(rng, world, kind, event, payload)
        else:
            mutation, header, body, signature = "valid", event, json.dumps(payload).encode(), "good"
        d = Delivery(index, delivery_id, header, body, kind, mutation, signature)
        if len(body) < 100_000:
            recent.append(d)
            del recent[:-200]
        yield d


# --- sending ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    """The server's answer to one delivery: status 0 when none came (the error says why)."""

    status: int
    body: bytes
    error: str = ""
    seconds: float = 0.0
    retried: bool = False  # a kept-alive connection had been closed: sent again on a fresh one


class _Client:
    """One keep-alive HTTP/1.1 connection to the server, reopened when the server closes it."""

    def __init__(self, port: int, timeout: float):
        self.port = port
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def post(self, d: Delivery, secret: bytes) -> Answer:
        headers = d.headers(secret)
        t0 = time.perf_counter()
        for attempt in (1, 2):
            fresh = self.conn is None or self.conn.sock is None
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            c = self.conn
            try:
                c.putrequest("POST", "/webhook", skip_accept_encoding=True)
                for k, v in headers.items():
                    c.putheader(k, v)
                c.putheader("Content-Length", str(len(d.body)))
                c.endheaders()
                try:
                    c.send(d.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the server answered before reading the whole body (413) and closed
                r = c.getresponse()
                data = r.read()
                if r.will_close:
                    self.close()
                return Answer(r.status, data, seconds=time.perf_counter() - t0, retried=attempt > 1)
            except TimeoutError as e:
                self.close()
                return Answer(0, b"", f"timeout: {e}", time.perf_counter() - t0, attempt > 1)
            except (http.client.HTTPException, OSError) as e:
                self.close()
                error = f"{type(e).__name__}: {e}"
                if fresh:
                    break
        return Answer(0, b"", error, time.perf_counter() - t0, attempt > 1)


def post_all(port: int, items: Iterable[Delivery], secret: bytes, on_answer: Callable[[Delivery, Answer], None],
             threads: int = 8, timeout: float = 60.0) -> None:
    """Send every delivery from `threads` threads, each with a keep-alive connection; `on_answer`
    is called for each (under a lock: it need not be thread-safe)."""
    source = iter(items)
    take, report = threading.Lock(), threading.Lock()
    failures: list[BaseException] = []

    def work() -> None:
        client = _Client(port, timeout)
        try:
            while True:
                with take:
                    d = next(source, None)
                if d is None:
                    return
                answer = client.post(d, secret)
                with report:
                    on_answer(d, answer)
        except BaseException as e:  # surfaced in the calling thread
            failures.append(e)
        finally:
            client.close()

    pool = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if failures:
        raise failures[0]


# --- serving -----------------------------------------------------------------------------------------

def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVE = ["-c", "python:bot.serving"]  # the Dockerfile's CMD, docs/github-app.md: every setting is in bot/serving.py


@contextlib.contextmanager
def gunicorn(env: Mapping[str, str], log: Path, workers: int | None = None,
             cwd: Path | None = None) -> Iterator[int]:
    """gunicorn as the documented deployment runs it (`gunicorn -c python:bot.serving bot.wsgi:app`:
    gevent workers, its timeouts), its settings from `env`, its output in `log`, `workers` (default
    bot/serving.py's) workers on a free loopback port; yields the port once every worker has booted
    and /healthz answers."""
    port = free_port()
    workers = workers or serving_workers()
    cmd = [sys.executable, "-m", "gunicorn", *SERVE, "--workers", str(workers), "--bind", f"127.0.0.1:{port}",
           "bot.wsgi:app"]
    root = cwd or Path(__file__).resolve().parent.parent
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=dict(env), cwd=root, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer /healthz within 60 s:\n{log.read_text()[-4000:]}")
            if log.read_text().count("Booting worker") >= workers and _healthy(port):
                break
            time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serving_workers() -> int:
    """The worker processes the documented deployment starts (bot/serving.py's `workers`)."""
    from bot import serving

    return serving.workers


def _healthy(port: int) -> bool:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        c.request("GET", "/healthz")
        ok = c.getresponse().status == 200
        c.close()
        return ok
    except OSError:
        return False


def server_env(secret: bytes, control_queue: str, key_prefix: str, label: str = "optimas",
               max_body_bytes: int = 1024 * 1024, redis_url: str = "redis://127.0.0.1:6379/0") -> dict[str, str]:
    """The receiver's environment: this process's, with the bot's settings for one test or run."""
    return {**os.environ, "OPTIMAS_WEBHOOK_SECRET": secret.decode(), "OPTIMAS_CONTROL_QUEUE": control_queue,
            "OPTIMAS_KEY_PREFIX": key_prefix, "OPTIMAS_REDIS_URL": redis_url, "OPTIMAS_LABEL": label,
            "OPTIMAS_MAX_BODY_BYTES": str(max_body_bytes)}
