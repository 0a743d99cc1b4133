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
  number without leading zeros, the title without it: ``adr:2`` / ``Use Kafka``);
* superseded (``Superseded by [3. ...](0003-....md)`` on the old record, or
  ``Supersedes [2. ...](...)`` on an accepted new one) → ``revised`` from the old record's
  fact to the new record's fact (the keys differ); links resolve by file name, then by
  number; a superseded record whose successor cannot be found is ``invalidated``;
* ``Deprecated`` / ``Rejected`` of a held decision → ``invalidated`` with a reason (a record
  rejected before it was ever accepted emits nothing);
* ``Proposed`` → nothing yet; a deleted record's decision is ``invalidated``;
* a retitled accepted record → ``revised`` on the same key.

Formats: Nygard/adr-tools (``# 2. Title``, a ``## Status`` section) and MADR (front matter
``status:``, ``* Status:`` / ``- Status:`` lines), with spelling variants (``superceded``),
decoration (``**Accepted**``, ``~~Proposed~~ Accepted``) and unlinked references
(``Superseded by ADR-0003``). A record without a number or an understood status, or
reusing a number another file holds, is skipped with a counted, logged reason.
Metadata: ``adr_file``, ``commit``, ``status``. Event ids ``adr:<sha12>:<hash>``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from pydantic import field_validator

from healthd.model import ChangeEvent, Fact, FactKey
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


def subject(number: int) -> str:
    return f"adr:{number}"


