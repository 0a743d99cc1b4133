"""The `adr` source: architecture decision records as a timeline of decisions.

Options (``[sources.<name>]`` with ``kind = "adr"``)::

    [sources.decisions]
    kind = "adr"
    path = "/srv/checkouts/shop"        # or url + cache_dir (+ token_env), as for `git`
    dir = "doc/adr"                     # optional; default: discovered (see below)
    branch = "main"                     # default: HEAD
    first_parent = true
    since = "2024-01-01"                # optional, as for `git`
    revalidate_interval = "P7D"         # default P1D
    revalidate_clock = "wall"           # or "head"

Without ``dir`` the records are found where the usual tools put them: the directory
adr-tools' ``.adr-dir`` names, else the first of ``CANDIDATE_DIRS`` present (``doc/adr``,
``docs/adr``, ``docs/architecture/decisions``, ``docs/decisions``,
``architecture-decision-record``, ``ADR``, ...), else the directory holding the most files
named ``adr-NNN-*.md`` / ``NNNN-*.md`` that have a status section (there, only files so
named are records). Every log found is read (``decision_logs``): ``ADR/`` and
``decision-record/`` both, each in its own subject space (``log_spaces``: the first keeps
``adr:<n>``, another takes its file names' numbering, ``dr:<n>`` for ``DR002-x.md``), a
directory inside a log being part of it; ``.adr-dir`` names the one log, as ``dir`` does.
Finding no record is a failed pull naming where it looked. A directory
renamed in the history (``doc/`` → ``docs/``) is followed back through its earlier names,
and git's rename detection makes a renamed record the same record: links by its old file
name still reach it, and one renumbered (``git mv 0015-x.md 0017-x.md``, its title too, as
teams do after two branches took one number) takes its new number's subject in one
``revised`` event (metadata ``renumbered_from``), since the log calls it ADR 17 from then
on; nothing of its decision ends.

Each record is read at every commit that changed it; its status history gives:

* ``Accepted`` → ``added`` ``("adr:<number>", "decision", "<title>", decision)`` (the
  number without leading zeros, the title without it: ``adr:2`` / ``Use Kafka``); a record
  reusing a number another record already holds gets its own subject
  ``adr:<number>:<file stem>`` until it is the only record of that number (the other
  renumbered or deleted: it then takes ``adr:<number>``, in a ``revised`` event with
  ``renumbered_from``; records named by their day, log4brains' ``20200925-x.md``, are
  numbered by it and share it without being reported), and a record moved (deleted here,
  same number there, in one commit) keeps its subject, its new path in ``adr_file``;
* superseded (``Superseded by [3. ...](0003-....md)`` on the old record, or
  ``Supersedes [2. ...](...)`` on an accepted new one) → ``revised`` from the old record's
  fact to the new record's fact (the keys differ); links resolve by file name across all
  records, else by number; a number two records hold is decided by what the commit shows
  (the one of them changed with the referring record), then by the title the reference
  quotes, and the decision is kept; a superseded record whose successor cannot be found
  (or stays ambiguous, reported as such) is ``invalidated``. A record superseded by
  several ends once: ``revised`` to the first (metadata ``superseded_by`` lists them
  all), every other successor, then or later, ``added`` with metadata ``supersedes``; a
  successor already in force when a supersession names it is ``revalidated`` at that
  commit with ``supersedes`` (the link is said once, where it is made);
* ``Deprecated`` / ``Rejected`` of a held decision → ``invalidated`` with a reason (a record
  rejected before it was ever accepted emits nothing);
* ``Proposed`` (``Pending``, ``Draft``) → nothing yet, also when a supersession names it:
  a record is a decision from its own acceptance, and its predecessor ends when its own
  status says superseded (``invalidated``, "superseded (by adr:15, not accepted)"; the
  successor is ``added`` with ``supersedes`` when accepted); a deleted record's decision
  is ``invalidated``;
* a retitled accepted record → ``revised`` on the same key; a title left as the log's
  template has it (``# ADRxxx: Decision Record Title ...``) is replaced by the file name's
  words, and reported.

Formats: Nygard/adr-tools (``# 2. Title``, a ``## Status`` section) and MADR (front matter
``status:``, ``* Status:`` / ``- Status:`` lines), with spelling variants (``superceded``),
decoration (``**Accepted**``, ``~~Proposed~~ Accepted``) and unlinked references
(``Superseded by ADR-0003``), a status in a metadata table (``| Status | Implemented |``) or
code block under the title. A record without a number or an understood status is skipped
with a counted, logged reason; one holding a decision keeps it (a status no longer
understood, template guidance pasted over it, bytes that are no text), said in that
line, until its status says otherwise. A reused number is reported too.
Metadata: ``adr_file``, ``commit``, ``status``. Event ids ``adr:<sha12>:<hash>`` (a
``revised`` event's hash includes the previous record, so one record superseding several
in one commit gives distinct ids).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from pydantic import field_validator

from healthd.model import ChangeEvent, EventType, Fact, FactKey
from healthd.sources import register_source
from healthd.sources._adrdoc import Record, file_number, is_dated, parse_adr, ref_number
from healthd.sources._adrlayout import (
    CANDIDATE_DIRS,
    LOOKED,
    Layout,
    decision_logs,
    detect_layout,
    earlier_names,
    is_record_path,
    is_template_path,
    log_spaces,
    records_problem,
)
from healthd.sources._gitlog import (
    Extractor,
    Held,
    RepoSource,
    Skips,
    dump_cursor,
    event_id,
    prune_seen,
)
from healthd.sources._gitrepo import Change, Commit, GitError, Repo, blob_text, checked_text
from healthd.sources._options import validate_options
from healthd.sources._repo_options import RepoOptions

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


def subject(number: int, stem: str | None = None, space: str = "adr") -> str:
    """``adr:<n>``; a record reusing a number another record holds is ``adr:<n>:<stem>``;
    a log of its own numbering has its own space (``dr:<n>``, see :func:`log_spaces`)."""
    return f"{space}:{number}" if stem is None else f"{space}:{number}:{stem}"


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]


class AdrExtractor(Extractor):
    """Records keyed by path; each numbered record has its own subject (see ``subject``)."""

    def __init__(
        self,
        source: str,
        dirs: tuple[str, ...],
        repo: Repo,
        skips: Skips,
        state: Mapping[str, Any] | None = None,
        *,
        by_name: bool = False,
        space: str = "adr",
        inner: tuple[str, ...] = (),
    ) -> None:
        self.source = source
        self.space = space  # the log's subject space: ``adr`` (``adr:<n>``), ``dr``, ...
        self.label = space.upper() if space.isalnum() else space  # "ADR 4 deleted"
        self.inner = inner  # other logs' directories inside this one's: theirs, not ours
        self.by_name = by_name  # only files named like records are records
        self.read_any = False  # a record was read in this pull
        self.dirs = dirs  # the ADR directory now, then its earlier names
        self.dir = dirs[0]
        self.repo = repo
        self.skips = skips
        self.records: dict[str, Record] = {}  # path → what it says now
        # the words of every title the log's templates have had: once a placeholder, always
        # (a template reworded or deleted leaves the records that kept it as they were)
        self.template_titles: set[str] = set()
        self.subjects: dict[str, str] = {}  # path → its subject
        self.numbers: dict[str, int] = {}  # path → the number its subject was given for
        self.path_of: dict[str, str] = {}  # subject → its path
        self._by_name: dict[str, str] = {}  # file name or stem → path (for links)
        self._by_number: dict[int, list[str]] = {}  # number → paths holding it
        self._touched: set[str] = set()  # record paths the commit being folded changed
        # in the commit being folded: path → (subject it had, subject it has now) for each
        # record whose number changed (or whose number another record no longer shares);
        # record paths renamed (old → new); subjects a moved record carried over
        self._moves: dict[str, tuple[str, str]] = {}
        self._renamed: dict[str, str] = {}
        self._carried: set[str] = set()
        self._apart: list[str] = []  # records given their own subject in this commit
        state = state or {}
        # from the cursor (a baseline): path → subject; a link decided between records
        # sharing a number (path → reference → record); a renamed record's old file names
        self.reserved: dict[str, str] = _str_map(state.get("subjects"))
        self.links: dict[str, dict[str, str]] = {
            path: _str_map(refs)
            for path, refs in (state.get("links") or {}).items()
            if isinstance(refs, dict)
        }
        self.aliases: dict[str, str] = _str_map(state.get("aliases"))
        templates = state.get("templates")
        if isinstance(templates, list):
            self.template_titles = {t for t in templates if isinstance(t, str)}
        # decisions held at the cursor by records whose status could not be read there:
        # the tree at the cursor cannot tell them (subject → the fact's value and metadata)
        kept_state = state.get("kept")
        # a cursor written before it said them (no ``kept``): what a record unread at it
        # held is unknown, so a baseline with such a record is no baseline (see _diff)
        self._kept_unknown = bool(state) and not isinstance(kept_state, dict)
        self._baseline_problem: str | None = None
        self._kept_at_cursor: dict[str, dict[str, str]] = {
            str(name): _str_map(kept)
            for name, kept in (kept_state.items() if isinstance(kept_state, dict) else ())
            if isinstance(kept, dict) and isinstance(kept.get("value"), str)
        }
        self.held: dict[FactKey, Held] = {}
        # (predecessor, successor) subjects linked so far: a link is said once, at the commit
        # that makes it (rebuilt with the state at a cursor, so never said twice)
        self.linked: set[tuple[str, str]] = set()

    def cursor_extra(self) -> dict[str, Any]:
        return {
            "dir": self.dir,
            **({"space": self.space} if self.space != "adr" else {}),
            "subjects": dict(sorted(self.subjects.items())),
            "links": {p: dict(sorted(r.items())) for p, r in sorted(self.links.items()) if r},
            "aliases": dict(sorted(self.aliases.items())),
            **({"templates": sorted(self.template_titles)} if self.template_titles else {}),
            # (always, even empty: a cursor without it is from before it was written)
            "kept": self._kept(),
        }

    def baseline_problem(self) -> str | None:
        return self._baseline_problem

    def _kept(self) -> dict[str, dict[str, str]]:
        """The decisions held by records whose status cannot be read now, for the cursor."""
        out: dict[str, dict[str, str]] = {}
        for key, held in sorted(self.held.items(), key=lambda kv: _order(kv[0].subject)):
            path = self.path_of.get(key.subject)
            rec = self.records.get(path) if path is not None else None
            if rec is not None and rec.status is None:
                out[key.subject] = {"value": held.fact.value, **held.metadata}
        return out

    def _is_record_path(self, path: str) -> bool:
        return is_record_path(path, self.dirs, self.by_name) and not any(
            path.startswith(inner + "/") for inner in self.inner
        )

    def _is_template_path(self, path: str) -> bool:
        return is_template_path(path, self.dirs) and not any(
            path.startswith(inner + "/") for inner in self.inner
        )

    # -- folding
    def wanted(self, changes: list[Change]) -> Iterator[str]:
        for ch in changes:
            if (
                ch.status != "D"
                and not ch.is_submodule
                and (self._is_record_path(ch.path) or self._is_template_path(ch.path))
            ):
                yield ch.new_sha

    def _read_templates(self, changes: list[Change]) -> bool:
        """Learn the titles of the log's templates a commit writes; whether one is new."""
        learned = False
        for ch in changes:
            if ch.status == "D" or ch.is_submodule or not self._is_template_path(ch.path):
                continue
            data = self.repo.blob(ch.new_sha)
            title = parse_adr("", blob_text(data)).title if data else None
            words = _words(_PLACEHOLDER_NUMBER.sub("", title or ""))
            if words and words not in self.template_titles:
                self.template_titles.add(words)
                learned = True
        return learned

    def _title(self, path: str, rec: Record) -> str | None:
        """A record's title; one left as a template of the log has it (alphagov/forms'
        ``ADR025-remove-papertrail.md``: "Decision Record Title (a description of ...)") is
        named from its file name's words ("Remove papertrail"), unless the file was named
        after that very title (a real record that a template copied)."""
        title = rec.title
        if title is None or _words(title) not in self.template_titles:
            return title
        words = _file_words(path)
        if not words or _words(words) == _words(title):
            return title
        return words[:1].upper() + words[1:]

    def _records_changed(self, changes: list[Change]) -> list[Change]:
        """The commit's changes to records; a record renamed within the ADR directories
        (renumbered, or the directory renamed) is the same record, its state moved to its
        new path and its content read as a modification."""
        out: list[Change] = []
        for ch in changes:
            if ch.is_submodule:
                continue
            if ch.status == "R" and ch.old_path is not None:
                was, now = self._is_record_path(ch.old_path), self._is_record_path(ch.path)
                if was and now and self._same_record(ch.old_path, ch.path, ch.new_sha):
                    self._rename(ch.old_path, ch.path)
                    out.append(ch._replace(status="M", old_path=None))
                    continue
                if was:
                    out.append(ch._replace(status="D", path=ch.old_path))
                if now:
                    out.append(ch._replace(status="A", old_path=None))
            elif self._is_record_path(ch.path):
                out.append(ch)
        return out

    def _same_record(self, old: str, new: str, new_sha: str) -> bool:
        """Whether git's rename is the record moved, not another record written from the
        same template in its place: the title stays."""
        before = self.records.get(old)
        data = self.repo.blob(new_sha)
        if before is None or data is None:
            return False
        after = parse_adr("", blob_text(data))
        return _words(self._title(old, before) or "") == _words(self._title(new, after) or "")

    def _rename(self, old: str, new: str) -> None:
        _move(self.records, old, new)
        _move(self.subjects, old, new)
        _move(self.numbers, old, new)  # its new number, if another, moves it (_assign)
        _move(self.links, old, new)
        self._renamed[old] = new
        held_subject = self.subjects.get(new)
        if held_subject is not None:
            self.path_of[held_subject] = new
        base = posixpath.basename(old).lower()
        for name in (base, posixpath.splitext(base)[0]):
            self.aliases[name] = new
        for name, target in self.aliases.items():
            if target == old:
                self.aliases[name] = new
        for refs in self.links.values():
            for ref, target in refs.items():
                if target == old:
                    refs[ref] = new

    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        self._moves, self._renamed, self._carried, self._apart = {}, {}, set(), []
        learned = self._read_templates(changes)  # (records that kept it are named anew)
        records = self._records_changed(changes)
        if not records and not learned:
            return []
        # a record moved in this commit (deleted here, same number there) keeps its subject
        freed: dict[int, str] = {}
        for ch in records:
            if ch.status != "D":
                continue
            rec = self.records.pop(ch.path, None)
            held_subject = self.subjects.pop(ch.path, None)
            self.numbers.pop(ch.path, None)
            self.links.pop(ch.path, None)
            if held_subject is not None:
                self.path_of.pop(held_subject, None)
            if rec is not None and rec.number is not None and held_subject is not None:
                freed.setdefault(rec.number, held_subject)
        self._touched = {ch.path for ch in records if ch.status != "D"}
        for ch in sorted(records, key=lambda c: (c.path not in self.reserved, c.path)):
            if ch.status == "D":
                continue
            data = self.repo.blob(ch.new_sha)
            if data is None:
                self.skips.add(
                    f"{ch.path}@{commit.sha[:12]}",
                    f"{self.repo.unread(ch.new_sha)}; kept as before",
                )
                continue
            text, unreadable = checked_text(data)
            if unreadable is not None:
                self.skips.add(f"{ch.path}@{commit.sha[:12]}", unreadable)
            rec = parse_adr(ch.path, text)
            self.records[ch.path] = rec
            if rec.number is None:
                self.skips.add(ch.path, "no record number in its file name or title")
                gone = self.subjects.pop(ch.path, None)
                self.numbers.pop(ch.path, None)
                if gone is not None:
                    self.path_of.pop(gone, None)
                continue
            self.read_any = True  # (a file with no record number is no record read)
            self._assign(ch.path, rec.number, freed)
        if emit:  # (a baseline keeps the subjects the events so far have named)
            self._unshare()
        for path in self._apart:
            number = self.numbers.get(path)
            holder = self.path_of.get(subject(number, space=self.space)) if number else None
            if holder is not None and holder != path and not is_dated(path):
                self.skips.note(
                    f"{path}: duplicate number {number} (also {holder}); "
                    f"kept apart as {self.subjects[path]}"
                )
        self.reserved = {}
        events = self._diff(commit, emit)
        self._kept_at_cursor = {}  # (the baseline has taken them)
        return events

    def _assign(self, path: str, number: int, freed: dict[int, str]) -> None:
        """Give a record its subject: kept while its number stays; a moved record's (deleted
        here, the same number there); ``adr:<n>`` when free, else one naming its file. A
        record renumbered (``git mv 0015-x.md 0017-x.md``, its title too) takes its new
        number's subject: what the log calls ADR 17 is ``adr:17``."""
        current = self.subjects.get(path)
        if current is not None and self.numbers.get(path, number) == number:
            self.numbers[path] = number
            return
        if current is None:
            carried = freed.pop(number, None)
            if carried is not None:
                self._carried.add(carried)
            wanted = self.reserved.get(path) or carried or subject(number, space=self.space)
        else:
            wanted = subject(number, space=self.space)
        holder = self.path_of.get(wanted)
        if holder is not None and holder != path:
            self._apart.append(path)  # said once the commit's records all have subjects
            wanted = subject(number, _stem(path), self.space)
        if current is not None:
            self.path_of.pop(current, None)
            self._moved(path, current, wanted)
        self.subjects[path] = wanted
        self.numbers[path] = number
        self.path_of[wanted] = path

    def _unshare(self) -> None:
        """A record kept apart as ``adr:<n>:<stem>`` takes ``adr:<n>`` once no other record
        holds that number's subject (the other renumbered or deleted), in path order."""
        for path in sorted(self.subjects):
            held_subject, number = self.subjects[path], self.numbers.get(path)
            if number is None:
                continue
            plain = subject(number, space=self.space)
            if held_subject == plain or plain in self.path_of:
                continue
            del self.path_of[held_subject]
            self.subjects[path] = plain
            self.path_of[plain] = path
            self._moved(path, held_subject, plain)

    def _moved(self, path: str, old: str, new: str) -> None:
        first = self._moves.get(path, (old, old))[0]
        if first == new:
            self._moves.pop(path, None)
        else:
            self._moves[path] = (first, new)

    def _resolve(
        self, groups: list[tuple[str, ...]], this: str
    ) -> tuple[list[str], list[str], bool]:
        """The record paths that references name (``this`` record aside), the references
        that name several records without anything deciding between them, and whether a
        reference names ``this`` record itself. A reference resolves by file name
        (a renamed record's old one too), else by number; a number several records hold is
        decided by what the commit shows (the one record changed with the referring one),
        then by the title the reference quotes, and the decision is kept."""
        by_name, by_number = self._by_name, self._by_number
        out: list[str] = []
        ambiguous: list[str] = []
        itself = False
        for group in groups:
            found = None
            doubt = None
            for ref in group:
                base = posixpath.basename(ref.split("#", 1)[0].strip()).lower()
                stem = posixpath.splitext(base)[0]
                found = (
                    by_name.get(base)
                    or by_name.get(stem)
                    or self.aliases.get(base)
                    or self.aliases.get(stem)
                )
                if found is None:
                    n = ref_number(ref)
                    holders = [p for p in by_number.get(n, []) if p != this] if n else []
                    if len(holders) == 1:
                        found = holders[0]
                    elif holders:
                        found = self._decide(this, group, holders)
                        if found is None:
                            doubt = f"{ref!r} names {' and '.join(holders)}"
                if found is not None:
                    break
            if found == this:
                itself = True
            elif found is not None:
                if found not in out:
                    out.append(found)
            elif doubt is not None:
                ambiguous.append(doubt)
        return out, ambiguous, itself

    def _decide(self, this: str, group: tuple[str, ...], holders: list[str]) -> str | None:
        earlier = self.links.get(this, {}).get(group[0])
        if earlier in holders:
            return earlier
        pick = None
        if this in self._touched:
            changed = [p for p in holders if p in self._touched]
            pick = changed[0] if len(changed) == 1 else None
        if pick is None:
            said = _words(" ".join(group))
            titled = [
                p
                for p in holders
                if (title := self._title(p, self.records[p]))
                and f" {_words(title)} " in f" {said} "
            ]
            pick = titled[0] if len(titled) == 1 else None
        if pick is not None:
            self.links.setdefault(this, {})[group[0]] = pick
        return pick

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
                found, ambiguous, itself = self._resolve(rec.successor_refs, path)
                if found:
                    successors[path] = found
                elif ambiguous:
                    unresolved[path] = f"ambiguous: {'; '.join(ambiguous)}"
                    self.skips.add(
                        path,
                        f"superseded by an ambiguous reference ({'; '.join(ambiguous)}: "
                        "neither the commit nor the title tells which)",
                    )
                else:
                    what = ", ".join(rec.superseded_by) or "no link"
                    unresolved[path] = what
                    if itself:
                        self.skips.add(path, f"superseded by itself ({what})")
                    else:
                        self.skips.add(path, f"superseded by a record not found ({what})")
            elif rec.problem and rec.status is None:
                had = self._moves.get(path, (self.subjects[path],))[0]  # (before renumbering)
                held = FactKey(had, PREDICATE) in self.held
                self.skips.add(path, f"{rec.problem}; its decision kept" if held else rec.problem)
        for path, rec in sorted(recs.items()):  # "Supersedes X" on an accepted record
            if rec.status in ("accepted", "superseded") and rec.predecessor_refs:
                earlier_paths, ambiguous, _ = self._resolve(rec.predecessor_refs, path)
                for doubt in ambiguous:
                    self.skips.add(path, f"supersedes an ambiguous reference ({doubt})")
                for earlier in earlier_paths:
                    if recs[earlier].status in ("deprecated", "rejected"):
                        continue
                    later = successors.setdefault(earlier, [])
                    if path not in later:
                        later.append(path)
                    unresolved.pop(earlier, None)
        desired: dict[str, Record] = {}
        # a record whose status cannot be read now (not understood, template guidance, no
        # status, unreadable bytes) says nothing new: the decision it held stands
        unread = {
            self.subjects[path]
            for path, rec in recs.items()
            if rec.status is None and path not in successors
        }
        if not emit and self._kept_unknown and unread:
            self._baseline_problem = (
                f"cursor from an older healthd, which does not say what "
                f"{', '.join(sorted(unread, key=_order)[:3])} held"
            )
        for name in sorted(unread):  # (a baseline at a cursor: what those records held)
            kept = self._kept_at_cursor.get(name)
            if kept is not None and FactKey(name, PREDICATE) not in self.held:
                value = kept.pop("value")
                self.held[FactKey(name, PREDICATE)] = Held(
                    Fact(name, PREDICATE, value, "decision"), (), kept
                )
        for path, rec in recs.items():
            if path in successors or path in unresolved:
                continue
            # a decision only once its own status says so: a Pending successor a
            # supersession names is none until it is accepted
            if rec.status == "accepted":
                title = self._title(path, rec)
                if title != rec.title:
                    self.skips.note(
                        f"{path}: its title is its template's ({rec.title!r}); named from its "
                        "file name"
                    )
                elif title and _words(title) in self.template_titles and not _file_words(path):
                    self.skips.note(
                        f"{path}: its title is its template's ({title!r}), and its file name "
                        "has no words to name it by; kept"
                    )
                if title:
                    desired[self.subjects[path]] = rec
                else:
                    self.skips.add(path, "no title")

        # a renumbered record's decision moves to its new subject (one revised event); one
        # no longer accepted ends under the subject it had, below
        moved_in: dict[str, tuple[str, Held]] = {}  # new subject → (old subject, its fact)
        moved_out: dict[str, str] = {}  # old subject → the record's path
        first_events: list[ChangeEvent] = []  # decisions a subject's new record ends
        move_events: list[tuple[str, str, ChangeEvent]] = []  # (old subject, new, event)
        taken: list[tuple[str, str, str, Held]] = []  # (path, old subject, new, its fact)
        for path, (old, new) in sorted(self._moves.items()):
            self.linked = {(new if p == old else p, new if s == old else s) for p, s in self.linked}
            was = self.held.pop(FactKey(old, PREDICATE), None)
            if was is not None:
                taken.append((path, old, new, was))
        # (every moved record's decision taken first: two records swapping numbers free
        # each other's subject; those moving to an unread record's subject last)
        taken.sort(key=lambda t: t[2] in unread and t[2] not in desired)
        for path, old, new, was in taken:
            if new in unread and new not in desired:
                before = self.held.get(FactKey(new, PREDICATE))
                if before is not None and self._taken_over(new, before):
                    # the subject's decision was another record's (deleted, renumbered):
                    # it ends first, as it would for an accepted record taking the number
                    first_events.append(self._end_taken(commit, new, before))
                    del self.held[FactKey(new, PREDICATE)]
                    moved_out.pop(new, None)  # (ended here, not below with the subject)
            if new in desired:
                moved_in[new] = (old, was)
            elif new in unread and FactKey(new, PREDICATE) not in self.held:
                # renumbered while its status cannot be read: the decision it held moves with
                # it, as it would accepted (it ended, "ADR 3 is without a known status again")
                now = Held(
                    Fact(new, PREDICATE, was.fact.value, "decision"),
                    (),
                    {**was.metadata, "adr_file": path},
                )
                self.held[now.fact.key] = now
                told = Held(now.fact, (), {**now.metadata, "renumbered_from": old})
                move_events.append(
                    (
                        old,
                        new,
                        self._event(commit, told, "revised", previous=was.fact, status="unknown"),
                    )
                )
            else:
                self.held[FactKey(old, PREDICATE)] = was
                moved_out[old] = path

        events: list[tuple[tuple[int, str], int, ChangeEvent]] = []
        supersedes: dict[str, list[str]] = {}  # successor subject → what it supersedes
        for earlier, later_paths in sorted(successors.items()):
            for later_path in later_paths:
                supersedes.setdefault(self.subjects[later_path], []).append(self.subjects[earlier])
        new_links: dict[str, list[str]] = {}  # successor subject → newly linked predecessors
        for successor, predecessors in supersedes.items():
            for predecessor in predecessors:
                if (predecessor, successor) not in self.linked:
                    self.linked.add((predecessor, successor))
                    new_links.setdefault(successor, []).append(predecessor)
        for key in sorted(self.held, key=lambda k: _order(k.subject)):
            name = key.subject
            if name in desired:
                continue
            if (
                name in unread
                and name not in moved_out
                and not self._taken_over(name, self.held[key])
            ):
                # kept (its own record's: another record's, deleted, ends below); moved meanwhile (git mv, a directory renamed), it is at its new path,
                # as an accepted record's would be: what ends it later finds it there
                still, now_at = self.held[key], self.path_of[name]
                if still.metadata.get("adr_file") != now_at:
                    self.held[key] = Held(
                        still.fact, still.depends_on, {**still.metadata, "adr_file": now_at}
                    )
                continue
            was = self.held.pop(key)
            where = moved_out.get(name) or self._record_of(name, was)
            record = recs.get(where) if where else None
            later = [self.subjects[p] for p in successors.get(where or "", [])]
            live = [s for s in later if s in desired]
            number = record.number if record is not None and record.number else _order(name)[0]
            if live:
                first = self._held(live[0], desired[live[0]], commit)
                first.metadata["superseded_by"] = " ".join(live)
                events.append(
                    (_order(name), 0, self._event(commit, first, "revised", previous=was.fact))
                )
                continue
            if record is None:
                reason = f"{self.label} {number} deleted"
            elif where in unresolved or later:
                why = unresolved.get(where or "") or f"by {', '.join(later)}, not accepted"
                reason = f"{self.label} {number} superseded ({why})"
            elif record.status in ("deprecated", "rejected"):
                reason = f"{self.label} {number} {record.status}"
            else:
                reason = (
                    f"{self.label} {number} is {record.status or 'without a known status'} again"
                )
            ended = was
            if record is not None and where != was.metadata.get("adr_file"):
                ended = Held(was.fact, was.depends_on, {**was.metadata, "adr_file": where or ""})
            status = (record.status or "unknown") if record is not None else "deleted"
            events.append(
                (
                    _order(name),
                    1,
                    self._event(
                        commit,
                        ended,
                        "invalidated",
                        reason=reason,
                        path=was.metadata.get("adr_file"),
                        status=status,
                    ),
                )
            )
        revised_to = {ev.fact.subject for _, _, ev in events if ev.type == "revised"}
        for name in sorted(desired, key=_order):
            h = self._held(name, desired[name], commit)
            before = self.held.get(h.fact.key)
            if before is not None and self._taken_over(name, before):
                # another record's decision held this subject: it ends first
                first_events.append(self._end_taken(commit, name, before))
                before = None
            self.held[h.fact.key] = h
            if before is None:
                came = moved_in.get(name)
                if came is not None:
                    old, was = came
                    told = Held(h.fact, h.depends_on, {**h.metadata, "renumbered_from": old})
                    move_events.append(
                        (old, name, self._event(commit, told, "revised", previous=was.fact))
                    )
                    continue
                if name in revised_to:
                    continue
                told = h
                if name in supersedes:
                    said = " ".join(sorted(supersedes[name], key=_order))
                    told = Held(h.fact, h.depends_on, {**h.metadata, "supersedes": said})
                events.append((_order(name), 0, self._event(commit, told, "added")))
            elif before.fact != h.fact:
                events.append(
                    (_order(name), 0, self._event(commit, h, "revised", previous=before.fact))
                )
            else:
                if name in new_links and name not in revised_to:
                    # a successor that holds already: the supersession is news about it
                    said = " ".join(sorted(new_links[name], key=_order))
                    link = Held(h.fact, h.depends_on, {**h.metadata, "supersedes": said})
                    events.append((_order(name), 2, self._event(commit, link, "revalidated")))
                if before.metadata.get("adr_file") == h.metadata.get("adr_file"):
                    h.metadata = before.metadata
        if not emit:
            return []
        rest = [ev for _, _, ev in sorted(events, key=lambda t: (t[0], t[1]))]
        return first_events + _moves_in_order(move_events) + rest

    def _record_of(self, name: str, held: Held) -> str | None:
        """The path of the record whose decision ``held`` is (renamed in this commit, or
        moved under the same subject), which another record may hold the subject of now."""
        if name in self._carried:
            return self.path_of.get(name)
        was_at = held.metadata.get("adr_file")
        return self._renamed.get(was_at, was_at) if was_at else self.path_of.get(name)

    def _taken_over(self, name: str, before: Held) -> bool:
        """Whether the decision held under ``name`` is another record's than the one that
        has the subject now (that one deleted, or no longer numbered, in this commit)."""
        return self._record_of(name, before) != self.path_of.get(name)

    def _end_taken(self, commit: Commit, name: str, before: Held) -> ChangeEvent:
        was_at = self._record_of(name, before) or ""
        number = _order(name)[0]
        gone = self.records.get(was_at) is None
        reason = (
            f"{self.label} {number} deleted"
            if gone
            else f"{self.label} {number} is {self.path_of[name]} now"
        )
        return self._event(
            commit,
            before,
            "invalidated",
            reason=reason,
            path=was_at,
            status="deleted" if gone else None,
        )

    def _held(self, name: str, rec: Record, commit: Commit) -> Held:
        path = self.path_of[name]
        title = self._title(path, rec)
        assert title is not None
        return Held(
            Fact(name, PREDICATE, title, "decision"),
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
        status: str | None = None,
    ) -> ChangeEvent:
        meta = dict(held.metadata)
        meta["commit"] = commit.sha
        if status is not None:
            meta["status"] = status
        elif etype == "invalidated":
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


