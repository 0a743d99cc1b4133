"""The `zep` memory: Zep (Graphiti's hosted form), through the ``zep-cloud`` SDK (4.x, Zep's
v4 API, ``https://api.getzep.com/api/v4``).

As a team on Zep runs it: a user whose graph Zep builds from what it is told. Each timeline
event is an episode of that user's graph (``graph.episode.add``: the v4 name of v3's
``graph.add``), the sentence saying what changed (:mod:`healthd.memory.graphiti_episodes`),
``type`` ``text`` (or ``message``: the same sentence said by ``user``), with the event's time
as its ``reference_time`` (v3's ``created_at``). Zep's own extraction, deduplication and
invalidation decide which edges exist and which end; healthd never writes an edge and never
sets ``invalid_at``/``expired_at``. Zep processes a graph's episodes asynchronously, one at a
time: the add answers a ``task``, read (``task.get``) until it has ``succeeded`` (a failed
task fails the run) within ``wait_seconds``, before the next event or any probe. With
``batch_events = N`` the episodes of N events are added one after another and their tasks
read once, after the Nth (and before any probe), not after each add: Zep still processes
them one at a time in the order added, and the wait is paid once per batch (one stage).

Probes are Zep's graph search with the probe's question: ``search_edges`` (``scope=edges``,
the default; the served text is each edge's ``fact``) or ``search_nodes`` (``scope=nodes``:
each node's ``summary``), ``reranker`` as the team chooses (``rrf`` by default, ``mmr`` with
``mmr_lambda``, ``episode_mentions``, ``cross_encoder``), ``top_k`` results. Zep's search
returns ended edges beside current ones, their ``valid_at``/``invalid_at``/``expired_at``
stamped: ``search=default`` serves them as returned; ``search=valid`` serves only edges Zep
says are valid at the probe time (``invalid_at`` unset or after it), as an agent reading
those stamps would. The reader reads the text served.

Shadow: the user (its external ``user_id``, ``healthd-shadow`` by default) is created by
healthd with the metadata ``healthd_shadow: true``; ``shadow=on`` is required, and a user of
that id which healthd did not create is refused before anything is written. ``reset``
deletes that user (and so its graph) and creates it again; nothing else is read or written.
The key is read only from the variable ``api_key_env`` names (``ZEP_API_KEY``); every call
is bounded in total time (``timeout_seconds``, no retries) and size (``max_response_bytes``).

Zep's own LLM and embedding calls are made inside it and reported to no one: what healthd
counts (:mod:`healthd.llm_usage`) are its own requests that cause them, ``ingest`` (an
episode added) and ``search``; ``max_llm_calls_per_run`` refuses an episode before it is
sent, and ``max_llm_tokens_per_day`` cannot be kept (no tokens are reported).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError, shorten
from healthd.llm_usage import LLMUsage
from healthd.logging import env_secret, get_logger
from healthd.memory import register_memory
from healthd.memory._offline import first_line, package_versions, require_extra
from healthd.memory._options import (
    batch_option,
    integer,
    reject_unknown,
    sweeps_option,
    switch,
    url_option,
)
from healthd.memory.fingerprint import METADATA_KEY, RetrievalFingerprint
from healthd.memory.graphiti_episodes import SOURCE_DESCRIPTION, episode_text
from healthd.model import Answer, ChangeEvent, FactKey, Probe, ServedItem, is_sweep

log = get_logger("healthd.memory.zep")

DEFAULT_BASE_URL = "https://api.getzep.com/api/v4"
DEFAULT_USER = "healthd-shadow"
DEFAULT_KEY_ENV = "ZEP_API_KEY"
MAX_TOP_K = 50  # search-edges and search-nodes take a page_size of 1 to 50 (v4 reference)
SHADOW_MARK = "healthd_shadow"
EPISODE_TYPES = ("text", "message")
SCOPES = ("edges", "nodes")
SEARCHES = ("default", "valid")
RERANKERS = ("rrf", "mmr", "episode_mentions", "cross_encoder")
SWITCHES = {
    "shadow",
    "user_id",
    "base_url",
    "base_url_env",
    "api_key_env",
    "episode_type",
    "scope",
    "search",
    "reranker",
    "mmr_lambda",
    "top_k",
    "timeout_seconds",
    "wait_seconds",
    "batch_events",
    "sweeps",
    "max_response_bytes",
}
#: What healthd cannot count of what a Zep target causes.
NOT_COUNTED = (
    "Zep's own LLM and embedding calls (its extraction, deduplication and invalidation of "
    "each episode, its search's embeddings) are made inside it and reported to no one: "
    "counted instead are healthd's requests that cause them (ingest: an episode added; "
    "search: a search)"
)


class ZepMemory:
    kind = "zep"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        user_id: str = DEFAULT_USER,
        episode_type: str = "text",
        scope: str = "edges",
        search: str = "default",
        reranker: str = "rrf",
        mmr_lambda: float | None = None,
        top_k: int = 10,
        timeout_seconds: float = 30,
        wait_seconds: float = 300,
        batch_events: int = 1,
        sweeps: str = "subject",
        max_response_bytes: int = 16 << 20,
    ) -> None:
        require_extra("zep_cloud", "zep", "zep")  # before httpx, which the SDK brings
        import httpx
        from zep_cloud.client import Zep

        from healthd.memory.mem0_platform import _Bounded

        self.user_id, self.episode_type = user_id, episode_type
        self.scope, self.search, self.reranker = scope, search, reranker
        self.mmr_lambda, self.top_k = mmr_lambda, top_k
        self.wait_seconds = wait_seconds
        self.tasks_read = 0  # task status reads, for the benchmark
        self.partial_tasks = 0  # episodes Zep processed only in part (a task ``partial``)
        # episodes added and not yet waited for: (task uuid, what it was); one wait per
        # ``batch_events`` of them, or before the next probe
        self.batch_events = batch_events
        self._pending: list[tuple[str, str]] = []
        self.waits = 0
        self._usage = LLMUsage([NOT_COUNTED])
        self.sweeps = self._usage.sweeps = sweeps
        self._options: Any = {"max_retries": 0, "timeout": timeout_seconds}
        transport = _Bounded(timeout_seconds, max_response_bytes)
        self._http: Any = httpx.Client(transport=transport, timeout=timeout_seconds)  # type: ignore[arg-type]
        self._client = Zep(api_key=api_key, base_url=base_url, httpx_client=self._http)
        self._where = f"zep at {base_url}"
        self._episodes: dict[str, tuple[str, datetime]] = {}  # uuid: (event id, event time)
        try:
            user = self._lookup()
        except MemoryAdapterError as exc:
            self.close()
            raise TargetError(str(exc)) from None
        try:
            _check_shadow(user, user_id)
        except ShadowViolation:
            self.close()
            raise
        self._user_uuid: str | None = user.uuid_ if user is not None else None
        self._fingerprint = RetrievalFingerprint.of(
            f"zep:{base_url.rstrip('/')}/{scope}/{reranker}",
            0,  # Zep's embedder and its size are not told to clients
            {**package_versions("zep-cloud"), "api": "v4"},
        )

    # --- the Memory protocol ---------------------------------------------------------------

    def reset(self) -> None:
        self._settle()
        user = self._lookup()
        _check_shadow(user, self.user_id)  # healthd's since start, or refused: never deleted
        if user is not None:
            self._call(lambda o: self._client.user.delete(str(user.uuid_), request_options=o),
                       "delete of the shadow user")  # fmt: skip
            deadline = time.monotonic() + self.wait_seconds
            while self._lookup() is not None:  # the delete is accepted, then done
                if time.monotonic() > deadline:
                    raise MemoryAdapterError(
                        f"{self._where}: shadow user {self.user_id!r} still there "
                        f"{self.wait_seconds:g} s after its delete (wait_seconds)"
                    )
                time.sleep(0.2)
        self._user_uuid = None
        self._episodes.clear()
        self._user()

    def apply(self, event: ChangeEvent) -> None:
        if self.sweeps == "off" and is_sweep(event):
            return  # Zep is not told its facts still hold
        self._add([event])

    def apply_sweep(self, events: list[ChangeEvent]) -> None:
        """A revalidation sweep's events about one subject, as one episode."""
        self._add(events)

    def _add(self, events: list[ChangeEvent]) -> None:
        event = events[0]
        text = "\n".join(episode_text(e) for e in events)
        data = f"user: {text}" if self.episode_type == "message" else text
        metadata = {"healthd_event": event.id, METADATA_KEY: self._fingerprint.id}
        graph = self._user()
        if len(self._pending) >= self.batch_events:
            self._settle()
        self._usage.sent("ingest", writing=True)  # refused here, unsent, past a budget
        added = self._call(
            lambda o: self._client.graph.episode.add(
                graph, data=data, type=self.episode_type, reference_time=event.timestamp.isoformat(),
                source_description=SOURCE_DESCRIPTION, metadata=metadata, request_options=o,
            ),
            f"add of event {event.id!r}",
        )  # fmt: skip
        episode, task = getattr(added, "episode", None), getattr(added, "task", None)
        if episode is None or not episode.uuid_ or task is None or not task.uuid_:
            raise MemoryAdapterError(
                f"{self._where}: add of event {event.id!r} answered no episode and task"
            )
        self._episodes[str(episode.uuid_)] = (event.id, event.timestamp)
        self._pending.append((str(task.uuid_), f"add of event {event.id!r}"))
        if len(self._pending) >= self.batch_events:
            self._settle()

    def answer(self, probe: Probe, at: datetime) -> Answer:
        graph = self._user()
        options: dict[str, Any] = {"query": probe.question, "page_size": self.top_k}
        options["reranker"] = self.reranker
        if self.mmr_lambda is not None:
            options["mmr_lambda"] = self.mmr_lambda
        search: Any = self._client.graph.search_edges
        if self.scope == "nodes":
            search = self._client.graph.search_nodes
        self._settle()
        self._usage.sent("search", writing=False)
        found = self._call(
            lambda o: search(graph, **options, request_options=o),
            f"search for probe {probe.id!r}",
        )
        rows = list(found.items or [])
        # (an edge without its fact, a node without summary or name, serves no text: the
        # SDK's types make every one of them optional)
        if self.scope == "nodes":
            served = [self._node(row) for row in rows if row.summary or row.name]
        else:
            if self.search == "valid":
                rows = [row for row in rows if _valid(row, at)]
            served = [self._edge(row) for row in rows if row.fact]
        served.sort(key=lambda r: (-r[0], -_when(r[1].written_at), r[1].record_id))
        return Answer(probe.id, (), tuple(item for _, item in served))

    def retrieval_fingerprint(self) -> RetrievalFingerprint:
        return self._fingerprint

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        return None  # what Zep makes of an episode may answer any probe

    #: an episode can be refused by max_llm_calls_per_run (no tokens are reported to keep
    #: a max_llm_tokens_per_day: refused in healthd.memory.build_memory)
    llm_budgets = True

    def llm_usage(self) -> LLMUsage:
        """healthd's requests that make Zep call its LLM and embedder."""
        return self._usage

    def close(self) -> None:
        http = getattr(self, "_http", None)
        if http is not None:
            http.close()
            self._http = None

    # --- Zep's users, tasks and search results ------------------------------------------------

    def _call(self, call: Any, what: str) -> Any:
        try:
            return call(self._options)
        except Exception as exc:
            raise MemoryAdapterError(f"{self._where}: {what}: {_why(exc)}") from exc

    def _lookup(self) -> Any:
        """The shadow user, or None when Zep has none of that id."""
        try:
            return self._client.user.lookup(user_id=self.user_id, request_options=self._options)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 404:
                return None
            raise MemoryAdapterError(
                f"{self._where}: lookup of user_id {self.user_id!r}: {_why(exc)}"
            ) from exc

    def _user(self) -> str:
        """The shadow user's uuid (its graph's address), created when missing; a user of that
        id made meanwhile by someone else is refused."""
        if self._user_uuid is not None:
            return self._user_uuid
        deadline = time.monotonic() + self.wait_seconds
        while True:
            try:
                user = self._client.user.create(
                    user_id=self.user_id, metadata={SHADOW_MARK: True},
                    first_name="healthd", last_name="shadow", request_options=self._options,
                )  # fmt: skip
                break
            except Exception as exc:
                if getattr(exc, "status_code", None) != 409 or time.monotonic() > deadline:
                    raise MemoryAdapterError(
                        f"{self._where}: creating shadow user {self.user_id!r}: {_why(exc)}"
                    ) from exc
                user = self._lookup()  # healthd's from before, another's, or being deleted
                if user is not None and (user.metadata or {}).get(SHADOW_MARK):
                    break
                if user is not None:
                    raise ShadowViolation(
                        f"zep user_id {self.user_id!r} was created by someone else"
                    ) from None
                time.sleep(0.2)
        self._user_uuid = str(user.uuid_)
        return self._user_uuid

    def _settle(self) -> None:
        """Wait, once, for every episode added since the last wait (Zep processes them in
        the order added); a failed one fails the run naming its event."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        self.waits += 1
        for task_uuid, what in pending:
            self._wait(task_uuid, what)

    def _wait(self, task_uuid: str, what: str) -> None:
        """Until Zep has processed the episode, read from its task, within ``wait_seconds``:
        polled quickly at first, then every second at most."""
        deadline = time.monotonic() + self.wait_seconds
        pause = 0.05
        while True:
            task = self._call(
                lambda o: self._client.task.get(task_uuid, request_options=o),
                f"{what}: task {task_uuid}",
            )
            self.tasks_read += 1
            status = str(task.status)
            if status == "succeeded":
                return
            if status == "partial":  # what Zep kept is measured; what it dropped is said
                self.partial_tasks += 1
                error = getattr(task.error, "message", None) or "no error given"
                log.warning("zep episode processed in part", what=what, task=task_uuid,
                            error=shorten(str(error), 200))  # fmt: skip
                return
            if status == "failed":
                error = getattr(task.error, "message", None) or "no error given"
                raise MemoryAdapterError(
                    f"{self._where}: {what}: task {task_uuid} failed: {shorten(str(error), 200)}"
                )
            if status not in ("pending", "processing"):
                raise MemoryAdapterError(
                    f"{self._where}: {what}: task {task_uuid} has unknown status {status!r}"
                )
            if time.monotonic() + pause > deadline:
                raise MemoryAdapterError(
                    f"{self._where}: {what}: task {task_uuid} still {status} after "
                    f"{self.wait_seconds:g} s (wait_seconds)"
                )
            time.sleep(pause)
            pause = min(1.0, pause * 2)

    def _told(self, episodes: list[str] | None) -> tuple[str | None, list[datetime]]:
        told = sorted(self._episodes[u] for u in episodes or () if u in self._episodes)
        first = min(told, key=lambda t: (t[1], t[0]))[0] if told else None
        return first, sorted(at for _, at in told)

    def _edge(self, edge: Any) -> tuple[float, ServedItem]:
        """An edge as the agent reads it: its fact, written when the first episode that
        stated it happened, validated when the newest one did; Zep's own stamps beside. An
        edge no episode healthd added states has no write time (never fresh)."""
        first, times = self._told(edge.episode_uuids)
        digest = hashlib.sha256(f"{edge.name}\x1f{edge.fact}".encode()).hexdigest()[:8]
        stamps = {k: str(getattr(edge, k)) for k in ("valid_at", "invalid_at", "expired_at")
                  if getattr(edge, k, None)}  # fmt: skip
        item = ServedItem(
            str(edge.fact or ""),
            f"zep:{first or edge.uuid_}:{digest}",
            times[0] if times else None,  # (its created_at is Zep's clock, not the replay's)
            times[-1] if times else None,
            stamps,
        )
        return round(float(edge.score or 0.0), 6), item

    def _node(self, node: Any) -> tuple[float, ServedItem]:
        item = ServedItem(str(node.summary or node.name or ""), f"zep-node:{node.uuid_}",
                          _time(node.created_at))  # fmt: skip
        return round(float(node.score or 0.0), 6), item


def _check_shadow(user: Any, user_id: str) -> None:
    """A user of the shadow id that healthd did not create (no ``healthd_shadow`` in its
    metadata) is refused: it may be a real user's."""
    if user is not None and not (user.metadata or {}).get(SHADOW_MARK):
        raise ShadowViolation(
            f"zep user_id {user_id!r} exists and was not created by healthd (no "
            f"{SHADOW_MARK} in its metadata): it may be a real user's; choose another "
            "user_id for the shadow"
        )


