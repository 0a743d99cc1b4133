"""`healthd run`: wiring (state, runner, metrics, HTTP server, scheduler) and signals.

SIGHUP and ``POST /-/reload`` reload the configuration file: a configuration that does not
load (or changes what only a restart can: the state file, the listener's address, tracing)
is refused with one log line and ``healthd_config_reload_failures_total``, and the running
one is kept; a good one replaces the runner between two runs (the state file and persistent
shadows carry over; shadows in process memory replay from scratch), the schedule and the
listener's TLS and users.

Only one daemon runs on a state file: an exclusive lock on ``<state_path>.lock`` is taken
before anything else (:mod:`healthd.daemon.lock`).

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
from prometheus_client import GC_COLLECTOR, Counter, Gauge
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from healthd import __version__, _stop
from healthd.daemon.lock import ShadowLocks, StateLock
from healthd.daemon.runner import Runner
from healthd.daemon.scheduler import Schedule, parse_schedule
from healthd.daemon.server import HttpServer, build_app
from healthd.daemon.state import StateStore
from healthd.daemon.targets import is_persistent, target_options
from healthd.daemon.webconfig import WebConfig, load_web_config
from healthd.errors import ConfigError, HealthdError
from healthd.exporters.prometheus import build_registry
from healthd.exporters.tracing import build_tracer_provider, get_tracer, traces_endpoint
from healthd.logging import configure_logging, get_logger, redact_text
from healthd.memory import SUBJECT
from healthd.settings import Settings, load_settings

log = get_logger("healthd.daemon")
SHUTDOWN_WAIT_SECONDS = 8.0


class Daemon:
    def __init__(self, settings: Settings, *, exporter: SpanExporter | None = None) -> None:
        self.settings = settings
        self.schedule = parse_schedule(settings.schedule.cron)
        self.web = load_web_config(settings.server.web_config_file)
        self.state_lock = StateLock(settings.state_path)
        self.state_lock.acquire()
        self.shadow_locks = ShadowLocks(settings.state_path)
        try:
            self.shadow_locks.hold(_own_shadows(settings))
        except HealthdError:
            self.state_lock.release()
            raise
        self.tracer_provider = build_tracer_provider(
            endpoint=settings.tracing.otlp_endpoint,
            service_name=settings.tracing.service_name,
            exporter=exporter,
        )
        self.state = StateStore(settings.state_path, created=self.state_lock.created)
        self._histogram: Any = None
        self.runner = Runner(
            settings, self.state, get_tracer(self.tracer_provider), observe_duration=self._observe
        )
        self.registry, self._histogram = build_registry(self._view)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        if GC_COLLECTOR is not None:
            GCCollector(registry=self.registry)
        self._reload_ok = Gauge(
            "healthd_config_last_reload_successful",
            "1 when the last configuration reload succeeded (or none was tried)",
            registry=self.registry,
        )
        self._reload_ok.set(1)
        self._reload_at = Gauge(
            "healthd_config_last_reload_success_timestamp_seconds",
            "When the configuration was last loaded successfully (at start or by a reload)",
            registry=self.registry,
        )
        self._reload_at.set_to_current_time()
        self._reload_failures = Counter(
            "healthd_config_reload_failures",
            "Configuration reloads refused (the running configuration was kept)",
            registry=self.registry,
        )
        self._reload_lock = threading.Lock()
        try:
            self.server = HttpServer(
                settings.server.host,
                settings.server.port,
                build_app(
                    self.registry,
                    self._view,
                    self._ready,
                    self._view_version,
                    readiness=self._readiness,
                    web=self._web,
                    reload=self.reload,
                ),
                tls=self.web.tls,
            )
        except OSError as exc:
            self.state.close()
            self.shadow_locks.release()
            self.state_lock.release()
            where = f"{settings.server.host}:{settings.server.port}"
            raise HealthdError(f"cannot listen on {where}: {exc.strerror or exc}") from exc
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
        # While the start-up run is going, the ticks it overlaps are not missed runs: that
        # run is the one they would have been (a first replay can take longer than a period).
        self._starting = threading.Event()

    # The runner and the web configuration are replaced by a reload: these read the current.
    def _view(self) -> dict[str, Any]:
        return self.runner.view()

    def _ready(self) -> bool:
        return self.runner.ready()

    def _view_version(self) -> int:
        return self.runner.view_version()

    def _readiness(self) -> str | None:
        return self.runner.readiness()

    def _web(self) -> WebConfig:
        return self.web

    def reload(self) -> str | None:
        """Load the configuration file again and apply it; None, or why it was refused (the
        running configuration is then kept)."""
        with self._reload_lock:
            origin = getattr(self.settings, "origin", None)
            path = None if origin in (None, "(built-in defaults)") else str(origin)
            try:
                new = load_settings(path)
                web = load_web_config(new.server.web_config_file)
                schedule = parse_schedule(new.schedule.cron)
                fixed = [
                    name
                    for name, before, after in (
                        ("state_path", self.settings.state_path, new.state_path),
                        ("server.host", self.settings.server.host, new.server.host),
                        ("server.port", self.settings.server.port, new.server.port),
                        ("tracing", self.settings.tracing, new.tracing),
                    )
                    if before != after
                ]
                if fixed:
                    raise ConfigError(
                        f"{origin}: {', '.join(fixed)} changed: only a restart applies that"
                    )
                self.shadow_locks.hold(_own_shadows(self.settings) + _own_shadows(new))
            except (HealthdError, ValueError) as exc:
                message = redact_text(str(exc)).replace("\n", "; ")
                self._reload_failures.inc()
                self._reload_ok.set(0)
                log.error(
                    "configuration reload failed; the running configuration is kept",
                    config=origin,
                    error=message,
                )
                return message
            try:
                self._apply(new, schedule, web)
            except Exception as exc:  # the runner of the running configuration is back
                self.shadow_locks.hold(_own_shadows(self.settings))
                message = redact_text(f"{type(exc).__name__}: {exc}")
                self._reload_failures.inc()
                self._reload_ok.set(0)
                log.error(
                    "configuration reload failed; the running configuration is kept",
                    config=origin,
                    error=message,
                )
                return message
            self.shadow_locks.hold(_own_shadows(new))
            self._reload_ok.set(1)
            self._reload_at.set_to_current_time()
            log.info(
                "configuration reloaded",
                config=origin,
                schedule=schedule.expression,
                sources=sorted(new.sources),
                targets=sorted(new.targets),
            )
            return None

    def _apply(self, new: Settings, schedule: Schedule, web: WebConfig) -> None:
        self.web = web
        self.server.set_tls(web.tls)
        if new.logging != self.settings.logging:
            configure_logging(new.logging.level, new.logging.format)
        old = self.runner
        with old.lock:  # waits for a run in progress; the next one uses the new runner
            old.stop.set()  # a job that picked the old runner just before the swap does nothing
            old.close()
            tracer = get_tracer(self.tracer_provider)
            try:
                runner = Runner(new, self.state, tracer, observe_duration=self._observe)
            except Exception:
                runner = Runner(self.settings, self.state, tracer, observe_duration=self._observe)
                raise
            finally:
                runner.adopt(old)
                self.runner = runner
        if schedule.expression != self.schedule.expression:
            try:
                self.scheduler.reschedule_job("run", trigger=schedule.trigger)
                self.scheduler.modify_job("run", misfire_grace_time=schedule.misfire_grace_seconds)
            except Exception:  # not scheduled yet (a reload before start): add_job reads it
                pass
        self._forget_durations(new)
        self.settings, self.schedule = new, schedule
        for t in self.runner.targets.values():
            if t.note:
                log.info("next run starts from scratch", target=t.name, reason=t.note)

    def _forget_durations(self, new: Settings) -> None:
        """Drop the run-duration series of targets the reload removed or gave another role
        (the other series are read from the runner at each scrape and go with it)."""
        if self._histogram is None:
            return
        for name, config in self.settings.targets.items():
            kept = new.targets.get(name)
            if kept is None or kept.role != config.role:
                try:
                    self._histogram.remove(name, config.role)
                except KeyError:  # it never ran
                    pass

    def _observe(self, target: str, seconds: float) -> None:
        if self._histogram is not None:
            config = self.settings.targets.get(target)
            role = config.role if config is not None else SUBJECT
            self._histogram.labels(target=target, role=role).observe(seconds)

    def _on_missed(self, event: JobExecutionEvent) -> None:
        reason = "still running" if event.code == EVENT_JOB_MAX_INSTANCES else "missed"
        if self._starting.is_set():
            log.info("scheduled run skipped: the start-up run is still going", reason=reason)
            return
        self.runner.count_missed()
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
        finally:
            self._starting.clear()

    def request_stop(self, signum: int | None = None) -> None:
        """Safe from a signal handler: the scheduler is shut down from another thread."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        _stop.STOPPING.set()
        self.runner.stop.set()
        # (logged from that thread: a handler that logs while the main thread holds the
        # logger's lock, writing a line of its own, would wait on it for ever)
        threading.Thread(
            target=self._shutdown_scheduler, args=(signum,), name="healthd-stop", daemon=True
        ).start()

    def _shutdown_scheduler(self, signum: int | None = None) -> None:
        log.info("stopping", signal=signal.Signals(signum).name if signum else None)
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
            tls=self.web.tls is not None,
            basic_auth_users=len(self.web.users),
            config=getattr(s, "origin", None),
        )
        for t in self.runner.targets.values():
            if t.note:
                log.info("next run starts from scratch", target=t.name, reason=t.note)
        kwargs: dict[str, Any] = {}
        if s.schedule.run_on_start:
            kwargs["next_run_time"] = datetime.now(UTC)
            self._starting.set()
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
            self.shadow_locks.release()
            self.state_lock.release()
        finally:
            self.runner.lock.release()
        log.info("stopped", clean=True)


