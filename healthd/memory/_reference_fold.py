"""Folding in the reference memory: a key's records derived again from its log whenever the
log changes, in event-time order, revisions superseding what they replace and cascades
ending what depends on a removed key; the records written where they differ from the table,
superseded_by links included; and settling, which folds again every key whose cascades read
a key whose removals changed (see :mod:`healthd.memory.reference`)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from healthd.memory._reference_cascade import _Cascades, _no_cut
from healthd.memory._reference_expiry import _Deadlines
from healthd.memory._reference_records import (
    _ALWAYS,
    _NEVER,
    _content,
    _Insert,
    _KeyLog,
    _Record,
)
from healthd.memory._reference_store import (
    _DEPS_SQL,
    _META_SQL,
    _TEXT_SQL,
    _UPDATE_SQL,
    _VALIDATED_SQL,
)
from healthd.memory._validity import Folding, LogOp, Validity, removals
from healthd.model import FactKey


class _Folds(_Cascades, _Deadlines):
    """A key's log folded into its records, and the records written."""

    # A private replay's largest record id, its deferred inserts included: each takes the
    # id SQLite would give it (one past the largest in the table)
    _last_rid: int

    def _settle(self, keys: Iterable[FactKey]) -> None:
        """Re-derive the records of ``keys`` from their logs, then of every key whose cascade
        reads a key whose removals changed, until nothing changes."""
        queue = deque(dict.fromkeys(keys))
        queued = set(queue)
        while queue:
            key = queue.popleft()
            queued.discard(key)
            changed = self._refold(key)
            if changed is not None and self.propagation:
                for dependent in self._dependents(key):
                    self._cache.folds.pop(dependent, None)  # its cascades read this key
                    log = self._log_of(dependent)
                    # nothing their cascades read changed before that instant
                    log.changed_from = min(log.changed_from, changed)
                    if dependent not in queued:
                        queue.append(dependent)
                        queued.add(dependent)

    def _refold(self, key: FactKey) -> float | None:
        """Fold the key's log into records; when the instants at which the key is left with
        no value changed (the keys depending on it must then be folded again), the first
        instant at which they differ.

        When the operations logged since the key's last fold all land after it, only they
        are folded in, and only the records they can change (those held before, those they
        open) are compared and written. Otherwise the log is folded again, and only the
        records from the earliest instant at which the fold may differ (the log's
        ``changed_from``) are compared and written: a record that ended before it is as
        this fold would write it (with a dependency cycle, every record is compared)."""
        log = self._log_of(key)
        fresh, log.fresh = log.fresh, []
        folding = self._cache.folds.pop(key, None)
        if (
            folding is not None
            and fresh
            and self._acyclic
            and folding.multi == log.multi
            and log.fresh_appended
            and folding.resumable(fresh[0])
        ):
            return self._fold_tail(key, log, folding, fresh)
        folding = Folding(multi=log.multi, supersession=self.supersession)
        cascade = self._cascade(frozenset({key})) if self.propagation else _no_cut
        for op in log.ops:
            folding.step(op, cascade)
        folding.close()
        intervals = folding.intervals
        since = log.changed_from if self._acyclic else _ALWAYS
        log.changed_from = _NEVER

        records = self._records_since(key, since)
        existing = dict(records)
        changing = [i for i in intervals if i.end is None or i.end >= since]
        for interval in changing:
            existing.pop(interval.opener.seq, None)
        self._write(key, log, changing, records)
        merged = [record.rid for record in existing.values()]  # openers now re-validating
        if merged:
            live = self._cache.live[key]
            ended = self._cache.ended.get(key, {})
            for seq in existing:
                del records[seq]
                live.pop(seq, None)
                ended.pop(seq, None)
            self._flush()
            marks = ",".join("?" * len(merged))
            self._forget_dependents(key, merged, marks)
            self._db.execute(f"DELETE FROM records_fts WHERE rowid IN ({marks})", merged)
            self._db.execute(f"DELETE FROM record_meta WHERE record_id IN ({marks})", merged)
            self._db.execute(f"DELETE FROM record_deps WHERE record_id IN ({marks})", merged)
            self._db.execute(f"DELETE FROM records WHERE id IN ({marks})", merged)
            self._last_rid = self._max_rid()
        self._cache.deps[key] = {d for i in intervals for d in i.opener.depends_on}
        ends = removals(intervals)
        folding.compact()
        self._cache.folds[key] = folding
        self._touched.add(key)
        return self._store_removals(key, ends)

    def _fold_tail(
        self, key: FactKey, log: _KeyLog, folding: Folding, ops: list[LogOp]
    ) -> float | None:
        held_before = list(folding.held.values())
        was_held = bool(held_before)
        count = len(folding.intervals)
        cascade = self._cascade(frozenset({key})) if self.propagation else _no_cut
        for op in ops:
            folding.step(op, cascade)
        folding.close()
        opened = folding.intervals[count:]
        log.changed_from = _NEVER
        self._write(key, log, [*held_before, *opened], self._records_of(key))
        if opened:
            deps = self._depends_on(key)
            for interval in opened:
                deps.update(interval.opener.depends_on)
        self._cache.folds[key] = folding
        self._touched.add(key)
        if was_held and folding.held:
            folding.compact()
            return None  # covered before and after, in one span: removals unchanged
        ends = folding.removals()
        folding.compact()
        return self._store_removals(key, ends)

    def _write(
        self,
        key: FactKey,
        log: _KeyLog,
        intervals: Sequence[Validity],
        records: dict[int, _Record],
    ) -> None:
        """Insert or update the records of ``intervals`` where they differ from the table
        (``records``: the key's records that may be among them, by opener; not changed)."""
        multi = int(log.multi)
        live = self._cache.live[key]
        ended = self._cache.ended.get(key)
        deferring = self._deferring()
        ending = False
        by_opener: dict[int, _Record] = {}  # the records of ``intervals``
        for interval in intervals:
            opener, validated = interval.opener, interval.validated
            expires_after, purge_after = validated.expiry
            wanted: list[Any] = [
                opener.domain,
                multi,
                validated.at,
                None if expires_after is None else validated.at + expires_after,
                None if purge_after is None else validated.at + purge_after,
                interval.end_state or "active",
                interval.end,
                interval.end_reason,
            ]
            found = records.get(opener.seq)
            if found is None:
                meta, event_id, written = self._origin(key, log, opener.seq)
                record = by_opener[opener.seq] = self._insert(
                    key, opener, wanted, meta, event_id, written
                )
                if wanted[5] == "active":
                    live[opener.seq] = record
                    self._push_deadlines(key, opener.seq, wanted[3], wanted[4])
                else:
                    if ended is None:
                        ended = self._cache.ended[key] = {}
                    ended[opener.seq] = record
                    ending = True
                continue
            by_opener[opener.seq] = found
            if found.columns != wanted:
                pushed = found.columns[3:5] == wanted[3:5] and found.columns[5] == "active"
                # a re-validation moves only the validation and its expiry instants
                whole = found.columns[:2] != wanted[:2] or found.columns[5:] != wanted[5:]
                if deferring:
                    if not self._deferred.inserting(found.rid):  # else inserted as it is then
                        known = self._deferred.records.get(found.rid)
                        whole = whole or (known is not None and known[1])
                        self._deferred.records[found.rid] = (found, whole)
                elif whole:
                    self._db.execute(_UPDATE_SQL, (*wanted, found.rid))
                else:
                    self._db.execute(_VALIDATED_SQL, (*wanted[2:5], found.rid))
                found.columns = wanted
                if wanted[5] == "active":
                    live[opener.seq] = found
                    if ended:
                        ended.pop(opener.seq, None)
                    if not pushed:  # after the record holds them: a compaction checks against it
                        self._push_deadlines(key, opener.seq, wanted[3], wanted[4])
                else:
                    live.pop(opener.seq, None)
                    if ended is None:
                        ended = self._cache.ended[key] = {}
                    ended[opener.seq] = found
                    ending = True
                    found._served = None  # an ended record is not served as active again
        if ending:
            self._trim_ended(key)
        for interval in intervals:
            if interval.superseded_by is not None:
                record = by_opener[interval.opener.seq]
                replacement = by_opener[interval.superseded_by].rid
                if record.superseded_by != replacement:
                    record.superseded_by = replacement
                    if not deferring:
                        self._db.execute(
                            "UPDATE records SET superseded_by = ? WHERE id = ?",
                            (replacement, record.rid),
                        )
                    elif not self._deferred.inserting(record.rid):  # else inserted with it
                        self._deferred.links[record.rid] = record

    def _insert(
        self,
        key: FactKey,
        opener: LogOp,
        wanted: list[Any],
        meta: str,
        event_id: str,
        written: float,
    ) -> _Record:
        if self._deferring():
            rid = self._last_rid = self._last_rid + 1
            record = _Record(rid, wanted, None, opener.value, written)
            deferred = self._deferred
            if not deferred.inserts:
                deferred.inserted_after = rid - 1
            deferred.inserts.append(_Insert(record, self.namespace, key, opener.seq, event_id))
        else:
            cur = self._db.execute(
                "INSERT INTO records (namespace, subject, predicate, value, domain, multi,"
                " created_at, updated_at, expires_at, purge_at, state, ended_at, end_reason,"
                " event_id, opened_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    self.namespace,
                    key.subject,
                    key.predicate,
                    opener.value,
                    *wanted[:2],
                    written,
                    *wanted[2:],
                    event_id,
                    opener.seq,
                ),
            )
            row_id = cur.lastrowid
            assert row_id is not None
            rid = row_id
            record = _Record(rid, wanted, None, opener.value, written)
        if not self._private or rid <= self._text_indexed:  # a rolled-back id used again
            text = (rid, _content(key.subject, key.predicate, opener.value))
            if self._deferring():
                self._deferred.text.append(text)
            else:
                self._db.execute(_TEXT_SQL, text)
        if opener.depends_on:
            known = self._depends_on(key)
            if any(
                d not in known
                and (d == key or (self._is_depended_on(key) and key in self._reachable(d)))
                for d in opener.depends_on
            ):
                self._acyclic = False  # a new cycle: earlier cascades may read differently
            if self._depended is not None:
                self._depended.update(opener.depends_on)
            cache = self._cache
            for dep in opener.depends_on:
                if cache.holds_dependents(dep):  # else read with this row when asked for
                    counts = cache.dependents.setdefault(dep, {})
                    counts[key] = counts.get(key, 0) + 1
            deps = [(rid, self.namespace, d.subject, d.predicate) for d in opener.depends_on]
            if self._deferring():
                self._deferred.deps.extend(deps)
            else:
                self._db.executemany(_DEPS_SQL, deps)
        metadata: dict[str, str] = json.loads(meta) if meta != "{}" else {}
        if metadata:
            rows = [(rid, _bindable(k), _bindable(v)) for k, v in metadata.items()]
            if self._deferring():
                self._deferred.meta.extend(rows)
            else:
                self._db.executemany(_META_SQL, rows)
        return record


def _bindable(text: str) -> str:
    """``text`` as SQLite can store it: a lone surrogate (a git path that is not UTF-8,
    decoded with ``surrogateescape``) becomes ``?``."""
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")
