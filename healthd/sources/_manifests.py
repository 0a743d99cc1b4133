"""Dependency manifests: file name → {dependency name: version spec}.

Pure functions over text. Every parser raises :class:`ManifestError` (and nothing else) on
input it cannot understand; the caller skips that file with the reason.

Names are normalised per ecosystem: Python names per PEP 503 (``Foo_Bar`` → ``foo-bar``),
Maven's and Gradle's as ``groupId:artifactId``, the rest (npm, Go, Cargo, NuGet) as written. A dependency without a version
constraint has the spec ``*``.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

# rtoml and the XML parser are imported by the parsers that need them: a repository of
# go.mod files alone is read without them.

ANY = "*"


class ManifestError(ValueError):
    """A manifest that cannot be parsed."""


Deps = dict[str, str]


def _pep503(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _clean(spec: str) -> str:
    spec = " ".join(spec.split())
    return spec or ANY


# ----------------------------------------------------------------------------- python

_REQ = re.compile(
    r"""^\s*(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*
        (?:\[(?P<extras>[^\]]*)\])?\s*
        (?P<rest>.*)$""",
    re.X | re.S,
)
# (a version may be ${NAME}, which pip fills in from the environment)
_SPEC = re.compile(
    r"^(?:(?:~=|===|==|!=|<=|>=|<|>)\s*(?:[A-Za-z0-9*+!._-]|\$\{[A-Za-z0-9_]+\})+\s*,?\s*)+$"
)


def parse_requirement(text: str) -> tuple[str, str] | None:
    """One PEP 508 requirement string → (normalised name, spec); None when not one."""
    text = text.strip()
    m = _REQ.match(text)
    if not m:
        return None
    name = _pep503(m.group("name"))
    rest = m.group("rest").strip()
    if rest.startswith("@"):  # direct reference: name @ url ; markers
        url = rest[1:].split(";", 1)[0].strip()
        return (name, f"@ {url}") if url else None
    rest = rest.split(";", 1)[0].strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1].strip()
    if not rest:
        return name, ANY
    if not _SPEC.match(rest):
        return None
    return name, _clean(rest.rstrip(",").replace(" ", ""))


#: A variable pip expands from the environment when it installs (``${NAME}``)
_PIP_VARIABLE = re.compile(r"^\$\{[A-Z0-9_]+\}")
#: The files pip installs from (``is_archive_file``): a line naming one is a path
_ARCHIVES: tuple[str, ...] = (".whl", ".zip", ".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tbz")
_ARCHIVES += (".tar.xz", ".txz", ".tlz", ".tar.lz", ".tar.lzma")


def _local_path(spec: str) -> bool:
    """Whether pip reads a requirements line as a local directory or archive, as it does a
    line holding a ``/`` (``libs/mylib``) or naming an archive (``foo-1.0-py3-none-any.whl``),
    unless an ``@`` comes first (``name @ https://...``, a direct reference)."""
    head = spec.split(";", 1)[0].strip()
    if "@" in head.split("/", 1)[0]:
        return False
    return "/" in head or head.lower().endswith(_ARCHIVES)


#: A line pip takes for a comment as it joins lines (``COMMENT_RE.match``): a '#' first,
#: after spaces or none
_COMMENT_LINE = re.compile(r"\s*#")


def _pip_lines(text: str) -> Iterator[str]:
    """``text``'s lines as pip joins them (``req_file.join_lines``): a line ending in a
    backslash goes on with the next, the backslash dropped and nothing put in its place,
    unless it is a comment line, which never goes on and ends a line that went on to it."""
    joined: list[str] = []
    for line in text.splitlines():
        comment = _COMMENT_LINE.match(line) is not None
        if line.endswith("\\") and not comment:
            joined.append(line.strip("\\"))
            continue
        if joined:
            joined.append(" " + line if comment else line)
            yield "".join(joined)
            joined = []
        else:
            yield line
    if joined:
        yield "".join(joined)


def parse_requirements_txt(text: str, dropped: list[str] | None = None) -> Deps:
    deps: Deps = {}
    # lines joined as pip joins them, then comments dropped (a '#' at the start or after space)
    for raw in _pip_lines(text):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line or line.startswith("-"):  # options: -r, -c, -e, --index-url, ...
            continue
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", line) or line.startswith((".", "/")):
            continue  # a bare URL (file:../x too) or path: no name to report
        spec = re.split(r"\s--", line, maxsplit=1)[0]  # per-line options aside
        if _local_path(spec):
            continue
        req = parse_requirement(spec)
        if req is not None:
            deps.setdefault(*req)
        elif dropped is not None and _PIP_VARIABLE.match(spec):
            dropped.append(f"{_short(line)} is set where pip installs it, not in the file")
        elif dropped is not None:
            dropped.append(f"{_short(line)} is not a requirement")
    return deps


def _toml(text: str) -> dict[str, Any]:
    # rtoml (the Rust toml crate) rather than tomllib: a long history re-reads a large
    # pyproject.toml at every change, and tomllib takes longer than git itself
    import rtoml

    try:
        data = rtoml.loads(text)
    except (ValueError, RecursionError) as exc:  # rtoml.TomlParsingError is a ValueError
        raise ManifestError(f"invalid TOML: {exc}") from None
    return data if isinstance(data, dict) else {}


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _said_table(where: str, value: Any, dropped: list[str] | None) -> dict[str, Any]:
    """``value`` when it is a table; else {}, and ``where`` said when it holds something
    else (``[[dependencies]]``, an array of tables, where Cargo and Poetry read one table)."""
    if isinstance(value, dict):
        return value
    if value is not None and dropped is not None:
        dropped.append(f"{where} is {_kind(value)}, not a table")
    return {}


def _short(value: Any) -> str:
    """A value as an entry left out is named: quoted, and cut when long."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _kind(value: Any) -> str:
    """What a TOML or JSON value is, as its format names it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else f"a {type(value).__name__}"


def _poetry_spec(value: Any) -> str | None:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, dict):
        if isinstance(value.get("version"), str):
            return _clean(value["version"])
        for key in ("git", "path", "url"):
            if isinstance(value.get(key), str):
                ref = value.get("rev") or value.get("tag") or value.get("branch")
                return f"{key}+{value[key]}" + (f"@{ref}" if isinstance(ref, str) else "")
        return ANY
    if isinstance(value, list):  # multiple constraints: take the first understood
        for item in value:
            spec = _poetry_spec(item)
            if spec:
                return spec
    return None


