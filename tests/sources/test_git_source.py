"""The `git` source: what a user sees in the timeline of a real repository."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from git_faults import cutting_git

from healthd.errors import ConfigError
from healthd.model import FactKey
from healthd.sources import build_source, source_kinds
from healthd.timeline import dumps_event, loads_timeline


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def git_source(repo, **options):
    options = {
        "path": str(repo.path),
        "revalidate_clock": "head",
        "revalidate_interval": "P3650D",
        **options,
    }
    return build_source("git", "repo", options)


class _At:
    """Any repository directory, where a test needs one that GitRepo did not build."""

    def __init__(self, path):
        self.path = path


def pull(source, cursor=None, **kw):
    result = source.pull(cursor, **kw)
    assert result.error is None, result.error
    return result


PYPROJECT = """\
[project]
name = "billing"
dependencies = ["requests>=2.31,<3", "SQLAlchemy==2.0.1"]
"""


# --------------------------------------------------------------------------- ownership


def test_codeowners_reorganisation_deletion_and_readdition(repo, brief):
    repo.commit(
        "2024-01-01", {"CODEOWNERS": "# owners\n*  @acme/core\n/services/billing/ @alice @bob\n"}
    )
    repo.commit(
        "2024-02-01",
        {
            "CODEOWNERS": "*  @acme/core\n"
            "/services/billing/ @carol @alice  # reorg\n"
            "/docs/ @acme/writers\n"
        },
    )
    repo.commit(
        "2024-03-01", {"CODEOWNERS": "/services/billing/ @alice @carol\n/docs/ @acme/writers\n"}
    )
    repo.commit("2024-04-01", {"CODEOWNERS": None})
    repo.commit("2024-05-01", {".github/CODEOWNERS": "/docs/ @acme/writers\n"})

    events = pull(git_source(repo)).events

    assert brief(events) == [
        ("2024-01-01", "added", "* owners=@acme/core"),
        ("2024-01-01", "added", "/services/billing/ owners=@alice @bob"),
        ("2024-02-01", "added", "/docs/ owners=@acme/writers"),
        (
            "2024-02-01",
            "revised",
            "/services/billing/ owners=@alice @bob -> /services/billing/ owners=@alice @carol",
        ),
        ("2024-03-01", "invalidated", "* owners=@acme/core"),
        ("2024-04-01", "invalidated", "/docs/ owners=@acme/writers"),
        ("2024-04-01", "invalidated", "/services/billing/ owners=@alice @carol"),
        ("2024-05-01", "added", "/docs/ owners=@acme/writers"),
    ]
    assert {ev.fact.domain for ev in events} == {"ownership"}
    reasons = [ev.reason for ev in events if ev.type == "invalidated"]
    assert reasons == [
        "pattern * removed from CODEOWNERS",
        "CODEOWNERS deleted",
        "CODEOWNERS deleted",
    ]
    assert events[-1].metadata["file"] == ".github/CODEOWNERS"


def test_github_directory_codeowners_takes_precedence_over_the_root_one(repo, brief):
    repo.commit("2024-01-01", {"CODEOWNERS": "* @root-team\n"})
    repo.commit("2024-01-02", {".github/CODEOWNERS": "* @github-team\n"})
    events = pull(git_source(repo)).events
    assert brief(events) == [
        ("2024-01-01", "added", "* owners=@root-team"),
        ("2024-01-02", "revised", "* owners=@root-team -> * owners=@github-team"),
    ]


def test_owners_carried_over_to_another_codeowners_file_are_said_to_come_from_it(repo):
    """dependabot/cli's 3038c3a moved its CODEOWNERS, unchanged, into .github/: its patterns
    are read from .github/CODEOWNERS from then on (prometheus moved the other way in
    39c7fca0e9), so removing one later is a pattern removed from that file, not the
    old file "deleted" again."""
    owners = "* @dependabot/maintainers\n/updater/ @dependabot/maintainers @jakecoffman\n"
    repo.commit("2022-09-23", {"CODEOWNERS": owners})
    repo.commit("2022-09-28", {"CODEOWNERS": None, ".github/CODEOWNERS": owners})
    repo.commit("2023-03-01", {".github/CODEOWNERS": "* @dependabot/maintainers\n"})
    events = pull(git_source(repo)).events
    ended = events[-1]
    assert (ended.type, ended.fact.subject) == ("invalidated", "/updater/")
    assert ended.reason == "pattern /updater/ removed from .github/CODEOWNERS"
    assert ended.metadata["file"] == ".github/CODEOWNERS"


def test_owners_a_higher_codeowners_file_supersedes_end_saying_so(repo, brief):
    """NHSDigital/software-engineering-quality-framework's 9a4e515 added .github/CODEOWNERS
    while the root CODEOWNERS still held `*`: GitHub reads only the first, so `*` has no
    owner from then on, though the root file still names one; the next day's 09a7623
    deleted the root file."""
    team = "@NHSDigital/quality-framework-admins"
    repo.commit("2020-08-11", {"CODEOWNERS": f"* {team}\n"})
    repo.commit("2021-11-08", {".github/CODEOWNERS": f"/.github {team}\n/.vscode {team}\n"})
    events = pull(git_source(repo)).events
    assert brief(events)[1:] == [
        ("2021-11-08", "added", f"/.github owners={team}"),
        ("2021-11-08", "added", f"/.vscode owners={team}"),
        ("2021-11-08", "invalidated", f"* owners={team}"),
    ]
    assert events[-1].reason == ".github/CODEOWNERS takes precedence over CODEOWNERS"


def test_an_owner_respelt_in_another_case_is_the_same_owner(repo, brief):
    """GitHub logins and e-mail addresses are one account whatever their case
    (github.com/Alice is github.com/alice): writing `@Alice` as `@alice`, or naming her
    twice, changes no owner, so the timeline shows no ownership change for it."""
    repo.commit("2024-01-01", {"CODEOWNERS": "/billing/ @Alice Kim.Lee@Acme.io\n"})
    repo.commit("2024-02-01", {"CODEOWNERS": "/billing/ @alice kim.lee@acme.io @ALICE\n"})
    repo.commit("2024-03-01", {"CODEOWNERS": "/billing/ @alice @bob\n"})
    assert brief(pull(git_source(repo)).events) == [
        ("2024-01-01", "added", "/billing/ owners=@Alice Kim.Lee@Acme.io"),
        (
            "2024-03-01",
            "revised",
            "/billing/ owners=@Alice Kim.Lee@Acme.io -> /billing/ owners=@alice @bob",
        ),
    ]


def test_an_owner_respelt_before_a_cursor_ends_as_the_timeline_spells_it(repo, brief):
    """The next run rebuilds the owners at its cursor from the file, where `@Alice` is now
    written `@alice`: she leaves as the timeline named her, or her ownership never ends."""
    repo.commit("2024-01-01", {"CODEOWNERS": "/billing/ @Alice\n"})
    repo.commit("2024-02-01", {"CODEOWNERS": "/billing/ @alice\n"})
    source = git_source(repo)
    first = pull(source)
    repo.commit("2024-03-01", {"CODEOWNERS": "/billing/ @bob\n"})
    assert brief(pull(source, first.cursor).events) == [
        ("2024-03-01", "revised", "/billing/ owners=@Alice -> /billing/ owners=@bob"),
    ]


def test_an_owner_rule_removed_and_added_again_after_a_cursor_reads_as_a_full_pull(repo, brief):
    """A rule removed and then written again is a new ownership, spelt as its new line
    writes it, whether or not a cursor lies between: a resumed pull reads what a full one
    reads."""
    repo.commit("2024-01-01", {"CODEOWNERS": "/billing/ @Alice\n"})
    repo.commit("2024-02-01", {"CODEOWNERS": "/billing/ @alice\n"})
    source = git_source(repo)
    first = pull(source)
    repo.commit("2024-03-01", {"CODEOWNERS": "/search/ @bob\n"})
    repo.commit("2024-04-01", {"CODEOWNERS": "/search/ @bob\n/billing/ @alice\n"})
    resumed = brief(pull(source, first.cursor).events)
    assert resumed == brief(pull(git_source(repo)).events)[1:]
    assert resumed[-1] == ("2024-04-01", "added", "/billing/ owners=@alice")


# --------------------------------------------------------------------------- manifests


def test_dependency_bump_is_a_revision_and_a_dropped_one_an_invalidation(repo, brief):
    repo.commit(
        "2024-01-01",
        {"services/billing/pyproject.toml": PYPROJECT, "services/billing/app.py": "print()\n"},
    )
    repo.commit(
        "2024-02-01",
        {
            "services/billing/pyproject.toml": PYPROJECT.replace(
                '"requests>=2.31,<3", ', '"requests>=2.32,<3", '
            )
        },
    )
    repo.commit(
        "2024-03-01",
        {"services/billing/pyproject.toml": PYPROJECT.replace('"requests>=2.31,<3", ', "")},
    )

    events = pull(git_source(repo, service_roots=["services/*"])).events

    assert brief(events) == [
        ("2024-01-01", "added", "services/billing exists=true"),
        ("2024-01-01", "added", "services/billing dependency:requests=>=2.31,<3"),
        ("2024-01-01", "added", "services/billing dependency:sqlalchemy===2.0.1"),
        ("2024-01-01", "added", "services/billing language=python"),
        (
            "2024-02-01",
            "revised",
            "services/billing dependency:requests=>=2.31,<3 -> "
            "services/billing dependency:requests=>=2.32,<3",
        ),
        ("2024-03-01", "invalidated", "services/billing dependency:requests=>=2.32,<3"),
    ]
    dropped = events[-1]
    assert dropped.reason == "requests dropped from services/billing/pyproject.toml"
    assert dropped.depends_on == (FactKey("services/billing", "exists"),)
    assert dropped.metadata["manifest"] == "services/billing/pyproject.toml"


MANIFESTS = {
    "py/pyproject.toml": """\
