"""Memory adapters: a shadow instance of a memory system that healthd replays into and probes.

Adapters register by kind name; a target is written ``kind`` or ``kind:switch=value,...``
(for example ``reference:ttl=off,supersession=off``). An unknown kind or switch fails with a
:class:`TargetError` before anything runs.

One switch belongs to healthd, not to the memory: ``baseline=on|off`` marks a target as a
baseline, a memory run beside the real ones to show what failing looks like (``naive`` is
one unless switched off). A baseline's series carry ``role="baseline"`` and no shipped alert
selects them; everything else is a ``role="subject"``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from healthd.errors import TargetError
from healthd.llm_budget import CALLS, TOKENS, LLMBudget, budget_options
from healthd.llm_usage import LLMUsage, empty_block
from healthd.memory._options import UnknownSwitch, switch
from healthd.memory.fingerprint import UNDECLARED, RetrievalFingerprint
from healthd.model import Answer, ChangeEvent, FactKey, Probe
from healthd.repeats import REPEATS, repeats_option


@runtime_checkable
class Memory(Protocol):
    def reset(self) -> None:
        """Wipe this shadow scope, and nothing else."""

    def apply(self, event: ChangeEvent) -> None:
        """Ingest one change."""

    def answer(self, probe: Probe, at: datetime) -> Answer:
        """The facts the memory would use to answer ``probe`` at ``at``."""

    def close(self) -> None: ...


@runtime_checkable
class ChangeTracking(Protocol):
    """A memory that can say which keys' answers may have changed since it was last asked."""

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        """Keys written since the last call, plus keys whose answers change with time (an
        expiry passing) up to ``at``. Draining: a second call returns only what is new.
        None means the memory cannot tell this time."""


@runtime_checkable
class RunScoped(Protocol):
    """A memory that re-checks something (its scope still being a shadow) once per run."""

    def begin_run(self) -> None:
        """Called before a run's first write or query."""


@runtime_checkable
class Releasing(Protocol):
    """A memory that caches per key what its own store holds, and can let go of it."""

    def release(self, keep: int) -> int:
        """Keep the cache of only the ``keep`` keys used last; how many were let go."""


@runtime_checkable
class EventExpiryReporting(Protocol):
    """A memory whose raw events expire by the setting they were created under (AgentCore's
    ``eventExpiryDuration``): it reports its shadow's events per expiry."""

    def event_expiry_report(self) -> dict[str, Any]:
        """``{"current_days": N, "populations": {"30": n, ...}, "since": {"30": t, ...},
        "failed_extractions": n}``: events held per expiry (days), when the first of each
        was written (Unix time), and the run's events the memory failed to extract."""


@runtime_checkable
class LLMCounting(Protocol):
    """A memory whose product calls an LLM or embedding endpoint through clients healthd
    can count (:mod:`healthd.memory._llm_count`)."""

    def llm_usage(self) -> LLMUsage: ...


@runtime_checkable
class SweepBatching(Protocol):
    """A memory whose writes call an LLM, told a revalidation sweep (every fact still true,
    stamped by a source on its schedule) as its ``sweeps`` option says: ``subject``, one
    statement per subject (:meth:`apply_sweep`, one write where there were as many as the
    subject's facts); ``each``, every sweep event written as any other; ``off``, none
    written (the memory never hears that its facts still hold)."""

    sweeps: str

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """Write sweep events about one subject, at one time, as one statement."""


#: What healthd causes but cannot count, by the kind of memory that makes the calls itself.
NOT_COUNTED = {
    "http": "the service's own LLM and embedding calls, if it makes any, are made inside it; "
    "it reports none to healthd",
    "agentcore": "AgentCore's own model calls (its strategies' extraction, its search's "
    "embeddings) are made inside the service, which reports no usage",
}


def upper_bound(memory: Memory) -> str | None:
    """Why the memory's figures are an upper bound of the product's, not its own: what
    healthd decides for it (its own text instead of the product's ingestion, its own
    updates and deletes), or None when the product decides what it keeps. A memory says
    so in its ``upper_bound`` attribute."""
    said = getattr(memory, "upper_bound", None)
    return said if isinstance(said, str) and said else None


