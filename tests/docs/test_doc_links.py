"""Every relative link and anchor in the repository's Markdown resolves, as a forge renders it:
a link names a file that exists inside the repository, and an anchor names a heading of the
page it points at (GitHub's slugs: lower case, punctuation dropped, spaces as hyphens, a
repeated heading suffixed -1, -2, ...)."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _markdown_files() -> list[Path]:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in out if (ROOT / name).is_file()]


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "``", line))
    return lines


def github_slug(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: Counter[str] = Counter()
    out = set()
    fenced = False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not match:
            continue
        slug = github_slug(match.group(1))
        out.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return frozenset(out)


def links(page: Path) -> list[str]:
    return [m.group(1) for line in _prose_lines(page.read_text()) for m in _LINK.finditer(line)]


def test_the_slugs_are_githubs():
    assert github_slug('`mode = "events"`: the memory\'s own pipeline') == (
        "mode--events-the-memorys-own-pipeline"
    )
    assert github_slug("The HTML report (`--html`)") == "the-html-report---html"
    assert github_slug('Mem0 as the team runs it (`ingest = "messages"`)') == (
        "mem0-as-the-team-runs-it-ingest--messages"
    )


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for link in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", link):
            continue  # https:, mailto: ... are not the repository's to check
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.is_relative_to(ROOT):
            broken.append(f"{link}: outside the repository")
        elif not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_a_broken_link_and_a_broken_anchor_are_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A `code` heading\n\n[ok](#a-code-heading) [bad](#nothing)\n")
    found = links(page)
    assert found == ["#a-code-heading", "#nothing"]
    assert "a-code-heading" in anchors(page) and "nothing" not in anchors(page)
