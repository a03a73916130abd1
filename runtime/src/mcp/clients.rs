//! The clients connected now, for a host's "who is here" panel: each MCP
//! consumer the server holds a view for (sessions, principals, anonymous
//! callers while their request runs), as a person would name it, and the
//! tools it may use right now.

use super::McpServer;
use crate::adapter::served;
use crate::context::Consumer;

/// A client the server serves now.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ConnectedClient {
    /// Its consumer identity; [`Consumer::label`] names it as a person
    /// would (the client's name, without version or session).
    pub consumer: Consumer,
    /// The wire names of the tools it may use right now (available ones).
    pub tools: Vec<String>,
    /// When it last made a request (registry clock, epoch milliseconds):
    /// a session whose client went away stays until its idle timeout.
    pub last_active_ms: u64,
}

impl McpServer {
    /// The clients served now (ordered by identity), with the tools
    /// each may use right now (its own view of the surface: what policies
    /// and availability leave it).
    pub fn clients(&self) -> Vec<ConnectedClient> {
        self.shared
            .views
            .all()
            .into_iter()
            .map(|view| ConnectedClient {
                consumer: view.toolset().consumer().clone(),
                tools: served(&view.current())
                    .map(|tool| tool.name().to_owned())
                    .collect(),
                last_active_ms: view.last_seen_ms(),
            })
            .collect()
    }
}
