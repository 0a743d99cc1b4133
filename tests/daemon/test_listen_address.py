"""The listener binds every address `server.host` accepts: IPv4, IPv6 (bare or in
brackets, as the healthcheck reads it) and host names."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from healthd.daemon import server
from healthd.daemon.healthcheck import healthz_url
from healthd.settings import ServerConfig


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "[::1]", "localhost"])
def test_the_listener_answers_on_the_address_configured(host):
    registry = CollectorRegistry()
    http = server.HttpServer(host, 0, server.build_app(registry, lambda: {}, lambda: True))
    http.start()
    try:
        url = healthz_url(ServerConfig(host=host, port=http.port))
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert (answer.status, answer.read()) == (200, b"ok\n")
    finally:
        http.stop()
