//! The committed artifact, `agent-surface.contract.json`: the reviewed
//! surface of one package.
//!
//! It is the catalog (`Catalog::to_json`) of the package's linked binary
//! with, per declaration, the crate that authored it, plus the package name,
//! the manifest hash and the digests of contributing dependencies. It holds
//! no timestamps, no file paths and no registration ids, and is written in
//! canonical order (keys sorted, canonical numbers and strings) with
//! two-space indentation, so the same source gives the same bytes on every
//! machine and from every checkout path.

use std::collections::BTreeMap;
use std::path::Path;

use agent_surface::canonical::{Sha256Digest, canonical_json, utf16_cmp};
use serde_json::{Map, Value, json};

use crate::Fatal;

/// The artifact's format tag.
pub(crate) const FORMAT: &str = agent_surface::catalog::ARTIFACT_FORMAT;

/// The artifact's default file name, beside the package's Cargo.toml.
pub(crate) const DEFAULT_NAME: &str = "agent-surface.contract.json";

/// The largest artifact read, in bytes (8 MiB; the devices example's is
/// about 40 kB): beyond it the file is refused before it is read.
pub(crate) const MAX_BYTES: u64 = agent_surface::catalog::MAX_ARTIFACT_BYTES as u64;

/// Refuses an artifact of `bytes` bytes over [`MAX_BYTES`].
pub(crate) fn within_size(bytes: u64, origin: &str) -> Result<(), Fatal> {
    if bytes > MAX_BYTES {
        return Err(Fatal(format!(
            "{origin} is {bytes} bytes, over the {MAX_BYTES} an artifact may have; \
             regenerate it with `cargo agent-surface snapshot`"
        )));
    }
    Ok(())
}