def llm_block(memory: Memory, kind: str) -> dict[str, Any]:
    """The target's ``llm`` block so far (see :mod:`healthd.llm_usage`); counting starts
    again when ``take``."""
    if isinstance(memory, LLMCounting):
        return memory.llm_usage().block()
    return empty_block([NOT_COUNTED[kind]] if kind in NOT_COUNTED else [])


def take_llm_block(memory: Memory | None, kind: str) -> dict[str, Any]:
    """:func:`llm_block`, counting started again from nothing (a daemon's run)."""
    if isinstance(memory, LLMCounting):
        return memory.llm_usage().take()
    return empty_block([NOT_COUNTED[kind]] if kind in NOT_COUNTED else [])


def batch_events(memory: Memory) -> int:
    """How many events are written to ``memory`` before it is read again (its
    ``batch_events``): a memory that must be waited for after a write (AgentCore's
    consistency wait) is waited for once per batch, and the batch is one stage. 1 (the
    default): every change is a stage."""
    value = getattr(memory, "batch_events", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


@runtime_checkable
class Checkpointed(Protocol):
    """A persistent memory whose writes can be made durable in batches, each with a
    checkpoint saying how far the replay had got, so a killed run resumes from there."""

    def batch_writes(self) -> None:
        """From now on writes become durable only at :meth:`commit`."""

    def commit(self, checkpoint: Mapping[str, Any]) -> None:
        """Make the writes since the last commit durable together with ``checkpoint``."""

    def checkpoint(self) -> dict[str, Any] | None:
        """The checkpoint of the last commit, or None."""


@runtime_checkable
class Fingerprinted(Protocol):
    """A memory that can say what its retrieval runs on (embedding model, libraries)."""

    def retrieval_fingerprint(self) -> RetrievalFingerprint: ...


def retrieval_fingerprint(memory: Memory, reader: str | None = None) -> RetrievalFingerprint:
    """The memory's retrieval fingerprint, with ``reader`` the label of the reader its
    served items are read by; :data:`UNDECLARED` for one that has none."""
    if not isinstance(memory, Fingerprinted):
        return UNDECLARED
    declared = memory.retrieval_fingerprint()
    return replace(declared, reader=reader) if reader else declared


BASELINE_KINDS = frozenset({"naive"})
BASELINE = "baseline"
SUBJECT = "subject"


def is_baseline(kind: str, baseline: bool | None = None) -> bool:
    """Whether a target is a baseline: as declared, else by its kind."""
    return kind in BASELINE_KINDS if baseline is None else baseline


def target_role(kind: str, baseline: bool | None = None) -> str:
    """The ``role`` label of a target's series: ``baseline`` or ``subject``."""
    return BASELINE if is_baseline(kind, baseline) else SUBJECT


@dataclass(frozen=True)
class TargetSpec:
    """A parsed ``kind:switch=value,...`` target."""

    kind: str
    options: Mapping[str, str] = field(default_factory=dict)
    name: str = ""
    baseline: bool | None = None  # None: by kind (see is_baseline)

    @property
    def label(self) -> str:
        return self.name or self.kind

    @property
    def role(self) -> str:
        return target_role(self.kind, self.baseline)

    @property
    def repeats(self) -> int:
        """Replays per run (the ``repeats`` option, 1 when not given: :mod:`healthd.repeats`)."""
        try:
            return repeats_option(self.options)[1]
        except TargetError as exc:
            raise TargetError(f"target {self.label!r}: {exc}") from None


MemoryFactory = Callable[[Mapping[str, Any]], Memory]
_REGISTRY: dict[str, MemoryFactory] = {}


def register_memory(kind: str) -> Callable[[MemoryFactory], MemoryFactory]:
    def decorator(factory: MemoryFactory) -> MemoryFactory:
        _REGISTRY[kind] = factory
        return factory

    return decorator


def memory_kinds() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


#: The user (and password) a URL in a switch carries: ``http://bob:pw@host`` (a switch
#: such as ``max_llm_tokens_per_day=20000`` is no secret, and stays in the name)
_URL_CREDENTIALS = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@,]*@")
#: A URL's query in a switch (``?api_key=...``), up to the switch's end
_URL_QUERY = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s,?]*)\?[^\s,]*")


