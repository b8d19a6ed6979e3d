"""An OTLP receiver for the otlp sink's tests, on the `opentelemetry-proto` package: OTLP/gRPC
(grpcio) or OTLP/HTTP (protobuf, gzip or not). Each export request is appended to OUT as one
JSON line: {"signal", "headers" (lower-case names), "items" (items.py)}. The first FAIL requests
are refused as retryable (gRPC UNAVAILABLE, HTTP 503) and recorded with "refused": true.

usage: receive.py grpc|http PORT_FILE OUT [FAIL]
"""
import gzip
import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from items import REQUESTS, RESPONSES, items

mode, port_file, out_path = sys.argv[1], sys.argv[2], sys.argv[3]
fail = [int(sys.argv[4]) if len(sys.argv) > 4 else 0]
lock = threading.Lock()


def record(signal, headers, request):
    """Appends the request; whether it is refused."""
    with lock:
        refused = fail[0] > 0
        fail[0] -= 1
        line = {"signal": signal, "headers": headers, "items": items(signal, request)}
        if refused:
            line["refused"] = True
        with open(out_path, "a") as out:
            out.write(json.dumps(line) + "\n")
        return refused


def ready(port):
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    import os
    os.rename(port_file + ".tmp", port_file)


if mode == "grpc":
    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    def servicer(base, signal):
        class Servicer(base):
            def Export(self, request, context):
                headers = {k.lower(): v for k, v in context.invocation_metadata()}
                if record(signal, headers, request):
                    context.abort(grpc.StatusCode.UNAVAILABLE, "try again")
                return RESPONSES[signal]()
        return Servicer()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(
        servicer(trace_service_pb2_grpc.TraceServiceServicer, "traces"), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(
        servicer(logs_service_pb2_grpc.LogsServiceServicer, "logs"), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(
        servicer(metrics_service_pb2_grpc.MetricsServiceServicer, "metrics"), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    ready(port)
    server.wait_for_termination()
else:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            signal = self.path.rsplit("/", 1)[-1]
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if signal not in REQUESTS or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_response(400)
                self.end_headers()
                return
            request = REQUESTS[signal].FromString(body)
            headers = {k.lower(): v for k, v in self.headers.items()}
            if record(signal, headers, request):
                self.send_response(503)
                self.end_headers()
                return
            answer = RESPONSES[signal]().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ready(server.server_address[1])
    server.serve_forever()
