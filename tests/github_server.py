"""The loopback GitHub of the tests: the try-out's server (bot/tryout/loopback_github.py: the REST
endpoints the bot uses, on 127.0.0.1, recording every request), so tests drive the real PyGithub
client, with what only tests need on top: forced answers, faults, lost answers and slow handling.
State (permissions, pull requests, files) is plain data the test sets."""

from __future__ import annotations

import re
import time
from typing import Any

from bot.tryout.loopback_github import BODY_LIMIT, SUMMARY_LIMIT, LoopbackGitHub, over_limits

__all__ = ["BODY_LIMIT", "SUMMARY_LIMIT", "FakeGitHub", "over_limits"]


class FakeGitHub(LoopbackGitHub):
    def __init__(self) -> None:
        super().__init__()
        self.script: list[tuple[int, dict]] = []  # forced answers (status, body) for the next requests
        # (method, path regex, status, body, headers): the first matching request gets this answer
        self.faults: list[tuple[str, str, int, dict, dict]] = []
        # (method, path regex): the first matching write lands, then its answer is lost (502), as
        # when a proxy fails after GitHub has done the work
        self.lost_answers: list[tuple[str, str]] = []
        self.write_delay_s = 0.0  # slows POST/PATCH handling, to expose overlapping writes
        self.read_delay_s = 0.0  # slows GET handling, so that concurrent jobs meet at their next step
        self.vary_content_sha = False  # every read of a file gives a new blob SHA (the file keeps changing)
        self.write_spans: list[tuple[str, float, float]] = []

    def __enter__(self) -> FakeGitHub:
        super().__enter__()
        return self

    def content_sha(self, text: str) -> str:
        return super().content_sha(text) + (f"-{self.content_reads}" if self.vary_content_sha else "")

    def answer(self, method: str, path: str, query: dict[str, list[str]], data: Any) -> tuple[int, Any, dict]:
        if self.script:
            status, body = self.script.pop(0)
            return status, body, {}
        for i, (m, pattern, status, body, headers) in enumerate(self.faults):
            if m == method and re.fullmatch(pattern, path):
                del self.faults[i]
                return status, body, headers
        t0 = time.monotonic()
        if method in ("POST", "PATCH") and self.write_delay_s:
            time.sleep(self.write_delay_s)
        if method == "GET" and self.read_delay_s:
            time.sleep(self.read_delay_s)
        status, body, headers = super().answer(method, path, query, data)
        for i, (m, pattern) in enumerate(self.lost_answers):
            if m == method and re.fullmatch(pattern, path):
                del self.lost_answers[i]
                status, body = 502, {"message": "Bad Gateway"}
                break
        if method in ("POST", "PATCH"):
            # recorded before the answer goes out: a client that has its answer finds its span here
            self.write_spans.append((path, t0, time.monotonic()))
        return status, body, headers