def _editable(item: Any) -> bool:
    """Whether a PDM development item is an editable (``-e ./pkg``, ``-e git+https://...``)."""
    return isinstance(item, str) and item.lstrip().startswith("-e")


#: A PDM 0.x section's key in [tool.pdm] (its Project.DEPENDENCIES_RE)
_PDM0_SECTION = re.compile(r"(?:.+-)?dependencies")


def _own_name(data: dict[str, Any]) -> str | None:
    """The project's own name (PEP 621's, else Poetry's), PEP 503-normalised."""
    for table in (_table(data.get("project")), _table(_table(data.get("tool")).get("poetry"))):
        if isinstance(table.get("name"), str):
            return _pep503(table["name"])
    return None


def parse_pyproject(text: str, dropped: list[str] | None = None) -> Deps:
    """The dependencies of the project's PEP 621 tables, dependency groups, PDM's and uv's
    development groups and Poetry's tables. A requirement naming the project itself
    (``requests[socks]`` in requests' test group, ``pdm[pytest]`` in pdm's) installs its own
    extras, from its own tree: it is no dependency, and those extras are read here anyway."""
    data = _toml(text)
    deps: Deps = {}
    project = _table(data.get("project"))

    def add_pep508(where: str, items: Any) -> None:
        if items is None:
            return
        if not isinstance(items, list):
            if dropped is not None:
                dropped.append(f"{where} is {_kind(items)}, not an array of requirements")
            return
        for item in items:
            req = parse_requirement(item) if isinstance(item, str) else None
            if req is not None:
                deps.setdefault(*req)
            elif dropped is not None:
                dropped.append(f"{where}: {_short(item)} is not a requirement")

    add_pep508("project.dependencies", project.get("dependencies"))
    optional = project.get("optional-dependencies")
    for name, group in _said_table("project.optional-dependencies", optional, dropped).items():
        add_pep508(f"project.optional-dependencies.{name}", group)
    groups = data.get("dependency-groups")
    for name, group in _said_table("dependency-groups", groups, dropped).items():
        if isinstance(group, list):  # (an include-group table among them is no requirement)
            group = [item for item in group if not isinstance(item, dict)]
        add_pep508(f"dependency-groups.{name}", group)
    tool = _table(data.get("tool"))
    # the development groups PDM and uv kept before PEP 735: PDM's a table of groups whose
    # items may be "-e <path or VCS URL>" (editables, no registry dependency, passed over as
    # in a requirements file), uv's one list that uv merges into the group "dev"
    pdm = _table(tool.get("pdm"))
    # PDM 0.x's sections, each a name and its spec as a Pipfile's: [tool.pdm.dependencies],
    # [tool.pdm.dev-dependencies] and [tool.pdm.<section>-dependencies] (its Project's
    # DEPENDENCIES_RE), the project's own dependencies first
    pdm_named: dict[str, Any] = {}
    for key in ("dependencies", *pdm):
        if key == "dev-dependencies" or not _PDM0_SECTION.fullmatch(key):
            continue
        for name, spec in _table(pdm.get(key)).items():
            if isinstance(spec, str | dict):
                pdm_named.setdefault(name, spec)
    for name, group in _said_table(
        "tool.pdm.dev-dependencies", pdm.get("dev-dependencies"), dropped
    ).items():
        if isinstance(group, str | dict):  # (PDM 0.x's)
            pdm_named.setdefault(name, group)
            continue
        if isinstance(group, list):
            group = [item for item in group if not _editable(item)]
        add_pep508(f"tool.pdm.dev-dependencies.{name}", group)
    add_pep508("tool.uv.dev-dependencies", _table(tool.get("uv")).get("dev-dependencies"))
    poetry = _table(tool.get("poetry"))
    where = "tool.poetry"
    tables = [(f"{where}.{key}", poetry.get(key)) for key in ("dependencies", "dev-dependencies")]
    tables.append(("tool.pdm", pdm_named))
    for name, group in _said_table(f"{where}.group", poetry.get("group"), dropped).items():
        group = _said_table(f"{where}.group.{name}", group, dropped)
        tables.append((f"{where}.group.{name}.dependencies", group.get("dependencies")))
    for where, table in tables:
        for name, value in _said_table(where, table, dropped).items():
            if not isinstance(name, str) or name.lower() == "python":
                continue
            spec = _poetry_spec(value)
            if spec is not None:
                deps.setdefault(_pep503(name), spec)
            elif dropped is not None:
                dropped.append(f"dependency {name!r}: {_kind(value)} is no version")
    own = _own_name(data)
    if own is not None:
        deps.pop(own, None)
    return deps


