"""Sends N traces of two spans (a server span and its client child) with the OpenTelemetry
Python SDK and its OTLP span exporter (client.py: OTLP/HTTP or gRPC) to ENDPOINT; exits 1 if an
export was not accepted.

usage: send_traces.py ENDPOINT N
"""
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from client import exporter, failed

endpoint, n = sys.argv[1], int(sys.argv[2])
provider = TracerProvider(resource=Resource.create({"service.name": "checkout"}))
provider.add_span_processor(SimpleSpanProcessor(exporter("traces", endpoint)))
tracer = provider.get_tracer("shop", "1.2.3")
for i in range(n):
    with tracer.start_as_current_span("POST /orders", kind=SpanKind.SERVER) as root:
        root.set_attribute("http.method", "POST")
        root.set_attribute("order.id", i)
        with tracer.start_as_current_span("charge card", kind=SpanKind.CLIENT) as child:
            child.add_event("card accepted", {"card.brand": "visa"})
provider.shutdown()
sys.exit(1 if failed else 0)