def _own_shadows(settings: Settings) -> list[str]:
    """Every persistent reference shadow, those beside the state file too: another daemon
    may be given one of them as its own ``path``."""
    shadows = []
    for name, t in settings.targets.items():
        options = target_options(settings, name)
        if t.kind == "reference" and is_persistent(options):
            shadows.append(str(options["path"]))
    return shadows


def run(settings: Settings) -> int:
    configure_logging(settings.logging.level, settings.logging.format)
    daemon = Daemon(settings)
    install_signal_handlers(daemon)
    return daemon.serve()


def install_signal_handlers(daemon: Daemon) -> None:
    """SIGTERM and SIGINT stop the daemon, SIGHUP reloads its configuration; each handler
    only starts a thread, which does the work and logs it."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda n, _f: daemon.request_stop(n))
    signal.signal(signal.SIGHUP, lambda _n, _f: _reload_in_background(daemon))


def _reload_in_background(daemon: Daemon) -> None:
    """From the SIGHUP handler: a reload waits for a run in progress, so not in the handler
    (nor is its line logged there: see :meth:`Daemon.request_stop`)."""

    def reload() -> None:
        log.info("SIGHUP received: reloading the configuration")
        daemon.reload()

    threading.Thread(target=reload, name="healthd-reload", daemon=True).start()