class AdrLogs(Extractor):
    """Every decision log of a repository, each folded by its own :class:`AdrExtractor`
    in its own subject space; the first log's state and cursor are what a repository with
    one log has always had, the others' follow under ``logs``."""

    def __init__(self, logs: list[AdrExtractor]) -> None:
        self.logs = logs
        self.held = {}

    @property
    def dirs(self) -> list[str]:
        return [d for log in self.logs for d in log.dirs]

    @property
    def read_any(self) -> bool:
        return any(log.subjects or log.read_any for log in self.logs)

    def wanted(self, changes: list[Change]) -> Iterator[str]:
        for log in self.logs:
            yield from log.wanted(changes)

    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        events = [ev for log in self.logs for ev in log.apply(commit, changes, emit)]
        self.held = {key: held for log in self.logs for key, held in log.held.items()}
        return events

    def baseline_problem(self) -> str | None:
        return next((why for log in self.logs if (why := log.baseline_problem())), None)

    def cursor_extra(self) -> dict[str, Any]:
        first, *rest = self.logs
        extra = first.cursor_extra()
        if rest:
            extra["logs"] = [log.cursor_extra() for log in rest]
        return extra


def _saved_logs(state: Mapping[str, Any] | None) -> dict[tuple[str, str], Mapping[str, Any]]:
    """A cursor's state of each log, by (directory, space)."""
    if state is None:
        return {}
    saved: dict[tuple[str, str], Mapping[str, Any]] = {
        (str(state.get("dir")), str(state.get("space", "adr"))): state
    }
    for log in state.get("logs") or ():
        if isinstance(log, dict):
            saved[(str(log.get("dir")), str(log.get("space", "adr")))] = log
    return saved


