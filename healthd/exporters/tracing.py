"""OpenTelemetry traces: one span per run, children for pull, replay, score and export.

The TracerProvider is built per process and passed in (never the global one). Spans are
exported over OTLP/HTTP when ``[tracing] otlp_endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``
is set, and nowhere otherwise; tests pass their own exporter. Their ``service.name`` is
``[tracing] service_name``, else ``OTEL_SERVICE_NAME``, else ``healthd``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import Status, Tracer
from opentelemetry.util.types import Attributes

from healthd import __version__
from healthd.logging import redact_text

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
SERVICE_NAME_ENV = "OTEL_SERVICE_NAME"
DEFAULT_SERVICE_NAME = "healthd"


def traces_endpoint(configured: str | None) -> str | None:
    """The OTLP/HTTP traces URL: config first, then the standard environment variables.
    A base URL gets ``/v1/traces`` appended, as the OTLP specification says."""
    if os.environ.get(TRACES_ENDPOINT_ENV) and not configured:
        return os.environ[TRACES_ENDPOINT_ENV]
    base = configured or os.environ.get(ENDPOINT_ENV)
    if not base:
        return None
    base = base.rstrip("/")
    return base if base.endswith("/v1/traces") else base + "/v1/traces"


def service_name_of(configured: str | None) -> str:
    """The ``service.name`` of the traces: config first, then ``OTEL_SERVICE_NAME`` (which
    the OpenTelemetry SDK's environment variables say sets it), then ``healthd``."""
    return configured or os.environ.get(SERVICE_NAME_ENV) or DEFAULT_SERVICE_NAME


def build_tracer_provider(
    *,
    endpoint: str | None = None,
    service_name: str | None = None,
    exporter: SpanExporter | None = None,
) -> TracerProvider:
    resource = {"service.name": service_name_of(service_name), "service.version": __version__}
    provider = TracerProvider(resource=Resource.create(resource))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(RedactingExporter(exporter)))
    else:
        url = traces_endpoint(endpoint)
        if url:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(
                BatchSpanProcessor(
                    RedactingExporter(OTLPSpanExporter(endpoint=url)), schedule_delay_millis=1000
                )
            )
    return provider


class RedactingExporter(SpanExporter):
    """Passes spans on with secrets redacted from every string: attributes, status
    description and events (an exception recorded on a span carries its message)."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([_redacted(span) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def _attributes(attributes: Attributes) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, str):
            out[key] = redact_text(value)
        elif isinstance(value, (list, tuple)):
            out[key] = tuple(redact_text(v) if isinstance(v, str) else v for v in value)
        else:
            out[key] = value
    return out


def _redacted(span: ReadableSpan) -> ReadableSpan:
    status = span.status
    if status.description:
        status = Status(status.status_code, redact_text(status.description))
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_attributes(span.attributes),  # type: ignore[arg-type]
        events=[
            Event(e.name, _attributes(e.attributes), e.timestamp)  # type: ignore[arg-type]
            for e in span.events
        ],
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def get_tracer(provider: TracerProvider) -> Tracer:
    return provider.get_tracer("healthd", __version__)
