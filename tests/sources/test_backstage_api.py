"""The `backstage` source against a local imitation of a running catalog's API, built from
its documentation: ``GET /api/catalog/entities/by-query`` answers ``{items, totalItems,
pageInfo: {nextCursor, prevCursor}}``, takes ``filter`` (repeated: OR; commas: AND),
``limit`` and an opaque ``cursor`` that carries the query (so a cursor request takes no
filter), wants a bearer token, and answers errors as ``{error: {name, message}, request,
response: {statusCode}}``."""

from __future__ import annotations

import base64
import json
import logging
import socket
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
from _ticket_payloads import (
    Sleeps,
    _module_server,  # noqa: F401
    api_server,  # noqa: F401
)
from structlog.testing import capture_logs
from werkzeug import Request, Response

from healthd.sources.backstage import BackstageApiOptions, BackstageApiSource

TOKEN = "bk_s3cret-static-token-0123456789"


def entity(kind: str, name: str, spec: dict[str, Any], namespace: str = "default") -> dict:
    """An entity as the catalog serves it: stitched, with uid, etag and relations."""
    return {
        "apiVersion": "backstage.io/v1alpha1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{kind}-{name}",
            "etag": f"etag-{name}",
            "annotations": {"backstage.io/managed-by-location": f"url:https://x/{name}.yaml"},
        },
        "spec": spec,
        "relations": [],
    }


def component(name: str, owner: str, **spec: Any) -> dict:
    return entity(
        "Component", name, {"type": "service", "lifecycle": "production", "owner": owner, **spec}
    )


