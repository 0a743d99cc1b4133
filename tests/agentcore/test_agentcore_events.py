"""`agentcore:mode=events`: healthd talks to AgentCore Memory as an agent does (CreateEvent as
a shadow actor) and probes the long-term records the memory's own strategy consolidates,
through real boto3 against the emulator on 127.0.0.1. The emulator's extraction is a
deterministic stand-in for the service's model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import boto3
import pytest
from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, no_aws_env
from structlog.testing import capture_logs
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.memory.agentcore_events import AgentCoreEventsMemory
from healthd.model import Probe
from healthd.probes import build_probe_set
from healthd.testing.agentcore import AgentCoreEmulator
from healthd.testing.agentcore_events import Strategy

STRATEGY = "facts-a1b2c3d4e5"
ACTOR = "healthd-shadow"
NAMESPACE = f"healthd/{ACTOR}/facts"
DAY = 86400.0

BILLING_ALICE = fact("billing", "owner", "@alice", "ownership")
BILLING_BOB = fact("billing", "owner", "@bob", "ownership")
AUTH_GO = fact("auth-service", "language", "go")
EVENTS = [
    added("e1", 1, BILLING_ALICE),
    added("e2", 2, AUTH_GO),
    revised("e3", 3, BILLING_ALICE, BILLING_BOB),
    revalidated("e4", 4, BILLING_BOB),
    invalidated("e5", 5, AUTH_GO),
]


def target(emu: AgentCoreEmulator, **switches: object) -> str:
    options: dict[str, object] = {
        "mode": "events",
        "memory_id": MEMORY_ID,
        "actor_id": ACTOR,
        "strategy_id": STRATEGY,
        "shadow": "on",
        "region": "us-east-1",
        "endpoint_url": emu.url,
        **switches,
    }
    return "agentcore:" + ",".join(f"{k}={v}" for k, v in options.items())


def events_memory(emu: AgentCoreEmulator, **switches: object) -> AgentCoreEventsMemory:
    memory = build_memory(parse_target(target(emu, **switches)))
    assert isinstance(memory, AgentCoreEventsMemory)
    return memory


def configure(emu: AgentCoreEmulator, expiry: int = 30, namespace: str = "healthd/{actorId}/facts"):
    return emu.events.configure(
        MEMORY_ID, event_expiry_days=expiry, strategies=[Strategy(STRATEGY, namespace)]
    )


def owner_probe() -> Probe:
    return Probe("p-billing", "Who owns billing?", "billing", "owner", "ownership")


def texts(memory: AgentCoreEventsMemory, probe: Probe | None = None) -> list[str]:
    return [item.text for item in memory.answer(probe or owner_probe(), day(10)).items]


def data_client(emu: AgentCoreEmulator):
    return boto3.client("bedrock-agentcore", endpoint_url=emu.url, region_name="us-east-1")


def real_user_event(emu: AgentCoreEmulator, actor: str = "a-real-user") -> None:
    data_client(emu).create_event(
        memoryId=MEMORY_ID,
        actorId=actor,
        sessionId="their-session",
        eventTimestamp=day(0),
        payload=[
            {"conversational": {"role": "USER", "content": {"text": "Billing is owned by @zoe."}}}
        ],
    )


def bodies(emu: AgentCoreEmulator, suffix: str) -> list[dict]:
    return [body for _, path, body in emu.events.bodies if path.endswith(suffix)]


# -- what is written and where it is read ------------------------------------------------------


def test_an_events_run_writes_only_as_the_shadow_actor_and_reads_the_strategy_namespace(
    emulator,
):
    configure(emulator)
    real_user_event(emulator)
    probes = build_probe_set(EVENTS)
    memory = events_memory(emulator)
    try:
        result = evaluate(EVENTS, memory, probes, name="events", kind="agentcore", mode="full")
    finally:
        memory.close()

    created = bodies(emulator, "/events")
    assert [b["actorId"] for b in created] == ["a-real-user"] + [ACTOR] * len(EVENTS)
    ours = created[1:]
    assert len({b["sessionId"] for b in ours}) == 1  # one session for the run
    assert [b["eventTimestamp"] for b in ours] == [e.timestamp.timestamp() for e in EVENTS]
    assert ours[2]["payload"] == [
        {
            "conversational": {
                "role": "USER",
                "content": {"text": "Billing is owned by @bob (replacing @alice)."},
            }
        }
    ]
    assert not bodies(emulator, "/memoryRecords/batchCreate")  # healthd writes no record
    retrieved = bodies(emulator, "/retrieve")
    assert retrieved and {b["searchCriteria"]["memoryStrategyId"] for b in retrieved} == {STRATEGY}
    probe_reads = [b for b in retrieved if b["namespace"] == NAMESPACE]
    isolation = [b for b in retrieved if b["namespace"] != NAMESPACE]
    assert (
        len(isolation) == 1
        and isolation[0]["namespace"] == f"healthd/{ACTOR}-isolation-check/facts"
    )
    # full mode: each probe at every stage from the one its key first appears at
    assert len(probe_reads) == 1 + 2 * 4

    # what is served is what the memory's strategy consolidated: alice's record was replaced
    # (UPDATE), the re-validation changed nothing (NO-OP), the invalidation ended go
    decisions = [d for _, d, _ in emulator.events.consolidations]
    assert decisions == ["ADD"] + ["ADD", "ADD", "UPDATE", "NO-OP", "UPDATE"]  # theirs, ours
    final = {p.probe.key: [s.item.text for s in p.served] for p in result.probes}
    assert final[("billing", "owner")] == ["Billing is owned by @bob."]
    assert final[("auth-service", "language")] == ["Billing is owned by @bob."]
    assert result.metrics["all"].consistency == 1.0
    assert result.metrics["all"].contamination == 0.0
    # the real user's event and records are untouched by the run and its reset
    assert [e.actor_id for e in emulator.events.events(MEMORY_ID)].count("a-real-user") == 1
    theirs = [
        r for r in emulator.stored(MEMORY_ID) if r.namespaces == ["healthd/a-real-user/facts"]
    ]
    assert [r.content for r in theirs] == ["Billing is owned by @zoe."]


def test_each_run_is_a_new_session_and_a_reset_clears_only_the_shadow_actor(emulator):
    configure(emulator)
    real_user_event(emulator)
    memory = events_memory(emulator)
    memory.reset()
    memory.apply(EVENTS[0])
    first = memory.session_id
    memory.begin_run()
    memory.apply(EVENTS[2])
    assert memory.session_id != first
    sessions = data_client(emulator).list_sessions(memoryId=MEMORY_ID, actorId=ACTOR)
    assert len(sessions["sessionSummaries"]) == 2
    assert texts(memory) == ["Billing is owned by @bob."]
    memory.reset()
    assert [e.actor_id for e in emulator.events.events(MEMORY_ID)] == ["a-real-user"]
    assert texts(memory) == []
    assert [r.namespaces for r in emulator.stored(MEMORY_ID)] == [["healthd/a-real-user/facts"]]
    memory.close()


def test_a_probe_asked_as_another_actor_must_get_nothing_of_the_shadow(emulator):
    configure(emulator)
    memory = events_memory(emulator, isolation_actor_id="someone-else")
    memory.reset()
    memory.apply(EVENTS[0])
    assert texts(memory) == ["Billing is owned by @alice."]
    assert memory.isolation_checks == 1
    memory.begin_run()  # checked again each run
    emulator.events.break_isolation("healthd/someone-else/facts", NAMESPACE)
    with pytest.raises(
        MemoryAdapterError,
        match="actor isolation broken: a probe asked as actor 'someone-else' was served 1 record",
    ):
        texts(memory)
    memory.close()


# -- consolidation is asynchronous ---------------------------------------------------------------


def test_consistency_wait_covers_the_strategys_asynchronous_consolidation(emulator):
    configure(emulator)
    emulator.events.consolidation_delay = 0.4
    hasty = events_memory(emulator)
    hasty.reset()
    hasty.apply(EVENTS[0])
    assert texts(hasty) == []  # not consolidated yet: nothing to serve
    hasty.close()

    patient = events_memory(emulator, consistency_wait_seconds=10)
    patient.reset()
    patient.apply(EVENTS[0])
    assert texts(patient) == ["Billing is owned by @alice."]
    patient.apply(EVENTS[2])
    assert texts(patient) == ["Billing is owned by @bob."]
    assert patient.unsettled_reads == 0
    patient.close()


def test_incremental_scoring_gives_the_full_replays_numbers_and_skips_no_op_stages(emulator):
    configure(emulator)
    events = [*EVENTS[:4], revalidated("e6", 6, BILLING_BOB), revalidated("e7", 7, BILLING_BOB)]
    probes = build_probe_set(events)
    results = {}
    asked = {}
    for mode in ("full", "incremental"):
        before = len(bodies(emulator, "/retrieve"))
        memory = events_memory(emulator)
        try:
            results[mode] = evaluate(events, memory, probes, name=mode, kind="agentcore", mode=mode)
        finally:
            memory.close()
        asked[mode] = len(bodies(emulator, "/retrieve")) - before
    full, incremental = results["full"], results["incremental"]
    assert [s.counts for s in incremental.stages] == [s.counts for s in full.stages]
    assert incremental.metrics == full.metrics
    assert asked["incremental"] < asked["full"]  # the NO-OP stages asked nothing again


def test_an_event_the_strategy_fails_to_extract_is_reported_not_waited_for_forever(emulator):
    configure(emulator)
    emulator.events.fail_extraction("@bob")
    memory = events_memory(emulator, consistency_wait_seconds=0.5)
    memory.reset()
    memory.apply(EVENTS[0])
    assert texts(memory) == ["Billing is owned by @alice."]
    memory.apply(EVENTS[2])
    with capture_logs() as logs:
        assert texts(memory) == ["Billing is owned by @alice."]  # the change was lost
        report = memory.event_expiry_report()
    assert report["failed_extractions"] == 1
    (failed,) = [line for line in logs if line["event"] == "agentcore extraction failed"]
    assert failed["jobs"] == 1 and failed["reason"] == "model output could not be parsed"
    assert memory.unsettled_reads == 1  # the wait ran out: nothing changed
    memory.close()


# -- event expiry belongs to each event -----------------------------------------------------------


def test_an_event_expiry_change_between_runs_shows_the_old_and_new_populations(emulator):
    configure(emulator, expiry=30)
    memory = events_memory(emulator)
    memory.reset()
    for event in EVENTS[:2]:
        memory.apply(event)
    first = memory.event_expiry()
    assert (first.current_days, dict(first.populations)) == (30, {30: 2})

    configure(emulator, expiry=90)  # UpdateMemory: applies to events created from now on
    with capture_logs() as logs:
        memory.begin_run()
    changed = [line for line in logs if line["event"] == "agentcore event expiry changed"]
    assert len(changed) == 1
    assert (changed[0]["previous_days"], changed[0]["event_expiry_days"]) == (30, 90)
    for event in EVENTS[2:]:
        memory.apply(event)
    report = memory.event_expiry()
    assert (report.current_days, dict(report.populations)) == (90, {30: 2, 90: 3})
    assert report.since[30] <= report.since[90]
    assert [(old, new) for _, old, new in memory.expiry_changes] == [(30, 90)]

    # the service expires each event by the expiry it was created with
    emulator.advance(31 * DAY)
    assert dict(memory.event_expiry().populations) == {90: 3}
    emulator.advance(60 * DAY)
    assert dict(memory.event_expiry().populations) == {}

    # a new process finds the change from the events themselves
    configure(emulator, expiry=7)
    again = events_memory(emulator)
    with capture_logs() as logs:
        again.begin_run()
    assert not [line for line in logs if line["event"] == "agentcore event expiry changed"]
    memory.close()
    again.close()


def test_a_new_process_notices_a_change_made_since_the_last_events(emulator):
    configure(emulator, expiry=30)
    memory = events_memory(emulator)
    memory.reset()
    memory.apply(EVENTS[0])
    memory.close()
    configure(emulator, expiry=90)
    restarted = events_memory(emulator)
    with capture_logs() as logs:
        restarted.begin_run()
    changed = [line for line in logs if line["event"] == "agentcore event expiry changed"]
    assert [(c["previous_days"], c["event_expiry_days"]) for c in changed] == [(30, 90)]
    restarted.close()


# -- the emulator refuses what the service's model refuses ---------------------------------------


def test_the_emulators_events_and_control_plane_refuse_what_the_model_refuses(emulator):
    from botocore.exceptions import ClientError

    configure(emulator)
    data = data_client(emulator)
    control = boto3.client(
        "bedrock-agentcore-control", endpoint_url=emulator.url, region_name="us-east-1"
    )
    turn = [{"conversational": {"role": "USER", "content": {"text": "Billing is owned by @bob."}}}]
    good = {"memoryId": MEMORY_ID, "actorId": ACTOR, "sessionId": "s1", "eventTimestamp": day(1),
            "payload": turn}  # fmt: skip
    bad = [
        ({**good, "actorId": "an actor"}, "actorId 'an actor' does not match"),
        ({**good, "sessionId": "s/1"}, "sessionId 's/1' does not match"),
        ({**good, "payload": turn * 101}, "at most 100 items"),
        ({**good, "metadata": {f"k{i}": {"stringValue": "v"} for i in range(16)}},
         "at most 15 keys"),
        ({**good, "metadata": {"k": {"stringValue": "a;b"}}}, "value pattern"),
        ({**good, "payload": [{"conversational": {"role": "BOT", "content": {"text": "x"}}}]},
         "role must be one of"),
    ]  # fmt: skip
    for request, message in bad:
        with pytest.raises(ClientError, match=message):
            data.create_event(**request)
    data.create_event(**good, clientToken="t" * 33)
    with pytest.raises(ClientError, match="clientToken was used with another request"):
        data.create_event(**{**good, "sessionId": "s2"}, clientToken="t" * 33)
    assert len(emulator.events.events(MEMORY_ID)) == 1
    with pytest.raises(ClientError, match="between 3 and 3650 days"):
        control.update_memory(memoryId=MEMORY_ID, eventExpiryDuration=4000)
    with pytest.raises(ClientError, match="the emulator does not change description"):
        control.update_memory(memoryId=MEMORY_ID, description="x")
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        control.get_memory(memoryId="unknown_memory-0000000000")
    assert (
        control.update_memory(memoryId=MEMORY_ID, eventExpiryDuration=3)["memory"][
            "eventExpiryDuration"
        ]
        == 3
    )


# -- bad input -----------------------------------------------------------------------------------


def test_a_memory_without_the_strategy_named_is_refused_before_any_write(emulator):
    emulator.events.configure(
        MEMORY_ID, strategies=[Strategy("summaries-a1b2c3d4e5", "s/{actorId}/{sessionId}")]
    )
    memory = events_memory(emulator)
    with pytest.raises(
        MemoryAdapterError,
        match="has no strategy 'facts-a1b2c3d4e5' \\(its strategies: summaries-a1b2c3d4e5\\)",
    ):
        memory.reset()
    assert emulator.events.events(MEMORY_ID) == []


@pytest.mark.parametrize(
    ("namespace", "message"),
    [
        ("healthd/shared", "needs a namespace per actor"),
        ("s/{actorId}/{sessionId}", "no {sessionId}"),
    ],
)
def test_a_strategy_whose_namespace_is_not_per_actor_is_refused(emulator, namespace, message):
    configure(emulator, namespace=namespace)
    with pytest.raises(MemoryAdapterError, match=message):
        events_memory(emulator).reset()
    assert emulator.events.events(MEMORY_ID) == []


def test_an_actor_not_declared_shadow_or_holding_others_events_is_refused(emulator):
    configure(emulator)
    with pytest.raises(TargetError, match="actor id 'healthd-shadow' is not declared shadow"):
        events_memory(emulator, shadow="off")
    real_user_event(emulator, actor=ACTOR)
    memory = events_memory(emulator)
    with pytest.raises(ShadowViolation, match="holds 1 event\\(s\\) healthd did not write"):
        memory.reset()
    assert len(emulator.events.events(MEMORY_ID)) == 1  # nothing was deleted
    with pytest.raises(TargetError, match="switch strategy_id: not an AgentCore strategy id"):
        events_memory(emulator, strategy_id="facts")
    with pytest.raises(TargetError, match="switch actor_id"):
        events_memory(emulator, actor_id="bad actor")


def test_a_change_too_long_for_one_turn_is_one_clear_error_and_nothing_written(emulator):
    configure(emulator)
    memory = events_memory(emulator)
    memory.reset()
    huge = added("huge", 1, fact("auth-service", "requirement", "x" * 100_000, "requirement"))
    with pytest.raises(MemoryAdapterError, match="apply huge: the change renders to 100,0"):
        memory.apply(huge)
    assert emulator.events.events(MEMORY_ID) == []
    memory.close()


def _cli(target_text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--target", target_text],
        capture_output=True,
        text=True,
        env={**no_aws_env(), **DUMMY_AWS},
        timeout=120,
    )


def test_bad_input_is_one_line_and_exit_2_from_the_cli(emulator):
    emulator.events.configure(MEMORY_ID, strategies=[Strategy("other-a1b2c3d4e5", "o/{actorId}")])
    cases = [
        (target(emulator), "memory 'healthd_shadow-a1b2c3d4e5' has no strategy 'facts-a1b2c3d4e5'"),
        (target(emulator, shadow="off"), "actor id 'healthd-shadow' is not declared shadow"),
    ]
    for text, message in cases:
        result = _cli(text)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], result.stderr
        assert DUMMY_AWS["AWS_SECRET_ACCESS_KEY"] not in result.stderr + result.stdout
    assert emulator.events.events(MEMORY_ID) == []


# -- the real service --------------------------------------------------------------------------


def _live_reason() -> str | None:
    for name in ("HEALTHD_AGENTCORE_MEMORY_ID", "HEALTHD_AGENTCORE_STRATEGY_ID"):
        if not os.environ.get(name):
            return f"{name} is not set"
    try:
        credentials = boto3.Session().get_credentials()
    except Exception as exc:  # a broken profile is a reason to skip, not to fail collection
        return f"AWS credentials unusable: {type(exc).__name__}"
    if credentials is None:
        return "no AWS credentials in the standard chain"
    return None


@pytest.mark.skipif(_live_reason() is not None, reason=f"live AgentCore test: {_live_reason()}")
def test_live_agentcore_events_round_trip():  # pragma: no cover - needs AWS
    memory = build_memory(
        parse_target(
            f"agentcore:mode=events,memory_id={os.environ['HEALTHD_AGENTCORE_MEMORY_ID']},"
            f"strategy_id={os.environ['HEALTHD_AGENTCORE_STRATEGY_ID']},"
            "actor_id=healthd-live-test-shadow,shadow=on,consistency_wait_seconds=120"
        )
    )
    assert isinstance(memory, AgentCoreEventsMemory)
    try:
        memory.reset()
        memory.apply(added("live-1", 1, AUTH_GO))
        probe = Probe("p-live", "What language is auth-service written in?", "auth-service",
                      "language", "tech")  # fmt: skip
        assert any(re.search(r"\bgo\b", text, re.I) for text in texts(memory, probe))
        assert memory.isolation_checks == 1
    finally:
        memory.reset()
        memory.close()


def test_the_json_report_gives_the_events_per_expiry(emulator, tmp_path):
    configure(emulator, expiry=30)
    timeline = tmp_path / "timeline.jsonl"
    lines = [
        {"id": "t1", "type": "added", "timestamp": "2026-01-01T00:00:00Z", "source": "git",
         "fact": {"subject": "billing", "predicate": "owner", "value": "@alice", "domain": "ownership"}},
        {"id": "t2", "type": "added", "timestamp": "2026-01-02T00:00:00Z", "source": "git",
         "fact": {"subject": "auth", "predicate": "language", "value": "go", "domain": "tech"}},
    ]  # fmt: skip
    timeline.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--timeline", str(timeline),
         "--target", target(emulator), "--format", "json"],
        capture_output=True, text=True, env={**no_aws_env(), **DUMMY_AWS}, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["targets"]
    expiry = report["event_expiry"]
    assert (expiry["current_days"], expiry["populations"]) == (30, {"30": 2})
    assert list(expiry["since"]) == ["30"]
    assert report["final"]["metrics"]["all"]["consistency"] == 1.0
