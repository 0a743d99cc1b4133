"""A memory that drips its answer, one byte at a time, never holds a run: each HTTP call has
a deadline over the whole response (``max_request_seconds``), and the run has one over all of
it (``run_timeout``). Each run ends, as a failure that says why, and the next one measures once
the memory answers again."""

from __future__ import annotations

import io
import threading
import time

from daemon_helpers import GOOD, one_line_error, run_cli, runs, start_with_http_memory, toml_config
from memory_service import MemoryService


class DrippingService(MemoryService):
    """While ``dripping``, answers a query with its headers at once and then one byte of its
    body every ``interval`` seconds, each byte resetting any gap timeout, for as long as the
    client listens."""

    dripping = True
    interval = 0.5

    def _handle(self, request):
        if not (self.dripping and request.path.endswith("/query")):
            super()._handle(request)
            return
        request.rfile.read(int(request.headers.get("Content-Length") or 0))
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", "1000000")
        request.end_headers()
        try:
            request.wfile.flush()
            while self.dripping and not self.closing.is_set():
                request.wfile.write(b" ")
                request.wfile.flush()
                time.sleep(self.interval)
        except OSError:  # the client hung up: what a deadline does
            request.wfile = io.BytesIO()  # nothing left to flush to it
        request.close_connection = True

    def __init__(self) -> None:
        super().__init__()
        self.closing = threading.Event()

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        super().__exit__(*exc)


def _failures(daemon) -> list[str]:
    return [e["error"] for e in daemon.log_lines() if e.get("event") == "run failed"]


def test_a_dripping_answer_fails_the_call_at_its_deadline_not_the_gap(start_daemon, tmp_path):
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(GOOD[:20]))
    with DrippingService() as service:
        started = time.monotonic()
        daemon = start_with_http_memory(
            start_daemon,
            timeline,
            service,
            timeout_seconds=2,  # the gap between bytes: 0.5 s, never reached
            max_request_seconds=3,
            max_retries=0,
        )
        daemon.wait_until(
            lambda: runs(daemon.scrape(), "team", "failure") >= 1, timeout=15, what="a failure"
        )
        assert time.monotonic() - started < 15
        failed = _failures(daemon)
        assert failed and "no complete answer within max_request_seconds=3" in failed[0], failed
        service.dripping = False  # the memory answers again: the next run measures
        daemon.wait_runs("team", timeout=15)
        assert daemon.stop()[0] == 0


def test_the_run_ends_at_run_timeout_whatever_its_calls_allow(start_daemon, tmp_path):
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("".join(GOOD[:20]))
    with DrippingService() as service:
        team = {"kind": "http", "base_url": service.url, "namespace": "shadow", "shadow": True}
        started = time.monotonic()
        # each call's own bounds (10 s between bytes, 60 s in all, 3 retries) would hold the
        # run for minutes; the run's bound ends it
        daemon = start_daemon(
            sources={"tl": {"kind": "file", "path": str(timeline)}},
            targets={"team": team, "naive": {"kind": "naive", "shadow": True}},
            extra='run_timeout = "3s"',
        )
        metrics = daemon.wait_until(
            lambda: (m := daemon.scrape()) and runs(m, "team", "failure") >= 1 and m,
            timeout=15,
            what="a failure",
        )
        assert time.monotonic() - started < 15
        failed = _failures(daemon)
        assert failed and "run_timeout=3s" in failed[0], failed
        # the target after it in the same run still ran, in the run's time left or as failure
        assert runs(metrics, "naive", "success") + runs(metrics, "naive", "failure") >= 1
        service.dripping = False
        daemon.wait_runs("team", timeout=15)
        assert daemon.stop()[0] == 0


def test_check_config_refuses_a_run_timeout_that_is_no_duration(tmp_path):
    config = toml_config(tmp_path, extra='run_timeout = "0s"')
    line = one_line_error(run_cli("check-config", "--config", str(config)))
    assert "run_timeout" in line and "longer than 0" in line
    good = toml_config(tmp_path, extra='run_timeout = "30m"')
    done = run_cli("check-config", "--config", str(good))
    assert done.returncode == 0, done.stderr
