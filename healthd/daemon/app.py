"""`healthd run`: wiring (state, runner, metrics, HTTP server, scheduler) and signals.

SIGTERM and SIGINT stop the scheduler and set the process-wide stop flag: a run in progress
gives up between two events (a persistent shadow commits what it has replayed, so the next
start resumes there), a git clone or fetch is killed, an HTTP request is not retried. The
state file is closed and the process exits 0 within ``SHUTDOWN_WAIT_SECONDS``. A run that
still holds on after that (a call that cannot be interrupted) is abandoned: the process
exits without touching the state file, whose last committed transaction stands, as after a
kill.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from datetime import UTC, datetime
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.blocking import BlockingScheduler
from opentelemetry.sdk.trace.export import SpanExporter

from healthd import __version__, _stop
from healthd.daemon.runner import Runner
from healthd.daemon.scheduler import parse_schedule
from healthd.daemon.server import HttpServer, build_app
from healthd.daemon.state import StateStore
from healthd.errors import HealthdError
from healthd.exporters.prometheus import build_registry
from healthd.exporters.tracing import build_tracer_provider, get_tracer, traces_endpoint
from healthd.logging import configure_logging, get_logger
from healthd.memory import SUBJECT
from healthd.settings import Settings

log = get_logger("healthd.daemon")
SHUTDOWN_WAIT_SECONDS = 8.0


class Daemon:
    def __init__(self, settings: Settings, *, exporter: SpanExporter | None = None) -> None:
        self.settings = settings
        self.schedule = parse_schedule(settings.schedule.cron)
        self.tracer_provider = build_tracer_provider(
            endpoint=settings.tracing.otlp_endpoint,
            service_name=settings.tracing.service_name,
            exporter=exporter,
        )
        self.state = StateStore(settings.state_path)
        self._histogram: Any = None
        self.runner = Runner(
            settings, self.state, get_tracer(self.tracer_provider), observe_duration=self._observe
        )
        self.registry, self._histogram = build_registry(self.runner.view)
        self.server = HttpServer(
            settings.server.host,
            settings.server.port,
            build_app(self.registry, self.runner.view, self.runner.ready, self.runner.view_version),
        )
        self.scheduler = BlockingScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(2)},
            job_defaults={
                "coalesce": True,
                "max_instances": 1,
                "misfire_grace_time": self.schedule.misfire_grace_seconds,
            },
        )
        self.scheduler.add_listener(self._on_missed, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)
        self._stopping = threading.Event()

    def _observe(self, target: str, seconds: float) -> None:
        if self._histogram is not None:
            config = self.settings.targets.get(target)
            role = config.role if config is not None else SUBJECT
            self._histogram.labels(target=target, role=role).observe(seconds)

    def _on_missed(self, event: JobExecutionEvent) -> None:
        self.runner.count_missed()
        reason = "still running" if event.code == EVENT_JOB_MAX_INSTANCES else "missed"
        log.warning(
            "scheduled run skipped",
            reason=reason,
            scheduled=event.scheduled_run_time.isoformat()
            if getattr(event, "scheduled_run_time", None)
            else None,
        )

    def _job(self) -> None:
        try:
            self.runner.run_once()
        except Exception:
            log.exception("run crashed")

    def request_stop(self, signum: int | None = None) -> None:
        """Safe from a signal handler: the scheduler is shut down from another thread."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        _stop.STOPPING.set()
        self.runner.stop.set()
        log.info("stopping", signal=signal.Signals(signum).name if signum else None)
        threading.Thread(target=self._shutdown_scheduler, name="healthd-stop", daemon=True).start()

    def _shutdown_scheduler(self) -> None:
        try:
            self.scheduler.shutdown(wait=False)
        except Exception:
            pass

    def serve(self) -> int:
        self.server.start()
        s = self.settings
        log.info(
            "healthd started",
            version=__version__,
            host=self.server.host,
            port=self.server.port,
            schedule=self.schedule.expression,
            misfire_grace_seconds=self.schedule.misfire_grace_seconds,
            state=s.state_path,
            sources=sorted(s.sources),
            targets=sorted(s.targets),
            tracing=traces_endpoint(s.tracing.otlp_endpoint) or "off",
            config=getattr(s, "origin", None),
        )
        for t in self.runner.targets.values():
            if t.note:
                log.info("next run starts from scratch", target=t.name, reason=t.note)
        kwargs: dict[str, Any] = {}
        if s.schedule.run_on_start:
            kwargs["next_run_time"] = datetime.now(UTC)
        self.scheduler.add_job(
            self._job, self.schedule.trigger, id="run", name="healthd run", **kwargs
        )
        try:
            if not self._stopping.is_set():
                self.scheduler.start()
        finally:
            self.close()
        return 0

    def close(self) -> None:
        self.runner.stop.set()
        _stop.STOPPING.set()
        got = self.runner.lock.acquire(timeout=SHUTDOWN_WAIT_SECONDS)
        if not got:
            # The run thread is stuck in a call that cannot be interrupted; closing the state
            # under it would crash it. Leave as a kill would: committed state stands.
            log.warning("stopped", clean=False, reason="a run did not stop in time; abandoned")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        try:
            self.server.stop()
            self.runner.close()
            self.tracer_provider.shutdown()
            self.state.close()
        finally:
            self.runner.lock.release()
        log.info("stopped", clean=True)


def run(settings: Settings) -> int:
    configure_logging(settings.logging.level, settings.logging.format)
    try:
        daemon = Daemon(settings)
    except OSError as exc:
        raise HealthdError(
            f"cannot listen on {settings.server.host}:{settings.server.port}: {exc.strerror or exc}"
        ) from exc
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda n, _f: daemon.request_stop(n))
    return daemon.serve()
