"""MkDocs hooks: the README as the site's index, and links to the repository's other files.

The pages are written for a forge, where a link may point anywhere in the repository
(`../healthd/reading/`, `../README.md#what-it-measures`, `docs/sources.md` from the README).
Here each link is resolved against the file's real place in the repository: one into docs/
becomes a link between pages, one to the README a link to the index, and any other one a link
to `repo_url` (or, without it, its text alone).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_LINK = re.compile(r"(!?\[(?:[^\]\[]|\[[^\]]*\])*\])\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INDEX = "index.md"


def _root(config: Any) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def on_files(files: Files, config: Any) -> Files:
    readme = _root(config) / "README.md"
    files.append(File.generated(config, _INDEX, content=readme.read_text()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    root = _root(config)
    docs = Path(config["docs_dir"]).resolve()
    uri = page.file.src_uri
    real = root / "README.md" if uri == _INDEX else docs / uri
    out, fenced = [], False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            line = _LINK.sub(lambda m: _relink(m, real, uri, root, docs, config), line)
        out.append(line)
    return "\n".join(out)


def _relink(match: re.Match[str], real: Path, uri: str, root: Path, docs: Path, config: Any) -> str:
    label, link = match.group(1), match.group(2)
    path, hash_, anchor = link.partition("#")
    if not path or re.match(r"[a-z][a-z0-9+.-]*:", path):
        return match.group(0)
    target = (real.parent / path).resolve()
    if target == root / "README.md":
        site = _INDEX
    elif target.is_relative_to(docs):
        site = target.relative_to(docs).as_posix()
    else:
        repo_url = config.get("repo_url")
        if not repo_url or label.startswith("!"):
            return label[1:-1] if not label.startswith("!") else match.group(0)
        blob = target.relative_to(root).as_posix()
        return f"{label}({repo_url.rstrip('/')}/blob/main/{blob}{hash_}{anchor})"
    relative = posixpath.relpath(site, posixpath.dirname(uri) or ".")
    return f"{label}({relative}{hash_}{anchor})"
