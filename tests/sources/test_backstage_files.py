"""The `backstage` source reading catalog files through a real git repository's history:
multi-document files, a Location pointing at other files, entities moved between files,
renamed files and entities, owners changed, a deprecation and a removal cascading."""

from __future__ import annotations

import pytest
from conftest import GitRepo, utc

from healthd.errors import ConfigError
from healthd.model import Fact
from healthd.sources import build_source
from healthd.truth import GroundTruth

ROOT = """\
apiVersion: backstage.io/v1alpha1
kind: System
metadata:
  name: shop
spec:
  owner: platform
---
apiVersion: backstage.io/v1alpha1
kind: Location
metadata:
  name: org-chart
spec:
  type: url
  targets:
    - ./org/teams.yaml
"""

AUTH = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: auth-service
  annotations:
    github.com/project-slug: acme/auth-service
spec:
  type: service
  lifecycle: production
  owner: team-a
  system: shop
  providesApis: [auth-api]
  dependsOn: ['resource:users-db']
---
apiVersion: backstage.io/v1alpha1
kind: API
metadata:
  name: auth-api
spec:
  type: openapi
  lifecycle: production
  owner: team-a
  system: shop
  definition: |
    openapi: 3.0.0
"""

PAYMENTS = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: payments-v1
spec:
  type: service
  lifecycle: {lifecycle}
  owner: {owner}
  system: shop
  consumesApis: ['api:default/auth-api']
  dependsOn: [resource:payments-db]
---
apiVersion: backstage.io/v1alpha1
kind: Resource
metadata:
  name: payments-db
spec:
  type: database
  owner: {owner}
  system: shop
"""

CHECKOUT = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: checkout
spec:
  type: website
  lifecycle: experimental
  owner: user:alice
  dependsOn: [component:payments-v1]
"""

LEDGER = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: ledger
  namespace: billing
spec:
  type: service
  lifecycle: production
  owner: finance
  system: shop
  consumesApis: [default/auth-api]
"""

TEAMS = """\
apiVersion: backstage.io/v1alpha1
kind: Group
metadata:
  name: platform
spec:
  type: department
  children: [team-a, team-b]
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata:
  name: team-a
spec:
  type: team
  parent: platform
  children: []
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata:
  name: team-b
spec:
  type: team
  parent: platform
  children: []
  members: [carol]
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: alice
spec:
  memberOf: [team-a]
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: bob
spec:
  memberOf: [{bob_team}]
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: carol
spec:
  memberOf: []
"""


def teams(bob_team: str = "team-b") -> str:
    return TEAMS.replace("{bob_team}", bob_team)


def payments(owner: str = "team-b", lifecycle: str = "production") -> str:
    return PAYMENTS.format(owner=owner, lifecycle=lifecycle)


def source(repo: GitRepo, **extra: object):
    return build_source(
        "backstage",
        "catalog",
        {"path": str(repo.path), "revalidate_interval": "P3650D", **extra},
    )


def first_catalog(repo: GitRepo) -> None:
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": ROOT,
            "services/auth-service/catalog-info.yaml": AUTH,
            "services/payments-v1/catalog-info.yaml": payments(),
            "services/checkout/catalog-info.yaml": CHECKOUT,
            "org/teams.yaml": teams(),
            "services/auth-service/main.go": "package main\n",
            "billing/catalog-info.yaml": LEDGER,
        },
    )


