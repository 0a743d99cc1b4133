"""The runbook the daemon serves at ``/runbook``: ``docs/runbook.md`` as the package ships it
(``healthd/data/runbook.md``, copied by ``alerts/generate.py``), rendered once, each heading
with the anchor the alerts' runbook links end in (``#healthdfreshnesslow``)."""

from __future__ import annotations

import re
from functools import cache
from html import escape
from importlib import resources
from itertools import pairwise

from markdown_it import MarkdownIt

from healthd import __version__

DATA_FILE = "runbook.md"
_NOT_IN_ANCHOR = re.compile(r"[^\w\- ]")


def anchor(heading: str) -> str:
    """The anchor GitHub and GitLab give a heading: lower case, punctuation dropped, spaces
    as hyphens."""
    return _NOT_IN_ANCHOR.sub("", heading.strip().lower()).replace(" ", "-")


def _shipped() -> str:
    return (resources.files("healthd") / "data" / DATA_FILE).read_text(encoding="utf-8")


@cache
def runbook_html() -> bytes:
    return render(_shipped())


@cache
def runbook_section() -> str:
    """The shipped runbook as a section of a page that carries it (a report file, opened
    anywhere), its headings anchored as :func:`render` anchors them."""
    return f"<section id='runbook' class='runbook'>{render_body(_shipped())}</section>"


def render(text: str) -> bytes:
    """A Markdown runbook as a page, raw HTML in it shown as text, each heading anchored."""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<link rel='icon' href='data:,'><title>healthd {escape(__version__)} runbook</title>"
        "<link rel='stylesheet' href='static/page.css'></head><body class='runbook'>"
        f"<p class='meta'><a href='./'>← the page</a></p>{render_body(text)}</body></html>\n"
    ).encode()


def render_body(text: str) -> str:
    """A Markdown runbook as HTML, raw HTML in it shown as text, each heading anchored."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    seen: dict[str, int] = {}
    for token, inline in pairwise(tokens):
        if token.type == "heading_open":  # the heading's text, as GitHub slugs it: a link's
            text = "".join(  # words, not its address
                c.content for c in inline.children or () if c.type in ("text", "code_inline")
            )
            name = anchor(text)
            n = seen[name] = seen.get(name, -1) + 1
            token.attrSet("id", f"{name}-{n}" if n else name)
    return str(md.renderer.render(tokens, md.options, {}))
