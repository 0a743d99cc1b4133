"""An AgentCore answer that is not of the service model's shapes: botocore parses it by the
model but never checks its types, so before these were checked every one of these was an
exception out of boto3's parser or out of healthd (a type fuzz of the emulator's answers:
25 tracebacks in the first 33 mutations of a retrieve). Real boto3 against the emulator,
its answers to one operation changed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from agentcore_fixtures import DUMMY_AWS, MEMORY_ID, agentcore, no_aws_env, target_text
from timeline_builders import added, day, fact

from healthd.errors import MemoryAdapterError
from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.model import Probe
from healthd.testing.agentcore import AgentCoreEmulator

PROBE = Probe("p-auth-language", "language of auth?", "auth", "language", "tech")


class Mangling(AgentCoreEmulator):
    """The emulator with its answers to paths ending in ``path_end`` changed by ``mangle``."""

    def __init__(self, path_end: str, mangle) -> None:
        super().__init__()
        self.path_end, self.mangle = path_end, mangle

    def _dispatch(self, request, raw):
        status, payload = super()._dispatch(request, raw)
        if request.path.split("?")[0].endswith(self.path_end):
            payload = self.mangle(payload)
        return status, payload


def _probe_after_one_write(path_end, mangle):
    """One fact written and flushed, then the probe asked, with the answers to paths ending
    in ``path_end`` changed by ``mangle``."""
    with Mangling(path_end, mangle) as emulator:
        emulator.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        memory = agentcore(emulator, mode="native")
        memory.reset()
        memory.apply(added("a", 1, fact("auth", "language", "go")))
        memory.flush()
        return memory.answer(PROBE, day(2))


def _summaries(value):
    def mangle(payload):
        return {**payload, "memoryRecordSummaries": value}

    return mangle


def _first(field, value):
    def mangle(payload):
        rows = payload["memoryRecordSummaries"]
        if rows:
            rows[0][field] = value
        return payload

    return mangle


@pytest.mark.parametrize(
    ("mangle", "said"),
    [
        (lambda payload: None, "the answer is not of the AgentCore service model's shapes"),
        (_summaries(7), "the answer is not of the AgentCore service model's shapes"),
        (_summaries("x"), "the answer is not of the AgentCore service model's shapes"),
        (_summaries([None]), "field 'memoryRecordSummaries.0'"),
        (_first("memoryRecordId", ""), "field 'memoryRecordSummaries.0.memoryRecordId'"),
        (_first("namespaces", None), "field 'memoryRecordSummaries.0.namespaces'"),
        (lambda payload: {k: v for k, v in payload.items() if k != "memoryRecordSummaries"},
         "field 'memoryRecordSummaries'"),  # read as nothing served, before
        # botocore's own parser refuses these, with an exception of its own
        (_first("content", {}), "the answer is not of the AgentCore service model's shapes"),
        (_first("createdAt", 10**30), "the answer is not of the AgentCore service model's"),
    ],
)  # fmt: skip
def test_a_retrieve_answer_not_of_the_models_shapes_is_one_error_naming_it(aws_env, mangle, said):
    with pytest.raises(MemoryAdapterError) as raised:
        _probe_after_one_write("/retrieve", mangle)
    message = str(raised.value)
    assert message.startswith("agentcore memory: ") and said in message
    assert "\n" not in message and len(message) < 600


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("healthd_validated_at", {"numberValue": 1e30}),  # a time no calendar holds
        ("healthd_subject", {"stringValue": 7}),
        ("healthd_domain", {"stringValue": "weather"}),
    ],
)
def test_a_served_record_that_is_not_one_healthd_wrote_fails_the_answer(aws_env, field, value):
    """Under healthd's own prefix, filtered on its keys: before, such a record was skipped
    with a warning, and what was left scored as if measured (a better score)."""

    def damage(payload):
        for row in payload["memoryRecordSummaries"]:
            row["metadata"][field] = value
        return payload

    with pytest.raises(MemoryAdapterError, match="is not one healthd wrote for auth language"):
        _probe_after_one_write("/retrieve", damage)


@pytest.mark.parametrize(
    ("successful", "said"),
    [
        ({"memoryRecordId": 5}, "apply a: the answer is not of the AgentCore service model's"),
        ([{"memoryRecordId": 5, "status": "SUCCEEDED"}],
         "field 'successfulRecords.0.memoryRecordId'"),
    ],
)  # fmt: skip
def test_a_batch_answer_not_of_the_models_shapes_is_one_error(aws_env, successful, said):
    def mangle(payload):
        return {**payload, "successfulRecords": successful}

    with Mangling("/batchCreate", mangle) as emulator:
        emulator.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        memory = agentcore(emulator, mode="native")
        memory.reset()
        memory.apply(added("a", 1, fact("auth", "language", "go")))
        with pytest.raises(MemoryAdapterError, match=said):
            memory.flush()


def test_evaluate_says_it_in_one_line_and_exit_2(aws_env):
    with Mangling("/retrieve", _summaries([None])) as emulator:
        emulator.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        done = subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--target",
             target_text(emulator, mode="native")],
            capture_output=True, text=True, env={**no_aws_env(), **DUMMY_AWS}, timeout=300,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "field 'memoryRecordSummaries.0'" in lines[0]
    assert DUMMY_AWS["AWS_SECRET_ACCESS_KEY"] not in done.stderr + done.stdout
