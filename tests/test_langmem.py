"""LangMem on a LangGraph store (`kind = "langmem"`): each event a user message given to
LangMem's own memory manager (`create_memory_store_manager`), whose model decides with tool
calls what is inserted, patched or removed in the store; probes are the store's own search.
The model is the stand-in (healthd.testing.standin_llm, not a model: it answers LangMem's
tool-calling prompt from the conversation's sentences), on 127.0.0.1."""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from healthd.errors import MemoryAdapterError, TargetError
from healthd.memory import TargetSpec, build_memory
from healthd.model import ChangeEvent, Fact, Probe
from healthd.testing.standin_llm import StandInLLM

pytest.importorskip("langmem", reason="the langmem extra is not installed")
from langgraph.store.memory import InMemoryStore

from healthd.embedding import HashingEmbedder
from healthd.memory.langmem import LangMemMemory

pytestmark = pytest.mark.product

KEY_VAR = "TEAM_LLM_KEY_FOR_LANGMEM_TESTS"
ROOT = Path(__file__).resolve().parent.parent
T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)
ALICE = Fact("billing", "owners", "@alice", "ownership")
BOB = Fact("billing", "owners", "@bob", "ownership")
EXPRESS = Fact("auth-service", "dependency:express", "4.18.2", "tech")
GO = Fact("auth-service", "language", "go", "tech")
EVENTS = [
    ChangeEvent("e1", "added", T0, "git", ALICE),
    ChangeEvent("e2", "added", T0.replace(day=2), "git", EXPRESS),
    ChangeEvent("e3", "added", T0.replace(day=3), "git", GO),
    ChangeEvent("e4", "revised", T0.replace(day=4), "git", BOB, previous=ALICE),
    ChangeEvent("e5", "revalidated", T0.replace(day=5), "git", BOB),
    ChangeEvent("e6", "invalidated", T0.replace(day=6), "git", EXPRESS),
]
OWNER_PROBE = Probe("p-owner", "billing", "owners", "Who owns billing?", "ownership")


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInLLM]:
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM(style="verbatim") as server:
        yield server


def team_model(base_url: str) -> dict[str, Any]:
    return {
        "model": "team-chat-7b",
        "model_provider": "openai",
        "base_url": base_url,
        "api_key_env": KEY_VAR,
        "temperature": 0,
    }


def target(base_url: str, **options: Any) -> LangMemMemory:
    table = options.pop("langmem", {"model": team_model(base_url)})
    embedder = options.pop("embedder", "hashing")  # None: the team's index embeds
    opts = {"langmem": table, **({"embedder": embedder} if embedder else {}), **options}
    memory = build_memory(TargetSpec("langmem", opts, "team-langmem"))
    assert isinstance(memory, LangMemMemory)
    return memory


def contents(store: Any, namespace: tuple[str, ...]) -> dict[str, str]:
    return {i.key: i.value["content"]["content"] for i in store.search(namespace, limit=100)}


