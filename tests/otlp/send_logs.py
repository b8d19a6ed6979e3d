"""Sends N log records with the OpenTelemetry Python SDK and its OTLP/HTTP exporter (protobuf),
one export per record, to ENDPOINT; exits 1 if an export was not accepted.

usage: send_logs.py ENDPOINT N
"""
import logging
import sys

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource

endpoint, n = sys.argv[1], int(sys.argv[2])
failed = []


class Checked(OTLPLogExporter):
    """The exporter, remembering any export the server did not accept."""

    def export(self, batch):
        result = super().export(batch)
        # `LogExportResult`, renamed `LogRecordExportResult` in newer SDKs: compare the name.
        if result.name != "SUCCESS":
            failed.append(result)
        return result


provider = LoggerProvider(
    resource=Resource.create({"service.name": "checkout", "deployment.environment": "test"})
)
provider.add_log_record_processor(SimpleLogRecordProcessor(Checked(endpoint=endpoint, timeout=10)))
log = logging.getLogger("shop")
log.propagate = False
log.setLevel(logging.INFO)
log.addHandler(LoggingHandler(level=logging.INFO, logger_provider=provider))
for i in range(n):
    log.warning("order %d placed", i, extra={"order.id": i, "region": "eu-west"})
provider.shutdown()
sys.exit(1 if failed else 0)