def test_a_first_catalog_gives_every_fact_with_references_resolved(repo: GitRepo, brief) -> None:
    first_catalog(repo)
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert result.skipped == []
    facts = {(e.fact.subject, e.fact.predicate): e.fact.value for e in result.events}
    assert all(e.type == "added" and e.timestamp == utc("2024-01-02T09:00") for e in result.events)
    # owners default to kind Group, systems to System, APIs to API, in the entity's namespace
    assert facts[("auth-service", "owner")] == "team-a"
    assert facts[("checkout", "owner")] == "user:alice"
    assert facts[("auth-service", "system")] == "shop"
    assert facts[("auth-service", "lifecycle")] == "production"
    assert facts[("auth-service", "type")] == "service"
    assert facts[("api:auth-api", "owner")] == "team-a"
    assert facts[("resource:payments-db", "type")] == "database"
    assert facts[("system:shop", "owner")] == "platform"
    # dependsOn / providesApis / consumesApis as dependencies on the target entity
    assert facts[("auth-service", "dependency:resource:users-db")] == "dependsOn"
    assert facts[("auth-service", "dependency:api:auth-api")] == "providesApis"
    assert facts[("payments-v1", "dependency:api:auth-api")] == "consumesApis"
    assert facts[("checkout", "dependency:payments-v1")] == "dependsOn"
    # the org chart came through the Location, read from both ends of each relation
    assert facts[("group:team-a", "parent")] == "platform"
    assert facts[("group:team-b", "members")] == "bob carol"
    assert facts[("group:team-a", "members")] == "alice"
    assert facts[("user:carol", "memberOf")] == "team-b"
    assert facts[("user:bob", "memberOf")] == "team-b"
    assert facts[("group:team-b", "exists")] == "true"
    # a namespace other than default shows in subjects, and is the default for references
    assert facts[("billing/ledger", "owner")] == "billing/finance"
    assert facts[("billing/ledger", "system")] == "billing/shop"
    assert facts[("billing/ledger", "dependency:api:auth-api")] == "consumesApis"
    deps = {e.fact.key: e.depends_on for e in result.events}
    dep = deps[Fact("checkout", "dependency:payments-v1", "", "tech").key]
    assert {(k.subject, k.predicate) for k in dep} == {
        ("checkout", "exists"),
        ("payments-v1", "exists"),
    }
    assert all(not e.depends_on for e in result.events if e.fact.predicate == "exists")
    assert all(
        (e.fact.subject, "exists") in {(k.subject, k.predicate) for k in e.depends_on}
        for e in result.events
        if e.fact.predicate not in ("exists", "lifecycle")
    )
    meta = {e.fact.key: e.metadata for e in result.events}
    owner = meta[Fact("group:team-a", "parent", "", "ownership").key]
    assert owner["file"] == "org/teams.yaml"
    assert owner["entity"] == "group:default/team-a"
    # the Location itself is plumbing, not a fact; the Go file is not catalog
    assert not any("org-chart" in e.fact.subject for e in result.events)


def test_moves_and_renamed_files_change_nothing_real_changes_are_events(
    repo: GitRepo, brief
) -> None:
    first_catalog(repo)
    src = source(repo)
    first = src.pull(None)
    # the API moves to its own file; the org chart file is renamed, its Location follows
    repo.commit(
        "2024-01-05T10:00",
        {
            "services/auth-service/catalog-info.yaml": AUTH.split("---\n", maxsplit=1)[0],
            "services/auth-api/catalog-info.yaml": AUTH.split("---\n")[1],
            "org/teams.yaml": None,
            "org/people.yaml": teams(),
            "catalog-info.yaml": ROOT.replace("teams.yaml", "people.yaml"),
        },
    )
    moved = src.pull(first.cursor)
    assert moved.ok and moved.events == [] and moved.skipped == []
    repo.commit(
        "2024-01-08T10:00", {"services/payments-v1/catalog-info.yaml": payments(owner="team-a")}
    )
    repo.commit("2024-01-09T10:00", {"org/people.yaml": teams(bob_team="team-a")})
    later = src.pull(moved.cursor)
    assert brief(later.events) == [
        (
            "2024-01-08",
            "revised",
            "payments-v1 owner=team-b -> payments-v1 owner=team-a",
        ),
        (
            "2024-01-08",
            "revised",
            "resource:payments-db owner=team-b -> resource:payments-db owner=team-a",
        ),
        (
            "2024-01-09",
            "revised",
            "group:team-a members=alice -> group:team-a members=alice bob",
        ),
        (
            "2024-01-09",
            "revised",
            "group:team-b members=bob carol -> group:team-b members=carol",
        ),
        (
            "2024-01-09",
            "revised",
            "user:bob memberOf=team-b -> user:bob memberOf=team-a",
        ),
    ]
    # the file each fact now comes from follows the move
    swept = source(repo, revalidate_interval="PT0S", revalidate_clock="head").pull(None)
    api = [e for e in swept.events if e.type == "revalidated" and e.fact.subject == "api:auth-api"]
    assert api and {e.metadata["file"] for e in api} == {"services/auth-api/catalog-info.yaml"}


