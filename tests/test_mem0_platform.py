"""The Mem0 Platform target (``mem0:deployment=platform``) through ``mem0ai``'s own
``MemoryClient``, against the local imitation of the platform API
(``healthd/testing/mem0_platform.py``) whose inference is open-source Mem0 with the stand-in
LLM. Each refusal of the imitation cites the platform's API reference (``docs/openapi.json``
and ``docs/api-reference/`` of github.com/mem0ai/mem0)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

import pytest

os.environ["MEM0_TELEMETRY"] = "False"
pytest.importorskip("mem0", reason="the mem0 extra is not installed")
httpx = pytest.importorskip("httpx")

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.memory import build_memory, mem0_platform, parse_target
from healthd.memory.fingerprint import METADATA_KEY
from healthd.model import ChangeEvent, Fact, Probe
from healthd.testing.mem0_platform import (
    DEFAULT_KEY,
    DEFAULT_PROJECT,
    EVENT_NOT_FOUND,
    ApiKey,
    Mem0Platform,
)
from healthd.testing.standin_llm import StandInLLM

OTHER_KEY = "m0-another-project-key"
HASHING = {"embedding_model": "healthd-hashing", "embedding_dims": 256}
KEYS = (
    ApiKey(DEFAULT_KEY, "org_healthd", DEFAULT_PROJECT),
    ApiKey(OTHER_KEY, "org_healthd", "proj_other"),
)


@pytest.fixture(scope="module")
def platform():
    with Mem0Platform(keys=KEYS, processing_seconds=0.3, style="verbatim", **HASHING) as running:
        yield running


@pytest.fixture
def api(platform):
    with httpx.Client(
        base_url=platform.base_url,
        headers={"Authorization": f"Token {DEFAULT_KEY}"},
        timeout=60,
    ) as client:
        yield client


def event(n: int, value: str, subject: str = "billing") -> ChangeEvent:
    at = datetime(2024, 3, n, 9, tzinfo=UTC)
    fact = Fact(subject, "owned_by", value, "ownership")
    return ChangeEvent(f"e{n}-{uuid.uuid4().hex[:6]}", "added", at, "test", fact)


def target(platform, monkeypatch, **switches: str):
    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    options = {"deployment": "platform", "shadow": "on", "host": platform.base_url, **switches}
    text = ",".join(f"{k}={v}" for k, v in options.items())
    return build_memory(parse_target(f"mem0:{text}"))


def wait_for(platform, event_id: str) -> dict:
    for _ in range(400):
        state = platform_get(platform, f"/v1/event/{event_id}/").json()
        if state["status"] in ("SUCCEEDED", "FAILED"):
            return state
        time.sleep(0.05)
    raise AssertionError("event never finished")


def platform_get(platform, path: str, key: str = DEFAULT_KEY):
    return httpx.get(
        platform.base_url + path, headers={"Authorization": f"Token {key}"}, timeout=60
    )


# --- the imitation refuses what the platform refuses ----------------------------------------


def test_a_missing_or_unknown_key_is_refused_401(platform):
    # openapi /v1/ping/: 401 "Invalid API key. You can find your API key on ..."
    assert httpx.get(platform.base_url + "/v1/ping/", timeout=60).status_code == 401
    unknown = platform_get(platform, "/v1/ping/", key="m0-nobody")
    assert unknown.status_code == 401 and "Invalid API key" in unknown.json()["detail"]
    ping = platform_get(platform, "/v1/ping/").json()
    assert (ping["org_id"], ping["project_id"]) == ("org_healthd", DEFAULT_PROJECT)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        # add-memories.mdx: messages required; "At least one entity ID ... is required"
        ({"user_id": "u"}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "entity"),
        # openapi memories_add_v3: role is one of user/assistant/system; content a string
        ({"user_id": "u", "messages": [{"role": "robot", "content": "hi"}]}, "role"),
        ({"user_id": "u", "messages": [{"role": "user", "content": 3}]}, "content"),
        # a field the add schema does not list
        ({"user_id": "u", "messages": [{"role": "user", "content": "hi"}], "colour": 1}, "colour"),
        (
            {"user_id": "u", "messages": [{"role": "user", "content": "hi"}], "infer": "yes"},
            "infer",
        ),
    ],
)
def test_add_refuses_a_body_the_reference_refuses(api, body, why):
    answer = api.post("/v3/memories/add/", json=body)
    assert answer.status_code == 400, answer.text
    assert why in answer.json()["details"]["message"]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        # search-memories.mdx: "top-level entity IDs are rejected with 400"
        ({"query": "q", "user_id": "u", "filters": {"user_id": "u"}}, "Top-level"),
        # openapi memories_search_v3: query and filters required, an entity id in filters
        ({"filters": {"user_id": "u"}}, "query"),
        ({"query": "q"}, "filters"),
        ({"query": "q", "filters": {"topic": "x"}}, "entity ID"),
        # top_k 1-1000, threshold 0-1
        ({"query": "q", "filters": {"user_id": "u"}, "top_k": 0}, "top_k"),
        ({"query": "q", "filters": {"user_id": "u"}, "top_k": 1001}, "top_k"),
        ({"query": "q", "filters": {"user_id": "u"}, "threshold": 1.5}, "threshold"),
        ({"query": "q", "filters": {"user_id": "u"}, "limit": 3}, "limit"),
        # the operators the reference lists: in, gte, lte, gt, lt, ne, contains, icontains
        ({"query": "q", "filters": {"user_id": "u", "topic": {"regex": "x"}}}, "operator"),
    ],
)
def test_search_refuses_a_body_the_reference_refuses(api, body, why):
    answer = api.post("/v3/memories/search/", json=body)
    assert answer.status_code == 400, answer.text
    assert why in answer.json()["details"]["message"]


def test_get_all_and_delete_all_refuse_what_the_reference_refuses(api):
    # get-memories.mdx: top-level entity ids rejected; openapi: page_size 1-200
    assert api.post("/v3/memories/", json={"user_id": "u"}).status_code == 400
    paged = api.post("/v3/memories/", params={"page_size": 201}, json={"filters": {"user_id": "u"}})
    assert paged.status_code == 400 and "page_size" in paged.json()["details"]["message"]
    # openapi memories_delete_all: "At least one filter is required ... returns a validation
    # error" where omitting all filters once deleted everything
    assert api.delete("/v1/memories/").status_code == 400


def test_another_projects_event_and_org_are_refused(platform, api):
    queued = api.post(
        "/v3/memories/add/",
        json={"user_id": "u", "messages": [{"role": "user", "content": "hi"}], "infer": False},
    )
    assert queued.status_code == 200  # infer=false is stored at once, without an event
    added = api.post(
        "/v3/memories/add/",
        json={
            "user_id": "u",
            "messages": [
                {"role": "user", "content": "(2024-03-01 09:00 UTC) Billing is owned by @bob."}
            ],
        },
    ).json()
    # openapi event_read: 404 "Event not found or you don't have permission to access it."
    other = platform_get(platform, f"/v1/event/{added['event_id']}/", key=OTHER_KEY)
    assert other.status_code == 404 and other.json()["error"] == EVENT_NOT_FOUND
    # an organisation or project other than the key's own
    wrong = api.delete("/v1/memories/", params={"user_id": "u", "project_id": "proj_other"})
    assert wrong.status_code == 403
    assert wait_for(platform, added["event_id"])["status"] == "SUCCEEDED"


def test_add_is_asynchronous_the_memory_appears_after_the_answer(platform, api):
    user = f"async-{uuid.uuid4().hex[:6]}"
    turn = {"role": "user", "content": "(2024-03-01 09:00 UTC) Billing is owned by @bob."}
    added = api.post("/v3/memories/add/", json={"user_id": user, "messages": [turn]}).json()
    assert added["status"] == "PENDING" and added["event_id"]
    assert platform.memories(DEFAULT_PROJECT, user) == []  # not yet: it is queued
    state = wait_for(platform, added["event_id"])
    assert state["status"] == "SUCCEEDED"
    assert [r["data"]["memory"] for r in state["results"]] == [
        "As of 2024-03-01, billing is owned by @bob."
    ]
    found = api.post(
        "/v3/memories/search/", json={"query": "billing", "filters": {"user_id": user}}
    )
    assert [r["memory"] for r in found.json()["results"]] == [
        "As of 2024-03-01, billing is owned by @bob."
    ]


def test_get_all_pages_as_the_reference_says(api):
    user = f"paged-{uuid.uuid4().hex[:6]}"
    for n in range(3):  # infer=false: stored as given, at once
        turn = {"role": "user", "content": f"note {n}"}
        body = {"user_id": user, "messages": [turn], "infer": False}
        assert api.post("/v3/memories/add/", json=body).status_code == 200
    scope = {"filters": {"user_id": user}}
    first = api.post("/v3/memories/", params={"page": 1, "page_size": 2}, json=scope).json()
    assert first["count"] == 3 and first["previous"] is None and "page=2" in first["next"]
    second = api.post("/v3/memories/", params={"page": 2, "page_size": 2}, json=scope).json()
    assert second["next"] is None and "page=1" in second["previous"]
    rows = first["results"] + second["results"]
    assert sorted(r["memory"] for r in rows) == ["note 0", "note 1", "note 2"]
    # get-all says session_id where search says run_id (openapi memories_list_v3)
    assert all("session_id" in r and "run_id" not in r for r in rows)


# --- the target -------------------------------------------------------------------------------


def test_the_target_waits_for_the_event_and_serves_what_the_pipeline_extracted(
    platform, monkeypatch
):
    user = f"shadow-{uuid.uuid4().hex[:6]}"
    memory = target(platform, monkeypatch, user_id=user)
    try:
        memory.reset()
        before = memory.events_read
        memory.apply(event(1, "@bob"))
        # apply returned only once the platform had processed it: no waiting here
        assert platform.memories(DEFAULT_PROJECT, user) == [
            "As of 2024-03-01, billing is owned by @bob."
        ]
        assert memory.events_read > before
        probe = Probe("p1", "Who owns billing?", "billing", "owned_by", "ownership")
        answer = memory.answer(probe, datetime(2024, 3, 2, tzinfo=UTC))
        assert [item.text for item in answer.items] == [
            "As of 2024-03-01, billing is owned by @bob."
        ]
        assert answer.items[0].flags == frozenset()  # written under this fingerprint
        fingerprint = memory.retrieval_fingerprint()
        assert fingerprint.embedder.endswith(f"/org_healthd/{DEFAULT_PROJECT}")
    finally:
        memory.close()


class Mangling(Mem0Platform):
    """The imitation with its search answers changed by ``mangle``."""

    def __init__(self, mangle) -> None:
        super().__init__(keys=KEYS, processing_seconds=0.05, style="verbatim", **HASHING)
        self.mangle = mangle

    def _route(self, method, path, params, body, key):
        status, answer = super()._route(method, path, params, body, key)
        if path == "/v3/memories/search/" and status < 300:
            answer = self.mangle(answer)
        return status, answer


def _search_with(monkeypatch, mangle):
    with Mangling(mangle) as platform:
        memory = target(platform, monkeypatch, user_id=f"shadow-{uuid.uuid4().hex[:6]}")
        try:
            memory.reset()
            memory.apply(event(1, "@bob"))
            probe = Probe("p1", "Who owns billing?", "billing", "owned_by", "ownership")
            return memory.answer(probe, datetime(2024, 3, 2, tzinfo=UTC))
        finally:
            memory.close()


def _each(field, value):
    def mangle(answer):
        for row in answer["results"]:
            if value is KeyError:
                row.pop(field, None)
            else:
                row[field] = value
        return answer

    return mangle


@pytest.mark.parametrize(
    ("mangle", "said"),
    [
        # each was read as nothing served (a better score), or an AttributeError
        (lambda answer: {"results": [None]}, "field 'results.0'"),
        (lambda answer: {"results": [7]}, "field 'results.0'"),
        (_each("memory", 12), "field 'results.0.memory'"),
        (_each("metadata", "x"), "field 'results.0.metadata'"),
        (_each("id", KeyError), "field 'results.0.id'"),
    ],
)  # fmt: skip
def test_a_search_answer_not_of_the_apis_shape_is_one_error_naming_it(monkeypatch, mangle, said):
    with pytest.raises(MemoryAdapterError) as raised:
        _search_with(monkeypatch, mangle)
    message = str(raised.value)
    assert said in message and "not what Mem0's API says" in message
    assert "\n" not in message and len(message) < 600


def test_a_memory_without_healthds_stamps_has_no_write_time(monkeypatch):
    """The platform's created_at is its own clock, not the replay's: a memory dated by it
    looked just written (a fuzz read freshness 0 as 1.0 when metadata was dropped)."""
    answer = _search_with(monkeypatch, _each("metadata", None))
    assert answer.items and all(item.written_at is None for item in answer.items)


def test_a_second_user_is_left_intact_and_unread(platform, monkeypatch, api):
    other = f"real-user-{uuid.uuid4().hex[:6]}"
    turn = {"role": "user", "content": "(2024-02-01 09:00 UTC) Billing is owned by @alice."}
    seeded = api.post("/v3/memories/add/", json={"user_id": other, "messages": [turn]}).json()
    wait_for(platform, seeded["event_id"])
    first = len(platform.requests)
    memory = target(platform, monkeypatch, user_id=f"shadow-{uuid.uuid4().hex[:6]}")
    try:
        memory.reset()
        memory.apply(event(2, "@bob"))
        probe = Probe("p1", "Who owns billing?", "billing", "owned_by", "ownership")
        served = memory.answer(probe, datetime(2024, 3, 3, tzinfo=UTC)).items
        memory.reset()
    finally:
        memory.close()
    assert "alice" not in " ".join(item.text for item in served)
    assert platform.memories(DEFAULT_PROJECT, other) == [
        "As of 2024-02-01, billing is owned by @alice."
    ]
    sent = " ".join(f"{path} {body}" for _, path, body in platform.requests[first:])
    assert other not in sent  # never named in a write, a search, a list or a delete


def test_a_reset_deletes_no_user_holding_memories_healthd_did_not_write(platform, monkeypatch, api):
    """``shadow=on`` names the user healthd owns; a reset of a user whose memories healthd
    did not write (a real user's id given by mistake) is refused before the delete, as Zep's
    and Letta's targets refuse a user or agent they did not create. What healthd wrote
    carries its stamps; three pages of them are read, one of another's is found."""
    user = f"real-user-{uuid.uuid4().hex[:6]}"
    for n in range(5):
        turn = {"role": "user", "content": f"note {n}"}
        stamps = {METADATA_KEY: "a-healthd-fingerprint"} if n < 4 else {"plan": "pro"}
        body = {"user_id": user, "messages": [turn], "infer": False, "metadata": stamps}
        assert api.post("/v3/memories/add/", json=body).status_code == 200
        time.sleep(0.01)  # listed oldest first: the other's is on the last page
    monkeypatch.setattr(mem0_platform, "LIST_PAGE", 2)  # three pages
    memory = target(platform, monkeypatch, user_id=user)
    try:
        with pytest.raises(ShadowViolation, match="1 of its 5 memories was not written by"):
            memory.reset()
    finally:
        memory.close()
    assert len(platform.memories(DEFAULT_PROJECT, user)) == 5


def test_a_reset_sees_the_expired_memories_the_delete_would_take(platform, monkeypatch, api):
    """get-all hides a memory whose expiration_date has passed unless ``show_expired`` is
    true (api-reference/memory/get-memories: "Expired memories are hidden by default"), but
    delete-all takes it too: a real user's expired memory is one the reset must see before
    it deletes, not one it deletes unseen."""
    user = f"real-user-{uuid.uuid4().hex[:6]}"
    rows = [
        ({METADATA_KEY: "a-healthd-fingerprint"}, None),
        ({"plan": "pro"}, "2020-01-31"),  # another's, expired
    ]
    for n, (stamps, expires) in enumerate(rows):
        body = {
            "user_id": user,
            "messages": [{"role": "user", "content": f"note {n}"}],
            "infer": False,
            "metadata": stamps,
            **({"expiration_date": expires} if expires else {}),
        }
        assert api.post("/v3/memories/add/", json=body).status_code == 200
    memory = target(platform, monkeypatch, user_id=user)
    try:
        with pytest.raises(ShadowViolation, match="1 of its 2 memories was not written by"):
            memory.reset()
    finally:
        memory.close()
    assert platform.memories(DEFAULT_PROJECT, user) == ["note 0", "note 1"]


def test_a_reset_whose_listing_skips_memories_deletes_nothing(platform, monkeypatch):
    """Pages are read by offset: a platform ordering equal ``created_at`` (the memories of
    one add) differently from one request to the next lists one memory twice and another
    never. The listing's ``count`` says how many there are; fewer seen is a listing that
    cannot vouch for the scope, and nothing is deleted (the unseen one may be another's)."""
    user = f"shadow-{uuid.uuid4().hex[:6]}"
    memory = target(platform, monkeypatch, user_id=user)
    stamped = {METADATA_KEY: "a-healthd-fingerprint"}
    rows = {n: {"id": n, "memory": f"note {n}", "metadata": stamped} for n in "abc"}
    pages = {
        1: {"count": 4, "next": "page-2", "previous": None, "results": [rows["a"], rows["b"]]},
        2: {"count": 4, "next": None, "previous": "page-1", "results": [rows["b"], rows["c"]]},
    }  # the fourth, another's, is on neither page
    deleted: list[object] = []
    monkeypatch.setattr(memory._client, "get_all", lambda **kw: pages[kw["page"]])
    monkeypatch.setattr(memory._client, "delete_all", lambda **kw: deleted.append(kw) or {})
    monkeypatch.setattr(mem0_platform, "LIST_PAGE", 2)
    try:
        with pytest.raises(MemoryAdapterError, match="3 of the 4 memories it counts"):
            memory.reset()
    finally:
        memory.close()
    assert deleted == []


def test_a_reset_lists_in_the_largest_pages_the_platform_gives(platform, monkeypatch, api):
    """Every reset reads every page of the shadow's memories first: at the reference's
    largest page (get-memories: page_size 1 to 200) a shadow of 10,000 memories costs 50
    requests before its delete, not 100; 150 are one page."""
    user = f"shadow-{uuid.uuid4().hex[:6]}"
    stamps = {METADATA_KEY: "a-healthd-fingerprint"}
    for n in range(150):
        body = {"user_id": user, "messages": [{"role": "user", "content": f"note {n}"}],
                "infer": False, "metadata": stamps}  # fmt: skip
        assert api.post("/v3/memories/add/", json=body).status_code == 200
    memory = target(platform, monkeypatch, user_id=user)
    listed: list[int] = []
    get_all = memory._client.get_all

    def counted(**kw):
        listed.append(kw["page"])
        return get_all(**kw)

    monkeypatch.setattr(memory._client, "get_all", counted)
    try:
        memory.reset()
    finally:
        memory.close()
    assert listed == [1]
    platform.wait_idle()
    assert platform.memories(DEFAULT_PROJECT, user) == []


def test_a_listing_that_never_ends_stops_past_its_count(platform, monkeypatch):
    """A platform answering a ``next`` page forever, each with memories not seen before,
    is read no further than its ``count`` allows: the reset is refused (nothing deleted)
    after the pages that count needs, not looped on for ever."""
    user = f"shadow-{uuid.uuid4().hex[:6]}"
    memory = target(platform, monkeypatch, user_id=user)
    stamped = {METADATA_KEY: "a-healthd-fingerprint"}
    asked: list[int] = []

    def endless(**kw):
        asked.append(kw["page"])
        if len(asked) > 20:
            raise RuntimeError("still listing")
        row = {"id": f"m{len(asked)}", "memory": "note", "metadata": stamped}
        return {
            "count": 4,
            "next": "more",
            "previous": None,
            "results": [row, {**row, "id": f"n{len(asked)}"}],
        }

    deleted: list[object] = []
    monkeypatch.setattr(memory._client, "get_all", endless)
    monkeypatch.setattr(memory._client, "delete_all", lambda **kw: deleted.append(kw) or {})
    monkeypatch.setattr(mem0_platform, "LIST_PAGE", 2)
    try:
        with pytest.raises(MemoryAdapterError, match="offered past the 4 memories it counts"):
            memory.reset()
    finally:
        memory.close()
    assert deleted == [] and asked == [1, 2]


def test_the_project_of_the_configured_key_is_the_one_written(platform, monkeypatch):
    user = f"shadow-{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("TEAM_MEM0_KEY", OTHER_KEY)
    memory = target(
        platform, monkeypatch, user_id=user, api_key_env="TEAM_MEM0_KEY", project_id="proj_other"
    )
    try:
        memory.apply(event(4, "@dan"))
        assert memory.retrieval_fingerprint().embedder.endswith("/org_healthd/proj_other")
    finally:
        memory.close()
    assert platform.memories("proj_other", user) == ["As of 2024-03-04, billing is owned by @dan."]
    assert platform.memories(DEFAULT_PROJECT, user) == []


def test_an_event_that_stays_pending_past_the_bound_fails_the_write(monkeypatch):
    with Mem0Platform(processing_seconds=30, style="verbatim", **HASHING) as slow:
        memory = target(slow, monkeypatch, wait_seconds="1")
        try:
            started = time.monotonic()
            with pytest.raises(MemoryAdapterError, match="still PENDING after 1 s"):
                memory.apply(event(1, "@bob"))
            assert time.monotonic() - started < 5
        finally:
            memory.close()


def test_a_failed_event_fails_the_write_with_the_platforms_reason(monkeypatch):
    with (
        StandInLLM(fault="error") as broken,
        Mem0Platform(llm_base_url=broken.base_url, processing_seconds=0, **HASHING) as failing,
    ):
        memory = target(failing, monkeypatch)
        try:
            with pytest.raises(MemoryAdapterError, match="FAILED"):
                memory.apply(event(1, "@bob"))
        finally:
            memory.close()


def test_an_event_the_platform_no_longer_knows_is_one_line_with_its_reason(monkeypatch):
    with Mem0Platform(processing_seconds=0, style="verbatim", **HASHING) as platform:
        memory = target(platform, monkeypatch, batch_events="2")
        try:
            memory.apply(event(1, "@bob"))  # queued, its event read with the batch's
            platform._events.clear()
            with pytest.raises(MemoryAdapterError) as caught:
                memory.apply(event(2, "@dan"))
        finally:
            memory.close()
    said = str(caught.value)
    assert said.endswith(
        "unreadable: HTTP 404: Event not found or you don't have permission to access it."
    )
    assert "HTTPStatusError" not in said and len(said.splitlines()) == 1


def test_a_scope_not_declared_shadow_is_refused_before_any_call(platform, monkeypatch):
    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    first = len(platform.requests)
    with pytest.raises(TargetError, match="not declared shadow"):
        build_memory(parse_target(f"mem0:deployment=platform,host={platform.base_url}"))
    assert len(platform.requests) == first


@pytest.mark.parametrize(
    ("scope", "said"),
    [
        # Mem0 reads '*' as every user: its DELETE /v1/memories/?user_id=* empties the project
        ("user_id=*", "user_id '*' holds '*'"),
        ("user_id=healthd-*", "user_id 'healthd-*' holds '*'"),
        ("run_id=*", "run_id '*' holds '*'"),
        # what a user's turn says is kept with agent_id null: an agent_id scope finds none
        ("agent_id=bot", "agent_id cannot scope the shadow"),
    ],
)
def test_a_scope_that_is_not_one_shadow_user_is_refused_before_any_call(
    platform, monkeypatch, scope, said
):
    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    first = len(platform.requests)
    spec = f"mem0:deployment=platform,shadow=on,host={platform.base_url},{scope}"
    with pytest.raises(TargetError, match=re.escape(said)):
        build_memory(parse_target(spec))
    assert len(platform.requests) == first


def test_local_switches_are_not_platform_switches(platform, monkeypatch):
    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    with pytest.raises(TargetError, match="unknown switch 'ingest'"):
        build_memory(parse_target("mem0:deployment=platform,shadow=on,ingest=messages"))


# --- configuration errors: one line, exit 2 ---------------------------------------------------


def healthd(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("MEM0_API_KEY", "MEM0_TELEMETRY")}
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **env},
    )


