"""What language a repository's source file is written in, by its extension, and a
module's main language from its files' counts (the `git` source's ``language`` facts)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

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
    ".h": "c",
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
#: tells, and a jQuery plugin (``jquery.easing.js``), which Linguist counts as code.
_VENDORED_SCRIPT = re.compile(r"(?:.*[.-]min|jquery.*|bootstrap.*)\.js", re.I).fullmatch


def language_of(path: str) -> str | None:
    """The language of a source file by its extension; None for other files and for
    vendored code (node_modules, vendor, third_party, and a copy of a minified script,
    jQuery or Bootstrap)."""
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
    return None if vendored else lang


#: GitHub Linguist's heuristics (lib/linguist/heuristics.yml) for the extensions several
#: languages share, which only a file's text tells apart: the first rule found in it says
#: the language. (Rules anchored at a line's start look for the newline before it, in a
#: text starting with one, and a literal is looked for before a pattern needing it: 15
#: times faster than Linguist's patterns as written.)
_OBJECTIVE_C = re.compile(
    rb"\n[ \t\r\f\v]*(?:@(?:interface|class|protocol|property|end|synchronised|selector"
    rb'|implementation)\b|#import\s+.+\.h[">])'
)
_CPP_LINE = re.compile(
    rb"\n[ \t\r\f\v]*(?:#\s*include <(?:cstdint|string|vector|map|list|array|bitset|queue"
    rb"|stack|forward_list|unordered_map|unordered_set|(?:i|o|io)stream)>"
    rb"|template\s*<|try|constexpr|catch\s*\(|(?:class|(?:using[ \t]+)?namespace)\s+\w"
    rb"|(?:private|public|protected):$)",
    re.M,
)
_CPP_STD = re.compile(rb"std::\w")
_MUF = re.compile(rb"\n: ")
_MUMPS = re.compile(rb"\n[ \t\r\f\v]*;")
_WOLFRAM_END = re.compile(rb"\*\)$", re.M)
_MATLAB = re.compile(rb"\n[ \t\r\f\v]*%")
_LIMBO = re.compile(rb"\n\w+\s*:\s*module\s*\{")


def _objective_c(text: bytes) -> bool:
    return (b"@" in text or b"#import" in text) and _OBJECTIVE_C.search(text) is not None


def _header(text: bytes) -> str:
    """A ``.h`` file: Objective-C, C++, else C."""
    if _objective_c(text):
        return "objective-c"
    if (
        _CPP_LINE.search(text)
        or (b"std::" in text and _CPP_STD.search(text))
        or b"__has_cpp_attribute" in text
        or b"__cplusplus >" in text
    ):
        return "cpp"
    return "c"


def _dot_m(text: bytes) -> str:
    """A ``.m`` file: Objective-C, Mercury, MUF, M, Wolfram, MATLAB, Limbo; with none of
    their marks (where Linguist asks its classifier) MATLAB, as a script of a few
    uncommented lines is (an Objective-C file declares what it implements)."""
    if _objective_c(text):
        return "objective-c"
    if b":- module" in text:
        return "mercury"
    if _MUF.search(text):
        return "muf"
    if _MUMPS.search(text):
        return "mumps"
    if b"(*" in text and _WOLFRAM_END.search(text):
        return "wolfram"
    if _MATLAB.search(text) or not _LIMBO.search(text):
        return "matlab"
    return "limbo"


_BY_TEXT: dict[str, Callable[[bytes], str]] = {".h": _header, ".m": _dot_m}


def told_by_text(path: str) -> bool:
    """Whether the language of the file at ``path`` is told by its text (a ``.h`` file is
    C, C++ or Objective-C; a ``.m`` file Objective-C or MATLAB): see :func:`text_language`."""
    return path[-2:].lower() in _BY_TEXT


def text_language(path: str, text: bytes) -> str:
    """The language of the file at ``path`` (one :func:`told_by_text`) by its text, as
    Linguist's heuristics tell it."""
    return _BY_TEXT[path[-2:].lower()](b"\n" + text)


def main_language(counts: Mapping[str, int]) -> str | None:
    best = [(-n, lang) for lang, n in counts.items() if n > 0]
    return min(best)[1] if best else None
