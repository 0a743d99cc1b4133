"""The evaluator: replays a timeline into a memory and scores every stage.

Over 800 lines because :class:`Replay` (some 560 of them) is one piece of bookkeeping: the
answers, scores, staleness heap and look-back it keeps change together at every step and
are shared by the full and incremental modes, which must give identical numbers; split, each
part would hold half of that invariant. The file is also one unit of the mutation run
(``[tool.mutmut]`` in pyproject.toml).

Stage *i* is the state after the *i*-th change point, scored at ``t_i``, the newest event
time replayed so far. Two modes give identical numbers:

* ``full`` asks every probe in P_i at every stage and sums their scores from scratch;
* ``incremental`` re-asks only probes whose answers may have changed (keys the memory reports
  as changed, through :class:`ChangeTracking`), re-scores only probes whose truth or freshness
  moved, and keeps the aggregate counts up to date by subtracting a probe's old share and
  adding its new one. Its cost per event does not grow with the number of probes.

A memory that cannot say what changed (no :class:`ChangeTracking`, or ``None`` from it) has
every probe re-asked at every stage; scoring stays incremental, so the numbers stay exact.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, overload, runtime_checkable

from healthd._collector import replay_collection
from healthd._packed import from_micros
from healthd.llm_usage import add_blocks, take_reader_block
from healthd.memory import (
    ChangeTracking,
    Memory,
    batch_events,
    llm_block,
    retrieval_fingerprint,
    upper_bound,
)
from healthd.memory.fingerprint import UNDECLARED, RetrievalFingerprint
from healthd.model import (
    RETRIEVAL_CHANGED,
    ChangeEvent,
    Fact,
    FactKey,
    Probe,
    RetrievedFact,
    ServedItem,
    Status,
    is_sweep,
    stored_by_slot,
)
from healthd.probes import ProbeSet
from healthd.reading import CachedReader, ItemReading, Reader, read_facts
from healthd.reading.default import DefaultReader
from healthd.replay_groups import sweep_groups, write_group
from healthd.scoring import (
    DEFAULT_FORGETTING_WINDOW,
    DEFAULT_WINDOWS,
    SIZE,
    Metrics,
    ProbeScore,
    Windows,
    add_cells,
    forgetting_check,
    metrics_from_counts,
    score_probe,
)
from healthd.truth import GroundTruth

STALE_COMPACT_MIN = 4096  # entries in the staleness heap before it is first compacted

Mode = Literal["full", "incremental"]
MODES: tuple[Mode, ...] = ("full", "incremental")


@stored_by_slot
@dataclass(frozen=True, slots=True)
class StageResult:
    index: int
    event_id: str
    timestamp: datetime
    counts: tuple[int, ...]  # the integer counts every metric is a ratio of

    @property
    def metrics(self) -> dict[str, Metrics]:
        """Built when read: most stages are only counted, never shown."""
        return metrics_from_counts(self.counts)


class Retrieved(Sequence[tuple[RetrievedFact, Status]]):
    """A probe's last answer, each fact with its status: read as (fact, status) pairs, kept
    as the answer's own tuple and one of statuses (a baseline that answers with every record
    it ever wrote would otherwise hold a pair per record while the report is built)."""

    __slots__ = ("_facts", "_statuses")

    def __init__(self, facts: tuple[RetrievedFact, ...], statuses: tuple[Status, ...]) -> None:
        self._facts = facts
        self._statuses = statuses

    def __len__(self) -> int:
        return len(self._facts)

    @overload
    def __getitem__(self, index: int) -> tuple[RetrievedFact, Status]: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[tuple[RetrievedFact, Status], ...]: ...

    def __getitem__(
        self, index: int | slice
    ) -> tuple[RetrievedFact, Status] | tuple[tuple[RetrievedFact, Status], ...]:
        if isinstance(index, slice):
            return tuple(zip(self._facts[index], self._statuses[index], strict=True))
        return self._facts[index], self._statuses[index]

    def __iter__(self) -> Iterator[tuple[RetrievedFact, Status]]:
        return zip(self._facts, self._statuses, strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True, slots=True)
class ProbeReport:
    probe: Probe
    expected: tuple[str, ...]
    retrieved: Sequence[tuple[RetrievedFact, Status]]
    expected_facts: tuple[Fact, ...] = ()  # ``expected`` with each fact's own domain
    served: tuple[ItemReading, ...] = ()  # the served items and how each was read


@dataclass(frozen=True, slots=True)
class ReadingCounts:
    """How the final answers' served items were read: counted, never silently dropped."""

    items: int = 0
    unread: int = 0
    metadata_mismatch: int = 0
    invented: int = 0  # items read with a value their key has never held
    irrelevant: int = 0  # unread items about another subject (retrieved but irrelevant)

    def as_dict(self) -> dict[str, int]:
        """``invented`` and ``irrelevant`` only where items were served: a memory that serves
        no text reports what it always did."""
        return {
            "items": self.items,
            "unread": self.unread,
            "metadata_mismatch": self.metadata_mismatch,
            **({"invented": self.invented, "irrelevant": self.irrelevant} if self.items else {}),
        }


