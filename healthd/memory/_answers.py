"""An answer from a memory product's API, checked where it arrives against the fields the
product's own schema gives the ones healthd reads.

Neither ``letta-client`` (Stainless models, constructed unvalidated) nor botocore (parsed
by the service model's shapes, never type-checked) refuses a field of the wrong type: it
would travel into healthd and be an exception far from the call, a loop bounded by a
number nobody checked, or a record read wrongly without a word. A shape here holds only
the fields healthd uses; any other field is ignored, as the SDKs ignore them.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from healthd.errors import MemoryAdapterError, quote

Id = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class Shape(BaseModel):
    """Strict types (no ``"3"`` for 3), read from mappings or from SDK objects' attributes."""

    model_config = ConfigDict(from_attributes=True, strict=True, frozen=True)


T = TypeVar("T")


def check(shape: type[T] | TypeAdapter[T], answer: Any, where: str, schema: str) -> T:
    """``answer`` as ``shape``, or a MemoryAdapterError naming the first field that is not
    what ``schema`` says, with its value quoted (bounded however big it is)."""
    try:
        if isinstance(shape, TypeAdapter):
            return shape.validate_python(answer, from_attributes=True)
        return shape.model_validate(answer)  # type: ignore[attr-defined,no-any-return]
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"])
        got = "missing" if first["type"] == "missing" else f"got {quote(_plain(first['input']))}"
        said = f"field {field!r}" if field else "the answer"
        raise MemoryAdapterError(
            f"{where}: {said} is not what {schema} says ({first['msg']}; {got})"
        ) from None


def _plain(value: Any) -> Any:
    """An SDK object as its fields, for a message; anything else as it is."""
    fields = getattr(value, "__dict__", None)
    return fields if isinstance(value, BaseModel) and fields is not None else value
