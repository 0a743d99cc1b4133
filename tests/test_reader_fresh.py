"""The default reader on shapes found in a fresh set of texts others wrote
(``tests/reader_labelled_fresh.jsonl``): one test per defect, each written with sentences
of the same shape (not the set's own), each failing on the reader before its fix."""

from __future__ import annotations

import pytest

from healthd.model import FactKey
from healthd.reading import build_reader
from healthd.reading.labelled import check_reader, load_labelled


def read(text: str, subject: str, predicate: str, values: tuple[str, ...]):
    return build_reader().read(text, FactKey(subject, predicate), values)


@pytest.mark.parametrize(
    "text",
    [
        "* deps: bumps github.com/spf13/cobra from 1.7.0 to 1.8.0 (#311)",
        "fix: bump github.com/spf13/cobra from 1.7.0 to 1.8.0",
        "summary: bumped github.com/spf13/cobra from 1.7.0 to 1.8.0",
    ],
)
def test_a_document_label_leads_no_subject(text):
    # a changelog's category, a conventional commit's type, a front-matter field
    reading = read(text, "deploy-cli", "dependency:github.com/spf13/cobra", ("1.7.0", "1.8.0"))
    assert (reading.asserted, reading.negated) == (("1.8.0",), ("1.7.0",))


@pytest.mark.parametrize("text", ["uses RabbitMQ", "prefers RabbitMQ", "runs RabbitMQ"])
def test_a_memory_opening_with_its_verb_names_no_subject(text):
    # Mem0 writes memories without their subject, some lower-case: the verb is no name
    assert read(text, "orders", "broker", ("rabbitmq", "nats")).asserted == ("rabbitmq",)


def test_a_markdown_link_is_read_as_its_text():
    # the link's target names neither a value nor the subject; its text is the name
    reading = read(
        "We moved the queue from [RabbitMQ](https://github.com/rabbitmq/rabbitmq-server) to "
        "[NATS](https://nats.io).",
        "orders",
        "broker",
        ("rabbitmq", "nats"),
    )
    assert (reading.asserted, reading.negated) == (("nats",), ("rabbitmq",))
    text = (
        "Bumps github.com/spf13/cobra from 1.7.0 to 1.8.0.\n"
        "PR [#42](https://github.com/acme/deploy-cli/pull/42)"
    )
    reading = read(text, "deploy-cli", "dependency:github.com/spf13/cobra", ("1.7.0", "1.8.0"))
    assert (reading.asserted, reading.negated) == (("1.8.0",), ("1.7.0",))


CI = ("travis ci", "github actions")


@pytest.mark.parametrize(
    "text",
    [
        "Travis CI is deprecated in favour of GitHub Actions.",
        "`travis ci` config is deprecated in favor of `github actions` workflows",
        # the deprecated one far from the one it gives way to
        "Travis CI is a hosted service that we found slow and have now deprecated "
        "in favor of GitHub Actions.",
    ],
)
def test_what_is_deprecated_in_favour_of_another_gives_way_to_it(text):
    reading = read(text, "monorepo", "ci", CI)
    assert (reading.asserted, reading.negated) == (("github actions",), ("travis ci",))


def test_the_value_a_thing_is_replaced_by_or_dropped_in_favour_of_is_current():
    assert read(
        "Was replaced by GitHub Actions as the only CI.", "monorepo", "ci", CI
    ).asserted == ("github actions",)
    assert read("Dropped in favour of GitHub Actions.", "monorepo", "ci", CI).asserted == (
        "github actions",
    )
    reading = read(
        "Travis CI was used at first but was replaced by GitHub Actions later on.",
        "monorepo",
        "ci",
        CI,
    )
    assert (reading.asserted, reading.negated) == (("github actions",), ("travis ci",))


NODE = ("20", "22")


@pytest.mark.parametrize(
    "text",
    [
        "- The staging environment will be rolled back to Node.js 22.",
        "The image will be upgraded to Node 22 after the freeze.",
        "We have decided to move the workers to Node 22 next sprint.",
        "We agreed to upgrade from Node 20 to Node 22 next quarter.",
    ],
)
def test_a_change_still_to_come_changes_nothing_yet(text):
    reading = read(text, "workers", "dependency:node", NODE)
    assert (reading.asserted, reading.negated) == ((), ())


def test_what_will_be_used_is_a_decision_not_a_plan():
    text = "Decision: RabbitMQ will be used as the primary message broker."
    assert read(text, "orders", "broker", ("rabbitmq", "nats")).asserted == ("rabbitmq",)


@pytest.mark.parametrize(
    ("text", "subject", "values"),
    [
        ("User prefers Rust", "billing", ("go", "rust")),
        ("Priya prefers Kotlin", "android-app", ("java", "kotlin")),
        ("User's favourite language is Rust", "billing", ("go", "rust")),
        ("User speaks French and German", "docs-site", ("french", "german")),
        ("User works mostly with Rust and Postgres.", "billing", ("go", "rust")),
    ],
)
def test_a_persons_taste_or_skill_is_no_fact_of_a_project(text, subject, values):
    # Mem0's memories of the user: nothing in them says what the subject runs on
    reading = read(text, subject, "language", values)
    assert reading.unread and reading.irrelevant


