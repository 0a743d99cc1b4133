"""The verdict on `/` and in the HTML report judges by the shipped alerts' own thresholds:
the package's copy is what alerts/thresholds.yml says, each level the verdict checks is the
alert's comparison, and each runbook link is the alert's."""

from __future__ import annotations

import yaml
from monitoring_helpers import ALERTS, alert_rules

from healthd.verdict import _LEVELS, alert_book, judge, ratio_crossings, run_crossings


def test_the_packaged_thresholds_are_alerts_thresholds_yml():
    book = alert_book()
    assert book.thresholds == yaml.safe_load((ALERTS / "thresholds.yml").read_text())
    rules = {r["alert"]: r for r in alert_rules()}
    assert set(book.alerts) == set(rules)
    for name, meta in book.alerts.items():
        rule = rules[name]
        assert meta == {
            "severity": rule["labels"]["severity"],
            "for": rule["for"],
            "runbook_url": rule["annotations"]["runbook_url"],
        }


def test_each_level_the_verdict_checks_is_the_alerts_comparison():
    book = alert_book()
    rules = {r["alert"]: r for r in alert_rules()}
    for alert, ratio, (section, key), below in _LEVELS:
        limit = book.thresholds[section][key]
        # the bound of the interval over a target's replays least favourable to paging,
        # or the ratio itself where no bound is exported (equal to it without repeats)
        sel = '{domain="all",role!="baseline"}'
        bound = "upper" if below else "lower"
        comparison = f"(healthd_{ratio}_ratio_{bound}{sel} or healthd_{ratio}_ratio{sel}) "
        comparison += f"{'<' if below else '>'} {limit}"
        assert comparison in rules[alert]["expr"], (alert, rules[alert]["expr"])
        # at the threshold nothing crosses (the alerts compare strictly); past it, it does
        step = -0.001 if below else 0.001
        assert ratio_crossings(book, {ratio: limit}) == []
        crossed = ratio_crossings(book, {ratio: limit + step})
        assert [c.alert for c in crossed] == [alert]
        assert crossed[0].runbook == rules[alert]["annotations"]["runbook_url"]


def test_run_crossings_follow_the_run_alerts():
    book = alert_book()
    twice = 2 * book.thresholds["schedule_seconds"]
    assert run_crossings(book, 100.0, 100.0, 100.0 + twice) == []
    stale = run_crossings(book, 100.0, 100.0, 100.0 + twice + 1)
    assert [c.alert for c in stale] == ["HealthdNoRecentSuccess"]
    failing = run_crossings(book, 200.0, 100.0, 201.0)
    assert [c.alert for c in failing] == ["HealthdRunsFailing"]
    assert [c.alert for c in run_crossings(book, 200.0, None, 201.0)] == ["HealthdRunsFailing"]


def test_a_baseline_is_judged_but_said_to_be_a_baseline():
    bad = {"freshness": 0.1, "consistency": 0.2, "coverage": 0.1, "contamination": 0.9}
    subject = judge("mem", "subject", bad)
    baseline = judge("naive", "baseline", bad)
    assert subject.status == "crossed" and len(subject.crossings) == 4
    assert baseline.status == "baseline" and baseline.crossings == subject.crossings
    assert judge("new", "subject", None).status == "unmeasured"
    assert judge("ok", "subject", {"freshness": 1.0, "consistency": 1.0}).status == "ok"
