"""The HTML report opened in headless chromium, as a reader opens it: offline, from a file."""

from __future__ import annotations

import subprocess
import sys

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
    assert points == [[7, 135]] * len(TARGETS)  # x + 5 ratios + conflicts, every stage
    drawn = page.evaluate(
        "window.healthdCharts.map(c => { const d = c.ctx.getImageData(0, 0, c.ctx.canvas.width,"
        " c.ctx.canvas.height).data; let n = 0; for (let i = 3; i < d.length; i += 4)"
        " if (d[i]) n++; return n; })"
    )
    assert all(n > 1000 for n in drawn), drawn  # pixels painted, not an empty canvas
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert visit.console_errors == []
    assert set(visit.requests) == {report_file.as_uri()}


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


def test_final_table_marks_where_targets_disagree(browser, report_file):
    page = open_page(browser, report_file.as_uri()).page
    row = page.locator("#final-table tr", has=page.locator("td:text-is('contamination')")).filter(
        has_text="decision"
    )
    cells = row.locator("td.num")
    assert cells.all_inner_texts() == ["0.000", "1.000", "1.000"]
    assert cells.nth(0).get_attribute("class").split() == ["num", "best"]
    assert "worst" in cells.nth(1).get_attribute("class")
