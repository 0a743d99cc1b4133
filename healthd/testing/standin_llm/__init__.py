"""A stand-in for a team's LLM: an OpenAI-compatible server on 127.0.0.1, for offline tests.

It is not a language model. Chat completions are answered deterministically from the
request's messages by *responders*, one per product prompt it recognises (each module of this
package with a ``respond(request, style, seed)`` function: Mem0's extraction prompt, Graphiti's entity and
edge prompts, ...); a prompt no responder recognises is answered 400, never with a guess.
Embeddings are real: all-MiniLM-L6-v2 run offline (model ``all-MiniLM-L6-v2``, the default),
or the hashing embedder (model ``healthd-hashing``) where a test only needs plumbing.

Figures computed through it measure a product's pipeline with this stand-in deciding what
its LLM would have decided; they are labelled as such wherever they are shown.

    python -m healthd.testing.standin_llm --port 8011 [--style varied|verbatim] [--seed 0]

``style`` (``--style``): ``varied`` (the default) writes memories as an unkind LLM would,
``verbatim`` as the stand-in did before styles existed; the behaviours and their proportions
are documented in :mod:`healthd.testing.standin_style`. ``noise`` (``--noise``, 0 by default)
makes a share of its extractions differ from one replay of the same history to the next
(:class:`healthd.testing.standin_style.Noise`; Mem0's prompt only, so far).

Faults on demand (``fault``): ``garbage`` answers 200 with a body that is not JSON,
``error`` answers 500, ``prose`` answers a well-formed chat completion whose content is
prose instead of the JSON the prompt asks for, ``none`` (the default) answers properly.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from healthd.embedding import HASHING_MODEL, hash_embeddings
from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE, STYLES, Noise

MAX_BODY = 8 * 1024 * 1024
FAULTS = ("none", "garbage", "error", "prose")
PROSE = "Sure! Here is what I remember about that conversation."
MINILM_MODELS = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")

#: a responder, ``respond(request, style, seed)``, answers with the message's text, or with an
#: assistant message of ``tool_calls`` (``{"content": ..., "tool_calls": [(name, arguments),
#: ...]}``) for a prompt that asks for function calls, or None for a prompt that is not its
#: product's
Responder = Callable[..., "str | Mapping[str, Any] | None"]


class UnknownPrompt(ValueError):
    """No responder recognises the request's prompt."""


def responders() -> list[Responder]:
    """Every ``respond`` of this package's modules, in module name order."""
    found: list[Responder] = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("_"):
            continue
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        respond = getattr(loaded, "respond", None)
        if callable(respond):
            found.append(respond)
    return found


def message_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages' text, in order (content given as a string or as typed parts)."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "\n".join(parts)


def complete(
    request: Mapping[str, Any],
    found: Sequence[Responder],
    style: str = DEFAULT_STYLE,
    seed: int = DEFAULT_SEED,
    noise: Noise | None = None,
) -> str | Mapping[str, Any]:
    for respond in found:
        if noise is not None and "noise" in inspect.signature(respond).parameters:
            content = respond(request, style, seed, noise=noise)
        else:
            content = respond(request, style, seed)
        if content is not None:
            return content
    raise UnknownPrompt("no stand-in responder recognises this prompt")


def embed(model: str, texts: Sequence[str], dimensions: int | None) -> list[list[float]]:
    if model == HASHING_MODEL:
        return hash_embeddings(texts, dimensions or 256)
    if model in MINILM_MODELS:
        from healthd.embedding import minilm

        return minilm.load().encode(texts)
    raise ValueError(
        f"unknown embedding model {model!r}: use {MINILM_MODELS[0]} or {HASHING_MODEL}"
    )


