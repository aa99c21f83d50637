"""Each network backend through its real client library against a loopback server speaking its API."""

from __future__ import annotations

import pytest
from llm_servers import ChatServer, Reply

from runner.base.config import LLMConfig
from runner.proposal.llm import LLMError, LLMRequest, Message, ReplayBackend, make_backend, prompt_hash

MESSAGES = [Message(role="system", content="You optimize CUDA."), Message(role="user", content="Make it fast.")]


def cfg(backend: str, url: str, **kw) -> LLMConfig:
    base = {"openai": f"{url}/v1", "gemini": url, "ollama": url}[backend]
    defaults = dict(backend=backend, model="model-x", base_url=base, temperature=0.15, max_tokens=777,
                    timeout_s=2.0, retries=2, backoff_s=0.01, price_input_per_mtok=1.0, price_output_per_mtok=2.0)
    defaults.update(kw)
    return LLMConfig(**defaults)


def request(**kw) -> LLMRequest:
    return LLMRequest(messages=MESSAGES, model="model-x", temperature=0.15, max_tokens=777, **kw)


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key")


def sent(server: ChatServer) -> dict:
    return server.requests[-1]["json"]


@pytest.mark.parametrize("api", ["openai", "gemini", "ollama"])
def test_request_and_answer(api):
    with ChatServer(api, default_text="EDIT file=a.cu lines=1-2") as s:
        r = make_backend(cfg(api, s.url), base_dir=None).complete(request())
    assert r.text == "EDIT file=a.cu lines=1-2"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (123, 45)
    assert r.cost_usd == pytest.approx((123 * 1.0 + 45 * 2.0) / 1e6)
    body, path = sent(s), s.requests[-1]["path"]
    if api == "openai":
        assert path == "/v1/chat/completions"
        assert body["model"] == "model-x" and body["temperature"] == 0.15 and body["max_tokens"] == 777
        assert body["messages"] == [m.model_dump() for m in MESSAGES]
        assert s.requests[-1]["headers"]["authorization"] == "Bearer sk-test-openai"
    elif api == "gemini":
        assert path.endswith("/models/model-x:generateContent")
        assert body["generationConfig"]["temperature"] == 0.15
        assert body["generationConfig"]["maxOutputTokens"] == 777
        assert body["systemInstruction"]["parts"][0]["text"] == "You optimize CUDA."
        assert body["contents"] == [{"role": "user", "parts": [{"text": "Make it fast."}]}]
    else:
        assert path == "/api/chat"
        assert body["model"] == "model-x" and body["options"] == {"temperature": 0.15, "num_predict": 777}
        assert body["messages"] == [m.model_dump() for m in MESSAGES]


@pytest.mark.parametrize("api", ["openai", "gemini", "ollama"])
def test_429_and_500_are_retried(api):
    with ChatServer(api, default_text="done") as s:
        s.script = [Reply(status=429, raw='{"error": {"message": "slow down", "code": 429}}',
                          headers={"retry-after": "0"}),
                    Reply(status=500, raw='{"error": {"message": "boom", "code": 500}}')]
        r = make_backend(cfg(api, s.url), base_dir=None).complete(request())
    assert r.text == "done" and r.attempts == 3
    assert len(s.requests) == 3


@pytest.mark.parametrize("api", ["openai", "gemini", "ollama"])
def test_persistent_server_errors_give_up(api):
    with ChatServer(api) as s:
        s.script = [Reply(status=503, raw='{"error": {"message": "unavailable", "code": 503}}')] * 3
        with pytest.raises(LLMError, match="gave up after 3 attempts"):
            make_backend(cfg(api, s.url), base_dir=None).complete(request())


@pytest.mark.parametrize("api", ["openai", "gemini", "ollama"])
def test_timeouts_are_retried_then_reported(api):
    with ChatServer(api) as s:
        s.script = [Reply(text="late", delay_s=1.5)] * 2
        with pytest.raises(LLMError, match="gave up after 2 attempts"):
            make_backend(cfg(api, s.url, timeout_s=0.5, retries=1), base_dir=None).complete(request())


@pytest.mark.parametrize("api", ["openai", "gemini", "ollama"])
def test_client_errors_are_not_retried(api):
    with ChatServer(api) as s:
        s.script = [Reply(status=400, raw='{"error": {"message": "bad model", "code": 400}}')]
        with pytest.raises(LLMError, match="refused the request: HTTP 400"):
            make_backend(cfg(api, s.url), base_dir=None).complete(request())
    assert len(s.requests) == 1


@pytest.mark.parametrize("api", ["openai", "gemini", "ollama"])
def test_malformed_bodies_are_reported(api):
    with ChatServer(api) as s:
        s.script = [Reply(raw='{"unexpected": true}')]
        with pytest.raises(LLMError, match="malformed response"):
            make_backend(cfg(api, s.url, retries=0), base_dir=None).complete(request())


def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(LLMError, match="environment variable OPENAI_API_KEY"):
        make_backend(LLMConfig(backend="openai", model="gpt"), base_dir=None)
    monkeypatch.setenv("MY_KEY", "k")
    make_backend(LLMConfig(backend="openai", model="gpt", api_key_env="MY_KEY"), base_dir=None)


def test_network_backends_need_a_model():
    with pytest.raises(LLMError, match="needs llm.model"):
        make_backend(LLMConfig(backend="ollama"), base_dir=None)


def test_replay_answers_by_prompt_hash(tmp_path):
    key = prompt_hash(MESSAGES)
    (tmp_path / f"{key}.txt").write_text("recorded answer")
    b = ReplayBackend(tmp_path)
    r = b.complete(request())
    assert r.text == "recorded answer" and r.label == "replayed from a recorded answer"
    other = LLMRequest(messages=[Message(role="user", content="something else")], model="m", temperature=0,
                       max_tokens=1)
    with pytest.raises(LLMError, match=r"no recorded answer for this prompt: expected .*\.txt \(prompt hash "):
        b.complete(other)
