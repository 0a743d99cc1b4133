"""The `http` memory against a real service on 127.0.0.1 implementing the OpenAPI contract."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
from datetime import timedelta

import pytest
import yaml
from jsonschema import Draft202012Validator
from memory_service import MemoryService
from openapi_spec_validator import validate as validate_openapi
from structlog.testing import capture_logs

from healthd.cli import example_timeline_path
from healthd.errors import MemoryAdapterError, ShadowViolation, TargetError
from healthd.evaluator import evaluate
from healthd.logging import configure_logging
from healthd.memory import build_memory, parse_target
from healthd.probes import build_probe_set
from healthd.timeline import event_to_dict, read_timeline

CONTRACT = "docs/memory-http-api.yaml"
EVENTS = read_timeline(example_timeline_path())
PROBES = build_probe_set(EVENTS)


def target(service: MemoryService, namespace: str = "healthd/shadow", **extra) -> str:
    switches = {
        "base_url": service.url,
        "namespace": namespace,
        "shadow": "on",
        "backoff_seconds": "0",
        **extra,
    }
    return "http:" + ",".join(f"{k}={v}" for k, v in switches.items())


def run(text: str, mode: str = "incremental"):
    spec = parse_target(text)
    return evaluate(EVENTS, build_memory(spec), PROBES, name=spec.label, kind=spec.kind, mode=mode)


def test_the_contract_is_a_valid_openapi_document_and_events_match_its_schema():
    document = yaml.safe_load(open(CONTRACT))
    validate_openapi(document)
    schemas = document["components"]["schemas"]
    validator = Draft202012Validator(
        {"$ref": "#/components/schemas/ChangeEvent", "components": {"schemas": schemas}}
    )
    for event in EVENTS:
        validator.validate(event_to_dict(event))


@pytest.mark.slow
def test_a_reference_memory_behind_http_scores_exactly_as_it_does_in_process():
    with MemoryService() as service:
        over_http = run(target(service))
        full = run(target(service), mode="full")
    in_process = run("reference")
    assert [s.metrics for s in over_http.stages] == [s.metrics for s in in_process.stages]
    assert [s.metrics for s in full.stages] == [s.metrics for s in in_process.stages]
    assert over_http.probe_queries < full.probe_queries / 3


@pytest.mark.slow
def test_without_the_changes_operation_incremental_asks_everything_and_stays_exact():
    # legacy-reports ages out with no event: only re-asking every probe can see it.
    with MemoryService(changes=False) as service:
        incremental = run(target(service))
        full = run(target(service), mode="full")
    in_process = run("reference")
    assert [s.metrics for s in incremental.stages] == [s.metrics for s in in_process.stages]
    assert incremental.metrics["ownership"].coverage == 0.8
    assert incremental.probe_queries == full.probe_queries


def test_a_namespace_the_service_says_is_not_shadow_is_never_written():
    with MemoryService(protected=("assistant/prod",)) as service:
        memory = build_memory(parse_target(target(service, "assistant/prod")))
        with pytest.raises(ShadowViolation, match="not a shadow"):
            memory.reset()
        with pytest.raises(ShadowViolation):
            memory.apply(EVENTS[0])
        assert {method for method, _, _ in service.requests} == {"GET"}


def test_an_event_is_not_written_to_a_namespace_the_service_does_not_have():
    """404 on the check says "no such namespace yet": only a reset creates it as a shadow
    (the contract). An event sent there instead went to a scope nobody reported as a
    shadow, which a service that makes a scope on its first write makes an ordinary one."""
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        with pytest.raises(ShadowViolation, match="has no namespace 'healthd/shadow' .*reset"):
            memory.apply(EVENTS[0])
        assert [m for m, _, _ in service.requests] == ["GET"]
        memory.reset()  # what creates it
        memory.apply(EVENTS[0])
        assert service.applied["healthd/shadow"] == {EVENTS[0].id}


def test_a_target_not_declared_shadow_is_refused_before_any_request():
    with MemoryService() as service:
        with pytest.raises(TargetError, match="not declared shadow"):
            build_memory(parse_target(target(service, shadow="off")))
        assert service.requests == []


def test_server_errors_are_retried_and_a_lasting_failure_is_a_clear_error():
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        service.fail_next = [("/events", 503), ("/events", 500)]
        memory.apply(EVENTS[0])
        assert service.applied["healthd/shadow"] == {EVENTS[0].id}
        service.fail_next = [("/events", 500)] * 5
        with pytest.raises(MemoryAdapterError, match=r"apply ex-002: POST .* HTTP 500"):
            memory.apply(EVENTS[1])


def test_a_malformed_answer_names_the_field():
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        memory.apply(EVENTS[0])
        service.bad_query_body = {
            "facts": [
                {
                    "subject": "a",
                    "predicate": "b",
                    "value": "c",
                    "domain": "weather",
                    "record_id": "1",
                    "written_at": "2026-01-01T00:00:00Z",
                }
            ]
        }
        with pytest.raises(MemoryAdapterError, match=r"field 'facts\[0\].domain'"):
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
        service.bad_query_body = {
            "facts": [
                {
                    "subject": "a",
                    "predicate": "b",
                    "value": "c",
                    "domain": "tech",
                    "record_id": "1",
                    "written_at": "last tuesday",
                }
            ]
        }
        with pytest.raises(MemoryAdapterError, match=r"facts\[0\].written_at"):
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)


ITEM = {"text": "billing is owned by @bob", "record_id": "r1"}
FACT = {
    "subject": "billing",
    "predicate": "owner",
    "value": "@bob",
    "domain": "ownership",
    "record_id": "r1",
    "written_at": "2026-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"items": [{**ITEM, "flags": ["historical"]}]}, None),
        ({"facts": [{**FACT, "flags": ["soft_expired"]}]}, None),
        ({"items": [{**ITEM, "flags": ["historic"]}]}, "items[0].flags"),  # a typo
        ({"facts": [{**FACT, "flags": ["stale"]}]}, "facts[0].flags"),
        ({"items": [{**ITEM, "text": " "}]}, "items[0].text"),
        ({"facts": [{**FACT, "record_id": ""}]}, "facts[0].record_id"),
        ({"facts": [{**FACT, "subject": ""}]}, "facts[0].subject"),
        ({"facts": [{**FACT, "value": ""}]}, None),
    ],
)
def test_an_answer_is_refused_exactly_when_the_contract_refuses_it(body, field):
    """The contract's schema is the judge: what it refuses healthd refuses, naming the
    field (an unknown flag taken as none would score a historical record as current)."""
    document = yaml.safe_load(open(CONTRACT))
    schema = {"$ref": "#/components/schemas/QueryResult", **document}
    answer = {"facts": [], "items": [], **body}
    contract_refuses = not Draft202012Validator(schema).is_valid(answer)
    assert contract_refuses == (field is not None)
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        service.bad_query_body = answer
        if field is None:
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
            return
        with pytest.raises(MemoryAdapterError, match=re.escape(f"field '{field}'")):
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)


def test_an_answer_over_the_k_asked_for_is_scored_as_served_and_said_once_a_run():
    """The contract says "at most k"; a service that gives more was scored on all of it, so
    its coverage looked better than its k would give, and nothing said so."""
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service, top_k=2)))
        memory.reset()
        service.bad_query_body = {"items": [{**ITEM, "record_id": f"r{i}"} for i in range(5)]}
        # configured now, not on first use: a configuration an earlier test deferred would
        # otherwise replace capture_logs' own at the warning
        configure_logging("info", "json", io.StringIO())
        with capture_logs() as logs:
            first = memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
            memory.answer(PROBES.probes[1], EVENTS[0].timestamp)
            memory.begin_run()
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
    assert len(first.items) == 5
    said = [e for e in logs if e["event"].startswith("http memory: the service served more")]
    assert [(e["k"], e["served"], e["probe"]) for e in said] == [
        (2, 5, PROBES.probes[0].id),
        (2, 5, PROBES.probes[0].id),
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"facts": [{**FACT, "written_at": "2026-01-05T09:00:01Z"}]}, "facts[0].written_at"),
        ({"facts": [{**FACT, "validated_at": "2026-02-01T00:00:00Z"}]}, "facts[0].validated_at"),
        ({"items": [{**ITEM, "written_at": "2026-12-06T09:30:00Z"}]}, "items[0].written_at"),
    ],
)
def test_a_record_stamped_after_the_moment_asked_is_refused(body, field):
    """A service that stamps its records with its own clock, not the replayed event's time,
    serves every record as written "after" the moment asked, and so fresh: a memory that
    never re-validates anything scored freshness 1.000."""
    asked = EVENTS[0].timestamp  # 2026-01-05T09:00:00Z
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        service.bad_query_body = body
        with pytest.raises(MemoryAdapterError, match=re.escape(f"field '{field}'")) as raised:
            memory.answer(PROBES.probes[0], asked)
        assert "after the moment asked (2026-01-05T09:00:00Z)" in str(raised.value)
        service.bad_query_body = {"facts": [{**FACT, "written_at": "2026-01-05T09:00:00Z"}]}
        assert len(memory.answer(PROBES.probes[0], asked).facts) == 1


def test_a_record_time_a_store_rounded_up_to_its_precision_is_the_moment_asked():
    """A store that keeps whole seconds rounds, not truncates (PostgreSQL's timestamptz(0)
    reads 09:00:00.600 as 09:00:01, MySQL's DATETIME the same): the latest event, whose time
    is the moment asked, came back a fraction of a second after it, and the run failed
    though the service kept the replay's times."""
    asked = EVENTS[0].timestamp + timedelta(milliseconds=600)  # (Jira's times have ms)
    rounded = {**FACT, "written_at": "2026-01-05T09:00:01Z", "validated_at": None}
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        service.bad_query_body = {"facts": [rounded], "items": [{**ITEM, **rounded}]}
        answer = memory.answer(PROBES.probes[0], asked)
        assert [f.written_at for f in answer.facts] == [asked]
        assert [i.written_at for i in answer.items] == [asked]


def test_a_huge_unknown_domain_is_quoted_short():
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        service.bad_query_body = {
            "facts": [{"subject": "a", "predicate": "b", "value": "c", "domain": "x" * 200_000,
                       "record_id": "1", "written_at": "2026-01-01T00:00:00Z"}]
        }  # fmt: skip
        with pytest.raises(MemoryAdapterError, match="unknown domain 'xxx") as raised:
            memory.answer(PROBES.probes[0], EVENTS[0].timestamp)
    assert len(str(raised.value)) < 300


@pytest.mark.parametrize("key", [{"subject": "", "predicate": "exists"},
                                 {"subject": "auth-service", "predicate": ""}])  # fmt: skip
def test_a_changed_key_with_an_empty_name_is_refused_not_taken_as_no_change(key):
    """A key no fact can have would leave the probes that did change unasked."""
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        memory.apply(EVENTS[0])
        service.bad_changes_body = {"keys": [key]}
        with pytest.raises(MemoryAdapterError, match="field 'keys'"):
            memory.changed_keys(EVENTS[0].timestamp)


def test_the_token_is_sent_and_never_shown(monkeypatch):
    secret = "memtok-0123456789abcdef"
    monkeypatch.setenv("MEMORY_TOKEN", secret)
    with MemoryService(token=secret) as service:
        memory = build_memory(parse_target(target(service, token_env="MEMORY_TOKEN")))
        memory.reset()
        assert service.requests[-1][2] == f"Bearer {secret}"
        service.fail_next = [("/events", 500)] * 5
        with pytest.raises(MemoryAdapterError) as info:
            memory.apply(EVENTS[0])
        assert secret not in str(info.value)
    monkeypatch.delenv("MEMORY_TOKEN")
    with pytest.raises(TargetError, match="'MEMORY_TOKEN' .* is not set"):
        build_memory(parse_target(target(service, token_env="MEMORY_TOKEN")))


def test_only_the_token_is_sent_whatever_a_netrc_file_holds(monkeypatch, tmp_path):
    """requests puts a ~/.netrc entry's login in place of the Authorization header given:
    the service got Basic credentials instead of the token (401 with token_env set right),
    and without token_env a netrc 'default' entry went to whatever base_url names."""
    netrc = tmp_path / "netrc"
    netrc.write_text("default login alice password netrc-pw-0123456789\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    secret = "memtok-0123456789abcdef"
    monkeypatch.setenv("MEMORY_TOKEN", secret)
    with MemoryService() as service:
        build_memory(parse_target(target(service, token_env="MEMORY_TOKEN"))).reset()
        build_memory(parse_target(target(service, namespace="other"))).reset()
    assert {auth for _, _, auth in service.requests} == {f"Bearer {secret}", None}


def test_evaluate_runs_an_http_target_from_the_command_line():
    with MemoryService() as service:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "healthd",
                "evaluate",
                "--target",
                target(service),
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert '"kind": "http"' in done.stdout


def test_an_unreachable_service_is_one_clear_error_line():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "healthd",
            "evaluate",
            "--target",
            "http:base_url=http://127.0.0.1:9,namespace=s,shadow=on,max_retries=0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "http memory: checking namespace" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_password_in_the_targets_url_is_in_no_report(tmp_path):
    with MemoryService() as service:
        with_password = service.url.replace("http://", "http://bob:hunter2secret@")
        text = target(service).replace(service.url, with_password)
        done = subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--target", text, "--format", "json",
             "--html", str(tmp_path / "r.html")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "hunter2secret" not in done.stdout + done.stderr
    assert "hunter2secret" not in (tmp_path / "r.html").read_text()
    (result,) = json.loads(done.stdout)["targets"]
    assert result["name"].startswith("http:base_url=http://[REDACTED]@127.0.0.1:")


def test_a_targets_name_keeps_its_switches_and_hides_only_a_urls_credentials():
    # two targets that differ by a budget are two names (a report keys its targets by name)
    assert parse_target("reference:max_llm_tokens_per_day=20000").label == (
        "reference:max_llm_tokens_per_day=20000"
    )
    assert parse_target("http:base_url=https://bob:pw-123@mem.example/v1,shadow=on").label == (
        "http:base_url=https://[REDACTED]@mem.example/v1,shadow=on"
    )


def test_a_changes_answer_lost_on_the_way_leaves_no_changed_key_unasked():
    """The contract's changes drain what they return: asked again after an answer that never
    arrived, the service has nothing left to say, and the probes of the keys it drained would
    go unasked. The keys must come back, or None (re-ask every probe)."""
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        memory.reset()
        memory.apply(EVENTS[0])
        service.lose_next = ["/changes"]
        changed = memory.changed_keys(EVENTS[0].timestamp)
        assert changed is None or set(EVENTS[0].keys) <= changed
        memory.apply(EVENTS[1])  # and the operation is still used afterwards
        assert set(EVENTS[1].keys) <= (memory.changed_keys(EVENTS[1].timestamp) or set())


@pytest.mark.slow
def test_changes_answers_lost_on_the_way_leave_the_scores_exact():
    with MemoryService() as service:
        service.lose_next = ["/changes"] * 12  # the first twelve stages' answers
        over_http = run(target(service))
    in_process = run("reference")
    assert [s.metrics for s in over_http.stages] == [s.metrics for s in in_process.stages]


@pytest.mark.slow
def test_a_changes_operation_that_keeps_failing_is_not_asked_at_every_stage():
    """Each failed changes call costs the stage a request (a timeout's whole wait, for an
    endpoint that hangs) and every probe. Retried, a call that kept failing ended the run
    after max_retries + 1 attempts; not retried, it was asked again at every stage for the
    whole run: one endpoint that hangs made every stage wait timeout_seconds (10 s) first.
    After max_retries + 1 failures in a row the run goes on as without the operation."""
    with MemoryService() as service:
        service.fail_next = [("/changes", 500)] * len(EVENTS)
        over_http = run(target(service))
        asked = [p for _, p, _ in service.requests if p.endswith("/changes")]
    in_process = run("reference")
    assert [s.metrics for s in over_http.stages] == [s.metrics for s in in_process.stages]
    assert len(asked) == 4  # max_retries=3: the attempts one call had when it was retried


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # which one counts is the parser's choice: Python's takes the last, others the first
        (b'{"namespace": "healthd/shadow", "shadow": false, "shadow": true}', "'shadow' is given twice"),
        (b'{"namespace": "assistant/prod", "shadow": true}', "answered for 'assistant/prod'"),
        # the contract requires the name: an answer without one may be anyone's (a catch-all)
        (b'{"shadow": true}', "field 'namespace': expected the namespace's name, got nothing"),
        (b'{"namespace": null, "shadow": true}', "field 'namespace': expected the namespace's name, got null"),
    ],
)  # fmt: skip
def test_a_shadow_answer_that_may_not_be_about_the_namespace_is_not_taken(text, why):
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        service.namespace_text = text
        with pytest.raises((MemoryAdapterError, ShadowViolation), match=re.escape(why)):
            memory.reset()
        with pytest.raises((MemoryAdapterError, ShadowViolation)):
            memory.apply(EVENTS[0])
        assert {method for method, _, _ in service.requests} == {"GET"}