_V = TypeVar("_V")


def _moves_in_order(moves: list[tuple[str, str, ChangeEvent]]) -> list[ChangeEvent]:
    """Renumbering events so that a record leaves a subject before another takes it
    (24 → 27, then 24:stem → 24); a cycle (two records swapping numbers) in subject order."""
    pending = sorted(moves, key=lambda m: (_order(m[0]), m[1]))
    out: list[ChangeEvent] = []
    while pending:
        sources = {old for old, _, _ in pending}
        ready = [m for m in pending if m[1] not in sources] or pending[:1]
        out.extend(ev for _, _, ev in ready)
        pending = [m for m in pending if m not in ready]
    return out


def _move(table: dict[str, _V], old: str, new: str) -> None:
    if old in table:
        table[new] = table.pop(old)


def _str_map(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, str)}


#: A template title's placeholder for the number (``ADRxxx:``, ``NUMBER.``, ``NNNN -``).
_PLACEHOLDER_NUMBER = re.compile(r"^[A-Za-z]{0,5}[-_ ]?(?:x{3,}|n{3,}|number)[.:]?\s*", re.I)
#: A record file name's number and its prefix (``0017-``, ``ADR025-``, ``DR-005_``).
_FILE_TITLE = re.compile(r"^(?:decision|[A-Za-z]{0,5})[-_ ]?\d+[-_ .]*", re.I)


