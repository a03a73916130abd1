//! The devices example in the page: a client-side Dioxus web app (a small
//! device fleet — a filter bar, a table with tick boxes, a disable that
//! needs the person's approval) whose registry runs in the browser. Its
//! components mount their capabilities with the binding's hooks while they
//! render, and [`use_webmcp`](agent_surface_dioxus::use_webmcp) serves what
//! the in-page agent may use now to `document.modelContext`: no server.
//!
//! Build it with `cargo run -p xtask -- devices-web` (see the README), then
//! open it in `chromium --enable-features=WebMCP`.

pub mod app;
pub mod backend;
pub mod dialog;
pub mod fleet;
pub mod person;
pub mod surface;

pub use app::{PAGE_CHANNEL, PERSON, app, registry};
pub use fleet::{City, CityFilter, Device, Filters, Fleet, Page, Status, StatusFilter};