@pytest.mark.parametrize(
    ("switches", "env", "said"),
    [
        ("shadow=on", {}, "MEM0_API_KEY is not set"),
        ("shadow=on,project_id=proj_elsewhere", {"MEM0_API_KEY": DEFAULT_KEY}, "project_id"),
        ("shadow=on,org_id=org_elsewhere", {"MEM0_API_KEY": DEFAULT_KEY}, "org_id"),
        ("shadow=on", {"MEM0_API_KEY": "m0-revoked"}, "Invalid API key"),
        ("user_id=alice", {"MEM0_API_KEY": DEFAULT_KEY}, "'alice' is not declared shadow"),
    ],
)
def test_each_configuration_error_is_one_line_and_exit_2(platform, switches, env, said):
    spec = f"mem0:deployment=platform,host={platform.base_url},{switches}"
    done = healthd("--target", spec, env=env)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert DEFAULT_KEY not in done.stderr and "REDACTED" not in done.stderr


def test_a_host_that_drips_its_answer_is_cut_at_timeout_seconds(monkeypatch, dripping_host):
    """Each call is bounded in all, not only between two reads: a ping answered a byte each
    half second is given up at timeout_seconds."""
    monkeypatch.setenv("MEM0_API_KEY", DEFAULT_KEY)
    host = dripping_host.url
    started = time.monotonic()
    with pytest.raises(TargetError, match="not read within 2 s"):
        build_memory(
            parse_target(f"mem0:deployment=platform,shadow=on,host={host},timeout_seconds=2")
        )
    assert time.monotonic() - started < 4


