"""A product's own OpenAI client, given a counting HTTP client: every request it sends to
the team's LLM or embedding endpoint is counted in an :class:`~healthd.llm_usage.LLMUsage`
as it goes, with the tokens the answer's ``usage`` reports.

The product still builds and calls its client as it would (Mem0's ``OpenAI`` clients,
Graphiti's ``AsyncOpenAI`` ones); only the HTTP client under it is the SDK's own default one
with two event hooks. Nothing is guessed: a client that is not OpenAI's is left alone and
said not to be counted. A streamed answer is counted as a call, its tokens not read (the
body is the product's to consume as it comes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from healthd.llm_budget import LLMBudgetExceeded
from healthd.llm_usage import LLMUsage, parse_body, purpose_of, tokens_of


def _request_purpose(request: Any) -> str:
    try:
        content = request.content
    except Exception:  # a streamed request body (an upload): nothing to read it by
        content = b""
    return purpose_of(request.url.path, parse_body(content))


def _streamed(response: Any) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def counting(client: Any, usage: LLMUsage, refusable: bool = True, **options: Any) -> Any | None:
    """``client`` (an ``openai.OpenAI`` or ``AsyncOpenAI``) as a copy whose requests are
    counted in ``usage``, with ``options`` (e.g. ``timeout``) set too; None when it is not
    an OpenAI client. ``refusable=False``: a budget counts its calls and never refuses them
    (a product that stores between two of them, where a refusal would store half a write)."""
    try:
        import openai
    except ImportError:  # pragma: no cover - every product extra brings it
        return None

    class Refused(openai.OpenAIError):
        """A budget refused the call: an OpenAI error, so the SDK raises it at once instead
        of retrying it as a connection error."""

    def admit(request: Any) -> None:
        try:
            usage.sent(_request_purpose(request), None if refusable else False)
        except LLMBudgetExceeded as exc:
            raise Refused(str(exc)) from exc

    if isinstance(client, openai.AsyncOpenAI):

        async def sent_async(request: Any) -> None:
            admit(request)

        async def answered_async(response: Any) -> None:
            if _streamed(response):
                return
            await response.aread()
            usage.answered(
                _request_purpose(response.request), tokens_of(parse_body(response.content))
            )

        hooks_async: dict[str, list[Any]] = {"request": [sent_async], "response": [answered_async]}
        http: Any = openai.DefaultAsyncHttpxClient(event_hooks=hooks_async)
    elif isinstance(client, openai.OpenAI):

        def sent(request: Any) -> None:
            admit(request)

        def answered(response: Any) -> None:
            if _streamed(response):
                return
            response.read()
            usage.answered(
                _request_purpose(response.request), tokens_of(parse_body(response.content))
            )

        http = openai.DefaultHttpxClient(event_hooks={"request": [sent], "response": [answered]})
    else:
        return None
    return client.with_options(http_client=http, **options)


def count_parts(parts: dict[str, Any], usage: LLMUsage, **options: Any) -> None:
    """Give each part (an object holding its OpenAI client as ``client``, named for the
    notes) a counting client; a part whose client is not OpenAI's is noted in ``usage`` as
    not counted."""
    for name, part in parts.items():
        client = getattr(part, "client", None)
        if client is None:
            continue
        counted = counting(client, usage, **options)
        if counted is None:
            usage.not_counted.append(
                f"{name}: its client ({type(client).__name__}) is not OpenAI's; its calls "
                "are not counted"
            )
            continue
        part.client = counted


def budgeted_write(usage: LLMUsage, write: Callable[[], None]) -> None:
    """Run ``write`` (one event's write into the product) with its calls open to the budget's
    refusal: a call refused is raised as the budget's :class:`LLMBudgetExceeded` whatever
    the product made of it (an error of its own, or one it logged and went on from). The
    product must store only after its calls, so a refused write stores nothing."""
    budget = usage.budget
    usage.writing = True
    try:
        write()
    except Exception:
        refused = budget.take_refusal() if budget is not None else None
        if refused is not None:
            raise refused from None
        raise
    finally:
        usage.writing = False
    refused = budget.take_refusal() if budget is not None else None
    if refused is not None:
        raise refused
