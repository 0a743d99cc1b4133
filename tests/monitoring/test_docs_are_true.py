"""What the README and docs/, the example configurations, alerts/thresholds.yml and `--help`
say, each checked against what the code does. (Links and anchors: tests/docs/.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from monitoring_helpers import ALERTS, DEPLOY, ROOT, healthd_env

README = ROOT / "README.md"
TARGETS_PAGE = ROOT / "docs" / "targets" / "README.md"


def _healthd(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT):
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        env=env or healthd_env(),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


# --- the design ----------------------------------------------------------------------------


def _relative_links(path: Path) -> list[str]:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
    return [link for link in links if not re.match(r"[a-z]+:", link)]


def test_the_readme_links_the_design_kept_in_the_repository():
    assert "docs/DESIGN.md" in _relative_links(README)
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    for section in ("## Metrics (the contract)", "## Timeline JSONL", "## Memory adapters"):
        assert section in design


# --- the targets page's figures --------------------------------------------------------------------------


def _readme_row(target: str) -> list[float]:
    """A row of the table docs/targets/ prints after the real-memory `evaluate` command."""
    text = TARGETS_PAGE.read_text()
    table = text[text.index("--target reference:propagation=off,ttl=off\n```") :]
    table = table[: table.index("\n\n", table.index("| target |"))]
    (row,) = re.findall(rf"^\| `{re.escape(target)}` \|(.*)\|$", table, re.M)
    return [float(cell) for cell in row.split("|")]


def test_the_targets_pages_comparison_figures_are_what_evaluate_prints():
    """The rows of the real-memory comparison table that need no extra, measured."""
    targets = ("reference", "naive", "reference:propagation=off,ttl=off")
    command = ["evaluate", "--format", "json"]
    proc = _healthd(*command, *(part for t in targets for part in ("--target", t)))
    assert proc.returncode == 0, proc.stderr
    measured = {t["name"]: t["final"]["metrics"]["all"] for t in json.loads(proc.stdout)["targets"]}
    metrics = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")
    for target in targets:
        got = [round(measured[target][m], 3) for m in metrics]
        assert _readme_row(target) == got, target


# --- example configurations --------------------------------------------------------------------


_PLACEHOLDER = re.compile(r"does not exist|environment variable '\w+' \(\w+\) is not set")


def test_sources_example_is_checkable_as_its_header_says(tmp_path):
    """As shipped, check-config names each placeholder and nothing else; pointed at a real
    checkout with the variables set, it passes."""
    sources = ROOT / "config" / "sources.toml"
    proc = _healthd("check-config", "--config", str(sources))
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and lines
    assert all(_PLACEHOLDER.search(line) for line in lines), proc.stderr

    checkout = tmp_path / "shop"
    (checkout / "doc" / "adr").mkdir(parents=True)
    (checkout / "doc" / "adr" / "0001-record-architecture-decisions.md").write_text(
        "# 1. Record architecture decisions\n\nDate: 2024-01-01\n\n## Status\n\nAccepted\n"
    )
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "adr"], check=True)
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text((ROOT / "healthd" / "data" / "example_timeline.jsonl").read_text())
    env = {
        **healthd_env(),
        "HEALTHD_SOURCES__TIMELINE__PATH": str(timeline),
        "HEALTHD_SOURCES__REPO__PATH": str(checkout),
        "HEALTHD_SOURCES__DECISIONS__PATH": str(checkout),
        "HEALTHD_SOURCES__CATALOG__PATH": str(checkout),
        **{name: "placeholder" for name in re.findall(r"'(\w+)' \(\w+\)", proc.stderr)},
    }
    checked = _healthd("check-config", "--config", str(sources), env=env)
    assert checked.returncode == 0, checked.stderr
    assert "ok:" in checked.stdout


def test_check_config_problems_all_carry_the_same_prefix():
    proc = _healthd("check-config", "--config", "config/sources.toml")
    lines = proc.stderr.splitlines()
    assert len(lines) > 1
    assert all(line.startswith("healthd: error: config/sources.toml: ") for line in lines), lines


# --- the schedule the alerts assume ------------------------------------------------------------


def _period_seconds(cron: str) -> float:
    from healthd.daemon.scheduler import parse_schedule

    return parse_schedule(cron).period.total_seconds()


def _shipped_configs() -> dict[str, str]:
    """Every healthd configuration deploy/ ships, by where it is (files and ConfigMaps)."""
    out = {str(p.relative_to(ROOT)): p.read_text() for p in sorted(DEPLOY.rglob("*.toml"))}
    for path in sorted(DEPLOY.rglob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
                for key, text in doc["data"].items():
                    if key.endswith(".toml"):
                        out[f"{path.relative_to(ROOT)}:{key}"] = text
    return out


def test_alert_schedule_matches_the_default_and_every_shipped_schedule():
    from healthd.settings import load_settings

    thresholds = yaml.safe_load((ALERTS / "thresholds.yml").read_text())
    period = thresholds["schedule_seconds"]
    assert _period_seconds(load_settings(None, deep=False).schedule.cron) == period
    configs = _shipped_configs()
    assert len(configs) >= 5
    for where, text in configs.items():
        cron = tomllib.loads(text).get("schedule", {}).get("cron", "* * * * *")
        assert _period_seconds(cron) == period, f"{where}: {cron!r} is not every {period} s"
    # an example that runs at another period says what to set
    for path in sorted((ROOT / "config").glob("*.toml")):
        cron = tomllib.loads(path.read_text()).get("schedule", {}).get("cron", "* * * * *")
        if _period_seconds(cron) != period:
            assert "schedule_seconds" in path.read_text(), path.name
    # and with it HealthdNoRecentSuccess waits minutes, not hours
    (rule,) = [
        r
        for r in yaml.safe_load((ALERTS / "alerts.rules.yml").read_text())["groups"][0]["rules"]
        if r.get("alert") == "HealthdNoRecentSuccess"
    ]
    assert f"> {2 * period}" in rule["expr"] and 2 * period <= 600


# --- runbook links -----------------------------------------------------------------------------


def test_runbook_url_resolves_to_the_runbook_and_can_be_set_at_generation(tmp_path):
    base = yaml.safe_load((ALERTS / "thresholds.yml").read_text())["runbook_url"]
    assert "github.com/healthd/healthd" not in base
    if not re.match(r"https?://", base):
        assert (ROOT / base).is_file(), f"runbook_url {base} is not a file in the repository"
    url = "https://git.example.com/platform/healthd/-/blob/main/docs/runbook.md"
    for how in (["--runbook-url", url], []):
        env = {**os.environ, "HEALTHD_RUNBOOK_URL": url} if not how else healthd_env()
        out = tmp_path / ("flag" if how else "env")
        generate = [
            sys.executable, str(ALERTS / "generate.py"), "--out", str(out), "--data", str(out), *how
        ]  # fmt: skip
        proc = subprocess.run(generate, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        rules = yaml.safe_load((out / "alerts.rules.yml").read_text())["groups"][0]["rules"]
        urls = {r["annotations"]["runbook_url"] for r in rules if "alert" in r}
        assert urls == {f"{url}#{r['alert'].lower()}" for r in rules if "alert" in r}


# --- --help --------------------------------------------------------------------------------------


def test_evaluate_help_lists_every_memory_kind_and_its_switches():
    from healthd.memory import _BUILTIN, graphiti, langmem, letta, mem0, zep
    from healthd.memory.agentcore import AgentCoreOptions

    proc = _healthd("evaluate", "--help", env={**healthd_env(), "COLUMNS": "400"})
    assert proc.returncode == 0
    help_text = " ".join(proc.stdout.split())
    for kind in _BUILTIN:  # the kinds healthd ships (tests register more in-process)
        assert re.search(rf"\b{kind}\b", help_text), kind
    switches = {
        "mem0": mem0._SWITCHES,
        "graphiti": graphiti._SWITCHES,
        "langmem": langmem._SWITCHES,
        "zep": zep.SWITCHES,
        "letta": letta.SWITCHES,
        "agentcore": set(AgentCoreOptions.model_fields),
    }
    for kind, names in switches.items():
        described = help_text.split(f"{kind} (", 1)[1].split(")", 1)[0]
        assert all(re.search(rf"\b{name}\b", described) for name in names), (kind, described)


def test_report_screenshot_without_the_test_extra_says_what_to_install():
    script = ROOT / "scripts" / "report_screenshot.py"
    hide_playwright = (
        "import runpy, sys; sys.modules['playwright'] = None; "
        "sys.modules['playwright.sync_api'] = None; "
        f"sys.argv = [{str(script)!r}]; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", hide_playwright], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "report_screenshot: needs Playwright, from the test extra: pip install -e '.[test]'"
    ]


# --- what the README and the runbook say of the example and of baselines -----------------------


_FRACTIONS = {
    "a quarter": 1 / 4,
    "a third": 1 / 3,
    "half": 1 / 2,
    "two thirds": 2 / 3,
    "three quarters": 3 / 4,
}


def _evaluated_example() -> dict:
    proc = _healthd("evaluate", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_readme_says_how_often_naive_answers_stale_as_evaluate_measures_it():
    """The sentence "answers <fraction> of its questions with something that stopped being true" is
    naive's contamination on the example."""
    said = re.search(
        r"answers\s+(" + "|".join(_FRACTIONS) + r")\s+of\s+its\s+questions\s+with\s+something"
        r"\s+that\s+stopped\s+being\s+true",
        README.read_text(),
    )
    assert said, "the README's sentence on naive's stale answers is gone or reworded"
    targets = {t["name"]: t for t in _evaluated_example()["targets"]}
    contamination = targets["naive"]["final"]["metrics"]["all"]["contamination"]
    assert abs(_FRACTIONS[said.group(1)] - contamination) < 0.05, (said.group(1), contamination)


