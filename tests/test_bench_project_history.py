"""The scale benchmark's inputs: the project-shaped generator writes timelines healthd
accepts, with the shape it promises, and the independent floor reads them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from itertools import pairwise
from pathlib import Path

from healthd.timeline import read_timeline

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

from project_history import write


def test_a_project_history_is_a_valid_timeline_with_a_stable_live_set_and_deep_keys(tmp_path):
    path = tmp_path / "history.jsonl"
    write(6000, 300, str(path))
    events = read_timeline(str(path))
    assert len(events) == 6000
    current: dict = {}
    live_sizes = []
    for event in events:
        key = event.fact.key
        if event.type == "revised":
            assert event.previous == current[key]  # revises what is there
        if event.type == "invalidated":
            current.pop(key, None)
            if key.predicate == "exists":  # a removed module takes its facts with it
                current = {k: f for k, f in current.items() if k.subject != key.subject}
        else:
            current[key] = event.fact
        live_sizes.append(len(current))
    # the live set grows to about the key count and stays there
    assert 250 <= live_sizes[len(events) // 2] <= 330 and 250 <= live_sizes[-1] <= 330
    per_key = Counter(e.fact.key for e in events)
    assert per_key.most_common(1)[0][1] >= 100  # some keys are revised far more than others
    late = sum(b.timestamp < a.timestamp for a, b in pairwise(events))
    assert late > 0
    bursts = Counter(e.timestamp for e in events if e.type == "revised")
    assert bursts.most_common(1)[0][1] >= 10  # a bump day or a reorganisation
    fan_out = sum(any(d.subject == "platform" for d in e.depends_on) for e in events)
    assert fan_out >= 30


def test_the_floor_reads_the_same_file_without_healthd(tmp_path):
    path = tmp_path / "history.jsonl"
    write(3000, 200, str(path))
    done = subprocess.run(
        [sys.executable, "-I", str(BENCH / "floor.py"), str(path)],  # -I: healthd not on the path
        capture_output=True,
        text=True,
        check=True,
    )
    counts = json.loads(done.stdout)
    assert counts["events"] == 3000 and counts["keys"] > 200
    assert counts["right"] > 10 * counts["wrong"]


def test_the_floor_computes_healthds_final_metrics_on_its_own(tmp_path):
    """Every metric of every domain, forgetting included, from the floor's own fold and
    answers: a floor that computed something else would be no floor for healthd."""
    path = tmp_path / "history.jsonl"
    write(4000, 300, str(path))
    report = tmp_path / "report.json"
    subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--timeline", str(path), "--target",
         "reference", "--format", "json", "--output", str(report)],
        check=True, capture_output=True,
    )  # fmt: skip
    healthd = json.loads(report.read_text())["targets"][0]["final"]["metrics"]
    done = subprocess.run(
        [sys.executable, "-I", str(BENCH / "floor.py"), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    floor = json.loads(done.stdout)["metrics"]
    assert floor == healthd
    # not a vacuous agreement: the history ends facts, forgets them, and lets some expire
    assert floor["all"]["forgetting"] is not None
    assert 0 < floor["all"]["freshness"] < 1 and 0 < floor["all"]["coverage"] < 1
