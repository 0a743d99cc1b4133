"""What the ``letta`` target reads from a Letta server's answers (:mod:`healthd.memory._answers`),
with the types Letta's OpenAPI schema gives them (``letta_client/types``). Unchecked, a
field of the wrong type was an AttributeError out of a probe, a ``step_count`` of 10^30
counted one step at a time, or a passage with no id dated by the server's clock."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter

from healthd.memory._answers import Count, Id, Shape, check


class Agent(Shape):
    id: Id
    name: str
    tags: list[str] | None = None


class AgentPage(Shape):
    items: list[Agent]


class Created(Shape):
    id: Id


class Passage(Shape):
    """A passage of archival memory as listed or inserted; healthd needs its id to know
    which event wrote it."""

    id: Id


class Found(Shape):
    """One result of an archival search (``PassageSearchResponse.Result``)."""

    id: Id
    content: str
    timestamp: str


class Search(Shape):
    results: list[Found]


class Block(Shape):
    label: str | None = None
    value: str


class BlockPage(Shape):
    items: list[Block]


class Usage(Shape):
    """``LettaResponse.Usage``: every count optional in the schema (None: not reported)."""

    step_count: Count | None = None
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None


class StopReason(Shape):
    stop_reason: str


class Message(Shape):
    """Any of a turn's messages; healthd reads only whether a tool call failed."""

    message_type: str | None = None
    status: object = None


class Turn(Shape):
    messages: list[Message]
    stop_reason: StopReason | None = None
    usage: Usage | None = None


PASSAGES: TypeAdapter[list[Passage]] = TypeAdapter(list[Passage])
BLOCKS: TypeAdapter[list[Block]] = TypeAdapter(list[Block])

T = TypeVar("T")


def read(shape: type[T] | TypeAdapter[T], answer: Any, where: str) -> T:
    return check(shape, answer, where, "Letta's schema")
