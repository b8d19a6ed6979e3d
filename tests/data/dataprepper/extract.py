#!/usr/bin/env python3
"""Extract Data Prepper processor examples from the OpenSearch documentation-website
mirror into machine-readable fixtures.

Outputs (relative to this script's directory):
  pipelines/<processor>-<n>.yaml   YAML pipeline configs found on each processor page
  pipelines/route-<n>.yaml         pipeline configs that use `route:` (any _data-prepper page)
  conformance/<processor>.json     config + input event + expected output cases
  README.md                        counts and doc problems

Automatic extraction is merged with hand-maintained files in conformance/overrides/:
  <processor>.json  {"drop": [id, ...], "patch": {id: {field: value}}, "add": [case, ...]}
  doc_issues.json   [{"where": "file:line", "processor": "...", "issue": "..."}]

Reproducible: only reads `git show <REV>:<path>` from the mirror.  Stdlib + PyYAML.
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import yaml

REPO = os.environ.get("DOCS_REPO", "/work/.mirror/opensearch-project+documentation-website/repo")
REV = os.environ.get("DOCS_REV", "HEAD")
HERE = os.path.dirname(os.path.abspath(__file__))
PROC_DIR = "_data-prepper/pipelines/configuration/processors/"
DP_DIR = "_data-prepper/"
ROUTE_PAGES_FIRST = ["_data-prepper/pipelines/pipelines.md"]

# Conformance tables written by hand, not extracted (stateful processors' multi-event
# cases: `inputs`/`outputs`); kept when the others are regenerated.
HAND_WRITTEN = {"aggregate.json", "otel_traces.json"}

PROCESSORS = [
    "add_entries", "delete_entries", "rename_keys", "copy_values", "select_entries",
    "convert_entry_type", "drop_events", "parse_json", "key_value", "csv", "date", "grok",
    "lowercase_string", "uppercase_string", "trim_string", "substitute_string",
    "split_string", "truncate", "obfuscate", "flatten", "list_to_map", "map_to_list",
    "split_event", "string_converter", "write_json", "delay",
    "dissect", "translate", "user_agent", "parse_xml", "decompress",
    "otel_metrics", "trace_peer_forwarder", "geoip",
]

# ----------------------------------------------------------------------------- git

def git(*args):
    return subprocess.run(["git", "-C", REPO] + list(args), check=True,
                          capture_output=True, text=True).stdout


def show(path):
    return git("show", f"{REV}:{path}")


COMMIT = git("rev-parse", REV).strip()
ALL_FILES = git("ls-tree", "-r", "--name-only", REV).splitlines()

# ----------------------------------------------------------------------------- markdown

FENCE = re.compile(r"^(\s*)```\s*([A-Za-z0-9_+-]*)\s*$")


def code_blocks(text):
    """Return fenced code blocks: dict(lang, line (1-based line of the opening fence), text)."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            start, lang, body = i + 1, m.group(2).lower(), []
            i += 1
            while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
                body.append(lines[i])
                i += 1
            out.append({"lang": lang, "line": start, "text": "\n".join(body)})
        i += 1
    return out

# ----------------------------------------------------------------------------- lenient parsers

DOTS_LINE = re.compile(r"^\s*\.{3,}\s*$")


def load_yaml(text):
    """Parse a doc YAML block.  Returns (obj, problems) where problems lists what had to be
    repaired.  Elision lines consisting only of dots ('...', '....') are removed."""
    problems = []
    try:
        return yaml.safe_load(text), problems
    except yaml.YAMLError as e:
        problems.append("not valid YAML as written (%s)" % str(e).split("\n")[0])
    cleaned = "\n".join(l for l in text.split("\n") if not DOTS_LINE.match(l))
    cleaned = textwrap.dedent(cleaned)
    if cleaned != text:
        problems.append("elision placeholder lines ('...'/'....') removed before parsing")
    try:
        return yaml.safe_load(cleaned), problems
    except yaml.YAMLError as e:
        problems.append("still not valid YAML after removing placeholders (%s)" % str(e).split("\n")[0])
        return None, problems


