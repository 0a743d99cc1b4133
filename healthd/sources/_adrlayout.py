"""Where a repository keeps its decision records: the usual directories, adr-tools'
``.adr-dir``, or a directory of files named like records; every log a repository has, each
log's subject space, and a log directory's earlier names (see :mod:`healthd.sources.adr`)."""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections import Counter
from collections.abc import Iterator

from healthd.sources._gitrepo import Repo, blob_text

#: Where ADRs live when `.adr-dir` does not say, in order.
CANDIDATE_DIRS: tuple[str, ...] = (
    "doc/adr",
    "docs/adr",
    "docs/architecture/decisions",
    "docs/decisions",
    "doc/architecture/decisions",
    "docs/architecture/adr",
    "architecture-decision-record",
    "ADR",
    "adr",
    "decisions",
)
#: What discovery looks for when no directory is named: file names of records.
_RECORD_NAME = re.compile(
    r"^(?:adr[-_ ]?\d{1,6}|[a-z]{2,5}[-_]?\d{3,6}|\d{3,6})[-_ ][^/]*\.(?:md|markdown|mdx|rst|txt)$",
    re.I,
)
#: A template's file name: a placeholder where the number goes (``DRXXX-...``, ``ADR-NNNN``).
_TEMPLATE_NAME = re.compile(r"^[a-z]{0,5}[-_]?(?:x{3,}|n{3,}|y{3,}|z{3,})(?=[-_. ]|$)", re.I)
_NOT_SCANNED = re.compile(r"(?:^|/)(?:\.[^/]*|node_modules|vendor|third_party|site-packages)/")
#: Where discovery looks, said in the error when it finds nothing.
LOOKED = (
    ".adr-dir, "
    + ", ".join(CANDIDATE_DIRS)
    + ", and for files named adr-NNN-*.md or NNNN-*.md with a status section"
)


_EXTENSIONS = (".md", ".markdown", ".mdx", ".txt", ".rst")
_NOT_RECORDS = {"readme", "index", "template", "toc", "_sidebar", "summary"}


#: The directory of a log kept at the repository's root (arachne-framework/architecture's
#: ``adr-001-*.md``): its files at the root alone, a pathspec for all of it.
ROOT = "."


def _inside(path: str, directory: str) -> str | None:
    """``path`` relative to ``directory`` when it is inside it, else None; inside the root
    log are the files at the root (a log under a directory is a log of its own)."""
    if directory == ROOT:
        return None if "/" in path else path
    if path.startswith(directory + "/"):
        return path[len(directory) + 1 :]
    return None


def is_record_path(path: str, dirs: tuple[str, ...], by_name: bool = False) -> bool:
    """Whether ``path`` is a record in one of ``dirs`` (not a README, an index, a template
    or what a hidden, template or asset directory holds); with ``by_name`` only files
    named like records are."""
    for directory in dirs:
        rel = _inside(path, directory)
        if rel is not None:
            break
    else:
        return False
    parts = rel.split("/")
    if any(
        p.startswith((".", "_")) or p in ("templates", "template", "assets", "images")
        for p in parts[:-1]
    ):
        return False
    if by_name and not _RECORD_NAME.match(parts[-1]):
        return False
    stem, ext = posixpath.splitext(parts[-1])
    if _TEMPLATE_NAME.match(stem):
        return False
    stem = stem.lower()
    return ext.lower() in _EXTENSIONS and stem not in _NOT_RECORDS and not stem.endswith("template")


def is_template_path(path: str, dirs: tuple[str, ...]) -> bool:
    """Whether ``path`` is a record template in one of ``dirs``: named with a placeholder
    for the number (``ADRXXX-...``, ``adr-NNNN.md``), ending in ``template``, or inside a
    ``templates`` directory (adr-tools' ``templates/template.md``)."""
    rel = next((r for d in dirs if (r := _inside(path, d)) is not None), None)
    if rel is None:
        return False
    parts = rel.split("/")
    stem, ext = posixpath.splitext(parts[-1])
    if ext.lower() not in _EXTENSIONS:
        return False
    return (
        bool(_TEMPLATE_NAME.match(stem))
        or stem.lower().endswith("template")
        or any(p in ("templates", "template") for p in parts[:-1])
    )


