//! The plugins a process runs, by name, and reloading them when their files change.
//!
//! Each name has a [`watch`] channel holding its current [`Plugin`]; workers subscribe and
//! build a new instance from a newer version between batches, so a reload never splits or
//! repeats a batch. [`Catalog::rescan`] compares the folder with what was loaded: a new or
//! changed `.wasm` file is compiled and type-checked (off the hot path: call it from a blocking
//! thread) and only then published; a file that fails keeps the previous version running and
//! is reported once per change.
//!
//! At startup, [`Catalog::load_dir`] and [`Catalog::load_builtins`] may compile what the cache
//! does not hold with the baseline compiler (see [`crate::engine`]), so the process starts in
//! seconds; [`Catalog::optimize`] then compiles those with Cranelift and publishes the
//! optimized code the same way, as a version the workers switch to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tokio::sync::watch;

use crate::engine::{Plugin, PluginHost, stem, wasm_files};
use crate::error::PluginError;

/// What a file looked like when it was last looked at: a change in either means new content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: SystemTime,
}

impl Stamp {
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            len: meta.len(),
            modified: meta.modified().ok()?,
        })
    }
}

struct Entry {
    current: watch::Sender<Plugin>,
    /// The file the current version came from and its stamp then (`None` for a built-in).
    loaded: Option<(PathBuf, Stamp)>,
}

/// What the previous scans saw.
#[derive(Default)]
struct Seen {
    /// Every file's stamp on the previous scan: a file is taken once it stops changing, so a
    /// copy in progress is not compiled half-written.
    last: BTreeMap<PathBuf, Stamp>,
    /// The stamp of a version that failed to load, so it is reported once, not every scan.
    failed: BTreeMap<PathBuf, Stamp>,
}

/// What one [`Catalog::rescan`] did, for the log and metrics.
#[derive(Debug)]
pub enum Reload {
    /// A new version of `name` (or a new plugin) is live; workers pick it up at their next batch.
    Loaded {
        name: String,
        origin: String,
        sha256: String,
        /// Whether it replaced a version that was running.
        replaced: bool,
    },
    /// The file changed but the new version cannot be used; the previous one keeps running.
    Failed { name: String, error: PluginError },
    /// The file is gone; the loaded version keeps running until the process restarts.
    Removed { name: String, origin: String },
}

/// A plugin running Winch's code, to be compiled with Cranelift: where its bytes are.
enum Unoptimized {
    File(PathBuf),
    Builtin(&'static [u8]),
}

/// Every plugin of the process, by name.
pub struct Catalog {
    host: Arc<PluginHost>,
    entries: Mutex<BTreeMap<String, Entry>>,
    seen: Mutex<Seen>,
    /// The plugins loaded quickly, by name, for [`Catalog::optimize`].
    unoptimized: Mutex<Vec<(String, Unoptimized)>>,
}

impl Catalog {
    pub fn new(host: Arc<PluginHost>) -> Self {
        Self {
            host,
            entries: Mutex::new(BTreeMap::new()),
            seen: Mutex::new(Seen::default()),
            unoptimized: Mutex::new(Vec::new()),
        }
    }

    /// The host that loads this catalog's plugins.
    pub fn host(&self) -> &PluginHost {
        &self.host
    }

