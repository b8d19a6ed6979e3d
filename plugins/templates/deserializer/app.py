"""`{{name}}`: one event {"message": line} per non-empty line; a record that is not UTF-8 is
malformed. Build: `sluice plugins build .`

Contract 0.2 (`wit/`): the batch's payloads arrive in one buffer (`data`) with a span per
record; events go back written into the reply's `data`, one span each, and one outcome per
record says how many of them are its.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.deserializer import Outcome_Events, Outcome_Malformed, Reply
from wit_world.imports.types import EventRef_Output, Span


class Configure(exports.Configure):
    def configure(self, options):
        if options:
            raise Err(f"unknown option `{options[0].key}`: {{name}} takes no options")


class Deserializer(exports.Deserializer):
    def deserialize(self, data, records, content_types):
        out = bytearray()
        events = []
        outcomes = []
        for record in records:
            start = record.payload.offset
            try:
                text = data[start : start + record.payload.len].decode("utf-8")
            except UnicodeDecodeError:
                outcomes.append(Outcome_Malformed("not UTF-8"))
                continue
            lines = [line for line in text.splitlines() if line.strip()]
            for line in lines:
                event = json.dumps({"message": line}, ensure_ascii=False).encode("utf-8")
                events.append(EventRef_Output(Span(len(out), len(event))))
                out += event
            outcomes.append(Outcome_Events(len(lines)))
        return Reply(bytes(out), events, outcomes)
