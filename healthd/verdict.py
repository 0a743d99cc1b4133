"""The verdict: which alert thresholds each target crosses now, at the top of `/` and of the
HTML report.

The thresholds, severities, ``for`` durations and runbook links are those of the shipped
alerts: ``alerts/generate.py`` writes them from ``alerts/thresholds.yml`` into the package
(``healthd/data/alerts.json``) beside the rules, so the page and Prometheus judge by the
same numbers. A crossing is not yet an alert: Prometheus fires once it has lasted the
alert's ``for``. The drop and rise conditions (``HealthdConsistencyDropped``, the rise of
``HealthdContaminationRising``, the fall of ``HealthdCoverageCollapsing``) compare with
hours or a day before, which only Prometheus keeps; the verdict checks the levels.

A baseline (``role="baseline"``) is judged by the same thresholds, but its crossings are
what it is there to show: no alert selects it, and the page says so.

Pure: numbers in, plain data out; no I/O but reading the packaged thresholds once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from healthd.memory import BASELINE

DATA_FILE = "alerts.json"


@dataclass(frozen=True)
class AlertBook:
    """The shipped alerts as the verdict needs them."""

    thresholds: Mapping[str, Any]
    alerts: Mapping[str, Mapping[str, str]]

    def runbook(self, alert: str) -> str:
        return self.alerts[alert]["runbook_url"]


@cache
def alert_book(runbook_url: str | None = None) -> AlertBook:
    """The thresholds shipped in the package (generated from ``alerts/thresholds.yml``);
    with ``runbook_url``, each alert's runbook link is that address and the alert's anchor
    (``#<alert name in lower case>``), as ``alerts/generate.py --runbook-url`` writes them."""
    text = (resources.files("healthd") / "data" / DATA_FILE).read_text(encoding="utf-8")
    doc = json.loads(text)
    alerts = doc["alerts"]
    if runbook_url:
        base = runbook_url.partition("#")[0]
        alerts = {
            name: {**meta, "runbook_url": f"{base}#{name.lower()}"} for name, meta in alerts.items()
        }
    return AlertBook(doc["thresholds"], alerts)


@dataclass(frozen=True)
class Crossing:
    alert: str
    severity: str
    what: str  # the measured value against the threshold, as a reader checks it
    after: str  # the alert's `for`: how long the crossing must last before it fires
    runbook: str


@dataclass(frozen=True)
class Verdict:
    target: str
    role: str
    measured: bool  # has numbers to judge (a run that never succeeded has none)
    crossings: tuple[Crossing, ...] = field(default_factory=tuple)

    @property
    def status(self) -> str:
        if self.role == BASELINE:
            return "baseline"
        if self.crossings:
            return "crossed"
        return "ok" if self.measured else "unmeasured"

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["crossings"] = [asdict(c) for c in self.crossings]
        out["status"] = self.status
        return out


def _crossing(book: AlertBook, alert: str, what: str) -> Crossing:
    meta = book.alerts[alert]
    return Crossing(alert, meta["severity"], what, meta["for"], meta["runbook_url"])


def _number(value: float) -> str:
    return f"{value:.3f}"


# (alert, ratio, threshold path, True when crossing is below the threshold)
_LEVELS: tuple[tuple[str, str, tuple[str, str], bool], ...] = (
    ("HealthdFreshnessLow", "freshness", ("freshness", "min"), True),
    ("HealthdConsistencyLow", "consistency", ("consistency", "min"), True),
    ("HealthdContaminationRising", "contamination", ("contamination", "max"), False),
    ("HealthdCoverageCollapsing", "coverage", ("coverage", "min"), True),
)


def ratio_crossings(
    book: AlertBook,
    metrics: Mapping[str, Any],
    bounds: Mapping[str, Sequence[float]] | None = None,
) -> list[Crossing]:
    """The level thresholds the pooled (``domain="all"``) ratios cross, as the alerts'
    expressions compare them; a ratio with nothing to measure (null) crosses none, as an
    absent series fires no alert. ``bounds`` (ratio -> (lower, upper), a target replayed
    several times: :mod:`healthd.repeats`): the bound the alert compares, the upper one
    against a floor and the lower one against a ceiling, in place of the mean."""
    out = []
    for alert, ratio, (section, key), below in _LEVELS:
        value = metrics.get(ratio)
        if value is None:
            continue
        what = ratio
        if bounds and ratio in bounds:
            value = bounds[ratio][1 if below else 0]
            what = f"{ratio} ({'upper' if below else 'lower'} bound)"
        limit = float(book.thresholds[section][key])
        if (value < limit) if below else (value > limit):
            sign = "<" if below else ">"
            out.append(_crossing(book, alert, f"{what} {_number(value)} {sign} {limit:g}"))
    return out


def run_crossings(
    book: AlertBook,
    last_run: float | None,
    last_success: float | None,
    now: float,
    schedule_seconds: float | None = None,
) -> list[Crossing]:
    """``HealthdRunsFailing`` and ``HealthdNoRecentSuccess`` from a target's run times. A
    success is stale after two schedule periods: the rules' ``schedule_seconds``, or the
    daemon's own schedule's longest gap between runs when that is longer (an hourly daemon
    judged by the every-minute default was said to be critical 58 minutes an hour)."""
    out = []
    if last_run is not None and (last_success is None or last_run > last_success):
        out.append(_crossing(book, "HealthdRunsFailing", "the newest run failed"))
    period = max(float(book.thresholds["schedule_seconds"]), schedule_seconds or 0.0)
    stale_after = 2 * period
    if last_success is not None and now - last_success > stale_after:
        out.append(
            _crossing(
                book,
                "HealthdNoRecentSuccess",
                f"last success {now - last_success:.0f} s ago > {stale_after:g} s",
            )
        )
    return out


def source_crossings(book: AlertBook, sources: Mapping[str, int | None]) -> list[Crossing]:
    """``HealthdSourceDown`` for each source whose last pull failed (``up`` 0)."""
    return [
        _crossing(book, "HealthdSourceDown", f"source {name} is down")
        for name, up in sources.items()
        if up == 0
    ]


def judge(
    target: str,
    role: str,
    metrics: Mapping[str, Any] | None,
    runs: Sequence[Crossing] = (),
    book: AlertBook | None = None,
    bounds: Mapping[str, Sequence[float]] | None = None,
) -> Verdict:
    """One target's verdict from its pooled ratios (None when it has none), their bounds
    over its replays (see :func:`ratio_crossings`) and its run crossings."""
    book = book or alert_book()
    found = [*runs, *(ratio_crossings(book, metrics, bounds) if metrics is not None else [])]
    return Verdict(target, role, metrics is not None, tuple(found))
