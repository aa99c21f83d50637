"""Loopback HTTP servers that speak the OpenAI, Gemini and Ollama chat APIs, for tests that drive the
real client libraries. Each server records the requests it gets and answers from a script of
(status, body, delay, headers) entries; when the script runs out it answers with `default_text`."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    text: str | None = None  # answer text, wrapped in the API's success body
    raw: str | None = None  # a raw body instead (malformed bodies, error bodies)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def openai_body(text: str, model: str) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168}}


def gemini_body(text: str, model: str) -> dict:
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 123, "candidatesTokenCount": 45, "totalTokenCount": 168},
            "modelVersion": model}


def ollama_body(text: str, model: str) -> dict:
    return {"model": model, "created_at": "2026-12-02T00:00:00Z", "message": {"role": "assistant", "content": text},
            "done": True, "done_reason": "stop", "prompt_eval_count": 123, "eval_count": 45}


class ChatServer:
    """One API on 127.0.0.1, on a free port, in a background thread."""

    def __init__(self, api: str, default_text: str = "OK"):
        self.api = api
        self.requests: list[dict] = []
        self.script: list[Reply] = []
        self.default_text = default_text
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode()
                server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                        "json": json.loads(body) if body else None})
                reply = server.script.pop(0) if server.script else Reply(text=server.default_text)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.raw is not None:
                    payload = reply.raw.encode()
                else:
                    sent = server.requests[-1]["json"] or {}
                    model = sent.get("model") or self.path.split("/models/")[-1].split(":")[0]
                    make = {"openai": openai_body, "gemini": gemini_body, "ollama": ollama_body}[server.api]
                    payload = json.dumps(make(reply.text or "", model)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "ChatServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