@dataclass
class TargetResult:
    name: str
    kind: str
    stages: list[StageResult]
    metrics: dict[str, Metrics]
    probes: list[ProbeReport]
    events: int
    probe_queries: int
    at: datetime | None
    # The stage of the last event that was not a revalidation sweep, when sweeps came after
    # it: a dormant history re-stamped by a sweep is scored both before and after it.
    last_change: StageResult | None = None
    retrieval: RetrievalFingerprint = UNDECLARED
    reader: str = DefaultReader().label  # the reader's label (a replay's default reader)
    reading: ReadingCounts = ReadingCounts()
    # the shadow's raw events per expiry, for a memory that reports them (AgentCore events)
    event_expiry: dict[str, Any] | None = None
    # the LLM and embedding calls the replay caused (healthd.llm_usage's ``llm`` block)
    llm: dict[str, Any] | None = None
    # N replays' mean and spread per stage (healthd.repeats), when run more than once
    repeats: dict[str, Any] | None = None
    # what healthd decided for the product, when it did (healthd.memory.upper_bound): the
    # figures are then an upper bound of the product's
    upper_bound: str | None = None

    @property
    def retrieval_changed(self) -> int:
        """Served items written under another retrieval fingerprint, at the last stage."""
        return sum(retrieval_changed(f for f, _ in p.retrieved) for p in self.probes)


def retrieval_changed(served: Iterable[RetrievedFact]) -> int:
    """How many of ``served`` were written under another retrieval fingerprint: counted
    apart from stale facts, since their scores moved with the retrieval layer, not the
    memory."""
    count = 0  # (a loop: an answer has a fact or two, and a generator costs more than they)
    for fact in served:
        if RETRIEVAL_CHANGED in fact.flags:
            count += 1
    return count


@dataclass
class ReplayStats:
    events: int = 0
    probe_queries: int = 0


