"""The `jira` source: requirements, decisions and ownership from Jira issues.

It searches ``(<jql>) AND updated >= "<watermark - overlap>" ORDER BY updated DESC`` with the
changelog expanded (``/rest/api/3/search/jql`` paginated by ``nextPageToken``, or
``/rest/api/2/search`` paginated by ``startAt``/``total``), reads the rest of a long
changelog from ``/issue/{key}/changelog`` when the search truncated it, and replays each
issue from its creation:

* the issue's domain comes from its labels (``label_domains``) or else its issue type
  (``type_domains``); a mapped issue asserts ``(<KEY>, requirement|decision, <summary>,
  requirement|decision)`` while unresolved; a summary edit revises it; a resolution (or a
  status in ``done_statuses``) revises it to ``done_value``; a resolution in
  ``invalidating_resolutions`` (Won't Do, Duplicate, ...) or a status in
  ``invalidating_statuses`` invalidates it; reopening brings the summary back;
* an open (unresolved, not done or cancelled), assigned issue claims each of its
  components: ``(<component>, owners, "<sorted assignees>", ownership)`` holds the union
  of the assignees of every open issue claiming it; a change of that union revises it. A
  claim that lapses (resolved, done or cancelled) holds until a newer claim on the
  component replaces it: a closed issue is no evidence that its assignee stopped owning
  the component, so the fact ages out unless re-claimed. An explicit retraction on the open
  issue (the changelog's ``assignee`` item to nobody, or a ``Component`` item removing the
  component) is: the assignee no longer owns the component through it (revised off the
  union, or invalidated when no other claim holds it). A claim whose issue left the
  query (moved, deleted, filtered out: the search for updated issues never returns it)
  lapses once a run finds it no longer among the query's unresolved issues. Users are
  named by Cloud's ``accountId``, else Data Center's user ``key`` (what changelog items
  carry), else ``name``; ``user_field`` picks one (a changelog id is read as the picked
  field of the user object the issue holds with that id); the accountId ``unknown`` (every
  deleted user whose record is corrupted) is nobody. A component is known by the id
  changelog items carry, named as the issue's fields name it now (items keep the name it
  had when written).

``api_version = "auto"`` (the default) searches ``/rest/api/3/search/jql`` with
``nextPageToken`` on Jira Cloud (which answers 410 on the old API) and
``/rest/api/2/search`` with ``startAt`` on Data Center and Server. It knows Cloud by its
host (``*.atlassian.net``, ``*.jira.com``), else asks ``/rest/api/2/serverInfo``
(``deploymentType``), and a 410 on the v2 search (a Cloud site behind a proxy that hides
serverInfo) switches to v3 in the same run; the answer is kept in the cursor. "2" or "3"
forces one. ``page_size`` is the search page size; ``overlap_minutes`` how far before the
watermark each search reaches back; the watermark is written in the API user's time zone
(``/myself``), in which JQL reads it.

Event ids: ``jira:<KEY>:created`` for what the issue asserted when created, and
``jira:<KEY>:<history id>:<item index>`` for changelog entries. Timestamps are the issue's
``created`` and each history's ``created``. The cursor holds the ``updated`` watermark and
the last history id seen per issue, so overlapping searches never double an event.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from healthd._http import (
    BadPayload,
    HttpClient,
    HttpError,
    PagedHttpOptions,
    RateLimited,
    check_http_url,
)
from healthd.model import ChangeEvent, Fact, FactKey
from healthd.sources import PullResult, register_source
from healthd.sources._options import validate_options
from healthd.sources._tickets import (
    AreaClaim,
    AreaOwners,
    Malformed,
    TicketSource,
    as_folded,
    diff,
    dump_cursor,
    env_credential,
    fold_area_owners,
    format_time,
    identifier,
    lapses_of_gone,
    load_areas,
    load_cursor,
    load_pending_claims,
    parse_time,
    pending_claims,
    require,
    restores,
    to_events,
)

KIND = "jira"
_FIELDS = "summary,status,resolution,assignee,components,labels,issuetype,created,updated"
TicketDomain = Literal["requirement", "decision"]


class JiraOptions(PagedHttpOptions):
    base_url: str
    jql: str = Field(min_length=1)
    api_version: Literal["auto", "2", "3"] = "auto"
    user_env: str | None = None
    token_env: str | None = "JIRA_TOKEN"
    type_domains: dict[str, TicketDomain] = {
        "Story": "requirement",
        "Requirement": "requirement",
        "Decision": "decision",
    }
    label_domains: dict[str, TicketDomain] = {
        "requirement": "requirement",
        "decision": "decision",
        "adr": "decision",
    }
    done_value: str = Field("done", min_length=1)
    done_statuses: list[str] = ["Done", "Closed", "Resolved"]
    invalidating_statuses: list[str] = ["Cancelled", "Canceled", "Rejected", "Won't Do"]
    invalidating_resolutions: list[str] = [
        "Won't Do",
        "Won't Fix",
        "Duplicate",
        "Cannot Reproduce",
        "Incomplete",
        "Declined",
        "Rejected",
        "Invalid",
    ]
    user_field: Literal["name", "accountId", "key", "emailAddress"] | None = None
    page_size: int = Field(50, ge=1, le=100)
    overlap_minutes: int = Field(1440, ge=0, le=10080)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_http_url(value, "https://acme.atlassian.net")

    @property
    def search_api(self) -> Literal["2", "3"] | None:
        """Which search API: "3" (``/rest/api/3/search/jql``, ``nextPageToken``) on Jira
        Cloud, which removed ``/rest/api/2/search``; "2" (``startAt``) on Data Center and
        Server. ``auto`` knows Cloud by its host (``*.atlassian.net``, ``*.jira.com``);
        elsewhere it cannot tell from the options (None): the site is asked."""
        if self.api_version != "auto":
            return self.api_version
        host = (urlsplit(self.base_url).hostname or "").lower()
        return "3" if host.endswith((".atlassian.net", ".jira.com")) else None

    @field_validator("jql")
    @classmethod
    def _no_order(cls, value: str) -> str:
        if re.search(r"\border\s+by\b", value, re.IGNORECASE):
            raise ValueError("must not contain ORDER BY (healthd orders by updated itself)")
        return value


class _State:
    __slots__ = ("assignee", "components", "issuetype", "labels", "resolution", "status", "summary")

    def __init__(self, fields: dict[str, Any], user_field: str | None) -> None:
        self.summary = require(fields, "summary", str, "fields")
        self.status = _name(fields.get("status"))
        self.resolution = _name(fields.get("resolution"))
        self.assignee = _user(fields.get("assignee"), user_field)
        comps = _list_field(fields, "components")
        self.components = {
            c["name"] for c in comps if isinstance(c, dict) and isinstance(c.get("name"), str)
        }
        self.labels = {label for label in _list_field(fields, "labels") if isinstance(label, str)}
        self.issuetype = _name(fields.get("issuetype"))


def _list_field(fields: dict[str, Any], key: str) -> list[Any]:
    value = fields.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise Malformed(f"field 'fields.{key}' has the wrong type ({type(value).__name__})")
    return value


def _name(obj: Any) -> str | None:
    if isinstance(obj, dict):
        name = obj.get("name")
        if isinstance(name, str):
            return name
    return None


#: The accountId Jira Cloud gives every deleted user whose record is corrupted (after a
#: server import): no person, so no owner, as GitHub's "ghost".
UNKNOWN = "unknown"


def _user(obj: Any, field: str | None) -> str | None:
    """The id of a user that changelog items carry in ``from``/``to``: Cloud's
    ``accountId``, else Data Center's user ``key`` (which may differ from the user
    ``name``), else ``name``; ``field`` first when given (a user whose profile visibility
    hides it, or deleted, gives no e-mail: that user is still someone, named by the id)."""
    if not isinstance(obj, dict):
        return None
    for key in ([field] if field else []) + ["accountId", "key", "name"]:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return None if value == UNKNOWN else value
    return None


def _given(user: dict[str, Any], field: str | None) -> bool:
    """Whether the user object gives ``field``: a string, not blank."""
    value = user.get(field) if field else None
    return isinstance(value, str) and bool(value)


def _component_names(
    fields: dict[str, Any], parsed: list[tuple[datetime, int, list[dict[str, Any]]]]
) -> dict[str, str]:
    """Each component id the issue or its changelog names → the component's name now: as
    the issue's fields give it, else as the newest changelog item naming that id gives it.
    A changelog item keeps the name the component had when it was written, so a component
    renamed since (Billing → Payments) was two areas: the old name was never taken off
    when the component was removed, and the new one was claimed from the issue's creation."""
    names: dict[str, str] = {}
    for _, _, items in parsed:  # oldest first: a newer name wins
        for item in items:
            if _field(item) != "components":
                continue
            for id_key, name_key in (("from", "fromString"), ("to", "toString")):
                cid, name = item.get(id_key), item.get(name_key)
                if isinstance(cid, str) and cid and isinstance(name, str) and name:
                    names[cid] = name
    for comp in _list_field(fields, "components"):
        if isinstance(comp, dict):
            cid, name = comp.get("id"), comp.get("name")
            if isinstance(cid, str) and cid and isinstance(name, str) and name:
                names[cid] = name
    return names


