"""One run: pull every source, replay what is new into each target's shadow, score, export.

Per target a :class:`~healthd.evaluator.Replay` stays alive across runs, so a run replays
only the events it has not applied yet, and a run with nothing new replays nothing. The events
are kept in the state file, not in memory: a run reads what a target has not applied from
there (usually just the events it pulled). After each run the new events, the source cursors,
the keys they added to the probe set and each target's last results are written to the state
file in one transaction.

On restart a target whose shadow is persistent (the reference memory, by default in a file
under the state directory) is rebuilt from the replay's state kept beside the shadow
(:mod:`healthd.daemon.replay_store`) without touching the shadow or reading the events (a
shadow checkpointed by an older healthd: :meth:`Replay.restore` from the stored events, once);
a shadow that lives in process memory (``naive``, or
``path = ":memory:"``) is rebuilt by replaying the stored events from scratch, and the log
says so. A changed probe file, staleness policy, forgetting window, mode or target option
changes the target's fingerprint: the shadow is reset and everything is replayed, the log
says why, and ``healthd_probe_set_info``'s version label changes.

A changed retrieval fingerprint (the embedding model, its dimensions, the libraries that rank
or the reader: :mod:`healthd.memory.fingerprint`), seen when the memory is built or asked,
starts a new baseline the same way: the log says what changed, the target's
``healthd_retrieval_changes_total`` goes up, and the version label changes with it, so the
scores before and after are never compared as one series.

Event order: events from one source keep their arrival order; several sources are merged by
event time (a stable merge of the sources' arrival orders).
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer

from healthd import __version__, _stop
from healthd._files import open_regular
from healthd.daemon.pull import Pulling
from healthd.daemon.state import RunRecord, SourceRow, StateError, StateStore, TargetRow
from healthd.daemon.target_run import Aborted, TargetRuns
from healthd.daemon.targets import (
    SourceRuntime,
    TargetRuntime,
    is_persistent,
    newest_change,
    target_options,
)
from healthd.daemon.views import RunSummary
from healthd.errors import HealthdError
from healthd.logging import get_logger, redact_text
from healthd.memory.fingerprint import RetrievalFingerprint
from healthd.model import ChangeEvent, FactKey, Probe
from healthd.people import Person
from healthd.probes import ProbeSet, load_probe_file
from healthd.reading import build_reader, with_people
from healthd.settings import Settings, duration_text, target_fingerprint
from healthd.sources import Source, build_source

__all__ = [
    "IN_MEMORY_EVENTS",
    "Aborted",
    "RunSummary",
    "Runner",
    "is_persistent",
    "newest_change",
    "target_options",
    "utc_now",
]

log = get_logger("healthd.runner")


RUN_HISTORY = 20  # runs listed on the page at /
IN_MEMORY_EVENTS = 10_000  # more new events than this are replayed from the state file


def _stored_retrieval(results: Mapping[str, Any] | None) -> tuple[RetrievalFingerprint | None, int]:
    """The retrieval fingerprint and change count a target's stored results carry."""
    if not results or not isinstance(results.get("retrieval"), dict):
        return None, 0
    try:
        return RetrievalFingerprint.from_json(results["retrieval"]), int(
            results.get("retrieval_changes", 0)
        )
    except (TypeError, ValueError):
        return None, 0