def test_a_preference_for_the_project_is_still_read():
    assert read(
        "User prefers Rust for our use case", "billing", "language", ("go", "rust")
    ).asserted
    assert read("User prefers Rust for billing", "billing", "language", ("go", "rust")).asserted


def test_what_is_rewritten_in_another_language_is_past():
    reading = read(
        "The legacy Perl scripts have been rewritten in Python.",
        "tooling",
        "language",
        ("perl", "python"),
    )
    assert (reading.asserted, reading.negated) == (("python",), ("perl",))


def test_what_stopped_being_used_is_past():
    reading = read(
        "Memcached stopped being part of the platform.", "catalog", "cache", ("memcached", "redis")
    )
    assert (reading.asserted, reading.negated) == ((), ("memcached",))


def test_a_name_inside_a_file_name_is_not_that_name():
    text = "If you kept a custom `webpack.config.js`, replace it with a `vite.config.ts`."
    assert read(text, "site", "build_tool", ("webpack", "vite")).unread
    text = "Moved the site from webpack to Vite; delete webpack.config.js."
    reading = read(text, "site", "build_tool", ("webpack", "vite"))
    assert (reading.asserted, reading.negated) == (("vite",), ("webpack",))
    assert read("The worker runs on Node.js.", "worker", "language", ("node", "go")).asserted == (
        "node",
    )


def test_a_chain_of_changes_ends_on_its_last_value():
    reading = read(
        "The team moved CI from Jenkins to CircleCI, then to GitHub Actions.",
        "monorepo",
        "ci",
        ("jenkins", "circleci", "github actions"),
    )
    assert (reading.asserted, reading.negated) == (("github actions",), ("jenkins", "circleci"))


def test_what_something_used_to_be_is_past_and_now_goes_on_about_it():
    text = (
        "importer used to be a cron job that we wrote in Perl for one box. "
        "Now it has been rewritten in Go."
    )
    reading = read(text, "importer", "language", ("perl", "go"))
    assert (reading.asserted, reading.negated) == (("go",), ("perl",))


@pytest.mark.parametrize(
    ("text", "subject", "predicate", "values", "current"),
    [
        # tests/reader_labelled_fresh_3_targeted.jsonl, fresh3t-001 and fresh3t-002
        (
            "Project hosting used to be painful, and with git and GitHub it's just so trivial "
            "to do a random small project.",
            "project",
            "hosting",
            ("sourceforge", "github"),
            "github",
        ),
        (
            'WXT is Vite-based, so the bundling that used to be painful "just works": content '
            "scripts, the service worker, and the popup are all normal TypeScript modules.",
            "extension",
            "language",
            ("javascript", "typescript"),
            "typescript",
        ),
    ],
)
def test_what_something_used_to_be_ends_where_its_clause_goes_on(
    text, subject, predicate, values, current
):
    # "used to be painful, and ...", "used to be painful "just works": ...": what follows
    # the complement of "used to be" is said of the present
    reading = read(text, subject, predicate, values)
    assert (reading.asserted, reading.negated) == ((current,), ())


PY = ("3.11", "3.12")


def test_a_line_naming_the_dependency_is_read_beside_the_one_naming_the_subject():
    # a changelog names its project once; its other lines are still the project's
    text = "- api: upgraded Flask to 3.0\n- Minimum Python version raised to 3.12"
    assert read(text, "api", "dependency:python", PY).asserted == ("3.12",)
    # but not a line about another subject
    text = "api runs Python 3.12. The worker pins Python 3.11."
    assert read(text, "api", "dependency:python", PY).asserted == ("3.12",)


def test_what_will_be_removed_is_no_plan_for_what_follows():
    text = (
        "Kafka is deprecated and will be removed in a future release; the Kafka "
        "cluster is no longer maintained."
    )
    assert read(text, "orders", "broker", ("kafka", "sqs")).negated == ("kafka",)
    text = "Kafka is deprecated and will be removed in a future release — the upstream Kafka is no longer maintained."
    assert read(text, "orders", "broker", ("kafka", "sqs")).negated == ("kafka",)


def test_a_compound_label_leads_no_subject():
    # a conventional commit's type with its scope, hyphenated
    text = "* **ci-deps:** bump github.com/spf13/cobra from 1.7.0 to 1.8.0 (#372)"
    reading = read(text, "deploy-cli", "dependency:github.com/spf13/cobra", ("1.7.0", "1.8.0"))
    assert (reading.asserted, reading.negated) == (("1.8.0",), ("1.7.0",))


@pytest.mark.parametrize(
    ("labelled", "wrong"),
    [
        ("tests/reader_labelled_fresh.jsonl", 5),
        ("tests/reader_labelled_fresh_2.jsonl", 1),
        ("tests/reader_labelled_fresh_3.jsonl", 22),
        ("tests/reader_labelled_fresh_3_targeted.jsonl", 5),
    ],
)
def test_the_fresh_sets_read_no_worse(labelled, wrong):
    # 67 of 99 and 23 of 28 read right before default-8; what is still misread is in
    # docs/reading.md ("Two fresh sets of others' texts"); the third set (64 items, unseen
    # by default-8's rules) and the targeted one (23) in "A third fresh set"
    report = check_reader(build_reader(), load_labelled(labelled))
    assert len(report.errors) <= wrong
