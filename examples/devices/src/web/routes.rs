//! The console's own HTTP routes: the sign-in, the page shell and its
//! websocket, each refusing what is not the signed-in person in the
//! console's own origin (see `login`). `/mcp` is served beside them by the
//! MCP server, behind the same gate and accept loop.
//!
//! Every page says it may not be framed (`frame-ancestors 'none'`,
//! `X-Frame-Options: DENY`), is never cached, and sends its address to no
//! other origin (`Referrer-Policy: same-origin`).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use dioxus::dioxus_core::VirtualDom;
use dioxus_liveview::{axum_socket, interpreter_glue};
use serde::Deserialize;
use tokio_util::task::LocalPoolHandle;

use super::approval_page::{ApprovalToken, approval_root, well_formed};
use super::login::{Login, SOCKET_KEY};
use super::{OpenedOn, SessionEnd, Shared, TabId, views};
use crate::components::Route;

const SIGN_IN_TO_APPROVE: &str = "An agent asked you to approve something on the devices \
    console. Sign in first with the link the console printed in its terminal, then open this \
    approval link again in the same browser.";

const SIGN_IN_FIRST: &str = "Open the sign-in link the console printed in its terminal. \
    This page only opens in a browser that signed in with it.";

/// The line of the LiveView glue that names the websocket address; the
/// socket key is appended to it. Checked at start: a glue without it would
/// leave the page unable to connect, so the console refuses to start.
const WS_ADDR_LINE: &str = "var WS_ADDR = __dioxusGetWsUrl(";

#[derive(Deserialize)]
struct SignIn {
    token: Option<String>,
}

#[derive(Deserialize)]
struct Opened {
    route: Option<String>,
    socket: Option<String>,
    /// An approval page's token (`route=/approve`).
    request: Option<String>,
}

#[derive(Deserialize)]
struct ApprovalLink {
    request: Option<String>,
}

/// The headers every console page carries.
fn guarded(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, "frame-ancestors 'none'"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
        // Its address (a sign-in or approval link holds a secret) goes to
        // no other origin; the console's own forms still say their origin
        // (under `no-referrer` a form's `Origin` is `null`).
        (header::REFERRER_POLICY, "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// A small page for a browser that is not signed in.
fn refused(status: StatusCode, text: &str) -> Response {
    let body = format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Devices console</title>
<style>{style}</style></head>
<body><main class="signin"><h1>Devices console</h1><p>{text}</p></main></body></html>"#,
        style = include_str!("style.css"),
    );
    guarded((status, Html(body)).into_response())
}

/// The LiveView glue for `path`, its websocket address carrying the socket
/// key from `localStorage`; `None` if the glue no longer has the line.
fn glue(path: &str) -> Option<String> {
    let glue = interpreter_glue(&format!("/ws?route={path}"));
    let at = glue.find(WS_ADDR_LINE)?;
    let end = at + glue.get(at..)?.find(';')?;
    let mut patched = String::with_capacity(glue.len() + 120);
    patched.push_str(glue.get(..end)?);
    patched.push_str(&format!(
        r#" + "&socket=" + encodeURIComponent(localStorage.getItem("{SOCKET_KEY}") || "")"#
    ));
    patched.push_str(glue.get(end..)?);
    Some(patched)
}

/// The page shell of `path`: no data, only the glue that opens the
/// websocket.
fn page(glue: &str) -> Response {
    guarded(
        Html(format!(
            r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Devices console</title>
<style>{style}</style>
</head>
<body><div id="main"></div>{glue}<script>{modal}</script></body>
</html>"#,
            style = include_str!("style.css"),
            modal = include_str!("modal.js"),
        ))
        .into_response(),
    )
}

/// What a sign-in answers: the page cookie, `Clear-Site-Data` for what an
/// earlier server on the origin left, and a page that keeps the socket key
/// in the origin's `localStorage` and goes to the console (a navigation of
/// the console's own, so the strict cookie goes with it).
fn signed_in(login: &Login, cookie: &str, socket: &str) -> Response {
    let body = format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Devices console</title></head>
<body><p>Signing in…</p><script>
localStorage.setItem("{SOCKET_KEY}", "{socket}");
location.replace("/devices");
</script></body></html>"#
    );
    let mut response = guarded(Html(body).into_response());
    if let Ok(value) = HeaderValue::from_str(&login.set_cookie(cookie)) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    // Whatever an earlier server on this origin left (a cached page, a
    // service worker, storage) goes before the console's key is kept.
    response.headers_mut().insert(
        header::HeaderName::from_static("clear-site-data"),
        HeaderValue::from_static("\"cache\", \"storage\""),
    );
    response
}

