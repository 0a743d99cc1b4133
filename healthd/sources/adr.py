"""The `adr` source: architecture decision records as a timeline of decisions.

Options (``[sources.<name>]`` with ``kind = "adr"``)::

    [sources.decisions]
    kind = "adr"
    path = "/srv/checkouts/shop"        # or url + cache_dir (+ token_env), as for `git`
    dir = "doc/adr"                     # optional; default: the directory named in
                                        # .adr-dir, else the first of doc/adr, docs/adr,
                                        # docs/decisions, docs/architecture/decisions
    branch = "main"                     # default: HEAD
    first_parent = true
    since = "2024-01-01"                # optional, as for `git`
    revalidate_interval = "P7D"         # default P1D
    revalidate_clock = "wall"           # or "head"

Each record is read at every commit that changed it; its status history gives:

* ``Accepted`` → ``added`` ``("adr:<number>", "decision", "<title>", decision)`` (the
  number without leading zeros, the title without it: ``adr:2`` / ``Use Kafka``); a record
  reusing a number another record already holds (renumbering) gets its own subject
  ``adr:<number>:<file stem>``, and a record moved (deleted here, same number there, in one
  commit) keeps its subject, its new path in ``adr_file``;
* superseded (``Superseded by [3. ...](0003-....md)`` on the old record, or
  ``Supersedes [2. ...](...)`` on an accepted new one) → ``revised`` from the old record's
  fact to the new record's fact (the keys differ); links resolve by file name across all
  records, by number only when a single record holds it (a shared number never promotes a
  record); a superseded record whose successor cannot be found is ``invalidated``. A record
  superseded by several ends once: ``revised`` to the first (metadata ``superseded_by``
  lists them all), the others ``added`` with metadata ``supersedes``;
* ``Deprecated`` / ``Rejected`` of a held decision → ``invalidated`` with a reason (a record
  rejected before it was ever accepted emits nothing);
* ``Proposed`` → nothing yet; a deleted record's decision is ``invalidated``;
* a retitled accepted record → ``revised`` on the same key.

Formats: Nygard/adr-tools (``# 2. Title``, a ``## Status`` section) and MADR (front matter
``status:``, ``* Status:`` / ``- Status:`` lines), with spelling variants (``superceded``),
decoration (``**Accepted**``, ``~~Proposed~~ Accepted``) and unlinked references
(``Superseded by ADR-0003``). A record without a number or an understood status, or
is skipped with a counted, logged reason; a reused number is reported too.
Metadata: ``adr_file``, ``commit``, ``status``. Event ids ``adr:<sha12>:<hash>`` (a
``revised`` event's hash includes the previous record, so one record superseding several
in one commit gives distinct ids).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import field_validator

from healthd.model import ChangeEvent, EventType, Fact, FactKey
from healthd.sources import register_source
from healthd.sources._adrdoc import Record, file_number, parse_adr, ref_number
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

#: Where ADRs live when `.adr-dir` does not say, in order.
CANDIDATE_DIRS: tuple[str, ...] = (
    "doc/adr",
    "docs/adr",
    "docs/decisions",
    "docs/architecture/decisions",
    "doc/architecture/decisions",
    "docs/architecture/adr",
)
_EXTENSIONS = (".md", ".markdown", ".mdx", ".txt", ".rst")
_NOT_RECORDS = {"readme", "index", "template", "toc", "_sidebar", "summary"}
PREDICATE = "decision"


class AdrOptions(RepoOptions):
    dir: str | None = None

    @field_validator("dir")
    @classmethod
    def _dir(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().strip("/")
        if not value or value.startswith("..") or "/../" in f"/{value}/":
            raise ValueError("must be a directory inside the repository")
        return value


def subject(number: int, stem: str | None = None) -> str:
    """``adr:<n>``; a record reusing a number another record holds is ``adr:<n>:<stem>``."""
    return f"adr:{number}" if stem is None else f"adr:{number}:{stem}"


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]


class AdrExtractor(Extractor):
    """Records keyed by path; each numbered record has its own subject (see ``subject``)."""

    def __init__(
        self,
        source: str,
        directory: str,
        repo: Repo,
        skips: Skips,
        subjects: Mapping[str, str] | None = None,
    ) -> None:
        self.source = source
        self.dir = directory
        self.repo = repo
        self.skips = skips
        self.records: dict[str, Record] = {}  # path → what it says now
        self.subjects: dict[str, str] = {}  # path → its subject
        self.path_of: dict[str, str] = {}  # subject → its path
        self._by_name: dict[str, str] = {}  # file name or stem → path (for links)
        self._by_number: dict[int, list[str]] = {}  # number → paths holding it
        self.reserved: dict[str, str] = dict(subjects or {})  # from the cursor (baseline)
        self.held: dict[FactKey, Held] = {}

    def cursor_extra(self) -> dict[str, Any]:
        return {"dir": self.dir, "subjects": dict(sorted(self.subjects.items()))}

    def _is_record_path(self, path: str) -> bool:
        if not path.startswith(self.dir + "/"):
            return False
        rel = path[len(self.dir) + 1 :]
        parts = rel.split("/")
        if any(
            p.startswith((".", "_")) or p in ("templates", "template", "assets", "images")
            for p in parts[:-1]
        ):
            return False
        stem, ext = posixpath.splitext(parts[-1])
        stem = stem.lower()
        return (
            ext.lower() in _EXTENSIONS
            and stem not in _NOT_RECORDS
            and not stem.endswith("template")
        )

    # -- folding
    def wanted(self, changes: list[Change]) -> Iterator[str]:
        for ch in changes:
            if ch.status != "D" and not ch.is_submodule and self._is_record_path(ch.path):
                yield ch.new_sha

    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        records = [ch for ch in changes if not ch.is_submodule and self._is_record_path(ch.path)]
        if not records:
            return []
        # a record moved in this commit (deleted here, same number there) keeps its subject
        freed: dict[int, str] = {}
        for ch in records:
            if ch.status != "D":
                continue
            rec = self.records.pop(ch.path, None)
            held_subject = self.subjects.pop(ch.path, None)
            if held_subject is not None:
                self.path_of.pop(held_subject, None)
            if rec is not None and rec.number is not None and held_subject is not None:
                freed.setdefault(rec.number, held_subject)
        for ch in sorted(records, key=lambda c: (c.path not in self.reserved, c.path)):
            if ch.status == "D":
                continue
            data = self.repo.blob(ch.new_sha)
            if data is None:
                self.skips.add(
                    f"{ch.path}@{commit.sha[:12]}",
                    f"blob {ch.new_sha[:12]} missing (partial clone?); kept as before",
                )
                continue
            rec = parse_adr(ch.path, data.decode("utf-8", errors="replace"))
            self.records[ch.path] = rec
            if rec.number is None:
                self.skips.add(ch.path, "no record number in its file name or title")
                gone = self.subjects.pop(ch.path, None)
                if gone is not None:
                    self.path_of.pop(gone, None)
                continue
            self._assign(ch.path, rec.number, freed)
        self.reserved = {}
        return self._diff(commit, emit)

    def _assign(self, path: str, number: int, freed: dict[int, str]) -> None:
        """Give a record its subject: kept while its number stays, a moved record's,
        ``adr:<n>`` when free, else one naming its file."""
        current = self.subjects.get(path)
        if current is not None and (
            current == subject(number) or current.startswith(subject(number) + ":")
        ):
            return
        wanted = self.reserved.get(path) or freed.pop(number, None) or subject(number)
        holder = self.path_of.get(wanted)
        if holder is not None and holder != path:
            self.skips.note(
                f"{path}: duplicate number {number} (also {holder}); "
                f"kept apart as {subject(number, _stem(path))}"
            )
            wanted = subject(number, _stem(path))
        if current is not None:
            self.path_of.pop(current, None)
        self.subjects[path] = wanted
        self.path_of[wanted] = path

    def _resolve(self, groups: list[tuple[str, ...]], this: str) -> list[str]:
        """The record paths that references name: by file name across all records first,
        by number only when a single record holds it."""
        by_name, by_number = self._by_name, self._by_number
        out: list[str] = []
        for group in groups:
            found = None
            for ref in group:
                base = posixpath.basename(ref.split("#", 1)[0].strip()).lower()
                found = by_name.get(base) or by_name.get(posixpath.splitext(base)[0])
                if found is None:
                    n = ref_number(ref)
                    holders = by_number.get(n, []) if n is not None else []
                    found = holders[0] if len(holders) == 1 else None
                if found is not None:
                    break
            if found is not None and found != this and found not in out:
                out.append(found)
        return out

    def _index(self) -> None:
        """File names and numbers → records, for resolving links (once per commit)."""
        self._by_name, self._by_number = {}, {}
        for path in sorted(self.subjects):
            base = posixpath.basename(path).lower()
            self._by_name.setdefault(base, path)
            self._by_name.setdefault(posixpath.splitext(base)[0], path)
            number = self.records[path].number
            if number is not None:
                self._by_number.setdefault(number, []).append(path)

    def _diff(self, commit: Commit, emit: bool) -> list[ChangeEvent]:
        recs = {p: self.records[p] for p in self.subjects}
        self._index()
        successors: dict[str, list[str]] = {}
        unresolved: dict[str, str] = {}
        for path, rec in sorted(recs.items()):
            if rec.status == "superseded":
                found = self._resolve(rec.successor_refs, path)
                if found:
                    successors[path] = found
                else:
                    what = ", ".join(rec.superseded_by) or "no link"
                    unresolved[path] = what
                    self.skips.add(path, f"superseded by a record not found ({what})")
            elif rec.problem and rec.status is None:
                self.skips.add(path, rec.problem)
        for path, rec in sorted(recs.items()):  # "Supersedes X" on an accepted record
            if rec.status in ("accepted", "superseded") and rec.predecessor_refs:
                for earlier in self._resolve(rec.predecessor_refs, path):
                    if recs[earlier].status in ("deprecated", "rejected"):
                        continue
                    later = successors.setdefault(earlier, [])
                    if path not in later:
                        later.append(path)
                    unresolved.pop(earlier, None)
        targets = {p for later in successors.values() for p in later}
        desired: dict[str, Record] = {}
        for path, rec in recs.items():
            if path in successors or path in unresolved:
                continue
            if rec.status in ("deprecated", "rejected"):
                continue
            if rec.status == "accepted" or (path in targets and rec.status in ("proposed", None)):
                if rec.title:
                    desired[self.subjects[path]] = rec
                else:
                    self.skips.add(path, "no title")
        path_of = self.path_of

        events: list[tuple[tuple[int, str], int, ChangeEvent]] = []
        linked: dict[str, str] = {}  # successor subject → the subject it supersedes
        for key in sorted(self.held, key=lambda k: _order(k.subject)):
            name = key.subject
            if name in desired:
                continue
            was = self.held.pop(key)
            where = path_of.get(name)
            record = recs.get(where) if where else None
            later = [self.subjects[p] for p in successors.get(where or "", [])]
            live = [s for s in later if s in desired]
            number = _order(name)[0]
            if live:
                first = self._held(live[0], desired[live[0]], commit)
                first.metadata["superseded_by"] = " ".join(live)
                events.append(
                    (_order(name), 0, self._event(commit, first, "revised", previous=was.fact))
                )
                for other in live:
                    linked.setdefault(other, name)
                continue
            if record is None:
                reason = f"ADR {number} deleted"
            elif where in unresolved or later:
                why = unresolved.get(where or "") or f"by {', '.join(later)}, not accepted"
                reason = f"ADR {number} superseded ({why})"
            elif record.status in ("deprecated", "rejected"):
                reason = f"ADR {number} {record.status}"
            else:
                reason = f"ADR {number} is {record.status or 'without a known status'} again"
            events.append(
                (
                    _order(name),
                    1,
                    self._event(
                        commit, was, "invalidated", reason=reason, path=was.metadata.get("adr_file")
                    ),
                )
            )
        revised_to = {ev.fact.subject for _, _, ev in events if ev.type == "revised"}
        for name in sorted(desired, key=_order):
            h = self._held(name, desired[name], commit)
            before = self.held.get(h.fact.key)
            self.held[h.fact.key] = h
            if before is None:
                if name in revised_to:
                    continue
                if name in linked:
                    h.metadata["supersedes"] = linked[name]
                events.append((_order(name), 0, self._event(commit, h, "added")))
            elif before.fact != h.fact:
                events.append(
                    (_order(name), 0, self._event(commit, h, "revised", previous=before.fact))
                )
            elif before.metadata.get("adr_file") == h.metadata.get("adr_file"):
                h.metadata = before.metadata
        if not emit:
            return []
        return [ev for _, _, ev in sorted(events, key=lambda t: (t[0], t[1]))]

    def _held(self, name: str, rec: Record, commit: Commit) -> Held:
        assert rec.title is not None
        path = self.path_of[name]
        return Held(
            Fact(name, PREDICATE, rec.title, "decision"),
            (),
            {"adr_file": path, "commit": commit.sha, "status": rec.status or "unknown"},
        )

    def _event(
        self,
        commit: Commit,
        held: Held,
        etype: EventType,
        *,
        previous: Fact | None = None,
        reason: str | None = None,
        path: str | None = None,
    ) -> ChangeEvent:
        meta = dict(held.metadata)
        meta["commit"] = commit.sha
        if etype == "invalidated":
            where_now = self.path_of.get(held.fact.subject)
            rec = self.records.get(where_now) if where_now else None
            meta["status"] = (rec.status or "unknown") if rec else "deleted"
        where = path or meta.get("adr_file", "")
        if previous is not None:  # one record may supersede several in one commit
            where = f"{where}\x1f{previous.subject}"
        return ChangeEvent(
            id=event_id("adr", self.source, commit.sha, where, held.fact.key, etype),
            type=etype,
            timestamp=commit.time,
            source=self.source,
            fact=held.fact,
            previous=previous,
            reason=reason,
            depends_on=(),
            metadata=meta,
        )


def _order(name: str) -> tuple[int, str]:
    """Sort key of a subject: its number, then the subject."""
    number = name.split(":")[1]
    return (int(number) if number.isdigit() else 0), name


def detect_dir(repo: Repo, head: str) -> str | None:
    data = repo.blob(f"{head}:.adr-dir")
    if data is not None:
        text = data.decode("utf-8", "replace").strip().strip("/")
        if text.startswith("./"):
            text = text[2:]
        if text:
            return text
    proc = repo.run("ls-tree", "-d", "--name-only", "-z", head, "--", *CANDIDATE_DIRS, check=False)
    found = {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}
    for candidate in CANDIDATE_DIRS:
        if candidate in found:
            return candidate
    return None


class AdrSource(RepoSource):
    """Decision records' status history (see the module docstring)."""

    kind = "adr"
    opts: AdrOptions

    def _extractor(
        self, repo: Repo, head: str, skips: Skips, state: Mapping[str, Any] | None
    ) -> AdrExtractor:
        directory = self.opts.dir or detect_dir(repo, head)
        if directory is None:
            skips.note(
                "no ADR directory found (.adr-dir, " + ", ".join(CANDIDATE_DIRS) + "); set 'dir'"
            )
            directory = CANDIDATE_DIRS[0]
        subjects: dict[str, str] = {}
        if (
            state is not None
            and state.get("dir") == directory
            and isinstance(state.get("subjects"), dict)
        ):
            subjects = {str(k): v for k, v in state["subjects"].items() if isinstance(v, str)}
        return AdrExtractor(self.name, directory, repo, skips, subjects)

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        assert isinstance(extractor, AdrExtractor)
        if state.get("dir") != extractor.dir:
            return f"ADR directory is now {extractor.dir!r} (was {state.get('dir')!r})"
        if not isinstance(state.get("subjects"), dict):
            return "cursor from an older healthd (records were keyed by number)"
        return None

    def _log_paths(self, extractor: Extractor) -> list[str]:
        assert isinstance(extractor, AdrExtractor)
        return [extractor.dir]

    def _cursor(self, commit: str, seen: dict[str, float], extractor: Extractor) -> str:
        return dump_cursor(
            {"commit": commit, "seen": prune_seen(seen, extractor.held), **extractor.cursor_extra()}
        )


@register_source("adr")
def adr_source(name: str, options: Mapping[str, Any]) -> AdrSource:
    opts = validate_options(AdrOptions, name, options)
    return AdrSource(name, opts)


__all__ = ["CANDIDATE_DIRS", "AdrOptions", "AdrSource", "adr_source", "file_number"]
