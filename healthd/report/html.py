"""HTML for the page model: one self-contained file, or the daemon's page with linked assets.

Everything a reader sees is escaped; the page model travels as JSON inside a
``<script type="application/json">`` element with every ``<`` escaped, so no value in a report
can end the script or inject markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from healthd.report.assets import static_text
from healthd.report.runbook import runbook_section

_EVENT_TYPES = (
    ("added", "#2a9d3a"),
    ("revised", "#1f6fd1"),
    ("invalidated", "#d62728"),
    ("revalidated", "#9a9a9a"),
)


def _number(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


_SUBJECT_STATUS = {
    "ok": "within every alert threshold",
    "unmeasured": "nothing measured yet",
}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _crossing(c: Mapping[str, Any]) -> str:
    return (
        f"<li class='crossing severity-{escape(c['severity'])}'>"
        f"<a href='{escape(c['runbook'])}'>{escape(c['alert'])}</a> "
        f"<span class='what'>{escape(c['what'])}</span> "
        f"<span class='meta'>({escape(c['severity'])}; fires after {escape(c['after'])})</span>"
        "</li>"
    )


def _verdict(model: Mapping[str, Any]) -> str:
    """Per target, the alert thresholds it crosses now, with the runbook entry of each;
    baselines apart, as what they are."""
    rows = []
    subjects = [v for v in model["verdict"] if v["status"] != "baseline"]
    crossed = [v for v in subjects if v["status"] == "crossed"]
    baselines = len(model["verdict"]) - len(subjects)
    for v in sorted(model["verdict"], key=lambda v: v["status"] == "baseline"):
        crossings = "".join(_crossing(c) for c in v["crossings"])
        if v["status"] == "baseline":
            head = (
                "<span class='badge baseline'>baseline</span> meant to fail, shown for "
                "comparison; no alert selects it"
                + ("; it crosses, as expected:" if crossings else "")
            )
        elif v["status"] == "crossed":
            head = "<span class='badge crossed'>crosses alert thresholds</span>"
        else:
            head = f"<span class='badge {v['status']}'>{_SUBJECT_STATUS[v['status']]}</span>"
        rows.append(
            f"<tr class='verdict-{v['status']}' data-target='{escape(v['target'])}'>"
            f"<td>{escape(v['target'])}</td><td>{head}"
            + (f"<ul>{crossings}</ul>" if crossings else "")
            + "</td></tr>"
        )
    unmeasured = [v for v in subjects if v["status"] == "unmeasured"]
    if crossed:
        summary = (
            f"{len(crossed)} of {_count(len(subjects), 'target')} "
            f"{'crosses' if len(crossed) == 1 else 'cross'} an alert threshold now: "
            + ", ".join(escape(v["target"]) for v in crossed)
            + "."
        )
    elif unmeasured and len(unmeasured) == len(subjects):
        summary = (
            "Nothing measured yet: "
            + (
                "the target has no"
                if len(subjects) == 1
                else f"none of the {len(subjects)} targets has"
            )
            + " results to judge."
        )
    elif unmeasured:
        ok = len(subjects) - len(unmeasured)
        summary = (
            f"{ok} of {_count(len(subjects), 'target')} {'is' if ok == 1 else 'are'} "
            "within every alert threshold."
        )
    elif subjects:
        summary = (
            f"{'The' if len(subjects) == 1 else 'All'} {_count(len(subjects), 'target')} "
            f"{'is' if len(subjects) == 1 else 'are'} within every alert threshold."
        )
    else:
        summary = "Only baselines here: nothing is watched."
    if unmeasured and len(unmeasured) < len(subjects):
        summary += " Not measured yet: " + ", ".join(escape(v["target"]) for v in unmeasured) + "."
    if baselines:
        summary += f" Beside {'it' if len(subjects) == 1 else 'them'}: " + _count(
            baselines, "baseline"
        )
        summary += ", meant to fail."
    extra = "".join(_crossing(c) for c in model.get("verdict_sources", ()))
    tone = "bad" if crossed or extra else "unmeasured" if unmeasured else "good"
    return (
        f"<section id='verdict'><h2>Verdict</h2>"
        f"<p class='verdict-summary {tone}'>{summary}</p>"
        + (f"<ul class='sources-crossed'>{extra}</ul>" if extra else "")
        + "<table id='verdict-table'><thead><tr><th>target</th><th>alert thresholds crossed "
        "now</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table><p class='meta'>The thresholds of the shipped alerts "
        "(alerts/thresholds.yml); an alert fires once a crossing lasts its <code>for</code>. "
        "Drops and rises against hours or a day before are judged by Prometheus only.</p>"
        "</section>"
    )


def _final_table(model: Mapping[str, Any]) -> str:
    head = "".join(
        f"<th>{escape(t['name'])}"
        + (" <span class='badge baseline'>baseline</span>" if t["role"] == "baseline" else "")
        + "</th>"
        for t in model["targets"]
    )
    rows = []
    for row in model["final"]:
        cells = "".join(
            f"<td class='num {c['mark']}'>{_number(c['value'])}</td>" for c in row["cells"]
        )
        rows.append(
            f"<tr class='{'differs' if row['differs'] else 'same'}'>"
            f"<td>{escape(row['domain'])}</td><td>{escape(row['metric'])}</td>{cells}</tr>"
        )
    return (
        "<table class='final' id='final-table'><thead><tr><th>domain</th><th>metric</th>"
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _llm(model: Mapping[str, Any]) -> str:
    """A line per target whose replay caused LLM or embedding calls (or could not count
    them): the calls by purpose and the tokens the endpoint reported."""
    rows = model.get("llm")
    if not rows:
        return ""
    scope = escape(model.get("llm_scope", "in this replay"))
    lines = "".join(
        f"<li><b>{escape(row['target'])}</b>: {escape(row['text'])}</li>" for row in rows
    )
    return f"<p class='meta'>LLM and embedding calls healthd caused, {scope}:</p><ul id='llm-calls'>{lines}</ul>"


def _charts(model: Mapping[str, Any]) -> str:
    options = "".join(f"<option value='{escape(b)}'>{escape(b)}</option>" for b in model["buckets"])
    legend = "".join(
        f"<span><i style='background:{color}'></i>{name}</span>" for name, color in _EVENT_TYPES
    )
    parts = [
        f"<p class='filters'><label>domain <select id='domain'>{options}</select></label>"
        f"<span class='legend-events'>change events: {legend}</span></p>"
    ]
    for i, target in enumerate(model["targets"]):
        badge = (
            " <span class='badge baseline'>baseline: meant to fail</span>"
            if target["role"] == "baseline"
            else ""
        )
        parts.append(
            f"<h3>{escape(target['name'])}{badge} <span class='meta'>({escape(target['kind'])}, "
            f"{target['stages']} stages"
            + (f", final stage {escape(target['at'])}" if target["at"] else "")
            + f")</span></h3><div class='chart' data-target='{i}'></div>"
            f"<div class='hover' data-target='{i}'></div>"
        )
    return "".join(parts)


def _drill_down(model: Mapping[str, Any]) -> str:
    windows = ", ".join(f"{escape(d)} {s // 86400:g} d" for d, s in model["windows"].items())
    selects = "".join(
        f"<label>{label} <select id='f-{name}'><option value=''>all</option></select></label>"
        for name, label in (
            ("target", "target"),
            ("kind", "failure"),
            ("domain", "domain"),
            ("layer", "layer"),
        )
    )
    head = "".join(
        f"<th data-sort='{c}'>{c}</th>"
        for c in ("target", "failures", "domain", "question", "returned", "true")
    )
    return (
        "<p class='meta'>stale: returned a fact last validated longer ago than its domain's "
        f"window ({windows}); contaminated: returned a superseded or invalidated fact; missed: "
        "a true fact was not returned; conflicting: two values for a one-value key; invented: a "
        "value its key never held (read from the served text shown beside it). Served items "
        "about another subject are listed apart, after those read for the key: retrieved, "
        "never scored as a fact. Layer: for "
        "a <code>reference</code> target with a forgetting mechanism switched off, a failure "
        "plain <code>reference</code> does not have in the same run.</p>"
        f"<div class='filters'>{selects}<label>text <input id='f-text' type='search'></label>"
        "<label><input id='f-baselines' type='checkbox'> baselines' failures</label>"
        "</div><p id='failures-count' class='meta'></p>"
        f"<table id='failures'><thead><tr>{head}</tr></thead><tbody id='failures-body'>"
        "</tbody></table><p class='pager'><button id='failures-prev' type='button'>previous"
        "</button> <span id='failures-page'></span> <button id='failures-next' type='button'>"
        "next</button></p>"
    )


def _json_pieces(value: Any, out: list[str]) -> None:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)``
    with ``<``, ``>`` and ``&`` escaped, appended to ``out`` a part at a time: an object or
    array holding other objects or arrays is written member by member, one holding only
    numbers, strings and nulls (a chart's column, a drill-down row) in one call. Encoding
    the whole model in one call held every piece of its text at once, several times the
    page's size."""
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        if any(isinstance(v, Mapping | list | tuple) for v in value.values()):
            out.append("{")
            for n, key in enumerate(sorted(value)):
                out.append(f"{',' if n else ''}{_escaped(json.dumps(key, ensure_ascii=False))}:")
                _json_pieces(value[key], out)
            out.append("}")
            return
    elif isinstance(value, list | tuple) and any(
        isinstance(v, Mapping | list | tuple) for v in value
    ):
        out.append("[")
        for n, item in enumerate(value):
            if n:
                out.append(",")
            _json_pieces(item, out)
        out.append("]")
        return
    out.append(
        _escaped(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    )


def _escaped(text: str) -> str:
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def body_pieces(model: Mapping[str, Any], before: str = "", after: str = "") -> list[str]:
    """:func:`render_body` as the pieces of its text, the page's data a value at a time."""
    probe_set = model["probe_set"]
    out = [
        f"<h1>{escape(model['title'])}</h1>{_verdict(model)}{before}"
        f"<p class='meta'>probe set {escape(probe_set['version'])} ({probe_set['count']} "
        f"probes); {len(model['targets'])} target(s); — means nothing to measure.</p>"
        f"<h2>Over the stages</h2>{_charts(model)}"
        f"<h2>Final stage, side by side</h2>{_final_table(model)}{_llm(model)}"
        f"<h2 id='drill-down'>Failing probes at the final stage</h2>{_drill_down(model)}"
        f"{after}<script id='healthd-data' type='application/json'>"
    ]
    _json_pieces(model, out)
    out.append("</script>")
    return out


def render_body(model: Mapping[str, Any], before: str = "", after: str = "") -> str:
    """The page's sections: the verdict first, then ``before`` (escaped HTML: the daemon's
    runs and sources), the results, and ``after``."""
    return "".join(body_pieces(model, before, after))


def document_pieces(model: Mapping[str, Any]) -> list[str]:
    """:func:`render_document` as the pieces of its text, to be written one after another
    (joined, the text of a long report's page is held several times over)."""
    return [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<link rel='icon' href='data:,'><title>{escape(model['title'])}</title>"
        f"<style>{static_text('uPlot.min.css')}\n{static_text('page.css')}</style></head>"
        "<body>",
        *body_pieces(model, after=runbook_section() if model.get("runbook_in_page") else ""),
        f"<script>{static_text('uPlot.iife.min.js')}</script>"
        f"<script>{static_text('page.js')}</script></body></html>\n",
    ]


def render_document(model: Mapping[str, Any]) -> str:
    """One HTML file with the charting library, styles and data inline: opens offline."""
    return "".join(document_pieces(model))
