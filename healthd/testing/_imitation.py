"""What the imitations of hosted memory APIs share (:mod:`healthd.testing.mem0_platform`,
:mod:`healthd.testing.zep`): a threaded HTTP server on 127.0.0.1 answering JSON, one worker
thread taking queued jobs in order (a hosted memory's asynchronous processing), the stand-in
LLM started for their inference when no endpoint is given, and a scratch directory. Each
imitation routes the requests itself (:meth:`Imitation._handle`) and says what its worker
does (:meth:`Imitation._work`, which returns when it takes ``None`` from the queue)."""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE, STYLES


class Imitation:
    """The server's life: ``start`` (or ``with``) brings up the stand-in LLM, the imitation's
    own state (:meth:`_started`), the server and the worker; ``stop`` ends them in turn."""

    def __init__(
        self,
        llm_base_url: str | None,
        host: str,
        port: int,
        style: str = DEFAULT_STYLE,
        seed: int = DEFAULT_SEED,
        scratch_prefix: str = "healthd-imitation-",
    ) -> None:
        from healthd.testing.standin_llm import StandInLLM

        self.requests: list[tuple[str, str, Any]] = []
        self._llm = None if llm_base_url else StandInLLM(style=style, seed=seed)
        self._llm_url = llm_base_url
        self._scratch = tempfile.TemporaryDirectory(prefix=scratch_prefix)
        self._lock = threading.Lock()
        self._queue: queue.Queue[Any] = queue.Queue()
        imitation = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                imitation._handle(self, "GET")

            def do_POST(self) -> None:
                imitation._handle(self, "POST")

            def do_PUT(self) -> None:
                imitation._handle(self, "PUT")

            def do_PATCH(self) -> None:
                imitation._handle(self, "PATCH")

            def do_DELETE(self) -> None:
                imitation._handle(self, "DELETE")

        self._host = host
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self._threads: list[threading.Thread] = []

    @property
    def root_url(self) -> str:
        return f"http://{self._host}:{self.server.server_port}"

    def start(self) -> Self:
        if self._llm is not None:
            self._llm.start()
            self._llm_url = self._llm.base_url
        self._started()
        for target in (self.server.serve_forever, self._work):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._queue.put(None)
        for thread in self._threads:
            thread.join(30)
        self._stopped()
        if self._llm is not None:
            self._llm.stop()
        self._scratch.cleanup()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _started(self) -> None:
        """The imitation's own state, made before the first request is served."""

    def _stopped(self) -> None:
        """The imitation's own state, closed once the server and the worker have ended."""

    def _work(self) -> None:
        raise NotImplementedError

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, answer: Any) -> None:
        data = json.dumps(answer).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The stand-in's ``--style`` and ``--seed``, and the command after ``--`` that every
    imitation's ``python -m`` entry point takes."""
    parser.add_argument("--style", choices=STYLES, default=DEFAULT_STYLE,
                        help="the stand-in LLM's style (healthd.testing.standin_style)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the varied style's seed")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")


def serve(imitation: Imitation, command: list[str], env: dict[str, str], banner: str) -> int:
    """Run ``command`` (after its ``--``) with ``env`` added and return its exit status, or,
    without one, print ``banner`` and serve until interrupted; the imitation stops either way."""
    command = command[1:] if command[:1] == ["--"] else command
    try:
        if command:
            return subprocess.run(command, check=False, env={**os.environ, **env}).returncode
        print(banner, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        return 0
    finally:
        imitation.stop()