# ----------------------------------------------------------------------------- node


#: Where a name listed twice takes its spec from, the first first: npm documents that
#: "entries in optionalDependencies will override entries of the same name in
#: dependencies" (arborist loads peer, then prod, then optional edges, each replacing the
#: one before); devDependencies are the package's own, its peer range what it asks for.
_NPM_SECTIONS = ("optionalDependencies", "dependencies", "peerDependencies", "devDependencies")


def parse_package_json(text: str, dropped: list[str] | None = None) -> Deps:
    return _json_sections(text, "package.json", _NPM_SECTIONS, dropped)


def parse_composer_json(text: str, dropped: list[str] | None = None) -> Deps:
    """PHP's ``composer.json``: ``require`` then ``require-dev``, each package (and platform
    requirement: ``php``, ``ext-json``) at its constraint."""
    return _json_sections(text, "composer.json", ("require", "require-dev"), dropped)


def _json_sections(
    text: str, what: str, sections: tuple[str, ...], dropped: list[str] | None
) -> Deps:
    """The ``{name: version}`` objects ``sections`` of a JSON manifest, the first that
    names a dependency giving its version."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ManifestError(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{what} is not a JSON object")
    deps: Deps = {}
    for section in sections:
        table = data.get(section)
        if not isinstance(table, dict):
            if table is not None and dropped is not None:
                dropped.append(f"{section!r} is {_json_kind(table)}, not an object")
            continue
        for name, spec in table.items():
            if not name.strip():
                if dropped is not None:
                    dropped.append(f"{section}: a dependency with no name")
            elif isinstance(spec, str):
                deps.setdefault(name.strip(), _clean(spec))
            elif dropped is not None:
                dropped.append(f"{section}.{name}: {_json_kind(spec)} is no version")
    return deps


def _json_kind(value: Any) -> str:
    return "an object" if isinstance(value, dict) else _kind(value)


def parse_pipfile(text: str, dropped: list[str] | None = None) -> Deps:
    """Pipenv's ``Pipfile``: ``[packages]`` then ``[dev-packages]``, names as PEP 503 has
    them; a table's ``version`` (one from git or a path, with none, is ``*``)."""
    data = _toml(text)
    deps: Deps = {}
    for section in ("packages", "dev-packages"):
        for name, spec in _said_table(section, data.get(section), dropped).items():
            if isinstance(spec, dict):
                spec = spec.get("version", ANY)
            if isinstance(spec, str) and name.strip():
                deps.setdefault(_pep503(name.strip()), _clean(spec))
            elif dropped is not None:
                dropped.append(f"{section}.{name}: {_kind(spec)} is no version")
    return deps


# ----------------------------------------------------------------------------- dart


