"""Issue 21 item 4: the `agentcore` adapter's consistency wait, its checks before the first
write (indexed keys, a strategy's schema), the service's text limit, batches of up to 100
records and IAM scoping on updates; all through real boto3 against the emulator."""

from __future__ import annotations

import subprocess
import sys

import pytest
from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, PREFIX, agentcore, no_aws_env, target_text
from timeline_builders import added, day, fact, invalidated, revalidated

from healthd.cli import example_timeline_path
from healthd.errors import MemoryAdapterError
from healthd.evaluator import evaluate
from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.model import Probe
from healthd.probes import build_probe_set
from healthd.testing.agentcore import AgentCoreEmulator, Strategy
from healthd.timeline import read_timeline

EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)
STRATEGY = "semantic_facts-a1b2c3d4e5"
HEALTHD_SCHEMA = {
    **FILTER_KEYS,
    "healthd_domain": "STRING",
    "healthd_fact_id": "STRING",
    "healthd_event_id": "STRING",
    "healthd_written_at": "NUMBER",
}


def probe(subject: str, predicate: str) -> Probe:
    return Probe(
        f"p-{subject}-{predicate}", f"{predicate} of {subject}?", subject, predicate, "tech"
    )


def _cli(emulator: AgentCoreEmulator, target: str) -> subprocess.CompletedProcess[str]:
    env = {**no_aws_env(), **DUMMY_AWS}
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--target", target, "--format", "json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def _one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert DUMMY_AWS["AWS_SECRET_ACCESS_KEY"] not in result.stderr + result.stdout
    return lines[0]


# -- the consistency wait checks validation times, not only record ids ---------------------------


def test_a_revalidation_is_read_with_its_new_validation_time_when_reads_lag(aws_env):
    with AgentCoreEmulator(read_after_write_delay=0.3) as emu:
        emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        memory = agentcore(emu, mode="managed", consistency_wait_seconds=10)
        memory.reset()
        memory.apply(added("a", 1, fact("auth", "language", "go")))
        (first,) = memory.answer(probe("auth", "language"), day(2)).facts
        assert first.validated_at == day(1)
        memory.apply(revalidated("b", 3, fact("auth", "language", "go")))
        # the update is not visible for 0.3 s: the same record id with its old time is not
        # the answer healthd wrote, so the wait goes on until the new time shows
        (again,) = memory.answer(probe("auth", "language"), day(4)).facts
        assert (again.record_id, again.validated_at) == (first.record_id, day(3))
        assert memory.unsettled_reads == 0


def test_a_managed_run_with_lagging_reads_scores_what_one_without_lag_scores(aws_env):
    runs = {}
    for delay in (0.0, 0.05):
        with AgentCoreEmulator(read_after_write_delay=delay) as emu:
            emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
            memory = agentcore(emu, mode="managed", consistency_wait_seconds=10)
            runs[delay] = evaluate(EVENTS, memory, PROBES, name="managed", kind="agentcore")
            assert memory.unsettled_reads == 0
    # without the fix: freshness 0.94 -> 0.38, most stages differ
    assert [s.metrics for s in runs[0.05].stages] == [s.metrics for s in runs[0.0].stages]
    assert runs[0.05].metrics["all"].freshness == pytest.approx(0.9375)


# -- before the first write: indexed keys and a strategy's schema -------------------------------


def test_a_strategy_schema_that_drops_healthds_keys_fails_the_run_before_any_write(aws_env):
    with AgentCoreEmulator() as emu:
        emu.create_memory(
            MEMORY_ID,
            indexed_keys=FILTER_KEYS,
            strategies=[Strategy(STRATEGY, "facts/{actorId}", schema={"topic": "STRING"})],
        )
        line = _one_line(_cli(emu, target_text(emu, mode="managed", strategy_id=STRATEGY)))
        assert f"strategy {STRATEGY!r} drops healthd's metadata healthd_domain" in line
        assert "memoryRecordSchema" in line
        assert emu.stored(MEMORY_ID) == []  # the preflight record is deleted again


def test_a_strategy_keeping_healthds_keys_passes_the_preflight_and_scores(aws_env):
    with AgentCoreEmulator() as emu:
        emu.create_memory(
            MEMORY_ID,
            indexed_keys=FILTER_KEYS,
            strategies=[Strategy(STRATEGY, "facts/{actorId}", schema=HEALTHD_SCHEMA)],
        )
        result = _cli(emu, target_text(emu, mode="managed", strategy_id=STRATEGY))
        assert result.returncode == 0, result.stderr
        assert '"consistency": 1.0' in result.stdout
        stored = emu.stored(MEMORY_ID)
        assert stored and {r.strategy_id for r in stored} == {STRATEGY}
        assert not any("healthd-preflight" in r.namespaces[0] for r in stored)


def test_a_strategy_the_memory_does_not_have_is_one_line(aws_env):
    with AgentCoreEmulator() as emu:
        emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        line = _one_line(_cli(emu, target_text(emu, strategy_id=STRATEGY)))
        assert f"has no strategy {STRATEGY!r} (strategy_id); its strategies: none" in line
        assert emu.stored(MEMORY_ID) == []


