"""A team's Graphiti set-up, from a target's ``[targets.NAME.graphiti]`` table.

The table says what the team runs Graphiti with; healthd builds Graphiti's own clients from
it and changes nothing else::

    [targets.graphiti-team.graphiti.llm]
    client = "openai_generic"     # or "openai" (the Responses API)
    model = "gpt-4.1-mini"
    small_model = "gpt-4.1-nano"
    base_url = "https://llm.internal/v1"
    api_key_env = "TEAM_LLM_API_KEY"    # the variable's name: never the key

    [targets.graphiti-team.graphiti.embedder]
    provider = "openai"           # or "minilm", "hashing" (healthd's local embedders)
    model = "text-embedding-3-small"
    dimensions = 1536

    [targets.graphiti-team.graphiti.cross_encoder]
    provider = "openai"           # or "none"

    [targets.graphiti-team.graphiti.driver]
    provider = "kuzu"             # embedded (default); or "neo4j", "falkordb"
    buffer_pool_size = "256MiB"

Secrets are read only from the environment variables named by ``*_env`` keys, when the
clients are built; a variable that is named but unset is one clear error. Kuzu's buffer pool
defaults to 80 % of the machine's memory; healthd bounds it (:data:`KUZU_BUFFER_POOL`) and
checkpoints often (:data:`KUZU_CHECKPOINT`) so that the bound holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from healthd.embedding import Embedder
from healthd.errors import TargetError, first_problem
from healthd.logging import env_secret

KUZU_BUFFER_POOL = 256 * 1024**2
# Pages changed since the last checkpoint stay in the buffer pool: Graphiti's full-text
# index makes many per write, so with Kuzu's default (16 MiB of WAL) a bounded pool fills.
KUZU_CHECKPOINT = 1024**2
KUZU_MAX_DB_SIZE = 64 * 1024**3  # address space Kuzu reserves, not memory it uses
_NO_KEY = "healthd-no-key"  # what an endpoint without authentication is sent
_SIZE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB|TiB)?\s*$")
_UNITS = {None: 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}


def parse_size(value: Any) -> int:
    """A size in bytes: an integer, or a string such as ``"256MiB"``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f"{value!r} is not a size (an integer of bytes or e.g. '256MiB')")
    return int(match[1]) * _UNITS[match[2]]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LLMTable(_Table):
    client: Literal["openai", "openai_generic"] = "openai_generic"
    model: str | None = None
    small_model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    structured_output: Literal["json_schema", "json_object"] = "json_schema"


class EmbedderTable(_Table):
    provider: Literal["openai", "minilm", "hashing"] = "minilm"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    dimensions: int | None = Field(default=None, gt=0)


class CrossEncoderTable(_Table):
    provider: Literal["openai", "none"] = "none"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None


class DriverTable(_Table):
    provider: Literal["kuzu", "neo4j", "falkordb"] = "kuzu"
    buffer_pool_size: int = KUZU_BUFFER_POOL
    max_db_size: int = KUZU_MAX_DB_SIZE
    checkpoint_threshold: int = KUZU_CHECKPOINT
    uri: str | None = None  # neo4j
    host: str | None = None  # falkordb
    port: int | None = None  # falkordb
    user: str | None = None
    password_env: str | None = None
    database: str | None = None

    @field_validator("buffer_pool_size", "max_db_size", mode="before")
    @classmethod
    def _size(cls, value: Any) -> int:
        size = parse_size(value)
        if size < 16 * 1024**2:
            raise ValueError("must be at least 16MiB")
        return size

    @field_validator("checkpoint_threshold", mode="before")
    @classmethod
    def _wal_size(cls, value: Any) -> int:
        return parse_size(value)


class GraphitiTable(_Table):
    llm: LLMTable | None = None
    embedder: EmbedderTable | None = None
    cross_encoder: CrossEncoderTable = CrossEncoderTable()
    driver: DriverTable = DriverTable()


def parse_table(value: Any) -> GraphitiTable:
    """The ``graphiti`` table of a target, checked: unknown keys and bad values are one
    line naming the key."""
    if value is None:
        return GraphitiTable()
    if not isinstance(value, Mapping):
        raise TargetError("graphiti: expected a table ([targets.NAME.graphiti])")
    try:
        return GraphitiTable.model_validate(dict(value))
    except ValidationError as exc:
        where, message = first_problem(exc)
        raise TargetError(f"graphiti.{where}: {message}") from None


def secret(name: str | None, where: str) -> str | None:
    """The value of the environment variable ``name`` (None when no name is given)."""
    if name is None:
        return None
    value = env_secret(name)
    if not value:
        table, key = where.rsplit(".", 1)
        raise TargetError(f"graphiti.{table}: environment variable {name!r} ({key}) is not set")
    return value


