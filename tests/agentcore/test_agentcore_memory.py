"""The `agentcore` memory through real boto3 (signing, serialization, parsing, retries)
against the local AgentCore Memory emulator on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import boto3
import pytest
from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, PREFIX, agentcore, no_aws_env, target_text
from botocore.stub import Stubber
from structlog.testing import capture_logs
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.cli import example_timeline_path
from healthd.errors import MemoryAdapterError, TargetError
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.memory.agentcore import AgentCoreMemory, AgentCoreOptions
from healthd.model import Probe
from healthd.probes import build_probe_set
from healthd.testing.agentcore import AgentCoreEmulator
from healthd.timeline import read_timeline

EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)
DAY = 86400.0


def probe(subject: str, predicate: str) -> Probe:
    return Probe(
        f"p-{subject}-{predicate}", f"What is {predicate} of {subject}?", subject, predicate, "tech"
    )


def described(indexed: dict[str, str], strategies: list[dict] | None = None) -> dict:
    """A ``GetMemory`` answer as the control plane's model shapes it."""
    return {
        "arn": f"arn:aws:bedrock-agentcore:us-east-1:123456789012:memory/{MEMORY_ID}",
        "id": MEMORY_ID,
        "name": "healthd_shadow",
        "eventExpiryDuration": 90,
        "status": "ACTIVE",
        "createdAt": 0,
        "updatedAt": 0,
        "strategies": strategies or [],
        "indexedKeys": [{"key": k, "type": t} for k, t in indexed.items()],
    }


def values(memory: AgentCoreMemory, subject: str, predicate: str, at: float = 400) -> list[str]:
    return sorted(f.value for f in memory.answer(probe(subject, predicate), day(at)).facts)


def run(memory, name="agentcore", mode="incremental"):
    return evaluate(EVENTS, memory, PROBES, name=name, kind="agentcore", mode=mode)


# -- the lifecycle on the bundled example ------------------------------------------------------


def test_native_mode_scores_exactly_like_the_naive_baseline(emulator):
    native = run(agentcore(emulator, mode="native"))
    naive = evaluate(
        EVENTS, build_memory(parse_target("naive")), PROBES, name="naive", kind="naive"
    )
    assert [s.metrics for s in native.stages] == [s.metrics for s in naive.stages]
    assert native.metrics["all"].contamination > 0.5


def test_managed_mode_fixes_consistency_but_not_freshness_without_ttl(emulator):
    managed = run(agentcore(emulator, mode="managed"))
    final = managed.metrics["all"]
    assert final.consistency == 1.0 and final.contamination == 0.0 and final.conflicts == 0
    assert final.forgetting == 1.0 and final.coverage == 1.0
    assert final.freshness < 1.0  # legacy-reports: never re-validated, never expired in replay
    full = run(agentcore(emulator, mode="managed"), mode="full")
    assert [s.metrics for s in full.stages] == [s.metrics for s in managed.stages]


def test_each_fact_is_one_record_in_its_keys_namespace_with_replayed_time_as_numbers(emulator):
    memory = agentcore(emulator)
    memory.reset()
    memory.apply(added("e/1", 5, fact("billing.v2", "dependency:postgres", "p99 < 300 ms")))
    memory.flush()  # writes go out in batches, at the latest before the next read
    (stored,) = emulator.stored(MEMORY_ID)
    assert stored.namespaces[0].startswith(PREFIX + "/billing_v2-")
    assert stored.metadata["healthd_validated_at"] == {"numberValue": day(5).timestamp()}
    assert stored.metadata["healthd_written_at"] == {"numberValue": day(5).timestamp()}
    assert stored.metadata["healthd_domain"] == {"stringValue": "tech"}
    assert stored.timestamp == day(5).timestamp()  # the record's own time is the event's
    assert stored.created_at != day(5).timestamp()  # createdAt is the service's wall clock
    (got,) = memory.answer(probe("billing.v2", "dependency:postgres"), day(6)).facts
    assert (got.subject, got.predicate, got.value) == (
        "billing.v2",
        "dependency:postgres",
        "p99 < 300 ms",
    )
    assert got.validated_at == day(5) and got.record_id == stored.id
    # replayed validation time is filterable: asked before the event, nothing is served
    assert memory.answer(probe("billing.v2", "dependency:postgres"), day(4)).facts == ()


