"""Webhook acknowledgement latency under open-loop load, and exactly one control job per distinct delivery.

Serves the App as the documented deployment does (the Dockerfile's CMD, docs/github-app.md:
`gunicorn -c python:bot.serving bot.wsgi:app`, gevent workers with every setting in bot/serving.py;
settings from the environment, in a child process; for a tree without bot/serving.py, the command it
documented, `gunicorn --workers 2 --threads 8 bot.wsgi:app`; `--server werkzeug`: werkzeug's threaded
development server in this process) against the local Redis, and sends signed `pull_request.labeled`
deliveries (label "optimas") at fixed target rates, each rate for a bounded time, one rate after the
other in one run (`--rates 200,500,1000 --seconds 20`). Records one JSON file,
benchmarks/results/webhook-distinct-<date>.json.

Deliveries. Every request carries a distinct X-GitHub-Delivery, except a fraction (--redeliveries,
default 0.1) that resend an earlier delivery of the same rate (same id, same body), as GitHub's
"Redeliver" does. The bodies are GitHub's example `pull_request.labeled` payload for --prs different
pull requests (each its own number and head SHA, and each delivery its own `updated_at`: the receiver
takes a body sent again under a new id for a replay), built and signed (X-Hub-Signature-256) before
any clock starts. Checked at every rate: each distinct delivery got exactly one 202 and each
redelivery a 200; the control queue holds exactly one job per distinct delivery (the delivery ids in
the jobs' meta, read back from Redis), no more, no fewer.

Load generator. A separate process (it shares no GIL with the server, even with --server werkzeug)
running one asyncio event loop with a small HTTP/1.1 protocol of its own (no client library); every
request's bytes are prepared before the rate starts. Open loop: request i is due at start + i/rate,
whatever happened to the requests before it, and is started at that time on its own task however many
are still waiting for their responses. By default each request opens its own TCP connection
(`Connection: close`), as a proxy without upstream keep-alive forwards GitHub's deliveries;
--keepalive reuses a pool of keep-alive connections instead (a connection idle for 1 s is dropped,
below gunicorn's 2 s keep-alive). It costs about 0.3-0.5 ms of CPU per request (most of it the
kernel's TCP connect and close on loopback; about half that with --keepalive), which on a 2-core
machine is CPU the server does not get: `generator_cpu_s` reports it.

Latency is measured from the request's scheduled send time (not from when the generator got round to
sending it) to the last byte of the response, so time a request waits in the generator, in the
kernel's accept backlog or in the server is all counted (no coordinated omission). `send_lag_ms` is
the generator's own delay (actual start of connect/send minus the scheduled time): it shows whether
the generator kept up. `achieved_rate` is responses per second over the span from the first
scheduled send to the last response; `sent_rate` is requests started per second.

CPU, per rate: CPU seconds of the server (gunicorn's master and workers, or this process), of Redis
(its INFO: the whole server, so other clients' commands count too), of the generator, and of the
whole machine; `other_cpu_s` is what the machine spent beyond those (other load on the machine; the
machine's counters are sampled by ticks, so it is approximate, a few percent below zero at times), and
`steal_s` the time the hypervisor kept the machine's CPUs from running. `details` adds the server's
system CPU, CPU per request and context switches per request (its threads, from /proc).

Targets: p99 < 1 s (--p99-target-ms) at every rate up to 500 deliveries/s on the 2-core development
machine; exactly one control job per distinct delivery at every rate; at 1,000/s (beyond what 2 cores
answer within the p99 target, with the generator's CPU) no connection error nor timeout.

--app-rev REV serves bot/ as committed at a git revision (exported to a temporary folder), and
--app-root DIR another checkout's bot/, with this benchmark, for A/B comparisons; the result records
the commit (and for a checkout its modified files under bot/) and a hash of the served bot/app.py.
The result also records the benchmark's niceness (`nice`). On a shared machine `nice -n -15 python
benchmarks/bench_webhook.py ...` lessens, but does not remove, the effect of other work (Redis keeps
its own priority): `other_load` per rate says how much of the machine other work took; above about
0.1 the tail latencies say more about that work than about the receiver.

--profile DIR runs `py-spy record --format raw` (collapsed stacks) on every gunicorn worker during
each rate (py-spy from PyPI, next to this Python or on PATH): every active thread (wall time, waits
for the GIL and for Redis included), or with --profile-gil only the thread holding the GIL (CPU spent
in Python). py-spy's own CPU shows in other_cpu_s, and it slows the server: profile apart from the
runs whose latencies you record.

Usage: python benchmarks/bench_webhook.py [--rates 200,500,1000] [--seconds 20] [--redeliveries 0.1]
       [--prs 2000] [--server gunicorn|werkzeug] [--workers N] [--threads N] [--worker-class CLASS]
       [--keepalive] [--timeout 30] [--profile DIR [--profile-gil]] [--app-rev REV | --app-root DIR] [--note TEXT]
       [--out benchmarks/results] [--name FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import hashlib
import hmac
import io
import json
import logging
import multiprocessing
import os
import platform
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path

import redis
from rq import Queue
from rq.job import Job

REPO = Path(__file__).resolve().parent.parent

SECRET = b"bench-secret"
FIXTURE = REPO / "tests" / "fixtures" / "github" / "payload-examples" / "pull_request" / "labeled.payload.json"
KEEPALIVE_IDLE_S = 1.0  # a pooled connection idle longer is dropped (gunicorn closes it after 2 s)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="200,500,1000", help="target deliveries per second, comma-separated")
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of each rate")
    ap.add_argument("--redeliveries", type=float, default=0.1,
                    help="fraction of the requests that resend an earlier delivery (0 to 0.1)")
    ap.add_argument("--prs", type=int, default=2000, help="distinct pull requests the deliveries are spread over")
    ap.add_argument("--server", choices=["gunicorn", "werkzeug"], default="gunicorn")
    ap.add_argument("--workers", type=int, default=None, help="gunicorn worker processes (default bot/serving.py's)")
    ap.add_argument("--threads", type=int, default=None, help="gunicorn threads per worker (gthread workers only)")
    ap.add_argument("--worker-class", default=None, help="gunicorn --worker-class (default bot/serving.py's)")
    ap.add_argument("--keepalive", action="store_true", help="a pool of keep-alive connections, not one per request")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds a request may take before it counts as failed")
    ap.add_argument("--p99-target-ms", type=float, default=1000.0)
    ap.add_argument("--pause", type=float, default=3.0, help="seconds between two rates")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", type=Path, default=None, help="folder for py-spy's collapsed stacks per worker")
    ap.add_argument("--profile-gil", action="store_true",
                    help="py-spy samples only the thread holding the GIL (CPU in Python), not every active thread "
                         "(wall time, waits for the GIL and for Redis included)")
    ap.add_argument("--app-root", type=Path, default=REPO,
                    help="the checkout whose bot/ is served (default this one), e.g. an export of another commit")
    ap.add_argument("--app-rev", default=None,
                    help="serve bot/ as committed at this git revision (exported to a temporary folder)")
    ap.add_argument("--note", default=None, help="a remark recorded with the results")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--name", default=None, help="result file name (default webhook-distinct-<date>[b, c...].json)")
    args = ap.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    if not rates or min(rates) <= 0:
        ap.error("--rates: expected positive numbers")
    if not 0 <= args.redeliveries <= 0.1:
        ap.error("--redeliveries: expected a fraction between 0 and 0.1")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log line per request
    if args.app_rev:
        export = tempfile.TemporaryDirectory(prefix="bench-webhook-")
        args.app_root = _export(args.app_rev, Path(export.name))
    args.app_root = args.app_root.resolve()
    sys.path.insert(0, str(args.app_root))
    from bot.settings import Settings

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server and clean Redis on SIGTERM too
    conn = redis.Redis.from_url("redis://127.0.0.1:6379/0")
    tag = uuid.uuid4().hex[:8]
    settings = Settings(webhook_secret=SECRET, control_queue=f"bench-{tag}", key_prefix=f"bench-{tag}")
    queue = Queue(settings.control_queue, connection=conn)
    server = serve(args, settings, conn)
    ctx = multiprocessing.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    generator = ctx.Process(target=_generator_main, args=(child_end, server.port, args.prs, args.keepalive,
                                                         args.timeout), daemon=True)
    rng = random.Random(args.seed)
    phases = []
    try:
        generator.start()
        if _receive(parent_end, generator) != "ready":
            raise RuntimeError("the load generator did not start")
        # Warm-up (not recorded), 2 s at the highest rate: every worker imports, asks Redis its version
        # and opens the Redis connections that rate needs (each new one costs redis-py about 1 ms).
        warm = max(rates)
        _run_phase(parent_end, generator, _schedule(rng, warm, 2.0, 0.0, args.prs), warm)
        _settle(queue)
        _clear(conn, queue, settings)
        for i, rate in enumerate(rates):
            if i:
                time.sleep(args.pause)
            phases.append(_measure(args, rate, rng, (parent_end, generator), server, conn, queue, settings))
            print(json.dumps(phases[-1]["summary"]), flush=True)
    finally:
        if generator.is_alive():
            parent_end.send(None)
            generator.join(timeout=10)
        server.stop()
        _clear(conn, queue, settings)
    result = {
        "command": "python benchmarks/bench_webhook.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cpus": os.cpu_count(), "nice": os.nice(0),
        "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
        "server": server.command,
        "connections": "keep-alive pool" if args.keepalive else "one TCP connection per request",
        "app": _tree(args.app_root, args.app_rev),
        "latency": "from each request's scheduled send time to the last byte of its response (open loop)",
        "seconds_per_rate": args.seconds, "redelivery_fraction": args.redeliveries, "prs": args.prs,
        "p99_target_ms": args.p99_target_ms,
        **({"note": args.note} if args.note else {}),
        "rates": [p["summary"] for p in phases],
        "details": [p["details"] for p in phases],
    }
    result["pass"] = bool(phases) and all(p["summary"]["pass"] for p in phases)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / (args.name or _free_name(args.out, f"webhook-distinct-{time.strftime('%Y-%m-%d')}"))
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path}")
    print(json.dumps(result["rates"], indent=2))
    return 0 if result["pass"] else 1


def _schedule(rng: random.Random, rate: float, seconds: float, redeliveries: float,
              prs: int) -> list[tuple[str, int, bool]]:
    """(delivery id, PR index, is a redelivery) for each request, in send order."""
    total = max(1, int(rate * seconds))
    again = set(rng.sample(range(1, total), round(redeliveries * total))) if total > 1 else set()
    first = rng.randrange(prs)
    sent: list[tuple[str, int]] = []
    out = []
    for i in range(total):
        if i in again:
            delivery, pr = rng.choice(sent)
            out.append((delivery, pr, True))
        else:
            delivery, pr = str(uuid.uuid4()), (first + len(sent)) % prs
            sent.append((delivery, pr))
            out.append((delivery, pr, False))
    return out


def _run_phase(pipe, generator, schedule, rate: float) -> dict:
    pipe.send((rate, [(d, pr) for d, pr, _ in schedule]))
    return _receive(pipe, generator)


def _receive(pipe, generator):
    while not pipe.poll(1.0):
        if not generator.is_alive():
            raise RuntimeError(f"the load generator exited ({generator.exitcode})")
    return pipe.recv()


def _measure(args, rate, rng, pipe, server, conn, queue, settings) -> dict:
    schedule = _schedule(rng, rate, args.seconds, args.redeliveries, args.prs)
    distinct = {d for d, _, again in schedule if not again}
    profilers = _start_profilers(args, server, rate)
    load = os.getloadavg()
    before = _cpu_snapshot(server, conn)
    out = _run_phase(*pipe, schedule, rate)
    after = _cpu_snapshot(server, conn)
    for p in profilers:
        p.wait(timeout=args.seconds + 60)
    settled = _settle(queue)
    jobs = _job_deliveries(conn, queue)
    _clear(conn, queue, settings)

    lat = sorted(out["latency_ms"][i] for i in range(len(schedule)) if out["status"][i] is not None)
    from_send = sorted(out["from_send_ms"][i] for i in range(len(schedule)) if out["status"][i] is not None)
    lag = sorted(out["send_lag_ms"])
    statuses: dict[str, int] = {}
    errors: dict[str, int] = {}
    accepted: dict[str, int] = {}
    for (delivery, _, _), status, error in zip(schedule, out["status"], out["error"], strict=True):
        if status is None:
            errors[error] = errors.get(error, 0) + 1
        else:
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            if status == 202:
                accepted[delivery] = accepted.get(delivery, 0) + 1
    job_counts: dict[str, int] = {}
    for d in jobs:
        job_counts[d] = job_counts.get(d, 0) + 1
    missing = len(distinct - set(job_counts))
    duplicated = sum(1 for n in job_counts.values() if n > 1)
    foreign = sum(1 for d in job_counts if d not in distinct)
    exactly_once = len(jobs) == len(distinct) and not missing and not duplicated and not foreign
    acks_ok = (all(accepted.get(d) == 1 for d in distinct) and len(accepted) == len(distinct)
               and statuses.get("202", 0) == len(distinct) and statuses.get("200", 0) == len(schedule) - len(distinct))
    cpu = {k: round(after[k] - before[k], 2) for k in before if k not in ("wall", "server_sys_s",
                                                                          "server_context_switches")}
    wall = after["wall"] - before["wall"]
    cpu["other_cpu_s"] = round(cpu.pop("machine_busy_s") - cpu["server_cpu_s"] - cpu["redis_cpu_s"]
                               - out["generator_cpu_s"], 2)
    cpu["generator_cpu_s"] = round(out["generator_cpu_s"], 2)
    cpu["wall_s"] = round(wall, 2)
    # the share of the machine's CPU that other work took while this rate ran: above ~0.1 the numbers
    # say more about that work than about the receiver
    other_load = round(max(0.0, cpu["other_cpu_s"]) / ((os.cpu_count() or 1) * wall), 2)
    p99 = _pct(lat, 0.99)
    summary = {
        "target_rate": rate, "seconds": args.seconds, "requests": len(schedule), "responses": len(lat),
        "distinct_deliveries": len(distinct), "redeliveries": len(schedule) - len(distinct),
        "sent_rate": round(out["sent_rate"], 1), "achieved_rate": round(out["achieved_rate"], 1),
        "p50_ms": _r(_pct(lat, 0.5)), "p90_ms": _r(_pct(lat, 0.9)), "p99_ms": _r(p99),
        "p999_ms": _r(_pct(lat, 0.999)), "max_ms": _r(lat[-1] if lat else None),
        "statuses": statuses, "errors": errors,
        "jobs_enqueued": len(jobs), "jobs_missing": missing, "deliveries_with_several_jobs": duplicated,
        "jobs_for_unknown_deliveries": foreign, "exactly_one_job_per_delivery": exactly_once,
        "one_202_per_delivery_200_per_redelivery": acks_ok,
        "send_lag_p99_ms": _r(_pct(lag, 0.99)), "send_lag_max_ms": _r(lag[-1] if lag else None),
        "cpu_s": cpu, "other_load": other_load, "loadavg_1m_before": round(load[0], 2),
        "pass": bool(lat) and p99 is not None and p99 < args.p99_target_ms and exactly_once and acks_ok
        and not errors,
    }
    if not settled:
        summary["note"] = "the queue length was still changing 60 s after the last response"
    details = {"target_rate": rate, "generator_sys_s": round(out["generator_sys_s"], 2),
               "server_sys_s": round(after["server_sys_s"] - before["server_sys_s"], 2),
               "server_cpu_ms_per_request": round(1000 * cpu["server_cpu_s"] / len(schedule), 3),
               "server_context_switches_per_request": round(
                   (after["server_context_switches"] - before["server_context_switches"]) / len(schedule), 1),
               "from_send_p50_ms": _r(_pct(from_send, 0.5)), "from_send_p99_ms": _r(_pct(from_send, 0.99)),
               "send_lag_p50_ms": _r(_pct(lag, 0.5)),
               "latency_ms_by_second": _by_second(out, rate)}
    return {"summary": summary, "details": details}


def _by_second(out: dict, rate: float) -> list[dict]:
    """p50/p99/max of the requests scheduled in each second: shows a backlog building up."""
    buckets: dict[int, list[float]] = {}
    for i, (ms, status) in enumerate(zip(out["latency_ms"], out["status"], strict=True)):
        if status is not None:
            buckets.setdefault(int(i / rate), []).append(ms)
    rows = []
    for s in sorted(buckets):
        v = sorted(buckets[s])
        rows.append({"second": s, "n": len(v), "p50": _r(_pct(v, 0.5)), "p99": _r(_pct(v, 0.99)), "max": _r(v[-1])})
    return rows


def _pct(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def _settle(queue: Queue, limit_s: float = 60.0) -> bool:
    """Wait until the control queue stops growing (a request the generator gave up on may still land)."""
    last, deadline = -1, time.monotonic() + limit_s
    while time.monotonic() < deadline:
        n = queue.count
        if n == last:
            return True
        last = n
        time.sleep(1.0)
    return False


def _job_deliveries(conn: redis.Redis, queue: Queue) -> list[str]:
    ids = queue.get_job_ids()
    out = []
    for i in range(0, len(ids), 1000):
        for job in Job.fetch_many(ids[i:i + 1000], connection=conn):
            out.append((job.meta or {}).get("delivery", "") if job is not None else "")
    return out


def _clear(conn: redis.Redis, queue: Queue, settings) -> None:
    queue.delete(delete_jobs=True)
    keys = list(conn.scan_iter(f"{settings.key_prefix}:*", count=1000))
    for i in range(0, len(keys), 1000):
        conn.delete(*keys[i:i + 1000])


def _free_name(folder: Path, stem: str) -> str:
    for suffix in ["", *"bcdefghijklmnopqrstuvwxyz"]:
        if not (folder / f"{stem}{suffix}.json").exists():
            return f"{stem}{suffix}.json"
    return f"{stem}-{uuid.uuid4().hex[:6]}.json"


def _rev(rev: str) -> str:
    return subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout.strip()


def _export(rev: str, folder: Path) -> Path:
    """bot/ and runner/ as committed at `rev`, in `folder`."""
    archive = subprocess.run(["git", "archive", "--format=tar", _rev(rev), "bot", "runner"], cwd=REPO,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _tree(root: Path, rev: str | None = None) -> dict:
    """The served code: its commit, whether its bot/ differs from it (the numbers belong to that code)."""
    digest = hashlib.sha256((root / "bot" / "app.py").read_bytes()).hexdigest()[:16]
    if rev:
        return {"revision": rev, "commit": _rev(rev), "bot_app_sha256": digest}
    def git(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return ""
    inside = git("rev-parse", "--show-toplevel") == str(root)
    return {"root": str(root), "commit": git("rev-parse", "HEAD") if inside else None,
            "bot_modified": git("status", "--porcelain", "--", "bot").splitlines() if inside else None,
            "bot_app_sha256": digest}


# --- CPU accounting -------------------------------------------------------------------------------

def _proc_cpu_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process, all its threads."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def _context_switches(pid: int) -> int:
    """Voluntary and involuntary context switches of all the process's threads."""
    n = 0
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            for line in status.read_text().splitlines():
                if "ctxt_switches:" in line:
                    n += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return n


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _cpu_snapshot(server, conn: redis.Redis) -> dict:
    line = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(x) for x in line]
    busy = sum(ticks[i] for i in (0, 1, 2, 5, 6)) / CLK_TCK  # user, nice, system, irq, softirq
    info = conn.info("cpu")
    pids = server.pids()
    times = [_proc_cpu_s(p) for p in pids]
    return {"server_cpu_s": sum(u + k for u, k in times), "server_sys_s": sum(k for _, k in times),
            "server_context_switches": sum(_context_switches(p) for p in pids),
            "redis_cpu_s": float(info["used_cpu_sys"]) + float(info["used_cpu_user"]),
            "machine_busy_s": busy, "steal_s": ticks[7] / CLK_TCK, "wall": time.monotonic()}