def _component(cid: Any, name: Any, names: Mapping[str, str] | None) -> str | None:
    """The name of the component a changelog item names by ``cid`` and ``name``."""
    if names is not None and isinstance(cid, str) and cid in names:
        return names[cid]
    return name if isinstance(name, str) and name else None


def _field(item: dict[str, Any]) -> str:
    name = str(item.get("fieldId") or item.get("field") or "").lower()
    return {"component": "components"}.get(name, name)


class JiraSource(TicketSource):
    kind = KIND
    options: JiraOptions

    def __init__(self, name: str, options: JiraOptions, **seams: Any) -> None:
        super().__init__(name, options, **seams)
        self._api: Literal["2", "3"] = options.search_api or "2"  # the one in use
        self._paged = False  # the v2 search answered a page in this pull
        self._unsure = False  # see _search_pages_v2
        self._known_api = False  # self._api was settled in this pull
        self._label_domains = {k.lower(): v for k, v in options.label_domains.items()}
        self._type_domains = {k.lower(): v for k, v in options.type_domains.items()}
        self._done = {s.lower() for s in options.done_statuses}
        self._bad_status = {s.lower() for s in options.invalidating_statuses}
        self._bad_resolution = {s.lower() for s in options.invalidating_resolutions}

    # -- mapping -----------------------------------------------------------------------------

    def _facts(self, key: str, st: _State) -> dict[FactKey, Fact]:
        facts: dict[FactKey, Fact] = {}
        domain = None
        for label in sorted(st.labels):
            if label.lower() in self._label_domains:
                domain = self._label_domains[label.lower()]
                if domain == "decision":
                    break
        if domain is None and st.issuetype:
            domain = self._type_domains.get(st.issuetype.lower())
        if domain is not None:
            value: str | None = st.summary
            if st.resolution:
                value = (
                    None
                    if st.resolution.lower() in self._bad_resolution
                    else self.options.done_value
                )
            elif st.status and st.status.lower() in self._bad_status:
                value = None
            elif st.status and st.status.lower() in self._done:
                value = self.options.done_value
            if value is not None:
                fact = Fact(key, domain, value, domain)
                facts[fact.key] = fact
        return facts

    def _open(self, st: _State) -> bool:
        """Unresolved, and neither done nor cancelled."""
        status = (st.status or "").lower()
        return not (st.resolution or status in self._done or status in self._bad_status)

    def _claims(self, st: _State) -> dict[str, frozenset[str]]:
        """The components an open, assigned issue claims → its assignee."""
        if not st.assignee or not self._open(st):
            return {}
        return {component: frozenset({st.assignee}) for component in st.components}

    def _claim_changes(
        self,
        before: dict[str, frozenset[str]],
        after: dict[str, frozenset[str]],
        key: str,
        when: datetime,
        order: tuple[Any, ...],
        reason: str,
        base_id: str,
        metadata: Mapping[str, str],
        open_: bool = True,
    ) -> list[AreaClaim]:
        """Claims where the issue's say about a component changed; one that takes its
        assignee off a component while the issue stays open (unassigned, the component
        removed) is a retraction."""
        return [
            AreaClaim(
                when,
                order,
                component,
                key,
                after.get(component, frozenset()),
                reason,
                base_id,
                metadata,
                retracted=open_
                and component in before
                and after.get(component, frozenset()) < before[component],
            )
            for component in sorted(set(before) | set(after))
            if before.get(component) != after.get(component)
        ]

    @staticmethod
    def _apply(
        st: _State,
        item: dict[str, Any],
        forward: bool,
        names: Mapping[str, str] | None = None,
        components: Mapping[str, str] | None = None,
    ) -> str:
        """Apply one changelog item (forward: to its new value; backward: to its old one).
        Returns the reason text for an invalidation it may cause. ``names``: the name
        ``user_field`` picks for each user id a changelog item carries; ``components``: the
        name of each component id (see :func:`_component_names`)."""
        field = _field(item)
        new_s, old_s = item.get("toString"), item.get("fromString")
        new_id, old_id = item.get("to"), item.get("from")
        if not forward:
            new_s, old_s, new_id, old_id = old_s, new_s, old_id, new_id
        if field == "summary":
            if not isinstance(new_s, str):
                raise Malformed("field 'toString' of a summary change is missing")
            st.summary = new_s
            return "summary changed"
        if field == "status":
            st.status = new_s if isinstance(new_s, str) else None
            return f"status {new_s}"
        if field == "resolution":
            st.resolution = new_s if isinstance(new_s, str) and new_s else None
            return f"resolved as {new_s}"
        if field == "assignee":
            st.assignee = (
                new_id if isinstance(new_id, str) and new_id not in ("", UNKNOWN) else None
            )
            if st.assignee is not None and names is not None:
                st.assignee = names.get(st.assignee, st.assignee)
            if st.assignee is not None:
                return f"assigned to {st.assignee}"
            if isinstance(old_id, str) and old_id:
                return f"{names.get(old_id, old_id) if names else old_id} unassigned"
            return "unassigned"
        if field == "components":
            old_s = _component(old_id, old_s, components)
            new_s = _component(new_id, new_s, components)
            if old_s:
                st.components.discard(old_s)
            if new_s:
                st.components.add(new_s)
            return f"component {old_s!r} removed"
        if field == "labels":
            if new_s is not None and not isinstance(new_s, str):
                side = "toString" if forward else "fromString"
                raise Malformed(
                    f"field '{side}' of a labels change has the wrong type ({type(new_s).__name__})"
                )
            st.labels = set((new_s or "").split())
            return "labels changed"
        if field == "issuetype":
            st.issuetype = new_s if isinstance(new_s, str) else None
            return f"issue type changed to {new_s}"
        return ""

    def _user_names(self, fields: dict[str, Any], histories: list[Any]) -> dict[str, str] | None:
        """With ``user_field`` a name or an e-mail address: each user id a changelog item
        can carry (``accountId``, ``key``) → that field, read from the user objects the issue
        holds (its assignee, reporter and creator, each history's author). Changelog items
        carry ids alone, so without it one person was two owners: the name the fields give
        and the id the changelog gives. None when the field is an id itself."""
        field = self.options.user_field
        if field not in ("name", "emailAddress"):
            return None
        users = [fields.get(k) for k in ("assignee", "reporter", "creator")]
        users += [h.get("author") for h in histories if isinstance(h, dict)]
        names: dict[str, str] = {}
        for user in users:
            if not isinstance(user, dict) or not _given(user, field):
                continue
            for id_field in ("accountId", "key"):
                if isinstance(user.get(id_field), str) and user[id_field]:
                    names.setdefault(user[id_field], user[field])
        return names

    def _hiding(self, fields: dict[str, Any], histories: list[Any]) -> set[str]:
        """The ids of the users the issue holds that give no ``user_field`` (Cloud hides a
        user's e-mail as their profile visibility says, and blanks a deleted user's)."""
        field = self.options.user_field
        users = [fields.get(k) for k in ("assignee", "reporter", "creator")]
        users += [h.get("author") for h in histories if isinstance(h, dict)]
        return {
            who
            for user in users
            if isinstance(user, dict) and not _given(user, field)
            for who in [_user(user, None)]
            if who is not None
        }

    _TRACKED = frozenset(
        {"summary", "status", "resolution", "assignee", "components", "labels", "issuetype"}
    )

    def replay(
        self,
        issue: Any,
        histories: list[Any],
        after_id: int | None,
        skipped: list[str],
        claims: list[AreaClaim] | None = None,
        final: dict[str, frozenset[str]] | None = None,
    ) -> tuple[list[ChangeEvent], int]:
        """Events of one issue newer than ``after_id`` (None: nothing emitted yet); its new
        claims on components' ownership are appended to ``claims``, and what it claims
        after its last history is put in ``final``."""
        claims = [] if claims is None else claims
        key = require(issue, "key", str, "")
        fields = require(issue, "fields", dict, "")
        created = parse_time(fields.get("created"), "fields.created")
        current = _State(fields, self.options.user_field)
        url = self._browse(key)
        names = self._user_names(fields, histories)
        parsed = []
        for index, raw in enumerate(histories):
            try:
                hid = identifier(raw, "id", "changelog.histories[]")
                items = require(raw, "items", list, f"changelog.histories[{index}]")
                parsed.append(
                    (
                        parse_time(raw.get("created"), "changelog.histories[].created"),
                        hid,
                        [i for i in items if isinstance(i, dict)],
                    )
                )
            except (Malformed, ValueError) as exc:
                skipped.append(f"{key} history #{index}: {exc}")
        parsed.sort(key=lambda h: (h[0], h[1]))
        if names is not None:
            said = {
                who
                for _, _, items in parsed
                for item in items
                if _field(item) == "assignee"
                for who in (item.get("from"), item.get("to"))
                if isinstance(who, str) and who
            }
            hidden = self._hiding(fields, histories)
            if current.assignee in hidden:
                said.add(current.assignee)
            skipped.extend(
                f"{key}: the assignee {who} gives no {self.options.user_field} (Jira Cloud "
                "hides it where the user's profile visibility says so); named by its id"
                for who in sorted(said & hidden)
            )
            skipped.extend(
                f"{key}: the changelog names assignee {who} by id and the issue holds no user "
                f"object to read its {self.options.user_field} from; named by its id"
                for who in sorted(said - hidden - names.keys())
            )
        comps = _component_names(fields, parsed)
        # Walk back from the current fields to the state at creation.
        st = current
        for _, _hid, items in reversed(parsed):
            for item in reversed(items):
                try:
                    self._apply(st, item, forward=False, names=names, components=comps)
                except Malformed:
                    pass
        out: list[ChangeEvent] = []
        before = self._facts(key, st)
        claimed = self._claims(st)
        project, _, number = key.rpartition("-")
        if after_id is None:
            if before:
                out.extend(
                    to_events(
                        diff({}, before, ""),
                        base_id=f"{KIND}:{key}:created",
                        timestamp=created,
                        source=self.name,
                        metadata={"url": url},
                    )
                )
            claims.extend(
                self._claim_changes(
                    {},
                    claimed,
                    key,
                    created,
                    (project, int(number) if number.isdigit() else 0, -1),
                    "",
                    f"{KIND}:{key}:created",
                    {"url": url},
                )
            )
        watermark = after_id or 0
        for ts, hid, items in parsed:
            watermark = max(watermark, hid)
            reasons, first = [], None
            for index, item in enumerate(items):
                if _field(item) not in self._TRACKED:
                    continue
                try:
                    reasons.append(
                        self._apply(st, item, forward=True, names=names, components=comps)
                    )
                except Malformed as exc:
                    skipped.append(f"{key} history {hid} item {index}: {exc}")
                    continue
                first = index if first is None else first
            if first is None:
                continue
            after = self._facts(key, st)
            reason = "; ".join(r for r in reasons if r)
            changes = diff(before, after, reason)
            before = after
            now_claimed = self._claims(st)
            claimed, was_claimed = now_claimed, claimed
            if after_id is not None and hid <= after_id:
                continue
            base_id = f"{KIND}:{key}:{hid}:{first}"
            claims.extend(
                self._claim_changes(
                    was_claimed,
                    now_claimed,
                    key,
                    ts,
                    (project, int(number) if number.isdigit() else 0, hid),
                    f"{reason} from {key}",
                    base_id,
                    {"url": url},
                    self._open(st),
                )
            )
            if changes:
                out.extend(
                    to_events(
                        changes,
                        base_id=base_id,
                        timestamp=ts,
                        source=self.name,
                        metadata={"url": url},
                    )
                )
        if final is not None:
            final.update(claimed)
        return out, watermark

    def _browse(self, key: str) -> str:
        """The issue's page, for people: on ``base_url`` without the credentials it may carry
        (``https://bot:secret@jira.example.com``), which would go into every event."""
        parts = urlsplit(self.options.base_url)
        site = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
        return f"{site}/browse/{key}"

    # -- fetching ----------------------------------------------------------------------------

    def _client(self) -> HttpClient:
        headers: dict[str, str] = {}
        secrets: list[str] = []
        token = ""
        if self.options.token_env:
            # with user_env, the password of a Basic header: base64-encoded, not as it is
            token = env_credential(
                self.options.token_env,
                "token_env",
                self._environ,
                in_header=not self.options.user_env,
            )
            if not token:
                raise HttpError(
                    f"environment variable {self.options.token_env} (token_env) is not set"
                )
            secrets.append(token)
        if self.options.user_env:
            user = env_credential(self.options.user_env, "user_env", self._environ, in_header=False)
            if not user:
                raise HttpError(
                    f"environment variable {self.options.user_env} (user_env) is not set"
                )
            basic = base64.b64encode(f"{user}:{token}".encode()).decode()
            headers["Authorization"] = f"Basic {basic}"
            secrets.extend((user, basic))
        elif token:
            headers["Authorization"] = f"Bearer {token}"
        return HttpClient(
            self.session,
            self.options,
            headers=headers,
            secrets=tuple(secrets),
            sleep=self._sleep,
            clock=self._clock,
            rng=self._rng,
        )

    def _jql(self, since: str | None, zone: tzinfo = UTC) -> str:
        if not since:
            return f"({self.options.jql}) ORDER BY updated DESC"
        # JQL reads a date in the API user's time zone (``zone``, as /myself says it): the
        # watermark is written in it (a zone not known: UTC-12's wall time, late in none),
        # stepped back by the overlap; per-issue history ids drop what was already emitted.
        watermark = parse_time(since, "since")
        if watermark.year < 1970:  # no issue was updated then: read them all
            return f"({self.options.jql}) ORDER BY updated DESC"
        start = watermark - timedelta(minutes=self.options.overlap_minutes)
        try:
            start = _wall_time_no_later(start, zone)
        except OverflowError:  # (the year 1 in a zone west of UTC)
            return f"({self.options.jql}) ORDER BY updated DESC"
        return (
            f'({self.options.jql}) AND updated >= "{start.strftime("%Y/%m/%d %H:%M")}" '
            "ORDER BY updated DESC"
        )

    def _user_zone(self, client: HttpClient) -> tzinfo:
        """The time zone JQL reads a date in: the API user's (``/myself``'s ``timeZone``);
        when the site does not say (anonymous access, /myself failing, a zone Python does
        not know), :data:`_ZONE_NOT_KNOWN`, whose wall time no zone reads as later: JQL
        reads the date in a zone all the same, and UTC's wall time, read in a zone west of
        it, started the window that many hours late."""
        try:
            me = client.get_json(f"{self.options.base_url}/rest/api/{self._api}/myself")
        except RateLimited:
            raise
        except HttpError:
            return _ZONE_NOT_KNOWN
        name = me.data.get("timeZone") if isinstance(me.data, dict) else None
        if not isinstance(name, str) or not name:
            return _ZONE_NOT_KNOWN
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            return _ZONE_NOT_KNOWN

    def _histories(self, client: HttpClient, issue: dict[str, Any]) -> list[Any]:
        log = issue.get("changelog")
        if not isinstance(log, dict):
            raise BadPayload(
                f"issue {issue.get('key')}: field 'changelog' is missing "
                "(was expand=changelog ignored?)"
            )
        histories = log.get("histories") or []
        if not isinstance(histories, list):
            raise BadPayload(f"issue {issue.get('key')}: field 'changelog.histories' is not a list")
        total = log.get("total")
        if isinstance(total, int) and total > len(histories):
            # The search embeds at most a page of histories: read them all.
            histories, start = [], 0
            url = f"{self.options.base_url}/rest/api/{self._api}/issue/{issue['key']}/changelog"
            listing = client.listing(self.options.base_url, self.options.max_pages)
            while True:
                resp = client.get_json(url, params={"startAt": start, "maxResults": 100})
                values = resp.data.get("values") if isinstance(resp.data, dict) else None
                if not isinstance(values, list):
                    raise BadPayload(f"GET {resp.url}: field 'values' is missing")
                histories.extend(values)
                start += len(values)
                page_total = resp.data.get("total")
                if (
                    not values
                    or resp.data.get("isLast") is True
                    or start >= (page_total if isinstance(page_total, int) else total)
                ):
                    break
                listing.going_on(resp)
        return histories

    def _choose_api(self, client: HttpClient, cached: Any) -> Literal["2", "3"]:
        """The search API to use: the forced one, the one a cursor remembers, Cloud's by
        its host, else what ``/rest/api/2/serverInfo`` says (``deploymentType`` "Cloud"
        → 3), else 2 (a 410 on it switches to 3, see :meth:`_search_pages`)."""
        known = self.options.search_api
        if known is not None:
            return known
        if cached in ("2", "3"):
            return cached  # type: ignore[no-any-return]
        try:
            info = client.get_json(f"{self.options.base_url}/rest/api/2/serverInfo")
        except HttpError as exc:
            if isinstance(exc, RateLimited):
                raise
            return "2"
        data = info.data if isinstance(info.data, dict) else {}
        return "3" if str(data.get("deploymentType", "")).lower() == "cloud" else "2"

    def _search_pages(self, client: HttpClient, jql: str, fields: str = _FIELDS):  # type: ignore[no-untyped-def]
        """Pages of issues; with the default ``fields``, each with its changelog."""
        if self._api == "2":
            try:
                yield from self._search_pages_v2(client, jql, fields)
                return
            except HttpError as exc:
                # Cloud removed the v2 search (410 Gone): a site "auto" took for Data Center
                # (a custom domain, a proxy) is Cloud after all
                if exc.status != 410 or self.options.api_version != "auto" or self._paged:
                    raise
                self._api = "3"
        yield from self._search_pages_v3(client, jql, fields)

    def _search_pages_v3(self, client: HttpClient, jql: str, fields: str):  # type: ignore[no-untyped-def]
        url = f"{self.options.base_url}/rest/api/3/search/jql"
        token = None
        tokens: set[str] = set()
        listing = client.listing(self.options.base_url, self.options.max_pages)
        while True:
            params = {"jql": jql, "maxResults": self.options.page_size, "fields": fields}
            if fields == _FIELDS:
                params["expand"] = "changelog"
            if token:
                params["nextPageToken"] = token
            resp = client.get_json(url, params=params)
            issues = _issues_of(resp)
            yield issues
            token = resp.data.get("nextPageToken")
            if token is None or token == "" or resp.data.get("isLast") is True:
                return
            # (any other token that is not a new string would ask for a page read before,
            # for as long as the run lasts)
            if not isinstance(token, str):
                raise BadPayload(f"GET {resp.url}: field 'nextPageToken' is not a string")
            if token in tokens:
                raise BadPayload(f"GET {resp.url}: field 'nextPageToken' repeats an earlier one")
            tokens.add(token)
            listing.going_on(resp)

    def _search_pages_v2(self, client: HttpClient, jql: str, fields: str):  # type: ignore[no-untyped-def]
        """Pages by ``startAt``. An issue leaving the results between two pages (moved,
        deleted, resolved under an unresolved-only query) moves every later one up a
        place, and one is on no page read: when ``total`` falls by n, the n places before
        the page just read are asked for (a page of n), then the listing goes on after it
        (what is read twice is dropped by the per-issue history ids). When the results
        moved again meanwhile, ``_unsure`` is set: the pull keeps its watermark, and the
        next one reads the window again."""
        url = f"{self.options.base_url}/rest/api/2/search"
        start = 0
        self._paged = False
        last_total: int | None = None
        listing = client.listing(self.options.base_url, self.options.max_pages)

        def page(at: int, size: int):  # type: ignore[no-untyped-def]
            params = {"jql": jql, "startAt": at, "maxResults": size, "fields": fields}
            if fields == _FIELDS:
                params["expand"] = "changelog"
            return client.get_json(url, params=params)

        while True:
            resp = page(start, self.options.page_size)
            issues = _issues_of(resp)
            self._paged = True
            yield issues
            total = resp.data.get("total")
            if not isinstance(total, int):
                return
            fell = last_total - total if last_total is not None and total < last_total else 0
            last_total = total
            if fell and start > 0:
                listing.going_on(resp)
                asked = min(fell, start)
                missed = page(start - asked, asked)
                gap = _issues_of(missed)
                yield gap
                again = missed.data.get("total")
                if not isinstance(again, int) or again != total or len(gap) < asked:
                    # it moved again meanwhile, or the server gave fewer than asked (its
                    # maxResults cap): the pull keeps its watermark, the next reads again
                    self._unsure = True
            start += len(issues)
            if not issues or start >= total:
                return
            listing.going_on(resp)

    def pull(self, cursor: str | None) -> PullResult:
        try:
            state = load_cursor(cursor, KIND)
        except ValueError as exc:
            return PullResult(
                [],
                cursor,
                error=f"jira source {self.name!r}: unreadable cursor "
                f"({exc}); reset the source's state to read from scratch",
            )
        since: str | None = state.get("since")
        seen: dict[str, int] = dict(state.get("seen", {}))
        events: list[ChangeEvent] = []
        skipped: list[str] = []
        newest: datetime | None = parse_time(since, "since") if since else None
        pulled_at = datetime.fromtimestamp(self._clock(), UTC)
        areas = load_areas(state)
        claims: list[AreaClaim] = load_pending_claims(state)  # (a failed pull's, unfolded)
        known = as_folded(areas, claims)  # what restores compare with
        read: set[str] = set()  # the issues this pull read
        areas_told: dict[str, set[str]] = {}  # per issue, the areas this pull has claims on

        def cursor_now(watermark: str | None, failed: bool = False) -> str:
            # the component claims read so far become ownership events, and the state they
            # leave; a failed pull keeps them for the next one, which reads the older issues
            # it did not reach, to fold them all in time order
            if not failed:
                events.extend(fold_area_owners(claims, areas, self.name))
                claims.clear()
            body = {"since": watermark, "seen": seen, **areas.cursor()}
            if claims:
                body["pending_claims"] = pending_claims(claims)
            if self.options.api_version == "auto" and self._known_api:
                body["api"] = self._api  # what the site told "auto", asked once
            return dump_cursor(KIND, body)

        self._known_api = False
        try:
            client = self._client()
            self._api = self._choose_api(client, state.get("api"))
            self._known_api = True
            self._unsure = False
            zone = self._user_zone(client) if since else UTC
            jql = self._jql(since, zone)
            for page, issues in enumerate(self._search_pages(client, jql), start=1):
                for index, issue in enumerate(issues):
                    try:
                        key = require(issue, "key", str, "")
                        updated = parse_time(
                            require(issue, "fields", dict, "").get("updated"), "fields.updated"
                        )
                    except Malformed as exc:
                        skipped.append(f"search page {page} issue {index}: {exc}")
                        continue
                    read.add(key)
                    histories = self._histories(client, issue)
                    try:
                        issue_claims: list[AreaClaim] = []
                        now: dict[str, frozenset[str]] = {}
                        new, watermark = self.replay(
                            issue, histories, seen.get(key), skipped, issue_claims, now
                        )
                    except Malformed as exc:
                        skipped.append(f"{key}: {exc}")
                    else:
                        events.extend(new)
                        claims.extend(issue_claims)
                        seen[key] = watermark
                        claims.extend(
                            restores(
                                known,
                                key,
                                now,
                                issue_claims,
                                areas_told,
                                updated,
                                order=(*_key_order(key), watermark),
                                base_id=f"{KIND}:{key}:{watermark}:read:{int(updated.timestamp())}",
                                metadata={"url": self._browse(key)},
                            )
                        )
                        claims.extend(
                            _named_no_more(
                                known,
                                key,
                                issue["fields"],
                                areas_told,
                                updated,
                                order=(*_key_order(key), watermark),
                                base_id=f"{KIND}:{key}:{watermark}:read:{int(updated.timestamp())}",
                                metadata={"url": self._browse(key)},
                            )
                        )
                    if newest is None or updated > newest:
                        newest = updated
            if since:
                claims.extend(self._gone(client, areas, read, parse_time(since, "since")))
        except HttpError as exc:
            hint = ""
            if exc.status == 410 and self._api == "2":
                hint = (
                    '; Jira Cloud removed /rest/api/2/search: set api_version = "3" '
                    '(or leave it "auto" with the site\'s atlassian.net address)'
                )
            done = cursor_now(since, failed=True)
            return PullResult(
                _ordered(events),
                done,
                error=f"jira source {self.name!r}: {exc}{hint}",
                skipped=skipped,
            )
        # never past this pull: an issue "updated" in the year 9999 would hide every later one
        if self._unsure:  # (the results kept moving under the listing: read them again)
            newest = parse_time(since, "since") if since else None
        done = cursor_now(format_time(min(newest, pulled_at)) if newest else since)
        return PullResult(_ordered(events), done, skipped=skipped)

    def _gone(
        self, client: HttpClient, areas: AreaOwners, read: set[str], last_seen: datetime
    ) -> list[AreaClaim]:
        """The lapses of claims whose issue this pull did not read and that is no longer an
        unresolved issue of the query: moved to another project, deleted, or out of the
        query some other way (resolved under ``resolution = Unresolved``), none of which
        the search for updated issues returns. Each lapses as of ``last_seen`` (the
        watermark before this pull), so a newer claim on its component replaces it. The
        unresolved issues are listed (keys only) only while such a claim is held."""
        held = {t for holders in areas.active.values() for t in holders if t not in read}
        if not held:
            return []
        still: set[str] = set()
        jql = f"({self.options.jql}) AND resolution is EMPTY ORDER BY key"
        for issues in self._search_pages(client, jql, fields="resolution"):
            still.update(
                i["key"] for i in issues if isinstance(i, dict) and isinstance(i.get("key"), str)
            )
        stamp = int(last_seen.timestamp())
        missing = sorted(held - still)
        return lapses_of_gone(
            areas,
            {key for key in missing if not self._still_in_query(client, key)},
            last_seen,
            reason="{ticket} is no longer an unresolved issue of the query (moved, deleted "
            "or filtered out)",
            base_id=lambda ticket: f"{KIND}:{ticket}:gone:{stamp}",
            order=lambda ticket: (*_key_order(ticket), 0),
        )

    def _still_in_query(self, client: HttpClient, key: str) -> bool:
        """Whether an issue missing from the listed keys is an unresolved issue of the
        query after all (a list paged by ``startAt`` skips one when an earlier issue is
        resolved meanwhile), asked of the issue: 404 (deleted, or no longer visible) or
        another key (moved) is no; else a search for that key alone says."""
        try:
            found = client.get_json(
                f"{self.options.base_url}/rest/api/{self._api}/issue/{key}",
                params={"fields": "resolution"},
            )
        except HttpError as exc:
            if exc.status == 404:
                return False
            raise
        if not isinstance(found.data, dict) or found.data.get("key") != key:
            return False  # moved: Jira answers with the issue under its new key
        jql = f"key = {key} AND ({self.options.jql}) AND resolution is EMPTY"
        return any(issues for issues in self._search_pages(client, jql, fields="resolution"))


