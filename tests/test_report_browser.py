"""The HTML report opened in headless chromium, as a reader opens it: offline, from a file."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import urlencode

import pytest
from browser_helpers import open_page

TARGETS = ("reference", "naive", "reference:supersession=off")


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--html", str(out)]
        + [a for t in TARGETS for a in ("--target", t)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_report_renders_its_charts_offline_with_no_errors(browser, report_file, tmp_path):
    visit = open_page(browser, report_file.as_uri())
    page = visit.page
    assert page.locator(".chart canvas").count() == len(TARGETS)
    points = page.evaluate("window.healthdCharts.map(c => [c.data.length, c.data[0].length])")
    # x + 5 ratios + conflicts; the 135 stages are at 31 instants, one point each, and the
    # final state is held a little past the last
    assert points == [[7, 32]] * len(TARGETS)
    drawn = page.evaluate(
        "window.healthdCharts.map(c => { const d = c.ctx.getImageData(0, 0, c.ctx.canvas.width,"
        " c.ctx.canvas.height).data; let n = 0; for (let i = 3; i < d.length; i += 4)"
        " if (d[i]) n++; return n; })"
    )
    assert all(n > 1000 for n in drawn), drawn  # pixels painted, not an empty canvas
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert visit.console_errors == []
    assert set(visit.requests) == {report_file.as_uri()}


def test_each_line_ends_on_the_final_tables_value(browser, report_file):
    """Where each line ends, just right of the last stage, it is drawn at the value the final
    table gives (the example ends with a sweep of 15 stages at one instant, after which the
    reference's freshness is 1.000, not the 0.5 of the sweep's first stage)."""
    page = open_page(browser, report_file.as_uri()).page
    final = {
        (row["target"], row["metric"]): row["value"]
        for row in page.evaluate(
            "(() => { const d = JSON.parse(document.getElementById('healthd-data').textContent);"
            " return d.final.filter(r => r.domain === 'all').flatMap(r => r.cells.map("
            "(c, i) => ({target: d.targets[i].name, metric: r.metric, value: c.value}))); })()"
        )
    }
    ends = page.evaluate(
        """() => window.healthdCharts.map((u, k) => {
          const n = u.data[0].length - 1, out = [];
          const x = Math.round((u.valToPos(u.data[0][n - 1], 'x', true)
                                + u.valToPos(u.data[0][n], 'x', true)) / 2);
          for (let s = 1; s < u.series.length - 1; s++) {
            const v = u.data[s][n];
            if (v === null) continue;
            const y = Math.round(u.valToPos(v, 'ratio', true));
            const px = u.ctx.getImageData(x, y - 2, 1, 5).data;
            const colours = [];
            for (let i = 0; i < px.length; i += 4) colours.push([px[i], px[i + 1], px[i + 2]]);
            out.push([u.series[s].label, v, colours, u.series[s].stroke()]);
          }
          return out;
        })"""
    )
    names = [TARGETS[i] for i in range(len(ends))]
    checked = 0
    for target, lines in zip(names, ends, strict=True):
        values = [v for _, v, _, _ in lines]
        for metric, value, colours, stroke in lines:
            table = final[(target, metric)]
            assert table is not None and abs(value - table) < 5e-4, (target, metric, value, table)
            if values.count(value) > 1:
                continue  # another line ends on it too and may be drawn over it
            wanted = [int(stroke[i : i + 2], 16) for i in (1, 3, 5)]
            near = [
                c for c in colours if all(abs(a - b) <= 12 for a, b in zip(c, wanted, strict=True))
            ]
            assert near, (target, metric, value, colours)  # antialiased: within a few levels
            checked += 1
    assert checked >= 5


def test_hovering_a_point_names_the_stage_event(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    page.locator(".chart[data-target='1'] .u-over").scroll_into_view_if_needed()
    over = page.locator(".chart[data-target='1'] .u-over").bounding_box()
    page.mouse.move(over["x"] + over["width"] - 2, over["y"] + over["height"] / 2)
    hover = page.locator(".hover[data-target='1']").text_content()
    # the last 15 stages are one revalidation sweep at one instant: one point on a time axis
    assert hover.startswith("stages 121–135 (15 at this time) · last ex-135 · "), hover
    page.mouse.move(over["x"] + 1, over["y"] + over["height"] / 2)
    assert (
        page.locator(".hover[data-target='1']")
        .text_content()
        .startswith("stages 1–6 (6 at this time) · last ex-006 · added · payments-v1")
    )


def test_domain_select_redraws_every_chart_for_that_domain(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    before = page.evaluate("window.healthdCharts[1].data[5]")  # naive contamination, all
    page.select_option("#domain", "decision")
    after = page.evaluate("window.healthdCharts[1].data[5]")
    assert before != after and after[-1] == 1.0  # naive decision contamination at the end


def _rows(page):
    return page.locator("#failures-body tr").evaluate_all(
        "rows => rows.map(r => [r.dataset.target, r.dataset.kind, r.dataset.domain,"
        " r.cells[3].innerText.split('\\n')[0]])"
    )


def test_drill_down_lists_naive_decision_contamination_and_filters(browser, report_file, tmp_path):
    page = open_page(browser, report_file.as_uri()).page
    page.select_option("#f-target", "naive")
    page.select_option("#f-kind", "contaminated")
    page.select_option("#f-domain", "decision")
    rows = _rows(page)
    assert sorted(r[3] for r in rows) == [
        "What is the source of truth for payments?",
        "What was decided about broker for messaging?",
    ]
    assert all(r[0] == "naive" and r[2] == "decision" for r in rows)
    assert all("contaminated" in r[1].split() for r in rows)
    broker = page.locator("#failures-body tr", has_text="broker")
    assert set(broker.locator("li.offending .value").all_inner_texts()) == {"sqs"}
    assert page.locator("#failures-count").inner_text().startswith("2 of ")
    page.locator("#failures").screenshot(path=str(tmp_path / "drill-down.png"))

    page.select_option("#f-target", "reference:supersession=off")
    page.select_option("#f-kind", "")
    page.select_option("#f-domain", "")
    page.select_option("#f-layer", "supersession")
    layered = _rows(page)
    assert layered and all(r[0] == "reference:supersession=off" for r in layered)


def test_drill_down_sorts_by_a_clicked_column(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    page.locator("#failures th[data-sort='domain']").click()
    domains = [r[2] for r in _rows(page)]
    assert domains == sorted(domains)
    page.locator("#failures th[data-sort='domain']").click()
    assert [r[2] for r in _rows(page)] == sorted(domains, reverse=True)


def test_the_view_is_kept_in_the_address_so_a_reload_or_a_link_opens_it_again(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    page.select_option("#domain", "decision")
    page.select_option("#f-target", "naive")
    page.select_option("#f-kind", "contaminated")
    page.locator("#failures th[data-sort='question']").click()
    page.locator("#failures th[data-sort='question']").click()  # descending
    rows = _rows(page)
    assert [r[3] for r in rows] == sorted((r[3] for r in rows), reverse=True) and len(rows) > 2
    chart = page.evaluate("window.healthdCharts[1].data[5]")
    address = page.url
    assert (
        address.partition("#")[2] == "chart=decision&target=naive&kind=contaminated&sort=-question"
    )

    page.reload()
    page.wait_for_selector("body[data-ready=yes]")
    assert _rows(page) == rows
    assert page.evaluate("window.healthdCharts[1].data[5]") == chart
    assert [page.input_value(f"#{i}") for i in ("domain", "f-target", "f-kind", "f-domain")] == [
        "decision",
        "naive",
        "contaminated",
        "",
    ]
    shared = open_page(browser, address).page  # the same address opened by someone else
    assert _rows(shared) == rows

    page.select_option("#f-target", "")
    page.select_option("#f-kind", "")
    page.select_option("#domain", "all")
    page.locator("#failures th[data-sort='target']").click()  # back to the default sort
    assert page.url == report_file.as_uri()  # the default view has no fragment

    page.evaluate("location.hash = 'target=naive&kind=contaminated&chart=decision&sort=-question'")
    page.wait_for_function("document.getElementById('f-target').value === 'naive'")
    assert _rows(page) == rows  # a view's address entered in the open page shows that view
    page.go_back()  # and the browser's back button the one before
    page.wait_for_function("document.getElementById('f-target').value === ''")
    assert page.input_value("#domain") == "all"


def test_an_address_naming_a_place_on_the_page_still_goes_there(browser, report_file):
    page = open_page(browser, f"{report_file.as_uri()}#failures").page
    assert page.url.endswith("#failures")  # not taken for an empty view and dropped
    assert page.evaluate("window.scrollY") > 0


def test_an_address_naming_what_the_page_does_not_offer_opens_the_default_view(
    browser, report_file
):
    default = _rows(open_page(browser, report_file.as_uri()).page)
    hostile = urlencode(
        {
            "target": "<img src=x onerror=alert(1)>",
            "kind": "nope",
            "chart": "everything",
            "layer": "constructor",
            "sort": "-__proto__",
            "page": "-3",
            "baselines": "yes",
        }
    )
    visit = open_page(browser, f"{report_file.as_uri()}#{hostile}")
    page = visit.page
    assert _rows(page) == default
    assert [page.input_value(f"#{i}") for i in ("domain", "f-target", "f-kind", "f-layer")] == [
        "all",
        "",
        "",
        "",
    ]
    assert visit.console_errors == []
    # a page past the last is the last, and a long text is cut to what the box keeps
    long_text = open_page(browser, f"{report_file.as_uri()}#page=999&text={'x' * 5000}").page
    assert long_text.locator("#failures-page").inner_text() == "page 1 of 1"
    assert len(long_text.input_value("#f-text")) == 200
    assert long_text.locator("#failures-body tr").count() == 0


def test_final_table_marks_where_targets_disagree(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    row = page.locator("#final-table tr", has=page.locator("td:text-is('contamination')")).filter(
        has_text="decision"
    )
    cells = row.locator("td.num")
    assert cells.all_inner_texts() == ["0.000", "1.000", "1.000"]
    assert cells.nth(0).get_attribute("class").split() == ["num", "best"]
    assert cells.nth(2).get_attribute("class").split() == ["num", "worst"]
    # the naive baseline is shown, never judged: its cell is no alarm
    assert cells.nth(1).get_attribute("class").split() == ["num", "baseline"]


def _top(page, selector):
    return page.locator(selector).first.bounding_box()["y"]


def test_the_verdict_comes_first_with_runbook_links_and_the_baseline_apart(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    assert _top(page, "#verdict") < _top(page, ".chart") < _top(page, "#failures")
    assert _top(page, "#verdict") < 200  # at the top, not below the results
    summary = page.locator(".verdict-summary").inner_text()
    assert summary.startswith("1 of 2 targets crosses an alert threshold now: ")
    assert (
        "reference:supersession=off" in summary
        and "Beside them: 1 baseline, meant to fail." in summary
    )
    crossed = page.locator("#verdict-table tr[data-target='reference:supersession=off']")
    links = crossed.locator("a")
    assert links.all_inner_texts() == ["HealthdConsistencyLow", "HealthdContaminationRising"]
    assert "consistency 0.789 < 0.9" in crossed.inner_text()
    # a report file opened anywhere carries the runbook its links go to
    assert links.first.get_attribute("href") == "#healthdconsistencylow"
    links.first.click()
    heading = page.locator("#runbook #healthdconsistencylow")
    assert heading.inner_text() == "HealthdConsistencyLow"
    assert page.evaluate("location.hash") == "#healthdconsistencylow"
    assert heading.bounding_box()["y"] < 100  # scrolled to it
    page.evaluate("window.scrollTo(0, 0)")
    ok = page.locator("#verdict-table tr[data-target='reference']").inner_text()
    assert "within every alert threshold" in ok
    naive = page.locator("#verdict-table tr[data-target='naive']")
    assert naive.get_attribute("class") == "verdict-baseline"
    assert "baseline" in naive.inner_text() and "meant to fail" in naive.inner_text()
    # the baseline is listed after the real targets, its crossings shown but not as alarms
    order = page.locator("#verdict-table tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.target)"
    )
    assert order[-1] == "naive"


def test_drill_down_one_row_per_probe_few_entries_and_pages(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    # a baseline's failures are hidden until asked for, and counted
    assert not any(r[0] == "naive" for r in _rows(page))
    assert "of baselines (meant to fail) not shown" in page.locator("#failures-count").inner_text()
    page.check("#f-baselines")
    rows = _rows(page)
    keys = [(r[0], page_probe) for r, page_probe in zip(rows, _probe_ids(page), strict=True)]
    assert len(keys) == len(set(keys))  # each failing probe once, its failure kinds together
    assert any(len(r[1].split()) == 3 for r in rows)  # naive: stale, contaminated, conflicting
    counts = page.locator("#failures-body tr").evaluate_all(
        "rows => rows.map(r => r.cells[4].querySelectorAll('li:not(.none)').length)"
    )
    assert max(counts) <= 3
    assert page.locator("#failures-page").inner_text() == "page 1 of 1"
    # opening a row shows the rest of what it returned
    more = page.locator("#failures-body button.more").first
    if more.count():
        row = more.locator("xpath=ancestor::tr")
        probe = row.get_attribute("data-probe")
        more.click()
        opened = page.locator(f"#failures-body tr[data-probe='{probe}']").first
        assert opened.locator("li:not(.none)").count() > 3


def _probe_ids(page):
    return page.locator("#failures-body tr").evaluate_all("rows => rows.map(r => r.dataset.probe)")


def test_drill_down_paginates_a_long_list(browser, tmp_path):
    """Probes enough for several pages: 50 rows a page, previous and next."""
    lines = []
    for i in range(130):  # each key revised: naive keeps both values (contaminated)
        for n, value in enumerate(("a", "b")):
            event = {
                "id": f"e{i}-{n}", "type": "added" if n == 0 else "revised",
                "timestamp": f"2026-01-{1 + n:02d}T00:{i // 60:02d}:{i % 60:02d}Z",
                "source": "file", "depends_on": [], "metadata": {},
                "fact": {"subject": f"svc{i}", "predicate": "language", "value": value,
                         "domain": "tech"},
            }  # fmt: skip
            if n:
                event["previous"] = dict(event["fact"], value="a")
            lines.append(event)
    lines.sort(key=lambda e: e["timestamp"])
    timeline = tmp_path / "t.jsonl"
    import json

    timeline.write_text("".join(json.dumps(e) + "\n" for e in lines))
    out = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--timeline", str(timeline), "--html",
         str(out), "--target", "naive:baseline=off"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = open_page(browser, out.as_uri()).page
    assert page.locator("#failures-body tr").count() == 50
    assert page.locator("#failures-page").inner_text() == "page 1 of 3"
    first = _probe_ids(page)
    page.click("#failures-next")
    assert page.locator("#failures-page").inner_text() == "page 2 of 3"
    assert not set(first) & set(_probe_ids(page))
    page.click("#failures-next")
    assert page.locator("#failures-body tr").count() == 30
    assert page.locator("#failures-next").is_disabled()
    page.click("#failures-prev")
    assert page.locator("#failures-page").inner_text() == "page 2 of 3"
    second = _probe_ids(page)
    page.reload()  # the page is kept in the address
    page.wait_for_selector("body[data-ready=yes]")
    assert page.locator("#failures-page").inner_text() == "page 2 of 3"
    assert _probe_ids(page) == second
    # naive switched to a subject: its crossings are alarms now, not a baseline's
    assert (
        "1 of 1 target crosses an alert threshold now"
        in page.locator(".verdict-summary").inner_text()
    )


def test_charts_put_each_stage_at_its_event_time(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    xs = page.evaluate("window.healthdCharts[0].data[0]")
    data = page.evaluate("JSON.parse(document.getElementById('healthd-data').textContent)")
    # seconds, not stage numbers; then the final state held a little past the last stage
    assert xs[:-1] == data["targets"][0]["series"]["all"]["t"] and xs[-1] > xs[-2]
    # spacing is time: pixel gaps are proportional to the time between stages
    pos = page.evaluate(
        "(() => { const u = window.healthdCharts[0];"
        " return u.data[0].map(t => u.valToPos(t, 'x')); })()"
    )
    span_t, span_px = xs[-1] - xs[0], pos[-1] - pos[0]
    for i in range(1, len(xs)):
        expected = (xs[i] - xs[0]) / span_t * span_px
        assert abs((pos[i] - pos[0]) - expected) < 1.0


def test_baselines_failures_stay_hidden_until_asked_for_when_no_real_target_fails(
    browser, tmp_path
):
    """With only a baseline failing (here the only target), its failures are still left out
    until the box is ticked, as the docs say: the count says what is not shown."""
    out = tmp_path / "naive.html"
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--html", str(out), "--target", "naive"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    page = open_page(browser, out.as_uri()).page
    assert not page.is_checked("#f-baselines")
    assert _rows(page) == []
    assert "of baselines (meant to fail) not shown" in page.locator("#failures-count").inner_text()
    page.check("#f-baselines")
    assert _rows(page) and all(r[0] == "naive" for r in _rows(page))
