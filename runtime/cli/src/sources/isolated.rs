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
        let _ = writeln!(err, "{AT}{}", encode(path));
        let _ = err.flush();
    }
}

/// Scans `roots` in a process of its own, setting aside each file that
/// stops it. Falls back to this process (on a large stack) when the
/// binary cannot run itself or its run answers with something that is not
/// a scan.
pub(crate) fn scan(roots: &[ScanRoot]) -> Scan {
    let Ok(exe) = std::env::current_exe() else {
        return on_large_stack(roots.to_vec(), Vec::new());
    };
    let mut set_aside: Vec<PathBuf> = Vec::new();
    loop {
        match run_child(&exe, &request(roots, &set_aside)) {
            Ran::Done(scan) => return scan,
            Ran::Stopped(Some(path))
                if set_aside.len() < MAX_SET_ASIDE && !set_aside.contains(&path) =>
            {
                set_aside.push(path);
            }
            Ran::Stopped(_) => {
                // Said without a path (what review sees must not depend on
                // where the checkout lives), with a digest of the source, so
                // any change to it while the scan cannot read it shows.
                return Scan {
                    items: super::items::Items::new(),
                    gated: Vec::new(),
                    link_level: vec![format!(
                        "the source scan stopped, {} files set aside: the source was not read \
                         (digest of its files {})",
                        set_aside.len(),
                        source_digest(roots)
                    )],
                };
            }
            Ran::Unusable => return on_large_stack(roots.to_vec(), set_aside),
        }
    }
}

/// SHA-256 over the files under every root's directory (see
/// [`of_tree`](super::digest::of_tree)).
fn source_digest(roots: &[ScanRoot]) -> String {
    let mut budget = super::digest::MAX_DIGESTED_BYTES;
    let trees: Vec<String> = roots
        .iter()
        .map(|root| super::digest::of_tree(&root.dir, &mut budget))
        .collect();
    super::digest::of_bytes(trees.join("\n").as_bytes())
}

/// How a run of the scan's process ended.
enum Ran {
    /// It scanned.
    Done(Scan),
    /// It stopped (a signal, a stack overflow), at the file it last told.
    Stopped(Option<PathBuf>),
    /// It could not be started, or answered with something that is not a
    /// scan: the scan runs in this process instead.
    Unusable,
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
    let items = super::items::to_json(&scan.items);
    let out = json!({"gated": gated, "linkLevel": scan.link_level, "items": items});
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
            items: super::items::Items::new(),
            gated: Vec::new(),
            link_level: vec!["the source scan could not run: the source was not read".to_owned()],
        },
    }
}

/// The request for the scan's process (paths as [`encode`]d).
fn request(roots: &[ScanRoot], set_aside: &[PathBuf]) -> String {
    let each: Vec<Value> = roots
        .iter()
        .map(|root| {
            json!({
                "label": root.label,
                "dir": encode(&root.dir),
                "entryPoints": root.entry_points.iter().map(|p| encode(p)).collect::<Vec<_>>(),
                "condition": root.condition,
            })
        })
        .collect();
    let set_aside: Vec<String> = set_aside.iter().map(|p| encode(p)).collect();
    json!({"roots": each, "setAside": set_aside}).to_string()
}

/// A path as hex digits of its bytes as the platform holds them (UTF-16
/// units on Windows): any name survives the way there and back, a newline
/// or a byte that is not UTF-8 included.
fn encode(path: &Path) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        path.as_os_str()
            .as_bytes()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
    #[cfg(windows)]
    {
        use std::os::windows::ffi::OsStrExt as _;
        path.as_os_str()
            .encode_wide()
            .map(|unit| format!("{unit:04x}"))
            .collect()
    }
    #[cfg(not(any(unix, windows)))]
    {
        path.to_string_lossy()
            .bytes()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// The path [`encode`] wrote; `None` for anything else.
fn decode(text: &str) -> Option<PathBuf> {
    #[cfg(windows)]
    const DIGITS: usize = 4;
    #[cfg(not(windows))]
    const DIGITS: usize = 2;
    if !text.is_ascii() || !text.len().is_multiple_of(DIGITS) {
        return None;
    }
    let units = (0..text.len() / DIGITS).map(|i| {
        text.get(i * DIGITS..(i + 1) * DIGITS)
            .and_then(|digits| u16::from_str_radix(digits, 16).ok())
    });
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt as _;
        let bytes: Option<Vec<u8>> = units
            .map(|unit| unit.and_then(|unit| u8::try_from(unit).ok()))
            .collect();
        Some(PathBuf::from(std::ffi::OsString::from_vec(bytes?)))
    }
    #[cfg(windows)]
    {
        use std::os::windows::ffi::OsStringExt as _;
        let wide: Option<Vec<u16>> = units.collect();
        Some(PathBuf::from(std::ffi::OsString::from_wide(&wide?)))
    }
    #[cfg(not(any(unix, windows)))]
    {
        let bytes: Option<Vec<u8>> = units
            .map(|unit| unit.and_then(|unit| u8::try_from(unit).ok()))
            .collect();
        String::from_utf8(bytes?).ok().map(PathBuf::from)
    }
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
            dir: decode(root.get("dir")?.as_str()?)?,
            entry_points: strings(root.get("entryPoints"))?
                .iter()
                .map(|p| decode(p))
                .collect::<Option<Vec<_>>>()?,
            condition: strings(root.get("condition"))?,
        });
    }
    let set_aside = strings(request.get("setAside"))?
        .iter()
        .map(|p| decode(p))
        .collect::<Option<Vec<_>>>()?;
    Some((roots, set_aside))
}

