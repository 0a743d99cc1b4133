"""An oracle of DESIGN.md's metrics written from the definitions alone: it imports nothing of
healthd and shares none of its code, so a property that compares the two finds a defect
the two would otherwise share.

Scope: timelines whose ``depends_on`` form no cycle, scored against an add-only memory
(every write kept, none removed, validated at the event's time), in full detail at every
stage: freshness, consistency, coverage, forgetting, contamination and conflicts, for all
domains and per domain.

Events are plain tuples: (kind, (subject, predicate, value, domain), previous or None,
multi, at, depends_on) with ``at`` a number of days; ``previous`` is a fact tuple on a
revision; ``depends_on`` a tuple of (subject, predicate) keys, and may be left off.
"""

from __future__ import annotations

from dataclasses import dataclass

DOMAINS = ("tech", "ownership", "decision", "requirement")
WINDOW_DAYS = {"ownership": 30, "tech": 90, "decision": 180, "requirement": 365}


@dataclass
class Stretch:
    value: str
    domain: str
    start: float
    end: float | None = None
    end_kind: str | None = None
    depends_on: tuple = ()


def held_stretches(events: list[tuple]) -> dict[tuple[str, str], list[Stretch]]:
    """What every key held, from the events so far. Operations apply in event time (arrival
    order breaking ties): a revision ends what it revises, then asserts its fact; a
    single-valued key (no event so far declared it multi-valued) holds one value at a time;
    an assertion of a value already held changes nothing. Cascades go by instants: a key
    that held a value during an instant and holds none once the instant's events are all
    applied was left with no value then, and that ends, at that instant, each held fact
    asserted at an earlier instant that depends on it; those ends may leave more keys with
    no value, and so on. (A key emptied at the very instant a fact is asserted does not end
    it, whichever of the two arrived first.)"""
    multi = {e[1][:2] for e in events if e[3]}
    order = sorted(range(len(events)), key=lambda n: (events[n][4], n))
    held: dict[tuple[str, str], dict[str, Stretch]] = {}
    out: dict[tuple[str, str], list[Stretch]] = {}

    def end(key: tuple[str, str], value: str, at: float, kind: str) -> None:
        stretch = held.get(key, {}).pop(value, None)
        if stretch is not None:
            stretch.end, stretch.end_kind = at, kind

    def start(key: tuple[str, str], fact: tuple, at: float, depends_on: tuple) -> None:
        stretch = Stretch(fact[2], fact[3], at, depends_on=depends_on)
        held.setdefault(key, {})[fact[2]] = stretch
        out.setdefault(key, []).append(stretch)

    instants: dict[float, list[int]] = {}
    for n in order:
        instants.setdefault(events[n][4], []).append(n)
    for at, arrived in instants.items():
        holding = {key for key, values in held.items() if values}
        asserted: dict[tuple, tuple] = {}  # (key, value) asserted at this instant: (fact, deps)
        for n in arrived:
            kind, fact, previous, _, _, *rest = events[n]
            depends_on = tuple(rest[0]) if rest else ()
            if previous is not None:
                end(previous[:2], previous[2], at, "superseded")
            key, value = fact[:2], fact[2]
            if kind == "invalidated":
                end(key, value, at, "invalidated")
                continue
            asserted.setdefault((key, value), (fact, depends_on))
            if value not in held.get(key, {}):
                if key not in multi:
                    for other in list(held.get(key, {})):
                        end(key, other, at, "superseded")
                start(key, fact, at, depends_on)
                holding.add(key)
        emptied = {key for key in holding if not held.get(key)}
        while emptied:
            holding = {key for key, values in held.items() if values}
            for key, values in list(held.items()):
                for value, stretch in list(values.items()):
                    if stretch.start < at and emptied.intersection(stretch.depends_on):
                        end(key, value, at, "invalidated")
                        if (key, value) in asserted:  # asserted at this instant: holds on
                            fact, depends_on = asserted[key, value]
                            start(key, fact, at, depends_on)
            emptied = {key for key in holding if not held.get(key)}
    return out


