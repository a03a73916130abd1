//! Authorization of the MCP HTTP endpoint as an OAuth 2.1 resource server
//! (the MCP authorization spec): a request's bearer token becomes an
//! [`Identity`] — a subject, its scopes and the host context policies read
//! (`authenticated()`, `has_permission(…)`, discovery hiding) — through a
//! pluggable [`Authenticator`]. Built in: [`StaticTokens`] (a token file)
//! and [`JwtAuthenticator`] (issuer, audience = this resource, expiry,
//! signature by a key or a JWKS document).
//!
//! - No credential, or one the authenticator refuses: `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728), plus
//!   `error="invalid_token"` for a refused one (RFC 6750).
//! - A valid credential without the [required
//!   scopes](ResourceServer::required_scopes): `403` with
//!   `error="insufficient_scope"`.
//! - Neither says anything about tools: the body is fixed text, decided
//!   before any request is read.
//! - Protected Resource Metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource` (and the path-suffixed form
//!   for the resource's path).
//! - Identity is per credential: each identity is its own consumer (its
//!   view, dedupe records, confirmations, rate limits), evaluated with its
//!   own host context, which its consumer carries into every call
//!   ([`Consumer::with_host_context`](crate::context::Consumer::with_host_context):
//!   nothing is kept on the registry's side, so nothing evicted can lend
//!   another identity's context);
//!   a session is bound to the identity that opened it, and a session id
//!   presented with another credential is `404`, as an unknown one.
//! - A credential is never an approval channel: confirmations are
//!   approved only where the host trusts (the app's own channel, or MCP
//!   elicitation when [enabled](super::McpServerBuilder::elicitation)).

mod gate;
mod jwt;
mod metadata;
mod tokens;

use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::context::HostContext;

pub use jwt::{JwtAuthenticator, JwtError, JwtKey};
pub use tokens::{StaticTokens, TokenFileError};

pub(super) use gate::{AuthGate, Authenticated, auth_gate};
pub(super) use metadata::routes as metadata_routes;

/// Who a credential speaks for: a stable subject, the scopes it was granted
/// and the host context the registry's policies and handlers read for it.
#[derive(Clone, Debug)]
pub struct Identity {
    subject: String,
    scopes: Vec<String>,
    host: HostContext,
}

impl Identity {
    /// An identity for `subject` with `scopes`, whose host context is
    /// `{"user": {"id": subject, "permissions": scopes}, "scopes": scopes}`
    /// (what `authenticated()` and `has_permission(…)` read).
    ///
    /// ```
    /// use agent_surface::mcp::auth::Identity;
    ///
    /// let ada = Identity::new("ada", ["devices:read"]);
    /// assert_eq!(ada.subject(), "ada");
    /// assert_eq!(ada["user"]["permissions"][0], "devices:read");
    /// ```
    pub fn new(
        subject: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Identity {
        let subject = subject.into();
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        let host = HostContext::new()
            .with("user", json!({"id": subject, "permissions": scopes}))
            .with("scopes", json!(scopes));
        Identity {
            subject,
            scopes,
            host,
        }
    }

    /// Replaces the host context.
    #[must_use]
    pub fn with_host(mut self, host: HostContext) -> Identity {
        self.host = host;
        self
    }

    /// The subject (the user, the client).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The scopes the credential grants.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The host context of this identity's calls.
    pub fn host(&self) -> &HostContext {
        &self.host
    }
}

/// The host context's JSON value under `key` (`null` when absent).
impl std::ops::Index<&str> for Identity {
    type Output = Value;
    fn index(&self, key: &str) -> &Value {
        self.host.get(key).unwrap_or(&Value::Null)
    }
}

/// Why a credential was refused. The reason goes to the server's log
/// only; the client learns `invalid_token` and nothing more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    reason: String,
}

impl Rejected {
    /// A refusal for `reason` (logged, never sent).
    pub fn new(reason: impl Into<String>) -> Rejected {
        Rejected {
            reason: reason.into(),
        }
    }

