"""Where healthd decides for a product (its own text instead of the product's ingestion, its
own updates and deletes), the figures are an upper bound of the product's, and the report
says so beside them; where the product decides, nothing is said (docs/DESIGN.md: "Modes in
which healthd decides ... are upper bounds and are labelled so")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from healthd.memory import build_memory, parse_target, upper_bound

os.environ["MEM0_TELEMETRY"] = "False"  # read once, when mem0 is first imported
pytest.importorskip("mem0", reason="the mem0 extra is not installed")
pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("mem0:embedder=hashing", "not Mem0's extraction"),
        ("mem0:mode=managed,embedder=hashing", "decides what is updated and deleted"),
        ("graphiti:embedder=hashing", "not Graphiti's extraction"),
        ("reference", None),
        ("naive", None),
    ],
)
def test_a_memory_says_what_healthd_decides_for_it(target: str, said: str | None) -> None:
    memory = build_memory(parse_target(target))
    try:
        bound = upper_bound(memory)
    finally:
        memory.close()
    if said is None:
        assert bound is None
    else:
        assert bound is not None and said in bound


def test_the_table_labels_an_upper_bound_beside_its_figures_and_nothing_else() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--target", "reference", "--target",
         "mem0:mode=managed,embedder=hashing"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="200"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    mem0_table = out.index("mem0:mode=managed")
    label = out.index("upper bound, not the product's own figure: healthd's own sentence")
    assert out.index("reference") < mem0_table < label
    assert out.count("upper bound, not the product's own figure") == 1


def test_the_json_report_carries_the_same_label_only_where_healthd_decides() -> None:
    """``--format json`` is read by other tools: the label the table prints is there too, as
    an added ``upper_bound`` of the target (no key renamed or removed); a target where the
    product decides has no such key, so its JSON is what it was."""
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--format", "json", "--target",
         "reference", "--target", "mem0:mode=managed,embedder=hashing"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reference, mem0 = json.loads(done.stdout)["targets"]
    assert "upper_bound" not in reference
    assert mem0["upper_bound"].startswith("healthd's own sentence for each fact is stored")
    assert "decides what is updated and deleted" in mem0["upper_bound"]
    assert {"name", "kind", "role", "reader", "reading", "stages", "final", "retrieval"} <= set(
        mem0
    )
