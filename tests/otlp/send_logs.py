"""Sends N log records with the OpenTelemetry Python SDK and its OTLP exporter (client.py: OTLP/HTTP
or gRPC), one export per record, to ENDPOINT; exits 1 if an export was not accepted.

usage: send_logs.py ENDPOINT N
"""
import logging
import sys

from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

from client import exporter, failed

endpoint, n = sys.argv[1], int(sys.argv[2])
provider = LoggerProvider(
    resource=Resource.create({"service.name": "checkout", "deployment.environment": "test"})
)
provider.add_log_record_processor(SimpleLogRecordProcessor(exporter("logs", endpoint)))
log = logging.getLogger("shop")
log.propagate = False
log.setLevel(logging.INFO)
log.addHandler(LoggingHandler(level=logging.INFO, logger_provider=provider))
for i in range(n):
    log.warning("order %d placed", i, extra={"order.id": i, "region": "eu-west"})
provider.shutdown()
sys.exit(1 if failed else 0)
