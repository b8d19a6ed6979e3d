//! `sluice plugins new|build|inspect`: a plugin author's workflow.
//!
//! - `new NAME --lang rust|python|js [--kind deserializer|processor|buffer]` writes a
//!   ready-to-build folder from the templates in `plugins/templates/` (embedded in the binary)
//!   with the WIT beside it.
//! - `build DIR` runs the language's component tool and writes `DIR/NAME.wasm`.
//! - `inspect FILE.wasm` loads it as `sluice run` would and prints its world, imports (with
//!   what each asks for and what sluice grants), size, compile and start cost, and, with
//!   `--sample`, the outcome of every sample record.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::ValueEnum;
use sluice_plugin::{
    BufferPolicy, Decoded, Decoder, Event, Limits, PluginHost, Processed, Processor, RawRecord,
    capability,
};

/// The pinned component tools, named in errors and written into templates.
const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Lang {
    Rust,
    Python,
    Js,
}

/// What a new plugin is, and so which world it implements.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Kind {
    /// Raw bytes in, events out (`sluice:plugin/deserializer-plugin@0.2.0`).
    Deserializer,
    /// Events in, a verdict per event out (`sluice:plugin/processor-plugin@0.2.0`).
    Processor,
    /// A buffer's policy: where each written record goes, which tier is read next
    /// (`sluice:plugin/buffer-plugin@0.2.0`).
    Buffer,
}

impl Kind {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Deserializer => "deserializer",
            Kind::Processor => "processor",
            Kind::Buffer => "buffer policy",
        }
    }

    /// The contract files written into `wit/`: `(file name, text)`.
    fn wit(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kind::Deserializer => &[
                ("types.wit", include_str!("../../../wit/v0.2/types.wit")),
                (
                    "deserializer.wit",
                    include_str!("../../../wit/v0.2/deserializer.wit"),
                ),
            ],
            Kind::Processor => &[
                ("types.wit", include_str!("../../../wit/v0.2/types.wit")),
                (
                    "processor.wit",
                    include_str!("../../../wit/v0.2/processor.wit"),
                ),
            ],
            Kind::Buffer => &[
                ("types.wit", include_str!("../../../wit/v0.2/types.wit")),
                ("buffer.wit", include_str!("../../../wit/v0.2/buffer.wit")),
            ],
        }
    }

    /// The plugin's source: `(path in the new folder, template text)`.
    fn source(self, lang: Lang) -> (&'static str, &'static str) {
        match (self, lang) {
            (Kind::Deserializer, Lang::Rust) => (
                "src/lib.rs",
                include_str!("../../../plugins/templates/deserializer/lib.rs"),
            ),
            (Kind::Deserializer, Lang::Python) => (
                "app.py",
                include_str!("../../../plugins/templates/deserializer/app.py"),
            ),
            (Kind::Deserializer, Lang::Js) => (
                "plugin.js",
                include_str!("../../../plugins/templates/deserializer/plugin.js"),
            ),
            (Kind::Processor, Lang::Rust) => (
                "src/lib.rs",
                include_str!("../../../plugins/templates/processor/lib.rs"),
            ),
            (Kind::Processor, Lang::Python) => (
                "app.py",
                include_str!("../../../plugins/templates/processor/app.py"),
            ),
            (Kind::Processor, Lang::Js) => (
                "plugin.js",
                include_str!("../../../plugins/templates/processor/plugin.js"),
            ),
            (Kind::Buffer, Lang::Rust) => (
                "src/lib.rs",
                include_str!("../../../plugins/templates/buffer/lib.rs"),
            ),
            (Kind::Buffer, Lang::Python) => (
                "app.py",
                include_str!("../../../plugins/templates/buffer/app.py"),
            ),
            (Kind::Buffer, Lang::Js) => (
                "plugin.js",
                include_str!("../../../plugins/templates/buffer/plugin.js"),
            ),
        }
    }
}

