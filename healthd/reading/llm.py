"""The LLM reader: a judge behind an OpenAI-compatible chat-completions endpoint the team
names (``base_url``, ``model``, ``token_env``), asked at temperature 0 for JSON.

Its label carries the model id (``llm-2:gpt-4o-mini-2024-07-18``), so a changed model is a
changed probe-set version, never a silent drift. A judge that is down, or answers anything
but the JSON asked for (or values that are not among those it was given), is one
:class:`ReaderError` line: a failed run, never a guess. The answer is read as real
endpoints write it: the JSON as the message's content, or inside one Markdown code fence
(an endpoint that ignores ``response_format``, as Anthropic's OpenAI compatibility layer
does), after a reasoning model's leading ``<think>...</think>`` block; a refusal
(``message.refusal``) and an answer cut off at the token limit (``finish_reason``
``length``) are named as such.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import requests
from pydantic import ConfigDict, Field, ValidationError, field_validator

from healthd import _json
from healthd._http import HttpClient, HttpError, HttpOptions, check_http_url
from healthd.errors import ReaderError, first_problem, shorten
from healthd.llm_usage import LLMUsage, tokens_of
from healthd.model import FactKey
from healthd.reading import Reading, register_reader

NAME = "llm"
VERSION = "2"  # the prompt's version: a changed prompt is a changed reader

SYSTEM = (
    "You read one text that a memory system served to an assistant, and say what it states "
    "about one key of a project: which of the key's listed values the text asserts as "
    "current, and which it negates or presents as past (replaced, dropped, formerly, until). "
    "A value the text does not mention, or only proposes, plans or asks about, is in neither "
    "list. Treat @handles and bare names as the same person, and version spellings "
    "(v1.2, 1.2.0) as the same version. A text about another subject than the key's says "
    "nothing of the key. If the text asserts as current a value for the key that is not "
    "among the listed ones, put it in 'other', spelled as the text spells it. Answer with "
    'JSON only: {"asserts": [...], "negates": [...], "other": [...]}, each listed value '
    "written exactly as listed."
)


class LlmReaderOptions(HttpOptions):
    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    token_env: str | None = None
    max_retries: int = Field(2, ge=0, le=10)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_http_url(value, "http://127.0.0.1:11434/v1")


class LlmReader:
    name = NAME
    version = VERSION

    def __init__(
        self,
        options: LlmReaderOptions,
        *,
        session: requests.Session | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        token = environ.get(options.token_env, "") if options.token_env else ""
        if options.token_env and not token:
            raise ReaderError(
                f"reader 'llm': environment variable {options.token_env!r} (token_env) is not set"
            )
        self.options = options
        # the judge's calls, taken by the replay of the target whose served items it read
        self.usage = LLMUsage()
        self._client = HttpClient(
            session or requests.Session(),
            options,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            secrets=(token,),
        )

    @property
    def label(self) -> str:
        return f"{self.name}-{self.version}:{self.options.model}"

    def read(self, text: str, key: FactKey, values: Sequence[str]) -> Reading:
        question = {
            "subject": key.subject,
            "predicate": key.predicate,
            "values": list(values),
            "text": text,
        }
        body = {
            "model": self.options.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": json.dumps(question, ensure_ascii=False)},
            ],
        }
        where = f"reader 'llm' at {self.options.base_url}"
        self.usage.sent("judge")  # counted as sent: a failed call may cost all the same
        try:
            data = self._client.post_json(self.options.base_url + "/chat/completions", body).data
        except HttpError as exc:
            raise ReaderError(f"{where}: {exc}") from None
        self.usage.answered("judge", tokens_of(data))
        return _reading(data, values, where)


_FENCED = re.compile(r"\A```[A-Za-z]*[ \t]*\n(.*?)\n?```\Z", re.S)
_THINK = re.compile(r"\A\s*<think>.*?</think>", re.S)


def _reading(data: Any, values: Sequence[str], where: str) -> Reading:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        content = message["content"]
    except (KeyError, IndexError, TypeError):
        raise ReaderError(
            f"{where}: not a chat completion (no choices[0].message.content)"
        ) from None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if isinstance(refusal, str) and refusal:
        raise ReaderError(f"{where}: the judge refused: {shorten(refusal, 120)!r}")
    if not isinstance(content, str):
        raise ReaderError(f"{where}: choices[0].message.content is not text")
    if isinstance(choice, dict) and choice.get("finish_reason") == "length":
        raise ReaderError(
            f"{where}: the answer was cut off at the token limit (finish_reason 'length')"
        )
    text = _THINK.sub("", content).strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        answer = _json.loads(text)
    except _json.BadJSON:
        raise ReaderError(f"{where}: the answer is not JSON: {shorten(content, 120)!r}") from None
    if not isinstance(answer, dict):
        raise ReaderError(f"{where}: the answer is not a JSON object")
    known = set(values)
    out: list[tuple[str, ...]] = []
    for name in ("asserts", "negates", "other"):
        listed = answer.get(name, [])
        if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
            raise ReaderError(f"{where}: '{name}' is not a list of strings")
        if name == "other":
            listed = [v.strip() for v in listed if v.strip()]
            among = sorted(set(listed) & known)
            if among:
                raise ReaderError(f"{where}: 'other' names {among}, which are the key's values")
        else:
            stray = sorted(set(listed) - known)
            if stray:
                raise ReaderError(f"{where}: '{name}' names {stray}, not among the key's values")
        out.append(tuple(dict.fromkeys(listed)))
    asserted, negated, other = out
    return Reading(asserted, tuple(v for v in negated if v not in asserted), other)


@register_reader(NAME)
def llm_reader(options: Mapping[str, str]) -> LlmReader:
    try:
        opts = LlmReaderOptions.model_validate(dict(options))
    except ValidationError as exc:
        field, message = first_problem(exc)
        raise ReaderError(f"reader 'llm': option {field or 'options'}: {message}") from None
    return LlmReader(opts)
