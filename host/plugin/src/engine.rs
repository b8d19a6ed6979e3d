//! The engines, the linkers, and loading components: each file is compiled once per process,
//! with the compiled artefact cached on disk, and recognised at load time as implementing one
//! of the worlds in `crate::worlds` (or refused, naming what does not match).
//!
//! # Two compilers
//! Cranelift, wasmtime's optimizing compiler, takes seconds per core for a large component (an
//! interpreter built with componentize-py or componentize-js: about 5 s each on 2 cores).
//! Winch, its baseline compiler, takes a fifth of that for code that runs slower. So a first
//! start ([`PluginHost::load_file_quickly`]) loads what the cache or a precompiled artefact
//! holds, and compiles the rest with Winch (what Winch cannot compile, with Cranelift at
//! once); the catalog then compiles Winch's with Cranelift in the background
//! ([`crate::Catalog::optimize`]) and publishes the optimized code, which every worker switches
//! to between two calls, as to a new version. Each compiler has its own engine
//! and linker; a [`Plugin`] carries the engine its code was compiled by. Only Cranelift's code
//! is cached: Winch's is made again at the next cold start, and replaced again.

use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::{Config, Engine, ResourceLimiter, StoreLimits, Strategy};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::cache::Cache;
use crate::error::PluginError;
use crate::precompiled;
use crate::worlds::{Descriptor, PluginKind};

/// How often the epoch advances; deadlines are counted in these ticks.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// What a store holds: the (empty) WASI context and the memory limits.
pub(crate) struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limits: Limiter,
    /// During a buffer policy's call: what its `buffer-host` imports see (tiers, clock, state).
    pub(crate) policy: Option<sluice_buffer::tiered::Context>,
}

/// The store's memory limits, and the most linear memory the instance has held (for the
/// `sluice_plugin_memory_bytes` gauge and `plugins inspect`).
pub(crate) struct Limiter {
    pub(crate) limits: StoreLimits,
    pub(crate) peak: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            self.peak = self.peak.max(desired);
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// The engines and linkers of the process, and where compiled components are cached.
pub struct PluginHost {
    /// Cranelift's: the code a plugin runs once it is optimized.
    optimizing: Compiler,
    /// Winch's, for a fast first start; `None` where wasmtime has no Winch backend (it then
    /// compiles with Cranelift at once).
    quick: Option<Compiler>,
    cache_dir: Option<PathBuf>,
    /// The optimizing engine's compatibility hash, short: cached and precompiled artefacts
    /// name it.
    compatibility: String,
}

/// An engine (one compiler's settings) and the linker of the host's imports for it.
struct Compiler {
    engine: Engine,
    linker: Linker<HostState>,
}

impl Compiler {
    /// Creates the engine with `strategy`, links WASI p2 (each store gets a context that grants
    /// nothing) and the worlds' host interfaces, and starts its epoch ticker.
    fn new(strategy: Strategy) -> Result<Self, PluginError> {
        let engine_error = |e: wasmtime::Error| PluginError::Engine(format!("{e:#}"));
        let mut config = Config::new();
        config.strategy(strategy);
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        // Calls are async (the WASI p2 async linker below, `instantiate_async`, async exports),
        // so the deadline also ends a guest that waits inside a host call (see `decoder.rs`);
        // the epoch deadline ends a guest that computes.
        // For profiling: `SLUICE_PERFMAP=1 perf record ...` names JIT-compiled guest functions.
        if std::env::var_os("SLUICE_PERFMAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(engine_error)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(engine_error)?;
        // The worlds' own host interfaces (a buffer policy's `buffer-host`).
        crate::worlds::add_to_linker(&mut linker).map_err(engine_error)?;
        for types in CONTRACT_TYPES {
            // Type definitions only: an empty instance satisfies the import.
            linker.instance(types).map_err(engine_error)?;
        }
        start_ticker(&engine);
        Ok(Self { engine, linker })
    }
}

/// Where a plugin's machine code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Compiled by Cranelift as it was loaded.
    Compiled,
    /// Compiled by Winch for a fast start: slower code, until [`crate::Catalog::optimize`]
    /// publishes Cranelift's.
    Quick,
    /// Cranelift's, from the compiled-plugin cache.
    Cached,
    /// Cranelift's, from the artefact `sluice plugins build` left beside the `.wasm`.
    Precompiled,
}

impl Code {
    /// What the log and `plugins inspect` call it.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Compiled => "compiled",
            Code::Quick => "compiled quickly (baseline)",
            Code::Cached => "from the cache",
            Code::Precompiled => "precompiled (the NAME.cwasm beside it)",
        }
    }
}

