// `{{name}}`: one event {"message": line} per non-empty line. Build: `sluice plugins build .`
const utf8 = new TextDecoder('utf-8', { fatal: true });

function parse(payload) {
  let text;
  try {
    text = utf8.decode(payload);
  } catch {
    return { tag: 'malformed', val: 'not UTF-8' };
  }
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== '');
  return { tag: 'events', val: lines.map((line) => JSON.stringify({ message: line })) };
}

export const rawByteHandler = {
  deserializeBatch: (batch) => batch.map((record) => parse(record.payload)),
};
