"""The probe set a long-running daemon extends from new events is the one built from all."""

from __future__ import annotations

import hashlib
import json

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


def _version_as_defined(probes):
    """The version as first written down: a digest of every probe's fields, sorted."""
    rows = sorted(
        [p.id, p.question, p.subject, p.predicate, p.domain, p.multi_valued] for p in probes
    )
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=timelines(), data=st.data())
def test_a_catalog_kept_across_runs_gives_the_probe_set_built_from_all(events, data):
    """As the daemon keeps it: one catalog, asked for its probe set after each chunk (it
    keeps what it wrote of each probe for the version, and writes again only new ones)."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=4), label="cuts"))
    catalog = KeyCatalog()
    for start, stop in zip([0, *cuts], [*cuts, len(events)], strict=True):
        catalog.add(events[start:stop])
        expected = build_probe_set(events[:stop], EXTRA)
        got = catalog.probe_set(EXTRA)
        assert got.probes == expected.probes
        assert got.by_key == expected.by_key
        assert got.version == expected.version == _version_as_defined(got.probes)


def test_a_key_whose_probe_changes_changes_the_version():
    catalog = KeyCatalog([added("e1", 0, fact("a", "lang", "go"))])
    before = catalog.probe_set()
    catalog.add([added("e2", 1, fact("a", "lang", "c"), multi=True)])
    after = catalog.probe_set()
    assert after.probes[0].multi_valued and not before.probes[0].multi_valued
    assert after.version != before.version
    assert after.version == _version_as_defined(after.probes)


def test_only_new_or_changed_keys_are_reported():
    catalog = KeyCatalog([added("e1", 0, fact("a", "lang", "go"))])
    assert catalog.add([added("e2", 1, fact("a", "lang", "go"))]) == []
    assert [k.subject for k in catalog.add([added("e3", 2, fact("b", "lang", "c"))])] == ["b"]


@settings(max_examples=max(1, EXAMPLES // 4), deadline=None)
@given(
    keys=st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12)),
        min_size=1,
        max_size=6,
        unique=True,
    )
)
def test_probe_ids_and_the_version_are_the_json_digests_whatever_the_text(keys):
    """A generated probe's id digests its key as a JSON list (quotes, backslashes, control
    characters, non-ASCII text and lone surrogates included), and the set's version its
    probes' fields: both stay what they have been, or every stored baseline would change."""
    catalog = KeyCatalog([added(f"e{n}", n, fact(s, p, "v")) for n, (s, p) in enumerate(keys)])
    probes = catalog.probe_set()
    for probe, (subject, predicate) in zip(probes, keys, strict=True):
        listed = json.dumps([subject, predicate], ensure_ascii=False, separators=(",", ":"))
        digest = hashlib.sha256(listed.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        assert probe.id == f"p-{digest}"
    assert probes.version == _version_as_defined(probes.probes)