impl PluginHost {
    /// Creates the engines (see the module's doc) and their linkers, and starts their epoch
    /// tickers. `cache_dir` holds compiled components; `None` compiles every time.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, PluginError> {
        let optimizing = Compiler::new(Strategy::Cranelift)?;
        let quick = match Compiler::new(Strategy::Winch) {
            Ok(quick) => Some(quick),
            Err(error) => {
                tracing::debug!(%error, "no baseline compiler here; plugins are compiled with Cranelift at once");
                None
            }
        };
        let mut hasher = Sha256Hasher(Sha256::new());
        std::hash::Hash::hash(
            &optimizing.engine.precompile_compatibility_hash(),
            &mut hasher,
        );
        let compatibility = hex::encode(&hasher.0.finalize()[..8]);
        Ok(Self {
            optimizing,
            quick,
            cache_dir,
            compatibility,
        })
    }

    /// Loads the component at `path` with optimized code: from the cache, from the artefact
    /// `sluice plugins build` left beside it (`NAME.cwasm`, trusted when owner-only), or
    /// compiled by Cranelift. Its name is the file stem.
    pub fn load_file(&self, path: &Path) -> Result<Plugin, PluginError> {
        self.load_path(path, Tier::Optimized, true)
    }

    /// As [`Self::load_file`], but a component that must be compiled is compiled by Winch
    /// ([`Code::Quick`]), for a fast start; [`crate::Catalog::optimize`] replaces it.
    pub fn load_file_quickly(&self, path: &Path) -> Result<Plugin, PluginError> {
        self.load_path(path, Tier::Quick, true)
    }

    /// Reads and loads the component at `path`; `precompiled`: its `NAME.cwasm` may serve.
    fn load_path(&self, path: &Path, tier: Tier, precompiled: bool) -> Result<Plugin, PluginError> {
        let bytes = std::fs::read(path).map_err(|source| PluginError::Read {
            path: path.to_owned(),
            source,
        })?;
        let origin = path.display().to_string();
        let beside = precompiled.then_some(path);
        self.load(&stem(path), &origin, &bytes, beside, tier)
    }

    /// Loads a component from bytes with optimized code (from the cache, or compiled).
    /// `origin` names it in messages (a path, or `built-in json`).
    pub fn load_bytes(
        &self,
        name: &str,
        origin: &str,
        bytes: &[u8],
    ) -> Result<Plugin, PluginError> {
        self.load(name, origin, bytes, None, Tier::Optimized)
    }

    /// As [`Self::load_bytes`], compiled by Winch if it must be compiled (see
    /// [`Self::load_file_quickly`]).
    pub fn load_bytes_quickly(
        &self,
        name: &str,
        origin: &str,
        bytes: &[u8],
    ) -> Result<Plugin, PluginError> {
        self.load(name, origin, bytes, None, Tier::Quick)
    }

    /// Compiles the component at `wasm` with Cranelift (or takes its code from the cache) and
    /// writes the artefact `run` loads instead of compiling (`NAME.cwasm` beside it).
    pub fn precompile_beside(&self, wasm: &Path) -> Result<PathBuf, PluginError> {
        // Not from the artefact being replaced (one from the previous build would be warned
        // about as stale).
        let plugin = self.load_path(wasm, Tier::Optimized, false)?;
        let component = plugin.inner.pre.component();
        precompiled::write(component, wasm, plugin.sha256(), &self.compatibility).map_err(|e| {
            PluginError::Engine(format!(
                "cannot write the precompiled artefact beside `{}`: {e}",
                wasm.display()
            ))
        })
    }

    fn load(
        &self,
        name: &str,
        origin: &str,
        bytes: &[u8],
        file: Option<&Path>,
        tier: Tier,
    ) -> Result<Plugin, PluginError> {
        if Engine::detect_precompiled(bytes).is_some() {
            return Err(PluginError::Precompiled {
                origin: origin.to_owned(),
            });
        }
        let sha256 = hex::encode(Sha256::digest(bytes));
        let (component, code, compiler) = self.compile(origin, &sha256, bytes, file, tier)?;

        let imports: Vec<String> = component
            .component_type()
            .imports(&compiler.engine)
            .map(|(name, _)| name.to_owned())
            .collect();
        let unknown: Vec<&String> = imports
            .iter()
            .filter(|name| {
                !LINKED_WASI.iter().any(|p| name.starts_with(p))
                    && !CONTRACT_TYPES.contains(&name.as_str())
                    && !crate::worlds::is_host_import(name)
            })
            .collect();
        if !unknown.is_empty() {
            let imports = unknown
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PluginError::UnknownImports {
                origin: origin.to_owned(),
                imports,
            });
        }
        let descriptor = crate::worlds::judged_against(&component);
        let wrong_world = |reason: String| PluginError::WrongWorld {
            origin: origin.to_owned(),
            expected: format!("`{}`", descriptor.world),
            reason,
        };
        let pre = compiler
            .linker
            .instantiate_pre(&component)
            .map_err(|e| wrong_world(format!("{e:#}")))?;
        let world = (descriptor.identify)(&pre, &component).map_err(wrong_world)?;
        Ok(Plugin {
            inner: Arc::new(PluginInner {
                name: name.to_owned(),
                origin: origin.to_owned(),
                size: bytes.len() as u64,
                sha256,
                code,
                imports,
                engine: compiler.engine.clone(),
                pre,
                descriptor,
                world,
            }),
        })
    }

    /// Precompiles `bytes` to this engine's native artefact, as a hostile user might drop one in.
    #[doc(hidden)]
    pub fn precompile_for_tests(&self, bytes: &[u8]) -> Vec<u8> {
        self.optimizing
            .engine
            .precompile_component(bytes)
            .expect("precompiling a test component")
    }

    /// The component's code, and the compiler whose engine it belongs to: Cranelift's from the
    /// cache (see [`crate::cache`] for when a folder and an entry are trusted) or from the
    /// artefact beside `file`; else compiled, by Winch if `tier` is quick and Winch is here.
    /// Each is logged at debug: the CLI sums them up in one line.
    fn compile(
        &self,
        origin: &str,
        sha256: &str,
        bytes: &[u8],
        file: Option<&Path>,
        tier: Tier,
    ) -> Result<(Component, Code, &Compiler), PluginError> {
        let compile_error = |e: wasmtime::Error| PluginError::Compile {
            origin: origin.to_owned(),
            reason: format!("{e:#}"),
        };
        let optimizing = &self.optimizing;
        // Opened (and checked) at every compile, not once: it is rare, and a folder fixed or
        // broken while sluice runs is seen at the next reload.
        let cache = self.cache_dir.as_deref().and_then(Cache::open);
        if let Some(cache) = &cache
            && let Some(component) = cache.load(&optimizing.engine, sha256, &self.compatibility)
        {
            tracing::debug!(plugin = origin, "loaded compiled plugin from cache");
            return Ok((component, Code::Cached, optimizing));
        }
        if let Some(file) = file
            && let Some(component) =
                precompiled::load(&optimizing.engine, file, sha256, &self.compatibility)
        {
            tracing::debug!(plugin = origin, "loaded the precompiled artefact beside it");
            return Ok((component, Code::Precompiled, optimizing));
        }
        let started = std::time::Instant::now();
        if let (Tier::Quick, Some(quick)) = (tier, &self.quick) {
            // Winch lacks some of what Cranelift compiles (vector instructions on a CPU
            // without AVX, say): then the plugin waits for Cranelift instead of failing.
            match Component::new(&quick.engine, bytes) {
                Ok(component) => {
                    tracing::debug!(plugin = origin, elapsed = ?started.elapsed(), "compiled plugin quickly (baseline)");
                    return Ok((component, Code::Quick, quick));
                }
                Err(e) => {
                    tracing::debug!(plugin = origin, error = %format!("{e:#}"), "the baseline compiler cannot compile this plugin; compiling it optimized")
                }
            }
        }
        let component = Component::new(&optimizing.engine, bytes).map_err(compile_error)?;
        tracing::debug!(plugin = origin, elapsed = ?started.elapsed(), "compiled plugin");
        if let Some(cache) = &cache
            && let Err(e) = cache.store(&component, sha256, &self.compatibility)
        {
            tracing::warn!(plugin = origin, error = %e, "cannot cache the compiled plugin; it will be compiled again next start");
        }
        Ok((component, Code::Compiled, optimizing))
    }
}