def test_the_readmes_quoted_comparison_and_probe_set_are_what_evaluate_prints():
    readme = README.read_text()
    measured = _evaluated_example()
    probe_set = measured["probe_set"]
    line = f"probe set {probe_set['version']} ({probe_set['count']} probes)"
    assert line in readme, f"the README quotes another probe set than `{line}`"
    metrics = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")
    for target in measured["targets"]:
        (row,) = re.findall(rf"^│ {target['name']}\s+│(.*)│$", readme, re.M)
        quoted = [float(cell) for cell in row.split("│")]
        assert quoted == [round(target["final"]["metrics"]["all"][m], 3) for m in metrics]


def test_the_runbook_never_says_a_baseline_fires_an_alert_that_leaves_baselines_out():
    """An alert whose every healthd selector says ``role!="baseline"`` never fires for
    naive; the runbook's section on it must not say it does."""
    groups = yaml.safe_load((ALERTS / "alerts.rules.yml").read_text())["groups"]
    rules = {r["alert"]: r["expr"] for g in groups for r in g["rules"] if "alert" in r}
    runbook = (ROOT / "docs" / "runbook.md").read_text()
    checked = 0
    for section in re.split(r"(?m)^## ", runbook)[1:]:
        name, _, text = section.partition("\n")
        expr = rules.get(name.strip())
        if expr is None:
            continue
        selectors = re.findall(r"\bhealthd_\w+\{[^}]*\}", expr)
        if not selectors or not all('role!="baseline"' in s for s in selectors):
            continue
        checked += 1
        sentences = re.split(r"(?<=[.:;])\s+", " ".join(text.split()))
        claims = [
            s
            for s in sentences
            if re.search(r"\b(naive|baseline)\b", s)
            and re.search(r"\bfires?\b", s)
            and not re.search(r"\b(never|not|no)\b", s)
        ]
        assert claims == [], f"{name.strip()}: {claims}"
    assert checked >= 5
