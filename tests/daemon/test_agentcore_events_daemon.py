"""The daemon with `agentcore:mode=events` targets against the emulator: the shadow actor's
events are exported per `eventExpiryDuration` they were created under, across a change of the
setting between runs; a memory without the strategy named, and an actor holding events healthd
did not write, are failed runs, not crashes, and nothing of the other actor is touched."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import boto3
from agentcore_fixtures import DUMMY_AWS, MEMORY_ID
from daemon_helpers import Daemon, free_port, sample, toml_config

from healthd.testing.agentcore import AgentCoreEmulator
from healthd.testing.agentcore_events import Strategy

STRATEGY = "facts-a1b2c3d4e5"


def _event(n: int, owner: str, previous: str | None) -> str:
    event = {
        "id": f"ev-{n}",
        "type": "revised" if previous else "added",
        "timestamp": f"2026-01-{n:02d}T09:00:00Z",
        "source": "git",
        "fact": {"subject": "billing", "predicate": "owner", "value": owner, "domain": "ownership"},
    }
    if previous:
        event["previous"] = {**event["fact"], "value": previous}  # type: ignore[dict-item]
    return json.dumps(event) + "\n"


def _target(url: str, actor: str, strategy: str = STRATEGY) -> dict[str, object]:
    return {
        "kind": "agentcore",
        "mode": "events",
        "shadow": True,
        "memory_id": MEMORY_ID,
        "actor_id": actor,
        "strategy_id": strategy,
        "region": "us-east-1",
        "endpoint_url": url,
        "max_attempts": 2,
        "timeout_seconds": 5,
    }


def test_event_populations_per_expiry_are_exported_across_a_change(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text(_event(1, "@alice", None) + _event(2, "@bob", "@alice"))
    with AgentCoreEmulator() as emulator:
        emulator.events.style = "verbatim"  # the daemon's handling, not the style, under test
        emulator.events.configure(
            MEMORY_ID, event_expiry_days=30, strategies=[Strategy(STRATEGY, "h/{actorId}")]
        )
        boto3.client(
            "bedrock-agentcore",
            endpoint_url=emulator.url,
            region_name="us-east-1",
            aws_access_key_id=DUMMY_AWS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_AWS["AWS_SECRET_ACCESS_KEY"],
        ).create_event(
            memoryId=MEMORY_ID,
            actorId="a-real-user",
            sessionId="theirs",
            eventTimestamp=1_767_000_000,
            payload=[{"conversational": {"role": "USER", "content": {"text": "hello"}}}],
        )
        port = free_port()
        config = toml_config(
            tmp_path,
            port=port,
            sources={"history": {"kind": "file", "path": str(timeline)}},
            targets={
                "events": _target(emulator.url, "healthd-shadow"),
                "nostrategy": _target(emulator.url, "healthd-other", "missing-a1b2c3d4e5"),
                "notshadow": _target(emulator.url, "a-real-user"),
            },
        )
        daemon = Daemon(config, port, tmp_path / "daemon.log", **DUMMY_AWS)
        try:

            def events(days: str) -> float | None:
                return sample(
                    daemon.scrape(), "healthd_memory_events", target="events", expiry_days=days
                )

            daemon.wait_until(lambda: events("30") == 2, timeout=60, what="2 events under 30 days")
            metrics = daemon.scrape()
            assert sample(metrics, "healthd_memory_event_expiry_days", target="events") == 30
            assert sample(metrics, "healthd_memory_event_expiry_seconds", target="events") == (
                30 * 86_400
            )
            assert sample(metrics, "healthd_memory_failed_extractions", target="events") == 0
            failures = sample(metrics, "healthd_runs_total", target="nostrategy", result="failure")
            assert failures and failures >= 1
            failed = [
                line["error"]
                for line in daemon.log_lines()
                if line.get("event") == "run failed" and line.get("target") == "nostrategy"
            ]
            assert (
                "has no strategy 'missing-a1b2c3d4e5' (its strategies: facts-a1b2c3d4e5)"
                in (failed[0])
            )
            daemon.wait_until(
                lambda: sample(
                    daemon.scrape(), "healthd_runs_total", target="notshadow", result="failure"
                ),
                what="the run as an actor holding others' events fails",
            )
            refused = [
                line["error"]
                for line in daemon.log_lines()
                if line.get("event") == "run failed" and line.get("target") == "notshadow"
            ]
            assert "it is not a shadow actor; nothing was deleted" in refused[0]

            control = boto3.client(
                "bedrock-agentcore-control",
                endpoint_url=emulator.url,
                region_name="us-east-1",
                aws_access_key_id=DUMMY_AWS["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=DUMMY_AWS["AWS_SECRET_ACCESS_KEY"],
            )
            updated = control.update_memory(memoryId=MEMORY_ID, eventExpiryDuration=90)
            assert updated["memory"]["eventExpiryDuration"] == 90
            with timeline.open("a") as out:
                out.write(_event(3, "@carol", "@bob"))
            daemon.wait_until(lambda: events("90") == 1, timeout=60, what="1 event under 90 days")
            metrics = daemon.scrape()
            assert events("30") == 2  # the older events keep the expiry they were created with
            assert sample(metrics, "healthd_memory_event_expiry_days", target="events") == 90
            assert sample(metrics, "healthd_memory_event_expiry_seconds", target="events") == (
                90 * 86_400
            )
            since_30 = sample(
                metrics,
                "healthd_memory_event_expiry_since_timestamp_seconds",
                target="events",
                expiry_days="30",
            )
            since_90 = sample(
                metrics,
                "healthd_memory_event_expiry_since_timestamp_seconds",
                target="events",
                expiry_days="90",
            )
            assert since_30 is not None and since_90 is not None and since_30 <= since_90
            changed = [
                line
                for line in daemon.log_lines()
                if line.get("event") == "agentcore event expiry changed"
            ]
            assert [(c["previous_days"], c["event_expiry_days"]) for c in changed] == [(30, 90)]
            assert daemon.proc.poll() is None
            text = daemon.read_log() + daemon.get("/metrics").text
            assert DUMMY_AWS["AWS_SECRET_ACCESS_KEY"] not in text
        finally:
            assert daemon.stop()[0] == 0
    # nothing was written as any actor but the declared shadow ones
    held = [(e.actor_id, e.session_id) for e in emulator.events.events(MEMORY_ID)]
    assert {actor for actor, _ in held} == {"healthd-shadow", "a-real-user"}
    assert [s for a, s in held if a == "a-real-user"] == ["theirs"]  # untouched
