"""The `github` source: requirements, decisions and ownership from GitHub Issues.

It lists the repository's issues with ``state=all&sort=updated&direction=desc&since=<cursor>``
(following ``Link`` pagination), and for each one reads its issue events
(``/issues/{n}/events``, or ``/timeline``) and replays them from the issue's creation:

* an issue carrying a requirement label (``requirement_labels``) asserts
  ``(<owner/repo>#<n>, requirement, <title>, requirement)`` while open; a decision label
  (``decision_labels``, which win over requirement labels) asserts the same with predicate
  and domain ``decision``;
* ``renamed`` revises the value from the old title to the new one; ``closed`` with
  ``state_reason`` ``completed`` (or none) revises it to ``done_value``; closed as
  ``not_planned`` or ``duplicate``, or the label removed, invalidates it with a reason;
  ``reopened`` brings the title back (revised from ``done``, or added again);
* an open issue with an area/component label (``area_label_prefixes``, e.g.
  ``area/billing``; ``keep_area_prefix`` keeps the prefix in the area's name) and assignees
  claims the area: ``(billing, owners, "<sorted logins>", ownership)`` holds the union of
  the assignees of every open issue claiming it, so one issue's change never erases what
  another still says; a change of that union revises it. A claim that lapses (the issue
  closed) is no evidence that the people stopped owning the area: it holds until a newer
  claim on the area replaces it (a reassignment, another issue's assignee), and without one
  the fact is simply not re-validated and ages out. An explicit retraction on the open
  issue (``unassigned``, or its area label ``unlabeled``) is: those people no longer own
  the area through it; the union is revised without them, or, when no other claim holds
  the area, the fact is invalidated ("carol unassigned from acme/payments#6"). The claims
  live in the cursor, so a run that reads one issue still knows the others'. A claim whose
  issue left the repository (transferred, deleted: no event here says so) lapses once a
  run finds it no longer among the open issues; the login ``ghost`` (a deleted account)
  is nobody. An event names a label as it was named then: an ``unlabeled`` event naming
  one the issue's events never put on removes the one it was renamed from.

Pull requests are left out unless ``include_pull_requests``; ``events_endpoint`` picks
``events`` or ``timeline``; ``per_page`` sets the page size (at most 100).

Event ids derive from GitHub's own event ids (``github:<owner/repo>#<n>:<event id>``), and
timestamps are the events' ``created_at``. The cursor (JSON) holds the ``since`` watermark,
the last event id seen per issue, and ETags: the first page of the issue list at the
current watermark (so an unchanged repository costs one 304, which GitHub does not count
against the rate limit) and single-page event lists of recently seen issues.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from healthd._http import BadPayload, HttpClient, HttpError, PagedHttpOptions, check_http_url
from healthd.logging import redact_text
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

KIND = "github"
_INTERESTING = frozenset(
    {"labeled", "unlabeled", "assigned", "unassigned", "closed", "reopened", "renamed"}
)
_INVALIDATING_REASONS = frozenset({"not_planned", "duplicate"})
_GONE = frozenset({404, 410})
#: The login GitHub puts in place of a deleted account, in every event that named it: no
#: person, so no owner (the account's assignments leave the issue's assignees with it)
GHOST = "ghost"


class GitHubOptions(PagedHttpOptions):
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    base_url: str = "https://api.github.com"
    token_env: str | None = "GITHUB_TOKEN"
    requirement_labels: list[str] = ["requirement", "type: requirement", "kind/requirement"]
    decision_labels: list[str] = ["decision", "adr", "type: decision", "kind/decision"]
    area_label_prefixes: list[str] = ["area/", "area:", "component/", "component:"]
    keep_area_prefix: bool = False
    done_value: str = Field("done", min_length=1)
    include_pull_requests: bool = False
    events_endpoint: Literal["events", "timeline"] = "events"
    per_page: int = Field(100, ge=1, le=100)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        url = check_http_url(value, "https://github.example.com/api/v3")
        if (urlsplit(url).hostname or "").lower() in ("github.com", "www.github.com"):
            # (its pages answer the API's paths with a 404 page of HTML)
            raise ValueError(
                "is the website, not its API: https://api.github.com (or leave it out); "
                "GitHub Enterprise Server: https://<host>/api/v3"
            )
        return url


class _Issue:
    """What replay needs from one item of the issue list."""

    __slots__ = ("closed_as", "is_pr", "labels", "number", "title", "updated_at", "url")

    def __init__(self, raw: Any) -> None:
        self.number = require(raw, "number", int, "")
        self.title = require(raw, "title", str, "")
        self.updated_at = parse_time(raw.get("updated_at"), "updated_at")
        self.url = raw.get("html_url") if isinstance(raw.get("html_url"), str) else ""
        self.is_pr = raw.get("pull_request") is not None
        # the names its labels have now (its events name each as it was named then); None
        # when the item does not say
        given = raw.get("labels")
        self.labels: frozenset[str] | None = (
            frozenset(
                name.lower()
                for label in given
                for name in [label.get("name") if isinstance(label, dict) else label]
                if isinstance(name, str)
            )
            if isinstance(given, list)
            else None
        )
        reason = raw.get("state_reason")
        # why the issue is closed now, as the issue says it (its last close event may not)
        self.closed_as = (
            reason if raw.get("state") == "closed" and isinstance(reason, str) else None
        )


class GitHubSource(TicketSource):
    kind = KIND
    options: GitHubOptions

    def __init__(self, name: str, options: GitHubOptions, **seams: Any) -> None:
        super().__init__(name, options, **seams)
        self._req = {label.lower() for label in options.requirement_labels}
        self._dec = {label.lower() for label in options.decision_labels}

    # -- mapping -----------------------------------------------------------------------------

    def _area(self, label: str) -> str | None:
        lowered = label.lower()
        for prefix in self.options.area_label_prefixes:
            if lowered.startswith(prefix.lower()) and len(label) > len(prefix):
                return label if self.options.keep_area_prefix else label[len(prefix) :].strip()
        return None

    def _facts(
        self,
        subject: str,
        title: str,
        labels: set[str],
        open_: bool,
        reason: str | None,
        assignees: set[str],
    ) -> dict[FactKey, Fact]:
        facts: dict[FactKey, Fact] = {}
        lowered = {label.lower() for label in labels}
        kind = "decision" if lowered & self._dec else "requirement" if lowered & self._req else None
        if kind is not None:
            if open_:
                value: str | None = title
            elif reason in _INVALIDATING_REASONS:
                value = None
            else:
                value = self.options.done_value
            if value is not None:
                fact = Fact(subject, kind, value, kind)  # type: ignore[arg-type]
                facts[fact.key] = fact
        return facts

    def _claims(
        self, labels: set[str], open_: bool, assignees: set[str]
    ) -> dict[str, frozenset[str]]:
        """The areas an issue claims (area label, open, assigned) → its assignees."""
        if not (open_ and assignees):
            return {}
        areas = {self._area(label) for label in labels}
        return {area: frozenset(assignees) for area in areas if area}

    def replay(
        self,
        issue: _Issue,
        raw_events: list[Any],
        after_id: int,
        skipped: list[str],
        claims: list[AreaClaim] | None = None,
        final: dict[str, frozenset[str]] | None = None,
    ) -> tuple[list[ChangeEvent], int]:
        """Events of one issue newer than ``after_id``, and the new per-issue watermark;
        its new claims on areas' ownership are appended to ``claims``, and what it claims
        after its last event is put in ``final``."""
        subject = f"{self.options.repo}#{issue.number}"
        parsed = []
        for index, raw in enumerate(raw_events, start=1):
            kind = raw.get("event") if isinstance(raw, dict) else None
            if not isinstance(kind, str):
                skipped.append(
                    f"{subject} event #{index}: field 'event' is missing or not a string"
                )
                continue
            if kind not in _INTERESTING:
                continue
            try:
                event_id = identifier(raw, "id", "")
                parsed.append((parse_time(raw.get("created_at"), "created_at"), event_id, raw))
            except Malformed as exc:
                skipped.append(f"{subject} event #{index} ({raw.get('event')}): {exc}")
        parsed.sort(key=lambda item: (item[0], item[1]))
        title = issue.title
        for _, _, raw in parsed:
            if (
                raw["event"] == "renamed"
                and isinstance(raw.get("rename"), dict)
                and isinstance(raw["rename"].get("from"), str)
            ):
                title = raw["rename"]["from"]
                break
        last_close = max(
            (i for i, (_, _, raw) in enumerate(parsed) if raw["event"] in ("closed", "reopened")),
            default=None,
        )
        named = [_label_name(raw) for _, _, raw in parsed]  # each event's label, if any
        # the labels the events before this one put on (an unlabeled event naming one of
        # them is no renamed label's; one put on only later may be the renamed label's
        # new name, put on again after its removal)
        put_on: set[str] = set()
        labels: set[str] = set()
        assignees: set[str] = set()
        open_, state_reason = True, None
        before: dict[FactKey, Fact] = {}
        claimed: dict[str, frozenset[str]] = {}
        out: list[ChangeEvent] = []
        watermark = after_id
        for position, (ts, event_id, raw) in enumerate(parsed):
            kind = raw["event"]
            watermark = max(watermark, event_id)
            try:
                if kind in ("labeled", "unlabeled"):
                    name = (
                        require(raw.get("label"), "name", str, "label")
                        if isinstance(raw.get("label"), dict)
                        else require(raw, "label", dict, "")
                    )
                    if kind == "unlabeled" and name not in labels:
                        # (GitHub's label names are one label whatever their case)
                        same = {held for held in labels if held.lower() == name.lower()}
                        if same:
                            labels -= same
                        elif name.lower() not in put_on:
                            labels -= _renamed_from(labels, issue.labels, named[position + 1 :])
                    (labels.add if kind == "labeled" else labels.discard)(name)
                    if kind == "labeled":
                        put_on.add(name.lower())
                    reason = f"label {name!r} removed"
                elif kind in ("assigned", "unassigned"):
                    login = (
                        require(raw.get("assignee"), "login", str, "assignee")
                        if isinstance(raw.get("assignee"), dict)
                        else require(raw, "assignee", dict, "")
                    )
                    if login != GHOST:
                        (assignees.add if kind == "assigned" else assignees.discard)(login)
                    reason = f"{login} unassigned, no assignee left"
                elif kind == "closed":
                    open_ = False
                    given = raw.get("state_reason")
                    if given is not None and not isinstance(given, str):
                        raise Malformed(
                            f"field 'state_reason' has the wrong type ({type(given).__name__})"
                        )
                    if not given and position == last_close:
                        given = issue.closed_as
                    state_reason = given or "completed"
                    reason = f"closed as {state_reason.replace('_', ' ')}"
                elif kind == "reopened":
                    open_, state_reason = True, None
                    reason = "reopened"
                else:  # renamed
                    rename = require(raw, "rename", dict, "")
                    title = require(rename, "to", str, "rename")
                    reason = "renamed"
            except Malformed as exc:
                skipped.append(f"{subject} event {event_id} ({kind}): {exc}")
                continue
            after = self._facts(subject, title, labels, open_, state_reason, assignees)
            now_claimed = self._claims(labels, open_, assignees)
            area_reason = (
                f"label {name!r} removed from {subject}"
                if kind == "unlabeled"
                else f"{login} unassigned from {subject}"
                if kind == "unassigned"
                else reason
            )
            if kind == "labeled":
                reason = f"label {name!r} added"  # a decision label replacing a requirement one
            changes = diff(before, after, reason)
            before = after
            moved = sorted(
                area
                for area in set(claimed) | set(now_claimed)
                if claimed.get(area) != now_claimed.get(area)
            )
            claimed_before, claimed = claimed, now_claimed
            if event_id <= after_id:
                continue
            base_id = f"{KIND}:{subject}:{event_id}"
            metadata = {"url": issue.url, "event": kind} if issue.url else {"event": kind}
            if claims is not None:
                claims.extend(
                    AreaClaim(
                        ts,
                        (issue.number, event_id),
                        area,
                        subject,
                        now_claimed.get(area, frozenset()),
                        area_reason,
                        base_id,
                        metadata,
                        retracted=_retracted(
                            claimed_before.get(area), now_claimed.get(area), open_
                        ),
                    )
                    for area in moved
                )
            if changes:
                out.extend(
                    to_events(
                        changes, base_id=base_id, timestamp=ts, source=self.name, metadata=metadata
                    )
                )
        if final is not None:
            final.update(claimed)
        return out, watermark

    # -- fetching ----------------------------------------------------------------------------

    def _client(self) -> HttpClient:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
        secrets: tuple[str, ...] = ()
        if self.options.token_env:
            token = env_credential(self.options.token_env, "token_env", self._environ)
            if not token:
                raise HttpError(
                    f"environment variable {self.options.token_env} (token_env) is "
                    'not set; set it, or token_env = "" for anonymous access'
                )
            headers["Authorization"] = f"Bearer {token}"
            secrets = (token,)
        return HttpClient(
            self.session,
            self.options,
            headers=headers,
            secrets=secrets,
            sleep=self._sleep,
            clock=self._clock,
            rng=self._rng,
        )

    def _issue_events(
        self, client: HttpClient, number: int, etag: str | None
    ) -> tuple[list[Any] | None, str | None]:
        """All events of one issue (None when the conditional request said 304)."""
        url: str | None = (
            f"{self.options.base_url}/repos/{self.options.repo}/issues/{number}/"
            f"{self.options.events_endpoint}"
        )
        per_page = self.options.per_page
        params: dict[str, Any] | None = {"per_page": per_page}
        items: list[Any] = []
        first_etag = None
        pages = 0
        listing = client.listing(self.options.base_url, self.options.max_pages)
        while url:
            resp = client.get_json(url, params=params, etag=etag if pages == 0 else None)
            if resp.not_modified:
                return None, etag
            if not isinstance(resp.data, list):
                raise BadPayload(
                    f"GET {resp.url} returned {type(resp.data).__name__}, "
                    "expected a JSON array of issue events"
                )
            if pages == 0 and "next" not in resp.links and len(resp.data) < per_page:
                # (only a page with room left: a full one's next event opens a page 2 and
                # leaves page 1 as it was, so its ETag would answer 304 for good)
                first_etag = resp.etag
            items.extend(resp.data)
            pages += 1
            url, params = listing.next_url(resp), None
        return items, first_etag

    def pull(self, cursor: str | None) -> PullResult:
        try:
            state = load_cursor(cursor, KIND)
        except ValueError as exc:
            return PullResult(
                [],
                cursor,
                error=f"github source {self.name!r}: unreadable "
                f"cursor ({exc}); reset the source's state to read from scratch",
            )
        since: str | None = state.get("since")
        seen: dict[str, int] = dict(state.get("seen", {}))
        # (not "event_etags", which a version before keeps for full pages too: a full page's
        # ETag answers 304 when the next event opens a page 2)
        old_etags: dict[str, str] = dict(state.get("event_page_etags", {}))
        list_etag = state.get("list_etag") if state.get("list_since") == since else None
        events: list[ChangeEvent] = []
        skipped: list[str] = []
        new_etags: dict[str, str] = {}
        areas = load_areas(state)
        claims: list[AreaClaim] = load_pending_claims(state)  # (a failed pull's, unfolded)
        read: set[int] = set()  # the issues whose events this pull read
        areas_told: dict[str, set[str]] = {}  # per issue, the areas this pull has claims on
        open_etag: str | None = state.get("open_etag")

        def cursor_now(complete: bool = False, failed: bool = False, **extra: Any) -> str:
            # the area claims read so far become ownership events, and the state they leave;
            # a failed pull keeps them for the next one, which reads the older issues it
            # did not reach, to fold them all in time order
            if not failed:
                events.extend(fold_area_owners(claims, areas, self.name))
                claims.clear()
            # After a complete pull only the event ETags of issues read in it are kept (the
            # issues at the watermark, read again next time); after a failure, all of them.
            etags = new_etags if complete else {**old_etags, **new_etags}
            body = {
                **({"pending_claims": pending_claims(claims)} if claims else {}),
                "since": since,
                "seen": seen,
                "event_page_etags": etags,
                "list_since": state.get("list_since"),
                "list_etag": state.get("list_etag"),
                "open_etag": open_etag,
                **areas.cursor(),
            }
            body.update(extra)
            return dump_cursor(KIND, body)

        try:
            client = self._client()
            # One pass at the current watermark; when it moved, one more pass at the new one
            # so the stored list ETag matches what the next run will ask for.
            last_seen = parse_time(since, "since") if since else None
            complete: dict[str, Any] = {"list_since": None, "list_etag": None}
            # (restores compare with the state as a failed pull's claims will leave it)
            known = as_folded(areas, claims)
            state_of_pull = (seen, old_etags, new_etags, events, skipped, claims, read, known)
            for attempt in range(2):
                outcome = self._pass(client, since, list_etag, *state_of_pull, areas_told)
                if outcome is None:  # 304: nothing changed since the watermark
                    complete = {}
                    break
                new_since, first_etag, pages = outcome
                if attempt == 0 and pages > 1:
                    # An issue leaving the listing between two of its pages (transferred,
                    # deleted) moves every later one up a place, and one is on no page
                    # read; past the new watermark it would never be read. The same window
                    # is listed again, the issues read passed over.
                    again = self._pass(
                        client, since, None, *state_of_pull, areas_told, passed=frozenset(read)
                    )
                    if again is not None:
                        new_since = again[0]
                if new_since == since:
                    complete = {"list_since": since, "list_etag": first_etag}
                    break
                since, list_etag = new_since, None
            if last_seen is not None:
                gone, open_etag = self._vanished(client, areas, read, last_seen, open_etag)
                claims.extend(gone)
            done = cursor_now(bool(complete), **complete)
            return PullResult(_ordered(events), done, skipped=skipped)
        except HttpError as exc:
            done = cursor_now(failed=True)
            return PullResult(
                _ordered(events),
                done,
                error=f"github source {self.name!r} ({self.options.repo}): {exc}",
                skipped=skipped,
            )

    def _pass(
        self,
        client: HttpClient,
        since: str | None,
        list_etag: str | None,
        seen: dict[str, int],
        old_etags: Mapping[str, str],
        new_etags: dict[str, str],
        events: list[ChangeEvent],
        skipped: list[str],
        claims: list[AreaClaim] | None = None,
        read: set[int] | None = None,
        areas: AreaOwners | None = None,
        areas_told: dict[str, set[str]] | None = None,
        passed: AbstractSet[int] = frozenset(),
    ) -> tuple[str | None, str | None, int] | None:
        """Read every issue updated since ``since`` (their numbers into ``read``) but those
        ``passed`` over; return (new watermark, first-page ETag, pages listed)."""
        url: str | None = f"{self.options.base_url}/repos/{self.options.repo}/issues"
        params: dict[str, Any] | None = {
            "state": "all",
            "sort": "updated",
            "direction": "desc",
            "per_page": self.options.per_page,
        }
        if since:
            params["since"] = since  # type: ignore[index]
        newest: datetime | None = parse_time(since, "since") if since else None
        pulled_at = datetime.fromtimestamp(self._clock(), UTC)
        retry_from: datetime | None = None  # the oldest issue skipped, to be read again
        first_etag = None
        page = 0
        listing = client.listing(self.options.base_url, self.options.max_pages)
        while url:
            try:
                resp = client.get_json(url, params=params, etag=list_etag if page == 0 else None)
            except HttpError as exc:
                raise self._unseen_repository(exc) if page == 0 else exc from None
            page += 1
            if resp.not_modified:
                return None
            if not isinstance(resp.data, list):
                raise BadPayload(
                    f"GET {resp.url} returned {type(resp.data).__name__}, "
                    "expected a JSON array of issues"
                )
            if page == 1:
                first_etag = resp.etag
            for index, raw in enumerate(resp.data, start=1):
                try:
                    issue = _Issue(raw)
                except Malformed as exc:
                    skipped.append(f"issues page {page} item {index}: {exc}")
                    continue
                if issue.number not in passed and (
                    self.options.include_pull_requests or not issue.is_pr
                ):
                    key = str(issue.number)
                    known = new_etags.get(key) or old_etags.get(key)
                    try:
                        raw_events, etag = self._issue_events(client, issue.number, known)
                    except HttpError as exc:
                        if exc.status not in _GONE:
                            raise
                        # deleted (410) or gone (404) since the list was made: the rest of
                        # the repository is still read, and the watermark stays at or before
                        # this issue, so a run after a passing 404 reads it again
                        line = f"{self.options.repo}#{issue.number}: {exc}; not read"
                        if line not in skipped:  # (a second pass meets it again)
                            skipped.append(line)
                        if retry_from is None or issue.updated_at < retry_from:
                            retry_from = issue.updated_at
                        continue
                    if read is not None:
                        read.add(issue.number)
                    if etag:
                        new_etags[key] = etag
                    if raw_events is not None:
                        issue_claims: list[AreaClaim] = []
                        now: dict[str, frozenset[str]] = {}
                        new, watermark = self.replay(
                            issue, raw_events, seen.get(key, 0), skipped, issue_claims, now
                        )
                        events.extend(new)
                        seen[key] = watermark
                        if claims is not None:
                            claims.extend(issue_claims)
                            if areas is not None and areas_told is not None:
                                subject = f"{self.options.repo}#{issue.number}"
                                claims.extend(
                                    restores(
                                        areas,
                                        subject,
                                        now,
                                        issue_claims,
                                        areas_told,
                                        issue.updated_at,
                                        order=(issue.number, watermark),
                                        # (not the id of the last event's own claim,
                                        # which this one repeats with other content)
                                        base_id=f"{KIND}:{subject}:{watermark}:read:"
                                        f"{int(issue.updated_at.timestamp())}",
                                        metadata={"url": issue.url, "event": "read"},
                                    )
                                )
                if newest is None or issue.updated_at > newest:
                    newest = issue.updated_at
            url, params = listing.next_url(resp), None
        # an issue "updated" past this pull (a broken clock's date) must not become the
        # watermark, or every issue updated before that date would never be read again
        if newest is not None and retry_from is not None:
            newest = min(newest, retry_from)
        return (format_time(min(newest, pulled_at)) if newest else since), first_etag, page

    def _unseen_repository(self, exc: HttpError) -> HttpError:
        """A 404 on the repository's issue list, said with what it means: GitHub answers 404,
        not 403, for a private repository the token may not read (or none is sent)."""
        if exc.status != 404:
            return exc
        if str(exc).endswith("HTTP 404"):  # without the API's JSON message: no API answered
            return HttpError(
                redact_text(
                    f"{exc}; no GitHub API answered at base_url {self.options.base_url} "
                    "(GitHub Enterprise Server's is https://<host>/api/v3; github.com's is "
                    "https://api.github.com)"
                ),
                status=404,
            )
        who = (
            f"the token in {self.options.token_env} (token_env) cannot read it"
            if self.options.token_env
            else "it is private and no token is sent (token_env is empty)"
        )
        return HttpError(
            f"{exc}; no repository {self.options.repo} here, or {who}: GitHub answers 404 "
            "for a private repository it does not show",
            status=404,
        )

    def _vanished(
        self,
        client: HttpClient,
        areas: AreaOwners,
        read: set[int],
        last_seen: datetime,
        etag: str | None,
    ) -> tuple[list[AreaClaim], str | None]:
        """The lapses of claims whose issue this pull did not read and that is no longer
        among the repository's open issues: transferred to another repository, deleted or
        converted to a discussion, none of which leaves an event here. Each lapses as of
        ``last_seen`` (the watermark before this pull, the last time the issue was known
        here), so a newer claim on its area replaces it. The open issues are listed only
        while such a claim is held; a one-page list is asked for with its ETag (a 304:
        nothing left it since it was last read), and the new ETag is returned."""
        prefix = f"{self.options.repo}#"
        held = {  # ticket → its issue number
            ticket: int(ticket[len(prefix) :])
            for holders in areas.active.values()
            for ticket in holders
            if ticket.startswith(prefix)
            and ticket[len(prefix) :].isdigit()
            and int(ticket[len(prefix) :]) not in read
        }
        if not held:
            return [], None
        url: str | None = f"{self.options.base_url}/repos/{self.options.repo}/issues"
        params: dict[str, Any] | None = {"state": "open", "per_page": self.options.per_page}
        open_numbers: set[int] = set()
        pages = 0
        new_etag = None
        listing = client.listing(self.options.base_url, self.options.max_pages)
        while url:
            resp = client.get_json(url, params=params, etag=etag if pages == 0 else None)
            if resp.not_modified:
                return [], etag
            if not isinstance(resp.data, list):
                raise BadPayload(
                    f"GET {resp.url} returned {type(resp.data).__name__}, "
                    "expected a JSON array of issues"
                )
            if pages == 0 and "next" not in resp.links:
                new_etag = resp.etag
            pages += 1
            open_numbers.update(
                raw["number"]
                for raw in resp.data
                if isinstance(raw, dict) and isinstance(raw.get("number"), int)
            )
            url, params = listing.next_url(resp), None
        stamp = int(last_seen.timestamp())
        missing = sorted(t for t, number in held.items() if number not in open_numbers)
        gone = {t for t in missing if self._gone(client, held[t])}
        lapses = lapses_of_gone(
            areas,
            gone,
            last_seen,
            reason=f"{{ticket}} is no longer an open issue of {self.options.repo} "
            "(transferred, deleted or converted to a discussion)",
            base_id=lambda ticket: f"{KIND}:{ticket}:0:gone:{stamp}",
            order=lambda ticket: (held[ticket], 0),
        )
        return lapses, new_etag

    def _gone(self, client: HttpClient, number: int) -> bool:
        """Whether an issue missing from the open list is gone from the repository, asked
        of the issue itself (a list paged while issues close can skip one): 404 or 410, or
        answered (through GitHub's 301) from another repository. Open or closed here, it
        is not: a close is read with the issue's events."""
        try:
            resp = client.get_json(
                f"{self.options.base_url}/repos/{self.options.repo}/issues/{number}"
            )
        except HttpError as exc:
            if exc.status in _GONE:
                return True
            raise
        where = resp.data.get("repository_url") if isinstance(resp.data, dict) else None
        if not isinstance(where, str):
            return False  # no sign it moved
        return not where.lower().endswith(f"/repos/{self.options.repo}".lower())


def _label_name(raw: Mapping[str, Any]) -> str | None:
    label = raw.get("label")
    name = label.get("name") if isinstance(label, dict) else None
    return name if isinstance(name, str) else None


def _renamed_from(
    held: AbstractSet[str], now: AbstractSet[str] | None, named_later: list[str | None]
) -> set[str]:
    """The label an ``unlabeled`` event removed when it names none the issue's events put
    on it: one renamed since it was put on (an event names a label as it was named then).
    It is the one label held that the issue does not carry now and that no later event
    names, when there is exactly one such; else none (nothing known is taken off)."""
    if now is None:
        return set()
    later = {name.lower() for name in named_later if name is not None}
    candidates = {name for name in held if name.lower() not in now and name.lower() not in later}
    return candidates if len(candidates) == 1 else set()


def _retracted(before: frozenset[str] | None, after: frozenset[str] | None, open_: bool) -> bool:
    """Whether an issue's claim on an area changed by taking people off it while the issue
    stays open (an unassignment, the area label removed): a retraction, not a lapse."""
    return open_ and before is not None and (after or frozenset()) < before


def _ordered(events: list[ChangeEvent]) -> list[ChangeEvent]:
    """Event-time order; ties by issue number, then GitHub's event id (ids look like
    ``github:<owner/repo>#<n>:<event id>[:...]``)."""

    def key(event: ChangeEvent) -> tuple[datetime, int, int]:
        _, where, api_id = event.id.split(":")[:3]
        return event.timestamp, int(where.rpartition("#")[2]), int(api_id)

    return sorted(events, key=key)


@register_source(KIND)
def github_source(name: str, options: Mapping[str, Any]) -> GitHubSource:
    return GitHubSource(name, validate_options(GitHubOptions, name, options))
