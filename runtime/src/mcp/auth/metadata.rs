//! Protected Resource Metadata (RFC 9728): where it is served and the
//! router that serves it.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};

use super::ResourceServer;

/// The well-known path of the metadata.
pub(super) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// `(origin, path)` of a resource URI: `https://h:1/mcp` is
/// `("https://h:1", "/mcp")`; a path of `/` is empty.
pub(super) fn split(resource: &str) -> (&str, &str) {
    let after_scheme = resource.find("://").map_or(0, |at| at + 3);
    let path_at = resource
        .get(after_scheme..)
        .and_then(|rest| rest.find(['/', '?', '#']))
        .map_or(resource.len(), |at| after_scheme + at);
    let (origin, rest) = resource.split_at(path_at);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    (origin, if path == "/" { "" } else { path })
}

/// The routes serving `auth`'s metadata: the well-known path, and the same
/// followed by the resource's path.
pub(crate) fn routes(auth: &ResourceServer) -> axum::Router {
    let document = Arc::new(auth.metadata().to_string());
    let (_, path) = split(auth.resource());
    let serve = move || {
        let document = Arc::clone(&document);
        async move { json(&document) }
    };
    let mut router = axum::Router::new().route(WELL_KNOWN, axum::routing::get(serve.clone()));
    let suffixed = format!("{WELL_KNOWN}{path}");
    if !path.is_empty() && !path.contains(['{', '}', '*', ':']) {
        router = router.route(&suffixed, axum::routing::get(serve));
    }
    router
}

fn json(document: &str) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        document.to_owned(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_resource_splits_into_origin_and_path() {
        assert_eq!(split("https://h:1/mcp"), ("https://h:1", "/mcp"));
        assert_eq!(split("https://h/"), ("https://h", ""));
        assert_eq!(split("https://h"), ("https://h", ""));
        assert_eq!(split("https://h/a/mcp?x=1"), ("https://h", "/a/mcp"));
    }
}
