"""Backends that reach a model over HTTP through its vendor's client library: OpenAI (and any
OpenAI-compatible server through base_url), Gemini (google-genai) and Ollama. Each turns the
library's errors into TransientLLMError (retried) or LLMError (not)."""

from __future__ import annotations

import os
import time

from runner.base.backends import key_variable
from runner.base.config import LLMConfig
from runner.base.redaction import register_secret
from runner.proposal.llm.base import (
    LLMError,
    LLMRequest,
    LLMResponse,
    TransientLLMError,
    Usage,
    cost,
    with_retries,
)


def _api_key(llm: LLMConfig, default_env: str, required: bool) -> str | None:
    env = llm.api_key_env or default_env
    key = os.environ.get(env)
    register_secret(key)  # a variable of llm.api_key_env's naming is no registry's: its value is masked from here on
    if not key and required:
        raise LLMError(f"the {llm.backend} backend needs an API key in the environment variable {env} "
                       "(keys are never read from config files)")
    return key


def _transport_errors() -> tuple[type[BaseException], ...]:
    """Timeout and connection errors of the HTTP stacks the client libraries use (httpx, and the
    httpx2 fork that google-genai ships with)."""
    errors: list[type[BaseException]] = [ConnectionError]
    for module in ("httpx", "httpx2"):
        try:
            mod = __import__(module)
        except ImportError:
            continue
        errors += [mod.TimeoutException, mod.TransportError]
    return tuple(errors)


def _retry_after(headers) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _status_error(code: int, detail: str, retry_after: float | None = None) -> LLMError:
    """The error for an HTTP status from the server: 429 and 5xx are worth retrying, others are not."""
    if code == 429 or code >= 500:
        return TransientLLMError(f"HTTP {code} from the server", retry_after)
    return LLMError(f"the server refused the request: HTTP {code}: {detail}")


class _NetworkBackend:
    """What the network backends share: retries around `_call`, then `_read` of text and usage."""

    name = "network"
    llm: LLMConfig

    def _call(self, req: LLMRequest):
        raise NotImplementedError

    def _read(self, response) -> tuple[str, Usage, str | None]:
        raise NotImplementedError

    def complete(self, req: LLMRequest) -> LLMResponse:
        t0 = time.monotonic()
        r, attempts = with_retries(lambda: self._call(req), self.llm.retries, self.llm.backoff_s,
                                   f"{self.name} model {req.model}")
        text, usage, model = self._read(r)
        return LLMResponse(text=text, backend=self.name, model=model or req.model, usage=usage,
                           seconds=time.monotonic() - t0, attempts=attempts,
                           cost_usd=cost(usage, self.llm.price_input_per_mtok, self.llm.price_output_per_mtok))


class OpenAIBackend(_NetworkBackend):
    """The OpenAI chat completions API; with `base_url`, any compatible server (vLLM, llama.cpp,
    Ollama's /v1, LM Studio)."""

    name = "openai"

    def __init__(self, llm: LLMConfig):
        import openai

        self.llm = llm
        self._openai = openai
        key = _api_key(llm, key_variable("openai"), required=llm.base_url is None)
        # Local servers accept any key; the library insists on one.
        self.client = openai.OpenAI(api_key=key or "unused", base_url=llm.base_url, timeout=llm.timeout_s,
                                    max_retries=0)

    def _call(self, req: LLMRequest):
        o = self._openai
        try:
            return self.client.chat.completions.create(
                model=req.model, messages=[m.model_dump() for m in req.messages], temperature=req.temperature,
                max_tokens=req.max_tokens)
        except o.APIStatusError as e:
            raise _status_error(e.status_code, e.message, _retry_after(getattr(e.response, "headers", None))) from None
        except (o.APITimeoutError, o.APIConnectionError) as e:
            raise TransientLLMError(f"{type(e).__name__}: {e}") from None
        except o.APIResponseValidationError as e:
            raise LLMError(f"malformed response from the server: {e}") from None

    def _read(self, r) -> tuple[str, Usage, str | None]:
        try:
            text = r.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError):
            raise LLMError("malformed response from the server: no choices[0].message.content") from None
        u = getattr(r, "usage", None)
        usage = Usage(prompt_tokens=getattr(u, "prompt_tokens", None),
                      completion_tokens=getattr(u, "completion_tokens", None))
        return text, usage, getattr(r, "model", None)


class GeminiBackend(_NetworkBackend):
    """Google's Gemini API through google-genai."""

    name = "gemini"

    def __init__(self, llm: LLMConfig):
        from google import genai
        from google.genai import types

        self.llm = llm
        self.types = types
        key = _api_key(llm, key_variable("gemini"), required=True)
        extra = {"base_url": llm.base_url} if llm.base_url else {}
        opts = types.HttpOptions(timeout=int(llm.timeout_s * 1000), **extra)
        self.client = genai.Client(api_key=key, http_options=opts)

    def _call(self, req: LLMRequest):
        from google.genai import errors

        system = "\n\n".join(m.content for m in req.messages if m.role == "system") or None
        contents = [self.types.Content(role="model" if m.role == "assistant" else "user",
                                       parts=[self.types.Part(text=m.content)])
                    for m in req.messages if m.role != "system"]
        config = self.types.GenerateContentConfig(temperature=req.temperature, max_output_tokens=req.max_tokens,
                                                  system_instruction=system)
        try:
            return self.client.models.generate_content(model=req.model, contents=contents, config=config)
        except errors.APIError as e:
            raise _status_error(getattr(e, "code", None) or 0, str(e)) from None
        except _transport_errors() as e:
            raise TransientLLMError(f"{type(e).__name__}: {e}") from None
        except ValueError as e:  # a body the library cannot read
            raise LLMError(f"malformed response from the server: {e}") from None

    def _read(self, r) -> tuple[str, Usage, str | None]:
        try:
            text = "".join(p.text or "" for p in r.candidates[0].content.parts)
        except (AttributeError, IndexError, TypeError):
            raise LLMError("malformed response from the server: no candidates[0].content.parts") from None
        meta = getattr(r, "usage_metadata", None)
        usage = Usage(prompt_tokens=getattr(meta, "prompt_token_count", None),
                      completion_tokens=getattr(meta, "candidates_token_count", None))
        return text, usage, None


class OllamaBackend(_NetworkBackend):
    """A local or remote Ollama server through its native client."""

    name = "ollama"

    def __init__(self, llm: LLMConfig):
        import ollama

        self.llm = llm
        self._ollama = ollama
        self.client = ollama.Client(host=llm.base_url or "http://127.0.0.1:11434", timeout=llm.timeout_s)

    def _call(self, req: LLMRequest):
        try:
            return self.client.chat(model=req.model, messages=[m.model_dump() for m in req.messages],
                                    options={"temperature": req.temperature, "num_predict": req.max_tokens})
        except self._ollama.ResponseError as e:
            raise _status_error(e.status_code, e.error) from None
        except _transport_errors() as e:
            raise TransientLLMError(f"{type(e).__name__}: {e}") from None
        except ValueError as e:  # pydantic validation of a malformed body
            raise LLMError(f"malformed response from the server: {e}") from None

    def _read(self, r) -> tuple[str, Usage, str | None]:
        msg = getattr(r, "message", None)
        if msg is None or msg.content is None:
            raise LLMError("malformed response from the server: no message.content")
        usage = Usage(prompt_tokens=getattr(r, "prompt_eval_count", None),
                      completion_tokens=getattr(r, "eval_count", None))
        return msg.content, usage, getattr(r, "model", None)
