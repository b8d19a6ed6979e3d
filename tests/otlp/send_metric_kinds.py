"""Sends one data point of every OTLP metric kind to ENDPOINT (an OTLP/HTTP metrics URL): a
sum, a gauge, a histogram and two exponential histograms (scale at most 5, and one at the SDK's
scale 20, which Data Prepper drops) recorded with the OpenTelemetry Python SDK and exported
with its OTLP/HTTP exporter (client.py), and a summary (no SDK instrument makes one) built with
the OTLP protobuf classes and posted as the exporter would. Prints what was sent as JSON:
{"sdk": <the SDK's MetricsData>, "summary": <the summary request>}; exits 1 if an export was
not accepted.

usage: send_metric_kinds.py ENDPOINT
"""
import json
import sys
import time
import urllib.request

from google.protobuf.json_format import MessageToDict
from opentelemetry.metrics import Observation
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2 as pb
from opentelemetry.proto.resource.v1.resource_pb2 import Resource as PbResource
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.metrics.view import ExponentialBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource

from client import exporter, failed

endpoint = sys.argv[1]
reader = InMemoryMetricReader()
views = [
    View(instrument_name="latency", aggregation=ExponentialBucketHistogramAggregation(max_scale=5)),
    View(instrument_name="fine.latency", aggregation=ExponentialBucketHistogramAggregation()),
]
provider = MeterProvider(
    resource=Resource.create({"service.name": "checkout"}), metric_readers=[reader], views=views
)
meter = provider.get_meter("shop", "1.2.3")
meter.create_counter("orders", unit="1", description="orders placed").add(3, {"region": "eu-west"})
meter.create_observable_gauge(
    "queue.depth", callbacks=[lambda _: [Observation(7, {"queue": "payments"})]]
)
amounts = meter.create_histogram("order.amount", unit="EUR", description="order amounts")
latency = meter.create_histogram("latency", unit="ms", description="request latency")
for v in [3, 12, 12, 70, 700]:
    amounts.record(v, {"region": "eu-west"})
for v in [0.5, 1.5, 2.0, 3.0, 40.0, 41.0]:
    latency.record(v, {"route": "/orders"})
# One value: the SDK keeps its largest scale, 20.
meter.create_histogram("fine.latency", unit="ms").record(5.0)
data = reader.get_metrics_data()
exporter("metrics", endpoint).export(data)
provider.shutdown()

now = time.time_ns()
attr = lambda k, v: KeyValue(key=k, value=AnyValue(string_value=v))
summary = ExportMetricsServiceRequest(
    resource_metrics=[
        pb.ResourceMetrics(
            resource=PbResource(attributes=[attr("service.name", "checkout")]),
            scope_metrics=[
                pb.ScopeMetrics(
                    scope=InstrumentationScope(name="legacy", version="0.9"),
                    metrics=[
                        pb.Metric(
                            name="rpc.duration",
                            unit="s",
                            description="rpc durations",
                            summary=pb.Summary(
                                data_points=[
                                    pb.SummaryDataPoint(
                                        start_time_unix_nano=now - 60_000_000_000,
                                        time_unix_nano=now,
                                        count=4,
                                        sum=2.5,
                                        quantile_values=[
                                            pb.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=0.5),
                                            pb.SummaryDataPoint.ValueAtQuantile(quantile=0.99, value=1.25),
                                        ],
                                        attributes=[attr("method", "Get")],
                                    )
                                ]
                            ),
                        )
                    ],
                )
            ],
        )
    ]
)
request = urllib.request.Request(
    endpoint,
    data=summary.SerializeToString(),
    headers={"Content-Type": "application/x-protobuf"},
    method="POST",
)
with urllib.request.urlopen(request, timeout=10) as answer:
    if answer.status != 200:
        failed.append(answer.status)

print(json.dumps({"sdk": json.loads(data.to_json()), "summary": MessageToDict(summary)}))
sys.exit(1 if failed else 0)