    /// Loads the built-in components (name and bytes), on every core; `quickly` (see
    /// [`Catalog::optimize`]) or with optimized code.
    pub fn load_builtins(
        &self,
        builtins: &[(&str, &'static [u8])],
        quickly: bool,
    ) -> Result<Vec<Plugin>, PluginError> {
        let results = on_every_core(builtins, |(name, bytes)| {
            let origin = format!("built-in {name}");
            if quickly {
                self.host.load_bytes_quickly(name, &origin, bytes)
            } else {
                self.host.load_bytes(name, &origin, bytes)
            }
        });
        let mut loaded = Vec::new();
        for ((_, bytes), plugin) in builtins.iter().zip(results) {
            let plugin = plugin?;
            self.remember_unoptimized(&plugin, Unoptimized::Builtin(bytes));
            self.publish(plugin.clone(), None, true);
            loaded.push(plugin);
        }
        Ok(loaded)
    }

    /// Loads every `*.wasm` file in `dir`, sorted by name, on every core; `quickly` (see
    /// [`Catalog::optimize`]) or with optimized code. A file replaces a built-in of the same
    /// name. Fails on the first file that does not load: at startup, running without a plugin
    /// a pipeline names would only fail later.
    pub fn load_dir(&self, dir: &Path, quickly: bool) -> Result<Vec<Plugin>, PluginError> {
        let paths = wasm_files(dir)?;
        // Each with the file's stamp from before it was read.
        let results = on_every_core(&paths, |path| {
            let plugin = if quickly {
                self.host.load_file_quickly(path)
            } else {
                self.host.load_file(path)
            };
            (Stamp::of(path), plugin)
        });
        let mut loaded = Vec::new();
        for (path, (stamp, plugin)) in paths.iter().zip(results) {
            let plugin = plugin?;
            self.remember_unoptimized(&plugin, Unoptimized::File(path.clone()));
            self.publish(plugin.clone(), stamp.map(|s| (path.clone(), s)), true);
            loaded.push(plugin);
        }
        Ok(loaded)
    }

    /// Notes where `plugin`'s bytes are if it runs Winch's code; forgets what an earlier load
    /// of its name noted (a file replacing a built-in is the one to optimize).
    fn remember_unoptimized(&self, plugin: &Plugin, from: Unoptimized) {
        let mut unoptimized = self.unoptimized.lock().expect("catalog lock");
        unoptimized.retain(|(name, _)| name != plugin.name());
        if !plugin.optimized() {
            unoptimized.push((plugin.name().to_owned(), from));
        }
    }

    /// Compiles every plugin that was loaded quickly with Cranelift (which caches it), and
    /// publishes the optimized code unless a new version replaced it meanwhile. Compiles for
    /// seconds: call it from a thread of its own. How many it optimized.
    pub fn optimize(&self) -> usize {
        let pending = std::mem::take(&mut *self.unoptimized.lock().expect("catalog lock"));
        let mut optimized = 0;
        for (name, from) in pending {
            let started = std::time::Instant::now();
            let result = match &from {
                Unoptimized::File(path) => self.host.load_file(path),
                Unoptimized::Builtin(bytes) => {
                    self.host
                        .load_bytes(&name, &format!("built-in {name}"), bytes)
                }
            };
            let plugin = match result {
                Ok(plugin) => plugin,
                Err(error) => {
                    // The file changed or went since (a rescan says so), or Cranelift refuses
                    // what Winch took: the running code stays.
                    tracing::warn!(plugin = %name, %error, "cannot optimize the plugin; it keeps running its baseline code");
                    continue;
                }
            };
            let entries = self.entries.lock().expect("catalog lock");
            let Some(entry) = entries.get(&name) else {
                continue;
            };
            let running = entry.current.borrow().clone();
            if running.optimized() || running.sha256() != plugin.sha256() {
                continue; // a new version replaced it meanwhile
            }
            entry.current.send_replace(plugin);
            optimized += 1;
            tracing::debug!(plugin = %name, elapsed = ?started.elapsed(), "optimized the plugin's code");
        }
        optimized
    }

    /// The current version of `name`.
    pub fn get(&self, name: &str) -> Option<Plugin> {
        let entries = self.entries.lock().expect("catalog lock");
        entries.get(name).map(|e| e.current.borrow().clone())
    }

    /// The names of every plugin, sorted.
    pub fn names(&self) -> Vec<String> {
        let entries = self.entries.lock().expect("catalog lock");
        entries.keys().cloned().collect()
    }

    /// The current versions of every plugin, sorted by name.
    pub fn plugins(&self) -> Vec<Plugin> {
        let entries = self.entries.lock().expect("catalog lock");
        entries
            .values()
            .map(|e| e.current.borrow().clone())
            .collect()
    }

    /// A receiver that sees every new version of `name` (the current one is marked seen).
    pub fn subscribe(&self, name: &str) -> Option<watch::Receiver<Plugin>> {
        let entries = self.entries.lock().expect("catalog lock");
        entries.get(name).map(|e| e.current.subscribe())
    }

    /// Compares `dir` with what is loaded and loads what changed. Compiles: call it from a
    /// blocking thread. A file is taken once two scans in a row see the same size and mtime.
    pub fn rescan(&self, dir: &Path) -> Vec<Reload> {
        let mut out = Vec::new();
        let files = match wasm_files(dir) {
            Ok(files) => files,
            Err(error) => {
                tracing::warn!(folder = %dir.display(), %error, "cannot read the plugin folder; keeping every loaded plugin");
                return out;
            }
        };
        let now: BTreeMap<PathBuf, Stamp> = files
            .iter()
            .filter_map(|p| Stamp::of(p).map(|s| (p.clone(), s)))
            .collect();
        let mut seen = self.seen.lock().expect("catalog lock");
        let mut to_load = Vec::new();
        {
            let mut entries = self.entries.lock().expect("catalog lock");
            for (path, stamp) in &now {
                let loaded = entries
                    .get(&stem(path))
                    .and_then(|e| e.loaded.as_ref())
                    .is_some_and(|(p, s)| p == path && s == stamp);
                let settled = seen.last.get(path) == Some(stamp);
                if !loaded && settled && seen.failed.get(path) != Some(stamp) {
                    to_load.push((path.clone(), *stamp));
                }
            }
            for (name, e) in entries.iter_mut() {
                if let Some((path, _)) = &e.loaded
                    && !now.contains_key(path)
                {
                    out.push(Reload::Removed {
                        name: name.clone(),
                        origin: path.display().to_string(),
                    });
                    // Reported once; the version keeps running with no file behind it.
                    e.loaded = None;
                }
            }
        }
        seen.failed.retain(|path, _| now.contains_key(path));
        seen.last = now;
        for (path, stamp) in to_load {
            let name = stem(&path);
            match self.host.load_file(&path) {
                Ok(plugin) => {
                    seen.failed.remove(&path);
                    let previous = self.get(&name);
                    let same = previous
                        .as_ref()
                        .is_some_and(|p| p.sha256() == plugin.sha256());
                    if !same {
                        out.push(Reload::Loaded {
                            name: name.clone(),
                            origin: plugin.origin().to_owned(),
                            sha256: plugin.sha256().to_owned(),
                            replaced: previous.is_some(),
                        });
                    }
                    // Same bytes (touched): only the stamp is new, and nobody is woken.
                    self.publish(plugin, Some((path, stamp)), !same);
                }
                Err(error) => {
                    seen.failed.insert(path, stamp);
                    out.push(Reload::Failed { name, error });
                }
            }
        }
        out
    }

    /// Makes `plugin` the current version of its name; `notify` wakes the subscribers.
    fn publish(&self, plugin: Plugin, loaded: Option<(PathBuf, Stamp)>, notify: bool) {
        let mut entries = self.entries.lock().expect("catalog lock");
        let name = plugin.name().to_owned();
        match entries.get_mut(&name) {
            Some(e) => {
                if notify {
                    e.current.send_replace(plugin);
                }
                e.loaded = loaded;
            }
            None => {
                entries.insert(
                    name,
                    Entry {
                        current: watch::Sender::new(plugin),
                        loaded,
                    },
                );
            }
        }
    }
}

/// `work` on every item, on as many threads as there are cores (compiling, or hashing,
/// verifying and copying a large component's compiled code, is CPU-bound); the results in the
/// order of `items`.
fn on_every_core<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    *slots[i].lock().expect("not poisoned") = Some(work(item));
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .expect("not poisoned")
                .expect("every item was done")
        })
        .collect()
}