def status(found: list[Stretch], value: str, at: float) -> tuple[str, str | None]:
    """(status, domain of the stretch that gives it) of ``value`` at ``at``."""
    started = [s for s in found if s.value == value and s.start <= at]
    if not started:
        return "unknown", None
    last = started[-1]
    if last.end is None or last.end > at:
        return "current", last.domain
    return last.end_kind or "invalidated", last.domain


def share(n: int, d: int) -> float | None:
    return n / d if d else None


def stage_metrics(events: list[tuple], window: int = 3) -> list[dict[str, dict]]:
    """The metrics at every stage of replaying ``events`` into an add-only memory."""
    out: list[dict[str, dict]] = []
    keys: dict[tuple[str, str], str] = {}  # every key, with its probe's domain (first seen)
    for _, fact, previous, _, _, *_ in events:
        for f in (previous, fact) if previous else (fact,):
            keys.setdefault(f[:2], f[3])
    due: dict[int, list[tuple[tuple[str, str], str, str]]] = {}
    last_status: dict[tuple[tuple[str, str], str], str] = {}
    forget = {d: [0, 0] for d in (*DOMAINS, "all")}  # [due, forgotten]
    for i in range(1, len(events) + 1):
        seen = events[:i]
        t = max(e[4] for e in seen)
        folded = held_stretches(seen)
        held = {key: folded.get(key, []) for key in keys}
        multi = {key: any(e[3] and e[1][:2] == key for e in seen) for key in keys}
        memory: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
        for kind, fact, _, _, at, *_ in seen:
            if kind != "invalidated":
                memory.setdefault(fact[:2], []).append((fact[2], fact[3], at))
        counts = {d: dict.fromkeys(("pool", "fresh", "consistent", "expected", "covered",
                                    "probes", "contaminated", "conflicts"), 0)
                  for d in (*DOMAINS, "all")}  # fmt: skip

        def add(domain: str, name: str, counts: dict[str, dict[str, int]] = counts) -> None:
            counts[domain][name] += 1
            counts["all"][name] += 1

        asserted = {e[1][:2] for e in seen if e[0] != "invalidated"}
        for key in asserted:
            answer = memory.get(key, [])
            contaminated = False
            for value, domain, at in answer:
                add(domain, "pool")
                if t - at <= WINDOW_DAYS[domain]:
                    add(domain, "fresh")
                state = status(held[key], value, t)[0]
                if state == "current":
                    add(domain, "consistent")
                elif state != "unknown":
                    contaminated = True
            returned = {value for value, _, _ in answer}
            for s in held[key]:
                if s.start <= t and (s.end is None or s.end > t):
                    add(s.domain, "expected")
                    if s.value in returned:
                        add(s.domain, "covered")
            add(keys[key], "probes")
            if contaminated:
                add(keys[key], "contaminated")
            if len(returned) > 1 and not multi[key]:
                add(keys[key], "conflicts")

        for key in keys:
            for value in {s.value for s in held[key]}:
                state, domain = status(held[key], value, t)
                before = last_status.get((key, value), "unknown")
                if state in ("superseded", "invalidated") and before in ("current", "unknown"):
                    due.setdefault(i + window, []).append((key, value, domain or ""))
                if state != "unknown":
                    last_status[(key, value)] = state
        for key, value, domain in due.pop(i, []):
            if status(held[key], value, t)[0] == "current":
                continue
            forgotten = key not in asserted or value not in {v for v, _, _ in memory.get(key, [])}
            for bucket in (domain, "all"):
                forget[bucket][0] += 1
                forget[bucket][1] += forgotten

        out.append(
            {
                d: {
                    "freshness": share(c["fresh"], c["pool"]),
                    "consistency": share(c["consistent"], c["pool"]),
                    "coverage": share(c["covered"], c["expected"]),
                    "forgetting": share(forget[d][1], forget[d][0]),
                    "contamination": share(c["contaminated"], c["probes"]),
                    "conflicts": c["conflicts"],
                }
                for d, c in counts.items()
            }
        )
    return out
