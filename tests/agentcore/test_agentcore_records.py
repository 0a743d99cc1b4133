"""Facts to AgentCore records and back: every subject and predicate survives the service's
metadata and namespace patterns."""

from __future__ import annotations

import base64
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from healthd.memory._agentcore_records import META_STRING, component, decode, encode

NAMESPACE_COMPONENT = re.compile(r"[a-zA-Z0-9_-]+")


@given(st.text(min_size=1, max_size=120))
def test_any_text_round_trips_through_a_metadata_string_value_or_is_refused_by_name(text):
    try:
        encoded = encode(text, "subject")
    except ValueError as exc:
        # only text whose base32 form passes the service's 256 characters (about 155 bytes
        # of UTF-8: 52 characters of CJK) is refused, and the message names the field
        assert len(base64.b32encode(text.encode())) > 256 - 4
        assert "subject" in str(exc) and "too long" in str(exc)
        return
    assert META_STRING.fullmatch(encoded) and 1 <= len(encoded) <= 256
    assert decode(encoded) == text


@given(st.text(min_size=1, max_size=120), st.text(min_size=1, max_size=120))
def test_namespace_components_fit_the_pattern_and_keep_keys_apart(a, b):
    assert NAMESPACE_COMPONENT.fullmatch(component(a))
    if a != b:
        assert component(a) != component(b)


def test_plain_names_stay_readable_and_lookalikes_of_the_encoding_are_encoded():
    assert encode("auth-service", "subject") == "auth-service"
    assert component("auth-service") == "auth-service"
    assert component("dependency:postgres").startswith("dependency_postgres-")
    assert decode(encode("b32:not-really", "subject")) == "b32:not-really"


def test_a_subject_too_long_for_the_service_is_refused_with_its_name():
    with pytest.raises(ValueError, match="subject 'xxxx"):
        encode("x" * 300 + ",", "subject")


#: The service's StringValue pattern as its regex dialects read ``\s``: ASCII whitespace
#: (written here from the model, apart from healthd's copy)
SERVICE_STRING_VALUE = re.compile(r"[a-zA-Z0-9\s._:/=+@-]*", re.ASCII)


@pytest.mark.parametrize("space", ["\u00a0", "\x1c", "\x1f", "\x85", "\u2003"])
def test_a_space_only_python_calls_one_is_encoded_not_sent_as_it_is(space):
    text = f"billing{space}team"
    encoded = encode(text, "subject")
    assert SERVICE_STRING_VALUE.fullmatch(encoded) and decode(encoded) == text
    assert encode("billing team", "subject") == "billing team"  # ASCII space: as it is
