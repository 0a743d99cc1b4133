"""Retrieval from the reference memory: a probe's answer (its key's records, ranked live
before soft-expired, newest first), a search over every record (metadata pre-filters, then
full-text relevance), and the keys whose answers changed since last asked (see
:mod:`healthd.memory.reference`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from healthd.errors import MemoryAdapterError
from healthd.memory._reference_expiry import _Deadlines
from healthd.memory._reference_records import _FLAGS, _content, _dt, _Record, _ts
from healthd.memory._reference_store import _TEXT_SQL
from healthd.model import Answer, FactKey, Probe, RetrievedFact

FilterOp = Literal["equals", "contains", "before", "after"]
_COLUMNS = {"subject", "predicate", "value", "domain"}
_TIME_COLUMNS = {"created_at": "created_at", "updated_at": "updated_at"}


@dataclass(frozen=True)
class MetadataFilter:
    """A pre-filter applied before ranking: ``field`` is a record column (subject, predicate,
    value, domain), a time (created_at, updated_at) or any event metadata key."""

    field: str
    op: FilterOp
    value: str | datetime


_TOKEN = re.compile(r"\w+", re.UNICODE)


class _Query(_Deadlines):
    """Answers, searches and the keys changed since last asked."""

    top_k: int
    _asked_until: float | None  # the latest instant changed_keys was asked at
    _asked_at: tuple[datetime | None, float]  # the instant probes were last asked at

    def answer(self, probe: Probe, at: datetime) -> Answer:
        # A probe names its key, so the pre-filter leaves only that key's records, ranked
        # live before soft-expired, newest first. Text relevance is not used here: bm25
        # weighs terms by statistics over the whole store, so unrelated writes could reorder
        # a key's records, which no change to the key would explain.
        self._refuse_if_failed()
        return Answer(probe.id, tuple(self._key_records(probe.key, at, self.top_k)))

    def changed_keys(self, at: datetime) -> set[FactKey]:
        self._refuse_if_failed()
        until = _ts(at)
        changed = self._touched
        self._touched = set()
        since = self._asked_until
        if since is not None and until > since:
            self._expired(since, until, changed)
        if self._asked_until is None or until > self._asked_until:
            self._asked_until = until
        return changed

    def search(
        self,
        query: str,
        *,
        at: datetime,
        k: int = 5,
        filters: Sequence[MetadataFilter] = (),
        history: bool = False,
    ) -> list[RetrievedFact]:
        """Rank the records that pass every filter by full-text relevance to ``query``.

        Filters run before ranking. Live records come first, soft-expired ones after them;
        with ``history`` ended and purged records are returned too, flagged ``historical``.
        """
        self._refuse_if_failed()
        now = _ts(at)
        self._flush()
        if self._private:
            self._index_text()
        where = ["r.namespace = ?"]
        params: list[Any] = [self.namespace]
        for flt in filters:
            clause, values = self._filter_sql(flt)
            where.append(clause)
            params.extend(values)
        if not history:
            where.append("r.state = 'active' AND (r.purge_at IS NULL OR r.purge_at > ?)")
            params.append(now)
        # bm25 reads every matching row to weigh the terms, so rank only when there is a
        # choice to make: filters narrow to candidates first, full-text ranking orders them.
        rows = self._db.execute(
            "SELECT r.id, r.subject, r.predicate, r.value, r.domain, r.created_at, r.updated_at,"
            f" r.expires_at, r.purge_at, r.state FROM records r WHERE {' AND '.join(where)}",
            params,
        ).fetchall()
        terms = " OR ".join(f'"{t}"' for t in dict.fromkeys(_TOKEN.findall(query.lower())))
        scores: dict[int, float] = {}
        if terms and len(rows) > 1:
            ids = ",".join(str(r[0]) for r in rows)
            scores = dict(
                self._db.execute(
                    "SELECT rowid, bm25(records_fts) FROM records_fts WHERE records_fts MATCH ? "
                    f"AND rowid IN ({ids})",
                    (terms,),
                )
            )
        return _ranked(rows, scores, now, k)

    def _index_text(self) -> None:
        """Bring the full-text index up to the records table. A private database fills it
        only when a search reads it: a probe's answer never does (see :meth:`answer`)."""
        with self._tx():
            rows = self._db.execute(
                "SELECT id, subject, predicate, value FROM records WHERE id > ? ORDER BY id",
                (self._text_indexed,),
            ).fetchall()
            self._db.executemany(
                _TEXT_SQL,
                [(rid, _content(s, p, v)) for rid, s, p, v in rows],
            )
        if rows:
            self._text_indexed = rows[-1][0]

    _KEY_SQL = (
        "SELECT r.id, r.subject, r.predicate, r.value, r.domain, r.created_at, r.updated_at,"
        " r.expires_at, r.purge_at, r.state FROM records r WHERE r.namespace = ? AND"
        " r.subject = ? AND r.predicate = ? AND r.state = 'active' AND"
        " (r.purge_at IS NULL OR r.purge_at > ?)"
    )

    def _key_records(self, key: FactKey, at: datetime, k: int) -> list[RetrievedFact]:
        """``search("", filters=[subject equals, predicate equals])``, without building
        the filters for each probe: a probe names its key."""
        if at is not self._asked_at[0]:  # a stage asks its probes at one instant
            self._asked_at = (at, _ts(at))
        now = self._asked_at[1]
        records = self._cache.live.get(key)
        if records is None:
            self._flush()
            rows = self._db.execute(
                self._KEY_SQL, (self.namespace, key.subject, key.predicate, now)
            ).fetchall()
            return _ranked(rows, {}, now, k)
        # The key's active records as the cache holds them, in step with the table: the rows
        # the query above would read, without the query, ranked as _ranked ranks them.
        if len(records) == 1 and k > 0:  # most keys: one value held, nothing to rank
            (record,) = records.values()
            _, _, _, expires, purge = record.columns[:5]
            if purge is not None and purge <= now:
                return []
            return [record.served(key, expires is not None and expires <= now)]
        ranked = []
        for record in records.values():
            _, _, updated, expires, purge = record.columns[:5]
            if purge is None or purge > now:
                soft = expires is not None and expires <= now
                ranked.append((soft, -updated, -record.rid, record))
        ranked.sort(key=_rank_key)
        return [record.served(key, soft) for soft, _, _, record in ranked[:k]]

    def _filter_sql(self, flt: MetadataFilter) -> tuple[str, list[Any]]:
        if flt.op in ("before", "after"):
            column = _TIME_COLUMNS.get(flt.field)
            if column is None or not isinstance(flt.value, datetime):
                raise MemoryAdapterError(
                    f"filter {flt.field} {flt.op}: before/after take "
                    "created_at or updated_at and a datetime"
                )
            return f"r.{column} {'<' if flt.op == 'before' else '>'} ?", [_ts(flt.value)]
        value = str(flt.value)
        if flt.field in _COLUMNS:
            if flt.op == "equals":
                return f"r.{flt.field} = ?", [value]
            return f"instr(r.{flt.field}, ?) > 0", [value]
        if flt.op == "equals":
            return (
                "EXISTS (SELECT 1 FROM record_meta m WHERE m.record_id = r.id AND "
                "m.key = ? AND m.value = ?)"
            ), [flt.field, value]
        return (
            "EXISTS (SELECT 1 FROM record_meta m WHERE m.record_id = r.id AND "
            "m.key = ? AND instr(m.value, ?) > 0)"
        ), [flt.field, value]


def _rank_key(entry: tuple[bool, float, int, _Record]) -> tuple[bool, float, int]:
    return entry[0], entry[1], entry[2]


def _ranked(
    rows: list[Any], scores: Mapping[int, float], now: float, k: int
) -> list[RetrievedFact]:
    """Live before soft-expired, then by relevance, newest validation, newest record."""
    rows.sort(key=lambda r: (r[7] is not None and r[7] <= now, scores.get(r[0], 0.0), -r[6], -r[0]))
    del rows[k:]
    out = []
    for rid, subject, predicate, value, domain, created, updated, expires, purge, state in rows:
        soft = expires is not None and expires <= now
        historical = state != "active" or (purge is not None and purge <= now)
        out.append(
            RetrievedFact(
                subject,
                predicate,
                value,
                domain,
                f"ref-{rid}",
                _dt(created),
                _dt(updated),
                _FLAGS[soft, historical],
            )
        )
    return out
