// `logfmt_js`: logfmt lines (`key=value key2="quoted value" flag`) -> one event per line.
//
// The same format as the Rust `logfmt` and the Python `logfmt_python` plugins; all three pass the
// conformance suite in tests/conformance/logfmt.json. Built by `./scripts/build-plugins` with
// jco + componentize-js (pinned in plugins/tools/package.json).

const ESCAPES = { '"': '"', '\\': '\\', n: '\n', t: '\t', r: '\r' };
const decoder = new TextDecoder('utf-8', { fatal: true });

class LineError extends Error {}

function isSpace(c) {
  return c === ' ' || c === '\t';
}

function parseLine(line) {
  const event = {};
  let i = 0;
  const n = line.length;
  for (;;) {
    while (i < n && isSpace(line[i])) i++;
    if (i >= n) return event;
    const start = i;
    while (i < n && !isSpace(line[i]) && line[i] !== '=' && line[i] !== '"') i++;
    const key = line.slice(start, i);
    if (key === '') throw new LineError(`expected a key at column ${i + 1}, found \`${line[i]}\``);
    if (i >= n || isSpace(line[i])) {
      event[key] = true;
      continue;
    }
    if (line[i] === '"') throw new LineError(`quote inside key \`${key}\``);
    i++; // past '='
    if (i < n && line[i] === '"') {
      i++;
      let value = '';
      for (;;) {
        if (i >= n) throw new LineError(`unterminated quoted value for key \`${key}\``);
        const c = line[i];
        if (c === '"') {
          i++;
          break;
        }
        if (c === '\\') {
          if (i + 1 >= n) throw new LineError(`unterminated quoted value for key \`${key}\``);
          const e = line[i + 1];
          if (!(e in ESCAPES)) throw new LineError(`unknown escape \`\\${e}\` in the value of \`${key}\``);
          value += ESCAPES[e];
          i += 2;
          continue;
        }
        value += c;
        i++;
      }
      if (i < n && !isSpace(line[i])) {
        throw new LineError(`expected a space after the quoted value of \`${key}\``);
      }
      event[key] = value;
    } else {
      const start = i;
      while (i < n && !isSpace(line[i])) {
        if (line[i] === '"') throw new LineError(`quote inside the unquoted value of \`${key}\``);
        i++;
      }
      event[key] = line.slice(start, i);
    }
  }
}

function parse(payload) {
  let text;
  try {
    text = decoder.decode(payload);
  } catch (e) {
    return { tag: 'malformed', val: `not UTF-8 (${e.message})` };
  }
  const events = [];
  const lines = text.split('\n');
  for (let number = 0; number < lines.length; number++) {
    let line = lines[number];
    if (line.endsWith('\r')) line = line.slice(0, -1);
    let event;
    try {
      event = parseLine(line);
    } catch (e) {
      if (e instanceof LineError) return { tag: 'malformed', val: `line ${number + 1}: ${e.message}` };
      throw e;
    }
    if (Object.keys(event).length > 0) events.push(JSON.stringify(event));
  }
  return { tag: 'events', val: events };
}

export const rawByteHandler = {
  deserializeBatch(batch) {
    return batch.map((record) => parse(record.payload));
  },
};