[tool.poetry.dependencies]
python = "^3.11"
Django = "^5.0"
celery = { version = "5.3.6", extras = ["redis"] }
[tool.poetry.group.dev.dependencies]
pytest = "^8"
""",
    "py/requirements-dev.txt": "black==24.1.0  # formatter\n-r requirements.txt\n"
    "mypy>=1.8 ; python_version >= '3.11' \\\n  --hash=sha256:abc\n",
    "web/package.json": json.dumps(
        {"name": "web", "dependencies": {"react": "^18.2.0"}, "devDependencies": {"vite": "5.0.12"}}
    ),
    "gosvc/go.mod": "module example.com/gosvc\n\ngo 1.22\n\nrequire (\n"
    "\tgithub.com/gin-gonic/gin v1.9.1\n"
    "\tgolang.org/x/sys v0.16.0 // indirect\n)\n"
    "require github.com/google/uuid v1.6.0\n",
    "rs/Cargo.toml": '[package]\nname = "rs"\n[dependencies]\nserde = { version = "1.0", '
    'features = ["derive"] }\ntokio = "1.35"\n',
    "jvm/pom.xml": """<?xml version="1.0"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <properties><spring.version>6.1.3</spring.version></properties>
  <dependencies>
    <dependency><groupId>org.springframework</groupId><artifactId>spring-core</artifactId>
      <version>${spring.version}</version></dependency>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId></dependency>
  </dependencies>