def test_an_unreachable_host_is_one_line_and_exit_2():
    spec = "mem0:deployment=platform,shadow=on,host=http://127.0.0.1:9,timeout_seconds=5"
    done = healthd("--target", spec, env={"MEM0_API_KEY": DEFAULT_KEY})
    assert done.returncode == 2, done.stderr
    assert "mem0 platform at http://127.0.0.1:9" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_inference_failing_on_the_platform_is_one_line_naming_the_event(monkeypatch):
    with (
        StandInLLM(fault="error") as broken,
        Mem0Platform(llm_base_url=broken.base_url, processing_seconds=0, **HASHING) as failing,
    ):
        spec = f"mem0:deployment=platform,shadow=on,host={failing.base_url}"
        done = healthd("--target", spec, env={"MEM0_API_KEY": DEFAULT_KEY})
    assert done.returncode != 0
    assert "add of event" in done.stderr and "FAILED" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


# --- the bundled example, offline, as the docs give it ----------------------------------------


@pytest.mark.slow
def test_the_bundled_example_against_the_imitation_prints_every_metric():
    env = {k: v for k, v in os.environ.items() if k not in ("MEM0_API_KEY", "MEM0_TELEMETRY")}
    done = subprocess.run(
        [
            sys.executable, "-m", "healthd.testing.mem0_platform", "--style", "verbatim", "--",
            sys.executable, "-m", "healthd", "evaluate",
            "--target", "mem0:deployment=platform,shadow=on,host_env=MEM0_HOST",
        ],
        capture_output=True, text=True, timeout=900, env={**env, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if "freshness" in line)
    metrics = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")
    assert all(name in header for name in metrics)
    row = next(line for line in done.stdout.splitlines() if line.startswith("│ all "))
    cells = [cell.strip() for cell in row.strip("│ ").split("│")][1:]
    assert len(cells) == len(metrics) and all(cell != "—" for cell in cells), row
    figures = dict(zip(metrics, cells, strict=True))
    # Mem0's V3 pipeline only adds ("no UPDATE/DELETE"): nothing ended is forgotten, and the
    # old values keep being served beside the new (with the verbatim stand-in, which drops
    # nothing it is told; the varied one's drops and merges would forget by chance)
    assert float(figures["forgetting"]) == 0.0 and float(figures["contamination"]) > 0.5


# --- the real platform, when there are credentials --------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("MEM0_API_KEY"),
    reason="MEM0_API_KEY is not set: no Mem0 Platform project to run against",
)
def test_the_live_platform_round_trip():
    user = f"healthd-shadow-live-{uuid.uuid4().hex[:8]}"
    spec = f"mem0:deployment=platform,shadow=on,user_id={user}"
    if os.environ.get("MEM0_HOST"):
        spec += ",host_env=MEM0_HOST"
    memory = build_memory(parse_target(spec))
    try:
        memory.reset()
        memory.apply(event(1, "@bob"))
        probe = Probe("p1", "Who owns billing?", "billing", "owned_by", "ownership")
        served = memory.answer(probe, datetime(2024, 3, 2, tzinfo=UTC)).items
        assert any("bob" in item.text.lower() for item in served)
    finally:
        memory.reset()
        memory.close()
