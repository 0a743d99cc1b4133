"""What a runner holds per source and per target between runs: each source and its stored
row; each target's options, shadow (its memory), replay and stored row, and what its page
shows of them."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from healthd.daemon.replay_store import ReplayStore
from healthd.daemon.state import SourceRow, TargetRow
from healthd.errors import TargetError
from healthd.evaluator import Replay, StageResult
from healthd.llm_usage import add_blocks, take_reader_block
from healthd.memory import Memory, TargetSpec, build_memory, take_llm_block
from healthd.memory.fingerprint import RetrievalFingerprint
from healthd.model import ChangeEvent, is_sweep
from healthd.probes import ProbeSet
from healthd.report.stagelog import StageLog
from healthd.settings import Settings, shadow_path
from healthd.sources import Source


def target_options(settings: Settings, name: str) -> dict[str, Any]:
    """The switches a target's memory is built with; the reference memory gets a persistent
    shadow under the state directory unless its ``path`` is given."""
    target = settings.targets[name]
    options = dict(target.options)
    if target.kind == "reference" and "path" not in options:
        options["path"] = shadow_path(settings.state_path, name)
    return options


def is_persistent(options: dict[str, Any]) -> bool:
    return "path" in options and str(options["path"]) not in ("", ":memory:")


def build_shadow(t: TargetRuntime) -> Memory:
    """The target's memory, from its options (a persistent one's directory made first)."""
    if t.persistent:
        os.makedirs(os.path.dirname(os.path.abspath(str(t.options["path"]))), exist_ok=True)
    return build_memory(TargetSpec(t.kind, t.options, t.name))


@dataclass
class SourceRuntime:
    name: str
    kind: str
    source: Source | None
    row: SourceRow


@dataclass
class TargetRuntime:
    name: str
    kind: str
    options: dict[str, Any]
    persistent: bool
    fingerprint: str
    row: TargetRow
    replay: Replay | None = None
    memory: Memory | None = None
    built_fingerprint: str | None = None
    note: str | None = None  # why the next run starts from scratch, for the log
    probes: ProbeSet | None = None  # the probe set the replay was last given
    stages: StageLog = field(default_factory=StageLog)  # for the page at /
    page: dict[str, Any] | None = None  # the last successful run, for the page at /
    position: int = 0  # how many of the runner's events the replay has applied
    last_event: str | None = None  # the id of the last of them
    store: ReplayStore | None = None  # the replay's state beside a persistent shadow
    pending_row: TargetRow | None = None  # this run's success, shown once it is stored
    page_wanted: int = 0  # bumped when the replay moved on; the page at / follows lazily
    page_built: int = 0
    retrieval: RetrievalFingerprint | None = None  # the last one a run was scored under
    retrieval_changes: int = 0  # a counter, kept in the results across restarts
    rebuilds: int = 0  # corrupt shadows moved aside and rebuilt, in this process
    shadow_checked: bool = False  # the shadow opened and agreed with the stored results
    # The newest real change replayed (not a revalidation sweep): its stage in the JSON
    # report's shape, whether sweeps came after it, and its event time (epoch seconds).
    last_change: dict[str, Any] | None = None
    swept: bool = False
    newest_change: float | None = None
    # the newest real change's stage, not yet turned into ``last_change`` (at the next
    # commit of the shadow or the end of the replay, whichever comes first)
    unsettled_change: StageResult | None = None
    # LLM and embedding calls: the total since the target's state began (a counter, kept in
    # the results across restarts) and this run's (for its log line)
    llm_total: dict[str, Any] | None = None
    llm_run: dict[str, Any] | None = None
    llm_budget_left: dict[str, int] | None = None  # by budget, after the last run

    def count_llm(self) -> None:
        """Add the calls the memory counted since the last time to the run's and the
        total (before the memory is closed or the run ends)."""
        block = take_llm_block(self.memory, self.kind)
        if self.replay is not None:  # healthd's judge reading what this target served
            judged = take_reader_block(self.replay.reader)
            if judged is not None:
                block = add_blocks(judged, block)
        self.llm_total = add_blocks(self.llm_total, block)
        self.llm_run = add_blocks(self.llm_run, block)

    def end_llm_run(self) -> dict[str, Any]:
        """This run's calls; the next run counts from nothing."""
        self.count_llm()
        run, self.llm_run = self.llm_run, None
        assert run is not None
        return run

    def carry_last_change(self, results: dict[str, Any] | None) -> None:
        """Take the newest real change from stored results or a shadow's checkpoint (a
        restored replay)."""
        results = results or {}
        self.last_change = results.get("last_change")
        self.swept = bool(results.get("swept"))
        self.newest_change = results.get("newest_change")
        self.unsettled_change = None

    def change_record(self) -> dict[str, Any]:
        """The newest real change as results and checkpoints hold it."""
        return {
            "last_change": self.last_change,
            "swept": self.swept,
            "newest_change": self.newest_change,
        }

    def note_stage(self, stage: StageResult, event: ChangeEvent) -> StageResult | None:
        """Follow the newest real change; the stage when ``event`` is one."""
        if is_sweep(event):
            self.swept = True
            return None
        self.swept = False
        at = event.timestamp.timestamp()
        if self.newest_change is None or at > self.newest_change:
            self.newest_change = at
        self.unsettled_change = stage
        return stage


def newest_change(events: Iterable[ChangeEvent]) -> float | None:
    """The event time (epoch seconds) of the newest event that is not a revalidation sweep."""
    times = (e.timestamp.timestamp() for e in events if not is_sweep(e))
    return max(times, default=None)


#: kinds whose shadow can be copied into the process for the extra replays of ``repeats``
_SCRATCH_KINDS = ("reference", "naive", "mem0")


def scratch_spec(t: TargetRuntime) -> TargetSpec:
    """The target as a private in-process shadow, for the extra replays of ``repeats``
    (:mod:`healthd.repeats`): never the daemon's own shadow, nor a service's scope that the
    persistent shadow lives in. A target whose memory is a service (or a team's vector
    store) cannot be copied so: TargetError naming why."""
    options = dict(t.options)
    mem0 = options.get("mem0")
    team_store = isinstance(mem0, dict) and "vector_store" in mem0
    if t.kind not in _SCRATCH_KINDS or options.get("deployment", "local") != "local" or team_store:
        raise TargetError(
            f"target {t.name!r}: repeats above 1 in the daemon replay the history again into "
            "a private in-process shadow, which only reference, naive and a local mem0 "
            "(without a team vector_store) can have; use `healthd evaluate --repeats` for this "
            "target"
        )
    if "path" in options:
        options["path"] = ":memory:"
    return TargetSpec(t.kind, options, t.name)
