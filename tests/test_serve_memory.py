"""`healthd serve-memory`: the reference memory over the HTTP contract, as a real process,
driven by the `http` target."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import time

import pytest
import requests
from memory_service import MemoryService
from serve_memory_process import serve_memory

from healthd.cli import example_timeline_path
from healthd.errors import TargetError
from healthd.evaluator import evaluate
from healthd.memory import build_memory, parse_target
from healthd.model import Probe
from healthd.probes import build_probe_set
from healthd.timeline import event_from_dict, read_timeline

EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)


def _http(url: str, namespace: str = "healthd/shadow") -> str:
    return f"http:base_url={url},namespace={namespace},shadow=on,backoff_seconds=0"


def test_the_http_target_against_serve_memory_scores_like_the_reference_in_process():
    with serve_memory() as (url, _):
        over_http = evaluate(
            EVENTS, build_memory(parse_target(_http(url))), PROBES, name="h", kind="http"
        )
    in_process = evaluate(
        EVENTS, build_memory(parse_target("reference")), PROBES, name="r", kind="reference"
    )
    assert [s.metrics for s in over_http.stages] == [s.metrics for s in in_process.stages]


def test_bad_requests_get_400_naming_the_field_and_protected_namespaces_409():
    with serve_memory("--protect", "prod") as (url, _):
        base = f"{url}/v1/namespaces/healthd%2Fshadow"
        assert requests.post(f"{base}/reset", timeout=5).status_code == 204
        bad = requests.post(f"{base}/events", json={"id": "e1", "type": "added"}, timeout=5)
        assert bad.status_code == 400 and "timestamp" in bad.json()["message"]
        query = requests.post(
            f"{base}/query", json={"probe": {"id": "p"}, "at": "x", "k": 1}, timeout=5
        )
        assert query.status_code == 400 and "probe.question" in query.json()["message"]
        assert requests.get(f"{url}/v1/namespaces/prod", timeout=5).json() == {
            "namespace": "prod",
            "shadow": False,
        }
        assert requests.post(f"{url}/v1/namespaces/prod/reset", timeout=5).status_code == 409
        memory = build_memory(parse_target(_http(url, "prod")))
        with pytest.raises(TargetError, match="not a shadow"):
            memory.reset()


def test_sigterm_stops_the_server_with_exit_0():
    with serve_memory() as (_, proc):
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_a_port_in_use_is_one_line_and_exit_2():
    import subprocess
    import sys

    with serve_memory() as (url, _):
        port = url.rsplit(":", 1)[1]
        result = subprocess.run(
            [sys.executable, "-m", "healthd", "serve-memory", "--port", port],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"healthd: error: serve-memory: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"id": ' + b"7" * 5000 + b"}", "a number too long to read"),
        (b"\xff{}", "not JSON"),
    ],
    ids=["deep", "long-number", "not-utf8"],
)
def test_a_body_json_cannot_read_is_a_400_with_one_line_and_the_server_goes_on(body, reason):
    with serve_memory() as (url, proc):
        base = f"{url}/v1/namespaces/healthd%2Fshadow"
        assert requests.post(f"{base}/reset", timeout=5).status_code == 204
        for operation in ("events", "query", "changes"):
            answer = requests.post(
                f"{base}/{operation}",
                data=body,
                headers={"Content-Type": "application/json"},
                timeout=10,
            )
            assert answer.status_code == 400, answer.text
            message = answer.json()["message"]
            assert message.startswith("request body is not JSON") and reason in message
            assert "\n" not in message
        still = requests.post(f"{base}/changes", json={"until": "2024-01-01T00:00:00Z"}, timeout=5)
        assert still.status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr is not None
        assert b"Traceback" not in proc.stderr.read()


@pytest.mark.parametrize("length", ["-5", "many", "1e3"])
def test_a_content_length_that_is_no_byte_count_is_a_400(length):
    import socket

    with serve_memory() as (url, proc):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespaces/x/changes HTTP/1.1\r\nHost: x\r\n"
                b"Content-Length: " + length.encode() + b"\r\nConnection: close\r\n\r\n{}"
            )
            head = sock.makefile("rb").read()
        assert head.startswith(b"HTTP/1.1 400 "), head[:200]
        assert b"is not a byte count" in head
        assert proc.poll() is None


def test_a_client_that_sends_nothing_does_not_hold_a_connection_for_ever():
    """A body announced and never sent held a thread of the server's until the process
    ended."""
    with (
        MemoryService(idle_seconds=0.5) as service,
        socket.create_connection(
            ("127.0.0.1", service.httpd.server_address[1]), timeout=30
        ) as idle,
    ):
        idle.sendall(b"POST /v1/namespaces/a/reset HTTP/1.1\r\nContent-Length: 10\r\n\r\n")
        answer = _until_closed(idle)  # closed by the server, not by this timeout
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"request body not received: nothing received for 0.5 s" in answer


def _until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def _trickle(sock: socket.socket, data: bytes, every: float) -> float:
    """Sends ``data`` a byte at a time until the server closes; how long that took."""
    started = time.monotonic()
    try:
        for byte in data:
            sock.sendall(bytes([byte]))
            time.sleep(every)
    except OSError:  # (closed by the server while sending)
        pass
    return time.monotonic() - started


def test_a_body_trickled_in_within_the_idle_time_is_cut_off_at_the_request_time():
    """A client sending a byte every fraction of the idle time held a thread of the server's
    for as long as it liked: a megabyte at a byte a minute is two years."""
    with (
        MemoryService(idle_seconds=1, request_seconds=1.5) as service,
        socket.create_connection(
            ("127.0.0.1", service.httpd.server_address[1]), timeout=30
        ) as sock,
    ):
        sock.sendall(b"POST /v1/namespaces/a/reset HTTP/1.1\r\nContent-Length: 100\r\n\r\n")
        took = _trickle(sock, b" " * 100, every=0.2)  # 20 s if let
        answer = _until_closed(sock)
    assert took < 10, took
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"the request took over 1.5 s to arrive" in answer


def test_a_request_line_trickled_in_is_cut_off_at_the_request_time():
    with (
        MemoryService(idle_seconds=1, request_seconds=1.5) as service,
        socket.create_connection(
            ("127.0.0.1", service.httpd.server_address[1]), timeout=30
        ) as sock,
    ):
        took = _trickle(sock, b"GET /v1/namespaces/" + b"a" * 100, every=0.2)
        assert sock.recv(4096) == b""
    assert took < 10, took


def test_connections_over_the_limit_get_503_and_a_freed_slot_serves_again():
    """Every connection held a thread: clients holding connections open made the server
    start threads without end."""
    with MemoryService(max_connections=2) as service:
        address = ("127.0.0.1", service.httpd.server_address[1])
        held = [socket.create_connection(address, timeout=30) for _ in range(2)]
        time.sleep(0.2)  # (both accepted, each a thread waiting for its request)
        with socket.create_connection(address, timeout=30) as third:
            answer = _until_closed(third)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        assert b"over 2 connections at once" in answer
        held.pop().close()
        time.sleep(0.2)
        assert requests.get(f"{service.url}/v1/namespaces/a", timeout=5).status_code == 404
        for sock in held:
            sock.close()


def test_each_request_on_a_kept_connection_has_its_own_time():
    """The request time counts from a request's first byte: a connection kept open longer
    than it, between requests, is not cut off."""
    with (
        MemoryService(idle_seconds=3, request_seconds=0.5) as service,
        requests.Session() as session,
    ):
        base = f"{service.url}/v1/namespaces/a"
        assert session.post(f"{base}/reset", timeout=5).status_code == 204
        time.sleep(1)
        assert session.post(f"{base}/events", json=EVENT, timeout=5).status_code == 204
        time.sleep(1)
        assert session.get(base, timeout=5).status_code == 200


EVENT = {
    "id": "e1",
    "type": "added",
    "timestamp": "2024-01-01T00:00:00Z",
    "source": "t",
    "fact": {"subject": "billing", "predicate": "owner", "value": "@bob", "domain": "ownership"},
}


def test_an_event_sent_in_chunks_is_applied_as_one_sent_with_its_length():
    """HTTP/1.1 lets a client send a body of unknown length chunked (RFC 9112, 6.1: a
    recipient MUST be able to parse it); it was answered 400 "expected a change event
    object", the body taken for none, and its chunks read as the next request."""
    with serve_memory() as (url, _), requests.Session() as session:
        base = f"{url}/v1/namespaces/healthd%2Fshadow"
        assert session.post(f"{base}/reset", timeout=5).status_code == 204
        text = json.dumps(EVENT).encode()
        chunks = iter([text[:10], text[10:]])  # a generator: requests sends it chunked
        applied = session.post(
            f"{base}/events",
            data=chunks,
            headers={"Content-Type": "application/json"},
            timeout=5,
        )
        assert applied.request.headers.get("Transfer-Encoding") == "chunked"
        assert applied.status_code == 204, applied.text
        query = {
            "probe": {"id": "p", "question": "Who owns billing?", "subject": "billing",
                      "predicate": "owner", "domain": "ownership"},
            "at": "2024-01-02T00:00:00Z",
            "k": 5,
        }  # fmt: skip
        answer = session.post(f"{base}/query", json=query, timeout=5)
        assert [f["value"] for f in answer.json()["facts"]] == ["@bob"]


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b"zz\r\n{}\r\n0\r\n\r\n", 400, "chunk size"),
        (b"5\r\n{}", 400, "cut short"),
        (b"%x\r\n" % (2 << 20) + b"[" * 10, 413, "over"),
        # 1-byte chunks, each with a 1000-byte extension: 1 MiB of framing for 1 KiB of body
        ((b"1;" + b"e" * 1020 + b"\r\n[\r\n") * 1022 + b"1;" + b"e" * 1020 + b"\r\n", 413, "over"),
    ],
    ids=["not-hex", "cut-short", "too-large", "extensions-too-large"],
)
def test_a_chunked_body_that_is_broken_gets_one_line_and_the_connection_closed(body, status, said):
    with serve_memory() as (url, proc):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespaces/x/changes HTTP/1.1\r\nHost: x\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + body
            )
            sock.shutdown(socket.SHUT_WR)
            answer = sock.makefile("rb").read()
        assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
        assert said.encode() in answer
        assert answer.count(b"HTTP/1.1 ") == 1  # nothing left of the body read as a request
        assert proc.poll() is None


