"""Numbers in a configuration: TOML's ``true`` is no number.

pydantic reads a boolean as 1 or 0 where a number is expected, so ``port = true`` would
listen on port 1 and ``forgetting_window = true`` would wait one change point. The types
here refuse a boolean and take what pydantic takes otherwise (a number, or its text from an
environment variable)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, get_args

from pydantic import BaseModel, BeforeValidator


def not_a_boolean(value: Any) -> Any:
    """``value`` unchanged unless it is a boolean, which is refused naming what was given."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got a boolean ({str(value).lower()})")
    return value


#: A whole number of a configuration (a port, a count, a window).
WholeNumber = Annotated[int, BeforeValidator(not_a_boolean)]
#: A real number of a configuration (a price).
RealNumber = Annotated[float, BeforeValidator(not_a_boolean)]


def boolean_for_a_number(model: type[BaseModel], options: Mapping[str, Any]) -> str | None:
    """The first option of ``options`` that is a boolean where ``model`` reads a number (an
    ``int`` or ``float`` field that takes no boolean), or None: pydantic would read it as 1."""
    for key, value in options.items():
        field = model.model_fields.get(key)
        if isinstance(value, bool) and field is not None and _number_only(field.annotation):
            return key
    return None


def _number_only(annotation: Any) -> bool:
    kinds = set(get_args(annotation)) or {annotation}
    return bool(kinds & {int, float}) and bool not in kinds
