"""A team's LangMem set-up (``[targets.NAME.langmem]`` and the target's switches) checked and
made into what LangChain's ``init_chat_model``, LangMem's ``create_memory_store_manager`` and
a LangGraph store take. Pure: the environment is passed in, nothing is imported or opened."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from healthd.errors import TargetError
from healthd.memory._mem0_config import resolve_secrets

#: the keys of ``[targets.NAME.langmem]``: ``create_memory_store_manager``'s own arguments
#: (``model``, ``query_model`` as ``init_chat_model`` tables) and the store it writes to
MANAGER_KEYS = (
    "model",
    "query_model",
    "instructions",
    "enable_inserts",
    "enable_deletes",
    "query_limit",
)
SECTIONS = (*MANAGER_KEYS, "store")
STORE_KINDS = ("memory", "postgres")
STORE_KEYS = ("kind", "conn_string_env", "index")
INDEX_KEYS = ("dims", "embed", "fields", "embed_kwargs")
#: switches that stand for ``langmem.model`` on a command line (``--target langmem:...``)
MODEL_SWITCHES = ("model", "model_env", "model_provider", "base_url", "base_url_env", "api_key_env")


@dataclass(frozen=True)
class TeamLangMem:
    """What the team set: the chat model(s) as ``init_chat_model`` keyword arguments, the
    manager's other arguments, and the store."""

    model: dict[str, Any]
    query_model: dict[str, Any] | None = None
    manager: dict[str, Any] = field(default_factory=dict)
    store_kind: str = "memory"
    conn_string: str | None = None
    #: the team's index (``dims``, ``embed``, ``fields``, ``embed_kwargs``); ``{}`` for a store
    #: with none (``index = false``: search filters, and ranks nothing); None for healthd's
    #: local embedder
    index: dict[str, Any] | None = None

    @property
    def model_name(self) -> str:
        return _model_label(self.model)


def team_langmem(table: Any, switches: Mapping[str, Any], env: Mapping[str, str]) -> TeamLangMem:
    """The team's set-up from its table and the model switches, secrets read from ``env``."""
    if table is None:
        table = {}
    if not isinstance(table, Mapping):
        raise TargetError(
            "switch langmem: LangMem's set-up is a table, [targets.NAME.langmem] in the config "
            "file (model, store, enable_deletes, ...)"
        )
    for key in table:
        if key not in SECTIONS:
            raise TargetError(f"langmem.{key}: not a LangMem setting; known: {', '.join(SECTIONS)}")
    given = {k: v for k, v in switches.items() if k in MODEL_SWITCHES}
    if given and "model" in table:
        raise TargetError(
            f"switch {sorted(given)[0]}: the model is langmem.model in the config file; give one"
        )
    model_table = table.get("model", given)
    if not model_table:
        raise TargetError(
            "langmem.model: LangMem's manager needs the team's chat model, a "
            "[targets.NAME.langmem.model] table (model, model_provider, base_url, api_key_env) "
            "or the switch model=PROVIDER:NAME"
        )
    model = _chat_model(model_table, env, "langmem.model")
    query_model = (
        _chat_model(table["query_model"], env, "langmem.query_model")
        if "query_model" in table
        else None
    )
    manager: dict[str, Any] = {}
    for key in ("enable_inserts", "enable_deletes"):
        if key in table:
            if not isinstance(table[key], bool):
                raise TargetError(f"langmem.{key}: expected true or false")
            manager[key] = table[key]
    if "instructions" in table:
        if not isinstance(table["instructions"], str) or not table["instructions"].strip():
            raise TargetError("langmem.instructions: expected the instructions as text")
        manager["instructions"] = table["instructions"]
    if "query_limit" in table:
        limit = table["query_limit"]
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise TargetError(f"langmem.query_limit: {limit!r} is not a positive integer")
        manager["query_limit"] = limit
    kind, conn_string, index = _store(table.get("store", {}), env)
    return TeamLangMem(model, query_model, manager, kind, conn_string, index)


