"""The Zep target (``zep``) through the ``zep-cloud`` SDK (Zep's v4 API), against the local
imitation (``healthd/testing/zep.py``) whose graph engine is Graphiti on Kuzu with the
stand-in LLM. Each refusal of the imitation cites Zep's v4 SDK reference
(help.getzep.com/sdk-reference, and the docstrings of the ``zep_cloud`` client generated from
it)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import pytest
from structlog.testing import capture_logs

pytest.importorskip("zep_cloud", reason="the zep extra is not installed")
pytest.importorskip("graphiti_core", reason="the graphiti extra is not installed")
httpx = pytest.importorskip("httpx")

from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent, Fact, Probe
from healthd.testing.standin_llm import StandInLLM
from healthd.testing.zep import DEFAULT_KEY, Zep

OTHER_KEY = "z-another-project-key"
PROBE = Probe("p-billing", "Who owns billing?", "billing", "owned_by", "ownership")


@pytest.fixture(scope="module")
def zep():
    with Zep(
        keys={DEFAULT_KEY: "proj_shadow", OTHER_KEY: "proj_other"}, style="verbatim"
    ) as running:
        yield running


@pytest.fixture
def api(zep):
    with httpx.Client(
        base_url=zep.base_url, headers={"Authorization": f"Api-Key {DEFAULT_KEY}"}, timeout=120
    ) as client:
        yield client


def owner(n: int, value: str, previous: str | None = None) -> ChangeEvent:
    at = datetime(2024, 3, n, 9, tzinfo=UTC)
    fact = Fact("billing", "owned_by", value, "ownership")
    before = Fact("billing", "owned_by", previous, "ownership") if previous else None
    kind = "revised" if previous else "added"
    return ChangeEvent(f"e{n}-{uuid.uuid4().hex[:6]}", kind, at, "test", fact, before)


def target(zep, monkeypatch, **switches: str):
    monkeypatch.setenv("ZEP_API_KEY", DEFAULT_KEY)
    options = {"shadow": "on", "base_url": zep.base_url, "user_id": uuid.uuid4().hex, **switches}
    return build_memory(parse_target("zep:" + ",".join(f"{k}={v}" for k, v in options.items())))


def texts(memory, at: datetime = datetime(2024, 3, 9, tzinfo=UTC)) -> list[str]:
    return [item.text for item in memory.answer(PROBE, at).items]


# --- the target through the SDK ---------------------------------------------------------------


def test_episodes_at_their_event_time_and_zep_ends_the_old_fact(zep, monkeypatch):
    """Each event is an episode whose reference time is the event's; Graphiti (Zep's engine)
    invalidates the old owner itself: Zep's search returns it stamped ``invalid_at``, served
    as returned by default and left out with search=valid."""
    memory = target(zep, monkeypatch)
    valid = target(zep, monkeypatch, search="valid", user_id=memory.user_id)
    try:
        memory.reset()
        first, second = owner(1, "@alice"), owner(5, "@bob", previous="@alice")
        memory.apply(first)
        memory.apply(second)
        added = [e for e in zep.episodes.values() if e.graph_uuid == memory._user_uuid]
        assert [e.reference_time for e in added] == [
            first.timestamp.isoformat(),
            second.timestamp.isoformat(),
        ]
        assert all(e.status == "succeeded" for e in added)  # waited for before going on
        served = memory.answer(PROBE, datetime(2024, 3, 9, tzinfo=UTC)).items
        assert any("@bob" in i.text for i in served) and any("@alice" in i.text for i in served)
        ended = [i for i in served if "@alice" in i.text]
        assert all("invalid_at" in i.metadata for i in ended)  # Zep's stamp, read
        assert texts(valid) and all("@alice" not in t for t in texts(valid))
        assert any("@bob" in t for t in texts(valid))
        # before the change, the old owner was still valid
        early = texts(valid, datetime(2024, 3, 3, tzinfo=UTC))
        assert any("@alice" in t for t in early) and not any("@bob" in t for t in early)
    finally:
        memory.close()
        valid.close()


class _Mangled(Zep):
    """Zep whose edge search answers are changed by ``mangle`` (rows as the SDK types allow
    them: ``Edge.fact`` is optional in zep-cloud 4)."""

    mangle = staticmethod(lambda row: None)

    def _route(self, method, path, params, body, project):
        status, answer = super()._route(method, path, params, body, project)
        if path.endswith("/search/edges") and status < 300:
            for row in answer.get("items") or []:
                self.mangle(row)
        return status, answer


def _served_once(server_class: type[Zep], monkeypatch) -> tuple:
    """What the target serves for PROBE after one owner event, from ``server_class``."""
    with server_class(keys={DEFAULT_KEY: "proj_shadow"}, style="verbatim") as server:
        memory = target(server, monkeypatch)
        try:
            memory.reset()
            memory.apply(owner(1, "@alice"))
            return memory.answer(PROBE, datetime(2024, 3, 9, tzinfo=UTC)).items
        finally:
            memory.close()


def test_an_edge_no_episode_of_healthds_states_has_no_write_time(monkeypatch):
    """An edge's ``created_at`` is Zep's clock: an edge dated by it looked just written (the
    fuzz read freshness 0 as 1.0 when its episode_uuids were empty or unknown)."""

    class Unlinked(_Mangled):
        mangle = staticmethod(lambda row: row.update(episode_uuids=[]))

    served = _served_once(Unlinked, monkeypatch)
    assert served and all(item.written_at is None for item in served)


def test_an_edge_without_its_fact_serves_nothing_and_a_field_of_the_wrong_type_is_named(
    monkeypatch,
):
    class NoFact(_Mangled):
        mangle = staticmethod(lambda row: row.pop("fact"))

    class BadScore(_Mangled):
        mangle = staticmethod(lambda row: row.update(score="high"))

    assert _served_once(NoFact, monkeypatch) == ()  # not an item of empty text
    with pytest.raises(MemoryAdapterError) as caught:
        _served_once(BadScore, monkeypatch)
    said = str(caught.value)
    assert "HTTP 200 with a body not of Zep's shape: items.0.score:" in said
    assert len(said.splitlines()) == 1 and "uuid" not in said  # the field, not the body


def test_message_episodes_and_node_search(zep, monkeypatch):
    memory = target(zep, monkeypatch, episode_type="message", scope="nodes")
    try:
        memory.reset()
        memory.apply(owner(1, "@carol"))
        episode = next(e for e in zep.episodes.values() if e.graph_uuid == memory._user_uuid)
        assert episode.source == "message" and episode.content.startswith("user: ")
        assert any("@carol" in t for t in texts(memory))  # a node's summary
    finally:
        memory.close()


def test_a_second_users_graph_is_left_intact_and_unread(zep, api, monkeypatch):
    other = api.post("/users", json={"user_id": f"real-{uuid.uuid4().hex}"}).json()
    added = api.post(
        f"/graphs/{other['uuid']}/episodes",
        json={"data": 'The owner of payments is "@dave".', "type": "text"},
    )
    assert added.status_code == 202, added.text
    zep.wait_idle()
    before = zep.facts(other["uuid"])
    assert before
    seen = len(zep.requests)
    memory = target(zep, monkeypatch)
    try:
        memory.reset()
        memory.apply(owner(1, "@erin"))
        texts(memory)
        memory.reset()
    finally:
        memory.close()
    assert zep.facts(other["uuid"]) == before
    assert not [r for r in zep.requests[seen:] if other["uuid"] in r[1]]


def test_a_user_of_that_id_healthd_did_not_create_is_refused(zep, api, monkeypatch):
    name = f"someone-{uuid.uuid4().hex}"
    real = api.post("/users", json={"user_id": name, "metadata": {"plan": "pro"}}).json()
    seen = len(zep.requests)
    with pytest.raises(TargetError, match="not created by healthd"):
        target(zep, monkeypatch, user_id=name)
    assert [r[0] for r in zep.requests[seen:]] == ["POST"]  # the lookup only
    assert api.get(f"/users/{real['uuid']}").status_code == 200


def test_a_reset_deletes_no_user_of_that_id_healthd_did_not_create(zep, api, monkeypatch):
    """The user found at reset is checked as at start: a user of the shadow id made since
    (healthd's deleted out of band, someone's real user created under that id) is refused,
    never deleted."""
    name = f"later-{uuid.uuid4().hex}"
    memory = target(zep, monkeypatch, user_id=name)  # no user of that id yet
    try:
        real = api.post("/users", json={"user_id": name, "metadata": {"plan": "pro"}}).json()
        with pytest.raises(ShadowViolation, match="not created by healthd"):
            memory.reset()
    finally:
        memory.close()
    assert api.get(f"/users/{real['uuid']}").status_code == 200


def test_a_failing_extraction_is_a_failed_run_naming_the_event(monkeypatch):
    with StandInLLM(fault="error") as broken, Zep(llm_base_url=broken.base_url) as failing:
        memory = target(failing, monkeypatch)
        try:
            memory.reset()
            with pytest.raises(MemoryAdapterError, match=r"add of event 'e1-.*failed"):
                memory.apply(owner(1, "@frank"))
        finally:
            memory.close()


def test_a_partly_processed_episode_is_said_and_counted_not_taken_as_done(monkeypatch):
    """A task Zep ends ``partial`` ("the error ... also present on a partial task",
    zep_cloud.types.Task) left part of the episode unprocessed: what Zep kept is still
    measured, and the event is named in a warning and counted, not passed over in silence."""

    class Partial(Zep):
        def _route(self, method, path, params, body, project):
            status, answer = super()._route(method, path, params, body, project)
            if "/tasks/" in path and status < 300 and answer.get("status") == "succeeded":
                answer = {**answer, "status": "partial",
                          "error": {"code": "edge_extraction", "message": "2 edges dropped"}}  # fmt: skip
            return status, answer

    with Partial(keys={DEFAULT_KEY: "proj_shadow"}, style="verbatim") as server:
        memory = target(server, monkeypatch)
        try:
            memory.reset()
            with capture_logs() as logs:
                memory.apply(owner(1, "@alice"))
            assert memory.partial_tasks == 1
            assert texts(memory)  # what Zep kept is served
        finally:
            memory.close()
    said = [e for e in logs if e["log_level"] == "warning"]
    assert said and "add of event 'e1-" in said[0]["what"]
    assert said[0]["error"] == "2 edges dropped"


def test_processing_is_waited_for_within_wait_seconds(monkeypatch):
    with Zep(processing_seconds=30, style="verbatim") as slow:
        memory = target(slow, monkeypatch, wait_seconds="1")
        try:
            memory.reset()
            with pytest.raises(MemoryAdapterError, match="still pending after 1 s"):
                memory.apply(owner(1, "@gina"))
        finally:
            memory.close()


# --- the imitation refuses what Zep refuses ---------------------------------------------------


@pytest.fixture
def graph(api):
    return api.post("/users", json={"user_id": f"g-{uuid.uuid4().hex}"}).json()["uuid"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({}, "data"),  # "data (string, required)"
        ({"data": "x", "type": "fact_triple"}, "type"),  # "text, json, or message"
        ({"data": "x", "metadata": {f"k{i}": i for i in range(11)}}, "at most 10 keys"),
        ({"data": "x", "metadata": {"k": {"nested": 1}}}, "metadata.k"),  # scalars only
        ({"data": "x", "created_at": "2024-01-01T00:00:00Z"}, "created_at"),  # v3's name
        ({"data": "x", "reference_time": "yesterday"}, "reference_time"),
    ],
)
def test_an_episode_zep_refuses(api, graph, body, said):
    answer = api.post(f"/graphs/{graph}/episodes", json=body)
    assert answer.status_code == 400 and said in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({}, "query"),
        ({"query": "q", "reranker": "bm25"}, "reranker"),
        ({"query": "q", "reranker": "mmr"}, "mmr_lambda"),  # "Required when reranker is mmr"
        ({"query": "q", "reranker": "node_distance"}, "center_node_uuid"),
        ({"query": "q", "filter_low_quality_results": True}, "cross_encoder"),  # "400 error"
    ],
)
def test_a_search_zep_refuses(api, graph, body, said):
    answer = api.post(f"/graphs/{graph}/search/edges", json=body)
    assert answer.status_code == 400 and said in answer.json()["error"]["message"]


@pytest.mark.parametrize("scope", ["edges", "nodes"])
@pytest.mark.parametrize(("page_size", "status"), [(50, 200), (51, 400), (0, 400)])
def test_a_search_page_is_1_to_50_as_zeps_v4_reference_says(api, graph, scope, page_size, status):
    """help.getzep.com/sdk-reference/graph/search-edges and search-nodes: ``page_size``
    "integer, Optional, 1-50" (the list endpoints take 1-100, not the searches)."""
    answer = api.post(
        f"/graphs/{graph}/search/{scope}", params={"page_size": page_size}, json={"query": "q"}
    )
    assert answer.status_code == status, answer.text
    if status == 400:
        assert "page_size" in answer.json()["error"]["message"]


def test_users_keys_and_projects_as_zep_has_them(zep, api, graph):
    name = f"u-{uuid.uuid4().hex}"
    assert api.post("/users", json={"user_id": name}).status_code == 201
    assert api.post("/users", json={"user_id": name}).status_code == 409  # unique
    assert api.post("/users", json={"user_id": "x" * 501}).status_code == 400  # <= 500
    both = api.post("/users/lookup", json={"user_id": name, "graph_id": "g"})
    assert both.status_code == 400  # "Mutually exclusive"
    assert api.post("/users/lookup", json={"user_id": "nobody"}).status_code == 404
    with httpx.Client(base_url=zep.base_url, timeout=30) as anonymous:
        assert anonymous.get(f"/users/{graph}").status_code == 401
        wrong = {"Authorization": "Api-Key not-a-key"}
        assert anonymous.get(f"/users/{graph}", headers=wrong).status_code == 401
        other = {"Authorization": f"Api-Key {OTHER_KEY}"}  # another project's key
        assert anonymous.get(f"/users/{graph}", headers=other).status_code == 404
        search = anonymous.post(f"/graphs/{graph}/search/edges", json={"query": "q"}, headers=other)
        assert search.status_code == 404


# --- configuration errors: one line, exit 2 ---------------------------------------------------


def healthd(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "ZEP_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", *args],
        capture_output=True, text=True, timeout=300, env={**base, **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("switches", "env", "said"),
    [
        ("shadow=on", {}, "ZEP_API_KEY is not set"),
        ("shadow=on", {"ZEP_API_KEY": "z-revoked"}, "HTTP 401: invalid API key"),
        ("user_id=alice", {"ZEP_API_KEY": DEFAULT_KEY}, "'alice' is not declared shadow"),
        ("shadow=on,reranker=bm25", {"ZEP_API_KEY": DEFAULT_KEY}, "reranker='bm25'"),
        ("shadow=on,scope=nodes,search=valid", {"ZEP_API_KEY": DEFAULT_KEY}, "scope=edges"),
        ("shadow=on,base_url=http://127.0.0.1:9", {"ZEP_API_KEY": DEFAULT_KEY}, "127.0.0.1:9"),
        ("shadow=on,top_k=51", {"ZEP_API_KEY": DEFAULT_KEY}, "top_k=51: Zep's search"),
    ],
)
def test_each_configuration_error_is_one_line_and_exit_2(zep, switches, env, said):
    spec = (
        f"zep:{switches}" if "base_url" in switches else f"zep:base_url={zep.base_url},{switches}"
    )
    done = healthd("--target", spec, env=env)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert DEFAULT_KEY not in done.stderr


def test_a_host_that_drips_its_answer_is_cut_at_timeout_seconds(monkeypatch, dripping_host):
    """Each call is bounded in all, not only between two reads: a lookup answered a byte
    every half second is given up at timeout_seconds, and the SDK does not retry it."""
    import time

    monkeypatch.setenv("ZEP_API_KEY", DEFAULT_KEY)
    url = f"{dripping_host.url}/api/v4"
    started = time.monotonic()
    with pytest.raises(TargetError, match="not read within 2 s"):
        build_memory(parse_target(f"zep:shadow=on,base_url={url},timeout_seconds=2"))
    assert time.monotonic() - started < 4
    assert dripping_host.accepted == 1  # no retry


def test_a_switch_zep_does_not_have_is_refused(monkeypatch):
    monkeypatch.setenv("ZEP_API_KEY", DEFAULT_KEY)
    with pytest.raises(TargetError, match="unknown switch 'group_id'"):
        build_memory(parse_target("zep:shadow=on,group_id=g"))


# --- the bundled example, offline, as the docs give it ----------------------------------------


@pytest.mark.slow
def test_the_bundled_example_against_the_imitation_prints_every_metric():
    env = {k: v for k, v in os.environ.items() if k != "ZEP_API_KEY"}
    done = subprocess.run(
        [
            sys.executable, "-m", "healthd.testing.zep", "--style", "verbatim", "--",
            sys.executable, "-m", "healthd", "evaluate",
            "--target", "zep:shadow=on,base_url_env=ZEP_BASE_URL",
        ],
        capture_output=True, text=True, timeout=1200, env={**env, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if "freshness" in line)
    metrics = ("freshness", "consistency", "coverage", "forgetting", "contamination", "conflicts")
    assert all(name in header for name in metrics)
    row = next(line for line in done.stdout.splitlines() if line.startswith("│ all "))
    cells = [cell.strip() for cell in row.strip("│ ").split("│")][1:]
    assert len(cells) == len(metrics) and all(cell != "—" for cell in cells), row
    figures = dict(zip(metrics, cells, strict=True))
    # Zep's default search returns ended edges beside current ones
    assert float(figures["contamination"]) > 0.5


# --- the real Zep, when there are credentials -------------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("ZEP_API_KEY"),
    reason="ZEP_API_KEY is not set: no Zep project to run against",
)
def test_the_live_zep_round_trip():
    user = f"healthd-shadow-live-{uuid.uuid4().hex[:8]}"
    spec = f"zep:shadow=on,user_id={user}"
    if os.environ.get("ZEP_BASE_URL"):
        spec += ",base_url_env=ZEP_BASE_URL"
    memory = build_memory(parse_target(spec))
    try:
        memory.reset()
        memory.apply(owner(1, "@bob"))
        served = memory.answer(PROBE, datetime(2024, 3, 2, tzinfo=UTC)).items
        assert any("bob" in item.text.lower() for item in served)
    finally:
        if memory._user_uuid:  # the shadow user is not left behind
            memory._client.user.delete(memory._user_uuid)
        memory.close()
