"""Prometheus metrics, on a registry passed in (never the global one).

Every series of a target carries ``target`` and ``role`` (``baseline`` for a memory run
beside the real ones to show what failing looks like, ``subject`` otherwise), so alerts and
dashboards can leave baselines out with ``role!="baseline"``.

Gauges and counters are built at scrape time from the runner's last results (and the
counters it keeps in the state file, so they survive a restart); a ``null`` metric is
absent, never 0. The run-duration histogram is observed by the runner as runs finish.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from healthd import __version__
from healthd.memory import SUBJECT
from healthd.memory.fingerprint import RetrievalFingerprint
from healthd.scoring import BUCKETS

RATIOS = ("freshness", "consistency", "coverage", "forgetting", "contamination")
DURATION_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
    600,
    1200,
    1800,
    3600,
)

#: The measurement at the stage of the newest real change (not a revalidation sweep).
LAST_CHANGE_NAMES = (
    *(f"healthd_last_change_{r}_ratio" for r in RATIOS),
    "healthd_last_change_conflicts",
    "healthd_last_change_timestamp_seconds",
)

#: The configuration reloads (SIGHUP, POST /-/reload), kept by the daemon.
RELOAD_NAMES = (
    "healthd_config_last_reload_successful",
    "healthd_config_last_reload_success_timestamp_seconds",
    "healthd_config_reload_failures_total",
)

#: Exported only for targets whose memory reports its events per expiry (AgentCore events).
EVENT_EXPIRY_NAMES = (
    "healthd_memory_event_expiry_days",
    "healthd_memory_event_expiry_seconds",
    "healthd_memory_events",
    "healthd_memory_event_expiry_since_timestamp_seconds",
    "healthd_memory_failed_extractions",
)

#: Exported for targets whose runs caused LLM or embedding calls, a series per purpose seen
#: (``healthd.llm_usage``): counters kept in the results across restarts.
LLM_NAMES = ("healthd_llm_calls_total", "healthd_llm_tokens_total")

#: The bounds of each ratio's 95 % interval over a target's replays (``repeats``; both equal
#: the ratio, which is the replays' mean, when the target is replayed once).
BOUND_NAMES = tuple(f"healthd_{r}_ratio_{b}" for r in RATIOS for b in ("lower", "upper"))

#: Every metric healthd exports, for the README and for the tests.
METRIC_NAMES = (
    *(f"healthd_{r}_ratio" for r in RATIOS),
    *BOUND_NAMES,
    "healthd_conflicts",
    "healthd_probes",
    "healthd_timeline_lag_seconds",
    "healthd_run_duration_seconds",
    "healthd_runs_total",
    "healthd_last_run_timestamp_seconds",
    "healthd_last_success_timestamp_seconds",
    "healthd_events_replayed_total",
    "healthd_replay_pending_events",
    "healthd_source_up",
    "healthd_source_pulled",
    "healthd_source_pull_seconds",
    "healthd_source_events_total",
    "healthd_source_skipped_inputs_total",
    "healthd_scheduler_missed_runs_total",
    "healthd_shadow_rebuilds_total",
    "healthd_probe_set_info",
    "healthd_retrieval_info",
    "healthd_retrieval_changes_total",
    "healthd_retrieval_changed_items",
    "healthd_build_info",
    *LAST_CHANGE_NAMES,
    *RELOAD_NAMES,
)


class HealthdCollector(Collector):
    def __init__(
        self, view: Callable[[], dict[str, Any]], clock: Callable[[], float] = time.time
    ) -> None:
        self._view = view
        self._clock = clock

    def describe(self) -> Iterable[Metric]:
        return []  # collected lazily; describe() being empty keeps registration cheap

    def collect(self) -> Iterable[Metric]:
        view = self._view()
        now = self._clock()
        targets = view["targets"]
        ratios = {
            r: GaugeMetricFamily(
                f"healthd_{r}_ratio",
                f"{r.capitalize()} of the shadow memory at the newest "
                "stage (0..1), per domain; absent when there is nothing to measure",
                labels=["target", "role", "domain"],
            )
            for r in RATIOS
        }
        bounds = {
            (r, b): GaugeMetricFamily(
                f"healthd_{r}_ratio_{b}",
                f"The {b} bound of the 95% interval of healthd_{r}_ratio (the mean of the "
                "target's replays, repeats) at the newest stage, per domain; the ratio itself "
                "when the target is replayed once",
                labels=["target", "role", "domain"],
            )
            for r in RATIOS
            for b in ("lower", "upper")
        }
        conflicts = GaugeMetricFamily(
            "healthd_conflicts",
            "Probes whose answer holds two or more values for a single-valued key, per domain",
            labels=["target", "role", "domain"],
        )
        probes = GaugeMetricFamily(
            "healthd_probes", "Probes in P_i (keys asserted so far)", labels=["target", "role"]
        )
        lag = GaugeMetricFamily(
            "healthd_timeline_lag_seconds",
            "Now minus the event time of the newest real change replayed "
            "(revalidation sweeps left out; the newest event when there is none)",
            labels=["target", "role"],
        )
        runs = CounterMetricFamily(
            "healthd_runs", "Runs per target by result", labels=["target", "role", "result"]
        )
        last_run = GaugeMetricFamily(
            "healthd_last_run_timestamp_seconds",
            "When the last run of the target ended",
            labels=["target", "role"],
        )
        last_ok = GaugeMetricFamily(
            "healthd_last_success_timestamp_seconds",
            "When the last successful run of the target ended",
            labels=["target", "role"],
        )
        replayed = CounterMetricFamily(
            "healthd_events_replayed",
            "Events replayed into the target's shadow, each counted once",
            labels=["target", "role"],
        )
        info = GaugeMetricFamily(
            "healthd_probe_set_info",
            "The probe set and evaluation "
            "policy a target's numbers are measured against: "
            "<probe set hash>-<policy hash>[-<retrieval fingerprint>]; setup: what of it is "
            "configured (probe file, reader, options, retrieval layer, sources), unchanged "
            "by new facts",
            labels=["target", "role", "version", "setup"],
        )
        retrieval = GaugeMetricFamily(
            "healthd_retrieval_info",
            "What the target's retrieval ran on in its last successful run: embedding model, "
            "its dimensions, the libraries that embed and rank, the reader of served items",
            labels=[
                "target",
                "role",
                "embedder",
                "dimensions",
                "libraries",
                "reader",
                "fingerprint",
            ],
        )
        retrieval_changes = CounterMetricFamily(
            "healthd_retrieval_changes",
            "Times the target's retrieval fingerprint changed, each starting a new baseline",
            labels=["target", "role"],
        )
        changed_items = GaugeMetricFamily(
            "healthd_retrieval_changed_items",
            "Served items written under another retrieval fingerprint at the newest stage "
            "(counted apart from stale facts)",
            labels=["target", "role"],
        )
        roles = view.get("roles", {})
        for name, row in targets.items():
            res = row.results
            who = [name, roles.get(name, SUBJECT)]
            runs.add_metric([*who, "success"], row.runs_success)
            runs.add_metric([*who, "failure"], row.runs_failure)
            replayed.add_metric(who, row.events_replayed)
            if row.last_run is not None:
                last_run.add_metric(who, row.last_run)
            if row.last_success is not None:
                last_ok.add_metric(who, row.last_success)
            if not res:
                continue
            _add_stage(ratios, conflicts, who, res["metrics"])
            _add_bounds(bounds, who, res["metrics"], res.get("spread"))
            probes.add_metric(who, res["probes"])
            newest = res.get("newest_change")
            if newest is None:
                newest = res.get("newest_event")
            if newest is not None:
                lag.add_metric(who, now - newest)
            info.add_metric([*who, res["info_version"], res.get("probe_setup", "")], 1)
            if isinstance(res.get("retrieval"), dict):
                fingerprint = RetrievalFingerprint.from_json(res["retrieval"])
                retrieval.add_metric(
                    [
                        *who,
                        fingerprint.embedder,
                        str(fingerprint.dimensions),
                        fingerprint.libraries_label,
                        fingerprint.reader,
                        fingerprint.id,
                    ],
                    1,
                )
                retrieval_changes.add_metric(who, res.get("retrieval_changes", 0))
                changed_items.add_metric(who, res.get("retrieval_changed_items", 0))
        yield from ratios.values()
        yield from bounds.values()
        yield from (conflicts, probes, lag, runs, last_run, last_ok, replayed)
        yield from _last_change(targets, roles)
        yield from _event_expiry(targets, roles)
        yield from _llm(targets, roles)
        rebuilds = CounterMetricFamily(
            "healthd_shadow_rebuilds",
            "Persistent shadows found corrupt, moved aside and rebuilt from the state file "
            "since the process started",
            labels=["target", "role"],
        )
        for name, count in view.get("shadow_rebuilds", {}).items():
            rebuilds.add_metric([name, roles.get(name, SUBJECT)], count)
        yield rebuilds
        budget_left = GaugeMetricFamily(
            "healthd_llm_budget_remaining",
            "What is left of a target's LLM budgets: calls this run (max_llm_calls_per_run, "
            "after the last run), tokens today in UTC (max_llm_tokens_per_day)",
            labels=["target", "role", "budget"],
        )
        for name, left in (view.get("llm_budget_left") or {}).items():
            for budget, value in left.items():
                budget_left.add_metric([name, roles.get(name, SUBJECT), budget], value)
        yield budget_left
        pending = GaugeMetricFamily(
            "healthd_replay_pending_events",
            "Events a replay in progress has still to apply to the target's shadow "
            "(0 when none is running)",
            labels=["target", "role"],
        )
        in_progress = view.get("pending", {})
        for name in targets:
            pending.add_metric([name, roles.get(name, SUBJECT)], in_progress.get(name, 0))
        yield pending

        up = GaugeMetricFamily(
            "healthd_source_up",
            "1 when the source's last pull succeeded; 0 when it failed or none has ended yet",
            labels=["source"],
        )
        pulled = GaugeMetricFamily(
            "healthd_source_pulled",
            "1 once a pull of the source has ended (succeeded or failed), 0 before: a source "
            "whose healthd_source_up is 0 and that was never pulled is waiting, not down",
            labels=["source"],
        )
        pull = GaugeMetricFamily(
            "healthd_source_pull_seconds",
            "How long the source's pull in progress has been going (0 when none is)",
            labels=["source"],
        )
        pulling = view.get("pulling", {})
        source_events = CounterMetricFamily(
            "healthd_source_events",
            "Events pulled from the source, each counted once",
            labels=["source"],
        )
        for name, row in view["sources"].items():
            up.add_metric([name], row.up if row.up is not None else 0)
            pulled.add_metric([name], 0 if row.up is None else 1)
            started = pulling.get(name)
            pull.add_metric([name], max(0.0, now - started) if started is not None else 0.0)
            source_events.add_metric([name], row.events_total)
        skipped = CounterMetricFamily(
            "healthd_source_skipped_inputs",
            "Inputs the source could not understand and skipped, each counted when first seen",
            labels=["source"],
        )
        skipped_inputs = view.get("skipped_inputs", {})
        for name in view["sources"]:
            skipped.add_metric([name], skipped_inputs.get(name, 0))
        yield up
        yield pulled
        yield pull
        yield source_events
        yield skipped
        missed = CounterMetricFamily(
            "healthd_scheduler_missed_runs",
            "Scheduled runs missed or skipped because the previous run was still going",
        )
        missed.add_metric([], view["missed_runs"])
        yield missed
        yield info
        yield from (retrieval, retrieval_changes, changed_items)
        build = GaugeMetricFamily("healthd_build_info", "healthd's version", labels=["version"])
        build.add_metric([__version__], 1)
        yield build


def _add_stage(
    ratios: dict[str, GaugeMetricFamily],
    conflicts: GaugeMetricFamily,
    who: list[str],
    metrics: dict[str, Any],
) -> None:
    """One stage's ratios (those with something to measure) and conflicts, per domain."""
    for bucket in BUCKETS:
        values = metrics[bucket]
        for r in RATIOS:
            if values[r] is not None:
                ratios[r].add_metric([*who, bucket], values[r])
        conflicts.add_metric([*who, bucket], values["conflicts"])