def parse_pubspec(text: str, dropped: list[str] | None = None) -> Deps:
    """Dart's and Flutter's ``pubspec.yaml``: ``dependencies`` then ``dev_dependencies``,
    each at its constraint (``^1.0.4``; ``any`` or none, a package from an SDK, git or a
    path with no ``version``: ``*``). Scalars are read as the text written (``1.10`` is no
    number)."""
    import yaml  # (only for a repository with a pubspec.yaml)

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CBaseLoader", yaml.BaseLoader))
    except yaml.YAMLError as exc:
        raise ManifestError(f"invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ManifestError("pubspec.yaml is not a mapping")
    deps: Deps = {}
    for section in ("dependencies", "dev_dependencies"):
        table = data.get(section) or {}
        if not isinstance(table, dict):
            if dropped is not None:
                dropped.append(f"{section} is {_kind(table)}, not a mapping")
            continue
        for name, spec in table.items():
            if isinstance(spec, dict):
                spec = spec.get("version", "")
            if not isinstance(spec, str):
                if dropped is not None:
                    dropped.append(f"{section}.{name}: {_kind(spec)} is no version")
                continue
            deps.setdefault(name, ANY if spec.strip() == "any" else _clean(spec))
    return deps


# ----------------------------------------------------------------------------- ruby

#: A line of Gemfile.lock's DEPENDENCIES section: two spaces, the gem, its requirement as
#: the Gemfile wrote it, and ``!`` for one from a git or path source.
_GEM_DEPENDENCY = re.compile(r"  ([^\s(!]+)(?: \(([^)]*)\))?!?")


def parse_gemfile_lock(text: str, dropped: list[str] | None = None) -> Deps:
    """Bundler's ``Gemfile.lock``: the gems of its DEPENDENCIES section, what the Gemfile
    requires directly, each at the requirement written there (``~> 7.1``; none is ``*``).
    The locked versions of the specs sections are what was resolved, not declared."""
    deps: Deps = {}
    section = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.strip()
            continue
        if section != "DEPENDENCIES" or not line.strip():
            continue
        found = _GEM_DEPENDENCY.fullmatch(line.rstrip())
        if found is None:
            if dropped is not None:
                dropped.append(f"DEPENDENCIES: {line.strip()[:60]!r} is no gem")
            continue
        deps.setdefault(found[1], _clean(found[2] or ""))
    if section is None:
        raise ManifestError("Gemfile.lock with no section")
    return deps


# ----------------------------------------------------------------------------- go

_GO_REQUIRE = re.compile(r"^[ \t]*require\b[ \t]*", re.M)
_GO_ENTRY = re.compile(r"^[ \t(]*\"?([^\s\"()]+)\"?[ \t]+(v[^\s/]+)[ \t]*(//[^\n]*)?$", re.M)

#: A require section's line → its direct requirement (name, version), or () when it is
#: none (blank, a comment, an indirect requirement). go.mod files are read at every
#: change, and a version differs from the previous one by a few lines, so almost every
#: line is one an earlier version had: it is matched once, not once per version.
_GO_LINES: dict[str, tuple[str, str] | tuple[()]] = {}
_GO_LINES_MAX = 1 << 15  # a few MB; a pull of opentelemetry-go meets 2,270 lines


class _GoRefused(Exception):
    """A require section's line holds a character Go refuses outside a comment."""


def _go_line(line: str) -> tuple[str, str] | tuple[()]:
    # (a tab is no printable character, nor CR, but Go skips both as it skips a space)
    if not line.isprintable() and not (
        line.split("//", 1)[0].replace("\t", "").replace("\r", "").isprintable()
    ):
        raise _GoRefused
    found = _GO_ENTRY.match(line)
    if found is None:
        return ()
    name, version, comment = found.groups()
    if comment and "indirect" in comment and _go_indirect(comment):
        return ()
    return name, version


def _go_indirect(comment: str) -> bool:
    """Go's own rule (``modfile``'s ``isIndirect``): the comment is ``// indirect``, or
    starts ``// indirect;`` and says more; ``// TODO: was indirect`` is a direct one."""
    words = comment[2:].split()
    return words == ["indirect"] or (len(words) > 1 and words[0] == "indirect;")


def _go_line_start(text: str, at: int, pos: int) -> int:
    """Where the line holding ``at`` starts, if it starts at or after ``pos`` and holds only
    spaces and tabs before ``at`` (a regex's ``^[ \t]*`` searched from ``pos``); else -1.
    Only the spaces and tabs before ``at`` are walked, never the rest of its line: a line
    of thousands of ``x)`` or ``x require`` would be walked back once for each of them."""
    start = at
    while start > pos and text[start - 1] in " \t":
        start -= 1
    return start if start == 0 or text[start - 1] == "\n" else -1


def _go_sections(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s require sections are (start, end): a block's lines, from after
    ``require (`` to the start of the next line that starts with ``)``, or a ``require``
    line's rest. Directives are found with ``str.find``, each checked where a regex's
    ``^[ \t]*`` searched from the end of the previous section would have found it."""
    spans: list[tuple[int, int]] = []
    pos = 0
    at = text.find("require")
    while at >= 0:  # (at >= pos: every search starts at pos or later)
        # at the start of its line (the usual case), else after spaces and tabs, or not one
        line_start = at if at == 0 or text[at - 1] == "\n" else _go_line_start(text, at, pos)
        found = _GO_REQUIRE.match(text, line_start) if line_start >= 0 else None
        if found is None:
            at = text.find("require", at + 1)
            continue
        start = found.end()
        if text[start : start + 1] == "(":
            close = text.find(")", start + 1)
            while (
                close >= 0
                and text[close - 1] != "\n"
                and _go_line_start(text, close, start + 1) < 0
            ):
                close = text.find(")", close + 1)
            if close >= 0:  # (the block's end: the start of the line holding its ")")
                end = close if text[close - 1] == "\n" else text.rfind("\n", 0, close) + 1
                spans.append((start + 1, end))
                pos = close + 1
                at = text.find("require", pos)
                continue
        pos = text.find("\n", start)
        if pos < 0:
            pos = len(text)
        spans.append((start, pos))
        at = text.find("require", pos)
    return spans


def _go_entries(lines: list[str]) -> list[tuple[str, str]]:
    """The direct requirements among require sections' ``lines``, in order, each line
    matched once (``_GO_LINES``)."""
    if len(_GO_LINES) > _GO_LINES_MAX:
        _GO_LINES.clear()
    entries = list(map(_GO_LINES.get, lines))
    if None in entries:
        for i, entry in enumerate(entries):
            if entry is None:
                entries[i] = _GO_LINES[lines[i]] = _go_line(lines[i])
    return [entry for entry in entries if entry]


def _go_direct(text: str, spans: list[tuple[int, int]]) -> str:
    """The require sections' text, joined by newlines, but for blocks whose every line
    (after the rest of the ``require (`` line, when that is empty) ends in `` // indirect``,
    its one comment, as ``go mod tidy`` writes it: such a line requires nothing directly
    whatever precedes it, and since Go 1.17 the indirect requirements have a block of their
    own, most of a go.mod's lines. (``/// indirect`` is no mark: its comment is ``/
    indirect``; a block written otherwise is read line by line.)"""
    sections: list[str] = []
    count = text.count
    for start, end in spans:
        # (counted in place: most sections are indirect blocks, never copied)
        if (
            end > start
            and text[end - 1] == "\n"
            # (tested before counting: every line but an empty first one must end so, so
            # the last must too, unless the section is that empty line alone)
            and (text.endswith(" // indirect\n", start, end) or end - start == 1)
            and (indirect := count(" // indirect\n", start, end))
            == count("\n", start, end) - (text[start] == "\n")
            and count("//", start, end) == indirect  # (each line's one comment is that)
        ):
            continue
        sections.append(text[start:end])
    return "\n".join(sections)


#: The direct require sections' text (:func:`_go_direct`) → their requirements. Half the
#: versions of a go.mod change only its indirect block, the toolchain or a replace: their
#: direct sections are those of an earlier version, read once.
_GO_DEPS: dict[str, Deps] = {}
_GO_DEPS_MAX = 1 << 12  # a few MB of go.mod text


#: What may be a character Go's lexer refuses outside a comment (modfile's ``isIdent``: a
#: rune that is neither printable, ``unicode.IsPrint``, nor a space it skips, `` ``, tab, CR
#: and LF): an ASCII control character, or a non-ASCII one, refused when it is not printable
#: (``str.isprintable`` is ``unicode.IsPrint``: Unicode's letters, marks, numbers,
#: punctuation and symbols). A go.mod holding one is no go.mod to Go ("unexpected input
#: character"): a zero-width space or a soft hyphen in a module path as much as a NUL.
#: (Written as what it is not: the range ``\x7f-\U0010ffff`` takes 4 ms to compile.)
_GO_REFUSED = re.compile(r"[^\t\n\r\x20-\x7e]")


def _go_refused(text: str) -> str | None:
    """Where ``text`` holds the first character Go refuses outside a ``//`` comment (which
    Go reads to the end of its line, whatever it holds), said with its line; else None.
    A line is walked back at most once: a character in a comment passes over the rest of
    its line, a megabyte of NULs in one comment is not a megabyte of walks back."""
    pos = 0
    search = _GO_REFUSED.search
    while (found := search(text, pos)) is not None:
        at = pos = found.start()
        if text[at].isprintable():  # (letters and symbols of other scripts, Go's identifiers)
            pos += 1
            continue
        if "//" in text[text.rfind("\n", 0, at) + 1 : at]:
            end = text.find("\n", at)
            if end < 0:
                return None
            pos = end + 1
            continue
        line = text.count("\n", 0, at) + 1
        return f"line {line} holds {text[at]!r}, a character Go refuses"
    return None


def parse_go_mod(text: str, dropped: list[str] | None = None) -> Deps:
    """``require`` lines and blocks (``// indirect`` ones aside). A block runs from
    ``require (`` to the next line that starts with ``)``; without one, the line is read
    alone. When two lines require one module, the first counts. A file holding a NUL, or
    a character Go does not print in its direct require sections, is one Go refuses:
    ManifestError (searched there alone, in the lines not read before: most versions of a
    go.mod repeat an earlier version's)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if "\x00" in text and (problem := _go_refused(text)) is not None:
        raise ManifestError(problem)
    direct = _go_direct(text, _go_sections(text))
    deps = _GO_DEPS.get(direct)
    if deps is None:
        try:
            entries = _go_entries(direct.split("\n"))
        except _GoRefused:
            raise ManifestError(_go_refused(text) or "a character Go refuses") from None
        if len(_GO_DEPS) > _GO_DEPS_MAX:
            _GO_DEPS.clear()
        deps = _GO_DEPS[direct] = {}
        for name, version in entries:
            deps.setdefault(name, version)
    return dict(deps)


# ----------------------------------------------------------------------------- rust


def _cargo_spec(value: Any) -> str | None:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, dict):
        if isinstance(value.get("version"), str):
            return _clean(value["version"])
        if value.get("workspace") is True:
            return "workspace"
        for key in ("git", "path"):
            if isinstance(value.get(key), str):
                return f"{key}+{value[key]}"
        return ANY
    return None


_CARGO_KINDS = ("dependencies", "build-dependencies", "dev-dependencies")


def _cargo_itself(value: Any) -> bool:
    """Whether a dependency is the crate itself (``cfg = { path = ".", features = [...] }``
    in cfg's dev-dependencies, which turns its own features on for its tests, as a
    pyproject's ``requests[socks]`` does): no dependency of it. One of the same name from
    a registry (``old = { package = "cfg", version = "0.1" }``, the semver trick) is one."""
    path = value.get("path") if isinstance(value, dict) else None
    return isinstance(path, str) and posixpath.normpath(path or ".") == "."


def parse_cargo_toml(text: str, dropped: list[str] | None = None) -> Deps:
    data = _toml(text)
    deps: Deps = {}
    tables = [(kind, data.get(kind)) for kind in _CARGO_KINDS]
    tables.append(("workspace.dependencies", _table(data.get("workspace")).get("dependencies")))
    for cfg, target in _said_table("target", data.get("target"), dropped).items():
        t = _said_table(f"target.{cfg}", target, dropped)
        tables += [(f"target.{cfg}.{kind}", t.get(kind)) for kind in _CARGO_KINDS]
    for where, table in tables:
        for name, value in _said_table(where, table, dropped).items():
            if not isinstance(name, str) or _cargo_itself(value):
                continue
            spec = _cargo_spec(value)
            if spec is not None:
                pkg = value.get("package") if isinstance(value, dict) else None
                deps.setdefault(pkg if isinstance(pkg, str) and pkg else name, spec)
            elif dropped is not None:
                dropped.append(f"dependency {name!r}: {_kind(value)} is no version")
    return deps


# ----------------------------------------------------------------------------- maven


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _child(elem: ET.Element, name: str) -> ET.Element | None:
    for c in elem:
        if _local(c.tag) == name:
            return c
    return None


def _text(elem: ET.Element | None) -> str:
    return (elem.text or "").strip() if elem is not None else ""


def _xml_root(text: str, what: str, root_name: str) -> ET.Element:
    """The root element of an XML manifest, which must be ``root_name`` (namespaces aside);
    one declaring a DOCTYPE or an entity is refused unread (no entity is expanded)."""
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise ManifestError(f"{what} with a DOCTYPE/ENTITY declaration is not read")
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text.lstrip("\ufeff"))  # (Visual Studio writes a BOM first)
    except (ET.ParseError, ValueError) as exc:
        raise ManifestError(f"invalid XML: {exc}") from None
    if _local(root.tag) != root_name:
        raise ManifestError(f"{what} root element is not <{root_name}>")
    return root


def parse_pom_xml(text: str, dropped: list[str] | None = None) -> Deps:
    root = _xml_root(text, "pom.xml", "project")
    props: dict[str, str] = {}
    pe = _child(root, "properties")
    if pe is not None:
        for p in pe:
            props[_local(p.tag)] = _text(p)
    for name in ("version", "groupId"):
        value = _text(_child(root, name))
        if value:
            props[f"project.{name}"] = value
    managed: dict[str, str] = {}
    dm = _child(root, "dependencyManagement")
    if dm is not None:
        managed = _pom_deps(_child(dm, "dependencies"), props, {})
    return _pom_deps(_child(root, "dependencies"), props, managed)


def _pom_deps(container: ET.Element | None, props: dict[str, str], managed: dict[str, str]) -> Deps:
    deps: Deps = {}
    if container is None:
        return deps
    for dep in container:
        if _local(dep.tag) != "dependency":
            continue
        group, artifact = _text(_child(dep, "groupId")), _text(_child(dep, "artifactId"))
        if not group or not artifact:
            continue
        name = f"{group}:{artifact}"
        version = _text(_child(dep, "version"))
        version = re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), version)
        deps.setdefault(name, _clean(version) if version else managed.get(name, ANY))
    return deps


