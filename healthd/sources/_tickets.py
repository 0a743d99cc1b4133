"""What the ticket sources (GitHub, Jira) share: state-to-facts diffing, cursor and
timestamp helpers, and option validation.

A ticket source replays an issue's history from its creation: after each API event it
derives the facts the issue asserts at that moment and emits the difference from the facts
it asserted just before (added / revised / invalidated). Replaying the whole history each
time an issue is fetched makes the derived state exact; the per-issue watermark in the
cursor decides which of the resulting events are new.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests

from healthd._http import HttpError
from healthd.errors import quote
from healthd.logging import env_secret, register_secret
from healthd.model import ChangeEvent, Fact, FactKey

TICKET_PREDICATES = ("requirement", "decision")


class TicketSource:
    """The seams every ticket source takes: an HTTP session, and a clock, a sleep and a
    random source for backoff, so tests run against a local server without real waiting."""

    def __init__(
        self,
        name: str,
        options: Any,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.options = options
        self.session = session or requests.Session()
        self._sleep, self._clock, self._rng = sleep, clock, rng
        self._environ = os.environ if environ is None else environ


def env_credential(
    variable: str, option: str, environ: Mapping[str, str], *, in_header: bool = True
) -> str:
    """The credential the environment variable ``variable`` (named by the option ``option``)
    holds, without the whitespace around it (the line break a secret file ends with); ""
    when unset. HttpError, naming the variable and never its value, when what is left is
    not one line of printable text, or, for one sent as it is in a header (``in_header``;
    a user name goes base64-encoded), of printable ASCII: requests refuses such a header,
    and the pull failed as "InvalidHeader" four times over without saying which variable."""
    given = env_secret(variable, environ)
    token = given.strip()
    if given and not token:  # (an empty secret file: set, so "not set" would mislead)
        raise HttpError(
            f"environment variable {variable} ({option}) is set but holds only whitespace; "
            "it must hold the credential"
        )
    register_secret(token)  # (a message may hold it without the whitespace around it)
    if not token.isprintable() or (in_header and not token.isascii()):
        what = (
            "a line break, a control character or a character outside ASCII"
            if in_header
            else "a line break or a control character"
        )
        raise HttpError(
            f"environment variable {variable} ({option}) holds {what} inside its value; it "
            "must be the credential alone, on one line"
        )
    return token


class Malformed(ValueError):
    """A payload item lacks a field or has the wrong type; the message names the field."""


def parse_time(value: object, field: str) -> datetime:
    """API timestamps (GitHub ``...Z``, Jira ``...000+0000``) → aware UTC datetimes."""
    if not isinstance(value, str) or not value:
        raise Malformed(f"field '{field}' is missing or not a timestamp string")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        ts = datetime.fromisoformat(text)
    except ValueError:
        raise Malformed(f"field '{field}' is not an ISO 8601 timestamp: {value[:40]!r}") from None
    if ts.tzinfo is None:
        raise Malformed(f"field '{field}' has no timezone: {value[:40]!r}")
    try:
        return ts.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-01:00 is in the year 10000 in UTC
        raise Malformed(
            f"field '{field}' is out of range once converted to UTC: {value[:40]!r}"
        ) from None


def format_time(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def require(obj: Any, key: str, kind: type | tuple[type, ...], path: str) -> Any:
    if not isinstance(obj, dict):
        raise Malformed(f"field '{path}' is not an object" if path else "item is not an object")
    if key not in obj or obj[key] is None:
        raise Malformed(f"field '{path}.{key}' is missing" if path else f"field '{key}' is missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        where = f"{path}.{key}" if path else key
        raise Malformed(f"field '{where}' has the wrong type ({type(value).__name__})")
    return value


MAX_ID = 2**63 - 1  # GitHub's ids are int64; Jira's are Java longs, sent as strings


def identifier(obj: Any, key: str, path: str) -> int:
    """A record's numeric id, which a per-issue watermark is built from: a positive integer
    (or, as Jira sends them, its decimal string) below 2^63. One id of 10^30 would otherwise
    become the watermark and hide every later record of its issue."""
    value = require(obj, key, (int, str), path)
    where = f"{path}.{key}" if path else key
    if isinstance(value, str):
        if not (value.isascii() and value.isdigit() and len(value) <= 19):
            raise Malformed(f"field '{where}' is not a decimal id: {quote(value)}")
        value = int(value)
    if not 0 < value <= MAX_ID:
        raise Malformed(f"field '{where}' is not an id between 1 and 2^63-1: {quote(value)}")
    return int(value)


@dataclass(frozen=True)
class Change:
    type: str
    fact: Fact
    previous: Fact | None = None
    reason: str | None = None


def diff(
    before: Mapping[FactKey, Fact], after: Mapping[FactKey, Fact], reason: str
) -> list[Change]:
    """Changes that turn ``before`` into ``after``, in a stable order: ended keys first, the
    issue's own fact before ownership facts."""

    def order(key: FactKey) -> tuple[bool, FactKey]:
        return key.predicate not in TICKET_PREDICATES, key

    changes: list[Change] = []
    for key in sorted(set(before) - set(after), key=order):
        changes.append(Change("invalidated", before[key], reason=reason))
    for key in sorted(after, key=order):
        old = before.get(key)
        new = after[key]
        if old is None:
            changes.append(Change("added", new))
        elif old != new:
            changes.append(Change("revised", new, previous=old))
    return changes


