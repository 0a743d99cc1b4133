"""`healthd healthcheck`: ask the running daemon's /healthz, at the address its own
configuration gives, for a container engine's HEALTHCHECK.

The configuration is the one the daemon was started with: ``--config`` when given, else the
``--config`` on the command line of the ``healthd run`` process (in a container, pid 1, the
image's entrypoint), else ``$HEALTHD_CONFIG``, else the built-in defaults; ``HEALTHD_*``
variables override it as they override the daemon's (a container's processes share them).

When the configuration's web configuration serves TLS, the check speaks HTTPS and trusts
exactly the certificate the daemon serves (its ``cert_file``, the first certificate in it):
a pin, so the name in the certificate need not be the address asked (the loopback, for a
wildcard host). A listener that asks clients for a certificate is shown the daemon's own
(which passes when one CA issues both, as in most mutual-TLS setups).
"""

from __future__ import annotations

import os
import re
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from healthd._files import read_text
from healthd.daemon.webconfig import WebConfig
from healthd.errors import ConfigError
from healthd.settings import ServerConfig

_PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)

# a host the daemon binds to that a client cannot connect to, and the loopback to ask instead
_WILDCARD = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def healthz_url(server: ServerConfig, *, tls: bool = False) -> str:
    host = _WILDCARD.get(server.host, server.host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{'https' if tls else 'http'}://{host}:{server.port}/healthz"


def client_context(web: WebConfig) -> ssl.SSLContext | None:
    """What the check trusts on a TLS listener (None for plain HTTP): the daemon's own
    certificate and nothing else."""
    if web.tls is None or web.cert_file is None:
        return None
    try:
        first = _PEM.search(read_text(web.cert_file))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{web.cert_file}: cannot read the certificate: {exc}") from None
    if first is None:
        raise ConfigError(f"{web.cert_file}: no PEM certificate in it")
    try:
        context = ssl.create_default_context(cadata=first.group(0))
        # the served certificate itself is the trust anchor, CA-issued or not
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
        context.check_hostname = False  # pinned: the address asked need not be a name in it
        if web.client_auth and web.key_file is not None:
            context.load_cert_chain(web.cert_file, web.key_file)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"{web.cert_file}: cannot use the certificate: {exc}") from None
    return context


def config_of_run(argv: Sequence[str]) -> str | None:
    """The ``--config`` of a ``healthd run`` command line (as in /proc/PID/cmdline), or None
    when the command is not a run or names no file."""
    args = list(argv)
    if "run" not in args:
        return None
    rest = args[args.index("run") + 1 :]
    for i, arg in enumerate(rest):
        if arg == "--config" and i + 1 < len(rest):
            return rest[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def config_of_process(pid: int) -> str | None:
    """The configuration file a running ``healthd run`` was started with: its ``--config``,
    a relative one resolved against that process's working directory, not this one's."""
    found = config_of_run(process_argv(pid))
    if found is None or os.path.isabs(found):
        return found
    try:
        return os.path.join(os.readlink(f"/proc/{pid}/cwd"), found)
    except OSError:  # not ours to read: as given, relative to here
        return found


def process_argv(pid: int) -> list[str]:
    """A process's command line, [] when it cannot be read (no /proc, no such process)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def check(url: str, timeout: float, context: ssl.SSLContext | None = None) -> str | None:
    """None when ``url`` answers 200 within ``timeout`` seconds, else why not (one line)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{url}: {reason}"
    return None if status == 200 else f"{url}: HTTP {status}"
