"""The `http` memory: a team's own memory service, through the contract in
``docs/memory-http-api.yaml``.

healthd writes only to a namespace the service itself reports as a shadow: before its first
write, before the first write of every run (``begin_run``), before every reset and again
once ``shadow_recheck_seconds`` have passed since the last answer within a long run, the
adapter asks (``GET /v1/namespaces/{ns}``) and stops when the answer is ``shadow: false``,
writing nothing more; a namespace the service does not have (404) gets
only a reset, which creates it. Requests carry a timeout, are retried on 5xx and
timeouts with bounded backoff (the contract makes writes idempotent by event id; ``changes``,
which drains what it answers, is never retried: a failed one re-asks every probe, and after
``max_retries`` + 1 failures in a row it is not asked again that run), and send
``Authorization: Bearer`` from the variable ``token_env`` names; the token never appears in
an error. No redirect is followed (the check vouches for one URL); an answer that gives one
name twice in an object is refused. Failures become :class:`MemoryAdapterError`, which the
evaluator and the daemon report as a failed run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import requests
from pydantic import ConfigDict, Field, ValidationError, field_validator

from healthd import errors
from healthd._http import (
    BadPayload,
    HttpClient,
    HttpError,
    HttpOptions,
    RateLimited,
    check_http_url,
)
from healthd.errors import (
    MemoryAdapterError,
    ShadowViolation,
    TargetError,
    TimelineError,
    first_problem,
)
from healthd.logging import get_logger
from healthd.memory import register_memory
from healthd.model import DOMAINS, Answer, ChangeEvent, FactKey, Probe, RetrievedFact, ServedItem
from healthd.reading.render import statement
from healthd.timeline import event_to_dict, format_timestamp, parse_timestamp

log = get_logger("healthd.memory.http")


class HttpMemoryOptions(HttpOptions):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    base_url: str = Field(min_length=1)
    namespace: str = Field(min_length=1)
    shadow: bool = False
    token_env: str | None = None
    top_k: int = Field(5, ge=1, le=1000)
    shadow_recheck_seconds: float = Field(5.0, gt=0, le=3600)

    @field_validator("namespace")
    @classmethod
    def _path_segment(cls, value: str) -> str:
        if value in (".", ".."):  # /v1/namespaces/../reset is sent as /v1/reset
            raise ValueError(f"{value!r} is a name a URL drops (a dot segment); choose another")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if "?" in value or "#" in value:  # (not quoted: a query may hold a key)
            raise ValueError(
                "must have no query (?...) or fragment (#...): healthd adds "
                "/v1/namespaces/... to its path; a token goes in token_env"
            )
        return check_http_url(value, "http://memory.internal:8080")


class HttpMemory:
    kind = "http"

    def __init__(
        self,
        options: HttpMemoryOptions,
        *,
        session: requests.Session | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not options.shadow:
            raise ShadowViolation(
                f"namespace {options.namespace!r} is not declared shadow "
                "(set shadow = true once the service gives healthd one)"
            )
        environ = os.environ if environ is None else environ
        token = environ.get(options.token_env, "") if options.token_env else ""
        if options.token_env and not token:
            raise TargetError(f"environment variable {options.token_env!r} (token_env) is not set")
        odd = next((i for i, c in enumerate(token) if not " " < c <= "~"), None)
        if odd is not None:  # requests refuses the header, http.client crashes on it
            raise TargetError(
                f"environment variable {options.token_env!r} (token_env) holds "
                f"{token[odd]!r} at position {odd + 1} of {len(token)}, which a bearer token "
                "cannot (only printable ASCII without spaces"
                + ("; the line break that ends a file?)" if token[odd] in "\r\n" else ")")
            )
        self.options = options
        self._base = f"{options.base_url}/v1/namespaces/{quote(options.namespace, safe='')}"
        self._client = HttpClient(
            session or requests.Session(),
            options,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            secrets=(token,),
            unique_names=True,  # {"shadow": false, "shadow": true} means what the parser says
            follow_redirects=False,  # the shadow check vouches for this URL, not another
        )
        self._verified_at: float | None = None  # when the service last said "shadow"
        self._tracks_changes = True
        self._changes_failed = 0  # changes calls failed in a row this run
        self._changes_said = False  # a failure said this run (said once, on the first)
        self._over_k_said = False  # an answer over k said this run

    # -- Memory protocol ------------------------------------------------------------------

    def begin_run(self) -> None:
        """The service may stop calling the namespace a shadow at any time: ask again before
        this run's first write."""
        self._verified_at = None
        self._changes_failed = 0
        self._changes_said = False
        self._over_k_said = False

    def reset(self) -> None:
        self._ensure_shadow(force=True)
        self._call("POST", "/reset", None, "reset")

    def apply(self, event: ChangeEvent) -> None:
        self._ensure_shadow()
        body = event_to_dict(event)
        body["text"] = statement(event)
        self._call("POST", "/events", body, f"apply {event.id}")

    def answer(self, probe: Probe, at: datetime) -> Answer:
        body = {
            "probe": {
                "id": probe.id,
                "question": probe.question,
                "subject": probe.subject,
                "predicate": probe.predicate,
                "domain": probe.domain,
            },
            "at": format_timestamp(at),
            "k": self.options.top_k,
        }
        data = self._call("POST", "/query", body, f"query {probe.id}")
        where = f"http memory: query {probe.id}: response"
        if not isinstance(data, dict) or not (
            isinstance(data.get("facts"), list) or isinstance(data.get("items"), list)
        ):
            raise MemoryAdapterError(f"{where}: expected an object with a 'facts' or 'items' list")
        facts = _facts(data, where, at) if "facts" in data else []
        items = _items(data, where, at) if "items" in data else []
        served = len(facts) + len(items)
        if served > self.options.top_k and not self._over_k_said:
            # (scored as served: what the service gives an assistant asking for k)
            log.warning(
                "http memory: the service served more than the k asked for; scored as served",
                probe=probe.id,
                k=self.options.top_k,
                served=served,
            )
            self._over_k_said = True
        return Answer(probe.id, tuple(facts), tuple(items))

    def changed_keys(self, at: datetime) -> set[FactKey] | None:
        """The optional ``changes`` operation; None when the service does not offer it, and
        the evaluator then re-asks every probe at every stage (scoring stays incremental).
        None too for this stage alone when the call fails with no answer (a 5xx, a timeout,
        a lost connection): it is not retried, since a retry would find drained the keys the
        lost answer held; after ``max_retries`` + 1 failures in a row, None for the rest of the
        run (the next run asks again), so an endpoint that hangs does not cost every stage its
        timeout."""
        if not self._tracks_changes or self._changes_failed > self.options.max_retries:
            return None
        try:
            data = self._client.post_json(
                self._base + "/changes", {"until": format_timestamp(at)}, retry=False
            ).data
        except (RateLimited, BadPayload) as exc:
            raise MemoryAdapterError(f"http memory: changes: {exc}") from None
        except HttpError as exc:
            if exc.status in (404, 405, 501):
                self._tracks_changes = False
                return None
            if exc.status is None or exc.status >= 500:  # (the answer lost, maybe drained)
                self._changes_failed += 1
                if self._changes_failed > self.options.max_retries:
                    log.warning(
                        "http memory: changes failed too often in a row; not asked again this "
                        "run, every probe is asked at every stage",
                        failures=self._changes_failed,
                        error=str(exc),
                    )
                elif not self._changes_said:  # (once a run: a stage each would flood the log)
                    log.warning(
                        "http memory: changes failed, every probe is asked at its stage",
                        error=str(exc),
                    )
                self._changes_said = True
                return None
            raise MemoryAdapterError(f"http memory: changes: {exc}") from None
        self._changes_failed = 0
        keys = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(keys, list) or not all(
            isinstance(k, dict)
            and isinstance(k.get("subject"), str)
            and isinstance(k.get("predicate"), str)
            and k["subject"]
            and k["predicate"]
            for k in keys
        ):  # an empty name is no fact's key: the probes it changed would go unasked
            raise MemoryAdapterError(
                "http memory: changes: response, field 'keys': expected a "
                "list of {subject, predicate} objects with non-empty strings"
            )
        return {FactKey(k["subject"], k["predicate"]) for k in keys}

    def close(self) -> None:
        self._client.session.close()

    # -- internals ------------------------------------------------------------------------

    def _ensure_shadow(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if (
            not force
            and self._verified_at is not None
            and now - self._verified_at < self.options.shadow_recheck_seconds
        ):
            return
        self._verified_at = None
        try:
            response = self._client.get_json(self._base)
        except HttpError as exc:
            if exc.status == 404 and force:
                self._verified_at = now  # the reset creates it, as a shadow
                return
            if exc.status == 404:  # (a service may make a scope on its first write)
                raise ShadowViolation(
                    f"http memory: the service has no namespace {self.options.namespace!r} "
                    "(HTTP 404), and only a reset creates one as a shadow; healthd wrote "
                    "nothing to it"
                ) from None
            raise MemoryAdapterError(f"http memory: checking namespace: {exc}") from None
        said = _not_a_shadow(response.data, self.options.namespace)
        if said is not None:
            raise ShadowViolation(
                f"http memory: {said}; healthd writes only to shadow namespaces and wrote "
                "nothing more"
            )
        self._verified_at = now

    def _call(self, method: str, path: str, body: Any, what: str) -> Any:
        try:
            return self._client.request_json(method, self._base + path, body=body).data
        except HttpError as exc:
            raise MemoryAdapterError(f"http memory: {what}: {exc}") from None


def _not_a_shadow(info: Any, namespace: str) -> str | None:
    """Why a namespace answer is no ``shadow: true``, in the service's terms; None when it is."""
    where = f"the service's answer about namespace {namespace!r}"
    if not isinstance(info, dict):
        return f"{where}: expected an object with 'shadow'"
    named = info.get("namespace")
    if not isinstance(named, str):  # (the contract requires it: without, it may be anyone's)
        got = (
            "nothing"
            if "namespace" not in info
            else "null"
            if named is None
            else errors.quote(named)
        )
        return f"{where}, field 'namespace': expected the namespace's name, got {got}"
    # (another's, or a misrouted answer; as sent in the path, it is this one: a service may
    # key its namespaces by the segment as it arrives, undecoded)
    if named not in (namespace, quote(namespace, safe="")):
        return (
            f"asked about namespace {namespace!r}, the service answered for {errors.quote(named)}"
        )
    if info.get("shadow") is True:
        return None
    if info.get("shadow") is False:
        return f"the service says namespace {namespace!r} is not a shadow"
    got = errors.quote(info["shadow"]) if "shadow" in info else "nothing"
    return f"{where}, field 'shadow': expected true or false, got {got}"


def _items(data: dict[str, Any], where: str, at: datetime) -> list[ServedItem]:
    """Served text, to be read: ``{text, record_id, written_at?, validated_at?, metadata?,
    flags?}``. An item without text has nothing to read and no fact: the service's error."""
    if not isinstance(data["items"], list):
        raise MemoryAdapterError(f"{where}, field 'items': expected a list")
    out = []
    for i, item in enumerate(data["items"]):
        path = f"items[{i}]"
        if not isinstance(item, dict):
            raise MemoryAdapterError(f"{where}, field '{path}': expected an object")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise MemoryAdapterError(
                f"{where}, field '{path}.text': a served item needs its text (it has no fact)"
            )
        record_id = item.get("record_id")
        if not isinstance(record_id, str) or not record_id:
            raise MemoryAdapterError(
                f"{where}, field '{path}.record_id': expected a non-empty string"
            )
        metadata = item.get("metadata") or {}
        if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()
        ):
            raise MemoryAdapterError(
                f"{where}, field '{path}.metadata': expected an object of strings"
            )
        flags = _flags(item, where, path)
        try:
            times = [
                None
                if item.get(name) is None
                else parse_timestamp(item[name], field=f"{path}.{name}")
                for name in ("written_at", "validated_at")
            ]
        except TimelineError as exc:
            raise MemoryAdapterError(f"{where}, {exc}") from None
        written, validated = (
            None if when is None else _not_after(when, at, where, f"{path}.{name}")
            for when, name in zip(times, ("written_at", "validated_at"), strict=True)
        )
        out.append(ServedItem(text, record_id, written, validated, metadata, frozenset(flags)))
    return out


