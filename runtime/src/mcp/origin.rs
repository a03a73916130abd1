//! The `Origin`/`Host` gate: which browser origins may reach an HTTP
//! surface and which `Host` names it answers to. The MCP endpoint uses it on
//! every verb; a host serving its own pages beside `/mcp` puts the same gate
//! in front of every route ([`McpServer::serve_with`](super::McpServer::serve_with)
//! does).
//!
//! - A `Host` outside the allowed hosts is refused (DNS rebinding: a foreign
//!   name resolved to this machine), and so is a request without one.
//! - An `Origin` outside the allowed origins is refused (a page of another
//!   site), including `null` unless listed and lookalikes such as
//!   `http://127.0.0.1.evil.example` (hosts compare whole, never by prefix).
//! - A request without `Origin` (not sent by a browser's cross-origin
//!   machinery) passes this gate: authenticate it another way.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, StatusCode, header};

/// Allowed browser origins and `Host` values; loopback by default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginGate {
    origins: Vec<Allowed>,
    hosts: Vec<Allowed>,
}

impl Default for OriginGate {
    fn default() -> Self {
        OriginGate::loopback()
    }
}

impl OriginGate {
    /// The loopback origins `http(s)://localhost`, `127.0.0.1` and `[::1]`
    /// on any port, and those hosts on any port.
    pub fn loopback() -> OriginGate {
        OriginGate::new(LOOPBACK_ORIGINS, LOOPBACK_HOSTS)
    }

    /// A gate over `origins` (`scheme://host` with the scheme's default
    /// port, `scheme://host:port`, `scheme://host:*`, or `null`) and `hosts`
    /// (`name`, `name:port`, `[v6]`; without a port, any port). Entries
    /// that do not parse allow nothing.
    pub fn new(
        origins: impl IntoIterator<Item = impl AsRef<str>>,
        hosts: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> OriginGate {
        OriginGate {
            origins: origins
                .into_iter()
                .filter_map(|o| Allowed::origin(o.as_ref()))
                .collect(),
            hosts: hosts
                .into_iter()
                .filter_map(|h| Allowed::host(h.as_ref()))
                .collect(),
        }
    }

    /// Whether a request with these headers may pass; the refusal says why.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), &'static str> {
        match self.refusal(headers) {
            Some((_, reason)) => Err(reason),
            None => Ok(()),
        }
    }

    /// The answer to a request these headers do not let pass: `400` for a
    /// missing or repeated `Host` (RFC 9112 §3.2: the request is
    /// malformed), `403` for a `Host` or `Origin` outside the allowed ones.
    pub fn refuse(&self, headers: &HeaderMap) -> Option<Response> {
        self.refusal(headers)
            .map(|(status, reason)| super::plain::plain(status, reason))
    }

    /// [`refuse`](Self::refuse) for a whole request: an absolute-form
    /// target (`POST http://host/mcp`) names the host the request is for
    /// (RFC 9112 §3.2.2), so its authority must be allowed as the `Host`
    /// header must.
    pub fn refuse_request<B>(&self, request: &http::Request<B>) -> Option<Response> {
        if let Some(authority) = request.uri().authority()
            && !self.host_allowed(authority.as_str())
        {
            return Some(super::plain::plain(
                StatusCode::FORBIDDEN,
                "Forbidden: the request target's host is not allowed",
            ));
        }
        self.refuse(request.headers())
    }

    /// The gate as axum middleware (`axum::middleware::from_fn_with_state`
    /// with an `Arc<OriginGate>`): [`refuse`](Self::refuse)s before any
    /// handler.
    pub async fn layer(
        State(gate): State<Arc<OriginGate>>,
        request: Request,
        next: Next,
    ) -> Response {
        if let Some(refused) = gate.refuse_request(&request) {
            return refused;
        }
        next.run(request).await
    }
}

/// One allowed origin (`scheme://host[:port|:*]`) or host (`host[:port]`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Allowed {
    scheme: Option<String>,
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl Allowed {
    /// An origin entry: `http://localhost:*`, `https://app.example.com`
    /// (the scheme's default port), `null`.
    fn origin(entry: &str) -> Option<Allowed> {
        let entry = entry.trim();
        if entry.eq_ignore_ascii_case("null") {
            return Some(Allowed {
                scheme: None,
                host: "null".to_owned(),
                port: Some(0),
            });
        }
        let (base, any_port) = match entry.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (entry, false),
        };
        let (scheme, host, port) = parse_origin(base, true)?;
        if any_port && port.is_some() {
            return None;
        }
        Some(Allowed {
            host,
            port: if any_port {
                None
            } else {
                Some(port.or(default_port(&scheme))?)
            },
            scheme: Some(scheme),
        })
    }

    /// A host entry: `localhost`, `127.0.0.1`, `[::1]`, `mcp.example.com:443`
    /// (without a port: any port).
    fn host(entry: &str) -> Option<Allowed> {
        let entry = entry.trim();
        // A bare IPv6 address (`::1`) is written bracketed in a `Host`.
        let bracketed;
        let entry = if entry.matches(':').count() > 1 && !entry.starts_with('[') {
            bracketed = format!("[{entry}]");
            bracketed.as_str()
        } else {
            entry
        };
        let (host, port) = parse_authority(entry)?;
        Some(Allowed {
            scheme: None,
            host,
            port,
        })
    }
}