def _valid(edge: Any, at: datetime) -> bool:
    """Valid at ``at`` by Zep's own stamps: begun (``valid_at`` unset or not after it) and
    not ended (``invalid_at`` unset or after it)."""
    begun, ended = _time(edge.valid_at), _time(edge.invalid_at)
    return (begun is None or begun <= at) and (ended is None or ended > at)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def _when(at: datetime | None) -> float:
    return at.timestamp() if at is not None else 0.0


def _why(exc: BaseException) -> str:
    """A client error as one line: Zep's own message where it gave one."""
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    cause: Any = getattr(exc, "cause", None) or exc.__cause__
    if status is not None and 200 <= status < 300 and callable(getattr(cause, "errors", None)):
        # the SDK's ParsingError: an answer it could not read as its type, field named
        first = (cause.errors() or [{}])[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "the body"
        return shorten(
            f"HTTP {status} with a body not of Zep's shape: {where}: {first.get('msg', '?')}",
            300,
        )
    if status is not None:
        error = body.get("error") if isinstance(body, Mapping) else getattr(body, "error", None)
        message = error.get("message") if isinstance(error, Mapping) else None
        message = message or getattr(error, "message", None)  # the SDK's parsed ErrorBody
        text = str(message or body or "").strip().splitlines()
        return shorten(f"HTTP {status}: {text[0] if text else 'no message'}", 300)
    return shorten(first_line(exc), 300)


@register_memory("zep")
def zep_memory(options: Mapping[str, Any]) -> ZepMemory:
    reject_unknown(options, SWITCHES, "zep")
    user_id = str(options.get("user_id", DEFAULT_USER)).strip()
    if not switch(options, "shadow", False):
        raise ShadowViolation(
            f"zep user_id {user_id!r} is not declared shadow: a Zep project holds real users' "
            "graphs; set shadow=on for a user healthd owns"
        )
    if not user_id or len(user_id) > 500:
        raise TargetError("zep: user_id must be 1 to 500 characters (Zep's limit)")
    key_env = str(options.get("api_key_env", DEFAULT_KEY_ENV))
    if not os.environ.get(key_env):
        raise TargetError(
            f"zep: environment variable {key_env} is not set (named by api_key_env; it holds "
            "the Zep project API key)"
        )
    api_key = env_secret(key_env)
    base_url = url_option(options, "base_url", DEFAULT_BASE_URL, "zep")
    choices = {"episode_type": EPISODE_TYPES, "scope": SCOPES, "search": SEARCHES,
               "reranker": RERANKERS}  # fmt: skip
    chosen = {name: str(options.get(name, values[0])) for name, values in choices.items()}
    for name, value in chosen.items():
        if value not in choices[name]:
            raise TargetError(
                f"switch {name}={value!r}: expected one of {', '.join(choices[name])}"
            )
    if chosen["search"] == "valid" and chosen["scope"] == "nodes":
        raise TargetError("switch search=valid: only with scope=edges (nodes carry no validity)")
    mmr_lambda = None
    if chosen["reranker"] == "mmr" or "mmr_lambda" in options:
        if chosen["reranker"] != "mmr":
            raise TargetError("switch mmr_lambda: only with reranker=mmr")
        try:
            mmr_lambda = float(str(options.get("mmr_lambda", 0.5)))
        except ValueError:
            raise TargetError(f"switch mmr_lambda={options['mmr_lambda']!r}: a number") from None
        if not 0.0 <= mmr_lambda <= 1.0:
            raise TargetError(f"switch mmr_lambda={mmr_lambda}: between 0 and 1")
    top_k = integer(options, "top_k", 10)
    if top_k > MAX_TOP_K:
        raise TargetError(
            f"switch top_k={top_k}: Zep's search returns at most {MAX_TOP_K} results a page "
            "(page_size 1-50)"
        )
    return ZepMemory(
        api_key=api_key,
        base_url=base_url,
        user_id=user_id,
        mmr_lambda=mmr_lambda,
        top_k=top_k,
        timeout_seconds=integer(options, "timeout_seconds", 30),
        wait_seconds=integer(options, "wait_seconds", 300),
        batch_events=batch_option(options),
        sweeps=sweeps_option(options),
        max_response_bytes=integer(options, "max_response_bytes", 16 << 20, minimum=1024),
        **chosen,
    )
