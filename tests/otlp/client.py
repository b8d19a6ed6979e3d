"""The OpenTelemetry Python SDK's OTLP exporter the test scripts use, chosen by the environment:

- OTLP_TRANSPORT: `http` (OTLP/HTTP, protobuf; the default) or `grpc` (OTLP/gRPC).
- OTLP_GZIP=1: compress requests with gzip.
- OTLP_CA=FILE: TLS, verifying the server's certificate against this PEM CA.
- OTLP_HEADERS=k=v,...: request headers (gRPC metadata).
- OTLP_TIMEOUT=SECONDS: the exporter's whole deadline, retries included (default 10).

The exporter remembers each export the server did not accept in `failed`.
"""
import os

failed = []


def exporter(signal, endpoint):
    """An exporter of `signal` (`logs`, `traces`, `metrics`) to `endpoint` (a URL for OTLP/HTTP,
    `http://host:port` or `https://host:port` for gRPC)."""
    grpc = os.environ.get("OTLP_TRANSPORT", "http") == "grpc"
    gzip = os.environ.get("OTLP_GZIP") == "1"
    ca = os.environ.get("OTLP_CA")
    headers = dict(h.split("=", 1) for h in os.environ.get("OTLP_HEADERS", "").split(",") if h)
    kwargs = {"endpoint": endpoint, "timeout": float(os.environ.get("OTLP_TIMEOUT", "10"))}
    if headers:
        kwargs["headers"] = headers
    if grpc:
        import grpc as g
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        if gzip:
            kwargs["compression"] = g.Compression.Gzip
        if ca:
            with open(ca, "rb") as f:
                kwargs["credentials"] = g.ssl_channel_credentials(f.read())
        else:
            kwargs["insecure"] = True
    else:
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        if gzip:
            kwargs["compression"] = Compression.Gzip
        if ca:
            kwargs["certificate_file"] = ca
            # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (set on many machines) win over
            # the session's `verify`, which is where the exporter puts `certificate_file`.
            os.environ["REQUESTS_CA_BUNDLE"] = ca
            os.environ.pop("CURL_CA_BUNDLE", None)
    base = {"logs": OTLPLogExporter, "traces": OTLPSpanExporter, "metrics": OTLPMetricExporter}[signal]

    class Checked(base):
        """The exporter, remembering any export the server did not accept."""

        def export(self, batch, *args, **kwargs):
            result = super().export(batch, *args, **kwargs)
            # Result enums were renamed across SDK versions: compare the name.
            if result.name != "SUCCESS":
                failed.append(result)
            return result

    return Checked(**kwargs)
