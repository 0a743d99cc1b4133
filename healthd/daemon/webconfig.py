"""The listener's web configuration: a YAML file in the format Prometheus exporters read
(prometheus/exporter-toolkit's ``--web.config.file``): TLS from ``tls_server_config`` and
basic auth from ``basic_auth_users`` (bcrypt hashes).

Relative file names are relative to the web configuration file, as in exporter-toolkit.
Everything is checked when the file is read, so a daemon refuses to start (and a reload is
refused) with one line naming the file and the key. Only what healthd implements is
accepted; a key exporter-toolkit knows that healthd does not implement is refused by name
rather than ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import ssl
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt
import yaml

from healthd._files import NotRegularFile, check_regular, read_text
from healthd.errors import ConfigError, shorten

_TOP = {"tls_server_config", "basic_auth_users", "http_server_config"}
_TLS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"}
_TLS_UNSUPPORTED = {
    "cert",
    "key",
    "client_ca",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
    "client_allowed_sans",
}
_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
_CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_BCRYPT = re.compile(r"^\$2[aby]\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$")  # cost 4-31
AUTH_CACHE_SIZE = 1024
# compared against when the user is unknown, so an unknown user costs what a known one does
_DUMMY_HASH = b"$2b$10$M7sKIJrpTIhKc8yg5cHBzuf4l/0AbV6eFFWSHP6Ed4ByTtzsvkrYu"


@dataclass
class WebConfig:
    """What the listener enforces; the empty one (no file) is plain HTTP without auth."""

    path: str | None = None
    tls: ssl.SSLContext | None = None
    #: the certificate and key the listener serves (resolved), for a client of its own
    cert_file: str | None = None
    key_file: str | None = None
    client_auth: bool = False  # the listener asks clients for a certificate
    users: dict[str, bytes] = field(default_factory=dict)
    _cache: OrderedDict[bytes, bool] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def authorized(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header names a configured user and password (always
        true with no users configured). Checks are cached: bcrypt is slow on purpose."""
        if not self.users:
            return True
        if not header or header[:6].lower() != "basic ":
            return False
        try:
            user, sep, password = base64.b64decode(header[6:].strip(), validate=True).partition(
                b":"
            )
        except (binascii.Error, ValueError):
            return False
        if not sep:
            return False
        hashed = self.users.get(user.decode("utf-8", "replace"))
        key = hashlib.sha256(user + b"\0" + password + b"\0" + (hashed or b"")).digest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        try:
            ok = bcrypt.checkpw(password, hashed or _DUMMY_HASH) and hashed is not None
        except ValueError:  # over bcrypt's 72 bytes: no password it holds (Go's check fails too)
            if len(password) <= 72:
                raise  # (a hash the loader let through: a server error, not a wrong password)
            ok = False
        with self._lock:
            self._cache[key] = ok
            while len(self._cache) > AUTH_CACHE_SIZE:
                self._cache.popitem(last=False)
        return ok


def load_web_config(path: str | None) -> WebConfig:
    """Read and check the file; ConfigError (one line: file, key, problem) otherwise."""
    if not path:
        return WebConfig()
    try:
        text = read_text(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the web configuration: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the web configuration is not UTF-8 text: {exc.reason}"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a value its tag cannot hold
        raise ConfigError(f"{path}: not valid YAML: {shorten(str(exc), 120)}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top, got {type(data).__name__}")

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{path}: {key}: {message}")

    for key in data:
        if key not in _TOP:
            raise fail(str(key), f"unknown key; known: {', '.join(sorted(_TOP))}")
    base = Path(path).resolve().parent
    config = WebConfig(path=path)
    http = data.get("http_server_config") or {}
    if not isinstance(http, dict) or any(k != "http2" for k in http) or http.get("http2"):
        raise fail("http_server_config", "not supported by healthd (HTTP/1.1 only, no headers)")
    tls = data.get("tls_server_config")
    if tls is not None:
        config.tls, config.cert_file, config.key_file = _tls_context(tls, base, fail)
        config.client_auth = config.tls.verify_mode != ssl.CERT_NONE
    users = data.get("basic_auth_users") or {}
    if not isinstance(users, dict):
        raise fail("basic_auth_users", "expected a mapping of user names to bcrypt hashes")
    for user, hashed in users.items():
        name = str(user)
        if not name or ":" in name:
            raise fail(f"basic_auth_users.{name}", "a user name must be non-empty, without ':'")
        if not isinstance(hashed, str) or not _BCRYPT.match(hashed):
            raise fail(
                f"basic_auth_users.{name}",
                "not a bcrypt hash (expected $2a$, $2b$ or $2y$, a cost of 04-31 and 53 characters; "
                "make one with htpasswd -nBC 10 '' | tr -d ':\\n')",
            )
        config.users[name] = hashed.encode()
    return config


def _tls_context(tls: Any, base: Path, fail: Any) -> tuple[ssl.SSLContext, str, str]:
    if not isinstance(tls, dict):
        raise fail("tls_server_config", "expected a mapping")
    for key in tls:
        if key in _TLS_UNSUPPORTED:
            raise fail(f"tls_server_config.{key}", "not supported by healthd")
        if key not in _TLS:
            raise fail(f"tls_server_config.{key}", f"unknown key; known: {', '.join(sorted(_TLS))}")

    def file(key: str, required: bool) -> str | None:
        value = tls.get(key)
        if value in (None, ""):
            if required:
                raise fail(f"tls_server_config.{key}", "missing")
            return None
        resolved = Path(str(value))
        resolved = resolved if resolved.is_absolute() else base / resolved
        try:
            check_regular(str(resolved))
        except NotRegularFile as exc:
            raise fail(f"tls_server_config.{key}", f"{resolved} {exc.strerror}") from None
        except OSError:
            raise fail(f"tls_server_config.{key}", f"no such file: {resolved}") from None
        return str(resolved)

    cert, key = file("cert_file", True), file("key_file", True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(cert), str(key))
    except (ssl.SSLError, OSError) as exc:
        raise fail(
            "tls_server_config",
            f"cannot load the certificate {cert} with the key {key}: {exc}",
        ) from None
    for name, attr, default in (
        ("min_version", "minimum_version", "TLS12"),
        ("max_version", "maximum_version", None),
    ):
        value = tls.get(name, default)
        if value is None:
            continue
        if value not in _VERSIONS:
            raise fail(f"tls_server_config.{name}", f"expected one of {', '.join(_VERSIONS)}")
        setattr(context, attr, _VERSIONS[value])
    auth = tls.get("client_auth_type", "NoClientCert")
    if auth not in _CLIENT_AUTH:
        raise fail(
            "tls_server_config.client_auth_type",
            f"expected one of {', '.join(_CLIENT_AUTH)} (got {auth!r})",
        )
    context.verify_mode = _CLIENT_AUTH[auth]
    ca = file("client_ca_file", auth != "NoClientCert")
    if ca is not None:
        try:
            context.load_verify_locations(cafile=ca)
        except (ssl.SSLError, OSError) as exc:
            raise fail("tls_server_config.client_ca_file", f"cannot load {ca}: {exc}") from None
    assert cert is not None and key is not None
    return context, cert, key
