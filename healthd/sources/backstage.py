"""The `backstage` source: the service catalog and org chart as a timeline.

Two ways to read a catalog (set one)::

    [sources.catalog]
    kind = "backstage"
    path = "/srv/checkouts/platform"     # a repository whose history holds catalog files
    # url = "https://github.com/acme/platform.git"  # or a remote, with cache_dir (as git)
    catalog_files = ["**/catalog-info.yaml", "**/catalog-info.yml"]
                                         # where the catalog starts (path globs); Location
                                         # entities in them are followed to other files
    # branch, first_parent, since, revalidate_interval, revalidate_clock: as for git

    [sources.live-catalog]
    kind = "backstage"
    base_url = "https://backstage.acme.io"   # a running Backstage (its backend's base URL)
    token_env = "BACKSTAGE_TOKEN"            # env var holding a bearer token; unset: none
    filter = ["kind=component,kind=api,kind=resource,kind=system,kind=group,kind=user"]
    page_size = 500                          # entities per page of /entities/by-query
    revalidate_interval = "P1D"
    # timeout_seconds, max_retries, backoff_seconds, max_backoff_seconds,
    # max_rate_limit_wait_seconds: as for github and jira

From files, events are timestamped with the commit that changed them; from the API, with
the time the change was observed (the previous catalog is kept in the cursor and each
pull is diffed against it). Facts (see :mod:`healthd.sources._catalog`): ``exists``,
``owner``, ``lifecycle``, ``type``, ``system``, ``domain``, ``dependency:<entity>`` (with
``depends_on`` both entities' ``exists``), and the org chart: a group's ``parent`` and
``members``, a user's ``memberOf``. A deprecated or removed entity's ``exists`` ends, and
with it, by cascade, its facts and the dependencies other entities declare on it. An
entity moved to another file, or a renamed file, is the same entity: nothing changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import requests
from pydantic import BaseModel, ConfigDict, Field, field_validator

from healthd._http import BadPayload, HttpClient, HttpError, PagedHttpOptions, check_http_url
from healthd.durations import parse_duration
from healthd.errors import ConfigError, SourceError, quote
from healthd.logging import get_logger
from healthd.model import ChangeEvent, Fact, FactKey
from healthd.people import Person
from healthd.sources import PullResult, register_source, unique_events
from healthd.sources._catalog import (
    Catalog,
    CatalogChange,
    Entity,
    EntityRef,
    Malformed,
    OtherKind,
    catalog_facts,
    diff_catalog,
    location_targets,
    parse_entity,
    user_person,
)
from healthd.sources._catalog_files import Parsed, glob_regex, parse_catalog_file, resolve_target
from healthd.sources._gitlog import (
    Extractor,
    Held,
    RepoSource,
    Skips,
    dump_cursor,
    event_id,
    fact_hash,
    prune_seen,
    revalidation_time,
    revalidations,
    since_boundary,
    wall_clock,
)
from healthd.sources._gitrepo import Change, Commit, Repo, checked_text
from healthd.sources._options import validate_options
from healthd.sources._repo_options import RepoOptions

KIND = "backstage"
log = get_logger("healthd.sources.backstage")

_YAML_SUFFIXES = (".yaml", ".yml")
_PARSED_CACHE = 4096  # parsed blobs kept (by blob sha)


_K = TypeVar("_K")
_V = TypeVar("_V")


class _Bounded(OrderedDict[_K, _V]):
    """A dict that forgets its oldest entries beyond ``size``."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def __setitem__(self, key: _K, value: _V) -> None:
        super().__setitem__(key, value)
        if len(self) > self.size:
            self.popitem(last=False)


# --------------------------------------------------------------------------- options


