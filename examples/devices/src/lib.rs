//! The devices example: a small device-fleet console — a filter bar, a
//! table, a detail drawer and navigation — whose agent surface is declared
//! with the `agent-surface` macros, backed by a backend that owns the devices.

pub mod backend;
pub mod components;

pub use backend::{Backend, City, Device, Status};
pub use components::{Console, DevicesTable, Drawer, FilterBar, Navigation};