def test_with_path_a_restarted_server_still_has_its_namespaces_and_applied_events(tmp_path):
    """--path keeps the memories in a file; a restart forgot which namespaces it held, so
    every write and query after it was 404 "no namespace yet; reset it first"."""
    path = str(tmp_path / "memory.db")
    early, late = EVENTS[:5], EVENTS[5:10]
    with serve_memory("--path", path) as (url, _):
        memory = build_memory(parse_target(_http(url)))
        memory.reset()
        for event in early:
            memory.apply(event)
        before = memory.answer(PROBES.probes[0], early[-1].timestamp)
    with serve_memory("--path", path) as (url, _):
        memory = build_memory(parse_target(_http(url)))
        assert memory.answer(PROBES.probes[0], early[-1].timestamp) == before
        for event in [early[-1], *late]:  # the last one again: a retry whose answer was lost
            memory.apply(event)
        after = memory.answer(PROBES.probes[0], late[-1].timestamp)
    in_process = build_memory(parse_target("reference"))
    in_process.reset()
    for event in [*early, *late]:
        in_process.apply(event)
    assert after == in_process.answer(PROBES.probes[0], late[-1].timestamp)


def test_a_path_that_cannot_be_opened_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "healthd", "serve-memory", "--port", "0", "--path", str(tmp_path)],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"healthd: error: serve-memory: cannot open --path {str(tmp_path)!r}: "
        "unable to open database file"
    ]


