"""Every metric a dashboard panel, a dashboard variable or a rule reads is one healthd
really exports (read from a live /metrics of `healthd run`), or a recording rule defined in
alerts/, or Prometheus's own `up`: a rename cannot silently break them."""

from __future__ import annotations

import requests
from monitoring_helpers import (
    dashboards,
    metric_names,
    panel_queries,
    recording_rules,
    rules,
    variable_queries,
)
from prometheus_client.parser import text_string_to_metric_families

PROMETHEUS_OWN = {"up"}


def test_the_extractor_finds_metrics_and_nothing_else():
    assert metric_names(
        'histogram_quantile(0.95, sum without (instance) (rate(a_bucket{le!="1", x=~"$t"}'
        "[$__rate_interval]))) / on (target) group_left (version) b:c:d offset 1d > bool 1e3"
        ' unless absent(up{job="healthd"}) and time() - ignoring(x) e_total'
    ) == {"a_bucket", "b:c:d", "up", "e_total"}


def live_sample_names(url: str) -> set[str]:
    text = requests.get(url + "/metrics", timeout=5).text
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def test_every_metric_used_is_exported_by_healthd(healthd):
    exported = live_sample_names(healthd)
    recorded = {r["record"] for r in recording_rules()}
    used: dict[str, set[str]] = {}
    for name, doc in dashboards().items():
        for title, expr in panel_queries(doc) + variable_queries(doc):
            for metric in metric_names(expr):
                used.setdefault(metric, set()).add(f"{name}: {title}")
    for rule in rules():
        for metric in metric_names(rule["expr"]):
            used.setdefault(metric, set()).add(rule.get("alert") or rule["record"])
    unknown = {
        m: sorted(where)
        for m, where in used.items()
        if m not in exported | recorded | PROMETHEUS_OWN
    }
    assert not unknown, f"not exported by healthd: {unknown}"
    # and the recording rules the dashboards read are defined
    assert {m for m in used if ":" in m} <= recorded


def test_the_issue_metric_list_is_what_healthd_exports(healthd):
    """The contract with issue 3, as the monitoring reads it."""
    exported = live_sample_names(healthd)
    for ratio in ("freshness", "consistency", "coverage", "forgetting", "contamination"):
        assert f"healthd_{ratio}_ratio" in exported
    for name in (
        "healthd_conflicts",
        "healthd_probes",
        "healthd_timeline_lag_seconds",
        "healthd_run_duration_seconds_bucket",
        "healthd_runs_total",
        "healthd_last_run_timestamp_seconds",
        "healthd_last_success_timestamp_seconds",
        "healthd_events_replayed_total",
        "healthd_source_up",
        "healthd_source_events_total",
        "healthd_scheduler_missed_runs_total",
        "healthd_probe_set_info",
        "healthd_build_info",
    ):
        assert name in exported, name