def _start_profilers(args, server, rate: float) -> list[subprocess.Popen]:
    if args.profile is None or server.workers is None:
        return []
    spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if spy is None:
        raise SystemExit("--profile: py-spy not found (pip install py-spy)")
    args.profile.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen([spy, "record", "--pid", str(w), "--duration", str(int(args.seconds)), "--rate", "200",
                              "--format", "raw", "--nonblocking", *(["--gil"] if args.profile_gil else []), "--output",
                              str(args.profile / f"{int(rate)}rps-worker{i}.txt")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i, w in enumerate(server.workers())]


# --- the server under test ------------------------------------------------------------------------

class _Served:
    def __init__(self, port: int, stop, command: str, pids, workers=None):
        self.port = port
        self.stop = stop
        self.command = command
        self.pids = pids  # the server's processes, for CPU accounting
        self.workers = workers  # gunicorn's worker pids, for profiling


def serve(args, settings, conn: redis.Redis) -> _Served:
    """The app under test: gunicorn in a child process (the README's command), or werkzeug in-process."""
    if args.server == "werkzeug":
        from werkzeug.serving import make_server

        from bot.app import create_app

        srv = make_server("127.0.0.1", 0, create_app(settings, conn), threaded=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return _Served(srv.server_port, srv.shutdown, "werkzeug make_server(threaded=True), in the benchmark's process",
                       lambda: [os.getpid()])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "OPTIMAS_WEBHOOK_SECRET": SECRET.decode(), "OPTIMAS_CONTROL_QUEUE": settings.control_queue,
           "OPTIMAS_KEY_PREFIX": settings.key_prefix, "OPTIMAS_REDIS_URL": "redis://127.0.0.1:6379/0"}
    if (args.app_root / "bot" / "serving.py").exists():
        from bot import serving

        argv, workers = ["gunicorn", "-c", "python:bot.serving"], serving.workers
    else:  # a tree from before bot/serving.py: the command it documented
        argv, workers = ["gunicorn", "--threads", "8"], 2
    workers = args.workers or workers
    argv += ["--workers", str(workers)] + (["--threads", str(args.threads)] if args.threads else [])
    argv += ["--worker-class", args.worker_class] if args.worker_class else []
    argv += ["--bind", f"127.0.0.1:{port}", "bot.wsgi:app"]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=args.app_root, env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while len(_children(proc.pid)) < workers or not _answers(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log.seek(0)
            raise SystemExit(f"gunicorn did not start:\n{log.read().decode(errors='replace')[-3000:]}")
        time.sleep(0.1)

    def stop() -> None:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()

    return _Served(port, stop, " ".join(argv), lambda: [proc.pid, *_children(proc.pid)],
                   lambda: _children(proc.pid))


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


# --- the load generator (a separate process) ------------------------------------------------------

def _bodies(prs: int) -> list[dict]:
    """A `pull_request.labeled` payload for each of `prs` pull requests."""
    payload = json.loads(FIXTURE.read_text())
    payload["label"]["name"] = "optimas"
    out = []
    for k in range(prs):
        payload["pull_request"]["number"] = 1 + k
        payload["number"] = 1 + k
        payload["pull_request"]["head"]["sha"] = hashlib.sha1(f"head {k}".encode()).hexdigest()
        out.append(json.loads(json.dumps(payload)))
    return out


def _signed(schedule, payloads: list[dict]) -> dict[str, tuple[bytes, str]]:
    """(body, X-Hub-Signature-256) of each distinct delivery: its PR's payload with a time of its own
    (GitHub never sends two events with one body, and the receiver takes one sent again for a
    replay), a redelivery the same bytes again. Made before the clock starts."""
    out: dict[str, tuple[bytes, str]] = {}
    for d, pr in schedule:
        if d in out:
            continue
        payload = payloads[pr]
        when = dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=len(out))
        payload["pull_request"]["updated_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        raw = json.dumps(payload).encode()
        out[d] = (raw, "sha256=" + hmac.new(SECRET, raw, hashlib.sha256).hexdigest())
    return out


def _generator_main(pipe, port: int, prs: int, keepalive: bool, timeout: float) -> None:
    bodies = _bodies(prs)
    pipe.send("ready")
    while (job := pipe.recv()) is not None:
        rate, schedule = job
        pipe.send(asyncio.run(_generate(port, bodies, rate, schedule, keepalive, timeout)))


async def _generate(port: int, bodies, rate: float, schedule, keepalive: bool, timeout: float) -> dict:
    loop = asyncio.get_running_loop()
    addr = ("127.0.0.1", port)
    connection = b"keep-alive" if keepalive else b"close"
    signed = _signed(schedule, bodies)
    heads = [b"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
             b"Content-Type: application/json\r\nX-GitHub-Event: pull_request\r\nX-GitHub-Delivery: %s\r\n"
             b"X-Hub-Signature-256: %s\r\nContent-Length: %d\r\nConnection: %s\r\n\r\n"
             % (port, d.encode(), signed[d][1].encode(), len(signed[d][0]), connection) for d, pr in schedule]
    n = len(schedule)
    latency = [0.0] * n
    from_send = [0.0] * n
    lag = [0.0] * n
    status: list[int | None] = [None] * n
    error: list[str | None] = [None] * n
    pool: list[tuple[asyncio.Transport, _Exchange, float]] = []

    async def one(i: int, due: float) -> None:
        began = loop.time()
        lag[i] = (began - due) * 1000
        transport = None
        try:
            async with asyncio.timeout(timeout):
                while keepalive and pool:
                    t, p, idle_since = pool.pop()
                    if began - idle_since < KEEPALIVE_IDLE_S and not p.closed:
                        transport, proto = t, p
                        break
                    t.close()
                if transport is None:
                    transport, proto = await loop.create_connection(_Exchange, *addr)
                status[i], reusable = await proto.exchange(heads[i] + signed[schedule[i][0]][0])
            done = loop.time()
            latency[i] = (done - due) * 1000
            from_send[i] = (done - began) * 1000
            if keepalive and reusable:
                pool.append((transport, proto, done))
                transport = None
        except TimeoutError:
            error[i] = "timeout"
        except OSError as e:
            error[i] = type(e).__name__
        finally:
            if transport is not None:
                transport.close()

    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    tasks = []
    start = loop.time() + 0.05
    for i in range(n):
        due = start + i / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(loop.create_task(one(i, due)))
    last_sent = loop.time()
    await asyncio.gather(*tasks)
    end = loop.time()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for t, _, _ in pool:
        t.close()
    ok = sum(1 for s in status if s is not None)
    first_due = start
    return {"latency_ms": latency, "from_send_ms": from_send, "send_lag_ms": lag, "status": status, "error": error,
            "sent_rate": n / max(1e-9, last_sent - first_due) if n > 1 else 0.0,
            "achieved_rate": ok / max(1e-9, end - first_due),
            "generator_cpu_s": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
            "generator_sys_s": cpu1.ru_stime - cpu0.ru_stime}


class _Exchange(asyncio.Protocol):
    """One HTTP/1.x connection of the generator: sends a request, and reads its response whole."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.closed = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def exchange(self, request: bytes) -> asyncio.Future:
        """A future of (status, whether the connection may be reused)."""
        self.buf.clear()
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self._done(eof=False)

    def eof_received(self) -> None:
        self._done(eof=True)

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionResetError("closed before a whole response"))

    def _done(self, eof: bool) -> None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0 or self.waiter is None or self.waiter.done():
            return
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        version, code = lines[0].split(" ", 2)[:2]
        headers = {k.strip().lower(): v.strip().lower() for k, _, v in (h.partition(":") for h in lines[1:])}
        length = int(headers.get("content-length", -1))
        if (length >= 0 and len(self.buf) - end - 4 >= length) or (length < 0 and eof):
            reusable = version == "HTTP/1.1" and headers.get("connection") != "close" and length >= 0
            self.waiter.set_result((int(code), reusable))


if __name__ == "__main__":
    sys.exit(main())
