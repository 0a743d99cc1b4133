"""OpenTelemetry traces: one span per run, children for pull, replay, score and export.

The TracerProvider is built per process and passed in (never the global one). Spans are
exported over OTLP/HTTP when ``[tracing] otlp_endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``
is set, and nowhere otherwise; tests pass their own exporter.
"""

from __future__ import annotations

import os

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

from healthd import __version__

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACES_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"


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


def build_tracer_provider(
    *,
    endpoint: str | None = None,
    service_name: str = "healthd",
    exporter: SpanExporter | None = None,
) -> TracerProvider:
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name, "service.version": __version__})
    )
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    else:
        url = traces_endpoint(endpoint)
        if url:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=url), schedule_delay_millis=1000)
            )
    return provider


def get_tracer(provider: TracerProvider) -> Tracer:
    return provider.get_tracer("healthd", __version__)
