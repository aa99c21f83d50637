"""Start one GPU worker per GPU of this host, each pinned to its GPU with CUDA_VISIBLE_DEVICES,
and keep them under one process: a signal to it reaches every worker, and it exits non-zero when
any worker failed.

    python -m bot.gpu_workers                 # every GPU nvidia-smi lists
    python -m bot.gpu_workers --gpus 0,2      # those GPUs only
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence

from bot.settings import WorkerSettings
from runner.base.errors import OptimasError, ProfilingError
from runner.base.gpu import list_gpus


class WorkersError(OptimasError):
    exit_code = 2


def host_gpus(nvidia_smi: str) -> list[str]:
    """Indices of this host's GPUs, as nvidia-smi numbers them."""
    try:
        return [g.index for g in list_gpus(nvidia_smi)]
    except ProfilingError as e:
        raise WorkersError(f"{e}; pass --gpus to name the GPUs yourself") from None


def parse_gpus(text: str) -> list[str]:
    """`--gpus`: comma-separated GPU indices or UUIDs, no duplicates."""
    gpus = [g.strip() for g in text.split(",") if g.strip()]
    if not gpus:
        raise WorkersError(f"--gpus {text!r}: expected GPU indices or UUIDs separated by commas, e.g. 0,1")
    if len(set(gpus)) != len(gpus):
        raise WorkersError(f"--gpus {text!r}: a GPU is named twice; one worker per GPU")
    return gpus


def worker_command(gpu: str, url: str, queue: str, burst: bool) -> list[str]:
    name = f"optimas-{socket.gethostname()}-gpu{gpu}-{os.getpid()}"
    return [sys.executable, "-m", "rq.cli", "worker", "-w", "bot.worker.OptimasWorker", "--url", url,
            "--name", name, *(["--burst"] if burst else []), queue]


def run_workers(gpus: Sequence[str], url: str, queue: str = WorkerSettings.gpu_queue, burst: bool = False) -> int:
    """Run one worker per GPU until all of them exit; returns 0 when every worker exited cleanly."""
    procs: list[subprocess.Popen] = []

    def forward(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for gpu in gpus:
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
            try:
                procs.append(subprocess.Popen(worker_command(gpu, url, queue, burst), env=env))
            except OSError as e:
                forward(signal.SIGTERM, None)  # no half-started pool: stop those already running
                for p in procs:
                    p.wait()
                raise WorkersError(f"could not start the worker for GPU {gpu}: {e}") from None
            print(f"worker for GPU {gpu}: pid {procs[-1].pid}", file=sys.stderr, flush=True)
        codes = [p.wait() for p in procs]
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    failed = [f"GPU {g}: exit {c}" for g, c in zip(gpus, codes, strict=True) if c != 0]
    if failed:
        print("workers failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bot.gpu_workers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default=None, help="GPU indices or UUIDs, e.g. 0,1 (default: every GPU listed)")
    ap.add_argument("--url", default=os.environ.get("OPTIMAS_REDIS_URL", "redis://127.0.0.1:6379/0"),
                    help="Redis URL (default: $OPTIMAS_REDIS_URL)")
    ap.add_argument("--queue", default=os.environ.get("OPTIMAS_GPU_QUEUE", WorkerSettings.gpu_queue))
    ap.add_argument("--burst", action="store_true", help="exit once the queue is empty")
    ap.add_argument("--nvidia-smi", default="nvidia-smi")
    args = ap.parse_args(argv)
    try:
        gpus = parse_gpus(args.gpus) if args.gpus else host_gpus(args.nvidia_smi)
        return run_workers(gpus, args.url, args.queue, args.burst)
    except WorkersError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
