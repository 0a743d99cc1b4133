"""A memory that must be waited for after a write (AgentCore's consistency wait) is written a
batch of changes at a time (`batch_events = N`), read once after each batch, and scored one
stage per batch: the wait is paid once per batch, not once per change. The batch's stage is
the state after all of its events, as the unbatched replay's stage of its last event."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from healthd.cli import example_timeline_path
from healthd.evaluator import evaluate
from healthd.memory import Memory, build_memory, parse_target
from healthd.model import Answer, ChangeEvent, FactKey, Probe
from healthd.probes import build_probe_set
from healthd.timeline import read_timeline


class Batched:
    """A memory as it is, written ``batch_events`` changes at a time."""

    def __init__(self, inner: Memory, batch_events: int) -> None:
        self.inner = inner
        self.batch_events = batch_events

    def reset(self) -> None:
        self.inner.reset()

    def apply(self, event: ChangeEvent) -> None:
        self.inner.apply(event)

    def answer(self, probe: Probe, at: datetime) -> Answer:
        return self.inner.answer(probe, at)

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        return self.inner.changed_keys(at)  # type: ignore[attr-defined,no-any-return]

    def close(self) -> None:
        self.inner.close()


def replay(kind: str, batch: int, mode: str = "incremental") -> Any:
    events = list(read_timeline(str(example_timeline_path())))
    memory = Batched(build_memory(parse_target(kind)), batch)
    try:
        return evaluate(
            events,
            memory,
            build_probe_set(events),
            name=kind,
            kind=kind,
            mode=mode,  # type: ignore[arg-type]
        )
    finally:
        memory.close()


@pytest.mark.parametrize("kind", ["reference", "naive"])
def test_a_batch_is_one_stage_and_the_replay_ends_where_the_unbatched_one_does(kind: str):
    every = replay(kind, 1)
    batched = replay(kind, 10)
    assert len(every.stages) == 135
    assert [s.index for s in batched.stages] == [*range(10, 135, 10), 135]
    # each batch's stage is the unbatched replay's stage of its last event, metric for metric
    # (the forgetting checks that fall due inside a batch are made at its stage instead)
    by_index = {s.index: s for s in every.stages}
    for stage in batched.stages:
        ours, theirs = stage.metrics, by_index[stage.index].metrics
        assert stage.event_id == by_index[stage.index].event_id
        for bucket in ours:
            a, b = ours[bucket].as_dict(), theirs[bucket].as_dict()
            a.pop("forgetting"), b.pop("forgetting")
            assert a == b, (stage.index, bucket)
    assert batched.metrics == every.metrics
    assert batched.events == every.events == 135


def test_full_and_incremental_scoring_agree_stage_for_stage_in_batches():
    full, incremental = replay("reference", 7, "full"), replay("reference", 7, "incremental")
    assert [(s.index, s.metrics) for s in full.stages] == [
        (s.index, s.metrics) for s in incremental.stages
    ]


@pytest.mark.product
def test_agentcore_waits_once_per_batch_and_scores_what_the_per_change_replay_ends_with():
    """The emulator shows each write to reads 0.3 s later; the adapter polls until what it
    wrote shows. Per change, every changed key's probe polls; in batches of 10, once per
    batch. Both end with the same scores, and no read was left unsettled."""
    pytest.importorskip("boto3", reason="the agentcore extra is not installed")
    from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, agentcore

    from healthd.memory._agentcore_records import FILTER_KEYS
    from healthd.testing.agentcore import AgentCoreEmulator

    events = list(read_timeline(str(example_timeline_path())))[:30]
    probes = build_probe_set(events)
    runs = {}
    with pytest.MonkeyPatch.context() as env:
        for name, value in DUMMY_AWS.items():
            env.setenv(name, value)
        for batch in (1, 10):
            with AgentCoreEmulator(read_after_write_delay=0.3) as emu:
                emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
                memory = agentcore(
                    emu, mode="managed", consistency_wait_seconds=10, batch_events=batch
                )
                try:
                    result = evaluate(events, memory, probes, name="ac", kind="agentcore")
                    unsettled = memory.unsettled_reads
                finally:
                    memory.close()
                retrieves = sum(1 for _, path in emu.requests if path.endswith("/retrieve"))
                runs[batch] = (result, unsettled, retrieves)
    (every, unsettled_every, polls_every), (batched, unsettled_batched, polls_batched) = (
        runs[1],
        runs[10],
    )
    assert unsettled_every == unsettled_batched == 0
    assert [s.index for s in batched.stages] == [10, 20, 30]
    assert batched.metrics == every.metrics
    assert polls_batched < polls_every / 2, (polls_batched, polls_every)


def test_batch_events_is_checked_like_any_switch():
    from healthd.errors import TargetError

    with pytest.raises(TargetError, match="batch_events"):
        parse_and_build = build_memory(
            parse_target(
                "agentcore:memory_id=healthd_shadow-a1b2c3d4e5,namespace_prefix=s,shadow=on,"
                "region=us-east-1,endpoint_url=http://127.0.0.1:9,batch_events=0"
            )
        )
        parse_and_build.close()


@pytest.mark.product
def test_the_daemon_writes_a_run_in_batches_and_scores_what_every_change_would(
    tmp_path, monkeypatch
):
    """Two AgentCore targets on the bundled example, one scored after every change, one in
    batches of 50: the same final scores; the batched one's stages are its batches' (the
    run's last batch is scored however short)."""
    pytest.importorskip("boto3", reason="the agentcore extra is not installed")
    from agentcore_fixtures import DUMMY_AWS, MEMORY_ID
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.memory._agentcore_records import FILTER_KEYS
    from healthd.settings import load_settings
    from healthd.testing.agentcore import AgentCoreEmulator

    for name, value in DUMMY_AWS.items():
        monkeypatch.setenv(name, value)
    with AgentCoreEmulator() as emu:
        emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        targets = "".join(
            f"""
[targets.{name}]
kind = "agentcore"
shadow = true
memory_id = "{MEMORY_ID}"
namespace_prefix = "healthd/{name}"
region = "us-east-1"
endpoint_url = "{emu.url}"
mode = "managed"
batch_events = {batch}
"""
            for name, batch in (("every", 1), ("batched", 50))
        )
        config = tmp_path / "healthd.toml"
        config.write_text(f'state_path = "{tmp_path / "state.sqlite"}"\nexample = true\n{targets}')
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        runner = Runner(
            settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        )
        try:
            summary = runner.run_once()
            assert summary is not None
            assert {o["result"] for o in summary.targets.values()} == {"success"}
            every, batched = runner.targets["every"], runner.targets["batched"]
            stages_every, _ = every.stages.stages()
            stages_batched, _ = batched.stages.stages()
            assert every.row.results is not None and batched.row.results is not None
            assert batched.row.results["metrics"] == every.row.results["metrics"]
        finally:
            runner.close()
            state.close()
    assert len(stages_every) == 135
    assert [s["index"] for s in stages_batched] == [50, 100, 135]
