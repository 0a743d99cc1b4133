"""Fake GitHub and Jira REST APIs for the ticket-source tests, served by pytest-httpserver.

Payloads follow the documented response shapes (GitHub REST 2022-11-28 issues and issue
events; Jira REST v2 search / v3 search/jql with ``expand=changelog``). The fakes keep an
in-memory model that tests mutate between runs, paginate with ``Link`` headers (GitHub) or
``startAt``/``total`` and ``nextPageToken`` (Jira), answer ``If-None-Match`` with 304, and
can inject faults (status codes with headers, truncated bodies, slow answers) into the next
requests whose path matches.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest
import requests
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

SECRET = "ghp_s3cretTOKENvalue0123456789"

# -- GitHub -------------------------------------------------------------------------------


def gh_user(login: str, uid: int = 1) -> dict[str, Any]:
    return {
        "login": login,
        "id": uid,
        "node_id": f"MDQ6VXNlcj{uid}",
        "avatar_url": f"https://github.com/images/{login}.gif",
        "gravatar_id": "",
        "url": f"https://api.github.com/users/{login}",
        "html_url": f"https://github.com/{login}",
        "type": "User",
        "site_admin": False,
    }


def gh_label(name: str) -> dict[str, Any]:
    return {
        "id": abs(hash(name)) % 10_000_000,
        "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=",
        "url": f"https://api.github.com/repos/acme/payments/labels/{name}",
        "name": name,
        "description": "",
        "color": "f29513",
        "default": False,
    }


def gh_issue(
    number: int,
    title: str,
    *,
    state: str = "open",
    state_reason: str | None = None,
    labels: tuple[str, ...] = (),
    assignees: tuple[str, ...] = (),
    created_at: str = "2024-01-01T10:00:00Z",
    updated_at: str = "2024-01-01T10:00:00Z",
    closed_at: str | None = None,
    repo: str = "acme/payments",
    pull_request: bool = False,
) -> dict[str, Any]:
    api = f"https://api.github.com/repos/{repo}"
    issue = {
        "id": 1000 + number,
        "node_id": f"MDU6SXNzdWUx{number}",
        "url": f"{api}/issues/{number}",
        "repository_url": api,
        "labels_url": f"{api}/issues/{number}/labels{{/name}}",
        "comments_url": f"{api}/issues/{number}/comments",
        "events_url": f"{api}/issues/{number}/events",
        "html_url": f"https://github.com/{repo}/issues/{number}",
        "number": number,
        "state": state,
        "state_reason": state_reason,
        "title": title,
        "body": "…",
        "user": gh_user("octocat"),
        "labels": [gh_label(n) for n in labels],
        "assignee": gh_user(assignees[0]) if assignees else None,
        "assignees": [gh_user(a, i + 2) for i, a in enumerate(assignees)],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": 0,
        "closed_at": closed_at,
        "created_at": created_at,
        "updated_at": updated_at,
        "closed_by": None,
        "author_association": "MEMBER",
    }
    if pull_request:
        issue["pull_request"] = {
            "url": f"{api}/pulls/{number}",
            "html_url": f"https://github.com/{repo}/pull/{number}",
            "diff_url": "",
            "patch_url": "",
        }
    return issue


def gh_event(eid: int, event: str, created_at: str, **extra: Any) -> dict[str, Any]:
    out = {
        "id": eid,
        "node_id": f"MDEwOklzc3VlRXZlbnQx{eid}",
        "url": f"https://api.github.com/repos/acme/payments/issues/events/{eid}",
        "actor": gh_user("octocat"),
        "event": event,
        "commit_id": None,
        "commit_url": None,
        "created_at": created_at,
        "performed_via_github_app": None,
    }
    out.update(extra)
    return out


def labeled(eid: int, at: str, name: str, unlabel: bool = False) -> dict[str, Any]:
    return gh_event(
        eid, "unlabeled" if unlabel else "labeled", at, label={"name": name, "color": "f29513"}
    )


def assigned(eid: int, at: str, login: str, unassign: bool = False) -> dict[str, Any]:
    return gh_event(
        eid,
        "unassigned" if unassign else "assigned",
        at,
        assignee=gh_user(login, 7),
        assigner=gh_user("octocat"),
    )


def closed(eid: int, at: str, reason: str | None = "completed") -> dict[str, Any]:
    return gh_event(eid, "closed", at, state_reason=reason)


def renamed(eid: int, at: str, old: str, new: str) -> dict[str, Any]:
    return gh_event(eid, "renamed", at, rename={"from": old, "to": new})


@dataclass
class Fault:
    path: str  # regex searched in the request path
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: str | bytes = '{"message": "Server Error"}'
    delay: float = 0.0  # seconds slept before answering (timeouts)
    times: int = 1


class FakeApi:
    """Shared fault injection and request log."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.faults: list[Fault] = []
        self.log: list[Request] = []
        server.expect_request(re.compile(r".*")).respond_with_handler(self._handle)

    @property
    def base_url(self) -> str:
        return self.server.url_for("").rstrip("/")

    def fail(self, path: str, **kwargs: Any) -> Fault:
        fault = Fault(path, **kwargs)
        self.faults.append(fault)
        return fault

    def paths(self) -> list[str]:
        return [r.path for r in self.log]

    def _handle(self, request: Request) -> Response:
        self.log.append(request)
        for fault in self.faults:
            if fault.times > 0 and re.search(fault.path, request.path):
                fault.times -= 1
                if fault.delay:
                    time.sleep(fault.delay)
                return Response(
                    fault.body,
                    status=fault.status,
                    headers=fault.headers,
                    content_type="application/json",
                )
        return self.route(request)

    def route(self, request: Request) -> Response:  # pragma: no cover - overridden
        raise NotImplementedError

    @staticmethod
    def json_response(
        request: Request,
        data: Any,
        headers: dict[str, str] | None = None,
        conditional: bool = False,
    ) -> Response:
        body = json.dumps(data)
        headers = dict(headers or {})
        if conditional:
            etag = 'W/"' + hashlib.sha1(body.encode()).hexdigest() + '"'
            headers["ETag"] = etag
            if request.headers.get("If-None-Match") == etag:
                return Response(status=304, headers=headers)
        return Response(body, status=200, headers=headers, content_type="application/json")


