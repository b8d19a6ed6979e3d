//! Hot reload where a plugin runs: a component started from a plugin (a worker's
//! deserializer, a processor stage, a buffer policy) follows new versions of that plugin
//! between calls, never inside one. A version that cannot start here is logged and skipped;
//! the running one stays. The plugin folder itself is watched by [`crate::reload`].
//!
//! Every call through [`Following::measured`] updates the plugin's own metrics (`metrics`):
//! calls, time, traps, deadline hits, recycles, stalls, labelled `{pipeline, plugin, kind}`.

mod metrics;

use std::time::Instant;

use sluice_config::PluginSettings;
use sluice_plugin::{
    BufferPolicy, CallStats, Catalog, Decoder, Limits, Plugin, PluginError, Processor,
};

use self::metrics::PluginMetrics;
use tokio::sync::watch;

/// A component started from a plugin with options and limits.
pub(crate) trait FromPlugin: Sized + Send + 'static {
    /// What the log lines call it ("switched to the new {KIND} version").
    const KIND: &'static str;

    /// Instantiates and configures `plugin` (runs guest code: blocks).
    fn start(
        plugin: Plugin,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Result<Self, PluginError>;

    /// The plugin version it runs.
    fn plugin(&self) -> &Plugin;

    /// Its call counters since it started.
    fn stats(&self) -> CallStats;

    /// Told before `next` replaces it, in pipeline `pipeline`.
    fn replacing(&self, _next: &Self, _pipeline: &str) {}
}

impl FromPlugin for Decoder {
    const KIND: &'static str = "plugin";

    fn start(p: Plugin, options: Vec<(String, String)>, l: Limits) -> Result<Self, PluginError> {
        Decoder::new(p, options, l)
    }

    fn plugin(&self) -> &Plugin {
        Decoder::plugin(self)
    }

    fn stats(&self) -> CallStats {
        Decoder::stats(self)
    }
}

impl FromPlugin for Processor {
    const KIND: &'static str = "processor";

    fn start(p: Plugin, options: Vec<(String, String)>, l: Limits) -> Result<Self, PluginError> {
        Processor::new(p, options, l)
    }

    fn plugin(&self) -> &Plugin {
        Processor::plugin(self)
    }

    fn stats(&self) -> CallStats {
        Processor::stats(self)
    }
}

impl FromPlugin for BufferPolicy {
    const KIND: &'static str = "buffer policy";

    fn start(p: Plugin, options: Vec<(String, String)>, l: Limits) -> Result<Self, PluginError> {
        BufferPolicy::new(p, options, l)
    }

    fn plugin(&self) -> &Plugin {
        BufferPolicy::plugin(self)
    }

    fn stats(&self) -> CallStats {
        BufferPolicy::stats(self)
    }

    fn replacing(&self, next: &Self, pipeline: &str) {
        if next.headers() != self.headers() {
            // The http source asked once, at start, which headers to keep.
            tracing::warn!(pipeline, policy = self.plugin().name(), running = ?self.headers(), new = ?next.headers(), "the new buffer policy version reads other request headers; the source keeps passing the ones the first version asked for until sluice restarts");
        }
    }
}

/// Why a plugin component did not start.
#[derive(Debug)]
pub(crate) enum Unstarted {
    /// No plugin of that name in the plugin folder.
    Missing,
    /// It is there but cannot start (or refused its options).
    Failed(PluginError),
}

/// A component and the versions of its plugin the catalog publishes.
pub(crate) struct Following<T> {
    /// The running version.
    pub(crate) current: T,
    pipeline: String,
    updates: watch::Receiver<Plugin>,
    /// For `configure` on each new version.
    options: Vec<(String, String)>,
    limits: Limits,
    metrics: PluginMetrics,
}

impl<T: FromPlugin> Following<T> {
    /// Starts the plugin `settings` names (off the reactor), subscribed to its new versions.
    pub(crate) async fn start(
        pipeline: &str,
        settings: &PluginSettings,
        plugins: &Catalog,
    ) -> Result<Self, Unstarted> {
        let mut updates = plugins
            .subscribe(&settings.name)
            .ok_or(Unstarted::Missing)?;
        let plugin = updates.borrow_and_update().clone();
        let (options, limits) = (settings.options.clone(), limits(&settings.limits));
        let current = off_the_reactor::<T>(plugin, options.clone(), limits)
            .await
            .map_err(Unstarted::Failed)?;
        Ok(Self::new(pipeline, current, updates, options, limits))
    }

