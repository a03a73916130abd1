//! Who may reach the web console, and who may approve on it: every route
//! behind one `Origin`/`Host` gate, the person's sign-in, the websocket,
//! and the MCP endpoint beside the page, which can ask but never approve
//! (AS-CONFIRM-004: an approval never crosses to the requesting agent).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod support;

use std::net::SocketAddr;

use serde_json::{Value, json};
use support::{PATIENCE, Served, payload, serve_console};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `request` as is and returns the response head (status line and
/// headers), or what arrived before the server closed.
async fn raw(address: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 4096];
    let _ = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.extend_from_slice(&buffer[..n]);
                    if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    String::from_utf8_lossy(&seen).into_owned()
}

/// A GET with these extra header lines.
fn get(path: &str, host: &str, extra: &[String]) -> String {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n");
    for line in extra {
        request.push_str(line);
        request.push_str("\r\n");
    }
    request.push_str("Connection: close\r\n\r\n");
    request
}

/// The header lines of a websocket upgrade.
fn upgrade() -> Vec<String> {
    vec![
        "Upgrade: websocket".to_owned(),
        "Connection: Upgrade".to_owned(),
        "Sec-WebSocket-Version: 13".to_owned(),
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==".to_owned(),
    ]
}

fn status(head: &str) -> &str {
    head.lines().next().unwrap_or("")
}

fn console(served: &Served) -> &devices::web::WebConsole {
    served.console.as_ref().unwrap()
}

/// A signed-in browser: its cookie line and its socket key.
struct Browser {
    cookie: String,
    socket: String,
}

/// Signs a browser in with the current one-time link.
async fn sign_in(served: &Served) -> Browser {
    let address = served.address();
    let url = console(served).login_url();
    let path = url.get(url.find("/login").unwrap()..).unwrap().to_owned();
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(get(&path, &address.to_string(), &[]).as_bytes())
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(PATIENCE, stream.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(status(&answer).starts_with("HTTP/1.1 200"), "{answer}");
    for (name, value) in [
        ("content-security-policy", "frame-ancestors 'none'"),
        ("x-frame-options", "DENY"),
        ("cache-control", "no-store"),
    ] {
        assert!(
            answer
                .lines()
                .any(|line| line == format!("{name}: {value}")),
            "{name}: {answer}"
        );
    }
    let cookie = answer
        .lines()
        .find_map(|line| line.strip_prefix("set-cookie: "))
        .unwrap_or_else(|| panic!("no cookie: {answer}"));
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    let value = cookie.split(';').next().unwrap();
    let socket = answer
        .split_once(r#"localStorage.setItem("devices_console_socket", ""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(key, _)| key.to_owned())
        .unwrap_or_else(|| panic!("no socket key: {answer}"));
    Browser {
        cookie: format!("Cookie: {value}"),
        socket,
    }
}

/// The agent asks for `domain:devices.disable` of d2 over the stateless
/// path, declaring elicitation support: what it was answered.
async fn agent_asks(served: &Served) -> Value {
    served
        .modern_call(
            json!(1),
            "view_devices__table__selectRows",
            json!({"ids": ["d2"]}),
            &[],
        )
        .await;
    let reply = served
        .modern(
            json!(2),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}),
            &[],
        )
        .await;
    reply
        .response(&json!(2))
        .cloned()
        .unwrap_or_else(|| panic!("no answer: {} {}", reply.status, reply.body))
}

