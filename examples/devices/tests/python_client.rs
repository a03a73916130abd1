//! The devices example driven by an MCP client no one here wrote: the
//! official Python SDK (`mcp` from PyPI), over stdio and streamable HTTP, in
//! the legacy and the current protocol modes (see `mcp_client.py`).
//!
//! `.ci/run` installs the SDK into a virtual environment and sets
//! `AGENT_SURFACE_PYTHON`; elsewhere the test says it was skipped, unless
//! `CI` is set, where a missing client is a failure.

mod python_support;

#[test]
fn the_official_python_sdk_drives_the_devices_example_over_stdio_and_http() {
    python_support::run_python_client("mcp_client.py", "all MCP client checks passed");
}
