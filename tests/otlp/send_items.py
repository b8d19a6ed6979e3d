"""Sends one export request of each signal, built field by field with the `opentelemetry-proto`
package so that every field the events keep is set (every attribute type, span events and
links, each kind of metric data point), over OTLP/gRPC to ENDPOINT (`host:port`), then writes
the requests' items (items.py) to EXPECTED as one JSON array. Doubles are exact in binary, so
that they read back as written.

usage: send_items.py ENDPOINT EXPECTED
"""
import json
import sys

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList)
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from items import REQUESTS, items

endpoint, expected = sys.argv[1], sys.argv[2]
T0 = 1_700_000_000_123_456_789


def value(v):
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    if isinstance(v, list):
        return AnyValue(array_value=ArrayValue(values=[value(x) for x in v]))
    if isinstance(v, dict):
        return AnyValue(kvlist_value=KeyValueList(values=attrs(v)))
    return AnyValue(string_value=v)


def attrs(d):
    return [KeyValue(key=k, value=value(v)) for k, v in d.items()]


RICH = {"http.method": "POST", "retries": 3, "ratio": 0.25, "cached": False,
        "tags": ["a", "b"], "nested": {"k": "v", "n": 7}}
resource = Resource(attributes=attrs({"service.name": "checkout", "host.cores": 8}),
                    dropped_attributes_count=1)
scope = InstrumentationScope(name="shop", version="1.2.3", attributes=attrs({"lib": "x"}),
                             dropped_attributes_count=2)
TRACE = bytes(range(1, 17))

spans = [
    trace_pb2.Span(
        trace_id=TRACE, span_id=bytes(range(1, 9)), trace_state="k=v", name="POST /orders",
        kind=trace_pb2.Span.SPAN_KIND_SERVER, start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 2_500_000, attributes=attrs(RICH), dropped_attributes_count=1,
        events=[trace_pb2.Span.Event(time_unix_nano=T0 + 1000, name="accepted",
                                     attributes=attrs({"card.brand": "visa", "amount": 12.5}),
                                     dropped_attributes_count=1)],
        dropped_events_count=2,
        links=[trace_pb2.Span.Link(trace_id=bytes(range(17, 33)), span_id=bytes(range(9, 17)),
                                   trace_state="a=b", attributes=attrs({"link.kind": "follows"}),
                                   dropped_attributes_count=3)],
        dropped_links_count=4, flags=257,
        status=trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_OK)),
    trace_pb2.Span(
        trace_id=TRACE, span_id=bytes(range(2, 10)), parent_span_id=bytes(range(1, 9)),
        name="charge card", kind=trace_pb2.Span.SPAN_KIND_CLIENT, start_time_unix_nano=T0 + 10,
        end_time_unix_nano=T0 + 2_000_000, attributes=attrs({"peer.service": "bank"}),
        status=trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message="declined")),
]
traces = REQUESTS["traces"](resource_spans=[trace_pb2.ResourceSpans(
    resource=resource, schema_url="https://opentelemetry.io/schemas/1.21.0",
    scope_spans=[trace_pb2.ScopeSpans(scope=scope, spans=spans,
                                      schema_url="https://example.com/scope/1")])])

records = [
    logs_pb2.LogRecord(
        time_unix_nano=T0, observed_time_unix_nano=T0 + 5, severity_number=9,
        severity_text="INFO", body=value("order placed"), attributes=attrs(RICH),
        dropped_attributes_count=2, flags=1, trace_id=TRACE, span_id=bytes(range(1, 9))),
    logs_pb2.LogRecord(
        time_unix_nano=T0 + 1_000_000_000, observed_time_unix_nano=T0 + 1_000_000_001,
        severity_number=17, severity_text="ERROR",
        body=value({"message": "failed", "codes": [1, 2], "fatal": True}),
        attributes=attrs({"user.id": "u-1"})),
]
logs = REQUESTS["logs"](resource_logs=[logs_pb2.ResourceLogs(
    resource=resource, schema_url="https://opentelemetry.io/schemas/1.21.0",
    scope_logs=[logs_pb2.ScopeLogs(scope=scope, log_records=records,
                                   schema_url="https://example.com/scope/2")])])

