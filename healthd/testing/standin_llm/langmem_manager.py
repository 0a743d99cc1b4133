"""Stand-in for the LLM behind LangMem 0.0.x's memory manager (trustcall's extractor), for
offline tests (not a model).

``create_memory_store_manager(...).invoke({"messages": ...})`` searches the store, then sends
one chat request with tools, as OpenAI function calling: a system message ("You are a memory
subroutine for an AI.", followed, when the store search found memories, by "Generate
JSONPatches to update the existing schema instances ..." and an ``<existing>`` block of
``<instance id=ID schema_type="Memory">{'content': '...'}</instance>``), a user message of
LangMem's instructions with the conversation inside ``<session_UUID>`` tags (each message as
LangChain's ``pretty_repr``, a ``Human Message`` banner then its text), and the tools
``Memory`` (insert: ``{"content": str}``), ``PatchDoc`` (update: ``json_doc_id``,
``planned_edits``, ``patches`` as JSON Patch) and, with ``enable_deletes``, ``RemoveDoc``
(``json_doc_id``). It answers with ``tool_calls`` whose arguments are JSON, as an OpenAI model
does.

What it decides, from the conversation's sentences as an attentive reader would (never from
healthd's keys; it parses no grammar of healthd's beyond plain English sentences):

- a sentence already held by an existing memory (the same words) changes nothing: with tools
  required, it calls ``PatchDoc`` on that memory with no patches (trustcall drops it);
- a sentence that says what it replaces (``... (replacing X)``) replaces the existing memory
  that begins with the same words and says ``X`` (or, when none says ``X``, the one that
  begins with the same four words or more; or the one saying ``X`` whose other words the
  sentence all says): ``PatchDoc`` ``replace /content``;
- a sentence saying that something is no longer true (``It is no longer true that S``)
  removes the memory stating ``S`` (``RemoveDoc``) when deletes are offered, and otherwise
  rewrites it to say it no longer holds (``PatchDoc``);
- a sentence beginning with the same four words or more as an existing memory but ending
  otherwise says that memory is outdated: ``PatchDoc`` ``replace /content``;
- any other sentence is a new memory (``Memory``), its text the sentence as said.

That is ``style="verbatim"``. ``style="varied"`` (the default, as for the other stand-ins)
reads the human messages as English (:func:`healthd.testing.standin_style.read`, clause by
clause) and the existing memories the same way, and writes what it decides as
:mod:`healthd.testing.standin_style` documents (reworded, merged, implicit subjects,
neighbours, invented values, dropped or stale facts, drawn from ``seed`` and the clause):

- a clause an existing memory already states (same subject, relation and value) changes
  nothing;
- a clause saying a fact no longer holds removes the memories stating it (``RemoveDoc``), or
  with deletes off rewrites them as the style says it; unless the draw drops it, or keeps
  the fact as still true (stale), when nothing changes;
- a clause about a subject and relation an existing memory has, with another value (the
  one it replaces first), patches that memory with the style's text (a neighbour's memory,
  when drawn, is inserted beside);
- any other clause is inserted as the style's memories (none when dropped).

A request carrying LangMem's tools but no session it can read is refused with an error, not
guessed at; another product's prompt is not its to answer (``None``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from healthd.testing import standin_style

SYSTEM_MARK = "You are a memory subroutine for an AI."
_SESSION = re.compile(r"<session_[^>]+>\n(?P<body>.*?)\n</session_[^>]+>", re.DOTALL)
_BANNER = re.compile(r"^=+ (?P<role>[A-Za-z ]+?) Message =+$", re.MULTILINE)
_INSTANCE = re.compile(
    r'<instance id=(?P<id>\S+) schema_type="(?P<kind>[^"]*)">\n(?P<body>.*?)\n</instance>',
    re.DOTALL,
)
_REPLACING = re.compile(r"\s*\(replacing (?P<old>[^)]*)\)\s*$")
_NO_LONGER = re.compile(r"^it is no longer true that (?P<rest>.+)$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z@])|;\s+")


class UnreadableSession(ValueError):
    """LangMem's prompt without a conversation the stand-in can read."""


