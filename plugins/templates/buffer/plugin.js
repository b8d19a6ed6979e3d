// `{{name}}`: a buffer policy that shows every decision. Build: `sluice plugins build .`
//
//   buffer:
//     {{name}}:
//       key_header: X-Key    # optional: this request header's value is the record's Kafka key
//       max_records: 500     # optional: a write of more records is refused with 429
//       drop_empty: true     # optional, default true: a record of 0 bytes is dropped
//       tiers:               # the host's tiers, in order: 0 first, 1 the spill tier
//         - kafka: { bootstrap_servers: [127.0.0.1:9092], topics: [{ name: logs, group_id: sluice }] }
//         - bounded_blocking: { buffer_size: 12800 }
//
// The host keeps every byte and does all I/O; a policy sees each record's metadata (size,
// payloadHash, the headers `describe` asked for, origin, contentType) and the tiers' state
// (`tiers()`: name, durable, available, held, capacity, lag), and decides:
//
// - `configure`: called on every new instance with the YAML's options (sluice's own keys
//   `tiers`, `max_memory`, `timeout`, `recycle_after` never reach it). Throw a string naming
//   the option to stop the pipeline at startup. Here: `key_header` (default `X-Key`, a header
//   name), `max_records` (a whole number above 0), `drop_empty` (`true` or `false`); anything
//   else is refused.
// - `describe`: the request headers the policy reads, asked once per instance; only these
//   reach `onWrite`. Here: `key_header`, lowercased.
// - `onWrite`: one source write, all or none. Return exactly one placement per record, in
//   order: `{ tag: 'tier', val: [index, key] }` (an index of `tiers()`; `key` a Uint8Array sets
//   the Kafka key, `undefined` keeps the source's) or `{ tag: 'drop', val: reason }`
//   (dead-lettered with the reason; the client still gets 200). Or refuse the whole write by
//   throwing `{ tag: 'throttled', val: [retryAfterMs, reason] }` (429 with Retry-After) or
//   `{ tag: 'unavailable', val: reason }` (503). Here: more than `max_records` records ->
//   throttled for 1 s; a record of 0 bytes -> dropped (`empty record`) when `drop_empty`;
//   every other record goes to tier 0 if it is available, else to tier 1 (the spill tier) if
//   the YAML lists one, else the write is refused as unavailable (even a write of nothing but
//   empty records); a record with the `key_header` header is keyed by its value.
// - `nextRead`: the tier a free worker should read next, or `undefined` to read the tiers in
//   turn (a tier with nothing to read is skipped, so a policy cannot starve the read side).
//   Here: tier 0 while it has records not yet read (`lag`).
// - `tick`: about once a second, moves between tiers; the host writes to `to` first and only
//   then acknowledges in `from`, so a move can duplicate, never lose. Here: once tier 0 is
//   available again, up to 1000 records a tick back from a spill tier 1 that is not durable.
//
// A placement count other than the record count, or a tier index past `tiers()`, is a fault,
// as are an uncaught exception, the deadline (`timeout`) and the memory cap: that write gets 503
// and the instance is replaced. The host also keeps a key-value state for policies that
// remember (`stateGet`, `stateSet`, `stateDelete`, `insertNew` from the same import, with a
// TTL; see `wit/buffer.wit`): it outlives instances, and a write's changes are kept only if the
// write succeeds. This policy needs none of it; `nowMs()` is the host's clock. Every u64 (held,
// lag, capacity, payloadHash, times) arrives as a BigInt.

import { tiers } from 'sluice:plugin/buffer-host@0.2.0';

// The options, from `configure` (called on every new instance before the first call).
let options = { keyHeader: 'x-key', maxRecords: null, dropEmpty: true };

export const configure = {
  configure(entries) {
    const given = { keyHeader: 'x-key', maxRecords: null, dropEmpty: true };
    for (const { key, value } of entries) {
      if (key === 'key_header') {
        if (!/^[A-Za-z0-9_-]+$/.test(value)) {
          throw `option \`key_header\` must be a header name such as \`X-Key\`, got \`${value}\``;
        }
        given.keyHeader = value.toLowerCase();
      } else if (key === 'max_records') {
        const n = /^[0-9]+$/.test(value) ? Number(value) : 0;
        if (n < 1 || n > 4294967295) {
          throw `option \`max_records\` must be a whole number above 0, got \`${value}\``;
        }
        given.maxRecords = n;
      } else if (key === 'drop_empty') {
        if (value !== 'true' && value !== 'false') {
          throw `option \`drop_empty\` must be \`true\` or \`false\`, got \`${value}\``;
        }
        given.dropEmpty = value === 'true';
      } else {
        throw `unknown option \`${key}\`; {{name}} takes \`key_header\`, \`max_records\` and \`drop_empty\``;
      }
    }
    options = given;
  },
};

const encoder = new TextEncoder();

// The tier this write's records go to: 0 if it takes writes, else the spill tier 1 if there is
// one, else the write is refused.
function place() {
  const all = tiers();
  if (all.length === 0) throw { tag: 'unavailable', val: 'the buffer has no tiers' };
  if (all[0].available) return 0;
  if (all.length >= 2) return 1;
  throw { tag: 'unavailable', val: `tier 0 (${all[0].name}) is unavailable` };
}

export const bufferPolicy = {
  describe() {
    return { headers: [options.keyHeader] };
  },

  onWrite(records) {
    if (options.maxRecords !== null && records.length > options.maxRecords) {
      throw { tag: 'throttled', val: [1000, `at most ${options.maxRecords} records per write`] };
    }
    const tier = place();
    return records.map((record) => {
      if (options.dropEmpty && record.size === 0) {
        return { tag: 'drop', val: 'empty record' };
      }
      const header = record.headers.find(([name]) => name.toLowerCase() === options.keyHeader);
      return { tag: 'tier', val: [tier, header === undefined ? undefined : encoder.encode(header[1])] };
    });
  },

  nextRead(worker) {
    const all = tiers();
    return all.length > 0 && all[0].lag > 0n ? 0 : undefined;
  },

  tick() {
    const all = tiers();
    if (all.length >= 2 && all[0].available && all[1].lag > 0n && !all[1].durable) {
      return [{ from: 1, to: 0, maxRecords: 1000 }];
    }
    return [];
  },
};
