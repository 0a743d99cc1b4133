"""One AgentCore Memory call through boto3, its errors converted at the boundary into one
:class:`MemoryAdapterError` line that names what was being done (shared by both modes).

botocore parses an answer by the service model's shapes but never checks its types: an
answer whose fields are not what the model says fails inside botocore's parser, or later
in healthd. Each answer healthd reads is checked here against the model's types for the
fields it uses (``bedrock-agentcore`` 2024-02-28, ``bedrock-agentcore-control``
2023-06-05)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from healthd.errors import MemoryAdapterError, shorten
from healthd.memory._answers import Id, Shape, check

SCHEMA = "the AgentCore service model"


class _Content(Shape):
    text: str | None = None  # (a union: text is its only member today)


class _Summary(Shape):
    memoryRecordId: Id
    content: _Content
    namespaces: list[str]
    createdAt: datetime
    memoryStrategyId: str | None = None
    score: float | None = None
    metadata: dict[str, dict[str, object]] | None = None


class _Records(Shape):
    memoryRecordSummaries: list[_Summary]
    nextToken: str | None = None


class _RecordOutput(Shape):
    memoryRecordId: str | None = None
    status: str | None = None
    requestIdentifier: str | None = None
    errorCode: int | None = None
    errorMessage: str | None = None


class _Batch(Shape):
    successfulRecords: list[_RecordOutput] = []
    failedRecords: list[_RecordOutput] = []


class _IndexedKey(Shape):
    key: str
    type: str


class _Strategy(Shape):
    strategyId: str


class _Memory(Shape):
    indexedKeys: list[_IndexedKey] | None = None
    strategies: list[_Strategy] | None = None


class _GetMemory(Shape):
    memory: _Memory


class _Event(Shape):
    eventId: Id
    sessionId: Id


class _Created(Shape):
    event: _Event


class _Events(Shape):
    events: list[_Event]
    nextToken: str | None = None


class _Session(Shape):
    sessionId: Id


class _Sessions(Shape):
    sessionSummaries: list[_Session]
    nextToken: str | None = None


ANSWERS: dict[str, type[Shape]] = {
    "retrieve_memory_records": _Records,
    "list_memory_records": _Records,
    "batch_create_memory_records": _Batch,
    "batch_update_memory_records": _Batch,
    "batch_delete_memory_records": _Batch,
    "get_memory": _GetMemory,
    "create_event": _Created,
    "list_events": _Events,
    "list_sessions": _Sessions,
}

CREDENTIALS_HELP = (
    "no AWS credentials found in the standard chain (environment, shared credentials and "
    "config files, SSO, container or instance role)"
)


def call(
    client: Any,
    operation: str,
    what: str,
    *,
    memory_id: str,
    region: str | None,
    max_attempts: int,
    **kwargs: Any,
) -> dict[str, Any]:
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        ParamValidationError,
        PartialCredentialsError,
        ReadTimeoutError,
    )
    from botocore.parsers import ResponseParserError

    try:
        response: dict[str, Any] = getattr(client, operation)(**kwargs)
    except ClientError as exc:
        detail = client_error(exc, memory_id, region, max_attempts)
        raise MemoryAdapterError(f"agentcore memory: {what}: {detail}") from None
    except (NoCredentialsError, PartialCredentialsError):
        raise MemoryAdapterError(f"agentcore memory: {what}: {CREDENTIALS_HELP}") from None
    except (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError) as exc:
        raise MemoryAdapterError(
            f"agentcore memory: {what}: cannot reach {client.meta.endpoint_url} after "
            f"{max_attempts} attempt(s) ({type(exc).__name__})"
        ) from None
    except ParamValidationError as exc:
        detail = " ".join(str(exc).split())
        raise MemoryAdapterError(f"agentcore memory: {what}: {detail}") from None
    except BotoCoreError as exc:
        raise MemoryAdapterError(f"agentcore memory: {what}: {type(exc).__name__}: {exc}") from None
    except (ResponseParserError, AttributeError, TypeError, ValueError, KeyError,
            RuntimeError) as exc:  # fmt: skip
        # botocore's parser, given an answer that is not of the model's shapes (a union
        # with no member, a timestamp of 10^30: RuntimeError from dateutil)
        raise MemoryAdapterError(
            f"agentcore memory: {what}: the answer is not of {SCHEMA}'s shapes "
            f"({type(exc).__name__}: {shorten(str(exc), 160)})"
        ) from None
    shape = ANSWERS.get(operation)
    if shape is not None:
        check(shape, response, f"agentcore memory: {what}", SCHEMA)
    return response


def client_error(exc: Any, memory_id: str, region: str | None, max_attempts: int) -> str:
    error = exc.response.get("Error", {})
    code = error.get("Code", "error")
    message = error.get("Message", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "ResourceNotFoundException":
        return (
            f"memory {memory_id!r} not found in region {region} "
            f"(ResourceNotFoundException: {message})"
        )
    if code in ("AccessDeniedException", "UnrecognizedClientException"):
        return f"access denied to memory {memory_id!r} ({code}: {message})"
    if code in ("ThrottledException", "ThrottlingException") or (status or 0) >= 500:
        return f"{code} (HTTP {status}) after {max_attempts} attempt(s): {message}"
    return f"{code}: {message}"
