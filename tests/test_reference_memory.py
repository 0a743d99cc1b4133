"""The embedded reference memory: namespaces, pre-filters, expiry, the three mechanisms."""

from __future__ import annotations

from datetime import timedelta

import pytest
from timeline_builders import added, day, fact, invalidated, revalidated, revised

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.memory.reference import MetadataFilter, ReferenceMemory
from healthd.model import ChangeEvent, Probe
from healthd.probes import build_probe_set, generated_probe_id, question_for

node, go = fact("auth", "language", "node"), fact("auth", "language", "go")
alice = fact("billing", "owners", "@alice", "ownership")
bob = fact("billing", "owners", "@bob", "ownership")
exists = fact("payments-v1", "exists", "true")
pg = fact("payments-v1", "dependency:postgres", "13")
DEPS = [("payments-v1", "exists")]


def probe_for(f) -> Probe:
    return Probe(
        generated_probe_id(f.key),
        question_for(f.subject, f.predicate, f.domain),
        f.subject,
        f.predicate,
        f.domain,
    )


def values(memory, f, at):
    return [r.value for r in memory.answer(probe_for(f), day(at)).facts]


def feed(memory, *events):
    for e in events:
        memory.apply(e)
    return memory


def test_supersession_hides_the_old_value_unless_history_is_asked():
    memory = feed(ReferenceMemory(), added("1", 0, node), revised("2", 5, node, go))
    assert values(memory, node, 6) == ["go"]
    history = memory.search(
        "auth language",
        at=day(6),
        history=True,
        filters=[MetadataFilter("subject", "equals", "auth")],
    )
    assert {(r.value, "historical" in r.flags) for r in history} == {("go", False), ("node", True)}


def test_an_ended_record_is_kept_as_a_tombstone_saying_how_and_when_it_ended():
    """The shadow keeps what ended: a record revised away, or replaced by a new value of its
    single-valued key, is superseded then and points to the record that replaced it; a fact
    whose module went is invalidated by the cascade at the removal, naming the key; the
    module itself is invalidated, for the reason its event gives or, with none, as such."""
    memory = feed(
        ReferenceMemory(),
        added("1", 0, node),
        revised("2", 5, node, go),
        added("3", 0, exists),
        added("4", 1, pg, DEPS),
        ChangeEvent("5", "invalidated", day(4), "test", exists),  # no reason given
        added("6", 2, alice),
        added("7", 3, bob),
    )
    rows = {
        value: (rid, state, ended_at, superseded_by, reason)
        for rid, value, state, ended_at, superseded_by, reason in memory._db.execute(
            "SELECT id, value, state, ended_at, superseded_by, end_reason FROM records"
        )
    }
    assert rows["node"][1:] == ("superseded", day(5).timestamp(), rows["go"][0], "revised to 'go'")
    assert rows["go"][1:] == ("active", None, None, None)
    assert rows["@alice"][1:] == (
        "superseded",
        day(3).timestamp(),
        rows["@bob"][0],
        "revised to '@bob'",
    )
    assert rows["13"][1:] == (
        "invalidated",
        day(4).timestamp(),
        None,
        "payments-v1 exists was removed",
    )
    assert rows["true"][1:] == ("invalidated", day(4).timestamp(), None, "invalidated")


def test_without_supersession_both_values_come_back():
    memory = feed(
        ReferenceMemory(supersession=False), added("1", 0, node), revised("2", 5, node, go)
    )
    assert sorted(values(memory, node, 6)) == ["go", "node"]


def test_a_late_backdated_revision_does_not_override_a_newer_value():
    rust = fact("auth", "language", "rust")
    memory = feed(
        ReferenceMemory(),
        added("1", 0, node),
        revised("2", 20, node, rust),
        revised("3", 10, node, go),
    )
    assert values(memory, node, 21) == ["rust"]


def test_propagation_ends_the_facts_of_a_removed_module():
    events = [added("1", 0, exists), added("2", 0, pg, DEPS), invalidated("3", 5, exists)]
    assert values(feed(ReferenceMemory(), *events), pg, 6) == []
    assert values(feed(ReferenceMemory(propagation=False), *events), pg, 6) == ["13"]


def test_a_dependent_fact_arriving_after_its_module_was_removed_is_born_ended():
    memory = feed(
        ReferenceMemory(),
        added("1", 0, exists),
        invalidated("2", 5, exists),
        added("3", 2, pg, DEPS),
    )
    assert values(memory, pg, 6) == []


def test_soft_expiry_flags_ranks_lower_and_purges_after_the_grace_period():
    memory = ReferenceMemory(
        supersession=False,
        ttl_windows={
            "ownership": timedelta(days=30),
            "tech": timedelta(days=90),
            "decision": timedelta(days=180),
            "requirement": timedelta(days=365),
        },
        grace=1.0,
    )
    feed(memory, added("1", 0, alice), added("2", 20, bob))
    [first, second] = memory.answer(probe_for(alice), day(40)).facts
    assert (first.value, first.flags) == ("@bob", frozenset())
    assert (second.value, second.flags) == ("@alice", frozenset({"soft_expired"}))
    assert values(memory, alice, 61) == ["@bob"]  # alice purged at 2 x 30 days
    memory.apply(revalidated("3", 62, bob))
    assert values(memory, alice, 85) == ["@bob"]  # revalidation re-stamps expiry


def test_a_ttl_change_touches_only_records_written_after_it():
    memory = ReferenceMemory(supersession=False)
    memory.apply(added("1", 0, alice))
    memory.set_ttl("ownership", timedelta(days=1))
    memory.apply(added("2", 0, bob))
    flags = {r.value: r.flags for r in memory.answer(probe_for(alice), day(1.5)).facts}
    assert flags == {"@alice": frozenset(), "@bob": frozenset({"soft_expired"})}


