"""The drill-down: every probe failing at the final stage, and the forgetting layer it shows.

A probe fails as

* ``stale``: it returned a fact last validated longer ago than its domain's staleness window;
* ``contaminated``: it returned a fact that has been superseded or invalidated;
* ``missed``: a fact that is true now is not among what it returned;
* ``conflicting``: it returned two or more values for a key that holds one value;
* ``invented``: it returned a value its key has never held (status ``unknown``: most often
  one the reader found in a served item's text, flagged ``invented``);

with the definitions of the metrics (facts flagged ``historical`` count in none), so the
rows of one kind are exactly what the final-stage metric of that kind counts (the records
that keep consistency below 1 are the contaminated and the invented ones).

When a run holds ``reference`` beside ``reference`` with forgetting mechanisms switched off,
a failure of a switched-off variant that ``reference`` itself does not have belongs to the
switched-off layer: TTL (``ttl``), supersession (``supersession``) or cascade
(``propagation``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from healthd.timeline import parse_timestamp

KINDS: tuple[str, ...] = ("stale", "contaminated", "missed", "conflicting", "invented")
LAYERS: Mapping[str, str] = {"ttl": "TTL", "supersession": "supersession", "propagation": "cascade"}
_OFF = frozenset({"off", "false", "no", "0"})


@dataclass(frozen=True, slots=True)
class Failure:
    target: str
    kind: str
    probe: Mapping[str, Any]
    offending: tuple[int, ...]  # positions in probe["retrieved"] that make it fail
    layer: str | None = None


def _key(fact: Mapping[str, Any]) -> tuple[str, str]:
    return (fact["subject"], fact["predicate"])


def probe_failures(
    target: str,
    probe: Mapping[str, Any],
    at: datetime,
    windows: Mapping[str, timedelta],
    multi_valued: Collection[tuple[str, str]] = (),
) -> list[Failure]:
    """The ways one probe of the final stage fails, in the order of :data:`KINDS`.

    ``multi_valued`` names the keys that may hold several values; a probe whose truth holds
    several values marks its own key multi-valued even when it is not named.
    """
    retrieved: Sequence[Mapping[str, Any]] = probe["retrieved"]
    pool = [i for i, f in enumerate(retrieved) if "historical" not in f["flags"]]
    own_key = (probe["subject"], probe["predicate"])
    several = set(multi_valued)
    if len(probe["expected"]) > 1:
        several.add(own_key)
    out: list[Failure] = []

    stale = tuple(
        i
        for i in pool
        if at - parse_timestamp(retrieved[i]["validated_at"]) > windows[retrieved[i]["domain"]]
    )
    if stale:
        out.append(Failure(target, "stale", probe, stale))
    ended = tuple(i for i in pool if retrieved[i]["status"] in ("superseded", "invalidated"))
    if ended:
        out.append(Failure(target, "contaminated", probe, ended))
    returned = {retrieved[i]["value"] for i in pool if _key(retrieved[i]) == own_key}
    if any(value not in returned for value in probe["expected"]):
        out.append(Failure(target, "missed", probe, ()))
    values: dict[tuple[str, str], set[str]] = {}
    for i in pool:
        values.setdefault(_key(retrieved[i]), set()).add(retrieved[i]["value"])
    clashing = {key for key, vals in values.items() if len(vals) > 1 and key not in several}
    if clashing:
        out.append(
            Failure(
                target,
                "conflicting",
                probe,
                tuple(i for i in pool if _key(retrieved[i]) in clashing),
            )
        )
    invented = tuple(i for i in pool if retrieved[i]["status"] == "unknown")
    if invented:
        out.append(Failure(target, "invented", probe, invented))
    return out


def off_switches(kind: str, options: Mapping[str, Any]) -> frozenset[str] | None:
    """The forgetting mechanisms a ``reference`` target's options switch off (empty when all
    are on), or None for any other kind."""
    if kind != "reference":
        return None
    return frozenset(
        name for name in LAYERS if str(options.get(name, "on")).strip().lower() in _OFF
    )


def label_options(label: str) -> dict[str, str]:
    """The switches of a ``kind:name=value,...`` target label, as the command line names
    targets in a report."""
    _, _, rest = label.partition(":")
    options = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        name, _, value = part.partition("=")
        options[name.strip()] = value.strip()
    return options


def attribute_layers(
    failures: Sequence[Failure], switched: Mapping[str, frozenset[str] | None]
) -> list[Failure]:
    """Name the layer of each failure of a ``reference`` target with mechanisms switched off
    that a ``reference`` target with all of them on, in the same run, does not have.
    ``switched`` maps each target name to :func:`off_switches` of it."""
    baseline = next((name for name, off in switched.items() if off == frozenset()), None)
    if baseline is None:
        return list(failures)
    caught = {(f.probe["id"], f.kind) for f in failures if f.target == baseline}
    out = []
    for failure in failures:
        off = switched.get(failure.target)
        if off and (failure.probe["id"], failure.kind) not in caught:
            layer = " + ".join(LAYERS[name] for name in LAYERS if name in off)
            failure = Failure(failure.target, failure.kind, failure.probe, failure.offending, layer)
        out.append(failure)
    return out