def test_managed_revision_deletes_the_old_record_and_revalidation_updates_in_place(emulator):
    memory = agentcore(emulator, mode="managed")
    memory.reset()
    memory.apply(added("a", 1, fact("auth", "language", "node")))
    memory.apply(revised("b", 2, fact("auth", "language", "node"), fact("auth", "language", "go")))
    memory.apply(revalidated("c", 3, fact("auth", "language", "go")))
    assert values(memory, "auth", "language") == ["go"]
    (record,) = emulator.stored(MEMORY_ID)
    assert record.metadata["healthd_validated_at"]["numberValue"] == day(3).timestamp()
    memory.apply(invalidated("d", 4, fact("auth", "language", "go")))
    assert values(memory, "auth", "language") == [] and emulator.stored(MEMORY_ID) == []


def test_managed_mode_cascades_along_depends_on(emulator):
    memory = agentcore(emulator, mode="managed")
    memory.reset()
    memory.apply(added("a", 1, fact("payments-v1", "exists", "true")))
    memory.apply(
        added(
            "b",
            1,
            fact("payments-v1", "dependency:postgres", "13"),
            deps=[("payments-v1", "exists")],
        )
    )
    memory.apply(invalidated("c", 5, fact("payments-v1", "exists", "true")))
    assert values(memory, "payments-v1", "dependency:postgres") == []


def test_a_backdated_revision_never_overrides_a_newer_value_in_managed_mode(emulator):
    memory = agentcore(emulator, mode="managed")
    memory.reset()
    memory.apply(added("a", 10, fact("broker", "choice", "sqs")))
    memory.apply(
        revised("late", 5, fact("broker", "choice", "rabbit"), fact("broker", "choice", "kafka"))
    )
    assert values(memory, "broker", "choice") == ["sqs"]


def test_answers_follow_next_token_past_one_page(emulator):
    memory = agentcore(emulator, top_k=60)
    memory.reset()
    for i in range(45):
        memory.apply(revalidated(f"r{i}", i, fact("auth", "owners", "@alice")))
    assert len(memory.answer(probe("auth", "owners"), day(100)).facts) == 45  # pages of 20


# -- reset and shadow safety -----------------------------------------------------------------


def test_reset_deletes_only_records_under_the_prefix_in_batches_the_service_accepts(emulator):
    outside = [
        emulator.put_record(MEMORY_ID, "healthd/shadow2/x", "a lookalike prefix"),
        emulator.put_record(MEMORY_ID, "prod/billing/owners", "the real memory"),
        emulator.put_record(MEMORY_ID, "healthd", "the parent"),
    ]
    for i in range(230):  # more than two batches of 100
        emulator.put_record(MEMORY_ID, f"{PREFIX}/k{i % 7}/p", f"record {i}")
    emulator.put_record(MEMORY_ID, PREFIX, "at the prefix itself")
    agentcore(emulator).reset()
    assert sorted(r.id for r in emulator.stored(MEMORY_ID)) == sorted(outside)


def test_a_prefix_not_declared_shadow_is_refused_before_any_request(emulator):
    for text in (
        target_text(emulator, shadow="off"),
        target_text(emulator).replace(",shadow=on", ""),
    ):
        with pytest.raises(TargetError, match="not declared shadow"):
            build_memory(parse_target(text))
    assert emulator.requests == []


def test_bad_switches_fail_at_load_naming_the_switch(emulator):
    cases = {
        "record_expiry_days=30": "record_expiry_days",
        "memory_id=nope": "memory_id",
        "namespace_prefix=a.b": "namespace_prefix",
        "top_k=101": "top_k",
        "mode=sometimes": "mode",
        "colour=red": "colour",
    }
    for switch, field in cases.items():
        name, value = switch.split("=")
        with pytest.raises(TargetError, match=f"switch {field}"):
            build_memory(parse_target(target_text(emulator, **{name: value})))
    assert emulator.requests == []


# -- the service's failure modes -------------------------------------------------------------