    /// `current`, following `updates` with the options and limits it was started with.
    pub(crate) fn new(
        pipeline: &str,
        current: T,
        updates: watch::Receiver<Plugin>,
        options: Vec<(String, String)>,
        limits: Limits,
    ) -> Self {
        let plugin = current.plugin();
        let kind = plugin.kind().as_str().replace(' ', "_");
        let metrics = PluginMetrics::new(pipeline, plugin.name(), &kind);
        Self {
            current,
            pipeline: pipeline.to_owned(),
            updates,
            options,
            limits,
            metrics,
        }
    }

    /// Runs `call` on the running version and records what it cost in the plugin's metrics.
    pub(crate) fn measured<R>(&mut self, call: impl FnOnce(&mut T) -> R) -> R {
        let before = self.current.stats();
        let started = Instant::now();
        let answer = call(&mut self.current);
        let took = started.elapsed();
        self.metrics
            .call(before, self.current.stats(), took, self.limits.timeout);
        answer
    }

    /// The limits it runs within.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Switches to the newest version of the plugin, if there is one, starting it off the
    /// reactor. Whether it switched.
    pub(crate) async fn follow(&mut self) -> bool {
        let Some(plugin) = self.newer() else {
            return false;
        };
        let next = off_the_reactor::<T>(plugin.clone(), self.options.clone(), self.limits).await;
        self.adopt(&plugin, next)
    }

    /// [`Self::follow`] on a thread that may block (a buffer policy is called on one).
    pub(crate) fn follow_here(&mut self) -> bool {
        let Some(plugin) = self.newer() else {
            return false;
        };
        let next = T::start(plugin.clone(), self.options.clone(), self.limits);
        self.adopt(&plugin, next)
    }

    /// A version other than the running one, or the running one's optimized code (see
    /// `sluice_plugin::Catalog::optimize`), published since the last look.
    fn newer(&mut self) -> Option<Plugin> {
        if !self.updates.has_changed().unwrap_or(false) {
            return None;
        }
        let plugin = self.updates.borrow_and_update().clone();
        let running = self.current.plugin();
        (plugin.sha256() != running.sha256() || plugin.optimized() && !running.optimized())
            .then_some(plugin)
    }

    fn adopt(&mut self, plugin: &Plugin, next: Result<T, PluginError>) -> bool {
        let (pipeline, kind) = (self.pipeline.as_str(), T::KIND);
        let (name, to) = (plugin.name(), &plugin.sha256()[..12]);
        match next {
            Ok(next) if plugin.sha256() == self.current.plugin().sha256() => {
                // The same version, now optimized: not a new version to count.
                tracing::debug!(
                    pipeline,
                    plugin = name,
                    "switched to the {kind}'s optimized code"
                );
                self.current = next;
                true
            }
            Ok(next) => {
                self.current.replacing(&next, pipeline);
                let from = &self.current.plugin().sha256()[..12];
                tracing::info!(
                    pipeline,
                    plugin = name,
                    from,
                    to,
                    "switched to the new {kind} version"
                );
                self.current = next;
                self.metrics.swaps.increment(1);
                true
            }
            Err(error) => {
                tracing::error!(pipeline, plugin = name, to, %error, "the new {kind} version cannot start here; keeping the running one");
                false
            }
        }
    }
}

/// Starts `plugin` on a blocking thread: instantiating runs guest code (start functions,
/// `configure`).
async fn off_the_reactor<T: FromPlugin>(
    plugin: Plugin,
    options: Vec<(String, String)>,
    limits: Limits,
) -> Result<T, PluginError> {
    tokio::task::spawn_blocking(move || T::start(plugin, options, limits))
        .await
        .expect("starting a plugin does not panic: faults are values")
}

/// The plugin host's limits from a plugin block's.
pub(crate) fn limits(l: &sluice_config::PluginLimits) -> Limits {
    Limits {
        max_memory: usize::try_from(l.max_memory.bytes()).unwrap_or(usize::MAX),
        timeout: l.timeout,
        recycle_after: l.recycle_after,
    }
}
