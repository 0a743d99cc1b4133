"""Incremental evaluation is an optimisation: on any timeline it gives the numbers full does."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_timelines import EXAMPLES, PREDICATES, SHORT_TTL, timelines
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.daemon.replay_store import ReplayStore
from healthd.evaluator import Replay, TargetResult, evaluate
from healthd.exporters.report import report_json
from healthd.memory import Memory, llm_block
from healthd.memory.naive import NaiveMemory
from healthd.memory.reference import MetadataFilter, ReferenceMemory
from healthd.model import Answer, FactKey, Probe, ServedItem
from healthd.probes import KeyCatalog, ProbeSet, build_probe_set
from healthd.reading import Reading

# SQLite shadows on a RAM disk where there is one: a restart test needs a file, not fsyncs.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None

EXTRA_PROBES = [
    Probe("extra-a-lang", "Is a written in 1 or 2?", "a", "lang", "tech"),
    Probe("extra-b-mixed", "What about b, 1 or 3?", "b", "mixed", "decision"),
    Probe("extra-c-gone", "Who owns c's pipeline?", "c", "pipeline", "ownership"),
]


class SpillingMemory(ReferenceMemory):
    """Answers a probe with every record of its subject, other keys' facts included, and
    says so in ``changed_keys``: a change to one key may change the answers about another."""

    def answer(self, probe: Probe, at: datetime) -> Answer:
        facts = self.search(
            "", at=at, k=self.top_k, filters=[MetadataFilter("subject", "equals", probe.subject)]
        )
        return Answer(probe.id, tuple(facts))

    def changed_keys(self, at: datetime) -> set[FactKey]:
        subjects = {k.subject for k in super().changed_keys(at)}
        return {FactKey(s, p) for s in subjects for p in [*PREDICATES, "pipeline"]}


class TextServingMemory(ReferenceMemory):
    """Serves its records of the probe's key as text, ``v=<value>``, and beside them always
    ``v=3``: a value the key has never held (read as invented) until it holds 3 (then read
    as asserted, the item read again when the key gains it)."""

    def answer(self, probe: Probe, at: datetime) -> Answer:
        items = tuple(
            ServedItem(f"v={f.value}", f.record_id, f.written_at, f.validated_at, flags=f.flags)
            for f in super().answer(probe, at).facts
            if f.key == probe.key
        )
        return Answer(probe.id, (), (*items, ServedItem("v=3", "said", day(0))))


class TokenReader:
    """Reads ``v=<value>``: a value the key has held is asserted, any other is ``other``."""

    name, version, label = "token", "1", "token-1"

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        value = text.removeprefix("v=")
        return Reading(asserted=(value,)) if value in values else Reading(other=(value,))


READER = TokenReader()


class CompactingMemory(ReferenceMemory):
    """Compacts its expiry heap after every push, not once it has doubled past thousands."""

    def _push_deadlines(self, *args: Any) -> None:
        super()._push_deadlines(*args)  # type: ignore[arg-type]
        self._compact_deadlines()


def _reference(**options: object) -> Callable[[str], Memory]:
    return lambda path: ReferenceMemory(path=path, **options)  # type: ignore[arg-type]


MEMORIES: dict[str, Callable[[str], Memory]] = {
    "naive": lambda path: NaiveMemory(),
    "reference short ttl": _reference(ttl_windows=SHORT_TTL, grace=0.5),
    "reference no supersession": _reference(ttl_windows=SHORT_TTL, supersession=False),
    "reference no propagation top 1": _reference(ttl_windows=SHORT_TTL, propagation=False, top_k=1),
    "reference no supersession top 1": _reference(
        ttl_windows=SHORT_TTL, supersession=False, top_k=1
    ),
    "reference no ttl": _reference(ttl=False),
    "reference compacting deadlines": lambda path: CompactingMemory(
        path=path, ttl_windows=SHORT_TTL, grace=0.5
    ),
    "spilling": lambda path: SpillingMemory(path=path, ttl_windows=SHORT_TTL, grace=0.5, top_k=8),
    "text, inventing": lambda path: TextServingMemory(path=path, ttl_windows=SHORT_TTL, grace=0.5),
}


def report(result: TargetResult, probes: ProbeSet) -> dict[str, Any]:
    return report_json([result], probes.version, len(probes))


def scored(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what a restored replay does not keep: how the served items were
    read (it reads them when it next asks; the facts read from them are kept), and the
    reader's name beside them."""
    out = {**report, "targets": []}
    for target in report["targets"]:
        target = {k: v for k, v in target.items() if k not in ("reader", "reading", "retrieval")}
        probes = [
            {
                **{k: v for k, v in p.items() if k != "served"},
                "retrieved": [{k: v for k, v in f.items() if k != "text"} for f in p["retrieved"]],
            }
            for p in target["final"]["probes"]
        ]
        out["targets"].append({**target, "final": {**target["final"], "probes": probes}})
    return out


