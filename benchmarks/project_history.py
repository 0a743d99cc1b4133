"""Timelines shaped like a project's history, for the scale benchmarks.

A project's facts are not churn on a few keys: modules appear over the whole history and
most of them stay, so the live set is stable and grows; a module's facts (its language,
dependencies, owners, decisions, requirements) live for years and are revised many times,
a few of them far more than the rest; modules are removed (their facts cascade with them)
and some come back later; a shared platform module has many dependents (fan-out); and
changes come in bursts: a monorepo's bump day revises one dependency across many modules
at one instant, a reorganisation moves the owners of many modules at once. A few changes
are found late, with an event time before the newest one.

``keys`` is the size the live set grows to (steadily, reached at 60 % of the history and
held there); ``events`` is the length. Written with nothing but the standard library, so the
independent floor (``benchmarks/floor.py``) and healthd read the same file.

    python benchmarks/project_history.py EVENTS KEYS OUT.jsonl [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

PREDICATES = (
    ("tech", "language"),
    ("tech", "runtime"),
    ("tech", "framework"),
    ("tech", "dependency:postgres"),
    ("tech", "dependency:redis"),
    ("tech", "dependency:kafka-client"),
    ("tech", "dependency:grpc"),
    ("tech", "dependency:platform-lib"),
    ("ownership", "owners"),
    ("ownership", "on_call"),
    ("decision", "broker"),
    ("decision", "deploy_strategy"),
    ("requirement", "latency_budget"),
    ("requirement", "retention"),
)
PLATFORM = "platform"  # the shared module every ``dependency:platform-lib`` depends on
START = datetime(2022, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=3 * 365)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _fact(key: tuple[str, str], value: str, domain: str) -> dict[str, str]:
    return {"subject": key[0], "predicate": key[1], "value": value, "domain": domain}


def _dep(key: tuple[str, str]) -> dict[str, str]:
    return {"subject": key[0], "predicate": key[1]}


class _Project:
    def __init__(self, events: int, keys: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.events = events
        self.keys = max(keys, 20)
        self.step = SPAN / events
        self.clock = START
        self.n = 0
        # live facts: key -> (value, domain, depends_on keys)
        self.live: dict[tuple[str, str], tuple[str, str, tuple[tuple[str, str], ...]]] = {}
        self.live_list: list[tuple[str, str]] = []  # for sampling; holes are skipped
        self.modules: list[str] = []  # modules that exist now
        self.removed: list[str] = []  # modules removed, which may come back
        self.next_module = 0
        self.by_module: dict[str, set[tuple[str, str]]] = {}

    # -- emitting -------------------------------------------------------------------------

    def _event(self, kind: str, key: tuple[str, str], value: str, domain: str, **extra: Any) -> Any:
        self.n += 1
        at = extra.pop("at", self.clock)
        out = {
            "id": f"p-{self.n}",
            "type": kind,
            "timestamp": _stamp(at),
            "source": "bench",
            "fact": _fact(key, value, domain),
        }
        deps = extra.pop("deps", ())
        if deps:
            out["depends_on"] = [_dep(d) for d in deps]
        out.update(extra)
        return out

    def _add(self, key: tuple[str, str], value: str, domain: str, deps: tuple[Any, ...]) -> Any:
        self.live[key] = (value, domain, deps)
        self.live_list.append(key)
        self.by_module.setdefault(key[0], set()).add(key)
        return self._event("added", key, value, domain, deps=deps)

    def _revise(self, key: tuple[str, str], value: str, at: datetime | None = None) -> Any:
        old, domain, deps = self.live[key]
        if value == old:
            value += "'"
        self.live[key] = (value, domain, deps)
        extra: dict[str, Any] = {"previous": _fact(key, old, domain), "deps": deps}
        if at is not None:
            extra["at"] = at
        return self._event("revised", key, value, domain, **extra)

    def _pick_live(self) -> tuple[str, str]:
        """A live fact, skewed: the first-added facts of a module are revised most, so a
        few long-lived keys collect most of the history."""
        while True:
            i = int(len(self.live_list) * (self.rng.random() ** 1.6))
            key = self.live_list[i]
            if key in self.live:
                return key
            self.live_list[i] = self.live_list[-1]  # drop a hole
            self.live_list.pop()

    # -- what happens ---------------------------------------------------------------------

    def _new_module(self, name: str | None = None) -> Iterator[Any]:
        if name is not None:
            pass
        elif self.removed and self.rng.random() < 0.3:
            name = self.removed.pop(self.rng.randrange(len(self.removed)))  # comes back
        else:
            name = f"mod-{self.next_module:05d}"
            self.next_module += 1
        self.modules.append(name)
        exists = (name, "exists")
        yield self._add(exists, "true", "tech", (PLATFORM_KEY,) if name != PLATFORM else ())

    def _new_fact(self) -> Iterator[Any]:
        name = self.rng.choice(self.modules)
        for _ in range(4):
            domain, predicate = self.rng.choice(PREDICATES)
            key = (name, predicate)
            if key not in self.live:
                deps: tuple[tuple[str, str], ...] = ((name, "exists"),)
                if predicate == "dependency:platform-lib" and name != PLATFORM:
                    deps += (PLATFORM_KEY,)
                yield self._add(key, f"v{self.rng.randint(1, 9)}", domain, deps)
                return
        yield from self._new_module()

    def _remove_module(self) -> Iterator[Any]:
        candidates = [m for m in self.modules if m != PLATFORM]
        if not candidates:
            return
        name = self.rng.choice(candidates)
        self.modules.remove(name)
        self.removed.append(name)
        exists = (name, "exists")
        value, domain, _ = self.live[exists]
        for key in self.by_module.pop(name, ()):
            self.live.pop(key, None)  # the cascade ends them; no event of their own
        yield self._event("invalidated", exists, value, domain, reason="module removed")

    def _remove_fact(self) -> Iterator[Any]:
        key = self._pick_live()
        if key[1] == "exists":
            return
        value, domain, deps = self.live.pop(key)
        self.by_module[key[0]].discard(key)
        yield self._event("invalidated", key, value, domain, reason="removed", deps=deps)

    def _bump_day(self) -> Iterator[Any]:
        """One dependency bumped across every module that has it, at one instant."""
        predicate = self.rng.choice([p for d, p in PREDICATES if p.startswith("dependency:")])
        version = f"{self.rng.randint(1, 40)}.{self.rng.randint(0, 20)}"
        for name in list(self.modules):
            if (name, predicate) in self.live:
                yield self._revise((name, predicate), version)

    def _reorganisation(self) -> Iterator[Any]:
        team = f"team-{self.rng.randint(1, 60)}"
        for name in self.rng.sample(self.modules, max(1, len(self.modules) // 5)):
            if (name, "owners") in self.live:
                yield self._revise((name, "owners"), team)

    def history(self) -> Iterator[Any]:
        yield from self._new_module(PLATFORM)
        grow_until = int(self.events * 0.6)
        burst_every = max(self.events // 25, 200)
        while self.n < self.events:
            self.clock += self.step
            roll = self.rng.random()
            # the live set follows a ramp to ``keys`` at 60 % of the history, then holds:
            # whatever was removed is made up for by new facts and modules coming back
            wanted = max(3, self.keys * min(1.0, self.n / max(grow_until, 1)))
            if self.n % burst_every == burst_every - 1 and len(self.modules) > 5:
                burst = self._bump_day() if self.rng.random() < 0.6 else self._reorganisation()
            elif len(self.live) < wanted:
                burst = self._new_module() if self.rng.random() < 0.12 else self._new_fact()
            elif roll < 0.60:
                key = self._pick_live()
                value, domain, deps = self.live[key]
                burst = iter([self._event("revalidated", key, value, domain, deps=deps)])
            elif roll < 0.97:
                key = self._pick_live()
                late = None
                if self.rng.random() < 0.03:  # found late, happened earlier
                    late = self.clock - self.step * self.rng.randint(5, 200)
                value = f"v{self.rng.randint(1, 99)}" if key[1] != "exists" else "true"
                burst = (
                    iter([self._revise(key, value, late)])
                    if key[1] != "exists"
                    else iter([self._event("revalidated", key, value, self.live[key][1])])
                )
            elif roll < 0.995 or len(self.modules) < 10:
                burst = self._remove_fact()
            else:
                burst = self._remove_module()
            for event in burst:
                yield event
                if self.n >= self.events:
                    return


PLATFORM_KEY = (PLATFORM, "exists")


def project_history(events: int, keys: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """Timeline events as JSON objects, in arrival order."""
    return _Project(events, keys, seed).history()


def write(events: int, keys: int, path: str, seed: int = 7) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for event in project_history(events, keys, seed):
            out.write(json.dumps(event, separators=(",", ":")))
            out.write("\n")
            count += 1
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("events", type=int)
    parser.add_argument("keys", type=int)
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    write(args.events, args.keys, args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