/// The build files a language needs beside the source: `(path, template text)`.
fn build_files(lang: Lang) -> &'static [(&'static str, &'static str)] {
    match lang {
        Lang::Rust => &[(
            "Cargo.toml",
            include_str!("../../../plugins/templates/Cargo.toml"),
        )],
        Lang::Python => &[],
        Lang::Js => &[(
            "package.json",
            include_str!("../../../plugins/templates/package.json"),
        )],
    }
}

/// `sluice plugins new`.
pub(crate) fn new(
    name: &str,
    kind: Kind,
    lang: Lang,
    dir: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        bail!(
            "plugin name `{name}` must start with a lowercase letter and hold only a-z, 0-9 and `_` \
             (it becomes the file name `{name}.wasm` and the name pipelines use)"
        );
    }
    let root = dir.map_or_else(|| PathBuf::from(name), Path::to_owned);
    if root.exists() && std::fs::read_dir(&root)?.next().is_some() {
        bail!(
            "`{}` already exists and is not empty; pick another name or --dir",
            root.display()
        );
    }
    let mut files: Vec<(String, String)> = kind
        .wit()
        .iter()
        .map(|(file, text)| (format!("wit/{file}"), (*text).to_owned()))
        .collect();
    files.extend(
        build_files(lang)
            .iter()
            .chain([&kind.source(lang)])
            .map(|(path, text)| ((*path).to_owned(), text.replace("{{name}}", name))),
    );
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a file in a folder"))?;
        std::fs::write(&path, text).with_context(|| format!("writing `{}`", path.display()))?;
    }
    Ok(root)
}

/// Which language a plugin folder is in, from the files `new` writes.
fn detect(dir: &Path) -> anyhow::Result<Lang> {
    if dir.join("Cargo.toml").is_file() {
        Ok(Lang::Rust)
    } else if dir.join("app.py").is_file() {
        Ok(Lang::Python)
    } else if dir.join("plugin.js").is_file() {
        Ok(Lang::Js)
    } else {
        bail!(
            "`{}` holds no Cargo.toml, app.py or plugin.js: not a plugin folder (`sluice plugins new` makes one)",
            dir.display()
        )
    }
}

/// The world a plugin folder implements: a 0.2 world when its `wit/` declares one, else the
/// 0.1.0 deserializer, configurable when the source exports `configure`.
fn world(dir: &Path, source: &str, configurable_marker: &str) -> anyhow::Result<&'static str> {
    let wit = dir.join("wit");
    let entries =
        std::fs::read_dir(&wit).with_context(|| format!("reading `{}`", wit.display()))?;
    for entry in entries {
        let text = std::fs::read_to_string(entry?.path()).unwrap_or_default();
        for world in ["buffer-plugin", "processor-plugin", "deserializer-plugin"] {
            if text.contains(&format!("world {world} ")) {
                return Ok(world);
            }
        }
    }
    Ok(if source.contains(configurable_marker) {
        "configurable-deserializer"
    } else {
        "deserializer"
    })
}

fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// Finds `tool` on PATH.
fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}

