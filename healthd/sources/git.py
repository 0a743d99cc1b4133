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
    service_roots = ["services/*"]      # default []: modules are found by their manifests
    exclude = ["scripts"]               # module/service names (globs) that are not ones
    exclude_dirs = ["vendor", "/docs"]  # directory names (globs, any depth; "/name": at
                                        # the root alone) holding no
                                        # modules; default: vendor, Godeps, node_modules,
                                        # third_party, third-party (and [Tt]hird[Pp]arty,
                                        # 3rd_party, ...), deps, vendors, Carthage,
                                        # bower_components,
                                        # __pycache__, /docs, /doc, /Docs, /Doc,
                                        # Documentation, testdata,
                                        # fixtures, __fixtures__ (and the ADR directories)
    adr_dirs = ["decision-record"]      # ADR directories besides those the adr source
                                        # discovers (adr sources' ``dir`` on the same
                                        # repository are added from the configuration)
    root_subject = "."                  # subject of manifests at the repository root
    revalidate_interval = "P1D"         # ISO 8601 duration or seconds; "PT0S" = every run
    revalidate_clock = "wall"           # "wall" (real time) or "head" (head commit time)

What it emits (timestamps are committer dates, UTC; ids ``git:<sha12>:<hash>`` are stable
across re-extraction):

