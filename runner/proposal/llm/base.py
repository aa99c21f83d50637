"""The one interface every model backend implements: messages in, text and usage out."""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from runner.base.errors import OptimasError


class LLMError(OptimasError):
    """The model could not be asked, or its answer could not be read."""

    exit_code = 6


class TransientLLMError(LLMError):
    """Worth retrying: rate limits (429), server errors (5xx), timeouts, dropped connections."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class LLMRequest(BaseModel):
    """What a backend is asked; `context` carries structured prompt inputs for backends that use them
    (the offline backend) and is never sent over the network."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: list[Message]
    model: str
    temperature: float
    max_tokens: int
    context: Any = Field(default=None, exclude=True)
    sample: int = Field(default=1, exclude=True)  # which of the iteration's answers to this prompt (1 = first)


class Usage(BaseModel):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class LLMResponse(BaseModel):
    text: str
    backend: str
    model: str
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    attempts: int = 1
    cost_usd: float | None = None
    label: str | None = None  # e.g. "replayed" or "offline rules": what kind of answer this is


class Backend(Protocol):
    name: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...


T = TypeVar("T")


def with_retries(call: Callable[[], T], retries: int, backoff_s: float, what: str) -> tuple[T, int]:
    """Call, retrying TransientLLMError with exponential backoff and jitter (or the server's
    Retry-After, when it gives one). Returns the result and the number of attempts."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except TransientLLMError as e:
            if attempt > retries:
                raise LLMError(f"{what}: {e} (gave up after {attempt} attempts)") from None
            wait = e.retry_after_s if e.retry_after_s is not None else backoff_s * (2 ** (attempt - 1))
            time.sleep(min(wait, 60.0) * (1.0 + 0.1 * random.random()))


def cost(usage: Usage, price_in: float | None, price_out: float | None) -> float | None:
    """USD for one call from prices per million tokens, when both prices and counts are known."""
    if price_in is None or price_out is None or usage.prompt_tokens is None or usage.completion_tokens is None:
        return None
    return (usage.prompt_tokens * price_in + usage.completion_tokens * price_out) / 1e6
