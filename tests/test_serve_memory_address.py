"""`healthd serve-memory --host` binds what `healthd run`'s listener binds: an IPv6 address
too, and says the URL a client can use (brackets around an IPv6 address)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request

import pytest

from healthd.memory_server import MemoryServer


@pytest.mark.parametrize(
    ("host", "url_host"), [("127.0.0.1", "127.0.0.1"), ("::1", "[::1]"), ("[::1]", "[::1]")]
)
def test_the_memory_server_answers_on_the_address_given(host, url_host):
    server = MemoryServer(host=host, port=0)
    try:
        threading.Thread(target=server.httpd.serve_forever, daemon=True).start()
        assert server.url == f"http://{url_host}:{server.httpd.server_address[1]}"
        with urllib.request.urlopen(server.url + "/v1/namespaces/x", timeout=5) as answer:
            assert answer.status in (200, 404)
    except urllib.error.HTTPError as exc:
        assert exc.code == 404  # answered: the address was bound and reached
    finally:
        server.httpd.shutdown()
        server.close()