/// The crate of a `rustType` path (`devices::components::Table` → `devices`).
pub(crate) fn crate_of(declaration: &Value) -> &str {
    let path = declaration
        .get("rustType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    path.split("::").next().unwrap_or_default()
}

fn hash_of(declaration: &Value) -> &str {
    declaration
        .get("declarationHash")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The components of an artifact (or catalog).
pub(crate) fn components(artifact: &Value) -> &[Value] {
    artifact
        .get("components")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The procedures of an artifact (or catalog).
pub(crate) fn procedures(artifact: &Value) -> &[Value] {
    artifact
        .get("procedures")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The digest of one crate's contributed declarations: `sha256:` and the
/// SHA-256 of the canonical JSON array of their sorted declaration hashes.
fn digest(mut hashes: Vec<&str>) -> String {
    hashes.sort_unstable();
    format!("sha256:{}", Sha256Digest::of(&json!(hashes)))
}

/// Every crate other than `own` that contributes declarations, with its
/// digest, sorted by crate name.
pub(crate) fn contributors(catalog: &Value, own: &[String]) -> BTreeMap<String, String> {
    let mut by_crate: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for declaration in components(catalog).iter().chain(procedures(catalog)) {
        let name = crate_of(declaration);
        if !own.iter().any(|own| own == name) {
            by_crate
                .entry(name.to_owned())
                .or_default()
                .push(hash_of(declaration));
        }
    }
    by_crate
        .into_iter()
        .map(|(name, hashes)| (name, digest(hashes)))
        .collect()
}

fn with_crate(declaration: &Value) -> Value {
    let mut declaration = declaration.clone();
    let name = crate_of(&declaration).to_owned();
    if let Some(object) = declaration.as_object_mut() {
        object.insert("crate".into(), name.into());
    }
    declaration
}

/// The artifact of a freshly exported catalog, with what the package's
/// source shows beyond the build: declarations under `#[cfg]` (each marked
/// in or out of this build) and link-level code.
pub(crate) fn from_catalog(
    catalog: &Value,
    package: &str,
    own: &[String],
    scan: &crate::sources::Scan,
) -> Value {
    let contributors: Vec<Value> = contributors(catalog, own)
        .into_iter()
        .map(|(name, digest)| json!({ "crate": name, "digest": digest }))
        .collect();
    let mut artifact = json!({
        "format": FORMAT,
        "package": package,
        "manifestHash": catalog.get("manifestHash").cloned().unwrap_or(Value::Null),
        "contributors": contributors,
        "components": components(catalog).iter().map(with_crate).collect::<Vec<_>>(),
        "procedures": procedures(catalog).iter().map(with_crate).collect::<Vec<_>>(),
    });
    let built: Vec<String> = keyed(&artifact).into_iter().map(|(key, _)| key).collect();
    let gated: Vec<Value> = scan
        .gated
        .iter()
        .map(|gated| {
            json!({
                "declaration": gated.key,
                "cfg": gated.condition,
                "file": gated.file,
                "digest": gated.digest,
                // Known for a whole declaration; for a part of one (a field,
                // a method, a `cfg_attr` variant) the catalog cannot say.
                // Written under several conditions, at most one variant is
                // the one built: which, the catalog cannot say.
                "inBuild": if scan.gated.iter().filter(|g| g.key == gated.key).count() > 1 {
                    Value::Null
                } else if built.contains(&gated.key) {
                    Value::Bool(true)
                } else if gated.key.contains(':') || gated.key.starts_with("schema ")
                    || gated.key.starts_with("declarations ")
                    || gated.key.starts_with("file ")
                {
                    Value::Null
                } else {
                    Value::Bool(false)
                },
            })
        })
        .collect();
    // What declared policies read, as the source has it.
    for list in ["components", "procedures"] {
        if let Some(declarations) = artifact.get_mut(list) {
            crate::sources::items::annotate(declarations, &scan.items);
        }
    }
    if let Some(object) = artifact.as_object_mut() {
        if !gated.is_empty() {
            object.insert("gatedDeclarations".into(), gated.into());
        }
        if !scan.link_level.is_empty() {
            object.insert("linkLevel".into(), scan.link_level.clone().into());
        }
    }
    artifact
}

/// An empty artifact (the base when the file did not exist there yet).
pub(crate) fn empty() -> Value {
    json!({ "format": FORMAT, "components": [], "procedures": [] })
}

/// Checks the artifact's shape; `origin` names it in the message.
pub(crate) fn validate(artifact: &Value, origin: &str) -> Result<(), Fatal> {
    let bad = |what: &str| {
        Err(Fatal(format!(
            "{origin} is not a contract artifact: {what}"
        )))
    };
    let Some(object) = artifact.as_object() else {
        return bad("not a JSON object");
    };
    if object.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return bad(&format!("`format` is not \"{FORMAT}\""));
    }
    for (list, key) in [("components", "type"), ("procedures", "procedureId")] {
        let Some(items) = object.get(list).and_then(Value::as_array) else {
            return bad(&format!("`{list}` is not an array"));
        };
        if items
            .iter()
            .any(|item| item.get(key).and_then(Value::as_str).is_none())
        {
            return bad(&format!("an entry of `{list}` has no string `{key}`"));
        }
    }
    Ok(())
}

/// Parses artifact text; malformed text is [`Fatal`].
pub(crate) fn parse(text: &str, origin: &str) -> Result<Value, Fatal> {
    let value: Value = serde_json::from_str(text)
        .map_err(|err| Fatal(format!("{origin} is not valid JSON: {err}")))?;
    validate(&value, origin)?;
    Ok(value)
}

/// Refuses an artifact path that is a symbolic link: the artifact is a
/// regular file of the repository, never a pointer to another file (which
/// a change could aim at a file holding another surface, or outside the
/// repository). `Ok(false)` when there is no file.
pub(crate) fn regular_file(path: &Path) -> Result<bool, Fatal> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(Fatal(format!(
            "{} is a symbolic link; the artifact must be a regular file (remove the link \
             and run `cargo agent-surface snapshot`)",
            path.display()
        ))),
        Ok(meta) if !meta.is_file() => {
            Err(Fatal(format!("{} is not a regular file", path.display())))
        }
        Ok(meta) => {
            within_size(meta.len(), &path.display().to_string())?;
            Ok(true)
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(Fatal(format!("cannot read {}: {err}", path.display()))),
    }
}

/// Reads the artifact at `path`: `None` when there is no file. A symbolic
/// link, a file over [`MAX_BYTES`] and text that is not exactly what
/// `snapshot` writes (hand-edited, reformatted, duplicate keys) are
/// [`Fatal`].
pub(crate) fn load(path: &Path) -> Result<Option<Value>, Fatal> {
    if !regular_file(path)? {
        return Ok(None);
    }
    let origin = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Fatal(format!("cannot read {origin}: {err}"))),
    };
    parse_canonical(&text, &origin).map(Some)
}

