//! Disposal: a registry's one-way "disposed" signal, read on every call
//! with a plain atomic load and awaited through a cancellation token made
//! only when something waits on it.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;
use tokio_util::sync::WaitForCancellationFuture;

/// A one-way "disposed" signal: set once, never cleared.
///
/// [`is_cancelled`](Self::is_cancelled) is one load (a cancellation
/// token's own check takes its lock), for checks on every call; the token
/// behind [`cancelled`](Self::cancelled) is made only when something waits
/// and is fired by [`cancel`](Self::cancel) after the flag is set, so a
/// waiter never misses it.
#[derive(Debug, Default)]
pub(crate) struct Disposal {
    flag: AtomicBool,
    token: LazyLock<CancellationToken>,
}

impl Disposal {
    /// Whether [`cancel`](Self::cancel) was called.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Completes once [`cancel`](Self::cancel) was called.
    pub(crate) fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }

    /// Sets the flag and fires the token; `true` only for the first call
    /// (exactly one caller tears down).
    pub(crate) fn cancel(&self) -> bool {
        if self.flag.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.token.cancel();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Disposal;

    #[tokio::test]
    async fn the_flag_and_the_token_agree_and_only_the_first_cancel_counts() {
        let disposal = Disposal::default();
        assert!(!disposal.is_cancelled());
        let waiter = disposal.cancelled();
        assert!(disposal.cancel());
        assert!(!disposal.cancel());
        assert!(disposal.is_cancelled());
        waiter.await;
        disposal.cancelled().await;
    }
}
