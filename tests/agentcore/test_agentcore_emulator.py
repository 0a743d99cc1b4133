"""The emulator speaks the service's protocol to real boto3 and keeps its documented
semantics: namespaces, every metadata operator, the limits botocore leaves to the server."""

from __future__ import annotations

from datetime import UTC, datetime

import boto3
import pytest
from agentcore_fixtures import MEMORY_ID
from botocore.config import Config
from botocore.exceptions import ClientError

CREATED = "x-amz-agentcore-memory-createdAt"


@pytest.fixture
def client(emulator):
    return boto3.client(
        "bedrock-agentcore",
        region_name="us-east-1",
        endpoint_url=emulator.url,
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )


def _create(client, namespace, text, metadata=None, rid="r1"):
    record = {
        "requestIdentifier": rid,
        "namespaces": [namespace],
        "content": {"text": text},
        "timestamp": datetime(2026, 1, 1, tzinfo=UTC),
    }
    if metadata:
        record["metadata"] = metadata
    response = client.batch_create_memory_records(memoryId=MEMORY_ID, records=[record])
    return response["successfulRecords"][0]["memoryRecordId"]


def _texts(client, filters=None, **where):
    kwargs = {"memoryId": MEMORY_ID, **where}
    if filters:
        kwargs["metadataFilters"] = filters
    return sorted(
        s["content"]["text"] for s in client.list_memory_records(**kwargs)["memoryRecordSummaries"]
    )


def _f(key, operator, value=None):
    out = {"left": {"metadataKey": key}, "operator": operator}
    if value is not None:
        out["right"] = {"metadataValue": value}
    return out


def test_every_metadata_operator_filters_as_documented(client, emulator):
    emulator.create_memory(
        MEMORY_ID, indexed_keys={"n": "NUMBER", "tags": "STRINGLIST", "s": "STRING"}
    )
    _create(
        client,
        "t/a",
        "one",
        {
            "n": {"numberValue": 1},
            "tags": {"stringListValue": ["x", "y"]},
            "s": {"stringValue": "billing-high"},
        },
    )
    emulator.advance(10)
    between = datetime.fromtimestamp(emulator.now() - 5, tz=UTC)
    _create(
        client, "t/a", "two", {"n": {"numberValue": 2}, "s": {"stringValue": "sales"}}, rid="r2"
    )
    cases = [
        ("n", "EQUALS_TO", {"numberValue": 2}, ["two"]),
        ("s", "EQUALS_TO", {"stringValue": "sales"}, ["two"]),
        ("tags", "EXISTS", None, ["one"]),
        ("tags", "NOT_EXISTS", None, ["two"]),
        ("tags", "CONTAINS", {"stringValue": "y"}, ["one"]),
        ("s", "CONTAINS", {"stringValue": "high"}, ["one"]),
        ("n", "GREATER_THAN", {"numberValue": 1}, ["two"]),
        ("n", "GREATER_THAN_OR_EQUALS", {"numberValue": 1}, ["one", "two"]),
        ("n", "LESS_THAN", {"numberValue": 2}, ["one"]),
        ("n", "LESS_THAN_OR_EQUALS", {"numberValue": 2}, ["one", "two"]),
        (CREATED, "BEFORE", {"dateTimeValue": between}, ["one"]),
        (CREATED, "AFTER", {"dateTimeValue": between}, ["two"]),
    ]
    for key, operator, value, expected in cases:
        assert _texts(client, [_f(key, operator, value)], namespace="t/a") == expected, operator


def test_namespace_is_exact_and_namespace_path_a_string_prefix(client):
    for i, namespace in enumerate(("a/b", "a/b/c", "a/bc", "z")):
        _create(client, namespace, namespace, rid=f"r{i}")
    assert _texts(client, namespace="a/b") == ["a/b"]
    assert _texts(client, namespacePath="a/b") == ["a/b", "a/b/c", "a/bc"]
    with pytest.raises(ClientError, match="either namespace or namespacePath"):
        client.list_memory_records(memoryId=MEMORY_ID)


def test_limits_botocore_leaves_to_the_server_are_enforced(client):
    too_many = [
        {
            "requestIdentifier": f"r{i}",
            "namespaces": ["n"],
            "content": {"text": "x"},
            "timestamp": 0,
        }
        for i in range(101)
    ]
    with pytest.raises(ClientError, match="101 members; the maximum is 100"):
        client.batch_create_memory_records(memoryId=MEMORY_ID, records=too_many)
    with pytest.raises(ClientError, match="6 filters; the maximum is 5"):
        client.list_memory_records(
            memoryId=MEMORY_ID, namespace="n", metadataFilters=[_f("k", "EXISTS")] * 6
        )
    with pytest.raises(ClientError, match="topK must be between 1 and 100"):
        client.retrieve_memory_records(
            memoryId=MEMORY_ID, namespace="n", searchCriteria={"searchQuery": "q", "topK": 101}
        )
    with pytest.raises(ClientError, match="does not match"):
        _create(client, "bad.namespace", "x")
    with pytest.raises(ClientError, match="stringValue"):
        _create(client, "n", "x", {"k": {"stringValue": "no,commas"}})
    with pytest.raises(ClientError) as error:
        client.batch_create_memory_records(memoryId="other_memory-0000000000", records=[])
    assert error.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_retried_batch_with_the_same_client_token_creates_nothing_twice(client, emulator):
    record = {
        "requestIdentifier": "r",
        "namespaces": ["n"],
        "content": {"text": "x"},
        "timestamp": 0,
    }
    first = client.batch_create_memory_records(
        memoryId=MEMORY_ID, records=[record], clientToken="t-1"
    )
    again = client.batch_create_memory_records(
        memoryId=MEMORY_ID, records=[record], clientToken="t-1"
    )
    assert first["successfulRecords"] == again["successfulRecords"]
    assert len(emulator.stored(MEMORY_ID)) == 1


def test_unsigned_requests_are_refused(emulator):
    import requests

    response = requests.post(
        f"{emulator.url}/memories/{MEMORY_ID}/memoryRecords", json={"namespace": "n"}, timeout=5
    )
    assert response.status_code == 403
    assert response.headers["x-amzn-ErrorType"] == "AccessDeniedException"


def test_an_events_request_to_a_memory_made_without_an_events_configuration_is_answered(
    aws_env,
):
    """A request may create the memory's events side (route -> configure -> create_memory)
    while the request's lock is held: the emulator answered nothing before (a deadlock)."""
    from healthd.testing.agentcore import AgentCoreEmulator

    with AgentCoreEmulator() as emu:
        emu.create_memory("healthd_shadow-a1b2c3d4e5")
        client = boto3.client(
            "bedrock-agentcore",
            region_name="us-east-1",
            endpoint_url=emu.url,
            config=Config(read_timeout=5, retries={"total_max_attempts": 1}),
        )
        answer = client.list_sessions(memoryId="healthd_shadow-a1b2c3d4e5", actorId="a")
    assert answer["sessionSummaries"] == []