def straight(events, make, mode, window, path):
    probes = build_probe_set(events, EXTRA_PROBES)
    result = evaluate(
        events,
        make(path),
        probes,
        name="t",
        kind="t",
        mode=mode,
        windows=SHORT_TTL,
        forgetting_window=window,
        reader=READER,
    )
    return report(result, probes), result.probe_queries


def split(events, make, window, cut, grow, path):
    """The daemon's path: a first run replays ``events[:cut]``; the daemon restarts on the
    same shadow from the snapshot; a second run replays up to ``grow``, a third the rest.
    Each run's probe set covers every event known when it starts, as the daemon builds it."""
    options: dict[str, Any] = {
        "mode": "incremental",
        "windows": SHORT_TTL,
        "forgetting_window": window,
        "reader": READER,
    }
    memory = make(path)
    memory.reset()
    replay = Replay(memory, build_probe_set(events[:cut], EXTRA_PROBES), **options)
    stages = [replay.step(e) for e in events[:cut]]
    snapshot = replay.snapshot()
    if isinstance(memory, ReferenceMemory):  # a persistent shadow: reopen it, as a restart does
        memory.close()
        memory = make(path)
    replay = Replay.restore(
        memory, build_probe_set(events[:grow], EXTRA_PROBES), events[:cut], snapshot, **options
    )
    stages += [replay.step(e) for e in events[cut:grow]]
    probes = build_probe_set(events, EXTRA_PROBES)
    replay.update_probes(probes)
    stages += [replay.step(e) for e in events[grow:]]
    result = TargetResult(
        "t",
        "t",
        stages,
        replay.metrics(),
        replay.report(),
        len(events),
        0,
        replay.at,
        llm=llm_block(memory, "t"),  # as evaluate gives it
    )
    return report(result, probes)


def served_keys_stored(memory) -> set[tuple[str, str, str]]:
    """The stored index of keys each answer serves besides its probe's own."""
    return set(memory.state_db().execute("SELECT * FROM healthd_served_keys"))


def served_keys_of_stored_answers(memory, probes: ProbeSet) -> set[tuple[str, str, str]]:
    """That index as the stored answers give it."""
    own = {probe.id: probe.key for probe in probes}
    rows = memory.state_db().execute("SELECT probe_id, answer FROM healthd_probes")
    return {
        (probe_id, subject, predicate)
        for probe_id, answer in rows
        if answer is not None
        for subject, predicate, *_ in json.loads(answer)
        if (subject, predicate) != own[probe_id]
    }


def split_stored(events, make, window, cut, grow, every, path):
    """``split`` as the daemon does it with a persistent shadow: the replay's state is saved
    beside the shadow at each commit (every ``every`` events) and read back on restart,
    without the events; the probe set then grows by the keys new events added."""
    options: dict[str, Any] = {
        "mode": "incremental",
        "windows": SHORT_TTL,
        "forgetting_window": window,
        "reader": READER,
    }
    memory = make(path)
    memory.reset()
    store = ReplayStore(memory)
    store.reset()
    memory.batch_writes()
    replay = Replay(memory, build_probe_set(events[:cut], EXTRA_PROBES), **options)
    stages = []
    checkpoint = {"replay": store.save(replay)}
    memory.commit(checkpoint)
    for n, event in enumerate(events[:cut], 1):
        stages.append(replay.step(event))
        store.note(event)
        if n % every == 0 or n == cut:
            checkpoint = {"replay": store.save(replay)}
            memory.commit(checkpoint)
    ran = (dict(replay.was_current), dict(replay.answers), dict(replay.scores), replay.counters())
    memory.close()
    memory = make(path)
    catalog = KeyCatalog(events[:grow])

    def load(store=None):
        return (store or ReplayStore(memory)).load(
            memory, catalog.probe_set(EXTRA_PROBES), memory.checkpoint()["replay"], **options
        )

    read = load()  # every key's state read back, to compare
    assert (read.was_current, read.answers, read.scores, read.counters()) == ran
    asked = load().was_current  # each value's read back when asked for
    assert all(asked[key_value] == current for key_value, current in ran[0].items())
    store = ReplayStore(memory)
    replay = load(store)  # a key's state read back when a step first touches it
    memory.batch_writes()
    for event in events[cut:grow]:
        stages.append(replay.step(event))
        store.note(event)
    memory.commit({"replay": store.save(replay)})  # saved after a read-back, and again read
    looked = dict(replay.was_current)
    memory.close()
    memory = make(path)
    assert served_keys_stored(memory) == served_keys_of_stored_answers(
        memory, catalog.probe_set(EXTRA_PROBES)
    )
    replay = load()
    assert dict(replay.was_current) == looked  # the save wrote every value whose look changed
    new_keys = catalog.add(events[grow:])
    probes = catalog.probe_set(EXTRA_PROBES)
    replay.update_probes(probes, new_keys)
    stages += [replay.step(e) for e in events[grow:]]
    result = TargetResult(
        "t",
        "t",
        stages,
        replay.metrics(),
        replay.report(),
        len(events),
        0,
        replay.at,
        llm=llm_block(memory, "t"),  # as evaluate gives it
    )
    memory.close()
    return report(result, probes)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    events=timelines(),
    memory=st.sampled_from(sorted(MEMORIES)),
    window=st.integers(min_value=1, max_value=3),
    data=st.data(),
)
def test_incremental_equals_full_on_random_timelines(events, memory, window, data):
    make = MEMORIES[memory]
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        full, full_queries = straight(events, make, "full", window, f"{tmp}/full.db")
        incremental, inc_queries = straight(events, make, "incremental", window, f"{tmp}/inc.db")
        assert incremental == full
        assert inc_queries <= full_queries
        cut = data.draw(st.integers(0, len(events)), label="restart after")
        grow = data.draw(st.integers(cut, len(events)), label="probe set grows at")
        assert scored(split(events, make, window, cut, grow, f"{tmp}/split.db")) == scored(full)
        if memory != "naive":  # a persistent shadow: restored from its own stored state
            every = data.draw(st.integers(1, 8), label="commit every")
            stored = split_stored(events, make, window, cut, grow, every, f"{tmp}/stored.db")
            assert scored(stored) == scored(full)


