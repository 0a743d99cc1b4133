"""`healthd evaluate` with reference, naive and AgentCore native and managed on the bundled
example against the emulator prints one comparison table: what the README shows."""

from __future__ import annotations

import json
import subprocess
import sys

from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, no_aws_env

TARGETS = [
    "reference",
    "naive",
    f"agentcore:mode=native,memory_id={MEMORY_ID},namespace_prefix=healthd/native,shadow=on",
    f"agentcore:mode=managed,memory_id={MEMORY_ID},namespace_prefix=healthd/managed,shadow=on",
]


def _evaluate(emulator, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        **no_aws_env(),
        **DUMMY_AWS,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE": emulator.url,
        "AWS_ENDPOINT_URL_BEDROCK_AGENTCORE_CONTROL": emulator.url,
    }
    args = [a for t in TARGETS for a in ("--target", t)]
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", *args, *extra],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def test_one_comparison_table_shows_add_only_agentcore_contaminating_like_naive(emulator):
    table = _evaluate(emulator)
    assert table.returncode == 0, table.stderr
    comparison = table.stdout.split("comparison (all domains)")[1]
    rows = [line.split("│") for line in comparison.splitlines() if line.startswith("│")]
    by_target = {r[1].strip(): [c.strip() for c in r[2:-1]] for r in rows}
    assert list(by_target) == [
        "reference",
        "naive",
        "agentcore:mode=native,mem…",
        "agentcore:mode=managed,me…",
    ]
    assert by_target["agentcore:mode=native,mem…"] == by_target["naive"]
    managed = by_target["agentcore:mode=managed,me…"]
    assert managed[1:5] == ["1.000", "1.000", "1.000", "0.000"]  # consistency .. contamination
    assert float(managed[0]) < 1.0  # freshness: nobody re-validated legacy-reports
    report = json.loads(_evaluate(emulator, "--format", "json").stdout)
    finals = [t["final"]["metrics"]["all"] for t in report["targets"]]
    assert finals[1] == finals[2]
    assert [f"{finals[3][m]:.3f}" for m in ("freshness", "consistency")] == managed[:2]
