"""What the ``letta`` target reads from a Letta server's answers, checked where it arrives.

``letta-client`` builds its objects without validating them (Stainless models are
constructed, not validated), so a field of the wrong type would otherwise travel on: an
AttributeError out of a probe, a ``step_count`` of 10^30 counted one step at a time, or a
passage with no id dated by the server's clock instead of the event that wrote it. Each
shape here holds only the fields healthd uses, with the types Letta's OpenAPI schema gives
them (``letta_client/types``); any other field is ignored, as the SDK would.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from healthd.errors import MemoryAdapterError, quote

Id = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class _Shape(BaseModel):
    model_config = ConfigDict(from_attributes=True, strict=True, frozen=True)


class Agent(_Shape):
    id: Id
    name: str
    tags: list[str] | None = None


class AgentPage(_Shape):
    items: list[Agent]


class Created(_Shape):
    id: Id


class Passage(_Shape):
    """A passage of archival memory as listed or inserted; healthd needs its id to know
    which event wrote it."""

    id: Id


class Found(_Shape):
    """One result of an archival search (``PassageSearchResponse.Result``)."""

    id: Id
    content: str
    timestamp: str


class Search(_Shape):
    results: list[Found]


class Block(_Shape):
    label: str | None = None
    value: str


class BlockPage(_Shape):
    items: list[Block]


class Usage(_Shape):
    """``LettaResponse.Usage``: every count optional in the schema (None: not reported)."""

    step_count: Count | None = None
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None


class StopReason(_Shape):
    stop_reason: str


class Message(_Shape):
    """Any of a turn's messages; healthd reads only whether a tool call failed."""

    message_type: str | None = None
    status: object = None


class Turn(_Shape):
    messages: list[Message]
    stop_reason: StopReason | None = None
    usage: Usage | None = None


PASSAGES: TypeAdapter[list[Passage]] = TypeAdapter(list[Passage])
BLOCKS: TypeAdapter[list[Block]] = TypeAdapter(list[Block])

T = TypeVar("T")


def read(shape: type[T] | TypeAdapter[T], answer: Any, where: str) -> T:
    """``answer`` as ``shape``, or a MemoryAdapterError naming the first field that is not
    what Letta's schema says, with its value quoted (bounded however big it is)."""
    try:
        if isinstance(shape, TypeAdapter):
            return shape.validate_python(answer, from_attributes=True)
        return shape.model_validate(answer)  # type: ignore[attr-defined,no-any-return]
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        value = first.get("input")
        got = "missing" if first["type"] == "missing" else f"got {quote(_plain(value))}"
        said = f"field {field!r}" if field else "the answer"
        raise MemoryAdapterError(
            f"{where}: {said} is not what Letta's schema says ({first['msg']}; {got})"
        ) from None


def _plain(value: Any) -> Any:
    """An SDK object as its fields, for a message; anything else as it is."""
    fields = getattr(value, "__dict__", None)
    return fields if isinstance(value, BaseModel) and fields is not None else value
