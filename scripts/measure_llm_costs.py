"""Measure what each event kind costs an LLM-backed target in LLM and embedding calls and
tokens, on the bundled example through the stand-in LLM (healthd.testing.standin_llm, not a
model), and write healthd/data/llm_costs.json, which `healthd check-config --estimate` reads.

    python scripts/measure_llm_costs.py            # rewrites healthd/data/llm_costs.json
    python scripts/measure_llm_costs.py --print    # prints it instead

Each event of the example is replayed as the daemon replays it (healthd.evaluator.Replay, the
default incremental mode, one stage per event) and the calls counted around that one step
(healthd.llm_usage, the accounting behind `targets[].llm`) are put down to the event's kind:
`added`, `revised`, `invalidated`, `revalidated`, and `sweep` (a revalidation a source
stamps on its own schedule). A step's calls are the write's (the product's extraction,
update decisions, embeddings) and the reads that score the stage after it (probe searches).
Token figures are the stand-in's: it reports words as tokens and writes its own answers, so
a real model's tokenizer and answers give other token counts; the call counts are the
product's own pipeline's.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")

from healthd.cli import _load_events
from healthd.estimate import kind_of
from healthd.evaluator import Replay
from healthd.llm_usage import LLMUsage
from healthd.memory import LLMCounting, TargetSpec, build_memory
from healthd.probes import build_probe_set
from healthd.testing.standin_llm import StandInLLM
from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE

OUT = Path(__file__).resolve().parent.parent / "healthd" / "data" / "llm_costs.json"
KEY_VAR = "HEALTHD_MEASURE_LLM_KEY"


def _mem0_table(base_url: str) -> dict[str, Any]:
    openai = {"openai_base_url": base_url, "api_key_env": KEY_VAR}
    return {
        "llm": {"provider": "openai", "config": {"model": "healthd-standin", **openai}},
        "embedder": {
            "provider": "openai",
            "config": {"model": "healthd-hashing", "embedding_dims": 256, **openai},
        },
    }


def _graphiti_table(base_url: str) -> dict[str, Any]:
    model = "healthd-standin"
    return {
        "llm": {
            "client": "openai_generic",
            "model": model,
            "small_model": model,
            "base_url": base_url,
        },
        "embedder": {
            "provider": "openai",
            "model": "healthd-hashing",
            "base_url": base_url,
            "dimensions": 256,
        },
    }


#: The profiles measured: the name `check-config --estimate` looks a target up by
#: (healthd.estimate.profile_of), and the target built to measure it.
PROFILES = {
    "graphiti:episodes": lambda url: TargetSpec(
        "graphiti",
        {"ingest": "episodes", "graphiti": _graphiti_table(url)},  # type: ignore[dict-item]
    ),
    "mem0:messages": lambda url: TargetSpec(
        "mem0", {"ingest": "messages", "mem0": _mem0_table(url)}
    ),  # type: ignore[dict-item]
}


def _add(into: dict[str, Any], block: dict[str, Any]) -> None:
    for name in ("calls", "prompt_tokens", "completion_tokens"):
        into[name] = into.get(name, 0) + int(block[name])
    for purpose, row in block["by_purpose"].items():
        mine = into.setdefault("by_purpose", {}).setdefault(purpose, {})
        for name in ("calls", "prompt_tokens", "completion_tokens"):
            mine[name] = mine.get(name, 0) + int(row[name])


def measure(spec: TargetSpec) -> dict[str, Any]:
    """The example replayed into ``spec``'s memory: each write's calls by its event's kind,
    the reads' calls per probe asked, and how many probes the stages asked of how many were
    active."""
    events = _load_events(None)
    probes = build_probe_set(events)
    memory = build_memory(spec)
    writes: dict[str, dict[str, Any]] = {}
    reads: dict[str, Any] = {"answers": 0, "active_sum": 0}
    try:
        assert isinstance(memory, LLMCounting), spec.kind
        usage: LLMUsage = memory.llm_usage()
        usage.take()
        apply, answer = memory.apply, memory.answer

        def counted_apply(event: Any) -> None:
            _add(reads, usage.take())  # anything before the write (none expected)
            apply(event)
            row = writes.setdefault(kind_of(event), {"events": 0})
            row["events"] += 1
            _add(row, usage.take())

        def counted_answer(probe: Any, at: Any) -> Any:
            reads["answers"] += 1
            return answer(probe, at)

        memory.apply = counted_apply  # type: ignore[method-assign]
        memory.answer = counted_answer  # type: ignore[method-assign]
        replay = Replay(memory, probes)
        for event in events:
            replay.step(event)
            reads["active_sum"] += replay.active_probes
            _add(reads, usage.take())
    finally:
        memory.close()
    return {
        "events": len(events),
        "probes": len(probes.probes),
        "writes": writes,
        "reads": reads,
    }


@contextmanager
def _standin() -> Iterator[StandInLLM]:
    os.environ[KEY_VAR] = "standin-not-a-secret"
    with StandInLLM() as llm:
        yield llm


def main(argv: list[str]) -> int:
    with _standin() as llm:
        profiles = {name: measure(make(llm.base_url)) for name, make in PROFILES.items()}
    versions = {}
    for package in ("mem0ai", "graphiti-core"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:  # pragma: no cover
            versions[package] = None
    data = {
        "command": "python scripts/measure_llm_costs.py",
        "measured_on": "the bundled example (healthd/data/example_timeline.jsonl)",
        "llm": f"stand-in LLM (healthd.testing.standin_llm, style {DEFAULT_STYLE}, seed "
        f"{DEFAULT_SEED}): tokens are its words, answers its own",
        "versions": versions,
        "profiles": profiles,
    }
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if "--print" in argv:
        sys.stdout.write(text)
    else:
        OUT.write_text(text)
        print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
