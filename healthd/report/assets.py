"""The page's static files, shipped inside the package: the vendored uPlot and our own."""

from __future__ import annotations

from functools import cache
from importlib import resources

UPLOT_VERSION = "1.6.32"

# name served at /static/NAME -> (file in the package, content type)
STATIC: dict[str, tuple[str, str]] = {
    "uPlot.iife.min.js": ("vendor/uPlot.iife.min.js", "text/javascript; charset=utf-8"),
    "uPlot.min.css": ("vendor/uPlot.min.css", "text/css; charset=utf-8"),
    "page.js": ("page.js", "text/javascript; charset=utf-8"),
    "page.css": ("page.css", "text/css; charset=utf-8"),
}


@cache
def static_text(name: str) -> str:
    """The text of one static file by its served name; KeyError if there is no such file."""
    path = STATIC[name][0]
    return (resources.files("healthd.report") / path).read_text(encoding="utf-8")
