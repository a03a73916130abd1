//! The devices binary's command line: `--user` is honoured wherever it
//! stands (the viewer served over MCP never sees `domain_devices__disable`),
//! and unknown or misplaced flags are usage errors, never ignored.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)] // test code

use std::process::{Command, Stdio};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::json;

mod support;

use support::{BINARY, spawn};

/// The tools served after selecting rows (when an admin is offered disable).
async fn tools_after_a_selection(url: &str) -> Vec<String> {
    let client = ().serve(StreamableHttpClientTransport::from_uri(url.to_owned())).await.unwrap();
    let arguments = json!({"ids": ["d2", "d3"]}).as_object().cloned().unwrap();
    client
        .call_tool(
            CallToolRequestParams::new("view_devices__table__selectRows").with_arguments(arguments),
        )
        .await
        .unwrap();
    let tools = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect();
    client.cancel().await.unwrap();
    tools
}

#[tokio::test]
async fn the_viewer_never_sees_disable_wherever_the_user_flag_stands() {
    for args in [
        ["--mcp", "http", "127.0.0.1:0", "--user", "viewer"],
        ["--user", "viewer", "--mcp", "http", "127.0.0.1:0"],
    ] {
        let running = spawn(args);
        let tools = tools_after_a_selection(&running.url).await;
        assert!(
            tools.contains(&"view_devices__table__selectRows".to_owned()),
            "{args:?}: {tools:?}"
        );
        assert!(
            !tools.contains(&"domain_devices__disable".to_owned()),
            "{args:?}: {tools:?}"
        );
    }
    // The admin, for contrast, is offered it.
    let running = spawn(["--mcp", "http", "127.0.0.1:0", "--user", "admin"]);
    let tools = tools_after_a_selection(&running.url).await;
    assert!(
        tools.contains(&"domain_devices__disable".to_owned()),
        "{tools:?}"
    );
}

#[test]
fn unknown_or_misplaced_flags_exit_with_a_usage_error() {
    for args in [
        &["--mcp", "http", "127.0.0.1:0", "--verbose"][..],
        &["--mcp", "stdio", "127.0.0.1:0"],
        &["--mcp", "http", "nowhere"],
        &["--user", "root"],
        &["127.0.0.1:0"],
        &["--catalog", "--snapshot"],
    ] {
        let output = Command::new(BINARY)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error:"), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}: nothing ran");
    }
    let help = Command::new(BINARY).arg("--help").output().unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("--mcp"));
}
