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
from typing import Any, Literal, NamedTuple

from healthd.errors import quote
from healthd.model import Domain, Fact, FactKey
from healthd.people import Person
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
        super().__init__(f"kind {quote(kind)} is not a kind of the Backstage descriptor format")
        self.kind = kind


class EntityRef(NamedTuple):
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
            raise Malformed(f"reference {quote(value)} has no name")
        if kind is not None and not isinstance(kind, str):
            raise Malformed(f"reference {quote(value)} has a kind that is not a string")
        if namespace is not None and not isinstance(namespace, str):
            raise Malformed(f"reference {quote(value)} has a namespace that is not a string")
        shown: object = value
    elif isinstance(value, str):
        text = value.strip()
        colon, slash = text.find(":"), text.find("/")
        if slash != -1 and slash < colon:
            colon = -1  # a colon after the namespace is part of the name
        kind = text[:colon] if colon != -1 else None
        namespace = text[colon + 1 : slash] if slash != -1 else None
        name = text[max(colon + 1, slash + 1) :]
        shown = text
        if kind == "" or namespace == "" or not name:
            raise Malformed(
                f"reference {quote(text)} is not of the form [<kind>:][<namespace>/]<name>"
            )
    else:
        raise Malformed(f"reference {quote(value)} is not a string")
    kind = kind or default_kind
    if not kind:
        raise Malformed(f"reference {quote(shown)} has no kind and this field has no default kind")
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
    "User": ("memberOf",),
    "Location": (),
    "Template": ("type",),
}

