//! The build script behind a file the build generates: an `include!` of a
//! path under `OUT_DIR` pulls in what the package's build script wrote, so
//! what the gate records for it carries the build script's digest — a
//! change to the generator is a change review sees, even where the
//! generated file declares reach only in builds the gate did not make.
//! (What else it reads is listed as "files a generator may read"; see
//! `generated_reach` in `main.rs`.)

use std::path::Path;

use super::digest;

/// At most this many bytes of a build script are digested.
const MAX_SCRIPT_BYTES: u64 = 16 << 20;

/// The build script of the package holding `dir` (its `[package] build`,
/// or `build.rs` beside the manifest), said with its digest; `None` when
/// the package has none.
pub(crate) fn generator_of(dir: &Path) -> Option<String> {
    let root = dir
        .ancestors()
        .find(|ancestor| ancestor.join("Cargo.toml").is_file())?;
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
    let script = declared_script(&manifest).unwrap_or_else(|| "build.rs".to_owned());
    if script.is_empty() {
        return None; // `build = false`
    }
    let path = root.join(&script);
    if !path.is_file() {
        return None;
    }
    let mut budget = MAX_SCRIPT_BYTES;
    Some(match digest::of_file(&path, &mut budget) {
        Some(sha) => format!("written by the build script {script} (sha256 {sha})"),
        None => format!(
            "written by the build script {script} (over {MAX_SCRIPT_BYTES} bytes, not digested)"
        ),
    })
}

/// The `build = "…"` of the manifest's `[package]` table, if written (`""`
/// for `build = false`).
fn declared_script(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some(value) = line.strip_prefix("build") else {
            continue;
        };
        let value = value.trim_start();
        let Some(value) = value.strip_prefix('=') else {
            continue;
        };
        let value = value.trim();
        if value.starts_with("false") {
            return Some(String::new());
        }
        return value
            .strip_prefix('"')
            .and_then(|rest| rest.split('"').next())
            .map(str::to_owned);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::declared_script;

    #[test]
    fn the_package_table_names_the_script() {
        assert_eq!(
            declared_script("[package]\nname = \"x\"\nbuild = \"gen/main.rs\"\n"),
            Some("gen/main.rs".to_owned())
        );
        assert_eq!(
            declared_script("[package]\nname = \"x\"\n[lib]\nbuild = \"no\"\n"),
            None
        );
        assert_eq!(
            declared_script("[package]\nbuild = false\n"),
            Some(String::new())
        );
    }
}