/// What signing out answers: the cookie forgotten, the socket key removed
/// from the origin's storage, and a page saying how to sign in again.
fn signed_out(login: &Login) -> Response {
    let body = format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Devices console</title>
<style>{style}</style></head>
<body><main class="signin"><h1>Devices console</h1>
<p id="signed-out">You signed out. Pages of this browser stopped; agents' requests wait for another signed-in browser, or expire.</p>
<p>To sign in again, open the newest sign-in link the console printed in its terminal.</p></main>
<script>localStorage.removeItem("{SOCKET_KEY}");</script></body></html>"#,
        style = include_str!("style.css"),
    );
    let mut response = guarded(Html(body).into_response());
    if let Ok(value) = HeaderValue::from_str(&login.clear_cookie()) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// Whether `Origin` is exactly the console's own (`http://` + `Host`): a
/// page of any other origin — another loopback port included — is not.
fn same_origin(headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
    let mut origins = headers.get_all(header::ORIGIN).iter();
    let single = origins.next().is_some() && origins.next().is_none();
    match (host, origin) {
        (Some(host), Some(origin)) => {
            single
                && origin
                    .strip_prefix("http://")
                    .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
        }
        _ => false,
    }
}

/// Runs one page over `socket` until it closes or its session ends: the
/// `VirtualDom` `make` builds (given the shared state; the session's end
/// is added) runs pinned to one of `pool`'s threads, in a task that also
/// watches the session, so when the session ends (signed out, evicted by
/// newer sign-ins) the `VirtualDom` and the socket are dropped inside that
/// task and nothing the socket sends after reaches a handler. (Dropping a
/// handle to a page task would leave it running.)
async fn run_page(
    pool: &LocalPoolHandle,
    socket: axum::extract::ws::WebSocket,
    session: SessionEnd,
    make: impl FnOnce(Shared) -> VirtualDom + Send + 'static,
    shared: Shared,
) {
    let page = pool.spawn_pinned(move || async move {
        let ended = session.0.clone();
        let dom = make(shared).with_root_context(session);
        tokio::select! {
            // The session's end first: a message already waiting never
            // wins the race against it.
            biased;
            () = ended.cancelled() => {}
            _ = dioxus_liveview::run(dom, axum_socket(socket)) => {}
        }
    });
    let _ = page.await;
}

