//! A claim held in the shared store by a value of this process: given back
//! when the value is dropped, or settled when what it guards is done. What a confirmation's place in its principal's
//! share and an approval's single use across replicas are made of.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{Claim, Lease, SharedStore, StoreError};

/// A key this process claimed in the shared store; dropped, it gives the
/// key back. The release runs on the runtime current where it is dropped,
/// else (a host thread, or after the runtime that claimed it ended) on
/// the process's one store thread.
pub(crate) struct Held {
    /// `None` once nothing is left to give back.
    store: Option<Arc<dyn SharedStore>>,
    key: String,
    lease: Lease,
    /// How long it was claimed for (a settlement is kept as long).
    ttl: Duration,
}

impl Held {
    /// Claims `key` for `lease` (held for `ttl` unless given back or
    /// settled): the held claim, or what the store found instead (nothing
    /// is held).
    pub(crate) async fn claim(
        store: &Arc<dyn SharedStore>,
        key: String,
        lease: Lease,
        ttl: Duration,
    ) -> Result<Result<Held, Claim>, StoreError> {
        Held::claim_within(store, key, lease, ttl, Duration::ZERO).await
    }

    /// [`claim`](Self::claim), and when another holds the key, waits at
    /// most `patience` for it to be given back or settled (woken by the
    /// store), then claims again: a key still held is [`Claim::Running`].
    pub(crate) async fn claim_within(
        store: &Arc<dyn SharedStore>,
        key: String,
        lease: Lease,
        ttl: Duration,
        patience: Duration,
    ) -> Result<Result<Held, Claim>, StoreError> {
        // Made before the claim is sent: a future dropped while it is in
        // flight still gives the key back.
        let mut held = Held {
            store: Some(Arc::clone(store)),
            key,
            lease,
            ttl,
        };
        let mut found = store.claim(&held.key, &held.lease, ttl).await?;
        if found == Claim::Running && !patience.is_zero() {
            let waited =
                crate::util::time::timeout(patience, store.wait(&held.key, &held.lease, ttl)).await;
            match waited {
                Ok(waited) => found = waited?,
                // Out of patience: the wait may have claimed the key as its
                // answer was on its way, so `held` (dropped) gives it back.
                Err(_) => return Ok(Err(Claim::Running)),
            }
        }
        match found {
            Claim::Leader => Ok(Ok(held)),
            other => {
                held.store = None;
                Ok(Err(other))
            }
        }
    }

    /// Settles the claim with `record` (kept as long as it was claimed
    /// for): later claims find it [`Claim::Settled`]. Then `then` runs.
    pub(crate) fn settle(
        mut self,
        record: &'static str,
        then: impl Future<Output = ()> + Send + 'static,
    ) {
        let Some(store) = self.store.take() else {
            return;
        };
        let key = std::mem::take(&mut self.key);
        let lease = self.lease.clone();
        let keep = self.ttl;
        self.run(async move {
            if let Err(error) = store.settle(&key, &lease, record, keep).await {
                tracing::warn!(store = store.name(), %error, "a claim in the shared store was not settled: it ends with its time to live");
            }
            then.await;
        });
    }

    /// Runs `work` on the current runtime, else on the store thread. (A
    /// page holds no claims: its registry never consults a store.)
    fn run(&self, work: impl Future<Output = ()> + Send + 'static) {
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        match tokio::runtime::Handle::try_current() {
            Ok(current) => drop(current.spawn(work)),
            Err(_) => store_thread(Box::pin(work)),
        }
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        drop(work);
    }
}

/// Work handed to the store thread.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
type Work = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs `work` on the process's one store thread (made on first use, with
/// a runtime of its own), for claims let go of outside any runtime. What
/// it is handed is bounded by the claims there are: each gives itself back
/// once. A page has no such thread, and no store.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn store_thread(work: Work) {
    use std::sync::OnceLock;
    use tokio::sync::mpsc;
    static THREAD: OnceLock<Option<mpsc::UnboundedSender<Work>>> = OnceLock::new();
    let sender = THREAD.get_or_init(|| {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Work>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        std::thread::Builder::new()
            .name("agent-surface-store".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    // Each piece of work is its own task: one slow
                    // store call holds up no other.
                    while let Some(work) = receiver.recv().await {
                        drop(tokio::spawn(work));
                    }
                });
            })
            .ok()?;
        Some(sender)
    });
    if sender
        .as_ref()
        .is_none_or(|sender| sender.send(work).is_err())
    {
        tracing::warn!(
            "a claim in the shared store was not given back: it ends with its time to live"
        );
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(store) = self.store.take() else {
            return;
        };
        let key = std::mem::take(&mut self.key);
        let lease = self.lease.clone();
        self.run(async move {
            if let Err(error) = store.release(&key, &lease).await {
                tracing::warn!(store = store.name(), %error, "a claim in the shared store was not given back: it ends with its time to live");
            }
        });
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}