def _file_words(path: str) -> str:
    """A record file name's words, past its number: ``ADR025-remove-papertrail.md`` →
    ``remove papertrail``."""
    return _FILE_TITLE.sub("", _stem(path)).replace("_", " ").replace("-", " ").strip()


def _words(text: str) -> str:
    """Lower-case words joined by single spaces, for comparing a title with a reference."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def _order(name: str) -> tuple[int, str]:
    """Sort key of a subject: its number, then the subject."""
    number = name.split(":")[1]
    return (int(number) if number.isdigit() else 0), name


class NoRecords(GitError):
    """An `adr` source found no decision record where it looked."""


class AdrSource(RepoSource):
    """Decision records' status history (see the module docstring)."""

    kind = "adr"
    opts: AdrOptions
    follows_renames = True

    def _extractor(
        self, repo: Repo, head: str, skips: Skips, state: Mapping[str, Any] | None
    ) -> AdrLogs:
        found = [Layout(self.opts.dir)] if self.opts.dir else decision_logs(repo, head)
        if not found:
            raise NoRecords(
                f"no ADR records found in {self.opts.path or self.opts.url} at "
                f"{self.opts.branch or 'HEAD'}: looked in {LOOKED}; set 'dir'"
            )
        spaces = log_spaces(repo, head, found)
        dirs = [
            (layout.dir, *earlier_names(repo, head, layout.dir, self.opts.first_parent))
            for layout in found
        ]
        saved = _saved_logs(state)
        logs = []
        for i, (layout, space) in enumerate(zip(found, spaces, strict=True)):
            inner = tuple(
                other
                for j, others in enumerate(dirs)
                if j != i
                for other in others
                if any(other.startswith(mine + "/") for mine in dirs[i])
            )
            logs.append(
                AdrExtractor(
                    self.name,
                    dirs[i],
                    repo,
                    skips,
                    saved.get((layout.dir, space)),
                    by_name=layout.by_name,
                    space=space,
                    inner=inner,
                )
            )
        return AdrLogs(logs)

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        assert isinstance(extractor, AdrLogs)
        now = [(log.dir, log.space) for log in extractor.logs]
        was = list(_saved_logs(state))
        if now != was:
            if len(now) == len(was) == 1:
                return f"ADR directory is now {now[0][0]!r} (was {state.get('dir')!r})"
            return (
                f"decision logs are now {', '.join(d for d, _ in now)} "
                f"(were {', '.join(d for d, _ in was)})"
            )
        if not isinstance(state.get("subjects"), dict):
            return "cursor from an older healthd (records were keyed by number)"
        return None

    def _log_paths(self, extractor: Extractor) -> list[str]:
        assert isinstance(extractor, AdrLogs)
        return extractor.dirs

    def _finish(self, extractor: Extractor) -> str | None:
        assert isinstance(extractor, AdrLogs)
        if extractor.read_any:
            return None
        first = extractor.logs[0]
        where = (
            f"dir {first.dir!r}"
            if self.opts.dir
            else f"{first.dir!r} (found by file names)"
            if first.by_name
            else f"{first.dir!r}"
        )
        return (
            f"no ADR records found in {where} of {self.opts.path or self.opts.url} at "
            f"{self.opts.branch or 'HEAD'}"
        )

    def _cursor(self, commit: str, seen: dict[str, float], extractor: Extractor) -> str:
        return dump_cursor(
            {"commit": commit, "seen": prune_seen(seen, extractor.held), **extractor.cursor_extra()}
        )


@register_source("adr")
def adr_source(name: str, options: Mapping[str, Any]) -> AdrSource:
    opts = validate_options(AdrOptions, name, options)
    return AdrSource(name, opts)


__all__ = [
    "CANDIDATE_DIRS",
    "LOOKED",
    "AdrLogs",
    "AdrOptions",
    "AdrSource",
    "Layout",
    "adr_source",
    "decision_logs",
    "detect_layout",
    "file_number",
    "is_record_path",
    "records_problem",
]
