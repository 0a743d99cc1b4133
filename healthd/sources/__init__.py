"""Sources turn a project's history into ChangeEvents, keeping a cursor between runs.

Sources know nothing of memories. Each kind registers a factory under its name, as
blackbox_exporter maps prober names to functions; an unknown kind fails at config load.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from healthd.errors import ConfigError, SourceError
from healthd.model import ChangeEvent
from healthd.people import Person


@dataclass
class PullResult:
    """What one pull produced.

    ``cursor`` covers exactly ``events``: when the pull failed part-way (``error`` set), the
    cursor stops before what was not fetched, so the next pull resumes without loss or
    duplicates. ``skipped`` lists inputs that could not be understood, each with its reason,
    once (a source that reads an input twice in one pull, as a second pass does, says so once).
    """

    events: list[ChangeEvent]
    cursor: str | None
    error: str | None = None
    skipped: list[str] = field(default_factory=list)
    # Where the source read each event (id → e.g. "file line 3"), from a source that may
    # deliver an event again (a rewritten file): the daemon reports a repeated id whose
    # content changed, with its place, instead of dropping it silently.
    places: dict[str, str] | None = None
    # Pieces put together (:func:`pull_from_start`): the places of an id's later readings,
    # in order, as ``places`` keeps its first.
    repeat_places: dict[str, list[str]] | None = None
    # The source stopped at a bound with more to read: the daemon stores what it got and
    # pulls again from the new cursor before replaying, so a backlog is taken in slices.
    more: bool = False
    # The identity records the source knows as of this pull (a Backstage User's name with
    # its profile, a CODEOWNERS handle or e-mail): all of them, replacing what the source
    # gave before; None when the source says nothing of people. Kept apart from the events
    # (the timeline's JSONL is unchanged): the run builds the reader's people table of them.
    people: list[Person] | None = None
    # What the source left for a later pull because it is not whole yet (a file's last line
    # with no end of line): the daemon pulls again; a one-shot pull, which will not, says so.
    unfinished: str | None = None

    def __post_init__(self) -> None:
        self.skipped = list(dict.fromkeys(self.skipped))

    @property
    def ok(self) -> bool:
        return self.error is None


def pull_from_start(source: Source) -> PullResult:
    """Everything ``source`` gives from the start: a source that stops at a bound with more
    to read (``PullResult.more``, a file read in slices) is pulled again from its new cursor
    until it has no more, as the daemon does within one run. Stops at the first error, with
    the events and skipped inputs before it."""
    whole = source.pull(None)
    while whole.more and whole.error is None:
        step = source.pull(whole.cursor)
        whole.events.extend(step.events)
        whole.skipped.extend(step.skipped)
        if whole.places is not None and step.places is not None:
            repeats = whole.repeat_places = whole.repeat_places or {}
            for event_id, place in step.places.items():
                if event_id in whole.places:
                    repeats.setdefault(event_id, []).append(place)
                else:
                    whole.places[event_id] = place
        whole.cursor, whole.error, whole.more = step.cursor, step.error, step.more
        whole.unfinished = step.unfinished
        if step.people is not None:
            whole.people = step.people
    if whole.unfinished is not None and whole.error is None:
        whole.skipped.append(f"{whole.unfinished}: not read (no more is coming in one run)")
    return whole


def unique_events(
    events: list[ChangeEvent],
    origin: str,
    conflicts: list[str] | None = None,
    repeat_places: Mapping[str, list[str]] | None = None,
) -> tuple[list[ChangeEvent], int]:
    """``events`` without repeats of an identical event, and how many were repeats.

    When one id carries two different contents, raises SourceError naming both (keeping
    either would silently lose a change); given ``conflicts``, keeps the first instead, as
    the daemon's state does, and says why there (a file's lines, read in several pieces).
    ``repeat_places`` (:attr:`PullResult.repeat_places`: the places of each id's later
    readings, in order) names where a repeat was read, else its position among ``events``.
    """
    first: dict[str, ChangeEvent] = {}
    out: list[ChangeEvent] = []
    refused = 0
    readings: dict[str, int] = {}  # of each id, the readings after its first so far
    for position, event in enumerate(events):
        before = first.get(event.id)
        if before is None:
            first[event.id] = event
            out.append(event)
            continue
        nth = readings[event.id] = readings.get(event.id, 0) + 1
        if before != event:
            later = (repeat_places or {}).get(event.id, [])
            where = later[nth - 1] if nth <= len(later) else None
            problem = (
                f"duplicate event id {event.id!r} with different content: "
                f"{describe_event(before)} and, "
                f"{f'on {where}' if where else f'as event {position + 1}'}, {describe_event(event)}"
            )
            if conflicts is None:
                raise SourceError(f"{origin}: {problem}")
            conflicts.append(f"{problem}; the first kept")
            refused += 1
    return out, len(events) - len(out) - refused


def kept_repeat_places(
    events: list[ChangeEvent],
    kept: list[ChangeEvent],
    repeat_places: Mapping[str, list[str]] | None,
) -> dict[str, list[str]] | None:
    """``repeat_places`` less the places of the readings ``kept`` (a subset of ``events``,
    in order) left out, so that the nth later reading :func:`unique_events` meets among
    ``kept`` is named by its own line."""
    if not repeat_places:
        return None
    still = {id(event) for event in kept}
    readings: dict[str, int] = {}  # of each id, its readings before this one
    out: dict[str, list[str]] = {}
    first_kept: set[str] = set()
    for event in events:
        nth = readings[event.id] = readings.get(event.id, -1) + 1
        if id(event) not in still:
            continue
        if event.id not in first_kept:  # (the one the others are compared with)
            first_kept.add(event.id)
            continue
        places = repeat_places.get(event.id, [])
        if nth <= len(places):
            out.setdefault(event.id, []).append(places[nth - 1])
    return out


def differs_from(first: ChangeEvent, event: ChangeEvent) -> str:
    """What ``event`` says otherwise than ``first``, which another source gave under its
    id: the fields that differ (``"value, timestamp"``), "" when it is the same event. The
    name of the source that gave it is not what an event says (each source stamps its own:
    two Jira sources whose queries overlap give one ticket's event under two names)."""
    from healthd.timeline import event_to_dict

    a, b = event_to_dict(first), event_to_dict(event)
    a.pop("source"), b.pop("source")
    if a == b:
        return ""
    fa, fb = a.pop("fact"), b.pop("fact")
    fields = [k for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)]
    fields += [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    return ", ".join(fields)


def describe_event(event: ChangeEvent) -> str:
    """An event in a few words, for a line that reports it: type, key, value and time."""
    what = f"{event.type} {event.fact.subject} {event.fact.predicate}={event.fact.value!r}"
    if event.previous is not None:
        what += f" (was {event.previous.subject} {event.previous.predicate})"
    return f"{what} at {event.timestamp.isoformat()}"


@runtime_checkable
class Source(Protocol):
    name: str
    kind: str

    def pull(self, cursor: str | None) -> PullResult:
        """Events newer than ``cursor`` (all of them when ``cursor`` is None)."""
        ...


SourceFactory = Callable[[str, Mapping[str, Any]], Source]
_REGISTRY: dict[str, SourceFactory] = {}


def register_source(kind: str) -> Callable[[SourceFactory], SourceFactory]:
    def decorator(factory: SourceFactory) -> SourceFactory:
        _REGISTRY[kind] = factory
        return factory

    return decorator


def source_kinds() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def build_source(kind: str, name: str, options: Mapping[str, Any]) -> Source:
    _load_builtin(kind)
    try:
        factory = _REGISTRY[kind]
    except KeyError:
        raise ConfigError(
            f"source {name!r}: unknown kind {kind!r}; known kinds: {', '.join(source_kinds())}"
        ) from None
    return factory(name, options)


def _load_builtin(kind: str | None = None) -> None:
    """Import the built-in sources (importing one registers its kind), or only the module
    named like ``kind`` when there is one: a `git` source need not load the HTTP client,
    YAML and the catalog code of the others (a third of a one-shot pull's start-up)."""
    import importlib
    import pkgutil

    if kind is not None and kind in _REGISTRY:
        return
    names = [m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")]
    if kind is not None and kind in names:
        names = [kind]
    for module in names:
        importlib.import_module(f"{__name__}.{module}")