# ----------------------------------------------------------------------------- .NET


def parse_msbuild_project(text: str, dropped: list[str] | None = None) -> Deps:
    """A .NET SDK project (``*.csproj``, ``*.fsproj``, ``*.vbproj``): each
    ``PackageReference`` by its ``Include``, at its ``VersionOverride`` or ``Version``
    (an attribute or an element, ``$(Property)`` read from the file's own properties); one
    without, whose version ``Directory.Packages.props`` manages, is ``*``."""
    return _msbuild_items(_xml_root(text, "project file", "Project"), "PackageReference")


def parse_central_packages(text: str, dropped: list[str] | None = None) -> Deps:
    """NuGet's central package management (``Directory.Packages.props``): each
    ``PackageVersion``, the version every project below it gets."""
    return _msbuild_items(_xml_root(text, "Directory.Packages.props", "Project"), "PackageVersion")


def parse_packages_config(text: str, dropped: list[str] | None = None) -> Deps:
    """NuGet's ``packages.config`` (.NET Framework projects): each ``<package id version>``."""
    deps: Deps = {}
    for package in _xml_root(text, "packages.config", "packages"):
        name = _metadata(package, "id")
        if _local(package.tag) == "package" and name:
            deps.setdefault(name, _clean(_metadata(package, "version")))
    return deps


