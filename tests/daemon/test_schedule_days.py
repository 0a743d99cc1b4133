"""A crontab's two day fields, as crontab(5) and POSIX define them: when both are
restricted, a day matching either runs ("30 4 1,15 * 5" is the 1st, the 15th and every
Friday); Spring's six fields keep requiring both."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from healthd.daemon.scheduler import parse_schedule


def _fires(expression: str, after: datetime, count: int) -> list[datetime]:
    trigger = parse_schedule(expression).trigger
    out: list[datetime] = []
    previous = None
    now = after
    for _ in range(count):
        at = trigger.get_next_fire_time(previous, now)
        assert at is not None
        out.append(at)
        previous, now = at, at.replace(microsecond=1)
    return out


def test_a_crontab_with_both_day_fields_runs_on_either():
    # 2026-03-28 is a Saturday: Monday the 30th, Wednesday 1 April, Monday 6 April
    assert _fires("0 9 1 * 1", datetime(2026, 3, 28, tzinfo=UTC), 3) == [
        datetime(2026, 3, 30, 9, tzinfo=UTC),
        datetime(2026, 4, 1, 9, tzinfo=UTC),
        datetime(2026, 4, 6, 9, tzinfo=UTC),
    ]


def test_a_day_of_month_that_never_comes_still_runs_on_its_day_of_week():
    # February has no 30th, but "0 0 30 2 1" runs every Monday of February
    assert _fires("0 0 30 2 1", datetime(2026, 1, 1, tzinfo=UTC), 2) == [
        datetime(2026, 2, 2, tzinfo=UTC),
        datetime(2026, 2, 9, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("expression", "first"),
    [
        ("0 9 * * 1", datetime(2026, 3, 30, 9, tzinfo=UTC)),  # day of month unrestricted
        ("0 9 1 * *", datetime(2026, 4, 1, 9, tzinfo=UTC)),  # day of week unrestricted
        ("0 9 1-7 * */2", datetime(2026, 4, 2, 9, tzinfo=UTC)),  # "*/2" is unrestricted
        ("0 0 9 1 * MON", datetime(2026, 6, 1, 9, tzinfo=UTC)),  # Spring: both must match
    ],
)
def test_a_day_field_left_open_or_a_spring_expression_requires_both(expression, first):
    assert _fires(expression, datetime(2026, 3, 28, tzinfo=UTC), 1) == [first]


@pytest.mark.parametrize("expression", ["0 0 30 2 1", "0 0 31 4 MON", "*/15 * 30 2 1"])
def test_a_day_of_month_that_never_comes_is_not_walked_to_the_year_9999(expression):
    # every part of the trigger fires: one that never does is asked to the year 9999 at
    # each run (a third of a second each; the page's longest gap walks 64 runs and more)
    trigger = parse_schedule(expression).trigger
    now = datetime(2026, 3, 28, tzinfo=UTC)
    for part in getattr(trigger, "triggers", [trigger]):
        assert part.get_next_fire_time(None, now) is not None
    assert _fires(expression, datetime(2026, 1, 1, tzinfo=UTC), 1)[0].month in (1, 2, 4)
