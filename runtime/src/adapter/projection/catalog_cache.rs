//! The catalog a toolset serves: built from one snapshot (or adopted from
//! another consumer's build that no discovery policy decided), kept as the
//! one later calls resolve names against, and announced to subscribers
//! when what it serves changed.

use std::sync::{Arc, PoisonError};

use super::tool::{Catalog, build_catalog};
use super::{Mode, Shared, Toolset};

impl Toolset {
    /// A fresh direct-mode catalog, kept as the one later calls resolve
    /// against (`None` in meta mode, whose tools are constant).
    pub(in crate::adapter) fn rebuild_catalog(&self) -> Option<Arc<Catalog>> {
        (self.shared.mode == Mode::Direct).then(|| self.shared.rebuild())
    }

    /// Serves `catalog`, built for another consumer of the same registry
    /// and options from a snapshot no discovery policy decided (so it is
    /// exactly what this consumer's own build would have been), as if it
    /// had been built here. `false` (nothing adopted) in meta mode or for
    /// a catalog a discovery policy decided.
    pub(in crate::adapter) fn adopt(&self, catalog: Arc<Catalog>) -> bool {
        if self.shared.mode != Mode::Direct || catalog.consumer_dependent {
            return false;
        }
        let previous = self
            .shared
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(catalog);
        crate::adapter::contain::drop_contained("previous catalog", previous);
        true
    }
}

impl Shared {
    /// The catalog the model last saw (built now if there is none).
    pub(in crate::adapter) fn catalog(&self) -> Arc<Catalog> {
        let built = self
            .built
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        built.unwrap_or_else(|| self.rebuild())
    }

    /// A fresh catalog, kept as the one later calls resolve against.
    pub(in crate::adapter) fn rebuild(&self) -> Arc<Catalog> {
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

    pub(in crate::adapter) fn notify_if_changed(&self) {
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
