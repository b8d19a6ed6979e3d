"""Records N orders on a counter and a histogram, and a gauge, with the OpenTelemetry Python SDK,
then exports them once with its OTLP metric exporter (client.py: OTLP/HTTP or gRPC) to ENDPOINT;
exits 1 if an export was not accepted.

usage: send_metrics.py ENDPOINT N
"""
import sys

from opentelemetry.metrics import Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource

from client import exporter, failed

endpoint, n = sys.argv[1], int(sys.argv[2])
reader = InMemoryMetricReader()
provider = MeterProvider(resource=Resource.create({"service.name": "checkout"}), metric_readers=[reader])
meter = provider.get_meter("shop", "1.2.3")
orders = meter.create_counter("orders", unit="1", description="orders placed")
amounts = meter.create_histogram("order.amount", unit="EUR", description="order amounts")
meter.create_observable_gauge("queue.depth", callbacks=[lambda _: [Observation(7, {"queue": "payments"})]])
for i in range(n):
    orders.add(1, {"region": "eu-west"})
    amounts.record(10 * (i + 1), {"region": "eu-west"})
data = reader.get_metrics_data()
exporter("metrics", endpoint).export(data)
provider.shutdown()
sys.exit(1 if failed else 0)