def records_problem(path: str, directory: str | None, branch: str | None) -> str | None:
    """What a pull of an `adr` source would say about finding records in the checkout at
    ``path`` (None when it finds some), without reading the history."""
    repo = Repo(path)
    try:
        rev = branch or "HEAD"
        head = repo.rev_parse(rev)
        if head is None:
            return None  # no commits yet, or a missing branch: said elsewhere
        layout = Layout(directory) if directory else detect_layout(repo, head)
        if layout is None:
            return f"no ADR records found at {rev}: looked in {LOOKED}"
        listing = repo.run(
            "ls-tree", "-r", "-z", "--name-only", head, "--", layout.dir, check=False
        ).stdout
        names = (p.decode("utf-8", "surrogateescape") for p in listing.split(b"\0") if p)
        if not any(is_record_path(name, (layout.dir,), layout.by_name) for name in names):
            return f"no ADR records found in dir {layout.dir!r} at {rev}"
        return None
    finally:
        repo.close()


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a repository keeps its records: a directory of records, or (``by_name``) a
    directory where only files named like records (``0003-x.md``, ``adr-003-x.md``) are."""

    dir: str
    by_name: bool = False
    from_adr_dir: bool = False  # named by adr-tools' ``.adr-dir``


def decision_logs(repo: Repo, head: str) -> list[Layout]:
    """Every decision log at ``head`` (:func:`layouts`, in that order), less a directory
    inside one already taken (an ``archive/`` of ``docs/adr`` is part of that log). The
    directory adr-tools' ``.adr-dir`` names is the one log, as ``dir`` would be."""
    found: list[Layout] = []
    for layout in layouts(repo, head):
        if layout.from_adr_dir:
            return [layout]
        if not any(
            layout.dir == taken.dir or layout.dir.startswith(taken.dir + "/") for taken in found
        ):
            found.append(layout)
    return found


def log_spaces(repo: Repo, head: str, logs: list[Layout]) -> list[str]:
    """Each log's subject space: ``adr`` for the first (``adr:<n>``, as a repository with
    one log has always had), for each other the numbering its records' file names follow
    (``dr`` for ``DR002-x.md``), or its directory when that is ``adr`` or taken."""
    spaces = ["adr"]
    from healthd.sources._adrdoc import file_prefix  # (see layouts)

    for layout in logs[1:]:
        listing = repo.run(
            "ls-tree", "-r", "-z", "--name-only", head, "--", layout.dir, check=False
        ).stdout
        prefixes = Counter(
            prefix
            for raw in listing.split(b"\0")
            if raw
            and is_record_path(name := raw.decode("utf-8", "surrogateescape"), (layout.dir,))
            and (prefix := file_prefix(name)) is not None
        )
        space = max(sorted(prefixes), key=prefixes.__getitem__) if prefixes else "adr"
        if space in spaces:
            space = "root" if layout.dir == ROOT else layout.dir.replace(":", "-")
        spaces.append(space)
    return spaces


def detect_layout(repo: Repo, head: str) -> Layout | None:
    """The ADR layout at ``head``: the directory adr-tools' ``.adr-dir`` names, else the
    first usual directory present (``CANDIDATE_DIRS``), else the directory holding the most
    files named like records, if most of those have a status section."""
    return next(layouts(repo, head), None)


