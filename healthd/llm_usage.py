"""What healthd's runs cost in LLM and embedding calls: counted per target and purpose.

A call is counted when it is sent (every attempt: a retry is a call the endpoint answers,
and bills, again); its prompt and completion tokens are added when the answer reports them
(OpenAI-style ``usage``: ``prompt_tokens``/``completion_tokens`` on chat completions and
embeddings, ``input_tokens``/``output_tokens`` on the Responses API). A call whose answer
reports none (an error, a stream, an endpoint that does not say) is counted in
``calls_without_usage``, so the token sums say how much of them they cover.

The purpose is read from the request itself, never guessed from what healthd meant to do:
the path (``/embeddings``), then the product's own prompt (Mem0's extraction and update
prompts), then the structured answer the request asks for (Graphiti names its pydantic
response model). A request none of these name is ``unknown``.

Pure: no I/O, no clock; the edges that see the requests (a counting HTTP client handed to
the product, healthd's own judge) call :meth:`LLMUsage.sent` and :meth:`LLMUsage.answered`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from healthd.llm_budget import LLMBudget

#: The purposes a call is counted under, in the order they are shown.
PURPOSES = (
    "extraction",
    "update_decision",
    "dedupe",
    "summary",
    "rerank",
    "judge",
    "embedding",
    "ingest",
    "search",
    "unknown",
)

#: Mem0 2.2's prompts (``mem0/configs/prompts.py``), by the sentence each opens its system
#: message with.
_MEM0_PROMPTS = (
    ("You are a Memory Extractor", "extraction"),  # ADDITIVE_EXTRACTION_PROMPT
    ("You are a Personal Information Organizer", "extraction"),  # FACT_RETRIEVAL_PROMPT
    ("You are an Assistant Information Organizer", "extraction"),  # agent memories
    ("You are a smart memory manager", "update_decision"),  # DEFAULT_UPDATE_MEMORY_PROMPT
)

#: LangMem 0.0.x's memory manager (``langmem/knowledge/extraction.py``): its extraction
#: (trustcall's, with the Memory/PatchDoc/RemoveDoc tools) and its query model's searches.
_LANGMEM_PROMPTS = (
    ("You are a memory subroutine for an AI.", "extraction"),
    ("Use parallel tool calling to search for distinct memories", "search"),
)

#: graphiti-core 0.31's response models (``graphiti_core/prompts``), by what they ask for.
_GRAPHITI_MODELS = {
    "ExtractedEntities": "extraction",
    "ExtractedEdges": "extraction",
    "CombinedExtraction": "extraction",
    "EdgeTimestamps": "extraction",
    "BatchEdgeTimestamps": "extraction",
    "NodeResolutions": "dedupe",
    "NodeDuplicate": "dedupe",
    "EdgeDuplicate": "dedupe",
    "SummarizedEntities": "summary",
    "EntitySummary": "summary",
    "Summary": "summary",
    "SummaryDescription": "summary",
    "SagaSummary": "summary",
}

#: graphiti-core's OpenAI reranker asks whether a passage is relevant to a query.
_RERANK_MARK = "determining whether the passage is relevant to the query"


def purpose_of(path: str, body: Any, judge: bool = False) -> str:
    """What a request to an LLM or embedding endpoint is for, read from its path and JSON
    body; ``judge``: healthd's own reader sent it."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/embeddings"):
        return "embedding"
    if judge:
        return "judge"
    if not isinstance(body, Mapping):
        return "unknown"
    model = _response_model(body)
    if model in _GRAPHITI_MODELS:
        return _GRAPHITI_MODELS[model]
    text = _prompt_text(body)
    for mark, purpose in (*_MEM0_PROMPTS, *_LANGMEM_PROMPTS):
        if mark in text:
            return purpose
    if _RERANK_MARK in text:
        return "rerank"
    for name, purpose in _GRAPHITI_MODELS.items():  # json_object mode: the schema is in the text
        if f'"title": "{name}"' in text:
            return purpose
    return "unknown"


def _response_model(body: Mapping[str, Any]) -> str | None:
    """The name of the structured answer asked for: ``response_format.json_schema.name``
    (chat completions) or ``text.format.name`` (the Responses API)."""
    for outer, inner in (("response_format", "json_schema"), ("text", "format")):
        options = body.get(outer)
        if isinstance(options, Mapping):
            schema = options.get(inner)
            if isinstance(schema, Mapping) and isinstance(schema.get("name"), str):
                return str(schema["name"])
    return None


def _prompt_text(body: Mapping[str, Any]) -> str:
    parts: list[str] = []
    if isinstance(body.get("instructions"), str):
        parts.append(body["instructions"])
    for key in ("messages", "input"):
        given = body.get(key)
        if isinstance(given, str):
            parts.append(given)
        elif isinstance(given, list):
            for message in given:
                content = message.get("content") if isinstance(message, Mapping) else None
                if isinstance(content, str):
                    parts.append(content)
                elif isinstance(content, list):
                    parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "\n".join(parts)