class FakeCatalog:
    """The catalog backend's entities-by-query endpoint, as strict as the real one."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.entities: list[dict] = []
        self.requests: list[Request] = []
        self.throttle = 0  # answer this many requests with 429 + Retry-After
        self.fail_page = 0  # answer requests for this page (1-based) with 500
        self.cursor_as: Any = None  # a broken proxy's nextCursor, in place of the real one
        self.restricted_to: str | None = None  # a static token's accessRestrictions (a plugin)
        self.pages_repeat = False  # every page gives the first page's items, cursors moving on
        self.last_page = 0  # a page after which no nextCursor is given (a proxy losing it)
        # as catalog-backend pages (DefaultEntitiesCatalog.queryEntities): a cursor after the
        # last entity given, totalItems counted at the first page and carried in the cursor
        self.keyset = False
        self.on_first_page: Any = None  # called once a first page is answered (a change)
        server.expect_request("/api/catalog/entities/by-query").respond_with_handler(self.handle)

    @property
    def base_url(self) -> str:
        return self.server.url_for("").rstrip("/")

    @staticmethod
    def error(status: int, name: str, message: str, request: Request) -> Response:
        body = {
            "error": {"name": name, "message": message},
            "request": {"method": request.method, "url": request.full_path},
            "response": {"statusCode": status},
        }
        return Response(json.dumps(body), status=status, content_type="application/json")

    def handle(self, request: Request) -> Response:
        self.requests.append(request)
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.error(401, "AuthenticationError", "Missing credentials", request)
        if self.restricted_to is not None:
            message = f"This token's access is restricted to plugin(s) '{self.restricted_to}'"
            return self.error(403, "NotAllowedError", message, request)
        if self.throttle:
            self.throttle -= 1
            response = self.error(429, "TooManyRequests", "Too many requests", request)
            response.headers["Retry-After"] = "2"
            return response
        limit = int(request.args.get("limit", 20))
        if self.keyset:
            return self.keyset_page(request, limit)
        if request.args.get("cursor"):
            if request.args.getlist("filter"):
                return self.error(400, "InputError", "cursor and filter are exclusive", request)
            state = json.loads(base64.b64decode(request.args["cursor"]))
            filters, offset = state["filter"], state["offset"]
        else:
            filters, offset = request.args.getlist("filter"), 0
        page = offset // limit + 1 if limit else None  # (limit=0: the count alone)
        if self.fail_page == page:
            return self.error(500, "Error", "database went away", request)
        matching = [e for e in self.entities if self._matches(e, filters)]
        matching.sort(key=lambda e: (str(e.get("kind")).lower(), e["metadata"]["name"]))
        items = matching[0 if self.pages_repeat else offset :][:limit]
        if request.args.get("fields"):
            items = [self._project(e, request.args["fields"].split(",")) for e in items]
        info: dict[str, Any] = {}

        def cursor(at: int) -> str:
            return base64.b64encode(json.dumps({"filter": filters, "offset": at}).encode()).decode()

        if offset + limit < len(matching) and page != self.last_page:
            info["nextCursor"] = self.cursor_as or cursor(offset + limit)
        if offset > 0:
            info["prevCursor"] = cursor(max(0, offset - limit))
        body = {"items": items, "totalItems": len(matching), "pageInfo": info}
        return Response(json.dumps(body), content_type="application/json")

    def keyset_page(self, request: Request, limit: int) -> Response:
        def key(e: dict) -> list[str]:
            if "uid" in e["metadata"]:  # (the catalog's order: entity_id, which is the uid)
                return [e["metadata"]["uid"]]
            return [str(e.get("kind")).lower(), e["metadata"]["name"]]

        state: dict[str, Any] = {}
        if request.args.get("cursor"):
            state = json.loads(base64.b64decode(request.args["cursor"]))
        filters = state.get("filter", request.args.getlist("filter"))
        matching = sorted((e for e in self.entities if self._matches(e, filters)), key=key)
        total = state.get("total", len(matching))  # (counted once, at the first page)
        after = state.get("after")
        rest = [e for e in matching if after is None or key(e) > after]
        items = rest[:limit]
        info: dict[str, Any] = {}
        if limit and len(rest) > limit:
            cursor = {"filter": filters, "after": key(items[-1]), "total": total}
            info["nextCursor"] = base64.b64encode(json.dumps(cursor).encode()).decode()
        if request.args.get("fields"):
            items = [self._project(e, request.args["fields"].split(",")) for e in items]
        if not state and limit and self.on_first_page is not None:
            self.on_first_page()
        body = {"items": items, "totalItems": total, "pageInfo": info}
        return Response(json.dumps(body), content_type="application/json")

    @staticmethod
    def _project(item: dict, fields: list[str]) -> dict:
        """Only the dot paths asked for, as the catalog's ``fields`` parameter does."""
        out: dict = {}
        for path in fields:
            source, target = item, out
            parts = path.split(".")
            for part in parts[:-1]:
                if not isinstance(source, dict) or part not in source:
                    break
                source = source[part]
                target = target.setdefault(part, {})
            else:
                if isinstance(source, dict) and parts[-1] in source:
                    target[parts[-1]] = source[parts[-1]]
        return out

    @staticmethod
    def _matches(item: dict, filters: list[str]) -> bool:
        if not filters:
            return True

        def get(path: str) -> str:
            value: Any = item
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            return str(value).lower() if value is not None else ""

        def one(f: str) -> bool:
            # within one filter, keys are ANDed and a key's several values ORed
            wanted: dict[str, set[str]] = {}
            for part in f.split(","):
                key, _, value = part.partition("=")
                wanted.setdefault(key.strip(), set()).add(value.strip().lower())
            return all(get(key) in values for key, values in wanted.items())

        return any(one(f) for f in filters)


@pytest.fixture
def catalog(api_server) -> FakeCatalog:  # noqa: F811
    fake = FakeCatalog(api_server)
    fake.entities = [
        component("auth-service", "team-a", dependsOn=["resource:users-db"]),
        component("payments-v1", "team-b", consumesApis=["auth-api"], system="shop"),
        entity(
            "API",
            "auth-api",
            {
                "type": "openapi",
                "lifecycle": "production",
                "owner": "team-a",
                "definition": "openapi: 3.0.0",
            },
        ),
        entity("Resource", "users-db", {"type": "database", "owner": "team-a"}),
        entity("Group", "team-a", {"type": "team", "children": [], "members": ["alice"]}),
        entity("Group", "team-b", {"type": "team", "children": []}),
        entity("User", "alice", {"memberOf": ["team-a"]}),
        entity("Location", "generated-x", {"type": "url", "target": "https://x/all.yaml"}),
    ]
    return fake


