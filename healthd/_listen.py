"""Listening addresses: an IPv6 address needs an IPv6 socket, which Python's socketserver
never picks by itself (its servers are AF_INET whatever the host)."""

from __future__ import annotations

import ipaddress


def ipv6_address(host: str) -> str | None:
    """The IPv6 address ``host`` names, bare (``::1``) or in brackets as in a URL
    (``[::1]``), without the brackets; None for anything else (IPv4, a name, "")."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return bare if ipaddress.ip_address(bare).version == 6 else None
    except ValueError:
        return None


def url_host(host: str) -> str:
    """``host`` as it is written in a URL: an IPv6 address in brackets."""
    bare = ipv6_address(host)
    return host if bare is None else f"[{bare}]"
