"""The emulator refuses what the service's model refuses (issue 21 item 4), keeps only a
strategy's schema keys, filters on indexed keys only, delays updates and deletes as it
delays creates, and describes the memory as the control plane's ``GetMemory`` does; all
through real boto3, which leaves these limits to the server."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from agentcore_fixtures import MEMORY_ID
from botocore.config import Config
from botocore.exceptions import ClientError

from healthd.testing.agentcore import AgentCoreEmulator, Strategy

STRATEGY = "semantic_facts-a1b2c3d4e5"
CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 1})


@pytest.fixture
def strict(aws_env):
    with AgentCoreEmulator(read_after_write_delay=5.0) as emu:
        emu.create_memory(
            MEMORY_ID,
            indexed_keys={"topic": "STRING", "n": "NUMBER"},
            strategies=[Strategy(STRATEGY, "facts/{actorId}", schema={"topic": "STRING"})],
        )
        yield emu


@pytest.fixture
def client(strict):
    return boto3.client(
        "bedrock-agentcore", region_name="us-east-1", endpoint_url=strict.url, config=CONFIG
    )


def _record(rid="r1", namespace="n", text="x", **extra):
    return {
        "requestIdentifier": rid,
        "namespaces": [namespace],
        "content": {"text": text},
        "timestamp": datetime(2026, 1, 1, tzinfo=UTC),
        **extra,
    }


def _create(client, *records, **extra):
    return client.batch_create_memory_records(memoryId=MEMORY_ID, records=list(records), **extra)


def _refused(call, message: str, reason: str = "FieldValidationFailed") -> None:
    with pytest.raises(ClientError) as error:
        call()
    assert error.value.response["Error"]["Code"] == "ValidationException"
    assert message in error.value.response["Error"]["Message"]
    assert error.value.response["reason"] == reason


def test_requests_the_model_refuses_are_refused_with_the_services_error(client):
    _create(client, _record(text="x" * 16_000))  # the limit itself is fine
    _refused(lambda: _create(client, _record(text="x" * 16_001)),
             "content.text has 16001 characters; the maximum is 16000")  # fmt: skip
    _refused(lambda: _create(client, _record(namespace="a/" * 512 + "b")),
             "namespace has 1025 characters; the maximum is 1024")  # fmt: skip
    reserved = {"x-amz-agentcore-memory-createdAt": {"stringValue": "2026"}}
    _refused(lambda: _create(client, _record(metadata=reserved)),
             "metadata key 'x-amz-agentcore-memory-createdAt' is reserved")  # fmt: skip
    _refused(lambda: _create(client, _record("same"), _record("same")),
             "requestIdentifier 'same' appears twice in one batch")  # fmt: skip
    _refused(lambda: client.retrieve_memory_records(
                memoryId=MEMORY_ID, namespace="n", searchCriteria={"searchQuery": "q" * 10_001}),
             "searchQuery has 10001 characters")  # fmt: skip
    for key in ("bad,key", "k" * 129):
        _refused(lambda key=key: client.list_memory_records(
                    memoryId=MEMORY_ID, namespace="n",
                    metadataFilters=[{"left": {"metadataKey": key}, "operator": "EXISTS"}]),
                 "does not match the metadata key pattern")  # fmt: skip
    for strategy in ("-not-an-id", "unknown_strategy-0123456789"):
        _refused(
            lambda s=strategy: _create(client, _record(memoryStrategyId=s)), "memoryStrategyId"
        )
    _create(client, _record("t"), clientToken="token-1")
    _refused(lambda: _create(client, _record("t", text="other"), clientToken="token-1"),
             "clientToken 'token-1' was used with another request body",
             "IdempotentParameterMismatchException")  # fmt: skip


def test_only_indexed_keys_and_the_system_keys_can_be_filtered(client, strict):
    def where(key, operator="EXISTS"):
        return client.list_memory_records(
            memoryId=MEMORY_ID,
            namespace="n",
            metadataFilters=[{"left": {"metadataKey": key}, "operator": operator}],
        )

    where("topic")
    _refused(lambda: where("colour"), "metadata key 'colour' is not an indexed key of this memory")
    strict.create_memory(MEMORY_ID, indexed_keys={"colour": "STRING"})  # added, never removed
    where("colour")
    where("topic")


def test_a_record_written_with_a_strategy_keeps_only_its_schema_keys(client, strict):
    metadata = {"topic": {"stringValue": "billing"}, "healthd_domain": {"stringValue": "tech"}}
    _create(client, _record(metadata=metadata, memoryStrategyId=STRATEGY))
    _create(client, _record("plain", metadata=metadata))
    by_strategy = {r.strategy_id: r.metadata for r in strict.stored(MEMORY_ID)}
    assert by_strategy == {STRATEGY: {"topic": {"stringValue": "billing"}}, "direct": metadata}


def test_updates_and_deletes_become_visible_after_the_read_delay_as_creates_do(client, strict):
    record_id = _create(client, _record(text="first"))["successfulRecords"][0]["memoryRecordId"]

    def texts():
        page = client.list_memory_records(memoryId=MEMORY_ID, namespace="n")
        return [s["content"]["text"] for s in page["memoryRecordSummaries"]]

    assert texts() == []
    strict.advance(6)
    assert texts() == ["first"]
    update = {"memoryRecordId": record_id, "timestamp": datetime(2026, 1, 2, tzinfo=UTC),
              "content": {"text": "second"}}  # fmt: skip
    client.batch_update_memory_records(memoryId=MEMORY_ID, records=[update])
    assert texts() == ["first"]  # reads still see the record as it was
    strict.advance(6)
    assert texts() == ["second"]
    client.batch_delete_memory_records(
        memoryId=MEMORY_ID, records=[{"memoryRecordId": record_id, "namespace": "n"}]
    )
    assert texts() == ["second"]
    strict.advance(6)
    assert texts() == []


def test_an_update_scoped_to_another_namespace_finds_no_record(client, strict):
    strict.read_after_write_delay = 0
    record_id = _create(client, _record())["successfulRecords"][0]["memoryRecordId"]
    update = {"memoryRecordId": record_id, "timestamp": datetime(2026, 1, 2, tzinfo=UTC),
              "content": {"text": "y"}}  # fmt: skip
    response = client.batch_update_memory_records(
        memoryId=MEMORY_ID, records=[{**update, "sourceNamespaces": ["other"]}]
    )
    assert response["failedRecords"][0]["errorCode"] == 404
    response = client.batch_update_memory_records(
        memoryId=MEMORY_ID, records=[{**update, "sourceNamespaces": ["n"]}]
    )
    assert response["successfulRecords"][0]["memoryRecordId"] == record_id


def test_get_memory_describes_indexed_keys_and_strategies_in_the_control_planes_shape(strict):
    control = boto3.client(
        "bedrock-agentcore-control",
        region_name="us-east-1",
        endpoint_url=strict.url,
        config=CONFIG,
    )
    memory = control.get_memory(memoryId=MEMORY_ID)["memory"]
    assert memory["id"] == MEMORY_ID and memory["status"] == "ACTIVE"
    assert memory["indexedKeys"] == [
        {"key": "topic", "type": "STRING"},
        {"key": "n", "type": "NUMBER"},
    ]
    (strategy,) = memory["strategies"]
    assert strategy["strategyId"] == STRATEGY and strategy["namespaces"] == ["facts/{actorId}"]
    assert strategy["memoryRecordSchema"]["metadataSchema"][0]["key"] == "topic"
    with pytest.raises(ClientError) as error:
        control.get_memory(memoryId="other_memory-0000000000")
    assert error.value.response["Error"]["Code"] == "ResourceNotFoundException"
