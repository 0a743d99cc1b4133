"""Retrieved but irrelevant (issue 38 item 1): an item that speaks only of another subject is
unread for the probe's key and marked ``irrelevant``: counted in the JSON report, shown in the
drill-down apart from (after) the items scored as facts, never scored as a fact.

The memory here is a team's HTTP memory serving text (tests/text_memory_service.py) over
127.0.0.1, run through ``healthd evaluate`` as a user runs it.
"""

from __future__ import annotations

import pytest

from healthd.model import FactKey
from healthd.reading import Reading, build_reader

CHECKOUT = ("checkout", "owners")  # held @kim, then @lee


def read(text: str, subject: str, predicate: str, values: tuple[str, ...]) -> Reading:
    return build_reader().read(text, FactKey(subject, predicate), values)


@pytest.mark.parametrize(
    ("text", "subject", "predicate", "values"),
    [
        # a people-valued key whose subject the text does not name
        ("Kim runs the search service", "checkout", "owners", ("@kim", "@lee")),
        ("Lee has been away since Monday", "checkout", "owners", ("@kim", "@lee")),
        # another subject whose name starts with the key's
        ("auth-service-v2 is written in Go", "auth-service", "language", ("go", "node")),
        # another package's version
        ("auth-service depends on flask 2.0", "auth-service", "dependency:gin", ("1.9.1",)),
        # every clause about another subject, the key's never named
        ("the exporter is written in Go", "gateway", "language", ("go", "node")),
        ("inventory service CONSUMES FROM Kafka", "orders", "broker", ("kafka", "rabbitmq")),
    ],
)
def test_a_text_about_another_subject_is_unread_and_irrelevant(text, subject, predicate, values):
    reading = read(text, subject, predicate, values)
    assert reading.unread and reading.irrelevant
    assert reading == Reading(irrelevant=True)


@pytest.mark.parametrize(
    ("text", "subject", "predicate", "values"),
    [
        ("unclear whether Kim or Lee owns checkout", "checkout", "owners", ("@kim", "@lee")),
        ("checkout might move to payments-v2 in spring", "checkout", "owners", ("@kim", "@lee")),
        ("The weather is nice today", "gateway", "language", ("go", "node")),
        ("gateway is a service", "gateway", "language", ("go", "node")),
    ],
)
def test_a_hedge_a_plan_or_a_text_naming_no_value_is_unread_but_not_irrelevant(
    text, subject, predicate, values
):
    reading = read(text, subject, predicate, values)
    assert reading.unread and not reading.irrelevant


def test_a_text_read_for_the_key_is_never_irrelevant():
    reading = read("Lee looks after checkout.", "checkout", "owners", ("@kim", "@lee"))
    assert reading.asserted == ("@lee",) and not reading.irrelevant


def test_the_semantic_reader_keeps_the_flag_of_the_rules_it_wraps():
    """An unread text is the rules' reading as it is: the model is never asked."""
    from healthd.reading.semantic import SemanticReader

    class NoModel:
        def encode(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("the model is not asked about an unread text")

    reader = SemanticReader(NoModel())
    reading = reader.read("Kim runs the search service", FactKey(*CHECKOUT), ("@kim", "@lee"))
    assert reading.unread and reading.irrelevant
