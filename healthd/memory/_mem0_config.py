"""A team's Mem0 configuration (``[targets.NAME.mem0]``) made into what ``Memory.from_config``
takes, and a timeline event made into the conversation turn Mem0's extraction reads. Pure:
the environment is passed in."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from typing import Any

from healthd.errors import TargetError
from healthd.logging import env_secret, secret_key
from healthd.model import ChangeEvent
from healthd.reading.render import statement

#: the top-level keys of Mem0 2.2's ``MemoryConfig`` a team may set (``version`` is Mem0's)
SECTIONS = ("embedder", "vector_store", "llm", "reranker", "history_db_path", "custom_instructions")
ENV_SUFFIX = "_env"


def resolve_secrets(value: Any, env: Mapping[str, str], where: str) -> Any:
    """``value`` with every ``NAME_env = "VAR"`` replaced by ``NAME`` = the variable's value; a
    secret given in the file itself (``api_key = "sk-..."``) is refused, naming its key only."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            path = f"{where}.{key}"
            if key.endswith(ENV_SUFFIX) and len(key) > len(ENV_SUFFIX):
                name = key[: -len(ENV_SUFFIX)]
                if name in value:
                    raise TargetError(f"{path}: give {name} or {key}, not both")
                if not isinstance(item, str) or not item:
                    raise TargetError(f"{path}: expected the name of an environment variable")
                if item not in env:
                    raise TargetError(f"{path}: environment variable {item} is not set")
                out[name] = env_secret(item, env)
            elif isinstance(item, str) and item and secret_key(key):
                raise TargetError(
                    f"{path}: a secret is not written in the configuration; name the "
                    f'environment variable that holds it ({key}{ENV_SUFFIX} = "VAR")'
                )
            else:
                out[key] = resolve_secrets(item, env, path)
        return out
    if isinstance(value, list):
        return [resolve_secrets(v, env, where) for v in value]
    return value


def team_config(table: Any, env: Mapping[str, str]) -> dict[str, Any]:
    """The team's sections, checked and with secrets read from ``env``."""
    if not isinstance(table, Mapping):
        raise TargetError(
            "switch mem0: Mem0's configuration is a table, [targets.NAME.mem0] in the "
            "config file (with embedder, vector_store, llm sections as Mem0 documents them)"
        )
    for key, section in table.items():
        if key == "graph_store":
            raise TargetError(
                "mem0.graph_store: Mem0 2.2 has no graph store (its MemoryConfig has no "
                "graph_store); a graph memory is the graphiti target"
            )
        if key not in SECTIONS:
            raise TargetError(f"mem0.{key}: not a Mem0 setting; known: {', '.join(SECTIONS)}")
        if key in ("embedder", "vector_store", "llm", "reranker"):
            if not isinstance(section, Mapping) or "provider" not in section:
                raise TargetError(f"mem0.{key}: expected a table with provider and config")
            unknown = sorted(set(section) - {"provider", "config"})
            if unknown:
                raise TargetError(f"mem0.{key}.{unknown[0]}: expected provider and config only")
    resolved: dict[str, Any] = resolve_secrets(table, env, "mem0")
    return resolved


def turn(event: ChangeEvent, *more: ChangeEvent) -> dict[str, str]:
    """The event as the user's turn in a conversation, stamped with its event time (Mem0's
    own Observation Date is the wall clock's day, so the time travels in the text); ``more``
    events (a revalidation sweep's, about one subject) said in the same turn."""
    at = event.timestamp.astimezone(UTC)
    said = " ".join(statement(e) for e in (event, *more))
    return {"role": "user", "content": f"({at:%Y-%m-%d %H:%M} UTC) {said}"}


#: The shadow scope's default user: healthd's own.
DEFAULT_USER = "healthd-shadow"


def scope_ids(options: Mapping[str, Any], kind: str) -> tuple[str, str | None, str | None]:
    """The shadow scope's ``user_id``, ``agent_id`` and ``run_id`` as Mem0 keeps them:
    trimmed, as Mem0 trims every entity id it is given (``_validate_and_trim_entity_id``),
    so what healthd reads and forgets of the scope is what Mem0 wrote (an ``agent_id``/
    ``run_id`` left out, empty or false is none; one of spaces is refused, as Mem0 refuses
    it): ``user_id`` not blank, and none a wildcard (Mem0's filters and deletes read ``*``
    as every user: a reset would empty the project)."""
    user_id = str(options.get("user_id", DEFAULT_USER)).strip()
    if not user_id:
        raise TargetError(f"{kind}: user_id is empty (the shadow user healthd owns)")
    ids: dict[str, str | None] = {"user_id": user_id}
    for name in ("agent_id", "run_id"):
        given = options.get(name)
        if given and not str(given).strip():  # Mem0 refuses it; unset would widen the scope
            raise TargetError(
                f"{kind}: {name} is blank ({given!r}); Mem0 refuses a blank id, and taken as "
                "unset it would widen the shadow to every memory of the user_id; name one or "
                "leave it out"
            )
        ids[name] = str(given).strip() if given else None
    for name, value in ids.items():
        if value is not None and "*" in value:
            raise TargetError(
                f"{kind}: {name} {value!r} holds '*', which Mem0 reads as every {name[:-3]} "
                "(a reset would delete theirs too); name the one healthd owns"
            )
    return user_id, ids["agent_id"], ids["run_id"]