/// Runs the scan's process once.
fn run_child(exe: &Path, request: &str) -> Ran {
    let Ok(mut child) = Command::new(exe)
        .arg(CHILD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        return Ran::Unusable;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A process that stops early closes its end: its status says so.
        let _ = stdin.write_all(request.as_bytes());
    }
    let Ok(output) = child.wait_with_output() else {
        return Ran::Unusable;
    };
    if !output.status.success() {
        let last_at = String::from_utf8_lossy(&output.stderr)
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix(AT))
            .and_then(decode);
        return Ran::Stopped(last_at);
    }
    match serde_json::from_slice::<Value>(&output.stdout)
        .ok()
        .as_ref()
        .and_then(parse_scan)
    {
        Some(scan) => Ran::Done(scan),
        None => Ran::Unusable,
    }
}

/// The scan the scan's process printed; `None` unless it is exactly one.
fn parse_scan(printed: &Value) -> Option<Scan> {
    let gated = printed
        .get("gated")?
        .as_array()?
        .iter()
        .map(|g| {
            let field = |i: usize| g.get(i).and_then(Value::as_str).map(str::to_owned);
            Some(GatedDeclaration {
                key: field(0)?,
                condition: field(1)?,
                file: field(2)?,
                digest: field(3)?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let link_level = printed
        .get("linkLevel")?
        .as_array()?
        .iter()
        .map(|line| line.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()?;
    let items = super::items::from_json(printed.get("items")?)?;
    Some(Scan {
        gated,
        link_level,
        items,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn any_path_survives_the_way_to_the_scan_and_back() {
        let mut names = vec![
            PathBuf::from("/src/deep\n.rs"),
            PathBuf::from("/src/deep.rs\r"),
        ];
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt as _;
            names.push(PathBuf::from(std::ffi::OsString::from_vec(
                b"/src/d\xff.rs".to_vec(),
            )));
        }
        for name in names {
            let line = format!("{AT}{}", encode(&name));
            assert_eq!(line.lines().count(), 1);
            let told = line.lines().rev().find_map(|l| l.strip_prefix(AT)).unwrap();
            assert_eq!(decode(told), Some(name));
        }
        assert_eq!(decode("zz"), None);
        assert_eq!(decode("abc"), None);
        let roots = [ScanRoot {
            label: Some("dep 1.0.0".to_owned()),
            dir: PathBuf::from("/src/a\nb"),
            entry_points: vec![PathBuf::from("/src/a\nb/lib.rs")],
            condition: vec!["cfg(windows)".to_owned()],
        }];
        let (back, aside) = parse_request(
            &serde_json::from_str(&request(&roots, &[PathBuf::from("/x\ny")])).unwrap(),
        )
        .unwrap();
        assert_eq!(back[0].dir, roots[0].dir);
        assert_eq!(back[0].entry_points, roots[0].entry_points);
        assert_eq!(back[0].label, roots[0].label);
        assert_eq!(aside, [PathBuf::from("/x\ny")]);
    }

    #[test]
    fn only_a_whole_scan_is_taken_from_the_scan_process() {
        assert!(parse_scan(&json!({"gated": [], "linkLevel": [], "items": {}})).is_some());
        assert!(
            parse_scan(&json!({"gated": [], "linkLevel": [], "items": {"f": [["d", [1]]]}}))
                .is_none()
        );
        assert!(parse_scan(&json!({"linkLevel": []})).is_none());
        assert!(
            parse_scan(&json!({"gated": [["k", "c", "f"]], "linkLevel": [], "items": {}}))
                .is_none()
        );
        assert!(parse_scan(&json!({"gated": [], "linkLevel": [1], "items": {}})).is_none());
    }
}