exemplar = metrics_pb2.Exemplar(
    filtered_attributes=attrs({"user.id": "u-1"}), time_unix_nano=T0 + 3, as_double=0.75,
    span_id=bytes(range(1, 9)), trace_id=TRACE)
point = dict(start_time_unix_nano=T0 - 10_000_000_000, time_unix_nano=T0)
metrics = [
    metrics_pb2.Metric(name="queue.depth", description="items waiting", unit="1",
                       metadata=attrs({"source": "sampler"}),
                       gauge=metrics_pb2.Gauge(data_points=[
                           metrics_pb2.NumberDataPoint(attributes=attrs({"queue": "a"}),
                                                       as_double=17.5, exemplars=[exemplar], **point),
                           metrics_pb2.NumberDataPoint(attributes=attrs({"queue": "b"}),
                                                       as_double=-2.0, flags=1, **point)])),
    metrics_pb2.Metric(name="requests", unit="{request}", sum=metrics_pb2.Sum(
        aggregation_temporality=metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE, is_monotonic=True,
        data_points=[metrics_pb2.NumberDataPoint(attributes=attrs(RICH), as_double=1024.0, **point)])),
    metrics_pb2.Metric(name="latency", unit="ms", histogram=metrics_pb2.Histogram(
        aggregation_temporality=metrics_pb2.AGGREGATION_TEMPORALITY_DELTA,
        data_points=[metrics_pb2.HistogramDataPoint(
            attributes=attrs({"route": "/orders"}), count=6, sum=40.5, bucket_counts=[1, 3, 2],
            explicit_bounds=[5.0, 10.0], exemplars=[exemplar], min=0.5, max=20.25, **point)])),
    metrics_pb2.Metric(name="sizes", unit="By", summary=metrics_pb2.Summary(data_points=[
        metrics_pb2.SummaryDataPoint(
            count=4, sum=100.0,
            quantile_values=[metrics_pb2.SummaryDataPoint.ValueAtQuantile(quantile=0.5, value=20.0),
                             metrics_pb2.SummaryDataPoint.ValueAtQuantile(quantile=1.0, value=50.0)],
            attributes=attrs({"kind": "body"}), **point)])),
    metrics_pb2.Metric(name="spread", unit="s", exponential_histogram=metrics_pb2.ExponentialHistogram(
        aggregation_temporality=metrics_pb2.AGGREGATION_TEMPORALITY_DELTA,
        data_points=[metrics_pb2.ExponentialHistogramDataPoint(
            attributes=attrs({"host": "h1"}), count=9, sum=30.0, scale=2, zero_count=1,
            positive=metrics_pb2.ExponentialHistogramDataPoint.Buckets(offset=3, bucket_counts=[2, 4]),
            negative=metrics_pb2.ExponentialHistogramDataPoint.Buckets(offset=-1, bucket_counts=[2]),
            min=-1.5, max=8.0, zero_threshold=0.125, exemplars=[exemplar], **point)])),
]
metrics_request = REQUESTS["metrics"](resource_metrics=[metrics_pb2.ResourceMetrics(
    resource=resource, schema_url="https://opentelemetry.io/schemas/1.21.0",
    scope_metrics=[metrics_pb2.ScopeMetrics(scope=scope, metrics=metrics,
                                            schema_url="https://example.com/scope/3")])])

channel = grpc.insecure_channel(endpoint)
trace_service_pb2_grpc.TraceServiceStub(channel).Export(traces, timeout=30)
logs_service_pb2_grpc.LogsServiceStub(channel).Export(logs, timeout=30)
metrics_service_pb2_grpc.MetricsServiceStub(channel).Export(metrics_request, timeout=30)
with open(expected, "w") as f:
    json.dump(items("traces", traces) + items("logs", logs) + items("metrics", metrics_request), f)
