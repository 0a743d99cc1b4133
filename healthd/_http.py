"""A small, polite HTTP client shared by the ticket sources (GitHub, Jira) and the `http`
memory adapter.

Every request carries a timeout and a ``User-Agent: healthd/<version>``. The timeout bounds
each wait for the server (to connect, and between two reads); ``max_request_seconds`` bounds
the whole of each attempt, from connecting to the body's last byte, so a server that drips its
answer a byte at a time cannot hold a call (or the run around it) for longer: when the time is
up the connection is shut down under the read. In a run, no attempt outlives the run's
``run_timeout`` either (:func:`healthd._stop.run_deadline`). Server errors
(5xx), timeouts and connection errors are retried a bounded number of times with
exponential backoff and jitter. Rate limits are honoured: ``Retry-After`` and GitHub-style
``X-RateLimit-Remaining``/``X-RateLimit-Reset`` make the client wait when the wait is within
a configured bound, and otherwise raise :class:`RateLimited` so the caller can defer the
rest of its work to the next run. Conditional requests (``If-None-Match``) return a
:class:`JsonResponse` with ``not_modified`` set on a 304.

Secrets never leave this module in text: error messages are built from the method, the
URL without its query string's credentials (ticket APIs take tokens in headers only) and
the status, and every message is passed through :meth:`HttpClient.redact`.
"""

from __future__ import annotations

import heapq
import http.client
import itertools
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin

import requests
from pydantic import BaseModel, ConfigDict, Field
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import LocationParseError, ProtocolError
from urllib3.util import parse_url

from healthd import __version__, _json, _stop, errors
from healthd.logging import redact_text, register_secret

USER_AGENT = f"healthd/{__version__}"
_RETRY_STATUSES = frozenset({500, 502, 503, 504})
#: The largest response body read (a GitHub page of 100 events is well under 1 MiB).
DEFAULT_MAX_RESPONSE_BYTES = 16 << 20
_CHUNK = 64 << 10
#: What bounds one attempt in all when ``max_request_seconds`` is not set.
DEFAULT_REQUEST_SECONDS = 60.0


class HttpOptions(BaseModel):
    """The options every HTTP-based source accepts (all optional)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    timeout_seconds: float = Field(10.0, gt=0, le=300)
    max_retries: int = Field(3, ge=0, le=10)
    backoff_seconds: float = Field(1.0, ge=0, le=60)
    max_backoff_seconds: float = Field(30.0, ge=0, le=600)
    max_rate_limit_wait_seconds: float = Field(60.0, ge=0, le=3600)
    max_response_bytes: int = Field(DEFAULT_MAX_RESPONSE_BYTES, ge=1024, le=1 << 30)
    #: the whole of one attempt, headers and body; unset: 60 s, or timeout_seconds if longer
    max_request_seconds: float | None = Field(None, gt=0, le=3600)

    @property
    def request_seconds(self) -> float:
        """What bounds one attempt from connecting to the last byte of its body."""
        if self.max_request_seconds is not None:
            return self.max_request_seconds
        return max(DEFAULT_REQUEST_SECONDS, self.timeout_seconds)


def check_http_url(value: str, example: str) -> str:
    """An option that must be an http(s) base URL; returned without a trailing slash."""
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"must be an http(s) URL, e.g. {example}")
    try:
        _sent_url(value)
    except ValueError:  # (its text holds the URL, which may hold a password)
        raise ValueError(
            f"is no URL a request can be sent to (a port past 65535, a space in the host?), "
            f"e.g. {example}"
        ) from None
    return value.rstrip("/")


class HttpError(Exception):
    """A request failed for good (after retries). The message is safe to log; ``status`` is
    the HTTP status of a final answer that was not a success, if there was one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RateLimited(HttpError):
    """The server asked us to wait longer than the configured bound: defer to the next run."""

    def __init__(self, message: str, wait_seconds: float) -> None:
        super().__init__(message)
        self.wait_seconds = wait_seconds


class PagedHttpOptions(HttpOptions):
    """The options of a source that reads paged listings."""

    #: the pages one listing reads at most: more is an error, never a loop
    max_pages: int = Field(10000, ge=1, le=1000000)