    /// Why.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Turns a bearer token into an [`Identity`]. Called for every HTTP
/// request to `/mcp` that carries one: keep it synchronous and cheap (keys
/// and token tables are loaded up front). A panic is contained and refuses
/// the request.
pub trait Authenticator: Send + Sync + 'static {
    /// The identity `token` speaks for, or why it speaks for nobody.
    fn authenticate(&self, token: &str) -> Result<Identity, Rejected>;
}

impl<F> Authenticator for F
where
    F: Fn(&str) -> Result<Identity, Rejected> + Send + Sync + 'static,
{
    fn authenticate(&self, token: &str) -> Result<Identity, Rejected> {
        self(token)
    }
}

type MapHost = Arc<dyn Fn(&Identity) -> HostContext + Send + Sync>;

/// The endpoint as an OAuth 2.1 protected resource: its canonical URI (the
/// audience tokens must be issued for), the authorization servers and
/// scopes it advertises, the scopes every request needs, and the
/// authenticator. Give it to [`McpServerBuilder::auth`](super::McpServerBuilder::auth).
///
/// ```
/// use agent_surface::mcp::auth::{Identity, Rejected, ResourceServer};
///
/// let auth = ResourceServer::new("https://mcp.example.com/mcp", |token: &str| {
///     match token {
///         "s3cret" => Ok(Identity::new("ada", ["devices:read"])),
///         _ => Err(Rejected::new("unknown token")),
///     }
/// })
/// .authorization_servers(["https://auth.example.com"])
/// .required_scopes(["devices:read"]);
/// assert_eq!(auth.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
/// ```
#[derive(Clone)]
pub struct ResourceServer {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    authenticator: Arc<dyn Authenticator>,
    map_host: Option<MapHost>,
}

impl fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// The protected resource `resource` (the endpoint's canonical URI, e.g.
    /// `https://mcp.example.com/mcp`), authenticated by `authenticator`.
    pub fn new(resource: impl Into<String>, authenticator: impl Authenticator) -> ResourceServer {
        ResourceServer {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            authenticator: Arc::new(authenticator),
            map_host: None,
        }
    }

    /// The authorization servers that issue tokens for this resource
    /// (advertised in the metadata).
    #[must_use]
    pub fn authorization_servers(
        mut self,
        servers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.authorization_servers = servers.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes advertised in the metadata (default: the required ones).
    #[must_use]
    pub fn scopes_supported(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes every request's credential must grant; short of one, `403`
    /// `insufficient_scope`. Finer rules belong to policies over the host
    /// context (which keep hidden capabilities hidden).
    #[must_use]
    pub fn required_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Builds each identity's host context (default: the identity's own),
    /// e.g. to add the application's typed extensions.
    #[must_use]
    pub fn host_context(
        mut self,
        map: impl Fn(&Identity) -> HostContext + Send + Sync + 'static,
    ) -> Self {
        self.map_host = Some(Arc::new(map));
        self
    }

    /// The resource's canonical URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where the resource's metadata is served: the resource's origin,
    /// `/.well-known/oauth-protected-resource`, then the resource's path.
    pub fn metadata_url(&self) -> String {
        let (origin, path) = metadata::split(&self.resource);
        format!("{origin}{}{path}", metadata::WELL_KNOWN)
    }

    /// The Protected Resource Metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let scopes = if self.scopes_supported.is_empty() {
            &self.required_scopes
        } else {
            &self.scopes_supported
        };
        json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
        })
    }

    /// The host context of `identity`'s calls.
    pub(super) fn host_of(&self, identity: &Identity) -> HostContext {
        match &self.map_host {
            Some(map) => crate::adapter::contain::catch(|| map(identity)).unwrap_or_default(),
            None => identity.host.clone(),
        }
    }

    pub(super) fn authenticator(&self) -> &dyn Authenticator {
        &*self.authenticator
    }

    pub(super) fn required(&self) -> &[String] {
        &self.required_scopes
    }
}
