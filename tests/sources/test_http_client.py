"""The shared HTTP client: timeouts, User-Agent, retries with jitter, rate limits, ETags."""

from __future__ import annotations

from email.utils import formatdate

import pytest
import requests
from _ticket_payloads import Sleeps, _module_server, api_server  # noqa: F401
from werkzeug import Response

from healthd import __version__, _stop
from healthd._http import (
    BadPayload,
    HttpClient,
    HttpError,
    HttpOptions,
    JsonResponse,
    RateLimited,
    parse_link_header,
)

NOW = 1_700_000_000.0


def client(sleeps=None, secrets=(), **options) -> HttpClient:
    opts = HttpOptions(
        **{
            "max_retries": 3,
            "backoff_seconds": 1.0,
            "max_backoff_seconds": 4.0,
            "max_rate_limit_wait_seconds": 30.0,
            **options,
        }
    )
    return HttpClient(
        requests.Session(),
        opts,
        sleep=sleeps if sleeps is not None else Sleeps(),
        clock=lambda: NOW,
        rng=lambda: 1.0,
        secrets=secrets,
        headers={"Authorization": "Bearer tok"},
    )


def serve(server, *responses):
    """Answer successive requests with the given (status, body, headers) tuples."""
    queue = list(responses)
    seen = []

    def handler(request):
        seen.append(request)
        status, body, headers = queue.pop(0) if len(queue) > 1 else queue[0]
        return Response(body, status=status, headers=headers, content_type="application/json")

    server.expect_request("/x").respond_with_handler(handler)
    return server.url_for("/x"), seen


def test_link_header_parsing():
    value = (
        '<https://api.github.com/repositories/1/issues?page=2>; rel="next", '
        '<https://api.github.com/repositories/1/issues?page=5>; rel="last"'
    )
    assert parse_link_header(value) == {
        "next": "https://api.github.com/repositories/1/issues?page=2",
        "last": "https://api.github.com/repositories/1/issues?page=5",
    }
    assert parse_link_header(None) == {} and parse_link_header("garbage") == {}


def test_user_agent_timeout_and_json(api_server):  # noqa: F811
    url, seen = serve(api_server, (200, '{"a": 1}', {"ETag": '"abc"'}))
    resp = client().get_json(url)
    assert resp.data == {"a": 1} and resp.etag == '"abc"' and not resp.not_modified
    assert seen[0].headers["User-Agent"] == f"healthd/{__version__}"


def test_conditional_request_304(api_server):  # noqa: F811
    url, seen = serve(api_server, (304, "", {"ETag": '"abc"'}))
    resp = client().get_json(url, etag='"abc"')
    assert resp.not_modified and resp.data is None
    assert seen[0].headers["If-None-Match"] == '"abc"'


def test_5xx_backoff_is_exponential_bounded_and_gives_up(api_server):  # noqa: F811
    sleeps = Sleeps()
    url, seen = serve(api_server, (503, "{}", {}))
    with pytest.raises(HttpError, match=r"HTTP 503 \(gave up after 4 attempts\)"):
        client(sleeps).get_json(url)
    assert len(seen) == 4
    assert sleeps.calls == [1.0, 2.0, 4.0]  # 1, 2, 4 capped at max_backoff 4 (rng=1 → full)


def test_jitter_spreads_the_delay():
    opts = HttpOptions(backoff_seconds=2.0, max_backoff_seconds=100)
    low = HttpClient(requests.Session(), opts, rng=lambda: 0.0)
    high = HttpClient(requests.Session(), opts, rng=lambda: 1.0)
    assert (low._backoff(2), high._backoff(2)) == (4.0, 8.0)


def test_4xx_is_not_retried_and_names_the_server_message(api_server):  # noqa: F811
    sleeps = Sleeps()
    url, seen = serve(api_server, (404, '{"message": "Not Found"}', {}))
    with pytest.raises(HttpError, match=r"returned HTTP 404: Not Found"):
        client(sleeps).get_json(url)
    assert len(seen) == 1 and sleeps.calls == []


def test_retry_after_as_http_date(api_server):  # noqa: F811
    sleeps = Sleeps()
    url, _ = serve(
        api_server, (429, "{}", {"Retry-After": formatdate(NOW + 20, usegmt=True)}), (200, "[]", {})
    )
    assert client(sleeps).get_json(url).data == []
    assert sleeps.calls == [20.0]


def test_rate_limit_repeated_too_often_defers(api_server):  # noqa: F811
    sleeps = Sleeps()
    url, _ = serve(api_server, (429, "{}", {"Retry-After": "1"}))
    with pytest.raises(RateLimited, match="deferred to the next run"):
        client(sleeps, max_retries=2).get_json(url)
    assert sleeps.calls == [1.0, 1.0]


def test_exhausted_quota_on_success_waits_before_the_next_request(api_server):  # noqa: F811
    sleeps = Sleeps()
    url, _ = serve(
        api_server,
        (200, "[]", {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW + 7))}),
    )
    c = client(sleeps)
    c.get_json(url)
    assert sleeps.calls == []
    c.get_json(url)
    assert sleeps.calls == [7.0]
    far = client(Sleeps(), max_rate_limit_wait_seconds=5)
    far.get_json(url)
    with pytest.raises(RateLimited):
        far.get_json(url)