#[tokio::test]
async fn foreign_null_and_lookalike_origins_and_rebinding_hosts_are_refused_on_every_route() {
    let served = serve_console(|b| b).await;
    let address = served.address();
    let port = address.port();
    let browser = sign_in(&served).await;
    let cookie = browser.cookie.clone();
    let here = format!("127.0.0.1:{port}");
    let ws = format!("/ws?route=/devices&socket={}", browser.socket);
    let routes = [
        "/",
        "/devices",
        "/settings",
        "/login?token=x",
        ws.as_str(),
        "/mcp",
    ];
    let origins = [
        format!("http://evil.example:{port}"),
        "null".to_owned(),
        format!("http://127.0.0.1.evil.example:{port}"),
        format!("http://localhost.evil.example:{port}"),
        "https://evil.example".to_owned(),
    ];
    for route in routes {
        for origin in &origins {
            let mut extra = upgrade();
            extra.push(format!("Origin: {origin}"));
            extra.push(cookie.clone());
            let head = raw(address, &get(route, &here, &extra)).await;
            assert!(
                status(&head).starts_with("HTTP/1.1 403"),
                "{route} from {origin}: {head}"
            );
        }
        // DNS rebinding: a foreign name resolved to this machine.
        for host in [
            format!("evil.example:{port}"),
            format!("127.0.0.1.evil.example:{port}"),
        ] {
            let mut extra = upgrade();
            extra.push(format!("Origin: http://{host}"));
            extra.push(cookie.clone());
            let head = raw(address, &get(route, &host, &extra)).await;
            assert!(
                status(&head).starts_with("HTTP/1.1 403"),
                "{route} for Host {host}: {head}"
            );
            let head = raw(address, &get(route, &host, std::slice::from_ref(&cookie))).await;
            assert!(
                status(&head).starts_with("HTTP/1.1 403"),
                "{route} for Host {host} without Origin: {head}"
            );
        }
    }
    // Another loopback origin — another port, or the other loopback name —
    // passes the gate but never opens the console's websocket, even with
    // the browser's cookie and socket key (a server on another port the
    // person visits receives the cookie; the key it cannot read).
    for origin in [
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        format!("http://localhost:{port}"),
    ] {
        let mut extra = upgrade();
        extra.push(format!("Origin: {origin}"));
        extra.push(cookie.clone());
        let head = raw(address, &get(&ws, &here, &extra)).await;
        assert!(
            status(&head).starts_with("HTTP/1.1 401"),
            "{origin}: {head}"
        );
    }
    // The person's own origin passes.
    let extra = [format!("Origin: http://{here}"), cookie.clone()];
    let head = raw(address, &get("/devices", &here, &extra)).await;
    assert!(status(&head).starts_with("HTTP/1.1 200"), "{head}");
    let mut extra = upgrade();
    extra.push(format!("Origin: http://{here}"));
    extra.push(cookie);
    let head = raw(address, &get(&ws, &here, &extra)).await;
    assert!(status(&head).starts_with("HTTP/1.1 101"), "{head}");
}

#[tokio::test]
async fn pages_and_the_websocket_need_the_persons_session() {
    let served = serve_console(|b| b).await;
    let address = served.address();
    let here = address.to_string();
    let origin = format!("Origin: http://{here}");

    // No cookie, a made-up cookie, the sign-in token as a cookie, an MCP
    // session header: no page, no websocket.
    let cookie_name = format!("devices_console_{}", address.port());
    let token = console(&served)
        .login_url()
        .rsplit_once('=')
        .unwrap()
        .1
        .to_owned();
    let mcp_session = served.open_session().await;
    let strangers = [
        vec![],
        vec![format!("Cookie: {cookie_name}=0123abcd")],
        vec![format!("Cookie: {cookie_name}={token}")],
        vec![format!("Mcp-Session-Id: {mcp_session}")],
    ];
    for stranger in &strangers {
        for route in ["/devices", "/settings"] {
            let head = raw(address, &get(route, &here, stranger)).await;
            assert!(status(&head).starts_with("HTTP/1.1 401"), "{route}: {head}");
        }
        let mut extra = upgrade();
        extra.push(origin.clone());
        extra.extend(stranger.iter().cloned());
        let head = raw(address, &get("/ws?route=/devices&socket=x", &here, &extra)).await;
        assert!(status(&head).starts_with("HTTP/1.1 401"), "ws: {head}");
    }

    // The one-time link signs one browser in, once.
    let first = console(&served).login_url();
    let browser = sign_in(&served).await;
    let path = first
        .get(first.find("/login").unwrap()..)
        .unwrap()
        .to_owned();
    let again = raw(address, &get(&path, &here, &[])).await;
    assert!(status(&again).starts_with("HTTP/1.1 403"), "{again}");
    assert_ne!(console(&served).login_url(), first, "the next link is new");

    // A look-alike cookie planted beside the real one hides nothing.
    let planted = format!("{}; {cookie_name}=planted", browser.cookie);
    let head = raw(address, &get("/devices", &here, &[planted])).await;
    assert!(status(&head).starts_with("HTTP/1.1 200"), "{head}");
    let head = raw(
        address,
        &get("/devices", &here, std::slice::from_ref(&browser.cookie)),
    )
    .await;
    assert!(status(&head).starts_with("HTTP/1.1 200"), "{head}");
    let ws = format!("/ws?route=/devices&socket={}", browser.socket);
    let mut extra = upgrade();
    extra.push(origin.clone());
    extra.push(browser.cookie.clone());
    let head = raw(address, &get(&ws, &here, &extra)).await;
    assert!(status(&head).starts_with("HTTP/1.1 101"), "{head}");
    // The cookie alone opens no websocket: the key is needed too.
    let mut extra = upgrade();
    extra.push(origin);
    extra.push(browser.cookie.clone());
    let head = raw(address, &get("/ws?route=/devices", &here, &extra)).await;
    assert!(status(&head).starts_with("HTTP/1.1 401"), "{head}");
    // A websocket client that is not a browser page (no Origin) is refused
    // even with both.
    let mut extra = upgrade();
    extra.push(browser.cookie);
    let head = raw(address, &get(&ws, &here, &extra)).await;
    assert!(status(&head).starts_with("HTTP/1.1 401"), "{head}");
}