def _add_bounds(
    bounds: dict[tuple[str, str], GaugeMetricFamily],
    who: list[str],
    metrics: dict[str, Any],
    spread: dict[str, Any] | None,
) -> None:
    """Each ratio's interval bounds over the replays (``spread``: bucket -> ratio ->
    [lower, upper], :func:`healthd.repeats.bounds`), or the ratio itself for both."""
    for bucket in BUCKETS:
        for r in RATIOS:
            value = metrics[bucket][r]
            if value is None:
                continue
            low, high = ((spread or {}).get(bucket) or {}).get(r) or (value, value)
            bounds[(r, "lower")].add_metric([*who, bucket], low)
            bounds[(r, "upper")].add_metric([*who, bucket], high)


def _event_expiry(targets: dict[str, Any], roles: dict[str, str]) -> Iterable[Metric]:
    """A memory's raw events by the expiry each was created under (AgentCore's
    ``eventExpiryDuration``, fixed per event): the current setting alone does not say when
    the history expires. Only targets that report it have these series."""
    setting = GaugeMetricFamily(
        "healthd_memory_event_expiry_days",
        "The memory's current event expiry setting (days), read in the last successful run",
        labels=["target", "role"],
    )
    setting_seconds = GaugeMetricFamily(
        "healthd_memory_event_expiry_seconds",
        "The memory's current event expiry setting in seconds (the _days gauge's value, in "
        "Prometheus' base unit), read in the last successful run",
        labels=["target", "role"],
    )
    events = GaugeMetricFamily(
        "healthd_memory_events",
        "The shadow's raw events the memory still holds, by the expiry (days) each was "
        "created under",
        labels=["target", "role", "expiry_days"],
    )
    since = GaugeMetricFamily(
        "healthd_memory_event_expiry_since_timestamp_seconds",
        "When the first event still held under each expiry was written: a change of the "
        "setting took effect for the events from then on",
        labels=["target", "role", "expiry_days"],
    )
    failed = GaugeMetricFamily(
        "healthd_memory_failed_extractions",
        "The last run's events the memory reports it failed to extract into records",
        labels=["target", "role"],
    )
    for name, row in targets.items():
        report = (row.results or {}).get("event_expiry")
        if not isinstance(report, dict):
            continue
        who = [name, roles.get(name, SUBJECT)]
        if report.get("failed_extractions") is not None:
            failed.add_metric(who, report["failed_extractions"])
        if report.get("current_days") is not None:
            setting.add_metric(who, report["current_days"])
            setting_seconds.add_metric(who, report["current_days"] * 86_400)
        for days, count in (report.get("populations") or {}).items():
            events.add_metric([*who, str(days)], count)
        for days, at in (report.get("since") or {}).items():
            since.add_metric([*who, str(days)], at)
    yield from (setting, setting_seconds, events, since, failed)