def test_each_write_is_stamped_with_the_ttl_and_grace_of_its_moment():
    carol = fact("billing", "owners", "@carol", "ownership")
    memory = ReferenceMemory(supersession=False)
    memory.set_ttl("ownership", timedelta(days=1))
    memory.apply(added("1", 0, alice))
    memory.set_ttl("ownership", timedelta(days=30))
    memory.apply(added("2", 0, bob))
    memory.set_ttl("ownership", timedelta(days=1))
    memory.grace = 10.0
    memory.apply(added("3", 0, carol))
    assert values(memory, alice, 1.5) == ["@bob", "@carol", "@alice"]  # soft-expired last
    assert values(memory, alice, 5) == ["@bob", "@carol"]  # alice purged after 2 x 1 day
    assert values(memory, alice, 12) == ["@bob"]  # carol purged after 11 x 1 day


def test_a_revalidation_at_the_instant_of_the_last_restamps_with_the_ttl_of_its_moment():
    """Re-validation re-stamps, even at the very instant of the record's last validation:
    after a TTL change, the record expires by the new TTL; a backdated one changes nothing."""
    memory = ReferenceMemory()
    memory.set_ttl("ownership", timedelta(days=1))
    memory.apply(added("1", 5, alice))
    memory.set_ttl("ownership", timedelta(days=30))
    memory.apply(revalidated("2", 4, alice))  # backdated: still the 1-day stamp of day 5
    assert memory.answer(probe_for(alice), day(6.5)).facts[0].flags == frozenset({"soft_expired"})
    memory.apply(revalidated("3", 5, alice))
    assert memory.answer(probe_for(alice), day(6.5)).facts[0].flags == frozenset()


def test_a_late_end_splits_a_record_and_the_new_one_carries_its_own_event():
    """A backdated invalidation ends the first stretch early; the re-validation logged
    before it now opens a record of its own, written with that event's time and metadata."""
    memory = ReferenceMemory(ttl=False)
    memory.apply(added("1", 0, alice))
    memory.apply(ChangeEvent("2", "revalidated", day(10), "test", alice, metadata={"pr": "7"}))
    memory.apply(added("3", 20, node))
    memory.apply(invalidated("4", 5, alice))  # found late: alice left on day 5
    [record] = memory.answer(probe_for(alice), day(12)).facts
    assert (record.value, record.written_at, record.validated_at) == ("@alice", day(10), day(10))
    found = memory.search("", at=day(12), filters=[MetadataFilter("pr", "equals", "7")])
    assert [r.record_id for r in found] == [record.record_id]


def test_without_ttl_nothing_expires():
    memory = feed(ReferenceMemory(ttl=False), added("1", 0, alice))
    [record] = memory.answer(probe_for(alice), day(400)).facts
    assert record.flags == frozenset()


def test_namespaces_are_isolated_and_reset_wipes_only_its_own(tmp_path):
    path = str(tmp_path / "shared.db")
    mine = feed(ReferenceMemory(path=path, namespace="shadow/a"), added("1", 0, node))
    theirs = feed(ReferenceMemory(path=path, namespace="shadow/b"), added("1", 0, go))
    assert values(mine, node, 1) == ["node"] and values(theirs, node, 1) == ["go"]
    mine.reset()
    assert values(mine, node, 1) == [] and values(theirs, node, 1) == ["go"]


def test_a_namespace_not_declared_shadow_is_refused():
    with pytest.raises(
        ShadowViolation,
        match="'prod/assistant' is not declared shadow; healthd writes only to shadow scopes",
    ):
        ReferenceMemory(namespace="prod/assistant", shadow=False)
    with pytest.raises(TargetError, match="not declared shadow"):
        build_memory(parse_target("reference:namespace=prod,shadow=off"))


def test_metadata_filters_run_before_ranking():
    memory = ReferenceMemory()
    memory.apply(ChangeEvent("1", "added", day(0), "t", alice, metadata={"team": "payments-core"}))
    memory.apply(
        ChangeEvent(
            "2",
            "added",
            day(10),
            "t",
            fact("ledger", "owners", "@alice", "ownership"),
            metadata={"team": "ledger"},
        )
    )
    memory.apply(added("3", 20, node))

    def found(*filters):
        return sorted(r.subject for r in memory.search("who owns", at=day(30), filters=filters))

    assert found(MetadataFilter("team", "equals", "ledger")) == ["ledger"]
    assert found(MetadataFilter("team", "contains", "payments")) == ["billing"]
    assert found(MetadataFilter("domain", "equals", "ownership")) == ["billing", "ledger"]
    assert found(MetadataFilter("value", "contains", "alice")) == ["billing", "ledger"]
    assert found(MetadataFilter("created_at", "before", day(5))) == ["billing"]
    assert found(MetadataFilter("created_at", "after", day(5))) == ["auth", "ledger"]
    assert found(
        MetadataFilter("updated_at", "after", day(15)), MetadataFilter("domain", "equals", "tech")
    ) == ["auth"]


def test_full_text_ranking_orders_the_results():
    memory = feed(
        ReferenceMemory(),
        added("1", 0, fact("billing", "owners", "@alice", "ownership")),
        added("2", 0, fact("billing", "language", "kotlin")),
        added("3", 0, fact("billing", "dependency:postgres", "16")),
    )
    ranked = memory.search("which postgres version", at=day(1), k=3)
    assert ranked[0].predicate == "dependency:postgres"
    assert memory.search("kotlin", at=day(1), k=1)[0].value == "kotlin"