def tokens_of(answer: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens an answer's ``usage`` reports, or None when it has none."""
    usage = answer.get("usage") if isinstance(answer, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    completion = usage.get("completion_tokens", usage.get("output_tokens", 0))
    if not _count(prompt) or not _count(completion):
        return None
    return int(prompt), int(completion)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_body(data: bytes) -> Any:
    """A request or answer body as JSON, or None when it is not."""
    try:
        return json.loads(data) if data else None
    except (ValueError, UnicodeDecodeError):
        return None


_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "calls_without_usage")


def empty_block(not_counted: Iterable[str] = ()) -> dict[str, Any]:
    """The ``llm`` block of a target that caused no call."""
    return {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "calls_without_usage": 0,
        "by_purpose": {},
        "not_counted": list(not_counted),
    }


def add_blocks(a: Mapping[str, Any] | None, b: Mapping[str, Any]) -> dict[str, Any]:
    """Two ``llm`` blocks summed (a daemon's total over its runs); ``b``'s notes kept."""
    out = empty_block(b.get("not_counted") or ())
    for block in (a or {}, b):
        for name in _FIELDS:
            out[name] += int(block.get(name) or 0)
        for purpose, row in (block.get("by_purpose") or {}).items():
            into = out["by_purpose"].setdefault(purpose, dict.fromkeys(_FIELDS, 0))
            for name in _FIELDS:
                into[name] += int(row.get(name) or 0)
    out["by_purpose"] = _ordered(out["by_purpose"])
    if "sweeps" in b:
        out["sweeps"] = b["sweeps"]
    return out


def _ordered(rows: Mapping[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    rank = {p: i for i, p in enumerate(PURPOSES)}
    return {p: rows[p] for p in sorted(rows, key=lambda p: (rank.get(p, len(rank)), p))}


def summary_text(block: Mapping[str, Any] | None) -> str | None:
    """One line for a page: ``12 LLM calls (extraction 4, embedding 8), 900 prompt + 120
    completion tokens``; None when the block counts no call and notes nothing."""
    if not block:
        return None
    calls = int(block.get("calls") or 0)
    notes = list(block.get("not_counted") or ())
    if not calls and not notes:
        return None
    rows = block.get("by_purpose") or {}
    parts = ", ".join(f"{p} {r['calls']}" for p, r in rows.items())
    text = f"{calls} LLM/embedding call{'' if calls == 1 else 's'}"
    if parts:
        text += f" ({parts})"
    if calls:
        text += (
            f", {block.get('prompt_tokens', 0)} prompt + "
            f"{block.get('completion_tokens', 0)} completion tokens"
        )
        without = int(block.get("calls_without_usage") or 0)
        if without:
            text += f" ({without} call{'' if without == 1 else 's'} reported none)"
    if notes:
        text += "; not counted: " + "; ".join(notes)
    return text


def take_reader_block(reader: Any) -> dict[str, Any] | None:
    """The calls a reader (healthd's LLM judge) made since the last time, if it counts any
    (its ``usage``), counting again from nothing; None for a reader that calls nothing."""
    usage = getattr(reader, "usage", None)
    return usage.take() if isinstance(usage, LLMUsage) else None


class LLMUsage:
    """One target's calls, by purpose; safe to count from several threads (Mem0 embeds in
    a thread pool). ``not_counted`` says what healthd causes but cannot see."""

    def __init__(self, not_counted: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, int]] = {}
        self.not_counted = list(not_counted)
        # the target's budgets (healthd.llm_budget), asked before each call; ``writing``:
        # the memory is applying an event (its calls may be refused), not answering a probe
        self.budget: LLMBudget | None = None
        self.writing = False
        # how the memory is told a revalidation sweep (healthd.memory.SweepBatching), said
        # in the block as ``sweeps``; None for a memory without the option
        self.sweeps: str | None = None

    def sent(self, purpose: str, writing: bool | None = None) -> None:
        """A call is about to be sent: counted, or refused by a budget (raised, not sent).
        ``writing``: whether a write sends it (a budget may refuse it); by default, whether
        the memory is applying an event (:attr:`writing`)."""
        if self.budget is not None:
            self.budget.admit(self.writing if writing is None else writing)
        with self._lock:
            self._row(purpose)["calls"] += 1

    def before_turn(self, calls: int) -> None:
        """A write is about to make up to ``calls`` calls counted only once made
        (:meth:`healthd.llm_budget.LLMBudget.admit_turn`): refused (raised) past a budget."""
        if self.budget is not None:
            self.budget.admit_turn(calls)

    def answered(self, purpose: str, tokens: tuple[int, int] | None) -> None:
        if tokens is None:
            return
        if self.budget is not None:
            self.budget.spent(tokens[0] + tokens[1])
        with self._lock:
            row = self._row(purpose)
            row["prompt_tokens"] += tokens[0]
            row["completion_tokens"] += tokens[1]
            row["_reported"] += 1

    def _row(self, purpose: str) -> dict[str, int]:
        row = self._rows.get(purpose)
        if row is None:
            row = self._rows[purpose] = {
                "calls": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "_reported": 0,
            }
        return row

    def block(self) -> dict[str, Any]:
        """The ``llm`` block of the JSON report: totals, and the same by purpose."""
        with self._lock:
            rows = {
                p: {
                    "calls": r["calls"],
                    "prompt_tokens": r["prompt_tokens"],
                    "completion_tokens": r["completion_tokens"],
                    "calls_without_usage": max(0, r["calls"] - r["_reported"]),
                }
                for p, r in self._rows.items()
            }
        out = empty_block(self.not_counted)
        for row in rows.values():
            for name in _FIELDS:
                out[name] += row[name]
        out["by_purpose"] = _ordered(rows)
        if self.sweeps is not None:
            out["sweeps"] = self.sweeps
        return out

    def take(self) -> dict[str, Any]:
        """:meth:`block`, and counting starts again from nothing (a daemon's run)."""
        with self._lock:
            taken = LLMUsage(self.not_counted)
            taken.sweeps = self.sweeps
            taken._rows, self._rows = self._rows, {}
        return taken.block()