def _llm(targets: dict[str, Any], roles: dict[str, str]) -> Iterable[Metric]:
    """The LLM and embedding calls each target's runs caused, and the tokens the endpoint
    reported for them, by purpose: totals since the target's state began."""
    calls = CounterMetricFamily(
        "healthd_llm_calls",
        "LLM and embedding calls healthd caused for the target (each attempt sent), by "
        "purpose read from the request",
        labels=["target", "role", "purpose"],
    )
    tokens = CounterMetricFamily(
        "healthd_llm_tokens",
        "Tokens the endpoint reported in its answers' usage, by purpose and kind (prompt, "
        "completion); calls whose answer reported none add nothing",
        labels=["target", "role", "purpose", "kind"],
    )
    for name, row in targets.items():
        block = (row.results or {}).get("llm")
        if not isinstance(block, dict):
            continue
        who = [name, roles.get(name, SUBJECT)]
        for purpose, counts in (block.get("by_purpose") or {}).items():
            if not isinstance(counts, dict):
                continue
            calls.add_metric([*who, purpose], counts.get("calls", 0))
            tokens.add_metric([*who, purpose, "prompt"], counts.get("prompt_tokens", 0))
            tokens.add_metric([*who, purpose, "completion"], counts.get("completion_tokens", 0))
    yield from (calls, tokens)