def test_equals_matches_a_whole_value_and_contains_any_part_of_it():
    memory = ReferenceMemory()
    memory.apply(ChangeEvent("1", "added", day(0), "t", alice, metadata={"team": "payments-core"}))

    def found(flt):
        return [r.subject for r in memory.search("", at=day(1), filters=[flt])]

    assert found(MetadataFilter("team", "equals", "payments")) == []
    assert found(MetadataFilter("team", "equals", "payments-core")) == ["billing"]
    assert found(MetadataFilter("team", "contains", "payments")) == ["billing"]
    assert found(MetadataFilter("value", "equals", "alice")) == []
    assert found(MetadataFilter("value", "contains", "alice")) == ["billing"]


@pytest.mark.parametrize(
    "flt",
    [MetadataFilter("value", "before", day(5)), MetadataFilter("created_at", "after", "day 5")],
)
def test_a_time_filter_needs_a_time_column_and_a_datetime(flt):
    with pytest.raises(
        MemoryAdapterError,
        match=f"^filter {flt.field} {flt.op}: before/after take created_at or updated_at "
        "and a datetime$",
    ):
        ReferenceMemory().search("", at=day(1), filters=[flt])


def test_a_search_serves_five_live_records_unless_asked_for_more_or_for_history():
    go0, rust0 = fact("svc-0", "language", "go"), fact("svc-0", "language", "rust")
    memory = feed(
        ReferenceMemory(),
        *(added(str(i), 0, fact(f"svc-{i}", "language", "go")) for i in range(7)),
        revised("8", 1, go0, rust0),
    )
    assert len(memory.search("language", at=day(2))) == 5
    assert len(memory.search("language", at=day(2), k=10)) == 7  # svc-0's go was revised away
    assert len(memory.search("language", at=day(2), k=10, history=True)) == 8


def test_text_relevance_outranks_recency_and_without_text_the_newest_record_comes_first():
    postgres, kotlin = (
        fact("billing", "dependency:postgres", "16"),
        fact("ledger", "language", "kotlin"),
    )
    memory = feed(ReferenceMemory(), added("1", 0, postgres), added("2", 0, kotlin))
    assert [r.value for r in memory.search("postgres", at=day(1), k=2)] == ["16", "kotlin"]
    feed(memory, added("3", 0, alice))
    assert memory.search("which postgres version", at=day(1))[0].value == "16"
    assert [r.value for r in memory.search("", at=day(1))] == ["@alice", "kotlin", "16"]


def test_a_record_is_soft_expired_at_the_very_instant_of_its_expiry_and_gone_at_its_purge():
    """The same instants whether the key is held in the cache or read back from the table."""
    memory, private = ReferenceMemory(), ReferenceMemory(path="")
    for m in (memory, private):
        m.set_ttl("ownership", timedelta(days=1))  # purged after 2 x 1 day (grace 1.0)
        m.apply(added("1", 0, alice))
    private.release(0)
    for m in (memory, private):
        assert [r.flags for r in m.answer(probe_for(alice), day(1)).facts] == [{"soft_expired"}]
        assert [r.flags for r in m.search("owners", at=day(1))] == [{"soft_expired"}]
        assert m.answer(probe_for(alice), day(2)).facts == ()
        assert m.search("owners", at=day(2)) == []
        [gone] = m.search("owners", at=day(2), history=True)
        assert "historical" in gone.flags


def test_a_record_soft_expired_this_very_instant_comes_after_one_still_live_and_goes_at_its_purge():
    memory, private = ReferenceMemory(supersession=False), ReferenceMemory(path="")
    for m in (memory, private):
        m.set_ttl("ownership", timedelta(days=10))
        m.apply(added("1", 0, bob, multi=True))
        m.set_ttl("ownership", timedelta(days=1))
        m.apply(added("2", 0.5, alice, multi=True))  # validated later, expires on day 1.5
    private.release(0)
    for m in (memory, private):
        assert values(m, alice, 1.4) == ["@alice", "@bob"]  # the newest validation first
        assert values(m, alice, 1.5) == ["@bob", "@alice"]
        assert [r.value for r in m.search("owners", at=day(1.5))] == ["@bob", "@alice"]
        assert values(m, alice, 2.5) == ["@bob"]  # gone at the very instant of its purge


def test_changed_keys_reports_writes_and_expiries_once():
    memory = ReferenceMemory()
    memory.apply(added("1", 0, alice))
    assert memory.changed_keys(day(0)) == {alice.key}
    assert memory.changed_keys(day(10)) == set()
    assert memory.changed_keys(day(31)) == {alice.key}  # soft expiry passed
    assert memory.changed_keys(day(61)) == {alice.key}  # purge passed
    assert memory.changed_keys(day(90)) == set()


def test_an_unknown_switch_lists_healthds_own_switches_beside_the_kinds():
    """baseline, the LLM budgets and repeats are taken by healthd for every kind: the list
    of known switches that a typo gets names them too."""
    with pytest.raises(TargetError) as refused:
        build_memory(parse_target("naive:repeat=3"))
    assert str(refused.value).endswith(
        "; and for every kind: baseline, max_llm_calls_per_run, max_llm_tokens_per_day, repeats"
    )
    assert "unknown switch 'repeat' for naive" in str(refused.value)


@pytest.mark.parametrize(
    "text, words",
    [
        ("reference:ttl=maybe", "expected on or off"),
        ("reference:colour=red", "unknown switch 'colour'"),
        ("reference:top_k=0", "at least 1"),
        ("reference:ttl_ownership=soon", "expected a duration"),
        ("reference:ttl", "is not name=value"),
        ("reference:grace=-5", "must be 0 or more"),
        ("mem0-cloud", "unknown kind 'mem0-cloud'"),
    ],
)
def test_bad_targets_are_named(text, words):
    with pytest.raises(TargetError, match=words):
        build_memory(parse_target(text))


