"""A pull resumed from its cursor gives what one pull over the whole history gives, when
the cursor's commit holds a file Backstage cannot parse (its entities kept as before) or an
entity two files declare (the file that declared it first keeps it). Shapes from
RoadieHQ/sample-service, whose catalog-info.yaml a merge left with duplicate keys for 15
months (bdd0b8b..a74f456) while catalog-info-docs-only.yaml declared sample-service too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import GitRepo

from healthd.sources import build_source
from healthd.sources._gitrepo import Repo

SAMPLE = """\
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: sample-service
  description: A test service
  annotations:
    github.com/project-slug: RoadieHQ/sample-service
spec:
  type: other
  lifecycle: experimental
  owner: group:engineering
---
apiVersion: backstage.io/v1alpha1
kind: Location
metadata:
  name: test-moving-location
spec:
  type: url
  targets:
    - ./moving-entity2.yaml
"""

#: the merge: the Component's lifecycle, owner and `---` gone, so its keys repeat
MERGED = SAMPLE.replace("  lifecycle: experimental\n  owner: group:engineering\n---\n", "")

#: fixed, with the owner and lifecycle a later commit gave it
FIXED = SAMPLE.replace("lifecycle: experimental", "lifecycle: production").replace(
    "group:engineering", "team-alpha"
)

DOCS_ONLY = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: sample-service
  description: A service for testing TechDocs.
spec:
  type: service
  owner: guest
  lifecycle: experimental
"""

MOVING = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: moving-entity
spec:
  type: service
  lifecycle: experimental
  owner: engineering
"""


def source(repo: GitRepo, **options: str):
    return build_source(
        "backstage",
        "catalog",
        {
            "path": str(repo.path),
            "catalog_files": ["catalog-info*.yaml"],  # as the repository's files are read
            "revalidate_interval": "P3650D",
            **options,
        },
    )


def resumed_and_full(
    repo: GitRepo, cut: str, *, older: bool = False, **options: str
) -> tuple[list, list, str]:
    """The events of a pull at ``cut`` then one from its cursor at the head (``older``: the
    cursor as 497f53a wrote it), a full pull's, and the cursor the resumed pull wrote."""
    head = repo.head()
    repo.git("update-ref", "refs/heads/main", cut)
    first = source(repo, **options).pull(None)
    repo.git("update-ref", "refs/heads/main", head)
    cursor = _as_497f53a_wrote_it(first.cursor) if older else first.cursor
    then = source(repo, **options).pull(cursor)
    assert first.ok and then.ok, (first.error, then.error)
    return first.events + then.events, source(repo, **options).pull(None).events, then.cursor


@contextmanager
def logged_ranges() -> Iterator[list[str]]:
    """The revision ranges the pulls inside read the history of, in turn."""
    seen: list[str] = []
    original = Repo.log

    def log(self: Repo, rev_range: str, **kwargs: object):
        seen.append(rev_range)
        return original(self, rev_range, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Repo, "log", log)
        yield seen


def brief(events: list) -> list[tuple[str, str, str, str, str | None]]:
    return [
        (e.type, e.fact.subject, e.fact.predicate, e.fact.value, e.metadata.get("file"))
        for e in events
    ]


#: the commit a cursor is written at: catalog-info.yaml unparseable (bdd0b8b..a74f456), or
#: sample-service declared by a second file too (0434eb2..bdd0b8b)
AT_THE_CURSOR = {
    "unparseable": ("2022-06-16T15:35", {"catalog-info.yaml": MERGED}),
    "declared twice": ("2021-04-17T11:04", {"catalog-info-docs-only.yaml": DOCS_ONLY}),
}


