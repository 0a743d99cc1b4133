"""The `mem0` memory with ``deployment = "platform"``: the hosted Mem0 Platform, through
``mem0ai``'s own ``MemoryClient``.

Mem0 as a team on the platform runs it: each timeline event is the user's turn of a
conversation, stamped with its event time (the same turn the open-source ``ingest=messages``
writes), sent with ``add`` to the shadow ``user_id`` (and ``run_id`` when given; an
``agent_id`` is refused: the platform keeps a user's turn under ``user_id`` with
``agent_id`` null, so an agent-scoped search would find none of it); the platform's own inference decides what is stored. Its processing is asynchronous:
``add`` answers an ``event_id`` and ``PENDING`` before any memory exists, so the target reads
the event (``GET /v1/event/{event_id}/``) until it is ``SUCCEEDED`` (or fails the run on
``FAILED``, or when ``wait_seconds`` pass first). With ``batch_events = N`` the adds of N
events are sent one after another and their events read once, after the Nth (and before any
probe), not after each add: the wait is paid once per batch, and the batch is one stage (the
platform may then process a batch's adds in an order of its own). Probes are the platform's v3 ``search`` with
the probe's question and the shadow scope as its v2 ``filters`` (no key filter of healthd's);
the reader reads the text served. ``reset`` is ``delete_all`` on the shadow scope, itself
queued on the platform and waited for the same way.

Organisation and project come from the API key (the client's ``/v1/ping/``); ``org_id`` and
``project_id`` in the configuration are what the team expects, checked against them at
start (a key of another project is one line, exit 2). The key is read only from the
environment variable ``api_key_env`` names (``MEM0_API_KEY``). Every HTTP call is bounded in
total time (``timeout_seconds``) and size (``max_response_bytes``).

The platform's own LLM and embedding calls are made inside it and reported to no one: what
healthd counts (:mod:`healthd.llm_usage`) are its own requests that cause them, ``ingest``
(an ``add``) and ``search``, and ``max_llm_calls_per_run`` refuses an ``add`` before it is
sent; ``max_llm_tokens_per_day`` cannot be kept (no tokens are reported).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError, shorten
from healthd.llm_usage import LLMUsage
from healthd.logging import env_secret
from healthd.memory._answers import Count, Id, Shape, check
from healthd.memory._mem0_config import DEFAULT_USER, scope_ids, turn
from healthd.memory._offline import first_line, package_versions
from healthd.memory._options import (
    batch_option,
    integer,
    reject_unknown,
    sweeps_option,
    switch,
    url_option,
)
from healthd.memory.fingerprint import METADATA_KEY, RetrievalFingerprint
from healthd.model import Answer, ChangeEvent, FactKey, Probe, is_sweep

DEFAULT_HOST = "https://api.mem0.ai"
DEFAULT_KEY_ENV = "MEM0_API_KEY"
PLATFORM_TOP_K = 10  # the platform's search default
LIST_PAGE = 200  # a get-all page: the largest the platform gives (get-memories: 1-200)
SWITCHES = {
    "deployment",
    "host",
    "host_env",
    "api_key_env",
    "org_id",
    "project_id",
    "user_id",
    "agent_id",
    "run_id",
    "shadow",
    "top_k",
    "threshold",
    "rerank",
    "timeout_seconds",
    "wait_seconds",
    "batch_events",
    "sweeps",
    "max_response_bytes",
}
DONE = ("SUCCEEDED", "FAILED")
#: What healthd cannot count of what a platform target causes.
NOT_COUNTED = (
    "the platform's own LLM and embedding calls (its inference on each add, its search's "
    "embeddings) are made inside it and reported to no one: counted instead are healthd's "
    "requests that cause them (ingest: an add; search: a search)"
)


class _Bounded:
    """An httpx transport whose every request ends within ``seconds`` in all (connecting,
    sending, and reading the whole body) and whose answer is at most ``limit`` bytes."""

    def __init__(self, seconds: float, limit: int) -> None:
        import httpx

        self._inner = httpx.HTTPTransport(retries=0)
        self._seconds, self._limit = seconds, limit

    def handle_request(self, request: Any) -> Any:
        import httpx

        deadline = time.monotonic() + self._seconds
        request.extensions["timeout"] = httpx.Timeout(self._seconds).as_dict()
        response = self._inner.handle_request(request)
        body = bytearray()
        try:
            for chunk in cast(Iterable[bytes], response.stream):
                body.extend(chunk)
                if len(body) > self._limit:
                    raise httpx.ReadError(
                        f"answer over {self._limit} bytes from {request.url.path}", request=request
                    )
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(
                        f"answer not read within {self._seconds:g} s", request=request
                    )
        finally:
            response.close()
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            content=bytes(body),
            request=request,
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
        )

    def close(self) -> None:
        self._inner.close()


class Mem0PlatformMemory:
    kind = "mem0"

    def __init__(
        self,
        *,
        api_key: str,
        host: str = DEFAULT_HOST,
        org_id: str | None = None,
        project_id: str | None = None,
        user_id: str,
        run_id: str | None = None,
        top_k: int = PLATFORM_TOP_K,
        threshold: float | None = None,
        rerank: bool = False,
        timeout_seconds: float = 30,
        wait_seconds: float = 300,
        batch_events: int = 1,
        sweeps: str = "subject",
        max_response_bytes: int = 16 << 20,
    ) -> None:
        from healthd.memory._mem0_library import import_mem0

        import_mem0()  # telemetry off and Mem0's home out of the user's, before the client
        import httpx
        from mem0.client.main import MemoryClient

        scope = {"user_id": user_id, "run_id": run_id}
        self._scope = {k: v for k, v in scope.items() if v}
        self.top_k, self.threshold, self.rerank = top_k, threshold, rerank
        self.wait_seconds = wait_seconds
        self.events_read = 0  # event status reads, for the benchmark
        # adds sent and not yet waited for: (platform event id, what it was); one wait per
        # ``batch_events`` of them, or before the next probe
        self.batch_events = batch_events
        self._pending: list[tuple[str, str]] = []
        self.waits = 0
        self._usage = LLMUsage([NOT_COUNTED])
        self.sweeps = self._usage.sweeps = sweeps
        transport = _Bounded(timeout_seconds, max_response_bytes)
        http = httpx.Client(transport=transport, timeout=timeout_seconds)  # type: ignore[arg-type]
        try:
            self._client = MemoryClient(api_key=api_key, host=host, client=http)
        except Exception as exc:  # the client pings the platform when built
            http.close()
            raise TargetError(f"mem0 platform at {host}: {_why(exc)}") from None
        expected = {"org_id": org_id, "project_id": project_id}
        for name, want in expected.items():
            got = getattr(self._client, name)
            if want and got != want:
                self.close()
                raise TargetError(
                    f"mem0 platform: the key in the environment belongs to {name} {got!r}, "
                    f"not {want!r} as configured (use that project's key, or fix {name})"
                )
        self.org_id, self.project_id = self._client.org_id, self._client.project_id
        self._fingerprint = RetrievalFingerprint.of(
            f"mem0-platform:{host.rstrip('/')}/{self.org_id}/{self.project_id}",
            0,  # the platform's embedder and its size are not told to clients
            {**package_versions("mem0ai"), "api": "v3"},
        )

    # --- the Memory protocol ---------------------------------------------------------------

    def reset(self) -> None:
        self._settle()
        self._check_owned()
        try:
            queued = self._client.delete_all(**self._scope)
            if queued.get("event_id"):
                self._wait(str(queued["event_id"]), "delete_all")
        except MemoryAdapterError:
            raise
        except Exception as exc:
            raise MemoryAdapterError(f"mem0 platform reset of {self._scope}: {_why(exc)}") from exc

    def apply(self, event: ChangeEvent) -> None:
        if self.sweeps == "off" and is_sweep(event):
            return  # the platform is not told its facts still hold
        self._add([event])

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """A revalidation sweep's events about one subject, as one turn (one add)."""
        self._add(events)

    def _add(self, events: list[ChangeEvent]) -> None:
        event = events[0]
        metadata = {
            "healthd_event": event.id,
            "written_at": event.timestamp.isoformat(),
            "validated_at": event.timestamp.isoformat(),
            METADATA_KEY: self._fingerprint.id,
        }
        if len(self._pending) >= self.batch_events:
            self._settle()
        self._usage.sent("ingest", writing=True)  # refused here, unsent, past a budget
        try:
            queued = self._client.add([turn(*events)], metadata=metadata, **self._scope)
        except Exception as exc:
            raise MemoryAdapterError(
                f"mem0 platform add of event {event.id!r}: {_why(exc)}"
            ) from exc
        event_id = queued.get("event_id") if isinstance(queued, Mapping) else None
        if not event_id:
            raise MemoryAdapterError(
                f"mem0 platform add of event {event.id!r}: no event_id in the answer "
                f"({shorten(str(queued), 120)})"
            )
        self._pending.append((str(event_id), f"add of event {event.id!r}"))
        if len(self._pending) >= self.batch_events:
            self._settle()

    def answer(self, probe: Probe, at: datetime) -> Answer:
        from healthd.memory._mem0_library import served_item, when

        options: dict[str, Any] = {"top_k": self.top_k}
        if self.threshold is not None:
            options["threshold"] = self.threshold
        if self.rerank:
            options["rerank"] = True
        self._settle()
        self._usage.sent("search", writing=False)
        try:
            found = self._client.search(probe.question, filters=self._filters(), **options)
        except Exception as exc:
            raise MemoryAdapterError(
                f"mem0 platform search for probe {probe.id!r}: {_why(exc)}"
            ) from exc
        rows = found.get("results") if isinstance(found, Mapping) else None
        if not isinstance(rows, list):
            raise MemoryAdapterError(
                f"mem0 platform search for probe {probe.id!r}: no results list in the answer"
            )
        check(_Found, found, f"mem0 platform search for probe {probe.id!r}", "Mem0's API")
        # What the platform serves; the reader reads the text. Equally similar texts' scores
        # differ in their last bits from one call to the next: rounded, equal scores are
        # ordered newest first, then by record (as the open-source target does). The
        # platform's created_at is its own clock, not the replay's: a memory without
        # healthd's stamps has no write time.
        served = [
            (
                round(float(row.get("score") or 0.0), 6),
                served_item(row, self._fingerprint, created_at_is_replay_time=False),
            )
            for row in rows
        ]
        served.sort(key=lambda r: (-r[0], -when(r[1].written_at), r[1].record_id))
        return Answer(probe.id, (), tuple(item for _, item in served))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        return None  # what the platform infers from a turn may answer any probe

    #: an add can be refused by max_llm_calls_per_run (no tokens are reported to keep a
    #: max_llm_tokens_per_day: refused in healthd.memory.build_memory)
    llm_budgets = True

    def llm_usage(self) -> LLMUsage:
        """healthd's requests that make the platform call its LLM and embedder."""
        return self._usage

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.client.close()
            self._client = None

    # --- the platform's events --------------------------------------------------------------

    def _filters(self) -> dict[str, Any]:
        if len(self._scope) == 1:
            return dict(self._scope)
        return {"AND": [{name: value} for name, value in self._scope.items()]}

    def _check_owned(self) -> None:
        """Every memory of the shadow scope, page by page, carries healthd's stamps (the
        metadata of the add that made it): a scope holding another's memories (a real
        user's id given by mistake) is not healthd's to delete."""
        where = f"mem0 platform reset of {self._scope}: listing its memories"
        seen: set[str] = set()
        foreign, example, page = 0, "", 1
        counted: int | None = None  # how many the platform says the scope holds
        while True:
            try:
                found = self._client.get_all(  # expired ones too: delete_all takes them
                    filters=self._filters(), page=page, page_size=LIST_PAGE, show_expired=True
                )
            except Exception as exc:
                raise MemoryAdapterError(f"{where}: {_why(exc)}") from exc
            listed = check(_Listed, found, where, "Mem0's API")
            new = [row for row in listed.results if row.id not in seen]
            if listed.results and not new:  # (so the listing ends: each page brings new ones)
                raise MemoryAdapterError(f"{where}: page {page} lists only memories listed before")
            for row in new:
                seen.add(row.id)
                if METADATA_KEY not in (row.metadata or {}):
                    foreign += 1
                    example = example or row.id
            counted = listed.count if listed.count is not None else counted
            if not listed.next or not listed.results:
                break
            if counted is not None and page * LIST_PAGE >= counted:  # (so the listing ends)
                raise MemoryAdapterError(
                    f"{where}: page {page + 1} offered past the {counted} memories it counts; "
                    "nothing was deleted"
                )
            page += 1
        total = len(seen)
        if counted is not None and total < counted:  # offset pages over an unstable order
            raise MemoryAdapterError(
                f"{where}: its pages showed {total} of the {counted} memories it counts (one "
                "listed twice, another never); nothing was deleted; reset again"
            )
        if foreign:
            raise ShadowViolation(
                f"mem0 platform user_id {self._scope['user_id']!r}: {foreign} of its {total} "
                f"memories {'was' if foreign == 1 else 'were'} not written by healthd (no "
                f"{METADATA_KEY} in its metadata, e.g. {example}): it may be a real user's; "
                "nothing was deleted; choose another user_id for the shadow"
            )

    def _settle(self) -> None:
        """Wait, once, for every add sent since the last wait (in the order they were sent);
        a failed one fails the run naming its event."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        self.waits += 1
        for event_id, what in pending:
            self._wait(event_id, what)

    def _wait(self, event_id: str, what: str) -> None:
        """Until the platform has processed the event, read from its status, within
        ``wait_seconds``: polled quickly at first, then every second at most."""
        deadline = time.monotonic() + self.wait_seconds
        pause, status = 0.05, "PENDING"
        while True:
            try:
                response = self._client.client.get(f"/v1/event/{event_id}/")
                self.events_read += 1
                response.raise_for_status()
                state = response.json()
            except Exception as exc:
                raise MemoryAdapterError(
                    f"mem0 platform {what}: event {event_id} unreadable: {_why(exc)}"
                ) from exc
            status = str(state.get("status"))
            if status == "SUCCEEDED":
                return
            if status == "FAILED":
                raise MemoryAdapterError(
                    f"mem0 platform {what}: event {event_id} FAILED: "
                    f"{shorten(str(state.get('error') or 'no error given'), 200)}"
                )
            if status not in ("PENDING", "RUNNING"):
                raise MemoryAdapterError(
                    f"mem0 platform {what}: event {event_id} has unknown status {status!r}"
                )
            if time.monotonic() + pause > deadline:
                raise MemoryAdapterError(
                    f"mem0 platform {what}: event {event_id} still {status} after "
                    f"{self.wait_seconds:g} s (wait_seconds)"
                )
            time.sleep(pause)
            pause = min(1.0, pause * 2)


class _Memory(Shape):
    """A search result as the platform's API reference gives it, the fields healthd reads."""

    id: Id
    memory: str
    score: float | None = None
    metadata: dict[str, object] | None = None