def test_a_reopened_shadow_writes_late_events_at_the_clock_it_had(tmp_path):
    path = str(tmp_path / "shadow.db")
    erin = fact("ledger", "owners", "@erin", "ownership")
    first = feed(ReferenceMemory(path=path), added("1", 0, node), added("2", 20, alice))
    first.close()
    reopened = ReferenceMemory(path=path)
    reopened.apply(added("3", 5, erin))  # found late, happened on day 5
    uninterrupted = feed(
        ReferenceMemory(), added("1", 0, node), added("2", 20, alice), added("3", 5, erin)
    )
    for memory in (reopened, uninterrupted):
        [record] = memory.answer(probe_for(erin), day(21)).facts
        assert (record.written_at, record.validated_at) == (day(20), day(5))


def test_a_reopened_shadow_keeps_the_clock_of_its_last_event_though_it_made_no_record(tmp_path):
    """The clock is the latest event's time so far; a re-assertion on day 20 writes no record
    (it re-validates one), and must still move a reopened shadow's clock to day 20."""
    path = str(tmp_path / "shadow.db")
    erin = fact("ledger", "owners", "@erin", "ownership")
    feed(ReferenceMemory(path=path), added("1", 0, node), added("2", 20, node)).close()
    reopened = feed(ReferenceMemory(path=path), added("3", 5, erin))
    uninterrupted = feed(
        ReferenceMemory(), added("1", 0, node), added("2", 20, node), added("3", 5, erin)
    )
    for memory in (reopened, uninterrupted):
        [record] = memory.answer(probe_for(erin), day(21)).facts
        assert record.written_at == day(20)


def test_a_reopened_shadow_keeps_its_own_clock_beside_another_namespace_in_its_file(tmp_path):
    path = str(tmp_path / "shared.db")
    erin = fact("ledger", "owners", "@erin", "ownership")
    feed(ReferenceMemory(path=path, namespace="a"), added("1", 2, node)).close()
    feed(ReferenceMemory(path=path, namespace="b"), added("1", 20, alice)).close()
    reopened = feed(ReferenceMemory(path=path, namespace="a"), added("2", 1, erin))
    [record] = reopened.answer(probe_for(erin), day(21)).facts
    assert record.written_at == day(2)
    fresh = feed(ReferenceMemory(path=path, namespace="c"), added("1", 1, erin))
    [record] = fresh.answer(probe_for(erin), day(21)).facts
    assert record.written_at == day(1)


def test_a_reopened_shadow_orders_what_it_is_given_after_what_it_had_at_the_same_instant(
    tmp_path,
):
    path = str(tmp_path / "shadow.db")
    feed(ReferenceMemory(path=path), added("1", 0, alice), added("2", 5, node)).close()
    reopened = feed(ReferenceMemory(path=path), revised("3", 5, node, go))
    uninterrupted = feed(
        ReferenceMemory(), added("1", 0, alice), added("2", 5, node), revised("3", 5, node, go)
    )
    assert values(reopened, node, 6) == values(uninterrupted, node, 6) == ["go"]


# -- event-time semantics: cascades are decided after an event is applied, in event time ----

regions_eu = fact("payments-v1", "regions", "eu")
regions_us = fact("payments-v1", "regions", "us")
REGION_DEPS = [("payments-v1", "regions")]


def test_revising_the_only_value_of_a_multi_valued_key_does_not_cascade():
    redis = fact("payments-v1", "dependency:redis", "7")
    memory = feed(
        ReferenceMemory(),
        added("1", 0, regions_eu, multi=True),
        added("2", 1, pg, REGION_DEPS),
        revised("3", 5, regions_eu, regions_us, multi=True),
        added("4", 3, redis, REGION_DEPS),  # late, backdated before the revision
    )
    assert values(memory, regions_us, 6) == ["us"]
    assert values(memory, pg, 6) == ["13"]
    assert values(memory, redis, 6) == ["7"]


def test_a_late_dependent_ends_at_a_removal_after_it_even_when_the_dependency_came_back():
    lang = fact("payments-v1", "lang", "java")
    memory = feed(
        ReferenceMemory(),
        added("1", 1, exists),
        invalidated("2", 10, exists),
        added("3", 20, exists),
        added("4", 5, lang, DEPS),  # arrives last, happened on day 5
    )
    assert values(memory, exists, 21) == ["true"]
    assert values(memory, lang, 21) == []


def test_an_invalidation_that_arrives_before_its_backdated_addition_still_ends_it():
    memory = feed(ReferenceMemory(), invalidated("1", 10, node), added("2", 5, node))
    assert values(memory, node, 10) == []


def test_a_late_invalidation_of_a_superseded_value_leaves_a_gap_that_cascades():
    # Day 1 exists=a, day 20 exists=b; found later: a ended on day 10, so from day 10 to 20
    # the module had no existence and a fact depending on it since day 2 ended on day 10.
    a, b = fact("m", "exists", "a"), fact("m", "exists", "b")
    owner = fact("m", "language", "go")
    memory = feed(
        ReferenceMemory(),
        added("1", 1, a),
        added("2", 2, owner, [("m", "exists")]),
        added("3", 20, b),
        invalidated("4", 10, a),
    )
    assert values(memory, b, 21) == ["b"]
    assert values(memory, owner, 21) == []


# -- what each switch changes, and nothing more ------------------------------------------------


