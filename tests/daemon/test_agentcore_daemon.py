"""The daemon with `agentcore` targets whose memory is unknown, does not index healthd's
keys, or has a strategy whose schema drops them, whose endpoint is unreachable, or with no
AWS credentials: each run fails as a metric and a log line; the daemon keeps
serving and never shows the secret."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentcore_fixtures import DUMMY_AWS, MEMORY_ID
from daemon_helpers import Daemon, free_port, sample, toml_config

from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.testing.agentcore import AgentCoreEmulator, Strategy

UNINDEXED = "unindexed_memory-0123456789"
STRATEGY = "topics_only-a1b2c3d4e5"


def _target(endpoint: str, memory_id: str = MEMORY_ID, **extra: object) -> dict[str, object]:
    return {
        "kind": "agentcore",
        "shadow": True,
        "memory_id": memory_id,
        "namespace_prefix": "healthd/shadow",
        "region": "us-east-1",
        "endpoint_url": endpoint,
        "max_attempts": 2,
        "timeout_seconds": 2,
        **extra,
    }


def _failures(daemon: Daemon, target: str) -> float:
    return sample(daemon.scrape(), "healthd_runs_total", target=target, result="failure") or 0


def test_agentcore_failures_are_failed_runs_not_crashes(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):  # the daemon inherits this process's environment
            monkeypatch.delenv(name)
    with AgentCoreEmulator() as closed:
        unreachable = closed.url
    with AgentCoreEmulator() as emulator:
        emulator.create_memory(
            MEMORY_ID,
            indexed_keys=FILTER_KEYS,
            strategies=[Strategy(STRATEGY, "topics", schema={"topic": "STRING"})],
        )
        emulator.create_memory(UNINDEXED)
        runs = {
            "with_credentials": (
                {"unknown": _target(emulator.url, "unknown_memory-0000000000"),
                 "unindexed": _target(emulator.url, UNINDEXED),
                 "schema": _target(emulator.url, strategy_id=STRATEGY,
                                   namespace_prefix="healthd/schema"),
                 "unreachable": _target(unreachable),
                 "working": _target(emulator.url)},
                DUMMY_AWS,
            ),
            "without_credentials": (
                {"working": _target(emulator.url)},
                {k: v for k, v in DUMMY_AWS.items() if "KEY" not in k},
            ),
        }  # fmt: skip
        messages = {}
        for name, (targets, env) in runs.items():
            port = free_port()
            directory = tmp_path / name
            directory.mkdir()
            config = toml_config(directory, port=port, targets=targets)
            daemon = Daemon(config, port, directory / "daemon.log", **env)
            try:
                for target in targets:
                    if name == "with_credentials" and target == "working":
                        continue
                    daemon.wait_until(
                        lambda t=target, d=daemon: _failures(d, t) >= 1,
                        timeout=60.0,  # five targets' first runs, one after another
                        what=f"{target} fails",
                    )
                    failed = [
                        line["error"]
                        for line in daemon.log_lines()
                        if line.get("event") == "run failed" and line.get("target") == target
                    ]
                    messages[(name, target)] = failed[0]
                if name == "with_credentials":
                    daemon.wait_until(
                        lambda d=daemon: sample(
                            d.scrape(),
                            "healthd_runs_total",
                            target="working",
                            result="success",
                        ),
                        timeout=90.0,  # a first run over the example: slow on a busy machine
                        what="the working target succeeds",
                    )
                assert daemon.proc.poll() is None
                text = daemon.read_log() + daemon.get("/metrics").text + daemon.get("/").text
                assert DUMMY_AWS["AWS_SECRET_ACCESS_KEY"] not in text
            finally:
                assert daemon.stop()[0] == 0
            state = b"".join(p.read_bytes() for p in (directory / "state").iterdir())
            assert state and DUMMY_AWS["AWS_SECRET_ACCESS_KEY"].encode() not in state
            assert DUMMY_AWS["AWS_ACCESS_KEY_ID"].encode() not in state
    assert (
        "memory 'unknown_memory-0000000000' not found" in messages[("with_credentials", "unknown")]
    )
    assert f"cannot reach {unreachable}" in messages[("with_credentials", "unreachable")]
    assert "does not index healthd_subject (STRING)" in messages[("with_credentials", "unindexed")]
    assert (
        f"strategy '{STRATEGY}' drops healthd's metadata"
        in messages[("with_credentials", "schema")]
    )
    assert "no AWS credentials found" in messages[("without_credentials", "working")]
