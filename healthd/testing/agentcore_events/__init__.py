"""Short-term memory and strategies for the AgentCore emulator (:mod:`healthd.testing.agentcore`).

What the documents (``002``, ``004``) and botocore's models describe, for tests and demos:

* the control plane's ``GetMemory`` (``GET /memories/{memoryId}/details``): the memory's
  ``eventExpiryDuration`` (days), its strategies with their namespace templates and record
  schemas, its indexed keys;
* the data plane's events: ``CreateEvent`` (an ``actorId``, a ``sessionId``, an
  ``eventTimestamp``, a conversational payload, string metadata; ``clientToken``
  idempotency), ``ListEvents``, ``ListSessions``, ``DeleteEvent``, with the model's patterns
  and limits;
* event expiry fixed per event when it is created: changing the memory's
  ``eventExpiryDuration`` applies only to events created afterwards;
* long-term records made *asynchronously* by the memory's strategies: an event is consolidated
  ``consolidation_delay`` seconds (emulator clock) after it was created, in creation order, so
  the result is deterministic. Consolidation follows the documented steps: extraction of the
  conversation's statements, then, against the records already in the strategy's namespace
  for that actor, ADD (nothing on the topic yet), UPDATE (the topic's record holds another
  value: the old record is marked invalid and no longer served, the new one is written; a
  statement that something stopped being true only invalidates the topic's record) or NO-OP
  (the same statement again). It knows nothing of dependencies between facts.

The emulator has no language model: its *extraction* is a stand-in for the service's model,
deterministic and named as such wherever its figures are shown, in a ``style`` (``style``
and ``seed`` of :class:`EventPlane`, ``--style`` of ``python -m
healthd.testing.agentcore_events``). ``verbatim`` reads the sentences healthd renders for a
change ("Billing is owned by @bob.", "It is no longer true that ...") by their shape, as the
emulator did before styles existed (its figures reproduce exactly). ``varied`` (the default)
reads the conversation as English (:func:`healthd.testing.standin_style.read`) and writes
its records as :mod:`healthd.testing.standin_style` documents (reworded, merged with another
subject's fact, the subject left implicit, a neighbouring subject credited too, an invented
value, a dropped or stale fact); a record's topic is what its own text reads as, so a record
whose subject was left as "it" is never updated. A sentence it cannot read is ignored, as
routine chatter would be.

``python -m healthd.testing.agentcore_events`` serves an emulator with such a memory (its
``__main__``, kept apart: the emulator imports this plane, which imports only
:mod:`healthd.testing._agentcore_core`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from healthd.testing import standin_style
from healthd.testing._agentcore_core import (
    DAY,
    META_STRING,
    Host,
    MemoryStore,
    Record,
    ServiceError,
    Strategy,
    request_digest,
    validation_error,
)

KEPT = 50_000  # requests and consolidation decisions kept for tests
MAX_PAYLOAD = 100
MAX_EVENT_TEXT = 100_000
MAX_EVENT_METADATA = 15
MAX_PAGE = 100
ROLES = ("ASSISTANT", "USER", "TOOL", "OTHER")

ACTOR_ID = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9\-_/]*(?::[a-zA-Z0-9\-_/]+)*[a-zA-Z0-9\-_/]*")
SESSION_ID = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9\-_]*")
_EVENT_ID = re.compile(r"[0-9]+#[a-fA-F0-9]+")


@dataclass
class Event:
    event_id: str
    actor_id: str
    session_id: str
    timestamp: float
    payload: list[dict[str, Any]]
    metadata: dict[str, dict[str, str]]
    created_at: float
    expiry_days: int
    consolidated: bool = False

    @property
    def expires_at(self) -> float:
        return self.created_at + self.expiry_days * DAY

    def shape(self, memory_id: str, payloads: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "memoryId": memory_id,
            "actorId": self.actor_id,
            "sessionId": self.session_id,
            "eventId": self.event_id,
            "eventTimestamp": self.timestamp,
            "payload": self.payload if payloads else [],
        }
        if self.metadata:
            out["metadata"] = self.metadata
        return out


@dataclass
class ShortTermMemory:
    """A memory's event expiry and its events (its strategies and indexed keys are the
    emulator's, in its ``MemoryStore``)."""

    memory_id: str
    event_expiry_days: int = 90
    created_at: float = 0.0
    updated_at: float = 0.0
    events: list[Event] = field(default_factory=list)
    sessions: dict[tuple[str, str], float] = field(default_factory=dict)
    tokens: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)


