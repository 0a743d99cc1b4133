"""The repository sources' options as pydantic models (`adr`, `backstage`, and the `git`
kind's options that its plain reading does not take: see :func:`healthd.sources.git.git_options`),
read with :func:`healthd.sources._options.validate_options`.

Apart from :mod:`healthd.sources._gitlog` so that a `git` source with plain options (the
usual case) is built and pulled without importing pydantic (a third of a one-shot pull's
start-up).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from healthd.durations import parse_duration
from healthd.sources._git_config import (
    DEFAULT_EXCLUDED_DIRS,
    check_adr_dirs,
    check_root_subject,
    check_service_roots,
)
from healthd.sources._gitlog import check_where, since_datetime


class RepoOptions(BaseModel):
    """Options shared by the `git` and `adr` kinds (see their docstrings)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    path: str | None = None
    url: str | None = None
    cache_dir: str | None = None
    branch: str | None = None
    first_parent: bool = True
    since: datetime | date | None = None
    token_env: str | None = None
    token_user: str = "x-access-token"
    revalidate_interval: timedelta = timedelta(days=1)
    revalidate_clock: Literal["wall", "head"] = "wall"
    timeout_seconds: float = Field(120.0, gt=0, le=86400)  # clone or fetch from url
    # an http(s) remote that sends nothing for this long ends the clone or fetch at once
    stall_seconds: float = Field(30.0, gt=0, le=3600)

    @field_validator("revalidate_interval", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta:
        return parse_duration(value)

    @model_validator(mode="after")
    def _where(self) -> RepoOptions:
        check_where(self)
        return self

    def since_datetime(self) -> datetime | None:
        return since_datetime(self.since)


class GitOptions(RepoOptions):
    """The `git` kind's options (see :mod:`healthd.sources.git`), read by pydantic when the
    plain reading (:func:`healthd.sources.git.git_options`) does not take them: a value
    to convert (a date string, a number as text, ...) or one that is wrong."""

    adr_dirs: list[str] = []
    service_roots: list[str] = []
    exclude: list[str] = []
    exclude_dirs: list[str] = list(DEFAULT_EXCLUDED_DIRS)
    root_subject: str = "."

    @field_validator("service_roots")
    @classmethod
    def _roots(cls, value: list[str]) -> list[str]:
        return check_service_roots(value)

    @field_validator("adr_dirs")
    @classmethod
    def _adr_dirs(cls, value: list[str]) -> list[str]:
        return check_adr_dirs(value)

    @field_validator("root_subject")
    @classmethod
    def _root_subject(cls, value: str) -> str:
        return check_root_subject(value)