class Clock:
    def __init__(self, start: str) -> None:
        self.now = datetime.fromisoformat(start).replace(tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def make(
    catalog: FakeCatalog, clock: Clock, sleeps: Sleeps | None = None, **options: Any
) -> BackstageApiSource:
    opts = BackstageApiOptions.model_validate(
        {
            "base_url": catalog.base_url,
            "token_env": "BACKSTAGE_TOKEN",
            "page_size": 3,
            "revalidate_interval": "P30D",
            "backoff_seconds": 0,
            **options,
        }
    )
    return BackstageApiSource(
        "live",
        opts,
        session=requests.Session(),
        sleep=sleeps or Sleeps(),
        clock=clock,
        environ={"BACKSTAGE_TOKEN": TOKEN},
    )


def facts(events: list) -> dict[tuple[str, str], str]:
    return {(e.fact.subject, e.fact.predicate): e.fact.value for e in events}


def test_a_first_observation_reads_every_page_and_stamps_facts_when_observed(catalog) -> None:
    clock = Clock("2024-05-01T12:00:00.250000")
    result = make(catalog, clock).pull(None)
    assert result.ok, result.error
    assert len(catalog.requests) == 3  # 8 entities, 3 a page
    first, *later = catalog.requests
    assert first.args.get("limit") == "3" and "cursor" not in first.args
    # only the fields facts are made of are asked for, on every page
    assert {r.args.get("fields") for r in catalog.requests} == {
        "apiVersion,kind,metadata.name,metadata.namespace,metadata.uid,spec"
    }
    assert all(r.args.get("cursor") and not r.args.getlist("filter") for r in later)
    assert {e.type for e in result.events} == {"added"}
    assert {e.timestamp for e in result.events} == {datetime(2024, 5, 1, 12, tzinfo=UTC)}
    got = facts(result.events)
    assert got[("payments-v1", "owner")] == "team-b"
    assert got[("payments-v1", "system")] == "shop"
    assert got[("payments-v1", "dependency:api:auth-api")] == "consumesApis"
    assert got[("auth-service", "dependency:resource:users-db")] == "dependsOn"
    assert got[("group:team-a", "members")] == "alice"
    assert got[("user:alice", "memberOf")] == "team-a"
    assert not any("generated-x" in s for s, _ in got)
    assert result.skipped == []


def test_the_next_observation_gives_exactly_what_changed_at_its_time(catalog, brief) -> None:
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    clock.now = datetime(2024, 5, 2, 9, tzinfo=UTC)
    assert source.pull(first.cursor).events == []  # nothing changed, nothing re-observed yet
    catalog.entities[1] = component("payments-v1", "group:default/team-a", system="shop")
    catalog.entities = [e for e in catalog.entities if e["metadata"]["name"] != "users-db"]
    catalog.entities.append(entity("User", "bob", {"memberOf": ["team-b"]}))
    clock.now = datetime(2024, 5, 3, 9, tzinfo=UTC)
    second = source.pull(first.cursor)
    assert second.ok
    assert brief(second.events) == [
        ("2024-05-03", "added", "user:bob exists=true"),
        ("2024-05-03", "added", "group:team-b members=bob"),
        ("2024-05-03", "revised", "payments-v1 owner=team-b -> payments-v1 owner=team-a"),
        ("2024-05-03", "added", "user:bob memberOf=team-b"),
        ("2024-05-03", "invalidated", "payments-v1 dependency:api:auth-api=consumesApis"),
        ("2024-05-03", "invalidated", "resource:users-db exists=true"),
    ]
    # auth-service still declares dependsOn users-db: that fact ends with users-db, by
    # cascade, and the consumesApis relation ended on its own
    assert not any(e.fact.predicate == "dependency:resource:users-db" for e in second.events)
    clock.now = datetime(2024, 6, 15, 9, tzinfo=UTC)  # past revalidate_interval
    third = make(catalog, clock).pull(second.cursor)
    assert third.events and {e.type for e in third.events} == {"revalidated"}
    assert ("auth-service", "owner") in facts(third.events)


def test_401_is_one_error_naming_the_token_variable_and_nothing_is_lost(catalog, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    source._environ = {"BACKSTAGE_TOKEN": "wrong-token"}
    failed = source.pull(first.cursor)
    assert not failed.ok and failed.events == [] and failed.cursor == first.cursor
    assert "HTTP 401" in failed.error and "BACKSTAGE_TOKEN" in failed.error
    assert "\n" not in failed.error
    source._environ = {}
    unset = source.pull(first.cursor)
    assert "BACKSTAGE_TOKEN" in unset.error and "not set" in unset.error
    for text in (failed.error, unset.error, first.cursor, caplog.text):
        assert TOKEN not in text and "wrong-token" not in text


def test_an_error_the_catalog_explains_is_one_line_with_its_explanation(catalog) -> None:
    """Backstage answers an error as ``{error: {name, message}, request, response}``: a
    static token whose ``accessRestrictions`` leave out the catalog gets a 403 whose message
    says so, and that message is what the operator needs in the source's error line."""
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    catalog.restricted_to = "scaffolder"
    failed = source.pull(first.cursor)
    assert not failed.ok and failed.events == [] and failed.cursor == first.cursor
    assert "HTTP 403: NotAllowedError: This token's access is restricted to plugin(s) " in (
        failed.error
    )
    assert "\n" not in failed.error and TOKEN not in failed.error


def test_pages_that_repeat_under_new_cursors_stop_the_pull_at_the_first_repeat(catalog) -> None:
    """The catalog's pages are keyset pages: no entity comes twice in one reading. A server
    whose cursors move on while its pages give the same entities again would otherwise be
    read to max_pages, every page held (10,000 pages of 500 entities by default)."""
    catalog.entities = [component(f"svc-{n:03d}", "team-a") for n in range(30)]
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock, max_pages=1000)
    first = source.pull(None)
    assert first.ok and len(catalog.requests) == 10
    catalog.pages_repeat = True
    failed = source.pull(first.cursor)
    assert not failed.ok and failed.events == [] and failed.cursor == first.cursor
    assert len(catalog.requests) == 10 + 2
    assert "page 2 gives only entities already read" in failed.error
    assert "component:default/svc-000 first on page 1" in failed.error


def test_a_listing_that_ends_before_its_total_takes_no_entity_as_removed(catalog) -> None:
    """``totalItems`` is part of every answer (the catalog's OpenAPI spec requires it): a
    listing whose pages stop giving a nextCursor before that many entities were read was not
    read whole, and what it did not reach was not removed from the catalog."""
    catalog.entities = [component(f"svc-{n:03d}", "team-a") for n in range(12)]
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    assert first.ok
    catalog.last_page = 2
    clock.now = clock.now.replace(day=2)
    cut = source.pull(first.cursor)
    assert not cut.ok and cut.events == [] and cut.cursor == first.cursor
    assert "after 6 of the 12 entities the catalog counts (totalItems)" in cut.error
    catalog.last_page = 0
    assert source.pull(cut.cursor).events == []


def test_an_entity_deleted_while_the_pages_are_read_is_taken_as_removed(catalog) -> None:
    """The real catalog counts ``totalItems`` at the first page only and carries it in the
    cursor (DefaultEntitiesCatalog.queryEntities), so an entity deleted from a busy catalog
    while its pages are read leaves the listing one short of that count: counted again, the
    listing is whole, and the deleted entity is taken as removed, not the pull failed."""
    catalog.keyset = True
    catalog.entities = [component(f"svc-{n:03d}", "team-a") for n in range(9)]
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    assert first.ok and len(first.events) > 0

    def delete_one() -> None:
        catalog.entities = [e for e in catalog.entities if e["metadata"]["name"] != "svc-007"]
        catalog.on_first_page = None

    catalog.on_first_page = delete_one
    clock.now = clock.now.replace(day=2)
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert second.events and {e.fact.subject for e in second.events} == {"svc-007"}
    assert all(e.type == "invalidated" for e in second.events)


def test_an_entity_recreated_while_the_pages_are_read_alone_on_a_page_is_no_repeat(
    catalog,
) -> None:
    """The catalog pages in uid order (entity_id), and an entity deleted and created again
    gets a new uid: read on page 1, it can come again on a later page, alone on the last
    one. That is no page repeating (its uid is new), and the pull reads on."""
    catalog.keyset = True
    catalog.entities = [component(f"svc-{n:03d}", "team-a") for n in range(9)]
    for n, e in enumerate(catalog.entities):
        e["metadata"]["uid"] = f"uid-{n:04d}"
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    assert first.ok, first.error

    def recreate() -> None:
        again = component("svc-000", "team-a")
        again["metadata"]["uid"] = "uid-9999"
        catalog.entities = [*catalog.entities[1:], again]
        catalog.on_first_page = None

    catalog.on_first_page = recreate
    clock.now = clock.now.replace(day=2)
    second = source.pull(first.cursor)
    assert second.ok, second.error
    assert len(catalog.requests) == 3 + 4  # 3 pages, then 4 (the last: svc-000 again)


def test_a_listing_cut_short_of_a_total_counted_again_still_fails(catalog) -> None:
    """Counted again, a listing that still falls short of the catalog's count (pages lost
    on the way) is not read whole: nothing taken as removed, both counts named."""
    catalog.keyset = True
    catalog.entities = [component(f"svc-{n:03d}", "team-a") for n in range(9)]
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)

    def delete_one() -> None:
        catalog.entities = [e for e in catalog.entities if e["metadata"]["name"] != "svc-007"]
        catalog.entities.append(component("svc-000a", "team-a"))  # before the cursor: not read
        catalog.on_first_page = None

    catalog.on_first_page = delete_one
    clock.now = clock.now.replace(day=2)
    cut = source.pull(first.cursor)
    assert not cut.ok and cut.events == [] and cut.cursor == first.cursor
    assert "after 8 of the 9 entities the catalog counts (totalItems), 9 counted again" in (
        cut.error
    )


