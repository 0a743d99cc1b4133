"""`healthd healthcheck`: ask the running daemon's /healthz, at the address its own
configuration gives, for a container engine's HEALTHCHECK.

The configuration is the one the daemon was started with: ``--config`` when given, else the
``--config`` on the command line of the ``healthd run`` process (in a container, pid 1, the
image's entrypoint), else ``$HEALTHD_CONFIG``, else the built-in defaults; ``HEALTHD_*``
variables override it as they override the daemon's (a container's processes share them).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from healthd.settings import ServerConfig

# a host the daemon binds to that a client cannot connect to, and the loopback to ask instead
_WILDCARD = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


def healthz_url(server: ServerConfig) -> str:
    host = _WILDCARD.get(server.host, server.host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{server.port}/healthz"


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


def process_argv(pid: int) -> list[str]:
    """A process's command line, [] when it cannot be read (no /proc, no such process)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def check(url: str, timeout: float) -> str | None:
    """None when ``url`` answers 200 within ``timeout`` seconds, else why not (one line)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{url}: {reason}"
    return None if status == 200 else f"{url}: HTTP {status}"
