"""Typed configuration: a TOML file plus ``HEALTHD_*`` environment overrides.

The file comes from ``--config FILE`` or ``HEALTHD_CONFIG``; every field can be overridden
by an environment variable named ``HEALTHD_`` + the field path joined with ``__``
(``HEALTHD_SERVER__PORT=9000``, ``HEALTHD_TARGETS__REFERENCE__TTL=off``). Unknown keys are
rejected at every level. :func:`load_settings` turns every problem into one
:class:`ConfigError` whose lines each name the field and the file.

Two layers of checking:

* the shape (types, unknown keys, durations, cron syntax, ``shadow = true``) by pydantic;
* the options of each source and target, by the source's or memory's own factory
  (:func:`healthd.sources.build_source`, :func:`healthd.memory.build_memory`), after the
  plugins named in ``plugins`` are imported so that they can register extra kinds.

With no file at all the configuration is the embedded default: the bundled example timeline
as a ``file`` source, replayed into the ``reference`` and ``naive`` memories every minute.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import subprocess
from collections.abc import Mapping
from datetime import date, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from healthd._numbers import WholeNumber
from healthd.durations import parse_duration
from healthd.errors import ConfigError, HealthdError, SourceError
from healthd.llm_budget import KEYS as BUDGET_KEYS
from healthd.llm_prices import LLMConfig
from healthd.model import MEASUREMENT_REVISION

CONFIG_ENV = "HEALTHD_CONFIG"
DEFAULT_SCHEDULE = "* * * * *"
#: A run's bound: well over a first replay of a million events (20–40 minutes)
DEFAULT_RUN_TIMEOUT = timedelta(hours=2)
DEFAULT_PORT = 9479


Duration = Annotated[timedelta, Field(json_schema_extra={"format": "duration"})]


def _example_timeline() -> str:
    from importlib import resources

    return str(resources.files("healthd") / "data" / "example_timeline.jsonl")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceConfig(BaseModel):
    """``[sources.NAME]``: ``kind`` plus the kind's own options, checked by its factory."""

    model_config = ConfigDict(extra="allow")
    kind: str

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class TargetConfig(BaseModel):
    """``[targets.NAME]``: ``kind``, ``shadow = true`` and the memory's switches."""

    model_config = ConfigDict(extra="allow")
    kind: str
    shadow: bool = False
    #: a baseline (a memory meant to fail, shown for comparison): no alert selects it;
    #: unset means by kind (``naive`` is one)
    baseline: bool | None = None

    @property
    def role(self) -> str:
        from healthd.memory import target_role

        return target_role(self.kind, self.baseline)

    @model_validator(mode="after")
    def _switches_are_values(self) -> TargetConfig:
        """A file path is a string (``path = true`` would name a file called "on"), and no
        switch is a TOML date or time, which no memory reads (an in-process memory's own
        tables and arrays, ``[targets.X.mem0.llm]``, are its to check)."""
        for key, value in (self.model_extra or {}).items():
            if key == "path" and not isinstance(value, str):
                raise ValueError(f"{key}: expected a string (a file path)")
            if isinstance(value, date | time):
                raise ValueError(f"{key}: expected a string, a number or a boolean, not a date")
        return self

    @model_validator(mode="after")
    def _must_be_shadow(self) -> TargetConfig:
        if self.shadow is not True:
            raise ValueError(
                "shadow: healthd writes only to shadow instances; declare the "
                "target `shadow = true` (a scope healthd owns and may reset)"
            )
        return self

    @property
    def options(self) -> dict[str, Any]:
        """The memory's switches, with the shadow declaration passed on to the adapter."""
        out: dict[str, Any] = {"shadow": "on"}
        for key, value in (self.model_extra or {}).items():
            out[key] = ("on" if value else "off") if isinstance(value, bool) else value
        return out


class ScheduleConfig(_Strict):
    cron: str = DEFAULT_SCHEDULE
    run_on_start: bool = True

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        from healthd.daemon.scheduler import parse_schedule

        parse_schedule(value)  # raises ValueError naming the problem
        return value.strip()


