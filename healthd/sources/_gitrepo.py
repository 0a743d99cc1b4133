"""A git repository (a checkout or a bare mirror) driven through the git CLI, for the
repository sources: :class:`Repo`, its commits and their raw changes.

One ``git log`` process streams the whole history (``-z --raw``); one ``git cat-file
--batch`` process serves every blob. Nothing here spawns a process per commit. Opening a
source's repository (a local path, or a mirror fetched from a url) is
:func:`healthd.sources._gitlog.open_repo`.
"""

from __future__ import annotations

import codecs
import math
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, NamedTuple

from healthd import _stop
from healthd.errors import SourceError
from healthd.logging import redact_text, register_secret

try:
    import fcntl
except ImportError:  # Windows: no fcntl, pipes keep their size
    fcntl = None  # type: ignore[assignment]

NULL_SHA = "0" * 40
#: What a commit time git gives (seconds from 1970, any unsigned 64-bit number) is read as
#: when no date can hold it, and when git reads none.
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The largest file a repository source reads (a manifest, CODEOWNERS, a decision record, a
#: catalog file): a bigger one, generated or committed by mistake, is reported and passed
#: over, never held in memory whole.
MAX_BLOB_BYTES = 8 << 20
#: What one exchange of many blobs holds at most: the blobs past it are read again, one at a
#: time, when the fold asks for them (the history is read a few exchanges ahead).
MAX_EXCHANGE_BYTES = 32 << 20
#: git's cache of delta bases for ``cat-file`` (its default, 96 MiB, is sized for whole-pack
#: work): the blobs read are manifests and CODEOWNERS files, versions of a few small files,
#: whose bases fit many times over; the default's pages cost more system time than the
#: re-inflation a smaller cache would save (opentelemetry-go: 68 → 54 MiB, 2% less CPU)
CAT_FILE_DELTA_CACHE = "8m"


#: Byte-order marks and the encodings they announce, as pip reads a requirements file:
#: Windows editors write UTF-8's, and PowerShell's `pip freeze > requirements.txt` UTF-16
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # (before UTF-16's, which begins it)
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_BOM_STARTS = tuple(bom for bom, _ in _BOMS)


def _announced(data: bytes) -> tuple[str, int]:
    """The encoding ``data``'s byte-order mark announces, and the mark's length; UTF-8 and 0
    without one."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    return "utf-8", 0


def blob_text(data: bytes) -> str:
    """A file's bytes as text: UTF-8, or the encoding a byte-order mark announces, the mark
    dropped (npm, pip and Markdown renderers drop it too; kept, it would be part of the
    first name or heading); a byte the encoding cannot read is replaced."""
    if data.startswith(_BOM_STARTS):
        encoding, skip = _announced(data)
        return data[skip:].decode(encoding, errors="replace")
    return data.decode("utf-8", errors="replace")


def checked_text(data: bytes) -> tuple[str, str | None]:
    """:func:`blob_text`'s text, and what it replaced: None, or the first bytes its encoding
    cannot read and where (a record saved as Latin-1 reads ``D\ufffdcision``, said once)."""
    encoding, skip = _announced(data) if data.startswith(_BOM_STARTS) else ("utf-8", 0)
    try:
        return data[skip:].decode(encoding), None
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.end]
        return data[skip:].decode(encoding, errors="replace"), (
            f"not {encoding.upper()} text: byte {bad.hex(' ')} at offset {skip + exc.start} "
            "(and any other it cannot read) read as U+FFFD"
        )


class _Stopped(Exception):
    """``cat-file`` ended in the middle of a blob, after sending ``got`` of its bytes."""

    def __init__(self, got: int) -> None:
        super().__init__(got)
        self.got = got


_SUBMODULE_MODE = "160000"
_ADDED_DELETED = frozenset(b"AD")  # a raw change's last byte, its status
_MATTERS_MAX = 1 << 16


class GitError(SourceError):
    """A git command failed."""


@dataclass(frozen=True)
class Commit:
    sha: str
    time: datetime


class Change(NamedTuple):
    """One raw diff entry: ``status`` is A, M, D, T or R; shas are the blob before/after.
    (A tuple: a long history makes hundreds of thousands of them.)"""

    status: str
    path: str
    old_sha: str
    new_sha: str
    old_mode: str
    new_mode: str
    old_path: str | None = None  # a rename's (status R) path before it

    @property
    def is_submodule(self) -> bool:
        return _SUBMODULE_MODE in (self.new_mode, self.old_mode)


#: ``Change(...)`` without the Python frame of a named tuple's ``__new__`` (a change is built
#: for each file a commit adds, deletes or edits that matters)
_new_change = tuple.__new__


class Repo:
    """A local repository (a checkout or a bare mirror) driven through the git CLI.

    The token, when any, travels in the environment (``GIT_CONFIG_*``), never on a command
    line, and is scrubbed from any error text.
    """

    def __init__(
        self, git_dir: str, *, secret: str | None = None, extra_env: Mapping[str, str] | None = None
    ) -> None:
        self.git_dir = git_dir
        register_secret(secret)
        env = dict(os.environ)
        env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_PAGER": "cat"})
        env.update(extra_env or {})
        self.env = env
        self._cat: subprocess.Popen[bytes] | None = None
        self._absent: set[str] = set()
        self._oversized: dict[str, int] = {}  # blob → its size, over MAX_BLOB_BYTES
        self._cut: dict[str, str] = {}  # blob → how cat-file died sending it, twice
        self._prefetched: dict[str, bytes | None] = {}
        #: What the reading found wrong that is no git failure (a pull reports each once).
        self.notes: list[str] = []
        self._read_as: dict[str, datetime] = {}  # commits whose time git gave is no date
        self._lock = threading.Lock()  # one cat-file exchange at a time (see read_ahead)
        #: ends the log and cat-file when the daemon's run takes its time (a pipe read can't)
        self._watch = _stop.Watch()

    # -- helpers
    def scrub(self, text: str) -> str:
        return redact_text(text)

    def _base(self) -> list[str]:
        return [
            "git",
            "-C",
            self.git_dir,
            "-c",
            "core.quotePath=false",
            "-c",
            "log.showSignature=false",
        ]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        try:
            proc = _stop.run(
                self._base() + list(args), env=self.env, timeout=math.inf, what=f"git {args[0]}"
            )
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror}") from exc
        except _stop.Interrupted as exc:
            raise GitError(str(exc)) from None
        if proc.returncode < 0:  # killed: what it printed is no answer, whatever `check` says
            raise GitError(f"git {args[0]} was killed (signal {-proc.returncode})")
        if check and proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(
                self.scrub(f"git {args[0]} failed: {err[-1] if err else proc.returncode}")
            )
        return proc

    def rev_parse(self, rev: str) -> str | None:
        proc = self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def commit_time(self, sha: str) -> datetime:
        out = self.run("show", "-s", "--format=%ct", sha).stdout.decode().strip()
        return self._time_of(sha, out)

    def _time_before(self, sha: str) -> datetime:
        """The time of the nearest first-parent ancestor of ``sha`` git reads one in (1970
        when there is none within 64 commits)."""
        rev = sha
        for _ in range(64):
            parent = self.run("rev-parse", "--verify", "--quiet", f"{rev}^", check=False)
            rev = parent.stdout.decode().strip()
            if not rev:
                break
            if rev in self._read_as:
                return self._read_as[rev]
            ct = self.run("show", "-s", "--format=%ct", rev).stdout.decode().strip()
            if ct.isdigit():
                return self._time_of(rev, ct)
        return _EPOCH

    def _time_of(self, sha: str, ct: str, before: datetime | None = None) -> datetime:
        """A commit's time from git's ``%ct``. One no date can hold (past the year 9999: a
        broken clock's, or forged) is read as the last second of 9999, its events then
        refused as any from the future are; one git reads none in (a forged commit with no
        date, ``%ct`` empty) at the time of the commit before it (``before``, the one read just
        before in the history, else its parent's), so history does not run backwards. Each
        is said once."""
        try:
            return datetime.fromtimestamp(int(ct), tz=UTC)
        except (ValueError, OverflowError, OSError):
            if sha in self._read_as:  # the head, after the history read it
                return self._read_as[sha]
            if ct.isdigit():
                when, why = _LATEST, f"its time, {ct} s from 1970, is beyond what a date holds"
            else:
                when = before if before is not None else self._time_before(sha)
                why = f"git reads no time in it ({ct!r})"
            self.notes.append(f"commit {sha[:12]}: {why}; read as {when.isoformat()}")
            self._read_as[sha] = when
            return when

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def is_shallow(self) -> bool:
        proc = self.run("rev-parse", "--is-shallow-repository", check=False)
        return proc.stdout.decode().strip() == "true"

    def last_before(self, rev: str, when: datetime, first_parent: bool) -> str | None:
        args = ["rev-list", "-n", "1", f"--before={int(when.timestamp()) - 1}"]
        if first_parent:
            args.append("--first-parent")
        out = self.run(*args, rev, check=False).stdout.decode().strip()
        return out or None

    # -- history
    def log(
        self,
        rev_range: str,
        *,
        first_parent: bool,
        since: datetime | None = None,
        paths: Iterable[str] = (),
        renames: bool = False,
        modified: Callable[[bytes], bool] | None = None,
    ) -> Iterator[tuple[Commit, list[Change]]]:
        """Commits oldest to newest with their raw changes, from ONE streaming ``git log``;
        with ``renames``, git's rename detection pairs a deleted and an added file as one
        ``R`` change (worth it only on a few paths). With ``modified``, a change that
        neither adds nor deletes a file (M, T) is kept only when ``modified(path)`` (the
        path as git wrote it) says it matters: most changes are edits of files whose
        content the caller never reads. ``modified`` is asked once for each path (a file
        edited a thousand times is one question)."""
        args = self._base() + [
            "log",
            "--reverse",
            "--root",
            "--raw",
            "--find-renames" if renames else "--no-renames",
            "--no-abbrev",
            "-z",
            "--no-ext-diff",
            "--no-textconv",
            "--format=%x01%H %ct",
            "--diff-merges=first-parent",
        ]
        if first_parent:
            args.append("--first-parent")
        else:
            args.append("--topo-order")
        if since is not None:
            args.append(f"--since={int(since.timestamp())}")
        args.append(rev_range)
        args.append("--")
        args.extend(paths)
        self._check_watch("git log")
        # (stderr in a file: a pipe nobody reads until the end could fill, or be held open
        # by a child past git's own end)
        with tempfile.TemporaryFile() as errors:
            yield from self._stream_log(args, errors, renames, modified)

    def _stream_log(
        self,
        args: list[str],
        errors: IO[bytes],
        renames: bool,
        modified: Callable[[bytes], bool] | None,
    ) -> Iterator[tuple[Commit, list[Change]]]:
        try:
            proc = subprocess.Popen(
                args,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=errors,
                start_new_session=True,
            )
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror}") from exc
        self._watch.add(proc)
        assert proc.stdout is not None
        _widen_pipe(proc.stdout)
        commit: Commit | None = None
        changes: list[Change] = []
        pending_meta: bytes | None = None
        renamed_from: bytes | None = None
        matters: dict[bytes, bool] = {}  # modified's answer for each path edited before
        rest = b""
        try:
            while True:
                chunk = proc.stdout.read(1 << 16)
                if not chunk:
                    break
                tokens = (rest + chunk).split(b"\0")
                rest = tokens.pop()
                for token in tokens:
                    if pending_meta is not None:
                        if renames and pending_meta.rstrip(b"0123456789")[-1:] in (b"R", b"C"):
                            if renamed_from is None:
                                renamed_from = token  # the path before; the next is after
                                continue
                            changes.append(_change(pending_meta, token, renamed_from))
                            renamed_from = None
                        elif modified is None or pending_meta[-1] in _ADDED_DELETED:
                            changes.append(_change(pending_meta, token))
                        else:
                            keep = matters.get(token)
                            if keep is None:
                                if len(matters) >= _MATTERS_MAX:
                                    matters.clear()
                                keep = matters[token] = modified(token)
                            if keep:
                                changes.append(_change(pending_meta, token))
                        pending_meta = None
                        continue
                    token = token.lstrip(b"\n")
                    head = token[:1]  # (compared, not startswith: a call per token costs more)
                    if head == b"\x01":
                        if commit is not None:
                            yield commit, changes
                        sha, _, ct = token[1:].decode().partition(" ")
                        before = commit.time if commit is not None else None
                        commit = Commit(sha, self._time_of(sha, ct, before))
                        changes = []
                    elif head == b":":
                        pending_meta = token
        finally:  # (also when the caller stops reading: the log is killed)
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()
            proc.wait()
            self._watch.discard(proc)
            errors.seek(max(0, errors.seek(0, os.SEEK_END) - (1 << 16)))  # its end says why
            stderr = errors.read().decode("utf-8", "replace").strip()
        # The last commit's changes are whole only if git ended well: one killed (the run's
        # time, the OOM killer) or failing stopped somewhere in them, or before later commits
        if proc.returncode != 0:
            self._check_watch("git log")
            raise GitError(self.scrub(f"git log failed: {stderr or proc.returncode}"))
        if commit is not None:
            yield commit, changes

    def tree(self, rev: str, paths: Iterable[str] = ()) -> list[Change]:
        """Every blob of ``rev``'s tree as an 'A' change, to rebuild a baseline state."""
        proc = self.run("ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths)
        out: list[Change] = []
        for entry in proc.stdout.split(b"\0"):
            if not entry:
                continue
            meta, _, path = entry.partition(b"\t")
            mode, kind, sha = meta.decode().split(" ")
            if kind != "blob":
                continue
            out.append(
                Change("A", path.decode("utf-8", "surrogateescape"), NULL_SHA, sha, "000000", mode)
            )
        return out

    def note_partial_clone(self, rev: str) -> int | None:
        """In a partial clone, list (without fetching) the objects absent locally, so blob
        reads skip them instead of a lazy fetch per blob; their count, or None when this is
        not a partial clone."""
        proc = self.run(
            "config",
            "--get-regexp",
            r"^(extensions\.partialclone|remote\..*\.promisor)$",
            check=False,
        )
        if not any(
            line.split(b" ", 1)[-1].strip() not in (b"", b"false")
            for line in proc.stdout.splitlines()
        ):
            return None
        out = self.run(
            "rev-list", "--objects", "--missing=print", "--no-object-names", rev, check=False
        ).stdout
        self._absent = {line[1:].decode() for line in out.splitlines() if line.startswith(b"?")}
        return len(self._absent)

    # -- blobs
    def prefetch(self, shas: Iterable[str]) -> None:
        """Fetch blobs ahead (see :meth:`fetch_blobs`); :meth:`blob` then serves them without
        a round trip each. Replaces what an earlier call prefetched."""
        self._prefetched = self.fetch_blobs(shas)

    def use_prefetched(self, blobs: dict[str, bytes | None]) -> None:
        self._prefetched = blobs

    def fetch_blobs(self, shas: Iterable[str]) -> dict[str, bytes | None]:
        """Many blobs in one pipelined exchange with ``git cat-file --batch`` (a thread
        writes the requests while this one reads the answers, so neither pipe can fill up
        and stall the other); None for a missing one. Safe to call from another thread."""
        # (a name holding a newline would be two requests, each answer then another's)
        wanted = list(dict.fromkeys(s for s in shas if s not in self._absent and "\n" not in s))
        if not wanted:
            return {}
        with self._lock:
            return self._exchange(wanted)

    def _exchange(self, wanted: list[str]) -> dict[str, bytes | None]:
        found: dict[str, bytes | None] = {}
        cat = self._cat_file()
        assert cat.stdin is not None and cat.stdout is not None
        stdin, stdout = cat.stdin, cat.stdout
        failed: list[BaseException] = []

        def write() -> None:
            try:
                stdin.write(b"".join(sha.encode() + b"\n" for sha in wanted))
                stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                failed.append(exc)

        writer = threading.Thread(target=write, name="healthd-cat-file-writer", daemon=True)
        writer.start()
        answered = held = 0
        try:
            for sha in wanted:
                header = stdout.readline()
                if not header.endswith(b"\n"):  # cat-file stopped, before or in a header
                    break
                parts = header.split()
                answered += 1
                if len(parts) < 3 or parts[1] == b"missing":
                    found[sha] = None
                    continue
                size = int(parts[2])
                if held + size > MAX_EXCHANGE_BYTES and size <= MAX_BLOB_BYTES:
                    self._skip(stdout, size)  # left out: blob() reads it when it is wanted
                    continue
                content = self._content(stdout, sha, size)
                found[sha] = content
                held += len(content) if content is not None else 0
        except _Stopped:
            answered = -1
        finally:
            writer.join(timeout=60)
        if answered < len(wanted) or failed:
            self._cat_died()  # what was not answered is read one at a time again
        return found

    def blob(self, sha: str) -> bytes | None:
        """A blob's content via one long-lived ``git cat-file --batch``; None when missing."""
        if sha in self._prefetched:
            return self._prefetched[sha]
        if sha in self._absent or sha in self._oversized or "\n" in sha:
            return None
        with self._lock:
            return self._one_blob(sha)

    def _one_blob(self, sha: str) -> bytes | None:
        """``sha``'s content, or None: missing, over the size bound, or cut short twice. A
        ``cat-file`` that dies (idle, before or in the header, in the content) is started
        again once; one that ends of itself with no answer (a lazy fetch from a promisor
        remote that failed) leaves the blob missing."""
        for last_try in (False, True):
            cat = self._cat_file()
            assert cat.stdin is not None and cat.stdout is not None
            try:
                cat.stdin.write(sha.encode() + b"\n")
                cat.stdin.flush()
                header = cat.stdout.readline()
            except (BrokenPipeError, OSError) as exc:  # it had died, idle
                self._cat_died()
                if last_try:
                    raise GitError("git cat-file stopped unexpectedly") from exc
                continue
            if not header.endswith(b"\n"):
                status = self._cat_died()
                if status is None or status >= 0:  # it ended of itself: no such blob here
                    self._absent.add(sha)
                    return None
                if last_try:
                    self._cut[sha] = f"git cat-file was killed before sending blob {sha[:12]}"
                    return None
                continue
            parts = header.split()
            if len(parts) < 3 or parts[1] == b"missing":
                return None
            size = int(parts[2])
            try:
                content = self._content(cat.stdout, sha, size)
            except _Stopped as stopped:
                self._cat_died()  # the next read starts a new cat-file
                if last_try:
                    self._cut[sha] = (
                        f"git cat-file stopped after sending {stopped.got} of blob "
                        f"{sha[:12]}'s {size} bytes"
                    )
                    return None
                continue
            self._cut.pop(sha, None)
            return content
        raise AssertionError("unreachable")  # (each path of the last try returns or raises)

    def _content(self, stdout: IO[bytes], sha: str, size: int) -> bytes | None:
        """The blob ``cat-file`` is sending (``size`` bytes and a newline); None, read past
        in pieces, when it is over :data:`MAX_BLOB_BYTES`. _Stopped when it ends short."""
        if size <= MAX_BLOB_BYTES:
            data = stdout.read(size + 1)
            if len(data) <= size:
                raise _Stopped(len(data))
            return data[:-1]
        self._skip(stdout, size)
        self._oversized[sha] = size
        return None

    @staticmethod
    def _skip(stdout: IO[bytes], size: int) -> None:
        left = size + 1
        while left > 0:
            piece = stdout.read(min(left, 1 << 20))
            if not piece:
                raise _Stopped(size + 1 - left)
            left -= len(piece)

    def unread(self, sha: str) -> str:
        """Why :meth:`blob` gave None for ``sha``, for a skipped-input line."""
        size = self._oversized.get(sha)
        if size is not None:
            return (
                f"blob {sha[:12]} is {size} bytes, over the {MAX_BLOB_BYTES >> 20} MiB a file "
                "is read up to"
            )
        cut = self._cut.get(sha)
        if cut is not None:
            return cut
        if "\n" in sha:
            return f"{sha!r} holds a newline, which git cat-file cannot be asked for"
        return f"blob {sha[:12]} missing (partial clone?)"

    def _cat_file(self) -> subprocess.Popen[bytes]:
        if self._cat is None:
            self._check_watch("git cat-file")
            try:
                self._cat = subprocess.Popen(
                    self._base()
                    + ["-c", f"core.deltaBaseCacheLimit={CAT_FILE_DELTA_CACHE}"]
                    + ["cat-file", "--batch"],
                    env=self.env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                raise GitError(f"cannot run git: {exc.strerror}") from exc
            self._watch.add(self._cat)
            _widen_pipe(self._cat.stdout)
        return self._cat

    def _cat_died(self) -> int | None:
        """End a cat-file that stopped answering: its exit status (:meth:`_close`), or
        GitError when the watch ended it (the run's time is up: no new one is started)."""
        status = self._close()
        self._check_watch("git cat-file")
        return status

    def _check_watch(self, what: str) -> None:
        """GitError when the watch has ended this repository's git processes."""
        if self._watch.why is not None:
            raise GitError(f"{what} {self._watch.why}")

    def close(self) -> None:
        with self._lock:
            self._close()
        self._watch.close()

    def _close(self) -> int | None:
        """End cat-file; its exit status (negative: by that signal), None when none ran."""
        if self._cat is not None:
            cat, self._cat = self._cat, None
            try:
                if cat.stdin:
                    cat.stdin.close()
            except OSError:
                pass
            try:
                cat.wait(timeout=5)
            except subprocess.TimeoutExpired:
                cat.kill()
                cat.wait()
            if cat.stdout:
                cat.stdout.close()
            self._watch.discard(cat)
            return cat.returncode
        return None


def _widen_pipe(pipe: object) -> None:
    """Let a pipe hold 1 MiB (Linux; elsewhere a no-op): git writes the log and the blobs
    in small pieces, and each wake-up of the reading side costs more than the copy."""
    fileno = getattr(pipe, "fileno", None)
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if fileno is None or set_size is None:
        return
    try:
        fcntl.fcntl(fileno(), set_size, 1 << 20)
    except OSError:
        pass  # above the system's limit for an unprivileged process: keep the default


def _change(meta: bytes, path: bytes, old_path: bytes | None = None) -> Change:
    # b":100644 100644 <old> <new> M", or "R096" with the path before the rename
    old_mode, new_mode, old_sha, new_sha, status = meta[1:].decode().split(" ")
    return _new_change(
        Change,
        (
            status[:1],
            path.decode("utf-8", "surrogateescape"),
            old_sha,
            new_sha,
            old_mode,
            new_mode,
            None if old_path is None else old_path.decode("utf-8", "surrogateescape"),
        ),
    )
