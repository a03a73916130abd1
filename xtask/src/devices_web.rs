//! The browser example's build and size budget: builds `devices-web` for
//! `wasm32-unknown-unknown` (profile `wasm-release`), runs `wasm-bindgen`
//! (the version the lock file pins) into `target/devices-web/` with the
//! page's `index.html` and `style.css`, then measures what a page
//! downloads — the `.wasm` and the JS glue, raw and brotli (quality 11, as
//! a static server precompresses) — and how much of the code is the
//! framework's (by the crate that owns each function, read from the names
//! of a second, unstripped output). With `--check`, fails when a figure is
//! over the budget in `examples/devices-web/size-budget.json`.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What to do.
#[derive(Debug, Default)]
pub(crate) struct Options {
    check: bool,
    out: Option<PathBuf>,
}

impl Options {
    /// Reads `--check` and `--out DIR`.
    pub(crate) fn parse(args: &[String]) -> Result<Options, String> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--check" => options.check = true,
                "--out" => {
                    let dir = args.next().ok_or("--out needs a directory")?;
                    options.out = Some(PathBuf::from(dir));
                }
                other => return Err(format!("unknown flag {other}")),
            }
        }
        Ok(options)
    }
}

/// The figures the budget holds, in bytes.
const FIGURES: [(&str, &str); 5] = [
    ("wasm_bytes", "the .wasm as shipped"),
    ("wasm_brotli_bytes", "the .wasm, brotli"),
    ("js_brotli_bytes", "the JS glue and snippets, brotli"),
    ("core_code_bytes", "code of agent_surface (the core)"),
    (
        "framework_code_bytes",
        "code of agent_surface + agent_surface_dioxus",
    ),
];

fn root() -> Result<PathBuf, String> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "the workspace root".to_owned())
}

fn run(mut command: Command) -> Result<String, String> {
    let shown = format!("{command:?}");
    let output = command.output().map_err(|e| format!("{shown}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{shown} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The version of `name` the lock file pins.
fn locked_version(root: &Path, name: &str) -> Result<String, String> {
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).map_err(|e| e.to_string())?;
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == wanted {
            let version = lines.next().unwrap_or_default();
            return Ok(version
                .trim_start_matches("version = \"")
                .trim_end_matches('"')
                .to_owned());
        }
    }
    Err(format!("{name} is not in Cargo.lock"))
}

/// Runs `wasm-bindgen` of the pinned version on `wasm` into `out`.
fn bindgen(wasm: &Path, out: &Path, strip: bool) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(out);
    let mut command = Command::new("wasm-bindgen");
    command.args(["--target", "web", "--no-typescript", "--out-dir"]);
    command.arg(out).arg(wasm);
    if strip {
        command.args(["--remove-name-section", "--remove-producers-section"]);
    }
    run(command).map(drop)
}

fn brotli(bytes: &[u8]) -> Result<usize, String> {
    let mut compressed = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut compressed, 4096, 11, 22);
        writer.write_all(bytes).map_err(|e| e.to_string())?;
    }
    Ok(compressed.len())
}

/// The files under `dir` whose name ends with `suffix`, recursively.
fn files(dir: &Path, suffix: &str, found: &mut Vec<PathBuf>) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            files(&path, suffix, found)?;
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    Ok(())
}

/// The crate owning a function, from its demangled name: the first path
/// segment (for `<T as Trait>::f`, the implementing type's crate).
fn owner(name: &str) -> String {
    let demangled = format!("{:#}", rustc_demangle::demangle(name));
    let path = demangled.trim_start_matches('<').trim_start_matches('&');
    let path = path.trim_start_matches("mut ").trim_start_matches("dyn ");
    match path.split_once("::") {
        // A crate's disambiguator (`core[…]`) is not part of its name.
        Some((krate, _)) if !krate.contains(' ') && !krate.is_empty() => krate
            .split_once('[')
            .map_or(krate, |(name, _)| name)
            .to_owned(),
        _ if name.starts_with("__wbg") || name.starts_with("__wbindgen") => "wasm_bindgen".into(),
        _ => "(other)".to_owned(),
    }
}