class StalenessConfig(_Strict):
    ownership: Duration = timedelta(days=30)
    tech: Duration = timedelta(days=90)
    decision: Duration = timedelta(days=180)
    requirement: Duration = timedelta(days=365)

    @field_validator("*", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta:
        return parse_duration(value)

    def windows(self) -> dict[str, timedelta]:
        return {
            "ownership": self.ownership,
            "tech": self.tech,
            "decision": self.decision,
            "requirement": self.requirement,
        }


class ServerConfig(_Strict):
    host: str = "0.0.0.0"
    port: WholeNumber = Field(DEFAULT_PORT, ge=0, le=65535)
    # /readyz turns 503 once every source has failed for longer than this
    sources_down_grace: Duration = timedelta(minutes=15)
    # TLS and basic auth, in the Prometheus exporter-toolkit's web configuration format
    web_config_file: str | None = None

    @field_validator("sources_down_grace", mode="before")
    @classmethod
    def _grace(cls, value: Any) -> timedelta:
        return parse_duration(value)

    @field_validator("host")
    @classmethod
    def _listen_address(cls, value: str) -> str:
        """What `healthd run` can bind, said before it fails at start: "" (every IPv4
        interface), an IP address (IPv6 bare or in brackets) or a host name."""
        return check_listen_host(value)


class LoggingConfig(_Strict):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"
    progress_interval: Duration = timedelta(seconds=10)

    @field_validator("progress_interval", mode="before")
    @classmethod
    def _interval(cls, value: Any) -> timedelta:
        interval = parse_duration(value)
        if interval <= timedelta(0):
            raise ValueError(
                "must be longer than 0 (0 would log a line for every event replayed; "
                "a long interval such as 1h logs rarely)"
            )
        return interval

    @field_validator("level", "format", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class TracingConfig(_Strict):
    otlp_endpoint: str | None = None
    #: unset: OTEL_SERVICE_NAME when set, else "healthd" (healthd.exporters.tracing)
    service_name: str | None = None

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        """An OTLP/HTTP endpoint is an http(s) URL; anything else would fail every export."""
        if not value:
            return None  # (empty: unset, as the exporter reads it)
        return check_otlp_endpoint(value)


_HOST_NAME = re.compile(
    r"(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
    r"(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?"
)


def check_listen_host(value: str) -> str:
    """``value`` if a listener can be bound to it, else ValueError saying why."""
    import ipaddress

    bare = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    if value == "" or _HOST_NAME.fullmatch(value):
        return value
    try:
        ipaddress.ip_address(bare)
        return value
    except ValueError:
        pass
    head, _, port = value.rpartition(":")
    if port.isdigit() and head and (_HOST_NAME.fullmatch(head) or head.startswith("[")):
        raise ValueError(f"{value!r}: the port goes in server.port, not in the host")
    raise ValueError(f"{value!r} is not an IP address or a host name")


def check_otlp_endpoint(value: str) -> str:
    """``value`` if it is an http(s) URL with a host and no query or fragment (the exporter
    appends ``/v1/traces`` to it), else ValueError saying why."""
    from urllib.parse import urlsplit

    try:
        url = urlsplit(value)
        url.port  # noqa: B018 (a port out of range or not a number raises)
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.hostname or any(c.isspace() for c in value):
        raise ValueError(f"must be an http(s) URL such as http://127.0.0.1:4318, got {value!r}")
    if url.query or url.fragment:
        raise ValueError(f"must have no query or fragment (/v1/traces is appended), got {value!r}")
    return value


def _default_sources() -> dict[str, SourceConfig]:
    return {"example": SourceConfig.model_validate({"kind": "file", "path": _example_timeline()})}


def _default_targets() -> dict[str, TargetConfig]:
    return {
        "reference": TargetConfig(kind="reference", shadow=True),
        "naive": TargetConfig(kind="naive", shadow=True),
    }


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="HEALTHD_",
        env_nested_delimiter="__",
        extra="forbid",
        toml_file=None,
        case_sensitive=False,
    )

    sources: dict[str, SourceConfig] = Field(default_factory=dict)
    example: bool = False
    targets: dict[str, TargetConfig] = Field(default_factory=_default_targets)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    staleness: StalenessConfig = Field(default_factory=StalenessConfig)
    forgetting_window: WholeNumber = Field(3, ge=1)
    checkpoint_events: WholeNumber = Field(1000, ge=1)
    warm_keys: WholeNumber = Field(10000, ge=1)
    max_future_skew: Duration = timedelta(days=1)
    # a run (pull, replays, state write) that takes longer ends as a failure
    run_timeout: Duration = DEFAULT_RUN_TIMEOUT
    mode: Literal["full", "incremental"] = "incremental"
    server: ServerConfig = Field(default_factory=ServerConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    tracing: TracingConfig = Field(default_factory=TracingConfig)
    state_path: str = "healthd-state/state.sqlite"
    probes: str | None = None
    reader: str = Field("default", min_length=1)  # how served text is read: `healthd --help`
    # where the team reads the runbook (HEALTHD_RUNBOOK_URL, as for alerts/generate.py): the
    # verdict's links on / go there; unset, to the runbook the daemon serves at /runbook
    runbook_url: str | None = Field(None, min_length=1)
    plugins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    llm: LLMConfig = Field(default_factory=LLMConfig)  # [llm.prices]: check-config --estimate

    @field_validator("state_path")
    @classmethod
    def _names_a_file(cls, value: str) -> str:
        """A blank path is no file: `run` would fail at start with "cannot open state
        file: Is a directory", after check-config said ok."""
        if not value.strip():
            raise ValueError(f"{value!r} names no file; give the state file's path")
        return value

    @field_validator("max_future_skew", mode="before")
    @classmethod
    def _skew(cls, value: Any) -> timedelta:
        return parse_duration(value)

    @field_validator("run_timeout", mode="before")
    @classmethod
    def _run_timeout(cls, value: Any) -> timedelta:
        duration = parse_duration(value)
        if duration <= timedelta(0):
            raise ValueError("must be longer than 0 (a run is bounded, never unbounded)")
        return duration

    @field_validator("runbook_url", mode="before")
    @classmethod
    def _runbook_url(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            if not value:
                return None  # HEALTHD_RUNBOOK_URL= in a template: unset, as generate.py reads it
            scheme = value.partition(":")[0].lower() if ":" in value.split("/")[0] else ""
            if scheme not in ("", "http", "https"):
                raise ValueError(
                    f"{value[:80]!r}: expected an http(s) address or a path, not a {scheme}: link"
                )
        return value

    @field_validator("plugins", mode="before")
    @classmethod
    def _split_plugins(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @field_validator("targets")
    @classmethod
    def _not_empty(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value:
            raise ValueError("at least one is needed")
        return value

    @field_validator("sources", "targets")
    @classmethod
    def _names_are_one_line(cls, value: dict[str, Any]) -> dict[str, Any]:
        """A name is shown in every log line, label and error: no control character (a
        newline would cut a line in two)."""
        for name in value:
            if not name.strip() or not name.isprintable():
                raise ValueError(f"{name!r}: a name is printable text (no newline, no tab)")
        return value

    @model_validator(mode="after")
    def _priced_targets_exist(self) -> Settings:
        prices = self.llm.prices
        for name in prices.by_target if prices is not None else ():
            if name not in self.targets:
                raise ValueError(f"llm.prices.by_target.{name}: no target {name!r} is configured")
        return self

    @model_validator(mode="after")
    def _adr_dirs_are_no_modules(self) -> Settings:
        """A `git` source takes no module from the ``dir`` an `adr` source on the same
        repository reads (unless it names its own ``adr_dirs``)."""
        for source in self.sources.values():
            extra = source.model_extra
            if source.kind != "git" or extra is None or "adr_dirs" in extra:
                continue
            where = (extra.get("path"), extra.get("url"))
            dirs = [
                other.options["dir"]
                for other in self.sources.values()
                if other.kind == "adr"
                and isinstance(other.options.get("dir"), str)
                and (other.options.get("path"), other.options.get("url")) == where
            ]
            if dirs:
                extra["adr_dirs"] = dirs
        return self

    @model_validator(mode="after")
    def _sources_or_example(self) -> Settings:
        # A configuration without sources would otherwise measure the bundled example and
        # publish plausible metrics of a fictional project: the example is asked for.
        if self.example:
            if "example" in self.sources:
                raise ValueError(
                    "example = true adds a source named 'example'; one is already configured"
                )
            self.sources = {**_default_sources(), **self.sources}
        if not self.sources:
            raise ValueError(
                "sources: none configured; add a [sources.NAME] table, or set example = true "
                "to replay the bundled example timeline"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return _layers(settings_cls, init_settings)

    # -- derived --------------------------------------------------------------------------

    @property
    def state_dir(self) -> Path:
        return Path(self.state_path).resolve().parent


def _layers(
    settings_cls: type[BaseSettings],
    init_settings: PydanticBaseSettingsSource,
    toml: type[_TomlRelativeToFile] | None = None,
) -> tuple[PydanticBaseSettingsSource, ...]:
    """Environment beats the file; init arguments (tests) beat both. Without a file the
    built-in source and target tables are the lowest layer, so that a variable such as
    HEALTHD_TARGETS__REFERENCE__TTL merges into them instead of replacing them."""
    toml_file = settings_cls.model_config.get("toml_file")
    lowest: PydanticBaseSettingsSource = (
        _BuiltinTables(settings_cls)
        if toml_file is None
        else (toml or _TomlRelativeToFile)(settings_cls, str(toml_file))
    )
    return (init_settings, _Env(settings_cls, lowest()), lowest)


class _TomlRelativeToFile(TomlConfigSettingsSource):
    """The TOML file, with its relative paths (``state_path``, ``probes``, a source's
    ``path`` and ``cache_dir``, a target's ``path``) resolved against the file's directory,
    not the working directory."""

    def __init__(self, settings_cls: type[BaseSettings], path: str) -> None:
        super().__init__(settings_cls)
        self._base = Path(path).resolve().parent

    def _resolve(self, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip() or value == ":memory:":
            return value  # (a blank path is no file: its key's check says so)
        if value.startswith("~"):
            return value
        if os.path.isabs(value):
            return value
        resolved = str(self._base / value)  # (a trailing "/" is said to be a directory: kept)
        return resolved + "/" if value.endswith("/") else resolved

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        if "targets" not in data:
            # a file without [targets] measures the built-in ones: a variable such as
            # HEALTHD_TARGETS__REFERENCE__TTL merges into them, as with no file at all
            data["targets"] = _BuiltinTables(self.settings_cls)()["targets"]
        for key in ("state_path", "probes"):
            if key in data:
                data[key] = self._resolve(data[key])
        server = data.get("server")
        if isinstance(server, dict) and "web_config_file" in server:
            server["web_config_file"] = self._resolve(server["web_config_file"])
        for section, keys in (("sources", ("path", "cache_dir")), ("targets", ("path",))):
            table = data.get(section)
            if not isinstance(table, dict):
                continue
            for entry in table.values():
                if isinstance(entry, dict):
                    for key in keys:
                        if key in entry:
                            entry[key] = self._resolve(entry[key])
        return data


class _BuiltinTables(PydanticBaseSettingsSource):
    """The default ``[sources]`` and ``[targets]`` tables as plain data, under everything."""

    def get_field_value(
        self, field: FieldInfo, field_name: str
    ) -> tuple[Any, str, bool]:  # pragma: no cover - not used
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return {  # no configuration file at all: the documented built-in default
            "sources": {n: c.model_dump() for n, c in _default_sources().items()},
            "targets": {n: c.model_dump() for n, c in _default_targets().items()},
        }


class _Env(PydanticBaseSettingsSource):
    """``HEALTHD_*`` variables, nested with ``__``; the few variables that are not settings
    (``HEALTHD_CONFIG``) are left out, any other unknown one is rejected. Names are read
    in any case; a source or target the layer below names (``[targets.Team]``) is that
    table, whatever the case of the variable (``HEALTHD_TARGETS__TEAM__TTL``)."""

    _IGNORED = {CONFIG_ENV.lower(), "healthd_agentcore_memory_id"}  # the live AgentCore test's

    def __init__(self, settings_cls: type[BaseSettings], below: Mapping[str, Any]) -> None:
        super().__init__(settings_cls)
        self._named = {
            section: {name.lower(): name for name in table}
            for section in ("sources", "targets")
            if isinstance(table := below.get(section), dict)
        }
        self._values = self._collect()

    def _collect(self) -> dict[str, Any]:
        """The variables as one nested table: a table given whole (``HEALTHD_SERVER='{...}'``)
        and one of its keys (``HEALTHD_SERVER__HOST``) are merged, whatever their order in
        the environment; a key under a value that is no table is a ConfigError."""
        out: dict[str, Any] = {}
        given: dict[tuple[str, ...], str] = {}  # where each value came from
        found = []
        for name, raw in os.environ.items():
            lower = name.lower()
            if not lower.startswith("healthd_") or lower in self._IGNORED:
                continue
            path = lower[len("healthd_") :].split("__")
            if not all(path):
                continue
            if len(path) > 1 and path[0] in self._named:
                path[1] = self._named[path[0]].get(path[1], path[1])
            found.append((path, name, raw))
        for path, name, raw in sorted(found, key=lambda item: (len(item[0]), item[1])):
            node = out
            for depth, part in enumerate(path[:-1]):
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    setter = next(
                        given[prefix]
                        for prefix in (tuple(path[:k]) for k in range(depth + 1, 0, -1))
                        if prefix in given
                    )
                    raise ConfigError(
                        f"{name}: {setter} makes {'.'.join(path[: depth + 1])} a value, not a "
                        "table of keys"
                    )
                node = child
            value = _env_value(raw)
            held = node.get(path[-1])
            if isinstance(held, dict) and isinstance(value, dict):
                held.update(value)  # (the deeper variables came later: they are kept)
                continue
            node[path[-1]] = value
            given[tuple(path)] = name
        return out

    def get_field_value(
        self, field: Any, field_name: str
    ) -> tuple[Any, str, bool]:  # pragma: no cover - not used
        return self._values.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return self._values


def _env_value(raw: str) -> Any:
    """JSON when it parses as a JSON list or object, else the string (pydantic coerces)."""
    text = raw.strip()
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return raw


# -- loading ----------------------------------------------------------------------------------


def config_path(explicit: str | None) -> str | None:
    return explicit or os.environ.get(CONFIG_ENV) or None


def load_settings(path: str | None, *, deep: bool = True, reach: bool = False) -> Settings:
    """Load and check the configuration; every problem ends up in one ConfigError whose
    lines each read ``FILE: field.path: message``. ``reach`` (``check-config``) also checks
    each source's inputs as a run would find them; a daemon starts without, since a source
    that is down is a metric, not a reason to refuse to start."""
    origin = path or "(built-in defaults)"
    document = _read_document(path)
    bound = type(
        "Settings",
        (Settings,),
        {"model_config": SettingsConfigDict(**{**Settings.model_config, "toml_file": path})},
    )
    try:
        settings = bound()
    except ValidationError as exc:
        raise ConfigError("\n".join(_format_errors(exc, origin, document))) from None
    from healthd.logging import register_env_secrets

    # every value a *_env key names is redacted from every text from here on, before a
    # source or a target has read it (and whatever else names it, a plugin included)
    register_env_secrets(settings.model_dump(mode="python"))
    if deep:
        problems = check_settings(settings, reach=reach)
        if problems:
            raise ConfigError(
                "\n".join(f"{_problem_origin(p, origin, document)}: {p}" for p in problems)
            )
    settings.__dict__["origin"] = origin
    assert isinstance(settings, Settings)
    return settings


def _read_document(path: str | None) -> dict[str, Any]:
    """The configuration file as TOML data ({} for none), or a ConfigError saying why not."""
    if path is None:
        return {}
    if not os.path.lexists(path):
        raise ConfigError(f"{path}: cannot read configuration file: no such file")
    try:
        import tomllib

        from healthd._files import open_regular

        with open_regular(path) as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration file: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None


_TABLE_HEADER = re.compile(r"\s*\[")
_SERVER_HEADER = re.compile(r"\s*\[\s*server\s*\]\s*(?:#.*)?")


_NAMES_SERVER = re.compile(r"\s*\[*\s*[\"']?server\b")


def _server_section(text: str) -> dict[str, Any]:
    """The ``[server]`` table of a file that does not parse as a whole: its header's lines
    up to the next table's header, parsed alone ({} when no line names server: the
    defaults, as for a file that parses without one). A ValueError when they do not parse,
    or when the file has two ``[server]`` headers or names server elsewhere (``[server``,
    ``server.port = ...``): the mistake may be in what the daemon listens with."""
    import tomllib

    kept: list[str] = []
    inside, headers = False, 0
    for line in text.splitlines():
        if _TABLE_HEADER.match(line):
            inside = _SERVER_HEADER.fullmatch(line) is not None
            headers += inside
        if not inside and _NAMES_SERVER.match(line):
            raise ValueError("server is named outside its [server] table")
        if inside:
            kept.append(line)
    if headers > 1:
        raise ValueError("more than one [server] table")
    # (none: no line names server, so the daemon listens where the defaults and the
    # variables say, as it does for a file that parses without [server])
    return tomllib.loads("\n".join(kept))


class _ServerTomlRelativeToFile(_TomlRelativeToFile):
    """The file for `healthd healthcheck`: one that is not valid TOML elsewhere than in its
    ``[server]`` table gives that table (a reload refused the file, the daemon kept its
    last good configuration and listens where it did)."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            return super()._read_file(file_path)
        except ValueError:
            return _server_section(Path(file_path).read_text(encoding="utf-8"))


class _ServerOnly(BaseSettings):
    """The ``[server]`` table alone, read from the same layers as :class:`Settings` (file,
    environment, paths relative to the file); every other key is left unread."""

    model_config = SettingsConfigDict(**{**Settings.model_config, "extra": "ignore"})
    server: ServerConfig = Field(default_factory=ServerConfig)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return _layers(settings_cls, init_settings, toml=_ServerTomlRelativeToFile)


def load_server_settings(path: str | None) -> ServerConfig:
    """Only ``[server]`` of the configuration (with its ``HEALTHD_SERVER*`` overrides), as
    `healthd healthcheck` asks the running daemon: a mistake elsewhere in the file, which a
    reload refused while the daemon kept its last good configuration, is no reason to call
    it unhealthy."""
    origin = path or "(built-in defaults)"
    try:
        document = _read_document(path)
    except ConfigError as exc:
        if path is None or "not valid TOML" not in str(exc):
            raise
        try:  # a mistake elsewhere than in [server]: what a reload refused
            document = _server_section(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            raise exc from None
    bound = type(
        "ServerOnly",
        (_ServerOnly,),
        {"model_config": SettingsConfigDict(**{**_ServerOnly.model_config, "toml_file": path})},
    )
    try:
        server = bound().server
    except ValidationError as exc:
        raise ConfigError("\n".join(_format_errors(exc, origin, document))) from None
    assert isinstance(server, ServerConfig)
    return server


_TARGET_OPTION = re.compile(r"([A-Za-z_][\w-]*): ")


def _format_errors(exc: ValidationError, origin: str, document: dict[str, Any]) -> list[str]:
    lines = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"])
        msg = error["msg"]
        if error["type"] == "extra_forbidden":
            parts = [str(part) for part in error["loc"]]
            if _names_a_secret(parts[-1]):
                where = _origin_of(parts, origin, document)
                secret = _could_be_a_secret(
                    error.get("input"), from_environment=where.startswith("environment ")
                )
                table = ".".join(parts[:-1])
                lines.append(_unknown_secret_key(where, table, parts[-1], "key", secret))
                continue
            msg = "unknown key (not a setting healthd knows)"
        elif msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        option = _TARGET_OPTION.match(msg) if len(error["loc"]) == 2 else None
        if option is not None and error["loc"][0] == "targets":  # raised by a target's model
            loc, msg = f"{loc}.{option.group(1)}", msg[option.end() :]
        where = _origin_of(loc.split(".") if loc else [], origin, document)
        lines.append(f"{where}: {loc}: {msg}" if loc else f"{where}: {msg}")
    return lines


_PROBLEM_AT = re.compile(r"([A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*): ")


def _problem_origin(problem: str, origin: str, document: dict[str, Any]) -> str:
    """Where a problem a source's or target's factory found (``sources.x.path: ...``) was
    set: the file, or the environment variable that set or added it."""
    found = _PROBLEM_AT.match(problem)
    return _origin_of(found.group(1).split(".") if found else [], origin, document)


def _origin_of(parts: list[str], origin: str, document: dict[str, Any]) -> str:
    """Where the value at ``parts`` came from: the environment variable that set it or a
    table above it (environment wins over the file); else the variables under the deepest
    table on the way that the file does not have (a misspelt variable's key or table); else
    the file, with the variables that add to the same table beside it."""
    if not parts:
        return origin
    variables = {key.upper(): key for key in os.environ if key.upper().startswith("HEALTHD_")}
    for end in range(len(parts), 0, -1):
        key = variables.get("HEALTHD_" + "__".join(parts[:end]).upper())
        if key is not None:
            return f"environment {key}"

    def under(end: int) -> list[str]:
        below = "HEALTHD_" + "__".join(parts[:end]).upper() + "__"
        return sorted(key for name, key in variables.items() if name.startswith(below))

    held: Any = document
    for end, part in enumerate(parts, 1):
        if not isinstance(held, dict) or part not in held:
            found = next((u for d in range(len(parts), end - 1, -1) if (u := under(d))), None)
            return "environment " + ", ".join(found) if found else origin
        held = held[part]
    beside = under(len(parts))
    return f"{origin} (with environment {', '.join(beside)})" if beside else origin


def import_plugins(names: list[str]) -> list[str]:
    """Import plugin modules (they register extra source and memory kinds)."""
    problems = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            problems.append(f"plugins: cannot import {name!r}: {type(exc).__name__}: {exc}")
    return problems


def check_settings(settings: Settings, *, reach: bool = False) -> list[str]:
    """What the factories say about each source's and target's options."""
    from healthd.memory import TargetSpec, build_memory, memory_kinds
    from healthd.probes import load_probe_file
    from healthd.sources import build_source

    problems = import_plugins(settings.plugins)
    for name, source in settings.sources.items():
        try:
            build_source(source.kind, name, source.options)
        except HealthdError as exc:
            message = _strip_prefix(str(exc), name, "source")
            problems.append(_at_option(f"sources.{name}", message, source.options))
            continue
        except Exception as exc:
            problems.append(f"sources.{name}: {type(exc).__name__}: {exc}")
            continue
        if reach:
            problems.extend(
                f"sources.{name}.{p}"
                if p.startswith(("path: ", "branch: "))
                else f"sources.{name}: {p}"
                for p in _source_reachability(source)
            )
    kinds = memory_kinds()
    for name, target in settings.targets.items():
        if target.kind not in kinds:
            problems.append(
                f"targets.{name}.kind: unknown kind {target.kind!r}; known kinds: "
                f"{', '.join(kinds)}"
            )
            continue
        options = dict(target.options)
        if "path" in options:
            options["path"] = ":memory:"  # checking must not create the shadow file
        try:
            build_memory(TargetSpec(target.kind, options, name)).close()
        except HealthdError as exc:
            message = _strip_prefix(str(exc), name, "target")
            problems.append(_at_option(f"targets.{name}", message, target.options))
        except Exception as exc:
            problems.append(f"targets.{name}: {type(exc).__name__}: {exc}")
    problems.extend(_shared_shadows(settings))
    if not settings.tracing.otlp_endpoint:
        from healthd.exporters.tracing import ENDPOINT_ENV, TRACES_ENDPOINT_ENV

        for variable in (TRACES_ENDPOINT_ENV, ENDPOINT_ENV):  # (traces_endpoint's order)
            if os.environ.get(variable):
                try:
                    check_otlp_endpoint(os.environ[variable])
                except ValueError as exc:
                    problems.append(f"environment {variable}: {exc}")
                break
    if settings.server.web_config_file:
        from healthd.daemon.webconfig import load_web_config

        try:
            load_web_config(settings.server.web_config_file)
        except HealthdError as exc:
            problems.append(f"server.web_config_file: {exc}")
    try:
        from healthd.reading import build_reader

        build_reader(settings.reader)
    except HealthdError as exc:
        problems.append(f"reader: {exc}")
    if reach:
        from healthd.daemon.state import state_path_problem

        problem = state_path_problem(settings.state_path)
        if problem:
            problems.append(f"state_path: {settings.state_path}: {problem}")
        problems.extend(_shadow_path_problems(settings))
    if settings.probes:
        try:
            load_probe_file(settings.probes)
        except HealthdError as exc:
            problems.append(f"probes: {exc}")
    return problems


def _shadow_path_problems(settings: Settings) -> list[str]:
    """A reference target's own shadow file (``path``) that a run could not open or create,
    found without writing: each run would fail on it."""
    from healthd.daemon.state import file_path_problem

    problems = []
    for name, target in settings.targets.items():
        path = target.options.get("path")
        if target.kind != "reference" or not isinstance(path, str) or path in ("", ":memory:"):
            continue  # (no file: the daemon keeps such a shadow in the run, is_persistent)
        problem = file_path_problem(path)  # (as the run opens it: "~" is not expanded)
        if problem:
            problems.append(f"targets.{name}.path: {_shown(path)}: {problem}")
    return problems


def _source_reachability(source: SourceConfig) -> list[str]:
    """What a run would find wrong with a source's inputs, checked without writing: a
    token variable that is not set, a file, checkout or ADR directory that is not there."""
    options = source.options
    problems = []
    for key in ("token_env", "user_env"):
        variable = options.get(key)
        if variable and not os.environ.get(str(variable)):
            problems.append(f"environment variable {str(variable)!r} ({key}) is not set")
    path = options.get("path")
    if not isinstance(path, str):
        return problems
    where = os.path.expanduser(path)
    if source.kind == "file":
        if not os.path.isfile(where):
            problems.append(f"path: {_shown(path)} does not exist or is not a file")
        return problems
    if source.kind not in ("git", "adr", "backstage"):
        return problems
    if not os.path.isdir(where):
        problems.append(f"path: {_shown(path)} does not exist or is not a directory")
        return problems
    git = ["git", "-C", where]
    try:
        inside = subprocess.run(
            [*git, "rev-parse", "--git-dir"], capture_output=True, timeout=30, check=False
        )
        if inside.returncode != 0:
            problems.append(f"path: {_shown(path)} is not a git repository")
            return problems
        branch = options.get("branch")
        if isinstance(branch, str) and branch:
            from healthd.sources._gitrepo import Repo

            if Repo(where).rev_parse(branch) is None:  # (as the pull resolves it)
                problems.append(f"branch: {branch!r} not found in {_shown(path)}")
                return problems
        if source.kind == "adr":
            from healthd.sources._adrlayout import records_problem

            branch = options.get("branch")
            directory = options.get("dir")
            problem = records_problem(
                where,
                str(directory).strip().strip("/") if directory else None,
                str(branch) if branch else None,
            )
            if problem:
                problems.append(f"path: {path}: {problem}")
    except (OSError, subprocess.TimeoutExpired, SourceError) as exc:
        problems.append(f"path: cannot run git on {path}: {exc}")
    return problems


#: What the longest file name made from a shadow's adds to it: a corrupt one moved aside
#: with its write-ahead log, ``.corrupt-20261206T120000000000Z-wal``.
_ASIDE_SUFFIX_BYTES = len(".corrupt-20261206T120000000000Z-wal")
_NAME_MAX = 255  # bytes in one file name (Linux's NAME_MAX, and most file systems')


def shadow_path(state_path: str, target: str) -> str:
    """Where the daemon keeps a target's persistent shadow: beside the state file."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in target)
    return os.path.join(str(Path(state_path).resolve().parent), "shadows", f"{safe}.sqlite")


def _shared_shadows(settings: Settings) -> list[str]:
    """Two reference targets writing one namespace of one shadow file would corrupt each
    other's results (``x/y`` and ``x_y`` map to the same file name)."""
    from healthd.memory.reference import DEFAULT_NAMESPACE

    owners: dict[tuple[str, str], str] = {}
    problems = []
    for name, target in settings.targets.items():
        if target.kind != "reference":
            continue
        options = target.options
        path = str(options.get("path") or shadow_path(settings.state_path, name))
        if path == ":memory:":
            continue
        if (
            not options.get("path")
            and (size := len(os.path.basename(path).encode()) + _ASIDE_SUFFIX_BYTES) > _NAME_MAX
        ):
            problems.append(
                f"targets.{name}: the name is too long for the shadow's file name beside the "
                f"state file ({size} bytes with the suffixes healthd adds, over {_NAME_MAX}); "
                "shorten it or give the target a path"
            )
            continue
        if _same_file(path, settings.state_path):
            problems.append(
                f"targets.{name}.path: is the state file ({settings.state_path}); give the "
                "shadow a file of its own, or leave path out for one beside the state file"
            )
            continue
        # the file itself, however named: a link, a linked directory, a relative path
        key = (os.path.realpath(path), str(options.get("namespace", DEFAULT_NAMESPACE)))
        if key in owners:
            problems.append(
                f"targets.{name}: shares its shadow ({key[0]}, namespace {key[1]!r}) with "
                f"target {owners[key]!r}; rename one or give it its own path or namespace"
            )
        else:
            owners[key] = name
    return problems


def _same_file(path: str, other: str) -> bool:
    """Whether ``path`` and ``other`` name one file (through a link too), existing or not."""
    if other == ":memory:":
        return False
    if os.path.realpath(path) == os.path.realpath(other):
        return True
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


# A factory's "field 'OPT': " (sources) or "switch OPT: " / "switch OPT=VALUE: " (targets,
# worded for the command line's --target kind:OPT=VALUE)
_OPTION = re.compile(r"field '([^'\n]+)': |switch ([\w.-]+)(?:=([^:\n]*))?: ")


def _at_option(where: str, message: str, options: Mapping[str, Any] | None = None) -> str:
    """A factory's problem with one option as the rest of the file's problems are written:
    ``sources.repo.brnach: Extra inputs are not permitted``, ``targets.ref.ttl: 'soon':
    expected a duration``. ``options``: the table's, to tell a secret from a number."""
    found = _OPTION.match(message)
    if found is None:
        return f"{where}: {message}"
    option = found.group(1) or found.group(2)
    if message[found.end() :] == "Extra inputs are not permitted" and _names_a_secret(option):
        secret = _could_be_a_secret((options or {}).get(option))
        return _unknown_secret_key("", where, option, "option", secret)
    value = f"{found.group(3)}: " if found.group(3) else ""
    return f"{where}.{option}: {value}{message[found.end() :]}"


def _names_a_secret(key: str) -> bool:
    """Whether a key reads as a secret's (``token``, ``password``), not a variable's name."""
    from healthd.logging import ENV_SUFFIX, secret_key

    return secret_key(key) and not key.lower().endswith(ENV_SUFFIX)


def _could_be_a_secret(value: Any, *, from_environment: bool = False) -> bool:
    """Text is; a number, a switch or a table under a secret-sounding key is not. A
    variable's value is always text: one that reads as a number or a switch is neither."""
    if not isinstance(value, str) or not value:
        return False
    if from_environment:
        text = value.strip().lower()
        if text in ("true", "false"):
            return False
        try:
            float(text)
        except ValueError:
            return True
        return False
    return True


def _unknown_secret_key(origin: str, table: str, key: str, what: str, secret: bool) -> str:
    """An unknown key that names a secret, said so that redaction keeps the line readable:
    ``token: MESSAGE`` reads as a credential and its first word would be blanked, so the
    key is quoted in the sentence (its value is never part of it)."""
    line = f"unknown {what} {key!r}" + (
        "; a secret is never written in the configuration: where one is needed, a key "
        "ending in _env (such as token_env) names the environment variable that holds it"
        if secret
        else f" (not a{'n option' if what == 'option' else ' setting'} healthd knows)"
    )
    if origin.startswith("environment "):  # (HEALTHD_X__TOKEN: would read as a credential)
        return f"{origin} sets {line.replace(repr(key), repr(f'{table}.{key}'.lstrip('.')), 1)}"
    located = f"{table}: {line}" if table else line
    return f"{origin}: {located}" if origin else located


def _strip_prefix(message: str, name: str, what: str) -> str:
    prefix = f"{what} {name!r}: "
    return message[len(prefix) :] if message.startswith(prefix) else message


def target_fingerprint(
    settings: Settings, name: str, options: dict[str, Any], probe_config: str, reader: str = ""
) -> str:
    """What a target's shadow depends on besides the events: when this changes, the shadow
    is reset and everything is replayed. ``reader``: the reader's label, since what was
    read of the answers kept is the reader's."""
    target = settings.targets[name]
    doc = {
        "kind": target.kind,
        # a budget only stops a run early: changing it replays nothing again
        "options": {k: str(v) for k, v in sorted(options.items()) if k not in BUDGET_KEYS},
        "windows": {d: w.total_seconds() for d, w in settings.staleness.windows().items()},
        "forgetting_window": settings.forgetting_window,
        "mode": settings.mode,
        "probes": probe_config,
        "measurement": MEASUREMENT_REVISION,
        **({"reader": reader} if reader else {}),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


# -- the effective configuration --------------------------------------------------------------


def effective_toml(settings: Settings) -> str:
    """The configuration a run uses (file, ``HEALTHD_*`` overrides, defaults) as TOML that
    loads back, with secrets redacted (values under secret-looking keys, credentials in
    URLs); ``*_env`` keys name variables, not secrets, and are shown."""
    from healthd.logging import redact

    data = settings.model_dump(mode="python")

    def clean(value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: clean(v, str(k)) for k, v in value.items() if v is not None}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, timedelta):
            return duration_text(value)
        if key is not None and key.endswith("_env"):
            return value
        return redact(value, key)

    data = clean(data)
    if data.get("example"):  # loading adds the example source back; printed, it would clash
        data.get("sources", {}).pop("example", None)
    for table in ("sources", "targets"):  # a kind's options sit beside its kind
        for name, entry in list(data.get(table, {}).items()):
            options = entry.pop("options", {})
            data[table][name] = {**entry, **options}
    lines: list[str] = []
    _toml_table(lines, [], data)
    return "\n".join(lines).strip() + "\n"


def duration_text(value: timedelta) -> str:
    seconds = value.total_seconds()
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _toml_key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else _toml_string(key)


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, but for DEL, which TOML also escapes."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return _toml_string(str(value))


def _toml_table(lines: list[str], path: list[str], table: dict[str, Any]) -> None:
    nested = {k: v for k, v in table.items() if isinstance(v, dict) and _is_table(path, k)}
    for key, value in table.items():
        if key not in nested:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in nested.items():
        sub = [*path, key]
        if (
            any(not isinstance(v, dict) or not _is_table(sub, k) for k, v in value.items())
            or not value
        ):
            lines.append("")
            lines.append("[" + ".".join(_toml_key(p) for p in sub) + "]")
        _toml_table(lines, sub, value)


def _is_table(path: list[str], key: str) -> bool:
    """Settings sections and each source or target are tables; option values that are
    mappings (``type_domains``) stay inline."""
    if not path:
        return True
    return len(path) == 1 and path[0] in ("sources", "targets")


def _shown(text: str) -> str:
    """A value from the operator's file as it can be shown on one line: as written when it is
    printable, quoted with its escapes when it holds a line break or other control character."""
    return text if text.isprintable() else repr(text)