def test_without_supersession_a_multi_valued_revision_keeps_the_old_value():
    memory = feed(
        ReferenceMemory(supersession=False),
        added("1", 0, regions_eu, multi=True),
        revised("2", 5, regions_eu, regions_us, multi=True),
    )
    assert sorted(values(memory, regions_eu, 6)) == ["eu", "us"]


def test_a_revision_to_another_key_ends_the_old_keys_value():
    moved = fact("payments-v2", "dependency:postgres", "13")
    memory = feed(ReferenceMemory(), added("1", 0, pg), revised("2", 5, pg, moved))
    assert values(memory, pg, 6) == []
    assert values(memory, moved, 6) == ["13"]


def test_without_propagation_a_late_revalidation_does_not_bring_the_cascade_back():
    events = [
        added("1", 0, exists),
        added("2", 0, pg, DEPS),
        invalidated("3", 5, exists),
        revalidated("4", 3, pg),  # found late: the fact is folded again
    ]
    assert values(feed(ReferenceMemory(propagation=False), *events), pg, 6) == ["13"]
    assert values(feed(ReferenceMemory(), *events), pg, 6) == []


def test_a_probe_gets_at_most_top_k_records_of_its_own_key_only():
    tags = [fact("auth", "tags", str(n)) for n in range(7)]
    near = fact("auth-v2", "tags", "x")  # a subject that contains the probe's subject
    memory = ReferenceMemory(top_k=6)
    feed(memory, *(added(str(n), n, t, multi=True) for n, t in enumerate(tags)))
    memory.apply(added("near", 8, near, multi=True))
    assert values(memory, tags[0], 9) == ["6", "5", "4", "3", "2", "1"]
    one = feed(
        ReferenceMemory(top_k=1), *(added(str(n), n, t, multi=True) for n, t in enumerate(tags))
    )
    assert values(one, tags[0], 9) == ["6"]


def test_a_failed_write_is_one_error_naming_the_event():
    from healthd.errors import MemoryAdapterError

    memory = ReferenceMemory()
    memory.close()
    with pytest.raises(MemoryAdapterError, match=r"^reference memory: applying e9: "):
        memory.apply(added("e9", 0, node))


def test_a_probe_gets_its_own_predicate_only_not_one_that_contains_it():
    owner = fact("billing", "owner", "@alice", "ownership")
    owners = fact("billing", "owners", "@bob", "ownership")
    memory = feed(ReferenceMemory(), added("1", 0, owner), added("2", 0, owners))
    assert values(memory, owner, 1) == ["@alice"]


@pytest.mark.parametrize("switches", [{}, {"supersession": False}, {"propagation": False}])
def test_folding_only_new_operations_writes_what_refolding_every_log_writes(switches) -> None:
    """Events mostly arrive in time order, so a key's fold is resumed with just the new
    operations; the records, their ends and the removals must be those a full refold of
    every log gives, late events, dependency chains and multi-valued keys included."""
    import random

    from healthd.model import FactKey

    def table(memory: ReferenceMemory) -> list[object]:
        return [
            memory._db.execute(f"SELECT * FROM {name}").fetchall()
            for name in (
                "records ORDER BY id",
                "key_removals ORDER BY subject, predicate, removed_at",
                "record_deps ORDER BY record_id, subject, predicate",
            )
        ]

    rng = random.Random(11)
    for _ in range(60):
        resumed, refolded = ReferenceMemory(**switches), ReferenceMemory(**switches)
        refolded._acyclic = False  # never resumes: every change refolds the key's whole log
        clock = 0.0
        for n in range(rng.randint(5, 40)):
            clock += rng.random() * 3
            at = clock - (rng.random() * 20 if rng.random() < 0.1 else 0)
            subject = rng.choice("abcd")
            predicate = rng.choice(["exists", "exists", "lang", "tags"])
            dep = rng.choice([None, "a", "b", "c", "d"])
            deps = (FactKey(dep, "exists"),) if dep and dep < subject else ()
            multi = predicate == "tags"
            value = rng.choice("123")
            kind = rng.choice(["added", "revised", "invalidated", "revalidated"])
            if kind == "added":
                event = added(f"e{n}", at, fact(subject, predicate, value), deps, multi)
            elif kind == "revalidated":
                event = revalidated(f"e{n}", at, fact(subject, predicate, value), deps)
            elif kind == "invalidated":
                event = invalidated(f"e{n}", at, fact(subject, predicate, value))
            else:
                previous = fact(subject, predicate, rng.choice("123"))
                event = revised(f"e{n}", at, previous, fact(subject, predicate, value), deps)
            resumed.apply(event)
            refolded.apply(event)
        assert table(resumed) == table(refolded)


def test_a_reopened_shadow_reports_expiries_of_records_written_before(tmp_path) -> None:
    """Expiries are read from what each write stamped; records written by an earlier
    process still count when their expiry passes after a restart."""
    path = str(tmp_path / "shadow.sqlite")
    alice, bob = fact("billing", "owners", "alice", "ownership"), fact("auth", "language", "go")
    first = ReferenceMemory(path=path)
    first.apply(added("e1", 0, alice))
    first.apply(added("e2", 0, bob))
    first.close()
    again = ReferenceMemory(path=path)
    assert again.changed_keys(day(1)) == set()
    assert again.changed_keys(day(31)) == {alice.key}  # ownership soft-expires after 30 d
    assert again.changed_keys(day(40)) == set()
    assert again.changed_keys(day(91)) == {bob.key, alice.key}  # tech expiry, owners purge
    again.close()


