"""End to end with a real Prometheus (Debian's `prometheus`): it scrapes a running
`healthd run` every second and loads a copy of alerts/ whose `for:` is shortened. Every
dashboard panel query (and variable query) returns data through the HTTP API (a baseline's
only in the baselines' panels), and the degrading `watched` target (a naive memory declared
a real target) raises the consistency and contamination alerts while the healthy
`reference` and the `naive` baseline, failing as much as `watched`, raise none."""

from __future__ import annotations

import shutil

import pytest
import requests
import yaml
from monitoring_helpers import (
    RULE_FILES,
    Process,
    dashboards,
    free_port,
    panel_queries,
    prometheus_binary,
    substitute,
    variable_queries,
    wait_for,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        prometheus_binary() is None,
        reason="prometheus binary not installed (Debian package prometheus)",
    ),
]

DEGRADING_ALERTS = ("HealthdConsistencyLow", "HealthdContaminationRising")


def shortened_rules(directory) -> None:
    """alerts/ as shipped, but every `for:` 1s, so pending/firing shows within seconds."""
    directory.mkdir()
    for path in RULE_FILES:
        doc = yaml.safe_load(path.read_text())
        for group in doc["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    rule["for"] = "1s"
        (directory / path.name).write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture(scope="module")
def prometheus(healthd, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prometheus")
    shortened_rules(tmp / "rules")
    healthd_addr = healthd.removeprefix("http://")
    (tmp / "prometheus.yml").write_text(
        yaml.safe_dump(
            {
                "global": {
                    "scrape_interval": "1s",
                    "evaluation_interval": "1s",
                    "scrape_timeout": "1s",
                },
                "rule_files": ["rules/*.rules.yml"],
                "scrape_configs": [
                    {"job_name": "healthd", "static_configs": [{"targets": [healthd_addr]}]}
                ],
            }
        )
    )
    port = free_port()
    proc = Process(
        [
            shutil.which("prometheus"),
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        tmp / "prometheus.log",
        cwd=tmp,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(
            lambda: requests.get(url + "/-/ready", timeout=2).status_code == 200,
            timeout=60,
            what="prometheus /-/ready",
            proc=proc,
        )
        wait_for(
            lambda: _query(url, 'up{job="healthd"} == 1'),
            timeout=30,
            what="a successful scrape of healthd",
            proc=proc,
        )
        yield url, proc
    finally:
        proc.stop()


def _query(url: str, expr: str) -> list[dict]:
    resp = requests.get(url + "/api/v1/query", params={"query": expr}, timeout=5)
    body = resp.json()
    assert body.get("status") == "success", f"{expr}: {body}"
    return body["data"]["result"]


def _all_queries():
    out = []
    for name, doc in dashboards().items():
        out += [(name, title, expr) for title, expr in panel_queries(doc)]
        out += [(name, f"variable {var}", expr) for var, expr in variable_queries(doc)]
    return out


@pytest.mark.parametrize("target,domain", [(".*", ".*"), ("reference", "all"), ("naive", "all")])
def test_every_dashboard_query_returns_data(prometheus, target, domain):
    url, proc = prometheus
    queries = {(n, t, substitute(e, target=target, domain=domain)) for n, t, e in _all_queries()}
    # baselines apart: a baseline has data only in the baselines' panels, a real target only
    # outside them
    apart = 'role!="baseline"' if target == "naive" else 'role="baseline"'
    empty = {q for q in queries if target != ".*" and apart in q[2]}
    pending = queries - empty

    def all_answered():
        for item in sorted(pending):
            if _query(url, item[2]):
                pending.discard(item)
        return not pending

    try:
        wait_for(all_answered, timeout=45, what="data for every panel query", proc=proc, interval=1)
    except AssertionError as exc:
        raise AssertionError(f"queries with no data: {sorted(pending)}") from exc
    assert not [q for q in sorted(empty) if _query(url, q[2])]


def test_degrading_target_raises_consistency_and_contamination_alerts(prometheus):
    url, proc = prometheus

    def watched_alerts():
        alerts = requests.get(url + "/api/v1/alerts", timeout=5).json()["data"]["alerts"]
        got = {
            a["labels"]["alertname"]
            for a in alerts
            if a["labels"].get("target") == "watched" and a["state"] == "firing"
        }
        return alerts if set(DEGRADING_ALERTS) <= got else None

    alerts = wait_for(
        watched_alerts,
        timeout=45,
        what="consistency and contamination alerts for target watched",
        proc=proc,
        interval=0.5,
    )
    for alert in alerts:
        if (
            alert["labels"]["alertname"] in DEGRADING_ALERTS
            and alert["labels"].get("target") == "watched"
        ):
            assert alert["labels"]["domain"] == "all"
            assert alert["labels"]["job"] == "healthd"
            assert alert["labels"]["role"] == "subject"
            assert alert["labels"]["severity"] in ("critical", "warning")
            assert "watched" in alert["annotations"]["summary"]
            assert alert["annotations"]["runbook_url"].endswith(
                "#" + alert["labels"]["alertname"].lower()
            )
    # the healthy reference target stays quiet on every memory-health alert, and so does the
    # naive baseline, whose numbers are those of watched
    quiet = [a["labels"] for a in alerts if a["labels"].get("target") in ("reference", "naive")]
    assert quiet == [], quiet
    naive = _query(url, 'healthd_consistency_ratio{target="naive",domain="all"}')
    assert naive and naive[0]["metric"]["role"] == "baseline" and float(naive[0]["value"][1]) < 0.9
    # and healthd is up: the scrape alerts stay quiet (firing ones: one scrape slower than
    # the test's 1 s timeout on a loaded machine makes HealthdDown pending, not firing)
    names = {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}
    assert not names & {
        "HealthdDown",
        "HealthdAbsent",
        "HealthdSourceDown",
        "HealthdRunsFailing",
        "HealthdNoRecentSuccess",
    }, names