/// Parses artifact text that must be exactly what `snapshot` writes (the
/// committed artifact, and the one at `--base`): over [`MAX_BYTES`],
/// malformed, hand-edited, reformatted or duplicate-key text is [`Fatal`].
pub(crate) fn parse_canonical(text: &str, origin: &str) -> Result<Value, Fatal> {
    within_size(text.len() as u64, origin)?;
    let value = parse(text, origin)?;
    if to_text(&value) != text {
        return Err(Fatal(format!(
            "{origin} is not in canonical form (edited by hand or reformatted: keys out of \
             order, other spacing, duplicate keys); regenerate it with \
             `cargo agent-surface snapshot`"
        )));
    }
    Ok(value)
}

/// Writes the artifact text to `path`, never through a symbolic link: into
/// a fresh file beside it, then renamed over it.
pub(crate) fn store(path: &Path, text: &str) -> Result<(), Fatal> {
    regular_file(path).or_else(|err| {
        // An oversized file is replaced; a link or a directory is refused.
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_file() => Ok(true),
            _ => Err(err),
        }
    })?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_NAME.to_owned());
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    // `create_new`: never through a file or link already there.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temporary)
        .and_then(|mut file| {
            use std::io::Write as _;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    if let Err(err) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(Fatal(format!("cannot write {}: {err}", path.display())));
    }
    Ok(())
}

fn indent(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_pretty(value: &Value, depth: usize, out: &mut String) {
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, depth + 1);
                write_pretty(item, depth + 1, out);
            }
            indent(out, depth);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| utf16_cmp(a.0, b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                indent(out, depth + 1);
                out.push_str(&canonical_json(&Value::String(key.clone())));
                out.push_str(": ");
                write_pretty(item, depth + 1, out);
            }
            indent(out, depth);
            out.push('}');
        }
        leaf => out.push_str(&canonical_json(leaf)),
    }
}

/// The artifact's text: canonical order and leaves, two-space indentation,
/// a final newline.
pub(crate) fn to_text(artifact: &Value) -> String {
    let mut out = String::new();
    write_pretty(artifact, 0, &mut out);
    out.push('\n');
    out
}

/// The declarations of an artifact keyed for comparison: `component <type>`
/// or `procedure <id>`; a second declaration of the same key gets `#2`.
pub(crate) fn keyed(artifact: &Value) -> Vec<(String, &Value)> {
    let mut seen: Map<String, Value> = Map::new();
    let mut out = Vec::new();
    let lists = [
        ("component", "type", components(artifact)),
        ("procedure", "procedureId", procedures(artifact)),
    ];
    for (kind, key, items) in lists {
        for item in items {
            let id = item.get(key).and_then(Value::as_str).unwrap_or_default();
            let mut name = format!("{kind} {id}");
            let count = seen.get(&name).and_then(Value::as_u64).unwrap_or(0) + 1;
            seen.insert(name.clone(), count.into());
            if count > 1 {
                name = format!("{name}#{count}");
            }
            out.push((name, item));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test code

    use super::*;

    #[test]
    fn the_artifact_text_is_sorted_indented_and_round_trips_to_canonical_json() {
        let value = json!({"b": [1.0, {"z": "é\u{1}", "a": -0.0}], "a": {}, "format": FORMAT,
            "components": [], "procedures": []});
        let text = to_text(&value);
        assert!(
            text.starts_with("{\n  \"a\": {},\n  \"b\": [\n    1,\n"),
            "{text}"
        );
        assert!(text.ends_with("}\n"));
        let parsed = parse(&text, "test").unwrap();
        assert_eq!(canonical_json(&parsed), canonical_json(&value));
        assert!(parse("[]", "test").is_err());
        assert!(parse("{\"format\": \"other\"}", "test").is_err());
    }
}