def test_a_query_gets_up_to_the_k_it_asks_for_as_the_reference_memory_gives():
    """The server's memories were built with the reference memory's default top_k (5):
    asked for 8 facts of a key that holds 7 values, it answered 5, so the http target's
    top_k did nothing past 5 and a key with more values than that lost coverage."""
    events = [
        event_from_dict(
            {**EVENT, "id": f"e{i}", "metadata": {"cardinality": "multi"},
             "fact": {"subject": "api", "predicate": "depends_on", "value": f"lib{i}",
                      "domain": "tech"}}
        )
        for i in range(7)
    ]  # fmt: skip
    probe = Probe("p", "What does api depend on?", "api", "depends_on", "tech")
    answers = []
    with serve_memory() as (url, _):
        for text in (_http(url) + ",top_k=8", "reference:top_k=8"):
            memory = build_memory(parse_target(text))
            memory.reset()
            for event in events:
                memory.apply(event)
            answers.append(
                sorted(f.value for f in memory.answer(probe, events[-1].timestamp).facts)
            )
    assert answers[0] == answers[1] == [f"lib{i}" for i in range(7)]


def test_a_request_in_absolute_form_is_answered_as_its_path():
    """RFC 9112, 3.2.2: a server MUST accept a request target in absolute form
    (``POST http://host/v1/...``, what a client sends through a proxy, and what curl
    --request-target sends); it was answered 404 "no such path http://..."."""
    with serve_memory() as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                f"POST {url}/v1/namespaces/healthd%2Fshadow/reset HTTP/1.1\r\nHost: {host}\r\n"
                "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
            )
            answer = sock.makefile("rb").read()
        assert answer.startswith(b"HTTP/1.1 204 "), answer[:200]
        shown = requests.get(f"{url}/v1/namespaces/healthd%2Fshadow", timeout=5)
        assert shown.json() == {"namespace": "healthd/shadow", "shadow": True}


