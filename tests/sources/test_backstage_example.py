"""The `backstage` source on the bundled example's shape of project: the shop's services
(auth-service, payments-v1 replaced by payments-v2, checkout) catalogued in the files
teams keep beside their code, the org chart in a file a Location points at, read by
`healthd timeline` and scored by `healthd evaluate` as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import GitRepo

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "backstage.toml"


def component(name: str, owner: str, lifecycle: str = "production", **spec: str) -> str:
    extra = "".join(f"  {k}: {v}\n" for k, v in spec.items())
    return (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n"
        f"  name: {name}\n  annotations:\n    github.com/project-slug: acme/shop\n"
        f"spec:\n  type: service\n  lifecycle: {lifecycle}\n  owner: {owner}\n"
        f"  system: shop\n{extra}"
    )


SHOP = """\
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
  name: shop-org
spec:
  targets: [./org/groups.yaml, ./org/people.yaml]
"""

GROUPS = """\
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: platform}}
spec: {{type: department, children: [identity, payments]}}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: identity}}
spec: {{type: team, children: [], members: [{identity}]}}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: payments}}
spec: {{type: team, children: [], members: [erin]}}
"""

PEOPLE = """\
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: alice}
spec: {memberOf: []}
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: dave}
spec: {memberOf: []}
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: erin}
spec: {memberOf: []}
"""

DB = """\
---
apiVersion: backstage.io/v1alpha1
kind: Resource
metadata:
  name: payments-db
spec:
  type: database
  owner: payments
  system: shop
"""


def build_shop(repo: GitRepo) -> None:
    repo.commit(
        "2026-01-05T09:00",
        {
            "catalog-info.yaml": SHOP,
            "org/groups.yaml": GROUPS.format(identity="alice, dave"),
            "org/people.yaml": PEOPLE,
            "auth-service/catalog-info.yaml": component(
                "auth-service", "identity", providesApis="[auth-api]"
            ),
            "payments-v1/catalog-info.yaml": component(
                "payments-v1", "payments", dependsOn="[resource:payments-db]"
            )
            + DB,
            "checkout/catalog-info.yaml": component(
                "checkout", "user:alice", dependsOn="[component:payments-v1]"
            ),
        },
        message="Register the shop in the catalog",
    )
    repo.commit(
        "2026-02-02T10:00",
        {
            "payments-v1/catalog-info.yaml": component(
                "payments-v1", "payments", "deprecated", dependsOn="[resource:payments-db]"
            )
            + DB,
            "payments-v2/catalog-info.yaml": component(
                "payments-v2", "payments", dependsOn="[resource:payments-db]"
            )
            + DB,
        },
        message="payments-v2 replaces payments-v1 and declares the database too",
    )
    repo.commit(
        "2026-02-02T10:05",
        {"payments-v1/catalog-info.yaml": component("payments-v1", "payments", "deprecated")},
        message="The database is declared by payments-v2 only",
    )
    repo.commit(
        "2026-03-02T11:00",
        {
            "payments-v1": None,
            "checkout/catalog-info.yaml": component(
                "checkout", "user:alice", dependsOn="[component:payments-v2]"
            ),
        },
        message="Decommission payments-v1",
    )
    repo.commit(
        "2026-03-16T12:00",
        {
            "auth-service/catalog-info.yaml": component(
                "auth-service", "platform", providesApis="[auth-api]"
            ),
            "org/groups.yaml": GROUPS.format(identity="alice"),
        },
        message="Platform takes auth-service; dave leaves identity",
    )


def healthd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "healthd", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )


def test_the_shop_catalog_through_timeline_and_evaluate(repo: GitRepo, tmp_path: Path) -> None:
    build_shop(repo)
    config = tmp_path / "backstage.toml"
    config.write_text(
        EXAMPLE.read_text()
        .replace("/srv/checkouts/shop", str(repo.path))
        .replace("/var/lib/healthd/state.sqlite", str(tmp_path / "state.sqlite"))
    )
    done = healthd("timeline", "--config", str(config))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    # declared in two files for one commit: reported once, the first file keeps it
    assert done.stderr.count("healthd: warning:") == 2, done.stderr  # the line and a count
    assert "resource:default/payments-db is also declared in payments-v1/catalog-info.yaml" in (
        done.stderr
    )
    changes = [
        (
            e["timestamp"][:10],
            e["type"],
            e["fact"]["subject"],
            e["fact"]["predicate"],
            e["fact"]["value"],
        )
        for e in events
        if e["timestamp"] > "2026-01-06" and e["type"] != "revalidated"
    ]
    assert changes == [
        ("2026-02-02", "added", "payments-v2", "exists", "true"),
        ("2026-02-02", "revised", "payments-v1", "lifecycle", "deprecated"),
        ("2026-02-02", "added", "payments-v2", "dependency:resource:payments-db", "dependsOn"),
        ("2026-02-02", "added", "payments-v2", "lifecycle", "production"),
        ("2026-02-02", "added", "payments-v2", "owner", "payments"),
        ("2026-02-02", "added", "payments-v2", "system", "shop"),
        ("2026-02-02", "added", "payments-v2", "type", "service"),
        ("2026-02-02", "invalidated", "payments-v1", "exists", "true"),
        ("2026-03-02", "added", "checkout", "dependency:payments-v2", "dependsOn"),
        ("2026-03-02", "invalidated", "payments-v1", "lifecycle", "deprecated"),
        ("2026-03-16", "revised", "auth-service", "owner", "platform"),
        ("2026-03-16", "revised", "group:identity", "members", "alice"),
        ("2026-03-16", "invalidated", "user:dave", "memberOf", "identity"),
    ]
    # the database moved between files in two commits: never ended, never re-added
    assert not any(c[2] == "resource:payments-db" for c in changes)
    deprecation = next(e for e in events if e["type"] == "invalidated")
    assert deprecation["reason"] == "payments-v1 lifecycle: deprecated"
    assert deprecation["metadata"]["file"] == "payments-v1/catalog-info.yaml"
    # the same catalog scored: the reference memory ends payments-v1's facts and
    # checkout's dependency on it by propagation along depends_on
    scored = healthd("evaluate", "--config", str(config), "--format", "json")
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    scores = {t["name"]: t["final"]["metrics"]["all"] for t in report["targets"]}
    assert scores["reference"]["consistency"] == 1.0
    assert scores["reference"]["contamination"] == 0.0
    assert scores["naive"]["contamination"] > 0.0
