"""The page model: what the HTML report and the daemon's `/` show, built from a JSON report.

Pure: a report dict (the `--format json` shape) in, plain data out; no I/O, no clock. The
same report gives the same model, so the same HTML, byte for byte.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta
from typing import Any

from healthd.llm_usage import summary_text
from healthd.memory import BASELINE, target_role
from healthd.model import ChangeEvent
from healthd.repeats import bounds as replay_bounds
from healthd.report.downsample import QuietSpans, keep_positions
from healthd.report.failures import (
    KINDS,
    Failure,
    attribute_layers,
    label_options,
    off_switches,
    probe_failures,
)
from healthd.report.shape import METRICS, RATIOS
from healthd.scoring import BUCKETS, DEFAULT_WINDOWS
from healthd.timeline import format_timestamp, parse_timestamp
from healthd.verdict import Verdict, alert_book, judge

# Points over all charts of a page (targets x domains); each chart keeps at least the floor.
POINT_BUDGET = 24_000
CHART_FLOOR = 300
CHART_CEILING = 2_000
FACTS_SHOWN = 12  # per failing probe in the model; the rest are counted
_HIGHER_IS_BETTER = {
    "freshness": True,
    "consistency": True,
    "coverage": True,
    "forgetting": True,
    "contamination": False,
    "conflicts": False,
}


def event_summary(event: ChangeEvent) -> list[str]:
    """[id, type, key, values, timestamp] as the chart's hover shows them."""
    key = f"{event.fact.subject} · {event.fact.predicate}"
    if event.previous is not None:
        if event.previous.key != event.fact.key:
            key = f"{event.previous.subject} · {event.previous.predicate} → {key}"
        values = f"{event.previous.value} → {event.fact.value}"
    else:
        values = event.fact.value
    if event.type == "invalidated" and event.reason:
        values = f"{values} ({event.reason})"
    return [event.id, event.type, key, values, format_timestamp(event.timestamp)]


def chart_budget(targets: int) -> int:
    share = POINT_BUDGET // max(1, targets * len(BUCKETS))
    return max(CHART_FLOOR, min(CHART_CEILING, share))


# One float object per rounded value, shared by every point that has it: a chart's series
# are steps, most points repeating a value. Ratios rounded to 4 places: at most 10,001.
_ROUNDED: dict[float, float] = {}


def _rounded(value: Any) -> Any:
    if not isinstance(value, float):
        return value
    rounded = round(value, 4)
    if len(_ROUNDED) < 20_000:
        return _ROUNDED.setdefault(rounded, rounded)
    return _ROUNDED.get(rounded, rounded)


def _series(
    stages: Sequence[Mapping[str, Any]],
    bucket: str,
    budget: int,
    event_slot: dict[str, int],
    event_rows: list[list[str]],
    events: Mapping[str, ChangeEvent],
    quiet: list[list[int]],
) -> dict[str, list[Any]]:
    """One chart's points: one per instant, downsampled to ``budget``; ``quiet``: the spans
    with no event, marked on the chart."""
    metrics = [s["metrics"][bucket] for s in stages]
    columns = {name: [m[name] for m in metrics] for name in METRICS}
    keep = keep_positions(list(columns.values()), len(stages), budget)
    times = [int(parse_timestamp(stages[p]["timestamp"]).timestamp()) for p in keep]
    # Stages at one instant (a sweep, a commit touching several facts) are one point: the
    # state after all of them, its first stage kept to name them (the line would otherwise
    # stop at the first, short of the final value the table gives).
    groups: list[list[int]] = []
    for i, at in enumerate(times):
        if groups and times[groups[-1][-1]] == at:
            groups[-1].append(i)
        else:
            groups.append([i])
    last = [keep[g[-1]] for g in groups]
    slots = []
    for position in last:
        stage = stages[position]
        event_id = stage["event_id"]
        if event_id not in event_slot:
            event_slot[event_id] = len(event_rows)
            known = events.get(event_id)
            event_rows.append(
                event_summary(known) if known else [event_id, "", "", "", stage["timestamp"]]
            )
        slots.append(event_slot[event_id])
    out: dict[str, list[Any]] = {
        "x": [stages[p]["index"] for p in last],
        "x0": [stages[keep[g[0]]]["index"] for g in groups],
        "t": [times[g[-1]] for g in groups],
        "e": slots,
        "quiet": quiet,
    }
    for name, column in columns.items():
        out[name] = [_rounded(column[p]) for p in last]
    return out