def to_events(
    changes: list[Change],
    *,
    base_id: str,
    timestamp: datetime,
    source: str,
    metadata: Mapping[str, str],
) -> list[ChangeEvent]:
    """ChangeEvents with ids derived from the API's own id (``base_id``).

    The issue's own fact (requirement/decision) takes ``base_id`` itself when it is the only
    one changed by this API event, else ``base_id:<predicate>``; ownership facts take
    ``base_id:owners:<area>``.
    """
    ticket = [c for c in changes if c.fact.predicate in TICKET_PREDICATES]
    out = []
    for change in changes:
        if change.fact.predicate in TICKET_PREDICATES:
            event_id = base_id if len(ticket) == 1 else f"{base_id}:{change.fact.predicate}"
        else:
            event_id = f"{base_id}:{change.fact.predicate}:{change.fact.subject}"
        out.append(
            ChangeEvent(
                id=event_id,
                type=change.type,  # type: ignore[arg-type]
                timestamp=timestamp,
                source=source,
                fact=change.fact,
                previous=change.previous,
                reason=change.reason,
                metadata=dict(metadata),
            )
        )
    return out


@dataclass(frozen=True)
class AreaClaim:
    """One ticket's say about an area's owners after one API event: ``owners`` empty when
    the ticket no longer claims the area (unassigned, unlabelled, closed). ``retracted``:
    the ticket, still open, explicitly took people off the area (they were unassigned, or
    its area label or component was removed), which ends what it said about them; a claim
    that ends by the ticket closing only lapses."""

    timestamp: datetime
    order: tuple[Any, ...]  # ties: ticket, then API event order
    area: str
    ticket: str
    owners: frozenset[str]
    reason: str
    base_id: str
    metadata: Mapping[str, str]
    retracted: bool = False


def owners_value(owners: Iterable[str]) -> str:
    return " ".join(sorted(set(owners), key=lambda o: (o.lower(), o)))


@dataclass
class AreaOwners:
    """Who holds each area, by ticket: ``active`` claims (an open, assigned ticket naming
    the area) and ``lapsed`` ones (the ticket closed). A lapse is not evidence that its
    people stopped owning the area, so a lapsed claim keeps counting until a newer claim on
    the area replaces it; a retraction (people unassigned from the open ticket, or its
    area label or component removed) is: they no longer hold the area through it."""

    active: dict[str, dict[str, str]]  # area → ticket → owners
    lapsed: dict[str, dict[str, str]]

    def owners(self, area: str) -> str:
        holders = [*self.active.get(area, {}).values(), *self.lapsed.get(area, {}).values()]
        return owners_value(o for value in holders for o in value.split())

    def apply(self, claim: AreaClaim) -> None:
        active = self.active.setdefault(claim.area, {})
        lapsed = self.lapsed.setdefault(claim.area, {})
        if claim.retracted:
            if claim.owners:
                active[claim.ticket] = owners_value(claim.owners)
            else:
                active.pop(claim.ticket, None)
        elif claim.owners:
            lapsed.clear()  # a newer claim replaces what lapsed before it
            active[claim.ticket] = owners_value(claim.owners)
        elif claim.ticket in active:
            lapsed[claim.ticket] = active.pop(claim.ticket)
        for table in (self.active, self.lapsed):
            if not table[claim.area]:
                del table[claim.area]

    def cursor(self) -> dict[str, Any]:
        return {"areas": self.active, "lapsed_areas": self.lapsed}