class FakeGitHub(FakeApi):
    def __init__(self, server: Any, repo: str = "acme/payments") -> None:
        super().__init__(server)
        self.repo = repo
        self.issues: dict[int, dict[str, Any]] = {}
        self.events: dict[int, list[dict[str, Any]]] = {}

    def add(self, issue: dict[str, Any], events: list[dict[str, Any]]) -> None:
        self.issues[issue["number"]] = issue
        self.events[issue["number"]] = events

    def _page(self, request: Request, items: list[Any], extra: dict[str, str]) -> Response:
        per_page = int(request.args.get("per_page", 30))
        page = int(request.args.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        base = self.base_url + request.path

        def link(p: int, rel: str) -> str:
            return f'<{base}?{urlencode({**extra, "per_page": per_page, "page": p})}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        headers = {"Link": ", ".join(links)} if links else {}
        headers.update(
            {
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": "4999",
                "X-RateLimit-Reset": "1800000000",
                "X-RateLimit-Resource": "core",
            }
        )
        return self.json_response(request, chunk, headers, conditional=True)

    def route(self, request: Request) -> Response:
        prefix = f"/repos/{self.repo}/issues"
        if request.path == prefix:
            state = request.args.get("state", "open")  # GitHub's default
            assert state in ("open", "closed", "all")
            since = request.args.get("since")
            here = f"/repos/{self.repo}"  # (a transferred issue lists where it went)
            items = sorted(
                (
                    i
                    for i in self.issues.values()
                    if state in ("all", i["state"]) and i["repository_url"].endswith(here)
                ),
                key=lambda i: (i["updated_at"], i["number"]),
                reverse=request.args.get("direction") == "desc",
            )
            if since:
                items = [i for i in items if i["updated_at"] >= since]
            extra = {
                k: request.args[k]
                for k in ("state", "sort", "direction", "since")
                if k in request.args
            }
            return self._page(request, items, extra)
        match = re.fullmatch(prefix + r"/(\d+)", request.path)
        if match and int(match.group(1)) in self.issues:  # "Get an issue"
            return self.json_response(request, self.issues[int(match.group(1))], {})
        match = re.fullmatch(prefix + r"/(\d+)/(events|timeline)", request.path)
        if match and int(match.group(1)) in self.events:
            return self._page(request, self.events[int(match.group(1))], {})
        return Response('{"message": "Not Found"}', status=404, content_type="application/json")


# -- Jira ---------------------------------------------------------------------------------


def jira_history(hid: int, created: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(hid),
        "author": {
            "self": "https://jira.example.com/rest/api/2/user?username=alice",
            "name": "alice",
            "key": "alice",
            "displayName": "Alice Doe",
            "active": True,
            "timeZone": "Europe/Berlin",
        },
        "created": created,
        "items": list(items),
    }


def jira_item(
    field: str, from_: str | None, from_s: str | None, to: str | None, to_s: str | None
) -> dict[str, Any]:
    return {
        "field": field,
        "fieldtype": "jira",
        "from": from_,
        "fromString": from_s,
        "to": to,
        "toString": to_s,
    }


def jira_resolved(
    hid: int,
    created: str,
    status: str,
    resolution: str,
    *,
    status_id: str = "10001",
    resolution_id: str = "10000",
) -> dict[str, Any]:
    """A changelog entry moving an issue from To Do to ``status``, resolved as ``resolution``."""
    return jira_history(
        hid,
        created,
        jira_item("status", "1", "To Do", status_id, status),
        jira_item("resolution", None, None, resolution_id, resolution),
    )


def jira_user(name: str) -> dict[str, Any]:
    return {
        "self": f"https://jira.example.com/rest/api/2/user?username={name}",
        "name": name,
        "key": name,
        "emailAddress": f"{name}@example.com",
        "displayName": name.title(),
        "active": True,
        "timeZone": "UTC",
    }


def jira_issue(
    key: str,
    summary: str,
    *,
    issuetype: str = "Story",
    status: str = "To Do",
    resolution: str | None = None,
    assignee: str | None = None,
    components: tuple[str, ...] = (),
    labels: tuple[str, ...] = (),
    created: str = "2024-01-01T10:00:00.000+0000",
    updated: str = "2024-01-01T10:00:00.000+0000",
    histories: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    histories = histories or []
    num = int(key.split("-")[1])
    return {
        "expand": "operations,versionedRepresentations,editmeta,changelog,renderedFields",
        "id": str(10000 + num),
        "self": f"https://jira.example.com/rest/api/2/issue/{10000 + num}",
        "key": key,
        "fields": {
            "summary": summary,
            "issuetype": {
                "self": "https://jira.example.com/rest/api/2/issuetype/10001",
                "id": "10001",
                "name": issuetype,
                "subtask": False,
            },
            "status": {
                "self": "https://jira.example.com/rest/api/2/status/3",
                "id": "3",
                "name": status,
                "statusCategory": {
                    "id": 3,
                    "key": "done" if resolution else "new",
                    "name": "Done" if resolution else "To Do",
                },
            },
            "resolution": (
                {
                    "self": "https://jira.example.com/rest/api/2/resolution/1",
                    "id": "1",
                    "name": resolution,
                }
                if resolution
                else None
            ),
            "assignee": jira_user(assignee) if assignee else None,
            "components": [
                {
                    "self": "https://jira.example.com/rest/api/2/component/1",
                    "id": str(i + 1),
                    "name": c,
                }
                for i, c in enumerate(components)
            ],
            "labels": list(labels),
            "created": created,
            "updated": updated,
        },
        "changelog": {
            "startAt": 0,
            "maxResults": len(histories),
            "total": len(histories),
            "histories": histories,
        },
    }


class FakeJira(FakeApi):
    def __init__(self, server: Any, embed_limit: int = 100) -> None:
        super().__init__(server)
        self.issues: dict[str, dict[str, Any]] = {}
        self.embed_limit = embed_limit
        self.removed_v2_search = False  # Jira Cloud: /rest/api/2/search answers 410 Gone
        # what /rest/api/2/serverInfo says: "Server" (Data Center, Server) or "Cloud"; None
        # for a proxy that does not pass it on (404)
        self.deployment_type: str | None = "Server"
        # the API user's time zone, which /myself gives and JQL reads a date in
        self.user_zone = "UTC"

    def add(self, issue: dict[str, Any]) -> None:
        self.issues[issue["key"]] = issue

    def _matching(self, jql: str, with_changelog: bool = True) -> list[dict[str, Any]]:
        items = list(self.issues.values())
        match = re.search(r'updated >= "(\d{4})/(\d\d)/(\d\d) (\d\d):(\d\d)"', jql)
        if match:
            start = datetime(*map(int, match.groups()), tzinfo=ZoneInfo(self.user_zone))
            items = [i for i in items if datetime.fromisoformat(i["fields"]["updated"]) >= start]
        one = re.match(r"key = ([A-Z]+-\d+) AND", jql)
        if one:
            items = [i for i in items if i["key"] == one.group(1)]
        if re.search(r"resolution (is EMPTY|= Unresolved)", jql):
            items = [i for i in items if i["fields"]["resolution"] is None]
        items.sort(key=lambda i: (i["fields"]["updated"], i["key"]), reverse=True)
        out = []
        for issue in items:
            issue = json.loads(json.dumps(issue))
            if not with_changelog:  # Jira sends what expand asks for
                del issue["changelog"]
                out.append(issue)
                continue
            log = issue["changelog"]
            if len(log["histories"]) > self.embed_limit:
                log["histories"] = log["histories"][: self.embed_limit]
                log["maxResults"] = self.embed_limit
            out.append(issue)
        return out

    @staticmethod
    def _expanded(request: Request) -> bool:
        """The changelog is asked for with every field healthd reads; a keys-only search
        (``fields=resolution``) asks for neither."""
        if request.args.get("fields") == "resolution":
            assert "expand" not in request.args
            return False
        assert request.args.get("expand") == "changelog"
        return True

    def route(self, request: Request) -> Response:
        if request.path in ("/rest/api/2/serverInfo", "/rest/api/3/serverInfo"):
            if self.deployment_type is None:
                return Response("<html>Not Found</html>", status=404, content_type="text/html")
            cloud = self.deployment_type == "Cloud"
            return self.json_response(
                request,
                {  # the fields Jira's serverInfo answers with (Cloud: no build date)
                    "baseUrl": self.base_url,
                    "version": "1001.0.0-SNAPSHOT" if cloud else "9.12.2",
                    "versionNumbers": [1001, 0, 0] if cloud else [9, 12, 2],
                    "deploymentType": self.deployment_type,
                    "buildNumber": 100264 if cloud else 9120002,
                    "serverTitle": "Jira",
                    **({} if cloud else {"buildDate": "2023-12-05T00:00:00.000+0000"}),
                },
            )
        if request.path in ("/rest/api/2/myself", "/rest/api/3/myself"):
            return self.json_response(
                request, {**jira_user("healthd-bot"), "timeZone": self.user_zone}
            )
        if request.path == "/rest/api/2/search" and self.removed_v2_search:
            return Response(
                '{"errorMessages": ["The requested API has been removed. Please migrate to '
                'the /rest/api/3/search/jql API."]}',
                status=410,
                content_type="application/json",
            )
        if request.path == "/rest/api/2/search":
            items = self._matching(request.args["jql"], self._expanded(request))
            start = int(request.args.get("startAt", 0))
            size = int(request.args.get("maxResults", 50))
            return self.json_response(
                request,
                {
                    "expand": "schema,names",
                    "startAt": start,
                    "maxResults": size,
                    "total": len(items),
                    "issues": items[start : start + size],
                },
            )
        if request.path == "/rest/api/3/search/jql":
            items = self._matching(request.args["jql"], self._expanded(request))
            start = int(request.args.get("nextPageToken", 0) or 0)
            size = int(request.args.get("maxResults", 50))
            body: dict[str, Any] = {"issues": items[start : start + size]}
            if start + size < len(items):
                body["nextPageToken"] = str(start + size)
                body["isLast"] = False
            else:
                body["isLast"] = True
            return self.json_response(request, body)
        match = re.fullmatch(r"/rest/api/[23]/issue/([A-Z]+-\d+)", request.path)
        if match and match.group(1) in self.issues:  # "Get issue" (fields as asked: enough)
            issue = self.issues[match.group(1)]
            return self.json_response(request, {k: issue[k] for k in ("id", "key", "fields")})
        match = re.fullmatch(r"/rest/api/[23]/issue/([A-Z]+-\d+)/changelog", request.path)
        if match and match.group(1) in self.issues:
            histories = self.issues[match.group(1)]["changelog"]["histories"]
            start = int(request.args.get("startAt", 0))
            size = int(request.args.get("maxResults", 100))
            values = histories[start : start + size]
            return self.json_response(
                request,
                {
                    "self": self.base_url + request.path,
                    "maxResults": size,
                    "startAt": start,
                    "total": len(histories),
                    "isLast": start + size >= len(histories),
                    "values": values,
                },
            )
        return Response(
            '{"errorMessages": ["not found"]}', status=404, content_type="application/json"
        )


class Sleeps:
    """An injectable ``sleep`` that records instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def ticket_source(
    source: Callable[..., Any],
    options: Callable[..., Any],
    name: str,
    settings: dict[str, Any],
    environ: dict[str, str],
    sleeps: Sleeps | None = None,
) -> Any:
    """A ticket source as the tests build it: two retries half a second apart and at most
    10 s of rate-limit wait unless ``settings`` say otherwise, a fresh session, a sleep that
    records, a fixed clock and jitter, and ``environ`` for its secrets."""
    retries = {"max_retries": 2, "backoff_seconds": 0.5, "max_rate_limit_wait_seconds": 10}
    return source(
        name,
        options(**{**retries, **settings}),
        session=requests.Session(),
        sleep=sleeps or Sleeps(),
        clock=lambda: 1_800_000_000.0,  # 2027-01-15: after every issue the fixtures hold
        rng=lambda: 0.5,
        environ=environ,
    )


def run_all(
    pull: Callable[[str | None], Any], cursor: str | None = None, limit: int = 10
) -> tuple[list[Any], str | None, list[Any]]:
    """Pull repeatedly until a pull succeeds; returns (all events, cursor, results)."""
    events, results = [], []
    for _ in range(limit):
        result = pull(cursor)
        results.append(result)
        events.extend(result.events)
        cursor = result.cursor
        if result.ok:
            break
    return events, cursor, results


@pytest.fixture(scope="module")
def _module_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    try:
        yield server
    finally:
        server.clear()
        if server.is_running():
            server.stop()


@pytest.fixture
def api_server(_module_server: HTTPServer) -> Iterator[HTTPServer]:
    """A real HTTP server on 127.0.0.1 (threaded, so a slow answer does not block a retry),
    shared by a module's tests and emptied after each."""
    _module_server.clear()
    yield _module_server
    _module_server.clear()