def test_changed_keys_reports_expiry_then_purge_of_live_records_only():
    """A live record's key is reported when its expiry passes, then when its purge does; a
    record ended before its expiry changes no answer when that instant passes, so its key
    is not reported (its probe would be asked again for the same answer)."""
    memory = ReferenceMemory()  # ownership: soft expiry after 30 days, purge after 60
    memory.apply(added("1", 0, node))
    memory.apply(invalidated("2", 1, node))  # node's record would have expired at day 90
    memory.apply(added("3", 1, alice))
    assert memory.changed_keys(day(1)) == {node.key, alice.key}
    assert memory.changed_keys(day(20)) == set()
    assert memory.changed_keys(day(40)) == {alice.key}  # soft-expired at day 31
    assert memory.changed_keys(day(50)) == set()
    assert memory.changed_keys(day(70)) == {alice.key}  # purged at day 61
    assert values(memory, node, 89) == values(memory, node, 100) == []
    assert memory.changed_keys(day(100)) == set()


def test_a_private_database_commits_in_batches_and_answers_as_one_in_memory():
    events = [
        added("1", 0, exists),
        added("2", 0, pg, deps=DEPS),
        added("3", 1, node),
        revised("4", 2, node, go),
        revalidated("5", 3, pg, deps=DEPS),
        invalidated("6", 4, exists),
        added("7", 5, alice),
        revised("8", 6, alice, bob),
    ]
    private = ReferenceMemory(path="")
    private.private_batch = 3
    feed(private, *events)
    assert private._db.in_transaction  # the last two events wait for the next batch
    reference = feed(ReferenceMemory(), *events)
    for f in (pg, node, alice, exists):
        for at in (1, 5, 7):
            assert private.answer(probe_for(f), day(at)) == reference.answer(probe_for(f), day(at))


def test_a_private_database_searches_as_one_in_memory_before_and_after_more_writes():
    """Its full-text index is filled when a search first reads it, then brought up to date:
    records written since, and a record a late event merged away, rank as they do in an
    in-memory shadow (whose index is written with each record)."""
    kotlin = fact("billing", "language", "kotlin")
    postgres = fact("billing", "dependency:postgres", "16")
    first = [added("1", 2, kotlin), added("2", 2, postgres), added("3", 2, node)]
    later = [
        revised("4", 3, node, go),
        added("5", 1, kotlin),  # late: it opens kotlin's record, the day-2 one merges into it
        added("6", 4, alice),
        added("7", 4, fact("ledger", "dependency:postgres", "15")),
    ]
    private, reference = ReferenceMemory(path=""), ReferenceMemory()

    def searched(memory):
        return [
            memory.search(query, at=day(5), k=10, history=history)
            for query in ("postgres version", "billing kotlin", "auth language", "owners")
            for history in (False, True)
        ]

    assert searched(feed(private, *first)) == searched(feed(reference, *first))
    assert searched(feed(private, *later)) == searched(feed(reference, *later))
    # ranked by the text: both postgres records first, the one written after the first search too
    assert {r.value for r in private.search("postgres", at=day(5), k=10)[:2]} == {"16", "15"}


def test_a_private_database_reads_back_what_its_cache_let_go_of():
    events = [
        added("1", 0, exists),
        added("2", 0, pg, deps=DEPS),
        added("3", 1, node),
        revised("4", 2, node, go),
    ]
    after = [added("5", 1.5, node), invalidated("6", 4, exists), revalidated("7", 5, go)]
    private, reference = feed(ReferenceMemory(path=""), *events), feed(ReferenceMemory(), *events)
    assert private.release(0) == 3  # every key's log and records are read back from the tables
    feed(private, *after)
    feed(reference, *after)
    for f in (pg, node, exists):
        for at in (1, 3, 6):
            assert private.answer(probe_for(f), day(at)) == reference.answer(probe_for(f), day(at))


@pytest.mark.parametrize(
    ("table", "batch", "ends", "error"),
    [
        # written as it is made: the instants a key is left with no value
        ("key_removals", 1000, True, "applying 2: no such table"),
        # deferred to the batch's end: a record ended (the keys depending on a key left empty
        # are not read back: since the reset the cache holds every key's)
        ("records", 1, True, "writing a batch failed"),
        # deferred to the batch's end: the log
        ("key_log", 1, False, "writing a batch failed"),
        # a key new to the replay is folded with nothing read back (it has no ended record
        # the cache let go of): its record is inserted at the batch's end
        ("records", 1, False, "writing a batch failed"),
    ],
)
def test_a_failed_write_on_a_private_database_ends_its_replay_with_one_clear_error(
    table, batch, ends, error
):
    """Whether the write fails as it is made or when the batch's deferred writes are made at
    its end; ``ends``: the event ends a key's only value, else it adds a new key."""
    private = ReferenceMemory(path="")
    private.reset()  # as a replay starts: nothing is read back from the tables after this
    private.private_batch = batch
    feed(private, added("1", 0, node))
    private._db.execute(f"DROP TABLE {table}")  # the next event cannot be written
    with pytest.raises(MemoryAdapterError, match=error):
        private.apply(invalidated("2", 1, node) if ends else added("2", 1, alice))
    with pytest.raises(MemoryAdapterError, match="failed at 2; the private replay cannot go on"):
        private.apply(added("3", 2, bob))
    # every way in says so, not a read of half a batch
    for call in (
        lambda: private.answer(probe_for(node), day(3)),
        lambda: private.search("node", at=day(3), history=True),
        lambda: private.changed_keys(day(3)),
        private.state_db,
    ):
        with pytest.raises(MemoryAdapterError, match="cannot go on"):
            call()
    private.close()


