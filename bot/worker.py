"""The RQ worker of both queues (control and GPU): redacted logs that name each record's job and
stage, secrets read once at start, and a job whose process is killed reported on its PR.

Run one GPU worker per GPU (`python -m bot.gpu_workers` starts them all), e.g.
`CUDA_VISIBLE_DEVICES=0 rq worker -w bot.worker.OptimasWorker optimas-gpu --url $OPTIMAS_REDIS_URL`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import urlparse

from rq import Worker, get_current_job

from bot.github_client import app_from_env
from bot.jobs import report_failure, settings
from bot.keep import runs_folder
from runner.base.redaction import install_log_redaction, register_env_secrets, register_host_path, register_secret


class _JobTag(logging.Filter):
    """Tags each record with the job it belongs to (its description: repo#PR@head) and the stage
    it comes from (progress records carry it; others are named by their logger)."""

    def filter(self, record: logging.LogRecord) -> bool:
        job = get_current_job()
        record.job = f"[{job.description or job.id}]" if job is not None else "[-]"
        if not hasattr(record, "stage"):
            record.stage = record.name
        return True


def log_jobs_and_stages() -> None:
    """The stages' progress (loggers `optimas.<stage>`) and the bot's own records in the worker's
    log (stderr), each line with the job and the stage it comes from."""
    handler = logging.StreamHandler()
    handler.addFilter(_JobTag())
    handler.setFormatter(logging.Formatter("%(asctime)s %(job)s %(stage)s: %(message)s", "%H:%M:%S"))
    for name in ("optimas", "bot"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _JobTag) for h in logger.handlers for f in h.filters):
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False


class OptimasWorker(Worker):
    """The RQ worker for both queues. RQ runs no failure callback when a job's work horse is killed
    (out of memory, a GPU fault, SIGKILL); this worker reports it on the PR all the same.

    `rq worker -w bot.worker.OptimasWorker optimas-gpu optimas-control --url $OPTIMAS_REDIS_URL`

    At start it redacts every log record of the process, registers the secrets of its environment
    for redaction, reads the App's private key once, and takes the key's text out of its
    environment; the repository's commands get a minimal environment of their own
    (runner.processes), so no secret of the worker reaches them.
    """

    def __init__(self, *args, **kwargs):
        install_log_redaction()
        log_jobs_and_stages()
        register_env_secrets()
        register_secret(urlparse(settings().redis_url).password)
        register_host_path(runs_folder(), "<runs>")
        register_host_path(Path.home(), "<home>")
        if os.environ.get("OPTIMAS_APP_ID"):
            app_from_env()  # the private key is read here, once
            os.environ.pop("OPTIMAS_PRIVATE_KEY", None)
        os.environ.pop("OPTIMAS_WEBHOOK_SECRET", None)  # the receiver's secret; a worker never needs it
        super().__init__(*args, **kwargs)

    def handle_work_horse_killed(self, job, retpid, ret_val, rusage):
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        report_failure(job, self.connection, HorseKilled,
                       HorseKilled(f"the worker process running it died (exit status {ret_val})"), None)


class HorseKilled(Exception):
    """Stands for the cause of a job whose process was killed."""
