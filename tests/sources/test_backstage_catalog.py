"""The catalog model: references resolved as the descriptor format says, and the
incremental catalog (what the files reader uses, commit by commit) giving exactly the
changes of diffing whole catalogs (what the API reader does)."""

from __future__ import annotations

import random

import pytest

from healthd.sources._catalog import (
    Catalog,
    Entity,
    EntityRef,
    Malformed,
    catalog_facts,
    diff_catalog,
    humanize,
    parse_entity,
    parse_ref,
)


@pytest.mark.parametrize(
    ("text", "default_kind", "expected"),
    [
        ("team-a", "Group", "group:ns1/team-a"),
        ("user:alice", "Group", "user:ns1/alice"),
        ("other/team-a", "Group", "group:other/team-a"),
        ("Component:Default/Payments", None, "component:default/payments"),
        ("resource:db", None, "resource:ns1/db"),
        ("ns/name:with:colons", "API", "api:ns/name:with:colons"),
        ({"kind": "Group", "name": "team-b"}, "User", "group:ns1/team-b"),
        ({"name": "bob"}, "User", "user:ns1/bob"),
    ],
)
def test_references_take_the_field_default_kind_and_the_entity_namespace(
    text, default_kind, expected
) -> None:
    ref = parse_ref(text, default_kind=default_kind, default_namespace="ns1")
    assert str(ref) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("payments", "no kind"),
        (":default/x", "not of the form"),
        ("user:/x", "not of the form"),
        ("group:", "not of the form"),
        (42, "not a string"),
    ],
)
def test_references_the_format_rejects(text, words) -> None:
    with pytest.raises(Malformed, match=words):
        parse_ref(text, default_kind=None, default_namespace="default")


def test_subjects_read_as_backstage_shows_them() -> None:
    assert humanize(EntityRef("component", "default", "x"), "component") == "x"
    assert humanize(EntityRef("group", "billing", "x"), "group") == "billing/x"
    assert humanize(EntityRef("user", "default", "x"), "group") == "user:x"


# -- the incremental catalog against whole-catalog diffs


def _random_entity(rng: random.Random, kind: str, name: str, names: dict[str, list[str]]) -> Entity:
    def some(kind_: str, k: int) -> list[str]:
        pool = names[kind_]
        return rng.sample(pool, k=min(len(pool), rng.randrange(k + 1)))

    owner = rng.choice([*names["Group"], "user:" + rng.choice(names["User"])])
    spec: dict = {}
    if kind in ("Component", "API", "Resource"):
        spec = {
            "type": rng.choice(["service", "library"]),
            "lifecycle": rng.choice(["production", "production", "experimental", "deprecated"]),
            "owner": owner,
            "definition": "x",
        }
        if rng.random() < 0.7:
            spec["system"] = rng.choice(["shop", "billing"])
    if kind in ("Component", "Resource"):
        spec["dependsOn"] = [f"component:{n}" for n in some("Component", 2)] + [
            f"resource:{n}" for n in some("Resource", 1)
        ]
        if rng.random() < 0.3:
            spec["dependencyOf"] = [f"component:{n}" for n in some("Component", 1)]
    if kind == "Component":
        spec["consumesApis"] = some("API", 2)
        spec["providesApis"] = some("API", 1)
    if kind == "Group":
        spec = {"type": "team", "children": some("Group", 1), "members": some("User", 2)}
        if rng.random() < 0.5:
            spec["parent"] = rng.choice(names["Group"])
    if kind == "User":
        spec = {"memberOf": some("Group", 2)}
    doc = {"apiVersion": "backstage.io/v1alpha1", "kind": kind, "metadata": {"name": name}}
    doc["spec"] = spec
    return parse_entity(doc, f"{name}.yaml")


@pytest.mark.parametrize("seed", range(40))
def test_the_incremental_catalog_gives_the_changes_of_whole_catalog_diffs(seed: int) -> None:
    rng = random.Random(seed)
    names = {
        "Component": [f"svc-{i}" for i in range(6)],
        "API": [f"api-{i}" for i in range(3)],
        "Resource": [f"db-{i}" for i in range(2)],
        "Group": [f"team-{i}" for i in range(3)],
        "User": [f"user-{i}" for i in range(4)],
    }
    everything = [(kind, name) for kind, pool in names.items() for name in pool]
    current: dict[EntityRef, Entity] = {}
    for kind, name in everything:
        if rng.random() < 0.8:
            e = _random_entity(rng, kind, name, names)
            current[e.ref] = e
    incremental = Catalog()
    held: dict = {}
    declared: set[str] = set()
    gone: set[str] = set()
    mutated: set[EntityRef] | None = None  # the first update reads everything
    for step in range(25):
        metas = {ref: {"entity": str(ref), "file": e.where} for ref, e in current.items()}
        # told which refs changed (as the files reader does), or finding them itself
        hint = mutated if step % 2 else None
        changes, _ = incremental.update(dict(current), metas, changed=hint)
        whole = catalog_facts(current.values(), metas)
        expected, held, gone = diff_catalog(held, declared, gone, whole)
        declared = whole.declared
        assert changes == expected
        assert incremental.held == held
        assert incremental.gone == gone
        mutated = set()
        for kind, name in rng.sample(everything, k=rng.randrange(1, 4)):
            ref = EntityRef(kind.lower(), "default", name)
            mutated.add(ref)
            if ref in current and rng.random() < 0.3:
                del current[ref]
            else:
                current[ref] = _random_entity(rng, kind, name, names)