def respond(
    request: Mapping[str, Any],
    style: str = standin_style.DEFAULT_STYLE,
    seed: int = standin_style.DEFAULT_SEED,
) -> dict[str, Any] | None:
    """The assistant message (``tool_calls``) answering LangMem's request in ``style``, or
    None when the request is not LangMem's."""
    messages = request.get("messages")
    tools = _tool_names(request.get("tools"))
    if not isinstance(messages, list) or "Memory" not in tools or not messages:
        return None
    first = messages[0]
    system = first.get("content") if isinstance(first, Mapping) else None
    if not isinstance(system, str) or not system.startswith(SYSTEM_MARK):
        return None
    from healthd.testing.standin_llm import message_text

    text = message_text(messages)
    session = _SESSION.search(text)
    if session is None:
        raise UnreadableSession("the LangMem stand-in found no <session_...> in the prompt")
    existing = _existing(system)
    calls: list[tuple[str, dict[str, Any]]] = []
    if style == "varied":
        for said in _human_messages(session.group("body")):
            calls.extend(_varied(said, existing, tools, seed))
    else:
        for sentence in _human_sentences(session.group("body")):
            calls.extend(_decide(sentence, existing, tools))
    if not calls and request.get("tool_choice") in ("required", "any") and existing:
        first_id = next(iter(existing))
        calls.append(("PatchDoc", _patch(first_id, "Nothing new to record.", [])))
    return {"content": None, "tool_calls": calls}


def _decide(
    sentence: str, existing: dict[str, str], tools: set[str]
) -> list[tuple[str, dict[str, Any]]]:
    said = sentence.strip()
    negated = _NO_LONGER.match(said.rstrip("."))
    if negated:
        target = _norm(negated.group("rest"))
        held = [i for i, content in existing.items() if _norm(content) == target]
        if not held:
            return []  # nothing remembered that this ends
        if "RemoveDoc" in tools:
            return [("RemoveDoc", {"json_doc_id": i}) for i in held]
        plan = "The memory no longer holds; say so."
        return [("PatchDoc", _patch(i, plan, [_replace(said)])) for i in held]
    replacing = _REPLACING.search(said.rstrip("."))
    new_text = _REPLACING.sub("", said.rstrip(".")) + "." if replacing else said
    same = [i for i, content in existing.items() if _norm(content) == _norm(new_text)]
    if same:
        return [("PatchDoc", _patch(same[0], "Already recorded; nothing to change.", []))]
    if replacing:
        old = replacing.group("old").lower()
        saying_old = {i: c for i, c in existing.items() if old in c.lower()}
        best = _best_prefix(new_text, saying_old) or _rest_said(new_text, old, saying_old)
        if best is None:  # the memory it replaces was itself said differently since
            best = _best_prefix(new_text, existing, least=4)
        if best is not None and "PatchDoc" in tools:
            plan = f"The new information replaces {replacing.group('old')}: replace /content."
            return [("PatchDoc", _patch(best, plan, [_replace(new_text)]))]
    elif "PatchDoc" in tools:
        best = _best_prefix(new_text, existing, least=4)
        if best is not None:  # the same thing said with another ending: the memory is outdated
            plan = "The existing memory is outdated: replace /content with the new statement."
            return [("PatchDoc", _patch(best, plan, [_replace(new_text)]))]
    return [("Memory", {"content": new_text})]


def _varied(
    said: str, existing: dict[str, str], tools: set[str], seed: int
) -> list[tuple[str, dict[str, Any]]]:
    """The varied style's decisions on one human message, clause by clause."""
    known = {i: standin_style.read(content) for i, content in existing.items()}
    claims = standin_style.read(said)
    day = next(iter(standin_style.dates(said)), None)
    calls: list[tuple[str, dict[str, Any]]] = []
    for index, claim in enumerate(claims):
        context = [c for cs in known.values() for c in cs]
        context += [*claims[:index], *claims[index + 1 :]]
        value = claim.value.casefold()
        if any(_restates(claim, c) for cs in known.values() for c in cs):
            continue  # already held
        memories = standin_style.write(
            claim, seed=seed, key=f"{said}#{index}", context=context, said=said, day=day
        )
        if claim.negated:
            held = [i for i, cs in known.items()
                    if any(c.topic == claim.topic and c.value.casefold() == value
                           and not c.negated for c in cs)]  # fmt: skip
            if not memories or not memories[0].claim.negated:
                continue  # dropped, or kept as still true (stale)
            for doc_id in held:
                if "RemoveDoc" in tools:
                    calls.append(("RemoveDoc", {"json_doc_id": doc_id}))
                elif "PatchDoc" in tools:
                    plan = "The memory no longer holds; say so."
                    calls.append(("PatchDoc", _patch(doc_id, plan, [_replace(memories[0].text)])))
            continue
        same_topic = sorted(
            (i for i, cs in known.items() if any(c.topic == claim.topic for c in cs)),
            key=lambda i: (
                not any(c.value.casefold() == (claim.old or "").casefold() for c in known[i])
            ),
        )
        if memories and same_topic and "PatchDoc" in tools:
            plan = "The existing memory is outdated: replace /content with the new statement."
            calls.append(("PatchDoc", _patch(same_topic[0], plan, [_replace(memories[0].text)])))
            memories = memories[1:]
        calls.extend(("Memory", {"content": m.text}) for m in memories)
    return calls


