//! The pipeline's tests in a browser page: `tests/pipeline.rs`, run by
//! `wasm-bindgen-test` in headless Chromium (see `.ci/run`). Nothing here
//! natively.
