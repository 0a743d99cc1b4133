"""The stand-in's answers to graphiti-core 0.31's prompts, for offline tests (not a model).

Graphiti asks its LLM for structured output: the request names the pydantic response model
(``response_format.json_schema.name`` on ``/chat/completions``, ``text.format.name`` on
``/responses``, or the schema's ``title`` written into the prompt in ``json_object`` mode).
Each model this module knows is answered in that model's JSON, read deterministically from
the prompt's own sections, and only from the sentences healthd renders for an episode
(:data:`healthd.memory.graphiti_episodes.STATEMENT`); anything else gets an empty, valid
answer, as a cautious model would give:

- ``ExtractedEntities`` (extract_nodes): the subject and every quoted value of the episode.
- ``NodeResolutions`` (dedupe_nodes): an extracted entity duplicates the existing entity
  of exactly the same name, else none.
- ``ExtractedEdges`` (extract_edges): one edge per sentence, subject to value, named by
  the predicate, stating the current value (or that a value no longer holds), valid from
  the episode's reference time; a sentence about existence alone names no relation.
- ``EdgeDuplicate`` (dedupe_edges.resolve_edge): a fact stating the same value of the same
  thing is a duplicate; one stating another value, or that this value no longer holds,
  contradicts it.
- ``SummarizedEntities`` (summaries): an entity's summary is the newest sentence naming it.
- ``EdgeTimestamps``: valid from the reference time.

That is ``style="verbatim"``, which reads healthd's episode grammar (kept so that figures
measured before styles existed reproduce exactly). ``style="varied"`` (the default) reads
the episode as English (:func:`healthd.testing.standin_style.read`), never by healthd's
grammar, and writes its edges as :mod:`healthd.testing.standin_style` documents: the fact
strings reworded, merged with another subject's fact, with the subject left as "it", an
edge credited to a neighbouring subject too, now and then an invented value, a dropped edge
or a stale one (the other subjects come from the previous episodes in the prompt). The
entities it extracts are the ends of those edges (the same draws: each is seeded by the
episode's own text), and ``EdgeDuplicate`` compares facts as read back from their text, so a
fact whose subject was left implicit contradicts nothing.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from healthd.memory.graphiti_episodes import STATEMENT
from healthd.testing import standin_style

_SPEAKER = re.compile(r"^[\w .@-]{1,40}: (?P<said>.+)$")
_SECTION = re.compile(r"<(?P<tag>[A-Z][A-Z_ ]*)>\n(?P<body>.*?)\n</(?P=tag)>", re.DOTALL)


def respond(
    request: Mapping[str, Any],
    style: str = standin_style.DEFAULT_STYLE,
    seed: int = standin_style.DEFAULT_SEED,
) -> str | None:
    """Graphiti's structured answer to the request, or None for another product's prompt."""
    from healthd.testing.standin_llm import message_text

    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    text = message_text(messages)
    model = _response_model(request, text) or ""
    answer = _ANSWERS.get(model)
    if answer is None:
        return None
    if style == "varied" and model in _VARIED:
        return json.dumps(_VARIED[model](_sections(text), seed))
    return json.dumps(answer(_sections(text)))


def _response_model(request: Mapping[str, Any], text: str) -> str | None:
    response_format = request.get("response_format")
    if isinstance(response_format, Mapping):
        schema = response_format.get("json_schema")
        if isinstance(schema, Mapping) and isinstance(schema.get("name"), str):
            return str(schema["name"])
    text_options = request.get("text")
    if isinstance(text_options, Mapping):
        format_ = text_options.get("format")
        if isinstance(format_, Mapping) and isinstance(format_.get("name"), str):
            return str(format_["name"])
    for name in _ANSWERS:  # json_object mode: the schema is in the prompt
        if f'"title": "{name}"' in text:
            return name
    return None


def _sections(text: str) -> dict[str, str]:
    """Each ``<TAG>`` … ``</TAG>`` block of the prompt, the first of each tag."""
    found: dict[str, str] = {}
    for match in _SECTION.finditer(text):
        found.setdefault(match["tag"], match["body"].strip())
    return found


def _statements(content: str) -> list[re.Match[str]]:
    """The sentences of an episode, one a line; in a ``message`` episode (``speaker:
    message``, as Graphiti and Zep take them) after the speaker."""
    found = []
    for line in content.splitlines():
        match = STATEMENT.match(line.strip())
        if match is None and (spoken := _SPEAKER.match(line.strip())):
            match = STATEMENT.match(spoken["said"])
        if match:
            found.append(match)
    return found


def _episode(sections: Mapping[str, str]) -> str:
    for tag in ("TEXT", "CURRENT MESSAGE", "CURRENT_MESSAGE", "JSON"):
        if tag in sections:
            return sections[tag]
    return ""


def _entities(sections: Mapping[str, str]) -> dict[str, Any]:
    names: list[str] = []
    for statement in _statements(_episode(sections)):
        for group in ("subject", "existing", "old", "new", "value"):
            name = statement[group]
            if name and name not in names:
                names.append(name)
    return {
        "extracted_entities": [
            {"name": name, "entity_type_id": 0, "episode_indices": [0]} for name in names
        ]
    }


def _node_resolutions(sections: Mapping[str, str]) -> dict[str, Any]:
    extracted = _json_list(sections.get("ENTITIES", "[]"))
    existing = _json_list(sections.get("EXISTING ENTITIES", "[]"))
    by_name = {str(e.get("name", "")).casefold(): e.get("candidate_id", -1) for e in existing}
    return {
        "entity_resolutions": [
            {
                "id": entity.get("id", index),
                "name": entity.get("name", ""),
                "duplicate_candidate_id": by_name.get(str(entity.get("name", "")).casefold(), -1),
            }
            for index, entity in enumerate(extracted)
        ]
    }


def _edges(sections: Mapping[str, str]) -> dict[str, Any]:
    reference = _reference_time(sections.get("REFERENCE_TIME", ""))
    edges = []
    for statement in _statements(_episode(sections)):
        if statement["existing"]:
            continue  # "x exists" relates x to nothing
        subject, phrase = statement["subject"], statement["phrase"]
        value = statement["new"] if statement["new"] is not None else statement["value"]
        negated = statement["verb"] == "is no longer"
        edges.append(
            {
                "source_entity_name": subject,
                "target_entity_name": value,
                "relation_type": re.sub(r"\W+", "_", phrase).strip("_").upper(),
                "fact": _fact(phrase, subject, value, negated),
                "valid_at": reference,
                "invalid_at": None,
                "episode_indices": [0],
            }
        )
    return {"edges": edges}


def _edge_duplicate(sections: Mapping[str, str]) -> dict[str, Any]:
    new = _claim(sections.get("NEW FACT", ""))
    existing = _python_list(sections.get("EXISTING FACTS", "[]"))
    candidates = _python_list(sections.get("FACT INVALIDATION CANDIDATES", "[]"))
    duplicates: list[int] = []
    contradicted: list[int] = []
    if new is not None:
        for entry in [*existing, *candidates]:
            old = _claim(str(entry.get("fact", "")))
            if old is None or old[:2] != new[:2]:
                continue
            index = int(entry.get("idx", -1))
            if old == new and entry in existing:
                duplicates.append(index)
            elif not old[3] and (new[2] != old[2] or new[3]):
                contradicted.append(index)  # another value now, or this one no longer
    return {"duplicate_facts": duplicates, "contradicted_facts": contradicted}


def _summaries(sections: Mapping[str, str]) -> dict[str, Any]:
    messages = sections.get("MESSAGES") or sections.get("EPISODES") or ""
    sentences = [line.strip() for line in _strings(messages) for line in line.splitlines()]
    summaries = []
    for entity in _json_list(sections.get("ENTITIES", "[]")):
        name = str(entity.get("name", ""))
        naming = [s for s in sentences if name and name in s]
        if naming:
            summaries.append({"name": name, "summary": naming[-1]})
    return {"summaries": summaries}


def _timestamps(sections: Mapping[str, str]) -> dict[str, Any]:
    return {"valid_at": _reference_time(sections.get("REFERENCE TIME", "")), "invalid_at": None}


_ANSWERS: dict[str, Callable[[Mapping[str, str]], dict[str, Any]]] = {
    "ExtractedEntities": _entities,
    "NodeResolutions": _node_resolutions,
    "ExtractedEdges": _edges,
    "EdgeDuplicate": _edge_duplicate,
    "SummarizedEntities": _summaries,
    "EdgeTimestamps": _timestamps,
}


def _fact(phrase: str, subject: str, value: str, negated: bool) -> str:
    verb = "is no longer" if negated else "is"
    return f'The {phrase} of {subject} {verb} "{value}".'


def _claim(fact: str) -> tuple[str, str, str, bool] | None:
    """(phrase, subject, value, negated) of a fact this module wrote."""
    match = STATEMENT.match(fact.strip())
    if match is None or match["phrase"] is None:
        return None
    value = match["new"] if match["new"] is not None else match["value"]
    return match["phrase"], match["subject"], value, match["verb"] == "is no longer"


def _reference_time(text: str) -> str | None:
    first = text.split("#", 1)[0].strip()
    return first or None


def _json_list(text: str) -> list[Mapping[str, Any]]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    return [d for d in data if isinstance(d, Mapping)] if isinstance(data, list) else []


def _python_list(text: str) -> list[Mapping[str, Any]]:
    """The dedupe prompt writes its fact lists as Python reprs."""
    try:
        data = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return []
    return [d for d in data if isinstance(d, Mapping)] if isinstance(data, list) else []


def _strings(text: str) -> Sequence[str]:
    """The episode contents in a prompt section of JSON lines (strings or dicts)."""
    out: list[str] = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        items = data if isinstance(data, list) else [data]
        for item in items:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, Mapping) and isinstance(item.get("content"), str):
                out.append(item["content"])
    return out


# -- style "varied": the episode read as English ------------------------------------------------


def _previous(sections: Mapping[str, str]) -> str:
    for tag in ("PREVIOUS MESSAGES", "PREVIOUS_MESSAGES"):
        if tag in sections:
            return "\n".join(_strings(sections[tag])) or sections[tag]
    return ""


def _varied_memories(sections: Mapping[str, str], seed: int) -> list[standin_style.Memory]:
    episode = _episode(sections)
    earlier = standin_style.read(_previous(sections))
    claims = standin_style.read(episode)
    out: list[standin_style.Memory] = []
    for index, claim in enumerate(claims):
        context = [*earlier, *claims[:index], *claims[index + 1 :]]
        out.extend(
            standin_style.write(
                claim, seed=seed, key=f"{episode}#{index}", context=context, said=episode
            )
        )
    return out


def _varied_entities(sections: Mapping[str, str], seed: int) -> dict[str, Any]:
    names: list[str] = []
    for memory in _varied_memories(sections, seed):
        for name in (memory.claim.subject, memory.claim.value):
            wanted = memory.claim.relation != "exists" or name == memory.claim.subject
            if wanted and name and name not in names:
                names.append(name)
    return {
        "extracted_entities": [
            {"name": name, "entity_type_id": 0, "episode_indices": [0]} for name in names
        ]
    }


def _varied_edges(sections: Mapping[str, str], seed: int) -> dict[str, Any]:
    reference = _reference_time(sections.get("REFERENCE_TIME", ""))
    known = {str(e.get("name", "")) for e in _json_list(sections.get("ENTITIES", "[]"))}
    edges = []
    for memory in _varied_memories(sections, seed):
        claim = memory.claim
        if claim.relation == "exists":
            continue  # existence relates the subject to nothing
        if known and not {claim.subject, claim.value} <= known:
            continue  # an end the entity extraction did not name
        edges.append(
            {
                "source_entity_name": claim.subject,
                "target_entity_name": claim.value,
                "relation_type": re.sub(r"\W+", "_", claim.relation).strip("_").upper(),
                "fact": memory.text,
                "valid_at": reference,
                "invalid_at": None,
                "episode_indices": [0],
            }
        )
    return {"edges": edges}


def _varied_duplicate(sections: Mapping[str, str], seed: int) -> dict[str, Any]:
    new = next(iter(standin_style.read(sections.get("NEW FACT", ""))), None)
    existing = _python_list(sections.get("EXISTING FACTS", "[]"))
    candidates = _python_list(sections.get("FACT INVALIDATION CANDIDATES", "[]"))
    duplicates: list[int] = []
    contradicted: list[int] = []
    if new is not None:
        for entry in [*existing, *candidates]:
            old = next(iter(standin_style.read(str(entry.get("fact", "")))), None)
            if old is None or old.topic != new.topic:
                continue
            index = int(entry.get("idx", -1))
            same = old.value.casefold() == new.value.casefold()
            if same and old.negated == new.negated and entry in existing:
                duplicates.append(index)
            elif not old.negated and (not same or new.negated):
                contradicted.append(index)
    return {"duplicate_facts": duplicates, "contradicted_facts": contradicted}


_VARIED: dict[str, Callable[[Mapping[str, str], int], dict[str, Any]]] = {
    "ExtractedEntities": _varied_entities,
    "ExtractedEdges": _varied_edges,
    "EdgeDuplicate": _varied_duplicate,
}
