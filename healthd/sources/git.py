"""The `git` source: a repository's history as a timeline of tech and ownership facts.

Options (``[sources.<name>]`` with ``kind = "git"``)::

    [sources.repo]
    kind = "git"
    path = "/srv/checkouts/shop"        # a local checkout (or a bare repository), or:
    # url = "https://github.com/acme/shop.git"
    # cache_dir = "/var/cache/healthd"  # required with url: a bare mirror, fetched each run
    # token_env = "SHOP_GIT_TOKEN"      # private remotes: env var holding the token
    # token_user = "x-access-token"     # user name sent with the token (GitLab: "oauth2")
    branch = "main"                     # default: HEAD
    first_parent = true                 # default true: the mainline, merges at merge time
    since = "2024-01-01"                # optional: facts already true then are emitted
                                        # once, at the last commit before that date
    service_roots = ["services/*"]      # default []: every top-level directory is a service
    exclude = ["docs", "scripts"]       # service names (globs) that are not services
    root_subject = "."                  # subject of manifests at the repository root
    revalidate_interval = "P1D"         # ISO 8601 duration or seconds; "PT0S" = every run
    revalidate_clock = "wall"           # "wall" (real time) or "head" (head commit time)

What it emits (timestamps are committer dates, UTC; ids ``git:<sha12>:<hash>`` are stable
across re-extraction):

* ``(<service>, "exists", "true", tech)`` when a service gets its first file, invalidated
  when its last file goes. A service is a top-level directory (hidden ones and ``exclude``
  aside) or, with ``service_roots``, a directory matching one of those globs (component by
  component: ``services/*`` makes ``services/billing``). Every other fact about a service
  ``depends_on`` its ``exists`` key; a removed service emits only the ``exists``
  invalidation and its facts end by cascade.
* ``(<service>, "language", "go", tech)``: the language with the most source files in the
  service (ties: alphabetical); a rewrite is a ``revised`` event.
* ``(<subject>, "dependency:<name>", "<version spec>", tech)`` from ``pyproject.toml``
  (PEP 621, PEP 735 groups and Poetry), ``requirements*.txt``, ``package.json``,
  ``go.mod`` (indirect requirements aside), ``Cargo.toml`` and ``pom.xml``
  (``groupId:artifactId``, ``${property}`` resolved). The subject is the manifest's
  service; a manifest outside any service uses its directory, or ``root_subject`` at the
  root. Python names are PEP 503-normalised; no constraint is ``*``. When two manifests of
  one subject name the same package, the shallower (then alphabetically first) one wins.
  A bump is ``revised``, a dropped dependency ``invalidated``.
* ``(<pattern>, "owners", "@a @b", ownership)`` from the CODEOWNERS GitHub reads (first of
  ``.github/CODEOWNERS``, ``CODEOWNERS``, ``docs/CODEOWNERS``): new owners are ``revised``,
  a removed pattern or a deleted file ``invalidated``, a re-added file ``added``.
* ``revalidated`` events at the end of a run for every fact still true at the head and
  not observed for ``revalidate_interval`` (timestamped with the run's "now").

The cursor (JSON) holds the last processed commit and when each live fact was last
observed. A cursor that is no longer an ancestor of the branch (force-push) triggers a full
re-extraction, reported in ``skipped``. Unreadable manifests, blobs missing from a partial
clone and the boundary of a shallow clone are skipped with a counted, logged reason.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import field_validator

from healthd.model import ChangeEvent, Fact, FactKey
from healthd.sources import register_source
from healthd.sources._codeowners import LOCATIONS, parse_codeowners
from healthd.sources._gitlog import (
    Change,
    Commit,
    Extractor,
    Held,
    Repo,
    RepoOptions,
    RepoSource,
    Skips,
    dump_cursor,
    event_id,
    prune_seen,
    validate_options,
)
from healthd.sources._manifests import manifest_parser, try_parse_manifest

EXISTS = "exists"
LANGUAGE = "language"
DEP_PREFIX = "dependency:"
OWNERS = "owners"

#: Source-file extensions by language (markup, data and config files do not count).
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".rs": "rust",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".groovy": "groovy",
    ".clj": "clojure",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".fs": "fsharp",
    ".vb": "visualbasic",
    ".swift": "swift",
    ".m": "objective-c",
    ".mm": "objective-c",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".jl": "julia",
    ".zig": "zig",
    ".nim": "nim",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".vue": "vue",
    ".svelte": "svelte",
    ".tf": "terraform",
    ".sol": "solidity",
}
_VENDORED = {"node_modules", "vendor", "third_party", "__pycache__"}


class GitOptions(RepoOptions):
    service_roots: list[str] = []
    exclude: list[str] = []
    root_subject: str = "."

    @field_validator("service_roots")
    @classmethod
    def _roots(cls, value: list[str]) -> list[str]:
        out = []
        for root in value:
            root = root.strip().strip("/")
            if not root or any(not part for part in root.split("/")):
                raise ValueError(f"service root {root!r} is not a relative directory glob")
            out.append(root)
        return out

    @field_validator("root_subject")
    @classmethod
    def _root_subject(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def language_of(path: str) -> str | None:
    """The language of a source file by its extension; None for other files and for
    vendored code (node_modules, vendor, third_party)."""
    directory, _, base = path.rpartition("/")
    dot = base.rfind(".")
    if dot <= 0:
        return None
    lang = LANGUAGES.get(base[dot:].lower())
    if lang is None or any(p in _VENDORED for p in directory.split("/")):
        return None
    return lang


def main_language(counts: Mapping[str, int]) -> str | None:
    best = [(-n, lang) for lang, n in counts.items() if n > 0]
    return min(best)[1] if best else None


class GitExtractor(Extractor):
    """Services, languages, dependencies and CODEOWNERS, folded commit by commit."""

    def __init__(self, source: str, opts: GitOptions, repo: Repo, skips: Skips) -> None:
        self.source = source
        self.opts = opts
        self.repo = repo
        self.skips = skips
        self.files: Counter[str] = Counter()  # service → file count
        self.langs: dict[str, Counter[str]] = {}  # service → language → source files
        self.manifests: dict[str, dict[str, str]] = {}  # path → deps
        self.manifest_subjects: dict[str, set[str]] = {}  # subject → manifest paths
        self.codeowners: dict[str, dict[str, str]] = {}  # location → rules
        self.held: dict[FactKey, Held] = {}
        self.scopes: dict[str, set[FactKey]] = {}
        self.service_of = lru_cache(maxsize=65536)(self._service_of_dir)

    # -- mapping paths
    def _service_of_dir(self, directory: str) -> str | None:
        if not directory:
            return None
        parts = directory.split("/")
        if self.opts.service_roots:
            for root in self.opts.service_roots:
                pat = root.split("/")
                if len(parts) >= len(pat) and all(
                    fnmatch.fnmatchcase(parts[i], pat[i]) for i in range(len(pat))
                ):
                    name = "/".join(parts[: len(pat)])
                    if not self._excluded(name):
                        return name
            return None
        name = parts[0]
        return None if self._excluded(name) else name

    def _excluded(self, name: str) -> bool:
        if any(part.startswith(".") for part in name.split("/")):
            return True
        return any(fnmatch.fnmatchcase(name, p) for p in self.opts.exclude)

    def manifest_subject(self, path: str) -> str:
        directory = posixpath.dirname(path)
        service = self.service_of(directory)
        if service is not None:
            return service
        return directory or self.opts.root_subject

    # -- folding
    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        services: set[str] = set()
        dep_subjects: set[str] = set()
        owners_changed = False
        for ch in changes:
            if ch.is_submodule:
                continue
            path = ch.path
            directory, _, _base = path.rpartition("/")
            service = self.service_of(directory)
            if service is not None and ch.status in "AD":
                step = 1 if ch.status == "A" else -1
                self.files[service] += step
                lang = language_of(path)
                if lang is not None:
                    self.langs.setdefault(service, Counter())[lang] += step
                services.add(service)
            if manifest_parser(path) is not None:
                subject = self.manifest_subject(path)
                if self._read_manifest(commit, ch, subject):
                    dep_subjects.add(subject)
            if path in LOCATIONS:
                owners_changed |= self._read_codeowners(commit, ch)
        if not (services or dep_subjects or owners_changed):
            return []
        desired: dict[str, dict[FactKey, Held]] = {}
        for service in services:
            desired[f"svc:{service}"] = self._service_facts(service, commit)
        for subject in dep_subjects:
            desired[f"deps:{subject}"] = self._dep_facts(subject, commit)
        if owners_changed:
            desired["owners"] = self._owner_facts(commit)
        return self._diff(commit, desired, emit)

    def _blob_text(self, commit: Commit, ch: Change) -> str | None:
        data = self.repo.blob(ch.new_sha)
        if data is None:
            self.skips.add(
                f"{ch.path}@{commit.sha[:12]}",
                f"blob {ch.new_sha[:12]} missing (partial clone?); kept as before",
            )
            return None
        return data.decode("utf-8", errors="replace")

    def _read_manifest(self, commit: Commit, ch: Change, subject: str) -> bool:
        path = ch.path
        if ch.status == "D":
            if self.manifests.pop(path, None) is None:
                return False
            self.manifest_subjects.get(subject, set()).discard(path)
            return True
        text = self._blob_text(commit, ch)
        if text is None:
            return False
        deps, problem = try_parse_manifest(path, text)
        if problem is not None:
            self.skips.add(f"{path}@{commit.sha[:12]}", f"{problem}; kept as before")
            if path in self.manifests:
                return False
        self.manifests[path] = deps
        self.manifest_subjects.setdefault(subject, set()).add(path)
        return True

    def _read_codeowners(self, commit: Commit, ch: Change) -> bool:
        if ch.status == "D":
            return self.codeowners.pop(ch.path, None) is not None
        text = self._blob_text(commit, ch)
        if text is None:
            return False
        self.codeowners[ch.path] = parse_codeowners(text)
        return True

    # -- desired facts per scope
    def _meta(self, commit: Commit, **extra: str) -> dict[str, str]:
        return {"commit": commit.sha, **extra}

    def _service_facts(self, service: str, commit: Commit) -> dict[FactKey, Held]:
        out: dict[FactKey, Held] = {}
        if self.files[service] <= 0:
            del self.files[service]
            self.langs.pop(service, None)
            return out
        exists = Fact(service, EXISTS, "true", "tech")
        out[exists.key] = Held(exists, (), self._meta(commit))
        lang = main_language(self.langs.get(service, {}))
        if lang is not None:
            fact = Fact(service, LANGUAGE, lang, "tech")
            out[fact.key] = Held(fact, (exists.key,), self._meta(commit))
        return out

    def _dep_facts(self, subject: str, commit: Commit) -> dict[FactKey, Held]:
        out: dict[FactKey, Held] = {}
        paths = sorted(self.manifest_subjects.get(subject, ()), key=lambda p: (p.count("/"), p))
        is_service = self.service_of(posixpath.dirname(paths[0])) == subject if paths else False
        deps_on = (FactKey(subject, EXISTS),) if is_service else ()
        for path in paths:
            for name, spec in self.manifests.get(path, {}).items():
                fact = Fact(subject, DEP_PREFIX + name, spec, "tech")
                if fact.key not in out:
                    out[fact.key] = Held(fact, deps_on, self._meta(commit, manifest=path))
        return out

    def _owner_facts(self, commit: Commit) -> dict[FactKey, Held]:
        out: dict[FactKey, Held] = {}
        for location in LOCATIONS:
            rules = self.codeowners.get(location)
            if rules is None:
                continue
            for pattern, owners in rules.items():
                fact = Fact(pattern, OWNERS, owners, "ownership")
                out[fact.key] = Held(fact, (), self._meta(commit, file=location))
            break
        return out

    # -- events
    def _diff(
        self, commit: Commit, desired: dict[str, dict[FactKey, Held]], emit: bool
    ) -> list[ChangeEvent]:
        born: list[ChangeEvent] = []
        changed: list[ChangeEvent] = []
        ended: list[ChangeEvent] = []
        dead: list[ChangeEvent] = []
        gone_services: set[FactKey] = set()
        removals: list[tuple[str, FactKey, Held]] = []
        for scope in sorted(desired):
            new = desired[scope]
            old_keys = self.scopes.get(scope, set())
            for key in sorted(old_keys - new.keys()):
                held = self.held.pop(key)
                removals.append((scope, key, held))
                if key.predicate == EXISTS:
                    gone_services.add(key)
            for key in sorted(new):
                h = new[key]
                before = self.held.get(key)
                self.held[key] = h
                if before is None:
                    (born if key.predicate == EXISTS else changed).append(
                        self._event(commit, h, "added")
                    )
                elif before.fact != h.fact:
                    changed.append(self._event(commit, h, "revised", previous=before.fact))
                else:
                    h.metadata = before.metadata  # unchanged: keep where it came from
            if new:
                self.scopes[scope] = set(new)
            else:
                self.scopes.pop(scope, None)
        for scope, key, held in removals:
            if key.predicate == EXISTS:
                dead.append(
                    self._event(commit, held, "invalidated", reason=f"{key.subject} removed")
                )
            elif any(dep in gone_services for dep in held.depends_on):
                continue  # ends by cascade along depends_on
            else:
                ended.append(
                    self._event(commit, held, "invalidated", reason=self._reason(scope, key, held))
                )
        if not emit:
            return []
        return born + changed + ended + dead

    def _reason(self, scope: str, key: FactKey, held: Held) -> str:
        if scope == "owners":
            where = held.metadata.get("file", "CODEOWNERS")
            if where not in self.codeowners:
                return f"{where} deleted"
            return f"pattern {key.subject} removed from {where}"
        if scope.startswith("deps:"):
            manifest = held.metadata.get("manifest", "manifest")
            if manifest not in self.manifests:
                return f"{manifest} deleted"
            return f"{key.predicate[len(DEP_PREFIX) :]} dropped from {manifest}"
        if key.predicate == LANGUAGE:
            return f"{key.subject} has no source files left"
        return "no longer present"

    def _event(
        self,
        commit: Commit,
        held: Held,
        etype: str,
        *,
        previous: Fact | None = None,
        reason: str | None = None,
    ) -> ChangeEvent:
        meta = dict(held.metadata)
        meta["commit"] = commit.sha
        path = meta.get("manifest") or meta.get("file") or held.fact.subject
        return ChangeEvent(
            id=event_id("git", self.source, commit.sha, path, held.fact.key, etype),
            type=etype,
            timestamp=commit.time,  # type: ignore[arg-type]
            source=self.source,
            fact=held.fact,
            previous=previous,
            reason=reason,
            depends_on=held.depends_on,
            metadata=meta,
        )


class GitSource(RepoSource):
    """History of a repository as tech and ownership facts (see the module docstring)."""

    kind = "git"
    opts: GitOptions

    def _extractor(
        self, repo: Repo, head: str, skips: Skips, state: Mapping[str, Any] | None
    ) -> GitExtractor:
        return GitExtractor(self.name, self.opts, repo, skips)

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        if state.get("config") != self._config_digest():
            return "service layout options changed since the cursor"
        return None

    def _config_digest(self) -> str:
        return "|".join(
            [",".join(self.opts.service_roots), ",".join(self.opts.exclude), self.opts.root_subject]
        )

    def _cursor(self, commit: str, seen: dict[str, float], extractor: Extractor) -> str:
        return dump_cursor(
            {
                "commit": commit,
                "seen": prune_seen(seen, extractor.held),
                "config": self._config_digest(),
            }
        )


@register_source("git")
def git_source(name: str, options: Mapping[str, Any]) -> GitSource:
    opts = validate_options(GitOptions, name, options)
    return GitSource(name, opts)
