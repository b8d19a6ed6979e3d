// `{{name}}`: a processor that shows every verdict. Build: `sluice plugins build .`
//
//   processor:
//     - {{name}}:
//         tag: blue          # required: written into every event as "tag"
//         drop_level: debug  # optional: events whose "level" is this are dropped
//         split: items       # optional: an event whose "items" is a list becomes one event per item
//
// Per event: `level` equal to `drop_level` -> drop; already holding this `tag` -> keep (nothing
// is copied back); a `split` field that is not a list -> failed; otherwise replaced by the event
// (one per item with `split`) with `tag` and `received_at_ms` added.

// The options, from `configure` (called on every new instance before the first batch).
let options = { tag: null, drop_level: null, split: null };

export const configure = {
  configure(entries) {
    const given = { tag: null, drop_level: null, split: null };
    for (const { key, value } of entries) {
      if (!Object.hasOwn(given, key)) {
        throw `unknown option \`${key}\`; {{name}} takes \`tag\`, \`drop_level\` and \`split\``;
      }
      given[key] = value;
    }
    if (given.tag === null) {
      throw 'option `tag` is required: the value written into every event';
    }
    options = given;
  },
};

const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

// The reply under construction: new events are written into `data` and pointed at.
class Out {
  constructor() {
    this.chunks = [];
    this.size = 0;
    this.events = [];
  }

  push(event) {
    const bytes = encoder.encode(JSON.stringify(event));
    this.events.push({ tag: 'output', val: { offset: this.size, len: bytes.length } });
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  data() {
    const data = new Uint8Array(this.size);
    let at = 0;
    for (const chunk of this.chunks) {
      data.set(chunk, at);
      at += chunk.length;
    }
    return data;
  }
}

function verdict(body, receivedAtMs, out) {
  let event;
  try {
    event = JSON.parse(utf8.decode(body));
  } catch {
    event = null;
  }
  if (event === null || typeof event !== 'object' || Array.isArray(event)) {
    return { tag: 'failed', val: 'not a JSON object' };
  }
  if (typeof event.level === 'string' && event.level === options.drop_level) {
    return { tag: 'drop' };
  }
  if (event.tag === options.tag) {
    return { tag: 'keep' };
  }
  event.tag = options.tag;
  // u64 arrives as a BigInt; milliseconds since 1970 fit a double exactly.
  event.received_at_ms = Number(receivedAtMs);
  const field = options.split;
  if (field === null || !Object.hasOwn(event, field)) {
    out.push(event);
    return { tag: 'replace', val: 1 };
  }
  const items = event[field];
  if (!Array.isArray(items)) {
    return { tag: 'failed', val: `field \`${field}\` is not a list` };
  }
  for (const item of items) {
    event[field] = item;
    out.push(event);
  }
  return { tag: 'replace', val: items.length };
}

export const processor = {
  process(data, events) {
    const out = new Out();
    const verdicts = events.map((e) =>
      verdict(data.subarray(e.body.offset, e.body.offset + e.body.len), e.receivedAtMs, out),
    );
    return { data: out.data(), events: out.events, verdicts };
  },
};
