//! The source scan in a process of its own. The parser recurses once per
//! level of nesting, so a file that nests deeper than its stack allows
//! aborts the process that parses it: that process is the scan's own,
//! never the gate's. The gate then scans again with that file set aside,
//! and says it was not read.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::{GatedDeclaration, Scan};
use crate::metadata::ScanRoot;

/// The hidden first argument that makes the binary the scan's process.
pub(crate) const CHILD_ARG: &str = "__agent-surface-scan-sources";

/// The stack the scan runs on: reserved, and touched only as deep as the
/// source nests.
const STACK_BYTES: usize = 256 << 20;

/// At most this many files are set aside before the gate stops scanning.
const MAX_SET_ASIDE: usize = 16;

/// How the scan's process tells the file it is at (on its stderr).
const AT: &str = "agent-surface-scan: at ";

/// Whether this process is the scan's own (it then tells where it is).
static TELLING: AtomicBool = AtomicBool::new(false);

/// Tells the gate, from the scan's process, that the scan is at `path`
/// (before parsing, walking or dropping its syntax tree).
pub(super) fn at(path: &Path) {
    if TELLING.load(Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{AT}{}", path.display());
        let _ = err.flush();
    }
}

/// Scans `roots` in a process of its own, setting aside each file that
/// stops it. Falls back to this process (on a large stack) when the
/// binary cannot run itself or a path is not UTF-8.
pub(crate) fn scan(roots: &[ScanRoot]) -> Scan {
    let Ok(exe) = std::env::current_exe() else {
        return on_large_stack(roots.to_vec(), Vec::new());
    };
    let mut set_aside: Vec<PathBuf> = Vec::new();
    loop {
        let Some(request) = request(roots, &set_aside) else {
            return on_large_stack(roots.to_vec(), set_aside);
        };
        match run_child(&exe, &request) {
            Ok(scan) => return scan,
            Err(Some(path)) if set_aside.len() < MAX_SET_ASIDE && !set_aside.contains(&path) => {
                set_aside.push(path);
            }
            Err(stopped_at) => {
                let place =
                    stopped_at.map_or_else(String::new, |path| format!(" at {}", path.display()));
                return Scan {
                    gated: Vec::new(),
                    link_level: vec![format!(
                        "the source scan stopped{place}, after {} files set aside: the \
                         source was not read",
                        set_aside.len()
                    )],
                };
            }
        }
    }
}

/// The scan's process: reads its request on stdin, scans on a large
/// stack, and prints the scan as JSON.
pub(crate) fn child_main() -> ExitCode {
    TELLING.store(true, Ordering::Relaxed);
    let mut text = String::new();
    if std::io::stdin().read_to_string(&mut text).is_err() {
        return ExitCode::from(2);
    }
    let Ok(request) = serde_json::from_str::<Value>(&text) else {
        return ExitCode::from(2);
    };
    let Some((roots, set_aside)) = parse_request(&request) else {
        return ExitCode::from(2);
    };
    let scan = on_large_stack(roots, set_aside);
    let gated: Vec<Value> = scan
        .gated
        .iter()
        .map(|g| json!([g.key, g.condition, g.file, g.digest]))
        .collect();
    let out = json!({"gated": gated, "linkLevel": scan.link_level});
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(out.to_string().as_bytes()).is_err() || stdout.flush().is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// Runs the scan on a thread with a large stack.
fn on_large_stack(roots: Vec<ScanRoot>, set_aside: Vec<PathBuf>) -> Scan {
    let spawned = std::thread::Builder::new()
        .name("agent-surface-scan".to_owned())
        .stack_size(STACK_BYTES)
        .spawn(move || super::scan_setting_aside(&roots, &set_aside));
    match spawned.map(std::thread::JoinHandle::join) {
        Ok(Ok(scan)) => scan,
        _ => Scan {
            gated: Vec::new(),
            link_level: vec!["the source scan could not run: the source was not read".to_owned()],
        },
    }
}

/// The request for the scan's process; `None` when a path is not UTF-8.
fn request(roots: &[ScanRoot], set_aside: &[PathBuf]) -> Option<String> {
    let path = |p: &Path| p.to_str().map(str::to_owned);
    let mut each = Vec::new();
    for root in roots {
        let entry_points: Option<Vec<String>> = root.entry_points.iter().map(|p| path(p)).collect();
        each.push(json!({
            "label": root.label,
            "dir": path(&root.dir)?,
            "entryPoints": entry_points?,
            "condition": root.condition,
        }));
    }
    let set_aside: Option<Vec<String>> = set_aside.iter().map(|p| path(p)).collect();
    Some(json!({"roots": each, "setAside": set_aside?}).to_string())
}

fn parse_request(request: &Value) -> Option<(Vec<ScanRoot>, Vec<PathBuf>)> {
    let strings = |value: Option<&Value>| -> Option<Vec<String>> {
        value?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    let mut roots = Vec::new();
    for root in request.get("roots")?.as_array()? {
        roots.push(ScanRoot {
            label: root.get("label").and_then(Value::as_str).map(str::to_owned),
            dir: PathBuf::from(root.get("dir")?.as_str()?),
            entry_points: strings(root.get("entryPoints"))?
                .into_iter()
                .map(PathBuf::from)
                .collect(),
            condition: strings(root.get("condition"))?,
        });
    }
    let set_aside = strings(request.get("setAside"))?
        .into_iter()
        .map(PathBuf::from)
        .collect();
    Some((roots, set_aside))
}

/// Runs the scan's process: the scan, or where it stopped (`None`: it
/// stopped before any file).
fn run_child(exe: &Path, request: &str) -> Result<Scan, Option<PathBuf>> {
    let mut child = Command::new(exe)
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|_| None)?;
    if let Some(mut stdin) = child.stdin.take() {
        // A process that stops early closes its end: its status says so.
        let _ = stdin.write_all(request.as_bytes());
    }
    let output = child.wait_with_output().map_err(|_| None)?;
    let last_at = || {
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix(AT))
            .map(PathBuf::from)
    };
    if !output.status.success() {
        return Err(last_at());
    }
    let parsed: Value = serde_json::from_slice(&output.stdout).map_err(|_| last_at())?;
    let gated = parsed
        .get("gated")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(|g| {
                    let field = |i: usize| g.get(i).and_then(Value::as_str).map(str::to_owned);
                    Some(GatedDeclaration {
                        key: field(0)?,
                        condition: field(1)?,
                        file: field(2)?,
                        digest: field(3)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let link_level = parsed
        .get("linkLevel")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok(Scan { gated, link_level })
}