def load_json(text):
    """Parse a doc JSON block.  Returns (obj, problems).  Handles '...' elision lines,
    trailing commas, OpenSearch-Dashboards triple-quoted strings, a bare `"hits": [...]`
    fragment and newline-delimited JSON (returned as {"__ndjson__": [...]})."""
    problems = []
    try:
        return json.loads(text), problems
    except ValueError:
        pass
    t = "\n".join(l for l in text.split("\n") if not DOTS_LINE.match(l))
    if t != text:
        problems.append("elision placeholder '...' in JSON")
    t2 = re.sub(r'"""(.*?)"""', lambda m: json.dumps(m.group(1)), t, flags=re.S)
    if t2 != t:
        problems.append('triple-quoted """...""" string (Dashboards console syntax), not JSON')
        t = t2
    t2 = re.sub(r",(\s*[}\]])", r"\1", t)
    if t2 != t:
        problems.append("trailing comma before closing bracket")
        t = t2
    for cand in (t, "{" + t + "}"):
        try:
            obj = json.loads(cand)
            if cand is not t:
                problems.append("fragment (`\"hits\": [...]`) not wrapped in an object")
            return obj, problems
        except ValueError:
            pass
    # NDJSON: one event per non-empty line
    lines = [l for l in t.split("\n") if l.strip()]
    try:
        evs = [json.loads(l) for l in lines]
        if len(evs) > 1:
            return {"__ndjson__": evs}, problems
    except ValueError:
        pass
    problems.append("not valid JSON")
    return None, problems


def curl_payload(text):
    m = re.search(r"-d\s+'(.*)'", text, flags=re.S)
    if not m:
        return None
    body = m.group(1).replace("'\\''", "'")
    try:
        return json.loads(body)
    except ValueError:
        return None


def find_hits(obj):
    """Return the list of _source documents of an OpenSearch search response, or None."""
    if isinstance(obj, dict):
        h = obj.get("hits")
        if isinstance(h, list) and all(isinstance(x, dict) and "_source" in x for x in h):
            return [x["_source"] for x in h]
        for v in obj.values():
            r = find_hits(v)
            if r is not None:
                return r
    return None

# ----------------------------------------------------------------------------- config classification

def is_processor_list(obj):
    return (isinstance(obj, list) and obj and
            all(isinstance(x, dict) and len(x) == 1 for x in obj))


def classify_yaml(obj):
    """-> ('fragment', processor_list) | ('pipeline', {name: pipeline}) | (None, None)"""
    if isinstance(obj, dict) and set(obj) == {"processor"} and is_processor_list(obj["processor"]):
        return "fragment", obj["processor"]
    if is_processor_list(obj):
        return "fragment", obj
    if isinstance(obj, dict):
        pipes = {k: v for k, v in obj.items()
                 if isinstance(v, dict) and ({"source", "processor", "sink", "route"} & set(v))}
        if pipes:
            return "pipeline", pipes
    return None, None


def looks_like_yaml_config(text):
    return bool(re.search(r"^\s*(-\s+)?[A-Za-z0-9_-]+:\s*$", text, re.M)) and \
        bool(re.search(r"^\s*(processor|source|sink|route)\s*:", text, re.M))


def pipeline_processors(kind, obj):
    if kind == "fragment":
        return obj
    for p in obj.values():
        if isinstance(p.get("processor"), list):
            return p["processor"]
    return []

# ----------------------------------------------------------------------------- output helpers

class _Dumper(yaml.SafeDumper):
    pass


def _str_repr(dumper, data):
    style = "'" if data == "" else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_repr)


def dump_yaml(obj):
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=1000)


def comment(text):
    return "\n".join(("#   " + l) if l.strip() else "#" for l in text.split("\n"))


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(content)


def slug(proc):
    return proc.replace("_", "-")

# ----------------------------------------------------------------------------- nondeterminism

def _walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from _walk(v)


def nondeterminism(procs):
    reasons = []
    for k, v in _walk(procs):
        if k == "from_time_received" and v is True:
            reasons.append("from_time_received (ingest time)")
        if isinstance(v, str) and "generateUuid" in v:
            reasons.append("generateUuid()")
        if k == "patterns" and isinstance(v, list):
            for p in v:
                if isinstance(p, str) and not p.startswith("epoch") and \
                        not re.search(r"[yu]", re.sub(r"'[^']*'", "", p)):
                    reasons.append("date pattern %r has no year (current year is used)" % p)
                    break
    return sorted(set(reasons))

# ----------------------------------------------------------------------------- matching

