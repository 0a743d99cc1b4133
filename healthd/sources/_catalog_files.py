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

from healthd.errors import shorten
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


class _CoreLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.2's core schema, as Backstage reads a catalog file (its ``yaml`` package's
    default): ``yes``, ``on``, ``2023-13-01`` and ``1:30`` are strings, ``0777`` is decimal,
    ``<<`` an ordinary key. PyYAML's own resolvers are YAML 1.1's, under which a date-like
    annotation that is no date (``2023-13-01``) fails the whole file."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
        """A mapping whose keys are unique: Backstage's parser refuses a duplicate key (its
        ``uniqueKeys``), where PyYAML would silently keep the last value."""
        seen: set[tuple[type, object]] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:  # (by type too: 1 and true are two keys to Backstage's parser, one to Python)
                duplicate = (type(key), key) in seen
                seen.add((type(key), key))
            except TypeError:  # an unhashable key: PyYAML's own error follows
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {shorten(str(key), 60)!r}",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep)  # type: ignore[no-any-return]


for _tag, _pattern, _first in (
    ("bool", r"(?:[Tt]rue|TRUE|[Ff]alse|FALSE)", "tTfF"),
    ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)", "-+0123456789"),
    (
        "float",
        r"(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))",
        "-+0123456789.",
    ),
    ("null", r"(?:~|[Nn]ull|NULL|)", ["~", "n", "N", ""]),
):
    _CoreLoader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(rf"^{_pattern}$"), list(_first)
    )


def _core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)  # (PyYAML's would read 0777 as octal and 1_000 as 1000)


_CoreLoader.add_constructor("tag:yaml.org,2002:int", _core_int)

#: Values one document may expand to through its aliases. A hand-written entity has tens;
#: an alias bomb (``&a [*b, *b, ...]`` nested) shares one object per anchor, small in
#: memory, but anything that walks it (a comparison with its next version, a message
#: quoting it) walks every expansion: 10 levels of 10 is 10^10 values.
MAX_DOCUMENT_VALUES = 100_000


def _values(doc: object) -> int:
    """How many values ``doc`` holds with every alias expanded, counting each shared object
    once per place it appears (computed once per object); Malformed past the bound, or when
    the document holds itself."""
    sizes: dict[int, int] = {}
    busy: set[int] = set()

    def size(value: object) -> int:
        if not isinstance(value, (dict, list)):
            return 1
        key = id(value)
        known = sizes.get(key)
        if known is not None:
            return known
        if key in busy:
            raise Malformed("an alias refers to a value that holds it")
        busy.add(key)
        items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
        total = 1
        for k, v in items:
            total += size(k) + size(v)
            if total > MAX_DOCUMENT_VALUES:
                raise Malformed(f"aliases expand it to over {MAX_DOCUMENT_VALUES:,} values")
        busy.discard(key)
        sizes[key] = total
        return total

    return size(doc)


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
    is not an entity. Raises Malformed when the file is not YAML, or holds a document that
    is no mapping: Backstage then keeps the file's entities as they were. With ``cache``, a
    document already read at this path is not parsed again (and keeps its identity)."""
    entities: list[Entity] = []
    problems: list[str] = []
    index = 0
    for line, chunk in split_documents(text):
        parsed = cache.get((where, chunk)) if cache is not None else None
        if parsed is None:
            try:
                docs = list(yaml.load_all(chunk, Loader=_CoreLoader))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                at = f" at line {line + mark.line + 1}" if mark is not None else ""
                problem = getattr(exc, "problem", None) or type(exc).__name__
                raise Malformed(f"not valid YAML{at}: {problem}") from None
            except (ValueError, TypeError, OverflowError) as exc:
                # (a value its tag cannot hold: !!timestamp 2023-13-01, !!float x, or an
                # integer past the interpreter's digit limit)
                at = f" in the document at line {line + 1}" if line else ""
                reason = str(exc)
                if "integer string conversion" in reason:
                    reason = f"an integer too long to read ({reason.split(':', maxsplit=1)[0]})"
                raise Malformed(f"not valid YAML{at}: {shorten(reason, 120)}") from None
            for offset, doc in enumerate(docs, start=index + 1):
                if doc is not None and not isinstance(doc, dict):
                    raise Malformed(f"document {offset} is a {type(doc).__name__}, not a mapping")
                envelope = _envelope_problem(doc)
                if envelope is not None:
                    raise Malformed(
                        f"document {offset}: {envelope} (Backstage reads none of the file)"
                    )
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


def _envelope_problem(doc: dict[object, object] | None) -> str | None:
    """What Backstage's envelope check (``EntityEnvelope.schema.json``) rejects in a
    document, if anything. It runs while the file is read, and a file with such a document
    fails whole: its location's entities stay as they were."""
    if doc is None:
        return None
    for key in ("apiVersion", "kind"):
        value = doc.get(key)
        if not isinstance(value, str) or not value:
            return f"{key} is missing or not a string"
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        return "metadata is missing or not a mapping"
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name is missing or not a string"
    namespace = metadata.get("namespace", "default")
    if not isinstance(namespace, str) or not namespace:
        return "metadata.namespace is not a string"
    return None


def _template_expression(doc: object) -> str | None:
    """Where a document's identity or spec (what facts are made of) holds a scaffolder
    template expression (``${{ values.owner }}``), as ``spec.owner``, if it does: the
    document is a software template's skeleton. Elsewhere (a description quoting a GitHub
    Actions ``${{ github.ref }}``) an expression is only text."""
    if not isinstance(doc, dict):
        return None
    metadata = doc.get("metadata")
    spec = doc.get("spec")
    fields = [
        *(
            (f"metadata.{key}", metadata.get(key))
            for key in ("name", "namespace")
            if isinstance(metadata, dict)
        ),
        *(
            (f"spec.{key}", value)
            for key, value in (spec.items() if isinstance(spec, dict) else ())
        ),
    ]
    for where, value in fields:
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and "${{" in v for v in values):
            return where
    return None


def _entity_or_problem(doc: object, where: str) -> Parsed:
    if doc is None:
        return None  # an empty document (a trailing ---)
    try:
        _values(doc)
        # (a Template's own steps hold expressions: it is an entity, the one that fills
        # them in)
        template = isinstance(doc, dict) and doc.get("kind") == "Template"
        templated = None if template else _template_expression(doc)
        if templated is not None:
            return (
                f"{templated} holds a template expression (${{{{ … }}}}): a software "
                "template's skeleton, not an entity; not read"
            )
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