</project>
""",
    "package.json": json.dumps({"devDependencies": {"prettier": "3.2.4"}}),
}


def test_every_manifest_kind_gives_its_dependencies_per_service(repo):
    repo.commit("2024-01-01", MANIFESTS)
    events = pull(git_source(repo)).events
    deps = {
        (ev.fact.subject, ev.fact.predicate[len("dependency:") :]): ev.fact.value
        for ev in events
        if ev.fact.predicate.startswith("dependency:")
    }
    assert deps == {
        ("py", "django"): "^5.0",
        ("py", "celery"): "5.3.6",
        ("py", "pytest"): "^8",
        ("py", "black"): "==24.1.0",
        ("py", "mypy"): ">=1.8",
        ("web", "react"): "^18.2.0",
        ("web", "vite"): "5.0.12",
        ("gosvc", "github.com/gin-gonic/gin"): "v1.9.1",
        ("gosvc", "github.com/google/uuid"): "v1.6.0",
        ("rs", "serde"): "1.0",
        ("rs", "tokio"): "1.35",
        ("jvm", "org.springframework:spring-core"): "6.1.3",
        ("jvm", "junit:junit"): "*",
        (".", "prettier"): "3.2.4",
    }
    root = [ev for ev in events if ev.fact.subject == "."]
    assert root and all(ev.depends_on == () for ev in root)  # the repository always exists


def test_an_unreadable_manifest_is_skipped_with_its_reason_and_facts_kept(repo, brief):
    repo.commit("2024-01-01", {"api/package.json": '{"dependencies": {"express": "4.18.2"}}'})
    repo.commit("2024-01-02", {"api/package.json": '{"dependencies": {"express": '})
    result = pull(git_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "api exists=true"),
        ("2024-01-01", "added", "api dependency:express=4.18.2"),
    ]
    assert len(result.skipped) == 1
    assert result.skipped[0].startswith("api/package.json@") and "invalid JSON" in result.skipped[0]


def test_a_go_mod_go_refuses_for_a_nul_byte_keeps_its_facts_and_says_so(repo, brief):
    repo.commit("2024-01-01", {"svc/go.mod": "module m\nrequire a.io/x v1.0.0\n"})
    bad = repo.commit("2024-01-02", {"svc/go.mod": "module m\n\x00require a.io/x v1.0.0\n"})
    result = pull(git_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "svc exists=true"),
        ("2024-01-01", "added", "svc dependency:a.io/x=v1.0.0"),
    ]
    assert result.skipped == [
        f"svc/go.mod@{bad[:12]}: line 2 holds '\\x00', a character Go refuses; kept as before"
    ]


def test_a_manifest_or_codeowners_not_utf8_is_read_as_replaced_and_said_once_per_spell(repo):
    """A file saved as Latin-1 (an editor's default on some systems) reads with U+FFFD where
    its byte was; the pull says so, naming the file, the byte and its offset, when the file
    first has it, not again for each later version that keeps it, and again once it comes
    back after a version that was text."""
    owners = "* @acme/core\n/billing/ jos\xe9@acme.example\n".encode("latin-1")
    repo.commit("2024-01-01", {"CODEOWNERS": owners, "api/package.json": b'{"name": "caf\xe9"}'})
    repo.commit("2024-01-02", {"api/package.json": b'{"name": "caf\xe9", "dependencies": {}}'})
    repo.commit("2024-01-03", {"api/package.json": '{"name": "cafe"}'})
    repo.commit("2024-01-04", {"api/package.json": b'{"name": "caf\xe9"}'})
    result = pull(git_source(repo))
    shas = repo.git("log", "--reverse", "--format=%h", "--abbrev=12").split()
    assert result.skipped == [
        f"CODEOWNERS@{shas[0]}: not UTF-8 text: byte e9 at offset 26 (and any other it "
        "cannot read) read as U+FFFD",
        f"api/package.json@{shas[0]}: not UTF-8 text: byte e9 at offset 13 (and any other it "
        "cannot read) read as U+FFFD",
        f"api/package.json@{shas[3]}: not UTF-8 text: byte e9 at offset 13 (and any other it "
        "cannot read) read as U+FFFD",
    ]
    owned = {
        ev.fact.subject: ev.fact.value for ev in result.events if ev.fact.predicate == "owners"
    }
    assert owned == {"*": "@acme/core", "/billing/": "jos\ufffd@acme.example"}


def test_a_manifest_over_the_size_bound_is_passed_over_named_and_its_facts_kept(repo, brief):
    from healthd.sources._gitrepo import MAX_BLOB_BYTES, Repo

    repo.commit("2024-01-01", {"api/package.json": '{"dependencies": {"express": "4.18.2"}}'})
    # a generated package.json committed by mistake, one byte over the bound
    padding = " " * (MAX_BLOB_BYTES - 60)
    huge = '{"dependencies": {"express": "5.0.0", "left-pad": "1.3.0"}}' + padding
    huge = huge + " " * (MAX_BLOB_BYTES + 1 - len(huge))
    big = repo.commit("2024-01-02", {"api/package.json": huge})
    repo.commit("2024-01-03", {"api/package.json": '{"dependencies": {"express": "5.0.0"}}'})
    result = pull(git_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "api exists=true"),
        ("2024-01-01", "added", "api dependency:express=4.18.2"),
        ("2024-01-03", "revised", "api dependency:express=4.18.2 -> api dependency:express=5.0.0"),
    ]
    blob = repo.git("rev-parse", f"{big}:api/package.json")
    assert result.skipped == [
        f"api/package.json@{big[:12]}: blob {blob[:12]} is {MAX_BLOB_BYTES + 1} bytes, over "
        f"the {MAX_BLOB_BYTES >> 20} MiB a file is read up to; kept as before"
    ]
    one = Repo(str(repo.path))  # one blob at a time, as a decision record is read
    try:
        assert one.blob(blob) is None
        assert one.unread(blob).startswith(f"blob {blob[:12]} is {MAX_BLOB_BYTES + 1} bytes")
        assert one.blob(repo.git("rev-parse", "HEAD:api/package.json")) == (
            b'{"dependencies": {"express": "5.0.0"}}'
        )  # the exchange after the blob passed over is in step
    finally:
        one.close()


@pytest.mark.parametrize("seconds", [300_000_000_000, 9_223_372_036_854_775_000])
def test_a_commit_time_past_what_a_date_holds_is_read_as_its_last_second_and_said(
    repo, brief, seconds
):
    # git's %ct is any unsigned 64-bit number: year 11476, or past what the C library takes
    go_mod = "module m\n\ngo 1.22\n\nrequire github.com/x/y {}\n"
    repo.commit("2024-01-01", {"api/go.mod": go_mod.format("v1.0.0"), "api/main.go": "package m\n"})
    repo.write({"api/go.mod": go_mod.format("v1.1.0")})
    repo.git("add", "-A")
    stamp = f"@{seconds} +0000"  # a broken clock's, or a forged one: git takes any
    env = {**repo.env(), "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    subprocess.run(["git", "commit", "-qm", "forged"], cwd=repo.path, env=env, check=True)
    forged = repo.head()
    result = pull(git_source(repo))
    revised = "api dependency:github.com/x/y=v1.0.0 -> api dependency:github.com/x/y=v1.1.0"
    assert ("9999-12-31", "revised", revised) in brief(result.events)
    assert result.skipped == [
        f"commit {forged[:12]}: its time, {seconds} s from 1970, is beyond what a date holds; "
        "read as 9999-12-31T23:59:59+00:00"
    ]


def test_a_commit_git_reads_no_time_in_is_read_at_the_time_of_the_one_before_and_said(repo, brief):
    go_mod = "module m\n\ngo 1.22\n\nrequire github.com/x/y {}\n"
    repo.commit("2024-01-01", {"api/go.mod": go_mod.format("v1.0.0"), "api/main.go": "package m\n"})
    up_to_parent = pull(git_source(repo))
    repo.write({"api/go.mod": go_mod.format("v1.1.0")})
    repo.git("add", "-A")
    tree, parent = repo.git("write-tree"), repo.head()
    body = f"tree {tree}\nparent {parent}\nauthor A <a@e> \ncommitter C <c@e> \n\nforged\n"
    forged = (
        subprocess.run(  # no date at all: git's own commands refuse to write one
            ["git", "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
            cwd=repo.path,
            input=body.encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    repo.git("update-ref", "refs/heads/main", forged)
    result = pull(git_source(repo))
    revised = "api dependency:github.com/x/y=v1.0.0 -> api dependency:github.com/x/y=v1.1.0"
    said = f"commit {forged[:12]}: git reads no time in it (''); read as 2024-01-01T00:00:00+00:00"
    assert ("2024-01-01", "revised", revised) in brief(result.events)  # never before it
    assert result.skipped == [said]
    after = pull(git_source(repo), up_to_parent.cursor)  # the forged commit read first
    assert brief(after.events) == [("2024-01-01", "revised", revised)]
    assert after.skipped == [said]


def test_one_exchange_holds_at_most_its_bound_and_a_blob_past_it_is_read_when_wanted(
    repo, monkeypatch
):
    from healthd.sources import _gitrepo

    monkeypatch.setattr(_gitrepo, "MAX_EXCHANGE_BYTES", 300)  # (32 MiB in use)
    files = {
        f"m{i}/package.json": json.dumps({"dependencies": {f"p{i}": "1.0.0"}, "about": "x" * 80})
        for i in range(5)
    }
    repo.commit("2024-01-01", files)
    shas = [repo.git("rev-parse", f"HEAD:{path}") for path in files]
    one = _gitrepo.Repo(str(repo.path))
    try:
        held = one.fetch_blobs(shas)
        assert 0 < len(held) < len(files)
        assert sum(len(data or b"") for data in held.values()) <= 300
        one.use_prefetched(held)
        assert [one.blob(sha) for sha in shas] == [text.encode() for text in files.values()]
    finally:
        one.close()
    result = pull(git_source(repo))  # every module's dependency, whichever exchange held it
    deps = {(e.fact.subject, e.fact.predicate) for e in result.events}
    assert {(f"m{i}", f"dependency:p{i}") for i in range(5)} <= deps
    assert result.skipped == []


def _git_cut(tmp_path, monkeypatch, command: str, limit: int, times: int, then: str) -> Path:
    """``git`` on PATH cut as :func:`git_faults.cutting_git` cuts it; the file counting runs."""
    bin_dir, runs = cutting_git(tmp_path, command, limit=limit, times=times, then=then)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return runs


def _thirty_requirements(version: str) -> str:
    # thirty direct requirements: a file of about 1.5 KB
    lines = "".join(f"\tgithub.com/acme/lib{i:02d} v1.0.{i}\n" for i in range(30))
    return f"module m\n\ngo 1.22\n\nrequire (\n\tgithub.com/x/y {version}\n{lines})\n"


def test_a_blob_cut_short_by_a_dying_cat_file_is_read_again_whole(repo, tmp_path, monkeypatch):
    repo.commit(
        "2024-01-01", {"api/go.mod": _thirty_requirements("v1.0.0"), "api/main.go": "package m\n"}
    )
    repo.commit("2024-02-01", {"api/go.mod": _thirty_requirements("v1.1.0")})
    whole = pull(git_source(repo))
    runs = _git_cut(tmp_path, monkeypatch, "cat-file", limit=800, times=1, then="die")
    again = pull(git_source(repo))
    assert [dumps_event(e) for e in again.events] == [dumps_event(e) for e in whole.events]
    assert again.skipped == whole.skipped == []
    assert len(runs.read_text().split()) == 2  # cut mid-way in the first blob, then run again


def test_a_blob_cat_file_never_sends_whole_is_named_and_no_cut_text_is_read(
    repo, tmp_path, monkeypatch, brief
):
    repo.commit(
        "2024-01-01",
        {"web/package.json": '{"dependencies": {"react": "18.2.0"}}', "web/a.js": ""},
    )
    repo.commit(
        "2024-02-01", {"api/go.mod": _thirty_requirements("v1.0.0"), "api/main.go": "package m\n"}
    )
    repo.commit("2024-03-01", {"api/go.mod": _thirty_requirements("v1.1.0")})
    _git_cut(tmp_path, monkeypatch, "cat-file", limit=800, times=1000, then="die")
    result = pull(git_source(repo))
    # the small manifest is read; of the go.mod, whose every version is cut, nothing is:
    # a cut text would have given some of its requirements and dropped the rest
    assert brief(result.events) == [
        ("2024-01-01", "added", "web exists=true"),
        ("2024-01-01", "added", "web dependency:react=18.2.0"),
        ("2024-01-01", "added", "web language=javascript"),
        ("2024-02-01", "added", "api exists=true"),
        ("2024-02-01", "added", "api language=go"),
    ]
    sizes = {len(_thirty_requirements(v).encode()) for v in ("v1.0.0", "v1.1.0")}
    assert len(result.skipped) == 2
    for line, when in zip(result.skipped, ("2024-02-01", "2024-03-01"), strict=True):
        commit = repo.git("log", "-1", "--format=%H", f"--until={when}T23:59:59Z")
        blob = repo.git("rev-parse", f"{commit}:api/go.mod")
        assert line.startswith(f"api/go.mod@{commit[:12]}: git cat-file stopped after sending ")
        sent, size = line.split("sending ")[1].split(" of ")[0], line.split("'s ")[1].split()[0]
        assert 0 < int(sent) < int(size) and int(size) in sizes and blob[:12] in line
        assert line.endswith(" bytes; kept as before")


@pytest.mark.parametrize("limit", [0, 20])  # before its header, and inside it
def test_a_cat_file_killed_before_a_blob_or_inside_its_header_is_started_again(
    repo, tmp_path, monkeypatch, limit
):
    repo.commit("2024-01-01", {"api/go.mod": _thirty_requirements("v1.0.0"), "api/x.go": ""})
    repo.commit("2024-02-01", {"api/go.mod": _thirty_requirements("v1.1.0")})
    whole = pull(git_source(repo))
    # the exchange's cat-file, then the first one reading a blob alone
    runs = _git_cut(tmp_path, monkeypatch, "cat-file", limit=limit, times=2, then="die")
    again = pull(git_source(repo))
    assert [dumps_event(e) for e in again.events] == [dumps_event(e) for e in whole.events]
    assert again.skipped == [] and len(runs.read_text().split()) == 3


def test_a_blob_read_alone_is_read_again_when_cat_file_dies_in_it_or_while_idle(
    repo, tmp_path, monkeypatch
):
    from healthd.sources._gitrepo import Repo

    repo.commit("2024-01-01", {"a.txt": "a" * 1000, "b.txt": "b" * 1000, "c.txt": "c" * 1000})
    a, b, c = (repo.git("rev-parse", f"HEAD:{name}") for name in ("a.txt", "b.txt", "c.txt"))
    header = len(f"{a} blob 1000\n")
    # the first cat-file sends a whole, then dies 500 bytes into b
    runs = _git_cut(tmp_path, monkeypatch, "cat-file", limit=2 * header + 1501, times=1, then="die")
    one = Repo(str(repo.path))
    try:
        assert one.blob(a) == b"a" * 1000
        assert one.blob(b) == b"b" * 1000  # from a second cat-file
        assert len(runs.read_text().split()) == 2
        assert one._cat is not None
        os.kill(one._cat.pid, signal.SIGKILL)  # dies while idle (the OOM killer)
        one._cat.wait()
        assert one.blob(c) == b"c" * 1000  # from a third
        assert len(runs.read_text().split()) == 3
    finally:
        one.close()


def _bumps(repo, count: int) -> None:
    """``count`` commits an hour apart (git fast-import), each bumping api's one requirement."""
    stream = []
    for n in range(count):
        text = f"module m\n\ngo 1.22\n\nrequire github.com/x/y v1.0.{n}\n"
        files = f"M 100644 inline api/go.mod\ndata {len(text)}\n{text}\n"
        if n == 0:
            files += "M 100644 inline api/main.go\ndata 10\npackage m\n\n"
        stamp = 1_704_067_200 + 3600 * n
        stream.append(
            f"commit refs/heads/main\ncommitter T <t@e> {stamp} +0000\ndata 4\nbump\n{files}"
        )
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo.path,
        input="".join(stream).encode(),
        check=True,
    )
    repo.git("reset", "-q", "--hard", "main")


