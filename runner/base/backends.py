"""The model backends Optimas knows, in one registry: each one's name as the config and the command
line spell it, whether it talks to a server (and so needs llm.model), and the environment variable
its API key is read from by default. The config's choices, the operator's checks and the list of
secret variables that are masked wherever they appear are derived from it, so a backend added here
has its key masked without another list to remember."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendSpec:
    """One model backend."""

    name: str
    network: bool  # talks to a model server: needs llm.model, and costs calls on a key
    key_env: str | None  # the API key's variable by default (llm.api_key_env may name another); None: no key
    what: str  # in words, for help texts


REGISTRY: dict[str, BackendSpec] = {s.name: s for s in (
    BackendSpec("offline", network=False, key_env=None, what="a rule-based answer, for tests and demos (no model)"),
    BackendSpec("replay", network=False, key_env=None, what="recorded answers from llm.replay_dir, by prompt hash"),
    BackendSpec("openai", network=True, key_env="OPENAI_API_KEY",
                what="the OpenAI API or an OpenAI-compatible server (llm.base_url)"),
    BackendSpec("gemini", network=True, key_env="GEMINI_API_KEY", what="Google's Gemini API"),
    BackendSpec("ollama", network=True, key_env=None, what="an Ollama server (llm.base_url)"),
)}

BACKENDS: tuple[str, ...] = tuple(REGISTRY)
NETWORK_BACKENDS: tuple[str, ...] = tuple(n for n, s in REGISTRY.items() if s.network)
# Every backend's key variable: masked in every text Optimas writes (runner.base.redaction).
KEY_VARIABLES: tuple[str, ...] = tuple(s.key_env for s in REGISTRY.values() if s.key_env)


def key_variable(name: str) -> str | None:
    """The default API key variable of backend `name` (None: it needs no key)."""
    return REGISTRY[name].key_env