def leaves(o, acc=None):
    acc = [] if acc is None else acc
    if isinstance(o, dict):
        for v in o.values():
            leaves(v, acc)
    elif isinstance(o, list):
        for v in o:
            leaves(v, acc)
    else:
        acc.append(json.dumps(o))
    return acc


def match_events(inputs, outputs):
    """Greedy assignment of output docs to input events by shared leaf values.
    Returns list (len(inputs)) of output or None (dropped)."""
    scores = []
    for i, ev in enumerate(inputs):
        li = leaves(ev)
        for j, out in enumerate(outputs):
            lo = set(leaves(out))
            s = sum(1 for x in li if x in lo) / max(1, len(li))
            scores.append((s, -abs(i - j), i, j))
    scores.sort(reverse=True)
    res, used_i, used_j = [None] * len(inputs), set(), set()
    for s, _, i, j in scores:
        if s <= 0 or i in used_i or j in used_j:
            continue
        res[i] = outputs[j]
        used_i.add(i)
        used_j.add(j)
    if len(inputs) == len(outputs):
        # nothing is dropped: pair any leftovers (values fully transformed) by position
        free_j = [j for j in range(len(outputs)) if j not in used_j]
        for i in range(len(inputs)):
            if res[i] is None and free_j:
                res[i] = outputs[free_j.pop(0)]
    return res

# ----------------------------------------------------------------------------- main extraction

AUTO_ISSUES = []   # (where, issue)


def block_kind(b):
    """'yaml' | 'json' | 'bash' | 'other'"""
    lang, text = b["lang"], b["text"]
    if lang in ("yaml", "yml"):
        return "yaml"
    if lang in ("bash", "sh", "shell", "console"):
        return "bash"
    if lang in ("json", ""):
        obj, _ = load_json(text)
        if obj is not None:
            return "json"
        if looks_like_yaml_config(text):
            return "yaml"
        if lang == "json":
            return "json"  # broken JSON, reported later
    return "other"


def processor_page(proc):
    path = PROC_DIR + slug(proc) + ".md"
    if path not in ALL_FILES:
        raise SystemExit("missing doc page " + path)
    return path


def extract_page(proc):
    path = processor_page(proc)
    text = show(path)
    blocks = code_blocks(text)
    pipelines, cases = [], []
    cfg = None           # dict(source, procs)
    pending = None       # dict(kind='single'|'multi', events, source)
    for b in blocks:
        where = "%s:%d" % (path, b["line"])
        kind = block_kind(b)
        if kind == "yaml":
            obj, probs = load_yaml(b["text"])
            ykind, payload = classify_yaml(obj)
            if ykind is None:
                continue
            if b["lang"] not in ("yaml", "yml"):
                probs = ["YAML config in a code block fenced as %r" % (b["lang"] or "(no language)")] + probs
            pipelines.append({"where": where, "block": b, "kind": ykind, "obj": obj,
                              "payload": payload, "problems": probs})
            for p in probs:
                if "placeholder" not in p and "not valid YAML as written" not in p:
                    AUTO_ISSUES.append((where, p))
            procs = pipeline_processors(ykind, payload)
            cfg = {"source": where, "procs": procs} if procs else None
            pending = None
        elif kind == "bash":
            evs = curl_payload(b["text"])
            if cfg and isinstance(evs, list):
                pending = {"kind": "multi", "events": evs, "source": where}
        elif kind == "json":
            obj, probs = load_json(b["text"])
            for p in probs:
                if "elision" not in p:
                    AUTO_ISSUES.append((where, "JSON block: " + p))
            if obj is None or cfg is None:
                continue
            hits = find_hits(obj)
            if hits is not None:
                if pending and pending["kind"] == "multi":
                    outs = match_events(pending["events"], hits)
                    for k, (ev, out) in enumerate(zip(pending["events"], outs), 1):
                        cases.append(make_case(proc, cfg, ev, out, pending["source"], where, k,
                                               "auto: curl payload event #%d matched to stored "
                                               "OpenSearch document by shared values" % k))
                    cfg, pending = None, None
                continue
            events = obj["__ndjson__"] if isinstance(obj, dict) and "__ndjson__" in obj else [obj]
            if pending is None:
                pending = {"kind": "single", "events": events, "source": where}
            elif pending["kind"] == "single":
                outs = events
                if len(outs) == len(pending["events"]):
                    for k, (ev, out) in enumerate(zip(pending["events"], outs), 1):
                        cases.append(make_case(proc, cfg, ev, out, pending["source"], where,
                                               k if len(outs) > 1 else None,
                                               "auto: config, input block, output block"))
                cfg, pending = None, None
    return path, pipelines, cases


