"""Ground truth: validity intervals by event time, cascades along depends_on."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from random_timelines import EXAMPLES
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.model import ChangeEvent, Fact, FactKey
from healthd.truth import GroundTruth, StoredKey

a, b, c = (fact("auth", "language", v) for v in ("a", "b", "c"))
exists = fact("payments-v1", "exists", "true")
pg = fact("payments-v1", "dependency:postgres", "13")
DEPS = [("payments-v1", "exists")]
BASE = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_revision_supersedes_the_previous_value():
    truth = GroundTruth([added("1", 0, a), revised("2", 10, a, b)])
    assert truth.status(a, day(5)) == "current"
    assert truth.status(a, day(10)) == "superseded"
    assert truth.status(b, day(9)) == "unknown"
    assert truth.status(b, day(10)) == "current"
    assert [f.value for f in truth.current(a.key, day(11))] == ["b"]


def test_a_backdated_revision_arriving_late_never_replaces_the_newer_one():
    truth = GroundTruth([added("1", 0, a), revised("2", 20, a, c), revised("3", 10, a, b)])
    assert truth.latest == day(20)
    assert [f.value for f in truth.current(a.key, day(30))] == ["c"]
    assert truth.status(b, day(15)) == "current"  # b held from day 10 to day 20
    assert truth.status(b, day(30)) == "superseded"
    assert truth.status(a, day(30)) == "superseded"


def test_an_invalidation_arriving_before_a_later_revalidation_does_not_win():
    truth = GroundTruth([added("1", 0, a), revalidated("2", 30, a), invalidated("3", 10, a)])
    assert truth.status(a, day(20)) == "invalidated"
    assert truth.status(a, day(40)) == "current"


def test_removing_a_module_ends_the_facts_that_depend_on_it():
    truth = GroundTruth([added("1", 0, exists), added("2", 1, pg, DEPS)])
    touched = truth.apply(invalidated("3", 5, exists))
    assert touched == {exists.key, pg.key}
    assert truth.status(pg, day(4)) == "current"
    assert truth.status(pg, day(5)) == "invalidated"
    assert truth.current(pg.key, day(6)) == []


def test_a_change_of_the_dependency_value_does_not_cascade():
    renamed = fact("payments-v1", "exists", "yes")
    truth = GroundTruth(
        [added("1", 0, exists), added("2", 1, pg, DEPS), revised("3", 5, exists, renamed)]
    )
    assert truth.status(pg, day(6)) == "current"


def test_cascades_are_transitive_and_a_late_removal_still_cascades():
    table = fact("payments-v1/ledger", "exists", "true")
    column = fact("payments-v1/ledger", "primary_key", "id")
    truth = GroundTruth(
        [
            added("1", 0, exists),
            added("2", 0, table, DEPS),
            added("3", 0, column, [("payments-v1/ledger", "exists")]),
            added("4", 20, node := fact("auth", "language", "go")),
        ]
    )
    truth.apply(invalidated("5", 10, exists))  # arrives after day 20, happened on day 10
    assert truth.status(table, day(20)) == "invalidated"
    assert truth.status(column, day(20)) == "invalidated"
    assert truth.status(node, day(20)) == "current"


def test_a_fact_asserted_after_the_removal_survives_it():
    truth = GroundTruth(
        [added("1", 0, exists), invalidated("2", 5, exists), added("3", 6, pg, DEPS)]
    )
    assert truth.status(pg, day(7)) == "current"


def test_multi_valued_keys_hold_several_values():
    x = fact("svc", "maintainers", "@x", "ownership")
    y = fact("svc", "maintainers", "@y", "ownership")
    z = fact("svc", "maintainers", "@z", "ownership")
    truth = GroundTruth(
        [
            added("1", 0, x, multi=True),
            added("2", 1, y, multi=True),
            revised("3", 2, x, z, multi=True),
        ]
    )
    assert [f.value for f in truth.current(x.key, day(3))] == ["@y", "@z"]
    assert truth.status(x, day(3)) == "superseded"
    assert truth.multi_valued(x.key)


def test_a_dependency_cycle_cascades_nothing_and_terminates():
    p = fact("p", "exists", "true")
    q = fact("q", "exists", "true")
    truth = GroundTruth([added("1", 0, p, [("q", "exists")]), added("2", 0, q, [("p", "exists")])])
    assert truth.status(p, day(1)) == "current"
    truth.apply(invalidated("3", 2, q))
    assert truth.status(p, day(3)) == "invalidated"


def test_revision_across_keys_ends_the_old_key():
    old = fact("adr:2", "decision", "Use Kafka", "decision")
    new = fact("adr:5", "decision", "Use SQS", "decision")
    truth = GroundTruth([added("1", 0, old), revised("2", 3, old, new)])
    assert truth.status(old, day(4)) == "superseded"
    assert truth.status(new, day(4)) == "current"
    assert truth.current(FactKey("adr:2", "decision"), day(4)) == []


def test_a_fact_reasserted_after_its_module_came_back_is_current_again():
    truth = GroundTruth(
        [
            added("1", 0, exists),
            added("2", 5, pg, DEPS),
            invalidated("3", 10, exists),
            added("4", 30, exists),
            added("5", 31, pg, DEPS),
        ]
    )
    assert truth.status(pg, day(20)) == "invalidated"
    assert truth.status(pg, day(31)) == "current"
    assert [f.value for f in truth.current(pg.key, day(32))] == ["13"]


def test_a_revalidation_after_a_cascade_brings_the_fact_back():
    truth = GroundTruth(
        [
            added("1", 0, exists),
            added("2", 5, pg, DEPS),
            invalidated("3", 10, exists),
            added("4", 30, exists),
            revalidated("5", 31, pg, DEPS),
        ]
    )
    assert truth.status(pg, day(31)) == "current"


def _random_events(
    rng: random.Random, size: int, subjects: str = "abc", acyclic: bool = False
) -> list[ChangeEvent]:
    """Chains of dependencies on modules' existence (cycles too, unless ``acyclic``), a
    multi-valued key, every kind of event, in any order of event time."""
    events = []
    for n in range(size):
        subject = rng.choice(subjects)
        predicate = rng.choice(["exists", "exists", "lang", "tags"])
        value = rng.choice("123")
        dep = rng.choice([None, *(subjects[: subjects.index(subject)] if acyclic else subjects)])
        deps = () if dep is None or dep == subject else (FactKey(dep, "exists"),)
        kind = rng.choice(["added", "revised", "invalidated", "revalidated"])
        meta = {"cardinality": "multi"} if predicate == "tags" else {}
        previous = Fact(subject, predicate, rng.choice("123"), "tech")
        events.append(
            ChangeEvent(
                f"e{n}",
                kind,  # type: ignore[arg-type]
                BASE + timedelta(days=rng.randint(0, 90)),
                "t",
                Fact(subject, predicate, value, "tech"),
                previous=previous if kind == "revised" else None,
                depends_on=deps,
                metadata=meta,
            )
        )
    return events


def _says_the_same_at_latest(truth: GroundTruth, oracle: GroundTruth) -> None:
    at = oracle.latest
    assert at is not None and truth.latest == at
    for key in list(oracle.keys()):
        for value in oracle.values(key):
            assert truth.status_of(key, value, at) == oracle.status_of(key, value, at)
        assert truth.current(key, at) == oracle.current(key, at)


def test_folding_only_what_changed_matches_refolding_every_dependent() -> None:
    """Truth refolds a key's dependents only when its removals change, and resumes a key's
    fold when an operation lands last; it must say what refolding everything says, on
    random timelines with chains of dependencies and late events."""
    rng = random.Random(3)
    for _ in range(min(200, max(25, EXAMPLES // 10))):  # 25 per mutant in a mutation run
        fast, oracle = GroundTruth(), GroundTruth()
        oracle._cyclic = True  # the path that refolds every dependent on every change
        for event in _random_events(rng, rng.randint(1, 40)):
            fast.apply(event)
            oracle.apply(event)
            _says_the_same_at_latest(fast, oracle)


def _stored(truth: GroundTruth) -> tuple[list[StoredKey], list[tuple[FactKey, FactKey]], dict]:
    """What a caller stores of a truth (as the daemon's replay store does): each key with
    its flags and values in the order first given, each dependency, each key's operations."""
    held = list(truth.keys())
    keys = [
        (key, truth.multi_valued(key), truth.asserted(key), list(truth.values(key).items()))
        for key in held
    ]
    rows = {key: [tuple(op) for op in truth.operations(key)] for key in held}
    depends = sorted({(key, dep) for key, ops in rows.items() for op in ops for dep in op[7]})
    return keys, depends, rows


def _everything_said(truth: GroundTruth, instants: list[datetime]) -> dict:
    return {
        key: (
            truth.multi_valued(key),
            truth.asserted(key),
            list(truth.values(key).items()),
            sorted(truth.open_values(key)),
            [truth.current(key, at) for at in instants],
            [truth.state_of(key, value, at) for value in truth.values(key) for at in instants],
        )
        for key in sorted(truth.keys())
    }


@pytest.mark.parametrize(
    ("subjects", "sizes", "acyclic"),
    [("ab", (20, 100), True), ("abc", (1, 40), False)],
    ids=["long-histories", "dependency-cycles"],
)
def test_a_truth_that_lets_go_of_keys_or_is_read_back_from_storage_answers_as_one_that_kept_all(
    subjects: str, sizes: tuple[int, int], acyclic: bool
):
    """The daemon lets truth go of all but its recently used keys, and a restart reads truth
    back from what was stored: either way every later answer is the one a truth that kept
    every operation gives: on long histories of few keys (whose logs are packed away), and
    on dependency cycles."""
    rng = random.Random(5)
    for _ in range(min(60, max(10, EXAMPLES // 40))):
        events = _random_events(rng, rng.randint(*sizes), subjects, acyclic)
        kept, released, restored = GroundTruth(), GroundTruth(), None
        restart = rng.randrange(len(events))
        for n, event in enumerate(events):
            for truth in (kept, released, restored):
                if truth is not None:
                    truth.apply(event)
            if n % 3 == 2:
                released.release(rng.choice([0, 1, 2]), _stored(released)[2].__getitem__)
            if n == restart:
                keys, depends, rows = _stored(kept)
                seq = max(op[1] for ops in rows.values() for op in ops)
                restored = GroundTruth.from_stored(
                    keys, depends, seq, kept.latest, rows.__getitem__
                )
            _says_the_same_at_latest(released, kept)
            if restored is not None:
                _says_the_same_at_latest(restored, kept)
        instants = sorted({event.timestamp for event in events})
        said = _everything_said(kept, instants)
        assert _everything_said(released, instants) == said
        assert restored is not None and _everything_said(restored, instants) == said


def test_a_restored_truth_knows_whether_its_dependencies_form_a_cycle():
    """Checked against a walk from every key (the first definition) on random graphs: self
    loops, long chains, cycles reached only through keys outside them."""
    rng = random.Random(11)
    for _ in range(300):
        keys = [FactKey(f"s{i}", "exists") for i in range(rng.randint(1, 12))]
        edges = {(rng.choice(keys), rng.choice(keys)) for _ in range(rng.randint(0, 16))}
        if rng.random() < 0.5:  # most random graphs with this many edges have a cycle
            edges = {(k, d) for k, d in edges if keys.index(d) > keys.index(k)}
        depends: dict[FactKey, set[FactKey]] = {}
        for key, dep in edges:
            depends.setdefault(key, set()).add(dep)

        stored: list[StoredKey] = [(k, False, True, [("1", "tech")]) for k in keys]
        truth = GroundTruth.from_stored(stored, sorted(edges), 0, None, lambda key: [])
        assert truth._cyclic == any(key in _reaches(depends, key) for key in keys), sorted(edges)


def _reaches(depends: dict[FactKey, set[FactKey]], start: FactKey) -> set[FactKey]:
    seen, stack = set(), [start]
    while stack:
        for dep in depends.get(stack.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def test_release_keeps_the_keys_used_last_and_counts_those_it_lets_go_of():
    truth = GroundTruth()
    for event in (added("1", 1, a), added("2", 2, exists), added("3", 3, pg, DEPS)):
        truth.apply(event)
    rows = _stored(truth)[2]
    assert truth.release(1, rows.__getitem__) == 2
    assert truth.release(1, rows.__getitem__) == 0
    assert truth.release(0, rows.__getitem__) == 1
    assert truth.current(a.key, day(3)) == [a]  # read back when next asked
    truth.apply(invalidated("4", 4, exists))
    assert truth.status(pg, day(4)) == "invalidated"  # the cascade reads both back
    assert truth.release(0, _stored(truth)[2].__getitem__) == 3


def test_keys_in_a_dependency_cycle_are_let_go_of_and_read_back_like_any_other():
    """A fold entered through a cycle is not kept, so a key can be held with no fold."""
    x, y = fact("x", "exists", "1"), fact("y", "exists", "1")
    truth = GroundTruth()
    for event in (added("1", 1, x, [("y", "exists")]), added("2", 2, y, [("x", "exists")])):
        truth.apply(event)
    assert truth.release(0, _stored(truth)[2].__getitem__) == 2
    assert truth.current(x.key, day(2)) == [x] and truth.current(y.key, day(2)) == [y]


def test_a_cascade_reaches_the_dependents_of_a_key_first_refolded_through_another() -> None:
    """c/exists ends; a/exists depends on it, b/tags on both, c/tags on a/exists alone.
    Refolding b/tags reads a/exists's new removals first; c/tags must still end."""
    c_exists, a_exists = FactKey("c", "exists"), FactKey("a", "exists")
    truth = GroundTruth()
    for event in (
        added("e1", 1, fact("c", "exists", "1")),
        added("e2", 2, fact("a", "exists", "1"), deps=(c_exists,)),
        added("e3", 3, fact("b", "tags", "1"), deps=(a_exists, c_exists)),
        added("e4", 4, fact("c", "tags", "1"), deps=(a_exists,)),
    ):
        truth.apply(event)
    assert truth.status_of(FactKey("c", "tags"), "1", day(4)) == "current"
    truth.apply(invalidated("e5", 5, fact("c", "exists", "1")))
    assert truth.status_of(FactKey("a", "exists"), "1", day(5)) == "invalidated"
    assert truth.status_of(FactKey("c", "tags"), "1", day(5)) == "invalidated"


def test_truth_answers_for_a_past_instant_as_well_as_for_its_latest():
    """``current`` at an earlier instant holds what held then: a value from its start
    (inclusive) to its end (exclusive), as whole facts of the key."""
    x, y = fact("s", "p", "x"), fact("s", "p", "y")
    truth = GroundTruth()
    for event in (added("1", 1, x), revised("2", 5, x, y), added("3", 9, fact("t", "q", "z"))):
        truth.apply(event)
    key = FactKey("s", "p")
    assert truth.current(key, day(0.5)) == []
    assert truth.current(key, day(1)) == [x]
    assert truth.current(key, day(3)) == [x]
    assert truth.current(key, day(5)) == [y]
    assert truth.current(key, day(9)) == [y]


@pytest.mark.parametrize("removal_first", [True, False])
def test_a_dependent_asserted_at_the_instant_its_dependency_goes_holds_afresh(removal_first):
    """A cascade ends the dependent at the removal; an assertion at that very instant starts
    it afresh, whichever of the two arrives first."""
    exists = fact("payments-v1", "exists", "true")
    pg = fact("payments-v1", "dependency:postgres", "13")
    deps = [("payments-v1", "exists")]
    removal, again = invalidated("3", 5, exists), added("4", 5, pg, deps)
    truth = GroundTruth()
    for event in (added("1", 0, exists), added("2", 0, pg, deps)):
        truth.apply(event)
    for event in [removal, again] if removal_first else [again, removal]:
        truth.apply(event)
    assert truth.status_of(pg.key, "13", day(6)) == "current"


def test_a_three_key_cycle_holds_while_its_outside_cause_is_ended_and_given_back_at_once():
    """c0 -> c1 -> c2 -> c0, and c0 also depends on w. w is invalidated and added again at
    one instant, so it is never left with no value: the cycle holds throughout, however the
    events arrive. Truth must see the cycle closed by its third edge (two steps away)."""
    w = fact("w", "exists", "1")
    ring = [fact(f"c{n}", "exists", "1") for n in range(3)]
    events = [
        added("c0", 0, ring[0], [("c1", "exists"), ("w", "exists")]),
        added("c1", 0, ring[1], [("c2", "exists")]),
        added("c2", 0, ring[2], [("c0", "exists")]),
        invalidated("w-", 1, w),
        added("w+", 0, w),
        added("w", 1, w),
    ]
    truth = GroundTruth()
    for event in events:
        truth.apply(event)
    assert [truth.status_of(f.key, "1", day(1)) for f in ring] == ["current"] * 3


def test_a_past_instant_s_status_counts_a_start_in_and_an_end_out():
    """At an instant before the latest event: a value is current from its start (inclusive)
    to its end (exclusive), then has the status its end gave it (superseded by a revision,
    invalidated by a removal or a cascade); unknown before it was ever given."""
    x, y = fact("s", "p", "x"), fact("s", "p", "y")
    module, lang = fact("m", "exists", "1"), fact("m", "lang", "go")
    truth = GroundTruth()
    for event in (
        added("1", 1, x),
        revised("2", 5, x, y),
        invalidated("3", 7, y),
        added("4", 1, module),
        added("5", 2, lang, [("m", "exists")]),
        invalidated("6", 6, module),
        added("7", 9, fact("t", "q", "z")),
    ):
        truth.apply(event)
    truth.apply(added("8", 2, fact("u", "v", "a")))
    truth.apply(added("9", 4, fact("u", "v", "b")))  # single-valued: a is superseded
    key, lang_key = FactKey("s", "p"), FactKey("m", "lang")
    assert [truth.status_of(FactKey("u", "v"), "a", day(t)) for t in (3, 4)] == [
        "current",
        "superseded",
    ]
    assert [truth.status_of(key, "x", day(t)) for t in (0.5, 1, 4, 5)] == [
        "unknown",
        "current",
        "current",
        "superseded",
    ]
    assert [truth.status_of(key, "y", day(t)) for t in (3, 5, 7)] == [
        "unknown",
        "current",
        "invalidated",
    ]
    assert [truth.status_of(lang_key, "go", day(t)) for t in (2, 5, 6)] == [
        "current",
        "current",
        "invalidated",
    ]


def test_a_cascade_ending_one_value_of_a_multi_valued_key_leaves_the_others_current():
    """Only the value that depends on the removed module ends; the key still holds the rest
    (and its probe still expects them) once the cascade is applied."""
    module = fact("m", "exists", "1")
    truth = GroundTruth()
    for event in (
        added("1", 0, module),
        added("2", 1, fact("svc", "deps", "a"), [("m", "exists")], multi=True),
        added("3", 1, fact("svc", "deps", "b"), multi=True),
        invalidated("4", 3, module),
    ):
        truth.apply(event)
    assert truth.current(FactKey("svc", "deps"), day(3)) == [fact("svc", "deps", "b")]


def test_a_dependent_that_arrived_before_its_dependency_ends_when_the_dependency_goes():
    """The dependent's fold first reads a dependency that has no value yet; once the
    dependency holds one and is removed, the dependent must be told, and end there."""
    module = fact("m", "exists", "1")
    choice = fact("m", "choice", "1", "decision")
    truth = GroundTruth()
    for event in (
        added("1", 0, choice, [("m", "exists")]),
        added("2", 0, module),
        invalidated("3", 1, module),
    ):
        truth.apply(event)
    assert truth.status_of(choice.key, "1", day(1)) == "invalidated"
