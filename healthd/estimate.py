"""What a configuration will cost before its first run (`healthd check-config --estimate`): per
target, the events the configured sources would replay now and per day, the LLM and embedding
calls and tokens that implies, the waits it pays and, with ``[llm.prices]``, the money.

How each figure is derived (and so what it cannot know):

* **events now**: the configured sources pulled as a first run would pull them, by kind
  (``added``, ``revised``, ``invalidated``, ``revalidated``, and ``sweep``: a revalidation a
  source stamps on its own schedule).
* **changes per day**: the rate of the sources' changes (every event but sweeps) over the
  last ``window`` before now, by kind, or over the whole history when it is younger. A burst,
  a quiet week or a migration to come is not in it.
* **sweeps per day**: each source that re-validates (git, adr: ``revalidate_interval``,
  default a day) re-stamps each fact it holds at most once per interval bucket (at most a
  day) that a run falls in: facts held now × the buckets the schedule's runs fall in, per
  day. A fact a commit observed within the interval is not swept: an upper bound.
* **calls and tokens**: per event kind and per probe read, measured on the bundled example
  through the same product with the stand-in LLM (``healthd/data/llm_costs.json``, written by
  ``scripts/measure_llm_costs.py``, the accounting of :mod:`healthd.llm_usage`). The writes
  cost per event of each kind; the reads (probe searches scoring a stage) cost per probe
  asked, and a stage asks the share of the active probes the example's stages asked (every
  one for a memory that cannot say which answers changed) times the probes of this history.
  Tokens are the stand-in's (its words, its answers): a real model's differ.
* **waits**: a target's ``consistency_wait_seconds`` per batch of ``batch_events``, an upper
  bound (a wait ends once the write reads back); the LLM's own latency is not in it.

Pure: no I/O, no clock; the command pulls the sources, reads the measurements and says when
"now" is.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from healthd.llm_budget import CALLS, TOKENS
from healthd.llm_prices import LLMConfig, Prices
from healthd.llm_usage import PURPOSES
from healthd.model import ChangeEvent, is_sweep

DAY = timedelta(days=1)
DEFAULT_WINDOW = timedelta(days=30)
FIELDS = ("calls", "prompt_tokens", "completion_tokens")
#: Kinds whose memories call no LLM or embedding endpoint at all.
NO_LLM = frozenset({"reference", "naive"})


# -- the schedule and the sweeps --------------------------------------------------------------


def sweeps_per_fact_per_day(runs: Sequence[datetime], days: float, interval: timedelta) -> float:
    """How often a source re-stamps one fact it holds, per day, over ``runs`` (the schedule's
    run times over ``days`` days): once per interval bucket a run falls in (a zero interval:
    every run), and at most once per interval."""
    if not runs or days <= 0:
        return 0.0
    step = min(interval, DAY).total_seconds()
    if step <= 0:
        return len(runs) / days
    buckets = len({int(r.timestamp() // step) for r in runs}) / days
    return min(buckets, DAY / interval)


# -- the measured costs -----------------------------------------------------------------------


#: The kinds and ingests whose own LLM reads healthd's writes: a revalidation sweep reaches them
#: one statement per subject unless ``sweeps`` says otherwise (healthd.replay_groups).
_SWEEP_BY_SUBJECT = {"mem0:messages", "graphiti:episodes", "langmem", "zep", "mem0", "letta"}


def sweeps_mode(kind: str, options: Mapping[str, Any]) -> str:
    """How a target is told a revalidation sweep (its ``sweeps`` option, or its default):
    ``subject``, ``each`` or ``off``."""
    if "sweeps" in options:
        return str(options["sweeps"])
    name = profile_of(kind, options)
    if kind == "letta" and str(options.get("ingest", "messages")) != "messages":
        return "each"
    return "subject" if name in _SWEEP_BY_SUBJECT else "each"


def sweep_groups(events: Iterable[ChangeEvent]) -> int:
    """How many writes a replay gives the sweeps of ``events`` by subject: each run of
    consecutive sweep events about one subject at one time is one."""
    groups, last = 0, None
    for event in events:
        here = (event.timestamp, event.fact.subject) if is_sweep(event) else None
        if here is not None and here != last:
            groups += 1
        last = here
    return groups


def profile_of(kind: str, options: Mapping[str, Any]) -> str:
    """The name a target's costs were measured under in ``llm_costs.json``."""
    if kind == "mem0" and str(options.get("deployment", "local")) == "local":
        return f"mem0:{options.get('ingest', 'facts')}"
    if kind == "graphiti":
        return f"graphiti:{options.get('ingest', 'edges')}"
    return kind