EXISTS, LANG = fact("svc", "exists", "true"), fact("svc", "lang", "go")
LANG_NEEDS_EXISTS = [added("e1", 0, EXISTS), added("e2", 1, LANG, deps=[("svc", "exists")])]


def assert_restored_as_full(events, cut, grow, tmp_path):
    """A persistent shadow restarted after ``cut`` events, its probe set grown at ``grow``,
    a commit after every event, scores as one full replay."""
    make = MEMORIES["reference short ttl"]
    full, _ = straight(events, make, "full", 1, str(tmp_path / "full.db"))
    stored = split_stored(events, make, 1, cut, grow, 1, str(tmp_path / "stored.db"))
    assert scored(stored) == scored(full)


def test_a_restored_truth_still_cascades_a_removal_to_facts_read_since_the_restart(tmp_path):
    events = [
        *LANG_NEEDS_EXISTS,
        revalidated("e3", 2, LANG),  # after the restart: folds lang, names no dependency
        invalidated("e4", 3, EXISTS),  # lang ends with it
        added("e5", 4, fact("other", "lang", "c")),
    ]
    assert_restored_as_full(events, 2, 2, tmp_path)


def test_a_value_a_cascade_ended_before_the_restart_is_not_ended_again_after_it(tmp_path):
    events = [
        *LANG_NEEDS_EXISTS,
        invalidated("e3", 2, EXISTS),  # lang ends with it: saved at this commit
        invalidated("e4", 3, LANG),  # after the restart: lang is looked at again
        added("e5", 4, fact("other", "lang", "c")),
        added("e6", 5, fact("other2", "lang", "c")),
    ]
    assert_restored_as_full(events, 3, 3, tmp_path)


def test_a_value_a_late_event_makes_current_again_after_the_restart_is_saved_current(tmp_path):
    """A late assertion at the instant of a removal undoes it, so a fact that depended on the
    removed key is current again through an event on another key alone: the save after the
    restart must still write that fact's value as looked at current, or the next read-back
    thinks it gone and never reports it ending."""
    events = [
        *LANG_NEEDS_EXISTS,
        invalidated("e3", 2, EXISTS),  # lang ends with it: saved at this commit
        added("e4", 2, EXISTS),  # after the restart, late, at the same instant: lang is back
        added("e5", 3, fact("other", "lang", "c")),
        invalidated("e6", 4, LANG),  # after the second read-back: lang ends for good
        added("e7", 5, fact("other2", "lang", "c")),
        added("e8", 6, fact("other3", "lang", "c")),
    ]
    assert_restored_as_full(events, 3, 5, tmp_path)


def both_modes(events, make_memory, extra=()):
    return [
        [
            s.metrics
            for s in evaluate(
                events, make_memory(), build_probe_set(events, extra), name="t", kind="t", mode=mode
            ).stages
        ]
        for mode in ("full", "incremental")
    ]


