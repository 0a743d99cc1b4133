"""The AgentCore emulator on 127.0.0.1 and an AWS environment with dummy credentials, so
real boto3 signs, serializes and parses every request."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from healthd.memory import build_memory, parse_target
from healthd.memory._agentcore_records import FILTER_KEYS
from healthd.memory.agentcore import AgentCoreMemory
from healthd.testing.agentcore import AgentCoreEmulator

MEMORY_ID = "healthd_shadow-a1b2c3d4e5"
PREFIX = "healthd/shadow"
DUMMY_AWS = {
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEDUMMY0000",
    "AWS_SECRET_ACCESS_KEY": "dummy-secret-never-logged-0123456789",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def no_aws_env() -> dict[str, str]:
    """The process environment without any AWS_* variable."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in DUMMY_AWS.items():
        monkeypatch.setenv(name, value)
    return dict(DUMMY_AWS)


@pytest.fixture
def emulator(aws_env: dict[str, str]) -> Iterator[AgentCoreEmulator]:
    with AgentCoreEmulator() as emu:
        emu.events.style = "verbatim"  # healthd's plumbing, not the stand-in's style, under test
        emu.create_memory(MEMORY_ID, indexed_keys=FILTER_KEYS)
        yield emu


def target_text(emu: AgentCoreEmulator, **switches: object) -> str:
    options: dict[str, object] = {
        "memory_id": MEMORY_ID,
        "namespace_prefix": PREFIX,
        "shadow": "on",
        "region": "us-east-1",
        "endpoint_url": emu.url,
        **switches,
    }
    return "agentcore:" + ",".join(f"{k}={v}" for k, v in options.items())


def agentcore(emu: AgentCoreEmulator, **switches: object) -> AgentCoreMemory:
    memory = build_memory(parse_target(target_text(emu, **switches)))
    assert isinstance(memory, AgentCoreMemory)
    return memory