@pytest.mark.parametrize("older", [False, True], ids=["cursor", "cursor of 497f53a"])
@pytest.mark.parametrize("case", list(AT_THE_CURSOR))
def test_a_resumed_pull_keeps_what_the_history_before_its_cursor_decided(
    repo: GitRepo, case: str, older: bool
) -> None:
    """An unparseable file is kept as it was, an entity two files declare stays with the
    first; a cursor healthd wrote before it carried ``homes`` and ``kept`` (497f53a) has the
    history before it read once, so the fix at a74f456 is an event as in one full pull."""
    when, files = AT_THE_CURSOR[case]
    repo.commit("2021-02-01T09:00", {"catalog-info.yaml": SAMPLE, "moving-entity2.yaml": MOVING})
    repo.commit(when, files)
    cut = repo.head()
    repo.commit("2023-09-14T14:49", {"catalog-info.yaml": FIXED})
    resumed, full, _ = resumed_and_full(repo, cut, older=older)
    september = [e for e in full if e.timestamp.year == 2023]
    assert brief(september) == [
        ("revised", "sample-service", "lifecycle", "production", "catalog-info.yaml"),
        ("revised", "sample-service", "owner", "team-alpha", "catalog-info.yaml"),
    ]
    assert brief(resumed) == brief(full)
    assert [e.id for e in resumed] == [e.id for e in full]


ACME_CORP = """\
apiVersion: backstage.io/v1alpha1
kind: Location
metadata:
  name: org-identities
  description: Collection of all identity entities (groups/users)
spec:
  type: url
  targets:
    - ./acme/{team}.yaml
    - ./acme/{user}.yaml
"""

ADMIN_TEAM = """\
apiVersion: backstage.io/v1alpha1
kind: Group
metadata:
  name: platform-admin-team
spec:
  type: team
  children: []
  members:
    - joaodss
"""

JOAODSS = """\
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: joaodss
spec:
  profile:
    displayName: Joao Santos
  memberOf:
    - platform-admin-team
"""


def test_a_location_target_renamed_away_keeps_its_entities_until_the_location_follows(
    repo: GitRepo,
) -> None:
    """Backstage reads each target of a Location as its own location; one that is not found
    (and not optional) is an error, and that location's entities stay as they were. In
    7K-Group/backstage-catalog, 49f3ca4 renamed catalog/acme/joaodss-user.yaml and
    platform-admin-team.yaml, and 1a297f8 pointed catalog/acme-corp.yaml at the new names
    three minutes later: the user and the team never left Backstage's catalog."""
    old = {"team": "platform-admin-team", "user": "joaodss-user"}
    new = {"team": "team-platform-admin", "user": "user-joaodss"}
    repo.commit(
        "2026-02-20T19:59",
        {
            "catalog-info.yaml": ACME_CORP.format(**old),
            "acme/platform-admin-team.yaml": ADMIN_TEAM,
            "acme/joaodss-user.yaml": JOAODSS,
        },
    )
    repo.commit(
        "2026-02-20T20:26",
        {
            "acme/platform-admin-team.yaml": None,
            "acme/joaodss-user.yaml": None,
            "acme/team-platform-admin.yaml": ADMIN_TEAM,
            "acme/user-joaodss.yaml": JOAODSS,
        },
    )
    cut = repo.head()
    renamed = cut[:12]
    repo.commit("2026-02-20T20:29", {"catalog-info.yaml": ACME_CORP.format(**new)})
    result = source(repo).pull(None)
    assert result.ok, result.error
    assert [e for e in result.events if e.timestamp.minute != 59] == []
    assert sorted(result.skipped) == [
        f"catalog-info.yaml@{renamed}: Location org-identities target "
        f"'./acme/{name}.yaml' matches no file; what it declared is kept as before"
        for name in ("joaodss-user", "platform-admin-team")
    ]
    # and a pull resumed between the two commits keeps them too
    resumed, full, _ = resumed_and_full(repo, cut)
    assert brief(resumed) == brief(full)


def _as_497f53a_wrote_it(cursor: str) -> str:
    """The cursor as healthd wrote it before it carried ``homes`` and ``kept`` (497f53a):
    commit, config, gone, seen."""
    state = json.loads(cursor)
    state.pop("homes", None)
    state.pop("kept", None)
    return json.dumps(state, sort_keys=True, separators=(",", ":"))


