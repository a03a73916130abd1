//! Collects every error of one macro invocation, so a user with three
//! mistakes sees three errors in one build. It must be checked: a context
//! dropped with errors it never reported stops the build loudly (the
//! macro panics, which rustc reports) instead of losing them.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// The error sink of one expansion.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// Records an error spanning `tokens`.
    pub(crate) fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error at a span.
    pub(crate) fn error_at<M: Display>(&self, span: proc_macro2::Span, message: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new(span, message));
    }

    /// Records a syn error.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// How many errors were recorded so far.
    pub(crate) fn error_count(&self) -> usize {
        self.errors.borrow().len()
    }

    /// Whether any error was recorded.
    pub(crate) fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// All recorded errors as `compile_error!` invocations.
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors
            .take()
            .into_iter()
            .map(|error| error.to_compile_error())
            .collect()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !std::thread::panicking() && !self.errors.get_mut().is_empty() {
            #[allow(clippy::panic)]
            {
                panic!(
                    "agent-surface-macros recorded errors it never reported; this is a bug in the macros"
                );
            }
        }
    }
}