/// The loopback origins allowed by default, on any port.
pub(super) const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The loopback hosts allowed by default.
pub(super) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// `host[:port]`, the host lowercased and without IPv6 brackets. Nothing
/// else: no user information (`user@host`), and a port only as a number
/// a port can be (`:99999`, `:-1`, `:0x50` are no port, not any port).
fn parse_authority(text: &str) -> Option<(String, Option<u16>)> {
    let authority = http::uri::Authority::try_from(text).ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    // The port text: after the last `:` outside an IPv6 literal's brackets.
    let text = authority.as_str();
    let after_host = text.rsplit_once(']').map_or(text, |(_, rest)| rest);
    if let Some((_, port)) = after_host.rsplit_once(':')
        && !port.is_empty()
        && (!port.bytes().all(|b| b.is_ascii_digit()) || port.parse::<u16>().is_err())
    {
        return None;
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    Some((host, authority.port_u16()))
}

/// `scheme://host[:port]` with nothing after the authority (an allow-list
/// entry may end in `/`; an `Origin` header never does, RFC 6454 §7).
fn parse_origin(text: &str, entry: bool) -> Option<(String, String, Option<u16>)> {
    let uri = http::Uri::try_from(text).ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?.as_str();
    let after = text.split_once("://").map(|(_, rest)| rest);
    let exact = after.is_some_and(|rest| {
        rest == authority || (entry && rest.strip_suffix('/') == Some(authority))
    });
    if !exact {
        return None;
    }
    let (host, port) = parse_authority(authority)?;
    Some((scheme, host, port))
}

impl OriginGate {
    /// Whether `origin` (an `Origin` header's value) is allowed.
    fn origin_allowed(&self, origin: &str) -> bool {
        if origin.trim().eq_ignore_ascii_case("null") {
            return self.origins.iter().any(|a| a.scheme.is_none());
        }
        let Some((scheme, host, port)) = parse_origin(origin.trim(), false) else {
            return false;
        };
        let Some(port) = port.or(default_port(&scheme)) else {
            return false;
        };
        self.origins.iter().any(|allowed| {
            allowed.scheme.as_deref() == Some(scheme.as_str())
                && allowed.host == host
                && allowed.port.is_none_or(|p| p == port)
        })
    }

    /// Whether `host` (a `Host` header's value) is allowed.
    fn host_allowed(&self, host: &str) -> bool {
        let Some((host, port)) = parse_authority(host) else {
            return false;
        };
        self.hosts
            .iter()
            .any(|allowed| allowed.host == host && (allowed.port.is_none() || allowed.port == port))
    }

    /// Why a request may not pass, and its status: a missing or repeated
    /// `Host` (malformed), a disallowed `Host` or `Origin` (forbidden).
    fn refusal(&self, headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return Some((
                StatusCode::BAD_REQUEST,
                "Bad Request: exactly one Host header is required",
            ));
        };
        if !host.to_str().is_ok_and(|host| self.host_allowed(host)) {
            return Some((
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed",
            ));
        }
        if headers.get_all(header::ORIGIN).iter().any(|origin| {
            !origin
                .to_str()
                .is_ok_and(|origin| self.origin_allowed(origin))
        }) {
            return Some((
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed",
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, host.parse().unwrap());
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, origin.parse().unwrap());
        }
        headers
    }

    #[test]
    fn every_loopback_name_is_allowed_ipv6_included() {
        let gate = OriginGate::loopback();
        for (host, origin) in [
            ("127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("localhost:8080", "http://localhost:8080"),
            ("[::1]:8080", "http://[::1]:8080"),
        ] {
            assert_eq!(gate.check(&request(host, Some(origin))), Ok(()), "{host}");
        }
        assert!(gate.check(&request("[::2]:8080", None)).is_err());
        assert!(
            OriginGate::new(["http://[::1]:*"], ["::1"])
                .check(&request("[::1]:1", None))
                .is_ok()
        );
    }

    #[test]
    fn a_malformed_host_or_origin_is_no_loopback_name() {
        let gate = OriginGate::loopback();
        for host in [
            "localhost:99999",
            "localhost:-1",
            "localhost:0x50",
            "localhost:+80",
            "evil.example@localhost",
            "user@127.0.0.1:80",
        ] {
            assert_eq!(
                gate.check(&request(host, None)),
                Err("Forbidden: Host header is not allowed"),
                "{host}"
            );
        }
        for origin in [
            "http://localhost:99999",
            "http://user@localhost:1",
            "http://localhost:8080/",
            "http://localhost:8080/x",
            "http://localhost:8080?x",
        ] {
            assert_eq!(
                gate.check(&request("localhost:8080", Some(origin))),
                Err("Forbidden: Origin header is not allowed"),
                "{origin}"
            );
        }
        // An allow-list entry may end in a slash.
        let listed = OriginGate::new(["https://app.example.com/"], ["app.example.com"]);
        assert_eq!(
            listed.check(&request("app.example.com", Some("https://app.example.com"))),
            Ok(())
        );
    }

    #[test]
    fn an_absolute_form_target_names_an_allowed_host_too() {
        let gate = OriginGate::loopback();
        let refused = |target: &str| {
            let request = http::Request::builder()
                .uri(target)
                .header(header::HOST, "127.0.0.1:8080")
                .body(())
                .unwrap();
            gate.refuse_request(&request).is_some()
        };
        assert!(refused("http://evil.example/mcp"));
        assert!(!refused("http://127.0.0.1:8080/mcp"));
        assert!(!refused("/mcp"));
    }
}