def test_throttling_and_server_errors_are_retried_by_botocore_within_a_bound(emulator):
    memory = agentcore(emulator, max_attempts=3)
    memory.reset()
    emulator.throttle_next(1)
    emulator.fail_next(1)
    memory.apply(added("a", 1, fact("auth", "language", "go")))
    assert values(memory, "auth", "language") == ["go"]
    emulator.throttle_next(3)
    memory.apply(added("b", 2, fact("auth", "owners", "@bob")))
    with pytest.raises(
        MemoryAdapterError, match=r"apply b: ThrottledException \(HTTP 429\) after 3 attempt"
    ):
        values(memory, "auth", "owners")


def test_a_partially_failed_batch_is_retried_and_never_duplicated(emulator):
    memory = agentcore(emulator)
    memory.reset()
    emulator.fail_records("a-1", times=2)
    memory.apply(added("a", 1, fact("auth", "language", "go")))
    memory.flush()
    assert len(emulator.stored(MEMORY_ID)) == 1
    assert values(memory, "auth", "language") == ["go"]


def test_a_record_the_service_keeps_failing_is_reported_not_dropped(emulator):
    memory = agentcore(emulator, max_attempts=2)
    memory.reset()
    emulator.fail_records("ev-9-1", times=5)
    memory.apply(added("ev-9", 1, fact("auth", "language", "go")))
    with pytest.raises(
        MemoryAdapterError, match=r"apply ev-9: the service failed record ev-9-1 2 times"
    ):
        values(memory, "auth", "language")


def test_bounded_polling_waits_out_the_read_after_write_delay(aws_env):
    with AgentCoreEmulator(read_after_write_delay=0.4) as emu:
        emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        eager = agentcore(emu)
        eager.reset()
        eager.apply(added("a", 1, fact("auth", "language", "go")))
        assert values(eager, "auth", "language") == []  # not visible yet
        assert eager.unsettled_reads == 0  # no wait configured: nothing checked
        patient = agentcore(emu, consistency_wait_seconds=5, namespace_prefix="healthd/other")
        patient.reset()
        patient.apply(added("a", 1, fact("auth", "language", "go")))
        assert values(patient, "auth", "language") == ["go"]
        patient.apply(
            revised("b", 2, fact("auth", "language", "go"), fact("auth", "language", "rust"))
        )
        assert values(patient, "auth", "language") == ["go", "rust"]  # native keeps both


def test_error_shapes_the_emulator_cannot_produce_become_one_clear_error(aws_env):
    memory = build_memory(
        parse_target(
            f"agentcore:memory_id={MEMORY_ID},namespace_prefix={PREFIX},shadow=on,region=us-east-1"
        )
    )
    client = memory._client()
    with Stubber(client) as stub, Stubber(memory._control()) as control:
        control.add_response("get_memory", {"memory": described(indexed=FILTER_KEYS)})
        stub.add_client_error(
            "list_memory_records",
            service_error_code="ServiceQuotaExceededException",
            service_message="quota for memory records exceeded",
            http_status_code=402,
        )
        with pytest.raises(
            MemoryAdapterError,
            match="listing records under 'healthd/shadow': ServiceQuotaExceededException: quota",
        ):
            memory.reset()
        stub.add_response("list_memory_records", {"memoryRecordSummaries": []})
        stub.add_response(
            "batch_create_memory_records",
            {"successfulRecords": [], "failedRecords": []},
        )
        memory.apply(added("a", 1, fact("auth", "language", "go")))
        with pytest.raises(MemoryAdapterError, match="neither success nor failure"):
            memory.flush()


# -- record expiry: fixed per record at write time --------------------------------------------


