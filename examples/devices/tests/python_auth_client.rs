//! The devices example's authenticated MCP endpoint (`--auth tokens`,
//! `--auth jwt`) driven by the official Python SDK sending
//! `Authorization: Bearer …` over streamable HTTP, both protocol
//! generations (see `mcp_auth_client.py`).
//!
//! `.ci/run` installs the SDK into a virtual environment and sets
//! `AGENT_SURFACE_PYTHON`; elsewhere the test says it was skipped, unless
//! `CI` is set, where a missing client is a failure.

use std::process::Command;

#[test]
fn the_official_python_sdk_authenticates_to_the_devices_example_with_bearer_tokens() {
    let Some(python) = std::env::var_os("AGENT_SURFACE_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide the Python MCP client: .ci/run installs it and sets AGENT_SURFACE_PYTHON"
        );
        eprintln!(
            "skipped: set AGENT_SURFACE_PYTHON to a Python with `mcp` installed (as .ci/run does) to run the Python client"
        );
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_auth_client.py");
    let output = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_devices"))
        .output()
        .expect("the Python client runs");
    let transcript = String::from_utf8_lossy(&output.stdout);
    println!("{transcript}");
    assert!(
        output.status.success(),
        "the Python client failed:\n{transcript}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(transcript.contains("all authenticated MCP client checks passed"));
}