@pytest.mark.parametrize("named", ["healthd/shadow", "healthd%2Fshadow"])
def test_a_shadow_answer_may_name_the_namespace_as_its_path_segment_spells_it(named):
    """healthd asks about /v1/namespaces/healthd%2Fshadow: a service that keys its
    namespaces by the path segment as it arrives (Go's RawPath, an undecoded route
    parameter) answers with that spelling, the same namespace, and kept it until the
    answer's namespace was checked."""
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        service.namespace_text = json.dumps({"namespace": named, "shadow": True}).encode()
        memory.reset()
        memory.apply(EVENTS[0])
        assert [m for m, _, _ in service.requests] == ["GET", "POST", "POST"]


def test_a_redirect_is_not_followed_to_a_namespace_never_checked():
    """The shadow check vouches for one URL: a write sent on to another (another host, or
    another namespace on the same one) goes where no check looked."""
    with MemoryService() as elsewhere, MemoryService() as service:
        moved = f"{elsewhere.url}/v1/namespaces/assistant%2Fprod"
        service.redirect_writes = moved
        memory = build_memory(parse_target(target(service)))
        with pytest.raises(MemoryAdapterError, match=re.escape(f"HTTP 307 to '{moved}/reset'")):
            memory.reset()
        assert elsewhere.requests == []


