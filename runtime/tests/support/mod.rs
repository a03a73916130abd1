//! The fixture the MCP adapter's tests share: a small device console (a
//! fleet and its `domain:devices.disable` procedure, the console's
//! components, the application and its router) and a raw HTTP client for
//! the streamable HTTP endpoint.

#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)] // test code

pub mod app;
pub mod console;
pub mod fleet;
pub mod http;
pub mod raw_mcp;

pub use app::App;
pub use fleet::{Status, User};
pub use http::{Served, serve, serve_console};
pub use raw_mcp::{LEGACY, PATIENCE, eventually, payload};
