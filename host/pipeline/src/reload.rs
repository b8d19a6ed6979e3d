//! Hot reload of the plugin folder: every `every`, rescan it on a blocking thread (compiling a
//! changed component must not stall the reactor), log what changed and count it. Each running
//! plugin sees new versions through its [`sluice_plugin::Catalog`] subscription and switches
//! between calls (`crate::follow`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sluice_plugin::{Catalog, Reload};

/// Runs until aborted.
pub async fn watch(catalog: Arc<Catalog>, dir: PathBuf, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let (c, d) = (catalog.clone(), dir.clone());
        let Ok(reloads) = tokio::task::spawn_blocking(move || c.rescan(&d)).await else {
            continue;
        };
        for reload in reloads {
            report(&reload);
        }
    }
}

fn report(reload: &Reload) {
    match reload {
        Reload::Loaded {
            name,
            origin,
            sha256,
            replaced,
        } => {
            metrics::counter!("sluice_plugin_reloads", "plugin" => name.clone()).increment(1);
            if *replaced {
                tracing::info!(plugin = %name, file = %origin, sha256 = %&sha256[..12], "plugin changed on disk: new version compiled and checked; workers switch at their next batch");
            } else {
                tracing::info!(plugin = %name, file = %origin, sha256 = %&sha256[..12], "new plugin loaded from the plugin folder");
            }
        }
        Reload::Failed { name, error } => {
            metrics::counter!("sluice_plugin_reload_failures", "plugin" => name.clone())
                .increment(1);
            tracing::error!(plugin = %name, %error, "cannot reload plugin; the previous version keeps running");
        }
        Reload::Removed { name, origin } => {
            tracing::warn!(plugin = %name, file = %origin, "plugin file removed; the loaded version keeps running until restart");
        }
    }
}