@dataclass
class Cost:
    """Calls and tokens by purpose."""

    by_purpose: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, row: Mapping[str, Any], times: float = 1.0) -> None:
        for purpose, counts in (row.get("by_purpose") or {}).items():
            into = self.by_purpose.setdefault(purpose, dict.fromkeys(FIELDS, 0.0))
            for name in FIELDS:
                into[name] += float(counts.get(name, 0)) * times

    def total(self, name: str) -> float:
        return sum(row[name] for row in self.by_purpose.values())

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {name: round(self.total(name)) for name in FIELDS}
        rank = {p: i for i, p in enumerate(PURPOSES)}
        order = sorted(self.by_purpose, key=lambda p: (rank.get(p, len(rank)), p))
        out["by_purpose"] = {
            p: {name: round(self.by_purpose[p][name]) for name in FIELDS} for p in order
        }
        return out

    def money(self, prices: Prices) -> float:
        total = 0.0
        for purpose, row in self.by_purpose.items():
            if purpose == "embedding":
                total += row["prompt_tokens"] * prices.embedding
            else:
                total += row["prompt_tokens"] * prices.prompt
                total += row["completion_tokens"] * prices.completion
        return total / 1e6


class Profile:
    """One product's measured costs: per event of each kind (the write), per probe asked
    (the read) and the share of the active probes a stage asks."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.writes: dict[str, Mapping[str, Any]] = dict(data["writes"])
        reads = data["reads"]
        self.reads = reads
        self.asked_share = float(reads["answers"]) / max(1.0, float(reads["active_sum"]))

    def per_event(self, kind: str) -> tuple[Mapping[str, Any], float]:
        """The measured row for ``kind`` and its number of events (a sweep costs as a
        revalidation where the example has none; a kind it never saw, as the mean)."""
        row = self.writes.get(kind) or (self.writes.get("revalidated") if kind == "sweep" else None)
        if row is None:
            merged = Cost()
            for r in self.writes.values():
                merged.add(r)
            events = sum(int(r["events"]) for r in self.writes.values())
            return {"by_purpose": merged.by_purpose}, float(events)
        return row, float(row["events"])

    def cost(self, events: Mapping[str, float], probes_asked: float) -> Cost:
        out = Cost()
        for kind, count in events.items():
            row, measured = self.per_event(kind)
            if count and measured:
                out.add(row, count / measured)
        if probes_asked and self.reads["answers"]:
            out.add(self.reads, probes_asked / float(self.reads["answers"]))
        return out


# -- the estimate -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetInput:
    name: str
    kind: str
    options: Mapping[str, Any]
    not_counted: str | None = None  # what the memory calls that healthd cannot see


def kind_of(event: ChangeEvent) -> str:
    return "sweep" if is_sweep(event) else str(event.type)


def live_facts(events: Iterable[ChangeEvent]) -> tuple[Counter[str], Counter[str]]:
    """The facts each source holds at the end of ``events``, by source; and the subjects
    those facts are about, by source."""
    alive: dict[tuple[str, Any], bool] = {}
    subject: dict[Any, str] = {}
    for event in events:
        alive[(event.source, event.fact.key)] = event.type != "invalidated"
        subject[event.fact.key] = event.fact.subject
    live = [(source, key) for (source, key), held in alive.items() if held]
    facts = Counter(source for source, _ in live)
    subjects = Counter(source for source, _ in {(src, subject[key]) for src, key in live})
    return facts, subjects


def estimate(
    events: Sequence[ChangeEvent],
    *,
    now: datetime,
    runs: Sequence[datetime],
    run_days: float,
    intervals: Mapping[str, timedelta],
    targets: Sequence[TargetInput],
    profiles: Mapping[str, Any],
    llm: LLMConfig,
    probe_keys: frozenset[Any],
    window: timedelta = DEFAULT_WINDOW,
) -> dict[str, Any]:
    """The estimate as JSON (see the module's docstring for how each figure is derived).
    ``runs``: the schedule's run times over the ``run_days`` days from ``now``;
    ``intervals``: each re-validating source's ``revalidate_interval``."""
    now_kinds = Counter(kind_of(e) for e in events)
    changes = [e for e in events if not is_sweep(e)]
    first = min((e.timestamp for e in changes), default=now)
    span = min(window, max(now - first, DAY))
    recent = Counter(kind_of(e) for e in changes if now - span <= e.timestamp <= now)
    days = span / DAY
    per_day: dict[str, float] = {k: n / days for k, n in sorted(recent.items())}
    held, subjects = live_facts(events)
    sweeps: dict[str, Any] = {}
    subject_sweeps = 0.0  # the day's sweep writes when each subject is one
    for source, interval in sorted(intervals.items()):
        rate = sweeps_per_fact_per_day(runs, run_days, interval)
        sweeps[source] = {
            "facts_held": held.get(source, 0),
            "subjects_held": subjects.get(source, 0),
            "revalidate_interval_seconds": interval.total_seconds(),
            "sweeps_per_fact_per_day": round(rate, 3),
        }
        per_day["sweep"] = per_day.get("sweep", 0.0) + held.get(source, 0) * rate
        subject_sweeps += subjects.get(source, 0) * rate
    by_mode = {
        "each": (now_kinds.get("sweep", 0), per_day.get("sweep", 0.0)),
        "subject": (sweep_groups(events), subject_sweeps),
        "off": (0, 0.0),
    }
    # the probes active at each stage: those whose key some event has asserted by then
    seen: set[Any] = set()
    active_sum = 0
    for event in events:
        if event.type != "invalidated" and event.fact.key in probe_keys:
            seen.add(event.fact.key)
        active_sum += len(seen)
    probes_now = len(seen)
    out: dict[str, Any] = {
        "now": now.isoformat(),
        "runs_per_day": round(len(runs) / run_days, 3) if run_days else 0,
        "history": {"window_days": round(days, 3), "changes_in_window": sum(recent.values())},
        "events": {
            "now": {"total": len(events), "by_kind": dict(sorted(now_kinds.items()))},
            "per_day": {
                "total": round(sum(per_day.values()), 3),
                "by_kind": {k: round(v, 3) for k, v in per_day.items()},
            },
        },
        "sweeps": sweeps,
        "probes": probes_now,
        "measured": {k: profiles[k] for k in ("command", "measured_on", "llm") if k in profiles},
        "targets": {},
    }
    for target in targets:
        out["targets"][target.name] = _target(
            target,
            profiles.get("profiles", {}),
            llm,
            now_kinds=now_kinds,
            per_day=per_day,
            active_sum=active_sum,
            probes=probes_now,
            sweep_writes=by_mode,
        )
    return out


def _target(
    target: TargetInput,
    profiles: Mapping[str, Any],
    llm: LLMConfig,
    *,
    now_kinds: Mapping[str, int],
    per_day: Mapping[str, float],
    active_sum: int,
    probes: int,
    sweep_writes: Mapping[str, tuple[int, float]],
) -> dict[str, Any]:
    batch = _whole(target.options.get("batch_events"), 1)
    wait = _number(target.options.get("consistency_wait_seconds"))
    # the writes a sweep becomes: one per fact, one per subject, or none (``sweeps``)
    mode = sweeps_mode(target.kind, target.options)
    now_writes, day_writes = sweep_writes.get(mode, sweep_writes["each"])
    now_kinds = {**now_kinds, "sweep": now_writes}
    per_day = {**per_day, "sweep": day_writes}
    day_events = sum(per_day.values())
    events_now = sum(now_kinds.values())
    stages_now, stages_day = math.ceil(events_now / batch), day_events / batch
    row: dict[str, Any] = {
        "kind": target.kind,
        "profile": None,
        "note": None,
        "stages": {"now": stages_now, "per_day": round(stages_day, 3)},
        "wait_seconds": {
            "now": round(stages_now * wait, 3),
            "per_day": round(stages_day * wait, 3),
        },
    }
    name = profile_of(target.kind, target.options)
    if target.kind in NO_LLM:
        row["note"] = "calls no LLM or embedding endpoint"
        zero = Cost().as_json()
        row["now"], row["per_day"] = zero, dict(zero)
        return row
    if target.not_counted:
        row["note"] = f"not estimated: {target.not_counted}"
        return row
    if name not in profiles:
        row["note"] = (
            f"not estimated: no measured costs for {name!r} (measured: "
            f"{', '.join(sorted(profiles)) or 'none'}; scripts/measure_llm_costs.py measures them)"
        )
        return row
    profile = Profile(profiles[name])
    row["profile"], row["sweeps"] = name, mode
    # a batch is read once: its probes are asked once per stage, not once per event
    now = profile.cost(now_kinds, profile.asked_share * active_sum / batch)
    day = profile.cost(per_day, profile.asked_share * probes * stages_day)
    row["now"], row["per_day"] = now.as_json(), day.as_json()
    budgets = _budgets(target.options, now, day)
    if budgets:
        row["budgets"] = budgets
    prices = llm.prices_for(target.name)
    if prices is not None:
        row["money"] = {
            "currency": prices.currency,
            "now": _significant(now.money(prices)),
            "per_day": _significant(day.money(prices)),
        }
    return row


def _budgets(options: Mapping[str, Any], now: Cost, day: Cost) -> dict[str, Any]:
    """What the target's LLM budgets mean for these figures: the runs its first replay
    takes under ``max_llm_calls_per_run``, the days under ``max_llm_tokens_per_day`` (the
    calls of the stages' reads count against both, as the daemon counts them)."""
    out: dict[str, Any] = {}
    calls = _whole(options.get(CALLS), 0)
    if calls:
        out[CALLS] = {"limit": calls, "first_replay_runs": math.ceil(now.total("calls") / calls)}
    tokens = _whole(options.get(TOKENS), 0)
    if tokens:
        spent = now.total("prompt_tokens") + now.total("completion_tokens")
        daily = day.total("prompt_tokens") + day.total("completion_tokens")
        out[TOKENS] = {
            "limit": tokens,
            "first_replay_days": math.ceil(spent / tokens),
            "a_day_fits": daily <= tokens,
        }
    return out


def _significant(value: float) -> float:
    return float(f"{value:.4g}")


def _whole(value: Any, default: int) -> int:
    if value is None:
        return default
    try:
        number = int(str(value))
    except ValueError:
        return default
    return number if number >= 1 else default


def _number(value: Any) -> float:
    try:
        number = float(str(value))
    except ValueError:
        return 0.0
    return number if number > 0 and math.isfinite(number) else 0.0


def render(data: Mapping[str, Any]) -> list[str]:
    """The estimate as lines for a terminal."""
    ev = data["events"]
    now_kinds = ", ".join(f"{k} {n}" for k, n in ev["now"]["by_kind"].items())
    day_kinds = ", ".join(f"{k} {v:g}" for k, v in ev["per_day"]["by_kind"].items())
    hist = data["history"]
    lines = [
        f"estimate (now {data['now']}; per day: the changes of the last "
        f"{hist['window_days']:g} days ({hist['changes_in_window']}), the sweeps at "
        f"{data['runs_per_day']:g} runs a day)",
        f"  events: now {ev['now']['total']} ({now_kinds or 'none'}); per day "
        f"{ev['per_day']['total']:g} ({day_kinds or 'none'}); probes {data['probes']}",
    ]
    for source, s in data["sweeps"].items():
        lines.append(
            f"  sweeps {source}: {s['facts_held']} facts ({s['subjects_held']} subjects) held x "
            f"{s['sweeps_per_fact_per_day']:g} a day (revalidate_interval "
            f"{s['revalidate_interval_seconds']:g} s)"
        )
    for name, t in data["targets"].items():
        head = f"  target {name} ({t['profile'] or t['kind']}):"
        parts = []
        if "sweeps" in t:
            parts.append(f"sweeps = {t['sweeps']}")
        if "now" in t:
            parts += [f"now {_calls(t['now'])}", f"per day {_calls(t['per_day'])}"]
        if t["wait_seconds"]["now"] or t["wait_seconds"]["per_day"]:
            w = t["wait_seconds"]
            parts.append(f"waits up to {w['now']:g} s now, {w['per_day']:g} s a day")
        for budget, b in (t.get("budgets") or {}).items():
            if "first_replay_runs" in b:
                parts.append(
                    f"first replay over {b['first_replay_runs']} runs at {budget} {b['limit']}"
                )
            else:
                fits = "a day fits" if b["a_day_fits"] else "a day does NOT fit"
                parts.append(
                    f"first replay over {b['first_replay_days']} days at {budget} {b['limit']}, {fits}"
                )
        if "money" in t:
            m = t["money"]
            parts.append(f"{m['now']:g} {m['currency']} now, {m['per_day']:g} a day")
        if t["note"]:
            parts.append(t["note"])
        lines.append(f"{head} " + "; ".join(parts))
    measured = data.get("measured") or {}
    if measured:
        lines.append(
            f"  costs measured on {measured.get('measured_on')} with the {measured.get('llm')} "
            f"({measured.get('command')})"
        )
    for reason in data.get("cannot_know") or ():
        lines.append(f"  cannot know: {reason}")
    return lines


def _calls(block: Mapping[str, Any]) -> str:
    purposes = ", ".join(f"{p} {r['calls']}" for p, r in block["by_purpose"].items())
    text = f"{block['calls']} calls"
    if purposes:
        text += f" ({purposes})"
    if block["calls"]:
        text += (
            f", {block['prompt_tokens']} prompt + {block['completion_tokens']} completion tokens"
        )
    return text
