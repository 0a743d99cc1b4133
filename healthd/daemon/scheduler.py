"""Schedules: crontab (5 fields), Spring-style (6 fields, seconds first) and macros.

Everything is in UTC. APScheduler 3.x numbers weekdays from Monday (0 = mon), unlike cron and
Spring, where 0 and 7 are Sunday and 1 is Monday. Numeric days of week are therefore
translated to names before they reach APScheduler, so ``0 9 * * 1-5`` means Monday to Friday
here as it does in crontab, and ``0 0 9 * * MON-FRI`` as it does in Spring.

Spring's ``?`` (no specific value) is read as ``*``. ``L``, ``W`` and ``#`` are refused.

The two day fields combine as each format defines: in a crontab, when both are restricted
(neither starts with ``*``), a day matching either runs, as crontab(5) and POSIX say
(``30 4 1,15 * 5`` is the 1st, the 15th and every Friday); APScheduler, like Spring's six
fields, requires both, so a crontab's two day fields become two triggers, the earlier firing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_NAMES = set(_DAY_NAMES)


#: The runs :meth:`Schedule.longest_gap` walks at most (every minute for 8 days: 11,520,
#: about 0.2 s once per configuration).
MAX_FIRES_WALKED = 20_000


@dataclass(frozen=True)
class Schedule:
    expression: str
    trigger: BaseTrigger
    period: timedelta

    @property
    def misfire_grace_seconds(self) -> int:
        """About half the period, at least a second."""
        return max(1, int(self.period.total_seconds() / 2))

    def longest_gap(self, *, span: timedelta = timedelta(days=8), fires: int = 64) -> timedelta:
        """The longest time between two runs over the next ``span`` and at least the next
        ``fires`` runs (a week and a day holds a weekend, 64 runs a monthly schedule's
        months), what "no run for two periods" must wait for: every 15 minutes on
        weekdays, Friday night to Monday. At most ``MAX_FIRES_WALKED`` runs are walked (a
        schedule by the second gives its gap long before)."""
        longest = self.period
        start = at = self.trigger.get_next_fire_time(None, datetime.now(UTC))
        for walked in range(MAX_FIRES_WALKED):
            if at is None or (at - start >= span and walked >= fires):
                break
            after = self.trigger.get_next_fire_time(at, at + timedelta(microseconds=1))
            if after is None:
                break
            longest, at = max(longest, after - at), after
        return longest


def _day_number(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 7:
        raise ValueError(f"day of week {text!r}: expected 0-7 (0 and 7 are Sunday) or a name")
    return int(text) % 7


def translate_day_of_week(field: str) -> str:
    """Cron/Spring day-of-week (0/7 = Sunday) to APScheduler's form, using names only."""
    field = field.strip().lower()
    if field in ("*", "?"):
        return "*"
    days: list[str] = []
    for part in field.split(","):
        rng, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"day of week {part!r}: bad step")
            step = int(step_text)
        if any(c in rng for c in "l#w") and not any(rng.startswith(n) for n in _NAMES):
            raise ValueError(f"day of week {part!r}: L, W and # are not supported")
        if rng in ("*", "?"):
            numbers = list(range(0, 7, step))
        elif "-" in rng:
            lo, hi = rng.split("-", 1)
            if lo in _NAMES and hi in _NAMES:
                if step != 1:
                    raise ValueError(f"day of week {part!r}: a step needs numbers")
                days.append(rng)
                continue
            a, b = _day_number(lo), int(hi) if hi.isdigit() else -1
            if b < 0 or b > 7 or (b < a and b != 0):
                raise ValueError(f"day of week {part!r}: bad range")
            if b in {0, 7}:
                b = 7
            numbers = [n % 7 for n in range(a, b + 1, step)]
        elif rng in _NAMES:
            days.append(rng)
            continue
        else:
            numbers = [_day_number(rng)]
            if step != 1:
                numbers = [n % 7 for n in range(numbers[0], 7, step)]
        days.extend(_DAY_NAMES[n] for n in numbers)
    return ",".join(dict.fromkeys(days))


def _dom(field: str) -> str:
    field = field.strip()
    if field == "?":
        return "*"
    if any(c in field.upper() for c in "LW#"):
        raise ValueError(f"day of month {field!r}: L, W and # are not supported")
    return field


def _restricted(field: str) -> bool:
    """Whether a crontab day field narrows the days (crontab(5): it does not start with *)."""
    return not field.strip().startswith(("*", "?"))


def parse_schedule(expression: str) -> Schedule:
    """A 5-field crontab, a 6-field Spring expression (seconds first) or a macro, in UTC."""
    text = expression.strip()
    if not text:
        raise ValueError("empty cron expression")
    if text.startswith("@"):
        if text.lower() not in MACROS:
            raise ValueError(f"unknown macro {text!r}; known: {', '.join(sorted(MACROS))}")
        text = MACROS[text.lower()]
    fields = text.split()
    try:
        if len(fields) == 5:
            minute, hour, dom, month, dow = fields
            second = "0"
        elif len(fields) == 6:
            second, minute, hour, dom, month, dow = fields
        else:
            raise ValueError(
                f"expected 5 fields (crontab), 6 fields (Spring, seconds first) or "
                f"a macro such as @hourly, got {len(fields)} fields"
            )

        def cron(day: str, day_of_week: str) -> CronTrigger:
            return CronTrigger(
                second=second,
                minute=minute,
                hour=hour,
                day=day,
                month=month.lower(),
                day_of_week=day_of_week,
                timezone=UTC,
            )

        day, day_of_week = _dom(dom), translate_day_of_week(dow)
        trigger: BaseTrigger = cron(day, day_of_week)
        if len(fields) == 5 and _restricted(dom) and _restricted(dow):
            # a half that never fires ("30 2": no 30th of February) is left out: cron runs
            # the other alone, and asking it for its next run walks to the year 9999 (a
            # third of a second, at each run and for each run the page's gap walks)
            now = datetime.now(UTC)
            halves = [cron(day, "*"), cron("*", day_of_week)]
            firing = [h for h in halves if h.get_next_fire_time(None, now) is not None]
            trigger = OrTrigger(firing) if len(firing) == 2 else (firing or halves)[0]
    except ValueError as exc:
        raise ValueError(f"bad cron expression {expression!r}: {exc}") from None
    now = datetime.now(UTC)
    first = trigger.get_next_fire_time(None, now)
    if first is None:
        raise ValueError(f"bad cron expression {expression!r}: it never fires")
    second_fire = trigger.get_next_fire_time(first, first + timedelta(microseconds=1))
    period = (second_fire - first) if second_fire else timedelta(days=365)
    return Schedule(expression.strip(), trigger, period)
