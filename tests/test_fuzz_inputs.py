"""Fuzzing every reader of operator-supplied files through the command line: random bytes,
random deep nestings and random numbers given to the timeline reader, the probe-file
reader, the config loader and `report --from`. Each ends in success, or in exit 2 with one
line on stderr; never an exception out of `main` (a traceback), and in bounded time (the
hypothesis deadline). FUZZ_EXAMPLES sets the examples per reader (default 60)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from healthd.cli import main

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=20_000,  # ms: a generous bound for a loaded machine; a hang fails
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
EVENT = {
    "id": "e1",
    "type": "added",
    "timestamp": "2026-01-01T00:00:00Z",
    "source": "fuzz",
    "fact": {"subject": "auth", "predicate": "owner", "value": "alice", "domain": "ownership"},
}
PROBE = {
    "question": "who owns auth?",
    "subject": "auth",
    "predicate": "owner",
    "domain": "ownership",
}


def _cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def _assert_one_line_or_success(code: int, stderr: str) -> None:
    if code == 0:
        return
    assert code == 2, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr[:2000]
    assert stderr.startswith("healthd: error: "), stderr[:2000]


# -- what is fed ------------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=1, max_value=20_000).map(lambda n: "9" * n),  # past the digit limit
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e999999", "-1e-999999", "NaN", "-Infinity", "0" * 5000, "-0"]),
)


def _deep(depth: int, opener: str) -> str:
    closer = {"[": "]", "{": "}", '{"a":': "}", "[[": "]]"}[opener]
    return opener * depth + ("1" if opener.endswith(":") else "") + closer * depth


deep_nestings = st.builds(
    _deep, st.integers(min_value=1, max_value=60_000), st.sampled_from(["[", '{"a":', "[["])
)
timestamps = st.one_of(
    st.datetimes().map(lambda d: d.isoformat()),
    st.builds(
        lambda d, h, m, sign: f"{d.isoformat()}{sign}{h:02d}:{m:02d}",
        st.datetimes(),
        st.integers(0, 23),
        st.integers(0, 59),
        st.sampled_from("+-"),
    ),
    st.sampled_from(["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]),
)


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, object]) -> str:
    """``base`` with one field (or one fact field) replaced by a number, a deep nesting,
    a timestamp or random text."""
    doc = json.loads(json.dumps(base))
    holder = doc["fact"] if "fact" in doc and draw(st.booleans()) else doc
    key = draw(st.sampled_from(sorted(holder)))
    raw = draw(st.one_of(numbers.map(str), deep_nestings, timestamps.map(json.dumps)))
    marker = "\x00HOLE\x00"
    holder[key] = marker
    return json.dumps(doc).replace(json.dumps(marker), raw)


def lines_of(base: dict[str, object]) -> st.SearchStrategy[bytes]:
    line = st.one_of(
        mutated(base).map(str.encode),
        deep_nestings.map(str.encode),
        numbers.map(lambda n: str(n).encode()),
        st.binary(max_size=200),
    )
    return st.lists(line, min_size=1, max_size=4).map(lambda ls: b"\n".join(ls) + b"\n")


def _file(directory: str, name: str, data: bytes) -> str:
    path = Path(directory) / name
    path.write_bytes(data)
    return str(path)


# -- the readers ------------------------------------------------------------------------------


@FUZZ
@given(lines_of(EVENT))
def test_the_timeline_reader(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _assert_one_line_or_success(*_cli("timeline", "--timeline", _file(tmp, "t.jsonl", data)))


@FUZZ
@given(lines_of(PROBE))
def test_the_probe_file_reader(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        timeline = _file(tmp, "t.jsonl", json.dumps(EVENT).encode() + b"\n")
        probes = _file(tmp, "p.jsonl", data)
        _assert_one_line_or_success(
            *_cli("evaluate", "--timeline", timeline, "--target", "naive", "--probes", probes)
        )


toml_values = st.one_of(
    numbers.map(str),
    st.integers(min_value=1, max_value=60_000).map(lambda n: "[" * n + "]" * n),
    st.integers(min_value=1, max_value=60_000).map(lambda n: "{a=" * n + "1" + "}" * n),
    st.sampled_from(["0000-00-00", "9999-12-31T23:59:59-24:00", "1979-05-27T07:32:00Z"]),
    st.text(max_size=40).map(json.dumps),
)
toml_keys = st.sampled_from(
    ["state_path", "forgetting_window", "checkpoint_events", "max_future_skew", "mode", "probes"]
)


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=300),
        st.builds(lambda k, v: f"{k} = {v}\n".encode(), toml_keys, toml_values),
        st.builds(
            lambda v: f'[sources.f]\nkind = "file"\npath = {v}\n'.encode(),
            toml_values,
        ),
    )
)
def test_the_config_loader(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = _file(tmp, "c.toml", data)
        _assert_one_line_or_success(*_cli("check-config", "--config", config))


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=300),
        deep_nestings.map(str.encode),
        numbers.map(lambda n: str(n).encode()),
        mutated({"probe_set": "x", "probes": 1, "targets": []}).map(str.encode),
    )
)
def test_report_from(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = _file(tmp, "r.json", data)
        html = str(Path(tmp) / "r.html")
        _assert_one_line_or_success(*_cli("report", "--from", source, "--html", html))


def test_a_source_path_holding_a_line_break_is_named_on_one_line() -> None:
    """Found by the fuzzer: ``path = "\\r"`` split the error across two lines."""
    with tempfile.TemporaryDirectory() as tmp:
        config = _file(tmp, "c.toml", b'[sources.0]\nkind="file"\npath="a\\rb\\nc"')
        code, stderr = _cli("check-config", "--config", config)
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert "a\\rb\\nc' does not exist" in stderr
