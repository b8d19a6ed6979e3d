"""`{{name}}`: a buffer policy that shows every decision. Build: `sluice plugins build .`

    buffer:
      {{name}}:
        key_header: X-Key    # optional: this request header's value is the record's Kafka key
        max_records: 500     # optional: a write of more records is refused with 429
        drop_empty: true     # optional, default true: a record of 0 bytes is dropped
        tiers:               # the host's tiers, in order: 0 first, 1 the spill tier
          - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs, group_id: sluice }] }
          - bounded_blocking: { buffer_size: 12800 }

The host keeps every byte and does all I/O; a policy sees each record's metadata (size,
payload_hash, the headers `describe` asked for, origin, content_type) and the tiers' state
(`buffer_host.tiers()`: name, durable, available, held, capacity, lag), and decides:

- `configure`: called on every new instance with the YAML's options (sluice's own keys `tiers`,
  `max_memory`, `timeout`, `recycle_after` never reach it). Raise `Err("...")` naming the option
  to stop the pipeline at startup. Here: `key_header` (default `X-Key`, a header name),
  `max_records` (a whole number above 0), `drop_empty` (`true` or `false`); anything else is
  refused.
- `describe`: the request headers the policy reads, asked once per instance; only these reach
  `on_write`. Here: `key_header`, lowercased.
- `on_write`: one source write, all or none. Return exactly one placement per record, in order:
  `Placement_Tier((index, key))` (an index of `tiers()`; `key` bytes set the Kafka key, `None`
  keeps the source's) or `Placement_Drop(reason)` (dead-lettered with the reason; the client
  still gets 200). Or refuse the whole write: `raise Err(Refusal_Throttled((retry_after_ms,
  reason)))` is 429 with Retry-After, `raise Err(Refusal_Unavailable(reason))` is 503. Here: more
  than `max_records` records -> throttled for 1 s; a record of 0 bytes -> dropped (`empty
  record`) when `drop_empty`; every other record goes to tier 0 if it is available, else to tier
  1 (the spill tier) if the YAML lists one, else the write is refused as unavailable (even a
  write of nothing but empty records); a record with the `key_header` header is keyed by its
  value.
- `next_read`: the tier a free worker should read next, or `None` to read the tiers in turn (a
  tier with nothing to read is skipped, so a policy cannot starve the read side). Here: tier 0
  while it has records not yet read (`lag`).
- `tick`: about once a second, moves between tiers; the host writes to `to` first and only then
  acknowledges in `from_`, so a move can duplicate, never lose. Here: once tier 0 is available
  again, up to 1000 records a tick back from a spill tier 1 that is not durable.

A placement count other than the record count, or a tier index past `tiers()`, is a fault, as
are an uncaught exception, the deadline (`timeout`) and the memory cap: that write gets 503 and
the instance is replaced. The host also keeps a key-value state for policies that remember
(`buffer_host.state_get`, `state_set`, `state_delete`, `insert_new`, with a TTL; see
`wit/buffer.wit`): it outlives instances, and a write's changes are kept only if the write
succeeds. This policy needs none of it; `buffer_host.now_ms()` is the host's clock.
"""

from wit_world import exports
from wit_world.exports.buffer_policy import (
    Move,
    Placement_Drop,
    Placement_Tier,
    PolicyInfo,
    Refusal_Throttled,
    Refusal_Unavailable,
)
from wit_world.imports import buffer_host
from componentize_py_types import Err

# The options, from `configure` (called on every new instance before the first call).
options = {"key_header": "x-key", "max_records": None, "drop_empty": True}


class Configure(exports.Configure):
    def configure(self, entries):
        given = {"key_header": "x-key", "max_records": None, "drop_empty": True}
        for entry in entries:
            key, value = entry.key, entry.value
            if key == "key_header":
                if not value or not all(c.isascii() and (c.isalnum() or c in "-_") for c in value):
                    raise Err(
                        f"option `key_header` must be a header name such as `X-Key`, got `{value}`"
                    )
                given["key_header"] = value.lower()
            elif key == "max_records":
                number = int(value) if value.isascii() and value.isdigit() else 0
                if not 1 <= number <= 4294967295:
                    raise Err(
                        f"option `max_records` must be a whole number above 0, got `{value}`"
                    )
                given["max_records"] = number
            elif key == "drop_empty":
                if value not in ("true", "false"):
                    raise Err(f"option `drop_empty` must be `true` or `false`, got `{value}`")
                given["drop_empty"] = value == "true"
            else:
                raise Err(
                    f"unknown option `{key}`; {{name}} takes `key_header`, `max_records` and `drop_empty`"
                )
        options.update(given)


def place():
    """The tier this write's records go to: 0 if it takes writes, else the spill tier 1 if there
    is one, else the write is refused."""
    tiers = buffer_host.tiers()
    if not tiers:
        raise Err(Refusal_Unavailable("the buffer has no tiers"))
    if tiers[0].available:
        return 0
    if len(tiers) >= 2:
        return 1
    raise Err(Refusal_Unavailable(f"tier 0 ({tiers[0].name}) is unavailable"))


def key(record):
    """The value of the record's `key_header` header as bytes, if it has one."""
    for name, value in record.headers:
        if name.lower() == options["key_header"]:
            return value.encode("utf-8")
    return None


class BufferPolicy(exports.BufferPolicy):
    def describe(self):
        return PolicyInfo([options["key_header"]])

    def on_write(self, records):
        most = options["max_records"]
        if most is not None and len(records) > most:
            raise Err(Refusal_Throttled((1000, f"at most {most} records per write")))
        tier = place()
        return [
            Placement_Drop("empty record")
            if options["drop_empty"] and record.size == 0
            else Placement_Tier((tier, key(record)))
            for record in records
        ]

    def next_read(self, worker):
        tiers = buffer_host.tiers()
        return 0 if tiers and tiers[0].lag > 0 else None

    def tick(self):
        tiers = buffer_host.tiers()
        if len(tiers) >= 2 and tiers[0].available and tiers[1].lag > 0 and not tiers[1].durable:
            return [Move(1, 0, 1000)]
        return []
