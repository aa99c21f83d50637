"""Seeded fuzzing of the webhook receiver as it is served (gunicorn with `bot.wsgi:app`, settings from
the environment, a real Redis), then of what it enqueued: the control jobs, run one at a time by a
real RQ worker against the loopback GitHub API through the real PyGithub client.

2,000 signed deliveries from tests/webhook_fuzz.py (GitHub's example payloads, valid or mutated),
sent in rounds of 25 from 8 keep-alive connections at once; after each round its control jobs run,
as they would within moments of their deliveries in production. The server must answer every one
without a 5xx (Redis is up, so not even a 503), and the control jobs must enqueue no GPU job that
the rules below do not allow. The rules are written here independently of the bot (nothing from
bot.routing decides what is allowed):

  a GPU job for a pull request may only be enqueued when the delivery is signed, its sender has
  write, maintain or admin permission, the pull request is open, and the delivery is one of
    - `X-GitHub-Event: pull_request`, action "labeled", label.name the configured label, and the
      head it shows is the PR's current head;
    - `pull_request`, action "synchronize", the PR's labels carry the label, and the head is current
      (the bot also wants a writer's approval of the head the push replaced: this check allows more);
    - `issue_comment`, action "created", on a pull request, whose body's first line is exactly
      `/optimas run` (plain: a head shown by a pull_request delivery timestamped before the comment
      is the current head) or `/optimas run <the full 40-hex SHA of the current head>`, nothing
      more on that line (later lines are prose);
  and the GPU job names that repository, pull request and current head.

Every GPU job is cancelled as soon as it is seen (as if its run had ended), so that each later
trigger of the same PR and head is judged on its own rather than skipped as a duplicate. The test
also fails the other way: valid label, synchronize and `/optimas run <sha>` deliveries from writers
must each lead to a GPU job, and some plain `/optimas run` ones too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.exceptions import NoSuchJobError
from rq.job import Job
from webhook_fuzz import WORLD, Answer, Delivery, World, deliveries, gunicorn, post_all, server_env

SEED = int(os.environ.get("OPTIMAS_FUZZ_SEED", 20261204))
# the suite sends 2,000; the recorded run 100,000 (benchmarks/bench_webhook_fuzz.py says how)
COUNT = int(os.environ.get("OPTIMAS_FUZZ_DELIVERIES", 2000))
RECORD = os.environ.get("OPTIMAS_FUZZ_RECORD")  # a JSON file for what the run found, when set
SECRET = b"fuzz-webhook-secret"
WORKERS, CLIENTS = 2, 8
ROUND = 25  # deliveries sent together (concurrently) before the control jobs they enqueued run
WRITE = frozenset({"write", "maintain", "admin"})
SHA40 = re.compile(r"[0-9a-fA-F]{40}")


# --- the oracle: what a delivery may lead to, from the rules above ----------------------------------

@dataclass(frozen=True)
class Allowed:
    """A GPU job this delivery may lead to, and which rule allows it."""

    repo: str
    pr: int
    head: str
    rule: str  # label | synchronize | run-sha | run


def _payload(d: Delivery) -> dict[str, Any] | None:
    try:
        p = json.loads(d.body)
    except (ValueError, RecursionError):
        return None
    return p if isinstance(p, dict) else None


def _at(node: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _event(d: Delivery) -> str | None:
    """The event header as the server receives it (HTTP strips surrounding spaces and tabs)."""
    return d.event.strip(" \t") if d.event is not None else None


def _time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def shown_heads(sent: list[Delivery]) -> dict[tuple[str, int, str], float]:
    """(repo, PR, head) -> the earliest GitHub time a signed pull_request delivery showed it."""
    shown: dict[tuple[str, int, str], float] = {}
    for d in sent:
        p = _payload(d) if d.signature == "good" and _event(d) == "pull_request" else None
        repo, number = _at(p, "repository", "full_name"), _at(p, "pull_request", "number")
        sha, when = _at(p, "pull_request", "head", "sha"), _time(_at(p, "pull_request", "updated_at"))
        if isinstance(repo, str) and _is_int(number) and isinstance(sha, str) and when is not None:
            key = (repo, number, sha)
            shown[key] = min(when, shown.get(key, when))
    return shown


def allowed(d: Delivery, world: World, shown: dict[tuple[str, int, str], float]) -> Allowed | None:
    """The GPU job the rules allow this delivery to lead to, or None."""
    p = _payload(d) if d.signature == "good" else None
    login, repo = _at(p, "sender", "login"), _at(p, "repository", "full_name")
    if not isinstance(login, str) or world.permissions.get(login) not in WRITE or not isinstance(repo, str):
        return None
    event, action = _event(d), _at(p, "action")
    if event == "pull_request":
        number, head = _at(p, "pull_request", "number"), _at(p, "pull_request", "head", "sha")
        if not _is_int(number) or not isinstance(head, str) or world.open_pulls.get(number) != head:
            return None
        if action == "labeled" and _at(p, "label", "name") == world.label:
            return Allowed(repo, number, head, "label")
        labels = _at(p, "pull_request", "labels")
        if action == "synchronize" and isinstance(labels, list) and any(
                isinstance(x, dict) and x.get("name") == world.label for x in labels):
            return Allowed(repo, number, head, "synchronize")
        return None
    if event != "issue_comment" or action != "created":
        return None
    number, on_pull, body = _at(p, "issue", "number"), _at(p, "issue", "pull_request"), _at(p, "comment", "body")
    if not _is_int(number) or not isinstance(on_pull, dict) or not on_pull or not isinstance(body, str):
        return None
    current = world.open_pulls.get(number)
    # the command's line, as GitHub shows it (lines end at \n, \r\n, \r); later lines are prose
    words = re.split(r"\r\n?|\n", body.strip())[0].split()
    if current is None or words[:2] != [world.command, "run"]:
        return None
    if len(words) == 3 and SHA40.fullmatch(words[2]) and words[2].lower() == current:
        return Allowed(repo, number, current, "run-sha")
    approved = _time(_at(p, "comment", "created_at"))
    if len(words) == 2 and approved is not None and shown.get((repo, number, current), approved) < approved:
        return Allowed(repo, number, current, "run")
    return None


def may_be_voided(sent: list[Delivery], answers: dict[int, Answer], world: World,
                  verdicts: dict[int, Allowed | None]) -> set[int]:
    """Indices of synchronize deliveries that may find no approval of the PR's head: a writer's push
    runs only on a head a writer approved, so one is demanded only after a label or `/optimas run
    <sha>` approval queued in an earlier round, with no queued (202) synchronize by a sender without
    write access (which deletes the approval) in that round or any since."""
    voids: dict[int, list[int]] = defaultdict(list)  # PR -> rounds of voiding pushes
    approvals: dict[int, list[int]] = defaultdict(list)  # PR -> rounds of approvals that surely pin
    for d in sent:
        p = _payload(d) if d.signature == "good" and d.index in answers and answers[d.index].status == 202 else None
        number, login = _at(p, "pull_request", "number"), _at(p, "sender", "login")
        if _event(d) == "pull_request" and _at(p, "action") == "synchronize" and _is_int(number) \
                and world.permissions.get(login) not in WRITE:
            voids[number].append(d.index // ROUND)
        v = verdicts.get(d.index)
        if v is not None and v.rule in ("label", "run-sha") and p is not None:
            approvals[v.pr].append(d.index // ROUND)
    out = set()
    for d in sent:
        v = verdicts.get(d.index)
        if v is None or v.rule != "synchronize":
            continue
        r = d.index // ROUND
        if not any(c < r and not any(c <= vr <= r for vr in voids[v.pr]) for c in approvals[v.pr]):
            out.add(d.index)
    return out


# --- running what the server enqueued --------------------------------------------------------------

def _registries(queue: Queue) -> list[Any]:
    return [queue.started_job_registry, queue.finished_job_registry, queue.failed_job_registry,
            queue.deferred_job_registry, queue.scheduled_job_registry, queue.canceled_job_registry]


def all_job_ids(queue: Queue) -> set[str]:
    """Every job of the queue: queued, or in any of its registries."""
    ids = set(queue.get_job_ids())
    for registry in _registries(queue):
        ids.update(registry.get_job_ids())
    return ids


class ObservedWorker(SimpleWorker):
    """A real RQ worker (in-process, one job at a time) that, after each job, records the GPU jobs
    that job enqueued, by job id, and cancels them (as if their runs had ended)."""

    def __init__(self, control: Queue, gpu: Queue):
        super().__init__([control], connection=control.connection)
        self.gpu = gpu
        self.made: dict[str, list[dict[str, Any]]] = {}

    def execute_job(self, job: Job, queue: Queue) -> None:
        before = all_job_ids(self.gpu)
        try:
            super().execute_job(job, queue)
        finally:
            new = [Job.fetch(i, connection=self.connection) for i in sorted(all_job_ids(self.gpu) - before)]
            self.made[job.id] = [{**(j.kwargs or {}), "id": j.id} for j in new]
            for j in new:
                if not j.is_canceled:
                    j.cancel()


def delete_everything(conn: redis.Redis, queue: Queue, known: set[str]) -> None:
    """Delete the queue, its jobs (those in its registries and `known`) and its registries."""
    for job_id in known | all_job_ids(queue):
        try:
            Job.fetch(job_id, connection=conn).delete()
        except NoSuchJobError:
            pass
    queue.delete(delete_jobs=True)
    for key in conn.scan_iter(f"rq:*:{queue.name}"):
        conn.delete(key)


# --- the test ---------------------------------------------------------------------------------------

def _top(counter: Counter, n: int = 40) -> str:
    return "\n".join(f"    {count:5d}  {label}" for label, count in counter.most_common(n))


@pytest.mark.slow
def test_fuzzed_deliveries_get_no_5xx_and_enqueue_only_the_gpu_jobs_the_rules_allow(env, tmp_path):
    gh, conn, gpu = env
    world = WORLD
    gh.permissions = dict(world.permissions)
    for number, head in world.open_pulls.items():
        gh.add_pull(world.repo, number, head)
    for number, head in world.closed_pulls.items():
        gh.add_pull(world.repo, number, head, state="closed")
    control = Queue(f"test-fuzz-control-{uuid.uuid4().hex[:8]}", connection=conn)
    sent = list(deliveries(SEED, COUNT, world))
    answers: dict[int, Answer] = {}
    log = tmp_path / "gunicorn.log"
    made: dict[str, list[dict[str, Any]]] = {}
    try:
        environment = server_env(SECRET, control.name, os.environ["OPTIMAS_KEY_PREFIX"], world.label)
        worker = ObservedWorker(control, gpu)
        made = worker.made
        with gunicorn(environment, log, workers=WORKERS) as port:
            for start in range(0, len(sent), ROUND):
                post_all(port, sent[start:start + ROUND], SECRET, lambda d, a: answers.__setitem__(d.index, a),
                         threads=CLIENTS)
                worker.work(burst=True, logging_level="WARNING")
        queued = {json.loads(a.body)["job"]: sent[i].delivery_id for i, a in answers.items() if a.status == 202}
        unaccounted = all_job_ids(gpu) - {g["id"] for jobs in made.values() for g in jobs}
    finally:
        delete_everything(conn, control, set(made))
        delete_everything(conn, gpu, {g["id"] for jobs in made.values() for g in jobs})

    failures: list[str] = []
    statuses = Counter(a.status for a in answers.values())
    summary = f"{len(answers)} of {len(sent)} answered; statuses {dict(sorted(statuses.items()))}"
    if len(answers) != len(sent):
        failures.append(f"not every delivery was answered: {summary}")

    # 1. No 5xx: Redis is up, so not even a 503.
    errors = Counter(sent[i].label for i, a in answers.items() if a.status >= 500)
    if errors:
        samples = [f"    {sent[i].label}: {a.status} {a.body[:120]!r} <- body {sent[i].body[:80]!r}"
                   for i, a in sorted(answers.items()) if a.status >= 500][:10]
        failures.append(f"{sum(errors.values())} deliveries got a 5xx ({summary}), by label:\n{_top(errors)}\n"
                        "  samples:\n" + "\n".join(samples))
    lost = Counter(f"{sent[i].label}: {a.error[:80]}" for i, a in answers.items() if a.status == 0)
    if lost:
        failures.append(f"{sum(lost.values())} deliveries got no answer:\n{_top(lost)}")

    # 2. The server never crashed nor logged a traceback.
    text = log.read_text(errors="replace")
    boots, tracebacks = text.count("Booting worker"), text.count("Traceback (most recent call last)")
    if boots != WORKERS or tracebacks or "WORKER TIMEOUT" in text:
        failures.append(f"gunicorn: {boots} worker boots (expected {WORKERS}), {tracebacks} tracebacks, "
                        f"timeouts: {'WORKER TIMEOUT' in text}; first lines of its log:\n{text[:3000]}")

    # 3. No GPU job that the rules do not allow.
    shown = shown_heads(sent)
    by_id: dict[str, list[Delivery]] = defaultdict(list)
    for d in sent:
        by_id[d.delivery_id].append(d)
    verdicts = {d.index: allowed(d, world, shown) for d in sent}
    disallowed: Counter = Counter()
    details: list[str] = []
    gpu_of_delivery: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for control_id, gpu_jobs in made.items():
        delivery_id = queued.get(control_id)
        origin = by_id[delivery_id][0] if delivery_id else None
        verdict = verdicts[origin.index] if origin else None
        for g in gpu_jobs:
            if delivery_id:
                gpu_of_delivery[delivery_id].append(g)
            if verdict is None or (g.get("repo"), g.get("pr"), g.get("head_sha")) != (
                    verdict.repo, verdict.pr, verdict.head):
                label = origin.label if origin else f"(a control job no 202 answer named: {control_id})"
                disallowed[label] += 1
                details.append(f"    {label}: GPU job {g}" + (f" <- {origin.event!r} {origin.body[:300]!r}"
                                                                 if origin else ""))
    if disallowed or unaccounted:
        failures.append(f"{sum(disallowed.values())} GPU jobs the rules do not allow, by delivery label:\n"
                        f"{_top(disallowed)}\n  samples:\n" + "\n".join(details[:8]) +
                        (f"\n  and {len(unaccounted)} GPU jobs that no control job run here made" if unaccounted
                         else ""))

    # 4. The other way: valid deliveries that the rules allow did run. A writer's push runs only on
    # an approved head, and a push by someone without write access deletes the approval until a
    # writer labels the PR again or approves a SHA, so a synchronize is demanded only after a sure
    # approval with no such push since (in its round of concurrent deliveries, or between).
    may_void = may_be_voided(sent, answers, world, verdicts)
    wanted = {d.delivery_id: v for d in sent if d.mutation == "valid" and (v := verdicts[d.index])
              and not (v.rule == "synchronize" and d.index in may_void)}
    missed = Counter(f"{by_id[i][0].label} ({v.rule})" for i, v in wanted.items()
                     if v.rule != "run" and not gpu_of_delivery.get(i))
    ran = Counter(v.rule for i, v in wanted.items() if gpu_of_delivery.get(i))
    if missed:
        failures.append(f"{sum(missed.values())} valid deliveries that the rules allow led to no GPU job:\n"
                        f"{_top(missed)}")
    if not all(ran[rule] for rule in ("label", "synchronize", "run-sha", "run")):
        failures.append(f"valid deliveries led to GPU jobs by rule {dict(ran)}: expected some of each "
                        f"(label, synchronize, run-sha, run) among {Counter(v.rule for v in wanted.values())}")
    if RECORD:
        _record(Path(RECORD), sent, statuses, made, disallowed, unaccounted, ran, missed, failures)
    assert not failures, "\n\n".join(failures)


def _record(path: Path, sent: list[Delivery], statuses: Counter, made: dict[str, list[dict[str, Any]]],
            disallowed: Counter, unaccounted: set[str], ran: Counter, missed: Counter, failures: list[str]) -> None:
    """What the run found, as the recorded benchmark keeps it."""
    env = {k: os.environ[k] for k in ("OPTIMAS_FUZZ_DELIVERIES", "OPTIMAS_FUZZ_SEED", "OPTIMAS_FUZZ_RECORD")
           if k in os.environ}
    record = {"command": " ".join(f"{k}={v}" for k, v in env.items()) + " python -m pytest tests/test_bot_fuzz.py",
              "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "seed": SEED,
              "deliveries": len(sent),
              "server": f"tests/webhook_fuzz.py gunicorn(), {WORKERS} workers, {CLIENTS} clients, rounds of {ROUND}",
              "statuses": {str(k): v for k, v in sorted(statuses.items())},
              "5xx": sum(v for k, v in statuses.items() if k >= 500), "unanswered": statuses.get(0, 0),
              "control_jobs_run": len(made), "gpu_jobs": sum(len(v) for v in made.values()),
              "gpu_jobs_the_rules_do_not_allow": sum(disallowed.values()) + len(unaccounted),
              "gpu_jobs_by_rule": dict(ran), "allowed_but_not_run": sum(missed.values()),
              "pass": not failures, "failures": [f[:2000] for f in failures]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