def make_case(proc, cfg, ev, out, in_src, out_src, k, note):
    procs = cfg["procs"]
    processor = procs[0] if len(procs) == 1 else procs
    cid = cfg["source"] + ("#%d" % k if k else "")
    notes = [note]
    if len(procs) > 1:
        notes.append("processor chain of %d processors as in the doc pipeline (%s)"
                     % (len(procs), ", ".join(next(iter(p)) for p in procs)))
    nd = nondeterminism(procs)
    if nd:
        notes.append("nondeterministic: " + "; ".join(nd))
    return {"id": cid, "source": cfg["source"], "processor": processor, "input": ev,
            "output": out, "notes": "; ".join(notes),
            "input_source": in_src, "output_source": out_src}


def apply_overrides(proc, cases):
    p = os.path.join(HERE, "conformance", "overrides", proc + ".json")
    if not os.path.exists(p):
        return cases, False
    with open(p) as f:
        ov = json.load(f)
    drop = set(ov.get("drop", []))
    ids = {c["id"] for c in cases}
    for d in drop | set(ov.get("patch", {})):
        if d not in ids:
            print("WARNING: override for %s refers to unknown case id %s" % (proc, d), file=sys.stderr)
    out = []
    for c in cases:
        if c["id"] in drop:
            continue
        patch = ov.get("patch", {}).get(c["id"])
        if patch:
            c = dict(c, **patch)
        out.append(c)
    for c in ov.get("add", []):
        c = dict(c)
        c.setdefault("id", c["source"])
        c["notes"] = c.get("notes", "")
        out.append(c)
    return out, True


def normalise_case(c):
    keys = ["id", "source", "processor", "input", "output", "notes"]
    extra = [k for k in c if k not in keys]
    return {k: c[k] for k in keys + sorted(extra) if k in c}


def pipeline_file(proc, n, p):
    b = p["block"]
    head = ["# Extracted from opensearch-project/documentation-website @ %s" % COMMIT,
            "# source: %s (line of the opening ``` fence)" % p["where"]]
    if p["kind"] == "fragment":
        name = slug(proc) + "-pipeline"
        wrapped = {name: {"source": {"http": {}}, "processor": p["payload"], "sink": [{"stdout": {}}]}}
        head += ["# wrapped: true -- the doc block is only a processor-list fragment; it was wrapped",
                 "#   into a minimal pipeline (http source -> stdout sink).",
                 "# original block (verbatim):", comment(b["text"]), ""]
        return "\n".join(head) + "\n" + dump_yaml(wrapped)
    head.append("# wrapped: false -- body below is the doc block verbatim")
    for pr in p["problems"]:
        head.append("# NOTE: " + pr)
    return "\n".join(head) + "\n\n" + b["text"].rstrip("\n") + "\n"


def index_entry(fn, group, where, wrapped, text, problems, procs):
    try:
        yaml.safe_load(text)
        valid = True
    except yaml.YAMLError:
        valid = False
    return {"file": fn, "group": group, "source": where, "wrapped": wrapped,
            "file_is_valid_yaml": True if wrapped else valid,
            "doc_block_is_valid_yaml": valid, "processors": [next(iter(p)) for p in procs],
            "problems": problems}


def extract_routes():
    pages = ROUTE_PAGES_FIRST + sorted(f for f in ALL_FILES if f.startswith(DP_DIR)
                                       and f.endswith(".md") and f not in ROUTE_PAGES_FIRST)
    routes = []
    for path in pages:
        for b in code_blocks(show(path)):
            if not re.search(r"^\s*route\s*:", b["text"], re.M):
                continue
            where = "%s:%d" % (path, b["line"])
            obj, probs = load_yaml(b["text"])
            if b["lang"] not in ("yaml", "yml"):
                probs = ["YAML config in a code block fenced as %r" % (b["lang"] or "(no language)")] + probs
                AUTO_ISSUES.append((where, probs[0]))
            routes.append({"where": where, "block": b, "obj": obj, "problems": probs})
    return routes