@pytest.mark.parametrize("removal_first", [True, False])
def test_a_dependent_asserted_at_the_instant_its_dependency_goes_holds_afresh(removal_first):
    """A cascade ends the dependent at the removal; an assertion at that same instant starts
    it afresh (as truth says), whether the removal arrives before it or after it."""
    removal = invalidated("3", 5, exists)
    again = added("4", 5, pg, DEPS)
    memory = feed(
        ReferenceMemory(),
        added("1", 0, exists),
        added("2", 0, pg, DEPS),
        *([removal, again] if removal_first else [again, removal]),
    )
    assert values(memory, pg, 6) == ["13"]


X1, X2, X3 = (fact("x", "v", v) for v in ("1", "2", "3"))
Y1 = fact("y", "p", "1")


@pytest.mark.parametrize(
    "events",
    [
        # x is multi-valued: with x = 2 invalidated, x = 1 still holds, and so does y
        [
            added("x1", 0, X1, [("y", "p")], multi=True),
            added("y1", 1, Y1, [("x", "v")]),
            added("x2", 2, X2, [("y", "p")], multi=True),
            invalidated("x2-", 3, X2),
            revalidated("y1'", 1.5, Y1, [("x", "v")]),  # late: y is folded again
        ],
        # x is single-valued: revised, then its new value invalidated, x is left with
        # nothing from day 3 to day 4, and y, which depends on it, ends on day 3
        [
            added("x1", 0, X1, [("y", "p")]),
            added("y1", 1, Y1, [("x", "v")]),
            revised("x2", 2, X1, X2, [("y", "p")]),
            invalidated("x2-", 3, X2),
            added("x3", 4, X3, [("y", "p")]),
            revalidated("y1'", 1.5, Y1, [("x", "v")]),  # late: y is folded again
        ],
        # x is single-valued: a second value added replaces the first, and with it
        # invalidated x is left with nothing from day 3, so y ends on day 3 as well
        [
            added("x1", 0, X1, [("y", "p")]),
            added("y1", 1, Y1, [("x", "v")]),
            added("x2", 2, X2, [("y", "p")]),
            invalidated("x2-", 3, X2),
            added("x3", 4, X3, [("y", "p")]),
            revalidated("y1'", 1.5, Y1, [("x", "v")]),  # late: y is folded again
        ],
    ],
    ids=["multi-valued", "superseded", "replaced-by-an-addition"],
)
def test_a_dependency_cycle_cascades_what_each_key_s_own_log_says(events):
    """Around a cycle, a dependency is judged by its own log, folded as the key is (its
    cardinality, supersession): the reference memory still serves exactly what holds."""
    result = evaluate(
        events, ReferenceMemory(ttl=False), build_probe_set(events), name="r", kind="r"
    )
    for stage in result.stages:
        m = stage.metrics["all"]
        assert m.consistency in (1.0, None) and m.coverage in (1.0, None)
        assert m.contamination == 0.0


@pytest.mark.parametrize("reopened", [False, True], ids=["kept-open", "reopened"])
def test_a_removal_whose_cause_outside_a_cycle_is_gone_does_not_live_on_around_it(
    reopened, tmp_path
):
    """x and y depend on each other, and x on w too: w's end removes x, which removes y. A
    late value of w (multi-valued) keeps w from ever being left empty, so nothing removes x
    or y any more. Their stored removals still say each other's end: read as they are, the
    cycle would keep itself removed. Reopened, the shadow knows of the cycle only from its
    stored records (the dependencies of their openers)."""
    w1, w2 = fact("w", "exists", "1"), fact("w", "exists", "2")
    x, y = fact("x", "exists", "1"), fact("y", "exists", "1")
    multi = ChangeEvent("5", "added", day(3), "t", w2, metadata={"cardinality": "multi"})
    path = str(tmp_path / "shadow.db")
    memory = feed(
        ReferenceMemory(path=path),
        added("1", 0, w1),
        added("2", 1, x, [("w", "exists"), ("y", "exists")]),
        added("3", 2, y, [("x", "exists")]),
        invalidated("4", 5, w1),
    )
    assert (values(memory, x, 6), values(memory, y, 6)) == ([], [])
    if reopened:
        memory.close()
        memory = ReferenceMemory(path=path)
    memory.apply(multi)
    assert [values(memory, f, 6) for f in (w1, x, y)] == [["2"], ["1"], ["1"]]


@pytest.mark.parametrize("propagation", [True, False], ids=["propagation", "no-propagation"])
def test_a_revision_landing_last_that_depends_on_a_module_removed_later_ends_at_that_removal(
    propagation,
):
    """The key's fold resumes with the revision alone (it lands after the key's every other
    operation); the module's removal, logged before and dated after it, still ends it, and
    only where propagation is on."""
    pg16 = fact("payments-v1", "dependency:postgres", "16")
    memory = ReferenceMemory(propagation=propagation, ttl=False)
    for event in (
        added("1", 0, exists),
        added("2", 1, pg),
        invalidated("3", 10, exists),
        revised("4", 5, pg, pg16, DEPS),
    ):
        memory.apply(event)
    assert values(memory, pg, 11) == ([] if propagation else ["16"])


def test_a_dependent_folded_before_its_other_dependency_is_folded_again_after_it():
    """d holds two values, d1 on m (the module) and d2 on k, which is itself on m. m's
    removal at day 5 ends all three; a late event gives m a new value from day 4, so m is
    never left empty: k holds on, and so do d1 and d2. m's dependents are refolded in key
    order, d before k; d must be folded again once k's removals change."""
    m1, m2 = fact("m", "exists", "1"), fact("m", "exists", "2")
    k1 = fact("k", "x", "1")
    d1, d2 = fact("d", "x", "1"), fact("d", "x", "2")
    memory = feed(
        ReferenceMemory(),
        added("1", 0, m1),
        added("2", 1, k1, [("m", "exists")]),
        added("3", 2, d1, [("m", "exists")], multi=True),
        added("4", 2, d2, [("k", "x")], multi=True),
        invalidated("5", 5, m1),
    )
    assert values(memory, d1, 6) == []
    feed(memory, added("6", 4, m2))  # late: m holds 2 from day 4, 1 is never invalidated
    assert values(memory, k1, 6) == ["1"]
    assert sorted(values(memory, d1, 6)) == ["1", "2"]


