"""Random timelines for the property tests: every shape of history the core must get right.

Several ``depends_on`` keys per event (chains and cycles), revisions that move a fact to
another key, keys declared multi-valued by some events and not others, values that change
domain, one (key, value) given several domains, keys declared multi-valued only after their
history (late declarations), events in any arrival order (backdated removals and re-adds
included), many events at one instant, and gaps longer than a short TTL x (1 + grace).
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import strategies as st
from timeline_builders import day, fact

from healthd.model import ChangeEvent, Fact, FactKey

#: Examples per property in the test command; scripts/property-run.sh raises it.
EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "2000"))

SUBJECTS = ("a", "b", "c")
PREDICATES = {
    "exists": "tech",
    "lang": "tech",
    "owner": "ownership",
    "choice": "decision",
    "tags": "requirement",
    "mixed": None,  # each value in its own domain: a key whose values change domain
    "shifty": None,  # each event gives its own domain: one (key, value) with several
}
DOMAINS = ("tech", "ownership", "decision", "requirement")
DOMAIN_OF_VALUE = {"1": "tech", "2": "ownership", "3": "decision"}
VALUES = ("1", "2", "3")
SHORT_TTL = {
    "ownership": timedelta(days=7),
    "tech": timedelta(days=15),
    "decision": timedelta(days=20),
    "requirement": timedelta(days=30),
}
#: Keys a fact may depend on: a module's existence, another fact (chains), a multi-valued key.
DEPENDENCY_KEYS = tuple(FactKey(s, p) for s in SUBJECTS for p in ("exists", "lang", "tags"))


def _rank(key: FactKey) -> tuple[str, int]:
    order = {"exists": 0, "tags": 1, "lang": 2}
    return key.subject, order.get(key.predicate, 3)


def make_fact(subject: str, predicate: str, value: str, drawn: str = "tech") -> Fact:
    if predicate == "shifty":
        return fact(subject, predicate, value, drawn)
    return fact(subject, predicate, value, PREDICATES[predicate] or DOMAIN_OF_VALUE[value])


facts = st.builds(
    make_fact,
    st.sampled_from(SUBJECTS),
    st.sampled_from(sorted(PREDICATES)),
    st.sampled_from(VALUES),
    st.sampled_from(DOMAINS),
)
# Small times give many ties at one instant; large ones give gaps past every short TTL.
times = st.one_of(st.integers(0, 6), st.integers(0, 200))


@st.composite
def raw_events(draw: st.DrawFn, acyclic: bool = False) -> tuple:
    kind = draw(
        st.sampled_from(["added", "added", "revised", "revised", "invalidated", "revalidated"])
    )
    current = draw(facts)
    if kind == "revised":
        # mostly the same key, sometimes a move to another key
        same_key = draw(st.booleans()) or draw(st.booleans())
        previous = (
            make_fact(
                current.subject,
                current.predicate,
                draw(st.sampled_from(VALUES)),
                draw(st.sampled_from(DOMAINS)),
            )
            if same_key
            else draw(facts)
        )
    else:
        previous = None
    deps = draw(st.lists(st.sampled_from(DEPENDENCY_KEYS), max_size=2, unique=True))
    if acyclic:  # a fact depends only on keys that come before its own: no cycle
        deps = [d for d in deps if _rank(d) < _rank(current.key)]
    multi = current.predicate == "tags" or draw(st.integers(0, 9)) == 0  # toggled by some
    return kind, current, previous, tuple(deps), multi, draw(times)


def build(raw: list[tuple]) -> list[ChangeEvent]:
    return [
        ChangeEvent(
            f"e{n}",
            kind,
            day(at),
            "prop",
            current,
            previous=previous,
            depends_on=deps,
            metadata={"cardinality": "multi"} if multi else {},
        )
        for n, (kind, current, previous, deps, multi, at) in enumerate(raw)
    ]


@st.composite
def raw_timelines(
    draw: st.DrawFn, acyclic: bool = False, max_size: int = 30, deps: bool = True
) -> list[tuple]:
    """Raw events, then sometimes late declarations: an assertion of a value a key already
    had, declaring the key multi-valued, at any time (backdated too), after its history."""
    raw = draw(st.lists(raw_events(acyclic), min_size=1, max_size=max_size))
    for _ in range(draw(st.integers(0, 2))):
        kind, current, previous, _, _, _ = draw(st.sampled_from(raw))
        late = previous if previous is not None and draw(st.booleans()) else current
        raw.append(("added", late, None, (), True, draw(times)))
    if not deps:
        raw = [(k, f, p, (), m, at) for k, f, p, _, m, at in raw]
    return raw


@st.composite
def cascading_timelines(draw: st.DrawFn) -> list[tuple]:
    """Acyclic timelines drawn to cascade: facts on the keys others may depend on, facts
    that depend on them (at any depth allowed by the key order), then ends of the former
    (invalidations, revisions moving them to another key) and re-additions, at any time and
    in any arrival order; mostly within a few days, so that many fall at one instant."""
    soon = st.integers(0, 6)
    roots = draw(
        st.lists(
            st.builds(
                make_fact,
                st.sampled_from(SUBJECTS[:2]),
                st.sampled_from(("exists", "tags", "lang")),
                st.sampled_from(VALUES[:2]),
            ),
            min_size=1,
            max_size=4,
        )
    )
    raw = [("added", f, None, (), f.predicate == "tags", draw(soon)) for f in roots]
    for _ in range(draw(st.integers(1, 8))):
        kind, current, previous, _, multi, at = draw(raw_events(acyclic=True))
        below = sorted({f.key for f in roots if _rank(f.key) < _rank(current.key)})
        deps = (
            draw(st.lists(st.sampled_from(below), min_size=1, max_size=2, unique=True))
            if below
            else []
        )
        raw.append((kind, current, previous, tuple(deps), multi, at))
    held = [e[1] for e in raw if e[0] != "invalidated" and e[1].key in DEPENDENCY_KEYS]
    for _ in range(draw(st.integers(1, 4))):
        ended = draw(st.sampled_from(held))
        if draw(st.booleans()):
            raw.append(("invalidated", ended, None, (), False, draw(st.one_of(soon, times))))
        elif draw(st.booleans()):
            raw.append(("revised", draw(facts), ended, (), False, draw(st.one_of(soon, times))))
        else:
            raw.append(("added", ended, None, (), False, draw(st.one_of(soon, times))))
    return draw(st.permutations(raw))


def timelines(acyclic: bool = False, max_size: int = 30) -> st.SearchStrategy[list[ChangeEvent]]:
    return raw_timelines(acyclic, max_size).map(build)
