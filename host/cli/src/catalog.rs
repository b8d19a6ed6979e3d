//! The plugins a command loads (the built-ins, then the plugin folder) and the config checked
//! against them: what `run`, `validate`, `plugins list` and the operate commands share.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use sluice_plugin::{Catalog, Code, PluginHost};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin.rs"));
}

#[derive(clap::Args)]
pub(crate) struct PluginArgs {
    /// The folder of `.wasm` deserializers (default `./plugins`, if it exists). They are loaded
    /// after the built-ins (`json`, `ndjson`, `otlp`), and a file of the same name replaces a
    /// built-in.
    #[arg(long)]
    pub(crate) plugins: Option<PathBuf>,
    /// The compiled-plugin cache folder. Default: `run` uses `<data-dir>/plugin-cache`; the
    /// other commands use the per-user cache, `$XDG_CACHE_HOME/sluice/plugin-cache` or else
    /// `~/.cache/sluice/plugin-cache`.
    #[arg(long, value_name = "DIR")]
    pub(crate) plugin_cache: Option<PathBuf>,
}

impl PluginArgs {
    /// The cache folder for a command without a data dir: the one asked for, or the
    /// per-user one.
    pub(crate) fn cache_or_per_user(&self) -> Option<PathBuf> {
        self.plugin_cache.clone().or_else(per_user_plugin_cache)
    }
}

/// The per-user compiled-plugin cache, for the commands that have no data dir (`validate`,
/// `plugins list`), so the second call loads the built-ins instead of compiling them:
/// `$XDG_CACHE_HOME/sluice/plugin-cache`, or `$HOME/.cache/sluice/plugin-cache` (the XDG
/// default). `None` without either: every call compiles. Sharing it between processes is
/// safe: an entry is written to a temporary file and renamed (see `sluice_plugin`'s cache).
pub(crate) fn per_user_plugin_cache() -> Option<PathBuf> {
    // The XDG spec says to ignore a relative XDG_CACHE_HOME.
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .map(|home| home.join(".cache"))
        });
    if base.is_none() {
        tracing::debug!(
            "neither XDG_CACHE_HOME nor HOME is set; compiling plugins without a cache"
        );
    }
    Some(base?.join("sluice").join("plugin-cache"))
}

/// What [`load_config`] makes of the files a config names (certificates, templates) that are
/// not on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Environment {
    /// Errors: `sluice run` cannot start without them.
    Required,
    /// Warnings, when they are the only problems: the file itself is valid (`sluice validate`).
    Warn,
    /// Not looked at (`sluice validate --no-environment`).
    Unchecked,
}

/// Parses and validates; prints the errors and returns `None` when there are any. What this
/// machine lacks is an error or a warning, or not looked at, as `environment` says.
pub(crate) fn load_config(
    file: &Path,
    plugins: &Catalog,
    environment: Environment,
) -> anyhow::Result<Option<sluice_config::Config>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading pipeline file `{}`", file.display()))?;
    let names = plugins.names();
    let processors: Vec<String> = plugins
        .plugins()
        .iter()
        .filter(|p| p.kind() == sluice_plugin::PluginKind::Processor)
        .map(|p| p.name().to_owned())
        .collect();
    let context = sluice_config::Context {
        deserializers: Some(&names),
        processors: Some(&processors),
        no_environment: environment == Environment::Unchecked,
        builtins: Some(sluice_pipeline::check_builtin),
    };
    let name = file.display().to_string();
    match sluice_config::parse(&name, &text, context) {
        Ok(config) => Ok(Some(config)),
        Err(errors) if environment == Environment::Warn && errors.only_environment() => {
            for e in &errors.errors {
                eprintln!(
                    "warning: {name}: {e} on this machine; `sluice run` refuses to start here until it is"
                );
            }
            let context = sluice_config::Context {
                no_environment: true,
                ..context
            };
            Ok(sluice_config::parse(&name, &text, context).ok())
        }
        Err(errors) => {
            eprintln!("{errors}");
            Ok(None)
        }
    }
}

/// The built-ins, then the plugin folder (returned when there is one, for hot reload). A plugin
/// that fails to load stops startup: running without the deserializer a pipeline names would
/// only fail later. With [`Start::Quickly`], what the cache does not hold is compiled by Winch
/// (see `sluice_plugin::engine`), for a command that starts pipelines and then calls
/// [`optimize_in_background`]; the commands that only check plugins compile with Cranelift
/// and fill the cache. Logs one line at the end: what is loaded, and where its code came from.
pub(crate) fn load_plugins(
    host: PluginHost,
    dir: Option<&Path>,
    start: Start,
) -> anyhow::Result<(Arc<Catalog>, Option<PathBuf>)> {
    let started = std::time::Instant::now();
    let catalog = Arc::new(Catalog::new(Arc::new(host)));
    let mut loaded = catalog.load_builtins(builtin::BUILTIN, start == Start::Quickly)?;
    let dir = match dir {
        Some(dir) if !dir.is_dir() => bail!("plugin folder `{}` does not exist", dir.display()),
        Some(dir) => Some(dir.to_owned()),
        None => Some(PathBuf::from("./plugins")).filter(|dir| dir.is_dir()),
    };
    if let Some(dir) = &dir {
        loaded.extend(load_folder(&catalog, dir, start)?);
    }
    let count = |code: Code| loaded.iter().filter(|p| p.code() == code).count();
    tracing::info!(
        plugins = %catalog.names().join(", "),
        folder = dir.as_deref().map(|dir| tracing::field::display(dir.display())),
        compiled = count(Code::Compiled),
        compiled_quickly = count(Code::Quick),
        from_cache = count(Code::Cached),
        precompiled = count(Code::Precompiled),
        elapsed = ?started.elapsed(),
        "plugins loaded"
    );
    Ok((catalog, dir))
}

/// How [`load_plugins`] compiles what the cache does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// With Winch, for a process that runs events: it starts in seconds, then optimizes.
    Quickly,
    /// With Cranelift, cached: for a command that only checks plugins and config.
    Optimized,
}

/// Compiles the plugins [`load_plugins`] compiled quickly with Cranelift, on a thread of its
/// own, and publishes the optimized code (workers switch to it between batches).
pub(crate) fn optimize_in_background(catalog: &Arc<Catalog>) {
    let catalog = Arc::clone(catalog);
    let spawned = std::thread::Builder::new()
        .name("sluice-optimize".into())
        .spawn(move || {
            let started = std::time::Instant::now();
            let optimized = catalog.optimize();
            if optimized > 0 {
                tracing::info!(optimized, elapsed = ?started.elapsed(), "plugins optimized");
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the thread that optimizes plugins; they keep running their baseline code");
    }
}

/// Loads the plugin folder into `catalog`; says which files replace a built-in.
fn load_folder(
    catalog: &Catalog,
    dir: &Path,
    start: Start,
) -> anyhow::Result<Vec<sluice_plugin::Plugin>> {
    let loaded = catalog.load_dir(dir, start == Start::Quickly)?;
    for plugin in &loaded {
        if builtin::BUILTIN
            .iter()
            .any(|(name, _)| *name == plugin.name())
        {
            tracing::info!(
                plugin = plugin.name(),
                file = plugin.origin(),
                "plugin file replaces the built-in of the same name"
            );
        }
    }
    Ok(loaded)
}
