"""One registry of model backends (runner.base.backends): the config's and the command line's
choices, the operator's checks, the backend factory and the masked key variables all follow it."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.base.backends import BACKENDS, KEY_VARIABLES, NETWORK_BACKENDS, REGISTRY
from runner.base.config import LLMConfig
from runner.base.redaction import SECRET_ENV, redact
from runner.proposal.llm import NETWORK_CLIENTS, make_backend


def test_every_backend_of_the_registry_can_be_made_and_every_network_one_has_a_client():
    assert set(NETWORK_CLIENTS) == set(NETWORK_BACKENDS)
    assert set(BACKENDS) - set(NETWORK_BACKENDS) == {"offline", "replay"}
    assert make_backend(LLMConfig(backend="offline"), Path(".")).name == "offline"


def test_every_backends_key_variable_is_masked_wherever_it_is_set():
    assert KEY_VARIABLES and all(v in SECRET_ENV for v in KEY_VARIABLES)
    assert {REGISTRY[n].key_env for n in ("openai", "gemini")} <= set(KEY_VARIABLES)


def test_the_command_lines_choices_are_the_registrys():
    from bot.action import main as action_main  # noqa: F401 (its parser reads BACKENDS)
    from runner.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    backend = next(a for a in sub.choices["run"]._actions if a.dest == "backend")
    assert tuple(backend.choices) == BACKENDS


def test_a_key_read_from_a_variable_the_config_names_is_masked_from_then_on(monkeypatch: pytest.MonkeyPatch):
    key = "team-key-0123456789abcdef"  # no known key pattern: masked only once registered
    monkeypatch.setenv("MY_TEAM_LLM_KEY", key)
    assert redact(f"the key is {key}") == f"the key is {key}"  # nobody said it is a secret yet
    make_backend(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1",
                           api_key_env="MY_TEAM_LLM_KEY"), Path("."))
    assert key not in redact(f"the key is {key}")
