"""The `agentcore` memory: Amazon Bedrock AgentCore Memory, through boto3's data-plane client.

Over 800 lines because :class:`AgentCoreMemory` (some 680 of them) is one stateful adapter:
its held writes, its index of the records it wrote, the expiry heap, the dependents an ended
key cascades to and the memory's preflight all read and change the same state. What holds no
state lives apart already (:mod:`healthd.memory._agentcore_records`: the encoding;
:mod:`healthd.memory._agentcore_client`: the call through boto3).

Each fact is one memory record in its key's namespace, ``<namespace_prefix>/<subject>/
<predicate>`` (characters the service's namespace pattern refuses are replaced and the
component is suffixed with a short hash). Its metadata carries the fact's subject,
predicate, domain and id, the event id, and the replayed write and validation times as
NUMBERs, so replayed time (not the service's ingestion ``createdAt``) is what filters see.
A probe is answered by ``RetrieveMemoryRecords`` on the key's namespace with the probe's
question as ``searchQuery`` and EQUALS_TO filters on subject and predicate, following
``nextToken``.

Two modes, because the difference is a finding:

* ``native`` adds a record for every assertion and removes nothing, as an agent that never
  deletes would behave;
* ``managed`` keeps one record per fact: a revision or an invalidation deletes the records it
  ends (``BatchDeleteMemoryRecords``), re-validation updates the record's validation time
  (``BatchUpdateMemoryRecords``), an ended key's dependents are deleted too, and a backdated
  event never overrides a newer one.

Writes are held and sent up to 100 records a call (``MAX_BATCH``), at the latest before the
next read; a record changed or deleted before it was sent is sent once as it ended, or not
at all. Before its first write or read the adapter reads the memory (control plane
``GetMemory``): the keys healthd filters on must be indexed (declaring them is the team's
call: indexed keys are permanent), a ``strategy_id`` must be one of the memory's strategies,
and a preflight record written with it must come back with healthd's metadata (a strategy
keeps only its schema's keys). A wait (``consistency_wait_seconds``) lasts until an answer
holds each record healthd wrote for the key with the validation time it wrote last.

healthd writes only under ``namespace_prefix``, which must be declared ``shadow``; ``reset``
lists the prefix and deletes only records whose namespace is the prefix or lies under it
(``namespacePath`` is a string-prefix match, so ``shadow`` would also find ``shadow2``).
Credentials come only from the standard AWS chain and are resolved on the first call, so a
missing one fails a run, not the configuration. Throttling and 5xx are retried by botocore's
standard retry mode, bounded by ``max_attempts``; records a batch reports in
``failedRecords`` are retried the same number of times and then reported, never dropped.

A record's expiry (``record_expiry_days``) is fixed by the service when it is written:
changing the setting touches only records written afterwards. The adapter says so when it
finds records in its shadow written with another expiry.
"""

from __future__ import annotations

import heapq
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from healthd import __version__
from healthd._http import check_http_url
from healthd.errors import (
    MemoryAdapterError,
    ShadowViolation,
    TargetError,
    first_problem,
    quote,
)
from healthd.logging import get_logger
from healthd.memory import Memory, register_memory
from healthd.memory import _agentcore_client as agentcore_client
from healthd.memory._agentcore_records import (
    EXPIRY_KEY,
    FILTER_KEYS,
    MAX_TEXT,
    PREDICATE_KEY,
    SUBJECT_KEY,
    VALIDATED_KEY,
    component,
    content,
    encode,
    equals,
    namespace_of,
    number_value,
    record_metadata,
    to_fact,
    under,
)
from healthd.model import Answer, ChangeEvent, Fact, FactKey, Probe, RetrievedFact

log = get_logger("healthd.memory.agentcore")

#: The first botocore whose ``bedrock-agentcore`` model has ``recordExpirySpecification``.
MIN_BOTOCORE = "1.43.112"
SERVICE = "bedrock-agentcore"
CONTROL_SERVICE = "bedrock-agentcore-control"
MAX_INDEXED_KEYS = 10
PREFLIGHT = "healthd-preflight"  # the preflight record's namespace component, under the prefix
MAX_BATCH = 100
MAX_FILTERS = 5
MAX_TOP_K = 100


_NAMESPACE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9\-_/]*")
_MEMORY_ID = re.compile(
    r"(arn:(aws|aws-cn|aws-us-gov):bedrock-agentcore:[a-z0-9-]+:[0-9]{12}:memory/)?"
    r"[a-zA-Z][a-zA-Z0-9\-_]{0,99}-[a-zA-Z0-9]{10}"
)


class AgentCoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    memory_id: str = Field(min_length=12)
    namespace_prefix: str = Field(min_length=1, max_length=512)
    shadow: bool = False
    mode: Literal["native", "managed"] = "native"
    region: str | None = None
    endpoint_url: str | None = None
    strategy_id: str | None = Field(None, pattern=r"^[a-zA-Z0-9][a-zA-Z0-9\-_]*$", max_length=100)
    record_expiry_days: int | None = Field(None, ge=31, le=36500)
    top_k: int = Field(20, ge=1, le=MAX_TOP_K)
    consistency_wait_seconds: float = Field(0.0, ge=0, le=300)
    # events written before the memory is read again: one wait, one stage per batch
    batch_events: int = Field(1, ge=1, le=10_000)
    max_attempts: int = Field(4, ge=1, le=10)
    timeout_seconds: float = Field(10.0, gt=0, le=300)

    @field_validator("memory_id")
    @classmethod
    def _memory_id(cls, value: str) -> str:
        if not _MEMORY_ID.fullmatch(value):
            raise ValueError(
                "not an AgentCore memory id (name-XXXXXXXXXX, or its ARN), e.g. healthd_shadow-a1b2c3d4e5"
            )
        return value

    @field_validator("namespace_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        value = value.rstrip("/")
        if not _NAMESPACE.fullmatch(value):
            raise ValueError(
                "must be letters, digits, '-', '_' and '/' (the service's namespace pattern), "
                "e.g. healthd/shadow"
            )
        return value

    @field_validator("endpoint_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else check_http_url(value, "http://127.0.0.1:8765")


@dataclass
class _Record:
    id: str  # the request identifier until the service has created it
    value: str
    domain: str
    validated_at: float
    written_at: float
    expires_wall: float | None = None  # the service's wall-clock expiry of the record


@dataclass
class _Write:
    key: FactKey
    record: _Record
    item: dict[str, Any]
    what: str


@dataclass
class _Pending:
    """Writes not sent yet, at most one per record: a later change to the same record is
    folded into it, so each kind goes out in batches of up to 100 records a call."""

    creates: dict[str, _Write] = field(default_factory=dict)  # by request identifier
    updates: dict[str, _Write] = field(default_factory=dict)  # by record id
    deletes: dict[str, _Write] = field(default_factory=dict)  # by record id

    def clear(self) -> None:
        self.creates.clear()
        self.updates.clear()
        self.deletes.clear()


class AgentCoreMemory:
    kind = "agentcore"

    def __init__(
        self,
        options: AgentCoreOptions,
        *,
        session: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not options.shadow:
            raise ShadowViolation(
                f"namespace prefix {options.namespace_prefix!r} is not declared shadow; healthd "
                "writes only under a prefix it owns (set shadow = true)"
            )
        self.options = options
        self.upper_bound = "healthd writes one record per fact, not the memory's strategies" + (
            ", and decides which records are updated and deleted"
            if options.mode == "managed"
            else ""
        )
        self.batch_events = options.batch_events
        self.prefix = options.namespace_prefix
        self._session = session
        self._sleep = sleep
        self._monotonic = monotonic
        self._wall = wall_clock
        self._client_obj: Any = None
        self._region: str | None = None
        self._index: dict[FactKey, dict[str, _Record]] = {}
        self._multi: set[FactKey] = set()
        self._dependents: dict[FactKey, set[FactKey]] = {}
        self._touched: set[FactKey] = set()
        self._expiring: list[tuple[float, FactKey, str]] = []
        self._clock: float | None = None
        self._sequence = 0
        self._expiry_checked = False
        self._knows_contents = False  # until a reset, records may predate this instance
        self._pending = _Pending()
        self._memory_checked = False
        self._control_obj: Any = None
        self.expiry_populations: Counter[int | None] = Counter()
        self.unsettled_reads = 0

    # -- Memory protocol ------------------------------------------------------------------

    def reset(self) -> None:
        self._check_memory()
        self._pending.clear()  # never sent: nothing to undo
        mine = [s for s in self._list_prefix() if under(s, self.prefix)]
        self._delete([(s["memoryRecordId"], namespace_of(s)) for s in mine], "reset")
        self._index.clear()
        self._multi.clear()
        self._dependents.clear()
        self._touched.clear()
        self._expiring.clear()
        self._clock = None
        self._expiry_checked = True  # a wiped shadow holds no earlier expiry
        self._knows_contents = True
        self.expiry_populations = Counter()
        if mine and self.options.consistency_wait_seconds > 0:
            gone = {s["memoryRecordId"] for s in mine}
            self._settle(
                lambda: not any(s["memoryRecordId"] in gone for s in self._list_prefix()),
                "reset",
            )

    def apply(self, event: ChangeEvent) -> None:
        at = event.timestamp.timestamp()
        self._clock = at if self._clock is None else max(self._clock, at)
        self._check_memory()
        if not self._expiry_checked:
            self._check_expiry_populations()
        what = f"apply {event.id}"
        if self.options.mode == "native":
            if event.type != "invalidated":
                self._create(event.fact, at, event.id, what)
            return
        key = event.fact.key
        multi = event.multi_valued or key in self._multi
        if multi:
            self._multi.add(key)
        for dependency in event.depends_on:
            self._dependents.setdefault(dependency, set()).add(key)
        if event.type in ("added", "revalidated"):
            self._assert(event.fact, at, multi, event.id, what)
        elif event.type == "revised":
            previous = event.previous
            assert previous is not None
            if previous.key != key or multi:
                self._end(previous, at, what)
            self._assert(event.fact, at, multi, event.id, what)
        else:
            self._end(event.fact, at, what)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        self._check_memory()
        self.flush()
        key = probe.key
        now = self._wall()
        # each record healthd wrote for the key, with the validation time it wrote last:
        # an answer still showing an earlier version is not settled either
        expected = {
            rid: r.validated_at
            for rid, r in self._index.get(key, {}).items()
            if (r.expires_wall is None or r.expires_wall > now) and r.validated_at <= at.timestamp()
        }
        want = min(len(expected), self.options.top_k)
        summaries = self._retrieve(probe, at)
        if self.options.consistency_wait_seconds > 0 and self._knows_contents:

            def settled() -> bool:
                versions = {
                    (s["memoryRecordId"], number_value(s, VALIDATED_KEY)) for s in summaries
                }
                return len(versions) == want and versions <= expected.items()

            if not settled():
                deadline = self._monotonic() + self.options.consistency_wait_seconds
                delay = 0.02
                while not settled() and self._monotonic() < deadline:
                    self._sleep(delay)
                    delay = min(delay * 2, 1.0)
                    summaries = self._retrieve(probe, at)
                if not settled():
                    self.unsettled_reads += 1
                    log.warning(
                        "agentcore read not settled",
                        probe=probe.id,
                        waited_seconds=self.options.consistency_wait_seconds,
                    )
        facts = [self._decode(summary, key, probe) for summary in summaries]
        facts.sort(key=lambda f: (-f.last_validated.timestamp(), f.record_id))
        return Answer(probe.id, tuple(facts))

    def changed_keys(self, at: datetime) -> set[FactKey]:
        """Keys written since the last call, plus keys whose records' service-side expiry
        (wall-clock time) has passed since."""
        changed, self._touched = self._touched, set()
        now = self._wall()
        while self._expiring and self._expiring[0][0] <= now:
            _, key, record_id = heapq.heappop(self._expiring)
            record = self._index.get(key, {}).get(record_id)
            if (
                record is not None
                and record.expires_wall is not None
                and record.expires_wall <= now
            ):
                del self._index[key][record_id]  # gone on the service: expect it no more
                changed.add(key)
        return changed

    def flush(self) -> None:
        """Send the writes not sent yet, in batches of up to 100 records a call. Reads do
        this first, so an answer always reflects every event applied."""
        pending = self._pending
        for kind, operation in (
            (pending.deletes, "batch_delete_memory_records"),
            (pending.updates, "batch_update_memory_records"),
        ):
            while kind:
                chunk = [kind.pop(rid) for rid in list(kind)[:MAX_BATCH]]
                updating = operation == "batch_update_memory_records"
                self._batch(
                    operation,
                    [w.item for w in chunk],
                    {w.record.id: w.what for w in chunk},
                    missing_ok=not updating,
                )
                if updating:
                    for write in chunk:
                        self._stamp_on_update(write.key, write.record)
        while pending.creates:
            chunk = [pending.creates.pop(rid) for rid in list(pending.creates)[:MAX_BATCH]]
            self._create_batch(chunk)

    def close(self) -> None:
        try:
            if self._client_obj is not None:
                self.flush()
        except MemoryAdapterError as exc:  # the run has ended: say what was not sent
            log.warning("agentcore writes not sent at close", error=str(exc))
        finally:
            for client in (self._client_obj, self._control_obj):
                if client is not None:
                    client.close()
            self._client_obj = self._control_obj = None

    # -- expiry -----------------------------------------------------------------------------

    def expiry_report(self) -> Counter[int | None]:
        """Records under the prefix by the expiry (days) they were written with; None for
        records written without one."""
        self.flush()
        populations: Counter[int | None] = Counter()
        for summary in self._list_prefix():
            if under(summary, self.prefix):
                days = number_value(summary, EXPIRY_KEY)
                populations[None if days is None else int(days)] += 1
        return populations

    def _check_expiry_populations(self) -> None:
        self._expiry_checked = True
        self.expiry_populations = self.expiry_report()
        configured = self.options.record_expiry_days
        other = {d: n for d, n in self.expiry_populations.items() if d != configured}
        if other:
            log.warning(
                "agentcore record expiry changed",
                namespace_prefix=self.prefix,
                record_expiry_days=configured,
                earlier_records={("none" if d is None else f"{d}d"): n for d, n in other.items()},
                note="records keep the expiry they were written with; the new setting applies "
                "only to records written from now on",
            )

    # -- managed mode -----------------------------------------------------------------------

    def _assert(self, fact: Fact, at: float, multi: bool, event_id: str, what: str) -> None:
        records = self._index.get(fact.key, {})
        if not multi and any(
            r.value != fact.value and r.validated_at > at for r in records.values()
        ):
            return  # a backdated event: a newer value is already known
        same = [r for r in records.values() if r.value == fact.value]
        if same:
            record = same[0]
            if at > record.validated_at:
                self._update(fact, record, at, event_id, what)
        else:
            self._create(fact, at, event_id, what)
        if not multi:
            ended = [r for r in records.values() if r.value != fact.value and r.validated_at <= at]
            self._delete_records(fact.key, ended, what)

    def _end(self, fact: Fact, at: float, what: str) -> None:
        records = self._index.get(fact.key, {})
        ended = [r for r in records.values() if r.value == fact.value and r.validated_at <= at]
        if not ended:
            return
        self._delete_records(fact.key, ended, what)
        if not self._index.get(fact.key):
            self._cascade(fact.key, at, what, {fact.key})

    def _cascade(self, key: FactKey, at: float, what: str, seen: set[FactKey]) -> None:
        for dependent in sorted(self._dependents.get(key, ())):
            if dependent in seen:
                continue
            seen.add(dependent)
            records = self._index.get(dependent, {})
            ended = [r for r in records.values() if r.validated_at < at]
            if ended:
                self._delete_records(dependent, ended, what)
                if not self._index.get(dependent):
                    self._cascade(dependent, at, what, seen)

    # -- service calls ----------------------------------------------------------------------

    def _create(self, fact: Fact, at: float, event_id: str, what: str) -> None:
        written = self._clock if self._clock is not None else at
        self._sequence += 1
        request_id = f"{component(event_id)[:60]}-{self._sequence}"
        record = _Record(request_id, fact.value, fact.domain, at, written)
        item: dict[str, Any] = {
            "requestIdentifier": request_id,
            "namespaces": [self._namespace(fact.key)],
            "content": {"text": self._text(fact, what)},
            "timestamp": datetime.fromtimestamp(at, tz=UTC),
            "metadata": self._metadata(fact, event_id, at, written, what),
        }
        if self.options.strategy_id:
            item["memoryStrategyId"] = self.options.strategy_id
        self._index.setdefault(fact.key, {})[request_id] = record
        self._touched.add(fact.key)
        self._pending.creates[request_id] = _Write(fact.key, record, item, what)
        if len(self._pending.creates) >= MAX_BATCH:
            self.flush()

    def _create_batch(self, writes: list[_Write]) -> None:
        """Create ``writes`` in one call; records in ``failedRecords`` are sent again, a
        bounded number of times, then reported (matched by request identifier)."""
        extra: dict[str, Any] = {}
        if self.options.record_expiry_days is not None:
            extra["recordExpirySpecification"] = {
                "recordExpiryDurationDays": self.options.record_expiry_days
            }
        pending = {w.item["requestIdentifier"]: w for w in writes}
        for attempt in range(1, self.options.max_attempts + 1):
            response = self._call(
                "batch_create_memory_records",
                next(iter(pending.values())).what,
                memoryId=self.options.memory_id,
                records=[w.item for w in pending.values()],
                **extra,
            )
            for done in response.get("successfulRecords", []):
                write = pending.pop(done.get("requestIdentifier"), None)
                if write is not None:
                    self._created(write, done["memoryRecordId"])
            if not pending:
                return
            failures = {f.get("requestIdentifier"): f for f in response.get("failedRecords", [])}
            for request_id, write in pending.items():
                failure = failures.get(request_id)
                if failure is None:
                    raise MemoryAdapterError(
                        f"agentcore memory: {write.what}: the service answered neither "
                        f"success nor failure for record {request_id}"
                    )
                if attempt == self.options.max_attempts:
                    raise MemoryAdapterError(
                        f"agentcore memory: {write.what}: the service failed record "
                        f"{request_id} {attempt} times (failedRecords: "
                        f"{failure.get('errorCode')} {failure.get('errorMessage', '')})"
                    )
            self._sleep(0.05 * 2 ** (attempt - 1))

    def _created(self, write: _Write, record_id: str) -> None:
        records = self._index.get(write.key, {})
        if records.get(write.record.id) is write.record:
            del records[write.record.id]
        write.record.id = record_id
        records[record_id] = write.record
        self._index[write.key] = records
        if self.options.record_expiry_days is not None:
            self._stamp_expiry(write.key, write.record, self.options.record_expiry_days)

    def _update(self, fact: Fact, record: _Record, at: float, event_id: str, what: str) -> None:
        text = self._text(fact, what)
        metadata = self._metadata(fact, event_id, at, record.written_at, what)
        timestamp = datetime.fromtimestamp(at, tz=UTC)
        record.validated_at = at
        self._touched.add(fact.key)
        create = self._pending.creates.get(record.id)
        if create is not None:  # not sent yet: send it as it is now
            create.item.update(content={"text": text}, metadata=metadata, timestamp=timestamp)
            return
        namespace = self._namespace(fact.key)
        item: dict[str, Any] = {
            "memoryRecordId": record.id,
            "timestamp": timestamp,
            "content": {"text": text},
            "namespaces": [namespace],
            "sourceNamespaces": [namespace],  # what IAM namespace conditions are checked on
            "metadata": metadata,
        }
        if self.options.strategy_id:
            item["memoryStrategyId"] = self.options.strategy_id
        self._pending.updates[record.id] = _Write(fact.key, record, item, what)
        if len(self._pending.updates) >= MAX_BATCH:
            self.flush()

    def _stamp_on_update(self, key: FactKey, record: _Record) -> None:
        if record.expires_wall is not None and self.options.record_expiry_days is not None:
            # an update without an expiry specification re-applies the record's last one
            self._stamp_expiry(key, record, self.options.record_expiry_days)

    def _delete_records(self, key: FactKey, records: Sequence[_Record], what: str) -> None:
        if not records:
            return
        namespace = self._namespace(key)
        index = self._index.get(key, {})
        for record in records:
            index.pop(record.id, None)
            if self._pending.creates.pop(record.id, None) is not None:
                continue  # never sent: nothing to delete
            self._pending.updates.pop(record.id, None)
            item = {"memoryRecordId": record.id, "namespace": namespace}
            self._pending.deletes[record.id] = _Write(key, record, item, what)
        self._touched.add(key)
        if len(self._pending.deletes) >= MAX_BATCH:
            self.flush()

    def _delete(self, records: Sequence[tuple[str, str]], what: str) -> None:
        items = [{"memoryRecordId": rid, "namespace": ns} for rid, ns in records]
        for start in range(0, len(items), MAX_BATCH):
            self._batch(
                "batch_delete_memory_records",
                items[start : start + MAX_BATCH],
                {},
                missing_ok=True,
                what=what,
            )

    def _batch(
        self,
        operation: str,
        items: list[dict[str, Any]],
        whats: Mapping[str, str],
        *,
        missing_ok: bool,
        what: str = "",
    ) -> None:
        """One batch call; records in ``failedRecords`` are sent again, a bounded number of
        times, then reported with what wrote them (``whats`` by record id, else ``what``).
        A delete of a record that is already gone is done."""
        pending = items
        for attempt in range(1, self.options.max_attempts + 1):
            first_id = pending[0]["memoryRecordId"]
            response = self._call(
                operation,
                whats.get(first_id, what),
                memoryId=self.options.memory_id,
                records=pending,
            )
            failed = [
                f
                for f in response.get("failedRecords", [])
                if not (missing_ok and f.get("errorCode") == 404)
            ]
            if not failed:
                return
            retry = {f.get("memoryRecordId") for f in failed}
            pending = [item for item in pending if item["memoryRecordId"] in retry]
            if attempt == self.options.max_attempts or not pending:
                first = failed[0]
                rid = first.get("memoryRecordId")
                raise MemoryAdapterError(
                    f"agentcore memory: {whats.get(rid, what)}: {operation} failed "
                    f"{len(failed)} record(s) {attempt} times, e.g. {rid}: "
                    f"{first.get('errorCode')} {first.get('errorMessage', '')}"
                )
            self._sleep(0.05 * 2 ** (attempt - 1))

    def _retrieve(self, probe: Probe, at: datetime) -> list[dict[str, Any]]:
        criteria: dict[str, Any] = {
            # (SearchCriteria.searchQuery holds at most 10,000 characters)
            "searchQuery": (probe.question or f"{probe.subject} {probe.predicate}")[:10_000],
            "topK": self.options.top_k,
            "metadataFilters": self._key_filters(probe.key, at),
        }
        if self.options.strategy_id:
            criteria["memoryStrategyId"] = self.options.strategy_id
        return list(
            self._pages(
                "retrieve_memory_records",
                f"query {probe.id}",
                memoryId=self.options.memory_id,
                namespace=self._namespace(probe.key),
                searchCriteria=criteria,
            )
        )

    def _key_filters(self, key: FactKey, at: datetime) -> list[dict[str, Any]]:
        filters = [
            equals(SUBJECT_KEY, encode(key.subject, "subject")),
            equals(PREDICATE_KEY, encode(key.predicate, "predicate")),
            {
                "left": {"metadataKey": VALIDATED_KEY},
                "operator": "LESS_THAN_OR_EQUALS",
                "right": {"metadataValue": {"numberValue": at.timestamp()}},
            },
        ]
        assert len(filters) <= MAX_FILTERS
        return filters

    def _list_prefix(self) -> list[dict[str, Any]]:
        extra: dict[str, Any] = {}
        if self.options.strategy_id:
            extra["memoryStrategyId"] = self.options.strategy_id
        return list(
            self._pages(
                "list_memory_records",
                f"listing records under {self.prefix!r}",
                memoryId=self.options.memory_id,
                namespacePath=self.prefix,
                maxResults=100,
                **extra,
            )
        )

    def _pages(self, operation: str, what: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        token: str | None = None
        seen: set[str] = set()
        while True:
            response = self._call(
                operation, what, **kwargs, **({"nextToken": token} if token else {})
            )
            yield from response.get("memoryRecordSummaries", [])
            token = response.get("nextToken")
            if not token:
                return
            if token in seen:
                raise MemoryAdapterError(
                    f"agentcore memory: {what}: the service repeated a nextToken"
                )
            seen.add(token)

    def _client(self) -> Any:
        if self._client_obj is None:
            self._client_obj = _make_client(self.options, self._session)
            self._region = self._client_obj.meta.region_name
        return self._client_obj

    def _control(self) -> Any:
        """The control-plane client (``GetMemory``), at ``endpoint_url`` too when set."""
        if self._control_obj is None:
            self._client()  # the model check and the region come with the data-plane client
            self._control_obj = _make_client(self.options, self._session, CONTROL_SERVICE)
        return self._control_obj

    # -- before the first write: the memory's configuration, and a strategy's schema ----------

    def _check_memory(self) -> None:
        """Once per instance, before anything is written or read: the memory must index the
        keys healthd filters on, and a ``strategy_id`` must be one of its strategies and keep
        healthd's metadata on the records written with it."""
        if self._memory_checked:
            return
        memory = self._call(
            "get_memory",
            f"reading the configuration of memory {self.options.memory_id!r} (GetMemory)",
            client=self._control(),
            # (the control plane's MemoryId is the id alone; the data plane's takes an ARN)
            memoryId=self.options.memory_id.rsplit("/", 1)[-1],
        )["memory"]
        indexed = {k.get("key"): k.get("type") for k in memory.get("indexedKeys") or []}
        missing = {k: t for k, t in FILTER_KEYS.items() if indexed.get(k) != t}
        if missing:
            free = MAX_INDEXED_KEYS - len(indexed)
            wrong = [f"{k} is indexed as {indexed[k]}" for k in missing if k in indexed]
            declare = " ".join(f"key={k},type={t}" for k, t in missing.items())
            raise MemoryAdapterError(
                f"agentcore memory: memory {self.options.memory_id!r} does not index "
                f"{', '.join(f'{k} ({t})' for k, t in missing.items())}, which healthd filters "
                f"on, and the service filters on indexed keys only"
                + (f" ({'; '.join(wrong)})" if wrong else "")
                + f". Declaring them takes {len(missing)} of the memory's {MAX_INDEXED_KEYS} "
                f"indexed-key slots ({free} free) for good: indexed keys cannot be removed. "
                f"To declare them: aws bedrock-agentcore-control update-memory --memory-id "
                f"{self.options.memory_id.rsplit('/', 1)[-1]} --add-indexed-keys {declare}"
            )
        log.info(
            "agentcore memory indexes healthd's keys",
            memory_id=self.options.memory_id,
            indexed_keys=sorted(FILTER_KEYS),
            note="indexed keys are permanent: they keep their slots after healthd is gone",
        )
        if self.options.strategy_id:
            strategies = [s.get("strategyId") for s in memory.get("strategies") or []]
            if self.options.strategy_id not in strategies:
                raise MemoryAdapterError(
                    f"agentcore memory: memory {self.options.memory_id!r} has no strategy "
                    f"{self.options.strategy_id!r} (strategy_id); its strategies: "
                    f"{', '.join(map(str, strategies)) or 'none'}"
                )
            self._preflight(self.options.strategy_id)
        self._memory_checked = True

    def _preflight(self, strategy_id: str) -> None:
        """Write one record with the strategy, read it back and delete it: a strategy whose
        schema drops healthd's metadata would otherwise make every answer look empty or
        foreign, and a run would score what it never measured."""
        what = f"preflight of strategy {strategy_id!r}"
        namespace = f"{self.prefix}/{PREFLIGHT}"
        now = self._wall()
        fact = Fact(PREFLIGHT, "schema", "healthd checks that its metadata is kept", "tech")
        metadata = self._metadata(fact, PREFLIGHT, now, now, what)
        response = self._call(
            "batch_create_memory_records",
            what,
            memoryId=self.options.memory_id,
            records=[
                {
                    "requestIdentifier": PREFLIGHT,
                    "namespaces": [namespace],
                    "content": {"text": content(fact)},
                    "timestamp": datetime.fromtimestamp(now, tz=UTC),
                    "metadata": metadata,
                    "memoryStrategyId": strategy_id,
                }
            ],
        )
        created = [r["memoryRecordId"] for r in response.get("successfulRecords", [])]
        if not created:
            failed = (response.get("failedRecords") or [{}])[0]
            raise MemoryAdapterError(
                f"agentcore memory: {what}: the service did not create the preflight record "
                f"({failed.get('errorCode')} {failed.get('errorMessage', '')})"
            )
        record_id = created[0]
        try:
            found = self._read_preflight(record_id, namespace, strategy_id, what)
        finally:
            self._delete([(record_id, namespace)], what)
        dropped = sorted(set(metadata) - set(found.get("metadata") or {}))
        if dropped:
            raise MemoryAdapterError(
                f"agentcore memory: strategy {strategy_id!r} drops healthd's metadata "
                f"{', '.join(dropped)} from the records written with it (a record keeps only "
                f"the keys of its strategy's schema): add them to the strategy's "
                f"memoryRecordSchema, or leave strategy_id unset"
            )

    def _read_preflight(
        self, record_id: str, namespace: str, strategy_id: str, what: str
    ) -> dict[str, Any]:
        deadline = self._monotonic() + self.options.consistency_wait_seconds
        delay = 0.02
        while True:
            for summary in self._pages(
                "list_memory_records",
                what,
                memoryId=self.options.memory_id,
                namespace=namespace,
                memoryStrategyId=strategy_id,
                maxResults=100,
            ):
                if summary.get("memoryRecordId") == record_id:
                    return summary
            if self._monotonic() >= deadline:
                raise MemoryAdapterError(
                    f"agentcore memory: {what}: the preflight record {record_id} was not "
                    f"readable after {self.options.consistency_wait_seconds}s "
                    "(consistency_wait_seconds)"
                )
            self._sleep(delay)
            delay = min(delay * 2, 1.0)

    def _call(
        self, operation: str, what: str, *, client: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        return agentcore_client.call(
            client or self._client(),
            operation,
            what,
            memory_id=self.options.memory_id,
            region=self._region,
            max_attempts=self.options.max_attempts,
            **kwargs,
        )

    # -- encoding ---------------------------------------------------------------------------

    def _namespace(self, key: FactKey) -> str:
        return f"{self.prefix}/{component(key.subject)}/{component(key.predicate)}"

    def _metadata(
        self, fact: Fact, event_id: str, validated: float, written: float, what: str
    ) -> dict[str, Any]:
        try:
            return record_metadata(
                fact, event_id, validated, written, self.options.record_expiry_days
            )
        except ValueError as exc:
            raise MemoryAdapterError(f"agentcore memory: {what}: {exc}") from None

    def _text(self, fact: Fact, what: str) -> str:
        text = content(fact)
        if len(text) > MAX_TEXT:
            raise MemoryAdapterError(
                f"agentcore memory: {what}: the record for {fact.subject} {fact.predicate} "
                f"would hold {len(text):,} characters of text; AgentCore Memory takes at most "
                f"{MAX_TEXT:,} a record"
            )
        return text

    def _stamp_expiry(self, key: FactKey, record: _Record, days: float) -> None:
        record.expires_wall = self._wall() + days * 86400.0
        heapq.heappush(self._expiring, (record.expires_wall, key, record.id))

    def _decode(self, summary: dict[str, Any], key: FactKey, probe: Probe) -> RetrievedFact:
        """The fact a served record holds. The answer was filtered on healthd's keys under
        its own prefix: a record that does not read as one healthd wrote for ``key`` was
        changed or written by someone else, and skipping it would score what is left as if
        measured."""
        fact = to_fact(summary, key)
        if fact is None:
            raise MemoryAdapterError(
                f"agentcore memory: query {probe.id}: record "
                f"{quote(summary.get('memoryRecordId'))} in {quote(namespace_of(summary))} is "
                f"not one healthd wrote for {key} (its healthd_* metadata or text is missing "
                "or unreadable): the shadow holds records healthd did not write"
            )
        return fact

    def _settle(self, done: Callable[[], bool], what: str) -> None:
        deadline = self._monotonic() + self.options.consistency_wait_seconds
        delay = 0.02
        while not done():
            if self._monotonic() >= deadline:
                raise MemoryAdapterError(
                    f"agentcore memory: {what}: deleted records still listed after "
                    f"{self.options.consistency_wait_seconds}s (consistency_wait_seconds)"
                )
            self._sleep(delay)
            delay = min(delay * 2, 1.0)


# -- helpers ------------------------------------------------------------------------------------


def _make_client(options: AgentCoreOptions, session: Any, service: str = SERVICE) -> Any:
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import UnknownServiceError
    except ImportError:
        raise TargetError(
            "the agentcore target needs boto3: pip install 'healthd[agentcore]'"
        ) from None
    session = session or boto3.Session()
    region = options.region or session.region_name
    if not region:
        raise TargetError(
            "agentcore memory: no region: set region=... or AWS_DEFAULT_REGION (or a profile's region)"
        )
    config = Config(
        retries={"mode": "standard", "total_max_attempts": options.max_attempts},
        connect_timeout=options.timeout_seconds,
        read_timeout=options.timeout_seconds,
        user_agent_extra=f"healthd/{__version__}",
    )
    try:
        client = session.client(
            service, region_name=region, endpoint_url=options.endpoint_url, config=config
        )
    except UnknownServiceError:
        client = None
    if service == SERVICE:
        _check_model(client)
    elif client is None:
        raise TargetError(
            f"botocore does not ship the {service} model; install botocore>={MIN_BOTOCORE} "
            "(pip install 'healthd[agentcore]')"
        )
    return client


def _check_model(client: Any) -> None:
    import botocore

    try:
        members = client.meta.service_model.operation_model(
            "BatchCreateMemoryRecords"
        ).input_shape.members
    except Exception:
        members = {}
    if "recordExpirySpecification" not in members:
        raise TargetError(
            f"botocore {botocore.__version__} does not ship the {SERVICE} memory-record "
            f"model healthd needs; install botocore>={MIN_BOTOCORE} (pip install 'healthd[agentcore]')"
        )


@register_memory("agentcore")
def agentcore_memory(options: Mapping[str, Any]) -> Memory:
    if str(options.get("mode", "")).strip() == "events":  # the documents' path: events
        from healthd.memory.agentcore_events import events_memory

        return events_memory(options)
    try:
        opts = AgentCoreOptions.model_validate(dict(options))
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise TargetError(f"switch {field or 'options'}: {message}") from None
    return AgentCoreMemory(opts)