class BadPayload(HttpError):
    """The server answered 2xx with a body that is not the JSON we asked for."""


class TooLarge(HttpError):
    """The server's answer is longer than ``max_response_bytes``; it was not read whole."""


@dataclass
class JsonResponse:
    url: str
    status: int
    data: Any = None
    etag: str | None = None
    links: dict[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def parse_link_header(value: str | None) -> dict[str, str]:
    """RFC 8288 ``Link`` header → {rel: url} (what GitHub uses for pagination)."""
    links: dict[str, str] = {}
    if not value:
        return links
    for part in value.split(","):
        segments = part.strip().split(";")
        target = segments[0].strip()
        if not (target.startswith("<") and target.endswith(">")):
            continue
        for param in segments[1:]:
            name, _, raw = param.strip().partition("=")
            if name.strip().lower() == "rel":
                for rel in raw.strip().strip('"').split():
                    links[rel] = target[1:-1]
    return links


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _sent_url(url: str) -> tuple[str, tuple[str, str, int | None], bool]:
    """``url`` as requests will send it, the origin it will connect to (scheme, host, port;
    a default port filled in) and whether it carries credentials of its own (user:pass@).
    Taken from the URL requests prepares, not parsed apart from it: two parsers that read
    ``https://other.example\\@api.github.com/`` differently would connect where the check did
    not look. ValueError when it cannot be sent at all."""
    prepared = requests.PreparedRequest()
    try:
        prepared.prepare_url(url, None)
        sent = str(prepared.url)
        parts = parse_url(sent)
    except (requests.exceptions.RequestException, LocationParseError) as exc:
        raise ValueError(str(exc)) from None
    scheme = (parts.scheme or "").lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme)
    return sent, (scheme, (parts.host or "").lower(), port), parts.auth is not None


def _same_origin(base: tuple[str, str, int | None], other: tuple[str, str, int | None]) -> bool:
    """Whether credentials meant for ``base`` may go to ``other``: the same origin, or the
    same host moved from plain HTTP to HTTPS on the default ports (as requests keeps the
    credentials across such a redirect)."""
    return other == base or (
        base[0] == "http" and base[2] == 80 and other == ("https", base[1], 443)
    )


def _changed_method(response: requests.Response, method: str, where: str) -> str | None:
    """Why a write that requests followed to a GET is no answer to it: a 301-303 turns it
    into a GET without its body (a 307 or 308 keeps both, and is followed); None else."""
    if method == "GET":
        return None
    for hop in response.history:
        if hop.status_code in (301, 302, 303):
            return (
                f"{method} {where} was redirected (HTTP {hop.status_code} to "
                f"{_location(hop)}), which turns it into a GET without its "
                "body: give the URL it moved to"
            )
    return None


def _location(response: requests.Response) -> str:
    """Where a redirect points, quoted for a message: without its query or fragment (a
    presigned URL's signature, a sign-in's request and state) and at most 200 characters
    (a header line may be 64 KiB)."""
    where = response.headers.get("Location", "?")
    cut = re.search(r"[?#]", where)
    shown = where[: cut.start()] if cut else where
    shown = shown[:200] + "..." if len(shown) > 200 else shown
    return repr(shown + ("?[REDACTED]" if cut else ""))


