"""`healthd timeline --config` over real repositories, as a process: reproducible output
and the skipped-input warnings the daemon would log (issue 10, points 3, 4 and 12)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from git_faults import cutting_git


def healthd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )


def test_timeline_twice_with_wall_clock_revalidation_is_byte_identical(repo, tmp_path):
    repo.commit(
        "2019-05-01",
        {
            "CODEOWNERS": "* @core\n",
            "api/go.mod": "module api\n\nrequire github.com/lib/pq v1.10.9\n",
            "api/main.go": "package main\n",
        },
    )
    repo.commit("2019-06-01", {"doc/adr/0001-use-go.md": "# 1. Use Go\n\n## Status\n\nAccepted\n"})
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n'
        'revalidate_clock = "wall"\nrevalidate_interval = "P1D"\n\n'
        f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\n'
        'revalidate_clock = "wall"\nrevalidate_interval = "P1D"\n'
    )
    first = healthd("timeline", "--config", str(config))
    second = healthd("timeline", "--config", str(config))
    if first.stdout != second.stdout and _day(first.stdout) != _day(second.stdout):
        first, second = second, healthd("timeline", "--config", str(config))  # midnight UTC
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    sweep = [json.loads(line) for line in first.stdout.splitlines()]
    sweep = [e for e in sweep if e["type"] == "revalidated"]
    assert len(sweep) == 5  # owners, exists, language, dependency, decision
    assert all(e["metadata"]["revalidation"] == "sweep" for e in sweep)
    assert all(e["timestamp"].endswith("T00:00:00Z") for e in sweep)  # the day's bucket


def _day(jsonl: str) -> str:
    """The day of the sweep in a timeline (the runs' wall-clock bucket)."""
    return max(json.loads(line)["timestamp"][:10] for line in jsonl.splitlines())


def test_timeline_prints_skipped_inputs_on_stderr_naming_file_and_reason(repo, tmp_path):
    repo.commit(
        "2024-01-01",
        {"api/package.json": '{"dependencies": {"express": "4.18.2"}}', "api/a.js": ""},
    )
    repo.commit("2024-01-02", {"api/package.json": '{"dependencies": {"express": '})
    repo.commit("2024-01-03", {"doc/adr/0001-odd.md": "# 1. Odd\n\n## Status\n\nFrobnicated\n"})
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\nrevalidate_clock = "head"\n\n'
        f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\nrevalidate_clock = "head"\n'
    )
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert any(
        "source 'repo'" in line and "api/package.json@" in line and "invalid JSON" in line
        for line in warnings
    ), done.stderr
    assert any(
        "source 'decisions'" in line and "0001-odd.md" in line and "not understood" in line
        for line in warnings
    ), done.stderr
    assert any("source 'repo': 1 input(s) skipped" in line for line in warnings)
    assert all(json.loads(line) for line in done.stdout.splitlines())


def test_the_example_with_every_source_option_is_a_valid_configuration(tmp_path):
    """config/sources.toml documents every option; with its placeholder paths pointed at a
    real checkout and its token variables set, check-config accepts every one of them."""
    example = Path(__file__).resolve().parents[2] / "config" / "sources.toml"
    checkout = tmp_path / "shop"
    (checkout / "doc" / "adr").mkdir(parents=True)
    (checkout / "doc" / "adr" / "0001-record-architecture-decisions.md").write_text(
        "# 1. Record architecture decisions\n\n## Status\n\nAccepted\n"
    )
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, timeout=30)
    subprocess.run([*git, "add", "."], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "first"], check=True, timeout=30)
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text("")
    config = tmp_path / "sources.toml"
    config.write_text(
        example.read_text()
        .replace("/srv/checkouts/shop", str(checkout))
        .replace("/etc/healthd/timeline.jsonl", str(timeline))
    )
    env = dict(os.environ, GITHUB_TOKEN="t", JIRA_TOKEN="t", JIRA_USER="u", BACKSTAGE_TOKEN="t")
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "7 source(s)" in done.stdout


