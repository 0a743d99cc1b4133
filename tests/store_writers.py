"""Another application's data in the same Mem0 or Graphiti store, written and read through
the library itself, outside healthd's shadow scope."""

from __future__ import annotations

import asyncio
import os
import warnings
from datetime import UTC, datetime
from pathlib import Path

FOREIGN_TEXT = "billing is owned by @carol"
FOREIGN_METADATA = {
    "healthd_event": "prod-1",
    "subject": "billing",
    "predicate": "owner",
    "value": "@carol",
    "domain": "ownership",
    "written_at": "2026-01-01T00:00:00+00:00",
    "validated_at": "2026-01-01T00:00:00+00:00",
}


def _mem0(path: Path):
    from mem0 import Memory

    from healthd.memory._embedder_switch import embedder_from_options
    from healthd.memory._mem0_library import import_mem0
    from healthd.memory.mem0 import mem0_config

    import_mem0()  # the embedder a mem0 target has by default, so the vectors fit
    return Memory.from_config(mem0_config(str(path), embedder_from_options({})))


def _close_mem0(memory) -> None:
    memory.vector_store.client.close()
    memory.db.close()


def mem0_foreign_write(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    memory = _mem0(path)
    memory.add(FOREIGN_TEXT, user_id="alice", infer=False, metadata=dict(FOREIGN_METADATA))
    _close_mem0(memory)


def mem0_foreign_read(path: Path) -> list[str]:
    memory = _mem0(path)
    try:
        rows = memory.get_all(filters={"user_id": "alice"})["results"]
        return sorted(row["memory"] for row in rows)
    finally:
        _close_mem0(memory)


def _driver(path: Path):
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    from healthd.memory.graphiti import database_path

    path.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return KuzuDriver(db=database_path(str(path)))


def _close_driver(driver) -> None:
    driver.client.close()
    driver.db.close()


def graphiti_foreign_write(path: Path, group: str = "production") -> None:
    from graphiti_core.edges import EntityEdge
    from graphiti_core.nodes import EntityNode

    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    driver = _driver(path)
    at = datetime(2026, 1, 1, tzinfo=UTC)

    async def write() -> None:
        billing = EntityNode(name="billing", group_id=group, labels=["Entity"], created_at=at)
        carol = EntityNode(name="@carol", group_id=group, labels=["Entity"], created_at=at)
        for node in (billing, carol):
            await node.save(driver)
        edge = EntityEdge(
            source_node_uuid=billing.uuid,
            target_node_uuid=carol.uuid,
            name="owner",
            fact=FOREIGN_TEXT,
            group_id=group,
            created_at=at,
            valid_at=at,
            episodes=[],
            attributes=dict(FOREIGN_METADATA),
        )
        await edge.save(driver)

    asyncio.run(write())
    _close_driver(driver)


def graphiti_foreign_read(path: Path, group: str = "production") -> list[str]:
    from graphiti_core.edges import EntityEdge

    driver = _driver(path)
    try:
        edges = asyncio.run(EntityEdge.get_by_group_ids(driver, [group]))
        return sorted(edge.fact for edge in edges)
    finally:
        _close_driver(driver)
