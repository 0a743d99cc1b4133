"""The docs build as a site with MkDocs in strict mode: every page in the nav, every link
between pages and every anchor resolving, the README as the front page."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_site_builds_strictly_with_the_readme_as_its_front_page(tmp_path):
    pytest.importorskip(
        "mkdocs", reason="the docs extra is not installed (scripts/test.sh installs it)"
    )
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    index = (site / "index.html").read_text()
    assert "Point it at your project" in index
    assert 'href="targets/mem0/"' in index  # the README's docs/ links became links between pages
    for page in ("evaluate", "sources", "operating", "targets/agentcore", "development", "runbook"):
        assert (site / page / "index.html").is_file(), page


def test_a_link_the_site_cannot_resolve_fails_the_build(tmp_path):
    pytest.importorskip(
        "mkdocs", reason="the docs extra is not installed (scripts/test.sh installs it)"
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\n[gone](sources.md#no-such-heading)\n")
    (docs / "sources.md").write_text("# Sources\n")
    (tmp_path / "README.md").write_text("# Front\n\n[page](docs/page.md)\n")
    config = (ROOT / "mkdocs.yml").read_text()
    config = config.replace("docs/_site/hooks.py", str(ROOT / "docs" / "_site" / "hooks.py"))
    config = config[: config.index("nav:")]
    (tmp_path / "mkdocs.yml").write_text(config)
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert proc.returncode == 1
    assert "does not contain an anchor '#no-such-heading'" in proc.stderr