def test_keys_the_memory_does_not_index_are_named_with_their_permanent_cost(aws_env):
    with AgentCoreEmulator() as emu:
        emu.create_memory(MEMORY_ID, indexed_keys={"topic": "STRING", "healthd_subject": "STRING"})
        line = _one_line(_cli(emu, target_text(emu)))
        assert "does not index healthd_predicate (STRING), healthd_validated_at (NUMBER)" in line
        assert "takes 2 of the memory's 10 indexed-key slots (8 free) for good" in line
        assert "indexed keys cannot be removed" in line
        assert "--add-indexed-keys key=healthd_predicate,type=STRING" in line
        assert [r for r in emu.requests if r[0] == "POST"] == []  # nothing written or read


# -- the service's limits and batches --------------------------------------------------------------


def test_a_value_over_the_services_text_limit_is_one_clear_error(emulator):
    memory = agentcore(emulator)
    memory.reset()
    with pytest.raises(MemoryAdapterError, match=r"apply big: the record for auth notes would "
                       r"hold 16,0\d\d characters of text; AgentCore Memory takes at most 16,000"):  # fmt: skip
        memory.apply(added("big", 1, fact("auth", "notes", "x" * 16_000)))
    memory.apply(added("fits", 1, fact("auth", "notes", "x" * (16_000 - len("auth notes: ")))))
    assert len(memory.answer(probe("auth", "notes"), day(2)).facts) == 1


def _calls(emulator: AgentCoreEmulator, operation: str) -> int:
    return sum(1 for _, path in emulator.requests if path.endswith(operation))


def test_creates_updates_and_deletes_go_out_up_to_100_records_a_call(emulator):
    memory = agentcore(emulator, mode="managed")
    memory.reset()
    updates: list[dict] = []
    memory._client().meta.events.register(
        "provide-client-params.bedrock-agentcore.BatchUpdateMemoryRecords",
        lambda params, **_: updates.extend(params["records"]),
    )
    memory.apply(added("root", 1, fact("platform", "exists", "true")))
    for i in range(150):
        memory.apply(
            added(f"d{i}", 1, fact(f"svc{i}", "runs_on", "platform"), deps=[("platform", "exists")])
        )
    memory.flush()
    assert _calls(emulator, "/memoryRecords/batchCreate") == 2  # 151 records: 100 + 51
    for i in range(150):
        memory.apply(revalidated(f"r{i}", 2, fact(f"svc{i}", "runs_on", "platform")))
    memory.flush()
    assert _calls(emulator, "/memoryRecords/batchUpdate") == 2
    assert len(updates) == 150
    # what IAM namespace conditions are evaluated on: the record's own namespace
    assert all(u["sourceNamespaces"] == u["namespaces"] for u in updates)
    assert {r.metadata["healthd_validated_at"]["numberValue"] for r in emulator.stored(MEMORY_ID)
            if r.namespaces[0].startswith(f"{PREFIX}/svc")} == {day(2).timestamp()}  # fmt: skip
    deletes_before = _calls(emulator, "/memoryRecords/batchDelete")
    memory.apply(invalidated("gone", 3, fact("platform", "exists", "true")))  # cascades
    assert memory.answer(probe("svc7", "runs_on"), day(4)).facts == ()
    assert _calls(emulator, "/memoryRecords/batchDelete") - deletes_before == 2  # 151 records
    assert emulator.stored(MEMORY_ID) == []


def test_a_record_changed_before_it_is_sent_is_sent_once_as_it_ended(emulator):
    memory = agentcore(emulator, mode="managed")
    memory.reset()
    memory.apply(added("a", 1, fact("auth", "language", "go")))
    memory.apply(revalidated("b", 2, fact("auth", "language", "go")))
    memory.apply(added("c", 2, fact("auth", "owners", "@ann", "ownership")))
    memory.apply(invalidated("d", 3, fact("auth", "owners", "@ann", "ownership")))
    memory.flush()
    (record,) = emulator.stored(MEMORY_ID)
    assert record.metadata["healthd_validated_at"] == {"numberValue": day(2).timestamp()}
    assert _calls(emulator, "/memoryRecords/batchCreate") == 1
    assert _calls(emulator, "/memoryRecords/batchUpdate") == 0


def test_writes_held_for_a_batch_are_sent_at_close_so_nothing_is_lost(emulator):
    first = agentcore(emulator, mode="managed")
    first.reset()
    first.apply(added("a", 1, fact("auth", "language", "go")))
    assert emulator.stored(MEMORY_ID) == []  # held for the batch
    first.close()
    (record,) = emulator.stored(MEMORY_ID)
    assert record.content == "auth language: go"
    later = agentcore(emulator, mode="managed")
    assert [f.value for f in later.answer(probe("auth", "language"), day(2)).facts] == ["go"]