#: The contract's flags (docs/memory-http-api.yaml): another is a typo or a meaning healthd
#: does not have, and taking it as none would score a historical record as current.
FLAGS = frozenset({"historical", "soft_expired"})


def _flags(item: dict[str, Any], where: str, path: str) -> list[str]:
    flags = item.get("flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise MemoryAdapterError(f"{where}, field '{path}.flags': expected a list of strings")
    unknown = sorted(set(flags) - FLAGS)
    if unknown:
        raise MemoryAdapterError(
            f"{where}, field '{path}.flags': unknown flag {errors.quote(unknown[0])} (the "
            f"contract's are {', '.join(sorted(FLAGS))})"
        )
    return flags


def _facts(data: dict[str, Any], where: str, at: datetime) -> list[RetrievedFact]:
    if not isinstance(data["facts"], list):
        raise MemoryAdapterError(f"{where}, field 'facts': expected a list")
    out = []
    for i, item in enumerate(data["facts"]):
        path = f"facts[{i}]"
        if not isinstance(item, dict):
            raise MemoryAdapterError(f"{where}, field '{path}': expected an object")
        values = {}
        for name in ("subject", "predicate", "value", "domain", "record_id"):
            value = item.get(name)
            if not isinstance(value, str) or (name != "value" and not value):
                what = "a string" if name == "value" else "a non-empty string"
                raise MemoryAdapterError(f"{where}, field '{path}.{name}': expected {what}")
            values[name] = value
        if values["domain"] not in DOMAINS:
            raise MemoryAdapterError(
                f"{where}, field '{path}.domain': unknown domain {errors.quote(values['domain'])}"
            )
        flags = _flags(item, where, path)
        try:
            written = parse_timestamp(item.get("written_at"), field=f"{path}.written_at")
            validated = (
                None
                if item.get("validated_at") is None
                else parse_timestamp(item["validated_at"], field=f"{path}.validated_at")
            )
        except TimelineError as exc:
            raise MemoryAdapterError(f"{where}, {exc}") from None
        written = _not_after(written, at, where, f"{path}.written_at")
        if validated is not None:
            validated = _not_after(validated, at, where, f"{path}.validated_at")
        out.append(
            RetrievedFact(
                values["subject"],
                values["predicate"],
                values["value"],
                values["domain"],
                values["record_id"],
                written,
                validated,
                frozenset(flags),
            )
        )
    return out


#: How far after the moment asked a record's time may be and still be the replay's: a store
#: keeping whole seconds rounds (PostgreSQL's timestamptz(0), MySQL's DATETIME), so the latest
#: event's time, which is the moment asked, comes back up to half a second after it.
ROUNDING = timedelta(seconds=1)


def _not_after(when: datetime, at: datetime, where: str, field: str) -> datetime:
    """A record's time is the replay's (the time of the event that wrote or re-validated
    it), so never after the moment asked (but for a store's rounding, read as that moment):
    one that is was stamped by the service's clock, and would be fresh whatever its age."""
    if when <= at:
        return when
    if when - at < ROUNDING:
        return at
    raise MemoryAdapterError(
        f"{where}, field '{field}': {format_timestamp(when)} is after the moment asked "
        f"({format_timestamp(at)}); a record carries the time of the event that wrote "
        "it, not the service's clock"
    )


@register_memory("http")
def http_memory(options: Mapping[str, Any]) -> HttpMemory:
    try:
        opts = HttpMemoryOptions.model_validate(dict(options))
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise TargetError(f"switch {field or 'options'}: {message}") from None
    return HttpMemory(opts)