class AdrExtractor(Extractor):
    def __init__(
        self,
        source: str,
        directory: str,
        repo: Repo,
        skips: Skips,
        owners: Mapping[int, str] | None = None,
    ) -> None:
        self.source = source
        self.dir = directory
        self.repo = repo
        self.skips = skips
        self.records: dict[str, Record] = {}  # path → what it says now
        self.owners: dict[int, str] = {}  # number → the path holding it
        self.reserved: dict[int, str] = dict(owners or {})  # from the cursor (baseline)
        self.held: dict[FactKey, Held] = {}
        self.status: dict[int, str] = {}

    def cursor_extra(self) -> dict[str, Any]:
        return {"dir": self.dir, "owners": {str(n): p for n, p in sorted(self.owners.items())}}

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
    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        touched = False
        if self.reserved:  # a baseline: let each number go back to the file that held it
            order = {p: n for n, p in self.reserved.items()}
            changes = sorted(changes, key=lambda c: (c.path not in order, c.path))
            self.reserved = {}
        for ch in changes:
            if ch.is_submodule or not self._is_record_path(ch.path):
                continue
            touched = True
            if ch.status == "D":
                rec = self.records.pop(ch.path, None)
                if (
                    rec is not None
                    and rec.number is not None
                    and self.owners.get(rec.number) == ch.path
                ):
                    del self.owners[rec.number]
                continue
            data = self.repo.blob(ch.new_sha)
            if data is None:
                self.skips.add(
                    f"{ch.path}@{commit.sha[:12]}",
                    f"blob {ch.new_sha[:12]} missing (partial clone?); kept as before",
                )
                continue
            rec = parse_adr(ch.path, data.decode("utf-8", errors="replace"))
            old = self.records.get(ch.path)
            if (
                old is not None
                and old.number is not None
                and old.number != rec.number
                and self.owners.get(old.number) == ch.path
            ):
                del self.owners[old.number]
            self.records[ch.path] = rec
            if rec.number is None:
                self.skips.add(ch.path, "no record number in its file name or title")
                continue
            holder = self.owners.get(rec.number)
            if holder is None:
                self.owners[rec.number] = ch.path
            elif holder != ch.path:
                self.skips.add(ch.path, f"duplicate number {rec.number} (already {holder})")
        if not touched:
            return []
        # a freed number goes to another file that claims it
        for path in sorted(self.records):
            rec = self.records[path]
            if rec.number is not None and rec.number not in self.owners:
                self.owners[rec.number] = path
        return self._diff(commit, emit)

    def _names(self) -> dict[str, int]:
        """Record file names (and stems) → number, for links by file name."""
        names: dict[str, int] = {}
        for n, p in self.owners.items():
            base = posixpath.basename(p).lower()
            names.setdefault(posixpath.splitext(base)[0], n)
            names[base] = n
        return names

    def _resolve(self, refs: list[str], this: int, names: dict[str, int]) -> int | None:
        for ref in refs:
            base = posixpath.basename(ref.split("#", 1)[0].strip()).lower()
            n = names.get(base)
            if n is None:
                n = ref_number(ref)
            if n is not None and n != this and n in self.owners:
                return n
        return None

    def _diff(self, commit: Commit, emit: bool) -> list[ChangeEvent]:
        recs = {n: self.records[p] for n, p in self.owners.items()}
        names = self._names()
        successor: dict[int, int] = {}
        unresolved: dict[int, str] = {}
        for n, rec in sorted(recs.items()):
            if rec.status == "superseded":
                m = self._resolve(rec.superseded_by, n, names)
                if m is not None:
                    successor[n] = m
                else:
                    what = ", ".join(rec.superseded_by) or "no link"
                    unresolved[n] = what
                    self.skips.add(self.owners[n], f"superseded by a record not found ({what})")
            elif rec.problem and rec.status is None:
                self.skips.add(self.owners[n], rec.problem)
        for m, rec in sorted(recs.items()):  # "Supersedes X" on an accepted record
            if rec.status in ("accepted", "superseded") and rec.supersedes:
                for ref in rec.supersedes:
                    x = self._resolve([ref], m, names)
                    if (
                        x is not None
                        and x not in successor
                        and recs[x].status not in ("deprecated", "rejected")
                    ):
                        successor[x] = m
                        unresolved.pop(x, None)
        targets = set(successor.values())
        desired: dict[int, Record] = {}
        for n, rec in recs.items():
            if n in successor or n in unresolved or rec.status in ("deprecated", "rejected"):
                continue
            if rec.status == "accepted" or (n in targets and rec.status in ("proposed", None)):
                if rec.title:
                    desired[n] = rec
                else:
                    self.skips.add(self.owners[n], "no title")

        events: list[tuple[int, int, ChangeEvent]] = []
        covered: set[int] = set()
        for key in sorted(self.held, key=lambda k: int(k.subject[4:])):
            n = int(key.subject[4:])
            if n in desired:
                continue
            old = self.held.pop(key)
            rec = recs.get(n)
            m = successor.get(n)
            if m is not None and m in desired:
                new = self._held(m, desired[m], commit)
                events.append((n, 0, self._event(commit, new, "revised", previous=old.fact)))
                if new.fact.key not in self.held:
                    covered.add(m)
                continue
            if rec is None:
                reason = f"ADR {n} deleted"
            elif n in unresolved or m is not None:
                reason = f"ADR {n} superseded ({unresolved.get(n) or f'by ADR {m}, not accepted'})"
            elif rec.status in ("deprecated", "rejected"):
                reason = f"ADR {n} {rec.status}"
            else:
                reason = f"ADR {n} is {rec.status or 'without a known status'} again"
            events.append(
                (
                    n,
                    1,
                    self._event(
                        commit, old, "invalidated", reason=reason, path=old.metadata.get("adr_file")
                    ),
                )
            )
        for n in sorted(desired):
            h = self._held(n, desired[n], commit)
            before = self.held.get(h.fact.key)
            self.held[h.fact.key] = h
            if before is None:
                if n not in covered:
                    events.append((n, 0, self._event(commit, h, "added")))
            elif before.fact != h.fact:
                events.append((n, 0, self._event(commit, h, "revised", previous=before.fact)))
            else:
                h.metadata = before.metadata
        if not emit:
            return []
        return [ev for _, _, ev in sorted(events, key=lambda t: (t[0], t[1]))]

    def _held(self, n: int, rec: Record, commit: Commit) -> Held:
        assert rec.title is not None
        return Held(
            Fact(subject(n), PREDICATE, rec.title, "decision"),
            (),
            {"adr_file": self.owners[n], "commit": commit.sha, "status": rec.status or "unknown"},
        )

    def _event(
        self,
        commit: Commit,
        held: Held,
        etype: str,
        *,
        previous: Fact | None = None,
        reason: str | None = None,
        path: str | None = None,
    ) -> ChangeEvent:
        meta = dict(held.metadata)
        meta["commit"] = commit.sha
        if etype == "invalidated":
            n = int(held.fact.subject[4:])
            rec = self.records.get(self.owners.get(n, ""))
            meta["status"] = (rec.status or "unknown") if rec else "deleted"
        where = path or meta.get("adr_file", "")
        return ChangeEvent(
            id=event_id("adr", self.source, commit.sha, where, held.fact.key, etype),
            type=etype,
            timestamp=commit.time,  # type: ignore[arg-type]
            source=self.source,
            fact=held.fact,
            previous=previous,
            reason=reason,
            depends_on=(),
            metadata=meta,
        )


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
        owners: dict[int, str] = {}
        if (
            state is not None
            and state.get("dir") == directory
            and isinstance(state.get("owners"), dict)
        ):
            for k, v in state["owners"].items():
                if str(k).isdigit() and isinstance(v, str):
                    owners[int(k)] = v
        return AdrExtractor(self.name, directory, repo, skips, owners)

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        assert isinstance(extractor, AdrExtractor)
        if state.get("dir") != extractor.dir:
            return f"ADR directory is now {extractor.dir!r} (was {state.get('dir')!r})"
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
