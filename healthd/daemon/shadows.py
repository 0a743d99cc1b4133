"""A target's shadow across runs and restarts: made durable at checkpoints, read back
(resumed) from its checkpoint after a restart without touching the shadow, checked against
the stored results, and set aside when SQLite calls it corrupt."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from healthd._collector import replay_collection
from healthd.daemon.replay_store import ReplayStore, StateHolding
from healthd.daemon.state import StateError
from healthd.daemon.targets import TargetRuntime, build_shadow, newest_change
from healthd.daemon.views import Views
from healthd.evaluator import Replay
from healthd.exporters.report import stage_json
from healthd.logging import get_logger, redact_text
from healthd.memory import Checkpointed, Memory, Releasing
from healthd.probes import ProbeSet
from healthd.reading import Reader

log = get_logger("healthd.runner")


class Shadows(Views):
    """The part of a :class:`~healthd.daemon.runner.Runner` that keeps each target's shadow."""

    reader: Reader
    event_count: int
    # the runner's: the probe set over every event so far
    _current_probes: Callable[[], ProbeSet]

    def _restore(self, t: TargetRuntime) -> None:
        row = t.row
        if row.applied == 0 and row.results is None and not t.persistent:
            return
        if row.fingerprint and row.fingerprint != t.fingerprint:
            t.note = (
                "configuration changed since the last run (probe file, staleness, "
                "forgetting window, mode or target options): fresh replay"
            )
            row.results = None
            return
        if not t.persistent:
            t.note = (
                f"the shadow lives in process memory; replaying {row.applied} stored "
                "events from scratch into a fresh one"
            )
            return
        # A persistent shadow's replay is read back by the first run (or page) that needs
        # it, not here: the daemon serves the stored results at once, however long the
        # history (reading a million events' state takes seconds).

    def _resume(self, t: TargetRuntime) -> bool:
        """Rebuild a persistent shadow's replay from the checkpoint of its last committed
        batch, without touching the shadow. False (and ``t.note`` says why) when it cannot
        be, and the next run replays from scratch; StateError when the state file cannot be
        read, which no fresh replay mends."""
        memory: Memory | None = None
        try:
            memory = build_shadow(t)
            checkpoint = memory.checkpoint() if isinstance(memory, Checkpointed) else None
            problem = self._checkpoint_problem(t, checkpoint)
            if problem or checkpoint is None:
                t.note = problem or t.note
                memory.close()
                return False
            applied = int(checkpoint["applied"])
            probes = self._current_probes()
            store = ReplayStore(memory) if isinstance(memory, StateHolding) else None
            replayed = 0
            if store is not None and "replay" in checkpoint:
                with replay_collection():  # what is read back lives as long as the replay
                    t.replay = store.load(
                        memory, probes, checkpoint["replay"], **self._replay_options()
                    )
            else:  # a checkpoint without the replay's state: truth folded from the events
                with replay_collection():
                    t.replay = Replay.restore(
                        memory,
                        probes,
                        self.state.iter_events(0, applied),
                        checkpoint["snapshot"],
                        **self._replay_options(),
                    )
                replayed = applied
                if store is not None:  # saved in full at the next commit
                    store.reset()
                    store.note_all(t.replay.truth)
            t.store = store
            if isinstance(memory, Checkpointed):
                memory.batch_writes()
        except Exception as exc:
            if memory is not None:
                try:
                    memory.close()
                except Exception:
                    pass
            t.replay = None
            if isinstance(exc, StateError):
                raise  # the state file's fault: a fresh replay would empty a sound shadow
            t.note = (
                f"could not restore the shadow ({redact_text(f'{type(exc).__name__}: {exc}')})"
                ": fresh replay"
            )
            return False
        t.probes = probes
        t.memory = memory
        t.built_fingerprint = t.fingerprint
        t.position = applied
        t.last_event = checkpoint.get("last_event")
        if isinstance(checkpoint.get("change"), dict):
            # where the replay got to: the stored results may be an earlier run's, or none,
            # when the process died between this checkpoint and storing its results
            t.carry_last_change(checkpoint["change"])
        else:  # a checkpoint written by an older healthd
            self._carry_stored_change(t, applied)
        t.page_wanted += 1
        t.note = None
        log.info(
            "shadow restored",
            target=t.name,
            events=applied,
            shadow=str(t.options.get("path")),
            replayed=0,
            truth_folded_from_events=replayed,
            pending=self.event_count - applied,
        )
        return True

    def _carry_stored_change(self, t: TargetRuntime, applied: int) -> None:
        """The newest real change, from the stored results, when this process has not
        followed one yet."""
        if t.last_change is None and t.newest_change is None:
            results = t.row.results
            t.carry_last_change(results)
            behind = results is None or t.row.applied != applied
            if behind:  # an earlier run's stage is not the newest change's
                t.last_change, t.swept = None, False
            if applied and (results is None or behind or "newest_change" not in results):
                # results stored by an older healthd, or none over these events: the newest
                # real change's time, once (its stage is not known without a replay)
                t.newest_change = newest_change(self.state.iter_events(0, applied))

    def _checkpoint_problem(self, t: TargetRuntime, checkpoint: dict[str, Any] | None) -> str:
        if checkpoint is None:
            if t.row.dirty:
                return "the previous run was interrupted before its first batch: fresh replay"
            if t.row.applied:
                return "no replay checkpoint in the shadow: fresh replay"
            return ""
        applied = checkpoint.get("applied")
        if checkpoint.get("fingerprint") != t.fingerprint:
            return (
                "configuration changed since the shadow was written (probe file, staleness, "
                "forgetting window, mode or target options): fresh replay"
            )
        if not isinstance(applied, int) or applied > self.event_count:
            return "the state file holds fewer events than the shadow applied: fresh replay"
        last = self.state.event_id_at(applied, self.event_count) if applied else None
        if checkpoint.get("last_event") != last:
            return "the shadow's checkpoint does not match the stored events: fresh replay"
        return ""

    def _commit(self, t: TargetRuntime) -> None:
        """Make the shadow's writes so far durable, with where the replay has got to."""
        assert isinstance(t.memory, Checkpointed) and t.replay is not None
        n = t.position
        self._settle_change(t)
        checkpoint: dict[str, Any] = {
            "fingerprint": t.fingerprint,
            "applied": n,
            "last_event": t.last_event if n else None,
            # the newest real change up to here: a restart resumes from this checkpoint,
            # whatever results the state file holds (an earlier run's, or none)
            "change": t.change_record(),
        }
        if t.store is not None:
            checkpoint["replay"] = t.store.save(t.replay)
        else:
            checkpoint["snapshot"] = t.replay.snapshot()
        t.memory.commit(checkpoint)
        self._release(t)

    @staticmethod
    def _settle_change(t: TargetRuntime) -> None:
        """The stage of the newest real change replayed, in the JSON report's shape."""
        if t.unsettled_change is not None:
            t.last_change = stage_json(t.unsettled_change)
            t.unsettled_change = None

    def _release(self, t: TargetRuntime) -> None:
        """Hold in full only the keys used last: what the shadow and the replay's stored
        rows hold is read back when next needed, so memory follows the keys in use, not the
        whole history (README, "Memory bounds")."""
        keep = self.settings.warm_keys
        if t.store is not None and t.replay is not None:
            t.store.release(t.replay, keep)
        if isinstance(t.memory, Releasing):
            t.memory.release(keep)

    def _replay_options(self) -> dict[str, Any]:
        return {
            "mode": self.settings.mode,
            "windows": self.settings.staleness.windows(),
            "forgetting_window": self.settings.forgetting_window,
            "reader": self.reader,
        }

    def _shadow_agrees(self, t: TargetRuntime) -> bool:
        """Whether the shadow opens and was checkpointed where the stored results were
        measured (once a process, as a warm daemon's open shadow is not looked at again):
        a shadow lost or broken while the daemon was down is found, and rebuilt, by the
        first run after the restart, not by the first with events."""
        memory: Memory | None = None
        try:
            memory = build_shadow(t)
            checkpoint = memory.checkpoint() if isinstance(memory, Checkpointed) else None
        except Exception:
            return False
        finally:
            if memory is not None:
                try:
                    memory.close()
                except Exception:
                    pass
        t.shadow_checked = (
            checkpoint is not None
            and checkpoint.get("fingerprint") == t.fingerprint
            and checkpoint.get("applied") == t.row.applied
        )
        return t.shadow_checked

    def _set_aside(self, t: TargetRuntime, exc: BaseException) -> bool:
        """A persistent shadow SQLite calls corrupt is derived data: moved aside (with its
        journal) for a post-mortem, to be rebuilt from the events in the state file. False
        when it cannot be moved (the run then fails naming it)."""
        path = str(t.options["path"])
        aside = f"{path}.corrupt-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"
        try:
            os.replace(path, aside)
            for suffix in ("-journal", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.replace(path + suffix, aside + suffix)
        except OSError as error:
            log.error("corrupt shadow could not be moved aside", shadow=path, error=str(error))
            return False
        with self._changing():
            t.rebuilds += 1
        t.note = "the shadow was corrupt: rebuilt from the state file"
        t.built_fingerprint = None
        log.warning(
            "shadow corrupt: moved aside, rebuilt",
            target=t.name,
            shadow=path,
            moved_to=os.path.basename(aside),
            error=redact_text(f"{type(exc).__name__}: {exc}"),
            events=self.event_count,
        )
        return True

    def _close(self, t: TargetRuntime) -> None:
        if t.memory is not None:
            t.count_llm()  # what it made before it goes
            try:
                t.memory.close()
            except Exception:
                pass
        t.memory = None
        t.replay = None
        t.store = None