def main():
    for sub in ("pipelines", "conformance"):
        d = os.path.join(HERE, sub)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            if f.endswith((".yaml", ".json")) and f not in HAND_WRITTEN:
                os.remove(os.path.join(d, f))
    summary, index = [], []
    for proc in PROCESSORS:
        path, pipes, auto_cases = extract_page(proc)
        for n, p in enumerate(pipes, 1):
            fn = "%s-%d.yaml" % (proc, n)
            write(os.path.join(HERE, "pipelines", fn), pipeline_file(proc, n, p))
            index.append(index_entry(fn, proc, p["where"], p["kind"] == "fragment", p["block"]["text"],
                                     p["problems"], pipeline_processors(p["kind"], p["payload"])))
        cases, has_ov = apply_overrides(proc, auto_cases)
        cases = [normalise_case(c) for c in cases]
        write(os.path.join(HERE, "conformance", proc + ".json"),
              json.dumps(cases, indent=2, ensure_ascii=False) + "\n")
        summary.append({"processor": proc, "page": path, "pipelines": len(pipes),
                        "wrapped": sum(1 for p in pipes if p["kind"] == "fragment"),
                        "auto_cases": len(auto_cases), "cases": len(cases),
                        "nondeterministic": sum(1 for c in cases if "nondeterministic" in c["notes"]),
                        "dropped": sum(1 for c in cases if c["output"] is None),
                        "suspect": sum(1 for c in cases if c.get("doc_suspect"))})
    # extra conformance files that exist only as overrides (e.g. route)
    extra = []
    for f in sorted(os.listdir(os.path.join(HERE, "conformance", "overrides"))):
        name = f[:-5]
        if f.endswith(".json") and name not in PROCESSORS and name != "doc_issues":
            cases, _ = apply_overrides(name, [])
            cases = [normalise_case(c) for c in cases]
            write(os.path.join(HERE, "conformance", f), json.dumps(cases, indent=2, ensure_ascii=False) + "\n")
            extra.append((name, len(cases)))
    routes = extract_routes()
    for n, r in enumerate(routes, 1):
        head = ["# Extracted from opensearch-project/documentation-website @ %s" % COMMIT,
                "# source: %s (line of the opening ``` fence)" % r["where"],
                "# wrapped: false -- body below is the doc block verbatim"]
        head += ["# NOTE: " + p for p in r["problems"]]
        write(os.path.join(HERE, "pipelines", "route-%d.yaml" % n),
              "\n".join(head) + "\n\n" + r["block"]["text"].rstrip("\n") + "\n")
        k, pl = classify_yaml(r["obj"])
        index.append(index_entry("route-%d.yaml" % n, "route", r["where"], False, r["block"]["text"],
                                 r["problems"], pipeline_processors(k, pl) if k else []))
    write(os.path.join(HERE, "pipelines", "index.json"), json.dumps(index, indent=2) + "\n")
    write_readme(summary, routes, extra)
    for s in summary:
        print("%-20s pipelines=%d (wrapped %d) cases=%d (auto %d, nondet %d, dropped %d, suspect %d)" % (
            s["processor"], s["pipelines"], s["wrapped"], s["cases"], s["auto_cases"],
            s["nondeterministic"], s["dropped"], s["suspect"]))
    print("route pipelines:", len(routes), "; extra conformance files:", extra)


