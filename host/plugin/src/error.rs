//! Errors of the plugin host. Loading errors name the plugin file; instance errors name the
//! plugin.

use std::path::PathBuf;

/// Why a plugin could not be loaded or started.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("cannot read plugin `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "plugin `{origin}` is a precompiled native artefact, not a WebAssembly component; \
         sluice only loads `.wasm` components (it compiles and caches them itself)"
    )]
    Precompiled { origin: String },

    #[error("plugin `{origin}` is not a valid WebAssembly component: {reason}")]
    Compile { origin: String, reason: String },

    /// `expected` names the world (or worlds) it was judged against, quoted.
    #[error("plugin `{origin}` does not implement the world {expected}: {reason}")]
    WrongWorld {
        origin: String,
        expected: String,
        reason: String,
    },

    #[error(
        "plugin `{origin}` imports {imports}, which sluice does not provide (only WASI p2's cli, clocks, filesystem, io, random and sockets are linked, with no capabilities); a JavaScript plugin built with componentize-js needs `-d http fetch-event`"
    )]
    UnknownImports { origin: String, imports: String },

    #[error("plugin `{name}` failed to start: {reason}")]
    Instantiate { name: String, reason: String },

    #[error("plugin `{name}` refused its options: {message}")]
    Configure { name: String, message: String },

    #[error(
        "plugin `{name}` takes no options (it does not export `sluice:plugin/configure`), but options were given: {keys}"
    )]
    NotConfigurable { name: String, keys: String },

    #[error("cannot set up the plugin engine: {0}")]
    Engine(String),
}