@pytest.mark.parametrize(
    "secret", ["memtok-0123456789abcdef\n", " memtok-0123456789abcdef", "memtok-0123456789✓"]
)
def test_a_token_no_header_can_carry_is_one_clear_line_naming_its_variable(secret):
    """A token read from a file often ends in a line break; requests refuses the header
    (which was retried as a connection failure) and http.client crashes on a character
    outside Latin-1."""
    with MemoryService() as service:
        done = subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--target",
             target(service, token_env="MEMORY_TOKEN")],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "MEMORY_TOKEN": secret},
        )  # fmt: skip
        assert service.requests == []
    assert done.returncode == 2, done.stderr
    assert "'MEMORY_TOKEN' (token_env)" in done.stderr
    assert "Traceback" not in done.stderr
    assert "0123456789" not in done.stderr


def test_a_query_in_the_base_url_is_refused_and_shown_nowhere():
    """healthd adds /v1/namespaces/... after base_url: a query there would take the whole
    path in (every operation sent to one path), and a key in it was shown in the target's
    name in every report, metric and error."""
    with MemoryService() as service:
        text = target(service).replace(service.url, f"{service.url}/api?key=SECRETVALUE123")
        done = subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--target", text],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert service.requests == []
    assert done.returncode == 2, done.stderr
    assert "base_url" in done.stderr and "query" in done.stderr
    assert "SECRETVALUE123" not in done.stderr
    assert "SECRETVALUE123" not in parse_target(text).label


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (b'{"namespace": "healthd/shadow", "shadow": false}', "says namespace 'healthd/shadow' is not a shadow"),
        (b'{"namespace": "healthd/shadow", "shadow": "true"}', "field 'shadow': expected true or false, got 'true'"),
        (b'{"namespace": "healthd/shadow"}', "field 'shadow': expected true or false, got nothing"),
        (b'["healthd/shadow"]', "expected an object with 'shadow'"),
        (b"", "expected an object with 'shadow'"),
    ],
)  # fmt: skip
def test_a_shadow_answer_that_is_not_true_or_false_says_so(text, said):
    """A service answering "true" must not read that healthd was told 'not a shadow'."""
    with MemoryService() as service:
        memory = build_memory(parse_target(target(service)))
        service.namespace_text = text
        with pytest.raises(ShadowViolation, match=re.escape(said)):
            memory.reset()
        assert {method for method, _, _ in service.requests} == {"GET"}