def write_readme(summary, routes, extra):
    ip = os.path.join(HERE, "conformance", "overrides", "doc_issues.json")
    issues = json.load(open(ip)) if os.path.exists(ip) else []
    L = ["# Data Prepper documentation fixtures", "",
         "Generated by `extract.py` from `opensearch-project/documentation-website` commit "
         "`%s` (bare mirror at `%s`). Re-run with `python3 extract.py`; every file under "
         "`pipelines/` and `conformance/*.json` is regenerated. Hand corrections live in "
         "`conformance/overrides/` and are merged by the script." % (COMMIT, REPO), "",
         "## Layout", "",
         "- `pipelines/<processor>-<n>.yaml` - each YAML pipeline config on the processor's doc page, in page "
         "order. Full pipelines are copied verbatim (header comments give the source `file:line` - the line of "
         "the opening code fence - and note if the block is not valid YAML as written, e.g. `....` elision "
         "placeholders). Processor-list fragments (`processor:` / `- grok:`) are wrapped into "
         "`<processor>-pipeline: {source: {http: {}}, processor: ..., sink: [{stdout: {}}]}`; the original block "
         "is kept verbatim in the header comment.",
         "- `pipelines/index.json` - one entry per pipeline file: source, wrapped, whether the file / the doc block "
         "parses as YAML, processor names, problems. Verbatim copies of blocks with `...`/`....` placeholders do "
         "not load as YAML - filter on `file_is_valid_yaml`.",
         "- `pipelines/route-<n>.yaml` - every code block under `_data-prepper/` that declares `route:` "
         "(`pipelines.md` first), verbatim.",
         "- `conformance/<processor>.json` - list of cases `{id, source, processor, input, output, notes, ...}`. "
         "`processor` is the parsed processor block (`{\"add_entries\": {...}}`), or a *list* of blocks when the doc "
         "example runs a chain (e.g. `grok` then `date`) and the shown output depends on the whole chain. "
         "`output: null` means the doc says the event is dropped. Multi-event examples (curl payload + stored "
         "OpenSearch documents, NDJSON blocks) are split into one case per event (`id` = `<source>#<k>`). "
         "Optional fields: `input_source` / `output_source` (where the events are shown), `doc_suspect` "
         "(the doc's expected output looks wrong - see below; the case keeps the doc's value), `derived` "
         "(input or config reconstructed from prose rather than copied from a code block). Cases whose output "
         "depends on ingest time, the current year or random values have `nondeterministic` in `notes`.",
         "- `conformance/aggregate.json` - written by hand (kept by `extract.py`, `HAND_WRITTEN`): the `aggregate` processor's documented examples as cases of several events, `{id, source, processor, inputs, outputs, ignore, notes}`; `ignore` lists JSON pointers to values that are times (compared for presence only); `notes` say where the docs and Data Prepper's source differ and which is followed. Run by `sluice-processors`' aggregate tests (in one batch, then everything flushed), not by the binary's conformance test.",
         "- `conformance/route.json` - routing outcomes from `pipelines.md` (which named routes each event matches).",
         "- `conformance/overrides/` - hand-maintained drops/patches/additions and `doc_issues.json`.", "",
         "## Counts", "",
         "| processor | doc page | pipelines (wrapped) | conformance cases | auto-extracted | nondeterministic | dropped (`output: null`) | doc_suspect |",
         "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    tot = [0, 0, 0, 0, 0, 0]
    for s in summary:
        L.append("| %s | `%s` | %d (%d) | %d | %d | %d | %d | %d |" % (
            s["processor"], s["page"].split("/")[-1], s["pipelines"], s["wrapped"], s["cases"],
            s["auto_cases"], s["nondeterministic"], s["dropped"], s["suspect"]))
        for i, k in enumerate(["pipelines", "wrapped", "cases", "auto_cases", "nondeterministic", "suspect"]):
            tot[i] += s[k]
    L.append("| **total** | | %d (%d) | %d | %d | %d | | %d |" % tuple(tot))
    L += ["", "Route pipelines: %d (`pipelines/route-*.yaml`)." % len(routes)]
    for name, n in extra:
        L.append("Extra conformance file `conformance/%s.json`: %d cases." % (name, n))
    L += ["", "Route examples:", ""]
    for n, r in enumerate(routes, 1):
        L.append("- `route-%d.yaml` <- `%s`" % (n, r["where"]))
    L += ["", "## Doc examples that look wrong or self-contradictory", "",
          "Hand-reviewed (from `conformance/overrides/doc_issues.json`); line numbers point at the offending line (not the fence) at commit `%s`. Items marked *Unverified* were not checked against a running Data Prepper; statements about behaviour cite the data-prepper source (`opensearch-project/data-prepper`)." % COMMIT[:12], ""]
    for it in issues:
        L.append("- `%s` (%s): %s" % (it["where"], it["processor"], it["issue"]))
    L += ["", "### Automatically detected syntax problems in code blocks", "",
          "(JSON/YAML that does not parse as written; `...` elision lines are not listed.)", ""]
    seen = set()
    for where, issue in AUTO_ISSUES:
        if (where, issue) in seen:
            continue
        seen.add((where, issue))
        L.append("- `%s`: %s" % (where, issue))
    write(os.path.join(HERE, "README.md"), "\n".join(L) + "\n")


if __name__ == "__main__":
    main()