def _named_no_more(
    areas: AreaOwners,
    ticket: str,
    fields: Mapping[str, Any],
    told: dict[str, set[str]],
    at: datetime,
    *,
    order: tuple[Any, ...],
    base_id: str,
    metadata: Mapping[str, str],
) -> list[AreaClaim]:
    """The retractions of the claims ``ticket``, read whole in this pull, holds on areas
    no component of it is named now, where no claim of this pull about the ticket says
    anything (``told``, as :func:`restores` keeps it). Renaming a component (or deleting
    it) writes nothing into its issues' changelogs and leaves their ``updated`` alone, and
    the issue's claims are read under the names its components have now: the claim under
    the old name, which nothing else ends, would be held for good."""
    names = {
        c["name"]
        for c in fields.get("components") or ()
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    }
    areas_told = told.setdefault(ticket, set())
    out = [
        AreaClaim(
            at,
            order,
            area,
            ticket,
            frozenset(),
            f"{ticket} no longer has a component named {area!r} (renamed or deleted since)",
            base_id,
            metadata,
            retracted=True,
        )
        for area, holders in sorted(areas.active.items())
        if ticket in holders and area not in names and area not in areas_told
    ]
    areas_told.update(claim.area for claim in out)
    return out


#: The zone a date is written in when the API user's is not known: the westernmost
#: (UTC-12), whose wall time every zone (UTC-12 to UTC+14) reads as that instant or earlier.
_ZONE_NOT_KNOWN = timezone(timedelta(hours=-12))


