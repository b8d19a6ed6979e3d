// `{{name}}`: one event {"message": line} per non-empty line; a record that is not UTF-8 is
// malformed. Build: `sluice plugins build .`
//
// Contract 0.2 (`wit/`): the batch's payloads arrive in one buffer (`data`) with a span per
// record; events go back written into the reply's `data`, one span each, and one outcome per
// record says how many of them are its.
const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

export const configure = {
  configure(options) {
    if (options.length > 0) {
      throw `unknown option \`${options[0].key}\`: {{name}} takes no options`;
    }
  },
};

export const deserializer = {
  deserialize(data, records, contentTypes) {
    const chunks = [];
    const events = [];
    const outcomes = [];
    let size = 0;
    for (const record of records) {
      const { offset, len } = record.payload;
      let text;
      try {
        text = utf8.decode(data.subarray(offset, offset + len));
      } catch {
        outcomes.push({ tag: 'malformed', val: 'not UTF-8' });
        continue;
      }
      const lines = text.split(/\r?\n/).filter((line) => line.trim() !== '');
      for (const line of lines) {
        const bytes = encoder.encode(JSON.stringify({ message: line }));
        events.push({ tag: 'output', val: { offset: size, len: bytes.length } });
        chunks.push(bytes);
        size += bytes.length;
      }
      outcomes.push({ tag: 'events', val: lines.length });
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return { data: out, events, outcomes };
  },
};
