"""Catalog files as others write them, and as an attacker could: the `backstage` source
reads YAML as Backstage does (1.2's core schema), and a document it cannot take is one
short line while the rest of the catalog is read."""

from __future__ import annotations

import pytest
from conftest import GitRepo

from healthd.sources import build_source

SERVICE = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: {name}
spec:
  type: service
  lifecycle: production
  owner: team-a
"""


def source(repo: GitRepo):
    return build_source(
        "backstage", "catalog", {"path": str(repo.path), "revalidate_interval": "P3650D"}
    )


def facts(result) -> dict[tuple[str, str], str]:
    return {(e.fact.subject, e.fact.predicate): e.fact.value for e in result.events}


def alias_bomb(levels: int, field: str) -> str:
    """A component whose ``field`` expands, alias in alias, to 10**levels values."""
    anchors = ["    a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        anchors.append(f"    a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n  name: bomb\n"
        "  annotations:\n"
        + "\n".join(anchors)
        + f"\nspec:\n  type: service\n  lifecycle: production\n  owner: team-a\n"
        f"  {field}: *a{levels - 1}\n"
    )


def test_values_are_read_as_backstage_reads_them_not_as_yaml_1_1(repo: GitRepo) -> None:
    # Backstage parses catalog files with YAML 1.2's core schema: a date-like annotation
    # is a string (PyYAML's 1.1 reading failed the whole pull on 2023-13-01), and `no`,
    # `on`, `12:30` are names, not a boolean and a sexagesimal 750
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": (
                "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n"
                "  name: payments\n  annotations:\n    example.com/reviewed: 2023-13-01\n"
                "    example.com/since: 2023-02-01\nspec:\n  type: service\n"
                "  lifecycle: production\n  owner: no\n  system: 12:30\n"
                "---\n" + SERVICE.format(name="ledger").replace("team-a", "on")
            ),
        },
    )
    result = source(repo).pull(None)
    assert result.ok, result.error
    got = facts(result)
    assert got[("payments", "owner")] == "no"
    assert got[("payments", "system")] == "12:30"
    assert got[("ledger", "owner")] == "on"
    assert result.skipped == []


def test_an_alias_bomb_is_one_short_line_and_the_rest_of_the_catalog_is_read(
    repo: GitRepo,
) -> None:
    # a million values from 100 lines: whatever walks it (a message quoting it, a
    # comparison with its next version) walks them all; the document is not read
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": SERVICE.format(name="ledger")
            + "---\n"
            + alias_bomb(6, "dependsOn")
            + "---\n"
            + SERVICE.format(name="itself").replace("owner: team-a", "owner: &o [*o]"),
            "services/payments/catalog-info.yaml": SERVICE.format(name="payments"),
        },
    )
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert {s for s, _ in facts(result)} == {"ledger", "payments"}
    assert len(result.skipped) == 2, result.skipped
    bomb, itself = sorted(result.skipped)
    assert "document 2: aliases expand it to over 100,000 values" in bomb
    assert "document 3: an alias refers to a value that holds it" in itself
    assert all(len(line) < 200 for line in result.skipped)


def test_many_bad_references_in_one_field_are_one_line_that_counts_them(repo: GitRepo) -> None:
    members = ", ".join(f"{{name: [n{i}]}}" for i in range(500))
    group = (
        "apiVersion: backstage.io/v1alpha1\nkind: Group\nmetadata:\n  name: team-a\n"
        f"spec:\n  type: team\n  children: []\n  members: [alice, {members}]\n"
    )
    repo.commit("2024-01-02T09:00", {"catalog-info.yaml": group})
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert facts(result)[("group:team-a", "members")] == "alice"
    [line] = result.skipped
    assert "spec.members: reference {'name': ['n0']} has no name" in line
    assert line.endswith("(and 499 more in this field)")


def test_a_value_its_tag_cannot_hold_keeps_the_file_as_before_in_one_line(
    repo: GitRepo,
) -> None:
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": SERVICE.format(name="ledger"),
            "services/payments/catalog-info.yaml": SERVICE.format(name="payments"),
        },
    )
    repo.commit(
        "2024-02-01T09:00",
        {
            "catalog-info.yaml": SERVICE.format(name="ledger").replace("team-a", "team-b")
            + "  reviewed: !!timestamp 2023-13-01\n",
            "services/payments/catalog-info.yaml": SERVICE.format(name="payments").replace(
                "lifecycle: production", "lifecycle: production\n  replicas: " + "9" * 5000
            ),
        },
    )
    result = source(repo).pull(None)
    assert result.ok, result.error
    # both files as before: ledger's owner is not revised, nothing is ended
    assert [e.type for e in result.events if e.timestamp.month == 2] == []
    assert sorted(result.skipped) == [
        f"catalog-info.yaml@{repo.head()[:12]}: not valid YAML: month must be in 1..12; "
        "kept as before",
        f"services/payments/catalog-info.yaml@{repo.head()[:12]}: not valid YAML: an integer "
        "too long to read (Exceeds the limit (4300 digits) for integer string conversion); "
        "kept as before",
    ]


def test_a_software_templates_skeleton_is_no_entity(repo: GitRepo) -> None:
    """Scaffolder skeletons sit under the default glob with ``${{ values.* }}`` in them: a
    service named my-new-service owned by "${{ values.owner }}" is not in the catalog."""
    skeleton = SERVICE.format(name="my-new-service").replace(
        "owner: team-a", "owner: ${{ values.owner }}\n  system: ${{ values.system | dump }}"
    )
    template = (  # the Template entity itself fills expressions in: it is read
        "apiVersion: scaffolder.backstage.io/v1beta3\nkind: Template\nmetadata:\n"
        "  name: new-service\nspec:\n  owner: team-a\n  type: service\n  steps:\n"
        "    - id: fetch\n      action: fetch:template\n      input:\n"
        "        values:\n          name: ${{ parameters.name }}\n"
    )
    repo.commit(
        "2024-01-02T09:00",
        {
            "catalog-info.yaml": SERVICE.format(name="ledger").replace(
                "  name: ledger\n",
                "  name: ledger\n"
                "  description: deployed by ${{ github.workflow }}\n"  # text, no skeleton
                "  annotations:\n    1: one\n    true: 'yes'\n",  # two keys to Backstage
            )
            + "---\n"
            + template,
            "templates/service/skeleton/catalog-info.yaml": skeleton,
        },
    )
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert {s for s, _ in facts(result)} == {"ledger", "template:new-service"}
    assert result.skipped == [
        f"templates/service/skeleton/catalog-info.yaml@{repo.head()[:12]}: document 1: "
        "spec.owner holds a template expression (${{ … }}): a software template's skeleton, "
        "not an entity; not read"
    ]


@pytest.mark.parametrize(
    "bad, why",
    [
        ("- just\n- a list\n", "document 3 is a list, not a mapping"),
        ("just a scalar\n", "document 3 is a str, not a mapping"),
        (
            SERVICE.format(name="third") + "  owner: team-z\n",
            "not valid YAML at line 27: found duplicate key 'owner'",
        ),
    ],
)
def test_a_document_backstage_cannot_parse_keeps_the_whole_file_as_before(
    repo: GitRepo, bad: str, why: str
) -> None:
    """A document that is no mapping, or repeats a key, is a parse error for the whole
    file in Backstage: the file's entities stay as they were, its valid edits too."""
    both = SERVICE.format(name="ledger") + "---\n" + SERVICE.format(name="payments")
    repo.commit("2024-01-02T09:00", {"catalog-info.yaml": both})
    repo.commit(
        "2024-02-01T09:00",
        {"catalog-info.yaml": both.replace("team-a", "team-z") + "---\n" + bad},
    )
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert [e for e in result.events if e.timestamp.month == 2] == []
    assert result.skipped == [f"catalog-info.yaml@{repo.head()[:12]}: {why}; kept as before"]