def test_a_cursor_without_anything_to_keep_reads_no_history(repo: GitRepo) -> None:
    """An older cursor whose commit holds nothing unreadable and no entity declared twice
    needs nothing from the history: the pull resumed from it reads none of it."""
    repo.commit("2021-02-01T09:00", {"catalog-info.yaml": DOCS_ONLY})
    repo.commit("2021-03-01T09:00", {"catalog-info.yaml": DOCS_ONLY.replace("guest", "team-a")})
    cut = repo.head()
    repo.commit("2023-09-14T14:49", {"catalog-info.yaml": DOCS_ONLY.replace("guest", "team-b")})
    with logged_ranges() as seen:
        resumed, full, cursor = resumed_and_full(repo, cut, older=True)
    assert brief(resumed) == brief(full)
    assert seen == [cut, f"{cut}..{repo.head()}", repo.head()]
    # and the cursor it writes says it is not that old: the next pull reads no history
    assert json.loads(cursor)["kept"] == {}


def test_an_older_cursor_before_any_catalog_file_reads_no_history(repo: GitRepo) -> None:
    """An older cursor at a commit with no catalog file yet: what comes after it is all in
    the pull resumed from it, which reads no history, even when a later commit holds an
    unreadable file."""
    repo.commit("2021-01-01T09:00", {"README.md": "sample-service\n"})
    cut = repo.head()
    repo.commit("2022-06-16T15:35", {"catalog-info.yaml": MERGED, "moving-entity2.yaml": MOVING})
    repo.commit("2023-09-14T14:49", {"catalog-info.yaml": FIXED})
    with logged_ranges() as seen:
        resumed, full, _ = resumed_and_full(repo, cut, older=True)
    assert brief(resumed) == brief(full)
    assert seen == [cut, f"{cut}..{repo.head()}", repo.head()]


def test_a_deleted_file_back_unparseable_does_not_bring_back_what_it_declared(
    repo: GitRepo,
) -> None:
    """catalog-info.yaml deleted ends its entities; when it comes back with duplicate keys
    (the merge's shape) there is nothing to keep as before: the catalog did not hold it.
    One full pull brought back sample-service as the deleted file last declared it, the
    pull resumed between the two commits did not."""
    repo.commit("2022-06-01T09:00", {"catalog-info.yaml": SAMPLE, "moving-entity2.yaml": MOVING})
    repo.commit("2022-06-10T09:00", {"catalog-info.yaml": None})
    cut = repo.head()
    repo.commit("2022-06-16T15:35", {"catalog-info.yaml": MERGED})
    resumed, full, _ = resumed_and_full(repo, cut)
    assert [e for e in full if e.timestamp.day == 16] == []
    assert brief(resumed) == brief(full)
    assert source(repo).pull(None).skipped == [
        f"catalog-info.yaml@{repo.head()[:12]}: not valid YAML at line 11: found duplicate "
        "key 'apiVersion'; skipped"
    ]


def test_an_older_cursor_with_since_reads_the_history_from_since_as_the_full_pull(
    repo: GitRepo,
) -> None:
    """With ``since``, one full pull starts from the catalog at its last commit before it:
    catalog-info.yaml unparseable there has nothing to keep. A pull resumed from an older
    cursor reads that same history, not the one before ``since``."""
    repo.commit("2021-02-01T09:00", {"catalog-info.yaml": SAMPLE, "moving-entity2.yaml": MOVING})
    repo.commit("2021-06-16T15:35", {"catalog-info.yaml": MERGED})
    repo.commit("2022-03-01T09:00", {"moving-entity2.yaml": MOVING.replace("engineering", "sre")})
    cut = repo.head()
    repo.commit("2023-09-14T14:49", {"catalog-info.yaml": FIXED})

    resumed, full, _ = resumed_and_full(repo, cut, older=True, since="2022-01-01")
    assert ("added", "sample-service", "lifecycle", "production", "catalog-info.yaml") in brief(
        full
    )
    assert brief(resumed) == brief(full)
    assert [e.id for e in resumed] == [e.id for e in full]
