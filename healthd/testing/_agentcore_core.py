"""What the AgentCore emulator's two planes share: the service's error, the long-term records
and a memory's store of them, the strategies, the metadata rules and filters records are
selected by, and :class:`Host`, what the event plane uses of the emulator.

:mod:`healthd.testing.agentcore` (the records' operations and the HTTP server) imports the
event plane, :mod:`healthd.testing.agentcore_events`; the plane imports only this module, so
neither imports the other back.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

CREATED_AT_KEY = "x-amz-agentcore-memory-createdAt"
UPDATED_AT_KEY = "x-amz-agentcore-memory-updatedAt"
OPERATORS = (
    "EQUALS_TO",
    "EXISTS",
    "NOT_EXISTS",
    "BEFORE",
    "AFTER",
    "CONTAINS",
    "GREATER_THAN",
    "GREATER_THAN_OR_EQUALS",
    "LESS_THAN",
    "LESS_THAN_OR_EQUALS",
)
MAX_FILTERS = 5
DAY = 86400.0
STRATEGY_TYPES = ("SEMANTIC", "SUMMARIZATION", "USER_PREFERENCE", "CUSTOM", "EPISODIC")

STRATEGY_ID = re.compile(r"[a-zA-Z][a-zA-Z0-9\-_]{0,99}-[a-zA-Z0-9]{10}")  # the control plane's
NAMESPACE_TEMPLATE = re.compile(r"[a-zA-Z0-9\-_/]*(\{[a-zA-Z][a-zA-Z0-9]*\}[a-zA-Z0-9\-_/]*)*")
META_STRING = re.compile(r"[a-zA-Z0-9 \t\n\x0b\f\r._:/=+@-]*")  # (the service's \s is ASCII)
_VARIABLE = re.compile(r"\{([a-zA-Z][a-zA-Z0-9]*)\}")


class ServiceError(Exception):
    def __init__(self, code: str, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.extra = extra


def validation_error(message: str) -> ServiceError:
    return ServiceError("ValidationException", 400, message, reason="FieldValidationFailed")


def request_digest(body: dict[str, Any]) -> str:
    """A request body without its ``clientToken``, digested: a token reused with another
    body is refused."""
    canonical = {k: v for k, v in body.items() if k != "clientToken"}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Strategy:
    """One of a memory's strategies (``MemoryStrategy`` in the control plane's model);
    ``schema`` maps the metadata keys its records keep to their types (its records keep no
    other key; empty: they keep every key)."""

    strategy_id: str
    namespace: str = "/strategies/{memoryStrategyId}/actors/{actorId}"
    type: str = "SEMANTIC"
    name: str = "facts"
    schema: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not STRATEGY_ID.fullmatch(self.strategy_id):
            raise ValueError(f"strategy id {self.strategy_id!r} does not match the model")
        if not NAMESPACE_TEMPLATE.fullmatch(self.namespace) or not 1 <= len(self.namespace) <= 512:
            raise ValueError(f"namespace template {self.namespace!r} does not match the model")
        if self.type not in STRATEGY_TYPES:
            raise ValueError(f"strategy type {self.type!r} is not one of {STRATEGY_TYPES}")

    def resolve(self, actor_id: str, session_id: str) -> str:
        values = {
            "actorId": actor_id,
            "sessionId": session_id,
            "memoryStrategyId": self.strategy_id,
        }
        return _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), self.namespace)

    def describe(self, created: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "strategyId": self.strategy_id,
            "name": self.name,
            "type": self.type,
            "namespaces": [self.namespace],
            "namespaceTemplates": [self.namespace],
            "status": "ACTIVE",
            "createdAt": created,
            "updatedAt": created,
        }
        if self.schema:
            out["memoryRecordSchema"] = {
                "metadataSchema": [
                    {"key": k, "type": t, "extractionType": "STRICTLY_CONSISTENT"}
                    for k, t in self.schema.items()
                ]
            }
        return out


@dataclass
class Record:
    id: str
    namespaces: list[str]
    content: str
    timestamp: float
    strategy_id: str
    metadata: dict[str, dict[str, Any]]
    created_at: float
    updated_at: float
    expires_at: float | None
    expiry_days: int | None
    visible_from: float
    deleted_at: float | None = None
    shown: Record | None = None  # what reads see until visible_from (None: nothing)

    def summary(self, score: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "memoryRecordId": self.id,
            "content": {"text": self.content},
            "memoryStrategyId": self.strategy_id,
            "namespaces": list(self.namespaces),
            "createdAt": self.created_at,
            "timestamp": self.timestamp,
        }
        if self.metadata:
            out["metadata"] = self.metadata
        if score is not None:
            out["score"] = score
        return out


@dataclass
class MemoryStore:
    memory_id: str
    records: dict[str, Record] = field(default_factory=dict)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_bodies: dict[str, str] = field(default_factory=dict)
    indexed_keys: dict[str, str] = field(default_factory=dict)
    strategies: dict[str, Strategy] = field(default_factory=dict)
    created_at: float = 0.0


class Host(Protocol):
    """What the event plane uses of the emulator it belongs to: the memories' records, the
    clock, record ids and ``create_memory``."""

    memories: dict[str, MemoryStore]

    def now(self) -> float: ...

    def _new_id(self) -> str: ...

    def create_memory(
        self,
        memory_id: str,
        *,
        indexed_keys: dict[str, str] | None = None,
        strategies: list[Strategy] | None = None,
    ) -> str: ...


# -- metadata and filters -------------------------------------------------------------------


def check_key(key: Any, what: str) -> None:
    if not isinstance(key, str) or not 1 <= len(key) <= 128 or not META_STRING.fullmatch(key):
        raise validation_error(f"{what} does not match the metadata key pattern")


def check_metadata_value(item: Any, where: str) -> None:
    if not isinstance(item, dict) or len(item) != 1:
        raise validation_error(f"{where} must hold exactly one of stringValue, stringListValue, "
                          "numberValue, dateTimeValue")  # fmt: skip
    ((kind, value),) = item.items()
    if kind == "stringValue":
        if (
            not isinstance(value, str)
            or not 1 <= len(value) <= 256
            or not META_STRING.fullmatch(value)
        ):
            raise validation_error(
                f"{where}.stringValue {value!r} does not match the value pattern"
            )
    elif kind == "stringListValue":
        if (
            not isinstance(value, list)
            or not 1 <= len(value) <= 5
            or not all(
                isinstance(v, str) and 1 <= len(v) <= 64 and META_STRING.fullmatch(v) for v in value
            )
        ):
            raise validation_error(
                f"{where}.stringListValue must be 1 to 5 strings of the value pattern"
            )
    elif kind in ("numberValue", "dateTimeValue"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise validation_error(f"{where}.{kind} must be a number")
    else:
        raise validation_error(f"{where}: unknown member {kind!r}")


def _metadata_of(record: Record, key: str) -> tuple[str, Any] | None:
    if key == CREATED_AT_KEY:
        return "dateTimeValue", record.created_at
    if key == UPDATED_AT_KEY:
        return "dateTimeValue", record.updated_at
    item = record.metadata.get(key)
    if item is None:
        return None
    ((kind, value),) = item.items()
    return kind, value


def metadata_filters(value: Any, indexed: dict[str, str]) -> list[Callable[[Record], bool]]:
    if value is None:
        return []
    if not isinstance(value, list) or not value:
        raise validation_error("metadataFilters must be a non-empty list")
    if len(value) > MAX_FILTERS:
        raise validation_error(
            f"metadataFilters has {len(value)} filters; the maximum is {MAX_FILTERS}"
        )
    return [_one_filter(f, i, indexed) for i, f in enumerate(value)]


def _one_filter(expression: Any, index: int, indexed: dict[str, str]) -> Callable[[Record], bool]:
    where = f"metadataFilters[{index}]"
    if not isinstance(expression, dict):
        raise validation_error(f"{where} must be an object")
    key = (expression.get("left") or {}).get("metadataKey")
    operator = expression.get("operator")
    check_key(key, f"{where}.left.metadataKey {key!r}")
    if key not in indexed and key not in (CREATED_AT_KEY, UPDATED_AT_KEY):
        raise validation_error(
            f"{where}: metadata key {key!r} is not an indexed key of this memory"
        )
    if operator not in OPERATORS:
        raise validation_error(
            f"{where}.operator {operator!r} is not one of {', '.join(OPERATORS)}"
        )
    if operator in ("EXISTS", "NOT_EXISTS"):
        if expression.get("right") is not None:
            raise validation_error(f"{where}: {operator} takes no right operand")
        present = operator == "EXISTS"
        return lambda r: (_metadata_of(r, key) is not None) == present
    right = (expression.get("right") or {}).get("metadataValue")
    if right is None:
        raise validation_error(f"{where}.right is required for {operator}")
    check_metadata_value(right, f"{where}.right.metadataValue")
    ((rkind, rvalue),) = right.items()
    system = key in (CREATED_AT_KEY, UPDATED_AT_KEY)
    if system and operator not in ("BEFORE", "AFTER"):
        raise validation_error(f"{where}: {key} takes BEFORE or AFTER")
    if operator in ("BEFORE", "AFTER"):
        if rkind != "dateTimeValue":
            raise validation_error(f"{where}: {operator} takes a dateTimeValue")

        def compare_time(record: Record) -> bool:
            got = _metadata_of(record, key)
            if got is None or got[0] != "dateTimeValue":
                return False
            return bool(got[1] < rvalue if operator == "BEFORE" else got[1] > rvalue)

        return compare_time
    if operator.startswith(("GREATER", "LESS")):
        if rkind != "numberValue":
            raise validation_error(f"{where}: {operator} takes a numberValue")
        test: Callable[[float], bool] = {
            "GREATER_THAN": lambda v: v > rvalue,
            "GREATER_THAN_OR_EQUALS": lambda v: v >= rvalue,
            "LESS_THAN": lambda v: v < rvalue,
            "LESS_THAN_OR_EQUALS": lambda v: v <= rvalue,
        }[operator]

        def compare_number(record: Record) -> bool:
            got = _metadata_of(record, key)
            return got is not None and got[0] == "numberValue" and test(got[1])

        return compare_number
    if operator == "CONTAINS":
        if rkind != "stringValue":
            raise validation_error(f"{where}: CONTAINS takes a stringValue")

        def contains(record: Record) -> bool:
            got = _metadata_of(record, key)
            if got is None:
                return False
            if got[0] == "stringListValue":
                return rvalue in got[1]
            return got[0] == "stringValue" and rvalue in got[1]

        return contains

    def equals(record: Record) -> bool:
        got = _metadata_of(record, key)
        return got is not None and got == (rkind, rvalue)

    return equals
