"""The daemon's `/` in headless chromium: the report view of each target's last run, the run
history and the sources, all served by the daemon itself, refreshed after each run."""

from __future__ import annotations

from browser_helpers import open_page
from daemon_helpers import EXAMPLE
from healthd_test_plugin import FAKE_TOKEN

TARGETS = {
    "reference": {"kind": "reference", "shadow": True},
    "naive": {"kind": "naive", "shadow": True},
    "no-supersession": {"kind": "reference", "shadow": True, "supersession": False},
}


def test_live_page_shows_the_last_runs_served_by_the_daemon_alone(start_daemon, browser, tmp_path):
    daemon = start_daemon(cron="*/2 * * * * *", targets=TARGETS)
    daemon.wait_ready()
    visit = open_page(browser, daemon.url + "/")
    page = visit.page
    assert page.locator(".chart canvas").count() == 3
    lengths = page.evaluate("window.healthdCharts.map(c => c.data[0].length)")
    # the 135 stages at their 31 instants, one point each, and the final state held past them
    assert lengths == [32, 32, 32]
    page.select_option("#f-target", "naive")
    page.select_option("#f-kind", "contaminated")
    page.select_option("#f-domain", "decision")
    questions = page.locator("#failures-body tr td:nth-child(4) div:first-child").all_inner_texts()
    assert sorted(questions) == [
        "What is the source of truth for payments?",
        "What was decided about broker for messaging?",
    ]
    page.select_option("#f-target", "no-supersession")
    page.select_option("#f-kind", "")
    page.select_option("#f-domain", "")
    page.select_option("#f-layer", "supersession")
    assert page.locator("#failures-body tr").count() > 0  # the layer, from the config's switch
    runs = page.locator("#runs tbody tr")
    assert runs.count() >= 1 and "success" in runs.first.inner_text()
    assert page.locator("#sources tbody tr").first.inner_text().split("\t")[:3] == [
        "example",
        "up",
        "135",
    ]
    page.screenshot(path=str(tmp_path / "live.png"), full_page=True)

    # verdict first, then the runs and sources, then the results and the drill-down
    def top(selector):
        return page.locator(selector).first.bounding_box()["y"]

    assert top("#verdict") < top("#targets") < top("#runs") < top("#sources") < top(".chart")
    assert top("#sources") < top("#failures") and top("#verdict") < 200
    summary = page.locator(".verdict-summary").inner_text()
    assert summary.startswith("1 of 2 targets crosses an alert threshold now: no-supersession.")
    naive = page.locator("#verdict-table tr[data-target='naive']")
    assert (
        naive.get_attribute("class") == "verdict-baseline" and "meant to fail" in naive.inner_text()
    )
    assert "HealthdConsistencyLow" in naive.inner_text()  # crossed, and said to be expected
    assert (
        "within every alert threshold"
        in page.locator("#verdict-table tr[data-target='reference']").inner_text()
    )

    # the next run reloads the page by itself, on the view the reader had picked
    page.select_option("#f-target", "no-supersession")
    page.select_option("#f-layer", "supersession")

    def counted(selector, condition="> 0"):  # read on a page that is drawn, not reloading
        return page.wait_for_function(
            f"document.body.dataset.ready === 'yes'"
            f" && document.querySelectorAll('{selector}').length {condition}"
            f" && document.querySelectorAll('{selector}').length",
            timeout=15_000,
        ).json_value()

    layered = counted("#failures-body tr")
    before = counted("#runs tbody tr")
    counted("#runs tbody tr", f"> {before}")
    assert page.input_value("#f-target") == "no-supersession"
    assert page.input_value("#f-layer") == "supersession"
    assert counted("#failures-body tr") == layered
    assert visit.console_errors == []
    assert visit.requests and all(u.startswith(daemon.url + "/") for u in visit.requests)
    assert {u.removeprefix(daemon.url) for u in visit.requests} >= {
        "/",
        "/static/uPlot.iife.min.js",
        "/static/page.js",
        "/last-run",
    }
    assert daemon.stop()[0] == 0


def test_live_page_names_failures_but_never_a_secret(start_daemon, browser, tmp_path):
    daemon = start_daemon(
        sources={
            "example": {"kind": "file", "path": str(EXAMPLE)},
            "gone": {"kind": "file", "path": str(tmp_path / "missing.jsonl")},
        },
        targets={
            "naive": {"kind": "naive", "shadow": True},
            "broken": {"kind": "exploding", "shadow": True},
        },
    )
    daemon.wait_ready()
    html = daemon.get("/").text
    assert FAKE_TOKEN not in html and "upstream rejected" in html
    page = open_page(browser, daemon.url + "/").page
    assert FAKE_TOKEN not in page.content()
    failed = page.locator("#runs tbody tr").first.inner_text()
    assert "failure (broken)" in failed and "upstream rejected" in failed
    assert "down" in page.locator("#sources tbody tr", has_text="gone").inner_text()
    # the verdict names the failing runs and the source down, with their runbook entries
    broken = page.locator("#verdict-table tr[data-target='broken']")
    assert "HealthdRunsFailing" in broken.inner_text()
    assert broken.locator("a").first.get_attribute("href") == "runbook#healthdrunsfailing"
    broken.locator("a").first.click()  # the daemon serves the runbook: the alert's section
    page.wait_for_url(daemon.url + "/runbook#healthdrunsfailing")
    assert page.locator("#healthdrunsfailing").inner_text() == "HealthdRunsFailing"
    top, scrolled, height = page.evaluate(
        "[document.querySelector('#healthdrunsfailing').getBoundingClientRect().top,"
        " window.scrollY, window.innerHeight]"
    )
    assert scrolled > 0 and 0 <= top < height  # scrolled to the section: in view
    page.go_back()
    page.wait_for_selector("body[data-ready=yes]")
    assert "source gone is down" in page.locator("#verdict .sources-crossed").inner_text()
    assert page.locator(".chart canvas").count() == 1  # broken never had a successful run
    assert daemon.get("/static/nope.js").status_code == 404
    assert daemon.stop()[0] == 0


def test_runbook_anchors_are_the_heading_text_s_as_github_makes_them():
    """Headings others write hold links and code: the anchor is made of the words shown,
    repeated headings get -1, -2, and raw HTML is text, as on GitHub."""
    from healthd.report.runbook import render

    page = render(
        "# [Kafka lag](https://kafka.apache.org/) on `orders`\n\n## Steps\n\n## Steps\n\n"
        "<script>alert(1)</script>\n"
    ).decode()
    assert '<h1 id="kafka-lag-on-orders">' in page
    assert '<h2 id="steps">' in page and '<h2 id="steps-1">' in page
    assert "<script>alert" not in page and "&lt;script&gt;" in page