def test_a_request_after_the_server_closed_is_a_503_not_a_crash():
    """SIGTERM closes the memories while a kept-alive connection may still send a request:
    it ran on a closed SQLite connection (a traceback, and now and then SIGSEGV, exit -11)."""
    service = MemoryService()
    service.__enter__()
    with requests.Session() as session:
        base = f"{service.url}/v1/namespaces/healthd%2Fshadow"
        assert session.post(f"{base}/reset", timeout=5).status_code == 204
        service.__exit__(None, None, None)  # what SIGTERM does; the connection stays open
        late = session.post(f"{base}/events", json=EVENT, timeout=5)
    assert late.status_code == 503, late.text
    assert late.json() == {"message": "the server is stopping"}


def test_a_request_with_both_a_length_and_chunks_is_read_by_its_chunks_then_closed():
    """RFC 9112, 6.3: Transfer-Encoding overrides Content-Length, and the server MUST close
    the connection after answering (what a proxy read by the length may differ)."""
    with serve_memory() as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespaces/x/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            )
            answer = sock.makefile("rb").read()  # returns only once the server closes
        assert answer.startswith(b"HTTP/1.1 204 "), answer[:200]
        assert b"\r\nConnection: close\r\n" in answer


def test_a_request_giving_two_different_lengths_is_a_400_and_the_connection_closed():
    """RFC 9112, 6.3: a Content-Length that is invalid (RFC 9110, 8.6: two different values)
    MUST get a 400 and the connection closed. Read by the first, what a proxy framed by the
    other was answered as a request of its own (here a reset of another namespace)."""
    with serve_memory() as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespaces/x/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                b"Content-Length: 49\r\n\r\n"
                b"POST /v1/namespaces/y/reset HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            answer = sock.makefile("rb").read()  # returns only once the server closes
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
        assert b"Content-Length" in answer and answer.count(b"HTTP/1.1 ") == 1, answer
        assert b"\r\nConnection: close\r\n" in answer
        assert requests.get(f"{url}/v1/namespaces/y", timeout=5).status_code == 404


@pytest.mark.parametrize(
    "codings",
    [
        b"Transfer-Encoding: chunked, gzip\r\n",
        b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
    ],
)
def test_a_request_whose_last_transfer_coding_is_not_chunked_is_a_400_and_closed(codings):
    """RFC 9112, 6.3: with chunked not the final coding (the header's lines read as one list,
    RFC 9110, 5.3), the body's length cannot be known: a 400, then the connection closed.
    Its second line was ignored and the body read by its chunks, on a connection kept open."""
    with serve_memory() as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespaces/x/reset HTTP/1.1\r\nHost: x\r\n" + codings + b"\r\n0\r\n\r\n"
            )
            answer = sock.makefile("rb").read()  # returns only once the server closes
        assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
        assert b"chunked is not the last" in answer
        assert b"\r\nConnection: close\r\n" in answer


def test_an_http_1_0_request_sent_in_chunks_is_answered_then_closed():
    """RFC 9112, 6.1: HTTP/1.0 has no Transfer-Encoding, so its framing MUST be taken as
    faulty and the connection closed after answering (a 1.0 proxy frames it otherwise)."""
    with serve_memory() as (url, _):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/namespaces/x/reset HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            )
            answer = sock.makefile("rb").read()  # returns only once the server closes
        assert answer.startswith(b"HTTP/1.1 204 "), answer[:200]
        assert b"\r\nConnection: close\r\n" in answer


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_with_path_an_event_costs_no_disk_sync_of_its_own(tmp_path):
    """The file's memories sync at SQLite's checkpoints, not at each commit (a crash of the
    process loses nothing committed); the list of applied events, added beside them, synced
    at every event: one fdatasync each (324 for 300 events where 14 had been)."""
    trace = tmp_path / "trace"
    with serve_memory("--path", str(tmp_path / "memory.db")) as (url, proc):
        memory = build_memory(parse_target(_http(url)))
        memory.reset()
        strace = subprocess.Popen(
            ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", str(trace)]
            + ["-p", str(proc.pid)],
            stderr=subprocess.PIPE,
        )
        assert strace.stderr is not None
        assert b"attached" in strace.stderr.readline()
        for event in EVENTS[:40]:
            memory.apply(event)
        strace.send_signal(signal.SIGINT)
        strace.wait(timeout=30)
    syncs = sum(int(row.split()[3]) for row in trace.read_text().splitlines() if "sync" in row)
    assert syncs < 20, trace.read_text()