/// Which code a load asks for when the component must be compiled.
#[derive(Clone, Copy)]
enum Tier {
    /// Winch's, fast to make.
    Quick,
    /// Cranelift's.
    Optimized,
}

/// The WASI p2 packages the linker provides (`wasmtime_wasi::p2::add_to_linker_async`), each
/// with a context that grants nothing. Anything else a component imports (`wasi:http`, a
/// custom interface) cannot be satisfied and is reported by name at load time.
pub const LINKED_WASI: [&str; 6] = [
    "wasi:cli/",
    "wasi:clocks/",
    "wasi:filesystem/",
    "wasi:io/",
    "wasi:random/",
    "wasi:sockets/",
];

/// The interfaces of sluice's own contract that a plugin imports because its exports use their
/// types. They hold types only, so importing them grants nothing.
pub const CONTRACT_TYPES: [&str; 2] = ["sluice:plugin/types@0.2.0", "sluice:plugin/types@0.3.0"];

/// A plugin's name: its file's stem (`plugins/csv.wasm` is `csv`).
pub(crate) fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `*.wasm` files in `dir`, sorted by name.
pub(crate) fn wasm_files(dir: &Path) -> Result<Vec<PathBuf>, PluginError> {
    let entries = std::fs::read_dir(dir).map_err(|source| PluginError::Read {
        path: dir.to_owned(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    paths.sort();
    Ok(paths)
}

/// What a WASI import asks for, and what sluice grants it, for `sluice plugins inspect`.
/// `None` for plumbing that is no capability (streams, polling, errors).
pub fn capability(import: &str) -> Option<(&'static str, &'static str)> {
    let interface = import.split('@').next().unwrap_or(import);
    Some(match interface {
        "wasi:cli/environment" => ("environment variables and arguments", "none (both empty)"),
        "wasi:cli/stdin" | "wasi:cli/terminal-stdin" | "wasi:cli/terminal-input" => {
            ("standard input", "closed")
        }
        "wasi:cli/stdout"
        | "wasi:cli/stderr"
        | "wasi:cli/terminal-stdout"
        | "wasi:cli/terminal-stderr"
        | "wasi:cli/terminal-output" => ("standard output", "to sluice's debug log"),
        "wasi:cli/exit" => ("exit", "ends the call as a trap"),
        "wasi:clocks/wall-clock" | "wasi:clocks/monotonic-clock" => {
            ("clocks", "granted (read only)")
        }
        "wasi:random/random" | "wasi:random/insecure" | "wasi:random/insecure-seed" => {
            ("random numbers", "granted (harmless)")
        }
        i if i.starts_with("wasi:filesystem/") => ("files", "none (no folder is preopened)"),
        i if i.starts_with("wasi:sockets/") => {
            ("network", "none (every address and lookup denied)")
        }
        "sluice:plugin/buffer-host" => (
            "the buffer's tiers, a clock and a key-value state",
            "granted to buffer policies (metadata only, never record bytes)",
        ),
        _ => return None,
    })
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until the engine is dropped.
fn start_ticker(engine: &Engine) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("sluice-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })
        .expect("spawning the epoch ticker thread");
}

struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        unreachable!("only finalized through the digest")
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// A loaded plugin, type-checked against the world it implements. Cheap to clone; run it
/// through its world's adapter (a deserializer: [`crate::Decoder`]).
#[derive(Clone)]
pub struct Plugin {
    pub(crate) inner: Arc<PluginInner>,
}

pub(crate) struct PluginInner {
    pub(crate) name: String,
    pub(crate) origin: String,
    pub(crate) size: u64,
    pub(crate) sha256: String,
    /// Where its machine code came from.
    pub(crate) code: Code,
    pub(crate) imports: Vec<String>,
    pub(crate) engine: Engine,
    pub(crate) pre: InstancePre<HostState>,
    /// The world it implements, from the list in `crate::worlds`.
    pub(crate) descriptor: &'static Descriptor,
    /// The world's name (a world may have variants: 0.1.0's `configurable-deserializer`).
    pub(crate) world: &'static str,
}

impl Plugin {
    /// The plugin's name: its file stem.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
    /// Where it was loaded from.
    pub fn origin(&self) -> &str {
        &self.inner.origin
    }
    /// The component's size in bytes.
    pub fn size(&self) -> u64 {
        self.inner.size
    }
    /// The sha256 of the component, hex.
    pub fn sha256(&self) -> &str {
        &self.inner.sha256
    }
    /// Where its machine code came from (compiled, the cache, a precompiled artefact).
    pub fn code(&self) -> Code {
        self.inner.code
    }
    /// Whether it runs Cranelift's optimized code (not Winch's, made for a fast start).
    pub fn optimized(&self) -> bool {
        self.inner.code != Code::Quick
    }
    /// The world it implements, e.g. `sluice:plugin/deserializer@0.1.0`.
    pub fn world(&self) -> &'static str {
        self.inner.world
    }
    /// The error for an export of this plugin that is missing or mistyped (a world adapter
    /// looking up its exports).
    pub(crate) fn wrong_world(&self, e: wasmtime::Error) -> PluginError {
        PluginError::WrongWorld {
            origin: self.origin().to_owned(),
            expected: format!("`{}`", self.world()),
            reason: format!("{e:#}"),
        }
    }
    /// What it is for: a deserializer, a processor or a buffer policy.
    pub fn kind(&self) -> PluginKind {
        self.inner.descriptor.kind
    }
    /// The interfaces it imports (WASI, and the contract's own types; granted nothing).
    pub fn imports(&self) -> &[String] {
        &self.inner.imports
    }
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.inner.name)
            .field("origin", &self.inner.origin)
            .finish()
    }
}