def layouts(repo: Repo, head: str) -> Iterator[Layout]:
    """Every ADR layout at ``head``, in the order :func:`detect_layout` prefers them."""
    data = repo.blob(f"{head}:.adr-dir")
    if data is not None:
        text = blob_text(data).strip().strip("/")
        if text.startswith("./"):
            text = text[2:]
        if text:
            yield Layout(text, from_adr_dir=True)
    proc = repo.run("ls-tree", "-d", "--name-only", "-z", head, "--", *CANDIDATE_DIRS, check=False)
    found = {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}
    for candidate in CANDIDATE_DIRS:
        if candidate in found:
            yield Layout(candidate)
    listing = repo.run("ls-tree", "-r", "-z", "--name-only", head, check=False).stdout
    by_dir: dict[str, list[str]] = {}
    for raw in listing.split(b"\0"):
        path = raw.decode("utf-8", "surrogateescape")
        directory, _, name = path.rpartition("/")
        if _RECORD_NAME.match(name) and not _NOT_SCANNED.search(f"{directory}/"):
            by_dir.setdefault(directory or ROOT, []).append(path)
    for directory, paths in sorted(by_dir.items(), key=lambda item: (-len(item[1]), item[0])):
        if directory in found:
            continue
        # (imported here: the `git` source asks where the log is, and most repositories
        # have no file named like a record, so never read one; the reader takes 15 ms to load)
        from healthd.sources._adrdoc import parse_adr

        sample = sorted(paths)[:5]
        blobs = repo.fetch_blobs(f"{head}:{path}" for path in sample)
        with_status = 0
        for path in sample:
            data = blobs.get(f"{head}:{path}")
            if data is not None and parse_adr(path, blob_text(data)).status:
                with_status += 1
        if with_status * 2 > len(sample):
            yield Layout(directory, by_name=True)


#: The commits that brought several files into a log at once looked at for where they
#: came from (a log moved in), at most (each is one rename-detecting ``diff-tree``).
MOVES_LOOKED_AT = 32


def earlier_names(repo: Repo, head: str, directory: str, first_parent: bool) -> list[str]:
    """The names ``directory`` had before it was renamed (``doc/adr`` before ``docs/adr``),
    newest first: each commit that brought its files in (its oldest, and any that brought
    several at once), read with git's rename detection, says where they came from; a log
    moved away and back again (ethersync: ``docs/decisions`` to ``daemon/docs/decisions``
    for six weeks) keeps its decisions through both moves."""
    names: list[str] = []
    if directory == ROOT:
        return names  # (the root is never renamed)
    pending = [(directory, head)]
    while pending and len(names) < 8:  # a log moved more often than that is not followed
        current, rev = pending.pop(0)
        for sha in _moves_into(repo, rev, current, first_parent):
            before = _origin(repo, sha, current)
            if before is None or before == directory or before in names:
                continue
            names.append(before)
            pending.append((before, f"{sha}^"))
    return names


def _moves_into(repo: Repo, rev: str, current: str, first_parent: bool) -> list[str]:
    """The commits up to ``rev`` that added files under ``current``: the oldest, and those
    that added more than one (a move brings a log's files together), newest first."""
    args = ["log", "--format=%x01%H", "--diff-filter=A", "--name-only", "-z"]
    if first_parent:
        args.append("--first-parent")
    out = repo.run(*args, rev, "--", current, check=False).stdout
    commits: list[tuple[str, int]] = []
    for block in out.split(b"\x01")[1:]:
        sha, _, files = block.partition(b"\0")  # (then a newline, and NUL-ended names)
        commits.append((sha.decode().strip(), sum(1 for f in files.split(b"\0") if f.strip())))
    if not commits:
        return []
    several = [sha for sha, added in commits[:-1] if added > 1][: MOVES_LOOKED_AT - 1]
    return [*several, commits[-1][0]]


def _origin(repo: Repo, sha: str, current: str) -> str | None:
    """Where most of the files ``sha`` renamed into ``current`` came from, if any."""
    proc = repo.run(
        "diff-tree", "-r", "-z", "--no-commit-id", "--find-renames", "--diff-filter=R",
        f"{sha}^", sha, check=False,
    )  # fmt: skip
    tokens = proc.stdout.split(b"\0")
    origins: dict[str, int] = {}
    for i in range(0, len(tokens) - 2, 3):
        old = tokens[i + 1].decode("utf-8", "surrogateescape")
        new = tokens[i + 2].decode("utf-8", "surrogateescape")
        if not new.startswith(current + "/"):
            continue
        rel = new[len(current) :]
        if old.endswith(rel) and len(old) > len(rel):
            origin = old[: -len(rel)]
            origins[origin] = origins.get(origin, 0) + 1
    if not origins:
        return None
    return max(sorted(origins), key=lambda name: origins[name])