def parse_target(text: str) -> TargetSpec:
    """Parse ``kind`` or ``kind:a=b,c=d``; the kind must be registered."""
    # (its name is shown in every report and label: a password in a URL is not, nor a query,
    # which may hold a key)
    shown = _URL_QUERY.sub(r"\1?[REDACTED]", _URL_CREDENTIALS.sub(r"\1[REDACTED]@", text.strip()))
    kind, _, rest = text.strip().partition(":")
    if not kind:
        raise TargetError(f"target {shown!r}: missing kind")
    _load_builtin(kind)
    if kind not in _REGISTRY:
        raise TargetError(
            f"target {shown!r}: unknown kind {kind!r}; known kinds: {', '.join(memory_kinds())}"
        )
    options: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise TargetError(f"target {shown!r}: switch {part!r} is not name=value")
        if name.strip() in options:
            raise TargetError(f"target {shown!r}: switch {name.strip()!r} given twice")
        options[name.strip()] = value.strip()
    baseline = None
    if BASELINE in options:
        try:
            baseline = switch(options, BASELINE, False)
        except TargetError as exc:
            raise TargetError(f"target {shown!r}: {exc}") from None
        del options[BASELINE]
    return TargetSpec(kind, options, shown, baseline)


def build_memory(spec: TargetSpec, **overrides: Any) -> Memory:
    _load_builtin(spec.kind)
    options: dict[str, Any] = dict(spec.options)
    options.update(overrides)
    try:
        options, budgets = budget_options(options)
        options, _ = repeats_option(options)
        if TOKENS in budgets and _hosted(spec.kind, options):
            raise TargetError(
                f"{TOKENS}: a {_hosted(spec.kind, options)} target's service makes its LLM "
                "calls itself and reports no tokens to healthd; only "
                f"{CALLS} can be kept (on the requests healthd sends it)"
            )
        memory = _REGISTRY[spec.kind](options)
        if budgets:
            _set_budget(memory, spec.kind, budgets)
        return memory
    except UnknownSwitch as exc:  # the kind lists its own; these healthd takes for every kind
        raise TargetError(
            f"target {spec.label!r}: {exc}; and for every kind: "
            f"{', '.join((BASELINE, CALLS, TOKENS, REPEATS))}"
        ) from None
    except TargetError as exc:
        raise TargetError(f"target {spec.label!r}: {exc}") from None


def _set_budget(memory: Memory, kind: str, budgets: dict[str, int]) -> None:
    """Give a memory whose writes call an LLM healthd counts its budgets
    (:mod:`healthd.llm_budget`); any other memory refuses them."""
    if not (isinstance(memory, LLMCounting) and getattr(memory, "llm_budgets", False)):
        memory.close()
        raise TargetError(
            f"{', '.join(budgets)}: a {kind} target makes no LLM call healthd counts and "
            "can refuse (LLM budgets apply to mem0, graphiti, langmem, zep and letta targets)"
        )
    memory.llm_usage().budget = LLMBudget(budgets.get(CALLS), budgets.get(TOKENS))


def _hosted(kind: str, options: Mapping[str, Any]) -> str | None:
    """The name of a hosted service whose own LLM calls healthd cannot see (so no tokens to
    budget), or None."""
    if kind == "zep":
        return "zep"
    if kind == "mem0" and str(options.get("deployment", "local")) == "platform":
        return "mem0 platform"
    return None


_BUILTIN = ("agentcore", "graphiti", "http", "langmem", "letta", "mem0", "naive", "reference",
            "zep")  # fmt: skip


def _load_builtin(kind: str | None = None) -> None:
    """Import the built-in adapters (importing registers a kind), or only ``kind``'s: a run
    that replays into the reference memory need not load the HTTP and SDK clients."""
    if kind is None:
        names: tuple[str, ...] = _BUILTIN
    else:
        names = (kind,) if kind in _BUILTIN and kind not in _REGISTRY else ()
    for name in names:
        importlib.import_module(f"healthd.memory.{name}")
