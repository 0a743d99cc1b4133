"""A persistent reference shadow (the daemon's): batched writes become durable together
with a checkpoint, or not at all; reopened, it serves what it served at its last commit.
And what the per-key cache lets go of, or packs away, is read back as it was."""

from __future__ import annotations

import tracemalloc
from datetime import timedelta

import pytest
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.errors import MemoryAdapterError
from healthd.memory.reference import ReferenceMemory
from healthd.model import ChangeEvent, Probe
from healthd.probes import generated_probe_id, question_for

node, go = fact("auth", "language", "node"), fact("auth", "language", "go")
alice = fact("billing", "owners", "@alice", "ownership")
pg = fact("payments", "dependency:postgres", "16")
FACTS = (node, alice, pg)


def probe_for(f) -> Probe:
    key = f.key
    return Probe(generated_probe_id(key), question_for(*key, f.domain), *key, f.domain)


def served(memory: ReferenceMemory, at: float = 3) -> dict[str, list[str]]:
    return {f.subject: [r.value for r in memory.answer(probe_for(f), day(at)).facts] for f in FACTS}


def values_at(memory: ReferenceMemory, f, at: float) -> list[str]:
    return [r.value for r in memory.answer(probe_for(f), day(at)).facts]


def feed(memory: ReferenceMemory, *events) -> ReferenceMemory:
    for event in events:
        memory.apply(event)
    return memory


def batched(path) -> ReferenceMemory:
    memory = ReferenceMemory(path=str(path), ttl=False)
    memory.batch_writes()
    return memory


FIRST = (added("1", 0, node), added("2", 0, alice), added("3", 0, pg))
SECOND = (revised("4", 1, node, go), invalidated("5", 1, alice))


def committed_then_fed(path, checkpoint) -> tuple[ReferenceMemory, dict[str, list[str]]]:
    """A shadow that committed FIRST with ``checkpoint``, then was fed SECOND (not committed),
    and what it served at the commit."""
    memory = feed(batched(path), *FIRST)
    memory.commit(checkpoint)
    committed = served(memory)
    feed(memory, *SECOND)
    return memory, committed


def test_writes_after_the_last_commit_are_lost_with_a_crash_and_the_checkpoint_says_so(
    tmp_path,
):
    memory, committed = committed_then_fed(tmp_path / "shadow.db", {"events": 3})
    assert served(memory) == {"auth": ["go"], "billing": [], "payments": ["16"]}
    memory.close()  # killed before the next commit

    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    assert reopened.checkpoint() == {"events": 3}
    assert (
        served(reopened)
        == committed
        == {
            "auth": ["node"],
            "billing": ["@alice"],
            "payments": ["16"],
        }
    )


def test_a_commit_with_nothing_new_to_write_still_replaces_the_checkpoint(tmp_path):
    memory = feed(batched(tmp_path / "shadow.db"), *FIRST)
    memory.commit({"run": 1})
    memory.commit({"run": 2})
    memory.close()
    assert ReferenceMemory(path=str(tmp_path / "shadow.db")).checkpoint() == {"run": 2}


def test_a_commit_that_fails_names_the_cause_and_the_shadow_stays_at_its_last_checkpoint(
    tmp_path,
):
    memory, committed = committed_then_fed(tmp_path / "shadow.db", {"run": 1})
    memory.state_db().execute("DROP TABLE checkpoints")  # rolled back with the batch
    with pytest.raises(MemoryAdapterError, match="committing a batch: no such table: checkpoints"):
        memory.commit({"run": 2})
    assert served(memory) == committed  # nothing of the failed batch is served
    assert memory.checkpoint() == {"run": 1}
    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    assert (reopened.checkpoint(), served(reopened)) == ({"run": 1}, committed)
    reopened.close()
    feed(memory, *SECOND)  # the same batch again, on what the tables hold
    memory.commit({"run": 2})
    memory.close()
    again = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    assert served(again) == {"auth": ["go"], "billing": [], "payments": ["16"]}


def test_a_batch_whose_writes_fail_is_never_committed_and_the_shadow_stays_at_its_checkpoint(
    tmp_path,
):
    memory, committed = committed_then_fed(tmp_path / "shadow.db", {"run": 1})
    db = memory.state_db()
    memory.apply(revalidated("6", 2, pg))  # waits in the batch for the commit
    db.execute("DROP TABLE key_log")  # rolled back with the batch
    with pytest.raises(MemoryAdapterError, match="no such table: key_log.*batch since the last"):
        memory.commit({"run": 2})
    with pytest.raises(MemoryAdapterError, match="batch since the last commit is lost"):
        memory.commit({"run": 2})  # what is left of the batch is never made durable
    memory.close()
    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    assert (reopened.checkpoint(), served(reopened)) == ({"run": 1}, committed)


def test_a_value_sqlite_cannot_store_fails_the_batch_at_its_commit_and_nothing_is_half_written(
    tmp_path,
):
    memory, committed = committed_then_fed(tmp_path / "shadow.db", {"run": 1})
    with pytest.raises(MemoryAdapterError, match="writing a batch failed .*surrogate"):
        # the row waits in the batch until the commit, or a read of the tables before it
        memory.apply(added("6", 2, fact("docs", "owners", "@b\udcffb")))
        memory.commit({"run": 2})
    with pytest.raises(MemoryAdapterError, match="batch since the last commit is lost"):
        memory.commit({"run": 2})
    memory.close()
    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    assert (reopened.checkpoint(), served(reopened)) == ({"run": 1}, committed)