def test_bad_json_is_a_bad_payload(api_server):  # noqa: F811
    url, _ = serve(api_server, (200, '{"issues": [', {}))
    with pytest.raises(BadPayload, match="not valid JSON"):
        client().get_json(url)


def test_secrets_are_redacted_from_messages(api_server):  # noqa: F811
    url, _ = serve(api_server, (400, '{"message": "token tok-SECRET is bad"}', {}))
    with pytest.raises(HttpError) as info:
        client(secrets=("tok-SECRET",)).get_json(url)
    assert "tok-SECRET" not in str(info.value) and "[REDACTED]" in str(info.value)


def test_real_timeout_then_connection_refused(api_server):  # noqa: F811
    import time

    def slow(request):
        time.sleep(0.5)
        return Response("[]", status=200)

    api_server.expect_request("/slow").respond_with_handler(slow)
    with pytest.raises(HttpError, match=r"timed out after 0.2 s \(gave up after 1 attempts\)"):
        client(max_retries=0, timeout_seconds=0.2).get_json(api_server.url_for("/slow"))
    with pytest.raises(HttpError, match="ConnectionError"):
        client(max_retries=1).get_json("http://127.0.0.1:9/nothing")


def test_a_body_past_max_response_bytes_is_refused_not_read_whole(api_server):  # noqa: F811
    from healthd._http import TooLarge

    big = b'{"pad": "' + b"x" * 40_000 + b'"}'
    url, seen = serve(api_server, (200, big, {}))
    with pytest.raises(TooLarge, match="over max_response_bytes=10000; not read"):
        client(max_response_bytes=10_000).get_json(url)
    assert len(seen) == 1  # a final answer: not retried

    def chunked(request):  # no Content-Length: found while reading
        return Response(iter([b'{"pad": "'] + [b"x" * 4096] * 10 + [b'"}']), status=200)

    api_server.expect_request("/chunked").respond_with_handler(chunked)
    with pytest.raises(TooLarge):
        client(max_response_bytes=10_000).get_json(api_server.url_for("/chunked"))
    assert client(max_response_bytes=50_000).get_json(url).data == {"pad": "x" * 40_000}


