"""One AgentCore Memory call through boto3, its errors converted at the boundary into one
:class:`MemoryAdapterError` line that names what was being done (shared by both modes)."""

from __future__ import annotations

from typing import Any

from healthd.errors import MemoryAdapterError

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

    try:
        response: dict[str, Any] = getattr(client, operation)(**kwargs)
        return response
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
