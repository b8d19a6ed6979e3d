//! Running pipelines: source → buffer → deserializer plugin → (processors) → sinks, with a
//! dead-letter file beside them.
//!
//! # Layout (the data flow)
//! Each component kind comes from `sluice_config`'s list of that kind (`for_each_source!`,
//! `for_each_buffer!`, `for_each_processor!`, `for_each_sink!`), which generates the one
//! `build` match of its folder here. Sources, buffers and sinks are built from their resolved
//! settings (`sluice_config::Resolve`), not from the serde structs; a built-in processor is
//! built from its config (`sluice_processors::BuildProcessor`), which is what it runs with.
//! - [`source`]: the `Source` trait, one file per source: push sources (`http`, the OTLP
//!   sources on one `otlp` module, `pipeline`), each listener serving connections through one
//!   `listener` (TLS, refusals, connection limits and timeouts), and the sources that can
//!   wait (`file`, `stdin`, `random`); all write raw bytes to the buffer.
//! - [`buffer`]: builds the configured `sluice_buffer::Buffer`: in memory (`memory`), Kafka
//!   (`kafka`, through `sluice-kafka`), or a buffer policy component over built-in tiers
//!   (`plugin`).
//! - [`worker`]: reads batches, calls the deserializer, runs the processors, hands the events
//!   to the sinks, dead-letters what cannot be parsed or processed, and acknowledges the batch
//!   once every sink's receipt completed.
//! - [`processor`]: the processor stages (built-in, or plugin components), each built from its
//!   config; the workers run them between the deserializer and the sinks.
//! - [`sink`]: one delivery machinery (staging, retries with backoff, dead letters, receipts)
//!   over one `Output` per destination: `stdout`, `file`, `kafka`, `s3`, `http`, `pipeline`,
//!   `noop`;
//!   and the dead-letter file (`dlq`).
//! - [`operate`]: the operator's loop (dead letters replayed, the running pipelines as the
//!   admin endpoint reaches them).
//! - [`counters`]: a pipeline's counts, shared by its source and workers.
//! - [`watchdog`]: which workers have been in a plugin (deserializer or processor) longer than
//!   its deadline, and which (`/health`).
//! - [`reload`]: watches the plugin folder and publishes new plugin versions; `follow` is how
//!   a deserializer, a processor or a buffer policy switches to them between calls, and keeps
//!   its own metrics (`{pipeline, plugin, kind}`: calls, time, traps, deadline hits, recycles,
//!   stalls).
//! - [`mod@run`]: builds every pipeline from the validated config, runs them, and shuts down:
//!   stop the sources, drain the buffers through the sinks within a deadline, exit. It names
//!   no concrete source, buffer, processor or sink.

pub mod buffer;
pub mod counters;
mod follow;
pub mod operate;
pub mod processor;
pub mod reload;
pub mod run;
pub mod sink;
pub mod source;
pub mod watchdog;
pub mod worker;

pub use buffer::kafka::default_instance_id;
pub use run::{PipelineError, RunOptions, run};
/// For `sluice_config::Context::builtins`: builds a built-in processor to check it.
pub use sluice_processors::check as check_builtin;
pub use watchdog::{Stall, Watchdog};

/// Runs `work` (a worker's loop) on a thread of its own, on a multi-thread runtime: its sync
/// parts ([`off_reactor`]) then run in place without handing the thread's tasks to another
/// thread, which cost a thread switch and a wake-up per batch (docs/performance.md §19). Its
/// awaits still wait on the runtime. Dropping the returned future (an aborted task) drops
/// `work` on that thread at its next await. On a current-thread runtime, `work` runs as is.
pub(crate) async fn on_own_thread<F>(work: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    use tokio::runtime::{Handle, RuntimeFlavor};
    let handle = Handle::current();
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return work.await;
    }
    // Dropped with this future: the thread's loop stops at its next await.
    let (_running, dropped) = tokio::sync::oneshot::channel::<std::convert::Infallible>();
    let thread = tokio::task::spawn_blocking(move || {
        handle.block_on(async move {
            tokio::select! {
                out = work => Some(out),
                _ = dropped => None,
            }
        })
    });
    match thread.await {
        Ok(Some(out)) => out,
        Ok(None) => unreachable!("the sender lives as long as this future"),
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// Runs sync work (a batch's wasm calls, a file sink's writes) off the reactor: in place on a
/// multi-thread runtime (`block_in_place`: the thread's other tasks move to other threads
/// meanwhile), on the blocking pool on a current-thread one. Handing each batch's work to the
/// blocking pool cost two thread switches and their wake-up latency per hand-off, more than
/// the work for small batches (docs/performance.md §19).
pub(crate) async fn off_reactor<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        return tokio::task::block_in_place(work);
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_loop_on_its_own_thread_runs_sync_work_in_place_and_stops_when_aborted() {
        // Sync work and the runtime's timers both work there, and the result comes back.
        let out = super::on_own_thread(async {
            let a = super::off_reactor(|| 20).await;
            tokio::time::sleep(Duration::from_millis(1)).await;
            a + 22
        })
        .await;
        assert_eq!(out, 42);
        // An aborted worker (a drain timed out) stops at its next await, dropping its state.
        let (tx, gone) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(super::on_own_thread(async move {
            // Dropped with the future: tells the test it is gone.
            let _held = tx;
            std::future::pending::<()>().await;
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        task.abort();
        let dropped = tokio::time::timeout(Duration::from_secs(30), gone).await;
        assert!(
            matches!(dropped, Ok(Err(_))),
            "the loop's future was not dropped after the abort"
        );
    }
}
