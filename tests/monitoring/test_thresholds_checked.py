"""alerts/generate.py refuses a threshold Prometheus would refuse or that would page on
every evaluation: one line naming the key, exit 2, no rule file written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from monitoring_helpers import ALERTS, ROOT


def _generate(tmp_path, change: dict) -> subprocess.CompletedProcess[str]:
    thresholds = yaml.safe_load((ALERTS / "thresholds.yml").read_text())
    for path, value in change.items():
        *tables, key = path.split(".")
        node = thresholds
        for table in tables:
            node = node[table]
        node[key] = value
    written = tmp_path / "thresholds.yml"
    written.write_text(yaml.safe_dump(thresholds))
    out = tmp_path / "out"
    return subprocess.run(
        [sys.executable, str(ALERTS / "generate.py"), "--thresholds", str(written),
         "--out", str(out), "--data", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("freshness.for", "30 mins", "not a Prometheus duration"),
        ("contamination.rise_window", "-1h", "not a Prometheus duration"),
        ("freshness.min", 80, "a ratio from 0 to 1"),
        ("consistency.max_drop_1d", True, "a ratio from 0 to 1"),
        ("schedule_seconds", 0, "a whole number of seconds, at least 1"),
        ("job", "", "a scrape job's name"),
    ],
)
def test_a_threshold_prometheus_cannot_use_is_refused_naming_it(tmp_path, key, value, why):
    done = _generate(tmp_path, {key: value})
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"{key}: " in line and why in line
    assert not (tmp_path / "out").exists()


def test_the_shipped_thresholds_render(tmp_path):
    done = _generate(tmp_path, {})
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("retrieval.for", 0),  # Prometheus reads a `for:` of 0 (a number or "0") as 0s
        ("retrieval.for", "0"),
        ("sources.down_for", "0s"),
        ("runs.failing_for", "1h30m"),
        ("contamination.rise_window", "1h30m"),
    ],
)
def test_a_duration_prometheus_reads_is_rendered(tmp_path, key, value):
    result = _generate(tmp_path, {key: value})
    assert (result.returncode, result.stderr) == (0, "")
    rules = yaml.safe_load((tmp_path / "out" / "alerts.rules.yml").read_text())
    assert rules["groups"]


@pytest.mark.parametrize("value", [0, "0"])
def test_a_for_of_0_is_shipped_as_a_duration_the_pages_show(tmp_path, value):
    # a YAML 0 went into the package's alerts.json as the number 0, and the report's verdict
    # (html.escape of a crossing's `after`) raised AttributeError once that alert crossed
    from dataclasses import asdict

    from healthd.report.html import _crossing
    from healthd.verdict import AlertBook, ratio_crossings

    result = _generate(tmp_path, {"freshness.for": value})
    assert (result.returncode, result.stderr) == (0, "")
    rules = yaml.safe_load((tmp_path / "out" / "alerts.rules.yml").read_text())
    fresh = next(r for r in rules["groups"][0]["rules"] if r["alert"] == "HealthdFreshnessLow")
    assert fresh["for"] == "0s"
    doc = json.loads((tmp_path / "out" / "alerts.json").read_text())
    assert doc["alerts"]["HealthdFreshnessLow"]["for"] == "0s"
    (crossing,) = ratio_crossings(AlertBook(doc["thresholds"], doc["alerts"]), {"freshness": 0.1})
    assert "fires after 0s" in _crossing(asdict(crossing))