def test_a_token_an_error_echoes_is_redacted_before_the_message_is_cut(catalog) -> None:
    """The error's message is cut to a line's length: the token it echoes (a proxy that
    quotes the header it refused) is redacted first, so a cut through it leaves no part."""
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    for pad in range(100, 150, 7):  # the cut falling anywhere in the token
        catalog.restricted_to = "p" * pad + " " + TOKEN
        failed = source.pull(first.cursor)
        assert not failed.ok and "NotAllowedError" in failed.error
        assert TOKEN[:8] not in failed.error and TOKEN[-8:] not in failed.error


def test_429_with_retry_after_waits_as_told_then_reads_on(catalog) -> None:
    sleeps = Sleeps()
    catalog.throttle = 2
    result = make(catalog, Clock("2024-05-01T12:00:00"), sleeps).pull(None)
    assert result.ok
    assert sleeps.calls == [2.0, 2.0]
    assert len(catalog.requests) == 5
    catalog.throttle = 10
    deferred = make(catalog, Clock("2024-05-01T13:00:00"), Sleeps(), max_retries=2).pull(
        result.cursor
    )
    assert not deferred.ok and "rate limited" in deferred.error
    assert deferred.cursor == result.cursor and deferred.events == []


def test_a_page_that_fails_loses_nothing_and_the_next_run_sees_the_change(catalog) -> None:
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock, max_retries=1)
    first = source.pull(None)
    catalog.entities[0] = component("auth-service", "team-b")
    catalog.fail_page = 2
    clock.now = datetime(2024, 5, 2, tzinfo=UTC)
    failed = source.pull(first.cursor)
    assert not failed.ok and "HTTP 500" in failed.error
    assert failed.events == [] and failed.cursor == first.cursor
    catalog.fail_page = 0
    clock.now = datetime(2024, 5, 3, tzinfo=UTC)
    ok = source.pull(failed.cursor)
    assert [
        (e.type, e.fact.value, e.timestamp.day) for e in ok.events if e.fact.predicate == "owner"
    ] == [("revised", "team-b", 3)]