def test_deprecation_and_removal_end_facts_and_cascade_to_dependents(repo: GitRepo, brief) -> None:
    first_catalog(repo)
    repo.commit(
        "2024-02-01T10:00",
        {"services/payments-v1/catalog-info.yaml": payments(lifecycle="deprecated")},
    )
    repo.commit("2024-03-01T10:00", {"services/payments-v1": None})
    events = source(repo).pull(None).events
    later = [e for e in events if e.timestamp > utc("2024-01-03")]
    assert brief(later) == [
        (
            "2024-02-01",
            "revised",
            "payments-v1 lifecycle=production -> payments-v1 lifecycle=deprecated",
        ),
        ("2024-02-01", "invalidated", "payments-v1 exists=true"),
        ("2024-03-01", "invalidated", "payments-v1 lifecycle=deprecated"),
        ("2024-03-01", "invalidated", "resource:payments-db exists=true"),
    ]
    assert later[1].reason == "payments-v1 lifecycle: deprecated"
    assert later[3].reason == "resource:payments-db removed from the catalog"
    # ground truth ends, by cascade, what the deprecated component's facts and what
    # depended on it: checkout's dependency, payments-v1's owner
    truth = GroundTruth(events)
    march = utc("2024-03-02")
    assert truth.status(Fact("checkout", "dependency:payments-v1", "dependsOn", "tech"), march) in (
        "invalidated",
        "superseded",
    )
    assert truth.status(Fact("payments-v1", "owner", "team-b", "ownership"), march) != "current"
    assert truth.status(Fact("checkout", "owner", "user:alice", "ownership"), march) == "current"
    assert (
        truth.status(Fact("resource:payments-db", "type", "database", "tech"), march) != "current"
    )


def test_a_renamed_entity_is_another_entity_and_an_incremental_pull_matches_a_full_one(
    repo: GitRepo, brief
) -> None:
    first_catalog(repo)
    src = source(repo)
    cursor = src.pull(None).cursor
    repo.commit(
        "2024-01-10T10:00",
        {
            "services/auth-service/catalog-info.yaml": AUTH.replace(
                "name: auth-api", "name: auth-api-v2"
            ).replace("providesApis: [auth-api]", "providesApis: [auth-api-v2]")
        },
    )
    repo.commit("2024-01-11T10:00", {"services/checkout": None})
    incremental = src.pull(cursor)
    full = source(repo).pull(None)
    tail = [e for e in full.events if e.timestamp >= utc("2024-01-10")]
    assert [e.id for e in incremental.events] == [e.id for e in tail]
    assert incremental.events == tail
    assert ("2024-01-10", "invalidated", "api:auth-api exists=true") in brief(tail)
    assert ("2024-01-10", "added", "api:auth-api-v2 exists=true") in brief(tail)
    assert (
        "2024-01-10",
        "added",
        "auth-service dependency:api:auth-api-v2=providesApis",
    ) in brief(tail)
    # payments-v1 still consumes the old API: its dependency ends with it, by cascade
    assert not any(e.fact.predicate == "dependency:api:auth-api" for e in tail)
    assert ("2024-01-11", "invalidated", "checkout exists=true") in brief(tail)
    # same history, same bytes
    assert [e.id for e in source(repo).pull(None).events] == [e.id for e in full.events]


def test_malformed_documents_are_skipped_one_line_each_and_the_rest_read(
    repo: GitRepo, brief
) -> None:
    bad = (
        AUTH
        + "---\napiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: no-owner\n"
        "spec:\n  type: service\n  lifecycle: production\n"
        "---\napiVersion: backstage.io/v1alpha1\nkind: Component\n"
        "metadata: {name: 'bad name!'}\nspec: {}\n"
    )
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": bad,
            "services/broken/catalog-info.yaml": "kind: Component\n  name: [unclosed\n",
            "services/dangling/catalog-info.yaml": CHECKOUT.replace(
                "[component:payments-v1]", "[payments-v1]"
            ),
        },
    )
    result = source(repo).pull(None)
    assert result.ok
    subjects = {e.fact.subject for e in result.events}
    assert {"auth-service", "api:auth-api", "checkout"} <= subjects
    assert "no-owner" not in subjects
    lines = result.skipped
    assert len(lines) == 4, lines
    assert any("document 3: Component no-owner: spec.owner is required" in s for s in lines)
    assert any("document 4:" in s and "metadata.name 'bad name!'" in s for s in lines)
    # (a document without apiVersion fails the whole file, as in Backstage: see
    # test_backstage_hostile)
    assert any(s.startswith("services/broken/catalog-info.yaml@") and "YAML" in s for s in lines)
    # dependsOn has no default kind: a bare name cannot be resolved
    assert any("spec.dependsOn" in s and "no default kind" in s for s in lines)