def test_a_revision_moving_a_dependency_s_only_value_ends_what_depended_on_it_there():
    """q/y (multi-valued) holds 1, which depends on p/x; one revision moves p/x's only value
    to q/y as 2. p/x is left empty, so q/y's 1 ends; the same event gives q/y 2, so q/y's fold
    has new operations too, and must not be resumed from before p/x changed."""
    x, q1, q2 = fact("p", "x", "1"), fact("q", "y", "1"), fact("q", "y", "2")
    moved = ChangeEvent(
        "3", "revised", day(5), "test", q2, previous=x, metadata={"cardinality": "multi"}
    )
    memory = feed(ReferenceMemory(), added("1", 0, x), added("2", 1, q1, [("p", "x")], multi=True))
    assert values(memory, q1, 4) == ["1"]
    feed(memory, moved)
    assert values(memory, q1, 6) == ["2"]


def test_records_a_late_event_turns_into_revalidations_are_merged_into_the_first():
    """d/x = v depends on m (multi-valued), which is left empty at days 3 and 6, so v is held
    as three records (from days 1, 5 and 8). A late m = 2 from day 2 keeps m present
    throughout: v is held from day 1 on, and the adds of days 5 and 8 only re-validate it."""
    m1, m2, v = fact("m", "exists", "1"), fact("m", "exists", "2"), fact("d", "x", "v")
    on_m = [("m", "exists")]
    memory = feed(
        ReferenceMemory(),
        added("1", 0, m1, multi=True),
        added("2", 1, v, on_m),
        invalidated("3", 3, m1),
        added("4", 4, m1, multi=True),
        added("5", 5, v, on_m),
        invalidated("6", 6, m1),
        added("7", 8, v, on_m),
    )
    count = "SELECT count(*) FROM records WHERE subject = 'd'"
    assert memory._db.execute(count).fetchone() == (3,)
    feed(memory, added("8", 2, m2, multi=True))
    assert memory._db.execute(count).fetchone() == (1,)
    assert values(memory, v, 9) == ["v"]
    (served,) = memory.search("", at=day(9), filters=[MetadataFilter("subject", "equals", "d")])
    assert served.written_at == day(1)


def test_an_answer_serves_five_records_of_its_key_unless_top_k_says_otherwise():
    langs = [fact("svc", "lang", v) for v in "abcdefg"]
    events = [added(str(n), n, f, multi=True) for n, f in enumerate(langs)]
    default, three = feed(ReferenceMemory(), *events), feed(ReferenceMemory(top_k=3), *events)
    assert len(values(default, langs[0], 9)) == 5 and len(values(three, langs[0], 9)) == 3


def test_a_shadow_on_disk_keeps_a_write_ahead_log(tmp_path):
    """The write-ahead log and one fsync per committed batch, not per event."""
    on_disk = ReferenceMemory(path=str(tmp_path / "shadow.db"))
    assert on_disk.state_db().execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert on_disk.state_db().execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    on_disk.close()


def _refuse_value(memory, value):
    """A trigger in the shadow's own database that fails every insert of ``value``."""
    memory.state_db().execute(
        f"CREATE TRIGGER refuse BEFORE INSERT ON records WHEN NEW.value = '{value}' "
        "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )


def test_a_write_that_fails_leaves_a_shadow_on_disk_as_it_was_and_writable(tmp_path):
    memory = ReferenceMemory(path=str(tmp_path / "shadow.db"))
    _refuse_value(memory, "go")
    feed(memory, added("1", 0, node))
    with pytest.raises(MemoryAdapterError, match="applying 2: disk says no"):
        memory.apply(revised("2", 5, node, go))
    assert values(memory, node, 6) == ["node"]  # the revision left nothing behind
    feed(memory, added("3", 6, alice))
    assert values(memory, alice, 7) == ["@alice"] and values(memory, node, 7) == ["node"]
    feed(memory, invalidated("4", 7, node))  # the key the failed write touched, as it is
    assert values(memory, node, 8) == []
    ended = memory.search(
        "", at=day(8), filters=[MetadataFilter("subject", "equals", "auth")], history=True
    )
    assert [(f.value, f.historical) for f in ended] == [("node", True)]
    memory.close()


def test_a_shadow_file_that_is_not_a_database_is_one_error_naming_it(tmp_path):
    path = tmp_path / "shadow.db"
    path.write_bytes(b"these are not the pages you are looking for" * 100)
    with pytest.raises(
        MemoryAdapterError, match=f"reference memory at {path}: file is not a database"
    ):
        ReferenceMemory(path=str(path))


def test_a_reopened_shadow_ends_what_depended_on_a_key_that_goes_after_the_restart(tmp_path):
    """The keys depending on a key are read back from the shadow's tables when the key is
    first asked for after a restart (not every key's at once): its dependents still end."""
    path = str(tmp_path / "shadow.sqlite")
    feed(ReferenceMemory(path=path), added("1", 0, exists), added("2", 1, pg, DEPS)).close()
    reopened = ReferenceMemory(path=path)
    assert values(reopened, pg, 2) == ["13"]
    feed(reopened, invalidated("3", 3, exists))
    assert values(reopened, pg, 4) == []
    reopened.close()
