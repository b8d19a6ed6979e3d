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

// The line's event, or null for what parseLine must look at character by character (a
// backslash, an unbalanced quote, anything it would refuse). The common line costs a few calls
// into String's built-in methods instead of an interpreted loop per character: the engine
// interprets this file's code (there is no JIT inside Wasm), so most of this plugin's time is
// the interpreter.
function parseLineFast(line) {
  if (line.includes('\\')) return null;
  // Even parts are outside quotes, odd parts are quoted values.
  const parts = line.split('"');
  if (parts.length % 2 === 0) return null;
  const event = {};
  const last = parts.length - 1;
  for (let i = 0; i < parts.length; i += 2) {
    const outside = parts[i];
    // A quoted value ends at a blank or the line's end.
    if (i > 0 && outside !== '' && outside[0] !== ' ' && outside[0] !== '\t') return null;
    const tokens = outside.replaceAll('\t', ' ').split(' ');
    const quoted = i < last;
    let tail;
    if (quoted) {
      // `key=` right before the quote.
      tail = tokens.pop();
      if (tail.length < 2 || tail.indexOf('=') !== tail.length - 1) return null;
    }
    for (const token of tokens) {
      if (token === '') continue;
      const eq = token.indexOf('=');
      if (eq === 0) return null;
      if (eq < 0) event[token] = true;
      else event[token.slice(0, eq)] = token.slice(eq + 1);
    }
    if (quoted) event[tail.slice(0, -1)] = parts[i + 1];
  }
  return event;
}

// The line's event, character by character: what parseLineFast cannot take, with the reason.
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

class Malformed extends Error {}

// The events of one record as JSON texts, or throws Malformed with the reason.
function parse(payload) {
  let text;
  try {
    text = decoder.decode(payload);
  } catch (e) {
    throw new Malformed(`not UTF-8 (${e.message})`);
  }
  const events = [];
  const lines = text.split('\n');
  for (let number = 0; number < lines.length; number++) {
    let line = lines[number];
    if (line.endsWith('\r')) line = line.slice(0, -1);
    let event = parseLineFast(line);
    if (event === null) {
      try {
        event = parseLine(line);
      } catch (e) {
        if (e instanceof LineError) throw new Malformed(`line ${number + 1}: ${e.message}`);
        throw e;
      }
    }
    if (Object.keys(event).length > 0) events.push(JSON.stringify(event));
  }
  return events;
}

const encoder = new TextEncoder();

// Contract 0.2: the batch's payloads in one buffer; events written into the reply's `data`.
export const deserializer = {
  deserialize(data, records, contentTypes) {
    const chunks = [];
    const events = [];
    const outcomes = [];
    let size = 0;
    for (const record of records) {
      const { offset, len } = record.payload;
      let texts;
      try {
        texts = parse(data.subarray(offset, offset + len));
      } catch (e) {
        if (e instanceof Malformed) {
          outcomes.push({ tag: 'malformed', val: e.message });
          continue;
        }
        throw e;
      }
      for (const text of texts) {
        const bytes = encoder.encode(text);
        events.push({ tag: 'output', val: { offset: size, len: bytes.length } });
        chunks.push(bytes);
        size += bytes.length;
      }
      outcomes.push({ tag: 'events', val: texts.length });
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

export const configure = {
  configure(options) {
    if (options.length > 0) {
      throw `unknown option \`${options[0].key}\`: the logfmt deserializer takes no options`;
    }
  },
};
