"""Traces: one per AG-UI run, across the API, the thread's workflow, its activities and
Strands' agent, model and tool spans.

The pieces are upstream's: OpenTelemetry's SDK and OTLP exporter, Temporal's
``temporalio.contrib.opentelemetry`` (its replay-safe tracer provider and the plugin that
carries a span's context through every client call, workflow and activity), FastAPI's
instrumentation for the request span, and the spans Strands makes itself. This module wires
them, names the attributes (``ATTRIBUTE_*``) and keeps message contents out of spans.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import Link, Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider, create_tracer_provider

logger = logging.getLogger(__name__)

TRACER_NAME = "durable_agui"

ATTRIBUTE_THREAD_ID = "agui.thread.id"
"""The AG-UI ``threadId`` (what the client sent; also on every log line as ``thread_id``)."""
ATTRIBUTE_RUN_ID = "agui.run.id"
ATTRIBUTE_AGENT = "agui.agent.name"
ATTRIBUTE_TOOL_CALL_ID = "agui.tool_call.id"
"""A frontend or approval call's wire id (``toolCallId``); Strands' ``execute_tool`` span
names the native one (``gen_ai.tool.call.id``)."""
ATTRIBUTE_TOOL_CALL_IDS = "agui.tool_call.ids"
"""Wire ids of the calls a turn made, or of the results an activity wrote."""
ATTRIBUTE_NATIVE_TOOL_CALL_IDS = "agui.tool_call.native_ids"
"""Strands' ``toolUseId`` of each call in ``agui.tool_call.ids``, in the same order."""
ATTRIBUTE_ANSWERED_NATIVE_IDS = "agui.tool_call.answered_native_ids"
"""On a continuation's turn: the ``toolUseId`` of each call whose answer it wrote first."""
ATTRIBUTE_RUN_OUTCOME = "agui.run.outcome"
"""``success``, ``waiting`` (calls or approvals wait for a person), ``cancelled``,
``error`` or ``deleted``."""
ATTRIBUTE_PENDING_TOOL_CALL_IDS = "agui.run.pending_tool_call_ids"
ATTRIBUTE_BATCH_OUTCOME = "agui.batch.outcome"
"""How the batch of frontend calls a run closed ended: ``answered``, ``expired``,
``abandoned`` or ``cancelled`` (``ClosedReason``)."""
ATTRIBUTE_ERROR_TYPE = "error.type"

_TRACE_CONTEXT = TraceContextTextMapPropagator()
"""W3C ``traceparent`` only: a client's ``baggage`` is neither taken in nor carried (it
would travel in Temporal's history, unbounded by anything this API checks)."""

_REDACT_ALL = "gen_ai_unredacted_attributes="
"""Strands' opt-in token (``OTEL_SEMCONV_STABILITY_OPT_IN``) that redacts every message
content attribute and event (an empty allow-list): prompts, answers, system prompts, tool
arguments and results."""
_STABLE_HTTP = "http"
"""The same variable's token for OpenTelemetry's stable HTTP conventions: the request
duration histogram in seconds, like every other duration here."""
DECLARATIONS = frozenset(
    {"gen_ai.tool.description", "gen_ai.tool.json_schema", "gen_ai.tool.definitions"}
)
"""Attributes Strands sets from tool declarations, which clients write for their frontend
tools (up to ``DURABLE_AGUI_MAX_TOOLS_BYTES``): redacted as contents are."""
REDACTED = "[REDACTED]"
MAX_ATTRIBUTE_LENGTH = 8192
"""Characters a span attribute keeps (the rest is cut), unless
``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`` says otherwise: a run's spans stay small whatever its
messages hold."""