class RecordingStore(InMemoryStore):
    """LangGraph's InMemoryStore, noting the namespace of every operation it is asked for."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.touched: list[tuple[str, tuple[str, ...]]] = []

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        for op in ops:
            name = type(op).__name__
            namespace = getattr(op, "namespace", None) or getattr(op, "namespace_prefix", ())
            for condition in getattr(op, "match_conditions", None) or ():  # ListNamespacesOp
                if condition.match_type == "prefix":
                    namespace = condition.path
            self.touched.append((name, tuple(namespace)))
        return super().batch(ops)


# --- LangMem's own decisions, with the team's model, embedder and store -------------------


def test_the_teams_model_and_langmems_decisions_are_what_the_store_holds(llm: StandInLLM):
    memory = target(llm.base_url, enable_deletes="on")
    try:
        memory.reset()
        for event in EVENTS[:3]:
            memory.apply(event)
        held = contents(memory.store, memory.namespace)
        assert sorted(held.values()) == [
            "Auth-service depends on express 4.18.2.",
            "Auth-service is written in go.",
            "Billing is owned by @alice.",
        ]
        alice_key = next(k for k, v in held.items() if "@alice" in v)
        memory.apply(EVENTS[3])  # revised: LangMem's PatchDoc replaces the memory in place
        memory.apply(EVENTS[4])  # revalidated: nothing new, nothing written
        memory.apply(EVENTS[5])  # invalidated: LangMem's RemoveDoc deletes it
        held = contents(memory.store, memory.namespace)
        assert held[alice_key] == "Billing is owned by @bob."
        assert sorted(held.values()) == [
            "Auth-service is written in go.",
            "Billing is owned by @bob.",
        ]
        answer = memory.answer(OWNER_PROBE, T0.replace(day=7))
        assert answer.items[0].text == "Billing is owned by @bob."
        assert answer.items[0].written_at == T0  # first written by e1, replay time
        assert answer.items[0].validated_at == T0.replace(day=4)
    finally:
        memory.close()
    chats = [r for r in llm.requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == len(EVENTS)  # one extraction call per event, nothing else
    assert {r["model"] for r in chats} == {"team-chat-7b"}
    assert {r.get("temperature") for r in chats} == {0}
    tools = {t["function"]["name"] for r in chats[1:] for t in r["tools"]}
    assert tools == {"Memory", "PatchDoc", "RemoveDoc"}  # deletes on: LangMem offers RemoveDoc
    fingerprint = memory.retrieval_fingerprint()
    assert fingerprint.embedder == HashingEmbedder().model
    assert dict(fingerprint.libraries)["extraction_llm"] == "openai:team-chat-7b"
    assert dict(fingerprint.libraries)["store"] == "InMemoryStore"


def test_the_varied_style_reaches_langmems_manager_and_changes_what_it_stores(
    monkeypatch: pytest.MonkeyPatch,
):
    """The stand-in's `style` knob reaches LangMem's manager as it does the others: on the
    bundled example's first events, verbatim stores the sentences as said; varied stores
    them reworded (and merged, dropped, credited to a neighbour...), each memory still a
    fact the varied reader reads back; and both are counted, call for call."""
    from healthd.cli import example_timeline_path
    from healthd.reading.render import statement
    from healthd.testing import standin_style
    from healthd.timeline import read_timeline

    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    events = list(read_timeline(str(example_timeline_path())))[:24]
    stored: dict[str, list[str]] = {}
    for style in ("verbatim", "varied"):
        with StandInLLM(style=style) as server:
            memory = target(server.base_url, enable_deletes="on")
            try:
                memory.reset()
                for event in events:
                    memory.apply(event)
                stored[style] = sorted(contents(memory.store, memory.namespace).values())
                block = memory.llm_usage().block()
            finally:
                memory.close()
            chats = [r for r in server.requests if r["path"].endswith("/chat/completions")]
            assert block["calls"] == len(chats) == len(events)
            assert block["by_purpose"]["extraction"]["calls"] == len(events)
    said = {statement(event) for event in events}
    assert stored["verbatim"] and set(stored["verbatim"]) <= said
    assert len(stored["varied"]) > len(events) // 3
    reworded = [text for text in stored["varied"] if text not in said]
    assert len(reworded) > len(stored["varied"]) // 2
    assert all(standin_style.read(text) for text in stored["varied"])


def test_without_deletes_langmem_rewrites_what_no_longer_holds(llm: StandInLLM):
    memory = target(llm.base_url)  # LangMem's default: enable_deletes=False
    try:
        memory.apply(EVENTS[1])
        memory.apply(EVENTS[5])
        assert list(contents(memory.store, memory.namespace).values()) == [
            "It is no longer true that auth-service depends on express 4.18.2."
        ]
    finally:
        memory.close()
    assert "RemoveDoc" not in {t["function"]["name"] for t in llm.requests[-1]["tools"]}


def test_the_default_index_is_minilm_in_the_fingerprint(llm: StandInLLM):
    memory = build_memory(TargetSpec("langmem", {"langmem": {"model": team_model(llm.base_url)}}))
    try:
        assert isinstance(memory, LangMemMemory)
        fingerprint = memory.retrieval_fingerprint()
        assert fingerprint.embedder == "sentence-transformers/all-MiniLM-L6-v2"
        assert fingerprint.dimensions == 384
        assert "langmem" in dict(fingerprint.libraries)
    finally:
        memory.close()


def test_the_teams_index_embedder_is_what_the_store_searches_with(llm: StandInLLM):
    """``langmem.store.index`` names the team's embeddings (``init_embeddings``, here an
    OpenAI-compatible endpoint serving all-MiniLM-L6-v2): the store embeds through it."""
    table = {
        "model": team_model(llm.base_url),
        "store": {
            "index": {
                "dims": 384,
                "embed": "openai:all-MiniLM-L6-v2",
                "embed_kwargs": {
                    "base_url": llm.base_url,
                    "api_key_env": KEY_VAR,
                    "check_embedding_ctx_length": False,
                },
            }
        },
    }
    memory = target(llm.base_url, langmem=table, embedder=None)
    try:
        memory.apply(EVENTS[0])
        memory.apply(EVENTS[2])
        (first, *_) = memory.answer(OWNER_PROBE, T0.replace(day=4)).items
        assert first.text == "Billing is owned by @alice."
    finally:
        memory.close()
    embedded = [r for r in llm.requests if r["path"].endswith("/embeddings")]
    assert embedded and {r["model"] for r in embedded} == {"all-MiniLM-L6-v2"}
    fingerprint = memory.retrieval_fingerprint()
    assert (fingerprint.embedder, fingerprint.dimensions) == ("openai:all-MiniLM-L6-v2", 384)


def test_another_namespace_in_the_teams_store_is_left_intact_and_unread(llm: StandInLLM):
    embedder = HashingEmbedder()
    store = RecordingStore(index={"dims": embedder.dimensions, "embed": embedder.embed})
    alice = ("memories", "alice")
    store.put(alice, "k1", {"kind": "Memory", "content": {"content": "Billing is owned by @zoe."}})
    with pytest.raises(TargetError, match="not declared shadow"):
        target(llm.base_url, store=store)  # a store that may hold others: shadow=on needed
    memory = target(llm.base_url, store=store, shadow="on", namespace="memories/healthd-shadow")
    try:
        store.touched.clear()
        memory.reset()
        for event in EVENTS:
            memory.apply(event)
        served = memory.answer(OWNER_PROBE, T0.replace(day=7))
        memory.reset()
    finally:
        memory.close()
    outside = [(op, ns) for op, ns in store.touched if ns[:2] != ("memories", "healthd-shadow")]
    assert store.touched and outside == []
    assert all("@zoe" not in item.text for item in served.items)
    assert store.get(alice, "k1").value["content"]["content"] == "Billing is owned by @zoe."
    assert contents(store, ("memories", "healthd-shadow")) == {}
    for request in llm.requests:  # nothing of the other namespace reached the model either
        assert "@zoe" not in json.dumps(request)


def test_a_shadow_namespace_that_holds_another_namespace_is_refused_before_any_write(
    llm: StandInLLM,
):
    """LangMem searches its namespace as a prefix and updates or deletes what it finds where
    it lies; a reset deletes what the prefix holds. A shadow namespace under which the store
    holds another (``("memories",)`` above LangMem's own ``("memories", user)``) would read,
    rewrite and wipe those users' memories: refused, nothing of theirs touched."""
    embedder = HashingEmbedder()
    store = RecordingStore(index={"dims": embedder.dimensions, "embed": embedder.embed})
    alice = ("memories", "alice")
    store.put(alice, "k1", {"kind": "Memory", "content": {"content": "Billing is owned by @zoe."}})
    store.touched.clear()
    with pytest.raises(TargetError, match=r"holds another namespace, \('memories', 'alice'\)"):
        memory = target(llm.base_url, store=store, shadow="on", namespace="memories")
        memory.reset()  # (before the fix: this emptied alice's namespace)
    assert [op for op, ns in store.touched if op != "ListNamespacesOp"] == []
    assert store.get(alice, "k1").value["content"]["content"] == "Billing is owned by @zoe."


# --- bad configuration and a misbehaving model --------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"langmem": {}}, "langmem.model: LangMem's manager needs the team's chat model"),
        ({"langmem": {"model": "gpt-4.1"}}, "names no provider"),
        (
            {"langmem": {"model": {"model": "openai:x", "api_key_env": "NO_SUCH_VAR_41"}}},
            "NO_SUCH_VAR_41 is not set",
        ),
        (
            {"langmem": {"model": {"model": "openai:x", "api_key": "sk-1"}}},
            "a secret is not written",
        ),
        ({"langmem": {"model": "openai:x", "graph": {}}}, "langmem.graph: not a LangMem setting"),
        ({"langmem": {"model": "openai:x", "store": {"kind": "redis"}}}, "langmem.store.kind"),
        ({"langmem": {"model": "openai:x", "store": {"kind": "postgres"}}}, "conn_string_env"),
        ({"model": "openai:x", "namespace": "memories/{langgraph_user_id}"}, "no {template}"),
        ({"model": "openai:x", "shadow": "off"}, "not declared shadow"),
        ({"model": "openai:x", "store": "postgres"}, "switch store"),
    ],
)
def test_configuration_errors_are_one_clear_error(options: dict[str, Any], message: str):
    with pytest.raises(TargetError, match=None) as raised:
        build_memory(TargetSpec("langmem", options, "team-langmem"))
    assert message in str(raised.value)
    assert "sk-1" not in str(raised.value)