def fold_area_owners(claims: list[AreaClaim], areas: AreaOwners, source: str) -> list[ChangeEvent]:
    """Events of ``(<area>, owners, <union>, ownership)``: an area's owners are the union
    over the tickets that claim it, so one ticket's change never erases what another still
    says, and a claim that lapses (the ticket closed) holds until a newer one replaces it:
    ticket-derived ownership is never ended by a ticket closing; left alone it ages through
    its domain's staleness window. A retraction (see :class:`AreaClaim`) takes its people
    off the union; when it leaves nobody, the fact is invalidated with the claim's reason.
    ``areas`` is the state, updated in place; ids are the claiming API event's id plus
    ``:owners:<area>``."""
    out: list[ChangeEvent] = []
    for claim in sorted(claims, key=lambda c: (c.timestamp, c.order)):
        before = areas.owners(claim.area)
        areas.apply(claim)
        after = areas.owners(claim.area)
        if before == after:
            continue
        if not after:
            out.append(
                ChangeEvent(
                    id=f"{claim.base_id}:owners:{claim.area}",
                    type="invalidated",
                    timestamp=claim.timestamp,
                    source=source,
                    fact=Fact(claim.area, "owners", before, "ownership"),
                    reason=claim.reason,
                    metadata=dict(claim.metadata),
                )
            )
            continue
        out.append(
            ChangeEvent(
                id=f"{claim.base_id}:owners:{claim.area}",
                type="revised" if before else "added",
                timestamp=claim.timestamp,
                source=source,
                fact=Fact(claim.area, "owners", after, "ownership"),
                previous=Fact(claim.area, "owners", before, "ownership") if before else None,
                metadata=dict(claim.metadata),
            )
        )
    return out


def lapses_of_gone(
    areas: AreaOwners,
    gone: Iterable[str],
    at: datetime,
    *,
    reason: str,
    base_id: Callable[[str], str],
    order: Callable[[str], tuple[Any, ...]],
) -> list[AreaClaim]:
    """The lapses of every claim held by a ticket in ``gone`` (no longer among the open
    tickets the source reads: moved, deleted, out of its query), as of ``at``: the last
    time the ticket was known, so a newer claim on its area replaces it. ``reason`` is
    formatted with ``ticket``."""
    gone = set(gone)
    return [
        AreaClaim(
            at,
            order(ticket),
            area,
            ticket,
            frozenset(),
            reason.format(ticket=ticket),
            base_id(ticket),
            {"event": "gone"},
        )
        for area, holders in areas.active.items()
        for ticket in sorted(holders)
        if ticket in gone
    ]


def restores(
    areas: AreaOwners,
    ticket: str,
    claimed: Mapping[str, frozenset[str]],
    read_claims: Iterable[AreaClaim],
    told: dict[str, set[str]],
    at: datetime,
    *,
    order: tuple[Any, ...],
    base_id: str,
    metadata: Mapping[str, str],
) -> list[AreaClaim]:
    """Claims that put back what a ticket read whole in this pull says now (``claimed``,
    area → owners) where the state no longer holds it and no claim of this pull about the
    ticket will (``read_claims``, the ticket's from this reading; ``told``, per ticket the
    areas the pull has claims about, kept up to date here): a claim lapsed because the
    ticket was not found (it left the query, or a listing missed it) and is back,
    unchanged. Empty when the state agrees."""
    areas_told = told.setdefault(ticket, set())
    areas_told.update(claim.area for claim in read_claims)
    out = [
        AreaClaim(at, order, area, ticket, owners, f"{ticket} read again", base_id, metadata)
        for area, owners in sorted(claimed.items())
        if area not in areas_told
        and owners
        and areas.active.get(area, {}).get(ticket) != owners_value(owners)
    ]
    areas_told.update(claim.area for claim in out)
    return out