class StandInLLM:
    """The server; ``requests`` keeps every request body received, in order, for tests
    (:meth:`counts` sums them by path: the stand-in's own request log, what a count of the
    calls made to it is checked against)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        fault: str = "none",
        style: str = DEFAULT_STYLE,
        seed: int = DEFAULT_SEED,
        noise: float = 0.0,
    ) -> None:
        if fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}")
        if style not in STYLES:
            raise ValueError(f"style must be one of {', '.join(STYLES)}")
        self.fault = fault
        self.style = style
        self.seed = seed
        self.noise = Noise(noise)
        self._host = host
        self.requests: list[dict[str, Any]] = []
        self._responders = responders()
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                stand_in._handle(self)

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    def counts(self) -> dict[str, int]:
        """Requests received so far, by path (``/v1/chat/completions``, ``/v1/embeddings``,
        ...), whatever it answered."""
        with self._lock:
            paths = [str(r["path"]).split("?", 1)[0] for r in self.requests]
        return {path: paths.count(path) for path in sorted(set(paths))}

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.server.server_port}/v1"

    def start(self) -> StandInLLM:
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> StandInLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            _send(handler, 413, {"error": {"message": f"body over {MAX_BODY} bytes"}})
            return
        try:
            body = json.loads(handler.rfile.read(length) or b"{}")
        except ValueError:
            _send(handler, 400, {"error": {"message": "request body is not JSON"}})
            return
        if not isinstance(body, dict):
            _send(handler, 400, {"error": {"message": "request body is not a JSON object"}})
            return
        with self._lock:
            self.requests.append({"path": handler.path, **body})
        if self.fault == "garbage":
            _send_raw(handler, 200, b"<html>this is not JSON")
            return
        if self.fault == "error":
            _send(handler, 500, {"error": {"message": "stand-in told to fail"}})
            return
        path = handler.path.split("?", 1)[0].rstrip("/")
        try:
            if path.endswith("/chat/completions"):
                _send(handler, 200, self._chat(body))
            elif path.endswith("/responses"):
                _send(handler, 200, self._response(body))
            elif path.endswith("/embeddings"):
                _send(handler, 200, _embeddings(body))
            else:
                _send(handler, 404, {"error": {"message": f"no route {path}"}})
        except (UnknownPrompt, ValueError, TypeError, KeyError) as exc:
            _send(handler, 400, {"error": {"message": str(exc), "type": "invalid_request_error"}})

    def _chat(self, body: Mapping[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValueError("messages must be a list")
        answer = (
            PROSE
            if self.fault == "prose"
            else complete(body, self._responders, self.style, self.seed, self.noise)
        )
        message, content = _assistant_message(answer, len(self.requests))
        words = len(message_text(messages).split())
        return {
            "id": f"standin-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "standin")),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": words,
                "completion_tokens": len(content.split()),
                "total_tokens": words + len(content.split()),
            },
        }

    def _response(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The Responses API (``/v1/responses``, what OpenAI's own clients such as
        Graphiti's ``OpenAIClient`` call): its ``input`` is read as chat messages."""
        given = body.get("input")
        if isinstance(given, str):
            given = [{"role": "user", "content": given}]
        if not isinstance(given, list):
            raise ValueError("input must be a string or a list of messages")
        messages: list[Any] = given
        if isinstance(body.get("instructions"), str):
            messages = [{"role": "system", "content": body["instructions"]}, *messages]
        content = complete(
            {**body, "messages": messages}, self._responders, self.style, self.seed, self.noise
        )
        if not isinstance(content, str):
            raise ValueError("this prompt asks for function calls: use /chat/completions")
        words = len(message_text(messages).split())
        number = len(self.requests)
        return {
            "id": f"resp_standin{number}",
            "object": "response",
            "created_at": time.time(),
            "model": str(body.get("model", "standin")),
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": f"msg_standin{number}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": content, "annotations": []}],
                }
            ],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": words,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": len(content.split()),
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": words + len(content.split()),
            },
        }


def _assistant_message(answer: str | Mapping[str, Any], number: int) -> tuple[dict[str, Any], str]:
    """The chat completion's message, as OpenAI writes it (function calls with their
    arguments as a JSON string), and its text for the usage count."""
    if isinstance(answer, str):
        return {"role": "assistant", "content": answer}, answer
    calls: list[dict[str, Any]] = [
        {
            "id": f"call_standin{number}_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for i, (name, arguments) in enumerate(answer.get("tool_calls") or ())
    ]
    text = answer.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    written = " ".join([str(text or ""), *(c["function"]["arguments"] for c in calls)])
    return message, written


def _embeddings(body: Mapping[str, Any]) -> dict[str, Any]:
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ValueError("input must be a string or a list of strings")
    model = str(body.get("model", MINILM_MODELS[0]))
    dimensions = body.get("dimensions")
    vectors = embed(model, texts, dimensions if isinstance(dimensions, int) else None)
    words = sum(len(t.split()) for t in texts)  # the stand-in's "tokens" are words
    return {
        "object": "list",
        "model": model,
        "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ],
        "usage": {"prompt_tokens": words, "total_tokens": words},
    }


def _send(handler: BaseHTTPRequestHandler, status: int, payload: Mapping[str, Any]) -> None:
    _send_raw(handler, status, json.dumps(payload).encode())


def _send_raw(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m healthd.testing.standin_llm",
        description="An OpenAI-compatible stand-in for a team's LLM (not a model), on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free)")
    parser.add_argument("--fault", choices=FAULTS, default="none", help="answer with this fault")
    parser.add_argument(
        "--style",
        choices=STYLES,
        default=DEFAULT_STYLE,
        help="how the memories are written: varied (reworded, merged, implicit, neighbouring, "
        "invented, dropped or stale, in the proportions healthd.testing.standin_style "
        "documents) or verbatim (the stand-in before styles existed)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the varied style's seed")
    parser.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="share (0..1) of the memories written otherwise on each replay of the same "
        "conversation (skipped or rephrased), drawn from the seed and the replay number",
    )
    args = parser.parse_args(argv)
    if not 0.0 <= args.noise <= 1.0:
        parser.error(f"--noise must be a share from 0 to 1, not {args.noise}")
    server = StandInLLM(
        port=args.port, fault=args.fault, style=args.style, seed=args.seed, noise=args.noise
    )
    print(server.base_url, flush=True)
    try:
        server.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server.server_close()
    return 0
