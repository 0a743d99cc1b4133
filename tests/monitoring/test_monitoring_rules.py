"""The Prometheus rules: generated from alerts/thresholds.yml (one place for thresholds),
`promtool check rules` clean, every alert unit-tested with `promtool test rules` (fires
when it should with its labels and annotations, quiet when it should not), each alert
complete (for, severity, summary, description, runbook_url to a section of the runbook)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml
from monitoring_helpers import ALERTS, ROOT, RULE_FILES, RUNBOOK, alert_rules, recording_rules, tool

EXPECTED_ALERTS = {
    "HealthdFreshnessLow",
    "HealthdConsistencyLow",
    "HealthdConsistencyDropped",
    "HealthdContaminationRising",
    "HealthdCoverageCollapsing",
    "HealthdRetrievalLayerChanged",
    "HealthdNoRecentSuccess",
    "HealthdRunsFailing",
    "HealthdSourceDown",
    "HealthdDown",
    "HealthdAbsent",
}
TEST_FILES = sorted((ALERTS / "tests").glob("*.yml"))
promtool = pytest.mark.skipif(
    tool("promtool") is None, reason="promtool not installed (Debian package prometheus)"
)


def test_committed_rules_are_what_the_generator_produces_from_the_thresholds(tmp_path):
    subprocess.run(
        [
            sys.executable,
            str(ALERTS / "generate.py"),
            "--out",
            str(tmp_path),
            "--data",
            str(tmp_path),
        ],
        check=True,
        cwd=ROOT,
    )
    for path in (
        *RULE_FILES,
        *(ROOT / "healthd" / "data" / n for n in ("alerts.json", "runbook.md")),
    ):
        assert (tmp_path / path.name).read_text() == path.read_text(), (
            f"{path.relative_to(ROOT)} is stale: run `python alerts/generate.py`"
        )


def test_every_alert_the_issue_lists_exists_and_is_complete():
    alerts = {r["alert"]: r for r in alert_rules()}
    assert set(alerts) == EXPECTED_ALERTS
    headings = {
        re.sub(r"[^a-z0-9 -]", "", line[3:].strip().lower()).replace(" ", "-")
        for line in RUNBOOK.read_text().splitlines()
        if line.startswith("## ")
    }
    base = yaml.safe_load((ALERTS / "thresholds.yml").read_text())["runbook_url"]
    for name, rule in alerts.items():
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
        assert rule["labels"]["severity"] in {"critical", "warning"}, name
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"], name
        url, _, anchor = notes["runbook_url"].partition("#")
        assert url == base and url.endswith("docs/runbook.md"), name
        assert anchor == name.lower() and anchor in headings, f"{name}: no runbook section"
    # pages go out on freshness and consistency
    assert alerts["HealthdFreshnessLow"]["labels"]["severity"] == "critical"
    assert alerts["HealthdConsistencyLow"]["labels"]["severity"] == "critical"
    assert alerts["HealthdAbsent"]["expr"] == 'absent(up{job="healthd"})'


def test_thresholds_live_in_one_place():
    t = yaml.safe_load((ALERTS / "thresholds.yml").read_text())
    alerts = {r["alert"]: r for r in alert_rules()}
    assert f"< {t['freshness']['min']}" in alerts["HealthdFreshnessLow"]["expr"]
    assert f"< {t['consistency']['min']}" in alerts["HealthdConsistencyLow"]["expr"]
    assert f"> {t['consistency']['max_drop_1d']}" in alerts["HealthdConsistencyDropped"]["expr"]
    assert f"> {t['contamination']['max']}" in alerts["HealthdContaminationRising"]["expr"]
    assert f"< {t['coverage']['min']}" in alerts["HealthdCoverageCollapsing"]["expr"]
    assert f"> {2 * t['schedule_seconds']}" in alerts["HealthdNoRecentSuccess"]["expr"]


def test_ratio_alerts_keep_every_label_so_they_work_for_a_fleet():
    for rule in alert_rules() + recording_rules():
        assert not re.search(r"\bby\s*\(", rule["expr"]), (
            f"{rule.get('alert') or rule.get('record')}: aggregate `without (...)` so "
            "namespace/project/instance labels survive"
        )


@promtool
def test_promtool_check_rules_is_clean():
    proc = subprocess.run(
        ["promtool", "check", "rules", *map(str, RULE_FILES)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in (proc.stdout + proc.stderr).upper()


@pytest.mark.slow
@promtool
def test_promtool_unit_tests_pass():
    proc = subprocess.run(
        ["promtool", "test", "rules", *map(str, TEST_FILES)],
        capture_output=True,
        text=True,
        cwd=ALERTS / "tests",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("SUCCESS") == len(TEST_FILES)


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    fired, quiet, exprs = set(), set(), set()
    for path in TEST_FILES:
        doc = yaml.safe_load(path.read_text())
        for test in doc["tests"]:
            for case in test.get("alert_rule_test", []):
                if case.get("exp_alerts"):
                    fired.add(case["alertname"])
                    for alert in case["exp_alerts"]:
                        assert alert["exp_labels"]["severity"], case
                        assert set(alert["exp_annotations"]) == {
                            "summary",
                            "description",
                            "runbook_url",
                        }, case
                else:
                    quiet.add(case["alertname"])
            exprs.update(str(c["expr"]) for c in test.get("promql_expr_test", []))
    assert fired == EXPECTED_ALERTS, EXPECTED_ALERTS - fired
    assert quiet == EXPECTED_ALERTS, EXPECTED_ALERTS - quiet
    for rule in recording_rules():
        assert any(rule["record"] in e for e in exprs), f"{rule['record']} untested"
