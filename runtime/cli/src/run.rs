//! Running the binary that exports a catalog: bounded in time (a binary
//! that never reaches the export would hold the command forever) and in
//! the diagnostics kept, and read back as JSON.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::Fatal;

/// At most this much of the run's diagnostic stream is kept for a message.
const STDERR_KEPT: u64 = 64 * 1024;

/// What a finished run left: its exit status and the start of its stderr.
struct Finished {
    status: std::process::ExitStatus,
    stderr: String,
}

/// Runs `executable` with the export variable, waiting at most `timeout`
/// (a binary that never reaches the export line, such as a server without
/// it, would otherwise hold the command forever).
fn run_bounded(
    executable: &Path,
    out: &Path,
    cwd: &Path,
    timeout: std::time::Duration,
    hint: &str,
) -> Result<Finished, Fatal> {
    use std::io::Read as _;
    let mut child = Command::new(executable)
        .env(agent_surface::catalog::EXPORT_ENV, out)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| Fatal(format!("cannot run {}: {err}", executable.display())))?;
    let stderr = child.stderr.take();
    // The start of stderr is sent as soon as it is read (at the limit or at
    // the end of the stream); the rest is drained so the child never blocks
    // on a full pipe. A process the binary left behind may hold the stream
    // open: the message then goes without it rather than waiting.
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut stream) = stderr {
            let _ = stream.by_ref().take(STDERR_KEPT).read_to_end(&mut kept);
            let _ = sender.send(String::from_utf8_lossy(&kept).into_owned());
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
        }
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Fatal(format!(
                    "{} did not exit within {} s (--export-timeout): {hint}",
                    executable.display(),
                    timeout.as_secs()
                )));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(err) => {
                let _ = child.kill();
                return Err(Fatal(format!(
                    "cannot wait for {}: {err}",
                    executable.display()
                )));
            }
        }
    };
    let stderr = receiver
        .recv_timeout(std::time::Duration::from_secs(2))
        .unwrap_or_default();
    Ok(Finished { status, stderr })
}

/// Runs `executable` with the export variable; returns the catalog JSON.
pub(crate) fn run(
    executable: &Path,
    out: &Path,
    cwd: &Path,
    hint: &str,
    timeout: std::time::Duration,
) -> Result<Value, Fatal> {
    let _ = std::fs::remove_file(out);
    let output = run_bounded(executable, out, cwd, timeout, hint)?;
    let text = match std::fs::read_to_string(out) {
        Ok(text) if output.status.success() => text,
        _ if !output.status.success() => {
            return Err(Fatal(format!(
                "reading the catalog failed ({}):\n{}",
                output.status, output.stderr
            )));
        }
        _ => {
            return Err(Fatal(format!(
                "{} exited without writing its catalog: {hint}",
                executable.display()
            )));
        }
    };
    serde_json::from_str(&text).map_err(|err| Fatal(format!("the catalog is not JSON: {err}")))
}