def _msbuild_items(root: ET.Element, kind: str) -> Deps:
    props: dict[str, str] = {}
    for group in root:
        if _local(group.tag) == "PropertyGroup":
            props.update((_local(p.tag).lower(), _text(p)) for p in group)
    deps: Deps = {}
    for group in root:
        if _local(group.tag) != "ItemGroup":
            continue
        for item in group:
            name = _metadata(item, "include")  # (an Update of an item already included: none)
            if _local(item.tag) != kind or not name:
                continue
            version = _metadata(item, "versionoverride") or _metadata(item, "version")
            version = re.sub(
                r"\$\(([^)]+)\)", lambda m: props.get(m.group(1).lower(), m.group(0)), version
            )
            deps.setdefault(name, _clean(version))
    return deps


def _metadata(item: ET.Element, name: str) -> str:
    """An item's metadata ``name``, as an attribute or a child element (MSBuild's names are
    case-insensitive)."""
    for key, value in item.attrib.items():
        if key.lower() == name:
            return value.strip()
    for child in item:
        if _local(child.tag).lower() == name:
            return _text(child)
    return ""


# ----------------------------------------------------------------------------- gradle


def parse_gradle_catalog(text: str, dropped: list[str] | None = None) -> Deps:
    """A Gradle version catalog (``gradle/libs.versions.toml``): each of its ``[libraries]``
    as ``group:name`` (as a pom.xml's), at its version: a string, a ``version.ref`` to
    ``[versions]``, or a rich version written as Gradle's string notation writes it
    (``strictly`` as ``1.0!!``, then what is preferred: ``[1.0,2.0[!!1.5``); none (a
    platform gives it) is ``*``. The catalog's plugins and bundles are no dependencies."""
    data = _toml(text)
    versions = _said_table("versions", data.get("versions"), dropped)
    deps: Deps = {}
    for alias, value in _said_table("libraries", data.get("libraries"), dropped).items():
        try:
            name, version = _catalog_library(value, versions)
        except ValueError as exc:
            if dropped is not None:
                dropped.append(f"library {alias!r}: {exc}")
            continue
        deps.setdefault(name, version)
    return deps