def test_a_changed_record_expiry_applies_only_to_records_written_afterwards(emulator):
    first_run = agentcore(emulator, record_expiry_days=31)
    first_run.reset()
    first_run.apply(added("a", 1, fact("billing", "owners", "@alice", "ownership")))
    first_run.apply(added("b", 1, fact("auth", "language", "node")))
    first_run.close()
    # the next run (the daemon's incremental run: no reset) with a longer expiry
    with capture_logs() as logs:
        second_run = agentcore(emulator, record_expiry_days=90, consistency_wait_seconds=30)
        second_run.apply(added("c", 2, fact("checkout", "latency_budget", "300ms")))
    warning = [l for l in logs if l["event"] == "agentcore record expiry changed"]
    assert warning and warning[0]["earlier_records"] == {"31d": 2}
    assert warning[0]["record_expiry_days"] == 90
    assert second_run.expiry_report() == {31: 2, 90: 1}
    started = time.monotonic()  # records it did not write are no reason to wait
    assert values(second_run, "billing", "owners") == ["@alice"]
    assert time.monotonic() - started < 5 and second_run.unsettled_reads == 0
    emulator.advance(40 * DAY)  # past the first records' 31 days, within the new 90
    assert values(second_run, "billing", "owners") == []
    assert values(second_run, "auth", "language") == []
    assert values(second_run, "checkout", "latency_budget") == ["300ms"]
    emulator.advance(60 * DAY)
    assert values(second_run, "checkout", "latency_budget") == []


def test_an_expiry_passing_on_the_service_is_a_changed_key_and_no_reason_to_wait(emulator):
    memory = AgentCoreMemory(
        AgentCoreOptions.model_validate(
            {
                "memory_id": MEMORY_ID,
                "namespace_prefix": PREFIX,
                "shadow": True,
                "mode": "managed",
                "region": "us-east-1",
                "endpoint_url": emulator.url,
                "record_expiry_days": 31,
                "consistency_wait_seconds": 5,
            }
        ),
        wall_clock=emulator.now,  # the service's clock
    )
    memory.reset()
    memory.apply(added("a", 1, fact("auth", "language", "go")))
    memory.apply(added("b", 1, fact("auth", "owners", "@ann", "ownership")))
    memory.flush()  # the service's clock starts a record's expiry when it receives it
    assert memory.changed_keys(day(1)) == {("auth", "language"), ("auth", "owners")}
    assert memory.changed_keys(day(1)) == set()
    emulator.advance(20 * DAY)
    memory.apply(revalidated("c", 2, fact("auth", "owners", "@ann", "ownership")))  # re-stamped
    memory.flush()
    memory.changed_keys(day(2))
    emulator.advance(12 * DAY)  # 32 days after the first writes, 12 after the update
    assert memory.changed_keys(day(2)) == {("auth", "language")}
    started = time.monotonic()
    assert values(memory, "auth", "language") == []
    assert values(memory, "auth", "owners") == ["@ann"]
    assert time.monotonic() - started < 3 and memory.unsettled_reads == 0


# -- bad input: one line, exit 2 -------------------------------------------------------------


def _cli(target: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--target", target],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_bad_input_is_one_line_naming_the_problem_and_exit_2(emulator):
    env = {**no_aws_env(), **DUMMY_AWS}
    no_credentials = {**no_aws_env(), **{k: v for k, v in DUMMY_AWS.items() if "KEY" not in k}}
    with AgentCoreEmulator() as closed:
        unreachable = closed.url
    cases = [
        (target_text(emulator, memory_id="unknown_memory-0000000000"), env,
         "memory 'unknown_memory-0000000000' not found in region us-east-1"),
        (target_text(emulator, shadow="off"), env, "namespace prefix 'healthd/shadow' is not declared shadow"),
        (target_text(emulator), no_credentials, "no AWS credentials found in the standard chain"),
        (target_text(emulator, endpoint_url=unreachable, max_attempts=2, timeout_seconds=2), env,
         f"cannot reach {unreachable} after 2 attempt(s)"),
    ]  # fmt: skip
    for target, environment, message in cases:
        result = _cli(target, environment)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], result.stderr
        assert DUMMY_AWS["AWS_SECRET_ACCESS_KEY"] not in result.stderr + result.stdout


# -- the real service --------------------------------------------------------------------------


def _live_reason() -> str | None:
    if not os.environ.get("HEALTHD_AGENTCORE_MEMORY_ID"):
        return "HEALTHD_AGENTCORE_MEMORY_ID is not set"
    try:
        credentials = boto3.Session().get_credentials()
    except Exception as exc:  # a broken profile is a reason to skip, not to fail collection
        return f"AWS credentials unusable: {type(exc).__name__}"
    if credentials is None:
        return "no AWS credentials in the standard chain"
    return None