def quiet_spans(stages: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """The spans with no event among ``stages`` (every one of a target's stages)."""
    spans = QuietSpans()
    for stage in stages:
        spans.add(int(parse_timestamp(stage["timestamp"]).timestamp()))
    return spans.spans()


def final_table(report: Mapping[str, Any], baselines: Collection[str] = ()) -> list[dict[str, Any]]:
    """Rows of (domain, metric) with every target's final value side by side; where the
    real targets disagree, their best and worst values are marked. A baseline's cells (by
    target name in ``baselines``) are marked ``baseline``, never best or worst: failing is
    what it is there for."""
    targets = report["targets"]
    judged = [t["name"] not in baselines for t in targets]
    rows = []
    for bucket in BUCKETS:
        for name in METRICS:
            values = [t["final"]["metrics"][bucket][name] for t in targets]
            compared = [v for v, j in zip(values, judged, strict=True) if j]
            present = [v for v in compared if v is not None]
            differs = len(set(compared)) > 1
            best = worst = None
            if differs and present:
                best = max(present) if _HIGHER_IS_BETTER[name] else min(present)
                worst = min(present) if _HIGHER_IS_BETTER[name] else max(present)
            cells = []
            for value, judge_it in zip(values, judged, strict=True):
                mark = "" if judge_it else "baseline"
                if differs and judge_it:
                    mark = "best" if value == best else "worst" if value == worst else "differs"
                cells.append({"value": value, "mark": mark})
            rows.append({"domain": bucket, "metric": name, "differs": differs, "cells": cells})
    return rows


def _grouped_facts(
    probe: Mapping[str, Any], masks: Mapping[int, int]
) -> tuple[list[list[Any]], int]:
    """What a probe returned, one entry per distinct (key, value, status, flags, failure
    kinds, text) with how many records it stands for and their newest and oldest validation,
    and the text an invented value was read from (else ""); entries that make it fail first,
    at most :data:`FACTS_SHOWN`; and how many were left out."""
    own_key = f"{probe['subject']} · {probe['predicate']}"
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for i, f in enumerate(probe["retrieved"]):
        key = f"{f['subject']} · {f['predicate']}"
        text = f.get("text", "")
        group_key = (key, f["value"], f["status"], tuple(f["flags"]), masks.get(i, 0), text)
        group = groups.get(group_key)
        if group is None:
            groups[group_key] = [
                f["value"],
                f["status"],
                f["validated_at"],
                f["validated_at"],
                1,
                list(f["flags"]),
                "" if key == own_key else key,
                masks.get(i, 0),
                text,
            ]
        else:
            at = parse_timestamp(f["validated_at"])
            if at > parse_timestamp(group[2]):
                group[2] = f["validated_at"]
            if at < parse_timestamp(group[3]):
                group[3] = f["validated_at"]
            group[4] += 1
    ordered = sorted(groups.values(), key=lambda g: (g[7] == 0, g[6], g[0], g[1]))
    return ordered[:FACTS_SHOWN], max(0, len(ordered) - FACTS_SHOWN)


def _served(probe: Mapping[str, Any]) -> list[list[Any]]:
    """The probe's served items and how each was read: [text, asserted, negated, unread,
    mismatch, invented values, about another subject], at most :data:`FACTS_SHOWN` (those
    with an invented value first, then the unread; those about another subject, scored as
    no fact, after all the others)."""
    served = probe.get("served", ())
    ordered = sorted(
        served,
        key=lambda s: (
            bool(s["read_as"].get("irrelevant")),
            not s["read_as"].get("other"),
            not s["read_as"]["unread"],
        ),
    )
    return [
        [
            s["text"],
            s["read_as"]["asserted"],
            s["read_as"]["negated"],
            s["read_as"]["unread"],
            s["read_as"]["mismatch"],
            list(s["read_as"].get("other", ())),
            bool(s["read_as"].get("irrelevant")),
        ]
        for s in ordered[:FACTS_SHOWN]
    ]


def drill_down(found: Sequence[Failure], targets: Sequence[str]) -> dict[str, list[Any]]:
    """Each failing probe once (with what it returned), and one row for it listing every
    way it fails: ``[probe slot, [[kind index, layer], ...]]``."""
    slots: dict[tuple[str, str], int] = {}
    masks: dict[tuple[str, str], dict[int, int]] = {}
    for failure in found:
        where = (failure.target, failure.probe["id"])
        mask = masks.setdefault(where, {})
        bit = 1 << KINDS.index(failure.kind)
        for i in failure.offending:
            mask[i] = mask.get(i, 0) | bit
    probes: list[list[Any]] = []
    rows: list[list[Any]] = []
    for failure in found:
        probe = failure.probe
        where = (failure.target, probe["id"])
        if where not in slots:
            slots[where] = len(probes)
            facts, hidden = _grouped_facts(probe, masks[where])
            probes.append(
                [
                    targets.index(failure.target),
                    probe["domain"],
                    probe["id"],
                    probe["question"],
                    f"{probe['subject']} · {probe['predicate']}",
                    list(probe["expected"]),
                    facts,
                    hidden,
                    _served(probe),
                ]
            )
            rows.append([slots[where], []])
        rows[slots[where]][1].append([KINDS.index(failure.kind), failure.layer or ""])
    return {"probes": probes, "failures": rows}


def failures(
    report: Mapping[str, Any],
    windows: Mapping[str, timedelta],
    multi_valued: Collection[tuple[str, str]] = (),
    target_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Failure]:
    """Every failing probe of every target. A target's switches come from
    ``target_options`` when given, else from its name written as ``kind:switch=value``."""
    out: list[Failure] = []
    for target in report["targets"]:
        if not target["stages"]:
            continue
        at = parse_timestamp(target["stages"][-1]["timestamp"])
        for probe in target["final"]["probes"]:
            out.extend(probe_failures(target["name"], probe, at, windows, multi_valued))
    switched = {
        t["name"]: off_switches(
            t["kind"],
            target_options[t["name"]]
            if target_options is not None and t["name"] in target_options
            else label_options(t["name"]),
        )
        for t in report["targets"]
    }
    return attribute_layers(out, switched)


_ON = frozenset({"on", "true", "yes", "1"})


def report_role(target: Mapping[str, Any], options: Mapping[str, Any] | None) -> str:
    """A report target's role: as the report says, else from a ``baseline`` switch in its
    options (or its ``kind:switch=value`` name), else by its kind."""
    role = target.get("role")
    if isinstance(role, str):
        return role
    if options is None:
        options = label_options(target["name"])
    raw = options.get("baseline")
    return target_role(target["kind"], None if raw is None else str(raw).strip().lower() in _ON)


#: The runbook address of a page that carries the runbook: its alerts' links are the
#: headings' anchors in the page (``#healthdfreshnesslow``).
IN_PAGE = "#"


def page_model(
    report: Mapping[str, Any],
    *,
    events: Sequence[ChangeEvent] = (),
    multi_valued: Collection[tuple[str, str]] | None = None,
    target_options: Mapping[str, Mapping[str, Any]] | None = None,
    windows: Mapping[str, timedelta] = DEFAULT_WINDOWS,
    title: str = "healthd report",
    verdicts: Sequence[Verdict] | None = None,
    runbook_url: str | None = None,
) -> dict[str, Any]:
    """Everything the page draws. ``events`` (the replayed timeline) names each stage's event
    on hover and, unless ``multi_valued`` is given, says which keys hold several values;
    without it, stages show their id. ``verdicts`` (the daemon's, with its runs) replace
    the verdict judged from each target's final numbers, whose runbook links go to
    ``runbook_url`` when given, else to the runbook the page then carries
    (``runbook_in_page``: a report file opened anywhere, offline, has it)."""
    by_id = {event.id: event for event in events}
    if multi_valued is None:
        multi_valued = {event.fact.key for event in events if event.multi_valued}
    budget = chart_budget(len(report["targets"]))
    event_slot: dict[str, int] = {}
    event_rows: list[list[str]] = []
    targets = []
    roles = {
        t["name"]: report_role(t, (target_options or {}).get(t["name"])) for t in report["targets"]
    }
    for target in report["targets"]:
        stages = target["stages"]
        # stages downsampled as they streamed (exporters.report.StageSampler): the same
        # positions this would keep of the whole list, each domain's own
        sampled = target.get("series_stages")
        # known from every stage even when only some are kept (sampled, or the daemon's log)
        quiet = target["quiet"] if "quiet" in target else quiet_spans(stages)
        targets.append(
            {
                "name": target["name"],
                "kind": target["kind"],
                "role": roles[target["name"]],
                "stages": target.get("stage_count", len(stages)),
                "at": stages[-1]["timestamp"] if stages else None,
                "series": {
                    bucket: _series(
                        sampled[bucket] if sampled else stages,
                        bucket,
                        budget,
                        event_slot,
                        event_rows,
                        by_id,
                        quiet,
                    )
                    for bucket in BUCKETS
                },
            }
        )
    found = failures(report, windows, multi_valued, target_options)
    llm = [
        {"target": t["name"], "text": text}
        for t in report["targets"]
        if (text := summary_text(t.get("llm"))) is not None
    ]
    runbook_in_page = verdicts is None and not runbook_url
    if verdicts is None:
        book = alert_book(runbook_url or IN_PAGE)
        verdicts = [
            judge(
                t["name"],
                roles[t["name"]],
                t["final"]["metrics"]["all"] if t["stages"] else None,
                book=book,
                bounds=replay_bounds(t["repeats"]["final"]).get("all")
                if t.get("repeats")
                else None,
            )
            for t in report["targets"]
        ]
    return {
        "verdict": [v.as_dict() for v in verdicts],
        "runbook_in_page": runbook_in_page,
        "title": title,
        "probe_set": dict(report["probe_set"]),
        "buckets": list(BUCKETS),
        "ratios": list(RATIOS),
        "kinds": list(KINDS),
        "events": event_rows,
        "named_events": bool(by_id),
        "windows": {d: int(w.total_seconds()) for d, w in windows.items()},
        "targets": targets,
        "final": final_table(report, {n for n, r in roles.items() if r == BASELINE}),
        "last_change": last_change_table(report),
        **({"llm": llm} if llm else {}),  # the LLM and embedding calls, where any were made
        **drill_down(found, [t["name"] for t in report["targets"]]),
    }


def last_change_table(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per target whose history ends with revalidation sweeps (``last_change`` in the JSON
    report): the ``all`` metrics at its newest real change beside those after the sweeps."""
    rows = []
    for target in report["targets"]:
        change = target.get("last_change")
        if not change:
            continue
        rows.append(
            {
                "target": target["name"],
                "index": change["index"],
                "event_id": change["event_id"],
                "timestamp": change["timestamp"],
                "last_change": dict(change["metrics"]["all"]),
                "after_sweep": dict(target["final"]["metrics"]["all"]),
            }
        )
    return rows