class _Found(Shape):
    results: list[_Memory]


class _Listed(Shape):
    """A get-all page: how many the scope holds (the v3 envelope's ``count``), the next
    page's address and the page's memories."""

    count: Count | None = None
    next: str | None = None
    results: list[_Memory]


def _why(exc: BaseException) -> str:
    """A client error as one line: the platform's own message where it gave one."""
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message.strip():
        code = getattr(exc, "error_code", None)
        text = message.strip().splitlines()[0]
        return shorten(f"{code}: {text}" if code else text, 300)
    response = getattr(exc, "response", None)  # httpx's HTTPStatusError (the event reads)
    if response is not None and getattr(response, "status_code", None):
        try:
            body = response.json()
        except ValueError:
            body = None
        said = body.get("error") or body.get("detail") if isinstance(body, Mapping) else None
        if isinstance(said, str) and said.strip():
            return shorten(f"HTTP {response.status_code}: {said.strip().splitlines()[0]}", 300)
    text = first_line(exc)
    if text.startswith("ValueError: Error: "):  # how MemoryClient reports a refused ping
        text = text[len("ValueError: Error: ") :]
    return shorten(text, 300)


def platform_memory(options: Mapping[str, Any]) -> Mem0PlatformMemory:
    """``kind = "mem0"`` with ``deployment = "platform"``."""
    reject_unknown(options, SWITCHES, "mem0 with deployment=platform")
    if not switch(options, "shadow", False):
        raise ShadowViolation(
            f"mem0 platform user_id {options.get('user_id', DEFAULT_USER)!r} is not declared "
            "shadow: a platform project holds real users' memories; set shadow=on for a "
            "user_id healthd owns"
        )
    user_id, agent_id, run_id = scope_ids(options, "mem0 platform")
    if agent_id is not None:
        raise TargetError(
            "mem0 platform: agent_id cannot scope the shadow: the platform keeps what a "
            "user's turn says under user_id with agent_id null, so a search or a reset "
            "scoped to agent_id finds none of it (docs.mem0.ai/platform/features/"
            "entity-scoped-memory); scope it with user_id (and run_id)"
        )
    key_env = str(options.get("api_key_env", DEFAULT_KEY_ENV))
    if key_env not in os.environ or not os.environ[key_env]:
        raise TargetError(
            f"mem0 platform: environment variable {key_env} is not set (named by "
            "api_key_env; it holds the Mem0 API key)"
        )
    api_key = env_secret(key_env)
    host = url_option(options, "host", DEFAULT_HOST, "mem0 platform")
    threshold = None
    if "threshold" in options:
        try:
            threshold = float(str(options["threshold"]))
        except ValueError:
            raise TargetError(f"switch threshold={options['threshold']!r}: a number") from None
        if not 0.0 <= threshold <= 1.0:
            raise TargetError(f"switch threshold={threshold}: between 0 and 1")
    top_k = integer(options, "top_k", PLATFORM_TOP_K)
    if top_k > 1000:
        raise TargetError(f"switch top_k={top_k}: the platform returns at most 1000")
    return Mem0PlatformMemory(
        api_key=api_key,
        host=host,
        org_id=str(options["org_id"]) if options.get("org_id") else None,
        project_id=str(options["project_id"]) if options.get("project_id") else None,
        user_id=user_id,
        run_id=run_id,
        top_k=top_k,
        threshold=threshold,
        rerank=switch(options, "rerank", False),
        timeout_seconds=integer(options, "timeout_seconds", 30),
        wait_seconds=integer(options, "wait_seconds", 300),
        batch_events=batch_option(options),
        sweeps=sweeps_option(options),
        max_response_bytes=integer(options, "max_response_bytes", 16 << 20, minimum=1024),
    )