def _ids(events) -> list[str]:
    return [e.id for e in events]


def test_a_git_log_killed_mid_history_fails_the_pull_and_what_it_kept_resumes_whole(
    repo, tmp_path, monkeypatch
):
    _bumps(repo, 400)
    whole = pull(git_source(repo))
    assert len(whole.events) == 402
    stream = repo.git("log", "--root", "--raw", "--no-abbrev", "-z", "--format=%x01%H %ct")
    limit = len(stream.encode()) * 3 // 4  # (the stream healthd reads, as near as matters)
    runs = _git_cut(tmp_path, monkeypatch, "log", limit=limit, times=1, then="die")
    cut = git_source(repo).pull(None)
    assert len(runs.read_text().split()) == 1
    # killed three quarters through: an error, never a history read as if it were whole
    assert cut.error is not None and cut.error.startswith("git log failed")
    assert 0 < len(cut.events) < len(whole.events) and cut.cursor is not None
    rest = pull(git_source(repo), cut.cursor)  # the next run, from what the cut one kept
    assert _ids(cut.events) + _ids(rest.events) == _ids(whole.events)


@pytest.mark.parametrize("command", ["log", "cat-file"])
def test_a_git_that_hangs_ends_at_the_runs_timeout_and_nothing_is_lost(
    repo, tmp_path, monkeypatch, command
):
    from healthd import _stop

    _bumps(repo, 300)
    whole = pull(git_source(repo))
    _git_cut(tmp_path, monkeypatch, command, limit=4000, times=1, then="stall")
    started = time.monotonic()
    with _stop.run_deadline(1.5, "run_timeout=1.5s"):
        hung = git_source(repo).pull(None)
    assert time.monotonic() - started < 10  # the stalled git holds its pipe open for an hour
    assert hung.error == f"git {command} stopped, the run took its run_timeout=1.5s"
    rest = pull(git_source(repo), hung.cursor)
    assert _ids(hung.events) + _ids(rest.events) == _ids(whole.events)