/// Code bytes per owning crate, from a wasm module with its name section.
fn code_by_crate(wasm: &[u8]) -> Result<BTreeMap<String, usize>, String> {
    use wasmparser::{Name, Parser, Payload};
    let mut imported = 0u32;
    let mut bodies: Vec<usize> = Vec::new();
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(|e| e.to_string())? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(|e| e.to_string())?;
                    if matches!(import.ty, wasmparser::TypeRef::Func(_)) {
                        imported += 1;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => bodies.push(body.range().len()),
            Payload::CustomSection(section) => {
                if let wasmparser::KnownCustom::Name(reader) = section.as_known() {
                    for name in reader {
                        if let Ok(Name::Function(map)) = name {
                            for naming in map {
                                let naming = naming.map_err(|e| e.to_string())?;
                                names.insert(naming.index, naming.name.to_owned());
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut by_crate: BTreeMap<String, usize> = BTreeMap::new();
    for (index, size) in (imported..).zip(bodies) {
        let krate = names
            .get(&index)
            .map_or_else(|| "(unnamed)".to_owned(), |name| owner(name));
        *by_crate.entry(krate).or_default() += size;
    }
    Ok(by_crate)
}

/// Builds, measures and (with `--check`) holds the budget.
pub(crate) fn run_task(options: &Options) -> Result<(), String> {
    let root = root()?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| target.join("devices-web"));
    let pinned = locked_version(&root, "wasm-bindgen")?;
    let installed = run({
        let mut command = Command::new("wasm-bindgen");
        command.arg("--version");
        command
    })
    .map_err(|_| {
        format!("wasm-bindgen is not installed: cargo install wasm-bindgen-cli --version {pinned}")
    })?;
    if installed.split_whitespace().nth(1) != Some(pinned.as_str()) {
        return Err(format!(
            "{} is installed, the lock file pins {pinned}: cargo install wasm-bindgen-cli --version {pinned}",
            installed.trim()
        ));
    }

    eprintln!("building devices-web for wasm32-unknown-unknown (profile wasm-release)");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build = Command::new(cargo);
    build.current_dir(&root).args([
        "build",
        "--quiet",
        "-p",
        "devices-web",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        "wasm-release",
    ]);
    run(build)?;
    let wasm = target.join("wasm32-unknown-unknown/wasm-release/devices-web.wasm");
    let named = target.join("devices-web-named");
    bindgen(&wasm, &named, false)?;
    bindgen(&wasm, &out, true)?;
    for page in ["index.html", "style.css"] {
        std::fs::copy(
            root.join("examples/devices-web/web").join(page),
            out.join(page),
        )
        .map_err(|e| format!("{page}: {e}"))?;
    }

    let shipped = std::fs::read(out.join("devices-web_bg.wasm")).map_err(|e| e.to_string())?;
    let mut scripts = Vec::new();
    files(&out, ".js", &mut scripts)?;
    let mut js_raw = 0;
    let mut js_brotli = 0;
    for script in &scripts {
        let bytes = std::fs::read(script).map_err(|e| e.to_string())?;
        js_raw += bytes.len();
        js_brotli += brotli(&bytes)?;
    }
    let by_crate = code_by_crate(
        &std::fs::read(named.join("devices-web_bg.wasm")).map_err(|e| e.to_string())?,
    )?;
    let code: usize = by_crate.values().sum();
    let core = by_crate.get("agent_surface").copied().unwrap_or(0);
    let framework = core + by_crate.get("agent_surface_dioxus").copied().unwrap_or(0);
    let wasm_brotli = brotli(&shipped)?;
    let figures: BTreeMap<&str, usize> = BTreeMap::from([
        ("wasm_bytes", shipped.len()),
        ("wasm_brotli_bytes", wasm_brotli),
        ("js_brotli_bytes", js_brotli),
        ("core_code_bytes", core),
        ("framework_code_bytes", framework),
    ]);

    let kib = |bytes: usize| format!("{:.1} KiB", bytes as f64 / 1024.0);
    let percent = |bytes: usize| 100.0 * bytes as f64 / code.max(1) as f64;
    println!("devices-web in {}", out.display());
    println!(
        "  .wasm            {:>10}  brotli {:>10}",
        kib(shipped.len()),
        kib(wasm_brotli)
    );
    println!(
        "  JS ({} files)     {:>10}  brotli {:>10}",
        scripts.len(),
        kib(js_raw),
        kib(js_brotli)
    );
    println!(
        "  code {} in all; the core (agent_surface) {} ({:.1} %), with the Dioxus binding {} ({:.1} %)",
        kib(code),
        kib(core),
        percent(core),
        kib(framework),
        percent(framework)
    );
    println!("  by owning crate:");
    let mut ranked: Vec<(&String, &usize)> = by_crate.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1));
    for (krate, bytes) in ranked.iter().take(14) {
        println!(
            "    {krate:<28} {:>10}  {:>5.1} %",
            kib(**bytes),
            percent(**bytes)
        );
    }

    if options.check {
        let path = root.join("examples/devices-web/size-budget.json");
        let budget: Value = serde_json::from_str(
            &std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut over = Vec::new();
        for (key, what) in FIGURES {
            let limit = budget
                .get(key)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("{}: no `{key}`", path.display()))?;
            let figure = figures.get(key).copied().unwrap_or(0);
            let verdict = if figure as u64 > limit { "OVER" } else { "ok" };
            println!(
                "  budget {what:<44} {:>10} of {:>10}  {verdict}",
                kib(figure),
                kib(limit as usize)
            );
            if figure as u64 > limit {
                over.push(key);
            }
        }
        if !over.is_empty() {
            return Err(format!(
                "over the size budget: {} (examples/devices-web/size-budget.json; revise it consciously, never silently)",
                over.join(", ")
            ));
        }
    }
    Ok(())
}