def _catalog_library(value: Any, versions: dict[str, Any]) -> tuple[str, str]:
    """A ``[libraries]`` entry's ``group:name`` and version (ValueError: what is wrong)."""
    if isinstance(value, str):  # "group:name:version", or "group:name"
        module, _, version = value.rpartition(":") if value.count(":") > 1 else (value, "", "")
        found = _catalog_module(module)
        if found is None:
            raise ValueError(f"{value!r} is no group:name:version")
        return found, _clean(version)
    if not isinstance(value, dict):
        raise ValueError(f"{_kind(value)} is no library")
    declared, group, name = value.get("module"), value.get("group"), value.get("name")
    if not isinstance(declared, str):
        declared = f"{group}:{name}" if isinstance(group, str) and isinstance(name, str) else ""
    found = _catalog_module(declared)
    if found is None:
        raise ValueError("no module, nor group and name")
    return found, _catalog_version(value.get("version"), versions)


def _catalog_module(module: str) -> str | None:
    group, _, name = module.partition(":")
    if not group.strip() or not name.strip() or ":" in name:
        return None
    return f"{group.strip()}:{name.strip()}"


def _catalog_version(value: Any, versions: dict[str, Any]) -> str:
    if value is None:
        return ANY
    if isinstance(value, dict) and set(value) == {"ref"}:
        ref = value["ref"]
        if not isinstance(ref, str) or ref not in versions:
            raise ValueError(f"version.ref {ref!r} names no entry of [versions]")
        value = versions[ref]
    if isinstance(value, str):
        return _clean(value)
    if not isinstance(value, dict):
        raise ValueError(f"its version is {_kind(value)}")
    strictly, require, prefer = (value.get(k) for k in ("strictly", "require", "prefer"))
    if not all(v is None or isinstance(v, str) for v in (strictly, require, prefer)):
        raise ValueError("a rich version's terms are strings")
    if strictly:
        return _clean(f"{strictly}!!{prefer or ''}")
    return _clean(require or prefer or "")


