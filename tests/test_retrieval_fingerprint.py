"""Each target's retrieval fingerprint: stamped on the records healthd writes, and a record
served under another fingerprint flagged ``retrieval_changed`` and counted apart."""

from __future__ import annotations

import os

import pytest
from timeline_builders import added, day, fact

from healthd.evaluator import retrieval_changed
from healthd.memory import build_memory, parse_target, retrieval_fingerprint
from healthd.memory.fingerprint import STRUCTURED_READER, UNDECLARED, RetrievalFingerprint
from healthd.model import RETRIEVAL_CHANGED, Probe
from healthd.probes import question_for
from healthd.reading import build_reader, read_facts

os.environ["MEM0_TELEMETRY"] = "False"
BILLING = fact("billing", "owner", "@alice", "ownership")
PROBE = Probe("own", question_for("billing", "owner", "ownership"), "billing", "owner", "ownership")
VALUES = {"@alice": "ownership", "@bob": "ownership"}


def served_facts(memory, at):
    """What a memory serves for PROBE as facts: its structured facts, and its served items
    read by the default reader (Mem0 serves text)."""
    answer = memory.answer(PROBE, at)
    _, read = read_facts(build_reader("default"), PROBE.key, VALUES, answer.items)
    return (*answer.facts, *read)


def test_the_fingerprint_hashes_every_field_and_reads_back_from_json():
    fp = RetrievalFingerprint.of("m", 384, {"b": "2", "a": "1"})
    assert fp.reader == STRUCTURED_READER and fp.libraries == (("a", "1"), ("b", "2"))
    assert RetrievalFingerprint.from_json(fp.as_json()) == fp
    assert RetrievalFingerprint.from_json(fp.as_json()).id == fp.id
    for other in (
        RetrievalFingerprint.of("n", 384, {"b": "2", "a": "1"}),
        RetrievalFingerprint.of("m", 256, {"b": "2", "a": "1"}),
        RetrievalFingerprint.of("m", 384, {"b": "3", "a": "1"}),
        RetrievalFingerprint.of("m", 384, {"b": "2", "a": "1"}, reader="text/1"),
    ):
        assert other.id != fp.id


def test_memories_with_nothing_to_embed_report_the_undeclared_fingerprint():
    for kind in ("reference", "naive"):
        memory = build_memory(parse_target(kind))
        try:
            assert retrieval_fingerprint(memory) == UNDECLARED
        finally:
            memory.close()


@pytest.mark.parametrize(
    ("target", "module", "library"),
    [
        ("mem0:embedder=hashing", "mem0", "mem0ai"),
        ("graphiti:embedder=hashing", "graphiti", "graphiti-core"),
    ],
)
def test_a_record_written_under_another_fingerprint_is_flagged_when_served(
    target, module, library, tmp_path, monkeypatch
):
    pytest.importorskip("mem0" if module == "mem0" else "graphiti_core")
    import importlib

    adapter = importlib.import_module(f"healthd.memory.{module}")
    spec = parse_target(f"{target},path={tmp_path / 'store'},shadow=on")
    memory = build_memory(spec)
    try:
        memory.reset()
        memory.apply(added("e1", 1, BILLING))
        [served] = served_facts(memory, day(2))
        assert RETRIEVAL_CHANGED not in served.flags  # written and read by the same layer
        written_under = retrieval_fingerprint(memory)
    finally:
        memory.close()

    # the same store after an upgrade of the library that embeds and ranks it
    real = adapter.package_versions
    monkeypatch.setattr(
        adapter,
        "package_versions",
        lambda *names: {n: ("99.0" if n == library else v) for n, v in real(*names).items()},
    )
    memory = build_memory(spec)
    try:
        assert retrieval_fingerprint(memory).id != written_under.id
        memory.apply(added("e2", 3, fact("billing", "owner", "@bob", "ownership")))
        served = {f.value: f for f in served_facts(memory, day(4))}
        assert RETRIEVAL_CHANGED in served["@alice"].flags
        assert RETRIEVAL_CHANGED not in served["@bob"].flags
        assert retrieval_changed(served.values()) == 1
    finally:
        memory.close()


def test_a_mem0_store_written_with_another_embedder_is_refused_in_one_line(tmp_path):
    pytest.importorskip("mem0")
    pytest.importorskip("tokenizers")
    from healthd.errors import TargetError

    store = tmp_path / "store"
    memory = build_memory(parse_target(f"mem0:path={store},shadow=on,embedder=hashing"))
    memory.reset()
    memory.apply(added("e1", 1, BILLING))
    memory.close()
    with pytest.raises(TargetError) as caught:  # now the default, the model: 384 dimensions
        build_memory(parse_target(f"mem0:path={store},shadow=on"))
    message = str(caught.value)
    assert "holds vectors of 256 dimensions" in message and "makes 384" in message
    assert "embedder=hashing,dimensions=256" in message and "\n" not in message
    memory = build_memory(parse_target(f"mem0:path={store},shadow=on,embedder=hashing"))
    try:  # the store itself was left alone
        assert [f.value for f in served_facts(memory, day(2))] == ["@alice"]
    finally:
        memory.close()