def test_an_entity_declared_twice_in_one_file_is_its_last_declaration(repo: GitRepo) -> None:
    """Backstage upserts a file's entities in order by ref, so the second declaration is
    the one it serves (giantswarm/backstage-catalogs' charts.yaml declares `muster` twice,
    with two owners); across two files, the first file keeps it."""
    twice = (
        SERVICE.format(name="muster")
        + "---\n"
        + SERVICE.format(name="muster").replace("team-a", "team-b")
    )
    repo.commit("2024-01-02T09:00", {"catalog-info.yaml": twice})
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert facts(result)[("muster", "owner")] == "team-b"
    assert result.skipped == [
        f"catalog-info.yaml@{repo.head()[:12]}: Component component:default/muster is "
        "declared twice in this file; the last declaration is kept, as Backstage keeps it"
    ]


JOAODSS = """\
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: joaodss
  description: Platform Admin user at 7K Group
spec:
  profile:
    displayName: Joao Santos
    email: joaodss@example.com
"""

SENTRY_JS = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: sentry-js
  description: A JS client which communicates with the Sentry HTTP API.
spec:
  type: library
  lifecycle: production
  owner: engineering
  system: sample-system
  subcomponentOf:
    - Component:sample-service-1
"""


def test_an_entity_whose_fields_the_schema_rejects_is_skipped_until_fixed(
    repo: GitRepo,
) -> None:
    """Backstage's kind schemas reject a User without ``spec.memberOf`` (7K-Group's
    backstage-catalog at 8efedda) and a ``subcomponentOf`` that is a list
    (RoadieHQ/sample-service at 9644367, fixed three days later as 'Subcomponents need to
    be string'): the entity is not in the catalog until its file is fixed."""
    repo.commit(
        "2021-06-22T12:21",
        {"catalog-info.yaml": SENTRY_JS, "users/catalog-info.yaml": JOAODSS},
    )
    broken = repo.head()[:12]
    repo.commit(
        "2021-06-25T16:36",
        {
            "catalog-info.yaml": SENTRY_JS.replace(
                "\n    - Component:sample-service-1", " Component:sample-service-1"
            ),
            "users/catalog-info.yaml": JOAODSS + "  memberOf: [platform-admin-team]\n",
        },
    )
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert sorted(result.skipped) == [
        f"catalog-info.yaml@{broken}: document 1: Component sentry-js: spec.subcomponentOf "
        "is not a string; skipped",
        f"users/catalog-info.yaml@{broken}: document 1: User joaodss: spec.memberOf is "
        "required; skipped",
    ]
    assert {e.timestamp.day for e in result.events} == {25}
    assert facts(result)[("user:joaodss", "memberOf")] == "platform-admin-team"
    assert facts(result)[("sentry-js", "owner")] == "engineering"


SAMPLE_5 = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: sample-service-5
  annotations:
    github.com/project-slug: roadiehq/sample-service
spec:
  type: service
  owner: user:dtuite
  lifecycle: experimental
  providesApis:
    - sample-service
"""


def test_a_document_without_its_envelope_keeps_the_whole_file_as_before(
    repo: GitRepo,
) -> None:
    """A document without apiVersion, kind or metadata.name fails Backstage's envelope
    check while the file is read, and the file's whole result is then kept as it was
    (RoadieHQ/sample-service's catalog-info-5.yaml lost its metadata block at b2e4c78 and
    got it back 3.5 minutes later: sample-service-5 never left Backstage's catalog)."""
    repo.commit(
        "2021-02-08T12:38",
        {
            "sample-service-5/catalog-info.yaml": SAMPLE_5,
            "catalog-info.yaml": SERVICE.format(name="ledger")
            + "---\n"
            + SERVICE.format(name="payments"),
        },
    )
    repo.commit(
        "2021-10-27T12:32",
        {
            "sample-service-5/catalog-info.yaml": SAMPLE_5.replace(
                "metadata:\n  name: sample-service-5\n  annotations:\n"
                "    github.com/project-slug: roadiehq/sample-service\n",
                "",
            ),
            # a second document lost its kind: the file's other edits wait too
            "catalog-info.yaml": SERVICE.format(name="ledger").replace("team-a", "team-z")
            + "---\n"
            + SERVICE.format(name="payments").replace("kind: Component\n", ""),
        },
    )
    broken = repo.head()[:12]
    repo.commit("2021-10-27T12:36", {"sample-service-5/catalog-info.yaml": SAMPLE_5})
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert [e for e in result.events if e.timestamp.month == 10] == []
    assert sorted(result.skipped) == [
        f"catalog-info.yaml@{broken}: document 2: kind is missing or not a string "
        "(Backstage reads none of the file); kept as before",
        f"sample-service-5/catalog-info.yaml@{broken}: document 1: metadata is missing or not "
        "a mapping (Backstage reads none of the file); kept as before",
    ]


S3_BUCKET = """\
apiVersion: backstage.io/v1alpha1
kind: Resource
metadata:
  name: sample-s3-bucket
spec:
  type: s3-bucket
  owner: engineering
  system: sample-system
  dependencyOf: component:sample-service-1
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: sample-service-1
spec:
  type: service
  lifecycle: production
  owner: engineering
  dependencyOf: component:sample-service-2
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: sample-service-2
spec:
  type: service
  lifecycle: production
  owner: engineering
"""


def test_a_dependency_of_written_as_one_ref_is_not_refused(repo: GitRepo) -> None:
    """Neither Component.v1alpha1.schema.json nor Resource.v1alpha1.schema.json types
    ``dependencyOf`` (backstage/backstage d47b63c, 34e7c90: only ``dependsOn`` is an array
    there), and Backstage's processor reads one ref as a list of one: the entity is in its
    catalog, and its dependency a fact, not a skipped line."""
    repo.commit("2023-03-01T10:00", {"catalog-info.yaml": S3_BUCKET})
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert result.skipped == []
    got = facts(result)
    assert got[("sample-service-1", "exists")] == "true"
    assert got[("resource:sample-s3-bucket", "exists")] == "true"
    assert ("sample-service-1", "dependency:resource:sample-s3-bucket") in got
    assert ("sample-service-2", "dependency:sample-service-1") in got
