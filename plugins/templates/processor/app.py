"""`{{name}}`: a processor that shows every verdict. Build: `sluice plugins build .`

    processor:
      - {{name}}:
          tag: blue          # required: written into every event as "tag"
          drop_level: debug  # optional: events whose "level" is this are dropped
          split: items       # optional: an event whose "items" is a list becomes one event per item

Per event: `level` equal to `drop_level` -> drop; already holding this `tag` -> keep (nothing is
copied back); a `split` field that is not a list -> failed; otherwise replaced by the event (one
per item with `split`) with `tag` and `received_at_ms` added.
"""

import json

from wit_world import exports
from wit_world.exports.processor import (
    Reply,
    Verdict_Drop,
    Verdict_Failed,
    Verdict_Keep,
    Verdict_Replace,
)
from wit_world.imports.types import EventRef_Output, Span
from componentize_py_types import Err

# The options, from `configure` (called on every new instance before the first batch).
options = {"tag": None, "drop_level": None, "split": None}


class Configure(exports.Configure):
    def configure(self, entries):
        given = {"tag": None, "drop_level": None, "split": None}
        for entry in entries:
            if entry.key not in given:
                raise Err(
                    f"unknown option `{entry.key}`; {{name}} takes `tag`, `drop_level` and `split`"
                )
            given[entry.key] = entry.value
        if given["tag"] is None:
            raise Err("option `tag` is required: the value written into every event")
        options.update(given)


class Out:
    """The reply under construction: new events are written into `data` and pointed at."""

    def __init__(self):
        self.data = bytearray()
        self.events = []

    def push(self, event):
        text = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self.events.append(EventRef_Output(Span(len(self.data), len(text))))
        self.data += text


def verdict(body, received_at_ms, out):
    try:
        event = json.loads(body)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        return Verdict_Failed("not a JSON object")
    level = event.get("level")
    if isinstance(level, str) and level == options["drop_level"]:
        return Verdict_Drop()
    if event.get("tag") == options["tag"]:
        return Verdict_Keep()
    event["tag"] = options["tag"]
    event["received_at_ms"] = received_at_ms
    field = options["split"]
    if field is None or field not in event:
        out.push(event)
        return Verdict_Replace(1)
    items = event[field]
    if not isinstance(items, list):
        return Verdict_Failed(f"field `{field}` is not a list")
    for item in items:
        event[field] = item
        out.push(event)
    return Verdict_Replace(len(items))


class Processor(exports.Processor):
    def process(self, data, events):
        out = Out()
        verdicts = [
            verdict(data[e.body.offset : e.body.offset + e.body.len], e.received_at_ms, out)
            for e in events
        ]
        return Reply(bytes(out.data), out.events, verdicts)