# --------------------------------------------------------------------------- services


def test_service_rewritten_from_node_to_go_is_a_language_revision(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "auth/index.js": "x",
            "auth/lib/token.js": "x",
            "auth/README.md": "# auth",
            "auth/package.json": '{"dependencies": {"jsonwebtoken": "9.0.2"}}',
        },
    )
    repo.commit("2024-06-01", {"auth/main.go": "package main"})  # one Go file: still node
    repo.commit(
        "2024-07-01",
        {
            "auth/index.js": None,
            "auth/lib": None,
            "auth/package.json": None,
            "auth/token.go": "package main",
            "auth/go.mod": "module auth\nrequire github.com/golang-jwt/jwt/v5 v5.2.0\n",
        },
    )
    events = pull(git_source(repo)).events
    assert brief(events) == [
        ("2024-01-01", "added", "auth exists=true"),
        ("2024-01-01", "added", "auth dependency:jsonwebtoken=9.0.2"),
        ("2024-01-01", "added", "auth language=javascript"),
        ("2024-07-01", "added", "auth dependency:github.com/golang-jwt/jwt/v5=v5.2.0"),
        ("2024-07-01", "revised", "auth language=javascript -> auth language=go"),
        ("2024-07-01", "invalidated", "auth dependency:jsonwebtoken=9.0.2"),
    ]
    assert events[4].depends_on == (FactKey("auth", "exists"),)


def test_copies_of_minified_and_jquery_or_bootstrap_scripts_are_no_javascript(repo, brief):
    """A Flask app serving its own copies of jQuery and Bootstrap (lawrluor/matchstats,
    superrcoop/abcrecipe) is written in Python: as GitHub Linguist's vendor.yml says, a
    minified script and a library's copy are vendored code, not the module's."""
    repo.commit(
        "2024-01-01",
        {
            "app/__init__.py": "",
            "app/views.py": "",
            "app/models.py": "",
            "app/static/js/main.js": "",
            "app/static/js/jquery.min.js": "",
            "app/static/js/jquery-ui.js": "",
            "app/static/js/jquery.easing.1.3.js": "",
            "app/static/js/bootstrap.js": "",
            "app/static/js/bootstrap.min.js": "",
            "app/static/js/popper.min.js": "",
            "app/static/js/wow-min.js": "",
        },
    )
    assert [line for line in brief(pull(git_source(repo)).events) if "language" in line[2]] == [
        ("2024-01-01", "added", "app language=python"),
    ]


def test_removing_a_module_invalidates_its_existence_and_its_facts_cascade(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "services/payments-v1/requirements.txt": "psycopg2==2.9.9\n",
            "services/payments-v1/app.py": "",
            "services/payments-v2/app.py": "",
        },
    )
    repo.commit("2024-09-01", {"services/payments-v1": None})
    events = pull(git_source(repo, service_roots=["services/*"])).events
    assert brief(events) == [
        ("2024-01-01", "added", "services/payments-v1 exists=true"),
        ("2024-01-01", "added", "services/payments-v2 exists=true"),
        ("2024-01-01", "added", "services/payments-v1 dependency:psycopg2===2.9.9"),
        ("2024-01-01", "added", "services/payments-v1 language=python"),
        ("2024-01-01", "added", "services/payments-v2 language=python"),
        ("2024-09-01", "invalidated", "services/payments-v1 exists=true"),
    ]
    exists = FactKey("services/payments-v1", "exists")
    assert all(ev.depends_on == (exists,) for ev in events[2:4])
    assert events[-1].reason == "services/payments-v1 removed"


def test_top_level_directories_are_services_unless_hidden_or_excluded(repo):
    repo.commit(
        "2024-01-01",
        {"api/a.py": "", ".github/workflows/ci.yml": "", "docs/index.md": "", "README.md": ""},
    )
    events = pull(git_source(repo, exclude=["docs"])).events
    assert [(ev.fact.subject, ev.fact.predicate) for ev in events] == [
        ("api", "exists"),
        ("api", "language"),
    ]


