"""Progress of long work goes through logging. Each stage reports to its logger `optimas.<stage>`,
and while a stage's entry point runs (`@in_stage`), every progress record carries that stage in
`record.stage`, whoever passed the callback down: the CLI prints these records on stderr, the bot's
workers write them to their log with the job and the stage."""

from __future__ import annotations

import contextvars
import functools
import logging
from typing import Callable, TypeVar

Progress = Callable[[str], None]
F = TypeVar("F", bound=Callable)

_stage: contextvars.ContextVar[str | None] = contextvars.ContextVar("optimas_stage", default=None)


def in_stage(name: str) -> Callable[[F], F]:
    """Mark a function as a stage's entry point: progress reported while it runs names `name`."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args, **kwargs):
            token = _stage.set(name)
            try:
                return fn(*args, **kwargs)
            finally:
                _stage.reset(token)
        return run  # type: ignore[return-value]
    return wrap


def progress_for(name: str) -> Progress:
    """The progress callback of a stage or flow: an INFO record on the logger `optimas.<name>`,
    tagged with the stage running at the time (else `name`)."""
    logger = logging.getLogger(f"optimas.{name}")

    def say(message: str) -> None:
        logger.info(message, extra={"stage": _stage.get() or name})

    return say