def _restates(new: standin_style.Claim, old: standin_style.Claim) -> bool:
    return (new.topic, new.value.casefold(), new.negated) == (
        old.topic,
        old.value.casefold(),
        old.negated,
    )


def _best_prefix(text: str, candidates: Mapping[str, str], least: int = 2) -> str | None:
    """The candidate sharing the longest run of leading words with ``text`` (``least`` at
    least)."""
    words = _norm(text).split()
    best: tuple[int, str] | None = None
    for doc_id, content in sorted(candidates.items()):
        theirs = _norm(content).split()
        shared = 0
        for a, b in zip(words, theirs, strict=False):
            if a != b:
                break
            shared += 1
        if shared >= least and (best is None or shared > best[0]):
            best = (shared, doc_id)
    return best[1] if best else None


def _rest_said(text: str, old: str, candidates: Mapping[str, str]) -> str | None:
    """The candidate that, ``old`` left out, says nothing ``text`` does not (``@alice is on
    call for payments`` for ``@frank is on call for payments (replacing @alice)``)."""
    words = set(_norm(text).split())
    for doc_id, content in sorted(candidates.items()):
        rest = set(_norm(content.lower().replace(old, " ")).split())
        if rest and rest <= words:
            return doc_id
    return None


def _patch(doc_id: str, plan: str, patches: list[dict[str, Any]]) -> dict[str, Any]:
    return {"json_doc_id": doc_id, "planned_edits": plan, "patches": patches}


def _replace(text: str) -> dict[str, Any]:
    return {"op": "replace", "path": "/content", "value": text}


def _norm(text: str) -> str:
    return " ".join(text.strip().rstrip(".").lower().split())


def _tool_names(tools: Any) -> set[str]:
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            names.add(str(function["name"]))
    return names


def _existing(system: str) -> dict[str, str]:
    """The existing memories LangMem listed, by id: their ``content`` text."""
    found: dict[str, str] = {}
    for instance in _INSTANCE.finditer(system):
        body = instance.group("body").strip()
        try:
            value = ast.literal_eval(body)  # LangMem writes the dict's Python repr
        except (ValueError, SyntaxError):
            try:
                value = json.loads(body)
            except ValueError:
                raise UnreadableSession(
                    f"an existing memory is unreadable: {body[:80]!r}"
                ) from None
        content = value.get("content") if isinstance(value, Mapping) else value
        found[instance.group("id")] = str(content)
    return found


def _human_messages(session: str) -> Sequence[str]:
    """The text of each of the session's human messages, in order."""
    marks = list(_BANNER.finditer(session))
    if not marks:
        raise UnreadableSession("the LangMem stand-in found no message in the session")
    return [
        session[mark.end() : nxt.start() if nxt else len(session)].strip()
        for mark, nxt in zip(marks, [*marks[1:], None], strict=True)
        if mark.group("role").strip() == "Human"
    ]


def _human_sentences(session: str) -> Sequence[str]:
    """The sentences of the session's human messages, in order."""
    marks = list(_BANNER.finditer(session))
    if not marks:
        raise UnreadableSession("the LangMem stand-in found no message in the session")
    sentences: list[str] = []
    for mark, nxt in zip(marks, [*marks[1:], None], strict=True):
        if mark.group("role").strip() != "Human":
            continue
        body = session[mark.end() : nxt.start() if nxt else len(session)].strip()
        for part in _SENTENCE_END.split(body):
            part = part.strip()
            if part:
                sentences.append(part if part.endswith((".", "!", "?")) else f"{part}.")
    return sentences