def test_a_server_dripping_its_headers_is_cut_at_max_request_seconds():
    """Each byte comes well within ``timeout_seconds`` of the last; the attempt as a whole
    still ends at ``max_request_seconds``, headers or body."""
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"x" * 1000:
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    threading.Thread(target=drip, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/x"
    started = time.monotonic()
    try:
        with pytest.raises(HttpError, match=r"no complete answer within max_request_seconds=1\.5"):
            client(timeout_seconds=1, max_request_seconds=1.5, max_retries=0).get_json(url)
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n",
        b"HTTP/1.0 200 OK\r\nContent-Length: 1000\r\n\r\n",
    ],
    ids=["connection-close", "http-1.0"],
)
def test_a_server_dripping_its_body_on_a_closing_connection_is_cut_at_max_request_seconds(head):
    """A server that closes the connection after its answer (``Connection: close``, or
    HTTP/1.0) hands the socket from the connection to the response: the body read from it
    still ends at ``max_request_seconds``, however slowly the bytes come."""
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(head)
            for byte in b'{"pad": "' + b"x" * 50:  # 12 s: well past the bound
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    threading.Thread(target=drip, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/x"
    started = time.monotonic()
    try:
        with pytest.raises(HttpError, match=r"no complete answer within max_request_seconds=1\.5"):
            client(timeout_seconds=1, max_request_seconds=1.5, max_retries=0).get_json(url)
    finally:
        stop.set()
        listener.close()
    assert time.monotonic() - started < 5


def _page(url: str, next_link: str) -> JsonResponse:
    return JsonResponse(url=url, status=200, data=[], links={"next": next_link})


@pytest.mark.parametrize(
    ("base", "page", "link", "followed"),
    [
        # the same origin, written in any of the ways it can be
        ("https://api.github.com", "https://api.github.com/r/i", "/r/i?page=2", True),
        (
            "https://api.github.com",
            "https://api.github.com/r/i",
            "https://API.github.com:443/r/i?page=2",
            True,
        ),
        (
            "http://ghe.local/api/v3",
            "http://ghe.local/api/v3/i",
            "https://ghe.local/api/v3/i?page=2",
            True,
        ),
        # elsewhere, however it is dressed
        (
            "https://api.github.com",
            "https://api.github.com/r/i",
            "https://evil.example/r/i?page=2",
            False,
        ),
        (
            "https://api.github.com",
            "https://api.github.com/r/i",
            "https://evil.example\\@api.github.com/r/i",
            False,
        ),
        (
            "https://api.github.com",
            "https://api.github.com/r/i",
            "https://api.github.com:8443/r/i?page=2",
            False,
        ),
        (
            "https://api.github.com",
            "https://api.github.com/r/i",
            "http://api.github.com/r/i?page=2",
            False,
        ),
        ("https://api.github.com", "https://api.github.com/r/i", "//evil.example/r/i", False),
        (
            "https://api.github.com",
            "https://api.github.com/r/i",
            "https://user:pw@api.github.com/r/i",
            False,
        ),
    ],
)
def test_a_next_link_is_followed_only_where_the_credentials_may_go(base, page, link, followed):
    listing = client().listing(base, max_pages=10)
    if followed:
        assert listing.next_url(_page(page, link)) is not None
    else:
        with pytest.raises(BadPayload, match="not followed"):
            listing.next_url(_page(page, link))


def test_a_next_link_that_is_no_url_or_loops_back_is_one_error():
    listing = client().listing("https://api.github.com", max_pages=10)
    with pytest.raises(BadPayload, match="its next page link is no URL"):
        listing.next_url(_page("https://api.github.com/r/i", "https://[bad/x"))
    first = "https://api.github.com/r/i?page=1"
    second = listing.next_url(_page(first, "/r/i?page=2"))
    with pytest.raises(BadPayload, match="a loop"):  # page 2 redirected, and linking back
        listing.next_url(_page("https://api.github.com/r/i?p=2", second))


@pytest.mark.parametrize(
    "url",
    [
        "https://ghe.example.com:80443/api/v3",  # a port past 65535
        "https://ghe example.com/api/v3",  # a space in the host
        "https://user:s3cret-pass@[not-ipv6/api",  # an unclosed bracket, and a password
    ],
)
@pytest.mark.parametrize("kind", ["github", "jira", "backstage"])
def test_a_base_url_no_request_can_be_sent_to_is_a_config_error_naming_the_field(kind, url):
    from healthd.errors import ConfigError
    from healthd.sources import build_source

    needs = {"github": {"repo": "o/r"}, "jira": {"jql": "project = X"}, "backstage": {}}
    with pytest.raises(ConfigError, match=r"field 'base_url': is no URL a request") as raised:
        build_source(kind, "s", {"base_url": url, **needs[kind]})
    assert "s3cret" not in str(raised.value)


def test_a_listing_of_a_url_that_cannot_be_sent_is_an_http_error():
    client = HttpClient(requests.Session(), HttpOptions(max_retries=0))
    with pytest.raises(HttpError, match=r"GET https://x:99999/ cannot be sent"):
        client.listing("https://x:99999/", 5)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_write_moved_by_a_redirect_is_followed_only_where_it_stays_a_write(
    api_server,  # noqa: F811
    status,
):
    # requests follows a 301-303 with a GET and no body: the write would be lost and the
    # GET's answer taken for the write's; a 307 or 308 keeps the method and the body
    seen = []

    def moved(request):
        seen.append(request.method)
        return Response("", status=status, headers={"Location": "/sink"})

    def sink(request):
        seen.append((request.method, request.get_data()))
        return Response('{"ok": true}', status=200, content_type="application/json")

    api_server.expect_request("/events").respond_with_handler(moved)
    api_server.expect_request("/sink").respond_with_handler(sink)
    url = api_server.url_for("/events")
    if status in (307, 308):
        assert client().post_json(url, {"id": "e1"}).data == {"ok": True}
        assert seen == ["POST", ("POST", b'{"id": "e1"}')]
        return
    with pytest.raises(
        HttpError, match=rf"POST .*/events was redirected \(HTTP {status} to '/sink'"
    ):
        client().post_json(url, {"id": "e1"})
    assert seen[0] == "POST" and seen[1][0] == "GET"


def test_a_rate_limit_wait_longer_than_the_run_has_left_defers_at_once(api_server):  # noqa: F811
    """A wait within max_rate_limit_wait_seconds but past the run's deadline slept out
    what was left of the run (the sleep stops at the deadline), and the request then
    failed as "not sent, the run took its run_timeout", naming no rate limit: it is a
    rate limit deferred to the next run, said at once."""
    sleeps = Sleeps()
    url, seen = serve(api_server, (429, "{}", {"Retry-After": "20"}), (200, "[]", {}))
    with (
        _stop.run_deadline(5, "run_timeout=5s"),
        pytest.raises(RateLimited, match="run_timeout=5s.*deferred to the next run"),
    ):
        client(sleeps).get_json(url)
    assert sleeps.calls == [] and len(seen) == 1


def test_a_403_with_remaining_0_and_a_reset_waits_for_it_even_beside_retry_after_0(
    api_server,  # noqa: F811
):
    """X-RateLimit-Reset beside X-RateLimit-Remaining: 0 is GitHub's primary limit (Jira
    Data Center, whose Retry-After: 0 makes no 403 a rate limit, sends no reset): a
    Retry-After: 0 a proxy adds does not make it a refusal."""
    sleeps = Sleeps()
    headers = {
        "Retry-After": "0",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": str(int(NOW + 7)),
    }
    url, _ = serve(
        api_server, (403, '{"message": "API rate limit exceeded"}', headers), (200, "[]", {})
    )
    client(sleeps).get_json(url)
    assert sleeps.calls == [7.0]
