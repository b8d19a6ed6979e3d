"""`{{name}}`: one event {"message": line} per non-empty line. Build: `sluice plugins build .`"""
import json

from wit_world import exports
from wit_world.exports.raw_byte_handler import Outcome_Events, Outcome_Malformed


def parse(payload):
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return Outcome_Malformed("not UTF-8")
    lines = [line for line in text.splitlines() if line.strip()]
    return Outcome_Events([json.dumps({"message": line}) for line in lines])


class RawByteHandler(exports.RawByteHandler):
    def deserialize_batch(self, batch):
        return [parse(record.payload) for record in batch]
