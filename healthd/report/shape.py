"""Checks that a loaded `healthd evaluate --format json` report has the documented shape.

A wrong shape is one :class:`ReportShapeError` naming the first place that is wrong
(``targets[0].stages[3].metrics.tech.freshness: expected a number or null, got 'x'``), so a
hand-edited or truncated file fails before anything is rendered.
"""

from __future__ import annotations

from typing import Any

from healthd.errors import ReportShapeError, TimelineError
from healthd.model import DOMAINS
from healthd.scoring import BUCKETS
from healthd.timeline import parse_timestamp

RATIOS: tuple[str, ...] = ("freshness", "consistency", "coverage", "forgetting", "contamination")
METRICS: tuple[str, ...] = (*RATIOS, "conflicts")
ROLES: tuple[str, ...] = ("subject", "baseline")
STATUSES = frozenset({"current", "superseded", "invalidated", "unknown"})


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def _field(obj: dict[str, Any], name: str, where: str) -> Any:
    if name not in obj:
        raise ReportShapeError(f"{where}: missing field {name!r}")
    return obj[name]


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ReportShapeError(f"{where}: expected an object, got {_type_name(value)}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ReportShapeError(f"{where}: expected a list, got {_type_name(value)}")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ReportShapeError(f"{where}: expected a string, got {_type_name(value)}")
    return value


def _timestamp(value: Any, where: str) -> None:
    try:
        parse_timestamp(_string(value, where))
    except TimelineError as exc:
        message = str(exc).split(": ", 1)[-1]
        raise ReportShapeError(f"{where}: {message}") from None


def _domain(value: Any, where: str) -> None:
    if _string(value, where) not in DOMAINS:
        raise ReportShapeError(f"{where}: {value!r} is not one of {', '.join(DOMAINS)}")


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReportShapeError(f"{where}: expected an integer, got {_type_name(value)}")
    return value


def _ratio(value: Any, where: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ReportShapeError(f"{where}: expected a number from 0 to 1 or null, got {value!r}")


def _metrics(value: Any, where: str) -> None:
    buckets = _object(value, where)
    for bucket in BUCKETS:
        m = _object(_field(buckets, bucket, where), f"{where}.{bucket}")
        for name in RATIOS:
            _ratio(_field(m, name, f"{where}.{bucket}"), f"{where}.{bucket}.{name}")
        conflicts = _integer(
            _field(m, "conflicts", f"{where}.{bucket}"), f"{where}.{bucket}.conflicts"
        )
        if conflicts < 0:
            raise ReportShapeError(f"{where}.{bucket}.conflicts: negative ({conflicts})")


def _probe(value: Any, where: str) -> None:
    probe = _object(value, where)
    for name in ("id", "question", "subject", "predicate"):
        _string(_field(probe, name, where), f"{where}.{name}")
    _domain(_field(probe, "domain", where), f"{where}.domain")
    for i, item in enumerate(_list(_field(probe, "expected", where), f"{where}.expected")):
        _string(item, f"{where}.expected[{i}]")
    retrieved = _list(_field(probe, "retrieved", where), f"{where}.retrieved")
    for i, item in enumerate(retrieved):
        at = f"{where}.retrieved[{i}]"
        fact = _object(item, at)
        for name in ("subject", "predicate", "value"):
            _string(_field(fact, name, at), f"{at}.{name}")
        _domain(_field(fact, "domain", at), f"{at}.domain")
        _timestamp(_field(fact, "validated_at", at), f"{at}.validated_at")
        status = _string(_field(fact, "status", at), f"{at}.status")
        if status not in STATUSES:
            raise ReportShapeError(
                f"{at}.status: {status!r} is not one of {', '.join(sorted(STATUSES))}"
            )
        for j, flag in enumerate(_list(_field(fact, "flags", at), f"{at}.flags")):
            _string(flag, f"{at}.flags[{j}]")


def check_stage(value: Any, at: str, previous: int) -> int:
    """Raise naming where unless ``value`` is a stage whose index follows ``previous`` (the
    index of the stage before it, 0 for the first); its index."""
    stage = _object(value, at)
    index = _integer(_field(stage, "index", at), f"{at}.index")
    if index <= previous:
        raise ReportShapeError(f"{at}.index: {index} does not follow {previous}")
    _string(_field(stage, "event_id", at), f"{at}.event_id")
    _timestamp(_field(stage, "timestamp", at), f"{at}.timestamp")
    _metrics(_field(stage, "metrics", at), f"{at}.metrics")
    return index


def check_report(value: Any) -> dict[str, Any]:
    """Return ``value`` if it is a report of the documented shape, else raise naming where."""
    report = _object(value, "report")
    probe_set = _object(_field(report, "probe_set", "report"), "probe_set")
    _string(_field(probe_set, "version", "probe_set"), "probe_set.version")
    _integer(_field(probe_set, "count", "probe_set"), "probe_set.count")
    targets = _list(_field(report, "targets", "report"), "targets")
    for t, item in enumerate(targets):
        where = f"targets[{t}]"
        target = _object(item, where)
        _string(_field(target, "name", where), f"{where}.name")
        _string(_field(target, "kind", where), f"{where}.kind")
        if "role" in target and target["role"] not in ROLES:
            raise ReportShapeError(
                f"{where}.role: {target['role']!r} is not one of {', '.join(ROLES)}"
            )
        previous = 0
        for s, stage_item in enumerate(_list(_field(target, "stages", where), f"{where}.stages")):
            previous = check_stage(stage_item, f"{where}.stages[{s}]", previous)
        final = _object(_field(target, "final", where), f"{where}.final")
        _metrics(_field(final, "metrics", f"{where}.final"), f"{where}.final.metrics")
        probes = _list(_field(final, "probes", f"{where}.final"), f"{where}.final.probes")
        for p, probe in enumerate(probes):
            _probe(probe, f"{where}.final.probes[{p}]")
    return report
