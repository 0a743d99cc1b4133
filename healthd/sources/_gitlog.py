"""Shared plumbing of the repository sources (`git`, `adr`, `backstage`): options, opening
the repository (a local checkout, or a mirror fetched from a url), history streaming with
blobs read ahead, stable ids, cursors and revalidation.

The repository itself, driven through the git CLI, is :mod:`healthd.sources._gitrepo`'s: one
``git log`` process streams the whole history; one ``git cat-file --batch`` process serves
every blob. Nothing here spawns a process per commit.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from healthd import _stop
from healthd._collector import replay_collection
from healthd.errors import SourceError
from healthd.logging import env_secret, get_logger, register_secret
from healthd.model import ChangeEvent, Fact, FactKey
from healthd.people import Person
from healthd.sources._gitrepo import Change, Commit, GitError, Repo

if TYPE_CHECKING:
    from healthd.sources import PullResult

log = get_logger("healthd.sources.git")


# --------------------------------------------------------------------------- options


class RepoConfig(Protocol):
    """What the pull loop reads of a repository source's options: the `git` source's plain
    :class:`healthd.sources.git.GitConfig`, or a pydantic model of
    :mod:`healthd.sources._repo_options` (`adr`, `backstage`)."""

    path: str | None
    url: str | None
    cache_dir: str | None
    branch: str | None
    first_parent: bool
    since: datetime | date | None
    token_env: str | None
    token_user: str
    revalidate_interval: timedelta
    revalidate_clock: Literal["wall", "head"]
    timeout_seconds: float
    stall_seconds: float

    def since_datetime(self) -> datetime | None: ...


def check_where(opts: RepoConfig) -> None:
    """The checks across fields (ValueError): where the repository is, and its token."""
    if (opts.path is None) == (opts.url is None):
        raise ValueError("set exactly one of 'path' (a local checkout) or 'url'")
    if opts.url is not None and not opts.cache_dir:
        raise ValueError("'cache_dir' is required with 'url' (healthd keeps a bare mirror there)")
    if opts.token_env is not None and opts.url is None:
        raise ValueError("'token_env' only applies with 'url'")
    if opts.revalidate_interval < timedelta(0):
        raise ValueError("'revalidate_interval' must not be negative")


def since_boundary(repo: Repo, rev: str, opts: RepoConfig) -> str | None:
    """The last commit before ``since`` on ``rev``'s history, where a pull with ``since``
    starts from the tree as it was (None: no ``since``, or no commit before it)."""
    since = opts.since_datetime()
    return None if since is None else repo.last_before(rev, since, opts.first_parent)


def since_datetime(since: datetime | date | None) -> datetime | None:
    """``since`` as an aware datetime: a date is its midnight UTC, a naive time is UTC."""
    if since is None:
        return None
    if isinstance(since, datetime):
        return since if since.tzinfo else since.replace(tzinfo=UTC)
    return datetime.combine(since, time(0), tzinfo=UTC)


# --------------------------------------------------------------------------- repository


def open_repo(opts: RepoConfig, name: str) -> tuple[Repo, str | None]:
    """The repository to read, fetching the mirror first in url mode.

    Returns the repo and, in url mode, a note when the fetch failed but an older mirror is
    still usable (None otherwise). Raises GitError when nothing usable exists.
    """
    if opts.path is not None:
        path = os.path.expanduser(opts.path)
        if not os.path.isdir(path):
            raise GitError(f"path {opts.path!r} is not a directory")
        repo = Repo(path)
        if repo.run("rev-parse", "--git-dir", check=False).returncode != 0:
            raise GitError(f"path {opts.path!r} is not a git repository")
        return repo, None
    assert opts.url is not None and opts.cache_dir is not None
    secret = None
    config = [  # a hung http(s) remote: curl gives up after stall_seconds without a byte
        ("http.lowSpeedLimit", "1"),
        ("http.lowSpeedTime", str(max(1, round(opts.stall_seconds)))),
    ]
    if opts.token_env:
        secret = env_secret(opts.token_env)
        if not secret:
            raise GitError(f"environment variable {opts.token_env!r} (token_env) is not set")
        basic = base64.b64encode(f"{opts.token_user}:{secret}".encode()).decode()
        register_secret(basic)
        config.append(("http.extraHeader", f"Authorization: Basic {basic}"))
    extra = {"GIT_CONFIG_COUNT": str(len(config))}
    for i, (key, value) in enumerate(config):
        extra[f"GIT_CONFIG_KEY_{i}"] = key
        extra[f"GIT_CONFIG_VALUE_{i}"] = value
    digest = hashlib.sha256(opts.url.encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", opts.url.rstrip("/").rsplit("/", 1)[-1])[:40]
    mirror = Path(os.path.expanduser(opts.cache_dir)) / f"{slug}-{digest}.git"
    repo = Repo(str(mirror), secret=secret, extra_env=extra)
    if not (mirror / "HEAD").exists():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        try:
            proc = _stop.run(
                ["git", "clone", "--mirror", "--quiet", opts.url, str(mirror)],
                env=repo.env,
                timeout=opts.timeout_seconds,
                what=f"git clone {opts.url}",
            )
        except _stop.Interrupted as exc:
            shutil.rmtree(mirror, ignore_errors=True)
            raise GitError(repo.scrub(str(exc))) from None
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(
                repo.scrub(f"cannot mirror {opts.url}: {err[-1] if err else proc.returncode}")
            )
        log.info("git_mirror_created", source=name, mirror=str(mirror))
        return repo, None
    try:
        proc = _stop.run(
            [*repo._base(), "fetch", "--prune", "--quiet", "origin"],
            env=repo.env,
            timeout=opts.timeout_seconds,
            what=f"git fetch {opts.url}",
        )
    except _stop.Interrupted as exc:
        proc = subprocess.CompletedProcess([], 1, b"", str(exc).encode())
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        note = repo.scrub(
            f"fetch from {opts.url} failed ({err[-1] if err else proc.returncode});"
            " reading the mirror as last fetched"
        )
        log.warning("git_fetch_failed", source=name, detail=note)
        return repo, note
    return repo, None


# --------------------------------------------------------------------------- events


def event_id(kind: str, source: str, sha: str, path: str, key: FactKey, etype: str) -> str:
    text = "\x1f".join((source, sha, path, key.subject, key.predicate, etype))
    # (surrogatepass: a path git gave in bytes that are not UTF-8 still has an id)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{kind}:{sha[:12]}:{digest}"


def fact_hash(fact: Fact) -> str:
    text = "\x1f".join((fact.subject, fact.predicate, fact.value, fact.domain))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class Held:
    """A fact currently true at the processed head, with what its events carry."""

    fact: Fact
    depends_on: tuple[FactKey, ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)


class Skips:
    """Inputs that could not be understood, each listed once per pull. The pull's caller
    reports them (the daemon logs and counts each when first seen, a one-shot command
    prints each), so they are not logged here."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._lines: dict[str, None] = {}
        self.muted = False  # rebuilding state an earlier pull read (and reported) already

    def add(self, what: str, reason: str) -> None:
        if not self.muted:
            self._lines.setdefault(f"{what}: {reason}", None)

    def note(self, message: str) -> None:
        self._lines.setdefault(message, None)

    def lines(self) -> list[str]:
        return list(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


def revalidations(
    kind: str,
    source: str,
    held: Mapping[FactKey, Held],
    seen: dict[str, float],
    now: datetime,
    interval: timedelta,
    head: str,
) -> list[ChangeEvent]:
    """`revalidated` events for held facts last observed at least ``interval`` before
    ``now``; ``seen`` (fact hash → last observation, epoch seconds) is updated in place.

    ``now`` is a revalidation bucket's time (see :func:`revalidation_time`), so the events'
    times and ids do not depend on when within the bucket the pull ran."""
    out: list[ChangeEvent] = []
    cutoff = (now - interval).timestamp()
    for key in sorted(held):
        h = held[key]
        fh = fact_hash(h.fact)
        last = seen.get(fh)
        if last is not None and last > cutoff:
            continue
        if last is not None and last >= now.timestamp():
            continue
        seen[fh] = now.timestamp()
        eid = event_id(kind, source, head, f"revalidate@{now.isoformat()}", key, "revalidated")
        # metadata "revalidation" marks a sweep, so a report can tell it from real changes
        out.append(
            ChangeEvent(
                id=eid,
                type="revalidated",
                timestamp=now,
                source=source,
                fact=h.fact,
                depends_on=h.depends_on,
                metadata={**h.metadata, "commit": head, "revalidation": "sweep"},
            )
        )
    return out


def revalidation_time(now: datetime, interval: timedelta, head_time: datetime) -> datetime:
    """When a sweep run at ``now`` is stamped: the start of ``now``'s bucket (``interval``
    long, at most a day; counted from the Unix epoch, UTC), never before the head commit.
    Two runs within one bucket give the same times and ids; a zero interval means every
    run, stamped to the second."""
    step = int(min(interval, timedelta(days=1)).total_seconds())
    seconds = int(now.timestamp())
    if step > 0:
        seconds -= seconds % step
    return max(datetime.fromtimestamp(seconds, tz=UTC), head_time)


#: A fact as :func:`fact_hash` reads it: what the pull notes each event's fact by, hashed
#: only for the facts still held at its end (the rest are pruned from the cursor unread).
FactText = tuple[str, str, str, str]


def fact_text(fact: Fact) -> FactText:
    return (fact.subject, fact.predicate, fact.value, fact.domain)


def settle_seen(
    seen: dict[str, float], observed: dict[FactText, float | None], held: Mapping[FactKey, Held]
) -> None:
    """Bring ``seen`` (fact hash → last observation) up to the observations made since
    (None: the fact was invalidated), for the facts ``held``: all the cursor keeps."""
    for h in held.values():
        text = fact_text(h.fact)
        if text not in observed:
            continue
        stamp = observed[text]
        if stamp is None:
            seen.pop(fact_hash(h.fact), None)
        else:
            seen[fact_hash(h.fact)] = stamp
    observed.clear()


def prune_seen(seen: dict[str, float], held: Mapping[FactKey, Held]) -> dict[str, float]:
    live = {fact_hash(h.fact) for h in held.values()}
    return {k: v for k, v in seen.items() if k in live}


def load_cursor(cursor: str | None) -> dict[str, Any] | None:
    if not cursor:
        return None
    try:
        state = json.loads(cursor)
    except json.JSONDecodeError:
        return None
    if (
        not isinstance(state, dict)
        or state.get("v") != 1
        or not isinstance(state.get("commit"), str)
    ):
        return None
    return state


def dump_cursor(state: Mapping[str, Any]) -> str:
    return json.dumps({"v": 1, **state}, sort_keys=True, separators=(",", ":"))


def glob_match(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


Clock = Callable[[], datetime]


def wall_clock() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------- driver


class Extractor:
    """Turns commits into events; the repository sources subclass it.

    ``apply`` folds one commit's changes into the state; with ``emit`` False it only
    rebuilds state (a baseline at the cursor) and returns nothing.
    """

    held: dict[FactKey, Held]
    #: Which edited files (a change neither adding nor deleting one) ``apply`` reads, by
    #: their path as git writes it; None for all of them.
    modified: Callable[[bytes], bool] | None = None

    def apply(self, commit: Commit, changes: list[Change], emit: bool) -> list[ChangeEvent]:
        raise NotImplementedError

    def cursor_extra(self) -> dict[str, Any]:
        return {}

    def baseline_problem(self) -> str | None:
        """Why the state rebuilt at a cursor (``apply`` with ``emit`` False) is not what
        the history up to it held, or None: then the pull starts over from the root."""
        return None

    def wanted(self, changes: list[Change]) -> Iterator[str]:
        """The blobs ``apply`` will read for these changes (prefetched in one exchange)."""
        return iter(())

    def people(self) -> list[Person] | None:
        """The identity records the state holds (:attr:`PullResult.people`); None: this
        extractor knows nothing of people."""
        return None


#: Commits read ahead of folding, so their blobs are fetched in one exchange.
_BATCH_COMMITS = 256


Batch = list[tuple[Commit, list[Change]]]


def _batches(history: Iterator[tuple[Commit, list[Change]]]) -> Generator[Batch, None, None]:
    batch: Batch = []
    for item in history:
        batch.append(item)
        if len(batch) >= _BATCH_COMMITS:
            yield batch
            batch = []
    if batch:
        yield batch


def read_ahead(
    repo: Repo, history: Iterator[tuple[Commit, list[Change]]], extractor: Extractor
) -> Iterator[tuple[Batch, dict[str, bytes | None]]]:
    """Batches of commits with the blobs they need, read by a second thread while this one
    folds the previous batch, so git's work (the log, the blobs) overlaps Python's. A
    failure of the reader is raised here, after the batches read before it."""
    ready: queue.Queue[tuple[Batch, dict[str, bytes | None]] | BaseException | None] = queue.Queue(
        maxsize=2
    )
    stop = threading.Event()

    def put(item: tuple[Batch, dict[str, bytes | None]] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def reader() -> None:
        batches = _batches(history)
        try:
            for batch in batches:
                blobs = repo.fetch_blobs(
                    sha for _, changes in batch for sha in extractor.wanted(changes)
                )
                if not put((batch, blobs)):
                    return
            put(None)
        except BaseException as exc:  # handed to the consuming thread
            put(exc)
        finally:
            batches.close()
            close = getattr(history, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=reader, name="healthd-git-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=60)


class RepoSource:
    """The pull loop shared by `git` and `adr`: cursor handling, force-push detection,
    streaming, revalidation. Subclasses provide ``_extractor`` and ``_log_paths``."""

    kind = "repo"
    #: Whether the history read pairs renamed files (``R`` changes) for the extractor.
    follows_renames = False

    def __init__(self, name: str, opts: RepoConfig, *, clock: Clock | None = None) -> None:
        self.name = name
        self.opts = opts
        if clock is None and opts.revalidate_clock == "wall":
            clock = wall_clock
        self._clock = clock

    # -- hooks
    def _extractor(
        self, repo: Repo, head: str, skips: Skips, state: Mapping[str, Any] | None
    ) -> Extractor:
        raise NotImplementedError

    def _log_paths(self, extractor: Extractor) -> list[str]:
        return []

    def _compatible(self, state: Mapping[str, Any], extractor: Extractor) -> str | None:
        """Why a cursor cannot be continued with this extractor (None when it can)."""
        return None

    def _finish(self, extractor: Extractor) -> str | None:
        """Why a pull that read the history without failing is still a failure (None when
        it is not)."""
        return None

    # -- the pull
    def pull(self, cursor: str | None, *, now: datetime | None = None) -> PullResult:
        from healthd.sources import PullResult

        skips = Skips(self.name)
        try:
            repo, note = open_repo(self.opts, self.name)
        except GitError as exc:  # the caller reports it (the daemon's `source failed`)
            return PullResult([], cursor, error=str(exc))
        if note:
            skips.note(note)
        try:
            # what a pull builds (events, the facts held, the history's state) lives as
            # long as the pull, and holds no cycles: collected as a replay's is
            with replay_collection():
                result = self._pull(repo, cursor, now, skips)
        except GitError as exc:
            return PullResult([], cursor, error=str(exc), skipped=skips.lines())
        finally:
            repo.close()
        return result  # the caller logs it (one-shot commands need not load the logger)

    def _pull(
        self, repo: Repo, cursor: str | None, now: datetime | None, skips: Skips
    ) -> PullResult:
        from healthd.sources import PullResult, unique_events

        rev = self.opts.branch or "HEAD"
        head = repo.rev_parse(rev)
        if head is None:
            if (
                self.opts.branch is not None
                or repo.run("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0
            ):
                raise GitError(f"branch {rev!r} not found")
            skips.note("repository has no commits yet")
            return PullResult([], cursor, skipped=skips.lines())
        if repo.is_shallow():
            skips.note("shallow clone: history before its boundary is not read")
        absent = repo.note_partial_clone(head)
        if absent:
            skips.note(
                f"partial clone: {absent} objects are not present locally; "
                "what needs them is skipped"
            )

        state = load_cursor(cursor)
        if cursor and state is None:
            skips.note("cursor not understood; full re-extraction")
        base: str | None = None
        if state is not None:
            old = state["commit"]
            if repo.rev_parse(old) is None:
                skips.note(
                    f"cursor commit {old[:12]} is missing (force-push or pruned "
                    "history); full re-extraction"
                )
                log.warning("git_force_push", source=self.name, cursor=old[:12])
                state = None
            elif old != head and not repo.is_ancestor(old, head):
                skips.note(
                    f"cursor commit {old[:12]} is not an ancestor of {rev} "
                    f"({head[:12]}): force-push; full re-extraction"
                )
                log.warning("git_force_push", source=self.name, cursor=old[:12], head=head[:12])
                state = None
            else:
                base = old
        extractor = self._extractor(repo, head, skips, state)
        if state is not None:
            why = self._compatible(state, extractor)
            if why:
                skips.note(f"{why}; full re-extraction")
                state, base = None, None
                extractor = self._extractor(repo, head, skips, None)
        seen: dict[str, float] = {}
        if state is not None and isinstance(state.get("seen"), dict):
            seen = {
                str(k): float(v) for k, v in state["seen"].items() if isinstance(v, (int, float))
            }
        observed: dict[FactText, float | None] = {}
        paths = self._log_paths(extractor)
        events: list[ChangeEvent] = []
        if base is not None:
            baseline = repo.tree(base, paths)
            repo.prefetch(extractor.wanted(baseline))
            skips.muted = True  # the pulls that read these files reported what was wrong
            try:
                extractor.apply(Commit(base, repo.commit_time(base)), baseline, emit=False)
            finally:
                skips.muted = False
            why = extractor.baseline_problem()
            if why:
                skips.note(f"{why}; full re-extraction")
                state, base, seen = None, None, {}
                extractor = self._extractor(repo, head, skips, None)
                paths = self._log_paths(extractor)
        if base is not None:
            rev_range = f"{base}..{head}"
        else:
            rev_range = head
            boundary = since_boundary(repo, head, self.opts)
            if boundary is not None:
                # what already held before `since`, as of its last commit
                commit = Commit(boundary, repo.commit_time(boundary))
                baseline = repo.tree(boundary, paths)
                repo.prefetch(extractor.wanted(baseline))
                events += self._observe(extractor.apply(commit, baseline, emit=True), observed)
                rev_range = f"{boundary}..{head}"
        last = base
        last_time: datetime | None = None  # (the head's, when the log ends with it)
        folding: str | None = None  # the commit being folded
        if base != head:
            try:
                history = repo.log(
                    rev_range,
                    first_parent=self.opts.first_parent,
                    paths=paths,
                    renames=self.follows_renames,
                    modified=extractor.modified,
                )
                for batch, blobs in read_ahead(repo, history, extractor):
                    repo.use_prefetched(blobs)
                    for commit, changes in batch:
                        folding = commit.sha
                        events += self._observe(
                            extractor.apply(commit, changes, emit=True), observed
                        )
                        last, last_time, folding = commit.sha, commit.time, None
                repo.use_prefetched({})
            except GitError as exc:
                # (failing in a commit's fold, the extractor holds part of that commit: the
                # pull fails whole, from the cursor it was given)
                if last is None or folding is not None:
                    raise
                for note in repo.notes:
                    skips.note(note)
                settle_seen(seen, observed, extractor.held)
                return PullResult(
                    events,
                    self._cursor(last, seen, extractor),
                    error=str(exc),
                    skipped=skips.lines(),
                )
        if last == head and last_time is not None:
            head_time = last_time
        else:
            head_time = repo.commit_time(head)
        if now is None:
            now = self._clock() if self._clock is not None else head_time
        now = revalidation_time(now, self.opts.revalidate_interval, head_time)
        settle_seen(seen, observed, extractor.held)
        events += revalidations(
            self.kind, self.name, extractor.held, seen, now, self.opts.revalidate_interval, head
        )
        for note in repo.notes:
            skips.note(note)
        problem = self._finish(extractor)
        if problem is not None:
            return PullResult([], cursor, error=problem, skipped=skips.lines())
        try:
            events, repeats = unique_events(events, f"{self.kind} source {self.name!r}")
        except SourceError as exc:
            return PullResult([], cursor, error=str(exc), skipped=skips.lines())
        if repeats:
            skips.note(f"{repeats} identical repeated events dropped")
        return PullResult(
            events,
            self._cursor(head, seen, extractor),
            skipped=skips.lines(),
            people=extractor.people(),
        )

    @staticmethod
    def _observe(
        events: list[ChangeEvent], observed: dict[FactText, float | None]
    ) -> list[ChangeEvent]:
        when, stamp = None, 0.0  # a commit's events share its time: converted once
        for ev in events:
            fact = ev.fact
            text = (fact.subject, fact.predicate, fact.value, fact.domain)  # fact_text, inlined
            if ev.type == "invalidated":
                observed[text] = None
                continue
            if ev.timestamp is not when:
                when = ev.timestamp
                stamp = when.timestamp()
            observed[text] = stamp
        return events

    def _cursor(self, commit: str, seen: dict[str, float], extractor: Extractor) -> str:
        return dump_cursor(
            {"commit": commit, "seen": prune_seen(seen, extractor.held), **extractor.cursor_extra()}
        )
