"""Sends N traces across two services with the OpenTelemetry Python SDK and its OTLP span
exporter (client.py): `frontend` serves `GET /buy` (its root span) and calls `checkout`
(`POST /orders`, a client span), whose server span is the child of that call. Each service has
its own provider and exporter, as two processes would, and exports a span as it ends (a child
before its parent). Prints one JSON line per span sent: trace id, span id, name, service.
Exits 1 if an export was not accepted.

usage: send_service_traces.py ENDPOINT N
"""
import json
import sys

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind

from client import exporter, failed


class Printing(SpanExporter):
    """Prints each span it passes on."""

    def __init__(self, inner):
        self.inner = inner

    def export(self, spans):
        result = self.inner.export(spans)
        for s in spans:
            print(json.dumps({
                "traceId": format(s.context.trace_id, "032x"),
                "spanId": format(s.context.span_id, "016x"),
                "name": s.name,
                "service": s.resource.attributes["service.name"],
            }), flush=True)
        return result

    def shutdown(self):
        self.inner.shutdown()


def provider(service):
    p = TracerProvider(resource=Resource.create({"service.name": service}))
    p.add_span_processor(SimpleSpanProcessor(Printing(exporter("traces", endpoint))))
    return p


endpoint, n = sys.argv[1], int(sys.argv[2])
frontend, checkout = provider("frontend"), provider("checkout")
front, back = frontend.get_tracer("web"), checkout.get_tracer("orders")
for i in range(n):
    with front.start_as_current_span("GET /buy", kind=SpanKind.SERVER):
        with front.start_as_current_span("POST /orders", kind=SpanKind.CLIENT) as call:
            # The callee continues the caller's trace, as propagated headers would make it.
            context = trace.set_span_in_context(call)
            with back.start_as_current_span("POST /orders", kind=SpanKind.SERVER, context=context) as served:
                served.set_attribute("order.id", i)
frontend.shutdown()
checkout.shutdown()
sys.exit(1 if failed else 0)