#[tokio::test]
async fn as_confirm_004_the_mcp_client_beside_the_console_can_ask_but_never_approve() {
    let served = serve_console(|b| b).await;
    let confirmations = served.app.registry().confirmations();

    // Elicitation is off beside the dialog: the agent is told to wait for
    // the person, and is not asked to answer itself.
    let asked = agent_asks(&served).await;
    let error = payload(&asked);
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED", "{asked}");
    assert!(asked["result"]["inputRequests"].is_null(), "{asked}");
    let id = error["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(confirmations.pending().len(), 1);

    // Answering a request that was never put to it: refused, nothing runs.
    let forged = served
        .modern(
            json!(3),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "requestState": id,
                   "inputResponses": {"agentSurface/confirm": {"action": "accept", "content": {"approve": true}}}}),
            &[],
        )
        .await;
    let forged = forged.response(&json!(3)).cloned().unwrap();
    assert!(forged.get("error").is_some(), "{forged}");
    // Presenting the id as evidence before the person answered: still
    // waiting for the person.
    let early = served
        .modern(
            json!(4),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "_meta": {"agentSurface/confirmationId": id}}),
            &[],
        )
        .await;
    let early = early.response(&json!(4)).cloned().unwrap();
    assert_eq!(payload(&early)["code"], "CONFIRMATION_REQUIRED", "{early}");
    assert_eq!(
        confirmations.pending().len(),
        1,
        "still the person's to answer"
    );
    assert!(
        served.app.server().received().is_empty(),
        "nothing reached the backend"
    );

    // The person answers through the console's channel, with the code the
    // terminal shows (a click alone is refused); the agent's retry runs.
    let person = confirmations
        .approver(devices::web::CONSOLE_CHANNEL, "admin")
        .unwrap();
    let pending = confirmations.find(&id).unwrap();
    assert_eq!(
        confirmations.resolve(&pending.shown(), true, &person),
        Err(agent_surface::confirmation::ResolveError::PresenceRequired)
    );
    let code = served
        .approvals
        .as_ref()
        .unwrap()
        .code_for(&pending.presence_challenge());
    confirmations
        .approve_with_presence(
            &pending.shown(),
            &person,
            &json!({"method": "out-of-band", "code": code}),
        )
        .unwrap();
    let done = served
        .modern(
            json!(5),
            "tools/call",
            json!({"name": "domain_devices__disable", "arguments": {},
                   "_meta": {"agentSurface/confirmationId": id}}),
            &[],
        )
        .await;
    let done = done.response(&json!(5)).cloned().unwrap();
    assert_eq!(payload(&done), &json!({"disabled": 1}), "{done}");
    let resolution = confirmations.resolution(&id).unwrap();
    assert_eq!(resolution.channel.as_deref(), Some("console"));
    assert_eq!(resolution.approver.as_deref(), Some("admin"));
}