/// The console's routes for `shared`, with `login` guarding them.
pub(super) fn router(shared: Shared, login: Arc<Login>) -> Result<Router, std::io::Error> {
    let missing = || std::io::Error::other("the LiveView glue has no websocket address line");
    let devices_glue: Arc<str> = Arc::from(glue("/devices").ok_or_else(missing)?);
    let settings_glue: Arc<str> = Arc::from(glue("/settings").ok_or_else(missing)?);
    // LiveView's pool installs the converter of the page's events (its only
    // public way to); the pages run on the pool below instead.
    drop(dioxus_liveview::LiveViewPool::new());
    // Each tab's page runs pinned to one of these threads (its `VirtualDom`
    // is not `Send`), inside a task that also watches its session's end.
    let pool = LocalPoolHandle::new(
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1),
    );
    let page_route = |glue: Arc<str>, login: Arc<Login>| {
        get(move |headers: HeaderMap| async move {
            if login.page_allowed(&headers) {
                page(&glue)
            } else {
                refused(StatusCode::UNAUTHORIZED, SIGN_IN_FIRST)
            }
        })
    };
    let sign_in = Arc::clone(&login);
    let ws_login = Arc::clone(&login);
    let approve_login = Arc::clone(&login);
    let out_login = Arc::clone(&login);
    Ok(
        Router::new()
            .route("/", get(|| async { Redirect::to("/devices") }))
            .route(
                "/login",
                get(move |Query(form): Query<SignIn>| async move {
                    match form.token.as_deref().and_then(|t| sign_in.sign_in(t)) {
                        Some(session) => signed_in(&sign_in, &session.cookie, &session.socket),
                        None => refused(
                            StatusCode::FORBIDDEN,
                            "This sign-in link was already used or is not valid. Use the newest \
                         link the console printed in its terminal.",
                        ),
                    }
                }),
            )
            .route(
                "/logout",
                // A form of the console's own page (same origin, the page
                // cookie): the session ends and its open pages stop at once.
                post(move |headers: HeaderMap| async move {
                    if !same_origin(&headers) {
                        return refused(StatusCode::FORBIDDEN, SIGN_IN_FIRST);
                    }
                    out_login.sign_out(&headers);
                    signed_out(&out_login)
                }),
            )
            .route("/devices", page_route(devices_glue, Arc::clone(&login)))
            .route("/settings", page_route(settings_glue, Arc::clone(&login)))
            .route(
                "/approve",
                get(
                    move |headers: HeaderMap, Query(link): Query<ApprovalLink>| async move {
                        // The link alone grants nothing: only a signed-in browser
                        // opens the page, and only a well-formed token reaches it.
                        if !approve_login.page_allowed(&headers) {
                            return refused(StatusCode::UNAUTHORIZED, SIGN_IN_TO_APPROVE);
                        }
                        let token = link.request.unwrap_or_default();
                        if !well_formed(&token) {
                            return refused(
                                StatusCode::NOT_FOUND,
                                "This approval link is not valid.",
                            );
                        }
                        match glue(&format!("/approve&request={token}")) {
                            Some(glue) => page(&glue),
                            None => {
                                refused(StatusCode::INTERNAL_SERVER_ERROR, "The page cannot load.")
                            }
                        }
                    },
                ),
            )
            .route(
                "/ws",
                get(
                    move |headers: HeaderMap,
                          ws: WebSocketUpgrade,
                          Query(opened): Query<Opened>| async move {
                        // Only the console's own origin, with the signed-in
                        // browser's cookie and the key only that origin can read.
                        let ended = same_origin(&headers)
                            .then(|| {
                                ws_login.socket_allowed(
                                    &headers,
                                    opened.socket.as_deref().unwrap_or(""),
                                )
                            })
                            .flatten();
                        let Some(ended) = ended else {
                            return refused(StatusCode::UNAUTHORIZED, SIGN_IN_FIRST);
                        };
                        let approval = match (opened.route.as_deref(), opened.request) {
                            (Some("/approve"), Some(token)) if well_formed(&token) => {
                                Some(ApprovalToken(token))
                            }
                            (Some("/approve"), _) => {
                                return refused(StatusCode::NOT_FOUND, "Not an approval link.");
                            }
                            _ => None,
                        };
                        let route = match opened.route.as_deref() {
                            Some("/settings") => Some(Route::Settings),
                            Some("/devices") => Some(Route::Devices),
                            _ => None,
                        };
                        let shared = shared.clone();
                        let pool = pool.clone();
                        // Page messages stay small: the in-page agent's
                        // arguments over twice the input limit never leave
                        // the page (the WebMCP glue sends the call alone).
                        let max_message = shared
                            .app
                            .registry()
                            .limits()
                            .max_input_bytes
                            .saturating_mul(4)
                            .saturating_add(64 * 1024);
                        ws.max_message_size(max_message)
                            .max_frame_size(max_message)
                            .on_upgrade(move |socket| async move {
                                let session = SessionEnd(ended);
                                if let Some(token) = approval {
                                    // An approval page: no tab of the console,
                                    // nothing mounted; it ends with its session.
                                    run_page(
                                        &pool,
                                        socket,
                                        session,
                                        move |dom| {
                                            VirtualDom::new(approval_root)
                                                .with_root_context(dom.app.registry().clone())
                                                .with_root_context(dom)
                                                .with_root_context(token)
                                        },
                                        shared,
                                    )
                                    .await;
                                    return;
                                }
                                let tabs = Arc::clone(&shared.tabs);
                                let id = tabs.open();
                                run_page(
                                    &pool,
                                    socket,
                                    session,
                                    move |dom| {
                                        VirtualDom::new(views::root)
                                            .with_root_context(dom.app.registry().clone())
                                            .with_root_context(dom)
                                            .with_root_context(TabId(id))
                                            .with_root_context(OpenedOn(route))
                                    },
                                    shared,
                                )
                                .await;
                                tabs.close(id);
                            })
                            .into_response()
                    },
                ),
            ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_glue_carries_the_socket_key() {
        let glue = glue("/devices").unwrap();
        assert!(glue.contains(r#"+ "&socket=" + encodeURIComponent(localStorage.getItem("#));
    }

    #[test]
    fn only_the_consoles_own_origin_is_the_same_origin() {
        let headers = |origin: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
            headers.insert(header::ORIGIN, origin.parse().unwrap());
            headers
        };
        assert!(same_origin(&headers("http://127.0.0.1:8080")));
        for other in [
            "http://127.0.0.1:8081",
            "http://localhost:8080",
            "https://127.0.0.1:8080",
            "null",
            "http://127.0.0.1:8080.evil.example",
        ] {
            assert!(!same_origin(&headers(other)), "{other}");
        }
    }
}
