//! The MCP HTTP endpoint as an OAuth 2.1 protected resource, over raw HTTP
//! (reqwest): identity comes from the bearer token, per credential; no
//! credential or a bad one is `401` with the RFC 9728 challenge, a missing
//! scope `403 insufficient_scope`; sessions are bound to the credential
//! that opened them; no refusal says whether a tool exists; the metadata
//! document is served.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

mod support;

use agent_surface::mcp::auth::{JwtAuthenticator, JwtKey, ResourceServer, StaticTokens};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::raw_mcp::{LEGACY, Reply, tool_names};
use support::{Served, payload, serve};

const RESOURCE: &str = "https://devices.test/mcp";
const METADATA: &str = "https://devices.test/.well-known/oauth-protected-resource/mcp";
const ISSUER: &str = "https://auth.devices.test";
const SECRET: &[u8] = b"the devices test secret, 32 bytes or more";

const ADMIN: &str = "admin-token-1b9d";
const VIEWER: &str = "viewer-token-77c2";
const NO_SCOPE: &str = "reader-without-mcp-scope";

const DISABLE: &str = "domain_devices__disable";
const SELECT: &str = "view_devices__table__selectRows";

fn tokens() -> StaticTokens {
    StaticTokens::from_json(
        &json!({"tokens": [
            {"token": ADMIN, "subject": "admin", "scopes": ["mcp", "devices:read", "devices:write"]},
            {"token": VIEWER, "subject": "viewer", "scopes": ["mcp", "devices:read"]},
            {"token": NO_SCOPE, "subject": "reader", "scopes": ["devices:read"]},
        ]})
        .to_string(),
    )
    .unwrap()
}

async fn serve_tokens() -> Served {
    serve(|b| {
        b.auth(
            ResourceServer::new(RESOURCE, tokens())
                .authorization_servers([ISSUER])
                .scopes_supported(["mcp", "devices:read", "devices:write"])
                .required_scopes(["mcp"]),
        )
    })
    .await
}

