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

That is ``style="verbatim"``. ``style="varied"`` (the default) reads the message as English
(:func:`healthd.testing.standin_style.read`) and writes each clause as an unkind LLM would
(reworded, merged, implicit, invented, dropped or stale, in the proportions
:mod:`healthd.testing.standin_style` documents), then acts on what it wrote the same way: a
value its block holds changes nothing, another value for a topic a line holds replaces the
line, a value said no longer to hold removes its line, anything else is a new line, and
every memory written is also inserted into archival memory.

Every call of a step is sent in one assistant message (parallel tool calls). Once the turn
has tool results after the user's message, it ends the turn with a short answer and no tool
call. A request with Letta's
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
    archival = "archival_memory_insert" in tools
    said = message_text([messages[last]])
    calls: list[tuple[str, dict[str, Any]]] = []
    if style == "varied":
        calls = _varied(said, label, lines, archival, seed)
        return (
            {"content": None, "tool_calls": calls} if calls else {"content": DONE, "tool_calls": []}
        )
    existing = {str(i): line for i, line in enumerate(lines) if line.strip()}
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


def _varied(
    said: str, label: str, lines: list[str], archival: bool, seed: int
) -> list[tuple[str, dict[str, Any]]]:
    """The varied style: each clause read is written as an unkind LLM would
    (:func:`healthd.testing.standin_style.write`), and the agent acts on what it wrote: a
    memory stating a value its block holds changes nothing, one stating another value for a
    topic a line holds replaces that line, one saying a value no longer holds removes the
    line stating it, any other is a new line; every memory written goes to archival memory."""
    from healthd.testing import standin_style

    held = [(line, standin_style.read(line)) for line in lines if line.strip()]
    claims = standin_style.read(said)
    calls: list[tuple[str, dict[str, Any]]] = []
    for index, claim in enumerate(claims):
        context = [*(c for _, cs in held for c in cs), *claims[:index], *claims[index + 1 :]]
        for memory in standin_style.write(
            claim, seed=seed, key=f"{said}#{index}", context=context, said=said
        ):
            stated = memory.claim
            same = [(line, cs) for line, cs in held if any(c.topic == stated.topic for c in cs)]
            value = stated.value.casefold()
            if stated.negated:
                for line, cs in same:
                    if any(c.value.casefold() == value and not c.negated for c in cs):
                        calls.append(("memory_replace", {"label": label, "old_string": line,
                                                         "new_string": ""}))  # fmt: skip
                        held.remove((line, cs))
            elif any(c.value.casefold() == value for _, cs in same for c in cs):
                continue  # already recorded
            elif same:
                line, cs = same[0]
                calls.append(("memory_replace", {"label": label, "old_string": line,
                                                 "new_string": memory.text}))  # fmt: skip
                held[held.index((line, cs))] = (memory.text, standin_style.read(memory.text))
            else:
                calls.append(("memory_insert", {"label": label, "new_string": memory.text}))
                held.append((memory.text, standin_style.read(memory.text)))
            if archival:
                calls.append(("archival_memory_insert", {"content": memory.text}))
    return calls


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