def test_malformed_entities_are_counted_skipped_once_each_and_keep_what_they_said(
    catalog,
) -> None:
    clock = Clock("2024-05-01T12:00:00")
    source = make(catalog, clock)
    first = source.pull(None)
    broken = component("auth-service", "team-a")
    del broken["spec"]["owner"]
    catalog.entities[0] = broken
    catalog.entities.append({"apiVersion": "backstage.io/v1alpha1", "metadata": {"name": "y"}})
    catalog.entities.append(component("billing", "team-b", dependsOn=["billing-db"]))
    clock.now = datetime(2024, 5, 2, tzinfo=UTC)
    with capture_logs() as logs:
        second = source.pull(first.cursor)
    assert second.ok
    assert len(second.skipped) == 3, second.skipped
    assert any(
        "component:default/auth-service" in s and "spec.owner is required" in s
        for s in second.skipped
    )
    assert any("kind is missing" in s for s in second.skipped)
    assert any("spec.dependsOn" in s and "no default kind" in s for s in second.skipped)
    # the unreadable auth-service is not taken for removed; billing is read
    assert not any(e.fact.subject == "auth-service" for e in second.events)
    assert ("billing", "owner") in facts(second.events)
    # a source lists what it skipped; the runner reports each once (and counts it)
    assert not [r for r in logs if r["log_level"] == "warning"]


