//! What the MCP adapter's tests share: the devices example (the fixture:
//! its console, backend and application, through its public API), served
//! over HTTP, and a raw HTTP client for the streamable HTTP endpoint.

#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)] // test code

pub mod http;
pub mod raw_mcp;

pub use devices::{App, Status, User};
pub use http::{Served, serve, serve_beside_pages};
pub use raw_mcp::{LEGACY, PATIENCE, eventually, payload};
