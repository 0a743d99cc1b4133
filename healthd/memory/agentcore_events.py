"""The `agentcore` memory in ``mode = "events"``: AgentCore Memory as its documents describe it.

healthd does not write long-term records here: it talks to the memory as an agent does, and
what it measures is what the memory's own strategy makes of that.

* Each change is one ``CreateEvent``: the shadow ``actor_id``, one ``sessionId`` per run,
  ``eventTimestamp`` = the change's replayed time, a conversational USER turn saying the
  change ("Billing is owned by @bob (replacing @alice)."), and string metadata naming the
  healthd event, the ``eventExpiryDuration`` it was created under and when it was written.
* The memory's strategy ``strategy_id`` consolidates the events, asynchronously, into
  long-term records in its namespace for the actor; a probe is ``RetrieveMemoryRecords`` in
  that namespace with the probe's question. What comes back is served text, read by the
  reader: healthd never decides what the memory keeps.
* ``consistency_wait_seconds`` covers consolidation: after a change (a re-validation may be a
  NO-OP, which nothing shows, so it is not waited for) the next answer waits, bounded, until
  the strategy's records for the actor have changed.
* Each run reads the memory's configuration (control plane ``GetMemory``): the strategy
  named must exist and file records per actor (``{actorId}`` in its namespace, no
  ``{sessionId}``); ``eventExpiryDuration`` is noted on every event, so a change of it
  shows as two populations of events, each keeping the expiry it was created with.
* Incremental scoring asks again only when the strategy's records for the actor changed:
  a stage whose event was a NO-OP asks nothing; any other asks every probe (a consolidated
  record may enter any answer).
* Each run checks actor isolation: the first probe is asked again as another actor, whose
  answer must hold nothing of the shadow actor's.

healthd writes only as ``actor_id``, which must be declared shadow, and a reset deletes only
that actor's events (refusing an actor holding events healthd did not write) and the
records in the strategy's namespace for it.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from healthd import __version__
from healthd._http import check_http_url
from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError, first_problem
from healthd.logging import get_logger
from healthd.memory import _agentcore_client as agentcore_client
from healthd.memory._agentcore_records import encode
from healthd.model import Answer, ChangeEvent, FactKey, Probe, ServedItem
from healthd.reading.render import statement

log = get_logger("healthd.memory.agentcore")

SERVICE = "bedrock-agentcore"
CONTROL_SERVICE = "bedrock-agentcore-control"
EVENT_ID_KEY = "healthd_event_id"
EVENT_EXPIRY_KEY = "healthd_event_expiry_days"
EVENT_WRITTEN_KEY = "healthd_written_at"
MAX_TOP_K = 100
MAX_BATCH = 100
MAX_TURN = 100_000  # ContentTextString's maximum in the model

_ACTOR_ID = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9\-_/]*(?::[a-zA-Z0-9\-_/]+)*[a-zA-Z0-9\-_/]*")
_STRATEGY_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9\-_]{0,99}-[a-zA-Z0-9]{10}")
_MEMORY_ID = re.compile(
    r"(arn:(aws|aws-cn|aws-us-gov):bedrock-agentcore:[a-z0-9-]+:[0-9]{12}:memory/)?"
    r"[a-zA-Z][a-zA-Z0-9\-_]{0,99}-[a-zA-Z0-9]{10}"
)
_VARIABLE = re.compile(r"\{([a-zA-Z][a-zA-Z0-9]*)\}")


class EventsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    mode: Literal["events"] = "events"
    memory_id: str
    actor_id: str = Field(min_length=1, max_length=255)
    strategy_id: str
    shadow: bool = False
    isolation_actor_id: str | None = Field(None, min_length=1, max_length=255)
    region: str | None = None
    endpoint_url: str | None = None
    control_endpoint_url: str | None = None
    top_k: int = Field(5, ge=1, le=MAX_TOP_K)
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

    @field_validator("actor_id", "isolation_actor_id")
    @classmethod
    def _actor(cls, value: str | None) -> str | None:
        if value is not None and not _ACTOR_ID.fullmatch(value):
            raise ValueError(
                "must be letters, digits, '-', '_', '/' and ':' (the service's actorId pattern), "
                "e.g. healthd-shadow"
            )
        return value

    @field_validator("strategy_id")
    @classmethod
    def _strategy(cls, value: str) -> str:
        if not _STRATEGY_ID.fullmatch(value):
            raise ValueError(
                "not an AgentCore strategy id (name-XXXXXXXXXX), e.g. facts-a1b2c3d4e5"
            )
        return value

    @field_validator("endpoint_url", "control_endpoint_url")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        return None if value is None else check_http_url(value, "http://127.0.0.1:8765")

    @model_validator(mode="after")
    def _other_actor(self) -> EventsOptions:
        if self.isolation_actor_id == self.actor_id:
            raise ValueError("isolation_actor_id must name another actor than actor_id")
        return self

    @property
    def other_actor(self) -> str:
        return self.isolation_actor_id or f"{self.actor_id}-isolation-check"


@dataclass
class EventExpiry:
    """The shadow actor's events by the ``eventExpiryDuration`` (days) they were created
    under, and when the first of each was written (wall clock, seconds)."""

    current_days: int | None = None
    populations: Counter[int] = field(default_factory=Counter)
    since: dict[int, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "current_days": self.current_days,
            "populations": {str(d): n for d, n in sorted(self.populations.items())},
            "since": {str(d): t for d, t in sorted(self.since.items())},
        }


class AgentCoreEventsMemory:
    kind = "agentcore"

    def __init__(
        self,
        options: EventsOptions,
        *,
        session: Any = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not options.shadow:
            raise ShadowViolation(
                f"actor id {options.actor_id!r} is not declared shadow; healthd writes events "
                "only as an actor it owns (set shadow = true)"
            )
        self.options = options
        self.batch_events = options.batch_events
        self.actor = options.actor_id
        self._boto_session = session
        self._sleep = sleep
        self._monotonic = monotonic
        self._wall = wall_clock
        self._clients: dict[str, Any] = {}
        self._region: str | None = None
        self.session_id: str | None = None
        self.namespace: str | None = None
        self._other_namespace: str | None = None
        self.event_expiry_days: int | None = None
        self.expiry_changes: list[tuple[float, int | None, int]] = []
        self._record_ids: set[str] = set()
        self._snapshot: tuple[tuple[str, str], ...] | None = None
        self._seen: tuple[tuple[str, str], ...] | None = None
        self._pending = False
        self._isolation_checked = False
        self.isolation_checks = 0
        self.unsettled_reads = 0
        self.events_written = 0

    # -- run scope --------------------------------------------------------------------------

    def begin_run(self) -> None:
        """A new run: a new session, and the memory's configuration read again."""
        self.session_id = None
        self._open_run()

    def _open_run(self) -> None:
        if self.session_id is not None:
            return
        self._read_configuration()
        self.session_id = f"healthd-{int(self._wall())}-{uuid.uuid4().hex[:12]}"
        self._isolation_checked = False

    def _read_configuration(self) -> None:
        memory_id = self.options.memory_id.rsplit("/", 1)[-1]
        what = f"reading the configuration of memory {memory_id!r}"
        memory = self._call("control", "get_memory", what, memoryId=memory_id)["memory"]
        if memory.get("status") not in ("ACTIVE", "UPDATING"):
            raise MemoryAdapterError(
                f"agentcore memory: memory {memory_id!r} is {memory.get('status')}, not ACTIVE"
                + (f" ({memory['failureReason']})" if memory.get("failureReason") else "")
            )
        strategies = memory.get("strategies") or []
        found = [s for s in strategies if s.get("strategyId") == self.options.strategy_id]
        if not found:
            names = ", ".join(str(s.get("strategyId")) for s in strategies) or "none"
            raise MemoryAdapterError(
                f"agentcore memory: memory {memory_id!r} has no strategy "
                f"{self.options.strategy_id!r} (its strategies: {names})"
            )
        strategy = found[0]
        if strategy.get("status", "ACTIVE") != "ACTIVE":
            raise MemoryAdapterError(
                f"agentcore memory: strategy {self.options.strategy_id!r} is "
                f"{strategy.get('status')}, not ACTIVE"
            )
        templates = strategy.get("namespaceTemplates") or strategy.get("namespaces") or []
        template = str(templates[0]) if templates else ""
        variables = set(_VARIABLE.findall(template))
        if "actorId" not in variables or "sessionId" in variables:
            raise MemoryAdapterError(
                f"agentcore memory: strategy {self.options.strategy_id!r} files records in "
                f"{template!r}: healthd needs a namespace per actor ({{actorId}} in it, no "
                "{sessionId}) so that its shadow actor's records are its own"
            )
        values = {"actorId": self.actor, "memoryStrategyId": self.options.strategy_id}
        unknown = variables - set(values)
        if unknown:
            raise MemoryAdapterError(
                f"agentcore memory: strategy {self.options.strategy_id!r} namespace {template!r} "
                f"uses {', '.join(sorted(unknown))}, which healthd cannot fill"
            )
        self.namespace = _resolve(template, values)
        self._other_namespace = _resolve(template, {**values, "actorId": self.options.other_actor})
        days = int(memory["eventExpiryDuration"])
        previous = self.event_expiry_days
        if previous is None:  # this process's first run: the newest population's expiry
            known = self.event_expiry()
            populations = known.populations
            previous = (
                max(populations, key=lambda d: known.since.get(d, 0.0)) if populations else None
            )
        if previous is not None and previous != days:
            at = self._wall()
            self.expiry_changes.append((at, previous, days))
            log.warning(
                "agentcore event expiry changed",
                memory_id=memory_id,
                actor_id=self.actor,
                previous_days=previous,
                event_expiry_days=days,
                noticed_at=datetime.fromtimestamp(at, tz=UTC).isoformat(),
                note="events keep the expiry they were created with; the new setting applies "
                "only to events created from now on",
            )
        self.event_expiry_days = days

    # -- Memory protocol ------------------------------------------------------------------

    def reset(self) -> None:
        self._open_run()
        events = list(self._actor_events(payloads=False))
        foreign = [e for e in events if EVENT_ID_KEY not in (e.get("metadata") or {})]
        if foreign:
            raise ShadowViolation(
                f"agentcore memory: actor {self.actor!r} holds {len(foreign)} event(s) healthd "
                "did not write "
                f"(e.g. in session {foreign[0].get('sessionId')!r}): it is not a shadow actor; "
                "nothing was deleted"
            )
        for event in events:
            self._call(
                "data",
                "delete_event",
                "reset: deleting the shadow actor's events",
                memoryId=self.options.memory_id,
                actorId=self.actor,
                sessionId=event["sessionId"],
                eventId=event["eventId"],
            )
        records = [
            r for r in self._records() if list(r.get("namespaces") or []) == [self.namespace]
        ]
        ids = [{"memoryRecordId": r["memoryRecordId"]} for r in records]
        what = "reset: deleting the strategy's records for the shadow actor"
        for start in range(0, len(ids), MAX_BATCH):
            response = self._call(
                "data",
                "batch_delete_memory_records",
                what,
                memoryId=self.options.memory_id,
                records=ids[start : start + MAX_BATCH],
            )
            failed = [f for f in response.get("failedRecords", []) if f.get("errorCode") != 404]
            if failed:
                raise MemoryAdapterError(
                    f"agentcore memory: {what}: {len(failed)} record(s) failed, e.g. "
                    f"{failed[0].get('memoryRecordId')}: {failed[0].get('errorCode')} "
                    f"{failed[0].get('errorMessage', '')}"
                )
        if ids and self.options.consistency_wait_seconds > 0:
            self._wait_until_gone({i["memoryRecordId"] for i in ids})
        self._record_ids.clear()
        self._snapshot = None
        self._seen = None
        self._pending = False
        self.events_written = 0

    def apply(self, event: ChangeEvent) -> None:
        self._open_run()
        assert self.session_id is not None and self.event_expiry_days is not None
        waits = self.options.consistency_wait_seconds > 0 and event.type != "revalidated"
        if waits and not self._pending:
            self._snapshot = self._listing()
        try:
            event_id = encode(event.id, "event id")
        except ValueError as exc:
            raise MemoryAdapterError(f"agentcore memory: apply {event.id}: {exc}") from None
        text = statement(event)
        if len(text) > MAX_TURN:
            raise MemoryAdapterError(
                f"agentcore memory: apply {event.id}: the change renders to {len(text):,} "
                f"characters; a conversational turn holds at most {MAX_TURN:,}"
            )
        written = datetime.fromtimestamp(self._wall(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._call(
            "data",
            "create_event",
            f"apply {event.id}",
            memoryId=self.options.memory_id,
            actorId=self.actor,
            sessionId=self.session_id,
            eventTimestamp=event.timestamp,
            payload=[{"conversational": {"role": "USER", "content": {"text": text}}}],
            metadata={
                EVENT_ID_KEY: {"stringValue": event_id},
                EVENT_EXPIRY_KEY: {"stringValue": str(self.event_expiry_days)},
                EVENT_WRITTEN_KEY: {"stringValue": written},
            },
        )
        self.events_written += 1
        self._pending = self._pending or waits

    def answer(self, probe: Probe, at: datetime) -> Answer:
        self._open_run()
        if self._pending:
            self._settle()
        question = probe.question or f"{probe.subject} {probe.predicate}"
        summaries = self._retrieve(self.namespace, question, f"query {probe.id}")
        items = []
        for summary in summaries:
            if list(summary.get("namespaces") or []) != [self.namespace]:
                continue  # not the strategy's record for the shadow actor
            self._record_ids.add(str(summary["memoryRecordId"]))
            items.append(_served(summary))
        if not self._isolation_checked:
            self._check_isolation(question, probe.id)
        return Answer(probe.id, (), tuple(items))

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        """No key when the strategy's records for the actor are as they were at the last call
        (a NO-OP changes no answer: retrieval over the same records is the same); otherwise
        None, since a consolidated record may enter any probe's answer."""
        self._open_run()
        if self._pending:
            self._settle()
        listing = self._listing()
        if listing == self._seen:
            return set()
        self._seen = listing
        return None

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    # -- expiry populations -------------------------------------------------------------------

    def event_expiry(self) -> EventExpiry:
        """The shadow actor's events the memory still holds, by the expiry each was created
        under, as the service lists them."""
        report = EventExpiry(self.event_expiry_days)
        for event in self._actor_events(payloads=False):
            metadata = event.get("metadata") or {}
            try:
                days = int(metadata[EVENT_EXPIRY_KEY]["stringValue"])
            except (KeyError, TypeError, ValueError):
                continue
            report.populations[days] += 1
            written = _parse_time((metadata.get(EVENT_WRITTEN_KEY) or {}).get("stringValue"))
            if written is not None and written < report.since.get(days, float("inf")):
                report.since[days] = written
        return report

    def event_expiry_report(self) -> dict[str, Any]:
        """The events per expiry, and how many of this run's events the memory reports it
        failed to extract (``failed_extractions``): a lost event, not a slow one."""
        return {**self.event_expiry().as_json(), "failed_extractions": self.failed_extractions()}

    def failed_extractions(self) -> int:
        """Extraction jobs of this run's session the service lists as FAILED (logged)."""
        if self.session_id is None:
            return 0
        jobs = list(
            self._pages(
                "list_memory_extraction_jobs",
                "listing failed extraction jobs",
                "jobs",
                memoryId=self.options.memory_id,
                filter={
                    "strategyId": self.options.strategy_id,
                    "actorId": self.actor,
                    "sessionId": self.session_id,
                    "status": "FAILED",
                },
                maxResults=50,
            )
        )
        if jobs:
            log.warning(
                "agentcore extraction failed",
                actor_id=self.actor,
                session_id=self.session_id,
                jobs=len(jobs),
                reason=str(jobs[0].get("failureReason", ""))[:200],
                note="the strategy made no record of these events; StartMemoryExtractionJob "
                "retries them",
            )
        return len(jobs)

    # -- consolidation and isolation ----------------------------------------------------------

    def _settle(self) -> None:
        deadline = self._monotonic() + self.options.consistency_wait_seconds
        delay = 0.02
        while self._listing() == self._snapshot:
            if self._monotonic() >= deadline:
                self.unsettled_reads += 1
                log.warning(
                    "agentcore consolidation not seen",
                    actor_id=self.actor,
                    waited_seconds=self.options.consistency_wait_seconds,
                )
                break
            self._sleep(delay)
            delay = min(delay * 2, 1.0)
        self._pending = False
        self._snapshot = None

    def _wait_until_gone(self, deleted: set[str]) -> None:
        deadline = self._monotonic() + self.options.consistency_wait_seconds
        delay = 0.02
        while any(r["memoryRecordId"] in deleted for r in self._records()):
            if self._monotonic() >= deadline:
                raise MemoryAdapterError(
                    "agentcore memory: reset: deleted records still listed after "
                    f"{self.options.consistency_wait_seconds}s (consistency_wait_seconds)"
                )
            self._sleep(delay)
            delay = min(delay * 2, 1.0)

    def _check_isolation(self, question: str, probe_id: str) -> None:
        self._isolation_checked = True
        other = self.options.other_actor
        served = self._retrieve(
            self._other_namespace, question, f"isolation check (probe {probe_id} as {other!r})"
        )
        leaked = [
            s
            for s in served
            if str(s.get("memoryRecordId")) in self._record_ids
            or self.namespace in (s.get("namespaces") or [])
        ]
        if leaked:
            raise MemoryAdapterError(
                f"agentcore memory: actor isolation broken: a probe asked as actor {other!r} was "
                f"served {len(leaked)} record(s) of the shadow actor {self.actor!r} "
                f"(e.g. {leaked[0].get('memoryRecordId')})"
            )
        self.isolation_checks += 1

    # -- service calls ----------------------------------------------------------------------

    def _retrieve(self, namespace: str | None, question: str, what: str) -> list[dict[str, Any]]:
        criteria = {
            "searchQuery": question[:10_000],
            "topK": self.options.top_k,
            "memoryStrategyId": self.options.strategy_id,
        }
        return list(
            self._pages(
                "retrieve_memory_records",
                what,
                "memoryRecordSummaries",
                memoryId=self.options.memory_id,
                namespace=namespace,
                searchCriteria=criteria,
            )
        )

    def _records(self) -> list[dict[str, Any]]:
        return list(
            self._pages(
                "list_memory_records",
                f"listing the strategy's records in {self.namespace!r}",
                "memoryRecordSummaries",
                memoryId=self.options.memory_id,
                namespace=self.namespace,
                memoryStrategyId=self.options.strategy_id,
                maxResults=100,
            )
        )

    def _listing(self) -> tuple[tuple[str, str], ...]:
        return tuple(
            sorted(
                (str(r["memoryRecordId"]), str((r.get("content") or {}).get("text")))
                for r in self._records()
            )
        )

    def _actor_events(self, *, payloads: bool) -> Iterator[dict[str, Any]]:
        what = f"listing the events of actor {self.actor!r}"
        sessions = list(
            self._pages(
                "list_sessions",
                what,
                "sessionSummaries",
                memoryId=self.options.memory_id,
                actorId=self.actor,
                maxResults=100,
            )
        )
        for session in sessions:
            yield from self._pages(
                "list_events",
                what,
                "events",
                memoryId=self.options.memory_id,
                actorId=self.actor,
                sessionId=session["sessionId"],
                includePayloads=payloads,
                maxResults=100,
            )

    def _pages(self, operation: str, what: str, member: str, **kwargs: Any) -> Iterator[Any]:
        token: str | None = None
        seen: set[str] = set()
        while True:
            response = self._call(
                "data", operation, what, **kwargs, **({"nextToken": token} if token else {})
            )
            yield from response.get(member, [])
            token = response.get("nextToken")
            if not token:
                return
            if token in seen:
                raise MemoryAdapterError(
                    f"agentcore memory: {what}: the service repeated a nextToken"
                )
            seen.add(token)

    def _client(self, plane: str) -> Any:
        client = self._clients.get(plane)
        if client is None:
            client = self._make_client(plane)
            self._clients[plane] = client
            self._region = client.meta.region_name
        return client

    def _make_client(self, plane: str) -> Any:
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise TargetError(
                "the agentcore target needs boto3: pip install 'healthd[agentcore]'"
            ) from None
        session = self._boto_session or boto3.Session()
        self._boto_session = session
        region = self.options.region or session.region_name
        if not region:
            raise TargetError(
                "agentcore memory: no region: set region=... or AWS_DEFAULT_REGION (or a profile's region)"
            )
        config = Config(
            retries={"mode": "standard", "total_max_attempts": self.options.max_attempts},
            connect_timeout=self.options.timeout_seconds,
            read_timeout=self.options.timeout_seconds,
            user_agent_extra=f"healthd/{__version__}",
        )
        if plane == "control":
            service = CONTROL_SERVICE
            endpoint = self.options.control_endpoint_url or self.options.endpoint_url
        else:
            service, endpoint = SERVICE, self.options.endpoint_url
        return session.client(service, region_name=region, endpoint_url=endpoint, config=config)

    def _call(self, plane: str, operation: str, what: str, **kwargs: Any) -> dict[str, Any]:
        return agentcore_client.call(
            self._client(plane),
            operation,
            what,
            memory_id=self.options.memory_id,
            region=self._region,
            max_attempts=self.options.max_attempts,
            **kwargs,
        )


# -- helpers ------------------------------------------------------------------------------------


def _resolve(template: str, values: Mapping[str, str]) -> str:
    return _VARIABLE.sub(lambda m: values[m.group(1)], template)


def _served(summary: Mapping[str, Any]) -> ServedItem:
    """A long-term record as served: its text, and the time of the conversation it was
    consolidated from (the service's ``timestamp``), else when it was created."""
    written = summary.get("timestamp") or summary.get("createdAt")
    return ServedItem(
        str((summary.get("content") or {}).get("text") or ""),
        f"agentcore:{summary['memoryRecordId']}",
        written if isinstance(written, datetime) else None,
    )


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def events_memory(options: Mapping[str, Any]) -> AgentCoreEventsMemory:
    try:
        opts = EventsOptions.model_validate(dict(options))
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise TargetError(f"switch {field or 'options'}: {message}") from None
    return AgentCoreEventsMemory(opts)