# --------------------------------------------------------------------------- ids, cursor


def test_re_extraction_gives_identical_events_and_ids(repo):
    repo.commit("2024-01-01", MANIFESTS)
    repo.commit("2024-02-01", {"CODEOWNERS": "* @a\n", "web/app.ts": ""})
    first = [dumps_event(ev) for ev in pull(git_source(repo)).events]
    second = [dumps_event(ev) for ev in pull(git_source(repo)).events]
    assert first == second
    ids = [json.loads(line)["id"] for line in first]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("git:") for i in ids)
    assert loads_timeline("\n".join(first))  # valid timeline JSONL


def test_incremental_run_reads_only_the_new_commits(repo, brief):
    repo.commit("2024-01-01", {"api/package.json": '{"dependencies": {"express": "4.18.2"}}'})
    source = git_source(repo)
    full = pull(source)
    assert len(full.events) == 2
    repo.commit("2024-02-01", {"api/package.json": '{"dependencies": {"express": "4.19.0"}}'})
    repo.commit("2024-03-01", {"CODEOWNERS": "/api/ @web\n"})
    new = pull(source, full.cursor)
    assert brief(new.events) == [
        ("2024-02-01", "revised", "api dependency:express=4.18.2 -> api dependency:express=4.19.0"),
        ("2024-03-01", "added", "/api/ owners=@web"),
    ]
    # the same events, with the same ids, as a full re-extraction gives for those commits
    again = pull(git_source(repo)).events
    assert [dumps_event(e) for e in again[-2:]] == [dumps_event(e) for e in new.events]
    assert pull(source, new.cursor).events == []
    assert json.loads(new.cursor)["commit"] == repo.head()


def test_force_push_triggers_a_full_re_extraction_and_says_so(repo, brief):
    repo.commit("2024-01-01", {"api/a.go": ""})
    repo.commit("2024-02-01", {"api/b.py": "", "api/c.py": ""})
    source = git_source(repo)
    cursor = pull(source).cursor
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.commit("2024-02-02", {"api/b.rs": ""})
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    result = pull(source, cursor)
    assert brief(result.events) == [
        ("2024-01-01", "added", "api exists=true"),
        ("2024-01-01", "added", "api language=go"),
    ]
    assert any("full re-extraction" in line for line in result.skipped)


def test_history_rewritten_but_old_commit_still_present_is_detected(repo):
    repo.commit("2024-01-01", {"api/a.go": ""})
    base = repo.head()
    repo.commit("2024-02-01", {"api/b.go": ""})
    source = git_source(repo)
    cursor = pull(source).cursor
    repo.git("reset", "-q", "--hard", base)
    repo.commit("2024-02-02", {"web/x.ts": ""})
    result = pull(source, cursor)
    assert any("not an ancestor" in line for line in result.skipped)
    assert [ev.fact.subject for ev in result.events] == ["api", "api", "web", "web"]


def test_since_starts_from_the_facts_already_true_then(repo, brief):
    repo.commit("2023-06-01", {"api/a.go": "", "CODEOWNERS": "* @old\n"})
    repo.commit("2023-12-01", {"CODEOWNERS": "* @core\n"})
    repo.commit("2024-02-01", {"CODEOWNERS": "* @platform\n"})
    events = pull(git_source(repo, since="2024-01-01")).events
    assert brief(events) == [
        ("2023-12-01", "added", "api exists=true"),
        ("2023-12-01", "added", "* owners=@core"),
        ("2023-12-01", "added", "api language=go"),
        ("2024-02-01", "revised", "* owners=@core -> * owners=@platform"),
    ]


def test_first_parent_shows_a_branch_at_its_merge_time(repo, brief):
    repo.commit("2024-01-01", {"api/a.go": ""})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("2024-01-05", {"web/app.ts": ""})
    repo.git("checkout", "-q", "main")
    repo.commit("2024-01-07", {"CODEOWNERS": "* @a\n"})
    repo.git("merge", "-q", "--no-ff", "feature", "-m", "merge", when="2024-01-10")
    assert brief(pull(git_source(repo)).events)[-3:] == [
        ("2024-01-07", "added", "* owners=@a"),
        ("2024-01-10", "added", "web exists=true"),
        ("2024-01-10", "added", "web language=typescript"),
    ]
    side = brief(pull(git_source(repo, first_parent=False)).events)
    assert ("2024-01-05", "added", "web exists=true") in side


# --------------------------------------------------------------------------- revalidation


def test_facts_still_true_are_revalidated_at_most_once_per_interval(repo, brief):
    repo.commit("2024-01-01", {"CODEOWNERS": "* @core\n/api/ @web\n"})
    repo.commit("2024-03-01", {"CODEOWNERS": "* @core\n/api/ @api-team\n"})
    source = git_source(repo, revalidate_interval="P30D")
    first = pull(source, now=utc("2024-03-10"))
    assert brief(first.events)[-1:] == [("2024-03-10", "revalidated", "* owners=@core")]
    assert first.events[-1].metadata["commit"] == repo.head()
    assert pull(source, first.cursor, now=utc("2024-03-20")).events == []
    later = pull(source, first.cursor, now=utc("2024-04-15"))
    assert brief(later.events) == [
        ("2024-04-15", "revalidated", "* owners=@core"),
        ("2024-04-15", "revalidated", "/api/ owners=@api-team"),
    ]
    assert len({ev.id for ev in first.events + later.events}) == len(first.events) + 2


def test_revalidation_defaults_to_the_head_commit_time_with_the_head_clock(repo, brief):
    repo.commit("2024-01-01", {"CODEOWNERS": "* @core\n"})
    repo.commit("2024-01-03", {"api/a.py": ""})
    events = pull(git_source(repo, revalidate_interval="P1D")).events
    assert brief(events)[-1] == ("2024-01-03", "revalidated", "* owners=@core")


# --------------------------------------------------------------------------- remotes, clones


def test_url_mode_keeps_a_bare_mirror_and_fetches_it_each_run(repo, tmp_path, brief):
    repo.commit("2024-01-01", {"CODEOWNERS": "* @a\n"})
    cache = tmp_path / "cache"
    source = build_source(
        "git",
        "remote",
        {"url": str(repo.path), "cache_dir": str(cache), "revalidate_clock": "head"},
    )
    first = pull(source)
    assert brief(first.events) == [("2024-01-01", "added", "* owners=@a")]
    mirrors = list(cache.iterdir())
    assert len(mirrors) == 1 and (mirrors[0] / "HEAD").exists()
    repo.commit("2024-02-01", {"CODEOWNERS": "* @b\n"})
    assert brief(pull(source, first.cursor).events) == [
        ("2024-02-01", "revised", "* owners=@a -> * owners=@b")
    ]