class Replay:
    """Replay state for one target: feed events one at a time, read results at any point."""

    def __init__(
        self,
        memory: Memory,
        probes: ProbeSet,
        *,
        mode: Mode = "incremental",
        windows: Windows = DEFAULT_WINDOWS,
        forgetting_window: int = DEFAULT_FORGETTING_WINDOW,
        reader: Reader | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self.memory = memory
        self.mode = mode
        self.windows = windows
        self.forgetting_window = forgetting_window
        self.truth = GroundTruth()
        self.stats = ReplayStats()
        self.at: datetime | None = None
        self._probe_set = probes
        self._tracker = memory if isinstance(memory, ChangeTracking) else None
        self._active: dict[str, Probe] = {}
        self._active_keys: set[FactKey] = set()
        # a resumed replay's may be read back probe by probe (:class:`ReadBack`)
        self._answers: MutableMapping[str, tuple[RetrievedFact, ...]] = {}
        self.reader: Reader = reader if reader is not None else DefaultReader()
        self._cached_reader = CachedReader(self.reader)
        # Served items per probe, the structured facts beside them, their readings, and how
        # many values the key had when they were read (a new value means reading again).
        self._served: dict[str, tuple[tuple[ServedItem, ...], tuple[RetrievedFact, ...]]] = {}
        self._readings: dict[str, tuple[ItemReading, ...]] = {}
        self._read_with: dict[str, int] = {}
        self._scores: MutableMapping[str, ProbeScore] = {}
        self._versions: dict[str, int] = {}
        # (instant, version, probe id): the score's own datetime (converting it to integer
        # microseconds costs more than comparing it)
        self._stale_heap: list[tuple[datetime, int, str]] = []
        self._stale_compact_at = STALE_COMPACT_MIN
        # The keys an answer serves besides its probe's own (a change to that one rescores
        # the probe anyway), and the other way round: most answers serve only their own.
        self._by_fact_key: dict[FactKey, set[str]] = {}
        self._answer_keys: dict[str, frozenset[FactKey]] = {}
        # resumed with _by_fact_key as stored: a stored answer's keys are taken when its
        # probe is next asked
        self._keys_stored = False
        # served items, over every answer, written under another retrieval fingerprint
        self._changed_served = 0
        # every count: the probes' scores' and the forgetting checks' (these also apart,
        # for counters and snapshot)
        self._counts = [0] * SIZE
        self._forget_counts = [0] * SIZE
        # _counts as a tuple, the counts of every stage until one of them changes (most
        # stages change no count)
        self._totals: tuple[int, ...] | None = None
        # Each value a stage has looked at was current then (in _live) or not (its bit, by
        # the value's rank in truth, in _gone: a few bytes a key, not a tuple a value);
        # values no stage has looked at yet are _pending.
        self._live: dict[FactKey, set[str]] = {}
        self._gone: dict[FactKey, int] = {}
        self._pending: dict[FactKey, set[str]] = {}
        # the keys whose part of that changed since forget_looks_changed (what a save of
        # it must compare; a cascade can reach every key and change few)
        self._looks_changed: set[FactKey] = set()
        # A resumed replay's stored view of those, per key, taken for a key when it is
        # first touched after the resume (a restart reads no key it does not need)
        self._unlooked: ValuesSeen | None = None
        self._looked: set[FactKey] = set()
        self._due: dict[int, list[Fact]] = {}
        self._index = 0
        self._scored = 0  # the index of the last stage scored (events after it are held)
        self._held_touched: set[FactKey] = set()
        self._held_keys: set[FactKey] = set()
        self._held_last = ""
        # bumped whenever an answer or a reading changes (only an asked, so active, probe has
        # either): what is counted over every answer is counted again only then (an idle
        # daemon run changes none)
        self._served_version = 0
        self._served_summary: tuple[int, ReadingCounts, int] | None = None

    # -- feeding --------------------------------------------------------------------------

    @overload
    def step(self, event: ChangeEvent) -> StageResult: ...

    @overload
    def step(
        self, event: ChangeEvent, *, score: bool, written: bool = False
    ) -> StageResult | None: ...

    def step(
        self, event: ChangeEvent, *, score: bool = True, written: bool = False
    ) -> StageResult | None:
        """Apply ``event`` and score the stage after it. ``score=False`` applies it to truth
        and the memory only (None): it is scored with the next event that is, as one batch
        of writes the memory is read after once (a memory that must be waited for, such as
        AgentCore's, waits once per batch). A forgetting check falling due inside a batch is
        made at the batch's stage. ``written``: the memory has been given the event already
        (a revalidation sweep's group, :func:`write_group`)."""
        # the memory first: an event it refuses (an LLM budget reached) leaves the replay
        # as it was, to be stepped again by the next run
        if not written:
            self.memory.apply(event)
        self._index += 1
        self.stats.events += 1
        touched = self.truth.apply(event)
        self._note_values(event)
        at = self.truth.latest
        assert at is not None
        self.at = at
        keys: Iterable[FactKey] = event.keys
        if not score or self._held_keys:
            self._held_touched |= touched
            self._held_keys.update(keys)
            self._held_last = event.id
            if not score:
                return None
            return self.flush()
        return self._score(event.id, touched, keys)

    def flush(self) -> StageResult | None:
        """Score the events held (``step(..., score=False)``) as one stage, that of the last
        of them; None when none is held."""
        if self._index == self._scored:
            return None
        touched, keys = self._held_touched, self._held_keys
        self._held_touched, self._held_keys = set(), set()
        return self._score(self._held_last, touched, keys)

    def _score(self, event_id: str, touched: set[FactKey], keys: Iterable[FactKey]) -> StageResult:
        at = self.at
        assert at is not None
        changed = self._tracker.changed_keys(at) if self._tracker is not None else None

        entering = [
            p
            for key in keys
            if key not in self._active_keys and self.truth.asserted(key)
            for p in self._enter(key)
        ]
        if self.mode == "full":
            ended = self._ended(self.truth.keys(), at)
            self._score_all(at)
        else:
            ended = self._ended(touched, at)
            self._score_changes(at, entering, changed, touched)
        for fact in ended:
            self._due.setdefault(self._index + self.forgetting_window, []).append(fact)
        for index in range(self._scored + 1, self._index + 1):
            for fact in self._due.pop(index, ()):
                probe = self._generated_probe(fact.key)
                answer = self._answers.get(probe.id, ()) if probe else ()
                self._totals = None
                for cell in forgetting_check(fact, answer, self.truth, at):
                    self._counts[cell] += 1
                    self._forget_counts[cell] += 1
        self._scored = self._index
        return StageResult(self._index, event_id, at, self._all_counts())

    @property
    def held(self) -> int:
        """Events applied and not scored yet (a batch in progress)."""
        return self._index - self._scored

    def metrics(self) -> dict[str, Metrics]:
        return metrics_from_counts(self._all_counts())

    def _all_counts(self) -> tuple[int, ...]:
        totals = self._totals
        if totals is None:
            totals = self._totals = tuple(self._counts)
        return totals

    def update_probes(self, probes: ProbeSet, keys: Iterable[FactKey] | None = None) -> list[Probe]:
        """Switch to a probe set that extends the current one; probes new to it whose key is
        already asserted enter P_i now (and are asked at the next stage's scoring). ``keys``:
        the only keys whose probes the new set changed, when the caller knows them."""
        self._probe_set = probes
        active = self._active_keys if keys is None else self._active_keys.intersection(keys)
        fresh = [p for key in active for p in probes.for_key(key) if p.id not in self._active]
        for probe in fresh:
            self._active[probe.id] = probe
        if fresh and self.at is not None:
            for probe in fresh:
                self._ask(probe, self.at)
                self._rescore(probe, self.at)
        return fresh

    # -- persistence ----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """What a restart needs besides the events applied and the memory itself: the
        counters that cannot be derived again (forgetting checks read past answers)."""
        return {
            "index": self._index,
            "events": self.stats.events,
            "probe_queries": self.stats.probe_queries,
            "forget_counts": list(self._forget_counts),
            "due": {
                str(stage): [[f.subject, f.predicate, f.value, f.domain] for f in facts]
                for stage, facts in self._due.items()
            },
            "was_current": [
                [k.subject, k.predicate, v, c] for (k, v), c in self.was_current.items()
            ],
        }

    @classmethod
    def restore(
        cls,
        memory: Memory,
        probes: ProbeSet,
        events: Iterable[ChangeEvent],
        snapshot: dict[str, Any],
        **options: Any,
    ) -> Replay:
        """Rebuild a replay whose ``events`` were already applied to ``memory`` (a persistent
        shadow): truth is folded again without touching the memory, then every active probe
        is asked once so the aggregates match the memory as it is now."""
        replay = cls(memory, probes, **options)
        for event in events:
            replay.truth.apply(event)
        replay._index = replay._scored = int(snapshot["index"])
        replay.stats = ReplayStats(int(snapshot["events"]), int(snapshot["probe_queries"]))
        replay._forget_counts = [int(c) for c in snapshot["forget_counts"]]
        replay._counts = list(replay._forget_counts)
        replay._totals = None
        replay._due = {
            int(stage): [Fact(*f) for f in facts] for stage, facts in snapshot["due"].items()
        }
        seen: dict[FactKey, dict[str, bool]] = {}
        for s, p, v, c in snapshot["was_current"]:
            seen.setdefault(FactKey(s, p), {})[v] = bool(c)
        replay._look_back(seen)
        replay.at = replay.truth.latest
        for key in list(replay.truth.keys()):
            if replay.truth.asserted(key):
                replay._enter(key)
        if replay.at is not None:
            if replay._tracker is not None:
                replay._tracker.changed_keys(replay.at)
            for probe in replay._active.values():
                replay._ask(probe, replay.at)
                replay._rescore(probe, replay.at)
        return replay

    # -- results --------------------------------------------------------------------------

    def report(self) -> list[ProbeReport]:
        at = self.at
        out: list[ProbeReport] = []
        if at is None:
            return out
        # In key order, so a replay restored after a restart reports exactly what one that
        # ran through reports (the order in which probes entered P_i is not kept).
        _read_all(self._answers)
        status_of = self.truth.status_of
        for probe in sorted(self._active.values(), key=lambda p: (p.subject, p.predicate, p.id)):
            facts = self._answers.get(probe.id, ())
            current = tuple(self.truth.current(probe.key, at))
            retrieved = Retrieved(facts, tuple([status_of(f.key, f.value, at) for f in facts]))
            out.append(
                ProbeReport(
                    probe,
                    tuple(f.value for f in current),
                    retrieved,
                    current,
                    self._readings.get(probe.id, ()),
                )
            )
        return out

    def reading_counts(self) -> ReadingCounts:
        """Over every active probe's last answer."""
        return self._summary()[1]

    def retrieval_changed_items(self) -> int:
        """Served items, over every last answer, written under another retrieval
        fingerprint."""
        return self._summary()[2]

    def _summary(self) -> tuple[int, ReadingCounts, int]:
        summary = self._served_summary
        if summary is None or summary[0] != self._served_version:
            items = unread = mismatch = invented = irrelevant = 0
            for pid in self._active:
                for reading in self._readings.get(pid, ()):
                    items += 1
                    unread += reading.reading.unread
                    mismatch += reading.mismatch
                    invented += bool(reading.reading.other)
                    irrelevant += reading.reading.irrelevant
            changed = self._changed_served
            summary = self._served_summary = (
                self._served_version,
                ReadingCounts(items, unread, mismatch, invented, irrelevant),
                changed,
            )
        return summary

    @property
    def active_probes(self) -> int:
        return len(self._active)

    # -- internals ------------------------------------------------------------------------

    def _enter(self, key: FactKey) -> tuple[Probe, ...]:
        self._active_keys.add(key)
        probes = self._probe_set.for_key(key)
        for probe in probes:
            self._active[probe.id] = probe
        return probes

    def _generated_probe(self, key: FactKey) -> Probe | None:
        probes = self._probe_set.for_key(key)
        for probe in probes:
            if probe.origin == "generated":
                return probe
        return probes[0] if probes else None

    def _ended(self, keys: Iterable[FactKey], at: datetime) -> list[Fact]:
        """Facts of ``keys`` that stopped being current at this stage. Only values that can
        have changed are looked at: those current before, current now, or never seen."""
        out = []
        truth = self.truth
        for key in keys:
            if self._unlooked is not None:
                self._look(key)
            live = self._live.get(key)
            pending = self._pending.get(key)
            held = truth.open_values(key)
            if live is not None and not pending and live == held:
                continue  # what was current still is, and nothing else is (a revalidation)
            candidates = set(held)
            if live:
                candidates |= live
            if pending:
                candidates |= pending
            if not candidates:
                continue
            rank = truth.value_rank(key)
            gone = was_gone = self._gone.get(key, 0)
            for value in sorted(candidates, key=rank):
                status, domain = truth.state_of(key, value, at)
                if domain is None:  # unknown
                    continue
                if pending is not None:
                    pending.discard(value)
                bit = 1 << rank(value)
                if status == "current":
                    if live is None:
                        live = self._live[key] = set()
                    if gone & bit or value not in live:
                        self._looks_changed.add(key)
                    gone &= ~bit
                    live.add(value)
                elif not gone & bit:  # current when last looked at, or never looked at
                    self._looks_changed.add(key)
                    gone |= bit
                    if live is not None:
                        live.discard(value)
                    out.append(Fact(key.subject, key.predicate, value, domain))
            if gone != was_gone:
                if gone:
                    self._gone[key] = gone
                else:
                    del self._gone[key]
            if pending is not None and not pending:
                del self._pending[key]  # most keys: nothing left unseen, no set kept
            if live is not None and not live:
                del self._live[key]
        return out

    def _note_values(self, event: ChangeEvent) -> None:
        """Values an event gives a key that no stage has looked at yet."""
        facts = (event.fact,) if event.previous is None else (event.previous, event.fact)
        truth = self.truth
        for fact in facts:
            key, value = fact.key, fact.value
            if self._unlooked is not None:
                self._look(key)
            if (
                truth.has_value(key, value)
                and value not in self._live.get(key, ())
                and not self._gone.get(key, 0) >> truth.value_rank(key)(value) & 1
            ):
                self._pending.setdefault(key, set()).add(value)

    def _ask(self, probe: Probe, at: datetime) -> None:
        self.stats.probe_queries += 1
        answer = self.memory.answer(probe, at)
        facts = answer.facts
        if answer.items or probe.id in self._served:
            served = self._served.get(probe.id)
            if (
                served is not None
                and served == (answer.items, facts)
                and self._read_with.get(probe.id) == len(self.truth.values(probe.key))
            ):
                facts = self._answers[probe.id]  # the same items, read as before
            elif answer.items:
                self._served[probe.id] = (answer.items, facts)
                facts = self._read(probe, facts, answer.items)
            else:
                del self._served[probe.id]
                self._readings.pop(probe.id, None)
                self._served_version += 1
        if self._keys_stored and probe.id not in self._answer_keys:
            stored = self._answers.get(probe.id)
            if stored is not None:  # as the stored index holds them
                self._answer_keys[probe.id] = _other_keys(probe.key, stored)
        if probe.id in self._answer_keys and facts == self._answers.get(probe.id):
            return  # the same answer: the same keys (most re-asks)
        keys = _other_keys(probe.key, facts)
        old = self._answer_keys.get(probe.id)
        if keys != old:
            for fact_key in old - keys if old else ():
                holders = self._by_fact_key.get(fact_key)
                if holders is not None:
                    holders.discard(probe.id)
                    if not holders:
                        del self._by_fact_key[fact_key]
            for fact_key in keys - old if old else keys:
                self._by_fact_key.setdefault(fact_key, set()).add(probe.id)
            self._answer_keys[probe.id] = keys
        self._set_answer(probe.id, facts)

    def _set_answer(self, probe_id: str, facts: tuple[RetrievedFact, ...]) -> None:
        self._changed_served += retrieval_changed(facts) - retrieval_changed(
            self._answers.get(probe_id, ())
        )
        self._answers[probe_id] = facts
        self._served_version += 1

    def _read(
        self, probe: Probe, facts: tuple[RetrievedFact, ...], items: tuple[ServedItem, ...]
    ) -> tuple[RetrievedFact, ...]:
        """The structured facts plus the facts the reader finds in the served items' text.
        A value the text negates or presents as past is not served as current, and an item
        read as nothing adds nothing (both shown in the report)."""
        if not items:
            return facts
        held = self.truth.values(probe.key)
        self._read_with[probe.id] = len(held)
        readings, read = read_facts(
            self._cached_reader, probe.key, held, items, domain=probe.domain
        )
        self._readings[probe.id] = readings
        self._served_version += 1
        return facts + read

    def _reread(self, probe: Probe) -> None:
        """The key has gained a value since its served items were read: read them again."""
        served = self._served.get(probe.id)
        if served is None or self._read_with.get(probe.id) == len(self.truth.values(probe.key)):
            return
        self._set_answer(probe.id, self._read(probe, served[1], served[0]))

    def _rescore(self, probe: Probe, at: datetime) -> None:
        pid = probe.id
        if pid in self._served:
            self._reread(probe)
        new = score_probe(probe, self._answers.get(pid, ()), self.truth, at, self.windows)
        old = self._scores.get(pid)
        if old is None or old.cells != new.cells:
            self._totals = None
            counts = self._counts
            if old is not None:
                for index, amount in old.cells:
                    counts[index] -= amount
            for index, amount in new.cells:
                counts[index] += amount
        self._scores[pid] = new
        if old is not None and old.stale_after == new.stale_after:
            return  # its entry in the staleness heap still stands (a popped one moved it)
        version = self._versions.get(pid, 0) + 1  # 0: a resumed score's
        self._versions[pid] = version
        if new.stale_after is not None:
            heap = self._stale_heap
            heapq.heappush(heap, (new.stale_after, version, pid))
            if len(heap) >= self._stale_compact_at:
                self._compact_stale_heap()

    def _compact_stale_heap(self) -> None:
        """Drop the instants of scores since replaced: a probe re-scored often would
        otherwise leave one entry per re-scoring until its time came."""
        versions = self._versions
        heap = [entry for entry in self._stale_heap if versions.get(entry[2], 0) == entry[1]]
        heapq.heapify(heap)
        self._stale_heap = heap
        self._stale_compact_at = max(STALE_COMPACT_MIN, 2 * len(heap))

    def _score_all(self, at: datetime) -> None:
        self._totals = None
        self._counts = list(self._forget_counts)
        self._scores.clear()
        self._by_fact_key.clear()
        self._answer_keys.clear()
        for probe in self._active.values():
            self._ask(probe, at)
            add_cells(
                self._counts,
                score_probe(probe, self._answers[probe.id], self.truth, at, self.windows).cells,
            )

    def _score_changes(
        self,
        at: datetime,
        entering: Sequence[Probe],
        changed: set[FactKey] | None,
        touched: set[FactKey],
    ) -> None:
        ask: dict[str, Probe] = {p.id: p for p in entering}
        if changed is None:  # the memory cannot say what changed: ask everything again
            ask.update(self._active)
        else:
            for key in changed:
                if key in self._active_keys:
                    for probe in self._probe_set.for_key(key):
                        ask[probe.id] = probe
        rescore: dict[str, Probe] = dict(ask)
        for key in touched:
            if key in self._active_keys:
                for probe in self._probe_set.for_key(key):
                    rescore[probe.id] = probe
            for probe_id in self._by_fact_key.get(key, ()):
                rescore[probe_id] = self._active[probe_id]
        heap = self._stale_heap
        while heap and heap[0][0] < at:
            _, version, probe_id = heapq.heappop(heap)
            if self._versions.get(probe_id, 0) == version:
                rescore[probe_id] = self._active[probe_id]
        for probe in ask.values():
            self._ask(probe, at)
        for probe in rescore.values():
            self._rescore(probe, at)

    # -- the replay's state, out and back in (a restart without the events) ---------------

    def counters(self) -> dict[str, Any]:
        """What :meth:`resume` needs besides truth, the probes' answers and scores and
        which values were current: small, whatever the history's length."""
        return {
            "index": self._index,
            "events": self.stats.events,
            "probe_queries": self.stats.probe_queries,
            "counts": [c - f for c, f in zip(self._counts, self._forget_counts, strict=True)],
            "retrieval_changed": self._changed_served,
            "forget_counts": list(self._forget_counts),
            "due": {
                str(stage): [[f.subject, f.predicate, f.value, f.domain] for f in facts]
                for stage, facts in self._due.items()
            },
        }

    @property
    def answers(self) -> Mapping[str, tuple[RetrievedFact, ...]]:
        """Each asked probe's last answer (read only)."""
        return self._answers

    @property
    def scores(self) -> Mapping[str, ProbeScore]:
        """Each scored probe's share of the counts (read only; empty in ``full`` mode)."""
        return self._scores

    @property
    def answer_keys(self) -> Mapping[str, frozenset[FactKey]]:
        """Per asked probe, the keys its answer serves besides its own (read only): a
        resumed replay's for the probes asked since."""
        return self._answer_keys

    @property
    def was_current(self) -> Mapping[tuple[FactKey, str], bool]:
        """Per (key, value) a stage has looked at: whether it was current (a live view)."""
        return _WasCurrent(self)

    @property
    def looks_changed(self) -> AbstractSet[FactKey]:
        """The keys whose part of :attr:`was_current` changed since
        :meth:`forget_looks_changed` (or since the replay began, or resumed)."""
        return self._looks_changed

    def forget_looks_changed(self) -> None:
        self._looks_changed.clear()

    def looked_at(self, key: FactKey) -> dict[str, bool]:
        """What :attr:`was_current` holds for one key: per value a stage has looked at,
        whether it was current (a key's at once, not a lookup per value)."""
        if self._unlooked is not None:
            self._look(key)
        live = self._live.get(key, ())
        gone = self._gone.get(key, 0)
        if not live and not gone:
            return {}
        truth = self.truth
        rank = truth.value_rank(key) if gone else None
        seen: dict[str, bool] = {}
        for value in truth.values(key):
            if value in live:
                seen[value] = True
            elif rank is not None and gone >> rank(value) & 1:
                seen[value] = False
        return seen

    def _look_back(self, was_current: ValuesSeen) -> None:
        """Take which values stages looked at, and what they saw, from an exported map (per
        key: per value, whether it was current), each key's when the key is first touched
        (the map is only asked for those)."""
        self._unlooked = was_current
        self._looked = set()

    def _look(self, key: FactKey) -> None:
        """Take the key's part of the map :meth:`_look_back` was given, once."""
        assert self._unlooked is not None
        if key in self._looked:
            return
        self._looked.add(key)
        truth = self.truth
        looked_at = self._unlooked.get(key) or {}
        gone = 0
        for value in truth.values(key):
            seen = looked_at.get(value)
            if seen is None:
                self._pending.setdefault(key, set()).add(value)
            elif seen:
                self._live.setdefault(key, set()).add(value)
            else:
                gone |= 1 << truth.value_rank(key)(value)
        if gone:
            self._gone[key] = gone

    def _look_all(self) -> None:
        """Take every key's part of the map :meth:`_look_back` was given (a caller reads
        them all)."""
        if self._unlooked is not None:
            for key in list(self.truth.keys()):
                self._look(key)
            self._unlooked, self._looked = None, set()

    @classmethod
    def resume(
        cls,
        memory: Memory,
        probes: ProbeSet,
        truth: GroundTruth,
        counters: dict[str, Any],
        was_current: ValuesSeen,
        answers: MutableMapping[str, tuple[RetrievedFact, ...]],
        scores: MutableMapping[str, ProbeScore],
        *,
        served_keys: dict[FactKey, set[str]] | None = None,
        stale: Iterable[tuple[int, str]] | None = None,
        **options: Any,
    ) -> Replay:
        """A replay from the state a replay over the same events exported (its
        :meth:`counters`, :attr:`was_current` per key, :attr:`answers`, :attr:`scores` and
        truth), whose memory is as it was then: nothing is replayed or asked again.

        With ``served_keys`` (per key, the probes whose answers serve it besides their own,
        as :attr:`answer_keys` held them), ``stale`` (each score's ``stale_after`` in
        microseconds, by probe id) and counters that hold ``retrieval_changed`` (those of
        a replay that counted it), an incremental replay reads neither ``answers`` nor
        ``scores`` whole: a probe's are looked up when a stage first needs them."""
        replay = cls(memory, probes, **options)
        replay.truth = truth
        replay._index = replay._scored = int(counters["index"])
        replay.stats = ReplayStats(int(counters["events"]), int(counters["probe_queries"]))
        replay._forget_counts = [int(c) for c in counters["forget_counts"]]
        replay._counts = [
            int(c) + f for c, f in zip(counters["counts"], replay._forget_counts, strict=True)
        ]
        replay._totals = None
        replay._due = {
            int(stage): [Fact(*f) for f in facts] for stage, facts in counters["due"].items()
        }
        replay._look_back(was_current)
        keys = list(truth.keys())
        replay.at = truth.latest
        for key in keys:
            if truth.asserted(key):
                replay._enter(key)
        replay._answers = answers
        replay._scores = scores
        lazy = (
            served_keys is not None
            and stale is not None
            and "retrieval_changed" in counters
            and replay.mode == "incremental"
        )
        if lazy:
            assert served_keys is not None and stale is not None
            replay._keys_stored = True
            replay._by_fact_key = served_keys
            replay._changed_served = int(counters["retrieval_changed"])
            # version 0: the stored score's, until the probe is scored again
            replay._stale_heap = [(from_micros(micros), 0, probe_id) for micros, probe_id in stale]
        else:
            for probe_id, facts in answers.items():
                probe = replay._active.get(probe_id)
                answer_keys = _other_keys(probe.key if probe else None, facts)
                replay._answer_keys[probe_id] = answer_keys
                for fact_key in answer_keys:
                    replay._by_fact_key.setdefault(fact_key, set()).add(probe_id)
                replay._changed_served += retrieval_changed(facts)
            for probe_id, score in scores.items():
                if score.stale_after is not None:
                    replay._stale_heap.append((score.stale_after, 0, probe_id))
        heapq.heapify(replay._stale_heap)
        if len(replay._stale_heap) >= replay._stale_compact_at:
            replay._stale_compact_at = 2 * len(replay._stale_heap)
        if replay.at is not None and replay._tracker is not None:
            replay._tracker.changed_keys(replay.at)
        return replay


def evaluate(
    events: Iterable[ChangeEvent],
    memory: Memory,
    probes: ProbeSet,
    *,
    name: str,
    kind: str,
    mode: Mode = "incremental",
    windows: Windows = DEFAULT_WINDOWS,
    forgetting_window: int = DEFAULT_FORGETTING_WINDOW,
    keep_stages: bool = True,
    on_stage: Callable[[StageResult], None] | None = None,
    reader: Reader | None = None,
) -> TargetResult:
    """Replay ``events`` (in arrival order) into a freshly reset ``memory``."""
    memory.reset()
    replay = Replay(
        memory,
        probes,
        mode=mode,
        windows=windows,
        forgetting_window=forgetting_window,
        reader=reader,
    )
    stages: list[StageResult] = []
    last_change: StageResult | None = None
    swept = False
    batch = batch_events(memory)
    in_batch = 0
    changed = False  # the batch holds a real change (not only revalidation sweeps)
    with replay_collection():
        for group in sweep_groups(events, memory):
            written = write_group(memory, group)
            for event in group:
                in_batch += 1
                changed = changed or not is_sweep(event)
                score = in_batch >= batch and event is group[-1]
                stage = replay.step(event, score=score, written=written)
                if stage is None:
                    continue
                if changed:
                    last_change, swept = stage, False
                else:
                    swept = True
                in_batch, changed = 0, False
                if keep_stages:
                    stages.append(stage)
                if on_stage is not None:
                    on_stage(stage)
        stage = replay.flush()  # the last batch, however short
        if stage is not None:
            if changed:
                last_change, swept = stage, False
            else:
                swept = True
            if keep_stages:
                stages.append(stage)
            if on_stage is not None:
                on_stage(stage)
    return TargetResult(
        name=name,
        kind=kind,
        stages=stages,
        metrics=replay.metrics(),
        probes=replay.report(),
        events=replay.stats.events,
        probe_queries=replay.stats.probe_queries,
        at=replay.at,
        last_change=last_change if swept else None,
        retrieval=retrieval_fingerprint(memory, replay.reader.label),
        reader=replay.reader.label,
        reading=replay.reading_counts(),
        llm=add_blocks(take_reader_block(replay.reader), llm_block(memory, kind)),
        upper_bound=upper_bound(memory),
    )


_NO_KEYS: frozenset[FactKey] = frozenset()


def _other_keys(own: FactKey | None, facts: Iterable[RetrievedFact]) -> frozenset[FactKey]:
    """The keys of ``facts`` other than ``own``."""
    if own is None:
        return frozenset([FactKey(f.subject, f.predicate) for f in facts])
    subject, predicate = own
    keys = [
        FactKey(f.subject, f.predicate)
        for f in facts
        if f.predicate != predicate or f.subject != subject
    ]
    return frozenset(keys) if keys else _NO_KEYS


@runtime_checkable
class ReadBack(Protocol):
    """A mapping read back from storage entry by entry, as asked for; :meth:`read_all`
    reads the rest at once (before a caller goes through every entry)."""

    def read_all(self) -> None: ...


def _read_all(mapping: object) -> None:
    if isinstance(mapping, ReadBack):
        mapping.read_all()


class ValuesSeen(Protocol):
    """Per key, per value a stage looked at, whether it was current (a resumed replay asks
    only for the keys it touches)."""

    def get(self, key: FactKey, /) -> Mapping[str, bool] | None: ...


class _WasCurrent(Mapping[tuple[FactKey, str], bool]):
    """A replay's values a stage has looked at, per (key, value): whether it was current."""

    __slots__ = ("_replay",)

    def __init__(self, replay: Replay) -> None:
        self._replay = replay

    def __getitem__(self, item: tuple[FactKey, str]) -> bool:
        key, value = item
        replay = self._replay
        if replay._unlooked is not None:
            replay._look(key)
        if value in replay._live.get(key, ()):
            return True
        gone = replay._gone.get(key, 0)
        truth = replay.truth
        if gone and truth.has_value(key, value) and gone >> truth.value_rank(key)(value) & 1:
            return False
        raise KeyError(item)

    def __iter__(self) -> Iterator[tuple[FactKey, str]]:
        replay = self._replay
        replay._look_all()
        for key, values in replay._live.items():
            for value in values:
                yield key, value
        for key, gone in replay._gone.items():
            for rank, value in enumerate(replay.truth.values(key)):
                if gone >> rank & 1:
                    yield key, value

    def __len__(self) -> int:
        replay = self._replay
        replay._look_all()
        live = sum(len(values) for values in replay._live.values())
        return live + sum(gone.bit_count() for gone in replay._gone.values())