class Listing:
    """The pages of one paged listing, bounded: at most ``max_pages`` of them and, for a
    listing paged by ``Link: <...>; rel="next"``, each next page on the origin of the
    listing's base URL (a link elsewhere would take the credentials with it), without
    credentials of its own, and never one already asked for or read (a loop). Each bound
    broken is a :class:`BadPayload` naming it."""

    def __init__(self, client: HttpClient, url: str, max_pages: int) -> None:
        self._client = client
        try:
            self._origin = _sent_url(url)[1]
        except ValueError as exc:
            raise HttpError(client.redact(f"GET {url} cannot be sent: {exc}")) from None
        self._max_pages = max_pages
        self._seen: set[str] = set()
        self.pages = 0

    def going_on(self, resp: JsonResponse) -> None:
        """``resp`` is a page read, and the listing goes on after it: refused when it was
        the ``max_pages``-th."""
        self.pages += 1
        if self.pages >= self._max_pages:
            raise BadPayload(
                self._client.redact(
                    f"GET {resp.url}: more than max_pages={self._max_pages} pages in one "
                    "listing; raise max_pages (or the page size) if the listing is that long"
                )
            )

    def next_url(self, resp: JsonResponse) -> str | None:
        """The URL of the page after ``resp`` (its ``next`` link), as it will be sent; None
        at the end."""
        link = resp.links.get("next")
        if link is None:
            return None
        self._seen.add(resp.url)
        try:
            target, origin, credentials = _sent_url(urljoin(resp.url, link))
        except ValueError as exc:
            raise BadPayload(
                self._client.redact(f"GET {resp.url}: its next page link is no URL ({exc})")
            ) from None
        if not _same_origin(self._origin, origin) or credentials:
            where = f"{origin[0]}://{origin[1]}:{origin[2]}"
            base = f"{self._origin[0]}://{self._origin[1]}:{self._origin[2]}"
            why = "carries credentials of its own" if credentials else f"is on {where}, not {base}"
            raise BadPayload(
                self._client.redact(
                    f"GET {resp.url}: its next page {why}; not followed (the request would "
                    "take the credentials there)"
                )
            )
        if target in self._seen:
            raise BadPayload(
                self._client.redact(f"GET {resp.url}: its next page is one already read (a loop)")
            )
        self._seen.add(target)
        self.going_on(resp)
        return target


def _retry_after_seconds(value: str | None, now: float) -> float | None:
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def _iso_reset(value: str | None) -> bool:
    """Whether ``X-RateLimit-Reset`` is an ISO 8601 time (Jira's), not epoch seconds."""
    return value is not None and _reset_time(value) is not None and "-" in value.strip()[1:]


def _reset_time(value: str | None) -> float | None:
    """``X-RateLimit-Reset`` as epoch seconds: GitHub sends epoch seconds, Jira an ISO 8601
    time (``2024-01-01T10:00Z``)."""
    if not value:
        return None
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    # Atlassian writes it as yyyy-MM-ddTHH:mmZ, the seconds of "the request timestamp plus
    # the Retry-After period" dropped: the reset is somewhere in the minute named, so the
    # wait is to that minute's end (its start is most often already past: a retry at once,
    # too early, which Atlassian answers with "the same or longer Retry-After period")
    if _MINUTES_ONLY.fullmatch(text):
        return when.timestamp() + 60.0
    return when.timestamp()


#: An ISO 8601 time that stops at the minute (``2024-01-01T10:00Z``, ``…T10:00+02:00``).
_MINUTES_ONLY = re.compile(r"\d{4}-?\d{2}-?\d{2}[T ]\d{2}:?\d{2}(?:[+-]\d{2}(?::?\d{2})?)?")


class _Deadline:
    """One attempt's time: when it is up, the connections the attempt took from the pool are
    shut down, so a read blocked on a server that keeps sending a byte now and then returns at
    once (an error, or a body cut short, which the client then calls a timeout)."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.expired = False
        self.done = False
        self._conns: list[Any] = []
        self._lock = threading.Lock()

    def enlist(self, conn: Any) -> None:
        with self._lock:
            self._conns.append(conn)
            if self.expired:
                _shut(conn)

    def finish(self) -> bool:
        """The attempt is over; True when its time ran out first."""
        _current.deadline = None
        with self._lock:
            self.done = True
            return self.expired

    def expire(self) -> bool:
        """Shut down every connection; True when one is still connecting (to look again)."""
        with self._lock:
            if self.done:
                return False
            self.expired = True
            for conn in self._conns:
                _shut(conn)
            return any(_socket_of(conn) is None for conn in self._conns)


def _shut(conn: Any) -> None:
    sock = _socket_of(conn)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _Watchdog:
    """One thread for every deadline of the process, soonest first."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: _Deadline) -> None:
        with self._cond:
            heapq.heappush(self._heap, (deadline.at, next(self._order), deadline))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="healthd-http-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    _, _, deadline = heapq.heappop(self._heap)
                    if deadline.expire():  # still connecting: shut it once it has a socket
                        heapq.heappush(self._heap, (now + 0.1, next(self._order), deadline))
                self._cond.wait(self._heap[0][0] - now if self._heap else None)