/// `sluice plugins build`: returns the component it wrote.
pub(crate) fn build(dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("plugin folder `{}`", dir.display()))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = dir.join(format!("{name}.wasm"));
    match detect(&dir)? {
        Lang::Rust => {
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| dir.join("target"), PathBuf::from);
            run(
                Command::new("cargo")
                    .args(["build", "--release", "--target", "wasm32-wasip2"])
                    .current_dir(&dir)
                    .env("CARGO_TARGET_DIR", &target),
                "cargo build --target wasm32-wasip2 (add the target with `rustup target add wasm32-wasip2`)",
            )?;
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))?;
            let crate_name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or(&name)
                .replace('-', "_");
            let built = target.join(format!("wasm32-wasip2/release/{crate_name}.wasm"));
            std::fs::copy(&built, &out)
                .with_context(|| format!("copying `{}`", built.display()))?;
        }
        Lang::Python => {
            let source = std::fs::read_to_string(dir.join("app.py"))?;
            let tool = on_path("componentize-py").with_context(|| {
                format!("componentize-py is not on PATH; install it with `python3 -m pip install {COMPONENTIZE_PY}`")
            })?;
            run(
                Command::new(tool)
                    .args(["-d", "wit", "-w", world(&dir, &source, "class Configure")?])
                    .args(["componentize", "-p", ".", "app", "-o"])
                    .arg(&out)
                    .current_dir(&dir),
                "componentize-py",
            )?;
        }
        Lang::Js => {
            let source = std::fs::read_to_string(dir.join("plugin.js"))?;
            let local = dir.join("node_modules/.bin/componentize-js");
            let tool = match on_path("componentize-js") {
                Some(tool) => tool,
                None => {
                    if !local.is_file() {
                        eprintln!(
                            "installing the pinned componentize-js (npm install in `{}`)",
                            dir.display()
                        );
                        run(
                            Command::new("npm")
                                .args(["install", "--no-audit", "--no-fund"])
                                .current_dir(&dir),
                            "npm install",
                        )?;
                    }
                    local
                }
            };
            // componentize-js resolves paths inside its own sandbox: relative to the folder.
            // `-d http fetch-event`: sluice links no wasi:http.
            run(
                Command::new(tool)
                    .args([
                        "plugin.js",
                        "--wit",
                        "wit",
                        "-n",
                        world(&dir, &source, "export const configure")?,
                    ])
                    .args(["-d", "http", "fetch-event", "-o"])
                    .arg(format!("{name}.wasm"))
                    .current_dir(&dir),
                "componentize-js",
            )?;
        }
    }
    Ok(out)
}

/// `sluice plugins inspect`: what a component is and, with samples, what it does.
pub(crate) fn inspect(
    file: &Path,
    samples: &[PathBuf],
    lines: bool,
    options: &[(String, String)],
    limits: Limits,
) -> anyhow::Result<String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let host = PluginHost::new(None)?;
    let started = Instant::now();
    let plugin = host.load_file(file)?;
    let compiled = started.elapsed();
    writeln!(out, "plugin   {}", plugin.name())?;
    writeln!(out, "file     {} ({})", file.display(), size(plugin.size()))?;
    writeln!(out, "sha256   {}", plugin.sha256())?;
    writeln!(out, "world    {}", plugin.world())?;
    writeln!(
        out,
        "imports  {} (WASI p2 and the contract's types; sluice grants what is shown)",
        plugin.imports().len()
    )?;
    for import in plugin.imports() {
        match capability(import) {
            Some((asks, grants)) => writeln!(out, "  ! {import}: {asks} -> {grants}")?,
            None => writeln!(out, "    {import}")?,
        }
    }
    if plugin.kind() == sluice_plugin::PluginKind::Processor {
        inspect_processor(&mut out, plugin, compiled, samples, lines, options, limits)?;
        return Ok(out);
    }
    if plugin.kind() == sluice_plugin::PluginKind::BufferPolicy {
        let started = Instant::now();
        let policy = BufferPolicy::new(plugin, options.to_vec(), limits)?;
        writeln!(
            out,
            "start    compiled in {compiled:.2?}, instantiated, configured and described in {:.2?}, linear memory {} (limit {})",
            started.elapsed(),
            size(policy.memory()),
            size(limits.max_memory as u64),
        )?;
        let headers = policy.headers();
        writeln!(
            out,
            "reads    {}",
            if headers.is_empty() {
                "no request headers".to_owned()
            } else {
                format!("request headers {}", headers.join(", "))
            }
        )?;
        return Ok(out);
    }
    let started = Instant::now();
    let mut decoder = Decoder::new(plugin.clone(), options.to_vec(), limits)?;
    let instantiated = started.elapsed();
    writeln!(
        out,
        "start    compiled in {compiled:.2?}, instantiated{} in {instantiated:.2?}, linear memory {} (limit {})",
        if options.is_empty() {
            ""
        } else {
            " and configured"
        },
        size(decoder.stats().peak_memory),
        size(limits.max_memory as u64),
    )?;
    if samples.is_empty() {
        return Ok(out);
    }
    let records = read_samples(samples, lines)?;
    let batch: Vec<RawRecord> = records
        .iter()
        .map(|(origin, payload)| RawRecord {
            payload: payload.clone(),
            key: None,
            received_at_ms: 0,
            origin: format!("sample:{origin}"),
        })
        .collect();
    let started = Instant::now();
    let outcomes = decoder.decode(&batch);
    let took = started.elapsed();
    writeln!(
        out,
        "sample   {} record(s) in one batch, {took:.2?}, linear memory now {}",
        batch.len(),
        size(decoder.stats().peak_memory)
    )?;
    for ((origin, payload), outcome) in records.iter().zip(outcomes) {
        let head = format!("record {origin} ({} bytes)", payload.len());
        match outcome {
            Decoded::Events(events) => {
                writeln!(out, "{head}: {} event(s)", events.len())?;
                for e in events.iter() {
                    writeln!(out, "    {}", String::from_utf8_lossy(e))?;
                }
            }
            Decoded::Malformed(reason) => writeln!(out, "{head}: malformed: {reason}")?,
            Decoded::Trapped(reason) => writeln!(out, "{head}: trapped: {reason}")?,
        }
    }
    Ok(out)
}