def parse_gradle_build(text: str, dropped: list[str] | None = None) -> Deps:
    """A Gradle build script (``build.gradle``, ``build.gradle.kts``): it makes its
    directory a project (a module); what it declares is code, Groovy or Kotlin, and is not
    read (a version catalog's libraries are)."""
    return {}


# ----------------------------------------------------------------------------- dispatch


class ManifestParser(Protocol):
    def __call__(self, text: str, dropped: list[str] | None = None) -> Deps:
        """The dependencies ``text`` declares; each entry read as none (a version that is a
        number, a list where a table belongs) described in ``dropped``, when given."""


_PARSERS: list[tuple[str, ManifestParser]] = [
    ("pyproject.toml", parse_pyproject),
    ("requirements*.txt", parse_requirements_txt),
    ("package.json", parse_package_json),
    ("composer.json", parse_composer_json),
    ("Gemfile.lock", parse_gemfile_lock),
    ("pubspec.yaml", parse_pubspec),
    ("Pipfile", parse_pipfile),
    ("go.mod", parse_go_mod),
    ("Cargo.toml", parse_cargo_toml),
    ("pom.xml", parse_pom_xml),
    ("*.csproj", parse_msbuild_project),
    ("*.fsproj", parse_msbuild_project),
    ("*.vbproj", parse_msbuild_project),
    ("Directory.Packages.props", parse_central_packages),
    ("packages.config", parse_packages_config),
    ("libs.versions.toml", parse_gradle_catalog),
    ("build.gradle", parse_gradle_build),
    ("build.gradle.kts", parse_gradle_build),
]

#: Manifests whose name alone says what they say (their text is never read, nor an edit).
_MARKERS = frozenset(p for p, parser in _PARSERS if parser is parse_gradle_build)


_NAMES = frozenset(
    p.encode() for p, _ in _PARSERS if not any(c in p for c in "*?[") and p not in _MARKERS
)
_NAME_PREFIXES = tuple(
    p[: min(p.find(c) for c in "*?[" if c in p)].encode()
    for p, _ in _PARSERS
    if any(c in p for c in "*?[") and not p.startswith("*")
)
_NAME_SUFFIXES = tuple(p[1:].encode() for p, _ in _PARSERS if p.startswith("*"))


def may_be_manifest(name: bytes) -> bool:
    """False for a file name (raw bytes, before decoding) no parser reads; True for every
    name one does (and for a few more: a glob is tested by its literal prefix)."""
    return name in _NAMES or name.startswith(_NAME_PREFIXES) or name.endswith(_NAME_SUFFIXES)


def reads_text(parser: ManifestParser | None) -> bool:
    """Whether a manifest's text says anything (a Gradle build script's does not)."""
    return parser is not parse_gradle_build


def manifest_dir(path: str) -> str:
    """The directory a manifest is the manifest of: its own, but for a Gradle version
    catalog in a ``gradle`` directory, which is the project's above it."""
    directory = posixpath.dirname(path)
    if path.endswith("/libs.versions.toml") and posixpath.basename(directory) == "gradle":
        return posixpath.dirname(directory)
    return directory


@lru_cache(maxsize=4096)
def _parser_for_name(base: str) -> ManifestParser | None:
    for pattern, parser in _PARSERS:
        if fnmatch.fnmatchcase(base, pattern):
            return parser
    return None


@lru_cache(maxsize=65536)
def manifest_parser(path: str) -> ManifestParser | None:
    """The parser for a repository path, or None when it is not a manifest we read.
    Which directories hold no modules (vendored code, ...) is the git source's choice."""
    return _parser_for_name(path.rpartition("/")[2])


def parse_manifest(path: str, text: str, dropped: list[str] | None = None) -> Deps:
    """Dependencies declared by the manifest at ``path``; ManifestError when unreadable.
    The entries read as none are described in ``dropped``, when given."""
    parser = manifest_parser(path)
    if parser is None:
        raise ManifestError(f"{path} is not a known manifest")
    try:
        deps = parser(text, dropped)
    except ManifestError:
        raise
    except (RecursionError, ValueError, TypeError, AttributeError, KeyError) as exc:
        raise ManifestError(f"cannot parse: {exc.__class__.__name__}") from None
    if parser is parse_go_mod:  # its names and versions are runs of non-space characters
        return deps
    return {k: v for k, v in deps.items() if k.strip() and v.strip()}


def try_parse_manifest(
    path: str, text: str, dropped: list[str] | None = None
) -> tuple[Deps, str | None]:
    """Like :func:`parse_manifest` but never raises: ({}, reason) when unreadable."""
    try:
        return parse_manifest(path, text, dropped), None
    except ManifestError as exc:
        return {}, str(exc)
