//! The catalog a toolset serves: built from one snapshot, kept as the one
//! later calls resolve names against, and announced to subscribers when
//! what it serves changed.

use std::sync::{Arc, PoisonError};

use super::tool::{Catalog, build_catalog};
use super::{Mode, Shared};

impl Shared {
    /// The catalog the model last saw (built now if there is none).
    pub(super) fn catalog(&self) -> Arc<Catalog> {
        let built = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        built.unwrap_or_else(|| self.rebuild())
    }

    /// A fresh catalog, kept as the one later calls resolve against.
    pub(super) fn rebuild(&self) -> Arc<Catalog> {
        let catalog = Arc::new(self.build());
        let previous = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(Arc::clone(&catalog));
        // The previous catalog may own the last reference to an unmounted
        // registration (its policies are host code): dropped unlocked.
        crate::adapter::contain::drop_contained("previous catalog", previous);
        catalog
    }

    /// Builds the direct-mode catalog from one snapshot.
    fn build(&self) -> Catalog {
        let snapshot = self.registry.snapshot(&self.options);
        build_catalog(&snapshot)
    }

    pub(super) fn notify_if_changed(&self) {
        if self.disposed.is_cancelled() || self.mode == Mode::Meta {
            return;
        }
        let catalog = self.rebuild();
        let fingerprint = catalog.fingerprint();
        let before = self
            .notified
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(fingerprint);
        if before == Some(fingerprint) {
            return;
        }
        self.listeners.call(&catalog.tools, "toolset");
    }
}
