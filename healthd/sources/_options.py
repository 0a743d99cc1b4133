"""A source kind's options read by its pydantic model; a failure is one line naming the
option (``source 'x': labels_typo: Extra inputs are not permitted``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from healthd.errors import ConfigError


def validate_options(model: type[BaseModel], name: str, options: Mapping[str, Any]) -> Any:
    try:
        return model.model_validate(dict(options))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "options"
        raise ConfigError(f"source {name!r}: {where}: {first['msg']}") from None