@pytest.mark.skipif(_live_reason() is not None, reason=f"live AgentCore test: {_live_reason()}")
def test_live_agentcore_memory_round_trip():  # pragma: no cover - needs AWS
    memory = build_memory(
        parse_target(
            f"agentcore:memory_id={os.environ['HEALTHD_AGENTCORE_MEMORY_ID']},"
            "namespace_prefix=healthd-live-test/shadow,shadow=on,mode=managed,"
            "consistency_wait_seconds=60"
        )
    )
    assert isinstance(memory, AgentCoreMemory)
    try:
        memory.reset()
        memory.apply(added("live-1", 1, fact("auth", "language", "node")))
        memory.apply(
            revised("live-2", 2, fact("auth", "language", "node"), fact("auth", "language", "go"))
        )
        assert values(memory, "auth", "language", at=3) == ["go"]
    finally:
        memory.reset()
        memory.close()


def test_a_botocore_without_per_record_expiry_is_named_with_the_version_needed(emulator, tmp_path):
    import gzip
    import json

    import botocore

    source = Path(botocore.__file__).parent / "data" / "bedrock-agentcore" / "2024-02-28"
    model = json.loads(gzip.decompress((source / "service-2.json.gz").read_bytes()))
    del model["shapes"]["BatchCreateMemoryRecordsInput"]["members"]["recordExpirySpecification"]
    older = tmp_path / "bedrock-agentcore" / "2024-02-28"
    older.mkdir(parents=True)
    (older / "service-2.json").write_text(json.dumps(model))
    env = {**no_aws_env(), **DUMMY_AWS, "AWS_DATA_PATH": str(tmp_path)}
    result = _cli(target_text(emulator), env)
    assert result.returncode == 2
    assert (
        "does not ship the bedrock-agentcore memory-record model healthd needs; install "
        in result.stderr
    )
    assert "botocore>=1.43.112" in result.stderr and emulator.requests == []


def test_check_config_accepts_an_agentcore_target_without_calling_the_service(emulator, tmp_path):
    config = tmp_path / "healthd.toml"
    config.write_text(
        "example = true\n"  # a configuration names its sources (issue 23)
        "[targets.agentcore]\n"
        'kind = "agentcore"\nshadow = true\n'
        f'memory_id = "{MEMORY_ID}"\nnamespace_prefix = "healthd/shadow"\nmode = "managed"\n'
        f'region = "us-east-1"\nendpoint_url = "{emulator.url}"\nrecord_expiry_days = 90\n'
        "consistency_wait_seconds = 2.5\ntop_k = 30\n"
    )
    env = {**no_aws_env(), **DUMMY_AWS}
    run = [sys.executable, "-m", "healthd", "check-config", "--config", str(config)]
    ok = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert emulator.requests == []
    config.write_text(
        config.read_text().replace("record_expiry_days = 90", "record_expiry_days = 7")
    )
    bad = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2
    assert (
        "targets.agentcore.record_expiry_days: Input should be greater than or equal to 31"
        in bad.stderr
    )


def test_the_live_tests_variable_is_not_taken_for_a_setting():
    env = {**no_aws_env(), "HEALTHD_AGENTCORE_MEMORY_ID": "live_memory-0123456789"}
    result = subprocess.run(
        [sys.executable, "-m", "healthd", "check-config"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_a_memory_named_by_its_arn_is_read_by_its_id_on_the_control_plane(emulator):
    """The data plane's MemoryId takes an ARN; the control plane's GetMemory takes only the
    id (botocore's bedrock-agentcore-control model), so a configured ARN is cut there."""
    arn = f"arn:aws:bedrock-agentcore:us-east-1:123456789012:memory/{MEMORY_ID}"
    memory = agentcore(emulator, memory_id=arn)
    memory.reset()
    memory.apply(added("a1", 1, fact("auth", "owners", "@alice")))
    assert values(memory, "auth", "owners") == ["@alice"]
    # a question past SearchCriteria.searchQuery's 10,000 characters is cut, not refused
    long = Probe("p-long", "Who owns auth? " + "x" * 12_000, "auth", "owners", "ownership")
    assert [f.value for f in memory.answer(long, day(400)).facts] == ["@alice"]