/// The samples as (origin, bytes): each file whole, or each non-empty line of it.
fn read_samples(samples: &[PathBuf], lines: bool) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut records = Vec::new();
    for sample in samples {
        let bytes = std::fs::read(sample)
            .with_context(|| format!("reading sample `{}`", sample.display()))?;
        if lines {
            for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
                if !line.is_empty() {
                    records.push((format!("{}:{}", sample.display(), i + 1), line.to_vec()));
                }
            }
        } else {
            records.push((sample.display().to_string(), bytes));
        }
    }
    Ok(records)
}

/// `inspect` of a processor: each sample (file, or line with `--lines`) is one event.
fn inspect_processor(
    out: &mut String,
    plugin: sluice_plugin::Plugin,
    compiled: std::time::Duration,
    samples: &[PathBuf],
    lines: bool,
    options: &[(String, String)],
    limits: Limits,
) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let started = Instant::now();
    let mut processor = Processor::new(plugin, options.to_vec(), limits)?;
    let instantiated = started.elapsed();
    writeln!(
        out,
        "start    compiled in {compiled:.2?}, instantiated and configured in {instantiated:.2?}, linear memory {} (limit {})",
        size(processor.stats().peak_memory),
        size(limits.max_memory as u64),
    )?;
    if samples.is_empty() {
        return Ok(());
    }
    let samples = read_samples(samples, lines)?;
    let events: Vec<Event<'_>> = samples
        .iter()
        .map(|(origin, body)| Event {
            body,
            received_at_ms: 0,
            origin,
        })
        .collect();
    let started = Instant::now();
    let results = processor.process(&events);
    let took = started.elapsed();
    writeln!(
        out,
        "sample   {} event(s) in one batch, {took:.2?}, linear memory now {}",
        events.len(),
        size(processor.stats().peak_memory)
    )?;
    for (event, result) in events.iter().zip(results) {
        let head = format!("event {}", event.origin);
        match result {
            Processed::Keep => writeln!(out, "{head}: kept")?,
            Processed::Drop => writeln!(out, "{head}: dropped")?,
            Processed::Replace(replaced) => {
                writeln!(out, "{head}: replaced by {} event(s)", replaced.len())?;
                for e in replaced.iter() {
                    writeln!(out, "    {}", String::from_utf8_lossy(e))?;
                }
            }
            Processed::Failed(reason) => writeln!(out, "{head}: failed: {reason}")?,
            Processed::Trapped(reason) => writeln!(out, "{head}: trapped: {reason}")?,
        }
    }
    Ok(())
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}
