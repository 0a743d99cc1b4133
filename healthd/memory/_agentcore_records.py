"""How healthd's facts are written as AgentCore memory records: namespaces, metadata keys
and values within the service's patterns, and the way back from a record to a fact."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from healthd.model import DOMAINS, Fact, FactKey, RetrievedFact

SUBJECT_KEY = "healthd_subject"
PREDICATE_KEY = "healthd_predicate"
DOMAIN_KEY = "healthd_domain"
FACT_ID_KEY = "healthd_fact_id"
EVENT_ID_KEY = "healthd_event_id"
VALIDATED_KEY = "healthd_validated_at"
WRITTEN_KEY = "healthd_written_at"
EXPIRY_KEY = "healthd_expiry_days"
#: The keys healthd filters on, which the memory must index (the service filters on
#: indexed keys only), with their control-plane types.
FILTER_KEYS = {SUBJECT_KEY: "STRING", PREDICATE_KEY: "STRING", VALIDATED_KEY: "NUMBER"}
#: The service's limit on a record's text (``MemoryContentTextString``).
MAX_TEXT = 16_000

COMPONENT = re.compile(r"[a-zA-Z0-9_-]+")
#: The service's StringValue pattern, ``[a-zA-Z0-9\s._:/=+@-]*``, with ``\s`` as the
#: service's regex dialects read it (ASCII whitespace), not Python's (which takes a no-break
#: space, U+001C-U+001F and U+0085, and the service then refuses the write)
META_STRING = re.compile(r"[a-zA-Z0-9 \t\n\x0b\f\r._:/=+@-]*")
ENCODED = "b32:"


def under(summary: Mapping[str, Any], prefix: str) -> bool:
    namespaces = summary.get("namespaces") or []
    return bool(namespaces) and all(n == prefix or n.startswith(prefix + "/") for n in namespaces)


def namespace_of(summary: Mapping[str, Any]) -> str:
    namespaces = summary.get("namespaces") or [""]
    return str(namespaces[0])


def component(text: str) -> str:
    if COMPONENT.fullmatch(text) and len(text) <= 100:
        return text
    safe = re.sub(r"[^a-zA-Z0-9_-]+", "_", text).strip("_")[:80] or "x"
    return f"{safe}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def encode(text: str, what: str) -> str:
    """A metadata string value: the text when the service's pattern allows it, else base32."""
    if text and META_STRING.fullmatch(text) and not text.startswith(ENCODED) and len(text) <= 256:
        return text
    encoded = ENCODED + base64.b32encode(text.encode()).decode()
    if len(encoded) > 256:
        raise ValueError(f"{what} {text[:40]!r}... is too long for an AgentCore metadata value")
    return encoded


def decode(text: str) -> str:
    if text.startswith(ENCODED):
        return base64.b32decode(text[len(ENCODED) :]).decode()
    return text


def content(fact: Fact) -> str:
    return f"{fact.subject} {fact.predicate}: {fact.value}"


def fact_id(fact: Fact) -> str:
    doc = "\x00".join((fact.subject, fact.predicate, fact.value, fact.domain))
    return hashlib.sha256(doc.encode()).hexdigest()[:24]


def equals(key: str, value: str) -> dict[str, Any]:
    return {
        "left": {"metadataKey": key},
        "operator": "EQUALS_TO",
        "right": {"metadataValue": {"stringValue": value}},
    }


def string_value(summary: Mapping[str, Any], key: str) -> str:
    value = summary["metadata"][key]["stringValue"]
    if not isinstance(value, str):
        raise ValueError(key)
    return value


def number_value(summary: Mapping[str, Any], key: str) -> float | None:
    item = (summary.get("metadata") or {}).get(key)
    if not isinstance(item, dict) or "numberValue" not in item:
        return None
    return float(item["numberValue"])


def record_metadata(
    fact: Fact, event_id: str, validated: float, written: float, expiry_days: int | None
) -> dict[str, Any]:
    """A record's metadata; ValueError when a value cannot be written within the limits."""
    metadata: dict[str, Any] = {
        SUBJECT_KEY: {"stringValue": encode(fact.subject, "subject")},
        PREDICATE_KEY: {"stringValue": encode(fact.predicate, "predicate")},
        DOMAIN_KEY: {"stringValue": fact.domain},
        FACT_ID_KEY: {"stringValue": fact_id(fact)},
        EVENT_ID_KEY: {"stringValue": encode(event_id, "event id")},
        VALIDATED_KEY: {"numberValue": validated},
        WRITTEN_KEY: {"numberValue": written},
    }
    if expiry_days is not None:
        metadata[EXPIRY_KEY] = {"numberValue": expiry_days}
    return metadata


def to_fact(summary: Mapping[str, Any], key: FactKey) -> RetrievedFact | None:
    """The fact a record summary holds, or None when it is not a record healthd wrote for
    ``key``."""
    try:
        subject = decode(string_value(summary, SUBJECT_KEY))
        predicate = decode(string_value(summary, PREDICATE_KEY))
        domain = string_value(summary, DOMAIN_KEY)
        validated = number_value(summary, VALIDATED_KEY)
        written = number_value(summary, WRITTEN_KEY)
        text = summary["content"]["text"]
    except (KeyError, TypeError, ValueError):
        return None
    prefix = f"{subject} {predicate}: "
    if (
        (subject, predicate) != key
        or domain not in DOMAINS
        or validated is None
        or written is None
        or not isinstance(text, str)
        or not text.startswith(prefix)
    ):
        return None
    try:
        written_at = datetime.fromtimestamp(written, tz=UTC)
        validated_at = datetime.fromtimestamp(validated, tz=UTC)
    except (OverflowError, ValueError, OSError):  # a time no calendar holds: not healthd's
        return None
    return RetrievedFact(
        subject,
        predicate,
        text[len(prefix) :],
        domain,
        summary["memoryRecordId"],
        written_at,
        validated_at,
    )
