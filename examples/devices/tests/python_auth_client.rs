//! The devices example's authenticated MCP endpoint (`--auth tokens`,
//! `--auth jwt`) driven by the official Python SDK sending
//! `Authorization: Bearer …` over streamable HTTP, both protocol
//! generations (see `mcp_auth_client.py`).
//!
//! `.ci/run` installs the SDK into a virtual environment and sets
//! `AGENT_SURFACE_PYTHON`; elsewhere the test says it was skipped, unless
//! `CI` is set, where a missing client is a failure.

mod python_support;

#[test]
fn the_official_python_sdk_authenticates_to_the_devices_example_with_bearer_tokens() {
    python_support::run_python_client(
        "mcp_auth_client.py",
        "all authenticated MCP client checks passed",
    );
}
