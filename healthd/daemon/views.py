"""What the metrics collector and the HTTP pages read of a runner: its figures under one lock
(:meth:`Views._changing` changes them), readiness, and each target's page at /."""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry.trace import Tracer

from healthd.daemon.state import SourceRow, StateError, StateStore, TargetRow
from healthd.daemon.targets import SourceRuntime, TargetRuntime
from healthd.exporters.report import probe_json
from healthd.logging import redact_text
from healthd.settings import Settings
from healthd.timeline import format_timestamp

FIRST_PAGE_WAIT = 10.0  # seconds / waits for a run replaying when a target has no page yet


@dataclass
class RunSummary:
    run_id: str
    started: float
    duration: float
    new_events: int
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)
    aborted: bool = False

    #: What the run history keeps of each target's outcome across a restart.
    KEPT = ("result", "error", "replayed")

    def saved(self) -> dict[str, Any]:
        """The summary as the state file keeps it: what the page's run history shows."""
        return {
            "run_id": self.run_id,
            "started": self.started,
            "duration": self.duration,
            "new_events": self.new_events,
            "aborted": self.aborted,
            "targets": {
                name: {
                    k: redact_text(outcome[k]) if isinstance(outcome[k], str) else outcome[k]
                    for k in self.KEPT
                    if k in outcome
                }
                for name, outcome in self.targets.items()
            },
        }

    @classmethod
    def from_saved(cls, saved: Mapping[str, Any]) -> RunSummary | None:
        """A summary :meth:`saved` wrote, or None when it is not one."""
        try:
            targets = {
                str(name): {k: outcome[k] for k in cls.KEPT if k in outcome}
                for name, outcome in saved["targets"].items()
                if isinstance(outcome, dict)
            }
            return cls(
                str(saved["run_id"]),
                float(saved["started"]),
                float(saved["duration"]),
                int(saved["new_events"]),
                targets,
                bool(saved.get("aborted", False)),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


class Views:
    """The base of a :class:`~healthd.daemon.runner.Runner`'s parts (it sets these fields up):
    what the views show changes in :meth:`_changing`, and is read here."""

    settings: Settings
    state: StateStore
    tracer: Tracer
    clock: Callable[[], float]
    lock: threading.Lock
    stop: threading.Event
    targets: dict[str, TargetRuntime]
    sources: dict[str, SourceRuntime]
    _view_lock: threading.Lock
    _replay_lock: threading.Lock
    version: int
    pending: dict[str, int]
    pulling: dict[str, float]
    runs_completed: int
    missed_runs: int
    skipped_inputs: dict[str, int]
    sources_down_since: float | None
    last_run: RunSummary | None
    history: deque[RunSummary]
    # the shadows' (healthd.daemon.shadows): a page reads a replay back, and releases it
    _resume: Callable[[TargetRuntime], bool]
    _release: Callable[[TargetRuntime], None]

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """Change what the views show; scrapes served from a cache see a new version."""
        with self._view_lock:
            self.version += 1
            yield

    def view_version(self) -> int:
        return self.version

    @functools.cached_property
    def schedule_seconds(self) -> float:
        """The longest gap between two scheduled runs (the page judges "no recent success"
        by it); a runner lives as long as its settings' schedule."""
        from healthd.daemon.scheduler import parse_schedule

        return parse_schedule(self.settings.schedule.cron).longest_gap().total_seconds()

    def view(self) -> dict[str, Any]:
        with self._view_lock:
            return {
                "targets": {name: _copy_row(t.row) for name, t in self.targets.items()},
                "sources": {name: _copy_source(s.row) for name, s in self.sources.items()},
                "missed_runs": self.missed_runs,
                "skipped_inputs": dict(self.skipped_inputs),
                "shadow_rebuilds": {name: t.rebuilds for name, t in self.targets.items()},
                "llm_budget_left": {
                    name: dict(t.llm_budget_left)
                    for name, t in self.targets.items()
                    if t.llm_budget_left is not None
                },
                "pending": dict(self.pending),
                "pulling": dict(self.pulling),
                "runs_completed": self.runs_completed,
                "last_run": self.last_run,
                "history": list(self.history),
                "pages": _Pages(self),
                "windows": self.settings.staleness.windows(),
                "roles": {name: self.settings.targets[name].role for name in self.targets},
                "runbook_url": self.settings.runbook_url,
                "schedule_seconds": self.schedule_seconds,
            }

    def ready(self) -> bool:
        return self.readiness() is None

    def readiness(self) -> str | None:
        """None when ready: the last results are served, that is some target has measured
        something (results over at least one event), in this process or restored from the
        state file, and not every source has been failing for longer than
        ``[server] sources_down_grace``. Else why not. A source that is down while another
        is up does not make healthd unready (``healthd_source_up`` and ``/`` show it)."""
        with self._view_lock:
            if not any(
                t.row.results is not None and (t.row.results.get("events") or 0) > 0
                for t in self.targets.values()
            ):
                return "no results to serve yet (no target has measured any event)"
            since = self.sources_down_since
            grace = self.settings.server.sources_down_grace.total_seconds()
            if since is not None and self.clock() - since >= grace:
                return (
                    f"every source has failed since "
                    f"{format_timestamp(datetime.fromtimestamp(since, UTC))} "
                    f"(longer than sources_down_grace, {grace:g} s)"
                )
            return None

    def adopt(self, old: Views) -> None:
        """Carry the in-process figures of the runner this one replaces (a reload)."""
        with self._changing():
            self.missed_runs = old.missed_runs
            self.runs_completed = old.runs_completed
            self.last_run = old.last_run
            self.history.clear()  # (the same runs as read back from the state file, and newer)
            self.history.extend(old.history)
            self.sources_down_since = old.sources_down_since
            for name, t in self.targets.items():
                before = old.targets.get(name)
                # a persistent shadow whose configuration the reload kept, after a run that
                # succeeded, resumes where its stages end, so its chart goes on from them;
                # any other replays afresh (and clears what it was given)
                if (
                    before is not None
                    and t.persistent
                    and before.fingerprint == t.fingerprint
                    and before.row.last_success is not None
                    and before.row.last_run == before.row.last_success
                ):
                    t.stages = before.stages

    def count_missed(self, n: int = 1) -> None:
        with self._changing():
            self.missed_runs += n

    def _page(self, t: TargetRuntime) -> dict[str, Any] | None:
        """The target's part of the page at /, built when asked for after its replay moved
        on (not at every run: it reads every probe). While a run is replaying, the page
        built last is shown; a target with results and no page built yet waits for that run,
        up to ``FIRST_PAGE_WAIT`` seconds, rather than leave its chart out."""
        unread = t.replay is None and t.persistent and t.row.results is not None and not t.note
        if t.page_built == t.page_wanted and not unread:
            return t.page
        first = t.page is None and t.row.results is not None
        if not (
            self._replay_lock.acquire(timeout=FIRST_PAGE_WAIT)
            if first
            else self._replay_lock.acquire(blocking=False)
        ):
            return t.page
        try:
            if unread and t.replay is None:
                # not read back since a restart; not while a run holds the runner (its pull
                # extends the catalog the probe set is built from): that run, or the next
                # request, shows it
                if not self.lock.acquire(blocking=False):
                    return t.page
                try:
                    self._resume(t)
                except StateError:
                    return t.page  # the next run says it
                finally:
                    self.lock.release()
            replay, results = t.replay, t.row.results
            if replay is None or results is None:
                return t.page
            stages, stage_events = t.stages.stages()
            t.page = {
                "target": {
                    "name": t.name,
                    "kind": t.kind,
                    "role": self.settings.targets[t.name].role,
                    "stages": stages,
                    "quiet": t.stages.quiet(),
                    "final": {
                        "metrics": results["metrics"],
                        "probes": [probe_json(p) for p in replay.report()],
                    },
                    **({"llm": results["llm"]} if results.get("llm") else {}),
                    # as in the JSON report: only when sweeps came after the last change
                    **(
                        {"last_change": results["last_change"]}
                        if results.get("swept") and results.get("last_change")
                        else {}
                    ),
                },
                "events": stage_events,
                "multi_valued": frozenset(t.stages.multi_valued),
                "options": dict(t.options),
            }
            t.page_built = t.page_wanted
            self._release(t)  # the page read every probe's key
            return t.page
        finally:
            self._replay_lock.release()


class _Pages(Mapping[str, "dict[str, Any] | None"]):
    """Each target's page at /, built when read (see :meth:`Views._page`)."""

    def __init__(self, runner: Views) -> None:
        self.runner = runner

    def __getitem__(self, name: str) -> dict[str, Any] | None:
        return self.runner._page(self.runner.targets[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self.runner.targets)

    def __len__(self) -> int:
        return len(self.runner.targets)


def _copy_row(row: TargetRow) -> TargetRow:
    return TargetRow(**{**row.__dict__, "snapshot": None})


def _copy_source(row: SourceRow) -> SourceRow:
    return SourceRow(**row.__dict__)