def test_a_token_is_never_shown_in_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("HEALTHD_TEST_TOKEN", "s3cr3t-t0ken")
    source = build_source(
        "git",
        "private",
        {
            "url": "http://127.0.0.1:9/s3cr3t-t0ken/repo.git",
            "cache_dir": str(tmp_path),
            "token_env": "HEALTHD_TEST_TOKEN",
        },
    )
    result = source.pull(None)
    assert result.error is not None and "s3cr3t-t0ken" not in result.error
    assert result.events == [] and result.cursor is None


def test_missing_blobs_of_a_partial_clone_are_skipped_with_a_warning(repo, tmp_path, brief):
    repo.commit("2024-01-01", {"api/package.json": '{"dependencies": {"a": "1"}}', "api/x.js": ""})
    repo.commit("2024-02-01", {"api/package.json": '{"dependencies": {"a": "2"}}'})
    repo.git("config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    subprocess.run(
        ["git", "clone", "-q", "--bare", "--filter=blob:none", f"file://{repo.path}", str(clone)],
        check=True,
        capture_output=True,
    )
    shutil.rmtree(repo.path)  # the promisor remote is gone: blobs cannot be fetched lazily
    result = git_source(_At(clone)).pull(None)
    assert result.error is None
    assert brief(result.events) == [
        ("2024-01-01", "added", "api exists=true"),
        ("2024-01-01", "added", "api language=javascript"),
    ]
    assert sum("blob" in line and "missing" in line for line in result.skipped) == 2
    assert any(line.startswith("partial clone:") for line in result.skipped)


def test_a_shallow_clone_is_read_from_its_boundary_and_says_so(repo, tmp_path, brief):
    repo.commit("2024-01-01", {"api/a.go": ""})
    repo.commit("2024-02-01", {"web/a.ts": ""})
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth=1", f"file://{repo.path}", str(clone)],
        check=True,
        capture_output=True,
    )
    result = git_source(_At(clone)).pull(None)
    assert brief(result.events) == [
        ("2024-02-01", "added", "api exists=true"),
        ("2024-02-01", "added", "web exists=true"),
        ("2024-02-01", "added", "api language=go"),
        ("2024-02-01", "added", "web language=typescript"),
    ]
    assert any("shallow" in line for line in result.skipped)


def test_an_empty_repository_gives_no_events_and_no_error(repo):
    result = git_source(repo).pull(None)
    assert result.ok and result.events == [] and result.cursor is None


# --------------------------------------------------------------------------- config


def test_git_is_a_registered_kind():
    assert {"git", "adr"} <= set(source_kinds())


@pytest.mark.parametrize(
    "options, field",
    [
        ({}, "set exactly one of 'path'"),
        ({"path": "/x", "url": "https://e/x.git", "cache_dir": "/c"}, "set exactly one"),
        ({"url": "https://e/x.git"}, "cache_dir"),
        ({"path": "/x", "colour": "red"}, "colour"),
        ({"path": "/x", "service_roots": ["services//*"]}, "service_roots"),
        ({"path": "/x", "revalidate_interval": "soon"}, "revalidate_interval"),
        ({"path": "/x", "first_parent": "maybe"}, "first_parent"),
    ],
)
def test_bad_options_fail_at_config_load_naming_the_field(options, field):
    with pytest.raises(ConfigError, match=field):
        build_source("git", "repo", options)


@pytest.mark.parametrize(
    "options",
    [
        {"path": "/x"},
        {
            "path": "/x",
            "branch": "main",
            "first_parent": False,
            "revalidate_interval": "P2D",
            "revalidate_clock": "head",
            "timeout_seconds": 5,
            "stall_seconds": 2.5,
            "service_roots": [" services/* ", "/apps/*/"],
            "adr_dirs": ["/decision-record/"],
            "exclude": ["scripts"],
            "exclude_dirs": [],
            "root_subject": "shop",
        },
        {"url": "https://e/x.git", "cache_dir": "/c", "token_env": "T", "token_user": "oauth2"},
        {"path": "/x", "since": "2024-01-01", "first_parent": "false"},  # pydantic's to convert
        {"path": "/x", "timeout_seconds": "90", "exclude": ("a",)},
    ],
)
def test_options_read_without_pydantic_are_those_pydantic_reads(options):
    """The plain reading of the `git` kind's options (no pydantic import for a one-shot pull)
    gives what the pydantic model gives, defaults included."""
    from dataclasses import asdict

    from healthd.sources._options import validate_options
    from healthd.sources._repo_options import GitOptions

    assert asdict(build_source("git", "repo", options).opts) == (
        validate_options(GitOptions, "repo", options).model_dump()
    )


