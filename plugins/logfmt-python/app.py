"""`logfmt_python`: logfmt lines (`key=value key2="quoted value" flag`) -> one event per line.

The same format as the Rust `logfmt` and the JavaScript `logfmt_js` plugins; all three pass the
conformance suite in tests/conformance/logfmt.json. Built by `./scripts/build-plugins` with
componentize-py (pinned in plugins/tools/requirements.txt).

Rules: lines split on LF (a trailing CR is dropped); blank lines hold no event; a pair is
`key=value`, `key="quoted"` (escapes \\" \\\\ \\n \\t \\r) or a bare `key` (true); the last
of a repeated key wins; values are strings. A bad line makes the whole record malformed, with
a reason that starts `line N:`. It takes no options. Contract 0.2 (`wit/v0.2`, world
`deserializer-plugin`): the batch's payloads arrive in one buffer, the events go back written
into the reply's `data`.
"""

from json.encoder import encode_basestring as quote

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.deserializer import Outcome_Events, Outcome_Malformed, Reply
from wit_world.imports.types import EventRef_Output, Span

ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


class LineError(Exception):
    pass


def parse_line_fast(line):
    """The line's event, or None for what parse_line must look at character by character (a
    backslash, an unbalanced quote, anything it would refuse). The common line costs a few calls
    into str's methods, which run in C, instead of an interpreted loop per character: about 3x
    faster here, and most of this plugin's time is the interpreter."""
    if "\\" in line:
        return None
    # Even parts are outside quotes, odd parts are quoted values.
    parts = line.split('"')
    if not len(parts) % 2:
        return None
    event = {}
    last = len(parts) - 1
    for i in range(0, len(parts), 2):
        outside = parts[i]
        # A quoted value ends at a blank or the line's end.
        if i and outside and outside[0] not in " \t":
            return None
        tokens = outside.replace("\t", " ").split(" ")
        quoted = i < last
        if quoted:
            # `key=` right before the quote.
            tail = tokens.pop()
            if len(tail) < 2 or tail[-1] != "=" or "=" in tail[:-1]:
                return None
        for token in tokens:
            if token:
                key, eq, value = token.partition("=")
                if not key:
                    return None
                event[key] = value if eq else True
        if quoted:
            event[tail[:-1]] = parts[i + 1]
    return event


def parse_line(line):
    """The line's event, character by character: what parse_line_fast cannot take, with the reason."""
    event = {}
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in " \t":
            i += 1
        if i >= n:
            return event
        start = i
        while i < n and line[i] not in " \t=\"":
            i += 1
        key = line[start:i]
        if not key:
            raise LineError(f"expected a key at column {i + 1}, found `{line[i]}`")
        if i >= n or line[i] in " \t":
            event[key] = True
            continue
        if line[i] == '"':
            raise LineError(f"quote inside key `{key}`")
        i += 1  # past '='
        if i < n and line[i] == '"':
            i += 1
            value = []
            while True:
                if i >= n:
                    raise LineError(f"unterminated quoted value for key `{key}`")
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\":
                    if i + 1 >= n:
                        raise LineError(f"unterminated quoted value for key `{key}`")
                    e = line[i + 1]
                    if e not in ESCAPES:
                        raise LineError(f"unknown escape `\\{e}` in the value of `{key}`")
                    value.append(ESCAPES[e])
                    i += 2
                    continue
                value.append(c)
                i += 1
            if i < n and line[i] not in " \t":
                raise LineError(f"expected a space after the quoted value of `{key}`")
            event[key] = "".join(value)
        else:
            start = i
            while i < n and line[i] not in " \t":
                if line[i] == '"':
                    raise LineError(f"quote inside the unquoted value of `{key}`")
                i += 1
            event[key] = line[start:i]


def parse(payload):
    """The events of one record as JSON texts, or raises Malformed with the reason."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"not UTF-8 ({e.reason} at byte {e.start})")
    events = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.endswith("\r"):
            line = line[:-1]
        event = parse_line_fast(line)
        if event is None:
            try:
                event = parse_line(line)
            except LineError as e:
                raise Malformed(f"line {number}: {e}")
        if event:
            # What json.dumps(event, ensure_ascii=False, separators=(",", ":")) writes, without
            # the encoder it builds at every call (values here are strings or true): 2x faster.
            events.append(
                "{"
                + ",".join([quote(k) + (":true" if v is True else ":" + quote(v)) for k, v in event.items()])
                + "}"
            )
    return events


class Malformed(Exception):
    pass


class Deserializer(exports.Deserializer):
    def deserialize(self, data, records, content_types):
        out = bytearray()
        events = []
        outcomes = []
        for record in records:
            start = record.payload.offset
            try:
                texts = parse(data[start : start + record.payload.len])
            except Malformed as e:
                outcomes.append(Outcome_Malformed(str(e)))
                continue
            for text in texts:
                encoded = text.encode("utf-8")
                events.append(EventRef_Output(Span(len(out), len(encoded))))
                out += encoded
            outcomes.append(Outcome_Events(len(texts)))
        return Reply(bytes(out), events, outcomes)


class Configure(exports.Configure):
    def configure(self, options):
        if options:
            raise Err(f"unknown option `{options[0].key}`: the logfmt deserializer takes no options")
