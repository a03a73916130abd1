//! A list of `Fn(&A)` listeners with ids: added, removed by id, and called
//! outside the lock with each panic contained.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

type Callback<A> = Arc<dyn Fn(&A) + Send + Sync>;

/// Listeners of `&A`, each with the id [`Listeners::add`] returned; called
/// outside the lock, a panicking one logged and the others still called.
pub(crate) struct Listeners<A: ?Sized> {
    next: AtomicU64,
    list: Mutex<Vec<(u64, Callback<A>)>>,
}

impl<A: ?Sized> Default for Listeners<A> {
    fn default() -> Self {
        Listeners {
            next: AtomicU64::new(0),
            list: Mutex::new(Vec::new()),
        }
    }
}

impl<A: ?Sized> Listeners<A> {
    /// Adds a listener; the id removes it.
    pub(crate) fn add(&self, listener: impl Fn(&A) + Send + Sync + 'static) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push((id, Arc::new(listener)));
        id
    }

    /// Removes a listener; its closure is dropped outside the lock (it may
    /// own a mount handle), with a panicking destructor contained.
    pub(crate) fn remove(&self, id: u64) {
        let removed: Vec<(u64, Callback<A>)> = {
            let mut list = self.lock();
            let (removed, kept) = std::mem::take(&mut *list)
                .into_iter()
                .partition(|(listener, _)| *listener == id);
            *list = kept;
            removed
        };
        crate::util::contain::drop_contained("listener destructor", removed);
    }

    /// Removes every listener, dropping them outside the lock.
    pub(crate) fn clear(&self) {
        let removed = std::mem::take(&mut *self.lock());
        crate::util::contain::drop_contained("listener destructor", removed);
    }

    /// Whether no listener is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Calls every listener with `value`, outside the lock; a panicking
    /// listener is logged (as `what`) and the others still run.
    pub(crate) fn call(&self, value: &A, what: &str) {
        let listeners: Vec<Callback<A>> = self
            .lock()
            .iter()
            .map(|(_, listener)| Arc::clone(listener))
            .collect();
        for listener in listeners {
            if crate::util::contain::catch(|| listener(value)).is_err() {
                tracing::error!("a {what} listener panicked; the other listeners still run");
            }
            // Removed meanwhile, this copy may be the last owner: its
            // destructor is host code.
            crate::util::contain::drop_contained("listener destructor", listener);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Callback<A>)>> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
