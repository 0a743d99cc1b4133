"""Catalog files as the `backstage` source reads them from a repository: path globs as the
catalog's discovery matches them, a multi-document YAML file split at its ``---`` markers
and parsed into entities (a document that is not one says why), and a Location's target as
a path in the repository. Pure: no I/O."""

from __future__ import annotations

import posixpath
import re
from collections.abc import MutableMapping
from functools import lru_cache

import yaml

from healthd.sources._catalog import Entity, Malformed, OtherKind, parse_entity


@lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as the catalog's discovery reads it: ``**`` any directories, ``*`` and
    ``?`` within one path segment."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _yaml_loader() -> type[yaml.SafeLoader]:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_DOC_START = re.compile(r"^---(?=[ \t\r]|$)", re.MULTILINE)
_WHOLE_FILE = re.compile(r"^(?:%|\.\.\.(?:[ \t\r]|$))", re.MULTILINE)
_EMPTY = re.compile(r"(?:\s*(?:#[^\n]*)?\n)*\s*(?:#[^\n]*)?")


def split_documents(text: str) -> list[tuple[int, str]]:
    """A multi-document file's documents, each with the line it starts at, split at its
    ``---`` markers (a line starting with ``---`` always starts a document in YAML); the
    whole text as one piece when it has directives or ``...`` document ends."""
    if _WHOLE_FILE.search(text):
        return [(0, text)]
    starts = [m.start() for m in _DOC_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    pieces = []
    line = 0
    for i, start in enumerate(starts):
        chunk = text[start : starts[i + 1] if i + 1 < len(starts) else len(text)]
        if i > 0 or chunk.startswith("---") or not _EMPTY.fullmatch(chunk):
            pieces.append((line, chunk))  # (comments before the first marker are none)
        line += chunk.count("\n")
    return pieces


Parsed = Entity | str | None  # an entity, why a document is not one, or an empty document


def parse_catalog_file(
    text: str, where: str, cache: MutableMapping[tuple[str, str], list[Parsed]] | None = None
) -> tuple[list[Entity], list[str]]:
    """The entities of one (multi-document) catalog file, and one line per document that
    is not an entity. Raises Malformed when the file is not YAML at all. With ``cache``,
    a document already read at this path is not parsed again (and keeps its identity)."""
    entities: list[Entity] = []
    problems: list[str] = []
    index = 0
    for line, chunk in split_documents(text):
        parsed = cache.get((where, chunk)) if cache is not None else None
        if parsed is None:
            try:
                docs = list(yaml.load_all(chunk, Loader=_yaml_loader()))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                at = f" at line {line + mark.line + 1}" if mark is not None else ""
                problem = getattr(exc, "problem", None) or type(exc).__name__
                raise Malformed(f"not valid YAML{at}: {problem}") from None
            parsed = [_entity_or_problem(doc, where) for doc in docs]
            if cache is not None:
                cache[where, chunk] = parsed
        for item in parsed:
            index += 1
            if isinstance(item, Entity):
                entities.append(item)
            elif item is not None:
                problems.append(f"document {index}: {item}")
    return entities, problems


def _entity_or_problem(doc: object, where: str) -> Parsed:
    if doc is None:
        return None  # an empty document (a trailing ---)
    try:
        return parse_entity(doc, where)
    except OtherKind as exc:
        return f"{exc}; not read"
    except Malformed as exc:
        return f"{exc}; skipped"


def resolve_target(location_file: str, target: str) -> str | None:
    """A Location target as a path in the repository (None: not in it)."""
    if "://" in target:
        return None
    if target.startswith("/"):
        path = posixpath.normpath(target.lstrip("/"))
    else:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(location_file), target))
    if path.startswith("../") or path == "..":
        return None
    return path