class EventPlane:
    """The events, the control plane's ``GetMemory`` and the strategies of an emulator."""

    def __init__(
        self,
        emulator: Host,
        consolidation_delay: float = 0.0,
        style: str = standin_style.DEFAULT_STYLE,
        seed: int = standin_style.DEFAULT_SEED,
    ) -> None:
        if style not in standin_style.STYLES:
            raise ValueError(f"style must be one of {', '.join(standin_style.STYLES)}")
        self._emulator = emulator
        self.consolidation_delay = consolidation_delay
        self.style = style
        self.seed = seed
        self.memories: dict[str, ShortTermMemory] = {}
        # for tests, the newest only: (event id, decision, record id) and (method, path, body)
        self.consolidations: deque[tuple[str, str, str]] = deque(maxlen=KEPT)
        self.bodies: deque[tuple[str, str, dict[str, Any]]] = deque(maxlen=KEPT)
        self._served_as: dict[str, str] = {}
        self._failing: list[str] = []
        self.jobs: dict[str, list[dict[str, Any]]] = {}  # failed extraction jobs by memory
        self._sequence = 0

    # -- control (tests) ----------------------------------------------------------------------

    def configure(
        self,
        memory_id: str,
        *,
        event_expiry_days: int | None = None,
        strategies: Sequence[Strategy] | None = None,
        indexed_keys: Sequence[dict[str, str]] | None = None,
    ) -> ShortTermMemory:
        """Create or change a memory's configuration, as ``CreateMemory``/``UpdateMemory``
        would: a new ``eventExpiryDuration`` applies to events created from now on."""
        if event_expiry_days is not None and not 1 <= event_expiry_days <= 3650:
            raise ValueError("eventExpiryDuration must be between 1 and 3650 days")
        self._emulator.create_memory(
            memory_id, indexed_keys={k["key"]: k["type"] for k in indexed_keys or ()}
        )
        if strategies is not None:
            store = self._emulator.memories[memory_id]
            store.strategies = {s.strategy_id: s for s in strategies}
        now = self._emulator.now()
        memory = self.memories.setdefault(memory_id, ShortTermMemory(memory_id, created_at=now))
        if event_expiry_days is not None:
            memory.event_expiry_days = event_expiry_days
        memory.updated_at = now
        return memory

    def break_isolation(self, asked: str, served: str) -> None:
        """A fault: answer a retrieval in namespace ``asked`` from namespace ``served``, as a
        memory whose actor isolation is broken would."""
        self._served_as[asked] = served

    def fail_extraction(self, text: str) -> None:
        """A fault: the extraction of any event whose conversation contains ``text`` fails
        (a FAILED job in ``ListMemoryExtractionJobs``, no record)."""
        self._failing.append(text)

    def events(self, memory_id: str) -> list[Event]:
        """Every event not deleted, expired or not (for assertions)."""
        return list(self.memories[memory_id].events)

    # -- HTTP ---------------------------------------------------------------------------------

    def route(
        self, method: str, parts: Sequence[str], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]] | None:
        """The answer to a request this plane serves, None for another's; consolidation that
        has come due runs first, so every read sees it."""
        self.consolidate_due()
        self.bodies.append((method, "/".join(parts), dict(body)))
        if len(parts) < 4 or parts[1] != "memories":
            return None
        memory_id, rest = parts[2], list(parts[3:])
        if rest == ["retrieve"] and body.get("namespace") in self._served_as:
            body["namespace"] = self._served_as[body["namespace"]]
        store = self._emulator.memories.get(memory_id)
        memory = self.memories.get(memory_id)
        if method == "GET" and rest == ["details"]:
            return 200, {"memory": self._describe(memory_id, memory)}
        if method == "PUT" and rest == ["update"]:
            return self._update_memory(memory_id, memory, body)
        if method == "POST" and rest == ["extractionJobs"]:
            return self._list_jobs(memory_id, body)
        events_route = (method == "POST" and rest == ["events"]) or (
            len(rest) >= 3 and rest[0] == "actor" and rest[2] == "sessions"
        )
        if not events_route:
            return None
        if store is None:
            raise ServiceError("ResourceNotFoundException", 404, f"Memory {memory_id} not found")
        if memory is None:
            memory = self.configure(memory_id)
        if method == "POST" and rest == ["events"]:
            return self._create_event(memory, body)
        actor = _checked(rest[1], ACTOR_ID, 255, "actorId")
        if method == "POST" and len(rest) == 3:
            return self._list_sessions(memory, actor, body)
        session = _checked(rest[3], SESSION_ID, 100, "sessionId") if len(rest) > 3 else ""
        if method == "POST" and len(rest) == 4:
            return self._list_events(memory, actor, session, body)
        if method == "DELETE" and len(rest) == 6 and rest[4] == "events":
            return self._delete_event(memory, actor, session, rest[5])
        return None

    def _describe(self, memory_id: str, memory: ShortTermMemory | None) -> dict[str, Any]:
        """``GetMemory``'s ``memory``: the parts of the control plane's shape the emulator
        has (event expiry, indexed keys, strategies with their namespaces and schemas)."""
        store = self._emulator.memories.get(memory_id)
        if store is None:
            raise ServiceError("ResourceNotFoundException", 404, f"Memory {memory_id} not found")
        name = memory_id.rsplit("-", 1)[0].replace("-", "_")[:48]
        out: dict[str, Any] = {
            "arn": f"arn:aws:bedrock-agentcore:us-east-1:123456789012:memory/{memory_id}",
            "id": memory_id,
            "name": name,
            "eventExpiryDuration": memory.event_expiry_days if memory else 90,
            "status": "ACTIVE",
            "createdAt": store.created_at,
            "updatedAt": memory.updated_at if memory else store.created_at,
            "strategies": [s.describe(store.created_at) for s in store.strategies.values()],
        }
        if store.indexed_keys:
            out["indexedKeys"] = [{"key": k, "type": t} for k, t in store.indexed_keys.items()]
        return out

    # -- operations ---------------------------------------------------------------------------

    def _update_memory(
        self, memory_id: str, memory: ShortTermMemory | None, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        """``UpdateMemory``: the emulator changes ``eventExpiryDuration`` and
        ``addIndexedKeys`` (indexed keys are only ever added); other members are refused."""
        self._describe(memory_id, memory)  # ResourceNotFoundException first
        if memory is None:
            memory = self.configure(memory_id)
        store = self._emulator.memories[memory_id]
        unsupported = sorted(
            set(body) - {"memoryId", "clientToken", "eventExpiryDuration", "addIndexedKeys"}
        )
        if unsupported:
            raise validation_error(f"the emulator does not change {', '.join(unsupported)}")
        days = body.get("eventExpiryDuration")
        if days is not None:
            if not isinstance(days, int) or isinstance(days, bool) or not 3 <= days <= 3650:
                raise validation_error("eventExpiryDuration must be between 3 and 3650 days")
            memory.event_expiry_days = days
        added = body.get("addIndexedKeys") or []
        keys = set(store.indexed_keys)
        if len(keys) + len(added) > 10:
            raise validation_error("a memory has at most 10 indexed keys")
        for key in added:
            if not isinstance(key, dict) or key.get("type") not in (
                "STRING",
                "STRINGLIST",
                "NUMBER",
            ):
                raise validation_error("addIndexedKeys entries need a key and a type")
            if key.get("key") in keys:
                raise validation_error(f"indexed key {key.get('key')!r} exists already")
            store.indexed_keys[str(key["key"])] = str(key["type"])
        memory.updated_at = self._emulator.now()
        return 202, {"memory": self._describe(memory_id, memory)}

    def _create_event(
        self, memory: ShortTermMemory, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        token = body.get("clientToken")
        if isinstance(token, str) and token in memory.tokens:
            digest, response = memory.tokens[token]
            if digest != request_digest(body):
                raise validation_error("clientToken was used with another request")
            return 201, response
        actor = _checked(body.get("actorId"), ACTOR_ID, 255, "actorId")
        session = _checked(body.get("sessionId"), SESSION_ID, 100, "sessionId")
        timestamp = body.get("eventTimestamp")
        if not isinstance(timestamp, int | float) or isinstance(timestamp, bool):
            raise validation_error("eventTimestamp is required")
        payload = body.get("payload")
        if not isinstance(payload, list) or len(payload) > MAX_PAYLOAD:
            raise validation_error(f"payload must be a list of at most {MAX_PAYLOAD} items")
        for index, item in enumerate(payload):
            _check_payload(item, f"payload[{index}]")
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict) or len(metadata) > MAX_EVENT_METADATA:
            raise validation_error(f"metadata must be a map of at most {MAX_EVENT_METADATA} keys")
        for key, value in metadata.items():
            if not META_STRING.fullmatch(key) or not 1 <= len(key) <= 128:
                raise validation_error(f"metadata key {key!r} does not match the key pattern")
            text = value.get("stringValue") if isinstance(value, dict) else None
            if (
                not isinstance(text, str)
                or len(value) != 1
                or len(text) > 256
                or not META_STRING.fullmatch(text)
            ):
                raise validation_error(
                    f"metadata[{key}] must be a stringValue of the value pattern"
                )
        now = self._emulator.now()
        self._sequence += 1
        event_id = f"{int(now * 1000)}#{self._sequence:016x}"
        event = Event(
            event_id, actor, session, float(timestamp), payload, dict(metadata), now,
            memory.event_expiry_days,
        )  # fmt: skip
        memory.events.append(event)
        memory.sessions.setdefault((actor, session), now)
        response = {"event": event.shape(memory.memory_id)}
        if isinstance(token, str):
            memory.tokens[token] = (request_digest(body), response)
        return 201, response

    def _list_events(
        self, memory: ShortTermMemory, actor: str, session: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        now = self._emulator.now()
        payloads = body.get("includePayloads", True)
        found = [
            e.shape(memory.memory_id, bool(payloads))
            for e in memory.events
            if e.actor_id == actor and e.session_id == session and e.expires_at > now
        ]
        return _page(body, "events", found, "events")

    def _list_sessions(
        self, memory: ShortTermMemory, actor: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        found = [
            {"sessionId": s, "actorId": a, "createdAt": created}
            for (a, s), created in sorted(memory.sessions.items(), key=lambda kv: kv[1])
            if a == actor
        ]
        return _page(body, "sessions", found, "sessionSummaries")

    def _list_jobs(self, memory_id: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if memory_id not in self._emulator.memories:
            raise ServiceError("ResourceNotFoundException", 404, f"Memory {memory_id} not found")
        wanted = body.get("filter") or {}
        if not isinstance(wanted, dict):
            raise validation_error("filter must be an object")
        keys = {"strategyId": "strategyId", "sessionId": "sessionId", "actorId": "actorId",
                "status": "status"}  # fmt: skip
        found = [
            job
            for job in self.jobs.get(memory_id, [])
            if all(wanted.get(k) in (None, job.get(v)) for k, v in keys.items())
        ]
        if not 1 <= body.get("maxResults", 50) <= 50:
            raise validation_error("maxResults must be between 1 and 50")
        return _page({**body, "maxResults": body.get("maxResults", 50)}, "jobs", found, "jobs")

    def _delete_event(
        self, memory: ShortTermMemory, actor: str, session: str, event_id: str
    ) -> tuple[int, dict[str, Any]]:
        if not _EVENT_ID.fullmatch(event_id):
            raise validation_error(f"eventId {event_id!r} does not match the event id pattern")
        for index, event in enumerate(memory.events):
            if (event.event_id, event.actor_id, event.session_id) == (event_id, actor, session):
                del memory.events[index]
                return 200, {"eventId": event_id}
        raise ServiceError("ResourceNotFoundException", 404, f"Event {event_id} not found")

    # -- strategies ---------------------------------------------------------------------------

    def consolidate_due(self) -> None:
        """Consolidate, in creation order, every event whose delay has passed."""
        now = self._emulator.now()
        for memory in self.memories.values():
            store = self._emulator.memories.get(memory.memory_id)
            if store is None:
                continue
            for event in memory.events:
                if event.consolidated or event.created_at + self.consolidation_delay > now:
                    continue
                event.consolidated = True
                text = _conversation(event.payload)
                if any(part in text for part in self._failing):
                    for strategy in store.strategies.values():
                        self.jobs.setdefault(memory.memory_id, []).append(
                            {
                                "jobID": f"job-{len(self.jobs.get(memory.memory_id, [])) + 1}",
                                "messages": {
                                    "messagesList": [{"eventId": event.event_id, "messageIndex": 0}]
                                },
                                "status": "FAILED",
                                "failureReason": "model output could not be parsed",
                                "strategyId": strategy.strategy_id,
                                "sessionId": event.session_id,
                                "actorId": event.actor_id,
                            }
                        )
                    continue
                for strategy in store.strategies.values():
                    if strategy.type in ("SEMANTIC", "USER_PREFERENCE"):
                        self._consolidate(store, strategy, event, now)

    def _consolidate(
        self, store: MemoryStore, strategy: Strategy, event: Event, now: float
    ) -> None:
        namespace = strategy.resolve(event.actor_id, event.session_id)
        if self.style == "varied":
            self._consolidate_varied(store, strategy, event, namespace, now)
            return
        for statement in extract(_conversation(event.payload)):
            active = [
                r
                for r in store.records.values()
                if r.deleted_at is None
                and r.strategy_id == strategy.strategy_id
                and namespace in r.namespaces
                and topic(r.content) == statement.topic
            ]
            if not statement.negated and any(r.content == statement.text for r in active):
                self.consolidations.append((event.event_id, "NO-OP", active[0].id))
                continue
            for record in active:
                record.deleted_at = now  # marked invalid: kept out of every answer
            if statement.negated:  # nothing true is left to say on the topic
                ended = active[0].id if active else ""
                self.consolidations.append((event.event_id, "UPDATE" if active else "NO-OP", ended))
                continue
            record = Record(
                id=self._emulator._new_id(), namespaces=[namespace], content=statement.text,
                timestamp=event.timestamp, strategy_id=strategy.strategy_id, metadata={},
                created_at=now, updated_at=now, expires_at=None, expiry_days=None,
                visible_from=now,
            )  # fmt: skip
            store.records[record.id] = record
            decision = "UPDATE" if active else "ADD"
            self.consolidations.append((event.event_id, decision, record.id))

    def _consolidate_varied(
        self, store: MemoryStore, strategy: Strategy, event: Event, namespace: str, now: float
    ) -> None:
        """The ``varied`` extraction: the conversation read as English, each record's topic
        what its own text reads as (ADD / UPDATE / NO-OP as in ``verbatim``)."""
        said = _conversation(event.payload)
        active = [
            r
            for r in store.records.values()
            if r.deleted_at is None
            and r.strategy_id == strategy.strategy_id
            and namespace in r.namespaces
        ]
        read = {r.id: standin_style.read(r.content)[:1] for r in active}
        known = [claim for claims in read.values() for claim in claims]
        claims = standin_style.read(said)
        for index, claim in enumerate(claims):
            context = [*known, *claims[:index], *claims[index + 1 :]]
            for memory in standin_style.write(
                claim, seed=self.seed, key=f"{said}#{index}", context=context, said=said
            ):
                stated = memory.claim
                alive = [r for r in active if r.deleted_at is None]
                on_topic = [r for r in alive if any(c.topic == stated.topic for c in read[r.id])]
                same = [
                    r
                    for r in on_topic
                    if any(c.value.casefold() == stated.value.casefold() for c in read[r.id])
                ]
                if not stated.negated and same:
                    self.consolidations.append((event.event_id, "NO-OP", same[0].id))
                    continue
                for record in on_topic:
                    record.deleted_at = now
                if stated.negated:
                    ended = on_topic[0].id if on_topic else ""
                    decision = "UPDATE" if on_topic else "NO-OP"
                    self.consolidations.append((event.event_id, decision, ended))
                    continue
                record = Record(
                    id=self._emulator._new_id(), namespaces=[namespace], content=memory.text,
                    timestamp=event.timestamp, strategy_id=strategy.strategy_id, metadata={},
                    created_at=now, updated_at=now, expires_at=None, expiry_days=None,
                    visible_from=now,
                )  # fmt: skip
                store.records[record.id] = record
                active.append(record)
                read[record.id] = standin_style.read(record.content)[:1]
                self.consolidations.append(
                    (event.event_id, "UPDATE" if on_topic else "ADD", record.id)
                )


# -- the emulator's stand-in extraction ---------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    text: str  # the memory record's text
    topic: tuple[str, str]  # (subject, relation): what the statement is about
    negated: bool = False  # "it is no longer true that ..."


_NEGATION = re.compile(r"^it is no longer true that (.+)$", re.IGNORECASE)
_REPLACING = re.compile(r"\s*\(replacing [^)]*\)$")
_PHRASES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str]]], ...] = (
    (re.compile(r"^(?P<s>.+?) is owned by (?P<v>.+)$", re.I), lambda m: (m["s"], "owner")),
    (re.compile(r"^(?P<v>.+?) is on call for (?P<s>.+)$", re.I), lambda m: (m["s"], "on call")),
    (re.compile(r"^(?P<s>.+?) is written in (?P<v>.+)$", re.I), lambda m: (m["s"], "language")),
    (re.compile(r"^(?P<s>\S+) depends on (?P<d>\S+) (?P<v>.+)$", re.I),
     lambda m: (m["s"], f"dependency {m['d']}")),
    (re.compile(r"^(?P<s>.+?) requires (?P<v>.+)$", re.I), lambda m: (m["s"], "requirement")),
    (re.compile(r"^the (?P<w>.+?) of (?P<s>.+?) is (?P<v>.+)$", re.I), lambda m: (m["s"], m["w"])),
    (re.compile(r"^(?P<s>.+?) (?:does not exist|exists)$", re.I), lambda m: (m["s"], "exists")),
)  # fmt: skip