def _wall_time_no_later(start: datetime, zone: tzinfo) -> datetime:
    """``start`` in ``zone``, as a wall time no reading of which is later than ``start``. In
    the hour a zone sets its clocks back a wall time names two instants, and JQL may read
    the later (ICU's and Java's default for a repeated wall time): the earlier one is then
    written as the wall time that much before it, just before the repeated hour."""
    local = start.astimezone(zone)
    later = local.replace(fold=1).astimezone(UTC)  # (the same wall time, read the other way)
    if later > start:
        local = (start - (later - start)).astimezone(zone)
    return local


def _key_order(key: str) -> tuple[str, int]:
    project, _, number = key.rpartition("-")
    return project, int(number) if number.isdigit() else 0


def _ordered(events: list[ChangeEvent]) -> list[ChangeEvent]:
    """Event-time order; ties by issue key (project, then number), then changelog order."""

    def key(event: ChangeEvent) -> tuple[datetime, str, int]:
        project, _, number = event.id.split(":")[1].rpartition("-")
        return event.timestamp, project, int(number) if number.isdigit() else 0

    return sorted(events, key=key)


def _issues_of(resp: Any) -> list[Any]:
    if not isinstance(resp.data, dict) or not isinstance(resp.data.get("issues"), list):
        raise BadPayload(f"GET {resp.url}: field 'issues' is missing or not a list")
    issues: list[Any] = resp.data["issues"]
    return issues


@register_source(KIND)
def jira_source(name: str, options: Mapping[str, Any]) -> JiraSource:
    return JiraSource(name, validate_options(JiraOptions, name, options))