def llm_client(table: LLMTable) -> Any:
    """The team's LLM client, as Graphiti builds it."""
    from graphiti_core.llm_client.config import LLMConfig

    tuning: dict[str, Any] = {}
    if table.temperature is not None:
        tuning["temperature"] = table.temperature
    if table.max_tokens is not None:
        tuning["max_tokens"] = table.max_tokens
    config = LLMConfig(
        api_key=secret(table.api_key_env, "llm.api_key_env") or _NO_KEY,
        model=table.model,
        small_model=table.small_model,
        base_url=table.base_url,
        **tuning,
    )
    if table.client == "openai":
        from graphiti_core.llm_client.openai_client import OpenAIClient

        return OpenAIClient(config)
    from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient

    limit: dict[str, Any] = {"max_tokens": table.max_tokens} if table.max_tokens else {}
    return OpenAIGenericClient(config, structured_output_mode=table.structured_output, **limit)


def remote_embedder(table: EmbedderTable) -> Any:
    """An ``openai`` embedder table as Graphiti's ``OpenAIEmbedder``."""
    from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig

    return OpenAIEmbedder(
        OpenAIEmbedderConfig(
            api_key=secret(table.api_key_env, "embedder.api_key_env") or _NO_KEY,
            base_url=table.base_url,
            **({"embedding_model": table.model} if table.model else {}),
            **({"embedding_dim": table.dimensions} if table.dimensions else {}),
        )
    )


def local_embedder(table: EmbedderTable) -> Embedder:
    from healthd.memory._embedder_switch import embedder_from_options

    options: dict[str, Any] = {"embedder": table.provider}
    if table.dimensions is not None:
        options["dimensions"] = table.dimensions
    return embedder_from_options(options)


def cross_encoder(table: CrossEncoderTable) -> Any | None:
    """The team's cross-encoder, or None (``none``: healthd's refusing one is used)."""
    if table.provider == "none":
        return None
    from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
    from graphiti_core.llm_client.config import LLMConfig

    return OpenAIRerankerClient(
        LLMConfig(
            api_key=secret(table.api_key_env, "cross_encoder.api_key_env") or _NO_KEY,
            model=table.model,
            base_url=table.base_url,
        )
    )


def remote_driver(table: DriverTable, group_id: str, episodes: bool = True) -> Any:
    """A Neo4j or FalkorDB driver as configured (Kuzu is built by the adapter). On FalkorDB
    Graphiti keeps each group's episodes in a graph of its name (``add_episode`` clones the
    driver onto it) while its search and ``clear_data`` read the driver's own graph: for
    ``episodes`` the driver is opened on the group's graph, and another ``database`` is
    refused; edges healthd writes itself go where the driver is, the ``database`` given (or
    the group's graph)."""
    from healthd.memory._offline import require_extra

    if table.provider == "falkordb" and episodes and table.database not in (None, group_id):
        raise TargetError(
            f"graphiti.driver.database {table.database!r}: on FalkorDB Graphiti keeps the "
            f"group {group_id!r} in a graph of that name; leave database unset or give the "
            "group_id"
        )

    password = secret(table.password_env, "driver.password_env")
    if table.provider == "neo4j":
        if not table.uri:
            raise TargetError("graphiti.driver.uri: the neo4j driver needs a uri")
        module = require_extra("graphiti_core.driver.neo4j_driver", "graphiti", "graphiti")
        return module.Neo4jDriver(
            table.uri,
            table.user,
            password,
            **({"database": table.database} if table.database else {}),
        )
    module = require_extra("graphiti_core.driver.falkordb_driver", "graphiti", "graphiti")
    return module.FalkorDriver(
        host=table.host or "localhost",
        port=table.port or 6379,
        username=table.user,
        password=password,
        database=group_id if episodes else (table.database or group_id),
    )


def kuzu_driver(database: str, table: DriverTable) -> Any:
    """Graphiti's own ``KuzuDriver`` on a database whose buffer pool and size are bounded.

    ``KuzuDriver`` opens ``kuzu.Database(path)`` with Kuzu's defaults (a buffer pool of 80 %
    of the machine's memory) and takes no options; the driver here is built by it on a
    throwaway in-memory database, then given the bounded one, its schema and connection,
    so every operation is still Graphiti's.
    """
    import kuzu
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    class BoundedKuzuDriver(KuzuDriver):
        # graphiti-core 0.31.2's add_episode compares a group id with the driver's
        # ``_database``, which KuzuDriver never sets: one embedded database holds every group.
        _database = ""

    driver: Any = BoundedKuzuDriver(db=":memory:")
    driver.client.close()
    driver.db.close()
    driver.db = kuzu.Database(
        database,
        buffer_pool_size=table.buffer_pool_size,
        max_db_size=table.max_db_size,
        checkpoint_threshold=table.checkpoint_threshold,
    )
    driver.setup_schema()
    driver.client = kuzu.AsyncConnection(driver.db, max_concurrent_queries=1)
    return driver