def _conversation(payload: Sequence[dict[str, Any]]) -> str:
    texts = []
    for item in payload:
        conversational = item.get("conversational") if isinstance(item, dict) else None
        if isinstance(conversational, dict):
            texts.append(str((conversational.get("content") or {}).get("text", "")))
    return "\n".join(texts)


def _about(phrase: str) -> tuple[str, str] | None:
    for pattern, slot in _PHRASES:
        match = pattern.match(phrase)
        if match:
            subject, relation = slot(match)
            return subject.strip().lower(), relation.lower()
    return None


def extract(text: str) -> list[Statement]:
    """The statements of a conversation that the stand-in extraction can read."""
    out: list[Statement] = []
    for sentence in re.split(r"(?<=\.)\s+|;\s+|\n+", text):
        sentence = _REPLACING.sub("", sentence.strip().rstrip(".")).strip()
        if not sentence:
            continue
        negated = _NEGATION.match(sentence)
        about = _about(negated.group(1) if negated else sentence)
        if about is None:
            continue
        body = sentence if negated else f"{sentence[0].upper()}{sentence[1:]}"
        out.append(Statement(f"{body[0].upper()}{body[1:]}.", about, negated is not None))
    return out


def topic(text: str) -> tuple[str, str] | None:
    """What a record's text is about, as the extraction would file it."""
    found = extract(text)
    return found[0].topic if found else None


