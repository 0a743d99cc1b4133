"""The probe set a long-running daemon extends from new events is the one built from all."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_timelines import EXAMPLES, timelines
from timeline_builders import added, fact

from healthd.model import Probe
from healthd.probes import KeyCatalog, build_probe_set

EXTRA = [Probe("extra-a-lang", "Is a written in 1 or 2?", "a", "lang", "tech")]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines(), data=st.data())
def test_a_catalog_extended_chunk_by_chunk_gives_the_probe_set_built_from_all(events, data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=4), label="cuts"))
    catalog = KeyCatalog()
    changed_all = set()
    for start, stop in zip([0, *cuts], [*cuts, len(events)], strict=True):
        changed = catalog.add(events[start:stop])
        changed_all.update(changed)
        # stored and read back (a restart) between chunks
        catalog = KeyCatalog.from_rows(catalog.rows(catalog.keys))
        expected = build_probe_set(events[:stop], EXTRA)
        got = catalog.probe_set(EXTRA)
        assert got.probes == expected.probes
        assert got.version == expected.version
    assert changed_all == set(catalog.keys)


def test_only_new_or_changed_keys_are_reported():
    catalog = KeyCatalog([added("e1", 0, fact("a", "lang", "go"))])
    assert catalog.add([added("e2", 1, fact("a", "lang", "go"))]) == []
    assert [k.subject for k in catalog.add([added("e3", 2, fact("b", "lang", "c"))])] == ["b"]
