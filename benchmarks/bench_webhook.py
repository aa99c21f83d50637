"""Webhook acknowledgement latency under load, and exactly-once enqueueing.

Serves the Flask app for real (werkzeug, threaded) against the local Redis, and sends signed
`pull_request.labeled` deliveries from a load generator on loopback at a fixed rate for a bounded
time; every delivery is sent ten times. Reports p50/p99 latency and checks that the queue holds one
job per distinct delivery. Target: p99 <= 50 ms at 200 requests/s, zero duplicate jobs.

Usage: python benchmarks/bench_webhook.py [--rate 200] [--seconds 10] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import logging
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import redis
from rq import Queue
from werkzeug.serving import make_server

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bot.app import create_app  # noqa: E402
from bot.settings import Settings  # noqa: E402

SECRET = b"bench-secret"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=10, help="times each delivery is sent")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per request
    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    settings = Settings(webhook_secret=SECRET, control_queue=f"bench-{uuid.uuid4().hex[:8]}")
    srv = make_server("127.0.0.1", 0, create_app(settings, conn), threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    payload = json.loads((REPO / "tests" / "fixtures" / "github" / "payload-examples" / "pull_request" /
                          "labeled.payload.json").read_text())
    payload["label"]["name"] = "optimas"
    total = int(args.rate * args.seconds)
    deliveries = [str(uuid.uuid4()) for _ in range(total // args.repeats)]
    schedule = [d for d in deliveries for _ in range(args.repeats)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()

    def send(delivery: str) -> None:
        body = dict(payload)
        body["pull_request"] = dict(payload["pull_request"], number=hash(delivery) % 100000)
        raw = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery,
                   "X-Hub-Signature-256": "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest()}
        c = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=10)
        t0 = time.perf_counter()
        c.request("POST", "/webhook", raw, headers)
        r = c.getresponse()
        r.read()
        dt = (time.perf_counter() - t0) * 1000
        c.close()
        with lock:
            latencies.append(dt)
            statuses[r.status] = statuses.get(r.status, 0) + 1

    threads = []
    start = time.perf_counter()
    for i, d in enumerate(schedule):
        due = start + i / args.rate
        time.sleep(max(0.0, due - time.perf_counter()))
        t = threading.Thread(target=send, args=(d,))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    srv.shutdown()
    q = Queue(settings.control_queue, connection=conn)
    jobs = q.count
    q.delete(delete_jobs=True)
    for d in deliveries:
        conn.delete(f"optimas:delivery:{d}")
    lat = sorted(latencies)
    result = {
        "command": "python benchmarks/bench_webhook.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "requests": len(lat), "distinct_deliveries": len(deliveries), "repeats": args.repeats,
        "target_rate": args.rate, "achieved_rate": round(len(lat) / elapsed, 1),
        "p50_ms": round(statistics.median(lat), 2), "p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 2),
        "max_ms": round(lat[-1], 2), "statuses": statuses, "jobs_enqueued": jobs,
        "duplicate_jobs": jobs - len(deliveries),
        "pass": lat[int(0.99 * (len(lat) - 1))] <= 50 and jobs == len(deliveries),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "webhook.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