def healthd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
    )


def test_cli_a_postgres_store_that_cannot_be_reached_is_one_line_and_exit_2(tmp_path: Path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends
    config = tmp_path / "healthd.toml"
    config.write_text(
        'example = true\n[targets.team-langmem]\nkind = "langmem"\nshadow = true\n'
        '[targets.team-langmem.langmem.model]\nmodel = "openai:team-chat-7b"\n'
        f'api_key_env = "{KEY_VAR}"\n'
        '[targets.team-langmem.langmem.store]\nkind = "postgres"\n'
        'conn_string_env = "TEAM_PG_DSN"\n'
    )
    dsn = f"postgresql://healthd:pg-secret-41@127.0.0.1:{port}/memories"
    done = healthd("evaluate", "--config", str(config), env={"TEAM_PG_DSN": dsn, KEY_VAR: "k"})
    assert done.returncode == 2, done.stderr
    assert "langmem.store: the PostgresStore cannot be used" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "pg-secret-41" not in done.stderr


def test_cli_a_missing_model_or_variable_is_one_line_and_exit_2():
    done = healthd("evaluate", "--target", "langmem:namespace=memories/shadow")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "langmem.model" in done.stderr
    done = healthd("evaluate", "--target", "langmem:model=openai:x,api_key_env=NO_SUCH_VAR_41")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "NO_SUCH_VAR_41 is not set" in done.stderr


@pytest.mark.parametrize("fault", ["error", "garbage"])
def test_a_model_that_fails_fails_the_write(fault: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM(fault=fault) as broken:
        memory = target(broken.base_url)
        try:
            with pytest.raises(MemoryAdapterError, match="langmem apply of event 'e1'"):
                memory.apply(EVENTS[0])
        finally:
            memory.close()


def test_a_model_that_never_answers_fails_the_write_within_timeout_seconds(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        memory = target(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", timeout_seconds="1")
        try:
            with pytest.raises(MemoryAdapterError, match="[Tt]imed? ?out"):
                memory.apply(EVENTS[0])
        finally:
            memory.close()


# --- a PostgresStore, when a server can be started here -----------------------------------


def test_a_postgres_store_without_pgvector_is_said_in_one_line(llm: StandInLLM, tmp_path: Path):
    """LangGraph's PostgresStore indexes with pgvector; a server without the extension is
    refused at start, naming it (a server is started when Debian's postgresql is here)."""
    dsn = _postgres()
    os.environ["TEAM_PG_DSN_41"] = dsn
    try:
        table = {
            "model": team_model(llm.base_url),
            "store": {
                "kind": "postgres",
                "conn_string_env": "TEAM_PG_DSN_41",
                "index": {
                    "dims": 384,
                    "embed": "openai:all-MiniLM-L6-v2",
                    "embed_kwargs": {
                        "base_url": llm.base_url,
                        "api_key_env": KEY_VAR,
                        "check_embedding_ctx_length": False,
                    },
                },
            },
        }
        try:
            memory = target(llm.base_url, langmem=table, embedder=None, shadow="on")
        except TargetError as exc:
            assert "vector" in str(exc) and "\n" not in str(exc)
            pytest.skip("this Postgres has no pgvector: the refusal is what was tested")
        try:
            memory.reset()
            memory.apply(EVENTS[0])
            assert memory.answer(OWNER_PROBE, T0).items[0].text == "Billing is owned by @alice."
        finally:
            memory.reset()
            memory.close()
    finally:
        del os.environ["TEAM_PG_DSN_41"]


def test_the_teams_postgres_store_holds_langmems_decisions_and_others_stay_intact(
    llm: StandInLLM, tmp_path: Path
):
    """A real PostgresStore (a server started here), with no vector index (``index =
    false``: pgvector is not installed here): LangMem's inserts, patches and removals land in
    the shadow namespace of the team's table; another namespace's row is untouched."""
    import psycopg
    from langgraph.store.postgres import PostgresStore

    dsn = _postgres()
    with psycopg.Connection.connect(dsn, autocommit=True) as conn:
        other = PostgresStore(conn)
        other.setup()
        other.put(
            ("memories", "alice"),
            "k1",
            {"kind": "Memory", "content": {"content": "Billing is owned by @zoe."}},
        )
    os.environ["TEAM_PG_DSN_41"] = dsn
    try:
        table = {
            "model": team_model(llm.base_url),
            "store": {"kind": "postgres", "conn_string_env": "TEAM_PG_DSN_41", "index": False},
            "enable_deletes": True,
        }
        with pytest.raises(TargetError, match="not declared shadow"):
            target(llm.base_url, langmem=table, embedder=None)
        memory = target(llm.base_url, langmem=table, embedder=None, shadow="on")
        try:
            memory.reset()
            for event in EVENTS:
                memory.apply(event)
            served = [i.text for i in memory.answer(OWNER_PROBE, T0.replace(day=7)).items]
            assert sorted(served) == ["Auth-service is written in go.", "Billing is owned by @bob."]
            assert memory.retrieval_fingerprint().embedder == "none"
            assert dict(memory.retrieval_fingerprint().libraries)["store"] == "PostgresStore"
            memory.reset()
        finally:
            memory.close()
    finally:
        del os.environ["TEAM_PG_DSN_41"]
    with psycopg.Connection.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT prefix, key, value::text FROM store ORDER BY prefix").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("memories.alice", "k1")]
    assert "@zoe" in rows[0][2]


@functools.cache
def _postgres() -> str:
    """A throwaway Postgres server on 127.0.0.1 for this module (stopped at exit)."""
    bindir = Path("/usr/lib/postgresql")
    found = sorted(bindir.glob("*/bin/initdb")) if bindir.exists() else []
    initdb = shutil.which("initdb") or (str(found[-1]) if found else None)
    if initdb is None:
        pytest.skip("no Postgres server here (Debian's postgresql package)")
    pg_ctl = str(Path(initdb).with_name("pg_ctl"))
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="healthd-pg-"))  # pytest's tmp_path is root's alone
    data = home / "pgdata"
    data.mkdir()
    run_as: list[str] = []
    if os.geteuid() == 0:  # Postgres refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start Postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
        os.chmod(home, 0o755)
        shutil.chown(data, "postgres")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run(
        [*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1"
    subprocess.run(
        [*run_as, pg_ctl, "-D", str(data), "-o", options, "-w", "start", "-l", str(data / "log")],
        check=True,
        capture_output=True,
        timeout=60,
    )
    import atexit

    def stop() -> None:
        subprocess.run(
            [*run_as, pg_ctl, "-D", str(data), "-m", "fast", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(home, ignore_errors=True)

    atexit.register(stop)
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


# --- the bundled example, as the docs give it ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("style", ["verbatim", "varied"])
def test_the_bundled_example_offline_prints_every_metric(style: str):
    """`python scripts/with_standin_llm.py healthd evaluate --target "langmem:..."`: LangMem's
    own manager through the stand-in model (each style) and the real all-MiniLM-L6-v2
    index."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "with_standin_llm.py"),
            "--style",
            style,
            sys.executable,
            "-m",
            "healthd",
            "evaluate",
            "--target",
            DOCS_TARGET,
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)["targets"]
    final = {k: round(v, 3) for k, v in result["final"]["metrics"]["all"].items()}
    columns = ("freshness", "consistency", "coverage", "forgetting", "contamination")
    assert set(columns) <= set(final)
    assert tuple(final[c] for c in columns) == DOCS_ROWS[style]


DOCS_TARGET = (
    "langmem:model_env=TEAM_LLM_MODEL,model_provider=openai,base_url_env=TEAM_LLM_BASE_URL,"
    "api_key_env=TEAM_LLM_API_KEY,enable_deletes=on"
)
DOCS_ROWS = {
    "verbatim": (0.231, 0.769, 1.0, 0.765, 0.182),
    "varied": (0.25, 0.688, 0.875, 0.647, 0.273),
}


def test_daemon_a_model_answering_errors_is_a_failed_run_and_other_targets_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import generate_latest

    from healthd.daemon.runner import Runner
    from healthd.daemon.state import StateStore
    from healthd.exporters.prometheus import build_registry
    from healthd.exporters.tracing import build_tracer_provider, get_tracer
    from healthd.settings import load_settings

    monkeypatch.setenv(KEY_VAR, "sk-standin-not-a-secret-0000")
    with StandInLLM(fault="error") as broken:
        config = tmp_path / "healthd.toml"
        config.write_text(
            f'example = true\nstate_path = "{tmp_path / "state.db"}"\n'
            '[targets.team-langmem]\nkind = "langmem"\nshadow = true\nembedder = "hashing"\n'
            "[targets.team-langmem.langmem.model]\n"
            f'model = "openai:team-chat-7b"\nbase_url = "{broken.base_url}"\n'
            f'api_key_env = "{KEY_VAR}"\n'
            '[targets.reference]\nkind = "reference"\nshadow = true\n'
        )
        settings = load_settings(str(config))
        state = StateStore(settings.state_path)
        runner = Runner(
            settings, state, get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
        )
        registry, _ = build_registry(runner.view)
        try:
            runner.run_once()
        finally:
            runner.close()
            state.close()
    text = generate_latest(registry).decode()
    assert 'healthd_runs_total{result="failure",role="subject",target="team-langmem"} 1.0' in text
    assert 'healthd_runs_total{result="success",role="subject",target="reference"} 1.0' in text
    error = runner.view()["targets"]["team-langmem"].last_error
    assert "langmem apply of event" in error and "sk-standin" not in error


def test_the_stand_in_refuses_langmems_prompt_without_a_conversation(llm: StandInLLM):
    """A request with LangMem's system prompt and tools but no <session_...>: 400, as an
    unknown prompt is, never a guessed answer."""
    import requests

    body = {
        "model": "team-chat-7b",
        "messages": [
            {"role": "system", "content": "You are a memory subroutine for an AI."},
            {"role": "user", "content": "Remember things."},
        ],
        "tools": [{"type": "function", "function": {"name": "Memory", "parameters": {}}}],
    }
    answer = requests.post(f"{llm.base_url}/chat/completions", json=body, timeout=10)
    assert answer.status_code == 400
    assert "session" in answer.json()["error"]["message"]


LIVE_VARS = ("TEAM_LLM_BASE_URL", "TEAM_LLM_MODEL", "TEAM_LLM_API_KEY")


@pytest.mark.skipif(
    not all(os.environ.get(v) for v in LIVE_VARS),
    reason=f"no team LLM endpoint: set {', '.join(LIVE_VARS)} to run LangMem live",
)
def test_live_langmem_through_the_teams_model() -> None:
    table = {
        "model": {
            "model_env": "TEAM_LLM_MODEL",
            "model_provider": "openai",
            "base_url_env": "TEAM_LLM_BASE_URL",
            "api_key_env": "TEAM_LLM_API_KEY",
            "temperature": 0,
        },
        "enable_deletes": True,
    }
    memory = build_memory(TargetSpec("langmem", {"langmem": table, "embedder": "hashing"}))
    try:
        memory.apply(EVENTS[0])
        texts = [i.text for i in memory.answer(OWNER_PROBE, T0).items]
        assert any("alice" in t.lower() for t in texts), texts
    finally:
        memory.close()