def test_a_catalog_file_saved_as_latin_1_is_read_and_says_which_byte_it_could_not(
    repo: GitRepo,
) -> None:
    latin_1 = AUTH.replace("name: auth-service\n", "name: auth-service\n  title: Équipe auth\n")
    data = latin_1.encode("latin-1")
    repo.commit("2024-01-02T09:00", {"catalog-info.yaml": data})
    result = source(repo).pull(None)
    assert result.ok
    assert {"auth-service", "api:auth-api"} <= {e.fact.subject for e in result.events}
    (said,) = result.skipped
    assert said.startswith("catalog-info.yaml@")
    offset = data.index("É".encode("latin-1"))
    assert f"not UTF-8 text: byte c9 at offset {offset}" in said


def test_a_location_outside_the_repository_or_matching_nothing_is_reported(
    repo: GitRepo,
) -> None:
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": ROOT.replace(
                "    - ./org/teams.yaml\n",
                "    - ./org/teams.yaml\n    - https://github.com/acme/other/blob/main/all.yaml\n"
                "    - ./teams/*.yaml\n",
            ),
            "org/teams.yaml": teams(),
        },
    )
    result = source(repo).pull(None)
    assert any("is not in this repository; not followed" in s for s in result.skipped)
    assert any("'./teams/*.yaml' matches no file" in s for s in result.skipped)
    repo.commit(
        "2024-01-03T09:00",
        {"teams/extra.yaml": TEAMS.split("---\n", maxsplit=1)[0].replace("platform", "infra")},
    )
    later = source(repo).pull(result.cursor)
    assert any(e.fact.subject == "group:infra" for e in later.events)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "set 'path'"),
        ({"path": "/x", "base_url": "http://127.0.0.1:1"}, "not both"),
        ({"path": "/x", "catalog_files": []}, "catalog_files"),
        ({"path": "/x", "catalog_files": ["catalog.json"]}, ".yaml or .yml"),
        ({"path": "/x", "owner": "me"}, "owner"),
    ],
)
def test_bad_options_are_one_config_error(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        build_source("backstage", "catalog", options)
    assert "\n" not in str(info.value)


def test_a_repository_without_catalog_files_says_where_it_looked(repo: GitRepo) -> None:
    repo.commit("2024-01-02T09:00", {"README.md": "shop\n", "deploy/values.yaml": "a: 1\n"})
    result = source(repo).pull(None)
    assert result.ok and result.events == []
    assert result.skipped == [
        f"no catalog file at {repo.head()[:12]} matches catalog_files "
        "(**/catalog-info.yaml, **/catalog-info.yml)"
    ]


_BAD_TABLES = [
    ('path = "{repo}"\nbase_url = "https://backstage.acme.io"\n', "not both"),
    ('path = "{repo}"\ncatalog_files = ["catalog.json"]\n', "catalog_files"),
    ('base_url = "backstage.acme.io"\n', "base_url"),
]


@pytest.mark.parametrize(
    ("command", "table", "words"),
    [(c, t, w) for c in ("check-config", "timeline") for t, w in _BAD_TABLES]
    + [("check-config", 'path = "{repo}/nowhere"\n', "does not exist")],
)
def test_bad_configuration_is_one_line_and_exit_2(
    repo: GitRepo, tmp_path, command: str, table: str, words: str
) -> None:
    import subprocess
    import sys

    first_catalog(repo)
    config = tmp_path / "healthd.toml"
    config.write_text(
        '[sources.catalog]\nkind = "backstage"\n' + table.replace("{repo}", str(repo.path))
    )
    done = subprocess.run(
        [sys.executable, "-m", "healthd", command, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "sources.catalog" in lines[0] and words in lines[0], lines
    assert "Traceback" not in done.stderr
