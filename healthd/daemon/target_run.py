"""One target's run: replay what it has not applied into its shadow (read back from its
checkpoint first, after a restart), score it and make it durable; or serve its stored results
when nothing is new. A shadow SQLite calls corrupt is set aside and rebuilt from the events in
the state file (:mod:`healthd.daemon.shadows`)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from healthd import _stop
from healthd._collector import replay_collection
from healthd.daemon.replay_store import ReplayStore, StateHolding
from healthd.daemon.shadows import Shadows
from healthd.daemon.state import CORRUPT, StateError, TargetRow
from healthd.daemon.targets import TargetRuntime, build_shadow, scratch_spec
from healthd.daemon.views import Views
from healthd.evaluator import Replay, StageResult, evaluate
from healthd.exporters.report import metrics_json
from healthd.llm_budget import LLMBudget, LLMBudgetExceeded
from healthd.llm_usage import add_blocks
from healthd.logging import get_logger, redact_text
from healthd.memory import (
    Checkpointed,
    EventExpiryReporting,
    LLMCounting,
    RunScoped,
    TargetSpec,
    batch_events,
    build_memory,
    llm_block,
    retrieval_fingerprint,
)
from healthd.memory.fingerprint import UNDECLARED, RetrievalFingerprint
from healthd.model import ChangeEvent, FactKey, is_sweep
from healthd.probes import ProbeSet
from healthd.reading import versioned
from healthd.repeats import Spread, bounds, means
from healthd.replay_groups import sweep_groups, write_group
from healthd.timeline import format_timestamp

log = get_logger("healthd.runner")


def _is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says a shadow's SQLite file is
    corrupt (a corrupt state file is not the shadow's)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None or isinstance(seen, StateError):
            return False
        if isinstance(seen, sqlite3.DatabaseError) and (
            getattr(seen, "sqlite_errorname", None) in CORRUPT
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Aborted(Exception):
    """The daemon is stopping; the run in progress gives up between two events."""


class TargetRuns(Shadows):
    """The part of a :class:`~healthd.daemon.runner.Runner` that runs each target."""

    observe_duration: Callable[[str, float], None]
    _new: list[ChangeEvent] | None
    _previous_probes: ProbeSet | None
    _new_probe_keys: list[FactKey]

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
                if TargetSpec(t.kind, t.options, t.name).repeats > 1:
                    scratch_spec(t)  # a kind with no private shadow is refused before any write
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
                    memory = build_shadow(t)
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
                self._begin_budget(t)
                todo = self._events_from(t.position)
                count = total - t.position
                replay = t.replay
                assert replay is not None
                batched = t.persistent and isinstance(t.memory, Checkpointed)
                progress = _Progress(self, t.name, run_id, count)
                done = 0
                timed_out: str | None = None
                # a memory written in batches (one wait, one stage per batch) is never
                # committed with a batch half scored
                batch = batch_events(t.memory) if t.memory is not None else 1
                held: list[ChangeEvent] = []
                every = self.settings.checkpoint_events
                with replay_collection():
                    # a revalidation sweep's events about one subject may be one write (one
                    # statement), given before any of them is stepped: a refusal leaves
                    # the whole group to the next run
                    for group in sweep_groups(todo, replay.memory):
                        if self.stop.is_set():
                            raise Aborted()
                        if _stop.run_time_left() == 0.0:
                            timed_out = f"replay stopped after {done} of {count} events"
                            break
                        written = write_group(replay.memory, group)
                        for event in group:
                            done += 1
                            last = event is group[-1]
                            commit = (
                                batched and last and done // every > (done - len(group)) // every
                            )
                            score = last and (
                                batch == 1 or len(held) + 1 >= batch or done == count or commit
                            )
                            stage = replay.step(event, score=score, written=written)
                            if stage is None:
                                held.append(event)
                            else:
                                _take_stage(t, stage, event, held)
                            if t.store is not None:
                                t.store.note(event)
                            t.position += 1
                            t.last_event = event.id
                            if commit:
                                self._commit(t)
                            if done % 128 == 0:
                                progress.update(done)
                    stage = replay.flush()  # a batch cut short by the run's time limit
                    if stage is not None:
                        _take_stage(t, stage, held[-1], held[:-1])
                self._settle_change(t)
                if batched and (done or fresh):
                    self._commit(t)
                progress.update(done, final=True)
                if done or fresh:
                    t.page_wanted += 1
                outcome["replayed"] = done
                span.set_attribute("healthd.events.replayed", done)
                span.set_attribute("healthd.replay.fresh", fresh)
            if timed_out is not None:
                _stop.check_run_time(timed_out)  # what was replayed stands (and is committed)
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
                    "probe_setup": self._probe_setup(t, probes, replay.reader.label, retrieval),
                    "retrieval": retrieval.as_json(),
                    "retrieval_changes": t.retrieval_changes,
                    "retrieval_changed_items": replay.retrieval_changed_items(),
                    "reader": replay.reader.label,
                    "reading": replay.reading_counts().as_dict(),
                    "at": format_timestamp(replay.at) if replay.at else None,
                    "newest_event": replay.at.timestamp() if replay.at else None,
                    "run_id": run_id,
                    "events": replay.stats.events,
                    **t.change_record(),
                }
                if isinstance(t.memory, EventExpiryReporting):
                    results["event_expiry"] = t.memory.event_expiry_report()
                outcome["llm"] = t.end_llm_run()
                results["llm"] = t.llm_total
                repeats = TargetSpec(t.kind, t.options, t.name).repeats
                if repeats > 1:
                    self._repeat(t, probes, results, outcome, repeats)
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
                # the replay's state is in the shadow, with its checkpoint; the column keeps
                # the day's LLM tokens, for a budget per day
                snapshot=self._budget_state(t),
            )
        except Aborted:
            if t.persistent and isinstance(t.memory, Checkpointed):
                try:  # what was replayed so far is kept; the next run resumes from here
                    if t.replay is not None and t.replay.held:
                        t.replay.flush()  # a checkpoint never holds half a batch
                    self._commit(t)
                except Exception:
                    pass
            self._close(t)
            with self._changing():
                row.dirty = t.persistent or row.dirty
            t.note = "the previous run was stopped by a shutdown"
            log.warning("run aborted by shutdown", run_id=run_id, target=t.name)
            return {"result": "aborted", "aborted": True, "events": max(new, 0)}
        except LLMBudgetExceeded as exc:
            # Before the call that would exceed it, between two events: what was replayed
            # stands (in the open shadow, committed when it keeps checkpoints) and the next
            # run goes on from it, with a fresh calls budget.
            self._keep_replayed(t)
            where = f"{t.position} of {total} events replayed; the next run resumes from there"
            return self._failed(t, row, run_id, t0, new, f"{exc}; {where}")
        except _stop.RunTimedOut as exc:
            # Between two events: what was replayed stands, and the next run goes on from it.
            return self._failed(t, row, run_id, t0, new, str(exc))
        except Exception as exc:
            self._close(t)
            if not rebuilt and t.persistent and _is_corruption(exc) and self._set_aside(t, exc):
                return self._run_target(t, run_id, started, rebuilt=True)
            t.note = "the previous run failed"
            return self._failed(t, row, run_id, t0, new, f"{type(exc).__name__}: {exc}")
        outcome["replay_seconds"] = round(time.perf_counter() - t0, 6)
        return outcome

    def _repeat(
        self,
        t: TargetRuntime,
        probes: ProbeSet,
        results: dict[str, Any],
        outcome: dict[str, Any],
        n: int,
    ) -> None:
        """``repeats = n``: the history replayed n - 1 times more, each into a fresh private
        shadow; the ratios become the n replays' means, with their spread beside them
        (``spread``: the gauges' bounds; ``repeats``: the whole of it). Their calls are this
        run's too."""
        spread = Spread()
        spread.add(results["metrics"])
        memory = build_memory(scratch_spec(t))
        try:
            for _ in range(n - 1):
                if self.stop.is_set():
                    raise Aborted()
                again = evaluate(
                    self._events_from(0),
                    memory,
                    probes,
                    name=t.name,
                    kind=t.kind,
                    keep_stages=False,
                    **self._replay_options(),
                )
                spread.add(metrics_json(again.metrics))
            block = llm_block(memory, t.kind)
        finally:
            memory.close()
        outcome["llm"] = add_blocks(outcome["llm"], block)
        t.llm_total = results["llm"] = add_blocks(t.llm_total, block)
        final = spread.as_json()
        results["repeats"] = {"n": n, "final": final}
        results["metrics"] = means(final)
        results["spread"] = bounds(final)

    def _failed(
        self, t: TargetRuntime, row: TargetRow, run_id: str, t0: float, new: int, error: str
    ) -> dict[str, Any]:
        """The target's run failed with ``error``: shown with the other targets' results."""
        message = redact_text(error)
        llm = t.end_llm_run()  # a failed run's calls cost all the same
        t.pending_row = replace(
            row,
            results={**row.results, "llm": t.llm_total} if row.results else row.results,
            runs_failure=row.runs_failure + 1,
            last_run=self.clock(),
            last_result="failure",
            last_error=message,
            dirty=t.persistent or row.dirty,
            snapshot=self._budget_state(t),
        )
        outcome: dict[str, Any] = {"result": "failure", "events": max(new, 0), "error": message}
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
            **_llm_fields(llm),
        )
        outcome["replay_seconds"] = round(time.perf_counter() - t0, 6)
        return outcome

    def _begin_budget(self, t: TargetRuntime) -> None:
        """A run with LLM budgets starts: a fresh calls budget, the day's tokens so far (the
        day in UTC, from the state file after a restart)."""
        budget = _budget(t)
        if budget is not None:
            day = datetime.fromtimestamp(self.clock(), UTC).date().isoformat()
            budget.begin_run(day, (t.row.snapshot or {}).get("llm_budget"))

    def _budget_state(self, t: TargetRuntime) -> dict[str, Any] | None:
        """What the state file keeps of the target's budgets; what is left, for the gauge."""
        budget = _budget(t)
        if budget is None:
            return t.row.snapshot
        with self._changing():
            t.llm_budget_left = budget.remaining()
        return {"llm_budget": budget.stored()}

    def _keep_replayed(self, t: TargetRuntime) -> None:
        """A run stopped between two events keeps its replay open where it got to."""
        self.pending.pop(t.name, None)
        replay = t.replay
        if replay is not None and replay.held:  # reads are never refused
            replay.flush()
        self._settle_change(t)
        if t.persistent and isinstance(t.memory, Checkpointed) and replay is not None:
            self._commit(t)

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
            **t.change_record(),
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
        once the state file holds it (see Runner._run)."""
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

    def _probe_setup(
        self, t: TargetRuntime, probes: ProbeSet, reader: str, retrieval: RetrievalFingerprint
    ) -> str:
        """What a target is configured to be measured by, apart from the project's own keys:
        the probe file, the reader, the target's options and policy, its retrieval layer and
        the sources read. The version of the probe set also follows every new key; this
        changes only with the configuration, so "the same probes as yesterday" can be asked
        of a project that gains facts every day."""
        sources = sorted((name, cfg.kind) for name, cfg in self.settings.sources.items())
        text = json.dumps([probes.file_version, reader, t.fingerprint, retrieval.id, sources])
        return hashlib.sha256(text.encode()).hexdigest()[:12]

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
        log.info("run", **log_fields, **_llm_fields(outcome.get("llm")))


def _budget(t: TargetRuntime) -> LLMBudget | None:
    usage = t.memory.llm_usage() if isinstance(t.memory, LLMCounting) else None
    return usage.budget if usage is not None else None


def _take_stage(
    t: TargetRuntime, stage: StageResult, event: ChangeEvent, held: list[ChangeEvent]
) -> None:
    """The stage of ``event``, the last of a batch whose others (``held``, emptied here) were
    applied unscored: its newest real change (if any) is the batch's."""
    t.stages.add(stage, event)
    changes = [e for e in (*held, event) if not is_sweep(e)]
    t.note_stage(stage, max(changes, key=lambda e: e.timestamp) if changes else event)
    held.clear()


def _llm_fields(block: dict[str, Any] | None) -> dict[str, Any]:
    """A run's LLM and embedding calls for its log line: the totals and the calls by purpose
    (nothing for a run that caused none)."""
    if not block or not block.get("calls"):
        return {}
    return {
        "llm_calls": block["calls"],
        "llm_prompt_tokens": block["prompt_tokens"],
        "llm_completion_tokens": block["completion_tokens"],
        "llm_calls_by_purpose": {p: r["calls"] for p, r in block["by_purpose"].items()},
    }


class _Progress:
    """A long replay's progress: ``pending`` in the view (a gauge) about once a second, and a
    log line with the rate and the time left every ``[logging] progress_interval``."""

    def __init__(self, runner: Views, target: str, run_id: str, total: int) -> None:
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
