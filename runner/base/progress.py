"""Progress of long work goes through logging: each stage reports to its logger `optimas.<stage>`
(profiling, analysis, proposal, evaluation, flows). The CLI prints these records on stderr; the bot's
workers write them to their log, with the job they belong to."""

from __future__ import annotations

import logging
from typing import Callable

Progress = Callable[[str], None]


def progress_for(stage: str) -> Progress:
    """The progress callback of a stage: an INFO record on the logger `optimas.<stage>`."""
    return logging.getLogger(f"optimas.{stage}").info