async fn serve_jwt(key: JwtKey) -> Served {
    serve(|b| {
        b.auth(
            ResourceServer::new(RESOURCE, JwtAuthenticator::new(ISSUER, RESOURCE, key))
                .authorization_servers([ISSUER])
                .required_scopes(["mcp"]),
        )
    })
    .await
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Opens a handshake-era session as `token`'s identity.
async fn open(served: &Served, token: &str) -> String {
    let auth = bearer(token);
    let reply = served.initialize_with(&[("authorization", &auth)]).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let session = reply.session().expect("a session id");
    let done = served
        .post_json(
            &[
                ("authorization", &auth),
                ("mcp-session-id", &session),
                ("mcp-protocol-version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    assert_eq!(done.status, StatusCode::ACCEPTED, "{}", done.body);
    session
}

/// A request on `session` as `token`.
async fn on_session(
    served: &Served,
    token: &str,
    session: &str,
    method: &str,
    params: Value,
) -> Reply {
    let auth = bearer(token);
    served
        .post_json(
            &[
                ("authorization", &auth),
                ("mcp-session-id", session),
                ("mcp-protocol-version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        )
        .await
}

async fn session_tools(served: &Served, token: &str, session: &str) -> Vec<String> {
    let reply = on_session(served, token, session, "tools/list", json!({})).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    tool_names(reply.response(&json!(1)).unwrap())
}

async fn stateless_tools(served: &Served, token: &str) -> Vec<String> {
    let auth = bearer(token);
    let reply = served
        .modern(
            json!(1),
            "tools/list",
            json!({}),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    tool_names(reply.response(&json!(1)).unwrap())
}

/// Asserts `reply` is the `401` challenge, naming `invalid_token` when a
/// token was presented.
fn assert_challenged(reply: &Reply, presented: bool, what: &str) {
    assert_eq!(
        reply.status,
        StatusCode::UNAUTHORIZED,
        "{what}: {}",
        reply.body
    );
    let challenge = reply.headers["www-authenticate"].to_str().unwrap();
    assert!(challenge.starts_with("Bearer "), "{what}: {challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{METADATA}\"")),
        "{what}: {challenge}"
    );
    assert_eq!(
        challenge.contains("error=\"invalid_token\""),
        presented,
        "{what}: {challenge}"
    );
    assert!(
        reply.messages.is_empty(),
        "{what}: no JSON-RPC in {}",
        reply.body
    );
}

#[tokio::test]
async fn auth_admin_and_viewer_tokens_on_one_server_see_different_tools() {
    let served = serve_tokens().await;
    let admin = open(&served, ADMIN).await;
    let viewer = open(&served, VIEWER).await;
    let selected = on_session(
        &served,
        ADMIN,
        &admin,
        "tools/call",
        json!({"name": SELECT, "arguments": {"ids": ["d2"]}}),
    )
    .await;
    assert_eq!(selected.status, StatusCode::OK, "{}", selected.body);

    // Handshake-era sessions, at once on one server.
    let admin_tools = session_tools(&served, ADMIN, &admin).await;
    let viewer_tools = session_tools(&served, VIEWER, &viewer).await;
    assert!(admin_tools.contains(&DISABLE.to_owned()), "{admin_tools:?}");
    assert!(
        !viewer_tools.contains(&DISABLE.to_owned()),
        "{viewer_tools:?}"
    );
    assert!(
        viewer_tools.contains(&SELECT.to_owned()),
        "{viewer_tools:?}"
    );

    // Sessionless 2026-07-28 requests.
    let admin_tools = stateless_tools(&served, ADMIN).await;
    let viewer_tools = stateless_tools(&served, VIEWER).await;
    assert!(admin_tools.contains(&DISABLE.to_owned()), "{admin_tools:?}");
    assert!(
        !viewer_tools.contains(&DISABLE.to_owned()),
        "{viewer_tools:?}"
    );

    // The viewer calling it by name: as if it did not exist.
    let auth = bearer(VIEWER);
    let hidden = served
        .modern_call(json!(5), DISABLE, json!({}), &[("authorization", &auth)])
        .await;
    let missing = served
        .modern_call(
            json!(5),
            "domain_devices__nosuch",
            json!({}),
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(
        hidden["error"]["code"], missing["error"]["code"],
        "{hidden} vs {missing}"
    );
    assert!(served.app.server().received().is_empty());
}

#[tokio::test]
async fn auth_missing_unknown_and_malformed_credentials_get_401_with_the_metadata() {
    let served = serve_tokens().await;
    let reply = served.initialize_with(&[]).await;
    assert_challenged(&reply, false, "no credential");
    for (what, value) in [
        ("an unknown token", "Bearer not-a-token".to_owned()),
        ("another scheme", format!("Basic {ADMIN}")),
        ("an empty token", "Bearer ".to_owned()),
        ("a token with spaces", format!("Bearer {ADMIN} x")),
    ] {
        let reply = served.initialize_with(&[("authorization", &value)]).await;
        assert_challenged(&reply, true, what);
    }
    // Every verb, both generations.
    let stateless = served.modern(json!(1), "tools/list", json!({}), &[]).await;
    assert_challenged(&stateless, false, "a stateless request");
    let get = served
        .client
        .get(&served.url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), StatusCode::UNAUTHORIZED);
    let delete = served
        .client
        .delete(&served.url)
        .header("mcp-session-id", "anything")
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn auth_a_token_without_the_required_scope_gets_403_insufficient_scope() {
    let served = serve_tokens().await;
    let auth = bearer(NO_SCOPE);
    for reply in [
        served.initialize_with(&[("authorization", &auth)]).await,
        served
            .modern(
                json!(1),
                "tools/list",
                json!({}),
                &[("authorization", &auth)],
            )
            .await,
    ] {
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
        let challenge = reply.headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.contains("error=\"insufficient_scope\""),
            "{challenge}"
        );
        assert!(challenge.contains("scope=\"mcp\""), "{challenge}");
        assert!(
            challenge.contains(&format!("resource_metadata=\"{METADATA}\"")),
            "{challenge}"
        );
    }
}

#[tokio::test]
async fn auth_a_session_id_presented_with_another_token_is_refused() {
    let served = serve_tokens().await;
    let admin = open(&served, ADMIN).await;
    let stolen = on_session(&served, VIEWER, &admin, "tools/list", json!({})).await;
    assert_eq!(stolen.status, StatusCode::NOT_FOUND, "{}", stolen.body);
    // The very bytes of a session that never was: nothing tells them apart.
    let unknown = on_session(&served, VIEWER, "never-issued", "tools/list", json!({})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "{}", unknown.body);
    assert_eq!(stolen.body, unknown.body);
    assert_eq!(
        stolen.messages[0]["error"]["code"], -32001,
        "{}",
        stolen.body
    );
    // As a stateless request too.
    let auth = bearer(VIEWER);
    let stolen = served
        .modern(
            json!(1),
            "tools/list",
            json!({}),
            &[("authorization", &auth), ("mcp-session-id", &admin)],
        )
        .await;
    assert_eq!(stolen.status, StatusCode::NOT_FOUND, "{}", stolen.body);
    let unauthenticated = served
        .request(&admin, json!(1), "tools/list", json!({}))
        .await;
    assert_challenged(&unauthenticated, false, "the session without a token");
    // Nobody else may end it either; its owner still uses it.
    let ended = served
        .client
        .delete(&served.url)
        .header("authorization", bearer(VIEWER))
        .header("mcp-session-id", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), StatusCode::NOT_FOUND);
    assert!(!session_tools(&served, ADMIN, &admin).await.is_empty());
}

#[tokio::test]
async fn auth_confirmations_and_dedupe_are_per_identity_and_a_token_is_no_approver() {
    let served = serve_tokens().await;
    let confirmations = served.app.registry().confirmations();
    let auth = bearer(ADMIN);
    let headers = [("authorization", auth.as_str())];
    served
        .modern_call(json!(1), SELECT, json!({"ids": ["d2"]}), &headers)
        .await;
    let first = served
        .modern_call(json!(2), DISABLE, json!({}), &headers)
        .await;
    let again = served
        .modern_call(json!(3), DISABLE, json!({}), &headers)
        .await;
    assert_eq!(payload(&first)["code"], "CONFIRMATION_REQUIRED", "{first}");
    let id = payload(&first)["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        payload(&again)["details"]["confirmationId"],
        json!(id),
        "the identity spans requests"
    );
    let pending = confirmations.pending();
    assert_eq!(pending.len(), 1);
    assert!(
        pending[0].consumer_key.starts_with("mcp:auth-admin-"),
        "{}",
        pending[0].consumer_key
    );

    // Presenting the id is no approval: the token holder is not the person.
    let presented = served
        .modern(
            json!(4),
            "tools/call",
            json!({"name": DISABLE, "arguments": {},
                   "_meta": {"agentSurface/confirmationId": id}}),
            &headers,
        )
        .await;
    let presented = presented.response(&json!(4)).unwrap();
    assert_ne!(payload(presented), &json!({"disabled": 1}), "{presented}");
    assert!(
        served.app.server().received().is_empty(),
        "nothing reached the backend"
    );
}

#[tokio::test]
async fn auth_protected_resource_metadata_is_served() {
    let served = serve_tokens().await;
    let base = format!("http://{}", served.address());
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = served
            .client
            .get(format!("{base}{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let document: Value = response.json().await.unwrap();
        assert_eq!(
            document,
            json!({
                "resource": RESOURCE,
                "authorization_servers": [ISSUER],
                "scopes_supported": ["mcp", "devices:read", "devices:write"],
                "bearer_methods_supported": ["header"],
            }),
            "{path}"
        );
    }
}

#[tokio::test]
async fn auth_refusals_never_reveal_whether_a_tool_exists() {
    let served = serve_tokens().await;
    let mut seen: Vec<(StatusCode, String, String)> = Vec::new();
    for token in [
        None,
        Some("Bearer nope"),
        Some("Bearer reader-without-mcp-scope"),
    ] {
        let mut bodies = Vec::new();
        for name in [DISABLE, SELECT, "domain_devices__nosuch"] {
            let mut headers = vec![];
            if let Some(token) = token {
                headers.push(("authorization", token));
            }
            let reply = served
                .modern(
                    json!(1),
                    "tools/call",
                    json!({"name": name, "arguments": {}}),
                    &headers,
                )
                .await;
            assert!(
                reply.status == StatusCode::UNAUTHORIZED || reply.status == StatusCode::FORBIDDEN,
                "{}",
                reply.status
            );
            assert!(!reply.body.contains("devices"), "{}", reply.body);
            let challenge = reply.headers["www-authenticate"]
                .to_str()
                .unwrap()
                .to_owned();
            bodies.push((reply.status, reply.body, challenge));
        }
        assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:?}");
        seen.extend(bodies);
    }
    assert!(served.app.server().received().is_empty());
}

/// A JWT over `claims`, signed with `key` (HS256).
fn jwt(claims: &Value, secret: &[u8], kid: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = kid.map(str::to_owned);
    encode(&header, claims, &EncodingKey::from_secret(secret).unwrap()).unwrap()
}

fn claims(sub: &str, scope: &str, aud: &str, exp_from_now: i64) -> Value {
    let now = jsonwebtoken::get_current_timestamp() as i64;
    json!({"iss": ISSUER, "sub": sub, "aud": aud, "scope": scope,
           "iat": now, "exp": now + exp_from_now})
}

#[tokio::test]
async fn auth_jwt_admin_and_viewer_see_different_tools_and_bad_tokens_get_401() {
    let served = serve_jwt(JwtKey::hmac(SECRET).unwrap()).await;
    let admin = jwt(
        &claims("ada", "mcp devices:read devices:write", RESOURCE, 600),
        SECRET,
        None,
    );
    let viewer = jwt(
        &claims("vic", "mcp devices:read", RESOURCE, 600),
        SECRET,
        None,
    );
    served
        .modern_call(
            json!(1),
            SELECT,
            json!({"ids": ["d2"]}),
            &[("authorization", &bearer(&admin))],
        )
        .await;
    assert!(
        stateless_tools(&served, &admin)
            .await
            .contains(&DISABLE.to_owned())
    );
    assert!(
        !stateless_tools(&served, &viewer)
            .await
            .contains(&DISABLE.to_owned())
    );
    let session = open(&served, &viewer).await;
    assert!(
        !session_tools(&served, &viewer, &session)
            .await
            .contains(&DISABLE.to_owned())
    );

    let mut tampered = admin.split('.').map(str::to_owned).collect::<Vec<_>>();
    let forged = claims("ada", "mcp devices:read devices:write", RESOURCE, 6000);
    tampered[1] = base64_url(forged.to_string().as_bytes());
    let tampered = tampered.join(".");
    let unsigned = format!(
        "{}.{}.",
        base64_url(br#"{"alg":"none","typ":"JWT"}"#),
        base64_url(claims("ada", "mcp", RESOURCE, 600).to_string().as_bytes())
    );
    let other_issuer = {
        let mut c = claims("ada", "mcp", RESOURCE, 600);
        c["iss"] = json!("https://elsewhere.test");
        jwt(&c, SECRET, None)
    };
    // RFC 7519 §4.1.1: `iss` is one string; a list holding the issuer is
    // not it (RFC 9068 §4: an exact match).
    let listed_issuer = {
        let mut c = claims("ada", "mcp", RESOURCE, 600);
        c["iss"] = json!([ISSUER]);
        jwt(&c, SECRET, None)
    };
    let no_subject = {
        let mut c = claims("ada", "mcp", RESOURCE, 600);
        c.as_object_mut().unwrap().remove("sub");
        jwt(&c, SECRET, None)
    };
    for (what, token) in [
        (
            "expired",
            jwt(&claims("ada", "mcp", RESOURCE, -600), SECRET, None),
        ),
        (
            "wrong audience",
            jwt(
                &claims("ada", "mcp", "https://other.test/mcp", 600),
                SECRET,
                None,
            ),
        ),
        (
            "wrong signature",
            jwt(
                &claims("ada", "mcp", RESOURCE, 600),
                b"another secret of thirty-two bytes!!",
                None,
            ),
        ),
        ("tampered", tampered),
        ("unsigned (alg none)", unsigned),
        ("wrong issuer", other_issuer),
        ("issuer in a list", listed_issuer),
        ("no subject", no_subject),
        ("not a JWT", "abc.def.ghi".to_owned()),
    ] {
        let reply = served
            .modern(
                json!(1),
                "tools/list",
                json!({}),
                &[("authorization", &bearer(&token))],
            )
            .await;
        assert_challenged(&reply, true, what);
        let reply = served
            .initialize_with(&[("authorization", &bearer(&token))])
            .await;
        assert_challenged(&reply, true, what);
    }
    let unscoped = jwt(&claims("ada", "devices:read", RESOURCE, 600), SECRET, None);
    let reply = served
        .initialize_with(&[("authorization", &bearer(&unscoped))])
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
}

#[tokio::test]
async fn auth_jwt_keys_from_a_jwks_document_are_chosen_by_kid() {
    let k = base64_url(SECRET);
    let other = base64_url(b"a second secret, thirty-two bytes long");
    let jwks = json!({"keys": [
        {"kty": "oct", "kid": "one", "alg": "HS256", "k": k},
        {"kty": "oct", "kid": "two", "alg": "HS256", "k": other},
    ]});
    let served = serve_jwt(JwtKey::jwks(jwks.to_string().as_bytes()).unwrap()).await;
    let good = jwt(
        &claims("ada", "mcp devices:read", RESOURCE, 600),
        SECRET,
        Some("one"),
    );
    assert!(!stateless_tools(&served, &good).await.is_empty());
    for (what, token) in [
        (
            "the other key's kid",
            jwt(&claims("ada", "mcp", RESOURCE, 600), SECRET, Some("two")),
        ),
        (
            "an unknown kid",
            jwt(&claims("ada", "mcp", RESOURCE, 600), SECRET, Some("three")),
        ),
        (
            "no kid",
            jwt(&claims("ada", "mcp", RESOURCE, 600), SECRET, None),
        ),
    ] {
        let reply = served
            .modern(
                json!(1),
                "tools/list",
                json!({}),
                &[("authorization", &bearer(&token))],
            )
            .await;
        assert_challenged(&reply, true, what);
    }
}

/// Unpadded base64url.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The grants a host context carries as a typed extension (what an
/// application's handlers might read instead of JSON).
#[derive(Debug)]
struct Grants(#[allow(dead_code)] Vec<String>);

#[tokio::test]
async fn auth_two_tokens_of_one_subject_with_different_scopes_are_different_identities() {
    use agent_surface::context::HostContext;
    use agent_surface::mcp::auth::Identity;
    // The host keeps the scopes out of the JSON (a typed extension
    // instead): the two credentials still must not share a consumer,
    // sessions or a host context.
    let tokens = StaticTokens::new()
        .with_token(
            "ada-rw",
            Identity::new("ada", ["mcp", "devices:read", "devices:write"]),
        )
        .with_token("ada-ro", Identity::new("ada", ["mcp", "devices:read"]));
    let served = serve(|b| {
        b.auth(
            ResourceServer::new(RESOURCE, tokens)
                .required_scopes(["mcp"])
                .host_context(|who: &Identity| {
                    HostContext::new()
                        .with("user", json!({"id": who.subject()}))
                        .with_extension(Grants(who.scopes().to_vec()))
                }),
        )
    })
    .await;
    let writer = open(&served, "ada-rw").await;
    let reused = on_session(&served, "ada-ro", &writer, "tools/list", json!({})).await;
    assert_eq!(reused.status, StatusCode::NOT_FOUND, "{}", reused.body);
    let unknown = on_session(&served, "ada-ro", "never-issued", "tools/list", json!({})).await;
    assert_eq!(reused.body, unknown.body);
}

/// An RSA public key (its private half was never kept).
const RSA_PUBLIC_PEM: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAqsGSl1hS9e64EEzbxVNr
Py9D+o3eoVkBK3heSi0gARt15aalPAisgdJMWMWlLs9z1gDv+JcdUvELU347nWY9
dydYBZ6H5f3TqSXzg8PM7xcHixg8cWG4B5IVoQ4yBcVmMn5InWzYW4swLsteJCBy
41NihSQ6Nlj9QCo/pUBOM+MqXMGGed0Jfm+sM5jZjFpW5SD3sdvGDlMo3baG5k5d
JJ3A4Z88HKleJTq4AV3Ngdx9NBzvyyfOj72O+jsc4u5Smf+sSodQXB9m7Uq8MyFD
fL4/qXx7htwMbisJBgjY+NUAwYdTdlQ4ECXu24bYipQtzroRC13o1IjcL9MkKuQ0
FQIDAQAB
-----END PUBLIC KEY-----
";

#[tokio::test]
async fn auth_jwt_alg_confusion_and_not_yet_valid_tokens_get_401() {
    let served = serve_jwt(JwtKey::pem(RSA_PUBLIC_PEM.as_bytes()).unwrap()).await;
    // HS256 keyed with the (public) RSA key: the key decides the algorithm.
    let confused = jwt(
        &claims("ada", "mcp devices:read devices:write", RESOURCE, 600),
        RSA_PUBLIC_PEM.as_bytes(),
        None,
    );
    let reply = served
        .modern(
            json!(1),
            "tools/list",
            json!({}),
            &[("authorization", &bearer(&confused))],
        )
        .await;
    assert_challenged(&reply, true, "HS256 keyed with the RSA public key");

    let served = serve_jwt(JwtKey::hmac(SECRET).unwrap()).await;
    let mut early = claims("ada", "mcp", RESOURCE, 1200);
    early["nbf"] = json!(jsonwebtoken::get_current_timestamp() + 600);
    let reply = served
        .modern(
            json!(1),
            "tools/list",
            json!({}),
            &[("authorization", &bearer(&jwt(&early, SECRET, None)))],
        )
        .await;
    assert_challenged(&reply, true, "not yet valid");
}

#[tokio::test]
async fn auth_odd_authorization_headers_are_refused_and_nothing_panics() {
    let served = serve_tokens().await;
    let huge = format!("Bearer {}", "a".repeat(9 * 1024));
    for (what, values) in [
        ("a huge token", vec![huge.as_str()]),
        ("two credentials", vec!["Bearer nope", "Bearer nope2"]),
        ("a bare scheme", vec!["Bearer"]),
        ("a tab for a space", vec!["Bearer\tnope"]),
    ] {
        let headers: Vec<(&str, &str)> = values.iter().map(|v| ("authorization", *v)).collect();
        let reply = served
            .modern(json!(1), "tools/list", json!({}), &headers)
            .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{what}");
        assert!(reply.messages.is_empty(), "{what}");
    }
    // A valid credential beside another: which one speaks is ambiguous.
    let admin = bearer(ADMIN);
    let reply = served
        .modern(
            json!(1),
            "tools/list",
            json!({}),
            &[("authorization", &admin), ("authorization", "Bearer nope")],
        )
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    // Non-ASCII bytes in the header.
    let reply = served
        .client
        .post(&served.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header(
            "authorization",
            reqwest::header::HeaderValue::from_bytes(b"Bearer \xff\xfe").unwrap(),
        )
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::UNAUTHORIZED);
    // The token in the query string is no credential.
    let reply = served
        .client
        .post(format!("{}?access_token={ADMIN}", served.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::UNAUTHORIZED);
    let challenge = reply.headers()["www-authenticate"].to_str().unwrap();
    assert!(!challenge.contains("invalid_token"), "{challenge}");
    // The scheme is case-insensitive (RFC 7235).
    let lower = format!("bearer {VIEWER}");
    let reply = served
        .modern(
            json!(1),
            "tools/list",
            json!({}),
            &[("authorization", &lower)],
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn auth_another_tokens_session_stream_and_confirmation_are_out_of_reach() {
    let served = serve_tokens().await;
    let admin = open(&served, ADMIN).await;
    // The GET stream of the admin's session, with the viewer's token.
    let stream = served
        .client
        .get(&served.url)
        .header("accept", "text/event-stream")
        .header("authorization", bearer(VIEWER))
        .header("mcp-session-id", &admin)
        .header("mcp-protocol-version", LEGACY)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::NOT_FOUND);
    // With no token at all, DELETE is a 401.
    let ended = served
        .client
        .delete(&served.url)
        .header("mcp-session-id", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), StatusCode::UNAUTHORIZED);

    // The admin's confirmation id in the viewer's hands: no tool, no call.
    let auth = bearer(ADMIN);
    served
        .modern_call(
            json!(1),
            SELECT,
            json!({"ids": ["d2"]}),
            &[("authorization", &auth)],
        )
        .await;
    let asked = served
        .modern_call(json!(2), DISABLE, json!({}), &[("authorization", &auth)])
        .await;
    let id = payload(&asked)["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let viewer = bearer(VIEWER);
    let presented = served
        .modern(
            json!(3),
            "tools/call",
            json!({"name": DISABLE, "arguments": {},
                   "_meta": {"agentSurface/confirmationId": id}}),
            &[("authorization", &viewer)],
        )
        .await;
    let presented = presented.response(&json!(3)).unwrap().clone();
    let missing = served
        .modern_call(
            json!(3),
            "domain_devices__nosuch",
            json!({}),
            &[("authorization", &viewer)],
        )
        .await;
    assert_eq!(
        presented["error"]["code"], missing["error"]["code"],
        "{presented} vs {missing}"
    );
    assert!(served.app.server().received().is_empty());
    // Still the admin's, still pending.
    assert_eq!(served.app.registry().confirmations().pending().len(), 1);
}

#[tokio::test]
async fn auth_one_identity_cannot_take_every_session() {
    let served = serve(|b| {
        b.max_sessions(4).auth(
            ResourceServer::new(RESOURCE, tokens())
                .authorization_servers([ISSUER])
                .required_scopes(["mcp"]),
        )
    })
    .await;
    // The viewer opens as many sessions as the cap, and more: past its
    // share, its oldest ends.
    let mut opened = Vec::new();
    for _ in 0..5 {
        opened.push(open(&served, VIEWER).await);
    }
    let gone = on_session(&served, VIEWER, &opened[0], "tools/list", json!({})).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
    assert!(!session_tools(&served, VIEWER, &opened[4]).await.is_empty());
    // The admin still gets one.
    let admin = open(&served, ADMIN).await;
    assert!(!session_tools(&served, ADMIN, &admin).await.is_empty());
}

#[tokio::test]
async fn auth_one_identity_cannot_take_every_stream() {
    // Twelve requests or streams in flight at once for `/mcp`; three per
    // identity.
    let served = serve(|b| {
        b.max_connections(16).max_sessions(64).auth(
            ResourceServer::new(RESOURCE, tokens())
                .authorization_servers([ISSUER])
                .required_scopes(["mcp"]),
        )
    })
    .await;
    let mut sessions = Vec::new();
    for _ in 0..12 {
        sessions.push(open(&served, VIEWER).await);
    }
    let mut streams = Vec::new();
    let mut refused = None;
    for session in &sessions {
        let stream = served
            .client
            .get(&served.url)
            .header("accept", "text/event-stream")
            .header("authorization", bearer(VIEWER))
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", LEGACY)
            .send()
            .await
            .unwrap();
        if stream.status() != StatusCode::OK {
            refused = Some(stream.status());
            break;
        }
        streams.push(stream);
    }
    assert_eq!(refused, Some(StatusCode::SERVICE_UNAVAILABLE));
    assert_eq!(streams.len(), 3);
    // Others still get through while the viewer's streams last.
    assert!(!stateless_tools(&served, ADMIN).await.is_empty());
    drop(streams);
}

/// Says whose context it runs with: the user id its host context names.
struct WhoAmI;

/// Who runs this.
#[agent_surface::prelude::agent_schema]
#[derive(Clone, Debug)]
struct Ran {
    /// The user id of the host context it ran with.
    user: String,
}

/// The tenant a credential's host context carries as a typed extension.
#[derive(Clone, Debug)]
struct Tenant(&'static str);

/// A component whose one action needs the person's approval and reports
/// whose context it ran with.
#[agent_surface::prelude::agent_component(type = "test.whoami")]
impl WhoAmI {
    /// The tenant of the context it runs with.
    #[action(effect = "local-state")]
    fn tenant(&self, ctx: &agent_surface::prelude::ActionContext) -> Ran {
        Ran {
            user: ctx
                .host()
                .extension::<Tenant>()
                .map_or("none", |tenant| tenant.0)
                .to_owned(),
        }
    }

    /// Runs once the person approved, reporting whose context ran it.
    #[action(effect = "local-state", confirmation = "required")]
    fn run(&self, ctx: &agent_surface::prelude::ActionContext) -> Ran {
        let user = ctx.host().get("user").and_then(|user| user.get("id"));
        Ran {
            user: user.and_then(Value::as_str).unwrap_or("nobody").to_owned(),
        }
    }
}

#[tokio::test]
async fn as_policy_003_an_identity_keeps_its_own_context_while_thousands_of_others_authenticate() {
    // The registry's own provider is the operator (an admin who may write);
    // a viewer's call waits for the person while 4,200 other identities
    // authenticate, then runs: with the viewer's context, never the
    // operator's, and the viewer's tools stay the viewer's.
    let served = serve_jwt(JwtKey::hmac(SECRET).unwrap()).await;
    let registry = served.app.registry();
    let _whoami = registry.mount(std::sync::Arc::new(WhoAmI)).unwrap();
    let token = |sub: &str, scope: &str| jwt(&claims(sub, scope, RESOURCE, 600), SECRET, None);
    let viewer_token = token("vic", "mcp devices:read");
    let viewer = bearer(&viewer_token);
    let as_viewer = [("authorization", viewer.as_str())];
    const RUN: &str = "view_test__whoami__run";

    served
        .modern_call(json!(1), SELECT, json!({"ids": ["d2"]}), &as_viewer)
        .await;
    let asked = served
        .modern_call(json!(2), RUN, json!({}), &as_viewer)
        .await;
    assert_eq!(payload(&asked)["code"], "CONFIRMATION_REQUIRED", "{asked}");
    let id = payload(&asked)["details"]["confirmationId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Others authenticate meanwhile.
    for n in 0..4_200 {
        stateless_tools(&served, &token(&format!("other-{n}"), "mcp devices:read")).await;
    }

    let confirmations = registry.confirmations();
    confirmations
        .approve(&confirmations.find(&id).unwrap().shown())
        .unwrap();
    let ran = served
        .modern(
            json!(3),
            "tools/call",
            json!({"name": RUN, "arguments": {},
                   "_meta": {"agentSurface/confirmationId": id}}),
            &as_viewer,
        )
        .await;
    let ran = ran.response(&json!(3)).unwrap();
    assert_eq!(payload(ran), &json!({"user": "vic"}), "{ran}");
    let tools = stateless_tools(&served, &viewer_token).await;
    assert!(
        !tools.iter().any(|tool| tool == DISABLE),
        "the viewer never sees the operator's tools: {tools:?}"
    );
}

#[tokio::test]
async fn as_policy_003_credentials_differing_only_in_typed_extensions_never_share_a_context() {
    use agent_surface::context::HostContext;
    use agent_surface::mcp::auth::{Identity, Rejected};
    // Two tokens of one subject and scopes whose host contexts differ only
    // in a typed extension (which no fingerprint of JSON can see).
    let authenticator = |token: &str| -> Result<Identity, Rejected> {
        let tenant = match token {
            "ada-org1" => "org1",
            "ada-org2" => "org2",
            _ => return Err(Rejected::new("unknown token")),
        };
        Ok(Identity::new("ada", ["mcp".to_owned()])
            .with_host(HostContext::new().with_extension(Tenant(tenant))))
    };
    let served = serve(|b| b.auth(ResourceServer::new(RESOURCE, authenticator))).await;
    let _whoami = served
        .app
        .registry()
        .mount(std::sync::Arc::new(WhoAmI))
        .unwrap();
    for (n, (token, tenant)) in [
        ("ada-org1", "org1"),
        ("ada-org2", "org2"),
        ("ada-org1", "org1"),
    ]
    .into_iter()
    .enumerate()
    {
        let auth = bearer(token);
        let ran = served
            .modern_call(
                json!(n),
                "view_test__whoami__tenant",
                json!({}),
                &[("authorization", &auth)],
            )
            .await;
        assert_eq!(payload(&ran), &json!({"user": tenant}), "{token}: {ran}");
    }
    // And one's session is not the other's.
    let session = open(&served, "ada-org1").await;
    let reply = served
        .post_json(
            &[
                ("authorization", &bearer("ada-org2")),
                ("mcp-session-id", &session),
                ("mcp-protocol-version", LEGACY),
            ],
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND, "{}", reply.body);
}

#[tokio::test]
async fn auth_http_service_in_a_host_router_checks_origins_before_credentials() {
    let mounted = support::http::mount_in_host_router(|b| {
        b.auth(ResourceServer::new(RESOURCE, tokens()).required_scopes(["mcp"]))
    })
    .await;
    let token = bearer(ADMIN);
    let port = mounted.address.port();
    let foreign = mounted
        .raw
        .initialize_with(&[
            ("authorization", &token),
            ("origin", "https://evil.example"),
        ])
        .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.body);
    let loopback = format!("http://localhost:{port}");
    let allowed = mounted
        .raw
        .initialize_with(&[("authorization", &token), ("origin", &loopback)])
        .await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.body);
}