def test_a_services_error_message_is_shown_on_one_line_without_its_control_characters():
    """A message with line breaks read as more problems than one, and an escape sequence
    in it reached the operator's terminal as it was."""
    with MemoryService() as service:
        hostile = "refused\nhealthd: error: all good\x1b[2J\x07"
        service._hook = lambda path, auth: (  # type: ignore[method-assign]
            (400, {"message": hostile}) if path.endswith("/reset") else None
        )
        done = subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--target", target(service)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert "returned HTTP 400: refused healthd: error: all good" in line
    assert "\x1b" not in line and "\x07" not in line


def _raw_server(answer: bytes) -> tuple[socket.socket, str]:
    """A server on 127.0.0.1 that answers every connection with ``answer`` and closes it
    (a listener that stops with the test: accept gives up after 30 s)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(30)

    def serve() -> None:
        with listener:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "ConnectionError (a status line that is not HTTP: 'SSH-2.0"),
        (b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 200 + b"\r\n", "(got more than 100 headers)"),
        (b"", "(Remote end closed connection without response)"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 90\r\n\r\n{}", "(IncompleteRead(2 bytes read, 88 more expected))"),
    ],
)  # fmt: skip
def test_an_answer_that_is_not_http_names_what_was_wrong(answer, why):
    """'failed: ConnectionError' alone left the team to guess between a service down, a
    port that speaks another protocol and an answer cut short."""
    listener, url = _raw_server(answer)
    with listener:
        text = f"http:base_url={url},namespace=s,shadow=on,max_retries=0"
        with pytest.raises(MemoryAdapterError, match=re.escape(why)):
            build_memory(parse_target(text)).reset()


@pytest.mark.parametrize("namespace", [".", ".."])
def test_a_namespace_that_is_a_dot_segment_is_refused_before_any_request(namespace):
    """URLs drop '.' and '..' segments: the check would ask about /v1/namespaces/ or /v1/
    and the writes go to /v1/namespaces/reset, /v1/events, no namespace's operations."""
    with MemoryService() as service:
        with pytest.raises(TargetError, match="switch namespace: .* a URL drops"):
            build_memory(parse_target(target(service, namespace)))
        assert service.requests == []


