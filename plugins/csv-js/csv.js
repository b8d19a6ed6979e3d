// `csv`: comma-separated rows -> one event per row, keyed by column name.
//
// Options (the `options:` block of the pipeline's deserializer, passed to `configure`):
//   delimiter: one character, default `,` (write "\t" in YAML for tabs)
//   columns:   the column names, e.g. [ts, level, msg]; when given, every row is data. Without
//              it, the first row of each record is its header.
// Fields follow RFC 4180: a field in double quotes may hold the delimiter, line breaks and `""`
// (one quote). Blank lines are skipped. Every value is a string. A row with the wrong number of
// fields, or an unterminated quote, makes the record malformed with a reason `line N: ...`.
// Contract 0.2 (`wit/v0.2`, world `deserializer-plugin`). Built by `./scripts/build-plugins` with
// componentize-js (pinned in plugins/tools/package.json).

let delimiter = ',';
let columns = null;
const decoder = new TextDecoder('utf-8', { fatal: true });

export const configure = {
  configure(options) {
    delimiter = ',';
    columns = null;
    for (const { key, value } of options) {
      if (key === 'delimiter') {
        if ([...value].length !== 1 || value === '"' || value === '\n' || value === '\r') {
          throw `option \`delimiter\` must be one character other than a quote or line break, got \`${value}\``;
        }
        delimiter = value;
      } else if (key === 'columns') {
        let parsed;
        try {
          parsed = JSON.parse(value);
        } catch (e) {
          parsed = null;
        }
        if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((c) => typeof c === 'string' && c !== '')) {
          throw `option \`columns\` must be a non-empty list of column names, got \`${value}\``;
        }
        const dup = parsed.find((c, i) => parsed.indexOf(c) !== i);
        if (dup !== undefined) throw `option \`columns\` names \`${dup}\` twice`;
        columns = parsed;
      } else {
        throw `unknown option \`${key}\`; the csv deserializer takes \`delimiter\` and \`columns\``;
      }
    }
  },
};

class RowError extends Error {}

// Splits `text` into rows of fields; each row carries the line it starts on.
function rows(text) {
  const out = [];
  let row = [];
  let field = '';
  let line = 1;
  let rowLine = 1;
  let i = 0;
  let quoted = false;
  let touched = false; // the row has a field (so a blank line is no row)
  const n = text.length;
  const endRow = () => {
    if (touched || row.length > 0) {
      row.push(field);
      out.push({ line: rowLine, fields: row });
    }
    row = [];
    field = '';
    touched = false;
  };
  while (i < n) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i++;
        const next = text[i];
        if (i < n && next !== delimiter && next !== '\n' && next !== '\r') {
          throw new RowError(`line ${line}: expected \`${delimiter}\` or a line break after a closing quote`);
        }
        continue;
      }
      if (c === '\n') line++;
      field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '') {
      quoted = true;
      touched = true;
      i++;
    } else if (c === delimiter) {
      row.push(field);
      field = '';
      touched = true;
      i++;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      i++;
      endRow();
      line++;
      rowLine = line;
    } else {
      if (c === '"') throw new RowError(`line ${line}: quote inside an unquoted field`);
      field += c;
      touched = true;
      i++;
    }
  }
  if (quoted) throw new RowError(`line ${rowLine}: unterminated quoted field`);
  endRow();
  return out;
}

// The events of one record as JSON texts, or throws RowError with the reason.
function parse(payload) {
  let text;
  try {
    text = decoder.decode(payload);
  } catch (e) {
    throw new RowError(`not UTF-8 (${e.message})`);
  }
  const all = rows(text);
  let names = columns;
  let data = all;
  if (names === null) {
    if (all.length === 0) return [];
    names = all[0].fields;
    data = all.slice(1);
    const empty = names.findIndex((c) => c === '');
    if (empty >= 0) throw new RowError(`line ${all[0].line}: header column ${empty + 1} has no name`);
    const dup = names.find((c, i) => names.indexOf(c) !== i);
    if (dup !== undefined) throw new RowError(`line ${all[0].line}: header names \`${dup}\` twice`);
  }
  return data.map(({ line, fields }) => {
    if (fields.length !== names.length) {
      throw new RowError(`line ${line}: ${fields.length} fields, expected ${names.length} (${names.join(', ')})`);
    }
    const event = {};
    names.forEach((name, i) => {
      event[name] = fields[i];
    });
    return JSON.stringify(event);
  });
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
        if (e instanceof RowError) {
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