def test_a_dormant_repository_is_scored_before_and_after_its_revalidation_sweep(repo, tmp_path):
    """A repository last changed years ago ends with today's sweep re-stamping every fact;
    the report also gives the numbers at the last real change, so the sweep alone never
    decides the score (issue 10, point 3)."""
    repo.commit(
        "2019-05-01",
        {"CODEOWNERS": "* @core\n", "api/go.mod": "module api\n", "api/main.go": "package main\n"},
    )
    repo.commit("2019-06-01", {"CODEOWNERS": "* @platform\n"})
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n'
        'revalidate_clock = "wall"\nrevalidate_interval = "P1D"\n\n'
        '[targets.reference]\nkind = "reference"\nshadow = true\n'
    )
    done = healthd("evaluate", "--config", str(config), "--format", "json")
    assert done.returncode == 0, done.stderr
    (target,) = json.loads(done.stdout)["targets"]
    timeline = healthd("timeline", "--config", str(config)).stdout.splitlines()
    events = {e["id"]: e for e in map(json.loads, timeline)}
    last = target["last_change"]
    assert last["timestamp"].startswith("2019-06-01")
    assert events[last["event_id"]]["type"] != "revalidated"
    assert events[target["stages"][-1]["event_id"]]["metadata"]["revalidation"] == "sweep"
    assert last == target["stages"][last["index"] - target["stages"][0]["index"]]
    table = healthd("evaluate", "--config", str(config))
    assert "before the revalidation sweeps, at the last change" in table.stdout
    assert "2019-06-01" in table.stdout


def test_each_skipped_input_is_said_once_on_stderr(repo, tmp_path):
    repo.commit(
        "2024-01-01",
        {"CODEOWNERS": "* @core\n/billing/ billing-team\n", "billing/main.go": "package main\n"},
    )
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\nrevalidate_clock = "head"\n'
    )
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    about = [line for line in done.stderr.splitlines() if "billing-team" in line]
    assert len(about) == 1, done.stderr
    assert about[0].startswith("healthd: warning: source 'repo': CODEOWNERS@")


@pytest.mark.slow
def test_check_config_and_timeline_agree_on_where_the_adrs_are(repo, tmp_path):
    """An ADR/ layout needs no `dir`: check-config accepts it and timeline reads it; a
    repository with no records is an error in both, naming where healthd looked."""
    record = "# 1. Use Go\n\nDate: 2024-01-10\n\n## Status\n\nAccepted\n"
    repo.commit("2024-01-10", {"ADR/0001-use-go.md": record, "api/main.go": "package main\n"})
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\n')
    checked = healthd("check-config", "--config", str(config))
    assert checked.returncode == 0, checked.stderr
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    values = {json.loads(line)["fact"]["value"] for line in done.stdout.splitlines()}
    assert values == {"Use Go"}

    empty = tmp_path / "empty"
    empty.mkdir()
    subprocess.run(["git", "init", "-q", str(empty)], check=True, timeout=30)
    (empty / "main.go").write_text("package main\n")
    git = ["git", "-C", str(empty), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "."], check=True, timeout=30)
    subprocess.run([*git, "commit", "-qm", "first"], check=True, timeout=30)
    config.write_text(f'[sources.decisions]\nkind = "adr"\npath = "{empty}"\n')
    for command in ("check-config", "timeline"):
        failed = healthd(command, "--config", str(config))
        assert failed.returncode == 2, (command, failed.stderr)
        lines = failed.stderr.strip().splitlines()
        assert len(lines) == 1, (command, failed.stderr)
        assert "no ADR records found" in lines[0] and "docs/decisions" in lines[0], lines[0]