# -- helpers ------------------------------------------------------------------------------------


def _checked(value: Any, pattern: re.Pattern[str], limit: int, name: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= limit or not pattern.fullmatch(value):
        raise validation_error(f"{name} {value!r} does not match the {name} pattern")
    return value


def _check_payload(item: Any, where: str) -> None:
    if not isinstance(item, dict) or len(item) != 1:
        raise validation_error(f"{where} must hold exactly one of conversational, blob")
    if "blob" in item:
        return
    conversational = item.get("conversational")
    if not isinstance(conversational, dict):
        raise validation_error(f"{where}: unknown payload member {next(iter(item))!r}")
    if conversational.get("role") not in ROLES:
        raise validation_error(f"{where}.conversational.role must be one of {', '.join(ROLES)}")
    text = (conversational.get("content") or {}).get("text")
    if not isinstance(text, str) or not 1 <= len(text) <= MAX_EVENT_TEXT:
        raise validation_error(
            f"{where}.conversational.content.text must be 1 to {MAX_EVENT_TEXT} characters"
        )


def _page(
    body: dict[str, Any], what: str, items: list[dict[str, Any]], member: str
) -> tuple[int, dict[str, Any]]:
    import base64

    size = body.get("maxResults", 20)
    if not isinstance(size, int) or not 1 <= size <= MAX_PAGE:
        raise validation_error(f"maxResults must be between 1 and {MAX_PAGE}")
    start = 0
    token = body.get("nextToken")
    if token is not None:
        try:
            kind, offset = base64.urlsafe_b64decode(str(token).encode()).decode().split(":")
            start = int(offset)
        except ValueError:
            raise validation_error("nextToken is not valid") from None
        if kind != what:
            raise validation_error("nextToken belongs to another operation")
    out: dict[str, Any] = {member: items[start : start + size]}
    if start + size < len(items):
        out["nextToken"] = base64.urlsafe_b64encode(f"{what}:{start + size}".encode()).decode()
    return 200, out
