"""The version, in one place: pyproject.toml reads it from here, and the CLI without
reading package metadata (which costs a start ~0.1 s)."""

__version__ = "0.1.0"
