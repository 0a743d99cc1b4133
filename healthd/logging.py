"""structlog setup: JSON lines when stdout is not a terminal, key-value on one; secrets
(tokens, passwords, URLs with credentials) are redacted from every line.

:func:`redact_text` is the one redaction: every text logged, stored or shown passes through
it. Besides the shapes of secrets it knows, it replaces every value healthd took from an
environment variable named by a ``*_env`` key (a user name as much as a password) and their
base64 forms, whatever the remote echoed them in. It also writes each lone surrogate out as
its escape (:func:`healthd.model.repaired`: a name git gave in bytes that are not UTF-8), so
what is stored or shown is text.

structlog (and the console renderer's imports) are loaded when something first logs: a
one-shot command that logs nothing does not carry them."""

from __future__ import annotations

import base64
import logging as _stdlib_logging
import os
import re
import sys
import threading
from collections.abc import Mapping, MutableMapping
from typing import Any, TextIO

from healthd.model import repaired

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|authorization|credential"
    r"|private[_-]?key|cookie)",
    re.IGNORECASE,
)
# ``token_env``, ``api_key_env``: their value is the name of the variable holding the secret
_NAMES_A_VARIABLE = re.compile(r"[_-]env$", re.IGNORECASE)

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # scheme://user:password@host  ->  scheme://[REDACTED]@host; the host is after the
    # authority's last '@' (urlsplit's reading, and requests'), so a user name (Jira Cloud's
    # is an email address) or a password written with an '@' of its own is redacted whole
    (
        re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#\s:]*:[^/?#\s]*@"),
        r"\g<scheme>" + REDACTED + "@",
    ),
    # scheme://token@host (a bare credential before @)
    (re.compile(r"(?P<scheme>\bhttps?://)[^/\s:@]{16,}@"), r"\g<scheme>" + REDACTED + "@"),
    # Authorization headers
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9\-._~+/]{8,}=*"), r"\1 " + REDACTED),
    # name=value / name: value pairs for secret-looking names
    (
        re.compile(
            r"(?i)\b([\w\-]*(?:password|passwd|secret|token|api[_-]?key|apikey)[\w\-]*)"
            r"(?<![_-]env)(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s&,;\"']+)"
        ),
        r"\1\2" + REDACTED,
    ),
    # well-known token shapes
    (
        re.compile(
            r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
            r"|glpat-[A-Za-z0-9\-_]{20,}|xox[baprs]-[A-Za-z0-9\-]{10,}"
            r"|AKIA[0-9A-Z]{16}|sk-[A-Za-z0-9]{20,})\b"
        ),
        REDACTED,
    ),
]


#: Values shorter than this are not redacted (a one- or two-letter value would blank that
#: letter pair in every line, and says too little to be worth hiding).
MIN_SECRET_LENGTH = 3
#: The suffix of the configuration keys that name environment variables holding secrets.
ENV_SUFFIX = "_env"


class _Secrets:
    """The values registered for redaction, and one pattern matching any of them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: set[str] = set()
        self.pattern: re.Pattern[str] | None = None


_secrets = _Secrets()


def register_secret(*values: str | None) -> None:
    """Redact each value, and its base64 forms (padded, unpadded, URL-safe), from every text
    :func:`redact_text` sees from now on. A credential built from several (``user:password``
    in a Basic header) is registered as built, since its base64 holds neither part's."""
    forms: set[str] = set()
    for value in values:
        if not value or len(value) < MIN_SECRET_LENGTH:
            continue
        raw = value.encode()
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            text = encoded.decode()
            forms.update((text, text.rstrip("=")))
        forms.add(value)
    forms = {f for f in forms if len(f) >= MIN_SECRET_LENGTH}
    with _secrets.lock:
        if forms <= _secrets.values:
            return
        _secrets.values.update(forms)
        ordered = sorted(_secrets.values, key=len, reverse=True)  # the longest form first
        _secrets.pattern = re.compile("|".join(map(re.escape, ordered)))


def env_secret(variable: str, environ: Mapping[str, str] | None = None) -> str:
    """The value of the environment variable a ``*_env`` key names ("" when unset),
    registered for redaction before anything can echo it."""
    value = (os.environ if environ is None else environ).get(variable, "")
    register_secret(value)
    return value


def register_env_secrets(config: object, environ: Mapping[str, str] | None = None) -> None:
    """Register the value of every variable that a ``*_env`` key anywhere in ``config`` (a
    configuration as plain dicts and lists) names."""
    if isinstance(config, Mapping):
        for key, value in config.items():
            if str(key).endswith(ENV_SUFFIX) and isinstance(value, str) and value:
                env_secret(value, environ)
            else:
                register_env_secrets(value, environ)
    elif isinstance(config, (list, tuple)):
        for item in config:
            register_env_secrets(item, environ)