class Runner(TargetRuns, Pulling):
    """Set up from the settings and what the state file holds (read once, here); a run is
    :meth:`run_once`. Its parts: the pull of the sources (:mod:`healthd.daemon.pull`), each
    target's run (:mod:`healthd.daemon.target_run`) and shadow
    (:mod:`healthd.daemon.shadows`), and what the metrics and pages read
    (:mod:`healthd.daemon.views`)."""

    def __init__(
        self,
        settings: Settings,
        state: StateStore,
        tracer: Tracer,
        *,
        clock: Callable[[], float] = time.time,
        observe_duration: Callable[[str, float], None] | None = None,
    ) -> None:
        self.settings = settings
        self.state = state
        self.tracer = tracer
        self.clock = clock
        self.observe_duration = observe_duration or (lambda _t, _d: None)
        self.lock = threading.Lock()  # one run at a time; shutdown waits on it
        self.stop = threading.Event()
        self._view_lock = threading.Lock()  # scrapes read a consistent view
        self.version = 0  # bumped whenever what the views show changes
        self.pending: dict[str, int] = {}  # events a replay in progress has still to apply
        self.pulling: dict[str, float] = {}  # when each pull in progress started
        self.runs_completed = 0  # in this process
        self.missed_runs = 0
        # each source's skipped inputs: reported (logged and counted) when first seen, so a
        # pull that meets the same bad line again says nothing new
        self.skips_seen: dict[str, dict[str, None]] = {}
        self.waits_said: dict[str, str] = {}
        self.skipped_inputs: dict[str, int] = {}
        self.sources_down_since: float | None = None  # every source failing since (clock)
        self.last_run: RunSummary | None = None
        self.history: deque[RunSummary] = deque(maxlen=RUN_HISTORY)
        for saved in state.run_history()[-RUN_HISTORY:]:  # the runs before a restart
            run = RunSummary.from_saved(saved)
            if run is not None:
                self.history.append(run)

        self._replay_lock = threading.Lock()  # a run's replays, or the page at / reading one
        # Events taken in but not yet in the state file: a run whose state write failed
        # leaves them here, and the next run's write carries them, in order, with the
        # cursors and catalogued keys that follow them.
        self._unpersisted: list[tuple[str, ChangeEvent]] = []
        self._unpersisted_keys: dict[FactKey, None] = {}
        self._unpersisted_people: dict[str, list[Person]] = {}
        # The events this run pulled (the log's tail), None when too many to keep in memory.
        self._new: list[ChangeEvent] | None = []

        built: dict[str, Source] = {}
        for name, cfg in settings.sources.items():
            built[name] = build_source(cfg.kind, name, cfg.options)
        self._probe_extra, self.probe_config = self._read_probe_config()
        # what the state file holds, read at once (the events when a replay needs them)
        stored = state.stored()
        # the reader, naming people as the sources' identity records (kept in the state
        # file, so a restart reads as the run before it did)
        self._reader = build_reader(settings.reader)
        self.people = {n: p for n, p in stored.people.items() if n in settings.sources}
        self.reader = with_people(self._reader, self._all_people())
        self.event_count = stored.event_count
        self.sources: dict[str, SourceRuntime] = {}
        for name, cfg in settings.sources.items():
            self.sources[name] = SourceRuntime(
                name, cfg.kind, built[name], stored.sources.get(name, SourceRow(name))
            )
        self.catalog = stored.catalog
        # built from the catalog when a run (or the page) first needs it: a probe a key,
        # seconds at a million events, which a restart need not wait for
        self._probes: ProbeSet | None = None
        self._probes_extra_used = self._probe_extra
        self._previous_probes: ProbeSet | None = None
        self._new_probe_keys: list[FactKey] = []  # keys the current set added to the previous
        self.targets: dict[str, TargetRuntime] = {}
        for name, target_cfg in settings.targets.items():
            options = target_options(settings, name)
            fingerprint = target_fingerprint(
                settings, name, options, self.probe_config, self.reader.label
            )
            row = stored.targets.get(name) or TargetRow(name, fingerprint)
            runtime = TargetRuntime(
                name, target_cfg.kind, options, is_persistent(options), fingerprint, row
            )
            runtime.retrieval, runtime.retrieval_changes = _stored_retrieval(row.results)
            stored_llm = (row.results or {}).get("llm")
            runtime.llm_total = stored_llm if isinstance(stored_llm, dict) else None
            self.targets[name] = runtime
            self._restore(runtime)

    # -- the run --------------------------------------------------------------------------

    def run_once(self) -> RunSummary | None:
        if not self.lock.acquire(blocking=False):
            log.warning("run skipped: the previous run is still going")
            return None
        try:
            if self.stop.is_set():
                return None
            try:
                with _stop.run_deadline(self.settings.run_timeout.total_seconds(), self._bound):
                    return self._run()
            except Exception as exc:
                # Whatever broke, the run failed for every target, and the metrics say so.
                message = redact_text(f"{type(exc).__name__}: {exc}")
                log.exception("run crashed", error=message)
                summary = RunSummary(uuid.uuid4().hex[:12], self.clock(), 0.0, 0)
                self._fail_all(summary.run_id, summary, message, prefix="run crashed")
                return summary
        finally:
            self.lock.release()

    def _run(self) -> RunSummary:
        run_id = uuid.uuid4().hex[:12]
        started = self.clock()
        t0 = time.perf_counter()
        record = RunRecord()
        summary = RunSummary(run_id, started, 0.0, 0)
        with self.tracer.start_as_current_span(
            "healthd.run", attributes={"healthd.run_id": run_id, "healthd.version": __version__}
        ) as root:
            self._refresh_probes()
            self._new = []
            changed: dict[FactKey, None] = {}
            written = True
            with self.tracer.start_as_current_span("pull") as span:
                try:
                    pulled, more = self._pull(run_id, record)
                except StateError as exc:  # new events are looked up in it
                    self._fail_all(run_id, summary, redact_text(str(exc)), "state file not read")
                    pulled, more, written = [], set(), False
                while written:
                    new = [event for _, event in pulled]
                    summary.new_events += len(new)
                    with self._view_lock:
                        self.event_count += len(new)
                    if self._new is not None and len(self._new) + len(new) <= IN_MEMORY_EVENTS:
                        self._new.extend(new)
                    else:
                        # A backlog (a first run): replayed from the state file a chunk at
                        # a time, so the events are not all held in memory beside the replay.
                        self._new = None
                    keys = self.catalog.add(new)
                    changed.update(dict.fromkeys(keys))
                    self._unpersisted.extend(pulled)
                    self._unpersisted_keys.update(dict.fromkeys(keys))
                    pulled, new = [], []
                    # The events and cursors are stored before any shadow is written, so a
                    # shadow's checkpoint never names an event a restart would not find in
                    # the state file.
                    try:
                        self.state.record_events(
                            self._unpersisted,
                            record.sources,
                            self.catalog.rows(self._unpersisted_keys),
                            self._unpersisted_people,
                        )
                    except HealthdError as exc:
                        self._fail_all(run_id, summary, redact_text(str(exc)))
                        written = False
                        break
                    self._unpersisted.clear()
                    self._unpersisted_keys.clear()
                    self._take_people()
                    if not more or self.stop.is_set() or _stop.run_time_left() == 0.0:
                        break  # a source with more to read goes on in the next run
                    try:
                        pulled, more = self._pull(run_id, record, only=more)
                    except StateError as exc:
                        self._fail_all(
                            run_id, summary, redact_text(str(exc)), "state file not read"
                        )
                        written = False
                span.set_attribute("healthd.events.new", summary.new_events)
            sources_failed = self._sources_failed(started)
            self._extend_probes(list(changed))
            if written:
                try:
                    self.state.set_dirty(
                        [t.name for t in self.targets.values() if t.persistent],
                        {t.name: t.fingerprint for t in self.targets.values()},
                    )
                except HealthdError as exc:
                    self._fail_all(run_id, summary, redact_text(str(exc)))
                    written = False
            if written:
                with self._replay_lock:  # the page at / waits for the results to be shown
                    for t in self.targets.values():
                        if self.stop.is_set():
                            summary.aborted = True
                            break
                        outcome = self._run_target(t, run_id, started)
                        if sources_failed and outcome["result"] == "success":
                            outcome = self._fail_for_sources(t, run_id, outcome, sources_failed)
                        summary.targets[t.name] = outcome
                        if outcome.get("aborted"):
                            summary.aborted = True
                    with self.tracer.start_as_current_span("export") as span:
                        record.targets = [t.pending_row or t.row for t in self.targets.values()]
                        try:
                            self.state.record_run(record)
                        except HealthdError as exc:
                            self._show_results()
                            self._fail_all(run_id, summary, redact_text(str(exc)))
                        span.set_attribute("healthd.targets", len(self.targets))
                    self._new = []  # in the state file now; not kept until the next run
                    # What a target's run cost is the run's shared part (pull, state
                    # write) and its own replay, not the other targets' replays (the
                    # targets replay in turn); observed before the results show, so a
                    # scrape that sees a run counted sees its duration too.
                    duration = time.perf_counter() - t0
                    replays = {
                        name: float(outcome.get("replay_seconds", 0.0))
                        for name, outcome in summary.targets.items()
                    }
                    for name, outcome in list(summary.targets.items()):
                        others = sum(replays.values()) - replays[name]
                        own = max(duration - others, replays[name])
                        self._report(self.targets[name], run_id, outcome, own)
                    self._show_results()
            summary.duration = time.perf_counter() - t0
            root.set_attribute("healthd.events.new", summary.new_events)
            root.set_attribute(
                "healthd.targets.failed",
                sum(1 for o in summary.targets.values() if o["result"] == "failure"),
            )
            if any(o["result"] == "failure" for o in summary.targets.values()):
                root.set_status(Status(StatusCode.ERROR, "a target failed"))
        with self._changing():
            if not summary.aborted:
                self.runs_completed += 1
            self.last_run = summary
            self.history.append(summary)
            kept = [run.saved() for run in self.history]
        try:
            self.state.save_run_history(kept)
        except HealthdError as exc:  # the run itself is recorded; only its listing is not
            log.warning("run history not saved", error=redact_text(str(exc)))
        return summary

    @property
    def _bound(self) -> str:
        return f"run_timeout={duration_text(self.settings.run_timeout)}"

    def _fail_for_sources(
        self, t: TargetRuntime, run_id: str, outcome: dict[str, Any], error: str
    ) -> dict[str, Any]:
        row = t.pending_row
        assert row is not None
        t.pending_row = replace(
            row,
            runs_success=row.runs_success - 1,
            runs_failure=row.runs_failure + 1,
            last_success=t.row.last_success,
            last_result="failure",
            last_error=error,
        )
        log.error(
            "run failed",
            run_id=run_id,
            target=t.name,
            result="failure",
            events=outcome["events"],
            replayed=outcome.get("replayed", 0),
            error=error,
        )
        return {**outcome, "result": "failure", "error": error}

    def _show_results(self) -> None:
        """The targets' rows this run updated become what the metrics and pages show."""
        with self._changing():
            for t in self.targets.values():
                if t.pending_row is not None:
                    t.row, t.pending_row = t.pending_row, None

    def _fail_all(
        self,
        run_id: str,
        summary: RunSummary,
        message: str,
        prefix: str = "state file not written",
    ) -> None:
        """The state file could not be written (or the run broke): every target's run this
        time is a failure (a success already counted is taken back), so the runs-failing
        alert fires."""
        error = f"{prefix}: {message}"
        now = self.clock()
        with self._changing():
            for t in self.targets.values():
                row = t.row
                if summary.targets.get(t.name, {}).get("result") == "success":
                    row.runs_success -= 1
                row.runs_failure += 1
                row.last_run = now
                row.last_result = "failure"
                row.last_error = error
                summary.targets[t.name] = {"result": "failure", "events": 0, "error": error}
        log.error("run failed", run_id=run_id, error=error, targets=sorted(self.targets))

    # -- the people ------------------------------------------------------------------------

    def _all_people(self) -> list[Person]:
        return [p for name in sorted(self.people) for p in self.people[name]]

    def _take_people(self) -> None:
        """The identity records this run's pulls gave (now in the state file) replace each
        source's earlier ones; a reader naming other people is a changed reader: every
        target's fingerprint changes and it starts a fresh replay, as for a changed probe
        file, so scores read with two tables are never one series."""
        if not self._unpersisted_people:
            return
        self.people.update(self._unpersisted_people)
        self._unpersisted_people.clear()
        reader = with_people(self._reader, self._all_people())
        if reader.label == self.reader.label:
            return
        log.info(
            "people changed: every target starts a fresh replay",
            reader=reader.label,
            previous=self.reader.label,
        )
        self.reader = reader
        for t in self.targets.values():
            t.fingerprint = target_fingerprint(
                self.settings, t.name, t.options, self.probe_config, reader.label
            )

    # -- the probe set ----------------------------------------------------------------------

    def _read_probe_config(self) -> tuple[list[Probe], str]:
        path = self.settings.probes
        if not path:
            return [], "none"
        probes = load_probe_file(path)  # refuses a pipe or a device before reading it
        with open_regular(path) as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()[:16]
        return probes, digest

    @property
    def probes(self) -> ProbeSet:
        """The probe set over every event so far (+ the probe file)."""
        if self._probes is None:
            self._probes = self.catalog.probe_set(self._probe_extra)
            self._probes_extra_used = self._probe_extra
        return self._probes

    def _extend_probes(self, changed: list[FactKey]) -> None:
        """The probe set follows the catalog of keys (extended by the new events alone);
        ``changed``: the keys this run's events added or changed in it."""
        if self._probes is None:
            return  # not built yet: built from the whole catalog when first needed
        if changed or self._probe_extra is not self._probes_extra_used:
            self._previous_probes = self._probes
            self._new_probe_keys = changed
            self._probes = self.catalog.probe_set(self._probe_extra)
            self._probes_extra_used = self._probe_extra

    def _refresh_probes(self) -> None:
        """Read the probe file again; a changed file changes every target's fingerprint."""
        try:
            extra, config = self._read_probe_config()
        except Exception as exc:
            log.error(
                "probe file unreadable; keeping the previous probes", error=redact_text(str(exc))
            )
            return
        if config != self.probe_config:
            log.info("probe file changed: every target starts a fresh replay", probe_config=config)
            self.probe_config = config
            self._probe_extra = extra
            for t in self.targets.values():
                t.fingerprint = target_fingerprint(
                    self.settings, t.name, t.options, config, self.reader.label
                )

    def _current_probes(self) -> ProbeSet:
        """The probe set over every event so far (+ the probe file); new keys extend it."""
        return self.probes

    def close(self) -> None:
        for t in self.targets.values():
            self._close(t)


def utc_now() -> datetime:
    return datetime.now(UTC)
