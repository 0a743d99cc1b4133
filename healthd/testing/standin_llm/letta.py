"""Stand-in for the LLM behind a Letta agent (``letta_v1_agent``), for offline tests (not a
model).

Letta sends each step of an agent's turn as one chat request with tools (OpenAI function
calling): a system message opening with Letta's ``<base_instructions>`` (``letta_v1``'s "You
are a helpful self-improving agent with advanced memory ...") and carrying the agent's core
memory as ``<memory_blocks>`` (each block ``<label>`` with its ``<description>`` and
``<value>``), then the conversation; the tools are the agent's (``memory_insert``,
``memory_replace``, ``archival_memory_insert``, ``archival_memory_search``, ...).

What it decides, as an attentive agent would, from the user's sentences and the memory it
holds (the same reading as the LangMem stand-in, :mod:`.langmem_manager`, the lines of the
first block that is not the ``persona`` standing for LangMem's existing memories):

- a sentence its block already holds (the same words) changes nothing;
- a sentence that replaces what a line says (``... (replacing X)``, or the same words with
  another ending) is ``memory_replace`` of that line by the sentence, and the sentence is
  also kept in archival memory (``archival_memory_insert``), as Letta's agents log what they
  learn;
- a sentence saying something is no longer true removes the line stating it
  (``memory_replace`` with an empty ``new_string``, Letta's way of deleting); archival memory
  has no delete tool, so nothing is taken out of it;
- any other sentence is ``memory_insert`` into the block and ``archival_memory_insert``.

Every call of a step is sent in one assistant message (parallel tool calls). Once the turn
has tool results after the user's message, it ends the turn with a short answer and no tool
call. One style: ``style`` and ``seed`` are taken and not used. A request with Letta's
prompt but no user message is refused, not guessed at; another product's prompt is not its
to answer (``None``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SYSTEM_MARK = "<base_instructions>"
AGENT_MARK = "You are a helpful self-improving agent"
DONE = "Noted."
_BLOCKS = re.compile(r"<memory_blocks>\n.*?\n\n(?P<body>.*)\n</memory_blocks>", re.DOTALL)
_BLOCK = re.compile(
    r"^<(?P<label>[A-Za-z0-9_\-]+)>\n<description>\n.*?</description>\n.*?"
    r"<value>\n(?P<value>.*?)\n</value>\n</(?P=label)>",
    re.DOTALL | re.MULTILINE,
)


class UnreadableTurn(ValueError):
    """Letta's prompt without a user message the stand-in can read."""


def respond(
    request: Mapping[str, Any], style: str = "verbatim", seed: int = 0
) -> dict[str, Any] | None:
    messages = request.get("messages")
    tools = _tool_names(request.get("tools"))
    if not isinstance(messages, list) or not messages or "memory_insert" not in tools:
        return None
    system = messages[0].get("content") if isinstance(messages[0], Mapping) else None
    if not isinstance(system, str) or SYSTEM_MARK not in system or AGENT_MARK not in system:
        return None
    users = [
        i for i, m in enumerate(messages) if isinstance(m, Mapping) and m.get("role") == "user"
    ]
    if not users:
        raise UnreadableTurn("the Letta stand-in found no user message in the conversation")
    last = users[-1]
    if any(isinstance(m, Mapping) and m.get("role") == "tool" for m in messages[last + 1 :]):
        return {"content": DONE, "tool_calls": []}
    from healthd.testing.standin_llm import message_text
    from healthd.testing.standin_llm.langmem_manager import _SENTENCE_END, _decide

    label, lines = _block(system)
    existing = {str(i): line for i, line in enumerate(lines) if line.strip()}
    calls: list[tuple[str, dict[str, Any]]] = []
    archival = "archival_memory_insert" in tools
    said = message_text([messages[last]])
    for part in _SENTENCE_END.split(said.strip()):
        sentence = part.strip()
        if not sentence:
            continue
        sentence = sentence if sentence.endswith((".", "!", "?")) else f"{sentence}."
        for name, arguments in _decide(sentence, existing, {"Memory", "PatchDoc", "RemoveDoc"}):
            if name == "Memory":
                calls.append(
                    ("memory_insert", {"label": label, "new_string": arguments["content"]})
                )
                existing[f"n{len(existing)}"] = arguments["content"]
                if archival:
                    calls.append(("archival_memory_insert", {"content": arguments["content"]}))
            elif name == "RemoveDoc":
                old = existing.pop(arguments["json_doc_id"])
                calls.append(
                    ("memory_replace", {"label": label, "old_string": old, "new_string": ""})
                )
            elif arguments.get("patches"):  # PatchDoc with its replacement
                new = str(arguments["patches"][0]["value"])
                old = existing[arguments["json_doc_id"]]
                existing[arguments["json_doc_id"]] = new
                calls.append(
                    ("memory_replace", {"label": label, "old_string": old, "new_string": new})
                )
                if archival:
                    calls.append(("archival_memory_insert", {"content": new}))
    if not calls:
        return {"content": DONE, "tool_calls": []}
    return {"content": None, "tool_calls": calls}


def _block(system: str) -> tuple[str, list[str]]:
    """The label and lines of the first core memory block that is not the persona."""
    found = _BLOCKS.search(system)
    for block in _BLOCK.finditer(found.group("body") if found else ""):
        if block.group("label") != "persona":
            return block.group("label"), block.group("value").split("\n")
    raise UnreadableTurn("the Letta stand-in found no memory block to keep facts in")


def _tool_names(tools: Any) -> set[str]:
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(str(function["name"]))
    return names
