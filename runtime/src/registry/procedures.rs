//! The domain plane's registry side: known procedure ids and the
//! installed executor, whose manifest is the ceiling of what references expose.

use super::Registry;

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use crate::procedure::{ManifestMismatch, ProcedureExecutor};

impl Registry {
    /// Tells the registry which domain procedure ids exist (for
    /// suffix-collision diagnostics). Installing an executor sets them from
    /// its manifest.
    pub fn set_known_procedures(&self, ids: impl IntoIterator<Item = impl Into<Arc<str>>>) {
        self.inner.state().known_procedures = ids.into_iter().map(Into::into).collect();
    }

    /// Installs (or, with `None`, removes) the executor of domain
    /// procedures. Its manifest becomes the ceiling: live references to
    /// procedures it lists (and agrees with) are exposed, the others are
    /// withdrawn; the version moves when that changes anything. Returns the
    /// live references that disagree with the manifest (they stay withdrawn).
    pub fn set_procedure_executor(
        &self,
        executor: Option<Arc<dyn ProcedureExecutor>>,
    ) -> Vec<ManifestMismatch> {
        let inner = &self.inner;
        // A panicking manifest fails closed: nothing is exposed.
        let manifest = executor.as_ref().and_then(|executor| {
            crate::util::contain::contained("procedure executor manifest", || executor.manifest())
        });
        let mut state = inner.state();
        state.known_procedures = manifest
            .map(|manifest| manifest.entries().map(|e| Arc::from(e.id())).collect())
            .unwrap_or_default();
        let mut mismatches = Vec::new();
        let mut changed = false;
        for registration in state.live.values() {
            for reference in registration.references.iter() {
                let entry = manifest.and_then(|manifest| manifest.get(reference.id()));
                let exposed = match entry {
                    Some(entry) => match crate::procedure::agree(reference.procedure, entry) {
                        Ok(()) => true,
                        Err(mismatch) => {
                            // Logged once the lock is released.
                            mismatches.push(mismatch);
                            false
                        }
                    },
                    None => false,
                };
                changed |= reference.exposed.swap(exposed, Ordering::AcqRel) != exposed;
            }
        }
        let previous = std::mem::replace(
            &mut *inner
                .executor
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            executor,
        );
        if changed {
            state.index_procedures();
            inner.bump(&mut state, Vec::new());
        }
        drop(state);
        for mismatch in &mismatches {
            tracing::error!(%mismatch, "a live procedure reference disagrees with the new manifest; it is withdrawn");
        }
        inner.dispatcher.drain();
        crate::util::contain::drop_contained("procedure executor destructor", previous);
        mismatches
    }
}
