"""Model backends behind one interface (`Backend.complete(LLMRequest) -> LLMResponse`)."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from runner.base.config import LLMConfig
from runner.proposal.llm.base import Backend, LLMError, LLMRequest, LLMResponse, Message, TransientLLMError, Usage
from runner.proposal.llm.offline import OfflineBackend, OfflineContext

__all__ = ["Backend", "LLMError", "LLMRequest", "LLMResponse", "Message", "OfflineContext", "ReplayBackend",
           "TransientLLMError", "Usage", "make_backend", "prompt_hash"]


def prompt_hash(messages: list[Message]) -> str:
    """SHA-256 of the messages (role and content), the key of recorded answers."""
    h = hashlib.sha256()
    for m in messages:
        h.update(m.role.encode() + b"\0" + m.content.encode() + b"\0")
    return h.hexdigest()


class ReplayBackend:
    """Answers from files `<replay_dir>/<prompt hash>.txt`: reproducible experiments, and recorded
    answers of any model run again. Answers are labelled as replayed. With several candidates per
    iteration (llm.candidates), the n-th answer to a prompt is `<prompt hash>.<n>.txt` (n >= 2)."""

    name = "replay"

    def __init__(self, directory: Path):
        if not directory.is_dir():
            raise LLMError(f"replay directory {directory} (llm.replay_dir) does not exist")
        self.directory = directory

    def complete(self, request: LLMRequest) -> LLMResponse:
        key = prompt_hash(request.messages)
        path = self.directory / (f"{key}.txt" if request.sample == 1 else f"{key}.{request.sample}.txt")
        if not path.is_file():
            which = "" if request.sample == 1 else f" number {request.sample}"
            raise LLMError(f"no recorded answer{which} for this prompt: expected {path} (prompt hash {key})")
        t0 = time.monotonic()
        text = path.read_text(encoding="utf-8")
        return LLMResponse(text=text, backend=self.name, model=f"replay:{path.name}", seconds=time.monotonic() - t0,
                           label="replayed from a recorded answer")


def make_backend(llm: LLMConfig, base_dir: Path) -> Backend:
    """The backend the config names; `base_dir` resolves a relative replay_dir."""
    if llm.backend == "offline":
        return OfflineBackend()
    if llm.backend == "replay":
        if not llm.replay_dir:
            raise LLMError("the replay backend needs llm.replay_dir")
        d = Path(llm.replay_dir)
        return ReplayBackend(d if d.is_absolute() else base_dir / d)
    if not llm.model:
        raise LLMError(f"the {llm.backend} backend needs llm.model")
    from runner.proposal.llm import network

    return NETWORK_CLIENTS[llm.backend](network)(llm)


# The client class of each network backend of the registry (runner.base.backends), looked up in the
# network module only when one is asked for: its client libraries take a while to import.
NETWORK_CLIENTS = {"openai": lambda m: m.OpenAIBackend, "gemini": lambda m: m.GeminiBackend,
                   "ollama": lambda m: m.OllamaBackend}
