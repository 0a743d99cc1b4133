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
import os
import sqlite3
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from opentelemetry.trace import Status, StatusCode, Tracer

from healthd import __version__
from healthd._collector import replay_collection
from healthd.daemon.replay_store import ReplayStore, StateHolding
from healthd.daemon.state import RunRecord, SourceRow, StateStore, TargetRow, shadow_path
from healthd.errors import HealthdError
from healthd.evaluator import Replay, StageResult, is_sweep
from healthd.exporters.report import metrics_json, probe_json, stage_json
from healthd.logging import get_logger, redact_text
from healthd.memory import (
    Checkpointed,
    EventExpiryReporting,
    Memory,
    Releasing,
    RunScoped,
    TargetSpec,
    build_memory,
    retrieval_fingerprint,
)
from healthd.memory.fingerprint import UNDECLARED, RetrievalFingerprint
from healthd.model import ChangeEvent, FactKey, Probe
from healthd.probes import ProbeSet, load_probe_file
from healthd.reading import build_reader, versioned
from healthd.report.stagelog import StageLog
from healthd.settings import Settings, target_fingerprint
from healthd.sources import PullResult, Source, build_source
from healthd.sources._merge import merge_timelines
from healthd.timeline import dumps_event, format_timestamp

log = get_logger("healthd.runner")


RUN_HISTORY = 20  # runs listed on the page at /
IN_MEMORY_EVENTS = 10_000  # more new events than this are replayed from the state file
FIRST_PAGE_WAIT = 10.0  # seconds / waits for a run replaying when a target has no page yet


#: SQLite's answers for a file whose pages or header are not a database any more.
_CORRUPT = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


def _is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says a SQLite file is corrupt."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, sqlite3.DatabaseError) and (
            getattr(seen, "sqlite_errorname", None) in _CORRUPT
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Aborted(Exception):
    """The daemon is stopping; the run in progress gives up between two events."""


def target_options(settings: Settings, name: str) -> dict[str, Any]:
    """The switches a target's memory is built with; the reference memory gets a persistent
    shadow under the state directory unless its ``path`` is given."""
    target = settings.targets[name]
    options = dict(target.options)
    if target.kind == "reference" and "path" not in options:
        options["path"] = shadow_path(settings.state_path, name)
    return options


def is_persistent(options: dict[str, Any]) -> bool:
    return "path" in options and str(options["path"]) not in ("", ":memory:")


def _build(t: TargetRuntime) -> Memory:
    if t.persistent:
        os.makedirs(os.path.dirname(os.path.abspath(str(t.options["path"]))), exist_ok=True)
    return build_memory(TargetSpec(t.kind, t.options, t.name))


@dataclass
class SourceRuntime:
    name: str
    kind: str
    source: Source | None
    row: SourceRow


@dataclass
class TargetRuntime:
    name: str
    kind: str
    options: dict[str, Any]
    persistent: bool
    fingerprint: str
    row: TargetRow
    replay: Replay | None = None
    memory: Memory | None = None
    built_fingerprint: str | None = None
    note: str | None = None  # why the next run starts from scratch, for the log
    probes: ProbeSet | None = None  # the probe set the replay was last given
    stages: StageLog = field(default_factory=StageLog)  # for the page at /
    page: dict[str, Any] | None = None  # the last successful run, for the page at /
    position: int = 0  # how many of the runner's events the replay has applied
    last_event: str | None = None  # the id of the last of them
    store: ReplayStore | None = None  # the replay's state beside a persistent shadow
    pending_row: TargetRow | None = None  # this run's success, shown once it is stored
    page_wanted: int = 0  # bumped when the replay moved on; the page at / follows lazily
    page_built: int = 0
    retrieval: RetrievalFingerprint | None = None  # the last one a run was scored under
    retrieval_changes: int = 0  # a counter, kept in the results across restarts
    rebuilds: int = 0  # corrupt shadows moved aside and rebuilt, in this process
    shadow_checked: bool = False  # the shadow opened and agreed with the stored results
    # The newest real change replayed (not a revalidation sweep): its stage in the JSON
    # report's shape, whether sweeps came after it, and its event time (epoch seconds).
    last_change: dict[str, Any] | None = None
    swept: bool = False
    newest_change: float | None = None

    def carry_last_change(self, results: dict[str, Any] | None) -> None:
        """Take the newest real change from stored results (a restored replay)."""
        results = results or {}
        self.last_change = results.get("last_change")
        self.swept = bool(results.get("swept"))
        self.newest_change = results.get("newest_change")

    def note_stage(self, stage: StageResult, event: ChangeEvent) -> StageResult | None:
        """Follow the newest real change; the stage when ``event`` is one."""
        if is_sweep(event):
            self.swept = True
            return None
        self.swept = False
        at = event.timestamp.timestamp()
        if self.newest_change is None or at > self.newest_change:
            self.newest_change = at
        return stage


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