def test_a_page_that_is_not_json_is_named_by_its_content_type():
    """A sign-in page a proxy answers in the service's place (200, text/html) read only as
    'not valid JSON (Expecting value at column 1)'."""
    page = b"<!doctype html><title>Sign in</title>"
    listener, url = _raw_server(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(page), page)
    )
    with listener:
        text = f"http:base_url={url},namespace=s,shadow=on,max_retries=0"
        with pytest.raises(MemoryAdapterError, match=re.escape("(Content-Type: 'text/html")):
            build_memory(parse_target(text)).reset()


def test_a_redirect_is_named_without_its_query_and_in_a_line_of_bounded_length():
    """A sign-in proxy in front of the service redirects to its identity provider with a
    SAML request of kilobytes, a store to a presigned URL whose query is a credential: the
    message quoted the whole Location, the signature and every byte of it (up to 64 KiB)."""
    moved = "https://bucket.s3.example/v1/namespaces/s" + "/deep" * 400
    location = f"{moved}?X-Amz-Credential=AKIA&X-Amz-Signature={'5a' * 32}"
    listener, url = _raw_server(
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n"
        % location.encode()
    )
    with listener:
        text = f"http:base_url={url},namespace=s,shadow=on,max_retries=0"
        with pytest.raises(MemoryAdapterError) as caught:
            build_memory(parse_target(text)).reset()
    message = str(caught.value)
    assert "HTTP 307 to 'https://bucket.s3.example/v1/namespaces/s/deep/deep" in message
    assert "5a5a5a" not in message and "X-Amz-Signature" not in message
    assert len(message) < 500
