//! Compile-fail and compile-pass cases of the agent-surface macros, run by
//! `tests/ui.rs` with trybuild. One folder per topic; each case shows one
//! behaviour, with the expected compiler output committed beside it.
