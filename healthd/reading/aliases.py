"""How texts name what a key is about: alias rules as data, read by :mod:`._match`.

``PACKAGES``: the usual names of a dependency beside its key's name (a module path, a
package name), lower case. A module path is also named by its last one or two segments, a
Go module's major-version suffix dropped (``github.com/jackc/pgx/v5``: ``pgx/v5``,
``jackc/pgx``, ``pgx``), an npm scope by the package after it (``@aws-sdk/client-s3``:
``client-s3``, ``aws-sdk/client-s3``); those are derived, not listed.

``GENERIC``: words that stand where a subject would but name none ("the user", "the team",
"it"): a clause whose only candidate subject is one of them is not about another subject.

``OWNER_NOUNS``: the nouns that follow a name to make a subject of it ("the search
service", "the inventory DB").
"""

from __future__ import annotations

PACKAGES: dict[str, tuple[str, ...]] = {
    "postgres": ("postgresql", "pg", "psql", "postgre"),
    "postgresql": ("postgres", "pg", "psql"),
    "node": ("node.js", "nodejs"),
    "react": ("reactjs", "react.js"),
    "github.com/stretchr/testify": ("testify",),
    "github.com/spf13/cobra": ("cobra",),
    "github.com/jackc/pgx/v5": ("pgx", "pgx/v5"),
    "@aws-sdk/client-s3": ("client-s3", "aws sdk s3 client", "s3 client", "aws-sdk s3"),
    "django": ("django",),
}

GENERIC = frozenset(
    [
        "i",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "this",
        "that",
        "these",
        "those",
        "there",
        "who",
        "what",
        "user",
        "users",
        "the-user",
        "team",
        "our-team",
        "the-team",
        "people",
        "everyone",
        "someone",
        "nobody",
        "project",
        "the-project",
        "company",
        "org",
        "service",
        "the-service",
        "app",
        "the-app",
        "system",
        "repo",
        "codebase",
        "stack",
        "everything",
        "nothing",
        "one",
        "which",
        "whom",
        "whose",
        "where",
    ]
)

OWNER_NOUNS = (
    "service",
    "services",
    "api",
    "svc",
    "db",
    "database",
    "worker",
    "repo",
    "repository",
    "app",
    "pipeline",
    "job",
    "jobs",
    "site",
    "portal",
    "tool",
    "layer",
    "module",
    "team",
    "exporter",
    "scheduler",
    "limiter",
    "ui",
    "cli",
    "frontend",
    "backend",
    "cluster",
)