class BackstageRepoOptions(RepoOptions):
    catalog_files: list[str] = ["**/catalog-info.yaml", "**/catalog-info.yml"]

    @field_validator("catalog_files")
    @classmethod
    def _globs(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must name at least one catalog file (a path glob)")
        out = []
        for glob in value:
            glob = glob.strip().lstrip("/")
            if not glob.endswith(_YAML_SUFFIXES):
                raise ValueError(f"{glob!r} does not name .yaml or .yml files")
            out.append(glob)
        return out


class BackstageApiOptions(PagedHttpOptions):
    model_config = ConfigDict(extra="forbid")

    base_url: str
    token_env: str | None = None
    filter: list[str] = []
    page_size: int = Field(500, ge=1, le=10000)
    revalidate_interval: timedelta = timedelta(days=1)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        url = check_http_url(value, "https://backstage.example.com")
        return url.removesuffix("/api/catalog")

    @field_validator("revalidate_interval", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> timedelta:
        return parse_duration(value)

    @field_validator("filter")
    @classmethod
    def _filters(cls, value: list[str]) -> list[str]:
        for item in value:
            if any(
                not part.partition("=")[0].strip() or "=" not in part for part in item.split(",")
            ):
                raise ValueError(f"filter {item!r} is not key=value[,key=value...]")
        return value


# --------------------------------------------------------------------------- catalog files


class CatalogExtractor(Extractor):
    """The catalog as declared by the files at each commit, diffed commit by commit."""

    def __init__(
        self,
        source: str,
        opts: BackstageRepoOptions,
        repo: Repo,
        skips: Skips,
        state: Mapping[str, Any] | None,
    ) -> None:
        self.source = source
        self.opts = opts
        self.repo = repo
        self.skips = skips
        self.roots = [glob_regex(g) for g in opts.catalog_files]
        self.yaml_blobs: dict[str, str] = {}  # every .yaml/.yml path → its blob sha
        self.root_paths: set[str] = set()  # those catalog_files names
        # (path, blob) → its entities and problems, or why it cannot be read
        self.parsed: OrderedDict[tuple[str, str], tuple[list[Entity], list[str]] | str] = (
            OrderedDict()
        )
        self.documents: _Bounded[tuple[str, str], list[Parsed]] = _Bounded(_PARSED_CACHE * 8)
        self.good: dict[str, list[Entity]] = {}  # path → entities of its last readable blob
        self.reachable: frozenset[str] = frozenset()
        self.targets: list[re.Pattern[str]] = []  # Location targets, as path patterns
        self.homes: dict[EntityRef, str] = {}  # entity → the file that declares it
        self._metas: dict[EntityRef, dict[str, str]] = {}
        # the catalog as last read: entities, what their events carry, each file's entities
        self.entities: dict[EntityRef, Entity] = {}
        self.metas: dict[EntityRef, dict[str, str]] = {}
        self.file_entities: dict[str, list[Entity]] = {}
        self.mid_move = False  # an entity is declared twice: every change walks again
        self.contested: set[EntityRef] = set()  # those entities
        self.good_blobs: dict[str, str] = {}  # path → its last readable blob
        self.unreadable: set[str] = set()  # paths whose blob cannot be read: kept as before
        gone = (state or {}).get("gone")
        self.catalog = Catalog(str(s) for s in gone) if isinstance(gone, list) else Catalog()
        self.held = self.catalog.held
        self._reported: set[tuple[str, str]] = set()
        # What the history before a cursor decided and its commit's files cannot tell: the
        # file that keeps an entity two files declare, and the last readable version of a
        # file that cannot be read there (a resumed pull would otherwise take the other
        # file's entity, or drop the file's entities, without an event).
        homes = (state or {}).get("homes")
        for ref, path in homes.items() if isinstance(homes, dict) else ():
            parsed = _parse_ref_key(ref)
            if parsed is not None and isinstance(path, str):
                self.homes[parsed] = path
        kept = (state or {}).get("kept")
        # A cursor written before it carried ``kept`` (always written now, if empty) cannot
        # tell what its commit's unreadable files and twice-declared entities keep: the
        # history before it is read once for them, when there are such (see _recover).
        self._older_cursor = state is not None and "kept" not in state
        self._restored: set[str] = set()  # those read back from the cursor
        self._kept: dict[str, str] = (
            {str(p): str(sha) for p, sha in kept.items()} if isinstance(kept, dict) else {}
        )

    def cursor_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "gone": sorted(self.catalog.gone),
            "config": config_digest(self.opts),
        }
        if self.contested:
            extra["homes"] = {
                str(ref): self.homes[ref] for ref in sorted(self.contested) if ref in self.homes
            }
        kept = {
            path: self.good_blobs[path]
            for path in sorted(self.reachable)
            if path in self.good_blobs
            and (path in self.unreadable or path not in self.yaml_blobs)
            and self.file_entities.get(path)  # (what the catalog holds of it, kept)
        }
        extra["kept"] = kept  # (even empty: a cursor without it is an older one)
        return extra

    def people(self) -> list[Person]:
        """The catalog's Users as identity records (name, display name, e-mail)."""
        return users_people(self.entities.values())

    def _report(self, path: str, commit: Commit, reason: str) -> None:
        """A problem with a file, reported at the first commit it is seen at."""
        if (path, reason) not in self._reported:
            self._reported.add((path, reason))
            self.skips.add(f"{path}@{commit.sha[:12]}", reason)

    def is_root(self, path: str) -> bool:
        return any(r.match(path) for r in self.roots)

    def _relevant(self, path: str) -> bool:
        return (
            self.is_root(path) or path in self.reachable or any(t.match(path) for t in self.targets)
        )

    def wanted(self, changes: list[Change]) -> Iterator[str]:
        for ch in changes:
            if ch.status != "D" and ch.path.endswith(_YAML_SUFFIXES) and self._relevant(ch.path):
                yield ch.new_sha

    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        # (only the baseline at an older cursor's commit, the first apply, may need history)
        recover, self._older_cursor = self._older_cursor and not emit, False
        relevant: list[Change] = []
        for ch in changes:
            if ch.is_submodule or not ch.path.endswith(_YAML_SUFFIXES):
                continue
            if ch.status == "D":
                self.yaml_blobs.pop(ch.path, None)
                self.root_paths.discard(ch.path)
            else:
                self.yaml_blobs[ch.path] = ch.new_sha
                if self.is_root(ch.path):
                    self.root_paths.add(ch.path)
            if self._relevant(ch.path):
                relevant.append(ch)
        if not relevant:
            return []
        hint = self._patch(commit, relevant)
        if hint is None:
            self._read_catalog(commit)
            if recover and (self.contested or self.unreadable & self.reachable):
                self._recover(commit)
        changes_, problems = self.catalog.update(self.entities, self.metas, changed=hint)
        for problem in problems:
            where, _, reason = problem.partition(": ")
            self._report(where, commit, reason)
        if not emit:
            return []
        return [self._event(commit, c) for c in changes_]

    def _entities_of(self, commit: Commit, path: str) -> list[Entity]:
        sha = self.yaml_blobs[path]
        cached = self.parsed.get((path, sha))
        if cached is None:
            data = self.repo.blob(sha)
            if data is None:
                cached = self.repo.unread(sha)
            else:
                text, unreadable = checked_text(data)
                try:
                    entities, problems = parse_catalog_file(text, path, self.documents)
                    cached = (entities, problems if unreadable is None else [unreadable, *problems])
                except Malformed as exc:
                    cached = str(exc) if unreadable is None else f"{exc} ({unreadable})"
            self.parsed[path, sha] = cached
            if len(self.parsed) > _PARSED_CACHE:
                self.parsed.popitem(last=False)
            if isinstance(cached, str):
                held = path in self.good and path in self.file_entities
                kept = "; kept as before" if held else "; skipped"
                self._report(path, commit, cached + kept)
            else:
                for problem in cached[1]:
                    self._report(path, commit, problem)
        else:
            self.parsed.move_to_end((path, sha))
        if isinstance(cached, str):
            self.unreadable.add(path)
            return self._kept_entities(path)
        self.unreadable.discard(path)
        self.good[path] = cached[0]
        self.good_blobs[path] = sha
        return cached[0]

    def _recover(self, commit: Commit) -> None:
        """At the commit of a cursor written before it carried ``homes`` and ``kept``, which
        holds a file that cannot be read or an entity two files declare: what one pull over
        the history to it decided for them (the last readable version of the file, the file
        that declared the entity first), read from that history once; the cursor written
        next carries it."""
        past = CatalogExtractor(self.source, self.opts, self.repo, Skips(self.source), None)
        rev_range = commit.sha
        boundary = since_boundary(self.repo, commit.sha, self.opts)
        if boundary is not None:
            # (with ``since``, a pull starts from the catalog at its last commit before it,
            # as the one that wrote the cursor did: what came before is not its history)
            baseline = self.repo.tree(boundary)
            past.apply(Commit(boundary, self.repo.commit_time(boundary)), baseline, emit=False)
            rev_range = f"{boundary}..{commit.sha}"
        history = self.repo.log(
            rev_range, first_parent=self.opts.first_parent, modified=past.modified
        )
        for old, changes in history:
            past.apply(old, changes, emit=False)
        self.homes = dict(past.homes)
        # (a Location's target no longer in the tree: the pull that wrote the cursor had
        # already ended what it declared, and the events said so)
        self._kept = {
            path: sha
            for path, sha in past.cursor_extra()["kept"].items()
            if path in self.yaml_blobs
        }
        self._read_catalog(commit)

    def _kept_entities(self, path: str) -> list[Entity]:
        """The entities of the last readable version of ``path``, kept as before: only when
        the catalog as last read held the file (a file deleted, or no longer named, took its
        entities away; back unreadable, it has none to keep)."""
        if path not in self.good and path in self._kept:
            self._read_kept(path, self._kept.pop(path))
        if path in self.file_entities or path in self._restored:
            return self.good.get(path, [])
        return []

    def _missing_entities(self, path: str) -> list[Entity]:
        """What a Location's target that is no longer in the tree declared when the catalog
        was last read (none if it was not read then: a new location has no result yet)."""
        if path in self.file_entities:
            return self.file_entities[path]
        return self._kept_entities(path) if path in self._kept or path in self._restored else []

    def _read_kept(self, path: str, sha: str) -> None:
        """The last readable version of ``path`` before the cursor, as the pull that read it
        kept it."""
        data = self.repo.blob(sha)
        if data is None:
            return
        text, _ = checked_text(data)
        try:
            entities, _ = parse_catalog_file(text, path, self.documents)
        except Malformed:
            return
        self.good[path] = entities
        self.good_blobs[path] = sha
        self._restored.add(path)

    def _patch(self, commit: Commit, relevant: list[Change]) -> set[EntityRef] | None:
        """The common commit, edits to files already in the catalog that hold no Location
        and move no entity between files: only their entities are read again; the refs
        that may have changed (None: the catalog must be walked again)."""
        if self.mid_move or any(
            ch.status not in "MT" or ch.path not in self.reachable for ch in relevant
        ):
            return None
        olds: dict[str, dict[EntityRef, Entity]] = {}
        for ch in relevant:
            old = olds[ch.path] = {e.ref: e for e in self.file_entities.get(ch.path, ())}
            if any(e.kind == "Location" for e in old.values()):
                return None
        leaving = {ref for old in olds.values() for ref in old}
        news: dict[str, list[Entity]] = {}
        arriving: dict[EntityRef, Entity] = {}
        for ch in relevant:
            new = news[ch.path] = self._entities_of(commit, ch.path)
            for e in new:
                if e.kind == "Location" or e.ref in arriving:
                    return None  # a Location to follow, or an entity declared twice
                if e.ref not in olds[ch.path] and e.ref in self.homes:
                    return None  # moved here from another file (or declared twice)
                arriving[e.ref] = e
        hint = set()
        for ref in leaving - arriving.keys():
            del self.homes[ref], self.entities[ref], self.metas[ref]
            hint.add(ref)
        for path, new in news.items():
            self.file_entities[path] = new
            old = olds[path]
            for e in new:
                if old.get(e.ref) is not e:  # a document that did not change is the same
                    self.homes[e.ref] = path
                    self.entities[e.ref] = e
                    self.metas[e.ref] = self._meta(e.ref, path)
                    hint.add(e.ref)
        return hint

    def _meta(self, ref: EntityRef, path: str) -> dict[str, str]:
        meta = self._metas.get(ref)
        if meta is None or meta["file"] != path:
            meta = self._metas[ref] = {"entity": str(ref), "file": path}
        return meta  # the same object while unchanged: the catalog skips it fast

    def _read_catalog(self, commit: Commit) -> None:
        """Follow the catalog from its root files through Location targets."""
        queue = sorted(self.root_paths)
        reached: dict[str, None] = {}
        targets: list[re.Pattern[str]] = []
        where: dict[EntityRef, tuple[Entity, str]] = {}
        files: dict[str, list[Entity]] = {}
        mid_move = False
        contested: set[EntityRef] = set()
        while queue:
            path = queue.pop(0)
            if path in reached:
                continue
            reached[path] = None
            # (a Location's target no longer in the tree: what it declared, kept as before)
            files[path] = (
                self._entities_of(commit, path)
                if path in self.yaml_blobs
                else self._missing_entities(path)
            )
            for entity in files[path]:
                if entity.kind == "Location":
                    for target in location_targets(entity):
                        loc_type = entity.spec.get("type", "url")
                        resolved = resolve_target(path, target)
                        if loc_type not in ("url", "file") or resolved is None:
                            self._report(
                                path,
                                commit,
                                f"Location {entity.ref.name} target {quote(target)} "
                                "is not in this repository; not followed",
                            )
                            continue
                        pattern = glob_regex(resolved)
                        targets.append(pattern)
                        if any(c in resolved for c in "*?"):
                            found = sorted(p for p in self.yaml_blobs if pattern.match(p))
                        else:
                            found = [resolved] if resolved in self.yaml_blobs else []
                        if not found and entity.spec.get("presence") != "optional":
                            # Backstage reads each target as a location of its own: one
                            # not found is an error, and its entities stay as they were
                            # (a glob that matches nothing is no error: it has none)
                            kept = not any(c in resolved for c in "*?") and bool(
                                self._missing_entities(resolved)
                            )
                            self._report(
                                path,
                                commit,
                                f"Location {entity.ref.name} target {quote(target)} matches no "
                                "file" + ("; what it declared is kept as before" if kept else ""),
                            )
                            if kept:
                                found = [resolved]
                        queue.extend(p for p in found if p not in reached)
                    continue
                first = where.get(entity.ref)
                if first is None:
                    where[entity.ref] = (entity, path)
                    continue
                if first[1] == path:
                    # Twice in one file: the catalog upserts a location's entities in
                    # order, by ref, so the later declaration replaces the earlier one.
                    where[entity.ref] = (entity, path)
                    self._report(
                        path,
                        commit,
                        f"{entity.kind} {entity.ref} is declared twice in this file; the "
                        "last declaration is kept, as Backstage keeps it",
                    )
                    continue
                # Declared twice (mid-move): the file that declared it before keeps it, as
                # the catalog keeps the first location's entity and reports the conflict.
                mid_move = True
                contested.add(entity.ref)
                keep, drop = first, (entity, path)
                if self.homes.get(entity.ref) == path != first[1]:
                    keep, drop = drop, keep
                where[entity.ref] = keep
                self._report(
                    drop[1],
                    commit,
                    f"{entity.kind} {entity.ref} is also declared in {keep[1]}, which is kept",
                )
        self.reachable = frozenset(reached)
        self.targets = targets
        self.homes = {ref: path for ref, (_, path) in where.items()}
        self.entities = {ref: e for ref, (e, _) in where.items()}
        self.metas = {ref: self._meta(ref, path) for ref, (_, path) in where.items()}
        self.file_entities = files
        self.mid_move = mid_move
        self.contested = contested
        self._kept.clear()  # (the cursor's: the first walk, the baseline, has read them)
        self._restored.clear()

    def _event(self, commit: Commit, change: CatalogChange) -> ChangeEvent:
        held = change.held
        meta = {**held.metadata, "commit": commit.sha}
        return ChangeEvent(
            id=event_id(
                KIND, self.source, commit.sha, meta.get("file", ""), held.fact.key, change.type
            ),
            type=change.type,
            timestamp=commit.time,
            source=self.source,
            fact=held.fact,
            previous=change.previous,
            reason=change.reason,
            depends_on=held.depends_on,
            metadata=meta,
        )


def _parse_ref_key(text: object) -> EntityRef | None:
    """An EntityRef from its ``kind:namespace/name`` string (a cursor's), or None."""
    if not isinstance(text, str):
        return None
    kind, colon, rest = text.partition(":")
    namespace, slash, name = rest.partition("/")
    if not (colon and slash and kind and namespace and name):
        return None
    return EntityRef(kind, namespace, name)


def config_digest(opts: BackstageRepoOptions) -> str:
    return "catalog-v1|" + ",".join(opts.catalog_files)


class BackstageRepoSource(RepoSource):
    """Catalog files read through a repository's history."""

    kind = KIND
    opts: BackstageRepoOptions

    def _extractor(
        self, repo: Repo, head: str, skips: Skips, state: Mapping[str, Any] | None
    ) -> CatalogExtractor:
        extractor = CatalogExtractor(self.name, self.opts, repo, skips, state)
        if state is None and not any(extractor.is_root(ch.path) for ch in repo.tree(head)):
            skips.note(
                f"no catalog file at {head[:12]} matches catalog_files "
                f"({', '.join(self.opts.catalog_files)})"
            )
        return extractor

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        if state.get("config") != config_digest(self.opts):
            return "catalog_files changed since the cursor"
        return None

    def _cursor(self, commit: str, seen: dict[str, float], extractor: Extractor) -> str:
        return dump_cursor(
            {"commit": commit, "seen": prune_seen(seen, extractor.held), **extractor.cursor_extra()}
        )


# --------------------------------------------------------------------------- catalog API

BY_QUERY = "/api/catalog/entities/by-query"
#: Only what the facts are made of: a stitched entity's relations, annotations and status
#: are most of its size.
_FIELDS = "apiVersion,kind,metadata.name,metadata.namespace,metadata.uid,spec"


class _ApiState(BaseModel):
    """What the cursor keeps between two observations of a running catalog."""

    model_config = ConfigDict(extra="ignore")

    kind: str
    held: list[dict[str, Any]] = []
    declared: list[str] = []
    gone: list[str] = []
    seen: dict[str, float] = {}


_PACKED = "zlib:"


def _pack(text: str) -> str:
    """The cursor compressed: it holds every fact of the catalog (a 10,000-component
    catalog's is 8 MB of JSON, 0.6 MB packed)."""
    return _PACKED + base64.b64encode(zlib.compress(text.encode(), 6)).decode()


def _unpack(cursor: str) -> str:
    if cursor.startswith(_PACKED):
        return zlib.decompress(base64.b64decode(cursor[len(_PACKED) :], validate=True)).decode()
    return cursor


def _held_to_json(held: Held) -> dict[str, Any]:
    f = held.fact
    return {
        "fact": [f.subject, f.predicate, f.value, f.domain],
        "depends_on": [[k.subject, k.predicate] for k in held.depends_on],
        "metadata": held.metadata,
    }


def _held_from_json(raw: Mapping[str, Any]) -> Held:
    subject, predicate, value, domain = raw["fact"]
    return Held(
        Fact(subject, predicate, value, domain),
        tuple(FactKey(s, p) for s, p in raw["depends_on"]),
        {str(k): str(v) for k, v in raw["metadata"].items()},
    )


class BackstageApiSource:
    """A running catalog, read whole each pull through ``/entities/by-query`` and diffed
    with what the previous pull saw (kept in the cursor)."""

    kind = KIND

    def __init__(
        self,
        name: str,
        options: BackstageApiOptions,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], datetime] = wall_clock,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.options = options
        self.session = session or requests.Session()
        self._sleep = sleep
        self._clock = clock
        self._environ = os.environ if environ is None else environ

    def _client(self) -> HttpClient:
        headers: dict[str, str] = {}
        secrets: tuple[str, ...] = ()
        if self.options.token_env:
            token = self._environ.get(self.options.token_env, "")
            if not token:
                raise HttpError(
                    f"environment variable {self.options.token_env} (token_env) is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
            secrets = (token,)
        seams: dict[str, Any] = {} if self._sleep is None else {"sleep": self._sleep}
        return HttpClient(self.session, self.options, headers=headers, secrets=secrets, **seams)

    def _fetch(self, skips: Skips) -> tuple[list[Entity], set[EntityRef]]:
        """Every entity the query gives (malformed ones skipped, one line each, and their
        refs returned when they can be told, so their facts are kept as before)."""
        client = self._client()
        url = self.options.base_url + BY_QUERY
        params: dict[str, Any] = {"limit": self.options.page_size, "fields": _FIELDS}
        if self.options.filter:
            params["filter"] = list(self.options.filter)
        entities: list[Entity] = []
        unreadable: set[EntityRef] = set()
        cursors: set[str] = set()
        first_on: dict[object, tuple[EntityRef, int]] = {}  # each entity read (uid or ref)
        received = 0
        other_kinds: dict[str, int] = {}
        for page in range(1, self.options.max_pages + 1):
            resp = client.get_json(url, params=params)
            data = resp.data
            if not isinstance(data, dict) or not isinstance(data.get("items"), list):
                raise BadPayload(
                    f"GET {url} returned {type(data).__name__}, expected an object with items"
                )
            _check_not_repeated(url, page, data["items"], first_on)
            received += len(data["items"])
            for index, raw in enumerate(data["items"], start=1):
                try:
                    entities.append(parse_entity(raw, "catalog API"))
                except OtherKind as exc:
                    other_kinds[exc.kind] = other_kinds.get(exc.kind, 0) + 1
                except Malformed as exc:
                    ref = _ref_of(raw)
                    what = f"page {page} item {index}" + (f" ({ref})" if ref else "")
                    skips.add(what, f"{exc}; kept as before")
                    if ref is not None:
                        unreadable.add(ref)
            info = data.get("pageInfo")
            next_cursor = info.get("nextCursor") if isinstance(info, dict) else None
            if not next_cursor:
                total = data.get("totalItems")
                if type(total) is int and received < total:
                    _check_whole(url, received, total, self._count(client, url))
                if other_kinds:
                    kinds = ", ".join(f"{n} {k}" for k, n in sorted(other_kinds.items()))
                    skips.note(f"entities of kinds the format does not define not read: {kinds}")
                return entities, unreadable
            if not isinstance(next_cursor, str):
                raise BadPayload(f"GET {url}: field 'pageInfo.nextCursor' is not a string")
            if next_cursor in cursors:
                raise BadPayload(f"GET {url} returned a page cursor already followed")
            cursors.add(next_cursor)
            # the cursor carries the query; only the page size goes with it
            params = {"limit": self.options.page_size, "fields": _FIELDS, "cursor": next_cursor}
        raise HttpError(
            f"more than max_pages={self.options.max_pages} pages of entities; "
            "raise max_pages or narrow filter"
        )

    def _count(self, client: HttpClient, url: str) -> object:
        """The catalog's ``totalItems`` for the query now (a page of no entities, ``limit=0``,
        which the catalog answers with its count alone)."""
        params: dict[str, Any] = {"limit": 0, "fields": _FIELDS}
        if self.options.filter:
            params["filter"] = list(self.options.filter)
        data = client.get_json(url, params=params).data
        return data.get("totalItems") if isinstance(data, dict) else None

    def pull(self, cursor: str | None) -> PullResult:
        skips = Skips(self.name)
        try:
            state = (
                _ApiState.model_validate_json(_unpack(cursor)) if cursor else _ApiState(kind="api")
            )
            if state.kind != "api":
                raise ValueError("not a backstage API cursor")
            held = {h.fact.key: h for h in map(_held_from_json, state.held)}
        except (ValueError, KeyError, TypeError, zlib.error):
            skips.note("cursor not understood (not this catalog's); the catalog is read anew")
            state, held = _ApiState(kind="api"), {}
        observed = self._clock().astimezone(UTC).replace(microsecond=0)
        try:
            entities, unreadable = self._fetch(skips)
        except HttpError as exc:
            hint = ""
            if exc.status == 401:
                hint = (
                    f" (check the token in {self.options.token_env})"
                    if self.options.token_env
                    else " (the catalog wants a token: set token_env)"
                )
            error = f"backstage source {self.name!r} ({self.options.base_url}): {exc}{hint}"
            return PullResult([], cursor, error=error, skipped=skips.lines())
        meta = {e.ref: {"entity": str(e.ref)} for e in entities}
        catalog = catalog_facts(entities, meta)
        for problem in catalog.problems:
            skips.add("catalog API", problem.split(": ", 1)[-1])
        # an entity the catalog served unreadably keeps its facts as they were
        kept = {str(ref) for ref in unreadable}
        for key, h in held.items():
            if h.metadata.get("entity") in kept and key not in catalog.facts:
                catalog.facts[key] = h
                catalog.declared.add(key.subject)
        changes, new_held, gone = diff_catalog(held, set(state.declared), set(state.gone), catalog)
        seen = dict(state.seen)
        events: list[ChangeEvent] = []
        for change in changes:
            events.append(self._event(observed, change))
            fh = fact_hash(change.held.fact)
            if change.type == "invalidated":
                seen.pop(fh, None)
            else:
                seen[fh] = observed.timestamp()
        interval = self.options.revalidate_interval
        sweep_at = revalidation_time(observed, interval, datetime.fromtimestamp(0, UTC))
        events = (
            revalidations(KIND, self.name, new_held, seen, sweep_at, interval, "catalog-api")
            + events
        )
        try:
            events, _ = unique_events(events, f"backstage source {self.name!r}")
        except SourceError as exc:
            return PullResult([], cursor, error=str(exc), skipped=skips.lines())
        body = {
            "kind": "api",
            "held": [_held_to_json(new_held[k]) for k in sorted(new_held)],
            "declared": sorted(catalog.declared),
            "gone": sorted(gone),
            "seen": prune_seen(seen, new_held),
        }
        log.info(
            "source_pulled",
            source=self.name,
            kind=KIND,
            entities=len(entities),
            events=len(events),
            skipped=len(skips),
        )
        return PullResult(
            events,
            _pack(json.dumps(body, sort_keys=True, separators=(",", ":"))),
            skipped=skips.lines(),
            people=users_people(entities),
        )

    def _event(self, observed: datetime, change: CatalogChange) -> ChangeEvent:
        held = change.held
        digest = hashlib.sha256(
            "\x1f".join(
                (
                    self.name,
                    observed.isoformat(),
                    held.fact.subject,
                    held.fact.predicate,
                    change.type,
                )
            ).encode("utf-8", "surrogatepass")  # an escape such as "\udcff" still has an id
        ).hexdigest()[:16]
        return ChangeEvent(
            id=f"{KIND}:api:{digest}",
            type=change.type,
            timestamp=observed,
            source=self.name,
            fact=held.fact,
            previous=change.previous,
            reason=change.reason,
            depends_on=held.depends_on,
            metadata={**held.metadata, "observed": "catalog-api"},
        )


def _check_not_repeated(
    url: str, page: int, items: list[Any], first_on: dict[object, tuple[EntityRef, int]]
) -> None:
    """BadPayload when every item of a page is an entity an earlier page gave: the catalog's
    pages are keyset pages (in ``metadata.uid`` order, its entity_id), no entity twice in one
    reading, so its cursor is not being followed (the pull would read on to max_pages,
    holding every page, and what the pages never reached would end as if removed from the
    catalog). An entity is told by its uid where the catalog gives one: deleted and created
    again while the pages are read, an entity comes again under a new uid, maybe alone on
    the last page, and that is no repeat; by its ref otherwise."""
    keyed = [(_uid_of(raw), _ref_of(raw)) for raw in items]
    marks = [(uid if uid is not None else ref, ref) for uid, ref in keyed]
    known = [mark for mark, ref in marks if ref is not None and mark in first_on]
    if marks and len(known) == len(marks):
        said, first = first_on[known[0]]
        raise BadPayload(
            f"GET {url}: page {page} gives only entities already read ({said} first on "
            f"page {first}): the pages repeat, the page cursor is not followed"
        )
    for mark, ref in marks:
        if ref is not None:
            first_on.setdefault(mark, (ref, page))


def _uid_of(raw: object) -> str | None:
    metadata = raw.get("metadata") if isinstance(raw, dict) else None
    uid = metadata.get("uid") if isinstance(metadata, dict) else None
    return uid if isinstance(uid, str) and uid else None


def _check_whole(url: str, received: int, total: int, now: object) -> None:
    """BadPayload when the listing ended with fewer items than its ``totalItems`` and than
    the catalog counts ``now`` too: it was not read whole, and an entity it did not reach
    would be taken as removed from the catalog. (The catalog counts ``totalItems`` at the
    first page and carries it in the cursor, so an entity deleted while the pages were read
    leaves a whole listing short of it: counted again, such a listing is whole.)"""
    if type(now) is int and received >= now:
        return
    again = f", {now} counted again" if type(now) is int else ""
    raise BadPayload(
        f"GET {url}: the listing ended (no pageInfo.nextCursor) after {received} of the "
        f"{total} entities the catalog counts (totalItems){again}: not read whole, nothing "
        "taken as removed"
    )


def users_people(entities: Iterable[Entity]) -> list[Person]:
    """Each User among ``entities`` as identity data (:func:`._catalog.user_person`), in
    name order."""
    people = (user_person(e) for e in entities)
    return sorted((p for p in people if p is not None), key=lambda p: p.handle)


def _ref_of(raw: object) -> EntityRef | None:
    """The ref of an entity the format rejects, when its kind and name can be read."""
    if not isinstance(raw, dict) or not isinstance(raw.get("metadata"), dict):
        return None
    kind, name = raw.get("kind"), raw["metadata"].get("name")
    namespace = raw["metadata"].get("namespace") or "default"
    if not (isinstance(kind, str) and isinstance(name, str) and isinstance(namespace, str)):
        return None
    if not kind or not name:
        return None
    return EntityRef(kind.lower(), namespace.lower(), name.lower())


# --------------------------------------------------------------------------- factory


@register_source(KIND)
def backstage_source(
    name: str, options: Mapping[str, Any]
) -> BackstageRepoSource | BackstageApiSource:
    has_api = "base_url" in options
    has_repo = "path" in options or "url" in options
    if has_api and has_repo:
        raise ConfigError(
            f"source {name!r}: set either 'path' (or 'url': a repository holding catalog "
            "files) or 'base_url' (a running Backstage), not both"
        )
    if not (has_api or has_repo):
        raise ConfigError(
            f"source {name!r}: set 'path' (a repository holding catalog files) or "
            "'base_url' (a running Backstage)"
        )
    if has_api:
        return BackstageApiSource(name, validate_options(BackstageApiOptions, name, options))
    return BackstageRepoSource(name, validate_options(BackstageRepoOptions, name, options))