def test_a_git_source_is_built_and_pulled_without_importing_pydantic(repo):
    repo.commit("2024-01-01", {"api/go.mod": "module api\n\nrequire x.io/y v1.0.0\n"})
    code = (
        "import sys\n"
        "from healthd.sources import build_source\n"
        f"r = build_source('git', 'r', {{'path': {str(repo.path)!r}}}).pull(None)\n"
        "assert r.ok and r.events, r\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_path_that_is_not_a_repository_is_a_failed_pull_not_a_crash(tmp_path):
    result = build_source("git", "repo", {"path": str(tmp_path)}).pull(None)
    assert result.error is not None and "not a git repository" in result.error


def test_a_codeowners_line_with_a_malformed_owner_is_skipped_as_github_skips_it(repo, brief):
    """GitHub: "If any line in your CODEOWNERS file contains invalid syntax, that line will
    be skipped." alphagov/gsp's a471d6c6 added `!@issyl0` to its one line: from then on
    GitHub names no owner for `*`, and neither does healthd."""
    repo.commit(
        "2024-01-01",
        {"CODEOWNERS": "# owners\n* @alphagov/re-autom8 @alphagov/re-gsp\n/db/ dba@example.com\n"},
    )
    repo.commit(
        "2024-02-01",
        {
            "CODEOWNERS": (
                "# owners\n* @alphagov/re-autom8 @alphagov/re-gsp !@issyl0\n"
                "/db/ dba@example.com\n/db/ @acme/web, team @bob\n"
            )
        },
    )
    result = pull(git_source(repo))
    assert brief(result.events) == [
        ("2024-01-01", "added", "* owners=@alphagov/re-autom8 @alphagov/re-gsp"),
        ("2024-01-01", "added", "/db/ owners=dba@example.com"),
        ("2024-02-01", "invalidated", "* owners=@alphagov/re-autom8 @alphagov/re-gsp"),
    ]  # /db/'s later line is skipped too: its earlier one stands
    skipped = "the line is skipped, as GitHub skips it"
    assert [line.split(": ", 1)[1] for line in result.skipped] == [
        f"owner '!@issyl0' is not @user, @org/team or an email; {skipped}",
        f"owner '@acme/web,' is not @user, @org/team or an email; {skipped}",
        f"owner 'team' is not @user, @org/team or an email; {skipped}",
    ]
    assert [line.split(": ", 1)[0].split(" ", 1)[1] for line in result.skipped] == [
        "line 2",
        "line 4",
        "line 4",
    ]


def test_a_codeowners_pattern_with_a_character_range_is_skipped_as_github_skips_it(repo, brief):
    """GitHub documents that `[ ]` ranges do not work in CODEOWNERS. cpython's 6d5845f2
    (python/cpython#112206) wrote `Python/ceval.c` as `Python/ceval*.[ch]`, and GitHub said
    "This CODEOWNERS file contains errors": that line names no owner there, so the old
    pattern's owners end and the new one is not owned; the line is reported."""
    repo.commit(
        "2023-11-01",
        {
            ".github/CODEOWNERS": "Objects/call.c @markshannon\nPython/ceval.c @markshannon\n"
            "Python/compile.c @markshannon @iritkatriel\n"
        },
    )
    repo.commit(
        "2023-11-17",
        {
            ".github/CODEOWNERS": "Objects/call.c @markshannon\n"
            "Python/ceval*.[ch] @markshannon @gvanrossum\n"
            "Python/compile.c @markshannon @iritkatriel\n"
            "Python/optimizer*.c @markshannon @gvanrossum\n"
        },
    )
    result = pull(git_source(repo))
    assert brief(result.events)[3:] == [
        ("2023-11-17", "added", "Python/optimizer*.c owners=@gvanrossum @markshannon"),
        ("2023-11-17", "invalidated", "Python/ceval.c owners=@markshannon"),
    ]
    assert [line.split(": ", 1)[1] for line in result.skipped] == [
        "pattern 'Python/ceval*.[ch]' holds a [ ] range, which GitHub does not read; "
        "the line is skipped, as GitHub skips it"
    ]
    assert result.skipped[0].split(": ", 1)[0].endswith(" line 2")


def test_a_codeowners_pattern_with_escaped_brackets_names_its_owners(repo, brief):
    """A Next.js route directory (open-sauced/app's pages/s/[org]/[repo]/index.tsx) is
    written with its brackets escaped, as GitHub's own error for the unescaped line asks
    ("both `[` and `]` must be escaped with a `\\`", open-sauced/pizza-cli#100): no range,
    a literal name, and GitHub applies the line. Unescaped, it is still skipped."""
    repo.commit(
        "2024-08-27",
        {
            ".github/CODEOWNERS": "* @open-sauced/engineering\n"
            "pages/s/\\[org\\]/\\[repo\\]/index.tsx @zeucapua @brandonroberts\n"
            "pages/s/[org]/[repo]/contributors.tsx @zeucapua\n"
        },
    )
    result = pull(git_source(repo))
    assert brief(result.events) == [
        ("2024-08-27", "added", "* owners=@open-sauced/engineering"),
        (
            "2024-08-27",
            "added",
            "pages/s/[org]/[repo]/index.tsx owners=@brandonroberts @zeucapua",
        ),
    ]
    assert [line.split(": ", 1)[1] for line in result.skipped] == [
        "pattern 'pages/s/[org]/[repo]/contributors.tsx' holds a [ ] range, which GitHub "
        "does not read; the line is skipped, as GitHub skips it"
    ]


# --------------------------------------------------------------------------- per-name updates


def _go_mod(deps: dict[str, str], indirect: dict[str, str]) -> str:
    lines = "".join(f"\t{name} {version}\n" for name, version in sorted(deps.items()))
    rest = "".join(f"\t{name} {version} // indirect\n" for name, version in indirect.items())
    return f"module m\n\ngo 1.22\n\nrequire (\n{lines})\n\nrequire (\n{rest})\n"


def _package_json(deps: dict[str, str]) -> str:
    return json.dumps({"name": "w", "dependencies": dict(sorted(deps.items()))})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dependency_facts_updated_per_changed_name_equal_rebuilding_them(repo, monkeypatch, seed):
    """A manifest's change rebuilds only the dependencies it changed: the events are those
    of rebuilding every dependency fact of the subject, through manifests of one subject
    naming the same package (the shallower, then alphabetically first, wins), manifests
    deleted and added again, unreadable ones, and a module moving under a root manifest."""
    import random

    from healthd.sources.git import GitExtractor

    rng = random.Random(seed)
    names = ["a.io/x", "b.io/y", "c.io/z", "d.io/w", "left-pad", "react"]
    paths = ["svc/go.mod", "svc/package.json", "svc/web/package.json", "go.mod", "lib/go.mod"]
    held: dict[str, dict[str, str]] = {}
    for day in range(1, 41):
        files: dict[str, str | None] = {f"svc/m{day}.go": "package m\n"}
        for path in rng.sample(paths, rng.randint(1, 2)):
            roll = rng.random()
            if roll < 0.12:
                files[path] = None
                held.pop(path, None)
                continue
            if roll < 0.17:
                files[path] = "{ not json" if path.endswith(".json") else "require (\n"
                continue
            deps = dict(held.get(path, {}))
            for name in rng.sample(names, rng.randint(1, 3)):
                if name in deps and rng.random() < 0.3:
                    del deps[name]
                else:
                    deps[name] = f"v1.{rng.randint(0, 3)}.0"
            held[path] = deps
            if path.endswith("go.mod"):
                files[path] = _go_mod(deps, {"e.io/v": f"v0.{day}.0"})
            else:
                files[path] = _package_json(deps)
        repo.commit(f"2024-01-{day:02d}" if day <= 31 else f"2024-02-{day - 31:02d}", files)

    per_name = [dumps_event(ev) for ev in pull(git_source(repo)).events]
    monkeypatch.setattr(GitExtractor, "_dep_changes", lambda self, subject, names, commit: None)
    rebuilt = [dumps_event(ev) for ev in pull(git_source(repo)).events]
    assert per_name == rebuilt
    assert any('"dependency:' in line for line in per_name)


def test_a_pull_collects_less_often_and_leaves_the_collector_as_it_found_it(repo):
    """A pull builds what it keeps (events, the facts held) and no cycles, so the young
    generation is collected as during a replay; the process's thresholds come back after."""
    import gc

    repo.commit("2024-01-01", {"svc/go.mod": "module m\n\nrequire a.io/x v1.0.0\n"})
    seen: list[tuple[int, int, int]] = []
    source = git_source(repo)
    pull_once = source._pull

    def watched(*args, **kwargs):
        seen.append(gc.get_threshold())
        return pull_once(*args, **kwargs)

    before = gc.get_threshold()
    source._pull = watched  # type: ignore[method-assign]
    result = pull(source)
    assert result.error is None and result.events
    assert seen[0][0] >= 100_000
    assert gc.get_threshold() == before