def test_an_event_about_a_file_whose_name_is_not_utf8_is_stored_with_its_metadata(tmp_path):
    # git's paths are decoded with surrogateescape: b"docs/\xff.md" is "docs/\udcff.md"
    path = b"docs/\xff.md".decode("utf-8", "surrogateescape")
    owner = fact("docs", "owners", "@bob", "ownership")
    event = ChangeEvent("6", "added", day(2), "git", owner, metadata={"path": path})
    memory = feed(batched(tmp_path / "shadow.db"), event)
    memory.commit({"run": 1})
    memory.close()
    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    assert values_at(reopened, owner, 3) == ["@bob"]
    stored = reopened.state_db().execute("SELECT key, value FROM record_meta").fetchall()
    assert stored == [("path", "docs/?.md")]


def test_a_record_validated_again_within_a_batch_is_written_once_at_the_commit(tmp_path):
    memory = feed(batched(tmp_path / "shadow.db"), *FIRST)
    memory.commit({"run": 1})
    updates: list[str] = []
    memory.state_db().set_trace_callback(
        lambda sql: updates.append(sql) if sql.startswith("UPDATE records") else None
    )
    feed(memory, *(revalidated(f"r{n}", 1 + n / 10, pg) for n in range(5)))
    assert updates == []  # nothing written while the batch is open
    memory.commit({"run": 2})
    assert len(updates) == 1
    memory.close()
    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"), ttl=False)
    [record] = reopened.answer(probe_for(pg), day(3)).facts
    assert (record.value, record.validated_at) == ("16", day(1.4))


def test_what_a_caller_writes_beside_the_shadow_is_durable_with_its_commit_only(tmp_path):
    memory = feed(batched(tmp_path / "shadow.db"), *FIRST)
    memory.state_db().execute("CREATE TABLE beside (n INTEGER)")
    memory.commit({"run": 1})
    memory.state_db().execute("INSERT INTO beside VALUES (1)")
    memory.commit({"run": 2})
    memory.state_db().execute("INSERT INTO beside VALUES (2)")
    memory.close()
    reopened = ReferenceMemory(path=str(tmp_path / "shadow.db"))
    assert reopened.state_db().execute("SELECT n FROM beside").fetchall() == [(1,)]


def test_a_checkpoint_that_is_not_an_object_is_no_checkpoint(tmp_path):
    memory = feed(ReferenceMemory(path=str(tmp_path / "shadow.db")), *FIRST)
    memory.state_db().execute(
        "INSERT INTO checkpoints (namespace, clock, body) VALUES (?, 0, '[1, 2]')",
        (memory.namespace,),
    )
    assert memory.checkpoint() is None


def test_release_keeps_the_keys_used_last_and_counts_the_others():
    memory = feed(ReferenceMemory(path=""), *FIRST)
    assert memory.release(1) == 2
    assert memory.release(1) == 0  # only the key used last is held
    assert served(memory) == {"auth": ["node"], "billing": ["@alice"], "payments": ["16"]}
    assert memory.release(0) == 1  # an answer reads a key it does not hold from the tables


def test_what_release_lets_go_of_is_given_back():
    subjects = [f"svc-{i}" for i in range(400)]
    tracemalloc.start()
    try:
        memory = ReferenceMemory(path="")
        for i, subject in enumerate(subjects):
            memory.apply(added(str(i), 0, fact(subject, "language", "go")))
            memory.apply(revalidated(f"r{i}", 1, fact(subject, "language", "go")))
        memory.changed_keys(day(2))
        held = tracemalloc.get_traced_memory()[0]
        memory.release(0)
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # about 3.3 kB per key held, 0.9 kB left (the expiry heap's entries): logs, records and
    # folds go; a cache that kept its folds would keep 1.7 kB
    assert kept < held / 2.5, (held / len(subjects), kept / len(subjects))


def test_a_long_history_packed_away_is_read_back_with_each_entry_s_own_expiry():
    """A key's older log entries are packed into blocks; a late event refolds the whole log
    from them. Each entry keeps the TTL it was written with: the value added under a one-day
    TTL is purged long before the end, while the first one, written under 100 days and
    validated daily since, is not; and each keeps what it depends on."""
    kotlin, java = fact("billing", "language", "kotlin"), fact("billing", "language", "java")
    memory = ReferenceMemory(path="")
    memory.set_ttl("tech", timedelta(days=100))
    memory.apply(added("0", 0, fact("billing", "exists", "true")))
    memory.apply(added("1", 0, kotlin, deps=[("billing", "exists")], multi=True))
    memory.set_ttl("tech", timedelta(days=1))
    memory.apply(added("2", 0.5, java, multi=True))
    for n in range(1, 41):  # pushes the first entries into packed blocks
        memory.apply(revalidated(f"v{n}", n, kotlin))
    memory.apply(revalidated("late", 20.5, kotlin))  # lands among them: the log is refolded
    assert values_at(memory, java, 2) == ["kotlin", "java"]  # soft-expired on day 1.5
    assert values_at(memory, java, 40.5) == ["kotlin"]  # java purged on day 2.5
    [record] = memory.answer(probe_for(kotlin), day(40.5)).facts
    assert (record.domain, record.written_at, record.validated_at) == ("tech", day(0), day(40))


def test_a_record_changed_in_the_batch_that_inserts_the_next_one_is_written_with_its_change():
    """A private replay inserts its new records at the batch's end; a change to the record
    inserted just before them must still reach the table, which is read once the key is let go of."""
    memory = ReferenceMemory(path="", ttl=False)  # a private replay's own database
    memory.private_batch = 1
    memory.apply(added("1", 0, node))  # written with its own batch
    memory.private_batch = 100
    memory.apply(added("2", 1, alice))  # the next record, inserted at the batch's end
    memory.apply(invalidated("3", 2, node))
    memory.release(0)
    assert values_at(memory, node, 3) == []
    assert values_at(memory, alice, 3) == ["@alice"]
