"""The defects an independent oracle found in the numbers (issue 19), each worked out by
hand from DESIGN.md's definitions: a revision ends what it revises whatever the key's
cardinality becomes, forgetting is filed under the domain of the fact that held and ended,
and two keys never share a probe."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from timeline_builders import added, fact, invalidated, revised

from healthd.errors import ProbeFileError
from healthd.evaluator import evaluate
from healthd.memory.naive import NaiveMemory
from healthd.memory.reference import ReferenceMemory
from healthd.model import FactKey, Probe
from healthd.probes import ProbeSet, build_probe_set, generated_probe_id
from healthd.timeline import write_timeline

alice, bob, carol = (fact("svc", "owners", v, "ownership") for v in ("@alice", "@bob", "@carol"))
OWNERS = FactKey("svc", "owners")


def final(events, memory, mode="incremental", **options):
    return evaluate(
        events, memory, build_probe_set(events), name="t", kind="t", mode=mode, **options
    )


@pytest.fixture(params=["full", "incremental"])
def mode(request):
    return request.param


# -- 1. a revision ends its previous whatever the key's cardinality turns out to be ---------


@pytest.mark.parametrize(
    "events",
    [
        # the revision arrives first; the multi-valued declaration comes with a late add
        [revised("r", 10, alice, bob), added("a", 1, alice, multi=True)],
        [added("a", 1, alice, multi=True), revised("r", 10, alice, bob)],
    ],
    ids=["revision first", "declaration first"],
)
def test_a_revision_ends_its_previous_in_either_arrival_order(events, mode):
    result = final(events, NaiveMemory(), mode)
    assert result.probes[0].expected == ("@bob",)
    m = result.metrics["all"]
    assert (m.consistency, m.contamination) == (0.5, 1.0)  # naive still serves @alice
    reference = final(events, ReferenceMemory(ttl=False), mode).metrics["all"]
    assert (reference.consistency, reference.contamination) == (1.0, 0.0)


def test_a_key_declared_multi_valued_after_a_revision_keeps_the_revision(mode):
    # in time order: a, then a -> b, then c declared multi-valued: a has ended, b and c hold
    events = [added("1", 1, alice), revised("2", 2, alice, bob), added("3", 3, carol, multi=True)]
    result = final(events, ReferenceMemory(ttl=False), mode)
    assert result.probes[0].expected == ("@bob", "@carol")
    assert sorted(f.value for f, _ in result.probes[0].retrieved) == ["@bob", "@carol"]
    naive = final(events, NaiveMemory(), mode).metrics["all"]
    assert naive.consistency == pytest.approx(2 / 3)
    assert naive.contamination == 1.0


# -- 2. forgetting is filed under the domain of the fact that held --------------------------


@pytest.mark.parametrize("invalidation_first", [True, False])
def test_forgetting_is_filed_by_the_domain_of_the_fact_that_ended(invalidation_first, mode):
    as_tech = fact("s", "p", "x", "tech")
    as_requirement = fact("s", "p", "x", "requirement")
    late = [invalidated("i", 10, as_tech), added("a", 1, as_requirement)]
    events = late if invalidation_first else late[::-1]
    events += [added(f"pad{n}", 11 + n, fact("pad", f"k{n}", "v")) for n in range(3)]
    m = final(events, NaiveMemory(), mode).metrics
    assert m["requirement"].forgetting == 0.0  # naive never forgets
    assert m["tech"].forgetting is None
    assert m["all"].forgetting == 0.0


# -- 3. two different keys never share a generated probe ------------------------------------


def test_keys_whose_joined_text_is_equal_get_different_probes(tmp_path, mode):
    one, two = fact("a\x1fb", "c", "1"), fact("a", "b\x1fc", "2")
    assert generated_probe_id(one.key) != generated_probe_id(two.key)
    events = [
        added("1", 1, one),
        added("2", 2, two),
        revised("3", 3, two, fact("a", "b\x1fc", "3")),
    ]
    probes = build_probe_set(events)
    assert len(probes) == 2
    result = final(events, NaiveMemory(), mode)
    assert len(result.probes) == 2
    assert result.metrics["all"].consistency == pytest.approx(2 / 3)

    timeline = tmp_path / "t.jsonl"
    with timeline.open("w") as out:
        write_timeline(events, out)
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--timeline", str(timeline),
         "--target", "naive", "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["probe_set"]["count"] == len(report["targets"][0]["final"]["probes"]) == 2


def test_a_probe_id_used_twice_is_refused_with_both_probes_named():
    one = Probe("same", "Who owns a?", "a", "owners", "ownership")
    two = Probe("same", "Who owns b?", "b", "owners", "ownership", origin="file")
    with pytest.raises(ProbeFileError, match=r"'same' is used twice: by 'a' / 'owners'.*'b'"):
        ProbeSet((one, two))


def test_a_probe_file_reusing_an_id_exits_2_with_one_line(tmp_path):
    probes = tmp_path / "probes.jsonl"
    line = {"id": "x", "question": "Who owns auth?", "subject": "auth", "predicate": "owners"}
    probes.write_text(
        json.dumps({**line, "domain": "ownership"})
        + "\n"
        + json.dumps({**line, "subject": "billing", "domain": "ownership"})
        + "\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--probes", str(probes)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "'x' is used twice" in done.stderr
