"""What language a repository's source file is written in, by its extension, and a
module's main language from its files' counts (the `git` source's ``language`` facts)."""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Source-file extensions by language (markup, data and config files do not count).
LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".rs": "rust",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".groovy": "groovy",
    ".clj": "clojure",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".fs": "fsharp",
    ".vb": "visualbasic",
    ".swift": "swift",
    ".m": "objective-c",
    ".mm": "objective-c",
    ".c": "c",
    ".h": "c header",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".jl": "julia",
    ".zig": "zig",
    ".nim": "nim",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".vue": "vue",
    ".svelte": "svelte",
    ".tf": "terraform",
    ".sol": "solidity",
}
_VENDORED = {"node_modules", "vendor", "third_party", "__pycache__"}
_MAY_BE_VENDORED = re.compile("|".join(sorted(map(re.escape, _VENDORED)))).search


#: A script that is a copy of another project's, by its name: a minified build
#: (``x.min.js``, ``x-min.js``), jQuery or Bootstrap, as GitHub Linguist's vendor.yml
#: tells; a jQuery plugin (``jquery.easing.js``) too, though Linguist counts those as code.
_VENDORED_SCRIPT = re.compile(r"(?:.*[.-]min|jquery.*|bootstrap.*)\.js", re.I).fullmatch


#: What a tool's configuration script is counted as, after its language: ``next.config.js``,
#: ``vite.config.ts``, ``.eslintrc.cjs``, ``build.gradle.kts``. A few bytes each, they are counted apart from the
#: module's own source so that two of them do not outvote two pages of it (GitHub Linguist,
#: which counts bytes, has create-turbo's apps/web TypeScript; file for file it was a tie).
CONFIGURATION = " configuration"


def language_of(path: str) -> str | None:
    """The language of a source file by its extension (with :data:`CONFIGURATION` after
    it for a tool's configuration script); None for other files and for vendored code
    (node_modules, vendor, third_party, and a copy of a minified script, jQuery or
    Bootstrap)."""
    start = path.rfind("/") + 1  # of the file name
    dot = path.rfind(".")
    if dot <= start:
        return None
    lang = LANGUAGES.get(path[dot:].lower())
    if lang is None or (lang == "javascript" and _VENDORED_SCRIPT(path, start)):
        return None
    vendored = (
        start
        and _MAY_BE_VENDORED(path)
        and any(p in _VENDORED for p in path[: start - 1].split("/"))
    )
    if vendored:
        return None
    if lang != HEADER and (path[start] == "." or path.endswith((".config", ".gradle"), start, dot)):
        return lang + CONFIGURATION
    return lang


#: A ``.h`` file: C, C++ or Objective-C. GitHub Linguist tells them apart by the header's
#: text (heuristics.yml); a header is counted here as the language of most of its
#: module's other C-family sources, which agreed with Linguist's reading of the text in
#: 154 of 160 directories of fetched repositories (143 when every header was C).
HEADER = "c header"
_HEADER_FAMILY = ("c", "cpp", "objective-c")


def main_language(counts: Mapping[str, int]) -> str | None:
    """The language with the most source files (ties: the first by name); configuration
    scripts count only where there is nothing else, and C headers as :data:`HEADER` says."""
    headers = counts.get(HEADER, 0)
    if headers > 0:
        family = min((-counts.get(lang, 0), lang) for lang in _HEADER_FAMILY)[1]
        counts = {**counts, family: counts.get(family, 0) + headers, HEADER: 0}
    best = [(-n, lang) for lang, n in counts.items() if n > 0 and not lang.endswith(CONFIGURATION)]
    if not best:
        cut = len(CONFIGURATION)
        best = [(-n, lang[:-cut]) for lang, n in counts.items() if n > 0]
    return min(best)[1] if best else None
