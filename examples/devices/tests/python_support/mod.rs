//! Running a Python MCP client script against the devices binary: the
//! official SDK from the virtual environment `.ci/run` builds
//! (`AGENT_SURFACE_PYTHON`). Without it the test says it was skipped,
//! unless `CI` is set, where a missing client is a failure.

#![allow(dead_code, unreachable_pub, clippy::expect_used, clippy::panic)] // test code

use std::process::Command;

/// Runs `tests/<script>` with the devices binary as its argument and
/// asserts it succeeded and printed `passed`.
pub fn run_python_client(script: &str, passed: &str) {
    let Some(python) = python() else {
        return;
    };
    let script = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
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
    assert!(transcript.contains(passed));
    // Closing a session is answered as the SDK expects (`200`), so it logs
    // no failed termination.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("Session termination failed"),
        "the SDK could not end its session:\n{stderr}"
    );
}

/// The Python with the official SDK, or `None` (said) where it may be
/// missing; a failure under `CI`.
pub fn python() -> Option<std::ffi::OsString> {
    let python = std::env::var_os("AGENT_SURFACE_PYTHON");
    if python.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide the Python MCP client: .ci/run installs it and sets AGENT_SURFACE_PYTHON"
        );
        eprintln!(
            "skipped: set AGENT_SURFACE_PYTHON to a Python with `mcp` installed (as .ci/run does) to run the Python client"
        );
    }
    python
}
