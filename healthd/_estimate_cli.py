"""The edge of `healthd check-config --estimate`: pull the configured sources as a first run
would, read the measured costs shipped in ``healthd/data/llm_costs.json``, list the schedule's
runs, and hand it all to the pure :func:`healthd.estimate.estimate`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any

from healthd.durations import parse_duration
from healthd.errors import ConfigError

if TYPE_CHECKING:
    from healthd.model import ChangeEvent
    from healthd.settings import Settings

#: The days of the schedule's runs counted (a weekly cron counts too).
RUN_DAYS = 7
#: Sources that re-stamp what they hold on their own schedule (``revalidate_interval``).
REVALIDATING = ("git", "adr", "backstage")


def measured_costs() -> dict[str, Any]:
    path = resources.files("healthd") / "data" / "llm_costs.json"
    return dict(json.loads(path.read_text()))


def schedule_runs(cron: str, now: datetime, days: int = RUN_DAYS) -> tuple[list[datetime], int]:
    """The schedule's run times over some days from ``now``, and how many days: ``days``, or
    one for a schedule firing more often than every minute (its runs spread evenly at its
    period)."""
    from healthd.daemon.scheduler import parse_schedule

    schedule = parse_schedule(cron)
    if schedule.period < timedelta(minutes=1):
        step = max(schedule.period, timedelta(seconds=1))
        return [now + step * i for i in range(int(timedelta(days=1) / step))], 1
    end = now + timedelta(days=days)
    runs: list[datetime] = []
    previous = None
    at = now
    while True:
        fire = schedule.trigger.get_next_fire_time(previous, at)
        if fire is None or fire >= end:
            return runs, days
        runs.append(fire)
        previous, at = fire, fire + timedelta(microseconds=1)


def configured_estimate(
    settings: Settings, events: list[ChangeEvent], now: datetime | None = None
) -> dict[str, Any]:
    """The estimate of ``settings`` over ``events``, the sources pulled as a first run would."""
    from healthd.estimate import TargetInput, estimate
    from healthd.memory import NOT_COUNTED
    from healthd.probes import build_probe_set, load_probe_file

    now = now or datetime.now(UTC)
    extra = load_probe_file(settings.probes) if settings.probes else []
    probes = build_probe_set(events, extra)
    intervals = {}
    for name, source in settings.sources.items():
        if source.kind in REVALIDATING:
            try:
                intervals[name] = parse_duration(source.options.get("revalidate_interval", "P1D"))
            except ValueError as exc:  # checked by the source already
                raise ConfigError(f"sources.{name}.revalidate_interval: {exc}") from None
    targets = [
        TargetInput(name, t.kind, t.options, NOT_COUNTED.get(t.kind))
        for name, t in settings.targets.items()
    ]
    runs, days = schedule_runs(settings.schedule.cron, now)
    data = estimate(
        events,
        now=now,
        runs=runs,
        run_days=days,
        intervals=intervals,
        targets=targets,
        profiles=measured_costs(),
        llm=settings.llm,
        probe_keys=frozenset(p.key for p in probes.probes),
    )
    cannot = [
        "a burst or a quiet spell to come: the rate per day is the recent history's",
        "a real model's tokens and answers: the tokens are the stand-in LLM's on the example",
        "the LLM's latency: the waits are the configured ones, an upper bound",
        "runs skipped while one is still going: the runs a day are the schedule's",
    ]
    if settings.reader.startswith("llm"):
        cannot.append("the LLM reader's judge calls (reader = llm:...): not in the figures")
    data["cannot_know"] = cannot
    return data
