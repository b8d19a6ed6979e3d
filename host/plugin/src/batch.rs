//! The batch policy, the same for every batch world (deserializers, processors): one call per
//! batch on the plugin's [`Instances`], and what happens when the guest fails.
//!
//! A trap (panic, out-of-bounds access, deadline, memory cap, `exit`) or a reply of the wrong
//! length discards the instance (the lifecycle builds a fresh one for the next call). The batch
//! is retried once (unless the fault was the deadline: a plugin that sleeps or spins on a
//! record does so again, and a retry would only double the stall); if it fails again it is
//! split in halves, recursively, to find the records that fail on their own. Those come back as
//! `Err(reason)`; every other record gets its real outcome. Nothing here panics or returns an
//! error because of what a plugin did.
//!
//! What differs between batch worlds (the inputs, the outputs, which export is the batch call)
//! is a [`BatchWorld`], implemented once per world under `crate::worlds`.

use std::future::Future;

use wasmtime::Store;

use crate::engine::{HostState, Plugin};
use crate::error::PluginError;
use crate::instance::{CallStats, Fault, FaultKind, Instances, World};
use crate::sandbox::Limits;

/// A world whose export is one batch function: a list of inputs in, one output per input.
pub(crate) trait BatchWorld: World {
    /// The export function, for messages (`deserialize-batch`).
    const CALL: &'static str;
    /// One input record of a batch.
    type Input: Sync;
    /// One result of a batch call.
    type Output: Send;

    /// Where an input came from, for logs (`http:/log/ingest`).
    fn origin(input: &Self::Input) -> &str;

    /// Calls the batch function.
    fn call<'a>(
        guest: &'a Self::Guest,
        store: &'a mut Store<HostState>,
        batch: &'a [Self::Input],
    ) -> impl Future<Output = wasmtime::Result<Vec<Self::Output>>> + Send + 'a;
}

/// How many sub-batch calls one batch may spend isolating failing records. A plugin that
/// fails on every record would otherwise cost about two calls (and deadlines) per record; past
/// the budget the remaining records are reported failed unisolated.
const ISOLATION_BUDGET: usize = 64;

/// A batch world's instances plus the policy around them. Not shared: each worker owns one.
pub(crate) struct Runner<W: BatchWorld> {
    instances: Instances<W>,
}

impl<W: BatchWorld> Runner<W> {
    /// Instantiates `plugin` and sets it up; fails if it is of another kind or cannot start.
    pub(crate) fn new(
        plugin: Plugin,
        setup: W::Setup,
        limits: Limits,
    ) -> Result<Self, PluginError> {
        Ok(Self {
            instances: Instances::new(plugin, setup, limits)?,
        })
    }

    pub(crate) fn plugin(&self) -> &Plugin {
        self.instances.plugin()
    }

    pub(crate) fn stats(&self) -> CallStats {
        self.instances.stats()
    }

    /// Runs `batch`: exactly one result per input, in order; `Err` holds why that input fails
    /// on its own.
    pub(crate) fn run(&mut self, batch: &[W::Input]) -> Vec<Result<W::Output, String>> {
        if batch.is_empty() {
            return Vec::new();
        }
        let first = match self.call(batch) {
            Ok(outputs) => return outputs.into_iter().map(Ok).collect(),
            Err(fault) => fault,
        };
        let second = if first.kind == FaultKind::Deadline {
            // Sleeping or spinning on a record is not transient: go straight to isolation.
            tracing::warn!(plugin = self.plugin().name(), records = batch.len(), reason = %first.reason, "plugin hit its deadline; isolating the records that cause it");
            first
        } else {
            tracing::warn!(plugin = self.plugin().name(), records = batch.len(), reason = %first.reason, "plugin faulted; retrying the batch on a fresh instance");
            match self.call(batch) {
                Ok(outputs) => return outputs.into_iter().map(Ok).collect(),
                Err(fault) => fault,
            }
        };
        let mut budget = ISOLATION_BUDGET;
        let mut out = Vec::with_capacity(batch.len());
        self.isolate(batch, second.reason, &mut budget, &mut out);
        out
    }

    /// `batch` faulted with `reason`: find the records that fault alone.
    fn isolate(
        &mut self,
        batch: &[W::Input],
        reason: String,
        budget: &mut usize,
        out: &mut Vec<Result<W::Output, String>>,
    ) {
        if batch.len() == 1 {
            tracing::warn!(plugin = self.plugin().name(), origin = %W::origin(&batch[0]), %reason, "plugin faults on this record; dead-lettering it");
            out.push(Err(reason));
            return;
        }
        let (left, right) = batch.split_at(batch.len() / 2);
        for half in [left, right] {
            if *budget == 0 {
                let why = format!("{reason} (isolation budget spent; not retried alone)");
                out.extend(half.iter().map(|_| Err(why.clone())));
                continue;
            }
            *budget -= 1;
            match self.call(half) {
                Ok(outputs) => out.extend(outputs.into_iter().map(Ok)),
                Err(fault) => self.isolate(half, fault.reason, budget, out),
            }
        }
    }

    /// One call of the whole `batch` (or a part of it); a reply of the wrong length is a fault.
    fn call(&mut self, batch: &[W::Input]) -> Result<Vec<W::Output>, Fault> {
        let outputs = self.instances.call(None, async |guest, store| {
            W::call(guest, store, batch).await
        })?;
        if outputs.len() != batch.len() {
            return Err(self.instances.fault(format!(
                "plugin fault: `{}` returned {} outcomes for {} records",
                W::CALL,
                outputs.len(),
                batch.len()
            )));
        }
        Ok(outputs)
    }
}
