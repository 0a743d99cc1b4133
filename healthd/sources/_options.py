"""A source kind's options read by its pydantic model; a failure is one line naming the
option (``source 'x': field 'labels_typo': Extra inputs are not permitted``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from healthd._numbers import boolean_for_a_number
from healthd.errors import ConfigError, first_problem


def validate_options(model: type[BaseModel], name: str, options: Mapping[str, Any]) -> Any:
    flag = boolean_for_a_number(model, options)
    if flag is not None:
        value = str(options[flag]).lower()
        raise ConfigError(
            f"source {name!r}: field '{flag}': expected a number, got a boolean ({value})"
        )
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        loc, msg = first_problem(exc)
        where = f"field '{loc}': " if loc else ""
        raise ConfigError(f"source {name!r}: {where}{msg}") from None