* ``(<module>, "exists", "true", tech)`` when a module gets its first file, invalidated
  when its last file (or its manifest) goes. A module is a directory holding a dependency
  manifest; a nested manifest makes a nested module, which takes the files below it. A
  top-level directory holding no module is a module too, unless the repository root holds
  a manifest other than a requirements file or a Pipfile: then the root module (``root_subject``, which
  has no ``exists`` or ``language`` fact) takes those files. When the root declares npm,
  Yarn or pnpm workspaces, a package.json makes a module only in a workspace (not a
  template's or a test project's). Hidden directories, ``exclude`` and ``exclude_dirs``
  (vendored code, documentation, the ADR directory) hold none. With
  ``service_roots`` the modules are the directories matching those globs instead
  (component by component: ``services/*`` makes ``services/billing``). Every other fact
  about a module ``depends_on`` its ``exists`` key; a removed module emits only the
  ``exists`` invalidation and its facts end by cascade (but those asserted at the very
  instant it goes, which a cascade leaves standing: each ends by an event of its own).
* ``(<module>, "language", "go", tech)``: the language with the most source files in the
  module (ties: alphabetical; a file's language is its extension's, a ``.h`` file C; a
  tool's configuration script, ``next.config.js``, counts only in a module with no other
  source); a rewrite is a ``revised`` event.
* ``(<subject>, "dependency:<name>", "<version spec>", tech)`` from ``pyproject.toml``
  (PEP 621, PEP 735 groups, PDM's and uv's development groups, PDM 0.x's sections, and
  Poetry; not the project itself, named for its own extras), ``requirements*.txt``,
  ``Pipfile``, ``package.json``, ``composer.json``, ``Gemfile.lock`` (its DEPENDENCIES),
  ``pubspec.yaml``, ``go.mod`` (indirect requirements aside), ``Cargo.toml``, ``pom.xml``
  (``groupId:artifactId``, ``${property}`` resolved), .NET's project files and NuGet's
  ``Directory.Packages.props`` and ``packages.config``, and Gradle's version catalog
  ``gradle/libs.versions.toml`` (``group:name``, the project's above ``gradle/``); a Gradle
  build script makes a module and is not read. The subject is the manifest's
  module (its directory), or ``root_subject`` at the root; with ``service_roots``, the
  service holding it, else its directory. Python names are PEP 503-normalised; no constraint is ``*``. When two manifests of
  one subject name the same package, the shallower (then alphabetically first) one wins.
  A bump is ``revised``, a dropped dependency ``invalidated``.
* ``(<pattern>, "owners", "@a @b", ownership)`` from the CODEOWNERS GitHub reads (first of
  ``.github/CODEOWNERS``, ``CODEOWNERS``, ``docs/CODEOWNERS``): new owners are ``revised``,
  a removed pattern or a deleted file ``invalidated``, a re-added file ``added``; owners
  respelt in another case are the same owners (the spelling first given stays).
* ``revalidated`` events at the end of a run for every fact still true at the head and
  not observed for ``revalidate_interval`` (timestamped with the run's "now").

The cursor (JSON) holds the last processed commit, when each live fact was last observed,
which facts were asserted in that commit's second (``asserted_last``) and the workspaces
the root declared (``workspaces``, kept through a root file that cannot be read). A cursor that is no longer an ancestor of the branch (force-push) triggers a full
re-extraction, reported in ``skipped``. Unreadable manifests, blobs missing from a partial
clone and the boundary of a shallow clone are skipped with a counted, logged reason.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from healthd.model import ChangeEvent, EventType, Fact, FactKey
from healthd.people import Person
from healthd.sources import register_source
from healthd.sources._codeowners import LOCATIONS, owner_people, parse_codeowners, same_owners
from healthd.sources._git_config import GitConfig, plain_git_options
from healthd.sources._gitlog import (
    Extractor,
    Held,
    RepoSource,
    Skips,
    dump_cursor,
    event_id,
    fact_hash,
    prune_seen,
)
from healthd.sources._gitrepo import Change, Commit, Repo, checked_text
from healthd.sources._languages import language_of, main_language
from healthd.sources._manifests import (
    manifest_dir,
    manifest_parser,
    may_be_manifest,
    parse_pipfile,
    parse_requirements_txt,
    reads_text,
    try_parse_manifest,
)
from healthd.sources._workspaces import (
    WORKSPACE_FILES,
    TooManyGlobs,
    in_workspaces,
    workspace_globs,
)

EXISTS = "exists"
LANGUAGE = "language"
DEP_PREFIX = "dependency:"
OWNERS = "owners"


def git_options(name: str, options: Mapping[str, Any]) -> GitConfig:
    """The `git` kind's options; a ConfigError naming the field when one is wrong.

    Options of the types they are meant to have (strings, booleans, numbers, lists of
    strings, as TOML writes them) are read here; any other (a ``since`` date, a value to
    convert, or a wrong one) by pydantic (:class:`healthd.sources._repo_options.GitOptions`),
    which gives the same options or the error. A one-shot pull then need not import it."""
    config = plain_git_options(options)
    if config is not None:
        return config
    from healthd.sources._options import validate_options
    from healthd.sources._repo_options import GitOptions

    return GitConfig(**validate_options(GitOptions, name, options).model_dump())


_NO_FILES: Counter[str] = Counter()  # a unit without source files (never changed)
_NO_DEPS: dict[str, str] = {}  # a manifest not read (never changed)
_NO_KEYS: frozenset[FactKey] = frozenset()
_NOTHING_DROPPED: frozenset[str] = frozenset()
_SUBMODULE = "160000"  # a gitlink's mode


def _any_glob(patterns: list[str]) -> Callable[[str], bool]:
    """Whether a name matches any of the globs ``patterns`` (``fnmatch.fnmatchcase``)."""
    if not patterns:
        return lambda name: False
    match = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match
    return lambda name: match(name) is not None


def _counter(table: dict[str, Counter[str]], key: str) -> Counter[str]:
    found = table.get(key)
    if found is None:
        found = table[key] = Counter()
    return found


_OWNER_NAMES = frozenset(posixpath.basename(location).encode() for location in LOCATIONS)


def edit_matters(path: bytes) -> bool:
    """Whether an edit of the file at ``path`` (as git writes it) may change a fact: True
    for every manifest and CODEOWNERS file (and a few more), False for the source files
    that most edits are, which :meth:`GitExtractor.apply` skips."""
    name = path.rpartition(b"/")[2]
    return name in _OWNER_NAMES or may_be_manifest(name) or name in _WORKSPACE_NAMES


_WORKSPACE_NAMES = frozenset(name.encode() for name in WORKSPACE_FILES)


class GitExtractor(Extractor):
    """Modules, languages, dependencies and CODEOWNERS, folded commit by commit.

    A *unit* is what ``exists`` and ``language`` facts are about: by default the deepest
    directory holding a manifest (a module), else a top-level directory that holds no
    module; with ``service_roots``, the directory matching one of those globs.
    """

    modified = staticmethod(edit_matters)

    def __init__(
        self,
        source: str,
        opts: GitConfig,
        repo: Repo,
        skips: Skips,
        adr_dirs: tuple[str, ...] = (),
        spelt: Mapping[str, str] | None = None,
        asserted_last: frozenset[str] | None = None,
        workspaces: Mapping[str, tuple[str, ...] | None] | None = None,
    ) -> None:
        self.source = source
        # pattern → its owners as the timeline spells them, where the file now writes them
        # in another case (from the cursor: the state rebuilt there reads the file; the
        # first apply, that rebuild, reads them)
        self.spelt: dict[str, str] = dict(spelt or {})
        self.opts = opts
        self.repo = repo
        self.skips = skips
        self.adr_dirs = adr_dirs
        self.dir_files: Counter[str] = Counter()  # directory → files directly in it
        self.dir_langs: dict[str, Counter[str]] = {}  # directory → language → source files
        self.module_manifests: dict[str, set[str]] = {}  # module directory → its manifests
        self.root_manifests: set[str] = set()  # manifests at the repository root
        self.tops_with_modules: Counter[str] = Counter()  # top-level dir → modules under it
        self.npm_dirs: set[str] = set()  # directories holding a package.json (no excluded)
        # root file → the globs it declares (at a cursor: as the cursor kept them, for a
        # file unreadable there, which keeps what it declared before)
        self.declared_workspaces: dict[str, tuple[str, ...] | None] = dict(workspaces or {})
        self.workspaces: tuple[str, ...] | None = None  # the globs in force (None: none)
        self._rescoped: set[str] = set()  # package directories the workspaces made or unmade
        self.files: Counter[str] = Counter()  # unit → file count
        self.langs: dict[str, Counter[str]] = {}  # unit → language → source files
        self.manifests: dict[str, dict[str, str]] = {}  # path → deps
        self.dropped: dict[str, frozenset[str]] = {}  # path → its entries read as none
        self.undecodable: set[str] = set()  # files whose last version is not text as read
        self.manifest_subjects: dict[str, set[str]] = {}  # subject → manifest paths
        self.dep_depends: dict[str, tuple[FactKey, ...]] = {}  # subject → its deps' depends_on
        # subject → its manifests, the winner first, and what its dependencies depend on
        self.dep_order: dict[str, tuple[list[str], tuple[FactKey, ...]]] = {}
        self.dep_keys: dict[str, dict[str, FactKey]] = {}  # subject → name → its key
        self.codeowners: dict[str, dict[str, str]] = {}  # location → rules
        self.held: dict[FactKey, Held] = {}
        # when each held fact was last asserted: a fact asserted at the instant its module
        # goes is ended by an event of its own, since the cascade leaves that instant's
        # assertions. At a cursor, the facts ``asserted_last`` (hashes of those asserted in
        # its commit's second) were asserted then, the others before (a cursor without the
        # list: all then, the latest they can have been)
        self.asserted_at: dict[FactKey, datetime] = {}
        self.asserted_last = asserted_last
        self.last_time: datetime | None = None  # the time of the last commit applied
        self.scopes: dict[str, set[FactKey]] = {}
        self._retops: set[str] | None = None  # see _relayout
        self.excluded_dir = lru_cache(maxsize=65536)(self._excluded_dir)
        self.service_of = lru_cache(maxsize=65536)(self._unit_of_dir)
        self.manifest_subject = lru_cache(maxsize=65536)(self._manifest_subject)
        self._excluded = lru_cache(maxsize=65536)(self._excluded_name)
        # a directory name matching one of ``exclude_dirs`` (what fnmatchcase tells for
        # each, in one match: fnmatchcase matches fnmatch.translate's expression); those
        # written with a leading slash, a top-level directory's name alone
        self._excluded_part = _any_glob([p for p in opts.exclude_dirs if not p.startswith("/")])
        self._excluded_top = _any_glob([p[1:] for p in opts.exclude_dirs if p.startswith("/")])

    def people(self) -> list[Person]:
        """The CODEOWNERS' owners as identity records (handles and e-mails)."""
        rules = {f"{where}\x1f{p}": o for where, r in self.codeowners.items() for p, o in r.items()}
        return owner_people(rules)

    # -- mapping paths
    def _excluded_dir(self, directory: str) -> bool:
        """Hidden, vendored, documentation and ADR trees hold no module and no unit files."""
        if not directory:
            return False
        if any(directory == adr or directory.startswith(adr + "/") for adr in self.adr_dirs):
            return True
        excluded = self._excluded_part
        parts = directory.split("/")
        return self._excluded_top(parts[0]) or any(
            part.startswith(".") or excluded(part) for part in parts
        )

    def _unit_of_dir(self, directory: str) -> str | None:
        if not directory or self.excluded_dir(directory):
            return None
        if self.opts.service_roots:
            parts = directory.split("/")
            for root in self.opts.service_roots:
                pat = root.split("/")
                if len(parts) >= len(pat) and all(
                    fnmatch.fnmatchcase(parts[i], pat[i]) for i in range(len(pat))
                ):
                    name = "/".join(parts[: len(pat)])
                    if not self._excluded(name):
                        return name
            return None
        candidate, cut = directory, len(directory)
        while cut > 0:  # the directory, then each parent: the deepest module holds it
            candidate = candidate[:cut]
            if candidate in self.module_manifests:
                return candidate
            cut = candidate.rfind("/")
        top = candidate  # the top-level directory, where the walk ended
        if self.root_manifests or self.tops_with_modules[top] or self._excluded(top):
            return None  # the root module's (which has no exists/language facts) or none
        return top

    def _excluded_name(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self.opts.exclude)

    def _manifest_subject(self, path: str) -> str | None:
        """Whose dependencies a manifest lists; None for a manifest in an excluded tree.
        (The same whatever the history: with ``service_roots`` a directory's service is
        decided by the globs alone.)"""
        directory = manifest_dir(path)
        if not directory:
            return self.opts.root_subject
        if self.excluded_dir(directory):
            return None
        if not self.opts.service_roots:
            return None if self._excluded(directory) else directory
        service = self.service_of(directory)
        if service is not None:
            return service
        return directory

    def _relayout(self, commit: Commit, changes: list[Change]) -> bool:
        """Record manifests added and deleted (default layout); True when the set of module
        directories changed, so files must be counted again for their new units: those
        under the top-level directories that ``apply`` then collects in ``_retops`` from
        the commit's added and deleted files, the manifests among them (None: every unit,
        the root module or the workspaces having changed)."""
        if self.opts.service_roots:
            return False
        changed = False
        tops: set[str] | None = set()
        if self._rescope(commit, changes):
            changed, tops = True, None
        for ch in changes:
            if (
                ch.status not in "AD"
                or manifest_parser(ch.path) is None
                or _SUBMODULE in (ch.new_mode, ch.old_mode)  # ch.is_submodule, without a call
            ):
                continue
            directory = manifest_dir(ch.path)
            if not directory:  # the root module takes every file outside the others
                if manifest_parser(ch.path) in (parse_requirements_txt, parse_pipfile):
                    continue  # what to install, not a project (a C repository's lint tools)
                before = bool(self.root_manifests)
                (self.root_manifests.add if ch.status == "A" else self.root_manifests.discard)(
                    ch.path
                )
                if before != bool(self.root_manifests):
                    changed, tops = True, None
                continue
            if self.excluded_dir(directory) or self._excluded(directory):
                continue
            if ch.path.endswith("/package.json"):
                (self.npm_dirs.add if ch.status == "A" else self.npm_dirs.discard)(directory)
                if not self._npm_package(directory):
                    continue
            if ch.status == "A":
                changed |= self._add_module_manifest(directory, ch.path)
            else:
                changed |= self._drop_module_manifest(directory, ch.path)
        if changed:
            self.service_of.cache_clear()
            self.dep_order.clear()  # whether a subject is a module's may have changed
            self._retops = tops
        return changed

    def _add_module_manifest(self, directory: str, path: str) -> bool:
        """Record a module's manifest; True when the directory became a module."""
        held = self.module_manifests.get(directory)
        if held is not None:
            held.add(path)
            return False
        self.module_manifests[directory] = {path}
        self.tops_with_modules[directory.split("/", maxsplit=1)[0]] += 1
        return True

    def _drop_module_manifest(self, directory: str, path: str) -> bool:
        """Forget a module's manifest; True when the directory is no longer a module."""
        held = self.module_manifests.get(directory)
        if held is None:
            return False
        held.discard(path)
        if held:
            return False
        del self.module_manifests[directory]
        self.tops_with_modules[directory.split("/", maxsplit=1)[0]] -= 1
        return True

    def _npm_package(self, directory: str) -> bool:
        """Whether the package.json in ``directory`` makes a module: with workspaces
        declared, only a workspace's does (not a template's or a test project's)."""
        return self.workspaces is None or in_workspaces(self.workspaces, directory)

    def _rescope(self, commit: Commit, changes: list[Change]) -> bool:
        """Read the workspaces the root declares, when a commit changes them; True when
        which package.json files make modules changed (they are recorded again)."""
        declared = self.declared_workspaces
        for ch in changes:
            if ch.path in WORKSPACE_FILES and _SUBMODULE not in (ch.new_mode, ch.old_mode):
                data = None if ch.status == "D" else self.repo.blob(ch.new_sha)
                if data is None:  # (a blob not read: kept as before)
                    if ch.status == "D":
                        declared[ch.path] = None
                    continue
                try:
                    declared[ch.path] = workspace_globs(ch.path, data)
                except ValueError as exc:  # kept as before, as a manifest's dependencies
                    if ch.path != "package.json" or isinstance(exc, TooManyGlobs):
                        # (package.json not read is said by the manifest reader)
                        self.skips.add(f"{ch.path}@{commit.sha[:12]}", f"{exc}; kept as before")
        workspaces = next((declared[f] for f in WORKSPACE_FILES if declared.get(f)), None)
        if workspaces == self.workspaces:
            return False
        self.workspaces = workspaces
        for directory in self.npm_dirs:
            path = f"{directory}/package.json"
            if self._npm_package(directory):
                flipped = self._add_module_manifest(directory, path)
            else:
                flipped = self._drop_module_manifest(directory, path)
            if flipped:
                self._rescoped.add(directory)
        return True

    def _recount(self, tops: set[str] | None) -> set[str]:
        """Unit file and language counts from the per-directory ones, for the units under
        the top-level directories ``tops`` (None: all); the units whose counts changed.
        (A directory's unit is under its own top-level directory, so units elsewhere keep
        their counts: a module added or removed moves files within its top alone.)"""
        files: Counter[str] = Counter()
        langs: dict[str, Counter[str]] = {}
        for directory, n in self.dir_files.items():
            if tops is not None and directory.partition("/")[0] not in tops:
                continue
            unit = self.service_of(directory)
            if unit is None or n <= 0:
                continue
            files[unit] += n
            dir_langs = self.dir_langs.get(directory)
            if dir_langs:
                unit_langs = langs.get(unit)
                if unit_langs is None:
                    unit_langs = langs[unit] = Counter()
                unit_langs.update(dir_langs)
        if tops is None:
            before = set(self.files)
        else:
            before = {unit for unit in self.files if unit.partition("/")[0] in tops}
        touched = {
            unit
            for unit in files.keys() | before
            if files[unit] != self.files[unit]
            or +langs.get(unit, _NO_FILES) != +self.langs.get(unit, _NO_FILES)
        }
        if tops is None:
            self.files, self.langs = files, langs
            return touched
        for unit in before:
            del self.files[unit]
        for unit in [unit for unit in self.langs if unit.partition("/")[0] in tops]:
            del self.langs[unit]
        for unit, n in files.items():
            self.files[unit] = n
        self.langs.update(langs)
        return touched

    # -- folding
    def wanted(self, changes: list[Change]) -> Iterator[str]:
        for ch in changes:
            if ch.status == "D":
                continue
            path = ch.path
            parser = manifest_parser(path)
            if (
                path in LOCATIONS
                or path in WORKSPACE_FILES
                or (
                    parser is not None
                    and reads_text(parser)
                    and self.manifest_subject(path) is not None
                )
            ) and not ch.is_submodule:
                yield ch.new_sha

    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        services: set[str] = set()
        dep_subjects: dict[str, set[str]] = {}  # subject → dependencies that changed
        owners_changed = False
        self.last_time = commit.time
        relayout = self._relayout(commit, changes)
        for ch in changes:
            path = ch.path
            status = ch.status
            parser = manifest_parser(path)
            if status not in "AD" and parser is None and path not in LOCATIONS:
                continue  # an edited source file changes no fact (most changes)
            if _SUBMODULE in (ch.new_mode, ch.old_mode):  # ch.is_submodule, without a call
                continue
            directory = path.rpartition("/")[0]
            if status in "AD" and directory and not self.excluded_dir(directory):
                step = 1 if status == "A" else -1
                self.dir_files[directory] += step
                lang = language_of(path)
                if lang is not None:
                    _counter(self.dir_langs, directory)[lang] += step
                if relayout:
                    if self._retops is not None:  # counted again below, with its unit's
                        self._retops.add(directory.partition("/")[0])
                else:
                    service = self.service_of(directory)
                    if service is not None:
                        self.files[service] += step
                        if lang is not None:
                            _counter(self.langs, service)[lang] += step
                        services.add(service)
            if parser is not None:
                subject = self.manifest_subject(path)
                if subject is not None:
                    names = self._read_manifest(commit, ch, subject)
                    if names is not None:
                        dep_subjects.setdefault(subject, set()).update(names)
            if path in LOCATIONS:
                owners_changed |= self._read_codeowners(commit, ch)
        if relayout:
            services |= self._recount(self._retops)
        for directory in self._rescoped:  # its dependencies now depend on its existence or not
            if self.manifest_subjects.get(directory):
                dep_subjects.setdefault(directory, set())
        self._rescoped.clear()
        if not (services or dep_subjects or owners_changed):
            self.spelt = {}
            return []
        desired: dict[str, dict[FactKey, Held]] = {}
        partial: dict[str, tuple[dict[FactKey, Held], set[FactKey]]] = {}
        for service in services:
            desired[f"svc:{service}"] = self._service_facts(service, commit)
        for subject, names in dep_subjects.items():
            update = self._dep_changes(subject, names, commit)
            if update is None:
                desired[f"deps:{subject}"] = self._dep_facts(subject, commit)
            else:
                partial[f"deps:{subject}"] = update
        if owners_changed:
            desired["owners"] = self._owner_facts(commit, self.spelt)
        self.spelt = {}  # the cursor's spellings rebuild its state: a rule written later is new
        return self._diff(commit, desired, emit, partial)

    def _blob_text(self, commit: Commit, ch: Change) -> str | None:
        data = self.repo.blob(ch.new_sha)
        if data is None:
            self.skips.add(
                f"{ch.path}@{commit.sha[:12]}",
                f"{self.repo.unread(ch.new_sha)}; kept as before",
            )
            return None
        text, unreadable = checked_text(data)
        if unreadable is None:
            if self.undecodable:
                self.undecodable.discard(ch.path)
        elif ch.path not in self.undecodable:  # said when a file first has it, as dropped
            self.undecodable.add(ch.path)
            self.skips.add(f"{ch.path}@{commit.sha[:12]}", unreadable)
        return text

    def _read_manifest(self, commit: Commit, ch: Change, subject: str) -> set[str] | None:
        """Read a manifest's change: the dependencies whose spec it changed (added, revised
        or dropped), or None when it changed nothing the subject's facts are made of."""
        path = ch.path
        if ch.status == "D":
            self.dropped.pop(path, None)
            self.undecodable.discard(path)
            gone = self.manifests.pop(path, None)
            if gone is None:
                return None
            self.manifest_subjects.get(subject, set()).discard(path)
            self.dep_order.pop(subject, None)
            return set(gone)
        text = self._blob_text(commit, ch) if reads_text(manifest_parser(path)) else ""
        if text is None:
            return None
        dropped: list[str] = []
        deps, problem = try_parse_manifest(path, text, dropped)
        if problem is None:  # (one unreadable is kept as before, what was said with it)
            self._say_dropped(commit, path, dropped)
        before = self.manifests.get(path)
        if problem is not None:
            self.skips.add(f"{path}@{commit.sha[:12]}", f"{problem}; kept as before")
            if before is not None:
                return None
        elif before is not None:
            if before == deps:
                return None  # e.g. only indirect requirements or the toolchain changed
            changed = {name for name, _ in before.items() ^ deps.items()}
            self.manifests[path] = deps  # (a manifest held is among its subject's already)
            return changed
        self.manifests[path] = deps
        self._add_manifest(subject, path)
        return set(deps)

    def _say_dropped(self, commit: Commit, path: str, dropped: list[str]) -> None:
        """Each entry of a manifest read as no dependency, said when the file first has it
        (the versions after, which keep it, do not say it again)."""
        said = self.dropped.get(path, _NOTHING_DROPPED)
        if not dropped and not said:
            return
        for entry in dropped:
            if entry not in said:
                self.skips.add(f"{path}@{commit.sha[:12]}", f"{entry}; left out")
        self.dropped[path] = frozenset(dropped)

    def _add_manifest(self, subject: str, path: str) -> None:
        paths = self.manifest_subjects.setdefault(subject, set())
        if path not in paths:
            paths.add(path)
            self.dep_order.pop(subject, None)

    def _read_codeowners(self, commit: Commit, ch: Change) -> bool:
        if ch.status == "D":
            self.undecodable.discard(ch.path)
            return self.codeowners.pop(ch.path, None) is not None
        text = self._blob_text(commit, ch)
        if text is None:
            return False
        rejected: list[tuple[int, str]] = []
        self.codeowners[ch.path] = parse_codeowners(text, rejected)
        for line, what in rejected:
            self.skips.add(
                f"{ch.path}@{commit.sha[:12]} line {line}",
                f"{what}; the line is skipped, as GitHub skips it",
            )
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

    def _dep_paths(self, subject: str) -> tuple[list[str], tuple[FactKey, ...]]:
        """The subject's manifests, the one that wins a dependency first, and what its
        dependency facts depend on."""
        found = self.dep_order.get(subject)
        if found is None:
            paths = sorted(self.manifest_subjects.get(subject, ()), key=lambda p: (p.count("/"), p))
            is_service = self.service_of(manifest_dir(paths[0])) == subject if paths else False
            found = self.dep_order[subject] = (
                paths,
                (FactKey(subject, EXISTS),) if is_service else (),
            )
        return found

    def _dep_changes(
        self, subject: str, names: set[str], commit: Commit
    ) -> tuple[dict[FactKey, Held], set[FactKey]] | None:
        """The subject's dependency facts for ``names`` alone (the others are as held), and
        the keys of those that no manifest names any longer; None when every fact must be
        built again (a first read, or what they depend on changed)."""
        paths, deps_on = self._dep_paths(subject)
        if self.dep_depends.get(subject) != deps_on:
            return None
        held = self.scopes.get(f"deps:{subject}", _NO_KEYS)
        out: dict[FactKey, Held] = {}
        gone: set[FactKey] = set()
        keys = self.dep_keys.get(subject)
        if keys is None:
            keys = self.dep_keys[subject] = {}
        if len(paths) == 1:  # the usual case: one manifest
            path = paths[0]
            deps = self.manifests.get(path, _NO_DEPS)
            meta: dict[str, str] | None = None
            for name in names:
                key = keys.get(name)
                if key is None:
                    key = keys[name] = FactKey(subject, DEP_PREFIX + name)
                spec = deps.get(name)
                if spec is not None:
                    if meta is None:
                        meta = self._meta(commit, manifest=path)
                    out[key] = Held(Fact(subject, key.predicate, spec, "tech"), deps_on, meta)
                elif key in held:
                    gone.add(key)
            return out, gone
        manifests = [(path, self.manifests.get(path, _NO_DEPS)) for path in paths]
        metas: dict[str, dict[str, str]] = {}
        for name in names:
            key = keys.get(name)
            if key is None:
                key = keys[name] = FactKey(subject, DEP_PREFIX + name)
            for path, deps in manifests:
                spec = deps.get(name)
                if spec is not None:
                    meta = metas.get(path)
                    if meta is None:
                        meta = metas[path] = self._meta(commit, manifest=path)
                    out[key] = Held(Fact(subject, key.predicate, spec, "tech"), deps_on, meta)
                    break
            else:
                if key in held:
                    gone.add(key)
        return out, gone

    def _dep_facts(self, subject: str, commit: Commit) -> dict[FactKey, Held]:
        out: dict[FactKey, Held] = {}
        paths, deps_on = self._dep_paths(subject)
        self.dep_depends[subject] = deps_on
        for path in paths:
            meta = self._meta(commit, manifest=path)  # shared: events copy it, nothing edits it
            for name, spec in self.manifests.get(path, {}).items():
                key = FactKey(subject, DEP_PREFIX + name)
                if key not in out:
                    out[key] = Held(Fact(subject, key.predicate, spec, "tech"), deps_on, meta)
        return out

    def _owner_facts(self, commit: Commit, spelt: Mapping[str, str]) -> dict[FactKey, Held]:
        out: dict[FactKey, Held] = {}
        for location in LOCATIONS:
            rules = self.codeowners.get(location)
            if rules is None:
                continue
            for pattern, owners in rules.items():
                held = self.held.get(FactKey(pattern, OWNERS))
                said = held.fact.value if held is not None else spelt.get(pattern)
                if said is not None and same_owners(said, owners):
                    owners = said  # respelt in another case: the same owners
                fact = Fact(pattern, OWNERS, owners, "ownership")
                out[fact.key] = Held(fact, (), self._meta(commit, file=location))
            break
        return out

    def respelt(self) -> dict[str, str]:
        """Each pattern whose owners the timeline spells otherwise than the file GitHub
        reads now writes them (:attr:`spelt`)."""
        rules = next((self.codeowners[at] for at in LOCATIONS if at in self.codeowners), {})
        out = {}
        for pattern, owners in rules.items():
            held = self.held.get(FactKey(pattern, OWNERS))
            if held is not None and held.fact.value != owners:
                out[pattern] = held.fact.value
        return out

    # -- events
    def _diff(
        self,
        commit: Commit,
        desired: dict[str, dict[FactKey, Held]],
        emit: bool,
        partial: Mapping[str, tuple[dict[FactKey, Held], set[FactKey]]] | None = None,
    ) -> list[ChangeEvent]:
        """Events for the facts of each scope: ``desired`` holds all of a scope's facts,
        ``partial`` some (the rest are as held) and the keys of those that ended."""
        born: list[ChangeEvent] = []
        changed: list[ChangeEvent] = []
        ended: list[ChangeEvent] = []
        dead: list[ChangeEvent] = []
        gone_services: set[FactKey] = set()
        removals: list[tuple[str, FactKey, Held, datetime | None]] = []
        partial = partial or {}
        held_now = self.held
        for scope in sorted(desired.keys() | partial.keys()):
            if scope in partial:
                new, ended_keys = partial[scope]
            else:
                new = desired[scope]
                ended_keys = self.scopes.get(scope, set()) - new.keys()
            for key in sorted(ended_keys):
                held = self.held.pop(key)
                removals.append((scope, key, held, self.asserted_at.pop(key, None)))
                if key.predicate == EXISTS:
                    gone_services.add(key)
            for key in sorted(new):
                h = new[key]
                before = held_now.get(key)
                held_now[key] = h
                if before is None:
                    (born if key.predicate == EXISTS else changed).append(
                        self._event(commit, h, "added", key)
                    )
                    if (
                        emit
                        or self.asserted_last is None
                        or fact_hash(h.fact) in self.asserted_last
                    ):
                        self.asserted_at[key] = commit.time
                    continue
                was, fact = before.fact, h.fact
                if was is not fact and (  # Fact's own equality, its fields compared in turn
                    was.value != fact.value
                    or was.subject != fact.subject
                    or was.predicate != fact.predicate
                    or was.domain != fact.domain
                ):
                    changed.append(self._event(commit, h, "revised", key, previous=was))
                    self.asserted_at[key] = commit.time
                elif h.depends_on != before.depends_on:
                    # a package the workspaces name or no longer name: a module came, and
                    # the fact is held anew depending on it (ground truth keeps an interval's
                    # dependencies), or went, and its cascade ends the fact, which holds on
                    if not set(before.depends_on) - set(h.depends_on):
                        reason = f"{key.subject} is a module now"
                        changed.append(
                            self._event(commit, before, "invalidated", key, reason=reason)
                        )
                    changed.append(self._event(commit, h, "added", key))
                    self.asserted_at[key] = commit.time
                else:
                    kept = before.metadata  # unchanged: keep where it came from
                    file = h.metadata.get("file")  # (owners read now from another CODEOWNERS)
                    if file is not None and file != kept.get("file"):
                        kept = {**kept, "file": file}
                    h.metadata = kept
            if scope in partial:
                keys = self.scopes.setdefault(scope, set())
                keys.difference_update(ended_keys)
                keys.update(new)
                if not keys:
                    del self.scopes[scope]
            elif new:
                self.scopes[scope] = set(new)
            else:
                self.scopes.pop(scope, None)
        for scope, key, held, asserted in removals:
            if key.predicate == EXISTS or (
                asserted == commit.time and any(dep in gone_services for dep in held.depends_on)
            ):
                (dead if key.predicate == EXISTS else ended).append(
                    self._event(commit, held, "invalidated", key, reason=f"{key.subject} removed")
                )
            elif any(dep in gone_services for dep in held.depends_on):
                continue  # ends by cascade along depends_on
            else:
                ended.append(
                    self._event(
                        commit, held, "invalidated", key, reason=self._reason(scope, key, held)
                    )
                )
        if not emit:
            return []
        return born + changed + ended + dead

    def _reason(self, scope: str, key: FactKey, held: Held) -> str:
        if scope == "owners":
            where = held.metadata.get("file", "CODEOWNERS")
            if where not in self.codeowners:
                return f"{where} deleted"
            read = next(location for location in LOCATIONS if location in self.codeowners)
            if read != where:  # still in its file, which GitHub no longer reads
                return f"{read} takes precedence over {where}"
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
        etype: EventType,
        key: FactKey,
        *,
        previous: Fact | None = None,
        reason: str | None = None,
    ) -> ChangeEvent:
        """The event for ``held`` (the fact at ``key``)."""
        meta = dict(held.metadata)
        sha = meta["commit"] = commit.sha
        fact = held.fact
        path = meta.get("manifest") or meta.get("file") or fact.subject
        return ChangeEvent(
            event_id("git", self.source, sha, path, key, etype),
            etype,
            commit.time,
            self.source,
            fact,
            previous,
            reason,
            held.depends_on,
            meta,
        )


def adr_dirs_of(repo: Repo, head: str, opts: GitConfig) -> tuple[str, ...]:
    """The directories holding decision records, which are no code module: those named in
    ``adr_dirs`` (the `adr` sources on this repository add their ``dir``) and the one the
    `adr` source would discover, each with the names it had before a rename."""
    from healthd.sources._adrlayout import earlier_names, layouts

    named = [*opts.adr_dirs, *(layout.dir for layout in layouts(repo, head))]
    out: dict[str, None] = {}
    for directory in named:
        out[directory] = None
        out.update(dict.fromkeys(earlier_names(repo, head, directory, opts.first_parent)))
    return tuple(out)


class GitSource(RepoSource):
    """History of a repository as tech and ownership facts (see the module docstring)."""

    kind = "git"
    opts: GitConfig

    def _extractor(
        self, repo: Repo, head: str, skips: Skips, state: Mapping[str, Any] | None
    ) -> GitExtractor:
        spelt = (state or {}).get("owners")
        if not (isinstance(spelt, dict) and all(isinstance(v, str) for v in spelt.values())):
            spelt = None
        last = state.get("asserted_last") if state is not None else None
        asserted_last = frozenset(map(str, last)) if isinstance(last, list) else None
        dirs = adr_dirs_of(repo, head, self.opts)
        workspaces = _workspaces_kept(state.get("workspaces") if state is not None else None)
        return GitExtractor(
            self.name,
            self.opts,
            repo,
            skips,
            dirs,
            spelt=spelt,
            asserted_last=asserted_last,
            workspaces=workspaces,
        )

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        if state.get("config") != self._config_digest(extractor):
            return "service layout options changed since the cursor"
        return None

    def _config_digest(self, extractor: Extractor | None = None) -> str:
        adr_dirs = extractor.adr_dirs if isinstance(extractor, GitExtractor) else ()
        return "|".join(
            [
                # v3: copies of scripts not counted, a root requirements file no root
                # module, npm workspaces; v4: configuration scripts counted apart; v5:
                # lerna.json's packages, C headers counted with their module's C family
                "modules-v5",
                ",".join(self.opts.service_roots),
                ",".join(self.opts.exclude),
                ",".join(self.opts.exclude_dirs),
                self.opts.root_subject,
                ",".join(adr_dirs),
            ]
        )

    def _cursor(self, commit: str, seen: dict[str, float], extractor: Extractor) -> str:
        state: dict[str, Any] = {
            "commit": commit,
            "seen": prune_seen(seen, extractor.held),
            "config": self._config_digest(extractor),
            "asserted_last": _asserted_last(extractor),
            "workspaces": _workspaces_to_keep(extractor),
        }
        spelt = extractor.respelt() if isinstance(extractor, GitExtractor) else {}
        if spelt:
            state["owners"] = spelt
        return dump_cursor(state)


def _workspaces_to_keep(extractor: Extractor) -> dict[str, list[str] | None]:
    if not isinstance(extractor, GitExtractor):
        return {}
    declared = extractor.declared_workspaces
    return {path: None if globs is None else list(globs) for path, globs in declared.items()}


def _workspaces_kept(kept: object) -> dict[str, tuple[str, ...] | None]:
    """The workspaces a cursor kept (see :func:`_workspaces_to_keep`); none if not read."""
    if not isinstance(kept, dict):
        return {}
    return {
        path: tuple(globs) if isinstance(globs, list) else None
        for path, globs in kept.items()
        if path in WORKSPACE_FILES
        and (globs is None or (isinstance(globs, list) and all(isinstance(g, str) for g in globs)))
    }


def _asserted_last(extractor: Extractor) -> list[str]:
    """The hashes of the facts held that were asserted in the second of the last commit
    applied (the cursor's), which a pull resumed there cannot tell from the others."""
    if not isinstance(extractor, GitExtractor) or extractor.last_time is None:
        return []
    last = extractor.last_time
    held = extractor.held
    return sorted(
        fact_hash(held[key].fact) for key, at in extractor.asserted_at.items() if at == last
    )


@register_source("git")
def git_source(name: str, options: Mapping[str, Any]) -> GitSource:
    return GitSource(name, git_options(name, options))