def test_options_are_checked(catalog) -> None:
    from healthd.errors import ConfigError
    from healthd.sources import build_source

    source = build_source("backstage", "live", {"base_url": catalog.base_url + "/api/catalog/"})
    assert isinstance(source, BackstageApiSource)
    assert source.options.base_url == catalog.base_url
    for bad, message in [
        ({"base_url": "backstage.acme.io"}, "http"),
        ({"base_url": catalog.base_url, "page_size": 0}, "page_size"),
        ({"base_url": catalog.base_url, "filter": ["kind"]}, "key=value"),
        ({"base_url": catalog.base_url, "catalog_files": ["x.yaml"]}, "catalog_files"),
    ]:
        with pytest.raises(ConfigError, match=message):
            build_source("backstage", "live", bad)


def test_a_filter_narrows_the_query_and_only_rides_on_the_first_request(catalog) -> None:
    source = make(
        catalog, Clock("2024-05-01T12:00:00"), filter=["kind=group", "kind=user"], page_size=2
    )
    result = source.pull(None)
    assert {e.fact.subject.split(":")[0] for e in result.events} == {"group", "user"}
    assert catalog.requests[0].args.getlist("filter") == ["kind=group", "kind=user"]
    assert len(catalog.requests) == 2


def test_plugin_kinds_are_one_note_and_a_foreign_cursor_starts_over(catalog) -> None:
    catalog.entities += [
        entity("MCPServer", f"tool-{n}", {"owner": "team-a"}) for n in range(4)
    ] + [entity("Workflow", "nightly", {})]
    git_cursor = '{"v":1,"commit":"0123456789abcdef0123456789abcdef01234567","seen":{}}'
    result = make(catalog, Clock("2024-05-01T12:00:00")).pull(git_cursor)
    assert result.ok
    assert result.skipped == [
        "cursor not understood (not this catalog's); the catalog is read anew",
        "entities of kinds the format does not define not read: 4 MCPServer, 1 Workflow",
    ]
    assert ("auth-service", "owner") in facts(result.events)


def test_one_filter_with_a_key_twice_takes_either_value_as_the_catalog_does(catalog) -> None:
    source = make(
        catalog,
        Clock("2024-05-01T12:00:00"),
        filter=["kind=component,kind=resource,metadata.namespace=default"],
    )
    result = source.pull(None)
    kinds = {e.fact.subject.split(":")[0] for e in result.events if e.fact.predicate == "exists"}
    assert kinds == {"auth-service", "payments-v1", "resource"}


def test_an_unreachable_catalog_is_one_error_line_from_the_command(tmp_path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "healthd.toml"
    config.write_text(
        "[sources.cat]\n"
        'kind = "backstage"\n'
        f'base_url = "http://127.0.0.1:{port}"\n'
        "max_retries = 0\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "timeline", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"healthd: error: source 'cat': backstage source 'cat' (http://127.0.0.1:{port}): "
        f"GET http://127.0.0.1:{port}/api/catalog/entities/by-query failed: ConnectionError (Connection refused) "
        "(gave up after 1 attempts)"
    ]


def test_a_page_cursor_that_is_not_a_string_is_named_as_such(catalog) -> None:
    catalog.cursor_as = 5
    failed = make(catalog, Clock("2024-05-01T12:00:00")).pull(None)
    assert not failed.ok and "field 'pageInfo.nextCursor' is not a string" in failed.error