def _last_change(targets: dict[str, Any], roles: dict[str, str]) -> Iterable[Metric]:
    """The ratios and conflicts as they were at the newest real change, beside the ones
    after the revalidation sweeps that followed it (equal when none did)."""
    ratios = {
        r: GaugeMetricFamily(
            f"healthd_last_change_{r}_ratio",
            f"{r.capitalize()} at the stage of the newest real change (revalidation sweeps "
            "after it left out), per domain; absent when there is nothing to measure",
            labels=["target", "role", "domain"],
        )
        for r in RATIOS
    }
    conflicts = GaugeMetricFamily(
        "healthd_last_change_conflicts",
        "Conflicts at the stage of the newest real change, per domain",
        labels=["target", "role", "domain"],
    )
    when = GaugeMetricFamily(
        "healthd_last_change_timestamp_seconds",
        "Event time of the newest real change replayed (not a revalidation sweep)",
        labels=["target", "role"],
    )
    for name, row in targets.items():
        who = [name, roles.get(name, SUBJECT)]
        res = row.results or {}
        stage = res.get("last_change")
        if res.get("newest_change") is not None:
            when.add_metric(who, res["newest_change"])
        if not stage:
            continue
        _add_stage(ratios, conflicts, who, stage["metrics"])
    yield from ratios.values()
    yield conflicts
    yield when


def build_registry(
    view: Callable[[], dict[str, Any]], clock: Callable[[], float] = time.time
) -> tuple[CollectorRegistry, Histogram]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HealthdCollector(view, clock))
    histogram = Histogram(
        "healthd_run_duration_seconds",
        "Duration of a target's run: the run's pull and state write, and its own replay",
        ["target", "role"],
        buckets=DURATION_BUCKETS,
        registry=registry,
    )
    return registry, histogram
