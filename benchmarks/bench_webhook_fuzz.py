"""Webhook fuzzing at scale: seeded, signed, mutated deliveries through the receiver as it is served.

Serves the App as the documented deployment does (`gunicorn -c python:bot.serving bot.wsgi:app`,
settings from the environment, the local Redis, a control queue and key prefix of the run's own) and
sends it the deliveries of tests/webhook_fuzz.py (GitHub's example payloads, valid or mutated: type
swaps, dropped and junk keys, lone surrogates, deep nesting, huge and odd strings, odd event headers and actions, odd
encodings, bad signatures, redeliveries) from several client threads over keep-alive connections.
Counts the answers per status, per mutation and per kind; every 5xx and every delivery that got no
answer is listed with its label and the start of its body; the server's log is checked for
tracebacks and restarted workers. The control jobs are not run (tests/test_bot_fuzz.py runs them);
the control queue and the run's keys are deleted at the end.

The control jobs and the rules' oracle (no GPU job the rules do not allow) are tests/test_bot_fuzz.py's;
at this scale it runs as
  OPTIMAS_FUZZ_DELIVERIES=100000 OPTIMAS_FUZZ_RECORD=benchmarks/results/webhook-fuzz-control-<date>.json \
      python -m pytest tests/test_bot_fuzz.py
which records what it found there (statuses, control jobs run, GPU jobs by rule and any the rules forbid).

Usage: python benchmarks/bench_webhook_fuzz.py [--deliveries 100000] [--seed 20261204] [--workers 2]
       [--clients 8] [--max-body-bytes 1048576] [--out benchmarks/results]
Writes <out>/webhook-fuzz-<date>.json (UTC date) and prints it; exits 1 when any delivery got a
5xx or no answer, or the server logged a traceback or restarted a worker.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import redis
from rq import Queue

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from webhook_fuzz import Answer, Delivery, deliveries, gunicorn, post_all, server_env  # noqa: E402

SECRET = b"bench-fuzz-secret"
SAMPLES = 200  # 5xx and unanswered deliveries listed in full at most


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cleanup(conn: redis.Redis, queue: Queue, prefix: str) -> int:
    """Delete the control queue with its jobs and registries, and every key under the prefix."""
    jobs = queue.count
    queue.delete(delete_jobs=True)
    for pattern in (f"rq:*:{queue.name}", f"{prefix}:*"):
        batch = []
        for key in conn.scan_iter(pattern, count=1000):
            batch.append(key)
            if len(batch) == 1000:
                conn.delete(*batch)
                batch = []
        if batch:
            conn.delete(*batch)
    return jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deliveries", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    ap.add_argument("--clients", type=int, default=8, help="client threads, one keep-alive connection each")
    ap.add_argument("--max-body-bytes", type=int, default=1024 * 1024, help="OPTIMAS_MAX_BODY_BYTES of the server")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()

    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    run = uuid.uuid4().hex[:8]
    control, prefix = f"bench-fuzz-control-{run}", f"bench-fuzz-{run}"
    env = server_env(SECRET, control, prefix, max_body_bytes=args.max_body_bytes)
    statuses: Counter = Counter()
    by_mutation: dict[str, Counter] = defaultdict(Counter)
    by_family: dict[str, Counter] = defaultdict(Counter)
    by_kind: dict[str, Counter] = defaultdict(Counter)
    errors: Counter = Counter()
    error_samples: list[dict[str, Any]] = []
    unanswered: list[dict[str, Any]] = []
    latencies: list[float] = []
    retried = 0
    t0 = time.perf_counter()

    def on_answer(d: Delivery, a: Answer) -> None:
        nonlocal retried
        status = str(a.status)
        statuses[status] += 1
        by_mutation[d.mutation][status] += 1
        by_family[d.mutation.split(":")[0]][status] += 1
        by_kind[d.kind][status] += 1
        latencies.append(a.seconds)
        retried += a.retried
        if a.status >= 500 or a.status == 0:
            errors[d.label] += 1
            sample = {"index": d.index, "label": d.label, "event": d.event, "status": a.status, "error": a.error,
                      "answer": a.body[:200].decode("utf-8", "replace"), "body_bytes": len(d.body),
                      "body_prefix": d.body[:200].decode("ascii", "backslashreplace")}
            target = unanswered if a.status == 0 else error_samples
            if len(target) < SAMPLES:
                target.append(sample)
        done = sum(statuses.values())
        if done % 10_000 == 0:
            sys.stderr.write(f"{done} deliveries, {time.perf_counter() - t0:.0f} s, {dict(statuses)}\n")

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "gunicorn.log"
        try:
            with gunicorn(env, log, workers=args.workers, cwd=REPO) as port:
                t0 = time.perf_counter()
                post_all(port, deliveries(args.seed, args.deliveries), SECRET, on_answer, threads=args.clients)
                elapsed = time.perf_counter() - t0
        finally:
            jobs = _cleanup(conn, Queue(control, connection=conn), prefix)
        text = log.read_text(errors="replace")
    boots, tracebacks = text.count("Booting worker"), text.count("Traceback (most recent call last)")
    lat = sorted(latencies)
    fivexx = sum(n for s, n in statuses.items() if s.startswith("5"))
    result = {
        "command": "python benchmarks/bench_webhook_fuzz.py " + shlex.join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _git("rev-parse", "HEAD"),
        "bot_modified_since_commit": bool(_git("status", "--porcelain", "--", "bot", "runner")),
        "server": f"gunicorn -c python:bot.serving --workers {args.workers} bot.wsgi:app "
                  f"(OPTIMAS_MAX_BODY_BYTES={args.max_body_bytes})",
        "cpus": os.cpu_count(), "clients": args.clients, "deliveries": args.deliveries, "seed": args.seed,
        "seconds": round(elapsed, 1), "deliveries_per_s": round(args.deliveries / elapsed, 1),
        "latency_ms": {"p50": round(statistics.median(lat) * 1000, 2),
                       "p99": round(lat[int(0.99 * (len(lat) - 1))] * 1000, 2), "max": round(lat[-1] * 1000, 2)},
        "statuses": dict(sorted(statuses.items())), "5xx": fivexx, "unanswered": statuses.get("0", 0),
        "resent_on_fresh_connection": retried, "control_jobs_enqueued_then_deleted": jobs,
        "server_log": {"worker_boots": boots, "expected_boots": args.workers, "tracebacks": tracebacks,
                       "worker_timeouts": text.count("WORKER TIMEOUT")},
        "errors_by_label": dict(errors.most_common()), "error_samples": error_samples,
        "unanswered_samples": unanswered,
        "by_family": {k: dict(sorted(v.items())) for k, v in sorted(by_family.items())},
        "by_kind": {k: dict(sorted(v.items())) for k, v in sorted(by_kind.items())},
        "by_mutation": {k: dict(sorted(v.items())) for k, v in sorted(by_mutation.items())},
    }
    result["pass"] = not fivexx and not statuses.get("0") and not tracebacks and boots == args.workers
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"webhook-fuzz-{time.strftime('%Y-%m-%d', time.gmtime())}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=True) + "\n")
    summary = {k: v for k, v in result.items() if k not in ("by_mutation", "by_kind", "error_samples",
                                                            "unanswered_samples")}
    print(json.dumps(summary, indent=2))
    print(f"written: {path}")
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