#: Fields the kinds' schemas type (when present): a non-empty string, or a list. Backstage
#: rejects the whole entity otherwise (a ``subcomponentOf`` written as a list, a
#: ``lifecycle: 1``), so it is not in the catalog. ``dependencyOf`` is in no schema (its
#: processor reads one ref as a list of one): not checked.
_STRINGS: dict[str, tuple[str, ...]] = {
    "Component": ("type", "lifecycle", "owner", "system", "subcomponentOf"),
    "API": ("type", "lifecycle", "owner", "system"),
    "Resource": ("type", "owner", "system"),
    "System": ("owner", "domain"),
    "Domain": ("owner",),
    "Group": ("type", "parent"),
}
_LISTS: dict[str, tuple[str, ...]] = {
    "Component": ("providesApis", "consumesApis", "dependsOn"),
    "Resource": ("dependsOn",),
    "Group": ("children", "members"),
    "User": ("memberOf",),
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
    for key in _STRINGS.get(kind, ()):
        value = spec.get(key)
        if value is not None and not (isinstance(value, str) and value):
            raise Malformed(f"{kind} {name}: spec.{key} is not a string")
    for key in _LISTS.get(kind, ()):
        if spec.get(key) is not None and not isinstance(spec[key], list):
            raise Malformed(f"{kind} {name}: spec.{key} is not a list")
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


#: A relation an entity states, filed under the entity that holds the fact:
#: (predicate family, holder, the other end, label). Families: members, memberOf, parent,
#: dependency (labelled dependsOn, consumesApis or providesApis).
Edge = tuple[str, EntityRef, EntityRef, str]


@dataclass(frozen=True)
class Contribution:
    """What one entity says on its own: its facts (relations aside), whether it is declared
    (a Location is not) and deprecated, the relations it states, and its bad references."""

    subject: str
    declared: bool
    deprecated: bool
    own: dict[FactKey, Held]
    edges: tuple[Edge, ...]
    problems: tuple[str, ...]


def contribution(entity: Entity, meta: Mapping[str, str]) -> Contribution:
    """One entity's contribution. Relations are read from both ends, as the catalog does:
    a user's ``memberOf`` and a group's ``members`` both make the membership, a group's
    ``parent`` and its parent's ``children`` both make the parentage, and ``dependencyOf``
    is ``dependsOn`` seen from the other side."""
    ref, kind, spec = entity.ref, entity.kind, entity.spec
    subject = subject_of(ref)
    if kind == "Location":
        return Contribution(subject, False, False, {}, (), ())
    own: dict[FactKey, Held] = {}
    edges: list[Edge] = []
    problems: list[str] = []

    def refs(key: str, default_kind: str | None) -> list[EntityRef]:
        found = []
        bad: list[Malformed] = []
        for value in _as_list(spec.get(key)):
            try:
                found.append(
                    parse_ref(value, default_kind=default_kind, default_namespace=ref.namespace)
                )
            except Malformed as exc:
                bad.append(exc)
        if bad:  # one line a field, however many of its references are bad
            more = f" (and {len(bad) - 1} more in this field)" if len(bad) > 1 else ""
            problems.append(f"{entity.where}: {kind} {ref.name}: spec.{key}: {bad[0]}{more}")
        return found

    def add(predicate: str, value: str, domain: Domain, depends: bool = True) -> None:
        fact = Fact(subject, predicate, value, domain)
        own[fact.key] = Held(fact, (FactKey(subject, EXISTS),) if depends else (), dict(meta))

    lifecycle = spec.get("lifecycle") if kind in _WITH_LIFECYCLE else None
    lifecycle = lifecycle.strip() if isinstance(lifecycle, str) and lifecycle.strip() else None
    if lifecycle is not None:
        add("lifecycle", lifecycle, "tech", depends=False)  # outlives a deprecation
    if lifecycle is not None and lifecycle.lower() == "deprecated":
        return Contribution(subject, True, True, own, (), ())
    add(EXISTS, "true", "ownership" if kind in ("Group", "User") else "tech", depends=False)
    if kind in _TYPED and isinstance(spec.get("type"), str) and spec["type"].strip():
        add("type", spec["type"].strip(), "ownership" if kind == "Group" else "tech")
    if kind in _OWNED:
        for owner in refs("owner", "Group")[:1]:
            add("owner", humanize(owner, "group"), "ownership")
    if kind in _IN_SYSTEM:
        for system in refs("system", "System")[:1]:
            add("system", humanize(system, "system"), "tech")
    if kind == "System":
        for domain in refs("domain", "Domain")[:1]:
            add("domain", humanize(domain, "domain"), "tech")
    if kind in ("Component", "Resource"):
        edges += [("dependency", ref, t, "dependsOn") for t in refs("dependsOn", None)]
        edges += [("dependency", s, ref, "dependsOn") for s in refs("dependencyOf", None)]
    if kind == "Component":
        for api_field in ("consumesApis", "providesApis"):
            edges += [("dependency", ref, t, api_field) for t in refs(api_field, "API")]
    if kind == "Group":
        edges += [("parent", ref, p, "") for p in refs("parent", "Group")]
        edges += [("parent", c, ref, "") for c in refs("children", "Group")]
        for user in refs("members", "User"):
            edges += [("members", ref, user, ""), ("memberOf", user, ref, "")]
    if kind == "User":
        for group in refs("memberOf", "Group"):
            edges += [("memberOf", ref, group, ""), ("members", group, ref, "")]
    return Contribution(subject, True, False, own, tuple(edges), tuple(problems))


_RELATION_DEFAULTS = {"members": "user", "memberOf": "group", "parent": "group"}


def relation_facts(
    holder: Contribution, edges: Iterable[tuple[str, EntityRef, str]], meta: Mapping[str, str]
) -> dict[FactKey, Held]:
    """The relation facts of a declared, active entity from the edges filed under it."""
    subject = holder.subject
    own_exists = FactKey(subject, EXISTS)
    org: dict[str, set[str]] = {}
    deps: dict[EntityRef, set[str]] = {}
    for family, other, label in edges:
        if family == "dependency":
            deps.setdefault(other, set()).add(label)
        else:
            org.setdefault(family, set()).add(humanize(other, _RELATION_DEFAULTS[family]))
    out: dict[FactKey, Held] = {}
    for predicate, values in org.items():
        fact = Fact(subject, predicate, " ".join(sorted(values)), "ownership")
        out[fact.key] = Held(fact, (own_exists,), dict(meta))
    for target, labels in deps.items():
        target_subject = subject_of(target)
        fact = Fact(subject, DEP_PREFIX + target_subject, " ".join(sorted(labels)), "tech")
        out[fact.key] = Held(fact, (own_exists, FactKey(target_subject, EXISTS)), dict(meta))
    return out


def catalog_facts(
    entities: Iterable[Entity], meta: Mapping[EntityRef, Mapping[str, str]]
) -> CatalogFacts:
    """The facts of a whole catalog (``meta``: per entity, what its events carry)."""
    out = CatalogFacts()
    contribs = {e.ref: contribution(e, meta.get(e.ref, {})) for e in entities}
    filed: dict[EntityRef, list[tuple[str, EntityRef, str]]] = {}
    for ref in sorted(contribs):
        c = contribs[ref]
        out.problems += c.problems
        for family, holder, other, label in c.edges:
            filed.setdefault(holder, []).append((family, other, label))
        if c.declared:
            out.declared.add(c.subject)
            out.facts.update(c.own)
        if c.deprecated:
            out.deprecated.add(c.subject)
    for ref, c in contribs.items():
        if c.declared and not c.deprecated and ref in filed:
            out.facts.update(relation_facts(c, filed[ref], meta.get(ref, {})))
    return out


# --------------------------------------------------------------------------- diffing

ChangeType = Literal["added", "revised", "invalidated"]


@dataclass(frozen=True)
class CatalogChange:
    type: ChangeType
    held: Held
    previous: Fact | None = None
    reason: str | None = None


def _changes(
    held: dict[FactKey, Held],
    facts: Mapping[FactKey, Held],
    keys: Iterable[FactKey],
    inactive: set[FactKey],
    declared: set[str],
    deprecated: set[str],
) -> list[CatalogChange]:
    """Bring ``held`` (updated in place) to what ``facts`` want for ``keys``; the changes.

    A fact that depends on the ``exists`` of an inactive (deprecated or gone) entity is
    not wanted; one left out because an ``exists`` ends in this very change is not
    invalidated on its own either: it ends by cascade, as truth and the reference memory's
    propagation end it.
    """

    def wanted(key: FactKey) -> Held | None:
        h = facts.get(key)
        if h is None or (key.predicate != EXISTS and any(d in inactive for d in h.depends_on)):
            return None
        return h

    born: list[CatalogChange] = []
    changed: list[CatalogChange] = []
    ended: list[CatalogChange] = []
    dead: list[CatalogChange] = []
    leaving: list[FactKey] = []
    for key in sorted(set(keys)):
        h = wanted(key)
        before = held.get(key)
        if h is None:
            if before is not None:
                leaving.append(key)
            continue
        if before is None:
            (born if key.predicate == EXISTS else changed).append(CatalogChange("added", h))
        elif before.fact != h.fact:
            changed.append(CatalogChange("revised", h, previous=before.fact))
        held[key] = h  # unchanged or not, it is now declared where `facts` says
    ended_exists = {k for k in leaving if k.predicate == EXISTS}
    for key in leaving:
        h = held.pop(key)
        subject = key.subject
        if key.predicate == EXISTS:
            why = "lifecycle: deprecated" if subject in deprecated else "removed from the catalog"
            dead.append(CatalogChange("invalidated", h, reason=f"{subject} {why}"))
        elif any(d in ended_exists for d in h.depends_on):
            continue  # ends by cascade along depends_on
        elif subject not in declared:
            ended.append(
                CatalogChange("invalidated", h, reason=f"{subject} removed from the catalog")
            )
        else:
            ended.append(
                CatalogChange("invalidated", h, reason=f"{key.predicate} no longer declared")
            )
    return born + changed + ended + dead


def diff_catalog(
    held: Mapping[FactKey, Held],
    declared_before: set[str],
    gone_before: set[str],
    now: CatalogFacts,
) -> tuple[list[CatalogChange], dict[FactKey, Held], set[str]]:
    """The changes from ``held`` to the catalog ``now``: (changes, new held, new gone).

    ``gone`` holds the subjects once declared and now absent: a dependency declared on a
    removed entity ends with it and stays ended while the entity is away.
    """
    gone = (gone_before | (declared_before - now.declared)) - now.declared
    inactive = {FactKey(s, EXISTS) for s in gone | now.deprecated}
    new_held = dict(held)
    changes = _changes(
        new_held, now.facts, held.keys() | now.facts.keys(), inactive, now.declared, now.deprecated
    )
    return changes, new_held, gone


class Catalog:
    """The catalog kept up to date entity by entity: :meth:`update` recomputes only the
    entities that changed and the facts their relations touch, and gives the same changes
    as :func:`diff_catalog` over :func:`catalog_facts` of the whole catalog."""

    def __init__(self, gone: Iterable[str] = ()) -> None:
        self.entities: dict[EntityRef, Entity] = {}
        self.metas: dict[EntityRef, Mapping[str, str]] = {}
        self.contribs: dict[EntityRef, Contribution] = {}
        self.filed: dict[EntityRef, dict[tuple[str, EntityRef, str], int]] = {}
        self.facts: dict[FactKey, Held] = {}
        self.keys_of: dict[EntityRef, set[FactKey]] = {}
        self.dependents: dict[FactKey, set[FactKey]] = {}
        self.held: dict[FactKey, Held] = {}
        self.declared: set[str] = set()
        self.deprecated: set[str] = set()
        self.gone: set[str] = set(gone)

    def update(
        self,
        entities: Mapping[EntityRef, Entity],
        metas: Mapping[EntityRef, Mapping[str, str]],
        changed: Iterable[EntityRef] | None = None,
    ) -> tuple[list[CatalogChange], list[str]]:
        """The changes to the catalog ``entities`` (and the bad references of the entities
        that changed, one line each). ``changed``, when the caller knows, holds every ref
        that may differ from the last update: the others are not compared."""
        old_entities, old_metas = self.entities, self.metas
        changed_hint = changed
        candidates = old_entities.keys() | entities.keys() if changed is None else changed
        changed = sorted(
            ref
            for ref in candidates
            if old_entities.get(ref) is not entities.get(ref)
            or (old_metas.get(ref) is not metas.get(ref) and old_metas.get(ref) != metas.get(ref))
        )
        if not changed:
            return [], []
        problems: list[str] = []
        holders: set[EntityRef] = set(changed)
        inactive_before = {s for s in self.gone | self.deprecated}
        for ref in changed:
            old = self.contribs.pop(ref, None)
            if old is not None:
                self._file(old.edges, -1, holders)
                self.declared.discard(old.subject)
                self.deprecated.discard(old.subject)
            entity = entities.get(ref)
            if entity is None:
                if old is not None and old.declared:
                    self.gone.add(old.subject)
                continue
            c = contribution(entity, metas.get(ref, {}))
            self.contribs[ref] = c
            problems += c.problems
            self._file(c.edges, 1, holders)
            if c.declared:
                self.declared.add(c.subject)
                self.gone.discard(c.subject)
            if c.deprecated:
                self.deprecated.add(c.subject)
        if candidates is changed_hint:
            for ref in changed:
                if ref in entities:
                    self.entities[ref], self.metas[ref] = entities[ref], metas[ref]
                else:
                    self.entities.pop(ref, None)
                    self.metas.pop(ref, None)
        else:
            self.entities, self.metas = dict(entities), dict(metas)
        touched: set[FactKey] = set()
        for holder in holders:
            for key in self.keys_of.pop(holder, ()):
                self._drop(key)
                touched.add(key)
            new = self._facts_of(holder)
            for key, h in new.items():
                self.facts[key] = h
                for dep in h.depends_on:
                    self.dependents.setdefault(dep, set()).add(key)
            if new:
                self.keys_of[holder] = set(new)
            touched |= new.keys()
        inactive_now = self.gone | self.deprecated
        for subject in inactive_before ^ inactive_now:
            touched |= self.dependents.get(FactKey(subject, EXISTS), set())
        inactive = {FactKey(s, EXISTS) for s in inactive_now}
        changes = _changes(self.held, self.facts, touched, inactive, self.declared, self.deprecated)
        return changes, problems

    def _file(self, edges: Iterable[Edge], step: int, holders: set[EntityRef]) -> None:
        for family, holder, other, label in edges:
            filed = self.filed.setdefault(holder, {})
            edge = (family, other, label)
            count = filed.get(edge, 0) + step
            if count:
                filed[edge] = count
            else:
                filed.pop(edge, None)
                if not filed:
                    del self.filed[holder]
            holders.add(holder)

    def _facts_of(self, ref: EntityRef) -> dict[FactKey, Held]:
        c = self.contribs.get(ref)
        if c is None or not c.declared:
            return {}
        out = dict(c.own)
        if not c.deprecated and ref in self.filed:
            out.update(relation_facts(c, self.filed[ref], self.metas.get(ref, {})))
        return out

    def _drop(self, key: FactKey) -> None:
        h = self.facts.pop(key)
        for dep in h.depends_on:
            keys = self.dependents.get(dep)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.dependents[dep]


def user_person(entity: Entity) -> Person | None:
    """A Backstage User as identity data for the reader: its name as a handle (``ns/name``
    outside the default namespace: ``contractors/alice`` is not ``alice``), its
    ``profile.displayName`` and ``profile.email`` (:func:`healthd.reading.aliases.people_table`)."""
    if entity.kind != "User":
        return None
    profile = entity.spec.get("profile")
    profile = profile if isinstance(profile, Mapping) else {}
    name, email = profile.get("displayName"), profile.get("email")
    ref = entity.ref
    return Person(
        ref.name if ref.namespace == DEFAULT_NAMESPACE else f"{ref.namespace}/{ref.name}",
        (name,) if isinstance(name, str) and name.strip() else (),
        (email,) if isinstance(email, str) and "@" in email else (),
    )