def pending_claims(claims: Iterable[AreaClaim]) -> list[list[Any]]:
    """Claims a failed pull read but did not fold, as its cursor keeps them: the tickets
    they came from are marked read, so no later pull reads them again, and folded after
    the next pull's older ones they would leave a lapse that a newer claim had replaced."""
    rows: dict[str, list[Any]] = {}  # (a pull failing again reads the same claims again)
    for c in claims:
        row = [
            format_time(c.timestamp),
            list(c.order),
            c.area,
            c.ticket,
            sorted(c.owners),
            c.reason,
            c.base_id,
            dict(c.metadata),
            c.retracted,
        ]
        rows.setdefault(json.dumps(row, sort_keys=True), row)
    return list(rows.values())


def load_pending_claims(state: Mapping[str, Any]) -> list[AreaClaim]:
    """:func:`pending_claims` read back; ValueError when the cursor's are not such."""
    out = []
    for raw in state.get("pending_claims", []):
        try:
            at, order, area, ticket, owners, reason, base_id, metadata, retracted = raw
            if not (
                isinstance(order, list) and isinstance(owners, list) and isinstance(metadata, dict)
            ):
                raise TypeError
            claim = AreaClaim(
                parse_time(at, "pending_claims"),
                tuple(order),
                area,
                ticket,
                frozenset(owners),
                reason,
                base_id,
                dict(metadata),
                retracted,
            )
        except (TypeError, ValueError):
            raise ValueError("field 'pending_claims' holds an item that is not a claim") from None
        texts = (area, ticket, reason, base_id, *claim.owners, *claim.metadata.values())
        if not all(isinstance(t, str) for t in texts) or not isinstance(retracted, bool):
            raise ValueError("field 'pending_claims' holds an item that is not a claim")
        out.append(claim)
    return out


def as_folded(areas: AreaOwners, claims: Iterable[AreaClaim]) -> AreaOwners:
    """A copy of ``areas`` with ``claims`` applied in time order, ``areas`` left as it is:
    the state a pull's restores compare with while a failed pull's claims wait to be folded
    (against the state alone, each read of an issue they name put its claims back again)."""
    folded = AreaOwners(
        {area: dict(t) for area, t in areas.active.items()},
        {area: dict(t) for area, t in areas.lapsed.items()},
    )
    for claim in sorted(claims, key=lambda c: (c.timestamp, c.order)):
        folded.apply(claim)
    return folded


def load_areas(state: Mapping[str, Any]) -> AreaOwners:
    def table(raw: Any) -> dict[str, dict[str, str]]:
        if not isinstance(raw, dict):
            return {}
        return {
            str(area): {str(t): v for t, v in holders.items() if isinstance(v, str) and v}
            for area, holders in raw.items()
            if isinstance(holders, dict) and holders
        }

    return AreaOwners(table(state.get("areas")), table(state.get("lapsed_areas")))


#: The cursor's fields a pull reads as text (or null), besides ``since``.
_TEXT_FIELDS = ("list_since", "list_etag", "open_etag", "api")


def load_cursor(cursor: str | None, kind: str) -> dict[str, Any]:
    """Decode our own JSON cursor; raises ValueError, naming the field, on anything we did
    not write (a state file edited by hand, or another tool's)."""
    if not cursor:
        return {}
    state = json.loads(cursor)
    if not isinstance(state, dict) or state.get("kind") != kind:
        raise ValueError(f"not a {kind} cursor")
    if state.get("since") is not None:
        parse_time(state["since"], "since")
    for name, value_type in (("seen", int), ("event_page_etags", str)):
        table = state.get(name, {})
        if not isinstance(table, dict) or not all(
            isinstance(v, value_type) and not isinstance(v, bool) for v in table.values()
        ):
            raise ValueError(f"field {name!r} is not an object of {value_type.__name__}s")
    for name in _TEXT_FIELDS:
        if not isinstance(state.get(name), (str, type(None))):
            raise ValueError(f"field {name!r} is not a string")
    if not isinstance(state.get("pending_claims", []), list):
        raise ValueError("field 'pending_claims' is not a list")
    load_pending_claims(state)
    return state


def dump_cursor(kind: str, state: Mapping[str, Any]) -> str:
    return json.dumps({"kind": kind, **state}, sort_keys=True, separators=(",", ":"))


def sort_events(events: list[ChangeEvent]) -> list[ChangeEvent]:
    """Event-time order; ties keep arrival order (Python's sort is stable)."""
    return sorted(events, key=lambda e: e.timestamp)