def configure_tracing(service_name: str, *, trace_content: bool) -> ReplaySafeTracerProvider:
    """Install the process's tracer provider: Temporal's replay-safe one (workflow spans
    are not exported again when a thread replays), exporting by OTLP when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set,
    nothing otherwise: then spans are not recorded (``ALWAYS_OFF``, unless
    ``OTEL_TRACES_SAMPLER`` names a sampler) and still carry trace ids into log lines. The standard variables
    apply (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``,
    ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_*``; ``OTEL_SDK_DISABLED=true`` or
    ``OTEL_TRACES_EXPORTER=none`` export nothing).

    ``trace_content``: let Strands put message contents in its spans (off: every content
    attribute is redacted, the rule of ``DURABLE_AGUI_TRACE_CONTENT``).

    Raises:
        RuntimeError: ``OTEL_EXPORTER_OTLP_PROTOCOL`` names a protocol this process cannot
            export with (``grpc`` without ``opentelemetry-exporter-otlp-proto-grpc``).
    """
    _opt_in(trace_content)
    propagate.set_global_textmap(_TRACE_CONTEXT)
    limits = None
    if not (
        _env("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT") or _env("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    ):
        limits = SpanLimits(max_attribute_length=MAX_ATTRIBUTE_LENGTH)
    exporter = _otlp_exporter()
    provider = create_tracer_provider(
        # Nothing exports: spans are not recorded (no attributes, no processors), yet each
        # still has its ids, which log lines and Temporal's headers carry.
        sampler=None if exporter is not None or _env("OTEL_TRACES_SAMPLER") else ALWAYS_OFF,
        resource=Resource.create({"service.name": service_name}),
        shutdown_on_exit=False,  # shut down by the serving command, flushing what is left
        span_limits=limits,
    )
    if exporter is not None:
        batched = BatchSpanProcessor(exporter)
        provider.add_span_processor(batched if trace_content else _Redacting(batched))
    trace.set_tracer_provider(provider)
    return provider


def _opt_in(trace_content: bool) -> None:
    """Set this process's ``OTEL_SEMCONV_STABILITY_OPT_IN`` tokens (Strands reads them when
    its tracer is made, after this): contents redacted unless ``trace_content``."""
    tokens = [
        t.strip()
        for t in os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "").split(",")
        if t.strip()
    ]
    if not trace_content:
        tokens = [t for t in tokens if not t.startswith(_REDACT_ALL)] + [_REDACT_ALL]
    if _STABLE_HTTP not in tokens and "http/dup" not in tokens:
        tokens.append(_STABLE_HTTP)
    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = ",".join(tokens)


class _Redacting(SpanProcessor):
    """Hands ``next`` each ended span with its ``DECLARATIONS`` attributes redacted (Strands
    sets them after the span starts, and redacts only message contents itself)."""

    def __init__(self, next: SpanProcessor) -> None:
        self._next = next

    def on_start(self, span: SdkSpan, parent_context: Context | None = None) -> None:
        self._next.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        attributes = span.attributes or {}
        if DECLARATIONS.isdisjoint(attributes):
            self._next.on_end(span)
            return
        redacted = {k: REDACTED if k in DECLARATIONS else v for k, v in attributes.items()}
        self._next.on_end(
            ReadableSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=span.resource,
                attributes=redacted,
                events=span.events,
                links=span.links,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=span.end_time,
                instrumentation_scope=span.instrumentation_scope,
            )
        )

    def shutdown(self) -> None:
        self._next.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._next.force_flush(timeout_millis)


def exporting() -> bool:
    """Whether the standard variables ask for spans to be exported (by OTLP)."""
    if _env("OTEL_TRACES_EXPORTER").lower() in ("none", "console"):
        return False
    return bool(_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or _env("OTEL_EXPORTER_OTLP_ENDPOINT"))


def _otlp_exporter() -> SpanExporter | None:
    if not exporting():
        return None
    protocol = (
        _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or _env("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
        except ImportError:
            raise RuntimeError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package "
                "opentelemetry-exporter-otlp-proto-grpc (pip install it next to durable-agui), "
                "or use http/protobuf (the default, port 4318)"
            ) from None
        exporter: SpanExporter = GrpcSpanExporter()
        return exporter
    raise RuntimeError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}: durable-agui exports spans with "
        "http/protobuf (the default) or grpc"
    )


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def trace_parent() -> str | None:
    """The current span's W3C ``traceparent`` (55 characters), or ``None`` outside a
    recorded or propagated trace. A thread keeps it with a queued run, so the run's turn
    belongs to the trace of the request that sent it."""
    carrier: dict[str, str] = {}
    _TRACE_CONTEXT.inject(carrier)
    return carrier.get("traceparent")


def context_of(traceparent: str | None) -> Context:
    """The context ``traceparent`` names (an empty one for ``None`` or a malformed value)."""
    if not traceparent:
        return Context()
    return _TRACE_CONTEXT.extract({"traceparent": traceparent})


def trace_id_of(traceparent: str | None) -> str | None:
    """The 32-hex-digit trace id in ``traceparent``, or ``None``."""
    context = trace.get_current_span(context_of(traceparent)).get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


@contextmanager
def run_span(
    name: str, traceparent: str | None, attributes: Mapping[str, str]
) -> Iterator[Span | None]:
    """The span of one run inside the thread's workflow, child of ``traceparent`` (the
    request that sent it) and linked to the span current now (the thread's workflow), so
    the activities the run starts belong to the run's trace.

    Only with Temporal's replay-safe provider installed (what ``durable-agui`` serving
    commands do, and what Temporal's ``OpenTelemetryPlugin``, which carries contexts to
    activities, requires): spans are then not exported again on replay and their ids are
    the workflow's deterministic ones. Elsewhere (a worker of your own without the plugin,
    the replayer) no span is made.
    """
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        yield None
        return
    thread_span = trace.get_current_span().get_span_context()
    links = [Link(thread_span)] if thread_span.is_valid else []
    tracer = provider.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name, context=context_of(traceparent), attributes=dict(attributes), links=links
    ) as span:
        yield span


def set_attributes(attributes: Mapping[str, str | int | list[str]]) -> None:
    """Set ``attributes`` on the current span (nothing without one)."""
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attributes(dict(attributes))
