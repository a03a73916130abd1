//! Plain-text HTTP responses: the refusals the HTTP gate and the origin
//! check send before a request reaches the MCP session layer.

use axum::body::Body;
use axum::response::Response;
use http::{StatusCode, header};

/// A `text/plain` response with `status` and a fixed body.
pub(super) fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `413`: the request body is over the limit.
pub(super) fn too_large() -> Response {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        "Payload Too Large: the request body is over the limit",
    )
}

/// `408`, closing the connection: the body did not arrive in time.
pub(super) fn too_slow() -> Response {
    let mut response = plain(
        StatusCode::REQUEST_TIMEOUT,
        "Request Timeout: the body did not arrive in time",
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}
