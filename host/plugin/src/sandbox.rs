//! The sandbox of one instance, whatever its world: a store whose WASI context grants nothing
//! (no files, environment, arguments or network; stdin closed; stdout and stderr to the debug
//! log), capped memory, and one deadline per call that ends both computing and waiting.
//!
//! # The deadline
//! A guest can spend its time in two places, and each is bounded by the same `timeout`:
//! - **computing** in wasm: the epoch deadline traps it (the engine's epoch ticks every 10 ms);
//! - **waiting** in a host call (`sleep`, `wasi:io/poll` on any pollable, a blocking stream
//!   read or write): every call is async (the WASI p2 async linker, `instantiate_async`),
//!   and runs under `tokio::time::timeout`. WASI's waits are tokio futures, so when the
//!   timeout fires the call's future is dropped, which cancels the wait and unwinds the guest's
//!   fiber; the instance is then discarded like after any other fault.
//!
//! This covers every way to wait that WASI has, present and future, without auditing or
//! re-implementing each host function (the alternative), and without unlinking interfaces
//! that Rust, Python and JavaScript runtimes import on start. The calls stay synchronous for
//! callers: [`with_deadline`] drives them to completion on the calling thread with
//! `Handle::block_on` (the pipeline calls in from a blocking-pool thread), so guest code never
//! runs on the async reactor.

use std::sync::OnceLock;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimitsBuilder, Trap};
use wasmtime_wasi::WasiCtxBuilder;

use crate::engine::{EPOCH_TICK, HostState, Limiter, Plugin};
use crate::guest_log::GuestLog;

/// The sandbox limits of one instance.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most linear memory the instance may grow to, in bytes.
    pub max_memory: usize,
    /// The longest one call may run (wall clock).
    pub timeout: Duration,
    /// Replace the instance with a fresh one after this many batches (0: only after a fault).
    /// Guest heaps never shrink, so a long-lived Python or JavaScript instance keeps its high
    /// water mark; recycling returns it.
    pub recycle_after: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_memory: 64 << 20,
            timeout: Duration::from_secs(1),
            recycle_after: 10_000,
        }
    }
}

/// A fresh store for one instance of `plugin`: nothing granted, memory capped, the epoch
/// deadline armed.
pub(crate) fn store(plugin: &Plugin, limits: Limits) -> Store<HostState> {
    let inner = &plugin.inner;
    let store_limits = StoreLimitsBuilder::new()
        .memory_size(limits.max_memory)
        // A failed memory.grow becomes a trap, not -1: a guest allocator would abort anyway,
        // and a trap carries the reason.
        .trap_on_grow_failure(true)
        .build();
    // Deny everything: no preopened dirs, env, args or network, stdin closed; stdout and
    // stderr go to the debug log.
    let wasi = WasiCtxBuilder::new()
        .stdout(GuestLog::new(&inner.name, "stdout"))
        .stderr(GuestLog::new(&inner.name, "stderr"))
        .build();
    let state = HostState {
        wasi,
        table: ResourceTable::new(),
        limits: Limiter {
            limits: store_limits,
            peak: 0,
        },
        policy: None,
    };
    let mut store = Store::new(&inner.engine, state);
    store.limiter(|s| &mut s.limits);
    store.epoch_deadline_trap();
    store.set_epoch_deadline(deadline_ticks(limits.timeout));
    store
}

/// Runs `future` on this thread until it is done or `timeout` has passed (`Err`), in which
/// case the future is dropped: a guest waiting in a host call is cancelled.
pub(crate) fn with_deadline<F: std::future::Future>(
    timeout: Duration,
    future: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    // The timer is made inside the runtime (`timeout` needs one when it is called).
    block_on(async move { tokio::time::timeout(timeout, future).await })
}

/// Drives a plugin call to completion on this thread. The runtime's drivers (the timers that
/// end WASI's sleeps, and the deadline) run on the current runtime when there is one (the
/// pipeline calls in from its blocking pool), else on a small runtime of this crate's own
/// (tests, the bench, `sluice plugins inspect`). Must not be called from async code.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    match Handle::try_current() {
        // A current-thread runtime's timers run only inside its own `block_on`: not here.
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            handle.block_on(future)
        }
        _ => fallback_runtime().block_on(future),
    }
}

/// A runtime for callers that have none; made once, never dropped.
fn fallback_runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sluice-plugin-timers")
            .enable_all()
            .build()
            .expect("starting the plugin timer runtime")
    })
}

/// The reason a record gets when a call runs out of time.
pub(crate) fn deadline_reason(timeout: Duration) -> String {
    format!("exceeded the deadline of {timeout:?} per call")
}

/// Epoch ticks for `timeout`, rounded up, plus one for the tick already under way.
pub(crate) fn deadline_ticks(timeout: Duration) -> u64 {
    let tick = EPOCH_TICK.as_nanos();
    (timeout.as_nanos().div_ceil(tick) as u64).max(1) + 1
}

/// A short, operator-facing reason for a trap.
pub(crate) fn describe_trap(e: &wasmtime::Error, limits: Limits) -> String {
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return format!("plugin called exit({})", exit.0);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => deadline_reason(limits.timeout),
        Some(Trap::StackOverflow) => "stack overflow".to_owned(),
        Some(Trap::UnreachableCodeReached) => {
            "wasm `unreachable` executed (a Rust plugin panics this way)".to_owned()
        }
        Some(trap) => trap.to_string(),
        None => {
            let text = format!("{e:#}");
            if text.contains("forcing trap when growing memory") {
                format!(
                    "exceeded the memory limit of {} MiB",
                    limits.max_memory >> 20
                )
            } else {
                text.lines().next().unwrap_or("unknown fault").to_owned()
            }
        }
    }
}
