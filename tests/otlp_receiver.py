"""An OTLP/HTTP trace receiver on 127.0.0.1: what a collector would be sent, decoded with
OpenTelemetry's own protobuf types (``opentelemetry-proto``), for tests to read."""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as exported: ids in hex, ``parent`` ``""`` for a root."""

    service: str
    name: str
    trace_id: str
    span_id: str
    parent: str
    attributes: dict[str, Any]
    links: list[str] = field(default_factory=list)
    """The span ids it links to."""
    texts: list[str] = field(default_factory=list)
    """Every string in its attributes and its events' attributes (to look for contents)."""


class OtlpReceiver:
    """Accepts ``POST /v1/traces`` (protobuf, gzip or not) at ``endpoint`` until stopped."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                receiver._take(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """``OTEL_EXPORTER_OTLP_ENDPOINT`` for processes that export here."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _take(self, request: ExportTraceServiceRequest) -> None:
        received = []
        for resource_spans in request.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = _attributes(span.attributes)
                    texts = _texts(attributes)
                    for event in span.events:
                        texts += [event.name, *_texts(_attributes(event.attributes))]
                    received.append(
                        ReceivedSpan(
                            service=str(resource.get("service.name", "")),
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent=span.parent_span_id.hex(),
                            attributes=attributes,
                            links=[link.span_id.hex() for link in span.links],
                            texts=texts,
                        )
                    )
        with self._lock:
            self.spans.extend(received)

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self._lock:
            return [span for span in self.spans if span.trace_id == trace_id]

    def wait_for(
        self, trace_id: str, names: set[str], timeout_s: float = 30.0
    ) -> list[ReceivedSpan]:
        """The spans of ``trace_id`` once every name in ``names`` is among them (their
        processes export in batches); the ones there when ``timeout_s`` passes otherwise."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = self.trace(trace_id)
            if names <= {span.name for span in spans} or time.monotonic() > deadline:
                return spans
            time.sleep(0.2)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind) if kind else None


def _texts(attributes: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for value in attributes.values():
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, list):
            texts += [v for v in value if isinstance(v, str)]
        elif isinstance(value, dict):
            texts += _texts(value)
    return texts
