"""OTLP export requests as one record per item (span, log record, metric data point) with its
resource and scope, so that requests grouped differently compare equal: the otlp sink sends one
resource per item, as Data Prepper does, where a client groups many under one."""
import json

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2

REQUESTS = {
    "traces": trace_service_pb2.ExportTraceServiceRequest,
    "logs": logs_service_pb2.ExportLogsServiceRequest,
    "metrics": metrics_service_pb2.ExportMetricsServiceRequest,
}
RESPONSES = {
    "traces": trace_service_pb2.ExportTraceServiceResponse,
    "logs": logs_service_pb2.ExportLogsServiceResponse,
    "metrics": metrics_service_pb2.ExportMetricsServiceResponse,
}


def _points(metric):
    """A metric once per data point, holding only that point."""
    kind = metric.WhichOneof("data")
    if kind is None:
        return []
    out = []
    for point in getattr(metric, kind).data_points:
        one = metrics_pb2.Metric()
        one.CopyFrom(metric)
        data = getattr(one, kind)
        del data.data_points[:]
        data.data_points.add().CopyFrom(point)
        out.append(one)
    return out


def _normal(value):
    """Attribute lists in key order, at every depth: OTLP gives their order no meaning, and the
    events keep attributes as JSON objects, whose keys are written sorted."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normal(v) for v in value]
        if items and all(isinstance(v, dict) and set(v) <= {"key", "value"} and "key" in v
                         for v in items):
            items.sort(key=lambda kv: kv["key"])
        return items
    return value


def items(signal, request):
    """The records of `request` (of `signal`), each a dict, in a canonical order."""
    if signal == "traces":
        groups = [(r, s, s.spans) for r in request.resource_spans for s in r.scope_spans]
    elif signal == "logs":
        groups = [(r, s, s.log_records) for r in request.resource_logs for s in r.scope_logs]
    else:
        groups = [
            (r, s, [p for m in s.metrics for p in _points(m)])
            for r in request.resource_metrics
            for s in r.scope_metrics
        ]
    out = []
    for resource, scope, things in groups:
        for thing in things:
            out.append({
                "signal": signal,
                "resource": MessageToDict(resource.resource),
                "resource_schema_url": resource.schema_url,
                "scope": MessageToDict(scope.scope),
                "scope_schema_url": scope.schema_url,
                "item": MessageToDict(thing),
            })
    out = [_normal(i) for i in out]
    return sorted(out, key=lambda i: json.dumps(i, sort_keys=True))