_WATCHDOG = _Watchdog()
_current = threading.local()  # the deadline of the attempt this thread is making


def _enlist(conn: Any) -> None:
    deadline: _Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.enlist(conn)


def _socket_of(conn: Any) -> Any:
    """The socket ``conn`` last connected, None while it is still connecting. A connection
    the server closes after its answer (``Connection: close``, HTTP/1.0) hands its socket to
    the response and forgets it (``conn.sock`` is None while the body is read): the socket
    is remembered when made, so that a body dripped on it is still cut at the deadline."""
    sock = getattr(conn, "sock", None)
    if sock is not None:
        return sock
    kept = getattr(conn, "_healthd_sock", None)
    return kept if kept is not None and kept.fileno() != -1 else None  # (-1: closed)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        self._healthd_sock = None  # (a socket of an earlier connection is no more this one)
        super().connect()
        self._healthd_sock = self.sock


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        self._healthd_sock = None
        super().connect()
        self._healthd_sock = self.sock


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _enlist(conn)
        return conn


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)
        _enlist(conn)
        return conn


class _WatchedAdapter(HTTPAdapter):
    """requests' adapter, its connections known to the attempt's deadline."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _watch_pools(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        _watch_pools(manager)
        return manager


def _watch_pools(manager: Any) -> None:
    manager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


def _no_netrc(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """An ``auth`` that signs with the URL's credentials alone, as requests does when none
    is set, but for its ~/.netrc, whose login would replace the credentials configured
    (psf/requests#3929), or go where none are."""
    user, password = requests.utils.get_auth_from_url(request.url or "")
    if user or password:
        signed: requests.PreparedRequest = requests.auth.HTTPBasicAuth(user, password)(request)
        return signed
    return request


def _strip_auth_across_hosts(
    session: requests.Session,
) -> Callable[[requests.PreparedRequest, requests.Response], None]:
    """Session.rebuild_auth for a redirect followed, but for its ~/.netrc: it drops the
    credentials on a move to another host, then signs with the netrc entry for where the
    redirect points, in place of the token (or where none was sent)."""

    strip: Callable[[str, str], bool] = session.should_strip_auth

    def rebuild_auth(prepared: requests.PreparedRequest, response: requests.Response) -> None:
        headers = prepared.headers
        if "Authorization" in headers and strip(str(response.request.url), str(prepared.url)):
            del headers["Authorization"]

    return rebuild_auth


class HttpClient:
    """JSON client with retries, rate-limit handling and conditional requests.

    Requests are retried, so a POST must be idempotent (the memory contract applies an
    event once per id).

    ``sleep``, ``clock`` and ``rng`` are injectable so tests run without real waiting.
    """

    def __init__(
        self,
        session: requests.Session,
        options: HttpOptions,
        *,
        headers: Mapping[str, str] | None = None,
        secrets: tuple[str, ...] = (),
        sleep: Callable[[float], None] = _stop.sleep,
        clock: Callable[[], float] = time.time,
        rng: Callable[[], float] = random.random,
        unique_names: bool = False,
        follow_redirects: bool = True,
    ) -> None:
        self.session = session
        if session.auth is None:
            session.auth = _no_netrc
        session.rebuild_auth = _strip_auth_across_hosts(session)  # type: ignore[method-assign]
        self.unique_names = unique_names  # refuse a body giving one name twice in an object
        self.follow_redirects = follow_redirects  # False: a 3xx is an error naming its Location
        for prefix in ("http://", "https://"):
            if type(session.get_adapter(prefix)) is HTTPAdapter:
                session.mount(prefix, _WatchedAdapter())
        self.options = options
        self.headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        self.headers.update(headers or {})
        register_secret(*secrets)
        self.sleep = sleep
        self.clock = clock
        self.rng = rng
        self._blocked_until: float | None = None
        self.requests_made = 0

    def listing(self, url: str, max_pages: int) -> Listing:
        """A paged listing of at most ``max_pages`` pages on the origin of ``url`` (see
        :class:`Listing`)."""
        return Listing(self, url, max_pages)

    # -- helpers ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` through the one redaction, which knows this client's secrets."""
        return redact_text(text)

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with 'equal jitter': half fixed, half random."""
        base = min(self.options.max_backoff_seconds, self.options.backoff_seconds * (2**attempt))
        return float(base / 2 + self.rng() * base / 2)

    def _wait_or_defer(self, wait: float, why: str) -> None:
        if wait > self.options.max_rate_limit_wait_seconds:
            raise RateLimited(
                self.redact(
                    f"{why}; the wait of {wait:.0f} s exceeds "
                    f"max_rate_limit_wait_seconds={self.options.max_rate_limit_wait_seconds:g}, "
                    "deferred to the next run"
                ),
                wait,
            )
        left = _stop.run_time_left()
        if left is not None and wait > 0 and left <= wait:
            # (slept out, the run would end with the request "not sent", naming no limit)
            raise RateLimited(
                self.redact(
                    f"{why}; the wait of {wait:.0f} s outlasts what is left of the run "
                    f"({_stop.run_label()}), deferred to the next run"
                ),
                wait,
            )
        if wait > 0:
            self.sleep(wait)

    def _rate_limit_wait(
        self, response: requests.Response, content: bytes, earlier: int = 0
    ) -> float | None:
        """Seconds to wait if this response is a rate limit, else None. ``earlier``: how
        many rate limits that did not say how long to wait this request met before; where
        the server does not say, the wait is a minute, doubled at each (GitHub: "at least
        one minute", then "an exponentially increasing amount of time between retries").
        Such a wait is an :class:`_Unsaid`."""
        now = self.clock()
        unsaid = _Unsaid(60.0 * (1 << min(earlier, 10)))
        retry_after = _retry_after_seconds(response.headers.get("Retry-After"), now)
        if response.status_code == 429:
            if retry_after is not None:
                return retry_after
            # GitHub's reset (epoch seconds) is the primary window's: with requests left in it,
            # the limit is another (its secondary), a minute's wait. Jira's (ISO 8601) is when
            # to retry ("the request timestamp plus the Retry-After period"), whatever is left
            # of its hourly quota (a burst limit is met with points left)
            left = response.headers.get("X-RateLimit-Remaining", "0").strip()
            if left != "0" and not _iso_reset(response.headers.get("X-RateLimit-Reset")):
                return unsaid
            reset = self._reset_wait(response, now)  # a reset already due: retry now
            return reset if reset is not None else unsaid
        # Retry-After: 0 asks for no wait, so on a 403 or a 503 it does not say the answer is
        # a rate limit (a refusal, an outage: retried with backoff or not at all), whatever
        # X-RateLimit-Remaining says (beside a reset, Remaining: 0 is GitHub's primary limit,
        # still one): Jira Data Center, rate limiting on, sends it on every
        # answer (0 while tokens are left, and beside the Remaining: 0 of the answer that
        # took the last one), GitHub never on its primary limit; a proxy, or a date already
        # past, may send it alone
        said_none = retry_after == 0
        if said_none:
            retry_after = None
        if response.status_code == 503 and retry_after is not None:
            return retry_after  # overloaded, and it says when to come back (Jira does)
        if response.status_code == 403:
            if retry_after is not None:
                return retry_after
            if response.headers.get("X-RateLimit-Remaining") == "0" and (
                not said_none or "X-RateLimit-Reset" in response.headers  # (GitHub's primary)
            ):
                reset = self._reset_wait(response, now)
                return reset if reset is not None else unsaid
            if _SECONDARY_LIMIT.search(_server_message(content)):
                return unsaid  # GitHub: "otherwise, wait for at least one minute"
        return None

    @staticmethod
    def _reset_wait(response: requests.Response, now: float) -> float | None:
        reset = _reset_time(response.headers.get("X-RateLimit-Reset"))
        return None if reset is None else max(0.0, reset - now)

    def _note_remaining(self, response: requests.Response) -> None:
        """A successful response that used the last request of the window blocks the next one."""
        if response.headers.get("X-RateLimit-Remaining") == "0":
            self._blocked_until = _reset_time(response.headers.get("X-RateLimit-Reset"))

    def _bounded_body(self, response: requests.Response, method: str, where: str) -> bytes:
        """The body, read a chunk at a time; TooLarge past ``max_response_bytes``, said
        by ``Content-Length`` or found while reading, without holding more than that."""
        limit = self.options.max_response_bytes
        too_large = TooLarge(
            self.redact(
                f"{method} {where} returned a body over max_response_bytes={limit}; not read"
            ),
            status=response.status_code,
        )
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        parts: list[bytes] = []
        size = 0
        for chunk in response.iter_content(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise too_large
            parts.append(chunk)
        return b"".join(parts)

    def _attempt_deadline(self, method: str, where: str) -> tuple[_Deadline, str | None]:
        """The next attempt's deadline, watched from now; and the run's bound (named) when
        that is what ends it. HttpError when the run's time is already up."""
        seconds = self.options.request_seconds
        left = _stop.run_time_left()
        by_run = None
        if left is not None and left <= seconds:
            by_run = f"the run took its {_stop.run_label()}"
            if left <= 0:
                raise HttpError(self.redact(f"{method} {where}: not sent, {by_run}"))
            seconds = left
        deadline = _Deadline(seconds)
        _current.deadline = deadline
        _WATCHDOG.watch(deadline)
        return deadline, by_run

    # -- the one verb ------------------------------------------------------------------------

    def get_json(
        self, url: str, *, params: Mapping[str, Any] | None = None, etag: str | None = None
    ) -> JsonResponse:
        """GET ``url`` and decode JSON. Raises HttpError (or RateLimited, BadPayload)."""
        return self.request_json("GET", url, params=params, etag=etag)

    def post_json(self, url: str, body: Any, *, retry: bool = True) -> JsonResponse:
        """POST a JSON body; a 204 gives ``data`` None. ``retry=False`` for a request that is
        not idempotent (see :meth:`request_json`)."""
        return self.request_json("POST", url, body=body, retry=retry)

    def request_json(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        etag: str | None = None,
        retry: bool = True,
    ) -> JsonResponse:
        """``retry=False``: a 5xx, a timeout or a lost connection, after which the server may
        have done what was asked, is an error at once (a rate limit, which says it was not
        done, is still waited out)."""
        if self._blocked_until is not None:
            wait = self._blocked_until - self.clock()
            self._blocked_until = None
            if wait > 0:
                self._wait_or_defer(wait, "rate limit exhausted (X-RateLimit-Remaining: 0)")
        headers = dict(self.headers)
        if etag:
            headers["If-None-Match"] = etag
        where = url
        attempt = 0
        rate_waits = 0
        unsaid_waits = 0  # (those of them the server did not say the length of)
        while True:
            if _stop.STOPPING.is_set():
                raise HttpError(self.redact(f"{method} {where}: stopped, healthd is shutting down"))
            deadline, by_run = self._attempt_deadline(method, where)
            problem: str | None = None
            server_error: int | None = None
            try:
                self.requests_made += 1
                response = self.session.request(
                    method,
                    url,
                    params=params,
                    headers=headers,
                    json=body if method != "GET" else None,
                    timeout=self.options.timeout_seconds,
                    stream=True,  # read by _bounded_body, never more than the limit
                    allow_redirects=self.follow_redirects,
                )
                with response:
                    changed = _changed_method(response, method, where)
                    if changed is not None:
                        raise HttpError(self.redact(changed))
                    content = self._bounded_body(response, method, response.url or url)
            except requests.Timeout:
                problem = f"{method} {where} timed out after {self.options.timeout_seconds:g} s"
            except requests.RequestException as exc:
                problem = f"{method} {where} failed: {type(exc).__name__}{_cause(exc)}"
            finally:
                expired = deadline.finish()
            if expired and by_run:
                raise HttpError(
                    self.redact(f"{method} {where}: no complete answer before {by_run}")
                )
            if expired:
                problem = (
                    f"{method} {where}: no complete answer within max_request_seconds="
                    f"{self.options.request_seconds:g} (the server kept the answer going)"
                )
            if problem is None:
                where = response.url or url
                refused = _credentials_refused(response) if _signed(response, headers) else None
                if refused is not None:
                    raise HttpError(
                        self.redact(f"{method} {where}: {refused}"), status=response.status_code
                    )
                limit_wait = self._rate_limit_wait(response, content, unsaid_waits)
                if limit_wait is not None:
                    rate_waits += 1
                    unsaid_waits += isinstance(limit_wait, _Unsaid)
                    why = f"{method} {where} was rate limited (HTTP {response.status_code})"
                    if rate_waits > self.options.max_retries:
                        raise RateLimited(
                            self.redact(
                                f"{why} {rate_waits} times; giving up, deferred to the next run"
                            ),
                            limit_wait,
                        )
                    self._wait_or_defer(limit_wait, why)
                    continue
                if response.status_code in _RETRY_STATUSES:
                    problem = f"{method} {where} returned HTTP {response.status_code}"
                    server_error = response.status_code
                elif response.status_code == 304:
                    if not etag:  # (taken for "unchanged", what was never read is lost)
                        raise BadPayload(
                            self.redact(
                                f"{method} {where} returned HTTP 304 Not Modified to a request "
                                "that was not conditional (no If-None-Match was sent)"
                            ),
                            status=304,
                        )
                    self._note_remaining(response)
                    return JsonResponse(
                        url=response.url or url,
                        status=304,
                        etag=etag,
                        links=parse_link_header(response.headers.get("Link")),
                        headers=response.headers,
                    )
                elif response.status_code == 204 or (
                    200 <= response.status_code < 300 and not content
                ):
                    return JsonResponse(
                        url=response.url or url,
                        status=response.status_code,
                        headers=response.headers,
                    )
                elif response.is_redirect:  # (only when not followed)
                    raise HttpError(
                        self.redact(
                            f"{method} {where} was redirected (HTTP {response.status_code} to "
                            f"{_location(response)}), which is not followed: "
                            "give the URL that answers"
                        ),
                        status=response.status_code,
                    )
                elif 200 <= response.status_code < 300:
                    self._note_remaining(response)
                    try:
                        data = _json.loads(content.decode("utf-8"), unique_names=self.unique_names)
                    except (ValueError, UnicodeDecodeError) as exc:
                        kind = response.headers.get("Content-Type")
                        shown = (  # an HTML page from a proxy, a sign-in, an error page
                            " (no Content-Type)"
                            if kind is None
                            else ""
                            if "json" in kind.lower()
                            else f" (Content-Type: {errors.quote(kind)})"
                        )
                        raise BadPayload(
                            self.redact(
                                f"{method} {where} returned a body that is not valid JSON "
                                f"({type(exc).__name__}: {str(exc)[:120]}){shown}"
                            )
                        ) from None
                    return JsonResponse(
                        url=response.url or url,
                        status=response.status_code,
                        data=data,
                        etag=response.headers.get("ETag"),
                        links=parse_link_header(response.headers.get("Link")),
                        headers=response.headers,
                    )
                else:
                    raise HttpError(
                        self.redact(
                            f"{method} {where} returned HTTP {response.status_code}"
                            f"{_server_message(content)}"
                        ),
                        status=response.status_code,
                    )
            assert problem is not None
            if not retry:
                raise HttpError(self.redact(f"{problem} (not retried)"), status=server_error)
            if attempt >= self.options.max_retries:
                raise HttpError(self.redact(f"{problem} (gave up after {attempt + 1} attempts)"))
            self.sleep(self._backoff(attempt))
            attempt += 1


class _Unsaid(float):
    """A rate limit's wait the server did not say the length of (see ``_rate_limit_wait``)."""


#: How GitHub says a 403 is its secondary rate limit when no header does ("You have exceeded
#: a secondary rate limit. Please wait a few minutes before you try again."; before 2022,
#: "You have triggered an abuse detection mechanism.").
_SECONDARY_LIMIT = re.compile(r"secondary rate limit|abuse detection", re.IGNORECASE)


#: What Atlassian's login filter (Seraph) says of credentials it did not take; the request
#: is then answered as an anonymous user's, 200 and all, with what anonymous users may see.
_SERAPH_REFUSALS = {
    "AUTHENTICATED_FAILED": "the credentials were refused (X-Seraph-LoginReason: "
    "AUTHENTICATED_FAILED): check user_env and token_env (or the credentials in base_url)",
    "AUTHENTICATION_DENIED": "the site denied the sign-in without checking the credentials "
    "(X-Seraph-LoginReason: AUTHENTICATION_DENIED)",
}


def _signed(response: requests.Response, headers: Mapping[str, str]) -> bool:
    """Whether the request answered by ``response`` carried credentials: the client's own
    header, or the one requests builds from credentials in the URL
    (``https://bot:secret@jira.example.com``), which only the request as sent holds."""
    sent = getattr(response, "request", None)
    sent_headers = getattr(sent, "headers", None)
    if sent_headers is not None:  # (a redirect to another host went without them)
        return "Authorization" in sent_headers
    return "Authorization" in headers


def _credentials_refused(response: requests.Response) -> str | None:
    """Why an Atlassian site did not take the credentials sent, when its headers say so
    (its answer is an anonymous user's, which a pull must not take for the real one); None
    else. A CAPTCHA after failed sign-ins (``X-Authentication-Denied-Reason:
    CAPTCHA_CHALLENGE``) is lifted only by signing in once in a browser."""
    reason = response.headers.get("X-Seraph-LoginReason", "").strip().upper()
    found = next((text for key, text in _SERAPH_REFUSALS.items() if key in reason), None)
    if found is None:
        return None
    denied = response.headers.get("X-Authentication-Denied-Reason", "")
    if "CAPTCHA_CHALLENGE" in denied.upper():
        found += (
            ": the account must answer a CAPTCHA after failed sign-ins; sign in once in a browser"
        )
    return found


def _server_message(content: bytes) -> str:
    """The API's own short error message, if any (GitHub: message; Jira: errorMessages;
    Backstage: error.name and error.message, its backends' ErrorResponseBody); a secret it
    echoes redacted before it is cut to a line (a cut through a token would leave a part
    of it that redaction no longer knows)."""
    try:
        body = _json.loads(content)
    except ValueError:
        return ""
    text: str | None = None
    if isinstance(body, dict):
        error = body.get("error")
        messages = body.get("errorMessages")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            name = error.get("name")
            text = f"{name}: {error['message']}" if isinstance(name, str) else error["message"]
        elif isinstance(body.get("message"), str):
            text = body["message"]
        elif isinstance(messages, list) and messages:
            text = "; ".join(str(m) for m in messages[:100])
    if not text:
        return ""
    return f": {_one_line(redact_text(text)[:1000])[:200]}"  # (the body's size is bounded)


def _cause(exc: BaseException) -> str:
    """Why a request failed, from the innermost error requests wraps: `` (Connection
    refused)``, `` (a status line that is not HTTP: 'SSH-2.0-...')``, `` (got more than 100
    headers)``; "" when none says (an invalid header's text would quote its value, a token)."""
    found = ""
    inner: BaseException | None = exc
    for _ in range(8):  # outermost first, each level's reason replacing its wrapper's
        if inner is None:
            break
        if isinstance(inner, OSError) and inner.strerror:
            found = inner.strerror
        elif isinstance(inner, http.client.RemoteDisconnected):
            found = str(inner)
        elif isinstance(inner, http.client.BadStatusLine) and inner.args and inner.args[0]:
            found = f"a status line that is not HTTP: {errors.quote(inner.args[0])}"
        elif isinstance(inner, http.client.HTTPException) and str(inner):
            found = str(inner)
        elif isinstance(inner, ProtocolError) and inner.args and isinstance(inner.args[0], str):
            found = found or inner.args[0]
        reason = getattr(inner, "reason", None)
        last = inner.args[-1] if inner.args else None
        inner = (
            reason
            if isinstance(reason, BaseException)
            else last
            if isinstance(last, BaseException)
            else inner.__cause__
        )
    return f" ({_one_line(found[:300])[:160]})" if found else ""


def _one_line(text: str) -> str:
    """A server's text as one line of printable text: each run of whitespace one space, any
    other control character its escape (an escape sequence never reaches a terminal)."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode()
        for c in " ".join(text.split())
    )
