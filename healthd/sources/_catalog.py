"""The Backstage software catalog as healthd reads it: entity references, descriptor
documents, and the facts a catalog asserts. Pure: no I/O, no clock.

Both readers of the `backstage` source (catalog files in git, a running catalog's API)
turn entities into facts here and diff successive catalogs with :func:`diff_catalog`.
Reference rules are the descriptor format's: ``[<kind>:][<namespace>/]<name>`` or the
compound ``{kind, namespace, name}``, the kind defaulting by field (``owner`` → Group,
``system`` → System, ``providesApis``/``consumesApis`` → API, ``memberOf``/``parent``/
``children`` → Group, ``members`` → User; ``dependsOn``/``dependencyOf`` have none) and the
namespace to the referring entity's; refs compare lowercased, as ``stringifyEntityRef``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from healthd.model import Domain, Fact, FactKey
from healthd.sources._gitlog import Held

DEFAULT_NAMESPACE = "default"

#: The built-in kinds of the descriptor format, lowercased → as written.
KINDS: dict[str, str] = {
    "component": "Component",
    "api": "API",
    "resource": "Resource",
    "system": "System",
    "domain": "Domain",
    "group": "Group",
    "user": "User",
    "location": "Location",
    "template": "Template",
}

EXISTS = "exists"
DEP_PREFIX = "dependency:"

# metadata.name / namespace: sequences of [a-zA-Z0-9] separated by one of [-_.], ≤ 63 chars
_NAME = re.compile(r"^[a-zA-Z0-9]+(?:[-_.][a-zA-Z0-9]+)*$")


class Malformed(ValueError):
    """An entity or reference the descriptor format rejects; the message says why."""


class OtherKind(Malformed):
    """An entity of a kind a plugin added (not one of the format's): not read, not wrong."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"kind {kind!r} is not a kind of the Backstage descriptor format")
        self.kind = kind


@dataclass(frozen=True, order=True)
class EntityRef:
    kind: str  # lowercased
    namespace: str  # lowercased
    name: str  # lowercased

    def __str__(self) -> str:
        return f"{self.kind}:{self.namespace}/{self.name}"


def parse_ref(value: object, *, default_kind: str | None, default_namespace: str) -> EntityRef:
    """A reference in string or compound form, with the field's defaults applied."""
    if isinstance(value, dict):
        kind, namespace, name = value.get("kind"), value.get("namespace"), value.get("name")
        if not isinstance(name, str) or not name:
            raise Malformed(f"reference {value!r} has no name")
        if kind is not None and not isinstance(kind, str):
            raise Malformed(f"reference {value!r} has a kind that is not a string")
        if namespace is not None and not isinstance(namespace, str):
            raise Malformed(f"reference {value!r} has a namespace that is not a string")
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
        colon, slash = text.find(":"), text.find("/")
        if slash != -1 and slash < colon:
            colon = -1  # a colon after the namespace is part of the name
        kind = text[:colon] if colon != -1 else None
        namespace = text[colon + 1 : slash] if slash != -1 else None
        name = text[max(colon + 1, slash + 1) :]
        if kind == "" or namespace == "" or not name:
            raise Malformed(f"reference {text!r} is not of the form [<kind>:][<namespace>/]<name>")
    else:
        raise Malformed(f"reference {value!r} is not a string")
    kind = kind or default_kind
    if not kind:
        raise Malformed(f"reference {text!r} has no kind and this field has no default kind")
    return EntityRef(kind.lower(), (namespace or default_namespace).lower(), name.lower())


def humanize(ref: EntityRef, default_kind: str) -> str:
    """The ref as Backstage shows it: kind left out when it is the field's default kind,
    namespace when it is ``default``."""
    text = ref.name if ref.namespace == DEFAULT_NAMESPACE else f"{ref.namespace}/{ref.name}"
    return text if ref.kind == default_kind.lower() else f"{ref.kind}:{text}"


def subject_of(ref: EntityRef) -> str:
    """Facts are about ``payments`` (a Component), ``api:payments``, ``group:team-a``…"""
    return humanize(ref, "component")


@dataclass(frozen=True)
class Entity:
    ref: EntityRef
    kind: str  # as the format writes it: "Component", "API", ...
    spec: Mapping[str, Any]
    where: str = ""  # the file (or "catalog API") it was read from


def _check_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise Malformed(f"{what} is missing or not a string")
    if len(value) > 63 or not _NAME.match(value):
        raise Malformed(
            f"{what} {value[:70]!r} is not 1-63 characters of [a-zA-Z0-9] separated by [-_.]"
        )
    return value


_REQUIRED: dict[str, tuple[str, ...]] = {
    "Component": ("type", "lifecycle", "owner"),
    "API": ("type", "lifecycle", "owner", "definition"),
    "Resource": ("type", "owner"),
    "System": ("owner",),
    "Domain": ("owner",),
    "Group": ("type", "children"),
    "User": (),
    "Location": (),
    "Template": ("type",),
}


def parse_entity(doc: object, where: str = "") -> Entity:
    """One descriptor document as an Entity; Malformed names what the format rejects."""
    if not isinstance(doc, dict):
        raise Malformed(f"document is a {type(doc).__name__}, not a mapping")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise Malformed("apiVersion is missing or not a string")
    if not isinstance(kind, str) or not kind:
        raise Malformed("kind is missing or not a string")
    if kind not in _REQUIRED:
        raise OtherKind(kind)
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise Malformed("metadata is missing or not a mapping")
    name = _check_name(metadata.get("name"), "metadata.name")
    namespace = metadata.get("namespace", DEFAULT_NAMESPACE)
    namespace = _check_name(namespace, "metadata.namespace")
    spec = doc.get("spec", {})
    if not isinstance(spec, dict):
        raise Malformed(f"{kind} {name}: spec is not a mapping")
    for key in _REQUIRED[kind]:
        if spec.get(key) is None:
            raise Malformed(f"{kind} {name}: spec.{key} is required")
    if kind == "Location" and spec.get("target") is None and spec.get("targets") is None:
        raise Malformed(f"Location {name}: spec.target or spec.targets is required")
    return Entity(EntityRef(kind.lower(), namespace.lower(), name.lower()), kind, spec, where)


def location_targets(entity: Entity) -> list[str]:
    """A Location's ``target`` and ``targets``, as written."""
    out: list[str] = []
    for value in (entity.spec.get("target"), *(_as_list(entity.spec.get("targets")))):
        if isinstance(value, str) and value.strip():
            out.append(value.strip())
    return out


def _as_list(value: object) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


# --------------------------------------------------------------------------- facts

_OWNED = ("Component", "API", "Resource", "System", "Domain", "Template")
_WITH_LIFECYCLE = ("Component", "API", "Resource")
_IN_SYSTEM = ("Component", "API", "Resource")
_TYPED = ("Component", "API", "Resource", "System", "Domain", "Template", "Group")


@dataclass
class CatalogFacts:
    """What a catalog asserts: the facts, the declared subjects, the inactive ones
    (deprecated), and the references that could not be resolved (one line each)."""

    facts: dict[FactKey, Held] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    deprecated: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


def catalog_facts(
    entities: Iterable[Entity], meta: Mapping[EntityRef, dict[str, str]]
) -> CatalogFacts:
    """The facts of a whole catalog (``meta``: per entity, what its events carry).

    Org-chart and dependency relations are read from both ends, as the catalog does:
    a user's ``memberOf`` and a group's ``members`` both make the membership, a group's
    ``parent`` and its parent's ``children`` both make the parentage, and ``dependencyOf``
    is ``dependsOn`` seen from the other side.
    """
    out = CatalogFacts()
    by_ref = {e.ref: e for e in entities if e.kind != "Location"}
    members: dict[EntityRef, set[EntityRef]] = {}
    member_of: dict[EntityRef, set[EntityRef]] = {}
    parents: dict[EntityRef, set[EntityRef]] = {}
    deps: dict[EntityRef, dict[EntityRef, set[str]]] = {}

    def refs(entity: Entity, key: str, default_kind: str | None) -> list[EntityRef]:
        found = []
        for value in _as_list(entity.spec.get(key)):
            try:
                found.append(
                    parse_ref(
                        value, default_kind=default_kind, default_namespace=entity.ref.namespace
                    )
                )
            except Malformed as exc:
                out.problems.append(
                    f"{entity.where}: {entity.kind} {entity.ref.name}: spec.{key}: {exc}"
                )
        return found

    def add(entity: Entity, predicate: str, value: str, domain: Domain, own: bool = True) -> None:
        subject = subject_of(entity.ref)
        depends = (FactKey(subject, EXISTS),) if own else ()
        fact = Fact(subject, predicate, value, domain)
        out.facts[fact.key] = Held(fact, depends, dict(meta.get(entity.ref, {})))

    for ref in sorted(by_ref):
        entity = by_ref[ref]
        kind, spec = entity.kind, entity.spec
        subject = subject_of(ref)
        out.declared.add(subject)
        lifecycle = spec.get("lifecycle") if kind in _WITH_LIFECYCLE else None
        lifecycle = lifecycle.strip() if isinstance(lifecycle, str) and lifecycle.strip() else None
        if lifecycle is not None:
            add(entity, "lifecycle", lifecycle, "tech", own=False)  # outlives a deprecation
        if lifecycle is not None and lifecycle.lower() == "deprecated":
            out.deprecated.add(subject)
            continue
        add(entity, EXISTS, "true", "ownership" if kind in ("Group", "User") else "tech", own=False)
        if kind in _TYPED and isinstance(spec.get("type"), str) and spec["type"].strip():
            add(entity, "type", spec["type"].strip(), "ownership" if kind == "Group" else "tech")
        if kind in _OWNED:
            for owner in refs(entity, "owner", "Group")[:1]:
                add(entity, "owner", humanize(owner, "group"), "ownership")
        if kind in _IN_SYSTEM:
            for system in refs(entity, "system", "System")[:1]:
                add(entity, "system", humanize(system, "system"), "tech")
        if kind == "System":
            for domain in refs(entity, "domain", "Domain")[:1]:
                add(entity, "domain", humanize(domain, "domain"), "tech")
        if kind in ("Component", "Resource"):
            for target in refs(entity, "dependsOn", None):
                deps.setdefault(ref, {}).setdefault(target, set()).add("dependsOn")
            for source in refs(entity, "dependencyOf", None):
                deps.setdefault(source, {}).setdefault(ref, set()).add("dependsOn")
        if kind == "Component":
            for api_field in ("consumesApis", "providesApis"):
                for target in refs(entity, api_field, "API"):
                    deps.setdefault(ref, {}).setdefault(target, set()).add(api_field)
        if kind == "Group":
            for parent in refs(entity, "parent", "Group"):
                parents.setdefault(ref, set()).add(parent)
            for child in refs(entity, "children", "Group"):
                parents.setdefault(child, set()).add(ref)
            for user in refs(entity, "members", "User"):
                members.setdefault(ref, set()).add(user)
                member_of.setdefault(user, set()).add(ref)
        if kind == "User":
            for group in refs(entity, "memberOf", "Group"):
                member_of.setdefault(ref, set()).add(group)
                members.setdefault(group, set()).add(ref)

    def org_fact(holder: EntityRef, predicate: str, values: Iterable[str]) -> None:
        declarer = by_ref.get(holder)
        if declarer is None or subject_of(holder) in out.deprecated:
            return  # only declared entities have facts
        add(declarer, predicate, " ".join(sorted(set(values))), "ownership")

    for group, users in members.items():
        org_fact(group, "members", (humanize(u, "user") for u in users))
    for user, groups in member_of.items():
        org_fact(user, "memberOf", (humanize(g, "group") for g in groups))
    for group, ups in parents.items():
        org_fact(group, "parent", (humanize(g, "group") for g in ups))
    for holder, targets in deps.items():
        if holder not in by_ref or subject_of(holder) in out.deprecated:
            continue
        subject = subject_of(holder)
        for target, relations in targets.items():
            target_subject = subject_of(target)
            fact = Fact(subject, DEP_PREFIX + target_subject, " ".join(sorted(relations)), "tech")
            depends = (FactKey(subject, EXISTS), FactKey(target_subject, EXISTS))
            out.facts[fact.key] = Held(fact, depends, dict(meta.get(holder, {})))
    return out


# --------------------------------------------------------------------------- diffing

ChangeType = Literal["added", "revised", "invalidated"]


@dataclass(frozen=True)
class CatalogChange:
    type: ChangeType
    held: Held
    previous: Fact | None = None
    reason: str | None = None


def diff_catalog(
    held: Mapping[FactKey, Held],
    declared_before: set[str],
    gone_before: set[str],
    now: CatalogFacts,
) -> tuple[list[CatalogChange], dict[FactKey, Held], set[str]]:
    """The changes from ``held`` to the catalog ``now``: (changes, new held, new gone).

    ``gone`` holds the subjects once declared and now absent. A fact that depends on the
    ``exists`` of a deprecated or gone entity is not held (a dependency on a removed
    component ends with it, by cascade); a fact left out because an ``exists`` ends in
    this very change is not invalidated on its own either: it ends by cascade, as truth
    and the reference memory's propagation end it.
    """
    gone = (gone_before | (declared_before - now.declared)) - now.declared
    inactive = {FactKey(s, EXISTS) for s in gone | now.deprecated}
    desired = {
        key: h
        for key, h in now.facts.items()
        if key.predicate == EXISTS or not any(d in inactive for d in h.depends_on)
    }
    ended_exists = {k for k in held if k.predicate == EXISTS and k not in desired}
    born: list[CatalogChange] = []
    changed: list[CatalogChange] = []
    ended: list[CatalogChange] = []
    dead: list[CatalogChange] = []
    new_held: dict[FactKey, Held] = {}
    for key in sorted(desired):
        h = desired[key]
        before = held.get(key)
        if before is None:
            (born if key.predicate == EXISTS else changed).append(CatalogChange("added", h))
        elif before.fact != h.fact:
            changed.append(CatalogChange("revised", h, previous=before.fact))
        new_held[key] = h  # unchanged or not, it is now declared where `now` says
    for key in sorted(set(held) - set(desired)):
        h = held[key]
        subject = key.subject
        if key.predicate == EXISTS:
            why = (
                "lifecycle: deprecated" if subject in now.deprecated else "removed from the catalog"
            )
            dead.append(CatalogChange("invalidated", h, reason=f"{subject} {why}"))
        elif any(d in ended_exists for d in h.depends_on):
            continue  # ends by cascade along depends_on
        elif subject not in now.declared:
            ended.append(
                CatalogChange("invalidated", h, reason=f"{subject} removed from the catalog")
            )
        else:
            ended.append(
                CatalogChange("invalidated", h, reason=f"{key.predicate} no longer declared")
            )
    return born + changed + ended + dead, new_held, gone