#[tokio::test]
async fn as_confirm_004_a_client_declared_human_facing_is_not_asked_what_only_the_person_may_approve()
 {
    // The host opted in to the client's elicitation, but disabling devices
    // needs proof of presence: the client is not asked, and its answer
    // would approve nothing.
    let served = serve_console(|b| b.elicitation(true)).await;
    let asked = agent_asks(&served).await;
    assert!(asked["result"]["inputRequests"].is_null(), "{asked}");
    let error = payload(&asked);
    assert_eq!(error["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let id = error["details"]["confirmationId"].as_str().unwrap();
    let connection = served.app.registry().confirmations();
    let consumer = agent_surface::context::Consumer::new(
        agent_surface::context::ConsumerKind::Mcp,
        "anything",
    );
    assert!(!agent_surface::adapter::answer_on_connection(
        served.app.registry(),
        "mcp-elicitation",
        &consumer,
        "client",
        id,
        true,
    ));
    assert_eq!(
        connection.pending().len(),
        1,
        "still the person's to answer"
    );
    assert!(
        served.app.server().received().is_empty(),
        "nothing reached the backend"
    );
}

#[tokio::test]
async fn as_confirm_004_a_client_without_url_mode_gets_the_approval_page_which_opens_only_for_the_person()
 {
    let served = serve_console(|b| b).await;
    let address = served.address();
    let here = address.to_string();
    // A client without URL-mode elicitation finds the page in the details,
    // to show its person.
    let asked = agent_asks(&served).await;
    let error = payload(&asked);
    let link = error["details"]["approvalUrl"].as_str().unwrap().to_owned();
    let prefix = format!("http://localhost:{}/approve?request=", address.port());
    assert!(link.starts_with(&prefix), "{link}");
    let token = link.strip_prefix(&prefix).unwrap();
    assert_eq!(token.len(), 64, "256 random bits");
    assert!(error["message"].as_str().unwrap().contains("approvalUrl"));
    // The same request gets the same link; it names no confirmation id.
    assert!(!link.contains("cnf_"));
    let path = format!("/approve?request={token}");

    // The link alone opens nothing: not signed in, it asks to sign in.
    let page = |cookie: Option<String>| {
        let link = link.clone();
        async move {
            let mut request = reqwest::Client::new().get(&link);
            if let Some((name, value)) = cookie.as_deref().and_then(|c| c.split_once(": ")) {
                request = request.header(name, value);
            }
            let answer = request.send().await.unwrap();
            (answer.status().as_u16(), answer.text().await.unwrap())
        }
    };
    let (code, body) = page(None).await;
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("Sign in first"), "{body}");
    // Signed in, it opens the page shell; a malformed token does not.
    let browser = sign_in(&served).await;
    let (code, body) = page(Some(browser.cookie.clone())).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("route=/approve&request="), "{body}");
    let head = raw(
        address,
        &get(&path, &here, std::slice::from_ref(&browser.cookie)),
    )
    .await;
    assert!(status(&head).starts_with("HTTP/1.1 200"), "{head}");
    for bad in [
        "x",
        "..%2Fdevices",
        &"A".repeat(64),
        "0123%22%2Balert(1)%2B%22",
    ] {
        let head = raw(
            address,
            &get(
                &format!("/approve?request={bad}"),
                &here,
                std::slice::from_ref(&browser.cookie),
            ),
        )
        .await;
        assert!(status(&head).starts_with("HTTP/1.1 404"), "{bad}: {head}");
    }
    assert_eq!(
        served.app.registry().confirmations().pending().len(),
        1,
        "opening pages answers nothing"
    );
}