def test_a_stage_exactly_at_an_expiry_sees_the_record_expired_in_both_modes():
    alice = fact("svc", "lead", "alice", "tech")  # tech TTL 90 days
    bob = fact("svc", "lead", "bob", "ownership")  # ownership TTL 30 days: expires day 40
    other, other2 = fact("other", "x", "1"), fact("other", "x", "2")
    events = [
        added("e1", 0, alice),
        added("e2", 10, bob),
        added("e3", 39.5, other),
        revised("e4", 40, other, other2),
        revised("e5", 41, other2, other),
    ]
    full, incremental = both_modes(events, lambda: ReferenceMemory(supersession=False, top_k=1))
    assert incremental == full
    assert full[3]["all"].contamination == full[4]["all"].contamination


def test_writes_to_other_keys_or_namespaces_do_not_reorder_a_keys_answer(tmp_path):
    node, go = fact("auth", "language", "node"), fact("auth", "language", "go")
    events = [added("e1", 0, node), revised("e2", 1, node, go)] + [
        added(f"o{i}", 2 + i, fact(f"svc{i}", "language", "go")) for i in range(3)
    ]
    extra = [Probe("f1", "Is auth written in node or go?", "auth", "language", "tech")]
    full, incremental = both_modes(
        events, lambda: ReferenceMemory(supersession=False, top_k=1), extra
    )
    assert incremental == full
    path = str(tmp_path / "shared.sqlite")
    mine = ReferenceMemory(path=path, namespace="A", supersession=False, top_k=1)
    theirs = ReferenceMemory(path=path, namespace="B")
    for event in events[:2]:
        mine.apply(event)
    before = [f.value for f in mine.answer(extra[0], day(5)).facts]
    for i in range(3):
        theirs.apply(added(f"b{i}", 2, fact(f"x{i}", "language", "node")))
    assert [f.value for f in mine.answer(extra[0], day(5)).facts] == before


@pytest.mark.parametrize("revalidated_at", [None, 20])
def test_a_record_written_after_the_first_stages_expires_in_both_modes(revalidated_at):
    """bob (ownership, 30 days) is served over alice until it expires: at day 40, or at 50
    once re-validated at day 20. It is written after the memory read back the deadlines of
    what it already held, so only the deadline its own write pushes (the expiry, not the
    purge 30 days later) tells a stage at day 41 or 51, which writes another key alone."""
    alice = fact("svc", "lead", "alice", "tech")
    bob = fact("svc", "lead", "bob", "ownership")
    other, other2 = fact("other", "x", "1"), fact("other", "x", "2")
    events = [
        added("e1", 0, alice),
        added("e2", 1, other),
        revised("e3", 2, other, other2),
        added("e4", 10, bob),
        *([revalidated("e5", revalidated_at, bob)] if revalidated_at else []),
        revised("e6", 39, other2, other),
        revised("e7", 41, other, other2),
        revised("e8", 49, other2, other),
        revised("e9", 51, other, other2),
    ]
    full, incremental = both_modes(events, lambda: ReferenceMemory(supersession=False, top_k=1))
    assert incremental == full
    expires = len(events) - (1 if revalidated_at else 3)  # the stage just after the expiry
    assert full[expires]["all"].contamination != full[expires - 1]["all"].contamination


class QuietSpillingMemory(SpillingMemory):
    """Serves every record of the probe's subject, but reports as changed only the keys it
    was written: an answer serving another key's fact is asked again only when its own key
    changes, so it is the evaluator's index of served keys that scores it again when the
    other key's truth moves."""

    def changed_keys(self, at: datetime) -> set[FactKey]:
        return ReferenceMemory.changed_keys(self, at)


def test_a_restart_still_rescores_an_answer_when_another_key_it_serves_changes(tmp_path):
    events = [
        added("e1", 0, fact("a", "lang", "go")),
        added("e2", 1, fact("a", "owner", "alice")),
        revised("e3", 2, fact("a", "lang", "go"), fact("a", "lang", "rust")),  # serves alice
        revised("e4", 3, fact("a", "owner", "alice"), fact("a", "owner", "bob")),  # restarted
        added("e5", 4, fact("other", "lang", "c")),
    ]

    def make(path: str) -> Memory:
        return QuietSpillingMemory(path=path, ttl_windows=SHORT_TTL, grace=0.5, top_k=8)

    through, _ = straight(events, make, "incremental", 1, str(tmp_path / "through.db"))
    stored = split_stored(events, make, 1, 3, 5, 1, str(tmp_path / "stored.db"))
    assert scored(stored) == scored(through)
    served = {
        f["value"]
        for p in through["targets"][0]["final"]["probes"]
        if (p["subject"], p["predicate"]) == ("a", "lang")
        for f in p["retrieved"]
    }
    assert "alice" in served  # what makes the case: a/lang's answer serves a/owner's fact
