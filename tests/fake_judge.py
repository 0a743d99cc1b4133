"""A local stand-in for an OpenAI-compatible chat-completions endpoint, as strict as the
real one about what healthd sends: POST /v1/chat/completions with a JSON body naming the
served ``model``, ``messages`` (system then user), ``temperature`` 0 and a JSON
``response_format``; a bearer token when one is required (401 otherwise, 404 for another
model, 400 for a malformed body). Its answers come from ``answer(question) -> content``:
by default the default reader's, so a test measures the protocol, not a model: a
``reader-check`` through it scores the default reader again, never a judge's accuracy.
``garbage`` replaces every answer's content; ``message`` (extra fields of the answer's
message, e.g. ``{"content": None, "refusal": "..."}``) and ``finish_reason`` shape the
completion as real endpoints document it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from healthd.model import FactKey
from healthd.reading.default import DefaultReader


def _default_answer(question: dict[str, Any]) -> str:
    reading = DefaultReader().read(
        question["text"], FactKey(question["subject"], question["predicate"]), question["values"]
    )
    return json.dumps(
        {
            "asserts": list(reading.asserted),
            "negates": list(reading.negated),
            "other": list(reading.other),
        }
    )


class FakeJudge:
    def __init__(
        self,
        model: str = "fake-judge-1",
        token: str | None = None,
        answer: Callable[[dict[str, Any]], str] = _default_answer,
    ) -> None:
        self.model = model
        self.token = token
        self.answer = answer
        self.garbage: str | None = None
        self.message: dict[str, Any] = {}
        self.finish_reason = "stop"
        self.requests: list[dict[str, Any]] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                status, payload = judge.handle(self.path, self.headers.get("Authorization"), raw)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, path: str, auth: str | None, raw: bytes) -> tuple[int, Any]:
        if path != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}"}}
        if self.token and auth != f"Bearer {self.token}":
            return 401, {"error": {"message": "Incorrect API key provided"}}
        try:
            body = json.loads(raw)
            messages = body["messages"]
            assert [m["role"] for m in messages] == ["system", "user"]
            assert body["temperature"] == 0
            assert body["response_format"] == {"type": "json_object"}
            question = json.loads(messages[1]["content"])
        except (ValueError, KeyError, TypeError, AssertionError):
            return 400, {"error": {"message": "malformed request"}}
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"The model {body.get('model')!r} does not exist"}}
        self.requests.append(body)
        content = self.garbage if self.garbage is not None else self.answer(question)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, **self.message},
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