def secret_key(name: str) -> bool:
    """Whether a configuration key names a secret (``api_key``, ``password``, ...)."""
    return _SECRET_KEY.search(name) is not None


def redact_text(text: str) -> str:
    values = _secrets.pattern
    if values is not None:
        text = values.sub(REDACTED, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return repaired(text)  # stored and shown as text, whatever a name held


def redact(value: Any, key: str | None = None) -> Any:
    """A copy of ``value`` with secrets replaced; a value under a secret-looking key is
    replaced whole."""
    if (
        key is not None
        and _SECRET_KEY.search(key)
        and not _NAMES_A_VARIABLE.search(key)
        and value not in (None, "", True, False)
        and not isinstance(value, (int, float, dict, list, tuple))
    ):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return redact_text(str(value))


def redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> dict[str, Any]:
    return {
        k: (redact(v, k) if k not in ("level", "timestamp") else v) for k, v in event_dict.items()
    }


# The settings of a deferred configuration, until a logger first logs (at most one).
_deferred: list[tuple[str, str, TextIO | None]] = []


def configure_logging(
    level: str = "info", fmt: str = "auto", stream: TextIO | None = None, *, defer: bool = False
) -> None:
    """``fmt``: ``json``, ``console`` or ``auto`` (JSON unless ``stream`` is a terminal).
    ``defer``: healthd's own loggers are set up when one first logs (libraries' logging at
    once), so a command that logs nothing never loads structlog."""
    _configure_stdlib(_as_json(fmt, stream or sys.stdout))
    _deferred.clear()
    if defer:
        _deferred.append((level, fmt, stream))
        return
    _configure_structlog(level, fmt, stream)


def _configure_structlog(level: str, fmt: str, stream: TextIO | None) -> None:
    import structlog

    stream = stream or sys.stdout
    renderer: Any = (
        structlog.processors.JSONRenderer(sort_keys=False)
        if _as_json(fmt, stream)
        else structlog.dev.ConsoleRenderer(colors=stream.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            getattr(_stdlib_logging, level.upper())
        ),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


def _as_json(fmt: str, stream: Any) -> bool:
    """Whether logs are JSON lines: ``json``, or ``auto`` on a stream that is no terminal."""
    if fmt == "auto":
        isatty = getattr(stream, "isatty", None)
        return not (isatty is not None and isatty())
    return fmt == "json"


def _configure_stdlib(as_json: bool = False) -> None:
    # Libraries' own logging: warnings and up, through the same redaction, on stderr; as
    # JSON lines when healthd's own are (a log shipper parsing JSON reads both).
    root = _stdlib_logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_healthd", False):
            root.removeHandler(handler)
    handler = _stdlib_logging.StreamHandler(sys.stderr)
    handler._healthd = True  # type: ignore[attr-defined]
    handler.setFormatter(
        _JsonLineFormatter()
        if as_json
        else _RedactingFormatter("%(levelname)s %(name)s: %(message)s")
    )
    root.addHandler(handler)
    root.setLevel(_stdlib_logging.WARNING)
    # The scheduler's missed-run warnings are counted and logged by healthd itself.
    _stdlib_logging.getLogger("apscheduler").setLevel(_stdlib_logging.ERROR)


class _RedactingFormatter(_stdlib_logging.Formatter):
    def format(self, record: _stdlib_logging.LogRecord) -> str:
        return redact_text(super().format(record))


class _JsonLineFormatter(_stdlib_logging.Formatter):
    """A library's record as healthd's JSON lines are written: event, level, logger,
    timestamp (UTC, ISO 8601), redacted."""

    def format(self, record: _stdlib_logging.LogRecord) -> str:
        import json
        from datetime import UTC, datetime

        message = record.getMessage()
        if record.exc_info:
            message += "\n" + self.formatException(record.exc_info)
        return json.dumps(
            {
                "event": redact_text(message),
                "level": record.levelname.lower(),
                "logger": record.name,
                "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
            },
            ensure_ascii=False,
        )


class CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of writing, not when logging was
    configured (a command run in-process, as tests do, may swap it in between)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


class _Logger:
    """A structlog logger, loaded (and deferred logging configured) at its first use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            import structlog

            if _deferred:
                configure_logging(*_deferred[0])
            logger = self._logger = structlog.get_logger(self._name)
        return getattr(logger, attr)


def get_logger(name: str = "healthd") -> Any:
    return _Logger(name)