@dataclass
class RunSummary:
    run_id: str
    started: float
    duration: float
    new_events: int
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)
    aborted: bool = False


#: Skipped inputs remembered per source, so each is reported once.
MAX_SKIPS_REMEMBERED = 10_000


class Runner:
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
        self.skipped_inputs: dict[str, int] = {}
        self.sources_down_since: float | None = None  # every source failing since (clock)
        self.last_run: RunSummary | None = None
        self.history: deque[RunSummary] = deque(maxlen=RUN_HISTORY)

        self._replay_lock = threading.Lock()  # a run's replays, or the page at / reading one
        # Events taken in but not yet in the state file: a run whose state write failed
        # leaves them here, and the next run's write carries them, in order, with the
        # cursors and catalogued keys that follow them.
        self._unpersisted: list[tuple[str, ChangeEvent]] = []
        self._unpersisted_keys: dict[FactKey, None] = {}
        # The events this run pulled (the log's tail), None when too many to keep in memory.
        self._new: list[ChangeEvent] | None = []

        built: dict[str, Source] = {}
        for name, cfg in settings.sources.items():
            built[name] = build_source(cfg.kind, name, cfg.options)
        self.reader = build_reader(settings.reader)
        self._probe_extra, self.probe_config = self._read_probe_config()
        # what the state file holds, read at once (the events when a replay needs them)
        stored = state.stored()
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
            self.targets[name] = runtime
            self._restore(runtime)

    # -- startup --------------------------------------------------------------------------

    def _restore(self, t: TargetRuntime) -> None:
        row = t.row
        if row.applied == 0 and row.results is None and not t.persistent:
            return
        if row.fingerprint and row.fingerprint != t.fingerprint:
            t.note = (
                "configuration changed since the last run (probe file, staleness, "
                "forgetting window, mode or target options): fresh replay"
            )
            row.results = None
            return
        if not t.persistent:
            t.note = (
                f"the shadow lives in process memory; replaying {row.applied} stored "
                "events from scratch into a fresh one"
            )
            return
        # A persistent shadow's replay is read back by the first run (or page) that needs
        # it, not here: the daemon serves the stored results at once, however long the
        # history (reading a million events' state takes seconds).

    def _resume(self, t: TargetRuntime) -> bool:
        """Rebuild a persistent shadow's replay from the checkpoint of its last committed
        batch, without touching the shadow. False (and ``t.note`` says why) when it cannot
        be, and the next run replays from scratch."""
        memory: Memory | None = None
        try:
            memory = _build(t)
            checkpoint = memory.checkpoint() if isinstance(memory, Checkpointed) else None
            problem = self._checkpoint_problem(t, checkpoint)
            if problem or checkpoint is None:
                t.note = problem or t.note
                memory.close()
                return False
            applied = int(checkpoint["applied"])
            probes = self._current_probes()
            store = ReplayStore(memory) if isinstance(memory, StateHolding) else None
            replayed = 0
            if store is not None and "replay" in checkpoint:
                with replay_collection():  # what is read back lives as long as the replay
                    t.replay = store.load(
                        memory, probes, checkpoint["replay"], **self._replay_options()
                    )
            else:  # a checkpoint without the replay's state: truth folded from the events
                with replay_collection():
                    t.replay = Replay.restore(
                        memory,
                        probes,
                        self.state.iter_events(0, applied),
                        checkpoint["snapshot"],
                        **self._replay_options(),
                    )
                replayed = applied
                if store is not None:  # saved in full at the next commit
                    store.reset()
                    store.note_all(t.replay.truth)
            t.store = store
            if isinstance(memory, Checkpointed):
                memory.batch_writes()
        except Exception as exc:
            if memory is not None:
                try:
                    memory.close()
                except Exception:
                    pass
            t.replay = None
            t.note = (
                f"could not restore the shadow ({redact_text(f'{type(exc).__name__}: {exc}')})"
                ": fresh replay"
            )
            return False
        t.probes = probes
        t.memory = memory
        t.built_fingerprint = t.fingerprint
        t.position = applied
        t.last_event = checkpoint.get("last_event")
        self._carry_stored_change(t, applied)
        t.page_wanted += 1
        t.note = None
        log.info(
            "shadow restored",
            target=t.name,
            events=applied,
            shadow=str(t.options.get("path")),
            replayed=0,
            truth_folded_from_events=replayed,
            pending=self.event_count - applied,
        )
        return True

    def _carry_stored_change(self, t: TargetRuntime, applied: int) -> None:
        """The newest real change, from the stored results, when this process has not
        followed one yet."""
        if t.last_change is None and t.newest_change is None:
            t.carry_last_change(t.row.results)
            if t.row.results is not None and "newest_change" not in t.row.results and applied:
                # results stored by an older healthd: the newest real change's time, once
                t.newest_change = newest_change(self.state.iter_events(0, applied))

    def _checkpoint_problem(self, t: TargetRuntime, checkpoint: dict[str, Any] | None) -> str:
        if checkpoint is None:
            if t.row.dirty:
                return "the previous run was interrupted before its first batch: fresh replay"
            if t.row.applied:
                return "no replay checkpoint in the shadow: fresh replay"
            return ""
        applied = checkpoint.get("applied")
        if checkpoint.get("fingerprint") != t.fingerprint:
            return (
                "configuration changed since the shadow was written (probe file, staleness, "
                "forgetting window, mode or target options): fresh replay"
            )
        if not isinstance(applied, int) or applied > self.event_count:
            return "the state file holds fewer events than the shadow applied: fresh replay"
        last = self.state.event_id_at(applied) if applied else None
        if checkpoint.get("last_event") != last:
            return "the shadow's checkpoint does not match the stored events: fresh replay"
        return ""

    def _commit(self, t: TargetRuntime) -> None:
        """Make the shadow's writes so far durable, with where the replay has got to."""
        assert isinstance(t.memory, Checkpointed) and t.replay is not None
        n = t.position
        checkpoint: dict[str, Any] = {
            "fingerprint": t.fingerprint,
            "applied": n,
            "last_event": t.last_event if n else None,
        }
        if t.store is not None:
            checkpoint["replay"] = t.store.save(t.replay)
        else:
            checkpoint["snapshot"] = t.replay.snapshot()
        t.memory.commit(checkpoint)
        self._release(t)

    def _release(self, t: TargetRuntime) -> None:
        """Hold in full only the keys used last: what the shadow and the replay's stored
        rows hold is read back when next needed, so memory follows the keys in use, not the
        whole history (README, "Memory bounds")."""
        keep = self.settings.warm_keys
        if t.store is not None and t.replay is not None:
            t.store.release(t.replay, keep)
        if isinstance(t.memory, Releasing):
            t.memory.release(keep)

    def _replay_options(self) -> dict[str, Any]:
        return {
            "mode": self.settings.mode,
            "windows": self.settings.staleness.windows(),
            "forgetting_window": self.settings.forgetting_window,
            "reader": self.reader,
        }

    def _read_probe_config(self) -> tuple[list[Probe], str]:
        path = self.settings.probes
        if not path:
            return [], "none"
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()[:16]
        return load_probe_file(path), digest

    # -- the run --------------------------------------------------------------------------

    def run_once(self) -> RunSummary | None:
        if not self.lock.acquire(blocking=False):
            log.warning("run skipped: the previous run is still going")
            return None
        try:
            if self.stop.is_set():
                return None
            try:
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
                pulled, more = self._pull(run_id, record)
                while True:
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
                        )
                    except HealthdError as exc:
                        self._fail_all(run_id, summary, redact_text(str(exc)))
                        written = False
                        break
                    self._unpersisted.clear()
                    self._unpersisted_keys.clear()
                    if not more or self.stop.is_set():
                        break
                    pulled, more = self._pull(run_id, record, only=more)
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
                    # What a target's run cost is the whole run's: pull, replay, state
                    # write; observed before the results show, so a scrape that sees a
                    # run counted sees its duration too.
                    duration = time.perf_counter() - t0
                    for name, outcome in list(summary.targets.items()):
                        self._report(self.targets[name], run_id, outcome, duration)
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
        return summary

    def _sources_failed(self, now: float) -> str | None:
        """When every source failed in this run: the error the targets' runs fail with (the
        events read are still replayed and the results shown, but the run is no success)."""
        with self._changing():
            rows = [s.row for s in self.sources.values()]
            if not rows or any(row.up != 0 for row in rows):
                self.sources_down_since = None
                return None
            if self.sources_down_since is None:
                self.sources_down_since = now
        errors = "; ".join(f"{row.name}: {row.last_error}" for row in rows)
        return f"every source failed ({errors})"

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

    def _pull(
        self, run_id: str, record: RunRecord, only: set[str] | None = None
    ) -> tuple[list[tuple[str, ChangeEvent]], set[str]]:
        """New events from every source (or those in ``only``), merged, each with the name
        of its source; and the sources that stopped at a bound with more to read."""
        per_source: list[list[ChangeEvent]] = []
        source_of: dict[int, str] = {}
        more: set[str] = set()
        for s in self.sources.values():
            if self.stop.is_set():
                break
            if only is not None and s.name not in only:
                continue
            with self.tracer.start_as_current_span(
                "pull " + s.name,
                attributes={"healthd.source": s.name, "healthd.source.kind": s.kind},
            ) as span:
                started = time.monotonic()
                with self._changing():
                    self.pulling[s.name] = self.clock()
                try:
                    assert s.source is not None
                    result = s.source.pull(s.row.cursor)
                except Exception as exc:
                    result = PullResult([], s.row.cursor, error=f"{type(exc).__name__}: {exc}")
                finally:
                    with self._changing():
                        self.pulling.pop(s.name, None)
                pulled_in = time.monotonic() - started
                not_after = datetime.fromtimestamp(self.clock(), UTC) + (
                    self.settings.max_future_skew
                )
                timely = []
                for event in result.events:
                    if event.timestamp > not_after:
                        result.skipped.append(
                            f"event {event.id!r} refused: timestamp "
                            f"{format_timestamp(event.timestamp)} is later than "
                            f"{format_timestamp(not_after)} (now plus max_future_skew)"
                        )
                        continue
                    timely.append(event)
                fresh = self._unseen(s.name, timely, result)
                row = SourceRow(
                    s.name,
                    result.cursor,
                    s.row.events_total + len(fresh),
                    0 if result.error else 1,
                    redact_text(result.error) if result.error else None,
                )
                with self._changing():
                    s.row = row
                source_of.update((id(e), s.name) for e in fresh)
                record.sources.append(row)
                span.set_attribute("healthd.events.new", len(fresh))
                span.set_attribute("healthd.source.up", row.up)
                if result.error:
                    span.set_status(Status(StatusCode.ERROR, row.last_error))
                    log.error(
                        "source failed",
                        run_id=run_id,
                        source=s.name,
                        error=row.last_error,
                        events=len(fresh),
                    )
                self._report_skips(run_id, s.name, result.skipped)
                if not result.error:
                    log.info(
                        "source pulled",
                        run_id=run_id,
                        source=s.name,
                        events=len(fresh),
                        skipped=len(result.skipped),
                        seconds=round(pulled_in, 3),
                    )
                per_source.append(fresh)
                if result.more and not result.error:
                    more.add(s.name)
        return [(source_of[id(e)], e) for e in merge_timelines(*per_source)], more

    def _report_skips(self, run_id: str, source: str, skipped: list[str]) -> None:
        """Log and count the skipped inputs this source had not reported before (at most
        ``MAX_SKIPS_REMEMBERED`` remembered per source, the oldest forgotten first)."""
        seen = self.skips_seen.setdefault(source, {})
        new = [reason for reason in dict.fromkeys(skipped) if reason not in seen]
        if not new:
            return
        for reason in new:
            log.warning("source skipped input", run_id=run_id, source=source, reason=reason)
            seen[reason] = None
        while len(seen) > MAX_SKIPS_REMEMBERED:
            del seen[next(iter(seen))]
        with self._changing():
            self.skipped_inputs[source] = self.skipped_inputs.get(source, 0) + len(new)

    def _unseen(
        self, source: str, events: list[ChangeEvent], result: PullResult
    ) -> list[ChangeEvent]:
        """The events the source had not delivered before (looked up in the state file).
        For a source that says where it read each event (``result.places``), one delivered
        again with other content is reported with its place, never taken silently."""
        stored = self.state.stored_bodies(source, [e.id for e in events]) if events else {}
        pending = {e.id: e for name, e in self._unpersisted if name == source}
        fresh: list[ChangeEvent] = []
        again = 0
        for event in events:
            before = stored.get(event.id)
            if before is None and event.id in pending:
                before = dumps_event(pending[event.id])
            if before is None:
                pending[event.id] = event
                fresh.append(event)
            elif result.places is None:
                continue
            elif before == dumps_event(event):
                again += 1
            else:
                result.skipped.append(
                    f"{result.places.get(event.id, source)}: id {event.id!r} was read before "
                    "with other content; the rewritten line is not taken"
                )
        if again:
            result.skipped.append(
                f"source {source!r}: {again} events read before were not taken again"
            )
        return fresh

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

    def _events_from(self, position: int) -> Iterable[ChangeEvent]:
        """The events after the first ``position``: this run's from memory, older ones from
        the state file."""
        new = self._new or []
        tail = self.event_count - len(new)
        if position >= tail:
            return new[position - tail :]
        return self.state.iter_events(position)

    def _run_target(
        self, t: TargetRuntime, run_id: str, started: float, *, rebuilt: bool = False
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        row = t.row
        total = self.event_count
        new = total - row.applied
        outcome: dict[str, Any] = {"result": "success", "events": max(new, 0), "replayed": 0}
        if new == 0 and self._stands_as_stored(t):
            return self._serve_stored(t, run_id, t0, outcome)
        probes = self._current_probes()
        try:
            with self.tracer.start_as_current_span(
                "replay", attributes={"healthd.target": t.name, "healthd.target.kind": t.kind}
            ) as span:
                if isinstance(t.memory, RunScoped):
                    t.memory.begin_run()
                if t.replay is None and t.persistent:
                    self._resume(t)
                fresh = t.replay is None or t.built_fingerprint != t.fingerprint
                if not fresh and t.memory is not None:
                    fresh = self._retrieval_changed(t, run_id)
                if fresh:
                    reason = t.note or (
                        "configuration changed: fresh replay"
                        if t.built_fingerprint
                        else "first replay"
                    )
                    self._close(t)
                    memory = _build(t)
                    t.memory = memory
                    if self._retrieval_changed(t, run_id):
                        reason = f"{t.note}; {reason}" if reason != t.note else reason
                    memory.reset()
                    t.stages.clear()
                    t.replay = Replay(memory, probes, **self._replay_options())
                    t.probes = probes
                    t.built_fingerprint = t.fingerprint
                    t.position = 0
                    t.last_event = None
                    t.carry_last_change(None)
                    if t.persistent and isinstance(memory, StateHolding):
                        t.store = ReplayStore(memory)
                        t.store.reset()
                    if t.persistent and isinstance(memory, Checkpointed):
                        memory.batch_writes()
                    if total:
                        log.info(
                            "fresh replay",
                            run_id=run_id,
                            target=t.name,
                            reason=reason,
                            events=total,
                        )
                    t.note = None
                else:
                    assert t.replay is not None
                    if probes is not t.probes:
                        keys = self._new_probe_keys if t.probes is self._previous_probes else None
                        t.replay.update_probes(probes, keys)
                        t.probes = probes
                        t.page_wanted += 1
                todo = self._events_from(t.position)
                count = total - t.position
                replay = t.replay
                assert replay is not None
                batched = t.persistent and isinstance(t.memory, Checkpointed)
                progress = _Progress(self, t.name, run_id, count)
                done = 0
                change: StageResult | None = None
                with replay_collection():
                    for done, event in enumerate(todo, 1):
                        if self.stop.is_set():
                            raise Aborted()
                        stage = replay.step(event)
                        t.stages.add(stage, event)
                        change = t.note_stage(stage, event) or change
                        if t.store is not None:
                            t.store.note(event)
                        t.position += 1
                        t.last_event = event.id
                        if batched and done % self.settings.checkpoint_events == 0:
                            self._commit(t)
                        if done % 128 == 0:
                            progress.update(done)
                if change is not None:
                    t.last_change = stage_json(change)
                if batched and (done or fresh):
                    self._commit(t)
                progress.update(done, final=True)
                if done or fresh:
                    t.page_wanted += 1
                outcome["replayed"] = done
                span.set_attribute("healthd.events.replayed", done)
                span.set_attribute("healthd.replay.fresh", fresh)
            with self.tracer.start_as_current_span(
                "score", attributes={"healthd.target": t.name}
            ) as span:
                metrics = replay.metrics()
                retrieval = t.retrieval or UNDECLARED
                # the reader's label is in the version: a changed reader re-baselines
                version = versioned(probes.version, replay.reader)
                info_version = f"{version}-{t.fingerprint[:8]}"
                if retrieval != UNDECLARED:
                    info_version += f"-{retrieval.id[:8]}"
                results: dict[str, Any] = {
                    "metrics": metrics_json(metrics),
                    "probes": replay.active_probes,
                    "probe_set_version": version,
                    "info_version": info_version,
                    "retrieval": retrieval.as_json(),
                    "retrieval_changes": t.retrieval_changes,
                    "retrieval_changed_items": replay.retrieval_changed_items(),
                    "reader": replay.reader.label,
                    "reading": replay.reading_counts().as_dict(),
                    "at": format_timestamp(replay.at) if replay.at else None,
                    "newest_event": replay.at.timestamp() if replay.at else None,
                    "run_id": run_id,
                    "events": replay.stats.events,
                    "last_change": t.last_change,
                    "swept": t.swept,
                    "newest_change": t.newest_change,
                }
                if isinstance(t.memory, EventExpiryReporting):
                    results["event_expiry"] = t.memory.event_expiry_report()
                span.set_attribute("healthd.probes", replay.active_probes)
                span.set_attribute("healthd.probe_set.version", probes.version)
                for name, value in results["metrics"]["all"].items():
                    if value is not None:
                        span.set_attribute(f"healthd.{name}", value)
            results["duration_seconds"] = time.perf_counter() - t0
            self._succeeded(
                t,
                results,
                outcome,
                fingerprint=t.fingerprint,
                dirty=False,
                events_replayed=row.events_replayed + max(new, 0),
                applied=total,
                snapshot=None,  # the replay's state is in the shadow, with its checkpoint
            )
        except Aborted:
            if t.persistent and isinstance(t.memory, Checkpointed):
                try:  # what was replayed so far is kept; the next run resumes from here
                    self._commit(t)
                except Exception:
                    pass
            self._close(t)
            with self._changing():
                row.dirty = t.persistent or row.dirty
            t.note = "the previous run was stopped by a shutdown"
            log.warning("run aborted by shutdown", run_id=run_id, target=t.name)
            return {"result": "aborted", "aborted": True, "events": max(new, 0)}
        except Exception as exc:
            self._close(t)
            if not rebuilt and t.persistent and _is_corruption(exc) and self._set_aside(t, exc):
                return self._run_target(t, run_id, started, rebuilt=True)
            t.note = "the previous run failed"
            message = redact_text(f"{type(exc).__name__}: {exc}")
            t.pending_row = replace(  # shown with the other targets' results
                row,
                runs_failure=row.runs_failure + 1,
                last_run=self.clock(),
                last_result="failure",
                last_error=message,
                dirty=t.persistent or row.dirty,
            )
            outcome = {"result": "failure", "events": max(new, 0), "error": message}
            # logged at once, before the failure shows in the metrics
            log.error(
                "run failed",
                run_id=run_id,
                target=t.name,
                result="failure",
                duration_seconds=round(time.perf_counter() - t0, 4),
                events=outcome["events"],
                replayed=0,
                error=message,
            )
        outcome["replay_seconds"] = round(time.perf_counter() - t0, 6)
        return outcome

    def _stands_as_stored(self, t: TargetRuntime) -> bool:
        """A reference shadow not read back since a restart, its results stored by a run
        that finished, over the events it has: reading its replay back (seconds at a million
        events) would change no number, so a run with nothing new does not. Its retrieval
        follows from its options alone, which the fingerprint covers."""
        row = t.row
        return (
            t.replay is None
            and t.persistent
            and t.kind == "reference"
            and t.note is None
            and not row.dirty
            and row.results is not None
            and row.fingerprint == t.fingerprint
            and row.applied == self.event_count
            and (t.shadow_checked or self._shadow_agrees(t))
        )

    def _shadow_agrees(self, t: TargetRuntime) -> bool:
        """Whether the shadow opens and was checkpointed where the stored results were
        measured (once a process, as a warm daemon's open shadow is not looked at again):
        a shadow lost or broken while the daemon was down is found, and rebuilt, by the
        first run after the restart, not by the first with events."""
        memory: Memory | None = None
        try:
            memory = _build(t)
            checkpoint = memory.checkpoint() if isinstance(memory, Checkpointed) else None
        except Exception:
            return False
        finally:
            if memory is not None:
                try:
                    memory.close()
                except Exception:
                    pass
        t.shadow_checked = (
            checkpoint is not None
            and checkpoint.get("fingerprint") == t.fingerprint
            and checkpoint.get("applied") == t.row.applied
        )
        return t.shadow_checked

    def _serve_stored(
        self, t: TargetRuntime, run_id: str, t0: float, outcome: dict[str, Any]
    ) -> dict[str, Any]:
        row = t.row
        assert row.results is not None
        with self.tracer.start_as_current_span(
            "replay", attributes={"healthd.target": t.name, "healthd.target.kind": t.kind}
        ) as span:
            span.set_attribute("healthd.events.replayed", 0)
            span.set_attribute("healthd.replay.fresh", False)
        self._carry_stored_change(t, row.applied)
        results = {
            **row.results,
            "last_change": t.last_change,
            "swept": t.swept,
            "newest_change": t.newest_change,
            "run_id": run_id,
            "duration_seconds": time.perf_counter() - t0,
        }
        self._succeeded(t, results, outcome)
        outcome["replay_seconds"] = round(time.perf_counter() - t0, 6)
        return outcome

    def _succeeded(
        self, t: TargetRuntime, results: dict[str, Any], outcome: dict[str, Any], **row: Any
    ) -> None:
        """The target's run succeeded with ``results`` (and ``row``'s other changes): shown
        once the state file holds it (see _run)."""
        now = self.clock()
        t.pending_row = replace(
            t.row,
            results=results,
            runs_success=t.row.runs_success + 1,
            last_run=now,
            last_success=now,
            last_result="success",
            last_error=None,
            **row,
        )
        outcome["metrics"] = results["metrics"]["all"]
        outcome["probes"] = results["probes"]

    def _retrieval_changed(self, t: TargetRuntime, run_id: str) -> bool:
        """Note the fingerprint of the target's memory; True (logged and counted) when it
        differs from the one the target's last scores were measured under."""
        assert t.memory is not None
        current = retrieval_fingerprint(t.memory, self.reader.label)
        previous, t.retrieval = t.retrieval, current
        if previous is None or previous == current:
            return False
        t.retrieval_changes += 1
        t.note = "retrieval layer changed: new baseline"
        log.warning(
            "retrieval layer changed: new baseline",
            run_id=run_id,
            target=t.name,
            previous=previous.describe(),
            current=current.describe(),
            fingerprint=current.id,
        )
        return True

    def _report(
        self, t: TargetRuntime, run_id: str, outcome: dict[str, Any], duration: float
    ) -> None:
        """Log a target's successful run and observe its duration, once the state is written
        (a failed one was logged as it failed)."""
        self.observe_duration(t.name, duration)
        if outcome.get("aborted"):
            return
        outcome["duration_seconds"] = round(duration, 6)
        if outcome["result"] != "success":
            return
        log_fields = {
            "run_id": run_id,
            "target": t.name,
            "result": outcome["result"],
            "duration_seconds": round(duration, 4),
            "events": outcome["events"],
            "replayed": outcome.get("replayed", 0),
        }
        log_fields["probes"] = outcome["probes"]
        log_fields["metrics"] = outcome["metrics"]
        log.info("run", **log_fields)

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
                    "final": {
                        "metrics": results["metrics"],
                        "probes": [probe_json(p) for p in replay.report()],
                    },
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

    def _set_aside(self, t: TargetRuntime, exc: BaseException) -> bool:
        """A persistent shadow SQLite calls corrupt is derived data: moved aside (with its
        journal) for a post-mortem, to be rebuilt from the events in the state file. False
        when it cannot be moved (the run then fails naming it)."""
        path = str(t.options["path"])
        aside = f"{path}.corrupt-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"
        try:
            os.replace(path, aside)
            for suffix in ("-journal", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.replace(path + suffix, aside + suffix)
        except OSError as error:
            log.error("corrupt shadow could not be moved aside", shadow=path, error=str(error))
            return False
        with self._changing():
            t.rebuilds += 1
        t.note = "the shadow was corrupt: rebuilt from the state file"
        t.built_fingerprint = None
        log.warning(
            "shadow corrupt: moved aside, rebuilt",
            target=t.name,
            shadow=path,
            moved_to=os.path.basename(aside),
            error=redact_text(f"{type(exc).__name__}: {exc}"),
            events=self.event_count,
        )
        return True

    def _close(self, t: TargetRuntime) -> None:
        if t.memory is not None:
            try:
                t.memory.close()
            except Exception:
                pass
        t.memory = None
        t.replay = None
        t.store = None

    def close(self) -> None:
        for t in self.targets.values():
            self._close(t)

    # -- views (read by the metrics collector and the HTTP pages) -------------------------

    @contextmanager
    def _changing(self) -> Iterator[None]:
        """Change what the views show; scrapes served from a cache see a new version."""
        with self._view_lock:
            self.version += 1
            yield

    def view_version(self) -> int:
        return self.version

    def view(self) -> dict[str, Any]:
        with self._view_lock:
            return {
                "targets": {name: _copy_row(t.row) for name, t in self.targets.items()},
                "sources": {name: _copy_source(s.row) for name, s in self.sources.items()},
                "missed_runs": self.missed_runs,
                "skipped_inputs": dict(self.skipped_inputs),
                "shadow_rebuilds": {name: t.rebuilds for name, t in self.targets.items()},
                "pending": dict(self.pending),
                "pulling": dict(self.pulling),
                "runs_completed": self.runs_completed,
                "last_run": self.last_run,
                "history": list(self.history),
                "pages": _Pages(self),
                "windows": self.settings.staleness.windows(),
                "roles": {name: self.settings.targets[name].role for name in self.targets},
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

    def adopt(self, old: Runner) -> None:
        """Carry the in-process figures of the runner this one replaces (a reload)."""
        with self._changing():
            self.missed_runs = old.missed_runs
            self.runs_completed = old.runs_completed
            self.last_run = old.last_run
            self.history.extend(old.history)
            self.sources_down_since = old.sources_down_since

    def count_missed(self, n: int = 1) -> None:
        with self._changing():
            self.missed_runs += n


class _Pages(Mapping[str, "dict[str, Any] | None"]):
    """Each target's page at /, built when read (see :meth:`Runner._page`)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def __getitem__(self, name: str) -> dict[str, Any] | None:
        return self.runner._page(self.runner.targets[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self.runner.targets)

    def __len__(self) -> int:
        return len(self.runner.targets)


class _Progress:
    """A long replay's progress: ``pending`` in the view (a gauge) about once a second, and a
    log line with the rate and the time left every ``[logging] progress_interval``."""

    def __init__(self, runner: Runner, target: str, run_id: str, total: int) -> None:
        self.runner, self.target, self.run_id, self.total = runner, target, run_id, total
        self.started = self.shown = self.logged = time.monotonic()
        self.every = runner.settings.logging.progress_interval.total_seconds()

    def update(self, done: int, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.shown < min(1.0, self.every):
            return
        self.shown = now
        with self.runner._changing():
            if final:
                self.runner.pending.pop(self.target, None)
            else:
                self.runner.pending[self.target] = self.total - done
        if final or now - self.logged < self.every:
            return
        self.logged = now
        rate = done / max(now - self.started, 1e-9)
        log.info(
            "replay progress",
            run_id=self.run_id,
            target=self.target,
            events=done,
            total=self.total,
            events_per_second=round(rate, 1),
            eta_seconds=round((self.total - done) / rate, 1) if rate else None,
        )


def newest_change(events: Iterable[ChangeEvent]) -> float | None:
    """The event time (epoch seconds) of the newest event that is not a revalidation sweep."""
    times = (e.timestamp.timestamp() for e in events if not is_sweep(e))
    return max(times, default=None)


def _copy_row(row: TargetRow) -> TargetRow:
    return TargetRow(**{**row.__dict__, "snapshot": None})


def _copy_source(row: SourceRow) -> SourceRow:
    return SourceRow(**row.__dict__)


def utc_now() -> datetime:
    return datetime.now(UTC)
