//! How `--mcp http` authenticates: none on loopback (the default, for the
//! people of this machine, acting as `--user`), or bearer tokens (`--auth`)
//! whose identity — not `--user` — decides what each caller sees (the
//! registry's own context then has no user: it fails closed). The demo
//! backend's session stays `--user`'s: it re-checks inputs, and the console
//! decides per identity what reaches it.

use std::net::SocketAddr;

use agent_surface::mcp::McpServerBuilder;
use agent_surface::mcp::auth::{JwtAuthenticator, JwtKey, ResourceServer, StaticTokens};

use crate::cli::Auth;

/// The scope every token needs to reach the endpoint.
pub(crate) const MCP_SCOPE: &str = "mcp";

/// The scopes the metadata advertises: the endpoint's, then the console's
/// permissions (which policies read as the user's).
const SCOPES: [&str; 3] = [MCP_SCOPE, "devices:read", "devices:write"];

/// `builder` with `auth` (loaded now: a bad file is an error before
/// serving), for an endpoint at `address` whose public URI is `resource`
/// (default `http://ADDR/mcp`). Returns what to print at start-up.
pub(crate) fn configure(
    builder: McpServerBuilder,
    auth: &Auth,
    address: SocketAddr,
    resource: Option<&str>,
    authorization_server: Option<&str>,
) -> Result<(McpServerBuilder, String), String> {
    let resource = resource.map_or_else(|| format!("http://{address}/mcp"), str::to_owned);
    let (server, what) = match auth {
        Auth::Tokens(file) => {
            let tokens = StaticTokens::from_file(file).map_err(|err| err.to_string())?;
            let what = format!(
                "{} static bearer tokens from {}",
                tokens.len(),
                file.display()
            );
            (ResourceServer::new(&resource, tokens), what)
        }
        Auth::Jwt { issuer, key } => {
            let is_jwks = key.extension().is_some_and(|ext| ext == "json");
            let loaded = if is_jwks {
                JwtKey::jwks_file(key)
            } else {
                JwtKey::pem_file(key)
            };
            let key_text = key.display().to_string();
            let key = loaded.map_err(|err| err.to_string())?;
            let jwt = JwtAuthenticator::new(issuer, &resource, key);
            let what = format!("JWTs of {issuer} for {resource}, verified with {key_text}");
            (ResourceServer::new(&resource, jwt), what)
        }
    };
    let mut server = server.scopes_supported(SCOPES).required_scopes([MCP_SCOPE]);
    // The JWTs' issuer is the authorization server unless told otherwise:
    // a client discovering it from the metadata needs one.
    let issuer = match auth {
        Auth::Jwt { issuer, .. } => Some(issuer.as_str()),
        Auth::Tokens(_) => None,
    };
    if let Some(authorization_server) = authorization_server.or(issuer) {
        server = server.authorization_servers([authorization_server]);
    }
    let metadata = server.metadata_url();
    let mut builder = builder.auth(server);
    if let Some(host) = host_of(&resource) {
        builder = builder.allowed_hosts(["localhost", "127.0.0.1", "::1", host]);
    }
    Ok((
        builder,
        format!(
            "MCP over HTTP requires a bearer token with scope `{MCP_SCOPE}`: {what}; each \
             token's identity decides what its caller sees (--user is not used for MCP \
             callers); protected resource metadata: {metadata}"
        ),
    ))
}

/// The `Host` name of a URI (without port or brackets).
fn host_of(uri: &str) -> Option<&str> {
    let rest = uri.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// What `--mcp http` without `--auth` says at start-up.
pub(crate) fn unauthenticated_notice(address: SocketAddr, user: &str) -> String {
    let reach = if address.ip().is_loopback() {
        "loopback only"
    } else {
        "WARNING: not a loopback address, and nothing authenticates callers; use --auth"
    };
    format!(
        "MCP over HTTP without authentication ({reach}): every caller on this machine acts as \
         `{user}`; pass --auth to serve several people, each by their own token"
    )
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn the_host_of_a_resource() {
        assert_eq!(
            host_of("https://mcp.example.com/mcp"),
            Some("mcp.example.com")
        );
        assert_eq!(host_of("http://127.0.0.1:8765/mcp"), Some("127.0.0.1"));
        assert_eq!(host_of("http://[::1]:1/mcp"), Some("::1"));
        assert_eq!(host_of("nonsense"), None);
    }
}