def _chat_model(table: Any, env: Mapping[str, str], where: str) -> dict[str, Any]:
    if isinstance(table, str):
        table = {"model": table}
    if not isinstance(table, Mapping):
        raise TargetError(f"{where}: expected a table of init_chat_model's arguments")
    resolved: dict[str, Any] = resolve_secrets(table, env, where)
    if not isinstance(resolved.get("model"), str) or not resolved["model"]:
        raise TargetError(f"{where}.model: expected the model's name (provider:name)")
    if "model_provider" not in resolved and ":" not in resolved["model"]:
        raise TargetError(
            f"{where}.model: {resolved['model']!r} names no provider; write "
            "provider:name (openai:gpt-4.1-mini) or give model_provider"
        )
    return resolved


def _store(table: Any, env: Mapping[str, str]) -> tuple[str, str | None, dict[str, Any] | None]:
    if not isinstance(table, Mapping):
        raise TargetError("langmem.store: expected a table (kind, conn_string_env, index)")
    for key in table:
        if key not in STORE_KEYS:
            raise TargetError(
                f"langmem.store.{key}: not a store setting; known: {', '.join(STORE_KEYS)}"
            )
    kind = table.get("kind", "memory")
    if kind not in STORE_KINDS:
        raise TargetError(f"langmem.store.kind: {kind!r}; expected one of {', '.join(STORE_KINDS)}")
    conn_string = None
    if kind == "postgres":
        name = table.get("conn_string_env")
        if not isinstance(name, str) or not name:
            raise TargetError(
                "langmem.store.conn_string_env: the PostgresStore's DSN is read from an "
                "environment variable; name it"
            )
        if name not in env:
            raise TargetError(
                f"langmem.store.conn_string_env: environment variable {name} is not set"
            )
        conn_string = env[name]
    elif "conn_string_env" in table:
        raise TargetError("langmem.store.conn_string_env: only a postgres store has one")
    index: dict[str, Any] | None = None
    if table.get("index") is False:  # the team's store has no vector index
        index = {}
    elif "index" in table:
        index = _index(table["index"], env)
    return kind, conn_string, index


def _index(table: Any, env: Mapping[str, str]) -> dict[str, Any]:
    if not isinstance(table, Mapping):
        raise TargetError("langmem.store.index: expected a table (dims, embed, fields)")
    for key in table:
        if key not in INDEX_KEYS:
            raise TargetError(
                f"langmem.store.index.{key}: not an index setting; known: {', '.join(INDEX_KEYS)}"
            )
    dims = table.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise TargetError(f"langmem.store.index.dims: {dims!r} is not the embeddings' size")
    embed = table.get("embed")
    if not isinstance(embed, str) or ":" not in embed:
        raise TargetError(
            "langmem.store.index.embed: expected provider:model "
            "(openai:text-embedding-3-small), as init_embeddings takes"
        )
    fields = table.get("fields", ["$"])
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise TargetError("langmem.store.index.fields: expected a list of paths")
    kwargs = resolve_secrets(table.get("embed_kwargs", {}), env, "langmem.store.index.embed_kwargs")
    return {"dims": dims, "embed": embed, "fields": fields, "embed_kwargs": kwargs}


def _model_label(model: Mapping[str, Any]) -> str:
    name = str(model["model"])
    provider = model.get("model_provider")
    return f"{provider}:{name}" if provider and ":" not in name else name


def namespace_tuple(value: Any) -> tuple[str, ...]:
    """A namespace as LangGraph takes it: a TOML list, or its parts joined by ``/``. Template
    variables (``{langgraph_user_id}``) are refused: the shadow is one fixed namespace."""
    parts = [str(p) for p in value] if isinstance(value, list) else str(value).split("/")
    if not parts or any(not p.strip() for p in parts):
        raise TargetError(f"switch namespace={value!r}: expected non-empty parts")
    if any("{" in p or "}" in p or "." in p for p in parts):
        raise TargetError(
            f"switch namespace={value!r}: a shadow namespace is fixed (no {{template}} "
            "variables) and LangGraph refuses '.' in a label"
        )
    return tuple(p.strip() for p in parts)
