"""The pull of every source in a run: new events, merged by event time, each checked against
what its source delivered before; each source's row, skipped inputs and failures."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from opentelemetry.trace import Status, StatusCode

from healthd.daemon.state import RunRecord, SourceRow, StateError
from healthd.daemon.views import Views
from healthd.logging import get_logger, redact_text
from healthd.model import ChangeEvent
from healthd.people import Person
from healthd.sources import PullResult, describe_event, differs_from
from healthd.sources._merge import merge_timelines
from healthd.timeline import admitted, dumps_event, event_from_dict

log = get_logger("healthd.runner")

#: Skipped inputs remembered per source, so each is reported once.
MAX_SKIPS_REMEMBERED = 10_000


class Pulling(Views):
    """The pulling part of a :class:`~healthd.daemon.runner.Runner`."""

    skips_seen: dict[str, dict[str, None]]
    # what each source was last said to wait for (a line with no end yet), said once
    waits_said: dict[str, str]
    _unpersisted: list[tuple[str, ChangeEvent]]
    # identity records the sources gave in this run, not yet in the state file
    _unpersisted_people: dict[str, list[Person]]

    def _pull(
        self, run_id: str, record: RunRecord, only: set[str] | None = None
    ) -> tuple[list[tuple[str, ChangeEvent]], set[str]]:
        """New events from every source (or those in ``only``), merged, each with the name
        of its source; and the sources that stopped at a bound with more to read. When the
        state file cannot be read to look new events up (StateError), every source is left
        where it was: the events pulled before are pulled again by the next run."""
        before = {s.name: s.row for s in self.sources.values()}
        try:
            return self._pull_sources(run_id, record, only)
        except StateError:
            with self._changing():
                for s in self.sources.values():
                    s.row = before[s.name]
            raise

    def _pull_sources(
        self, run_id: str, record: RunRecord, only: set[str] | None
    ) -> tuple[list[tuple[str, ChangeEvent]], set[str]]:
        per_source: list[list[ChangeEvent]] = []
        source_of: dict[int, str] = {}
        given: dict[str, tuple[str, ChangeEvent]] = {}  # this pull's events, by id
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
                timely = admitted(result.events, result.skipped, not_after)
                fresh = self._unseen(s.name, timely, result)
                fresh = self._not_given_elsewhere(s.name, fresh, result, given)
                given.update((e.id, (s.name, e)) for e in fresh)
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
                self._report_wait(run_id, s.name, None if result.error else result.unfinished)
                if result.people is not None and not result.error:
                    self._unpersisted_people[s.name] = result.people
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

    def _report_wait(self, run_id: str, source: str, unfinished: str | None) -> None:
        """Say once what the source waits for before it reads on (a file's last line with no
        end of line, which may be being written, or may never end): never silent."""
        if unfinished is None:
            self.waits_said.pop(source, None)
        elif self.waits_said.get(source) != unfinished:
            self.waits_said[source] = unfinished
            log.warning(
                "source waiting for a line", run_id=run_id, source=source, reason=unfinished
            )

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

    def _not_given_elsewhere(
        self,
        source: str,
        events: list[ChangeEvent],
        result: PullResult,
        given: dict[str, tuple[str, ChangeEvent]],
    ) -> list[ChangeEvent]:
        """The events whose id no other source gave first (stored, or in this pull). Ids are
        the sources' own, and a memory applies an event once per id: the later of two
        sources' events under one id would be lost there without a word. The same event is
        taken once; one with other content is not taken and is reported, naming both
        sources (as `healthd timeline --config` does)."""
        if not events:
            return events
        ids = {e.id for e in events}
        stored = self.state.stored_elsewhere(source, ids)
        for name, event in self._unpersisted:  # (a failed write's: each serialised if asked)
            if name != source and event.id in ids and event.id not in stored:
                stored[event.id] = (name, dumps_event(event))
        kept: list[ChangeEvent] = []
        for event in events:
            other = given.get(event.id)
            before = (other[0], dumps_event(other[1])) if other is not None else None
            before = before or stored.get(event.id)
            if before is None:
                kept.append(event)
                continue
            if before[1] == dumps_event(event):
                continue
            first = event_from_dict(json.loads(before[1]))
            differs = differs_from(first, event)
            if not differs:  # (the same event, each source's name on it)
                continue
            place = (result.places or {}).get(event.id, f"source {source!r}")
            result.skipped.append(
                f"{place}: event id {event.id!r} was given first by source {before[0]!r} "
                f"with other content ({differs}): {describe_event(first)} there, "
                f"{describe_event(event)} here; not taken"
            )
        return kept

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
