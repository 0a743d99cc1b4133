"""`healthd evaluate` and `healthd timeline` as a user runs them: a real process each time."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from timeline_builders import added, fact, revised

from healthd.cli import example_timeline_path
from healthd.scoring import DEFAULT_WINDOWS
from healthd.timeline import dumps_event


def healthd(*args: str, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="120")
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_evaluate_with_no_arguments_prints_a_table_per_target_and_domain():
    done = healthd("evaluate")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("reference") < out.index("naive")
    for word in (
        "freshness",
        "consistency",
        "coverage",
        "forgetting",
        "contamination",
        "conflicts",
        "tech",
        "ownership",
        "decision",
        "requirement",
    ):
        assert word in out
    assert "Traceback" not in done.stderr


def ratio(n, d):
    return n / d if d else None


def recompute(final, at):
    """The metrics of DESIGN.md, worked out from final.probes alone."""
    out = {}
    for bucket in ("all", "tech", "ownership", "decision", "requirement"):

        def keep(domain, bucket=bucket):
            return bucket in {"all", domain}

        pool = [
            (p, r)
            for p in final["probes"]
            for r in p["retrieved"]
            if "historical" not in r["flags"] and keep(r["domain"])
        ]
        probes = [p for p in final["probes"] if keep(p["domain"])]
        fresh = sum(
            at - datetime.fromisoformat(r["validated_at"].replace("Z", "+00:00"))
            <= DEFAULT_WINDOWS[r["domain"]]
            for _, r in pool
        )
        expected = [
            (p, e["value"])
            for p in final["probes"]
            for e in p["expected_facts"]
            if keep(e["domain"])
        ]
        covered = sum(
            any(r["value"] == v and "historical" not in r["flags"] for r in p["retrieved"])
            for p, v in expected
        )

        def live(p):
            return [r for r in p["retrieved"] if "historical" not in r["flags"]]

        contaminated = sum(
            any(r["status"] in ("superseded", "invalidated") for r in live(p)) for p in probes
        )
        conflicts = sum(
            any(
                len({r["value"] for r in live(p) if (r["subject"], r["predicate"]) == key}) > 1
                for key in {(r["subject"], r["predicate"]) for r in live(p)}
            )
            for p in probes
        )
        out[bucket] = {
            "freshness": ratio(fresh, len(pool)),
            "consistency": ratio(sum(r["status"] == "current" for _, r in pool), len(pool)),
            "coverage": ratio(covered, len(expected)),
            "contamination": ratio(contaminated, len(probes)),
            "conflicts": conflicts,
        }
    return out


def test_json_report_has_the_contract_shape_and_final_metrics_are_recomputable(tmp_path):
    target = tmp_path / "report.json"
    done = healthd("evaluate", "--format", "json", "--output", str(target))
    assert done.returncode == 0, done.stderr
    report = json.loads(target.read_text())
    assert set(report) == {"probe_set", "targets"}
    assert isinstance(report["probe_set"]["version"], str) and report["probe_set"]["count"] > 0
    assert [t["name"] for t in report["targets"]] == ["reference", "naive"]
    for target_report in report["targets"]:
        # Extended for served text (the reader's label and how the served items were read),
        # the retrieval fingerprint, the target's role and its LLM calls.
        assert set(target_report) == {
            "name", "kind", "role", "reader", "reading", "stages", "final", "retrieval", "llm"
        }  # fmt: skip
        # neither calls an LLM or an embedding endpoint, and nothing is left uncounted
        assert target_report["llm"] == {
            "calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "calls_without_usage": 0,
            "by_purpose": {},
            "not_counted": [],
        }
        assert target_report["role"] == (
            "baseline" if target_report["kind"] == "naive" else "subject"
        )
        assert target_report["reader"] == "default-9"
        assert target_report["reading"] == {"items": 0, "unread": 0, "metadata_mismatch": 0}
        assert target_report["retrieval"] == {
            "embedder": "none",  # neither embeds: nothing for a retrieval layer to change
            "dimensions": 0,
            "libraries": {},
            "reader": "structured/1",
            "fingerprint": target_report["retrieval"]["fingerprint"],
            "changed_items": 0,
        }
        stage = target_report["stages"][0]
        assert set(stage) == {"index", "event_id", "timestamp", "metrics"}
        assert set(stage["metrics"]) == {"all", "tech", "ownership", "decision", "requirement"}
        assert set(stage["metrics"]["all"]) == {
            "freshness",
            "consistency",
            "coverage",
            "forgetting",
            "contamination",
            "conflicts",
        }
        final = target_report["final"]
        assert final["metrics"] == target_report["stages"][-1]["metrics"]
        probe = final["probes"][0]
        assert set(probe) == {
            "id",
            "question",
            "subject",
            "predicate",
            "domain",
            "expected",
            "expected_facts",
            "retrieved",
        }
        for p in final["probes"]:
            for r in p["retrieved"]:
                assert set(r) == {
                    "subject",
                    "predicate",
                    "value",
                    "domain",
                    "status",
                    "validated_at",
                    "flags",
                }
                assert r["status"] in ("current", "superseded", "invalidated", "unknown")
        at = datetime.fromisoformat(target_report["stages"][-1]["timestamp"].replace("Z", "+00:00"))
        again = recompute(final, at)
        for bucket, metrics in again.items():
            for name, value in metrics.items():
                assert final["metrics"][bucket][name] == pytest.approx(value), (bucket, name)


def test_questions_read_like_questions():
    done = healthd("evaluate", "--format", "json", "--target", "naive")
    questions = {p["question"] for p in json.loads(done.stdout)["targets"][0]["final"]["probes"]}
    assert "Who owns billing?" in questions
    assert "What programming language is auth-service written in?" in questions
    assert "Which version of postgres does payments-v1 depend on?" in questions


def test_modes_and_forgetting_window_are_honoured(tmp_path):
    full = json.loads(healthd("evaluate", "--format", "json", "--mode", "full").stdout)
    inc = json.loads(healthd("evaluate", "--format", "json", "--mode", "incremental").stdout)
    assert full == inc
    wide = json.loads(
        healthd(
            "evaluate", "--format", "json", "--target", "naive", "--forgetting-window", "500"
        ).stdout
    )
    assert wide["targets"][0]["final"]["metrics"]["all"]["forgetting"] is None


def test_timeline_prints_the_jsonl_it_read(tmp_path):
    done = healthd("timeline")
    assert done.returncode == 0
    with open(example_timeline_path(), encoding="utf-8") as handle:
        original = [json.loads(line) for line in handle]
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    assert printed == original


def test_a_custom_timeline_and_probe_file(tmp_path):
    node, go = fact("auth", "language", "node"), fact("auth", "language", "go")
    timeline = tmp_path / "t.jsonl"
    timeline.write_text(
        dumps_event(added("e1", 0, node)) + "\n" + dumps_event(revised("e2", 3, node, go)) + "\n"
    )
    probes = tmp_path / "probes.jsonl"
    probes.write_text(
        json.dumps(
            {
                "id": "stack",
                "question": "What is auth built with?",
                "subject": "auth",
                "predicate": "language",
                "domain": "tech",
            }
        )
        + "\n"
    )
    done = healthd(
        "evaluate",
        "--timeline",
        str(timeline),
        "--probes",
        str(probes),
        "--target",
        "reference",
        "--format",
        "json",
    )
    report = json.loads(done.stdout)
    assert report["probe_set"]["count"] == 2
    ids = {p["id"] for p in report["targets"][0]["final"]["probes"]}
    assert "stack" in ids
    assert len(report["targets"][0]["stages"]) == 2


@pytest.mark.parametrize(
    "args, words",
    [
        (["--target", "pinecone"], "unknown kind 'pinecone'"),
        (["--target", "reference:ttl=sometimes"], "switch ttl='sometimes': expected on or off"),
        (["--target", "reference:forget=yes"], "unknown switch 'forget'"),
        (["--timeline", "BAD"], "line 2, field 'fact.domain': unknown domain 'weather'"),
        (["--timeline", "MISSING"], "cannot read timeline"),
        (["--probes", "BADPROBES"], "line 1, field 'subject'"),
    ],
)
def test_errors_are_one_clear_line_and_exit_code_2(tmp_path, args, words):
    bad = tmp_path / "bad.jsonl"
    good_line = dumps_event(added("e1", 0, fact("a", "b", "c")))
    bad.write_text(
        good_line + "\n" + good_line.replace('"tech"', '"weather"').replace("e1", "e2") + "\n"
    )
    bad_probes = tmp_path / "probes.jsonl"
    bad_probes.write_text('{"question": "?", "predicate": "p", "domain": "tech"}\n')
    args = [
        {
            "BAD": str(bad),
            "MISSING": str(tmp_path / "none.jsonl"),
            "BADPROBES": str(bad_probes),
        }.get(a, a)
        for a in args
    ]
    done = healthd("evaluate", *args)
    assert done.returncode == 2
    assert words in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stdout == ""


def test_bad_flags_exit_2():
    done = healthd("evaluate", "--forgetting-window", "0")
    assert done.returncode == 2 and "must be at least 1" in done.stderr


def test_a_long_run_on_a_terminal_shows_a_progress_bar(tmp_path):
    import pty

    timeline = tmp_path / "long.jsonl"
    with timeline.open("w") as out:
        for n in range(600):
            out.write(
                dumps_event(added(f"e{n}", n / 10, fact(f"svc-{n % 50}", f"p{n}", "v"))) + "\n"
            )
    output = bytearray()

    def read(fd):
        data = os.read(fd, 4096)
        output.extend(data)
        return data

    env_backup = dict(os.environ)
    os.environ.update(COLUMNS="100", TERM="xterm")
    try:
        status = pty.spawn(
            [
                sys.executable,
                "-m",
                "healthd",
                "evaluate",
                "--timeline",
                str(timeline),
                "--target",
                "naive",
            ],
            read,
        )
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    text = output.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0
    assert "━" in text and "/600" in text  # rich's bar and its n/total counter
    assert "consistency" in text


def test_timeline_from_a_configured_git_source_prints_only_jsonl(tmp_path):
    repo = tmp_path / "repo"
    (repo / "billing").mkdir(parents=True)
    (repo / "billing" / "main.go").write_text("package main\n")
    (repo / "billing" / "go.mod").write_text(
        "module billing\n\nrequire github.com/lib/pq v1.10.9\n"
    )
    env = dict(
        os.environ,
        GIT_AUTHOR_DATE="2026-03-01T10:00:00Z",
        GIT_COMMITTER_DATE="2026-03-01T10:00:00Z",
    )
    for cmd in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "billing"],
    ):
        subprocess.run(["git", *cmd], cwd=repo, check=True, env=env)
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.repo]\nkind = "git"\npath = "{repo}"\nrevalidate_clock = "head"\n')
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert {(e["fact"]["predicate"], e["fact"]["value"]) for e in events} >= {
        ("exists", "true"),
        ("language", "go"),
        ("dependency:github.com/lib/pq", "v1.10.9"),
    }
    assert all(e["timestamp"] == "2026-03-01T10:00:00Z" for e in events)


@pytest.mark.parametrize(
    "args, words",
    [
        (["--output", "/nonexistent/dir/report.txt"], "cannot write the report"),
        (["--target", "reference:ttl_tech=99999999999999d"], "is too long"),
    ],
)
def test_more_bad_input_is_exit_2_without_a_traceback(args, words):
    done = healthd("evaluate", *args)
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def test_an_absurd_staleness_window_in_the_environment_is_a_named_config_error(tmp_path):
    env = dict(os.environ, HEALTHD_STALENESS__OWNERSHIP="99999999999999d")
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "check-config"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "staleness.ownership" in done.stderr and "too long" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        # a misspelt variable adds a key the file does not have
        ("HEALTHD_SERVR__PORT", "9000", "environment HEALTHD_SERVR__PORT: servr: unknown key"),
        # a variable that sets a value the file also sets: the variable's value is the one read
        (
            "HEALTHD_SOURCES__EX__PATH",
            "/nonexistent",
            "environment HEALTHD_SOURCES__EX__PATH: sources.ex.path: /nonexistent does not exist",
        ),
        # a misspelt table: the variables under it, though the error is on a key they lack
        (
            "HEALTHD_SOURCES__EXX__PATH",
            "t.jsonl",
            "environment HEALTHD_SOURCES__EXX__PATH: sources.exx.kind: Field required",
        ),
        # a whole-target check on a value the variable overrides
        (
            "HEALTHD_TARGETS__REFERENCE__SHADOW",
            "false",
            "environment HEALTHD_TARGETS__REFERENCE__SHADOW: targets.reference.shadow: ",
        ),
        # a table both give: the file and the variable are named
        (
            "HEALTHD_TARGETS__REFERENCE__TLL",
            "off",
            "{config} (with environment HEALTHD_TARGETS__REFERENCE__TLL): targets.reference: "
            "unknown switch 'tll'",
        ),
        (None, None, "{config}: servr: unknown key"),
    ],
)
def test_a_bad_setting_names_the_variable_or_the_file_that_gave_it(
    tmp_path, monkeypatch, variable, value, line
):
    from healthd.errors import ConfigError
    from healthd.settings import load_settings

    config = tmp_path / "healthd.toml"
    example = Path(__file__).resolve().parents[1] / "healthd" / "data" / "example_timeline.jsonl"
    config.write_text(
        f'[sources.ex]\nkind = "file"\npath = "{example}"\n\n'
        '[targets.reference]\nkind = "reference"\nshadow = true\n'
        + ("" if variable else "\n[servr]\nport = 1\n")
    )
    for key in [k for k in os.environ if k.startswith("HEALTHD_")]:
        monkeypatch.delenv(key)
    if variable:
        monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as refused:
        load_settings(str(config), reach=True)  # as check-config loads it
    assert str(refused.value).startswith(line.format(config=config)), str(refused.value)


@pytest.mark.parametrize("variable", ["HEALTHD_TARGETS__TEAM__TTL", "HEALTHD_TARGETS__Team__TTL"])
def test_a_variable_reaches_a_target_the_file_names_in_upper_case(tmp_path, monkeypatch, variable):
    """Variables are read in any case, so `[targets.Team]` is the table they name, not a
    second target `team` with no kind."""
    from healthd.settings import load_settings

    config = tmp_path / "healthd.toml"
    config.write_text('example = true\n\n[targets.Team]\nkind = "reference"\nshadow = true\n')
    for key in [k for k in os.environ if k.startswith("HEALTHD_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv(variable, "off")
    targets = load_settings(str(config)).targets
    assert list(targets) == ["Team"] and targets["Team"].options["ttl"] == "off"


def test_evaluate_with_a_config_checks_the_reader_flag_before_pulling_and_links_its_runbook(
    tmp_path, monkeypatch, capsys
):
    from healthd.cli import main as cli_main

    for key in [k for k in os.environ if k.startswith("HEALTHD_")]:
        monkeypatch.delenv(key)
    example = Path(__file__).resolve().parents[1] / "healthd" / "data" / "example_timeline.jsonl"
    config = tmp_path / "healthd.toml"
    config.write_text(
        'runbook_url = "https://wiki.example.com/healthd/runbook.md"\n\n'
        f'[sources.ex]\nkind = "file"\npath = "{tmp_path / "not-yet.jsonl"}"\n'
    )
    assert cli_main(["evaluate", "--config", str(config), "--reader", "oracle"]) == 2
    said = capsys.readouterr().err
    assert "unknown reader 'oracle'" in said and "not-yet" not in said  # before any pull

    config.write_text(config.read_text().replace(str(tmp_path / "not-yet.jsonl"), str(example)))
    html = tmp_path / "report.html"
    assert cli_main(["evaluate", "--config", str(config), "--html", str(html)]) == 0
    capsys.readouterr()
    links = re.findall(r"<a href='([^']*#healthd[a-z]+)'", html.read_text())
    assert links and all(
        link.startswith("https://wiki.example.com/healthd/runbook.md#") for link in links
    )


def test_json_report_streamed_from_spools_is_the_report_held_in_memory(tmp_path) -> None:
    """Stages are spooled to disk as they come, not kept; the bytes written are exactly
    those of dumping the whole report at once (several targets, the bundled example)."""
    from healthd.evaluator import evaluate
    from healthd.exporters.report import report_json
    from healthd.memory import build_memory, parse_target
    from healthd.probes import build_probe_set
    from healthd.reading import build_reader, versioned
    from healthd.timeline import read_timeline

    out = tmp_path / "report.json"
    done = healthd(
        "evaluate", "--format", "json", "--target", "reference", "--target", "naive",
        "--output", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = list(read_timeline(str(example_timeline_path())))
    probes = build_probe_set(events)
    results = []
    for target in ("reference", "naive"):
        spec = parse_target(target)
        memory = build_memory(spec)
        results.append(evaluate(events, memory, probes, name=spec.label, kind=spec.kind))
        memory.close()
    # The probe set's version carries the reader's: a changed reader is a visible re-baseline.
    version = versioned(probes.version, build_reader("default"))
    expected = json.dumps(report_json(results, version, len(probes)), indent=1) + "\n"
    assert len(results[0].stages) > 1
    assert out.read_text(encoding="utf-8") == expected


def _mixed_timeline(events: int, keys: int, seed: int = 3) -> list:
    """Several thousand events of every kind: revisions, invalidations, re-validations,
    dependencies that cascade, multi-valued keys, and some late events with older times."""
    import random

    from timeline_builders import invalidated, revalidated

    rng = random.Random(seed)
    predicates = ("owner", "language", "status", "tags")
    held: dict[tuple[str, str], str] = {}
    out = []
    for n in range(events):
        at = n / 20 - (rng.random() * 30 if rng.random() < 0.05 else 0)
        subject, predicate = f"svc-{rng.randrange(keys // 4)}", rng.choice(predicates)
        value = f"v{rng.randrange(6)}"
        deps = [(subject, "exists")] if predicate == "status" else []
        current = held.get((subject, predicate))
        roll = rng.random()
        if current is None or roll < 0.2:
            held[(subject, predicate)] = value
            out.append(
                added(f"e{n}", at, fact(subject, predicate, value), deps, predicate == "tags")
            )
            if (subject, "exists") not in held:
                held[(subject, "exists")] = "true"
                out.append(added(f"x{n}", at, fact(subject, "exists", "true")))
        elif roll < 0.45:
            held[(subject, predicate)] = value
            out.append(
                revised(
                    f"e{n}",
                    at,
                    fact(subject, predicate, current),
                    fact(subject, predicate, value),
                    deps,
                )
            )
        elif roll < 0.55:
            out.append(invalidated(f"e{n}", at, fact(subject, predicate, current)))
            del held[(subject, predicate)]
        elif roll < 0.6 and (subject, "exists") in held:
            out.append(invalidated(f"e{n}", at, fact(subject, "exists", "true"), "decommissioned"))
            del held[(subject, "exists")]
        else:
            out.append(revalidated(f"e{n}", at, fact(subject, predicate, current), deps))
    return out


@pytest.mark.slow
def test_a_long_timeline_streamed_from_its_file_reports_what_the_whole_list_gives(tmp_path):
    """`evaluate` reads the file once for the probes, then replays it target by target
    without holding the events; table and JSON are byte for byte what evaluating the list
    held in memory gives, for every target."""
    import io

    from rich.console import Console

    from healthd.evaluator import evaluate
    from healthd.exporters.report import render_table, report_json
    from healthd.memory import build_memory, parse_target
    from healthd.probes import build_probe_set
    from healthd.reading import build_reader, versioned
    from healthd.timeline import read_timeline, write_timeline

    path = tmp_path / "long.jsonl"
    odd = added('ünï "quoted" \\ id', 100, fact("svc-0", "owner", "@ü"))
    with path.open("w", encoding="utf-8") as handle:
        write_timeline([*_mixed_timeline(3000, 200), odd], handle)
    events = read_timeline(str(path))
    probes = build_probe_set(events)
    results = []
    for target in ("reference", "naive", "reference:ttl=off"):
        spec = parse_target(target)
        memory = build_memory(spec)
        results.append(evaluate(events, memory, probes, name=spec.label, kind=spec.kind))
        memory.close()
    table = io.StringIO()
    version = versioned(probes.version, build_reader("default"))
    render_table(results, version, len(probes), Console(file=table, width=110))
    expected = {
        "table": table.getvalue(),
        "json": json.dumps(report_json(results, version, len(probes)), indent=1) + "\n",
    }
    assert results[0].last_change is None and len(results[0].stages) == len(events) > 3000
    for fmt in ("table", "json"):
        done = healthd(
            "evaluate", "--timeline", str(path), "--format", fmt, "--target", "reference",
            "--target", "naive", "--target", "reference:ttl=off",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected[fmt], fmt


def test_a_timeline_piped_to_evaluate_is_read_once_and_replayed_for_every_target(tmp_path):
    from healthd.timeline import write_timeline

    path = tmp_path / "t.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        write_timeline(_mixed_timeline(300, 40), handle)
    from_file = healthd("evaluate", "--timeline", str(path), "--format", "json")
    assert from_file.returncode == 0, from_file.stderr
    piped = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--timeline", "/dev/stdin",
         "--format", "json"],
        input=path.read_text(encoding="utf-8"), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    report = json.loads(piped.stdout)
    assert [t["name"] for t in report["targets"]] == ["reference", "naive"]
    assert all(len(t["stages"]) > 300 for t in report["targets"])
    assert piped.stdout == from_file.stdout


def test_evaluating_the_reference_memory_loads_no_other_adapter():
    """A run needs only the adapters of its targets (the HTTP and SDK clients cost tens of
    megabytes); an unknown kind still names every kind there is."""
    code = (
        "import contextlib, io, sys\n"
        "from healthd.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['evaluate', '--target', 'reference']) == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('healthd.memory.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "healthd.memory.reference" in done.stdout
    assert not any(
        f"healthd.memory.{kind}'" in done.stdout for kind in ("agentcore", "http", "mem0")
    )
    unknown = healthd("evaluate", "--target", "pinecone")
    assert unknown.returncode == 2
    known = "agentcore, graphiti, http, langmem, letta, mem0, naive, reference, zep"
    assert f"known kinds: {known}" in unknown.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_disk_under_the_output_is_one_line_not_a_traceback():
    done = healthd("evaluate", "--output", "/dev/full")
    assert done.returncode == 1, done.stderr
    assert done.stderr == "healthd: error: No space left on device\n"
    for command in ("timeline", "evaluate"):  # the output on a redirected stdout
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                [sys.executable, "-m", "healthd", command],
                stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
            )  # fmt: skip
        assert done.returncode == 1, (command, done.stderr)
        assert done.stderr == "healthd: error: No space left on device\n", (command, done.stderr)


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "soon"])
def test_healthcheck_timeout_must_be_a_sensible_number_of_seconds(value):
    done = healthd("healthcheck", "--timeout", value)
    assert done.returncode == 2
    assert "argument --timeout:" in done.stderr.splitlines()[-1]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("after", [3, 30_000])
def test_a_repeated_id_with_other_content_is_a_warning_keeping_the_first_wherever_it_is(
    tmp_path, after
):
    # 30,000 lines on, the repeat is past the file source's 4 MiB read: the pull meets it
    # in a second piece, where it was an error; within one piece it was a warning
    def event(ident: str, subject: str, value: str = "go") -> str:
        fact = {"subject": subject, "predicate": "language", "value": value, "domain": "tech"}
        return json.dumps(
            {"id": ident, "type": "added", "timestamp": "2024-01-01T00:00:00Z",
             "source": "f", "fact": fact}
        )  # fmt: skip

    lines = [event(f"e{n}", f"svc-{n}") for n in range(after)] + [event("e0", "svc-0", "rust")]
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("\n".join(lines) + "\n")
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.f]\nkind = "file"\npath = "{timeline}"\n')
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "duplicate" in done.stderr and "'e0'" in done.stderr, done.stderr
    printed = [json.loads(text) for text in done.stdout.splitlines()]
    assert len(printed) == after
    assert next(e for e in printed if e["id"] == "e0")["fact"]["value"] == "go"