def test_check_config_names_the_source_when_its_git_is_killed(repo, tmp_path):
    repo.commit("2024-01-10", {"doc/adr/0001-use-go.md": "# 1. Use Go\n\n## Status\n\nAccepted\n"})
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\n')
    bin_dir, _ = cutting_git(tmp_path, "rev-parse", limit=0, times=100, then="die", match="--quiet")
    checked = subprocess.run(
        [sys.executable, "-m", "healthd", "check-config", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert checked.returncode == 2, checked.stderr
    assert checked.stderr.strip().splitlines() == [  # once read as "no commits yet": ok
        f"healthd: error: {config}: sources.decisions.path: cannot run git on {repo.path}: "
        "git rev-parse was killed (signal 9)"
    ]


def test_an_event_too_long_for_a_timeline_line_is_cut_so_evaluate_can_read_it(repo, tmp_path):
    # a record whose title is a megabyte: its event's line was written, then refused by the
    # reader (over its 1 MiB limit), by `evaluate` here and by a daemon reading back the
    # events it had stored, at every run
    title = "Use " + "Postgres " * 120_000
    repo.commit(
        "2024-01-10",
        {
            "doc/adr/0001-use-go.md": "# 1. Use Go\n\n## Status\n\nAccepted\n",
            "doc/adr/0002-big.md": f"# 2. {title}\n\n## Status\n\nAccepted\n",
        },
    )
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\n')
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    timeline = tmp_path / "timeline.jsonl"
    timeline.write_text(done.stdout)
    values = {
        json.loads(line)["fact"]["subject"]: json.loads(line)["fact"]["value"]
        for line in done.stdout.splitlines()
    }
    assert values["adr:1"] == "Use Go"
    assert values["adr:2"].startswith("Use Postgres Postgres")
    assert values["adr:2"].endswith(f"… ({len(title.strip()) - 16384} more characters)")
    [cut] = [line for line in done.stderr.splitlines() if "a timeline line holds" in line]
    said = f"healthd: warning: source 'decisions': a text of {len(title.strip()):,} characters"
    assert cut.startswith(said)
    assert cut.endswith("each such text is cut to its first 16,384 characters")
    evaluated = healthd("evaluate", "--timeline", str(timeline), "--format", "json")
    assert evaluated.returncode == 0, evaluated.stderr


def test_a_commit_from_the_future_is_one_refusal_and_the_commits_after_it_are_read(repo, tmp_path):
    # a broken clock dates one commit 2100; the commit after it is read as the daemon reads
    # it (docs/sources.md: one bad object never stops the source)
    repo.commit("2024-01-01", {"api/go.mod": "module api\n\nrequire github.com/lib/pq v1.10.9\n"})
    repo.write({"CODEOWNERS": "* @core\n"})
    repo.git("add", "-A")
    at_2100 = "@4102531200 +0000"  # 2100-01-02 (git reads no ISO date past 2099)
    env = {**repo.env(), "GIT_AUTHOR_DATE": at_2100, "GIT_COMMITTER_DATE": at_2100}
    subprocess.run(["git", "commit", "-qm", "from 2100"], cwd=repo.path, env=env, check=True)
    future = repo.head()
    repo.commit("2024-01-03", {"web/go.mod": "module web\n\nrequire github.com/gin v1.9.0\n"})
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n')
    for command in ("timeline", "evaluate"):
        done = healthd(command, "--config", str(config))
        assert done.returncode == 0, done.stderr
        refused = [line for line in done.stderr.splitlines() if "refused: timestamp" in line]
        assert len(refused) == 1 and f"git:{future[:12]}" in refused[0], done.stderr
        assert "2100-01-02" in refused[0] and "now plus max_future_skew" in refused[0]
    events = [
        json.loads(line)
        for line in healthd("timeline", "--config", str(config)).stdout.splitlines()
    ]
    assert ("web", "dependency:github.com/gin") in {
        (e["fact"]["subject"], e["fact"]["predicate"]) for e in events
    }
    assert not any(e["timestamp"].startswith("2100") for e in events)


def test_a_name_that_is_not_unicode_is_said_once_however_many_events_carry_it(repo, tmp_path):
    repo.commit("2024-01-01", {"README": "x\n"})
    directory = os.fsencode(repo.path) + b"/caf\xe9"
    os.mkdir(directory)
    with open(directory + b"/package.json", "w") as handle:
        handle.write('{"dependencies": {"left-pad": "1.0.0"}}\n')
    repo.commit("2024-01-02")
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n')
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "is not Unicode text" in line]
    assert len(said) == 1 and "caf\\udce9" in said[0], done.stderr
    assert done.stderr.splitlines()[-1] == "healthd: warning: source 'repo': 1 input(s) skipped"


def test_files_a_windows_editor_saved_with_a_byte_order_mark_read_as_without_one(repo, tmp_path):
    bom = "\ufeff"
    repo.commit(
        "2024-01-01",
        {
            "a/package.json": bom + '{"dependencies": {"left-pad": "1.0.0"}}\n',
            "b/requirements.txt": bom + "requests==2.0\nflask==3.0\n",
            "c/go.mod": bom + "module c\n\nrequire github.com/x/y v1.0.0\n",
            ".github/CODEOWNERS": bom + "* @alice\n/b/ @bob\n",
            "doc/adr/0001-use-postgres.md": bom + "# 1. Use Postgres\n\n## Status\n\nAccepted\n",
        },
    )
    config = tmp_path / "healthd.toml"
    config.write_text(
        f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n\n'
        f'[sources.decisions]\nkind = "adr"\npath = "{repo.path}"\n'
    )
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    added = {
        (e["fact"]["subject"], e["fact"]["predicate"], e["fact"]["value"])
        for e in map(json.loads, done.stdout.splitlines())
        if e["type"] == "added"
    }
    assert {
        ("a", "dependency:left-pad", "1.0.0"),
        ("b", "dependency:requests", "==2.0"),
        ("b", "dependency:flask", "==3.0"),
        ("c", "dependency:github.com/x/y", "v1.0.0"),
        ("*", "owners", "@alice"),
        ("/b/", "owners", "@bob"),
        ("adr:1", "decision", "Use Postgres"),
    } <= added


def test_manifest_entries_read_as_no_dependency_are_said_once_each_not_dropped_silently(
    repo, tmp_path
):
    repo.commit(
        "2024-01-01",
        {
            "a/package.json": '{"dependencies": {"left-pad": "1.0.0", "num": 1.5},'
            ' "devDependencies": ["jest"]}\n',
            "d/Cargo.toml": '[package]\nname = "d"\n[dependencies]\nrand = 0.8\nserde = "1"\n',
            "c/pyproject.toml": '[project]\nname = "c"\n'
            'dependencies = ["requests>=2", 5, "bad name!!"]\n'
            '[project.optional-dependencies]\ndev = "pytest"\n',
        },
    )
    # a later version keeps the bad entries: they are not said again
    repo.commit(
        "2024-01-02",
        {"d/Cargo.toml": '[package]\nname = "d"\n[dependencies]\nrand = 0.8\nserde = "2"\n'},
    )
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n')
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    prefix = "healthd: warning: source 'repo': "
    said = sorted(
        re.sub(r"@[0-9a-f]{12}:", ":", line.removeprefix(prefix))
        for line in done.stderr.splitlines()
        if line.endswith("; left out")
    )
    assert said == [
        "a/package.json: 'devDependencies' is an array, not an object; left out",
        "a/package.json: dependencies.num: a number is no version; left out",
        "c/pyproject.toml: project.dependencies: 'bad name!!' is not a requirement; left out",
        "c/pyproject.toml: project.dependencies: 5 is not a requirement; left out",
        "c/pyproject.toml: project.optional-dependencies.dev is a string, not an array of "
        "requirements; left out",
        "d/Cargo.toml: dependency 'rand': a number is no version; left out",
    ]
    dependencies = {
        (e["fact"]["subject"], e["fact"]["predicate"])
        for e in map(json.loads, done.stdout.splitlines())
    }
    assert {
        ("a", "dependency:left-pad"),
        ("c", "dependency:requests"),
        ("d", "dependency:serde"),
    } <= dependencies


def test_a_requirements_file_powershell_wrote_in_utf16_is_read_as_pip_reads_it(repo, tmp_path):
    # `pip freeze > requirements.txt` in Windows PowerShell writes UTF-16 with its mark
    (repo.path / "api").mkdir(parents=True)
    (repo.path / "api" / "requirements.txt").write_bytes(
        "flask==2.3.2\r\nrequests==2.31.0\r\n".encode("utf-16")
    )
    repo.commit("2024-01-01")
    config = tmp_path / "healthd.toml"
    config.write_text(f'[sources.repo]\nkind = "git"\npath = "{repo.path}"\n')
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    facts = {
        (e["fact"]["subject"], e["fact"]["predicate"], e["fact"]["value"])
        for e in map(json.loads, done.stdout.splitlines())
    }
    assert {
        ("api", "dependency:flask", "==2.3.2"),
        ("api", "dependency:requests", "==2.31.0"),
    } <= facts
