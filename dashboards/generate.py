#!/usr/bin/env python3
"""Generate healthd's Grafana dashboards with grafana-foundation-sdk.

    python dashboards/generate.py [--out DIR] [--runbook-url URL]

writes ``healthd-memory-health.json`` and ``healthd-operations.json`` into
``dashboards/json/`` (or DIR). The JSON is committed next to this script; the tests
regenerate it into a temporary directory and fail when it differs from the committed files.

Needs ``grafana-foundation-sdk==1769699379!11.6.0`` (the release generated for Grafana
11.6; the version carries an epoch prefix, so a bare install picks an older target) and
PyYAML (the stat thresholds come from ``alerts/thresholds.yml``, the same numbers the alerts
use).

Conventions, so the dashboards work unchanged for one sidecar or a fleet:

* every query goes to the ``$datasource`` variable, never a fixed datasource;
* every selector narrows by the ``job``, ``instance`` and ``target`` variables (multi-value,
  "All" = ``.*``) and, for the per-domain views, ``domain``;
* no aggregation drops the labels that tell sidecars apart (no ``sum by (target)`` alone);
* the expensive look-backs (1h rates, 1d probe-set changes) read recording rules from
  ``alerts/recording.rules.yml``;
* baselines apart: the memory-health panels coloured by the alert thresholds show the real
  targets (``role!="baseline"``); the baselines (``naive``, or a target declared
  ``baseline = true``), meant to fail, have their own row in a neutral colour;
* every panel links to its runbook entry (``docs/runbook.md``, or where ``--runbook-url`` /
  ``HEALTHD_RUNBOOK_URL`` says a team reads it, as for the alerts) and every value to the
  sidecar's own page (``/`` of the series' ``instance``, over ``$healthd_scheme``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from grafana_foundation_sdk.builders import common as cb
from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common as cm
from grafana_foundation_sdk.models import dashboard as dm
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "json"
THRESHOLDS = ROOT / "alerts" / "thresholds.yml"

DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${datasource}")
RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")
RATIO_HELP = {
    "freshness": "Share of retrieved facts last validated within their domain's staleness window.",
    "consistency": "Share of retrieved facts that are still current.",
    "coverage": "Share of current facts that their probe returned.",
    "forgetting": "Of the facts that ended N change points ago, the share the memory no "
    "longer returns.",
    "contamination": "Share of probes whose answer holds a superseded or invalidated fact: "
    "the leading indicator of consistency.",
}

SCOPE = 'job=~"$job", instance=~"$instance"'
#: Ratios whose stat colour follows no alert (the others are red where their alert fires).
COLOURED_BY = {
    "forgetting": "Red below forgetting.min in alerts/thresholds.yml, a colour only: no alert "
    "pages on it (contamination is the symptom of a memory that keeps ended facts)",
}
SEL = f'{SCOPE}, target=~"$target"'
SUBJECTS = f'{SEL}, role!="baseline"'
BASELINES = f'{SEL}, role="baseline"'

GREEN, YELLOW, RED, NEUTRAL = "green", "yellow", "red", "blue"
_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text: str) -> float:
    """A Prometheus duration (``15m``, ``1h30m``) in seconds."""
    parts = re.findall(r"(\d+)(ms|[smhdwy])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(n) * _DURATION_UNITS[u] for n, u in parts)


def source_state(t: dict[str, Any]) -> str:
    """1 up, 0 down, 2 waiting: healthd_source_up is 0 too before a first pull has ended
    (healthd_source_pulled 0), waiting unless that first pull has gone on past
    sources.down_for, when HealthdSourceDown calls it down; a sidecar from before
    healthd_source_pulled shows up or down."""
    limit = f"{duration_seconds(str(t['sources']['down_for'])):g}"
    waiting = (
        f"(1 - healthd_source_pulled{{{SCOPE}}})"
        f" * (healthd_source_pull_seconds{{{SCOPE}}} <= bool {limit})"
    )
    return f"(healthd_source_up{{{SCOPE}}} + 2 * {waiting}) or healthd_source_up{{{SCOPE}}}"


#: panel title -> the alert whose runbook entry it links to (others: the runbook's start)
PANEL_ALERTS = {
    "Freshness": "HealthdFreshnessLow",
    "Freshness by domain": "HealthdFreshnessLow",
    "Consistency": "HealthdConsistencyLow",
    "Consistency by domain": "HealthdConsistencyLow",
    "Contamination next to consistency": "HealthdContaminationRising",
    "Contamination": "HealthdContaminationRising",
    "Contamination by domain": "HealthdContaminationRising",
    "Coverage": "HealthdCoverageCollapsing",
    "Coverage by domain": "HealthdCoverageCollapsing",
    "Last success age": "HealthdNoRecentSuccess",
    "Run failure ratio (1h)": "HealthdRunsFailing",
    "Runs by result": "HealthdRunsFailing",
    "Sources": "HealthdSourceDown",
    "Source up": "HealthdSourceDown",
}


def load_thresholds(path: Path = THRESHOLDS) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


# --- building blocks ---------------------------------------------------------------------


def query(
    expr: str,
    legend: str = "__auto",
    ref: str = "A",
    *,
    instant: bool = False,
    table_format: bool = False,
) -> prometheus.Dataquery:
    q = prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DATASOURCE)
    if instant:
        q = q.instant()
    else:
        q = q.range()
    if table_format:
        q = q.format(PromQueryFormat.TABLE)
    return q


def steps(*pairs: tuple[float | None, str]) -> db.ThresholdsConfig:
    return (
        db.ThresholdsConfig()
        .mode(dm.ThresholdsMode.ABSOLUTE)
        .steps([dm.Threshold(value=v, color=c) for v, c in pairs])
    )


def ratio_steps(ratio: str, t: dict[str, Any]) -> db.ThresholdsConfig:
    """Red where the ratio's alert fires, green where it is healthy. A step colours the
    values from its own on, and the ceiling's alert fires only above it: red starts at the
    next number past the ceiling (a floor's alert fires below it, where red already ends)."""
    if ratio == "contamination":
        limit = t["contamination"]["max"]
        return steps((None, GREEN), (limit / 2, YELLOW), (math.nextafter(limit, math.inf), RED))
    floor = t[ratio]["min"]
    return steps((None, RED), (floor, YELLOW), (round((floor + 1) / 2, 4), GREEN))


def stat_panel(
    title: str,
    description: str,
    targets: Iterable[prometheus.Dataquery],
    *,
    unit: str,
    thresholds: db.ThresholdsConfig,
    w: int,
    h: int = 5,
    mappings: list[Any] | None = None,
    lo: float | None = None,
    hi: float | None = None,
) -> stat.Panel:
    panel = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .thresholds(thresholds)
        .span(w)
        .height(h)
        .reduce_options(cb.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .color_mode(cm.BigValueColorMode.BACKGROUND)
        .graph_mode(cm.BigValueGraphMode.AREA)
        .text_mode(cm.BigValueTextMode.VALUE_AND_NAME)
        .orientation(cm.VizOrientation.AUTO)
        .no_value("no data")
    )
    if lo is not None:
        panel = panel.min(lo)
    if hi is not None:
        panel = panel.max(hi)
    if mappings:
        panel = panel.mappings(mappings)
    for target in targets:
        panel = panel.with_target(target)
    return panel


def series_panel(
    title: str,
    description: str,
    targets: Iterable[prometheus.Dataquery],
    *,
    unit: str,
    w: int = 12,
    h: int = 8,
    lo: float | None = None,
    hi: float | None = None,
    thresholds: db.ThresholdsConfig | None = None,
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(w)
        .height(h)
        .line_width(1)
        .fill_opacity(10)
        .show_points(cm.VisibilityMode.NEVER)
        .legend(
            cb.VizLegendOptions()
            .display_mode(cm.LegendDisplayMode.TABLE)
            .placement(cm.LegendPlacement.BOTTOM)
            .show_legend(True)
            .calcs(["lastNotNull", "min"])
        )
        .tooltip(
            cb.VizTooltipOptions().mode(cm.TooltipDisplayMode.MULTI).sort(cm.SortOrder.ASCENDING)
        )
    )
    if lo is not None:
        panel = panel.min(lo)
    if hi is not None:
        panel = panel.max(hi)
    if thresholds is not None:
        panel = panel.thresholds(thresholds).thresholds_style(
            cb.GraphThresholdsStyleConfig().mode(cm.GraphThresholdsStyleMode.DASHED)
        )
    for target in targets:
        panel = panel.with_target(target)
    return panel


def variables() -> list[Any]:
    def qvar(name: str, label: str, expr: str, description: str) -> db.QueryVariable:
        return (
            db.QueryVariable(name)
            .label(label)
            .description(description)
            .datasource(DATASOURCE)
            .query(expr)
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(dm.VariableSort.ALPHABETICAL_CASE_INSENSITIVE_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .current(dm.VariableOption(text=["All"], value=["$__all"]))
        )

    return [
        (
            db.DatasourceVariable("datasource")
            .label("Data source")
            .type("prometheus")
            .description("The Prometheus (or Thanos/Mimir) that scrapes the healthd sidecars")
        ),
        qvar(
            "job",
            "Job",
            "label_values(healthd_build_info, job)",
            "Prometheus scrape job(s) of the healthd sidecars",
        ),
        qvar(
            "instance",
            "Instance",
            'label_values(healthd_build_info{job=~"$job"}, instance)',
            "healthd sidecar(s): one per memory service",
        ),
        qvar(
            "target",
            "Target",
            f"label_values(healthd_runs_total{{{SCOPE}}}, target)",
            "Memory target(s) a sidecar evaluates",
        ),
        qvar(
            "domain",
            "Domain",
            f"label_values(healthd_consistency_ratio{{{SEL}}}, domain)",
            "Fact domain: all (every domain pooled), tech, ownership, decision, requirement",
        ).current(dm.VariableOption(text=["all"], value=["all"])),
        (
            db.CustomVariable("healthd_scheme")
            .label("healthd page scheme")
            .description(
                "How the sidecars serve their page at / (https with a web config file): "
                "the values' links open <scheme>://<instance>/"
            )
            .values("http,https")
            .current(dm.VariableOption(text="http", value="http"))
        ),
    ]


def base(uid: str, title: str, description: str, other_uid: str, other_title: str) -> db.Dashboard:
    d = (
        db.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["healthd", "memory", "generated"])
        .editable()
        .time("now-7d", "now")
        .refresh("1m")
        .timezone("browser")
        .tooltip(dm.DashboardCursorSync.CROSSHAIR)
        .link(
            db.DashboardLink(other_title)
            .type(dm.DashboardLinkType.LINK)
            .url(f"/d/{other_uid}")
            .include_vars(True)
            .keep_time(True)
            .icon("dashboard")
        )
    )
    for v in variables():
        d = d.with_variable(v)
    return d


# --- memory health -----------------------------------------------------------------------

MEMORY_UID = "healthd-memory-health"
OPERATIONS_UID = "healthd-operations"


def memory_health(t: dict[str, Any]) -> db.Dashboard:
    d = base(
        MEMORY_UID,
        "healthd / memory health",
        "Does what the memory remembers still match the project? The five lifecycle "
        "ratios per target (domain=all pools every domain), their history per domain, "
        "contamination next to consistency as the leading indicator, conflicts and "
        "timeline lag. Thresholds are those of alerts/thresholds.yml.",
        OPERATIONS_UID,
        "healthd / operations",
    )

    d = d.with_row(db.Row("Now: every domain pooled (domain=all), baselines left out"))
    for ratio in RATIOS:
        d = d.with_panel(
            stat_panel(
                ratio.capitalize(),
                RATIO_HELP[ratio]
                + " Absent (no data) when there is nothing to measure yet. "
                + COLOURED_BY.get(
                    ratio,
                    "Red where the value crosses the alert's threshold (with repeats the value is "
                    "the replays' mean, and the alert compares the bound of their 95% interval "
                    "least likely to page, so a red mean need not page)",
                )
                + "; baselines are in their own row.",
                [query(f'healthd_{ratio}_ratio{{{SUBJECTS}, domain="all"}}', "{{target}}")],
                unit="percentunit",
                thresholds=ratio_steps(ratio, t),
                w=4,
                lo=0,
                hi=1,
            )
        )
    d = d.with_panel(
        stat_panel(
            "Conflicts",
            "Probes whose answer holds two or more values for a single-valued key "
            "(contradiction inside the store).",
            [query(f'healthd_conflicts{{{SUBJECTS}, domain="all"}}', "{{target}}")],
            unit="none",
            thresholds=steps((None, GREEN), (1, RED)),
            w=4,
        )
    )

    d = d.with_row(db.Row("Baselines: meant to fail, shown for comparison (no alert selects them)"))
    d = d.with_panel(
        stat_panel(
            "Baselines",
            "Targets marked as baselines (naive, or `baseline = true`): memories run beside "
            "the real ones to show what failing looks like. Their low numbers are expected, "
            "so they are not coloured by the alert thresholds and no alert selects them.",
            [
                query(
                    f'healthd_{ratio}_ratio{{{BASELINES}, domain="all"}}',
                    f"{{{{target}}}} {ratio}",
                    chr(ord("A") + i),
                )
                for i, ratio in enumerate(RATIOS)
            ],
            unit="percentunit",
            thresholds=steps((None, NEUTRAL)),
            w=24,
            h=4,
            lo=0,
            hi=1,
        )
    )

    d = d.with_row(db.Row("Leading indicator"))
    d = d.with_panel(
        series_panel(
            "Contamination next to consistency",
            "Contamination (stale facts leaking into answers) rises at a change the memory "
            "misses, before consistency falls far: watch the dashed lines climb before the "
            "solid ones sink. Baselines left out.",
            [
                query(
                    f'healthd_consistency_ratio{{{SUBJECTS}, domain=~"$domain"}}',
                    "consistency {{target}} · {{domain}}",
                    "A",
                ),
                query(
                    f'healthd_contamination_ratio{{{SUBJECTS}, domain=~"$domain"}}',
                    "contamination {{target}} · {{domain}}",
                    "B",
                ),
            ],
            unit="percentunit",
            w=24,
            h=9,
            lo=0,
            hi=1,
        ).override_by_query(
            "B",
            [
                dm.DynamicConfigValue(
                    id_val="custom.lineStyle", value={"fill": "dash", "dash": [10, 10]}
                )
            ],
        )
    )

    d = d.with_row(db.Row("History per domain"))
    for ratio in RATIOS:
        d = d.with_panel(
            series_panel(
                f"{ratio.capitalize()} by domain",
                RATIO_HELP[ratio],
                [
                    query(
                        f'healthd_{ratio}_ratio{{{SEL}, domain=~"$domain"}}',
                        "{{target}} ({{role}}) · {{domain}}",
                    )
                ],
                unit="percentunit",
                lo=0,
                hi=1,
                w=12 if ratio != "contamination" else 24,
                thresholds=ratio_steps(ratio, t),
            )
        )

    d = d.with_row(db.Row("Store and timeline"))
    d = d.with_panel(
        series_panel(
            "Conflicts",
            "Probes whose answer holds two values for a single-valued key.",
            [query(f'healthd_conflicts{{{SEL}, domain="all"}}', "{{target}}")],
            unit="none",
            w=8,
            lo=0,
        )
    )
    d = d.with_panel(
        series_panel(
            "Timeline lag",
            "Now minus the event time of the newest real change replayed into the "
            "shadow: how old the project's last change is (it grows on a quiet project "
            "with the shadow caught up; what is left to replay is "
            "healthd_replay_pending_events).",
            [query(f"healthd_timeline_lag_seconds{{{SEL}}}", "{{target}}")],
            unit="s",
            w=8,
            lo=0,
        )
    )
    d = d.with_panel(
        series_panel(
            "Probes",
            "Probes in P_i: keys the timeline has asserted so far (every probe counts "
            "at every stage).",
            [query(f"healthd_probes{{{SEL}}}", "{{target}}")],
            unit="none",
            w=8,
            lo=0,
        )
    )
    d = d.with_panel(
        table.Panel()
        .title("Probe set and policy versions")
        .description(
            "The probe set hash and evaluation policy each target is measured against "
            "(version: a new one with each key the timeline asserts) and what is configured "
            "to measure it (setup: probe file, reader, options, retrieval layer, sources). A "
            "new setup means numbers are not comparable with the old baseline "
            "(HealthdConsistencyDropped holds off for a day); a new version alone does not."
        )
        .datasource(DATASOURCE)
        .span(16)
        .height(6)
        .with_target(
            query(
                f"healthd_probe_set_info{{{SEL}}}", "{{version}}", instant=True, table_format=True
            )
        )
    )
    d = d.with_panel(
        stat_panel(
            "Probe set changes (1d)",
            "Distinct probe-set versions per target within a day "
            "(recording rule target:healthd_probe_set_versions:count1d): above 1 when keys "
            "were asserted, every day on an active project; no warning in itself.",
            [query(f"target:healthd_probe_set_versions:count1d{{{SEL}}}", "{{target}}")],
            unit="none",
            thresholds=steps((None, NEUTRAL)),
            w=4,
            h=6,
        )
    )
    d = d.with_panel(
        stat_panel(
            "Probe setups (1d)",
            "Distinct probe setups per target within a day (recording rule "
            "target:healthd_probe_setups:count1d): above 1, what measures the target was "
            "reconfigured and HealthdConsistencyDropped holds off until a day has passed.",
            [query(f"target:healthd_probe_setups:count1d{{{SEL}}}", "{{target}}")],
            unit="none",
            thresholds=steps((None, GREEN), (2, YELLOW)),
            w=4,
            h=6,
        )
    )
    return d


# --- operations --------------------------------------------------------------------------


def operations(t: dict[str, Any]) -> db.Dashboard:
    schedule = float(t["schedule_seconds"])
    d = base(
        OPERATIONS_UID,
        "healthd / operations",
        "Is healthd itself working? Run results and duration, age of the last "
        "successful run, missed scheduled runs, source health and events replayed.",
        MEMORY_UID,
        "healthd / memory health",
    )

    d = d.with_row(db.Row("Now"))
    d = d.with_panel(
        stat_panel(
            "Last success age",
            "Time since the last successful run of each target (recording "
            "rule target:healthd_last_success:age_seconds). HealthdNoRecentSuccess fires past "
            "twice the schedule.",
            [query(f"target:healthd_last_success:age_seconds{{{SEL}}}", "{{target}}")],
            unit="s",
            thresholds=steps((None, GREEN), (schedule * 1.5, YELLOW), (schedule * 2, RED)),
            w=8,
        )
    )
    d = d.with_panel(
        stat_panel(
            "Run failure ratio (1h)",
            "Share of the runs in the last hour that failed "
            "(recording rule target:healthd_runs_failure:ratio_rate1h).",
            [query(f"target:healthd_runs_failure:ratio_rate1h{{{SEL}}}", "{{target}}")],
            unit="percentunit",
            thresholds=steps((None, GREEN), (0.01, YELLOW), (0.5, RED)),
            w=6,
            lo=0,
            hi=1,
        )
    )
    d = d.with_panel(
        stat_panel(
            "Missed runs (1h)",
            "Scheduled runs missed or skipped because the previous run was still going.",
            [
                query(
                    f"increase(healthd_scheduler_missed_runs_total{{{SCOPE}}}[1h])", "{{instance}}"
                )
            ],
            unit="none",
            thresholds=steps((None, GREEN), (1, YELLOW)),
            w=4,
        )
    )
    d = d.with_panel(
        stat_panel(
            "Sources",
            "up when the source's last pull succeeded, down when it failed, waiting while its "
            "first pull has not ended (down once that pull has gone on past "
            f"{t['sources']['down_for']}, as HealthdSourceDown has it).",
            [query(source_state(t), "{{source}}")],
            unit="none",
            thresholds=steps((None, RED), (1, GREEN)),
            w=6,
            mappings=[
                dm.ValueMap(
                    options={
                        "0": dm.ValueMappingResult(text="down", color=RED, index=0),
                        "1": dm.ValueMappingResult(text="up", color=GREEN, index=1),
                        "2": dm.ValueMappingResult(text="waiting", color=NEUTRAL, index=2),
                    }
                )
            ],
        )
    )

    d = d.with_row(db.Row("Runs"))
    d = d.with_panel(
        series_panel(
            "Runs by result",
            "Runs that ended in each interval, per target and result.",
            [
                query(
                    f"increase(healthd_runs_total{{{SEL}}}[$__rate_interval])",
                    "{{target}} {{result}}",
                )
            ],
            unit="none",
            lo=0,
        ).override_by_regexp(
            ".*failure",
            [dm.DynamicConfigValue(id_val="color", value={"mode": "fixed", "fixedColor": RED})],
        )
    )
    d = d.with_panel(
        series_panel(
            "Run duration (1h)",
            "p95 and mean duration of a target's run over the last hour "
            "(recording rules target:healthd_run_duration_seconds:*).",
            [
                query(
                    f"target:healthd_run_duration_seconds:p95_rate1h{{{SEL}}}",
                    "p95 {{target}}",
                    "A",
                ),
                query(
                    f"target:healthd_run_duration_seconds:mean_rate1h{{{SEL}}}",
                    "mean {{target}}",
                    "B",
                ),
            ],
            unit="s",
            lo=0,
        )
    )
    d = d.with_panel(
        series_panel(
            "Last success age",
            "Time since each target's last successful run; the dashed "
            "line is twice the schedule (HealthdNoRecentSuccess).",
            [query(f"target:healthd_last_success:age_seconds{{{SEL}}}", "{{target}}")],
            unit="s",
            lo=0,
            thresholds=steps((None, GREEN), (schedule * 2, RED)),
        )
    )
    d = d.with_panel(
        series_panel(
            "Missed runs",
            "Scheduled runs missed or skipped (coalesced) per interval.",
            [
                query(
                    f"increase(healthd_scheduler_missed_runs_total{{{SCOPE}}}[$__rate_interval])",
                    "{{instance}}",
                )
            ],
            unit="none",
            lo=0,
        )
    )

    d = d.with_row(db.Row("Sources and replay"))
    d = d.with_panel(
        series_panel(
            "Source up",
            "1 when the source's last pull succeeded, 0 when it failed or none has ended yet "
            "(a source never pulled is waiting: see the Sources stat).",
            [query(f"healthd_source_up{{{SCOPE}}}", "{{instance}} {{source}}")],
            unit="none",
            w=8,
            lo=0,
            hi=1,
        )
    )
    d = d.with_panel(
        series_panel(
            "Source events pulled",
            "New events pulled from each source per interval.",
            [
                query(
                    f"increase(healthd_source_events_total{{{SCOPE}}}[$__rate_interval])",
                    "{{instance}} {{source}}",
                )
            ],
            unit="none",
            w=8,
            lo=0,
        )
    )
    d = d.with_panel(
        series_panel(
            "Events replayed",
            "Events replayed into each target's shadow per interval.",
            [
                query(
                    f"increase(healthd_events_replayed_total{{{SEL}}}[$__rate_interval])",
                    "{{target}}",
                )
            ],
            unit="none",
            w=8,
            lo=0,
        )
    )
    d = d.with_panel(
        table.Panel()
        .title("healthd versions")
        .description("healthd build running on each sidecar.")
        .datasource(DATASOURCE)
        .span(24)
        .height(5)
        .with_target(
            query(f"healthd_build_info{{{SCOPE}}}", "{{version}}", instant=True, table_format=True)
        )
    )
    return d


# --- output ------------------------------------------------------------------------------


def _number(panels: list[dict[str, Any]]) -> None:
    for i, panel in enumerate(panels, start=1):
        panel["id"] = i


def _link(panel: dict[str, Any], runbook: str) -> None:
    """A panel's links: its alert's runbook entry; each value's: its sidecar's page at /."""
    alert = PANEL_ALERTS.get(panel["title"])
    panel["links"] = [
        {
            "title": f"Runbook: {alert}" if alert else "Runbook",
            "url": f"{runbook}#{alert.lower()}" if alert else runbook,
            "targetBlank": True,
        }
    ]
    defaults = panel.setdefault("fieldConfig", {}).setdefault("defaults", {})
    defaults["links"] = [
        {
            "title": "healthd page of ${__field.labels.instance}: verdict, runs, failing probes",
            "url": "${healthd_scheme}://${__field.labels.instance}/",
            "targetBlank": True,
        }
    ]


def render(thresholds: dict[str, Any]) -> dict[str, str]:
    encoder = JSONEncoder(sort_keys=True, indent=2)
    out = {}
    for name, builder in (
        (f"{MEMORY_UID}.json", memory_health(thresholds)),
        (f"{OPERATIONS_UID}.json", operations(thresholds)),
    ):
        doc = json.loads(encoder.encode(builder.build()))
        _number(doc["panels"])  # stable ids in layout order, rows included
        for panel in doc["panels"]:
            if panel["type"] != "row":
                _link(panel, thresholds["runbook_url"])
        out[name] = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--thresholds", type=Path, default=THRESHOLDS)
    parser.add_argument(
        "--runbook-url",
        default=os.environ.get("HEALTHD_RUNBOOK_URL") or None,
        help="the runbook's address, in place of thresholds.yml's runbook_url, as "
        "alerts/generate.py takes it (default: $HEALTHD_RUNBOOK_URL)",
    )
    args = parser.parse_args(argv)
    thresholds = load_thresholds(args.thresholds)
    if args.runbook_url:
        thresholds["runbook_url"] = args.runbook_url
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in render(thresholds).items():
        (args.out / name).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
